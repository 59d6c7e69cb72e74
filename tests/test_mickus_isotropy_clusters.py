"""The study package of notebook 04 (Mickus et al. 2024): setups, Table 1 counts, Section 2, findings, evidence."""

import numpy as np
import pandas as pd
import pytest

from isolib import datasets
from isolib.evidence import judge, save_evidence
from isolib.findings import STATUSES, read_record
from isolib.metrics import principal_variances
from isolib.probe import correlations, train_probe
from isolib.studies.mickus_isotropy_clusters.claims import (
    control_findings,
    findings,
    monotonicity,
    record,
    relative_change,
    seed_changes,
    seed_monotonicity,
    trace_summary,
    trend_findings,
)
from isolib.studies.mickus_isotropy_clusters.compute import (
    CONTROL_COLUMNS,
    Setup,
    appendix_a_plan,
    control_traces,
    glue_setup,
    glue_table,
    pos_setup,
    run_controls,
    setup_table,
    shuffled_correlations,
    shuffled_labels,
    static_parameters,
    supersense_setup,
    tightening_demo,
    trace_correlations,
    train_setups,
    variance_from_distances,
)
from isolib.studies.mickus_isotropy_clusters.settings import (
    DISTILROBERTA,
    GLUE_TASKS,
    LABEL_FREE,
    PAPER_TABLE1,
    PAPER_TABLE2,
    SETUP_NAMES,
    SHUFFLED,
)


def test_table1_counts_of_setups_i_and_ii_decode_to_the_papers():
    polarity = Setup("(i) polarity", np.zeros((10_662, 384)), np.arange(10_662) % 2, None, bias=False)
    assert polarity.n_parameters == PAPER_TABLE1["(i)"][1] == 4_094_976
    snli = Setup("(ii) SNLI", np.zeros((12_982, 384)), np.arange(9_842) % 3, np.zeros((9_842, 2), int), bias=True)
    assert snli.n_items == PAPER_TABLE1["(ii)"][0]
    assert snli.n_parameters == PAPER_TABLE1["(ii)"][1] == 4_987_395


def test_table2_holds_every_task_and_model_of_the_paper_and_its_counts_decode():
    assert len(PAPER_TABLE2) == 8 and all(len(counts) == 3 for _, counts in PAPER_TABLE2.values())
    # WNLI (added from the paper's Table 2): 925 unique sentences, pairs on [u; v], 2 classes with bias, both models.
    _, counts = PAPER_TABLE2["wnli"]
    assert counts["minilm"] == 925 * 384 + 2 * 768 + 2 and counts["mpnet"] == 925 * 768 + 2 * 1536 + 2


@pytest.mark.parametrize("task", sorted(GLUE_TASKS))
def test_table2_counts_decode_to_unique_sentences_of_our_glue_files(task):
    kind, dataset, split, columns = GLUE_TASKS[task]
    items = (datasets.load_texts if kind == "texts" else datasets.load_pairs)(dataset, split=split)
    n_unique = pd.concat([items[column] for column in columns]).nunique()
    index = np.zeros((len(items), len(columns)), int)
    paper_items, paper_parameters = PAPER_TABLE2[task]
    for model, dim in (("minilm", 384), ("mpnet", 768)):
        setup = Setup(task, np.zeros((n_unique, dim)), items.label.to_numpy(),
                      index.ravel() if len(columns) == 1 else index, bias=True)
        if task == "mrpc":  # the original train file: GLUE's 3,668 train pairs plus its 408 dev pairs
            assert (setup.n_items, n_unique) == (4_076, 7_816)
            # The paper's count decodes to GLUE's 7,052 unique sentences with the same probe.
            assert paper_parameters[model] == 7_052 * dim + 2 * 2 * dim + 2
        else:
            assert (setup.n_items, setup.n_parameters) == (paper_items, paper_parameters[model])


def test_glue_setup_shares_one_vector_per_unique_sentence():
    cola = glue_setup("cola", n_items=40, random_state=0, progress=False)
    assert cola.name == "cola, minilm" and cola.item_index.shape == (40,) and cola.bias
    assert len(cola.X) == cola.item_index.max() + 1 <= 40 and cola.X.shape[1] == 384
    rte = glue_setup("rte", n_items=10, random_state=0, progress=False)
    assert rte.item_index.shape == (10, 2) and len(rte.X) == len(np.unique(rte.item_index))
    assert rte.n_parameters == len(rte.X) * 384 + 2 * 768 + 2
    with pytest.raises(ValueError, match="Unknown GLUE task 'qqp'"):
        glue_setup("qqp")


def test_static_setups_follow_the_word_selection_rules_and_count_like_the_paper():
    pos = pos_setup()
    assert pos.X.shape == (11_462, 50) and pos.y.shape == (11_462, 4) and pos.loss == "sigmoid" and pos.bias
    assert all(word.isalpha() for word in pos.words) and pos.words[:3] == ("in", "a", "on")  # GloVe's order
    assert pos.y.sum(axis=1).min() == 1  # every word has at least one part of speech
    assert len(np.unique(pos.y, axis=0)) > 4  # multi-label: some words carry several parts of speech
    assert pos.n_parameters == 11_462 * 50 + 4 * 51
    senses = supersense_setup()
    assert senses.y.shape == (2_275, 26) and (senses.y.sum(axis=1) == 1).all()  # one supersense per word
    assert static_parameters(senses) == PAPER_TABLE1["(iv)"][1] == 690_326
    # (iii): the paper's 4,341,004 decodes to 14,466 vectors, not its 11,462 items (REFERENCE, section 04).
    assert static_parameters(pos) == 11_462 * 300 + 4 * 301 != PAPER_TABLE1["(iii)"][1] == 14_466 * 300 + 4 * 301
    assert pos.name == SETUP_NAMES["pos"] == "(iii) GloVe-50d with WordNet parts of speech"
    assert senses.name == "(iv) GloVe-50d with WordNet noun supersenses (one per noun)"
    several = supersense_setup(single=False)
    assert several.y.sum(axis=1).max() > 1
    subset = supersense_setup(n_items=100, random_state=0)
    assert subset.n_items == 100 and set(subset.words) <= set(senses.words)
    table1 = setup_table([pos, senses], full=True)  # the stand-ins also counted at word2vec's 300 dimensions
    assert list(table1.parameters_at_paper_dim) == [static_parameters(pos), static_parameters(senses)]
    assert list(table1.n_parameters) == [pos.n_parameters, senses.n_parameters] and table1.full.all()
    assert list(table1.paper_items) == [11_462, 2_275]


def test_tightening_clusters_raises_the_silhouette_and_lowers_isoscore():
    demo = tightening_demo(random_state=0)
    assert (demo.silhouette.diff().dropna() > 0).all()
    assert (demo.isoscore.diff().dropna() < 0).all()
    assert demo.silhouette.iloc[-1] > 0.9 and demo.isoscore.iloc[0] > 2 * demo.isoscore.iloc[-1]


def test_the_variance_identity_holds_to_1e_10():
    X = np.random.default_rng(0).normal(size=(120, 10)) * np.arange(1, 11) + 5
    np.testing.assert_allclose(variance_from_distances(X), principal_variances(X), rtol=0, atol=1e-10)
    few = X[:6]  # fewer points than dimensions: zeros beyond the rank
    np.testing.assert_allclose(variance_from_distances(few), principal_variances(few), atol=1e-10)


@pytest.fixture(scope="module")
def small_trace():
    generator = np.random.default_rng(0)
    labels = np.repeat([0, 1], 60)
    X = generator.normal(size=(120, 8)) + labels[:, None] * 0.3
    return train_probe(X, labels, bias=False, n_updates=30, seeds=[0, 1], progress=False)


def test_a_trace_is_identical_for_a_seed_and_differs_across_seeds(small_trace):
    generator = np.random.default_rng(0)
    labels = np.repeat([0, 1], 60)
    X = generator.normal(size=(120, 8)) + labels[:, None] * 0.3
    again = train_probe(X, labels, bias=False, n_updates=30, seeds=[0], progress=False)
    pd.testing.assert_frame_equal(again, small_trace[small_trace.seed == 0].reset_index(drop=True))
    first, second = (small_trace[small_trace.seed == seed].reset_index(drop=True) for seed in (0, 1))
    assert not np.allclose(first.loss, second.loss)


def _trace(isoscore, silhouette, seeds=(0, 1, 2)):
    """A constructed trace: the given curves over updates, shifted by 0.001 per seed."""
    return pd.concat([pd.DataFrame({"seed": seed, "update": np.arange(len(isoscore)),
                                    "isoscore": np.asarray(isoscore) + 0.001 * seed,
                                    "silhouette": np.asarray(silhouette) + 0.001 * seed}) for seed in seeds],
                     ignore_index=True)


def _trends(traces: pd.DataFrame, *, appendix: bool = False):
    """:func:`trend_findings` of constructed traces (a ``setup`` column), with their correlations."""
    return trend_findings(traces, trace_correlations(traces), appendix=appendix)


def test_summary_keeps_the_means_spread_and_correlations():
    updates = np.arange(11)
    trace = _trace(0.8 - 0.03 * updates, 0.1 + 0.02 * updates ** 1.5, seeds=(0, 1)).assign(setup="s")
    summary = trace_summary(trace, trace_correlations(trace))
    assert summary.isoscore_first == pytest.approx(0.8005) and summary.isoscore_last == pytest.approx(0.5005)
    assert summary.max_std == pytest.approx(0.001 / np.sqrt(2))
    assert summary.pearson_max < -0.9 and summary.spearman_max == pytest.approx(-1)


def test_relative_change_is_the_share_of_the_way_to_the_bound():
    assert relative_change(0.30, 0.003, bound=0) == pytest.approx(0.99)
    assert relative_change(0.590, 0.559, bound=0) == pytest.approx(0.0525, abs=1e-4)
    assert relative_change(0.0, 0.58, bound=1) == pytest.approx(0.58)
    assert relative_change(0.2, 0.3, bound=0) < 0  # moved away from the bound
    trace = _trace(np.linspace(0.5, 0.25, 6), np.linspace(0, 0.5, 6), seeds=(0, 1))
    np.testing.assert_allclose(seed_changes(trace, "isoscore", bound=0), [0.5, 0.25 / 0.501])


def test_monotonicity_counts_planted_reversals():
    values = 100.0 - np.arange(101)  # 100 falling steps
    values[[11, 12, 13]] = values[10] + [1, 2, 3]  # three rising steps in a row (then one long fall back) ...
    values[51] = values[50] + 0.5  # ... and one more, alone
    share, longest = monotonicity(values, rising=False)
    assert share == pytest.approx(96 / 100) and longest == 3
    # The control: the same trace without the reversals is perfectly monotone, and judged the other way round
    # it moves the expected way only in the planted steps.
    assert monotonicity(100.0 - np.arange(101), rising=False) == (1.0, 0)
    assert monotonicity(values, rising=True) == (pytest.approx(4 / 100), 49)  # steps 51-99 fall
    flat = monotonicity(np.r_[1.0, 1.0, 0.5], rising=False)  # a step that does not move counts as neither
    assert flat == (0.5, 0)
    per_seed = seed_monotonicity(_trace(values, -values), "isoscore", rising=False)
    assert list(per_seed.share) == [pytest.approx(0.96)] * 3 and list(per_seed.longest_against) == [3] * 3


def test_a_trend_below_its_effect_size_threshold_is_not_reproduced():
    updates = np.arange(21)
    small = _trace(0.590 - 0.0016 * updates, -0.067 + 0.0001 * updates)  # IsoScore -5%, the silhouette barely moves
    large = _trace(0.30 - 0.0149 * updates, 0.005 + 0.029 * updates)  # IsoScore -99%, the silhouette 0.0 -> 0.59
    status = {(f.finding, f.model): f.status for f in _trends(small.assign(setup="small"))
              + _trends(large.assign(setup="large"))}
    assert status["IsoScore falls while the embeddings are optimised", "small"] == "not reproduced"
    assert status["The silhouette rises", "small"] == "not reproduced"
    # The control: a large change on the same rule is reproduced. Both traces are perfectly monotone and
    # perfectly anti-correlated, which the effect size is there to tell apart.
    assert status["IsoScore falls while the embeddings are optimised", "large"] == "reproduced"
    assert status["The silhouette rises", "large"] == "reproduced"
    for setup in ("small", "large"):
        assert status["A monotonically decreasing relationship between IsoScore and silhouette", setup] == "reproduced"
    falls = next(f for f in _trends(small.assign(setup="small")) if f.finding.startswith("IsoScore falls"))
    assert "5% of the way to 0" in falls.ours and "Threshold ours" in falls.rule and "95% CI" in falls.ours


def test_the_correlations_are_folded_into_the_steadiness_line_and_not_judged_apart():
    updates = np.arange(21)
    judged = _trends(_trace(0.30 - 0.0149 * updates, 0.005 + 0.029 * updates).assign(setup="(i) polarity"))
    assert [f.finding for f in judged] == ["IsoScore falls while the embeddings are optimised", "The silhouette rises",
                                           "A monotonically decreasing relationship between IsoScore and silhouette",
                                           "Negligible standard deviation across seeds"]
    steady = judged[2]
    assert "Pearson up to -" in steady.ours and "Spearman up to -1.000" in steady.ours and "not judged" in steady.rule
    # Appendix A has no steadiness line: Table 3's correlations stand on the silhouette's line.
    appendix = _trends(_trace(0.30 - 0.0149 * updates, 0.005 + 0.029 * updates).assign(setup="cola, minilm"),
                       appendix=True)
    assert [f.finding for f in appendix] == ["Appendix A: IsoScore falls while the embeddings are optimised",
                                             "Appendix A: The silhouette rises"]
    assert "Spearman up to -1.000" in appendix[1].ours and "Spearman" not in appendix[0].ours


def test_a_trace_with_many_reversals_is_not_monotone():
    generator = np.random.default_rng(0)
    noisy = 0.5 - 0.002 * np.arange(101) + generator.normal(scale=0.01, size=101)  # falls, but reverses often
    judged = _trends(_trace(noisy, np.linspace(0, 0.5, 101)).assign(setup="noisy"))
    monotone = next(f for f in judged if f.finding.startswith("A monotonically"))
    assert monotone.status == "not reproduced" and "longest run against" in monotone.ours


def test_shuffled_labels_keep_the_class_balance_and_change_the_labels():
    labels = np.repeat(["neg", "pos", "neutral"], [500, 300, 200])
    shuffled = shuffled_labels(labels, random_state=0)
    assert shuffled.shape == labels.shape
    assert pd.Series(shuffled).value_counts().to_dict() == {"neg": 500, "pos": 300, "neutral": 200}
    # The labels change: about 1 - (0.5^2 + 0.3^2 + 0.2^2) = 62% of the items get another one (the identity
    # permutation, the control, changes none).
    assert 0.55 < (shuffled != labels).mean() < 0.69
    assert (shuffled_labels(labels, random_state=0) == shuffled).all()  # seeded
    assert not (shuffled_labels(labels, random_state=1) == shuffled).all()
    vectors = np.array([[1, 0, 0], [0, 1, 1], [1, 1, 0], [0, 0, 1]] * 25)  # multi-label: whole rows move
    moved = shuffled_labels(vectors, random_state=0)
    assert sorted(map(tuple, moved)) == sorted(map(tuple, vectors)) and (moved != vectors).any(axis=1).mean() > 0.5


def _two_clusters(n=120, dim=8, seed=0):
    generator = np.random.default_rng(seed)
    labels = np.repeat([0, 1], n // 2)
    X = 0.1 * generator.normal(size=(n, dim)) + labels[:, None] * 0.03  # small, so 40 Adam steps move it
    return Setup("(i) polarity", X, labels, None, bias=False)


def test_controls_train_on_shuffled_labels_and_without_labels():
    setup = _two_clusters()
    controls = control_traces(setup, n_updates=40, seeds=[0, 1])
    assert list(controls.columns) == CONTROL_COLUMNS and set(controls.control) == {SHUFFLED, LABEL_FREE}
    assert len(controls) == 2 * 2 * 41
    free = controls[controls.control == LABEL_FREE]
    shuffled = controls[controls.control == SHUFFLED]
    assert free.silhouette_shuffled.isna().all() and shuffled.silhouette_shuffled.notna().all()
    # The shuffled run's silhouette against the true labels starts where the true-label run starts.
    true = train_probe(setup.X, setup.y, bias=False, n_updates=40, seeds=[0], progress=False)
    assert shuffled[shuffled.seed == 0].silhouette_true.iloc[0] == pytest.approx(true.silhouette.iloc[0], abs=1e-6)
    # Trained on the shuffled labels, the points cluster by them and not by the true ones.
    last = shuffled[shuffled["update"] == 40]
    assert (last.silhouette_shuffled > shuffled[shuffled["update"] == 0].silhouette_shuffled.to_numpy() + 0.01).all()
    sparse = control_traces(setup, n_updates=40, seeds=[0], every=10)  # the same training, metrics every 10 updates
    assert sorted(set(sparse["update"])) == [0, 10, 20, 30, 40]
    pd.testing.assert_frame_equal(sparse[sparse["update"] == 40].reset_index(drop=True),
                                  controls[(controls.seed == 0) & (controls["update"] == 40)].reset_index(drop=True))
    controls = controls.assign(setup=setup.name)
    # The shuffled runs' correlations are IsoScore's against the silhouette by the labels they were trained on.
    by_shuffled = correlations(shuffled.drop(columns="silhouette_true").rename(
        columns={"silhouette_shuffled": "silhouette"}))
    got = shuffled_correlations(controls)
    assert list(got.seed) == [0, 1] and set(got.setup) == {setup.name}
    np.testing.assert_allclose(got[["pearson", "spearman"]].to_numpy(), by_shuffled.to_numpy())
    # The controls alone, judged by the three trend rules: lines beside the claims, never counted.
    judged = control_findings(controls, shuffled_correlations(controls))
    assert [f.model for f in judged] == [f"{setup.name}, {SHUFFLED}"] * 3 + [f"{setup.name}, {LABEL_FREE}"] * 3
    assert not any(f.counted for f in judged) and all(f.status in STATUSES and "Threshold ours" in f.rule
                                                      for f in judged)


def test_appendix_a_lists_every_task_and_model_of_the_paper_run_or_not():
    plan = appendix_a_plan(["cola", "rte"], ["minilm"])
    assert len(plan) == 8 * 3 and plan.run.sum() == 2
    reason = plan.set_index(["task", "model"]).reason
    assert reason["cola", "minilm"] == "" and reason["rte", "minilm"] == ""
    assert "not in the data registry" in reason["wnli", "minilm"]
    assert "not in the data registry" in reason["qqp", "mpnet"]
    assert "not available offline" in reason["cola", DISTILROBERTA]
    assert "not run in this profile" in reason["sst2", "mpnet"]
    paper_profile = appendix_a_plan(["cola"], ["minilm", "mpnet", DISTILROBERTA])
    assert paper_profile[paper_profile.task == "cola"].run.all()


# The parameters and timings of a run, as the notebook stores them.
RUN = {"profile": "quick", "n_items": 1500, "n_updates": 10, "seeds": [0, 1, 2], "control_every": 5,
       "control_minutes": 0.25, "glue_tasks": [], "glue_models": ["minilm"], "glue_updates": 30,
       "glue_sample_size": 1000, "wall_minutes": 1.5, "peak_gib": 2.0}


def _evidence(traces: pd.DataFrame, table1: pd.DataFrame, *, plan: pd.DataFrame | None = None,
              table2: pd.DataFrame | None = None, glue_traces: pd.DataFrame | None = None,
              controls: pd.DataFrame | None = None) -> dict:
    """The evidence the notebook stores, from constructed tables; Appendix A and the controls not run unless given."""
    glue_traces = train_setups([], n_updates=1, seeds=[0]) if glue_traces is None else glue_traces
    controls = run_controls([], n_updates=1, seeds=[0]) if controls is None else controls
    return {"traces": traces, "correlations": trace_correlations(traces), "controls": controls,
            "control_correlations": shuffled_correlations(controls), "table1": table1,
            "demo": tightening_demo(random_state=0), "appendix": appendix_a_plan([], []) if plan is None else plan,
            "table2": glue_table({}, full=True) if table2 is None else table2, "glue_traces": glue_traces,
            "glue_correlations": trace_correlations(glue_traces), "run": RUN}


def test_findings_follow_their_rules_and_kinds():
    updates = np.arange(11)
    traces = _trace(0.8 - 0.07 * updates, 0.1 + 0.02 * updates ** 1.5).assign(setup="(i) polarity")
    table1 = pd.DataFrame([
        {"setup": "(i) polarity", "n_items": 10_662, "n_parameters": 4_094_976, "parameters_at_paper_dim": np.nan,
         "full": True},
        {"setup": "(ii) SNLI", "n_items": 500, "n_parameters": 1, "parameters_at_paper_dim": np.nan, "full": False},
        {"setup": SETUP_NAMES["pos"], "n_items": 11_462, "n_parameters": 573_304,
         "parameters_at_paper_dim": 3_439_804, "full": True},
        {"setup": SETUP_NAMES["supersenses"], "n_items": 2_275, "n_parameters": 115_076,
         "parameters_at_paper_dim": 690_326, "full": True}])
    judged = findings(_evidence(traces, table1))
    assert {finding.status for finding in judged if finding.kind == "test"} <= set(STATUSES)
    kind = {(f.finding[:30], f.model): f.kind for f in judged}
    status = {(f.finding[:30], f.model): f.status for f in judged}
    # Table 1's counts are checks (the probe's shape was derived from them), and so is our own demonstration.
    assert {kind[claim, model] for claim, model in kind if claim.startswith(("Table", "Section"))} == {"check"}
    assert status["IsoScore falls while the embed", "(i) polarity"] == "reproduced"
    assert status["Table 1: items and trainable p", "(i) polarity"] == "passed"
    assert status["Table 1: items and trainable p", "(ii) SNLI"] == "not comparable"
    assert status["Table 1: items and trainable p", SETUP_NAMES["supersenses"]] == "passed"
    # (iii): the paper's own count does not decode to its items, whatever ours.
    pos = next(f for f in judged if f.model == SETUP_NAMES["pos"] and f.finding.startswith("Table 1"))
    assert (pos.kind, pos.status) == ("check", "not comparable") and "14,466" in pos.rule
    assert status["Section 2: tighter clusters ra", "synthetic clusters"] == "passed"
    wrong = table1.assign(n_parameters=[4_094_977, 1, 573_304, 115_076])
    status = {(f.finding[:30], f.model): f.status for f in findings(_evidence(traces, wrong))}
    assert status["Table 1: items and trainable p", "(i) polarity"] == "failed"
    # Appendix A: the pairs run are judged per task and combined per model; the others say why not.
    glue = pd.concat([traces.assign(setup="cola, minilm"), traces.assign(setup="mrpc, minilm")], ignore_index=True)
    table2 = pd.DataFrame([
        {"task": "cola", "model": "minilm", "n_items": 8_551, "n_parameters": 3_277_058, "full": True},
        {"task": "mrpc", "model": "minilm", "n_items": 4_076, "n_parameters": 3_003_650, "full": True}])
    plan = appendix_a_plan(["cola", "mrpc"], ["minilm"])
    judged = findings(_evidence(traces, table1, plan=plan, table2=table2, glue_traces=glue))
    status = {(f.finding[:30], f.model): f.status for f in judged}
    assert status["Appendix A: IsoScore falls whi", "minilm"] == "reproduced"
    assert status["Appendix A: The silhouette ris", "minilm"] == "reproduced"
    assert [f.ours.split(":")[0] for f in judged if f.finding.startswith("Appendix A: The")] == ["cola"]
    assert status["Table 2: items and trainable p", "cola, minilm"] == "passed"
    assert status["Table 2: items and trainable p", "mrpc, minilm"] == "not comparable"
    # The 22 pairs not run: one "not comparable" line per reason, naming its pairs.
    not_run = [f for f in judged if f.finding.startswith("Appendix A: IsoScore falls and the silhouette rises")]
    assert len(not_run) == plan[~plan.run].reason.nunique() and {f.status for f in not_run} == {"not comparable"}
    named = {pair for f in not_run for pair in f.ours.split("; ")}
    assert named | {"cola, minilm", "mrpc, minilm"} == {
        f"{task}, {model}" for task, model in plan[["task", "model"]].itertuples(index=False)}
    assert sum(int(f.model.split()[0]) for f in not_run) == 22
    skipped = findings(_evidence(traces, table1))
    assert sum(int(f.model.split()[0]) for f in skipped if f.finding.startswith("Appendix A")) == 24


def _constructed_controls(setup: str) -> pd.DataFrame:
    """Control runs as :func:`run_controls` returns them: the shuffled run clusters, the label-free one barely moves."""
    updates = np.arange(11)
    shuffled = _trace(0.8 - 0.07 * updates, 0.1 + 0.05 * updates).rename(columns={"silhouette": "silhouette_shuffled"})
    free = _trace(0.8 - 0.001 * updates, 0.1 + 0.001 * updates).rename(columns={"silhouette": "silhouette_true"})
    runs = [shuffled.assign(control=SHUFFLED, silhouette_true=0.1), free.assign(control=LABEL_FREE,
                                                                                silhouette_shuffled=np.nan)]
    return pd.concat(runs, ignore_index=True).assign(loss=0.5)[CONTROL_COLUMNS].assign(setup=setup)


@pytest.mark.parametrize("everything_run", [True, False], ids=["controls and appendix", "neither"])
def test_the_record_is_judged_from_the_stored_evidence_alone(tmp_path, everything_run):
    from isolib.findings import write_pages

    updates = np.arange(11)
    traces = pd.concat([_trace(0.8 - 0.07 * updates, 0.1 + 0.02 * updates ** 1.5).assign(setup=name)
                        for name in (SETUP_NAMES["polarity"], SETUP_NAMES["supersenses"])], ignore_index=True)
    table1 = pd.DataFrame([{"setup": name, "n_items": 100, "n_vectors": 100, "dim": 8, "n_parameters": 900,
                            "parameters_at_paper_dim": words, "paper_items": PAPER_TABLE1[name.split()[0]][0],
                            "paper_parameters": PAPER_TABLE1[name.split()[0]][1], "full": False}
                           for name, words in ((SETUP_NAMES["polarity"], np.nan), (SETUP_NAMES["supersenses"], 30_326.0))])
    options = {}
    if everything_run:
        options = {"controls": _constructed_controls(SETUP_NAMES["polarity"]), "glue_traces": traces[
            traces.setup == SETUP_NAMES["polarity"]].assign(setup="cola, minilm"),
                   "plan": appendix_a_plan(["cola"], ["minilm"]), "table2": pd.DataFrame([
                       {"task": "cola", "model": "minilm", "n_items": 100, "n_vectors": 99, "n_parameters": 38_018,
                        "paper_items": 8_551, "paper_parameters": 3_277_058, "full": False}])}
    evidence = _evidence(traces, table1, **options)
    evidence["run"] = {**RUN, "glue_tasks": ["cola"] if everything_run else []}
    save_evidence(tmp_path / "stored", evidence)
    judged = judge(tmp_path / "stored", record)  # reads the evidence back from Parquet and JSON
    write_pages(record(evidence), tmp_path / "in_memory")
    for page in ("results.json", "RESULTS.md"):
        assert (tmp_path / "stored" / page).read_text() == (tmp_path / "in_memory" / page).read_text()
    assert read_record(tmp_path / "stored").every_status == judged.every_status
    notes = " ".join(judged.notes)
    assert ("Controls (ours): (i) polarity also trained" in notes) == everything_run
    assert ("Appendix A: cola with minilm; 30 updates" in notes) == everything_run
    assert ("Wall time of the notebook: 1.5 min, reading from the cache what an earlier run stored (embeddings and "
            "training runs)") in notes and "Peak memory of the kernel: 2.0 GiB." in notes
    trends = [f for f in judged.findings if f.finding.startswith("IsoScore falls")]
    assert trends and all(f.sampling_unit == "seeds" and f.interval is not None for f in trends)
    # The static setups stand on GloVe-50d, a stand-in for the paper's word2vec; (i) and Appendix A on the paper's
    # own models, although "minilm" alone would read as an offline model.
    stand_in = {f.model: f.stand_in for f in judged.findings}
    assert stand_in[SETUP_NAMES["supersenses"]] == "glove-50d" and stand_in[SETUP_NAMES["polarity"]] == ""
    assert ("minilm" in stand_in) == everything_run and stand_in.get("minilm", "") == ""
    assert judged.counts_by_basis.loc["stand-in"].sum() == 4  # (iv)'s three trends and its spread


def _table1(*names: str) -> pd.DataFrame:
    """Table 1 of a quick run (a subset of the items) for the setups ``names``."""
    return pd.DataFrame([{"setup": name, "n_items": 100, "n_vectors": 100, "dim": 8, "n_parameters": 900,
                          "parameters_at_paper_dim": np.nan, "full": False} for name in names])


def test_each_trend_stands_beside_its_control_judged_by_the_same_rule():
    updates = np.arange(11)
    polarity = SETUP_NAMES["polarity"]
    traces = _trace(0.8 - 0.07 * updates, 0.1 + 0.05 * updates).assign(setup=polarity)
    claims = ("IsoScore falls while the embeddings are optimised", "The silhouette rises",
              "A monotonically decreasing relationship between IsoScore and silhouette")

    def judged(controls: pd.DataFrame) -> dict[str, object]:
        every = findings(_evidence(traces, _table1(polarity), controls=controls))
        assert not any(f.finding.startswith("Control") for f in every)  # a control is never a line of its own
        return {f.finding: f for f in every if f.model == polarity}

    # The label-free run barely moves and the shuffled run's silhouette against the true labels stays flat: every
    # control fails its claim's rule, and the claims are reproduced, the control's value on their line.
    controls = _constructed_controls(polarity)
    lines = judged(controls)
    for claim in claims:
        assert (lines[claim].status, lines[claim].control_status) == ("reproduced", "fails")
        assert "Its control, by the same rule" in lines[claim].rule
    assert lines[claims[0]].control.startswith("the same training on a label-free objective")
    assert lines[claims[1]].control.startswith("the same training on shuffled labels")
    spread = lines["Negligible standard deviation across seeds"]
    assert spread.control_status == "" and spread.control.startswith("none can be computed")
    # The control: runs that pass the same rules. A label-free run whose IsoScore falls as far, and a shuffled run
    # whose silhouette rises against the true labels: the data cannot tell the claims from their controls.
    passing = controls.copy()
    free, shuffled = passing.control == LABEL_FREE, passing.control == SHUFFLED
    passing.loc[free, "isoscore"] = 0.8 - 0.07 * passing.loc[free, "update"]
    passing.loc[shuffled, "silhouette_true"] = 0.1 + 0.05 * passing.loc[shuffled, "update"]
    lines = judged(passing)
    for claim in claims:
        assert (lines[claim].status, lines[claim].control_status) == ("indistinguishable", "passes")


def _from_one_start(changes: list, *, start: float = 0.5, n_updates: int = 10) -> pd.DataFrame:
    """IsoScore from the same ``start`` in every seed, falling by each seed's share of the way to 0, linearly; the
    silhouette rising steadily from 0 to 0.5."""
    steps = np.linspace(0, 1, n_updates + 1)
    return pd.concat([pd.DataFrame({"seed": seed, "update": np.arange(n_updates + 1),
                                    "isoscore": start * (1 - change * steps), "silhouette": 0.5 * steps})
                      for seed, change in enumerate(changes)], ignore_index=True)


def test_an_interval_over_seeds_is_degenerate_unless_the_seeds_draw_the_items():
    # The seeds disagree about the fall (5% to 16% of the way): the interval of the mean crosses 10%.
    changes = [0.05, 0.16, 0.12, 0.15, 0.06]
    falls = "IsoScore falls while the embeddings are optimised"
    # Every seed starts from the same vectors and sees every item: the interval covers the initialisation only, so
    # it is degenerate by construction and the status rests on the mean (10.8%) alone.
    one_start = {f.finding: f for f in _trends(_from_one_start(changes).assign(setup="(i) polarity"))}
    assert one_start[falls].status == "reproduced" and "degenerate interval" in one_start[falls].marks
    assert one_start[falls].interval[0] < 0.10 < one_start[falls].interval[1]
    # The control: the seeds also drew the items IsoScore is evaluated on (its value differs before the first
    # update), so the same interval covers the data, and it crosses the threshold.
    drawn = _from_one_start(changes)
    drawn.loc[drawn["update"] == 0, "isoscore"] += 0.001 * drawn.seed
    sampled = {f.finding: f for f in _trends(drawn.assign(setup="cola, minilm"), appendix=True)}
    assert sampled[f"Appendix A: {falls}"].status == "borderline"
    assert "degenerate interval" not in sampled[f"Appendix A: {falls}"].marks
    # The silhouette, not drawn (the same at the start in every seed), keeps a degenerate interval.
    assert "degenerate interval" in sampled["Appendix A: The silhouette rises"].marks


@pytest.mark.parametrize(("largest", "status", "marked"), [(0.00996, "reproduced", True), (0.0126, "not reproduced", False),
                                                          (0.005, "reproduced", False)])
def test_a_spread_within_5_percent_of_its_threshold_is_marked_a_knife_edge(largest, status, marked):
    trace = _from_one_start([0.5, 0.5])
    last = trace["update"] == trace["update"].max()
    trace.loc[last & (trace.seed == 1), "silhouette"] += largest * np.sqrt(2)  # the std of two values: |a - b| / sqrt 2
    spread = next(f for f in _trends(trace.assign(setup="(iii) x")) if f.finding.startswith("Negligible"))
    assert spread.value == pytest.approx(largest) and spread.status == status
    assert ("knife edge" in spread.marks) == marked


def test_appendix_a_gives_one_line_per_claim_and_model_over_its_tasks():
    updates = np.arange(21)
    large = _trace(0.30 - 0.0149 * updates, 0.005 + 0.029 * updates)
    small = _trace(0.590 - 0.0016 * updates, -0.067 + 0.0001 * updates)
    traces = pd.concat([large.assign(setup="cola, minilm"), small.assign(setup="rte, minilm"),
                        large.assign(setup="cola, mpnet"), large.assign(setup="rte, mpnet")], ignore_index=True)
    lines = {(f.finding, f.model): f for f in _trends(traces, appendix=True)}
    assert len(lines) == 4  # two claims x two models, the tasks in the cell
    falls = "Appendix A: IsoScore falls while the embeddings are optimised"
    # minilm: cola reproduces the claim, rte does not: the tasks disagree, which is "mixed", not "borderline".
    assert lines[falls, "minilm"].status == "mixed"
    assert "cola: " in lines[falls, "minilm"].ours and "(not reproduced)" in lines[falls, "minilm"].ours
    assert lines[falls, "mpnet"].status == "reproduced"
    assert {f.stand_in for f in lines.values()} == {""}  # the paper's own SBERT models, although named as offline ones
