"""The twelve measures of one set of points and the changes of the points: names, ends, and the tables read off them.

Shared by notebook 05 (:mod:`isolib.studies.every_measure`) and the model card (:mod:`isolib.card`);
nothing here computes on points (:mod:`isolib.measuring` does):

* :class:`Measure`, :data:`MEASURES`, :data:`LABELS` -- each measure's name, label, family, source and
  isotropic end; :data:`CHANGES` -- the controlled changes of the points;
* :func:`isoscore_of_variances` -- IsoScore's closed form from the variances along the principal axes;
* :func:`oriented`, :func:`kendall_matrix`, :func:`agreement_table` -- the measures oriented to isotropy
  and Kendall's tau-b of every pair of them over cells (layers, models), with a bootstrap interval
  crossed over cells and token samples;
* :func:`cell_table` -- every measure of each cell, the mean and spread over its token samples;
* :func:`rogue_table` -- the rogue shares of each cell with their interval over windows.

Orientation: each measure has an *isotropic end* (:attr:`Measure.isotropic`: "high" for IsoScore, "low"
for the average cosine). Agreement is computed on the *oriented* values (a measure whose isotropic end is
low is negated), so tau = 1 means two measures rank the cells the same way from least to most isotropic.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["Measure", "MEASURES", "MEASURE_NAMES", "MEASURE_BY_NAME", "LABELS", "CHANGES", "TOP_COORDINATES",
           "isoscore_of_variances", "oriented", "kendall_matrix", "mean_kendall", "replicate_array",
           "agreement_table", "cell_table", "rogue_table"]


@dataclass(frozen=True)
class Measure:
    """One measure of the table.

    Attributes
    ----------
    name : str
        Its column in every table.
    label : str
        How figures and the guide name it.
    family : str
        ``cosine``, ``variance``, ``isotropy score``, ``neighbours`` or ``clusters``.
    source : str
        Who introduced or used it (e.g. ``Ethayarajh 2019``).
    isotropic : {"high", "low"}
        Which end is isotropic.
    """

    name: str
    label: str
    family: str
    source: str
    isotropic: str


MEASURES = (
    Measure("average_cosine", "average cosine", "cosine", "Ethayarajh 2019", "low"),
    Measure("anisotropy_baseline", "anisotropy baseline", "cosine", "Ethayarajh 2019", "low"),
    Measure("s_inter", "S_inter", "cosine", "Cai et al. 2021", "low"),
    Measure("s_intra", "S_intra", "cosine", "Cai et al. 2021", "low"),
    Measure("mev_baseline", "MEV baseline", "variance", "Ethayarajh 2019", "low"),
    Measure("iw", "I(W)", "isotropy score", "Mu & Viswanath 2018", "high"),
    Measure("isoscore", "IsoScore", "isotropy score", "Rudman et al. 2022", "high"),
    Measure("effective_rank", "effective rank / d", "variance", "Roy & Vetterli 2007", "high"),
    Measure("top_dimension_share", "top-coordinate variance share", "variance", "Timkey & van Schijndel 2021", "low"),
    Measure("top_direction_share", "top-PC variance share", "variance", "Mu & Viswanath 2018", "low"),
    Measure("lid", "LID", "neighbours", "Cai et al. 2021", "high"),
    Measure("silhouette", "best k-means silhouette", "clusters", "Cai et al. 2021", "low"),
)

MEASURE_NAMES = tuple(measure.name for measure in MEASURES)

MEASURE_BY_NAME = {measure.name: measure for measure in MEASURES}

# How tables and figures name each measure, and I(W) on its log scale.
LABELS = {measure.name: measure.label for measure in MEASURES} | {"log10_iw": "log10 I(W)"}


# The controlled changes of the points (item 3 of the issue), in the order of the sensitivity table.
CHANGES = {
    "centre": "global centring",
    "abtt": "all-but-the-top (ABTT)",
    "cluster": "cluster-based method (03)",
    "whiten": "whitening (ZCA)",
    "standardise": "standardisation of each coordinate",
    "drop_top_1": "top coordinate removed",
    "drop_top_3": "top 3 coordinates removed",
    "rotate": "random rotation",
    "unit_length": "every vector scaled to unit length",
    "drop_first_position": "decoder's first position removed",
    "scale": "uniform scaling",
    "outlier": "one planted outlier",
    "fewer_points": "fewer points",
}


# The top coordinates (by their part of the average cosine) whose share of it the rogue-dimension claim reads.
TOP_COORDINATES = 3



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



def oriented(table: pd.DataFrame) -> pd.DataFrame:
    """The measures with signs such that higher is more isotropic; I(W) as ``log10`` (ranks unchanged, no underflow ties)."""
    values = table[list(MEASURE_NAMES)].copy()
    values["iw"] = table["log10_iw"]
    for measure in MEASURES:
        if measure.isotropic == "low":
            values[measure.name] = -values[measure.name]
    return values



@functools.lru_cache(maxsize=64)
def _upper_triangle(n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """The pairs of rows ``i < j`` (:func:`numpy.triu_indices`), kept: a bootstrap asks for the same ones each time."""
    return np.triu_indices(n_rows, k=1)


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
    upper = _upper_triangle(len(values))
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
        :func:`isolib.measuring.measure_spaces`' first table.
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
    """:func:`isolib.measuring.rogue_shares`' cells, with the percentile interval over windows.

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
