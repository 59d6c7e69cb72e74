"""The benchmarks' reports: the collection benchmark (per-notebook rows, totals only when complete) and the storage-dtype comparison."""

import importlib.util

from isolib.project import notebook_names
from isolib.models import REPO_ROOT


def _bench_figures():
    spec = importlib.util.spec_from_file_location("bench_figures", REPO_ROOT / "benchmarks" / "bench_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _record(notebook, cache, wall, *, profile="full", exit_status=0):
    return {"notebook": notebook, "profile": profile, "cache": cache, "exit_status": exit_status,
            "wall_minutes": wall, "cpu_minutes": wall * 1.5, "peak_memory_gib": 2.0 + wall / 100,
            "cache_before_gib": 0.0, "cache_added_gib": 1.0, "cache_peak_gib": 2.5 + wall / 100, "date": "2026-11-23T23:00", "commit": "abc1234"}


def test_totals_appear_only_once_every_notebook_has_run_in_the_folder():
    bench = _bench_figures()
    names = notebook_names()
    complete = [_record(name, "build/fresh", 30.0) for name in names]
    partial = [_record(names[0], "/work/.cache", 12.0), _record(names[1], "/work/.cache", 60.0, exit_status=1)]
    text = bench.markdown(complete + partial + [_record(names[0], "build/other", 1.0, profile="quick")])
    assert f"**Whole collection, full profile, in `build/fresh`**: {30.0 * len(names) / 60:.1f} h wall" in text
    assert f"{float(len(names)):.1f} GiB of cache added, the cache at its largest 2.8 GiB." in text
    old = {key: value for key, value in complete[0].items() if key != "cache_peak_gib"}  # recorded before sampling
    assert f"| {old['cache_added_gib']:.2f} | - | 0 |" in bench.markdown([old])
    # A failed run does not count: the second notebook is still missing from /work/.cache.
    assert "in `/work/.cache`**: not yet measured for " + ", ".join(names[1:]) in text
    assert "build/other" in text and "in `build/other`" not in text  # quick runs are listed, never totalled


def test_storage_dtype_report_finds_the_largest_difference_per_table(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(REPO_ROOT / "benchmarks"))  # as when run as a script: `_results` beside it
    spec = importlib.util.spec_from_file_location("bench_storage_dtype",
                                                  REPO_ROOT / "benchmarks" / "bench_storage_dtype.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    half, full = tmp_path / "half", tmp_path / "full"
    half.mkdir(), full.mkdir()
    (half / "t.csv").write_text("model,a,b\nx,1.0,2.0\ny,3.0,\n")
    (full / "t.csv").write_text("model,a,b\nx,1.001,2.0\ny,2.9,\n")
    (half / "u.csv").write_text("model,a\nx,1\n")
    (full / "u.csv").write_text("model,a\nx,1\nz,2\n")
    rows = {row["table"]: row for row in bench.table_differences(half, full)}
    assert rows["t.csv"]["column"] == "a" and abs(rows["t.csv"]["max_abs_difference"] - 0.1) < 1e-12
    assert rows["t.csv"]["text_cells_differ"] == 0
    assert not rows["u.csv"]["comparable"]
