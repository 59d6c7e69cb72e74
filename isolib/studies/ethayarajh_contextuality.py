"""Ethayarajh (2019), *How contextual are contextualized word representations?*, as functions.

The study asks how much of a word's representation is fixed by the word and how much by its
context. This module turns an :class:`~isolib.embed.Embeddings` token table into the paper's
units of analysis and computes, layer by layer, its measures with :mod:`isolib.metrics`:

* :func:`occurrence_index` -- which rows of a layer are occurrences of which word;
* :func:`layer_statistics` / :func:`contextuality_by_layer` -- SelfSim, IntraSim and MEV, raw and
  adjusted for anisotropy, and the share of words whose raw MEV is below the baseline;
* :func:`pc_static_vectors` -- a static vector per word from the first principal component of its
  occurrences (the paper's Table 1), scored by :func:`word_benchmarks`;
* :func:`assess_findings` -- the paper's findings beside ours, declared with the rules of
  :mod:`isolib.findings`, which decides their status and writes ``RESULTS.md``.

Occurrences: the rules
----------------------
unit
    ``"token"`` (the paper's unit): every piece of the model's tokenizer is an occurrence of its own
    type, so a multi-piece word contributes e.g. ``play`` and ``##ing`` (WordPiece) or ``play`` and
    ``ing`` (byte-level BPE). ``"word"``: one occurrence per word (``word_id`` of the fast
    tokenizer), whose vector is the mean of its pieces' vectors and whose type is the word's text.
type text
    For ``unit="token"`` the piece as the vocabulary spells it, without the leading space marker of
    byte-level BPE (``Ġ``) or SentencePiece (``▁``): that marker only records a preceding space,
    so ``Ġthe`` and a sentence-initial ``the`` are one type, as the same word was for the authors'
    GPT-2 code (it indexed words, not pieces). The two are distinct vocabulary entries, so in a
    decoder's input layer (no position embedding) such a type's self-similarity is below 1.
    WordPiece's ``##`` is kept: ``##s`` is a different vocabulary entry from ``s``. For
    ``unit="word"`` the word's text in the sentence.
case
    ``lowercase=None`` (default) keeps the text as the model reads it: tokens are left as they are
    (an uncased model such as ``minilm`` already lowercases them, a cased one keeps ``The`` apart
    from ``the``, as the paper's bert-base-cased did); words are lowercased exactly when the model
    is uncased, i.e. when none of its pieces holds an uppercase letter (markers such as ``[UNK]``
    aside). ``True`` / ``False`` force it.
punctuation
    A unit whose text (markers removed) holds no letter and no digit (``str.isalnum`` is false for
    every character) is dropped: ``.``, ``,``, ``--``, ``'``, a lone ``Ġ``. ``5.3`` and ``'s`` stay.
    Special tokens ([CLS], [SEP], BOS) are always dropped.
repeats and the 5-context rule
    Every occurrence is kept, so a word repeated in one sentence counts as several occurrences (as
    in the authors' code). A type is analysed only if it occurs in at least ``min_contexts``
    *distinct* sentences (the paper: 5); a word repeated five times in one sentence has one context.
"""

from __future__ import annotations

import functools
import numbers
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd
import scipy.linalg
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

import isolib.evaluation
import isolib.metrics
from isolib import datasets
from isolib._blas import one_blas_thread
from isolib.cache import memoized, remove_entry
from isolib._checks import as_points, rng
from isolib.embed import check_views, embed, first_position_norm_ratio, is_punctuation, unit_text, view_label
from isolib.evaluation import WordVectors, analogy_accuracy, categorization_purity, word_similarity
from isolib.findings import (
    Finding,
    PaperModel,
    all_of,
    bootstrap_threshold,
    compare_reference,
    declare,
    judge_decoder_views,
    models_line,
    not_comparable,
    paper_counterpart,
    sign,
    spearman,
    threshold,
    trend,
)
from isolib.metrics import (
    anisotropy_baseline,
    intra_similarity,
    mev,
    mev_baseline,
    random_subset_per_group,
    self_similarity,
)
from isolib.models import cache_root, fingerprint, resolve_layers

__all__ = [
    "UNITS",
    "STOPWORDS",
    "PAPER_REFERENCE",
    "STAND_INS",
    "OccurrenceIndex",
    "occurrence_index",
    "corpus_sentences",
    "LayerStatistics",
    "layer_statistics",
    "contextuality_by_layer",
    "anisotropy_by_layer",
    "lowest_self_similarity",
    "first_principal_direction",
    "pc_static_vectors",
    "restricted_to",
    "BENCHMARKS",
    "word_benchmarks",
    "table1_wide",
    "static_embedding_table",
    "CITATION",
    "PAPER_MODELS",
    "counterpart",
    "models_run",
    "example_word_pairs",
    "assess_findings",
]

UNITS = ("token", "word")
_TOKEN_COLUMNS = ("sentence_id", "token", "word_id", "word", "is_special")
# scikit-learn's English stop-word list (318 words), for the paper's "stopwords" finding.
STOPWORDS = frozenset(ENGLISH_STOP_WORDS)


# --------------------------------------------------------------------------- occurrences


# A tokenizer's own markers such as [UNK] or <unk>: uppercase in an uncased vocabulary.
_MARKER_PIECE = re.compile(r"\[[A-Z]+\]|<[^<>]+>")


def _is_uncased(texts) -> bool:
    """True if no text has an uppercase letter, the tokenizer's markers ([UNK], <unk>) aside."""
    return not any(text != text.lower() and not _MARKER_PIECE.fullmatch(text) for text in texts)


@dataclass(frozen=True, eq=False)
class OccurrenceIndex:
    """Which rows of a layer array are occurrences of which type (see the module docstring).

    Attributes
    ----------
    occurrences : pandas.DataFrame, one row per occurrence (punctuation and special tokens left out)
        ``word`` (str, the type), ``sentence_id`` (int), ``n_pieces`` (int, token rows averaged
        into it; 1 for ``unit="token"``), ``kept`` (bool, the type occurs in at least
        ``min_contexts`` distinct sentences). Rows follow the token table's order.
    piece_rows : ndarray of int, shape (n_pieces_total,)
        Rows of the layer arrays, the pieces of occurrence 0 first, then those of occurrence 1, ...
    unit : {"token", "word"}
    lowercase : bool
        Whether type texts were lowercased (the resolved value of the ``lowercase`` argument).
    min_contexts : int
    """

    occurrences: pd.DataFrame
    piece_rows: np.ndarray
    unit: str
    lowercase: bool
    min_contexts: int

    @cached_property
    def starts(self) -> np.ndarray:
        """Position in :attr:`piece_rows` of the first piece of each occurrence."""
        return np.concatenate([[0], np.cumsum(self.occurrences.n_pieces.to_numpy())[:-1]]).astype(np.intp)

    @cached_property
    def words(self) -> pd.Index:
        """The analysed (kept) types, in order of first appearance."""
        return pd.Index(pd.unique(self.occurrences.word[self.occurrences.kept]), name="word")

    @cached_property
    def n_contexts(self) -> pd.Series:
        """Distinct sentences of each analysed type, indexed like :attr:`words`."""
        kept = self.occurrences[self.occurrences.kept]
        return kept.groupby("word", sort=False).sentence_id.nunique().reindex(self.words).rename("n_contexts")

    def vectors(self, layer_array) -> np.ndarray:
        """The ``(n_occurrences, dim)`` float32 vectors of one layer, in :attr:`occurrences` order.

        Parameters
        ----------
        layer_array : array_like of shape (n_tokens, dim)
            One layer of the embeddings the index was built from (e.g. ``Embeddings.layer(l)``,
            memory-mapped; only the rows needed are read).

        Returns
        -------
        ndarray of shape (n_occurrences, dim), float32
            The piece's row (``unit="token"``) or the mean of the word's pieces (``unit="word"``).
        """
        if len(layer_array) <= self.piece_rows.max():
            raise ValueError(
                f"layer_array has {len(layer_array)} rows but the index refers to row {self.piece_rows.max()}; "
                "pass a layer of the embeddings the index was built from."
            )
        pieces = np.asarray(layer_array[self.piece_rows], dtype=np.float32)
        if self.unit == "token":
            return pieces
        sums = np.add.reduceat(pieces, self.starts, axis=0)
        return sums / self.occurrences.n_pieces.to_numpy(dtype=np.float32)[:, None]


def occurrence_index(tokens: pd.DataFrame, *, unit: str = "token", lowercase: bool | None = None,
                     min_contexts: int = 5) -> OccurrenceIndex:
    """Index the occurrences of every type in a token table (the rules are in the module docstring).

    Parameters
    ----------
    tokens : pandas.DataFrame
        The ``tokens`` table of :class:`~isolib.embed.Embeddings` (``sentence_id``, ``token``,
        ``word_id``, ``word``, ``is_special``; row ``i`` is row ``i`` of every layer array).
    unit : {"token", "word"}
        The model's own pieces (the paper), or whole words as the mean of their pieces.
    lowercase : bool or None
        None: the text as the model reads it (see the module docstring); True / False: force.
    min_contexts : int
        Fewest distinct sentences a type needs to be analysed (the paper: 5).

    Returns
    -------
    OccurrenceIndex

    Raises
    ------
    ValueError
        On an unknown unit, missing columns, ``min_contexts < 1``, or no type that meets
        ``min_contexts`` (too few sentences).
    """
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {UNITS}, got {unit!r}.")
    missing = [column for column in _TOKEN_COLUMNS if column not in tokens.columns]
    if missing:
        raise ValueError(f"tokens lacks the column(s) {missing}; pass the tokens table of an Embeddings object.")
    if not isinstance(min_contexts, numbers.Integral) or min_contexts < 1:
        raise ValueError(f"min_contexts must be a positive integer, got {min_contexts!r}.")

    content_rows = np.flatnonzero(~tokens.is_special.to_numpy(dtype=bool))
    if content_rows.size == 0:
        raise ValueError("tokens holds no token other than special tokens.")
    content = tokens.iloc[content_rows]
    piece_text = content.token.map(unit_text)
    if unit == "token":
        text = piece_text
        n_pieces = np.ones(len(content_rows), dtype=np.intp)
        piece_rows = content_rows
        lower = bool(lowercase)
    else:
        # One occurrence per (sentence, word); its pieces are gathered in order of first appearance.
        key = content.sentence_id.to_numpy(np.int64) * (int(content.word_id.max()) + 1) + content.word_id.to_numpy()
        codes, _ = pd.factorize(key)
        order = np.argsort(codes, kind="stable")
        piece_rows = content_rows[order]
        n_pieces = np.bincount(codes)
        first = order[np.concatenate([[0], np.cumsum(n_pieces)[:-1]])]
        content = content.iloc[first]
        text = content.word
        # An uncased tokenizer never emits an uppercase piece: then lowercase words as it does.
        lower = bool(lowercase) if lowercase is not None else _is_uncased(piece_text.unique())
    if lower:
        text = text.str.lower()

    occurrences = pd.DataFrame({
        "word": text.to_numpy(dtype=object),
        "sentence_id": content.sentence_id.to_numpy(),
        "n_pieces": n_pieces,
    })
    punctuation = occurrences.word.map(is_punctuation).to_numpy(dtype=bool)
    occurrences = occurrences[~punctuation].reset_index(drop=True)
    piece_rows = np.asarray(piece_rows)[np.repeat(~punctuation, n_pieces)]
    contexts = occurrences.groupby("word", sort=False).sentence_id.transform("nunique")
    occurrences["kept"] = (contexts >= min_contexts).to_numpy()
    if not occurrences.kept.any():
        raise ValueError(
            f"no word occurs in {min_contexts} or more distinct sentences; use more sentences or a lower min_contexts."
        )
    return OccurrenceIndex(occurrences, piece_rows.astype(np.intp), unit, lower, int(min_contexts))


def corpus_sentences(corpus: str = "sts") -> list[str]:
    """Distinct sentences of the study's corpora, both sides of every pair, in first-seen order.

    ``"sts"``: SemEval STS 2012-2016, every sentence (the paper's data). ``"snli"``: the SNLI dev
    set, every pair with or without a gold label (the course slides used SNLI sentences).
    """
    if corpus == "sts":
        return datasets.sts_sentences()
    if corpus == "snli":
        pairs = datasets.load_pairs("snli", split="dev", gold_only=False)
        return list(dict.fromkeys(pd.concat([pairs.sentence1, pairs.sentence2])))
    raise ValueError(f"corpus must be 'sts' or 'snli', got {corpus!r}.")


# --------------------------------------------------------------------------- per-layer measures


@dataclass(frozen=True)
class LayerStatistics:
    """Result of :func:`layer_statistics` for one layer.

    Attributes
    ----------
    summary : dict of str to float
        ``n_words``, ``n_occurrences``; the baselines ``baseline_cosine`` (SelfSim and IntraSim),
        ``mev_baseline`` (uncentred) and ``mev_centred_baseline``; the means over words or
        sentences of the raw measures ``self_similarity``, ``intra_similarity``, ``mev``,
        ``mev_centred``, each with its ``*_adjusted`` value (raw minus the baseline of the layer);
        ``mev_below_baseline``, the share of words whose raw MEV is below ``mev_baseline``;
        ``mev_authors_adjusted``, the authors' code's mixed estimator (centred word MEV minus the
        *uncentred* baseline, REFERENCE.md 01); and ``mean_norm``, the mean norm of the
        occurrence vectors.
    per_word : pandas.DataFrame indexed by word
        ``n_contexts``, ``self_similarity``, ``mev``, ``mev_centred`` (raw).
    """

    summary: dict
    per_word: pd.DataFrame


def _word_blocks(index: OccurrenceIndex, vectors: np.ndarray, max_occurrences: int | None, random_state):
    """Yield ``(word, occurrence matrix)`` for every analysed word, with at most ``max_occurrences`` rows."""
    kept = index.occurrences.kept.to_numpy()
    codes = pd.Categorical(index.occurrences.word[kept], categories=index.words).codes
    rows = np.flatnonzero(kept)
    chosen = random_subset_per_group(codes, max_occurrences, rng(random_state))
    chosen = chosen[np.argsort(codes[chosen], kind="stable")]
    bounds = np.searchsorted(codes[chosen], np.arange(len(index.words) + 1))
    for code, word in enumerate(index.words):
        yield word, vectors[rows[chosen[bounds[code]:bounds[code + 1]]]]


def _mev_centred(block: np.ndarray) -> float:
    """Centred MEV, NaN where all occurrences are identical (e.g. a decoder's input layer)."""
    if (block == block[0]).all():
        return np.nan
    return mev(block, centered=True)


def layer_statistics(index: OccurrenceIndex, layer_array, *, n_samples: int = 1000,
                     max_occurrences: int | None = None, random_state: int = 0) -> LayerStatistics:
    """Ethayarajh's contextuality measures of one layer, raw and adjusted for anisotropy.

    * ``SelfSim(w)``: :func:`isolib.metrics.self_similarity` over the occurrences of ``w`` in
      different sentences (pairs inside one sentence are excluded, the paper's definition).
    * ``IntraSim(s)``: :func:`isolib.metrics.intra_similarity` over every occurrence of the
      sentence (punctuation excluded, words below ``min_contexts`` included: they are part of it).
    * ``MEV(w)``: :func:`isolib.metrics.mev` of ``w``'s occurrence matrix, uncentred (the paper's
      formula) and centred (the authors' per-word code, scikit-learn's PCA).
    * Baselines: ``n_samples`` occurrences drawn uniformly from all occurrences of the layer;
      :func:`isolib.metrics.anisotropy_baseline` (mean cosine over the pairs from different
      sentences) and :func:`isolib.metrics.mev_baseline` on the *same* draw. Adjusted = raw minus
      the baseline of the same layer. Means are unweighted over words (or sentences).

    Parameters
    ----------
    index : OccurrenceIndex
    layer_array : array_like of shape (n_tokens, dim)
    n_samples : int
        Occurrences behind each baseline (the paper: 1,000).
    max_occurrences : int or None
        MEV of a word uses at most this many of its occurrences, drawn uniformly (None: all);
        SelfSim is exact over all occurrences at any frequency.
    random_state : int
        Seed of the baseline draw and of the MEV subsample. With the same seed, every layer draws
        the same occurrences, so differences between layers are not sampling noise.

    Returns
    -------
    LayerStatistics
    """
    vectors = index.vectors(layer_array)
    contexts = index.occurrences.sentence_id.to_numpy()
    kept = index.occurrences.kept.to_numpy()
    words = index.occurrences.word.to_numpy()[kept]

    with one_blas_thread():
        baseline_cosine = anisotropy_baseline(vectors, contexts, n_samples=n_samples, random_state=random_state)
        baseline_mev = mev_baseline(vectors, n_samples=n_samples, random_state=random_state)
        baseline_mev_centred = mev_baseline(vectors, n_samples=n_samples, centered=True, random_state=random_state)
        self_sim = self_similarity(vectors[kept], words, contexts[kept]).reindex(index.words)
        intra_sim = intra_similarity(vectors, contexts)
        blocks = list(_word_blocks(index, vectors, max_occurrences, random_state))
        per_word = pd.DataFrame({
            "n_contexts": index.n_contexts,
            "self_similarity": self_sim,
            "mev": pd.Series({word: mev(block) for word, block in blocks}),
            "mev_centred": pd.Series({word: _mev_centred(block) for word, block in blocks}),
        }).reindex(index.words)

    summary = {
        "n_words": len(per_word),
        "n_occurrences": int(kept.sum()),
        "mean_norm": float(np.linalg.norm(vectors, axis=1).mean()),
        "baseline_cosine": baseline_cosine,
        "self_similarity": float(per_word.self_similarity.mean()),
        "self_similarity_adjusted": float(per_word.self_similarity.mean() - baseline_cosine),
        "intra_similarity": float(intra_sim.mean()),
        "intra_similarity_adjusted": float(intra_sim.mean() - baseline_cosine),
        "mev_baseline": baseline_mev,
        "mev": float(per_word.mev.mean()),
        "mev_adjusted": float(per_word.mev.mean() - baseline_mev),
        "mev_below_baseline": float((per_word.mev < baseline_mev).mean()),
        "mev_centred_baseline": baseline_mev_centred,
        "mev_centred": float(per_word.mev_centred.mean()),
        "mev_centred_adjusted": float(per_word.mev_centred.mean() - baseline_mev_centred),
        "mev_authors_adjusted": float(per_word.mev_centred.mean() - baseline_mev),
    }
    return LayerStatistics(summary, per_word)


# What a stored layer's statistics depend on besides their inputs (:func:`isolib.cache.memoized`).
_LAYER_CODE = (sys.modules[__name__], isolib.metrics)


def contextuality_by_layer(embeddings, index: OccurrenceIndex, *, n_samples: int = 1000,
                           max_occurrences: int | None = None, random_state: int = 0,
                           resume: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`layer_statistics` for every stored layer of one model.

    Parameters
    ----------
    embeddings : isolib.embed.Embeddings
    index : OccurrenceIndex
        Built from ``embeddings.tokens``.
    n_samples, max_occurrences, random_state
        As in :func:`layer_statistics`.
    resume : bool
        Store each layer's statistics in the cache (:func:`isolib.cache.memoized`, keyed by the
        embedding entry, the index, the options and this module's and the metrics' source) and reuse
        them: a rerun that changes only what is plotted does not read the layers again, and a
        stopped run resumes at the layer it was on.

    Returns
    -------
    per_layer : pandas.DataFrame
        One row per layer: ``model``, ``layer``, ``n_layers`` (hidden states of the model) and the
        :attr:`LayerStatistics.summary` entries.
    per_word : pandas.DataFrame
        One row per (layer, word): ``model``, ``layer``, ``word`` and the per-word columns.
    """
    options = {"n_samples": n_samples, "max_occurrences": max_occurrences, "random_state": random_state}
    occurrences = index.occurrences
    identity = {"entry": embeddings.path.name, "first_position": embeddings.first_position,
                "words": occurrences.word.to_numpy(dtype=object), "sentence_id": occurrences.sentence_id.to_numpy(),
                "n_pieces": occurrences.n_pieces.to_numpy(), "kept": occurrences.kept.to_numpy(),
                "piece_rows": index.piece_rows, "unit": index.unit, "options": options}
    rows, words = [], []
    for layer in embeddings.layers:
        def compute(layer=layer) -> LayerStatistics:
            return layer_statistics(index, embeddings.layer(layer), **options)

        result = memoized("ethayarajh_layers", {**identity, "layer": layer}, compute, code=_LAYER_CODE, store=resume)
        rows.append({"model": embeddings.model, "layer": layer, "n_layers": embeddings.n_layers, **result.summary})
        words.append(result.per_word.reset_index().assign(model=embeddings.model, layer=layer))
    per_word = pd.concat(words, ignore_index=True)
    return pd.DataFrame(rows), per_word[["model", "layer", *result.per_word.reset_index().columns]]


def anisotropy_by_layer(embeddings, *, n_samples: int = 1000, random_state: int = 0) -> pd.DataFrame:
    """The anisotropy baseline of every stored layer, over the non-special tokens (no word index needed).

    The quick look of notebook 00: :func:`isolib.metrics.anisotropy_baseline` (mean cosine between
    ``n_samples`` random tokens from different sentences) and the mean token norm, per layer.
    :func:`layer_statistics` computes the same baseline over the occurrences of its word index.

    Parameters
    ----------
    embeddings : isolib.embed.Embeddings
    n_samples : int
        Tokens drawn per layer; with the same ``random_state`` every layer draws the same tokens.
    random_state : int

    Returns
    -------
    pandas.DataFrame
        One row per layer: ``model``, ``layer``, ``average_cosine``, ``mean_norm``.
    """
    content = (~embeddings.tokens.is_special).to_numpy()
    sentence_ids = embeddings.tokens.sentence_id.to_numpy()[content]
    rows = []
    for layer in embeddings.layers:
        vectors = np.asarray(embeddings.layer(layer)[content], dtype=np.float64)
        rows.append({"model": embeddings.model, "layer": layer,
                     "average_cosine": anisotropy_baseline(vectors, sentence_ids, n_samples=n_samples,
                                                           random_state=random_state),
                     "mean_norm": float(np.linalg.norm(vectors, axis=1).mean())})
    return pd.DataFrame(rows)


def lowest_self_similarity(per_word: pd.DataFrame, *, n_words: int = 10) -> pd.DataFrame:
    """The ``n_words`` words of lowest self-similarity in every layer of every model.

    Adjusting for anisotropy subtracts one number per layer, so the raw and adjusted rankings agree.

    Parameters
    ----------
    per_word : pandas.DataFrame
        The ``per_word`` table of :func:`contextuality_by_layer` (several models may be concatenated).
    n_words : int

    Returns
    -------
    pandas.DataFrame
        ``model``, ``layer``, ``words`` (comma-separated, lowest first) and ``stopword_share``
        (fraction of them in :data:`STOPWORDS`, compared in lowercase).
    """
    rows = []
    for (model, layer), group in per_word.groupby(["model", "layer"], sort=False):
        lowest = group.nsmallest(n_words, "self_similarity").word
        rows.append({"model": model, "layer": layer, "words": ", ".join(lowest),
                     "stopword_share": float(lowest.str.lower().isin(STOPWORDS).mean())})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- PC static embeddings


def first_principal_direction(X) -> np.ndarray:
    """First right-singular vector of the *uncentred* matrix ``X``, its sign fixed by the mean row.

    A singular vector is defined up to sign; the one returned has a non-negative dot product with
    the mean of the rows (so it points the way the occurrences do). If that dot product is exactly
    0, the largest-magnitude coordinate is made positive. Computed in float64 as the top
    eigenvector of the smaller Gram matrix (``X X^T`` or ``X^T X``).

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
        The occurrence matrix of one word in one layer (not all zero).

    Returns
    -------
    ndarray of shape (n_features,), float64, unit norm

    Raises
    ------
    ValueError
        On NaN/infinity or an all-zero matrix.
    """
    points = as_points(X)
    if not points.any():
        raise ValueError("X is all zeros, so it has no principal direction.")
    n_samples, n_features = points.shape
    if n_samples < n_features:
        # v1 = X^T u1 / sigma1, with u1 the top eigenvector of X X^T.
        left = scipy.linalg.eigh(points @ points.T, subset_by_index=[n_samples - 1, n_samples - 1])[1][:, 0]
        direction = points.T @ left
    else:
        direction = scipy.linalg.eigh(points.T @ points, subset_by_index=[n_features - 1, n_features - 1])[1][:, 0]
    direction /= np.linalg.norm(direction)
    agreement = direction @ points.mean(axis=0)
    if agreement < 0 or (agreement == 0 and direction[np.argmax(np.abs(direction))] < 0):
        direction = -direction
    return direction


def pc_static_vectors(index: OccurrenceIndex, layer_array, *, max_occurrences: int | None = None,
                      random_state: int = 0) -> WordVectors:
    """A static vector per analysed word: :func:`first_principal_direction` of its occurrences.

    Parameters
    ----------
    index : OccurrenceIndex
    layer_array : array_like of shape (n_tokens, dim)
    max_occurrences : int or None
        At most this many occurrences per word, drawn uniformly (None: all).
    random_state : int
        Seed of that draw.

    Returns
    -------
    WordVectors
        Words in decreasing number of contexts (ties in order of first appearance), like the
        frequency-ordered files of static embeddings.
    """
    vectors = index.vectors(layer_array)
    with one_blas_thread():
        directions = {word: first_principal_direction(block)
                      for word, block in _word_blocks(index, vectors, max_occurrences, random_state)}
    order = index.n_contexts.sort_values(ascending=False, kind="stable").index
    return WordVectors(list(order), np.stack([directions[word] for word in order]))


def restricted_to(vectors: WordVectors, words: Sequence[str]) -> WordVectors:
    """The words of ``vectors`` that are in ``words``, in the order of ``words``."""
    present = [word for word in words if word in vectors]
    if not present:
        raise ValueError("none of the words is in the vocabulary.")
    return WordVectors(present, vectors.matrix[vectors.rows(present)])


# --------------------------------------------------------------------------- word benchmarks

# Table 1 of the paper: name -> (task, loader). SemEval-2012 is read as prototype-candidate
# analogies: the stored copy has no graded scores (see datasets.load_relational_similarity).
BENCHMARKS: dict[str, tuple[str, object]] = {
    "SimLex-999": ("similarity", functools.partial(datasets.load_word_similarity, "simlex999")),
    "MEN": ("similarity", functools.partial(datasets.load_word_similarity, "men")),
    "WS353": ("similarity", functools.partial(datasets.load_word_similarity, "wordsim353")),
    "RW": ("similarity", functools.partial(datasets.load_word_similarity, "rareword")),
    "SemEval-2012": ("analogy", datasets.load_relational_similarity),
    "Google": ("analogy", functools.partial(datasets.load_analogy, "google")),
    "MSR": ("analogy", functools.partial(datasets.load_analogy, "msr")),
    "BLESS": ("categorization", functools.partial(datasets.load_categorization, "bless")),
    "AP": ("categorization", functools.partial(datasets.load_categorization, "ap")),
}
_WORD_COLUMNS = {"similarity": ["word1", "word2"], "analogy": ["a", "b", "c", "d"], "categorization": ["word"]}
_METRICS = {"similarity": "spearman", "analogy": "accuracy", "categorization": "purity"}


@functools.cache
def _benchmark(name: str, lowercase: bool) -> pd.DataFrame:
    task, load = BENCHMARKS[name]
    table = load()
    if lowercase:
        table = table.assign(**{column: table[column].str.lower() for column in _WORD_COLUMNS[task]})
    return table


def word_benchmarks(vectors: WordVectors, *, restrict_vocab: int | None = None, random_state: int = 0) -> pd.DataFrame:
    """Score word vectors on every benchmark of the paper's Table 1.

    Similarity (SimLex-999, MEN, WS353, RW): Spearman's rho of cosines with the ratings
    (:func:`isolib.evaluation.word_similarity`). Analogy (Google, MSR, and SemEval-2012 read as
    prototype-candidate analogies, since the stored copy has no graded scores): 3CosAdd accuracy
    (:func:`isolib.evaluation.analogy_accuracy`). Categorization (BLESS, AP): purity of Ward
    clustering (:func:`isolib.evaluation.categorization_purity`).

    Out-of-vocabulary rule: an item (pair, question, word) with a word missing from the vocabulary
    is skipped and ``coverage`` reports the share of items scored. A benchmark left with too few
    items to score (fewer than 3 pairs, as the rank correlation of 2 pairs is always 1 or -1; no
    question; or words from fewer than 2 categories) gets a NaN score. Benchmark words are
    lowercased when the vocabulary has no uppercase letter (an uncased model or GloVe; a marker
    such as ``[UNK]`` aside); otherwise they are looked up as spelled.

    Parameters
    ----------
    vectors : WordVectors
    restrict_vocab : int or None
        Analogy answers are searched among the first ``restrict_vocab`` words only (for a large
        frequency-ordered vocabulary such as GloVe's 400k words); None: all.
    random_state : int
        Seed of the clustering (Ward is deterministic; kept for other methods).

    Returns
    -------
    pandas.DataFrame
        One row per benchmark: ``benchmark``, ``task``, ``metric``, ``score``, ``n_used``,
        ``n_total``, ``coverage``.
    """
    lowercase = _is_uncased(vectors.words)
    n_candidates = len(vectors) if restrict_vocab is None else min(restrict_vocab, len(vectors))
    results = []
    for name, (task, _) in BENCHMARKS.items():
        table = _benchmark(name, lowercase)
        # Analogy answers come from the first n_candidates words, so coverage is counted there.
        vocabulary_size = n_candidates if task == "analogy" else len(vectors)
        looked_up = [vectors.rows(table[column]) for column in _WORD_COLUMNS[task]]
        found = np.logical_and.reduce([(row >= 0) & (row < vocabulary_size) for row in looked_up])
        if task == "similarity":
            scorable = found.sum() >= 3
        elif task == "analogy":
            scorable = found.any()
        else:
            scorable = table.category[found].nunique() >= 2
        score = np.nan
        if scorable:
            if task == "similarity":
                score = word_similarity(vectors, table).score
            elif task == "analogy":
                score = analogy_accuracy(vectors, table, restrict_vocab=restrict_vocab).score
            else:
                score = categorization_purity(vectors, table, random_state=random_state).score
        results.append({"benchmark": name, "task": task, "metric": _METRICS[task], "score": score,
                        "n_used": int(found.sum()), "n_total": len(table), "coverage": float(found.mean())})
    return pd.DataFrame(results)


def static_embedding_table(embeddings, index: OccurrenceIndex, layers: Sequence[int], static: WordVectors, *,
                           static_name: str, max_occurrences: int | None = None, random_state: int = 0) -> pd.DataFrame:
    """The paper's Table 1 for one model: PC static vectors of some layers against a static embedding.

    Each layer's :func:`pc_static_vectors` are scored with :func:`word_benchmarks`; so is the static
    embedding restricted to the same words (:func:`restricted_to`), so that both are scored on
    (nearly) the same items: a small vocabulary makes analogies easier (fewer wrong candidates), and
    only the same vocabulary makes the comparison fair.

    Parameters
    ----------
    embeddings : isolib.embed.Embeddings
    index : OccurrenceIndex
        Built from ``embeddings.tokens``.
    layers : sequence of int
        Layers to score (negative numbers count from the top).
    static : WordVectors
        The static embedding (e.g. GloVe).
    static_name : str
        Its name in the table.
    max_occurrences, random_state
        As in :func:`pc_static_vectors`.

    Returns
    -------
    pandas.DataFrame
        The :func:`word_benchmarks` rows with ``model``, ``embedding`` (``"layer L"`` or
        ``"<static_name> (same words)"``) and ``layer`` (NaN for the static rows) in front.
    """
    tables = []
    for layer in resolve_layers(list(layers), embeddings.n_layers):
        vectors = pc_static_vectors(index, embeddings.layer(layer), max_occurrences=max_occurrences,
                                    random_state=random_state)
        tables.append(word_benchmarks(vectors).assign(embedding=f"layer {layer}", layer=float(layer)))
    same_words = restricted_to(static, index.words)
    tables.append(word_benchmarks(same_words).assign(embedding=f"{static_name} (same words)", layer=np.nan))
    table = pd.concat(tables, ignore_index=True).assign(model=embeddings.model)
    return table[["model", "embedding", "layer", *tables[0].columns.drop(["embedding", "layer"])]]


# --------------------------------------------------------------------------- one view's tables, stored

@dataclass(frozen=True)
class ViewTables:
    """Everything notebook 01 reads from one view of one model's embeddings: small tables.

    Attributes
    ----------
    label : str
        :func:`isolib.embed.view_label` of the model and view.
    entry : str
        Folder of the embedding cache entry the tables were computed from (``cache list``'s last column).
    is_decoder : bool
        Whether the model's position 0 is a word (then every view of it gets a first-position norm ratio).
    layers : tuple of int
        The stored layers.
    n_layers : int
        Hidden states of the model.
    n_tokens, n_occurrences, n_types, n_kept : int
        Token rows (special tokens not stored), non-punctuation occurrences, types in at least
        ``min_contexts`` sentences, and their occurrences.
    norm_ratio : pandas.Series, indexed by layer
        :func:`isolib.embed.first_position_norm_ratio`.
    per_layer, per_word : pandas.DataFrame
        :func:`contextuality_by_layer`'s tables, ``model`` set to ``label``; ``per_layer`` has the
        ``first_position_norm_ratio`` column too.
    table1 : pandas.DataFrame
        :func:`static_embedding_table`'s rows, ``model`` set to ``label``.
    """

    label: str
    entry: str
    is_decoder: bool
    layers: tuple[int, ...]
    n_layers: int
    n_tokens: int
    n_occurrences: int
    n_types: int
    n_kept: int
    norm_ratio: pd.Series
    per_layer: pd.DataFrame
    per_word: pd.DataFrame
    table1: pd.DataFrame


def _view_tables(model: str, sentences: Sequence[str], first_position: str, *, layers, dtype: str, device: str,
                 unit: str, min_contexts: int, n_samples: int, max_occurrences: int | None, random_state: int,
                 table1_layers: Sequence[int], static: WordVectors, static_name: str) -> ViewTables:
    embeddings = embed(model, sentences, layers=layers, dtype=dtype, device=device, keep_special=False,
                       first_position=first_position)
    label = view_label(embeddings.model, first_position)
    index = occurrence_index(embeddings.tokens, unit=unit, min_contexts=min_contexts)
    norm_ratio = first_position_norm_ratio(embeddings)
    per_layer, per_word = contextuality_by_layer(embeddings, index, n_samples=n_samples,
                                                 max_occurrences=max_occurrences, random_state=random_state,
                                                 resume=True)
    per_layer["model"] = per_word["model"] = label
    per_layer["first_position_norm_ratio"] = norm_ratio.reindex(per_layer.layer).to_numpy()
    # Table 1's layers among those extracted (a layer not extracted for a model is left out), each once.
    wanted = dict.fromkeys(layer % embeddings.n_layers for layer in table1_layers)
    table1 = static_embedding_table(embeddings, index, [layer for layer in wanted if layer in embeddings.layers],
                                    static, static_name=static_name, max_occurrences=max_occurrences,
                                    random_state=random_state).assign(model=label)
    return ViewTables(label=label, entry=embeddings.path.name,
                      is_decoder=first_position != "keep" or embeddings.starts_with_content,
                      layers=embeddings.layers, n_layers=embeddings.n_layers, n_tokens=len(embeddings.tokens),
                      n_occurrences=len(index.occurrences), n_types=len(index.words),
                      n_kept=int(index.occurrences.kept.sum()), norm_ratio=norm_ratio, per_layer=per_layer,
                      per_word=per_word, table1=table1)


# What a view's stored tables depend on besides their inputs (:func:`isolib.cache.memoized`).
_VIEW_CODE = (sys.modules[__name__], isolib.metrics, isolib.evaluation)


def contextuality_tables(model: str, sentences: Sequence[str], *, views: Sequence[str] = ("start_token",),
                         layers=None, dtype: str = "float16", device: str = "cpu", unit: str = "token",
                         min_contexts: int = 5, n_samples: int = 1000, max_occurrences: int | None = None,
                         random_state: int = 0, table1_layers: Sequence[int] = (1, -1), static: WordVectors,
                         static_name: str, keep_embeddings: bool = True) -> dict[str, ViewTables]:
    """Every table of notebook 01 that needs one model's embeddings, per view of its first position, stored.

    For each view (the paper's ``keep``, then ``views`` if the model is a decoder, as
    :func:`isolib.embed.embed_views`): extract or read the embeddings (special tokens not stored),
    index the occurrences (:func:`occurrence_index`), and compute the first-position norm ratio,
    :func:`contextuality_by_layer` and :func:`static_embedding_table`. Each view's tables are stored in
    the cache (:func:`isolib.cache.memoized`, keyed by the model's weights, the sentences, every option
    and the source of this module, the metrics and the evaluation): a rerun that changes only what is
    plotted does not open the embeddings, nor extract them if they were deleted.

    Parameters
    ----------
    model : str
        Offline short name or Hub id (:func:`isolib.embed.embed`).
    sentences : sequence of str
    views : sequence of {"start_token", "drop"}
        A decoder's other views of its first position.
    layers, dtype, device
        As in :func:`isolib.embed.embed`.
    unit, min_contexts
        As in :func:`occurrence_index`.
    n_samples, max_occurrences, random_state
        As in :func:`layer_statistics`.
    table1_layers : sequence of int
        Layers whose PC static vectors are scored (negative counts from the top; those not extracted
        are left out).
    static : WordVectors
        The static embedding of Table 1.
    static_name : str
        Its name in Table 1.
    keep_embeddings : bool
        False: delete each embedding entry (:func:`isolib.cache.remove_entry`) once the tables of every
        view reading it are stored, so that at most one entry is on disk at a time and none is left;
        a rerun with changed analysis code extracts it again.

    Returns
    -------
    dict of str to ViewTables
        Keyed by :func:`isolib.embed.view_label`, the ``keep`` view first.
    """
    check_views(views)
    options = {"layers": layers, "dtype": dtype, "unit": unit, "min_contexts": min_contexts, "n_samples": n_samples,
               "max_occurrences": max_occurrences, "random_state": random_state,
               "table1_layers": list(table1_layers), "static_name": static_name}
    identity = {"model": model, "weights": fingerprint(model), "sentences": list(sentences), "static": static,
                **options}
    # "drop" reads the rows of the "keep" entry: it comes right after, before that entry is deleted.
    ordered = ["keep", *sorted(set(views), key=lambda view: view != "drop")]
    result = {}
    for position, first_position in enumerate(ordered):
        tables = memoized("ethayarajh_views", {**identity, "first_position": first_position},
                          functools.partial(_view_tables, model, sentences, first_position, device=device,
                                            static=static, **options),
                          code=_VIEW_CODE)
        result[tables.label] = tables
        last = not tables.is_decoder  # an encoder: position 0 is [CLS], one view only
        if not keep_embeddings and (last or "drop" not in ordered[position + 1:]):
            _delete_entry(tables.entry)
        if last:
            break
    return result


def _delete_entry(folder: str) -> None:
    path = cache_root() / "embeddings" / folder
    if path.exists():
        remove_entry(path)


# --------------------------------------------------------------------------- findings

CITATION = ("Kawin Ethayarajh (2019), *How Contextual are Contextualized Word Representations? Comparing the "
            "Geometry of BERT, ELMo, and GPT-2 Embeddings*, EMNLP-IJCNLP 2019, pp. 55-65; and the course slides "
            "*BERT Visualization* (Xueren Ge and Haibei Zhu)")
PAPER_MODELS = (PaperModel("bert-base-cased", "BERT", 13), PaperModel("gpt2", "GPT-2", 13),
                PaperModel("elmo", "ELMo", 3))
# The authors' committed statistics (REFERENCE.md, "01 - Ethayarajh"): measure -> layer -> value,
# or (low, high) for a value given as a range over several layers.
PAPER_REFERENCE: dict[str, dict[str, dict]] = {
    "bert-base-cased": {
        "baseline_cosine": {0: 0.105, 6: 0.42, 11: 0.675, 12: 0.477},
        "self_similarity": {0: 0.954, 8: 0.731, 11: 0.839, 12: 0.755},
        "intra_similarity": {12: 0.776},
    },
    "gpt2": {
        "baseline_cosine": {0: 0.61, (2, 9): (0.57, 0.62), 11: 0.758, 12: 0.978},
        "self_similarity": {0: 0.917, 8: 0.838, 12: 0.985},
        "intra_similarity": {12: 0.990},
    },
    "elmo": {
        "baseline_cosine": {0: 0.008, 1: 0.157, 2: 0.136},
        "intra_similarity": {2: 0.621},
    },
}
_MEASURE_NAMES = {"baseline_cosine": "average cosine between random words",
                  "self_similarity": "mean raw self-similarity",
                  "intra_similarity": "mean raw intra-sentence similarity"}
# The nearest offline model of the same kind (README, "Models"): encoders for BERT, the decoder for GPT-2.
STAND_INS = {"minilm": "bert-base-cased", "mpnet": "bert-base-cased", "smollm2": "gpt2"}


def counterpart(model: str) -> str | None:
    """The paper model ``model`` (or a view of it) is compared with: itself, its stand-in, or None."""
    return paper_counterpart(model, PAPER_REFERENCE, STAND_INS)


def models_run(models: Sequence[str], static_name: str) -> str:
    """The ``Models`` line of ``RESULTS.md``: each model and the paper model it stands in for."""
    return models_line(models, PAPER_MODELS, counterpart) + f"; static baseline {static_name}; ELMo is not run."


def example_word_pairs(per_word: pd.DataFrame, wordnet: pd.DataFrame, *, n_pairs: int = 5) -> list[tuple[str, str]]:
    """Pairs of a stable noun and a frequent verb for the slides' per-word MEV finding, by a stated rule.

    Nouns: words that WordNet lists only as a noun, with at most 2 senses, three or more letters,
    not a stopword, not ending in ``s`` or ``ing`` (WordNet lists many inflected forms as nouns:
    ``talks``, ``using``). Verbs: words with at least 10 WordNet verb senses and more verb than
    noun senses (``go``: 30 and 4). Both ranked by their number of contexts (ties by first
    appearance); the i-th noun is paired with the i-th verb. Words are looked up in lowercase.

    Parameters
    ----------
    per_word : pandas.DataFrame
        The ``per_word`` table of one model (``word``, ``n_contexts``; any number of layers).
    wordnet : pandas.DataFrame
        :func:`isolib.datasets.load_wordnet_pos` (``word``, ``pos``, ``n_senses``).
    n_pairs : int

    Returns
    -------
    list of (str, str)
        At most ``n_pairs`` pairs (fewer when the corpus has fewer such words).
    """
    contexts = per_word.groupby("word", sort=False).n_contexts.max().sort_values(ascending=False, kind="stable")
    senses = wordnet.pivot_table(index="word", columns="pos", values="n_senses", fill_value=0)
    senses = senses.reindex(columns=["noun", "verb", "adjective", "adverb"], fill_value=0)
    found = senses.reindex(contexts.index.str.lower()).fillna(0).set_axis(contexts.index)
    lower = contexts.index.str.lower()
    nouns = contexts.index[found.noun.between(1, 2) & (found[["verb", "adjective", "adverb"]].sum(axis=1) == 0)
                           & lower.str.fullmatch(r"[a-z]{3,}") & ~lower.str.endswith(("s", "ing"))
                           & ~lower.isin(STOPWORDS)]
    verbs = contexts.index[(found.verb >= 10) & (found.verb > found.noun) & lower.str.fullmatch(r"[a-z]+")]
    return list(zip(nouns[:n_pairs], verbs[:n_pairs]))


def table1_wide(table1: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 1 as the paper prints it: one row per (model, embedding), one column per benchmark.

    Parameters
    ----------
    table1 : pandas.DataFrame
        :func:`static_embedding_table` and :func:`word_benchmarks` rows (``model``, ``embedding``,
        ``benchmark``, ``score``, ``coverage``), concatenated.

    Returns
    -------
    scores, coverage : pandas.DataFrame
        Columns ``model``, ``embedding``, then the benchmarks in their first order of appearance; rows
        in theirs too.
    """
    rows = pd.MultiIndex.from_frame(table1[["model", "embedding"]].drop_duplicates())
    benchmarks = list(pd.unique(table1.benchmark))
    scores, coverage = (table1.pivot(index=["model", "embedding"], columns="benchmark", values=values)
                        .reindex(index=rows, columns=benchmarks).reset_index() for values in ("score", "coverage"))
    return scores.rename_axis(columns=None), coverage.rename_axis(columns=None)


def _over_types(per_word: pd.DataFrame, model: str, column: str, layers) -> np.ndarray:
    """One model's per-type measure as an array of shape (n_types, n_layers): the sampling unit in rows."""
    rows = per_word[per_word.model == model].pivot(index="word", columns="layer", values=column)
    return rows.reindex(columns=list(layers)).to_numpy(dtype=float)


def _model_findings(model: str, table: pd.DataFrame, lowest: pd.DataFrame, per_word: pd.DataFrame,
                    table1: pd.DataFrame | None, example_pairs, n_lowest: int, min_coverage: float) -> list[Finding]:
    """The paper's qualitative findings on one model (see :func:`assess_findings`).

    The per-type claims (self-similarity, MEV) carry a bootstrap interval over word types: the
    types are resampled and each layer's mean recomputed, the layer's baseline held (it comes from
    its own random draw of occurrences).
    """
    upper = table[table.index > 0]
    paper_model = counterpart(model)
    intra = table.intra_similarity_adjusted
    shares = lowest[(lowest.model == model) & (lowest.layer > 0)].stopword_share
    stopwords = bootstrap_threshold(shares.to_numpy(), np.median, above=0.5, inclusive=True)
    self_sim = _over_types(per_word, model, "self_similarity", table.index)
    raw_mev = _over_types(per_word, model, "mev", upper.index)
    baseline, mev_baseline = table.baseline_cosine.to_numpy(), upper.mev_baseline.to_numpy()
    falls = bootstrap_threshold(
        self_sim, lambda types: spearman(table.index, np.nanmean(types, axis=0) - baseline), below=-0.5)
    mev_adjusted = bootstrap_threshold(raw_mev, lambda types: np.max(np.nanmean(types, axis=0) - mev_baseline),
                                       below=0.05)
    below_baseline = bootstrap_threshold(
        raw_mev, lambda types: np.max(np.nanmean(types < mev_baseline, axis=0)), above=0.1, inclusive=True)
    findings = [
        declare("Anisotropy in every non-input layer",
                "average cosine between random words well above 0 in every non-input layer of BERT, GPT-2 and ELMo",
                model, f"lowest {upper.baseline_cosine.min():.3f} (L{upper.baseline_cosine.idxmin()})",
                threshold(upper.baseline_cosine, above=0.1),
                "reproduced if the average cosine exceeds 0.1 in every non-input layer.", kind="test",
                control="an isotropic space (average cosine 0)", threshold_ours=True, headline=True),
        declare("Anisotropy grows with depth", "higher layers more anisotropic (BERT 0.105 at L0, 0.42 at L6, 0.675 at L11)",
                model, f"Spearman {spearman(upper.index, upper.baseline_cosine):.2f} (layer vs average cosine)",
                trend(upper.baseline_cosine, rising=True),
                "reproduced if Spearman's rho of the average cosine against the layer exceeds 0.5 over "
                "non-input layers.", kind="test", control="no trend with depth (rho 0)", threshold_ours=True),
        declare("Self-similarity falls with depth", "upper layers more context-specific in all three models", model,
                f"Spearman {spearman(table.index, table.self_similarity_adjusted):.2f} {falls.interval_text} "
                "(layer vs adjusted self-similarity)",
                falls,
                "reproduced if Spearman's rho of the adjusted self-similarity against the layer is below -0.5; "
                "borderline if the 95% bootstrap interval over word types crosses -0.5.",
                kind="test", control="no trend with depth (rho 0)", threshold_ours=True, headline=True),
        declare("Stopwords have the lowest self-similarity", "e.g. ELMo's lowest: and, of, 's, the, to", model,
                f"median stopword share {shares.median():.2f} {stopwords.interval_text} among the {n_lowest} lowest "
                f"(per layer: {', '.join(f'{share:.1f}' for share in shares)})",
                stopwords,
                f"reproduced if, in the median non-input layer, at least half of the {n_lowest} words of lowest "
                "self-similarity are stopwords (scikit-learn's English list); borderline if the 95% bootstrap "
                "interval over layers crosses 0.5.", kind="test", control="half of the lowest words", threshold_ours=True),
    ]
    if paper_model == "bert-base-cased":
        rho = spearman(upper.index, upper.intra_similarity_adjusted)
        findings.append(declare(
            "BERT: same-sentence words grow apart in upper layers but stay more similar than random words",
            "adjusted intra-sentence similarity > 0 in every layer; lower in upper layers", model,
            f"min adjusted {intra.min():.3f}; Spearman {rho:.2f} over non-input layers",
            all_of(threshold(intra, above=0.0), trend(upper.intra_similarity_adjusted, rising=False, min_rho=0.0)),
            "reproduced if the adjusted intra-sentence similarity is above 0 in every layer and falls "
            "with depth (Spearman's rho < 0) over non-input layers.", kind="test",
            control="random words (adjusted similarity 0) and no trend with depth"))
    elif paper_model == "gpt2":
        near_zero = float((upper.intra_similarity_adjusted.abs() < 0.05).mean())
        findings.append(declare(
            "GPT-2: same-sentence words no more similar than random words",
            "adjusted intra-sentence similarity near 0 in most layers, highest in the input layer", model,
            f"|adjusted| < 0.05 in {near_zero:.0%} of non-input layers; highest at L{intra.idxmax()}",
            all_of(threshold(near_zero, above=0.5, inclusive=True),
                   threshold(intra.iloc[0] - intra.iloc[1:].max(), above=0.0, inclusive=True)),
            "reproduced if |adjusted intra-sentence similarity| < 0.05 in at least half of the non-input "
            "layers and its maximum is at the input layer.", kind="test",
            control="random words (adjusted similarity within 0.05 of 0)", threshold_ours=True))

    findings += [
        declare("Less than 5% of a word's variance is explained by a static embedding",
                "mean adjusted MEV < 0.05 in every layer", model,
                f"max mean adjusted MEV {upper.mev_adjusted.max():.3f} {mev_adjusted.interval_text} uncentred, "
                f"{upper.mev_centred_adjusted.max():.3f} centred",
                mev_adjusted,
                "reproduced if the mean adjusted (uncentred, the paper's formula) MEV is below 0.05 in every "
                "non-input layer; borderline if the 95% bootstrap interval of the largest over word types crosses "
                "0.05.", kind="test", control="the paper's bound, 5% of the variance", headline=True),
        declare("Many words have a raw MEV below the anisotropy baseline", "many words (no number given)", model,
                f"at most {upper.mev_below_baseline.max():.1%} of words (L{upper.mev_below_baseline.idxmax()}) "
                f"{below_baseline.interval_text}",
                below_baseline,
                "reproduced if at least 10% of words have a raw MEV below the MEV baseline in some non-input layer; "
                "borderline if the 95% bootstrap interval over word types crosses 10%.",
                kind="test", control="the MEV of random words (the baseline)", threshold_ours=True),
    ]
    if paper_model == "bert-base-cased":
        verdict = bootstrap_threshold(raw_mev, lambda types: np.max(np.nanmean(types, axis=0)), below=0.05)
        findings.append(declare(
            "BERT: raw MEV below 5% in every layer", "mean raw MEV < 0.05", model,
            f"max mean raw MEV {upper.mev.max():.3f} {verdict.interval_text} uncentred, "
            f"{upper.mev_centred.max():.3f} centred",
            verdict,
            "reproduced if the mean raw (uncentred) MEV is below 0.05 in every non-input layer; borderline if the "
            "95% bootstrap interval of the largest over word types crosses 0.05.", kind="test",
            control="the paper's bound, 5% of the variance"))
    elif paper_model == "gpt2":
        middle = upper.mev.iloc[1:-1]
        verdict = bootstrap_threshold(raw_mev[:, 1:-1], lambda types: np.nanmean(np.nanmean(types, axis=0)),
                                      above=0.15, below=0.45, inclusive=True)
        findings.append(declare(
            "GPT-2: raw MEV about 30% in layers 2-11", "mean raw MEV about 0.30", model,
            f"{middle.mean():.3f} {verdict.interval_text} (mean over the inner non-input layers)",
            verdict,
            "reproduced if the mean raw (uncentred) MEV over the non-input layers but the first and last "
            "lies between 0.15 and 0.45; borderline if its 95% bootstrap interval over word types crosses a "
            "bound.", kind="test", control="the paper's 0.30, 0.15 either side", threshold_ours=True))
    if paper_model == "bert-base-cased" and len(table) >= 3:
        top, below = table.iloc[-1], table.iloc[-2]
        self_up = top.self_similarity_adjusted - below.self_similarity_adjusted
        intra_up = top.intra_similarity_adjusted - below.intra_similarity_adjusted
        findings.append(declare(
            "Slides: self- and intra-sentence similarity rise again at BERT's last layer",
            "both go up at layer 12 (SNLI)", model,
            f"last minus previous layer: self {self_up:+.3f}, intra {intra_up:+.3f}",
            all_of(sign(self_up), sign(intra_up)),
            "reproduced if both adjusted measures are higher in the last layer than in the one below.", kind="test",
            control="the layer below"))

    if example_pairs is not None:
        findings.append(_example_words_finding(model, per_word, example_pairs))
    if table1 is not None and table1[table1.model == model].layer.notna().any():
        findings += _table1_findings(model, table1[table1.model == model], min_coverage)
    return findings


def _example_words_finding(model: str, per_word: pd.DataFrame, pairs: dict) -> Finding:
    """The slides' per-word MEV finding on one model, over several (noun, verb) pairs (:func:`example_word_pairs`)."""
    claim, paper = "Slides: a concrete noun's MEV stays high, a frequent verb's is lower", "beverage near 1; go and school lower"
    chosen = pairs.get(model, [])
    rule = ("reproduced if, averaged over the (noun, verb) pairs of example_word_pairs' rule, the noun's raw MEV "
            "exceeds the verb's in more than half of the non-input layers; borderline if the 95% bootstrap "
            "interval over pairs crosses 0.5.")
    if not chosen:
        return not_comparable(claim, paper, "not comparable when no (noun, verb) pair meets the rule.", kind="test",
                              model=model)
    words = per_word[(per_word.model == model) & (per_word.layer > 0)].pivot(index="layer", columns="word", values="mev")
    wins = pd.Series([float((words[noun] > words[verb]).mean()) for noun, verb in chosen],
                     index=[f"{noun}/{verb}" for noun, verb in chosen])
    verdict = bootstrap_threshold(wins.to_numpy(), np.mean, above=0.5)
    return declare(claim, paper, model, f"noun above verb in {wins.mean():.0%} of non-input layers {verdict.interval_text} "
                   "(" + ", ".join(f"{pair} {share:.0%}" for pair, share in wins.items()) + ")", verdict, rule,
                   kind="test", control="a coin flip per layer (noun above verb in half of the layers)")


def _table1_findings(model: str, rows: pd.DataFrame, min_coverage: float) -> list[Finding]:
    """Table 1 findings on one model: best layer against the static embedding, lower against upper layers."""
    scores = rows.pivot_table(index="embedding", columns="benchmark", values="score", dropna=False, sort=False)
    coverage = rows.pivot_table(index="embedding", columns="benchmark", values="coverage", dropna=False, sort=False)
    layers = rows.dropna(subset=["layer"]).groupby("embedding", sort=False).layer.first()
    static = scores.loc[[name for name in scores.index if name not in layers.index]].iloc[0]
    claim, paper = ("Table 1: PC static embeddings beat GloVe on most benchmarks",
                    "BERT layer 1 best; most layers beat GloVe and FastText")
    mean_scores = scores.loc[layers.index].mean(axis=1)
    if mean_scores.isna().all():
        return [not_comparable(claim, paper, "not comparable: no layer's PC static vectors score any benchmark (no "
                               "benchmark word occurs often enough in the sample).", kind="test", model=model)]
    best = mean_scores.idxmax()
    compared = (scores.loc[best].notna() & static.notna() & (coverage.loc[best] >= min_coverage)
                & (coverage.loc[static.name] >= min_coverage))
    pairs = pd.DataFrame({"ours": scores.loc[best][compared], "static": static[compared]})
    verdict = bootstrap_threshold(pairs, lambda t: float((t.ours > t.static).mean()), above=0.5, inclusive=True)
    findings = [declare(
        claim, paper, model,
        f"{best} beats {static.name} in {int((pairs.ours > pairs.static).sum())} of {len(pairs)} benchmarks "
        f"covered at least {min_coverage:.0%} {verdict.interval_text}"
        + (f" (left out: {', '.join(compared.index[~compared])})" if (~compared).any() else ""),
        verdict,
        "reproduced if the best layer (mean score) beats the static embedding restricted to the same words on at "
        f"least half of the benchmarks both score with at least {min_coverage:.0%} of items covered; borderline "
        "if the 95% bootstrap interval over benchmarks crosses one half.", kind="test",
        control="the static embedding restricted to the same words")]
    non_input = layers[layers > 0]
    if len(non_input) >= 2:
        low, high = scores.loc[non_input.index[0]].mean(), scores.loc[non_input.index[-1]].mean()
        findings.append(declare(
            "Table 1: lower layers give better PC static embeddings than upper layers", "layers 1-2 beat layers 11-12",
            model, f"mean score {non_input.index[0]} {low:.3f} vs {non_input.index[-1]} {high:.3f}", sign(low - high),
            "reproduced if the lowest non-input layer scored has a higher mean score than the last.", kind="test",
            control="the last layer's PC static embedding"))
    return findings


def _decoders_against_encoders(table1: pd.DataFrame) -> list[Finding]:
    """Table 1: every decoder's best layer against every encoder's, bootstrapped over benchmarks."""
    layers = table1.dropna(subset=["layer"])
    scores = layers.pivot_table(index="benchmark", columns=["model", "embedding"], values="score").dropna()
    models = list(pd.unique(layers.model))
    decoders = [m for m in models if counterpart(m) == "gpt2"]
    encoders = [m for m in models if counterpart(m) == "bert-base-cased"]
    if not decoders or not encoders:
        return []

    def gap(benchmarks: pd.DataFrame) -> float:
        best = benchmarks.mean().groupby("model").max()  # each model's best layer, mean over benchmarks
        return float(best[encoders].min() - best[decoders].max())

    best = scores.mean().groupby("model").max()
    verdict = bootstrap_threshold(scores, gap, above=0.0)
    return [declare(
        "Table 1: GPT-2's PC static embeddings are worse than BERT's", "clearly worse on every benchmark",
        ", ".join(decoders + encoders),
        "; ".join(f"{m} {best[m]:.3f}" for m in decoders + encoders)
        + f" (best layer, mean score over {len(scores)} benchmarks); gap {verdict.value:.3f} {verdict.interval_text}",
        verdict,
        "reproduced if every decoder's best layer has a lower mean score than every encoder's best layer "
        "(vocabularies differ between models, so the word sets differ too); borderline if the 95% bootstrap "
        "interval of the smallest gap over benchmarks crosses 0.", kind="test", control="the encoders' best layers")]


def assess_findings(per_layer: pd.DataFrame, per_word: pd.DataFrame, table1: pd.DataFrame | None = None, *,
                    example_pairs: dict | None = None, n_lowest: int = 10, tolerance: float = 0.05,
                    min_coverage: float = 0.25) -> list[Finding]:
    """Decide, finding by finding, whether this run reproduces Ethayarajh (2019).

    Every status follows a rule stated in the returned :class:`~isolib.findings.Finding`. A
    qualitative finding about BERT (or GPT-2) is tested on the models that stand in for it
    (:data:`STAND_INS`); a reference number is compared only on the paper's own model (within
    ``tolerance``) and otherwise shown at the same relative depth as "not comparable"
    (:func:`isolib.findings.compare_reference`). "Non-input layers" are all stored layers but layer 0.

    Parameters
    ----------
    per_layer, per_word : pandas.DataFrame
        The tables of :func:`contextuality_by_layer`, concatenated over models.
    table1 : pandas.DataFrame, optional
        :func:`static_embedding_table` rows, concatenated over models.
    example_pairs : dict of str to list of (str, str), optional
        Per model, (stable noun, frequent verb) pairs for the slides' per-word MEV finding
        (:func:`example_word_pairs`).
    n_lowest : int
        Words of lowest self-similarity inspected per layer for the stopword finding.
    tolerance : float
        Largest absolute difference from a reference number that counts as reproduced.
    min_coverage : float
        Table 1 findings count only benchmarks with at least this share of items covered.

    Returns
    -------
    list of Finding
    """
    lowest = lowest_self_similarity(per_word, n_words=n_lowest)
    findings = judge_decoder_views({
        model: _model_findings(model, table.set_index("layer").sort_index(), lowest, per_word, table1, example_pairs,
                               n_lowest, min_coverage)
        for model, table in per_layer.groupby("model", sort=False)})
    if table1 is not None:
        findings += _decoders_against_encoders(table1)
    findings += compare_reference(per_layer, PAPER_REFERENCE, PAPER_MODELS, counterpart, _MEASURE_NAMES,
                                  tolerance=tolerance)
    findings.append(not_comparable("ELMo: same-sentence words grow more similar in upper layers",
                                   "adjusted intra-sentence similarity rises with depth", "ELMo is not run.",
                                   kind="test"))
    return findings


def check_parameters(params: dict) -> None:
    """Refuse, in one sentence, parameters of notebook 01 its run would fail on (the runner calls it before any kernel).

    Parameters
    ----------
    params : dict
        Every parameter of the notebook: the defaults of its parameters cell completed by the run's.
    """
    from isolib.parameters import check_choices, check_integers, check_layers, check_models

    check_models(params, "models")
    check_choices(params, "corpus", ("sts", "snli"))
    check_choices(params, "unit", UNITS)
    check_choices(params, "decoder_views", ("drop", "start_token"))
    check_choices(params, "storage_dtype", ("float16", "float32"))
    check_models(params, "static_baseline")
    check_layers(params, "layers")
    check_integers(params, ["n_sentences", "max_occurrences", "static_analogy_vocab", "random_state"])
    check_integers(params, ["min_contexts", "n_lowest", "n_word_pairs"], minimum=1)
    check_integers(params, ["n_samples"], minimum=2)  # each baseline compares two occurrences at least
    check_integers(params, ["table1_layers"], minimum=None)
    if not 0 <= params["min_coverage"] <= 1:
        raise ValueError(f"min_coverage is a share of benchmark items, between 0 and 1; got {params['min_coverage']!r}.")
