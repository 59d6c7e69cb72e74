"""What notebook 03 computes: the six processing rows on STS, the grid, the per-layer isotropy, the SST-2 probe and
the fine-tuning runs, and the evidence tables the claims read.

Built on :mod:`isolib.transforms`, :mod:`isolib.evaluation` and :mod:`isolib.metrics`:

* :func:`sentence_pairs` -- an STS dataset as unique sentences and the index of each pair's two sides;
* :func:`transform_tokens` -- one of :data:`~isolib.studies.rajaee_cluster_isotropy.settings.METHODS`
  applied to a set of token vectors;
* :func:`evaluate_methods` -- every method (stochastic ones over several seeds): Pearson and Spearman
  x 100, I(W) and IsoScore of the token and of the sentence vectors, and each pair's cosine;
* :func:`sweep` -- Spearman over a grid of (k, n_pc) and seeds, to see whether the gain is robust or tuned;
* :func:`scale_dependence` -- I(W) and IsoScore of the same clouds at several scales;
* :func:`layer_isotropy` -- I(W) and IsoScore of the pre-trained token vectors at every layer (a slide);
* :func:`probe_with_method` -- a logistic-regression probe on sentence vectors (the SST-2 protocol);
* :func:`finetune` -- fine-tuning on RTE or WiC with the method on each batch's [CLS] vectors or without
  (:func:`isotropise_batch`), and :func:`cls_geometry` -- I(W), IsoScore and the mean of [CLS] per layer;
  :func:`finetune_run` -- both, stored in the cache so that a stopped run resumes (as the rows and the
  grid points of :func:`evaluate_methods` and :func:`sweep` with ``resume=True``);
  :func:`finetune_task` -- the protocol on one task: the learning rate, then every seed with and without;
* :func:`sts_evidence` and :func:`probe_evidence` -- the rows as the tables the claims resample: each
  pair's cosine per seed, each dev sentence's probe answer per seed.

Only this module's code (and the library code it calls) keys the stored steps
(:func:`isolib.cache.memoized`): a change to a claim, a rule or a figure recomputes nothing.

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
from functools import partial

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from sklearn.linear_model import LogisticRegression

from isolib import datasets
from isolib._checks import check_int
from isolib.cache import memoized
from isolib.evaluation import mean_pool, sts_correlation
from isolib.metrics import isoscore, partition_isotropy
from isolib.studies.rajaee_cluster_isotropy.settings import (
    DATASETS,
    FINETUNE_TASKS,
    GMM_FIT_SIZE,
    HELD_OUT_SEED,
    METHODS,
    PROPOSED,
    STOCHASTIC_METHODS,
    BatchMethod,
    FinetuneProtocol,
    Settings,
)
from isolib.transforms import ClusterIsotropy, abtt, centre

__all__ = [
    "PairedSentences",
    "sentence_pairs",
    "analysed_tokens",
    "transform_tokens",
    "subset_mean_spearman",
    "evaluate_methods",
    "sts_evidence",
    "sweep",
    "scale_dependence",
    "layer_isotropy",
    "probe_correct",
    "probe_with_method",
    "probe_evidence",
    "finetune_texts",
    "majority_share",
    "isotropise_batch",
    "learning_rate_share",
    "finetune",
    "cls_geometry",
    "finetune_run",
    "select_learning_rate",
    "finetune_task",
]

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
        Store each row in the cache as it is finished (:func:`isolib.cache.memoized`) and reuse the
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
        :func:`isolib.studies.rajaee_cluster_isotropy.claims.grid_summary`.
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


# --------------------------------------------------------------------------- fine-tuning


def finetune_texts(task: str, split: str) -> tuple[list[str], list[str], np.ndarray]:
    """First and second segments and 0/1 labels of RTE or WiC.

    RTE: premise and hypothesis, label 1 for ``not_entailment``. WiC: ``"<word>: <sentence 1>"`` and
    sentence 2 (the target word leads the first segment, so the classifier knows which word is asked
    about), label 1 when the word has the same sense.
    """
    if task not in FINETUNE_TASKS:
        raise ValueError(f"Unknown fine-tuning task '{task}'; choose one of {', '.join(FINETUNE_TASKS)}.")
    pairs = datasets.load_pairs(task, split=split)
    if task == "rte":
        return pairs.sentence1.tolist(), pairs.sentence2.tolist(), (pairs.label == "not_entailment").to_numpy(int)
    first = (pairs.word + ": " + pairs.sentence1).tolist()
    return first, pairs.sentence2.tolist(), pairs.label.to_numpy(int)


def majority_share(task: str) -> float:
    """Share of the dev set's most frequent label: the accuracy of always answering it (chance for a learner)."""
    labels = finetune_texts(task, FINETUNE_TASKS[task][1])[2]
    return float(np.bincount(labels).max() / len(labels))


def isotropise_batch(cls, method: BatchMethod, *, random_state=None):
    """The method on a batch of [CLS] vectors, differentiable in the vectors.

    Parameters
    ----------
    cls : torch.Tensor of shape (batch, dim)
    method : BatchMethod
    random_state : int
        Seed of the batch's k-means.

    Returns
    -------
    torch.Tensor of shape (batch, dim)
        Each vector minus its cluster's mean (computed in the graph, like a batch norm), with its
        projections on the cluster's ``n_pc`` leading principal directions removed (the directions
        are found on the detached vectors and act as constants). A batch smaller than
        ``n_clusters * (n_pc + 1)`` (a last, short batch) is one cluster with at most ``batch - 1`` directions.
    """
    import torch

    n_clusters, n_pc = method.n_clusters, method.n_pc
    if len(cls) < n_clusters * (n_pc + 1):
        n_clusters, n_pc = 1, min(n_pc, len(cls) - 1)
    fitted = ClusterIsotropy(n_clusters, n_pc, small_clusters="merge", n_init=1,
                             random_state=random_state).fit(cls.detach().cpu().numpy())
    labels = torch.as_tensor(fitted.labels_, device=cls.device)
    processed = cls.clone()
    for cluster in torch.unique(labels):
        members = labels == cluster
        centred = cls[members] - cls[members].mean(dim=0)
        directions = torch.as_tensor(fitted.directions_[int(cluster)], dtype=cls.dtype, device=cls.device)
        processed[members] = centred - (centred @ directions) @ directions.T
    return processed


def _classifier_inputs(encoder, tokenizer, first, second, method, *, max_length, random_state, device):
    """[CLS] of the last layer for a batch of segment pairs, processed by ``method`` when given."""
    batch = tokenizer(first, second, truncation=True, max_length=max_length, padding=True, return_tensors="pt")
    cls = encoder(**batch.to(device)).last_hidden_state[:, 0]
    return cls if method is None else isotropise_batch(cls, method, random_state=random_state)


def learning_rate_share(step: int, *, n_steps: int, n_warmup: int) -> float:
    """The share of the learning rate at ``step`` (from 0): rising linearly over ``n_warmup`` steps, then to 0 at ``n_steps``."""
    return (step + 1) / (n_warmup + 1) if step < n_warmup else 1 - (step - n_warmup) / (n_steps - n_warmup)


def _train(loaded, encoder, head, texts: tuple, order: np.ndarray, *, method, epochs: int, batch_size: int, lr: float,
           warmup: float, max_length: int, seed: int, device: str) -> None:
    """Train ``encoder`` and ``head`` on the rows ``order`` of ``texts`` (first, second, labels), in place."""
    import torch

    first, second, labels = texts
    parameters = list(encoder.parameters()) + list(head.parameters())
    optimiser = torch.optim.AdamW(parameters, lr=lr, weight_decay=0.01)
    n_steps = epochs * -(-len(order) // batch_size)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimiser, partial(learning_rate_share, n_steps=n_steps,
                                                                    n_warmup=int(warmup * n_steps)))
    targets = torch.as_tensor(np.array(labels), device=device)  # a copy: the loaded labels may be read-only
    step = 0
    for epoch in range(epochs):
        shuffled = np.random.default_rng([seed, epoch]).permutation(order)
        for start in range(0, len(shuffled), batch_size):
            rows = shuffled[start : start + batch_size]
            cls = _classifier_inputs(encoder, loaded.tokenizer, [first[i] for i in rows], [second[i] for i in rows],
                                     method, max_length=max_length, random_state=seed + step, device=device)
            loss = torch.nn.functional.cross_entropy(head(cls), targets[rows])
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            schedule.step()
            step += 1


def _accuracy(loaded, encoder, head, texts: tuple, applied: BatchMethod | None, *, batch_size: int, max_length: int,
              seed: int, device: str) -> float:
    """Accuracy of the trained classifier on ``texts``, its batches in order, processed by ``applied`` when given."""
    import torch

    first, second, labels = texts
    correct = 0
    with torch.no_grad():
        for start in range(0, len(labels), batch_size):
            rows = slice(start, start + batch_size)
            cls = _classifier_inputs(encoder, loaded.tokenizer, first[rows], second[rows], applied,
                                     max_length=max_length, random_state=seed, device=device)
            correct += int((head(cls).argmax(dim=1).cpu().numpy() == labels[rows]).sum())
    return correct / len(labels)


def finetune(task: str, model: str = "minilm", *, method: BatchMethod | None = None, epochs: int = 2,
             batch_size: int = 32, lr: float = 2e-5, warmup: float = 0.0, max_length: int = 128,
             train_size: int | None = None, held_out: float = 0.0, seed: int = 0, device: str = "cpu"):
    """Fine-tune an encoder with a linear classifier on its [CLS] vector; the method on each batch or not.

    The slides' experiment: BERT -> (the method on the batch's [CLS] vectors) -> classifier, 2 epochs.
    Here: AdamW (lr ``lr``, weight decay 0.01), a linear warm-up over the first ``warmup`` share of
    the steps and a linear decay to 0 after it, dropout 0.1 before the classifier, batches of
    ``batch_size`` drawn in a seeded random order (a last short batch is kept); evaluation in order
    on the task's dev split (or, with ``held_out``, on held-out training pairs), with the method
    applied to each evaluated batch as in training (transductive per batch, as the slides describe:
    a prediction then depends on its batch-mates), and, for a model trained with the method, also on
    the raw [CLS] vectors (the method in training only).

    Parameters
    ----------
    task : {"rte", "wic"}
    model : str
        An encoder :func:`isolib.models.load_model` knows (its weights are copied, not changed).
    method : BatchMethod or None
    warmup : float
        Share of the steps over which the learning rate rises linearly from 0, in [0, 1).
    train_size : int or None
        The first ``train_size`` training pairs of a seeded permutation (quick runs); None: all.
    held_out : float
        Share of the training pairs set aside (the same ones for every seed and learning rate) and
        evaluated on instead of dev: the split that chooses the learning rate
        (:class:`~isolib.studies.rajaee_cluster_isotropy.settings.FinetuneProtocol`), in [0, 1); 0: train on
        all and evaluate on dev.
    seed : int
        Seed of the classifier's initialisation, the dropout, the batch order and the batch k-means.

    Returns
    -------
    accuracies : dict of str to float
        On the dev split (or the held-out pairs), in [0, 1]: ``accuracy`` (dev batches processed as in training) and
        ``accuracy_raw_cls`` (the classifier on raw [CLS] vectors; the same without a method).
    encoder : transformers.PreTrainedModel
        The fine-tuned encoder (for :func:`cls_geometry`), in eval mode.
    """
    import copy

    import torch

    from isolib.models import load_model

    if not 0 <= warmup < 1 or not 0 <= held_out < 1:
        raise ValueError(f"warmup and held_out are shares in [0, 1), got {warmup!r} and {held_out!r}.")
    first, second, labels = finetune_texts(task, FINETUNE_TASKS.get(task, ("train",))[0])
    loaded = load_model(model, device=device)
    if loaded.kind != "encoder":
        raise ValueError(f"{model} is a decoder; the [CLS] experiment needs an encoder such as minilm.")
    # The held-out pairs do not depend on the seed: every learning rate is scored on the same ones.
    split = np.random.default_rng(HELD_OUT_SEED).permutation(len(labels))
    held_rows, fit_rows = split[:round(held_out * len(labels))], split[round(held_out * len(labels)):]
    order = np.random.default_rng(seed).permutation(fit_rows)[:train_size]
    torch.manual_seed(seed)
    encoder = copy.deepcopy(loaded.model).train()
    head = torch.nn.Sequential(torch.nn.Dropout(0.1), torch.nn.Linear(loaded.dim, 2)).to(device)
    options = dict(batch_size=batch_size, max_length=max_length, seed=seed, device=device)
    _train(loaded, encoder, head, (first, second, labels), order, method=method, epochs=epochs, lr=lr, warmup=warmup,
           **options)
    encoder.eval()
    head.eval()
    if held_out:
        scored = [first[i] for i in held_rows], [second[i] for i in held_rows], labels[held_rows]
    else:
        scored = finetune_texts(task, FINETUNE_TASKS[task][1])
    accuracy = _accuracy(loaded, encoder, head, scored, method, **options)
    raw_cls = accuracy if method is None else _accuracy(loaded, encoder, head, scored, None, **options)
    return {"accuracy": accuracy, "accuracy_raw_cls": raw_cls}, encoder


def cls_geometry(encoder, tokenizer, task: str, *, method: BatchMethod | None = None, batch_size: int = 32,
                 max_length: int = 128, random_state: int = 0, device: str = "cpu") -> pd.DataFrame:
    """I(W), IsoScore and the size of the mean of the [CLS] vectors of a task's dev pairs, per layer.

    Parameters
    ----------
    encoder : transformers.PreTrainedModel
        Pre-trained or fine-tuned (:func:`finetune`), returning hidden states.
    method : BatchMethod or None
        Also process each dev batch's last-layer [CLS] vectors with the method (the vectors the
        classifier saw), reported in an extra row with ``processed`` True.

    Returns
    -------
    pandas.DataFrame
        ``layer`` (1 to the last; ours, 0 being the input embeddings), ``processed`` (bool), ``i_w``, ``isoscore`` and ``mean_ratio``
        = ||mean of the [CLS] vectors|| / mean ||[CLS] vector|| (0 for a zero-mean cloud, 1 when all
        vectors are equal): the slides' "already zero-mean" claim, measured.
    """
    import torch

    first, second, _ = finetune_texts(task, FINETUNE_TASKS[task][1])
    per_layer, processed = [], []
    with torch.no_grad():
        for start in range(0, len(first), batch_size):
            rows = slice(start, start + batch_size)
            batch = tokenizer(first[rows], second[rows], truncation=True, max_length=max_length, padding=True,
                              return_tensors="pt").to(device)
            hidden = encoder(**batch, output_hidden_states=True).hidden_states
            per_layer.append(torch.stack([state[:, 0] for state in hidden], dim=1).cpu().numpy())
            if method is not None:
                processed.append(isotropise_batch(hidden[-1][:, 0], method, random_state=random_state).cpu().numpy())
    cls = np.concatenate(per_layer).astype(np.float64)  # (n_pairs, n_layers, dim)
    # Layer 0 is left out: the input embedding of [CLS] is the same vector in every pair.
    clouds = [(layer, False, cls[:, layer]) for layer in range(1, cls.shape[1])]
    if method is not None:
        clouds.append((cls.shape[1] - 1, True, np.concatenate(processed).astype(np.float64)))
    rows = [{"layer": layer, "processed": done, "i_w": partition_isotropy(vectors), "isoscore": isoscore(vectors),
             "mean_ratio": np.linalg.norm(vectors.mean(axis=0)) / np.linalg.norm(vectors, axis=1).mean()}
            for layer, done, vectors in clouds]
    return pd.DataFrame(rows)


def finetune_run(task: str, model: str = "minilm", *, method: BatchMethod | None = None, epochs: int = 2,
                 lr: float = 2e-5, warmup: float = 0.0, train_size: int | None = None, held_out: float = 0.0,
                 seed: int = 0, geometry: bool = False, device: str = "cpu",
                 resume: bool = False) -> tuple[dict, pd.DataFrame | None]:
    """One fine-tuning run (:func:`finetune`) and, with ``geometry``, the [CLS] geometry of its encoder.

    With ``resume`` the result is stored in the cache and reused for the same task, model weights,
    settings, seed and code (:func:`isolib.cache.memoized`): a run of notebook 03 stopped during its
    fine-tuning resumes with the runs it finished (each takes minutes on a CPU).

    Returns
    -------
    accuracies : dict of str to float
        Dev accuracies, in [0, 1] (:func:`finetune`).
    geometry : pandas.DataFrame or None
        :func:`cls_geometry` of the fine-tuned encoder on the dev pairs (with ``method``, and
        ``random_state=seed``), or None without ``geometry``.
    """
    import isolib.models

    def compute() -> tuple[dict, pd.DataFrame | None]:
        accuracies, encoder = finetune(task, model, method=method, epochs=epochs, lr=lr, warmup=warmup,
                                       train_size=train_size, held_out=held_out, seed=seed, device=device)
        if not geometry:
            return accuracies, None
        tokenizer = isolib.models.load_model(model, device=device).tokenizer
        return accuracies, cls_geometry(encoder, tokenizer, task, method=method, random_state=seed, device=device)

    inputs = {"task": task, "model": isolib.models.fingerprint(model), "method": method, "epochs": epochs, "lr": lr,
              "warmup": warmup, "train_size": train_size, "held_out": held_out, "seed": seed, "geometry": geometry,
              "device": device}
    return memoized("rajaee_finetune", inputs, compute, code=_CODE, store=resume)


def select_learning_rate(task: str, model: str = "minilm", protocol: FinetuneProtocol = FinetuneProtocol(), *,
                         train_size: int | None = None, device: str = "cpu",
                         resume: bool = False) -> tuple[float, pd.DataFrame]:
    """The learning rate of ``protocol`` whose run without the method scores best on held-out training pairs.

    Each of ``protocol.learning_rates`` trains on the training pairs outside the held-out share
    (seed ``protocol.selection_seed``) and is scored on the held-out ones (:func:`finetune_run`
    with ``held_out``); a tie goes to the smaller rate. The dev split is never read.

    Returns
    -------
    lr : float
    scores : pandas.DataFrame
        ``task``, ``model``, ``lr``, ``held_out_accuracy`` (one row per learning rate), ``chosen`` (bool).
    """
    scores = pd.DataFrame([{
        "task": task, "model": model, "lr": lr,
        "held_out_accuracy": finetune_run(task, model, epochs=protocol.epochs, lr=lr, warmup=protocol.warmup,
                                          train_size=train_size, held_out=protocol.held_out,
                                          seed=protocol.selection_seed, device=device, resume=resume)[0]["accuracy"]}
        for lr in sorted(protocol.learning_rates)])
    best = scores.held_out_accuracy.idxmax()  # the first maximum: the smaller rate on a tie
    return float(scores.lr[best]), scores.assign(chosen=scores.index == best)


def finetune_task(task: str, model: str, pretrained, protocol: FinetuneProtocol, method: BatchMethod, *,
                  seeds: Sequence[int], train_size: int | None = None, device: str = "cpu",
                  resume: bool = False) -> dict[str, pd.DataFrame]:
    """The fine-tuning protocol on one task: the learning rate, then every seed without and with the method.

    Parameters
    ----------
    pretrained : isolib.models.LoadedModel
        ``model`` loaded, for the [CLS] geometry of the pre-trained encoder.
    method : BatchMethod
        The method on each batch of the runs with it.
    seeds : sequence of int
    resume : bool
        Store every run with its per-layer geometry, so a stopped run resumes (:func:`finetune_run`).

    Returns
    -------
    dict of str to pandas.DataFrame
        ``selection`` (:func:`select_learning_rate`), ``runs`` (``task``, ``model``, ``method`` — ``without``
        or ``with the method`` —, ``seed``, ``lr``, ``accuracy``, ``accuracy_raw_cls``: one row per seed and
        method) and ``cls`` (:func:`cls_geometry` of the pre-trained encoder and of every run, with
        ``task``, ``model`` — ``pre-trained``, ``fine-tuned``, ``fine-tuned with the method`` — and ``seed``).
    """
    lr, selection = select_learning_rate(task, model, protocol, train_size=train_size, device=device, resume=resume)
    cls_tables = [cls_geometry(pretrained.model, pretrained.tokenizer, task, device=device)
                  .assign(task=task, model="pre-trained")]
    runs = []
    for seed in seeds:
        for label, applied in (("without", None), ("with the method", method)):
            accuracies, geometry = finetune_run(task, model, method=applied, epochs=protocol.epochs, lr=lr,
                                                warmup=protocol.warmup, train_size=train_size, seed=seed,
                                                geometry=True, device=device, resume=resume)
            runs.append({"task": task, "model": model, "method": label, "seed": seed, "lr": lr, **accuracies})
            name = "fine-tuned" if applied is None else "fine-tuned with the method"
            cls_tables.append(geometry.assign(task=task, model=name, seed=seed))
    return {"selection": selection, "runs": pd.DataFrame(runs), "cls": pd.concat(cls_tables, ignore_index=True)}
