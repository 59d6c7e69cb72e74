"""The longer figures of notebook 03, each drawn from a table the notebook shows (nothing is computed here).

* :func:`comparisons_figure` -- each method against its control, with the paired interval;
* :func:`layers_figure` -- I(W), IsoScore and the length of the token vectors per layer;
* :func:`sweep_figure` -- Spearman over the grid of k and n_pc, the paper's setting outlined;
* :func:`cls_figure` -- the [CLS] geometry per layer after fine-tuning.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from isolib.plotting import panel_grid

__all__ = ["comparisons_figure", "layers_figure", "sweep_figure", "cls_figure"]


def comparisons_figure(compared: pd.DataFrame):
    """The proposed method against the pre-trained vectors and against the best other row, one panel each.

    Parameters
    ----------
    compared : pandas.DataFrame
        :func:`isolib.studies.rajaee_cluster_isotropy.summaries.compare_methods`, datasets by their labels.
    """
    shown = compared[compared.comparison.isin(["proposed vs pre-trained", "proposed vs best other"])]
    fig, axes = plt.subplots(1, 2, figsize=(12, 0.35 * shown.groupby("comparison").size().max() + 1.8), sharey=True,
                             constrained_layout=True)
    for ax, (name, rows) in zip(axes, shown.groupby("comparison", sort=False)):
        names = rows.model + ", " + rows.dataset
        ax.errorbar(rows.difference, names, xerr=[rows.difference - rows.low, rows.high - rows.difference], fmt="o",
                    color="black", ecolor="grey", capsize=3)
        ax.axvline(0, color="grey", lw=0.8)
        ax.set_title(name)
        ax.set_xlabel("Spearman × 100: proposed minus control (95% interval)")
    axes[0].invert_yaxis()
    fig.suptitle("The proposed method against its controls, paired over sentence pairs and seeds")
    return fig


def layers_figure(every_sentence: pd.DataFrame, title: str, *, i_w_floor: float = 1e-30):
    """I(W), IsoScore and the mean length of a token vector per layer, a line per model (view).

    Parameters
    ----------
    every_sentence : pandas.DataFrame
        :func:`isolib.studies.rajaee_cluster_isotropy.compute.layer_isotropy` rows on every sentence, with ``model``.
    title : str
    i_w_floor : float
        Long hidden states drive I(W) towards 0 (exp(uᵀw) overflows); below this it is drawn at the floor.
    """
    fig, axes = plt.subplots(1, 3, figsize=(15, 3.8), constrained_layout=True)
    for ax, (measure, name) in zip(axes, (("i_w", f"I(W) (log scale; below {i_w_floor:g} drawn at it)"),
                                          ("isoscore", "IsoScore"),
                                          ("mean_norm", "mean length of a token vector (log scale)"))):
        for label, rows in every_sentence.groupby("model", sort=False):
            values = rows[measure].clip(lower=i_w_floor) if measure == "i_w" else rows[measure]
            ax.plot(rows.layer, values, marker="o", label=label)
        ax.set_title(name)
        ax.set_xlabel("layer (0 = input embeddings)")
        if measure != "isoscore":
            ax.set_yscale("log")
    axes[0].legend(fontsize="small")
    fig.suptitle(title)
    return fig


def sweep_figure(grid: pd.DataFrame, dataset_label: str):
    """Spearman of the proposed method over k and n_pc, a heat map per model (view), the paper's setting outlined.

    Parameters
    ----------
    grid : pandas.DataFrame
        :func:`isolib.studies.rajaee_cluster_isotropy.summaries.grid_summary`.
    dataset_label : str
        The grid's dataset as the slides name it.
    """
    fig, axes = panel_grid(grid.model.nunique(), panel_size=(6, 4))
    for ax, (label, points) in zip(axes, grid.groupby("model", sort=False)):
        table = points.pivot(index="n_clusters", columns="n_pc", values="spearman")
        sns.heatmap(table, annot=True, fmt=".1f", cmap="viridis", ax=ax, cbar_kws={"label": "Spearman × 100"})
        paper_k, paper_n_pc = int(points.paper_k.iloc[0]), int(points.paper_n_pc.iloc[0])
        if paper_k in table.index and paper_n_pc in table.columns:
            ax.add_patch(plt.Rectangle((list(table.columns).index(paper_n_pc), list(table.index).index(paper_k)),
                                       1, 1, fill=False, edgecolor="red", lw=2))
        ax.set_title(f"{label}, {dataset_label}\n(paper's setting k = {paper_k}, n_pc = {paper_n_pc})",
                     fontsize="medium")
    fig.suptitle("K-means + Mean + PCA over k and n_pc")
    return fig


def cls_figure(cls_table: pd.DataFrame, tasks, model: str):
    """I(W), IsoScore and ||mean|| / mean ||[CLS]|| of the dev [CLS] vectors per layer, a row per task.

    Parameters
    ----------
    cls_table : pandas.DataFrame
        [CLS] geometry rows with ``task``, ``model`` and ``seed``
        (:func:`isolib.studies.rajaee_cluster_isotropy.finetuning.finetune_task`).
    tasks : sequence of str
    model : str
        The fine-tuned encoder, for the title.
    """
    fig, axes = plt.subplots(len(tasks), 3, figsize=(15, 3.6 * len(tasks)), squeeze=False, constrained_layout=True)
    for row, task in zip(axes, tasks):
        table = cls_table[cls_table.task == task]
        for ax, measure, title in zip(row, ("i_w", "isoscore", "mean_ratio"),
                                      ("I(W) (log scale)", "IsoScore", "||mean|| / mean ||[CLS]||")):
            for color, (name, runs) in zip(sns.color_palette(), table[~table.processed].groupby("model", sort=False)):
                for number, (_, run) in enumerate(runs.groupby("seed", sort=False, dropna=False)):  # a line per seed
                    ax.plot(run.layer, run[measure], marker="o", color=color, alpha=0.8,
                            label=name if number == 0 else None)
            done = table[table.processed]
            ax.scatter(done.layer, done[measure], marker="*", s=160, color="black", zorder=3,
                       label="with the method, as the classifier saw it")
            ax.set_title(f"{task.upper()}: {title}")
            ax.set_xlabel("layer (ours; 0 = input embeddings, left out)")
            if measure == "i_w":
                ax.set_yscale("log")
        row[0].legend(fontsize=8)
    fig.suptitle(f"[CLS] vectors of the dev pairs, per layer ({model}; one line per fine-tuning seed)")
    return fig
