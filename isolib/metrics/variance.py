"""Variance measures: explained variance, MEV and its baseline, effective rank.

Sources: Ethayarajh (2019) for :func:`mev` and :func:`mev_baseline`; Roy &
Vetterli (2007) for :func:`effective_rank`. All come from the singular values of
the (optionally centred) points, computed in float64.
"""

from __future__ import annotations

import numpy as np

from isolib._checks import check_int, rng, sample_rows
from isolib.metrics._common import _float_points, _squared_singular_values


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
        As :func:`mev` (of X, or of the rows drawn when only they are degenerate), or ``n_samples < 2``.
    """
    points = _float_points(X)
    n_samples = check_int(n_samples, "n_samples", low=2)
    drawn = sample_rows(len(points), n_samples, rng(random_state))
    try:
        return mev(points[drawn], centered=centered)
    except ValueError:
        mev(points, centered=centered)  # raises mev's own sentence if X itself is degenerate
        what = "identical" if centered else "all zeros"
        raise ValueError(f"the {len(drawn)} rows drawn from X are {what}, so their MEV is undefined; draw more rows "
                         "(n_samples) or use another random_state.") from None


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
