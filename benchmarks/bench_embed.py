"""Extraction throughput: isolib.embed against a bare ``model(**batch)`` loop on the same sentences.

Usage: python benchmarks/bench_embed.py [--sentences N] [--models minilm smollm2]

Both sides run the same model in inference mode on the same STS sentences with the same
batch size. The bare loop keeps the sentences' order (padding to the longest in each batch)
and keeps nothing; isolib.embed sorts by length, maps pieces to words and writes every layer
to a fresh cache. The cache-hit time is the cost of a second call. Results go to
benchmarks/results/embed.json and embed.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

RESULTS = Path(__file__).resolve().parent / "results"


def bare_loop(loaded, sentences, batch_size):
    """Tokens per second of the plain forward passes, padding excluded from the count."""
    n_tokens = 0
    start = time.perf_counter()
    with torch.inference_mode():
        for i in range(0, len(sentences), batch_size):
            batch = loaded.tokenizer(sentences[i:i + batch_size], padding=True, truncation=True,
                                     max_length=512, return_tensors="pt")
            loaded.model(**batch)
            n_tokens += int(batch["attention_mask"].sum())
    return n_tokens, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=1000)
    parser.add_argument("--models", nargs="+", default=["minilm", "smollm2"])
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()

    os.environ["ISOLIB_PROGRESS"] = "0"
    from isolib.datasets import sts_sentences
    from isolib.embed import embed
    from isolib.models import load_model

    corpus = sts_sentences()
    sentences = [corpus[i] for i in np.sort(np.random.default_rng(0).choice(len(corpus), args.sentences, replace=False))]
    rows = []
    for name in args.models:
        loaded = load_model(name)
        bare_loop(loaded, sentences[:args.batch_size], args.batch_size)  # warm-up
        n_tokens, bare_seconds = bare_loop(loaded, sentences, args.batch_size)
        with tempfile.TemporaryDirectory() as cache:
            os.environ["ISOLIB_CACHE_DIR"] = cache
            start = time.perf_counter()
            result = embed(loaded, sentences, batch_size=args.batch_size)
            embed_seconds = time.perf_counter() - start
            start = time.perf_counter()
            embed(name, sentences, batch_size=args.batch_size)
            hit_seconds = time.perf_counter() - start
            stored_tokens = len(result.tokens)
        rows.append({
            "model": name, "sentences": len(sentences), "tokens": n_tokens, "layers": loaded.n_layers,
            "bare_tokens_per_s": n_tokens / bare_seconds, "embed_tokens_per_s": stored_tokens / embed_seconds,
            "embed_over_bare": (stored_tokens / embed_seconds) / (n_tokens / bare_seconds),
            "cache_hit_s": hit_seconds,
        })
        print(rows[-1], flush=True)
    machine = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, " \
              f"{torch.get_num_threads()} threads"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "embed.json").write_text(json.dumps({"machine": machine, "batch_size": args.batch_size,
                                                    "results": rows}, indent=1) + "\n")
    lines = [f"# Embedding extraction throughput\n\nMachine: {machine}; batch size {args.batch_size}; "
             f"{args.sentences} STS sentences; all layers stored as float32.\n",
             "| model | tokens | layers | bare model(**batch) tokens/s | isolib.embed tokens/s | ratio | cache hit (s) |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['model']} | {r['tokens']} | {r['layers']} | {r['bare_tokens_per_s']:.0f} | "
              f"{r['embed_tokens_per_s']:.0f} | {r['embed_over_bare']:.2f} | {r['cache_hit_s']:.3f} |" for r in rows]
    (RESULTS / "embed.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
