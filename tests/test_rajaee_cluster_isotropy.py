"""The study package of notebook 03 (Rajaee & Pilehvar 2021): methods, STS scoring, the SST-2 protocol, findings."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from isolib import datasets
from isolib.findings import STATUSES, compare_correlations
from isolib.studies.rajaee_cluster_isotropy import claims, compute, finetuning
from isolib.studies.rajaee_cluster_isotropy.claims import BEST_OTHER, BEYOND_SIX_ROWS, assess_findings
from isolib.studies.rajaee_cluster_isotropy.compute import (
    PairedSentences,
    evaluate_methods,
    layer_isotropy,
    probe_evidence,
    probe_with_method,
    scale_dependence,
    sentence_pairs,
    sts_evidence,
    sweep,
    transform_tokens,
)
from isolib.studies.rajaee_cluster_isotropy.finetuning import (
    finetune,
    finetune_texts,
    isotropise_batch,
    learning_rate_share,
    select_learning_rate,
)
from isolib.studies.rajaee_cluster_isotropy.protocol import (MEASURES, METHODS, PROPOSED, BatchMethod, FinetuneProtocol,
                                                            Settings)
from isolib.studies.rajaee_cluster_isotropy.summaries import (
    COMPARISONS,
    compare_methods,
    grid_summary,
    method_summary,
    probe_summary,
)


def shifted_mixture(seed=0, n=300, dim=16):
    """Two clusters, each with a dominant direction of its own, far from the origin."""
    generator = np.random.default_rng(seed)
    scales = np.r_[8.0, np.ones(dim - 1)]
    first = generator.normal(size=(n, dim)) * scales + 30
    second = generator.normal(size=(n, dim)) * scales[::-1] - 30
    return np.vstack([first, second])


def test_every_method_does_what_its_row_says():
    X = shifted_mixture()
    settings = Settings(n_clusters=2, n_pc=1, n_global=1)
    np.testing.assert_array_equal(transform_tokens(X, "pre-trained", settings), X)
    np.testing.assert_allclose(transform_tokens(X, "Mean", settings).mean(axis=0), 0, atol=1e-9)
    abtt = transform_tokens(X, "Mean + PCA", settings)
    np.testing.assert_allclose(abtt.mean(axis=0), 0, atol=1e-9)  # ABTT projects the centred vectors
    for method in ("K-means + Mean", "GMM + Mean + PCA", PROPOSED):
        processed = transform_tokens(X, method, settings, random_state=0)
        halves = [processed[:300], processed[300:]]  # the two clusters
        for half in halves:
            np.testing.assert_allclose(half.mean(axis=0), 0, atol=1e-8)
        if method != "K-means + Mean":  # each cluster's dominant direction removed: its variance is gone
            assert halves[0][:, 0].var() < 0.01 * X[:300, 0].var() and halves[1][:, -1].var() < 0.01 * X[300:, -1].var()
    with pytest.raises(ValueError, match="Unknown method"):
        transform_tokens(X, "Whitening", settings)


def _constructed_pairs():
    """Four sentences of two tokens each; pairs (0, 1) similar, (2, 3) similar, (0, 2) different."""
    tokens = np.array([[1, 0, 0], [1, 0.1, 0], [1, 0, 0.1], [0.9, 0, 0], [0, 1, 0], [0, 1, 0.1], [0.1, 1, 0],
                       [0, 0.9, 0]], dtype=float) + 5  # a common offset: every cosine is near 1 until centred
    tokens = tokens + np.random.default_rng(0).normal(scale=0.01, size=tokens.shape)  # no exact ties
    ids = np.repeat(np.arange(4), 2)
    pairs = PairedSentences(["a", "b", "c", "d"], np.array([0, 2, 0, 1]), np.array([1, 3, 2, 3]),
                            np.array([5.0, 5.0, 0.0, 0.5]), np.array(["news"] * 4))
    return tokens, ids, pairs


def test_evaluation_pools_tokens_into_sentences_and_scores_pairs_by_cosine():
    tokens, ids, pairs = _constructed_pairs()
    results = evaluate_methods(tokens, ids, pairs, Settings(2, 0, 1), seeds=[0, 1], methods=["pre-trained", "Mean",
                                                                                             "K-means + Mean"])
    assert results.method.tolist() == ["pre-trained", "Mean", "K-means + Mean", "K-means + Mean"]
    assert results.seed.isna().tolist() == [True, True, False, False]
    by_method = results.groupby("method").spearman.mean()
    # By hand: centre the tokens, average each sentence's two tokens, cosine of each pair, Spearman x 100.
    centred = tokens - tokens.mean(axis=0)
    sentences = (centred[0::2] + centred[1::2]) / 2
    unit = sentences / np.linalg.norm(sentences, axis=1, keepdims=True)
    cosines = (unit[pairs.first] * unit[pairs.second]).sum(axis=1)
    assert by_method["Mean"] == pytest.approx(100 * stats.spearmanr(cosines, pairs.gold).statistic)
    raw = tokens[0::2] + tokens[1::2]
    raw = raw / np.linalg.norm(raw, axis=1, keepdims=True)
    assert by_method["pre-trained"] == pytest.approx(100 * stats.spearmanr(
        (raw[pairs.first] * raw[pairs.second]).sum(axis=1), pairs.gold).statistic)
    summary = method_summary(results)
    assert summary.set_index("method").loc["Mean", "spearman_std"] == 0
    assert summary.set_index("method").loc["K-means + Mean", "n_seeds"] == 2


def test_sts_pairs_are_read_whole_and_indexed_into_unique_sentences():
    if not datasets.dataset_path("stsb").exists():
        pytest.skip("STS-B is not available")
    pairs = sentence_pairs("stsb-dev")
    assert len(pairs.gold) == 1500  # no quoting trap: every dev row
    assert len(pairs.sentences) == len(set(pairs.sentences)) < 3000
    frame = datasets.load_sts("stsb", split="dev")
    assert [pairs.sentences[i] for i in pairs.first[:3]] == frame.sentence1[:3].tolist()
    with pytest.raises(ValueError, match="Unknown dataset"):
        sentence_pairs("sts17")


def test_sweep_covers_the_grid_once_per_seed():
    tokens, ids, pairs = _constructed_pairs()
    per_seed = sweep(tokens, ids, pairs, [1, 2], [0, 1], seeds=[0, 1])
    assert per_seed[["n_clusters", "n_pc", "seed"]].values.tolist() == [
        [k, n_pc, seed] for k in (1, 2) for n_pc in (0, 1) for seed in (0, 1)]
    grid = grid_summary(per_seed.assign(model="minilm", dataset="stsb-dev", paper_k=2, paper_n_pc=1))
    assert grid.columns.tolist() == ["n_clusters", "n_pc", "spearman", "spearman_std", "model", "dataset", "paper_k",
                                     "paper_n_pc"]
    assert grid[["n_clusters", "n_pc"]].values.tolist() == [[1, 0], [1, 1], [2, 0], [2, 1]]
    assert (grid.spearman_std[:2] == 0).all()  # k = 1 does not depend on the seed
    plain = evaluate_methods(tokens, ids, pairs, Settings(1, 0, 0), methods=["Mean"]).spearman.iloc[0]
    assert grid.spearman.iloc[0] == pytest.approx(plain)  # k = 1 and no direction: plain centring
    # Mean and spread over the seeds of each point; one seed has no spread.
    two = per_seed.spearman[(per_seed.n_clusters == 2) & (per_seed.n_pc == 1)].to_numpy()
    assert grid.spearman.iloc[3] == two.mean() and grid.spearman_std.iloc[3] == two.std(ddof=1)
    one = grid_summary(per_seed[per_seed.seed == 0].assign(model="m", dataset="d", paper_k=2, paper_n_pc=1))
    assert (one.spearman_std == 0).all() and one.spearman.tolist() == per_seed.spearman[per_seed.seed == 0].tolist()


def test_worker_processes_give_the_rows_of_one_process():
    X = shifted_mixture(n=200)
    ids = np.repeat(np.arange(100), 4)
    pairs = PairedSentences([str(i) for i in range(100)], np.arange(0, 100, 2), np.arange(1, 100, 2),
                            np.random.default_rng(1).uniform(0, 5, 50), np.array(["news"] * 50))
    options = dict(seeds=[0, 1], methods=["Mean", PROPOSED, "GMM + Mean + PCA"])
    serial = evaluate_methods(X, ids, pairs, Settings(2, 1, 1), **options)
    parallel = evaluate_methods(X, ids, pairs, Settings(2, 1, 1), n_jobs=2, **options)
    pd.testing.assert_frame_equal(serial.drop(columns="similarities"), parallel.drop(columns="similarities"), rtol=1e-9)
    np.testing.assert_allclose(np.stack(serial.similarities), np.stack(parallel.similarities), rtol=1e-9)
    pd.testing.assert_frame_equal(sweep(X, ids, pairs, [1, 2], [0, 1], seeds=[0, 1]),
                                  sweep(X, ids, pairs, [1, 2], [0, 1], seeds=[0, 1], n_jobs=2), rtol=1e-9)


def test_the_sst2_probe_never_fits_the_method_on_dev_tokens(monkeypatch):
    generator = np.random.default_rng(0)
    labels = np.repeat([0, 1], 40)
    train_tokens = generator.normal(size=(240, 6)) + np.repeat(labels, 3)[:, None]
    dev_labels = np.repeat([0, 1], 10)
    dev_tokens = generator.normal(size=(60, 6)) + np.repeat(dev_labels, 3)[:, None]
    fitted = []
    original_fit = compute.ClusterIsotropy.fit
    monkeypatch.setattr(compute.ClusterIsotropy, "fit", lambda self, X: fitted.append(np.asarray(X).copy())
                        or original_fit(self, X))
    runs = probe_with_method((train_tokens, np.repeat(np.arange(80), 3), labels),
                             (dev_tokens, np.repeat(np.arange(20), 3), dev_labels), Settings(2, 1, 0), seeds=[0, 1])
    assert runs.method.tolist() == ["pre-trained", PROPOSED, PROPOSED]
    assert len(fitted) == 2 and all(np.array_equal(X, train_tokens) for X in fitted)
    assert runs.accuracy.between(0, 1).all()
    assert all(run.correct.mean() == run.accuracy and len(run.correct) == 20 for run in runs.itertuples())
    # The method against the pre-trained probe, paired over the dev sentences: a difference with its interval.
    correct = probe_evidence(runs.assign(model="minilm"))
    assert len(correct) == 3 * 20 and correct.correct.dtype == bool
    summary = probe_summary(correct).set_index("method")
    assert np.isnan(summary.loc["pre-trained", "difference"])
    proposed = summary.loc[PROPOSED]
    assert proposed.difference == pytest.approx(100 * (proposed.accuracy - summary.loc["pre-trained", "accuracy"]))
    assert proposed.low <= proposed.difference <= proposed.high


def test_sweep_and_scale_findings_follow_their_rules():
    summary = _summary("minilm", "stsb-dev", [85, 84, 83, 84, 83, 84.5], [1e-3, 0.1, 0.2, 0.3, 0.4, 0.5])
    grid = pd.DataFrame({"n_clusters": [1, 9, 9, 27, 27], "n_pc": [0, 0, 12, 0, 12],
                         "spearman": [84.0, 84.2, 84.6, 84.3, 84.9], "model": "minilm", "dataset": "stsb-dev",
                         "paper_k": 9, "paper_n_pc": 12})
    none = _comparisons("minilm", "stsb-dev", {})

    def swept(points):
        (found,) = [f for f in assess_findings(summary, none, grid=points) if f.finding.startswith("Beyond the slides")]
        return found

    assert swept(grid).status == "reproduced"  # every k > 1, n_pc > 0 point above 84
    assert "the paper's k = 9, n_pc = 12: 84.6, rank 2 of 5" in swept(grid).ours
    grid.loc[2, "spearman"] = 83.5
    assert swept(grid).status == "not reproduced" and "best k = 27, n_pc = 12 (84.9)" in swept(grid).ours
    assert swept(grid[grid.n_pc == 0]).status == "not comparable"

    cloud = np.random.default_rng(0).normal(scale=0.05, size=(2000, 32))
    scale = scale_dependence({"gaussian": cloud}, scales=(1, 3))
    assert scale.iw.iloc[0] != scale.iw.iloc[1]
    assert scale.isoscore.iloc[0] == pytest.approx(scale.isoscore.iloc[1], abs=1e-9)
    (scale_finding,) = [f for f in assess_findings(summary, none, scale=scale) if "scale" in f.finding]
    assert scale_finding.status == "passed" and scale_finding.kind == "check"  # true by definition
    same = scale_dependence({"gaussian": cloud}, scales=(1, 1))
    assert [f for f in assess_findings(summary, none, scale=same) if "scale" in f.finding][0].status == "failed"


def _summary(model, dataset, spearman, iw, isoscore=0.05):
    return pd.DataFrame({"model": model, "dataset": dataset, "method": list(METHODS), "spearman": spearman,
                         "spearman_std": [0, 0, 0, 1, 1, 1], "iw_tokens": iw, "isoscore_tokens": isoscore})


def _comparisons(model, dataset, differences):
    """A :func:`compare_methods` table: comparison name -> (difference, low, high)."""
    rows = []
    for name, (difference, low, high) in differences.items():
        method, control, higher = COMPARISONS[name]
        rows.append({"model": model, "dataset": dataset, "comparison": name, "method": method,
                     "control": control or "GMM + Mean + PCA", "higher": higher, "spearman": 60.0,
                     "control_spearman": 60.0 - difference, "difference": difference, "low": low, "high": high,
                     "borderline": low <= 0 <= high,
                     "outcome": "within noise" if low <= 0 <= high else ("higher" if difference > 0 else "lower")})
    return pd.DataFrame(rows, columns=["model", "dataset", "comparison", "method", "control", "higher", "spearman",
                                       "control_spearman", "difference", "low", "high", "borderline", "outcome"])


def test_a_paired_comparison_reproduces_a_real_gain_and_not_one_within_noise():
    generator = np.random.default_rng(0)
    gold = generator.uniform(0, 5, 800)
    pairs = {"stsb-dev": PairedSentences([], np.arange(800), np.arange(800), gold, np.array(["news"] * 800))}
    good = [gold + generator.normal(0, 1.0, 800) for _ in range(2)]  # the proposed method, two seeds
    rows = [("pre-trained", np.nan, gold + generator.normal(0, 3.0, 800)),
            ("GMM + Mean + PCA", 0, gold + generator.normal(0, 1.0, 800)),
            ("GMM + Mean + PCA", 1, gold + generator.normal(0, 1.0, 800)),
            (PROPOSED, 0, good[0]), (PROPOSED, 1, good[1])]
    per_seed = pd.DataFrame([{"model": "minilm", "dataset": "stsb-dev", "method": method, "seed": seed,
                              "spearman": 100 * pd.Series(values).corr(pd.Series(gold), method="spearman"),
                              "similarities": values} for method, seed, values in rows])
    evidence = sts_evidence(per_seed, pairs)
    assert len(evidence["sts_similarities"]) == 5 * 800 and "similarities" not in evidence["sts_per_seed"]
    comparisons = compare_methods(evidence["sts_per_seed"], evidence["sts_similarities"], evidence["sts_gold"])
    compared = comparisons.set_index("comparison")
    assert list(compared.index) == ["proposed vs pre-trained", "proposed vs best other"]  # only rows that ran
    assert compared.loc["proposed vs pre-trained", "outcome"] == "higher"  # a real gain: reproduced
    assert compared.loc["proposed vs best other", "control"] == "GMM + Mean + PCA"
    assert compared.loc["proposed vs best other", "outcome"] == "within noise"  # equal quality: borderline
    # Paired pair by pair, each method's seeds as its columns, as compare_correlations takes them.
    direct = compare_correlations(gold, np.column_stack(good), np.column_stack([values for _, _, values in rows[1:3]]))
    assert compared.loc["proposed vs best other", "difference"] == pytest.approx(100 * direct.value)
    assert compared.loc["proposed vs best other", "low"] == pytest.approx(100 * direct.interval[0])
    summary = method_summary(per_seed.assign(**{column: 0.0 for column in MEASURES if column not in per_seed}),
                             by=["model", "dataset", "method"])
    findings = assess_findings(summary, comparisons)
    status = {f.finding: f.status for f in findings}
    assert status["The proposed method raises STS Spearman over the pre-trained vectors"] == "reproduced"
    assert status["The proposed method beats the best of the other five rows"] == "borderline"


def test_findings_follow_their_rules():
    summary = pd.concat([
        _summary("bert-base-uncased", "stsb-dev", [54, 60, 62, 63, 64, 66.5], [1e-5, 0.1, 0.2, 0.3, 0.4, 0.6]),
        _summary("minilm", "stsb-dev", [85, 84, 83, 84, 83, 84.5], [1e-3, 0.1, 0.2, 0.3, 0.4, 0.5]),
        _summary("minilm", "sts12", [70, 71, 69, 72, 73, 74], [2e-2, 0.1, 0.2, 0.3, 0.4, 0.5]),
    ])
    comparisons = pd.concat([
        _comparisons("bert-base-uncased", "stsb-dev", {"proposed vs pre-trained": (12.5, 10, 15),
                                                       "proposed vs best other": (2.5, 0.5, 4.5),
                                                       "Mean + PCA vs pre-trained": (8, 6, 10)}),
        _comparisons("minilm", "stsb-dev", {"proposed vs pre-trained": (-0.5, -1.5, 0.5),
                                            "proposed vs best other": (-0.5, -1.5, 0.5),
                                            "Mean + PCA vs pre-trained": (-2, -3, -1)}),
        _comparisons("minilm", "sts12", {"proposed vs pre-trained": (4, 2, 6), "proposed vs best other": (1, 0.2, 2)}),
    ])
    sst2 = pd.DataFrame({"model": ["minilm", "minilm"], "method": ["pre-trained", PROPOSED],
                         "accuracy": [0.80, 0.81], "accuracy_std": [0.0, 0.02], "difference": [np.nan, 1.0],
                         "low": [np.nan, -0.5], "high": [np.nan, 2.5]})
    findings = assess_findings(summary, comparisons, sst2)
    assert {finding.status for finding in findings if finding.kind == "test"} <= set(STATUSES)

    def found(claim, model):
        (line,) = [f for f in findings if f.finding.startswith(claim) and f.model == model]
        return line

    def status(claim, model):
        return found(claim, model).status

    assert status("The proposed method raises STS Spearman", "bert-base-uncased") == "reproduced"
    # One line per claim and model: minilm is borderline on STS-B dev and reproduces on STS12, no status on more
    # than half of the datasets: mixed.
    raised = found("The proposed method raises STS Spearman", "minilm")
    assert raised.status == "mixed" and raised.ours.startswith("STS-B dev: ") and "; STS12: " in raised.ours
    assert status("The proposed method beats the best", "bert-base-uncased") == "reproduced"
    # The paper's claim on the datasets of its six-row table (STS-B), ours beside it on the others (STS12).
    (paper_claim,) = [f for f in findings if f.finding == BEST_OTHER and f.model == "minilm"]
    assert paper_claim.status == "borderline" and paper_claim.headline
    assert paper_claim.ours.startswith("over 1 dataset: 0 higher, 1 within noise, 0 lower;")
    (beyond,) = [f for f in findings if f.finding == BEST_OTHER + BEYOND_SIX_ROWS and f.model == "minilm"]
    assert beyond.status == "reproduced" and not beyond.headline
    assert beyond.ours.startswith("over 1 dataset: 1 higher, 0 within noise, 0 lower;")
    assert status("Mean + PCA (all-but-the-top) lowers", "bert-base-uncased") == "not reproduced"  # it raised it
    assert status("Mean + PCA (all-but-the-top) lowers", "minilm") == "reproduced"
    assert "Mean + PCA (all-but-the-top) lowers" not in {f.finding for f in findings if "STS12" in f.ours}  # six-row table
    assert status("Pre-trained token vectors are extremely anisotropic", "bert-base-uncased") == "reproduced"
    # I(W) 1e-3 on STS-B dev passes, 2e-2 on STS12 fails: the datasets disagree, which is not "borderline".
    assert status("Pre-trained token vectors are extremely anisotropic", "minilm") == "mixed"
    assert status("Spearman of BERT with the proposed method", "bert-base-uncased") == "reproduced"  # 66.5 vs 67.50
    assert status("Spearman of BERT with the proposed method", "minilm") == "not comparable"
    assert status("The authors' notebook", "minilm") == "not comparable"
    # Why not comparable: an encoder stand-in's sentence-similarity training; a decoder stand-in has none.
    decoder = assess_findings(_summary("smollm2 (start token)", "stsb-dev", [50, 51, 52, 53, 54, 60],
                                       [1e-9, 0.1, 0.2, 0.3, 0.4, 0.2]), _comparisons("smollm2", "stsb-dev", {}),
                              sst2.iloc[:0])
    (why_encoder,) = [f.rule for f in findings if f.finding.startswith("Spearman of BERT") and f.model == "minilm"]
    (why_decoder,) = [f.rule for f in decoder if f.finding.startswith("Spearman of BERT")]
    assert "sentence-similarity training" in why_encoder
    assert why_decoder == "smollm2 (start token) stands in for GPT-2; the slides give BERT's numbers only."
    # True by construction: a check, never counted as a reproduction.
    assert status("The method makes the token space isotropic", "minilm") == "passed"
    assert found("The method makes the token space isotropic", "minilm").kind == "check"
    assert status("SST-2", "minilm") == "borderline"  # +1 point, its interval over sentences and seeds straddles 0
    assert status("Fine-tuning on RTE and WiC", "-") == "not comparable"  # not run in this profile



def test_datasets_combine_by_one_declared_rule():
    """Significantly lower on two datasets and within noise on one: not reproduced, whatever the noisy one says."""
    comparisons = pd.concat([_comparisons("minilm", dataset, {"proposed vs pre-trained": differences})
                             for dataset, differences in (("sts12", (-5, -6, -4)), ("sts15", (-17, -19, -15)),
                                                          ("stsb-dev", (0.9, -0.2, 2.0)))])
    summary = pd.concat([_summary("minilm", dataset, [72, 72, 71, 70, 70, 66], [0.02] * 6)
                         for dataset in ("sts12", "sts15", "stsb-dev")])

    def raised(table):
        (line,) = [f for f in assess_findings(summary, table) if f.finding.startswith("The proposed method raises")]
        return line

    lower = raised(comparisons)
    assert lower.status == "not reproduced"
    assert "STS12: " in lower.ours and "(borderline)" in lower.ours  # each dataset's status stays in the cell
    # One dataset significantly higher, another significantly lower: the datasets disagree, "mixed".
    comparisons.loc[comparisons.dataset == "stsb-dev", ["difference", "low", "high", "borderline"]] = [3, 1, 5, False]
    assert raised(comparisons).status == "mixed"


def _runs(without, with_method, raw_cls, task="rte"):
    """Fine-tuning runs of one task: accuracies per seed without the method and with it (both evaluations)."""
    seeds = list(range(len(without)))
    return pd.DataFrame({"task": task, "model": "minilm", "seed": seeds * 2,
                         "method": ["without"] * len(seeds) + ["with the method"] * len(seeds),
                         "accuracy": [*without, *with_method],
                         "accuracy_raw_cls": [*without, *raw_cls]})


def _cls(ratio_pretrained=0.8, ratio_tuned=(0.10, 0.12, 0.11), iw=((1e-5, 2e-5, 1.5e-5), (1e-5, 1.2e-5, 1.4e-5)),
         isoscore=((0.20, 0.22, 0.21), (0.20, 0.21, 0.22)), task="rte", last=6):
    """The last layer's [CLS] geometry: pre-trained, then per seed fine-tuned without and with the method."""
    rows = [{"model": "pre-trained", "seed": np.nan, "processed": False, "mean_ratio": ratio_pretrained, "i_w": 1e-6,
             "isoscore": 0.1}]
    for seed in range(3):
        rows += [{"model": "fine-tuned", "seed": seed, "processed": False, "mean_ratio": ratio_tuned[seed],
                  "i_w": iw[0][seed], "isoscore": isoscore[0][seed]},
                 {"model": "fine-tuned with the method", "seed": seed, "processed": False, "mean_ratio": 0.5,
                  "i_w": iw[1][seed], "isoscore": isoscore[1][seed]},
                 {"model": "fine-tuned with the method", "seed": seed, "processed": True, "mean_ratio": 0.0,
                  "i_w": 0.9, "isoscore": 0.2}]
    return pd.DataFrame(rows).assign(task=task, layer=last)


def test_finetuning_claims_are_judged_on_evaluations_that_learned():
    summary = _summary("minilm", "stsb-dev", [85, 84, 83, 84, 83, 84.5], [1e-3, 0.1, 0.2, 0.3, 0.4, 0.5])
    none = _comparisons("minilm", "stsb-dev", {})
    majority = {"rte": 0.527}

    def judged(runs, cls=None):
        return {f.finding: f for f in assess_findings(summary, none, finetuned=runs, cls=_cls() if cls is None else cls,
                                                      majority=majority)}

    accuracy = "Fine-tuned RTE accuracy: the method does not help"
    # Both evaluations learned and neither is above the runs without the method: reproduced.
    same = judged(_runs([0.60, 0.62, 0.64], [0.61, 0.59, 0.60], [0.60, 0.61, 0.62]))
    assert same[accuracy].status == "reproduced"
    assert same["RTE: after fine-tuning, [CLS] vectors are already zero-mean"].status == "reproduced"
    assert same["RTE: the method raises the isotropy I(W) of [CLS]"].status == "passed"  # a check: by construction
    # The method's dev batches collapse to chance (the paper's evaluation) while raw [CLS] beats the runs
    # without it on every seed: a collapse is not "does not help", and raw [CLS] fails the same rule.
    collapsed = judged(_runs([0.56, 0.56, 0.57], [0.47, 0.50, 0.49], [0.62, 0.60, 0.61]))[accuracy]
    assert collapsed.status == "not reproduced"
    assert "(at chance: not judged)" in collapsed.ours and "on raw [CLS]" in collapsed.ours
    # Raw [CLS] within the seeds' spread of the runs without the method: the collapse is not judged, raw passes.
    assert judged(_runs([0.56, 0.56, 0.57], [0.47, 0.50, 0.49], [0.55, 0.555, 0.56]))[accuracy].status == "reproduced"
    # Raw [CLS] above on two seeds, below on one: its interval over seeds crosses the bound.
    assert judged(_runs([0.56, 0.56, 0.57], [0.47, 0.50, 0.49], [0.64, 0.53, 0.60]))[accuracy].status == "borderline"
    # Every evaluation at chance: not comparable, never reproduced.
    at_chance = judged(_runs([0.60, 0.62, 0.64], [0.47, 0.50, 0.49], [0.50, 0.52, 0.49]))[accuracy]
    assert at_chance.status == "not comparable" and "a collapse" in at_chance.rule
    # The runs without the method at chance: training did not learn, none of the task's claims is judged.
    not_learned = assess_findings(summary, none, finetuned=_runs([0.56, 0.48, 0.55], [0.52, 0.51, 0.48],
                                                                 [0.52, 0.51, 0.48]), cls=_cls(), majority=majority)
    (line,) = [f for f in not_learned if "RTE" in f.finding]
    assert line.status == "not comparable" and "training did not learn" in line.rule


def test_cls_claims_are_judged_against_their_controls():
    summary = _summary("minilm", "stsb-dev", [85, 84, 83, 84, 83, 84.5], [1e-3, 0.1, 0.2, 0.3, 0.4, 0.5])
    none = _comparisons("minilm", "stsb-dev", {})
    runs = _runs([0.60, 0.62, 0.64], [0.61, 0.59, 0.60], [0.60, 0.61, 0.62])

    def judged(cls):
        return {f.finding: f for f in assess_findings(summary, none, finetuned=runs, cls=cls, majority={"rte": 0.527})}

    zero_mean, not_raised = ("RTE: after fine-tuning, [CLS] vectors are already zero-mean",
                             "RTE: fine-tuning with the method does not raise the isotropy of [CLS]")
    assert judged(_cls(ratio_tuned=(0.5, 0.6, 0.55)))[zero_mean].status == "not reproduced"
    # The pre-trained model's [CLS] vectors are zero-mean too: fine-tuning did not make them so.
    control_passes = judged(_cls(ratio_pretrained=0.1))[zero_mean]
    assert control_passes.status == "indistinguishable" and control_passes.control_status == "passes"
    # Fine-tuning with the method leaves I(W) and IsoScore of the raw [CLS] where they are without it: reproduced.
    assert judged(_cls())[not_raised].status == "reproduced" and judged(_cls())[not_raised].kind == "test"
    # I(W) raised on every seed while IsoScore falls: the verdict depends on the vectors' scale.
    scaled = judged(_cls(iw=((1e-5, 2e-5, 1.5e-5), (1e-3, 2e-3, 1.5e-3)),
                         isoscore=((0.20, 0.22, 0.21), (0.002, 0.002, 0.002))))[not_raised]
    assert scaled.status == "not reproduced" and "depends on scale" in scaled.marks


def test_the_batch_method_centres_each_cluster_nulls_its_directions_and_passes_gradients():
    import torch

    points = torch.tensor(shifted_mixture(n=20, dim=16), dtype=torch.float64, requires_grad=True)  # 40 vectors
    processed = isotropise_batch(points, BatchMethod(n_clusters=2, n_pc=3), random_state=0)
    fitted = finetuning.ClusterIsotropy(2, 3, small_clusters="merge", n_init=1, random_state=0).fit(points.detach().numpy())
    assert len(np.unique(fitted.labels_)) == 2
    out = processed.detach().numpy()
    for cluster, directions in fitted.directions_.items():
        members = out[fitted.labels_ == cluster]
        np.testing.assert_allclose(members.mean(axis=0), 0, atol=1e-10)  # each cluster's mean removed
        np.testing.assert_allclose(members @ directions, 0, atol=1e-10)  # and its top directions nulled
    (processed ** 2).sum().backward()
    assert points.grad is not None and torch.isfinite(points.grad).all() and points.grad.abs().sum() > 0
    short = isotropise_batch(points[:5].detach(), BatchMethod(n_clusters=2, n_pc=4), random_state=0)  # a last batch
    np.testing.assert_allclose(short.numpy().mean(axis=0), 0, atol=1e-10)  # one cluster, at most 4 directions


def layered_tokens(shifted_layers, n_layers=6, n_sentences=60, per_sentence=5, dim=8, seed=0):
    """Token vectors of ``n_layers`` layers: the input layer mildly anisotropic (one direction stretched x2),
    ``shifted_layers`` strongly (x6 and a common shift), the other layers isotropic."""
    generator = np.random.default_rng(seed)
    tokens = pd.DataFrame({"sentence_id": np.repeat(np.arange(n_sentences), per_sentence + 1),
                           "is_special": np.tile([True] + [False] * per_sentence, n_sentences)})

    def cloud(stretch, shift):
        return generator.normal(size=(len(tokens), dim)) * np.r_[stretch, np.ones(dim - 1)] + shift

    arrays = {layer: cloud(2.0, 0.0) if layer == 0 else cloud(6.0, 3.0) if layer in shifted_layers else cloud(1.0, 0.0)
              for layer in range(n_layers)}
    return SimpleNamespace(tokens=tokens, layers=tuple(range(n_layers)), layer=arrays.__getitem__)


def test_hidden_layers_against_the_input_layer():
    table = layer_isotropy(layered_tokens({1, 2, 3, 4}), n_halves=3)
    assert table.groupby("layer").size().tolist() == [4] * 6  # all sentences and three halves per layer
    assert (table[table["sample"] == "all"].n_tokens == 300).all()  # special tokens left out
    assert (table[table["sample"] != "all"].n_tokens == 150).all()
    (finding,) = claims._layer_findings(table.assign(model="minilm"))
    # Four of five hidden layers shifted: 80% of the layers, short of "almost all" (90%), in I(W) and IsoScore.
    assert finding.status == "not reproduced" and "depends on scale" not in finding.marks
    assert "in 4 of 5 hidden layers (80%" in finding.ours and "scale-free, IsoScore below" in finding.ours
    # A share, not a count: nine of ten hidden layers is "almost all", as five of five is.
    for shifted, n_layers in (({1, 2, 3, 4, 5}, 6), (set(range(1, 10)), 11)):
        tokens = layered_tokens(shifted, n_layers=n_layers)
        (finding,) = claims._layer_findings(layer_isotropy(tokens, n_halves=3).assign(model="minilm"))
        assert finding.status == "reproduced", (shifted, n_layers)


def test_finetuning_texts_and_labels():
    first, second, labels = finetune_texts("rte", "val")
    raw = datasets.load_pairs("rte", split="val")
    assert len(first) == len(second) == len(labels) == 277
    assert labels.sum() == (raw.label == "not_entailment").sum()
    first, second, labels = finetune_texts("wic", "dev")
    assert first[0].startswith(datasets.load_pairs("wic", split="dev").word[0] + ": ") and set(labels) == {0, 1}
    with pytest.raises(ValueError, match="Unknown fine-tuning task"):
        finetune_texts("mnli", "train")


def test_a_short_finetuning_run_and_the_cls_geometry_it_reports(cache_dir, monkeypatch):
    # finetune_run: finetune, then cls_geometry of the encoder it returns; with resume, stored and read back.
    options = dict(method=BatchMethod(), epochs=1, train_size=32, seed=0, geometry=True, resume=True)
    accuracy, table = finetuning.finetune_run("rte", **options)
    # Scored with the method on each dev batch as in training, and on raw [CLS] (the method in training only).
    assert set(accuracy) == {"accuracy", "accuracy_raw_cls"} and all(0 <= value <= 1 for value in accuracy.values())
    assert table.layer.tolist() == [1, 2, 3, 4, 5, 6, 6] and table.processed.tolist() == [False] * 6 + [True]
    assert table.mean_ratio.between(0, 1).all() and table.i_w.between(0, 1).all()
    assert table.mean_ratio.iloc[-1] < 1e-6  # per-batch centring leaves the processed vectors zero-mean

    def fail(*args, **kwargs):
        raise AssertionError("a stored fine-tuning run must not be trained again")

    monkeypatch.setattr(finetuning, "finetune", fail)
    again_accuracy, again_table = finetuning.finetune_run("rte", **options)
    assert again_accuracy == accuracy
    pd.testing.assert_frame_equal(again_table, table)


def test_the_learning_rate_warms_up_then_decays_to_zero():
    shares = [learning_rate_share(step, n_steps=10, n_warmup=3) for step in range(11)]
    np.testing.assert_allclose(shares[:4], [0.25, 0.5, 0.75, 1.0])
    assert np.all(np.diff(shares[3:]) < 0) and shares[-1] == 0
    assert learning_rate_share(0, n_steps=10, n_warmup=0) == 1  # the control: no warm-up starts at the full rate


def test_the_learning_rate_is_chosen_on_held_out_training_pairs(monkeypatch):
    held_out_scores = {2e-5: 0.55, 5e-5: 0.61, 1e-4: 0.61}
    calls = []

    def fake_run(task, model, **options):
        calls.append(options)
        return {"accuracy": held_out_scores[options["lr"]]}, None

    monkeypatch.setattr(finetuning, "finetune_run", fake_run)
    lr, scores = select_learning_rate("rte", protocol=FinetuneProtocol(learning_rates=(1e-4, 2e-5, 5e-5)))
    assert lr == 5e-5  # the best held-out score; the tie with 1e-4 goes to the smaller rate
    assert scores.lr.tolist() == [2e-5, 5e-5, 1e-4] and scores.chosen.tolist() == [False, True, False]
    assert all(call["held_out"] == 0.2 and call.get("method") is None for call in calls)  # runs without the method


def test_a_held_out_run_never_reads_dev(monkeypatch):
    texts = finetuning.finetune_texts

    def train_only(task, split):
        assert split == "train", "the held-out run read the dev split"
        return texts(task, split)

    monkeypatch.setattr(finetuning, "finetune_texts", train_only)
    accuracy, _ = finetune("rte", epochs=1, train_size=16, held_out=0.02, warmup=0.5, seed=0)
    assert 0 <= accuracy["accuracy"] <= 1
    with pytest.raises(AssertionError, match="read the dev split"):  # the control: a run scored on dev
        finetune("rte", epochs=1, train_size=16, seed=0)
    with pytest.raises(ValueError, match="shares in"):
        finetune("rte", held_out=1.0)


def test_a_resumed_run_reuses_the_stored_rows(cache_dir, monkeypatch):
    X = shifted_mixture(n=100)
    ids = np.repeat(np.arange(50), 4)
    pairs = PairedSentences([str(i) for i in range(50)], np.arange(0, 50, 2), np.arange(1, 50, 2),
                            np.random.default_rng(1).uniform(0, 5, 25), np.array(["news"] * 25))
    options = dict(seeds=[0, 1], methods=["Mean", PROPOSED], resume=True)
    first = evaluate_methods(X, ids, pairs, Settings(2, 1, 1), **options)
    grid = sweep(X, ids, pairs, [1, 2], [1], seeds=[0], resume=True)

    def fail(*args, **kwargs):
        raise AssertionError("a stored row must not be computed again")

    monkeypatch.setattr(compute, "transform_tokens", fail)
    again = evaluate_methods(X, ids, pairs, Settings(2, 1, 1), **options)
    pd.testing.assert_frame_equal(again.drop(columns="similarities"), first.drop(columns="similarities"))
    np.testing.assert_array_equal(np.stack(again.similarities), np.stack(first.similarities))
    pd.testing.assert_frame_equal(sweep(X, ids, pairs, [1, 2], [1], seeds=[0], resume=True), grid)
    with pytest.raises(AssertionError, match="must not be computed"):  # another seed is not stored
        evaluate_methods(X, ids, pairs, Settings(2, 1, 1), **{**options, "seeds": [2]})


def test_stored_steps_are_keyed_by_the_computation_alone():
    from isolib.computation import computation_modules

    for module in (compute, finetuning):
        keyed = set(computation_modules([module]))
        assert module.__name__ in keyed and "isolib.transforms" in keyed
        # A claim, a rule, a threshold or a figure can change without recomputing a stored row.
        assert not keyed & {claims.__name__, "isolib.studies.rajaee_cluster_isotropy.figures", "isolib.findings",
                            "isolib.plotting"}
    assert finetuning.__name__ not in computation_modules([compute])  # nor the fine-tuning the STS rows


def _small_evidence() -> dict:
    """Every evidence item of a run, on synthetic vectors: what the notebook stores, in miniature."""
    X = shifted_mixture(n=100)
    ids = np.repeat(np.arange(50), 4)
    paired = PairedSentences([str(i) for i in range(50)], np.arange(0, 50, 2), np.arange(1, 50, 2),
                             np.random.default_rng(1).uniform(0, 5, 25), np.array(["news"] * 20 + ["forum"] * 5))
    rows = evaluate_methods(X, ids, paired, Settings(2, 1, 1), seeds=[0, 1]).assign(model="minilm", dataset="stsb-dev")
    evidence = sts_evidence(rows, {"stsb-dev": paired})
    evidence["sweep_per_seed"] = sweep(X, ids, paired, [1, 2], [0, 1], seeds=[0, 1]).assign(
        model="minilm", dataset="stsb-dev", paper_k=2, paper_n_pc=1)
    evidence["iw_scale"] = scale_dependence({"gaussian": np.random.default_rng(0).normal(size=(200, 8))})
    evidence["layer_isotropy"] = layer_isotropy(layered_tokens({1, 2, 3, 4})).assign(model="minilm")
    generator = np.random.default_rng(0)
    labels, dev_labels = np.repeat([0, 1], 40), np.repeat([0, 1], 10)
    runs = probe_with_method((generator.normal(size=(240, 6)) + np.repeat(labels, 3)[:, None], np.repeat(np.arange(80), 3),
                              labels), (generator.normal(size=(60, 6)) + np.repeat(dev_labels, 3)[:, None],
                                        np.repeat(np.arange(20), 3), dev_labels), Settings(2, 1, 0), seeds=[0, 1])
    evidence["sst2_correct"] = probe_evidence(runs.assign(model="minilm"))
    evidence["finetune"] = _runs([0.70, 0.72, 0.71], [0.69, 0.70, 0.70], [0.71, 0.70, 0.70]).assign(lr=5e-5)
    evidence["cls_geometry"] = _cls()
    evidence["majority"] = {"rte": 0.527}
    evidence["run"] = {"profile": "quick", "models": ["minilm"], "datasets": ["stsb-dev"], "seeds": [0, 1], "n_init": 1,
                       "decoder_views": ["start_token"], "random_state": 0, "sst2_train_sentences": 80,
                       "finetune_model": "minilm", "finetune_tasks": ["rte"], "finetune_epochs": 3,
                       "finetune_warmup": 0.1, "finetune_learning_rates": [2e-5, 5e-5], "finetune_held_out": 0.2,
                       "finetune_seeds": [0, 1, 2], "finetune_clusters": 2, "finetune_n_pc": 4, "wall_minutes": 1.25,
                       "peak_memory_gib": 0.5}
    return evidence


def test_the_stored_evidence_is_judged_as_the_computed_one(tmp_path):
    from isolib.evidence import judge, load_evidence, save_evidence
    from isolib.findings import write_pages

    evidence = _small_evidence()
    # At the granularity the intervals resample: every pair's cosine per row, every dev sentence per probe.
    assert len(evidence["sts_similarities"]) == len(evidence["sts_per_seed"]) * 25
    assert len(evidence["sst2_correct"]) == 3 * 20 and len(evidence["sweep_per_seed"]) == 4 * 2
    in_memory = claims.record(evidence)
    write_pages(in_memory, tmp_path / "memory")
    save_evidence(tmp_path / "stored", evidence)
    stored = judge(tmp_path / "stored", claims.record)
    assert (tmp_path / "stored" / "results.json").read_text() == (tmp_path / "memory" / "results.json").read_text()
    assert set(load_evidence(tmp_path / "stored")) == set(evidence)
    statuses = {f.finding: f.status for f in stored.findings}
    assert statuses["Fine-tuned RTE accuracy: the method does not help"] == "reproduced"
    assert [f.sampling_unit for f in stored.findings if f.finding.startswith("The proposed method raises")] == [
        "sentence pairs crossed with clustering seeds"]
    assert stored.notes[0].startswith("Profile `quick`: models minilm; datasets STS-B dev; seeds 0, 1 (1 initialisation")
    assert "(chosen: rte 5e-05)" in stored.notes[0] and "1.2 min" in stored.notes[-1]
    # minilm stands in for BERT: the page says why it may differ, and its results are marked as a stand-in's.
    assert stored.notes[1] == claims.STAND_IN_NOTE
    assert {f.stand_in for f in stored.findings if f.model == "minilm"} == {"minilm"}
    # Without the fine-tuning evidence (the quick profile), its claims are not comparable.
    quick = claims.record({name: value for name, value in evidence.items()
                           if name not in ("finetune", "cls_geometry", "majority")})
    assert [f.status for f in quick.findings if f.finding.startswith("Fine-tuning on RTE and WiC")] == ["not comparable"]
