"""Notebook 05: every measure on constructed spaces with a known answer, the agreement and sensitivity tables, the findings."""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from isolib import parameters
from isolib.metrics import average_cosine, effective_rank, explained_variance, isoscore, partition_isotropy
from isolib.studies import every_measure as em
from isolib.transforms import standardise

OPTIONS = em.MeasureOptions(baseline_samples=500, lid_k=20, lid_queries=300, k_max=4, n_init=1,
                            kmeans_fit_size=None, silhouette_sample=None)
COSINE_MEASURES = ("average_cosine", "anisotropy_baseline", "s_inter")


def gaussian(n=1500, dim=12, seed=0):
    return np.random.default_rng(seed).standard_normal((n, dim))


def sample_of(points, seed=0, n_types=300, n_contexts=30):
    generator = np.random.default_rng(seed)
    n = len(points)
    return em.Sample(np.asarray(points, dtype=float), generator.integers(0, n_types, n),
                     np.arange(n) % n_contexts, np.arange(n) % 50)


# --------------------------------------------------------------------------- constructed spaces


def test_an_isotropic_gaussian_sits_at_the_isotropic_end_of_every_measure():
    values = em.every_measure(sample_of(gaussian()), OPTIONS)
    for name in COSINE_MEASURES + ("s_intra",):
        assert abs(values[name]) < 0.03, name
    assert values["isoscore"] > 0.95
    assert values["effective_rank"] > 0.9
    assert values["iw"] > 0.3
    assert values["top_dimension_share"] < 2 / 12 and values["top_direction_share"] < 2 / 12
    assert values["lid"] > 0.6 * 12
    assert values["silhouette"] < 0.15
    scaled = em.isotropy_scale(pd.DataFrame([values]))
    assert (scaled.iloc[0] > 0.75).all(), scaled.iloc[0][scaled.iloc[0] <= 0.75]


def test_one_rogue_dimension_moves_the_cosine_measures_and_not_the_standardised_ones():
    X = gaussian()
    rogue = X.copy()
    rogue[:, 0] = 30 * rogue[:, 0] + 100  # a huge mean and a huge variance on one coordinate
    plain, moved = (em.every_measure(sample_of(points), OPTIONS) for points in (X, rogue))
    for name in COSINE_MEASURES:
        assert moved[name] > 0.8 > 0.05 > abs(plain[name]), name
    assert moved["top_dimension_share"] > 0.8
    # Standardising each coordinate undoes an affine change of one of them exactly: every measure of the
    # standardised space is the same with and without the rogue dimension.
    standardised = [em.every_measure(sample_of(standardise(points)), OPTIONS) for points in (X, rogue)]
    for name in em.MEASURE_NAMES:
        assert standardised[1][name] == pytest.approx(standardised[0][name], abs=1e-9), name
    # The rogue coordinate carries the average cosine; a rotation, which keeps every cosine, spreads it.
    (shares,) = em.rogue_shares([({"space": "rogue", "layer": 0}, sample_of(rogue))], n_dimensions=1).itertuples()
    assert shares.top_share > 0.99 and shares.rotated_share < 0.5 and shares.rogue == "0"
    assert shares.average_cosine == pytest.approx(average_cosine(rogue))


def test_a_uniformly_scaled_copy_changes_i_w_and_nothing_else():
    X = gaussian() * np.geomspace(3, 0.5, 12) + 1.0  # anisotropic and off the origin
    before, after = (em.every_measure(sample_of(points), OPTIONS) for points in (X, 3 * X))
    assert after["log10_iw"] < before["log10_iw"] - 1  # more than ten times smaller
    for name in em.MEASURE_NAMES:
        if name != "iw":
            assert after[name] == pytest.approx(before[name], rel=1e-6, abs=1e-9), name


def test_two_clusters_give_a_high_silhouette_and_the_isoscore_of_their_closed_form():
    dim, separation, n = 10, 16.0, 1000
    generator = np.random.default_rng(0)
    sides = np.repeat([-1.0, 1.0], n)
    X = generator.standard_normal((2 * n, dim))
    X[:, 0] += sides * separation / 2
    values = em.every_measure(sample_of(X), OPTIONS)
    assert values["silhouette"] > 0.6 and values["best_k"] == 2
    # Population covariance: 1 + (separation / 2)^2 along the axis joining the clusters, 1 along the others.
    closed_form = em.isoscore_of_variances([1 + (separation / 2) ** 2] + [1.0] * (dim - 1))
    assert values["isoscore"] == pytest.approx(closed_form, abs=0.01)
    assert closed_form < 0.1  # clustered along one axis: IsoScore calls it anisotropic, the silhouette clustered


# --------------------------------------------------------------------------- the shared decomposition


@pytest.mark.parametrize("shape", [(400, 30), (20, 40)])
def test_the_shared_spectrum_gives_what_each_measure_gives_alone(shape):
    X = np.random.default_rng(1).standard_normal(shape) * np.geomspace(5, 0.2, shape[1]) + 0.3
    spectrum = em.Spectrum.of(X)
    assert spectrum.isoscore() == pytest.approx(isoscore(X), abs=1e-10)
    # With fewer points than dimensions the null directions hold rounding noise (1e-8 of a singular value).
    assert spectrum.effective_rank() == pytest.approx(effective_rank(X, centered=True) / shape[1], abs=1e-7)
    assert spectrum.top_direction_share() == pytest.approx(explained_variance(X)[0], abs=1e-12)
    assert spectrum.top_dimension_share() == pytest.approx(X.var(axis=0).max() / X.var(axis=0).sum())
    assert spectrum.log10_partition_isotropy(X) == pytest.approx(math.log10(partition_isotropy(X)), abs=1e-9)
    assert em.library_agreement(em.Sample(X)) < 1e-6


def test_log10_i_w_has_no_underflow_where_i_w_does():
    X = np.random.default_rng(2).standard_normal((300, 8)) * 2000 + 500
    assert partition_isotropy(X) == 0.0
    assert -1e6 < em.Spectrum.of(X).log10_partition_isotropy(X) < -300


def test_i_w_is_undefined_where_the_points_do_not_fix_its_directions():
    from isolib.transforms import whiten

    X = np.random.default_rng(3).standard_normal((500, 12)) * np.geomspace(3, 0.5, 12) + 0.2
    assert em.Spectrum.of(X).directions_determined()
    # Whitened points: every direction has the same variance, so every basis is an eigenbasis.
    white = whiten(X)
    assert not em.Spectrum.of(white).directions_determined()
    assert np.isnan(em.every_measure(em.Sample(white), em.MeasureOptions(lid_k=10, k_max=3))["iw"])
    # Directions without variance do not count (each point projects to 0 on them) ...
    padded = np.hstack([white, np.zeros((500, 3))])
    assert not em.Spectrum.of(padded).directions_determined()
    # ... and the control: the same points, each coordinate stretched by 1% more than the last, fix them again.
    stretched = white * 1.01 ** np.arange(12)
    assert em.Spectrum.of(stretched).directions_determined()
    assert np.isfinite(em.every_measure(em.Sample(stretched), em.MeasureOptions(lid_k=10, k_max=3))["iw"])


def test_cosine_contributions_sum_to_the_average_cosine():
    X = gaussian(200, 6) + np.array([3.0, 0, 0, 0, 0, 0])
    contributions = em.cosine_contributions(X)
    assert contributions.sum() == pytest.approx(average_cosine(X))
    assert np.argmax(contributions) == 0
    with pytest.raises(ValueError, match="zero vector"):
        em.cosine_contributions(np.zeros((3, 2)))


# --------------------------------------------------------------------------- agreement and sensitivity


def test_kendall_matrix_is_scipy_s_tau_b_with_ties_and_pairwise_missing_values():
    generator = np.random.default_rng(3)
    values = generator.integers(0, 5, size=(25, 3)).astype(float)  # many ties
    values[[2, 7], 1] = np.nan
    tau = em.kendall_matrix(values)
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
            for measure in em.MEASURES:
                row[measure.name] = 0.05 * level if measure.isotropic == "high" else 1 - 0.1 * level
            row["lid"] = level + 1
            row["log10_iw"] = -10 + level
            rows.append(row)
    return pd.DataFrame(rows)


def test_oriented_measures_that_all_rise_with_isotropy_agree_perfectly():
    table = replicate_table()
    agreement = em.agreement_table(table, n_resamples=50)
    assert np.allclose(agreement.tau, 1)
    assert (agreement.n_cells == 6).all()
    flipped = table.assign(isoscore=-table.isoscore)
    tau = em.agreement_table(flipped, n_resamples=20).set_index(["measure", "other"]).tau
    assert tau["isoscore", "average_cosine"] == pytest.approx(-1)


def test_sensitivity_reads_directions_on_the_isotropy_scale():
    before = replicate_table(n_replicates=1)
    centred = before.assign(change="centre", average_cosine=0.0)  # towards isotropy for the cosine
    scaled = before.assign(change="scale", log10_iw=before.log10_iw - 30)  # I(W) far smaller
    sensitivity = em.sensitivity_table(before, pd.concat([centred, scaled]), n_resamples=200).set_index(
        ["change", "measure"])
    assert sensitivity.loc[("centre", "average_cosine"), "direction"] == "more isotropic"
    assert sensitivity.loc[("centre", "isoscore"), "direction"] == "unchanged"
    assert sensitivity.loc[("scale", "iw"), "direction"] == "less isotropic"
    assert sensitivity.loc[("scale", "iw"), "raw_median"] == pytest.approx(-30)
    assert sensitivity.loc[("whiten", "isoscore"), "direction"] == "n/a"
    assert list(sensitivity.index.get_level_values("change").unique()) == list(em.CHANGES)


def test_a_cells_change_pairs_each_sample_with_itself_and_is_their_mean():
    before = replicate_table(n_replicates=2)
    # Sample 0 of every cell loses 10 in log10 I(W), sample 1 loses 30: the cell's change is -20.
    scaled = before.assign(change="scale", log10_iw=before.log10_iw - np.where(before.replicate == 0, 10, 30))
    row = em.sensitivity_table(before, scaled, n_resamples=50).set_index(["change", "measure"]).loc[("scale", "iw")]
    assert row.n_cells == 6
    assert (row.raw_low, row.raw_median, row.raw_high) == pytest.approx((-20, -20, -20))
    # The control: sample 1 alone changed by 5 less moves the cell's change to (-10 - 25) / 2; read from sample 0
    # alone (as before every sample was changed) it would stay -10.
    crossed = scaled.assign(log10_iw=scaled.log10_iw + np.where(scaled.replicate == 1, 5, 0))
    assert em.sensitivity_table(before, crossed, n_resamples=50).set_index(["change", "measure"]).loc[
        ("scale", "iw"), "raw_median"] == pytest.approx(-17.5)


def test_a_vector_a_change_sends_to_the_origin_is_left_out():
    X = np.vstack([np.tile([5.0, 5.0, 5.0, 5.0], (20, 1)), gaussian(200, 4)])  # a repeated vector, far from the rest
    changes = dict(em.changed_samples(sample_of(X), em.ChangeSettings(abtt_components=1, cluster=(2, 1), small_n=50)))
    assert len(changes["cluster"].points) == 200  # its cluster's mean is itself: the 20 copies become zero
    assert (np.linalg.norm(changes["cluster"].points, axis=1) > 0).all()
    assert len(changes["centre"].points) == 220


def test_every_change_applies_in_order_and_the_first_position_only_where_it_is_analysed():
    X = gaussian(400, 10) + 2.0
    sample = sample_of(X)
    changes = dict(em.changed_samples(sample, em.ChangeSettings(abtt_components=3, cluster=(4, 2), small_n=100)))
    assert list(changes) == list(em.CHANGES)
    assert changes["drop_first_position"] is not None and len(changes["drop_first_position"].points) == 392
    np.testing.assert_allclose(changes["centre"].points.mean(axis=0), 0, atol=1e-12)
    assert changes["drop_top_3"].points.shape == (400, 7)
    assert len(changes["fewer_points"].points) == 100 and len(changes["fewer_points"].types) == 100
    np.testing.assert_allclose(np.linalg.norm(changes["unit_length"].points, axis=1), 1)
    far = np.linalg.norm(changes["outlier"].points[0] - X.mean(axis=0))
    assert far == pytest.approx(20 * np.median(np.linalg.norm(X - X.mean(axis=0), axis=1)))
    without_sink = em.Sample(X, positions=np.arange(400) % 50 + 1)
    assert dict(em.changed_samples(without_sink))["drop_first_position"] is None


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
    kept, started = em.analysed_tokens(token_table(False)), em.analysed_tokens(token_table(True))
    assert list(kept.type) == ["the", "cat", "sat", "a", "dog", "ran"]  # no symbol, no placeholder
    assert list(kept.position[kept.content_index == 0]) == [0, 0]
    assert list(started.position[started.content_index == 0]) == [1, 1]
    drawn = em.draw_token_samples({"keep": kept, "start": started}, 4, 2, random_state=0)
    for first, second in zip(drawn["keep"], drawn["start"]):
        assert list(first.type) == list(second.type) and len(first) == 4
    assert not drawn["keep"][0].equals(drawn["keep"][1]) or len(kept) == 4


def test_the_static_sample_holds_the_words_of_the_same_windows():
    tokens = token_table(False)
    tokens.loc[1, "word"] = "Cat"
    drawn = em.static_sample(tokens, ["dog", "cat", "the", "zebra"], 10, 1)[0]
    assert sorted(drawn.type) == ["cat", "dog", "the"]  # lower-cased; words missing from the vocabulary left out
    assert dict(zip(drawn.type, drawn.row)) == {"dog": 0, "cat": 1, "the": 2}


# --------------------------------------------------------------------------- findings, guide, parameters


@pytest.fixture(scope="module")
def small_run():
    """Every measure on a few constructed cells: a decoder in two views (one with a rogue coordinate) and a static space."""
    generator = np.random.default_rng(5)
    cells = []
    for label in ("dec", "dec (start token)", "static"):
        for layer in ((0,) if label == "static" else (0, 1, 2, 3)):
            X = generator.standard_normal((300, 8)) * np.geomspace(2, 0.5, 8) + 1.5  # off the origin
            if label == "dec":
                X[:, 0] += 5 + layer  # a rogue coordinate, growing with depth
            samples = [sample_of(X, seed=r, n_types=80, n_contexts=10) for r in range(2)]
            cells.append(({"space": label, "model": label.split(" ")[0], "view": "keep", "layer": layer}, samples))
    options = em.MeasureOptions(baseline_samples=200, lid_k=10, lid_queries=100, k_max=3, kmeans_fit_size=None,
                                silhouette_sample=None)
    by_replicate, changed = em.measure_spaces(cells, options, em.ChangeSettings(abtt_components=2, cluster=(3, 2),
                                                                                small_n=100), n_replicates=2)
    rogue = em.rogue_shares([(cell, samples[0]) for cell, samples in cells], n_resamples=50)
    return by_replicate, changed, rogue


def test_measure_spaces_gives_one_row_per_cell_and_replicate_and_per_applicable_change(small_run):
    by_replicate, changed, _ = small_run
    assert len(by_replicate) == 9 * 2
    assert set(em.MEASURE_NAMES) <= set(by_replicate.columns)
    # Every sample is changed (positions hold 0: the first position applies everywhere here).
    assert len(changed) == 9 * 2 * len(em.CHANGES)
    assert changed.groupby(["space", "layer", "change"]).replicate.nunique().eq(2).all()


def test_cells_measured_in_worker_processes_give_the_same_tables():
    cells = [({"space": "toy", "model": "toy", "view": "keep", "layer": layer},
              [sample_of(gaussian(200, 6, seed=layer) + layer, seed=r) for r in range(2)]) for layer in range(2)]
    options = em.MeasureOptions(baseline_samples=100, lid_k=10, lid_queries=50, k_max=3, kmeans_fit_size=None,
                                silhouette_sample=None)
    settings = em.ChangeSettings(abtt_components=2, cluster=(3, 2), small_n=50)
    here = em.measure_spaces(cells, options, settings, n_replicates=2)
    workers = em.measure_spaces(iter(cells), options, settings, n_replicates=2, n_jobs=2)
    for ours, theirs in zip(here, workers):
        pd.testing.assert_frame_equal(ours.drop(columns="seconds"), theirs.drop(columns="seconds"))


def test_the_findings_are_tests_with_controls_and_checks_that_pass(small_run, monkeypatch):
    by_replicate, changed, rogue = small_run
    findings = em.assess_findings(by_replicate, changed, rogue, n_points=300, n_replicates=2, n_resamples=100,
                                  library_difference=0.0)
    tests = [f for f in findings if f.kind == "test"]
    checks = [f for f in findings if f.kind == "check"]
    assert all(f.control != "-" for f in tests if f.status != "not comparable")
    assert {f.status for f in checks} == {"passed"}, [(f.finding, f.ours) for f in checks if f.status != "passed"]
    rogue_claim = [f for f in tests if f.finding.startswith("3 rogue coordinates")]
    assert {f.model: f.status for f in rogue_claim if f.counted}["static"] in ("not reproduced", "not comparable")
    beside = [f for f in tests if not f.counted]
    assert beside and {f.model for f in beside} == {"dec"}  # the papers' procedure shown beside the start-token view
    centring = [f for f in tests if f.finding.startswith("The average cosine changes") and f.model == "dec"]
    assert centring[0].status == "reproduced"  # the rogue coordinate's mean: centring removes it


def test_the_guide_and_the_disagreements_are_generated_from_the_tables(small_run):
    by_replicate, changed, _ = small_run
    sensitivity = em.sensitivity_table(by_replicate, changed, n_resamples=100)
    agreement = em.agreement_table(by_replicate, n_resamples=20)
    guide = em.reader_guide(sensitivity, agreement)
    assert len(guide) == 8 and all(line.startswith("- **") for line in guide)
    assert "IsoScore" in guide[1]  # moved by whitening, not by centring, scaling or a rotation
    assert "average cosine" in guide[0]
    # The control of the cautions: I(W) falls under a uniform scaling by orders of magnitude (in log10), however
    # small its change on the isotropy scale, and the guide names it; IsoScore does not move.
    scale_caution = next(line for line in guide if line.startswith("- **Caution, the scale"))
    assert "I(W)" in scale_caution and "log10 I(W)" in scale_caution and "IsoScore" not in scale_caution
    disagreements = em.strongest_disagreements(agreement, sensitivity)
    assert len(disagreements) == 3 and disagreements.tau.is_monotonic_increasing
    assert disagreements.cause.str.contains(":").all()


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
    em.check_parameters(params)


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
        em.check_parameters(notebook_defaults() | change)
