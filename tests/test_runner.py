"""The runner on tiny stand-in notebooks: what each run stores where, its progress, its parameter checks."""

import io
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import jupytext
import nbformat
import pytest

from isolib import parameters, project, runner, student

TINY = "00_tiny"
TINY_SOURCE = '''# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python (isolib)
#     language: python
#     name: isolib
# ---

# %% [markdown]
# # A tiny notebook

# %% tags=["parameters"]
profile: str = "quick"  # which profile produced this run
output_dir: str = "../build/quick/figures/00_tiny"  # folder for figures and tables
n_points: int = 3  # points plotted; 0 plots none

# %% [markdown]
# ## A plot

# %%
import matplotlib.pyplot as plt

plt.plot(range(n_points))
plt.show()

# %% [markdown]
# ## What was run

# %% tags=["nbval-check-output"]
print(profile, output_dir)
'''


@pytest.fixture
def tiny_project(tmp_path, monkeypatch):
    """A project with the tiny notebook alone: notebooks/, its full profile, build/ and figures/ under tmp_path."""
    notebooks = tmp_path / "notebooks"
    (notebooks / "params" / TINY).mkdir(parents=True)
    (notebooks / f"{TINY}.py").write_text(TINY_SOURCE)
    (notebooks / "params" / TINY / "full.yaml").write_text("n_points: 5\n")
    shutil.copy(project.REPO_ROOT / "jupytext.toml", tmp_path)  # the pairing, as in the repository
    for name, path in {"REPO_ROOT": tmp_path, "NOTEBOOK_DIR": notebooks, "PARAMS_DIR": notebooks / "params",
                       "BUILD_DIR": tmp_path / "build", "FIGURES_DIR": tmp_path / "figures"}.items():
        monkeypatch.setattr(project, name, path)
    return tmp_path


@pytest.fixture
def fake_papermill(monkeypatch):
    """Papermill without a kernel: it calls the progress hooks, gives each code cell an execution count and a PNG,
    and records the sources it ran."""
    import papermill

    executed_sources = []

    def execute_notebook(source, output, parameters=None, **options):
        nb = nbformat.from_dict(source)
        executed_sources.append(nb)
        nb.metadata["papermill"] = {"start_time": "2025-01-01T00:00:00", "duration": 1.0}
        if parameters:
            at = next(i for i, cell in enumerate(nb.cells) if "parameters" in cell.metadata.get("tags", [])) + 1
            injected = "\n".join(f"{name} = {value!r}" for name, value in parameters.items())
            nb.cells.insert(at, nbformat.v4.new_code_cell(injected, metadata={"tags": ["injected-parameters"]}))
        if "on_notebook_start" in options:
            options["on_notebook_start"](notebook=nb)
            for index, cell in enumerate(nb.cells):
                options["on_cell_start"](cell=cell, cell_index=index)
        for count, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
            cell.execution_count = count + 1
            cell.metadata["papermill"] = {"duration": 0.5}
            cell.metadata["execution"] = {"iopub.status.busy": "2025-01-01T00:00:00"}
            cell.outputs = [nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo="})]
        nbformat.write(nb, output)

    monkeypatch.setattr(papermill, "execute_notebook", execute_notebook)
    return executed_sources


def _tags(nb) -> list[list[str]]:
    return [cell.metadata.get("tags", []) for cell in nb.cells]


# The last cell keeps the kernel busy with papermill's last request (kernel_info) after its reply, as a busy
# machine can: the shutdown that follows the reply finds the kernel still inside that request.
LINGERING_CELL = """
# %%
import time

kernel = get_ipython().kernel
kernel_info = kernel.shell_handlers["kernel_info_request"]


async def lingering_kernel_info(*args):
    await kernel_info(*args)
    time.sleep(1)


kernel.shell_handlers["kernel_info_request"] = lingering_kernel_info
"""


def test_a_full_run_keeps_its_executed_notebook_with_figures_inline_beside_its_outputs(tiny_project, monkeypatch, capfd):
    """A real kernel on the tiny notebook: the figure is stored as PNG, the copy names no run and no machine;
    the terminal shows each cell's progress, and no kernel warning or error, even when the kernel is still
    finishing papermill's last request as the run ends."""
    monkeypatch.setenv("ISOLIB_PROGRESS", "1")
    source = tiny_project / "notebooks" / f"{TINY}.py"
    source.write_text(source.read_text() + LINGERING_CELL)
    result = runner.run_notebook(TINY, "full")
    assert result.ok, result.error
    terminal = capfd.readouterr().err
    # Five code cells with papermill's injected parameters; each line shows its cell's section.
    assert re.search(r"^00_tiny: cell 1 of 5, 0 s: A tiny notebook$", terminal, re.M)
    assert re.search(r"^00_tiny: cell 3 of 5, 0 s: A plot$", terminal, re.M)
    assert re.search(r"^00_tiny: cell 4 of 5, 0 s: What was run$", terminal, re.M)
    assert "without encryption" not in terminal and "WARNING" not in terminal
    assert "KeyboardInterrupt" not in terminal and "ERROR" not in terminal, terminal
    assert runner.os.environ["ISOLIB_PROGRESS"] == "1", "the kernel's setting does not outlive the run"
    kept = nbformat.read(tiny_project / "figures" / TINY / f"{TINY}.ipynb", as_version=4)
    assert kept.metadata.kernelspec == project.PROJECT_KERNEL
    assert "papermill" not in kept.metadata and "jupytext" not in kept.metadata
    assert [cell.id for cell in kept.cells] == [f"cell-{n}" for n in range(len(kept.cells))]
    assert not [cell for cell in kept.cells if {"papermill", "execution"} & set(cell.metadata)]
    outputs = [output for cell in kept.cells if cell.cell_type == "code" for output in cell.outputs]
    assert any("image/png" in output.get("data", {}) for output in outputs)
    assert not [output for output in outputs if output.get("name") == "stderr"]
    assert "cell 1 of" not in nbformat.writes(kept)
    injected = next(cell for cell in kept.cells if "injected-parameters" in cell.metadata.get("tags", []))
    assert 'output_dir = "../figures/00_tiny"' in injected.source and str(tiny_project) not in injected.source
    assert "n_points = 5" in injected.source


def test_variants_and_check_runs_never_write_into_figures(tiny_project, fake_papermill):
    assert runner.run_notebook(TINY, "full", overrides={"n_points": 2}).ok
    assert runner.run_notebook(TINY, "full", folder=tiny_project / "build" / "check").ok
    assert runner.run_notebook(TINY, "quick").ok
    assert not (tiny_project / "figures").exists()
    assert runner.run_notebook(TINY, "full").ok
    assert [path.name for path in (tiny_project / "figures" / TINY).iterdir()] == [f"{TINY}.ipynb"]


def test_a_stored_quick_run_opens_with_the_note_once_and_stays_paired(tiny_project, fake_papermill):
    stored, script = tiny_project / "notebooks" / f"{TINY}.ipynb", tiny_project / "notebooks" / f"{TINY}.py"
    scripts = []
    for _ in range(2):  # the second run reads the script the first one rewrote, note included
        assert runner.run_notebook(TINY, "quick", store=True).ok
        scripts.append(script.read_text())
    assert scripts[0] == scripts[1] and scripts[0].count("This is the quick run") == 1
    assert all(runner.QUICK_RUN_NOTE_TAG not in tags for nb in fake_papermill for tags in _tags(nb)), \
        "the note is never executed"
    nb = nbformat.read(stored, as_version=4)
    assert _tags(nb)[0] == [runner.QUICK_RUN_NOTE_TAG] and nb.cells[0].cell_type == "markdown"
    assert nb.cells[0].source == runner.quick_run_note(TINY) and nb.cells[1].source.startswith("# A tiny notebook")
    assert [cell.id for cell in nb.cells] == [runner.QUICK_RUN_NOTE_TAG] + [f"cell-{n}" for n in range(len(nb.cells) - 1)]
    assert "papermill" not in nb.metadata and nb.metadata.kernelspec == project.PROJECT_KERNEL
    before = {path: path.read_bytes() for path in (stored, script)}
    jupytext = Path(sys.executable).with_name("jupytext")
    for _ in range(2):
        subprocess.run([str(jupytext), "--sync", str(stored)], check=True, capture_output=True)
        assert {path: path.read_bytes() for path in (stored, script)} == before, "jupytext --sync changed the pair"


def test_the_note_links_the_full_run_from_notebooks(tiny_project):
    assert "(../figures/00_tiny/00_tiny.ipynb)" in runner.quick_run_note(TINY)
    assert "RESULTS.md" not in runner.quick_run_note(TINY)  # 00 declares no findings
    (tiny_project / "figures" / TINY).mkdir(parents=True)
    (tiny_project / "figures" / TINY / "RESULTS.md").write_text("# Results\n")
    assert "[its RESULTS.md](../figures/00_tiny/RESULTS.md)" in runner.quick_run_note(TINY)


def test_storing_a_stored_notebook_again_changes_nothing(tiny_project, fake_papermill):
    assert runner.run_notebook(TINY, "quick", store=True).ok
    stored, script = tiny_project / "notebooks" / f"{TINY}.ipynb", tiny_project / "notebooks" / f"{TINY}.py"
    before = {path: path.read_bytes() for path in (stored, script)}
    copy = tiny_project / "copy.ipynb"
    shutil.copy(stored, copy)
    runner.store_reference(copy, stored)
    assert {path: path.read_bytes() for path in (stored, script)} == before


def test_progress_is_one_line_per_code_cell_off_a_terminal_and_quiet_under_isolib_progress_0(
        tiny_project, fake_papermill, monkeypatch, capsys):
    monkeypatch.setenv("ISOLIB_PROGRESS", "0")
    assert runner.run_notebook(TINY, "quick").ok
    assert capsys.readouterr().err == ""
    monkeypatch.delenv("ISOLIB_PROGRESS")
    assert runner.run_notebook(TINY, "quick").ok
    assert capsys.readouterr().err.splitlines() == ["00_tiny: cell 1 of 3, 0 s: A tiny notebook",
                                                    "00_tiny: cell 2 of 3, 0 s: A plot",
                                                    "00_tiny: cell 3 of 3, 0 s: What was run"]


def _code_cells(*sources: str) -> list:
    return [nbformat.v4.new_code_cell(source) for source in sources]


def test_a_cell_is_described_by_its_section_else_its_first_comment_never_by_a_marker():
    cells = [*_code_cells("# NBVAL_CHECK_OUTPUT\nx = 1\n# the first value", "### BEGIN SOLUTION\ny = 2  # why",
                          "print(x)  # NBVAL_CHECK_OUTPUT", "  \n"),
             nbformat.v4.new_markdown_cell("Text, no heading"),
             nbformat.v4.new_markdown_cell("# Title\n\nText\n\n## Data: the sentences ##\n\nMore text"),
             *_code_cells("# NBVAL_CHECK_OUTPUT\ncorpus = 1"),
             nbformat.v4.new_markdown_cell("**The paper** found 0.1"),
             *_code_cells("print(corpus)")]
    assert runner.cell_descriptions(nbformat.v4.new_notebook(cells=cells)) == {
        0: "the first value", 1: "y = 2  # why", 2: "print(x)", 6: "Data: the sentences", 8: "Data: the sentences"}


def test_no_cell_of_the_quickstart_is_described_by_a_marker():
    descriptions = runner.cell_descriptions(jupytext.read(project.NOTEBOOK_DIR / "00_quickstart.py"))
    assert "Embeddings of every layer" in descriptions.values()
    assert not [text for text in descriptions.values() if "NBVAL" in text or text.startswith("#")]


class _Clock:
    """A clock the test moves by hand."""

    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def _started(progress, *sources: str):
    """``progress`` on a notebook of a title and code cells ``sources``, its first code cell started."""
    cells = [nbformat.v4.new_markdown_cell("# Title"), *_code_cells(*sources)]
    progress.on_notebook_start(notebook=nbformat.v4.new_notebook(cells=cells))
    progress.on_cell_start(cell=cells[1], cell_index=1)
    return cells


def test_a_run_ends_with_a_line_naming_its_outputs_and_its_results_page(tiny_project, fake_papermill, capsys):
    assert [result.ok for result in runner.reproduce("quick", [TINY])] == [True]
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("ok     00_tiny ") and lines[1:] == ["       outputs in build/quick/figures/00_tiny/"]
    variant = project.variant_dir(TINY, "full", {"n_points": 2}) / "figures"
    variant.mkdir(parents=True)
    (variant / "RESULTS.md").write_text("# Results\n")  # as a study's notebook writes it
    assert [result.ok for result in runner.reproduce("full", [TINY], overrides={"n_points": 2})] == [True]
    shown = variant.relative_to(tiny_project)
    assert capsys.readouterr().out.splitlines()[1:] == [f"       outputs in {shown}/, results page {shown}/RESULTS.md"]


def test_off_a_terminal_a_long_cell_gets_a_line_every_30_seconds():
    clock, log = _Clock(), io.StringIO()
    progress = runner.CellProgress(TINY, log, refresh=600, clock=clock)
    cells = _started(progress, "x = 1", "y = 2")
    for seconds in (1, 29, 30, 31, 59, 65, 91):
        clock.now = 100 + seconds
        progress.update()
    progress.on_cell_start(cell=cells[2], cell_index=2)
    progress.close()
    assert log.getvalue().splitlines() == [f"00_tiny: cell {cell} of 2, {elapsed}: Title" for cell, elapsed in [
        (1, "0 s"), (1, "30 s"), (1, "1 min 05 s"), (1, "1 min 31 s"), (2, "0 s")]]


def test_on_a_terminal_the_line_ticks_in_place_and_is_erased_at_the_end():
    clock, terminal = _Clock(), _Terminal()
    progress = runner.CellProgress(TINY, terminal, refresh=600, clock=clock)
    cells = _started(progress, "x = 1", "y = 2")
    clock.now += 1
    progress.update()
    clock.now += 64
    progress.update()
    progress.on_cell_start(cell=cells[2], cell_index=2)
    progress.close()
    assert terminal.getvalue() == ("\r\x1b[K00_tiny: cell 1 of 2, 0 s: Title" "\r\x1b[K00_tiny: cell 1 of 2, 1 s: Title"
                                   "\r\x1b[K00_tiny: cell 1 of 2, 1 min 05 s: Title"
                                   "\r\x1b[K00_tiny: cell 2 of 2, 0 s: Title" "\r\x1b[K")


def test_the_line_ticks_by_itself_until_the_run_ends():
    terminal = _Terminal()
    progress = runner.CellProgress(TINY, terminal, refresh=0.01)
    _started(progress, "x = 1")
    deadline = time.monotonic() + 10
    while terminal.getvalue().count("\r") < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    progress.close()
    written = terminal.getvalue()
    assert len(re.findall(r"\r\x1b\[K00_tiny: cell 1 of 1, \d+ s: Title", written)) >= 4, "the thread rewrote the line"
    time.sleep(0.05)
    assert terminal.getvalue() == written and written.endswith("\r\x1b[K"), "nothing is written after the run"


@pytest.mark.parametrize(("seconds", "text"), [(0.4, "0 s"), (59, "59 s"), (185, "3 min 05 s"), (3720, "1 h 02 min")])
def test_durations_read_as_a_person_says_them(seconds, text):
    assert runner._duration(seconds) == text


@pytest.mark.parametrize("name", project.notebook_names())
def test_the_parameters_cell_is_read_as_papermill_reads_it(name):
    """The runner reads the parameters cell without papermill (fast); names, types and defaults must agree."""
    import ast

    import jupytext
    from papermill.translators import PythonTranslator

    cells = jupytext.read(project.NOTEBOOK_DIR / f"{name}.py").cells
    inspected = PythonTranslator.inspect(next(cell for cell in cells if "parameters" in cell.metadata.get("tags", [])))
    declared = parameters.parameter_declarations(name)
    assert list(declared) == [parameter.name for parameter in inspected]
    for parameter in inspected:
        assert declared[parameter.name].annotation == parameter.inferred_type_name
        assert parameter.inferred_type_name in parameters._TYPES, "the runner checks int, float, str, bool, list, dict"
        assert declared[parameter.name].default == ast.literal_eval(parameter.default)
        assert declared[parameter.name].comment == parameter.help
    parameters.check_parameters(name, {})  # the defaults pass their own checks


# Every case of issue 29, item 7, and more of each kind: (notebook, -p NAME VALUE, words of the sentence).
REFUSED = [
    ("01_ethayarajh_contextuality", ["n_sentences", ".inf"], "n_sentences must be of type int"),
    ("01_ethayarajh_contextuality", ["n_sentences", "abc"], "n_sentences must be of type int"),
    ("01_ethayarajh_contextuality", ["models", "minilm"], "models must be of type list"),
    ("01_ethayarajh_contextuality", ["min_coverage", ".nan"], "min_coverage must be a finite number"),
    ("01_ethayarajh_contextuality", ["keep_embeddings", "1"], "keep_embeddings must be of type bool"),
    ("01_ethayarajh_contextuality", ["corpus", "wiki"], "corpus must be among sts, snli"),
    ("01_ethayarajh_contextuality", ["models", "[minilm, 'not a model']"], "is neither an offline model"),
    ("01_ethayarajh_contextuality", ["layers", "{minilm: 3}"], "layers must map model names to lists"),
    ("02_cai_clusters_manifolds", ["lid_k", "100000"], "lid_k (100000) must be below the fewest points"),
    ("02_cai_clusters_manifolds", ["corpora", "[ptb, brown]"], "corpora must be among ptb, wikitext2"),
    ("03_rajaee_cluster_isotropy", ["datasets", "[sts17]"], "datasets must be among"),
    ("03_rajaee_cluster_isotropy", ["n_jobs", "0"], "n_jobs must be -1"),
    ("03_rajaee_cluster_isotropy", ["finetune_learning_rates", "[0.0001, -1]"], "finetune_learning_rates must be"),
    ("03_rajaee_cluster_isotropy", ["finetune_held_out", "1.0"], "finetune_held_out must be a share in [0, 1)"),
    ("03_rajaee_cluster_isotropy", ["finetune_held_out", "0.0"], "nothing can choose among finetune_learning_rates"),
    ("04_mickus_isotropy_clusters", ["setups", "[nosuch]"], "setups must be among polarity, snli, pos, supersenses"),
    ("04_mickus_isotropy_clusters", ["n_items", "-1"], "n_items must hold integers of at least 0"),
    ("04_mickus_isotropy_clusters", ["seeds", "[0, 1.5]"], "seeds must hold integers of at least 0"),
]
# Issue 44: values each notebook's kernel refused (or misread) that are refused before it now, in the same form.
REFUSED_BEFORE_THE_KERNEL = [
    ("00_quickstart", ["random_state", "-5"], "random_state must hold integers of at least 0"),
    ("00_quickstart", ["models", "[]"], "models must name at least one model"),
    ("00_quickstart", ["models", "[minilm, 'not a model']"], "is neither an offline model"),
    ("00_quickstart", ["n_tokens", "1"], "n_tokens must hold integers of at least 2"),
    ("02_cai_clusters_manifolds", ["models", "[]"], "models must name at least one model"),
    ("02_cai_clusters_manifolds", ["static_baseline", "''"], "'' is neither an offline model"),
    ("04_mickus_isotropy_clusters", ["glue_models", "[]"], "glue_models must name at least one model"),
    ("01_ethayarajh_contextuality", ["n_samples", "1"], "n_samples must hold integers of at least 2"),
    ("01_ethayarajh_contextuality", ["n_sentences", "100000000000000000000000000"],
     "n_sentences must hold integers between -2,147,483,647 and 2,147,483,647"),
    ("02_cai_clusters_manifolds", ["random_state", "4294967296"], "random_state must hold integers between"),
    ("03_rajaee_cluster_isotropy", ["finetune_learning_rates", "[0.0001, .inf]"],
     "finetune_learning_rates must hold finite numbers"),
    ("00_quickstart", ["models", "[{1: a, b: c}]"], "models must have mapping keys of one type"),
    ("01_ethayarajh_contextuality", ["layers", "{minilm: [1], 2: [3]}"], "layers must have mapping keys of one type"),
]


@pytest.mark.parametrize(("notebook", "pair", "sentence"), REFUSED + REFUSED_BEFORE_THE_KERNEL)
def test_bad_parameters_are_refused_in_one_sentence_before_any_kernel_starts(notebook, pair, sentence, monkeypatch,
                                                                              capsys):
    import papermill

    from isolib.cli import main

    def no_kernel(*args, **options):
        raise AssertionError("a kernel was started")

    monkeypatch.setattr(papermill, "execute_notebook", no_kernel)
    assert main(["reproduce", "--only", notebook, "-p", *pair]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith(f"error: Notebook {notebook}: ") and sentence in error and "\n" not in error


@pytest.mark.parametrize(("override", "sentence"), [
    ({"models": "minilm"}, "got 'minilm': a list of one is written [minilm]."),
    ({"n_sentence": 100}, "has no parameter n_sentence to override (profile and output_dir are set by the runner); "
                          "did you mean n_sentences?"),
])
def test_a_near_miss_is_refused_with_what_was_likely_meant(override, sentence):
    with pytest.raises(ValueError, match=re.escape(sentence)):
        parameters.parameters("01_ethayarajh_contextuality", "quick", override)


def test_an_empty_appendix_needs_no_model():
    parameters.parameters("04_mickus_isotropy_clusters", "quick", {"glue_tasks": [], "glue_models": []})


@pytest.mark.parametrize(("value", "sentence"), [
    ("&a [*a]", "uses a YAML anchor or alias"),  # refers to itself
    ("[&a [x, x, x, x, x, x, x, x], " + ", ".join(f"&{name} [{', '.join([f'*{alias}'] * 8)}]"  # 8**9 x's expanded
                                                   for alias, name in zip("abcdefgh", "bcdefghi")) + "]",
     "uses a YAML anchor or alias"),
    ("[" * 5000 + "]" * 5000, "nests lists or mappings deeper than 8 levels"),  # YAML's reader would recurse
    ("[" + ", ".join(["minilm"] * 2000) + "]", "has 16,000 characters, more than the 10,000"),
])
def test_an_override_is_bounded_before_yaml_builds_it(value, sentence):
    with pytest.raises(ValueError, match=re.escape(f"The value of -p models {sentence}")):
        parameters.parse_overrides([["models", value]])


def test_an_override_is_checked_before_its_variant_folder_is_named(monkeypatch):
    def no_folder(*args):
        raise AssertionError("the variant folder was named")

    monkeypatch.setattr(project, "variant_dir", no_folder)
    with pytest.raises(ValueError, match="models must have mapping keys of one type"):
        parameters.parameters("00_quickstart", "quick", {"models": [{1: "a", "b": "c"}]})


def test_a_sample_larger_than_its_corpus_says_it_takes_the_whole_corpus():
    from isolib.datasets import sample_sentences

    with pytest.warns(UserWarning, match=r"n_sentences is 1,000, more than the 3 sentences given, so all of them "
                                         r"are taken"):
        assert sample_sentences(["a", "b", "c"], 1000) == ["a", "b", "c"]


def test_a_profile_file_is_checked_too(tiny_project):
    (tiny_project / "notebooks" / "params" / TINY / "full.yaml").write_text("n_points: many\n")
    with pytest.raises(ValueError, match="n_points must be of type int"):
        parameters.parameters(TINY, "full")


def test_the_cli_refuses_each_case_of_the_issue_within_five_seconds():
    """As a user runs it: a fresh process, nothing imported yet (the type checks; a study's own rules import
    its module first, seconds more on a busy machine)."""
    import time

    for notebook, pair, _ in [case for case in REFUSED if "must be of type" in case[2]]:
        start = time.perf_counter()
        finished = subprocess.run([sys.executable, "-m", "isolib", "reproduce", "--only", notebook, "-p", *pair],
                                  capture_output=True, text=True, cwd=project.REPO_ROOT)
        assert finished.returncode == 2 and finished.stderr.count("\n") == 1
        assert time.perf_counter() - start < 5, f"{pair} took {time.perf_counter() - start:.1f} s"


def test_sample_sentences_refuses_a_negative_count():
    from isolib.datasets import sample_sentences

    with pytest.raises(ValueError, match="n_sentences must be an integer of at least 0"):
        sample_sentences(["a", "b", "c"], -5)
    assert sample_sentences(["a", "b", "c"], 0) == ["a", "b", "c"]


def test_a_student_copy_is_nbgraders_release_without_note_markers_or_a_path_above_itself(tiny_project, fake_papermill):
    """Solutions become nbgrader's stub, hidden tests go, test cells are locked; the quick-run note and nbval's
    tags go, and output_dir points into the copy's own folder."""
    from nbgrader.preprocessors import ClearSolutions

    assert runner.run_notebook(TINY, "quick", store=True).ok
    stored = tiny_project / "notebooks" / f"{TINY}.ipynb"
    nb = nbformat.read(stored, as_version=4)
    with pytest.raises(ValueError, match="no exercise"):
        student.student_copy(TINY, tiny_project / "student")
    assert student.student_copies("all", tiny_project / "student") == [], "a notebook without exercises has no copy"
    grading = {"schema_version": 3, "locked": False, "grade": False, "solution": True, "grade_id": "exercise_1"}
    nb.cells.append(nbformat.v4.new_code_cell("### BEGIN SOLUTION\nanswer = 42\n### END SOLUTION",
                                              metadata={"nbgrader": grading, "tags": ["nbval-check-output"]}))
    test = {**grading, "locked": True, "grade": True, "solution": False, "grade_id": "exercise_1_test", "points": 1}
    nb.cells.append(nbformat.v4.new_code_cell("assert answer > 0\n### BEGIN HIDDEN TESTS\nassert answer == 42\n"
                                              "### END HIDDEN TESTS", metadata={"nbgrader": test}))
    nbformat.write(nb, stored)
    (tiny_project / "notebooks" / f"{TINY}.py").write_text(jupytext.writes(nb, fmt="py:percent"))  # the pair, as synced
    assert project.exercise_notebooks() == [TINY]
    with pytest.raises(FileNotFoundError, match="has no student parameters"):
        student.student_copies("all", tiny_project / "student")
    (tiny_project / "notebooks" / "params" / TINY / "student.yaml").write_text("n_points: 2\n")
    (path,) = student.student_copies("all", tiny_project / "student")
    assert path == tiny_project / "student" / f"{TINY}.ipynb"
    copy = nbformat.read(path, as_version=4)
    assert [tags for tags in _tags(copy) if runner.QUICK_RUN_NOTE_TAG in tags] == []
    assert copy.cells[0].id == student.FIRST_CELL_ID and copy.cells[1].source.startswith("# A tiny notebook")
    assert 'output_dir: str = "outputs/00_tiny"  # folder for figures and tables' in copy.cells[2].source
    assert 'profile: str = "student"' in copy.cells[2].source and "n_points: int = 2  # points" in copy.cells[2].source
    solution, checked = copy.cells[-2:]
    assert solution.source == ClearSolutions().code_stub["python"] and solution.metadata.deletable is False
    assert checked.source == "assert answer > 0" and checked.metadata.editable is False
    assert checked.metadata.nbgrader.checksum and not [cell for cell in copy.cells if cell.get("outputs")]
    assert [tags for tags in _tags(copy) if "nbval-check-output" in tags] == [], "nbval's tags are for the quick run"


def test_the_release_steps_are_generate_assignments_less_its_database():
    from nbgrader.converters import GenerateAssignment

    steps = [step.__name__ for step in GenerateAssignment.class_traits()["preprocessors"].default()]
    assert [step for step in steps if step != "SaveCells"] == list(student.RELEASE_STEPS)


def test_the_student_command_builds_every_study_by_default():
    from isolib.cli import build_parser

    assert build_parser().parse_args(["student"]).notebook == "all"
    assert build_parser().parse_args(["student", "01_ethayarajh_contextuality"]).notebook == "01_ethayarajh_contextuality"
    assert project.exercise_notebooks() == [name for name in project.notebook_names() if name != "00_quickstart"]


def test_a_kernel_is_interrupted_at_shutdown_only_while_a_cell_runs(monkeypatch):
    """A runner stopped in the middle of a cell still interrupts it; an idle kernel is shut down without SIGINT."""
    import asyncio

    from jupyter_client.manager import KernelManager

    interrupted = []

    async def interrupt(manager):
        interrupted.append(manager.shutting_down)

    monkeypatch.setattr(KernelManager, "_async_interrupt_kernel", interrupt)
    run = runner._KernelRun()
    manager = run.kernel_manager_class()
    asyncio.run(manager._async_interrupt_kernel())  # an interrupt asked for outside a shutdown (a timeout)
    manager.shutting_down = True
    run.on_cell_execute(cell=None, cell_index=0)
    asyncio.run(manager._async_interrupt_kernel())
    run.on_cell_executed(cell=None, cell_index=0, execute_reply={})
    asyncio.run(manager._async_interrupt_kernel())
    assert interrupted == [False, True]


def test_a_stored_quick_runs_page_links_to_the_glossary_from_where_it_is_kept():
    from isolib.findings import Record, declare, threshold, write_pages
    from isolib.runner import store_quick_results

    run = project.BUILD_DIR / "test-quick-store" / "figures" / "01_a"  # deeper than its stored copy
    try:
        (run / "evidence").mkdir(parents=True)
        write_pages(Record("T", "C", "M", (), (declare("Claim", "p", "m", "0.3", threshold(0.3, above=0.1), "r.",
                                                       kind="test", control="0.1"),)), run)
        target = project.BUILD_DIR / "test-quick-store" / "kept"
        store_quick_results(run, target)
        link = re.search(r"\[the glossary\]\(([^)]+)\)", (target / "RESULTS.md").read_text()).group(1)
        assert (target / link).resolve() == (project.REPO_ROOT / "docs" / "glossary.md").resolve()
    finally:
        shutil.rmtree(project.BUILD_DIR / "test-quick-store", ignore_errors=True)
