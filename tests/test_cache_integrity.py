"""A cache that never serves wrong data: resumes, arguments, damaged files, stored results, cache tools, full disks."""

import errno
import hashlib
import json
import os
import pickle
import shutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from filelock import FileLock

from isolib import cache, integrity, steps
from isolib import embed as embed_module
from isolib.integrity import CacheError, CacheWarning
from isolib.cli import main
from isolib.embed import cache_key, embed

TEXTS = ["the cat sat on the mat", "a man is playing a guitar", "isotropy of embeddings", "hi there",
         "the dog barks at the cat", "unbelievable results in the rain", "technically logical music",
         "the cat sat", "a man"]
REAL_SHARD = embed_module._extract_shard


@pytest.fixture
def tiny(tiny_models):
    """A 2-layer BERT folder: extractions take milliseconds."""
    return tiny_models["bert"]


def _count_shards(monkeypatch, *, stop_after=None):
    """Count the shards computed from now on; with ``stop_after``, interrupt the run after that many."""
    computed = []

    def shard(*args, **kwargs):
        if stop_after is not None and len(computed) == stop_after:
            raise KeyboardInterrupt
        computed.append(1)
        REAL_SHARD(*args, **kwargs)

    monkeypatch.setattr(embed_module, "_extract_shard", shard)
    return computed


def _clean(tiny, monkeypatch, cache_dir, **options):
    """The same extraction in a fresh cache, for reference."""
    monkeypatch.setenv("ISOLIB_CACHE_DIR", str(cache_dir.parent / f"clean-{len(list(cache_dir.parent.iterdir()))}"))
    result = embed(tiny, TEXTS, **options)
    monkeypatch.setenv("ISOLIB_CACHE_DIR", str(cache_dir))
    return result


def _assert_same(result, reference):
    assert result.tokens.equals(reference.tokens)
    for layer in reference.layers:
        np.testing.assert_array_equal(result.layer(layer), reference.layer(layer))


# --------------------------------------------------------------------------- 1. resume with another shard size
def test_a_resume_with_another_shard_size_loses_and_repeats_nothing(tiny, cache_dir, monkeypatch):
    _count_shards(monkeypatch, stop_after=2)
    with pytest.raises(KeyboardInterrupt):
        embed(tiny, TEXTS, layers=[0, -1], shard_size=2)
    # The batching is part of the key: shard size 3 is another entry, extracted whole.
    computed = _count_shards(monkeypatch)
    resumed = embed(tiny, TEXTS, layers=[0, -1], shard_size=3)
    assert len(computed) == 3
    assert sorted(resumed.tokens.sentence_id.unique()) == list(range(len(TEXTS)))
    assert not resumed.tokens.duplicated(["sentence_id", "position"]).any()
    _assert_same(resumed, _clean(tiny, monkeypatch, cache_dir, layers=[0, -1], shard_size=3))


def test_shards_of_another_layout_are_never_reused(tiny, cache_dir, monkeypatch):
    # The shards of shard_size=2 found where shard_size=3 resumes (a renamed folder, or one of an older
    # version without a recorded layout) would lose sentences 4-5: the folder starts over.
    _count_shards(monkeypatch, stop_after=2)
    with pytest.raises(KeyboardInterrupt):
        embed(tiny, TEXTS, layers=[-1], shard_size=2)
    (partial,) = (cache_dir / "embeddings").glob("*.partial")
    key = cache_key(embed_module.fingerprint(tiny), TEXTS, layers=[-1], max_length=512, dtype="float32",
                    batch_size=32, shard_size=3)
    partial.rename(partial.with_name(f"{key}.partial"))
    computed = _count_shards(monkeypatch)
    resumed = embed(tiny, TEXTS, layers=[-1], shard_size=3)
    assert len(computed) == 3
    _assert_same(resumed, _clean(tiny, monkeypatch, cache_dir, layers=[-1], shard_size=3))
    # Without layout.json (an older partial folder), the same.
    _count_shards(monkeypatch, stop_after=1)
    with pytest.raises(KeyboardInterrupt):
        embed(tiny, TEXTS, layers=[0], shard_size=2)
    (partial,) = (cache_dir / "embeddings").glob("*.partial")
    (partial / "layout.json").unlink()
    computed = _count_shards(monkeypatch)
    assert embed(tiny, TEXTS, layers=[0], shard_size=2).tokens.sentence_id.nunique() == len(TEXTS)
    assert len(computed) == 5


def test_the_batching_and_every_text_are_in_the_key():
    options = {"layers": None, "max_length": 512, "dtype": "float32", "batch_size": 32, "shard_size": 2000}
    base = cache_key("weights", TEXTS, **options)
    assert base != cache_key("weights", TEXTS, **{**options, "shard_size": 50})
    assert base != cache_key("weights", TEXTS, **{**options, "batch_size": 8})
    # A separator inside a text no longer makes two lists of texts one key.
    assert cache_key("w", ["a\x1eb", "c"], **options) != cache_key("w", ["a", "b\x1ec"], **options)


# --------------------------------------------------------------------------- 2. arguments checked before any work
@pytest.mark.parametrize(("options", "message"), [
    ({"batch_size": -1}, "batch_size must be at least 1, got -1"),
    ({"batch_size": 0}, "batch_size must be at least 1, got 0"),
    ({"batch_size": 2.5}, "batch_size must be an integer"),
    ({"shard_size": 0}, "shard_size must be at least 1"),
    ({"shard_size": "100"}, "shard_size must be an integer"),
    ({"max_length": 0}, "max_length must be at least 2, got 0"),
    ({"max_length": 1}, "max_length must be at least 2, got 1"),
])
def test_an_argument_that_cannot_shape_an_extraction_is_refused_before_any_work(options, message, tiny, cache_dir,
                                                                                 monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("no model is loaded for a refused call")

    monkeypatch.setattr(embed_module, "load_model", fail)
    with pytest.raises(ValueError, match=message):
        embed("minilm", TEXTS, **options)
    assert not (cache_dir / "embeddings").exists(), "nothing is stored"


def test_no_entry_ever_holds_arrays_no_forward_pass_wrote(tiny, cache_dir):
    with pytest.raises(ValueError, match="batch_size"):
        embed(tiny, TEXTS, batch_size=-1)
    result = embed(tiny, TEXTS)
    assert np.abs(np.asarray(result.layer(-1))).min(axis=1).max() > 0, "every row was computed"


def test_one_string_is_not_a_list_of_texts(cache_dir):
    with pytest.raises(TypeError, match=r"sentences must be a list of texts, not one str; pass \[text\]"):
        embed("minilm", "hello")
    with pytest.raises(TypeError, match="not one str"):
        embed_module.sentence_embeddings("minilm", "hello")


def test_max_length_leaves_room_for_a_token_besides_the_special_ones(tiny, cache_dir):
    with pytest.raises(ValueError, match="max_length must be at least 3 for .* got 2"):
        embed(tiny, TEXTS, max_length=2)  # [CLS] [SEP] and nothing else


def test_truncation_is_stated_with_its_count(tiny, cache_dir):
    texts = ["the cat sat", " ".join(["cat"] * 100), " ".join(["mat"] * 40)]
    with pytest.warns(UserWarning, match="2 of 3 sentences were longer than max_length=20 tokens and were cut"):
        result = embed(tiny, texts, max_length=20)
    assert result.tokens.groupby("sentence_id").size().max() == 20
    assert json.loads((result.path / "meta.json").read_text())["n_truncated"] == 2


# --------------------------------------------------------------------------- 3. damaged files
def _flip_byte(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


def _edit_header(path: Path, old: str, new: str) -> None:
    assert len(old) == len(new)
    data = path.read_bytes()
    header_end = data.index(b"\n") + 1
    assert data[:header_end].count(old.encode()) == 1
    path.write_bytes(data[:header_end].replace(old.encode(), new.encode()) + data[header_end:])


def _damage(folder: Path, how: str, n_tokens: int) -> None:
    layer = folder / "layer_02.npy"
    if how == "flipped byte in a layer":
        _flip_byte(layer, layer.stat().st_size - 7)
    elif how == "header shape":
        _edit_header(layer, f"({n_tokens}, 32)", f"({n_tokens - 1}, 32)")
    elif how == "header dtype":
        _edit_header(layer, "'<f4'", "'<i4'")
    elif how == "token table":
        table = folder / "tokens.parquet"
        _flip_byte(table, table.stat().st_size // 3)
    elif how == "n_sentences in meta.json":
        meta = json.loads((folder / "meta.json").read_text())
        (folder / "meta.json").write_text(json.dumps({**meta, "n_sentences": meta["n_sentences"] + 1}, indent=1))
    elif how == "meta.json nested 100,000 deep":
        (folder / "meta.json").write_text("[" * 100_000 + "]" * 100_000)


@pytest.mark.parametrize("how", ["flipped byte in a layer", "header shape", "header dtype", "token table",
                                 "n_sentences in meta.json", "meta.json nested 100,000 deep"])
@pytest.mark.parametrize("new_process", [False, True])
def test_a_damaged_entry_is_set_aside_and_extracted_again(how, new_process, tiny, cache_dir, monkeypatch):
    first = embed(tiny, TEXTS)
    reference = {layer: np.array(first.layer(layer)) for layer in first.layers}
    tokens = first.tokens.copy()
    stamps = {path: path.stat() for path in first.path.iterdir()}
    _damage(first.path, how, len(tokens))
    if new_process:
        # A new process has hashed nothing yet; the damage left the times as they were (bit rot).
        for path, stat in stamps.items():
            os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        integrity._HASHED.clear()
    computed = _count_shards(monkeypatch)
    with pytest.warns(CacheWarning, match="was damaged") as caught:
        again = embed(tiny, TEXTS)
    assert len([w for w in caught if issubclass(w.category, CacheWarning)]) == 1
    assert computed == [1], "extracted again"
    assert again.tokens.equals(tokens)
    for layer, values in reference.items():
        np.testing.assert_array_equal(again.layer(layer), values)
    names = [path.name for path in (cache_dir / "embeddings").iterdir() if path.is_dir()]
    assert sorted(names)[0] == first.path.name and sorted(names)[1].startswith(f"{first.path.name}.damaged-")
    # The set-aside folder is a leftover: listed as such and pruned once old.
    assert {entry.status for entry in cache.entries()} == {"complete", "leftover"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        embed(tiny, TEXTS)  # whole again: no warning


def test_cache_verify_hashes_every_entry(tiny, cache_dir):
    good = embed(tiny, TEXTS[:3])
    bad = embed(tiny, TEXTS)
    _flip_byte(bad.path / "layer_01.npy", 200)
    integrity._HASHED.clear()
    damaged = cache.verify()
    assert [entry.path.name.split(".")[0] for entry in damaged] == [bad.path.name]
    assert "layer_01.npy does not match the checksum" in damaged[0].problem
    assert good.path.exists() and not bad.path.exists()


def test_the_cache_verify_command_names_what_it_set_aside(tiny, cache_dir, capsys):
    from isolib.cli import main

    bad = embed(tiny, TEXTS)
    assert main(["cache", "verify"]) == 0 and "every entry matches its manifest." in capsys.readouterr().out
    _flip_byte(bad.path / "layer_01.npy", 200)
    integrity._HASHED.clear()
    assert main(["cache", "verify"]) == 0
    out = capsys.readouterr().out
    assert "layer_01.npy does not match the checksum" in out and "1 damaged entry set aside" in out


# --------------------------------------------------------------------------- 4. stored results
class Planted:
    """A pickle that, once loaded, would write a file: the attack of a writable cache folder."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (Path.write_text, (Path(self.marker), "code ran"))


def test_a_planted_pickle_is_never_loaded(cache_dir, tmp_path):
    from isolib import transforms

    inputs = {"seed": 0}
    steps.memoized("rows", inputs, lambda: {"spearman": 1.96}, code=[transforms])
    (stored,) = (cache_dir / "results" / "rows").glob("*.jsonl")
    stored.unlink()
    marker = tmp_path / "marker"
    planted = stored.with_suffix(".pkl")
    planted.write_bytes(pickle.dumps(Planted(marker)))
    assert steps.memoized("rows", inputs, lambda: {"spearman": 1.96}, code=[transforms]) == {"spearman": 1.96}
    assert not marker.exists(), "the pickle was never unpickled"
    assert not planted.exists(), "it is replaced by the stored value"
    # A planted file in the new format cannot name code either: only isolib's dataclasses are rebuilt.
    forged = {"$": "dataclass", "module": "subprocess", "qualname": "Popen", "fields": {"args": ["true"]}}
    with pytest.raises(ValueError, match="not allowed"):
        steps.decode_value(forged)


def test_every_single_byte_corruption_of_a_stored_result_is_computed_again(cache_dir):
    from isolib import transforms

    row = {"method": "GMM", "seed": np.nan, "spearman": np.float64(1.96), "pearson": 0.5}
    steps.memoized("rows", {"seed": 0}, lambda: row, code=[transforms])
    (stored,) = (cache_dir / "results" / "rows").glob("*.jsonl")
    original = stored.read_bytes()
    for offset in range(len(original)):
        damaged = bytearray(original)
        damaged[offset] ^= 0x04
        stored.write_bytes(bytes(damaged))
        calls = []
        with pytest.warns(CacheWarning, match="was damaged"):
            value = steps.memoized("rows", {"seed": 0}, lambda: calls.append(1) or row, code=[transforms])
        assert calls == [1] and value is row, f"byte {offset}"
        assert stored.read_bytes() == original


def test_a_stored_value_that_fails_to_decode_is_set_aside_and_computed_again(cache_dir):
    from isolib import transforms

    steps.memoized("rows", {"seed": 0}, lambda: [1.0], code=[transforms])
    (stored,) = (cache_dir / "results" / "rows").glob("*.jsonl")
    payload = b"[" * 100_000 + b"]" * 100_000  # valid JSON, checksum and size right: only decoding fails
    header = json.dumps({"format": steps.RESULT_FORMAT, "size": len(payload),
                         "sha256": hashlib.sha256(payload).hexdigest()})
    stored.write_bytes(header.encode() + b"\n" + payload)
    with pytest.warns(CacheWarning, match="was damaged .*it cannot be decoded") as caught:
        assert steps.memoized("rows", {"seed": 0}, lambda: [2.0], code=[transforms]) == [2.0]
    assert len([w for w in caught if issubclass(w.category, CacheWarning)]) == 1
    (aside,) = (cache_dir / "results" / "rows").glob("*.damaged-*")
    assert aside.read_bytes().endswith(payload), "set aside, not lost"
    assert steps.memoized("rows", {"seed": 0}, lambda: [3.0], code=[transforms]) == [2.0]


def _same(a, b) -> None:
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a, b, check_exact=True)
        assert a.index.dtype == b.index.dtype and list(a.dtypes) == list(b.dtypes)
    elif isinstance(a, pd.Series):
        pd.testing.assert_series_equal(a, b, check_exact=True)
    elif isinstance(a, np.ndarray) and a.dtype == object:
        assert b.dtype == object and a.shape == b.shape
        _same(a.tolist(), b.tolist())
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for key in a:
            _same(a[key], b[key])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif hasattr(a, "__dataclass_fields__"):
        for name in a.__dataclass_fields__:
            _same(getattr(a, name), getattr(b, name))
    elif isinstance(a, float) and np.isnan(a):
        assert np.isnan(b)
    else:
        assert a == b


def _stored_values():
    from isolib.studies.ethayarajh_contextuality.compute import LayerStatistics, ViewTables

    per_word = pd.DataFrame({"n_contexts": np.array([5, 7], dtype=np.int64), "self_similarity": [0.25, np.nan],
                             "mev": [0.1, 1 / 3]}, index=pd.Index(["cat", "mat"], name="word"))
    per_layer = pd.DataFrame({"model": ["smollm2 (start token)"] * 2, "layer": [0, 1], "mean_norm": [1e300, -0.0]})
    per_sentence = pd.Series([0.5, np.nan], index=pd.Index([3, 7], name="sentence_id"), name="intra_similarity")
    baselines = pd.DataFrame({"baseline_cosine": [0.25, 0.5], "mev_baseline": [0.125, np.nan]},
                             index=pd.Index([0, 1], name="draw"))
    return {
        "rajaee_sts_rows": {"method": "GMM", "seed": np.nan, "pearson": np.float64(0.98), "spearman": 1.96,
                            "iw_tokens": np.float32(0.5)},
        "rajaee_sweep": np.float64(65.43210987654321),
        "rajaee_finetune": (0.875, pd.DataFrame({"layer": [1, 2], "processed": [False, True], "i_w": [0.1, 0.2]})),
        "rajaee_finetune without geometry": (0.5, None),
        "ethayarajh_layers": LayerStatistics({"n_words": 2, "mev": 0.1, "mean_norm": float("inf")}, baselines,
                                             per_word, per_sentence),
        "ethayarajh_views": ViewTables("smollm2", "a" * 32, True, (0, 12, 30), 31, 100, 80, 5, 40,
                                       pd.Series([1.0, 165.2], index=pd.Index([0, 12], name="layer"),
                                                 name="first_position_norm_ratio"),
                                       per_layer, per_word.reset_index().assign(layer=0),
                                       per_sentence.reset_index().assign(model="smollm2", layer=0),
                                       baselines.reset_index().assign(model="smollm2", layer=0),
                                       pd.DataFrame({"model": pd.Categorical(["a", "b"]), "value": [1, 2]})),
        "containers": {"points": np.arange(6.0).reshape(3, 2), "words": np.array(["a", 1, None], dtype=object),
                       3: [1, "x", None, True], ("a", 1): pd.Series([1, None], dtype="Int64"),
                       "multi": pd.DataFrame({"x": [1.5, 2.5]}, index=pd.MultiIndex.from_tuples([("a", 1), ("b", 2)])),
                       "strings": pd.Series(["p", None], dtype=pd.StringDtype("python", na_value=pd.NA))},
    }


@pytest.mark.parametrize("kind", list(_stored_values()))
def test_every_kind_of_stored_result_comes_back_exactly(kind, cache_dir):
    from isolib import transforms

    value = _stored_values()[kind]
    assert steps.memoized(kind, {"seed": 0}, lambda: value, code=[transforms]) is value
    integrity._HASHED.clear()
    read = steps.memoized(kind, {"seed": 0}, lambda: pytest.fail("computed again"), code=[transforms])
    _same(read, value)


def test_a_value_that_cannot_be_stored_is_refused(cache_dir):
    from isolib import transforms

    with pytest.raises(TypeError, match="cannot store a value of type object"):
        steps.memoized("odd", {"seed": 0}, lambda: object(), code=[transforms])
    assert not list((cache_dir / "results" / "odd").glob("*.jsonl"))


# --------------------------------------------------------------------------- 5. the cache tools
def test_a_broken_meta_json_is_listed_by_folder_and_pruned(tiny, cache_dir, capsys):
    good = embed(tiny, TEXTS[:3])
    broken = embed(tiny, TEXTS)
    (broken.path / "meta.json").write_text('{"model": "x\n\t"}')  # an invalid control character
    (cache_dir / "embeddings" / ("f" * 32)).mkdir()  # a trusted name without meta.json
    found = {entry.path.name: entry for entry in cache.entries()}
    assert found[broken.path.name].status == "broken" and "meta.json is unreadable" in found[broken.path.name].problem
    assert (found["f" * 32].status, found["f" * 32].problem) == ("broken", "meta.json is missing")
    assert found[good.path.name].status == "complete"
    for action in ("list", "size"):
        assert main(["cache", action]) == 0
    assert broken.path.name in capsys.readouterr().out
    assert main(["cache", "prune", "--folder", broken.path.name]) == 0
    assert not broken.path.exists() and good.path.exists()
    assert main(["cache", "prune", "--all"]) == 0
    assert not list((cache_dir / "embeddings").iterdir()), "entries and lock files are gone"


def test_prune_skips_an_entry_being_computed_and_removes_free_locks(tiny, cache_dir):
    done = embed(tiny, TEXTS[:3])
    busy = embed(tiny, TEXTS)
    with FileLock(integrity.lock_path(busy.path)):
        with pytest.warns(CacheWarning, match=f"Skipped {busy.path.name}: a running process is computing it"):
            removed = cache.prune(everything=True)
        assert [entry.path.name for entry in removed] == [done.path.name]
        assert busy.path.exists() and integrity.lock_path(busy.path).exists()
    assert not integrity.lock_path(done.path).exists()
    cache.prune(everything=True)
    assert not list((cache_dir / "embeddings").iterdir())


def test_unpacked_models_are_listed_sized_and_pruned(cache_dir, capsys):
    folder = cache_dir / "models" / "all-mpnet-base-v2"
    (folder / "model").mkdir(parents=True)
    (folder / "model" / "model.safetensors").write_bytes(b"w" * 5000)
    (folder / ".complete").touch()
    (entry,) = cache.entries()
    assert (entry.model, entry.status, entry.rows, entry.size) == ("mpnet", "model", "model files", 5000)
    assert main(["cache", "size"]) == 0 and "mpnet" in capsys.readouterr().out
    assert [removed.path for removed in cache.prune(model="mpnet")] == [folder]
    assert not folder.exists()


def test_a_reader_whose_entry_is_pruned_gets_one_sentence(tiny, cache_dir):
    result = embed(tiny, TEXTS, layers=[0, -1])
    kept = result.layer(0)  # already mapped: still readable after the prune
    cache.prune(everything=True)
    with pytest.raises(CacheError, match="was deleted .pruned.. while this run was reading it; call embed again"):
        result.layer(-1)
    assert kept.shape[0] == len(result.tokens)


def test_cache_list_shows_entries_of_an_older_format_as_outdated(tiny, cache_dir):
    entry = embed(tiny, TEXTS).path
    meta = json.loads((entry / "meta.json").read_text())
    (entry / "meta.json").write_text(json.dumps({**meta, "format": 1}))
    (found,) = cache.entries()
    assert found.status == "outdated"


def _unwritable(monkeypatch, root: Path, code: int) -> None:
    """Make writes under ``root`` fail with ``code`` (EROFS: a read-only disk; EACCES: no permission).

    Simulated: chmod does not stop root, whom the tests may run as.
    """
    real_open, real_mkdir = os.open, os.mkdir

    def refuse(path, writes: bool) -> None:
        if writes and Path(path).is_relative_to(root):
            raise OSError(code, os.strerror(code), str(path))

    def open_(path, flags, *args, **kwargs):
        refuse(path, flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))
        return real_open(path, flags, *args, **kwargs)

    def mkdir(path, *args, **kwargs):
        refuse(path, not os.path.lexists(path))  # an existing folder: EEXIST, as on a read-only disk
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_)
    monkeypatch.setattr(os, "mkdir", mkdir)


@pytest.mark.parametrize("code, problem", [(errno.EROFS, "is on a read-only file system; set ISOLIB_CACHE_DIR"),
                                           (errno.EACCES, r"cannot be used \(permission denied\); give this user")])
def test_a_cache_that_cannot_be_written_is_one_sentence(code, problem, tiny, cache_dir, monkeypatch):
    from isolib import transforms

    (cache_dir / "embeddings").mkdir(parents=True)
    _unwritable(monkeypatch, cache_dir, code)
    with pytest.raises(CacheError, match=rf"^\S+\.lock {problem}"):
        embed(tiny, TEXTS)
    with pytest.raises(CacheError, match=rf"^\S+results.rows {problem}"):
        steps.memoized("rows", {"seed": 0}, lambda: 1.0, code=[transforms])


def test_a_lock_that_is_a_folder_is_one_sentence(tiny, cache_dir):
    entry = embed(tiny, TEXTS).path
    shutil.rmtree(entry)
    integrity.lock_path(entry).unlink()
    integrity.lock_path(entry).mkdir()
    with pytest.raises(CacheError, match=f"^{integrity.lock_path(entry)} is a folder where a file belongs; "):
        embed(tiny, TEXTS)


# --------------------------------------------------------------------------- 6. a full disk
def test_too_little_space_is_one_sentence_before_anything_is_written(tiny, cache_dir, monkeypatch):
    real_usage = shutil.disk_usage
    monkeypatch.setattr(cache.shutil, "disk_usage", lambda path: real_usage(path)._replace(free=1000))
    with pytest.raises(CacheError, match=r"The cache folder .*embeddings has 1000 B free but this step needs "
                                         r"[\d.]+ KB; free space there .*ISOLIB_CACHE_DIR"):
        embed(tiny, TEXTS)
    assert not [path for path in (cache_dir / "embeddings").iterdir() if path.is_dir() and "." not in path.name]
    monkeypatch.setattr(cache.shutil, "disk_usage", real_usage)
    assert embed(tiny, TEXTS).tokens.sentence_id.nunique() == len(TEXTS)


@pytest.mark.parametrize("where", ["shard", "assembly"])
def test_no_space_while_writing_is_one_sentence_and_nothing_is_trusted(where, tiny, cache_dir, monkeypatch):
    real_reserve = embed_module.reserve

    def full(path):
        if (where == "assembly") == (Path(path).parent.name == "assembled"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_reserve(path)

    monkeypatch.setattr(embed_module, "reserve", full)
    with pytest.raises(CacheError, match="The cache folder .* free but this step needs"):
        embed(tiny, TEXTS, shard_size=4)
    trusted = [path for path in (cache_dir / "embeddings").iterdir() if path.is_dir() and "." not in path.name]
    assert trusted == []
    monkeypatch.setattr(embed_module, "reserve", real_reserve)
    computed = _count_shards(monkeypatch)
    resumed = embed(tiny, TEXTS, shard_size=4)
    assert len(computed) == (3 if where == "shard" else 0), "finished shards are kept"
    _assert_same(resumed, _clean(tiny, monkeypatch, cache_dir, shard_size=4))


def test_no_space_for_a_stored_result_is_one_sentence(cache_dir, monkeypatch):
    from isolib import transforms

    def full(self, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as patched:
        patched.setattr(Path, "write_bytes", full)
        with pytest.raises(CacheError, match="The cache folder .*results.rows has .* free but this step needs"):
            steps.memoized("rows", {"seed": 0}, lambda: 1.0, code=[transforms])
    assert not list((cache_dir / "results" / "rows").iterdir())
