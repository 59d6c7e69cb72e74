"""What notebook 03 computes on pre-trained vectors: the six processing rows on STS, the grid, the per-layer
isotropy and the SST-2 probe, and the evidence tables the claims read (the fine-tuning runs are in
:mod:`~isolib.studies.rajaee_cluster_isotropy.finetuning`).

Built on :mod:`isolib.transforms`, :mod:`isolib.evaluation` and :mod:`isolib.metrics`:

* :func:`sentence_pairs` -- an STS dataset as unique sentences and the index of each pair's two sides;
* :func:`transform_tokens` -- one of :data:`~isolib.studies.rajaee_cluster_isotropy.settings.METHODS`
  applied to a set of token vectors;
* :func:`evaluate_methods` -- every method (stochastic ones over several seeds): Pearson and Spearman
  x 100, I(W) and IsoScore of the token and of the sentence vectors, and each pair's cosine;
* :func:`sweep` -- Spearman over a grid of (k, n_pc) and seeds, to see whether the gain is robust or tuned
  (each row and grid point stored in the cache with ``resume=True``, so that a stopped run resumes);
* :func:`scale_dependence` -- I(W) and IsoScore of the same clouds at several scales;
* :func:`layer_isotropy` -- I(W) and IsoScore of the pre-trained token vectors at every layer (a slide);
* :func:`probe_with_method` -- a logistic-regression probe on sentence vectors (the SST-2 protocol);
* :func:`sts_evidence` and :func:`probe_evidence` -- the rows as the tables the claims resample: each
  pair's cosine per seed, each dev sentence's probe answer per seed.

Only this module's code (and the library code it calls) keys the stored steps
(:func:`isolib.steps.memoized`): a change to a claim, a rule or a figure recomputes nothing.

Protocol (stated once)
----------------------
Tokens: the last layer, special tokens excluded (a decoder's start token, in its ``start_token``
view, is one). The processing is **fitted on the token vectors of the evaluation set
itself**, per dataset (transductive, as the authors did), then sentence vectors are the mean of
each sentence's processed tokens, and the score of a pair is the cosine of its two sentence vectors.
A cluster with fewer than ``n_pc`` tokens is merged into the nearest larger cluster
(:class:`isolib.transforms.ClusterIsotropy`, ``small_clusters="merge"``). **I(W)** is computed on the
processed token vectors (the authors') and on the sentence vectors; it is not scale invariant, so
values are comparable only between methods on the same vectors. IsoScore is given beside it.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from sklearn.linear_model import LogisticRegression

from isolib import datasets
from isolib._checks import check_int
from isolib.evaluation import mean_pool, sts_correlation
from isolib.metrics import isoscore, partition_isotropy
from isolib.steps import memoized
from isolib.studies.rajaee_cluster_isotropy.protocol import (
    DATASETS,
    GMM_FIT_SIZE,
    METHODS,
    PROPOSED,
    STOCHASTIC_METHODS,
    Settings,
)
from isolib.transforms import ClusterIsotropy, abtt, centre

__all__ = ["PairedSentences", "sentence_pairs", "analysed_tokens", "transform_tokens", "subset_mean_spearman",
           "evaluate_methods", "sts_evidence", "sweep", "scale_dependence", "layer_isotropy", "probe_correct",
           "probe_with_method", "probe_evidence"]

# The code of every stored step: this module and the library code it imports (isolib.computation).
_CODE = (sys.modules[__name__],)


@dataclass(frozen=True)
class PairedSentences:
    """An STS dataset as unique sentences and pairs of indices into them.

    Attributes
    ----------
    sentences : list of str
        Every distinct sentence of both sides, in first-seen order.
    first, second : ndarray of int, shape (n_pairs,)
        Index into ``sentences`` of each pair's two sides.
    gold : ndarray of float, shape (n_pairs,)
        Gold similarity.
    subset : ndarray of str, shape (n_pairs,)
        The file each pair comes from (STS12-16 pool several subsets, such as MSRpar and OnWN).
    """

    sentences: list
    first: np.ndarray
    second: np.ndarray
    gold: np.ndarray
    subset: np.ndarray


def sentence_pairs(dataset: str) -> PairedSentences:
    """The scored pairs of one dataset of :data:`~isolib.studies.rajaee_cluster_isotropy.settings.DATASETS`
    (e.g. ``"stsb-dev"``)."""
    if dataset not in DATASETS:
        raise ValueError(f"Unknown dataset {dataset!r}; choose among {', '.join(DATASETS)}.")
    name, split, _ = DATASETS[dataset]
    pairs = datasets.load_sts(name, split=split)
    sentences = list(dict.fromkeys(pd.concat([pairs.sentence1, pairs.sentence2])))
    index = {sentence: i for i, sentence in enumerate(sentences)}
    return PairedSentences(sentences, pairs.sentence1.map(index).to_numpy(), pairs.sentence2.map(index).to_numpy(),
                           pairs.score.to_numpy(dtype=float), pairs.subset.to_numpy(dtype=str))


def analysed_tokens(embedding) -> tuple[np.ndarray, np.ndarray]:
    """The analysed tokens of an :class:`isolib.embed.Embeddings`: its last layer's non-special token vectors
    (float32) and the sentence index of each."""
    kept = ~embedding.tokens.is_special.to_numpy()
    return np.asarray(embedding.layer(-1)[kept], dtype=np.float32), embedding.tokens.sentence_id.to_numpy()[kept]


def transform_tokens(X, method: str, settings: Settings, *, n_init: int = 1, random_state=None) -> np.ndarray:
    """Token vectors ``(n_tokens, n_features)`` processed by one of the methods (float64).

    "Mean" subtracts the global mean; "Mean + PCA" is all-but-the-top with ``settings.n_global``
    directions; the cluster methods fit :class:`~isolib.transforms.ClusterIsotropy` on ``X`` itself
    (k-means on every vector, or a diagonal Gaussian mixture on ``GMM_FIT_SIZE`` of them; small
    clusters merged) with ``settings.n_pc`` directions ("K-means + Mean": none).
    """
    if method == "pre-trained":
        return np.asarray(X, dtype=np.float64)
    if method == "Mean":
        return centre(X)
    if method == "Mean + PCA":
        return abtt(X, settings.n_global)
    if method not in METHODS:
        raise ValueError(f"Unknown method {method!r}; choose among {', '.join(METHODS)}.")
    n_pc = 0 if method == "K-means + Mean" else settings.n_pc
    gmm = method.startswith("GMM")
    estimator = ClusterIsotropy(settings.n_clusters, n_pc, method="gmm" if gmm else "kmeans", small_clusters="merge",
                                n_init=n_init, fit_size=GMM_FIT_SIZE if gmm else None, random_state=random_state)
    return estimator.fit_transform(X)


def subset_mean_spearman(similarities, pairs: PairedSentences) -> float:
    """Spearman x 100 within each subset of a dataset, averaged over its subsets (the pooled value's companion).

    STS12-16 pool several subsets (news, forums, glosses ...) whose gold scales differ; the slides do not
    say whether they pooled them (as here and SentEval's "all") or averaged per subset (SentEval's "mean").
    A subset with constant gold scores has no correlation and is left out.
    """
    similarities = np.asarray(similarities, dtype=float)
    values = [100 * pd.Series(similarities[rows]).corr(pd.Series(pairs.gold[rows]), method="spearman")
              for rows in (pairs.subset == name for name in pd.unique(pairs.subset))
              if rows.sum() > 2 and np.ptp(pairs.gold[rows]) > 0]
    return float(np.mean(values)) if values else np.nan


def _scores(tokens: np.ndarray, sentence_ids: np.ndarray, pairs: PairedSentences) -> dict:
    sentences = mean_pool(tokens, sentence_ids, n_sentences=len(pairs.sentences))
    result = sts_correlation(sentences[pairs.first], sentences[pairs.second], pairs.gold)
    return {"pearson": result.pearson, "spearman": result.spearman,
            "spearman_subset_mean": subset_mean_spearman(result.similarities, pairs),
            "iw_tokens": partition_isotropy(tokens), "iw_sentences": partition_isotropy(sentences),
            "isoscore_tokens": isoscore(tokens), "isoscore_sentences": isoscore(sentences),
            "similarities": result.similarities}


def _method_row(points: np.ndarray, sentence_ids: np.ndarray, pairs: PairedSentences, settings: Settings, method: str,
                seed: int | None, n_init: int, resume: bool) -> dict:
    def compute() -> dict:
        processed = transform_tokens(points, method, settings, n_init=n_init, random_state=seed)
        return {"method": method, "seed": np.nan if seed is None else seed, **_scores(processed, sentence_ids, pairs)}

    inputs = {"points": points, "sentence_ids": sentence_ids, "pairs": pairs, "settings": settings, "method": method,
              "seed": seed, "n_init": n_init}
    return memoized("rajaee_sts_rows", inputs, compute, code=_CODE, store=resume)


def evaluate_methods(tokens, sentence_ids, pairs: PairedSentences, settings: Settings, *, seeds: Sequence[int] = (0,),
                     methods: Sequence[str] = METHODS, n_init: int = 1, n_jobs: int | None = None,
                     resume: bool = False) -> pd.DataFrame:
    """Every method on one dataset: STS correlations and isotropy, stochastic methods once per seed.

    Parameters
    ----------
    tokens : array_like of shape (n_tokens, n_features)
        The analysed token vectors of every sentence of ``pairs`` (special tokens already left out).
    sentence_ids : array_like of int, shape (n_tokens,)
        Index into ``pairs.sentences`` of each token.
    pairs : PairedSentences
    settings : Settings
    seeds : sequence of int
        Seeds of the clustering (deterministic methods run once, with seed NaN).
    methods : sequence of str
        Among the six methods.
    n_init : int
        Restarts of each clustering (the authors' kmeans2: one initialisation).
    n_jobs : int or None
        Worker processes over the (method, seed) rows (joblib; None: one, -1: every core). Each row
        is seeded, so the values do not depend on it (up to the rounding of threaded sums).
    resume : bool
        Store each row in the cache as it is finished (:func:`isolib.steps.memoized`) and reuse the
        rows stored for the same inputs and code: a run stopped half-way resumes where it was.

    Returns
    -------
    pandas.DataFrame, one row per (method, seed)
        ``method``, ``seed``, ``pearson``, ``spearman`` (x 100, pooled over the dataset's subsets),
        ``spearman_subset_mean`` (x 100, the mean over subsets), ``iw_tokens``, ``iw_sentences``,
        ``isoscore_tokens``, ``isoscore_sentences``, and ``similarities`` (each pair's cosine, an array
        of shape (n_pairs,), for :func:`sts_evidence`).
    """
    points = np.asarray(tokens, dtype=np.float32)
    ids = np.asarray(sentence_ids)
    runs = [(method, seed) for method in methods for seed in (seeds if method in STOCHASTIC_METHODS else [None])]
    rows = Parallel(n_jobs=n_jobs)(delayed(_method_row)(points, ids, pairs, settings, method, seed, n_init, resume)
                                   for method, seed in runs)
    return pd.DataFrame(rows)


def _per_item(runs: pd.DataFrame, keys: list[str], column: str, item: str, value: str) -> pd.DataFrame:
    """One row per run and item: the arrays of ``runs[column]`` laid out long, the run's ``keys`` repeated."""
    lengths = runs[column].map(len).to_numpy()
    table = runs.loc[runs.index.repeat(lengths), keys].reset_index(drop=True)
    items = np.concatenate([np.arange(length) for length in lengths]) if len(runs) else np.zeros(0, dtype=int)
    values = np.concatenate(runs[column].to_list()) if len(runs) else np.zeros(0)
    return table.assign(**{item: items, value: values})


def sts_evidence(per_seed: pd.DataFrame, pairs: dict) -> dict[str, pd.DataFrame]:
    """The STS rows as the tables the claims read: every score per row, every pair's cosine per row, the gold scores.

    Parameters
    ----------
    per_seed : pandas.DataFrame
        :func:`evaluate_methods` rows with ``model`` and ``dataset``, ``similarities`` included.
    pairs : dict of str to PairedSentences
        Each dataset's pairs.

    Returns
    -------
    dict of str to pandas.DataFrame
        ``sts_per_seed``: the rows without their cosines; ``sts_similarities``: ``model``, ``dataset``,
        ``method``, ``seed``, ``pair`` (its index in the dataset) and ``similarity``, one row per row of
        ``per_seed`` and pair, in the order of ``per_seed``; ``sts_gold``: ``dataset``, ``pair``, ``gold`` and
        ``subset``, one row per pair.
    """
    gold = pd.concat([pd.DataFrame({"dataset": dataset, "pair": np.arange(len(paired.gold)), "gold": paired.gold,
                                    "subset": paired.subset}) for dataset, paired in pairs.items()], ignore_index=True)
    similarities = _per_item(per_seed, ["model", "dataset", "method", "seed"], "similarities", "pair", "similarity")
    return {"sts_per_seed": per_seed.drop(columns="similarities"), "sts_similarities": similarities,
            "sts_gold": gold.astype({"subset": str})}


def _sweep_spearman(points: np.ndarray, sentence_ids: np.ndarray, pairs: PairedSentences, settings: Settings,
                    seed: int, n_init: int, resume: bool) -> float:
    def compute() -> float:
        processed = transform_tokens(points, PROPOSED, settings, n_init=n_init, random_state=seed)
        sentences = mean_pool(processed, sentence_ids, n_sentences=len(pairs.sentences))
        return sts_correlation(sentences[pairs.first], sentences[pairs.second], pairs.gold).spearman

    inputs = {"points": points, "sentence_ids": sentence_ids, "pairs": pairs, "settings": settings, "seed": seed,
              "n_init": n_init}
    return memoized("rajaee_sweep", inputs, compute, code=_CODE, store=resume)


def sweep(tokens, sentence_ids, pairs: PairedSentences, cluster_counts: Sequence[int], pc_counts: Sequence[int], *,
          seeds: Sequence[int] = (0,), n_init: int = 1, n_jobs: int | None = None, resume: bool = False) -> pd.DataFrame:
    """Spearman x 100 of the proposed method at every point of a grid of k and n_pc, once per seed.

    ``n_jobs`` worker processes share the grid points and seeds, and ``resume`` stores and reuses each
    point, as in :func:`evaluate_methods`.

    Returns
    -------
    pandas.DataFrame, one row per grid point and seed (points in the grid's order, seeds within each)
        ``n_clusters``, ``n_pc``, ``seed``, ``spearman``; averaged over seeds by
        :func:`isolib.studies.rajaee_cluster_isotropy.summaries.grid_summary`.
    """
    points = np.asarray(tokens, dtype=np.float32)
    ids = np.asarray(sentence_ids)
    runs = [(n_clusters, n_pc, seed) for n_clusters in cluster_counts for n_pc in pc_counts for seed in seeds]
    values = Parallel(n_jobs=n_jobs)(delayed(_sweep_spearman)(points, ids, pairs, Settings(n_clusters, n_pc, 0), seed,
                                                               n_init, resume)
                                     for n_clusters, n_pc, seed in runs)
    return pd.DataFrame([(*run, float(value)) for run, value in zip(runs, values)],
                        columns=["n_clusters", "n_pc", "seed", "spearman"])


def scale_dependence(clouds: dict, scales: Sequence[float] = (1, 3, 10)) -> pd.DataFrame:
    """I(W) and IsoScore of each cloud multiplied by each scale: the same geometry, a different I(W).

    Parameters
    ----------
    clouds : dict of str to array_like of shape (n_samples, n_features)
        Named point clouds.
    scales : sequence of float

    Returns
    -------
    pandas.DataFrame, one row per (cloud, scale)
        ``vectors`` (the name), ``scale``, ``iw``, ``isoscore``.
    """
    return pd.DataFrame([{"vectors": name, "scale": scale, "iw": partition_isotropy(scale * np.asarray(points)),
                          "isoscore": isoscore(scale * np.asarray(points))}
                         for name, points in clouds.items() for scale in scales])


def layer_isotropy(embedding, *, n_halves: int = 3, random_state=0) -> pd.DataFrame:
    """I(W) and IsoScore of the token vectors at every layer of ``embedding``: on every sentence and on random halves.

    The slides' "Pre-trained BERT isotropy": the hidden layers against the input layer (layer 0, no
    context). The sentence is the sampling unit: each half is a random half of the sentences, drawn
    with ``random_state``, so the spread over halves is the interval a reader can check the order of
    the layers against.

    Parameters
    ----------
    embedding : isolib.embed.Embeddings
        Token vectors of several layers (special tokens are left out).
    n_halves : int
        Random halves of the sentences, besides all of them.
    random_state : int

    Returns
    -------
    pandas.DataFrame
        ``layer`` (ours: 0 = input embeddings), ``sample`` (``"all"``, ``"half 1"`` ...), ``n_tokens``,
        ``i_w``, ``isoscore``, ``mean_norm`` (the mean length of a token vector, since I(W) is not scale invariant).
    """
    kept = ~embedding.tokens.is_special.to_numpy()
    sentence_ids = embedding.tokens.sentence_id.to_numpy()[kept]
    sentences = np.unique(sentence_ids)
    generator = np.random.default_rng(random_state)
    samples = {"all": np.ones(len(sentence_ids), dtype=bool)}
    for half in range(1, check_int(n_halves, "n_halves", low=1) + 1):
        chosen = generator.choice(sentences, len(sentences) // 2, replace=False)
        samples[f"half {half}"] = np.isin(sentence_ids, chosen)
    rows = []
    for layer in embedding.layers:
        vectors = np.asarray(embedding.layer(layer)[kept], dtype=np.float64)
        rows += [{"layer": layer, "sample": sample, "n_tokens": int(rows_of.sum()),
                  "i_w": partition_isotropy(vectors[rows_of]), "isoscore": isoscore(vectors[rows_of]),
                  "mean_norm": float(np.linalg.norm(vectors[rows_of], axis=1).mean())}
                 for sample, rows_of in samples.items()]
    return pd.DataFrame(rows)


def probe_correct(train_vectors, train_labels, test_vectors, test_labels, *, random_state=None) -> np.ndarray:
    """Which test items a logistic-regression probe (L2, C = 1, standardised inputs) trained on one set gets right.

    Returns
    -------
    ndarray of bool, shape (n_test,)
        Its mean is the probe's accuracy; kept per item for a paired comparison of two probes.
    """
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    probe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000, random_state=random_state))
    probe.fit(np.asarray(train_vectors), np.asarray(train_labels))
    return probe.predict(np.asarray(test_vectors)) == np.asarray(test_labels)


def probe_with_method(train: tuple, dev: tuple, settings: Settings, *, seeds: Sequence[int] = (0,), n_init: int = 1,
                      random_state=None) -> pd.DataFrame:
    """The SST-2 protocol: a probe on pooled sentence vectors, without and with the method fitted on training tokens.

    Parameters
    ----------
    train, dev : tuple of (tokens, sentence_ids, labels)
        ``tokens`` of shape (n_tokens, n_features) (special tokens left out), ``sentence_ids`` of shape
        (n_tokens,) numbering the split's sentences from 0, ``labels`` of shape (n_sentences,).
    settings : Settings
        k and n_pc of the method.
    seeds : sequence of int
        Seeds of the clustering.

    Returns
    -------
    pandas.DataFrame
        ``method`` (``pre-trained`` or the proposed method), ``seed``, ``accuracy`` on ``dev`` and
        ``correct`` (which dev sentences it got right, an array of shape (n_dev,)). The method is fitted
        on the training tokens only; dev tokens are assigned to the training clusters and processed with
        the training means and directions, so nothing of ``dev`` is fitted.
    """
    (train_tokens, train_ids, train_labels), (dev_tokens, dev_ids, dev_labels) = train, dev

    def row(method: str, seed, train_pooled, dev_pooled) -> dict:
        correct = probe_correct(train_pooled, train_labels, dev_pooled, dev_labels, random_state=random_state)
        return {"method": method, "seed": seed, "accuracy": float(correct.mean()), "correct": correct}

    rows = [row("pre-trained", np.nan, mean_pool(train_tokens, train_ids), mean_pool(dev_tokens, dev_ids))]
    for seed in seeds:
        method = ClusterIsotropy(settings.n_clusters, settings.n_pc, small_clusters="merge", n_init=n_init,
                                 random_state=seed).fit(train_tokens)
        rows.append(row(PROPOSED, seed, mean_pool(method.transform(train_tokens), train_ids),
                        mean_pool(method.transform(dev_tokens), dev_ids)))
    return pd.DataFrame(rows)


def probe_evidence(runs: pd.DataFrame) -> pd.DataFrame:
    """:func:`probe_with_method` rows with ``model`` as the table the claims read: ``model``, ``method``, ``seed``,
    ``sentence`` (its index in dev) and ``correct`` (bool), one row per run and dev sentence, in the runs' order."""
    return _per_item(runs, ["model", "method", "seed"], "correct", "sentence", "correct")
