"""Meta tests: every notebook is paired, parameterised for every profile, executed and checked."""

import re
from pathlib import Path

import jupytext
import nbformat
import papermill
import pytest
import yaml

from isolib import runner

NOTEBOOKS = runner.notebook_names()
ROOT = runner.REPO_ROOT


def test_there_are_notebooks():
    assert "00_quickstart" in NOTEBOOKS


def _without_version(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if "jupytext_version" not in line)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_pair_is_in_sync(name):
    ipynb = runner.NOTEBOOK_DIR / f"{name}.ipynb"
    assert ipynb.exists(), f"run `make quick` to create {ipynb.name}"
    as_script = jupytext.writes(jupytext.read(ipynb), fmt="py:percent")
    source = (runner.NOTEBOOK_DIR / f"{name}.py").read_text()
    assert _without_version(as_script) == _without_version(source), "run `make sync`, then `make quick`"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebooks_declare_the_project_kernel(name):
    """A JupyterLab outside the project's venv must start the project's environment, not its own python3."""
    nb = nbformat.read(runner.NOTEBOOK_DIR / f"{name}.ipynb", as_version=4)
    assert nb.metadata.kernelspec == runner.PROJECT_KERNEL
    assert jupytext.read(runner.NOTEBOOK_DIR / f"{name}.py").metadata["kernelspec"] == runner.PROJECT_KERNEL


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_parameters_are_documented_and_every_profile_has_its_file(name):
    declared = papermill.inspect_notebook(str(runner.NOTEBOOK_DIR / f"{name}.ipynb"))
    assert {"profile", "output_dir"} <= set(declared)
    cell = next(c for c in nbformat.read(runner.NOTEBOOK_DIR / f"{name}.ipynb", as_version=4).cells
                if "parameters" in c.metadata.get("tags", []))
    assigned = re.findall(r"^(\w+)\s*:", cell.source, re.M)
    assert assigned == list(declared), "papermill could not parse every parameter line (an '=' in a comment?)"
    for parameter, info in declared.items():
        assert info["help"], f"parameter {parameter} needs a comment"
        assert info["inferred_type_name"] != "None", f"parameter {parameter} needs a type hint"
    for profile in ("full", "paper"):
        path = runner.PARAMS_DIR / name / f"{profile}.yaml"
        assert path.exists(), f"{path} is missing"
        unknown = set(yaml.safe_load(path.read_text()) or {}) - set(declared)
        assert not unknown, f"{path.name} sets parameters the notebook does not declare: {unknown}"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_committed_notebook_is_a_clean_quick_run(name):
    nb = nbformat.read(runner.NOTEBOOK_DIR / f"{name}.ipynb", as_version=4)
    note, title = nb.cells[:2]
    assert note.metadata.get("tags") == [runner.QUICK_RUN_NOTE_TAG], "run `make quick`: the quick run says what it is"
    assert note.source == runner.quick_run_note(name), "run `make quick`: the note links the full run"
    assert title.cell_type == "markdown" and title.source.startswith("# ")
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code[0].metadata.get("tags") == ["parameters"], "the first code cell must be the parameters cell"
    assert all(cell.execution_count for cell in code), "every code cell must have been executed"
    outputs = [output for cell in code for output in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert not [o for o in outputs if o.get("name") == "stderr"], "warnings or progress bars leaked into outputs"
    assert any("# NBVAL_CHECK_OUTPUT" in cell.source for cell in code), "nbval needs checked cells"
    # A cell that shows a figure at its top level (not inside a function it defines).
    showing = [cell for cell in code if re.search(r"^plt\.show\(\)", cell.source, re.M)]
    assert showing or "plt.show()" not in "".join(cell.source for cell in code)
    assert all(any("image/png" in output.get("data", {}) for output in cell.outputs) for cell in showing), \
        "a cell that shows a figure stored no image: run `make quick`"
    assert not [c for c in code if re.search(r"injected-parameters", str(c.metadata))], "quick runs inject nothing"
    html = "".join(output.get("data", {}).get("text/html", "") for output in outputs)
    assert not re.search(r"\.\.\.</td>", html), "a stored table cuts its text: show it with isolib.plotting.show_table"


def test_make_test_runs_nbval_on_every_notebook_and_readme_documents_it():
    recipe = re.search(r"^test:.*\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(), re.M).group(1)
    assert "$(NOTEBOOKS:%=notebooks/%.ipynb) --nbval-lax --nbval-current-env" in recipe
    readme = (ROOT / "README.md").read_text()
    assert "make figures" in readme and "make test" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_profiles_and_output_folders():
    assert runner.parameters("00_quickstart", "quick") == {}
    full = runner.parameters("00_quickstart", "full")
    assert full["profile"] == "full" and Path(full["output_dir"]) == Path("../figures/00_quickstart")  # from notebooks/
    assert (runner.NOTEBOOK_DIR / full["output_dir"]).resolve() == ROOT / "figures" / "00_quickstart"
    assert runner.output_dir("00_quickstart", "quick") == ROOT / "build" / "quick" / "figures" / "00_quickstart"
    with pytest.raises(ValueError, match="Unknown profile"):
        runner.parameters("00_quickstart", "fast")


STUDIES = [name for name in NOTEBOOKS if name != "00_quickstart"]


@pytest.mark.parametrize("name", STUDIES)
def test_study_notebooks_end_with_exercises_and_hidden_checked_solutions(name):
    cells = nbformat.read(runner.NOTEBOOK_DIR / f"{name}.ipynb", as_version=4).cells
    tags = [cell.metadata.get("tags", []) for cell in cells]
    exercises = [i for i, t in enumerate(tags) if runner.EXERCISE_TAG in t]
    assert 2 <= len(exercises) <= 3, "two or three exercises per study notebook"
    for i in exercises:
        question, answer, solution = cells[i - 1], cells[i], cells[i + 1]
        assert question.cell_type == "markdown" and question.source.startswith("**Exercise")
        assert answer.source.strip() == "# YOUR CODE HERE"
        assert runner.SOLUTION_TAG in solution.metadata.get("tags", [])
        assert solution.metadata.get("jupyter", {}).get("source_hidden"), "solutions open hidden in JupyterLab"
        assert "# NBVAL_CHECK_OUTPUT" in solution.source and solution.outputs, "nbval checks each solution's output"


def test_a_student_copy_has_no_solution_and_runs(tmp_path):
    name = "04_mickus_isotropy_clusters"
    copy = runner.student_copy(name, tmp_path)
    assert copy == tmp_path / f"{name}.ipynb"
    nb = nbformat.read(copy, as_version=4)
    assert not [cell for cell in nb.cells if runner.SOLUTION_TAG in cell.metadata.get("tags", [])]
    assert "from isolib.metrics import isoscore, silhouette" not in "".join(cell.source for cell in nb.cells)
    assert sum(cell.source == "# YOUR CODE HERE" for cell in nb.cells if cell.cell_type == "code") == 2
    assert not [cell for cell in nb.cells if cell.get("outputs")]
    # It runs as it is (here on small settings, to keep the test short), from outside notebooks/.
    small = {"setups": ["supersenses"], "n_items": 300, "n_updates": 3, "seeds": [0], "glue_tasks": [],
             "output_dir": str(tmp_path / "figures")}
    papermill.execute_notebook(str(copy), str(tmp_path / "executed.ipynb"), parameters=small, cwd=str(tmp_path),
                               kernel_name="python3", progress_bar=False)
    with pytest.raises(ValueError, match="Unknown notebook"):
        runner.student_copy("99_nothing", tmp_path)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebooks_use_no_unix_only_module(name):
    """Peak memory comes from isolib.runner.peak_memory_gib, which copes with Windows and macOS."""
    source = (runner.NOTEBOOK_DIR / f"{name}.py").read_text()
    assert not re.search(r"^\s*(import|from)\s+(resource|fcntl|termios|pwd|grp)\b", source, re.M)
