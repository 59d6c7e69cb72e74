"""Helpers shared by several families of measures in :mod:`isolib.metrics`.

Input validation, row chunking, row norms, label codes and group sums,
per-group subsampling (:func:`random_subset_per_group`, the one public name
here), a thread pool for distance blocks, and the spectrum behind the variance
and isotropy families.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import scipy.sparse

from isolib._blas import eigh, one_blas_thread
from isolib._checks import as_points, check_same_length

# Row chunks hold about this many values (8 MB in float64).
_CHUNK_VALUES = 2**20
# At most this many worker threads; each holds its own blocks (up to 128 MB for k-NN).
_MAX_THREADS = 8


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


def random_subset_per_group(codes: np.ndarray, limit: int | None, generator: np.random.Generator) -> np.ndarray:
    """Row indices keeping at most ``limit`` uniformly chosen rows of every group (all rows if None).

    Each group keeps ``min(limit, size)`` of its rows, a uniform random subset (every
    subset of that size equally likely, independently across groups); a group with
    at most ``limit`` rows is kept whole. :func:`~isolib.metrics.s_inter` and
    :func:`~isolib.metrics.s_intra` use it to cap the instances drawn per type.

    Parameters
    ----------
    codes : ndarray of shape (n_rows,)
        Group of each row, e.g. integer codes from ``pandas.factorize``; rows with
        equal codes form one group.
    limit : int or None
        Most rows kept per group; None keeps every row (and draws nothing). A limit
        of 0 or below keeps none.
    generator : numpy.random.Generator
        Source of the draw (e.g. ``numpy.random.default_rng(seed)``); it consumes
        one permutation of ``n_rows``, so a generator in the same state gives the
        same rows.

    Returns
    -------
    ndarray of shape (n_kept,), int
        Indices into ``codes``, ascending, with ``n_kept`` the sum over groups of
        ``min(limit, group size)`` (``arange(n_rows)`` when ``limit`` is None).
    """
    if limit is None:
        return np.arange(len(codes))
    shuffled = generator.permutation(len(codes))
    order = shuffled[np.argsort(codes[shuffled], kind="stable")]
    sorted_codes = codes[order]
    first_of_group = np.searchsorted(sorted_codes, sorted_codes, side="left")
    rank_in_group = np.arange(len(order)) - first_of_group
    return np.sort(order[rank_in_group < limit])


def _in_threads(work, items) -> list:
    """``[work(item) for item in items]`` on one thread per usable core, BLAS single-threaded in each.

    numpy's matrix products, selections and element-wise passes release the GIL,
    so independent blocks run in parallel from start to finish, instead of only
    the matrix product being spread over cores.
    """
    with one_blas_thread(), ThreadPoolExecutor(_thread_count()) as pool:
        return list(pool.map(work, items))


def _thread_count() -> int:
    """Threads for :func:`_in_threads`: one per core this process may use, at most ``_MAX_THREADS``."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return min(usable, _MAX_THREADS)


def _sum_in_threads(add, items, shape: tuple[int, ...]) -> np.ndarray:
    """The float64 array of ``shape`` that ``add(total, item)`` for every item adds into, computed by
    :func:`_in_threads`: one such array per thread, summed at the end.

    Thread ``t`` of ``n`` adds ``items[t::n]`` in order and the threads' arrays are summed in order, so
    a rerun with as many cores gives the same bits (threads that took items as they came free summed
    them in an order that changed from run to run: notebook 04's silhouettes moved by up to 7e-9).

    Besides using every core, this keeps BLAS's own worker threads out: after a multi-threaded
    product they spin for a while, and on two cores they slow whatever runs next (measured: the
    silhouette after IsoScore 10-20% slower in the probe of :mod:`isolib.probe`).
    """
    items = list(items)
    n_shares = max(1, min(_thread_count(), len(items)))

    def share_total(share: int) -> np.ndarray:
        total = np.zeros(shape)
        for item in items[share::n_shares]:
            add(total, item)
        return total

    return np.sum(_in_threads(share_total, range(n_shares)), axis=0)


def _scatter_matrix(points: np.ndarray, mean: np.ndarray | None = None) -> np.ndarray:
    """``(X - mean)^T (X - mean)`` summed in float64 over row chunks (uncentred if ``mean`` is None).

    Each chunk's product is computed in the points' own precision (float32 products run at twice
    the speed, and float32 points carry no more digits than that) and accumulated in float64.
    """
    shift = None if mean is None else mean.astype(points.dtype)

    def add_chunk(scatter: np.ndarray, rows: slice) -> None:
        block = points[rows] if shift is None else points[rows] - shift
        scatter += block.T @ block

    return _sum_in_threads(add_chunk, list(_row_chunks(*points.shape)), (points.shape[1], points.shape[1]))


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
