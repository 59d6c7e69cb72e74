"""Cosine measures: mean cosine, self- and intra-sentence similarity, anisotropy baseline, S_inter and S_intra.

Sources: Ethayarajh (2019) for :func:`average_cosine`, :func:`self_similarity`,
:func:`intra_similarity` and :func:`anisotropy_baseline`; Cai et al. (2021) for
:func:`s_inter` and :func:`s_intra`. Mean cosines are exact, computed from sums of
unit vectors in O(n d). Zero vectors (whose cosine is undefined) are rejected
with ``ValueError``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from isolib._checks import check_int, rng, sample_rows
from isolib.metrics._common import (
    _factorize,
    _float_points,
    _group_sums,
    _nonzero_row_norms,
    _row_chunks,
    random_subset_per_group,
)


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
    representatives = random_subset_per_group(codes, 1, rng(random_state))
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
    kept = random_subset_per_group(codes, max_instances, rng(random_state))
    per_type = _mean_cosine_between_blocks(points[kept], norms[kept], codes[kept], np.arange(len(kept)), len(types))
    if np.isnan(per_type).all():
        raise ValueError("no type in labels has at least 2 instances, so S_intra is undefined.")
    return float(np.nanmean(per_type))
