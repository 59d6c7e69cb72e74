"""The papers' findings beside ours: one record, a few rule shapes, one ``RESULTS.md`` writer.

A study module *declares* its findings; this module decides and writes them, the same way for
every study, so that every ``RESULTS.md`` reads alike:

* a **rule** (:func:`trend`, :func:`threshold`, :func:`within`, :func:`sign`, combined with
  :func:`all_of`) turns this run's numbers into a :class:`Verdict`: passed, failed, or not
  comparable (no model, NaN, too few layers), with the value it judged and its margin;
  :func:`bootstrap_threshold` does the same for a statistic of a sample (word types, sentence
  pairs and seeds, windows, layers) and adds a bootstrap interval: a verdict whose interval
  crosses the threshold is *borderline*; :func:`compare_with_control` judges "ours is higher than
  the control" on paired sampling units, reproduced only when the interval of the difference
  excludes 0;
* :func:`declare` pairs a verdict with the claim, the paper's value, our value as text, the rule
  as a sentence, its **kind** and, for a test, its **control** (what would have made it fail),
  giving a :class:`Finding`. Where the threshold is ours (the paper gives none), the rule says so
  and gives the range of thresholds over which the status holds (:func:`threshold_range`);
* :func:`judge_decoder_views` keeps one count per claim and decoder: the start-token view is
  judged, the paper's procedure is shown beside it, and a finding that holds only with the
  attention sink is marked as an artefact of it;
* :func:`compare_reference` sets a paper's per-layer reference numbers beside the same layer of
  the paper's own model, or beside the layer at the same relative depth of a stand-in model;
* :func:`write_results` writes ``RESULTS.md`` (tests, rows beside them, checks, each in its own
  section); :func:`read_results` reads one back, and :func:`write_overview` writes
  ``figures/README.md`` (what reproduces, study by study, counting tests only) from the committed
  ``RESULTS.md`` files; the runner calls it after every ``full`` run.

Kinds
-----
test
    An empirical claim of the paper that this run's data could refute. Only tests are counted
    as reproductions.
check
    Bookkeeping or a property true by construction: a count, an identity, a method raising the
    measure it optimises, our own synthetic demonstration. Passed or failed, never "reproduced".

Statuses of a test
------------------
reproduced
    This run meets the rule stated on the finding's line (with an interval: all of it does).
borderline
    The bootstrap interval of the judged value (over its sampling unit) crosses the rule's
    threshold: another sample could decide the other way.
not reproduced
    This run is comparable and fails the rule.
not comparable
    The rule cannot be applied: the paper's model is not run (or only a stand-in for a
    reference number), a value is NaN, or there are too few layers for a trend.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from isolib.plotting import markdown_table

__all__ = [
    "KINDS",
    "KIND_MEANINGS",
    "STATUSES",
    "CHECK_STATUSES",
    "STATUS_MEANINGS",
    "Verdict",
    "trend",
    "spearman",
    "threshold",
    "within",
    "sign",
    "all_of",
    "bootstrap_threshold",
    "compare_correlations",
    "compare_with_control",
    "threshold_range",
    "Finding",
    "declare",
    "not_comparable",
    "SINK_ARTEFACT",
    "combine_corpora",
    "judge_decoder_views",
    "findings_table",
    "count_line",
    "verdicts",
    "PaperModel",
    "paper_counterpart",
    "models_line",
    "compare_reference",
    "write_results",
    "StudyResults",
    "read_results",
    "overview_text",
    "write_overview",
]

KINDS = ("test", "check")
KIND_MEANINGS = {
    "test": "a claim of the paper that this run's data could refute; only tests count as reproductions",
    "check": "bookkeeping or a property true by construction (a count, an identity, a method raising the measure "
             "it optimises, our own synthetic demonstration): passed or failed, never counted",
}
STATUSES = ("reproduced", "borderline", "not reproduced", "not comparable")
CHECK_STATUSES = ("passed", "failed", "not comparable")
STATUS_MEANINGS = {
    "reproduced": "this run meets the rule stated on the line (with an interval, all of the interval does)",
    "borderline": "the 95% bootstrap interval of the judged value (over its sampling unit: word types, sentence "
                  "pairs and seeds, windows, layers) crosses the rule's threshold, so the verdict could go either way",
    "not reproduced": "this run is comparable and fails the rule",
    "not comparable": "the rule cannot be applied here (the paper's model is not run, or only a stand-in "
                      "for a reference number; a value is NaN; too few layers for a trend)",
    "passed / failed": "a check holds or does not",
}


# --------------------------------------------------------------------------- rules


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
    """

    passed: bool | None
    value: float
    margin: float
    interval: tuple | None = None
    borderline: bool = False
    bound: float | None = None
    side: str | None = None

    @classmethod
    def undecided(cls, value: float = np.nan) -> Verdict:
        """A verdict the rule cannot reach (the finding is "not comparable")."""
        return cls(None, float(value), np.nan)

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
    return Verdict(passed, weakest.value, weakest.margin, weakest.interval, borderline, weakest.bound, weakest.side)


def bootstrap_threshold(samples, statistic: Callable, *, above: float | None = None, below: float | None = None,
                        inclusive: bool = False, crossed: bool = False, within_units: bool = False,
                        n_resamples: int = 2000, level: float = 0.95, random_state: int = 0) -> Verdict:
    """:func:`threshold` on ``statistic(samples)``, with a percentile bootstrap interval over the samples.

    The samples (rows) are drawn with replacement ``n_resamples`` times; the verdict is
    borderline when the ``level`` interval of the statistic crosses a bound (one end passes,
    the other fails), whichever way the full sample decides.

    Parameters
    ----------
    samples : array_like of shape (n_samples, ...), or pandas.DataFrame
        The units the value comes from (layers, word types, sentence pairs, windows ...), one
        per row; with ``crossed`` or ``within_units``, an array of shape (n_samples, n_replicates, ...)
        whose second axis holds replicates of each unit (training or k-means seeds).
    statistic : callable
        Maps a resample (same type and number of dimensions as ``samples``) to a float (e.g.
        ``np.median``).
    above, below, inclusive
        As in :func:`threshold`.
    crossed : bool
        Resample the replicates (axis 1) as well as the units, independently: the interval then
        covers both sources of variation (sentence pairs and seeds, say).
    within_units : bool
        Keep the units and resample each unit's replicates on its own: for a statistic over a fixed
        set of units whose replicates are independent runs (the k-means restarts of each layer,
        where restart 0 of one layer has nothing in common with restart 0 of another).
    n_resamples : int
    level : float
        Coverage of the interval.
    random_state : int
        Seed of the resampling.

    Returns
    -------
    Verdict
        Not comparable with fewer than 2 samples or a NaN statistic.
    """
    table = samples if isinstance(samples, pd.DataFrame) else None
    array = None if table is not None else np.asarray(samples, dtype=float)
    if (crossed or within_units) and (array is None or array.ndim < 2):
        raise ValueError("a bootstrap over replicates needs an array of shape (n_samples, n_replicates, ...).")
    if crossed and within_units:
        raise ValueError("choose crossed (units and replicates) or within_units (replicates only), not both.")
    n = len(table) if table is not None else len(array)
    if n < 2:
        return Verdict.undecided()

    def take(rows, columns=None):
        if table is not None:
            return table.iloc[rows]
        return array[rows] if columns is None else array[rows][:, columns]

    verdict = threshold(statistic(take(np.arange(n))), above=above, below=below, inclusive=inclusive)
    if verdict.passed is None:
        return verdict
    generator = np.random.default_rng(random_state)
    n_replicates = array.shape[1] if crossed or within_units else 0
    if within_units:
        shape = (n, n_replicates) + (1,) * (array.ndim - 2)
        replicates = np.array([statistic(np.take_along_axis(array, generator.integers(0, n_replicates, shape), axis=1))
                               for _ in range(n_resamples)], dtype=float)
    else:
        replicates = np.array([statistic(take(generator.integers(0, n, n),
                                              generator.integers(0, n_replicates, n_replicates) if crossed else None))
                               for _ in range(n_resamples)], dtype=float)
    low, high = np.nanquantile(replicates, [(1 - level) / 2, (1 + level) / 2])
    ends = [threshold(end, above=above, below=below, inclusive=inclusive).passed for end in (low, high)]
    return dataclasses.replace(verdict, interval=(float(low), float(high)), borderline=ends[0] != ends[1])


def compare_with_control(ours, control, *, higher: bool = True, n_resamples: int = 2000, level: float = 0.95,
                         random_state: int = 0) -> Verdict:
    """Ours against its control on the same sampling units: the mean paired difference and its interval.

    The claim "ours is higher (lower) than the control" passes when the mean of ``ours - control``
    is above (below) 0; it is borderline when the bootstrap interval of that mean straddles 0, so a
    difference within the noise of the sample is never counted as a reproduction.

    Parameters
    ----------
    ours, control : array_like of shape (n_units,) or (n_units, n_replicates)
        The measure per sampling unit (word type, window, sentence pair ...) for the method and for
        its control, paired by row; with a second axis (seeds), units and replicates are resampled
        independently (:func:`bootstrap_threshold` with ``crossed``).
    higher : bool
        The paper's direction: ours above the control (True) or below it.
    n_resamples, level, random_state
        As in :func:`bootstrap_threshold`.

    Returns
    -------
    Verdict
        ``value`` is the mean difference ours - control, ``interval`` its bootstrap interval.
    """
    ours, control = np.asarray(ours, dtype=float), np.asarray(control, dtype=float)
    if ours.shape != control.shape:
        raise ValueError(f"ours and its control must be paired unit by unit; got shapes {ours.shape} and "
                         f"{control.shape}.")
    return bootstrap_threshold(ours - control, np.mean, above=0.0 if higher else None, below=None if higher else 0.0,
                               crossed=ours.ndim > 1, n_resamples=n_resamples, level=level, random_state=random_state)


def _average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks along axis 0, ties given their average rank (as Spearman's correlation needs)."""
    return pd.DataFrame(values).rank(axis=0).to_numpy()


def compare_correlations(gold, ours, control, *, higher: bool = True, n_resamples: int = 2000, level: float = 0.95,
                         random_state: int = 0) -> Verdict:
    """Two predictors of the same gold scores, compared by Spearman's correlation, paired over items.

    The value is ``rho(ours, gold) - rho(control, gold)``, each the mean over its replicates (seeds)
    when it has several. The interval is a percentile bootstrap over the items (STS sentence pairs),
    both predictors judged on the same resample, crossed with the replicates (each predictor's seeds
    drawn with replacement): so a gain within the noise of the test set or of the seeds is
    borderline, never reproduced. In each resample the correlation is Pearson's on the full sample's
    ranks, weighted by how often each item was drawn (on the full sample exactly Spearman's; the
    ranks are not recomputed per resample, which keeps 2,000 resamples of 3,000 pairs within a second).

    Parameters
    ----------
    gold : array_like of shape (n_items,)
    ours, control : array_like of shape (n_items,) or (n_items, n_replicates)
        Predicted scores (e.g. cosine similarities); the replicate counts may differ.
    higher : bool
        The claim's direction: ours correlates better (True) or worse than the control.
    n_resamples, level, random_state
        As in :func:`bootstrap_threshold`.

    Returns
    -------
    Verdict
        ``value`` the difference of correlations (not x 100), ``interval`` its bootstrap interval.
    """
    gold = np.asarray(gold, dtype=float)
    predictors = [np.asarray(values, dtype=float) for values in (ours, control)]
    if any(len(values) != len(gold) for values in predictors):
        raise ValueError(f"ours and control must hold one row per gold score ({len(gold)}).")
    predictors = [values.reshape(len(gold), -1) for values in predictors]
    if len(gold) < 3:
        return Verdict.undecided()
    gold_ranks = _average_ranks(gold[:, None])[:, 0]
    ranks = [_average_ranks(values) for values in predictors]

    def correlations(weights: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Weighted Pearson correlation of each column of ``x`` with the gold ranks, per row of ``weights``."""
        total = weights.sum(axis=1, keepdims=True)
        mean_x, mean_y = weights @ x / total, weights @ gold_ranks[:, None] / total
        cov = weights @ (x * gold_ranks[:, None]) / total - mean_x * mean_y
        var_x = weights @ x**2 / total - mean_x**2
        var_y = weights @ gold_ranks[:, None] ** 2 / total - mean_y**2
        with np.errstate(invalid="ignore", divide="ignore"):
            return cov / np.sqrt(var_x * var_y)

    ones = np.ones((1, len(gold)))
    value = float(correlations(ones, ranks[0]).mean() - correlations(ones, ranks[1]).mean())
    if not np.isfinite(value):  # a constant predictor or constant gold scores
        return Verdict.undecided(value)
    verdict = threshold(value, above=0.0 if higher else None, below=None if higher else 0.0)
    generator = np.random.default_rng(random_state)
    weights = generator.multinomial(len(gold), np.full(len(gold), 1 / len(gold)), size=n_resamples).astype(float)

    def resampled(x: np.ndarray) -> np.ndarray:
        seeds = generator.integers(0, x.shape[1], size=(n_resamples, x.shape[1]))
        return np.take_along_axis(correlations(weights, x), seeds, axis=1).mean(axis=1)

    differences = resampled(ranks[0]) - resampled(ranks[1])
    low, high = np.nanquantile(differences, [(1 - level) / 2, (1 + level) / 2])
    ends = [threshold(end, above=0.0 if higher else None, below=None if higher else 0.0).passed for end in (low, high)]
    return dataclasses.replace(verdict, interval=(float(low), float(high)), borderline=ends[0] != ends[1])


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


def _threshold_text(verdict: Verdict) -> str:
    """" Threshold ours: the status holds for any threshold below 0.11." (the rule's last sentence)."""
    span = threshold_range(verdict)
    if span is None:
        return " Threshold ours."
    low, high = span
    if np.isinf(low):
        where = f"below {_number(high)}"
    elif np.isinf(high):
        where = f"above {_number(low)}"
    else:
        where = f"from {_number(low)} to {_number(high)}"
    return f" Threshold ours: the status holds for any threshold {where}."


# --------------------------------------------------------------------------- findings


@dataclass(frozen=True)
class Finding:
    """One line of ``RESULTS.md``: a finding or number of the paper beside this run's.

    Attributes
    ----------
    finding : str
        The paper's claim or measure.
    paper : str
        What the paper reports (for a check: what is expected).
    model : str
        The model of this run it is compared with ("-" if none).
    ours : str
        What this run finds.
    status : str
        One of :data:`STATUSES` for a test, of :data:`CHECK_STATUSES` for a check.
    rule : str
        How the status was decided.
    kind : {"test", "check"}
        A *test* is a claim of the paper that this run's data could refute; a *check* is
        bookkeeping or a property true by construction (a count, an identity, a method raising the
        measure it optimises, our own synthetic demonstration). Checks are never counted as
        reproductions.
    control : str
        For a test, what would have made it fail: the control it is compared with (a baseline,
        global centring, shuffled labels, the static embedding ...) or the bound it must clear;
        "-" for a check.
    headline : bool
        One of the study's most important findings (listed first, and in ``figures/README.md``).
    counted : bool
        False for a row shown beside a counted one and not counted itself: the paper's procedure
        on a decoder, beside its start-token view (:func:`judge_decoder_views`).
    note : str
        A short qualification shown with the status ("holds only with the attention sink").
    """

    finding: str
    paper: str
    model: str
    ours: str
    status: str
    rule: str
    kind: str
    control: str = "-"
    headline: bool = False
    counted: bool = True
    note: str = ""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}.")
        allowed = STATUSES if self.kind == "test" else CHECK_STATUSES
        if self.status not in allowed:
            raise ValueError(f"the status of a {self.kind} must be one of {allowed}, got {self.status!r}.")
        if self.kind == "test" and self.status != "not comparable" and self.control in ("", "-"):
            raise ValueError(f"the test {self.finding!r} names no control (what would have made it fail).")


def _status(verdict: Verdict, kind: str) -> str:
    if verdict.passed is None:
        return "not comparable"
    if kind == "check":
        return "passed" if verdict.passed else "failed"
    if verdict.borderline:
        return "borderline"
    return "reproduced" if verdict.passed else "not reproduced"


def declare(finding: str, paper: str, model: str, ours: str, verdict: Verdict, rule: str, *, kind: str,
            control: str | None = None, threshold_ours: bool = False, headline: bool = False) -> Finding:
    """A finding of the paper, judged: the claim, the paper's value, our value, the rule and its verdict.

    Parameters
    ----------
    finding : str
        The claim (the same text for every model it is tested on).
    paper : str
        What the paper reports.
    model : str
        The model of this run.
    ours : str
        What this run finds, as text (usually ``verdict.value`` formatted, with context).
    verdict : Verdict
        The rule applied to this run's numbers (:func:`trend`, :func:`threshold`,
        :func:`compare_with_control` ...).
    rule : str
        The rule as a sentence ("reproduced if ...").
    kind : {"test", "check"}
        Required: whether our data could refute the claim (a test) or it holds by construction or
        bookkeeping (a check). See :class:`Finding`.
    control : str, optional
        For a test (required): what would have made it fail, e.g. "global centring (the same
        windows)" or "an isotropic space (average cosine 0)".
    threshold_ours : bool
        The rule's threshold is ours, not the paper's: the rule then says so and gives the range of
        thresholds over which the status holds (:func:`threshold_range`).
    headline : bool
        One of the study's most important findings.
    """
    if kind == "check" and (control is not None or threshold_ours):
        raise ValueError("a check has no control and no threshold of ours; declare it as a test.")
    rule = rule + (_threshold_text(verdict) if threshold_ours and verdict.passed is not None else "")
    return Finding(finding, paper, model, ours, _status(verdict, kind), rule, kind, control or "-", headline)


def not_comparable(finding: str, paper: str, reason: str, *, kind: str, model: str = "-", ours: str = "-",
                   headline: bool = False) -> Finding:
    """A finding this run cannot judge, with the reason as its rule (e.g. "ELMo is not run.")."""
    return Finding(finding, paper, model, ours, "not comparable", reason, kind, headline=headline)


SINK_ARTEFACT = "holds only with the attention sink"


def judge_decoder_views(by_label: dict[str, Sequence[Finding]]) -> list[Finding]:
    """One count per claim and decoder: the start-token view judged, the paper's procedure beside it.

    A decoder's first position is an attention sink, a token of huge norm that every statistic over
    tokens sees. The collection judges a decoder in its start-token view (a start token absorbs
    the sink) and shows the paper's procedure (the sink kept) and any other view (position 0
    dropped) beside it, not counted. Where the paper's procedure reproduces a claim that the
    judged view does not, both rows say that the finding holds only with the attention sink: it
    is an artefact of it. A model without a start-token view (an encoder, or a decoder run in one
    view) is counted as it is.

    Parameters
    ----------
    by_label : dict of str to sequence of Finding
        The findings of each model view, keyed by :func:`isolib.embed.view_label` (``smollm2``,
        ``smollm2 (start token)`` ...), in the order to write them.

    Returns
    -------
    list of Finding
        Per model: the judged view's findings, then the paper's procedure's and the other views'
        with ``counted=False``.
    """
    from isolib.embed import split_view, view_label  # lazy: isolib.embed loads torch

    result = []
    for label, findings in by_label.items():
        name, view = split_view(label)
        if view_label(name, "start_token") not in by_label:
            result += findings
        elif view == "start_token":
            procedure = by_label.get(name, [])
            judged_status = {finding.finding: finding.status for finding in findings}
            artefacts = {finding.finding for finding in procedure
                         if finding.status == "reproduced" and judged_status.get(finding.finding) == "not reproduced"}
            result += [dataclasses.replace(finding, note=SINK_ARTEFACT) if finding.finding in artefacts else finding
                       for finding in findings]
            result += [dataclasses.replace(finding, counted=False, headline=False,
                                           note=SINK_ARTEFACT if finding.finding in artefacts else finding.note)
                       for finding in procedure]
        elif view != "keep":  # the paper's procedure is written beside the start-token view, above
            result += [dataclasses.replace(finding, counted=False, headline=False) for finding in findings]
    return result


CORPORA_RULE = ("Judged on each corpus; combined: {agree} where every corpus agrees, borderline where they "
                "disagree.")


def combine_corpora(by_corpus: dict[str, Sequence[Finding]]) -> list[Finding]:
    """One line per claim and model over several corpora, with each corpus's number in the cell.

    The same claim, model and counting on every corpus becomes one finding: its status is the
    corpora's common status, or *borderline* (a check: *failed*) where they disagree, since the
    verdict then depends on the corpus; "not comparable" corpora are left out of the status unless
    all are. A claim judged on some corpora only keeps the corpora it has.

    Parameters
    ----------
    by_corpus : dict of str to sequence of Finding
        Each corpus's findings, with the corpus *not* in ``model``, in the order to write them.

    Returns
    -------
    list of Finding
        In the order each claim and model first appears.
    """
    groups: dict[tuple, list[tuple[str, Finding]]] = {}
    for corpus, findings in by_corpus.items():
        for finding in findings:
            groups.setdefault((finding.finding, finding.model, finding.counted), []).append((corpus, finding))
    combined = []
    for members in groups.values():
        first = members[0][1]
        if len(by_corpus) == 1:
            combined.append(first)
            continue
        statuses = [finding.status for _, finding in members]
        comparable = sorted({status for status in statuses if status != "not comparable"}, key=statuses.index)
        if not comparable:
            status = "not comparable"
        elif len(comparable) == 1:
            status = comparable[0]
        else:
            status = "borderline" if first.kind == "test" else "failed"
        marked = len(set(statuses)) > 1
        ours = "; ".join(f"{corpus}: {finding.ours}" + (f" ({finding.status})" if marked else "")
                         for corpus, finding in members)
        notes = list(dict.fromkeys(finding.note for _, finding in members if finding.note))
        agree = "the common status" if first.kind == "test" else "passed"
        rule = first.rule if status == "not comparable" and not comparable else (
            f"{first.rule} {CORPORA_RULE.format(agree=agree)}")
        combined.append(dataclasses.replace(first, ours=ours, status=status, rule=rule, note="; ".join(notes),
                                            headline=any(finding.headline for _, finding in members)))
    return combined


# --------------------------------------------------------------------------- per-layer reference numbers


@dataclass(frozen=True)
class PaperModel:
    """A model the paper reports numbers for.

    Attributes
    ----------
    name : str
        Its Hugging Face Hub id (or a plain name for models outside transformers, e.g. ``elmo``).
    label : str
        As the paper names it (``BERT``).
    n_layers : int
        Hidden states including the input layer (13 for a 12-block model), in our indexing:
        layer 0 is the input embedding layer.
    """

    name: str
    label: str
    n_layers: int


def paper_counterpart(model: str, paper_names, stand_ins: dict[str, str]) -> str | None:
    """The paper model that ``model`` (or a view of it, e.g. ``smollm2 (position 0 dropped)``) is compared with.

    Itself when it is one of ``paper_names`` (the paper ran it), else its entry in ``stand_ins``
    (an offline model standing in for a paper model), else None.
    """
    from isolib.embed import split_view  # lazy: isolib.embed loads torch

    name = split_view(model)[0]
    return name if name in paper_names else stand_ins.get(name)


def models_line(models: Sequence[str], paper_models: Sequence[PaperModel] = (),
                counterpart: Callable[[str], str | None] | None = None) -> str:
    """Each model run, what exactly it is, and the paper model it stands in for (the ``Models`` line of ``RESULTS.md``).

    An offline model is named by its checkpoint, with how it was trained or stored where that
    matters to a reader (``smollm2 (SmolLM2-135M-Instruct, the instruction-tuned model, from a Q4_1
    GGUF dequantised to float32; for GPT-2)``); a view of a model (``smollm2 (start token)``) is named
    once, by its model. Without ``counterpart`` (a study that stands in for no paper model) no
    "for ..." is added.
    """
    from isolib.embed import split_view  # lazy: isolib.embed loads torch
    from isolib.models import OFFLINE_MODELS

    labels = {paper.name: paper.label for paper in paper_models}
    described = []
    for name in dict.fromkeys(split_view(model)[0] for model in models):
        offline = OFFLINE_MODELS.get(name)
        parts = [offline.checkpoint.rsplit("/", 1)[-1] + (f", {offline.provenance}" if offline.provenance else "")
                 ] if offline else []
        if counterpart is not None and counterpart(name) not in (name, None):
            parts.append(f"for {labels[counterpart(name)]}")
        described.append(f"{name} ({'; '.join(parts)})" if parts else name)
    return ", ".join(described)


def compare_reference(per_layer: pd.DataFrame, reference: dict, paper_models: Sequence[PaperModel],
                      counterpart: Callable[[str], str | None], measure_names: dict[str, str], *,
                      tolerance: float) -> list[Finding]:
    """A paper's per-layer numbers beside ours: same layer on its own model, same relative depth on a stand-in.

    A number is judged (:func:`within` ``tolerance``) only on the paper's own model; on a model
    that stands in for it, the stored layers at the same relative depth (layer / last layer) are
    shown as "not comparable"; with no such model run, one "not comparable" row says so.

    Parameters
    ----------
    per_layer : pandas.DataFrame
        One row per (model, layer): ``model``, ``layer``, ``n_layers`` (hidden states of the model)
        and one column per measure.
    reference : dict
        ``{paper model name: {measure: {layer or (low, high): value or (low, high)}}}``, layers in
        our indexing; a value given over several layers is keyed by ``(low, high)``.
    paper_models : sequence of PaperModel
        Every paper model named in ``reference``.
    counterpart : callable
        Maps one of our model names to the paper model it is compared with (itself, the model it
        stands in for, or None).
    measure_names : dict of str to str
        How each measure reads in the finding's text.
    tolerance : float
        Largest absolute difference that counts as reproduced.

    Returns
    -------
    list of Finding
    """
    findings = []
    models = list(pd.unique(per_layer.model))
    for paper_model in paper_models:
        paper_last = paper_model.n_layers - 1
        compared = [model for model in models if counterpart(model) == paper_model.name]
        for measure, values in reference.get(paper_model.name, {}).items():
            for layers, paper_value in values.items():
                low, high = layers if isinstance(layers, tuple) else (layers, layers)
                expected = (f"{paper_value[0]:.2f}-{paper_value[1]:.2f}" if isinstance(paper_value, tuple)
                            else f"{paper_value:.3f}")
                label = f"L{low}" if low == high else f"L{low}-{high}"
                claim = f"{measure_names[measure]}, {paper_model.label} {label}"
                if not compared:
                    findings.append(not_comparable(claim, expected, f"{paper_model.label} is not run in this profile.",
                                                   kind="test"))
                for model in compared:
                    table = per_layer[per_layer.model == model].set_index("layer")
                    last = int(table.n_layers.iloc[0]) - 1
                    if model == paper_model.name:
                        chosen = table.loc[low:high]
                    else:  # the stored layers at the same relative depth
                        depth = table.index.to_numpy() / last
                        near = [table.index[np.argmin(np.abs(depth - layer / paper_last))] for layer in (low, high)]
                        chosen = table.loc[near[0]:near[1]]
                    ours_values = chosen[measure]
                    if chosen.empty:  # the paper's layers are not among those stored
                        ours = "-"
                    elif len(chosen) == 1:
                        ours = f"{ours_values.iloc[0]:.3f} (L{chosen.index[0]})"
                    else:
                        ours = f"{ours_values.min():.2f}-{ours_values.max():.2f} (L{chosen.index[0]}-{chosen.index[-1]})"
                    if model != paper_model.name:
                        findings.append(not_comparable(
                            claim, expected, f"{model} stands in for {paper_model.label}; shown at the same relative depth.",
                            kind="test", model=model, ours=ours))
                        continue
                    verdict = within(ours_values.to_numpy(), paper_value, tolerance) if len(chosen) else Verdict.undecided()
                    findings.append(declare(claim, expected, model, ours, verdict,
                                            f"reproduced if within {tolerance} of the paper's value.", kind="test",
                                            control=f"the paper's value, {tolerance} either side"))
    return findings


# --------------------------------------------------------------------------- RESULTS.md


_HEADLINE_HEADING = "## Headline findings"
_TESTS_HEADING = "## Tests: the paper's claims"
_BESIDE_HEADING = "## Beside the tests: the paper's procedure on a decoder (not counted)"
_CHECKS_HEADING = "## Checks: bookkeeping and properties true by construction (not counted)"
_COLUMNS = ["finding", "paper", "model", "this run", "status", "control", "rule"]
_CHECK_COLUMNS = ["finding", "expected", "model", "this run", "status", "rule"]


def findings_table(findings: Sequence[Finding]) -> pd.DataFrame:
    """The findings as a table, one row each: ``finding``, ``paper``, ``model``, ``this run``, ``kind``,
    ``status``, ``control``, ``rule`` (a note such as :data:`SINK_ARTEFACT` follows the status)."""
    rows = [{"finding": f.finding, "paper": f.paper, "model": f.model if f.counted else f"{f.model} (beside, not counted)",
             "this run": f.ours, "kind": f.kind, "status": f.status + (f" ({f.note})" if f.note else ""),
             "control": f.control, "rule": f.rule} for f in findings]
    return pd.DataFrame(rows, columns=["finding", "paper", "model", "this run", "kind", "status", "control", "rule"])


def count_line(findings: Sequence[Finding]) -> str:
    """The counts a notebook prints: counted tests by status, then checks by status."""
    tests = pd.Series([f.status for f in findings if f.kind == "test" and f.counted], dtype=object)
    checks = pd.Series([f.status for f in findings if f.kind == "check"], dtype=object)
    return ("Tests: " + ", ".join(f"{(tests == status).sum()} {status}" for status in STATUSES)
            + "; checks: " + ", ".join(f"{(checks == status).sum()} {status}" for status in CHECK_STATUSES) + ".")


def verdicts(findings: Sequence[Finding], claims: Sequence[str] | None = None, *, values: bool = True) -> str:
    """"This run:" sentences for the findings a figure shows: per claim, the paper's value and each model's verdict.

    Parameters
    ----------
    findings : sequence of Finding
    claims : sequence of str, optional
        Keep the findings whose claim starts with one of these (all when None).
    values : bool
        Give this run's value after each verdict. False leaves it out: for a line that nbval checks when
        the value moves between machines more than its printed digits (the verdict does not).

    Returns
    -------
    str
        One line per claim, e.g. ``This run: The silhouette rises (paper: rises in every setup):
        reproduced on (i) polarity (0.05 -> 0.41); not reproduced on ...``; a check reads ``Check:
        ... (expected: ...): passed ...``; a row beside the counted one (the paper's procedure on a
        decoder) says so. The rule that decided it is on the claim's line of ``RESULTS.md``.
    """
    chosen = [f for f in findings if claims is None or any(f.finding.startswith(claim) for claim in claims)]
    if not chosen:
        raise ValueError(f"No finding's claim starts with any of {list(claims or [])}.")
    grouped: dict[tuple[str, str, str], list[Finding]] = {}
    for finding in chosen:
        grouped.setdefault((finding.kind, finding.finding, finding.paper), []).append(finding)
    lines = []
    for (kind, claim, paper), rows in grouped.items():
        judged = "; ".join(f.status + (f" on {f.model}" if f.model != "-" else "")
                           + ("" if f.counted else " (the paper's procedure, not counted)")
                           + (f" ({f.ours})" if values and f.ours != "-" else "")
                           + (f", {f.note}" if f.note else "") + _reason(f) for f in rows)
        lead, given = ("This run", "paper") if kind == "test" else ("Check", "expected")
        lines.append(f"{lead}: {claim} ({given}: {paper}): {judged}.")
    return "\n".join(lines)


def _reason(finding: Finding) -> str:
    """" because ..." for a finding that is not comparable for a stated reason (not for a rule that could not apply)."""
    rule = finding.rule.rstrip(".")
    if finding.status != "not comparable" or rule.lower().startswith(("reproduced if", "passed if")):
        return ""
    # "Not run ..." reads "because not run ...", but a name such as "GPT-2 ..." keeps its capitals.
    return " because " + (rule[0].lower() + rule[1:] if rule[1:2].islower() else rule)


def _headline_lines(findings: Sequence[Finding]) -> list[str]:
    """One bullet per headline claim: its status on every model it was tested on (counted tests only)."""
    claims: dict[str, list[Finding]] = {}
    for finding in findings:
        if finding.headline and finding.kind == "test" and finding.counted:
            claims.setdefault(finding.finding, []).append(finding)
    return [f"- {claim}: " + "; ".join(f"{f.model} {f.status}" + (f" ({f.note})" if f.note else "") for f in rows)
            for claim, rows in claims.items()]


def _section(heading: str, findings: Sequence[Finding], columns: list[str], empty: str) -> list[str]:
    table = findings_table(findings).drop(columns="kind")
    if columns is _CHECK_COLUMNS:
        table = table.drop(columns="control")
    table = table.set_axis(columns, axis=1)
    return [heading, "", markdown_table(table) if findings else empty, ""]


def write_results(findings: Sequence[Finding], path: str | Path, *, title: str, citation: str, models: str,
                  notes: Sequence[str] = ()) -> Path:
    """Write ``RESULTS.md``: what was run, the headline findings, the tests, the rows beside them, the checks.

    Tests and checks are written in sections of their own; only the counted tests make the
    headline and the summary's count of reproductions. Every page has a Checks section, empty or not.

    Parameters
    ----------
    findings : sequence of Finding
    path : str or Path
        The file to write (its folder is created).
    title : str
        First heading.
    citation : str
        The study's reference (authors, year, title, venue).
    models : str
        The models run and which paper model each stands in for.
    notes : sequence of str
        Paragraphs written under the title (the profile, wall time, memory ...).

    Returns
    -------
    Path
    """
    if not findings:
        raise ValueError("there are no findings to write.")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tests = [f for f in findings if f.kind == "test" and f.counted]
    beside = [f for f in findings if f.kind == "test" and not f.counted]
    checks = [f for f in findings if f.kind == "check"]
    lines = [f"# {title}", "", f"**Study:** {citation}", "", f"**Models:** {models}", "",
             *[line for note in notes for line in (note, "")],
             _HEADLINE_HEADING, "", *_headline_lines(findings), "",
             *_section(_TESTS_HEADING, tests, _COLUMNS, "No test is declared."),
             *(_section(_BESIDE_HEADING, beside, _COLUMNS, "") if beside else []),
             *_section(_CHECKS_HEADING, checks, _CHECK_COLUMNS, "No check is declared."),
             "**Summary:** " + count_line(findings), "",
             "**Statuses:** " + "; ".join(f"*{status}*: {meaning}" for status, meaning in STATUS_MEANINGS.items())
             + ".", "",
             "**Kinds:** " + "; ".join(f"*{kind}*: {meaning}" for kind, meaning in KIND_MEANINGS.items()) + ".", ""]
    path.write_text("\n".join(lines))
    return path


@dataclass(frozen=True)
class StudyResults:
    """A ``RESULTS.md`` read back by :func:`read_results`.

    Attributes
    ----------
    title, citation, models : str
    headlines : list of str
        The headline bullets, without the leading ``- ``.
    statuses : pandas.Series
        The status of every counted test, in table order.
    beside : pandas.Series
        The statuses of the rows beside the tests (not counted).
    checks : pandas.Series
        The status of every check.
    """

    title: str
    citation: str
    models: str
    headlines: list
    statuses: pd.Series
    beside: pd.Series
    checks: pd.Series

    @property
    def counts(self) -> pd.Series:
        """Counted tests per status, in :data:`STATUSES` order."""
        return self.statuses.value_counts().reindex(list(STATUSES), fill_value=0)

    @property
    def check_counts(self) -> pd.Series:
        """Checks per status, in :data:`CHECK_STATUSES` order."""
        return self.checks.value_counts().reindex(list(CHECK_STATUSES), fill_value=0)

    @property
    def every_status(self) -> list[str]:
        """Every row's status, section by section: what :func:`isolib.runner.compare_outputs` compares."""
        return [*self.statuses, *(f"beside: {s}" for s in self.beside), *(f"check: {s}" for s in self.checks)]


def _field(text: str, name: str, path: Path) -> str:
    match = re.search(rf"^\*\*{name}:\*\* (.+)$", text, re.M)
    if not match:
        raise ValueError(f"{path} has no '**{name}:**' line; regenerate it with isolib.findings.write_results.")
    return match.group(1)


def _column(section: str | None, column: int) -> pd.Series:
    """One column of a section's Markdown table (escaped pipes, ``\\|``, inside a cell do not separate cells)."""
    rows = [line for line in (section or "").splitlines() if line.startswith("| ")][1:]  # the header row aside
    return pd.Series([re.split(r"(?<!\\)\|", row)[column].strip().split(" (")[0] for row in rows], dtype=object)


def read_results(path: str | Path) -> StudyResults:
    """Read a ``RESULTS.md`` written by :func:`write_results`.

    Raises
    ------
    ValueError
        If the file is empty, not text, or lacks one of the parts :func:`write_results` writes.
    """
    path = Path(path)
    try:
        text = path.read_text()
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not text; regenerate it with isolib.findings.write_results.") from None
    if not text.strip():
        raise ValueError(f"{path} is empty; regenerate it with isolib.findings.write_results.")
    title = text.splitlines()[0].removeprefix("# ")
    sections = {section.splitlines()[0]: section for section in re.split(r"^## ", text, flags=re.M)[1:]}

    def section(heading: str) -> str | None:
        return sections.get(heading[3:])

    status_column = _COLUMNS.index("status") + 1
    tests, checks = section(_TESTS_HEADING), section(_CHECKS_HEADING)
    if section(_HEADLINE_HEADING) is None or tests is None or checks is None:
        raise ValueError(f"{path} lacks its headline, tests or checks section; regenerate it with "
                         "isolib.findings.write_results.")
    headlines = [line[2:] for line in section(_HEADLINE_HEADING).splitlines() if line.startswith("- ")]
    return StudyResults(title, _field(text, "Study", path), _field(text, "Models", path), headlines,
                        _column(tests, status_column), _column(section(_BESIDE_HEADING), status_column),
                        _column(checks, _CHECK_COLUMNS.index("status") + 1))


def overview_text(figures_dir: str | Path, *, thumbnail_width: int = 220) -> str:
    """``figures/README.md``: what reproduces, study by study, read from the ``RESULTS.md`` files.

    One section per folder of ``figures_dir`` (in name order): for a study with a ``RESULTS.md``,
    its title, citation, models, the count of its tests by status and of its checks, its headline
    findings, a link to the ``RESULTS.md``; for every folder, a thumbnail linking to each PNG figure.
    Only tests are counted as reproductions. A folder named after a study notebook is checked first
    (:func:`isolib.committed.validate_committed`): a study without its ``RESULTS.md``, or with a damaged
    committed file, raises :class:`isolib.errors.ResultsError` naming the file, never reads as no study.

    Parameters
    ----------
    figures_dir : str or Path
        The committed ``figures/`` folder.
    thumbnail_width : int
        Width in pixels of each thumbnail.

    Returns
    -------
    str
    """
    from isolib.committed import validate_committed
    from isolib.runner import is_study

    figures_dir = Path(figures_dir)
    folders = sorted(p for p in figures_dir.iterdir() if p.is_dir())
    for folder in folders:
        if is_study(folder.name):
            validate_committed(folder.name, folder)
    lines = ["# What reproduces", "",
             "Generated by `python -m isolib reproduce --profile full` (or `python -m isolib overview`) from the "
             "committed `RESULTS.md` of each study; do not edit by hand. Every count and status below is read "
             "from those files, which the latest `full` run wrote. Only *tests* (claims of a paper that the data "
             "could refute) are counted; *checks* (bookkeeping, properties true by construction) are listed "
             "apart.", "",
             "| study | " + " | ".join(STATUSES) + " | checks passed / failed | results |",
             "|---|" + "---:|" * len(STATUSES) + "---:|---|"]
    sections = []
    for folder in folders:
        results_path = folder / "RESULTS.md"
        figures = sorted(folder.glob("*.png"))
        section = [f"## {folder.name}", ""]
        if results_path.exists():
            results = read_results(results_path)
            counts, checks = results.counts, results.check_counts
            checked = f"{checks['passed']} / {checks['failed']}"
            lines.append(f"| [{folder.name}](#{folder.name}) | "
                         + " | ".join(str(counts[status]) for status in STATUSES)
                         + f" | {checked} | [RESULTS.md]({folder.name}/RESULTS.md) |")
            section += [f"**{results.title}**", "", f"*Study:* {results.citation}", "",
                        f"*Models:* {results.models}", "",
                        "*Tests:* " + ", ".join(f"{counts[status]} {status}" for status in STATUSES)
                        + f" ([RESULTS.md]({folder.name}/RESULTS.md)).", "",
                        "*Checks:* " + ", ".join(f"{checks[status]} {status}" for status in CHECK_STATUSES) + ".", ""]
            if results.headlines:
                section += ["*Headline findings:*", "", *[f"- {line}" for line in results.headlines], ""]
        else:
            section += ["No findings are declared for this notebook (it is not a study).", ""]
        if figures:
            section += [" ".join(f'<a href="{folder.name}/{png.name}"><img src="{folder.name}/{png.name}" '
                                 f'width="{thumbnail_width}" alt="{png.stem}"></a>' for png in figures), ""]
        sections += section
    return "\n".join([*lines, "", *sections])


def write_overview(figures_dir: str | Path) -> Path:
    """Write :func:`overview_text` of ``figures_dir`` to ``<figures_dir>/README.md``; return its path."""
    path = Path(figures_dir) / "README.md"
    # Written aside and renamed: two notebooks finishing together (make -j2 figures) never interleave.
    partial = path.with_name(f".README.md.{os.getpid()}")
    partial.write_text(overview_text(figures_dir))
    os.replace(partial, path)
    return path
