"""Notebook 01's figures whose code is long: the four panels of Figure 4 (MEV), and the table they draw from.

The per-layer figures 1-3 are one call each to :func:`isolib.plotting.per_layer_figure` in the notebook, on
the table of :func:`by_view`.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from isolib.plotting import plot_per_layer, save_figure
from isolib.views import View

__all__ = ["by_view", "mev_figure"]

# Figure 4's panels: the measure, its axis label and the panel's title.
MEV_PANELS = [("mev_adjusted", "MEV − baseline", "(a) uncentred (the paper's formula)"),
              ("mev_centred_adjusted", "MEV − baseline", "(b) centred word and baseline"),
              ("mev_authors_adjusted", "MEV − baseline", "(c) centred word − uncentred baseline\n(the authors' code)"),
              ("mev_below_baseline", "share of words", "(d) words whose raw MEV is below the baseline")]


def by_view(per_layer: pd.DataFrame) -> pd.DataFrame:
    """``per_layer`` for the figures: ``model`` the model alone (one colour each) and ``view`` its first
    position (one line style each: ``keep``, ``start_token``, ``drop``)."""
    views = per_layer.model.map(View.parse)
    return per_layer.assign(model=[view.model for view in views], view=[view.first_position for view in views])


def mev_figure(plotted: pd.DataFrame, output_dir: str | Path):
    """Figure 4: MEV adjusted three ways and the share of words below the baseline, per layer, saved as ``fig4_mev``.

    Parameters
    ----------
    plotted : pandas.DataFrame
        :func:`by_view` of the ``per_layer`` evidence.
    output_dir : str or Path

    Returns
    -------
    matplotlib Figure
    """
    # Two by two: four panels in a row are too narrow to read at JupyterLab's width.
    fig, axes = plt.subplots(2, 2, figsize=(12, 8), constrained_layout=True)
    axes = axes.ravel()
    for ax, (measure, ylabel, title) in zip(axes, MEV_PANELS):
        plot_per_layer(plotted, measure, ax=ax, ylabel=ylabel, style="view")
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_xlabel("relative depth (0 = input embeddings)")
        ax.set_title(title, fontsize="medium")
    axes[0].axhline(0.05, color="black", ls=":", lw=1, label="0.05 (the paper's bound)")
    # One legend outside the panels, so that no line is hidden behind it.
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncol=5, fontsize="small")
    for ax in axes:
        ax.get_legend().remove()
    axes[3].set_ylim(-0.02, max(0.1, 1.1 * plotted.mev_below_baseline.max()))
    fig.suptitle("Figure 4: maximum explainable variance per layer")
    save_figure(fig, output_dir, "fig4_mev")
    return fig
