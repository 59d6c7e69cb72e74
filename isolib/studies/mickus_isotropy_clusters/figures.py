"""The figures of notebook 04 (Mickus et al. 2024): the traces (Figures 2 and 4), IsoScore against the
silhouette (Figure 3) and the controls beside the paper's runs.

Each function draws from the evidence tables and returns the figure; the notebook saves and shows it.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import pandas as pd

from isolib.plotting import panel_grid, plot_mean_band
from isolib.studies.mickus_isotropy_clusters.settings import LABEL_FREE, SHUFFLED

__all__ = ["METRIC_COLOURS", "traces_figure", "scatter_figure", "controls_figure", "glue_figure"]

# The legend's names of the metrics, and their colours.
METRIC_COLOURS = {"IsoScore": "tab:blue", "silhouette": "tab:orange"}
_AS_SHOWN = {"isoscore": "IsoScore"}
TRUE_RUN = "true labels (the paper's run)"


def traces_figure(traces: pd.DataFrame, n_seeds: int):
    """Figure 2: IsoScore and the silhouette after every update, mean ± std over seeds, one panel per setup."""
    names = list(dict.fromkeys(traces.setup))
    fig, axes = panel_grid(len(names), panel_size=(6, 3.8))  # two panels per row keep four setups legible
    for ax, name in zip(axes, names):
        plot_mean_band(ax, traces[traces.setup == name].rename(columns=_AS_SHOWN), "update", METRIC_COLOURS)
        ax.set_title(name, fontsize="medium")
        ax.set_ylabel("IsoScore, silhouette")
        ax.legend()
    fig.suptitle(f"Figure 2: IsoScore and silhouette, mean ± std over {n_seeds} seeds")
    return fig


def scatter_figure(traces: pd.DataFrame, correlations: pd.DataFrame):
    """Figure 3: IsoScore against the silhouette, coloured by update, with the mean Pearson and Spearman per setup."""
    names = list(dict.fromkeys(traces.setup))
    fig, axes = panel_grid(len(names), panel_size=(5.5, 4))
    for ax, name in zip(axes, names):
        run = traces[traces.setup == name]
        points = ax.scatter(run.silhouette, run.isoscore, c=run["update"], cmap="viridis", s=6)
        mean_r = correlations[correlations.setup == name][["pearson", "spearman"]].mean()
        ax.set_title(f"{textwrap.fill(name, 40)}\nr = {mean_r.pearson:.2f}, ρ = {mean_r.spearman:.2f}",
                     fontsize="medium")
        ax.set_xlabel("silhouette")
        ax.set_ylabel("IsoScore")
        ax.locator_params(axis="x", nbins=4)  # small ranges otherwise print overlapping tick labels
    fig.colorbar(points, ax=axes, label="update")
    fig.suptitle("Figure 3: IsoScore against silhouette (all seeds and updates)")
    return fig


def _control_panels(iso_ax, sil_ax, traces: pd.DataFrame, controls: pd.DataFrame, name: str) -> None:
    """One setup's row of :func:`controls_figure`: IsoScore, then the silhouette, of each run."""
    runs = {TRUE_RUN: ("tab:blue", "-"), SHUFFLED: ("tab:red", "--"), LABEL_FREE: ("tab:grey", ":")}
    for run, (colour, linestyle) in runs.items():
        table = (traces[traces.setup == name].rename(columns={"silhouette": "silhouette_true"}) if run == TRUE_RUN
                 else controls[(controls.setup == name) & (controls.control == run)])
        # Each line is named by its run: the panel's y-axis says which metric it is.
        plot_mean_band(iso_ax, table.rename(columns={"isoscore": run}), "update", {run: colour}, linestyle=linestyle)
        true_label = f"{run}: against the true labels" if run == SHUFFLED else run
        plot_mean_band(sil_ax, table.rename(columns={"silhouette_true": true_label}), "update",
                       {true_label: colour}, linestyle=linestyle)
        if run == SHUFFLED:
            against = f"{run}: against the shuffled labels"
            plot_mean_band(sil_ax, table.rename(columns={"silhouette_shuffled": against}), "update",
                           {against: "tab:orange"}, linestyle="-.")
    iso_ax.set_title(f"{name}: IsoScore", fontsize="medium")
    iso_ax.set_ylabel("IsoScore")
    sil_ax.set_title(f"{name}: silhouette", fontsize="medium")
    sil_ax.set_ylabel("silhouette")
    for ax in (iso_ax, sil_ax):
        ax.legend(fontsize="x-small")


def controls_figure(traces: pd.DataFrame, controls: pd.DataFrame, n_seeds: int):
    """The controls beside the paper's run: per setup, IsoScore and the silhouette of the true-label, shuffled-label
    and label-free runs, mean ± std over seeds."""
    names = list(dict.fromkeys(controls.setup))
    fig, axes = panel_grid(2 * len(names), panel_size=(6, 3.6))
    for row, name in enumerate(names):
        _control_panels(axes[2 * row], axes[2 * row + 1], traces, controls, name)
    fig.suptitle(f"Controls: true, shuffled and no labels, mean ± std over {n_seeds} seeds")
    return fig


def glue_figure(glue_traces: pd.DataFrame, tasks: Sequence[str], models: Sequence[str], n_seeds: int):
    """Figure 4: Appendix A's traces, one panel per GLUE task, one line style per model, mean ± std over seeds."""
    fig, axes = panel_grid(len(tasks), panel_size=(6, 3.8))
    for ax, task in zip(axes, tasks):
        for model, linestyle in zip(models, ("-", "--", ":")):
            run = glue_traces[glue_traces.setup == f"{task}, {model}"].rename(columns=_AS_SHOWN)
            plot_mean_band(ax, run, "update", METRIC_COLOURS, linestyle=linestyle, label_suffix=f" ({model})")
        ax.set_title(task)
        ax.set_ylabel("IsoScore, silhouette")
        ax.legend(fontsize="small")
    fig.suptitle(f"Figure 4: GLUE training sets, mean ± std over {n_seeds} seeds")
    return fig
