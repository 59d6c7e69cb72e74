"""The paper's Table 1: a static vector per word from its occurrences, scored on nine word benchmarks.

For each word, the first principal direction of its occurrences in a layer
(:func:`first_principal_direction`) is a static word vector (:func:`pc_static_vectors`);
:func:`word_benchmarks` scores word vectors on the benchmarks of the paper's Table 1, and
:func:`static_embedding_table` sets a model's layers against a static embedding restricted to the same
words. :func:`table1_wide` lays the rows out as the paper prints them.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import pandas as pd
import scipy.linalg

from isolib import datasets
from isolib._blas import one_blas_thread
from isolib._checks import as_points
from isolib.evaluation import (
    WordVectors,
    analogy_accuracy,
    categorization_purity,
    word_similarity,
)
from isolib.models import resolve_layers
from isolib.studies.ethayarajh_contextuality.occurrences import (
    OccurrenceIndex,
    is_uncased,
    word_blocks,
)

__all__ = ["first_principal_direction", "pc_static_vectors", "restricted_to", "BENCHMARKS", "word_benchmarks",
           "static_embedding_table", "table1_wide"]

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
                      for word, block in word_blocks(index, vectors, max_occurrences, random_state)}
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
    lowercase = is_uncased(vectors.words)
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
