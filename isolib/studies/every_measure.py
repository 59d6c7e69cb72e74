"""One embedding space, every measure: which isotropy measures agree, and what moves them.

The four studies of the collection each judge isotropy with their own measure (Ethayarajh the
average cosine of random tokens, Cai et al. S_inter and local intrinsic dimension, Rajaee &
Pilehvar the partition score I(W), Mickus et al. IsoScore), and on the same encoders they
disagree. Later work makes the disagreement the question: Rudman et al. (2022) argue that the
average cosine and I(W) do not measure isotropy; Timkey & van Schijndel (2021) show that one to
three "rogue" coordinates dominate cosine-based measures and that standardisation removes them.
This module puts every measure of :mod:`isolib.metrics` on the same points and sees which agree
and what moves each:

* :func:`analysed_tokens`, :func:`draw_token_samples`, :func:`static_sample` -- one fixed sample
  of word tokens of one corpus per model (the same tokens in every view and layer of a model), and
  the static vectors of the same running text's words;
* :class:`Spectrum` and :func:`every_measure` -- the twelve measures of one set of points, those that
  share a covariance or scatter matrix computing it once (:data:`MEASURES`);
* :data:`CHANGES` and :func:`changed_samples` -- controlled changes of the same points (centring,
  ABTT, the cluster-based method, whitening, standardisation, rogue dimensions removed, a rotation,
  unit length, the decoder's first position removed, uniform scaling, a planted outlier, fewer points);
* :func:`kendall_matrix`, :func:`agreement_table` -- Kendall's tau-b of every pair of measures over
  the (model, view, layer) cells, with a bootstrap interval crossed over cells and token samples;
* :func:`sensitivity_table` -- each measure's change under each change of the points, on one
  isotropy scale (:func:`isotropy_scale`), with an interval over cells;
* :func:`rogue_shares` -- how much of the average cosine the top coordinates carry, against a
  random rotation of the same points;
* :func:`assess_findings` -- the literature's claims as tests, and the checks;
* :func:`reader_guide`, :func:`strongest_disagreements` -- which measure answers which question,
  generated from the tables.

Orientation and the isotropy scale
----------------------------------
Each measure has an *isotropic end* (:attr:`Measure.isotropic`: "high" for IsoScore, "low" for the
average cosine). Agreement is computed on the *oriented* values (a measure whose isotropic end is
low is negated), so tau = 1 means two measures rank the cells the same way from least to most
isotropic. Changes are compared on one scale, :func:`isotropy_scale`: every measure mapped to
[0, 1] with 1 at its isotropic end (``1 - |cos|`` for a mean cosine, ``1 - share`` for a variance
share, LID over the dimension, ``1 - max(silhouette, 0)``, and I(W), which spans hundreds of orders of
magnitude, as ``1 / (1 + |log10 I(W)|)``), so a change of +0.1 reads about the same for every measure:
a tenth of the way towards isotropy.
"""

from __future__ import annotations

import dataclasses
import math
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from isolib._blas import eigh
from isolib._checks import rng, sample_rows
from isolib.findings import (
    Finding,
    Verdict,
    bootstrap_threshold,
    declare,
    judge_decoder_views,
    not_comparable,
    threshold,
)
from isolib.metrics import (
    anisotropy_baseline,
    effective_rank,
    explained_variance,
    isoscore,
    lid_mle,
    mev_baseline,
    partition_isotropy,
    s_inter,
    s_intra,
    select_kmeans,
)

__all__ = [
    "CITATION",
    "REFERENCES",
    "Measure",
    "MEASURES",
    "MEASURE_NAMES",
    "CHANGES",
    "analysed_tokens",
    "draw_token_samples",
    "static_sample",
    "Sample",
    "MeasureOptions",
    "Spectrum",
    "isoscore_of_variances",
    "cosine_contributions",
    "every_measure",
    "ChangeSettings",
    "changed_samples",
    "measure_spaces",
    "isotropy_scale",
    "oriented",
    "kendall_matrix",
    "agreement_table",
    "sensitivity_table",
    "rogue_shares",
    "library_agreement",
    "assess_findings",
    "strongest_disagreements",
    "reader_guide",
    "check_parameters",
]

CITATION = ("Ethayarajh (2019), Cai et al. (2021), Rajaee & Pilehvar (2021) and Mickus et al. (2024), whose measures "
            "are put on the same points; the claims judged are those of Rudman et al. (2022), *IsoScore: Measuring "
            "the Uniformity of Embedding Space Utilization*, Findings of ACL 2022, and Timkey & van Schijndel (2021), "
            "*All Bark and No Bite: Rogue Dimensions in Transformer Language Models Obscure Representational "
            "Quality*, EMNLP 2021")
REFERENCES = {
    "Ethayarajh 2019": "How Contextual are Contextualized Word Representations?, EMNLP 2019",
    "Cai et al. 2021": "Isotropy in the Contextual Embedding Space: Clusters and Manifolds, ICLR 2021",
    "Mu & Viswanath 2018": "All-but-the-Top: Simple and Effective Postprocessing for Word Representations, ICLR 2018",
    "Rajaee & Pilehvar 2021": "A Cluster-based Approach for Improving Isotropy in Contextual Embedding Space, ACL 2021",
    "Rudman et al. 2022": "IsoScore: Measuring the Uniformity of Embedding Space Utilization, Findings of ACL 2022",
    "Timkey & van Schijndel 2021": "All Bark and No Bite: Rogue Dimensions in Transformer Language Models Obscure "
                                   "Representational Quality, EMNLP 2021",
    "Mickus et al. 2024": "Isotropy, Clusters, and Classifiers, ACL 2024",
    "Roy & Vetterli 2007": "The effective rank: a measure of effective dimensionality, EUSIPCO 2007",
    "Levina & Bickel 2005": "Maximum Likelihood Estimation of Intrinsic Dimension, NeurIPS 2004",
}


# --------------------------------------------------------------------------- the measures


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
        Who introduced or used it (a key of :data:`REFERENCES`).
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
_BY_NAME = {measure.name: measure for measure in MEASURES}

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


# --------------------------------------------------------------------------- the token sample


def analysed_tokens(tokens: pd.DataFrame) -> pd.DataFrame:
    """The word tokens of a token table: not special, not a symbol, not a piece of a corpus placeholder.

    The rule of notebook 02 (:func:`isolib.embed.is_punctuation` for symbols,
    :func:`isolib.windows.placeholder_mask` for PTB's ``<unk>`` and ``N``), so both notebooks analyse
    the same tokens of the same windows.

    Parameters
    ----------
    tokens : pandas.DataFrame
        ``Embeddings.tokens``.

    Returns
    -------
    pandas.DataFrame, one row per analysed token
        ``row`` (into the embedding arrays), ``sentence_id``, ``content_index`` (rank of the token
        among the non-special tokens of its window: the same token has the same key in every view of
        a model, with or without a start token), ``position``, ``type`` (the piece without its
        space marker) and ``word``.
    """
    from isolib.embed import is_punctuation, unit_text
    from isolib.windows import placeholder_mask

    special = tokens.is_special.to_numpy(dtype=bool)
    content = pd.Series(np.where(special, -1, 0), index=tokens.index)
    content[~special] = tokens[~special].groupby("sentence_id").cumcount()
    types = tokens.token.map(unit_text)
    kept = ~special & ~types.map(is_punctuation).to_numpy(dtype=bool) & ~placeholder_mask(tokens)
    rows = np.flatnonzero(kept)
    return pd.DataFrame({"row": rows, "sentence_id": tokens.sentence_id.to_numpy()[rows],
                         "content_index": content.to_numpy()[rows], "position": tokens.position.to_numpy()[rows],
                         "type": types.to_numpy(dtype=object)[rows].astype(str),
                         "word": tokens.word.to_numpy(dtype=object)[rows].astype(str)})


def draw_token_samples(tables: dict[str, pd.DataFrame], n_points: int, n_replicates: int, *,
                       random_state=0) -> dict[str, list[pd.DataFrame]]:
    """The same random tokens in every view of one model: ``n_replicates`` draws of ``n_points`` each.

    Parameters
    ----------
    tables : dict of str to pandas.DataFrame
        :func:`analysed_tokens` of each view of one model (keyed by view label).
    n_points : int
        Tokens per draw (all common tokens if there are fewer).
    n_replicates : int
        Independent draws (each without replacement): each is measured and changed, and together
        they give the interval over the token sample; replicate 0 is also the one whose rogue
        coordinates are read.
    random_state : int

    Returns
    -------
    dict of str to list of pandas.DataFrame
        Per view, one table per replicate: the rows of :func:`analysed_tokens` drawn, in corpus order.
        A token is drawn only if every view has it (a start token pushes a window's last token out).
    """
    keys = None
    for table in tables.values():
        index = pd.MultiIndex.from_frame(table[["sentence_id", "content_index"]])
        keys = index if keys is None else keys.intersection(index)
    keys = keys.sort_values()
    generator = rng(random_state)
    draws = [keys[sample_rows(len(keys), n_points, generator)] for _ in range(n_replicates)]
    result = {}
    for label, table in tables.items():
        indexed = table.set_index(["sentence_id", "content_index"], drop=False)
        result[label] = [indexed.loc[draw].reset_index(drop=True) for draw in draws]
    return result


def static_sample(tokens: pd.DataFrame, words: Sequence[str], n_points: int, n_replicates: int, *,
                  random_state=0) -> list[pd.DataFrame]:
    """The words of the same running text, for a static embedding: one row per word occurrence found in ``words``.

    Parameters
    ----------
    tokens : pandas.DataFrame
        A model's token table (its analysed tokens give the words, lower-cased).
    words : sequence of str
        The static embedding's vocabulary, in row order.
    n_points, n_replicates, random_state
        As in :func:`draw_token_samples`.

    Returns
    -------
    list of pandas.DataFrame
        Per replicate: ``row`` (into the static matrix), ``sentence_id``, ``type`` (the word), ``position``
        (-1: a static vector has no position).
    """
    analysed = analysed_tokens(tokens)
    occurrences = analysed.assign(word_id=tokens.word_id.to_numpy()[analysed.row])
    occurrences = occurrences.drop_duplicates(["sentence_id", "word_id"])
    vocabulary = pd.Series(np.arange(len(words)), index=pd.Index(words)).groupby(level=0).first()
    lowered = occurrences.word.str.lower()
    found = lowered.isin(vocabulary.index).to_numpy()
    table = pd.DataFrame({"row": vocabulary.reindex(lowered[found]).to_numpy(),
                          "sentence_id": occurrences.sentence_id.to_numpy()[found],
                          "type": lowered[found].to_numpy(), "position": -1})
    generator = rng(random_state)
    return [table.iloc[sample_rows(len(table), n_points, generator)].reset_index(drop=True)
            for _ in range(n_replicates)]


@dataclass(frozen=True)
class Sample:
    """Points with what the measures need besides them.

    Attributes
    ----------
    points : ndarray of shape (n_points, dim), float64
    types : ndarray of str or None
        The type of each point (S_inter, S_intra); None: every point its own type.
    contexts : ndarray of int or None
        The window of each point (the anisotropy baseline pairs points of different windows); None:
        every point its own context.
    positions : ndarray of int or None
        Position of each point in its window (0 = first; -1 for a static vector).
    """

    points: np.ndarray
    types: np.ndarray | None = None
    contexts: np.ndarray | None = None
    positions: np.ndarray | None = None

    def subset(self, rows) -> Sample:
        """The sample restricted to ``rows``."""
        return Sample(self.points[rows], *(None if values is None else values[rows]
                                           for values in (self.types, self.contexts, self.positions)))

    def with_points(self, points: np.ndarray) -> Sample:
        """The same tokens with other coordinates (a changed space)."""
        return dataclasses.replace(self, points=points)


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


def every_measure(sample: Sample, options: MeasureOptions = MeasureOptions(), *, random_state=0) -> dict[str, float]:
    """Every measure of :data:`MEASURES` on one set of points.

    Parameters
    ----------
    sample : Sample
    options : MeasureOptions
    random_state : int
        Seed of the baselines' draws, the LID queries and k-means.

    Returns
    -------
    dict
        One entry per measure of :data:`MEASURES` (``effective_rank`` over the dimension), and
        ``log10_iw`` (I(W) on a log scale, exact where I(W) underflows), ``best_k`` (the k of the best
        silhouette), ``dim`` and ``n_points``. A measure undefined for the points (S_intra with no type
        seen twice; I(W) where its directions are not determined, :meth:`Spectrum.directions_determined`)
        is NaN.
    """
    points = np.asarray(sample.points, dtype=np.float64)
    n_points, dim = points.shape
    types = np.arange(n_points) if sample.types is None else sample.types
    contexts = np.arange(n_points) if sample.contexts is None else sample.contexts
    seed = int(rng(random_state).integers(2**31 - 1))
    spectrum = Spectrum.of(points)
    log10_iw = spectrum.log10_partition_isotropy(points) if spectrum.directions_determined() else np.nan
    values = {
        "average_cosine": float(cosine_contributions(points).sum()),
        "anisotropy_baseline": _or_nan(anisotropy_baseline, points, contexts, n_samples=options.baseline_samples,
                                       random_state=seed),
        "s_inter": _or_nan(s_inter, points, types, random_state=seed),
        "s_intra": _or_nan(s_intra, points, types, random_state=seed),
        "mev_baseline": mev_baseline(points, n_samples=options.baseline_samples, random_state=seed),
        "iw": 10.0**log10_iw,
        "isoscore": spectrum.isoscore(),
        "effective_rank": spectrum.effective_rank(),
        "top_dimension_share": spectrum.top_dimension_share(),
        "top_direction_share": spectrum.top_direction_share(),
    }
    # LID is estimated on distinct points (a static embedding repeats a word's vector): k and the queries fit them.
    n_distinct = len(np.unique(points, axis=0))
    queries = None if options.lid_queries is None or options.lid_queries >= n_distinct else options.lid_queries
    values["lid"] = lid_mle(points, k=min(options.lid_k, n_distinct - 1), queries=queries, random_state=seed)
    k_range = range(2, max(2, min(options.k_max, n_points - 2)) + 1)
    by_k = select_kmeans(points, k_range, sample_size=options.silhouette_sample, fit_size=options.kmeans_fit_size,
                         n_init=options.n_init, random_state=seed).by_k().silhouette
    values.update(silhouette=float(by_k.max()), best_k=int(by_k.idxmax()), log10_iw=log10_iw, dim=dim,
                  n_points=n_points)
    return values


def library_agreement(sample: Sample) -> float:
    """Largest difference between the shared-spectrum measures and :mod:`isolib.metrics` computing each alone.

    IsoScore, the effective rank, the top principal direction's share and I(W) (compared on
    ``log10``; where I(W) underflows in the library, not at all). A check that sharing the
    decomposition changes nothing.
    """
    points = np.asarray(sample.points, dtype=np.float64)
    spectrum = Spectrum.of(points)
    differences = [abs(spectrum.isoscore() - isoscore(points)),
                   abs(spectrum.effective_rank() - effective_rank(points, centered=True) / points.shape[1]),
                   abs(spectrum.top_direction_share() - explained_variance(points)[0])]
    iw = partition_isotropy(points)
    if iw > 1e-300:
        differences.append(abs(spectrum.log10_partition_isotropy(points) - math.log10(iw)))
    return float(max(differences))


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
    """

    abtt_components: int = 15
    cluster: tuple[int, int] = (27, 12)
    rogue_dimensions: tuple[int, ...] = (1, 3)
    scale: float = 3.0
    outlier_scale: float = 20.0
    small_n: int = 500


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
    from isolib.transforms import ClusterIsotropy, abtt, centre, drop_top_dimensions, standardise, whiten

    generator = rng(random_state)
    points = np.asarray(sample.points, dtype=np.float64)
    n_points, dim = points.shape
    yield "centre", sample.with_points(centre(points))
    yield "abtt", sample.with_points(abtt(points, min(settings.abtt_components, dim - 1)))
    k, n_pc = settings.cluster
    method = ClusterIsotropy(min(k, n_points // 2), min(n_pc, dim - 1), small_clusters="merge", n_init=1,
                             random_state=int(generator.integers(2**31 - 1)))
    yield "cluster", sample.with_points(method.fit_transform(points))
    yield "whiten", sample.with_points(whiten(points))
    yield "standardise", sample.with_points(standardise(points))
    for count in settings.rogue_dimensions:
        yield f"drop_top_{count}", sample.with_points(drop_top_dimensions(points, min(count, dim - 2)))
    yield "rotate", sample.with_points(points @ _random_rotation(dim, generator))
    yield "unit_length", sample.with_points(points / np.linalg.norm(points, axis=1, keepdims=True))
    first = None if sample.positions is None else np.asarray(sample.positions) == 0
    yield "drop_first_position", (sample.subset(np.flatnonzero(~first)) if first is not None and first.any() else None)
    yield "scale", sample.with_points(settings.scale * points)
    mean = points.mean(axis=0)
    direction = generator.standard_normal(dim)
    planted = points.copy()
    planted[0] = mean + settings.outlier_scale * np.median(np.linalg.norm(points - mean, axis=1)) * (
        direction / np.linalg.norm(direction))
    yield "outlier", sample.with_points(planted)
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
            for change, changed_sample in changed_samples(sample, settings, random_state=[random_state, replicate]):
                if changed_sample is None:
                    continue
                tic = time.perf_counter()
                values = every_measure(changed_sample, options, random_state=[random_state, replicate])
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


# --------------------------------------------------------------------------- scales, agreement and sensitivity


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


def _mean_kendall(values: np.ndarray) -> np.ndarray:
    """Kendall matrix of each replicate (axis 1) of a (n_cells, n_replicates, n_measures) array, averaged."""
    with np.errstate(invalid="ignore"):
        return np.nanmean(np.stack([kendall_matrix(values[:, r]) for r in range(values.shape[1])]), axis=0)


def _replicate_array(by_replicate: pd.DataFrame) -> tuple[np.ndarray, list]:
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
        :func:`measure_spaces`' first table.
    n_resamples, level, random_state

    Returns
    -------
    pandas.DataFrame, one row per ordered pair (the diagonal included)
        ``measure``, ``other``, ``tau``, ``low``, ``high``, ``n_cells``.
    """
    array, cells = _replicate_array(by_replicate)
    tau = _mean_kendall(array)
    generator = np.random.default_rng(random_state)
    n_cells, n_replicates = array.shape[:2]
    resampled = np.stack([_mean_kendall(array[generator.integers(0, n_cells, n_cells)]
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
        :func:`measure_spaces`' tables: each changed replicate is compared with the same replicate
        unchanged, and a cell's change is the mean over its replicates.
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


def rogue_shares(samples, *, n_dimensions: int = 3, n_resamples: int = 200, level: float = 0.95,
                     random_state=0) -> pd.DataFrame:
    """How much of the average cosine the top coordinates carry, against a random rotation of the same points.

    Parameters
    ----------
    samples : iterable of (dict, Sample)
        Per cell, its description and its replicate-0 sample.
    n_dimensions : int
        The top coordinates counted (by their part of the average cosine, :func:`cosine_contributions`).
    n_resamples, level
        The percentile bootstrap over tokens of the share.
    random_state : int

    Returns
    -------
    pandas.DataFrame, one row per cell
        The description; ``average_cosine``; ``top1_share`` and ``top_share`` (the share of the average
        cosine carried by the top coordinate and the top ``n_dimensions``), ``top_share_low`` and
        ``_high`` (over tokens); ``rotated_share`` (the same share after a random rotation, which keeps
        every cosine: the control, near ``n_dimensions / d`` when no axis is special); ``rogue``
        (the top coordinates, by index).
    """
    generator = rng(random_state)
    rows = []
    for cell, sample in samples:
        points = np.asarray(sample.points, dtype=np.float64)
        contributions = cosine_contributions(points)
        total = contributions.sum()
        order = np.argsort(-contributions)

        def share(parts: np.ndarray) -> float:
            return float(np.sort(parts)[::-1][:n_dimensions].sum() / parts.sum()) if parts.sum() > 0 else np.nan

        units = points / np.linalg.norm(points, axis=1, keepdims=True)
        n = len(units)
        weights = generator.multinomial(n, np.full(n, 1 / n), size=n_resamples).astype(float)
        sums, squares = weights @ units, weights @ units**2
        resampled = (sums**2 - squares) / (n * (n - 1))
        shares = np.array([share(parts) for parts in resampled])
        low, high = np.nanquantile(shares, [(1 - level) / 2, (1 + level) / 2])
        rotated = cosine_contributions(points @ _random_rotation(points.shape[1], generator))
        rows.append({**cell, "average_cosine": float(total),
                     "top1_share": float(contributions[order[0]] / total) if total > 0 else np.nan,
                     "top_share": share(contributions), "top_share_low": float(low), "top_share_high": float(high),
                     "rotated_share": share(rotated), "rogue": " ".join(map(str, order[:n_dimensions]))})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- findings


def _interval_verdict(value: float, low: float, high: float, *, above: float | None = None,
                      below: float | None = None) -> Verdict:
    """:func:`isolib.findings.threshold` on ``value`` with a bootstrap interval computed elsewhere."""
    verdict = threshold(value, above=above, below=below)
    if verdict.passed is None or not (np.isfinite(low) and np.isfinite(high)):
        return verdict
    ends = [threshold(end, above=above, below=below).passed for end in (low, high)]
    return dataclasses.replace(verdict, interval=(float(low), float(high)), borderline=ends[0] != ends[1])


def _changes_of(by_replicate: pd.DataFrame, changed: pd.DataFrame, change: str, column: str) -> pd.DataFrame:
    """Per cell and replicate: ``before`` and ``after`` of one measure under one change, with the cell's space."""
    keys = ["space", "layer", "replicate"]
    before = by_replicate.set_index(keys)[column]
    after = changed[changed.change == change].set_index(keys)[column]
    joined = pd.DataFrame({"before": before, "after": after}).dropna()
    return joined.reset_index()


def _median_change_finding(claim: str, paper: str, label: str, moved: pd.DataFrame, unmoved: pd.DataFrame, *,
                           bound: float, unit: str, control_text: str, rule: str, headline: bool = False) -> Finding:
    """A test that a measure moves by more than ``bound``: the median over a model's layers, interval over layers.

    ``moved`` and ``unmoved`` are :func:`_changes_of` the measure and of its control; a layer's change
    is the mean over its replicates. A space of one cell (a static embedding) is judged on its one
    change, without an interval.
    """
    def per_layer(changes: pd.DataFrame) -> pd.Series:
        return (changes.after - changes.before).groupby(changes.layer).mean()

    deltas, control = per_layer(moved), per_layer(unmoved)
    unit = f" {unit}" if unit else ""
    if len(deltas) == 0:
        return not_comparable(claim, paper, "no cell of this space was changed.", kind="test", model=label)
    if len(deltas) == 1:
        verdict = threshold(abs(float(deltas.iloc[0])), above=bound)
        measured = f"|change| {verdict.value:.3g}{unit} (one cell)"
    else:
        verdict = bootstrap_threshold(deltas.abs().to_numpy(), np.median, above=bound)
        measured = f"median |change| {verdict.value:.3g}{unit} over {len(deltas)} layers {verdict.interval_text}"
    ours = f"{measured}; {control_text}: at most {control.abs().max():.1g}"
    return declare(claim, paper, label, ours, verdict, rule, kind="test", control=control_text + " (0 by construction)",
                   threshold_ours=True, headline=headline)


def _model_findings(label: str, by_replicate: pd.DataFrame, changed: pd.DataFrame, rogue: pd.DataFrame, *,
                    anisotropic_cosine: float, share_bound: float, standardised_bound: float,
                    n_dimensions: int) -> list[Finding]:
    """The claims judged on one model view's cells."""
    mine = by_replicate[by_replicate.space == label]
    theirs = changed[changed.space == label]
    findings = []

    # Rudman et al. (2022): the average cosine moves with the mean, IsoScore does not.
    cosine = _changes_of(mine, theirs, "centre", "average_cosine")
    iso = _changes_of(mine, theirs, "centre", "isoscore")
    findings.append(_median_change_finding(
        "The average cosine changes under global centring, to which IsoScore is invariant",
        "the average cosine depends on the mean vector; IsoScore is mean-agnostic (Rudman et al. 2022)", label,
        cosine, iso, bound=0.05, unit="",
        control_text="IsoScore's change under the same centring", headline=True,
        rule="reproduced if the median over layers of |average cosine after centring - before| exceeds 0.05, with its "
             "95% interval over layers (a space of one cell: its one change)."))
    # Rudman et al. (2022): I(W) moves with the scale, IsoScore does not.
    iw = _changes_of(mine, theirs, "scale", "log10_iw")
    iso = _changes_of(mine, theirs, "scale", "isoscore")
    findings.append(_median_change_finding(
        "I(W) changes under uniform scaling, to which IsoScore is invariant",
        "I(W) is not scale invariant; IsoScore is (Rudman et al. 2022)", label, iw, iso, bound=1.0, unit="in log10 I(W)",
        control_text="IsoScore's change under the same scaling",
        rule="reproduced if the median over layers of |log10 I(W) after scaling - before| exceeds 1 (a factor of 10), "
             "with its 95% interval over layers (a space of one cell: its one change)."))
    # The reverse: IsoScore moves under a change the average cosine is blind to.
    iso = _changes_of(mine, theirs, "unit_length", "isoscore")
    cosine = _changes_of(mine, theirs, "unit_length", "average_cosine")
    findings.append(_median_change_finding(
        "IsoScore changes when every vector is scaled to unit length, to which the average cosine is invariant",
        "IsoScore reads the variance of the points, norms included; a cosine ignores norms (Rudman et al. 2022)",
        label, iso, cosine, bound=0.05, unit="",
        control_text="the average cosine's change under the same normalisation",
        rule="reproduced if the median over layers of |IsoScore after normalising every vector - before| exceeds 0.05, "
             "with its 95% interval over layers (a space of one cell: its one change)."))

    # Timkey & van Schijndel (2021): a few rogue coordinates carry most of the average cosine ...
    cells = rogue[rogue.space == label]
    anisotropic = cells[cells.average_cosine >= anisotropic_cosine]
    claim = f"{n_dimensions} rogue coordinates carry most of the average cosine in the anisotropic layers"
    paper = "1-3 dimensions dominate cosine similarity (Timkey & van Schijndel 2021)"
    if anisotropic.empty:
        findings.append(not_comparable(claim, paper, f"no anisotropic layer: the average cosine is below "
                                       f"{anisotropic_cosine} in every layer.", kind="test", model=label,
                        ours=f"average cosine at most {cells.average_cosine.max():.2f}"))
    else:
        weakest = anisotropic.loc[anisotropic.top_share.idxmin()]
        verdict = all_shares = _interval_verdict(weakest.top_share, weakest.top_share_low, weakest.top_share_high,
                                                 above=share_bound)
        controlled = threshold(anisotropic.rotated_share.max(), below=share_bound)
        if all_shares.passed is not None and not controlled.passed:
            verdict = dataclasses.replace(all_shares, passed=False, borderline=False)
        findings.append(declare(
            claim, paper, label,
            f"{len(anisotropic)} layers with average cosine >= {anisotropic_cosine}; the top {n_dimensions} coordinates "
            f"carry at least {weakest.top_share:.0%} of it (L{int(weakest.layer)}) {verdict.interval_text}; after a "
            f"random rotation at most {anisotropic.rotated_share.max():.0%}",
            verdict,
            f"reproduced if, in every layer whose average cosine is at least {anisotropic_cosine}, the {n_dimensions} "
            f"coordinates contributing most carry more than {share_bound:.0%} of the average cosine, with the 95% "
            "interval over tokens of the weakest layer, while after a random rotation of the same points they do not.",
            kind="test", control="the same points randomly rotated (every cosine kept, no privileged axis)",
            threshold_ours=True, headline=True))
    # ... and standardisation removes it.
    claim = "Standardisation removes the average cosine of the anisotropic layers"
    paper = "standardising each dimension removes the rogue dimensions' effect (Timkey & van Schijndel 2021)"
    standardised = _changes_of(mine, theirs, "standardise", "average_cosine")
    centred = _changes_of(mine, theirs, "centre", "average_cosine")
    layers = set(anisotropic.layer) if not anisotropic.empty else set()
    standardised = standardised[standardised.layer.isin(layers)]
    centred = centred[centred.layer.isin(layers)]
    if standardised.empty:
        findings.append(not_comparable(claim, paper, f"no anisotropic layer: the average cosine is below "
                                       f"{anisotropic_cosine} in every layer.", kind="test", model=label))
    else:
        verdict = threshold(standardised.after.abs(), below=standardised_bound)
        findings.append(declare(
            claim, paper, label,
            f"|average cosine| after standardisation at most {standardised.after.abs().max():.3f} (before: at least "
            f"{standardised.before.min():.2f}); after global centring alone at most {centred.after.abs().max():.3f}",
            verdict,
            f"reproduced if, in every layer whose average cosine is at least {anisotropic_cosine}, |average cosine| "
            f"after standardising each coordinate is below {standardised_bound}.",
            kind="test", control="the raw average cosine of the same layers; global centring alone shown beside",
            threshold_ours=True))
    return findings


def _disagreement_findings(by_replicate: pd.DataFrame, *, agree_bound: float, n_resamples: int) -> list[Finding]:
    """Rudman et al. (2022)'s pairs, and the most opposed pair, judged over every cell."""
    array, cells = _replicate_array(by_replicate)
    index = {name: i for i, name in enumerate(MEASURE_NAMES)}
    model = f"all {len(cells)} cells"
    if len(cells) < 3:
        return [not_comparable("The measures rank the cells differently", "disagree (Rudman et al. 2022)",
                               "fewer than 3 cells.", kind="test")]

    def tau_of(a: str, b: str):
        def statistic(sample: np.ndarray) -> float:
            with np.errstate(invalid="ignore"):
                return float(np.nanmean([kendall_matrix(sample[:, r])[0, 1] for r in range(sample.shape[1])]))
        return statistic, array[:, :, [index[a], index[b]]]

    control_statistic, control_sample = tau_of("average_cosine", "anisotropy_baseline")
    control_tau = control_statistic(control_sample)
    findings = []
    for a, b, headline in [("isoscore", "average_cosine", True), ("isoscore", "iw", False)]:
        statistic, sample = tau_of(a, b)
        verdict = bootstrap_threshold(sample, statistic, below=agree_bound, crossed=True, n_resamples=n_resamples)
        findings.append(declare(
            f"IsoScore and {_BY_NAME[b].label} rank the cells differently",
            f"{_BY_NAME[b].label} does not measure isotropy as IsoScore does (Rudman et al. 2022)", model,
            f"Kendall tau {verdict.value:.2f} {verdict.interval_text}; the control pair (average cosine and the "
            f"anisotropy baseline) {control_tau:.2f}",
            verdict,
            f"reproduced if Kendall's tau-b of the two (oriented to isotropy) over the cells is below {agree_bound}, with "
            "its 95% interval crossed over cells and token samples.",
            kind="test", control="two estimates of the same quantity (the average cosine and the anisotropy baseline), "
                                 "which must agree", threshold_ours=True, headline=headline))
    tau = _mean_kendall(array)
    np.fill_diagonal(tau, np.nan)
    i, j = np.unravel_index(np.nanargmin(tau), tau.shape)
    a, b = MEASURE_NAMES[i], MEASURE_NAMES[j]
    statistic, sample = tau_of(a, b)
    verdict = bootstrap_threshold(sample, statistic, below=0.0, crossed=True, n_resamples=n_resamples)
    findings.append(declare(
        "Some pair of measures ranks the cells in opposite orders",
        "the measures disagree on which spaces are isotropic (Rudman et al. 2022)", model,
        f"most opposed: {_BY_NAME[a].label} and {_BY_NAME[b].label}, Kendall tau {verdict.value:.2f} "
        f"{verdict.interval_text}",
        verdict,
        "reproduced if the most opposed pair's Kendall tau-b (oriented to isotropy) is below 0 with its 95% interval "
        "crossed over cells and token samples (the pair is chosen on this run: its interval is optimistic).",
        kind="test", control="no disagreement (tau 0 or above for every pair)"))
    return findings


def _checks(by_replicate: pd.DataFrame, changed: pd.DataFrame, *, library_difference: float | None,
            n_points: int, n_replicates: int) -> list[Finding]:
    """Properties true by construction, and the bookkeeping of the run."""
    def largest_change(changes: tuple[str, ...], column: str) -> float:
        moved = [_changes_of(by_replicate, changed, change, column) for change in changes]
        return float(np.nanmax([(rows.after - rows.before).abs().max() for rows in moved]))

    findings = []
    worst = largest_change(("centre", "scale", "rotate"), "isoscore")
    findings.append(declare("IsoScore is unchanged by centring, uniform scaling and rotation",
                            "invariant (Rudman et al. 2022)", "every cell", f"largest change {worst:.1g}",
                            threshold(worst, below=1e-6), "passed if no cell's IsoScore moves by 1e-6 or more.",
                            kind="check"))
    worst = largest_change(("scale", "unit_length", "rotate"), "average_cosine")
    findings.append(declare("The average cosine is unchanged by uniform scaling, unit length and rotation",
                            "invariant (a cosine ignores norms)", "every cell", f"largest change {worst:.1g}",
                            threshold(worst, below=1e-9), "passed if no cell's average cosine moves by 1e-9 or more.",
                            kind="check"))
    whitened = changed[changed.change == "whiten"]
    # Whitening gives every direction that has variance the same variance: r equal variances of d (r < d where
    # coordinates are constant, or with fewer points than dimensions), whose IsoScore is known. The effective rank of
    # r equal singular values is r.
    ranks = (whitened.effective_rank * whitened.dim).round().astype(int)
    expected = [isoscore_of_variances(np.r_[np.ones(rank), np.zeros(dim - rank)])
                for rank, dim in zip(ranks, whitened.dim)]
    worst = float(np.max(np.abs(whitened.isoscore.to_numpy() - expected))) if len(whitened) else np.nan
    findings.append(declare("Whitening gives every direction with variance the same variance",
                            "IsoScore of r equal variances among d (1 when r = d)", "every cell",
                            f"largest difference from it {worst:.1g} over {len(whitened)} samples of "
                            f"{whitened.groupby(['space', 'layer']).ngroups} cells "
                            f"({int((ranks < whitened.dim).sum())} with fewer directions than dimensions)",
                            threshold(worst, below=1e-6), "passed if every whitened sample's IsoScore is within 1e-6 of "
                            "that of r equal variances, r its effective rank.", kind="check"))
    samples = pd.concat([by_replicate.assign(change="none"), changed], ignore_index=True)
    undefined, is_whitened = samples.iw.isna(), samples.change == "whiten"
    findings.append(declare("I(W) is undefined on the whitened samples, and only there",
                            "its directions are not determined where eigenvalues coincide", "every cell",
                            f"undefined on {int((undefined & is_whitened).sum())} of {int(is_whitened.sum())} "
                            f"whitened samples and {int((undefined & ~is_whitened).sum())} of the "
                            f"{int((~is_whitened).sum())} others",
                            threshold(float((undefined != is_whitened).sum()), below=0.5),
                            "passed if I(W) is undefined (Spectrum.directions_determined) on every whitened "
                            "sample and on no other.", kind="check"))
    if library_difference is not None:
        findings.append(declare("The shared decomposition gives what isolib.metrics gives",
                                "IsoScore, effective rank, top-PC share and log10 I(W) equal", "first cell",
                                f"largest difference {library_difference:.1g}",
                                threshold(library_difference, below=1e-6),
                                "passed if every difference is below 1e-6 (rounding in directions without "
                                "variance).", kind="check"))
    counts = by_replicate.groupby(["space", "layer"]).n_points.agg(["min", "count"])
    findings.append(declare("Every cell is measured on its full token sample in every replicate",
                            f"{n_points} tokens x {n_replicates} replicates", "every cell",
                            f"{len(counts)} cells, {int(counts['min'].min())}-{int(counts['min'].max())} tokens, "
                            f"{int(counts['count'].min())} replicates",
                            threshold(float(counts["count"].min() == n_replicates), above=0.5),
                            "passed if every cell has every replicate (fewer tokens only where the corpus sample "
                            "has fewer).", kind="check"))
    return findings


def assess_findings(by_replicate: pd.DataFrame, changed: pd.DataFrame, rogue: pd.DataFrame, *,
                    anisotropic_cosine: float = 0.1, share_bound: float = 0.5, standardised_bound: float = 0.05,
                    agree_bound: float = 0.5, n_dimensions: int = 3, library_difference: float | None = None,
                    n_points: int = 0, n_replicates: int = 1, n_resamples: int = 2000) -> list[Finding]:
    """The literature's claims judged on this run, and the checks.

    Per model view (a decoder judged in its start-token view, the paper's procedure beside it,
    :func:`isolib.findings.judge_decoder_views`): the average cosine moves under centring and I(W)
    under scaling while IsoScore does not, IsoScore moves under normalisation while the average
    cosine does not (Rudman et al. 2022); a few rogue coordinates carry most of the average cosine
    of the anisotropic layers, and standardisation removes it (Timkey & van Schijndel 2021). Over all
    cells: IsoScore against the average cosine and I(W), and the most opposed pair of measures.

    Parameters
    ----------
    by_replicate, changed : pandas.DataFrame
        :func:`measure_spaces`' tables.
    rogue : pandas.DataFrame
        :func:`rogue_shares`.
    anisotropic_cosine : float
        A layer is anisotropic when its average cosine is at least this (ours).
    share_bound, standardised_bound, agree_bound : float
        The thresholds (ours) of the rogue-coordinate share, of |average cosine| after
        standardisation, and of Kendall's tau below which two measures disagree.
    n_dimensions : int
        Rogue coordinates counted (as in :func:`rogue_shares`).
    library_difference : float or None
        :func:`library_agreement` of a sample (a check), if measured.
    n_points, n_replicates : int
        The sample sizes asked for (a check).
    n_resamples : int
        Bootstrap resamples of the agreement tests.

    Returns
    -------
    list of Finding
    """
    by_label = {label: _model_findings(label, by_replicate, changed, rogue, anisotropic_cosine=anisotropic_cosine,
                                       share_bound=share_bound, standardised_bound=standardised_bound,
                                       n_dimensions=n_dimensions)
                for label in pd.unique(by_replicate.space)}
    findings = judge_decoder_views(by_label)
    findings += _disagreement_findings(by_replicate, agree_bound=agree_bound, n_resamples=n_resamples)
    findings += _checks(by_replicate, changed, library_difference=library_difference, n_points=n_points,
                        n_replicates=n_replicates)
    return findings


# --------------------------------------------------------------------------- the reader's answer


def _moves(sensitivity: pd.DataFrame, change: str, measure: str, *, size: float) -> str:
    """"up", "down", "still" or "" (neither clearly) for one measure under one change."""
    row = sensitivity[(sensitivity.change == change) & (sensitivity.measure == measure)]
    if row.empty or row.direction.iloc[0] == "n/a":
        return ""
    row = row.iloc[0]
    if row.direction == "unchanged":
        return "still"
    if row.direction == "more isotropic" and row["median"] >= size:
        return "up"
    if row.direction == "less isotropic" and row["median"] <= -size:
        return "down"
    return ""


def strongest_disagreements(agreement: pd.DataFrame, sensitivity: pd.DataFrame, *, count: int = 3) -> pd.DataFrame:
    """The ``count`` most opposed pairs of measures, and the change that moves them most differently.

    Parameters
    ----------
    agreement : pandas.DataFrame
        :func:`agreement_table`.
    sensitivity : pandas.DataFrame
        :func:`sensitivity_table`.

    Returns
    -------
    pandas.DataFrame, one row per pair, most opposed first
        ``measure``, ``other``, ``tau``, ``low``, ``high``, ``cause`` (the change whose median effects on
        the two differ most, e.g. ``global centring: +0.31 against +0.00``).
    """
    pairs = agreement[agreement.measure < agreement.other].dropna(subset=["tau"]).nsmallest(count, "tau")
    causes = []
    for row in pairs.itertuples():
        effects = sensitivity.pivot(index="change", columns="measure", values="median")[[row.measure, row.other]]
        gap = (effects[row.measure] - effects[row.other]).abs().dropna()
        if gap.empty:
            causes.append("-")
            continue
        change = gap.idxmax()
        causes.append(f"{CHANGES[change]}: {effects.loc[change, row.measure]:+.2f} against "
                      f"{effects.loc[change, row.other]:+.2f}")
    return pairs.assign(cause=causes)[["measure", "other", "tau", "low", "high", "cause"]].reset_index(drop=True)


def _move(measures: Sequence[str]) -> str:
    return "moves" if len(measures) == 1 else "move"


def _names(measures: Sequence[str]) -> str:
    return ", ".join(_BY_NAME[name].label for name in measures) if measures else "none in this run"


def reader_guide(sensitivity: pd.DataFrame, agreement: pd.DataFrame, *, size: float = 0.05) -> list[str]:
    """Which measure to use for which question, read off the sensitivity and agreement tables.

    A measure *answers* a question when the changes that should move it do (by at least ``size``
    on the isotropy scale, the interval over cells on one side of 0) and those that should not leave
    it unchanged (the whole interval within the tolerance of :func:`sensitivity_table`):

    * a common direction (an offset from the origin): moved up by centring, unchanged by a rotation
      and by uniform scaling;
    * how evenly the variance spreads over directions, whatever the offset, scale and axes:
      unchanged by centring, scaling and rotation, moved up by whitening;
    * a few coordinates (rogue dimensions): changed by a rotation, which keeps every distance and
      angle but not the axes;
    * clusters and local dimension: the cluster and neighbour measures, with what moves them.

    Then the cautions: measures moved by uniform scaling (compare only at equal norms), by the
    number of points (compare only at equal n), and by one planted outlier. For the rotation and
    the cautions any systematic move counts (the interval over cells on one side of 0, outside the
    tolerance), whatever its size on the isotropy scale: I(W) falls by tens of orders of magnitude
    under a uniform scaling while its isotropy-scale change stays below ``size``.

    Returns
    -------
    list of str
        Markdown bullet lines, each with the evidence (the changes and their sizes).
    """
    def moved(change, how, at_least=size):
        return [name for name in MEASURE_NAMES if _moves(sensitivity, change, name, size=at_least) in how]

    offset = [name for name in moved("centre", ("up",)) if name in moved("rotate", ("still",))
              and name in moved("scale", ("still",))]
    spread = [name for name in moved("whiten", ("up",)) if name in moved("centre", ("still",))
              and name in moved("scale", ("still",)) and name in moved("rotate", ("still",))]
    axes, scale, fewer, outlier = (moved(change, ("up", "down"), at_least=0.0)
                                   for change in ("rotate", "scale", "fewer_points", "outlier"))
    medians = sensitivity.pivot(index="measure", columns="change", values="median")
    raw = sensitivity.pivot(index="measure", columns="change", values="raw_median")

    def evidence(names, change):  # I(W) also in its own units, log10: its isotropy scale hides orders of magnitude
        return "; ".join(f"{_BY_NAME[name].label} {medians.loc[name, change]:+.2f}"
                         + (f" (log10 I(W) {raw.loc[name, change]:+.1f})" if name == "iw" else "") for name in names)

    off_diagonal = agreement[agreement.measure != agreement.other].dropna(subset=["tau"])
    partners = []
    for name in MEASURE_NAMES:
        mine = off_diagonal[off_diagonal.measure == name]
        if not mine.empty:
            best = mine.loc[mine.tau.idxmax()]
            partners.append(f"{_BY_NAME[name].label} with {_BY_NAME[best.other].label} ({best.tau:.2f})")
    lines = [
        f"- **Is there a common direction, an offset from the origin?** {_names(offset)}: centring moves them "
        f"towards isotropy ({evidence(offset, 'centre') or '-'}), a rotation and a uniform scaling do not.",
        f"- **Is the variance spread evenly over the directions, whatever the offset, scale and axes?** "
        f"{_names(spread)}: whitening moves them ({evidence(spread, 'whiten') or '-'}); centring, scaling and a "
        "rotation do not.",
        (f"- **Do a few coordinates dominate (rogue dimensions)?** {_names(axes)}: a random rotation, which keeps "
         f"every angle and distance, moves them ({evidence(axes, 'rotate')}); they read the model's own coordinates."
         if axes else
         "- **Do a few coordinates dominate (rogue dimensions)?** No measure moves under a random rotation here, so "
         "no coordinate stands out in these spaces; the share of the average cosine carried by the top "
         "coordinates (Table `rogue`) asks it directly."),
        f"- **Does the space hold clusters, and how many dimensions does it use locally?** best k-means silhouette "
        f"(the cluster-based method moves it {medians.loc['silhouette', 'cluster']:+.2f}) and LID (whitening "
        f"{medians.loc['lid', 'whiten']:+.2f}): neither is an isotropy measure; say which question they answer.",
        f"- **Caution, the scale:** {_names(scale)} {_move(scale)} under a uniform scaling "
        f"({evidence(scale, 'scale') or '-'}): compare only spaces of the same norms.",
        f"- **Caution, the number of points:** {_names(fewer)} {_move(fewer)} with n "
        f"({evidence(fewer, 'fewer_points') or '-'}): compare only at the same n.",
        f"- **Caution, one outlier:** {_names(outlier)} {_move(outlier)} when one point is planted far out "
        f"({evidence(outlier, 'outlier') or '-'}).",
        "- **Which measures tell the same story** (each with its closest partner by Kendall's tau): "
        + "; ".join(partners) + ".",
    ]
    return lines


def check_parameters(params: dict) -> None:
    """Refuse, in one sentence, parameters of notebook 05 its run would fail on (the runner calls it before any kernel).

    Parameters
    ----------
    params : dict
        Every parameter of the notebook: the defaults of its parameters cell completed by the run's.
    """
    from isolib.checks import check_choices, check_integers, check_layers, check_models

    check_models(params, "models")
    check_choices(params, "corpus", ("ptb", "wikitext2"))
    check_choices(params, "decoder_views", ("drop", "start_token"))
    check_choices(params, "storage_dtype", ("float16", "float32"))
    if params["static_baseline"]:
        check_choices(params, "static_baseline", ("glove-50d",))
    check_layers(params, "layers")
    check_integers(params, ["token_budget", "random_state", "kmeans_fit_size", "silhouette_sample", "lid_queries"])
    check_integers(params, ["n_replicates", "n_resamples", "abtt_components"], minimum=1)
    check_integers(params, ["window_length"], minimum=3)
    check_integers(params, ["k_max"], minimum=2)
    check_integers(params, ["baseline_samples", "lid_k", "small_n"], minimum=2)
    check_integers(params, ["cluster_encoder", "cluster_decoder", "rogue_dimensions"], minimum=1)
    for name in ("cluster_encoder", "cluster_decoder"):
        if len(params[name]) != 2:
            raise ValueError(f"{name} must hold two integers, k and the directions per cluster; got {params[name]!r}.")
    check_integers(params, ["n_points"], minimum=10)
    check_integers(params, ["n_jobs"], minimum=None)
    if params["n_jobs"] == 0:
        raise ValueError("n_jobs must be a number of worker processes (1 runs in the kernel, -1 one per core); got 0.")
    if params["lid_k"] >= min(params["n_points"], params["small_n"]) - 1:
        raise ValueError(f"lid_k ({params['lid_k']}) must be below n_points and small_n, the fewest points the LID "
                         f"is estimated on ({min(params['n_points'], params['small_n'])}).")
    if params["small_n"] >= params["n_points"]:
        raise ValueError(f"small_n ({params['small_n']}) must be below n_points ({params['n_points']}): it is the "
                         "smaller sample of the sample-size change.")
    for name in ("scale", "outlier_scale"):
        if params[name] <= 0:
            raise ValueError(f"{name} must be above 0; got {params[name]!r}.")
    if not 0 < params["anisotropic_cosine"] < 1:
        raise ValueError(f"anisotropic_cosine is an average cosine above 0 and below 1; got {params['anisotropic_cosine']!r}.")
