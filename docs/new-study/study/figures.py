"""Figures of notebook <<NN>> that are long or shared; a short plot a student would adapt stays in the notebook."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd


def cosine_per_layer(cosines: pd.DataFrame):
    """The mean average cosine per layer and model, its control beside it; one line each."""
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for model, rows in cosines.groupby("model", sort=False):
        means = rows.groupby("layer")[["average_cosine", "control_cosine"]].mean()
        line, = ax.plot(means.index, means.average_cosine, marker="o", label=model)
        ax.plot(means.index, means.control_cosine, ls=":", color=line.get_color(), label=f"{model}: control")
    ax.set(xlabel="layer", ylabel="average cosine of random tokens")
    ax.legend(frameon=False)
    return fig
