"""The embedding-optimisation probe of Mickus et al. ("Isotropy, Clusters, and Classifiers").

The embeddings themselves are trainable parameters (initialised from the given
vectors) with a linear classifier on top. Each update takes the gradient of the
loss over the whole data set and one Adam step (PyTorch defaults). IsoScore and
the silhouette of the current embeddings are recorded along the way; the paper
finds IsoScore falling while silhouette rises, strongly anti-correlated.

Setups of the paper and how to express them (parameter counts as in its Table 1):

(i)   polarity, 10,662 x 384 embeddings, 2-way softmax without bias:
      ``train_probe(X, y, bias=False)`` -> 10,662 x 384 + 768 parameters.
(ii)  SNLI, 12,982 unique sentences x 384, pairs as [u; v], 3-way softmax with bias:
      ``train_probe(X_unique, y_pairs, item_index=pairs)`` -> 12,982 x 384 + 2,307.
GLUE  one vector per unique sentence (CoLA: 8,532 for 8,551 items), ``item_index`` of shape
      (n_items,) for single sentences, (n_pairs, 2) for pairs.
(iii) POS multi-label, per-label sigmoid: ``train_probe(X, Y, loss="sigmoid")``.
(iv)  26 noun supersenses over 300-d vectors, sigmoid with bias:
      ``train_probe(X, Y, loss="sigmoid")`` -> 2,275 x 300 + 26 x 301.

Labelling rules for the metrics
-------------------------------
* Multi-label targets: each distinct label vector (row of ``y``) is one silhouette label.
* Indexed inputs (``item_index``): IsoScore is computed on the unique sentence
  embeddings (the parameters; the paper computes IsoScore "on unpaired
  embeddings"), silhouette on the classifier inputs -- one per labelled item, the pair
  representations [u; v] for pairs -- with the items' labels, since only items carry a
  label (a premise occurs in pairs of different classes).

Controls
--------
* Shuffled labels: pass a permutation of ``y`` as ``y`` and the true labels as
  ``other_labels={"true": y}``: the silhouette is then recorded against both.
* ``label_free=True``: the same probe, loss and optimiser with every item's target
  uniform, so the objective ignores the labels.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from functools import partial

import numpy as np
import pandas as pd
import torch
from scipy import stats
from torch import nn
from tqdm.auto import tqdm

from isolib._checks import as_points, check_int, rng, sample_rows
from isolib import metrics
from isolib._progress import show_progress
from isolib.steps import memoized
from isolib.metrics import isoscore, silhouette, silhouettes

__all__ = ["EmbeddingProbe", "make_probe", "train_probe", "correlations"]

LOSSES = ("softmax", "sigmoid")
TRACE_COLUMNS = ["seed", "update", "loss", "isoscore", "silhouette"]


class EmbeddingProbe(nn.Module):
    """Trainable embeddings with a linear classifier on top.

    Parameters
    ----------
    embeddings : Tensor of shape (n_points, dim)
        Initial values; copied into a trainable parameter.
    n_outputs : int
        Number of classes (softmax) or labels (sigmoid).
    bias : bool
        Whether the linear layer has a bias.
    paired : bool
        If True the classifier reads the concatenation [u; v] of two embeddings
        (input size ``2 * dim``), selected by the ``item_index`` given to ``forward``.
    """

    def __init__(self, embeddings: torch.Tensor, n_outputs: int, *, bias: bool = True, paired: bool = False):
        super().__init__()
        self.embeddings = nn.Parameter(embeddings.detach().clone())
        in_features = embeddings.shape[1] * (2 if paired else 1)
        self.classifier = nn.Linear(in_features, n_outputs, bias=bias, dtype=embeddings.dtype, device=embeddings.device)

    def inputs(self, item_index: torch.Tensor | None = None) -> torch.Tensor:
        """Classifier inputs, shape (n_items, in_features).

        The embeddings themselves (``item_index`` None), the rows ``item_index`` of shape (n_items,)
        selects, or the [u; v] rows of the pairs ``item_index`` of shape (n_pairs, 2) selects.
        """
        if item_index is None:
            return self.embeddings
        if item_index.ndim == 1:
            return self.embeddings[item_index]
        return torch.cat([self.embeddings[item_index[:, 0]], self.embeddings[item_index[:, 1]]], dim=1)

    def forward(self, item_index: torch.Tensor | None = None) -> torch.Tensor:
        """Logits, shape (n_items, n_outputs)."""
        return self.classifier(self.inputs(item_index))

    @property
    def n_parameters(self) -> int:
        """Number of trainable scalars: embeddings plus classifier weights and bias."""
        return sum(parameter.numel() for parameter in self.parameters())


def _check_item_index(item_index, n_points: int) -> np.ndarray:
    index = np.asarray(item_index)
    well_shaped = index.ndim == 1 or (index.ndim == 2 and index.shape[1] == 2)
    if not well_shaped or not np.issubdtype(index.dtype, np.integer):
        raise ValueError("item_index must be an integer array of shape (n_items,) or (n_pairs, 2), got "
                         f"{index.dtype} {index.shape}.")
    if index.size and (index.min() < 0 or index.max() >= n_points):
        raise ValueError(f"item_index must index rows 0 .. {n_points - 1} of X.")
    return index


def _encode_targets(y, loss: str, n_items: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Targets for the loss, silhouette labels (one per distinct target), and output count."""
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}.")
    targets = np.asarray(y)
    n_rows = len(targets) if targets.ndim else 0
    if n_rows != n_items:
        raise ValueError(f"y has {n_rows} rows but there are {n_items} items to classify (rows of X, or of item_index).")
    if loss == "softmax":
        if targets.ndim != 1:
            raise ValueError(f"y must be 1-D (one class per item) for loss='softmax', got shape {targets.shape}.")
        classes, codes = np.unique(targets, return_inverse=True)
        return codes, codes, len(classes)
    if targets.ndim != 2 or not np.isin(targets, (0, 1)).all():
        raise ValueError("y must be a 0/1 array of shape (n_items, n_labels) for loss='sigmoid'.")
    # Each distinct label vector is one silhouette label (the paper's multi-label rule).
    _, label_vector_codes = np.unique(targets, axis=0, return_inverse=True)
    return targets.astype(np.float32), label_vector_codes.ravel(), targets.shape[1]


def _sample(n_rows: int, sample_size: int | None, generator: np.random.Generator) -> np.ndarray | slice:
    """Rows a metric sees: a fresh sample (:func:`~isolib._checks.sample_rows`), or every row as a slice,
    which selects without copying (a copy of setup (i)'s embeddings costs milliseconds per update)."""
    if sample_size is None or sample_size >= n_rows:
        return slice(None)
    return sample_rows(n_rows, sample_size, generator)


def make_probe(X, n_outputs: int, *, bias: bool = True, paired: bool = False, device: str = "cpu") -> EmbeddingProbe:
    """Build the probe for embeddings ``X`` with the current torch random state.

    Parameters
    ----------
    X : array_like of shape (n_points, dim)
    n_outputs : int
        Classes (softmax) or labels (sigmoid).
    bias : bool
    paired : bool
        Classifier over [u; v] concatenations (SNLI setup).
    device : str
        Torch device, e.g. ``"cpu"`` or ``"cuda"``.

    Returns
    -------
    EmbeddingProbe
        Float32 (PyTorch's default, as in the paper); ``.n_parameters`` gives the
        count to compare with the paper's Table 1.
    """
    points = as_points(X, dtype=np.float32)
    n_outputs = check_int(n_outputs, "n_outputs", low=1)
    return EmbeddingProbe(torch.from_numpy(points).to(device), n_outputs, bias=bias, paired=paired)


def train_probe(
    X,
    y,
    *,
    loss: str = "softmax",
    bias: bool = True,
    n_updates: int = 1000,
    every: int = 1,
    lr: float = 1e-3,
    seeds: Sequence[int] = (0, 1, 2, 3, 4),
    item_index=None,
    sample_size: int | None = None,
    label_free: bool = False,
    other_labels: dict | None = None,
    device: str = "cpu",
    progress: bool | None = None,
    resume: bool = False,
) -> pd.DataFrame:
    """Optimise embeddings for a linear classifier and trace IsoScore and silhouette.

    For each seed: the classifier is initialised under ``torch.manual_seed(seed)``
    (PyTorch's default ``nn.Linear`` initialisation), the embeddings are copied from
    ``X``, and ``n_updates`` full-batch Adam steps are taken. The loss, IsoScore and
    silhouette of the current parameters are recorded before the first update and
    after every ``every``-th update (and after the last).

    Parameters
    ----------
    X : array_like of shape (n_points, dim)
        Initial embeddings: one per item, or one per unique sentence with ``item_index``.
    y : array_like
        ``loss="softmax"``: shape (n_items,), class labels of any type (cross-entropy).
        ``loss="sigmoid"``: shape (n_items, n_labels), 0/1 (binary cross-entropy per label).
        ``n_items`` is ``n_points``, or the length of ``item_index``.
    loss : {"softmax", "sigmoid"}
    bias : bool
        Bias in the linear layer (setup (i) of the paper has none).
    n_updates : int
        Number of optimiser steps (paper: 1,000; GLUE appendix: 250).
    every : int
        Record the metrics every ``every`` updates (paper: 1).
    lr : float
        Adam learning rate (PyTorch default 1e-3; betas, eps: defaults).
    seeds : sequence of int
        One run per seed (paper: 5).
    item_index : array_like of int, shape (n_items,) or (n_pairs, 2), optional
        The row of ``X`` each item reads (one vector per unique sentence, items repeating a
        sentence share it), or the two rows forming each pair, read as [X[i]; X[j]].
    sample_size : int, optional
        Compute each metric on a fresh random sample of this many rows when there
        are more (the paper's GLUE appendix); the sample is drawn from a generator
        seeded with the run's seed, so runs stay reproducible.
    label_free : bool
        A control: the loss ignores ``y``. Cross-entropy against the uniform distribution over
        the classes (softmax), binary cross-entropy against 1/2 for every label (sigmoid): every
        item has the same target, so the objective carries no label. ``y`` still sets the number
        of outputs and the silhouette's labels.
    other_labels : dict of str to array_like, optional
        Other labels of the same items, shaped like ``y`` (e.g. the true labels of a run trained
        on shuffled ones): the silhouette of the same points against each is recorded in a column
        ``silhouette_<name>`` (the pairwise distances are computed once for all of them).
    device : str
        Torch device for training; the metrics are computed on CPU (float32 values,
        sums accumulated in float64 by :mod:`isolib.metrics`). Runs are
        deterministic per seed on CPU; CUDA's scatter-add in the backward pass of
        the pair lookup is not.
    progress : bool, optional
        Show a tqdm bar; None: only when interactive (a terminal or a Jupyter
        kernel) unless the environment variable ``ISOLIB_PROGRESS`` is 0 or 1.
    resume : bool
        Store each seed's trace in the cache as it is finished (:func:`isolib.steps.memoized`, keyed
        by the vectors, targets, options, seed and the source of this module and :mod:`isolib.metrics`)
        and reuse the stored ones, so a stopped run resumes at the seed it was on.

    Returns
    -------
    DataFrame
        Columns ``seed``, ``update``, ``loss``, ``isoscore``, ``silhouette`` (then one
        ``silhouette_<name>`` per entry of ``other_labels``): one row per seed and recorded
        update. ``trace.attrs["n_parameters"]`` holds the number of trainable parameters.

    Raises
    ------
    ValueError
        On NaN/infinity, mismatched lengths, a malformed ``y`` or ``item_index``,
        fewer than 2 distinct labels (silhouette undefined), or non-positive counts.
    """
    initial = as_points(X, min_samples=2, dtype=np.float32)
    index = None if item_index is None else _check_item_index(item_index, len(initial))
    n_items = len(initial) if index is None else len(index)
    targets, silhouette_labels, n_outputs = _encode_targets(y, loss, n_items)
    if len(np.unique(silhouette_labels)) < 2:
        raise ValueError("y has a single distinct label, so the silhouette is undefined; at least 2 are needed.")
    other_labels = dict(other_labels or {})
    # Each labelling of the items as silhouette labels, the trained one first (one distance computation for all).
    partitions = np.stack([silhouette_labels, *(_encode_targets(labels, loss, n_items)[1]
                                                for labels in other_labels.values())])
    n_updates = check_int(n_updates, "n_updates", low=1)
    every = check_int(every, "every", low=1)
    if sample_size is not None:
        sample_size = check_int(sample_size, "sample_size", low=3)
    if not lr > 0:
        raise ValueError(f"lr must be positive, got {lr!r}.")
    seeds = [check_int(seed, "each seed", low=0) for seed in seeds]
    if not seeds:
        raise ValueError("seeds is empty; give at least one seed.")
    if label_free:  # the same target for every item: 1/n_outputs for each class, or 1/2 for each label
        targets = np.full((n_items, n_outputs), 1 / n_outputs if loss == "softmax" else 0.5, dtype=np.float32)
    target_tensor = torch.as_tensor(targets, device=device)
    objective = nn.CrossEntropyLoss() if loss == "softmax" else nn.BCEWithLogitsLoss()

    inputs = dict(initial=initial, index=index, targets=targets, partitions=partitions, loss=loss, bias=bias,
                  n_updates=n_updates, every=every, lr=lr, sample_size=sample_size, device=device)
    runs = []
    with tqdm(total=len(seeds) * n_updates, disable=not show_progress(progress), desc="probe") as bar:
        for seed in seeds:
            before = bar.n
            run = memoized("probe_traces", {**inputs, "seed": seed},
                           partial(_train_seed, initial, index, target_tensor, objective, partitions, n_outputs,
                                   bias=bias, n_updates=n_updates, every=every, lr=lr, sample_size=sample_size,
                                   seed=seed, device=device, bar=bar),
                           code=[sys.modules[__name__], metrics], store=resume)
            bar.update(n_updates - (bar.n - before))  # a stored run's updates count as done
            runs.append(run)
    trace = pd.concat([run["trace"] for run in runs], ignore_index=True)
    trace.columns = TRACE_COLUMNS + [f"silhouette_{name}" for name in other_labels]
    trace.attrs["n_parameters"] = runs[0]["n_parameters"]
    return trace


def _train_seed(initial: np.ndarray, index: np.ndarray | None, target_tensor: torch.Tensor, objective: nn.Module,
                partitions: np.ndarray, n_outputs: int, *, bias: bool, n_updates: int, every: int, lr: float,
                sample_size: int | None, seed: int, device: str, bar) -> dict:
    """One seed of :func:`train_probe`: ``{"trace": rows of the trace, "n_parameters": int}``."""
    # fork_rng keeps the caller's global torch random state untouched.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        probe = make_probe(initial, n_outputs, bias=bias, paired=index is not None and index.ndim == 2, device=device)
    index_tensor = None if index is None else torch.as_tensor(index, dtype=torch.long, device=device)
    optimiser = torch.optim.Adam(probe.parameters(), lr=lr)
    sampler = rng(seed)
    rows = []
    for update in range(n_updates + 1):
        optimiser.zero_grad()
        current_loss = objective(probe(index_tensor), target_tensor)
        if update % every == 0 or update == n_updates:
            with torch.no_grad():
                embeddings = probe.embeddings.cpu().numpy()
                clustered = embeddings if index is None else probe.inputs(index_tensor).cpu().numpy()
            iso_rows = _sample(len(embeddings), sample_size, sampler)
            # One vector per item: both metrics see the same sample; indexed items are sampled apart.
            sil_rows = iso_rows if index is None else _sample(len(clustered), sample_size, sampler)
            scores = (silhouettes(clustered[sil_rows], partitions[:, sil_rows]) if len(partitions) > 1
                      else [silhouette(clustered[sil_rows], partitions[0, sil_rows])])
            rows.append((seed, update, current_loss.item(), isoscore(embeddings[iso_rows]), *scores))
        if update < n_updates:
            current_loss.backward()
            optimiser.step()
            bar.update()
    return {"trace": pd.DataFrame(rows), "n_parameters": probe.n_parameters}


def correlations(trace: pd.DataFrame) -> pd.DataFrame:
    """Pearson and Spearman correlation between IsoScore and silhouette, per seed.

    Parameters
    ----------
    trace : DataFrame
        Output of :func:`train_probe` (columns ``seed``, ``isoscore``, ``silhouette``).

    Returns
    -------
    DataFrame
        Indexed by ``seed``, columns ``pearson`` and ``spearman`` (coefficients in [-1, 1]).

    Raises
    ------
    ValueError
        If a column is missing or a seed has fewer than 2 recorded updates.
    """
    missing = {"seed", "isoscore", "silhouette"} - set(trace.columns)
    if missing:
        raise ValueError(f"trace lacks the column(s) {sorted(missing)}; pass the output of train_probe.")
    counts = trace.groupby("seed").size()
    if (counts < 2).any():
        raise ValueError(f"seed {counts.index[counts < 2][0]} has fewer than 2 recorded updates; no correlation.")

    def per_seed(run: pd.DataFrame) -> pd.Series:
        return pd.Series(
            {
                "pearson": stats.pearsonr(run["isoscore"], run["silhouette"]).statistic,
                "spearman": stats.spearmanr(run["isoscore"], run["silhouette"]).statistic,
            }
        )

    return trace.groupby("seed")[["isoscore", "silhouette"]].apply(per_seed)
