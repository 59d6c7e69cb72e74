"""Isotropy scores: IsoScore and the partition-function isotropy ``I(W)``.

Sources: Rudman et al. (2022) for :func:`isoscore`; Mu & Viswanath (2018), as
used by Rajaee & Pilehvar (2021), for :func:`partition_isotropy`.
"""

from __future__ import annotations

import math

import numpy as np

from isolib._blas import eigh
from isolib.metrics._common import _float_points, _row_chunks, _scatter_matrix, _squared_singular_values


def principal_variances(X) -> np.ndarray:
    """Variance of the points along each principal axis, largest first (IsoScore's variance vector).

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)

    Returns
    -------
    ndarray of shape (n_features,)
        ``ddof = 1`` variances of the centred points rotated to their principal axes, padded with
        zeros when there are fewer points than dimensions. Mickus et al. write the same vector from
        pairwise squared distances (Zhang et al. 2012): for centred coordinates ``z``,
        ``var_k = sum_i sum_j (z_ik - z_jk)^2 / (2 n (n - 1))``.
    """
    return _principal_variances(_float_points(X, min_samples=2))


def _principal_variances(points: np.ndarray) -> np.ndarray:
    """:func:`principal_variances` of points already validated by ``_float_points``."""
    variances = np.zeros(points.shape[1])
    squared = _squared_singular_values(points, centered=True)
    variances[: len(squared)] = squared / (len(points) - 1)
    return variances


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
        On NaN/infinity, scipy sparse input, fewer than 2 points or features, or
        identical points (including an all-zero ``X``).
    """
    points = _float_points(X, min_samples=2)
    n = points.shape[1]
    if n < 2:
        raise ValueError("X has 1 feature; IsoScore needs at least 2 dimensions.")
    variances = _principal_variances(points)
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
        On NaN/infinity, scipy sparse input, or an all-zero ``X`` (it has no
        directions, so ``I(W)`` is undefined).
    """
    points = _float_points(X)
    if not points.any():
        raise ValueError("X is all zeros, so I(W) is undefined.")
    _, eigenvectors = eigh(_scatter_matrix(points), vectors=True)

    # Streaming log-sum-exp over row chunks: keep the running maximum and the sum
    # of exp(projection - maximum) per direction. F(-u) uses the same projections
    # negated, so each chunk is multiplied by the eigenvectors once.
    n_directions = 2 * eigenvectors.shape[1]
    running_max = np.full(n_directions, -np.inf)
    scaled_sum = np.zeros(n_directions)
    for rows in _row_chunks(len(points), n_directions):
        projections = points[rows].astype(np.float64) @ eigenvectors
        projections = np.hstack([projections, -projections])
        chunk_max = projections.max(axis=0)
        new_max = np.maximum(running_max, chunk_max)
        scaled_sum = scaled_sum * np.exp(running_max - new_max) + np.exp(projections - new_max).sum(axis=0)
        running_max = new_max
    log_f = running_max + np.log(scaled_sum)
    return float(np.exp(log_f.min() - log_f.max()))
