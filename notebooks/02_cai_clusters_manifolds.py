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
# > **This is the quick run** (`make quick`): the defaults of the parameters cell, with fewer models and subsets of the data, so its numbers and verdicts can differ from the full run's (`make figures`: all data, every offline model): see [its executed notebook](../figures/02_cai_clusters_manifolds/02_cai_clusters_manifolds.ipynb) and [its RESULTS.md](../figures/02_cai_clusters_manifolds/RESULTS.md).

# %% [markdown]
# # Isotropy in the contextual embedding space: clusters and manifolds
#
# Xingyu Cai, Jiaji Huang, Yuchen Bian and Kenneth Church (2021), *Isotropy in the Contextual
# Embedding Space: Clusters and Manifolds*, ICLR 2021 (read here from the authors' slides).
#
# Contextual embeddings look strongly anisotropic: any two token vectors have a high cosine. The
# paper argues that this is a *global* view, misled by a few isolated clusters: inside each cluster,
# once its mean is subtracted, the space is nearly isotropic. It also shows a low-dimensional
# "Swiss roll" manifold in GPT and GPT-2 and measures the local intrinsic dimension (LID) of the
# contextual spaces against static embeddings. This notebook regenerates:
#
# * **Figure `fig_initial_look`** — S_inter and S_intra per layer (the paper's "initial look at anisotropy");
# * **Figure `fig_clusters`** — 2-D PCA views of a layer coloured by k-means cluster (the "isolated clusters");
# * **Figure `fig_cluster_isotropy`** — the chosen k, its silhouette, and S_inter / S_intra inside the clusters after per-cluster centring;
# * **Figure `fig_swiss_roll`** — 2-D and 3-D PCA views of layer 3 (the paper's layer 2) coloured by token frequency;
# * **Figure `fig_symbols`** — symbol tokens and word tokens in the same view;
# * **Figure `fig_lid`** — LID per layer, Euclidean and cosine, true and squared distances (the paper's Figure 9);
# * **Table 3 `table3`** and **Figure `fig_lid_vs_n`** — LID of the contextual spaces against static GloVe vectors at matched numbers of points, and as a function of the number of points;
# * **Tables `per_layer`, `silhouettes`, `stability`** — every per-layer number, the silhouette of every k, the same numbers at a smaller budget; and **`RESULTS.md`** — each claim of the paper beside ours.
#   Every status, mark and measure is defined in [the glossary](../docs/glossary.md).
#
# **Layer indexing.** Ours, as everywhere in this project: layer 0 is the input embedding layer,
# layer *L* the output of block *L*. The authors' code analysed `hidden_states[1:]`, so **their
# layer *L* is our layer *L* + 1** and they never analysed our layer 0. Figures say "L7 (paper 6)".
#
# **Data.** PTB (Mikolov's preprocessing) and WikiText-2 (tokens), train split, as running text:
# each line is tokenised, the pieces are concatenated into one stream and cut into non-overlapping
# windows of 512 tokens (special tokens included), as the authors did; a window never splits a
# word, and the short last window is dropped. Windows are drawn at random up to a token budget per
# corpus (the authors used all of PTB train, about 1 M tokens; two CPU cores cannot). Each token
# keeps its position in its window. **Symbol tokens** are pieces with no letter and no digit (`.`,
# `,`, `$`, `<`); statistics count word tokens only, unless `keep_symbols` keeps special and
# symbol tokens as the authors' code did. The exact rules are in `isolib.studies.cai_clusters_manifolds`
# (what is computed in its `compute`, how each claim is judged in its `claims`).
#
# **Models.** The paper's BERT, DistilBERT, GPT (openai-gpt) and GPT-2 come from the Hugging Face
# Hub (profile `paper`); ELMo is not in transformers and is not run. Offline, `minilm`
# (all-MiniLM-L6-v2, a 6-block BERT distilled from a larger one) stands in for DistilBERT, `mpnet`
# (all-mpnet-base-v2, 12 blocks) for BERT, and the decoder `smollm2` (SmolLM2-135M-Instruct, 30
# blocks, from a Q4_1 GGUF dequantised to float32) for GPT-2 and GPT. Both encoders are
# sentence-transformers, trained contrastively for sentence similarity, not masked-LM checkpoints
# like BERT: a "not reproduced" on them says how such encoders differ from BERT. A decoder gets no
# start token, so the first token of every window is an attention sink with a norm tens of times the
# others. The decoder is **judged with a start token before every window** (`smollm2 (start token)`:
# the start token absorbs the sink and is left out as a special token); the paper's procedure
# (`smollm2`) is shown beside it and not counted, and a claim that holds only with the sink is marked so.
#
# **Placeholders.** PTB writes every rare word as `<unk>` and every number as `N`; MiniLM reads them
# as the pieces `<`, `un`, `##k`, `>` and `n`. They are not language, and at the middle layer they form
# clusters of their own, so statistics leave them out by default (the count is printed);
# `keep_placeholders` keeps them, as the authors' code did (it counted every piece as a type).

# %% tags=["parameters"]
profile: str = "quick"  # which profile produced this run: quick or student or full or paper
output_dir: str = "../build/quick/figures/02_cai_clusters_manifolds"  # folder for figures and tables and RESULTS.md
models: list = ["minilm"]  # offline short names such as minilm or mpnet or smollm2 or Hub ids such as gpt2
corpora: list = ["ptb"]  # running text: ptb and or wikitext2 (train split)
window_length: int = 512  # tokens per window including special tokens as the authors fed them
token_budget: int = 8192  # about this many tokens per corpus and model in windows drawn at random; 0 takes every window
layers: dict = {}  # layers to extract per model as a list of layer numbers; a model not listed gets every layer
keep_symbols: bool = False  # True counts special and symbol tokens as types as the authors' code did
decoder_views: list = ["start_token"]  # views of a decoder's first position besides the paper's keep: start_token (judged) or drop
keep_placeholders: bool = False  # True counts the pieces of PTB's <unk> and N as types as the authors' code did
symbols_kept_view: bool = False  # True also analyses each encoder with special and symbol tokens kept beside its main view
k_max: int = 15  # k-means for every k from 2 to k_max chosen by silhouette; one cluster if the best silhouette is below 0.1
n_init: int = 3  # k-means restarts per k each scored by silhouette; the authors had 10
min_cluster_share: float = 0.01  # a chosen cluster with fewer tokens than this share is an outlier group not a cluster
kmeans_fit_size: int = 5000  # k-means fitted on this many random points then every point assigned; 0 fits all as the authors
silhouette_sample: int = 5000  # points scoring each k by silhouette; the authors had 20000
max_instances: int = 1000  # instances per type drawn for S_intra as the authors
lid_k: int = 100  # nearest neighbours of the LID estimate as the authors
lid_queries: int = 2000  # random query points whose LID is averaged; 0 uses every point as the authors
lid_n_points: list = [1000, 2000, 5000, 10000, 20000, 50000]  # numbers of points of the LID-against-n curve
static_baseline: str = "glove-50d"  # static word vectors for the LID comparison
n_plot_points: int = 5000  # points drawn for each scatter plot
stability_share: float = 0.5  # the stability table repeats the first corpus with this share of its windows
storage_dtype: str = "float16"  # cache dtype of the embeddings: float32 or float16
device: str = "cpu"  # torch device: cpu or cuda
random_state: int = 0  # seed of the window draw and of every sample and k-means initialisation
n_jobs: int = -1  # worker processes sharing a model's layers; -1 uses every core, 1 runs in the kernel

# %%
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from isolib.datasets import load_corpus
from isolib.embed import embed_views, first_position_norm_ratio
from isolib.evidence import judge, save_evidence
from isolib.findings import count_line, findings_table, verdict_table, verdicts
from isolib.models import load_model, load_static
from isolib.plotting import panel_grid, replicates, save_figure, save_table, set_style, show_table, show_text
from isolib.project import check_output_dir
from isolib.runner import peak_memory_gib
from isolib.studies.cai_clusters_manifolds import claims, compute, figures
from isolib.views import View
from isolib.windows import running_text_windows

started = time.perf_counter()
set_style()
check_output_dir(profile, output_dir)
geometry_options = dict(k_range=range(2, k_max + 1), n_init=n_init, min_cluster_share=min_cluster_share, kmeans_fit_size=kmeans_fit_size or None,
                        silhouette_sample=silhouette_sample or None, max_instances=max_instances or None,
                        lid_k=lid_k, lid_queries=lid_queries or None)

# %% [markdown]
# ## Windows and embeddings
#
# Each model cuts the text with its own tokenizer, so each gets its own windows (the same windows
# of the stream, drawn with the same seed). `embed_views` runs the model once per corpus and caches
# the requested layers; `token_types` keeps the analysed tokens and their types. For a decoder the
# *first-position norm ratio* (mean norm of each window's first token over that of the others) shows the sink.

# %% tags=["nbval-check-output"]
embeddings, analysed, windows = {}, {}, {}
for name in models:
    loaded = load_model(name, device=device)
    for corpus in corpora:
        lines = load_corpus(corpus, split="train").text
        cut = running_text_windows(lines, loaded.tokenizer, window_length=window_length,
                                   token_budget=token_budget or None, random_state=random_state)
        windows[name, corpus] = cut
        views = embed_views(loaded, cut.text.tolist(), views=decoder_views, layers=layers.get(name),
                            max_length=window_length, batch_size=8, dtype=storage_dtype, device=device)
        for label, embedding in views.items():
            view = View.parse(label)
            embeddings[view, corpus] = embedding
            analysed[view, corpus] = compute.token_types(embedding.tokens, keep_symbols=keep_symbols,
                                                         keep_placeholders=keep_placeholders)
            # The authors' setting, beside, for an encoder only ([CLS] first): a decoder's start token is special,
            # and keeping it would put the attention sink back into its start-token view.
            if symbols_kept_view and not views[name].starts_with_content:
                with_symbols = View(view.model, view.first_position, symbols_kept=True)
                embeddings[with_symbols, corpus] = embedding
                analysed[with_symbols, corpus] = compute.token_types(embedding.tokens, keep_symbols=True,
                                                                     keep_placeholders=keep_placeholders)
        print(f"{name}, {corpus}: {len(cut)} of {cut.attrs['n_windows']} windows ({cut.n_pieces.sum()} tokens of "
              f"{cut.attrs['n_pieces']}); layers {list(embedding.layers)} of {embedding.n_layers}")
    del loaded
# The middle layer of each model (or its nearest extracted one) serves the pictures, the LID curve and the stability check.
middle = {key: min(embedding.layers, key=lambda layer: abs(layer - compute.middle_layer(embedding.n_layers)))
          for key, embedding in embeddings.items()}
for (view, corpus), kept in analysed.items():
    print(f"{view}, {corpus}: {len(kept.rows)} analysed tokens of {len(np.unique(kept.types))} types "
          f"({len(kept.symbol_rows)} symbol tokens {'kept' if kept.is_symbol.any() else 'left out'}, "
          f"{kept.n_placeholders_left_out} placeholder pieces left out)")
    if embeddings[view, corpus].starts_with_content:
        ratio = first_position_norm_ratio(embeddings[view, corpus])
        print("  first-position norm ratio: " + ", ".join(f"L{layer} {value:.1f}" for layer, value in ratio.items()))

# %% [markdown]
# ## The measures, layer by layer
#
# For every layer: **S_inter**, the mean cosine between types (one random instance per type);
# **S_intra**, the mean cosine between instances of the same type (at most 1,000 per type), averaged
# over types. **Clusters**: k-means for k = 2…`k_max`, `n_init` restarts each, the k of best silhouette
# (the run of lowest inertia, scored on `silhouette_sample` points), or k = 1 if that silhouette is
# below 0.1; every restart is scored, so k comes with its spread (`silhouette_std`,
# `restarts_agreeing`). Every chosen cluster is described (`clusters` table): a cluster below
# `min_cluster_share` of the tokens, or made mostly of window-first tokens or placeholders, is an
# **outlier group**, not a cluster that dominates the space (`n_real_clusters` counts the others);
# the claims also set apart a cluster that is mostly one token type or whose norms stand far from the
# others' (an *artefact group*). The clusters' **control** is the same selection on as many points
# drawn from one Gaussian with the layer's mean and covariance (`gaussian_n_clusters`,
# `gaussian_silhouette`): a space with the same spread and no clusters.
# Inside each cluster the cluster's mean is subtracted and S_inter / S_intra are computed again:
# `s_inter_clusters` is the authors' unweighted mean over clusters, `s_inter_clusters_weighted` the
# mean over one token per type (each type once, so a cluster weighs by the types it holds). The
# **control** is `s_inter_centred`, S_inter of the same tokens after subtracting the *global* mean.
# **LID** with k = 100 neighbours searched among all analysed tokens of the layer, averaged over
# `lid_queries` random query points: Euclidean and cosine, each on true distances and on squared
# distances (what the authors' faiss code measured: about half). `first_position_share` is the
# largest share of window-first tokens in any cluster: 1 would mean a cluster made of sinks.

# %%
# Each layer's analysis is stored as it is finished: a stopped run resumes at the next layer.
tables, clusters = compute.geometry_by_view(embeddings, analysed, random_state=random_state, n_jobs=n_jobs,
                                            resume=True, **geometry_options)
# The evidence the claims are judged on: every per-layer number, every k-means restart, every type's centring units,
# every chosen cluster's make-up.
evidence = {name: tables[name] for name in ("per_layer", "silhouettes", "units", "clusters")}
per_layer = tables["per_layer"]
save_table(per_layer, output_dir, "per_layer")
# Another CPU's kernels can send a k-means restart elsewhere: each score may move within the spread of its k's restarts.
restarts = replicates("model", "corpus", "layer", "k")
save_table(tables["silhouettes"], output_dir, "silhouettes", tolerance={"silhouette": restarts, "inertia": restarts})
save_table(tables["clusters"], output_dir, "clusters")
plotted = figures.by_model_and_view(per_layer)
# The columns a reader needs here; every column is in per_layer.csv.
show_table(per_layer[["model", "corpus", "layer", "n_tokens", "s_inter", "s_intra", "s_inter_centred", "n_clusters",
                      "silhouette", "n_real_clusters", "s_inter_clusters_weighted", "lid_cosine"]])

# %% [markdown]
# ## Figure — the initial look: S_inter and S_intra per layer

# %%
fig = figures.initial_look(plotted)
save_figure(fig, output_dir, "fig_initial_look")
plt.show()

# %% [markdown]
# **The paper** found both S_inter and S_intra high in every layer of every model: strong anisotropy.

# %% tags=["nbval-check-output"]
judged = claims.layer_findings(evidence)
show_text(verdicts(judged, ["Anisotropy in every layer"]))

# %% [markdown]
# ## Figure — isolated clusters
#
# PCA fitted on all analysed tokens of the layer, `n_plot_points` of them drawn for the picture,
# coloured by the k-means cluster chosen for that layer (one colour when k = 1: groups the eye sees
# there score below the silhouette cut of 0.1, given in the title); black crosses mark
# window-first tokens (a decoder's attention sink). The paper shows GPT-2 and BERT at their layer 6
# and DistilBERT and ELMo at their layer 1: here every model at its middle layer and the encoders
# also at layer 2 (the paper's 1). First corpus only.

# %%
first_corpus = corpora[0]
panels = []
for (view, corpus), embedding in embeddings.items():
    if corpus != first_corpus:
        continue
    wanted = ([] if embedding.starts_with_content else [2]) + [middle[view, corpus]]
    panels += [(view, layer) for layer in dict.fromkeys(wanted) if layer in embedding.layers]
draw = np.random.default_rng(random_state)
fig, axes = panel_grid(len(panels), panel_size=(4.2, 4), max_columns=4)  # rows of four stay legible
for ax, (view, layer) in zip(axes, panels):
    kept = analysed[view, first_corpus]
    coordinates, explained = compute.pca_view(embeddings[view, first_corpus].layer(layer)[kept.rows],
                                              n_components=2)
    shown = figures.sample_points(draw, len(kept.rows), n_plot_points)
    chosen = per_layer[(per_layer.model == view.label) & (per_layer.corpus == first_corpus)
                       & (per_layer.layer == layer)].iloc[0]
    # Groups can be visible at k = 1: the title says how far the best silhouette is from the cut.
    below_cut = f" (best silhouette {chosen.silhouette:.3f} < 0.1)" if chosen.n_clusters == 1 else ""
    title = f"{view}\n{compute.layer_name(layer)}: k = {int(chosen.n_clusters)}{below_cut}"
    figures.cluster_panel(ax, coordinates[shown], explained, clusters[view, first_corpus][layer][shown],
                          kept.positions[shown], title)
fig.suptitle(f"Isolated clusters: 2-D PCA views coloured by k-means cluster ({first_corpus})")
save_figure(fig, output_dir, "fig_clusters")
plt.show()

# %% [markdown]
# ## Figure — isotropy inside the clusters
#
# (a) the chosen k per layer (points: k = 1 drawn at 1); (b) its silhouette, with its spread over
# restarts (one std each way, cut at 1); (c) S_inter after per-cluster centring (each type once)
# against its control, S_inter of the same tokens after global centring (grey dashes); (d) S_intra
# inside the clusters.

# %%
fig = figures.cluster_isotropy(plotted)
save_figure(fig, output_dir, "fig_cluster_isotropy")
plt.show()

# %% [markdown]
# **The paper** found the space dominated by isolated clusters, and nearly isotropic inside them
# once each cluster's mean is subtracted (S_inter ≈ 0): the anisotropy is "a global view". The test
# of that view is its control: per-cluster centring must leave the space *more* isotropic than
# subtracting the global mean from the same tokens. Where k-means cuts one continuous cloud in two,
# centring each half leaves each half skewed along the cut, and per-cluster S_inter comes out higher.

# %% tags=["nbval-check-output"]
show_table(verdict_table(judged, ["The space is dominated", "Per-cluster centring", "Inside clusters"]))

# %% [markdown]
# ### What the clusters are
#
# Every chosen cluster of every layer: its share of the tokens, of window-first tokens and of
# placeholder pieces, its median norm over the layer's and over the other clusters', the share of its
# most frequent type and its most frequent types. Outlier groups are the small ones, the sink and the placeholders.

# %%
show_table(tables["clusters"].drop(columns=["placeholder_share"]))

# %% [markdown]
# ## Figure — the Swiss roll: layer 3 (the paper's layer 2) coloured by token frequency
#
# The paper shows GPT's and GPT-2's layer 2 as a Swiss roll in 2-D and 3-D PCA views, coloured by
# the frequency of each token's type; encoders are shown here too, for contrast. Colour: log10 of the
# type's count among the analysed tokens. No measurable proxy is claimed for the "roll": it is a picture.

# %%
roll_layer = 3
rolled = [view for (view, corpus) in embeddings if corpus == first_corpus
          and roll_layer in embeddings[view, corpus].layers]
fig = plt.figure(figsize=(9, 3.8 * len(rolled)), constrained_layout=True)
explained_3d, extremes = {}, {}
for row, view in enumerate(rolled):
    kept = analysed[view, first_corpus]
    coordinates, explained = compute.pca_view(embeddings[view, first_corpus].layer(roll_layer)[kept.rows],
                                              n_components=3)
    explained_3d[view] = explained.sum()
    shown = figures.sample_points(draw, len(kept.rows), n_plot_points)
    extremes[view] = compute.describe_extremes(coordinates, kept.types, kept.positions)
    figures.swiss_roll_row(fig, len(rolled), row, coordinates[shown], explained, np.log10(kept.frequency[shown]),
                           f"{view}, {compute.layer_name(roll_layer)}: 2-D")
fig.suptitle(f"Layer {roll_layer} (the paper's layer 2), coloured by token frequency ({first_corpus})")
save_figure(fig, output_dir, "fig_swiss_roll")
plt.show()

# %% tags=["nbval-check-output"]
decoders = [view for view in rolled if embeddings[View(view.model), first_corpus].starts_with_content]
evidence["swiss_roll"] = {view.label: f"{explained_3d[view]:.0%} of the variance of L{roll_layer} on 3 PCs; "
                                      f"{extremes[view]} (figure)" for view in decoders}
show_text("\n".join([verdicts(claims.picture_findings(evidence), ["A Swiss-roll"]),
                     *(f"{view}, L{roll_layer}: {text}" for view, text in extremes.items())]))

# %% [markdown]
# ## Figure — symbol tokens and word tokens
#
# The same middle-layer view with the symbol tokens (no letter, no digit) and the word tokens drawn
# apart, as the paper's panels "symbol tokens" and "word tokens" (whatever `keep_symbols` says, both
# are drawn here). Symbols are left out of the statistics by default.

# %%
shown_models = [view for (view, corpus) in embeddings if corpus == first_corpus]
# A symbols-kept view draws the same picture as its model's: one row per model.
drawn = [view for view in shown_models if not view.symbols_kept]
fig, axes = plt.subplots(len(drawn), 2, figsize=(9, 3.8 * len(drawn)), squeeze=False, constrained_layout=True)
rows = dict(zip(drawn, axes))
evidence["symbols"] = {}
for view in shown_models:
    embedding, kept = embeddings[view, first_corpus], analysed[view, first_corpus]
    layer = middle[view, first_corpus]
    everything = np.concatenate([kept.symbol_rows, kept.word_rows])
    coordinates, _ = compute.pca_view(embedding.layer(layer)[everything], n_components=2)
    is_symbol = np.arange(len(everything)) < len(kept.symbol_rows)
    evidence["symbols"][view.label] = compute.describe_symbols(coordinates, is_symbol, sample_size=n_plot_points,
                                                               random_state=random_state)
    if view in rows:
        figures.symbols_row(rows[view], coordinates, is_symbol, f"{view}, {compute.layer_name(layer)}",
                            draw=draw, n_points=n_plot_points)
fig.suptitle(f"Symbol and word tokens in one PCA view (grey: all tokens; {first_corpus})")
save_figure(fig, output_dir, "fig_symbols")
plt.show()

# %% tags=["nbval-check-output"]
show_text(verdicts(claims.picture_findings(evidence), ["Symbol tokens"]))

# %% [markdown]
# ## Figure 9 — local intrinsic dimension per layer
#
# Solid: true distances; dashed: squared distances, as the authors' faiss code measured (1 − cos in the
# cosine mode). The estimate on squared distances is exactly half (the log-ratios double).

# %%
fig = figures.lid_per_layer(per_layer)
save_figure(fig, output_dir, "fig_lid")
plt.show()

# %% [markdown]
# ## Table 3 — contextual against static LID, and LID against the number of points
#
# Table 3 gives one cosine LID per model; the paper does not say which layer, so ours is the mean
# over layers from L1 (the paper's layers). The static vectors (`static_baseline`; the paper: 100-d
# and 300-d GloVe, word2vec) are drawn at random to the same number of points as each contextual
# space (Table 3 compared about a million points each), and once whole. Beyond the paper: the LID of
# nested random subsets of growing size n, at each model's middle layer against the static vectors.

# %%
static = load_static(static_baseline)
dims = {(view.label, corpus): embedding.dim for (view, corpus), embedding in embeddings.items()}
contextual = compute.mean_lid(per_layer, dims)
curves = []
for (view, corpus), embedding in embeddings.items():
    if corpus == first_corpus:
        kept, layer = analysed[view, corpus], middle[view, corpus]
        curve = compute.lid_against_n(embedding.layer(layer)[kept.rows], lid_n_points, k=lid_k,
                                      queries=lid_queries or None, random_state=random_state)
        curves.append(curve.assign(model=view.label, layer=layer))
static_sizes = sorted(set(lid_n_points) | set(contextual.n) | {len(static.words)})
static_curve = compute.lid_against_n(static.matrix, static_sizes, k=lid_k, queries=lid_queries or None,
                                     random_state=random_state)
lid_curve = pd.concat(curves + [static_curve.assign(model="static", layer=0)], ignore_index=True)
table3 = compute.with_static(contextual, static_curve, name=static_baseline, dim=static.matrix.shape[1],
                             n_words=len(static.words))
evidence |= {"lid_curve": lid_curve, "table3": table3}
save_table(table3, output_dir, "table3", digits=2)
save_table(lid_curve, output_dir, "lid_vs_n", digits=2)
table3.round(2)

# %%
fig, ax = plt.subplots(figsize=(7, 4.2))
for label, group in lid_curve.groupby("model", sort=False):
    name = (f"{static_baseline} (static)" if label == "static"
            else f"{label}, {compute.layer_name(int(group.layer.iloc[0]))}")
    ax.plot(group.n, group.lid_cosine, marker="o", ls="--" if label == "static" else "-", label=name)
ax.set_xscale("log")
ax.set_xlabel("number of points n (nested random subsets)")
ax.set_ylabel("mean cosine LID (k = 100, true distances)")
ax.legend(fontsize="small")
ax.set_title("LID against the number of points")
save_figure(fig, output_dir, "fig_lid_vs_n")
plt.show()

# %% [markdown]
# **The paper** found contextual spaces of much lower LID (5.6–9.1, cosine) than static ones
# (18.0–26.1), each at about a million points. The estimate depends on the number of points (with
# k = 100 neighbours, k is 10% of the points at n = 1,000): contextual LID falls with n, static LID
# rises. So the claim is judged where the paper made it, as near a million points as this run goes:
# reproduced if the contextual LID is below the static one at the largest n and the gap does not grow
# with n (more points would not reverse the order). A caveat the paper shares: the static vectors
# have fewer dimensions (here GloVe-50d against 384–768), which bounds how high their LID can go.

# %% tags=["nbval-check-output"]
show_table(verdict_table(claims.findings(evidence), ["Contextual spaces", "Table 3"]))

# %% [markdown]
# ## Stability — the same measures on a smaller budget
#
# The first corpus again, with only the first `stability_share` of its windows, at the middle layer of
# each model: if the numbers move little, the budget is large enough for them.

# %%
stability_rows = []
for (view, corpus), embedding in embeddings.items():
    if corpus != first_corpus:
        continue
    layer = middle[view, corpus]
    n_windows = len(windows[view.model, corpus])
    for share in (stability_share, 1.0):
        kept = compute.token_types(embedding.tokens, keep_symbols=keep_symbols or view.symbols_kept,
                                   keep_placeholders=keep_placeholders, max_windows=max(1, round(share * n_windows)))
        geometry = compute.geometry_by_layer(embedding, kept, layers=[layer], random_state=random_state,
                                             resume=True, **geometry_options)
        stability_rows.append(geometry.per_layer.assign(model=view.label, windows=max(1, round(share * n_windows))))
stability = pd.concat(stability_rows, ignore_index=True)[
    ["model", "layer", "windows", "n_tokens", "s_inter", "s_intra", "n_clusters", "silhouette", "s_inter_clusters",
     "s_inter_clusters_weighted", "s_inter_centred", "lid_euclidean", "lid_cosine"]]
save_table(stability, output_dir, "stability")
stability.round(3)

# %% [markdown]
# ## Results against the paper
#
# `RESULTS.md` in the output folder lists each claim of the paper beside this run's, marked
# *reproduced*, *indistinguishable* (its control passes the same rule), *mixed*, *borderline*, *not
# reproduced* or *not comparable* by the rule on its line (declared in
# `isolib.studies.cai_clusters_manifolds.claims`, judged by `isolib.findings`). The claims read only the
# evidence stored in the output folder's `evidence/`, so `python -m isolib judge 02_cai_clusters_manifolds`
# judges them again without a model. Claims are tested per model
# and corpus on all layers from L1, one line per claim and model: the corpora combined by the one rule
# stated on the line (mixed where some reproduce it and some do not), with each corpus's numbers.
# Table 3's numbers are comparable only on the paper's own models; the pictures are described, not
# counted, and so is every row of a view the per-layer claims do not count.

# %% tags=["nbval-check-output"]
elapsed_minutes = (time.perf_counter() - started) / 60
peak_gib = peak_memory_gib()
# What the page's notes say of this run.
evidence["run"] = dict(
    profile=profile, models=models, corpora=corpora, window_length=window_length, token_budget=token_budget,
    keep_symbols=keep_symbols, symbols_kept_view=symbols_kept_view, keep_placeholders=keep_placeholders, k_max=k_max,
    n_init=n_init, kmeans_fit_size=kmeans_fit_size, silhouette_sample=silhouette_sample,
    min_cluster_share=min_cluster_share, lid_k=lid_k, lid_queries=lid_queries, decoder_views=decoder_views,
    static_baseline=static_baseline, wall_minutes=elapsed_minutes, peak_gib=peak_gib)
save_evidence(output_dir, evidence)
record = judge(output_dir, claims.record)  # results.json and RESULTS.md, judged from the stored evidence
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
# **Exercise 1.** Which layers hold clusters? List, per model and corpus, the layers where the silhouette chose more
# than one cluster (`per_layer.n_clusters`), with that silhouette. Answer with the table `clustered`: those rows
# of `per_layer`, with at least the columns `model`, `corpus`, `layer` and `silhouette`.

# %% nbgrader={"grade": false, "grade_id": "exercise_1", "locked": false, "schema_version": 3, "solution": true} tags=["nbval-check-output"]
### BEGIN SOLUTION
clustered = per_layer[per_layer.n_clusters > 1][["model", "corpus", "layer", "n_clusters", "n_real_clusters", "silhouette"]]
clustered.round(3) if len(clustered) else "No layer has more than one cluster."
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "exercise_1_test", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Exercise 1: the layers with more than one cluster, and their silhouette.
assert {"model", "corpus", "layer", "silhouette"} <= set(clustered.columns), "clustered needs model, corpus, layer, silhouette"
### BEGIN HIDDEN TESTS
expected = per_layer[per_layer.n_clusters > 1]
matched = expected.merge(clustered, on=["model", "corpus", "layer"], suffixes=("", "_answer"))
assert len(clustered) == len(expected) == len(matched), "one row per layer with more than one cluster"
assert np.allclose(matched.silhouette, matched.silhouette_answer, equal_nan=True), "the silhouette of each layer"
### END HIDDEN TESTS

# %% [markdown]
# **Exercise 2.** How much isotropy does centring each cluster restore? Per model, compare the mean over layers of
# S_inter before (`s_inter`), after global centring (`s_inter_centred`) and after per-cluster centring
# (`s_inter_clusters_weighted`). Answer with the table `centring_effect`: one row per model, one column for each.

# %% nbgrader={"grade": false, "grade_id": "exercise_2", "locked": false, "schema_version": 3, "solution": true} tags=["nbval-check-output"]
### BEGIN SOLUTION
centring_effect = per_layer.groupby("model", sort=False)[["s_inter", "s_inter_centred", "s_inter_clusters_weighted"]].mean()
centring_effect.round(3)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "exercise_2_test", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Exercise 2: the mean S_inter per model, before and after each centring.
s_inter_columns = ["s_inter", "s_inter_centred", "s_inter_clusters_weighted"]
assert set(s_inter_columns) <= set(centring_effect.columns), f"centring_effect needs the columns {s_inter_columns}"
assert sorted(centring_effect.index) == sorted(per_layer.model.unique()), "one row per model"
### BEGIN HIDDEN TESTS
expected = per_layer.groupby("model")[s_inter_columns].mean()
assert np.allclose(centring_effect.loc[expected.index, s_inter_columns], expected, equal_nan=True)
### END HIDDEN TESTS

# %% [markdown]
# **Exercise 3.** Read the figure *LID against the number of points*. Table 3's claim is that contextual spaces
# have a lower LID than static ones; this run judges it at the largest number of points n, the paper at about a
# million. Is the first model's curve (`models[0]`) above or below the static vectors' (dashed) at the smallest n
# of its curve, and at the largest? Answer with `lid_order`, a pair of labels `("above" or "below", "above" or
# "below")`: at the smallest n, then at the largest. Check your reading in the table behind the figure,
# `lid_curve` (one row per model and n; the static vectors are the model `"static"`), and think about what the
# verdict would have been at a thousand points.

# %% nbgrader={"grade": false, "grade_id": "exercise_3", "locked": false, "schema_version": 3, "solution": true} tags=["nbval-check-output"]
### BEGIN SOLUTION
curve = (lid_curve[lid_curve.model == models[0]]
         .merge(lid_curve[lid_curve.model == "static"], on="n", suffixes=("", "_static")).sort_values("n"))
order = np.where(curve.lid_cosine < curve.lid_cosine_static, "below", "above")
lid_order = (str(order[0]), str(order[-1]))
lid_order
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "exercise_3_test", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Exercise 3: the first model's LID against the static vectors' at the smallest and at the largest n.
assert len(lid_order) == 2 and set(lid_order) <= {"above", "below"}, 'lid_order holds two labels, "above" or "below"'
### BEGIN HIDDEN TESTS
ours, static_lid = (lid_curve[lid_curve.model == name].set_index("n").lid_cosine for name in (models[0], "static"))
shared = sorted(set(ours.index) & set(static_lid.index))
expected = tuple("below" if ours[n] < static_lid[n] else "above" for n in (shared[0], shared[-1]))
assert tuple(lid_order) == expected, "compare the two curves at the first and at the last n of the first model's"
### END HIDDEN TESTS

# %% [markdown]
# **Exercise 4.** Change a threshold and re-judge a claim. The anisotropy claim is judged by the rule "S_inter above
# 0.1 and S_intra above S_inter in every layer from L1"; the 0.1 is ours (`claims.ANISOTROPIC_S_INTER`), the
# paper gives no number. Re-judge the rule at 0.1 and at 0.05 for every model and corpus, with the study's own rules
# `threshold` and `all_of` from `isolib.findings` (a rule's verdict says whether it `passed`). Answer with the table
# `anisotropy_cuts`: one row per model and corpus, columns `model`, `corpus`, `at 0.1` and `at 0.05` (True where the
# rule passes). Where does the verdict change, and which layer decides it?

# %% nbgrader={"grade": false, "grade_id": "exercise_4", "locked": false, "schema_version": 3, "solution": true} tags=["nbval-check-output"]
### BEGIN SOLUTION
from isolib.findings import all_of, threshold

upper = per_layer[per_layer.layer > 0]
anisotropy_cuts = pd.DataFrame([
    {"model": model, "corpus": corpus,
     **{f"at {cut}": all_of(threshold(layers.s_inter, above=cut),
                            threshold(layers.s_intra - layers.s_inter, above=0)).passed for cut in (0.1, 0.05)}}
    for (model, corpus), layers in upper.groupby(["model", "corpus"], sort=False)])
anisotropy_cuts
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "exercise_4_test", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Exercise 4: the anisotropy rule at two thresholds, per model and corpus.
assert {"model", "corpus", "at 0.1", "at 0.05"} <= set(anisotropy_cuts.columns), \
    "anisotropy_cuts needs the columns model, corpus, at 0.1, at 0.05"
assert len(anisotropy_cuts) == len(per_layer.groupby(["model", "corpus"])), "one row per model and corpus"
### BEGIN HIDDEN TESTS
for (model, corpus), layers in per_layer[per_layer.layer > 0].groupby(["model", "corpus"]):
    answer = anisotropy_cuts[(anisotropy_cuts.model == model) & (anisotropy_cuts.corpus == corpus)].iloc[0]
    for cut in (0.1, 0.05):
        expected = bool((layers.s_inter > cut).all() and (layers.s_intra > layers.s_inter).all())
        assert bool(answer[f"at {cut}"]) == expected, f"{model}, {corpus} at {cut}"
### END HIDDEN TESTS

# %% [markdown]
# **Exercise 5.** Apply a control. The claim "inside clusters the space is nearly isotropic" is judged by the rule
# "|S_inter| after per-cluster centring (`s_inter_clusters_weighted`) below 0.05 in every layer from L1" (here without
# its interval); its control is the same rule on S_inter after subtracting the layer's global mean (`s_inter_centred`). Per model and corpus,
# compute the value the rule judges (the largest |S_inter| over the layers from L1) for the claim and for its control,
# and say whether the data tell them apart: only where the claim passes and its control fails. Answer with the table
# `inside_control`: one row per model and corpus (index or columns `model` and `corpus`), columns `claim`, `control`
# and `tells_apart` (True or False). What does per-cluster centring do in a layer where the silhouette chose k = 1?

# %% nbgrader={"grade": false, "grade_id": "exercise_5", "locked": false, "schema_version": 3, "solution": true} tags=["nbval-check-output"]
### BEGIN SOLUTION
inside_control = (per_layer[per_layer.layer > 0].groupby(["model", "corpus"], sort=False)
                  [["s_inter_clusters_weighted", "s_inter_centred"]].agg(lambda values: values.abs().max())
                  .set_axis(["claim", "control"], axis=1))
inside_control["tells_apart"] = (inside_control.claim < 0.05) & (inside_control.control >= 0.05)
inside_control.round(3)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "exercise_5_test", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Exercise 5: the inside-clusters rule on the claim and on its control, per model and corpus.
answer = inside_control.reset_index() if "model" not in inside_control.columns else inside_control
assert {"model", "corpus", "claim", "control", "tells_apart"} <= set(answer.columns), \
    "inside_control needs model, corpus, claim, control and tells_apart"
assert len(answer) == len(per_layer.groupby(["model", "corpus"])), "one row per model and corpus"
### BEGIN HIDDEN TESTS
for (model, corpus), layers in per_layer[per_layer.layer > 0].groupby(["model", "corpus"]):
    row = answer[(answer.model == model) & (answer.corpus == corpus)].iloc[0]
    claim, control = layers.s_inter_clusters_weighted.abs().max(), layers.s_inter_centred.abs().max()
    assert np.isclose(row.claim, claim) and np.isclose(row.control, control), f"{model}, {corpus}: the largest |S_inter|"
    assert bool(row.tells_apart) == bool(claim < 0.05 <= control), f"{model}, {corpus}: tells_apart"
### END HIDDEN TESTS

# %% [markdown]
# **Exercise 6.** Compute the LID by hand. Take the first model's middle layer on the first corpus,
# `X = embeddings[key].layer(middle[key])[analysed[key].rows]` with `key = (View(models[0]), first_corpus)`, in float64.
# For each of its first 200 tokens, find with numpy (or `scipy.spatial.distance.cdist`) the Euclidean distances
# d_1 ≤ … ≤ d_k to its k = `lid_k` nearest other tokens and compute LID = −[(1/k) Σ_j log(d_j / d_k)]⁻¹; average over
# the 200 tokens: `lid_by_hand`. Do the same on squared distances, as the authors' faiss code measured:
# `lid_by_hand_squared`. Compare both with `isolib.metrics.lid_mle(X, k=lid_k, queries=np.arange(200))` (add
# `squared=True` for the second). What do squared distances do to the paper's LID values?

# %% nbgrader={"grade": false, "grade_id": "exercise_6", "locked": false, "schema_version": 3, "solution": true} tags=["nbval-check-output"]
### BEGIN SOLUTION
from scipy.spatial.distance import cdist

from isolib.metrics import lid_mle

key = (View(models[0]), first_corpus)
X = np.asarray(embeddings[key].layer(middle[key])[analysed[key].rows], dtype=np.float64)
nearest = np.sort(cdist(X[:200], X), axis=1)[:, 1:lid_k + 1]  # column 0 is the token itself


def mean_lid_by_hand(distances):
    return float(np.mean(-1 / np.mean(np.log(distances / distances[:, -1:]), axis=1)))


lid_by_hand, lid_by_hand_squared = mean_lid_by_hand(nearest), mean_lid_by_hand(nearest**2)
print(f"by hand {lid_by_hand:.3f} (squared {lid_by_hand_squared:.3f}); isolib "
      f"{lid_mle(X, k=lid_k, queries=np.arange(200)):.3f} (squared {lid_mle(X, k=lid_k, squared=True, queries=np.arange(200)):.3f})")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "exercise_6_test", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Exercise 6: the LID of the first 200 tokens of the first model's middle layer, by hand, true and squared distances.
assert 0 < lid_by_hand_squared < lid_by_hand, "two positive numbers, the squared-distance one the smaller"
### BEGIN HIDDEN TESTS
from isolib.metrics import lid_mle as isolib_lid

checked = (View(models[0]), first_corpus)
points = np.asarray(embeddings[checked].layer(middle[checked])[analysed[checked].rows], dtype=np.float64)
assert np.isclose(lid_by_hand, isolib_lid(points, k=lid_k, queries=np.arange(200)), rtol=1e-4), "the true-distance LID"
assert np.isclose(lid_by_hand_squared, lid_by_hand / 2, rtol=1e-9), "squared distances halve every log ratio"
### END HIDDEN TESTS
