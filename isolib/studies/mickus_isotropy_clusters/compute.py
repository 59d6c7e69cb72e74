"""The evidence of notebook 04 (Mickus et al. 2024): the setups, their traces and controls, Section 2, Appendix A.

Everything the study's claims read is computed here, at the granularity their intervals resample
(the probe's traces per setup, seed and update; the controls per seed; the correlations per setup and
seed), from the paper's setups for :func:`isolib.probe.train_probe` (the probe and its stored traces live
in the library):

* :func:`polarity_setup` (i) and :func:`snli_setup` (ii) -- all-MiniLM-L6-v2 sentence vectors exactly as
  sentence-transformers makes them (:func:`isolib.embed.sentence_embeddings`), with their labels;
* :func:`pos_setup` (iii) and :func:`supersense_setup` (iv) -- stand-ins for the paper's word2vec
  setups: GloVe-50d word vectors with WordNet's parts of speech or noun supersenses as labels;
* :func:`glue_setup` -- Appendix A: a GLUE training set (CoLA, MRPC, RTE, SST-2) under an SBERT model,
  one trainable vector per unique sentence; :func:`appendix_a_plan` -- every task x model of the
  paper's Appendix A, run or not and why;
* :meth:`Setup.n_parameters`, :func:`setup_table` and :func:`glue_table` -- the trainable parameters of
  the setups (the paper's Tables 1 and 2);
* :func:`train_setups` and :func:`trace_correlations` -- the traces and their correlations per seed;
* :func:`shuffled_labels`, :func:`control_traces` and :func:`run_controls` -- controls beyond the paper:
  the same training on shuffled labels, and on an objective that ignores the labels;
* :func:`tightening_demo` -- Section 2 made concrete: clusters tightened step by step;
* :func:`variance_from_distances` -- the identity the proof rests on (Zhang et al. 2012).

What the seeds vary: every run of a setup starts from the same vectors and sees every item, so a
seed sets only the classifier's initialisation (in a shuffled-label control also the permutation;
in Appendix A also the metric samples). Intervals over seeds cover that, not the choice of data.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from isolib import datasets
from isolib.embed import sentence_embeddings
from isolib.metrics import isoscore, silhouette
from isolib.models import OFFLINE_MODELS, load_static
from isolib.probe import TRACE_COLUMNS, correlations, make_probe, train_probe
from isolib.studies.mickus_isotropy_clusters.settings import (
    GLUE_CLASSIFICATION_TASKS,
    GLUE_TASKS,
    LABEL_FREE,
    PAPER_GLUE_MODELS,
    PAPER_STATIC_DIM,
    PAPER_TABLE1,
    PAPER_TABLE2,
    SETUP_NAMES,
    SHUFFLED,
)

__all__ = [
    "Setup",
    "polarity_setup",
    "snli_setup",
    "pos_setup",
    "supersense_setup",
    "build_setups",
    "glue_setup",
    "build_glue_setups",
    "appendix_a_plan",
    "static_parameters",
    "setup_table",
    "GLUE_TABLE_COLUMNS",
    "glue_table",
    "train_setups",
    "CORRELATION_COLUMNS",
    "trace_correlations",
    "CONTROL_COLUMNS",
    "shuffled_labels",
    "control_traces",
    "run_controls",
    "shuffled_correlations",
    "tightening_demo",
    "variance_from_distances",
]


@dataclass(frozen=True)
class Setup:
    """One of the paper's setups, ready for :func:`isolib.probe.train_probe`.

    Attributes
    ----------
    name : str
        As in :data:`SETUP_NAMES` (its numeral keys :data:`PAPER_TABLE1`), or ``"task, model"`` in Appendix A.
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
    return Setup(SETUP_NAMES["polarity"], X, texts.label.to_numpy(), None, bias=False)


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
    return _unique_sentence_setup(SETUP_NAMES["snli"], "minilm", pairs, ("sentence1", "sentence2"), **options)


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


def build_glue_setups(tasks: Sequence[str], models: Sequence[str], *, n_items: int | None = None, random_state=0,
                      device: str = "cpu") -> dict[tuple[str, str], Setup]:
    """:func:`glue_setup` of every task x model, keyed by ``(task, model)`` (tasks outer, models inner)."""
    return {(task, model): glue_setup(task, model, n_items=n_items, random_state=random_state, device=device)
            for task in tasks for model in models}


def appendix_a_plan(glue_tasks: Sequence[str], glue_models: Sequence[str]) -> pd.DataFrame:
    """Appendix A whole: every GLUE classification task x every model of the paper (and any other run), run or not.

    A pair is run when its task's training set is in the data registry (:data:`GLUE_TASKS`) and the
    profile asks for it; otherwise the reason is the first that applies: the data are not in the
    registry, the model is a Hub model (not available offline), or this profile leaves it out.

    Parameters
    ----------
    glue_tasks, glue_models : sequence of str
        The notebook's parameters: the tasks and models this run trains.

    Returns
    -------
    pandas.DataFrame
        One row per task x model, the paper's order first: ``task``, ``model``, ``paper_items``
        (Table 2; NaN for a model the paper does not run), ``run`` (bool), ``reason`` ("" when run).
    """
    models = list(dict.fromkeys([*PAPER_GLUE_MODELS, *glue_models]))
    rows = []
    for task in GLUE_CLASSIFICATION_TASKS:
        for model in models:
            run = task in glue_tasks and model in glue_models
            if task not in GLUE_TASKS:
                reason = ("not run: its training set is not in the data registry (data/registry.yaml) nor in "
                          "../shared/data.")
            elif model not in glue_models and model not in OFFLINE_MODELS:
                reason = (f"not run: {model} is a Hugging Face Hub model, not available offline (the paper profile "
                          "runs it).")
            elif not run:
                reason = "not run in this profile (its glue_tasks and glue_models leave it out)."
            else:
                reason = ""
            rows.append({"task": task, "model": model, "paper_items": PAPER_TABLE2[task][0]
                         if model in PAPER_GLUE_MODELS else np.nan, "run": run, "reason": reason})
    return pd.DataFrame(rows, columns=["task", "model", "paper_items", "run", "reason"])


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
    return _static_setup(SETUP_NAMES["pos"], pd.Series(list(labels.to_numpy()), index=labels.index), n_words,
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
    name = SETUP_NAMES["supersenses"] if single else SETUP_NAMES["supersenses"].replace("one", "any number")
    return _static_setup(name, pd.Series(list(labels.to_numpy()), index=labels.index), n_words,
                         n_items, random_state)


def static_parameters(setup: Setup, dim: int = PAPER_STATIC_DIM) -> int:
    """Trainable parameters the same probe would have over ``dim``-dimensional vectors (the paper's word2vec)."""
    n_labels = setup.y.shape[1]
    return setup.n_items * dim + n_labels * (dim + int(setup.bias))


def build_setups(names: Sequence[str], *, n_items: int | None = None, random_state=0,
                 device: str = "cpu") -> list[Setup]:
    """The setups ``names`` (keys of :data:`SETUP_NAMES`, in the order given), each on ``n_items`` items (None: all).

    The sentence setups embed on ``device``; the static ones need no model.
    """
    builders = {"polarity": partial(polarity_setup, device=device), "snli": partial(snli_setup, device=device),
                "pos": pos_setup, "supersenses": supersense_setup}
    return [builders[name](n_items=n_items, random_state=random_state) for name in names]


# --------------------------------------------------------------------------- counts (Tables 1 and 2)

def setup_table(setups: Sequence[Setup], *, full: bool) -> pd.DataFrame:
    """Table 1: per setup its items, vectors, dimension and trainable parameters, beside the paper's.

    Parameters
    ----------
    setups : sequence of Setup
        The four setups (or some of them), named as in :data:`SETUP_NAMES`.
    full : bool
        Whether every item of each data set was used (the counts are comparable only then).

    Returns
    -------
    pandas.DataFrame
        ``setup``, ``n_items``, ``n_vectors``, ``dim``, ``n_parameters``, ``parameters_at_paper_dim``
        (:func:`static_parameters` for the static setups, NaN for the others), ``paper_items``,
        ``paper_parameters``, ``full``.
    """
    return pd.DataFrame([{
        "setup": setup.name, "n_items": setup.n_items, "n_vectors": len(setup.X), "dim": setup.X.shape[1],
        "n_parameters": setup.n_parameters,
        "parameters_at_paper_dim": static_parameters(setup) if setup.words else np.nan,
        "paper_items": PAPER_TABLE1[setup.name.split()[0]][0],
        "paper_parameters": PAPER_TABLE1[setup.name.split()[0]][1], "full": full} for setup in setups])


GLUE_TABLE_COLUMNS = ["task", "model", "n_items", "n_vectors", "n_parameters", "paper_items", "paper_parameters",
                      "full"]


def glue_table(setups: dict[tuple[str, str], Setup], *, full: bool) -> pd.DataFrame:
    """Table 2: per GLUE task and model (:func:`build_glue_setups`) its items, vectors and parameters, beside the
    paper's (``paper_parameters`` missing for a model the paper does not run); ``full`` as :func:`setup_table`."""
    return pd.DataFrame([{
        "task": task, "model": model, "n_items": setup.n_items, "n_vectors": len(setup.X),
        "n_parameters": setup.n_parameters, "paper_items": PAPER_TABLE2[task][0],
        "paper_parameters": PAPER_TABLE2[task][1].get(model), "full": full}
        for (task, model), setup in setups.items()], columns=GLUE_TABLE_COLUMNS)


# --------------------------------------------------------------------------- traces and their correlations

def train_setups(setups: Iterable[Setup], *, n_updates: int, seeds: Sequence[int], sample_size: int | None = None,
                 device: str = "cpu") -> pd.DataFrame:
    """Each setup's :func:`isolib.probe.train_probe` traces, one below the other, with a ``setup`` column.

    Each seed's run is stored in the cache as it is finished (``resume``): a stopped run resumes.

    Parameters
    ----------
    setups : iterable of Setup
    n_updates : int
        Full-batch Adam updates per seed.
    seeds : sequence of int
    sample_size : int, optional
        The metrics on a fresh sample of this many items per update when a set is larger (Appendix A).
    device : str

    Returns
    -------
    pandas.DataFrame
        ``seed``, ``update``, ``loss``, ``isoscore``, ``silhouette``, ``setup``: one row per setup, seed and
        recorded update (no row, these columns, when there is no setup).
    """
    traces = [train_probe(setup.X, setup.y, loss=setup.loss, bias=setup.bias, item_index=setup.item_index,
                          n_updates=n_updates, seeds=seeds, sample_size=sample_size, device=device, resume=True)
              .assign(setup=setup.name) for setup in setups]
    return pd.concat(traces, ignore_index=True) if traces else pd.DataFrame(columns=[*TRACE_COLUMNS, "setup"])


CORRELATION_COLUMNS = ["setup", "seed", "pearson", "spearman"]


def trace_correlations(traces: pd.DataFrame, silhouette_column: str = "silhouette") -> pd.DataFrame:
    """Pearson and Spearman correlation between IsoScore and a silhouette over the updates, per setup and seed.

    Parameters
    ----------
    traces : pandas.DataFrame
        ``setup``, ``seed``, ``isoscore`` and ``silhouette_column`` (:func:`train_setups`, or the shuffled
        runs of :func:`run_controls` with ``silhouette_column="silhouette_shuffled"``).
    silhouette_column : str

    Returns
    -------
    pandas.DataFrame
        :data:`CORRELATION_COLUMNS`, setups in their order of appearance (no row when ``traces`` has none).
    """
    if not len(traces):
        return pd.DataFrame(columns=CORRELATION_COLUMNS)
    columns = traces[["setup", "seed", "isoscore", silhouette_column]].rename(
        columns={silhouette_column: "silhouette"})
    return columns.groupby("setup", sort=False)[["seed", "isoscore", "silhouette"]].apply(correlations).reset_index()


# --------------------------------------------------------------------------- controls (beyond the paper)

CONTROL_COLUMNS = ["control", "seed", "update", "loss", "isoscore", "silhouette_true", "silhouette_shuffled"]


def shuffled_labels(y, *, random_state=None) -> np.ndarray:
    """The labels of ``y`` given to other items: its rows in a random order, so every label keeps its count.

    Parameters
    ----------
    y : array_like of shape (n_items,) or (n_items, n_labels)
        Class labels, or 0/1 label vectors (permuted as whole rows).
    random_state : int or numpy.random.Generator, optional

    Returns
    -------
    ndarray of the shape of ``y``
    """
    labels = np.asarray(y)
    return labels[np.random.default_rng(random_state).permutation(len(labels))]


def control_traces(setup: Setup, *, n_updates: int, seeds: Sequence[int], every: int = 1,
                   device: str = "cpu", resume: bool = False) -> pd.DataFrame:
    """The setup's training, twice more: on shuffled labels, and on an objective that ignores the labels.

    * ``shuffled labels``: the labels permuted over the items (:func:`shuffled_labels`, one
      permutation per seed, drawn with the seed), so the classes keep their sizes but carry nothing
      of the vectors; the silhouette is measured against the shuffled labels and against the true ones.
    * ``label-free``: the same probe, loss and optimiser, every item's target uniform over the
      classes (:func:`isolib.probe.train_probe` with ``label_free``): the objective ignores the
      labels. Of the label-free objectives this is the simplest that moves the vectors under the
      same classifier and optimiser (no update at all would leave every metric constant by
      construction); the silhouette is against the true labels.

    Parameters
    ----------
    setup : Setup
    n_updates : int
    seeds : sequence of int
    every : int
        Record the metrics every ``every`` updates (and after the last): the training is the same,
        and the controls are judged on the values recorded (the first and last, and every recorded
        step for steadiness), so a sparser trace saves most of the cost (the metrics, not the updates,
        take the time).
    device : str
    resume : bool
        Store each run in the cache and reuse it (:func:`isolib.probe.train_probe`).

    Returns
    -------
    pandas.DataFrame
        :data:`CONTROL_COLUMNS`: ``control``, ``seed``, ``update``, ``loss``, ``isoscore``,
        ``silhouette_true`` (against the setup's labels), ``silhouette_shuffled`` (against the
        labels a shuffled run trained on; NaN in the label-free runs).
    """
    options = dict(loss=setup.loss, bias=setup.bias, item_index=setup.item_index, n_updates=n_updates, every=every,
                   device=device, resume=resume)
    shuffled = [train_probe(setup.X, shuffled_labels(setup.y, random_state=seed), seeds=[seed],
                            other_labels={"true": setup.y}, **options) for seed in seeds]
    free = train_probe(setup.X, setup.y, seeds=seeds, label_free=True, **options).rename(
        columns={"silhouette": "silhouette_true"})
    runs = [*(run.rename(columns={"silhouette": "silhouette_shuffled"}).assign(control=SHUFFLED) for run in shuffled),
            free.assign(control=LABEL_FREE, silhouette_shuffled=np.nan)]
    return pd.concat(runs, ignore_index=True)[CONTROL_COLUMNS]


def run_controls(setups: Iterable[Setup], *, n_updates: int, seeds: Sequence[int], every: int = 1,
                 device: str = "cpu") -> pd.DataFrame:
    """:func:`control_traces` of each setup, stored as they finish, with a ``setup`` column.

    Returns
    -------
    pandas.DataFrame
        :data:`CONTROL_COLUMNS` and ``setup`` (no row, these columns, when there is no setup).
    """
    runs = [control_traces(setup, n_updates=n_updates, seeds=seeds, every=every, device=device, resume=True)
            .assign(setup=setup.name) for setup in setups]
    return pd.concat(runs, ignore_index=True) if runs else pd.DataFrame(columns=[*CONTROL_COLUMNS, "setup"])



def shuffled_correlations(controls: pd.DataFrame) -> pd.DataFrame:
    """:func:`trace_correlations` of the shuffled-label runs of :func:`run_controls`: IsoScore against the
    silhouette by the labels they were trained on, per setup and seed."""
    return trace_correlations(controls[controls.control == SHUFFLED], silhouette_column="silhouette_shuffled")


# --------------------------------------------------------------------------- Section 2

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

