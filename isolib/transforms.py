"""Post-processing that makes an embedding space more isotropic.

The methods of Rajaee & Pilehvar (2021)'s comparison table are compositions of
the three functions here:

=====================  ==========================================================
Method                 Call
=====================  ==========================================================
pre-trained            ``X`` unchanged
Mean                   ``centre(X)``
Mean + PCA             ``abtt(X, D)`` (all-but-the-top, Mu & Viswanath 2018)
K-means + Mean         ``cluster_isotropy(X, k, 0)``
GMM + Mean + PCA       ``cluster_isotropy(X, k, n_pc, method="gmm")``
K-means + Mean + PCA   ``cluster_isotropy(X, k, n_pc)`` (the proposed method)
=====================  ==========================================================

Every function returns a new float64 array; the input is never modified.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
from sklearn.cluster import KMeans
from sklearn.mixture import GaussianMixture

from isolib._blas import one_blas_thread
from isolib._checks import as_points, check_int, sklearn_seed

__all__ = ["centre", "abtt", "cluster_isotropy"]

CLUSTER_METHODS = ("kmeans", "gmm")


def centre(X) -> np.ndarray:
    """Subtract the mean vector (the "Mean" method).

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)

    Returns
    -------
    ndarray of shape (n_samples, n_features), float64
        ``X - X.mean(axis=0)``.
    """
    points = as_points(X)
    return points - points.mean(axis=0)


def _remove_top_directions(centred: np.ndarray, n_directions: int) -> np.ndarray:
    """Remove from centred rows their projections on the top principal directions.

    ``centred`` must already have zero mean: its principal directions are then the
    leading eigenvectors of its scatter matrix, and subtracting projections of the
    centred rows keeps the mean at zero.
    """
    if n_directions == 0:
        return centred
    n_features = centred.shape[1]
    # The (d, d) scatter matrix keeps memory independent of the number of tokens;
    # only its leading eigenvectors are needed, so ask eigh for that subset.
    with one_blas_thread():
        _, directions = scipy.linalg.eigh(centred.T @ centred, subset_by_index=(n_features - n_directions, n_features - 1))
    return centred - (centred @ directions) @ directions.T


def abtt(X, n_components: int) -> np.ndarray:
    """All-but-the-top (Mu & Viswanath 2018): centre, then null the top principal directions.

    The projections removed are those of the *centred* vectors. A widely copied
    implementation subtracts projections of the raw vectors instead, which leaves
    a constant offset along the removed directions (the result is then neither
    zero-mean nor orthogonal to them).

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
    n_components : int
        Number D of leading principal directions to remove, ``0 <= D <= n_features``
        (``D = 0`` is plain centring). Rajaee & Pilehvar use D = 15 for BERT.

    Returns
    -------
    ndarray of shape (n_samples, n_features), float64
        Zero-mean vectors orthogonal to the D removed directions.

    Raises
    ------
    ValueError
        On NaN/infinity, fewer than 2 samples, or ``n_components`` outside ``[0, n_features]``.
    """
    points = as_points(X, min_samples=2)
    n_components = check_int(n_components, "n_components", low=0, high=points.shape[1])
    return _remove_top_directions(points - points.mean(axis=0), n_components)


def cluster_isotropy(
    X,
    n_clusters: int,
    n_pc: int,
    *,
    method: str = "kmeans",
    remove_mean: bool = True,
    n_init: int = 10,
    covariance_type: str = "diag",
    random_state=None,
) -> tuple[np.ndarray, np.ndarray]:
    """Cluster-based isotropy enhancement of Rajaee & Pilehvar (2021).

    All vectors are clustered; within each cluster the cluster mean is subtracted
    and the projections of the centred members on the cluster's ``n_pc`` leading
    principal directions are removed. As in the authors' code, the clustering is
    fitted on the vectors being transformed (transductive).

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
        Typically all token vectors of an evaluation set (one layer).
    n_clusters : int
        Number of clusters k, ``1 <= k <= n_samples`` (authors: 27 for BERT, 10 for GPT-2).
    n_pc : int
        Directions removed per cluster, ``0 <= n_pc <= n_features`` (authors: 12 for
        BERT, 30 for GPT-2). ``0`` gives "K-means + Mean".
    method : {"kmeans", "gmm"}
        K-means, or a Gaussian mixture whose hard assignments (most probable
        component) define the clusters.
    remove_mean : bool
        If False, each cluster's mean is added back after nulling its directions,
        so only the per-cluster PCA step is applied.
    n_init : int
        Restarts of the clustering; 10 was scikit-learn's k-means default when the
        authors ran their code.
    covariance_type : {"diag", "full", "tied", "spherical"}
        Covariance of the mixture components (``method="gmm"`` only). "diag" keeps
        the cost linear in the dimension; "full" is O(k d^2) parameters.
    random_state : None, int or numpy Generator
        Seed of the clustering. Scores move by 1-3 points between seeds; average several.

    Returns
    -------
    transformed : ndarray of shape (n_samples, n_features), float64
    labels : ndarray of shape (n_samples,), int
        Cluster of each row. A mixture component that receives no point leaves its
        label unused.

    Raises
    ------
    ValueError
        On NaN/infinity, ``n_clusters`` larger than the number of samples, ``n_pc``
        larger than the dimension, an unknown ``method``, or a cluster with fewer than
        ``n_pc`` points (its principal directions would not be estimable; lower
        ``n_clusters`` or ``n_pc``).
    """
    points = as_points(X)
    n_clusters = check_int(n_clusters, "n_clusters", low=1, high=points.shape[0])
    n_pc = check_int(n_pc, "n_pc", low=0, high=points.shape[1])
    n_init = check_int(n_init, "n_init", low=1)
    if method not in CLUSTER_METHODS:
        raise ValueError(f"method must be one of {CLUSTER_METHODS}, got {method!r}.")
    seed = sklearn_seed(random_state)
    if method == "kmeans":
        model = KMeans(n_clusters=n_clusters, n_init=n_init, random_state=seed)
    else:
        model = GaussianMixture(
            n_components=n_clusters, covariance_type=covariance_type, n_init=n_init, random_state=seed
        )
    labels = model.fit_predict(points)

    sizes = np.bincount(labels, minlength=n_clusters)
    too_small = np.flatnonzero((sizes > 0) & (sizes < n_pc))
    if too_small.size:
        first = too_small[0]
        raise ValueError(
            f"cluster {first} has {sizes[first]} points but n_pc={n_pc} needs at least {n_pc}; "
            "lower n_clusters or n_pc."
        )

    transformed = np.empty_like(points)
    for cluster in np.flatnonzero(sizes):
        members = labels == cluster
        cluster_mean = points[members].mean(axis=0)
        nulled = _remove_top_directions(points[members] - cluster_mean, n_pc)
        transformed[members] = nulled if remove_mean else nulled + cluster_mean
    return transformed, labels
