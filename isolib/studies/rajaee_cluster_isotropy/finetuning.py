"""The fine-tuning of notebook 03: an encoder fine-tuned on RTE or WiC with the method on each batch's [CLS] vectors.

The evidence of the slides' [CLS] finding, computed apart from the STS rows of
:mod:`~isolib.studies.rajaee_cluster_isotropy.compute` (this module's code keys the stored runs):

* :func:`finetune` -- fine-tuning with the method on each batch's [CLS] vectors (:func:`isotropise_batch`)
  or without, and :func:`cls_geometry` -- I(W), IsoScore and the mean of [CLS] per layer;
* :func:`finetune_run` -- both, stored in the cache so that a stopped run resumes;
* :func:`select_learning_rate` -- the rate of the protocol chosen on held-out training pairs;
* :func:`finetune_task` -- the protocol on one task: the learning rate, then every seed with and without.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from functools import partial

import numpy as np
import pandas as pd

from isolib import datasets
from isolib.metrics import isoscore, partition_isotropy
from isolib.steps import memoized
from isolib.studies.rajaee_cluster_isotropy.protocol import (
    FINETUNE_TASKS,
    HELD_OUT_SEED,
    BatchMethod,
    FinetuneProtocol,
)
from isolib.transforms import ClusterIsotropy

__all__ = ["finetune_texts", "majority_share", "isotropise_batch", "learning_rate_share", "finetune", "cls_geometry",
           "finetune_run", "select_learning_rate", "finetune_task"]

# The code of every stored run: this module and the library code it imports (isolib.computation).
_CODE = (sys.modules[__name__],)


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


def _split(n_pairs: int, held_out: float, seed: int, train_size: int | None) -> tuple[np.ndarray, np.ndarray]:
    """The held-out training rows and the seeded order of the rows trained on (the first ``train_size``).

    The held-out rows do not depend on the seed: every learning rate is scored on the same ones.
    """
    split = np.random.default_rng(HELD_OUT_SEED).permutation(n_pairs)
    n_held = round(held_out * n_pairs)
    return split[:n_held], np.random.default_rng(seed).permutation(split[n_held:])[:train_size]


def _untrained(loaded, seed: int, device: str):
    """A copy of the loaded encoder, in training mode, and a new classifier (dropout 0.1, linear), seeded."""
    import copy

    import torch

    torch.manual_seed(seed)
    encoder = copy.deepcopy(loaded.model).train()
    return encoder, torch.nn.Sequential(torch.nn.Dropout(0.1), torch.nn.Linear(loaded.dim, 2)).to(device)


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
    from isolib.models import load_model

    if not 0 <= warmup < 1 or not 0 <= held_out < 1:
        raise ValueError(f"warmup and held_out are shares in [0, 1), got {warmup!r} and {held_out!r}.")
    first, second, labels = finetune_texts(task, FINETUNE_TASKS.get(task, ("train",))[0])
    loaded = load_model(model, device=device)
    if loaded.kind != "encoder":
        raise ValueError(f"{model} is a decoder; the [CLS] experiment needs an encoder such as minilm.")
    held_rows, order = _split(len(labels), held_out, seed, train_size)
    encoder, head = _untrained(loaded, seed, device)
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
    settings, seed and code (:func:`isolib.steps.memoized`): a run of notebook 03 stopped during its
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
