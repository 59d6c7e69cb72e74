"""Which tokens are measured: one fixed sample of word tokens per model, the same in every view and layer.

Notebook 05 and the model card (:mod:`isolib.card`) draw their tokens here:

* :func:`analysed_tokens` -- the word tokens of a token table (notebook 02's rule);
* :func:`draw_token_samples` -- ``n_replicates`` random draws of them, the same tokens in every view of a model;
* :func:`static_sample` -- the words of the same running text, for a static embedding;
* :class:`Sample` and :func:`token_samples` -- the points of one draw with what the measures need besides them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from isolib._checks import rng, sample_rows

__all__ = ["analysed_tokens", "draw_token_samples", "static_sample", "Sample", "token_samples"]


def analysed_tokens(tokens: pd.DataFrame) -> pd.DataFrame:
    """The word tokens of a token table: not special, not a symbol, not a piece of a corpus placeholder.

    The rule of notebook 02 (:func:`isolib.embed.is_punctuation` for symbols,
    :func:`isolib.windows.placeholder_mask` for PTB's ``<unk>`` and ``N``), so both notebooks analyse
    the same tokens of the same windows.

    Parameters
    ----------
    tokens : pandas.DataFrame
        ``Embeddings.tokens``.

    Returns
    -------
    pandas.DataFrame, one row per analysed token
        ``row`` (into the embedding arrays), ``sentence_id``, ``content_index`` (rank of the token
        among the non-special tokens of its window: the same token has the same key in every view of
        a model, with or without a start token), ``position``, ``type`` (the piece without its
        space marker) and ``word``.
    """
    from isolib.embed import is_punctuation, unit_text
    from isolib.windows import placeholder_mask

    special = tokens.is_special.to_numpy(dtype=bool)
    content = pd.Series(np.where(special, -1, 0), index=tokens.index)
    content[~special] = tokens[~special].groupby("sentence_id").cumcount()
    types = tokens.token.map(unit_text)
    kept = ~special & ~types.map(is_punctuation).to_numpy(dtype=bool) & ~placeholder_mask(tokens)
    rows = np.flatnonzero(kept)
    return pd.DataFrame({"row": rows, "sentence_id": tokens.sentence_id.to_numpy()[rows],
                         "content_index": content.to_numpy()[rows], "position": tokens.position.to_numpy()[rows],
                         "type": types.to_numpy(dtype=object)[rows].astype(str),
                         "word": tokens.word.to_numpy(dtype=object)[rows].astype(str)})


def draw_token_samples(tables: dict[str, pd.DataFrame], n_points: int, n_replicates: int, *,
                       random_state=0) -> dict[str, list[pd.DataFrame]]:
    """The same random tokens in every view of one model: ``n_replicates`` draws of ``n_points`` each.

    Parameters
    ----------
    tables : dict of str to pandas.DataFrame
        :func:`analysed_tokens` of each view of one model (keyed by view label).
    n_points : int
        Tokens per draw (all common tokens if there are fewer).
    n_replicates : int
        Independent draws (each without replacement): each is measured and changed, and together
        they give the interval over the token sample; replicate 0 is also the one whose rogue
        coordinates are read.
    random_state : int

    Returns
    -------
    dict of str to list of pandas.DataFrame
        Per view, one table per replicate: the rows of :func:`analysed_tokens` drawn, in corpus order.
        A token is drawn only if every view has it (a start token pushes a window's last token out).
    """
    keys = None
    for table in tables.values():
        index = pd.MultiIndex.from_frame(table[["sentence_id", "content_index"]])
        keys = index if keys is None else keys.intersection(index)
    keys = keys.sort_values()
    generator = rng(random_state)
    draws = [keys[sample_rows(len(keys), n_points, generator)] for _ in range(n_replicates)]
    result = {}
    for label, table in tables.items():
        indexed = table.set_index(["sentence_id", "content_index"], drop=False)
        result[label] = [indexed.loc[draw].reset_index(drop=True) for draw in draws]
    return result


def static_sample(tokens: pd.DataFrame, words: Sequence[str], n_points: int, n_replicates: int, *,
                  random_state=0, distinct: bool = False) -> list[pd.DataFrame]:
    """The words of the same running text, for a static embedding: one row per word occurrence found in ``words``.

    Parameters
    ----------
    tokens : pandas.DataFrame
        A model's token table (its analysed tokens give the words, lower-cased).
    words : sequence of str
        The static embedding's vocabulary, in row order.
    n_points, n_replicates, random_state
        As in :func:`draw_token_samples`.
    distinct : bool
        Each word once (its first occurrence), so that no two points coincide, as no two tokens of a
        contextual layer do: a measure of neighbours (LID) is then estimated on ``n_points`` points for both.

    Returns
    -------
    list of pandas.DataFrame
        Per replicate: ``row`` (into the static matrix), ``sentence_id``, ``type`` (the word), ``position``
        (-1: a static vector has no position).
    """
    analysed = analysed_tokens(tokens)
    occurrences = analysed.assign(word_id=tokens.word_id.to_numpy()[analysed.row])
    occurrences = occurrences.drop_duplicates(["sentence_id", "word_id"])
    words = pd.Index(words)
    first = ~words.duplicated()  # a word listed twice is its first row
    vocabulary = pd.Series(np.flatnonzero(first), index=words[first])
    lowered = occurrences.word.str.lower()
    found = lowered.isin(vocabulary.index).to_numpy()
    table = pd.DataFrame({"row": vocabulary.reindex(lowered[found]).to_numpy(),
                          "sentence_id": occurrences.sentence_id.to_numpy()[found],
                          "type": lowered[found].to_numpy(), "position": -1})
    if distinct:
        table = table.drop_duplicates("type").reset_index(drop=True)
    generator = rng(random_state)
    return [table.iloc[sample_rows(len(table), n_points, generator)].reset_index(drop=True)
            for _ in range(n_replicates)]


@dataclass(frozen=True)
class Sample:
    """Points with what the measures need besides them.

    Attributes
    ----------
    points : ndarray of shape (n_points, dim), float64
    types : ndarray of str or None
        The type of each point (S_inter, S_intra); None: every point its own type.
    contexts : ndarray of int or None
        The window of each point (the anisotropy baseline pairs points of different windows); None:
        every point its own context.
    positions : ndarray of int or None
        Position of each point in its window (0 = first; -1 for a static vector).
    """

    points: np.ndarray
    types: np.ndarray | None = None
    contexts: np.ndarray | None = None
    positions: np.ndarray | None = None

    def subset(self, rows) -> Sample:
        """The sample restricted to ``rows``."""
        return Sample(self.points[rows], *(None if values is None else values[rows]
                                           for values in (self.types, self.contexts, self.positions)))

    def with_points(self, points: np.ndarray) -> Sample:
        """The same tokens with other coordinates (a changed space)."""
        return dataclasses.replace(self, points=points)


def token_samples(vectors, drawn: Sequence[pd.DataFrame]) -> list[Sample]:
    """One :class:`Sample` per drawn table (:func:`draw_token_samples`, :func:`static_sample`), its rows read in float64.

    Parameters
    ----------
    vectors : array_like of shape (n_rows, dim)
        A layer of a model's embeddings, or a static embedding's matrix: what the tables' ``row`` indexes.
    drawn : sequence of pandas.DataFrame
        The tokens of each replicate.
    """
    return [Sample(np.asarray(vectors[table.row.to_numpy()], dtype=np.float64), table.type.to_numpy(),
                   table.sentence_id.to_numpy(), table.position.to_numpy()) for table in drawn]

