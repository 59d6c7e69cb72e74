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
  leaves only finished shards, which the next run reuses: the partial folder records its
  layout (``layout.json``: sentences, shard and batch sizes), and a resume whose layout differs,
  or whose shard does not hold the rows of its sentences, starts that folder (or shard) over. When all shards exist they
  are assembled layer by layer inside the partial folder, each layer deleted from the shards
  once it is assembled (so the disk never holds two copies), and the assembled folder is
  renamed into place. An entry is trusted only if its final folder exists; partial and
  temporary folders never are.
* The cache key hashes everything that determines the result: the model's weights
  fingerprint, the texts (each with its length, so no two lists of texts share a key), tokenizer
  options, layers, dtype, which rows are stored, the cache format version, and the batching
  (``batch_size`` and ``shard_size``): sentences are batched by length within a shard, and which
  sentences share a padded forward pass changes the last bits of the float32 results (up to
  7e-6), so two batchings are two entries rather than one key holding either.
* Every argument that shapes an extraction is checked before any work; sentences longer than
  ``max_length`` are cut to it with one warning giving their count.
* Each entry records every file's size and SHA-256 (``manifest.json``, :mod:`isolib.integrity`),
  checked when it is opened; a damaged entry is set aside and extracted again, never read.
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
``tokens.parquet``, one ``layer_NN.npy`` per layer (read memory-mapped one layer at a time) and
``manifest.json``; an entry of :func:`sentence_embeddings` holds ``meta.json``, ``sentences.npy``
and ``manifest.json``. Entries of cache format 1 (before manifests) are never read (``cache list``
shows them as ``outdated``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
from filelock import FileLock

from isolib._checks import check_int
from isolib._progress import show_progress
from isolib.errors import ModelError
from isolib.integrity import (
    CacheError,
    cache_root,
    disk_full_error,
    ensure_space,
    is_disk_full,
    lock_path,
    manifest_problem,
    one_sentence_os_errors,
    remove_entry,
    reserve,
    set_aside,
    write_manifest,
    write_text,
)
from isolib.models import LoadedModel, fingerprint, load_model, resolve_layers
from isolib.views import View

# 2: manifests, the batching in the key, texts hashed with their lengths.
CACHE_FORMAT = 2
FIRST_POSITIONS = ("keep", "start_token", "drop")
# How a view other than the papers' is labelled where models are named (tables, figures, RESULTS.md).
TOKEN_COLUMNS = ("sentence_id", "position", "token", "word_id", "word", "is_special")
DTYPES = ("float32", "float16")
BATCH_SIZE = 32
SHARD_SIZE = 2000


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
        extracts several views and names them by :attr:`isolib.views.View.label`.
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
        try:
            array = np.load(self.path / f"layer_{index:02d}.npy", mmap_mode="r")
        except FileNotFoundError:
            raise CacheError(f"The cache entry {self.path} was deleted (pruned?) while this run was reading it; "
                             "call embed again to extract it again.") from None
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
        Keyed by :attr:`isolib.views.View.label`: the ``"keep"`` view first, then each of ``views`` for a
        decoder; an encoder (whose position 0 is [CLS]) has the ``"keep"`` view alone.
    """
    check_views(views)
    kept = embed(model, sentences, **options)
    name = kept.model
    result = {View(name).label: kept}
    if kept.starts_with_content:
        for view in views:
            result[View(name, view).label] = embed(model, sentences, first_position=view, **options)
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
        Passed to :func:`embed` (``batch_size``, ``shard_size``, ``device``, ``progress``); the batching is
        part of the key, as there.

    Returns
    -------
    ndarray of shape (n_sentences, dim), float32
    """
    from isolib.models import sentence_config

    texts = _texts(sentences)
    batching = _batching(options.get("batch_size", BATCH_SIZE), options.get("shard_size", SHARD_SIZE))
    config = sentence_config(model)
    token_options = {"layers": [-1], "max_length": config.max_seq_length, "dtype": "float32"}
    key = cache_key(fingerprint(model), texts, **token_options, **batching, pooling=(config.pooling, config.normalize))

    def create(final: Path) -> None:
        tokens = embed(model, texts, **token_options, **options)
        pooled = _pool(tokens, config.pooling, config.normalize)
        meta = {"format": CACHE_FORMAT, "model": tokens.model, "fingerprint": tokens.fingerprint,
                "n_layers": tokens.n_layers, "layers": list(tokens.layers), "dim": int(pooled.shape[1]),
                "dtype": "float32", "n_sentences": len(texts), "max_length": config.max_seq_length,
                "pooling": config.pooling, "normalize": config.normalize, **batching}

        def write(tmp: Path) -> None:
            try:
                np.save(tmp / "sentences.npy", pooled)
            except OSError as error:
                if is_disk_full(error):
                    raise disk_full_error(final.parent, pooled.nbytes) from None
                raise
            write_text(tmp / "meta.json", json.dumps(meta, indent=1))
            write_manifest(tmp)

        _write_atomically(final, write)
        remove_entry(tokens.path)

    final = _cache_entry(key, create, len(texts))
    try:
        return np.load(final / "sentences.npy")
    except FileNotFoundError:
        raise _deleted_while_read(final) from None


def _cache_entry(key: str, create, n_sentences: int) -> Path:
    """The cache folder of ``key``, made by ``create(folder)`` if it is missing or fails :func:`entry_problem`.

    Two processes asking for the same entry (make -j2, two notebooks): one creates it under a file
    lock, the other waits and then reads what the first wrote. A damaged entry is set aside (one
    :class:`isolib.integrity.CacheWarning`) and created again, never read. Reading an entry marks it used
    (the time of its ``meta.json``), for ``python -m isolib cache list`` and ``prune``. A cache that cannot
    be written (read-only, a folder or a link where the lock file belongs) is one :class:`CacheError` sentence.
    """
    root = cache_root() / "embeddings"
    final = root / key
    if not final.exists() or entry_problem(final, n_sentences):
        with one_sentence_os_errors():
            root.mkdir(parents=True, exist_ok=True)
            with FileLock(lock_path(final)):
                # Checked again under the lock: another process may have created or set aside the entry meanwhile.
                problem = entry_problem(final, n_sentences) if final.exists() else ""
                if problem:
                    set_aside(final, problem)
                if not final.exists():
                    create(final)
                    return final
    try:
        os.utime(final / "meta.json")
    except OSError:
        pass  # a read-only cache is still readable
    return final


def _deleted_while_read(final: Path) -> CacheError:
    return CacheError(f"The cache entry {final} was deleted (pruned?) while this run was reading it; "
                      "call embed again to extract it again.")


def entry_problem(folder: Path, n_sentences: int | None = None) -> str:
    """Why a cache entry must not be read ("" if it is whole and what its key says).

    Always cheap: ``meta.json`` readable and of this cache format, ``n_sentences`` as asked, every file
    of the manifest present with its recorded size, each array's header (shape, dtype) as ``meta.json``
    and the token table's row count say. Each file's SHA-256 is also compared, once per process
    (:func:`isolib.integrity.manifest_problem`).
    """
    try:
        meta = json.loads((folder / "meta.json").read_text())
        layers, dim, dtype = [int(layer) for layer in meta["layers"]], int(meta["dim"]), np.dtype(meta["dtype"])
        recorded_sentences, format_ = int(meta["n_sentences"]), meta["format"]
        n_tokens = None if "pooling" in meta else int(meta["n_tokens"])
    except FileNotFoundError:
        return "meta.json is missing"
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as error:
        return f"meta.json is unreadable ({type(error).__name__}: {error})"
    if format_ != CACHE_FORMAT:
        return f"it has cache format {format_!r}, not {CACHE_FORMAT}"
    if n_sentences is not None and recorded_sentences != n_sentences:
        return f"meta.json says {recorded_sentences} sentences where {n_sentences} were embedded"
    if n_tokens is None:
        arrays = {"sentences.npy": (recorded_sentences, dim)}
    else:
        arrays = {f"layer_{layer:02d}.npy": (n_tokens, dim) for layer in layers}
    problem = manifest_problem(folder, required=["meta.json", *arrays] + ([] if n_tokens is None else ["tokens.parquet"]))
    if problem:
        return problem
    if n_tokens is not None:
        import pyarrow.parquet

        try:
            rows = pyarrow.parquet.read_metadata(folder / "tokens.parquet").num_rows
        except (OSError, ValueError) as error:  # pyarrow's ArrowInvalid is a ValueError
            return f"tokens.parquet is unreadable ({error})"
        if rows != n_tokens:
            return f"tokens.parquet has {rows} rows where meta.json says {n_tokens}"
    for name, shape in arrays.items():
        if problem := _array_problem(folder / name, shape, dtype):
            return f"{name} {problem}"
    return ""


def _array_problem(path: Path, shape: tuple[int, int], dtype: np.dtype) -> str:
    """Why a ``.npy`` file's header or size disagrees with ``shape`` and ``dtype`` ("" if it agrees)."""
    readers = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
    try:
        with open(path, "rb") as stream:
            version = np.lib.format.read_magic(stream)
            stored_shape, fortran_order, stored_dtype = readers[version](stream)
            data_offset = stream.tell()
    except FileNotFoundError:
        return "is missing"
    except (OSError, ValueError, KeyError, SyntaxError) as error:
        return f"has an unreadable header ({error})"
    if stored_shape != shape or stored_dtype != dtype or fortran_order:
        return f"holds {stored_dtype} {stored_shape} where {dtype} {shape} was written"
    if path.stat().st_size != data_offset + int(np.prod(shape)) * dtype.itemsize:
        return "has a size that does not match its header"
    return ""


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


def cache_key(fingerprint_: str, texts: Sequence[str], *, layers, max_length: int, dtype: str, batch_size: int,
              shard_size: int, start_token: bool = False, keep_special: bool = True,
              pooling: tuple | None = None) -> str:
    """Content hash identifying one extraction (see the module docstring)."""
    texts_digest = hashlib.sha256()
    for text in texts:  # each text behind its length: no separator a text could contain
        encoded = text.encode("utf-8")
        texts_digest.update(len(encoded).to_bytes(8, "little"))
        texts_digest.update(encoded)
    spec = {
        "format": CACHE_FORMAT,
        "model": fingerprint_,
        "texts": [len(texts), texts_digest.hexdigest()],
        "layers": "all" if layers is None else sorted({int(x) for x in np.atleast_1d(layers)}),
        "max_length": max_length,
        "dtype": dtype,
        "batch_size": batch_size,
        "shard_size": shard_size,
        "start_token": start_token,
        "keep_special": keep_special,
    }
    if pooling is not None:  # an entry of sentence vectors (:func:`sentence_embeddings`)
        spec["pooling"] = list(pooling)
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:32]


def _texts(sentences) -> list[str]:
    """``sentences`` as a list of non-empty strings, or one ValueError (TypeError for a lone string)."""
    if isinstance(sentences, (str, bytes)):
        raise TypeError(f"sentences must be a list of texts, not one {type(sentences).__name__}; "
                        "pass [text] for a single sentence.")
    texts = list(sentences)
    if not texts:
        raise ValueError("sentences is empty; pass at least one sentence.")
    empty = [i for i, text in enumerate(texts) if not isinstance(text, str) or not text.strip()]
    if empty:
        raise ValueError(f"{len(empty)} sentences are empty or not strings (first at index {empty[0]}).")
    return texts


def _batching(batch_size, shard_size) -> dict:
    """``batch_size`` and ``shard_size`` checked (positive integers), as a dict for :func:`cache_key`."""
    return {"batch_size": check_int(batch_size, "batch_size", low=1),
            "shard_size": check_int(shard_size, "shard_size", low=1)}


def embed(
    model: str | LoadedModel,
    sentences: Sequence[str],
    *,
    layers=None,
    batch_size: int = BATCH_SIZE,
    max_length: int = 512,
    dtype: str = "float32",
    device: str = "cpu",
    shard_size: int = SHARD_SIZE,
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
        Sentences per forward pass (batches are formed by length), at least 1; part of the cache key
        (module docstring).
    max_length : int
        Longer sentences are truncated to this many tokens (special tokens included), or to the
        model's own limit (:attr:`LoadedModel.max_tokens`) where that is smaller, with one warning
        giving how many were cut. At least 2, and room for one token besides the special tokens.
    dtype : {"float32", "float16"}
        Storage dtype; the model always runs in float32.
    device : str
        Torch device for the forward passes (``"cpu"``, ``"cuda"``).
    shard_size : int
        Sentences per resumable shard, at least 1; part of the cache key, since sentences are
        batched by length within a shard (module docstring).
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

    Raises
    ------
    TypeError
        If ``sentences`` is one string rather than a list of texts.
    ValueError
        For an argument that cannot shape an extraction, before any work.
    isolib.integrity.CacheError
        If the cache's disk is full, or the entry is deleted while it is read.
    """
    texts = _texts(sentences)
    batching = _batching(batch_size, shard_size)
    max_length = check_int(max_length, "max_length", low=2)
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}.")
    if first_position not in FIRST_POSITIONS:
        raise ValueError(f"first_position must be one of {FIRST_POSITIONS}, got {first_position!r}.")
    start_token = first_position == "start_token"
    name = model.name if isinstance(model, LoadedModel) else model
    weights = model.fingerprint if isinstance(model, LoadedModel) else fingerprint(model)
    key = cache_key(weights, texts, layers=layers, max_length=max_length, dtype=dtype, **batching,
                    start_token=start_token, keep_special=keep_special)

    def create(final: Path) -> None:
        loaded = model if isinstance(model, LoadedModel) else load_model(model, device=device, progress=progress)
        # Below this a sentence would keep no token of its own (the tokenizer then ignores max_length).
        needed = loaded.tokenizer.num_special_tokens_to_add() + int(start_token) + 1
        if min(max_length, loaded.max_tokens) < needed:
            raise ValueError(f"max_length must be at least {needed} for {loaded.name} (its special tokens and one "
                             f"more), got {max_length}.")
        _extract(loaded, texts, final, layers=layers, **batching, max_length=min(max_length, loaded.max_tokens),
                 dtype=dtype, device=device, progress=show_progress(progress), start_token=start_token,
                 keep_special=keep_special)

    final = _cache_entry(key, create, len(texts))
    try:
        meta = json.loads((final / "meta.json").read_text())
        tokens, rows = pd.read_parquet(final / "tokens.parquet"), None
    except FileNotFoundError:
        raise _deleted_while_read(final) from None
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
    _prepare_partial(partial, {"format": CACHE_FORMAT, "n_sentences": len(texts), "shard_size": shard_size,
                               "batch_size": batch_size, "max_length": max_length, "layers": list(kept)})
    # Temporary folders left by a killed run are never trusted: remove them.
    for stale in [*partial.glob("*.tmp-*"), *final.parent.glob(f"{final.name}.tmp-*")]:
        shutil.rmtree(stale, ignore_errors=True)
    starts = range(0, len(texts), shard_size)
    bar = tqdm(total=len(texts), desc=f"embedding with {loaded.name}", unit="sent", disable=not progress)
    n_truncated = 0
    for shard_index, start in enumerate(starts):
        shard = partial / f"shard_{shard_index:05d}"
        chunk = texts[start:start + shard_size]
        record = _shard_record(shard, start, len(chunk))
        if record is None:
            shutil.rmtree(shard, ignore_errors=True)  # absent, or not the shard of these sentences: computed again
            _write_atomically(shard, lambda tmp, chunk=chunk, start=start: _extract_shard(
                loaded, chunk, start, tmp, kept=kept, batch_size=batch_size, max_length=max_length,
                dtype=dtype, device=device, bar=bar, start_token=start_token, keep_special=keep_special))
            record = _shard_record(shard, start, len(chunk))
        else:
            bar.update(len(chunk))
        n_truncated += record["n_truncated"]
    bar.close()
    if n_truncated:
        warnings.warn(f"{n_truncated} of {len(texts)} sentences were longer than max_length={max_length} tokens "
                      "and were cut to it.", UserWarning, stacklevel=5)
    shards = [partial / f"shard_{i:05d}" for i in range(len(starts))]
    meta = {"format": CACHE_FORMAT, "model": loaded.name, "checkpoint": loaded.checkpoint,
            "fingerprint": loaded.fingerprint, "n_layers": loaded.n_layers, "layers": list(kept),
            "dim": loaded.dim, "dtype": dtype, "n_sentences": len(texts), "max_length": max_length,
            "n_truncated": n_truncated, "batch_size": batch_size, "shard_size": shard_size,
            "start_token": start_token, "keep_special": keep_special}
    assembled = partial / "assembled"
    _assemble(shards, assembled, kept, meta)
    try:
        os.replace(assembled, final)  # one step: from here on the entry is trusted
    except OSError:
        if not (final / "meta.json").exists():  # a concurrent run may have won the rename; otherwise re-raise
            raise
    shutil.rmtree(partial, ignore_errors=True)


def _prepare_partial(partial: Path, layout: dict) -> None:
    """Make ``partial`` hold only shards of ``layout``: one recorded with another layout (or none) starts over.

    Shards are reused only by a run that cuts the sentences into the same shards; any other would
    lose sentences or hold some twice.
    """
    try:
        recorded = json.loads((partial / "layout.json").read_text())
    except (OSError, ValueError, RecursionError):
        recorded = None
    if recorded != layout:
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        write_text(partial / "layout.json", json.dumps(layout))


def _shard_record(shard: Path, first_sentence_id: int, n_sentences: int) -> dict | None:
    """A finished shard's ``shard.json`` if it holds exactly these sentences and its token table, else None."""
    import pyarrow.parquet

    try:
        record = json.loads((shard / "shard.json").read_text())
        rows = pyarrow.parquet.read_metadata(shard / "tokens.parquet").num_rows
    except (OSError, ValueError, RecursionError):
        return None
    expected = {"first_sentence_id": first_sentence_id, "n_sentences": n_sentences, "n_rows": rows}
    return record if {name: record.get(name) for name in expected} == expected else None


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


def _new_array(path: Path, shape: tuple[int, int], dtype: str, cache_folder: Path) -> np.memmap:
    """A ``.npy`` file opened for writing, its blocks allocated now: a full disk fails here, in one sentence.

    Without the allocation, writing into the memory map of a file on a full disk kills the process
    with SIGBUS (a full tmpfs), with no message at all.
    """
    needed = int(np.prod(shape)) * np.dtype(dtype).itemsize
    ensure_space(cache_folder, needed)
    try:
        array = np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=shape)
        reserve(path)
    except OSError as error:
        if is_disk_full(error):
            raise disk_full_error(cache_folder, needed) from None
        raise
    return array


@dataclass(frozen=True)
class _Encoded:
    """Tokenized sentences as plain lists, one entry per sentence (so a start token can be prepended)."""

    inputs: dict  # model inputs (input_ids, attention_mask, ...): name -> list of lists of int
    offsets: list  # character (start, end) of each token
    word_ids: list  # word index of each token, None for special tokens
    special: list  # 1 for a special token
    n_truncated: int  # sentences cut to max_length


def _tokenize(tokenizer, texts, max_length, start_token: bool = False) -> _Encoded:
    """Tokenize ``texts``; with ``start_token``, prepend ``bos_token`` where no special token leads."""
    encoding = tokenizer(list(texts), add_special_tokens=True, truncation=True,
                         max_length=max_length - 1 if start_token else max_length,
                         return_offsets_mapping=True, return_special_tokens_mask=True)
    names = [k for k in encoding.keys() if k not in ("offset_mapping", "special_tokens_mask")]
    encoded = _Encoded({k: [list(v) for v in encoding[k]] for k in names},
                       [list(v) for v in encoding["offset_mapping"]],
                       [encoding.word_ids(i) for i in range(len(texts))],
                       [list(v) for v in encoding["special_tokens_mask"]],
                       sum(bool(one.overflowing) for one in encoding.encodings))
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
    """Run the model over one shard and write its token table, per-layer arrays and ``shard.json`` into ``folder``."""
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
    cache_folder = folder.parent.parent  # <cache>/embeddings/<key>.partial/<shard>.tmp-*
    ensure_space(cache_folder, int(offsets[-1]) * loaded.dim * np.dtype(dtype).itemsize * len(kept))
    arrays = {layer: _new_array(folder / f"layer_{layer:02d}.npy", (int(offsets[-1]), loaded.dim), dtype, cache_folder)
              for layer in kept}
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
    try:
        for array in arrays.values():
            array.flush()
        table.to_parquet(folder / "tokens.parquet", index=False)
    except OSError as error:
        if is_disk_full(error):
            raise disk_full_error(cache_folder, len(table) * 64) from None
        raise
    write_text(folder / "shard.json", json.dumps({"first_sentence_id": first_sentence_id, "n_sentences": len(texts),
                                                  "n_rows": len(table), "n_truncated": encoded.n_truncated}))


def _assemble(shards: list[Path], folder: Path, kept, meta: dict) -> None:
    """Concatenate shard tables and arrays into one entry in ``folder``, layer by layer, resumably.

    Each layer is written under a temporary name, renamed, and only then deleted from the shards: the
    disk holds about one copy of the arrays (not the shards and the entry both: 2 x 10 GB for one of
    notebook 01's views), memory one layer of one shard, and a run stopped part-way resumes at the
    first layer not yet renamed. ``meta.json`` and then ``manifest.json`` (each file's size and
    SHA-256) come last, so the folder is complete only with them.
    """
    folder.mkdir(exist_ok=True)
    for stale in folder.glob("*.tmp-*"):  # a layer being written when a run was stopped
        stale.unlink()
    cache_folder = folder.parent.parent  # <cache>/embeddings/<key>.partial/assembled
    tables = [pd.read_parquet(shard / "tokens.parquet") for shard in shards]
    n_tokens = sum(len(t) for t in tables)
    for layer in kept:
        name = f"layer_{layer:02d}.npy"
        if not (folder / name).exists():
            tmp = folder / f"{name}.tmp-{uuid.uuid4().hex[:8]}"
            out = _new_array(tmp, (n_tokens, meta["dim"]), meta["dtype"], cache_folder)
            row = 0
            for shard in shards:
                part = np.load(shard / name, mmap_mode="r")
                out[row:row + len(part)] = part
                row += len(part)
            try:
                out.flush()
            except OSError as error:
                if is_disk_full(error):
                    raise disk_full_error(cache_folder, out.nbytes) from None
                raise
            del out
            os.replace(tmp, folder / name)
        for shard in shards:
            (shard / name).unlink(missing_ok=True)
    table = pd.concat(tables, ignore_index=True)
    try:
        table.to_parquet(folder / "tokens.parquet", index=False)
    except OSError as error:
        if is_disk_full(error):
            raise disk_full_error(cache_folder, n_tokens * 64) from None
        raise
    write_text(folder / "meta.json", json.dumps({**meta, "n_tokens": n_tokens}, indent=1))
    write_manifest(folder)
