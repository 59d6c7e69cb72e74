import numpy as np
import pandas as pd
import pytest
import torch

import isolib.probe as probe_module
from isolib.probe import correlations, make_probe, train_probe

torch.set_num_threads(1)


def two_class_problem(n=200, dim=16, seed=0):
    generator = np.random.default_rng(seed)
    return generator.normal(size=(n, dim)), np.repeat(["neg", "pos"], n // 2)


def test_isoscore_falls_and_silhouette_rises_while_training():
    X, y = two_class_problem()
    trace = train_probe(X, y, n_updates=100, lr=1e-2, seeds=(0, 1))
    assert list(trace.columns) == ["seed", "update", "loss", "isoscore", "silhouette"]
    assert len(trace) == 2 * 101
    for _, run in trace.groupby("seed"):
        first, last = run.iloc[0], run.iloc[-1]
        assert last["loss"] < first["loss"]
        assert last["isoscore"] < first["isoscore"] - 0.05
        assert last["silhouette"] > first["silhouette"] + 0.05
    assert (correlations(trace) < -0.9).all().all()


def test_training_is_deterministic_per_seed_and_leaves_global_rng_alone():
    X, y = two_class_problem(n=60, dim=6)
    state = torch.get_rng_state()
    first = train_probe(X, y, n_updates=10, seeds=(3,))
    assert torch.equal(state, torch.get_rng_state())
    pd.testing.assert_frame_equal(first, train_probe(X, y, n_updates=10, seeds=(3,)))
    other = train_probe(X, y, n_updates=10, seeds=(4,))
    assert not np.allclose(first["loss"], other["loss"])


def test_resume_stores_each_seed_and_reads_it_back(cache_dir, monkeypatch):
    X, y = two_class_problem(n=60, dim=6)
    fresh = train_probe(X, y, n_updates=5, seeds=(0, 1))
    stored = train_probe(X, y, n_updates=5, seeds=(0,), resume=True)
    train_seed = probe_module._train_seed
    trained = []
    monkeypatch.setattr(probe_module, "_train_seed", lambda *args, **kwargs: trained.append(kwargs["seed"])
                        or train_seed(*args, **kwargs))
    resumed = train_probe(X, y, n_updates=5, seeds=(0, 1), resume=True)
    assert trained == [1]  # seed 0 was read back; the control: seed 1, never stored, is trained
    pd.testing.assert_frame_equal(resumed, fresh)
    pd.testing.assert_frame_equal(stored, fresh[fresh.seed == 0])
    assert resumed.attrs["n_parameters"] == fresh.attrs["n_parameters"]
    train_probe(X, y, n_updates=5, seeds=(0,), lr=1e-2, resume=True)  # another option: trained again
    assert trained == [1, 0]


def test_records_every_kth_update_and_the_last():
    X, y = two_class_problem(n=40, dim=4)
    trace = train_probe(X, y, n_updates=7, every=3, seeds=(0,))
    assert trace["update"].tolist() == [0, 3, 6, 7]


def test_multilabel_sigmoid_path_uses_distinct_label_vectors():
    generator = np.random.default_rng(0)
    X = generator.normal(size=(90, 8))
    label_vectors = np.array([[1, 0, 0], [0, 1, 1], [1, 1, 0]])
    Y = label_vectors[np.repeat([0, 1, 2], 30)]
    trace = train_probe(X, Y, loss="sigmoid", n_updates=40, lr=1e-2, seeds=(0,))
    assert trace["loss"].iloc[-1] < trace["loss"].iloc[0]
    assert trace["silhouette"].iloc[-1] > trace["silhouette"].iloc[0]
    assert trace.attrs["n_parameters"] == 90 * 8 + 3 * 9


def test_paired_inputs_over_unique_sentences():
    generator = np.random.default_rng(0)
    sentences = generator.normal(size=(30, 8))
    pair_index = generator.integers(0, 30, size=(45, 2))
    labels = np.arange(45) % 3
    trace = train_probe(sentences, labels, item_index=pair_index, n_updates=30, lr=1e-2, seeds=(0,))
    assert trace["silhouette"].iloc[-1] > trace["silhouette"].iloc[0]
    assert trace.attrs["n_parameters"] == 30 * 8 + 3 * 16 + 3


def test_repeated_sentences_share_one_vector():
    # Items 10..19 repeat sentences 0..9: as many vectors as unique sentences, as in the GLUE appendix.
    X, y = two_class_problem(n=10, dim=4)
    item_index = np.r_[np.arange(10), np.arange(10)]
    indexed = train_probe(X, np.r_[y, y], item_index=item_index, n_updates=5, seeds=(0,))
    assert indexed.attrs["n_parameters"] == 10 * 4 + 2 * 4 + 2
    # Each sentence counted twice with its label: the same loss, hence the same steps, as once.
    plain = train_probe(X, y, n_updates=5, seeds=(0,))
    np.testing.assert_allclose(indexed["loss"], plain["loss"], rtol=1e-5)
    np.testing.assert_allclose(indexed["isoscore"], plain["isoscore"], rtol=1e-5)


def test_metrics_on_random_samples_stay_reproducible():
    X, y = two_class_problem(n=80, dim=4)
    first = train_probe(X, y, n_updates=5, seeds=(0,), sample_size=30)
    pd.testing.assert_frame_equal(first, train_probe(X, y, n_updates=5, seeds=(0,), sample_size=30))
    assert not first.equals(train_probe(X, y, n_updates=5, seeds=(0,)))


def test_other_labels_add_a_silhouette_of_the_same_points_per_labelling():
    X, y = two_class_problem(n=80, dim=6)
    other = np.tile(["a", "b"], 40)  # another split of the same items
    trace = train_probe(X, y, n_updates=40, lr=1e-2, seeds=(0,), other_labels={"other": other, "same": y})
    assert list(trace.columns) == ["seed", "update", "loss", "isoscore", "silhouette", "silhouette_other",
                                   "silhouette_same"]
    plain = train_probe(X, y, n_updates=40, lr=1e-2, seeds=(0,))
    # The training is untouched: the same loss; the trained labels' silhouette agrees between the two functions
    # (isolib.metrics.silhouettes sums distances per cluster in float32: to 1e-7).
    np.testing.assert_array_equal(trace["loss"], plain["loss"])
    np.testing.assert_allclose(trace["silhouette"], plain["silhouette"], atol=1e-7)
    np.testing.assert_allclose(trace["silhouette_same"], trace["silhouette"], atol=1e-12)
    # The control: against labels it was not trained on, the silhouette does not rise as the trained one does.
    assert trace["silhouette"].iloc[-1] - trace["silhouette"].iloc[0] > 0.05
    assert trace["silhouette_other"].iloc[-1] - trace["silhouette_other"].iloc[0] < 0.01
    with pytest.raises(ValueError, match="y has 79 rows"):
        train_probe(X, y, n_updates=2, other_labels={"short": y[:79]})


@pytest.mark.parametrize("loss", ["softmax", "sigmoid"])
def test_a_label_free_run_ignores_the_labels(loss):
    X, y = two_class_problem(n=80, dim=6)
    labels = (y == "pos").astype(int) if loss == "softmax" else np.eye(2, dtype=int)[(y == "pos").astype(int)]
    flipped = labels[::-1]  # other labels of the same items
    free = train_probe(X, labels, loss=loss, n_updates=30, lr=1e-2, seeds=(0,), label_free=True)
    again = train_probe(X, flipped, loss=loss, n_updates=30, lr=1e-2, seeds=(0,), label_free=True)
    # The same steps whatever the labels: only the silhouette, measured against them, differs.
    np.testing.assert_array_equal(free["loss"], again["loss"])
    np.testing.assert_array_equal(free["isoscore"], again["isoscore"])
    # Its loss falls towards that of uniform predictions (log 2 for 2 classes or per label), and the
    # control: trained on the labels, the silhouette rises where label-free it does not.
    assert free["loss"].iloc[-1] <= free["loss"].iloc[0] and free["loss"].iloc[-1] >= np.log(2) - 1e-6
    trained = train_probe(X, labels, loss=loss, n_updates=30, lr=1e-2, seeds=(0,))
    rise = lambda trace: trace["silhouette"].iloc[-1] - trace["silhouette"].iloc[0]  # noqa: E731
    assert rise(trained) > 0.05 > abs(rise(free))


@pytest.mark.parametrize(
    "shape, n_outputs, bias, paired, expected",
    [
        ((10, 4), 2, False, False, 10 * 4 + 2 * 4),
        ((6, 4), 3, True, True, 6 * 4 + 3 * 8 + 3),
        ((5, 3), 4, True, False, 5 * 3 + 4 * 4),
        # The paper's Table 1: (i) polarity, (ii) SNLI, (iv) supersenses.
        ((10_662, 384), 2, False, False, 4_094_976),
        ((12_982, 384), 3, True, True, 4_987_395),
        ((2_275, 300), 26, True, False, 690_326),
    ],
)
def test_parameter_counts_match_the_paper_setups(shape, n_outputs, bias, paired, expected):
    probe = make_probe(np.zeros(shape, dtype=np.float32), n_outputs, bias=bias, paired=paired)
    assert probe.n_parameters == expected


def test_correlations_per_seed():
    trace = pd.DataFrame(
        {
            "seed": [0, 0, 0, 1, 1, 1],
            "update": [0, 1, 2] * 2,
            "loss": [1.0] * 6,
            "isoscore": [0.9, 0.5, 0.1, 0.9, 0.5, 0.4],
            "silhouette": [0.1, 0.2, 0.3, 0.1, 0.2, 0.9],
        }
    )
    result = correlations(trace)
    assert list(result.index) == [0, 1] and list(result.columns) == ["pearson", "spearman"]
    assert result.loc[0, "pearson"] == pytest.approx(-1) and result.loc[1, "spearman"] == pytest.approx(-1)
    assert result.loc[1, "pearson"] == pytest.approx(np.corrcoef([0.9, 0.5, 0.4], [0.1, 0.2, 0.9])[0, 1])
    with pytest.raises(ValueError, match="lacks the column"):
        correlations(trace.drop(columns="silhouette"))
    with pytest.raises(ValueError, match="fewer than 2"):
        correlations(trace.iloc[:4])


X_SMALL, Y_SMALL = two_class_problem(n=10, dim=3)


@pytest.mark.parametrize(
    "args, kwargs, message",
    [
        ((X_SMALL, Y_SMALL[:9]), {}, "y has 9 rows but there are 10"),
        ((X_SMALL, np.zeros(10)), {}, "single distinct label"),
        ((X_SMALL, np.ones((10, 2))), {}, "1-D"),
        ((X_SMALL, np.full((10, 2), 2)), {"loss": "sigmoid"}, "0/1"),
        ((X_SMALL, Y_SMALL), {"loss": "hinge"}, "loss must be one of"),
        ((X_SMALL, Y_SMALL), {"n_updates": 0}, "n_updates must be at least 1"),
        ((X_SMALL, Y_SMALL), {"every": 0}, "every must be at least 1"),
        ((X_SMALL, Y_SMALL), {"lr": 0.0}, "lr must be positive"),
        ((X_SMALL, Y_SMALL), {"seeds": ()}, "seeds is empty"),
        ((X_SMALL, Y_SMALL), {"item_index": np.array([[0, 10]] * 10)}, "index rows 0 .. 9"),
        ((X_SMALL, Y_SMALL), {"item_index": np.zeros((10, 3), dtype=int)}, "shape \\(n_items,\\) or \\(n_pairs, 2\\)"),
        ((X_SMALL, Y_SMALL), {"item_index": np.arange(10.0)}, "integer array"),
        ((np.where(np.eye(10, 3), np.nan, X_SMALL), Y_SMALL), {}, "NaN"),
        ((X_SMALL[:1], Y_SMALL[:1]), {}, "at least 2"),
    ],
)
def test_bad_input_raises_one_sentence(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        train_probe(*args, n_updates=kwargs.pop("n_updates", 2), **kwargs)
