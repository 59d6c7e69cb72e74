"""What the cache's storage dtype does to every table: each notebook with float16 and with float32 embeddings.

    python benchmarks/bench_storage_dtype.py                                 # quick profile, every notebook with the parameter
    python benchmarks/bench_storage_dtype.py --profile full 00_quickstart    # another profile, chosen notebooks

The notebooks that cache token embeddings declare ``storage_dtype`` (float16 by default: half the disk).
The model always runs in float32; only the stored copy is rounded. Each notebook runs twice as a variant
(``-p storage_dtype float16`` and ``-p storage_dtype float32``, outputs under ``build/variants/``), and
every CSV table of the two runs is compared: per table, the largest absolute difference over its numeric
cells (and the column it is in), and whether the findings' statuses in the record (``results.json``) agree. Results go to
``benchmarks/results/storage_dtype.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from _results import machine, save_results

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from isolib.findings import RECORD_FILE, read_record  # noqa: E402
from isolib.parameters import declared_parameters
from isolib.project import notebook_names
from isolib.project import variant_dir
from isolib.runner import run_notebook

DTYPES = ("float16", "float32")


def table_differences(half: Path, full: Path) -> list[dict]:
    """Per CSV table of ``full``: the largest absolute difference from ``half``'s, and where it is."""
    rows = []
    for path in sorted(full.glob("*.csv")):
        other = half / path.name
        a, b = pd.read_csv(other), pd.read_csv(path)
        if list(a.columns) != list(b.columns) or len(a) != len(b):
            rows.append({"table": path.name, "comparable": False, "max_abs_difference": None, "column": None,
                         "text_cells_differ": None})
            continue
        largest, where, text_differs = 0.0, None, 0
        for column in b.columns:
            if pd.api.types.is_numeric_dtype(a[column]) and pd.api.types.is_numeric_dtype(b[column]):
                gap = np.abs(a[column].to_numpy(float) - b[column].to_numpy(float))
                gap = gap[~np.isnan(gap)]
                if gap.size and gap.max() > largest:
                    largest, where = float(gap.max()), column
            else:
                text_differs += int((a[column].astype(str) != b[column].astype(str)).sum())
        rows.append({"table": path.name, "comparable": True, "max_abs_difference": largest, "column": where,
                     "text_cells_differ": text_differs})
    return rows


def statuses(folder: Path) -> list[tuple[str, str, str]]:
    """Every finding's (claim, model, status), in one order whatever the order of the page."""
    return sorted(read_record(folder).every_status) if (folder / RECORD_FILE).exists() else []


def compare(notebook: str, profile: str) -> dict:
    """Run ``notebook`` with each storage dtype and compare the outputs."""
    folders, seconds = {}, {}
    for dtype in DTYPES:
        overrides = {"storage_dtype": dtype}
        result = run_notebook(notebook, profile, overrides=overrides)
        if not result.ok:
            raise SystemExit(f"{notebook} failed with storage_dtype={dtype}: {result.error}")
        folders[dtype] = variant_dir(notebook, profile, overrides) / "figures"
        seconds[dtype] = round(result.seconds, 1)
    half, full = folders["float16"], folders["float32"]
    before, after = statuses(half), statuses(full)
    return {"notebook": notebook, "profile": profile, "seconds": seconds, "tables": table_differences(half, full),
            "findings": len(after), "statuses_differ": sum(a != b for a, b in zip(before, after)) + abs(len(before) - len(after))}


def report(records: list[dict], context: dict) -> str:
    lines = ["# Storage dtype: float16 against float32 embeddings in the cache", "",
             f"Profile `{records[0]['profile']}`; {context['usable_cores']} usable cores. Each notebook ran twice "
             "(`-p storage_dtype float16`, `-p storage_dtype float32`); per table, the largest absolute difference "
             "between the two runs over its numeric cells.", "",
             "| notebook | table | largest difference | in column | text cells differing |", "|---|---|---|---|---|"]
    for record in records:
        for row in record["tables"]:
            if not row["comparable"]:
                lines.append(f"| {record['notebook']} | {row['table']} | shapes differ | | |")
                continue
            lines.append(f"| {record['notebook']} | {row['table']} | {row['max_abs_difference']:.2g} | "
                         f"{row['column'] or ''} | {row['text_cells_differ']} |")
    lines += ["", "| notebook | findings | statuses that differ | seconds (float16, float32) |", "|---|---|---|---|"]
    for record in records:
        lines.append(f"| {record['notebook']} | {record['findings']} | {record['statuses_differ']} | "
                     f"{record['seconds']['float16']}, {record['seconds']['float32']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help="default: every notebook that declares storage_dtype")
    parser.add_argument("--profile", default="quick")
    args = parser.parse_args(argv)
    chosen = args.notebooks or [name for name in notebook_names() if "storage_dtype" in declared_parameters(name)]
    context = machine()
    records = [compare(notebook, args.profile) for notebook in chosen]
    save_results("storage_dtype", {"machine": context, "records": records}, report(records, context), quick=False)


if __name__ == "__main__":
    main()
