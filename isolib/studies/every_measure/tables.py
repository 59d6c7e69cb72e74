"""The tables read off the measurements: one scale for every measure, their agreement, what moves them, the rogue shares.

Functions of measured values only (the evidence tables of
:mod:`~isolib.studies.every_measure.compute`), used by the claims and the notebook alike. Those the model
card reads too are in :mod:`isolib.measures` and imported here:

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
Each measure has an *isotropic end* (:attr:`isolib.measures.Measure.isotropic`:
"high" for IsoScore, "low" for the average cosine). Agreement is computed on the *oriented* values (a
measure whose isotropic end is low is negated), so tau = 1 means two measures rank the cells the same
way from least to most isotropic. Changes are compared on one scale, :func:`isotropy_scale`: every
measure mapped to [0, 1] with 1 at its isotropic end (``1 - |cos|`` for a mean cosine, ``1 - share``
for a variance share, LID over the dimension, ``1 - max(silhouette, 0)``, and I(W), which spans
hundreds of orders of magnitude, as ``1 / (1 + |log10 I(W)|)``), so a change of +0.1 reads about the
same for every measure: a tenth of the way towards isotropy.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from isolib.measures import (
    agreement_table,
    cell_table,
    isoscore_of_variances,
    kendall_matrix,
    mean_kendall,
    oriented,
    replicate_array,
    rogue_table,
)
from isolib.studies.every_measure.settings import CHANGES, MEASURE_NAMES

__all__ = ["isoscore_of_variances", "isotropy_scale", "oriented", "kendall_matrix", "mean_kendall", "replicate_array",
           "agreement_table", "sensitivity_table", "cell_table", "rogue_table"]


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


