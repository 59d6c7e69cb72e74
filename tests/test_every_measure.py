"""Notebook 05: every measure on constructed spaces with a known answer, the agreement and sensitivity tables, the findings."""

import ast
import dataclasses
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from isolib import parameters
from isolib.evidence import judge, save_evidence
from isolib.findings import read_record, results_page
from isolib.metrics import average_cosine, effective_rank, explained_variance, isoscore, partition_isotropy
from isolib.studies.every_measure import claims, compute, guide, sampling, settings, tables
from isolib.transforms import standardise

OPTIONS = compute.MeasureOptions(baseline_samples=500, lid_k=20, lid_queries=300, k_max=4, n_init=1,
                            kmeans_fit_size=None, silhouette_sample=None)
COSINE_MEASURES = ("average_cosine", "anisotropy_baseline", "s_inter")


def gaussian(n=1500, dim=12, seed=0):
    return np.random.default_rng(seed).standard_normal((n, dim))


def sample_of(points, seed=0, n_types=300, n_contexts=30):
    generator = np.random.default_rng(seed)
    n = len(points)
    return sampling.Sample(np.asarray(points, dtype=float), generator.integers(0, n_types, n),
                     np.arange(n) % n_contexts, np.arange(n) % 50)


# --------------------------------------------------------------------------- constructed spaces


def test_an_isotropic_gaussian_sits_at_the_isotropic_end_of_every_measure():
    values = compute.every_measure(sample_of(gaussian()), OPTIONS)
    for name in COSINE_MEASURES + ("s_intra",):
        assert abs(values[name]) < 0.03, name
    assert values["isoscore"] > 0.95
    assert values["effective_rank"] > 0.9
    assert values["iw"] > 0.3
    assert values["top_dimension_share"] < 2 / 12 and values["top_direction_share"] < 2 / 12
    assert values["lid"] > 0.6 * 12
    assert values["silhouette"] < 0.15
    scaled = tables.isotropy_scale(pd.DataFrame([values]))
    assert (scaled.iloc[0] > 0.75).all(), scaled.iloc[0][scaled.iloc[0] <= 0.75]


def test_one_rogue_dimension_moves_the_cosine_measures_and_not_the_standardised_ones():
    X = gaussian()
    rogue = X.copy()
    rogue[:, 0] = 30 * rogue[:, 0] + 100  # a huge mean and a huge variance on one coordinate
    plain, moved = (compute.every_measure(sample_of(points), OPTIONS) for points in (X, rogue))
    for name in COSINE_MEASURES:
        assert moved[name] > 0.8 > 0.05 > abs(plain[name]), name
    assert moved["top_dimension_share"] > 0.8
    # Standardising each coordinate undoes an affine change of one of them exactly: every measure of the
    # standardised space is the same with and without the rogue dimension.
    standardised = [compute.every_measure(sample_of(standardise(points)), OPTIONS) for points in (X, rogue)]
    for name in settings.MEASURE_NAMES:
        assert standardised[1][name] == pytest.approx(standardised[0][name], abs=1e-9), name
    # The rogue coordinate carries the average cosine; a rotation, which keeps every cosine, spreads it.
    cells, resamples = compute.rogue_shares([({"space": "rogue", "layer": 0}, sample_of(rogue))], n_dimensions=1)
    (shares,) = tables.rogue_table(cells, resamples).itertuples()
    assert shares.top_share > 0.99 and shares.rotated_share < 0.5 and shares.rogue == "0"
    assert shares.average_cosine == pytest.approx(average_cosine(rogue))


def test_a_uniformly_scaled_copy_changes_i_w_and_nothing_else():
    X = gaussian() * np.geomspace(3, 0.5, 12) + 1.0  # anisotropic and off the origin
    before, after = (compute.every_measure(sample_of(points), OPTIONS) for points in (X, 3 * X))
    assert after["log10_iw"] < before["log10_iw"] - 1  # more than ten times smaller
    for name in settings.MEASURE_NAMES:
        if name != "iw":
            assert after[name] == pytest.approx(before[name], rel=1e-6, abs=1e-9), name


def test_two_clusters_give_a_high_silhouette_and_the_isoscore_of_their_closed_form():
    dim, separation, n = 10, 16.0, 1000
    generator = np.random.default_rng(0)
    sides = np.repeat([-1.0, 1.0], n)
    X = generator.standard_normal((2 * n, dim))
    X[:, 0] += sides * separation / 2
    values = compute.every_measure(sample_of(X), OPTIONS)
    assert values["silhouette"] > 0.6 and values["best_k"] == 2
    # Population covariance: 1 + (separation / 2)^2 along the axis joining the clusters, 1 along the others.
    closed_form = tables.isoscore_of_variances([1 + (separation / 2) ** 2] + [1.0] * (dim - 1))
    assert values["isoscore"] == pytest.approx(closed_form, abs=0.01)
    assert closed_form < 0.1  # clustered along one axis: IsoScore calls it anisotropic, the silhouette clustered


# --------------------------------------------------------------------------- the shared decomposition


@pytest.mark.parametrize("shape", [(400, 30), (20, 40)])
def test_the_shared_spectrum_gives_what_each_measure_gives_alone(shape):
    X = np.random.default_rng(1).standard_normal(shape) * np.geomspace(5, 0.2, shape[1]) + 0.3
    spectrum = compute.Spectrum.of(X)
    assert spectrum.isoscore() == pytest.approx(isoscore(X), abs=1e-10)
    # With fewer points than dimensions the null directions hold rounding noise (1e-8 of a singular value).
    assert spectrum.effective_rank() == pytest.approx(effective_rank(X, centered=True) / shape[1], abs=1e-7)
    assert spectrum.top_direction_share() == pytest.approx(explained_variance(X)[0], abs=1e-12)
    assert spectrum.top_dimension_share() == pytest.approx(X.var(axis=0).max() / X.var(axis=0).sum())
    assert spectrum.log10_partition_isotropy(X) == pytest.approx(math.log10(partition_isotropy(X)), abs=1e-9)
    assert compute.library_agreement(sampling.Sample(X)) < 1e-6


def test_log10_i_w_has_no_underflow_where_i_w_does():
    X = np.random.default_rng(2).standard_normal((300, 8)) * 2000 + 500
    assert partition_isotropy(X) == 0.0
    assert -1e6 < compute.Spectrum.of(X).log10_partition_isotropy(X) < -300


def test_i_w_is_undefined_where_the_points_do_not_fix_its_directions():
    from isolib.transforms import whiten

    X = np.random.default_rng(3).standard_normal((500, 12)) * np.geomspace(3, 0.5, 12) + 0.2
    assert compute.Spectrum.of(X).directions_determined()
    # Whitened points: every direction has the same variance, so every basis is an eigenbasis.
    white = whiten(X)
    assert not compute.Spectrum.of(white).directions_determined()
    assert np.isnan(compute.every_measure(sampling.Sample(white), compute.MeasureOptions(lid_k=10, k_max=3))["iw"])
    # Directions without variance do not count (each point projects to 0 on them) ...
    padded = np.hstack([white, np.zeros((500, 3))])
    assert not compute.Spectrum.of(padded).directions_determined()
    # ... and the control: the same points, each coordinate stretched by 1% more than the last, fix them again.
    stretched = white * 1.01 ** np.arange(12)
    assert compute.Spectrum.of(stretched).directions_determined()
    assert np.isfinite(compute.every_measure(sampling.Sample(stretched), compute.MeasureOptions(lid_k=10, k_max=3))[
        "iw"])


def test_cosine_contributions_sum_to_the_average_cosine():
    X = gaussian(200, 6) + np.array([3.0, 0, 0, 0, 0, 0])
    contributions = compute.cosine_contributions(X)
    assert contributions.sum() == pytest.approx(average_cosine(X))
    assert np.argmax(contributions) == 0
    with pytest.raises(ValueError, match="zero vector"):
        compute.cosine_contributions(np.zeros((3, 2)))


# --------------------------------------------------------------------------- agreement and sensitivity


def test_kendall_matrix_is_scipy_s_tau_b_with_ties_and_pairwise_missing_values():
    generator = np.random.default_rng(3)
    values = generator.integers(0, 5, size=(25, 3)).astype(float)  # many ties
    values[[2, 7], 1] = np.nan
    tau = tables.kendall_matrix(values)
    for i in range(3):
        for j in range(3):
            both = ~np.isnan(values[:, i]) & ~np.isnan(values[:, j])
            expected = stats.kendalltau(values[both, i], values[both, j]).statistic
            assert tau[i, j] == pytest.approx(expected), (i, j)


def replicate_table(n_cells=6, n_replicates=2, seed=0):
    """A by_replicate table whose cells get more isotropic with the layer, by every measure."""
    generator = np.random.default_rng(seed)
    rows = []
    for layer in range(n_cells):
        for replicate in range(n_replicates):
            level = layer + 0.01 * generator.standard_normal()
            row = {"space": "toy", "model": "toy", "view": "keep", "layer": layer, "replicate": replicate, "dim": 10}
            for measure in settings.MEASURES:
                row[measure.name] = 0.05 * level if measure.isotropic == "high" else 1 - 0.1 * level
            row["lid"] = level + 1
            row["log10_iw"] = -10 + level
            rows.append(row)
    return pd.DataFrame(rows)


def test_oriented_measures_that_all_rise_with_isotropy_agree_perfectly():
    table = replicate_table()
    agreement = tables.agreement_table(table, n_resamples=50)
    assert np.allclose(agreement.tau, 1)
    assert (agreement.n_cells == 6).all()
    flipped = table.assign(isoscore=-table.isoscore)
    tau = tables.agreement_table(flipped, n_resamples=20).set_index(["measure", "other"]).tau
    assert tau["isoscore", "average_cosine"] == pytest.approx(-1)


def test_sensitivity_reads_directions_on_the_isotropy_scale():
    before = replicate_table(n_replicates=1)
    centred = before.assign(change="centre", average_cosine=0.0)  # towards isotropy for the cosine
    scaled = before.assign(change="scale", log10_iw=before.log10_iw - 30)  # I(W) far smaller
    sensitivity = tables.sensitivity_table(before, pd.concat([centred, scaled]), n_resamples=200).set_index(
        ["change", "measure"])
    assert sensitivity.loc[("centre", "average_cosine"), "direction"] == "more isotropic"
    assert sensitivity.loc[("centre", "isoscore"), "direction"] == "unchanged"
    assert sensitivity.loc[("scale", "iw"), "direction"] == "less isotropic"
    assert sensitivity.loc[("scale", "iw"), "raw_median"] == pytest.approx(-30)
    assert sensitivity.loc[("whiten", "isoscore"), "direction"] == "n/a"
    assert list(sensitivity.index.get_level_values("change").unique()) == list(settings.CHANGES)


def test_a_cells_change_pairs_each_sample_with_itself_and_is_their_mean():
    before = replicate_table(n_replicates=2)
    # Sample 0 of every cell loses 10 in log10 I(W), sample 1 loses 30: the cell's change is -20.
    scaled = before.assign(change="scale", log10_iw=before.log10_iw - np.where(before.replicate == 0, 10, 30))
    row = tables.sensitivity_table(before, scaled, n_resamples=50).set_index(["change", "measure"]).loc[("scale", "iw")]
    assert row.n_cells == 6
    assert (row.raw_low, row.raw_median, row.raw_high) == pytest.approx((-20, -20, -20))
    # The control: sample 1 alone changed by 5 less moves the cell's change to (-10 - 25) / 2; read from sample 0
    # alone (as before every sample was changed) it would stay -10.
    crossed = scaled.assign(log10_iw=scaled.log10_iw + np.where(scaled.replicate == 1, 5, 0))
    assert tables.sensitivity_table(before, crossed, n_resamples=50).set_index(["change", "measure"]).loc[
        ("scale", "iw"), "raw_median"] == pytest.approx(-17.5)


def test_a_vector_a_change_sends_to_the_origin_is_left_out():
    X = np.vstack([np.tile([5.0, 5.0, 5.0, 5.0], (20, 1)), gaussian(200, 4)])  # a repeated vector, far from the rest
    change_settings = compute.ChangeSettings(abtt_components=1, cluster=(2, 1), small_n=50)
    changes = dict(compute.changed_samples(sample_of(X), change_settings))
    assert len(changes["cluster"].points) == 200  # its cluster's mean is itself: the 20 copies become zero
    assert (np.linalg.norm(changes["cluster"].points, axis=1) > 0).all()
    assert len(changes["centre"].points) == 220


def test_every_change_applies_in_order_and_the_first_position_only_where_it_is_analysed():
    X = gaussian(400, 10) + 2.0
    sample = sample_of(X)
    changes = dict(compute.changed_samples(sample, compute.ChangeSettings(abtt_components=3, cluster=(4, 2),
                                                                          small_n=100)))
    assert list(changes) == list(settings.CHANGES)
    assert changes["drop_first_position"] is not None and len(changes["drop_first_position"].points) == 392
    np.testing.assert_allclose(changes["centre"].points.mean(axis=0), 0, atol=1e-12)
    assert changes["drop_top_3"].points.shape == (400, 7)
    assert len(changes["fewer_points"].points) == 100 and len(changes["fewer_points"].types) == 100
    np.testing.assert_allclose(np.linalg.norm(changes["unit_length"].points, axis=1), 1)
    far = np.linalg.norm(changes["outlier"].points[0] - X.mean(axis=0))
    assert far == pytest.approx(20 * np.median(np.linalg.norm(X - X.mean(axis=0), axis=1)))
    without_sink = sampling.Sample(X, positions=np.arange(400) % 50 + 1)
    assert dict(compute.changed_samples(without_sink))["drop_first_position"] is None


# --------------------------------------------------------------------------- tokens


def token_table(start_token: bool):
    """Two windows of a decoder's token table, with a start token or not."""
    words = [["the", "cat", ",", "<unk>", "sat"], ["a", "dog", "ran"]]
    rows = []
    for sentence, pieces in enumerate(words):
        if start_token:
            rows.append((sentence, 0, "<s>", -1, "", True))
        for word_id, piece in enumerate(pieces):
            rows.append((sentence, len([r for r in rows if r[0] == sentence]), piece, word_id, piece, False))
    return pd.DataFrame(rows, columns=["sentence_id", "position", "token", "word_id", "word", "is_special"])


def test_analysed_tokens_and_the_same_tokens_in_every_view():
    kept, started = sampling.analysed_tokens(token_table(False)), sampling.analysed_tokens(token_table(True))
    assert list(kept.type) == ["the", "cat", "sat", "a", "dog", "ran"]  # no symbol, no placeholder
    assert list(kept.position[kept.content_index == 0]) == [0, 0]
    assert list(started.position[started.content_index == 0]) == [1, 1]
    drawn = sampling.draw_token_samples({"keep": kept, "start": started}, 4, 2, random_state=0)
    for first, second in zip(drawn["keep"], drawn["start"]):
        assert list(first.type) == list(second.type) and len(first) == 4
    assert not drawn["keep"][0].equals(drawn["keep"][1]) or len(kept) == 4


def test_the_static_sample_holds_the_words_of_the_same_windows():
    tokens = token_table(False)
    tokens.loc[1, "word"] = "Cat"
    drawn = sampling.static_sample(tokens, ["dog", "cat", "the", "zebra"], 10, 1)[0]
    assert sorted(drawn.type) == ["cat", "dog", "the"]  # lower-cased; words missing from the vocabulary left out
    assert dict(zip(drawn.type, drawn.row)) == {"dog": 0, "cat": 1, "the": 2}


# --------------------------------------------------------------------------- findings, guide, parameters


@pytest.fixture(scope="module")
def small_run():
    """Every measure on a few constructed cells: a decoder in two views (one with a rogue coordinate), a static space and
    an encoder of two layers."""
    generator = np.random.default_rng(5)
    cells = []
    for label, layers in (("dec", range(4)), ("dec (start token)", range(4)), ("static", [0]), ("enc", range(2))):
        for layer in layers:
            X = generator.standard_normal((300, 8)) * np.geomspace(2, 0.5, 8) + 1.5  # off the origin
            if label == "dec":
                X[:, 0] += 5 + layer  # a rogue coordinate, growing with depth
            samples = [sample_of(X, seed=r, n_types=80, n_contexts=10) for r in range(2)]
            cells.append(({"space": label, "model": label.split(" ")[0], "view": "keep", "layer": layer}, samples))
    options = compute.MeasureOptions(baseline_samples=200, lid_k=10, lid_queries=100, k_max=3, kmeans_fit_size=None,
                                     silhouette_sample=None)
    by_replicate, changed = compute.measure_spaces(
        cells, options, compute.ChangeSettings(abtt_components=2, cluster=(3, 2), small_n=100), n_replicates=2)
    shares, resamples = compute.rogue_shares([(cell, samples[0]) for cell, samples in cells], n_resamples=50)
    return by_replicate, changed, tables.rogue_table(shares, resamples), (shares, resamples)


def test_measure_spaces_gives_one_row_per_cell_and_replicate_and_per_applicable_change(small_run):
    by_replicate, changed, *_ = small_run
    assert len(by_replicate) == 11 * 2
    assert set(settings.MEASURE_NAMES) <= set(by_replicate.columns)
    # Every sample is changed (positions hold 0: the first position applies everywhere here).
    assert len(changed) == 11 * 2 * len(settings.CHANGES)
    assert changed.groupby(["space", "layer", "change"]).replicate.nunique().eq(2).all()


def test_cells_measured_in_worker_processes_give_the_same_tables():
    cells = [({"space": "toy", "model": "toy", "view": "keep", "layer": layer},
              [sample_of(gaussian(200, 6, seed=layer) + layer, seed=r) for r in range(2)]) for layer in range(2)]
    options = compute.MeasureOptions(baseline_samples=100, lid_k=10, lid_queries=50, k_max=3, kmeans_fit_size=None,
                                silhouette_sample=None)
    settings = compute.ChangeSettings(abtt_components=2, cluster=(3, 2), small_n=50)
    here = compute.measure_spaces(cells, options, settings, n_replicates=2)
    workers = compute.measure_spaces(iter(cells), options, settings, n_replicates=2, n_jobs=2)
    for ours, theirs in zip(here, workers):
        pd.testing.assert_frame_equal(ours.drop(columns="seconds"), theirs.drop(columns="seconds"))


def test_the_findings_are_tests_with_controls_and_checks_that_pass(small_run, monkeypatch):
    by_replicate, changed, rogue, _ = small_run
    findings = claims.assess_findings(by_replicate, changed, rogue, n_points=300, n_replicates=2, n_resamples=100,
                                  library_difference=0.0)
    tests = [f for f in findings if f.kind == "test"]
    checks = [f for f in findings if f.kind == "check"]
    assert all(f.control != "-" for f in tests if f.status != "not comparable")
    assert {f.status for f in checks} == {"passed"}, [(f.finding, f.ours) for f in checks if f.status != "passed"]
    rogue_claim = [f for f in tests if f.finding.startswith("3 rogue coordinates")]
    assert {f.model: f.status for f in rogue_claim if f.counted}["static"] in ("not reproduced", "not comparable")
    beside = [f for f in tests if not f.counted]
    assert beside and {f.model for f in beside} == {"dec"}  # the papers' procedure shown beside the start-token view
    # Rudman et al.'s properties of the measures hold by construction: checks, never tests.
    assert not [f for f in tests if "invariant" in f.finding or "scaling" in f.finding]
    assert any(f.finding.startswith("The average cosine, I(W) and IsoScore move") for f in checks)
    # The claims over cells count the judged views only: the papers' procedure on the decoder is left out.
    pooled = [f for f in tests if f.finding.startswith("IsoScore and")]
    assert {f.model for f in pooled} == {"7 cells of 3 models"}  # dec (start token)'s 4 layers, static's, enc's 2
    # With fewer model views than an interval over models needs, the claims over cells are not comparable.
    two_models = [table[table.space != "enc"] for table in (by_replicate, changed, rogue)]
    pooled = [f for f in claims.assess_findings(*two_models, n_points=300, n_replicates=2, n_resamples=20)
              if f.model.endswith("models")]
    assert [(f.model, f.status) for f in pooled] == [("5 cells of 2 models", "not comparable")]


def with_average_cosine(changed: pd.DataFrame, space: str, change: str, value: float) -> pd.DataFrame:
    """``changed`` with the average cosine of one space after one change set to ``value`` in every layer and sample."""
    changed = changed.copy()
    changed.loc[(changed.space == space) & (changed.change == change), "average_cosine"] = value
    return changed


@pytest.mark.parametrize("centred, status", [(0.01, "indistinguishable"), (0.3, "reproduced")])
def test_standardisation_counts_only_where_centring_alone_leaves_the_average_cosine(small_run, centred, status):
    by_replicate, changed, rogue, _ = small_run
    changed = with_average_cosine(with_average_cosine(changed, "dec (start token)", "standardise", 0.01),
                                  "dec (start token)", "centre", centred)
    findings = claims.assess_findings(by_replicate, changed, rogue, n_points=300, n_replicates=2, n_resamples=50)
    (judged,) = [f for f in findings if f.finding.startswith("Standardisation") and f.model == "dec (start token)"]
    assert judged.status == status
    assert judged.control_value == pytest.approx(centred)
    assert judged.control_status == ("passes" if centred < claims.STANDARDISED_BOUND else "fails")


def test_the_rogue_share_counts_only_where_a_random_rotation_does_not_carry_it_too(small_run):
    by_replicate, changed, rogue, _ = small_run
    rotated_like_ours = rogue.assign(rotated_share=rogue.top_share)  # a control that passes the same rule
    findings = claims.assess_findings(by_replicate, changed, rotated_like_ours, n_points=300, n_replicates=2,
                                      n_resamples=50)
    judged = {f.model: f for f in findings if f.finding.startswith("3 rogue") and f.counted}
    assert judged["dec (start token)"].control_status == ("passes" if judged["dec (start token)"].value > 0.5
                                                          else "fails")
    assert all(f.status != "reproduced" for f in judged.values())


def test_the_agreement_interval_resamples_whole_models():
    # Two models whose layers IsoScore and the average cosine rank alike (tau 1 within each), the models in opposite
    # orders: a resample of one model only gives tau 1, which a resample of cells almost never does.
    layers = np.arange(4)
    rows = [{"space": space, "layer": layer, "replicate": replicate, "isoscore": shift + layer / 10 + replicate / 100,
             "average_cosine": 0.5 + shift - layer / 10, "log10_iw": 0.0}
            for space, shift in (("a", 0.0), ("b", 0.5)) for layer in layers for replicate in range(2)]
    table = pd.DataFrame(rows).reindex(columns=["space", "layer", "replicate", *settings.MEASURE_NAMES, "log10_iw"])
    verdict, pair = claims._block_tau(table, ("isoscore", "average_cosine"), below=0.5, n_resamples=200)
    assert pair == ("isoscore", "average_cosine") and verdict.value < 0.5
    assert verdict.interval[1] == pytest.approx(1.0)
    # The control: the same cells, each its own model, and no resample reaches 1.
    cells = table.assign(space=table.space + table.layer.astype(str), layer=0)
    by_cell, _ = claims._block_tau(cells, ("isoscore", "average_cosine"), below=0.5, n_resamples=200)
    assert by_cell.interval[1] < 0.99


def test_the_anisotropic_layers_threshold_gives_its_range():
    cosines = pd.Series([0.05, 0.12, 0.2, 0.4])
    # Passing while the layer at 0.12 is left out: any threshold above 0.12 and up to 0.4 picks a passing set.
    assert claims._selection_range(cosines, lambda chosen: chosen > 0.12, 0.3) == (0.12, 0.4)
    # Failing from the lowest layer up: any threshold up to 0.12.
    assert claims._selection_range(cosines, lambda chosen: chosen > 0.12, 0.1) == (-np.inf, 0.12)


def test_the_guide_and_the_disagreements_are_generated_from_the_tables(small_run):
    by_replicate, changed, *_ = small_run
    sensitivity = tables.sensitivity_table(by_replicate, changed, n_resamples=100)
    agreement = tables.agreement_table(by_replicate, n_resamples=20)
    lines = guide.reader_guide(sensitivity, agreement)
    assert len(lines) == 8 and all(line.startswith("- **") for line in lines)
    assert "IsoScore" in lines[1]  # moved by whitening, not by centring, scaling or a rotation
    assert "average cosine" in lines[0]
    # The control of the cautions: I(W) falls under a uniform scaling by orders of magnitude (in log10), however
    # small its change on the isotropy scale, and the guide names it; IsoScore does not move.
    scale_caution = next(line for line in lines if line.startswith("- **Caution, the scale"))
    assert "I(W)" in scale_caution and "log10 I(W)" in scale_caution and "IsoScore" not in scale_caution
    disagreements = guide.strongest_disagreements(agreement, sensitivity)
    assert len(disagreements) == 3 and disagreements.tau.is_monotonic_increasing
    assert disagreements.cause.str.contains(":").all()


def small_evidence(small_run) -> dict:
    """What notebook 05 stores for the small run: its tables, the library check and the run's parameters."""
    by_replicate, changed, _, (shares, resamples) = small_run
    parameters = notebook_defaults() | {"models": ["dec"], "n_points": 300, "n_replicates": 2, "n_resamples": 100}
    return {"measures_by_replicate": by_replicate, "changed": changed, "rogue_shares": shares,
            "rogue_resamples": resamples, "library_agreement": 0.0,
            "run": {"parameters": parameters, "wall_minutes": 1.54, "measuring_minutes": 1.25, "peak_gib": 2.0}}


def test_the_record_is_judged_again_from_the_stored_evidence_alone(small_run, tmp_path):
    evidence = small_evidence(small_run)
    by_replicate, changed, rogue, _ = small_run
    in_memory = claims.assess_findings(by_replicate, changed, rogue, n_points=300, n_replicates=2, n_resamples=100,
                                       library_difference=0.0)
    save_evidence(tmp_path, evidence)
    record = judge(tmp_path, claims.record)  # reads back the Parquet and JSON files, nothing else
    assert [dataclasses.asdict(f) for f in record.findings] == [dataclasses.asdict(f) for f in in_memory]
    assert read_record(tmp_path).every_status == record.every_status
    assert record.models.startswith("dec") and "static" in record.models
    assert record.notes[-1].startswith(f"Wall time of the notebook: 1.5 min, of which 1.2 min measuring "
                                       f"{len(by_replicate) + len(changed)} point sets, one per core at a time")
    units = {f.finding.split(" ")[0]: f.sampling_unit for f in record.findings if f.model == "dec (start token)"}
    assert units["3"] == "windows of the weakest layer" and units["Standardisation"] == ""
    assert "windows of 512 tokens" in record.notes[3]


def test_every_test_stands_on_the_stand_ins_each_named_once_on_the_page(small_run, tmp_path):
    offline = {"dec": "smollm2", "dec (start token)": "smollm2 (start token)", "static": "glove-50d"}
    evidence = small_evidence(small_run)
    for name in ("measures_by_replicate", "changed", "rogue_shares", "rogue_resamples"):
        table = evidence[name]
        evidence[name] = table.assign(**{column: table[column].replace(offline) for column in ("space", "model")
                                         if column in table})
    record = claims.record(evidence)
    tests = [f for f in record.findings if f.kind == "test"]
    assert {f.stand_in for f in tests if f.model.endswith("models")} == {"smollm2, glove-50d"}
    # Every offline model stands in for the papers'; a model that is none of them (enc) is on its own.
    assert {f.model: f.stand_in for f in tests if not f.model.endswith("models")} == {
        "smollm2 (start token)": "smollm2", "smollm2": "smollm2", "glove-50d": "glove-50d", "enc": ""}
    page = results_page(record)
    assert "- **smollm2**:" in page and "- **glove-50d**:" in page and "**smollm2, glove-50d**" not in page


def test_the_rogue_interval_resamples_whole_windows():
    # Two windows, each of one repeated vector: a resample can only hold window A twice, B twice, or both, so its
    # share takes at most three values; a resample of the tokens would mix the windows in any proportion.
    generator = np.random.default_rng(0)
    window_a, window_b = generator.standard_normal(6) + 2, generator.standard_normal(6) + 2
    points = np.vstack([np.tile(window_a, (100, 1)), np.tile(window_b, (100, 1))]) + 1e-3 * gaussian(200, 6)
    sample = sampling.Sample(points, np.arange(200), np.repeat([0, 1], 100), np.tile(np.arange(100), 2))
    _, resamples = compute.rogue_shares([({"space": "two windows", "layer": 0}, sample)], n_dimensions=2,
                                        n_resamples=200)
    assert resamples.top_share.round(2).nunique() <= 3
    # The control: every token its own window (no contexts), and the shares spread.
    _, by_token = compute.rogue_shares([({"space": "two windows", "layer": 0}, dataclasses.replace(
        sample, contexts=None))], n_dimensions=2, n_resamples=200)
    assert by_token.top_share.round(2).nunique() > 3


def test_the_rogue_interval_is_read_from_the_stored_resamples(small_run):
    _, _, rogue, (shares, resamples) = small_run
    first = resamples[(resamples.space == "dec") & (resamples.layer == 0)].top_share
    assert len(first) == 50
    assert (rogue.top_share_low.iloc[0], rogue.top_share_high.iloc[0]) == tuple(np.nanquantile(first, [0.025, 0.975]))
    # The control: another level is read off the same resamples, narrower, with no point measured again.
    narrower = tables.rogue_table(shares, resamples, level=0.5)
    assert (narrower.top_share_low >= rogue.top_share_low).all()
    assert (narrower.top_share_high <= rogue.top_share_high).all()
    assert (narrower.top_share_high - narrower.top_share_low < rogue.top_share_high - rogue.top_share_low).any()
    assert list(rogue.columns) == [*shares.columns[:7], "top_share_low", "top_share_high", *shares.columns[7:]]


def _imports(module) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(Path(module.__file__).read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_the_claims_read_tables_and_the_computation_judges_nothing():
    for module in (claims, tables, guide, settings):
        reached = {name for name in _imports(module)
                   if name.startswith(("isolib.studies.every_measure.compute", "isolib.models", "isolib.embed",
                                       "isolib.cache", "isolib.computation"))}
        assert not reached, f"{module.__name__} imports {reached}"
    reached = {name for name in _imports(compute)
               if name.startswith(("isolib.findings", "isolib.plotting", "isolib.studies.every_measure.claims",
                                   "isolib.studies.every_measure.guide", "isolib.studies.every_measure.figures"))}
    assert not reached, f"compute imports {reached}"


def test_the_windows_are_notebook_02_s_so_the_embedding_cache_is_shared():
    # One function cuts both notebooks' windows, so 05 reads the embeddings 02 cached.
    for name in ("02_cai_clusters_manifolds", "05_every_measure"):
        source = (Path(__file__).parents[1] / "notebooks" / f"{name}.py").read_text()
        assert "from isolib.windows import running_text_windows" in source, name


def notebook_defaults():
    return {name: declared.default for name, declared in parameters.parameter_declarations("05_every_measure").items()}


@pytest.mark.parametrize("profile", ["quick", "full", "paper"])
def test_every_profile_passes_the_parameter_check(profile):
    params = notebook_defaults() | parameters.parameters("05_every_measure", profile)
    settings.check_parameters(params)


@pytest.mark.parametrize("change, message", [
    ({"small_n": 5000}, "small_n"),
    ({"lid_k": 600}, "lid_k"),
    ({"cluster_encoder": [27, 12, 3]}, "two integers"),
    ({"corpus": "wiki"}, "corpus must be among"),
    ({"anisotropic_cosine": 1.5}, "anisotropic_cosine"),
    ({"models": []}, "at least one model"),
    ({"n_jobs": 0}, "n_jobs"),
])
def test_bad_parameters_are_refused_in_one_sentence(change, message):
    with pytest.raises(ValueError, match=message):
        settings.check_parameters(notebook_defaults() | change)
