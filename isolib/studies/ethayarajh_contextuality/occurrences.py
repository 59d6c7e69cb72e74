"""The study's unit of analysis: which rows of a layer are occurrences of which word type.

Ethayarajh (2019) measures how far the occurrences of one word differ between contexts, so a
layer's rows must first be grouped by word type. :func:`occurrence_index` does it by the rules
below, giving an :class:`OccurrenceIndex`; :func:`word_blocks` yields each analysed type's
occurrence matrix (the input of MEV and of the PC static vectors).

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

import numbers
import re
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from isolib._checks import rng
from isolib.embed import is_punctuation, unit_text
from isolib.metrics import random_subset_per_group

__all__ = ["UNITS", "OccurrenceIndex", "occurrence_index", "word_blocks", "is_uncased"]

UNITS = ("token", "word")
_TOKEN_COLUMNS = ("sentence_id", "token", "word_id", "word", "is_special")


# A tokenizer's own markers such as [UNK] or <unk>: uppercase in an uncased vocabulary.
_MARKER_PIECE = re.compile(r"\[[A-Z]+\]|<[^<>]+>")


def is_uncased(texts) -> bool:
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
        lower = bool(lowercase) if lowercase is not None else is_uncased(piece_text.unique())
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


def word_blocks(index: OccurrenceIndex, vectors: np.ndarray, max_occurrences: int | None, random_state):
    """Yield ``(word, occurrence matrix)`` for every analysed word, with at most ``max_occurrences`` rows."""
    kept = index.occurrences.kept.to_numpy()
    codes = pd.Categorical(index.occurrences.word[kept], categories=index.words).codes
    rows = np.flatnonzero(kept)
    chosen = random_subset_per_group(codes, max_occurrences, rng(random_state))
    chosen = chosen[np.argsort(codes[chosen], kind="stable")]
    bounds = np.searchsorted(codes[chosen], np.arange(len(index.words) + 1))
    for code, word in enumerate(index.words):
        yield word, vectors[rows[chosen[bounds[code]:bounds[code + 1]]]]

