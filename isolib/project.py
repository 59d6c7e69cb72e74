"""Where the project keeps things: its notebooks, their parameters, the build folder and the committed results.

Every other module reads these paths as attributes of this module at call time (``project.FIGURES_DIR``),
so a test can point them elsewhere in one place.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from isolib import studies

REPO_ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = REPO_ROOT / "notebooks"
PARAMS_DIR = NOTEBOOK_DIR / "params"
BUILD_DIR = REPO_ROOT / "build"
FIGURES_DIR = REPO_ROOT / "figures"
# The stored quick run's evidence and record, beside its notebook: what `judge` and its tests re-judge from a clone.
QUICK_RESULTS_DIR = NOTEBOOK_DIR / "quick_results"
# student: the notebooks with exercises only (notebooks/params/<notebook>/student.yaml), the profile their
# student copies open on (isolib.student).
PROFILES = ("quick", "student", "full", "paper")
# The kernel every committed notebook declares; `make setup` registers it for the user, so any
# JupyterLab (the project's, a system one, conda's) offers it and runs the project's environment.
PROJECT_KERNEL = {"name": "isolib", "display_name": "Python (isolib)", "language": "python"}


def notebook_names() -> list[str]:
    """Stems of the study notebooks (``notebooks/NN_*.py``), in order."""
    return sorted(p.stem for p in NOTEBOOK_DIR.glob("[0-9][0-9]_*.py"))


def study_notebooks() -> list[str]:
    """The notebooks that are studies (each has its package under ``isolib/studies/`` and a record)."""
    return [name for name in notebook_names() if studies.is_study(name)]


# A solution cell of nbgrader's in a notebook's .py: the notebook has exercises.
_SOLUTION_CELL = re.compile(r'^# %% .*nbgrader=\{[^\n]*"solution": true', re.M)


def exercise_notebooks() -> list[str]:
    """The notebooks with exercises: those with an nbgrader solution cell in their ``.py``, in order."""
    return [name for name in notebook_names() if _SOLUTION_CELL.search((NOTEBOOK_DIR / f"{name}.py").read_text())]


def output_dir(notebook: str, profile: str) -> Path:
    """Where a run writes its figures and tables: ``figures/`` for full, ``build/`` otherwise."""
    if profile == "full":
        return FIGURES_DIR / notebook
    return BUILD_DIR / profile / "figures" / notebook


def check_output_dir(profile: str, output_dir) -> None:
    """Refuse a run other than the full profile writing into the committed ``figures/`` (one sentence)."""
    if profile != "full" and Path(output_dir).resolve().is_relative_to(FIGURES_DIR):
        raise ValueError(f"Only the full profile writes to {FIGURES_DIR}; set output_dir under build/.")


def variant_dir(notebook: str, profile: str, overrides: dict) -> Path:
    """The folder of a variant run: ``build/variants/<profile>/<notebook>/<slug>-<digest>``.

    The slug (``name-value_...``, at most 60 characters) is for reading; the digest, 12 hex digits
    of the SHA-256 of the overrides' canonical JSON (names sorted, values as parsed), tells variants
    apart: ``-1`` and ``1``, ``[wikitext2]`` and ``wikitext2``, ``[minilm, mpnet]`` and ``"minilm mpnet"``
    get different folders, and the same overrides in any order the same one.
    """
    def canonical(value) -> str:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), default=repr)

    slug = "_".join(f"{name}-" + re.sub(r"[^A-Za-z0-9.]+", "-", canonical(value)).strip("-")
                    for name, value in sorted(overrides.items()))
    digest = hashlib.sha256(canonical(overrides).encode()).hexdigest()[:12]
    return BUILD_DIR / "variants" / profile / notebook / f"{slug[:60]}-{digest}"

