"""Student copies of the study notebooks, as nbgrader's ``generate_assignment`` releases them (TEACHING.md)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from isolib import project
from isolib.parameters import parameters
from isolib.runner import without_quick_run_note

# The steps of nbgrader's `generate_assignment` (nbgrader.converters.GenerateAssignment.preprocessors), in its
# order, less SaveCells, which records the cells in nbgrader's database; tests/test_runner.py checks the list.
RELEASE_STEPS = ("IncludeHeaderFooter", "InstantiateTests", "LockCells", "ClearSolutions", "ClearOutput",
                 "CheckCellMetadata", "ComputeChecksums", "ClearHiddenTests", "ClearMarkScheme", "ComputeChecksums",
                 "CheckCellMetadata")
# nbval's cell tags (nbval-check-output ...): which outputs `make test` compares in the committed quick run.
_NBVAL_TAG = "nbval-"
# The id of a student copy's first cell, which says what to run first (:func:`what_to_run_first`).
FIRST_CELL_ID = "what-to-run-first"


def student_output_dir(notebook: str) -> str:
    """The ``output_dir`` of a student copy: relative to the copy's own folder, where its kernel starts."""
    return f"outputs/{notebook}"


def python_literal(value) -> str:
    """``value`` (a YAML scalar, list or mapping) as the parameters cell writes it: strings in double quotes."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(map(python_literal, value)) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{python_literal(key)}: {python_literal(item)}" for key, item in value.items()) + "}"
    return repr(value)


def on_student_profile(source: str, notebook: str) -> str:
    """The ``parameters`` cell ``source`` with the student profile's values (``notebooks/params/<notebook>/student.yaml``),
    ``profile`` set to ``student`` and ``output_dir`` to :func:`student_output_dir`; each line keeps its comment."""
    values = parameters(notebook, "student") | {"output_dir": student_output_dir(notebook)}
    lines = source.split("\n")
    for node in ast.parse(source).body:
        if isinstance(node, ast.AnnAssign) and node.target.id in values and node.lineno == node.end_lineno:
            line = lines[node.lineno - 1]
            lines[node.lineno - 1] = (line[:node.value.col_offset] + python_literal(values.pop(node.target.id))
                                      + line[node.value.end_col_offset:])
    if values:
        raise ValueError(f"{notebook}: its parameters cell declares no {', '.join(values)} on one line, "
                         "which the student profile sets.")
    return "\n".join(lines)


def what_to_run_first(notebook: str) -> str:
    """The first cell of a student copy: run the whole notebook before the exercises, which read its tables."""
    return (f"> **Before the exercises**, run the whole notebook from the top, in the kernel "
            f"*{project.PROJECT_KERNEL['display_name']}*: "
            f"*Kernel* > *Restart Kernel and Run All Cells*. The exercises at the end read the tables the cells above "
            f"compute on the student profile, a small setting that reaches them in under 2 minutes on two cores "
            f"(a little longer the first time a machine runs a model). The run stops at "
            f"the first answer cell with `NotImplementedError`: write your answer there in place of "
            f"`raise NotImplementedError()`, run it, then run the test cell below it. Figures and tables go to "
            f"`{student_output_dir(notebook)}/` beside this notebook.")


def for_students(nb, notebook: str):
    """``nb`` opening on :func:`what_to_run_first`, without its quick-run note and nbval's cell tags, its parameters
    those of the student profile (:func:`on_student_profile`).

    The note's links and the tags are for the committed quick run; nbgrader's cells are left as they are.
    """
    import nbformat

    nb = without_quick_run_note(nb)
    nb.cells.insert(0, nbformat.v4.new_markdown_cell(what_to_run_first(notebook), id=FIRST_CELL_ID))
    for cell in nb.cells:
        tags = [tag for tag in cell.metadata.get("tags", []) if not tag.startswith(_NBVAL_TAG)]
        if tags:
            cell.metadata["tags"] = tags
        else:
            cell.metadata.pop("tags", None)
        if "parameters" in cell.metadata.get("tags", []):
            cell.source = on_student_profile(cell.source, notebook)
    return nb


def student_copy(notebook: str, folder: Path | None = None) -> Path:
    """Release a study notebook to students, as nbgrader's ``generate_assignment`` would.

    The committed notebook goes through nbgrader's own preprocessors (:data:`RELEASE_STEPS`): each solution
    region becomes nbgrader's ``# YOUR CODE HERE`` stub, hidden tests go, the autograded test cells are
    locked and checksummed, outputs are cleared and the nbgrader metadata is validated. Before that
    :func:`for_students` puts :func:`what_to_run_first` first, drops the quick-run note and the nbval's cell tags,
    and sets the student profile's parameters, ``output_dir`` :func:`student_output_dir`, so the copy writes into a folder beside itself
    (``course-kit/nbgrader_config.py`` makes nbgrader's own ``generate_assignment`` do the same). The copy goes
    to ``folder/<notebook>.ipynb`` (default ``build/handout/``), never into ``notebooks/``, and runs from there
    as it is (its data and cache paths do not depend on where it lies).

    Returns
    -------
    Path
        The student notebook.
    """
    import nbformat

    try:
        from nbgrader import preprocessors
    except ImportError:
        raise ImportError("Student copies need nbgrader: install the project with its dev extra "
                          "(`make setup`, or pip install -c constraints.txt -e '.[dev]').") from None

    if notebook not in project.notebook_names():
        raise ValueError(f"Unknown notebook {notebook}; notebooks are: {', '.join(project.notebook_names())}.")
    nb = nbformat.read(project.NOTEBOOK_DIR / f"{notebook}.ipynb", as_version=4)
    if not any(cell.metadata.get("nbgrader", {}).get("solution") for cell in nb.cells):
        raise ValueError(f"{notebook} has no exercise: no nbgrader solution cell.")
    nb = for_students(nb, notebook)
    resources: dict = {}
    for step in RELEASE_STEPS:
        nb, resources = getattr(preprocessors, step)().preprocess(nb, resources)
    target = (folder or project.BUILD_DIR / "handout") / f"{notebook}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)
    return target


def student_copies(notebook: str = "all", folder: Path | None = None) -> list[Path]:
    """:func:`student_copy` of one notebook, or of every one of :func:`isolib.project.exercise_notebooks` for ``"all"``."""
    return [student_copy(name, folder) for name in (project.exercise_notebooks() if notebook == "all" else [notebook])]

