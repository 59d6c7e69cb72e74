"""Per-layer token embeddings of a transformer, with a content-addressed on-disk cache.

:func:`embed` turns (model, sentences) into :class:`Embeddings`: one token table and,
per layer, an ``(n_tokens, dim)`` array whose rows follow the table. Layer numbers
follow :mod:`isolib.models` (0 = input embeddings).

How extraction works
--------------------
* Sentences are tokenized with the model's fast tokenizer; each piece is mapped to its
  word with ``word_ids()`` (never by re-splitting strings), and the word's text is cut
  from the sentence with the pieces' character offsets.
* Sentences are sorted by length and batched, padded on the right; padded positions
  are dropped before anything is stored, so padding never reaches the statistics.
* Work is split in shards of ``shard_size`` sentences. Each finished shard is written
  to a temporary folder and renamed into place (atomic), so a run killed half-way
  leaves only finished shards, which the next run reuses. When all shards exist they
  are assembled layer by layer inside the partial folder, each layer deleted from the shards
  once it is assembled (so the disk never holds two copies), and the assembled folder is
  renamed into place. An entry is trusted only if its final folder exists; partial and
  temporary folders never are.
* The cache key hashes everything that determines the result: the model's weights
  fingerprint, the texts, tokenizer options, layers, dtype, which rows are stored and the
  cache format version.
* ``keep_special=False`` drops the rows of special tokens ([CLS], [SEP], a start token)
  before anything is stored, for a study that never reads them (every statistic of the
  studies excludes them): on STS that is 12% of an encoder's rows and 6% of SmolLM2's with a
  start token. The token table then holds only the stored rows; ``position`` still counts
  the special tokens.

The first position
------------------
A decoder such as GPT-2 or SmolLM2 puts no start token before a sentence, so its first
*word* becomes the attention sink: from the early layers on its hidden state has a norm tens
to hundreds of times that of the other tokens (:func:`first_position_norm_ratio` measures it),
and any statistic that mixes positions (a mean vector, a principal direction, a baseline of
random occurrences) may measure that one position. ``embed(..., first_position=...)`` is the
one place every study chooses how to treat it:

``"keep"`` (default)
    Every token as the tokenizer gives it: the papers' procedure (Ethayarajh's and Cai et al.'s
    GPT-2 code fed sentences without a start token).
``"start_token"``
    Prepend the tokenizer's start token (``bos_token``: ``<|endoftext|>`` for GPT-2,
    ``<|im_start|>`` for SmolLM2) where the sequence does not already begin with a special token,
    so the sink is a special token (``is_special``) and statistics exclude it. An encoder's
    sequence already starts with [CLS], so nothing changes there. A separate extraction.
``"drop"``
    The same extraction as ``"keep"``, with every position-0 row removed from the token table
    and from every layer (for an encoder that is [CLS], already special), except the only row of a
    one-token sentence (``end`` in STS 2012), which would otherwise have no vector. Cheaper, but not a
    cure: in a few SmolLM2 sentences on STS the sink is at position 1, and at layer 12 the top
    1% of occurrences still hold 89% of the squared norm once position 0 is dropped.

Cache layout: ``<ISOLIB_CACHE_DIR>/embeddings/<key>/`` holding ``meta.json``,
``tokens.parquet`` and one ``layer_NN.npy`` per layer, read memory-mapped one layer at a time;
an entry of :func:`sentence_embeddings` holds ``meta.json`` and ``sentences.npy``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
from filelock import FileLock

from isolib._progress import show_progress
from isolib.errors import ModelError
from isolib.models import LoadedModel, cache_root, fingerprint, load_model, resolve_layers

CACHE_FORMAT = 1
FIRST_POSITIONS = ("keep", "start_token", "drop")
# How a view other than the papers' is labelled where models are named (tables, figures, RESULTS.md).
VIEW_LABELS = {"keep": "", "start_token": " (start token)", "drop": " (position 0 dropped)"}
TOKEN_COLUMNS = ("sentence_id", "position", "token", "word_id", "word", "is_special")
DTYPES = ("float32", "float16")


@dataclass(frozen=True)
class Embeddings:
    """Token embeddings of a list of sentences, layer by layer.

    Attributes
    ----------
    model : str
        Name the model was loaded by.
    fingerprint : str
        Weights fingerprint (see :func:`isolib.models.fingerprint`).
    n_layers : int
        Hidden states of the model, layer 0 included.
    layers : tuple of int
        Layers stored in this object.
    tokens : pandas.DataFrame, one row per token
        ``sentence_id`` (int, index into the sentences passed to :func:`embed`),
        ``position`` (int, index in the tokenized sequence, special tokens included),
        ``token`` (str, the tokenizer's piece, e.g. ``##ing`` or ``Ġthe``),
        ``word_id`` (int, index of the word within its sentence as given by
        ``word_ids()``; -1 for special tokens), ``word`` (str, the word's text in the
        sentence; "" for special tokens), ``is_special`` (bool: [CLS], [SEP], BOS, ...).
        Rows are ordered by ``sentence_id`` then ``position``; with ``keep_special=False`` the
        special tokens have no row.
    path : pathlib.Path
        The cache entry holding the arrays.
    first_position : {"keep", "start_token", "drop"}
        How the first position was treated (see the module docstring); :func:`embed_views`
        extracts several views and names them with :func:`view_label`.
    rows : ndarray of int or None
        Rows of the cached arrays this object holds (None: all); set by ``first_position="drop"``.
    """

    model: str
    fingerprint: str
    n_layers: int
    layers: tuple[int, ...]
    tokens: pd.DataFrame
    path: Path
    first_position: str = "keep"
    rows: np.ndarray | None = None

    @property
    def starts_with_content(self) -> bool:
        """True if some sentence's position 0 is a content token (a decoder without a start token)."""
        return not self.tokens.is_special[self.tokens.position == 0].all()

    @property
    def dim(self) -> int:
        """Hidden size."""
        return int(self.layer(self.layers[0]).shape[1])

    def layer(self, layer: int) -> np.ndarray:
        """The ``(n_tokens, dim)`` array of one layer, memory-mapped read-only.

        Rows align with :attr:`tokens`; select ``~tokens.is_special`` for statistics.
        Negative numbers count from the top, as in :func:`isolib.models.resolve_layers`.
        """
        (index,) = resolve_layers(layer, self.n_layers)
        if index not in self.layers:
            raise ModelError(f"Layer {layer} was not extracted; this object holds layers {list(self.layers)}.")
        array = np.load(self.path / f"layer_{index:02d}.npy", mmap_mode="r")
        # first_position="drop": the kept rows, read into memory (an (n_tokens, dim) copy).
        return array if self.rows is None else array[self.rows]


_SPACE_MARKERS = ("Ġ", "▁")


def unit_text(piece: str) -> str:
    """A tokenizer piece without its leading space marker (``Ġ`` of byte-level BPE, ``▁`` of SentencePiece).

    The marker only records a preceding space, so ``Ġthe`` and a sentence-initial ``the`` read as
    one type; WordPiece's ``##`` is kept (``##s`` is another vocabulary entry than ``s``).
    """
    return piece[1:] if piece[:1] in _SPACE_MARKERS else piece


def is_punctuation(text: str) -> bool:
    """True if ``text`` holds no letter and no digit: ``.``, ``--``, ``##.``; not ``5.3`` or ``'s``.

    The one rule by which the studies tell punctuation and symbol tokens from words.
    """
    return not any(character.isalnum() for character in text)


def first_position_norm_ratio(embeddings: Embeddings) -> pd.Series:
    """Mean norm of the first non-special token of each sentence over that of the other non-special tokens.

    The attention-sink diagnostic of a decoder (see the module docstring): about 1 when the first
    word is like the others, tens to hundreds when it is the sink.

    Parameters
    ----------
    embeddings : Embeddings

    Returns
    -------
    pandas.Series of float, indexed by layer
        NaN for a layer where no sentence has a second non-special token.
    """
    content = embeddings.tokens[~embeddings.tokens.is_special.to_numpy(bool)]
    first = ~content.sentence_id.duplicated().to_numpy()
    rows = content.index.to_numpy()
    ratios = {}
    for layer in embeddings.layers:
        norms = np.linalg.norm(np.asarray(embeddings.layer(layer)[rows], dtype=np.float32), axis=1)
        ratios[layer] = norms[first].mean() / norms[~first].mean() if (~first).any() else np.nan
    return pd.Series(ratios, name="first_position_norm_ratio").rename_axis("layer")


def view_label(model: str, first_position: str) -> str:
    """A model's name in one view of its first position: ``smollm2``, ``smollm2 (start token)`` ..."""
    return model + VIEW_LABELS[first_position]


def split_view(label: str) -> tuple[str, str]:
    """``(model, first_position)`` of a label made by :func:`view_label`."""
    for first_position, suffix in VIEW_LABELS.items():
        if suffix and label.endswith(suffix):
            return label[: -len(suffix)], first_position
    return label, "keep"


def embed_views(model: str | LoadedModel, sentences: Sequence[str], *, views: Sequence[str] = ("start_token",),
                **options) -> dict[str, Embeddings]:
    """:func:`embed` as the papers did and, for a model whose position 0 is a word (a decoder), in ``views`` too.

    Parameters
    ----------
    model, sentences
        As in :func:`embed`.
    views : sequence of {"start_token", "drop"}
        The other treatments of the first position (module docstring) to extract for a decoder.
    **options
        Passed to :func:`embed` (``layers``, ``dtype``, ``device`` ...).

    Returns
    -------
    dict of str to Embeddings
        Keyed by :func:`view_label`: the ``"keep"`` view first, then each of ``views`` for a
        decoder; an encoder (whose position 0 is [CLS]) has the ``"keep"`` view alone.
    """
    check_views(views)
    kept = embed(model, sentences, **options)
    name = kept.model
    result = {view_label(name, "keep"): kept}
    if kept.starts_with_content:
        for view in views:
            result[view_label(name, view)] = embed(model, sentences, first_position=view, **options)
    return result


def check_views(views: Sequence[str]) -> None:
    """Raise ValueError unless every view is ``"start_token"`` or ``"drop"`` (``"keep"`` always comes first)."""
    unknown = [view for view in views if view not in FIRST_POSITIONS or view == "keep"]
    if unknown:
        raise ValueError(f"views must be among 'start_token' and 'drop', got {unknown}.")


def sentence_embeddings(model: str, sentences: Sequence[str], **options) -> np.ndarray:
    """Sentence vectors exactly as sentence-transformers encodes them (``SentenceTransformer(model).encode``).

    The pooling, normalisation and maximum length are read from the model's own files
    (:func:`isolib.models.sentence_config`), never assumed: for all-MiniLM-L6-v2 and all-mpnet-base-v2
    that is the mean of every last-layer token the attention mask keeps ([CLS] and [SEP] included),
    scaled to unit length, over at most 256 and 384 tokens.

    The token vectors come from :func:`embed` (last layer only, float32, so an interrupted extraction
    resumes); once pooled, the sentence vectors are cached as their own entry (``sentences.npy``,
    about a twentieth of the tokens' size) and the token entry is removed, since nothing else reads it.

    Parameters
    ----------
    model : str
        A sentence-transformers model: ``minilm``, ``mpnet``, a local folder or a Hub id (e.g.
        ``sentence-transformers/all-distilroberta-v1``).
    sentences : sequence of str, length n_sentences
    **options
        Passed to :func:`embed` (``batch_size``, ``device``, ``progress``).

    Returns
    -------
    ndarray of shape (n_sentences, dim), float32
    """
    from isolib.cache import remove_entry
    from isolib.models import sentence_config

    config = sentence_config(model)
    texts = list(sentences)
    token_options = {"layers": [-1], "max_length": config.max_seq_length, "dtype": "float32"}
    key = cache_key(fingerprint(model), texts, **token_options, pooling=(config.pooling, config.normalize))

    def create(final: Path) -> None:
        tokens = embed(model, texts, **token_options, **options)
        pooled = _pool(tokens, config.pooling, config.normalize)
        meta = {"format": CACHE_FORMAT, "model": tokens.model, "fingerprint": tokens.fingerprint,
                "n_layers": tokens.n_layers, "layers": list(tokens.layers), "dim": int(pooled.shape[1]),
                "dtype": "float32", "n_sentences": len(texts), "max_length": config.max_seq_length,
                "pooling": config.pooling, "normalize": config.normalize}

        def write(tmp: Path) -> None:
            np.save(tmp / "sentences.npy", pooled)
            (tmp / "meta.json").write_text(json.dumps(meta, indent=1))

        _write_atomically(final, write)
        remove_entry(tokens.path)

    return np.load(_cache_entry(key, create) / "sentences.npy")


def _cache_entry(key: str, create) -> Path:
    """The cache folder of ``key``, made by ``create(folder)`` if it has no ``meta.json`` yet.

    Two processes asking for the same entry (make -j2, two notebooks): one creates it under a file
    lock, the other waits and then reads what the first wrote. Reading an entry marks it used (the
    time of its ``meta.json``), for ``python -m isolib cache list`` and ``prune``.
    """
    root = cache_root() / "embeddings"
    final = root / key
    if not (final / "meta.json").exists():
        root.mkdir(parents=True, exist_ok=True)
        with FileLock(root / f"{key}.lock"):
            if not (final / "meta.json").exists():
                create(final)
                return final
    try:
        os.utime(final / "meta.json")
    except OSError:
        pass  # a read-only cache is still readable
    return final


def _pool(tokens: Embeddings, pooling: str, normalize: bool) -> np.ndarray:
    """One vector per sentence from the last layer's token vectors, as sentence-transformers pools them."""
    vectors = np.asarray(tokens.layer(-1), dtype=np.float64)
    ids = tokens.tokens.sentence_id.to_numpy()
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])  # rows are ordered by sentence
    if pooling == "mean":
        pooled = np.add.reduceat(vectors, starts, axis=0) / np.diff(np.r_[starts, len(ids)])[:, None]
    elif pooling == "max":
        pooled = np.maximum.reduceat(vectors, starts, axis=0)
    else:
        pooled = vectors[starts]
    if normalize:
        pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)  # as torch's F.normalize
    return pooled.astype(np.float32)


def cache_key(fingerprint_: str, texts: Sequence[str], *, layers, max_length: int, dtype: str,
              start_token: bool = False, keep_special: bool = True, pooling: tuple | None = None) -> str:
    """Content hash identifying one extraction (see the module docstring)."""
    texts_digest = hashlib.sha256("\x1e".join(texts).encode("utf-8")).hexdigest()
    spec = {
        "format": CACHE_FORMAT,
        "model": fingerprint_,
        "texts": [len(texts), texts_digest],
        "layers": "all" if layers is None else sorted({int(x) for x in np.atleast_1d(layers)}),
        "max_length": max_length,
        "dtype": dtype,
    }
    # Options only when not the default, so that entries extracted before they existed stay valid.
    if start_token:
        spec["start_token"] = True
    if not keep_special:
        spec["keep_special"] = False
    if pooling is not None:  # an entry of sentence vectors (:func:`sentence_embeddings`)
        spec["pooling"] = list(pooling)
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:32]


def embed(
    model: str | LoadedModel,
    sentences: Sequence[str],
    *,
    layers=None,
    batch_size: int = 32,
    max_length: int = 512,
    dtype: str = "float32",
    device: str = "cpu",
    shard_size: int = 2000,
    progress: bool | None = None,
    first_position: str = "keep",
    keep_special: bool = True,
) -> Embeddings:
    """Extract (or read from the cache) per-layer token embeddings.

    Parameters
    ----------
    model : str or LoadedModel
        Offline short name (``"minilm"``, ``"mpnet"``, ``"smollm2"``), a Hub id, or a
        model already loaded with :func:`isolib.models.load_model`. A name is loaded
        only if the cache misses.
    sentences : sequence of str, length n_sentences
        Non-empty texts; ``sentence_id`` in the token table indexes this sequence.
    layers : None, int or sequence of int
        Layers to keep (None = all; 0 = input embeddings; negative from the top).
    batch_size : int
        Sentences per forward pass (batches are formed by length).
    max_length : int
        Longer sentences are truncated to this many tokens (special tokens included), or to the
        model's own limit (:attr:`LoadedModel.max_tokens`) where that is smaller.
    dtype : {"float32", "float16"}
        Storage dtype; the model always runs in float32.
    device : str
        Torch device for the forward passes (``"cpu"``, ``"cuda"``).
    shard_size : int
        Sentences per resumable shard.
    progress : bool or None
        Show a progress bar; None = only when interactive (a terminal or a Jupyter
        kernel), unless the environment variable ``ISOLIB_PROGRESS`` is ``0`` or ``1``.
    first_position : {"keep", "start_token", "drop"}
        How to treat the first position, the attention sink of a decoder (module docstring):
        as the tokenizer gives it (the papers), behind a prepended start token, or dropped.
    keep_special : bool
        False: store no row of a special token (module docstring); a smaller entry for a study
        whose statistics exclude them anyway.

    Returns
    -------
    Embeddings
    """
    texts = list(sentences)
    if not texts:
        raise ValueError("sentences is empty; pass at least one sentence.")
    empty = [i for i, text in enumerate(texts) if not isinstance(text, str) or not text.strip()]
    if empty:
        raise ValueError(f"{len(empty)} sentences are empty or not strings (first at index {empty[0]}).")
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}.")
    if first_position not in FIRST_POSITIONS:
        raise ValueError(f"first_position must be one of {FIRST_POSITIONS}, got {first_position!r}.")
    start_token = first_position == "start_token"
    name = model.name if isinstance(model, LoadedModel) else model
    weights = model.fingerprint if isinstance(model, LoadedModel) else fingerprint(model)
    key = cache_key(weights, texts, layers=layers, max_length=max_length, dtype=dtype, start_token=start_token,
                    keep_special=keep_special)

    def create(final: Path) -> None:
        loaded = model if isinstance(model, LoadedModel) else load_model(model, device=device, progress=progress)
        _extract(loaded, texts, final, layers=layers, batch_size=batch_size,
                 max_length=min(max_length, loaded.max_tokens), dtype=dtype, device=device, shard_size=shard_size,
                 progress=show_progress(progress), start_token=start_token, keep_special=keep_special)

    final = _cache_entry(key, create)
    meta = json.loads((final / "meta.json").read_text())
    tokens, rows = pd.read_parquet(final / "tokens.parquet"), None
    if first_position == "drop":
        # A sentence of one token keeps it: without it the sentence would have no vector at all.
        alone = ~tokens.sentence_id.duplicated(keep=False).to_numpy()
        rows = np.flatnonzero((tokens.position.to_numpy() != 0) | alone)
        tokens = tokens.iloc[rows].reset_index(drop=True)
    return Embeddings(
        model=name,
        fingerprint=weights,
        n_layers=meta["n_layers"],
        layers=tuple(meta["layers"]),
        tokens=tokens,
        path=final,
        first_position=first_position,
        rows=rows,
    )


def _extract(loaded: LoadedModel, texts, final: Path, *, layers, batch_size, max_length, dtype, device,
             shard_size, progress, start_token, keep_special) -> None:
    """Compute missing shards, then assemble them into the final cache entry."""
    if progress:
        from tqdm.auto import tqdm  # a widget in Jupyter, text in a terminal
    else:
        from tqdm import tqdm

    kept = resolve_layers(layers, loaded.n_layers)
    partial = final.with_name(final.name + ".partial")
    partial.mkdir(parents=True, exist_ok=True)
    # Temporary folders left by a killed run are never trusted: remove them.
    for stale in [*partial.glob("*.tmp-*"), *final.parent.glob(f"{final.name}.tmp-*")]:
        shutil.rmtree(stale, ignore_errors=True)
    starts = range(0, len(texts), shard_size)
    bar = tqdm(total=len(texts), desc=f"embedding with {loaded.name}", unit="sent", disable=not progress)
    for shard_index, start in enumerate(starts):
        shard = partial / f"shard_{shard_index:05d}"
        chunk = texts[start:start + shard_size]
        if not (shard / "tokens.parquet").exists():
            _write_atomically(shard, lambda tmp, chunk=chunk, start=start: _extract_shard(
                loaded, chunk, start, tmp, kept=kept, batch_size=batch_size, max_length=max_length,
                dtype=dtype, device=device, bar=bar, start_token=start_token, keep_special=keep_special))
        else:
            bar.update(len(chunk))
    bar.close()
    shards = [partial / f"shard_{i:05d}" for i in range(len(starts))]
    meta = {"format": CACHE_FORMAT, "model": loaded.name, "checkpoint": loaded.checkpoint,
            "fingerprint": loaded.fingerprint, "n_layers": loaded.n_layers, "layers": list(kept),
            "dim": loaded.dim, "dtype": dtype, "n_sentences": len(texts), "max_length": max_length,
            "start_token": start_token, "keep_special": keep_special}
    assembled = partial / "assembled"
    _assemble(shards, assembled, kept, meta)
    try:
        os.replace(assembled, final)  # one step: from here on the entry is trusted
    except OSError:
        if not (final / "meta.json").exists():  # a concurrent run may have won the rename; otherwise re-raise
            raise
    shutil.rmtree(partial, ignore_errors=True)


def _write_atomically(target: Path, write) -> None:
    """Call ``write(tmp_folder)``, then rename the folder to ``target`` in one step."""
    tmp = target.with_name(f"{target.name}.tmp-{uuid.uuid4().hex[:8]}")
    tmp.mkdir(parents=True)
    try:
        write(tmp)
        os.replace(tmp, target)
    except OSError:
        if not target.exists():  # a concurrent run may have won the rename; otherwise re-raise
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@dataclass(frozen=True)
class _Encoded:
    """Tokenized sentences as plain lists, one entry per sentence (so a start token can be prepended)."""

    inputs: dict  # model inputs (input_ids, attention_mask, ...): name -> list of lists of int
    offsets: list  # character (start, end) of each token
    word_ids: list  # word index of each token, None for special tokens
    special: list  # 1 for a special token


def _tokenize(tokenizer, texts, max_length, start_token: bool = False) -> _Encoded:
    """Tokenize ``texts``; with ``start_token``, prepend ``bos_token`` where no special token leads."""
    encoding = tokenizer(list(texts), add_special_tokens=True, truncation=True,
                         max_length=max_length - 1 if start_token else max_length,
                         return_offsets_mapping=True, return_special_tokens_mask=True)
    names = [k for k in encoding.keys() if k not in ("offset_mapping", "special_tokens_mask")]
    encoded = _Encoded({k: [list(v) for v in encoding[k]] for k in names},
                       [list(v) for v in encoding["offset_mapping"]],
                       [encoding.word_ids(i) for i in range(len(texts))],
                       [list(v) for v in encoding["special_tokens_mask"]])
    if start_token:
        padding = {"input_ids": tokenizer.bos_token_id, "attention_mask": 1}
        for i in range(len(texts)):
            if encoded.special[i][:1] == [1]:
                continue  # [CLS] or a BOS the tokenizer adds itself already takes the first position
            if tokenizer.bos_token_id is None:
                raise ModelError(f"{type(tokenizer).__name__} has no start token (bos_token) to prepend; "
                                 "use first_position='drop' instead.")
            for k in names:
                encoded.inputs[k][i].insert(0, padding.get(k, 0))
            encoded.offsets[i].insert(0, (0, 0))
            encoded.word_ids[i].insert(0, None)
            encoded.special[i].insert(0, 1)
    return encoded


def token_table(tokenizer, texts: Sequence[str], *, first_sentence_id: int = 0, max_length: int = 512,
                start_token: bool = False) -> pd.DataFrame:
    """The token table of :class:`Embeddings` for ``texts`` (see its ``tokens`` attribute)."""
    return _table(tokenizer, texts, _tokenize(tokenizer, texts, max_length, start_token), first_sentence_id)


def _table(tokenizer, texts, encoded: _Encoded, first_sentence_id) -> pd.DataFrame:
    columns = {name: [] for name in TOKEN_COLUMNS}
    for i, text in enumerate(texts):
        ids = encoded.inputs["input_ids"][i]
        word_ids = encoded.word_ids[i]
        offsets = encoded.offsets[i]
        special = encoded.special[i]
        spans: dict[int, list[int]] = {}
        for (start, end), word in zip(offsets, word_ids):
            if word is not None:
                span = spans.setdefault(word, [start, end])
                span[0], span[1] = min(span[0], start), max(span[1], end)
        columns["sentence_id"] += [first_sentence_id + i] * len(ids)
        columns["position"] += range(len(ids))
        columns["token"] += tokenizer.convert_ids_to_tokens(ids)
        columns["word_id"] += [-1 if w is None else w for w in word_ids]
        columns["word"] += ["" if w is None else text[spans[w][0]:spans[w][1]].strip() for w in word_ids]
        columns["is_special"] += [bool(s) or w is None for s, w in zip(special, word_ids)]
    table = pd.DataFrame(columns)
    return table.astype({"sentence_id": "int32", "position": "int32", "word_id": "int32", "is_special": bool})


def _extract_shard(loaded: LoadedModel, texts, first_sentence_id, folder: Path, *, kept, batch_size, max_length,
                   dtype, device, bar, start_token, keep_special) -> None:
    """Run the model over one shard and write its token table and per-layer arrays into ``folder``."""
    import torch

    tokenizer = loaded.tokenizer
    encoded = _tokenize(tokenizer, texts, max_length, start_token)
    table = _table(tokenizer, texts, encoded, first_sentence_id)
    lengths = np.array([len(ids) for ids in encoded.inputs["input_ids"]])
    stored = np.ones(len(table), dtype=bool) if keep_special else ~table.is_special.to_numpy(dtype=bool)
    # Per sentence: which of its positions are stored, and where its stored rows begin.
    starts = np.concatenate([[0], np.cumsum(lengths)])
    stored_in = [stored[starts[i]:starts[i + 1]] for i in range(len(texts))]
    offsets = np.concatenate([[0], np.cumsum([mask.sum() for mask in stored_in])])
    table = table[stored].reset_index(drop=True)
    arrays = {layer: np.lib.format.open_memmap(folder / f"layer_{layer:02d}.npy", mode="w+", dtype=dtype,
                                               shape=(int(offsets[-1]), loaded.dim)) for layer in kept}
    order = np.argsort(lengths, kind="stable")
    tokenizer.padding_side = "right"  # positions of real tokens must not depend on padding
    with torch.inference_mode():
        for batch_start in range(0, len(order), batch_size):
            members = order[batch_start:batch_start + batch_size]
            batch = tokenizer.pad({k: [v[i] for i in members] for k, v in encoded.inputs.items()}, return_tensors="pt")
            hidden_states = loaded.model(**{k: v.to(device) for k, v in batch.items()}).hidden_states
            if len(hidden_states) != loaded.n_layers:
                raise ModelError(f"{loaded.name} returned {len(hidden_states)} hidden states, expected {loaded.n_layers}.")
            for layer in kept:
                states = hidden_states[layer].float().cpu().numpy()  # (batch, padded_len, dim)
                for row, i in enumerate(members):
                    arrays[layer][offsets[i]:offsets[i + 1]] = states[row, :lengths[i]][stored_in[i]]
            bar.update(len(members))
    for array in arrays.values():
        array.flush()
    table.to_parquet(folder / "tokens.parquet", index=False)


def _assemble(shards: list[Path], folder: Path, kept, meta: dict) -> None:
    """Concatenate shard tables and arrays into one entry in ``folder``, layer by layer, resumably.

    Each layer is written under a temporary name, renamed, and only then deleted from the shards: the
    disk holds about one copy of the arrays (not the shards and the entry both: 2 x 10 GB for one of
    notebook 01's views), memory one layer of one shard, and a run stopped part-way resumes at the
    first layer not yet renamed. ``meta.json`` comes last, so the folder is complete only with it.
    """
    folder.mkdir(exist_ok=True)
    for stale in folder.glob("*.tmp-*"):  # a layer being written when a run was stopped
        stale.unlink()
    tables = [pd.read_parquet(shard / "tokens.parquet") for shard in shards]
    n_tokens = sum(len(t) for t in tables)
    for layer in kept:
        name = f"layer_{layer:02d}.npy"
        if not (folder / name).exists():
            tmp = folder / f"{name}.tmp-{uuid.uuid4().hex[:8]}"
            out = np.lib.format.open_memmap(tmp, mode="w+", dtype=meta["dtype"], shape=(n_tokens, meta["dim"]))
            row = 0
            for shard in shards:
                part = np.load(shard / name, mmap_mode="r")
                out[row:row + len(part)] = part
                row += len(part)
            out.flush()
            del out
            os.replace(tmp, folder / name)
        for shard in shards:
            (shard / name).unlink(missing_ok=True)
    pd.concat(tables, ignore_index=True).to_parquet(folder / "tokens.parquet", index=False)
    (folder / "meta.json").write_text(json.dumps(meta, indent=1))
