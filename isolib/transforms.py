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

Three more changes of a space, used to see what moves each isotropy measure (notebook 05):
:func:`whiten` (every direction given unit variance), :func:`standardise` (every coordinate
centred and scaled to unit variance, the cure for rogue dimensions of Timkey & van Schijndel
2021) and :func:`drop_top_dimensions` (the coordinates of largest variance removed).

Every function returns a new float64 array; the input is never modified.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
from sklearn.cluster import KMeans
from sklearn.mixture import GaussianMixture

from isolib._blas import one_blas_thread
from isolib._checks import as_points, check_int, sample_rows, sklearn_seed

__all__ = ["centre", "abtt", "whiten", "standardise", "drop_top_dimensions", "ClusterIsotropy", "cluster_isotropy"]

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


def _top_directions(centred: np.ndarray, n_directions: int) -> np.ndarray:
    """The ``(n_features, n_directions)`` leading principal directions of zero-mean rows.

    ``centred`` must already have zero mean: its principal directions are then the leading
    eigenvectors of its scatter matrix. The (d, d) scatter matrix keeps memory independent of
    the number of rows; only its leading eigenvectors are needed, so eigh is asked for that subset.
    """
    n_features = centred.shape[1]
    if n_directions == 0:
        return np.zeros((n_features, 0))
    with one_blas_thread():
        _, directions = scipy.linalg.eigh(centred.T @ centred, subset_by_index=(n_features - n_directions, n_features - 1))
    return directions


def _remove_top_directions(centred: np.ndarray, n_directions: int) -> np.ndarray:
    """Remove from centred rows their projections on their top principal directions (the mean stays 0)."""
    directions = _top_directions(centred, n_directions)
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


def whiten(X, *, tolerance: float = 1e-10) -> np.ndarray:
    """ZCA whitening: centre, then give every principal direction unit variance, in the original coordinates.

    ``Z = (X - mean) V diag(lambda^-1/2) V^T`` with ``lambda, V`` the eigenvalues and eigenvectors of
    the covariance (``ddof = 1``). Of all whitening matrices, ZCA's keeps the result nearest to the
    centred input (Kessy et al. 2018), so coordinates keep their meaning.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
    tolerance : float
        Directions whose variance is below ``tolerance`` times the largest are left at zero (with
        fewer points than dimensions, or collinear features, some directions carry no variance).

    Returns
    -------
    ndarray of shape (n_samples, n_features), float64
        Zero mean; covariance the identity on the directions kept (the projector onto them when
        some are dropped), so IsoScore is 1 when none is.

    Raises
    ------
    ValueError
        On NaN/infinity, fewer than 2 samples, or identical points (no direction has variance).
    """
    points = as_points(X, min_samples=2)
    centred = points - points.mean(axis=0)
    with one_blas_thread():
        variances, directions = scipy.linalg.eigh(centred.T @ centred / (len(points) - 1))
    if variances[-1] <= 0:
        raise ValueError("all points of X are identical, so no direction can be whitened.")
    kept = variances > tolerance * variances[-1]
    directions = directions[:, kept]
    return (centred @ directions) / np.sqrt(variances[kept]) @ directions.T


def standardise(X) -> np.ndarray:
    """Z-score every coordinate: subtract its mean and divide by its standard deviation (``ddof = 0``).

    Timkey & van Schijndel (2021)'s remedy for rogue dimensions: one coordinate with a huge mean or
    variance can no longer dominate a dot product. Unlike :func:`whiten`, correlations between
    coordinates stay. An affine change of one coordinate (``a x_j + b``, ``a > 0``) leaves the result
    unchanged.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)

    Returns
    -------
    ndarray of shape (n_samples, n_features), float64
        Every coordinate of mean 0 and variance 1; a constant coordinate becomes 0.

    Raises
    ------
    ValueError
        On NaN/infinity or fewer than 2 samples.
    """
    points = as_points(X, min_samples=2)
    centred = points - points.mean(axis=0)
    scale = centred.std(axis=0)
    return centred / np.where(scale > 0, scale, 1.0)


def drop_top_dimensions(X, n_dimensions: int) -> np.ndarray:
    """Remove the ``n_dimensions`` coordinates of largest variance (rogue dimensions), nothing else.

    No centring: what remains is the same vectors without those coordinates, so a measure's
    change says how much of it those coordinates carried.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
    n_dimensions : int
        ``0 <= n_dimensions < n_features``.

    Returns
    -------
    ndarray of shape (n_samples, n_features - n_dimensions), float64
        The other coordinates, in their order.

    Raises
    ------
    ValueError
        On NaN/infinity, fewer than 2 samples, or ``n_dimensions`` outside ``[0, n_features)``.
    """
    points = as_points(X, min_samples=2)
    n_dimensions = check_int(n_dimensions, "n_dimensions", low=0, high=points.shape[1] - 1)
    order = np.argsort(-points.var(axis=0), kind="stable")
    return points[:, np.sort(order[n_dimensions:])]


SMALL_CLUSTER_RULES = ("raise", "merge")


class ClusterIsotropy:
    """Cluster-based isotropy enhancement of Rajaee & Pilehvar (2021), fitted on some vectors, applied to any.

    ``fit`` clusters the vectors and records, per cluster, its mean and the ``n_pc`` leading
    principal directions of its centred members; ``transform`` assigns each vector to a cluster,
    subtracts that cluster's mean and removes the projections of the centred vector on the
    cluster's directions. Fitting and transforming the same vectors is the authors' transductive
    use (:func:`cluster_isotropy`); fitting on training vectors and transforming held-out ones
    keeps the held-out set unseen.

    Parameters
    ----------
    n_clusters : int
        Number of clusters k (authors: 27 for BERT, 10 for GPT-2).
    n_pc : int
        Directions removed per cluster, ``0 <= n_pc <= n_features`` (authors: 12 for BERT, 30 for
        GPT-2). ``0`` gives "K-means + Mean".
    method : {"kmeans", "gmm"}
        K-means, or a Gaussian mixture whose hard assignments (most probable component) define
        the clusters.
    remove_mean : bool
        If False, each cluster's mean is added back after nulling its directions.
    small_clusters : {"raise", "merge"}
        A cluster with fewer than ``max(n_pc, 1)`` fitted points cannot have ``n_pc`` principal
        directions estimated. "raise" (default) stops with an error; "merge" reassigns its points
        to the nearest (Euclidean, to the cluster means) of the clusters large enough, and does so
        for any vector the clusterer later assigns to it.
    n_init : int
        Restarts of the clustering; 10 was scikit-learn's k-means default when the authors ran
        their code.
    covariance_type : {"diag", "full", "tied", "spherical"}
        Covariance of the mixture components (``method="gmm"`` only).
    fit_size : int or None
        None (default): the clusterer is fitted on every vector. An int: on a uniform sample of
        this many, every vector then assigned by the fitted clusterer (a Gaussian mixture's EM on
        40,000 token vectors takes about a minute; means and directions still use every vector).
    random_state : None, int or numpy Generator
        Seed of the clustering (and of the ``fit_size`` sample). Scores move by 1-3 points
        between seeds; average several.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,), int
        Cluster of each fitted vector (after merging).
    means_ : ndarray of shape (n_clusters, n_features)
        Mean of each cluster's fitted members (NaN for an empty or merged cluster).
    directions_ : dict of int to ndarray of shape (n_features, n_pc)
        Principal directions removed in each kept cluster.
    """

    def __init__(self, n_clusters: int, n_pc: int, *, method: str = "kmeans", remove_mean: bool = True,
                 small_clusters: str = "raise", n_init: int = 10, covariance_type: str = "diag",
                 fit_size: int | None = None, random_state=None):
        if method not in CLUSTER_METHODS:
            raise ValueError(f"method must be one of {CLUSTER_METHODS}, got {method!r}.")
        if small_clusters not in SMALL_CLUSTER_RULES:
            raise ValueError(f"small_clusters must be one of {SMALL_CLUSTER_RULES}, got {small_clusters!r}.")
        self.n_clusters, self.n_pc, self.method = n_clusters, n_pc, method
        self.remove_mean, self.small_clusters = remove_mean, small_clusters
        self.n_init = check_int(n_init, "n_init", low=1)
        self.covariance_type, self.random_state = covariance_type, random_state
        self.fit_size = None if fit_size is None else check_int(fit_size, "fit_size", low=1)

    def fit(self, X) -> ClusterIsotropy:
        """Cluster ``X`` (n_samples, n_features) and record each cluster's mean and directions."""
        points = as_points(X)
        n_clusters = check_int(self.n_clusters, "n_clusters", low=1, high=points.shape[0])
        n_pc = check_int(self.n_pc, "n_pc", low=0, high=points.shape[1])
        seed = sklearn_seed(self.random_state)
        fitted = sample_rows(len(points), self.fit_size, np.random.default_rng(seed))
        if self.method == "kmeans":
            self._clusterer = KMeans(n_clusters=n_clusters, n_init=self.n_init, random_state=seed)
        else:
            self._clusterer = GaussianMixture(n_components=n_clusters, covariance_type=self.covariance_type,
                                              n_init=self.n_init, random_state=seed)
        if len(fitted) == len(points):
            labels = self._clusterer.fit_predict(points)
        else:
            labels = self._clusterer.fit(points[fitted]).predict(points)
        sizes = np.bincount(labels, minlength=n_clusters)
        too_small = np.flatnonzero((sizes > 0) & (sizes < max(n_pc, 1)))
        if too_small.size and self.small_clusters == "raise":
            first = too_small[0]
            raise ValueError(f"cluster {first} has {sizes[first]} points but n_pc={n_pc} needs at least {n_pc}; "
                             "lower n_clusters or n_pc, or pass small_clusters='merge'.")
        means = np.full((n_clusters, points.shape[1]), np.nan)
        for cluster in np.flatnonzero(sizes):
            means[cluster] = points[labels == cluster].mean(axis=0)
        self._kept = np.flatnonzero(sizes >= max(n_pc, 1))
        if not self._kept.size:
            raise ValueError(f"no cluster has the n_pc={n_pc} points its directions need; lower n_clusters or n_pc.")
        means[np.setdiff1d(np.arange(n_clusters), self._kept)] = np.nan
        self.means_ = means
        self.labels_ = self._merged(points, labels)
        self.directions_ = {}
        for cluster in np.unique(self.labels_):
            members = self.labels_ == cluster
            self.means_[cluster] = points[members].mean(axis=0)  # merged points count too
            self.directions_[int(cluster)] = _top_directions(points[members] - self.means_[cluster], n_pc)
        return self

    def _merged(self, points: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """``labels`` with points of clusters too small to keep moved to the nearest kept cluster mean."""
        moved = ~np.isin(labels, self._kept)
        if moved.any():
            kept_means = self.means_[self._kept]
            distances = ((points[moved, None, :] - kept_means[None]) ** 2).sum(axis=2)
            labels = labels.copy()
            labels[moved] = self._kept[np.argmin(distances, axis=1)]
        return labels

    def predict(self, X) -> np.ndarray:
        """The cluster of each row of ``X`` (the clusterer's assignment, small clusters merged)."""
        points = as_points(X)
        return self._merged(points, self._clusterer.predict(points))

    def transform(self, X) -> np.ndarray:
        """``X`` (n_samples, n_features) with its cluster's mean and directions removed, float64."""
        points = as_points(X)
        return self._apply(points, self.predict(points))

    def fit_transform(self, X) -> np.ndarray:
        """Fit on ``X`` and transform it, each vector in the cluster the fit gave it (``labels_``)."""
        points = as_points(X)
        return self.fit(points)._apply(points, self.labels_)

    def _apply(self, points: np.ndarray, labels: np.ndarray) -> np.ndarray:
        transformed = np.empty_like(points)
        for cluster in np.unique(labels):
            members = labels == cluster
            centred = points[members] - self.means_[cluster]
            directions = self.directions_[int(cluster)]
            nulled = centred - (centred @ directions) @ directions.T
            transformed[members] = nulled if self.remove_mean else nulled + self.means_[cluster]
        return transformed


def cluster_isotropy(X, n_clusters: int, n_pc: int, **options) -> tuple[np.ndarray, np.ndarray]:
    """Cluster-based isotropy enhancement fitted on the vectors it transforms (the authors' transductive use).

    All vectors are clustered; within each cluster the cluster mean is subtracted and the
    projections of the centred members on the cluster's ``n_pc`` leading principal directions
    are removed (:class:`ClusterIsotropy`, whose options ``method``, ``remove_mean``,
    ``small_clusters``, ``n_init``, ``covariance_type`` and ``random_state`` pass through).

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
        Typically all token vectors of an evaluation set (one layer).
    n_clusters : int
        Number of clusters k, ``1 <= k <= n_samples`` (authors: 27 for BERT, 10 for GPT-2).
    n_pc : int
        Directions removed per cluster, ``0 <= n_pc <= n_features``.

    Returns
    -------
    transformed : ndarray of shape (n_samples, n_features), float64
    labels : ndarray of shape (n_samples,), int
        Cluster of each row. A mixture component that receives no point leaves its label unused.

    Raises
    ------
    ValueError
        On NaN/infinity, ``n_clusters`` larger than the number of samples, ``n_pc`` larger than
        the dimension, an unknown ``method``, or (``small_clusters="raise"``) a cluster with fewer
        than ``n_pc`` points.
    """
    estimator = ClusterIsotropy(n_clusters, n_pc, **options)
    return estimator.fit_transform(X), estimator.labels_
