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
# > **This is the quick run** (`make quick`): the defaults of the parameters cell, with fewer models and subsets of the data, so its numbers and verdicts can differ from the full run's (`make figures`: all data, every offline model): see [its executed notebook](../figures/00_quickstart/00_quickstart.ipynb).

# %% [markdown]
# # Quickstart: how anisotropic is each layer of a contextual model?
#
# A vertical slice through the project: real sentences (SemEval STS 2012–2016), real
# pretrained models that ship in PyPI packages, cached per-layer embeddings, one measure,
# one figure. The measure is the **anisotropy baseline** of Ethayarajh (2019, *How
# Contextual are Contextualized Word Representations?*, EMNLP): the average cosine
# similarity between the representations of uniformly random tokens from different
# sentences. In an isotropic space it is about 0; the paper found it well above 0 in
# every layer but the input layer of BERT and GPT-2, growing with depth.
#
# This notebook regenerates:
#
# * **Figure `anisotropy_per_layer`** — average cosine between random tokens, per layer, per model;
# * **Table `anisotropy_per_layer`** — the same numbers, with the mean token norm per layer.
#
# Every measure and term of the collection is defined in [the glossary](../docs/glossary.md).
#
# Layer 0 is the input embedding layer, layer *L* the output of block *L*
# (see `isolib.models`). Special tokens ([CLS], [SEP]) are excluded.

# %% tags=["parameters"]
profile: str = "quick"  # which profile produced this run: quick, full or paper
output_dir: str = "../build/quick/figures/00_quickstart"  # folder for figures and tables
models: list = ["minilm", "smollm2"]  # offline short names (minilm, mpnet, smollm2) or Hub ids
n_sentences: int = 300  # STS sentences sampled; 0 takes all of them
n_tokens: int = 1000  # random tokens per layer for the baseline; the paper used 1000
storage_dtype: str = "float16"  # cache dtype of the embeddings: float32 or float16
device: str = "cpu"  # torch device: cpu or cuda
random_state: int = 0  # seed of the sentence sample and of the token sample

# %%
import pandas as pd
import matplotlib.pyplot as plt

from isolib.datasets import sample_sentences, sts_sentences
from isolib.embed import embed
from isolib.plotting import describe_layers, plot_per_layer, save_figure, save_table, set_style
from isolib.studies.ethayarajh_contextuality.compute import anisotropy_by_layer

set_style()

# %% [markdown]
# ## Data: the sentences of SemEval STS 2012–2016
#
# Both sides of every pair, de-duplicated, as in Ethayarajh (2019). The quick profile
# samples a few hundred of them.

# %% tags=["nbval-check-output"]
corpus = sts_sentences()
sentences = sample_sentences(corpus, n_sentences, random_state=random_state)
print(f"{len(sentences)} of {len(corpus)} distinct STS sentences")

# %% [markdown]
# ## Embeddings of every layer
#
# `embed` runs each model once and caches every layer on disk; a rerun reads the cache.

# %% tags=["nbval-check-output"]
embeddings = {name: embed(name, sentences, dtype=storage_dtype, device=device) for name in models}
for name, result in embeddings.items():
    content = ~result.tokens.is_special
    print(f"{name}: {result.n_layers} layers, {int(content.sum())} tokens, dim {result.dim}")

# %% [markdown]
# ## Average cosine between random tokens, per layer

# %%
per_layer = pd.concat([anisotropy_by_layer(result, n_samples=n_tokens, random_state=random_state)
                       for result in embeddings.values()], ignore_index=True)
save_table(per_layer, output_dir, "anisotropy_per_layer")

fig, ax = plt.subplots(figsize=(6.5, 3.8))
plot_per_layer(per_layer, "average_cosine", ax=ax, ylabel="average cosine between random tokens")
ax.axhline(0, color="grey", lw=0.8)
ax.set_title("Anisotropy baseline per layer (STS sentences)")
save_figure(fig, output_dir, "anisotropy_per_layer")
plt.show()

# %% [markdown]
# **The paper** found BERT-base's baseline at 0.105 in layer 0, rising to 0.675 in layer 11
# (0.477 in layer 12), and GPT-2's at 0.61 in layer 0, reaching 0.978 in its last layer. Notebook 01
# judges each such finding; here, the numbers:

# %% tags=["nbval-check-output"]
print(f"This run: average cosine at the first, middle and last layer: "
      f"{describe_layers(per_layer, 'average_cosine')}.")

# %% [markdown]
# ## The same for any Hugging Face model
#
# Every function above takes an offline short name or any Hub id, so with a network
# the whole analysis runs on the paper's own models by changing one parameter:
#
# ```python
# embeddings = {name: embed(name, sentences) for name in ["bert-base-cased", "gpt2"]}
# ```
#
# or, headlessly, `python -m isolib reproduce --profile paper --only 00_quickstart`
# (parameters in `notebooks/params/00_quickstart/paper.yaml`). Without a network a Hub
# id fails at once with a message listing the offline models.
