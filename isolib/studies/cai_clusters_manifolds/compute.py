"""What notebook 02 computes: the analysed tokens, every layer's measures, LID against n, the pictures' numbers.

Everything here produces the study's evidence (the package's docstring lists it); only this code and
the library code it calls key the stored layer analyses (:func:`isolib.steps.memoized`), so editing a
claim, a figure or prose never recomputes them.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from sklearn.decomposition import PCA

from isolib._checks import rng
from isolib.embed import Embeddings, is_punctuation, unit_text
from isolib.metrics import lid_mle, silhouette
from isolib.steps import memoized
from isolib.studies.cai_clusters_manifolds.measures import (
    CLUSTER_COLUMNS,
    layer_geometry,
    one_instance_per_type,
)
from isolib.views import View
from isolib.windows import placeholder_mask

__all__ = [
    "paper_layer",
    "layer_name",
    "middle_layer",
    "TokenTypes",
    "token_types",
    "ModelGeometry",
    "geometry_by_layer",
    "geometry_by_view",
    "lid_against_n",
    "mean_lid",
    "with_static",
    "pca_view",
    "describe_symbols",
    "describe_extremes",
]


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
    """The analysed tokens of a token table (the package's docstring, "Analysed tokens").

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



# --------------------------------------------------------------------------- every layer of a model


@dataclass(frozen=True)
class ModelGeometry:
    """:func:`geometry_by_layer`'s tables for one model (view) and corpus, one row group per layer.

    Attributes
    ----------
    per_layer : pandas.DataFrame
        One row per layer: ``layer``, ``paper_layer`` (the authors' number, NaN for layer 0),
        ``n_layers`` and the values of :func:`~.measures.layer_geometry`.
    silhouettes : pandas.DataFrame
        ``layer``, ``k``, ``restart``, ``silhouette``, ``inertia``.
    labels : dict of int to ndarray of shape (n_analysed,)
        The chosen k-means labels of the analysed tokens, per layer.
    clusters : pandas.DataFrame
        ``layer`` and :func:`~.measures.describe_clusters`' columns, for the layers with k >= 2.
    units : pandas.DataFrame
        ``layer`` and :func:`~.measures.layer_geometry`'s units: the same types (and tokens) in every layer.
    """

    per_layer: pd.DataFrame
    silhouettes: pd.DataFrame
    labels: dict
    clusters: pd.DataFrame
    units: pd.DataFrame


# What a stored layer analysis depends on besides its inputs (:func:`isolib.steps.memoized`): this module's code,
# and the measures and library code it imports.
_LAYER_CODE = (sys.modules[__name__],)


def _layer_geometry_stored(X, types, positions, *, entry: str | None, layer: int, rows, **arguments):
    """:func:`~.measures.layer_geometry`, stored in the cache under its embedding entry, layer, rows and arguments
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
    """:func:`~.measures.layer_geometry` on every stored layer (or ``layers``) of one model, one unit per type for all.

    ``n_jobs`` worker processes share the layers (joblib; None: one, -1: every core). Each layer is
    seeded (``random_state + layer``), so the values do not depend on it (up to the rounding of
    k-means' threaded float32 sums); two workers of one thread keep both cores busy where one process
    leaves k-means' threads waiting on each other. With ``resume``, each layer's analysis is stored in
    the cache as it is finished (:func:`isolib.steps.memoized`, keyed by the embedding entry, the
    analysed tokens, the options and the code of this module and of what it calls): a stopped run
    resumes at the layers it had not finished.
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


def geometry_by_view(embeddings: Mapping[tuple[View, str], Embeddings],
                     analysed: Mapping[tuple[View, str], TokenTypes],
                     **options) -> tuple[dict[str, pd.DataFrame], dict]:
    """:func:`geometry_by_layer` of every view and corpus, its tables stacked.

    Parameters
    ----------
    embeddings, analysed : mapping of (View, str) to Embeddings and to TokenTypes
        By view and corpus: the embeddings and their analysed tokens.
    **options
        Passed to :func:`geometry_by_layer` (``random_state``, ``n_jobs``, ``resume``, the measures' options).

    Returns
    -------
    tables : dict of str to pandas.DataFrame
        ``per_layer``, ``silhouettes``, ``clusters`` and ``units`` (:class:`ModelGeometry`) of every view and
        corpus, with ``model`` (the view's label) and ``corpus`` as their first columns.
    labels : dict of (View, str) to dict
        By view and corpus, :attr:`ModelGeometry.labels`.
    """
    tables, labels = {"per_layer": [], "silhouettes": [], "clusters": [], "units": []}, {}
    for (view, corpus), embedding in embeddings.items():
        geometry = geometry_by_layer(embedding, analysed[view, corpus], **options)
        for name, stacked in tables.items():
            table = getattr(geometry, name)
            stacked.append(table.assign(model=view.label, corpus=corpus)[["model", "corpus", *table.columns]])
        labels[view, corpus] = geometry.labels
    return {name: pd.concat(stacked, ignore_index=True) for name, stacked in tables.items()}, labels


# --------------------------------------------------------------------------- LID against n, Table 3


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


def mean_lid(per_layer: pd.DataFrame, dims: dict[tuple[str, str], int]) -> pd.DataFrame:
    """Table 3's contextual rows: per model (view) and corpus, the cosine LID averaged over the paper's layers.

    The paper does not say which layer its Table 3 gives, so ours is the mean over our layers from L1
    (the authors' layers).

    Parameters
    ----------
    per_layer : pandas.DataFrame
        :attr:`ModelGeometry.per_layer` rows with ``model`` (a view's label) and ``corpus``.
    dims : dict of (str, str) to int
        The dimension of each (model, corpus).

    Returns
    -------
    pandas.DataFrame
        ``model``, ``corpus``, ``n`` (analysed tokens), ``lid_cosine``, ``lid_cosine_squared``, ``dim``.
    """
    upper = per_layer[per_layer.layer > 0]
    table = (upper.groupby(["model", "corpus"], sort=False)
             .agg(n=("n_tokens", "first"), lid_cosine=("lid_cosine", "mean"),
                  lid_cosine_squared=("lid_cosine_squared", "mean"))
             .reset_index())
    table["dim"] = [dims[key] for key in zip(table.model, table.corpus)]
    return table


def with_static(contextual: pd.DataFrame, static_curve: pd.DataFrame, *, name: str, dim: int,
                n_words: int) -> pd.DataFrame:
    """Table 3: :func:`mean_lid`'s rows and the static vectors' at the same numbers of points and whole.

    Parameters
    ----------
    contextual : pandas.DataFrame
        :func:`mean_lid`.
    static_curve : pandas.DataFrame
        :func:`lid_against_n` of the static vectors, at sizes that include ``contextual.n`` and ``n_words``.
    name : str
        The static vectors' name (their ``corpus``); their ``model`` is ``"static"``.
    dim, n_words : int
        Their dimension and number of words.

    Returns
    -------
    pandas.DataFrame
        ``model``, ``corpus``, ``n``, ``dim``, ``lid_cosine``, ``lid_cosine_squared``.
    """
    static_rows = static_curve[static_curve.n.isin(set(contextual.n) | {n_words})]
    return pd.concat([contextual, static_rows.assign(model="static", corpus=name, dim=dim)],
                     ignore_index=True)[["model", "corpus", "n", "dim", "lid_cosine", "lid_cosine_squared"]]


# --------------------------------------------------------------------------- the pictures



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

