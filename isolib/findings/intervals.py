"""Intervals: a verdict with a bootstrap interval over the unit that carries its uncertainty.

:func:`bootstrap_threshold` judges a statistic of a sample (word types, sentence pairs and seeds,
windows, layers) against a threshold, borderline where its interval crosses it;
:func:`compare_with_control` and :func:`compare_correlations` judge "ours is higher than the control"
on paired units, reproduced only when the interval of the difference excludes 0.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import pandas as pd

from isolib.findings.rules import Verdict, threshold

__all__ = ["bootstrap_threshold", "compare_with_control", "compare_correlations", "with_interval"]


def bootstrap_threshold(samples, statistic: Callable, *, above: float | None = None, below: float | None = None,
                        inclusive: bool = False, crossed: bool = False, within_units: bool = False,
                        n_resamples: int = 2000, level: float = 0.95, random_state: int = 0) -> Verdict:
    """:func:`threshold` on ``statistic(samples)``, with a percentile bootstrap interval over the samples.

    The samples (rows) are drawn with replacement ``n_resamples`` times; the verdict is
    borderline when the ``level`` interval of the statistic crosses a bound (one end passes,
    the other fails), whichever way the full sample decides.

    Parameters
    ----------
    samples : array_like of shape (n_samples, ...), or pandas.DataFrame
        The units the value comes from (layers, word types, sentence pairs, windows ...), one
        per row; with ``crossed`` or ``within_units``, an array of shape (n_samples, n_replicates, ...)
        whose second axis holds replicates of each unit (training or k-means seeds).
    statistic : callable
        Maps a resample (same type and number of dimensions as ``samples``) to a float (e.g.
        ``np.median``).
    above, below, inclusive
        As in :func:`threshold`.
    crossed : bool
        Resample the replicates (axis 1) as well as the units, independently: the interval then
        covers both sources of variation (sentence pairs and seeds, say).
    within_units : bool
        Keep the units and resample each unit's replicates on its own: for a statistic over a fixed
        set of units whose replicates are independent runs (the k-means restarts of each layer,
        where restart 0 of one layer has nothing in common with restart 0 of another).
    n_resamples : int
    level : float
        Coverage of the interval.
    random_state : int
        Seed of the resampling.

    Returns
    -------
    Verdict
        Not comparable with fewer than 2 samples or a NaN statistic.
    """
    table = samples if isinstance(samples, pd.DataFrame) else None
    array = None if table is not None else np.asarray(samples, dtype=float)
    if (crossed or within_units) and (array is None or array.ndim < 2):
        raise ValueError("a bootstrap over replicates needs an array of shape (n_samples, n_replicates, ...).")
    if crossed and within_units:
        raise ValueError("choose crossed (units and replicates) or within_units (replicates only), not both.")
    n = len(table) if table is not None else len(array)
    if n < 2:
        return Verdict.undecided()

    def take(rows, columns=None):
        if table is not None:
            return table.iloc[rows]
        return array[rows] if columns is None else array[rows][:, columns]

    verdict = threshold(statistic(take(np.arange(n))), above=above, below=below, inclusive=inclusive)
    if verdict.passed is None:
        return verdict
    generator = np.random.default_rng(random_state)
    n_replicates = array.shape[1] if crossed or within_units else 0
    if within_units:
        shape = (n, n_replicates) + (1,) * (array.ndim - 2)
        replicates = np.array([statistic(np.take_along_axis(array, generator.integers(0, n_replicates, shape), axis=1))
                               for _ in range(n_resamples)], dtype=float)
    else:
        replicates = np.array([statistic(take(generator.integers(0, n, n),
                                              generator.integers(0, n_replicates, n_replicates) if crossed else None))
                               for _ in range(n_resamples)], dtype=float)
    return with_interval(verdict, replicates, level, above=above, below=below, inclusive=inclusive)


def with_interval(verdict: Verdict, replicates: np.ndarray, level: float = 0.95, **bounds) -> Verdict:
    """``verdict`` with the percentile interval of its bootstrap ``replicates``: borderline where the interval
    crosses a bound, degenerate (never borderline) where it has zero width.

    For a statistic whose resamples are computed elsewhere (e.g. a share over bootstrap weights of tokens);
    ``bounds`` are the ``above``, ``below`` and ``inclusive`` of the :func:`threshold` that gave ``verdict``.
    """
    low, high = np.nanquantile(replicates, [(1 - level) / 2, (1 + level) / 2])
    degenerate = bool(high - low <= 1e-12 * max(1.0, abs(verdict.value)))
    ends = [threshold(end, **bounds).passed for end in (low, high)]
    return dataclasses.replace(verdict, interval=(float(low), float(high)), borderline=ends[0] != ends[1],
                               degenerate=degenerate)


def compare_with_control(ours, control, *, higher: bool = True, n_resamples: int = 2000, level: float = 0.95,
                         random_state: int = 0) -> Verdict:
    """Ours against its control on the same sampling units: the mean paired difference and its interval.

    The claim "ours is higher (lower) than the control" passes when the mean of ``ours - control``
    is above (below) 0; it is borderline when the bootstrap interval of that mean straddles 0, so a
    difference within the noise of the sample is never counted as a reproduction.

    Parameters
    ----------
    ours, control : array_like of shape (n_units,) or (n_units, n_replicates)
        The measure per sampling unit (word type, window, sentence pair ...) for the method and for
        its control, paired by row; with a second axis (seeds), units and replicates are resampled
        independently (:func:`bootstrap_threshold` with ``crossed``).
    higher : bool
        The paper's direction: ours above the control (True) or below it.
    n_resamples, level, random_state
        As in :func:`bootstrap_threshold`.

    Returns
    -------
    Verdict
        ``value`` is the mean difference ours - control, ``interval`` its bootstrap interval.
    """
    ours, control = np.asarray(ours, dtype=float), np.asarray(control, dtype=float)
    if ours.shape != control.shape:
        raise ValueError(f"ours and its control must be paired unit by unit; got shapes {ours.shape} and "
                         f"{control.shape}.")
    return bootstrap_threshold(ours - control, np.mean, above=0.0 if higher else None, below=None if higher else 0.0,
                               crossed=ours.ndim > 1, n_resamples=n_resamples, level=level, random_state=random_state)


def _average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks along axis 0, ties given their average rank (as Spearman's correlation needs)."""
    return pd.DataFrame(values).rank(axis=0).to_numpy()


def compare_correlations(gold, ours, control, *, higher: bool = True, n_resamples: int = 2000, level: float = 0.95,
                         random_state: int = 0) -> Verdict:
    """Two predictors of the same gold scores, compared by Spearman's correlation, paired over items.

    The value is ``rho(ours, gold) - rho(control, gold)``, each the mean over its replicates (seeds)
    when it has several. The interval is a percentile bootstrap over the items (STS sentence pairs),
    both predictors judged on the same resample, crossed with the replicates (each predictor's seeds
    drawn with replacement): so a gain within the noise of the test set or of the seeds is
    borderline, never reproduced. In each resample the correlation is Pearson's on the full sample's
    ranks, weighted by how often each item was drawn (on the full sample exactly Spearman's; the
    ranks are not recomputed per resample, which keeps 2,000 resamples of 3,000 pairs within a second).

    Parameters
    ----------
    gold : array_like of shape (n_items,)
    ours, control : array_like of shape (n_items,) or (n_items, n_replicates)
        Predicted scores (e.g. cosine similarities); the replicate counts may differ.
    higher : bool
        The claim's direction: ours correlates better (True) or worse than the control.
    n_resamples, level, random_state
        As in :func:`bootstrap_threshold`.

    Returns
    -------
    Verdict
        ``value`` the difference of correlations (not x 100), ``interval`` its bootstrap interval.
    """
    gold = np.asarray(gold, dtype=float)
    predictors = [np.asarray(values, dtype=float) for values in (ours, control)]
    if any(len(values) != len(gold) for values in predictors):
        raise ValueError(f"ours and control must hold one row per gold score ({len(gold)}).")
    predictors = [values.reshape(len(gold), -1) for values in predictors]
    if len(gold) < 3:
        return Verdict.undecided()
    gold_ranks = _average_ranks(gold[:, None])[:, 0]
    ranks = [_average_ranks(values) for values in predictors]

    def correlations(weights: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Weighted Pearson correlation of each column of ``x`` with the gold ranks, per row of ``weights``."""
        total = weights.sum(axis=1, keepdims=True)
        mean_x, mean_y = weights @ x / total, weights @ gold_ranks[:, None] / total
        cov = weights @ (x * gold_ranks[:, None]) / total - mean_x * mean_y
        var_x = weights @ x**2 / total - mean_x**2
        var_y = weights @ gold_ranks[:, None] ** 2 / total - mean_y**2
        with np.errstate(invalid="ignore", divide="ignore"):
            return cov / np.sqrt(var_x * var_y)

    ones = np.ones((1, len(gold)))
    value = float(correlations(ones, ranks[0]).mean() - correlations(ones, ranks[1]).mean())
    if not np.isfinite(value):  # a constant predictor or constant gold scores
        return Verdict.undecided(value)
    verdict = threshold(value, above=0.0 if higher else None, below=None if higher else 0.0)
    generator = np.random.default_rng(random_state)
    weights = generator.multinomial(len(gold), np.full(len(gold), 1 / len(gold)), size=n_resamples).astype(float)

    def resampled(x: np.ndarray) -> np.ndarray:
        seeds = generator.integers(0, x.shape[1], size=(n_resamples, x.shape[1]))
        return np.take_along_axis(correlations(weights, x), seeds, axis=1).mean(axis=1)

    differences = resampled(ranks[0]) - resampled(ranks[1])
    return with_interval(verdict, differences, level, above=0.0 if higher else None, below=None if higher else 0.0)


