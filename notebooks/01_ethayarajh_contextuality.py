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
# > **This is the quick run** (`make quick`): the defaults of the parameters cell, with fewer models and subsets of the data, so its numbers and verdicts can differ from the full run's (`make figures`: all data, every offline model): see [its executed notebook](../figures/01_ethayarajh_contextuality/01_ethayarajh_contextuality.ipynb) and [its RESULTS.md](../figures/01_ethayarajh_contextuality/RESULTS.md).

# %% [markdown]
# # How contextual are contextual word representations?
#
# Kawin Ethayarajh (2019), *How Contextual are Contextualized Word Representations? Comparing
# the Geometry of BERT, ELMo, and GPT-2 Embeddings*, EMNLP-IJCNLP 2019, pp. 55–65; and the
# course-project slides *BERT Visualization* (Xueren Ge and Haibei Zhu), which apply the same
# measures to BERT on SNLI sentences.
#
# If a word had a single representation whatever its context, a static embedding would do. The
# paper measures, layer by layer, how far the representations of one word differ between
# contexts, after discounting *anisotropy* — the tendency of all representations of a layer to
# point into a narrow cone. This notebook regenerates:
#
# * **Figure 1 `fig1_anisotropy`** — average cosine between random words (the anisotropy baseline), per layer;
# * **Figure 2 `fig2_self_similarity`** — self-similarity, adjusted for anisotropy;
# * **Figure 3 `fig3_intra_similarity`** — intra-sentence similarity, adjusted;
# * **Figure 4 `fig4_mev`** — maximum explainable variance (MEV), adjusted three ways (the paper's formula, centred, the authors' code), and the share of words whose raw MEV is below the baseline;
# * **Table `lowest_self_similarity`** — the words of lowest self-similarity in each layer (the stopword finding);
# * **Table 1 `table1`** (and `table1_coverage`) — static embeddings from each layer's first principal component on nine word benchmarks, against GloVe;
# * **Figure `mev_per_word`** (slides) — MEV across layers of a concrete noun and a polysemous verb;
# * **Table `per_layer`** — every per-layer number behind the figures (with each model's first-position norm ratio), and **`RESULTS.md`** — each finding of the paper beside ours: the *tests* (claims our data could refute, each with its control) counted, a decoder judged in its start-token view with the paper's procedure beside it.
#   Every status, mark and measure is defined in [the glossary](../docs/glossary.md).
#
# **Conventions.** Layer 0 is the input embedding layer, layer *L* the output of block *L*
# (`isolib.models`); special tokens ([CLS], [SEP], BOS) are excluded. The unit of analysis is
# the model's own token by default (`unit = "token"`, as the paper did with BERT's WordPieces:
# `playing` may be `play` + `##ing`); `unit = "word"` averages the pieces of each word instead.
# A type keeps the casing the model reads (an uncased model such as MiniLM lowercases, a cased
# one keeps `The` apart from `the`, as the paper's bert-base-cased did). A unit with no letter and
# no digit is punctuation and is dropped. A type is analysed if it occurs in at least 5 distinct
# sentences; a word repeated within one sentence counts as several occurrences but one context.
# The exact rules are in `isolib.studies.ethayarajh_contextuality.occurrences`.
#
# **Models.** The paper's BERT-base-cased and GPT-2 come from the Hugging Face Hub (profile
# `paper`). Offline, the encoders `minilm` (all-MiniLM-L6-v2, a 6-block BERT) and `mpnet`
# (all-mpnet-base-v2, 12 blocks) stand in for BERT — bidirectional encoders over WordPieces — and
# the decoder `smollm2` (SmolLM2-135M-Instruct, a 30-block Llama-style causal model, from a Q4_1
# GGUF dequantised to float32) for GPT-2 — a left-to-right language model whose token sees only
# its left context. Both encoders are sentence-transformers, trained contrastively for sentence
# similarity, not masked-LM checkpoints like BERT: that changes their upper layers, so a "not
# reproduced" on them says how such encoders differ from BERT; the comparison is of kind, not of
# numbers. ELMo is not run.

# %% tags=["parameters"]
profile: str = "quick"  # which profile produced this run: quick or student or full or paper
output_dir: str = "../build/quick/figures/01_ethayarajh_contextuality"  # folder for figures and tables and RESULTS.md
models: list = ["minilm"]  # offline short names such as minilm or mpnet or smollm2 or Hub ids such as gpt2
corpus: str = "sts"  # sts: every sentence of STS 2012-2016 as in the paper; snli: the SNLI dev sentences as in the slides
n_sentences: int = 1500  # sentences sampled from the corpus; 0 takes all of them
layers: dict = {}  # layers to extract per model as a list of layer numbers; a model not listed gets every layer
unit: str = "token"  # token: every model piece is its own type as in the paper; word: the mean of a word's pieces
min_contexts: int = 5  # a type is analysed if it occurs in at least this many distinct sentences
n_samples: int = 1000  # random occurrences behind each anisotropy baseline; the paper used 1000
max_occurrences: int = 1000  # occurrences per word drawn for MEV and the PC static vectors; 0 uses all
n_lowest: int = 10  # words of lowest self-similarity listed per layer
table1_layers: list = [0, 1, -1]  # layers whose PC static embeddings are scored in Table 1 (0: the input layer, the control); negative counts from the top
static_baseline: str = "glove-50d"  # static word vectors compared in Table 1
static_analogy_vocab: int = 30000  # analogy answers of the static baseline come from its most frequent words; 0 uses all
n_word_pairs: int = 5  # noun and verb pairs behind the per-word MEV finding chosen by the rule of example_word_pairs
decoder_views: list = ["start_token"]  # views of a decoder's first position besides the paper's keep: drop or start_token
min_coverage: float = 0.25  # Table 1 findings count only benchmarks with at least this share of items covered
storage_dtype: str = "float16"  # cache dtype of the embeddings: float32 or float16
keep_embeddings: bool = False  # keep each model's per-layer embeddings in the cache once its tables are stored
device: str = "cpu"  # torch device: cpu or cuda
random_state: int = 0  # seed of the sentence sample and of every occurrence sample

# %%
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from IPython.display import Markdown, display

from isolib.datasets import load_wordnet_pos, load_wordnet_supersenses, sample_sentences
from isolib.evidence import judge, save_evidence
from isolib.findings import count_line, findings_table, verdict_table, verdicts
from isolib.models import load_static
from isolib.plotting import describe_layers, per_layer_figure, save_figure, save_table, set_style, show_table, show_text
from isolib.project import check_output_dir
from isolib.runner import peak_memory_gib
from isolib.studies.ethayarajh_contextuality import claims, compute, figures, static_vectors

started = time.perf_counter()
set_style()
check_output_dir(profile, output_dir)

# %% [markdown]
# ## Data
#
# Every distinct sentence of the SemEval STS 2012–2016 test sets, both sides of each pair
# (the paper's data), or the SNLI dev sentences (the slides' data). The quick profile samples
# 1,500 of them; the full and paper profiles take all 38,359.

# %% tags=["nbval-check-output"]
all_sentences = compute.corpus_sentences(corpus)
sentences = sample_sentences(all_sentences, n_sentences, random_state=random_state)
print(f"{len(sentences)} of {len(all_sentences)} distinct {corpus.upper()} sentences")

# %% [markdown]
# ## Embeddings, occurrences and the tables drawn from them
#
# `compute.contextuality_tables` runs each model once (`isolib.embed`), maps each analysed type to the rows
# holding its occurrences (`occurrence_index`), and computes from the layers every table below: the
# measures layer by layer, the first-position norm ratio and Table 1's PC static vectors. The
# embeddings keep every extracted layer of every token but the special ones, which no statistic here
# reads; the full profile extracts 15 of SmolLM2's 31 layers (every third layer plus the first and
# last three), about 33 GB of float16 for the three models. So each view's tables are stored in the
# cache, and its embeddings are deleted once they are (`keep_embeddings=False`): at most one view's
# embeddings are on disk at a time (MPNet's, the largest, about 11 GB), and a rerun that changes only the figures reads
# the tables. Editing the study's computation (its `compute` module and the library code it calls, not
# its prose, claims or figures) computes them again, extracting the embeddings again unless
# `keep_embeddings` was set.
#
# **A decoder's first position.** GPT-2 and SmolLM2 put no start token before a sentence, so
# the first word becomes the *attention sink*: from the middle layers on its vector is far
# longer than any other. The paper fed GPT-2 this way, and so does the first view here (`keep`);
# every decoder is also analysed in the views of `decoder_views` — `drop` removes position 0
# from every statistic, `start_token` prepends the tokenizer's start token so that the sink is
# a special token (`isolib.embed`, "The first position"). The *first-position norm ratio* is the
# mean norm of each sentence's first token over that of its other tokens (special tokens aside;
# punctuation counted), per layer.

# %% tags=["nbval-check-output"]
static = load_static(static_baseline)
view_tables = {}
for name in models:
    view_tables.update(compute.contextuality_tables(
        name, sentences, views=decoder_views, layers=layers.get(name), dtype=storage_dtype, device=device,
        unit=unit, min_contexts=min_contexts, n_samples=n_samples, max_occurrences=max_occurrences or None,
        random_state=random_state, table1_layers=table1_layers, static=static, static_name=static_baseline,
        keep_embeddings=keep_embeddings))
labels = list(view_tables)
for label, tables in view_tables.items():
    print(f"{label}: layers {list(tables.layers)} of {tables.n_layers}, {tables.n_tokens} tokens, "
          f"{tables.n_occurrences} non-punctuation {unit}s; {tables.n_types} types in "
          f">= {min_contexts} sentences, with {tables.n_kept} occurrences")
for label, tables in view_tables.items():
    if tables.is_decoder:
        print(f"{label}: first-position norm ratio "
              + ", ".join(f"L{layer} {value:.1f}" for layer, value in tables.norm_ratio.items()))

# %% [markdown]
# ## The measures, layer by layer
#
# For each layer: the **anisotropy baseline** (mean cosine between 1,000 uniformly random
# occurrences, pairs from different sentences); **SelfSim**(*w*), the mean cosine between the
# occurrences of *w* in different sentences (exact, no pair sampling), averaged over types;
# **IntraSim**(*s*), the mean cosine between a sentence's occurrences and their mean, averaged
# over sentences; **MEV**(*w*), σ₁²/Σσᵢ² of the occurrence matrix of *w* (at most
# `max_occurrences` occurrences), averaged over types, with the MEV of the same 1,000 random
# occurrences as its baseline. *Adjusted* = raw − baseline of the same layer. MEV is computed
# both on the raw matrix (the paper's formula) and centred (the authors' per-word code used a
# centred PCA). Both baselines are drawn nine more times from other random occurrences (the
# evidence's `baselines`), so that the intervals of the claims on adjusted measures cover the
# baseline's sampling as well as the words'.

# %%
# The evidence the claims are judged on (`claims` says what each item holds): the tables of every view (with
# the baselines of each independent draw of occurrences), the words of lowest self-similarity, and what was run.
per_layer = pd.concat([tables.per_layer for tables in view_tables.values()], ignore_index=True)
per_word = pd.concat([tables.per_word for tables in view_tables.values()], ignore_index=True)
evidence = {
    "run": {"profile": profile, "models": models, "corpus": corpus, "n_sentences": len(sentences), "unit": unit,
            "min_contexts": min_contexts, "n_samples": n_samples, "max_occurrences": max_occurrences,
            "decoder_views": decoder_views, "static_baseline": static_baseline, "n_lowest": n_lowest,
            "min_coverage": min_coverage},
    "per_layer": per_layer,
    "baselines": pd.concat([tables.baselines for tables in view_tables.values()], ignore_index=True),
    "per_word": per_word,
    "per_sentence": pd.concat([tables.per_sentence for tables in view_tables.values()], ignore_index=True),
    "lowest": compute.lowest_self_similarity(per_word, n_words=n_lowest),
}
# For the figures: one colour per model, one line style per view of its first position.
plotted = figures.by_view(per_layer)
save_table(per_layer, output_dir, "per_layer")
# Judged once here; the per-figure verdicts below pick their claims from it.
layer_verdicts = claims.findings(evidence)
# The columns a reader compares across layers; every column is in per_layer.csv.
show_table(per_layer[["model", "layer", "baseline_cosine", "self_similarity_adjusted", "intra_similarity_adjusted",
                      "mev_adjusted", "mev_centred_adjusted", "first_position_norm_ratio"]])


# %% [markdown]
# ## Figure 1 — anisotropy: average cosine between random words

# %%
per_layer_figure(plotted, "baseline_cosine", ylabel="average cosine between random words", title="Figure 1: anisotropy baseline per layer",
                 output_dir=output_dir, name="fig1_anisotropy", style="view")
plt.show()

# %% [markdown]
# **The paper** found the representations anisotropic in every non-input layer, more so in
# higher layers: BERT 0.105 at layer 0, 0.42 at layer 6, 0.675 at layer 11 (0.477 at layer 12);
# GPT-2 about 0.6 in layers 0–9, 0.978 in its last layer.

# %% tags=["nbval-check-output"]
display(show_text(f"This run: average cosine between random words at the first, middle and last layer: "
                  f"{describe_layers(per_layer, 'baseline_cosine')}."))
show_table(verdict_table(layer_verdicts, ["Anisotropy", "average cosine between random words"]))

# %% [markdown]
# ## Figure 2 — self-similarity, adjusted for anisotropy

# %%
per_layer_figure(plotted, "self_similarity_adjusted", ylabel="mean self-similarity − baseline", title="Figure 2: adjusted self-similarity per layer",
                 output_dir=output_dir, name="fig2_self_similarity", style="view")
plt.show()

# %% [markdown]
# **The paper** found self-similarity falling with depth in all three models: upper layers are
# more context-specific (raw BERT 0.954 at layer 0, 0.731 at layer 8; GPT-2's last layer most
# context-specific once adjusted).

# %%
display(show_text(f"This run: adjusted self-similarity at the first, middle and last layer: "
                  f"{describe_layers(per_layer, 'self_similarity_adjusted')} "
                  f"(raw: {describe_layers(per_layer, 'self_similarity')})."))
show_table(verdict_table(layer_verdicts, ["Self-similarity falls", "mean raw self-similarity", "Slides: self- and intra"]))

# %% [markdown]
# ## Figure 3 — intra-sentence similarity, adjusted for anisotropy

# %%
per_layer_figure(plotted, "intra_similarity_adjusted", ylabel="mean intra-sentence similarity − baseline", title="Figure 3: adjusted intra-sentence similarity per layer",
                 output_dir=output_dir, name="fig3_intra_similarity", style="view")
plt.show()

# %% [markdown]
# **The paper** found that context-specificity shows differently per model: in BERT the words
# of a sentence grow apart in upper layers yet stay more similar than random words (adjusted
# IntraSim > 0), in GPT-2 they are no more similar than random words (adjusted ≈ 0), in ELMo
# they grow more similar.
#
# For a decoder, this is where the first position matters most: the sink dominates the mean
# of a sentence's vectors and the random baseline alike, so both the raw and the baseline
# cosines are ≈ 1 and their difference ≈ 0 whatever the other words do. The dashed line is the
# view with a start token in front of each sentence.

# %%
display(show_text(f"This run: adjusted intra-sentence similarity at the first, middle and last layer: "
                  f"{describe_layers(per_layer, 'intra_similarity_adjusted')}."))
show_table(verdict_table(layer_verdicts,
                         ["BERT: same-sentence", "GPT-2: same-sentence", "ELMo: same-sentence", "mean raw intra-sentence"]))

# %% [markdown]
# ## Figure 4 — maximum explainable variance, adjusted for anisotropy
#
# (a) the paper's formula: uncentred word MEV minus the uncentred baseline; (b) both centred;
# (c) the estimator of the authors' code: centred word MEV (scikit-learn's PCA) minus the
# *uncentred* baseline (REFERENCE.md, 01); (d) the share of words whose raw MEV is *below* the
# baseline of the layer. A word seen *n* times has a raw MEV of at least 1/*n* (its matrix has
# rank ≤ *n*), while the baseline is estimated from 1,000 occurrences: rare words inflate the raw MEV.

# %%
figures.mev_figure(plotted, output_dir)
plt.show()

# %% [markdown]
# **The paper** found that on average less than 5% of a word's contextual variance is explained
# by its first principal component after adjusting for anisotropy, in every layer of every
# model, and that many words have a raw MEV below the baseline.

# %%
display(show_text(f"This run: mean adjusted MEV (uncentred) at the first, middle and last layer: "
                  f"{describe_layers(per_layer, 'mev_adjusted')}; centred: {describe_layers(per_layer, 'mev_centred_adjusted')}; "
                  f"the authors' estimator: {describe_layers(per_layer, 'mev_authors_adjusted')}; share of words below the "
                  f"baseline: {describe_layers(per_layer, 'mev_below_baseline')}."))
show_table(verdict_table(layer_verdicts, ["Less than 5%", "Many words have a raw MEV", "BERT: raw MEV", "GPT-2: raw MEV"]))

# %% [markdown]
# ## Table — the words of lowest self-similarity
#
# Adjusting subtracts one number per layer, so raw and adjusted rankings agree.

# %%
lowest = evidence["lowest"]
save_table(lowest, output_dir, "lowest_self_similarity", digits=2)
show_table(lowest, digits=2)

# %% [markdown]
# **The paper** found stopwords among the most context-specific words in every layer (ELMo's
# lowest: "and", "of", "'s", "the", "to").

# %%
upper = lowest[lowest.layer > 0]
show_text("This run: share of stopwords among the "
          f"{n_lowest} words of lowest self-similarity (median over non-input layers): "
          + "; ".join(f"{name} {group.stopword_share.median():.1f}" for name, group in upper.groupby("model", sort=False))
          + ".\n" + verdicts(layer_verdicts, ["Stopwords have the lowest"]))

# %% [markdown]
# ## Figure — MEV of single words across layers (slides)
#
# The slides plot the MEV of single words: "beverage" near 1 (one static vector would do), "go"
# and "school" lower. "beverage" is too rare in STS, so the finding in `RESULTS.md` rests on
# `n_word_pairs` (noun, verb) pairs chosen by the rule of `compute.example_word_pairs`: nouns that
# WordNet lists only as nouns, every sense of them concrete (an artifact, food, plant, animal,
# substance or body part: no place, no person), each paired with a verb of at least ten WordNet verb
# senses, neither a stopword nor a light verb (be, have, make ...), in about as many sentences. The
# figure shows each model's first pair.

# %%
wordnet, supersenses = load_wordnet_pos(), load_wordnet_supersenses()
evidence["example_pairs"] = {label: compute.example_word_pairs(per_word[per_word.model == label], wordnet,
                                                              supersenses, n_pairs=n_word_pairs) for label in labels}
fig, axes = plt.subplots(1, len(labels), figsize=(5 * len(labels), 3.8), squeeze=False, constrained_layout=True)
for ax, name in zip(axes[0], labels):
    pair = list(next(iter(evidence["example_pairs"][name]), ()))
    sns.lineplot(data=per_word[(per_word.model == name) & per_word.word.isin(pair)], x="layer", y="mev", hue="word",
                 marker="o", ax=ax, hue_order=pair or None)
    ax.set_title(name if pair else f"{name}: no pair meets the rule")
    ax.set_xlabel("layer (0 = input embeddings)")
    ax.set_ylabel("raw MEV (uncentred)")
    ax.set_ylim(0, 1.02)
fig.suptitle("MEV of single words across layers: a concrete noun and a polysemous verb")
save_figure(fig, output_dir, "mev_per_word")
plt.show()

# %%
def described(label: str, word: str) -> str:
    rows = per_word[(per_word.model == label) & (per_word.word == word)]
    return f"{word} ({int(rows.n_contexts.max())}, {rows.mev.mean():.2f})"


pairs_text = [f"This run, {label}: (noun, verb) pairs of the finding (sentences, mean raw MEV over layers): "
              + ", ".join(f"{described(label, noun)}/{described(label, verb)}" for noun, verb in pairs)
              for label, pairs in evidence["example_pairs"].items()]
show_text("\n".join([*pairs_text, verdicts(claims.findings(evidence), ["Slides: a concrete noun"])]))

# %% [markdown]
# ## Table 1 — static embeddings from the first principal component
#
# For each word, the first right-singular vector of its (uncentred) occurrence matrix in a
# layer, its sign fixed to agree with the mean occurrence, is a static word vector. The
# benchmarks: SimLex-999, MEN, WS353 and RW (Spearman), SemEval-2012 (read as
# prototype-candidate analogies: the available copy has no graded scores, so it is scored by
# 3CosAdd accuracy), the Google and MSR analogies (3CosAdd accuracy), BLESS and AP (purity of
# Ward clustering). **Out-of-vocabulary items are skipped**; the coverage table gives the share
# scored. The static baseline is scored twice: on the same words as the PC vectors (the fair
# comparison: a small vocabulary makes analogies easier) and on its full vocabulary. Layer 0, the
# input layer, sees no context: its PC vectors are the control of "beats GloVe", judged by the same
# rule (a decoder's input vectors of a word are all one vector, so its PC vector is that vector).

# %%
tables = [view_tables[label].table1 for label in labels]
tables.append(static_vectors.word_benchmarks(static, restrict_vocab=static_analogy_vocab or None)
              .assign(model=static_baseline, embedding=f"{static_baseline} ({len(static)} words)", layer=np.nan))
evidence["table1"] = pd.concat(tables, ignore_index=True)
table1, coverage = static_vectors.table1_wide(evidence["table1"])
benchmarks = list(table1.columns[2:])
save_table(table1, output_dir, "table1")
save_table(coverage, output_dir, "table1_coverage")
display(Markdown("**Scores** (Spearman, accuracy or purity):"), show_table(table1))
display(Markdown("**Coverage** (share of each benchmark's items scored; the rest were out of vocabulary):"),
        show_table(coverage))

# %% [markdown]
# **The paper** found the PC static embeddings of BERT's layer 1 best, most layers of BERT and
# ELMo beating GloVe and FastText, lower layers beating upper ones, and GPT-2's far worse.

# %%
mean_scores_text = []
for name in labels:
    scores = table1.set_index(["model", "embedding"]).loc[name, benchmarks]
    mean_scores = scores.mean(axis=1)
    mean_scores_text.append(
        f"This run, {name}: mean score over benchmarks "
        + ", ".join(f"{embedding} {value:.2f}" for embedding, value in mean_scores.items())
        + f"; median coverage {coverage.set_index(['model', 'embedding']).loc[name, benchmarks].median(axis=None):.3f}.")
show_text("\n".join([*mean_scores_text, verdicts(claims.findings(evidence), ["Table 1"])]))

# %% [markdown]
# ## Results against the paper
#
# `RESULTS.md` in the output folder lists each finding and reference number of the paper
# beside this run's, marked *reproduced*, *indistinguishable* (its control passes the same rule), *mixed*,
# *borderline*, *not reproduced* or *not comparable* by the rule given on its line (the study's `claims` declare them from the evidence stored beside the results, so
# `python -m isolib judge 01_ethayarajh_contextuality` judges them again with no model): qualitative findings about BERT are tested on the encoders that stand in
# for it (and GPT-2's on the decoder), while reference numbers are comparable only on the
# paper's own models (within 0.05), and are otherwise shown at the same relative depth.

# %% tags=["nbval-check-output"]
elapsed_minutes = (time.perf_counter() - started) / 60
peak_gib = peak_memory_gib()
evidence["run"].update(wall_minutes=elapsed_minutes, peak_gib=peak_gib)
save_evidence(output_dir, evidence)
record = judge(output_dir, claims.record)
print(count_line(record.findings))

# %%
show_table(findings_table(record.findings).drop(columns="rule"))

# %% [markdown]
# ## Closing note: the headline numbers
#
# Average cosine between random words at the first, middle and last layer, and the mean
# adjusted MEV over layers, per model; then the wall time and peak memory of this run.

# %% tags=["nbval-check-output"]
for name, group in per_layer.groupby("model", sort=False):
    values = group.set_index("layer").baseline_cosine
    middle = values.index[len(values) // 2]
    print(f"{name}: baseline cosine L{values.index[0]} {values.iloc[0]:.2f}, L{middle} {values[middle]:.2f}, "
          f"L{values.index[-1]} {values.iloc[-1]:.2f}; mean adjusted MEV {group.mev_adjusted.mean():.2f} "
          f"(centred {group.mev_centred_adjusted.mean():.2f})")

# %%
print(f"Wall time {elapsed_minutes:.1f} min, peak memory {peak_gib:.1f} GiB")

# %% [markdown]
# ## Exercises
#
# For a class: each exercise is a question, an answer cell and a locked test cell whose asserts check the
# answer (nbgrader's autograded tests). Write your answer where the answer cell says `# YOUR CODE HERE`,
# then run the test cell below it; teachers release these copies with `make student` (see `TEACHING.md`).

# %% [markdown]
# **Exercise 1.** Where is context felt most? For each model (and view), find the layer with the lowest
# anisotropy-adjusted self-similarity (`per_layer.self_similarity_adjusted`), and say whether it lies in
# the upper half of the network, as the paper found for ELMo, BERT and GPT-2. Answer with a table
# `lowest_layer`: one row per `model`, with its `layer` and `upper_half` (True or False).

# %% nbgrader={"grade": false, "grade_id": "exercise_1", "locked": false, "schema_version": 3, "solution": true} tags=["nbval-check-output"]
### BEGIN SOLUTION
lowest_layer = per_layer.loc[per_layer.groupby("model", sort=False).self_similarity_adjusted.idxmin(),
                             ["model", "layer", "n_layers", "self_similarity_adjusted"]]
lowest_layer = lowest_layer.assign(upper_half=lowest_layer.layer > (lowest_layer.n_layers - 1) / 2)
lowest_layer.round(3)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "exercise_1_test", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Exercise 1: one row per model, at a layer of least adjusted self-similarity, and which half it lies in.
assert {"model", "layer", "upper_half"} <= set(lowest_layer.columns), "lowest_layer needs model, layer, upper_half"
### BEGIN HIDDEN TESTS
assert sorted(lowest_layer.model) == sorted(per_layer.model.unique()), "one row per model"
for answer in lowest_layer.itertuples():
    of_model = per_layer[per_layer.model == answer.model]
    at_layer = of_model.self_similarity_adjusted[of_model.layer == answer.layer]
    assert at_layer.min() == of_model.self_similarity_adjusted.min(), f"{answer.model}: not the lowest layer"
    assert answer.upper_half == (answer.layer > (of_model.n_layers.iloc[0] - 1) / 2), f"{answer.model}: upper_half"
### END HIDDEN TESTS

# %% [markdown]
# **Exercise 2.** How much of the raw self-similarity is anisotropy? For each model, average over the non-input
# layers the share `baseline_cosine / self_similarity`: the part two random occurrences of any words
# would already have in common. Answer with `anisotropy_share`, one value per model (a Series indexed by model).

# %% nbgrader={"grade": false, "grade_id": "exercise_2", "locked": false, "schema_version": 3, "solution": true} tags=["nbval-check-output"]
### BEGIN SOLUTION
anisotropy_share = (per_layer[per_layer.layer > 0].assign(share=lambda t: t.baseline_cosine / t.self_similarity)
                    .groupby("model", sort=False).share.mean())
anisotropy_share.round(3)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "exercise_2_test", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Exercise 2: the mean share of the anisotropy baseline in the raw self-similarity, per model.
assert sorted(anisotropy_share.index) == sorted(per_layer.model.unique()), "one value per model"
### BEGIN HIDDEN TESTS
for model_name, share in anisotropy_share.items():
    above_input = per_layer[(per_layer.model == model_name) & (per_layer.layer > 0)]
    assert np.isclose(share, (above_input.baseline_cosine / above_input.self_similarity).mean()), model_name
### END HIDDEN TESTS

# %% [markdown]
# **Exercise 3.** Read Figure 1. For each line (a model, and a view of it for a decoder), how high does the average
# cosine between random words climb, and does it peak in the last layer, as in the paper's GPT-2 (0.978 in its last
# layer), or below it, as in BERT (0.675 at layer 11, 0.477 at layer 12)? Read the values off the figure, to about
# ±0.03 (the x axis is the relative depth: 1 is the last layer). Answer with a table `peak`, indexed by model as in
# `per_layer.model`, with `cosine` (the highest average cosine) and `at_last_layer` (True or False).

# %% nbgrader={"grade": false, "grade_id": "exercise_3", "locked": false, "schema_version": 3, "solution": true} tags=["nbval-check-output"]
### BEGIN SOLUTION
peak = per_layer.groupby("model", sort=False).baseline_cosine.agg(cosine="max", last="last")
peak["at_last_layer"] = peak.pop("last") == peak.cosine
peak.round(3)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "exercise_3_test", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Exercise 3: per model, the highest average cosine of Figure 1 and whether the last layer holds it.
assert {"cosine", "at_last_layer"} <= set(peak.columns), "peak needs cosine and at_last_layer"
assert sorted(peak.index) == sorted(per_layer.model.unique()), "one row per model"
### BEGIN HIDDEN TESTS
for model_name, answer in peak.iterrows():
    cosines = per_layer[per_layer.model == model_name].sort_values("layer").baseline_cosine
    assert abs(answer.cosine - cosines.max()) <= 0.03, f"{model_name}: not the highest average cosine"
    if cosines.max() - cosines.iloc[-1] > 0.03:  # a peak below the last layer that the figure shows apart from it
        assert not answer.at_last_layer, f"{model_name}: the peak lies below the last layer"
    elif cosines.iloc[-1] == cosines.max():
        assert answer.at_last_layer, f"{model_name}: the last layer holds the peak"
### END HIDDEN TESTS

# %% [markdown]
# **Exercise 4.** Is a static embedding isotropic? Table 1 sets the PC static vectors against GloVe (`static`, the
# notebook's static baseline). Compute by hand, with numpy alone, Figure 1's measure on GloVe: the average cosine
# over all pairs of distinct words among its 1,000 most frequent words (the first 1,000 rows of `static.matrix`:
# GloVe lists its words by frequency, and random occurrences in running text are mostly frequent words too). Check
# your value against `isolib.metrics.average_cosine`, then find, for each model, the layers whose random words are
# more alike than GloVe's frequent words (`per_layer.baseline_cosine` above your value). Answer with `glove_cosine`
# (a number) and `above_glove` (a dict: model → list of layers, empty where there is none).

# %% nbgrader={"grade": false, "grade_id": "exercise_4", "locked": false, "schema_version": 3, "solution": true} tags=["nbval-check-output"]
### BEGIN SOLUTION
from isolib.metrics import average_cosine

frequent = static.matrix[:1000]
unit_rows = frequent / np.linalg.norm(frequent, axis=1, keepdims=True)
glove_cosine = float(((unit_rows @ unit_rows.T).sum() - len(unit_rows)) / (len(unit_rows) * (len(unit_rows) - 1)))
above_glove = {name: group.layer[group.baseline_cosine > glove_cosine].tolist()
               for name, group in per_layer.groupby("model", sort=False)}
print(f"by hand {glove_cosine:.4f}, isolib {average_cosine(frequent):.4f}; layers above GloVe: {above_glove}")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "exercise_4_test", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Exercise 4: GloVe's average cosine among its 1,000 most frequent words, and the layers above it.
from isolib.metrics import average_cosine

assert np.isclose(glove_cosine, average_cosine(static.matrix[:1000])), "not isolib's average cosine of the 1,000 words"
assert sorted(above_glove) == sorted(per_layer.model.unique()), "one list of layers per model"
### BEGIN HIDDEN TESTS
for model_name, layers_above in above_glove.items():
    of_model = per_layer[per_layer.model == model_name]
    expected = of_model.layer[of_model.baseline_cosine > average_cosine(static.matrix[:1000])]
    assert sorted(layers_above) == sorted(expected), f"{model_name}: the layers above GloVe"
### END HIDDEN TESTS

# %% [markdown]
# **Exercise 5.** Stopwords: context, or only position? The paper found stopwords among the words of lowest
# self-similarity, and so does the table of the lowest words above. Apply the finding's control, the input layer,
# which sees no context (an encoder's layer 0 is each token's embedding plus its position's): from `lowest`, compute
# the claim's value, the median `stopword_share` over the non-input layers, and the control's, the share in layer 0,
# and judge both by the same rule: at least 0.5 (half the listed words are stopwords). The status is *reproduced*
# if the claim meets the rule and its control does not, *indistinguishable* if both do (the data cannot tell the
# claim from its control), *not reproduced* if the claim does not. Answer with a table `stopword_control`, indexed
# by model, with `claim`, `control` and `status`. (The record also bootstraps an interval over the layers, which can
# make its status *borderline*: leave the interval aside here.)

# %% nbgrader={"grade": false, "grade_id": "exercise_5", "locked": false, "schema_version": 3, "solution": true} tags=["nbval-check-output"]
### BEGIN SOLUTION
stopword_control = {}
for name, group in lowest.groupby("model", sort=False):
    shares = group.set_index("layer").stopword_share
    claim, control = shares[shares.index > 0].median(), shares[0]
    stopword_control[name] = {"claim": claim, "control": control, "status": "not reproduced" if claim < 0.5
                              else "indistinguishable" if control >= 0.5 else "reproduced"}
stopword_control = pd.DataFrame.from_dict(stopword_control, orient="index")
stopword_control.round(2)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "exercise_5_test", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Exercise 5: the stopword finding beside its control, the input layer, by the same rule.
assert {"claim", "control", "status"} <= set(stopword_control.columns), "stopword_control needs claim, control, status"
assert sorted(stopword_control.index) == sorted(lowest.model.unique()), "one row per model"
### BEGIN HIDDEN TESTS
for model_name, answer in stopword_control.iterrows():
    by_layer = lowest[lowest.model == model_name].set_index("layer").stopword_share
    value, at_input = by_layer[by_layer.index > 0].median(), by_layer[0]
    assert np.isclose(answer.claim, value) and np.isclose(answer.control, at_input), f"{model_name}: the shares"
    assert answer.status == ("not reproduced" if value < 0.5 else "indistinguishable" if at_input >= 0.5
                             else "reproduced"), f"{model_name}: the status"
### END HIDDEN TESTS

# %% [markdown]
# **Exercise 6.** A threshold of ours. The paper says only that random words are "well above 0" in every non-input
# layer; the rule of "Anisotropy in every non-input layer" asks for an average cosine above 0.1 in each of them, and
# not in the input layer (its control). Re-judge the claim with a threshold of 0.01 instead, for each model, with
# the study's own rule function `isolib.findings.threshold` (on the non-input layers, and on layer 0 for the
# control), the status by Exercise 5's three cases, and say whether the record's status (`record.findings`, as in
# the verdict table under Figure 1) changes. What does the lower bar let through? Answer with a table `rejudged`,
# indexed by model, with `before` (the record's status), `after` (at 0.01) and `changed` (True or False).

# %% nbgrader={"grade": false, "grade_id": "exercise_6", "locked": false, "schema_version": 3, "solution": true} tags=["nbval-check-output"]
### BEGIN SOLUTION
from isolib.findings import threshold

before = {finding.model: finding.status for finding in record.findings
          if finding.finding == "Anisotropy in every non-input layer"}
rejudged = {}
for name, group in per_layer.groupby("model", sort=False):
    cosine = group.set_index("layer").baseline_cosine
    claim, control = threshold(cosine[cosine.index > 0], above=0.01), threshold(cosine[0], above=0.01)
    after = "not reproduced" if not claim.passed else "indistinguishable" if control.passed else "reproduced"
    rejudged[name] = {"before": before[name], "after": after, "changed": after != before[name]}
rejudged = pd.DataFrame.from_dict(rejudged, orient="index")
rejudged
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "exercise_6_test", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Exercise 6: "Anisotropy in every non-input layer" re-judged at a threshold of 0.01, beside the record's status.
assert {"before", "after", "changed"} <= set(rejudged.columns), "rejudged needs before, after, changed"
assert sorted(rejudged.index) == sorted(per_layer.model.unique()), "one row per model"
### BEGIN HIDDEN TESTS
from isolib.findings import declare, threshold

for model_name, answer in rejudged.iterrows():
    by_layer = per_layer[per_layer.model == model_name].set_index("layer").baseline_cosine
    judged = next(finding for finding in record.findings
                  if finding.finding == "Anisotropy in every non-input layer" and finding.model == model_name)
    at_001, control_at_001 = threshold(by_layer[by_layer.index > 0], above=0.01), threshold(by_layer.get(0), above=0.01)
    again = declare(judged.finding, judged.paper, model_name, "-", at_001, "-", kind="test", control=judged.control,
                    control_verdict=control_at_001)
    assert answer.before == judged.status, f"{model_name}: the record's status"
    assert answer.after == again.status, f"{model_name}: the status at 0.01"
    assert bool(answer.changed) == (again.status != judged.status), f"{model_name}: changed"
### END HIDDEN TESTS
