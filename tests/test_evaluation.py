import numpy as np
import pandas as pd
import pytest
from scipy import stats

from isolib.evaluation import (
    STSResult,
    WordBenchmarkResult,
    WordVectors,
    analogy_accuracy,
    as_word_vectors,
    categorization_purity,
    mean_pool,
    relational_similarity,
    sts_correlation,
    word_similarity,
)

# --- sentences -------------------------------------------------------------


def pairs_with_cosines(cosines, scale_seed=0):
    """Pairs (u, v) in 2-D whose cosines are exactly ``cosines``, with arbitrary norms."""
    angles = np.arccos(cosines)
    scales = np.random.default_rng(scale_seed).uniform(0.5, 3, size=(len(angles), 1))
    u = np.tile([1.0, 0.0], (len(angles), 1)) * scales
    v = np.stack([np.cos(angles), np.sin(angles)], axis=1) * scales[::-1]
    return u, v


def test_sts_correlation_of_linear_and_monotone_gold():
    cosines = np.linspace(-0.9, 0.95, 30)
    u, v = pairs_with_cosines(cosines)
    linear = sts_correlation(u, v, 2 * cosines + 3)
    assert isinstance(linear, STSResult) and linear.n == 30
    assert linear.pearson == pytest.approx(100) and linear.spearman == pytest.approx(100)
    cubic = sts_correlation(u, v, cosines**3)
    assert cubic.spearman == pytest.approx(100)
    assert cubic.pearson == pytest.approx(100 * np.corrcoef(cosines, cosines**3)[0, 1])
    assert sts_correlation(u, v, -cosines).spearman == pytest.approx(-100)


def test_sts_correlation_matches_a_known_noisy_correlation():
    generator = np.random.default_rng(1)
    cosines = generator.uniform(-1, 1, 200)
    gold = cosines + generator.normal(scale=0.5, size=200)
    result = sts_correlation(*pairs_with_cosines(cosines), gold)
    assert result.pearson == pytest.approx(100 * np.corrcoef(cosines, gold)[0, 1])
    ranks = pd.Series(cosines).rank(), pd.Series(gold).rank()
    assert result.spearman == pytest.approx(100 * np.corrcoef(*ranks)[0, 1])


@pytest.mark.parametrize(
    "u, v, gold, message",
    [
        (np.ones((3, 2)), np.ones((4, 2)), [1, 2, 3], "u has 3 entries but v has 4"),
        (np.ones((3, 2)), np.ones((3, 3)), [1, 2, 3], "features"),
        (np.ones((3, 2)), np.ones((3, 2)), [1, 2], "shape"),
        (np.ones((3, 2)), np.ones((3, 2)), [2, 2, 2], "constant"),
        (np.ones((3, 2)), np.ones((3, 2)), [1, np.nan, 2], "NaN"),
        (np.ones((1, 2)), np.ones((1, 2)), [1], "at least 2"),
        (np.array([[1.0, 0], [0, 0], [1, 1]]), np.ones((3, 2)), [1, 2, 3], "zero norm"),
        (np.array([[1.0, np.nan], [0, 1], [1, 1]]), np.ones((3, 2)), [1, 2, 3], "NaN"),
    ],
)
def test_sts_correlation_rejects_bad_input(u, v, gold, message):
    with pytest.raises(ValueError, match=message):
        sts_correlation(u, v, gold)


def test_mean_pool_averages_non_special_tokens_per_sentence():
    tokens = np.array([[9.0, 9], [1, 2], [3, 4], [9, 9], [5, 5], [7, 9], [9, 9]], dtype=np.float32)
    sentence_ids = np.array([0, 0, 0, 0, 1, 1, 1])
    special = np.array([True, False, False, True, False, False, True])
    pooled = mean_pool(tokens, sentence_ids, is_special=special)
    assert pooled.dtype == np.float64
    np.testing.assert_allclose(pooled, [[2, 3], [6, 7]])
    shuffled = np.array([5, 0, 3, 4])
    np.testing.assert_allclose(mean_pool(tokens[shuffled], sentence_ids[shuffled]), [[9, 9], [6, 7]])


@pytest.mark.parametrize(
    "ids, kwargs, message",
    [
        ([0, 0, 2], {}, "sentence 1 has no"),
        ([0, 1, 1], {"n_sentences": 3}, "sentence 2 has no"),
        ([0, 1, 1], {"is_special": [False, True, True]}, "sentence 1 has no"),
        ([0, 1], {}, "3 entries but sentence_ids has 2"),
        ([0, -1, 1], {}, "non-negative"),
        ([0.0, 1.0, 1.0], {}, "integers"),
        ([0, 1, 1], {"n_sentences": 1}, "n_sentences must be at least 2"),
    ],
)
def test_mean_pool_rejects_bad_input(ids, kwargs, message):
    with pytest.raises(ValueError, match=message):
        mean_pool(np.ones((3, 2)), np.array(ids), **kwargs)


# --- word vectors ------------------------------------------------------------


def unit(angle_degrees):
    angle = np.radians(angle_degrees)
    return np.array([np.cos(angle), np.sin(angle)])


ANGLES = {"w0": 0, "w1": 10, "w2": 40, "w3": 80}
VECTORS = {word: unit(angle) for word, angle in ANGLES.items()}
# Cosines rank the pairs (w0,w1) > (w1,w2) > (w0,w2) > (w0,w3); the gold swaps the middle two.
SIMILARITY_PAIRS = pd.DataFrame(
    {
        "word1": ["w0", "w1", "w0", "w0", "w0"],
        "word2": ["w1", "w2", "w2", "w3", "unknown"],
        "score": [4.0, 2.0, 3.0, 1.0, 2.5],
    }
)


def test_word_vectors_accepts_three_representations():
    matrix = np.stack(list(VECTORS.values()))
    for vectors in (VECTORS, (list(VECTORS), matrix), WordVectors(list(VECTORS), matrix)):
        converted = as_word_vectors(vectors)
        assert converted.words == tuple(VECTORS) and converted.index["w2"] == 2
        np.testing.assert_array_equal(converted.matrix, matrix)
    assert "w3" in converted and "unknown" not in converted and len(converted) == 4


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: WordVectors(["a", "a"], np.eye(2)), "'a' occurs more than once"),
        (lambda: WordVectors(["a"], np.eye(2)), "words has 1 entries but matrix has 2"),
        (lambda: WordVectors(["a", "b"], [[1.0, np.nan], [0, 1]]), "NaN"),
        (lambda: as_word_vectors([np.eye(2)]), "WordVectors"),
        (lambda: as_word_vectors({}), "empty"),
    ],
)
def test_word_vectors_rejects_bad_input(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_word_similarity_skips_oov_pairs():
    result = word_similarity(VECTORS, SIMILARITY_PAIRS)
    # One swap among 4 ranks: rho = 1 - 6 * 2 / (4 * 15).
    assert result == WordBenchmarkResult(score=pytest.approx(0.8), n_used=4, n_total=5)
    assert result.coverage == pytest.approx(0.8)


def test_word_similarity_replaces_oov_by_the_mean_vector():
    # The mean of the four unit vectors lies at about 31.6 degrees: cos(w0, mean) = 0.852
    # ranks the OOV pair third of five, gold ranks it third too, and the middle swap
    # becomes two rank differences of 2: rho = 1 - 6 * 8 / (5 * 24).
    result = word_similarity(VECTORS, SIMILARITY_PAIRS, oov="mean")
    assert result.score == pytest.approx(0.6)
    assert (result.n_used, result.n_total) == (4, 5)


@pytest.mark.parametrize(
    "pairs, kwargs, message",
    [
        (SIMILARITY_PAIRS.drop(columns="score"), {}, "lacks the column"),
        (SIMILARITY_PAIRS.iloc[:0], {}, "empty"),
        (SIMILARITY_PAIRS.iloc[[0, 4]], {}, "only 1 of the 2 pairs"),
        (SIMILARITY_PAIRS, {"oov": "zero"}, "oov must be one of"),
        (SIMILARITY_PAIRS.assign(score=1.0), {}, "constant"),
    ],
)
def test_word_similarity_rejects_bad_input(pairs, kwargs, message):
    with pytest.raises(ValueError, match=message):
        word_similarity(VECTORS, pairs, **kwargs)


def analogy_vectors():
    """king - man + woman = queen exactly: king = r + m, queen = r + f, man = p + m, woman = p + f."""
    royal, person, male, female, comparative, other = np.eye(6)
    return WordVectors(
        ["man", "woman", "king", "queen", "good", "bad", "better", "worse", "apple"],
        np.stack(
            [
                person + male,
                person + female,
                royal + male,
                royal + female,
                royal,
                person,
                royal + 0.1 * comparative,
                person + 0.3 * comparative,
                other,
            ]
        ),
    )


ANALOGIES = pd.DataFrame(
    [
        ("man", "king", "woman", "queen"),
        ("woman", "queen", "man", "king"),
        ("man", "woman", "king", "queen"),
        # better - good + bad is closest to "bad" itself, which must be excluded.
        ("good", "better", "bad", "worse"),
        ("man", "king", "woman", "apple"),
        ("boy", "king", "woman", "queen"),
        ("man", "king", "woman", "empress"),
    ],
    columns=["a", "b", "c", "d"],
)


def test_analogy_accuracy_solves_exact_offsets_and_excludes_question_words():
    result = analogy_accuracy(analogy_vectors(), ANALOGIES)
    assert result == WordBenchmarkResult(score=pytest.approx(4 / 5), n_used=5, n_total=7)


def test_analogy_accuracy_with_mean_rule_scores_every_question():
    # The question whose answer "empress" is out of vocabulary is scored, and wrong.
    result = analogy_accuracy(analogy_vectors(), ANALOGIES.iloc[[0, 1, 6]], oov="mean")
    assert result == WordBenchmarkResult(score=pytest.approx(2 / 3), n_used=2, n_total=3)


def test_analogy_accuracy_restricted_vocabulary():
    # Only man, woman, king, queen remain, both as candidates and for coverage.
    result = analogy_accuracy(analogy_vectors(), ANALOGIES, restrict_vocab=4)
    assert result == WordBenchmarkResult(score=pytest.approx(1.0), n_used=3, n_total=7)
    with pytest.raises(ValueError, match="none of the 2 questions"):
        analogy_accuracy(analogy_vectors(), ANALOGIES.iloc[[3, 4]], restrict_vocab=4)


def test_analogy_accuracy_rejects_bad_input():
    with pytest.raises(ValueError, match="restrict_vocab"):
        analogy_accuracy(analogy_vectors(), ANALOGIES, restrict_vocab=0)
    with pytest.raises(ValueError, match="lacks the column"):
        analogy_accuracy(analogy_vectors(), ANALOGIES.drop(columns="d"))
    with pytest.raises(ValueError, match="zero norm"):
        analogy_accuracy(WordVectors(["a", "b"], [[1.0, 0], [0, 0]]), ANALOGIES)


def separated_categories(n_per_category=8, seed=0):
    generator = np.random.default_rng(seed)
    centres = 20 * np.eye(4)[:3]
    words, rows, categories = [], [], []
    for category, centre in zip("abc", centres, strict=True):
        for index in range(n_per_category):
            words.append(f"{category}{index}")
            rows.append(centre + generator.normal(size=4))
            categories.append(category)
    return WordVectors(words, np.array(rows)), pd.DataFrame({"word": words, "category": categories})


@pytest.mark.parametrize("method", ["agglomerative", "kmeans", "best"])
def test_categorization_purity_is_one_on_separated_categories(method):
    vectors, items = separated_categories()
    items = pd.concat([items, pd.DataFrame({"word": ["unknown"], "category": ["a"]})], ignore_index=True)
    result = categorization_purity(vectors, items, method=method, random_state=0)
    assert result == WordBenchmarkResult(score=pytest.approx(1.0), n_used=24, n_total=25)


def test_categorization_purity_counts_majorities():
    # Two tight groups {x1, x2} and {x3, x4, x5}; categories a, a, a, b, b.
    vectors = WordVectors(["x1", "x2", "x3", "x4", "x5"], [[0, 0], [0, 0.1], [10, 10], [10, 10.1], [10.1, 10]])
    items = pd.DataFrame({"word": ["x1", "x2", "x3", "x4", "x5"], "category": list("aaabb")})
    assert categorization_purity(vectors, items).score == pytest.approx(4 / 5)


def test_categorization_purity_rejects_bad_input():
    vectors, items = separated_categories()
    with pytest.raises(ValueError, match="method"):
        categorization_purity(vectors, items, method="spectral")
    with pytest.raises(ValueError, match="purity needs 2"):
        categorization_purity(vectors, items.assign(category="a"))
    with pytest.raises(ValueError, match="lacks the column"):
        categorization_purity(vectors, items.drop(columns="category"))


def relational_vectors():
    """Candidate offsets x_i - y = i * e1 along the prototype offset p1 - p2 = e1."""
    e1, e2 = np.eye(2)
    words = ["p1", "p2", "y"] + [f"x{i}" for i in range(1, 5)]
    return WordVectors(words, np.stack([e1 + e2, e2, e2] + [i * e1 + e2 for i in range(1, 5)]))


def test_relational_similarity_averages_spearman_over_categories():
    prototypes = pd.DataFrame({"category": ["A", "B"], "word1": ["p1", "p1"], "word2": ["p2", "p2"]})
    candidates = pd.DataFrame(
        {
            "category": ["A"] * 4 + ["B"] * 5,
            "word1": ["x1", "x2", "x3", "x4", "x1", "x2", "x3", "x4", "unknown"],
            "word2": ["y"] * 9,
            # A agrees with the offsets; B swaps the middle two (rho = 0.8).
            "score": [1, 2, 3, 4, 1, 3, 2, 4, 5],
        }
    )
    result = relational_similarity(relational_vectors(), prototypes, candidates)
    assert result == WordBenchmarkResult(score=pytest.approx(0.9), n_used=8, n_total=9)
    assert relational_similarity(relational_vectors(), prototypes, candidates, oov="mean").n_used == 8


def test_relational_similarity_rejects_uncovered_benchmark():
    prototypes = pd.DataFrame({"category": ["A"], "word1": ["p1"], "word2": ["unknown"]})
    candidates = pd.DataFrame({"category": ["A", "A"], "word1": ["x1", "x2"], "word2": ["y", "y"], "score": [1, 2]})
    with pytest.raises(ValueError, match="no category"):
        relational_similarity(relational_vectors(), prototypes, candidates)
    with pytest.raises(ValueError, match="lacks the column"):
        relational_similarity(relational_vectors(), prototypes, candidates.drop(columns="score"))


def test_word_scores_agree_with_scipy_on_random_vectors():
    generator = np.random.default_rng(0)
    words = [f"w{i}" for i in range(30)]
    matrix = generator.normal(size=(30, 5))
    pairs = pd.DataFrame({"word1": words[:15], "word2": words[15:], "score": generator.uniform(size=15)})
    unit_rows = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    expected = stats.spearmanr(np.sum(unit_rows[:15] * unit_rows[15:], axis=1), pairs["score"]).statistic
    assert word_similarity((words, matrix), pairs).score == pytest.approx(expected)
