"""A reader's answer, generated from notebook 05's tables: which measure answers which question, and where they part.

:func:`strongest_disagreements` names the most opposed pairs of measures with the change that separates
them most; :func:`reader_guide` sorts the measures by the question their behaviour under the controlled
changes fits. Both read :func:`~isolib.studies.every_measure.tables.agreement_table` and
:func:`~isolib.studies.every_measure.tables.sensitivity_table` only.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from isolib.studies.every_measure.settings import (
    CHANGES,
    MEASURE_BY_NAME,
    MEASURE_NAMES,
)

__all__ = ["strongest_disagreements", "reader_guide"]


def _moves(sensitivity: pd.DataFrame, change: str, measure: str, *, size: float) -> str:
    """"up", "down", "still" or "" (neither clearly) for one measure under one change."""
    row = sensitivity[(sensitivity.change == change) & (sensitivity.measure == measure)]
    if row.empty or row.direction.iloc[0] == "n/a":
        return ""
    row = row.iloc[0]
    if row.direction == "unchanged":
        return "still"
    if row.direction == "more isotropic" and row["median"] >= size:
        return "up"
    if row.direction == "less isotropic" and row["median"] <= -size:
        return "down"
    return ""


def strongest_disagreements(agreement: pd.DataFrame, sensitivity: pd.DataFrame, *, count: int = 3) -> pd.DataFrame:
    """The ``count`` most opposed pairs of measures, and the change that moves them most differently.

    Parameters
    ----------
    agreement : pandas.DataFrame
        :func:`~isolib.studies.every_measure.tables.agreement_table`.
    sensitivity : pandas.DataFrame
        :func:`~isolib.studies.every_measure.tables.sensitivity_table`.

    Returns
    -------
    pandas.DataFrame, one row per pair, most opposed first
        ``measure``, ``other``, ``tau``, ``low``, ``high``, ``cause`` (the change whose median effects on
        the two differ most, e.g. ``global centring: +0.31 against +0.00``).
    """
    pairs = agreement[agreement.measure < agreement.other].dropna(subset=["tau"]).nsmallest(count, "tau")
    causes = []
    for row in pairs.itertuples():
        effects = sensitivity.pivot(index="change", columns="measure", values="median")[[row.measure, row.other]]
        gap = (effects[row.measure] - effects[row.other]).abs().dropna()
        if gap.empty:
            causes.append("-")
            continue
        change = gap.idxmax()
        causes.append(f"{CHANGES[change]}: {effects.loc[change, row.measure]:+.2f} against "
                      f"{effects.loc[change, row.other]:+.2f}")
    return pairs.assign(cause=causes)[["measure", "other", "tau", "low", "high", "cause"]].reset_index(drop=True)


def _move(measures: Sequence[str]) -> str:
    return "moves" if len(measures) == 1 else "move"


def _names(measures: Sequence[str]) -> str:
    return ", ".join(MEASURE_BY_NAME[name].label for name in measures) if measures else "none in this run"


def _evidence(sensitivity: pd.DataFrame, names: Sequence[str], change: str) -> str:
    """Each measure's median change under ``change``; I(W) also in its own units, log10, which its isotropy scale hides."""
    medians = sensitivity.pivot(index="measure", columns="change", values="median")
    raw = sensitivity.pivot(index="measure", columns="change", values="raw_median")
    return "; ".join(f"{MEASURE_BY_NAME[name].label} {medians.loc[name, change]:+.2f}"
                     + (f" (log10 I(W) {raw.loc[name, change]:+.1f})" if name == "iw" else "") for name in names)


def _partners(agreement: pd.DataFrame) -> list[str]:
    """Each measure with the other measure it agrees with most (Kendall's tau)."""
    off_diagonal = agreement[agreement.measure != agreement.other].dropna(subset=["tau"])
    partners = []
    for name in MEASURE_NAMES:
        mine = off_diagonal[off_diagonal.measure == name]
        if not mine.empty:
            best = mine.loc[mine.tau.idxmax()]
            partners.append(f"{MEASURE_BY_NAME[name].label} with {MEASURE_BY_NAME[best.other].label} ({best.tau:.2f})")
    return partners


def reader_guide(sensitivity: pd.DataFrame, agreement: pd.DataFrame, *, size: float = 0.05) -> list[str]:
    """Which measure to use for which question, read off the sensitivity and agreement tables.

    A measure *answers* a question when the changes that should move it do (by at least ``size``
    on the isotropy scale, the interval over cells on one side of 0) and those that should not leave
    it unchanged (the whole interval within the tolerance of
    :func:`~isolib.studies.every_measure.tables.sensitivity_table`):

    * a common direction (an offset from the origin): moved up by centring, unchanged by a rotation
      and by uniform scaling;
    * how evenly the variance spreads over directions, whatever the offset, scale and axes:
      unchanged by centring, scaling and rotation, moved up by whitening;
    * a few coordinates (rogue dimensions): changed by a rotation, which keeps every distance and
      angle but not the axes;
    * clusters and local dimension: the cluster and neighbour measures, with what moves them.

    Then the cautions: measures moved by uniform scaling (compare only at equal norms), by the
    number of points (compare only at equal n), and by one planted outlier. For the rotation and
    the cautions any systematic move counts (the interval over cells on one side of 0, outside the
    tolerance), whatever its size on the isotropy scale: I(W) falls by tens of orders of magnitude
    under a uniform scaling while its isotropy-scale change stays below ``size``.

    Returns
    -------
    list of str
        Markdown bullet lines, each with the evidence (the changes and their sizes).
    """
    def moved(change, how, at_least=size):
        return [name for name in MEASURE_NAMES if _moves(sensitivity, change, name, size=at_least) in how]

    offset = [name for name in moved("centre", ("up",)) if name in moved("rotate", ("still",))
              and name in moved("scale", ("still",))]
    spread = [name for name in moved("whiten", ("up",)) if name in moved("centre", ("still",))
              and name in moved("scale", ("still",)) and name in moved("rotate", ("still",))]
    axes, scale, fewer, outlier = (moved(change, ("up", "down"), at_least=0.0)
                                   for change in ("rotate", "scale", "fewer_points", "outlier"))
    medians = sensitivity.pivot(index="measure", columns="change", values="median")

    def evidence(names, change):
        return _evidence(sensitivity, names, change)

    partners = _partners(agreement)
    lines = [
        f"- **Is there a common direction, an offset from the origin?** {_names(offset)}: centring moves them "
        f"towards isotropy ({evidence(offset, 'centre') or '-'}), a rotation and a uniform scaling do not.",
        f"- **Is the variance spread evenly over the directions, whatever the offset, scale and axes?** "
        f"{_names(spread)}: whitening moves them ({evidence(spread, 'whiten') or '-'}); centring, scaling and a "
        "rotation do not.",
        (f"- **Do a few coordinates dominate (rogue dimensions)?** {_names(axes)}: a random rotation, which keeps "
         f"every angle and distance, moves them ({evidence(axes, 'rotate')}); they read the model's own coordinates."
         if axes else
         "- **Do a few coordinates dominate (rogue dimensions)?** No measure moves under a random rotation here, so "
         "no coordinate stands out in these spaces; the share of the average cosine carried by the top "
         "coordinates (Table `rogue`) asks it directly."),
        f"- **Does the space hold clusters, and how many dimensions does it use locally?** best k-means silhouette "
        f"(the cluster-based method moves it {medians.loc['silhouette', 'cluster']:+.2f}) and LID (whitening "
        f"{medians.loc['lid', 'whiten']:+.2f}): neither is an isotropy measure; say which question they answer.",
        f"- **Caution, the scale:** {_names(scale)} {_move(scale)} under a uniform scaling "
        f"({evidence(scale, 'scale') or '-'}): compare only spaces of the same norms.",
        f"- **Caution, the number of points:** {_names(fewer)} {_move(fewer)} with n "
        f"({evidence(fewer, 'fewer_points') or '-'}): compare only at the same n.",
        f"- **Caution, one outlier:** {_names(outlier)} {_move(outlier)} when one point is planted far out "
        f"({evidence(outlier, 'outlier') or '-'}).",
        "- **Which measures tell the same story** (each with its closest partner by Kendall's tau): "
        + "; ".join(partners) + ".",
    ]
    return lines

