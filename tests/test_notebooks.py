"""Meta tests: every notebook is paired, parameterised for every profile, executed and checked."""

import ast
import copy
import os
import re
import subprocess
import sys
from pathlib import Path

import jupytext
import nbformat
import papermill
import pytest
import yaml

from isolib import parameters, project, runner, student

NOTEBOOKS = project.notebook_names()
ROOT = project.REPO_ROOT
CHECKED = "nbval-check-output"  # the cell tag that makes nbval compare a cell's output (with --nbval-lax)


def test_there_are_notebooks():
    assert "00_quickstart" in NOTEBOOKS


def _without_version(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if "jupytext_version" not in line)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_pair_is_in_sync(name):
    ipynb = project.NOTEBOOK_DIR / f"{name}.ipynb"
    assert ipynb.exists(), f"run `make quick` to create {ipynb.name}"
    as_script = jupytext.writes(jupytext.read(ipynb), fmt="py:percent")
    source = (project.NOTEBOOK_DIR / f"{name}.py").read_text()
    assert _without_version(as_script) == _without_version(source), "run `make sync`, then `make quick`"


@pytest.mark.parametrize("source", [*(project.NOTEBOOK_DIR / f"{name}.py" for name in NOTEBOOKS),
                                    ROOT / "docs" / "new-study" / "notebook.py"], ids=lambda path: path.stem)
def test_a_reader_sees_no_nbval_marker_and_no_printed_verdict(source):
    """nbval reads the cell tag that a student's code does not show; a verdict is shown as Markdown, which a browser
    wraps between words, where JupyterLab breaks a printed line anywhere, inside a word too."""
    text = source.read_text()
    assert "NBVAL" not in text, "mark a checked cell with the tag nbval-check-output, not a comment"
    assert "print(verdicts(" not in text, "show verdicts with show_table(verdict_table(...)) or show_text(verdicts(...))"
    assert f'tags=["{CHECKED}"]' in text


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebooks_declare_the_project_kernel(name):
    """A JupyterLab outside the project's venv must start the project's environment, not its own python3."""
    nb = nbformat.read(project.NOTEBOOK_DIR / f"{name}.ipynb", as_version=4)
    assert nb.metadata.kernelspec == project.PROJECT_KERNEL
    assert jupytext.read(project.NOTEBOOK_DIR / f"{name}.py").metadata["kernelspec"] == project.PROJECT_KERNEL


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_parameters_are_documented_and_every_profile_has_its_file(name):
    declared = papermill.inspect_notebook(str(project.NOTEBOOK_DIR / f"{name}.ipynb"))
    assert {"profile", "output_dir"} <= set(declared)
    cell = next(c for c in nbformat.read(project.NOTEBOOK_DIR / f"{name}.ipynb", as_version=4).cells
                if "parameters" in c.metadata.get("tags", []))
    assigned = re.findall(r"^(\w+)\s*:", cell.source, re.M)
    assert assigned == list(declared), "papermill could not parse every parameter line (an '=' in a comment?)"
    for parameter, info in declared.items():
        assert info["help"], f"parameter {parameter} needs a comment"
        assert info["inferred_type_name"] != "None", f"parameter {parameter} needs a type hint"
    for profile in ("full", "paper", *(["student"] if name in project.exercise_notebooks() else [])):
        path = project.PARAMS_DIR / name / f"{profile}.yaml"
        assert path.exists(), f"{path} is missing"
        unknown = set(yaml.safe_load(path.read_text()) or {}) - set(declared)
        assert not unknown, f"{path.name} sets parameters the notebook does not declare: {unknown}"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_committed_notebook_is_a_clean_quick_run(name):
    nb = nbformat.read(project.NOTEBOOK_DIR / f"{name}.ipynb", as_version=4)
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
    assert any(CHECKED in cell.metadata.get("tags", []) for cell in code), "nbval needs checked cells"
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
    assert parameters.parameters("00_quickstart", "quick") == {}
    full = parameters.parameters("00_quickstart", "full")
    assert full["profile"] == "full" and Path(full["output_dir"]) == Path("../figures/00_quickstart")  # from notebooks/
    assert (project.NOTEBOOK_DIR / full["output_dir"]).resolve() == ROOT / "figures" / "00_quickstart"
    assert project.output_dir("00_quickstart", "quick") == ROOT / "build" / "quick" / "figures" / "00_quickstart"
    with pytest.raises(ValueError, match="Unknown profile"):
        parameters.parameters("00_quickstart", "fast")


STUDIES = [name for name in NOTEBOOKS if name != "00_quickstart"]
# nbgrader's metadata of a solution cell and of a locked autograded test cell (schema 3), besides grade_id and points.
SOLUTION_CELL = {"grade": False, "solution": True, "locked": False, "schema_version": 3}
TEST_CELL = {"grade": True, "solution": False, "locked": True, "schema_version": 3}
REGION = r"^### BEGIN {0}\n(.*?)^### END {0}$"


def _grading(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def _names(source: str, context) -> set[str]:
    return {node.id for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Name) and isinstance(node.ctx, context)}


@pytest.mark.parametrize("name", STUDIES)
def test_each_exercise_is_an_nbgrader_solution_cell_and_a_locked_autograded_test(name):
    from nbgrader.nbgraderformat import MetadataValidator

    nb = nbformat.read(project.NOTEBOOK_DIR / f"{name}.ipynb", as_version=4)
    MetadataValidator().validate_nb(nb)  # nbgrader's own check: valid cells, unique grade ids
    cells = nb.cells
    questions = [i for i, cell in enumerate(cells) if cell.cell_type == "markdown" and cell.source.startswith("**Exercise")]
    # A study's exercises cover four kinds, in rising difficulty (TEACHING.md): read a figure or a table, compute a
    # measure by hand, apply a control, change a parameter and read the verdict again; the card notebook has two.
    least = 4 if name in project.study_notebooks() else 2
    assert len(questions) >= least, f"at least {least} exercises in {name}"
    graded = [cell for cell in cells if "nbgrader" in cell.metadata]
    ids = [_grading(cell)["grade_id"] for cell in graded]
    assert len(graded) == 2 * len(questions) and len(set(ids)) == len(ids), "two cells per exercise, unique grade ids"
    assert not [cell for cell in cells if {"exercise", "solution"} & set(cell.metadata.get("tags", []))]
    assigned_before = set().union(*(_names(cell.source, ast.Store) for cell in cells[:questions[0]]
                                    if cell.cell_type == "code"))
    for i in questions:
        solution, test = cells[i + 1], cells[i + 2]
        assert {key: _grading(solution).get(key) for key in SOLUTION_CELL} == SOLUTION_CELL
        assert {key: _grading(test).get(key) for key in TEST_CELL} == TEST_CELL and _grading(test)["points"] > 0
        answer = re.search(REGION.format("SOLUTION"), solution.source, re.M | re.S)
        assert answer and CHECKED in solution.metadata.get("tags", []), "nbval checks each solution's output"
        assert solution.outputs and not solution.metadata.get("jupyter", {}).get("source_hidden")
        assert not test.outputs and CHECKED not in test.metadata.get("tags", []), \
            "a test cell prints nothing and nbval ignores it"
        visible = re.sub(REGION.format("HIDDEN TESTS"), "", test.source, flags=re.M | re.S)
        assert "assert " in visible and "assert " in re.search(REGION.format("HIDDEN TESTS"), test.source,
                                                                re.M | re.S).group(1)
        # The answer is a named variable the test reads, new in the notebook: a missing answer is a NameError.
        answers = _names(solution.source, ast.Store) & _names(visible, ast.Load)
        assert answers and not answers & assigned_before, f"{_grading(test)['grade_id']}: {answers}"


@pytest.fixture(scope="module")
def releases(tmp_path_factory):
    folder = tmp_path_factory.mktemp("student")
    return {path.stem: path for path in student.student_copies("all", folder)}


def _secret_lines(nb) -> set[str]:
    """The lines of the solutions and hidden tests that occur nowhere else in the notebook."""
    regions, rest = set(), set()
    for cell in nb.cells:
        inside = {line.strip() for kind in ("SOLUTION", "HIDDEN TESTS")
                  for region in re.findall(REGION.format(kind), cell.source, re.M | re.S) for line in region.splitlines()}
        regions |= inside
        rest |= {line.strip() for line in cell.source.splitlines()} - inside
    return regions - rest - {""}


@pytest.mark.parametrize("name", STUDIES)
def test_the_release_passes_nbgraders_checks_and_holds_no_solution(name, releases):
    from nbgrader import utils
    from nbgrader.nbgraderformat import MetadataValidator
    from nbgrader.preprocessors import ClearSolutions

    assert releases[name] == releases[name].parent / f"{name}.ipynb"
    release = nbformat.read(releases[name], as_version=4)
    MetadataValidator().validate_nb(release)
    teacher = nbformat.read(project.NOTEBOOK_DIR / f"{name}.ipynb", as_version=4)
    graded = [cell for cell in release.cells if "nbgrader" in cell.metadata]
    assert [_grading(cell)["grade_id"] for cell in graded] == [_grading(cell)["grade_id"] for cell in teacher.cells
                                                               if "nbgrader" in cell.metadata]
    for cell in graded:
        # nbgrader's autograde compares these checksums to find a test cell a student changed.
        assert _grading(cell)["checksum"] == utils.compute_checksum(cell) and cell.metadata.deletable is False
        if utils.is_solution(cell):
            assert ClearSolutions().code_stub["python"] in cell.source
        else:
            assert cell.metadata.editable is False
    text = "\n".join(cell.source for cell in release.cells)
    assert not re.search("NBVAL_|BEGIN SOLUTION|HIDDEN TESTS", text)
    assert not [tag for cell in release.cells for tag in cell.metadata.get("tags", []) if tag.startswith("nbval-")]
    assert _secret_lines(teacher).isdisjoint(line.strip() for line in text.splitlines()), "a solution line leaked"
    assert not [cell for cell in release.cells if cell.get("outputs")]
    first, title = release.cells[:2]
    assert title.source.startswith("# "), "no quick-run note"
    # The first cell says what to run first: the whole notebook, in the project's kernel, up to the first answer.
    assert first.cell_type == "markdown" and first.id == student.FIRST_CELL_ID
    for said in ("Restart Kernel and Run All Cells", project.PROJECT_KERNEL["display_name"],
                 ClearSolutions().code_stub["python"].splitlines()[-1], student.student_output_dir(name)):
        assert said in first.source, f"the first cell does not say {said!r}"
    # The copy opens on the student profile, every other parameter as the notebook declares it.
    cell = next(cell for cell in release.cells if "parameters" in cell.metadata.get("tags", []))
    opened_on = {node.target.id: ast.literal_eval(node.value) for node in ast.parse(cell.source).body}
    defaults = {parameter: declared.default for parameter, declared in parameters.parameter_declarations(name).items()}
    assert opened_on == defaults | parameters.parameters(name, "student") | {
        "output_dir": student.student_output_dir(name)}


def test_the_student_profile_is_refused_for_a_notebook_without_exercises():
    with pytest.raises(ValueError, match="has no exercises, so no student profile"):
        runner.reproduce("student", ["00_quickstart"])


CHEAPEST = "01_ethayarajh_contextuality"  # its quick profile takes under a minute with a warm cache


def _teachings_recipe() -> str:
    """The commands of TEACHING.md's section "Grading with nbgrader"."""
    section = (ROOT / "TEACHING.md").read_text().split("## Grading with nbgrader", 1)[1].split("\n## ", 1)[0]
    return re.search(r"^```bash\n(.*?)^```", section, re.M | re.S).group(1)


def _answered(release, name: str):
    """A copy of the student copy ``release`` of ``name`` whose answer cells hold the teacher's solutions."""
    teacher = nbformat.read(project.NOTEBOOK_DIR / f"{name}.ipynb", as_version=4)
    solutions = {_grading(cell)["grade_id"]: cell.source for cell in teacher.cells if _grading(cell).get("solution")}
    answered = copy.deepcopy(release)
    for cell in answered.cells:
        if _grading(cell).get("solution"):
            cell.source = solutions[_grading(cell)["grade_id"]]
    return answered


def test_teachings_recipe_releases_make_students_copies_and_grades_a_blank_and_a_solved_one(tmp_path, releases):
    """TEACHING.md's commands, run as written from the repository root but for the course folder (a temporary one),
    with two submissions of the cheapest study in place: its student copy untouched, and answered with the teacher's
    solutions. nbgrader, with the course kit's settings, releases exactly the `make student` copies; autograde gives
    the blank copy no point (each test fails with NameError) and the answered one every point."""
    from nbgrader.api import Gradebook

    recipe = _teachings_recipe()
    course_default = re.search(r"^COURSE=(\S+)", recipe, re.M).group(1)
    assert not (ROOT / course_default).resolve().is_relative_to(ROOT.resolve()), \
        f"TEACHING.md's course folder {course_default} lies inside the repository; put it outside"
    assignment = re.search(r"^nbgrader generate_assignment (\S+)", recipe, re.M).group(1)
    course = tmp_path / "course"
    blank = nbformat.read(releases[CHEAPEST], as_version=4)
    for student_id, submission in (("blank", blank), ("solved", _answered(blank, CHEAPEST))):
        (course / "submitted" / student_id / assignment).mkdir(parents=True)
        nbformat.write(submission, course / "submitted" / student_id / assignment / f"{CHEAPEST}.ipynb")
    # The project's environment, with this checkout's isolib (the course's settings import it) and its kernel,
    # found first: a "Python (isolib)" another checkout registered for the user is not the one that grades.
    from ipykernel.kernelspec import install as install_kernel

    install_kernel(prefix=str(tmp_path / "kernel"), kernel_name=project.PROJECT_KERNEL["name"])
    environment = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
                   "PYTHONPATH": str(ROOT), "JUPYTER_PATH": str(tmp_path / "kernel" / "share" / "jupyter")}
    finished = subprocess.run(["bash", "-euc", re.sub(r"^COURSE=\S+", f"COURSE={course}", recipe, flags=re.M)],
                              cwd=ROOT, env=environment, capture_output=True, text=True)
    assert finished.returncode == 0, finished.stderr[-3000:]

    for name in STUDIES:
        assert nbformat.read(course / "release" / assignment / f"{name}.ipynb", as_version=4) == \
            nbformat.read(releases[name], as_version=4), f"{name}: nbgrader's release is not make student's copy"
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        scores = {student_id: gradebook.find_submission_notebook(CHEAPEST, assignment, student_id)
                  for student_id in ("blank", "solved")}
        points = sum(_grading(cell).get("points", 0) for cell in blank.cells if _grading(cell).get("grade"))
        assert (scores["blank"].score, scores["solved"].score, scores["solved"].max_score) == (0, points, points)
    graded = nbformat.read(course / "autograded" / "blank" / assignment / f"{CHEAPEST}.ipynb", as_version=4)
    assert {output.ename for cell in graded.cells if _grading(cell).get("grade") for output in cell.outputs
            if output.output_type == "error"} == {"NameError"}, "a missing answer fails its tests with NameError"
    solved = course / "autograded" / "solved" / assignment
    assert (solved / student.student_output_dir(CHEAPEST) / "per_layer.csv").exists(), "outputs beside the copy"


def test_a_student_copy_of_an_unknown_notebook_is_refused(tmp_path):
    with pytest.raises(ValueError, match="Unknown notebook"):
        student.student_copy("99_nothing", tmp_path)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebooks_use_no_unix_only_module(name):
    """Peak memory comes from isolib.runner.peak_memory_gib, which copes with Windows and macOS."""
    source = (project.NOTEBOOK_DIR / f"{name}.py").read_text()
    assert not re.search(r"^\s*(import|from)\s+(resource|fcntl|termios|pwd|grp)\b", source, re.M)
