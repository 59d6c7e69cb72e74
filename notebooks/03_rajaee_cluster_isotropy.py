# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python (isolib)
#     language: python
#     name: isolib
# ---

# %% [markdown] tags=["quick-run-note"]
# > **This is the quick run** (`make quick`): the defaults of the parameters cell, with fewer models and subsets of the data, so its numbers and verdicts can differ from the full run's (`make figures`: all data, every offline model): see [its executed notebook](../figures/03_rajaee_cluster_isotropy/03_rajaee_cluster_isotropy.ipynb) and [its RESULTS.md](../figures/03_rajaee_cluster_isotropy/RESULTS.md).

# %% [markdown]
# # A cluster-based approach for improving isotropy in contextual embedding space
#
# Sara Rajaee and Mohammad Taher Pilehvar (2021), ACL-IJCNLP 2021 (short papers), read here from the
# slides *Isotropic Word Representation in BERT* (Sara Rajaei and Marzieh Sheikhi, 2020).
#
# Contextual token vectors are anisotropic, and global fixes (subtract the mean, remove the top
# principal directions) treat the whole space as one cloud. The method clusters the token vectors,
# subtracts each cluster's mean and removes each cluster's dominant directions; sentence vectors
# built from the processed tokens should then score better on semantic textual similarity (STS).
# This notebook regenerates:
#
# * **Table `sts_table`** — the slides' six rows (pre-trained; Mean; Mean + PCA; K-means + Mean; GMM + Mean + PCA; K-means + Mean + PCA, the proposed method) on each STS dataset: Spearman and Pearson × 100, I(W) and IsoScore, mean ± std over seeds;
# * **Figure `fig_sts_gain`** — Spearman per method and dataset, with the seed spread;
# * **Figure `fig_sweep`** (beyond the slides) — Spearman of the proposed method over a grid of k and n_pc;
# * **Table `iw_scale`** — I(W) of one cloud at three scales (it is not scale invariant);
# * **Table `sst2`** — a linear probe on SST-2 with and without the method;
# * **Tables `finetune`, `cls_geometry` and figure `fig_cls`** (full profile) — fine-tuning on RTE and WiC
#   with and without the method on each batch's [CLS] vectors: dev accuracy over seeds, and I(W), IsoScore
#   and the mean of [CLS] per layer;
# * **`RESULTS.md`** — each claim and number of the slides beside ours.
#   Every status, mark and measure is defined in [the glossary](../docs/glossary.md).
#
# **Protocol.** Last layer, special tokens excluded; the processing is fitted on the token vectors of
# the evaluation set itself (transductive, as the authors did), per dataset; a sentence vector is the
# mean of its processed tokens, a pair's score the cosine of its two sentence vectors; Spearman and
# Pearson × 100 against the gold scores. A cluster smaller than n_pc is merged into the nearest larger
# one. **I(W)** (Mu & Viswanath) is computed on the processed token vectors, as the authors did, and on
# the sentence vectors; it depends on the scale of the vectors, so compare it only between rows on the
# same vectors. The computation is in `isolib.studies.rajaee_cluster_isotropy.compute` (the fine-tuning in its
# `finetuning`), the rules in its `claims`.
#
# **Models.** The paper's BERT-base, GPT-2 and RoBERTa come from the Hugging Face Hub (profile
# `paper`). Offline, `minilm` and `mpnet` stand in for BERT with BERT's settings (k = 27, n_pc = 12,
# D = 15), and the decoder `smollm2` (SmolLM2-135M-Instruct, from a Q4_1 GGUF dequantised to
# float32) for GPT-2 with GPT-2's (k = 10, n_pc = 30). **Both offline encoders are
# sentence-transformers, trained contrastively for sentence similarity** (not masked-LM checkpoints
# like BERT), so their pre-trained STS scores start far above
# BERT's (about 80 against 54 on STS-B): the method has less to fix, and its gains (or losses) are not
# comparable with the slides' numbers — only their direction is. A decoder's first position is an
# attention sink, a vector of huge norm; SmolLM2 is judged with a start token before every sentence,
# which takes the sink and is left out of the analysed tokens (`smollm2 (start token)`); the paper's
# procedure (GPT-2 fed the sentence alone, `smollm2`) is shown beside it and not counted. How much the
# sink moves each row is measured below, not assumed.

# %% tags=["parameters"]
profile: str = "quick"  # which profile produced this run: quick or student or full or paper
output_dir: str = "../build/quick/figures/03_rajaee_cluster_isotropy"  # folder for figures and tables and RESULTS.md
models: list = ["minilm"]  # offline short names such as minilm or mpnet or smollm2 or Hub ids such as bert-base-uncased
datasets: list = ["stsb-dev"]  # among sts12 sts13 sts14 sts15 sts16 stsb-dev stsb-test sick-test
seeds: list = [0, 1]  # seeds of every clustering; stochastic rows are averaged over them
n_init: int = 1  # restarts of each clustering; the authors' kmeans2 used one
n_jobs: int = -1  # worker processes for the clustering rows and the grid; -1 uses every core, 1 runs in the kernel
decoder_views: list = ["start_token"]  # views of a decoder's first position besides the paper's keep: start_token (judged) or drop
sweep_dataset: str = "stsb-dev"  # development set of the k and n_pc grid of every model
sweep_clusters: list = [9, 27]  # numbers of clusters k of the grid
sweep_pcs: list = [0, 12]  # directions removed per cluster n_pc of the grid
sweep_seeds: list = [0, 1]  # seeds averaged at each point of the grid (two give each point a spread)
layer_sentences: int = 300  # sentences of sweep_dataset whose tokens are measured at every layer
sst2_train_size: int = 1000  # SST-2 training sentences drawn for the probe; 0 takes all 67349
storage_dtype: str = "float16"  # cache dtype of the embeddings: float32 or float16
device: str = "cpu"  # torch device: cpu or cuda
random_state: int = 0  # seed of the SST-2 sample and of the probe
finetune_tasks: list = []  # fine-tuning tasks among rte and wic; the full profile runs both
finetune_model: str = "minilm"  # the encoder fine-tuned with a classifier on its [CLS] vector
finetune_seeds: list = [0, 1, 2]  # seeds of each fine-tuning run with and without the method
finetune_epochs: int = 3  # epochs of fine-tuning (the slides: 2; ours, see FinetuneProtocol)
finetune_learning_rates: list = [2e-5, 5e-5, 1e-4]  # candidates; the best on held-out training pairs is used
finetune_warmup: float = 0.1  # share of the steps with a rising learning rate
finetune_held_out: float = 0.2  # share of the training pairs that chooses the learning rate
finetune_clusters: int = 2  # k of the method on each batch of 32 [CLS] vectors
finetune_n_pc: int = 4  # directions removed per cluster of a batch
finetune_train_size: int = 0  # training pairs per task; 0 uses all

# %%
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from IPython.display import display

from isolib.datasets import load_texts
from isolib.embed import embed_views
from isolib.evidence import judge, save_evidence
from isolib.findings import count_line, findings_table, verdict_table, verdicts
from isolib.metrics import isoscore, partition_isotropy
from isolib.models import load_model
from isolib.plotting import interval, panel_grid, replicates, save_figure, save_table, set_style, show_table, show_text
from isolib.project import check_output_dir
from isolib.runner import peak_memory_gib
from isolib.studies.rajaee_cluster_isotropy import claims, compute, figures, finetuning, summaries
from isolib.studies.rajaee_cluster_isotropy.protocol import (DATASETS, DECODER, ENCODER, MEASURES, METHODS, BatchMethod,
                                                            FinetuneProtocol)
from isolib.views import View

started = time.perf_counter()
evidence = {}  # what the claims are judged on, stored at the end beside the results (isolib.evidence)
set_style()
check_output_dir(profile, output_dir)

# %% [markdown]
# ## Data and embeddings
#
# The scored pairs of each dataset; each distinct sentence is embedded once, and only the last layer
# is kept. For each model view, the analysed tokens are the non-special tokens of the last layer.

# %% tags=["nbval-check-output"]
pairs = {dataset: compute.sentence_pairs(dataset) for dataset in datasets}
for dataset, paired in pairs.items():
    print(f"{DATASETS[dataset][2]}: {len(paired.gold)} scored pairs, {len(paired.sentences)} distinct sentences")
tokens, settings = {}, {}
for name in models:
    loaded = load_model(name, device=device)
    for dataset, paired in pairs.items():
        views = embed_views(loaded, paired.sentences, views=decoder_views, layers=[-1], dtype=storage_dtype,
                            device=device)
        for label, embedding in views.items():
            tokens[label, dataset] = compute.analysed_tokens(embedding)
            settings[label] = DECODER if views[name].starts_with_content else ENCODER
    del loaded
for (label, dataset), (vectors, ids) in tokens.items():
    print(f"{label}, {DATASETS[dataset][2]}: {len(vectors)} tokens of dimension {vectors.shape[1]}; "
          f"k = {settings[label].n_clusters}, n_pc = {settings[label].n_pc}, D = {settings[label].n_global}")

# %% [markdown]
# ## The six rows, on every dataset
#
# Deterministic rows (pre-trained, Mean, Mean + PCA) run once; the clustering rows once per seed.
# Each row is stored in the cache as it is finished (`resume=True`), so a run stopped half-way picks
# up where it was; so are the grid's points and the fine-tuning runs below.

# %%
results = []
for (label, dataset), (vectors, ids) in tokens.items():
    rows = compute.evaluate_methods(vectors, ids, pairs[dataset], settings[label], seeds=seeds, n_init=n_init,
                                    n_jobs=n_jobs, resume=True)
    results.append(rows.assign(model=label, dataset=dataset))
# Each row's scores, and each pair's cosine per row: what the paired comparisons below resample.
evidence.update(compute.sts_evidence(pd.concat(results, ignore_index=True), pairs))
per_seed = evidence["sts_per_seed"]
sts_summary = summaries.method_summary(per_seed, by=["model", "dataset", "method"])
# The k-means and GMM rows move between CPUs (another kernel's rounding can change a clustering): each
# table declares how far, from its own spread over seeds or its interval, for check-figures.
save_table(per_seed, output_dir, "sts_per_seed",
           tolerance=dict.fromkeys(MEASURES, replicates("model", "dataset", "method")))
save_table(sts_summary, output_dir, "sts_table",
           tolerance={name: f"{measure}_std" for measure in MEASURES for name in (measure, f"{measure}_std")})
sts_summary.assign(dataset=sts_summary.dataset.map(lambda key: DATASETS[key][2]))[
    ["model", "dataset", "method", "spearman", "spearman_std", "spearman_subset_mean", "pearson", "iw_tokens",
     "iw_sentences", "isoscore_tokens", "isoscore_sentences"]].round(3)

# %% [markdown]
# `spearman` pools the pairs of a dataset's subsets (STS12–16 hold several: news, forums, glosses …),
# as SentEval's "all"; the slides do not say which convention they used, so `spearman_subset_mean`, the
# mean of the per-subset correlations, stands beside it. On STS-B and SICK-R (one subset) they are equal.
#
# ## Each method against its control
#
# A difference of mean Spearman says little until it is set against the noise of the test pairs and
# of the clustering seeds. Each comparison below is paired (both methods on the same pairs) and its
# 95% interval comes from resampling the pairs, crossed with the seeds (`summaries.compare_methods`): the
# proposed method against the pre-trained vectors and against the best of the other five rows, and
# the slides' two other contrasts (Mean + PCA against pre-trained, K-means + Mean against Mean).

# %%
comparisons = summaries.compare_methods(per_seed, evidence["sts_similarities"], evidence["sts_gold"],
                                     random_state=random_state)
save_table(comparisons, output_dir, "sts_comparisons",
           tolerance=dict.fromkeys(["spearman", "control_spearman", "difference", "low", "high"], interval("low", "high")))
compared = comparisons.assign(dataset=comparisons.dataset.map(lambda key: DATASETS[key][2]))
show_table(compared[["model", "dataset", "comparison", "control", "difference", "low", "high", "outcome"]].round(2))

# %%
fig = figures.comparisons_figure(compared)
save_figure(fig, output_dir, "fig_comparisons")
plt.show()

# %% [markdown]
# How much does the attention sink move a row? For a decoder run in several views, the largest
# difference of mean Spearman between the paper's procedure and each other view, over methods and
# datasets.

# %% tags=["nbval-check-output"]
by_name = sts_summary.assign(name=sts_summary.model.map(lambda label: View.parse(label).model))
for name, rows in by_name.groupby("name", sort=False):
    by_view = rows.pivot_table(index=["dataset", "method"], columns="model", values="spearman")
    for label in by_view.columns.drop(name, errors="ignore"):
        if name in by_view.columns:
            gap = (by_view[label] - by_view[name]).abs()
            print(f"{label} against {name}: Spearman differs by at most {gap.max():.2f} points "
                  f"({gap.idxmax()[1]} on {DATASETS[gap.idxmax()[0]][2]})")

# %% [markdown]
# ## Figure — Spearman per method and dataset

# %%
plotted = per_seed.assign(dataset=per_seed.dataset.map(lambda key: DATASETS[key][2]))
labels = list(dict.fromkeys(plotted.model))
fig, axes = panel_grid(len(labels), panel_size=(7, 4.2))  # two panels per row stay legible
for ax, label in zip(axes, labels):
    sns.barplot(data=plotted[plotted.model == label], x="dataset", y="spearman", hue="method", hue_order=METHODS,
                errorbar="sd", ax=ax)
    ax.set_title(label)
    ax.set_ylabel("Spearman × 100 (mean ± sd over seeds)")
    ax.set_xlabel("")
    ax.set_ylim(0, 100)
    ax.tick_params(axis="x", labelrotation=30)  # eight dataset names side by side
    ax.get_legend().remove()
fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncol=6, fontsize="small")
fig.suptitle("STS Spearman of the six rows")
save_figure(fig, output_dir, "fig_sts_gain")
plt.show()

# %% [markdown]
# **The slides** found every processing above the pre-trained BERT, the proposed method best, and the
# token space made isotropic (STS-B: Spearman 54.09 → 67.50, I(W) 3.36e-5 → 0.64).

# %% tags=["nbval-check-output"]
show_table(verdict_table(claims.assess_findings(sts_summary, comparisons),
                         ["The proposed method", "Mean + PCA", "Centring per cluster", "Pre-trained token",
                          "The method makes", "Spearman of BERT", "The authors' notebook"], values=False))


# %% [markdown]
# ## I(W) depends on the scale of the vectors
#
# I(W) = min F(u) / max F(u) with F(u) = Σ exp(uᵀw) over the eigenvectors u of WᵀW: multiplying
# every vector by 3 changes it, although the geometry is the same. Below: an isotropic Gaussian cloud,
# and 5,000 centred tokens of the first model and dataset, each at three scales; IsoScore does not move.

# %%
draw = np.random.default_rng(random_state)
cloud = draw.standard_normal((5000, 384)) * 0.05
first_tokens = tokens[labels[0], datasets[0]][0]
centred_sample = compute.transform_tokens(first_tokens, "Mean", settings[labels[0]])[
    draw.choice(len(first_tokens), 5000, replace=False)]
iw_scale = evidence["iw_scale"] = compute.scale_dependence({
    "isotropic Gaussian (sd 0.05)": cloud,
    f"{labels[0]} tokens, centred (5,000 of {DATASETS[datasets[0]][2]})": centred_sample})
save_table(iw_scale, output_dir, "iw_scale")
show_table(iw_scale.assign(log10_iw=np.log10(iw_scale.iw)))  # I(W) spans 40 orders of magnitude

# %% tags=["nbval-check-output"]
show_text(verdicts(claims.assess_findings(sts_summary, comparisons, scale=iw_scale), ["Beyond the slides: I(W)"]))

# %% [markdown]
# ## Isotropy per layer of the pre-trained models
#
# A slide ("Pre-trained BERT isotropy", a figure lost in our copy) says that the contextual hidden layers
# are almost all more anisotropic than the input layer. Here: I(W) and IsoScore of the token vectors of
# the first `layer_sentences` sentences of `sweep_dataset` at every layer of every model (special tokens
# left out), on all of them and on three random halves of the sentences (the interval), with the mean
# length of a token vector beside them: I(W) is not scale invariant, and the hidden states of these
# models are longer than their input embeddings.

# %%
sweep_on = sweep_dataset if sweep_dataset in datasets else datasets[0]  # the development set of this and the grid
layer_sentences_used = pairs[sweep_on].sentences[:layer_sentences]
layer_tables = []
for name in models:  # by name: the model is loaded only where the cache holds no embeddings yet
    for label, embedding in embed_views(name, layer_sentences_used, views=decoder_views, dtype=storage_dtype,
                                        device=device).items():
        layer_tables.append(compute.layer_isotropy(embedding, random_state=random_state).assign(model=label))
per_layer_isotropy = evidence["layer_isotropy"] = pd.concat(layer_tables, ignore_index=True)
save_table(per_layer_isotropy, output_dir, "layer_isotropy")
fig = figures.layers_figure(per_layer_isotropy[per_layer_isotropy["sample"] == "all"],
                            f"Pre-trained token vectors per layer ({len(layer_sentences_used)} sentences of "
                            f"{DATASETS[sweep_on][2]})")
save_figure(fig, output_dir, "fig_layers")
plt.show()

# %% tags=["nbval-check-output"]
show_text(verdicts(claims.assess_findings(sts_summary, comparisons, layers=per_layer_isotropy),
                   ["Pre-trained hidden layers"]))

# %% [markdown]
# ## Beyond the slides — is the gain robust in k and n_pc?
#
# Spearman of the proposed method over a grid of the number of clusters k and the directions removed
# per cluster n_pc (k = 1, n_pc = 0 is plain centring), for every model on a development set
# (`sweep_dataset`, STS-B dev): the test sets stay at the paper's settings, and the grid shows where
# those settings sit (outlined).

# %%
grids = []
for label in labels:
    paper = settings[label]
    grids.append(compute.sweep(*tokens[label, sweep_on], pairs[sweep_on], sweep_clusters, sweep_pcs,
                               seeds=sweep_seeds, n_init=n_init, n_jobs=n_jobs, resume=True)
                 .assign(model=label, dataset=sweep_on, paper_k=paper.n_clusters, paper_n_pc=paper.n_pc))
evidence["sweep_per_seed"] = pd.concat(grids, ignore_index=True)  # every point once per seed
grid = summaries.grid_summary(evidence["sweep_per_seed"])
save_table(grid, output_dir, "sweep", tolerance=dict.fromkeys(["spearman", "spearman_std"], "spearman_std"))
fig = figures.sweep_figure(grid, DATASETS[sweep_on][2])
save_figure(fig, output_dir, "fig_sweep")
plt.show()

# %% tags=["nbval-check-output"]
show_text(verdicts(claims.assess_findings(sts_summary, comparisons, grid=grid), ["Beyond the slides: the method"]))

# %% [markdown]
# ## SST-2 — a linear probe with and without the method
#
# The slides give 55.67 → 56.08 without a protocol. Here: a logistic-regression probe (standardised
# inputs, L2, C = 1) on mean-pooled last-layer sentence vectors, trained on `sst2_train_size` SST-2
# training sentences and scored on the 872 dev sentences. With the method, it is fitted on the
# *training* tokens only, and the dev tokens are assigned to the training clusters and processed with
# the training means and directions: the dev set is never seen. Mean ± std over the clustering seeds,
# and the difference with its 95% interval over dev sentences crossed with seeds (`summaries.probe_summary`).
#
# With the method, the accuracy of one seed moves by up to a point from one machine to another: the
# float16 embeddings differ in their last bit between CPU instruction sets (0.4% of the values, AVX-512
# against AVX2, measured on the quick profile), and one k-means initialisation on 1,000 sentences turns
# that into other clusters. The line under the table gives the verdict, which does not move, without the
# accuracies.

# %%
train = load_texts("sst2", split="train")
if sst2_train_size:
    train = train.iloc[sorted(np.random.default_rng(random_state).choice(len(train), sst2_train_size, replace=False))]
dev = load_texts("sst2", split="dev")
sst2_runs = []
for name in models:
    loaded = load_model(name, device=device)
    views = {split: embed_views(loaded, frame.text.tolist(), views=decoder_views, layers=[-1], dtype=storage_dtype,
                                device=device) for split, frame in (("train", train), ("dev", dev))}
    del loaded
    for label in views["train"]:
        splits = [(*compute.analysed_tokens(views[split][label]), frame.label.to_numpy())
                  for split, frame in (("train", train), ("dev", dev))]
        runs = compute.probe_with_method(*splits, settings[label], seeds=seeds, n_init=n_init,
                                         random_state=random_state)
        sst2_runs.append(runs.assign(model=label))
# Which dev sentences each probe got right, per seed: what the paired interval resamples.
evidence["sst2_correct"] = compute.probe_evidence(pd.concat(sst2_runs, ignore_index=True))
sst2 = summaries.probe_summary(evidence["sst2_correct"])
save_table(sst2, output_dir, "sst2", tolerance={"accuracy": "accuracy_std", "accuracy_std": "accuracy_std",
                                                 **dict.fromkeys(["difference", "low", "high"], interval("low", "high"))})
sst2.round(4)

# %% tags=["nbval-check-output"]
show_text(verdicts(claims.assess_findings(sts_summary, comparisons, sst2), ["SST-2"], values=False))

# %% [markdown]
# ## Fine-tuning on RTE and WiC — the [CLS] finding
#
# The slides fine-tune BERT for 2 epochs with a classifier on its [CLS] vector, applying the method to
# the [CLS] vectors of each batch, and report dev accuracy: it does not help (RTE 65.3 without, 62.8
# with; WiC 64.04, 62.1), because fine-tuned [CLS] vectors are "already zero-mean". Here
# `finetune_model` is fine-tuned on each of `finetune_tasks` with and without the method (k =
# `finetune_clusters` clusters of each batch of 32, `finetune_n_pc` directions each: the slides give no
# settings, and a batch cannot hold BERT's 27 clusters of 12 points; the cluster means are subtracted
# inside the graph, the directions are constants found on the detached batch), over `finetune_seeds`.
#
# **The protocol, fixed before dev is read** (`FinetuneProtocol`; the slides give none, and their 2
# epochs at 2·10⁻⁵ left MiniLM at chance on RTE): AdamW for `finetune_epochs` epochs, a linear warm-up
# over the first `finetune_warmup` of the steps and a linear decay after it; the learning rate is the one
# of `finetune_learning_rates` whose run without the method scores best on `finetune_held_out` of the
# *training* pairs, held out from its training. Dev batches are processed as in training, so a
# prediction depends on its batch-mates; the model trained with the method is also scored on raw [CLS]
# vectors (the method in training only, `accuracy_raw_cls`). Then, per layer and for every seed, the
# [CLS] vectors of the dev pairs: I(W), IsoScore, and ||mean|| / mean ||[CLS]|| (0 when zero-mean, 1 when
# all equal), for the pre-trained model, the model fine-tuned without the method, and the one fine-tuned
# with it (whose processed last-layer vectors, what its classifier saw, are a separate point). The
# full profile runs it; the quick profile leaves it out: on two CPU cores one MiniLM epoch takes 2 to 3
# minutes on RTE and about 2 on WiC, so the protocol (three rates chosen on held-out pairs, then six runs
# of 3 epochs per task) takes about 2 hours; every run is stored as it finishes.
#
# Read the accuracies against chance, printed below them (the majority class of dev). A model that
# training leaves near chance has barely moved from its pre-trained weights, so "the method does not
# help" and the [CLS] geometry after fine-tuning then say little about a model that has learnt the task:
# where the runs without the method do not clear the majority class with the interval of their mean
# over seeds, the task's findings are *not comparable* (training did not learn).
#
# Read the two accuracies of the model trained with the method together. Where the processed dev
# batches (`accuracy`) fall to the majority class while raw [CLS] (`accuracy_raw_cls`) does not, the
# method did not stop the model from learning: processing a dev batch erased what its classifier reads.
# "Does not help" is therefore judged on each evaluation that clears the majority class (the method on
# dev batches, and raw [CLS]); an evaluation at chance is shown and not judged, and where every one is at
# chance the line is *not comparable*, never reproduced by a collapse. The rule (the mean with the method
# at most the mean without plus one standard deviation over seeds) is ours; its interval is over the
# seeds, not the dev pairs, whose answers are not stored.

# %%
batch_method = BatchMethod(finetune_clusters, finetune_n_pc)
protocol = FinetuneProtocol(finetune_epochs, tuple(finetune_learning_rates), finetune_warmup, finetune_held_out)
if finetune_tasks:
    pretrained = load_model(finetune_model, device=device)
    # Every run is stored with its per-layer geometry, so a stopped run resumes.
    tasks = [finetuning.finetune_task(task, finetune_model, pretrained, protocol, batch_method, seeds=finetune_seeds,
                                   train_size=finetune_train_size or None, device=device, resume=True)
             for task in finetune_tasks]
    finetuned = evidence["finetune"] = pd.concat([done["runs"] for done in tasks], ignore_index=True)
    cls_table = evidence["cls_geometry"] = pd.concat([done["cls"] for done in tasks], ignore_index=True)
    evidence["majority"] = {task: finetuning.majority_share(task) for task in finetune_tasks}
    save_table(pd.concat([done["selection"] for done in tasks], ignore_index=True), output_dir, "finetune_selection")
    save_table(finetuned, output_dir, "finetune",
               tolerance=dict.fromkeys(["accuracy", "accuracy_raw_cls"], replicates("task", "method")))
    save_table(cls_table, output_dir, "cls_geometry")
    print("Learning rate chosen on held-out training pairs:",
          ", ".join(f"{task} {rate:g}" for task, rate in finetuned.groupby("task", sort=False).lr.first().items()))
    print(finetuned.groupby(["task", "method"], sort=False)[["accuracy", "accuracy_raw_cls"]].agg(["mean", "std"])
          .mul(100).round(1))
    print("Always answering the majority class of dev:",
          ", ".join(f"{task} {100 * share:.1f}" for task, share in evidence["majority"].items()))
else:
    print("Fine-tuning is not run in this profile (finetune_tasks is empty).")

# %%
if finetune_tasks:
    fig = figures.cls_figure(cls_table, finetune_tasks, finetune_model)
    save_figure(fig, output_dir, "fig_cls")
    plt.show()
    display(show_table(verdict_table(claims.assess_findings(sts_summary, comparisons, sst2, finetuned, cls_table,
                                                            majority=evidence["majority"]),
                                     ["Fine-tun", *(f"{task.upper()}:" for task in finetune_tasks)])))

# %% [markdown]
# ## Results against the slides
#
# `RESULTS.md` in the output folder lists each claim and number of the slides beside this run's, marked
# by the rule on its line (declared in `isolib.studies.rajaee_cluster_isotropy.claims`, judged by
# `isolib.findings`): the direction of each finding is tested on every model; BERT's numbers are
# comparable only on BERT itself. The evidence above (every row's scores, each pair's cosine per seed, the
# grid per seed, the probe's answers, the fine-tuning runs) is stored in `evidence/` beside it, and
# `python -m isolib judge 03_rajaee_cluster_isotropy` judges it again without a model.

# %% tags=["nbval-check-output"]
elapsed_minutes = (time.perf_counter() - started) / 60
peak_gib = peak_memory_gib()
evidence["run"] = {  # what the notes of RESULTS.md say about this run
    "profile": profile, "models": models, "datasets": datasets, "seeds": seeds, "n_init": n_init,
    "decoder_views": decoder_views, "random_state": random_state, "sst2_train_sentences": len(train),
    "finetune_model": finetune_model, "finetune_tasks": finetune_tasks, "finetune_epochs": finetune_epochs,
    "finetune_warmup": finetune_warmup, "finetune_learning_rates": finetune_learning_rates,
    "finetune_held_out": finetune_held_out, "finetune_seeds": finetune_seeds, "finetune_clusters": finetune_clusters,
    "finetune_n_pc": finetune_n_pc, "wall_minutes": elapsed_minutes, "peak_memory_gib": peak_gib}
save_evidence(output_dir, evidence)
record = judge(output_dir, claims.record)  # results.json and RESULTS.md, from the stored evidence
print(count_line(record.findings))

# %%
show_table(findings_table(record.findings).drop(columns="rule"))

# %%
print(f"Wall time {elapsed_minutes:.1f} min, peak memory {peak_gib:.1f} GiB")

# %% [markdown]
# ## Exercises
#
# For a class: each exercise is a question, an answer cell and a locked test cell whose asserts check the
# answer (nbgrader's autograded tests). Write your answer where the answer cell says `# YOUR CODE HERE`,
# then run the test cell below it; teachers release these copies with `make student` (see `TEACHING.md`).

# %% [markdown]
# **Exercise 1.** Which processing helps most? For each model and dataset, find the method with the highest mean
# Spearman in `sts_summary` and its gain over the pre-trained row. Answer with the table `best_method`: one row
# per model and dataset, with its `method`, `spearman` and `gain`.

# %% nbgrader={"grade": false, "grade_id": "exercise_1", "locked": false, "schema_version": 3, "solution": true} tags=["nbval-check-output"]
### BEGIN SOLUTION
best = sts_summary.loc[sts_summary.groupby(["model", "dataset"], sort=False).spearman.idxmax()]
pretrained = sts_summary[sts_summary.method == "pre-trained"].set_index(["model", "dataset"]).spearman
best_method = best.assign(gain=best.spearman.to_numpy() - pretrained.loc[list(zip(best.model, best.dataset))].to_numpy())[
    ["model", "dataset", "method", "spearman", "gain"]]
best_method.round(2)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "exercise_1_test", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Exercise 1: the best method per model and dataset, and its gain over the pre-trained row.
assert {"model", "dataset", "method", "spearman", "gain"} <= set(best_method.columns), \
    "best_method needs model, dataset, method, spearman, gain"
### BEGIN HIDDEN TESTS
assert len(best_method) == sts_summary.groupby(["model", "dataset"]).ngroups, "one row per model and dataset"
for answer in best_method.itertuples():
    scored = sts_summary[(sts_summary.model == answer.model) & (sts_summary.dataset == answer.dataset)]
    assert answer.method in set(scored.method[scored.spearman == scored.spearman.max()]), answer
    assert np.isclose(answer.spearman, scored.spearman.max()), answer
    assert np.isclose(answer.gain, scored.spearman.max() - scored.spearman[scored.method == "pre-trained"].iloc[0]), answer
### END HIDDEN TESTS

# %% [markdown]
# **Exercise 2.** I(W) punishes a common mean, IsoScore does not. Take 2,000 standard normal points in 384
# dimensions (seeded with `random_state`), then the same points shifted by 1 in every coordinate, then
# those centred again, and compute both scores for each. Answer with the table `shift_scores`: rows `centred`,
# `shifted by 1` and `shifted, centred again`, columns `I(W)` and `IsoScore`.

# %% nbgrader={"grade": false, "grade_id": "exercise_2", "locked": false, "schema_version": 3, "solution": true} tags=["nbval-check-output"]
### BEGIN SOLUTION
points = np.random.default_rng(random_state).standard_normal((2000, 384))
clouds = {"centred": points, "shifted by 1": points + 1, "shifted, centred again": points - points.mean(0)}
shift_scores = pd.DataFrame({"I(W)": [partition_isotropy(cloud) for cloud in clouds.values()],
                             "IsoScore": [isoscore(cloud) for cloud in clouds.values()]}, index=list(clouds))
for name, scores in shift_scores.iterrows():
    print(f"{name:>22}: I(W) {scores['I(W)']:.3f}, IsoScore {scores['IsoScore']:.3f}")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "exercise_2_test", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Exercise 2: I(W) and IsoScore of the three clouds.
assert list(shift_scores.index) == ["centred", "shifted by 1", "shifted, centred again"], "one row per cloud, in order"
assert {"I(W)", "IsoScore"} <= set(shift_scores.columns), "shift_scores needs the columns I(W) and IsoScore"
### BEGIN HIDDEN TESTS
normal = np.random.default_rng(random_state).standard_normal((2000, 384))
for cloud_name, cloud in [("centred", normal), ("shifted by 1", normal + 1), ("shifted, centred again", normal - normal.mean(0))]:
    assert np.isclose(shift_scores.loc[cloud_name, "I(W)"], partition_isotropy(cloud)), cloud_name
    assert np.isclose(shift_scores.loc[cloud_name, "IsoScore"], isoscore(cloud)), cloud_name
### END HIDDEN TESTS

# %% [markdown]
# **Exercise 3** (read a figure). Do the removed directions help? In the grid figure above (`fig_sweep`), compare
# in each model's panel the outlined cell (the paper's k and n_pc) with the cell of the same k and n_pc = 0 (each
# cluster centred, no direction removed). Answer with the dictionary `directions_help`: for each model whose panel
# has an outlined cell, `True` if the outlined cell scores higher, else `False`.

# %% nbgrader={"grade": false, "grade_id": "exercise_3", "locked": false, "schema_version": 3, "solution": true} tags=["nbval-check-output"]
### BEGIN SOLUTION
directions_help = {}
for label, points in grid.groupby("model", sort=False):
    cells = points.set_index(["n_clusters", "n_pc"]).spearman
    k, n_pc = points.paper_k.iloc[0], points.paper_n_pc.iloc[0]
    if (k, n_pc) in cells.index and (k, 0) in cells.index:
        directions_help[label] = bool(cells[k, n_pc] > cells[k, 0])
print(directions_help)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "exercise_3_test", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Exercise 3: does the outlined cell of each panel beat the cell of the same k without removed directions?
assert isinstance(directions_help, dict) and set(directions_help) <= set(grid.model), "one entry per model (panel)"
assert all(isinstance(helps, (bool, np.bool_)) for helps in directions_help.values()), "answer True or False"
### BEGIN HIDDEN TESTS
for panel, cells in grid.groupby("model"):
    paper_cell = cells[(cells.n_clusters == cells.paper_k) & (cells.n_pc == cells.paper_n_pc)].spearman
    centred_cell = cells[(cells.n_clusters == cells.paper_k) & (cells.n_pc == 0)].spearman
    if len(paper_cell) and len(centred_cell):
        assert panel in directions_help, f"no answer for {panel}"
        assert directions_help[panel] == (paper_cell.iloc[0] > centred_cell.iloc[0]), panel
### END HIDDEN TESTS

# %% [markdown]
# **Exercise 4** (compute a measure by hand). The slides' isotropy is I(W) = min F(u) / max F(u), with
# F(u) = Σᵢ exp(uᵀwᵢ) over the unit eigenvectors u of WᵀW, each taken with both signs (u and −u, as `isolib`
# does). Compute it with numpy alone, in float64, for the pre-trained token vectors of the first model on the
# grid's dataset (`tokens[labels[0], sweep_on][0]`). exp(uᵀw) overflows for long vectors, so take log F with the
# log-sum-exp trick (log Σ exp(xᵢ) = m + log Σ exp(xᵢ − m), m the largest xᵢ) and I(W) as exp(min log F − max
# log F). Answer with `iw_by_hand`, and with `iw_isolib`, the value the notebook computed for the same tokens
# (`iw_tokens` of the pre-trained row of `sts_summary`).

# %% nbgrader={"grade": false, "grade_id": "exercise_4", "locked": false, "schema_version": 3, "solution": true} tags=["nbval-check-output"]
### BEGIN SOLUTION
W = tokens[labels[0], sweep_on][0].astype(np.float64)
_, eigenvectors = np.linalg.eigh(W.T @ W)
projections = W @ np.hstack([eigenvectors, -eigenvectors])  # uᵀw for every token and signed direction
largest = projections.max(axis=0)
log_f = largest + np.log(np.exp(projections - largest).sum(axis=0))
iw_by_hand = float(np.exp(log_f.min() - log_f.max()))
iw_isolib = sts_summary[(sts_summary.model == labels[0]) & (sts_summary.dataset == sweep_on)
                        & (sts_summary.method == "pre-trained")].iw_tokens.iloc[0]
print(f"I(W) of {labels[0]}'s tokens: by hand {iw_by_hand:.3g}, isolib {iw_isolib:.3g}")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "exercise_4_test", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Exercise 4: I(W) by hand against isolib's.
assert np.isclose(iw_by_hand, iw_isolib, rtol=1e-6, atol=1e-12), "the two values of I(W) differ"
### BEGIN HIDDEN TESTS
first_pretrained = sts_summary[(sts_summary.model == labels[0]) & (sts_summary.dataset == sweep_on)
                               & (sts_summary.method == "pre-trained")]
assert np.isclose(iw_isolib, first_pretrained.iw_tokens.iloc[0]), "iw_isolib is not the notebook's value"
assert np.isclose(iw_by_hand, partition_isotropy(tokens[labels[0], sweep_on][0].astype(np.float64)), rtol=1e-6,
                  atol=1e-12), "iw_by_hand is not I(W) of these tokens"
### END HIDDEN TESTS

# %% [markdown]
# **Exercise 5** (change a parameter, judge again). Mean + PCA removes D = 15 global directions here, as the
# slides did, and lowers Spearman (the claim "Mean + PCA (all-but-the-top) lowers STS Spearman"). Mu & Viswanath,
# who proposed all-but-the-top, remove about d/100 of them, d the dimension: is the loss the slides' D's doing?
# For each model, on `sweep_on`, process the tokens with D = round(d / 100) (`isolib.transforms.abtt`), score the
# pairs as the notebook does (sentence vectors by `isolib.evaluation.mean_pool` with
# `n_sentences=len(pairs[sweep_on].sentences)`, then `isolib.evaluation.sts_correlation` of each pair's two
# vectors), and judge the pairs' cosines against the pre-trained ones (`similarity` in
# `evidence["sts_similarities"]`) by the claim's rule, `isolib.findings.compare_correlations(gold, ours,
# pre_trained, higher=False, random_state=random_state)`: its 95% interval lies below 0 (`lower`), above 0
# (`higher`) or across it (`within noise`), as `outcome` in `comparisons`. Answer with the table
# `fewer_directions`: one row per model, with `model`, `D`, `spearman`, `outcome`, and `changed` (whether the
# outcome differs from D = 15's in `comparisons`).

# %% nbgrader={"grade": false, "grade_id": "exercise_5", "locked": false, "schema_version": 3, "solution": true} tags=["nbval-check-output"]
### BEGIN SOLUTION
from isolib.evaluation import mean_pool, sts_correlation
from isolib.findings import compare_correlations
from isolib.transforms import abtt


def score_pairs(vectors, ids, paired):
    """The notebook's sentence vectors (mean of their tokens) and STS scores, from processed token vectors."""
    sentences = mean_pool(vectors, ids, n_sentences=len(paired.sentences))
    return sts_correlation(sentences[paired.first], sentences[paired.second], paired.gold)


def outcome(verdict):
    low, high = verdict.interval
    return "within noise" if low <= 0 <= high else ("higher" if verdict.value > 0 else "lower")


cosines = evidence["sts_similarities"].query("dataset == @sweep_on")
rows = []
for label in labels:
    vectors, ids = tokens[label, sweep_on]
    pre_trained = cosines[(cosines.model == label) & (cosines.method == "pre-trained")].similarity
    D = round(vectors.shape[1] / 100)
    result = score_pairs(abtt(vectors, D), ids, pairs[sweep_on])
    verdict = compare_correlations(pairs[sweep_on].gold, result.similarities, pre_trained, higher=False,
                                   random_state=random_state)
    with_15 = comparisons[(comparisons.model == label) & (comparisons.dataset == sweep_on)
                          & (comparisons.comparison == "Mean + PCA vs pre-trained")].outcome.iloc[0]
    rows.append({"model": label, "D": D, "spearman": result.spearman, "outcome": outcome(verdict),
                 "outcome with D = 15": with_15, "changed": outcome(verdict) != with_15})
fewer_directions = pd.DataFrame(rows)
fewer_directions.round(2)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "exercise_5_test", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Exercise 5: all-but-the-top with d/100 directions, judged by the claim's rule.
assert {"model", "D", "spearman", "outcome", "changed"} <= set(fewer_directions.columns), \
    "fewer_directions needs model, D, spearman, outcome, changed"
assert set(fewer_directions.outcome) <= {"lower", "higher", "within noise"}
### BEGIN HIDDEN TESTS
from isolib.evaluation import mean_pool as pool_tokens, sts_correlation as sts_scores
from isolib.findings import compare_correlations as paired_difference
from isolib.transforms import abtt as all_but_the_top

assert sorted(fewer_directions.model) == sorted(labels), "one row per model"
checked_pairs = pairs[sweep_on]
for answer in fewer_directions.itertuples():
    model_tokens, model_ids = tokens[answer.model, sweep_on]
    assert answer.D == round(model_tokens.shape[1] / 100), answer
    pooled = pool_tokens(all_but_the_top(model_tokens, answer.D), model_ids, n_sentences=len(checked_pairs.sentences))
    expected = sts_scores(pooled[checked_pairs.first], pooled[checked_pairs.second], checked_pairs.gold)
    assert np.isclose(answer.spearman, expected.spearman), answer
    baseline = evidence["sts_similarities"]
    baseline = baseline[(baseline.model == answer.model) & (baseline.dataset == sweep_on)
                        & (baseline.method == "pre-trained")].similarity
    judged = paired_difference(checked_pairs.gold, expected.similarities, baseline, higher=False,
                               random_state=random_state)
    expected_outcome = ("within noise" if judged.interval[0] <= 0 <= judged.interval[1]
                        else "higher" if judged.value > 0 else "lower")
    assert answer.outcome == expected_outcome, answer
    before = comparisons[(comparisons.model == answer.model) & (comparisons.dataset == sweep_on)
                         & (comparisons.comparison == "Mean + PCA vs pre-trained")].outcome.iloc[0]
    assert answer.changed == (expected_outcome != before), answer
### END HIDDEN TESTS

# %% [markdown]
# **Exercise 6** (apply a control). The slides credit the clusters: the method centres each cluster and removes
# its own dominant directions. Would any split of the tokens do as well? Apply the control that keeps everything
# but the clusters: for each model, on `sweep_on`, split the tokens into the model's k groups **at random** (for
# each seed s of `seeds`, the tokens' groups are `np.random.default_rng(s).integers(k, size=n_tokens)`), and in
# each group subtract its mean and remove its n_pc top directions (`abtt(group, n_pc)`; k and n_pc are in
# `settings[label]`). Judge the control by the rule of the claim "The proposed method raises STS Spearman over the
# pre-trained vectors": as in Exercise 5, with `higher=True` and one column of `ours` per seed. Then give the
# claim's status with this control, as the glossary does: `reproduced` if the method's outcome (`proposed vs
# pre-trained` in `comparisons`) is `higher` and the control's is not, `indistinguishable` if both are `higher`
# (the data cannot tell the clusters from random groups), `borderline` if the method's is `within noise`, `not
# reproduced` if it is `lower`. Answer with the table `random_groups`: one row per model, with `model`, `spearman`
# (the control's, the mean over seeds), `outcome` (the control's) and `status`.

# %% nbgrader={"grade": false, "grade_id": "exercise_6", "locked": false, "schema_version": 3, "solution": true} tags=["nbval-check-output"]
### BEGIN SOLUTION
rows = []
for label in labels:
    vectors, ids = tokens[label, sweep_on]
    k, n_pc = settings[label].n_clusters, settings[label].n_pc
    pre_trained = cosines[(cosines.model == label) & (cosines.method == "pre-trained")].similarity
    results = []
    for seed in seeds:
        groups = np.random.default_rng(seed).integers(k, size=len(vectors))
        processed = np.empty(vectors.shape)
        for group in range(k):
            processed[groups == group] = abtt(vectors[groups == group], n_pc)
        results.append(score_pairs(processed, ids, pairs[sweep_on]))
    verdict = compare_correlations(pairs[sweep_on].gold, np.column_stack([result.similarities for result in results]),
                                   pre_trained, higher=True, random_state=random_state)
    method = comparisons[(comparisons.model == label) & (comparisons.dataset == sweep_on)
                         & (comparisons.comparison == "proposed vs pre-trained")].outcome.iloc[0]
    status = {"lower": "not reproduced", "within noise": "borderline"}.get(
        method, "indistinguishable" if outcome(verdict) == "higher" else "reproduced")
    rows.append({"model": label, "spearman": np.mean([result.spearman for result in results]),
                 "outcome": outcome(verdict), "method's outcome": method, "status": status})
random_groups = pd.DataFrame(rows)
random_groups.round(2)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "exercise_6_test", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Exercise 6: the proposed method's claim against random groups in place of its clusters.
assert {"model", "spearman", "outcome", "status"} <= set(random_groups.columns), \
    "random_groups needs model, spearman, outcome, status"
assert set(random_groups.status) <= {"reproduced", "indistinguishable", "borderline", "not reproduced"}
### BEGIN HIDDEN TESTS
from isolib.evaluation import mean_pool as pool_tokens, sts_correlation as sts_scores
from isolib.findings import compare_correlations as paired_difference
from isolib.transforms import abtt as all_but_the_top

assert sorted(random_groups.model) == sorted(labels), "one row per model"
checked_pairs = pairs[sweep_on]
for answer in random_groups.itertuples():
    model_tokens, model_ids = tokens[answer.model, sweep_on]
    n_groups, n_directions = settings[answer.model].n_clusters, settings[answer.model].n_pc
    per_seed_scores = []
    for group_seed in seeds:
        assigned = np.random.default_rng(group_seed).integers(n_groups, size=len(model_tokens))
        controlled = np.zeros(model_tokens.shape)
        for group in range(n_groups):
            controlled[assigned == group] = all_but_the_top(model_tokens[assigned == group], n_directions)
        pooled = pool_tokens(controlled, model_ids, n_sentences=len(checked_pairs.sentences))
        per_seed_scores.append(sts_scores(pooled[checked_pairs.first], pooled[checked_pairs.second],
                                          checked_pairs.gold))
    assert np.isclose(answer.spearman, np.mean([scores.spearman for scores in per_seed_scores])), answer
    baseline = evidence["sts_similarities"]
    baseline = baseline[(baseline.model == answer.model) & (baseline.dataset == sweep_on)
                        & (baseline.method == "pre-trained")].similarity
    judged = paired_difference(checked_pairs.gold, np.column_stack([scores.similarities for scores in per_seed_scores]),
                               baseline, higher=True, random_state=random_state)
    control_outcome = ("within noise" if judged.interval[0] <= 0 <= judged.interval[1]
                       else "higher" if judged.value > 0 else "lower")
    assert answer.outcome == control_outcome, answer
    claim = comparisons[(comparisons.model == answer.model) & (comparisons.dataset == sweep_on)
                        & (comparisons.comparison == "proposed vs pre-trained")].iloc[0]
    expected_status = ("not reproduced" if claim.outcome == "lower" else "borderline" if claim.outcome == "within noise"
                       else "indistinguishable" if control_outcome == "higher" else "reproduced")
    assert answer.status == expected_status, answer
### END HIDDEN TESTS
