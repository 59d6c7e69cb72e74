"""Time, peak memory and cache of each notebook's full run: what `make figures` costs, notebook by notebook.

    python benchmarks/bench_figures.py 03_rajaee_cluster_isotropy                  # the project's cache as it is
    python benchmarks/bench_figures.py --cache-dir build/bench-cache 00_quickstart  # a cache folder of its own
    python benchmarks/bench_figures.py --report                                   # rewrite figures.md

Each notebook runs exactly as `make figures` runs it (``python -m isolib reproduce --profile full --only
NB``, writing ``figures/NB/``) in a child process, and is measured from outside:

* wall time, and CPU time of the child and everything it waited for (the kernel);
* peak memory: the largest resident set of the child or any of its descendants (``os.wait4``; the
  kernel is the largest);
* cache: bytes under the cache root (``ISOLIB_CACHE_DIR``) before and after, so the growth is what
  this notebook stored, and the largest size seen while it ran (sampled every ``CACHE_SAMPLE_SECONDS``):
  the disk a run needs, above what it leaves when it deletes embeddings it no longer reads.

The whole collection from an empty cache: ``--cache-dir`` with a new folder, the notebooks in the order
of ``make figures`` (later ones reuse what earlier ones stored, as in ``make figures``); it takes more
than one session on two cores, so a series is continued by passing the same folder again. Each run is
recorded in ``benchmarks/results/figures.json`` (replacing an earlier record of the same notebook, profile
and cache folder, started from an empty cache or not) with the date, the commit, the load average at its start and its exit status;
``figures.md`` is the table of the records, with a cache folder's totals once every notebook has run in it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
GIB = 2**30
CACHE_SAMPLE_SECONDS = 10


def folder_bytes(folder: Path) -> int:
    """Bytes of every file under ``folder`` (0 if it does not exist)."""
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file()) if folder.exists() else 0


def measure(notebook: str, *, cache_dir: Path | None, profile: str = "full") -> dict:
    """Run one notebook's profile (``make figures``: full) in a child process and measure it."""
    sys.path.insert(0, str(ROOT))
    from isolib.integrity import cache_root

    environment = dict(os.environ)
    if cache_dir is not None:
        cache_dir.mkdir(parents=True, exist_ok=True)
        environment["ISOLIB_CACHE_DIR"] = str(cache_dir.resolve())
    root = Path(environment.get("ISOLIB_CACHE_DIR", cache_root()))
    before = folder_bytes(root)
    load = os.getloadavg()
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "isolib", "reproduce", "--profile", profile, "--only", notebook],
                             cwd=ROOT, env=environment)
    finished = threading.Event()
    largest = [before]

    def sample_cache() -> None:
        while not finished.wait(CACHE_SAMPLE_SECONDS):
            try:
                largest[0] = max(largest[0], folder_bytes(root))
            except FileNotFoundError:  # a file deleted while the folder was walked: the next sample counts it
                pass

    sampler = threading.Thread(target=sample_cache, daemon=True)
    sampler.start()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    finished.set()
    sampler.join()
    after = folder_bytes(root)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    return {
        "notebook": notebook,
        "profile": profile,
        "cache": str(root),
        "exit_status": os.waitstatus_to_exitcode(status),
        "wall_minutes": wall / 60,
        "cpu_minutes": (usage.ru_utime + usage.ru_stime) / 60,
        "peak_memory_gib": usage.ru_maxrss * 1024 / GIB,  # Linux reports kilobytes
        "cache_before_gib": before / GIB,
        "cache_added_gib": (after - before) / GIB,
        "cache_peak_gib": max(largest[0], after) / GIB,
        "date": datetime.datetime.now().isoformat(timespec="minutes"),
        "commit": commit.strip(),
        "usable_cores": len(os.sched_getaffinity(0)),
        "load_average_at_start": load,
    }


def _key(record: dict) -> tuple:
    return record["notebook"], record["profile"], record["cache"], record["cache_before_gib"] > 0


def load_records() -> list[dict]:
    path = RESULTS / "figures.json"
    return json.loads(path.read_text()) if path.exists() else []


def save(records: list[dict]) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "figures.json").write_text(json.dumps(records, indent=2) + "\n")
    (RESULTS / "figures.md").write_text(markdown(records))


def markdown(records: list[dict]) -> str:
    sys.path.insert(0, str(ROOT))
    from isolib.project import notebook_names

    lines = ["# The full profile of each notebook: time, memory, cache", "",
             "Measured by `benchmarks/bench_figures.py`, one notebook per run (the machine's load average at the "
             "start of each is in `figures.json`), grouped by cache folder; `cache before` says how warm it was.", "",
             "| cache folder | notebook | cache before (GiB) | wall (min) | CPU (min) | peak memory (GiB) | "
             "cache added (GiB) | cache at its largest (GiB) | exit | date | commit |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for record in sorted(records, key=lambda r: (r["profile"], r["cache"], r["notebook"])):
        empty = ", from an empty cache" if record["cache_before_gib"] == 0 else ""
        lines.append(f"| {record['cache']} | {record['notebook']} ({record['profile']}{empty}) | {record['cache_before_gib']:.1f} | "
                     f"{record['wall_minutes']:.1f} | {record['cpu_minutes']:.1f} | {record['peak_memory_gib']:.1f} | "
                     f"{record['cache_added_gib']:.2f} | {_gib(record.get('cache_peak_gib'))} | {record['exit_status']} | "
                     f"{record['date']} | {record['commit']} |")
    for cache in dict.fromkeys(r["cache"] for r in records if r["profile"] == "full"):
        chosen = {r["notebook"]: r for r in records
                  if r["cache"] == cache and r["profile"] == "full" and r["exit_status"] == 0}
        missing = [name for name in notebook_names() if name not in chosen]
        if chosen:
            lines += ["", f"**Whole collection, full profile, in `{cache}`**: " + (
                f"{sum(r['wall_minutes'] for r in chosen.values()) / 60:.1f} h wall, peak memory "
                f"{max(r['peak_memory_gib'] for r in chosen.values()):.1f} GiB, "
                f"{sum(r['cache_added_gib'] for r in chosen.values()):.1f} GiB of cache added"
                + (f", the cache at its largest {max(r['cache_peak_gib'] for r in chosen.values()):.1f} GiB."
                   if all("cache_peak_gib" in r for r in chosen.values()) else ".")
                if not missing else f"not yet measured for {', '.join(missing)}.")]
    return "\n".join(lines) + "\n"


def _gib(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"  # not sampled by runs recorded before the column existed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", help="notebook names, e.g. 03_rajaee_cluster_isotropy")
    parser.add_argument("--cache-dir", type=Path, help="cache folder of this series (default: the project's cache)")
    parser.add_argument("--profile", default="full", help="profile to run (make figures: full; quick for a smoke test)")
    parser.add_argument("--report", action="store_true", help="only rewrite figures.md from figures.json")
    arguments = parser.parse_args()
    records = load_records()
    for notebook in [] if arguments.report else arguments.notebooks:
        record = measure(notebook, cache_dir=arguments.cache_dir, profile=arguments.profile)
        # A run into an empty cache folder (cold) and the next into the same folder (warm) are both kept.
        records = [r for r in records if _key(r) != _key(record)] + [record]
        save(records)  # after each notebook: a long series interrupted later keeps what it measured
        print(json.dumps(record, indent=2))
    save(records)
    print(markdown(records))


if __name__ == "__main__":
    main()
