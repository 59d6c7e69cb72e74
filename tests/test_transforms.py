import numpy as np
import pytest

from isolib.metrics import isoscore
from isolib.transforms import ClusterIsotropy, abtt, centre, cluster_isotropy, drop_top_dimensions, standardise, whiten


def anisotropic_cloud(n=400, dim=10, shift=5.0, seed=0):
    """Gaussian cloud with one dominant axis per decreasing scale, off the origin."""
    generator = np.random.default_rng(seed)
    return generator.normal(size=(n, dim)) * np.geomspace(10, 0.5, dim) + shift


def top_directions(X, k):
    """Leading principal directions of X, as rows (independent reference: SVD)."""
    _, _, vt = np.linalg.svd(X - X.mean(axis=0), full_matrices=False)
    return vt[:k]


def test_centre_gives_zero_mean_and_leaves_input_alone():
    X = anisotropic_cloud()
    before = X.copy()
    centred = centre(X)
    assert centred.dtype == np.float64
    np.testing.assert_allclose(centred.mean(axis=0), 0, atol=1e-12)
    np.testing.assert_array_equal(X, before)


def test_abtt_is_zero_mean_and_orthogonal_to_removed_directions():
    X = anisotropic_cloud()
    result = abtt(X, 3)
    np.testing.assert_allclose(result.mean(axis=0), 0, atol=1e-10)
    np.testing.assert_allclose(result @ top_directions(X, 3).T, 0, atol=1e-8)
    # The remaining directions are untouched.
    kept = top_directions(X, 10)[3:]
    np.testing.assert_allclose(result @ kept.T, centre(X) @ kept.T, atol=1e-8)


def test_abtt_with_zero_components_is_centring():
    X = anisotropic_cloud()
    np.testing.assert_allclose(abtt(X, 0), centre(X))


def test_abtt_projects_centred_not_raw_vectors():
    # The copied gist subtracts projections of the raw vectors: with a mean that is
    # not orthogonal to the top directions, it leaves an offset of -(mean . u) u.
    X = anisotropic_cloud(shift=5.0)
    directions = top_directions(X, 2)
    gist = centre(X) - (X @ directions.T) @ directions
    ours = abtt(X, 2)
    offset = -(X.mean(axis=0) @ directions.T) @ directions
    np.testing.assert_allclose(gist.mean(axis=0), offset, atol=1e-8)
    assert np.abs(offset).max() > 1
    np.testing.assert_allclose(ours, gist - offset, atol=1e-8)


def two_shifted_clusters(seed=0):
    generator = np.random.default_rng(seed)
    scales = np.geomspace(4, 1, 8)
    first = generator.normal(size=(150, 8)) * scales
    second = generator.normal(size=(150, 8)) * scales[::-1] + 60
    return np.vstack([first, second]), np.repeat([0, 1], 150)


@pytest.mark.parametrize("method", ["kmeans", "gmm"])
def test_cluster_isotropy_centres_each_cluster_and_nulls_its_directions(method):
    X, truth = two_shifted_clusters()
    result, labels = cluster_isotropy(X, 2, 2, method=method, random_state=0)
    assert result.shape == X.shape and labels.shape == (len(X),)
    assert abs(np.corrcoef(labels, truth)[0, 1]) == pytest.approx(1)
    for cluster in (0, 1):
        members = labels == cluster
        np.testing.assert_allclose(result[members].mean(axis=0), 0, atol=1e-10)
        np.testing.assert_allclose(result[members] @ top_directions(X[members], 2).T, 0, atol=1e-8)
    assert isoscore(result) > isoscore(X) + 0.3


def test_cluster_isotropy_without_pcs_is_per_cluster_centring():
    X, _ = two_shifted_clusters()
    result, labels = cluster_isotropy(X, 2, 0, random_state=0)
    for cluster in (0, 1):
        members = labels == cluster
        np.testing.assert_allclose(result[members], centre(X[members]))


def test_cluster_isotropy_can_keep_cluster_means():
    X, _ = two_shifted_clusters()
    result, labels = cluster_isotropy(X, 2, 2, remove_mean=False, random_state=0)
    for cluster in (0, 1):
        members = labels == cluster
        np.testing.assert_allclose(result[members].mean(axis=0), X[members].mean(axis=0), atol=1e-10)


def test_cluster_isotropy_is_reproducible_per_seed():
    X = anisotropic_cloud(n=200)
    for make_state in (lambda: 3, lambda: np.random.default_rng(3)):
        first = cluster_isotropy(X, 4, 1, random_state=make_state())
        again = cluster_isotropy(X, 4, 1, random_state=make_state())
        np.testing.assert_array_equal(first[0], again[0])
        np.testing.assert_array_equal(first[1], again[1])


def test_methods_table_of_rajaee_is_expressible():
    X, _ = two_shifted_clusters()
    methods = {
        "pre-trained": X,
        "Mean": centre(X),
        "Mean + PCA": abtt(X, 2),
        "K-means + Mean": cluster_isotropy(X, 2, 0, random_state=0)[0],
        "GMM + Mean + PCA": cluster_isotropy(X, 2, 2, method="gmm", random_state=0)[0],
        "K-means + Mean + PCA": cluster_isotropy(X, 2, 2, random_state=0)[0],
    }
    assert all(result.shape == X.shape for result in methods.values())


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: centre([[0.0, np.nan]]), "NaN"),
        (lambda: abtt(np.ones((1, 3)), 1), "at least 2"),
        (lambda: abtt(np.eye(4), 5), "n_components"),
        (lambda: abtt(np.eye(4), 1.5), "integer"),
        (lambda: abtt(np.ones(4), 1), "2-D"),
        (lambda: cluster_isotropy(np.eye(4), 5, 0), "n_clusters"),
        (lambda: cluster_isotropy(np.eye(4), 2, 5), "n_pc"),
        (lambda: cluster_isotropy(np.eye(4), 2, 1, method="dbscan"), "method"),
        (lambda: cluster_isotropy([[np.inf, 0.0], [0.0, 1.0]], 1, 0), "NaN or infinity"),
    ],
)
def test_bad_input_raises_one_sentence(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_cluster_smaller_than_n_pc_raises():
    generator = np.random.default_rng(0)
    X = np.vstack([generator.normal(size=(50, 6)), generator.normal(size=(3, 6)) + 100])
    with pytest.raises(ValueError, match=r"cluster \d has 3 points but n_pc=5"):
        cluster_isotropy(X, 2, 5, random_state=0)


def test_cluster_isotropy_fitted_on_one_set_transforms_another_with_its_means_and_directions():
    X, _ = two_shifted_clusters()
    train, held_out = X[::2], X[1::2]
    estimator = ClusterIsotropy(2, 2, random_state=0).fit(train)
    transformed = estimator.transform(held_out)
    labels = estimator.predict(held_out)
    for cluster in (0, 1):
        members = labels == cluster
        centred = held_out[members] - train[estimator.labels_ == cluster].mean(axis=0)  # the training mean
        np.testing.assert_allclose(transformed[members] @ estimator.directions_[cluster], 0, atol=1e-8)
        removed = centred @ estimator.directions_[cluster] @ estimator.directions_[cluster].T
        np.testing.assert_allclose(transformed[members], centred - removed)
    # Transductive use is fit then transform of the same vectors.
    np.testing.assert_allclose(cluster_isotropy(train, 2, 2, random_state=0)[0], estimator.transform(train))


def test_small_clusters_raise_or_merge_into_the_nearest_kept_cluster():
    X, _ = two_shifted_clusters()
    outliers = np.full((3, X.shape[1]), 500.0) + np.arange(3)[:, None]  # a cluster of 3 points, far away
    data = np.vstack([X, outliers])
    with pytest.raises(ValueError, match="has 3 points but n_pc=5"):
        cluster_isotropy(data, 3, 5, random_state=0)
    estimator = ClusterIsotropy(3, 5, small_clusters="merge", random_state=0)
    transformed = estimator.fit_transform(data)
    assert len(np.unique(estimator.labels_)) == 2
    assert len(set(estimator.labels_[-3:])) == 1 and estimator.labels_[-1] == estimator.labels_[149 + 150]  # with the far cluster
    for cluster in np.unique(estimator.labels_):
        np.testing.assert_allclose(transformed[estimator.labels_ == cluster].mean(axis=0), 0, atol=1e-8)
    with pytest.raises(ValueError, match="small_clusters must be one of"):
        ClusterIsotropy(2, 1, small_clusters="drop")


def test_a_clusterer_fitted_on_a_sample_still_assigns_and_processes_every_vector():
    X, truth = two_shifted_clusters()
    estimator = ClusterIsotropy(2, 2, method="gmm", fit_size=40, random_state=0)
    transformed = estimator.fit_transform(X)
    assert abs(np.corrcoef(estimator.labels_, truth)[0, 1]) == pytest.approx(1)
    for cluster in (0, 1):
        np.testing.assert_allclose(transformed[estimator.labels_ == cluster].mean(axis=0), 0, atol=1e-8)
    again = ClusterIsotropy(2, 2, method="gmm", fit_size=40, random_state=0).fit_transform(X)
    np.testing.assert_array_equal(transformed, again)


def test_whitening_gives_identity_covariance_and_an_isoscore_of_one():
    X = anisotropic_cloud() @ np.random.default_rng(1).normal(size=(10, 10))  # correlated coordinates
    before = X.copy()
    white = whiten(X)
    np.testing.assert_array_equal(X, before)
    np.testing.assert_allclose(white.mean(axis=0), 0, atol=1e-10)
    np.testing.assert_allclose(np.cov(white, rowvar=False), np.eye(10), atol=1e-8)
    assert isoscore(white) == pytest.approx(1, abs=1e-9)
    # ZCA: the whitening nearest to the input; a rotation of the input whitens to the same rotation.
    rotation, _ = np.linalg.qr(np.random.default_rng(2).normal(size=(10, 10)))
    np.testing.assert_allclose(whiten(X @ rotation), white @ rotation, atol=1e-8)


def test_whitening_with_fewer_points_than_dimensions_whitens_the_directions_it_has():
    X = np.random.default_rng(0).normal(size=(6, 10))
    white = whiten(X)
    covariance = np.cov(white, rowvar=False)
    np.testing.assert_allclose(covariance @ covariance, covariance, atol=1e-8)  # a projector
    assert np.trace(covariance) == pytest.approx(5)  # rank n - 1
    with pytest.raises(ValueError, match="identical"):
        whiten(np.ones((4, 3)))


def test_standardise_makes_every_coordinate_zero_mean_unit_variance_and_ignores_affine_changes():
    X = anisotropic_cloud()
    result = standardise(X)
    np.testing.assert_allclose(result.mean(axis=0), 0, atol=1e-10)
    np.testing.assert_allclose(result.std(axis=0), 1)
    rogue = X.copy()
    rogue[:, 3] = 40 * rogue[:, 3] + 500  # a rogue dimension: huge mean and variance
    np.testing.assert_allclose(standardise(rogue), result, atol=1e-9)
    constant = np.column_stack([X[:, :2], np.full(len(X), 7.0)])
    np.testing.assert_array_equal(standardise(constant)[:, 2], 0)


def test_drop_top_dimensions_removes_the_coordinates_of_largest_variance_only():
    X = anisotropic_cloud()  # variances fall with the coordinate's index
    np.testing.assert_array_equal(drop_top_dimensions(X, 0), X)
    np.testing.assert_array_equal(drop_top_dimensions(X, 3), X[:, 3:])
    shuffled = X[:, ::-1]
    np.testing.assert_array_equal(drop_top_dimensions(shuffled, 2), shuffled[:, :-2])
    with pytest.raises(ValueError, match="n_dimensions"):
        drop_top_dimensions(X, 10)
