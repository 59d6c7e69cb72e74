# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python (isolib)
#     language: python
#     name: isolib
# ---

# %% [markdown]
# # <<TITLE>>
#
# Author and Author (Year), *Title*, Venue.
#
# One paragraph: what the paper claims, and how this notebook tests it. This notebook regenerates:
#
# * **Figure `cosine_per_layer`** — the average cosine of random tokens per layer, beside an isotropic control;
# * **Table `cosines`** — every layer and token sample;
# * **`RESULTS.md`** — each finding of the paper beside ours, judged from the stored evidence.

# %% tags=["parameters"]
profile: str = "quick"  # which profile produced this run: quick, full or paper
output_dir: str = "../build/quick/figures/<<NN>>_<<NAME>>"  # folder for figures, tables and evidence
models: list = ["minilm"]  # offline short names (minilm, mpnet, smollm2) or Hub ids
n_sentences: int = 200  # STS sentences sampled; 0 takes all of them
n_samples: int = 5  # token samples per layer: the unit the intervals resample
n_tokens: int = 500  # tokens per sample
random_state: int = 0  # seed of the sentence and token samples

# %%
import time

import matplotlib.pyplot as plt
import pandas as pd

from isolib.datasets import sample_sentences, sts_sentences
from isolib.embed import embed
from isolib.evidence import judge, save_evidence
from isolib.findings import count_line, findings_table, verdict_table
from isolib.plotting import save_figure, save_table, set_style, show_table
from isolib.project import check_output_dir
from isolib.studies.<<NAME>> import claims, compute, figures

check_output_dir(profile, output_dir)
set_style()
started = time.perf_counter()

# %% [markdown]
# ## The evidence

# %%
sentences = sample_sentences(sts_sentences(), n_sentences, random_state=random_state)
cosines = pd.concat([compute.cosine_samples(embed(model, sentences), n_samples=n_samples, n_tokens=n_tokens,
                                            random_state=random_state) for model in models], ignore_index=True)
save_table(cosines, output_dir, "cosines")
evidence = {"cosines": cosines}

fig = figures.cosine_per_layer(cosines)
save_figure(fig, output_dir, "cosine_per_layer")
plt.show()

# %% [markdown]
# **The paper** found ... **This run:**

# %% tags=["nbval-check-output"]
show_table(verdict_table(claims.anisotropy_findings(cosines)))

# %% [markdown]
# ## Results

# %%
evidence["run"] = {"profile": profile, "models": models, "n_samples": n_samples, "n_tokens": n_tokens,
                   "wall_minutes": (time.perf_counter() - started) / 60}
save_evidence(output_dir, evidence)
record = judge(output_dir, claims.record)  # results.json and RESULTS.md, judged from the stored evidence
print(count_line(record.findings))
show_table(findings_table(record.findings).drop(columns="rule"))
