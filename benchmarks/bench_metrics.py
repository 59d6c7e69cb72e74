"""Speed and memory of isolib.metrics against the reference implementations.

    python benchmarks/bench_metrics.py            # 10k x 384 and 50k x 768 (tens of minutes)
    python benchmarks/bench_metrics.py --quick    # small sizes, a smoke test (under a minute)

Compared at matched settings, on the same float32 Gaussian-mixture data:

* silhouette: ``isolib.metrics.silhouette`` vs ``sklearn.metrics.silhouette_score``;
* LID: ``isolib.metrics.lid_mle(k=100)`` vs ``skdim.id.MLE().fit(n_neighbors=100,
  comb="mean")``, whose value is rescaled by k / (k - 1) to Cai et al.'s normalisation;
  an extra isolib row estimates the same mean from 5,000 sampled query points, and a
  "floor" row times the float32 products of all pairs of points alone (``X @ X.T`` in
  row stripes on all cores, nothing selected): the work any exact brute-force k-NN
  must do, so ``scikit-dimension time / floor time`` bounds what such a search could gain
  (a symmetric search that computes each pair once halves the floor);
* IsoScore: ``isolib.metrics.isoscore`` vs ``IsoScore.IsoScore`` (pip ``isoscore`` 2.0.1).

Each measurement runs in its own subprocess, which loads the data from a ``.npy``
file, warms the implementation up on 1,000 rows, records its resident set size
(RSS) and resets the kernel's peak-RSS mark, calls the function (the best wall
time of a few repeats on the small size), and reports the peak RSS: the extra memory
of the call is ``peak - before``. A measurement that exceeds the timeout is recorded as
skipped, with the reason, rather than estimated. Results go to
``benchmarks/results/metrics.json`` and ``metrics.md``; with ``--quick``, to
``build/benchmarks/`` so that the recorded results stay untouched.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
# Quick runs never overwrite the recorded results: they go to the ignored build/.
QUICK_RESULTS = Path(__file__).resolve().parents[1] / "build" / "benchmarks"
LID_NEIGHBOURS = 100
LID_SAMPLED_QUERIES = 5000
WARM_UP_ROWS = 1000
FLOOR = "floor: float32 products of all pairs"
# Row stripes of the floor measurement: tall enough for the matrix product's peak.
FLOOR_STRIPE_ROWS = 2048
PROFILES = {
    # (n_samples, n_features, repeats, timeout in seconds per measurement)
    "full": [(10_000, 384, 3, 900), (50_000, 768, 1, 1800)],
    "quick": [(2_000, 64, 2, 120), (5_000, 128, 1, 120)],
}
MEASUREMENTS = [
    ("silhouette", "isolib"),
    ("silhouette", "scikit-learn"),
    ("lid", "isolib"),
    ("lid", "scikit-dimension"),
    ("lid (5,000 sampled queries)", "isolib"),
    ("lid", FLOOR),
    ("isoscore", "isolib"),
    ("isoscore", "IsoScore package"),
]


def gaussian_mixture(n_samples: int, n_features: int, n_clusters: int = 10, seed: int = 0):
    """Float32 points from ``n_clusters`` unit-variance Gaussians with spread-out means, and their labels."""
    generator = np.random.default_rng(seed)
    centres = generator.normal(size=(n_clusters, n_features)) * 3
    labels = generator.integers(n_clusters, size=n_samples)
    points = np.empty((n_samples, n_features), dtype=np.float32)
    for start in range(0, n_samples, 4096):
        rows = slice(start, min(start + 4096, n_samples))
        points[rows] = centres[labels[rows]] + generator.normal(size=(rows.stop - start, n_features))
    return points, labels


def measured_call(metric: str, implementation: str, points: np.ndarray, labels: np.ndarray):
    """A zero-argument function computing the metric with the implementation (imports done here)."""
    if implementation == "isolib":
        from isolib import metrics

        return {
            "silhouette": lambda: metrics.silhouette(points, labels),
            "lid": lambda: metrics.lid_mle(points, k=LID_NEIGHBOURS),
            "lid (5,000 sampled queries)": lambda: metrics.lid_mle(
                points, k=LID_NEIGHBOURS, queries=min(LID_SAMPLED_QUERIES, len(points)), random_state=0
            ),
            "isoscore": lambda: metrics.isoscore(points),
        }[metric]
    if implementation == "scikit-learn":
        from sklearn.metrics import silhouette_score

        return lambda: float(silhouette_score(points, labels))
    if implementation == "scikit-dimension":
        import skdim

        k = LID_NEIGHBOURS
        return lambda: skdim.id.MLE().fit(points, n_neighbors=k, comb="mean").dimension_ * k / (k - 1)
    if implementation == FLOOR:
        stripes = np.array_split(np.arange(len(points)), max(1, len(points) // FLOOR_STRIPE_ROWS))

        def all_products() -> float:
            for rows in stripes:
                points[rows] @ points.T  # computed and dropped: only its time counts
            return float("nan")

        return all_products
    if implementation == "IsoScore package":
        from IsoScore import IsoScore

        return lambda: float(IsoScore.IsoScore(points))
    raise ValueError(f"unknown implementation {implementation!r}")


def memory_mb(field: str) -> float:
    """``VmRSS`` (current) or ``VmHWM`` (peak since the last reset) of this process in MB (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"/proc/self/status has no {field}")


def reset_peak_memory() -> None:
    """Reset the kernel's peak-RSS mark, so ``VmHWM`` excludes transient peaks of imports and loading."""
    Path("/proc/self/clear_refs").write_text("5")


def child(metric: str, implementation: str, data: str, repeats: int) -> None:
    """Run one measurement and print its result as one JSON line."""
    points = np.load(f"{data}.points.npy")
    labels = np.load(f"{data}.labels.npy")
    # A warm-up on a small slice loads lazy imports and lets BLAS allocate its
    # per-thread buffers, so that `before` includes them and the difference is the
    # call's own working memory.
    measured_call(metric, implementation, points[:WARM_UP_ROWS], labels[:WARM_UP_ROWS])()
    call = measured_call(metric, implementation, points, labels)
    reset_peak_memory()
    before = memory_mb("VmRSS")
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        value = call()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    best = int(np.argmin(walls))
    print(
        json.dumps(
            {
                "value": float(value),
                "wall_s": walls[best],
                "cpu_s": cpus[best],
                "rss_before_mb": before,
                "rss_peak_mb": memory_mb("VmHWM"),
            }
        )
    )


def machine() -> dict:
    """What the numbers were measured on."""
    import IsoScore  # noqa: F401  (version below)
    import scipy
    import skdim
    import sklearn
    from importlib.metadata import version
    from threadpoolctl import threadpool_info

    cpuinfo = Path("/proc/cpuinfo").read_text().splitlines()
    model_names = [line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")]
    cpu = model_names[0] if model_names else platform.processor()
    meminfo = Path("/proc/meminfo").read_text().splitlines()
    memory_kb = next(int(line.split()[1]) for line in meminfo if line.startswith("MemTotal"))
    return {
        "cpu": cpu,
        "usable_cores": len(os.sched_getaffinity(0)),
        "memory_gb": round(memory_kb / 2**20, 1),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__,
        "scikit-dimension": skdim.__version__,
        "isoscore": version("isoscore"),
        "blas": [
            f"{info['internal_api']} {info['version']} ({info['num_threads']} threads)" for info in threadpool_info()
        ],
        "load_average_at_start": os.getloadavg(),
    }


def run(profile: str) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for n_samples, n_features, repeats, timeout in PROFILES[profile]:
            data = os.path.join(scratch, f"{n_samples}x{n_features}")
            points, labels = gaussian_mixture(n_samples, n_features)
            np.save(f"{data}.points.npy", points)
            np.save(f"{data}.labels.npy", labels)
            del points, labels
            for metric, implementation in MEASUREMENTS:
                row = {
                    "metric": metric,
                    "implementation": implementation,
                    "n_samples": n_samples,
                    "n_features": n_features,
                    "load_average_before": os.getloadavg()[0],
                }
                command = [sys.executable, __file__, "--child", metric, implementation, data, str(repeats)]
                try:
                    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=True)
                    row.update(json.loads(done.stdout.strip().splitlines()[-1]), status="ok")
                except subprocess.TimeoutExpired:
                    row["status"] = f"skipped (no result within the {timeout} s timeout)"
                except subprocess.CalledProcessError as error:
                    reason = (error.stderr.strip().splitlines() or ["no message"])[-1]
                    row["status"] = f"failed ({reason})"
                rows.append(row)
                print(json.dumps(row), flush=True)
    return rows


def markdown(rows: list[dict], description: dict) -> str:
    """A table pairing each isolib measurement with its reference."""
    references = {"silhouette": "scikit-learn", "lid": "scikit-dimension", "isoscore": "IsoScore package"}
    by_key = {(row["metric"], row["implementation"], row["n_samples"]): row for row in rows}

    def time_memory_value(row: dict | None) -> list[str]:
        if row is None:
            return ["—", "—", "—"]
        if row["status"] != "ok":
            return [row["status"], "—", "—"]
        extra = row["rss_peak_mb"] - row["rss_before_mb"]
        value = "—" if np.isnan(row["value"]) else f"{row['value']:.6f}"
        return [f"{row['wall_s']:.2f}", f"{extra:.0f}", value]

    lines = [
        "# isolib.metrics benchmark",
        "",
        f"Machine: {description['cpu']}, {description['usable_cores']} usable cores, "
        f"{description['memory_gb']} GB RAM; {description['platform']}; Python {description['python']}, "
        f"numpy {description['numpy']}, scikit-learn {description['scikit-learn']}, "
        f"scikit-dimension {description['scikit-dimension']}, isoscore {description['isoscore']}; "
        f"BLAS: {', '.join(description['blas'])}. Load average (1, 5, 15 min) at start: "
        f"{', '.join(f'{load:.2f}' for load in description['load_average_at_start'])}; "
        "the benchmark's own two threads count in it (about 2 with nothing else running), "
        "and other jobs on the machine add noise to wall times.",
        "",
        "Data: float32 Gaussian mixture (10 clusters). Time: best wall time of the repeats, in seconds; "
        "the CPU-time ratio (user + system time of the process) is less sensitive to other jobs on the machine. "
        "Memory: peak RSS of the measuring process minus its RSS before the call, in MB.",
        "",
        "| metric | n × d | isolib s | isolib MB | reference | reference s | reference MB | speed-up "
        "| speed-up in CPU time | isolib value | reference value |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        if row["implementation"] not in ("isolib", FLOOR):
            continue
        name = references.get(row["metric"])
        reference = by_key.get((row["metric"], name, row["n_samples"]))
        both_ok = reference is not None and row["status"] == reference["status"] == "ok"
        speedup = f"{reference['wall_s'] / row['wall_s']:.1f}×" if both_ok else "—"
        cpu_speedup = f"{reference['cpu_s'] / row['cpu_s']:.1f}×" if both_ok else "—"
        ours_time, ours_memory, ours_value = time_memory_value(row)
        their_time, their_memory, their_value = time_memory_value(reference)
        cells = [
            row["metric"] if row["implementation"] == "isolib" else f"{row['metric']} ({FLOOR})",
            f"{row['n_samples']:,} × {row['n_features']}",
            ours_time,
            ours_memory,
            name or "—",
            their_time,
            their_memory,
            speedup,
            cpu_speedup,
            ours_value,
            their_value,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke test")
    parser.add_argument(
        "--child", nargs=4, metavar=("METRIC", "IMPLEMENTATION", "DATA", "REPEATS"), help=argparse.SUPPRESS
    )
    arguments = parser.parse_args()
    if arguments.child:
        metric, implementation, data, repeats = arguments.child
        child(metric, implementation, data, int(repeats))
        return
    profile = "quick" if arguments.quick else "full"
    description = machine()
    rows = run(profile)
    description["load_average_at_end"] = os.getloadavg()
    folder = QUICK_RESULTS if arguments.quick else RESULTS
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "metrics.json").write_text(json.dumps({"machine": description, "measurements": rows}, indent=2) + "\n")
    (folder / "metrics.md").write_text(markdown(rows, description))
    print(f"wrote {folder / 'metrics.json'} and {folder / 'metrics.md'}")


if __name__ == "__main__":
    main()
