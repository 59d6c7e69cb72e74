"""The claims of notebook 04 (Mickus et al. 2024), judged from its evidence tables alone.

:func:`record` reads the evidence :mod:`.compute` produces (the traces per setup, seed and update, the
controls, the per-seed correlations, Tables 1 and 2, Section 2's demonstration, Appendix A's plan, and
the run's parameters and timings) and returns the study's :class:`~isolib.findings.Record`; the functions it
uses judge one section each, so the notebook prints a section's verdicts from the same code:

* :func:`relative_change`, :func:`seed_changes`, :func:`monotonicity` -- the effect sizes the trend
  rules judge: how far a metric moved towards its bound, and how steadily;
* :func:`trace_summary` and :func:`correlation_summary` -- a setup's trace in a few numbers;
* :func:`trend_findings` -- the paper's claims per setup, each beside its control judged by the same rule;
  :func:`control_findings` -- the controls alone, judged by the claims' rules (the notebook's controls
  section); :func:`section2_finding` and :func:`findings` -- the rest, and all of them for ``RESULTS.md``;
* :func:`stand_in_of` -- which findings are on a stand-in for the paper's vectors.

Nothing here loads a model or computes a trace: every interval is over the seeds of the stored traces.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from isolib.findings import (
    Finding,
    Record,
    Verdict,
    all_of,
    bootstrap_threshold,
    combine_datasets,
    cost_note,
    declare,
    mark_stand_ins,
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
    "SPREAD_THRESHOLD",
    "STAND_INS",
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
    "stand_in_of",
    "models_text",
    "run_notes",
    "record",
]


# Where each metric's change is measured to: IsoScore's floor, the silhouette's ceiling.
BOUNDS = {"isoscore": 0.0, "silhouette": 1.0}
# Thresholds of ours (the paper gives no effect size, no share of monotone steps, no spread).
EFFECT_THRESHOLD = 0.10
MONOTONE_THRESHOLD = 0.95
SPREAD_THRESHOLD = 0.01
# What the interval of a trend resamples.
SEEDS_UNIT = "seeds"
# The setups on a stand-in for the paper's vectors, by numeral: GloVe-50d for its 300-d word2vec.
STAND_INS = {"(iii)": "glove-50d", "(iv)": "glove-50d"}


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


def _with_interval(judged: tuple[str, Verdict]) -> str:
    """A judged text with its verdict's interval: ``0.280 -> 0.003, 99% of the way to 0 [95% CI ...]``."""
    text, verdict = judged
    return f"{text} {verdict.interval_text}".rstrip()


def _seeds_draw_items(run: pd.DataFrame, column: str) -> bool:
    """Whether the seeds drew the items ``column`` is evaluated on: its value before the first update differs
    across seeds (every seed starts from the same vectors, so only a sample of items can make it differ)."""
    return run.loc[run["update"] == run["update"].min(), column].nunique() > 1


def _over_seeds(run: pd.DataFrame, columns: Sequence[str], values: pd.Series, *, above: float) -> Verdict:
    """The mean of ``values`` (one per seed) above ``above``, with its 95% bootstrap interval over seeds: degenerate
    by construction (marked so, no status resting on it) unless the seeds drew the items the metrics ``columns``
    are evaluated on (:func:`_seeds_draw_items`), for elsewhere a seed sets only the classifier's initialisation.
    """
    verdict = bootstrap_threshold(values.to_numpy(), np.mean, above=above)
    if verdict.interval is None or all(_seeds_draw_items(run, column) for column in columns):
        return verdict
    return dataclasses.replace(verdict, degenerate=True, borderline=False)


def _moves(run: pd.DataFrame, column: str, metric: str) -> tuple[str, Verdict]:
    """How far ``column`` (IsoScore or a silhouette, ``metric``) moved towards its bound, per seed: the text
    (``0.280 -> 0.003, 99% of the way to 0``) and the verdict "at least :data:`EFFECT_THRESHOLD` of the way"."""
    bound = BOUNDS[metric]
    change = seed_changes(run, column, bound=bound)
    means = run.groupby("update")[column].mean()
    return (f"{means.iloc[0]:.3f} -> {means.iloc[-1]:.3f}, {_percent(change.mean())} of the way to {bound:g}",
            _over_seeds(run, [column], change, above=EFFECT_THRESHOLD))


def _steady(run: pd.DataFrame, silhouette: str) -> tuple[str, Verdict]:
    """How steadily IsoScore fell and the silhouette in column ``silhouette`` rose: text and verdict (the less
    steady of the two, per seed, in at least :data:`MONOTONE_THRESHOLD` of the recorded steps)."""
    down, up = seed_monotonicity(run, "isoscore", rising=False), seed_monotonicity(run, silhouette, rising=True)
    text = (f"IsoScore fell in {down.share.mean():.1%} of updates (longest run against: {down.longest_against.max()}), "
            f"the silhouette rose in {up.share.mean():.1%} (longest run against: {up.longest_against.max()})")
    return text, _over_seeds(run, ["isoscore", silhouette], np.minimum(down.share, up.share), above=MONOTONE_THRESHOLD)


# The trend claims: key -> (claim, the paper's value, rule). Figure 3's correlations belong to the steadiness
# claim: two steady trends give Spearman -1 whatever drives them, so they are reported there, not judged apart.
_TRENDS = {
    "falls": ("IsoScore falls while the embeddings are optimised", "falls in every setup (no effect size given)",
              f"reproduced if IsoScore falls by at least {EFFECT_THRESHOLD:.0%} of the way to 0, (first - last) / "
              f"first, {_SEEDS}."),
    "rises": ("The silhouette rises", "rises in every setup (no effect size given)",
              f"reproduced if the silhouette rises by at least {EFFECT_THRESHOLD:.0%} of the way to 1, (last - "
              f"first) / (1 - first), {_SEEDS}."),
    "steady": ("A monotonically decreasing relationship between IsoScore and silhouette",
               f"monotonically decreasing (Figure 3), with strong negative Pearson and Spearman {_LOST}",
               f"reproduced if IsoScore falls and the silhouette rises in at least {MONOTONE_THRESHOLD:.0%} of the "
               f"updates each, {_SEEDS}. The correlations are reported, not judged: two steady trends give "
               "Spearman -1 whatever drives them."),
}
_APPENDIX = "Appendix A: "
# Each trend's control, judged by the trend's own rule on the same items and seeds. IsoScore's fall is controlled
# by the label-free objective (the fall from optimising alone); shuffled labels are no control for it, since
# Section 2.3 predicts a fall for any labels. The silhouette's rise and its steadiness are controlled by the
# shuffled-label run's silhouette against the true labels: a run that moves the vectors as much, towards other labels.
_CONTROL_OF = {
    "falls": "the same training on a label-free objective (uniform targets: the same probe, loss and optimiser, no "
             "label), judged by the same rule",
    "rises": "the same training on shuffled labels, its silhouette against the true labels, judged by the same rule",
    "steady": "the same training on shuffled labels, IsoScore against the silhouette by the true labels, judged by "
              "the same rule on its recorded updates",
}


def _judged(run: pd.DataFrame, silhouette: str) -> dict[str, tuple[str, Verdict]]:
    """The three trend rules on one run (the paper's or a control's), the silhouette read from ``silhouette``."""
    return {"falls": _moves(run, "isoscore", "isoscore"), "rises": _moves(run, silhouette, "silhouette"),
            "steady": _steady(run, silhouette)}


def _weakest(correlation: pd.DataFrame) -> str:
    """``Pearson up to -0.805, Spearman up to -1.000``: the weakest correlations over seeds."""
    summary = correlation_summary(correlation)
    return f"Pearson up to {summary.pearson_max:.3f}, Spearman up to {summary.spearman_max:.3f}"


def _trained_on(runs: pd.DataFrame, correlation: pd.DataFrame) -> dict[str, str]:
    """The shuffled run against the labels it trained on (Section 2.3 predicts clusters there): the text beside
    its rise and its steadiness."""
    moved, _ = _moves(runs[runs.control == SHUFFLED], "silhouette_shuffled", "silhouette")
    return {"rises": f"against the shuffled labels it trained on: {moved}",
            "steady": f"against the shuffled labels it trained on, {_weakest(correlation)}"}


def _controls_of(setup: str, controls: pd.DataFrame | None,
                 control_correlations: pd.DataFrame | None) -> tuple[dict[str, tuple[Verdict, str]], str]:
    """The controls of ``setup`` (:data:`_CONTROL_OF`): per trend, the control's verdict and the text of the
    ``control`` column; or none, and what that column says instead."""
    if controls is None:
        return {}, "not given here: RESULTS.md judges each trend beside its control"
    ran = list(dict.fromkeys(controls.setup))
    if setup not in ran:
        return {}, (f"none run for this setup (the controls ran on {', '.join(ran)})" if ran else
                    "none run in this profile (the shuffled-label and label-free runs are controls of ours)")
    runs = controls[controls.setup == setup]
    shuffled, free = (_judged(runs[runs.control == name], "silhouette_true") for name in (SHUFFLED, LABEL_FREE))
    beside = _trained_on(runs, control_correlations[control_correlations.setup == setup])
    return {
        "falls": (free["falls"][1], f"{_CONTROL_OF['falls']}: {free['falls'][0]}. On shuffled labels IsoScore went "
                  f"{shuffled['falls'][0]}, as Section 2.3 predicts for any labels"),
        "rises": (shuffled["rises"][1], f"{_CONTROL_OF['rises']}: {shuffled['rises'][0]}; {beside['rises']}; "
                  f"label-free: {free['rises'][0]}"),
        "steady": (shuffled["steady"][1], f"{_CONTROL_OF['steady']}: {shuffled['steady'][0]}; {beside['steady']}"),
    }, ""


def _setup_findings(model: str, run: pd.DataFrame, correlation: pd.DataFrame, controls: tuple[dict, str], *,
                    appendix: bool) -> list[Finding]:
    """The trend claims on one setup's trace, each with its control (Section 3), or without one (Appendix A)."""
    by_claim, none_run = controls
    judged = _judged(run, "silhouette")
    correlations = f"; IsoScore against the silhouette over updates: {_weakest(correlation)}"
    findings = []
    for key in ("falls", "rises") if appendix else ("falls", "rises", "steady"):
        claim, paper, rule = _TRENDS[key]
        text = _with_interval(judged[key])
        if appendix and key == "rises":  # Appendix A's correlations (Table 3) quantify its two trends
            paper, text = f"{paper}; Table 3: strongly negative Pearson and Spearman {_LOST}", text + correlations
        elif key == "steady":
            text += correlations
        control_verdict, control = by_claim.get(key, (None, none_run))
        findings.append(declare((_APPENDIX if appendix else "") + claim, paper, model, text, judged[key][1], rule,
                                kind="test", control=control, control_verdict=control_verdict, threshold_ours=True,
                                headline=not appendix, sampling_unit=SEEDS_UNIT))
    return findings


def _spread_finding(setup: str, run: pd.DataFrame, correlation: pd.DataFrame) -> Finding:
    """The paper's "negligible standard deviations" across seeds, in one setup."""
    summary = trace_summary(run, correlation)
    return declare("Negligible standard deviation across seeds", f"maximum and mean std {_LOST}", setup,
                   f"max {summary.max_std:.4f}, mean {summary.mean_std:.4f}",
                   threshold(summary.max_std, below=SPREAD_THRESHOLD),
                   f"reproduced if the largest standard deviation across seeds, at any update and for either metric, "
                   f"is below {SPREAD_THRESHOLD}. The seeds vary only the classifier's initialisation (every run "
                   "starts from the same vectors and sees every item), so a small spread is expected.", kind="test",
                   control="none can be computed: the claim is about the seeds' own spread, which no other run "
                   "stands for", threshold_ours=True)


def trend_findings(traces: pd.DataFrame, correlations: pd.DataFrame, *, appendix: bool = False,
                   controls: pd.DataFrame | None = None,
                   control_correlations: pd.DataFrame | None = None) -> list[Finding]:
    """Figures 2-4's claims per setup: IsoScore falls, the silhouette rises, steadily (Figure 3), seeds agree.

    Each trend is judged by its effect size, the :func:`relative_change` towards the metric's bound, mean
    over seeds, at least :data:`EFFECT_THRESHOLD` (ours; the paper gives none); the "monotonically
    decreasing relationship" by the share of steady steps (:func:`monotonicity`), its correlations
    reported beside it; the "negligible standard deviations" across seeds. Each trend stands beside its
    control judged by the same rule (:data:`_CONTROL_OF`) where ``controls`` holds the setup's runs.

    Parameters
    ----------
    traces : pandas.DataFrame
        :func:`isolib.probe.train_probe` traces with a ``setup`` column (its name), several setups.
    correlations : pandas.DataFrame
        Their correlations per setup and seed (:func:`~.compute.trace_correlations`).
    appendix : bool
        The GLUE setups of Appendix A, named ``"task, model"``: the two trends only (the appendix makes no
        claim on steadiness or the spread over seeds), judged per task and combined per model over the
        tasks (:func:`isolib.findings.combine_datasets`), claims prefixed so, no headline.
    controls, control_correlations : pandas.DataFrame, optional
        :func:`~.compute.run_controls` and :func:`~.compute.shuffled_correlations`, both or neither; without
        them (a notebook's first table) the lines say that RESULTS.md sets each trend beside its control.
        The findings on a stand-in are marked so (:func:`stand_in_of`).
    """
    by_task: dict[str, list[Finding]] = {}
    findings = []
    for setup, run in traces.groupby("setup", sort=False):
        correlation = correlations[correlations.setup == setup]
        if appendix:
            task, model = setup.split(", ", 1)
            by_task.setdefault(task, []).extend(_setup_findings(
                model, run, correlation, ({}, "none run on the GLUE sets (the controls ran on Section 3's "
                                                     "setups)"), appendix=True))
        else:
            findings += _setup_findings(setup, run, correlation,
                                        _controls_of(setup, controls, control_correlations), appendix=False)
            findings.append(_spread_finding(setup, run, correlation))
    return mark_stand_ins(combine_datasets(by_task, unit="task") if appendix else findings, stand_in_of=stand_in_of)


def control_findings(controls: pd.DataFrame, control_correlations: pd.DataFrame) -> list[Finding]:
    """The controls of :func:`~.compute.control_traces` alone, judged by the three trend rules (the silhouette
    against the true labels), for the notebook's controls section: "reproduced" means that the control passes
    the claim's rule (Section 2.3 predicts it for IsoScore's fall on shuffled labels, any labels clustering).
    In :func:`findings` a control stands on the line of the claim it controls, never alone.

    Parameters
    ----------
    controls : pandas.DataFrame
        :func:`~.compute.run_controls`: the control runs with a ``setup`` column, several setups.
    control_correlations : pandas.DataFrame
        The shuffled runs' correlations (:func:`~.compute.shuffled_correlations`).

    Returns
    -------
    list of Finding
        Not counted, one per setup, control run and trend rule; the model names the setup and the run.
    """
    findings = []
    for setup, runs in controls.groupby("setup", sort=False):
        beside = _trained_on(runs, control_correlations[control_correlations.setup == setup])
        for name in (SHUFFLED, LABEL_FREE):
            for key, judged in _judged(runs[runs.control == name], "silhouette_true").items():
                claim, _, rule = _TRENDS[key]
                text = _with_interval(judged) + (f"; {beside[key]}" if name == SHUFFLED and key in beside else "")
                findings.append(dataclasses.replace(declare(
                    claim, "not run (a control of ours)", f"{setup}, {name}", text, judged[1],
                    f"{rule} The silhouette against the true labels.", kind="test",
                    control=f"this run is itself a control of the claim on {setup}", threshold_ours=True,
                    sampling_unit=SEEDS_UNIT), counted=False))
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


# Why the counts of Tables 1 and 2 are checks, not tests.
_COUNTS_BY_CONSTRUCTION = ("the probe's shape (a bias or none, one vector per unique sentence, pairs as [u; v]) was "
                           "derived from these very counts, so they agree once the data are the paper's")


def _counts(claim: str, paper: str, model: str, ours: str, items: tuple[int, int], parameters: tuple[int, int],
            why: str) -> Finding:
    """A count of Table 1 or 2 beside the paper's: passed if ``items`` and ``parameters`` (ours, the paper's) agree."""
    return declare(claim, paper, model, ours, all_of(within(parameters[0], parameters[1], 0), within(*items, 0)),
                   f"passed if both counts are exactly the paper's; {why}.", kind="check")


def _table1_findings(table1: pd.DataFrame) -> list[Finding]:
    """Table 1's counts, checks: (i) and (ii) decode to the paper's data and probe; the stand-ins' are formulas of
    the number of words they take; (iii)'s own count is inconsistent."""
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
            findings.append(not_comparable(claim, paper, "this profile uses a subset of the items.", kind="check",
                                           model=row.setup, ours=ours))
        elif static:
            findings.append(_counts(claim, paper, row.setup, ours, (row.n_items, items),
                                    (row.parameters_at_paper_dim, parameters),
                                    f"the parameters counted for the same probe over {PAPER_STATIC_DIM}-d vectors; "
                                    "true by construction: the stand-in takes the paper's number of words, and the "
                                    "count is a formula of it"))
        else:
            findings.append(_counts(claim, paper, row.setup, ours, (row.n_items, items), (row.n_parameters, parameters),
                                    _COUNTS_BY_CONSTRUCTION))
    return findings


def _table2_finding(task: str, model: str, count: pd.Series) -> Finding:
    """Table 2's counts of one task and model run (``count``, its row of :func:`~.compute.glue_table`), a check."""
    items, parameters = PAPER_TABLE2[task]
    setup = f"{task}, {model}"
    claim = f"Table 2: items and trainable parameters of {task}"
    paper = f"{items:,} items" + (f", {parameters[model]:,} parameters" if model in parameters else "")
    ours = f"{count.n_items:,} items, {count.n_parameters:,} parameters"
    if not count.full:
        return not_comparable(claim, paper, "this profile uses a subset of the items.", kind="check", model=setup,
                              ours=ours)
    if model not in parameters:
        return not_comparable(claim, paper, f"the paper does not run {model}.", kind="check", model=setup, ours=ours)
    if task == "mrpc":
        return not_comparable(claim, paper, "our MRPC is the original train file, 4,076 pairs; GLUE's train split "
                              "drops the 408 pairs of its dev split, whose ids are not available here.", kind="check",
                              model=setup, ours=ours)
    return _counts(claim, paper, setup, ours, (count.n_items, items), (count.n_parameters, parameters[model]),
                   _COUNTS_BY_CONSTRUCTION)


def _appendix_findings(plan: pd.DataFrame, table2: pd.DataFrame, glue_traces: pd.DataFrame,
                       glue_correlations: pd.DataFrame) -> list[Finding]:
    """Appendix A: the pairs not run, one "not comparable" line per reason (so that they do not swell the count of
    tests); the trends of the pairs run, one line per claim and model over the tasks; Table 2's counts."""
    findings = []
    for reason, skipped in plan[~plan.run].groupby("reason", sort=False):
        pairs = "; ".join(f"{row.task}, {row.model}" for row in skipped.itertuples())
        findings.append(not_comparable("Appendix A: IsoScore falls and the silhouette rises",
                                       "in every setup", reason[0].upper() + reason[1:], kind="test",
                                       model=f"{len(skipped)} task x model pair{'s' * (len(skipped) != 1)}",
                                       ours=pairs))
    findings += trend_findings(glue_traces, glue_correlations, appendix=True)
    counts = table2.set_index(["task", "model"]) if len(table2) else None
    findings += [_table2_finding(row.task, row.model, counts.loc[(row.task, row.model)])
                 for row in plan[plan.run].itertuples()]
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
        Those on a stand-in marked so (:func:`stand_in_of`).
    """
    found = trend_findings(evidence["traces"], evidence["correlations"], controls=evidence["controls"],
                           control_correlations=evidence["control_correlations"])
    found += _table1_findings(evidence["table1"])
    found.append(section2_finding(evidence["demo"]))
    found += _appendix_findings(evidence["appendix"], evidence["table2"], evidence["glue_traces"],
                                evidence["glue_correlations"])
    return mark_stand_ins(found, stand_in_of=stand_in_of)


def stand_in_of(finding: Finding) -> str:
    """The stand-in a finding is on: GloVe-50d in the static setups (iii) and (iv), for the paper's word2vec.

    The model strings of this study name setups ("(i) polarity", "cola, minilm"), not model views: (i), (ii)
    and Appendix A run the paper's own SBERT models, and a finding on no model (Section 2's synthetic
    clusters, the pairs not run) is on none ("").
    """
    return STAND_INS.get(finding.model.split(" ", 1)[0], "")


def models_text(glue_models: Sequence[str] = ()) -> str:
    """The ``Models`` line of ``RESULTS.md``: each model, the labels of the stand-ins, and what each stands in for."""
    line = ("all-MiniLM-L6-v2 (a sentence-transformer trained contrastively for sentence similarity, the paper's own "
            "model) for (i) and (ii); GloVe-50d with WordNet parts of speech for (iii) and GloVe-50d with WordNet "
            "noun supersenses (one per noun) for (iv), stand-ins for the paper's word2vec with CoDWoE's parts of "
            "speech and with Tikhonov et al.'s supersenses")
    return line + (f"; {', '.join(glue_models)} (sentence-transformers, the paper's own) for Appendix A"
                   if glue_models else "")


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
        "(iii) and (iv) run on stand-ins, counted apart: GloVe-50d instead of the paper's 300-d word2vec, and "
        "labels from WordNet instead of CoDWoE's parts of speech and Tikhonov et al.'s supersenses, one supersense "
        "per noun (so single-label, unlike the paper's); their parameters are also counted at 300 dimensions.",
        "What the seeds vary: every run starts from the same vectors and sees every item, so a seed sets only the "
        "classifier's initialisation (in a shuffled-label control also the permutation): an interval over such "
        "seeds is degenerate by construction and the status rests on the value. Only where Appendix A evaluates "
        "a metric on a sample of a larger set do the seeds also draw the items, and the interval covers them; "
        "resampling the items of (i) to (iv) would need per-item values, which the evidence does not hold. Trends "
        "are judged by how far each metric moved towards its bound (IsoScore 0, the silhouette 1), thresholds ours.",
        (f"Controls (ours): {', '.join(dict.fromkeys(controls.setup))} also trained on shuffled labels and on a "
         f"label-free objective (uniform targets), {run['n_updates']} updates (metrics every {run['control_every']}), "
         f"the same seeds; the control runs took {run['control_minutes']:.1f} min in this run (runs stored by an "
         "earlier run are read, not trained again). Each stands on the line of the claim it controls, judged by "
         "that claim's rule: IsoScore's fall beside the label-free run's, the silhouette's rise and its "
         "steadiness beside the shuffled-label run's silhouette against the true labels."
         if len(controls) else "Controls (ours): not run in this profile."),
        (f"Appendix A: {', '.join(run['glue_tasks'])} with {', '.join(run['glue_models'])}; {run['glue_updates']} "
         f"updates; metrics on a fresh sample of {run['glue_sample_size']:,} items per update when a set is larger; "
         f"{int(plan.run.sum())} of the {len(plan)} task x model pairs run (the others are listed with their "
         "reason); each claim judged per task and combined per model over the tasks." if run["glue_tasks"] else
         "Appendix A (GLUE) not run in this profile."),
        "Checks, not tests: the counts of Tables 1 and 2 (the probe's shape was derived from them) and Section 2's "
        "synthetic demonstration. Figure 3's and Table 3's correlations are reported on the lines of the trends "
        "they follow from, not judged apart.",
        cost_note(run["wall_minutes"], run["peak_gib"], "embeddings and training runs"),
    ]


def record(evidence: Mapping[str, object]) -> Record:
    """The study's record (``results.json``) judged from its stored evidence (:func:`findings`, :func:`run_notes`)."""
    run = evidence["run"]
    return Record(TITLE, CITATION, models_text(run["glue_models"] if run["glue_tasks"] else []),
                  tuple(run_notes(evidence)), tuple(findings(evidence)))
