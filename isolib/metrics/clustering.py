"""Cluster measures: the silhouette, k-means selection by silhouette, and per-cluster centring.

Sources: Rousseeuw (1987) for :func:`silhouette` and :func:`silhouettes`; Cai et al. (2021) for
:func:`select_kmeans` and :func:`centre_per_cluster`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.cluster import KMeans

from isolib._checks import check_int, check_same_length, rng, sample_rows
from isolib.metrics._common import _factorize, _float_points, _group_sums, _row_chunks, _sum_in_threads

# Silhouette blocks are square: this many points a side (4 MB of float32 distances).
_SILHOUETTE_BLOCK = 1024


def _label_codes(labels, n_samples: int) -> np.ndarray:
    """Integer codes of 1-D labels, or of the distinct rows of a 2-D (multi-label) array."""
    values = np.asarray(labels)
    if values.ndim not in (1, 2):
        raise ValueError(f"labels must be an array of shape (n_samples,) or (n_samples, n_outputs), got "
                         f"{type(labels).__name__} of shape {values.shape}.")
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
    a product with ones (a block of one cluster) or with the block's one-hot labels
    (a block shared by small clusters) and are accumulated in float64. Memory: one
    block per thread, two float32 copies of the points, and an ``(n_samples, n_labels)``
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
        On NaN/infinity, a length mismatch, fewer than 3 points (or ``sample_size``), or
        fewer than 2 or more than ``n_samples - 1`` distinct labels (in the scored sample).
    """
    # It needs 2 clusters, one of them of 2 points: under 3 points the cause is too few points, never the labels.
    points = _float_points(X, min_samples=3)
    codes = _label_codes(labels, len(points))
    if sample_size is not None:
        sample_size = check_int(sample_size, "sample_size", low=3)
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
    if np.any(codes[1:] < codes[:-1]):  # a copy only when not sorted already (a probe's labels often are)
        order = np.argsort(codes, kind="stable")
        points, codes = points[order], codes[order]
    sizes = np.bincount(codes, minlength=n_labels)
    blocks = _label_blocks(sizes, block)
    block_means = np.stack([points[rows].mean(axis=0, dtype=np.float64) for rows in blocks])
    local = np.empty(points.shape, dtype=np.float32)
    for rows, mean in zip(blocks, block_means):
        local[rows] = points[rows] - mean
    local_norms = np.einsum("ij,ij->i", local, local, dtype=np.float64)
    minus_two_local = local * np.float32(-2.0)  # exact (a power of two): one pass here, none per block pair
    ones = np.ones(block, dtype=np.float32)
    # The one cluster of each block, or -1 for a block shared by small clusters (codes are sorted);
    # only the shared blocks need the one-hot labels.
    block_labels = [codes[rows.start] if codes[rows.start] == codes[rows.stop - 1] else -1 for rows in blocks]
    if min(block_labels) < 0:
        one_hot = np.zeros((n_samples, n_labels), dtype=np.float32)
        one_hot[np.arange(n_samples), codes] = 1.0
    block_pairs = [(i, j) for i in range(len(blocks)) for j in range(i, len(blocks))]

    def add_cluster_sums(sums: np.ndarray, rows: slice, distances: np.ndarray, column_block: int) -> None:
        # Each product sums at most `block` float32 terms; blocks add up in float64. Against a block of
        # one cluster it is a product with ones, several times faster than with the one-hot labels.
        label = block_labels[column_block]
        if label >= 0:
            sums[rows, label] += distances @ ones[: distances.shape[1]]
        else:
            sums[rows] += distances @ one_hot[blocks[column_block]]

    def add_block_pair(sums: np.ndarray, pair: tuple[int, int]) -> None:
        rows, columns = blocks[pair[0]], blocks[pair[1]]
        # x - y = x' - y' - shift, with x' and y' centred at their own blocks' means.
        shift = block_means[pair[1]] - block_means[pair[0]]
        row_terms = local_norms[rows] - 2.0 * (local[rows] @ shift.astype(np.float32))
        column_terms = local_norms[columns] + 2.0 * (local[columns] @ shift.astype(np.float32)) + shift @ shift
        distances = local[rows] @ minus_two_local[columns].T
        distances += row_terms.astype(np.float32)[:, None]
        distances += column_terms.astype(np.float32)[None, :]
        if pair[0] == pair[1]:
            np.fill_diagonal(distances, 0.0)
        # Rounding can leave a near-zero squared distance below 0; clipping is a slow pass, so it
        # runs only on a block that needs it (near-duplicate points), found by a fast minimum.
        if distances.min() < 0:
            np.maximum(distances, 0.0, out=distances)
        np.sqrt(distances, out=distances)
        add_cluster_sums(sums, rows, distances, pair[1])
        if pair[0] != pair[1]:
            add_cluster_sums(sums, columns, distances.T, pair[0])

    # Each thread adds into its own (n_samples, n_labels) array of sums.
    cluster_sums = _sum_in_threads(add_block_pair, block_pairs, (n_samples, n_labels))

    return _silhouette_from_sums(cluster_sums, codes)


def _silhouette_from_sums(cluster_sums: np.ndarray, codes: np.ndarray) -> float:
    """The mean silhouette from each point's summed distances to every cluster.

    ``cluster_sums`` has shape (n_samples, n_labels) and ``codes`` (n_samples,), in ``0..n_labels-1``.
    """
    n_samples, n_labels = cluster_sums.shape
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


def silhouettes(X, partitions, *, chunk_size: int | None = None) -> np.ndarray:
    """The silhouette (:func:`silhouette`) of several partitions of the same points, distances computed once.

    Scoring k-means restarts for many k on one sample needs the same pairwise distances every time;
    here each block of them is computed once, in float64 (so tight clusters far from the origin keep
    their precision without :func:`silhouette`'s per-partition sorting), and summed per cluster of
    every partition at once by one float32 product with the partitions' stacked one-hot labels.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
    partitions : array_like of shape (n_partitions, n_samples)
        Cluster of each point under each partition.
    chunk_size : int or None
        Points per block side (None: 1,024).

    Returns
    -------
    ndarray of shape (n_partitions,)
        Each partition's silhouette, NaN where it has fewer than 2 or more than ``n_samples - 1``
        distinct labels (undefined there).

    Raises
    ------
    ValueError
        On NaN/infinity, fewer than 2 points, or partitions of another length than ``X``.
    """
    points = _float_points(X, min_samples=2).astype(np.float64)
    points -= points.mean(axis=0)
    n_samples = len(points)
    labelings = np.asarray(partitions)
    if labelings.ndim != 2 or labelings.shape[1] != n_samples:
        raise ValueError(f"partitions must have shape (n_partitions, {n_samples}) for {n_samples} points, "
                         f"got {labelings.shape}.")
    codes = [np.unique(labeling, return_inverse=True)[1].ravel() for labeling in labelings]
    widths = [int(code.max()) + 1 for code in codes]
    offsets = np.concatenate([[0], np.cumsum(widths)])
    one_hot = np.zeros((n_samples, offsets[-1]), dtype=np.float32)
    for code, offset in zip(codes, offsets):
        one_hot[np.arange(n_samples), offset + code] = 1.0
    block = _SILHOUETTE_BLOCK if chunk_size is None else check_int(chunk_size, "chunk_size", low=1)
    blocks = [slice(start, min(start + block, n_samples)) for start in range(0, n_samples, block)]
    norms = np.einsum("ij,ij->i", points, points)

    def add_block_pair(sums: np.ndarray, pair: tuple[int, int]) -> None:
        rows, columns = blocks[pair[0]], blocks[pair[1]]
        squared = norms[rows, None] + norms[None, columns] - 2.0 * (points[rows] @ points[columns].T)
        if pair[0] == pair[1]:
            np.fill_diagonal(squared, 0.0)
        distances = np.sqrt(np.maximum(squared, 0.0)).astype(np.float32)
        sums[rows] += distances @ one_hot[columns]
        if pair[0] != pair[1]:
            sums[columns] += distances.T @ one_hot[rows]

    pairs = [(i, j) for i in range(len(blocks)) for j in range(i, len(blocks))]
    sums = _sum_in_threads(add_block_pair, pairs, one_hot.shape)
    return np.array([_silhouette_from_sums(sums[:, start:stop], code) if 2 <= stop - start <= n_samples - 1
                     else np.nan for code, start, stop in zip(codes, offsets[:-1], offsets[1:])])


@dataclass(frozen=True)
class KMeansSelection:
    """Result of :func:`select_kmeans`.

    Attributes
    ----------
    labels : ndarray of shape (n_samples,), int
        Cluster of each point under the chosen k (all 0 when k = 1).
    n_clusters : int
        The chosen k.
    silhouettes : pandas.DataFrame
        ``k``, ``restart``, ``silhouette`` (NaN where the scored sample holds one cluster) and
        ``inertia``: one row per candidate k and k-means restart.
    restarts_agreeing : float
        Share of the restarts that, scored alone, choose the same k.
    """

    labels: np.ndarray
    n_clusters: int
    silhouettes: pd.DataFrame
    restarts_agreeing: float

    def by_k(self) -> pd.DataFrame:
        """Per candidate k (index ``k``): ``silhouette`` of the kept partition (lowest inertia), and
        ``silhouette_mean``, ``_std``, ``_min``, ``_max`` over restarts."""
        kept = self.silhouettes.loc[self.silhouettes.groupby("k").inertia.idxmin()].set_index("k").silhouette
        spread = self.silhouettes.groupby("k").silhouette.agg(["mean", "std", "min", "max"])
        return spread.add_prefix("silhouette_").assign(silhouette=kept)[
            ["silhouette", "silhouette_mean", "silhouette_std", "silhouette_min", "silhouette_max"]]


def _choose_k(scores: pd.Series, threshold: float) -> int:
    """The k (index) of best silhouette, or 1 when none reaches ``threshold`` (Cai et al.'s rule)."""
    if scores.notna().any() and scores.max() >= threshold:
        return int(scores.idxmax())
    return 1


def select_kmeans(
    X,
    k_range=range(2, 16),
    *,
    threshold: float = 0.1,
    sample_size: int | None = 20000,
    fit_size: int | None = None,
    n_init: int = 10,
    random_state=None,
) -> KMeansSelection:
    """Choose the number of k-means clusters by silhouette, as Cai et al. (2021), with every restart scored.

    For each k in ``k_range``, ``n_init`` k-means runs (k-means++, one initialisation each, seeds drawn
    from ``random_state``) are fitted on all points (or a sample of ``fit_size``); as scikit-learn's
    ``n_init`` does, the run of lowest inertia is kept. The k whose kept partition has the best
    silhouette on one uniform sample of ``sample_size`` points (the same for every k and run) is chosen,
    or k = 1 (no clusters) if that silhouette is below ``threshold``. Every run is scored too
    (:func:`silhouettes`, distances computed once), so the choice comes with its spread over restarts.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
    k_range : iterable of int
        Candidate k, each at least 2 (the authors: 2..15).
    threshold : float
        Minimum best silhouette for any clustering to be accepted (the authors: 0.1).
    sample_size : int or None
        Points scored by the silhouette (the authors: 20,000); None: all.
    fit_size : int or None
        None (default, the authors): k-means is fitted on all points. An int: fitted on a uniform
        sample of this many points, every point then assigned to its nearest centre -- the
        fits cost in proportion to the points, so this bounds the time on a large layer.
    n_init : int
        K-means restarts for each k; 10 was scikit-learn's default when the authors
        ran their code (and is the default of ``isolib.transforms.cluster_isotropy``).
    random_state : None, int or numpy Generator
        Seed of the samples and of the restarts' seeds.

    Returns
    -------
    KMeansSelection

    Raises
    ------
    ValueError
        On NaN/infinity, an empty ``k_range``, or a k below 2 or not smaller than
        the number of scored points.
    """
    points = _float_points(X, min_samples=3)
    n_init = check_int(n_init, "n_init", low=1)
    generator = rng(random_state)
    sample = sample_rows(len(points), sample_size, generator)
    fitted = sample_rows(len(points), fit_size, generator)
    candidates = [check_int(k, "k in k_range", low=2, high=len(sample) - 1) for k in k_range]
    if not candidates:
        raise ValueError("k_range is empty; give at least one k >= 2.")
    seeds = generator.integers(2**31 - 1, size=n_init)

    runs, partitions, kept = [], [], {}
    for k in candidates:
        best_inertia = np.inf
        for restart, seed in enumerate(seeds):
            kmeans = KMeans(n_clusters=k, n_init=1, random_state=int(seed)).fit(points[fitted])
            labels = (kmeans.labels_ if len(fitted) == len(points) else kmeans.predict(points)).astype(np.intp)
            runs.append((k, restart, float(kmeans.inertia_)))
            partitions.append(labels[sample])
            if kmeans.inertia_ < best_inertia:
                best_inertia, kept[k] = kmeans.inertia_, labels
    scores = pd.DataFrame(runs, columns=["k", "restart", "inertia"])
    scores.insert(2, "silhouette", silhouettes(points[sample], partitions))
    unclustered = np.zeros(len(points), dtype=np.intp)
    chosen = _choose_k(KMeansSelection(unclustered, 1, scores, np.nan).by_k().silhouette, threshold)
    alone = [_choose_k(run.set_index("k").silhouette, threshold) for _, run in scores.groupby("restart")]
    return KMeansSelection(kept[chosen] if chosen > 1 else unclustered, chosen, scores,
                           float(np.mean(np.asarray(alone) == chosen)))


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
