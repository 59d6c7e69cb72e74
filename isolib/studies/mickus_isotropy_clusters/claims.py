"""The claims of notebook 04 (Mickus et al. 2024), judged from its evidence tables alone.

:func:`record` reads the evidence :mod:`.compute` produces (the traces per setup, seed and update, the
controls, the per-seed correlations, Tables 1 and 2, Section 2's demonstration, Appendix A's plan, and
the run's parameters and timings) and returns the study's :class:`~isolib.findings.Record`; the functions it
uses judge one section each, so the notebook prints a section's verdicts from the same code:

* :func:`relative_change`, :func:`seed_changes`, :func:`monotonicity` -- the effect sizes the trend
  rules judge: how far a metric moved towards its bound, and how steadily;
* :func:`trace_summary` and :func:`correlation_summary` -- a setup's trace in a few numbers;
* :func:`trend_findings`, :func:`control_findings`, :func:`section2_finding` and :func:`findings` -- the
  paper's claims beside ours (per figure, and all of them for ``RESULTS.md``).

Nothing here loads a model or computes a trace: every interval is over the seeds of the stored traces.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from isolib.findings import (
    Finding,
    Record,
    Verdict,
    all_of,
    bootstrap_threshold,
    declare,
    not_comparable,
    threshold,
    within,
)
from isolib.studies.mickus_isotropy_clusters.settings import (
    CITATION,
    LABEL_FREE,
    PAPER_STATIC_DIM,
    PAPER_TABLE1,
    PAPER_TABLE2,
    SHUFFLED,
    TITLE,
)

__all__ = [
    "BOUNDS",
    "EFFECT_THRESHOLD",
    "MONOTONE_THRESHOLD",
    "CORRELATION_THRESHOLD",
    "SPREAD_THRESHOLD",
    "relative_change",
    "seed_changes",
    "monotonicity",
    "seed_monotonicity",
    "correlation_summary",
    "trace_summary",
    "trend_findings",
    "control_findings",
    "section2_finding",
    "findings",
    "models_text",
    "run_notes",
    "record",
]


# Where each metric's change is measured to: IsoScore's floor, the silhouette's ceiling.
BOUNDS = {"isoscore": 0.0, "silhouette": 1.0}
# Thresholds of ours (the paper gives no effect size, no share of monotone steps, no correlation bound, no spread).
EFFECT_THRESHOLD = 0.10
MONOTONE_THRESHOLD = 0.95
CORRELATION_THRESHOLD = -0.7
SPREAD_THRESHOLD = 0.01
# What the interval of a trend, a correlation or a control resamples.
SEEDS_UNIT = "seeds"


def relative_change(first, last, *, bound: float):
    """How far a metric moved towards ``bound``, as a share of the way: ``(last - first) / (bound - first)``.

    1 means it reached the bound, 0 that it did not move, a negative value that it moved away.
    IsoScore is judged towards 0 (``(first - last) / first``: a fall from 0.59 to 0.56 is 0.05,
    from 0.30 to 0.001 is 0.99), the silhouette towards 1 (from 0.0 to 0.58 is 0.58).

    Parameters
    ----------
    first, last : float or array_like of shape (n,)
    bound : float
        The end the metric is expected to move to; ``first`` must differ from it.

    Returns
    -------
    float or ndarray of shape (n,)
    """
    first, last = np.asarray(first, dtype=float), np.asarray(last, dtype=float)
    return (last - first) / (bound - first)


def seed_changes(trace: pd.DataFrame, metric: str, *, bound: float) -> pd.Series:
    """:func:`relative_change` of ``metric`` from the first recorded update to the last, per seed.

    Parameters
    ----------
    trace : pandas.DataFrame
        ``seed``, ``update`` and ``metric``, one row per seed and recorded update.
    metric : str
    bound : float

    Returns
    -------
    pandas.Series
        Indexed by seed.
    """
    ordered = trace.sort_values(["seed", "update"]).groupby("seed")[metric]
    return pd.Series(relative_change(ordered.first(), ordered.last(), bound=bound), index=ordered.first().index,
                     name=metric)


def _longest_run(flags: np.ndarray) -> int:
    longest = current = 0
    for flag in flags:
        current = current + 1 if flag else 0
        longest = max(longest, current)
    return longest


def monotonicity(values, *, rising: bool) -> tuple[float, int]:
    """How steadily a trace moves one way: the share of steps in that direction, and the longest run against it.

    Parameters
    ----------
    values : array_like of shape (n_updates,)
        A metric after each recorded update, in order.
    rising : bool
        The expected direction: up (True) or down.

    Returns
    -------
    share : float
        Steps that move the expected way (strictly) over all ``n_updates - 1`` steps; a step that
        does not move counts as neither. NaN with fewer than 2 values.
    longest_against : int
        The most consecutive steps that move the other way (strictly).
    """
    steps = np.diff(np.asarray(values, dtype=float))
    if not len(steps):
        return np.nan, 0
    expected, against = (steps > 0, steps < 0) if rising else (steps < 0, steps > 0)
    return float(expected.mean()), _longest_run(against)


def seed_monotonicity(trace: pd.DataFrame, metric: str, *, rising: bool) -> pd.DataFrame:
    """:func:`monotonicity` of ``metric`` per seed: columns ``share`` and ``longest_against``, indexed by seed."""
    rows = {seed: monotonicity(run.sort_values("update")[metric], rising=rising) for seed, run in trace.groupby("seed")}
    return pd.DataFrame.from_dict(rows, orient="index", columns=["share", "longest_against"]).rename_axis("seed")


def _mean_above(values: pd.Series, bound: float) -> Verdict:
    """The mean over seeds above ``bound``, with its bootstrap interval over seeds."""
    return bootstrap_threshold(values.to_numpy(), np.mean, above=bound)


def _mean_below(values: pd.Series, bound: float) -> Verdict:
    """The mean over seeds below ``bound``, with its bootstrap interval over seeds."""
    return bootstrap_threshold(values.to_numpy(), np.mean, below=bound)


def correlation_summary(correlation: pd.DataFrame) -> pd.Series:
    """A setup's correlations over its seeds: ``pearson_mean``, ``pearson_max``, ``spearman_mean``, ``spearman_max``
    (the maximum is the weakest correlation; the paper's Table 3 reports them per GLUE setup).

    Parameters
    ----------
    correlation : pandas.DataFrame
        ``pearson`` and ``spearman``, one row per seed (:func:`~.compute.trace_correlations`).
    """
    return pd.Series({"pearson_mean": correlation.pearson.mean(), "pearson_max": correlation.pearson.max(),
                      "spearman_mean": correlation.spearman.mean(), "spearman_max": correlation.spearman.max()})


def trace_summary(trace: pd.DataFrame, correlation: pd.DataFrame) -> pd.Series:
    """First and last IsoScore and silhouette (mean and std over seeds), the spread over seeds, correlations.

    Parameters
    ----------
    trace : pandas.DataFrame
        One setup's trace: ``seed``, ``update``, ``isoscore``, ``silhouette``.
    correlation : pandas.DataFrame
        Its correlations, one row per seed (:func:`correlation_summary`).

    Returns
    -------
    pandas.Series
        ``isoscore_first``, ``isoscore_last``, ``silhouette_first``, ``silhouette_last`` (means over
        seeds) with ``..._std``; ``max_std`` and ``mean_std`` (over updates and both metrics, the
        standard deviation across seeds); ``pearson_max``, ``spearman_max`` (the weakest, i.e.
        largest, correlation over seeds) and their means.
    """
    per_update = trace.groupby("update")[["isoscore", "silhouette"]]
    means, spreads = per_update.mean(), per_update.std(ddof=1).fillna(0.0)
    first, last = means.index.min(), means.index.max()
    return pd.Series({
        "isoscore_first": means.isoscore[first], "isoscore_first_std": spreads.isoscore[first],
        "isoscore_last": means.isoscore[last], "isoscore_last_std": spreads.isoscore[last],
        "silhouette_first": means.silhouette[first], "silhouette_first_std": spreads.silhouette[first],
        "silhouette_last": means.silhouette[last], "silhouette_last_std": spreads.silhouette[last],
        "max_std": float(spreads.to_numpy().max()), "mean_std": float(spreads.to_numpy().mean()),
        **correlation_summary(correlation),
    })


_LOST = "(the value is lost in our copy of the paper)"
_SEEDS = "mean over seeds, with its 95% bootstrap interval over seeds"


def _percent(share: float) -> str:
    """A share as a percentage: whole percents, one decimal below 1%, and 0% for what rounds to it (never "-0.0%")."""
    if abs(share) < 0.0005:
        return "0%"
    return f"{share:.0%}" if abs(share) >= 0.01 else f"{share:.1%}"


def _moved(first: float, last: float, change: pd.Series, verdict: Verdict, bound: float) -> str:
    """``0.280 -> 0.003, 99% of the way to 0 [95% CI ...]``: a metric's means and its relative change."""
    moved = f"{first:.3f} -> {last:.3f}, {_percent(change.mean())} of the way to {bound:g}"
    return f"{moved} {verdict.interval_text}".rstrip()


def trend_findings(traces: pd.DataFrame, correlations: pd.DataFrame, *, appendix: bool = False) -> list[Finding]:
    """Figures 2-4's claims per setup: IsoScore falls, the silhouette rises, they are strongly anti-correlated.

    Each trend is judged by its effect size: the :func:`relative_change` towards the metric's bound
    (0 for IsoScore, 1 for the silhouette), mean over seeds with its interval over seeds, must be at
    least :data:`EFFECT_THRESHOLD` (ours; the paper gives no effect size). For the four setups the
    paper's "monotonically decreasing relationship" is measured too (:func:`monotonicity`), and its
    "negligible standard deviations" across seeds.

    Parameters
    ----------
    traces : pandas.DataFrame
        :func:`isolib.probe.train_probe` traces with a ``setup`` column (its name), several setups.
    correlations : pandas.DataFrame
        Their correlations per setup and seed (:func:`~.compute.trace_correlations`).
    appendix : bool
        The GLUE setups of Appendix A (claims prefixed so; no headline, no claim on monotonicity
        or the spread over seeds, which the appendix does not make).
    """
    findings = []
    for setup, run in traces.groupby("setup", sort=False):
        correlation = correlations[correlations.setup == setup]
        summary = trace_summary(run, correlation)
        findings += _trends(setup, run, correlation, summary, appendix=appendix)
        if not appendix:
            findings += _steadiness(setup, run, summary)
    return findings


def _trends(setup: str, run: pd.DataFrame, correlation: pd.DataFrame, summary: pd.Series, *,
            appendix: bool) -> list[Finding]:
    """IsoScore falls, the silhouette rises, and they are strongly anti-correlated, in one setup's trace."""
    prefix = "Appendix A: " if appendix else ""
    falls, rises = (seed_changes(run, metric, bound=BOUNDS[metric]) for metric in ("isoscore", "silhouette"))
    falls_verdict, rises_verdict = _mean_above(falls, EFFECT_THRESHOLD), _mean_above(rises, EFFECT_THRESHOLD)
    worst = correlation[["pearson", "spearman"]].max(axis=1)  # the weaker of Pearson and Spearman, per seed
    no_change = f"no change: the start of the run ({EFFECT_THRESHOLD:.0%} of the way, ours)"
    return [
        declare(f"{prefix}IsoScore falls while the embeddings are optimised",
                "falls in every setup (no effect size given)", setup,
                _moved(summary.isoscore_first, summary.isoscore_last, falls, falls_verdict, 0), falls_verdict,
                f"reproduced if IsoScore falls by at least {EFFECT_THRESHOLD:.0%} of the way to 0, (first - last) "
                f"/ first, {_SEEDS}.", kind="test", control=no_change, threshold_ours=True, headline=not appendix,
                sampling_unit=SEEDS_UNIT),
        declare(f"{prefix}The silhouette rises", "rises in every setup (no effect size given)", setup,
                _moved(summary.silhouette_first, summary.silhouette_last, rises, rises_verdict, 1), rises_verdict,
                f"reproduced if the silhouette rises by at least {EFFECT_THRESHOLD:.0%} of the way to 1, (last - "
                f"first) / (1 - first), {_SEEDS}.", kind="test", control=no_change, threshold_ours=True,
                headline=not appendix, sampling_unit=SEEDS_UNIT),
        declare(f"{prefix}IsoScore and silhouette are strongly negatively correlated",
                f"strong negative Pearson and Spearman {_LOST}", setup,
                f"Pearson up to {summary.pearson_max:.3f} (mean {summary.pearson_mean:.3f}), Spearman up to "
                f"{summary.spearman_max:.3f} (mean {summary.spearman_mean:.3f}) over seeds",
                bootstrap_threshold(worst.to_numpy(), np.max, below=CORRELATION_THRESHOLD),
                f"reproduced if both correlations are below {CORRELATION_THRESHOLD} in every seed (interval over "
                "seeds). Two monotone trends give Spearman -1 whatever drives them (the shuffled-label control "
                "does too).", kind="test", control="no correlation (0)", threshold_ours=True,
                headline=not appendix, sampling_unit=SEEDS_UNIT),
    ]


def _steadiness(setup: str, run: pd.DataFrame, summary: pd.Series) -> list[Finding]:
    """The paper's "monotonically decreasing relationship" and "negligible standard deviations", in one setup."""
    down, up = seed_monotonicity(run, "isoscore", rising=False), seed_monotonicity(run, "silhouette", rising=True)
    steadiest = np.minimum(down.share, up.share)  # per seed, the less steady of the two metrics
    return [
        declare("A monotonically decreasing relationship between IsoScore and silhouette",
                "monotonically decreasing (Figure 3)", setup,
                f"IsoScore fell in {down.share.mean():.1%} of updates (longest run against: "
                f"{down.longest_against.max()}), the silhouette rose in {up.share.mean():.1%} (longest run "
                f"against: {up.longest_against.max()})",
                _mean_above(steadiest, MONOTONE_THRESHOLD),
                f"reproduced if IsoScore falls and the silhouette rises in at least {MONOTONE_THRESHOLD:.0%} of "
                f"the updates each, {_SEEDS}.", kind="test",
                control=f"a trace reversing in more than {1 - MONOTONE_THRESHOLD:.0%} of updates (ours)",
                threshold_ours=True, sampling_unit=SEEDS_UNIT),
        declare("Negligible standard deviation across seeds", f"maximum and mean std {_LOST}", setup,
                f"max {summary.max_std:.4f}, mean {summary.mean_std:.4f}",
                threshold(summary.max_std, below=SPREAD_THRESHOLD),
                f"reproduced if the largest standard deviation across seeds, at any update and for either metric, "
                f"is below {SPREAD_THRESHOLD}. The seeds vary only the classifier's initialisation (every run "
                "starts from the same vectors and sees every item), so a small spread is expected.", kind="test",
                control=f"a spread of {SPREAD_THRESHOLD} (ours)", threshold_ours=True),
    ]


def _control_changes(shuffled: pd.DataFrame, free: pd.DataFrame) -> tuple[dict[str, str], dict[str, Verdict]]:
    """Each change the controls are judged on, as text and verdict: IsoScore and both silhouettes of the shuffled
    run, IsoScore and the silhouette of the label-free run."""
    # Each judged change: (control run, metric, bound, whether it should move at least the threshold).
    judged = {"falls": (shuffled, "isoscore", 0.0, True), "rises": (shuffled, "silhouette_shuffled", 1.0, True),
              "true": (shuffled, "silhouette_true", 1.0, False), "free_falls": (free, "isoscore", 0.0, False),
              "free_rises": (free, "silhouette_true", 1.0, False)}
    text, verdict = {}, {}
    for key, (run, metric, bound, moves) in judged.items():
        change = seed_changes(run, metric, bound=bound)
        verdict[key] = (_mean_above if moves else _mean_below)(change, EFFECT_THRESHOLD)
        means = run.groupby("update")[metric].mean()
        text[key] = _moved(means.iloc[0], means.iloc[-1], change, verdict[key], bound)
    return text, verdict


def control_findings(controls: pd.DataFrame, correlations: pd.DataFrame) -> list[Finding]:
    """What the paper's argument predicts for each control of :func:`~.compute.control_traces`, and whether it holds.

    Section 2.3 argues that *any* linear classification objective pulls the points into the
    clusters of the labels it is trained on. So, with shuffled labels, IsoScore should fall and the
    silhouette against the shuffled labels rise as with the true ones, while the silhouette against
    the true labels should not rise; with an objective that ignores the labels there is nothing to
    cluster by, so neither metric should move by :data:`EFFECT_THRESHOLD` of the way to its bound.

    Parameters
    ----------
    controls : pandas.DataFrame
        :func:`~.compute.run_controls`: the control runs with a ``setup`` column, several setups.
    correlations : pandas.DataFrame
        The shuffled runs' correlations between IsoScore and the silhouette against the shuffled labels,
        per setup and seed (:func:`~.compute.trace_correlations`).
    """
    findings = []
    way = f"{EFFECT_THRESHOLD:.0%} of the way"
    for setup, runs in controls.groupby("setup", sort=False):
        text, verdict = _control_changes(*(runs[runs.control == name] for name in (SHUFFLED, LABEL_FREE)))
        correlation = correlations[correlations.setup == setup][["pearson", "spearman"]].mean()
        findings += [
            declare("Control (ours), shuffled labels: IsoScore falls and the silhouette against the shuffled labels "
                    "rises", "not run; Section 2.3 predicts both (any linear classifier clusters its labels)", setup,
                    f"IsoScore {text['falls']}; silhouette {text['rises']}; Pearson {correlation.pearson:.3f}, "
                    f"Spearman {correlation.spearman:.3f} (means over seeds)", all_of(verdict["falls"], verdict["rises"]),
                    f"reproduced if both move at least {way} to their bound, {_SEEDS}; the seed also draws the "
                    "permutation.", kind="test", control=f"no change: the start of the run ({way}, ours)",
                    threshold_ours=True, sampling_unit=SEEDS_UNIT),
            declare("Control (ours), shuffled labels: the silhouette against the true labels does not rise",
                    "not run; predicted: the shuffled labels cut across the true classes", setup,
                    f"silhouette (true labels) {text['true']}", verdict["true"],
                    f"reproduced if it moves less than {way} to 1, {_SEEDS}.", kind="test",
                    control=f"a rise of {way} to 1 (ours)", threshold_ours=True, sampling_unit=SEEDS_UNIT),
            declare("Control (ours), label-free objective: neither IsoScore falls nor the silhouette rises",
                    "not run; predicted: no labels, no clusters to pull the points into", setup,
                    f"IsoScore {text['free_falls']}; silhouette (true labels) {text['free_rises']}",
                    all_of(verdict["free_falls"], verdict["free_rises"]),
                    f"reproduced if both move less than {way} to their bound, {_SEEDS}. The targets are uniform "
                    "over the classes: the same probe, loss and optimiser, no label.", kind="test",
                    control=f"a move of {way} (ours)", threshold_ours=True, sampling_unit=SEEDS_UNIT),
        ]
    return findings


def section2_finding(demo: pd.DataFrame) -> Finding:
    """Section 2 made concrete: each step of :func:`~.compute.tightening_demo` raises the silhouette and lowers IsoScore."""
    rising = demo.silhouette.diff().dropna()
    falling = demo.isoscore.diff().dropna()
    return declare("Section 2: tighter clusters raise the silhouette and lower IsoScore", "argued mathematically",
                   "synthetic clusters",
                   f"silhouette {demo.silhouette.iloc[0]:.2f} -> {demo.silhouette.iloc[-1]:.2f}, IsoScore "
                   f"{demo.isoscore.iloc[0]:.2f} -> {demo.isoscore.iloc[-1]:.2f}",
                   threshold(np.r_[rising, -falling], above=0),
                   "passed if every tightening step raises the silhouette and lowers IsoScore (our own synthetic "
                   "demonstration of the paper's argument).", kind="check")


_COUNTS_CONTROL = "any other count: another version of the data, or another probe (a bias, one vector per pair)"


def _table1_findings(table1: pd.DataFrame) -> list[Finding]:
    """Table 1: tests for (i) and (ii), whose counts decode the data; checks for the stand-ins (iii) and (iv)."""
    findings = []
    for row in table1.itertuples():
        numeral = row.setup.split()[0]
        items, parameters = PAPER_TABLE1[numeral]
        claim = f"Table 1: items and trainable parameters of {row.setup}"
        paper = f"{items:,} items, {parameters:,} parameters"
        static = not pd.isna(row.parameters_at_paper_dim)
        ours = f"{row.n_items:,} items, {row.n_parameters:,} parameters" + (
            f" ({row.parameters_at_paper_dim:,.0f} at word2vec's {PAPER_STATIC_DIM} dimensions)" if static else "")
        if numeral == "(iii)":
            findings.append(not_comparable(
                claim, paper, f"the paper's own count is inconsistent: {parameters:,} parameters decode to 14,466 x "
                f"{PAPER_STATIC_DIM} + 4 x {PAPER_STATIC_DIM + 1}, i.e. 14,466 vectors, not its {items:,} items; our "
                f"stand-in takes {items:,} words by construction.", kind="check", model=row.setup, ours=ours))
        elif not row.full:
            findings.append(not_comparable(claim, paper, "this profile uses a subset of the items.",
                                           kind="check" if static else "test", model=row.setup, ours=ours))
        elif static:
            findings.append(declare(
                claim, paper, row.setup, ours,
                all_of(within(row.parameters_at_paper_dim, parameters, 0), within(row.n_items, items, 0)),
                f"passed if both counts are exactly the paper's, the parameters counted for the same probe over "
                f"{PAPER_STATIC_DIM}-d vectors; true by construction: the stand-in takes the paper's number of words, "
                "and the count is a formula of it.", kind="check"))
        else:
            findings.append(declare(
                claim, paper, row.setup, ours,
                all_of(within(row.n_parameters, parameters, 0), within(row.n_items, items, 0)),
                "reproduced if both counts are exactly the paper's (they decode the data: its items, its unique "
                "sentences, and the probe's shape).", kind="test", control=_COUNTS_CONTROL))
    return findings


def _appendix_findings(plan: pd.DataFrame, table2: pd.DataFrame, glue_traces: pd.DataFrame,
                       glue_correlations: pd.DataFrame) -> list[Finding]:
    """Appendix A: per task x model, the trends and Table 2's counts where run; the pairs not run, one
    "not comparable" row per reason (so that they do not swell the count of tests)."""
    findings = []
    counts = table2.set_index(["task", "model"]) if len(table2) else None
    for reason, skipped in plan[~plan.run].groupby("reason", sort=False):
        pairs = "; ".join(f"{row.task}, {row.model}" for row in skipped.itertuples())
        findings.append(not_comparable("Appendix A: IsoScore falls, the silhouette rises, strongly anti-correlated",
                                       "in every setup", reason[0].upper() + reason[1:], kind="test",
                                       model=f"{len(skipped)} task x model pair{'s' * (len(skipped) != 1)}",
                                       ours=pairs))
    for row in plan[plan.run].itertuples():
        setup = f"{row.task}, {row.model}"
        findings += trend_findings(glue_traces[glue_traces.setup == setup], glue_correlations, appendix=True)
        items, parameters = PAPER_TABLE2[row.task]
        count = counts.loc[(row.task, row.model)]
        claim = f"Table 2: items and trainable parameters of {row.task}"
        paper = f"{items:,} items" + (f", {parameters[row.model]:,} parameters" if row.model in parameters else "")
        ours = f"{count.n_items:,} items, {count.n_parameters:,} parameters"
        if not count.full:
            findings.append(not_comparable(claim, paper, "this profile uses a subset of the items.", kind="test",
                                           model=setup, ours=ours))
        elif row.model not in parameters:
            findings.append(not_comparable(claim, paper, f"the paper does not run {row.model}.", kind="test",
                                           model=setup, ours=ours))
        elif row.task == "mrpc":
            findings.append(not_comparable(claim, paper, "our MRPC is the original train file, 4,076 pairs; GLUE's "
                                           "train split drops the 408 pairs of its dev split, whose ids are not "
                                           "available here.", kind="test", model=setup, ours=ours))
        else:
            findings.append(declare(claim, paper, setup, ours,
                                    all_of(within(count.n_parameters, parameters[row.model], 0),
                                           within(count.n_items, items, 0)),
                                    "reproduced if both counts are exactly the paper's (they decode the data: its "
                                    "labelled items, its unique sentences).", kind="test", control=_COUNTS_CONTROL))
    return findings


def findings(evidence: Mapping[str, object]) -> list[Finding]:
    """Decide, claim by claim, whether this run reproduces the paper: every finding of ``RESULTS.md``, in its order.

    Parameters
    ----------
    evidence : mapping
        What the notebook stores (:func:`isolib.evidence.save_evidence`), by name: ``traces`` and
        ``correlations`` (the four setups, :func:`~.compute.train_setups` and
        :func:`~.compute.trace_correlations`), ``controls`` and ``control_correlations`` (the shuffled runs'),
        empty when no control is run; ``table1`` (:func:`~.compute.setup_table`), ``demo``
        (:func:`~.compute.tightening_demo`); Appendix A's ``appendix`` (:func:`~.compute.appendix_a_plan`),
        ``table2`` (:func:`~.compute.glue_table`), ``glue_traces`` and ``glue_correlations``.

    Returns
    -------
    list of Finding
    """
    found = trend_findings(evidence["traces"], evidence["correlations"])
    if len(evidence["controls"]):
        found += control_findings(evidence["controls"], evidence["control_correlations"])
    found += _table1_findings(evidence["table1"])
    found.append(section2_finding(evidence["demo"]))
    found += _appendix_findings(evidence["appendix"], evidence["table2"], evidence["glue_traces"],
                                evidence["glue_correlations"])
    return found


def models_text(glue_models: Sequence[str] = ()) -> str:
    """The ``Models`` line of ``RESULTS.md``: each model, the labels of the stand-ins, and what each stands in for."""
    line = ("all-MiniLM-L6-v2 (a sentence-transformer trained contrastively for sentence similarity, the paper's own "
            "model) for (i) and (ii); GloVe-50d with WordNet parts of speech for (iii) and GloVe-50d with WordNet "
            "noun supersenses (one per noun) for (iv), standing in for the paper's word2vec with CoDWoE's parts of "
            "speech and with Tikhonov et al.'s supersenses")
    return line + (f"; {', '.join(glue_models)} (sentence-transformers) for Appendix A" if glue_models else "")


def run_notes(evidence: Mapping[str, object]) -> list[str]:
    """The notes of ``RESULTS.md``: what this run ran, how the metrics and intervals read, its time and memory.

    ``evidence["run"]`` holds the notebook's parameters (``profile``, ``n_items``, ``n_updates``, ``seeds``,
    ``control_every``, ``glue_tasks``, ``glue_models``, ``glue_updates``, ``glue_sample_size``) and what the run
    took (``control_minutes``, ``wall_minutes``, ``peak_gib``); the setups run are read from the tables.
    """
    run, controls, plan = evidence["run"], evidence["controls"], evidence["appendix"]
    names = list(dict.fromkeys(evidence["traces"].setup))
    return [
        f"Profile `{run['profile']}`: setups {', '.join(names)}; {run['n_items'] or 'all'} items per setup; "
        f"{run['n_updates']} updates; seeds {', '.join(map(str, run['seeds']))}.",
        "IsoScore on the trainable vectors (unpaired for SNLI), silhouette on the labelled representations "
        "(the sentence vectors in (i), the pairs [u; v] in (ii), the word vectors with each distinct label vector "
        "as one cluster in (iii) and (iv)).",
        "(iii) and (iv) are stand-ins: GloVe-50d with WordNet parts of speech, and GloVe-50d with WordNet noun "
        "supersenses (one per noun, so effectively single-label), instead of word2vec with CoDWoE and supersense "
        "data; their parameters are also counted at word2vec's 300 dimensions.",
        "What the seeds vary: every run starts from the same vectors and sees every item, so a seed sets only the "
        "classifier's initialisation (in a shuffled-label control also the permutation, in Appendix A also the "
        "metric samples); intervals are over seeds. Trends are judged by how far each metric moved towards its "
        "bound (IsoScore towards 0, the silhouette towards 1), thresholds ours.",
        (f"Controls (ours): {', '.join(dict.fromkeys(controls.setup))} also trained on shuffled labels and on a "
         f"label-free objective (uniform targets), {run['n_updates']} updates (metrics every {run['control_every']}), "
         f"the same seeds; the control runs took {run['control_minutes']:.1f} min." if len(controls) else
         "Controls (ours): not run in this profile."),
        (f"Appendix A: {', '.join(run['glue_tasks'])} with {', '.join(run['glue_models'])}; {run['glue_updates']} "
         f"updates; metrics on a fresh sample of {run['glue_sample_size']:,} items per update when a set is larger; "
         f"{int(plan.run.sum())} of the {len(plan)} task x model pairs run (the others are listed with their "
         "reason)." if run["glue_tasks"] else "Appendix A (GLUE) not run in this profile."),
        f"Wall time of the notebook: {run['wall_minutes']:.1f} min; peak memory of the kernel: "
        f"{run['peak_gib']:.1f} GiB.",
    ]


def record(evidence: Mapping[str, object]) -> Record:
    """The study's record (``results.json``) judged from its stored evidence (:func:`findings`, :func:`run_notes`)."""
    run = evidence["run"]
    return Record(TITLE, CITATION, models_text(run["glue_models"] if run["glue_tasks"] else []),
                  tuple(run_notes(evidence)), tuple(findings(evidence)))
