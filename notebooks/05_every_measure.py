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
# > **This is the quick run** (`make quick`): the defaults of the parameters cell, with fewer models and subsets of the data, so its numbers and verdicts can differ from the full run's (`make figures`: all data, every offline model): see [its executed notebook](../figures/05_every_measure/05_every_measure.ipynb) and [its RESULTS.md](../figures/05_every_measure/RESULTS.md).

# %% [markdown]
# # One embedding space, every measure: which isotropy measures agree, and what moves them
#
# The four studies of this collection judge isotropy each with its own measure: Ethayarajh (2019) the
# average cosine between random tokens, Cai et al. (2021) S_inter and the local intrinsic dimension,
# Rajaee & Pilehvar (2021) the partition score I(W) of Mu & Viswanath (2018), Mickus et al. (2024)
# IsoScore. On the same encoders they disagree: notebooks 01 and 02 find MiniLM and MPNet nearly
# isotropic by the cosine, notebook 03 finds them extremely anisotropic by I(W), and multiplying the
# same vectors by 3 takes I(W) from 0.1 to 1e-32 while IsoScore does not move. Later work makes this
# the open question. Rudman et al. (2022, *IsoScore*) argue that the average cosine and I(W) do not
# measure isotropy at all; Timkey & van Schijndel (2021, *All Bark and No Bite*) show that one to
# three "rogue" coordinates dominate cosine-based measures, and that standardising each coordinate
# removes them. No paper and no package puts every measure on the same points.
#
# This notebook does. It draws one fixed sample of word tokens of one corpus, takes every layer of
# every model on those tokens (and a static embedding of the same words), and computes on each
# (model, view, layer) *cell* the twelve measures of `isolib.metrics`:
#
# | measure | what it computes | isotropic end | source |
# |---|---|---|---|
# | average cosine | mean cosine over all pairs of tokens | 0 | Ethayarajh 2019 |
# | anisotropy baseline | mean cosine of 1,000 random tokens of different windows | 0 | Ethayarajh 2019 |
# | S_inter | mean cosine between types (one random instance each) | 0 | Cai et al. 2021 |
# | S_intra | mean cosine between instances of one type | 0 | Cai et al. 2021 |
# | MEV baseline | variance share of the first singular vector of 1,000 random tokens | 1/d | Ethayarajh 2019 |
# | I(W) | min over max of the partition function over principal directions (both signs) | 1 | Mu & Viswanath 2018 |
# | IsoScore | how evenly the variance spreads over the principal axes | 1 | Rudman et al. 2022 |
# | effective rank / d | exponential of the entropy of the singular values, over the dimension | 1 | Roy & Vetterli 2007 |
# | top-coordinate share | variance share of the coordinate of largest variance | 1/d | Timkey & van Schijndel 2021 |
# | top-PC share | variance share of the first principal direction | 1/d | Mu & Viswanath 2018 |
# | LID | local intrinsic dimension, k = 100 nearest neighbours, true distances | d | Cai et al. 2021 |
# | best k-means silhouette | the best silhouette over k-means with k = 2 ... `k_max` | 0 or below | Cai et al. 2021 |
#
# and asks three questions: **do the measures rank the cells alike** (Kendall's tau of every pair, with
# an interval over cells and token samples); **what moves each measure** (thirteen controlled changes
# of the same points: centring, all-but-the-top, the cluster-based method of notebook 03, whitening,
# standardisation, the top 1 and 3 coordinates removed, a random rotation, unit length, the decoder's
# first position removed, uniform scaling, one planted outlier, fewer points); and **do the
# literature's claims hold** here, each judged as a test with its control and interval. It regenerates:
#
# * **Table `measures`** and **Figure `fig_measures`** — every measure, one row per (model, view, layer), mean over token samples (`measures_by_replicate` has each sample);
# * **Table `agreement`** and **Figure `fig_agreement`** — Kendall's tau of every pair of measures over the cells;
# * **Table `sensitivity`** and **Figure `fig_sensitivity`** — each measure's change under each change of the points, on one isotropy scale, with its interval (`changed` has every value);
# * **Table `rogue`** and **Figure `fig_rogue`** — the share of the average cosine carried by the top coordinates, against a random rotation;
# * **`RESULTS.md`** — the claims of Rudman et al. (2022) and Timkey & van Schijndel (2021) as tests, and the checks; and, at the end, **a reader's guide**: which measure answers which question, generated from the tables.
#   Every status, mark and measure is defined in [the glossary](../docs/glossary.md).
#
# **Data and tokens.** PTB (train) cut into windows of 512 tokens exactly as notebook 02 cuts it
# (`isolib.windows.running_text_windows`, the same seed and token budget), so this notebook reads the
# embeddings notebook 02 caches. The analysed tokens are notebook 02's word tokens (no special token,
# no symbol, no piece of PTB's `<unk>` and `N`); `n_points` of them are drawn at random
# `n_replicates` times, the same tokens in every layer and view of a model. The static embedding
# (`glove-50d`) is measured on the words of the same windows. Layer 0 is the input embedding layer.
#
# **Models.** `minilm` and `mpnet` (sentence-transformers encoders) and the decoder `smollm2`
# (SmolLM2-135M-Instruct) in two views of its first position: as the papers fed it, the first token of
# each window an attention sink of huge norm (`smollm2`), and with a start token that absorbs the sink
# (`smollm2 (start token)`, the view judged; the other shown beside, not counted).

# %% tags=["parameters"]
profile: str = "quick"  # which profile produced this run: quick or student or full or paper
output_dir: str = "../build/quick/figures/05_every_measure"  # folder for figures and tables and RESULTS.md
models: list = ["minilm"]  # offline short names such as minilm or mpnet or smollm2 or Hub ids such as gpt2
corpus: str = "ptb"  # running text: ptb or wikitext2 (train split)
window_length: int = 512  # tokens per window including special tokens as notebook 02 cuts them
token_budget: int = 8192  # about this many tokens per model in windows drawn at random as notebook 02; 0 takes every window
layers: dict = {}  # layers to extract per model as a list of layer numbers; a model not listed gets every layer
decoder_views: list = ["start_token"]  # views of a decoder's first position besides the paper's keep: start_token (judged) or drop
static_baseline: str = "glove-50d"  # static vectors measured on the words of the same windows; empty for none
n_points: int = 2000  # tokens drawn per sample; every measure of a cell is computed on the same tokens
n_replicates: int = 3  # independent token samples per cell, each also changed in every way
baseline_samples: int = 1000  # tokens drawn for the anisotropy and MEV baselines as Ethayarajh
lid_k: int = 100  # nearest neighbours of the LID estimate as Cai et al.
lid_queries: int = 500  # random query points whose LID is averaged; 0 uses every point
k_max: int = 6  # k-means for every k from 2 to k_max; the best silhouette over k is the measure
n_init: int = 1  # k-means restarts per k
kmeans_fit_size: int = 2000  # k-means fitted on this many random points then every point assigned; 0 fits all
silhouette_sample: int = 2000  # points scoring each k by silhouette; 0 scores all
abtt_components: int = 15  # principal directions removed by all-but-the-top after centring as notebook 03
cluster_encoder: list = [27, 12]  # k and directions per cluster of the cluster-based method for an encoder as notebook 03
cluster_decoder: list = [10, 30]  # k and directions per cluster of the cluster-based method for a decoder as notebook 03
rogue_dimensions: list = [1, 3]  # numbers of top coordinates by variance removed one change each
scale: float = 3.0  # factor of the uniform scaling
outlier_scale: float = 20.0  # the planted outlier lies this many median distances from the mean
small_n: int = 500  # points of the fewer-points change
anisotropic_cosine: float = 0.1  # a layer is anisotropic when its average cosine is at least this (ours)
n_resamples: int = 1000  # bootstrap resamples of the intervals
n_jobs: int = -1  # cells measured at once in worker processes; -1 uses every core, 1 runs in the kernel
storage_dtype: str = "float16"  # cache dtype of the embeddings: float32 or float16
device: str = "cpu"  # torch device: cpu or cuda
random_state: int = 0  # seed of the window draw and of every sample and clustering

# %%
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from IPython.display import Markdown, display

from isolib.datasets import load_corpus
from isolib.embed import embed_views
from isolib.evidence import judge, save_evidence
from isolib.findings import count_line, findings_table, verdict_table, verdicts
from isolib.models import load_model, load_static
from isolib.plotting import interval, replicates, save_figure, save_table, set_style, show_table, show_text
from isolib.project import check_output_dir
from isolib.runner import peak_memory_gib
from isolib.studies.every_measure import claims, compute, figures, guide, sampling, tables
from isolib.studies.every_measure.settings import LABELS, MEASURE_NAMES
from isolib.views import View
from isolib.windows import running_text_windows

started = time.perf_counter()
set_style()
check_output_dir(profile, output_dir)
options = compute.MeasureOptions(baseline_samples=baseline_samples, lid_k=lid_k, lid_queries=lid_queries or None,
                                 k_max=k_max, n_init=n_init, kmeans_fit_size=kmeans_fit_size or None,
                                 silhouette_sample=silhouette_sample or None)
# The evidence: what the claims judge, stored at the end beside the results. First the parameters they and the
# results page read; the tables join as they are measured.
evidence = {"run": {"parameters": {
    "profile": profile, "models": models, "corpus": corpus, "window_length": window_length,
    "token_budget": token_budget, "decoder_views": decoder_views, "static_baseline": static_baseline,
    "n_points": n_points, "n_replicates": n_replicates, "baseline_samples": baseline_samples, "lid_k": lid_k,
    "lid_queries": lid_queries, "k_max": k_max, "n_init": n_init, "kmeans_fit_size": kmeans_fit_size,
    "silhouette_sample": silhouette_sample, "abtt_components": abtt_components, "cluster_encoder": cluster_encoder,
    "cluster_decoder": cluster_decoder, "rogue_dimensions": rogue_dimensions, "scale": scale,
    "outlier_scale": outlier_scale, "small_n": small_n, "anisotropic_cosine": anisotropic_cosine,
    "n_resamples": n_resamples, "n_jobs": n_jobs, "random_state": random_state}}}

# %% [markdown]
# ## The token sample
#
# Each model reads the corpus with its own tokenizer, so each has its own windows (the same windows of
# the stream, drawn with notebook 02's seed); `embed_views` reads them from the cache when notebook 02
# has run with the same settings. The same tokens are drawn in every view and layer of a model.

# %% tags=["nbval-check-output"]
lines = load_corpus(corpus, split="train").text
embeddings, samples, first_tokens = {}, {}, None
for name in models:
    loaded = load_model(name, device=device)
    cut = running_text_windows(lines, loaded.tokenizer, window_length=window_length, token_budget=token_budget or None,
                               random_state=random_state)
    views = embed_views(loaded, cut.text.tolist(), views=decoder_views, layers=layers.get(name),
                        max_length=window_length, batch_size=8, dtype=storage_dtype, device=device)
    analysed = {label: sampling.analysed_tokens(embedding.tokens) for label, embedding in views.items()}
    drawn = sampling.draw_token_samples(analysed, n_points, n_replicates, random_state=random_state)
    for label, embedding in views.items():
        embeddings[label], samples[label] = embedding, drawn[label]
        print(f"{label}: {len(cut)} windows, {len(embedding.tokens):,} tokens, {len(analysed[label]):,} word tokens; "
              f"samples of {len(drawn[label][0]):,}; layers {list(embedding.layers)}")
    first_tokens = views[name].tokens if first_tokens is None else first_tokens
    del loaded
static = None
if static_baseline:
    static = load_static(static_baseline)
    samples[static_baseline] = sampling.static_sample(first_tokens, static.words, n_points, n_replicates,
                                                      random_state=random_state)
    print(f"{static_baseline}: samples of {len(samples[static_baseline][0]):,} words of the same windows")


# %%
def cell_samples(label, layer):
    """The token samples of one cell, one per replicate, read from the cache when asked for."""
    def read():
        vectors = static.matrix if label == static_baseline else embeddings[label].layer(layer)
        return sampling.token_samples(vectors, samples[label])
    return read


cells = []
for label, embedding in embeddings.items():
    view = View.parse(label)
    for layer in embedding.layers:
        cells.append({"space": label, "model": view.model, "view": view.first_position, "layer": layer})
if static_baseline:
    cells.append({"space": static_baseline, "model": static_baseline, "view": "static", "layer": 0})
decoders = {label for label, embedding in embeddings.items() if embedding.starts_with_content}
print(f"{len(cells)} cells: " + ", ".join(f"{label} ({sum(cell['space'] == label for cell in cells)})"
                                          for label in dict.fromkeys(cell["space"] for cell in cells)))

# %% [markdown]
# ## Every measure on the same points
#
# Each cell is measured on each of its `n_replicates` token samples; each sample is then changed
# in each of the thirteen ways and measured again (next sections). Measures that share a covariance or
# scatter matrix (IsoScore, effective rank, the two variance shares, I(W)) compute it once per set of
# points (`isolib.studies.every_measure.compute.Spectrum`); the checks below confirm that this gives what
# `isolib.metrics` gives measure by measure. The table shows the mean over token samples.

# %%
measuring = time.perf_counter()


def cell_settings(cell):
    """The changes of one cell: the cluster-based method as notebook 03 sets it for an encoder or a decoder."""
    return compute.ChangeSettings(abtt_components=abtt_components,
                          cluster=tuple(cluster_decoder if cell["space"] in decoders else cluster_encoder),
                          rogue_dimensions=tuple(rogue_dimensions), scale=scale, outlier_scale=outlier_scale,
                          small_n=small_n)


by_replicate, changed = compute.measure_spaces(((cell, cell_samples(cell["space"], cell["layer"]), cell_settings(cell))
                                        for cell in cells), options, cell_settings(cells[0]),
                                       n_replicates=n_replicates, random_state=random_state, n_jobs=n_jobs)
measuring_minutes = (time.perf_counter() - measuring) / 60
evidence |= {"measures_by_replicate": by_replicate, "changed": changed}
measures, numbers = tables.cell_table(by_replicate), [*MEASURE_NAMES, "log10_iw"]
# On another machine a number may move within the spread of its cell's token samples (and of the changes'
# own random draws: a clustering, a rotation); a wall time differs on every run and is not compared.
save_table(measures, output_dir, "measures", digits=4,
           tolerance={name: f"{name}_std" for name in numbers} | {f"{name}_std": f"{name}_std" for name in numbers})
save_table(by_replicate, output_dir, "measures_by_replicate", digits=4,
           tolerance={name: replicates("space", "layer") for name in [*numbers, "best_k"]} | {"seconds": None})
save_table(changed, output_dir, "changed", digits=4,
           tolerance={name: replicates("space", "layer", "change") for name in [*numbers, "best_k"]} | {"seconds": None})
print(f"{len(by_replicate)} measurements of every measure on the cells' samples and {len(changed)} on changed "
      f"samples in {measuring_minutes:.1f} min ({by_replicate.seconds.mean():.1f} s each on average)")
show_table(measures[["space", "layer", *MEASURE_NAMES, "log10_iw", "dim", "n_points"]].drop(columns="iw")
           .rename(columns=LABELS), digits=3)

# %%
spaces = [label for label in dict.fromkeys(measures.space) if label != static_baseline]
fig = figures.measures_figure(measures, spaces=spaces, static_baseline=static_baseline,
                              title=f"Every measure on the same tokens of {corpus} ({n_points:,} per sample, mean over "
                                    f"{n_replicates} samples)")
save_figure(fig, output_dir, "fig_measures")
plt.show()

# %% [markdown]
# ## Agreement: do the measures rank the cells alike?
#
# Each measure is oriented so that higher is more isotropic (the average cosine is negated, I(W) read
# on a log scale); Kendall's tau-b of every pair is computed over the cells in each token sample and
# averaged. The interval resamples the cells and the token samples independently: it says how much
# the agreement depends on which layers and models were run and on which tokens were drawn.
# A tau of 1: the two rank the cells alike; 0: unrelated; −1: in opposite orders.

# %%
agreement = tables.agreement_table(by_replicate, n_resamples=n_resamples, random_state=random_state)
save_table(agreement, output_dir, "agreement", tolerance={name: interval("low", "high") for name in ("tau", "low", "high")})
matrix = agreement.pivot(index="measure", columns="other", values="tau").loc[list(MEASURE_NAMES), list(MEASURE_NAMES)]
fig, ax = plt.subplots(figsize=(10, 8.5))
sns.heatmap(matrix.rename(index=LABELS, columns=LABELS), annot=True, fmt=".2f", cmap="vlag", vmin=-1, vmax=1, center=0,
            square=True, annot_kws={"fontsize": 8}, cbar_kws={"label": "Kendall tau-b (oriented to isotropy)"}, ax=ax)
ax.set_xlabel("")
ax.set_ylabel("")
ax.set_title(f"Rank agreement over {len(cells)} cells (mean over {n_replicates} token samples)")
save_figure(fig, output_dir, "fig_agreement")
plt.show()

# %% [markdown]
# **The literature** (Rudman et al. 2022) expects IsoScore to disagree with the average cosine and
# with I(W), which it argues measure something else. The tests below take tau below 0.5 as disagreement
# (our threshold), with the average cosine against Ethayarajh's anisotropy baseline (two estimates of
# the same mean cosine) as the control, judged by the same rule: agreement is detected where it exists.
# They count the cells of the judged views (a decoder's start-token view, not the papers' procedure);
# their interval resamples whole models (the layers of one model are not independent draws) and the
# token samples, and each is judged again on unit vectors, where no norm enters IsoScore or I(W).

# %% tags=["nbval-check-output"]
evidence["library_agreement"] = compute.library_agreement(cell_samples(cells[0]["space"], cells[0]["layer"])()[0])
evidence["rogue_shares"], evidence["rogue_resamples"] = compute.rogue_shares(
    [(cell, cell_samples(cell["space"], cell["layer"])()[0]) for cell in cells], n_resamples=n_resamples,
    random_state=random_state)
findings = claims.findings(evidence)
show_table(verdict_table(findings, ["IsoScore and", "Some pair", "The measures rank"], values=False))

# %% [markdown]
# ## What moves each measure
#
# Every measure of each token sample of each cell, before and after each change of the points.
# To compare measures with different units, each is read on one **isotropy scale**: mapped to [0, 1]
# with 1 at its isotropic end (1 − |cos| for a mean cosine, 1 − share for a variance share, LID over
# the dimension, 1 − silhouette). A change of +0.10 is then a tenth of the way towards isotropy for
# every measure. A cell's change is the mean over its samples; the median over cells is shown with a
# bootstrap interval over cells; a change whose whole interval lies within ±0.01 leaves the measure
# *unchanged*. I(W), which moves by orders of magnitude, has its median change in log10 in the table's
# `raw_median`.
#
# **I(W) of whitened points is not defined**, and is left blank. Its directions are the eigenvectors
# of the points' scatter matrix; after whitening every eigenvalue is the same, so every basis is an
# eigenbasis and I(W) takes the value of whichever one the eigensolver returns. Measured anyway on the
# quick profile, it moved by up to 0.18 between AVX-512 and baseline x86-64 kernels; in minilm's
# layer 5, by 0.056 where the cell's three token samples agreed to 0.001. So I(W) is only computed
# where the non-zero eigenvalues are distinct (`Spectrum.directions_determined`); a check below
# confirms that this leaves out the whitened samples and no other.

# %%
sensitivity = tables.sensitivity_table(by_replicate, changed, n_resamples=n_resamples, random_state=random_state)
# A median may move by half its own interval over cells, on the isotropy scale and in the measure's units.
save_table(sensitivity, output_dir, "sensitivity", tolerance={name: interval("low", "high") for name in ("median", "low", "high")}
           | {name: interval("raw_low", "raw_high") for name in ("raw_median", "raw_low", "raw_high")})
fig = figures.sensitivity_figure(sensitivity)
save_figure(fig, output_dir, "fig_sensitivity")
plt.show()

# %% [markdown]
# **The literature** (Rudman et al. 2022): the average cosine depends on the mean vector and I(W) on the
# scale, while IsoScore is invariant to both; and, the reverse, IsoScore reads the spread of the points
# norms included, to which a cosine is blind. These are properties of the measures' definitions, true
# whatever the points: checks, not tests. The sizes of the moves are shown, per model.

# %% tags=["nbval-check-output"]
show_table(verdict_table(findings, ["IsoScore and the average cosine are unchanged", "The average cosine, I(W)",
                                    "Whitening gives", "Every cell is measured"], values=False))

# %% [markdown]
# ## Rogue dimensions
#
# Timkey & van Schijndel (2021) decompose the cosine by coordinate: the average cosine is the sum over
# coordinates of each one's part, and in the anisotropic layers of transformers one to three of them
# carry most of it. Here, per cell: the share of the average cosine carried by the 3 coordinates that
# contribute most (interval over windows), and as the **control** the same share after a random rotation
# of the same points, which keeps every cosine and so every measure of angles, but no axis is special.
# Standardising each coordinate removes the average cosine; its control is global centring alone, judged
# by the same rule: where centring removes it too, the data cannot tell the rescaling of each coordinate
# from the centring.
# The right panel: the average cosine before and after centring, standardisation and removing the top
# 3 coordinates by variance.

# %%
rogue = tables.rogue_table(evidence["rogue_shares"], evidence["rogue_resamples"])
save_table(rogue, output_dir, "rogue", tolerance={name: interval("top_share_low", "top_share_high")
                                                 for name in ("top_share", "top_share_low", "top_share_high")})
fig = figures.rogue_figure(rogue, by_replicate, changed, spaces=spaces, static_baseline=static_baseline,
                           anisotropic_cosine=anisotropic_cosine)
save_figure(fig, output_dir, "fig_rogue")
plt.show()

# %% tags=["nbval-check-output"]
show_text(verdicts(findings, ["3 rogue coordinates", "Standardisation removes"], values=False))

# %% [markdown]
# ## Results against the literature
#
# `RESULTS.md` in the output folder lists each claim beside this run's number, marked *reproduced*,
# *indistinguishable* (its control passes the same rule), *mixed*, *borderline*, *not reproduced* or *not
# comparable* by the rule on its line (declared in
# `isolib.studies.every_measure.claims`, judged by `isolib.findings`). Claims about one space are judged per
# model, a decoder in its start-token view with the papers' procedure beside it; claims about the
# measures' agreement over all cells. Every threshold is ours: neither paper states one.

# %% tags=["nbval-check-output"]
elapsed_minutes = (time.perf_counter() - started) / 60
peak_gib = peak_memory_gib()
evidence["run"] |= {"wall_minutes": elapsed_minutes, "measuring_minutes": measuring_minutes, "peak_gib": peak_gib}
save_evidence(output_dir, evidence)
record = judge(output_dir, claims.record)
print(count_line(record.findings))

# %%
show_table(findings_table(record.findings).drop(columns="rule"))

# %% [markdown]
# ## A reader's answer: which measure for which question
#
# Generated from this run's tables, not written by hand: the strongest disagreements with the change
# that separates the two measures most, then, question by question, the measures whose behaviour under
# the controlled changes fits it.

# %%
disagreements = guide.strongest_disagreements(agreement, sensitivity)
show_table(disagreements.assign(measure=disagreements.measure.map(LABELS), other=disagreements.other.map(LABELS)),
           digits=2)

# %%
display(Markdown("\n".join(guide.reader_guide(sensitivity, agreement))))

# %%
print("Kendall tau over the cells (oriented to isotropy):")
print(matrix.rename(index=LABELS, columns=LABELS).round(2).to_string())
print(f"\nWall time {elapsed_minutes:.1f} min ({measuring_minutes:.1f} min measuring), peak memory {peak_gib:.1f} GiB")

# %% [markdown]
# ## Exercises
#
# For a class: each exercise is a question, an answer cell and a locked test cell whose asserts check the
# answer (nbgrader's autograded tests). Write your answer where the answer cell says `# YOUR CODE HERE`,
# then run the test cell below it; teachers release these copies with `make student` (see `TEACHING.md`).

# %% [markdown]
# **Exercise 1.** Which measures does the number of points move? From `sensitivity`, list the measures whose
# direction under the change `fewer_points` is not "unchanged", with their median change. Answer with the
# table `moved`: those rows of `sensitivity`, with at least the columns `measure` and `median`.

# %% nbgrader={"grade": false, "grade_id": "exercise_1", "locked": false, "schema_version": 3, "solution": true} tags=["nbval-check-output"]
### BEGIN SOLUTION
moved = sensitivity[(sensitivity.change == "fewer_points") & (sensitivity.direction != "unchanged")]
print(", ".join(sorted(LABELS[name] for name in moved.measure)))
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "exercise_1_test", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Exercise 1: the measures that fewer points move, with their median change.
assert {"measure", "median"} <= set(moved.columns), "moved needs the columns measure and median"
### BEGIN HIDDEN TESTS
expected = sensitivity[(sensitivity.change == "fewer_points") & (sensitivity.direction != "unchanged")]
assert sorted(moved.measure) == sorted(expected.measure), "the measures whose direction is not 'unchanged'"
matched = expected.merge(moved, on="measure", suffixes=("", "_answer"))
assert np.allclose(matched["median"], matched["median_answer"], equal_nan=True), "the median change of each"
### END HIDDEN TESTS

# %% [markdown]
# **Exercise 2.** The average cosine ignores the norms of the vectors; IsoScore does not. Take the first sample of
# the first cell, scale each vector by a random factor between 1 and 10, and compute both measures before and after
# (`isolib.metrics.average_cosine` and `isoscore`). Answer with the table `rescaling`: rows `as they are` and
# `rescaled`, columns `average cosine` and `IsoScore`.

# %% nbgrader={"grade": false, "grade_id": "exercise_2", "locked": false, "schema_version": 3, "solution": true} tags=["nbval-check-output"]
from isolib.metrics import average_cosine, isoscore

### BEGIN SOLUTION
points = cell_samples(cells[0]["space"], cells[0]["layer"])()[0].points
factors = np.random.default_rng(random_state).uniform(1, 10, size=(len(points), 1))
clouds = {"as they are": points, "rescaled": points * factors}
rescaling = pd.DataFrame({"average cosine": [average_cosine(cloud) for cloud in clouds.values()],
                          "IsoScore": [isoscore(cloud) for cloud in clouds.values()]}, index=list(clouds))
for name, scores in rescaling.iterrows():
    print(f"{name:>11}: average cosine {scores['average cosine']:.3f}, IsoScore {scores['IsoScore']:.2f}")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "exercise_2_test", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Exercise 2: the average cosine and IsoScore of the first sample, as it is and rescaled.
assert list(rescaling.index) == ["as they are", "rescaled"], "rows 'as they are' and 'rescaled', in order"
assert {"average cosine", "IsoScore"} <= set(rescaling.columns), "rescaling needs the columns average cosine and IsoScore"
### BEGIN HIDDEN TESTS
first_sample = cell_samples(cells[0]["space"], cells[0]["layer"])()[0].points
assert np.isclose(rescaling.loc["as they are", "average cosine"], average_cosine(first_sample))
assert np.isclose(rescaling.loc["as they are", "IsoScore"], isoscore(first_sample))
assert np.isclose(rescaling.loc["rescaled", "average cosine"], rescaling.loc["as they are", "average cosine"]), \
    "the average cosine ignores the norms"
assert not np.isclose(rescaling.loc["rescaled", "IsoScore"], rescaling.loc["as they are", "IsoScore"]), \
    "IsoScore does not ignore them"
### END HIDDEN TESTS

# %% [markdown]
# **Exercise 3.** Rudman et al. (2022) expect IsoScore to rank embedding spaces differently from the average cosine
# and from I(W). Read the agreement heatmap (Figure `fig_agreement`, above): in IsoScore's row, which measure has the
# lowest tau, that is, ranks the cells least like IsoScore? Is it one of the two that Rudman et al. name? Answer with
# `least_like_isoscore`: the measure's name as the figure writes it (e.g. `"average cosine"`).

# %% nbgrader={"grade": false, "grade_id": "exercise_3", "locked": false, "schema_version": 3, "solution": true} tags=["nbval-check-output"]
### BEGIN SOLUTION
# Read off the figure; here from the table behind it, so that the answer holds for every profile.
least_like_isoscore = LABELS[matrix.loc["isoscore"].drop("isoscore").idxmin()]
print(f"ranks the cells least like IsoScore: {least_like_isoscore}")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "exercise_3_test", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Exercise 3: the measure of lowest tau in IsoScore's row of the agreement heatmap.
assert least_like_isoscore in [LABELS[name] for name in MEASURE_NAMES], "a measure's name as the figure writes it"
### BEGIN HIDDEN TESTS
isoscore_row = matrix.loc["isoscore"].drop("isoscore").round(2)  # the figure shows two decimals: a tie there is a tie
assert least_like_isoscore in {LABELS[name] for name in isoscore_row.index[isoscore_row == isoscore_row.min()]}, \
    "the lowest tau in IsoScore's row"
### END HIDDEN TESTS

# %% [markdown]
# **Exercise 4.** IsoScore by hand. Rudman et al. (2022) read isotropy off the variances of the points along their
# principal axes (not along the coordinates): with Σ the n variances (n the dimension, `ddof=1`), normalise
# Σ̂ = √n Σ / ‖Σ‖, take the defect δ = ‖Σ̂ − 1‖ / √(2(n − √n)), then k = (n − δ²(n − √n))² / n and
# IsoScore = (k − 1) / (n − 1). Compute it with numpy alone on the first token sample of the last layer of the first
# cell's space (`cell_samples(cells[0]["space"], layer)()[0].points`), and look up the value the notebook measured
# on the same points (`by_replicate`, replicate 0). Answer with `isoscore_by_hand` and `isoscore_in_table`.

# %% nbgrader={"grade": false, "grade_id": "exercise_4", "locked": false, "schema_version": 3, "solution": true} tags=["nbval-check-output"]
### BEGIN SOLUTION
space = cells[0]["space"]
layer = max(cell["layer"] for cell in cells if cell["space"] == space)
points = cell_samples(space, layer)()[0].points
variances = np.linalg.eigvalsh(np.cov(points, rowvar=False))  # along the principal axes
n = len(variances)
defect = np.linalg.norm(np.sqrt(n) * variances / np.linalg.norm(variances) - 1) / np.sqrt(2 * (n - np.sqrt(n)))
isoscore_by_hand = ((n - defect**2 * (n - np.sqrt(n))) ** 2 / n - 1) / (n - 1)
measured = by_replicate[(by_replicate.space == space) & (by_replicate.layer == layer) & (by_replicate.replicate == 0)]
isoscore_in_table = measured.isoscore.item()
print(f"{space}, layer {layer}: IsoScore by hand {isoscore_by_hand:.3f}, in by_replicate {isoscore_in_table:.3f}")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "exercise_4_test", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Exercise 4: IsoScore by hand, and the notebook's value on the same points.
assert 0 <= isoscore_by_hand <= 1 and 0 <= isoscore_in_table <= 1, "an IsoScore lies between 0 and 1"
### BEGIN HIDDEN TESTS
last_layer = max(cell["layer"] for cell in cells if cell["space"] == cells[0]["space"])
in_table = by_replicate.isoscore[(by_replicate.space == cells[0]["space"]) & (by_replicate.layer == last_layer)
                                 & (by_replicate.replicate == 0)].item()
assert np.isclose(isoscore_in_table, in_table, rtol=1e-9), "by_replicate's IsoScore of the same cell, replicate 0"
assert np.isclose(isoscore_by_hand, in_table, rtol=1e-6), \
    "IsoScore by hand, from the variances along the principal axes"
### END HIDDEN TESTS

# %% [markdown]
# **Exercise 5.** Apply a control. Timkey & van Schijndel (2021) remove the average cosine by standardising each
# coordinate; the test above judges this against global centring alone, by the same rule: |average cosine| below
# 0.05. Do it yourself on the most anisotropic layer of the first cell's space (its highest average cosine in
# `measures`), first token sample: the average cosine after `isolib.transforms.standardise` and after
# `isolib.transforms.centre`, each judged by the rule. Can the data tell the claim from its control (the
# standardised points pass and the centred ones fail)? Answer with the table `control_check` (rows `standardised`
# and `centred only`, columns `average cosine` and `below 0.05`) and `told_apart` (True or False).

# %% nbgrader={"grade": false, "grade_id": "exercise_5", "locked": false, "schema_version": 3, "solution": true} tags=["nbval-check-output"]
from isolib.transforms import centre, standardise

### BEGIN SOLUTION
own = measures[measures.space == cells[0]["space"]]
layer = int(own.loc[own.average_cosine.idxmax(), "layer"])
points = cell_samples(cells[0]["space"], layer)()[0].points
control_check = pd.DataFrame({"average cosine": [average_cosine(standardise(points)), average_cosine(centre(points))]},
                             index=["standardised", "centred only"])
control_check["below 0.05"] = control_check["average cosine"].abs() < 0.05
passes = control_check["below 0.05"]
told_apart = bool(passes["standardised"] and not passes["centred only"])
print(f"layer {layer}: " + "; ".join(f"{name} {row['average cosine']:.3f}" for name, row in control_check.iterrows())
      + f"; told apart: {told_apart}")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "exercise_5_test", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Exercise 5: the claim's rule on standardised and on centred points, and whether it tells them apart.
assert list(control_check.index) == ["standardised", "centred only"], "rows 'standardised' and 'centred only', in order"
assert {"average cosine", "below 0.05"} <= set(control_check.columns), "columns 'average cosine' and 'below 0.05'"
assert told_apart in (True, False)
### BEGIN HIDDEN TESTS
first_space = measures[measures.space == cells[0]["space"]]
most_anisotropic = first_space.loc[first_space.average_cosine.idxmax(), "layer"]
after = changed[(changed.space == cells[0]["space"]) & (changed.layer == most_anisotropic)
                & (changed.replicate == 0)].set_index("change").average_cosine
assert np.allclose(control_check["average cosine"].to_numpy(), after[["standardise", "centre"]].to_numpy(),
                   rtol=1e-6, atol=1e-9), \
    "the average cosine of the most anisotropic layer's first sample, standardised and centred"
rule = after[["standardise", "centre"]].abs() < 0.05
assert list(control_check["below 0.05"]) == list(rule), "the rule: |average cosine| below 0.05"
assert told_apart == bool(rule["standardise"] and not rule["centre"]), "told apart: the claim passes, its control fails"
### END HIDDEN TESTS

# %% [markdown]
# **Exercise 6.** Change a parameter and judge again. Which layers count as anisotropic is our choice: those whose
# average cosine is at least `anisotropic_cosine` (0.1; Timkey & van Schijndel give no number). Judge the study's
# tests again with 0.2, with its own function `claims.assess_findings(by_replicate, changed, rogue,
# anisotropic_cosine=0.2)`, which returns findings as `findings` holds this run's (`.finding`, `.model`, `.kind`,
# `.status`), and compare. Which statuses change? Does it agree with the range of thresholds over which this run's
# line of each test says its status holds (in the results table above)? Answer with the table `rejudged`: one row
# per test judged on one space (its `model` is one of `by_replicate.space`), columns `claim`, `model`, `status` (this
# run's) and `status at 0.2`.

# %% nbgrader={"grade": false, "grade_id": "exercise_6", "locked": false, "schema_version": 3, "solution": true} tags=["nbval-check-output"]
### BEGIN SOLUTION
again = {(finding.finding, finding.model): finding.status for finding in
         claims.assess_findings(by_replicate, changed, rogue, anisotropic_cosine=0.2, n_resamples=n_resamples)}
rejudged = pd.DataFrame([{"claim": finding.finding, "model": finding.model, "status": finding.status,
                          "status at 0.2": again[finding.finding, finding.model]} for finding in findings
                         if finding.kind == "test" and finding.model in set(by_replicate.space)])
print(rejudged.to_string(index=False))
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "exercise_6_test", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Exercise 6: the tests on one space, judged with anisotropic layers from an average cosine of 0.1 and of 0.2.
assert {"claim", "model", "status", "status at 0.2"} <= set(rejudged.columns), \
    "rejudged needs the columns claim, model, status and status at 0.2"
assert set(rejudged.model) <= set(by_replicate.space), "a test judged on one space"
### BEGIN HIDDEN TESTS
# n_resamples enters only the tests over every cell (the agreement of the measures), which are not asked for here.
judged = {threshold: {(finding.finding, finding.model): finding.status
                      for finding in claims.assess_findings(by_replicate, changed, rogue, anisotropic_cosine=threshold,
                                                            n_resamples=10)
                      if finding.kind == "test" and finding.model in set(by_replicate.space)}
          for threshold in (anisotropic_cosine, 0.2)}
answered = rejudged.set_index(["claim", "model"])
assert sorted(answered.index) == sorted(judged[0.2]), "one row per test judged on one space"
assert answered["status"].to_dict() == judged[anisotropic_cosine], "this run's statuses"
assert answered["status at 0.2"].to_dict() == judged[0.2], "the statuses with anisotropic layers from 0.2"
### END HIDDEN TESTS
