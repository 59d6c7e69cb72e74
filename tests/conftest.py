"""Shared fixtures: real offline models loaded once per session, an isolated cache per test."""

import os

import pytest

# Keep progress bars out of test output and of notebook outputs checked by nbval.
os.environ.setdefault("ISOLIB_PROGRESS", "0")
os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture(scope="session")
def minilm():
    from isolib.models import load_model

    return load_model("minilm")


@pytest.fixture(scope="session")
def smollm2():
    from isolib.models import load_model

    return load_model("smollm2")


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """An empty isolib cache for one test."""
    monkeypatch.setenv("ISOLIB_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="session")
def tiny_sentence_model(tmp_path_factory):
    """A randomly initialised 2-layer BERT saved as a sentence-transformers folder (CLS pooling, no Normalize).

    Its WordPiece tokenizer is trained on the fly, so no download is needed; a local folder is a
    valid model id wherever a Hub id is accepted.
    """
    import json

    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import BertConfig, BertModel, BertTokenizerFast

    folder = tmp_path_factory.mktemp("tiny-sentence-bert")
    corpus = ["the cat sat on the mat", "a man is playing a guitar", "isotropy of embeddings",
              "unbelievable results in the rain", "hi there"] * 4
    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.train_from_iterator(corpus, trainers.WordPieceTrainer(
        vocab_size=120, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]", special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    BertTokenizerFast(tokenizer_object=tokenizer, model_max_length=64).save_pretrained(folder)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=tokenizer.get_vocab_size(), hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
    BertModel(config).save_pretrained(folder)
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(
        {"word_embedding_dimension": 32, "pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False}))
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 16, "do_lower_case": False}))
    return folder
