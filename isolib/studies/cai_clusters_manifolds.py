"""Cai, Huang, Bian & Church (ICLR 2021), *Isotropy in the contextual embedding space: clusters and manifolds*.

The study asks whether the anisotropy of contextual embeddings is global or an effect of a few
isolated clusters, and how many dimensions the space uses locally. This module turns running text
into the authors' windows, and a layer of token vectors into the paper's measures, computed with
:mod:`isolib.metrics`:

* :func:`running_text_windows` -- a corpus cut into non-overlapping windows of the model's length;
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

Windows (:func:`running_text_windows`)
--------------------------------------
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
authors' code did (it counted every token as a type). A decoder's first window position, the
attention sink, is kept in the ``keep`` view (the authors' protocol) and removed in the ``drop`` view
(:mod:`isolib.embed`, "The first position").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.decomposition import PCA

from isolib._checks import check_int, rng, sample_rows
from isolib.embed import Embeddings, is_punctuation, split_view, unit_text
from isolib.findings import (
    Finding,
    PaperModel,
    Verdict,
    all_of,
    declare,
    models_line,
    not_comparable,
    paper_counterpart,
    threshold,
    within,
)
from isolib.metrics import KMeansSelection, centre_per_cluster, lid_mle, s_inter, s_intra, select_kmeans, silhouette

__all__ = [
    "CITATION",
    "PAPER_MODELS",
    "STAND_INS",
    "TABLE3",
    "TABLE3_STATIC",
    "paper_layer",
    "layer_name",
    "middle_layer",
    "running_text_windows",
    "TokenTypes",
    "token_types",
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


# --------------------------------------------------------------------------- windows


def _word_starts(stream: str, offsets: np.ndarray) -> np.ndarray:
    """Whether each piece begins a whitespace-separated word of ``stream``."""
    codes = np.frombuffer(stream.encode("utf-32-le"), dtype=np.uint32)
    space = np.isin(codes, [ord(c) for c in " \t\n\r\x0b\x0c\xa0"])
    starts = offsets[:, 0]
    # A piece begins a word if a space precedes it or (byte-level BPE: "Ġword") its own span starts with one.
    first = (starts == 0) | space[np.maximum(starts - 1, 0)] | space[np.minimum(starts, len(codes) - 1)]
    # Pieces of one character (byte fallback) share its offsets: only the first begins the word.
    first[1:] &= starts[1:] != starts[:-1]
    first[0] = True
    return first


def running_text_windows(lines: Sequence[str], tokenizer, *, window_length: int = 512, token_budget: int | None = None,
                         random_state=None) -> pd.DataFrame:
    """A corpus as the authors fed it: one token stream cut into non-overlapping windows.

    See the module docstring ("Windows") for the exact rule.

    Parameters
    ----------
    lines : sequence of str
        The split's lines in order (e.g. ``isolib.datasets.load_corpus("ptb", split="train").text``).
    tokenizer
        The model's fast tokenizer (``LoadedModel.tokenizer``).
    window_length : int
        Tokens per window, special tokens included (the authors: 512).
    token_budget : int or None
        About how many tokens to keep: ``token_budget // window_length`` windows (at least one),
        drawn uniformly without replacement from all full windows and kept in corpus order.
        None keeps every window.
    random_state : None, int or numpy Generator
        Seed of the window draw.

    Returns
    -------
    pandas.DataFrame, one row per kept window
        ``window`` (int, index among all full windows of the split), ``text`` (str, what the model
        reads), ``first_piece`` (int, index of its first piece in the stream), ``n_pieces`` (int,
        tokens when the text is tokenized with special tokens, at most ``window_length``).
        ``DataFrame.attrs["n_windows"]`` holds the number of full windows the split makes and
        ``attrs["n_pieces"]`` the pieces of the whole stream.

    Raises
    ------
    ValueError
        If the stream is shorter than one window or ``window_length`` leaves no room for content.
    """
    window_length = check_int(window_length, "window_length", low=2)
    n_special = tokenizer.num_special_tokens_to_add(pair=False)
    content = window_length - n_special
    if content < 1:
        raise ValueError(f"window_length={window_length} leaves no room beside the {n_special} special tokens.")
    lines = [line.strip() for line in lines if line.strip()]
    stream = " ".join(lines)
    # Each line tokenised on its own (as the authors did; faster in a batch), offsets moved into the stream.
    encoding = tokenizer(lines, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    line_starts = np.cumsum([0] + [len(line) + 1 for line in lines[:-1]])
    offsets = np.concatenate([np.asarray(line, dtype=np.int64).reshape(-1, 2) + start
                              for line, start in zip(encoding["offset_mapping"], line_starts)])
    n_pieces = len(offsets)
    if n_pieces < content:
        raise ValueError(f"The text has {n_pieces} tokens, fewer than one window of {window_length}; "
                         "pass more lines or a shorter window_length.")
    starts = _word_starts(stream, offsets)
    # For each piece, the index of the piece that begins its word.
    word_begin = np.maximum.accumulate(np.where(starts, np.arange(n_pieces), 0))
    bounds, first = [], 0
    while first + content <= n_pieces:  # a shorter last window is dropped, as the authors did
        end = first + content
        if end < n_pieces and word_begin[end] > first:  # never split a word between two windows
            end = word_begin[end]
        bounds.append((first, end))
        first = end
    chosen = np.arange(len(bounds))
    if token_budget is not None:
        n_windows = max(1, check_int(token_budget, "token_budget", low=1) // window_length)
        chosen = sample_rows(len(bounds), n_windows, rng(random_state))
    records = []
    for index in chosen:
        first, end = bounds[index]
        piece_ends = np.flatnonzero(starts[first + 1:end]) + first + 1  # later word starts inside the window
        while True:
            text = stream[offsets[first, 0]:offsets[end - 1, 1]].strip()
            length = len(tokenizer(text, add_special_tokens=True, verbose=False)["input_ids"])
            if length <= window_length or not len(piece_ends):
                break
            end, piece_ends = piece_ends[-1], piece_ends[:-1]  # drop the last word and try again
        records.append((int(index), text, int(first), length))
    windows = pd.DataFrame(records, columns=["window", "text", "first_piece", "n_pieces"])
    windows.attrs.update(n_windows=len(bounds), n_pieces=n_pieces)
    return windows


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
        Position of each token in its window (0 = first; [CLS] where there is one).
    windows : ndarray of int, shape (n_analysed,)
        The window (``sentence_id``) each token is in.
    is_symbol : ndarray of bool, shape (n_analysed,)
        Symbol tokens (no letter, no digit), kept only with ``keep_symbols``.
    frequency : ndarray of int, shape (n_analysed,)
        How often the token's type occurs among the analysed tokens (the authors coloured by it).
    symbol_rows, word_rows : ndarray of int
        All non-special rows that are symbol tokens and word tokens (for the pictures, whatever
        ``keep_symbols`` says).
    """

    rows: np.ndarray
    types: np.ndarray
    positions: np.ndarray
    windows: np.ndarray
    is_symbol: np.ndarray
    frequency: np.ndarray
    symbol_rows: np.ndarray
    word_rows: np.ndarray


def token_types(tokens: pd.DataFrame, *, keep_symbols: bool = False, max_windows: int | None = None) -> TokenTypes:
    """The analysed tokens of a token table (module docstring, "Analysed tokens").

    Parameters
    ----------
    tokens : pandas.DataFrame
        ``Embeddings.tokens`` (``sentence_id``, ``position``, ``token``, ``is_special``).
    keep_symbols : bool
        Keep special and symbol tokens as types (the authors' code); default: word tokens only.
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
    inside = np.ones(len(tokens), dtype=bool) if max_windows is None else (tokens.sentence_id < max_windows).to_numpy()
    kept = inside if keep_symbols else inside & ~special & ~symbol
    rows = np.flatnonzero(kept)
    if not len(rows):
        raise ValueError("No token is left to analyse: the windows hold only special and symbol tokens.")
    types = text.to_numpy(dtype=object)[rows].astype(str)
    counts = pd.Series(types).value_counts()
    return TokenTypes(
        rows=rows,
        types=types,
        positions=tokens.position.to_numpy()[rows],
        windows=tokens.sentence_id.to_numpy()[rows],
        is_symbol=symbol[rows],
        frequency=counts.reindex(types).to_numpy(),
        symbol_rows=np.flatnonzero(inside & ~special & symbol),
        word_rows=np.flatnonzero(inside & ~special & ~symbol),
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


def layer_geometry(X, types, positions, *, k_range=range(2, 16), silhouette_sample: int | None = 20000,
                   kmeans_fit_size: int | None = None, n_init: int = 10, max_instances: int | None = 1000, lid_k: int = 100,
                   lid_queries: int | None = 2000, random_state=None) -> tuple[dict, KMeansSelection]:
    """Every per-layer measure of the study on one layer's analysed tokens.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
        The analysed token vectors of one layer.
    types : array_like of shape (n_samples,)
        Their types.
    positions : array_like of shape (n_samples,)
        Their window positions (to tell whether a decoder's first position forms a cluster).
    k_range, silhouette_sample, kmeans_fit_size, n_init
        K-means selection (:func:`isolib.metrics.select_kmeans` with ``sample_size``, ``fit_size``;
        the authors: k = 2..15, silhouette on 20,000 points, k-means on all points, 10 restarts).
    max_instances : int or None
        Cap on the instances per type for S_intra (the authors: 1,000).
    lid_k, lid_queries
        Neighbours and query points of the LID (:func:`lid_variants`).
    random_state : int
        Seed of every draw (instances, k-means, silhouette sample, LID queries).

    Returns
    -------
    dict
        ``s_inter``, ``s_intra``; ``s_inter_centred`` (after subtracting the global mean: the control
        for per-cluster centring); ``n_clusters`` and ``silhouette`` (the chosen k and its score; the
        best score when k = 1); ``s_inter_clusters`` / ``s_intra_clusters`` (unweighted mean over
        clusters, the authors') and ``..._weighted`` (by cluster size); ``first_position_share``
        (the largest share of window-position-0 tokens in any chosen cluster); the four LID values.
    KMeansSelection
        The chosen partition (``labels``, ``n_clusters``) and the silhouette per candidate k.
    """
    points = np.asarray(X, dtype=np.float32)
    types = np.asarray(types)
    seed = int(rng(random_state).integers(2**31 - 1))
    generator = np.random.default_rng(seed)
    selection = select_kmeans(points, k_range, sample_size=silhouette_sample, fit_size=kmeans_fit_size, n_init=n_init,
                              random_state=seed)
    per_cluster = per_cluster_similarity(points, types, selection.labels, max_instances=max_instances,
                                         random_state=generator)
    inter_unweighted, inter_weighted = cluster_means(per_cluster, "s_inter")
    intra_unweighted, intra_weighted = cluster_means(per_cluster, "s_intra")
    at_start = pd.Series(np.asarray(positions) == 0).groupby(selection.labels).mean()
    values = {
        "n_tokens": len(points),
        "n_types": len(np.unique(types)),
        "s_inter": s_inter(points, types, random_state=generator),
        "s_intra": s_intra(points, types, max_instances=max_instances, random_state=generator),
        "s_inter_centred": s_inter(centre_per_cluster(points, np.zeros(len(points))), types, random_state=generator),
        "n_clusters": selection.n_clusters,
        "silhouette": float(selection.silhouettes.max()),
        "s_inter_clusters": inter_unweighted,
        "s_inter_clusters_weighted": inter_weighted,
        "s_intra_clusters": intra_unweighted,
        "s_intra_clusters_weighted": intra_weighted,
        "first_position_share": float(at_start.max()) if selection.n_clusters > 1 else np.nan,
    }
    values.update(lid_variants(points, k=lid_k, queries=lid_queries, random_state=generator))
    return values, selection


def geometry_by_layer(embeddings: Embeddings, analysed: TokenTypes, *, layers: Sequence[int] | None = None,
                      random_state: int = 0, **options) -> tuple[pd.DataFrame, pd.DataFrame, dict[int, np.ndarray]]:
    """:func:`layer_geometry` on every stored layer (or ``layers``) of one model.

    Returns
    -------
    per_layer : pandas.DataFrame
        One row per layer: ``layer``, ``paper_layer`` (the authors' number, NaN for layer 0),
        ``n_layers`` and the values of :func:`layer_geometry`.
    silhouettes : pandas.DataFrame
        ``layer``, ``k``, ``silhouette``.
    clusters : dict of int to ndarray of shape (n_analysed,)
        The chosen k-means labels of the analysed tokens, per layer.
    """
    rows, scores, clusters = [], [], {}
    for layer in layers if layers is not None else embeddings.layers:
        array = embeddings.layer(layer)
        values, selection = layer_geometry(array[analysed.rows], analysed.types, analysed.positions,
                                           random_state=random_state + layer, **options)
        rows.append({"layer": layer, "paper_layer": paper_layer(layer), "n_layers": embeddings.n_layers, **values})
        scores.append(selection.silhouettes.reset_index().assign(layer=layer))
        clusters[layer] = selection.labels
    per_layer = pd.DataFrame(rows)
    per_layer["paper_layer"] = per_layer.paper_layer.astype("Int64")
    return per_layer, pd.concat(scores, ignore_index=True)[["layer", "k", "silhouette"]], clusters


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
        seed = int(generator.integers(2**31 - 1))
        true = lid_mle(subset, k=k, metric="cosine", queries=min(queries or n, n), random_state=seed)
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
    return paper_counterpart(model, TABLE3, STAND_INS)


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


def _model_findings(label: str, table: pd.DataFrame, static_lid: float) -> list[Finding]:
    layers = _non_input(table)
    span = f"L{layers.layer.min()}-L{layers.layer.max()}"
    inter, intra = layers.s_inter, layers.s_intra
    clustered = (layers.n_clusters >= 2).mean()
    adjusted = layers.s_inter_clusters
    lid = layers.lid_cosine.mean()
    return [
        declare("Anisotropy in every layer: S_inter and S_intra are both high",
                "high across all layers and models", label,
                f"S_inter {inter.min():.2f}-{inter.max():.2f}, S_intra {intra.min():.2f}-{intra.max():.2f} ({span})",
                all_of(threshold(inter, above=0.1), threshold(intra - inter, above=0)),
                "reproduced if S_inter > 0.1 (0 when isotropic) and S_intra > S_inter in every layer from L1.",
                kind="test", control="an isotropic space (S_inter 0)", threshold_ours=True, headline=True),
        declare("The space is dominated by isolated clusters",
                "k-means finds clusters (GPT-2 and BERT layer 6, D-BERT and ELMo layer 1)", label,
                f"k >= 2 in {clustered:.0%} of layers (k {layers.n_clusters.min()}-{layers.n_clusters.max()}, "
                f"best silhouette {layers.silhouette.min():.2f}-{layers.silhouette.max():.2f})",
                threshold(clustered, above=0.5, inclusive=True),
                "reproduced if the silhouette selects k >= 2 (best silhouette >= 0.1) in at least half of the layers "
                "from L1.", kind="test", control="one cluster (k = 1 when no silhouette reaches 0.1)",
                threshold_ours=True, headline=True),
        declare("Inside clusters the space is nearly isotropic: S_inter ~ 0 after per-cluster centring",
                "nearly perfect isotropy within clusters", label,
                f"S_inter in clusters {adjusted.min():.3f}-{adjusted.max():.3f} (unweighted mean over clusters; "
                f"weighted {layers.s_inter_clusters_weighted.min():.3f}-{layers.s_inter_clusters_weighted.max():.3f}; "
                f"after global centring {layers.s_inter_centred.min():.3f}-{layers.s_inter_centred.max():.3f})",
                threshold(adjusted, above=-0.05, below=0.05),
                "reproduced if |S_inter| < 0.05 inside clusters (the authors' unweighted mean) in every layer from L1.",
                kind="test", control="the raw space's S_inter (an anisotropic space, above 0.05)", threshold_ours=True,
                headline=True),
        declare("Contextual spaces have a lower LID than static ones",
                "contextual 5.6-9.1 against static 18.0-26.1 (cosine, Table 3)", label,
                f"cosine LID {lid:.1f} (mean over {span}, true distances) against {static_lid:.1f} for the static "
                "vectors at the same n",
                threshold(lid - static_lid, below=0),
                "reproduced if the mean cosine LID over layers from L1 is below the static vectors' at the same number "
                "of points.", kind="test", control="the static vectors (GloVe-50d) at the same n", headline=True),
    ]


def _lid_at_every_n(label: str, curve: pd.DataFrame) -> Finding:
    """Beyond the paper: does "contextual < static" hold at every number of points?"""
    merged = curve[curve.model == label].merge(curve[curve.model == "static"], on="n", suffixes=("", "_static"))
    gap = merged.lid_cosine - merged.lid_cosine_static
    return declare("Beyond the paper: contextual LID < static LID at every number of points n",
                   "(not in the paper; Table 3 compares one n per model)", label,
                   f"gap {gap.min():+.1f} to {gap.max():+.1f} over n = {merged.n.min()}-{merged.n.max()}",
                   threshold(gap, below=0) if len(gap) else Verdict.undecided(),
                   "reproduced if the contextual cosine LID (true distances) is below the static one at every n.",
                   kind="test", control="the static vectors (GloVe-50d) at each n")


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


def layer_findings(per_layer: pd.DataFrame, table3: pd.DataFrame | None = None) -> list[Finding]:
    """The per-layer claims for every model (view) and corpus: anisotropy, isolated clusters, isotropy inside them,
    and a lower LID than the static vectors (not comparable without ``table3``, which holds the static LID).

    The verdicts the notebook prints under each figure; :func:`assess_findings` includes them all.
    """
    findings = []
    for (model, corpus), table in per_layer.groupby(["model", "corpus"], sort=False):
        static_lid = np.nan if table3 is None else _static_at(table3, int(table.n_tokens.iloc[0]))
        findings += _model_findings(f"{model}, {corpus}", table.sort_values("layer"), static_lid)
    return findings


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


def assess_findings(per_layer: pd.DataFrame, table3: pd.DataFrame, lid_curve: pd.DataFrame, *,
                    swiss_roll: dict[str, str] | None = None, symbols: dict[str, str] | None = None,
                    tolerance: float = 1.0) -> list[Finding]:
    """Decide, claim by claim, whether this run reproduces Cai et al. (2021).

    Parameters
    ----------
    per_layer : pandas.DataFrame
        :func:`geometry_by_layer` rows of every model (view) and corpus, with ``model`` and ``corpus``.
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
    findings = layer_findings(per_layer, table3)
    for model in pd.unique(lid_curve.model[lid_curve.model != "static"]):
        findings.append(_lid_at_every_n(model, lid_curve))
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
    from isolib.runner import check_choices, check_integers, check_layers, check_models

    check_models(params, "models")
    check_choices(params, "corpora", ("ptb", "wikitext2"))
    check_choices(params, "decoder_views", ("drop", "start_token"))
    check_choices(params, "storage_dtype", ("float16", "float32"))
    check_models(params, "static_baseline")
    check_layers(params, "layers")
    check_integers(params, ["token_budget", "kmeans_fit_size", "silhouette_sample", "lid_queries", "random_state"])
    check_integers(params, ["n_init", "max_instances", "lid_k", "lid_n_points", "n_plot_points"], minimum=1)
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
