"""Re-judging a study from its stored evidence (``python -m isolib judge``) against computing it: seconds, not hours.

    python benchmarks/bench_judge.py            # every study: the stored quick run, and the full run where stored
    python benchmarks/bench_judge.py --quick    # one study's quick run: a smoke test

For each study and each stored run (``notebooks/quick_results/<nb>/``, and ``figures/<nb>/`` once a full run has
stored its evidence), ``python -m isolib judge <nb> --folder <a copy>`` runs in a child process, as a user runs it
(interpreter start included), ``ROUNDS`` times; the median is set beside the target of 60 s and beside the wall
time of the notebook run that stored the evidence (as its evidence records it: a run that found its embeddings
and stored steps in the cache, so far less than computing them from nothing, which docs/performance.md gives). Results go to ``benchmarks/results/judge.json`` and
``judge.md``; ``--quick`` writes under ``build/benchmarks/``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _results import machine, save_results

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from isolib.evidence import load_evidence  # noqa: E402
from isolib.project import FIGURES_DIR, QUICK_RESULTS_DIR, study_notebooks  # noqa: E402

ROUNDS = 3
TARGET_SECONDS = 60


def _run_minutes(folder: Path) -> float | None:
    minutes = load_evidence(folder).get("run", {}).get("wall_minutes")
    return None if minutes is None else float(minutes)


def judge_seconds(notebook: str, folder: Path) -> list[float]:
    times = []
    for _ in range(ROUNDS):
        with tempfile.TemporaryDirectory() as scratch:
            copy = Path(scratch) / notebook
            shutil.copytree(folder, copy)
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "isolib", "judge", notebook, "--folder", str(copy)], cwd=ROOT,
                           check=True, capture_output=True)
            times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one study's quick run: a smoke test")
    args = parser.parse_args()
    rows = []
    for notebook in study_notebooks()[:1] if args.quick else study_notebooks():
        for profile, folder in (("quick", QUICK_RESULTS_DIR / notebook), ("full", FIGURES_DIR / notebook)):
            if not (folder / "evidence").is_dir():
                continue
            seconds = judge_seconds(notebook, folder)
            rows.append({"notebook": notebook, "profile": profile, "judge_seconds": statistics.median(seconds),
                         "rounds": seconds, "run_minutes": _run_minutes(folder)})
    result = {"machine": machine(), "target_seconds": TARGET_SECONDS, "rows": rows}
    lines = ["# Re-judging a study from its stored evidence", "",
             f"`python -m isolib judge NB --folder <copy>` in a child process, median of {ROUNDS}, beside the wall time "
             "of the notebook run that stored the evidence (its embeddings and stored steps read from the cache; what "
             f"computing them from nothing costs is in docs/performance.md). Target: under {TARGET_SECONDS} s. Load average at start: "
             f"{result['machine']['load_average_at_start'][0]:.1f} on {result['machine']['usable_cores']} cores. "
             "Written by `benchmarks/bench_judge.py`.", "",
             "| notebook | evidence | judge (s) | the notebook run that stored it (min, its recorded wall time) |",
             "|---|---|---:|---:|"]
    for row in rows:
        minutes = "-" if row["run_minutes"] is None else f"{row['run_minutes']:.1f}"
        lines.append(f"| {row['notebook']} | {row['profile']} | {row['judge_seconds']:.1f} | {minutes} |")
    slow = [f"{row['notebook']} ({row['profile']})" for row in rows if row["judge_seconds"] > TARGET_SECONDS]
    if slow:
        lines += ["", f"Over the target: {', '.join(slow)}."]
    if not any(row["profile"] == "full" for row in rows):
        lines += ["", "No full run has stored its evidence yet: each study's next full run (`make figures`) does."]
    save_results("judge", result, "\n".join(lines) + "\n", quick=args.quick)


if __name__ == "__main__":
    main()
