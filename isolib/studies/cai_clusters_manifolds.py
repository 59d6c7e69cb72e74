"""Cai, Huang, Bian & Church (ICLR 2021), *Isotropy in the contextual embedding space: clusters and manifolds*.

The study asks whether the anisotropy of contextual embeddings is global or an effect of a few
isolated clusters, and how many dimensions the space uses locally. This module turns running text
into the authors' windows, and a layer of token vectors into the paper's measures, computed with
:mod:`isolib.metrics`:

* :func:`isolib.windows.running_text_windows` -- a corpus cut into non-overlapping windows of the model's length;
* :func:`token_types` -- which rows of a layer are analysed, their type, window position and frequency;
* :func:`layer_geometry` -- S_inter, S_intra, k-means chosen by silhouette, S_inter / S_intra inside the
  clusters after per-cluster centring (:func:`per_cluster_similarity`), and LID in four variants;
* :func:`lid_against_n` -- LID as a function of the number of points (contextual and static);
* :func:`assess_findings` -- the paper's claims beside ours, judged by :mod:`isolib.findings`.

Layer indexing
--------------
Ours (the whole project): layer 0 is the input embedding layer, layer L the output of block L. The
authors' code analysed ``hidden_states[1:]``, so **their layer L is our layer L + 1** and our layer 0
has no paper name (:func:`paper_layer`, :func:`layer_name`).

Windows (:func:`isolib.windows.running_text_windows`)
----------------------------------------------------
Each line of the split is tokenised on its own and the pieces are concatenated into one stream (the
authors' procedure; the text of the stream is the lines joined by single spaces). The stream is cut
into consecutive, non-overlapping windows of ``window_length`` tokens *including* the model's own
special tokens ([CLS] and [SEP] for a BERT, none for a decoder), each window ending at a word
boundary (a word is never split between two windows). The short last window is dropped, as in the
authors' code. A window is fed to the model as its text, so a byte-level BPE tokenizer reads a
line's first word with a leading space (inside a window) or the window's first word without one; a
window that re-tokenizes longer than ``window_length`` loses words at its end until it fits.

One departure from the authors' code, about tokens the statistics exclude by default: their BERT
saw [CLS] ... [SEP] around every line, in mid-window; here a window has one [CLS] at its start and
one [SEP] at its end. PTB's ``<unk>`` is read as each tokenizer reads it, as theirs did (MiniLM:
``<``, ``un``, ``##k``, ``>``; MPNet: its own ``<unk>`` token).

Analysed tokens (:func:`token_types`)
-------------------------------------
A token's *type* is its piece without the space marker of byte-level BPE (:func:`isolib.embed.unit_text`).
A **symbol token** is a piece with no letter and no digit (:func:`isolib.embed.is_punctuation`:
``.``, ``,``, ``$``, ``%``, ``<``); every other non-special piece is a **word token**. By default
statistics exclude special tokens and symbol tokens; ``keep_symbols=True`` keeps both, as the
authors' code did (it counted every token as a type). The pieces of PTB's placeholders ``<unk>`` (a
rare word) and ``N`` (a number) are not language: by default they are left out too
(:func:`isolib.windows.placeholder_mask`; ``keep_placeholders=True`` keeps them, as the authors' code did), and
the count left out is reported. A decoder's first window position, the attention sink, is kept in
the ``keep`` view (the authors' protocol) and absorbed by a start token in the ``start_token`` view,
the one judged (:mod:`isolib.embed`, "The first position"; :func:`isolib.findings.judge_decoder_views`).

Clusters and outlier groups (:func:`~isolib.metrics.select_kmeans`, :func:`describe_clusters`)
-------------------------------------------------------------------------------------------
K-means runs ``n_init`` times per k, every run scored by silhouette, so the chosen k comes with
its spread over restarts. A chosen cluster below ``min_cluster_share`` of the tokens, or made mostly
of window-first tokens or placeholder pieces, is an *outlier group*: the space is "dominated by
clusters" only where at least two clusters are not outlier groups.

The paper's core comparison (:func:`centring_units`)
----------------------------------------------------
Per-cluster centring is compared with its control, global centring, on the same units: one random
instance per type, the same tokens in every layer of a model, each compared with the other types
(of its cluster, or of the whole layer) after centring.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from sklearn.decomposition import PCA

import isolib.metrics
from isolib._checks import rng
from isolib.cache import memoized
from isolib.embed import Embeddings, is_punctuation, split_view, unit_text
from isolib.findings import (
    Finding,
    PaperModel,
    Verdict,
    all_of,
    bootstrap_threshold,
    combine_corpora,
    compare_with_control,
    declare,
    judge_decoder_views,
    models_line,
    not_comparable,
    paper_counterpart,
    threshold,
    within,
)
from isolib.metrics import KMeansSelection, centre_per_cluster, lid_mle, s_inter, s_intra, select_kmeans, silhouette
from isolib.windows import placeholder_mask

__all__ = [
    "CITATION",
    "PAPER_MODELS",
    "STAND_INS",
    "TABLE3",
    "TABLE3_STATIC",
    "paper_layer",
    "layer_name",
    "middle_layer",
    "SYMBOLS_VIEW",
    "CLUSTER_COLUMNS",
    "TokenTypes",
    "token_types",
    "describe_clusters",
    "one_instance_per_type",
    "centring_units",
    "ModelGeometry",
    "symbols_view_label",
    "per_cluster_similarity",
    "cluster_means",
    "lid_variants",
    "layer_geometry",
    "geometry_by_layer",
    "lid_against_n",
    "pca_view",
    "counterpart",
    "models_run",
    "layer_findings",
    "describe_symbols",
    "describe_extremes",
    "picture_findings",
    "assess_findings",
]

CITATION = ("Xingyu Cai, Jiaji Huang, Yuchen Bian and Kenneth Church (2021), *Isotropy in the Contextual "
            "Embedding Space: Clusters and Manifolds*, ICLR 2021 (the authors' slides)")
PAPER_MODELS = (PaperModel("bert-base-uncased", "BERT", 13), PaperModel("distilbert-base-uncased", "D-BERT", 7),
                PaperModel("openai-gpt", "GPT", 13), PaperModel("gpt2", "GPT-2", 13), PaperModel("elmo", "ELMo", 3))
# The nearest offline model of the same kind: MiniLM (6 blocks, distilled from a BERT) for DistilBERT,
# MPNet (12 blocks) for BERT, the decoder SmolLM2 for GPT-2 (and GPT).
STAND_INS = {"minilm": "distilbert-base-uncased", "mpnet": "bert-base-uncased", "smollm2": "gpt2"}
# Table 3: average LID with the cosine (the authors' code: 1 - cos, i.e. a squared distance), points n.
TABLE3 = {"bert-base-uncased": (5.6, 1.19e6), "distilbert-base-uncased": (7.3, 1.19e6), "openai-gpt": (6.8, 0.96e6),
          "gpt2": (7.0, 1.09e6), "elmo": (9.1, 0.88e6)}
# How an encoder analysed with special and symbol tokens kept (the authors' setting) is labelled beside its main view.
SYMBOLS_VIEW = " (symbols kept)"
TABLE3_STATIC = {"GloVe (100-d)": (18.0, 1.18e6), "GloVe-2M (300-d)": (26.1, 2.20e6),
                 "word2vec GoogleNews (300-d)": (21.1, 3.00e6)}


# --------------------------------------------------------------------------- layers


def paper_layer(layer: int) -> int | None:
    """The authors' number for our ``layer`` (their layer L is our L + 1); None for our input layer 0."""
    return None if layer == 0 else layer - 1


def layer_name(layer: int) -> str:
    """``"L7 (paper 6)"``: our layer with the authors' number in parentheses (``"L0"`` has none)."""
    theirs = paper_layer(layer)
    return f"L{layer}" if theirs is None else f"L{layer} (paper {theirs})"


def middle_layer(n_layers: int) -> int:
    """Our layer in the middle of the blocks: 7 for a 12-block model (the paper's GPT-2 / BERT layer 6)."""
    return (n_layers - 1) // 2 + 1


# --------------------------------------------------------------------------- analysed tokens


@dataclass(frozen=True)
class TokenTypes:
    """Which rows of an :class:`~isolib.embed.Embeddings` a study analyses, and what they are.

    Attributes
    ----------
    rows : ndarray of int, shape (n_analysed,)
        Rows of the embedding arrays (and of the token table) that are analysed.
    types : ndarray of str, shape (n_analysed,)
        The type of each analysed token (its piece without a space marker).
    positions : ndarray of int, shape (n_analysed,)
        Position of each token in its window (0 = first; [CLS] or a start token where there is one).
    windows : ndarray of int, shape (n_analysed,)
        The window (``sentence_id``) each token is in.
    is_symbol : ndarray of bool, shape (n_analysed,)
        Symbol tokens (no letter, no digit), kept only with ``keep_symbols``.
    is_placeholder : ndarray of bool, shape (n_analysed,)
        Pieces of a corpus placeholder (:func:`isolib.windows.placeholder_mask`), kept only with ``keep_placeholders``.
    frequency : ndarray of int, shape (n_analysed,)
        How often the token's type occurs among the analysed tokens (the authors coloured by it).
    symbol_rows, word_rows : ndarray of int
        All non-special rows that are symbol tokens and word tokens (for the pictures, whatever
        ``keep_symbols`` says).
    n_placeholders_left_out : int
        Tokens that would have been analysed but are pieces of a placeholder (0 with ``keep_placeholders``).
    """

    rows: np.ndarray
    types: np.ndarray
    positions: np.ndarray
    windows: np.ndarray
    is_symbol: np.ndarray
    is_placeholder: np.ndarray
    frequency: np.ndarray
    symbol_rows: np.ndarray
    word_rows: np.ndarray
    n_placeholders_left_out: int = 0


def token_types(tokens: pd.DataFrame, *, keep_symbols: bool = False, keep_placeholders: bool = False,
                max_windows: int | None = None) -> TokenTypes:
    """The analysed tokens of a token table (module docstring, "Analysed tokens").

    Parameters
    ----------
    tokens : pandas.DataFrame
        ``Embeddings.tokens`` (``sentence_id``, ``position``, ``token``, ``word_id``, ``word``, ``is_special``).
    keep_symbols : bool
        Keep special and symbol tokens as types (the authors' code); default: word tokens only.
    keep_placeholders : bool
        Keep the pieces of PTB's ``<unk>`` and ``N`` (the authors' code counted them); default: left out.
    max_windows : int or None
        Analyse only the first ``max_windows`` windows (a smaller budget, for stability checks).

    Returns
    -------
    TokenTypes

    Raises
    ------
    ValueError
        If no token is left to analyse.
    """
    text = tokens.token.map(unit_text)
    symbol = text.map(is_punctuation).to_numpy(dtype=bool)
    special = tokens.is_special.to_numpy(dtype=bool)
    placeholder = placeholder_mask(tokens)
    inside = np.ones(len(tokens), dtype=bool) if max_windows is None else (tokens.sentence_id < max_windows).to_numpy()
    kept = inside if keep_symbols else inside & ~special & ~symbol
    left_out = 0 if keep_placeholders else int((kept & placeholder).sum())
    if not keep_placeholders:
        kept = kept & ~placeholder  # not in place: ``inside`` may be pandas' read-only view
    rows = np.flatnonzero(kept)
    if not len(rows):
        raise ValueError("No token is left to analyse: the windows hold only special, symbol and placeholder tokens.")
    types = text.to_numpy(dtype=object)[rows].astype(str)
    counts = pd.Series(types).value_counts()
    return TokenTypes(
        rows=rows,
        types=types,
        positions=tokens.position.to_numpy()[rows],
        windows=tokens.sentence_id.to_numpy()[rows],
        is_symbol=symbol[rows],
        is_placeholder=placeholder[rows],
        frequency=counts.reindex(types).to_numpy(),
        symbol_rows=np.flatnonzero(inside & ~special & symbol),
        word_rows=np.flatnonzero(inside & ~special & ~symbol),
        n_placeholders_left_out=left_out,
    )


# --------------------------------------------------------------------------- measures


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


CLUSTER_COLUMNS = ["cluster", "size", "share", "first_position_share", "placeholder_share", "norm_ratio", "n_types",
                   "top_types", "outlier_group", "why"]


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
        Pieces of ``<unk>`` / ``N`` (:attr:`TokenTypes.is_placeholder`); none if omitted.
    min_share : float
        Smallest share of the tokens a cluster must hold.
    n_top_types : int
        Most frequent types listed per cluster.

    Returns
    -------
    pandas.DataFrame, one row per cluster, largest first
        ``cluster``, ``size``, ``share`` (of the tokens), ``first_position_share``, ``placeholder_share``,
        ``norm_ratio`` (median norm of its tokens over the median norm of the layer), ``n_types``,
        ``top_types`` (e.g. ``"the 12%, of 6%"``: share of the cluster's tokens), ``outlier_group``
        (bool) and ``why`` ("" for a cluster).
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
            "n_types": len(counts),
            "top_types": ", ".join(f"{name} {count / members.sum():.0%}" for name, count in counts.head(n_top_types).items()),
            "outlier_group": bool(why) and len(np.unique(labels)) > 1, "why": why if len(np.unique(labels)) > 1 else "",
        })
    return pd.DataFrame(records).sort_values("size", ascending=False, ignore_index=True)


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
        the four LID values.
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
    return values, selection, described, units


@dataclass(frozen=True)
class ModelGeometry:
    """:func:`geometry_by_layer`'s tables for one model (view) and corpus, one row group per layer.

    Attributes
    ----------
    per_layer : pandas.DataFrame
        One row per layer: ``layer``, ``paper_layer`` (the authors' number, NaN for layer 0),
        ``n_layers`` and the values of :func:`layer_geometry`.
    silhouettes : pandas.DataFrame
        ``layer``, ``k``, ``restart``, ``silhouette``, ``inertia``.
    labels : dict of int to ndarray of shape (n_analysed,)
        The chosen k-means labels of the analysed tokens, per layer.
    clusters : pandas.DataFrame
        ``layer`` and :func:`describe_clusters`' columns, for the layers with k >= 2.
    units : pandas.DataFrame
        ``layer`` and :func:`layer_geometry`'s units: the same types (and tokens) in every layer.
    """

    per_layer: pd.DataFrame
    silhouettes: pd.DataFrame
    labels: dict
    clusters: pd.DataFrame
    units: pd.DataFrame


# What a stored layer analysis depends on besides its inputs (:func:`isolib.cache.memoized`).
_LAYER_CODE = (sys.modules[__name__], isolib.metrics)


def _layer_geometry_stored(X, types, positions, *, entry: str | None, layer: int, rows, **arguments):
    """:func:`layer_geometry`, stored in the cache under its embedding entry, layer, rows and arguments
    when ``entry`` is given, and read back from there by a rerun."""
    def compute():
        return layer_geometry(X, types, positions, **arguments)

    if entry is None:
        return compute()
    inputs = {"entry": entry, "layer": layer, "rows": np.asarray(rows), "types": np.asarray(types, dtype=object),
              "positions": np.asarray(positions),
              **{name: list(value) if isinstance(value, range) else value for name, value in arguments.items()}}
    return memoized("cai_layer_geometry", inputs, compute, code=_LAYER_CODE)


def geometry_by_layer(embeddings: Embeddings, analysed: TokenTypes, *, layers: Sequence[int] | None = None,
                      random_state: int = 0, n_jobs: int | None = None, resume: bool = False,
                      **options) -> ModelGeometry:
    """:func:`layer_geometry` on every stored layer (or ``layers``) of one model, with one unit per type for all.

    ``n_jobs`` worker processes share the layers (joblib; None: one, -1: every core). Each layer is
    seeded (``random_state + layer``), so the values do not depend on it (up to the rounding of
    k-means' threaded float32 sums); two workers of one thread keep both cores busy where one process
    leaves k-means' threads waiting on each other. With ``resume``, each layer's analysis is stored in
    the cache as it is finished (:func:`isolib.cache.memoized`, keyed by the embedding entry, the
    analysed tokens, the options and this module's and the metrics' source): a stopped run resumes
    at the layers it had not finished.
    """
    instances = one_instance_per_type(analysed.types, random_state=random_state)
    chosen = list(layers if layers is not None else embeddings.layers)
    entry = embeddings.path.name if resume else None
    results = Parallel(n_jobs=n_jobs)(
        delayed(_layer_geometry_stored)(np.asarray(embeddings.layer(layer)[analysed.rows]), analysed.types,
                                        analysed.positions, entry=entry, layer=layer, rows=analysed.rows,
                                        is_placeholder=analysed.is_placeholder, instances=instances,
                                        random_state=random_state + layer, **options)
        for layer in chosen)
    rows, scores, labels, described, units = [], [], {}, [], []
    for layer, (values, selection, clusters, layer_units) in zip(chosen, results):
        rows.append({"layer": layer, "paper_layer": paper_layer(layer), "n_layers": embeddings.n_layers, **values})
        scores.append(selection.silhouettes.assign(layer=layer))
        labels[layer] = selection.labels
        if selection.n_clusters > 1:
            described.append(clusters.assign(layer=layer))
        units.append(layer_units.assign(layer=layer))
    per_layer = pd.DataFrame(rows)
    per_layer["paper_layer"] = per_layer.paper_layer.astype("Int64")
    silhouettes = pd.concat(scores, ignore_index=True)[["layer", "k", "restart", "silhouette", "inertia"]]
    clusters = pd.concat(described, ignore_index=True) if described else pd.DataFrame(columns=["layer", *CLUSTER_COLUMNS])
    units = pd.concat(units, ignore_index=True)
    return ModelGeometry(per_layer, silhouettes, labels, clusters[["layer", *CLUSTER_COLUMNS]],
                         units[["layer", *units.columns.drop("layer")]])


def lid_against_n(X, n_points: Sequence[int], *, k: int = 100, queries: int | None = 2000,
                  random_state=None) -> pd.DataFrame:
    """Cosine LID of nested random subsets of ``X`` of growing size (the estimate depends on n).

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
    n_points : sequence of int
        Subset sizes; sizes above ``n_samples`` are left out, and ``n_samples`` itself is always included.
    k, queries, random_state
        As in :func:`isolib.metrics.lid_mle` (queries drawn within each subset).

    Returns
    -------
    pandas.DataFrame
        ``n`` and ``lid_cosine``, ``lid_cosine_squared`` (true and squared distances).
    """
    generator = rng(random_state)
    order = generator.permutation(len(X))  # nested subsets: the first n of one permutation
    sizes = sorted({int(n) for n in n_points if k < n < len(X)} | {len(X)})
    records = []
    for n in sizes:
        subset = np.asarray(X[np.sort(order[:n])], dtype=np.float32)
        # Query rows drawn here among the n points: repeated tokens (the same vector twice) share an
        # estimate, where a count of queries could exceed the distinct points lid_mle would draw from.
        rows = np.sort(generator.choice(n, size=min(queries or n, n), replace=False))
        true = lid_mle(subset, k=k, metric="cosine", queries=rows)
        records.append((n, true, true / 2))  # squared distances halve the estimate exactly (lid_variants)
    return pd.DataFrame(records, columns=["n", "lid_cosine", "lid_cosine_squared"])


def pca_view(X, *, n_components: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Coordinates on the first principal components, PCA fitted on all points (as the authors).

    Returns
    -------
    coordinates : ndarray of shape (n_samples, n_components)
    explained : ndarray of shape (n_components,)
        Share of the variance each component explains.
    """
    pca = PCA(n_components=n_components, svd_solver="randomized", random_state=0)
    coordinates = pca.fit_transform(np.asarray(X, dtype=np.float32))
    return coordinates, pca.explained_variance_ratio_


# --------------------------------------------------------------------------- findings


def counterpart(model: str) -> str | None:
    """The paper model ``model`` (or a view of it) is compared with: itself, its stand-in, or None."""
    return paper_counterpart(model.removesuffix(SYMBOLS_VIEW), TABLE3, STAND_INS)


def models_run(models: Sequence[str], static_name: str) -> str:
    """The ``Models`` line of ``RESULTS.md``: each model and the paper model it stands in for."""
    return (models_line(models, PAPER_MODELS, counterpart)
            + f"; static baseline {static_name}; ELMo is not run (it is not in transformers).")


def _non_input(table: pd.DataFrame) -> pd.DataFrame:
    """The paper's layers: ours from 1 (the authors never analysed the input layer)."""
    return table[table.layer > 0]


def _static_at(table3: pd.DataFrame, n: int) -> float:
    """The static vectors' cosine LID at the number of points nearest to ``n``."""
    static = table3[table3.model == "static"]
    return float(static.lid_cosine.iloc[int(np.argmin(np.abs(static.n.to_numpy() - n)))])


def _span(layers: pd.Series) -> str:
    """``"L1-L6 (6 layers)"`` or ``"L1, L2, L3, L6 (4 layers)"``: the layers analysed, as they are."""
    values = sorted(int(layer) for layer in layers)
    consecutive = values == list(range(values[0], values[-1] + 1))
    listed = f"L{values[0]}-L{values[-1]}" if consecutive else ", ".join(f"L{layer}" for layer in values)
    return f"{listed} ({len(values)} layers)"


def _clustered_by_restart(layers: pd.DataFrame, silhouettes: pd.DataFrame) -> np.ndarray:
    """Per restart and layer, the silhouette of the chosen k, 0 where the layer holds fewer than 2 real clusters.

    Returns
    -------
    ndarray of shape (n_restarts, n_layers)
    """
    columns = []
    for row in layers.itertuples():
        scores = silhouettes[(silhouettes.layer == row.layer) & (silhouettes.k == row.n_clusters)]
        n_restarts = silhouettes.restart.nunique()
        real = row.n_clusters > 1 and row.n_real_clusters >= 2
        columns.append(scores.sort_values("restart").silhouette.to_numpy() if real else np.zeros(n_restarts))
    return np.column_stack(columns)


def _per_unit(units: pd.DataFrame, column: str) -> np.ndarray:
    """One column of the centring units as an array of shape (n_units, n_layers) (rows: types)."""
    return units.pivot(index="unit", columns="layer", values=column).to_numpy(dtype=float)


def _model_findings(label: str, table: pd.DataFrame, silhouettes: pd.DataFrame, units: pd.DataFrame,
                    *, min_silhouette: float = 0.1) -> list[Finding]:
    layers = _non_input(table)
    span = _span(layers.layer)
    inter, intra = layers.s_inter, layers.s_intra
    real = (layers.n_clusters >= 2) & (layers.n_real_clusters >= 2)
    by_restart = _clustered_by_restart(layers, silhouettes[silhouettes.layer > 0])
    units = units[units.layer > 0]
    inside, globally = _per_unit(units, "per_cluster"), _per_unit(units, "global")
    globally = np.where(np.isnan(inside), np.nan, globally)  # the same layers on both sides of each pair
    paired = ~np.isnan(inside).all(axis=1)
    with np.errstate(all="ignore"):
        lower = (np.nanmean(inside, axis=0) < np.nanmean(globally, axis=0)).sum()
    comparison = compare_with_control(np.nanmean(inside[paired], axis=1), np.nanmean(globally[paired], axis=1),
                                      higher=False)
    isotropic = bootstrap_threshold(inside[paired], lambda sample: np.nanmax(np.abs(np.nanmean(sample, axis=0))),
                                    below=0.05)
    outliers = int(layers.n_outlier_groups.sum())
    return [
        declare("Anisotropy in every layer: S_inter and S_intra are both high",
                "high across all layers and models", label,
                f"S_inter {inter.min():.2f}-{inter.max():.2f}, S_intra {intra.min():.2f}-{intra.max():.2f} ({span})",
                all_of(threshold(inter, above=0.1), threshold(intra - inter, above=0)),
                "reproduced if S_inter > 0.1 (0 when isotropic) and S_intra > S_inter in every layer from L1.",
                kind="test", control="an isotropic space (S_inter 0)", threshold_ours=True, headline=True),
        declare("The space is dominated by isolated clusters",
                "k-means finds clusters (GPT-2 and BERT layer 6, D-BERT and ELMo layer 1)", label,
                f"at least 2 clusters that are not outlier groups in {real.mean():.0%} of {span} "
                f"(k {layers.n_clusters.min()}-{layers.n_clusters.max()}, silhouette {layers.silhouette.min():.2f}-"
                f"{layers.silhouette.max():.2f}; {outliers} outlier group{'s' * (outliers != 1)})",
                bootstrap_threshold(by_restart.T, lambda sample: np.mean(sample.mean(axis=1) >= min_silhouette),
                                    above=0.5, inclusive=True, within_units=True),
                f"reproduced if in at least half of the layers from L1 the silhouette chooses k >= 2 (mean silhouette "
                f"over k-means restarts >= {min_silhouette}, the authors' cut) with at least 2 clusters that are not "
                "outlier groups (below 1% of the tokens, or mostly window-first tokens or placeholders); interval over "
                "each layer's restarts, resampled layer by layer.", kind="test", control="one cluster (no silhouette reaches 0.1), or clusters that are "
                "outlier groups", threshold_ours=True, headline=True),
        declare("Per-cluster centring reveals isotropy that global centring does not: S_inter lower after it",
                "the anisotropy is a global view, misled by clusters (conclusions)", label,
                f"S_inter after per-cluster centring {np.nanmean(inside):.3f} (each type once; the authors' unweighted "
                f"mean over clusters {layers.s_inter_clusters.mean():.3f}) against {np.nanmean(globally):.3f} after "
                f"global centring, mean over {span}; paired difference {comparison.value:+.3f} "
                f"{comparison.interval_text}; lower in {lower} of {len(layers)} layers",
                comparison,
                "reproduced if the paired difference per-cluster minus global S_inter (per type, mean over layers from "
                "L1) is below 0 with its 95% interval over types; borderline if the interval straddles 0.",
                kind="test", control="global centring (subtracting the layer's mean), on the same types", headline=True),
        declare("Inside clusters the space is nearly isotropic: S_inter ~ 0 after per-cluster centring",
                "nearly perfect isotropy within clusters (no number given)", label,
                f"largest |S_inter| inside clusters over {span}: {isotropic.value:.3f} {isotropic.interval_text} "
                f"(per layer {np.nanmin(np.nanmean(inside, axis=0)):.3f} to {np.nanmax(np.nanmean(inside, axis=0)):.3f}; "
                f"the authors' unweighted mean {layers.s_inter_clusters.min():.3f} to {layers.s_inter_clusters.max():.3f})",
                isotropic,
                "reproduced if |S_inter| inside clusters (each type once) is below 0.05 in every layer from L1, with "
                "its 95% interval over types; 0.05 is ours, the paper says \"nearly perfect\".",
                kind="test", control="the raw space's S_inter (an anisotropic space, above 0.05)", threshold_ours=True,
                headline=True),
    ]


def _lid_finding(label: str, curve: pd.DataFrame, table3: pd.DataFrame) -> Finding:
    """"Contextual LID below static LID", judged over the curve of matched numbers of points."""
    merged = curve[curve.model == label].merge(curve[curve.model == "static"], on="n", suffixes=("", "_static"))
    gap = merged.lid_cosine - merged.lid_cosine_static
    verdict = threshold(gap, below=0) if len(gap) else Verdict.undecided()
    flips = verdict.passed is False and (gap < 0).any()
    if flips:  # below at some n, above at others: which way it goes depends on n
        verdict = dataclasses.replace(verdict, borderline=True)
    at_full = table3[(table3.model == label)].head(1)
    full = (f"; mean over layers at n = {int(at_full.n.iloc[0]):,}: {at_full.lid_cosine.iloc[0]:.1f} against "
            f"{_static_at(table3, int(at_full.n.iloc[0])):.1f}" if len(at_full) else "")
    layer = f"L{int(merged.layer.iloc[0])}" if len(merged) else "-"
    return declare("Contextual spaces have a lower LID than static ones",
                   "contextual 5.6-9.1 against static 18.0-26.1 (cosine, Table 3)", label,
                   f"cosine LID ({layer}, true distances) below the static vectors' at {(gap < 0).sum()} of {len(gap)} "
                   f"numbers of points n = {merged.n.min():,}-{merged.n.max():,} (gap {gap.min():+.1f} to "
                   f"{gap.max():+.1f}){full}" if len(gap) else "-",
                   verdict,
                   "reproduced if the contextual cosine LID (true distances, middle layer) is below the static vectors' at "
                   "every n of the matched curve; borderline if the order flips with n; not reproduced if it is above at "
                   "every n. Caveat: the static vectors are GloVe-50d, 50 dimensions against 384-768.",
                   kind="test", control="the static vectors (GloVe-50d) at each n", headline=True)


def _table3_findings(table3: pd.DataFrame, tolerance: float) -> list[Finding]:
    findings = []
    labels = {paper.name: paper.label for paper in PAPER_MODELS}
    ours = table3[(table3.model != "static") & (table3.corpus == table3.corpus.iloc[0])]
    for name, (value, n) in TABLE3.items():
        claim = f"Table 3: average cosine LID of {labels[name]}"
        paper = f"{value:.1f} (n = {n / 1e6:.2f} M)"
        compared = ours[ours.model.map(counterpart) == name]
        if compared.empty:
            reason = "ELMo is not in transformers." if name == "elmo" else f"{labels[name]} is not run in this profile."
            findings.append(not_comparable(claim, paper, reason, kind="test"))
        for row in compared.itertuples():
            text = f"{row.lid_cosine_squared:.1f} (1 - cos as the authors; true distances {row.lid_cosine:.1f}; n = {row.n})"
            if split_view(row.model)[0] != name:
                findings.append(not_comparable(claim, paper, f"{row.model} stands in for {labels[name]}.",
                                               kind="test", model=row.model, ours=text))
            else:
                findings.append(declare(claim, paper, row.model, text, within(row.lid_cosine_squared, value, tolerance),
                                        f"reproduced if the squared-distance value is within {tolerance} of the "
                                        "paper's (our n is smaller: LID grows with n).", kind="test",
                                        control=f"the paper's value, {tolerance} either side"))
    static = table3[table3.model == "static"].drop_duplicates("n")
    for name, (value, n) in TABLE3_STATIC.items():
        text = "; ".join(f"{row.lid_cosine_squared:.1f} at n = {row.n} (true distances {row.lid_cosine:.1f})"
                         for row in static.itertuples())
        findings.append(not_comparable(f"Table 3: average cosine LID of {name}", f"{value:.1f} (n = {n / 1e6:.2f} M)",
                                       "other static vectors; ours are GloVe-50d (1 - cos as the authors).",
                                       kind="test", ours=text or "-"))
    return findings


def symbols_view_label(model: str) -> str:
    """An encoder analysed with special and symbol tokens kept, as the authors' code: ``minilm (symbols kept)``."""
    return model + SYMBOLS_VIEW


def _judged(by_label: dict[str, list[Finding]]) -> list[Finding]:
    """One count per claim and model: decoders by :func:`judge_decoder_views`; the symbols-kept view beside, not counted."""
    symbols = {label: found for label, found in by_label.items() if label.endswith(SYMBOLS_VIEW)}
    judged = judge_decoder_views({label: found for label, found in by_label.items() if label not in symbols})
    return judged + [dataclasses.replace(finding, counted=False, headline=False)
                     for found in symbols.values() for finding in found]


def layer_findings(per_layer: pd.DataFrame, silhouettes: pd.DataFrame, units: pd.DataFrame, *,
                   lid_curve: pd.DataFrame | None = None, table3: pd.DataFrame | None = None) -> list[Finding]:
    """The per-layer claims for every model (view), one line per claim and model with each corpus's numbers.

    Anisotropy, isolated clusters (with outlier groups set apart, interval over k-means restarts),
    per-cluster against global centring (interval over types), isotropy inside clusters; with
    ``lid_curve`` and ``table3``, the LID against the static vectors on the first corpus. A decoder is
    judged in its start-token view, the paper's procedure beside it (:func:`isolib.findings.judge_decoder_views`);
    an encoder's symbols-kept view (:func:`symbols_view_label`) is shown beside, not counted.

    Parameters
    ----------
    per_layer : pandas.DataFrame
        :attr:`ModelGeometry.per_layer` rows with ``model`` and ``corpus``.
    silhouettes, units : pandas.DataFrame
        :attr:`ModelGeometry.silhouettes` and ``units`` rows with ``model`` and ``corpus``.
    lid_curve, table3 : pandas.DataFrame, optional
        As in :func:`assess_findings`.

    Returns
    -------
    list of Finding
    """
    by_corpus = {}
    first_corpus = per_layer.corpus.iloc[0]
    for corpus in pd.unique(per_layer.corpus):
        by_label = {}
        for label in pd.unique(per_layer.model[per_layer.corpus == corpus]):
            def of(table):
                return table[(table.model == label) & (table.corpus == corpus)]
            by_label[label] = _model_findings(label, of(per_layer).sort_values("layer"), of(silhouettes), of(units))
            if lid_curve is not None and table3 is not None and corpus == first_corpus and (lid_curve.model == label).any():
                by_label[label].append(_lid_finding(label, lid_curve, table3))
        by_corpus[corpus] = _judged(by_label)
    return combine_corpora(by_corpus)


def describe_symbols(coordinates, is_symbol, *, sample_size: int = 5000, random_state=0) -> str:
    """How far apart symbol and word tokens lie in a view: their counts and the silhouette of the two groups.

    Parameters
    ----------
    coordinates : array_like of shape (n_tokens, n_components)
        The tokens in the view (e.g. :func:`pca_view`'s 2-D coordinates).
    is_symbol : array_like of bool, shape (n_tokens,)
    sample_size : int
        Points behind the silhouette (:func:`isolib.metrics.silhouette`, a uniform sample).
    random_state : int

    Returns
    -------
    str
        E.g. ``"812 symbol tokens of 20,480 (4.0%); silhouette of symbols against words in the view 0.03"``;
        a silhouette near 0 means the two groups overlap, near 1 that they lie apart.
    """
    flags = np.asarray(is_symbol, dtype=bool)
    counts = f"{flags.sum():,} symbol tokens of {len(flags):,} ({flags.mean():.1%})"
    if flags.all() or not flags.any():
        return counts + "; no silhouette with one group"
    score = silhouette(coordinates, flags, sample_size=sample_size, random_state=random_state)
    return f"{counts}; silhouette of symbols against words in the view {score:.2f}"


def describe_extremes(coordinates, types, positions, *, share: float = 0.01) -> str:
    """What lies at the far end of the first principal component: the types and window positions of its extreme points.

    A "manifold" seen in a PCA view can be a streak of one frequent type or of the attention sink; this
    says which.

    Parameters
    ----------
    coordinates : array_like of shape (n_tokens, n_components)
        The tokens in the view (:func:`pca_view`).
    types, positions : array_like of shape (n_tokens,)
    share : float
        Share of the points, farthest from the median along PC1, described.

    Returns
    -------
    str
        E.g. ``"the 1% of tokens farthest along PC1 (50): 'the' 84%, 'a' 6%; 0% window-first"``.
    """
    first = np.asarray(coordinates, dtype=float)[:, 0]
    distance = np.abs(first - np.median(first))
    n_far = max(1, int(round(share * len(first))))
    far = np.argsort(distance, kind="stable")[-n_far:]
    counts = pd.Series(np.asarray(types)[far]).value_counts()
    top = ", ".join(f"'{name}' {count / n_far:.0%}" for name, count in counts.head(2).items())
    return (f"the {share:.0%} of tokens farthest along PC1 ({n_far}): {top}; "
            f"{np.mean(np.asarray(positions)[far] == 0):.0%} window-first")


def picture_findings(swiss_roll: dict[str, str], symbols: dict[str, str] | None = None) -> list[Finding]:
    """The paper's two pictures without a rule: the Swiss roll of the decoders and the symbol tokens.

    Parameters
    ----------
    swiss_roll : dict of str to str
        Per decoder (view), what its early-layer PCA view shows (e.g. the variance on 3 PCs); empty when
        no decoder was run.
    symbols : dict of str to str, optional
        Per model (view), :func:`describe_symbols` of its middle-layer view.

    Returns
    -------
    list of Finding
        All *not comparable*: a picture has no rule; what is measured of it is in ``ours``.
    """
    roll = ("A Swiss-roll manifold in GPT / GPT-2 (layer 2, coloured by frequency)", "shown in 2-D and 3-D PCA views")
    findings = [not_comparable(*roll, "a qualitative picture (figure fig_swiss_roll); no measurable proxy is claimed.",
                               kind="test", model=model, ours=shown) for model, shown in swiss_roll.items()]
    if not swiss_roll:
        findings.append(not_comparable(*roll, "no decoder in this run: the paper shows the roll for GPT and GPT-2.",
                                       kind="test"))
    for model, shown in (symbols or {}).items():
        findings.append(not_comparable("Symbol tokens and word tokens in one PCA view", "shown (BERT, GPT), no claim "
                                       "in the text", "a picture (figure fig_symbols); the silhouette says how far "
                                       "apart the two groups lie.", kind="test", model=model, ours=shown))
    return findings


def assess_findings(per_layer: pd.DataFrame, silhouettes: pd.DataFrame, units: pd.DataFrame, table3: pd.DataFrame,
                    lid_curve: pd.DataFrame, *, swiss_roll: dict[str, str] | None = None, symbols: dict[str, str] | None = None,
                    tolerance: float = 1.0) -> list[Finding]:
    """Decide, claim by claim, whether this run reproduces Cai et al. (2021).

    Parameters
    ----------
    per_layer, silhouettes, units : pandas.DataFrame
        :class:`ModelGeometry` tables of every model (view) and corpus, with ``model`` and ``corpus``
        (:func:`layer_findings`).
    table3 : pandas.DataFrame
        ``model``, ``corpus``, ``n``, ``lid_cosine``, ``lid_cosine_squared``: per model (view) and corpus the
        means over layers from L1; rows with ``model == "static"`` hold the static vectors at the same n's
        (the Table 3 findings use the first corpus, the paper's PTB).
    lid_curve : pandas.DataFrame
        :func:`lid_against_n` rows with ``model`` (``"static"`` for the static vectors).
    swiss_roll, symbols : dict of str to str
        What the pictures show, as in :func:`picture_findings`.
    tolerance : float
        Largest difference from a Table 3 number that counts as reproduced.

    Returns
    -------
    list of Finding
    """
    findings = layer_findings(per_layer, silhouettes, units, lid_curve=lid_curve, table3=table3)
    if swiss_roll is not None:
        findings += picture_findings(swiss_roll, symbols)
    findings += _table3_findings(table3, tolerance)
    findings.append(not_comparable("ELMo's clusters (layer 1) and LID (9.1)", "shown", "ELMo is not in transformers.",
                                   kind="test"))
    return findings


def check_parameters(params: dict) -> None:
    """Refuse, in one sentence, parameters of notebook 02 its run would fail on (the runner calls it before any kernel).

    Parameters
    ----------
    params : dict
        Every parameter of the notebook: the defaults of its parameters cell completed by the run's.
    """
    from isolib.parameters import check_choices, check_integers, check_layers, check_models

    check_models(params, "models")
    check_choices(params, "corpora", ("ptb", "wikitext2"))
    check_choices(params, "decoder_views", ("drop", "start_token"))
    check_choices(params, "storage_dtype", ("float16", "float32"))
    check_models(params, "static_baseline")
    check_layers(params, "layers")
    check_integers(params, ["token_budget", "kmeans_fit_size", "silhouette_sample", "lid_queries", "random_state"])
    check_integers(params, ["n_init", "max_instances", "lid_k", "lid_n_points", "n_plot_points"], minimum=1)
    if not 0 <= params["min_cluster_share"] < 1:
        raise ValueError(f"min_cluster_share is a share of the tokens, at least 0 and below 1; "
                         f"got {params['min_cluster_share']!r}.")
    check_integers(params, ["window_length"], minimum=3)  # room for a token between the special ones
    check_integers(params, ["k_max"], minimum=2)
    # The LID estimate needs more points than neighbours: at every point of its curve and in every window draw.
    fewest_points = min([*params["lid_n_points"], *([params["token_budget"]] if params["token_budget"] else [])])
    if params["lid_k"] >= fewest_points:
        raise ValueError(f"lid_k ({params['lid_k']}) must be below the fewest points it is estimated on "
                         f"({fewest_points}, from lid_n_points and token_budget).")
    if not 0 < params["stability_share"] <= 1:
        raise ValueError(f"stability_share is a share of the windows, above 0 and at most 1; "
                         f"got {params['stability_share']!r}.")
