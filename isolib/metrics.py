"""Isotropy, cosine, variance, intrinsic-dimension and cluster measures.

Every function takes points as rows of an array of shape ``(n_samples, n_features)``
(float32 input stays float32 in memory; all sums are accumulated in float64), takes
an explicit ``random_state`` (None, int or ``numpy.random.Generator``) wherever it
samples, and works in row chunks or distance blocks so that memory stays bounded.

=========================  =========================================  ==========================
Family                     Functions                                  Source
=========================  =========================================  ==========================
cosine                     :func:`average_cosine`,                    Ethayarajh (2019)
                           :func:`self_similarity`,
                           :func:`intra_similarity`,
                           :func:`anisotropy_baseline`
cosine (types)             :func:`s_inter`, :func:`s_intra`           Cai et al. (2021)
variance                   :func:`mev`, :func:`mev_baseline`,         Ethayarajh (2019);
                           :func:`explained_variance`,                Roy & Vetterli (2007)
                           :func:`effective_rank`
isotropy                   :func:`isoscore`                           Rudman et al. (2022)
                           :func:`partition_isotropy`                 Mu & Viswanath (2018)
intrinsic dimension        :func:`lid_mle`                            Levina & Bickel (2005),
                                                                      as used by Cai et al.
clusters                   :func:`silhouette`, :func:`select_kmeans`, Rousseeuw (1987);
                           :func:`centre_per_cluster`                 Cai et al. (2021)
=========================  =========================================  ==========================

Degenerate input follows two rules:

* a **scalar** measure that is undefined for its input raises ``ValueError`` with one
  sentence (identical points for IsoScore, one cluster for the silhouette, no valid
  pair for a mean cosine, an all-zero matrix for MEV);
* a **per-group** measure (a ``pandas.Series`` indexed by word or sentence) holds NaN
  for the groups where it is undefined (a word seen once, a sentence whose mean
  vector is zero), so one such group never hides the others.

Cosine measures reject zero vectors (their cosine is undefined) with ``ValueError``.
"""

from __future__ import annotations

import math
import numbers
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse
from sklearn.cluster import KMeans

from isolib._blas import eigh, one_blas_thread
from isolib._checks import as_points, check_int, check_same_length, rng, sample_rows, sklearn_seed

__all__ = [
    "average_cosine",
    "self_similarity",
    "intra_similarity",
    "anisotropy_baseline",
    "s_inter",
    "s_intra",
    "mev",
    "mev_baseline",
    "explained_variance",
    "effective_rank",
    "isoscore",
    "partition_isotropy",
    "lid_mle",
    "silhouette",
    "KMeansSelection",
    "select_kmeans",
    "centre_per_cluster",
]

# Row chunks hold about this many values (8 MB in float64).
_CHUNK_VALUES = 2**20
# k-NN distance stripes: at most this many query rows and float32 values (128 MB);
# each worker thread holds one. The matrix product needs a few hundred rows to run
# near its peak: at 50k x 768, 512-row stripes take 13.6 s against 19.7 s for the
# 83-row stripes of a 16 MB block.
_STRIPE_ROWS = 512
_DISTANCE_BLOCK_VALUES = 2**25
# At most this many worker threads; each holds its own blocks (up to 128 MB for k-NN).
_MAX_THREADS = 8
# Silhouette blocks are square: this many points a side (4 MB of float32 distances).
_SILHOUETTE_BLOCK = 1024
# Extra k-NN candidates kept from the float32 selection and re-ranked exactly, and
# the number of column groups of its two-stage selection (see _nearest_squared_distances).
_SELECTION_MARGIN = 10
_SELECTION_GROUP = 8
# The k-NN certificate bounds the float32 expansion error by this many times its
# typical size, eps32 * sqrt(d) * (||q|| + ||r||)^2 (see _nearest_squared_distances).
_ROUNDING_SIGMAS = 8


# --------------------------------------------------------------------------- helpers




def _float_points(X, *, min_samples: int = 1) -> np.ndarray:
    """Validate ``X`` as points, keeping float32 as float32 (half the memory) and widening the rest to float64."""
    dtype = np.float32 if np.asarray(X).dtype == np.float32 else np.float64
    return as_points(X, min_samples=min_samples, dtype=dtype)


def _row_chunks(n_rows: int, n_columns: int, values: int = _CHUNK_VALUES):
    """Yield slices of consecutive rows holding about ``values`` values each."""
    step = max(1, values // max(1, n_columns))
    for start in range(0, n_rows, step):
        yield slice(start, min(start + step, n_rows))


def _row_norms(points: np.ndarray) -> np.ndarray:
    """Euclidean norm of every row, accumulated in float64."""
    norms = np.empty(len(points))
    for rows in _row_chunks(*points.shape):
        block = points[rows].astype(np.float64)
        norms[rows] = np.sqrt(np.einsum("ij,ij->i", block, block))
    return norms


def _nonzero_row_norms(points: np.ndarray) -> np.ndarray:
    """Row norms, raising ``ValueError`` if a row is zero (its cosine with anything is undefined)."""
    norms = _row_norms(points)
    zero = np.flatnonzero(norms == 0)
    if zero.size:
        raise ValueError(
            f"X has {zero.size} zero vector(s) (first at row {zero[0]}), whose cosine similarity is undefined."
        )
    return norms


def _factorize(labels, n_samples: int, name: str) -> tuple[np.ndarray, pd.Index]:
    """Integer codes (in order of first appearance) and the distinct values of a 1-D label array."""
    values = np.asarray(labels)
    if values.ndim != 1:
        raise ValueError(f"{name} must be 1-D with one entry per row of X, got shape {values.shape}.")
    check_same_length(values, range(n_samples), names=(name, "X"))
    codes, uniques = pd.factorize(values)
    if (codes < 0).any():
        raise ValueError(f"{name} contains missing values (None or NaN).")
    return codes, pd.Index(uniques, name=name)


def _group_sums(
    points: np.ndarray, codes: np.ndarray, n_groups: int, *, norms: np.ndarray | None = None
) -> np.ndarray:
    """Sum of the rows of each group (of the unit vectors ``points[i] / norms[i]`` if ``norms`` is given).

    Rows with a negative code are skipped. Accumulated in float64 over row chunks
    with a sparse indicator matrix, so memory is ``(n_groups, n_features)`` plus one chunk.
    """
    sums = np.zeros((n_groups, points.shape[1]))
    for rows in _row_chunks(*points.shape):
        chunk_codes = codes[rows]
        keep = np.flatnonzero(chunk_codes >= 0)
        if keep.size == 0:
            continue
        block = points[rows][keep].astype(np.float64)
        if norms is not None:
            block /= norms[rows][keep, None]
        indicator = scipy.sparse.csr_matrix(
            (np.ones(keep.size), (chunk_codes[keep], np.arange(keep.size))), shape=(n_groups, keep.size)
        )
        sums += indicator @ block
    return sums


def _squared_norm_of_unit_sums(points: np.ndarray, norms: np.ndarray, codes: np.ndarray, n_groups: int) -> np.ndarray:
    """``||sum of the unit vectors of the group||^2`` for every group.

    A group of one row contributes exactly 1, so sums are only materialised for
    groups with several rows (memory stays small even with one group per row).
    """
    counts = np.bincount(codes, minlength=n_groups)
    result = counts.astype(np.float64)
    several = np.flatnonzero(counts >= 2)
    compact = np.full(n_groups, -1)
    compact[several] = np.arange(len(several))
    sums = _group_sums(points, compact[codes], len(several), norms=norms)
    result[several] = np.einsum("ij,ij->i", sums, sums)
    return result


def _mean_cosine_between_blocks(
    points: np.ndarray, norms: np.ndarray, groups: np.ndarray, blocks: np.ndarray, n_groups: int
) -> np.ndarray:
    """Per group, the mean cosine over ordered pairs of its rows that lie in different blocks.

    For the unit vectors ``u`` of one group, the sum of cosines over all ordered
    pairs ``i != j`` is ``||sum u||^2 - n``; pairs inside one block are removed the
    same way with the block sums. This is exact, costs one pass over the rows, and
    needs no pair sampling however frequent a word is. NaN where a group has no pair.

    ``groups`` and ``blocks`` are non-negative integer codes; ``blocks`` are e.g.
    sentence ids, or ``arange(n)`` when every row is its own block.
    """
    counts = np.bincount(groups, minlength=n_groups).astype(np.float64)
    total = _squared_norm_of_unit_sums(points, norms, groups, n_groups)

    # Cells are (group, block) pairs, encoded as one int64 key.
    n_blocks = int(blocks.max()) + 1
    cells, cell_of_row = np.unique(groups.astype(np.int64) * n_blocks + blocks, return_inverse=True)
    cell_total = _squared_norm_of_unit_sums(points, norms, cell_of_row, len(cells))
    cell_counts = np.bincount(cell_of_row, minlength=len(cells)).astype(np.float64)
    cell_group = cells // n_blocks
    within = np.bincount(cell_group, weights=cell_total, minlength=n_groups)
    within_pairs = np.bincount(cell_group, weights=cell_counts**2, minlength=n_groups)

    n_pairs = counts**2 - within_pairs
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n_pairs > 0, (total - within) / n_pairs, np.nan)


def _random_subset_per_group(codes: np.ndarray, limit: int | None, generator: np.random.Generator) -> np.ndarray:
    """Row indices keeping at most ``limit`` uniformly chosen rows of every group (all rows if None)."""
    if limit is None:
        return np.arange(len(codes))
    shuffled = generator.permutation(len(codes))
    order = shuffled[np.argsort(codes[shuffled], kind="stable")]
    sorted_codes = codes[order]
    first_of_group = np.searchsorted(sorted_codes, sorted_codes, side="left")
    rank_in_group = np.arange(len(order)) - first_of_group
    return np.sort(order[rank_in_group < limit])




def _augmented_centred(points: np.ndarray, *, n_rows: int | None = None) -> np.ndarray:
    """Rows ``[x, 1, ||x||^2]`` of the centred points, in float32, for :func:`_squared_distances`.

    Distances do not change under translation, but the rounding error of
    ``||x||^2 + ||y||^2 - 2 x.y`` grows with the norms: removing the common offset
    (large in decoder models' rogue dimensions) keeps float32 distances accurate.
    The mean and the norms are computed in float64. ``n_rows`` larger than the
    number of points appends padding rows ``[0, 1, huge]``, at a huge finite squared
    distance from every point.
    """
    n_samples, n_features = points.shape
    mean = points.mean(axis=0, dtype=np.float64)
    augmented = np.zeros((n_rows or n_samples, n_features + 2), dtype=np.float32)
    for rows in _row_chunks(n_samples, n_features):
        centred = points[rows] - mean
        augmented[rows, :n_features] = centred
        augmented[rows, n_features + 1] = np.einsum("ij,ij->i", centred, centred)
    augmented[:, n_features] = 1.0
    augmented[n_samples:, n_features + 1] = np.finfo(np.float32).max / 4
    return augmented


def _squared_distances(augmented: np.ndarray, rows, columns) -> np.ndarray:
    """Float32 block of squared distances between two sets of rows of an augmented matrix.

    One matrix product does it all: ``[-2x, ||x||^2, 1] . [y, 1, ||y||^2]
    = ||x||^2 + ||y||^2 - 2 x.y``, so no extra pass over the block is needed.
    Entries can be slightly negative through rounding.
    """
    left = augmented[rows].copy()
    left[:, :-2] *= -2.0
    left[:, -2] = left[:, -1]
    left[:, -1] = 1.0
    return left @ augmented[columns].T


def _in_threads(work, items) -> list:
    """``[work(item) for item in items]`` on one thread per usable core, BLAS single-threaded in each.

    numpy's matrix products, selections and element-wise passes release the GIL,
    so independent blocks run in parallel from start to finish, instead of only
    the matrix product being spread over cores.
    """
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    with one_blas_thread(), ThreadPoolExecutor(min(usable, _MAX_THREADS)) as pool:
        return list(pool.map(work, items))




def _scatter_matrix(points: np.ndarray, mean: np.ndarray | None = None) -> np.ndarray:
    """``(X - mean)^T (X - mean)`` in float64, accumulated over row chunks (uncentred if ``mean`` is None)."""
    scatter = np.zeros((points.shape[1], points.shape[1]))
    for rows in _row_chunks(*points.shape):
        block = points[rows].astype(np.float64)
        if mean is not None:
            block -= mean
        scatter += block.T @ block
    return scatter


def _squared_singular_values(points: np.ndarray, centered: bool) -> np.ndarray:
    """Squared singular values of ``points`` (optionally centred), descending, length ``min(n, d)``.

    Eigenvalues of the smaller of the two Gram matrices, in float64.
    """
    mean = points.mean(axis=0, dtype=np.float64) if centered else None
    if len(points) < points.shape[1]:
        rows = points.astype(np.float64) - (0.0 if mean is None else mean)
        gram = rows @ rows.T
    else:
        gram = _scatter_matrix(points, mean)
    # Rounding can leave tiny negative eigenvalues for a rank-deficient Gram matrix.
    return np.clip(eigh(gram, vectors=False)[::-1], 0.0, None)




# --------------------------------------------------------------------------- cosine family


def average_cosine(X, *, n_pairs: int | None = None, random_state=None) -> float:
    """Mean cosine similarity between distinct points (Ethayarajh 2019's anisotropy measure).

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
        At least 2 points, none of them the zero vector.
    n_pairs : int or None
        None (default): the exact mean over all ``n (n - 1)`` ordered pairs ``i != j``,
        computed in O(n d) from the sum of the unit vectors:
        ``(||sum_i u_i||^2 - n) / (n (n - 1))``. An int: the mean over that many
        pairs ``(i, j)``, ``i != j``, drawn uniformly with replacement (to mimic a
        sampled estimate).
    random_state : None, int or numpy Generator
        Seed of the pair sample (unused when ``n_pairs`` is None).

    Returns
    -------
    float
        In [-1, 1]. 1: all points point the same way (complete anisotropy);
        about 0: directions spread evenly (an isotropic cloud around the origin).
        A mean shift pushes it towards 1. Not centred: the origin matters.

    Raises
    ------
    ValueError
        On NaN/infinity, fewer than 2 points, a zero vector, or ``n_pairs < 1``.
    """
    points = _float_points(X, min_samples=2)
    norms = _nonzero_row_norms(points)
    n_samples = len(points)
    if n_pairs is None:
        squared_norm = _squared_norm_of_unit_sums(points, norms, np.zeros(n_samples, dtype=np.intp), 1)[0]
        return float((squared_norm - n_samples) / (n_samples * (n_samples - 1)))

    n_pairs = check_int(n_pairs, "n_pairs", low=1)
    generator = rng(random_state)
    first = generator.integers(n_samples, size=n_pairs)
    # Uniform over the other n - 1 points: draw from n - 1 slots and skip `first`.
    second = generator.integers(n_samples - 1, size=n_pairs)
    second += second >= first
    total = 0.0
    for pairs in _row_chunks(n_pairs, points.shape[1]):
        left = points[first[pairs]].astype(np.float64)
        right = points[second[pairs]].astype(np.float64)
        dots = np.einsum("ij,ij->i", left, right)
        total += float(np.sum(dots / (norms[first[pairs]] * norms[second[pairs]])))
    return total / n_pairs


def self_similarity(X, labels, contexts=None) -> pd.Series:
    """Self-similarity of each word: mean cosine between its occurrences (Ethayarajh 2019).

    ``SelfSim(w)`` is the mean cosine over all ordered pairs ``j != k`` of the
    occurrences of ``w`` that lie in *different* contexts. The mean is exact for
    every word (computed from sums of unit vectors, O(n d) in total), so the
    authors' pair sampling for very frequent words is not needed.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
        One row per occurrence (token), none of them the zero vector.
    labels : array_like of shape (n_samples,)
        The word (type) of each occurrence; any hashable values.
    contexts : array_like of shape (n_samples,), optional
        The context (sentence id) of each occurrence; pairs inside one context are
        excluded, as in the paper's definition. If None, every pair of distinct
        occurrences counts, so two occurrences in one sentence form a pair, as in
        the authors' code.

    Returns
    -------
    pandas.Series of float, indexed by word (order of first appearance)
        In [-1, 1]; 1: the word has the same direction in every context (no
        contextualisation); lower: more context-specific. NaN for a word with no
        valid pair (one occurrence, or all in one context). Subtract
        :func:`anisotropy_baseline` of the same layer for the adjusted measure.

    Raises
    ------
    ValueError
        On NaN/infinity, a zero vector, or ``labels``/``contexts`` whose length
        differs from the number of rows.
    """
    points = _float_points(X)
    norms = _nonzero_row_norms(points)
    codes, words = _factorize(labels, len(points), "labels")
    if contexts is None:
        blocks = np.arange(len(points))
    else:
        blocks, _ = _factorize(contexts, len(points), "contexts")
    values = _mean_cosine_between_blocks(points, norms, codes, blocks, len(words))
    return pd.Series(values, index=words, name="self_similarity")


def intra_similarity(X, contexts) -> pd.Series:
    """Intra-sentence similarity of each context (Ethayarajh 2019).

    ``IntraSim(s)`` is the mean over the tokens ``i`` of sentence ``s`` of
    ``cos(mean_s, x_i)``, where ``mean_s`` is the mean of the sentence's (raw,
    unnormalised) token vectors.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
        One row per token, none of them the zero vector.
    contexts : array_like of shape (n_samples,)
        The sentence id of each token.

    Returns
    -------
    pandas.Series of float, indexed by context (order of first appearance)
        In [-1, 1]; 1: every token points along the sentence mean (a
        one-token sentence scores exactly 1); lower: tokens spread around it.
        NaN for a sentence whose mean vector is zero.

    Raises
    ------
    ValueError
        On NaN/infinity, a zero vector, or a length mismatch.
    """
    points = _float_points(X)
    norms = _nonzero_row_norms(points)
    codes, names = _factorize(contexts, len(points), "contexts")
    n_contexts = len(names)
    counts = np.bincount(codes, minlength=n_contexts)

    sums = _group_sums(points, codes, n_contexts)
    sum_norms = np.sqrt(np.einsum("ij,ij->i", sums, sums))
    cosines = np.empty(len(points))
    for rows in _row_chunks(*points.shape):
        block = points[rows].astype(np.float64)
        dots = np.einsum("ij,ij->i", block, sums[codes[rows]])
        with np.errstate(invalid="ignore", divide="ignore"):
            cosines[rows] = dots / (norms[rows] * sum_norms[codes[rows]])
    values = np.bincount(codes, weights=cosines, minlength=n_contexts) / counts
    return pd.Series(values, index=names, name="intra_similarity")


def anisotropy_baseline(X, contexts, *, n_samples: int = 1000, random_state=None) -> float:
    """Ethayarajh (2019)'s anisotropy baseline of a layer for self- and intra-sentence similarity.

    The mean cosine between uniformly random occurrences from different contexts:
    ``n_samples`` rows are drawn without replacement and the mean is taken exactly
    over all their pairs that lie in different contexts. The adjusted measure is
    ``raw - baseline`` of the same layer.

    Parameters
    ----------
    X : array_like of shape (n_samples_total, n_features)
        All occurrences of one layer, none of them the zero vector.
    contexts : array_like of shape (n_samples_total,)
        The sentence id of each row.
    n_samples : int
        Occurrences drawn (the paper: 1,000). All rows are used if there are fewer.
    random_state : None, int or numpy Generator

    Returns
    -------
    float
        In [-1, 1]; about 0 for an isotropic layer, near 1 for a highly anisotropic one.

    Raises
    ------
    ValueError
        On NaN/infinity, a zero vector, a length mismatch, ``n_samples < 2``, or a
        sample that falls in a single context.
    """
    points = _float_points(X, min_samples=2)
    norms = _nonzero_row_norms(points)
    codes, _ = _factorize(contexts, len(points), "contexts")
    n_samples = check_int(n_samples, "n_samples", low=2)
    sample = sample_rows(len(points), n_samples, rng(random_state))
    one_group = np.zeros(len(sample), dtype=np.intp)
    value = _mean_cosine_between_blocks(points[sample], norms[sample], one_group, codes[sample], 1)[0]
    if np.isnan(value):
        raise ValueError(
            "all sampled occurrences come from a single context, so no pair from different contexts exists."
        )
    return float(value)


def s_inter(X, labels, *, random_state=None) -> float:
    """Cai et al. (2021)'s S_inter: mean cosine across types, one random instance per type.

    One occurrence of every type is drawn uniformly (as in the authors' code), and
    :func:`average_cosine` is taken exactly over these type representatives.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
        Token vectors, none of them the zero vector.
    labels : array_like of shape (n_samples,)
        The type of each token.
    random_state : None, int or numpy Generator
        Seed of the instance draw.

    Returns
    -------
    float
        In [-1, 1]; about 0 when different types point in unrelated directions
        (isotropic), near 1 when all types share a common direction.

    Raises
    ------
    ValueError
        On NaN/infinity, a zero vector, a length mismatch, or fewer than 2 types.
    """
    points = _float_points(X)
    _nonzero_row_norms(points)  # rejects zero vectors anywhere, not only among the drawn ones
    codes, types = _factorize(labels, len(points), "labels")
    if len(types) < 2:
        raise ValueError(f"labels has {len(types)} distinct type(s); S_inter needs at least 2.")
    representatives = _random_subset_per_group(codes, 1, rng(random_state))
    return average_cosine(points[representatives])


def s_intra(X, labels, *, max_instances: int | None = 1000, random_state=None) -> float:
    """Cai et al. (2021)'s S_intra: mean cosine between instances of the same type.

    For each type, at most ``max_instances`` of its occurrences are drawn
    uniformly; the mean cosine over all pairs of distinct drawn instances is
    computed exactly; the result is the unweighted mean over types with at least
    2 instances.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
        Token vectors, none of them the zero vector.
    labels : array_like of shape (n_samples,)
        The type of each token.
    max_instances : int or None
        Cap on the instances per type (the authors: 1,000); None uses all.
    random_state : None, int or numpy Generator
        Seed of the instance draw (irrelevant when no type exceeds the cap).

    Returns
    -------
    float
        In [-1, 1]; 1: every type has a single direction whatever its context;
        compare with :func:`s_inter` (S_intra > S_inter means types are recognisable).

    Raises
    ------
    ValueError
        On NaN/infinity, a zero vector, a length mismatch, ``max_instances < 2``,
        or no type with at least 2 instances.
    """
    points = _float_points(X)
    norms = _nonzero_row_norms(points)
    codes, types = _factorize(labels, len(points), "labels")
    if max_instances is not None:
        max_instances = check_int(max_instances, "max_instances", low=2)
    kept = _random_subset_per_group(codes, max_instances, rng(random_state))
    per_type = _mean_cosine_between_blocks(points[kept], norms[kept], codes[kept], np.arange(len(kept)), len(types))
    if np.isnan(per_type).all():
        raise ValueError("no type in labels has at least 2 instances, so S_intra is undefined.")
    return float(np.nanmean(per_type))


# --------------------------------------------------------------------------- variance family


def explained_variance(X, *, centered: bool = True) -> np.ndarray:
    """Fraction of the variance along each principal direction, largest first.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
    centered : bool
        True (default): the spectrum of the centred cloud, i.e. scikit-learn's
        ``PCA().explained_variance_ratio_``. False: the spectrum of the raw matrix
        (``sigma_i^2 / sum sigma_j^2`` of its singular values), as a TruncatedSVD
        of the uncentred data computes it.

    Returns
    -------
    ndarray of shape (min(n_samples, n_features),), float64
        Non-negative, descending, summing to 1. All mass on the first entry: the
        points lie on a line (through the origin if uncentred); equal entries:
        isotropic.

    Raises
    ------
    ValueError
        On NaN/infinity or zero total variance (all points identical when centred,
        all zero when not).
    """
    points = _float_points(X, min_samples=2 if centered else 1)
    squared = _squared_singular_values(points, centered)
    total = squared.sum()
    if total == 0:
        what = "all points are identical" if centered else "X is all zeros"
        raise ValueError(f"{what}, so the explained variance is undefined.")
    return squared / total


def mev(X, *, centered: bool = False) -> float:
    """Maximum explainable variance: share of the first principal component (Ethayarajh 2019).

    ``MEV = sigma_1^2 / sum_i sigma_i^2`` of the occurrence matrix of one word in
    one layer.

    Parameters
    ----------
    X : array_like of shape (n_occurrences, n_features)
    centered : bool
        False (default): singular values of the raw matrix, the paper's formula
        (and the authors' TruncatedSVD baseline). True: of the centred matrix, what
        the authors' per-word code computed with scikit-learn's PCA. The two can
        differ a lot; report which one.

    Returns
    -------
    float
        In [1/min(n, d), 1]; 1: all occurrences lie on one line (one static vector
        explains the word); small: the word's representations spread in many
        directions. Subtract :func:`mev_baseline` of the layer for the adjusted MEV.

    Raises
    ------
    ValueError
        On NaN/infinity, fewer than 2 rows when centred, or zero total variance.
    """
    return float(explained_variance(X, centered=centered)[0])


def mev_baseline(X, *, n_samples: int = 1000, centered: bool = False, random_state=None) -> float:
    """Ethayarajh (2019)'s MEV baseline: :func:`mev` of uniformly random occurrences of a layer.

    Parameters
    ----------
    X : array_like of shape (n_samples_total, n_features)
        All occurrences of one layer.
    n_samples : int
        Rows drawn without replacement (the paper: 1,000); all rows if there are fewer.
    centered : bool
        As in :func:`mev`; the authors' baseline was uncentred (TruncatedSVD).
    random_state : None, int or numpy Generator

    Returns
    -------
    float
        In (0, 1]; see :func:`mev`.

    Raises
    ------
    ValueError
        As :func:`mev`, or ``n_samples < 2``.
    """
    points = _float_points(X)
    n_samples = check_int(n_samples, "n_samples", low=2)
    return mev(points[sample_rows(len(points), n_samples, rng(random_state))], centered=centered)


def effective_rank(X, *, centered: bool = False) -> float:
    """Effective rank of Roy & Vetterli (2007): the exponential of the singular-value entropy.

    With singular values ``sigma_i`` and ``p_i = sigma_i / sum_j sigma_j`` (the
    singular values themselves, not their squares), ``erank = exp(-sum_i p_i log p_i)``.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
    centered : bool
        False (default): the matrix as given, as Roy & Vetterli define it. True: of
        the centred cloud (the spread around the mean).

    Returns
    -------
    float
        In [1, min(n_samples, n_features)]; 1: rank one (a line); the maximum when
        all singular values are equal (isotropic).

    Raises
    ------
    ValueError
        On NaN/infinity or an all-zero (or, when centred, constant) matrix.
    """
    points = _float_points(X, min_samples=2 if centered else 1)
    singular = np.sqrt(_squared_singular_values(points, centered))
    if singular.sum() == 0:
        what = "all points are identical" if centered else "X is all zeros"
        raise ValueError(f"{what}, so the effective rank is undefined.")
    p = singular[singular > 0] / singular.sum()
    return float(np.exp(-np.sum(p * np.log(p))))


# --------------------------------------------------------------------------- isotropy


def isoscore(X) -> float:
    """IsoScore of Rudman et al. (2022).

    With ``n = n_features``: centre and rotate the points to their principal axes;
    take the variance of each coordinate (ddof = 1) as the vector ``S`` (padded with
    zeros when there are fewer points than dimensions); normalise
    ``S_hat = sqrt(n) S / ||S||``; defect ``delta = ||S_hat - 1|| / sqrt(2 (n - sqrt(n)))``;
    ``k = (n - delta^2 (n - sqrt(n)))^2 / n``; ``IsoScore = (k - 1) / (n - 1)``.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
        Points as rows (the pip package ``IsoScore`` 2.x takes the same orientation;
        its GitHub predecessor took the transpose). At least 2 points and 2 features.

    Returns
    -------
    float
        In [0, 1]; 1: variance spread equally over all dimensions (isotropic
        Gaussian); 0: all variance along one line. Invariant to a mean shift,
        rotation and scale.

    Raises
    ------
    ValueError
        On NaN/infinity, fewer than 2 points or features, or identical points.
    """
    points = _float_points(X, min_samples=2)
    n = points.shape[1]
    if n < 2:
        raise ValueError("X has 1 feature; IsoScore needs at least 2 dimensions.")
    variances = np.zeros(n)
    squared = _squared_singular_values(points, centered=True)
    variances[: len(squared)] = squared / (len(points) - 1)
    norm = np.linalg.norm(variances)
    if norm == 0:
        raise ValueError("all points of X are identical, so IsoScore is undefined.")
    normalised = math.sqrt(n) * variances / norm
    defect = np.linalg.norm(normalised - 1.0) / math.sqrt(2 * (n - math.sqrt(n)))
    k = (n - defect**2 * (n - math.sqrt(n))) ** 2 / n
    # Rounding can push k a hair outside [1, n]; the score is defined on [0, 1].
    return float(np.clip((k - 1) / (n - 1), 0.0, 1.0))


def partition_isotropy(X) -> float:
    """Isotropy ``I(W)`` of Mu & Viswanath (2018), as used by Rajaee & Pilehvar (2021).

    ``F(u) = sum_i exp(u . w_i)`` and ``I(W) = min_u F(u) / max_u F(u)`` over the
    unit eigenvectors ``u`` of ``W^T W`` (uncentred). An eigenvector is defined only
    up to sign and ``F(u) != F(-u)`` for uncentred ``W``, so both signs of every
    eigenvector are included; an implementation that keeps whatever sign its
    eigensolver returns can give a different value.
    ``log F`` is computed with log-sum-exp in float64 and the ratio as
    ``exp(min log F - max log F)``, so norms in the thousands do not overflow.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
        The rows ``w_i`` as they are (not centred, not normalised).

    Returns
    -------
    float
        In [0, 1]; near 1 for a centred isotropic cloud of small norm; near 0 when
        a common direction dominates (e.g. a mean shift). **Not scale invariant**:
        scaling ``W`` by ``c`` changes ``I`` (``I -> 1`` as ``c -> 0``), so always
        say what ``W`` is (tokens or sentences, before or after processing).

    Raises
    ------
    ValueError
        On NaN/infinity.
    """
    points = _float_points(X)
    _, eigenvectors = eigh(_scatter_matrix(points), vectors=True)
    directions = np.hstack([eigenvectors, -eigenvectors])

    # Streaming log-sum-exp over row chunks: keep the running maximum and the sum
    # of exp(projection - maximum) per direction.
    running_max = np.full(directions.shape[1], -np.inf)
    scaled_sum = np.zeros(directions.shape[1])
    for rows in _row_chunks(len(points), directions.shape[1]):
        projections = points[rows].astype(np.float64) @ directions
        chunk_max = projections.max(axis=0)
        new_max = np.maximum(running_max, chunk_max)
        scaled_sum = scaled_sum * np.exp(running_max - new_max) + np.exp(projections - new_max).sum(axis=0)
        running_max = new_max
    log_f = running_max + np.log(scaled_sum)
    return float(np.exp(log_f.min() - log_f.max()))


# --------------------------------------------------------------------------- local intrinsic dimension


def _row_hashes(points: np.ndarray, rows: np.ndarray, seed: int) -> np.ndarray:
    """A 64-bit hash of each row's values: a wrapping integer dot product of its bits with random odd numbers.

    Integer arithmetic is exact and order-free, so equal rows always hash alike;
    ``+ 0.0`` first turns -0.0 into 0.0, the only equal values with different bits.
    """
    words = np.uint32 if points.dtype == np.float32 else np.uint64
    multipliers = np.random.default_rng(seed).integers(1, 2**63, size=points.shape[1], dtype=np.uint64) | 1
    hashes = np.empty(len(rows), dtype=np.uint64)
    for part in _row_chunks(len(rows), points.shape[1]):
        bits = (points[rows[part]] + 0.0).view(words).astype(np.uint64)
        hashes[part] = (bits * multipliers).sum(axis=1)  # wraps modulo 2**64, as intended
    return hashes


def _first_distinct_rows(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First occurrence of each distinct row (in row order), and for every row the position of its representative.

    Rows are grouped by hash and each is compared exactly with the first row of its
    group; memory stays O(n) plus one chunk (sorting the rows themselves would copy
    them several times). Rows that differ from their group's first row (a hash
    collision, about n^2 / 2^64 likely) are grouped again with a new hash; equal
    rows always share a group, so they are resolved together.
    """
    n_samples = len(points)
    representative = np.arange(n_samples)
    pending = np.arange(n_samples)
    seed = 0
    while pending.size:
        _, first, group = np.unique(_row_hashes(points, pending, seed), return_index=True, return_inverse=True)
        mate = pending[first[group.ravel()]]
        equal = mate == pending
        for part in _row_chunks(len(pending), points.shape[1]):
            check = np.flatnonzero(~equal[part]) + part.start
            equal[check] = (points[pending[check]] == points[mate[check]]).all(axis=1)
        representative[pending[equal]] = mate[equal]
        pending = pending[~equal]
        seed += 1
    distinct = np.flatnonzero(representative == np.arange(n_samples))
    position = np.empty(n_samples, dtype=np.intp)
    position[distinct] = np.arange(len(distinct))
    return distinct, position[representative]


def _rerank_exactly(reference, rows, candidates, k):
    """Exact squared distances from ``reference[rows]`` to their candidates, from coordinate differences.

    A sum of squared differences has no cancellation: its relative error is that of
    the input (about 1e-7 for float32 rows, 1e-16 for float64). Returns the sorted
    ``(len(rows), n_candidates)`` float64 distances; the first k are the neighbours.
    """
    exact = np.empty(candidates.shape)
    for part in _row_chunks(len(rows), candidates.shape[1] * reference.shape[1]):
        differences = reference[candidates[part]]
        differences -= reference[rows[part], None, :]
        exact[part] = np.vecdot(differences, differences)
    exact.sort(axis=1)
    return exact


def _float64_squared_distances(reference, mean, rows):
    """``(len(rows), n_reference)`` squared distances by the float64 expansion of the centred rows.

    Columns are converted in blocks, so no float64 copy of the whole reference is made.
    """
    left = reference[rows] - mean
    left_norms = np.einsum("ij,ij->i", left, left)
    squared = np.empty((len(rows), len(reference)))
    for columns in _row_chunks(*reference.shape):
        right = reference[columns] - mean
        squared[:, columns] = left_norms[:, None] + np.einsum("ij,ij->i", right, right) - 2.0 * (left @ right.T)
    return squared


def _nearest_squared_distances(
    reference: np.ndarray, query_rows: np.ndarray, k: int, chunk_size: int | None
) -> np.ndarray:
    """Squared Euclidean distances from ``reference[query_rows]`` to their k nearest other reference rows.

    Exact brute force, per chunk of queries (chunks run in parallel threads):

    1. One float32 matrix product of the centred rows against all rows (the
       costly part) gives approximate squared distances.
    2. The ``K = k + _SELECTION_MARGIN`` smallest of each row are selected in two
       stages. The columns are dealt into ``_SELECTION_GROUP`` interleaved groups
       (column ``j + t * width`` goes to group ``j``). The K smallest entries lie in
       the K groups with the smallest minima (each such entry is at most the K-th
       smallest value, and so is its group's minimum), so selecting among the group
       minima, then among those K groups' entries, gives exactly the K smallest,
       several times faster than ``argpartition`` over all columns.
    3. For these K candidates the distances are recomputed exactly
       (:func:`_rerank_exactly`) and the k smallest are kept.
    4. A certificate checks that no other point can be nearer than the k-th. The
       float32 expansion ``||q||^2 + ||r||^2 - 2 q.r`` of centred rows ``q`` and
       ``r`` errs by about ``eps32 sqrt(d) (||q|| + ||r||)^2``; the bound used is
       ``_ROUNDING_SIGMAS`` times that. A point outside the candidates has an
       approximate distance at least the K-th candidate's, ``a_K``, and can only be
       nearer than the exact k-th distance ``e_k`` if
       ``||r|| <= ||q|| + sqrt(e_k)`` (triangle inequality), so it is certainly
       farther when ``a_K - bound(||q||, ||q|| + sqrt(e_k)) >= e_k``. Rows that fail
       (near-duplicate points, such as a [CLS] token that barely changes between
       sentences, whose distances are far below the float32 resolution of their
       norms) are searched again with float64 products, whose error is 2^29 times
       smaller, then re-ranked exactly.

    Returns an array of shape ``(len(query_rows), k)``, sorted within each row.
    """
    n_reference, n_features = reference.shape
    n_candidates = min(k + _SELECTION_MARGIN, n_reference - 1)
    # Grouping pays only when there are many more columns per group than candidates.
    n_groups = _SELECTION_GROUP if n_reference >= 4 * _SELECTION_GROUP * n_candidates else 1
    group_width = -(-n_reference // n_groups)
    augmented = _augmented_centred(reference, n_rows=n_groups * group_width)
    centred_norms = np.sqrt(augmented[:n_reference, n_features + 1].astype(np.float64))
    rounding = _ROUNDING_SIGMAS * np.sqrt(n_features + 2) * np.finfo(np.float32).eps
    if chunk_size is None:
        chunk_size = min(_STRIPE_ROWS, max(1, _DISTANCE_BLOCK_VALUES // n_reference))
    result = np.empty((len(query_rows), k))
    uncertified = []

    def nearest_of_chunk(start: int) -> None:
        rows = query_rows[start : start + chunk_size]
        squared = _squared_distances(augmented, rows, slice(None))
        squared[np.arange(len(rows)), rows] = np.inf  # a point is not its own neighbour
        group_minima = squared.reshape(len(rows), n_groups, group_width).min(axis=1)
        best_groups = np.argpartition(group_minima, n_candidates - 1, axis=1)[:, :n_candidates]
        columns = (best_groups[:, :, None] + group_width * np.arange(n_groups)).reshape(len(rows), -1)
        values = np.take_along_axis(squared, columns, axis=1)
        del squared
        picked = np.argpartition(values, n_candidates - 1, axis=1)[:, :n_candidates]
        candidates = np.take_along_axis(columns, picked, axis=1)
        exact = _rerank_exactly(reference, rows, candidates, k)
        result[start : start + len(rows)] = exact[:, :k]
        if n_candidates < n_reference - 1:  # otherwise every other point was a candidate
            kth = exact[:, k - 1]
            largest_approximate = np.take_along_axis(values, picked, axis=1).max(axis=1)
            bound = rounding * (2 * centred_norms[rows] + np.sqrt(kth)) ** 2
            uncertified.append(start + np.flatnonzero(largest_approximate - bound < kth))

    _in_threads(nearest_of_chunk, range(0, len(query_rows), chunk_size))
    positions = np.concatenate(uncertified) if uncertified else np.empty(0, dtype=np.intp)
    if positions.size:
        mean = reference.mean(axis=0, dtype=np.float64)
        for part in _row_chunks(len(positions), n_reference, _DISTANCE_BLOCK_VALUES // 2):
            rows = query_rows[positions[part]]
            squared = _float64_squared_distances(reference, mean, rows)
            squared[np.arange(len(rows)), rows] = np.inf
            candidates = np.argpartition(squared, n_candidates - 1, axis=1)[:, :n_candidates]
            result[positions[part]] = _rerank_exactly(reference, rows, candidates, k)[:, :k]
    return result


def lid_mle(
    X,
    *,
    k: int = 100,
    metric: str = "euclidean",
    squared: bool = False,
    queries=None,
    random_state=None,
    chunk_size: int | None = None,
    return_per_point: bool = False,
):
    """Local intrinsic dimension, maximum-likelihood form, averaged over points (Cai et al. 2021).

    For a query point with distances ``d_1 <= ... <= d_k`` to its k nearest
    neighbours among the distinct points (itself excluded),
    ``LID = -[(1/k) sum_{j<=k} log(d_j / d_k)]^{-1}`` (Levina & Bickel 2005 with
    the 1/k normalisation of Cai et al.); the result is the arithmetic mean over the
    query points. Duplicate rows are removed first: a zero distance would send the
    estimate to 0 or infinity.

    The k-NN search is exact brute force over chunks of queries, run in parallel
    threads: float32 matrix products of the centred points select candidate
    neighbours, whose distances are then recomputed from coordinate differences
    (no cancellation error; relative error about 1e-7 for float32 input, 1e-16 for
    float64); rows whose float32 ranking a rounding-error certificate cannot vouch
    for (near-duplicate points) are searched again in float64; the log ratios are
    computed in float64. No approximate index is
    involved: per-point values match a float64 brute force to about LID x 1e-7
    relative for float32 input (the log ratios of a high-dimensional cloud are
    small, which amplifies distance errors), and to 1e-12 for float64 input.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
    k : int
        Neighbours per point (Cai et al.: 100). Must be smaller than the number of
        distinct points.
    metric : {"euclidean", "cosine"}
        "euclidean": ``d = ||x - y||``. "cosine": the rows are normalised to unit
        length first and ``d = ||u - v|| = sqrt(2 (1 - cos))``; zero vectors are rejected.
    squared : bool
        False (default): the estimator on true distances. True: on squared
        distances, as the authors' faiss code did (``||x - y||^2``, and ``1 - cos``
        in cosine mode). Since ``log(d_j^2 / d_k^2) = 2 log(d_j / d_k)`` this
        exactly halves every per-point value (a 5-d subspace gives about 5 and 2.5);
        report the true-distance value and this one to compare with the paper.
    queries : None, int or array_like of int
        Points at which LID is estimated (neighbours are always searched among all
        distinct points). None: every distinct point. An int ``q``: ``q`` distinct
        points drawn uniformly without replacement (a cheaper unbiased estimate of
        the mean). An array: row indices into ``X`` (duplicates of a row share its
        estimate).
    random_state : None, int or numpy Generator
        Seed of the query sample (``queries`` an int only).
    chunk_size : int or None
        Queries per block of distances; a block holds ``chunk_size x n_distinct``
        float32 values, one block per thread. None: up to 512 rows and 128 MB per block.
    return_per_point : bool
        Also return the per-point estimates.

    Returns
    -------
    float, or (float, pandas.Series)
        The mean LID (> 0; about the dimension of the manifold the points sample
        locally, at most about ``n_features``; larger is more spread). With
        ``return_per_point``, also the per-point values indexed by row of ``X``
        (``inf`` where all k neighbour distances tie).

    Raises
    ------
    ValueError
        On NaN/infinity, an unknown metric, ``k < 1``, ``k`` not smaller than the
        number of distinct points, a zero vector in cosine mode, or bad ``queries``.

    Notes
    -----
    scikit-dimension's ``skdim.id.MLE`` differs in three defaults: ``k = 20``
    neighbours, the numerator ``k - 1`` instead of ``k`` (per point it equals this
    value times ``(k - 1) / k``), and ``comb="mle"``, which averages the per-point
    values harmonically (the MacKay & Ghahramani correction) instead of arithmetically.
    """
    if metric not in ("euclidean", "cosine"):
        raise ValueError(f"metric must be 'euclidean' or 'cosine', got {metric!r}.")
    k = check_int(k, "k", low=1)
    points = _float_points(X, min_samples=2)
    if metric == "cosine":
        points = points / _nonzero_row_norms(points)[:, None]
    distinct, representative = _first_distinct_rows(points)
    if k >= len(distinct):
        raise ValueError(
            f"k={k} must be smaller than the number of distinct points ({len(distinct)}), "
            "since each point needs k neighbours other than itself."
        )
    reference = points[distinct] if len(distinct) < len(points) else points

    if queries is None:
        query_rows = np.arange(len(distinct))
        index = distinct
    elif isinstance(queries, numbers.Integral):
        n_queries = check_int(queries, "queries", low=1, high=len(distinct))
        query_rows = np.sort(rng(random_state).choice(len(distinct), size=n_queries, replace=False))
        index = distinct[query_rows]
    else:
        index = np.asarray(queries)
        if index.ndim != 1 or index.size == 0 or not np.issubdtype(index.dtype, np.integer):
            raise ValueError("queries must be None, an int, or a non-empty 1-D array of row indices.")
        if index.min() < 0 or index.max() >= len(points):
            raise ValueError(f"queries holds row indices outside [0, {len(points) - 1}].")
        query_rows = representative[index]

    squared_distances = _nearest_squared_distances(reference, query_rows, k, chunk_size)
    # sum_j log(d_k^2 / d_j^2) >= 0; it is 0 only when all k distances tie.
    log_ratios = np.log(squared_distances.max(axis=1, keepdims=True) / squared_distances).sum(axis=1)
    # log(d^2) = 2 log(d): true distances put a factor 2 in the numerator.
    factor = k if squared else 2 * k
    with np.errstate(divide="ignore"):
        per_point = np.where(log_ratios > 0, factor / log_ratios, np.inf)
    mean = float(per_point.mean())
    if return_per_point:
        return mean, pd.Series(per_point, index=pd.Index(index, name="row"), name="lid")
    return mean


# --------------------------------------------------------------------------- clusters


def _label_codes(labels, n_samples: int) -> np.ndarray:
    """Integer codes of 1-D labels, or of the distinct rows of a 2-D (multi-label) array."""
    values = np.asarray(labels)
    check_same_length(values, range(n_samples), names=("labels", "X"))
    if values.ndim == 2:
        return np.unique(values, axis=0, return_inverse=True)[1].ravel()
    return _factorize(values, n_samples, "labels")[0]


def _label_blocks(sizes: np.ndarray, block: int) -> list[slice]:
    """Blocks of at most ``block`` consecutive rows of label-sorted points, never spanning two clusters
    of at least ``block // 16`` points (runs of smaller clusters share blocks)."""
    blocks, start, run_start = [], 0, None

    def split(begin: int, end: int) -> None:
        parts = -(-(end - begin) // block)
        edges = np.linspace(begin, end, parts + 1).round().astype(int)
        blocks.extend(slice(a, b) for a, b in zip(edges[:-1], edges[1:]))

    for size in sizes:
        if size >= max(1, block // 16):
            if run_start is not None:
                split(run_start, start)
                run_start = None
            split(start, start + size)
        elif run_start is None:
            run_start = start
        start += size
    if run_start is not None:
        split(run_start, start)
    return blocks


def silhouette(
    X, labels, *, sample_size: int | None = None, random_state=None, chunk_size: int | None = None
) -> float:
    """Mean silhouette coefficient (Rousseeuw 1987), Euclidean; equals ``sklearn.metrics.silhouette_score``.

    For point ``i`` in cluster ``C``: ``a`` is its mean distance to the other
    members of ``C``, ``b`` the smallest mean distance to the members of another
    cluster, and ``s = (b - a) / max(a, b)`` (0 for a point alone in its cluster or
    when ``a = b = 0``). The score is the mean of ``s``.

    Distances are computed block by block, in parallel threads: each pair of
    blocks of at most ``chunk_size`` points costs one float32 matrix product,
    used for both blocks since distances are symmetric; per-cluster sums come from
    one product with the blocks' one-hot label matrix and are accumulated in
    float64. Memory: one block per thread plus an ``(n_samples, n_labels)``
    float64 array of sums per thread.

    Precision: the float32 expansion ``||x||^2 + ||y||^2 - 2 x.y`` errs by about
    1e-7 of the squared norms, which ruins distances inside a cluster that is tight
    and far from the origin (MiniLM's [CLS] vectors, SmolLM2's middle layers: 2e-6
    to 3e-5 off scikit-learn's value when the data were only centred globally).
    So the points are sorted by label, each block holds a single cluster (clusters
    under ``chunk_size // 16`` points share blocks), each block is centred at its own
    mean, and the offset between two blocks' means enters in float64.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
    labels : array_like of shape (n_samples,) or (n_samples, n_outputs)
        Cluster or class of each point. A 2-D (multi-label) array counts each
        distinct row (label vector) as one label, the rule of Mickus et al.
    sample_size : int or None
        Score a uniform sample of this many points (without replacement) instead of
        all; all if None or at least ``n_samples``. The sample differs from the one
        scikit-learn would draw with the same seed.
    random_state : None, int or numpy Generator
        Seed of the sample.
    chunk_size : int or None
        Points per block (a block holds ``chunk_size^2`` float32 distances).
        None: 1,024 (4 MB blocks).

    Returns
    -------
    float
        In [-1, 1]; near 1: tight, well-separated clusters; about 0: overlapping
        clusters; negative: points closer to another cluster than to their own.

    Raises
    ------
    ValueError
        On NaN/infinity, a length mismatch, or fewer than 2 or more than
        ``n_samples - 1`` distinct labels (in the scored sample).
    """
    points = _float_points(X, min_samples=2)
    codes = _label_codes(labels, len(points))
    if sample_size is not None:
        sample_size = check_int(sample_size, "sample_size", low=2)
        sample = sample_rows(len(points), sample_size, rng(random_state))
        points, codes = points[sample], codes[sample]
    codes = np.unique(codes, return_inverse=True)[1]
    n_samples, n_labels = len(points), int(codes.max()) + 1
    if not 2 <= n_labels <= n_samples - 1:
        raise ValueError(
            f"labels has {n_labels} distinct value(s) for {n_samples} points; "
            f"the silhouette needs between 2 and {n_samples - 1}."
        )
    block = _SILHOUETTE_BLOCK if chunk_size is None else check_int(chunk_size, "chunk_size", low=1)

    # Sorted by label, each block holds one cluster (or a run of clusters too small for a
    # block of their own) and is centred at its own mean: see the Notes.
    order = np.argsort(codes, kind="stable")
    points, codes = points[order], codes[order]
    sizes = np.bincount(codes, minlength=n_labels)
    blocks = _label_blocks(sizes, block)
    block_means = np.stack([points[rows].mean(axis=0, dtype=np.float64) for rows in blocks])
    local = np.empty(points.shape, dtype=np.float32)
    for rows, mean in zip(blocks, block_means):
        local[rows] = points[rows] - mean
    local_norms = np.einsum("ij,ij->i", local, local, dtype=np.float64)
    one_hot = np.zeros((n_samples, n_labels), dtype=np.float32)
    one_hot[np.arange(n_samples), codes] = 1.0
    block_pairs = [(i, j) for i in range(len(blocks)) for j in range(i, len(blocks))]
    # Each thread adds into its own (n_samples, n_labels) array; they are summed at the end.
    per_thread = threading.local()
    accumulators = []

    def add_block_pair(pair: tuple[int, int]) -> None:
        if not hasattr(per_thread, "sums"):
            per_thread.sums = np.zeros((n_samples, n_labels))
            accumulators.append(per_thread.sums)
        rows, columns = blocks[pair[0]], blocks[pair[1]]
        # x - y = x' - y' - shift, with x' and y' centred at their own blocks' means.
        shift = block_means[pair[1]] - block_means[pair[0]]
        row_terms = local_norms[rows] - 2.0 * (local[rows] @ shift.astype(np.float32))
        column_terms = local_norms[columns] + 2.0 * (local[columns] @ shift.astype(np.float32)) + shift @ shift
        distances = local[rows] @ local[columns].T
        distances *= -2.0
        distances += row_terms.astype(np.float32)[:, None]
        distances += column_terms.astype(np.float32)[None, :]
        np.maximum(distances, 0.0, out=distances)
        np.sqrt(distances, out=distances)
        if pair[0] == pair[1]:
            np.fill_diagonal(distances, 0.0)
        # Each product sums at most `block` float32 terms; blocks add up in float64.
        per_thread.sums[rows] += distances @ one_hot[columns]
        if pair[0] != pair[1]:
            per_thread.sums[columns] += distances.T @ one_hot[rows]

    _in_threads(add_block_pair, block_pairs)
    cluster_sums = np.sum(accumulators, axis=0)

    sizes = np.bincount(codes, minlength=n_labels).astype(np.float64)
    own = np.arange(n_samples), codes
    with np.errstate(invalid="ignore", divide="ignore"):
        intra = cluster_sums[own] / (sizes[codes] - 1)
        mean_to_cluster = cluster_sums / sizes
    mean_to_cluster[own] = np.inf
    inter = mean_to_cluster.min(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        scores = (inter - intra) / np.maximum(intra, inter)
    # As scikit-learn: 0 for singletons (intra is 0/0) and for a = b = 0.
    scores = np.where(sizes[codes] > 1, np.nan_to_num(scores), 0.0)
    return float(scores.mean())


@dataclass(frozen=True)
class KMeansSelection:
    """Result of :func:`select_kmeans`.

    Attributes
    ----------
    labels : ndarray of shape (n_samples,), int
        Cluster of each point under the chosen k (all 0 when k = 1).
    n_clusters : int
        The chosen k.
    silhouettes : pandas.Series of float
        Silhouette of the k-means partition for each candidate k (index ``k``).
    """

    labels: np.ndarray
    n_clusters: int
    silhouettes: pd.Series


def select_kmeans(
    X,
    k_range=range(2, 16),
    *,
    threshold: float = 0.1,
    sample_size: int | None = 20000,
    n_init: int = 10,
    random_state=None,
) -> KMeansSelection:
    """Choose the number of k-means clusters by silhouette, as Cai et al. (2021).

    K-means is fitted on all points for each k in ``k_range``; each partition is
    scored by :func:`silhouette` on one uniform sample of ``sample_size`` points
    (the same sample for every k); the k with the best silhouette is chosen, or
    k = 1 (no clusters) if that best silhouette is below ``threshold``.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
    k_range : iterable of int
        Candidate k, each at least 2 (the authors: 2..15).
    threshold : float
        Minimum best silhouette for any clustering to be accepted (the authors: 0.1).
    sample_size : int or None
        Points scored by the silhouette (the authors: 20,000); None: all.
    n_init : int
        K-means restarts for each k; 10 was scikit-learn's default when the authors
        ran their code (and is the default of ``isolib.transforms.cluster_isotropy``).
    random_state : None, int or numpy Generator
        Seed of the silhouette sample and of k-means (an int is passed to
        scikit-learn unchanged).

    Returns
    -------
    KMeansSelection
        ``labels``, ``n_clusters`` and ``silhouettes`` (per candidate k).

    Raises
    ------
    ValueError
        On NaN/infinity, an empty ``k_range``, or a k below 2 or not smaller than
        the number of scored points.
    """
    points = _float_points(X, min_samples=3)
    n_init = check_int(n_init, "n_init", low=1)
    generator = rng(random_state)
    seed = sklearn_seed(random_state)
    sample = sample_rows(len(points), sample_size, generator)
    candidates = [check_int(k, "k in k_range", low=2, high=len(sample) - 1) for k in k_range]
    if not candidates:
        raise ValueError("k_range is empty; give at least one k >= 2.")

    partitions, scores = {}, {}
    for k in candidates:
        partitions[k] = KMeans(n_clusters=k, n_init=n_init, random_state=seed).fit_predict(points).astype(np.intp)
        sampled = partitions[k][sample]
        # A sample can miss clusters; with fewer than 2 left the silhouette is undefined.
        scores[k] = silhouette(points[sample], sampled) if len(np.unique(sampled)) >= 2 else np.nan
    silhouettes = pd.Series(scores, name="silhouette").rename_axis("k")
    best = silhouettes.idxmax() if silhouettes.notna().any() else None
    if best is None or silhouettes[best] < threshold:
        return KMeansSelection(np.zeros(len(points), dtype=np.intp), 1, silhouettes)
    return KMeansSelection(partitions[best], int(best), silhouettes)


def centre_per_cluster(X, labels) -> np.ndarray:
    """Subtract from each point the mean of its cluster (Cai et al. 2021's per-cluster centring).

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
    labels : array_like of shape (n_samples,)
        Cluster of each point (e.g. ``select_kmeans(X).labels``).

    Returns
    -------
    ndarray of shape (n_samples, n_features)
        Same float dtype as ``X`` (float32 stays float32; means are computed in
        float64). Every cluster has mean zero; a singleton becomes the zero vector.

    Raises
    ------
    ValueError
        On NaN/infinity or a length mismatch.
    """
    points = _float_points(X)
    codes, clusters = _factorize(labels, len(points), "labels")
    sizes = np.bincount(codes, minlength=len(clusters))
    means = _group_sums(points, codes, len(clusters)) / sizes[:, None]
    centred = np.empty_like(points)
    for rows in _row_chunks(*points.shape):
        centred[rows] = points[rows] - means[codes[rows]]
    return centred
