"""The paper profile's model families, exercised offline on tiny randomly initialised models.

BERT and DistilBERT (WordPiece), GPT-2 and RoBERTa (byte-level BPE) and OpenAI GPT (BPE with ``</w>``, no
special tokens at all) are built from their ``transformers`` configurations with tokenizers trained on the
fly (``conftest.build_tiny_model``), saved to a folder and loaded by its path with ``from_pretrained``, as a Hub id is.
"""

import numpy as np
import pytest
import torch

from isolib.embed import embed, token_table
from isolib.errors import ModelError
from isolib.models import load_model

FAMILIES = ["bert", "distilbert", "gpt2", "openai-gpt", "roberta"]
DECODERS = {"gpt2", "openai-gpt"}
SENTENCES = ["the isotropically cat sat on the mat", "hi", "a man is playing a guitar in the rain"]


@pytest.fixture(scope="module")
def loaded(tiny_models):
    return {family: load_model(path) for family, path in tiny_models.items()}


@pytest.mark.parametrize("family", FAMILIES)
def test_hidden_states_count_and_layer_zero(family, loaded):
    model = loaded[family]
    assert (model.n_layers, model.dim) == (3, 32)
    assert model.kind == ("decoder" if family in DECODERS else "encoder")
    batch = model.tokenizer(SENTENCES[:1], return_tensors="pt")
    with torch.no_grad():
        hidden_states = model.model(**batch).hidden_states
    assert len(hidden_states) == 3
    # Layer 0 is the input embedding output: token plus absolute position embeddings where the family has them.
    torch.testing.assert_close(hidden_states[0], model.input_embedding_output(batch["input_ids"]), rtol=0, atol=1e-6)


@pytest.mark.parametrize("family", FAMILIES)
def test_words_survive_subword_splits(family, loaded):
    table = token_table(loaded[family].tokenizer, SENTENCES)
    for sentence_id, sentence in enumerate(SENTENCES):
        rows = table[(table.sentence_id == sentence_id) & ~table.is_special]
        words = rows.drop_duplicates("word_id")
        # One word id per whitespace word, in order, with no shift after a word split into pieces.
        assert words.word.tolist() == sentence.split()
        assert words.word_id.tolist() == list(range(len(sentence.split())))
    pieces = table[table.word == "isotropically"]
    assert len(pieces) >= 2 and pieces.word_id.nunique() == 1 and (np.diff(pieces.position) == 1).all()


@pytest.mark.parametrize("family", FAMILIES)
def test_special_tokens_are_flagged(family, loaded):
    table = token_table(loaded[family].tokenizer, SENTENCES)
    first = table[table.sentence_id == 0]
    if family in DECODERS:
        assert not table.is_special.any(), "GPT-2 and OpenAI GPT add no special token"
    else:
        assert first.is_special.tolist() == [True] + [False] * (len(first) - 2) + [True]
        assert (table.word[table.is_special] == "").all()


def test_a_start_token_for_gpt2_and_a_clear_error_for_openai_gpt(loaded):
    started = token_table(loaded["gpt2"].tokenizer, SENTENCES, start_token=True)
    special = started[started.is_special]
    assert special.position.tolist() == [0, 0, 0] and set(special.token) == {"<|endoftext|>"}
    with pytest.raises(ModelError, match="has no start token"):
        token_table(loaded["openai-gpt"].tokenizer, SENTENCES, start_token=True)


@pytest.mark.parametrize("family", FAMILIES)
def test_batched_equals_alone_even_without_a_pad_token(family, tiny_models, cache_dir):
    batched = embed(tiny_models[family], SENTENCES, batch_size=3)
    for i, sentence in enumerate(SENTENCES):
        alone = embed(tiny_models[family], [sentence], batch_size=1)
        rows = (batched.tokens.sentence_id == i).to_numpy()
        assert rows.sum() == len(alone.tokens)
        for layer in batched.layers:
            np.testing.assert_allclose(np.asarray(batched.layer(layer))[rows], alone.layer(layer), atol=1e-5)


def test_notebook_01_runs_end_to_end_on_tiny_bert_and_gpt2(tiny_models, cache_dir, tmp_path, monkeypatch, capsys):
    from isolib import parameters, project
    from isolib.cli import main

    monkeypatch.setattr(project, "BUILD_DIR", tmp_path)
    models = f"[{tiny_models['bert']}, {tiny_models['gpt2']}]"
    overrides = ["-p", "models", models, "-p", "n_sentences", "300", "-p", "max_occurrences", "100"]
    assert main(["reproduce", "--profile", "quick", "--only", "01_ethayarajh_contextuality", *overrides]) == 0, \
        capsys.readouterr()
    folder = project.variant_dir("01_ethayarajh_contextuality", "quick", parameters.parse_overrides(
        [overrides[i + 1: i + 3] for i in range(0, len(overrides), 3)]))
    results = (folder / "figures" / "RESULTS.md").read_text()
    assert tiny_models["bert"] in results and tiny_models["gpt2"] in results
    assert (folder / "figures" / "per_layer.csv").exists()


def test_the_device_reaches_the_model_and_the_tensors(cache_dir, tmp_path, monkeypatch):
    """On a machine with CUDA: models, extraction and the probe run there and agree with the CPU."""
    if not torch.cuda.is_available():
        pytest.skip("CUDA is not available on this machine; this test runs where a GPU is")
    from isolib.probe import train_probe

    on_gpu = load_model("minilm", device="cuda")
    assert next(on_gpu.model.parameters()).device.type == "cuda"
    gpu = embed(on_gpu, SENTENCES, layers=[-1], device="cuda")
    monkeypatch.setenv("ISOLIB_CACHE_DIR", str(tmp_path / "cpu"))  # the device is not part of the cache key
    cpu = embed(load_model("minilm"), SENTENCES, layers=[-1], device="cpu")
    np.testing.assert_allclose(gpu.layer(-1), cpu.layer(-1), atol=1e-4)
    X = np.random.default_rng(0).normal(size=(60, 8))
    trace = train_probe(X, np.arange(60) % 2, n_updates=3, seeds=[0], device="cuda")
    assert len(trace) == 4 and trace.loss.notna().all()
