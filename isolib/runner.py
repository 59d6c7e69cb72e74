"""Execution: run the notebooks headlessly with Papermill, one profile at a time, showing progress.

Profiles
--------
quick
    The defaults of each notebook's ``parameters`` cell: data subsets, the smallest
    offline model, a few minutes on two CPU cores. Outputs go under ``build/quick/``.
full
    ``notebooks/params/<notebook>/full.yaml``: all data, all offline models. Figures
    and tables go to the committed ``figures/<notebook>/``.
paper
    ``notebooks/params/<notebook>/paper.yaml``: the papers' own Hub models (network,
    ideally a GPU). Outputs go under ``build/paper/``.
student
    ``notebooks/params/<notebook>/student.yaml``, for the notebooks with exercises only: the setting their
    student copies open on (:mod:`isolib.student`), small enough to reach the exercises in under 2 minutes
    on two cores. Outputs go under ``build/student/``.

The source of each notebook is ``notebooks/<name>.py`` (jupytext percent format);
executed copies are written to ``build/<profile>/<name>.ipynb``. With ``store=True``
(quick profile only) the executed notebook also replaces ``notebooks/<name>.ipynb``,
the reference nbval compares against, opening with a generated note that it is the quick run
and where the full run is. A ``full`` run keeps its executed notebook beside its outputs, as
``figures/<name>/<name>.ipynb``, and :func:`isolib.findings.write_overview` regenerates
``figures/README.md`` from the committed records (``results.json``).

Progress
--------
While a notebook runs, the runner shows on stderr which of its code cells runs, by the heading of its
section (:func:`cell_descriptions`), and for how long (:class:`CellProgress`); ``ISOLIB_PROGRESS=0``
silences it. Inside the kernel progress bars stay off, so that none is stored among the outputs. After
each notebook, a line says where its outputs and its results page (``RESULTS.md``) are.

Variants
--------
``overrides`` (``python -m isolib reproduce --only NB -p NAME VALUE``, read and checked by
:mod:`isolib.parameters`) change parameters of one profile. A variant never writes into ``figures/``: its
executed notebook and outputs go to their own folder, ``build/variants/<profile>/<notebook>/<slug>-<digest>/``
(:func:`isolib.project.variant_dir`), and its ``profile`` parameter names the overrides, so the results
page says what was run.

Where things are is :mod:`isolib.project`; the parameters, :mod:`isolib.parameters`; the comparison of a
rerun with the committed results, :mod:`isolib.comparison`; student copies, :mod:`isolib.student`.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from isolib import project
from isolib.parameters import parameters


@dataclass(frozen=True)
class RunResult:
    notebook: str
    ok: bool
    seconds: float
    executed: Path
    error: str = ""
    outputs: Path | None = None  # the folder of its figures and tables


def run_notebook(notebook: str, profile: str, *, store: bool = False, kernel: str = "python3",
                 overrides: dict | None = None, folder: Path | None = None) -> RunResult:
    """Execute one notebook under one profile (and ``overrides``); never raises for a failing notebook.

    ``folder`` holds the executed notebook and, in ``folder/figures``, the outputs (default: the
    profile's or the variant's folders). A full run into the profile's folders also keeps its
    executed notebook in ``figures/<notebook>/`` (:func:`store_full_run`); variants and runs into
    another ``folder`` (:func:`check_figures`) never write there.
    """
    import jupytext
    import papermill

    if store and (profile != "quick" or overrides):
        raise ValueError("Only the quick run without overrides is stored as the committed notebook (nbval's reference).")
    keeps_full_run = profile == "full" and not overrides and folder is None
    output = None if folder is None else folder / "figures" / notebook
    folder = folder or (project.variant_dir(notebook, profile, overrides) if overrides else project.BUILD_DIR / profile)
    executed = folder / f"{notebook}.ipynb"
    executed.parent.mkdir(parents=True, exist_ok=True)
    progress = CellProgress(notebook) if os.environ.get("ISOLIB_PROGRESS") != "0" else None
    kernel_run = _KernelRun()
    hooks = ({"on_notebook_start": progress.on_notebook_start, "on_cell_start": progress.on_cell_start}
             if progress else {})
    start = time.perf_counter()
    try:
        source = without_quick_run_note(jupytext.read(project.NOTEBOOK_DIR / f"{notebook}.py"))
        params = parameters(notebook, profile, overrides, output=output)
        # The quick profile injects nothing: its notebooks' default output_dir is the profile's folder.
        outputs = (Path(os.path.normpath(project.NOTEBOOK_DIR / params["output_dir"])) if "output_dir" in params
                   else project.output_dir(notebook, profile))
        with _kernel_environment():
            papermill.execute_notebook(source, str(executed), parameters=params or None, cwd=str(project.NOTEBOOK_DIR),
                                       kernel_name=kernel, progress_bar=False, log_output=False,
                                       config=_kernel_manager_config(), **kernel_run.hooks(), **hooks)
    except Exception as error:  # a failing notebook is reported, the others still run
        return RunResult(notebook, False, time.perf_counter() - start, executed, _first_line(error))
    finally:
        if progress:
            progress.close()
    if store:
        store_reference(executed, project.NOTEBOOK_DIR / f"{notebook}.ipynb")
        store_quick_results(project.output_dir(notebook, "quick"), project.QUICK_RESULTS_DIR / notebook)
    if keeps_full_run:
        store_full_run(executed, project.FIGURES_DIR / notebook / f"{notebook}.ipynb")
    return RunResult(notebook, True, time.perf_counter() - start, executed, outputs=outputs)


@contextmanager
def environment(**values: str):
    """Set environment variables for the duration of a block (a kernel started inside inherits them), then restore them."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _kernel_environment():
    """The environment the kernel starts with, restored afterwards (the runner's own progress setting included).

    Progress bars inside the kernel would be stored as outputs; the runner shows the cells' progress instead.
    The inline backend stores each shown figure as PNG in the executed notebook (Agg would show nothing,
    leaving every "Figure" section empty on GitHub); it needs no display either.
    """
    return environment(ISOLIB_PROGRESS="0", MPLBACKEND="module://matplotlib_inline.backend_inline")


def _kernel_manager_config():
    """Kernel manager settings: CurveZMQ keys for the kernel's sockets where libzmq has CurveZMQ.

    Without them the kernel talks over unencrypted TCP and ipykernel warns so on every run.
    """
    import zmq
    from traitlets.config import Config

    return Config({"KernelManager": {"transport_encryption": "required" if zmq.has("curve") else "disabled"}})


class _KernelRun:
    """Papermill hooks following whether the kernel runs a cell, and a kernel manager interrupting it at shutdown only then.

    jupyter_client interrupts a kernel (SIGINT) before asking it to shut down, to stop a cell still running.
    Papermill asks for the shutdown as soon as the reply to its last request (kernel_info) arrives, while the
    kernel may still be finishing that request with SIGINT armed: after a run that went well, the kernel then
    logs "KeyboardInterrupt caught in kernel.". A cell still running (the runner stopped by Ctrl-C, a timeout)
    is interrupted as before.
    """

    def __init__(self):
        from jupyter_client import AsyncKernelManager

        self.cell_running = False
        run = self

        class KernelManager(AsyncKernelManager):
            async def _async_interrupt_kernel(self) -> None:  # what shutdown_kernel calls first
                if run.cell_running or not self.shutting_down:
                    await super()._async_interrupt_kernel()

        self.kernel_manager_class = KernelManager

    def on_cell_execute(self, **_) -> None:
        self.cell_running = True

    def on_cell_executed(self, **_) -> None:  # after the cell's reply, error or not
        self.cell_running = False

    def hooks(self) -> dict:
        """Papermill's keyword arguments: the hooks and the kernel manager class."""
        return {"on_cell_execute": self.on_cell_execute, "on_cell_executed": self.on_cell_executed,
                "kernel_manager_class": self.kernel_manager_class}


class CellProgress:
    """Papermill hooks showing on the runner's stderr the code cell a notebook runs, in its author's words, and how long.

    The hooks and a thread run in the runner's process, so nothing of it reaches the executed notebook. On a
    terminal one line is rewritten in place every ``refresh`` seconds; elsewhere (a log file, CI) a cell gets
    a line when it starts and another every ``every`` seconds it keeps running.
    """

    def __init__(self, notebook: str, stream=None, *, refresh: float = 1.0, every: float = 30.0, clock=time.monotonic):
        self.notebook = notebook
        self.stream = stream or sys.stderr
        self.in_place = self.stream.isatty()
        self.refresh, self.every, self.clock = refresh, every, clock
        self.descriptions: dict[int, str] = {}
        self.cell: int | None = None  # the index of the running code cell
        self.started = self.next_line = 0.0
        self.lock = threading.Lock()  # the hooks and the thread write
        self.stopped = threading.Event()
        self.thread: threading.Thread | None = None

    def on_notebook_start(self, notebook, **_) -> None:
        self.descriptions = cell_descriptions(notebook)
        self.thread = threading.Thread(target=self._tick, name=f"progress of {self.notebook}", daemon=True)
        self.thread.start()

    def on_cell_start(self, cell, cell_index: int, **_) -> None:
        if cell_index not in self.descriptions:
            return
        with self.lock:
            self.cell, self.started, self.next_line = cell_index, self.clock(), self.every
            self._write(0.0)

    def update(self) -> None:
        """Rewrite the line on a terminal; elsewhere, write one if the cell has run ``every`` seconds more."""
        with self.lock:
            if self.cell is None:
                return
            elapsed = self.clock() - self.started
            if self.in_place:
                self._write(elapsed)
            elif elapsed >= self.next_line:
                self.next_line = (elapsed // self.every + 1) * self.every
                self._write(elapsed)

    def _tick(self) -> None:
        while not self.stopped.wait(self.refresh):
            self.update()

    def _write(self, elapsed: float) -> None:
        position = list(self.descriptions).index(self.cell) + 1
        line = (f"{self.notebook}: cell {position} of {len(self.descriptions)}, {_duration(elapsed)}: "
                f"{self.descriptions[self.cell]}")
        if self.in_place:
            width = shutil.get_terminal_size().columns - 1
            self.stream.write("\r\x1b[K" + line[:width])  # carriage return, then erase the previous line
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        """Stop the thread and erase the in-place line, so that the notebook's result line takes its place."""
        self.stopped.set()
        if self.thread:
            self.thread.join()
        if self.in_place:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


# A markdown heading; a tool's marker in code, alone on its line or after the code: nbval's ``# NBVAL_CHECK_OUTPUT``,
# nbgrader's ``### BEGIN SOLUTION`` (a comment in capitals).
_HEADING = re.compile(r"#{1,6}\s+(.+?)[\s#]*")
_TOOL_MARKER = re.compile(r"\s*#+[A-Z_ ]*$")


def cell_descriptions(nb) -> dict[int, str]:
    """What each code cell of ``nb`` does, in its author's words, by cell index (blank cells, never run, left out).

    The last heading above the cell (the section it is in), else its first comment line, else its first line;
    a tool's marker is never one.
    """
    descriptions, heading = {}, ""
    for index, cell in enumerate(nb.cells):
        lines = [line.strip() for line in cell.source.splitlines() if line.strip()]
        if cell.cell_type == "markdown":
            heading = next((match[1] for line in reversed(lines) if (match := _HEADING.fullmatch(line))), heading)
        elif cell.cell_type == "code" and lines:
            said = [text for text in (_TOOL_MARKER.sub("", line) for line in lines) if text]
            comment = next((line.lstrip("#").strip() for line in said if line.startswith("#")), "")
            descriptions[index] = heading or comment or next(iter(said), "")
    return descriptions


def _duration(seconds: float) -> str:
    """``42 s``, ``3 min 05 s`` or ``1 h 02 min``."""
    minutes, seconds = divmod(int(seconds), 60)
    if not minutes:
        return f"{seconds} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min {seconds:02d} s"


# The tag of the generated first cell of a stored quick notebook (:func:`quick_run_note`).
QUICK_RUN_NOTE_TAG = "quick-run-note"


def quick_run_note(notebook: str) -> str:
    """The first cell of a stored quick notebook: it is the quick run, and links to the full run's notebook and results.

    The links are relative to ``notebooks/``, where the quick notebook lies.
    """
    full = f"../figures/{notebook}"
    links = f"[its executed notebook]({full}/{notebook}.ipynb)"
    if (project.FIGURES_DIR / notebook / "RESULTS.md").exists():
        links += f" and [its RESULTS.md]({full}/RESULTS.md)"
    return (f"> **This is the quick run** (`make quick`): the defaults of the parameters cell, with fewer models "
            f"and subsets of the data, so its numbers and verdicts can differ from the full run's (`make figures`: "
            f"all data, every offline model): see {links}.")


def without_quick_run_note(nb):
    """``nb`` without its generated quick-run note: the note is written on storing, never executed or repeated."""
    nb.cells = [cell for cell in nb.cells if QUICK_RUN_NOTE_TAG not in cell.metadata.get("tags", [])]
    return nb


def _cleaned(executed: Path):
    """An executed notebook without run-specific metadata (durations, timestamps), declaring :data:`project.PROJECT_KERNEL`.

    Cell ids are ``cell-<n>``: a rerun changes only what the run changed.
    """
    import nbformat

    nb = without_quick_run_note(nbformat.read(executed, as_version=4))
    nb.metadata.pop("papermill", None)
    nb.metadata["kernelspec"] = dict(project.PROJECT_KERNEL)
    for number, cell in enumerate(nb.cells):
        cell.id = f"cell-{number}"
        for key in ("papermill", "execution"):
            cell.metadata.pop(key, None)
        if not cell.metadata.get("tags", True):  # papermill adds empty tag lists
            del cell.metadata["tags"]
    return nb


def store_reference(executed: Path, target: Path) -> None:
    """Store an executed quick run as ``target`` (``notebooks/<name>.ipynb``) and rewrite its paired script.

    The copy is cleaned (:func:`_cleaned`) and opens with :func:`quick_run_note`, a markdown cell tagged
    :data:`QUICK_RUN_NOTE_TAG`. The paired ``.py`` is rewritten from the copy, so the pair stays in sync
    (``jupytext --sync`` changes nothing) and holds the note once: runs drop it before executing.
    """
    import jupytext
    import nbformat

    nb = _cleaned(executed)
    # The pairing lives in jupytext.toml; the copy of it in the notebook's metadata is what `jupytext --sync`
    # (make sync) would otherwise delete on a fresh checkout.
    nb.metadata.pop("jupytext", None)
    note = nbformat.v4.new_markdown_cell(quick_run_note(target.stem), id=QUICK_RUN_NOTE_TAG,
                                         metadata={"tags": [QUICK_RUN_NOTE_TAG]})
    nb.cells.insert(0, note)
    nbformat.write(nb, target)
    jupytext.write(jupytext.read(target), target.with_suffix(".py"), fmt="py:percent")


def store_quick_results(folder: Path, target: Path) -> None:
    """Keep a stored quick run's evidence, record (``results.json``) and page in ``target``, replacing what was there.

    A notebook that stores no evidence (``00_quickstart`` judges no claim) keeps nothing. The page is rendered
    again in ``target``, where its links (to the glossary) must lead.
    """
    from isolib.evidence import EVIDENCE_FOLDER
    from isolib.findings import read_record, write_pages

    if not (folder / EVIDENCE_FOLDER).is_dir():
        return
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(folder / EVIDENCE_FOLDER, target / EVIDENCE_FOLDER)
    write_pages(read_record(folder), target)


def store_full_run(executed: Path, target: Path) -> None:
    """Keep an executed full run as ``target`` (``figures/<name>/<name>.ipynb``), cleaned as :func:`_cleaned`.

    It is a record to read (figures inline), not a paired source: its jupytext metadata is dropped.
    """
    import nbformat

    nb = _cleaned(executed)
    nb.metadata.pop("jupytext", None)
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)


def peak_memory_gib() -> float:
    """Peak resident memory of this process so far, in GiB (NaN where the platform does not say, e.g. Windows)."""
    try:
        import resource
    except ImportError:  # Windows
        return float("nan")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports kilobytes, macOS bytes.
    return peak / (2**30 if sys.platform == "darwin" else 2**20)


def _first_line(error: Exception) -> str:
    text = str(error).strip().splitlines()
    lines = [line for line in text if line.strip()]
    # Papermill's PapermillExecutionError ends with the exception name and message.
    return (lines[-1] if lines else type(error).__name__)[:200]


def _shown(path: Path) -> Path:
    """``path`` as a user reads it: relative to the repository where it lies inside."""
    return path.relative_to(project.REPO_ROOT) if path.is_relative_to(project.REPO_ROOT) else path


def reproduce(profile: str, only: list[str] | None = None, *, store: bool = False,
              overrides: dict | None = None) -> list[RunResult]:
    """Run every notebook (or those in ``only``): a line per notebook, then where a successful run put its outputs.

    ``overrides`` (a variant) need exactly one notebook in ``only``: parameters differ between notebooks.
    """
    names = project.notebook_names()
    if only:
        unknown = sorted(set(only) - set(names))
        if unknown:
            raise ValueError(f"Unknown notebook {', '.join(unknown)}; notebooks are: {', '.join(names)}.")
    if profile == "student":
        names = project.exercise_notebooks()  # the only notebooks with a student profile
        without = sorted(set(only or ()) - set(names))
        if without:
            raise ValueError(f"{', '.join(without)} has no exercises, so no student profile; the notebooks with "
                             f"exercises are: {', '.join(names)}.")
    if only:
        names = [n for n in names if n in only]
    if overrides and len(names) != 1:
        raise ValueError("Parameter overrides (-p) apply to one notebook; name it with --only.")
    for name in names:
        parameters(name, profile, overrides)  # a bad parameter fails here, in one sentence, before any kernel starts
    results = []
    for name in names:
        result = run_notebook(name, profile, store=store, overrides=overrides)
        status = "ok    " if result.ok else "FAILED"
        detail = f"  {result.error} (see {_shown(result.executed)})" if not result.ok else ""
        print(f"{status} {name:<36} {result.seconds:7.1f} s{detail}", flush=True)
        if result.ok:
            page = result.outputs / "RESULTS.md"
            print(f"{'':7}outputs in {_shown(result.outputs)}/"
                  + (f", results page {_shown(page)}" if page.exists() else ""), flush=True)
        results.append(result)
    if profile == "full" and not overrides:
        from isolib.findings import write_overview

        print(f"wrote {write_overview(project.FIGURES_DIR, project.study_notebooks()).relative_to(project.REPO_ROOT)}", flush=True)
    return results

