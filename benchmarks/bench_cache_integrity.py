"""What the cache's integrity checks cost when an entry is opened: the cheap check, and the full hash once per process.

    python benchmarks/bench_cache_integrity.py            # a synthetic 3 GB entry (13 layers, float16): about a minute
    python benchmarks/bench_cache_integrity.py --quick    # 0.3 GB: a smoke test

The entry has the layout :func:`isolib.embed.embed` writes (``meta.json``, ``tokens.parquet``, one
``layer_NN.npy`` per layer, ``manifest.json``), filled with synthetic values; it is written under a
temporary folder (TMPDIR) and deleted afterwards. Timed: the manifest written (every file hashed,
as at the end of an extraction), the first opening in a process (:func:`isolib.embed.entry_problem`:
sizes, headers, token table footer, and every file hashed), with the files in the page cache and, where
this process may drop the page cache (root on Linux), read from disk; and a later opening in the same
process (the cheap check alone). Results go to ``benchmarks/results/cache_integrity.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from _results import machine, save_results

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from isolib import integrity  # noqa: E402
from isolib.embed import CACHE_FORMAT, entry_problem  # noqa: E402

N_LAYERS, DIM = 13, 768  # MPNet's hidden states, stored as float16


def write_entry(folder: Path, n_bytes: int) -> int:
    """A synthetic entry of about ``n_bytes`` of arrays; returns the bytes of its files."""
    n_tokens = n_bytes // (N_LAYERS * DIM * 2)
    block = np.random.default_rng(0).standard_normal((4096, DIM)).astype(np.float16)
    for layer in range(N_LAYERS):
        array = np.lib.format.open_memmap(folder / f"layer_{layer:02d}.npy", mode="w+", dtype=np.float16,
                                          shape=(n_tokens, DIM))
        for start in range(0, n_tokens, len(block)):
            array[start:start + len(block)] = block[:n_tokens - start]
        array.flush()
        del array
    n_sentences = n_tokens // 25
    pd.DataFrame({"sentence_id": np.repeat(np.arange(n_sentences + 1, dtype=np.int32), 25)[:n_tokens],
                  "position": np.tile(np.arange(25, dtype=np.int32), n_sentences + 1)[:n_tokens],
                  "token": "word", "word_id": np.int32(0), "word": "word", "is_special": False}
                 ).to_parquet(folder / "tokens.parquet", index=False)
    (folder / "meta.json").write_text(json.dumps({
        "format": CACHE_FORMAT, "model": "synthetic", "n_layers": N_LAYERS, "layers": list(range(N_LAYERS)),
        "dim": DIM, "dtype": "float16", "n_sentences": n_sentences + 1, "n_tokens": n_tokens}))
    return sum(path.stat().st_size for path in folder.iterdir())


def drop_page_cache() -> bool:
    """Empty the page cache (root on Linux only), so the next read comes from the disk."""
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError:
        return False
    return True


def timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def markdown(result: dict) -> str:
    mb = result["entry_bytes"] / 2**20
    lines = [
        "# Cache integrity: the cost of checking an entry when it is opened", "",
        f"A synthetic entry of {mb / 1024:.2f} GB ({N_LAYERS} float16 layers of {result['n_tokens']:,} x {DIM}, "
        f"its token table and meta.json); {result['machine']['usable_cores']} usable cores, load average "
        f"{result['machine']['load_average_at_start'][0]:.1f} at start.", "",
        "| step | seconds | MB/s |", "|---|---|---|",
    ]
    for label, key in (("manifest written (every file hashed, end of an extraction)", "write_manifest_s"),
                       ("first opening in a process, files in the page cache (cheap check + full hash)",
                        "first_open_warm_s"),
                       ("first opening in a process, files read from disk (cheap check + full hash)",
                        "first_open_cold_s"),
                       ("later opening in the same process (cheap check only)", "later_open_s")):
        seconds = result.get(key)
        if seconds is None:
            lines.append(f"| {label} | not measured (the page cache could not be dropped) | |")
        else:
            lines.append(f"| {label} | {seconds:.3g} | {mb / seconds:,.0f} |")
    lines += ["", "The full hash runs once per entry and process (and on `cache.verify()`); every later opening "
              "reads only the sizes, the array headers and the token table's footer.", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a 0.3 GB entry")
    parser.add_argument("--gb", type=float, default=3.0, help="size of the synthetic entry (default 3)")
    args = parser.parse_args()
    gigabytes = 0.3 if args.quick else args.gb
    result = {"machine": machine()}
    with tempfile.TemporaryDirectory(prefix="bench-integrity-") as tmp:
        folder = Path(tmp) / "entry"
        folder.mkdir()
        result["entry_bytes"] = write_entry(folder, int(gigabytes * 2**30))
        result["n_tokens"] = int(json.loads((folder / "meta.json").read_text())["n_tokens"])
        result["write_manifest_s"] = timed(lambda: integrity.write_manifest(folder))
        integrity._HASHED.clear()  # a new process
        result["first_open_warm_s"] = timed(lambda: entry_problem(folder))
        result["later_open_s"] = timed(lambda: entry_problem(folder))
        integrity._HASHED.clear()
        result["first_open_cold_s"] = timed(lambda: entry_problem(folder)) if drop_page_cache() else None
        assert entry_problem(folder) == ""
        shutil.rmtree(folder)
    save_results("cache_integrity", result, markdown(result), quick=args.quick)


if __name__ == "__main__":
    main()
