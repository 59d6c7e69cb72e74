"""Notebook 05's larger figures: every measure per layer, what moves each measure, the rogue coordinates.

Each function draws one figure from the study's tables and returns it; the notebook saves and shows it.
The agreement heatmap, a few lines, stays in the notebook.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from isolib.plotting import plot_per_layer
from isolib.studies.every_measure.settings import (
    CHANGES,
    LABELS,
    MEASURE_NAMES,
    MEASURES,
    TOP_COORDINATES,
)

__all__ = ["VIEW_NAMES", "measures_figure", "sensitivity_figure", "rogue_figure"]

# How the legends name a view of a model's first position.
VIEW_NAMES = {"keep": "as the papers", "start_token": "start token", "drop": "position 0 dropped"}


def measures_figure(measures: pd.DataFrame, *, spaces, static_baseline: str, title: str) -> plt.Figure:
    """Every measure per relative depth, one panel each, the static embedding as a dotted line.

    Parameters
    ----------
    measures : pandas.DataFrame
        :func:`~isolib.studies.every_measure.tables.cell_table`.
    spaces : sequence of str
        The contextual spaces drawn as curves (the static one is drawn as a line).
    static_baseline : str
        The static embedding's space ("" for none).
    title : str
    """
    contextual = measures[measures.space.isin(spaces)].assign(view=lambda table: table.view.map(VIEW_NAMES))
    fig, axes = plt.subplots(3, 4, figsize=(16, 11.5), constrained_layout=True)
    for ax, measure in zip(axes.flat, MEASURES):
        column = "log10_iw" if measure.name == "iw" else measure.name
        plot_per_layer(contextual, column, ax=ax, model="model", style="view")
        ax.set_ylabel("log10 I(W)" if measure.name == "iw" else "")
        if static_baseline:
            ax.axhline(measures.loc[measures.space == static_baseline, column].iloc[0], color="black", ls=":", lw=1.2,
                       label=f"{static_baseline} (static)")
        ax.set_title(f"{measure.label}\n({'higher' if measure.isotropic == 'high' else 'lower'} is more isotropic)",
                     fontsize="medium")
        ax.set_xlabel("relative depth" if ax in axes[-1] else "")
        ax.get_legend().remove()
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 7), fontsize="small")
    fig.suptitle(title)
    return fig


def sensitivity_figure(sensitivity: pd.DataFrame) -> plt.Figure:
    """The median change of each measure under each change, on the isotropy scale, marked by its direction.

    Parameters
    ----------
    sensitivity : pandas.DataFrame
        :func:`~isolib.studies.every_measure.tables.sensitivity_table`.
    """
    medians = sensitivity.pivot(index="measure", columns="change", values="median").loc[list(MEASURE_NAMES),
                                                                                         list(CHANGES)]
    marks = sensitivity.pivot(index="measure", columns="change", values="direction").loc[list(MEASURE_NAMES),
                                                                                         list(CHANGES)]
    text = medians.map(lambda value: "" if pd.isna(value) else f"{value:+.2f}")
    text = text.where(marks != "unchanged", "0").where(marks != "either way", text + "?").where(medians.notna(), "n/a")
    fig, ax = plt.subplots(figsize=(15, 7.5))
    sns.heatmap(medians.rename(index=LABELS, columns=CHANGES), annot=text.to_numpy(), fmt="", cmap="vlag", center=0,
                vmin=-0.6, vmax=0.6, annot_kws={"fontsize": 8},
                cbar_kws={"label": "median change on the isotropy scale"}, linewidths=0.5, ax=ax)
    ax.grid(False)  # a blank cell stays blank
    ax.set_xticklabels(ax.get_xticklabels(), rotation=35, ha="right")
    ax.set_xlabel("")
    ax.set_ylabel("")
    ax.set_title("What moves each measure (red: towards isotropy, blue: away; 0: unchanged; ?: the interval over cells "
                 "holds 0; blank: does not apply, or undefined)", fontsize="medium")
    return fig


def rogue_figure(rogue: pd.DataFrame, by_replicate: pd.DataFrame, changed: pd.DataFrame, *, spaces,
                 static_baseline: str, anisotropic_cosine: float) -> plt.Figure:
    """Left: the share of the average cosine the top coordinates carry, against a random rotation. Right: the
    average cosine before and after removing the top coordinates and standardising.

    Parameters
    ----------
    rogue : pandas.DataFrame
        :func:`~isolib.studies.every_measure.tables.rogue_table`.
    by_replicate, changed : pandas.DataFrame
        :func:`~isolib.studies.every_measure.compute.measure_spaces`' tables.
    spaces : sequence of str
        The contextual spaces drawn as curves.
    static_baseline : str
        The static embedding's space, drawn as a line ("" for none).
    anisotropic_cosine : float
        The average cosine above which a layer is anisotropic (a grey line).
    """
    fig, (left, right) = plt.subplots(1, 2, figsize=(14, 4.5), constrained_layout=True)
    for label, group in rogue[rogue.space.isin(spaces)].groupby("space", sort=False):
        depth = group.layer / group.layer.max()
        line, = left.plot(depth, group.top_share, marker="o", label=label)
        left.fill_between(depth, group.top_share_low, group.top_share_high, color=line.get_color(), alpha=0.2)
        left.plot(depth, group.rotated_share, ls="--", color=line.get_color(), label=f"{label}, randomly rotated")
    if static_baseline:
        glove = rogue[rogue.space == static_baseline].iloc[0]
        left.axhline(glove.top_share, color="black", ls=":", label=f"{static_baseline}")
    left.axhline(0.5, color="grey", lw=0.8)
    left.set_xlabel("relative depth (layer / last layer)")
    left.set_ylabel("share of the average cosine")
    left.set_title(f"carried by the top {TOP_COORDINATES} coordinates")
    left.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(0, -0.2), ncol=2)
    before_after = changed[changed.change.isin(["centre", "standardise", "drop_top_3"])].pivot_table(
        index=["space", "layer"], columns="change", values="average_cosine")
    raw = by_replicate.groupby(["space", "layer"]).average_cosine.mean()
    for label in spaces:
        depth = raw[label].index / raw[label].index.max()
        line, = right.plot(depth, raw[label], marker="o", label=f"{label}: raw")
        right.plot(depth, before_after.loc[label, "drop_top_3"], ls="--", color=line.get_color(),
                   label=f"{label}: top 3 coordinates removed")
        right.plot(depth, before_after.loc[label, "standardise"], ls=":", marker="x", color=line.get_color(),
                   label=f"{label}: standardised")
    right.axhline(anisotropic_cosine, color="grey", lw=0.8)
    right.set_xlabel("relative depth (layer / last layer)")
    right.set_ylabel("average cosine")
    right.set_title(f"the average cosine (grey: {anisotropic_cosine}, anisotropic above)")
    right.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(0, -0.2), ncol=2)
    return fig
