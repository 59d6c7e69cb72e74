"""Tests of isolib.metrics: known answers, brute force, reference packages, bad input."""

import itertools
import time
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse
from sklearn.decomposition import PCA
from sklearn.metrics import silhouette_score

from isolib import metrics
from isolib.metrics import (
    anisotropy_baseline,
    average_cosine,
    centre_per_cluster,
    effective_rank,
    explained_variance,
    intra_similarity,
    isoscore,
    lid_mle,
    mev,
    mev_baseline,
    neighbours,
    partition_isotropy,
    random_subset_per_group,
    s_inter,
    s_intra,
    select_kmeans,
    self_similarity,
    silhouette,
    silhouettes,
)


def gaussian(n=2000, dim=10, seed=0):
    return np.random.default_rng(seed).normal(size=(n, dim))


def blobs(n=600, dim=8, n_clusters=4, spread=1.0, seed=0):
    """Gaussian clusters around fixed centres; returns (points, labels)."""
    generator = np.random.default_rng(seed)
    centres = generator.normal(size=(n_clusters, dim)) * 4
    labels = generator.integers(n_clusters, size=n)
    return centres[labels] + spread * generator.normal(size=(n, dim)), labels


def subspace(n, intrinsic, ambient, seed=0, offset=0.0):
    """Gaussian points filling a random `intrinsic`-dimensional linear subspace of R^ambient."""
    generator = np.random.default_rng(seed)
    basis = np.linalg.qr(generator.normal(size=(ambient, intrinsic)))[0]
    return generator.normal(size=(n, intrinsic)) @ basis.T + offset


def cosine_matrix(X):
    unit = X / np.linalg.norm(X, axis=1, keepdims=True)
    return unit @ unit.T


# ----------------------------------------------------------------------------- known answers


def test_isotropic_gaussian_scores_as_isotropic():
    X = gaussian(n=20000)
    assert isoscore(X) > 0.98
    assert abs(average_cosine(X)) < 0.01
    # F(u) is a sum of exp(N(0, 1)) for every direction: equal up to sampling noise.
    assert partition_isotropy(X) > 0.9
    assert effective_rank(X) > 9.9


def test_points_on_a_line_score_zero():
    generator = np.random.default_rng(1)
    direction = generator.normal(size=12)
    X = np.outer(generator.normal(size=300), direction)
    assert isoscore(X) == pytest.approx(0.0, abs=1e-9)
    assert mev(X) == pytest.approx(1.0)
    assert mev(X, centered=True) == pytest.approx(1.0)
    assert effective_rank(X) == pytest.approx(1.0, abs=1e-6)


def test_mean_shift_moves_cosine_and_partition_isotropy_but_not_isoscore():
    X = gaussian(n=5000)
    shifted = X + 100 * np.eye(10)[0]
    assert average_cosine(shifted) > 0.99
    assert partition_isotropy(shifted) < 1e-3
    assert isoscore(shifted) == pytest.approx(isoscore(X), abs=1e-9)


def test_lid_of_a_linear_subspace_is_its_dimension_and_squared_distances_halve_it():
    X = subspace(4000, intrinsic=5, ambient=20)
    true_distances = lid_mle(X, k=20)
    assert 4.5 < true_distances < 5.8
    assert lid_mle(X, k=20, squared=True) == pytest.approx(true_distances / 2, rel=1e-12)


def test_tightening_clusters_raises_silhouette_and_lowers_isoscore():
    spreads = [3.0, 1.0, 0.3]
    clouds = [blobs(spread=spread, dim=12) for spread in spreads]
    scores = [silhouette(X, labels) for X, labels in clouds]
    isoscores = [isoscore(X) for X, _ in clouds]
    assert scores == sorted(scores)
    assert isoscores == sorted(isoscores, reverse=True)


def test_partition_isotropy_survives_norms_in_the_thousands_and_is_not_scale_invariant():
    X = gaussian(n=3000, dim=20) * 3000
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value = partition_isotropy(X)
    assert 0.0 <= value < 1e-6
    small = gaussian(n=3000, dim=20) * 0.01
    assert partition_isotropy(small) > 0.99


# ----------------------------------------------------------------------------- brute force


def test_average_cosine_equals_the_mean_over_all_pairs():
    X = gaussian(n=40, dim=6) + 0.5
    cosines = cosine_matrix(X)
    expected = np.mean([cosines[i, j] for i, j in itertools.permutations(range(40), 2)])
    assert average_cosine(X) == pytest.approx(expected, abs=1e-12)


def test_sampled_average_cosine_is_reproducible_and_close():
    X = gaussian(n=300, dim=6) + 0.5
    sampled = average_cosine(X, n_pairs=200_000, random_state=3)
    assert sampled == average_cosine(X, n_pairs=200_000, random_state=3)
    assert sampled == pytest.approx(average_cosine(X), abs=0.01)


@pytest.fixture
def occurrences():
    """Tokens with words (labels) and sentences (contexts), including edge cases."""
    generator = np.random.default_rng(2)
    n = 60
    X = generator.normal(size=(n, 5)) + 0.3
    words = np.array(list("abcde"))[generator.integers(5, size=n)].astype(object)
    sentences = generator.integers(12, size=n)
    words[0], words[1], words[2] = "once", "same", "same"  # one occurrence; two in one sentence
    sentences[1] = sentences[2] = 99
    return X, words, sentences


def test_self_similarity_matches_the_pair_loop(occurrences):
    X, words, sentences = occurrences
    cosines = cosine_matrix(X)
    with_contexts = self_similarity(X, words, sentences)
    without_contexts = self_similarity(X, words)
    assert list(with_contexts.index) == list(pd.unique(words))
    for word in pd.unique(words):
        rows = np.flatnonzero(words == word)
        pairs = [(i, j) for i, j in itertools.permutations(rows, 2)]
        apart = [cosines[i, j] for i, j in pairs if sentences[i] != sentences[j]]
        every = [cosines[i, j] for i, j in pairs]
        expected_apart = np.mean(apart) if apart else np.nan
        expected_every = np.mean(every) if every else np.nan
        np.testing.assert_allclose(with_contexts[word], expected_apart, atol=1e-12)
        np.testing.assert_allclose(without_contexts[word], expected_every, atol=1e-12)
    # Documented NaNs: a single occurrence; all occurrences in one sentence (with contexts).
    assert np.isnan(with_contexts["once"]) and np.isnan(without_contexts["once"])
    assert np.isnan(with_contexts["same"])
    assert without_contexts["same"] == pytest.approx(cosines[1, 2])


def test_intra_similarity_matches_the_token_loop(occurrences):
    X, _, sentences = occurrences
    values = intra_similarity(X, sentences)
    for sentence in np.unique(sentences):
        rows = X[sentences == sentence]
        centre = rows.mean(axis=0)
        expected = np.mean([row @ centre / np.linalg.norm(row) / np.linalg.norm(centre) for row in rows])
        assert values[sentence] == pytest.approx(expected, abs=1e-12)


def test_intra_similarity_is_nan_for_a_sentence_with_zero_mean():
    X = np.array([[1.0, 0.0], [-1.0, 0.0], [1.0, 1.0]])
    values = intra_similarity(X, ["s", "s", "t"])
    assert np.isnan(values["s"]) and values["t"] == pytest.approx(1.0)


def test_anisotropy_baseline_uses_pairs_from_different_contexts(occurrences):
    X, _, sentences = occurrences
    cosines = cosine_matrix(X)
    apart = [cosines[i, j] for i, j in itertools.permutations(range(len(X)), 2) if sentences[i] != sentences[j]]
    # n_samples above the number of rows: every row is used, so the value is exact.
    assert anisotropy_baseline(X, sentences, n_samples=1000) == pytest.approx(np.mean(apart), abs=1e-12)
    sampled = anisotropy_baseline(X, sentences, n_samples=30, random_state=1)
    assert sampled == anisotropy_baseline(X, sentences, n_samples=30, random_state=1)


def test_s_inter_is_the_average_cosine_across_type_representatives():
    generator = np.random.default_rng(4)
    type_vectors = generator.normal(size=(6, 5)) + 0.2
    labels = generator.integers(6, size=80)
    # Every instance of a type is the same vector, so any draw gives the same value.
    X = type_vectors[labels] * generator.uniform(0.5, 2, size=(80, 1))
    cosines = cosine_matrix(type_vectors)
    expected = np.mean([cosines[i, j] for i, j in itertools.permutations(range(6), 2)])
    assert s_inter(X, labels, random_state=0) == pytest.approx(expected, abs=1e-12)


def test_s_intra_matches_the_pair_loop_and_skips_single_instances(occurrences):
    X, words, _ = occurrences
    cosines = cosine_matrix(X)
    per_type = []
    for word in pd.unique(words):
        rows = np.flatnonzero(words == word)
        if len(rows) >= 2:
            per_type.append(np.mean([cosines[i, j] for i, j in itertools.permutations(rows, 2)]))
    assert s_intra(X, words, max_instances=None) == pytest.approx(np.mean(per_type), abs=1e-12)
    # A cap above every type's count changes nothing; a cap of 2 samples reproducibly.
    assert s_intra(X, words, max_instances=1000) == pytest.approx(np.mean(per_type), abs=1e-12)
    capped = s_intra(X, words, max_instances=2, random_state=5)
    assert capped == s_intra(X, words, max_instances=2, random_state=5)
    assert -1 <= capped <= 1


def test_random_subset_per_group_caps_every_group_and_is_reproducible():
    # Groups 7, 3, 5 and 9 have 5, 3, 2 and 1 rows.
    codes = np.array([7, 3, 7, 5, 3, 7, 9, 7, 5, 3, 7])
    kept = random_subset_per_group(codes, 2, np.random.default_rng(0))
    assert np.array_equal(kept, np.unique(kept))  # ascending row indices, no repeats
    assert dict(zip(*np.unique(codes[kept], return_counts=True))) == {3: 2, 5: 2, 7: 2, 9: 1}
    assert {3, 6, 8} <= set(kept.tolist())  # groups 5 and 9, within the cap, are kept whole
    # Groups no larger than the cap are kept whole; None keeps every row.
    assert random_subset_per_group(codes, 5, np.random.default_rng(0)).tolist() == list(range(11))
    assert random_subset_per_group(codes, None, np.random.default_rng(0)).tolist() == list(range(11))
    # The same seed draws the same rows; over seeds, every row of a capped group gets drawn.
    assert np.array_equal(kept, random_subset_per_group(codes, 2, np.random.default_rng(0)))
    drawn = np.concatenate([random_subset_per_group(codes, 1, np.random.default_rng(seed)) for seed in range(100)])
    assert set(drawn) == set(range(11))


def test_variance_measures_match_svd_and_sklearn_pca():
    X = gaussian(n=50, dim=8) * np.arange(1, 9) + 3
    singular = np.linalg.svd(X, compute_uv=False)
    assert mev(X) == pytest.approx(singular[0] ** 2 / np.sum(singular**2), rel=1e-10)
    ratios = PCA().fit(X).explained_variance_ratio_
    assert mev(X, centered=True) == pytest.approx(ratios[0], rel=1e-10)
    np.testing.assert_allclose(explained_variance(X), ratios, atol=1e-12)
    np.testing.assert_allclose(explained_variance(X, centered=False), singular**2 / np.sum(singular**2), atol=1e-12)
    p = singular / singular.sum()
    assert effective_rank(X) == pytest.approx(np.exp(-np.sum(p * np.log(p))), rel=1e-10)
    # Fewer points than dimensions: the spectrum has min(n, d) entries.
    assert explained_variance(X[:5]).shape == (5,)


def test_mev_baseline_is_mev_of_a_random_sample():
    X = gaussian(n=300, dim=8) + 1
    assert mev_baseline(X, n_samples=1000) == pytest.approx(mev(X))
    assert mev_baseline(X, n_samples=50, random_state=2) == mev_baseline(X, n_samples=50, random_state=2)


def test_isoscore_follows_the_published_recipe():
    X = gaussian(n=400, dim=6) * np.array([5, 3, 2, 1, 1, 0.5]) @ np.linalg.qr(gaussian(6, 6, seed=9))[0] + 7
    centred = X - X.mean(axis=0)
    rotated = centred @ np.linalg.eigh(np.cov(centred.T))[1]
    variances = rotated.var(axis=0, ddof=1)
    n = 6
    normalised = np.sqrt(n) * variances / np.linalg.norm(variances)
    defect = np.linalg.norm(normalised - 1) / np.sqrt(2 * (n - np.sqrt(n)))
    k = (n - defect**2 * (n - np.sqrt(n))) ** 2 / n
    assert isoscore(X) == pytest.approx((k - 1) / (n - 1), abs=1e-12)


def test_partition_isotropy_matches_both_signs_of_every_eigenvector():
    X = gaussian(n=200, dim=5) * 0.5 + 0.2
    _, vectors = np.linalg.eigh(X.T @ X)
    directions = np.hstack([vectors, -vectors])
    f = np.exp(X @ directions).sum(axis=0)
    assert partition_isotropy(X) == pytest.approx(f.min() / f.max(), rel=1e-10)


def brute_force_lid(X, k, queries=None):
    """Per-point MLE LID with float64 distances from explicit differences."""
    rows = range(len(X)) if queries is None else queries
    values = []
    for i in rows:
        distances = np.sqrt(((X - X[i]) ** 2).sum(axis=1))
        distances[i] = np.inf
        nearest = np.sort(distances)[:k]
        values.append(-k / np.log(nearest / nearest[-1]).sum())
    return np.array(values)


@pytest.mark.parametrize("n, k", [(300, 10), (1500, 10)])  # plain and two-stage (grouped) selection
def test_lid_matches_brute_force_per_point(n, k):
    X = subspace(n, intrinsic=4, ambient=12, seed=n) * np.geomspace(1, 3, 12)
    mean, per_point = lid_mle(X, k=k, return_per_point=True)
    expected = brute_force_lid(X, k)
    np.testing.assert_allclose(per_point.to_numpy(), expected, rtol=1e-10)
    assert mean == pytest.approx(expected.mean(), rel=1e-10)
    assert list(per_point.index) == list(range(n))


def test_lid_is_exact_for_tight_clusters_far_from_the_origin():
    # Far-out, tightly packed points: the float32 expansion ||x||^2 + ||y||^2 - 2 x.y
    # alone would lose every digit; the float64 recomputation keeps them.
    X = subspace(1200, intrinsic=3, ambient=8, seed=3, offset=1e4) * 1e-3 + np.r_[1e4, np.zeros(7)]
    _, per_point = lid_mle(X, k=10, queries=np.arange(50), return_per_point=True)
    np.testing.assert_allclose(per_point.to_numpy(), brute_force_lid(X, 10, range(50)), rtol=1e-8)


def test_lid_float32_input_and_chunking_agree():
    X = subspace(1500, intrinsic=4, ambient=12, seed=1)
    reference = lid_mle(X, k=10)
    assert lid_mle(X, k=10, chunk_size=37) == pytest.approx(reference, rel=1e-12)
    assert lid_mle(X.astype(np.float32), k=10) == pytest.approx(reference, rel=1e-6)


def test_lid_removes_duplicates_and_handles_query_subsets():
    X = subspace(500, intrinsic=3, ambient=6, seed=2)
    _, full = lid_mle(X, k=10, return_per_point=True)
    doubled = np.vstack([X, X[:100]])
    mean, per_point = lid_mle(doubled, k=10, return_per_point=True)
    assert mean == pytest.approx(full.mean(), rel=1e-12)
    assert list(per_point.index) == list(range(500))
    # An index query on a duplicate row gets its original's value.
    _, queried = lid_mle(doubled, k=10, queries=[3, 503], return_per_point=True)
    np.testing.assert_allclose(queried.to_numpy(), full.iloc[[3, 3]].to_numpy(), rtol=1e-12)
    # A random sample of queries: the same per-point values at the sampled rows.
    _, sampled = lid_mle(X, k=10, queries=50, random_state=0, return_per_point=True)
    assert len(sampled) == 50
    np.testing.assert_allclose(sampled.to_numpy(), full.loc[sampled.index].to_numpy(), rtol=1e-12)


def test_distinct_rows_survive_hash_collisions_and_signed_zeros(monkeypatch):
    X = np.array([[1.0, 0.0], [2.0, 1.0], [1.0, -0.0], [3.0, 3.0], [2.0, 1.0], [5.0, 5.0]])
    expected_first, expected_position = [0, 1, 3, 5], [0, 1, 0, 2, 1, 3]
    first, position = neighbours._first_distinct_rows(X)
    assert first.tolist() == expected_first and position.tolist() == expected_position
    # Every row colliding on one hash: the exact comparison still separates them.
    monkeypatch.setattr(neighbours, "_row_hashes", lambda points, rows, seed: np.zeros(len(rows), dtype=np.uint64))
    first, position = neighbours._first_distinct_rows(X)
    assert first.tolist() == expected_first and position.tolist() == expected_position


def test_cosine_lid_is_euclidean_lid_of_unit_vectors_and_squared_halves_it():
    X = subspace(800, intrinsic=4, ambient=10, seed=4, offset=0.5)
    unit = X / np.linalg.norm(X, axis=1, keepdims=True)
    cosine = lid_mle(X, k=15, metric="cosine")
    assert cosine == pytest.approx(lid_mle(unit, k=15), rel=1e-10)
    assert lid_mle(X, k=15, metric="cosine", squared=True) == pytest.approx(cosine / 2, rel=1e-12)


def test_lid_is_infinite_where_all_neighbour_distances_tie():
    # The centre of a regular simplex's vertices has all its neighbours at one distance.
    X = np.vstack([np.eye(4), np.zeros(4)])
    _, per_point = lid_mle(X, k=3, queries=[4], return_per_point=True)
    assert np.isinf(per_point.iloc[0])


def test_silhouette_equals_sklearn_with_blocks_and_singletons():
    X, labels = blobs(n=500, dim=6, n_clusters=5, spread=2.0)
    labels[0] = 7  # a singleton cluster scores 0
    expected = silhouette_score(X, labels)
    assert silhouette(X, labels) == pytest.approx(expected, abs=1e-6)
    assert silhouette(X, labels, chunk_size=37) == pytest.approx(expected, abs=1e-6)
    assert silhouette(X.astype(np.float32), labels) == pytest.approx(expected, abs=1e-6)
    assert silhouette(X + 1e3, labels) == pytest.approx(expected, abs=1e-6)  # centred first


def test_silhouette_equals_sklearn_when_small_clusters_share_blocks_and_points_repeat():
    # 80 clusters of 5 points: under chunk_size // 16 points, so blocks hold several clusters.
    X, labels = blobs(n=400, dim=8, n_clusters=80, spread=1.0, seed=5)
    X32 = X.astype(np.float32)
    assert silhouette(X32, labels, chunk_size=128) == pytest.approx(silhouette_score(X, labels), abs=1e-6)
    # Repeated points: rounding pushes some zero squared distances below 0 (clipped, not NaN), and
    # the square root magnifies the float32 error of a zero distance, hence the looser tolerance.
    X, labels = np.vstack([X, X[:40]]), np.concatenate([labels, labels[:40]])
    expected = silhouette_score(X, labels)
    assert silhouette(X.astype(np.float32), labels, chunk_size=128) == pytest.approx(expected, abs=1e-5)
    assert silhouette(X.astype(np.float32) + 1e3, labels, chunk_size=128) == pytest.approx(expected, abs=1e-5)


def test_silhouettes_of_several_partitions_equal_sklearn_each():
    X, labels = blobs(n=500, dim=6, n_clusters=5, spread=2.0)
    labels[0] = 7  # a singleton scores 0
    shuffled = np.random.default_rng(0).permutation(labels)
    partitions = [labels, shuffled, labels % 2, np.zeros(500, dtype=int)]  # the last: one cluster, undefined
    scores = silhouettes(X, partitions, chunk_size=64)
    expected = [silhouette_score(X, partition) for partition in partitions[:3]]
    assert scores[:3] == pytest.approx(expected, abs=1e-6) and np.isnan(scores[3])
    # A tight cluster far from the origin, in float32: distances in float64 keep the precision.
    far = np.vstack([X, np.random.default_rng(1).normal(size=(50, 6)) * 1e-3 + 1e3]).astype(np.float32)
    with_far = np.concatenate([labels, np.full(50, 9)])
    assert silhouettes(far, [with_far])[0] == pytest.approx(silhouette_score(far.astype(np.float64), with_far),
                                                            abs=1e-6)
    with pytest.raises(ValueError, match=r"partitions must have shape \(n_partitions, 500\)"):
        silhouettes(X, labels)


def test_silhouette_counts_each_label_vector_as_one_label():
    X, labels = blobs(n=300, dim=5, n_clusters=4)
    multi_label = np.stack([labels % 2, labels // 2], axis=1)  # 4 distinct rows
    assert silhouette(X, multi_label) == pytest.approx(silhouette_score(X, labels), abs=1e-6)


def test_silhouette_sample_is_reproducible():
    X, labels = blobs(n=400)
    assert silhouette(X, labels, sample_size=10_000) == pytest.approx(silhouette(X, labels))
    sampled = silhouette(X, labels, sample_size=150, random_state=1)
    assert sampled == silhouette(X, labels, sample_size=150, random_state=1)
    assert sampled == pytest.approx(silhouette(X, labels), abs=0.1)


def test_threaded_sums_add_in_an_order_set_by_the_items_not_by_the_threads_timing(monkeypatch):
    from isolib.metrics import _common

    monkeypatch.setattr(_common, "_thread_count", lambda: 4)
    generator = np.random.default_rng(0)
    # Magnitudes from 1e-8 to 1e8: the float64 sum depends on the order of the additions.
    values = generator.normal(size=64) * 10.0 ** generator.integers(-8, 9, size=64)

    def threaded_sum(delays):
        def add(total, item):
            time.sleep(delays[item])  # which thread comes free first changes from call to call
            total += values[item]

        return _common._sum_in_threads(add, range(len(values)), (1,))

    shares = []
    for share in range(4):
        total = 0.0
        for value in values[share::4]:
            total += value
        shares.append(total)
    expected = ((shares[0] + shares[1]) + shares[2]) + shares[3]
    for _ in range(3):
        assert threaded_sum(generator.uniform(0, 2e-3, size=64))[0] == expected


def test_select_kmeans_finds_separated_clusters_and_falls_back_to_one():
    generator = np.random.default_rng(0)
    centres = np.eye(6)[:4] * 20
    labels = generator.integers(4, size=400)
    X = centres[labels] + generator.normal(size=(400, 6))
    chosen = select_kmeans(X, range(2, 7), sample_size=300, n_init=2, random_state=0)
    assert chosen.n_clusters == 4 and chosen.restarts_agreeing == 1.0
    assert list(chosen.by_k().index) == [2, 3, 4, 5, 6] and len(chosen.silhouettes) == 5 * 2
    assert pd.crosstab(chosen.labels, labels).gt(0).sum(axis=1).eq(1).all()  # pure clusters
    # Scored on all points, the kept partition's silhouette is silhouette()'s.
    whole = select_kmeans(X, range(2, 7), sample_size=None, n_init=2, random_state=0)
    assert whole.by_k().silhouette[4] == pytest.approx(silhouette(X, whole.labels), abs=1e-6)
    noise = select_kmeans(gaussian(n=400, dim=50), range(2, 5), n_init=2, random_state=0)
    assert noise.n_clusters == 1 and not noise.labels.any()
    assert noise.silhouettes.silhouette.max() < 0.1


def test_select_kmeans_fitted_on_a_sample_labels_every_point():
    generator = np.random.default_rng(1)
    centres = np.eye(6)[:3] * 20
    labels = generator.integers(3, size=900)
    X = centres[labels] + generator.normal(size=(900, 6))
    sampled = select_kmeans(X, range(2, 5), fit_size=90, n_init=2, random_state=0)
    assert sampled.n_clusters == 3 and len(sampled.labels) == 900
    assert pd.crosstab(sampled.labels, labels).gt(0).sum(axis=1).eq(1).all()  # the unfitted points too
    whole = select_kmeans(X, range(2, 5), fit_size=10_000, n_init=2, random_state=0)
    assert np.array_equal(whole.labels, select_kmeans(X, range(2, 5), n_init=2, random_state=0).labels)


def test_centre_per_cluster_zeroes_every_cluster_mean_and_keeps_dtype():
    X, labels = blobs(n=200)
    centred = centre_per_cluster(X.astype(np.float32), labels)
    assert centred.dtype == np.float32
    for label in np.unique(labels):
        np.testing.assert_allclose(centred[labels == label].mean(axis=0), 0, atol=1e-5)


# ----------------------------------------------------------------------------- reference packages


def test_isoscore_agrees_with_the_isoscore_package():
    from IsoScore import IsoScore  # pip package isoscore 2.0.1: points as rows

    for X in [gaussian(n=500, dim=8), gaussian(n=500, dim=8) * np.arange(1, 9), gaussian(n=5, dim=8)]:
        assert isoscore(X) == pytest.approx(float(IsoScore.IsoScore(X)), abs=1e-6)


def test_lid_agrees_with_scikit_dimension_at_matched_settings():
    skdim = pytest.importorskip("skdim")
    X = subspace(1000, intrinsic=4, ambient=10, seed=5)
    k = 20
    mean, per_point = lid_mle(X, k=k, return_per_point=True)
    reference = skdim.id.MLE().fit(X, n_neighbors=k, comb="mean")
    # skdim's numerator is k - 1 where Cai et al.'s formula has k.
    np.testing.assert_allclose(per_point.to_numpy() * (k - 1) / k, reference.dimension_pw_, rtol=1e-6)
    assert mean * (k - 1) / k == pytest.approx(reference.dimension_, rel=1e-6)


def test_scikit_dimension_defaults_differ_from_cai_et_al():
    """skdim.id.MLE() uses k = 20, numerator k - 1 and a harmonic mean (comb="mle")."""
    skdim = pytest.importorskip("skdim")
    X = subspace(1000, intrinsic=4, ambient=10, seed=6)
    _, per_point = lid_mle(X, k=20, return_per_point=True)
    default = skdim.id.MLE().fit(X).dimension_
    assert default == pytest.approx(1 / np.mean(1 / (per_point.to_numpy() * 19 / 20)), rel=1e-6)
    # The harmonic mean sits below the arithmetic mean Cai et al. report.
    assert default < per_point.mean() * 19 / 20 < per_point.mean()


def test_silhouette_agrees_with_sklearn_on_float32_gaussian_mixture():
    X, labels = blobs(n=1500, dim=64, n_clusters=6, spread=3.0, seed=3)
    assert silhouette(X.astype(np.float32), labels) == pytest.approx(silhouette_score(X, labels), abs=1e-6)


# ----------------------------------------------------------------------------- bad input

GOOD = gaussian(n=30, dim=4) + 0.1
LABELS = np.arange(30) % 3
ON_DIAGONAL = np.eye(30, 4, dtype=bool)
BAD_POINTS = {"nan": np.where(ON_DIAGONAL, np.nan, GOOD), "inf": np.where(ON_DIAGONAL, np.inf, GOOD)}
ALL_MEASURES = {
    "average_cosine": lambda X: average_cosine(X),
    "self_similarity": lambda X: self_similarity(X, LABELS, LABELS),
    "intra_similarity": lambda X: intra_similarity(X, LABELS),
    "anisotropy_baseline": lambda X: anisotropy_baseline(X, LABELS),
    "s_inter": lambda X: s_inter(X, LABELS),
    "s_intra": lambda X: s_intra(X, LABELS),
    "mev": lambda X: mev(X),
    "mev_baseline": lambda X: mev_baseline(X),
    "explained_variance": lambda X: explained_variance(X),
    "effective_rank": lambda X: effective_rank(X),
    "isoscore": lambda X: isoscore(X),
    "partition_isotropy": lambda X: partition_isotropy(X),
    "lid_mle": lambda X: lid_mle(X, k=5),
    "silhouette": lambda X: silhouette(X, LABELS),
    "select_kmeans": lambda X: select_kmeans(X, range(2, 4)),
    "centre_per_cluster": lambda X: centre_per_cluster(X, LABELS),
}


@pytest.mark.parametrize("name", ALL_MEASURES)
@pytest.mark.parametrize("bad", BAD_POINTS)
def test_nan_and_infinity_are_rejected(name, bad):
    with pytest.raises(ValueError, match="NaN or infinity"):
        ALL_MEASURES[name](BAD_POINTS[bad])


@pytest.mark.parametrize("name", ALL_MEASURES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_values_too_large_to_square_are_refused_in_one_sentence(name, dtype):
    # Before: LinAlgError "Eigenvalues did not converge" (IsoScore, I(W), MEV), inf or 0.0 with warnings only.
    huge = (GOOD * (1e300 if dtype == np.float64 else 1e30)).astype(dtype)
    with pytest.raises(ValueError, match=r"^X has values up to .* too large to square and sum"):
        ALL_MEASURES[name](huge)


def test_labels_that_are_not_an_array_are_refused_in_one_sentence():
    # Before: TypeError "len() of unsized object".
    with pytest.raises(ValueError, match=r"^labels must be an array of shape \(n_samples,\)"):
        silhouette(GOOD, 3)


@pytest.mark.parametrize("name", ALL_MEASURES)
def test_one_dimensional_input_is_rejected(name):
    with pytest.raises(ValueError, match="2-D array"):
        ALL_MEASURES[name](GOOD[:, 0])


@pytest.mark.parametrize("name", ALL_MEASURES)
@pytest.mark.parametrize("kind", ["csr_matrix", "csr_array", "coo_matrix"])
def test_sparse_input_is_rejected_with_one_sentence(name, kind):
    sparse = getattr(scipy.sparse, kind)(GOOD)
    with pytest.raises(ValueError, match=r"^X is a scipy sparse matrix; pass a dense array \(X\.toarray\(\)\)"):
        ALL_MEASURES[name](sparse)


@pytest.mark.parametrize(
    "call",
    [
        lambda: self_similarity(GOOD, LABELS[:-1]),
        lambda: self_similarity(GOOD, LABELS, LABELS[:-1]),
        lambda: intra_similarity(GOOD, LABELS[:-1]),
        lambda: anisotropy_baseline(GOOD, LABELS[:-1]),
        lambda: s_inter(GOOD, LABELS[:-1]),
        lambda: s_intra(GOOD, LABELS[:-1]),
        lambda: silhouette(GOOD, LABELS[:-1]),
        lambda: centre_per_cluster(GOOD, LABELS[:-1]),
    ],
)
def test_mismatched_lengths_are_rejected(call):
    with pytest.raises(ValueError, match="they must match"):
        call()


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: average_cosine(GOOD[:1]), "at least 2"),
        (lambda: isoscore(GOOD[:1]), "at least 2"),
        (lambda: silhouette(GOOD[:1], [0]), "at least 3"),
        (lambda: lid_mle(GOOD[:1]), "at least 2"),
        (lambda: mev(GOOD[:1], centered=True), "at least 2"),
        (lambda: lid_mle(GOOD, k=30), "k=30 must be smaller than the number of distinct points"),
        (lambda: lid_mle(np.vstack([GOOD[:5]] * 4), k=5), r"number of distinct points \(5\)"),
        (lambda: lid_mle(GOOD, k=0), "k must be at least 1"),
        (lambda: lid_mle(GOOD, metric="manhattan"), "metric must be"),
        (lambda: lid_mle(GOOD, k=5, queries=[0, 30]), "outside"),
        (lambda: lid_mle(GOOD, k=5, queries=31), "queries must be at least 1 and at most 30"),
        (lambda: lid_mle(GOOD, k=5, queries=[0.5]), "row indices"),
        (lambda: average_cosine(GOOD, n_pairs=0), "n_pairs must be at least 1"),
        (lambda: s_intra(GOOD, LABELS, max_instances=1), "max_instances must be at least 2"),
        (lambda: s_intra(GOOD, np.arange(30)), "no type in labels has at least 2 instances"),
        (lambda: s_inter(GOOD, np.zeros(30)), "at least 2"),
        (lambda: anisotropy_baseline(GOOD, np.zeros(30)), "single context"),
        (lambda: silhouette(GOOD, np.zeros(30)), "between 2 and 29"),
        (lambda: silhouette(GOOD, np.arange(30)), "between 2 and 29"),
        (lambda: select_kmeans(GOOD, range(2, 40)), "k in k_range must be at least 2 and at most 29"),
        (lambda: select_kmeans(GOOD, []), "k_range is empty"),
        (lambda: self_similarity(GOOD, [None] * 30), "missing values"),
        (lambda: isoscore(GOOD[:, :1]), "at least 2 dimensions"),
    ],
)
def test_bad_arguments_raise_one_clear_sentence(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize(
    "call",
    [
        lambda X: average_cosine(X),
        lambda X: self_similarity(X, LABELS),
        lambda X: intra_similarity(X, LABELS),
        lambda X: s_inter(X, LABELS),
        lambda X: s_intra(X, LABELS),
        lambda X: anisotropy_baseline(X, LABELS),
        lambda X: lid_mle(X, k=5, metric="cosine"),
    ],
)
def test_zero_vectors_are_rejected_by_cosine_measures(call):
    X = GOOD.copy()
    X[4] = 0
    with pytest.raises(ValueError, match=r"1 zero vector\(s\) \(first at row 4\)"):
        call(X)


def test_degenerate_clouds_raise_instead_of_returning_nonsense():
    identical = np.ones((10, 3))
    with pytest.raises(ValueError, match="identical"):
        isoscore(identical)
    with pytest.raises(ValueError, match="identical"):
        mev(identical, centered=True)
    with pytest.raises(ValueError, match="all zeros"):
        mev(np.zeros((10, 3)))
    with pytest.raises(ValueError, match="all zeros"):
        effective_rank(np.zeros((10, 3)))
    with pytest.raises(ValueError, match="distinct points"):
        lid_mle(identical, k=1)
    # Identical points in two clusters: a = b = 0 for every point, scored 0 as in scikit-learn.
    assert silhouette(identical, np.arange(10) % 2) == 0.0
    # Identical points are perfectly aligned: cosine 1, no variance off the line.
    assert average_cosine(identical) == pytest.approx(1.0)
    assert mev(identical) == pytest.approx(1.0)
    # An all-zero matrix has no directions: I(W) is undefined, not 1.
    with pytest.raises(ValueError, match=r"X is all zeros, so I\(W\) is undefined"):
        partition_isotropy(np.zeros((5, 3)))
    with pytest.raises(ValueError, match=r"X is all zeros, so I\(W\) is undefined"):
        partition_isotropy(np.zeros((5, 3), dtype=np.float32))
    # All-zero points are identical points for IsoScore.
    with pytest.raises(ValueError, match="identical"):
        isoscore(np.zeros((10, 3)))


@pytest.mark.parametrize("measure", list(ALL_MEASURES))
def test_complex_points_are_refused_not_cast(measure):
    with pytest.raises(ValueError, match=r"^X holds complex numbers, whose imaginary part this measure would drop; "):
        ALL_MEASURES[measure](GOOD + 1j * GOOD)


def test_each_degenerate_input_is_named_by_its_cause():
    # Two points admit no labelling with 2 clusters and one of at least 2 points: too few points, not bad labels.
    with pytest.raises(ValueError, match=r"^X has 2 samples but this measure needs at least 3\.$"):
        silhouette(GOOD[:2], [0, 1])
    with pytest.raises(ValueError, match=r"^sample_size must be at least 3"):
        silhouette(GOOD, LABELS, sample_size=2)
    # Six distinct points on one line through the origin: the cosine metric sees one direction, not one point.
    on_a_line = np.outer(np.arange(1.0, 7.0), [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"number of distinct directions \(\d\) of X, "):
        lid_mle(on_a_line, k=2, metric="cosine")
    # Only the drawn rows are all zeros: X is not.
    mostly_zero = np.vstack([np.zeros((99, 3)), np.ones((1, 3))])
    with pytest.raises(ValueError, match=r"^the 2 rows drawn from X are all zeros, so their MEV is undefined"):
        mev_baseline(mostly_zero, n_samples=2, random_state=0)
    with pytest.raises(ValueError, match=r"^X is all zeros"):
        mev_baseline(np.zeros((100, 3)), n_samples=2, random_state=0)


def test_module_exports_every_public_function():
    for name in metrics.__all__:
        assert getattr(metrics, name).__doc__


# ----------------------------------------------------------------------------- real embeddings

REAL_LAYERS = [("minilm", 3), ("minilm", -1), ("smollm2", 15), ("smollm2", -1)]


@pytest.fixture(scope="module")
def real_layers(minilm, smollm2, tmp_path_factory):
    """Token vectors of 120 STS sentences: MiniLM layer 3 (its [CLS] vectors are near-duplicates),
    its last layer, SmolLM2's middle layer (norms up to about 28,000) and its last layer."""
    from isolib.datasets import sample_sentences, sts_sentences
    from isolib.embed import embed

    models = {"minilm": minilm, "smollm2": smollm2}
    sentences = sample_sentences(sts_sentences(), 120, random_state=0)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ISOLIB_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        return {
            (name, layer): np.asarray(embed(models[name], sentences, layers=[layer]).layer(layer), dtype=np.float64)
            for name, layer in REAL_LAYERS
        }


def distinct(X):
    return X[neighbours._first_distinct_rows(X)[0]]


@pytest.mark.parametrize("layer", REAL_LAYERS, ids=lambda layer: f"{layer[0]}-{layer[1]}")
def test_lid_matches_brute_force_on_real_embeddings(real_layers, layer):
    X = distinct(real_layers[layer])
    rows = np.random.default_rng(0).choice(len(X), size=200, replace=False)
    expected = brute_force_lid(X, 20, rows)
    _, per_point = lid_mle(X, k=20, queries=rows, return_per_point=True)
    np.testing.assert_allclose(per_point.to_numpy(), expected, rtol=1e-10)
    # float32 input: the float32 coordinates' own rounding, nothing more.
    X32 = X.astype(np.float32)
    _, per_point = lid_mle(X32, k=20, queries=rows, return_per_point=True)
    np.testing.assert_allclose(per_point.to_numpy(), brute_force_lid(X32.astype(np.float64), 20, rows), rtol=1e-5)


def test_lid_certificate_catches_near_duplicates_below_float32_resolution(real_layers):
    """MiniLM layer 3's [CLS] vectors lie within 0.013 of each other at norms near 13: the float32
    products cannot rank them, so the certificate sends those rows to the float64 search."""
    X = distinct(real_layers[("minilm", 3)])
    cls_rows = np.flatnonzero(np.linalg.norm(X - X[0], axis=1) < 0.02)
    assert len(cls_rows) >= 100
    _, per_point = lid_mle(X.astype(np.float32), k=20, queries=cls_rows, return_per_point=True)
    expected = brute_force_lid(X.astype(np.float32).astype(np.float64), 20, cls_rows)
    np.testing.assert_allclose(per_point.to_numpy(), expected, rtol=1e-5)


@pytest.mark.parametrize("layer", [("minilm", 3), ("minilm", -1)], ids=["minilm-3", "minilm-last"])
def test_lid_agrees_with_scikit_dimension_on_real_embeddings(real_layers, layer):
    skdim = pytest.importorskip("skdim")
    X, k = distinct(real_layers[layer]), 20
    mean, per_point = lid_mle(X, k=k, return_per_point=True)
    reference = skdim.id.MLE().fit(X, n_neighbors=k, comb="mean")
    np.testing.assert_allclose(per_point.to_numpy() * (k - 1) / k, reference.dimension_pw_, rtol=1e-6)
    assert mean * (k - 1) / k == pytest.approx(reference.dimension_, rel=1e-6)


def test_lid_keeps_float64_precision_on_large_norms_where_scikit_dimension_may_not(real_layers):
    """On SmolLM2's middle layer scikit-dimension can err by about 1e-4 per point: scikit-learn's
    k-NN expands ||x||^2 + ||y||^2 - 2 x.y on the uncentred vectors, whose norms reach 28,000 (seen
    with AVX-512 kernels; with AVX2's it erred by 4e-12, so how far depends on the CPU). isolib
    re-ranks from differences and stays at float64 precision on any CPU."""
    skdim = pytest.importorskip("skdim")
    X, k = distinct(real_layers[("smollm2", 15)]), 20
    rows = np.arange(0, len(X), 5)
    expected = brute_force_lid(X, k, rows) * (k - 1) / k
    _, per_point = lid_mle(X, k=k, queries=rows, return_per_point=True)
    reference = skdim.id.MLE().fit(X, n_neighbors=k, comb="mean").dimension_pw_[rows]
    assert np.max(np.abs(per_point.to_numpy() * (k - 1) / k / expected - 1)) < 1e-10
    assert np.max(np.abs(reference / expected - 1)) < 1e-3


@pytest.mark.parametrize("layer", REAL_LAYERS, ids=lambda layer: f"{layer[0]}-{layer[1]}")
def test_isoscore_agrees_with_the_isoscore_package_on_real_embeddings(real_layers, layer):
    from IsoScore import IsoScore

    X = real_layers[layer]
    assert isoscore(X) == pytest.approx(float(IsoScore.IsoScore(X)), abs=1e-6)


@pytest.mark.parametrize("layer", REAL_LAYERS, ids=lambda layer: f"{layer[0]}-{layer[1]}")
def test_silhouette_agrees_with_sklearn_on_real_embeddings(real_layers, layer):
    """Float32 input, clusters that are tight and far from the origin ([CLS] vectors, SmolLM2's
    middle layer): per-block centring keeps the value within 1e-6 of scikit-learn's float64 one."""
    from sklearn.cluster import KMeans

    X = real_layers[layer]
    labels = KMeans(n_clusters=4, n_init=3, random_state=0).fit_predict(X)
    assert silhouette(X.astype(np.float32), labels) == pytest.approx(silhouette_score(X, labels), abs=1e-6)
