"""Tests of isolib.findings: the rules on small tables with a known verdict, RESULTS.md and the overview."""

import re

import numpy as np
import pandas as pd
import pytest

from isolib.errors import ResultsError
from isolib.findings import (
    SINK_ARTEFACT,
    STATUSES,
    Finding,
    PaperModel,
    Verdict,
    all_of,
    bootstrap_threshold,
    combine_datasets,
    compare_correlations,
    compare_reference,
    compare_with_control,
    count_line,
    declare,
    findings_table,
    judge_decoder_views,
    not_comparable,
    overview_text,
    read_record,
    results_page,
    sign,
    spearman,
    threshold,
    threshold_range,
    trend,
    within,
    write_overview,
    write_results,
)
from isolib.views import View


# A test with a stated control, for the rules' tests.
TEST = {"kind": "test", "control": "a stated control"}


def by_layer(values):
    return pd.Series(values, index=np.arange(len(values)), dtype=float)


# --------------------------------------------------------------------------- rules


def test_trend_rising_and_falling():
    rising = trend(by_layer([0.1, 0.2, 0.3, 0.5]), rising=True)
    assert rising.passed and rising.value == pytest.approx(1.0) and rising.margin == pytest.approx(0.5)
    assert trend(by_layer([0.1, 0.2, 0.3, 0.5]), rising=False).passed is False
    assert trend(by_layer([0.5, 0.4, 0.1, 0.0]), rising=False).passed
    # rho = 1 - 6 * 14 / 120 = 0.3: rising, but not beyond 0.5.
    weak = trend(by_layer([0.1, 0.3, 0.2, 0.0, 0.4]), rising=True)
    assert weak.passed is False and weak.value == pytest.approx(0.3) and weak.margin == pytest.approx(-0.2)


@pytest.mark.parametrize("values", [[0.1, 0.2], [0.3, 0.3, 0.3], [0.1, np.nan, 0.3, 0.4], []])
def test_trend_is_not_comparable_on_too_few_layers_constant_values_or_nan(values):
    verdict = trend(by_layer(values), rising=True)
    assert verdict.passed is None and np.isnan(verdict.margin)
    assert declare("claim", "paper", "m", "ours", verdict, "rule", **TEST).status == "not comparable"


def test_threshold_in_every_layer():
    verdict = threshold([0.3, 0.12, 0.5], above=0.1)
    assert verdict.passed and verdict.value == 0.12 and verdict.margin == pytest.approx(0.02)
    assert threshold([0.3, 0.08, 0.5], above=0.1).passed is False
    assert threshold([0.1], above=0.1).passed is False
    assert threshold([0.1], above=0.1, inclusive=True).passed
    assert threshold(0.04, below=0.05).passed and threshold(0.06, below=0.05).passed is False
    both = threshold([0.2, 0.44], above=0.15, below=0.45)
    assert both.passed and both.value == 0.44 and both.margin == pytest.approx(0.01)
    assert threshold([0.2, np.nan], above=0.1).passed is None
    assert threshold([], above=0.1).passed is None
    with pytest.raises(ValueError, match="needs a bound"):
        threshold([0.2])


def test_within_a_tolerance_of_a_value_or_a_range():
    assert within(0.44, 0.42, 0.05).passed
    assert within(0.48, 0.42, 0.05).passed is False
    assert within(0.47, 0.42, 0.05).passed  # the bound itself counts
    assert within([0.56, 0.6, 0.66], (0.57, 0.62), 0.05).passed
    assert within([0.56, 0.6, 0.70], (0.57, 0.62), 0.05).passed is False
    assert within(np.nan, 0.42, 0.05).passed is None


def test_sign_and_all_of():
    assert sign(0.2).passed and sign(-0.2).passed is False and sign(0.0).passed is False
    assert sign(-0.2, positive=False).passed
    assert sign(np.nan).passed is None
    combined = all_of(sign(0.2), threshold(0.3, above=0.25))
    assert combined.passed and combined.margin == pytest.approx(0.05)
    assert all_of(sign(0.2), sign(-0.1)).passed is False
    assert all_of(sign(0.2), Verdict.undecided()).passed is None


def test_a_bootstrap_interval_straddling_the_threshold_is_borderline():
    # The audit's case: minilm's per-layer stopword shares, median 0.55 against "at least 0.5".
    shares = [0.0, 0.4, 0.8, 0.7, 0.2, 0.9]
    verdict = bootstrap_threshold(shares, np.median, above=0.5, inclusive=True)
    assert verdict.passed and verdict.value == pytest.approx(0.55)
    low, high = verdict.interval
    assert low < 0.5 < high and verdict.borderline
    assert declare("Stopwords", "paper", "minilm", "0.55", verdict, "rule", **TEST).status == "borderline"
    # A clear pass: every resample is above the threshold.
    clear = bootstrap_threshold([0.8, 0.9, 0.7, 0.8, 0.9, 1.0], np.median, above=0.5, inclusive=True)
    assert clear.passed and not clear.borderline and clear.interval[0] >= 0.7
    assert declare("Stopwords", "paper", "mpnet", "0.85", clear, "rule", **TEST).status == "reproduced"
    # A clear failure stays "not reproduced"; too few samples are not comparable.
    assert declare("s", "p", "m", "o", bootstrap_threshold([0.1, 0.0, 0.2], np.median, above=0.5), "r", **TEST).status \
        == "not reproduced"
    assert bootstrap_threshold([0.9], np.median, above=0.5).passed is None


def test_bootstrap_resamples_the_rows_of_a_table():
    # Wins of one embedding over another on benchmarks: 3 of 4, resampled by benchmark.
    table = pd.DataFrame({"ours": [0.5, 0.6, 0.7, 0.2], "static": [0.4, 0.5, 0.6, 0.3]})
    verdict = bootstrap_threshold(table, lambda t: float((t.ours > t.static).mean()), above=0.5, inclusive=True,
                                  random_state=1)
    assert verdict.value == 0.75 and verdict.borderline  # a resample of 4 can hold 2 losses of 4
    again = bootstrap_threshold(table, lambda t: float((t.ours > t.static).mean()), above=0.5, inclusive=True,
                                random_state=1)
    assert again == verdict


def test_all_of_keeps_a_borderline_part():
    borderline = bootstrap_threshold([0.0, 0.4, 0.8, 0.7, 0.2, 0.9], np.median, above=0.5, inclusive=True)
    assert all_of(sign(1.0), borderline).borderline
    assert not all_of(sign(-1.0), borderline).borderline  # fails on a clear rule: not reproduced
    assert all_of(sign(1.0), sign(2.0)).borderline is False


def test_spearman_of_layers():
    assert spearman([0, 1, 2], [3, 2, 1]) == pytest.approx(-1.0)
    assert np.isnan(spearman([0, 1], [1, 2]))


def test_finding_rejects_an_unknown_status_or_kind():
    with pytest.raises(ValueError, match="status of a test must be"):
        Finding("claim", "paper", "model", "ours", "maybe", "rule", "test", "control")
    with pytest.raises(ValueError, match="status of a check must be"):
        Finding("claim", "paper", "model", "ours", "reproduced", "rule", "check")
    with pytest.raises(ValueError, match="kind must be"):
        Finding("claim", "paper", "model", "ours", "reproduced", "rule", "claim")


def test_a_finding_cannot_be_declared_without_a_kind_and_a_test_names_its_control():
    with pytest.raises(TypeError, match="kind"):
        declare("claim", "paper", "m", "ours", sign(1.0), "reproduced if positive.")
    with pytest.raises(ValueError, match="names no control"):
        declare("claim", "paper", "m", "ours", sign(1.0), "reproduced if positive.", kind="test")
    with pytest.raises(ValueError, match="a check has no control"):
        declare("claim", "paper", "m", "ours", sign(1.0), "passed if positive.", kind="check", control="x")


def test_a_check_is_passed_or_failed_never_reproduced():
    passed = declare("I(W) rises", "rises", "m", "0.1 -> 0.9", sign(0.8), "passed if it rises.", kind="check")
    failed = declare("I(W) rises", "rises", "m", "0.1 -> 0.0", sign(-0.1), "passed if it rises.", kind="check")
    assert (passed.status, failed.status) == ("passed", "failed")
    # A check never counts as a reproduction, even beside reproduced tests.
    test = declare("Claim", "p", "m", "0.3", threshold(0.3, above=0.1), "r.", kind="test", control="0.1")
    assert count_line([passed, failed, test]) == ("Tests on the paper's models 1 reproduced; on stand-ins none. "
                                                  "Checks: 1 passed, 1 failed.")


# --------------------------------------------------------------------------- controls and intervals


def test_a_paired_difference_whose_interval_straddles_zero_is_borderline():
    generator = np.random.default_rng(0)
    control = generator.normal(size=200)
    # A clear gain over the control on every unit: the interval excludes 0.
    clear = compare_with_control(control + 1.0 + generator.normal(scale=0.1, size=200), control)
    assert clear.passed and not clear.borderline and clear.interval[0] > 0
    # A gain of 0.01 on units whose differences have a spread of 1: the interval straddles 0.
    noisy = compare_with_control(control + 0.01 + generator.normal(size=200), control)
    assert noisy.borderline and noisy.interval[0] < 0 < noisy.interval[1]
    assert declare("A beats B", "A > B", "m", "d", noisy, "r.", kind="test", control="B").status == "borderline"
    # The paper's direction matters: lower is better here, and ours is clearly higher.
    assert compare_with_control(control + 1.0, control, higher=False).passed is False
    with pytest.raises(ValueError, match="paired unit by unit"):
        compare_with_control([1.0, 2.0], [1.0])


def test_a_crossed_bootstrap_covers_the_seeds_as_well_as_the_units():
    generator = np.random.default_rng(1)
    # 300 units x 3 seeds: the units agree, but the seeds disagree by much more than the units' noise.
    seeds = np.array([-0.5, 0.1, 0.7])
    differences = 0.1 + generator.normal(scale=0.05, size=(300, 1)) + seeds
    over_units = bootstrap_threshold(differences.mean(axis=1), np.mean, above=0.0)
    crossed = compare_with_control(differences, np.zeros_like(differences))
    assert not over_units.borderline  # units alone: a clear gain
    assert crossed.borderline  # with the seeds resampled, 0 is inside the interval
    with pytest.raises(ValueError, match="bootstrap over replicates needs"):
        bootstrap_threshold([1.0, 2.0], np.mean, above=0, crossed=True)


def test_restarts_of_each_layer_are_resampled_on_their_own():
    # Notebook 02's decoder on PTB: the silhouette of the chosen k per layer (columns: 13 layers) and k-means
    # restart (rows: 3), 0 where the layer holds no clusters. A layer counts when its restarts' mean reaches 0.1;
    # the claim needs half of the layers. Three layers depend on their restarts (the first, the fifth, the twelfth).
    by_restart = np.array([[0.126, 0, .824, .789, 0.085, 0, 0, 0, 0, 0, .137, 0.038, .213],
                           [0.080, 0, .824, .789, 0.692, 0, 0, 0, 0, 0, .138, 0.165, .213],
                           [0.126, 0, .824, .789, 0.099, 0, 0, 0, 0, 0, .137, 0.037, .213]])

    def share(sample):  # sample: (layers, restarts)
        return np.mean(sample.mean(axis=1) >= 0.1)

    own = bootstrap_threshold(by_restart.T, share, above=0.5, inclusive=True, within_units=True)
    assert own.value == pytest.approx(6 / 13) and own.borderline  # 7 of 13 when every such layer has a good draw
    assert own.interval[1] == pytest.approx(7 / 13)
    # The control: restart i of one layer drawn with restart i of every other ties the first layer's poor restart to
    # the twelfth's good one, so the interval never reaches half and the verdict looks certain.
    joint = bootstrap_threshold(by_restart, lambda sample: share(sample.T), above=0.5, inclusive=True)
    assert not joint.borderline and joint.interval[1] < 0.5
    with pytest.raises(ValueError, match="not both"):
        bootstrap_threshold(by_restart.T, share, above=0.5, crossed=True, within_units=True)


def test_the_range_of_thresholds_over_which_a_status_holds():
    # Lowest layer at 0.112 against our threshold 0.1: reproduced for any threshold below 0.112.
    verdict = threshold([0.3, 0.112, 0.5], above=0.1)
    assert threshold_range(verdict) == (-np.inf, pytest.approx(0.112))
    finding = declare("Anisotropy", "well above 0", "m", "0.112", verdict, "reproduced if above 0.1.", kind="test",
                      control="an isotropic space (0)", threshold_ours=True)
    assert finding.rule.endswith("Threshold ours: the status holds for any threshold below 0.11.")
    # Failing a 'below' bound: not reproduced for any threshold up to the value.
    assert threshold_range(threshold(0.02, below=0.01)) == (-np.inf, pytest.approx(0.02))
    # A falling trend: rho -0.8 passes a bound of -0.5 and would pass any bound above -0.8.
    assert threshold_range(trend(by_layer([4, 3, 3.5, 1, 0]), rising=False)) == (pytest.approx(-0.9), np.inf)
    # With an interval: reproduced only below its low end, borderline inside it.
    sample = np.linspace(0.2, 0.4, 50)
    boot = bootstrap_threshold(sample, np.mean, above=0.1)
    low, high = boot.interval
    assert threshold_range(boot) == (-np.inf, low) and low < 0.3 < high
    straddling = bootstrap_threshold(sample, np.mean, above=0.3)
    assert straddling.borderline and threshold_range(straddling) == (low, high)
    # A two-sided rule has no single threshold to move.
    assert threshold_range(within(0.5, 0.5, 0.1)) is None


def test_a_finding_that_holds_only_with_the_sink_is_marked_as_its_artefact():
    def row(model, value):
        return declare("Clusters dominate", "yes", model, f"{value}", threshold(value, above=0.1), "r.", kind="test",
                       control="a single cluster", headline=True)

    views = {"minilm": [row("minilm", 0.5)], "smollm2": [row("smollm2", 0.98)],
             "smollm2 (start token)": [row("smollm2 (start token)", 0.05)],
             "smollm2 (position 0 dropped)": [row("smollm2 (position 0 dropped)", 0.2)]}
    rows = judge_decoder_views(views)
    assert [(f.model, f.status, f.counted, f.note) for f in rows] == [
        ("minilm", "reproduced", True, ""),
        ("smollm2 (start token)", "not reproduced", True, SINK_ARTEFACT),
        ("smollm2", "reproduced", False, SINK_ARTEFACT),
        ("smollm2 (position 0 dropped)", "reproduced", False, "")]
    # Both views reproduce it: no artefact; the procedure row is still beside, not counted.
    both = judge_decoder_views({"smollm2": [row("smollm2", 0.98)],
                                "smollm2 (start token)": [row("smollm2 (start token)", 0.5)]})
    assert [f.note for f in both] == ["", ""] and [f.counted for f in both] == [True, False]
    # A decoder run in one view is counted as it is.
    assert [f.counted for f in judge_decoder_views({"smollm2": [row("smollm2", 0.98)]})] == [True]
    # The start-token view as good as its control while the sink view reproduces: an artefact of the sink too.
    controlled = declare("Clusters dominate", "yes", "smollm2 (start token)", "0.5", threshold(0.5, above=0.1), "r.",
                         kind="test", control="a Gaussian", control_verdict=threshold(0.4, above=0.1))
    rows = judge_decoder_views({"smollm2": [row("smollm2", 0.98)], "smollm2 (start token)": [controlled]})
    assert [(f.status, f.note) for f in rows] == [("indistinguishable", SINK_ARTEFACT), ("reproduced", SINK_ARTEFACT)]


def test_compare_correlations_reproduces_a_real_gain_and_not_a_tie():
    from scipy.stats import spearmanr

    def status(verdict):
        return declare("c", "p", "m", "o", verdict, "r.", kind="test", control="the worse predictor").status

    generator = np.random.default_rng(0)
    gold = np.round(generator.uniform(0, 5, 1500), 1)  # tied scores, as STS gold
    good = gold[:, None] + generator.normal(0, 1.0, (1500, 5))  # five seeds of a better predictor
    worse = gold + generator.normal(0, 2.0, 1500)
    gain = compare_correlations(gold, good, worse)
    expected = np.mean([spearmanr(good[:, seed], gold)[0] for seed in range(5)]) - spearmanr(worse, gold)[0]
    assert gain.value == pytest.approx(expected, abs=1e-12)  # exactly Spearman on the full sample
    assert status(gain) == "reproduced" and gain.interval[0] > 0
    assert status(compare_correlations(gold, worse, good)) == "not reproduced"
    assert status(compare_correlations(gold, good, worse, higher=False)) == "not reproduced"
    # Control: two predictors of equal quality are within the noise of the pairs.
    twin = gold + generator.normal(0, 1.0, 1500)
    tie = compare_correlations(gold, good[:, 0], twin)
    assert status(tie) == "borderline" and tie.interval[0] < 0 < tie.interval[1]
    # Seeds that disagree widen the interval (crossed with the pairs).
    spread = good + np.array([0, 0, 0, 0, 40.0]) * generator.normal(size=(1500, 1))
    assert np.ptp(compare_correlations(gold, spread, worse).interval) > np.ptp(gain.interval)
    assert compare_correlations(gold, np.ones(1500), worse).passed is None  # a constant predictor
    with pytest.raises(ValueError, match="one row per gold score"):
        compare_correlations(gold, good[:10], worse)


def test_datasets_that_disagree_are_mixed_never_borderline():
    def row(model, value, claim="Clusters dominate", kind="test"):
        control = "a single cluster" if kind == "test" else None
        return declare(claim, "yes", model, f"{value}", threshold(value, above=0.1), "r.", kind=kind, control=control)

    combined = combine_datasets({
        "ptb": [row("minilm", 0.5), row("mpnet", 0.5), row("minilm", 0.5, "Counts", "check"), row("gpt2", 0.3, "LID")],
        "wikitext2": [row("minilm", 0.6), row("mpnet", 0.05), row("minilm", 0.0, "Counts", "check")]})
    assert [(f.finding, f.model, f.status) for f in combined] == [
        ("Clusters dominate", "minilm", "reproduced"), ("Clusters dominate", "mpnet", "mixed"),
        ("Counts", "minilm", "failed"), ("LID", "gpt2", "reproduced")]
    # Each corpus's number is in the cell, with its status where the corpora disagree.
    assert combined[0].ours == "ptb: 0.5; wikitext2: 0.6"
    assert combined[1].ours == "ptb: 0.5 (reproduced); wikitext2: 0.05 (not reproduced)"
    assert "mixed where some reproduce it and some do not" in combined[1].rule and combined[3].ours == "ptb: 0.3"
    # A not comparable corpus does not decide; one corpus alone is returned as it is.
    unjudged = not_comparable("Clusters dominate", "yes", "no data.", kind="test", model="minilm")
    assert combine_datasets({"a": [row("minilm", 0.5)], "b": [unjudged]})[0].status == "reproduced"
    assert combine_datasets({"ptb": [row("minilm", 0.5)]}) == [row("minilm", 0.5)]


def test_a_combined_line_states_its_thresholds_and_each_datasets_control_not_the_first_datasets():
    def row(value, control):
        return declare("Clusters dominate", "yes", "minilm", f"{value}", threshold(value, above=0.1), "r.",
                       kind="test", control="a single cluster", control_verdict=threshold(control, above=0.1),
                       threshold_ours=True)

    assert row(0.5, 0.02).rule == ("r. Threshold ours: the status holds for any threshold below 0.50. "
                                   "Its control, by the same rule: 0.02, fails.")
    combined, = combine_datasets({"ptb": [row(0.5, 0.02)], "wikitext2": [row(0.05, 0.3)]})
    # Between the two values no corpus changes its status, so the mixed line holds; beyond them it may not.
    assert combined.status == "mixed" and combined.status_range == (0.05, 0.5)
    assert combined.rule.startswith(
        "r. Threshold ours: every corpus's status, and so the combined one, holds for any threshold from 0.05 to "
        "0.50. Its control, by the same rule: on ptb 0.02, fails; on wikitext2 0.30, passes too: the data cannot tell "
        "the claim from it. Judged on each corpus; combined by one rule")


def test_a_combined_line_keeps_a_knife_edge_only_where_that_datasets_flip_would_change_it():
    def row(value):
        return declare("Clusters dominate", "yes", "minilm", f"{value}", threshold(value, above=0.1), "r.",
                       kind="test", control="a single cluster", threshold_ours=True)

    assert row(0.101).marks == ("knife edge",) and row(0.5).marks == ()
    # Two corpora: the edge one flipping makes them disagree, so the combined status hangs on it.
    assert combine_datasets({"ptb": [row(0.101)], "wikitext2": [row(0.5)]})[0].marks == ("knife edge",)
    # Three against one edge: mixed whichever way the edge goes.
    combined, = combine_datasets({"a": [row(0.5)], "b": [row(0.01)], "c": [row(0.02)], "d": [row(0.099)]})
    assert combined.status == "mixed" and combined.marks == ()


@pytest.mark.parametrize("statuses, expected", [
    (["not reproduced"] * 6 + ["borderline"] * 2, "not reproduced"),  # 6 of 8 against, 2 within noise
    (["reproduced"] * 5 + ["not reproduced"], "mixed"),  # one dataset against is never outvoted
    (["reproduced", "reproduced", "borderline", "not comparable"], "reproduced"),
    (["reproduced", "borderline"], "mixed"),  # no majority: disagreement, not an interval across a threshold
    (["borderline", "borderline", "not reproduced"], "borderline"),
    (["indistinguishable", "indistinguishable", "reproduced"], "indistinguishable"),
    (["not comparable", "not comparable"], "not comparable"),
])
def test_one_declared_rule_combines_datasets(statuses, expected):
    from isolib.findings import combined_status

    assert combined_status(statuses, "test") == expected


# --------------------------------------------------------------------------- reference numbers

PAPER = (PaperModel("bert-base-cased", "BERT", 13), PaperModel("elmo", "ELMo", 3))
REFERENCE = {"bert-base-cased": {"cosine": {0: 0.10, 12: 0.48, (2, 4): (0.2, 0.3)}}, "elmo": {"cosine": {1: 0.16}}}
STAND_INS = {"tiny": "bert-base-cased"}


def counterpart(model):
    return model if model in REFERENCE else STAND_INS.get(model)


def per_layer(model, values):
    return pd.DataFrame({"model": model, "layer": np.arange(len(values)), "n_layers": len(values), "cosine": values})


def test_reference_numbers_judged_on_the_paper_model_and_shown_for_a_stand_in():
    table = pd.concat([per_layer("bert-base-cased", np.r_[0.12, 0.3, 0.22, 0.25, 0.36, [0.4] * 7, 0.6]),
                       per_layer("tiny", [0.0, 0.1, 0.2, 0.3, 0.4])], ignore_index=True)
    rows = compare_reference(table, REFERENCE, PAPER, counterpart, {"cosine": "average cosine"}, tolerance=0.05)
    got = {(f.finding, f.model): f for f in rows}
    assert got["average cosine, BERT L0", "bert-base-cased"].status == "reproduced"  # 0.12 vs 0.10
    assert got["average cosine, BERT L12", "bert-base-cased"].status == "not reproduced"  # 0.60 vs 0.48
    # Layers 2-4 hold 0.22, 0.25, 0.36; the range 0.2-0.3 plus 0.05 ends at 0.35.
    assert got["average cosine, BERT L2-4", "bert-base-cased"].status == "not reproduced"
    assert got["average cosine, BERT L2-4", "bert-base-cased"].ours == "0.22-0.36 (L2-4)"
    # The stand-in has 5 layers: paper layer 12 of 12 is its layer 4, shown but not judged.
    stand_in = got["average cosine, BERT L12", "tiny"]
    assert stand_in.status == "not comparable" and stand_in.ours == "0.400 (L4)"
    # No model for ELMo: one row that says so.
    assert got["average cosine, ELMo L1", "-"].status == "not comparable"
    assert "not run" in got["average cosine, ELMo L1", "-"].rule


def test_a_nan_reference_value_is_not_comparable():
    table = per_layer("bert-base-cased", np.r_[np.nan, [0.3] * 12])
    rows = compare_reference(table, {"bert-base-cased": {"cosine": {0: 0.10}}}, PAPER[:1], counterpart,
                             {"cosine": "average cosine"}, tolerance=0.05)
    assert [f.status for f in rows] == ["not comparable"]


# --------------------------------------------------------------------------- RESULTS.md and the overview

FINDINGS = [
    declare("Anisotropy | everywhere", "cosine > 0.1", "minilm", "lowest 0.2", threshold(0.2, above=0.1),
            "reproduced if |cos| > 0.1.", kind="test", control="0.1", headline=True),
    declare("Anisotropy | everywhere", "cosine > 0.1", "mpnet", "lowest 0.05", threshold(0.05, above=0.1),
            "reproduced if |cos| > 0.1.", kind="test", control="0.1", headline=True),
    declare("Trend", "rises", "minilm", "rho 0.9", trend(by_layer([1, 2, 3]), rising=True), "rule", kind="test",
            control="no trend"),
    not_comparable("ELMo finding", "rises", "ELMo is not run.", kind="test"),
    declare("The count of items", "11", "-", "11", within(11, 11, 0), "passed if equal.", kind="check"),
    *judge_decoder_views({"smollm2": [declare("Anisotropy | everywhere", "cosine > 0.1", "smollm2", "lowest 0.6",
                                              threshold(0.6, above=0.1), "reproduced if |cos| > 0.1.", kind="test",
                                              control="0.1", headline=True)], "smollm2 (start token)": []}),
]


def test_results_round_trip(tmp_path):
    path = write_results(FINDINGS, tmp_path / "study" / "RESULTS.md", title="Study: results", citation="A. B. (2020)",
                         models="minilm (for BERT), mpnet (for BERT)", notes=["A note."])
    text = path.read_text()
    assert text.startswith("# Study: results\n")
    assert "A note." in text and "*not comparable*:" in text and "*check*:" in text
    # The glance (2 claims judged), tests (3 judged), beside (1), checks (1), not comparable (1), each with a header.
    assert sum(line.startswith("| ") for line in text.splitlines()) == 2 + 3 + 1 + 1 + 1 + 5
    assert ("**Summary:** Tests on the paper's models 1 not comparable; on stand-ins 2 reproduced, 1 not reproduced. "
            "Checks: 1 passed.") in text
    assert (text.index("## At a glance") < text.index("## Tests") < text.index("## Beside the tests")
            < text.index("## Checks") < text.index("## Not comparable"))
    record = read_record(path.parent)
    assert record.title == "Study: results" and record.citation == "A. B. (2020)" and record.notes == ("A note.",)
    assert record.findings == tuple(FINDINGS), "the record keeps every field of every finding"
    assert results_page(record, path.parent) == text, "the page is rendered from the record"
    assert list(record.counts) == [2, 0, 0, 0, 1, 1] and list(record.counts.index) == list(STATUSES)
    assert list(record.check_counts) == [1, 0, 0]
    assert [status for _, _, status in record.every_status] == [
        "reproduced", "not reproduced", "reproduced", "not comparable", "passed", "reproduced"]
    with pytest.raises(ValueError, match="no findings"):
        write_results([], tmp_path / "empty.md", title="t", citation="c", models="m")


def test_the_record_keeps_the_verdict_its_interval_and_the_range_of_a_threshold_of_ours(tmp_path):
    verdict = bootstrap_threshold(np.linspace(0.2, 0.4, 50), np.mean, above=0.1, random_state=0)
    finding = declare("High", "0.5", "smollm2 (start token)", "0.3", verdict, "reproduced if above 0.1.",
                      kind="test", control="0.1", threshold_ours=True, sampling_unit="word types")
    write_results([finding], tmp_path / "RESULTS.md", title="t", citation="c", models="m")
    kept = read_record(tmp_path).findings[0]
    assert kept == finding and kept.value == pytest.approx(0.3) and kept.interval[0] > 0.1
    assert kept.status_range == (-np.inf, kept.interval[0]) and kept.sampling_unit == "word types"
    assert kept.view == View("smollm2", "start_token")


@pytest.mark.parametrize("content, problem", [
    (None, "is missing"), ("{", "cannot be read"), ('{"format": 0}', "not a results record"),
    ('{"format": 1, "title": "t"}', "malformed record"),
])
def test_a_damaged_record_is_refused_in_one_sentence_naming_it(tmp_path, content, problem):
    if content is not None:
        (tmp_path / "results.json").write_text(content)
    with pytest.raises(ResultsError, match=problem) as error:
        read_record(tmp_path)
    assert str(tmp_path / "results.json") in str(error.value)


def test_overview_counts_come_from_the_results_pages(tmp_path):
    write_results(FINDINGS, tmp_path / "01_a_study" / "RESULTS.md", title="A", citation="A (2019)", models="minilm")
    (tmp_path / "01_a_study" / "fig1.png").write_bytes(b"png")
    (tmp_path / "01_a_study" / "table.csv").write_text("layer,cosine\n1,0.5\n")
    (tmp_path / "00_quickstart").mkdir()
    (tmp_path / "00_quickstart" / "plot.png").write_bytes(b"png")
    text = write_overview(tmp_path, ["01_a_study"]).read_text()
    assert ("| [01_a_study](#01_a_study) | paper's model | 0 | 0 | 0 | 0 | 0 | 1 | 1 passed | [RESULTS.md](01_a_study/RESULTS.md) |"
            in text)
    assert ("| [01_a_study](#01_a_study) | stand-in | 2 | 0 | 0 | 0 | 1 | 0 |  | [RESULTS.md](01_a_study/RESULTS.md) |"
            in text)
    assert '<img src="01_a_study/fig1.png"' in text and '<img src="00_quickstart/plot.png"' in text
    assert "- Anisotropy | everywhere: minilm (stand-in) reproduced; mpnet (stand-in) not reproduced" in text
    assert text.index("## 00_quickstart") < text.index("## 01_a_study")
    # A newcomer reads what the decoder's judged view is before meeting "smollm2 (start token)" in the headlines.
    assert "A decoder is judged in its *start-token* view" in text.split("## ")[0]
    # A study without its record is an error naming the file, never "not a study".
    (tmp_path / "01_a_study" / "results.json").unlink()
    with pytest.raises(ResultsError, match="results.json is missing"):
        write_overview(tmp_path, ["01_a_study"])


def test_overview_table_gives_every_check_count_its_text_gives(tmp_path):
    unjudged = not_comparable("The count of items", "11", "The items are not counted.", kind="check")
    write_results([*FINDINGS, unjudged], tmp_path / "01_a_study" / "RESULTS.md", title="A", citation="A (2019)",
                  models="minilm")
    text = write_overview(tmp_path, ["01_a_study"]).read_text()
    assert "| 1 passed, 1 not comparable | [RESULTS.md](01_a_study/RESULTS.md) |" in text
    assert "Checks: 1 passed, 1 not comparable." in text


def test_findings_table_has_the_results_columns():
    table = findings_table(FINDINGS)
    assert list(table.columns) == ["finding", "paper", "model", "this run", "kind", "status", "control", "rule"]
    assert len(table) == len(FINDINGS) and table.status.iloc[3] == "not comparable"
    assert table.model.iloc[-1] == "smollm2 (beside, not counted)"
    assert findings_table([]).empty


def test_verdicts_say_per_claim_what_each_model_gives():
    from isolib.findings import verdicts

    findings = [
        declare("The silhouette rises", "rises in every setup", "(i)", "0.05 -> 0.41", threshold(1.0, above=0), "r.",
                kind="test", control="shuffled labels"),
        declare("The silhouette rises", "rises in every setup", "(ii)", "0.05 -> 0.01", threshold(-1.0, above=0), "r.",
                kind="test", control="shuffled labels"),
        not_comparable("Appendix A: GLUE", "IsoScore falls", "Not run in this profile.", kind="test"),
    ]
    assert verdicts(findings, ["The silhouette"]) == ("This run: The silhouette rises (paper: rises in every setup): "
                                                       "reproduced on (i) (0.05 -> 0.41); not reproduced on (ii) "
                                                       "(0.05 -> 0.01).")
    assert verdicts(findings, ["The silhouette"], values=False) == (
        "This run: The silhouette rises (paper: rises in every setup): reproduced on (i); not reproduced on (ii).")
    assert verdicts(findings).splitlines()[1] == ("This run: Appendix A: GLUE (paper: IsoScore falls): not comparable "
                                                  "because not run in this profile.")
    with pytest.raises(ValueError, match="No finding's claim starts with"):
        verdicts(findings, ["Table 9"])
    named = not_comparable("GPT-2 L12", "0.978", "GPT-2 is not run in this profile.", kind="test")
    assert verdicts([named]).endswith("not comparable because GPT-2 is not run in this profile.")
    # A rule that could not be applied (a NaN) is not a reason: the line says what was found, without "because".
    unjudged = declare("Claim", "p", "m", "nan", threshold(float("nan"), above=0), "reproduced if positive.",
                       kind="test", control="0")
    assert verdicts([unjudged]) == "This run: Claim (paper: p): not comparable on m (nan)."
    check = declare("Table 1 count", "11", "-", "11", within(11, 11, 0), "passed if equal.", kind="check")
    assert verdicts([check]) == "Check: Table 1 count (expected: 11): passed (11)."
    beside = judge_decoder_views({"(i)": [findings[0]], "(i) (start token)": []})
    assert "reproduced on (i) (the paper's procedure, not counted)" in verdicts(beside)


def test_a_verdict_table_gives_each_claim_a_row_and_each_model_a_column_of_one_word_statuses():
    from isolib.findings import verdict_table

    rises = [declare("The silhouette rises", "rises in every setup", model, ours, threshold(value, above=0), "r.",
                     kind="test", control="shuffled labels")
             for model, ours, value in [("(i)", "0.05 -> 0.41", 1.0), ("(ii)", "0.05 -> 0.01 (10% of the way)", -1.0)]]
    findings = [
        not_comparable("GPT-2 L12", "0.978", "GPT-2 is not run in this profile.", kind="test"),
        declare("BERT L12", "0.477", "(i)", "0.014 (L6)", Verdict(None, float("nan"), float("nan")), "(i) stands in for BERT.",
                kind="test"),
        *rises,
        declare("Table 1 count", "11", "(ii)", "11", within(11, 11, 0), "passed if equal.", kind="check"),
    ]
    table = verdict_table(findings)
    assert list(table.columns) == ["claim", "paper", "(i)", "(ii)", "no model", "not comparable because"]
    # Rows not comparable on any model come last; a value is kept where it is short.
    assert table.values.tolist() == [
        ["The silhouette rises", "rises in every setup", "✓ yes 0.05 -> 0.41", "✗ no", "", ""],
        ["Check: Table 1 count", "11", "", "✓ passed 11", "", ""],
        ["GPT-2 L12", "0.978", "", "", "· n/c", "GPT-2 is not run in this profile"],
        ["BERT L12", "0.477", "· n/c 0.014 (L6)", "", "", "(i) stands in for BERT"]]
    assert verdict_table(findings, ["The silhouette"], values=False).values.tolist() == [
        ["The silhouette rises", "rises in every setup", "✓ yes", "✗ no"]]
    beside = verdict_table(judge_decoder_views({"(i)": [rises[0]], "(i) (start token)": []}))
    assert "(i) (beside, not counted)" in beside.columns
    with pytest.raises(ValueError, match="No finding's claim starts with"):
        verdict_table(findings, ["Table 9"])


def test_the_overview_refuses_a_study_without_its_record(committed_figures):
    from isolib.project import study_notebooks

    assert "| [02_cai_clusters_manifolds](#02_cai_clusters_manifolds)" in overview_text(committed_figures,
                                                                                       study_notebooks())
    record = committed_figures / "02_cai_clusters_manifolds" / "results.json"
    record.unlink()
    with pytest.raises(ResultsError, match=f"^{re.escape(str(record))} is missing"):
        overview_text(committed_figures, study_notebooks())


# --------------------------------------------------------------------------- issue-46 mechanisms: controls, stand-ins,
# degenerate intervals, knife edges, scale, artefact groups


def test_a_control_that_passes_the_same_rule_stops_the_test_from_counting():
    ours, control = threshold(0.02, below=0.05), threshold(0.021, below=0.05)  # global centring does as well
    same = declare("S_inter ~ 0 inside clusters", "~0", "m", "0.020", ours, "reproduced if below 0.05.", kind="test",
                   control="global centring", control_verdict=control)
    assert same.status == "indistinguishable" and same.control_status == "passes" and same.control_value == 0.021
    assert "passes too" in same.rule
    apart = declare("S_inter ~ 0 inside clusters", "~0", "m", "0.020", ours, "reproduced if below 0.05.", kind="test",
                    control="global centring", control_verdict=threshold(0.3, below=0.05))
    assert apart.status == "reproduced" and apart.control_status == "fails"
    record_counts = pd.Series([f.status for f in (same, apart)]).value_counts()
    assert record_counts["reproduced"] == 1, "an indistinguishable test is not counted as reproduced"
    with pytest.raises(ValueError, match="a check has no control"):
        declare("x", "p", "m", "o", ours, "r.", kind="check", control_verdict=control)


def test_a_stand_ins_result_never_counts_as_the_papers(tmp_path):
    from isolib.findings import Record, mark_stand_ins

    rows = [declare("Claim", "p", model, "0.3", threshold(0.3, above=0.1), "r.", **TEST)
            for model in ("minilm", "smollm2 (start token)", "bert-base-uncased")]
    marked = rows  # declare marks a view of an offline model by itself
    assert [f.stand_in for f in marked] == ["minilm", "smollm2", ""]
    record = Record("T", "C", "M", (), tuple(marked))
    assert record.counts_by_basis.loc["paper's model", "reproduced"] == 1
    assert record.counts_by_basis.loc["stand-in", "reproduced"] == 2
    assert count_line(marked) == ("Tests on the paper's models 1 reproduced; on stand-ins 2 reproduced. "
                                  "Checks: none.")
    page = results_page(record, tmp_path)
    assert "minilm (stand-in)" in page and "- **smollm2**: an instruction-tuned decoder" in page
    custom = mark_stand_ins(rows, lambda finding: "tiny" if finding.model == "bert-base-uncased" else "")
    assert [f.stand_in for f in custom] == ["", "", "tiny"]
    # A result across models stands on each of them: one bullet each, none for the pair.
    across = declare("Claim", "p", "minilm, mpnet", "0.3", threshold(0.3, above=0.1), "r.", **TEST)
    page = results_page(Record("T", "C", "M", (), tuple(mark_stand_ins([across], lambda f: "minilm, mpnet"))), tmp_path)
    assert "- **minilm**: a sentence encoder" in page and "- **mpnet**: a sentence encoder" in page
    assert "**minilm, mpnet**" not in page


def test_a_page_says_how_a_decoders_sink_is_handled_only_where_it_holds_a_decoders_views(tmp_path):
    from isolib.findings import Record

    def page(*models):
        rows = [declare("Claim", "p", model, "0.3", threshold(0.3, above=0.1), "r.", **TEST) for model in models]
        return results_page(Record("T", "C", "M", (), tuple(rows)), tmp_path)

    assert "attention sink" not in page("minilm", "mpnet")
    with_decoder = page("minilm", "smollm2", "smollm2 (start token)")
    assert with_decoder.count("A decoder is judged in its start-token view: a start token") == 1
    assert "the sink kept) is shown beside it, never counted" in with_decoder
    assert "position 0 dropped are shown" in page("smollm2", "smollm2 (start token)", "smollm2 (position 0 dropped)")


def test_a_degenerate_interval_is_reported_and_decides_nothing():
    constant = bootstrap_threshold(np.full(50, 0.7), np.mean, above=0.5)
    assert constant.degenerate and constant.interval == pytest.approx((0.7, 0.7)) and not constant.borderline
    finding = declare("Claim", "p", "m", "0.7", constant, "reproduced if above 0.5.", **TEST)
    assert "degenerate interval" in finding.marks
    varying = bootstrap_threshold(np.linspace(0.6, 0.8, 50), np.mean, above=0.5)
    assert not varying.degenerate
    tie = compare_correlations(np.arange(20.0), np.arange(20.0), np.arange(20.0) ** 2)
    assert tie.degenerate, "two predictors of identical ranks differ by exactly 0 in every resample"


def test_a_knife_edge_is_marked():
    edge = threshold(0.00996, below=0.01)
    assert edge.knife_edge and not threshold(0.008, below=0.01).knife_edge
    assert threshold(0.051, below=0.05).knife_edge and not threshold(0.051, below=0.05).passed
    finding = declare("Seeds agree", "p", "m", "0.00996", edge, "reproduced if below 0.01.", threshold_ours=True,
                      **TEST)
    assert finding.status == "reproduced" and finding.marks == ("knife edge",)
    assert "knife edge" in findings_table([finding]).status.iloc[0]
    assert not threshold(0.001, above=0.0).knife_edge, "a zero threshold has no relative edge"


def test_a_status_that_the_vectors_scale_decides_is_marked():
    raw, unit = threshold(0.8, above=0.5), threshold(0.2, above=0.5)
    forced = declare("I(W) low", "p", "m", "0.8", raw, "r.", scale_free=unit, **TEST)
    assert forced.marks == ("depends on scale",)
    same = declare("I(W) low", "p", "m", "0.8", raw, "r.", scale_free=threshold(0.7, above=0.5), **TEST)
    assert same.marks == ()


@pytest.mark.parametrize("share, ratio, artefact", [
    (0.9, 1.0, "90% of it is one token type"), (0.2, 8.0, "its median norm is 8 times all the points' median"),
    (0.2, 0.3, "its median norm is 0.3 times all the points' median"), (0.3, 1.2, ""), (0.5, 2.0, "50% of it is one token type")])
def test_one_type_or_far_norm_groups_are_artefacts(share, ratio, artefact):
    from isolib.findings import artefact_reason

    assert artefact_reason(share, ratio) == artefact


def test_a_rule_over_layers_is_a_proportion():
    from isolib.findings import proportion

    assert proportion([True] * 5 + [False], at_least=5 / 6).passed
    assert not proportion([True] * 24 + [False] * 6, at_least=5 / 6).passed
    assert proportion([None, None], at_least=0.5).passed is None
    with pytest.raises(ValueError, match="share between 0 and 1"):
        proportion([True], at_least=2)


def test_the_record_keeps_the_control_the_basis_and_the_marks(tmp_path):
    from isolib.findings import Record, write_pages

    finding = declare("Claim", "p", "minilm", "0.02", threshold(0.0499, below=0.05), "r.", control="global centring",
                      control_verdict=threshold(0.3, below=0.05), **{"kind": "test"})
    record = Record("T", "C", "M", (), (finding,))
    write_pages(record, tmp_path)
    back = read_record(tmp_path)
    assert back == record and back.findings[0].marks == ("knife edge",) and back.findings[0].stand_in == "minilm"


def test_a_record_judged_under_earlier_rules_says_so(tmp_path):
    import json

    from isolib.findings import RULES, Record, write_pages

    write_pages(Record("T", "C", "M", (), tuple(FINDINGS)), tmp_path)
    document = json.loads((tmp_path / "results.json").read_text())
    assert document["rules"] == RULES and "earlier rules" not in (tmp_path / "RESULTS.md").read_text()
    del document["rules"]  # a record written before the rules were recorded
    (tmp_path / "results.json").write_text(json.dumps(document))
    old = read_record(tmp_path)
    assert old.rules == 1 and "**Judged under earlier rules.**" in results_page(old, tmp_path)
    (tmp_path / "01_a").mkdir()
    write_pages(old, tmp_path / "01_a")
    assert "| [01_a](#01_a) (earlier rules) |" in overview_text(tmp_path, ["01_a"])
