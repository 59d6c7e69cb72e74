"""An isotropy card at the default setting: time and peak memory, beside notebook 05's quick run on the same model.

    python benchmarks/bench_card.py                     # smollm2 (135M parameters): the card, then notebook 05
    python benchmarks/bench_card.py --card-only         # the card alone
    python benchmarks/bench_card.py --model minilm --quick   # a smoke test, written under build/benchmarks/

The issue's target: a 135M-parameter model's card in at most 10 minutes on two cores at the default token budget,
reusing cached embeddings. So run the card once first (``python -m isolib card smollm2``: its windows and STS-B
dev sentences are then cached); this script then runs, each in a child process as a user runs it, with the
project's cache as it is:

* the card: ``python -m isolib card MODEL --out build/benchmarks/card/MODEL``, every setting at its default
  (``isolib.card.settings``: 16 windows of 512 tokens of PTB, 3 samples of 1,000 word tokens per layer and view,
  STS-B dev's 1,500 pairs, 1,000 resamples per interval, one worker process per core);
* notebook 05's quick run on the same model: ``python -m isolib reproduce --profile quick --only
  05_every_measure -p models [MODEL]`` (its quick defaults: the same windows, 3 samples of 2,000 tokens, each
  measured under its 13 changes with every measure), which reads the same cached windows.

Each is measured from outside: wall time, CPU time of the child and everything it waited for, and peak memory
(the largest resident set of the child or of any of its descendants: worker processes, the notebook's kernel);
the bytes the cache gained say whether the embeddings were cached. The card's own steps (read, measures, first
position, STS) come from its evidence. Results: ``benchmarks/results/card.json`` and ``card.md`` (``--quick``:
``build/benchmarks/``), with the date, the commit and the load average at the start and the end of each run.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from _results import QUICK_RESULTS, machine, save_results

ROOT = Path(__file__).resolve().parents[1]
GIB = 2**30
TARGET_MINUTES = 10


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file()) if folder.exists() else 0


def run_measured(argv: list[str], cache: Path) -> dict:
    """Run ``python -m isolib ARGV`` in a child process: wall, CPU, peak memory, cache growth, exit status."""
    before, load = folder_bytes(cache), os.getloadavg()
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "isolib", *argv], cwd=ROOT)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    return {"command": "python -m isolib " + " ".join(argv), "exit_status": os.waitstatus_to_exitcode(status),
            "wall_minutes": wall / 60, "cpu_minutes": (usage.ru_utime + usage.ru_stime) / 60,
            "peak_memory_gib": usage.ru_maxrss * 1024 / GIB, "cache_added_gib": (folder_bytes(cache) - before) / GIB,
            "load_average_at_start": load, "load_average_at_end": os.getloadavg()}


def card_steps(folder: Path) -> dict:
    """The seconds of each step of a card, as its evidence records them."""
    sys.path.insert(0, str(ROOT))
    from isolib.evidence import load_evidence

    return load_evidence(folder)["run"]["seconds"]


def markdown(result: dict) -> str:
    lines = ["# An isotropy card at the default setting, beside notebook 05's quick run", "",
             f"Model **{result['model']}**, on {result['machine']['usable_cores']} cores, the project's cache as it was "
             f"(warm: its embeddings extracted by an earlier run). Target for the card: at most {TARGET_MINUTES} min. "
             "Written by `benchmarks/bench_card.py` (what each run is: its docstring); "
             f"{result['date']}, commit {result['commit']}.", "",
             "| run | wall (min) | CPU (min) | peak memory (GiB) | cache added (GiB) | load at start / end | exit |",
             "|---|---:|---:|---:|---:|---|---:|"]
    for name, run in result["runs"].items():
        lines.append(f"| {name}: `{run['command']}` | {run['wall_minutes']:.1f} | {run['cpu_minutes']:.1f} | "
                     f"{run['peak_memory_gib']:.1f} | {run['cache_added_gib']:.2f} | "
                     f"{run['load_average_at_start'][0]:.1f} / {run['load_average_at_end'][0]:.1f} | "
                     f"{run['exit_status']} |")
    if "steps" in result:
        lines += ["", "The card's steps (seconds): " + ", ".join(f"{step} {seconds:.0f}" for step, seconds
                                                                 in result["steps"].items()) + "."]
    for note in result.get("notes", []):
        lines += ["", note]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2", help="the model (default smollm2, 135M parameters)")
    parser.add_argument("--card-only", action="store_true", help="time the card alone, not notebook 05")
    parser.add_argument("--quick", action="store_true", help="write the results under build/benchmarks/")
    parser.add_argument("--note", action="append", default=[], help="a sentence for the report (repeatable)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from isolib.integrity import cache_root

    cache = Path(os.environ.get("ISOLIB_CACHE_DIR", cache_root()))
    out = (QUICK_RESULTS if args.quick else ROOT / "build" / "benchmarks") / "card" / args.model
    runs = {"card": run_measured(["card", args.model, "--out", str(out)], cache)}
    result = {"model": args.model, "machine": machine(), "target_minutes": TARGET_MINUTES, "runs": runs,
              "date": datetime.datetime.now().isoformat(timespec="minutes"), "notes": args.note,
              "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                       text=True).stdout.strip()}
    if runs["card"]["exit_status"] == 0:
        result["steps"] = card_steps(out)
    if not args.card_only:
        runs["notebook 05, quick"] = run_measured(["reproduce", "--profile", "quick", "--only", "05_every_measure",
                                                   "-p", "models", f"[{args.model}]"], cache)
    save_results("card", result, markdown(result), quick=args.quick)


if __name__ == "__main__":
    main()
