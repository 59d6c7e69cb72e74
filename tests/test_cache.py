"""The embedding cache under the user's control: list, size, prune, and a prune interrupted half-way."""

import json
import os
import shutil
import time

import pytest

from isolib import cache, integrity, steps
from isolib.cli import main
from isolib.embed import CACHE_FORMAT


def _entry(root, key, model, *, days_ago=0.0, layers=(0, 1, 2), size=1000):
    """A folder that ``cache list`` reads as an entry (not one ``embed`` would open: its arrays are filler)."""
    folder = root / "embeddings" / key
    folder.mkdir(parents=True)
    (folder / "layer_00.npy").write_bytes(b"x" * size)
    meta = folder / "meta.json"
    meta.write_text(json.dumps({"format": CACHE_FORMAT, "model": model, "n_sentences": 10, "layers": list(layers),
                                "dtype": "float16"}))
    integrity.write_manifest(folder)
    stamp = time.time() - days_ago * 86400
    os.utime(meta, (stamp, stamp))
    return folder


@pytest.fixture
def filled(cache_dir):
    _entry(cache_dir, "a" * 32, "minilm", days_ago=40)
    _entry(cache_dir, "b" * 32, "minilm", days_ago=1, layers=(6,))
    _entry(cache_dir, "c" * 32, "smollm2", days_ago=2, size=5000)
    partial = cache_dir / "embeddings" / ("d" * 32 + ".partial") / "shard_00000"
    partial.mkdir(parents=True)
    (partial / "tokens.parquet").write_bytes(b"y" * 100)
    leftover = cache_dir / "embeddings" / ("e" * 32 + ".tmp-1234abcd")
    leftover.mkdir()
    old = time.time() - 2 * cache.LEFTOVER_AGE_SECONDS
    os.utime(leftover, (old, old))
    return cache_dir


def test_list_and_size_read_every_folder(filled):
    found = cache.entries()
    assert [entry.status for entry in found].count("complete") == 3
    assert {entry.status for entry in found} == {"complete", "partial", "leftover"}
    table = cache.listing(found)
    assert list(table.columns) == ["model", "texts", "rows", "layers", "dtype", "size", "last used", "status", "folder"]
    assert table[table.folder == "a" * 32].layers.item() == "0-2"
    assert table[table.folder == "b" * 32].layers.item() == "6"
    sizes = cache.sizes(found).set_index("model")
    assert sizes.entries["minilm"] == 2 and sizes.entries["total"] == 5


def test_prune_by_age_and_model_and_only_with_a_filter(filled, capsys):
    with pytest.raises(ValueError, match="a bare prune deletes nothing"):
        cache.prune()
    would = cache.prune(older_than_days=30, dry_run=True)
    assert {entry.path.name for entry in would} == {"a" * 32, "e" * 32 + ".tmp-1234abcd"}
    assert (filled / "embeddings" / ("a" * 32)).exists(), "a dry run deletes nothing"
    assert main(["cache", "prune", "--older-than", "30"]) == 0
    assert "deleted 2 folder(s)" in capsys.readouterr().out
    assert not (filled / "embeddings" / ("a" * 32)).exists()
    assert main(["cache", "prune", "--folder", "c" * 32, "--dry-run"]) == 0
    assert "would delete 1 folder(s)" in capsys.readouterr().out
    removed = cache.prune(model="smollm2")
    assert [entry.model for entry in removed] == ["smollm2"]
    assert {entry.path.name for entry in cache.entries()} == {"b" * 32, "d" * 32 + ".partial"}
    assert main(["cache", "list"]) == 0 and "minilm" in capsys.readouterr().out


@pytest.mark.parametrize("days", ["nan", "inf", "-inf", "-1", "ten"])
def test_a_prune_by_a_bad_number_of_days_deletes_nothing(filled, days, capsys):
    """NaN days once chose every entry: no age compares as newer than NaN."""
    kept = sorted(path.name for path in (filled / "embeddings").iterdir())
    with pytest.raises(SystemExit) as refused:
        main(["cache", "prune", f"--older-than={days}"])  # "=": argparse reads "-inf" alone as an option
    assert refused.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].endswith(
        f"argument --older-than: DAYS must be a finite number of at least 0; got '{days}'.")
    if days != "ten":
        with pytest.raises(ValueError, match="--older-than must be a finite number of days >= 0"):
            cache.prune(older_than_days=float(days))
    assert sorted(path.name for path in (filled / "embeddings").iterdir()) == kept


def test_an_interrupted_prune_leaves_nothing_trusted(filled, monkeypatch):
    real_rmtree = shutil.rmtree
    real_rmtree(filled / "embeddings" / ("e" * 32 + ".tmp-1234abcd"))

    def killed(path, *args, **kwargs):
        raise KeyboardInterrupt  # the process dies after the rename, before any file is deleted

    monkeypatch.setattr(shutil, "rmtree", killed)
    with pytest.raises(KeyboardInterrupt):
        cache.prune(model="smollm2")
    monkeypatch.setattr(shutil, "rmtree", real_rmtree)
    names = [path.name for path in (filled / "embeddings").iterdir()]
    assert "c" * 32 not in names, "the entry's trusted name is gone at once"
    assert any(name.startswith("c" * 32 + ".deleting-") for name in names)
    assert "smollm2" not in {entry.model for entry in cache.entries()}
    # The next prune removes the leftover once it is old enough to belong to no running write.
    doomed = next(path for path in (filled / "embeddings").iterdir() if ".deleting-" in path.name)
    old = time.time() - 2 * cache.LEFTOVER_AGE_SECONDS
    for path in [doomed, *doomed.rglob("*")]:
        os.utime(path, (old, old))
    cache.prune(older_than_days=1000)
    assert not doomed.exists()


def test_reading_an_entry_marks_it_used(cache_dir):
    from isolib.embed import embed

    first = embed("minilm", ["A cat sat."], layers=[-1])
    meta = first.path / "meta.json"
    os.utime(meta, (0, 0))
    embed("minilm", ["A cat sat."], layers=[-1])
    assert meta.stat().st_mtime > time.time() - 60


def test_memoized_computes_once_per_inputs_and_code(cache_dir):
    import numpy as np

    from isolib import transforms

    calls = []

    def compute(value):
        calls.append(value)
        return {"value": value}

    inputs = {"points": np.arange(6.0).reshape(3, 2), "seed": 0}
    assert steps.memoized("step", inputs, lambda: compute(1), code=[transforms]) == {"value": 1}
    assert steps.memoized("step", dict(inputs), lambda: compute(2), code=[transforms]) == {"value": 1}
    changed = {**inputs, "points": inputs["points"] + 1e-12}
    assert steps.memoized("step", changed, lambda: compute(3), code=[transforms]) == {"value": 3}
    assert calls == [1, 3], "the same inputs and code reuse the stored value; other inputs compute again"
    stored = sorted((cache_dir / "results" / "step").glob("*.jsonl"))
    stored[0].write_bytes(b"not a stored value")  # a damaged file is computed again, never trusted
    with pytest.warns(integrity.CacheWarning, match="was damaged"):
        steps.memoized("step", inputs, lambda: compute(4), code=[transforms])
        steps.memoized("step", changed, lambda: compute(5), code=[transforms])
    assert len(calls) == 3 and calls[-1] in (4, 5)
    listed = cache.listing(cache.entries())
    assert listed[listed.rows == "results: step"].texts.item() == 2
    with pytest.raises(TypeError, match="cannot hash"):
        steps.memoized("step", {"x": object()}, lambda: 0, code=[transforms])
    # store=False (a caller's resume=False): computed every time, nothing read or written.
    files = sorted((cache_dir / "results" / "step").iterdir())
    assert steps.memoized("step", inputs, lambda: compute(6), code=[transforms], store=False) == {"value": 6}
    assert sorted((cache_dir / "results" / "step").iterdir()) == files


# --------------------------------------------------------------------------- links, folders and files in odd places
def test_prune_skips_a_symbolic_link_and_carries_on(cache_dir, tmp_path):
    real = _entry(cache_dir, "a" * 32, "minilm")
    outside = _entry(tmp_path / "elsewhere", "b" * 32, "minilm")
    link = cache_dir / "embeddings" / ("c" * 32)
    link.symlink_to(outside, target_is_directory=True)
    with pytest.warns(integrity.CacheWarning, match=f"Skipped {link}: it is a symbolic link, which prune never follows"):
        removed = cache.prune(everything=True)
    assert [entry.path for entry in removed] == [real]
    assert not real.exists() and link.is_symlink() and (outside / "meta.json").exists(), "the link's target is kept"


def test_prune_skips_symlinked_locks_on_every_run(cache_dir, tmp_path):
    kept = _entry(cache_dir, "a" * 32, "minilm")
    other = tmp_path / "not-a-lock.txt"
    other.write_text("someone's file")
    integrity.lock_path(kept).symlink_to(other)
    looping = cache_dir / "embeddings" / ("f" * 32 + ".lock")
    looping.symlink_to(looping.name)  # a link to itself: "Too many levels of symbolic links"
    for _ in range(2):
        with pytest.warns(integrity.CacheWarning, match="it is a symbolic link, which prune never follows") as caught:
            assert cache.prune(everything=True) == []
        assert {str(w.message).split(":")[0] for w in caught} == {f"Skipped {integrity.lock_path(kept)}",
                                                                   f"Skipped {looping}"}
    assert kept.exists(), "an entry whose lock is a link is kept: prune cannot tell whether a run holds it"
    assert other.read_text() == "someone's file"


def test_a_lock_or_stored_result_in_the_place_of_another_kind_is_one_sentence(cache_dir):
    from isolib import transforms

    entry = _entry(cache_dir, "a" * 32, "minilm")
    integrity.lock_path(entry).mkdir()
    with pytest.raises(integrity.CacheError, match=f"^{integrity.lock_path(entry)} is a folder where a file belongs; "):
        cache.prune(everything=True)
    steps.memoized("step", {"seed": 0}, lambda: 1, code=[transforms])
    (stored,) = (cache_dir / "results" / "step").glob("*.jsonl")
    stored.unlink()
    stored.mkdir()
    with pytest.raises(integrity.CacheError, match=f"^{stored} is a folder where a file belongs; "):
        steps.memoized("step", {"seed": 0}, lambda: 1, code=[transforms])
    other = cache_dir / "results" / "other"
    other.write_text("a file where a step's folder belongs")
    with pytest.raises(integrity.CacheError, match=f"^{other} is a file where a folder belongs; "):
        steps.memoized("other", {"seed": 0}, lambda: 1, code=[transforms])


@pytest.mark.parametrize("action", ["list", "size", "verify", "prune"])
def test_a_cache_dir_that_is_a_file_is_refused_by_name(action, tmp_path, monkeypatch, capsys):
    from isolib import transforms

    file = tmp_path / "cache"
    file.write_text("not a folder")
    monkeypatch.setenv("ISOLIB_CACHE_DIR", str(file))
    assert main(["cache", action, *(["--all"] if action == "prune" else [])]) == 2
    assert f"ISOLIB_CACHE_DIR names {file}, which is a file, not a folder" in capsys.readouterr().err
    with pytest.raises(integrity.CacheError, match="ISOLIB_CACHE_DIR names .*, which is a file, not a folder"):
        steps.memoized("step", {"seed": 0}, lambda: 1, code=[transforms])
    assert file.read_text() == "not a folder"
