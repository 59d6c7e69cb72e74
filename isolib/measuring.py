"""Every measure of one set of points, the controlled changes of the points, and the rogue shares.

Shared by notebook 05 (:mod:`isolib.studies.every_measure.compute`) and the model card (:mod:`isolib.card`);
the measures' names and the tables read off what this module measures are in :mod:`isolib.measures`, the
token samples in :mod:`isolib.sampling`:

* :class:`Spectrum` and :func:`every_measure` -- the twelve measures of one set of points, those that
  share a covariance or scatter matrix computing it once (:data:`~isolib.measures.MEASURES`);
* :func:`changed_samples` -- controlled changes of the same points (centring, ABTT, the cluster-based
  method, whitening, standardisation, rogue dimensions removed, a rotation, unit length, the decoder's
  first position removed, uniform scaling, a planted outlier, fewer points);
* :func:`measure_spaces` -- every measure of every (model, view, layer) cell and token sample, and of
  every change of each sample: the tables ``measures_by_replicate`` and ``changed``;
* :func:`rogue_shares` -- how much of the average cosine the top coordinates carry, against a random
  rotation of the same points, with the share of each bootstrap resample of the windows.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from isolib._blas import eigh
from isolib._checks import rng, sample_rows
from isolib.measures import MEASURE_NAMES, TOP_COORDINATES, isoscore_of_variances
from isolib.metrics import (
    anisotropy_baseline,
    lid_mle,
    mev_baseline,
    s_inter,
    s_intra,
    select_kmeans,
)
from isolib.sampling import Sample

__all__ = [
    "MeasureOptions",
    "Spectrum",
    "cosine_contributions",
    "every_measure",
    "ChangeSettings",
    "changed_samples",
    "measure_spaces",
    "rogue_shares",
]


# --------------------------------------------------------------------------- the measures of one set of points


@dataclass(frozen=True)
class MeasureOptions:
    """How the costly measures are estimated (the notebook's parameters).

    Attributes
    ----------
    baseline_samples : int
        Points drawn for the anisotropy and MEV baselines (Ethayarajh: 1,000).
    lid_k : int
        Neighbours of the LID estimate (Cai et al.: 100).
    lid_queries : int or None
        Query points whose LID is averaged (None: all).
    k_max : int
        K-means for k = 2..k_max; the best silhouette over k is the measure.
    n_init : int
        K-means restarts per k.
    kmeans_fit_size, silhouette_sample : int or None
        Points k-means is fitted on and points the silhouette is scored on (None: all).
    """

    baseline_samples: int = 1000
    lid_k: int = 100
    lid_queries: int | None = 1000
    k_max: int = 8
    n_init: int = 1
    kmeans_fit_size: int | None = 2000
    silhouette_sample: int | None = 2000


@dataclass(frozen=True)
class Spectrum:
    """The covariance and scatter matrices of one set of points, decomposed once for every measure that needs them.

    IsoScore, the effective rank, the top principal direction's and the top coordinate's variance
    shares all read the covariance's eigenvalues or diagonal; I(W) reads the eigenvectors of the
    uncentred scatter matrix ``X^T X = C + n m m^T``, derived from the same product. One
    ``(dim, dim)`` product and two ``eigh`` replace the six of calling each measure alone.

    Attributes
    ----------
    n_points, dim : int
    mean : ndarray of shape (dim,)
    variances : ndarray of shape (dim,)
        Variance along each principal axis (``ddof = 1``), largest first.
    coordinate_variances : ndarray of shape (dim,)
        Variance of each coordinate (the covariance's diagonal).
    raw_directions : ndarray of shape (dim, dim)
        Unit eigenvectors of the uncentred scatter matrix (columns): the directions of I(W).
    raw_eigenvalues : ndarray of shape (dim,)
        Their eigenvalues, smallest first.
    """

    n_points: int
    dim: int
    mean: np.ndarray
    variances: np.ndarray
    coordinate_variances: np.ndarray
    raw_directions: np.ndarray
    raw_eigenvalues: np.ndarray

    @classmethod
    def of(cls, points) -> Spectrum:
        """Decompose the points' covariance and scatter matrices (float64)."""
        points = np.asarray(points, dtype=np.float64)
        n_points, dim = points.shape
        mean = points.mean(axis=0)
        centred = points - mean
        covariance_scatter = centred.T @ centred
        eigenvalues = eigh(covariance_scatter, vectors=False)[::-1]
        raw_eigenvalues, raw_directions = eigh(covariance_scatter + n_points * np.outer(mean, mean), vectors=True)
        return cls(n_points, dim, mean, np.clip(eigenvalues, 0.0, None) / (n_points - 1),
                   np.diag(covariance_scatter) / (n_points - 1), raw_directions, raw_eigenvalues)

    def isoscore(self) -> float:
        """:func:`isolib.metrics.isoscore` of the points."""
        return isoscore_of_variances(self.variances)

    def effective_rank(self) -> float:
        """:func:`isolib.metrics.effective_rank` of the centred points, over the dimension (in (0, 1])."""
        singular = np.sqrt(self.variances[: min(self.n_points, self.dim)])
        p = singular[singular > 0] / singular.sum()
        return float(np.exp(-np.sum(p * np.log(p)))) / self.dim

    def top_direction_share(self) -> float:
        """Share of the variance on the first principal direction (``explained_variance(X)[0]``)."""
        return float(self.variances[0] / self.variances.sum())

    def top_dimension_share(self) -> float:
        """Share of the variance on the coordinate of largest variance (a rogue dimension; 1/d when isotropic)."""
        return float(self.coordinate_variances.max() / self.coordinate_variances.sum())

    def directions_determined(self) -> bool:
        """Whether the points fix I(W)'s directions: the scatter matrix's non-zero eigenvalues are distinct.

        Where two coincide, any basis of their eigenspace is an eigenbasis, and I(W) takes the value
        of whichever one the eigensolver returns: on whitened points (every eigenvalue equal) another
        CPU's kernels moved it by up to 0.18 (by 0.056 where a cell's token samples agreed to 0.001).
        Directions without variance do not matter (every point projects to 0 on each of them), and
        distinct eigenvalues of real points differ by far more than the relative 1e-8 counted as equal.
        """
        values = self.raw_eigenvalues[self.raw_eigenvalues > 1e-10 * self.raw_eigenvalues[-1]]  # ascending
        return bool(np.all(np.diff(values) > 1e-8 * values[1:]))

    def log10_partition_isotropy(self, points) -> float:
        """``log10 I(W)`` (:func:`isolib.metrics.partition_isotropy`, both signs of every direction), without underflow."""
        projections = np.asarray(points, dtype=np.float64) @ self.raw_directions
        projections = np.hstack([projections, -projections])
        peak = projections.max(axis=0)
        log_f = peak + np.log(np.exp(projections - peak).sum(axis=0))
        return float((log_f.min() - log_f.max()) / math.log(10))


def cosine_contributions(X) -> np.ndarray:
    """Each coordinate's part of the average cosine: ``c_j = ((sum_i u_ij)^2 - sum_i u_ij^2) / (n (n - 1))``.

    With ``u_i`` the unit vectors, the average cosine over ordered pairs ``i != j`` is ``sum_j c_j``
    (Timkey & van Schijndel 2021's decomposition of cosine similarity by dimension). A coordinate with
    a large common value in every vector (a rogue dimension) carries most of it.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
        No zero vector.

    Returns
    -------
    ndarray of shape (n_features,)
        Summing to :func:`isolib.metrics.average_cosine` of ``X``.
    """
    points = np.asarray(X, dtype=np.float64)
    norms = np.linalg.norm(points, axis=1)
    if (norms == 0).any():
        raise ValueError("X has a zero vector, whose cosine similarity is undefined.")
    units = points / norms[:, None]
    n = len(units)
    return (units.sum(axis=0) ** 2 - (units**2).sum(axis=0)) / (n * (n - 1))


def _or_nan(function, *args, **kwargs) -> float:
    """``function(...)``, or NaN where the measure is undefined for these points (ValueError)."""
    try:
        return float(function(*args, **kwargs))
    except ValueError:
        return np.nan


def every_measure(sample: Sample, options: MeasureOptions = MeasureOptions(), *, random_state=0,
                  measures: Sequence[str] | None = None) -> dict[str, float]:
    """Every measure of :data:`MEASURES` on one set of points.

    Parameters
    ----------
    sample : Sample
    options : MeasureOptions
    random_state : int
        Seed of the baselines' draws, the LID queries and k-means.
    measures : sequence of str, optional
        Names of :data:`MEASURES` to compute (None: all). The others are NaN: the costly ones (the
        baselines, S_inter and S_intra, LID, the silhouette) are then not computed; those read off the
        shared spectrum always are. Each measure's value does not depend on which others are computed.

    Returns
    -------
    dict
        One entry per measure of :data:`MEASURES` (``effective_rank`` over the dimension), and
        ``log10_iw`` (I(W) on a log scale, exact where I(W) underflows), ``best_k`` (the k of the best
        silhouette), ``dim`` and ``n_points``. A measure undefined for the points (S_intra with no type
        seen twice; I(W) where its directions are not determined, :meth:`Spectrum.directions_determined`)
        is NaN.
    """
    wanted = set(MEASURE_NAMES if measures is None else measures)
    if unknown := wanted - set(MEASURE_NAMES):
        raise ValueError(f"Unknown measures {sorted(unknown)}; the measures are {', '.join(MEASURE_NAMES)}.")
    points = np.asarray(sample.points, dtype=np.float64)
    n_points, dim = points.shape
    types = np.arange(n_points) if sample.types is None else sample.types
    contexts = np.arange(n_points) if sample.contexts is None else sample.contexts
    seed = int(rng(random_state).integers(2**31 - 1))
    spectrum = Spectrum.of(points)
    log10_iw = spectrum.log10_partition_isotropy(points) if spectrum.directions_determined() else np.nan
    costly = {
        "anisotropy_baseline": lambda: _or_nan(anisotropy_baseline, points, contexts,
                                               n_samples=options.baseline_samples, random_state=seed),
        "s_inter": lambda: _or_nan(s_inter, points, types, random_state=seed),
        "s_intra": lambda: _or_nan(s_intra, points, types, random_state=seed),
        "mev_baseline": lambda: mev_baseline(points, n_samples=options.baseline_samples, random_state=seed),
    }
    values = {
        "average_cosine": float(cosine_contributions(points).sum()),
        **{name: compute() if name in wanted else np.nan for name, compute in costly.items()},
        "iw": 10.0**log10_iw,
        "isoscore": spectrum.isoscore(),
        "effective_rank": spectrum.effective_rank(),
        "top_dimension_share": spectrum.top_dimension_share(),
        "top_direction_share": spectrum.top_direction_share(),
        "lid": np.nan, "silhouette": np.nan, "best_k": np.nan,
    }
    if "lid" in wanted:
        # LID is estimated on distinct points (a static embedding repeats a word's vector): k and the queries fit them.
        n_distinct = len(np.unique(points, axis=0))
        queries = None if options.lid_queries is None or options.lid_queries >= n_distinct else options.lid_queries
        values["lid"] = lid_mle(points, k=min(options.lid_k, n_distinct - 1), queries=queries, random_state=seed)
    if "silhouette" in wanted:
        k_range = range(2, max(2, min(options.k_max, n_points - 2)) + 1)
        by_k = select_kmeans(points, k_range, sample_size=options.silhouette_sample, fit_size=options.kmeans_fit_size,
                             n_init=options.n_init, random_state=seed).by_k().silhouette
        values.update(silhouette=float(by_k.max()), best_k=int(by_k.idxmax()))
    values.update(log10_iw=log10_iw, dim=dim, n_points=n_points)
    return values


# --------------------------------------------------------------------------- changes of the points


@dataclass(frozen=True)
class ChangeSettings:
    """The size of each change (the notebook's parameters).

    Attributes
    ----------
    abtt_components : int
        Principal directions ABTT removes after centring (Rajaee & Pilehvar's global row: 15).
    cluster : (int, int)
        k and directions per cluster of the cluster-based method (03: 27 and 12 for an encoder,
        10 and 30 for a decoder).
    rogue_dimensions : sequence of int
        How many top coordinates to remove (one change each; :data:`CHANGES` names 1 and 3).
    scale : float
        Factor of the uniform scaling.
    outlier_scale : float
        The planted outlier lies this many median distances from the mean, in a random direction.
    small_n : int
        The points of the "fewer points" change.
    changes : sequence of str or None
        The changes made (keys of :data:`CHANGES`, or ``drop_top_<count>``); None: every one.
    measures : sequence of str or None
        The measures computed on a changed sample (:func:`every_measure`'s ``measures``); None: every one.
    replicates : int or None
        How many of a cell's replicates (the first) are changed and measured again (None: every one).
    """

    abtt_components: int = 15
    cluster: tuple[int, int] = (27, 12)
    rogue_dimensions: tuple[int, ...] = (1, 3)
    scale: float = 3.0
    outlier_scale: float = 20.0
    small_n: int = 500
    changes: tuple[str, ...] | None = None
    measures: tuple[str, ...] | None = None
    replicates: int | None = None

    def makes(self, change: str) -> bool:
        """Whether ``change`` is among the changes made."""
        return self.changes is None or change in self.changes


def _random_rotation(dim: int, generator: np.random.Generator) -> np.ndarray:
    """A uniformly random orthogonal matrix (QR of a Gaussian matrix, signs fixed)."""
    q, r = np.linalg.qr(generator.standard_normal((dim, dim)))
    return q * np.sign(np.diag(r))


def changed_samples(sample: Sample, settings: ChangeSettings = ChangeSettings(), *, random_state=0):
    """Each controlled change of the points, in the order of :data:`CHANGES`.

    Parameters
    ----------
    sample : Sample
    settings : ChangeSettings
    random_state : int or sequence of int
        Seed of the clustering, the rotation, the outlier's direction and the smaller sample.

    Yields
    ------
    (str, Sample or None)
        The change's key and the changed sample; None where the change does not apply (the first
        position of a space whose position 0 is never analysed: an encoder's [CLS], a start token,
        a static vector; fewer points than ``small_n`` already). A vector that a change sends to the
        origin has no direction, so no cosine: it is left out (the cluster-based method does it to
        every copy of a repeated vector in a cluster of its own, as a decoder's input layer or a
        static embedding holds them).
    """
    for change, changed in _changes(sample, settings, random_state):
        if changed is not None:
            nonzero = np.flatnonzero(np.abs(changed.points).max(axis=1) > 0)
            changed = changed if len(nonzero) == len(changed.points) else changed.subset(nonzero)
        yield change, changed


def _changes(sample: Sample, settings: ChangeSettings, random_state):
    """The changes of :func:`changed_samples`, before vectors sent to the origin are left out."""
    from isolib.transforms import (
        ClusterIsotropy,
        abtt,
        centre,
        drop_top_dimensions,
        standardise,
        whiten,
    )

    generator = rng(random_state)
    points = np.asarray(sample.points, dtype=np.float64)
    n_points, dim = points.shape
    makes = settings.makes
    if makes("centre"):
        yield "centre", sample.with_points(centre(points))
    if makes("abtt"):
        yield "abtt", sample.with_points(abtt(points, min(settings.abtt_components, dim - 1)))
    if makes("cluster"):
        k, n_pc = settings.cluster
        method = ClusterIsotropy(min(k, n_points // 2), min(n_pc, dim - 1), small_clusters="merge", n_init=1,
                                 random_state=int(generator.integers(2**31 - 1)))
        yield "cluster", sample.with_points(method.fit_transform(points))
    if makes("whiten"):
        yield "whiten", sample.with_points(whiten(points))
    if makes("standardise"):
        yield "standardise", sample.with_points(standardise(points))
    for count in settings.rogue_dimensions:
        if makes(f"drop_top_{count}"):
            yield f"drop_top_{count}", sample.with_points(drop_top_dimensions(points, min(count, dim - 2)))
    if makes("rotate"):
        yield "rotate", sample.with_points(points @ _random_rotation(dim, generator))
    if makes("unit_length"):
        yield "unit_length", sample.with_points(points / np.linalg.norm(points, axis=1, keepdims=True))
    if makes("drop_first_position"):
        first = None if sample.positions is None else np.asarray(sample.positions) == 0
        yield "drop_first_position", (sample.subset(np.flatnonzero(~first)) if first is not None and first.any()
                                      else None)
    if makes("scale"):
        yield "scale", sample.with_points(settings.scale * points)
    if makes("outlier"):
        mean = points.mean(axis=0)
        direction = generator.standard_normal(dim)
        planted = points.copy()
        planted[0] = mean + settings.outlier_scale * np.median(np.linalg.norm(points - mean, axis=1)) * (
            direction / np.linalg.norm(direction))
        yield "outlier", sample.with_points(planted)
    if makes("fewer_points"):
        smaller = sample_rows(n_points, settings.small_n, generator)
        yield "fewer_points", sample.subset(smaller) if len(smaller) < n_points else None


def _measure_cell(cell: dict, samples, options: MeasureOptions, settings: ChangeSettings, n_replicates: int,
                  random_state) -> tuple[list, list]:
    """Every measure of one cell's replicates and of the changes of each, on one BLAS and OpenMP thread.

    The matrices of one measurement are small, and on shared cores library threads wait for each other:
    one measurement of 2,000 points took 3.8-5.3 s with two threads on two loaded cores against 1.1-1.2 s
    with one. Cells run in parallel processes instead (:func:`measure_spaces`' ``n_jobs``).
    """
    from threadpoolctl import threadpool_limits

    samples = samples() if callable(samples) else samples
    rows, changed = [], []
    with threadpool_limits(1):
        for replicate, sample in enumerate(samples[:n_replicates]):
            tic = time.perf_counter()
            values = every_measure(sample, options, random_state=[random_state, replicate])
            rows.append({**cell, "replicate": replicate, **values, "seconds": time.perf_counter() - tic})
            if settings.replicates is not None and replicate >= settings.replicates:
                continue
            for change, changed_sample in changed_samples(sample, settings, random_state=[random_state, replicate]):
                if changed_sample is None:
                    continue
                tic = time.perf_counter()
                values = every_measure(changed_sample, options, random_state=[random_state, replicate],
                                       measures=settings.measures)
                changed.append({**cell, "replicate": replicate, "change": change, **values,
                                "seconds": time.perf_counter() - tic})
    return rows, changed


def measure_spaces(spaces, options: MeasureOptions, settings: ChangeSettings, *, n_replicates: int,
                   random_state=0, n_jobs: int = 1) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every measure on every cell and replicate, and on every change of each replicate.

    Parameters
    ----------
    spaces : iterable of (dict, list of Sample) or (dict, list of Sample, ChangeSettings)
        Per cell, its description (``space``, ``model``, ``view``, ``layer``), its samples, one per
        replicate (replicate 0 first), and optionally its own change settings. A callable giving the
        list may stand for the list, so that one cell's points are read at a time; the iterable is
        consumed as cells are dispatched, so a generator keeps only a few cells in memory.
    options : MeasureOptions
    settings : ChangeSettings
        For the cells that bring none.
    n_replicates : int
        Replicates measured (the first ``n_replicates`` samples).
    random_state : int
        Seed of every measurement: the result does not depend on ``n_jobs``.
    n_jobs : int
        Cells measured at once, in worker processes (joblib; -1: one per core); 1 measures them here.

    Returns
    -------
    by_replicate : pandas.DataFrame
        One row per (cell, replicate): the description, ``replicate``, every measure, ``seconds``.
    changed : pandas.DataFrame
        One row per (cell, replicate, change) that applies: the description, ``replicate``, ``change``,
        every measure, ``seconds``. A change's spread over the replicates of its cell is that of the
        token samples and of its own random draws (a clustering, a rotation) together.
    """
    def tasks():
        for space in spaces:
            cell, samples, *own = space
            samples = samples() if callable(samples) else samples
            yield cell, samples, options, own[0] if own else settings, n_replicates, random_state

    if n_jobs == 1:
        results = [_measure_cell(*task) for task in tasks()]
    else:
        from joblib import Parallel, delayed

        results = Parallel(n_jobs=n_jobs)(delayed(_measure_cell)(*task) for task in tasks())
    rows = [row for cell_rows, _ in results for row in cell_rows]
    changed = [row for _, cell_changed in results for row in cell_changed]
    return pd.DataFrame(rows), pd.DataFrame(changed)


# --------------------------------------------------------------------------- rogue dimensions


def _top_share(parts: np.ndarray, n_dimensions: int) -> float:
    """The share of ``parts.sum()`` carried by its ``n_dimensions`` largest parts (NaN unless the sum is positive)."""
    return float(np.sort(parts)[::-1][:n_dimensions].sum() / parts.sum()) if parts.sum() > 0 else np.nan


def rogue_shares(samples, *, n_dimensions: int = TOP_COORDINATES, n_resamples: int = 200,
                 random_state=0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """How much of the average cosine the top coordinates carry, against a random rotation of the same points.

    Parameters
    ----------
    samples : iterable of (dict, Sample)
        Per cell, its description and its replicate-0 sample.
    n_dimensions : int
        The top coordinates counted (by their part of the average cosine, :func:`cosine_contributions`).
    n_resamples : int
        Bootstrap resamples of the windows (the sample's contexts; without them, of the tokens), drawn with
        replacement as multinomial weights: tokens of one window are not independent draws.
    random_state : int

    Returns
    -------
    cells : pandas.DataFrame, one row per cell
        The description; ``average_cosine``; ``top1_share`` and ``top_share`` (the share of the average
        cosine carried by the top coordinate and the top ``n_dimensions``); ``rotated_share`` (the same share
        after a random rotation, which keeps every cosine: the control, near ``n_dimensions / d`` when no axis
        is special); ``rogue`` (the top coordinates, by index).
    resamples : pandas.DataFrame, one row per cell and resample
        ``space``, ``layer``, ``resample``, ``top_share``: the share in each bootstrap resample of the windows
        (:func:`isolib.measures.rogue_table` reads its interval from them).
    """
    generator = rng(random_state)
    rows, resampled_rows = [], []
    for cell, sample in samples:
        points = np.asarray(sample.points, dtype=np.float64)
        contributions = cosine_contributions(points)
        total = contributions.sum()
        order = np.argsort(-contributions)
        units = points / np.linalg.norm(points, axis=1, keepdims=True)
        n = len(units)
        # Tokens of one window share its context: whole windows are drawn, each token weighted by its window's draws.
        contexts = np.arange(n) if sample.contexts is None else np.asarray(sample.contexts)
        windows, window_of = np.unique(contexts, return_inverse=True)
        draws = generator.multinomial(len(windows), np.full(len(windows), 1 / len(windows)), size=n_resamples)
        weights = draws[:, window_of].astype(float)
        sums, squares = weights @ units, weights @ units**2
        resampled = (sums**2 - squares) / (n * (n - 1))
        resampled_rows.append(pd.DataFrame({"space": cell["space"], "layer": cell["layer"],
                                            "resample": np.arange(n_resamples),
                                            "top_share": [_top_share(parts, n_dimensions) for parts in resampled]}))
        rotated = cosine_contributions(points @ _random_rotation(points.shape[1], generator))
        rows.append({**cell, "average_cosine": float(total),
                     "top1_share": float(contributions[order[0]] / total) if total > 0 else np.nan,
                     "top_share": _top_share(contributions, n_dimensions),
                     "rotated_share": _top_share(rotated, n_dimensions),
                     "rogue": " ".join(map(str, order[:n_dimensions]))})
    resamples = (pd.concat(resampled_rows, ignore_index=True) if resampled_rows else
                 pd.DataFrame(columns=["space", "layer", "resample", "top_share"]))
    return pd.DataFrame(rows), resamples
