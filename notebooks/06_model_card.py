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
# > **This is the quick run** (`make quick`): the defaults of the parameters cell, with fewer models and subsets of the data, so its numbers and verdicts can differ from the full run's (`make figures`: all data, every offline model): see [its executed notebook](../figures/06_model_card/06_model_card.ipynb) and [its RESULTS.md](../figures/06_model_card/RESULTS.md).

# %% [markdown]
# # An isotropy card for any model: every measure, both decoder views, the sink and rogue dimensions, on one page
#
# The studies of this collection answer "is this space isotropic, and why not?" for four papers' models.
# A researcher who trains, fine-tunes or chooses a model asks the same of *their* model: how anisotropic is
# it, and in which layers; is that a common mean, a few rogue coordinates, an attention sink, clusters;
# which post-processing helps a similarity task; which measure to believe. This notebook writes, for each
# model it is given (an offline name, a model folder or a Hub id), one **card**: the measures of notebook 05
# per layer, judged statement by statement by the collection's findings machinery, so that a card never
# says more than its numbers. `python -m isolib card MODEL` writes the same card from a terminal. Every status,
# mark and measure is defined in [the glossary](../docs/glossary.md).
#
# Per layer, and for a decoder per view of its first position (as the papers fed it, and behind a start
# token that absorbs the attention sink, the view judged), a card holds:
#
# | section | what it measures | the statement, its control and interval |
# |---|---|---|
# | every measure | the twelve measures of notebook 05 on `n_replicates` samples of `n_points` word tokens | which measures rank the layers as the average cosine does (Kendall's tau; control: the layers shuffled; interval over layers and samples) |
# | anisotropy | the average cosine between tokens | above 0.1 (ours); control: the same tokens centred; interval over the samples |
# | the first position (a decoder) | its norm against the tokens after it, the share of attention it draws | more than twice the others' norm, most of the attention; control: position 1; interval over windows |
# | rogue dimensions | the top 3 coordinates' share of the average cosine (Timkey & van Schijndel 2021) | more than half; control: the same points randomly rotated; interval over tokens |
# | post-processing | the measures after centring, all-but-the-top, whitening, standardisation | (numbers: the figure) |
# | local dimension | LID with 100 neighbours, against GloVe-50d on as many distinct words of the same windows | below the static baseline; paired over samples |
# | clusters | the best k-means partition, each cluster's dominant token and norm (artefact groups flagged) | silhouette above 0.1 (Cai et al.) with two clusters that are no artefact group; control: a Gaussian of the layer's mean and covariance |
# | STS-B dev | Spearman of the cosine of mean-pooled token vectors, raw and after each post-processing of them | higher than raw, paired over the 1,500 sentence pairs |
#
# A static embedding (GloVe) has one "layer" and no position: its card holds every section but the first
# position, the views and the comparison with a static baseline, which it is.
#
# This notebook regenerates, in `output_dir`:
#
# * **`<model>/card.md`** and **`<model>/card.html`** — each model's card (the HTML holds its figures), beside its
#   figures, its evidence (`evidence/`) and the record of every statement (`results.json`);
# * **`COMPARISON.md`** and **`COMPARISON.html`** — the cards side by side, with the reference numbers the
#   papers give for BERT and GPT-2 (notebooks 01 and 03) at the same relative depth.
#
# **Data.** PTB (train) cut into windows of 512 tokens exactly as notebooks 02 and 05 cut them (the same seed
# and token budget reuse their cached embeddings); STS-B dev for the similarity task. Layer 0 is the input
# embedding layer.

# %% tags=["parameters"]
profile: str = "quick"  # which profile produced this run: quick or student or full or paper
output_dir: str = "../build/quick/figures/06_model_card"  # folder of one card folder per model and of the comparison page
models: list = ["minilm"]  # offline short names such as minilm or smollm2 or glove-50d or Hub ids such as gpt2
corpus: str = "ptb"  # running text: ptb or wikitext2 (train split)
token_budget: int = 8192  # about this many tokens per model in windows drawn at random as notebooks 02 and 05
n_points: int = 1000  # word tokens per sample; every measure of a layer is computed on the same tokens
n_replicates: int = 3  # independent token samples per layer: the intervals over token samples
sts_pairs: int = 0  # STS-B dev pairs scored; 0 scores all 1500
static_baseline: str = "glove-50d"  # static vectors measured on the words of the same windows; empty for none
n_resamples: int = 1000  # bootstrap resamples of every interval
n_jobs: int = -1  # layers measured at once in worker processes; -1 uses every core, 1 runs in the kernel
storage_dtype: str = "float16"  # cache dtype of the embeddings: float32 or float16
device: str = "cpu"  # torch device: cpu or cuda
random_state: int = 0  # seed of the window draw and of every sample, clustering and resample

# %%
from pathlib import Path

import numpy as np
from IPython.display import Image, display

from isolib.card import CardSettings, make_card
from isolib.card.page import comparison_references, glance_table, statement_counts, write_comparison
from isolib.card.settings import card_folder_name
from isolib.evidence import load_evidence
from isolib.plotting import show_table
from isolib.project import check_output_dir

check_output_dir(profile, output_dir)
settings = CardSettings(corpus=corpus, token_budget=token_budget, n_points=n_points, n_replicates=n_replicates,
                        sts_pairs=sts_pairs, static_baseline=static_baseline, n_resamples=n_resamples, n_jobs=n_jobs,
                        storage_dtype=storage_dtype, device=device, random_state=random_state)
folders = {model: Path(output_dir) / card_folder_name(model) for model in models}

# %% [markdown]
# ## The cards
#
# Each model is read (its embeddings from the cache when notebooks 02 or 05, or an earlier card, ran with the
# same windows), measured and judged; its card is written into its own folder. A statement is a test: *✓ yes*
# when the rule holds (with an interval: all of it) and its control does not, *= control* when the control
# holds too, *~ borderline* when the interval crosses the threshold, *✗ no*, *· n/c* when it cannot be judged.

# %% tags=["nbval-check-output"]
cards = {}
for model, folder in folders.items():
    cards[model] = make_card(model, settings, out=folder)
    print(f"{model}: {len(cards[model].record.findings)} statements, written to {folder.name}/card.md and card.html")

# %%
for model, card in cards.items():
    print(f"{model}: {statement_counts(card.record.findings)}")

# %% [markdown]
# ## One card at a glance
#
# The first model's table at a glance (the judged view), and its figure of every measure per layer; the rest
# of the card (the first position, rogue dimensions and local dimension, post-processing, clusters, STS-B)
# is in its `card.html`.

# %%
first = models[0]
evidence = load_evidence(folders[first])  # what the card's statements were judged from
judged = evidence["run"]["views"][-1]  # a decoder's start-token view, else the model's one view
display(show_table(glance_table(evidence, cards[first].record, judged)))
if (folders[first] / "fig_measures.png").exists():
    display(Image(filename=str(folders[first] / "fig_measures.png")))

# %% [markdown]
# ## Side by side, with the papers' numbers
#
# The cards' judged views in one table, how many layers each statement holds for, then the reference numbers
# notebooks 01 (Ethayarajh 2019: the average cosine of random words of BERT and GPT-2 per layer) and 03
# (Rajaee & Pilehvar 2021: BERT's STS-B Spearman, raw, centred and with all-but-the-top) compare with. An
# offline model stands in for BERT or GPT-2: its number is set at the same relative depth, never judged
# against the paper's.

# %%
from isolib.studies.ethayarajh_contextuality.settings import PAPER_MODELS, PAPER_REFERENCE, counterpart
from isolib.studies.rajaee_cluster_isotropy.settings import SLIDES_SIX_ROWS

references = comparison_references(PAPER_REFERENCE, PAPER_MODELS, counterpart, SLIDES_SIX_ROWS["stsb"])
comparison, _ = write_comparison(list(folders.values()), references, output=output_dir)
print(f"wrote {Path(output_dir).name}/{comparison.name}")

# %% [markdown]
# ## Exercises
#
# For a class: each exercise is a question, an answer cell and a locked test cell whose asserts check the
# answer (nbgrader's autograded tests). Write your answer where the answer cell says `# YOUR CODE HERE`,
# then run the test cell below it; teachers release these copies with `make student` (see `TEACHING.md`).

# %% [markdown]
# **Exercise 1.** Which layers of the first model are anisotropic? From its card's `evidence` (table `measures`:
# one row per view, layer and token sample), take the judged view `judged` and list the layers whose average
# cosine, averaged over the token samples, is above 0.1. Answer with the sorted list of layer numbers
# `anisotropic_layers`.

# %% nbgrader={"grade": false, "grade_id": "exercise_1", "locked": false, "schema_version": 3, "solution": true} tags=["nbval-check-output"]
### BEGIN SOLUTION
measures = evidence["measures"]
per_layer = measures[measures.space == judged].groupby("layer").average_cosine.mean()
anisotropic_layers = sorted(int(layer) for layer in per_layer.index[per_layer > 0.1])
print(anisotropic_layers)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "exercise_1_test", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Exercise 1: the judged view's layers whose mean average cosine is above 0.1.
assert all(isinstance(layer, int) for layer in anisotropic_layers), "a list of layer numbers"
### BEGIN HIDDEN TESTS
expected_evidence = load_evidence(folders[first])
expected_view = expected_evidence["run"]["views"][-1]
table = expected_evidence["measures"]
means = table[table.space == expected_view].groupby("layer").average_cosine.mean()
assert anisotropic_layers == sorted(int(layer) for layer in means.index[means > 0.1])
### END HIDDEN TESTS

# %% [markdown]
# **Exercise 2.** Does a layer's STS-B score follow its anisotropy? From the same `evidence` (tables `sts`: each
# pair's cosine per view, layer and post-processing; `sts_gold`: each pair's gold score), compute the raw
# Spearman correlation (x 100) of every layer of the judged view, then Spearman's correlation over the layers
# between that score and the layer's mean average cosine. Answer with `sts_by_layer` (a pandas Series of the
# scores indexed by layer) and `follows` (the correlation over layers, a float).

# %% nbgrader={"grade": false, "grade_id": "exercise_2", "locked": false, "schema_version": 3, "solution": true} tags=["nbval-check-output"]
from scipy import stats

### BEGIN SOLUTION
gold = evidence["sts_gold"].sort_values("pair").score.to_numpy()
raw = evidence["sts"][(evidence["sts"].space == judged) & (evidence["sts"].method == "raw")]
sts_by_layer = raw.groupby("layer").apply(
    lambda rows: 100 * stats.spearmanr(rows.sort_values("pair").similarity, gold).statistic, include_groups=False)
cosines = evidence["measures"].query("space == @judged").groupby("layer").average_cosine.mean()
follows = float(stats.spearmanr(sts_by_layer, cosines.loc[sts_by_layer.index]).statistic)
print(f"{len(sts_by_layer)} layers; correlation over layers {follows:+.1f}")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "exercise_2_test", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Exercise 2: the raw STS-B dev Spearman per layer, and its correlation with the layer's average cosine.
assert len(sts_by_layer) == evidence["measures"].query("space == @judged").layer.nunique(), "one score per layer"
assert -1 <= follows <= 1, "a correlation"
### BEGIN HIDDEN TESTS
expected_gold = evidence["sts_gold"].sort_values("pair").score.to_numpy()
for layer, score in sts_by_layer.items():
    rows = evidence["sts"].query("space == @judged and method == 'raw' and layer == @layer").sort_values("pair")
    assert np.isclose(score, 100 * stats.spearmanr(rows.similarity, expected_gold).statistic)
expected_cosines = evidence["measures"].query("space == @judged").groupby("layer").average_cosine.mean()
assert np.isclose(follows, stats.spearmanr(sts_by_layer, expected_cosines.loc[sts_by_layer.index]).statistic)
### END HIDDEN TESTS
