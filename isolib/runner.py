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
the reference nbval compares against. After a ``full`` run, :func:`isolib.findings.write_overview`
regenerates ``figures/README.md`` from the committed ``RESULTS.md`` files.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from isolib.findings import write_overview

REPO_ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = REPO_ROOT / "notebooks"
PARAMS_DIR = NOTEBOOK_DIR / "params"
BUILD_DIR = REPO_ROOT / "build"
FIGURES_DIR = REPO_ROOT / "figures"
PROFILES = ("quick", "full", "paper")


def notebook_names() -> list[str]:
    """Stems of the study notebooks (``notebooks/NN_*.py``), in order."""
    return sorted(p.stem for p in NOTEBOOK_DIR.glob("[0-9][0-9]_*.py"))


def output_dir(notebook: str, profile: str) -> Path:
    """Where a run writes its figures and tables: ``figures/`` for full, ``build/`` otherwise."""
    if profile == "full":
        return FIGURES_DIR / notebook
    return BUILD_DIR / profile / "figures" / notebook


def parameters(notebook: str, profile: str) -> dict:
    """Papermill parameters of one run: the profile's YAML plus ``profile`` and ``output_dir``.

    The quick profile injects nothing, so its run is exactly the notebook's defaults.
    """
    if profile not in PROFILES:
        raise ValueError(f"Unknown profile '{profile}'; choose one of {', '.join(PROFILES)}.")
    if profile == "quick":
        return {}
    path = PARAMS_DIR / notebook / f"{profile}.yaml"
    if not path.exists():
        raise FileNotFoundError(f"Notebook {notebook} has no {profile} parameters: {path} is missing.")
    params = yaml.safe_load(path.read_text()) or {}
    params.update(profile=profile, output_dir=str(output_dir(notebook, profile)))
    return params


@dataclass(frozen=True)
class RunResult:
    notebook: str
    ok: bool
    seconds: float
    executed: Path
    error: str = ""


def run_notebook(notebook: str, profile: str, *, store: bool = False, kernel: str = "python3") -> RunResult:
    """Execute one notebook under one profile; never raises for a failing notebook."""
    import jupytext
    import papermill

    if store and profile != "quick":
        raise ValueError("Only the quick run is stored as the committed notebook (nbval's reference).")
    executed = BUILD_DIR / profile / f"{notebook}.ipynb"
    executed.parent.mkdir(parents=True, exist_ok=True)
    # Progress bars and interactive niceties must stay out of stored outputs.
    os.environ["ISOLIB_PROGRESS"] = "0"
    # The inline backend stores each shown figure as PNG in the executed notebook (Agg would show
    # nothing, leaving every "Figure" section empty on GitHub); it needs no display either.
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    start = time.perf_counter()
    try:
        source = jupytext.read(NOTEBOOK_DIR / f"{notebook}.py")
        params = parameters(notebook, profile)
        papermill.execute_notebook(source, str(executed), parameters=params or None, cwd=str(NOTEBOOK_DIR),
                                   kernel_name=kernel, progress_bar=False, log_output=False)
    except Exception as error:  # a failing notebook is reported, the others still run
        return RunResult(notebook, False, time.perf_counter() - start, executed, _first_line(error))
    if store:
        store_reference(executed, NOTEBOOK_DIR / f"{notebook}.ipynb")
    return RunResult(notebook, True, time.perf_counter() - start, executed)


def store_reference(executed: Path, target: Path) -> None:
    """Copy an executed notebook to ``target`` without run-specific metadata (durations, timestamps)."""
    import nbformat

    import jupytext

    nb = nbformat.read(executed, as_version=4)
    nb.metadata.pop("papermill", None)
    for number, cell in enumerate(nb.cells):
        cell.id = f"cell-{number}"  # stable ids: a rerun changes only what the run changed
        for key in ("papermill", "execution"):
            cell.metadata.pop(key, None)
        if not cell.metadata.get("tags", True):  # papermill adds empty tag lists
            del cell.metadata["tags"]
    nbformat.write(nb, target)
    # Rewrite the paired script from the stored notebook: only its jupytext header can change.
    jupytext.write(jupytext.read(target), target.with_suffix(".py"), fmt="py:percent")


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


def reproduce(profile: str, only: list[str] | None = None, *, store: bool = False) -> list[RunResult]:
    """Run every notebook (or those in ``only``), printing one line per notebook."""
    names = notebook_names()
    if only:
        unknown = sorted(set(only) - set(names))
        if unknown:
            raise ValueError(f"Unknown notebook {', '.join(unknown)}; notebooks are: {', '.join(names)}.")
        names = [n for n in names if n in only]
    results = []
    for name in names:
        result = run_notebook(name, profile, store=store)
        status = "ok    " if result.ok else "FAILED"
        detail = f"  {result.error} (see {result.executed.relative_to(REPO_ROOT)})" if not result.ok else ""
        print(f"{status} {name:<36} {result.seconds:7.1f} s{detail}", flush=True)
        results.append(result)
    if profile == "full":
        print(f"wrote {write_overview(FIGURES_DIR).relative_to(REPO_ROOT)}", flush=True)
    return results
