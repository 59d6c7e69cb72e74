"""Notebook 03's six rows on one dataset: in the kernel's process against worker processes.

    python benchmarks/bench_sts_rows.py            # MiniLM's last layer on STS-B dev (42k tokens x 384), 2 seeds, 2 rounds
    python benchmarks/bench_sts_rows.py --quick    # 1 seed, 1 round: a smoke test (about 2 minutes)

:func:`isolib.studies.rajaee_cluster_isotropy.compute.evaluate_methods` runs every (method, seed) row: the
clustering, the processing, the STS correlations, and I(W) and IsoScore of the tokens and of the
sentences. The full profile does this for 32 (model view, dataset) pairs with 5 seeds, about an hour
on two cores in one process, where k-means, the Gaussian mixture and the per-cluster steps leave one
core mostly idle. Timed side by side in interleaved rounds (so that other jobs slow both alike):

* ``one process``: ``n_jobs=1``, every row in turn;
* ``worker processes``: ``n_jobs=-1``, the rows shared by one worker per core (joblib; each worker's
  BLAS limited to its share of the cores).

The rows must be the same both ways (the largest Spearman difference is recorded).
Results go to ``benchmarks/results/sts_rows.json`` and ``sts_rows.md``; ``--quick`` writes under
``build/benchmarks/``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from _results import machine, save_results

ROUNDS = {"full": 2, "quick": 1}
SEEDS = {"full": (0, 1), "quick": (0,)}


def stsb_dev_tokens():
    """MiniLM's last-layer content tokens of STS-B dev, their sentence ids and the pairs (as notebook 03)."""
    from isolib.embed import embed
    from isolib.studies.rajaee_cluster_isotropy.compute import sentence_pairs

    pairs = sentence_pairs("stsb-dev")
    embedding = embed("minilm", pairs.sentences, layers=[-1], dtype="float16")
    kept = ~embedding.tokens.is_special.to_numpy()
    tokens = np.asarray(embedding.layer(-1)[kept], dtype=np.float32)
    ids = embedding.tokens.sentence_id.to_numpy()[kept]
    return tokens, ids, pairs


def timed_rows(tokens, ids, pairs, seeds, n_jobs: int):
    from isolib.studies.rajaee_cluster_isotropy.compute import evaluate_methods
    from isolib.studies.rajaee_cluster_isotropy.protocol import ENCODER

    started = time.perf_counter()
    rows = evaluate_methods(tokens, ids, pairs, ENCODER, seeds=seeds, n_jobs=n_jobs)
    return time.perf_counter() - started, rows


def run(profile: str) -> dict:
    tokens, ids, pairs = stsb_dev_tokens()
    seeds = SEEDS[profile]
    from isolib.studies.rajaee_cluster_isotropy.compute import evaluate_methods
    from isolib.studies.rajaee_cluster_isotropy.protocol import ENCODER

    for n_jobs in (1, -1):  # warm-up: imports, BLAS buffers, the workers' start
        evaluate_methods(tokens, ids, pairs, ENCODER, methods=["pre-trained", "Mean"], n_jobs=n_jobs)
    times = {"one process": [], "worker processes": []}
    for _ in range(ROUNDS[profile]):
        serial_seconds, serial = timed_rows(tokens, ids, pairs, seeds, 1)
        parallel_seconds, parallel = timed_rows(tokens, ids, pairs, seeds, -1)
        times["one process"].append(serial_seconds)
        times["worker processes"].append(parallel_seconds)
    best = {way: min(values) for way, values in times.items()}
    return {
        "n_tokens": len(tokens),
        "n_features": tokens.shape[1],
        "rows": len(serial),
        "seeds": list(seeds),
        "rounds": ROUNDS[profile],
        "seconds": times,
        "best": best,
        "speedup": best["one process"] / best["worker processes"],
        "largest_spearman_difference": float(np.abs(serial.spearman - parallel.spearman).max()),
        **machine(),
    }


def markdown(result: dict) -> str:
    best = result["best"]
    return "\n".join([
        "# Notebook 03's rows on one dataset: one process against worker processes",
        "",
        f"Data: {result['n_tokens']:,} all-MiniLM-L6-v2 last-layer tokens × {result['n_features']} of STS-B dev; "
        f"the six rows with seeds {', '.join(map(str, result['seeds']))} ({result['rows']} rows); "
        f"{result['usable_cores']} usable cores; load average at start "
        f"{', '.join(f'{load:.2f}' for load in result['load_average_at_start'])}. Best of {result['rounds']} "
        "interleaved round(s), wall seconds.",
        "",
        "| way | s | ratio |",
        "|---|---|---|",
        f"| one process (`n_jobs=1`) | {best['one process']:.1f} | {result['speedup']:.2f}× the workers' time |",
        f"| worker processes (`n_jobs=-1`) | {best['worker processes']:.1f} | 1 |",
        "",
        f"Largest Spearman difference between the two ways: {result['largest_spearman_difference']:.2g} (× 100 scale).",
        "",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one seed, one round: a smoke test")
    profile = "quick" if parser.parse_args().quick else "full"
    result = run(profile)
    save_results("sts_rows", result, markdown(result), quick=profile == "quick")


if __name__ == "__main__":
    main()
