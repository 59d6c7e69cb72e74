"""One layer's measures (numeric kernels): S_inter and S_intra inside clusters, the centring units, LID, clusters.

:func:`layer_geometry` runs them all on one layer's analysed tokens; :mod:`.compute` runs it on every
layer of a model and stores each layer's result. The rules are in the package's docstring.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from isolib._checks import rng
from isolib.metrics import (
    KMeansSelection,
    centre_per_cluster,
    lid_mle,
    s_inter,
    s_intra,
    select_kmeans,
)

__all__ = [
    "CLUSTER_COLUMNS",
    "per_cluster_similarity",
    "cluster_means",
    "lid_variants",
    "describe_clusters",
    "gaussian_control",
    "one_instance_per_type",
    "centring_units",
    "layer_geometry",
]


def per_cluster_similarity(X, types, clusters, *, max_instances: int | None = 1000, random_state=None) -> pd.DataFrame:
    """S_inter and S_intra inside each cluster, after subtracting the cluster's mean (Cai et al.'s step 2-3).

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
    types : array_like of shape (n_samples,)
        The type of each token.
    clusters : array_like of shape (n_samples,)
        Cluster of each token (e.g. ``select_kmeans(X).labels``).
    max_instances : int or None
        Cap on the instances per type for S_intra (the authors: 1,000).
    random_state : None, int or numpy Generator
        Seed of the instance draws.

    Returns
    -------
    pandas.DataFrame, one row per cluster
        ``cluster``, ``size`` (tokens), ``n_types``, ``s_inter`` (one random instance per type present in
        the cluster; NaN with fewer than 2 types), ``s_intra`` (types with at least 2 instances in the
        cluster; NaN if none). Tokens equal to their cluster's mean become zero vectors, which have no
        direction: they are left out (a singleton cluster has no S at all).
    """
    generator = rng(random_state)
    centred = centre_per_cluster(X, clusters)
    types, clusters = np.asarray(types), np.asarray(clusters)
    records = []
    for cluster in np.unique(clusters):
        members = np.flatnonzero(clusters == cluster)
        members = members[np.linalg.norm(centred[members], axis=1) > 0]
        inside = types[members]
        n_types = len(np.unique(inside))
        inter = s_inter(centred[members], inside, random_state=generator) if n_types >= 2 else np.nan
        repeated = pd.Series(inside).duplicated(keep=False).to_numpy()
        intra = (s_intra(centred[members], inside, max_instances=max_instances, random_state=generator)
                 if repeated.any() else np.nan)
        records.append((int(cluster), int((clusters == cluster).sum()), n_types, inter, intra))
    return pd.DataFrame(records, columns=["cluster", "size", "n_types", "s_inter", "s_intra"])


def cluster_means(per_cluster: pd.DataFrame, measure: str) -> tuple[float, float]:
    """``(unweighted, size-weighted)`` mean of a measure over clusters, NaN clusters skipped.

    The unweighted mean is the authors' (every cluster counts once, however small); the weighted
    one gives each token the same weight.
    """
    valid = per_cluster[per_cluster[measure].notna()]
    if valid.empty:
        return np.nan, np.nan
    return float(valid[measure].mean()), float(np.average(valid[measure], weights=valid["size"]))


def lid_variants(X, *, k: int = 100, queries: int | None = 2000, random_state=None) -> dict[str, float]:
    """Mean LID (:func:`isolib.metrics.lid_mle`) with Euclidean and cosine distances, true and squared.

    The squared variants are what the authors' faiss code measured (``||x - y||^2``, ``1 - cos``).
    Since ``log(d_j^2 / d_k^2) = 2 log(d_j / d_k)`` they are exactly half the true-distance values at
    the same neighbours, so each metric's neighbours are searched once. The same query points serve all four.

    Returns
    -------
    dict
        ``lid_euclidean``, ``lid_euclidean_squared``, ``lid_cosine``, ``lid_cosine_squared``.
    """
    seed = int(rng(random_state).integers(2**31 - 1))
    n_queries = None if queries is None else min(queries, len(X))
    values = {}
    for metric in ("euclidean", "cosine"):
        values[f"lid_{metric}"] = lid_mle(X, k=k, metric=metric, queries=n_queries, random_state=seed)
        values[f"lid_{metric}_squared"] = values[f"lid_{metric}"] / 2
    return values


CLUSTER_COLUMNS = ["cluster", "size", "share", "first_position_share", "placeholder_share", "norm_ratio",
                   "n_types", "dominant_type_share", "top_types", "outlier_group", "why"]


def describe_clusters(X, labels, types, positions, is_placeholder=None, *, min_share: float = 0.01,
                      n_top_types: int = 5) -> pd.DataFrame:
    """What each cluster of a partition is made of, and which are outlier groups rather than clusters.

    A cluster is an **outlier group** when it holds less than ``min_share`` of the tokens, or more
    than half of its tokens are window-first tokens (a decoder's attention sink) or pieces of a
    corpus placeholder. A silhouette near 1 earned by such a group says nothing about a space
    "dominated by clusters".

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
    labels : array_like of int, shape (n_samples,)
    types : array_like of str, shape (n_samples,)
    positions : array_like of int, shape (n_samples,)
        Window position of each token (0 = first).
    is_placeholder : array_like of bool, shape (n_samples,), optional
        Pieces of ``<unk>`` / ``N`` (:attr:`.compute.TokenTypes.is_placeholder`); none if omitted.
    min_share : float
        Smallest share of the tokens a cluster must hold.
    n_top_types : int
        Most frequent types listed per cluster.

    Returns
    -------
    pandas.DataFrame, one row per cluster, largest first
        ``cluster``, ``size``, ``share`` (of the tokens), ``first_position_share``, ``placeholder_share``,
        ``norm_ratio`` (median norm of its tokens over the median norm of the layer), ``n_types``,
        ``dominant_type_share`` (share of its tokens of its most frequent type), ``top_types`` (e.g.
        ``"the 12%, of 6%"``: share of the cluster's tokens), ``outlier_group`` (bool) and ``why`` ("" for
        a cluster).
    """
    labels = np.asarray(labels)
    types = np.asarray(types)
    at_start = np.asarray(positions) == 0
    placeholder = np.zeros(len(labels), bool) if is_placeholder is None else np.asarray(is_placeholder, bool)
    norms = np.linalg.norm(np.asarray(X, dtype=np.float32), axis=1)
    layer_median = float(np.median(norms))
    records = []
    for cluster in np.unique(labels):
        members = labels == cluster
        counts = pd.Series(types[members]).value_counts()
        share = members.mean()
        first, placeholders = at_start[members].mean(), placeholder[members].mean()
        why = ", ".join(reason for reason, applies in [(f"below {min_share:.0%} of the tokens", share < min_share),
                                                       ("window-first tokens (the sink)", first > 0.5),
                                                       ("placeholder pieces", placeholders > 0.5)] if applies)
        records.append({
            "cluster": int(cluster), "size": int(members.sum()), "share": float(share),
            "first_position_share": float(first), "placeholder_share": float(placeholders),
            "norm_ratio": float(np.median(norms[members]) / layer_median) if layer_median > 0 else np.nan,
            "n_types": len(counts), "dominant_type_share": float(counts.iloc[0] / members.sum()),
            "top_types": ", ".join(f"{name} {count / members.sum():.0%}" for name, count in counts.head(n_top_types).items()),
            "outlier_group": bool(why) and len(np.unique(labels)) > 1, "why": why if len(np.unique(labels)) > 1 else "",
        })
    return pd.DataFrame(records).sort_values("size", ascending=False, ignore_index=True)


def gaussian_control(X, k_range, *, min_share: float, random_state: int, **selection) -> tuple[int, float]:
    """The clusters' control: :func:`~isolib.metrics.select_kmeans` on a Gaussian of ``X``'s mean and covariance.

    As many points are drawn as ``X`` holds, from one Gaussian with the same mean and covariance: a
    space with the same spread in every direction and no clusters (SigClust's null, Liu et al. 2008).
    Where k-means with the silhouette "finds clusters" in it too, the silhouette cannot tell the
    layer's clusters from its anisotropy.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
    k_range, **selection
        As the layer's own selection (``n_init``, ``sample_size``, ``fit_size``).
    min_share : float
        A chosen cluster with fewer points than this share does not count (as an outlier group).
    random_state : int
        Seed of the draw and of the selection; the draw takes its own stream, so the layer's other draws
        are those of a run without the control.

    Returns
    -------
    n_clusters : int
        Chosen clusters holding at least ``min_share`` of the points (1 where the silhouette chose k = 1).
    silhouette : float
        Mean over restarts of the silhouette at the chosen k (at the best k where it chose k = 1).
    """
    points = np.asarray(X, dtype=np.float32)
    mean = points.mean(axis=0)
    centred = points - mean
    covariance = (centred.T @ centred).astype(np.float64) / max(len(points) - 1, 1)
    variances, directions = np.linalg.eigh(covariance)
    scales = np.sqrt(np.clip(variances, 0, None))
    generator = np.random.default_rng([random_state, 1])  # a stream apart from the layer's own draws
    drawn = ((generator.standard_normal(points.shape) * scales) @ directions.T + mean).astype(np.float32)
    chosen = select_kmeans(drawn, k_range, random_state=random_state, **selection)
    by_k = chosen.by_k()
    best_k = chosen.n_clusters if chosen.n_clusters > 1 else int(by_k.silhouette.idxmax())
    shares = np.bincount(chosen.labels) / len(drawn)
    return int(max((shares >= min_share).sum(), 1)), float(by_k.silhouette_mean[best_k])


def one_instance_per_type(types, *, random_state=None) -> np.ndarray:
    """Rows of one random instance of every type, sorted: the units S_inter is a mean over.

    Parameters
    ----------
    types : array_like of shape (n_samples,)
    random_state : None, int or numpy Generator

    Returns
    -------
    ndarray of int, shape (n_types,)
    """
    order = rng(random_state).permutation(len(types))
    _, first = np.unique(np.asarray(types)[order], return_index=True)
    return np.sort(order[first])


def _mean_cosine_to_others(vectors: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Per row, the mean cosine with the other rows of its group (NaN alone in its group or a zero vector)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    valid = norms[:, 0] > 0
    unit = np.where(valid[:, None], vectors / np.where(norms > 0, norms, 1), 0.0)
    codes = np.unique(groups, return_inverse=True)[1]
    sums = np.zeros((codes.max() + 1, vectors.shape[1]))
    np.add.at(sums, codes, unit)
    sizes = np.bincount(codes, weights=valid.astype(float))
    others = sizes[codes] - 1
    with np.errstate(invalid="ignore", divide="ignore"):
        means = (np.einsum("ij,ij->i", unit, sums[codes]) - 1.0) / others
    return np.where(valid & (others > 0), means, np.nan)


def centring_units(X, clusters, instances) -> tuple[np.ndarray, np.ndarray]:
    """Each sampled type's mean cosine with the other types, after per-cluster and after global centring.

    The paired units of the paper's core comparison. Centres are the means of all tokens (of the
    cluster, of the layer); the units are ``instances`` (one token per type). After global
    centring a unit is compared with every other unit; after per-cluster centring with the other
    units of its own cluster. The mean of the first array is the per-cluster S_inter with every
    type counting once (so each cluster weighs by the types it holds); the mean of the second is
    S_inter after global centring; within a cluster, the mean is that cluster's S_inter.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
    clusters : array_like of int, shape (n_samples,)
    instances : array_like of int, shape (n_units,)
        Rows of the units (:func:`one_instance_per_type`).

    Returns
    -------
    per_cluster, global_ : ndarray of shape (n_units,)
        NaN for a unit alone in its cluster or equal to its centre.
    """
    points = np.asarray(X, dtype=np.float64)
    clusters = np.asarray(clusters)
    instances = np.asarray(instances)
    per_cluster = centre_per_cluster(points, clusters)[instances]
    global_ = points[instances] - points.mean(axis=0)
    return (_mean_cosine_to_others(per_cluster, clusters[instances]),
            _mean_cosine_to_others(global_, np.zeros(len(instances), dtype=int)))


def layer_geometry(X, types, positions, *, is_placeholder=None, instances=None, k_range=range(2, 16),
                   silhouette_sample: int | None = 20000, kmeans_fit_size: int | None = None, n_init: int = 10,
                   min_cluster_share: float = 0.01, max_instances: int | None = 1000, lid_k: int = 100,
                   lid_queries: int | None = 2000, random_state=None) -> tuple[dict, KMeansSelection, pd.DataFrame,
                                                                                 pd.DataFrame]:
    """Every per-layer measure of the study on one layer's analysed tokens.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
        The analysed token vectors of one layer.
    types : array_like of shape (n_samples,)
        Their types.
    positions : array_like of shape (n_samples,)
        Their window positions (to tell whether a decoder's first position forms a cluster).
    is_placeholder : array_like of bool, shape (n_samples,), optional
        Pieces of a corpus placeholder (for :func:`describe_clusters`).
    instances : array_like of int, shape (n_types,), optional
        The unit of each type for the centring comparison (:func:`one_instance_per_type`; drawn here
        if omitted). Pass the same draw for every layer of a model to pair the layers' units.
    k_range, silhouette_sample, kmeans_fit_size, n_init
        K-means selection (:func:`~isolib.metrics.select_kmeans` with ``sample_size``, ``fit_size``,
        ``n_init``; the authors: k = 2..15, silhouette on 20,000 points, k-means on all points,
        10 restarts).
    min_cluster_share : float
        A cluster holding fewer tokens is an outlier group (:func:`describe_clusters`).
    max_instances : int or None
        Cap on the instances per type for S_intra (the authors: 1,000).
    lid_k, lid_queries
        Neighbours and query points of the LID (:func:`lid_variants`).
    random_state : int
        Seed of every draw (instances, k-means, silhouette sample, LID queries).

    Returns
    -------
    values : dict
        ``s_inter``, ``s_intra``; ``s_inter_centred`` (after subtracting the global mean: the control
        for per-cluster centring, over the units); ``n_clusters``, ``silhouette`` (the chosen k's, or the
        best when k = 1), ``silhouette_std`` (its std over restarts), ``restarts_agreeing`` (share of
        restarts choosing the same k alone), ``n_real_clusters`` (chosen clusters that are not outlier
        groups) and ``n_outlier_groups``; ``s_inter_clusters`` / ``s_intra_clusters`` (unweighted mean
        over clusters, the authors') and ``s_inter_clusters_weighted`` (over the units: each type once,
        so a cluster weighs by the types it holds) / ``s_intra_clusters_weighted`` (by cluster size);
        ``first_position_share`` (the largest share of window-first tokens in any chosen cluster);
        the four LID values; ``gaussian_n_clusters`` and ``gaussian_silhouette``, the clusters'
        control (:func:`gaussian_control`).
    selection : KMeansSelection
    clusters : pandas.DataFrame
        :func:`describe_clusters` of the chosen partition.
    units : pandas.DataFrame
        ``unit`` (row of ``X``), ``type``, ``cluster``, ``per_cluster`` and ``global`` (:func:`centring_units`).
    """
    points = np.asarray(X, dtype=np.float32)
    types = np.asarray(types)
    seed = int(rng(random_state).integers(2**31 - 1))
    generator = np.random.default_rng(seed)
    instances = one_instance_per_type(types, random_state=generator) if instances is None else np.asarray(instances)
    selection = select_kmeans(points, k_range, n_init=n_init, sample_size=silhouette_sample,
                              fit_size=kmeans_fit_size, random_state=seed)
    described = describe_clusters(points, selection.labels, types, positions, is_placeholder,
                                  min_share=min_cluster_share)
    per_cluster = per_cluster_similarity(points, types, selection.labels, max_instances=max_instances,
                                         random_state=generator)
    inside, globally = centring_units(points, selection.labels, instances)
    units = pd.DataFrame({"unit": instances, "type": types[instances], "cluster": selection.labels[instances],
                          "per_cluster": inside, "global": globally})
    inter_unweighted, _ = cluster_means(per_cluster, "s_inter")
    intra_unweighted, intra_weighted = cluster_means(per_cluster, "s_intra")
    by_k = selection.by_k()
    best_k = selection.n_clusters if selection.n_clusters > 1 else int(by_k.silhouette.idxmax())
    values = {
        "n_tokens": len(points),
        "n_types": len(np.unique(types)),
        "s_inter": s_inter(points, types, random_state=generator),
        "s_intra": s_intra(points, types, max_instances=max_instances, random_state=generator),
        "s_inter_centred": float(np.nanmean(globally)),
        "n_clusters": selection.n_clusters,
        "silhouette": float(by_k.silhouette.max()),
        "silhouette_std": float(by_k.silhouette_std.get(best_k, np.nan)),
        "restarts_agreeing": selection.restarts_agreeing,
        "n_real_clusters": int((~described.outlier_group).sum()) if selection.n_clusters > 1 else 1,
        "n_outlier_groups": int(described.outlier_group.sum()),
        "s_inter_clusters": inter_unweighted,
        "s_inter_clusters_weighted": float(np.nanmean(inside)),
        "s_intra_clusters": intra_unweighted,
        "s_intra_clusters_weighted": intra_weighted,
        "first_position_share": float(described.first_position_share.max()) if selection.n_clusters > 1 else np.nan,
    }
    values.update(lid_variants(points, k=lid_k, queries=lid_queries, random_state=generator))
    values["gaussian_n_clusters"], values["gaussian_silhouette"] = gaussian_control(
        points, k_range, min_share=min_cluster_share, random_state=seed, n_init=n_init, sample_size=silhouette_sample,
        fit_size=kmeans_fit_size)
    return values, selection, described, units

