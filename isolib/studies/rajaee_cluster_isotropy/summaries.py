"""Notebook 03's evidence summarised as its tables show it and its claims read it.

* :func:`method_summary` -- each method's scores, mean and spread over seeds;
* :func:`compare_methods` -- each method against its control (:data:`COMPARISONS`), paired over the
  sentence pairs and crossed with the seeds;
* :func:`grid_summary` -- the grid of (k, n_pc), mean and spread over seeds;
* :func:`probe_summary` -- the SST-2 probe with and without the method, paired over dev sentences.

Nothing here loads a model or computes a stored step: it reads evidence tables.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from isolib.findings import compare_correlations, compare_with_control
from isolib.studies.rajaee_cluster_isotropy.protocol import MEASURES, PROPOSED

__all__ = ["COMPARISONS", "method_summary", "compare_methods", "grid_summary", "probe_summary"]

# name -> (method, control, the method's expected direction); a control of None is the best of the other
# rows on that model and dataset (by mean Spearman).
COMPARISONS = {
    "proposed vs pre-trained": (PROPOSED, "pre-trained", True),
    "proposed vs best other": (PROPOSED, None, True),
    "Mean + PCA vs pre-trained": ("Mean + PCA", "pre-trained", False),
    "K-means + Mean vs Mean": ("K-means + Mean", "Mean", True),
}
def method_summary(results: pd.DataFrame, by: Sequence[str] = ("method",)) -> pd.DataFrame:
    """Mean and standard deviation over seeds (ddof = 1; 0 for a deterministic method) of every score."""
    grouped = results.groupby(list(by), sort=False)[MEASURES]
    summary = grouped.mean().join(grouped.std(ddof=1).fillna(0.0).add_suffix("_std"))
    return summary.join(grouped.size().rename("n_seeds")).reset_index()


def _by_seed(rows: pd.DataFrame, column: str) -> np.ndarray:
    """``column`` of a long table as an array (n_items, n_seeds), the seeds in the order the table gives them."""
    return np.column_stack([run[column].to_numpy() for _, run in rows.groupby("seed", sort=False, dropna=False)])


def compare_methods(per_seed: pd.DataFrame, similarities: pd.DataFrame, gold: pd.DataFrame, *,
                    n_resamples: int = 2000, random_state: int = 0) -> pd.DataFrame:
    """Each comparison of :data:`COMPARISONS` per model and dataset, paired over sentence pairs and crossed with seeds.

    Parameters
    ----------
    per_seed, similarities, gold : pandas.DataFrame
        The evidence of :func:`isolib.studies.rajaee_cluster_isotropy.compute.sts_evidence`: each row's
        scores (``sts_per_seed``), each pair's cosine per row (``sts_similarities``) and the gold scores
        (``sts_gold``).
    n_resamples, random_state
        Of the bootstrap (:func:`isolib.findings.compare_correlations`).

    Returns
    -------
    pandas.DataFrame
        One row per model, dataset and comparison whose rows were run: ``comparison``, ``method``,
        ``control``, ``higher`` (the expected direction), ``spearman`` and ``control_spearman`` (x 100,
        means over seeds), ``difference`` (x 100), ``low`` and ``high`` (its 95% interval over pairs
        crossed with seeds), ``borderline`` (the interval straddles 0) and ``outcome`` (``higher``,
        ``lower`` or ``within noise``).
    """
    scored = dict(list(similarities.groupby(["model", "dataset"], sort=False)))
    rows = []
    for (model, dataset), runs in per_seed.groupby(["model", "dataset"], sort=False):
        predicted = {method: _by_seed(group, "similarity")
                     for method, group in scored[model, dataset].groupby("method", sort=False)}
        gold_scores = gold[gold.dataset == dataset].gold.to_numpy()
        spearman = runs.groupby("method", sort=False).spearman.mean()
        for name, (method, control, higher) in COMPARISONS.items():
            others = spearman.drop(method, errors="ignore")
            control = control or (others.idxmax() if len(others) else None)
            if method not in predicted or control not in predicted:
                continue
            verdict = compare_correlations(gold_scores, predicted[method], predicted[control], higher=higher,
                                           n_resamples=n_resamples, random_state=random_state)
            low, high = verdict.interval
            outcome = "within noise" if low <= 0 <= high else ("higher" if verdict.value > 0 else "lower")
            rows.append({"model": model, "dataset": dataset, "comparison": name, "method": method, "control": control,
                         "higher": higher, "spearman": spearman[method], "control_spearman": spearman[control],
                         "difference": 100 * verdict.value, "low": 100 * low, "high": 100 * high,
                         "borderline": verdict.borderline, "outcome": outcome})
    return pd.DataFrame(rows, columns=["model", "dataset", "comparison", "method", "control", "higher", "spearman",
                                       "control_spearman", "difference", "low", "high", "borderline", "outcome"])


def grid_summary(per_seed: pd.DataFrame) -> pd.DataFrame:
    """The grid of :func:`isolib.studies.rajaee_cluster_isotropy.compute.sweep`, per model: mean and spread over seeds.

    Parameters
    ----------
    per_seed : pandas.DataFrame
        One row per model, grid point and seed: ``n_clusters``, ``n_pc``, ``seed``, ``spearman``, ``model``,
        ``dataset``, and ``paper_k`` and ``paper_n_pc`` (the paper's setting for that model).

    Returns
    -------
    pandas.DataFrame
        One row per model and point: ``n_clusters``, ``n_pc``, ``spearman`` (mean), ``spearman_std`` (ddof = 1;
        0 with one seed), ``model``, ``dataset``, ``paper_k``, ``paper_n_pc``.
    """
    keys = ["model", "dataset", "paper_k", "paper_n_pc", "n_clusters", "n_pc"]
    rows = []
    for key, group in per_seed.groupby(keys, sort=False):
        values = group.spearman.to_numpy()
        rows.append({**dict(zip(keys, key)), "spearman": values.mean(),
                     "spearman_std": values.std(ddof=1) if len(values) > 1 else 0.0})
    return pd.DataFrame(rows, columns=["n_clusters", "n_pc", "spearman", "spearman_std", *keys[:4]])


def probe_summary(correct: pd.DataFrame) -> pd.DataFrame:
    """The SST-2 probe of several models, summarised: the method against the pre-trained probe.

    Parameters
    ----------
    correct : pandas.DataFrame
        The evidence of :func:`isolib.studies.rajaee_cluster_isotropy.compute.probe_evidence`: ``model``,
        ``method``, ``seed``, ``sentence``, ``correct``, one row per run and dev sentence.

    Returns
    -------
    pandas.DataFrame
        Per model and method: ``accuracy`` and ``accuracy_std`` (over seeds); on the proposed method's
        row, ``difference``, ``low`` and ``high`` (x 100): its accuracy minus the pre-trained probe's,
        paired over dev sentences and crossed with seeds (:func:`isolib.findings.compare_with_control`).
    """
    answers = {key: _by_seed(group, "correct").astype(float)
               for key, group in correct.groupby(["model", "method"], sort=False)}
    rows = []
    for (model, method), ours in answers.items():
        accuracies = ours.mean(axis=0)
        rows.append({"model": model, "method": method, "accuracy": accuracies.mean(),
                     "accuracy_std": accuracies.std(ddof=1) if len(accuracies) > 1 else 0.0,
                     "difference": np.nan, "low": np.nan, "high": np.nan})
        if method == PROPOSED and (model, "pre-trained") in answers:
            control = np.repeat(answers[model, "pre-trained"], ours.shape[1], axis=1)
            verdict = compare_with_control(ours, control)
            rows[-1].update(difference=100 * verdict.value, low=100 * verdict.interval[0],
                            high=100 * verdict.interval[1])
    return pd.DataFrame(rows)
