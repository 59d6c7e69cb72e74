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


# Sentences a tiny tokenizer is trained on; "isotropically" is left out so that it is split into pieces.
TINY_CORPUS = ["the cat sat on the mat", "a man is playing a guitar", "isotropy of embeddings",
               "unbelievable results in the rain", "hi there", "the dog barks at the cat"] * 4 + [
    "technically logical music"]  # every letter of "isotropically" also inside a word (WordPiece's ##x)


def _wordpiece(tokenizer_class, folder, **special):
    """A WordPiece tokenizer in BERT's style ([CLS] ... [SEP]), trained on TINY_CORPUS and saved in ``folder``."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers

    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.train_from_iterator(TINY_CORPUS, trainers.WordPieceTrainer(
        vocab_size=120, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]", special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    fast = tokenizer_class(tokenizer_object=tokenizer, model_max_length=64, unk_token="[UNK]", pad_token="[PAD]",
                           cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]", **special)
    fast.save_pretrained(folder)
    return fast


def _byte_level_bpe(special_tokens, processor=None):
    """A byte-level BPE tokenizer in GPT-2's style, trained on TINY_CORPUS."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.train_from_iterator(TINY_CORPUS, trainers.BpeTrainer(
        vocab_size=300, special_tokens=special_tokens, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    if processor is not None:
        tokenizer.post_processor = processor(tokenizer)
    return tokenizer


def build_tiny_model(family: str, folder):
    """A randomly initialised 2-layer model of a paper family, with a tokenizer trained on the fly, saved in ``folder``.

    Families: ``bert`` (WordPiece), ``distilbert`` (WordPiece), ``gpt2`` (byte-level BPE, no pad token),
    ``openai-gpt`` (BPE with ``</w>``, no special tokens at all), ``roberta`` (byte-level BPE, <s> ... </s>).
    Loading ``str(folder)`` reads it with ``from_pretrained``, as a Hub id's files are read.
    """
    import torch
    import transformers as tf
    from tokenizers import decoders, models, normalizers, pre_tokenizers, processors, trainers, Tokenizer

    size = {"num_hidden_layers": 2, "num_attention_heads": 2, "hidden_size": 32, "intermediate_size": 64}
    if family in ("bert", "distilbert"):
        tokenizer_class = tf.BertTokenizerFast if family == "bert" else tf.DistilBertTokenizerFast
        vocab = len(_wordpiece(tokenizer_class, folder))
        config = (tf.BertConfig(vocab_size=vocab, max_position_embeddings=64, **size) if family == "bert" else
                  tf.DistilBertConfig(vocab_size=vocab, n_layers=2, n_heads=2, dim=32, hidden_dim=64,
                                      max_position_embeddings=64))
    elif family == "gpt2":
        tokenizer = _byte_level_bpe(["<|endoftext|>"])
        tf.GPT2TokenizerFast(tokenizer_object=tokenizer, bos_token="<|endoftext|>", eos_token="<|endoftext|>",
                             unk_token="<|endoftext|>", model_max_length=64).save_pretrained(folder)
        config = tf.GPT2Config(vocab_size=tokenizer.get_vocab_size(), n_positions=64, n_embd=32, n_layer=2, n_head=2,
                               bos_token_id=0, eos_token_id=0)
    elif family == "roberta":
        tokenizer = _byte_level_bpe(["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
                                    lambda t: processors.RobertaProcessing(("</s>", 2), ("<s>", 0), trim_offsets=True,
                                                                           add_prefix_space=False))
        tf.RobertaTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", sep_token="</s>",
                                cls_token="<s>", unk_token="<unk>", pad_token="<pad>", mask_token="<mask>",
                                model_max_length=60).save_pretrained(folder)
        config = tf.RobertaConfig(vocab_size=tokenizer.get_vocab_size(), max_position_embeddings=66, pad_token_id=1,
                                  bos_token_id=0, eos_token_id=2, **size)
    elif family == "openai-gpt":
        tokenizer = Tokenizer(models.BPE(unk_token="<unk>", end_of_word_suffix="</w>"))
        tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
        tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tokenizer.decoder = decoders.BPEDecoder(suffix="</w>")
        tokenizer.train_from_iterator(TINY_CORPUS, trainers.BpeTrainer(vocab_size=200, special_tokens=["<unk>"],
                                                                      end_of_word_suffix="</w>"))
        tf.OpenAIGPTTokenizerFast(tokenizer_object=tokenizer, unk_token="<unk>",
                                  model_max_length=64).save_pretrained(folder)
        config = tf.OpenAIGPTConfig(vocab_size=tokenizer.get_vocab_size(), n_positions=64, n_embd=32, n_layer=2,
                                    n_head=2)
    else:
        raise ValueError(f"Unknown family {family!r}.")
    torch.manual_seed(0)
    tf.AutoModel.from_config(config).save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory):
    """Folders of tiny models of the paper families, by family name (see :func:`build_tiny_model`)."""
    root = tmp_path_factory.mktemp("tiny-models")
    return {family: str(build_tiny_model(family, root / family))
            for family in ("bert", "distilbert", "gpt2", "openai-gpt", "roberta")}


@pytest.fixture(scope="session")
def tiny_sentence_model(tmp_path_factory):
    """A tiny BERT saved as a sentence-transformers folder (CLS pooling, no Normalize)."""
    import json

    folder = build_tiny_model("bert", tmp_path_factory.mktemp("tiny-sentence-bert"))
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(
        {"word_embedding_dimension": 32, "pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False}))
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 16, "do_lower_case": False}))
    return folder


@pytest.fixture
def committed_figures(tmp_path, monkeypatch):
    """A copy of the committed ``figures/`` (each folder's tables, results.json and tolerances.json; no figures), which
    ``isolib.runner.FIGURES_DIR`` points at for one test."""
    import shutil

    from isolib import project

    copy = tmp_path / "figures"
    for folder in sorted(p for p in project.FIGURES_DIR.iterdir() if p.is_dir()):
        (copy / folder.name).mkdir(parents=True)
        for path in [*folder.glob("*.csv"), *folder.glob("results.json"), *folder.glob("tolerances.json")]:
            shutil.copy(path, copy / folder.name / path.name)
    monkeypatch.setattr(project, "FIGURES_DIR", copy)
    return copy
