"""What notebook 03's computation runs with: the datasets, the six processing rows, the method's settings, the
fine-tuning protocol.

These are inputs of the computation (:mod:`.compute` and :mod:`.finetuning` key their stored steps on this
module too); what the slides report, and the parameter check, are in :mod:`.settings`, so that editing a
reference number recomputes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["METHODS", "STOCHASTIC_METHODS", "PROPOSED", "GMM_FIT_SIZE", "MEASURES", "Settings", "ENCODER", "DECODER",
           "DATASETS", "FINETUNE_TASKS", "HELD_OUT_SEED", "BatchMethod", "FinetuneProtocol"]

METHODS = ("pre-trained", "Mean", "Mean + PCA", "K-means + Mean", "GMM + Mean + PCA", "K-means + Mean + PCA")
STOCHASTIC_METHODS = ("K-means + Mean", "GMM + Mean + PCA", "K-means + Mean + PCA")
PROPOSED = "K-means + Mean + PCA"
# The Gaussian mixture is fitted on this many random token vectors (EM on every token of a dataset takes
# minutes); k-means, as in the authors' code, on all of them.
GMM_FIT_SIZE = 10_000
# The scores of a row (compute.evaluate_methods), each averaged over seeds by summaries.method_summary.
MEASURES = ["pearson", "spearman", "spearman_subset_mean", "iw_tokens", "iw_sentences", "isoscore_tokens",
            "isoscore_sentences"]


@dataclass(frozen=True)
class Settings:
    """Hyper-parameters of the method: clusters k, directions removed per cluster, global directions D (ABTT)."""

    n_clusters: int
    n_pc: int
    n_global: int


# BERT's (and RoBERTa's) settings for encoders, GPT-2's for decoders (REFERENCE.md, 03; GPT-2's come from a
# reproduction and are unverified). D = 15 for "Mean + PCA" in both.
ENCODER = Settings(n_clusters=27, n_pc=12, n_global=15)
DECODER = Settings(n_clusters=10, n_pc=30, n_global=15)

# Dataset key -> (loader name, split, label as the slides name it).
DATASETS = {
    "sts12": ("sts12", "test", "STS12"), "sts13": ("sts13", "test", "STS13"), "sts14": ("sts14", "test", "STS14"),
    "sts15": ("sts15", "test", "STS15"), "sts16": ("sts16", "test", "STS16"),
    "stsb-dev": ("stsb", "dev", "STS-B dev"), "stsb-test": ("stsb", "test", "STS-B test"),
    "sick-test": ("sick", "test", "SICK-R"),
}

# Task: (training split, evaluation split) of isolib.datasets.load_pairs; the slides report dev accuracy.
FINETUNE_TASKS = {"rte": ("train", "val"), "wic": ("train", "dev")}
HELD_OUT_SEED = 0  # the permutation of the training pairs whose first share is held out (FinetuneProtocol)


@dataclass(frozen=True)
class BatchMethod:
    """The method on one batch of [CLS] vectors: ``n_clusters`` k-means clusters, ``n_pc`` directions each.

    The slides apply the clustering "on a batch" without settings; a batch of 32 cannot hold BERT's
    27 clusters of at least 12 points, so the defaults are ours: 2 clusters, 4 directions.
    """

    n_clusters: int = 2
    n_pc: int = 4


@dataclass(frozen=True)
class FinetuneProtocol:
    """How an encoder is fine-tuned, fixed before the dev split is seen (the slides give no settings).

    ``epochs`` of AdamW (weight decay 0.01) with a linear warm-up over the first ``warmup`` share of
    the steps and a linear decay to 0 after it, batches of 32. The learning rate is the one of
    ``learning_rates`` whose run without the method (seed ``selection_seed``) scores best on a
    held-out ``held_out`` share of the *training* pairs after training on the rest
    (:func:`~isolib.studies.rajaee_cluster_isotropy.finetuning.select_learning_rate`); dev is used only to
    report. The defaults are ours: 2 epochs at 2·10⁻⁵ with no warm-up left MiniLM at chance on RTE (0.53
    dev accuracy over 3 seeds, majority 0.53).
    """

    epochs: int = 3
    learning_rates: tuple[float, ...] = (2e-5, 5e-5, 1e-4)
    warmup: float = 0.1
    held_out: float = 0.2
    selection_seed: int = 0
