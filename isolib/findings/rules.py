"""Rules: a claim's test turned into a :class:`Verdict` (passed, failed, or not comparable), with its margin.

:func:`trend`, :func:`threshold`, :func:`within` and :func:`sign`, combined with :func:`all_of`, judge
this run's numbers; :func:`threshold_range` says over which thresholds a verdict keeps its status, for a
threshold that is ours rather than the paper's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["Verdict", "spearman", "trend", "threshold", "within", "sign", "all_of", "proportion", "threshold_range",
           "KNIFE_EDGE", "artefact_reason", "ARTEFACT_RULE"]

# A value this close to its threshold, relative to the threshold, decides its status on a knife edge.
KNIFE_EDGE = 0.05


@dataclass(frozen=True)
class Verdict:
    """A rule applied to this run's numbers.

    Attributes
    ----------
    passed : bool or None
        None when the rule cannot be applied (the finding is then "not comparable").
    value : float
        The number the rule judged (a correlation, a minimum, a difference ...); NaN if none.
    margin : float
        Signed distance of ``value`` from the rule's threshold, positive on the passing side
        (NaN when not comparable). A small margin is a thin verdict.
    interval : (float, float) or None
        Bootstrap interval of ``value`` (:func:`bootstrap_threshold`); None for a rule on a
        number that does not come from a sample.
    borderline : bool
        The interval crosses the threshold: the verdict could go either way.
    bound : float or None
        The threshold of a one-sided rule (``value`` must be above or below it); None for a
        two-sided rule. :func:`threshold_range` reads it.
    side : {"above", "below"} or None
        Which side of ``bound`` passes.
    degenerate : bool
        The interval has zero width although it resamples several units: what it resamples does not
        vary (a baseline held fixed, seeds that change nothing), so it says nothing of the uncertainty
        and no status may rest on it.
    """

    passed: bool | None
    value: float
    margin: float
    interval: tuple | None = None
    borderline: bool = False
    bound: float | None = None
    side: str | None = None
    degenerate: bool = False

    @classmethod
    def undecided(cls, value: float = np.nan) -> Verdict:
        """A verdict the rule cannot reach (the finding is "not comparable")."""
        return cls(None, float(value), np.nan)

    @property
    def knife_edge(self) -> bool:
        """The judged value lies within :data:`KNIFE_EDGE` (5%) of a one-sided rule's non-zero threshold."""
        return (self.passed is not None and self.bound is not None and self.bound != 0
                and abs(self.value - self.bound) <= KNIFE_EDGE * abs(self.bound))

    @property
    def interval_text(self) -> str:
        """``[95% CI low-high]`` for a bootstrapped verdict, "" otherwise (for the "this run" text)."""
        return "" if self.interval is None else f"[95% CI {_number(self.interval[0])} to {_number(self.interval[1])}]"


def _number(value: float) -> str:
    """A number in two to three significant figures, small ones in scientific notation (intervals, ranges)."""
    return f"{value:.2g}" if value != 0 and abs(value) < 0.01 else f"{value:.2f}"


def spearman(x, y) -> float:
    """Spearman's rho of ``y`` against ``x``; NaN with fewer than 3 points or a constant ``y``.

    Parameters
    ----------
    x, y : array_like of shape (n_points,)
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) < 3 or np.isnan(y).any() or np.ptp(y) == 0:
        return np.nan
    from scipy import stats  # lazy: the runner's parameter check imports the study modules, hence this one

    return float(stats.spearmanr(x, y).statistic)


def trend(values: pd.Series, *, rising: bool, min_rho: float = 0.5) -> Verdict:
    """A trend over layers: Spearman's rho of ``values`` against their layer beyond ``min_rho``.

    Parameters
    ----------
    values : pandas.Series of shape (n_layers,)
        Indexed by layer.
    rising : bool
        True: passes if rho > ``min_rho``; False: passes if rho < ``-min_rho``.
    min_rho : float

    Returns
    -------
    Verdict
        ``value`` is rho; not comparable with fewer than 3 layers, a NaN or constant values.
    """
    rho = spearman(values.index, values.to_numpy())
    if np.isnan(rho):
        return Verdict.undecided()
    margin = rho - min_rho if rising else -min_rho - rho
    return Verdict(bool(margin > 0), rho, float(margin), bound=min_rho if rising else -min_rho,
                   side="above" if rising else "below")


def threshold(values, *, above: float | None = None, below: float | None = None,
              inclusive: bool = False) -> Verdict:
    """A threshold in every layer (or for one number): every value above and/or below a bound.

    Parameters
    ----------
    values : float or array_like of shape (n_values,)
    above, below : float or None
        Lower and upper bounds (at least one).
    inclusive : bool
        Whether a value equal to a bound passes.

    Returns
    -------
    Verdict
        ``value`` is the value nearest to failing (the minimum for ``above`` only, the maximum for
        ``below`` only, the one closest to a bound for both); ``margin`` its distance to that
        bound. Not comparable if there is no value or any value is NaN.
    """
    if above is None and below is None:
        raise ValueError("threshold needs a bound: above, below or both.")
    array = np.atleast_1d(np.asarray(values, dtype=float))
    if array.size == 0 or np.isnan(array).any():
        return Verdict.undecided()
    margins = np.full(array.shape, np.inf)
    if above is not None:
        margins = np.minimum(margins, array - above)
    if below is not None:
        margins = np.minimum(margins, below - array)
    worst = int(np.argmin(margins))
    margin = float(margins[worst])
    one_sided = (above is None) != (below is None)
    return Verdict(bool(margin >= 0 if inclusive else margin > 0), float(array[worst]), margin,
                   bound=(below if above is None else above) if one_sided else None,
                   side=("below" if above is None else "above") if one_sided else None)


def within(values, paper, tolerance: float) -> Verdict:
    """A value within ``tolerance`` of the paper's: every value in ``[low - tol, high + tol]``.

    Parameters
    ----------
    values : float or array_like of shape (n_values,)
        Ours (several values, e.g. layers, must all be within).
    paper : float or (float, float)
        The paper's value, or the range it gives.
    tolerance : float
    """
    low, high = paper if isinstance(paper, tuple) else (paper, paper)
    return threshold(values, above=low - tolerance, below=high + tolerance, inclusive=True)


def sign(value: float, *, positive: bool = True) -> Verdict:
    """A sign: ``value`` > 0 (or < 0 with ``positive=False``); not comparable if NaN."""
    return threshold(value, above=0.0) if positive else threshold(value, below=0.0)


def all_of(*verdicts: Verdict) -> Verdict:
    """All rules at once: passes if every one passes; not comparable if any is; the smallest margin.

    Borderline if it passes and a borderline rule could make it fail, or if it fails only on
    borderline rules.
    """
    if any(verdict.passed is None for verdict in verdicts):
        return Verdict.undecided()
    weakest = min(verdicts, key=lambda verdict: verdict.margin)
    passed = all(verdict.passed for verdict in verdicts)
    failing = [verdict for verdict in verdicts if not verdict.passed]
    borderline = (any(verdict.borderline for verdict in verdicts) if passed
                  else all(verdict.borderline for verdict in failing))
    return Verdict(passed, weakest.value, weakest.margin, weakest.interval, borderline, weakest.bound, weakest.side,
                   weakest.degenerate)


def proportion(passed, *, at_least: float) -> Verdict:
    """A share of units (layers, datasets ...) passing a rule, judged against ``at_least`` (inclusive).

    A rule over layers is a proportion, not a count, so that models of 6 and of 30 layers are held
    to the same standard ("all layers but at most one" is 5 of 6 but 29 of 30).

    Parameters
    ----------
    passed : array_like of bool or None, shape (n_units,)
        Each unit's outcome; None (not comparable) units are left out.
    at_least : float
        The share, in [0, 1], that must pass.

    Returns
    -------
    Verdict
        ``value`` is the share passing; not comparable when no unit is comparable.
    """
    if not 0 <= at_least <= 1:
        raise ValueError(f"at_least is a share between 0 and 1, got {at_least}.")
    outcomes = [bool(outcome) for outcome in passed if outcome is not None]
    if not outcomes:
        return Verdict.undecided()
    return threshold(float(np.mean(outcomes)), above=at_least, inclusive=True)


# One rule for every study: a group of points that is an artefact of tokens or positions, not structure of the space.
ARTEFACT_RULE = ("a group is an artefact group, described and never counted as structure of the space, when one "
                 "token type makes at least half of it (a placeholder, a punctuation mark, a start token) or its "
                 "median norm is more than twice or less than half the median norm of all the points (the "
                 "attention sink)")


def artefact_reason(dominant_type_share: float, norm_ratio: float) -> str:
    """Why a group of points (a cluster) is an artefact group under :data:`ARTEFACT_RULE`; "" if it is not.

    Parameters
    ----------
    dominant_type_share : float
        The share of the group's points that are its most frequent token type.
    norm_ratio : float
        The group's median norm over the median norm of all the points (of the layer). Against all the points,
        not the others: a main cloud of 98% of the points facing a small sink keeps a ratio near 1.
    """
    reasons = []
    if dominant_type_share >= 0.5:
        reasons.append(f"{dominant_type_share:.0%} of it is one token type")
    if norm_ratio > 2 or norm_ratio < 0.5:
        reasons.append(f"its median norm is {norm_ratio:.2g} times all the points' median")
    return " and ".join(reasons)


def threshold_range(verdict: Verdict) -> tuple[float, float] | None:
    """The thresholds under which a one-sided rule would give the same status as it gives now.

    For a threshold we chose (the paper gives none), this says how much the verdict hangs on the
    choice: e.g. "reproduced for any threshold below 0.112". With an interval, the status is
    reproduced (or not) only for thresholds beyond its far end, and borderline inside it. For
    :func:`all_of`, the range of the part nearest to failing, the others held.

    Returns
    -------
    (float, float) or None
        ``(low, high)``, either end possibly infinite; None for a two-sided or undecided rule.
    """
    if verdict.passed is None or verdict.side is None:
        return None
    low, high = verdict.interval or (verdict.value, verdict.value)
    if verdict.borderline:
        return (low, high)
    if verdict.side == "above":
        return (-np.inf, low) if verdict.passed else (high, np.inf)
    return (high, np.inf) if verdict.passed else (-np.inf, low)
