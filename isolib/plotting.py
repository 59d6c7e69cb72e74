"""Figure and table helpers shared by the notebooks: one style, deterministic files.

Figures are written as PNG and PDF without timestamps or software versions in their
metadata, so rerunning a notebook with the same inputs gives byte-identical files.
Tables are written as CSV (full precision) and Markdown (rounded, for reading); a table whose
numbers vary between machines (seeds, CPU kernels) declares how much, in ``tolerances.json`` beside
it, which :func:`isolib.comparison.compare_outputs` reads.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from IPython.display import Markdown

from isolib.markdown import markdown_table

_PNG_METADATA = {"Software": None}
_PDF_METADATA = {"Creator": None, "Producer": None, "CreationDate": None}


def set_style() -> None:
    """The seaborn style every figure uses."""
    sns.set_theme(context="notebook", style="whitegrid", palette="colorblind")
    plt.rcParams.update({"figure.dpi": 100, "savefig.dpi": 150, "svg.hashsalt": "isolib",
                         "pdf.compression": 6})


def save_figure(fig, output_dir: str | Path, name: str, *, formats=("png", "pdf")) -> list[Path]:
    """Write ``fig`` as ``<output_dir>/<name>.png`` and ``.pdf`` (or the ``formats`` given); return the paths."""
    folder = Path(output_dir)
    folder.mkdir(parents=True, exist_ok=True)
    metadata = {"png": _PNG_METADATA, "pdf": _PDF_METADATA}
    paths = [folder / f"{name}.{kind}" for kind in formats]
    for path, kind in zip(paths, formats):
        fig.savefig(path, bbox_inches="tight", metadata=metadata[kind])
    return paths


TOLERANCES_FILE = "tolerances.json"
# A number may move by this many standard deviations of its own spread (over seeds, restarts, samples).
STANDARD_DEVIATIONS = 3

Tolerance = float | str | dict | None


def save_table(table: pd.DataFrame, output_dir: str | Path, name: str, *, digits: int = 3,
               tolerance: dict[str, Tolerance] | None = None) -> list[Path]:
    """Write ``table`` as ``<name>.csv`` (full precision) and ``<name>.md`` (rounded to ``digits``).

    Parameters
    ----------
    table : pandas.DataFrame
    output_dir : str or Path
    name : str
    digits : int
        Decimals of the Markdown table.
    tolerance : dict, optional
        How far each listed column may move between two runs of the same code on other machines
        (another CPU's kernels change float rounding, which a seed's training, a clustering or a
        degenerate eigenbasis can amplify), read from the table's own variability by
        :func:`allowed_movement`:

        - ``replicates(*by)``: the rows sharing the columns ``by`` replicate one quantity (seeds,
          restarts, token samples); each may move by :data:`STANDARD_DEVIATIONS` standard
          deviations of its group, or of the column's median group where its own is smaller;
        - the name of a column holding each row's standard deviation over seeds: as many of them,
          or of the column's median row where its own is smaller;
        - ``interval(low, high)``: half the row's own interval (its sampling uncertainty);
        - an absolute number, where the table holds no spread of its own;
        - None for a column no rerun repeats (a measured time), which is not compared.

        Recorded under ``name`` in ``tolerances.json`` beside the table; unlisted columns keep the
        comparator's default.
    """
    folder = Path(output_dir)
    folder.mkdir(parents=True, exist_ok=True)
    csv, markdown = folder / f"{name}.csv", folder / f"{name}.md"
    declared = table_tolerances(folder)
    if tolerance:
        check_tolerance(name, tolerance, table.columns)
        declared[name] = dict(tolerance)
    else:
        declared.pop(name, None)
    table.to_csv(csv, index=False)
    markdown.write_text(markdown_table(table, digits=digits) + "\n")
    if declared:
        (folder / TOLERANCES_FILE).write_text(json.dumps(declared, indent=1, sort_keys=True) + "\n")
    else:
        (folder / TOLERANCES_FILE).unlink(missing_ok=True)
    return [csv, markdown]


def replicates(*by: str) -> dict[str, list[str]]:
    """A tolerance (:func:`save_table`): the rows sharing the columns ``by`` are replicates of one quantity."""
    return {"replicates": list(by)}


def interval(low: str, high: str) -> dict[str, list[str]]:
    """A tolerance (:func:`save_table`): half of each row's interval ``[low, high]``."""
    return {"interval": [low, high]}


def check_tolerance(name: str, tolerance: dict, columns) -> None:
    """Refuse (ValueError, one sentence) a tolerance of table ``name`` that :func:`allowed_movement` cannot apply.

    Each column's spec must be of a kind :func:`save_table` lists (a number finite and at least 0), and every
    column named, its own and those its spec reads, must be among ``columns``.
    """
    for column, spec in tolerance.items():
        read = _columns_read(spec)
        if read is None:
            raise ValueError(f"the tolerance of column {column} of table {name} is {spec!r}, none of replicates(...), "
                             "interval(low, high), a column of standard deviations, a finite number of at least 0, "
                             "or None.")
        unknown = [other for other in dict.fromkeys([column, *read]) if other not in set(columns)]
        if unknown:
            raise ValueError(f"the tolerance of column {column} of table {name} names columns it does not have: "
                             f"{', '.join(unknown)}.")


def _columns_read(spec) -> list | None:
    """The columns a tolerance reads its spread from; None for a spec of no kind :func:`save_table` lists."""
    if spec is None or (isinstance(spec, (int, float)) and not isinstance(spec, bool) and 0 <= spec < np.inf):
        return []
    if isinstance(spec, str):
        return [spec]
    if isinstance(spec, dict) and len(spec) == 1:
        (kind, read), = spec.items()
        if (kind in ("replicates", "interval") and isinstance(read, list) and read
                and all(isinstance(column, str) for column in read) and (kind == "replicates" or len(read) == 2)):
            return read
    return None


def allowed_movement(table: pd.DataFrame, column: str, spec: Tolerance,
                     fresh: pd.DataFrame | None = None) -> np.ndarray:
    """How far each row's ``column`` may move under the tolerance ``spec`` (:func:`save_table`).

    Parameters
    ----------
    table : pandas.DataFrame
        The committed table: the spread is read from it.
    column : str
    spec : float, str or dict
        As in :func:`save_table` (not None).
    fresh : pandas.DataFrame, optional
        The run being checked, with the same rows: each row may then move by the smaller of what the two
        tables allow, so that no value widens its own tolerance (a committed inertia cut from 3,720,406.5
        to 372 spreads its restarts by millions; the new run's restarts do not).

    Returns
    -------
    ndarray of shape (n_rows,)
        Non-negative; a missing interval allows 0.

    Notes
    -----
    The standard deviation of three replicates is below a third of the true one about one time in
    ten, and replicates that agree exactly (a quantity pinned by construction, k-means restarts that
    find the same optimum) can still move by rounding on another machine (a tie between two
    centroids broken the other way): a group's spread is therefore at least the median spread of the
    column's groups (of the column's rows, for a column of standard deviations), never the widest
    one, which would let a quiet row move as far as the noisiest.

    The smaller of the two runs' spreads, not the committed group's without the compared row: a
    restart apart from siblings that agree keeps the spread its group shows in both runs, where
    leaving it out would leave it the median floor alone; and a column of spreads or an interval,
    which has no row to leave out, is bounded the same way.
    """
    if fresh is not None:
        return np.fmin(allowed_movement(table, column, spec), allowed_movement(fresh, column, spec))
    if isinstance(spec, dict) and "replicates" in spec:
        groups = table.groupby(spec["replicates"], sort=False, dropna=False)[column]
        return _at_least_median(groups.transform("std").to_numpy(float), groups.std().to_numpy(float))
    if isinstance(spec, dict) and "interval" in spec:
        low, high = spec["interval"]
        return np.nan_to_num((table[high] - table[low]).to_numpy(float) / 2)
    if isinstance(spec, str):
        spreads = table[spec].to_numpy(float)
        return _at_least_median(spreads, spreads)
    return np.full(len(table), float(spec))


def _at_least_median(row_spreads: np.ndarray, spreads: np.ndarray) -> np.ndarray:
    """:data:`STANDARD_DEVIATIONS` times each row's spread, or the median of ``spreads`` where larger (NaN: unknown)."""
    known = spreads[~np.isnan(spreads)]
    floor = np.median(known) if len(known) else 0.0
    return STANDARD_DEVIATIONS * np.fmax(np.nan_to_num(row_spreads), floor)


def table_tolerances(folder: str | Path) -> dict[str, dict[str, Tolerance]]:
    """The tolerances the tables of ``folder`` declared (:func:`save_table`), by table name; {} if none.

    Raises
    ------
    ValueError
        If ``tolerances.json`` is not JSON mapping table names to their columns' tolerances.
    """
    path = Path(folder) / TOLERANCES_FILE
    if not path.exists():
        return {}
    try:
        declared = json.loads(path.read_text())
    except ValueError as error:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise ValueError(f"{path} cannot be read as JSON ({error}); restore it, or rerun the notebook that saves "
                         "its tables.") from None
    if not (isinstance(declared, dict) and all(isinstance(columns, dict) for columns in declared.values())):
        raise ValueError(f"{path} does not map table names to their columns' tolerances; restore it, or rerun the "
                         "notebook that saves its tables.")
    return declared


def show_table(table: pd.DataFrame, *, digits: int = 3):
    """``table`` for display in a notebook as Markdown: every text whole (pandas cuts cells at 50 characters).

    Returns
    -------
    IPython.display.Markdown
        The last expression of a cell shows it rendered; its plain-text form is the Markdown source.
    """
    return _Shown(markdown_table(table, digits=digits))


def show_text(text: str):
    """``text`` for display in a notebook as Markdown, one paragraph per line, wrapped between words.

    JupyterLab breaks a printed line that is wider than the page anywhere, inside a word too ("minil m");
    a browser wraps rendered Markdown at spaces. Markdown's punctuation in ``text`` is escaped, so that
    ``S_inter`` or ``[95% CI ...]`` read as written.

    Returns
    -------
    IPython.display.Markdown
        Shown by ``display``, or as the last expression of a cell; its plain-text form is ``text``.
    """
    # Leading spaces would make a code block; a line is a paragraph, so they are dropped from the Markdown.
    paragraphs = [_MARKDOWN_LIST_START.sub(r"\1\\\2", _MARKDOWN_PUNCTUATION.sub(r"\\\g<0>", line.strip()))
                  for line in text.splitlines() if line.strip()]
    return _Shown("\n\n".join(paragraphs), plain=text)


# What Markdown would read as markup inside a line (emphasis, links, code, HTML, tables, math), and at its start.
_MARKDOWN_PUNCTUATION = re.compile(r"[\\`*_\[\]<>#|~$&+=-]")
_MARKDOWN_LIST_START = re.compile(r"^(\d+)([.)])")


class _Shown(Markdown):
    """Markdown whose plain-text form (stored in notebooks beside the rendered one) is ``plain``, by default the
    Markdown source."""

    def __init__(self, markdown: str, *, plain: str | None = None):
        super().__init__(markdown)
        self.plain = markdown if plain is None else plain

    def __repr__(self) -> str:
        return self.plain


def plot_per_layer(table: pd.DataFrame, value: str, *, ax=None, model: str = "model", layer: str = "layer",
                   relative_depth: bool = True, ylabel: str | None = None, style: str | None = None):
    """One line per model of a per-layer measure.

    Parameters
    ----------
    table : pandas.DataFrame
        Long format: one row per (model, layer) with columns ``model``, ``layer`` and ``value``.
    value : str
        Column to plot.
    relative_depth : bool
        Put layer / (number of layers - 1) on the x axis, so models of different
        depths (7 and 31 hidden states) share one axis; layer 0 stays at 0.
    style : str or None
        Column whose values get their own line style (e.g. two views of one model).
    """
    ax = ax or plt.subplots(figsize=(6, 3.6))[1]
    data = table.copy()
    if relative_depth:
        data["x"] = data[layer] / data.groupby(model)[layer].transform("max")
        xlabel = "relative depth (layer / last layer; 0 = input embeddings)"
    else:
        data["x"] = data[layer]
        xlabel = "layer (0 = input embeddings)"
    sns.lineplot(data=data, x="x", y=value, hue=model, style=style, marker="o", ax=ax)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel or value)
    return ax


def per_layer_figure(table: pd.DataFrame, value: str, *, ylabel: str, title: str, output_dir: str | Path, name: str,
                     style: str | None = None):
    """The figure of one per-layer measure: :func:`plot_per_layer`, a zero line, the legend outside, saved as ``name``.

    Returns
    -------
    matplotlib Figure
    """
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    plot_per_layer(table, value, ax=ax, ylabel=ylabel, style=style)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_title(title)
    save_figure(fig, output_dir, name)
    return fig


def describe_layers(table: pd.DataFrame, value: str, *, digits: int = 2, model: str = "model",
                    layer: str = "layer") -> str:
    """One clause per model: ``value`` at its first, middle and last layer, e.g. ``minilm 0.04 (L0), 0.14 (L3), 0.01 (L6)``."""
    clauses = []
    for name, group in table.groupby(model, sort=False):
        values = group.set_index(layer)[value].sort_index()
        middle = values.index[len(values) // 2]
        clauses.append(f"{name} {values.iloc[0]:.{digits}f} (L{values.index[0]}), {values[middle]:.{digits}f} "
                       f"(L{middle}), {values.iloc[-1]:.{digits}f} (L{values.index[-1]})")
    return "; ".join(clauses)


def plot_points(ax, coordinates, colour, *, categorical: bool = False, cmap: str | None = None, size: float = 3.0,
                alpha: float = 0.6, colorbar_label: str | None = None):
    """Scatter of points on 2 coordinates (or 3, on a 3-D axis), coloured by a category or by a value.

    Parameters
    ----------
    ax : matplotlib Axes (or Axes3D for 3 coordinates)
    coordinates : array_like of shape (n_points, 2) or (n_points, 3)
    colour : array_like of shape (n_points,)
        Category codes (``categorical=True``: one qualitative colour each, tab10 or tab20) or values
        (a continuous colour map with a colour bar labelled ``colorbar_label``).

    Returns
    -------
    The scatter artist.
    """
    points = np.asarray(coordinates)
    values = np.asarray(colour)
    if categorical:
        codes, categories = pd.factorize(values, sort=True)
        cmap = cmap or ("tab10" if len(categories) <= 10 else "tab20")
        artist = ax.scatter(*points.T, c=codes, cmap=cmap, vmin=-0.5, vmax=max(len(categories), 10) - 0.5,
                            s=size, alpha=alpha, linewidths=0)
    else:
        artist = ax.scatter(*points.T, c=values, cmap=cmap or "viridis", s=size, alpha=alpha, linewidths=0)
        ax.figure.colorbar(artist, ax=ax, label=colorbar_label, shrink=0.8)
    return artist


def panel_grid(n_panels: int, *, panel_size: tuple[float, float], max_columns: int = 2):
    """A figure with ``n_panels`` axes in rows of at most ``max_columns`` (unused axes removed).

    Returns
    -------
    fig, list of Axes
        The axes in reading order, ``n_panels`` of them.
    """
    n_columns = min(max_columns, n_panels)
    n_rows = -(-n_panels // n_columns)
    fig, axes = plt.subplots(n_rows, n_columns, figsize=(panel_size[0] * n_columns, panel_size[1] * n_rows),
                             squeeze=False, constrained_layout=True)
    for ax in axes.flat[n_panels:]:
        ax.remove()
    return fig, list(axes.flat[:n_panels])


def plot_mean_band(ax, table: pd.DataFrame, x: str, values: dict[str, str], *, linestyle: str = "-",
                   label_suffix: str = ""):
    """Mean ± standard deviation of each column over the rows sharing an ``x`` (e.g. seeds), as lines and bands.

    Parameters
    ----------
    ax : matplotlib Axes
    table : pandas.DataFrame
        Long format: one row per (repetition, ``x``).
    x : str
        Column on the horizontal axis.
    values : dict
        Column to plot -> its colour.
    """
    grouped = table.groupby(x)[list(values)]
    means, spreads = grouped.mean(), grouped.std(ddof=1).fillna(0)
    for column, colour in values.items():
        ax.plot(means.index, means[column], color=colour, linestyle=linestyle, label=column + label_suffix)
        ax.fill_between(means.index, means[column] - spreads[column], means[column] + spreads[column],
                        color=colour, alpha=0.3, linewidth=0)
    ax.set_xlabel(x)
    return ax
