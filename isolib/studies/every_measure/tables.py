"""The tables read off the measurements: one scale for every measure, their agreement, what moves them, the rogue shares.

Functions of measured values only (the evidence tables of
:mod:`~isolib.studies.every_measure.compute`), used by the claims and the notebook alike:

* :func:`isoscore_of_variances` -- IsoScore's closed form from the variances along the principal axes
  (the measurement reads it from a spectrum, the whitening check from a rank);
* :func:`isotropy_scale`, :func:`oriented` -- every measure on one scale, or oriented to isotropy;
* :func:`kendall_matrix`, :func:`agreement_table` -- Kendall's tau-b of every pair of measures over
  the (model, view, layer) cells, with a bootstrap interval crossed over cells and token samples;
* :func:`sensitivity_table` -- each measure's change under each change of the points, on the isotropy
  scale, with an interval over cells;
* :func:`cell_table` -- every measure of each cell, the mean and spread over its token samples;
* :func:`rogue_table` -- the rogue shares of each cell with their interval over windows.

Orientation and the isotropy scale
----------------------------------
Each measure has an *isotropic end* (:attr:`~isolib.studies.every_measure.settings.Measure.isotropic`:
"high" for IsoScore, "low" for the average cosine). Agreement is computed on the *oriented* values (a
measure whose isotropic end is low is negated), so tau = 1 means two measures rank the cells the same
way from least to most isotropic. Changes are compared on one scale, :func:`isotropy_scale`: every
measure mapped to [0, 1] with 1 at its isotropic end (``1 - |cos|`` for a mean cosine, ``1 - share``
for a variance share, LID over the dimension, ``1 - max(silhouette, 0)``, and I(W), which spans
hundreds of orders of magnitude, as ``1 / (1 + |log10 I(W)|)``), so a change of +0.1 reads about the
same for every measure: a tenth of the way towards isotropy.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd

from isolib.studies.every_measure.settings import CHANGES, MEASURE_NAMES, MEASURES

__all__ = ["isoscore_of_variances", "isotropy_scale", "oriented", "kendall_matrix", "mean_kendall", "replicate_array",
           "agreement_table", "sensitivity_table", "cell_table", "rogue_table"]


def isoscore_of_variances(variances) -> float:
    """IsoScore (Rudman et al. 2022) from the variance along each principal axis, padded with zeros to the dimension.

    The formula of :func:`isolib.metrics.isoscore`, taking the vector it computes first: with
    ``n = len(variances)``, ``S_hat = sqrt(n) S / ||S||``, ``delta = ||S_hat - 1|| / sqrt(2 (n - sqrt(n)))``,
    ``k = (n - delta^2 (n - sqrt(n)))^2 / n``, IsoScore ``= (k - 1) / (n - 1)``.

    Parameters
    ----------
    variances : array_like of shape (dim,)

    Returns
    -------
    float
        In [0, 1]; NaN if every variance is 0.
    """
    variances = np.clip(np.asarray(variances, dtype=float), 0.0, None)
    n = len(variances)
    norm = np.linalg.norm(variances)
    if n < 2 or norm == 0:
        return np.nan
    normalised = math.sqrt(n) * variances / norm
    defect = np.linalg.norm(normalised - 1.0) / math.sqrt(2 * (n - math.sqrt(n)))
    k = (n - defect**2 * (n - math.sqrt(n))) ** 2 / n
    return float(np.clip((k - 1) / (n - 1), 0.0, 1.0))



def isotropy_scale(table: pd.DataFrame) -> pd.DataFrame:
    """Every measure of ``table`` mapped to [0, 1], 1 at its isotropic end (module docstring).

    Parameters
    ----------
    table : pandas.DataFrame
        Columns of :data:`MEASURES`, ``log10_iw`` (I(W) is read as ``1 / (1 + |log10 I(W)|)``) and ``dim``
        (the LID is read over the dimension).

    Returns
    -------
    pandas.DataFrame
        The same index, one column per measure.
    """
    scaled = pd.DataFrame(index=table.index)
    for name in ("average_cosine", "anisotropy_baseline", "s_inter", "s_intra"):
        scaled[name] = 1 - table[name].abs()
    for name in ("mev_baseline", "top_dimension_share", "top_direction_share"):
        scaled[name] = 1 - table[name]
    for name in ("isoscore", "effective_rank"):
        scaled[name] = table[name]
    # I(W) spans hundreds of orders of magnitude (a scaling by 3 takes it from 0.1 to 1e-32): read on a log scale,
    # 1 / (1 + |log10 I(W)|), 1 at I(W) = 1, 0.5 at 0.1, 0.01 at 1e-99, so that such a change shows.
    scaled["iw"] = 1 / (1 + table["log10_iw"].abs())
    scaled["lid"] = (table["lid"] / table["dim"]).clip(upper=1.0)
    scaled["silhouette"] = 1 - table["silhouette"].clip(lower=0.0)
    return scaled[list(MEASURE_NAMES)]


def oriented(table: pd.DataFrame) -> pd.DataFrame:
    """The measures with signs such that higher is more isotropic; I(W) as ``log10`` (ranks unchanged, no underflow ties)."""
    values = table[list(MEASURE_NAMES)].copy()
    values["iw"] = table["log10_iw"]
    for measure in MEASURES:
        if measure.isotropic == "low":
            values[measure.name] = -values[measure.name]
    return values


def kendall_matrix(values) -> np.ndarray:
    """Kendall's tau-b between every pair of columns, each pair over the rows where both are defined.

    Parameters
    ----------
    values : array_like of shape (n_rows, n_columns)
        NaN where a column is undefined; repeated rows (a bootstrap resample) are ties.

    Returns
    -------
    ndarray of shape (n_columns, n_columns)
        Symmetric; NaN for a pair with fewer than 2 untied pairs of rows.
    """
    values = np.asarray(values, dtype=float)
    upper = np.triu_indices(len(values), k=1)
    signs = np.sign(values[:, None, :] - values[None, :, :])[upper]  # (n_pairs, n_columns); NaN where undefined
    defined = ~np.isnan(signs)
    signs = np.where(defined, signs, 0.0)
    numerator = signs.T @ signs
    squared = signs**2
    denominator = np.sqrt((squared.T @ defined) * (defined.T @ squared))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, numerator / denominator, np.nan)


def mean_kendall(values: np.ndarray) -> np.ndarray:
    """Kendall matrix of each replicate (axis 1) of a (n_cells, n_replicates, n_measures) array, averaged."""
    with np.errstate(invalid="ignore"):
        return np.nanmean(np.stack([kendall_matrix(values[:, r]) for r in range(values.shape[1])]), axis=0)


def replicate_array(by_replicate: pd.DataFrame) -> tuple[np.ndarray, list]:
    """Oriented measures as (n_cells, n_replicates, n_measures), cells in order of first appearance."""
    cells = list(dict.fromkeys(zip(by_replicate.space, by_replicate.layer)))
    values = oriented(by_replicate)
    replicates = sorted(by_replicate.replicate.unique())
    array = np.full((len(cells), len(replicates), len(MEASURE_NAMES)), np.nan)
    position = {cell: i for i, cell in enumerate(cells)}
    for index, row in zip(values.index, by_replicate.itertuples()):
        array[position[row.space, row.layer], replicates.index(row.replicate)] = values.loc[index].to_numpy()
    return array, cells


def agreement_table(by_replicate: pd.DataFrame, *, n_resamples: int = 1000, level: float = 0.95,
                    random_state: int = 0) -> pd.DataFrame:
    """Kendall's tau-b of every pair of measures over the cells, with a bootstrap interval.

    tau is computed on the oriented measures (:func:`oriented`) in each token replicate and averaged
    over replicates; the interval is a percentile bootstrap that resamples the cells and the
    replicates independently (crossed), so it covers which layers and models were run and which
    tokens were drawn.

    Parameters
    ----------
    by_replicate : pandas.DataFrame
        :func:`~isolib.studies.every_measure.compute.measure_spaces`' first table.
    n_resamples, level, random_state

    Returns
    -------
    pandas.DataFrame, one row per ordered pair (the diagonal included)
        ``measure``, ``other``, ``tau``, ``low``, ``high``, ``n_cells``.
    """
    array, cells = replicate_array(by_replicate)
    tau = mean_kendall(array)
    generator = np.random.default_rng(random_state)
    n_cells, n_replicates = array.shape[:2]
    resampled = np.stack([mean_kendall(array[generator.integers(0, n_cells, n_cells)]
                                        [:, generator.integers(0, n_replicates, n_replicates)])
                          for _ in range(n_resamples)])
    with np.errstate(invalid="ignore"):
        low, high = np.nanquantile(resampled, [(1 - level) / 2, (1 + level) / 2], axis=0)
    defined = ~np.isnan(array[:, 0])
    rows = [{"measure": a, "other": b, "tau": tau[i, j], "low": low[i, j], "high": high[i, j],
             "n_cells": int((defined[:, i] & defined[:, j]).sum())}
            for i, a in enumerate(MEASURE_NAMES) for j, b in enumerate(MEASURE_NAMES)]
    return pd.DataFrame(rows)


def _direction(low: float, high: float, median: float, tolerance: float) -> str:
    if not np.isfinite(median):
        return "n/a"
    if -tolerance <= low and high <= tolerance:
        return "unchanged"
    if low > 0:
        return "more isotropic"
    if high < 0:
        return "less isotropic"
    return "either way"


def sensitivity_table(by_replicate: pd.DataFrame, changed: pd.DataFrame, *, tolerance: float = 0.01,
                      n_resamples: int = 2000, level: float = 0.95, random_state: int = 0) -> pd.DataFrame:
    """How each change moves each measure, on the isotropy scale, with an interval over cells.

    Parameters
    ----------
    by_replicate, changed : pandas.DataFrame
        :func:`~isolib.studies.every_measure.compute.measure_spaces`' tables: each changed replicate is
        compared with the same replicate unchanged, and a cell's change is the mean over its replicates.
    tolerance : float
        A change whose whole interval lies within +-``tolerance`` leaves the measure "unchanged".
    n_resamples, level, random_state
        The percentile bootstrap of the median over cells.

    Returns
    -------
    pandas.DataFrame, one row per (change, measure)
        ``change``, ``measure``, ``median`` (median over cells of mean after - before on
        :func:`isotropy_scale`: positive is towards isotropy), ``low``, ``high``, ``direction``
        ("more isotropic", "less isotropic", "unchanged", "either way", "n/a"), ``n_cells``, and
        ``raw_median`` with ``raw_low`` and ``raw_high`` (the median change in the measure's own units,
        I(W) as ``log10``, and its interval over the same resampled cells).
    """
    keys = ["space", "layer", "replicate"]
    before = by_replicate.set_index(keys)
    scaled_before = isotropy_scale(before)
    generator = np.random.default_rng(random_state)
    rows = []
    for change in CHANGES:
        after = changed[changed.change == change].set_index(keys)
        for name in MEASURE_NAMES:
            if after.empty:
                rows.append({"change": change, "measure": name, "median": np.nan, "low": np.nan, "high": np.nan,
                             "direction": "n/a", "n_cells": 0, "raw_median": np.nan, "raw_low": np.nan,
                             "raw_high": np.nan})
                continue
            column = "log10_iw" if name == "iw" else name
            cells = pd.DataFrame({
                "scaled": _cell_means(isotropy_scale(after)[name] - scaled_before.loc[after.index, name]),
                "raw": _cell_means(after[column] - before.loc[after.index, column])}).dropna(subset=["scaled"])
            picks = generator.integers(0, len(cells), (n_resamples, len(cells))) if len(cells) else None
            median, low, high = _median_interval(cells.scaled.to_numpy(), picks, level)
            raw_median, raw_low, raw_high = _median_interval(cells.raw.to_numpy(), picks, level)
            rows.append({"change": change, "measure": name, "median": median, "low": low, "high": high,
                         "direction": _direction(low, high, median, tolerance), "n_cells": len(cells),
                         "raw_median": raw_median, "raw_low": raw_low, "raw_high": raw_high})
    return pd.DataFrame(rows)


def _cell_means(differences: pd.Series) -> pd.Series:
    """Per cell (``space``, ``layer``), the mean of its replicates' differences (missing ones left out)."""
    return differences.groupby(level=["space", "layer"], sort=False).mean()


def _median_interval(values: np.ndarray, picks: np.ndarray | None, level: float) -> tuple[float, float, float]:
    """The median of ``values`` and its percentile bootstrap interval over the resamples ``picks`` (rows of indices)."""
    if picks is None or np.isnan(values).all():
        return np.nan, np.nan, np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a resample of missing values only
        draws = np.nanmedian(values[picks], axis=1)
    low, high = np.nanquantile(draws, [(1 - level) / 2, (1 + level) / 2])
    return float(np.nanmedian(values)), float(low), float(high)


def cell_table(by_replicate: pd.DataFrame) -> pd.DataFrame:
    """Every measure of each (model, view, layer) cell: the mean over its token samples, their spread, its size.

    Returns
    -------
    pandas.DataFrame, one row per cell in order of first appearance
        ``space``, ``model``, ``view``, ``layer``, each measure and ``log10_iw`` (the mean), each with ``_std``
        (the standard deviation over the samples), ``dim`` and ``n_points`` (of the first sample).
    """
    keys, numbers = ["space", "model", "view", "layer"], [*MEASURE_NAMES, "log10_iw"]
    per_cell = by_replicate.groupby(keys, sort=False)
    measures = per_cell[numbers].mean().reset_index()
    measures = measures.merge(per_cell[numbers].std().add_suffix("_std").reset_index(), on=keys)
    return measures.merge(per_cell[["dim", "n_points"]].first().reset_index(), on=keys)


def rogue_table(cells: pd.DataFrame, resamples: pd.DataFrame, *, level: float = 0.95) -> pd.DataFrame:
    """:func:`~isolib.studies.every_measure.compute.rogue_shares`' cells, with the percentile interval over windows.

    Returns
    -------
    pandas.DataFrame, one row per cell
        The cells' columns, with ``top_share_low`` and ``top_share_high`` after ``top_share``: the
        ``level`` percentile interval of the top coordinates' share over the resamples of the windows.
    """
    ends = {}
    for (space, layer), shares in resamples.groupby(["space", "layer"], sort=False):
        ends[space, layer] = np.nanquantile(shares.top_share.to_numpy(), [(1 - level) / 2, (1 + level) / 2])
    low, high = (np.array([float(ends[space, layer][end]) for space, layer in zip(cells.space, cells.layer)])
                 for end in (0, 1))
    table = cells.copy()
    at = table.columns.get_loc("top_share") + 1
    table.insert(at, "top_share_high", high)
    table.insert(at, "top_share_low", low)
    return table
