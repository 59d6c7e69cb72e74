"""Sentence- and word-level benchmarks: STS, word similarity, analogy, categorization, relations.

Sentence level (Rajaee & Pilehvar 2021): :func:`mean_pool` builds sentence vectors
from token vectors and :func:`sts_correlation` scores paired sentences by cosine
against gold similarities (Pearson and Spearman x 100, the papers' convention).

Word level (Ethayarajh 2019, Table 1): every function takes the word vectors in one
representation, :class:`WordVectors` (anything :func:`as_word_vectors` accepts),
and returns a :class:`WordBenchmarkResult` with the score and the coverage.

Out-of-vocabulary rule, shared by all word benchmarks (``oov`` parameter):

``"skip"`` (default)
    An item (pair, question, word) with any word missing from the vocabulary is left
    out; the score is computed on the covered items only.
``"mean"``
    A missing word is replaced by the mean vector of the vocabulary and every item is
    scored, as in the word-embeddings-benchmarks package the Ethayarajh authors used.

In both cases ``n_used`` counts the items whose words are all in the vocabulary, so
``coverage = n_used / n_total`` is comparable across the two rules. Lookups are exact
(case-sensitive): lowercase the benchmark for an uncased vocabulary.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.cluster import AgglomerativeClustering, KMeans

from isolib._checks import as_points, check_int, check_same_length, sklearn_seed

__all__ = [
    "STSResult",
    "WordBenchmarkResult",
    "WordVectors",
    "as_word_vectors",
    "mean_pool",
    "sts_correlation",
    "word_similarity",
    "analogy_accuracy",
    "categorization_purity",
    "relational_similarity",
]

OOV_RULES = ("skip", "mean")
CATEGORIZATION_METHODS = ("agglomerative", "kmeans", "best")
# Bound on the (questions x vocabulary) score block of the analogy search: 2**24
# float64 values, 128 MiB, whatever the vocabulary size.
_ANALOGY_BLOCK = 2**24


# ---------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class STSResult:
    """Correlation of predicted and gold sentence similarities.

    Attributes
    ----------
    pearson, spearman : float
        Correlation coefficients x 100.
    n : int
        Number of sentence pairs.
    similarities : ndarray of shape (n,)
        The cosine of each pair (for a paired comparison of two methods,
        :func:`isolib.findings.compare_correlations`).
    """

    pearson: float
    spearman: float
    n: int
    similarities: np.ndarray = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class WordBenchmarkResult:
    """Score of a word-level benchmark with its vocabulary coverage.

    Attributes
    ----------
    score : float
        Spearman correlation (similarity, relational similarity), accuracy
        (analogy) or purity (categorization), as a fraction in [-1, 1] or [0, 1].
    n_used : int
        Items whose words are all in the vocabulary.
    n_total : int
        Items in the benchmark.
    """

    score: float
    n_used: int
    n_total: int

    @property
    def coverage(self) -> float:
        """Fraction of the benchmark's items covered by the vocabulary."""
        return self.n_used / self.n_total


# ---------------------------------------------------------------------------
# Word vectors
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class WordVectors:
    """A vocabulary and its vectors: row ``i`` of ``matrix`` is the vector of ``words[i]``.

    Parameters
    ----------
    words : sequence of str, length n_words
        Distinct words. Order matters where a benchmark restricts the vocabulary to
        its first words (frequency order, as in GloVe and word2vec files).
    matrix : array_like of shape (n_words, n_features)
        Stored as a read-only float64 array.

    Attributes
    ----------
    index : dict of str to int
        Row of each word.
    """

    words: tuple[str, ...]
    matrix: np.ndarray

    def __post_init__(self):
        words = tuple(self.words)
        matrix = as_points(self.matrix, name="matrix")
        check_same_length(words, matrix, names=("words", "matrix"))
        if len(set(words)) != len(words):
            repeated = next(word for word, count in Counter(words).items() if count > 1)
            raise ValueError(f"words must be distinct, but {repeated!r} occurs more than once.")
        matrix.setflags(write=False)
        # Frozen dataclass: normalised fields are set once, here.
        object.__setattr__(self, "words", words)
        object.__setattr__(self, "matrix", matrix)

    @classmethod
    def from_mapping(cls, vectors: Mapping[str, np.ndarray]) -> WordVectors:
        """Build from a ``{word: vector}`` mapping, keeping its iteration order."""
        words = list(vectors)
        if not words:
            raise ValueError("vectors is an empty mapping; there is no vocabulary.")
        return cls(words, np.stack([np.asarray(vectors[word], dtype=np.float64) for word in words]))

    @cached_property
    def index(self) -> dict[str, int]:
        return {word: row for row, word in enumerate(self.words)}

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word) -> bool:
        return word in self.index

    def rows(self, words: Sequence[str]) -> np.ndarray:
        """Row of each word in ``matrix``, -1 for a word not in the vocabulary; shape (n,)."""
        return np.array([self.index.get(word, -1) for word in words], dtype=np.intp)

    def lookup(self, words: Sequence[str], *, oov: str = "skip") -> tuple[np.ndarray, np.ndarray]:
        """Vectors of ``words`` and which of them are in the vocabulary.

        Parameters
        ----------
        words : sequence of str, length n
        oov : {"skip", "mean"}
            Row given to a missing word: zeros with ``"skip"`` (the caller drops the
            item), the mean vector of the vocabulary with ``"mean"``.

        Returns
        -------
        vectors : ndarray of shape (n, n_features)
        found : ndarray of shape (n,), bool
        """
        _check_oov(oov)
        rows = self.rows(words)
        found = rows >= 0
        vectors = np.zeros((len(rows), self.matrix.shape[1]))
        vectors[found] = self.matrix[rows[found]]
        if oov == "mean":
            vectors[~found] = self.matrix.mean(axis=0)
        return vectors, found


def as_word_vectors(vectors) -> WordVectors:
    """Accept a :class:`WordVectors`, a ``{word: vector}`` mapping or a ``(words, matrix)`` pair."""
    if isinstance(vectors, WordVectors):
        return vectors
    if isinstance(vectors, Mapping):
        return WordVectors.from_mapping(vectors)
    if isinstance(vectors, tuple) and len(vectors) == 2:
        return WordVectors(*vectors)
    raise ValueError(
        "vectors must be a WordVectors, a {word: vector} mapping or a (words, matrix) pair, "
        f"got {type(vectors).__name__}."
    )


def _check_oov(oov: str) -> None:
    if oov not in OOV_RULES:
        raise ValueError(f"oov must be one of {OOV_RULES}, got {oov!r}.")


def _check_columns(table: pd.DataFrame, columns: Sequence[str], name: str) -> None:
    missing = [column for column in columns if column not in table.columns]
    if missing:
        raise ValueError(f"{name} lacks the column(s) {missing}; it needs {list(columns)}.")


def _lookup_items(
    vectors: WordVectors,
    table: pd.DataFrame,
    word_columns: Sequence[str],
    oov: str,
    name: str,
    other_columns: Sequence[str] = (),
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Look up the words of each item (row of ``table``) and apply the OOV rule.

    Returns the vectors of each word column for the items kept, the mask of items
    kept among the table's rows, and the mask of items fully in the vocabulary.
    """
    _check_oov(oov)
    _check_columns(table, [*word_columns, *other_columns], name)
    if len(table) == 0:
        raise ValueError(f"{name} is empty.")
    looked_up = [vectors.lookup(table[column].tolist(), oov=oov) for column in word_columns]
    covered = np.logical_and.reduce([found for _, found in looked_up])
    kept = covered if oov == "skip" else np.ones(len(table), dtype=bool)
    return [column_vectors[kept] for column_vectors, _ in looked_up], kept, covered


# ---------------------------------------------------------------------------
# Sentence level
# ---------------------------------------------------------------------------


def mean_pool(token_vectors, sentence_ids, *, is_special=None, n_sentences: int | None = None) -> np.ndarray:
    """Sentence vectors as the mean of their token vectors (Rajaee & Pilehvar).

    Parameters
    ----------
    token_vectors : array_like of shape (n_tokens, n_features)
    sentence_ids : array_like of int, shape (n_tokens,)
        Sentence of each token, as row numbers ``0 .. n_sentences - 1`` of the result.
    is_special : array_like of bool, shape (n_tokens,), optional
        Tokens to leave out ([CLS], [SEP], BOS ...), e.g. the ``is_special`` column
        of the token table.
    n_sentences : int, optional
        Number of sentences; defaults to ``max(sentence_ids) + 1``.

    Returns
    -------
    ndarray of shape (n_sentences, n_features), float64

    Raises
    ------
    ValueError
        On NaN/infinity, mismatched lengths, negative or out-of-range ids, or a
        sentence left with no token to average.
    """
    # Token matrices can be large: keep their dtype and accumulate in float64.
    tokens = as_points(token_vectors, name="token_vectors", dtype=None)
    ids = np.asarray(sentence_ids)
    check_same_length(tokens, ids, names=("token_vectors", "sentence_ids"))
    if ids.ndim != 1 or not np.issubdtype(ids.dtype, np.integer):
        raise ValueError("sentence_ids must be a 1-D array of integers.")
    if ids.size and ids.min() < 0:
        raise ValueError("sentence_ids must be non-negative row numbers.")
    # Counted before special tokens are dropped, so a sentence made only of them is reported.
    needed = int(ids.max()) + 1 if ids.size else 0
    n_sentences = needed if n_sentences is None else check_int(n_sentences, "n_sentences", low=needed)
    if is_special is not None:
        special = np.asarray(is_special, dtype=bool)
        check_same_length(tokens, special, names=("token_vectors", "is_special"))
        tokens, ids = tokens[~special], ids[~special]
    counts = np.bincount(ids, minlength=n_sentences)
    if n_sentences == 0 or (counts == 0).any():
        empty = 0 if n_sentences == 0 else int(np.flatnonzero(counts == 0)[0])
        raise ValueError(f"sentence {empty} has no (non-special) token to average.")
    sums = np.zeros((n_sentences, tokens.shape[1]))
    np.add.at(sums, ids, tokens)
    return sums / counts[:, None]


def _unit_rows(X: np.ndarray, name: str) -> np.ndarray:
    """Rows scaled to unit length; a zero row has no direction, so it is an error."""
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    if (norms == 0).any():
        raise ValueError(f"{name} row {int(np.flatnonzero(norms == 0)[0])} has zero norm; its cosine is undefined.")
    return X / norms


def _paired_cosine(u: np.ndarray, v: np.ndarray, names: tuple[str, str]) -> np.ndarray:
    return np.einsum("ij,ij->i", _unit_rows(u, names[0]), _unit_rows(v, names[1]))


def _check_gold(gold, n_items: int, name: str) -> np.ndarray:
    scores = np.asarray(gold, dtype=np.float64)
    if scores.shape != (n_items,):
        raise ValueError(f"{name} must have shape ({n_items},), one score per pair, got {scores.shape}.")
    if not np.isfinite(scores).all():
        raise ValueError(f"{name} contains NaN or infinity.")
    if np.ptp(scores) == 0:
        raise ValueError(f"{name} is constant, so no correlation with it is defined.")
    return scores


def sts_correlation(u, v, gold) -> STSResult:
    """Cosine similarity of paired sentence vectors against gold similarity scores.

    Parameters
    ----------
    u, v : array_like of shape (n_pairs, n_features)
        The two sentences of each pair.
    gold : array_like of shape (n_pairs,)
        Gold similarity (e.g. 0-5 for STS).

    Returns
    -------
    STSResult
        Pearson and Spearman correlations x 100, the number of pairs and each pair's cosine.

    Raises
    ------
    ValueError
        On NaN/infinity, fewer than 2 pairs, mismatched lengths or dimensions, a
        zero vector, or constant gold scores.
    """
    first = as_points(u, name="u", min_samples=2)
    second = as_points(v, name="v", min_samples=2)
    check_same_length(first, second, names=("u", "v"))
    if first.shape[1] != second.shape[1]:
        raise ValueError(f"u has {first.shape[1]} features but v has {second.shape[1]}; they must match.")
    scores = _check_gold(gold, len(first), "gold")
    cosines = _paired_cosine(first, second, ("u", "v"))
    return STSResult(
        pearson=100 * float(stats.pearsonr(cosines, scores).statistic),
        spearman=100 * float(stats.spearmanr(cosines, scores).statistic),
        n=len(scores),
        similarities=cosines,
    )


# ---------------------------------------------------------------------------
# Word level
# ---------------------------------------------------------------------------


def word_similarity(vectors, pairs: pd.DataFrame, *, oov: str = "skip") -> WordBenchmarkResult:
    """Spearman correlation of word-pair cosines with human similarity ratings.

    SimLex-999, MEN, WS353, RW and the like.

    Parameters
    ----------
    vectors : WordVectors, mapping or (words, matrix)
    pairs : DataFrame with columns ``word1``, ``word2``, ``score``
    oov : {"skip", "mean"}
        Out-of-vocabulary rule (see the module docstring).

    Returns
    -------
    WordBenchmarkResult
        ``score`` is Spearman's rho (a fraction); ``n_used`` / ``n_total`` count pairs.

    Raises
    ------
    ValueError
        On missing columns, an empty table, fewer than 2 scored pairs, constant gold
        scores among them, or a zero vector.
    """
    vectors = as_word_vectors(vectors)
    (first, second), kept, covered = _lookup_items(vectors, pairs, ("word1", "word2"), oov, "pairs", ("score",))
    if kept.sum() < 2:
        raise ValueError(
            f"only {int(kept.sum())} of the {len(pairs)} pairs are in the vocabulary; a correlation needs 2."
        )
    gold = _check_gold(pairs["score"].to_numpy()[kept], int(kept.sum()), "the gold scores of the pairs used")
    cosines = _paired_cosine(first, second, ("word1 vectors", "word2 vectors"))
    rho = float(stats.spearmanr(cosines, gold).statistic)
    return WordBenchmarkResult(score=rho, n_used=int(covered.sum()), n_total=len(pairs))


def analogy_accuracy(
    vectors, questions: pd.DataFrame, *, restrict_vocab: int | None = None, oov: str = "skip"
) -> WordBenchmarkResult:
    """3CosAdd accuracy on analogy questions a : b :: c : d (Google, MSR).

    The answer is the word whose unit vector maximises the dot product with
    ``b - a + c`` (unit vectors), the three question words excluded (Mikolov et al.
    2013; gensim's ``evaluate_word_analogies``). For the Google set's
    "Athens Greece Baghdad Iraq", a = Athens, b = Greece, c = Baghdad, d = Iraq.

    Parameters
    ----------
    vectors : WordVectors, mapping or (words, matrix)
    questions : DataFrame with columns ``a``, ``b``, ``c``, ``d``
    restrict_vocab : int, optional
        Use only the first ``restrict_vocab`` words, both as candidates and for
        coverage (gensim's convention; word files are sorted by frequency).
    oov : {"skip", "mean"}
        With ``"mean"`` a missing a, b or c is the mean unit vector, and a question
        whose answer d is missing counts as wrong.

    Returns
    -------
    WordBenchmarkResult
        ``score`` is the fraction of questions answered correctly among those scored.

    Raises
    ------
    ValueError
        On missing columns, an empty table, no question covered with ``"skip"``,
        ``restrict_vocab`` outside ``[1, n_words]``, or a zero vector in the vocabulary.
    """
    vectors = as_word_vectors(vectors)
    n_candidates = (
        len(vectors)
        if restrict_vocab is None
        else check_int(restrict_vocab, "restrict_vocab", low=1, high=len(vectors))
    )
    unit = WordVectors(vectors.words[:n_candidates], _unit_rows(vectors.matrix[:n_candidates], "vectors"))
    (a, b, c, _), kept, covered = _lookup_items(unit, questions, ("a", "b", "c", "d"), oov, "questions")
    if not kept.any():
        raise ValueError(f"none of the {len(questions)} questions is in the vocabulary.")

    # Rows of the question words (-1 where out of vocabulary, which excludes nothing).
    question_words = np.stack([unit.rows(questions[column].to_numpy()[kept]) for column in "abc"], axis=1)
    answers = unit.rows(questions["d"].to_numpy()[kept])
    targets = b - a + c
    predictions = np.empty(len(targets), dtype=np.intp)
    block = max(1, _ANALOGY_BLOCK // n_candidates)
    for start in range(0, len(targets), block):
        scores = targets[start : start + block] @ unit.matrix.T
        in_block = question_words[start : start + block]
        question, position = np.nonzero(in_block >= 0)
        scores[question, in_block[question, position]] = -np.inf
        predictions[start : start + block] = scores.argmax(axis=1)
    accuracy = float(np.mean(predictions == answers))
    return WordBenchmarkResult(score=accuracy, n_used=int(covered.sum()), n_total=len(questions))


def _purity(categories: np.ndarray, clusters: np.ndarray) -> float:
    """Fraction of words whose cluster's majority category is their own."""
    contingency = pd.crosstab(clusters, categories).to_numpy()
    return float(contingency.max(axis=1).sum() / len(categories))


def categorization_purity(
    vectors,
    items: pd.DataFrame,
    *,
    method: str = "agglomerative",
    oov: str = "skip",
    random_state=None,
) -> WordBenchmarkResult:
    """Cluster purity of words against their categories (BLESS, AP, Battig ...).

    The words are clustered into k = number of categories (among the words scored),
    and each cluster is credited with its majority category.

    Parameters
    ----------
    vectors : WordVectors, mapping or (words, matrix)
    items : DataFrame with columns ``word``, ``category``
    method : {"agglomerative", "kmeans", "best"}
        ``"agglomerative"``: Ward linkage on Euclidean distance (default).
        ``"kmeans"``: k-means with 10 restarts. ``"best"``: the highest purity over
        Ward, average and complete linkage with cosine and Euclidean distances, and
        k-means, as word-embeddings-benchmarks' ``evaluate_categorization`` reports
        (optimistic: it selects the clustering on the gold categories).
    oov : {"skip", "mean"}
    random_state : None, int or numpy Generator
        Seed of k-means.

    Returns
    -------
    WordBenchmarkResult
        ``score`` is the purity in [0, 1]; ``n_used`` / ``n_total`` count words.

    Raises
    ------
    ValueError
        On missing columns, an empty table, an unknown method, or fewer than 2
        categories among the words scored.
    """
    if method not in CATEGORIZATION_METHODS:
        raise ValueError(f"method must be one of {CATEGORIZATION_METHODS}, got {method!r}.")
    vectors = as_word_vectors(vectors)
    (points,), kept, covered = _lookup_items(vectors, items, ("word",), oov, "items", ("category",))
    categories = items["category"].to_numpy()[kept]
    n_categories = len(np.unique(categories))
    if n_categories < 2:
        raise ValueError(f"the {len(categories)} words scored fall in {n_categories} category; purity needs 2.")
    clusterings = []
    if method in ("agglomerative", "best"):
        clusterings.append(AgglomerativeClustering(n_clusters=n_categories, linkage="ward"))
    if method == "best":
        clusterings += [
            AgglomerativeClustering(n_clusters=n_categories, metric=metric, linkage=linkage)
            for metric in ("cosine", "euclidean")
            for linkage in ("average", "complete")
        ]
    if method in ("kmeans", "best"):
        clusterings.append(KMeans(n_clusters=n_categories, n_init=10, random_state=sklearn_seed(random_state)))
    purity = max(_purity(categories, clustering.fit_predict(points)) for clustering in clusterings)
    return WordBenchmarkResult(score=purity, n_used=int(covered.sum()), n_total=len(items))


def relational_similarity(
    vectors, prototypes: pd.DataFrame, candidates: pd.DataFrame, *, oov: str = "skip"
) -> WordBenchmarkResult:
    """SemEval-2012 Task 2 relational similarity, scored as word-embeddings-benchmarks does.

    Per relation category, the candidate pair (x, y) is scored by the dot product of
    its offset ``x - y`` with the category's prototype offset (mean of the prototype
    first words minus mean of the prototype second words); the score is Spearman's
    rho of these scores with the gold prototypicality, averaged over categories. A
    category whose scores are constant contributes 0, as in that package.

    Parameters
    ----------
    vectors : WordVectors, mapping or (words, matrix)
    prototypes : DataFrame with columns ``category``, ``word1``, ``word2``
        The example pairs given for each relation.
    candidates : DataFrame with columns ``category``, ``word1``, ``word2``, ``score``
        The pairs to rank, with their gold prototypicality scores.
    oov : {"skip", "mean"}
        With ``"skip"``, uncovered pairs are dropped, and so is a category left with
        no prototype or fewer than 2 candidates (its candidates then count as unused).

    Returns
    -------
    WordBenchmarkResult
        ``score`` is the mean Spearman's rho over the categories scored;
        ``n_used`` / ``n_total`` count candidate pairs.

    Raises
    ------
    ValueError
        On missing columns, empty tables, or no category left to score.
    """
    vectors = as_word_vectors(vectors)
    (proto_first, proto_second), proto_kept, _ = _lookup_items(
        vectors, prototypes, ("word1", "word2"), oov, "prototypes", ("category",)
    )
    (first, second), kept, covered = _lookup_items(
        vectors, candidates, ("word1", "word2"), oov, "candidates", ("category", "score")
    )
    proto_categories = prototypes["category"].to_numpy()[proto_kept]
    categories = candidates["category"].to_numpy()[kept]
    gold = candidates["score"].to_numpy(dtype=np.float64)[kept]
    offsets = first - second

    correlations, n_used = [], 0
    for category in pd.unique(candidates["category"]):
        in_category = categories == category
        in_prototypes = proto_categories == category
        if in_category.sum() < 2 or not in_prototypes.any():
            continue
        prototype_offset = proto_first[in_prototypes].mean(axis=0) - proto_second[in_prototypes].mean(axis=0)
        with warnings.catch_warnings():
            # Constant scores (e.g. every word replaced by the mean) are scored 0 below.
            warnings.simplefilter("ignore", stats.ConstantInputWarning)
            rho = stats.spearmanr(offsets[in_category] @ prototype_offset, gold[in_category]).statistic
        correlations.append(0.0 if np.isnan(rho) else float(rho))
        n_used += int(covered[kept][in_category].sum())
    if not correlations:
        raise ValueError("no category has both a prototype and 2 candidate pairs in the vocabulary.")
    return WordBenchmarkResult(score=float(np.mean(correlations)), n_used=n_used, n_total=len(candidates))
