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
# > **This is the quick run** (`make quick`): the defaults of the parameters cell, with fewer models and subsets of the data, so its numbers and verdicts can differ from the full run's (`make figures`: all data, every offline model): see [its executed notebook](../figures/04_mickus_isotropy_clusters/04_mickus_isotropy_clusters.ipynb) and [its RESULTS.md](../figures/04_mickus_isotropy_clusters/RESULTS.md).

# %% [markdown]
# # Isotropy, clusters, and classifiers
#
# Timothee Mickus, Stig-Arne Grönroos and Joseph Attieh (2024), *Isotropy, Clusters, and Classifiers*,
# ACL 2024 (short papers).
#
# IsoScore is highest when the variance of a point cloud is spread evenly over all its dimensions; a
# silhouette is highest when points sit in tight, well-separated clusters. The paper argues the two are
# antithetical, and that a linear classifier pulls the points it classifies into clusters: optimise the
# embeddings for a linear classifier, and IsoScore should fall while the silhouette rises. It checks
# this by training the embeddings themselves (the sentence vectors are the parameters) under a linear
# layer. This notebook regenerates:
#
# * **Table 1 `table1`** — items and trainable parameters per setup (for the static stand-ins also counted at word2vec's 300 dimensions);
# * **Figure 2 `fig2_traces`** — IsoScore and silhouette after every update, mean ± std over seeds, one panel per setup;
# * **Figure 3 `fig3_isoscore_silhouette`** — IsoScore against silhouette, coloured by update, with Pearson's r and Spearman's ρ;
# * **Table `correlations`** — Pearson and Spearman per setup and seed; **`traces`** — every recorded update;
# * **Controls (ours)**: **Table `controls`** and **Figure `fig_controls`** — (i) and (ii) trained on shuffled labels and on an objective that ignores the labels;
# * **Figure `fig_section2`** and **Table `variance_identity`** — Section 2 made concrete: tightening synthetic clusters, and the identity behind the proof;
# * **Appendix A**: **Table `appendix_a`** (every GLUE task x model of the paper, run or not and why), **Table 2 `table2`** (items and parameters per GLUE task and model), **Table 3 `table3`** (correlations) and **Figure 4 `fig4_glue`** (the traces);
# * **`RESULTS.md`** — each finding of the paper beside ours.
#   Every status, mark and measure is defined in [the glossary](../docs/glossary.md).
#
# **The setups.** (i) rt-polarity: the 10,662 sentences as all-MiniLM-L6-v2 vectors,
# a 2-way linear layer without bias, cross-entropy; (ii) SNLI dev, 9,842 gold pairs: one trainable
# vector per unique sentence, a pair read as [u; v] by a 3-way linear layer with bias. The vectors are
# exactly what `SentenceTransformer("all-MiniLM-L6-v2").encode` returns (mean pooling over the
# attention mask, unit length; read from the model's own `modules.json`; a test checks equality to
# 1e-5). **Which vectors the metrics see**: IsoScore is computed on the trainable vectors themselves
# (for SNLI the unpaired sentence vectors, as the paper says); the silhouette on what carries a label:
# the sentence vectors with their class in (i), the pair representations [u; v] with the pair's class
# in (ii) (a premise occurs in pairs of different classes, so it has no label of its own).
# (iii) and (iv) are **stand-ins**: the paper's word2vec vectors and its CoDWoE and supersense data are
# not available offline, so they are **GloVe-50d with WordNet parts of speech** and **GloVe-50d with WordNet
# noun supersenses (one per noun)**. (iii): the 11,462 most frequent
# alphabetic GloVe words that are WordNet lemmas, each with the set of its parts of speech (noun, verb,
# adjective, adverb) as a multi-label target, a per-label sigmoid with bias, binary cross-entropy;
# WordNet lists rare senses of function words (*in* is also a noun, Indiana), which CoDWoE's tags from
# usage would not. (iv): the 2,275 most frequent alphabetic GloVe words that are WordNet nouns with
# exactly one noun supersense (lexicographer file, e.g. `noun.animal`), 26 labels with bias, binary
# cross-entropy: with one label per word the paper's multi-label setup is effectively single-label here.
# For the silhouette each distinct label vector is one cluster.
# **Appendix A** repeats (ii)'s construction on the GLUE training sets we have (CoLA, MRPC, RTE, SST-2)
# with all-MiniLM-L6-v2 and all-mpnet-base-v2; the paper also ran MNLI, QNLI, QQP and WNLI, whose data
# are not in our registry, and a third model, all-distilroberta-v1, a Hub model not available offline:
# each of its 24 task x model pairs has a row saying whether it ran, and why not.
#
# **Protocol.** Full-batch gradients, Adam with PyTorch's defaults (lr = 10⁻³), IsoScore and silhouette
# after every update; the seed sets only the classifier's initialisation (the vectors start from the same
# SBERT output and every item is seen), so the spread over seeds is expected to be small, and the intervals
# over seeds below cover that and nothing else. The quick profile runs subsets
# and fewer updates; the full profile the paper's 1,000 updates and 5 seeds on every item, and for
# GLUE the appendix's 250 updates with the metrics on a fresh random sample of 4,000 items per update
# when a set is larger (the paper's sample size is lost in our copy; 4,000 is over 5× the 768
# dimensions of MPNet, since IsoScore depends on the number of points).
#
# **Effect sizes.** The paper gives none, so the trends are judged by how far each metric moved towards
# its bound — IsoScore towards 0, (first − last) / first, the silhouette towards 1, (last − first) / (1 − first)
# — at least a tenth of the way (our threshold; each line of `RESULTS.md` gives the range of thresholds over
# which its status holds), and the paper's "monotonically decreasing relationship" by the share of updates in
# which each metric moves the expected way (at least 95%, ours) and the longest run against it.

# %% tags=["parameters"]
profile: str = "quick"  # which profile produced this run: quick or student or full or paper
output_dir: str = "../build/quick/figures/04_mickus_isotropy_clusters"  # folder for figures and tables and RESULTS.md
setups: list = ["polarity", "snli", "pos", "supersenses"]  # setups to run: polarity (i) and snli (ii) and pos (iii) and supersenses (iv)
control_setups: list = ["polarity", "snli"]  # setups also trained on shuffled labels and label-free (controls, ours); [] skips them
control_every: int = 5  # the controls record their metrics every this many updates (the same training; the paper's runs record every update)
n_items: int = 1500  # items drawn per setup; 0 takes all of them as the paper
n_updates: int = 100  # full-batch Adam updates per seed; the paper ran 1000
seeds: list = [0, 1]  # seeds of the classifier initialisation; the paper ran 5
device: str = "cpu"  # torch device for training: cpu or cuda
random_state: int = 0  # seed of the item subsets and of the synthetic demonstration
glue_tasks: list = ["cola"]  # Appendix A tasks: cola and mrpc and rte and sst2; [] skips the appendix
glue_models: list = ["minilm"]  # Appendix A sentence-transformers models: minilm and mpnet
glue_updates: int = 30  # full-batch updates per GLUE run; the paper ran 250
glue_sample_size: int = 1000  # IsoScore and silhouette on a fresh sample of this many items when a set is larger

# %%
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import display

from isolib.evidence import judge, save_evidence
from isolib.findings import count_line, findings_table, verdict_table, verdicts
from isolib.metrics import principal_variances
from isolib.plotting import save_figure, save_table, set_style, show_table, show_text
from isolib.project import check_output_dir
from isolib.runner import peak_memory_gib
from isolib.studies.mickus_isotropy_clusters import claims, compute, figures

started = time.perf_counter()
set_style()
check_output_dir(profile, output_dir)

# %% [markdown]
# ## The setups and Table 1

# %% tags=["nbval-check-output"]
built = compute.build_setups(setups, n_items=n_items or None, random_state=random_state, device=device)
table1 = compute.setup_table(built, full=not n_items)
evidence = {"table1": table1}  # what the claims are judged on, stored at the end
save_table(table1, output_dir, "table1")
show_table(table1)

# %% [markdown]
# ## Training the embeddings under a linear classifier

# %%
# Each seed's training is stored in the cache as it is finished: a stopped run resumes.
traces = compute.train_setups(built, n_updates=n_updates, seeds=seeds, device=device)
save_table(traces, output_dir, "traces", digits=5)
correlation_table = compute.trace_correlations(traces)  # Pearson and Spearman per setup and seed
evidence.update(traces=traces, correlations=correlation_table)
save_table(correlation_table, output_dir, "correlations")
show_table(correlation_table)

# %% [markdown]
# ## Figure 2 — IsoScore and silhouette during training

# %%
fig = figures.traces_figure(traces, len(seeds))
save_figure(fig, output_dir, "fig2_traces")
plt.show()

# %% [markdown]
# ## Figure 3 — IsoScore against silhouette

# %%
fig = figures.scatter_figure(traces, correlation_table)
save_figure(fig, output_dir, "fig3_isoscore_silhouette")
plt.show()

# %% [markdown]
# **The paper** found IsoScore falling and the silhouette rising in every setup, a strong negative
# correlation between them, a monotonically decreasing relationship, and negligible standard deviations
# across seeds (its exact values are lost in our copy of the paper).

# %% tags=["nbval-check-output"]
show_table(verdict_table(claims.trend_findings(traces, correlation_table)))

# %% [markdown]
# ## Controls (ours): shuffled labels, and no labels
#
# The trend and correlation lines above show that training moves both metrics; they cannot show what in
# the training does it. Two controls, run at the same protocol as their setup: the same training on
# **shuffled labels** (a permutation of the labels, one per seed: the classes keep their sizes but carry
# nothing of the vectors), with the silhouette measured against the shuffled labels and against the true
# ones; and a **label-free** objective (every item's target uniform over the classes: the same probe, loss
# and optimiser, no label; the simplest objective that still moves the vectors — no update at all would
# leave both metrics constant by construction). Their metrics are recorded every `control_every` updates: the
# training is the same, and each is judged on its claim's line by the same rule, on every recorded value. **The paper's argument predicts** (Section 2.3: any linear
# classifier pulls its points into the clusters of the labels it is trained on) that the shuffled run behaves
# like the true one against its own labels — IsoScore falls, the silhouette against the shuffled labels
# rises — while the silhouette against the true labels does not rise, and that the label-free run moves
# neither. If both predictions hold, the lines above test the geometry of linear classification, which is
# the paper's claim, and say nothing about the labels' content.

# %%
control_started = time.perf_counter()
controls = compute.run_controls([setup for key, setup in zip(setups, built) if key in control_setups],
                                n_updates=n_updates, seeds=seeds, every=control_every, device=device)
control_minutes = (time.perf_counter() - control_started) / 60
save_table(controls, output_dir, "controls", digits=5)
control_correlations = compute.shuffled_correlations(controls)  # against the labels they were trained on
evidence.update(controls=controls, control_correlations=control_correlations)
if len(controls):
    fig = figures.controls_figure(traces, controls, len(seeds))
    save_figure(fig, output_dir, "fig_controls")
    plt.show()

# %% tags=["nbval-check-output"]
if len(controls):
    display(show_table(verdict_table(claims.control_findings(controls, control_correlations))))

# %% [markdown]
# ## Section 2 made concrete
#
# Four synthetic clusters in 16 dimensions with fixed centres, their members drawn ever closer to the
# centres: the silhouette should rise and IsoScore fall. Then the identity the argument rests on: the
# variance along each principal axis, written from pairwise squared distances (Zhang et al. 2012),
# equals IsoScore's variance vector (`isolib.metrics.principal_variances`).

# %%
demo = compute.tightening_demo(random_state=random_state)
evidence["demo"] = demo
save_table(demo, output_dir, "section2_tightening")
fig, ax = plt.subplots(figsize=(5.5, 3.6))
ax.plot(demo.spread, demo.silhouette, marker="o", label="silhouette")
ax.plot(demo.spread, demo.isoscore, marker="o", label="IsoScore")
ax.set_xscale("log")
ax.invert_xaxis()
ax.set_xlabel("spread of each cluster (tighter to the right)")
ax.set_ylabel("IsoScore, silhouette")
ax.legend()
ax.set_title("Tightening clusters")
save_figure(fig, output_dir, "fig_section2")
plt.show()
show_text(verdicts([claims.section2_finding(demo)]))

# %% tags=["nbval-check-output"]
sample = built[0].X[np.random.default_rng(random_state).choice(len(built[0].X), 300, replace=False)]
identity = pd.DataFrame({"from_distances": compute.variance_from_distances(sample),
                         "isoscore_vector": principal_variances(sample)})
save_table(identity, output_dir, "variance_identity", digits=8)
# The difference is float64 rounding, whose digits change with the CPU's instruction set: the line
# nbval checks says it is below 1e-12 and prints it only when it is not.
largest_difference = np.abs(identity.from_distances - identity.isoscore_vector).max()
print(f"Largest difference between the two variance vectors on 300 {built[0].name} vectors: "
      f"{'below 1e-12' if largest_difference < 1e-12 else f'{largest_difference:.1e}, above 1e-12'} "
      f"(largest variance {identity.isoscore_vector.max():.2e})")

# %% [markdown]
# ## Appendix A — GLUE training sets
#
# The same optimisation on the GLUE training sets, one trainable vector per unique sentence (items that
# repeat a sentence share it), single sentences classified from their vector and pairs from [u; v], a
# linear layer with bias. The paper ran every GLUE classification task with a training set under three
# models; **`appendix_a`** lists the 24 pairs, each run here or not and why. **Table 2** checks our items
# and parameters against the paper's; our MRPC is the original train file (4,076 pairs), of which GLUE's
# train split keeps 3,668, so its counts differ by construction.

# %% tags=["nbval-check-output"]
appendix = compute.appendix_a_plan(glue_tasks, glue_models)
evidence["appendix"] = appendix
save_table(appendix, output_dir, "appendix_a")
show_table(appendix)

# %% tags=["nbval-check-output"]
glue_built = compute.build_glue_setups(glue_tasks, glue_models, n_items=n_items or None, random_state=random_state,
                                       device=device)
table2 = compute.glue_table(glue_built, full=not n_items)
evidence["table2"] = table2
save_table(table2, output_dir, "table2")
table2

# %%
glue_traces = compute.train_setups(glue_built.values(), n_updates=glue_updates, seeds=seeds,
                                   sample_size=glue_sample_size, device=device)
save_table(glue_traces, output_dir, "glue_traces", digits=5)
glue_correlations = compute.trace_correlations(glue_traces)
evidence.update(glue_traces=glue_traces, glue_correlations=glue_correlations)
# Table 3: the mean and the weakest (largest) correlation over seeds, per task and model.
table3 = (glue_correlations.groupby("setup", sort=False)[["pearson", "spearman"]].apply(claims.correlation_summary)
          .reset_index() if len(glue_correlations) else pd.DataFrame())
save_table(table3, output_dir, "table3")
table3.round(3)

# %%
if len(glue_traces):
    fig = figures.glue_figure(glue_traces, glue_tasks, glue_models, len(seeds))
    save_figure(fig, output_dir, "fig4_glue")
    plt.show()

# %% tags=["nbval-check-output"]
if len(glue_traces):
    display(show_table(verdict_table(claims.trend_findings(glue_traces, glue_correlations, appendix=True))))

# %% [markdown]
# ## Results against the paper

# %% tags=["nbval-check-output"]
elapsed_minutes = (time.perf_counter() - started) / 60
peak_gib = peak_memory_gib()
evidence["run"] = {
    "profile": profile, "n_items": n_items, "n_updates": n_updates, "seeds": seeds, "control_every": control_every,
    "control_minutes": control_minutes, "glue_tasks": glue_tasks, "glue_models": glue_models,
    "glue_updates": glue_updates, "glue_sample_size": glue_sample_size, "wall_minutes": elapsed_minutes,
    "peak_gib": peak_gib}
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
# **Exercise 1.** When does the silhouette overtake IsoScore? For each setup, find the first update at which the mean
# silhouette over seeds exceeds the mean IsoScore (in `traces`), or say that it never does. Answer with the
# dict `first_update`: for each setup, that update, or `None` where there is none.

# %% nbgrader={"grade": false, "grade_id": "exercise_1", "locked": false, "schema_version": 3, "solution": true} tags=["nbval-check-output"]
### BEGIN SOLUTION
means = traces.groupby(["setup", "update"], sort=False)[["isoscore", "silhouette"]].mean().reset_index()
first_update = {}
for setup, run in means.groupby("setup", sort=False):
    above = run["update"][run.silhouette > run.isoscore]
    first_update[setup] = above.min() if len(above) else None
    print(f"{setup}: " + (f"from update {above.min()}" if len(above) else "never in this run"))
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "exercise_1_test", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Exercise 1: the first update at which the mean silhouette exceeds the mean IsoScore, per setup.
assert sorted(first_update) == sorted(traces.setup.unique()), "one entry per setup"
### BEGIN HIDDEN TESTS
for setup_name, update in first_update.items():
    by_update = traces[traces.setup == setup_name].groupby("update")[["isoscore", "silhouette"]].mean()
    ahead = by_update.index[by_update.silhouette > by_update.isoscore]
    assert update == (ahead.min() if len(ahead) else None), setup_name
### END HIDDEN TESTS

# %% [markdown]
# **Exercise 2.** Both scores ignore the scale of the points and any rotation of them. Check it on 1,000
# initial vectors of the first setup that has one vector per item (not SNLI's pairs): their IsoScore
# and silhouette as they are, times 3, and after a random rotation. Answer with the vectors as they are in
# `vectors`, and the table `invariance`: rows `as they are`, `times 3` and `rotated`, columns `IsoScore` and
# `silhouette`.

# %% nbgrader={"grade": false, "grade_id": "exercise_2", "locked": false, "schema_version": 3, "solution": true} tags=["nbval-check-output"]
from isolib.metrics import isoscore, silhouette

### BEGIN SOLUTION
setup = next(candidate for candidate in built if candidate.item_index is None)
generator = np.random.default_rng(random_state)
rows = generator.choice(len(setup.X), min(1000, len(setup.X)), replace=False)
vectors = setup.X[rows].astype(np.float64)
labels = np.unique(setup.y[rows], axis=0, return_inverse=True)[1].ravel()  # one label per distinct label vector
rotation, _ = np.linalg.qr(generator.standard_normal((vectors.shape[1], vectors.shape[1])))
clouds = {"as they are": vectors, "times 3": 3 * vectors, "rotated": vectors @ rotation}
invariance = pd.DataFrame({"IsoScore": [isoscore(cloud) for cloud in clouds.values()],
                           "silhouette": [silhouette(cloud, labels) for cloud in clouds.values()]}, index=list(clouds))
for name, scores in invariance.iterrows():
    print(f"{setup.name}, {name:>11}: IsoScore {scores['IsoScore']:.4f}, silhouette {scores['silhouette']:.4f}")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "exercise_2_test", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Exercise 2: IsoScore and silhouette of the same vectors as they are, times 3 and rotated.
assert list(invariance.index) == ["as they are", "times 3", "rotated"], "one row per version of the vectors, in order"
assert {"IsoScore", "silhouette"} <= set(invariance.columns), "invariance needs the columns IsoScore and silhouette"
### BEGIN HIDDEN TESTS
one_per_item = next(candidate for candidate in built if candidate.item_index is None)
as_drawn = np.asarray(vectors, dtype=np.float64)
assert as_drawn.shape == (min(1000, len(one_per_item.X)), one_per_item.X.shape[1]), "1,000 vectors of that setup"
known = {row.tobytes() for row in one_per_item.X.astype(np.float64)}
assert all(row.tobytes() in known for row in as_drawn), f"vectors are not initial vectors of {one_per_item.name}"
assert np.isclose(invariance.loc["as they are", "IsoScore"], isoscore(as_drawn)), "IsoScore of the vectors"
scores_of = invariance[["IsoScore", "silhouette"]].to_numpy(float)
assert np.allclose(scores_of, scores_of[0], rtol=1e-6), "scaling and rotation change neither score"
### END HIDDEN TESTS

# %% [markdown]
# **Exercise 3.** Read Figure 3. The paper reports a strong negative correlation between IsoScore and the silhouette
# during training; each panel of Figure 3 gives in its title the mean Pearson r and Spearman ρ over seeds. Which
# setup's panel shows the weakest relationship (the largest, least negative r), and which r does its title give?
# Answer with the setup's name as the panel's title gives it in `weakest_setup`, and that r to two decimals in
# `weakest_r`. Then look at that panel's shape and at the axes of the others: does a weak r mean a weak relationship,
# and a strong r a large change?

# %% nbgrader={"grade": false, "grade_id": "exercise_3", "locked": false, "schema_version": 3, "solution": true} tags=["nbval-check-output"]
### BEGIN SOLUTION
# Read off Figure 3's titles; they are the means of correlation_table's Pearson r per setup.
mean_r = correlation_table.groupby("setup", sort=False).pearson.mean()
weakest_setup, weakest_r = mean_r.idxmax(), round(float(mean_r.max()), 2)
print(f"Weakest relationship in Figure 3: {weakest_setup}, r = {weakest_r:.2f}")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "exercise_3_test", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Exercise 3: the setup of Figure 3 whose title gives the largest r, and that r.
assert weakest_setup in set(traces.setup), "weakest_setup is one of the setups, named as in Figure 3's titles"
assert -1 <= weakest_r <= 1, "weakest_r is a correlation"
### BEGIN HIDDEN TESTS
titles_r = {name: run.pearson.mean() for name, run in correlation_table.groupby("setup")}
assert weakest_setup == max(titles_r, key=titles_r.get), "not the panel with the largest r"
assert abs(weakest_r - titles_r[weakest_setup]) < 0.0051, "not the r of that panel's title, to two decimals"
### END HIDDEN TESTS

# %% [markdown]
# **Exercise 4.** The steadiness claim (the paper's "monotonically decreasing relationship") is reproduced when,
# mean over seeds, IsoScore falls and the silhouette rises in more than 95% of the updates each (per seed, the
# less steady of the two): our threshold, `claims.MONOTONE_THRESHOLD`, as the paper gives none. Would a laxer 90%
# change any verdict? Re-judge every setup with the study's own functions: `claims.seed_monotonicity` gives each
# seed's share of updates that move the expected way, and `threshold(value, above=...)` (from `isolib.findings`,
# imported below) the rule, in its `passed`. Answer with the dict `steady_at_90`, for each setup whether the claim
# is reproduced at 90% (`True` or `False`), and the list `changed` of the setups whose verdict at 90% differs from
# the one at 95%. Is a verdict that changes a finding or a choice of threshold?

# %% nbgrader={"grade": false, "grade_id": "exercise_4", "locked": false, "schema_version": 3, "solution": true} tags=["nbval-check-output"]
from isolib.findings import threshold

### BEGIN SOLUTION
steady_at_90, changed = {}, []
for setup_name, run in traces.groupby("setup", sort=False):
    falling = claims.seed_monotonicity(run, "isoscore", rising=False).share
    rising = claims.seed_monotonicity(run, "silhouette", rising=True).share
    steady = np.minimum(falling, rising).mean()
    steady_at_90[setup_name] = threshold(steady, above=0.90).passed
    if steady_at_90[setup_name] != threshold(steady, above=claims.MONOTONE_THRESHOLD).passed:
        changed.append(setup_name)
    print(f"{setup_name}: steady in {steady:.1%} of updates, "
          f"{'reproduced' if steady_at_90[setup_name] else 'not reproduced'} at 90%")
print(f"Verdicts that change at 90%: {', '.join(changed) or 'none'}")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "exercise_4_test", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Exercise 4: the steadiness claim re-judged at 90%, and the setups whose verdict changes.
assert sorted(steady_at_90) == sorted(traces.setup.unique()), "one entry per setup"
assert set(changed) <= set(steady_at_90), "changed lists setups"
### BEGIN HIDDEN TESTS
for setup_name, run in traces.groupby("setup"):
    per_seed = [min(claims.monotonicity(seed_run.sort_values("update").isoscore, rising=False)[0],
                    claims.monotonicity(seed_run.sort_values("update").silhouette, rising=True)[0])
                for _, seed_run in run.groupby("seed")]
    at_90, at_95 = np.mean(per_seed) > 0.90, np.mean(per_seed) > claims.MONOTONE_THRESHOLD
    assert steady_at_90[setup_name] == at_90, f"{setup_name} at 90%"
    assert (setup_name in changed) == (at_90 != at_95), setup_name
assert len(changed) == len(set(changed)), "each setup once"
### END HIDDEN TESTS

# %% [markdown]
# **Exercise 5.** IsoScore by hand. With numpy alone, compute the IsoScore of the first setup's initial vectors
# (`built[0].X`, the vectors before any update) as Rudman et al. define it, with `n` the dimension: centre the points;
# the variance along each of their principal axes (the eigenvalues of their covariance matrix) is the vector `S`;
# normalise it to `Ŝ = √n S / ‖S‖`; the isotropy defect is `δ = ‖Ŝ − 1‖ / √(2 (n − √n))`; then
# `k = (n − δ² (n − √n))² / n` and IsoScore `= (k − 1) / (n − 1)`. Compare your value with isolib's `isoscore` of
# the same vectors and with the IsoScore that `traces` recorded for that setup before the first update. Answer with
# your value in `my_isoscore`.

# %% nbgrader={"grade": false, "grade_id": "exercise_5", "locked": false, "schema_version": 3, "solution": true} tags=["nbval-check-output"]
### BEGIN SOLUTION
points = built[0].X.astype(np.float64)
centred = points - points.mean(axis=0)
variances = np.clip(np.linalg.eigvalsh(centred.T @ centred / (len(points) - 1)), 0, None)
n = points.shape[1]
normalised = np.sqrt(n) * variances / np.linalg.norm(variances)
defect = np.linalg.norm(normalised - 1) / np.sqrt(2 * (n - np.sqrt(n)))
k = (n - defect**2 * (n - np.sqrt(n))) ** 2 / n
my_isoscore = float((k - 1) / (n - 1))
before = traces[(traces.setup == built[0].name) & (traces["update"] == 0)].isoscore.mean()
print(f"{built[0].name}: IsoScore by hand {my_isoscore:.4f}, isolib {isoscore(points):.4f}, "
      f"recorded before the first update {before:.4f}")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "exercise_5_test", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Exercise 5: IsoScore of the first setup's initial vectors, computed by hand.
assert 0 <= my_isoscore <= 1, "IsoScore lies between 0 and 1"
### BEGIN HIDDEN TESTS
assert abs(my_isoscore - isoscore(built[0].X)) < 1e-6, "not the IsoScore of built[0].X"
recorded = traces.loc[(traces.setup == built[0].name) & (traces["update"] == traces["update"].min()), "isoscore"]
assert np.allclose(my_isoscore, recorded, atol=1e-5), "not the IsoScore recorded before the first update"
### END HIDDEN TESTS

# %% [markdown]
# **Exercise 6.** Apply the control. The paper reads IsoScore's fall and the silhouette's rise as what training
# for the labels does. The shuffled-label runs in `controls` train the same vectors on labels that carry nothing of
# them. For each setup with controls, compute by the claims' own rule (`claims.seed_changes`, towards the bound in
# `claims.BOUNDS`, mean over seeds) how far IsoScore fell and how far the silhouette against the true labels rose,
# in the run on the true labels (`traces`) and in the run on shuffled labels (`controls`; its silhouette against the
# true labels is `silhouette_true`). A measure tells the two runs apart when the rule, more than
# `claims.EFFECT_THRESHOLD` of the way, passes in one run and fails in the other. Answer with the table
# `control_effects`, one row per setup and run, with the columns `setup`, `run` (`"true labels"` or
# `"shuffled labels"`), `isoscore` and `silhouette` (the two mean changes), and the dict `tells_apart`: for each
# setup, the list of the measures (`"isoscore"`, `"silhouette"`) that tell the runs apart. What does IsoScore's
# fall alone show about the labels?

# %% nbgrader={"grade": false, "grade_id": "exercise_6", "locked": false, "schema_version": 3, "solution": true} tags=["nbval-check-output"]
### BEGIN SOLUTION
effects = []
for setup_name in controls.setup.unique():
    shuffled = controls[(controls.setup == setup_name) & (controls.control == "shuffled labels")]
    runs = {"true labels": traces[traces.setup == setup_name],
            "shuffled labels": shuffled.rename(columns={"silhouette_true": "silhouette"})}
    for run_name, run in runs.items():
        effects.append({"setup": setup_name, "run": run_name, **{
            metric: claims.seed_changes(run, metric, bound=claims.BOUNDS[metric]).mean()
            for metric in ("isoscore", "silhouette")}})
control_effects = pd.DataFrame(effects, columns=["setup", "run", "isoscore", "silhouette"])
tells_apart = {setup_name: [metric for metric in ("isoscore", "silhouette")
                            if (pair[metric] > claims.EFFECT_THRESHOLD).nunique() == 2]
               for setup_name, pair in control_effects.groupby("setup", sort=False)}
for row in control_effects.itertuples():
    print(f"{row.setup}, {row.run}: IsoScore {row.isoscore:.1%} of the way to 0, "
          f"silhouette against the true labels {row.silhouette:.1%} of the way to 1")
print(f"Told apart: {tells_apart}")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "exercise_6_test", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Exercise 6: each measure's change in the true-label and the shuffled-label runs, and which measures tell them apart.
assert sorted(tells_apart) == sorted(controls.setup.unique()), "one entry per setup with controls"
assert {"setup", "run", "isoscore", "silhouette"} <= set(control_effects.columns), "the columns of control_effects"
assert len(control_effects) == 2 * len(tells_apart), "two runs per setup"
### BEGIN HIDDEN TESTS
def mean_change(table, column, bound):
    ends = table.sort_values("update").groupby("seed")[column].agg(["first", "last"])
    return ((ends["last"] - ends["first"]) / (bound - ends["first"])).mean()


for setup_name in controls.setup.unique():
    control_run = controls[(controls.setup == setup_name) & (controls.control == "shuffled labels")]
    expected = {"true labels": (mean_change(traces[traces.setup == setup_name], "isoscore", 0.0),
                                mean_change(traces[traces.setup == setup_name], "silhouette", 1.0)),
                "shuffled labels": (mean_change(control_run, "isoscore", 0.0),
                                    mean_change(control_run, "silhouette_true", 1.0))}
    for run_name, values in expected.items():
        row = control_effects[(control_effects.setup == setup_name) & (control_effects.run == run_name)]
        assert len(row) == 1 and np.allclose(row[["isoscore", "silhouette"]].to_numpy(float), values), \
            f"{setup_name}, {run_name}"
    passing = np.array(list(expected.values())) > claims.EFFECT_THRESHOLD
    apart = {metric for metric, column in zip(("isoscore", "silhouette"), passing.T) if column[0] != column[1]}
    assert set(tells_apart[setup_name]) == apart and len(tells_apart[setup_name]) == len(apart), setup_name
### END HIDDEN TESTS
