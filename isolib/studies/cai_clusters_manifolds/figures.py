"""Notebook 02's long figures: the per-layer measures, the PCA panels, the LID per layer.

Each function draws from tables and coordinates the notebook already holds; the notebook saves and
shows the figure. The short plot of LID against the number of points stays in the notebook.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from isolib.plotting import plot_per_layer, plot_points
from isolib.views import View

__all__ = ["sample_points", "percentile_limits", "by_model_and_view", "initial_look", "cluster_panel",
           "cluster_isotropy", "swiss_roll_row", "symbols_row", "lid_per_layer"]


def sample_points(draw: np.random.Generator, n: int, n_points: int) -> np.ndarray:
    """Sorted indices of ``n_points`` of ``n`` points (all of them if fewer), drawn without replacement."""
    return np.sort(draw.choice(n, size=min(n_points, n), replace=False))


def percentile_limits(ax, coordinates) -> None:
    """Axis limits from the 0.5th-99.5th percentiles of ``coordinates``, 5% beyond: a few far tokens (the
    attention sink) would squash everything else."""
    for limits, axis in zip(np.percentile(coordinates, [0.5, 99.5], axis=0).T, (ax.set_xlim, ax.set_ylim)):
        axis(limits[0] - 0.05 * np.ptp(limits), limits[1] + 0.05 * np.ptp(limits))


def by_model_and_view(per_layer: pd.DataFrame) -> pd.DataFrame:
    """``per_layer`` with ``model`` as "model, corpus" and ``view`` as the view of it (``keep``, ``start_token``,
    "..., symbols kept"): lines of one model's views share a colour and differ in style, so overlapping views
    stay visible."""
    views = per_layer.model.map(View.parse)
    return per_layer.assign(view=views.map(lambda view: view.first_position + (", symbols kept" if view.symbols_kept
                                                                                else "")),
                            model=views.map(lambda view: view.model) + ", " + per_layer.corpus)


def _legend_below(fig, axes, ncol: int, handles=None) -> None:
    """One legend under the panels (the first panel's entries, or ``handles``), the panels' own removed."""
    fig.legend(*(handles or axes[0].get_legend_handles_labels()), loc="outside lower center", ncol=ncol,
               fontsize="small")
    for ax in axes:
        ax.get_legend().remove()


def initial_look(plotted: pd.DataFrame):
    """The paper's "initial look at anisotropy": S_inter and S_intra per layer.

    ``plotted`` is :func:`by_model_and_view` of the per-layer table.
    """
    fig, axes = plt.subplots(1, 2, figsize=(13, 4), constrained_layout=True)
    for ax, (measure, title) in zip(axes, [("s_inter", "S_inter: different types"), ("s_intra", "S_intra: same type")]):
        plot_per_layer(plotted, measure, ax=ax, ylabel="mean cosine", style="view")
        ax.set_title(title)
        ax.set_ylim(-0.05, 1.02)
        ax.axhline(0, color="grey", lw=0.8)
    _legend_below(fig, axes, 4)
    fig.suptitle("Initial look: cosine between types and within types")
    return fig


def cluster_panel(ax, coordinates, explained, clusters, positions, title: str) -> None:
    """One 2-D PCA view coloured by k-means cluster, window-first tokens (a decoder's sink) crossed in black.

    Parameters
    ----------
    ax : matplotlib Axes
    coordinates : ndarray of shape (n_points, 2)
        The points drawn.
    explained : ndarray of shape (2,)
        Share of the variance of each component.
    clusters, positions : ndarray of shape (n_points,)
        Their cluster and window position.
    title : str
    """
    plot_points(ax, coordinates, clusters, categorical=True)
    ax.scatter(*coordinates[positions == 0].T, marker="x", color="black", s=12, linewidths=0.8,
               label="window position 0")
    ax.set_title(title, fontsize="medium")
    ax.set_xlabel(f"PC1 ({explained[0]:.0%})")
    ax.set_ylabel(f"PC2 ({explained[1]:.0%})")
    percentile_limits(ax, coordinates)


def cluster_isotropy(plotted: pd.DataFrame):
    """(a) the chosen k per layer, (b) its silhouette with one std over restarts, (c) S_inter after per-cluster
    centring against global centring (grey dashes), (d) S_intra inside the clusters."""
    fig, axes = plt.subplots(1, 4, figsize=(20, 4.2), constrained_layout=True)
    panels = [("n_clusters", "chosen k", "(a) k chosen by silhouette"),
              ("silhouette", "silhouette", "(b) best silhouette (k = 1 below 0.1)"),
              ("s_inter_clusters_weighted", "mean cosine", "(c) S_inter: per-cluster vs global centring"),
              ("s_intra_clusters", "mean cosine", "(d) S_intra inside clusters")]
    for ax, (measure, ylabel, title) in zip(axes, panels):
        plot_per_layer(plotted, measure, ax=ax, ylabel=ylabel, style="view")
        ax.set_title(title, fontsize="medium")
    depth = plotted.layer / plotted.groupby("model").layer.transform("max")
    axes[0].yaxis.set_major_locator(plt.MaxNLocator(integer=True))
    # One std over restarts each way, cut at the silhouette's upper bound of 1.
    spread = np.vstack([plotted.silhouette_std, np.minimum(plotted.silhouette_std, 1 - plotted.silhouette)])
    axes[1].errorbar(depth, plotted.silhouette, yerr=spread, fmt="none", ecolor="black", elinewidth=0.8)
    axes[1].axhline(0.1, color="black", ls=":", lw=1)
    for _, group in plotted.assign(depth=depth).groupby(["model", "view"], sort=False):
        axes[2].plot(group.depth, group.s_inter_centred, color="grey", ls="--", marker=".", lw=1)
    axes[2].plot([], [], color="grey", ls="--", marker=".", label="after global centring (control)")
    for ax in axes[2:]:
        ax.axhline(0, color="grey", lw=0.8)
    _legend_below(fig, axes, 4, handles=axes[2].get_legend_handles_labels())
    fig.suptitle("Clusters and per-cluster centring")
    return fig


def swiss_roll_row(fig, n_rows: int, row: int, coordinates, explained, frequency, title: str) -> None:
    """Row ``row`` of ``n_rows``: the points' 2-D and 3-D PCA views coloured by log10 of their type's count.

    Parameters
    ----------
    fig : matplotlib Figure
    n_rows, row : int
    coordinates : ndarray of shape (n_points, 3)
        The points drawn, on 3 principal components.
    explained : ndarray of shape (3,)
    frequency : ndarray of shape (n_points,)
        Each point's colour (log10 of its type's count).
    title : str
        The 2-D panel's title.
    """
    ax = fig.add_subplot(n_rows, 2, 2 * row + 1)
    plot_points(ax, coordinates[:, :2], frequency, cmap="jet", colorbar_label="log10 type count")
    ax.set_xlabel(f"PC1 ({explained[0]:.0%})")
    ax.set_ylabel(f"PC2 ({explained[1]:.0%})")
    ax.set_title(title, fontsize="medium")
    ax3d = fig.add_subplot(n_rows, 2, 2 * row + 2, projection="3d")
    plot_points(ax3d, coordinates, frequency, cmap="jet", colorbar_label="log10 type count")
    ax3d.set_title(f"3-D ({explained.sum():.0%} of the variance on 3 PCs)", fontsize="medium")


def symbols_row(axes, coordinates, is_symbol, title: str, *, draw: np.random.Generator, n_points: int) -> None:
    """Two panels of one view: the symbol tokens, then the word tokens (``n_points`` of each drawn), over all in grey.

    Parameters
    ----------
    axes : two matplotlib Axes
    coordinates : ndarray of shape (n_tokens, 2)
    is_symbol : ndarray of bool, shape (n_tokens,)
    title : str
        The view and layer, above each panel's group.
    draw : numpy Generator
        Draws the points shown.
    n_points : int
    """
    for ax, (chosen, group) in zip(axes, [(is_symbol, "symbol tokens"), (~is_symbol, "word tokens")]):
        picked = np.flatnonzero(chosen)
        picked = np.sort(draw.choice(picked, size=min(n_points, len(picked)), replace=False))
        ax.scatter(*coordinates.T, s=1, color="lightgrey", alpha=0.3, linewidths=0, rasterized=True)
        ax.scatter(*coordinates[picked].T, s=3, color="tab:red" if group == "symbol tokens" else "tab:blue",
                   alpha=0.6, linewidths=0)
        ax.set_title(f"{title}\n{group} ({chosen.sum():,})", fontsize="medium")
        ax.set_xlabel("PC1")
        ax.set_ylabel("PC2")
        # Limits from all tokens, so a few far ones do not squash the view.
        percentile_limits(ax, coordinates)


def lid_per_layer(per_layer: pd.DataFrame):
    """The paper's Figure 9: LID per layer, Euclidean and cosine; solid true distances, dashed squared distances."""
    lid_long = per_layer.melt(id_vars=["model", "corpus", "layer"], value_name="lid", var_name="variant",
                              value_vars=["lid_euclidean", "lid_euclidean_squared", "lid_cosine", "lid_cosine_squared"])
    lid_long["distance"] = np.where(lid_long.variant.str.endswith("squared"), "squared", "true")
    lid_long["model"] = lid_long.model + ", " + lid_long.corpus  # every view its own colour; dashes: squared distances
    fig, axes = plt.subplots(1, 2, figsize=(13, 4), constrained_layout=True)
    for ax, metric in zip(axes, ["euclidean", "cosine"]):
        chosen = lid_long[lid_long.variant.str.startswith(f"lid_{metric}")]
        plot_per_layer(chosen, "lid", ax=ax, ylabel="mean LID (k = 100)", style="distance")
        ax.set_title(f"{metric} distance")
    _legend_below(fig, axes, 5)
    fig.suptitle("Figure 9: local intrinsic dimension per layer")
    return fig
