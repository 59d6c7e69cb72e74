"""Cost of one recorded update of notebook 04's probe against the paper's pipeline and the arithmetic floor.

    python benchmarks/bench_probe.py            # setup (i)'s real shape: 10,662 MiniLM vectors x 384, 2 labels
    python benchmarks/bench_probe.py --quick    # 2,000 of them: a smoke test (under a minute)

A *recorded update* is what Mickus et al. do 1,000 times per seed: one full-batch Adam step of the
embeddings under a linear layer, then IsoScore and the silhouette of the current embeddings. Three
ways are timed side by side in one process, in interleaved rounds (so that other jobs on the machine
slow all three alike):

* ``isolib``: :func:`isolib.probe.train_probe` (the step, :func:`isolib.metrics.isoscore`,
  :func:`isolib.metrics.silhouette`), its wall time divided by the updates it records;
* ``paper pipeline``: the same torch step, then ``sklearn.metrics.silhouette_score`` and
  ``IsoScore.IsoScore`` (pip ``isoscore``), the tools the paper names;
* ``floor``: the float32 products of every pair of points once (row stripe ``i`` against rows from
  ``i`` on: the upper triangle of ``X @ X.T``), the arithmetic any exact silhouette must do, timed alone.

Targets (issue 10): isolib at least 5x faster than the paper's pipeline and within 1.3x of the floor.
Results go to ``benchmarks/results/probe.json`` and ``probe.md``; ``--quick`` writes under ``build/benchmarks/``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from _results import machine, save_results

FLOOR_STRIPE_ROWS = 2048
UPDATES_PER_ROUND = 5
ROUNDS = {"full": 5, "quick": 2}
QUICK_ROWS = 2000


def isolib_updates(X: np.ndarray, y: np.ndarray, n_updates: int) -> float:
    """Wall seconds per recorded update of :func:`isolib.probe.train_probe` (setup (i): no bias)."""
    from isolib.probe import train_probe

    started = time.perf_counter()
    train_probe(X, y, bias=False, n_updates=n_updates, seeds=[0], progress=False)
    return (time.perf_counter() - started) / (n_updates + 1)  # it records before the first update too


def paper_updates(X: np.ndarray, y: np.ndarray, n_updates: int) -> float:
    """Wall seconds per recorded update with the same torch step, scikit-learn's silhouette and the IsoScore package."""
    import torch
    from IsoScore import IsoScore
    from sklearn.metrics import silhouette_score

    from isolib.probe import make_probe

    torch.manual_seed(0)
    probe = make_probe(X, 2, bias=False)
    optimiser = torch.optim.Adam(probe.parameters(), lr=1e-3)
    objective = torch.nn.CrossEntropyLoss()
    targets = torch.as_tensor(y)
    started = time.perf_counter()
    for _ in range(n_updates):
        optimiser.zero_grad()
        objective(probe(None), targets).backward()
        optimiser.step()
        embeddings = probe.embeddings.detach().numpy()
        float(IsoScore.IsoScore(embeddings))
        float(silhouette_score(embeddings, y))
    return (time.perf_counter() - started) / n_updates


def floor_products(X: np.ndarray) -> float:
    """Wall seconds of the float32 products of every pair of rows once (upper triangle, in stripes), dropped."""
    starts = range(0, len(X), FLOOR_STRIPE_ROWS)
    started = time.perf_counter()
    for start in starts:
        X[start : start + FLOOR_STRIPE_ROWS] @ X[start:].T  # only its time counts
    return time.perf_counter() - started


def polarity_vectors(n_rows: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Setup (i)'s MiniLM sentence vectors and labels (cached after the first run), or a subset."""
    from isolib.studies.mickus_isotropy_clusters.compute import polarity_setup

    setup = polarity_setup(n_items=n_rows, random_state=0)
    return np.ascontiguousarray(setup.X, dtype=np.float32), setup.y


def run(profile: str) -> dict:
    X, y = polarity_vectors(QUICK_ROWS if profile == "quick" else None)
    # Warm-up: imports, BLAS buffers, torch's first allocations (every k-th row: the file is sorted by label).
    few = slice(None, None, max(1, len(X) // 500))
    isolib_updates(X[few], y[few], 1)
    paper_updates(X[few], y[few], 1)
    floor_products(X[few])
    times = {"isolib": [], "paper pipeline": [], "floor": []}
    for _ in range(ROUNDS[profile]):
        times["isolib"].append(isolib_updates(X, y, UPDATES_PER_ROUND))
        times["paper pipeline"].append(paper_updates(X, y, UPDATES_PER_ROUND))
        times["floor"].append(floor_products(X))
    best = {name: min(values) for name, values in times.items()}
    return {
        "n_samples": len(X),
        "n_features": X.shape[1],
        "rounds": ROUNDS[profile],
        "updates_per_round": UPDATES_PER_ROUND,
        "seconds_per_update": times,
        "best": best,
        "speedup_over_paper": best["paper pipeline"] / best["isolib"],
        "ratio_to_floor": best["isolib"] / best["floor"],
        **machine(),
    }


def markdown(result: dict) -> str:
    best = result["best"]
    return "\n".join([
        "# Probe benchmark: one recorded update of setup (i)",
        "",
        f"Data: {result['n_samples']:,} all-MiniLM-L6-v2 polarity vectors × {result['n_features']}, 2 labels; "
        f"{result['usable_cores']} usable cores; load average at start "
        f"{', '.join(f'{load:.2f}' for load in result['load_average_at_start'])}. Best of {result['rounds']} "
        f"interleaved rounds of {result['updates_per_round']} updates, seconds per recorded update.",
        "",
        "| way | s per update | ratio |",
        "|---|---|---|",
        f"| isolib (`train_probe`) | {best['isolib']:.3f} | 1 |",
        f"| paper pipeline (torch step + scikit-learn silhouette + IsoScore package) | {best['paper pipeline']:.3f} "
        f"| {result['speedup_over_paper']:.1f}× slower than isolib |",
        f"| floor (float32 products of every pair once, alone) | {best['floor']:.3f} | isolib is "
        f"{result['ratio_to_floor']:.2f}× the floor |",
        "",
        "Targets: at least 5× faster than the paper's pipeline; within 1.3× of the floor.",
        "",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_ROWS:,} vectors: a smoke test")
    profile = "quick" if parser.parse_args().quick else "full"
    result = run(profile)
    save_results("probe", result, markdown(result), quick=profile == "quick")


if __name__ == "__main__":
    main()
