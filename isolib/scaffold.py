"""A new study from the template in ``docs/new-study/``: its package, notebook, profiles and tests, ready to edit.

``python -m isolib new-study author_topic --title "Author (2025): topic"`` (or ``make new-study NAME=author_topic``)
writes, numbered after the last notebook:

* ``isolib/studies/author_topic/`` — ``settings``, ``compute``, ``claims``, ``figures``: a small working study
  (the average cosine of random tokens per layer, judged beside an isotropic control) to replace by yours;
* ``notebooks/NN_author_topic.py`` and ``notebooks/params/NN_author_topic/{full,paper}.yaml``;
* ``tests/test_author_topic.py``.

Nothing is overwritten: a name already taken is refused.
"""

from __future__ import annotations

import re
from pathlib import Path

from isolib import project

__all__ = ["TEMPLATE_DIR", "new_study"]

TEMPLATE_DIR = project.REPO_ROOT / "docs" / "new-study"


def new_study(name: str, title: str, *, root: Path | None = None) -> list[Path]:
    """Write a new study called ``name`` (a Python identifier, e.g. ``author_topic``) under ``root``; return the files.

    Raises
    ------
    ValueError
        In one sentence, for a name that is no lower-case identifier or that a study already has.
    """
    root = Path(root or project.REPO_ROOT)
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise ValueError(f"A study's name is a lower-case Python identifier such as author_topic; got {name!r}.")
    notebooks = sorted((root / "notebooks").glob("[0-9][0-9]_*.py"))
    if any(path.stem.split("_", 1)[1] == name for path in notebooks) or (root / "isolib" / "studies" / name).exists():
        raise ValueError(f"A study named {name} exists already; choose another name.")
    number = f"{max((int(path.stem[:2]) for path in notebooks), default=0) + 1:02d}"
    notebook = f"{number}_{name}"
    targets = {TEMPLATE_DIR / "notebook.py": root / "notebooks" / f"{notebook}.py",
               TEMPLATE_DIR / "full.yaml": root / "notebooks" / "params" / notebook / "full.yaml",
               TEMPLATE_DIR / "paper.yaml": root / "notebooks" / "params" / notebook / "paper.yaml",
               TEMPLATE_DIR / "test_study.py": root / "tests" / f"test_{name}.py",
               **{source: root / "isolib" / "studies" / name / source.name
                  for source in sorted((TEMPLATE_DIR / "study").glob("*.py"))}}
    for source, target in targets.items():
        text = source.read_text().replace("<<NN>>", number).replace("<<NAME>>", name).replace("<<TITLE>>", title)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return list(targets.values())
