"""Execute the study notebooks headlessly with Papermill, one profile at a time.

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

The source of each notebook is ``notebooks/<name>.py`` (jupytext percent format);
executed copies are written to ``build/<profile>/<name>.ipynb``. With ``store=True``
(quick profile only) the executed notebook also replaces ``notebooks/<name>.ipynb``,
the reference nbval compares against, opening with a generated note that it is the quick run
and where the full run is. A ``full`` run keeps its executed notebook beside its outputs, as
``figures/<name>/<name>.ipynb``, and :func:`isolib.findings.write_overview` regenerates
``figures/README.md`` from the committed ``RESULTS.md`` files.

Progress
--------
While a notebook runs, the runner prints on stderr which of its code cells runs and the time taken
so far (:class:`CellProgress`); ``ISOLIB_PROGRESS=0`` silences it. Inside the kernel progress bars
stay off, so that none is stored among the outputs.

Variants
--------
``overrides`` (``python -m isolib reproduce --only NB -p NAME VALUE``, each VALUE read by
:func:`read_override`) change parameters of one profile, e.g. another corpus or model. A variant
never writes into ``figures/``: its executed notebook and outputs go to their own folder,
``build/variants/<profile>/<notebook>/<slug>-<digest>/`` (:func:`variant_dir`), after every parameter
is checked (:func:`check_parameters`), and its ``profile`` parameter names the overrides, so
``RESULTS.md`` says what was run (the executed notebook also records every parameter in its
injected-parameters cell).
"""

from __future__ import annotations

import ast
import hashlib
import json
import math
import os
import re
import shutil
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml

from isolib import studies

REPO_ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = REPO_ROOT / "notebooks"
PARAMS_DIR = NOTEBOOK_DIR / "params"
BUILD_DIR = REPO_ROOT / "build"
FIGURES_DIR = REPO_ROOT / "figures"
PROFILES = ("quick", "full", "paper")
# The kernel every committed notebook declares; `make setup` registers it for the user, so any
# JupyterLab (the project's, a system one, conda's) offers it and runs the project's environment.
PROJECT_KERNEL = {"name": "isolib", "display_name": "Python (isolib)", "language": "python"}


def notebook_names() -> list[str]:
    """Stems of the study notebooks (``notebooks/NN_*.py``), in order."""
    return sorted(p.stem for p in NOTEBOOK_DIR.glob("[0-9][0-9]_*.py"))


def study_notebooks() -> list[str]:
    """The notebooks that are studies (each has its package under ``isolib/studies/`` and a record)."""
    return [name for name in notebook_names() if studies.is_study(name)]


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


@dataclass(frozen=True)
class Declared:
    """One parameter of a notebook's ``parameters`` cell: ``name: annotation = default  # comment``."""

    name: str
    annotation: str
    default: object
    comment: str


# Read without jupytext or papermill: importing them (nbformat's JSON schema checks) takes seconds, and
# a bad -p must be refused at once. tests/test_runner.py checks this reading against papermill's.
_PARAMETERS_CELL = re.compile(r'^# %%.*tags=\[[^\]]*"parameters"[^\]]*\].*\n((?:(?!# %%).*\n)*)', re.M)
_TYPES = {"int": int, "float": float, "str": str, "bool": bool, "list": list, "dict": dict}


def parameter_declarations(notebook: str) -> dict[str, Declared]:
    """The notebook's parameters, in the order its ``parameters`` cell declares them (``notebooks/<notebook>.py``)."""
    source = (NOTEBOOK_DIR / f"{notebook}.py").read_text()
    cell = _PARAMETERS_CELL.search(source)
    if cell is None:
        raise ValueError(f"{notebook}.py has no cell tagged parameters.")
    lines = cell.group(1).splitlines()
    declared = {}
    for node in ast.parse(cell.group(1)).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            comment = lines[node.lineno - 1].partition("#")[2].strip()
            declared[node.target.id] = Declared(node.target.id, ast.unparse(node.annotation),
                                                ast.literal_eval(node.value), comment)
    return declared


def declared_parameters(notebook: str) -> list[str]:
    """Names of the notebook's parameters, in the order its ``parameters`` cell declares them."""
    return list(parameter_declarations(notebook))


def check_parameters(notebook: str, params: dict) -> None:
    """Refuse, in one sentence, parameters a run of ``notebook`` would fail on or misread, before any kernel starts.

    Each value must have its declared type (the annotation in the ``parameters`` cell: an ``int``
    is no ``float`` or ``bool``, a ``list`` no string) and hold only what :func:`check_bounded` allows
    (finite numbers, integers of 32 bits, mapping keys of one type); then the study's own rules apply:
    ``check_parameters(params)`` of ``isolib.studies.<name>`` (the notebook's name without its number;
    :func:`check_quickstart_parameters` for 00_quickstart), given every parameter, the defaults completed
    by ``params``.
    """
    declared = parameter_declarations(notebook)
    for name, value in params.items():
        expected = _TYPES[declared[name].annotation]
        numeric = expected in (int, float)
        right_type = (isinstance(value, (int, float) if expected is float else expected)
                      and not (numeric and isinstance(value, bool)))
        if not right_type:
            raise ValueError(f"Notebook {notebook}: {name} must be of type {declared[name].annotation} "
                             f"({declared[name].comment}); got {value!r}.")
        try:
            check_bounded(name, value)
        except ValueError as error:
            raise ValueError(f"Notebook {notebook}: {error}") from None
    if studies.is_study(notebook):
        check = studies.part(notebook, "settings").check_parameters
    elif notebook == "00_quickstart":  # no study: its rules are here
        check = check_quickstart_parameters
    else:
        return
    try:
        check({name: parameter.default for name, parameter in declared.items()} | params)
    except ValueError as error:
        raise ValueError(f"Notebook {notebook}: {error}") from None


# What a parameter's value may hold, whatever its notebook: sizes, counts and seeds fit 32 bits (scikit-learn's
# seeds end at 2**32 - 1, numpy's sizes overflow past 2**63), and no value nests deeper than a few lists or mappings.
LARGEST_INTEGER = 2**31 - 1
DEEPEST_NESTING = 8


def check_bounded(name: str, value, *, depth: int = 0) -> None:
    """Refuse (one sentence) a parameter ``name`` whose ``value`` holds, at any depth, a number that is not finite,
    an integer beyond :data:`LARGEST_INTEGER`, a mapping whose keys are not all of one type (strings or numbers),
    or lists and mappings nested deeper than :data:`DEEPEST_NESTING`."""
    if isinstance(value, (list, dict)):
        if depth == DEEPEST_NESTING:
            raise ValueError(f"{name} nests lists or mappings deeper than {DEEPEST_NESTING} levels.")
        if isinstance(value, dict):
            kinds = {type(key) for key in value}
            if len(kinds) > 1 or not kinds <= {str, int, float, bool}:
                raise ValueError(f"{name} must have mapping keys of one type, all strings or all numbers; got keys "
                                 f"of type {', '.join(sorted(kind.__name__ for kind in kinds))}.")
        for item in [*value, *value.values()] if isinstance(value, dict) else value:
            check_bounded(name, item, depth=depth + 1)
    elif isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number; got {value!r}." if depth == 0 else
                         f"{name} must hold finite numbers; got {value!r}.")
    elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > LARGEST_INTEGER:
        raise ValueError(f"{name} must hold integers between -{LARGEST_INTEGER:,} and {LARGEST_INTEGER:,} (sizes, "
                         f"counts and seeds); got {value}.")


def check_integers(params: dict, names, *, minimum: int | None = 0) -> None:
    """Refuse (one sentence) a parameter in ``names`` (a value or a list) holding other than integers >= ``minimum``.

    For the studies' ``check_parameters``: sizes, counts and seeds (where 0 often means "all");
    ``minimum=None`` accepts any integer (layer numbers, which count from the top when negative).
    """
    for name in names:
        value = params[name]
        for item in value if isinstance(value, list) else [value]:
            if not isinstance(item, int) or isinstance(item, bool) or (minimum is not None and item < minimum):
                least = "" if minimum is None else f" of at least {minimum}"
                raise ValueError(f"{name} must hold integers{least}; got {value!r}.")


def check_choices(params: dict, name: str, choices) -> None:
    """Refuse (one sentence) a parameter ``name`` (a value or a list of values) outside ``choices``."""
    value = params[name]
    unknown = [item for item in (value if isinstance(value, list) else [value]) if item not in choices]
    if unknown:
        raise ValueError(f"{name} must be among {', '.join(map(str, choices))}; got {', '.join(map(repr, unknown))}.")


def check_layers(params: dict, name: str) -> None:
    """Refuse (one sentence) a ``layers`` parameter that is not a mapping of model names to lists of layer numbers."""
    value = params[name]
    if not all(isinstance(model, str) and isinstance(layers, list)
               and all(isinstance(layer, int) and not isinstance(layer, bool) for layer in layers)
               for model, layers in value.items()):
        raise ValueError(f"{name} must map model names to lists of layer numbers, e.g. {{minilm: [0, 3, 6]}}; "
                         f"got {value!r}.")


# A Hugging Face Hub id: a name, or owner/name, of letters, digits, '-', '_' and '.'.
_HUB_ID = re.compile(r"^(?:[\w.-]+/)?[\w.-]+$")


def check_models(params: dict, name: str) -> None:
    """Refuse (one sentence) a model parameter (a name or a list of names) that is an empty list or holds no offline
    model, model folder or Hub id."""
    from isolib.models import OFFLINE_MODELS

    value = params[name]
    if value == []:
        raise ValueError(f"{name} must name at least one model; got [].")
    for model in value if isinstance(value, list) else [value]:
        # An empty name is no folder, though Path("") is the current one.
        if not isinstance(model, str) or not model or not (model in OFFLINE_MODELS or _HUB_ID.match(model)
                                                           or Path(model).expanduser().is_dir()):
            raise ValueError(f"{name}: {model!r} is neither an offline model ({', '.join(OFFLINE_MODELS)}), "
                             "a model folder, nor a Hugging Face Hub id.")


def check_quickstart_parameters(params: dict) -> None:
    """Refuse, in one sentence, parameters of notebook 00 its run would fail on (it has no study module to hold them).

    Parameters
    ----------
    params : dict
        Every parameter of the notebook: the defaults of its parameters cell completed by the run's.
    """
    check_models(params, "models")
    check_choices(params, "storage_dtype", ("float16", "float32"))
    check_integers(params, ["n_sentences", "random_state"])
    check_integers(params, ["n_tokens"], minimum=2)  # the baseline is a cosine between two tokens at least


# A -p VALUE is a scalar, list or mapping a person types: it is bounded before YAML builds it, so that none can
# expand (an alias repeated, or one referring to itself) or nest past what YAML's reader recurses through.
LONGEST_OVERRIDE = 10_000


def read_override(name: str, text: str):
    """The value of ``-p NAME TEXT``: ``text`` read as YAML (``0``, ``[minilm, mpnet]``, ``true``), refused in one
    sentence if it is longer than :data:`LONGEST_OVERRIDE` characters, uses an anchor or alias (``&a``, ``*a``),
    nests deeper than :data:`DEEPEST_NESTING` or is not YAML. What it holds is checked with the other parameters
    (:func:`check_parameters`), before the variant's folder is named from it."""
    if len(text) > LONGEST_OVERRIDE:
        raise ValueError(f"The value of -p {name} has {len(text):,} characters, more than the {LONGEST_OVERRIDE:,} "
                         "a parameter may have.")
    try:
        depth = 0
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                raise ValueError(f"The value of -p {name} uses a YAML anchor or alias (&{event.anchor} or "
                                 f"*{event.anchor}); write the value out in full.")
            depth += isinstance(event, yaml.CollectionStartEvent) - isinstance(event, yaml.CollectionEndEvent)
            if depth > DEEPEST_NESTING:
                raise ValueError(f"The value of -p {name} nests lists or mappings deeper than {DEEPEST_NESTING} "
                                 "levels.")
        return yaml.safe_load(text)
    except yaml.YAMLError:
        raise ValueError(f"The value of -p {name} is not valid YAML: {text!r}.") from None


def parse_overrides(pairs: list[list[str]] | None) -> dict:
    """``-p NAME VALUE`` pairs as parameters, each VALUE read by :func:`read_override`."""
    return {name: read_override(name, text) for name, text in pairs or []}


def parameters(notebook: str, profile: str, overrides: dict | None = None, *, output: Path | None = None) -> dict:
    """Papermill parameters of one run: the profile's YAML plus ``profile`` and ``output_dir``, then ``overrides``.

    The parameters are checked (:func:`check_parameters`); a bad one raises ValueError in one sentence.
    The quick profile injects nothing, so its run is exactly the notebook's defaults. With
    ``overrides`` the run is a variant: ``output_dir`` is its own folder under ``build/variants/``
    and ``profile`` reads e.g. ``quick with corpora = ['wikitext2']``. ``output`` sends the outputs
    elsewhere than the profile's folder (:func:`check_figures` reruns the full profile into ``build/``).
    """
    if profile not in PROFILES:
        raise ValueError(f"Unknown profile '{profile}'; choose one of {', '.join(PROFILES)}.")
    params = {}
    if profile != "quick":
        path = PARAMS_DIR / notebook / f"{profile}.yaml"
        if not path.exists():
            raise FileNotFoundError(f"Notebook {notebook} has no {profile} parameters: {path} is missing.")
        params = yaml.safe_load(path.read_text()) or {}
        # Relative to the kernel's folder (notebooks/): the executed full run kept in figures/ names no machine's path.
        params.update(profile=profile, output_dir=os.path.relpath(output_dir(notebook, profile), NOTEBOOK_DIR))
    if overrides:
        unknown = sorted(set(overrides) - set(declared_parameters(notebook)) | set(overrides) & {"profile", "output_dir"})
        if unknown:
            raise ValueError(f"Notebook {notebook} has no parameter {', '.join(unknown)} to override "
                             "(profile and output_dir are set by the runner).")
        params.update(overrides)
    if params:
        check_parameters(notebook, params)  # before a variant's folder is named from them
    if overrides:
        described = ", ".join(f"{name} = {value!r}" for name, value in overrides.items())
        params.update(profile=f"{profile} with {described}",
                      output_dir=str(variant_dir(notebook, profile, overrides) / "figures"))
    if output is not None:
        params.update(profile=profile, output_dir=str(output))
    return params


@dataclass(frozen=True)
class RunResult:
    notebook: str
    ok: bool
    seconds: float
    executed: Path
    error: str = ""


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
    folder = folder or (variant_dir(notebook, profile, overrides) if overrides else BUILD_DIR / profile)
    executed = folder / f"{notebook}.ipynb"
    executed.parent.mkdir(parents=True, exist_ok=True)
    progress = CellProgress(notebook) if os.environ.get("ISOLIB_PROGRESS") != "0" else None
    hooks = ({"on_notebook_start": progress.on_notebook_start, "on_cell_start": progress.on_cell_start}
             if progress else {})
    start = time.perf_counter()
    try:
        source = without_quick_run_note(jupytext.read(NOTEBOOK_DIR / f"{notebook}.py"))
        params = parameters(notebook, profile, overrides, output=output)
        with _kernel_environment():
            papermill.execute_notebook(source, str(executed), parameters=params or None, cwd=str(NOTEBOOK_DIR),
                                       kernel_name=kernel, progress_bar=False, log_output=False,
                                       config=_kernel_manager_config(), **hooks)
    except Exception as error:  # a failing notebook is reported, the others still run
        return RunResult(notebook, False, time.perf_counter() - start, executed, _first_line(error))
    finally:
        if progress:
            progress.close()
    if store:
        store_reference(executed, NOTEBOOK_DIR / f"{notebook}.ipynb")
    if keeps_full_run:
        store_full_run(executed, FIGURES_DIR / notebook / f"{notebook}.ipynb")
    return RunResult(notebook, True, time.perf_counter() - start, executed)


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


class CellProgress:
    """Papermill hooks printing, on the runner's stderr, the code cell a notebook runs and the time it has taken.

    The hooks run in the runner's process, so nothing of it reaches the executed notebook. On a
    terminal the line is rewritten in place; elsewhere (a log file, CI) each cell gets a line.
    """

    def __init__(self, notebook: str, stream=None):
        self.notebook = notebook
        self.stream = stream or sys.stderr
        self.in_place = self.stream.isatty()
        self.start = time.perf_counter()
        self.code_cells: list[int] = []

    def on_notebook_start(self, notebook, **_) -> None:
        self.code_cells = [index for index, cell in enumerate(notebook.cells) if cell.cell_type == "code"]

    def on_cell_start(self, cell, cell_index: int, **_) -> None:
        if cell_index not in self.code_cells:
            return
        first_line = next((line.strip() for line in cell.source.splitlines() if line.strip()), "")
        line = (f"{self.notebook}: cell {self.code_cells.index(cell_index) + 1} of {len(self.code_cells)}, "
                f"{_duration(time.perf_counter() - self.start)}: {first_line}")
        if self.in_place:
            width = shutil.get_terminal_size().columns - 1
            self.stream.write("\r\x1b[K" + line[:width])  # carriage return, then erase the previous line
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        """Erase the in-place line, so that the notebook's result line takes its place."""
        if self.in_place:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


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
    if (FIGURES_DIR / notebook / "RESULTS.md").exists():
        links += f" and [its RESULTS.md]({full}/RESULTS.md)"
    return (f"> **This is the quick run** (`make quick`): the defaults of the parameters cell, with fewer models "
            f"and subsets of the data, so its numbers and verdicts can differ from the full run's (`make figures`: "
            f"all data, every offline model): see {links}.")


def without_quick_run_note(nb):
    """``nb`` without its generated quick-run note: the note is written on storing, never executed or repeated."""
    nb.cells = [cell for cell in nb.cells if QUICK_RUN_NOTE_TAG not in cell.metadata.get("tags", [])]
    return nb


def _cleaned(executed: Path):
    """An executed notebook without run-specific metadata (durations, timestamps), declaring :data:`PROJECT_KERNEL`.

    Cell ids are ``cell-<n>``: a rerun changes only what the run changed.
    """
    import nbformat

    nb = without_quick_run_note(nbformat.read(executed, as_version=4))
    nb.metadata.pop("papermill", None)
    nb.metadata["kernelspec"] = dict(PROJECT_KERNEL)
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
    import nbformat

    import jupytext

    nb = _cleaned(executed)
    # The pairing lives in jupytext.toml; the copy of it in the notebook's metadata is what `jupytext --sync`
    # (make sync) would otherwise delete on a fresh checkout.
    nb.metadata.pop("jupytext", None)
    note = nbformat.v4.new_markdown_cell(quick_run_note(target.stem), id=QUICK_RUN_NOTE_TAG,
                                         metadata={"tags": [QUICK_RUN_NOTE_TAG]})
    nb.cells.insert(0, note)
    nbformat.write(nb, target)
    jupytext.write(jupytext.read(target), target.with_suffix(".py"), fmt="py:percent")


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


def reproduce(profile: str, only: list[str] | None = None, *, store: bool = False,
              overrides: dict | None = None) -> list[RunResult]:
    """Run every notebook (or those in ``only``), printing one line per notebook.

    ``overrides`` (a variant) need exactly one notebook in ``only``: parameters differ between notebooks.
    """
    names = notebook_names()
    if only:
        unknown = sorted(set(only) - set(names))
        if unknown:
            raise ValueError(f"Unknown notebook {', '.join(unknown)}; notebooks are: {', '.join(names)}.")
        names = [n for n in names if n in only]
    if overrides and len(names) != 1:
        raise ValueError("Parameter overrides (-p) apply to one notebook; name it with --only.")
    for name in names:
        parameters(name, profile, overrides)  # a bad parameter fails here, in one sentence, before any kernel starts
    results = []
    for name in names:
        result = run_notebook(name, profile, store=store, overrides=overrides)
        status = "ok    " if result.ok else "FAILED"
        shown = result.executed.relative_to(REPO_ROOT) if result.executed.is_relative_to(REPO_ROOT) else result.executed
        detail = f"  {result.error} (see {shown})" if not result.ok else ""
        print(f"{status} {name:<36} {result.seconds:7.1f} s{detail}", flush=True)
        results.append(result)
    if profile == "full" and not overrides:
        from isolib.findings import write_overview

        print(f"wrote {write_overview(FIGURES_DIR, study_notebooks()).relative_to(REPO_ROOT)}", flush=True)
    return results


def compare_outputs(committed: Path, fresh: Path, *, rtol: float = 1e-4, atol: float = 1e-6) -> list[str]:
    """The differences between two output folders of a notebook, one sentence each (empty: they agree).

    Every CSV table of ``committed`` must exist in ``fresh`` with the same columns and rows: text
    cells equal, numbers within ``|a - b| <= atol + rtol * |b|`` (NaN equals NaN), or within the
    tolerance the table declares for a column from its own variability when that is larger
    (:func:`isolib.plotting.save_table`: three standard deviations of a row's replicates, half its
    interval, or an absolute number; the smaller of what the committed and the new table allow, by
    :func:`isolib.plotting.allowed_movement`, so that no value widens its own tolerance); a column
    declared None (a measured time) is not compared. The statuses of the record (``results.json``) must be
    equal, finding by finding: a number may move within its tolerance, a verdict never; a record missing from
    ``committed`` where the new run wrote one is a difference. Figures are not compared (their pixels
    change with library versions; their numbers are in the tables).
    """
    import numpy as np
    import pandas as pd

    from isolib.findings import RECORD_FILE, read_record
    from isolib.plotting import allowed_movement, table_tolerances

    declared = {**table_tolerances(fresh), **table_tolerances(committed)}
    differences = []
    tables = sorted(committed.glob("*.csv"))
    if not tables:
        differences.append(f"{committed} holds no CSV table to compare.")
    for path in tables:
        other = fresh / path.name
        if not other.exists():
            differences.append(f"{path.name}: missing from the new run.")
            continue
        old, new = pd.read_csv(path), pd.read_csv(other)
        if list(old.columns) != list(new.columns) or len(old) != len(new):
            differences.append(f"{path.name}: columns or rows differ ({old.shape} {list(old.columns)} committed, "
                               f"{new.shape} {list(new.columns)} now).")
            continue
        tolerances = declared.get(path.stem, {})
        for column in old.columns:
            a, b = old[column], new[column]
            if pd.api.types.is_numeric_dtype(a) and pd.api.types.is_numeric_dtype(b):
                if column in tolerances and tolerances[column] is None:  # a measured time: not compared
                    continue
                close = np.isclose(b.to_numpy(float), a.to_numpy(float), rtol=rtol, atol=atol, equal_nan=True)
                if column in tolerances:
                    close |= np.abs(b.to_numpy(float) - a.to_numpy(float)) <= allowed_movement(
                        old, column, tolerances[column], new)
            else:  # missing in both is equal (pandas' string dtype keeps NaN through astype(str), and NaN != NaN)
                close = ((a.isna() & b.isna()) | (a.astype(str) == b.astype(str)).fillna(False)).to_numpy(bool)
            if not close.all():
                row = int(np.flatnonzero(~close)[0])
                differences.append(f"{path.name}: column {column} differs in {int((~close).sum())} row(s), first "
                                   f"row {row}: {a.iloc[row]!r} committed, {b.iloc[row]!r} now.")
    if not (committed / RECORD_FILE).exists() and (fresh / RECORD_FILE).exists():
        differences.append(f"{RECORD_FILE}: missing from {committed}, written by the new run.")
    elif (committed / RECORD_FILE).exists():
        old_statuses = read_record(committed).every_status
        new_statuses = read_record(fresh).every_status if (fresh / RECORD_FILE).exists() else []
        if old_statuses != new_statuses:
            changed = [f"{claim} ({model}): {a} -> {b}" for (claim, model, a), (_, _, b) in zip(old_statuses, new_statuses)
                       if a != b]
            differences.append(f"{RECORD_FILE}: statuses differ ({len(old_statuses)} findings committed, "
                               f"{len(new_statuses)} now; " + ("; ".join(changed) or "a finding added or removed")
                               + ").")
    return differences


def check_figures(notebook: str, *, rtol: float = 1e-4, atol: float = 1e-6) -> list[str]:
    """Rerun ``notebook``'s full profile into ``build/check/`` and compare with its committed ``figures/`` folder.

    Returns the differences (:func:`compare_outputs`); a failing run is one difference. Every committed
    input is checked first (:func:`isolib.committed.validate_committed`): a damaged one is refused in one
    sentence before the rerun, which takes minutes to hours.
    """
    from isolib.committed import validate_committed

    if notebook not in notebook_names():
        raise ValueError(f"Unknown notebook {notebook}; notebooks are: {', '.join(notebook_names())}.")
    committed = FIGURES_DIR / notebook
    validate_committed(notebook, committed)
    folder = BUILD_DIR / "check"
    result = run_notebook(notebook, "full", folder=folder)
    if not result.ok:
        return [f"the full run of {notebook} failed: {result.error} (see {result.executed})."]
    return compare_outputs(committed, folder / "figures" / notebook, rtol=rtol, atol=atol)


# The steps of nbgrader's `generate_assignment` (nbgrader.converters.GenerateAssignment.preprocessors), in its
# order, less SaveCells, which records the cells in nbgrader's database; tests/test_runner.py checks the list.
RELEASE_STEPS = ("IncludeHeaderFooter", "InstantiateTests", "LockCells", "ClearSolutions", "ClearOutput",
                 "CheckCellMetadata", "ComputeChecksums", "ClearHiddenTests", "ClearMarkScheme", "ComputeChecksums",
                 "CheckCellMetadata")
# An nbval marker: a comment line of its own (the form nbval reads), or a trailing comment.
_NBVAL_MARKER = re.compile(r"^[ \t]*#+[ \t]*NBVAL_\w+[ \t]*(?:\n|$)|[ \t]+#+[ \t]*NBVAL_\w+[ \t]*$", re.M)
_SOLUTION_CELL = re.compile(r'^# %% .*nbgrader=\{[^\n]*"solution": true', re.M)


def exercise_notebooks() -> list[str]:
    """The notebooks with exercises: those with an nbgrader solution cell in their ``.py``, in order."""
    return [name for name in notebook_names() if _SOLUTION_CELL.search((NOTEBOOK_DIR / f"{name}.py").read_text())]


def student_output_dir(notebook: str) -> str:
    """The ``output_dir`` of a student copy: relative to the copy's own folder, where its kernel starts."""
    return f"outputs/{notebook}"


def for_students(nb, notebook: str):
    """``nb`` without its quick-run note and nbval markers, its ``output_dir`` set to :func:`student_output_dir`.

    The note's links and the markers are for the committed quick run; nbgrader's cells are left as they are.
    """
    nb = without_quick_run_note(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = _NBVAL_MARKER.sub("", cell.source)
        if "parameters" in cell.metadata.get("tags", []):
            cell.source, found = re.subn(r'^(output_dir: str = )"[^"\n]*"', rf'\1"{student_output_dir(notebook)}"',
                                         cell.source, count=1, flags=re.M)
            if not found:
                raise ValueError(f"{notebook}: its parameters cell declares no output_dir: str = \"...\".")
    return nb


def student_copy(notebook: str, folder: Path | None = None) -> Path:
    """Release a study notebook to students, as nbgrader's ``generate_assignment`` would.

    The committed notebook goes through nbgrader's own preprocessors (:data:`RELEASE_STEPS`): each solution
    region becomes nbgrader's ``# YOUR CODE HERE`` stub, hidden tests go, the autograded test cells are
    locked and checksummed, outputs are cleared and the nbgrader metadata is validated. Before that the
    quick-run note and the nbval markers go, and ``output_dir`` is set to :func:`student_output_dir`, so
    the copy writes into a folder beside itself. The copy goes to ``folder/<notebook>.ipynb`` (default
    ``build/student/``), never into ``notebooks/``, and runs from there as it is (its data and cache
    paths do not depend on where it lies).

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

    if notebook not in notebook_names():
        raise ValueError(f"Unknown notebook {notebook}; notebooks are: {', '.join(notebook_names())}.")
    nb = nbformat.read(NOTEBOOK_DIR / f"{notebook}.ipynb", as_version=4)
    if not any(cell.metadata.get("nbgrader", {}).get("solution") for cell in nb.cells):
        raise ValueError(f"{notebook} has no exercise: no nbgrader solution cell.")
    nb = for_students(nb, notebook)
    resources: dict = {}
    for step in RELEASE_STEPS:
        nb, resources = getattr(preprocessors, step)().preprocess(nb, resources)
    target = (folder or BUILD_DIR / "student") / f"{notebook}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)
    return target


def student_copies(notebook: str = "all", folder: Path | None = None) -> list[Path]:
    """:func:`student_copy` of one notebook, or of every one of :func:`exercise_notebooks` for ``"all"``."""
    return [student_copy(name, folder) for name in (exercise_notebooks() if notebook == "all" else [notebook])]
