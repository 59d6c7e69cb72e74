"""Mickus et al. (2024), *Isotropy, Clusters, and Classifiers*, as functions.

The paper argues that isotropy (IsoScore) and clusters (silhouette) are antithetical, and that a linear
classifier pulls the points it classifies into clusters: optimising embeddings for a linear
classifier should lower IsoScore and raise the silhouette. This module builds the paper's setups for
:func:`isolib.probe.train_probe` and the checks of its Section 2:

* :func:`polarity_setup` (i) and :func:`snli_setup` (ii) -- all-MiniLM-L6-v2 sentence vectors exactly as
  sentence-transformers makes them (:func:`isolib.embed.sentence_embeddings`), with their labels;
* :func:`pos_setup` (iii) and :func:`supersense_setup` (iv) -- stand-ins for the paper's word2vec
  setups: GloVe-50d word vectors with WordNet's parts of speech or noun supersenses as labels;
* :func:`glue_setup` -- Appendix A: a GLUE training set (CoLA, MRPC, RTE, SST-2) under an SBERT model,
  one trainable vector per unique sentence;
* :meth:`Setup.n_parameters` -- the trainable parameters of a setup (the paper's Tables 1 and 2);
* :func:`tightening_demo` -- Section 2 made concrete: clusters tightened step by step;
* :func:`variance_from_distances` -- the identity the proof rests on (Zhang et al. 2012);
* :func:`trace_summary`, :func:`trend_findings`, :func:`section2_finding` and :func:`assess_findings` -- the
  paper's claims beside ours (per figure, and all of them for ``RESULTS.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from isolib import datasets
from isolib.embed import sentence_embeddings
from isolib.findings import Finding, all_of, declare, not_comparable, threshold, within
from isolib.metrics import isoscore, silhouette

__all__ = [
    "CITATION",
    "PAPER_TABLE1",
    "Setup",
    "polarity_setup",
    "snli_setup",
    "pos_setup",
    "supersense_setup",
    "GLUE_TASKS",
    "PAPER_TABLE2",
    "glue_setup",
    "static_parameters",
    "tightening_demo",
    "variance_from_distances",
    "trace_summary",
    "trend_findings",
    "section2_finding",
    "assess_findings",
]

CITATION = ("Timothee Mickus, Stig-Arne Grönroos and Joseph Attieh (2024), *Isotropy, Clusters, and Classifiers*, "
            "ACL 2024 (short papers)")
# Table 1: items and trainable parameters per setup.
PAPER_TABLE1 = {"(i) polarity": (10_662, 4_094_976), "(ii) SNLI": (9_842, 4_987_395),
                "(iii) CoDWoE POS": (11_462, 4_341_004), "(iv) supersenses": (2_275, 690_326)}
# The paper's static vectors (word2vec) have 300 dimensions; the stand-in GloVe-50d has 50.
PAPER_STATIC_DIM = 300
# Appendix A: the GLUE training sets in ../shared/data, as (loader, data set, split, sentence columns).
GLUE_TASKS = {
    "cola": ("texts", "cola", "in_domain_train", ("text",)),
    "mrpc": ("pairs", "mrpc", "train", ("sentence1", "sentence2")),
    "rte": ("pairs", "rte", "train", ("sentence1", "sentence2")),
    "sst2": ("texts", "sst2", "train", ("text",)),
}
# Table 2: items, then trainable parameters per model ("roberta" in the paper is all-distilroberta-v1, a Hub model).
DISTILROBERTA = "sentence-transformers/all-distilroberta-v1"
PAPER_TABLE2 = {
    "cola": (8_551, {"minilm": 3_277_058, "mpnet": 6_554_114, DISTILROBERTA: 6_554_114}),
    "mrpc": (3_668, {"minilm": 2_709_506, "mpnet": 5_419_010, DISTILROBERTA: 5_419_010}),
    "rte": (2_490, {"minilm": 1_738_370, "mpnet": 3_476_738, DISTILROBERTA: 3_476_738}),
    "sst2": (67_349, {"minilm": 25_720_322, "mpnet": 51_440_642, DISTILROBERTA: 51_440_642}),
}


@dataclass(frozen=True)
class Setup:
    """One of the paper's setups, ready for :func:`isolib.probe.train_probe`.

    Attributes
    ----------
    name : str
        As in :data:`PAPER_TABLE1`.
    X : ndarray of shape (n_points, dim)
        Initial embeddings (the trainable parameters).
    y : ndarray of shape (n_items,) or (n_items, n_labels)
        Class labels (of the pairs for SNLI), or 0/1 label vectors for the multi-label setups.
    item_index : ndarray of shape (n_items,) or (n_pairs, 2), or None
        The row of ``X`` each item reads (repeated sentences share one), or the two rows of a pair, read
        as [u; v]; None: one row per item.
    bias : bool
        Bias in the linear layer ((i): none).
    loss : {"softmax", "sigmoid"}
        Cross-entropy over classes, or binary cross-entropy per label ((iii), (iv)).
    words : tuple of str
        The words of a static setup, row by row (empty for sentence setups).
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    item_index: np.ndarray | None
    bias: bool
    loss: str = "softmax"
    words: tuple[str, ...] = ()

    @property
    def n_items(self) -> int:
        return len(self.y)

    @property
    def n_parameters(self) -> int:
        """Trainable parameters of the probe :func:`isolib.probe.train_probe` builds for this setup."""
        from isolib.probe import make_probe  # lazy: torch, which the runner's parameter check does without

        n_outputs = self.y.shape[1] if self.loss == "sigmoid" else len(np.unique(self.y))
        return make_probe(self.X, n_outputs, bias=self.bias,
                          paired=self.item_index is not None and self.item_index.ndim == 2).n_parameters


def _subset(n: int, size: int | None, random_state) -> np.ndarray:
    """Sorted rows of a uniform sample of ``size`` items (all when None or larger)."""
    if size is None or size >= n:
        return np.arange(n)
    return np.sort(np.random.default_rng(random_state).choice(n, size=size, replace=False))


def polarity_setup(*, n_items: int | None = None, random_state=0, **options) -> Setup:
    """(i) Pang & Lee polarity: 10,662 all-MiniLM-L6-v2 sentence vectors, 2 classes, no bias.

    ``n_items`` draws a uniform subset (quick runs); ``options`` go to :func:`sentence_embeddings`.
    """
    texts = datasets.load_texts("rt-polarity", split=None)
    texts = texts.iloc[_subset(len(texts), n_items, random_state)]
    X = sentence_embeddings("minilm", texts.text.tolist(), **options)
    return Setup("(i) polarity", X, texts.label.to_numpy(), None, bias=False)


def _unique_sentence_setup(name: str, model: str, items: pd.DataFrame, columns: Sequence[str], **options) -> Setup:
    """One trainable vector per unique sentence of ``items[columns]``; an item reads its row(s), with bias."""
    sentences = list(dict.fromkeys(pd.concat([items[column] for column in columns])))
    row = {sentence: i for i, sentence in enumerate(sentences)}
    item_index = np.column_stack([items[column].map(row) for column in columns])
    X = sentence_embeddings(model, sentences, **options)
    return Setup(name, X, items.label.to_numpy(), item_index.ravel() if len(columns) == 1 else item_index, bias=True)


def snli_setup(*, n_items: int | None = None, random_state=0, **options) -> Setup:
    """(ii) SNLI dev, 9,842 gold pairs: one vector per unique sentence, pairs read as [u; v], 3 classes with bias.

    ``n_items`` draws a uniform subset of pairs (quick runs); ``options`` go to :func:`sentence_embeddings`.
    """
    pairs = datasets.load_pairs("snli", split="dev")
    pairs = pairs.iloc[_subset(len(pairs), n_items, random_state)]
    return _unique_sentence_setup("(ii) SNLI", "minilm", pairs, ("sentence1", "sentence2"), **options)


def glue_setup(task: str, model: str = "minilm", *, n_items: int | None = None, random_state=0,
               **options) -> Setup:
    """Appendix A: a GLUE training set, one trainable vector per unique sentence, a linear layer with bias.

    As the paper: every labelled item of the training set; single sentences (CoLA, SST-2) are
    classified from their sentence's vector, pairs (MRPC, RTE) from [u; v]; items repeating a
    sentence share its vector (CoLA: 8,532 vectors for 8,551 items). Our MRPC is the original
    Microsoft train file (4,076 pairs), of which GLUE's train split holds 3,668 (the other 408 are
    its dev split, whose ids are not available here).

    Parameters
    ----------
    task : {"cola", "mrpc", "rte", "sst2"}
    model : str
        A sentence-transformers model :func:`sentence_embeddings` accepts: ``minilm``, ``mpnet``, or
        :data:`DISTILROBERTA` (a Hub id, the paper's third model; not available offline).
    n_items : int, optional
        A uniform subset of the items (quick runs).
    **options
        Passed to :func:`sentence_embeddings`.
    """
    if task not in GLUE_TASKS:
        raise ValueError(f"Unknown GLUE task {task!r}; choose one of {sorted(GLUE_TASKS)}.")
    kind, dataset, split, columns = GLUE_TASKS[task]
    items = (datasets.load_texts if kind == "texts" else datasets.load_pairs)(dataset, split=split)
    items = items.iloc[_subset(len(items), n_items, random_state)]
    return _unique_sentence_setup(f"{task}, {model}", model, items, columns, **options)


def _frequent_static_words(labelled: pd.Series, n_words: int, vectors) -> list[str]:
    """The ``n_words`` most frequent GloVe words (its rows are in frequency order) that ``labelled`` indexes.

    Only purely alphabetic words count (WordNet's collocations such as ``ice_cream`` are not GloVe tokens).
    """
    words = [word for word in vectors.words if word.isalpha() and word in labelled.index]
    if len(words) < n_words:
        raise ValueError(f"Only {len(words)} GloVe words have WordNet labels; ask for at most that many.")
    return words[:n_words]


def _static_setup(name: str, labels: pd.Series, n_words: int, n_items, random_state) -> Setup:
    """A static setup: the first ``n_words`` labelled GloVe words, then a uniform subset of ``n_items``."""
    from isolib.models import load_static

    vectors = load_static("glove-50d")
    words = _frequent_static_words(labels, n_words, vectors)
    words = [words[i] for i in _subset(len(words), n_items, random_state)]
    row = {word: i for i, word in enumerate(vectors.words)}
    X = vectors.matrix[[row[word] for word in words]].astype(np.float32)
    y = np.stack(labels.loc[words].to_numpy()).astype(np.float32)
    return Setup(name, X, y, None, bias=True, loss="sigmoid", words=tuple(words))


def pos_setup(*, n_words: int = 11_462, n_items: int | None = None, random_state=0) -> Setup:
    """(iii) stand-in: GloVe-50d vectors with the set of WordNet parts of speech of each word.

    The paper used word2vec vectors with CoDWoE's multi-label parts of speech (4 labels, bias,
    binary cross-entropy); neither is available here. Word-selection rule: the ``n_words`` most
    frequent alphabetic GloVe words that are WordNet lemmas (the paper's 11,462 items); the label
    vector marks noun, verb, adjective, adverb. ``n_items`` draws a uniform subset of those (quick runs).
    """
    pos = datasets.load_wordnet_pos()
    order = ["noun", "verb", "adjective", "adverb"]
    labels = pd.crosstab(pos.word, pos.pos).reindex(columns=order, fill_value=0).clip(upper=1)
    return _static_setup("(iii) CoDWoE POS", pd.Series(list(labels.to_numpy()), index=labels.index), n_words,
                         n_items, random_state)


def supersense_setup(*, n_words: int = 2_275, single: bool = True, n_items: int | None = None,
                     random_state=0) -> Setup:
    """(iv) stand-in: GloVe-50d vectors of nouns with their WordNet noun supersenses (26 labels, bias).

    The paper used word2vec vectors with Tikhonov et al.'s supersense data. Word-selection rule: the
    ``n_words`` most frequent alphabetic GloVe words that are WordNet nouns with exactly one noun
    supersense (``single``; frequent nouns are mostly polysemous, and a single supersense keeps a
    word's label unambiguous), or with any number of them (``single=False``, multi-label). The label
    vector has one column per noun lexicographer file (26), binary cross-entropy per label.
    """
    senses = datasets.load_wordnet_supersenses()
    labels = pd.crosstab(senses.word, senses.supersense).clip(upper=1)
    if single:
        labels = labels[labels.sum(axis=1) == 1]
    return _static_setup("(iv) supersenses", pd.Series(list(labels.to_numpy()), index=labels.index), n_words,
                         n_items, random_state)


def static_parameters(setup: Setup, dim: int = PAPER_STATIC_DIM) -> int:
    """Trainable parameters the same probe would have over ``dim``-dimensional vectors (the paper's word2vec)."""
    n_labels = setup.y.shape[1]
    return setup.n_items * dim + n_labels * (dim + int(setup.bias))


def tightening_demo(*, n_clusters: int = 4, n_per_cluster: int = 200, dim: int = 16,
                    spreads: Sequence[float] = (4.0, 2.0, 1.0, 0.5, 0.25, 0.1), random_state=0) -> pd.DataFrame:
    """Section 2 made concrete: the same cluster centres, members drawn ever closer to them.

    Each cluster's members are ``centre + spread * noise`` with the same standard normal noise at
    every spread; the centres are standard normal draws scaled by 3. As the spread shrinks the
    clusters tighten: the silhouette should rise and IsoScore fall.

    Returns
    -------
    pandas.DataFrame
        ``spread``, ``isoscore``, ``silhouette``.
    """
    generator = np.random.default_rng(random_state)
    centres = 3 * generator.standard_normal((n_clusters, dim))
    labels = np.repeat(np.arange(n_clusters), n_per_cluster)
    noise = generator.standard_normal((len(labels), dim))
    rows = []
    for spread in spreads:
        points = centres[labels] + spread * noise
        rows.append((spread, isoscore(points), silhouette(points, labels)))
    return pd.DataFrame(rows, columns=["spread", "isoscore", "silhouette"])


def variance_from_distances(X) -> np.ndarray:
    """Variance along each principal axis from pairwise squared distances (Zhang et al. 2012), largest first.

    The points are centred and rotated to their principal axes; for each axis k,
    ``var_k = sum_i sum_j (z_ik - z_jk)^2 / (2 n (n - 1))``, computed literally from the pairwise
    differences (O(n^2 d): for checking the identity, not for large n). It equals
    :func:`isolib.metrics.principal_variances`, IsoScore's variance vector.
    """
    points = np.asarray(X, dtype=np.float64)
    centred = points - points.mean(axis=0)
    _, _, axes = np.linalg.svd(centred, full_matrices=False)
    rotated = centred @ axes.T
    n = len(rotated)
    differences = rotated[:, None, :] - rotated[None, :, :]
    variances = np.zeros(points.shape[1])
    variances[: rotated.shape[1]] = (differences**2).sum(axis=(0, 1)) / (2 * n * (n - 1))
    return variances


def trace_summary(trace: pd.DataFrame) -> pd.Series:
    """First and last IsoScore and silhouette (mean and std over seeds), the spread over seeds, correlations.

    Returns
    -------
    pandas.Series
        ``isoscore_first``, ``isoscore_last``, ``silhouette_first``, ``silhouette_last`` (means over
        seeds) with ``..._std``; ``max_std`` and ``mean_std`` (over updates and both metrics, the
        standard deviation across seeds); ``pearson_max``, ``spearman_max`` (the weakest, i.e.
        largest, correlation over seeds) and their means.
    """
    from isolib.probe import correlations  # lazy: torch, which the runner's parameter check does without

    per_update = trace.groupby("update")[["isoscore", "silhouette"]]
    means, spreads = per_update.mean(), per_update.std(ddof=1).fillna(0.0)
    first, last = means.index.min(), means.index.max()
    correlation = correlations(trace)
    return pd.Series({
        "isoscore_first": means.isoscore[first], "isoscore_first_std": spreads.isoscore[first],
        "isoscore_last": means.isoscore[last], "isoscore_last_std": spreads.isoscore[last],
        "silhouette_first": means.silhouette[first], "silhouette_first_std": spreads.silhouette[first],
        "silhouette_last": means.silhouette[last], "silhouette_last_std": spreads.silhouette[last],
        "max_std": float(spreads.to_numpy().max()), "mean_std": float(spreads.to_numpy().mean()),
        "pearson_max": correlation.pearson.max(), "pearson_mean": correlation.pearson.mean(),
        "spearman_max": correlation.spearman.max(), "spearman_mean": correlation.spearman.mean(),
    })


_LOST = "(the value is lost in our copy of the paper)"


def trend_findings(summaries: pd.DataFrame, *, appendix: bool = False) -> list[Finding]:
    """Figures 2-4's claims per setup: IsoScore falls, the silhouette rises, they are strongly anti-correlated.

    Parameters
    ----------
    summaries : pandas.DataFrame
        One :func:`trace_summary` row per setup, indexed by setup name.
    appendix : bool
        The GLUE setups of Appendix A (claims prefixed so; no headline, no claim on the spread over
        seeds, which the appendix does not make); else the four setups, with the negligible spread.
    """
    prefix = "Appendix A: " if appendix else ""
    findings = []
    for setup, row in summaries.iterrows():
        findings += [
            declare(f"{prefix}IsoScore falls while the embeddings are optimised", "falls in every setup", setup,
                    f"{row.isoscore_first:.3f} -> {row.isoscore_last:.3f} (+- {row.isoscore_last_std:.3f})",
                    threshold(row.isoscore_first - row.isoscore_last - row.isoscore_last_std, above=0),
                    "reproduced if the last mean IsoScore is below the first by more than its standard deviation "
                    "over seeds.", kind="test", control="the first update's IsoScore, one std over seeds",
                    headline=not appendix),
            declare(f"{prefix}The silhouette rises", "rises in every setup", setup,
                    f"{row.silhouette_first:.3f} -> {row.silhouette_last:.3f} (+- {row.silhouette_last_std:.3f})",
                    threshold(row.silhouette_last - row.silhouette_first - row.silhouette_last_std, above=0),
                    "reproduced if the last mean silhouette is above the first by more than its standard deviation "
                    "over seeds.", kind="test", control="the first update's silhouette, one std over seeds",
                    headline=not appendix),
            declare(f"{prefix}IsoScore and silhouette are strongly negatively correlated",
                    f"strong negative Pearson and Spearman {_LOST}", setup,
                    f"Pearson up to {row.pearson_max:.3f} (mean {row.pearson_mean:.3f}), Spearman up to "
                    f"{row.spearman_max:.3f} (mean {row.spearman_mean:.3f}) over seeds",
                    threshold([row.pearson_max, row.spearman_max], below=-0.7),
                    "reproduced if both correlations are below -0.7 in every seed.", kind="test",
                    control="no correlation (0)", threshold_ours=True, headline=not appendix),
        ]
        if not appendix:
            findings.append(declare("Negligible standard deviation across seeds", f"maximum and mean std {_LOST}",
                                    setup, f"max {row.max_std:.4f}, mean {row.mean_std:.4f}",
                                    threshold(row.max_std, below=0.01),
                                    "reproduced if the largest standard deviation across seeds, at any update and "
                                    "for either metric, is below 0.01.", kind="test",
                                    control="a spread of 0.01 (ours)", threshold_ours=True))
    return findings


def section2_finding(demo: pd.DataFrame) -> Finding:
    """Section 2 made concrete: every tightening step of :func:`tightening_demo` raises the silhouette, lowers IsoScore."""
    rising = demo.silhouette.diff().dropna()
    falling = demo.isoscore.diff().dropna()
    return declare("Section 2: tighter clusters raise the silhouette and lower IsoScore", "argued mathematically",
                   "synthetic clusters",
                   f"silhouette {demo.silhouette.iloc[0]:.2f} -> {demo.silhouette.iloc[-1]:.2f}, IsoScore "
                   f"{demo.isoscore.iloc[0]:.2f} -> {demo.isoscore.iloc[-1]:.2f}",
                   threshold(np.r_[rising, -falling], above=0),
                   "passed if every tightening step raises the silhouette and lowers IsoScore (our own synthetic "
                   "demonstration of the paper's argument).", kind="check")


def assess_findings(summaries: pd.DataFrame, table1: pd.DataFrame, demo: pd.DataFrame,
                    glue_summaries: pd.DataFrame | None = None, table2: pd.DataFrame | None = None) -> list[Finding]:
    """Decide, claim by claim, whether this run reproduces the paper.

    Parameters
    ----------
    summaries : pandas.DataFrame
        One :func:`trace_summary` row per setup, indexed by setup name.
    table1 : pandas.DataFrame
        ``setup``, ``n_items``, ``n_parameters`` (ours), ``parameters_at_paper_dim`` (:func:`static_parameters`
        for the static setups, NaN for the others), ``full`` (whether the whole data set was used).
    demo : pandas.DataFrame
        :func:`tightening_demo`.
    glue_summaries : pandas.DataFrame, optional
        Appendix A: one :func:`trace_summary` row per GLUE setup (``"task, model"``); None or empty when
        the appendix is not run.
    table2 : pandas.DataFrame, optional
        Appendix A's Table 2: ``task``, ``model``, ``n_items``, ``n_parameters``, ``full``.

    Returns
    -------
    list of Finding
    """
    findings = trend_findings(summaries)
    for row in table1.itertuples():
        items, parameters = PAPER_TABLE1[row.setup]
        claim = f"Table 1: items and trainable parameters of {row.setup}"
        paper = f"{items:,} items, {parameters:,} parameters"
        static = not pd.isna(row.parameters_at_paper_dim)
        ours = f"{row.n_items:,} items, {row.n_parameters:,} parameters" + (
            f" ({row.parameters_at_paper_dim:,.0f} at word2vec's {PAPER_STATIC_DIM} dimensions)" if static else "")
        if not row.full:
            findings.append(not_comparable(claim, paper, "this profile uses a subset of the items.", kind="check",
                                           model=row.setup, ours=ours))
            continue
        counted = row.parameters_at_paper_dim if static else row.n_parameters
        rule = ("passed if both counts are exactly the paper's" + (
            f", the parameters counted for the same probe over {PAPER_STATIC_DIM}-d vectors (our GloVe stand-in "
            "has 50 dimensions, so our own count is smaller by construction)." if static else "."))
        findings.append(declare(claim, paper, row.setup, ours,
                                all_of(within(counted, parameters, 0), within(row.n_items, items, 0)), rule,
                                kind="check"))
    findings.append(section2_finding(demo))
    if glue_summaries is None or glue_summaries.empty:
        findings.append(not_comparable("Appendix A: GLUE training sets", "IsoScore falls, silhouette rises",
                                       "not run in this profile.", kind="test"))
        return findings
    findings += trend_findings(glue_summaries, appendix=True)
    for row in table2.itertuples():
        items, parameters = PAPER_TABLE2[row.task]
        claim = f"Table 2: items and trainable parameters of {row.task}"
        paper = f"{items:,} items, {parameters[row.model]:,} parameters" if row.model in parameters else (
            f"{items:,} items")
        ours = f"{row.n_items:,} items, {row.n_parameters:,} parameters"
        setup = f"{row.task}, {row.model}"
        if not row.full:
            findings.append(not_comparable(claim, paper, "this profile uses a subset of the items.", kind="check",
                                           model=setup, ours=ours))
        elif row.model not in parameters:
            findings.append(not_comparable(claim, paper, f"the paper does not run {row.model}.", kind="check",
                                           model=setup, ours=ours))
        elif row.task == "mrpc":
            findings.append(not_comparable(claim, paper, "our MRPC is the original train file, 4,076 pairs; GLUE's "
                                           "train split drops the 408 pairs of its dev split, whose ids are not "
                                           "available here.", kind="check", model=setup, ours=ours))
        else:
            findings.append(declare(claim, paper, setup, ours, all_of(within(row.n_parameters, parameters[row.model], 0),
                                                                      within(row.n_items, items, 0)),
                                    "passed if both counts are exactly the paper's.", kind="check"))
    return findings


# The setups the notebook builds, in the paper's order.
SETUPS = ("polarity", "snli", "pos", "supersenses")


def check_parameters(params: dict) -> None:
    """Refuse, in one sentence, parameters of notebook 04 its run would fail on (the runner calls it before any kernel).

    Parameters
    ----------
    params : dict
        Every parameter of the notebook: the defaults of its parameters cell completed by the run's.
    """
    from isolib.runner import check_choices, check_integers, check_models

    check_choices(params, "setups", SETUPS)
    check_choices(params, "glue_tasks", tuple(GLUE_TASKS))
    check_models(params, "glue_models")
    check_integers(params, ["n_items", "seeds", "random_state"])
    check_integers(params, ["n_updates", "glue_updates"], minimum=1)
    check_integers(params, ["glue_sample_size"], minimum=2)  # the silhouette needs two items
