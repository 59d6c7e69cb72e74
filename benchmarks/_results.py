"""Where a benchmark writes its results: ``results/`` for a recorded run, ``build/benchmarks/`` for ``--quick``."""

from __future__ import annotations

import json
import os
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
QUICK_RESULTS = Path(__file__).resolve().parents[1] / "build" / "benchmarks"


def machine() -> dict:
    """The cores this process may use and the load average now (other jobs slow a benchmark)."""
    return {"usable_cores": len(os.sched_getaffinity(0)), "load_average_at_start": os.getloadavg()}


def save_results(name: str, result: dict, text: str, *, quick: bool) -> None:
    """Write ``<name>.json`` and ``<name>.md`` and print the Markdown."""
    folder = QUICK_RESULTS if quick else RESULTS
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    (folder / f"{name}.md").write_text(text)
    print(text)
