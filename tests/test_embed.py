"""Embedding extraction: word alignment, padding, batching and the on-disk cache."""

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from isolib import datasets
from isolib import embed as embed_module
from isolib.embed import (
    embed,
    embed_views,
    first_position_norm_ratio,
    is_punctuation,
    token_table,
    unit_text,
)
from isolib.errors import ModelError
from isolib.views import View

pytestmark = pytest.mark.models

SENTENCES = [
    "The unbelievable cat sat on the mat.",
    "Hi",
    "A man is playing a guitar while singing loudly in the rain.",
    "Isotropy measures how uniformly embeddings occupy their space.",
]


def test_token_table_flags_special_tokens(minilm):
    table = token_table(minilm.tokenizer, SENTENCES[:2])
    first = table[table.sentence_id == 0]
    assert first.token.iloc[0] == "[CLS]" and first.token.iloc[-1] == "[SEP]"
    assert first.is_special.tolist() == [True] + [False] * (len(first) - 2) + [True]
    assert (table.word_id[table.is_special] == -1).all() and (table.word[table.is_special] == "").all()


@pytest.mark.parametrize(("fixture", "word"), [("minilm", "Isotropy"), ("smollm2", "unbelievable")])
def test_a_word_split_into_pieces_has_one_word_id(fixture, word, request):
    table = token_table(request.getfixturevalue(fixture).tokenizer, SENTENCES)
    pieces = table[table.word == word]
    assert len(pieces) >= 2, "the word should be split into several pieces"
    assert pieces.word_id.nunique() == 1 and pieces.sentence_id.nunique() == 1
    assert (np.diff(pieces.position) == 1).all()


@pytest.mark.parametrize("fixture", ["minilm", "smollm2"])
def test_a_sentence_is_the_same_batched_or_alone(fixture, request, cache_dir):
    loaded = request.getfixturevalue(fixture)
    batched = embed(loaded, SENTENCES, batch_size=4)
    for i, sentence in enumerate(SENTENCES):
        alone = embed(loaded, [sentence], batch_size=1)
        rows = (batched.tokens.sentence_id == i).to_numpy()
        assert rows.sum() == len(alone.tokens)
        for layer in batched.layers:
            reference = np.asarray(alone.layer(layer))
            # Padding changes GEMM shapes only: agreement to 1e-5 of the layer's scale
            # (SmolLM2's middle layers have coordinates in the thousands).
            error = np.abs(np.asarray(batched.layer(layer))[rows] - reference).max()
            assert error <= 1e-5 * np.abs(reference).max()


def test_the_first_position_of_a_decoder_three_ways(smollm2, cache_dir):
    kept = embed(smollm2, SENTENCES, layers=[0, 12, -1])
    assert not kept.tokens.is_special.any(), "SmolLM2 puts no start token before a sentence"
    ratio = first_position_norm_ratio(kept)
    assert list(ratio.index) == [0, 12, 30]
    # The first word is the attention sink: at layer 12 its norm is about 165 times the others'
    # (on these four sentences); in the input layer it is a word like any other.
    assert ratio[12] > 50 and 0.5 < ratio[0] < 2

    # (a) exactly one flagged special token (the tokenizer's start token) leads each sentence.
    started = embed(smollm2, SENTENCES, layers=[0, 12, -1], first_position="start_token")
    assert len(started.tokens) == len(kept.tokens) + len(SENTENCES)
    special = started.tokens[started.tokens.is_special]
    assert (special.position == 0).all() and special.sentence_id.tolist() == list(range(len(SENTENCES)))
    assert set(special.token) == {smollm2.tokenizer.bos_token} and (special.word_id == -1).all()
    content = started.tokens[~started.tokens.is_special]
    assert content.token.tolist() == kept.tokens.token.tolist()
    assert (content.position.to_numpy() == kept.tokens.position.to_numpy() + 1).all()
    # Behind a start token, the first word is no longer the sink.
    assert first_position_norm_ratio(started)[12] < 2

    # (b) exactly the position-0 rows are removed, from the table and from every layer, except the
    # only token of a one-token sentence ("Hi"), so that every sentence still has a vector.
    dropped = embed(smollm2, SENTENCES, layers=[0, 12, -1], first_position="drop")
    assert dropped.path == kept.path, "dropping reuses the extraction"
    one_token = kept.tokens.sentence_id == SENTENCES.index("Hi")
    assert one_token.sum() == 1
    expected = (kept.tokens.position.to_numpy() != 0) | one_token.to_numpy()
    assert len(dropped.tokens) == len(kept.tokens) - len(SENTENCES) + 1
    assert (dropped.tokens.position[dropped.tokens.sentence_id != SENTENCES.index("Hi")] > 0).all()
    assert dropped.tokens.token.tolist() == kept.tokens.token[expected].tolist()
    for layer in (0, 12, 30):
        np.testing.assert_array_equal(dropped.layer(layer), np.asarray(kept.layer(layer))[expected])


def test_views_are_extracted_for_a_decoder_only(minilm, smollm2, cache_dir):
    decoder = embed_views(smollm2, SENTENCES[:2], views=["start_token", "drop"], layers=[-1])
    assert list(decoder) == ["smollm2", "smollm2 (start token)", "smollm2 (position 0 dropped)"]
    assert [e.first_position for e in decoder.values()] == ["keep", "start_token", "drop"]
    encoder = embed_views(minilm, SENTENCES[:2], views=["start_token"], layers=[-1])
    assert list(encoder) == ["minilm"]
    with pytest.raises(ValueError, match="views must be among"):
        embed_views(minilm, SENTENCES[:2], views=["keep"])
    assert View("smollm2", "drop").label == "smollm2 (position 0 dropped)"
    assert View.parse("smollm2 (position 0 dropped)") == View("smollm2", "drop")
    assert View.parse("smollm2 (start token)") == View("smollm2", "start_token")
    assert View.parse("minilm") == View("minilm")
    assert View.parse("minilm (symbols kept)") == View("minilm", symbols_kept=True)
    assert all(View.parse(view.label) == view for view in (View("a/b-c", position, kept) for position in
                                                            ("keep", "start_token", "drop") for kept in (False, True)))


def test_an_encoder_already_starts_with_a_special_token(minilm, cache_dir):
    kept = embed(minilm, SENTENCES[:2], layers=[-1])
    started = embed(minilm, SENTENCES[:2], layers=[-1], first_position="start_token")
    assert started.tokens.equals(kept.tokens)
    np.testing.assert_allclose(started.layer(-1), kept.layer(-1), atol=1e-6)
    with pytest.raises(ValueError, match="first_position must be one of"):
        embed(minilm, SENTENCES[:2], first_position="first")


def test_rows_follow_the_token_table(minilm, cache_dir):
    result = embed(minilm, SENTENCES, layers=[0, -1])
    assert result.layers == (0, 6) and result.dim == 384
    assert result.layer(-1).shape == (len(result.tokens), 384)
    assert (result.tokens.groupby("sentence_id").position.apply(lambda p: (p.diff().dropna() == 1).all())).all()
    with pytest.raises(ModelError, match="was not extracted"):
        result.layer(3)


@pytest.mark.parametrize("first_position", ["keep", "start_token"])
def test_without_special_tokens_the_same_rows_are_stored_and_no_other(minilm, smollm2, cache_dir, first_position):
    # [CLS] and [SEP] for the encoder; the start token, if prepended, for the decoder.
    specials_per_sentence = {"minilm": 2, "smollm2": int(first_position == "start_token")}
    for model in (minilm, smollm2):
        every = embed(model, SENTENCES, layers=[0, -1], first_position=first_position)
        content = embed(model, SENTENCES, layers=[0, -1], first_position=first_position, keep_special=False)
        kept = ~every.tokens.is_special.to_numpy()
        assert len(kept) - kept.sum() == specials_per_sentence[model.name] * len(SENTENCES)
        assert content.path != every.path and not content.tokens.is_special.any()
        assert content.tokens.equals(every.tokens[kept].reset_index(drop=True))
        for layer in (0, -1):
            np.testing.assert_array_equal(content.layer(layer), every.layer(layer)[kept])
        assert content.starts_with_content == every.starts_with_content


def test_float16_storage(minilm, cache_dir):
    half = embed(minilm, SENTENCES, layers=-1, dtype="float16")
    full = embed(minilm, SENTENCES, layers=-1)
    assert half.layer(-1).dtype == np.float16
    np.testing.assert_allclose(half.layer(-1), full.layer(-1), atol=1e-2, rtol=1e-2)


@pytest.mark.parametrize(("sentences", "kwargs", "message"), [
    ([], {}, "sentences is empty"),
    (["fine", "  "], {}, "empty or not strings"),
    (["fine"], {"dtype": "int8"}, "dtype must be one of"),
])
def test_bad_input(minilm, cache_dir, sentences, kwargs, message):
    with pytest.raises(ValueError, match=message):
        embed(minilm, sentences, **kwargs)


def test_layer_out_of_range(minilm, cache_dir):
    with pytest.raises(ModelError, match="out of range"):
        embed(minilm, SENTENCES, layers=[7])


def test_second_call_reads_the_cache_without_the_model(minilm, cache_dir, monkeypatch):
    first = embed("minilm", SENTENCES, layers=[0, 3])

    def fail(*args, **kwargs):
        raise AssertionError("the model must not be loaded on a cache hit")

    monkeypatch.setattr(embed_module, "load_model", fail)
    second = embed("minilm", SENTENCES, layers=[0, 3])
    assert second.path == first.path
    for layer in (0, 3):
        np.testing.assert_array_equal(second.layer(layer), first.layer(layer))
    assert second.tokens.equals(first.tokens)


KILLED_RUN = textwrap.dedent("""
    import os, signal, sys
    from isolib import embed as module
    point = sys.argv[1]
    real_shard, real_assemble = module._extract_shard, module._assemble
    done = []

    def shard(*args, **kwargs):
        real_shard(*args, **kwargs)          # writes the shard into its temporary folder
        done.append(1)
        if point == "shard" and len(done) == 2:
            os.kill(os.getpid(), signal.SIGKILL)   # killed before the rename

    def assemble(shards, folder, kept, meta):
        real_assemble(shards, folder, kept, meta)
        os.kill(os.getpid(), signal.SIGKILL)       # killed with the entry complete but not renamed

    module._extract_shard = shard
    if point == "assemble":
        module._assemble = assemble
    module.embed("minilm", SENTENCES, layers=[0, -1], shard_size=1)
""")


@pytest.mark.parametrize("point", ["shard", "assemble"])
def test_a_killed_run_leaves_nothing_trusted_and_the_rerun_resumes(point, minilm, cache_dir, monkeypatch):
    script = f"SENTENCES = {SENTENCES!r}\n" + KILLED_RUN
    child = subprocess.run([sys.executable, "-c", script, point], env={**os.environ}, capture_output=True)
    assert child.returncode == -signal.SIGKILL, child.stderr.decode()
    # Only a folder named exactly by its key is ever read; temporary and partial ones are not.
    entries = [e.name for e in (cache_dir / "embeddings").iterdir() if e.is_dir()]  # lock files aside
    assert entries and all(".tmp-" in name or name.endswith(".partial") for name in entries), entries

    computed = []
    real_shard = embed_module._extract_shard
    monkeypatch.setattr(embed_module, "_extract_shard",
                        lambda *a, **k: computed.append(1) or real_shard(*a, **k))
    resumed = embed(minilm, SENTENCES, layers=[0, -1], shard_size=1)
    assert len(computed) == (len(SENTENCES) - 1 if point == "shard" else 0)
    assert [p.name for p in (cache_dir / "embeddings").iterdir() if p.is_dir()] == [resumed.path.name]

    monkeypatch.setenv("ISOLIB_CACHE_DIR", str(cache_dir.parent / "clean"))
    clean = embed(minilm, SENTENCES, layers=[0, -1], shard_size=1)
    assert resumed.tokens.equals(clean.tokens)
    # Shards computed in another process may differ in the last float bits (thread scheduling).
    np.testing.assert_allclose(resumed.layer(-1), clean.layer(-1), rtol=1e-5, atol=1e-5)


CONCURRENT_RUN = textwrap.dedent("""
    import sys
    import numpy as np
    from isolib import embed as module

    computed = []
    real = module._extract_shard
    module._extract_shard = lambda *a, **k: computed.append(1) or real(*a, **k)
    texts = [f"sentence number {i} is about a cat on a mat" for i in range(240)]
    result = module.embed("minilm", texts, layers=[-1], shard_size=40)
    np.save(sys.argv[1], np.asarray(result.layer(-1)))
    print(len(computed), result.path.name)
""")


def test_two_processes_asking_for_the_same_embeddings_compute_them_once(cache_dir, tmp_path):
    runs = [subprocess.Popen([sys.executable, "-c", CONCURRENT_RUN, str(tmp_path / f"run{i}.npy")],
                             env={**os.environ}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for i in range(2)]
    outputs = [run.communicate(timeout=600) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], [err for _, err in outputs]
    counts, keys = zip(*(out.split() for out, _ in outputs))
    assert sorted(map(int, counts)) == [0, 6], "one process computes the six shards, the other waits and reads them"
    folders = [path.name for path in (cache_dir / "embeddings").iterdir() if path.is_dir()]
    assert folders == [keys[0]] == [keys[1]], "exactly one valid entry, no partial or temporary folder left"
    np.testing.assert_array_equal(np.load(tmp_path / "run0.npy"), np.load(tmp_path / "run1.npy"))


@pytest.mark.parametrize("text, expected", [
    (".", True), (",", True), ("--", True), ("'", True), ("", True), ("##.", True), ("?!", True),
    ("5.3", False), ("'s", False), ("dog", False), ("##s", False), ("café", False), ("42", False),
])
def test_punctuation_means_no_letter_and_no_digit(text, expected):
    assert is_punctuation(text) is expected


@pytest.mark.parametrize("piece, text", [("Ġthe", "the"), ("▁the", "the"), ("##ing", "##ing"), ("the", "the"),
                                         ("Ġ", ""), ("ĠĠx", "Ġx")])
def test_unit_text_drops_only_the_leading_space_marker(piece, text):
    assert unit_text(piece) == text


def test_sentence_vectors_equal_sentence_transformers_encode(cache_dir):
    sentence_transformers = pytest.importorskip("sentence_transformers")
    from isolib.embed import sentence_embeddings
    from isolib.models import _minilm_dir, sentence_config

    if not datasets.dataset_path("rt-polarity").exists():
        pytest.skip("rt-polarity is not available")
    texts = datasets.load_texts("rt-polarity", split=None).text.tolist()[:40] + SENTENCES
    texts.append(" ".join(["word"] * 400))  # longer than max_seq_length: truncated the same way
    config = sentence_config("minilm")
    assert (config.pooling, config.normalize, config.max_seq_length) == ("mean", True, 256)
    ours = sentence_embeddings("minilm", texts)
    reference = sentence_transformers.SentenceTransformer(str(_minilm_dir()), device="cpu").encode(texts, batch_size=16)
    assert ours.shape == reference.shape == (len(texts), 384)
    np.testing.assert_allclose(ours, reference, atol=1e-5)
    with pytest.raises(ModelError, match="'smollm2' is not a sentence-transformers model"):
        sentence_config("smollm2")


def test_a_sentence_transformers_folder_is_read_like_a_hub_id(cache_dir, tiny_sentence_model, tmp_path):
    sentence_transformers = pytest.importorskip("sentence_transformers")
    from isolib.embed import sentence_embeddings
    from isolib.models import sentence_config

    config = sentence_config(str(tiny_sentence_model))
    assert (config.pooling, config.normalize, config.max_seq_length) == ("cls", False, 16)
    texts = SENTENCES + [" ".join(["cat"] * 40)]  # longer than max_seq_length: truncated the same way
    ours = sentence_embeddings(str(tiny_sentence_model), texts)
    reference = sentence_transformers.SentenceTransformer(str(tiny_sentence_model), device="cpu").encode(texts)
    np.testing.assert_allclose(ours, reference, atol=1e-5)
    with pytest.raises(ModelError, match="has no modules.json"):
        sentence_config(str(tmp_path))


def test_sentence_vectors_are_cached_without_their_token_vectors(minilm, cache_dir, monkeypatch):
    from isolib import cache
    from isolib.embed import sentence_embeddings

    first = sentence_embeddings("minilm", SENTENCES)
    found = cache.entries()
    assert [(entry.rows, entry.status) for entry in found] == [("sentences", "complete")], "the token entry is removed"
    assert found[0].size < 4 * 384 * len(SENTENCES) + 2000

    def fail(*args, **kwargs):
        raise AssertionError("a cached sentence entry needs no model")

    monkeypatch.setattr(embed_module, "load_model", fail)
    np.testing.assert_array_equal(sentence_embeddings("minilm", SENTENCES), first)


def test_an_assembly_stopped_part_way_resumes_and_never_holds_two_copies(minilm, cache_dir, monkeypatch):
    real_replace = embed_module.os.replace

    def stop_before_the_last_layer_is_renamed(source, target):
        if Path(target).name == "layer_06.npy":
            raise KeyboardInterrupt
        real_replace(source, target)

    monkeypatch.setattr(embed_module.os, "replace", stop_before_the_last_layer_is_renamed)
    with pytest.raises(KeyboardInterrupt):
        embed(minilm, SENTENCES, layers=[0, -1], shard_size=2)
    monkeypatch.setattr(embed_module.os, "replace", real_replace)
    (partial,) = (cache_dir / "embeddings").glob("*.partial")
    shards = sorted(partial.glob("shard_*"))
    # Layer 0 is assembled and gone from the shards; layer 6 is still in the shards, its copy not yet trusted.
    assembled = sorted(path.name for path in (partial / "assembled").iterdir())
    assert assembled[0] == "layer_00.npy" and assembled[1].startswith("layer_06.npy.tmp-") and len(assembled) == 2
    assert not any((shard / "layer_00.npy").exists() for shard in shards)
    assert all((shard / "layer_06.npy").exists() for shard in shards)

    computed = []
    real_shard = embed_module._extract_shard
    monkeypatch.setattr(embed_module, "_extract_shard", lambda *a, **k: computed.append(1) or real_shard(*a, **k))
    resumed = embed(minilm, SENTENCES, layers=[0, -1], shard_size=2)
    assert computed == [] and not partial.exists()
    monkeypatch.setenv("ISOLIB_CACHE_DIR", str(cache_dir.parent / "clean"))
    clean = embed(minilm, SENTENCES, layers=[0, -1], shard_size=2)
    assert resumed.tokens.equals(clean.tokens)
    for layer in (0, -1):
        np.testing.assert_array_equal(resumed.layer(layer), clean.layer(layer))
