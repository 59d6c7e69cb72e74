"""Do the notebooks' tables and verdicts survive another CPU's kernels? check-figures' comparator on two runs.

    python benchmarks/bench_instruction_sets.py                     # quick profile, every notebook
    python benchmarks/bench_instruction_sets.py --reference build/quick/figures 03_rajaee_cluster_isotropy

A CI runner may have other vector instructions than the machine that committed the results (AVX-512,
AVX2, none): float rounding then differs in the last bits, which a seed's training can amplify. Each
notebook runs twice under the same profile, once with this machine's own kernels and once with PyTorch,
OpenBLAS and MKL held to baseline x86-64 kernels (``ATEN_CPU_CAPABILITY=default``,
``OPENBLAS_CORETYPE=Prescott``, ``MKL_ENABLE_INSTRUCTIONS=SSE4_2``), each with a cache of its own so that
every embedding is computed again; then :func:`isolib.comparison.compare_outputs` compares the two output
folders as ``check-figures`` does: statuses exactly, numbers within each table's declared tolerance.
``--reference`` reuses an earlier run of this machine's kernels (e.g. ``make quick``'s
``build/quick/figures``) instead of running it again. Results go to
``benchmarks/results/instruction_sets.json`` and ``.md``; a run of some notebooks replaces their rows and
keeps the others'.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from _results import RESULTS, machine, save_results

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from isolib.comparison import compare_outputs
from isolib.project import BUILD_DIR, notebook_names
from isolib.runner import run_notebook
from isolib.runner import environment as environment_variables

BASELINE_KERNELS = {"ATEN_CPU_CAPABILITY": "default", "OPENBLAS_CORETYPE": "Prescott",
                    "MKL_ENABLE_INSTRUCTIONS": "SSE4_2"}


def run(notebook: str, profile: str, folder: Path, environment: dict) -> tuple[Path, float]:
    """Run one notebook with ``environment`` added (the kernel inherits it); its output folder and seconds."""
    with environment_variables(**environment):
        result = run_notebook(notebook, profile, folder=folder)
    if not result.ok:
        raise RuntimeError(f"{notebook} failed under {environment or 'native kernels'}: {result.error}")
    return folder / "figures" / notebook, result.seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help="notebooks to run (default: all)")
    parser.add_argument("--profile", default="quick")
    parser.add_argument("--reference", type=Path, help="an earlier run's figures folder with this machine's kernels")
    args = parser.parse_args()
    import torch

    capability = torch.backends.cpu.get_cpu_capability()
    root = BUILD_DIR / "instruction-sets" / args.profile
    records = []
    for notebook in args.notebooks or notebook_names():
        started = time.perf_counter()
        if args.reference:
            native, native_seconds = args.reference / notebook, float("nan")
        else:
            native, native_seconds = run(notebook, args.profile, root / "native",
                                         {"ISOLIB_CACHE_DIR": str(root / "native-cache")})
        baseline, baseline_seconds = run(notebook, args.profile, root / "baseline",
                                         {**BASELINE_KERNELS, "ISOLIB_CACHE_DIR": str(root / "baseline-cache")})
        differences = compare_outputs(native, baseline)
        records.append({"notebook": notebook, "cpu_capability": capability, "differences": differences,
                        "native_seconds": native_seconds, "baseline_seconds": baseline_seconds,
                        "wall_seconds": time.perf_counter() - started})
        print(f"{notebook}: {len(differences)} difference(s)", flush=True)
    # Notebooks run before and not now keep their rows (a rerun of one notebook updates its own), each with
    # the kernels of the machine that ran it.
    earlier = RESULTS / "instruction_sets.json"
    if earlier.exists() and json.loads(earlier.read_text()).get("profile") == args.profile:
        ran = {record["notebook"] for record in records}
        records = sorted([r for r in json.loads(earlier.read_text())["notebooks"] if r["notebook"] not in ran] + records,
                         key=lambda record: record["notebook"])
    result = {"machine": machine(), "baseline_kernels": BASELINE_KERNELS, "profile": args.profile,
              "reference": str(args.reference) if args.reference else None, "notebooks": records}
    lines = ["# Tables and verdicts under another CPU's kernels", "",
             f"Profile `{args.profile}`; the kernels of the machine that ran each notebook against baseline "
             f"x86-64 kernels ({', '.join(f'{k}={v}' for k, v in BASELINE_KERNELS.items())}), each with its own "
             "cache; compared by `isolib.comparison.compare_outputs` (check-figures: statuses exactly, numbers within "
             "each table's declared tolerance, else rtol 1e-4 and atol 1e-6). Written by "
             "`benchmarks/bench_instruction_sets.py`.", "",
             "| notebook | machine's kernels | differences | first difference |", "|---|---|---:|---|"]
    lines += [f"| {r['notebook']} | {r['cpu_capability']} | {len(r['differences'])} | {(r['differences'] or ['-'])[0]} |"
              for r in records]
    save_results("instruction_sets", result, "\n".join(lines) + "\n", quick=False)


if __name__ == "__main__":
    main()
