"""Tests of isolib.studies.ethayarajh_contextuality: occurrences, per-layer measures, PC static vectors, claims."""

import os
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import scipy.linalg

from isolib import datasets
from isolib.evaluation import WordVectors
from isolib.findings import STATUSES
from isolib.metrics import anisotropy_baseline, mev_baseline
from isolib.studies.ethayarajh_contextuality import claims, figures, settings, static_vectors
from isolib.studies.ethayarajh_contextuality import compute as contextuality
from isolib.studies.ethayarajh_contextuality.compute import (
    anisotropy_by_layer,
    corpus_sentences,
    layer_statistics,
    lowest_self_similarity,
)
from isolib.studies.ethayarajh_contextuality.occurrences import occurrence_index
from isolib.studies.ethayarajh_contextuality.static_vectors import (
    first_principal_direction,
    pc_static_vectors,
    restricted_to,
    word_benchmarks,
)
from isolib.studies.ethayarajh_contextuality.table1 import decoders_against_encoders
from isolib.views import View

needs_data = pytest.mark.skipif(
    "ISOLIB_DATA_DIR" not in os.environ and not any(datasets.data_dir().glob("*/*")),
    reason="no datasets: set ISOLIB_DATA_DIR (e.g. ../shared/data) or run `python -m isolib data fetch`",
)


def make_tokens(sentences, *, specials=("[CLS]", "[SEP]")):
    """A token table like Embeddings.tokens; a word is one piece (str) or a tuple of pieces."""
    rows = []
    for sentence_id, words in enumerate(sentences):
        pieces = [(specials[0], -1, "")] if specials else []
        for word_id, word in enumerate(words):
            word_pieces = (word,) if isinstance(word, str) else word
            text = "".join(piece.removeprefix("##").removeprefix("Ġ") for piece in word_pieces)
            pieces += [(piece, word_id, text) for piece in word_pieces]
        pieces += [(specials[1], -1, "")] if specials else []
        rows += [(sentence_id, position, token, word_id, word, word_id < 0)
                 for position, (token, word_id, word) in enumerate(pieces)]
    return pd.DataFrame(rows, columns=["sentence_id", "position", "token", "word_id", "word", "is_special"])


def five_times(*sentence):
    """The same sentence five times: every word in it meets the 5-context rule."""
    return [list(sentence) for _ in range(5)]


# --------------------------------------------------------------------------- the occurrence index


def test_five_context_rule_counts_distinct_sentences():
    sentences = [["cat", "dog"] for _ in range(4)] + [["dog"]] + [["bird"] * 5]
    index = occurrence_index(make_tokens(sentences))
    # cat: 4 contexts, dropped; dog: 5, kept; bird: 5 occurrences in one sentence, dropped.
    assert list(index.words) == ["dog"]
    assert index.n_contexts.to_dict() == {"dog": 5}
    bird = index.occurrences[index.occurrences.word == "bird"]
    assert len(bird) == 5 and not bird.kept.any()
    lower = occurrence_index(make_tokens(sentences), min_contexts=4)
    assert lower.n_contexts.to_dict() == {"cat": 4, "dog": 5}


def test_repeated_words_are_separate_occurrences_but_one_context():
    sentences = [["dog", "dog", "barks"]] + [["dog"] for _ in range(4)]
    index = occurrence_index(make_tokens(sentences))
    dog = index.occurrences[index.occurrences.word == "dog"]
    assert len(dog) == 6 and dog.kept.all()
    assert index.n_contexts["dog"] == 5
    # Both occurrences in sentence 0 point at their own rows (positions 1 and 2 after [CLS]).
    assert list(index.piece_rows[dog.index[:2]]) == [1, 2]
    with pytest.raises(ValueError, match="no word occurs in 5"):
        occurrence_index(make_tokens(sentences[:4]))


def test_punctuation_and_special_tokens_are_not_occurrences():
    sentences = five_times("dog", ".", ",", "--", ("Ġ", "5"), "'s")
    for unit in ("token", "word"):
        index = occurrence_index(make_tokens(sentences), unit=unit)
        types = set(index.occurrences.word)
        assert not types & {".", ",", "--", "", "[CLS]", "[SEP]"}
        assert {"dog", "5", "'s"} <= types
    # The lone space piece of "Ġ 5" is punctuation for tokens; the word "5" keeps both pieces.
    by_word = occurrence_index(make_tokens(sentences), unit="word").occurrences
    assert by_word.set_index("word").n_pieces.groupby(level=0).first()["5"] == 2


def test_multi_piece_words_as_tokens_and_as_words():
    sentences = five_times(("play", "##ing"), "dog") + five_times("play")
    tokens = make_tokens(sentences)
    by_token = occurrence_index(tokens, unit="token")
    assert set(by_token.words) == {"play", "##ing", "dog"}
    assert by_token.n_contexts["play"] == 10  # the piece of "playing" and the word "play" are one type
    by_word = occurrence_index(tokens, unit="word")
    assert set(by_word.words) == {"playing", "dog", "play"}

    # Word vectors are the mean of their pieces' rows; token vectors are the rows themselves.
    layer = np.arange(len(tokens) * 2, dtype=np.float32).reshape(len(tokens), 2)
    playing = by_word.occurrences.index[by_word.occurrences.word == "playing"][0]
    rows = tokens.index[(tokens.sentence_id == 0) & (tokens.word == "playing")]
    np.testing.assert_allclose(by_word.vectors(layer)[playing], layer[rows].mean(axis=0))
    np.testing.assert_array_equal(by_token.vectors(layer), layer[by_token.piece_rows])
    assert by_word.vectors(layer).dtype == np.float32


def test_case_follows_the_model_unless_forced():
    # An uncased tokenizer (no uppercase piece) reading "The": words are lowercased like its pieces.
    uncased = make_tokens(five_times("the", "dog", "[UNK]"))  # [UNK]: the tokenizer's marker, not a cased piece
    uncased.loc[uncased.token == "the", "word"] = "The"
    uncased.loc[uncased.token == "[UNK]", "word"] = "ø"
    assert set(occurrence_index(uncased, unit="word").words) == {"the", "dog", "ø"}
    assert set(occurrence_index(uncased, unit="word", lowercase=False).words) == {"The", "dog", "ø"}

    # A cased byte-level tokenizer: "The" and "Ġthe" are two types; the space marker is not part of a type.
    cased = make_tokens(five_times("The", "Ġdog", "Ġthe"), specials=())
    assert set(occurrence_index(cased).words) == {"The", "dog", "the"}
    assert set(occurrence_index(cased, unit="word").words) == {"The", "dog", "the"}
    merged = occurrence_index(cased, lowercase=True)
    assert set(merged.words) == {"the", "dog"} and merged.lowercase


def test_occurrence_index_rejects_bad_input():
    tokens = make_tokens(five_times("dog"))
    with pytest.raises(ValueError, match="unit must be"):
        occurrence_index(tokens, unit="sentence")
    with pytest.raises(ValueError, match="lacks the column"):
        occurrence_index(tokens.drop(columns="word_id"))
    with pytest.raises(ValueError, match="min_contexts"):
        occurrence_index(tokens, min_contexts=0)
    with pytest.raises(ValueError, match="special tokens"):
        occurrence_index(tokens[tokens.is_special])
    with pytest.raises(ValueError, match="rows"):
        occurrence_index(tokens).vectors(np.ones((2, 3)))
    with pytest.raises(ValueError, match="corpus"):
        corpus_sentences("wikipedia")


# --------------------------------------------------------------------------- per-layer measures


def synthetic_layer(tokens, vector_of, *, noise=0.0, seed=0):
    """A layer array whose row for each token is ``vector_of[token] + noise``."""
    generator = np.random.default_rng(seed)
    dim = len(next(iter(vector_of.values())))
    rows = [vector_of.get(token, generator.normal(size=dim)) for token in tokens.token]
    return np.asarray(rows, dtype=np.float32) + noise * generator.normal(size=(len(tokens), dim)).astype(np.float32)


def test_layer_statistics_of_static_vectors():
    sentences = [["cat", "dog", "sat"] for _ in range(6)]
    tokens = make_tokens(sentences)
    basis = np.eye(4)
    layer = synthetic_layer(tokens, {"cat": basis[0], "dog": basis[1], "sat": basis[0] + basis[1]})
    result = layer_statistics(occurrence_index(tokens), layer, n_samples=1000)
    words = result.per_word
    # Identical occurrences: SelfSim and MEV are 1, the centred MEV is undefined.
    np.testing.assert_allclose(words.self_similarity, 1.0)
    np.testing.assert_allclose(words.mev, 1.0)
    assert words.mev_centred.isna().all()
    assert list(words.n_contexts) == [6, 6, 6]
    summary = result.summary
    # All 18 rows are drawn; over pairs from different sentences the 9 ordered word pairs weigh the
    # same: 3 equal pairs (cosine 1), cat-dog twice (0), cat-sat and dog-sat twice each (1/sqrt 2).
    expected = (3 + 4 * 2**-0.5) / 9
    assert summary["baseline_cosine"] == pytest.approx(expected)
    assert summary["self_similarity_adjusted"] == pytest.approx(1 - expected)
    assert summary["intra_similarity_adjusted"] == pytest.approx(summary["intra_similarity"] - expected)
    assert summary["mev_adjusted"] == pytest.approx(1 - summary["mev_baseline"])
    assert summary["mev_below_baseline"] == 0.0
    assert summary["n_words"] == 3 and summary["n_occurrences"] == 18
    # Every sentence's mean points along cat + dog: cat and dog at 45 degrees from it, sat along it.
    sentences = result.per_sentence
    assert sentences.index.name == "sentence_id" and list(sentences.index) == list(range(6))
    np.testing.assert_allclose(sentences, (2 * 2**-0.5 + 1) / 3)
    assert summary["intra_similarity"] == pytest.approx(sentences.mean())


def test_context_specific_words_have_low_self_similarity_and_mev():
    sentences = [["the", "dog"] for _ in range(40)]
    tokens = make_tokens(sentences)
    dog = np.r_[1.0, np.zeros(29)]
    generator = np.random.default_rng(3)
    # "the" gets a new random direction in every sentence; "dog" keeps one direction.
    layer = synthetic_layer(tokens, {"dog": dog}, noise=0.01)
    layer[tokens.token == "the"] = generator.normal(size=(40, 30))
    words = layer_statistics(occurrence_index(tokens), layer).per_word
    assert words.self_similarity["dog"] > 0.99 and abs(words.self_similarity["the"]) < 0.1
    assert words.mev["dog"] > 0.99 and words.mev["the"] < 0.2
    lowest = lowest_self_similarity(words.reset_index().assign(model="m", layer=1), n_words=1)
    assert lowest.words.tolist() == ["the"] and lowest.stopword_share.tolist() == [1.0]


def test_the_baselines_are_drawn_again_independently():
    tokens = make_tokens([[f"w{i}" for i in range(8)] for _ in range(30)])
    layer = np.random.default_rng(0).normal(size=(len(tokens), 16)).astype(np.float32) + 0.5
    index = occurrence_index(tokens)
    result = layer_statistics(index, layer, n_samples=50, random_state=3, n_draws=4)
    baselines = result.baselines
    assert baselines.index.name == "draw" and list(baselines.index) == [0, 1, 2, 3]
    # Draw 0 is the summary's, and each draw d is what the metrics give with the seed random_state + d.
    vectors, contexts = index.vectors(layer), index.occurrences.sentence_id.to_numpy()
    for draw in range(4):
        assert baselines.baseline_cosine[draw] == pytest.approx(
            anisotropy_baseline(vectors, contexts, n_samples=50, random_state=3 + draw))
        assert baselines.mev_baseline[draw] == pytest.approx(mev_baseline(vectors, n_samples=50, random_state=3 + draw))
    assert result.summary["baseline_cosine"] == baselines.baseline_cosine[0]
    assert result.summary["mev_baseline"] == baselines.mev_baseline[0]
    assert result.summary["mev_centred_baseline"] == pytest.approx(
        mev_baseline(vectors, n_samples=50, centered=True, random_state=3))
    assert baselines.baseline_cosine.nunique() == 4  # independent draws differ


# --------------------------------------------------------------------------- PC static embeddings


def test_anisotropy_by_layer_reads_content_tokens_of_every_layer():
    tokens = make_tokens([["a", "b", "c"]] * 40)
    content = ~tokens.is_special.to_numpy()
    common = np.r_[3.0, 4.0, np.zeros(62)]
    same_direction = np.where(content[:, None], common, -common)  # specials point the other way
    scattered = np.random.default_rng(0).normal(size=(len(tokens), 64))
    layers = {0: same_direction, 1: scattered}
    embeddings = SimpleNamespace(model="stub", layers=(0, 1), tokens=tokens, layer=layers.__getitem__)
    table = anisotropy_by_layer(embeddings, n_samples=50, random_state=0)
    assert table[["model", "layer"]].values.tolist() == [["stub", 0], ["stub", 1]]
    assert table.average_cosine[0] == pytest.approx(1.0)  # the specials, if counted, would pull it below
    assert abs(table.average_cosine[1]) < 0.05
    assert table.mean_norm[0] == pytest.approx(5.0)


@pytest.mark.parametrize("unit", ["token", "word"])
def test_the_measures_are_the_same_without_stored_special_tokens(minilm, cache_dir, unit):
    # Notebook 01 stores no special token (embed(..., keep_special=False)): no measure may change.
    from isolib.embed import embed, first_position_norm_ratio

    sentences = ["The cat sat on the mat.", "A cat is on a mat!", "The dog sat there.", "Cats and dogs sat."] * 3
    every, content = (embed(minilm, sentences, layers=[0, -1], keep_special=keep) for keep in (True, False))
    assert len(content.tokens) < len(every.tokens)
    for layer in (0, -1):
        ours, reference = (layer_statistics(occurrence_index(e.tokens, unit=unit, min_contexts=2), e.layer(layer),
                                            n_samples=20) for e in (content, every))
        assert ours.summary == reference.summary
        pd.testing.assert_frame_equal(ours.baselines, reference.baselines)
        pd.testing.assert_frame_equal(ours.per_word, reference.per_word)
    pd.testing.assert_series_equal(first_position_norm_ratio(content), first_position_norm_ratio(every))
    pd.testing.assert_frame_equal(anisotropy_by_layer(content, n_samples=20), anisotropy_by_layer(every, n_samples=20))


def test_stored_layer_statistics_are_reused_without_reading_the_layers(minilm, cache_dir, monkeypatch):
    from isolib.embed import embed

    sentences = ["The cat sat on the mat.", "A cat is on a mat!", "The dog sat there.", "Cats and dogs sat."] * 3
    embeddings = embed(minilm, sentences, layers=[0, -1], keep_special=False)
    index = occurrence_index(embeddings.tokens, min_contexts=2)
    expected = contextuality.contextuality_by_layer(embeddings, index, n_samples=20)
    stored = contextuality.contextuality_by_layer(embeddings, index, n_samples=20, resume=True)

    def fail(*args, **kwargs):
        raise AssertionError("stored statistics must not be computed again")

    monkeypatch.setattr(contextuality, "layer_statistics", fail)
    monkeypatch.setattr(type(embeddings), "layer", fail)
    again = contextuality.contextuality_by_layer(embeddings, index, n_samples=20, resume=True)
    for ours in (stored, again):
        for table, reference in zip(ours, expected, strict=True):
            pd.testing.assert_frame_equal(table, reference)
    with pytest.raises(AssertionError, match="must not be computed again"):  # other options: computed
        contextuality.contextuality_by_layer(embeddings, index, n_samples=21, resume=True)


@pytest.mark.parametrize("n_samples", [40, 400])  # fewer and more occurrences than dimensions
def test_first_principal_direction_recovers_the_direction(n_samples):
    generator = np.random.default_rng(n_samples)
    direction = generator.normal(size=100)
    direction /= np.linalg.norm(direction)
    scales = generator.uniform(1, 3, size=(n_samples, 1))
    points = scales * direction + 1e-4 * generator.normal(size=(n_samples, 100))
    np.testing.assert_allclose(first_principal_direction(points), direction, atol=1e-3)
    # Occurrences pointing the other way give the other sign: the vector follows the mean.
    np.testing.assert_allclose(first_principal_direction(-points), -direction, atol=1e-3)


@pytest.mark.parametrize("n_samples", [40, 400])
def test_sign_agrees_with_the_mean_whatever_sign_the_solver_returns(monkeypatch, n_samples):
    generator = np.random.default_rng(1)
    direction = np.r_[0.6, 0.8, np.zeros(98)]
    points = generator.uniform(1, 3, size=(n_samples, 1)) * direction + 1e-4 * generator.normal(size=(n_samples, 100))
    solver = scipy.linalg.eigh

    def flipped(*args, **kwargs):
        values, vectors = solver(*args, **kwargs)
        return values, -vectors

    for eigh in (solver, flipped):
        monkeypatch.setattr(static_vectors.scipy.linalg, "eigh", eigh)
        result = first_principal_direction(points)
        np.testing.assert_allclose(result, direction, atol=1e-3)
        assert result @ points.mean(axis=0) > 0


def test_first_principal_direction_tie_and_errors():
    # Symmetric occurrences: the mean is zero, so the largest coordinate is made positive.
    points = np.array([[0.0, 3.0], [0.0, -3.0]])
    np.testing.assert_allclose(first_principal_direction(points), [0.0, 1.0])
    with pytest.raises(ValueError, match="all zeros"):
        first_principal_direction(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="NaN"):
        first_principal_direction([[np.nan, 1.0]])


def test_pc_static_vectors_are_word_directions_in_frequency_order():
    sentences = [["cat", "dog"] for _ in range(5)] + [["dog"] for _ in range(3)]
    tokens = make_tokens(sentences)
    directions = {"cat": np.r_[1.0, 1.0, 0.0] / 2**0.5, "dog": np.r_[0.0, 0.0, 1.0]}
    layer = synthetic_layer(tokens, directions)
    scales = np.random.default_rng(0).uniform(1, 2, size=(len(tokens), 1)).astype(np.float32)
    vectors = pc_static_vectors(occurrence_index(tokens), layer * scales)
    assert isinstance(vectors, WordVectors) and vectors.words == ("dog", "cat")
    np.testing.assert_allclose(vectors.matrix, [directions["dog"], directions["cat"]], atol=1e-6)


def test_restricted_to_keeps_the_order_of_the_words():
    vectors = WordVectors(["a", "b", "c"], np.eye(3))
    restricted = restricted_to(vectors, ["c", "x", "a"])
    assert restricted.words == ("c", "a")
    np.testing.assert_array_equal(restricted.matrix, np.eye(3)[[2, 0]])
    with pytest.raises(ValueError, match="none of the words"):
        restricted_to(vectors, ["x"])


@needs_data
def test_word_benchmarks_report_score_and_coverage():
    simlex = datasets.load_word_similarity("simlex999")
    words = list(dict.fromkeys([*simlex.word1[:60], *simlex.word2[:60]]))
    generator = np.random.default_rng(0)
    vectors = WordVectors(words, generator.normal(size=(len(words), 8)))
    table = word_benchmarks(vectors)
    assert list(table.benchmark) == list(static_vectors.BENCHMARKS)
    simlex_row = table.set_index("benchmark").loc["SimLex-999"]
    assert simlex_row.n_total == 999 and simlex_row.n_used >= 60
    assert simlex_row.coverage == pytest.approx(simlex_row.n_used / 999)
    assert -1 <= simlex_row.score <= 1
    # A benchmark with too few items covered is reported with its coverage, unscored.
    assert table.coverage.between(0, 1).all()
    assert table[table.n_used == 0].score.isna().all() and (table.n_used == 0).any()
    # Uppercase vocabulary: benchmark words are looked up as spelled, so lowercase SimLex misses them.
    upper = word_benchmarks(WordVectors([w.upper() for w in words], vectors.matrix))
    assert upper.set_index("benchmark").loc["SimLex-999", "n_used"] == 0
    # A lowercase vocabulary with the [UNK] marker still counts as uncased: Google's "Athens" is found.
    with_marker = WordVectors([*words, "[UNK]", "athens", "greece", "baghdad", "iraq"],
                              generator.normal(size=(len(words) + 5, 8)))
    assert word_benchmarks(with_marker).set_index("benchmark").loc["Google", "n_used"] >= 1


# --------------------------------------------------------------------------- findings and RESULTS.md


def per_layer_table(model, baseline, self_adjusted, intra_adjusted, mev_adjusted):
    layers = np.arange(len(baseline))
    return pd.DataFrame({
        "model": model, "layer": layers, "n_layers": len(layers), "baseline_cosine": baseline,
        "self_similarity": np.add(self_adjusted, baseline), "self_similarity_adjusted": self_adjusted,
        "intra_similarity": np.add(intra_adjusted, baseline), "intra_similarity_adjusted": intra_adjusted,
        "mev": 0.01 + np.asarray(mev_adjusted), "mev_adjusted": mev_adjusted, "mev_below_baseline": 0.2,
        "mev_centred": 0.01, "mev_centred_adjusted": 0.0, "mev_baseline": 0.01,
    })


def per_word_table(per_layer, words=("the", "of", "dog"), deltas=(-0.02, -0.01, 0.03), *, input_mev=0.9):
    """Per layer, one row per word whose self-similarity and MEVs (uncentred, centred) vary around the layer's
    means; the input layer, static, has the MEV ``input_mev``."""
    return pd.DataFrame([{"model": row.model, "layer": row.layer, "word": word, "n_contexts": 5 + rank,
                          "self_similarity": row.self_similarity + delta,
                          "mev": (input_mev if row.layer == 0 else row.mev) + delta / 10,
                          "mev_centred": (input_mev if row.layer == 0 else row.mev_centred) + delta / 10}
                         for row in per_layer.itertuples() for rank, (word, delta) in enumerate(zip(words, deltas))])


def baselines_of(per_layer, *shifts):
    """The baselines of each draw: draw 0 the per-layer table's, draw d its baselines plus ``shifts[d - 1]``."""
    draw = per_layer[["model", "layer", "baseline_cosine", "mev_baseline"]]
    return pd.concat([draw.assign(draw=0), *(draw.assign(draw=d, baseline_cosine=draw.baseline_cosine + np.asarray(
        shift), mev_baseline=draw.mev_baseline + np.asarray(shift)) for d, shift in enumerate(shifts, start=1))],
        ignore_index=True)[["model", "layer", "draw", "baseline_cosine", "mev_baseline"]]


def evidence_of(per_layer, per_word, *, n_lowest=10, **more):
    """The evidence the claims read: the tables given, the words of lowest self-similarity drawn from ``per_word``,
    one draw of the baselines (``per_layer``'s) unless ``baselines`` is given."""
    return {"run": {"n_lowest": n_lowest, "min_coverage": 0.25}, "per_layer": per_layer,
            "baselines": baselines_of(per_layer), "per_word": per_word,
            "lowest": lowest_self_similarity(per_word, n_words=n_lowest), **more}


def by_claim(found):
    return {(f.finding, f.model): f for f in found}


def test_the_claims_apply_the_stated_rules():
    per_layer = pd.concat([
        # A BERT-like model: anisotropy grows, self-similarity falls, intra-similarity falls but stays > 0.
        per_layer_table("minilm", [0.05, 0.2, 0.3, 0.4], [0.9, 0.7, 0.5, 0.3], [0.4, 0.3, 0.2, 0.1], [0.01] * 4),
        # The paper's own GPT-2, with the paper's numbers at layers 0 and 12.
        per_layer_table("gpt2", np.r_[0.61, [0.6] * 11, 0.978], np.linspace(0.5, 0.1, 13), np.r_[0.2, [0.0] * 12],
                        [0.02] * 13),
    ], ignore_index=True)
    # Per layer, three types whose means are the layer's; the two lowest are stopwords: a share of 1.0 in each.
    per_word = per_word_table(per_layer)
    by_key = by_claim(claims.findings(evidence_of(per_layer, per_word, n_lowest=2)))
    assert by_key["Anisotropy in every non-input layer", "minilm"].status == "reproduced"
    assert by_key["Anisotropy grows with depth", "minilm"].status == "reproduced"
    assert by_key["Self-similarity falls with depth", "gpt2"].status == "reproduced"
    assert by_key[("BERT: same-sentence words grow apart in upper layers but stay more similar than "
                   "random words", "minilm")].status == "reproduced"
    assert by_key["GPT-2: same-sentence words no more similar than random words", "gpt2"].status == "reproduced"
    assert by_key["Less than 5% of a word's variance is explained by a static embedding", "minilm"].status == "reproduced"
    assert by_key["Anisotropy in every non-input layer", "minilm"].headline
    # Reference numbers: comparable on the paper's own model only.
    assert by_key["average cosine between random words, GPT-2 L12", "gpt2"].status == "reproduced"
    assert by_key["average cosine between random words, GPT-2 L2-9", "gpt2"].status == "reproduced"
    assert by_key["average cosine between random words, BERT L0", "minilm"].status == "not comparable"
    assert by_key["average cosine between random words, ELMo L0", "-"].status == "not comparable"
    assert all(f.status in STATUSES and f.rule for f in by_key.values())
    # The per-type claims carry an interval over word types.
    assert "[95% CI" in by_key["Self-similarity falls with depth", "gpt2"].ours
    assert "Threshold ours" in by_key["Self-similarity falls with depth", "gpt2"].rule
    assert by_key["Self-similarity falls with depth", "gpt2"].sampling_unit == "word types and baseline draws"
    assert by_key["Stopwords have the lowest self-similarity", "minilm"].sampling_unit == "layers"


def test_a_control_that_passes_the_same_rule_leaves_the_claim_indistinguishable():
    # GPT-2's input layer is as anisotropic as its hidden layers (0.61): "anisotropy in every non-input layer" holds,
    # and holds for the input layer too; minilm's input layer (0.05) fails the rule, so its claim is reproduced.
    per_layer = pd.concat([
        per_layer_table("minilm", [0.05, 0.2, 0.3, 0.4], [0.9, 0.7, 0.5, 0.3], [0.4, 0.3, 0.2, 0.1], [0.01] * 4),
        per_layer_table("gpt2", np.r_[0.61, [0.6] * 11, 0.978], np.linspace(0.5, 0.1, 13), [0.0] * 13, [0.02] * 13),
    ], ignore_index=True)
    by_key = by_claim(claims.findings(evidence_of(per_layer, per_word_table(per_layer), n_lowest=2)))
    gpt2 = by_key["Anisotropy in every non-input layer", "gpt2"]
    assert (gpt2.status, gpt2.control_status, gpt2.control_value) == ("indistinguishable", "passes", 0.61)
    minilm = by_key["Anisotropy in every non-input layer", "minilm"]
    assert (minilm.status, minilm.control_status) == ("reproduced", "fails")
    # Hidden layers above the input layer: every one of minilm's, 1 of GPT-2's 12 (only L12 exceeds 0.61).
    assert by_key["Anisotropy: hidden layers above the input layer", "minilm"].status == "reproduced"
    assert by_key["Anisotropy: hidden layers above the input layer", "gpt2"].value == pytest.approx(1 / 12)
    # A static input layer passes "less than 5% explained" as well as the hidden layers: the rule cannot tell them apart.
    static_like = by_claim(claims.findings(evidence_of(per_layer, per_word_table(per_layer, input_mev=0.01),
                                                       n_lowest=2)))
    assert static_like["Less than 5% of a word's variance is explained by a static embedding",
                       "minilm"].status == "indistinguishable"


def test_every_mev_claim_is_judged_with_both_estimators_and_combined():
    # Uncentred word MEV high in every hidden layer, centred low: the paper's formula and the authors' code disagree.
    per_layer = per_layer_table("minilm", [0.05, 0.2, 0.3, 0.4], [0.9, 0.7, 0.5, 0.3], [0.4, 0.3, 0.2, 0.1],
                                [0.6] * 4)
    by_key = by_claim(claims.findings(evidence_of(per_layer, per_word_table(per_layer), n_lowest=2)))
    finding = by_key["Less than 5% of a word's variance is explained by a static embedding", "minilm"]
    assert finding.status == "mixed"
    assert finding.ours.startswith("the paper's formula (uncentred): max mean adjusted MEV 0.600")
    assert "; the authors' code (centred): max mean adjusted MEV 0.000" in finding.ours
    assert "Judged on each estimator" in finding.rule
    assert by_key["BERT: raw MEV below 5% in every layer", "minilm"].status == "mixed"


def test_claims_about_layers_leave_the_input_layer_out():
    # Self-similarity rises from the input layer to layer 1, then falls: over the non-input layers it falls.
    per_layer = per_layer_table("minilm", [0.05, 0.2, 0.3, 0.4, 0.4], [0.1, 0.9, 0.7, 0.5, 0.3],
                                [-0.1, 0.4, 0.3, 0.2, 0.1], [0.01] * 5)
    by_key = by_claim(claims.findings(evidence_of(per_layer, per_word_table(per_layer), n_lowest=2)))
    assert by_key["Self-similarity falls with depth", "minilm"].value == pytest.approx(-1.0)
    # A negative adjusted intra-sentence similarity at the input layer does not count against BERT's finding.
    assert by_key[("BERT: same-sentence words grow apart in upper layers but stay more similar than "
                   "random words", "minilm")].status == "reproduced"


def test_intervals_on_adjusted_measures_cover_the_baselines_draws():
    # Self-similarity falls with the baseline of draw 0 (the per-layer table's); in nine other draws the baseline
    # falls faster than the raw self-similarity, so the adjusted one rises.
    per_layer = per_layer_table("minilm", [0.05, 0.1, 0.1, 0.1, 0.1], [0.8, 0.8, 0.7, 0.6, 0.5],
                                [0.4, 0.3, 0.2, 0.1, 0.1], [0.01] * 5)
    per_word = per_word_table(per_layer)
    name = "Self-similarity falls with depth"
    held = by_claim(claims.findings(evidence_of(per_layer, per_word, n_lowest=2)))[name, "minilm"]
    # One draw: the word types alone keep the order of the layers, so the interval cannot move.
    assert (held.status, held.value, held.interval) == ("reproduced", -1.0, (-1.0, -1.0))
    assert "degenerate interval" in held.marks
    varied = baselines_of(per_layer, *[[0.0, 0.5, 0.3, 0.1, -0.1]] * 9)
    crossed = by_claim(claims.findings(evidence_of(per_layer, per_word, n_lowest=2, baselines=varied)))
    finding = crossed[name, "minilm"]
    assert finding.value == -1.0 and finding.interval == (-1.0, 1.0) and finding.status == "borderline"
    assert "one of the baseline's 10 independent draws" in finding.rule
    assert finding.sampling_unit == "word types and baseline draws"
    # The MEV claims set against the baseline cross its draws too; those on the raw MEV do not.
    lowered = by_claim(claims.findings(evidence_of(per_layer, per_word, n_lowest=2,
                                                   baselines=baselines_of(per_layer, *[[-0.1] * 5] * 9))))
    mev = lowered["Less than 5% of a word's variance is explained by a static embedding", "minilm"]
    assert mev.status == "borderline" and "one of the baseline's 10 independent draws" in mev.rule
    raw = lowered["BERT: raw MEV below 5% in every layer", "minilm"]
    assert raw.status == "reproduced" and "draws" not in raw.rule


def test_the_bootstrap_over_types_weights_each_type_by_how_often_a_resample_draws_it():
    from isolib.findings import bootstrap_threshold

    generator = np.random.default_rng(0)
    types = generator.normal(0.3, 0.1, size=(400, 3))
    types[generator.random(types.shape) < 0.1] = np.nan  # types without a value in some layers are left out

    def highest(means, baseline):
        return np.max(means)

    weighted = claims._bootstrap_over_types(types, None, highest, above=0.25)
    by_rows = bootstrap_threshold(types, lambda rows: np.max(np.nanmean(rows, axis=0)), above=0.25)
    assert weighted.value == pytest.approx(by_rows.value, abs=1e-12)
    assert weighted.interval == pytest.approx(by_rows.interval, abs=0.01)  # other draws, the same distribution
    assert weighted.interval[0] < weighted.value < weighted.interval[1]
    # Whether a type lies below its draw's baseline is averaged in place of the types: a share per layer.
    below = claims._bootstrap_over_types(types, np.array([[0.3] * 3, [-1.0] * 3]), highest,
                                         per_type=claims._below, above=0.1)
    assert below.value == pytest.approx(np.max(np.nanmean(types < 0.3, axis=0, where=~np.isnan(types))))
    assert below.interval[0] == 0.0  # the draws whose baseline no type is below


def test_bert_exceptions_at_the_top_are_judged_against_the_same_comparison_one_layer_lower():
    # The average cosine falls at the last layer but also one layer lower: the drop is not the last layer's own.
    per_layer = per_layer_table("mpnet", [0.05, 0.4, 0.3, 0.2], [0.9, 0.5, 0.6, 0.7], [0.4, 0.1, 0.2, 0.3],
                                [0.01] * 4)
    by_key = by_claim(claims.findings(evidence_of(per_layer, per_word_table(per_layer), n_lowest=2)))
    assert by_key["Anisotropy: BERT's penultimate layer above its last", "mpnet"].status == "indistinguishable"
    assert by_key["Slides: self- and intra-sentence similarity rise again at BERT's last layer",
                  "mpnet"].status == "indistinguishable"
    rising = per_layer_table("mpnet", [0.05, 0.2, 0.4, 0.3], [0.9, 0.7, 0.5, 0.6], [0.4, 0.3, 0.2, 0.3], [0.01] * 4)
    by_key = by_claim(claims.findings(evidence_of(rising, per_word_table(rising), n_lowest=2)))
    assert by_key["Anisotropy: BERT's penultimate layer above its last", "mpnet"].status == "reproduced"
    assert by_key["Slides: self- and intra-sentence similarity rise again at BERT's last layer",
                  "mpnet"].status == "reproduced"


def test_a_decoder_is_judged_in_its_start_token_view_with_the_paper_procedure_beside_it():
    # With the sink kept, the average cosine is high in every layer; behind a start token it is not.
    views = {"gpt2": [0.03, 0.8, 0.8, 0.8], "gpt2 (start token)": [0.03, 0.05, 0.05, 0.05]}
    per_layer = pd.concat([per_layer_table(label, baseline, [0.9, 0.7, 0.5, 0.3], [0.1, 0.0, 0.0, 0.0], [0.01] * 4)
                           for label, baseline in views.items()], ignore_index=True)
    per_word = per_word_table(per_layer, ("the", "dog"), (0.0, 0.0))
    rows = [f for f in claims.findings(evidence_of(per_layer, per_word, n_lowest=1))
            if f.finding == "Anisotropy in every non-input layer"]
    assert [(f.model, f.status, f.counted, f.note) for f in rows] == [
        ("gpt2 (start token)", "not reproduced", True, "holds only with the attention sink"),
        ("gpt2", "reproduced", False, "holds only with the attention sink")]


def test_the_sink_view_enters_no_finding_across_models_and_a_reference_number_is_counted_once():
    labels = {"minilm": [0.05, 0.2, 0.3, 0.4], "mpnet": [0.02, 0.1, 0.2, 0.3], "smollm2": [0.3, 0.8, 0.8, 0.9],
              "smollm2 (start token)": [0.3, 0.1, 0.2, 0.3]}
    per_layer = pd.concat([per_layer_table(label, baseline, [0.9, 0.7, 0.5, 0.3], [0.4, 0.3, 0.2, 0.25], [0.01] * 4)
                           for label, baseline in labels.items()], ignore_index=True)
    found = claims.findings(evidence_of(per_layer, per_word_table(per_layer), n_lowest=2))
    rows = [f for f in found if f.finding == "average cosine between random words, BERT L0"]
    assert [(f.model, f.ours, f.status) for f in rows] == [
        ("minilm, mpnet", "minilm 0.050 (L0); mpnet 0.020 (L0)", "not comparable")]
    rows = [f for f in found if f.finding == "mean raw self-similarity, GPT-2 L12"]
    assert [f.model for f in rows] == ["smollm2 (start token)"]
    across = [f for f in found if f.finding == "Self-similarity falls lowest in GPT-2: the most context-specific model"]
    assert [f.model for f in across] == ["smollm2 (start token), minilm, mpnet"]
    # Every model's lowest adjusted self-similarity is 0.3: the decoder is not below the encoders.
    assert across[0].status == "not reproduced"


def test_gpt2_is_the_most_context_specific_only_if_its_input_layer_is_not():
    def table(label, self_adjusted):
        return per_layer_table(label, [0.05, 0.2, 0.3, 0.4], self_adjusted, [0.4, 0.3, 0.2, 0.1], [0.01] * 4)

    encoder = table("minilm", [0.9, 0.7, 0.5, 0.4])
    decoders = {"apart": [0.95, 0.6, 0.3, 0.1], "already at the input": [0.5, 0.6, 0.3, 0.1]}
    statuses = {}
    for case, self_adjusted in decoders.items():
        per_layer = pd.concat([table("smollm2 (start token)", self_adjusted), encoder], ignore_index=True)
        found = by_claim(claims.findings(evidence_of(per_layer, per_word_table(per_layer), n_lowest=2)))
        statuses[case] = found["Self-similarity falls lowest in GPT-2: the most context-specific model",
                               "smollm2 (start token), minilm"].status
    assert statuses == {"apart": "reproduced", "already at the input": "indistinguishable"}


def test_a_thin_stopword_share_is_borderline():
    # The audit's minilm shares per non-input layer: 0, 0.4, 0.8, 0.7, 0.2, 0.9 (median 0.55).
    shares = [0.0, 0.4, 0.8, 0.7, 0.2, 0.9]
    words = []
    for layer, share in enumerate(shares, start=1):
        n_stop = int(round(share * 10))
        lowest = ["the", "of", "and", "to", "a", "in", "is", "it", "that", "was"][:n_stop]
        lowest += [f"word{i}" for i in range(10 - n_stop)]
        words += [{"model": "minilm", "layer": layer, "word": word, "self_similarity": 0.01 * rank, "mev": 0.5,
                   "mev_centred": 0.5, "n_contexts": 5} for rank, word in enumerate(lowest + ["dog", "cat"])]
    per_word = pd.DataFrame(words)
    per_layer = per_layer_table("minilm", [0.05, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7], np.linspace(0.9, 0.3, 7),
                                np.linspace(0.4, 0.1, 7), [0.01] * 7)
    by_key = {f.finding: f for f in claims.findings(evidence_of(per_layer, per_word))}
    finding = by_key["Stopwords have the lowest self-similarity"]
    assert finding.status == "borderline" and "median stopword share 0.55 [95% CI" in finding.ours


def test_stopwords_lowest_already_in_the_input_layer_are_indistinguishable():
    # The two stopwords are the lowest in every layer, the input layer too, where only position varies a word.
    per_layer = per_layer_table("minilm", [0.05, 0.2, 0.3, 0.4], [0.9, 0.7, 0.5, 0.3], [0.4, 0.3, 0.2, 0.1], [0.01] * 4)
    finding = by_claim(claims.findings(evidence_of(per_layer, per_word_table(per_layer), n_lowest=2)))[
        "Stopwords have the lowest self-similarity", "minilm"]
    assert (finding.status, finding.control_status) == ("indistinguishable", "passes")
    # A decoder's input layer gives every word one self-similarity: its lowest words are a tie, no control.
    per_layer = per_layer_table("smollm2", [0.05, 0.2, 0.3, 0.4], [0.0, 0.7, 0.5, 0.3], [0.4, 0.3, 0.2, 0.1], [0.01] * 4)
    per_word = per_word_table(per_layer)
    per_word.loc[per_word.layer == 0, "self_similarity"] = 1.0
    finding = by_claim(claims.findings(evidence_of(per_layer, per_word, n_lowest=2)))[
        "Stopwords have the lowest self-similarity", "smollm2"]
    assert (finding.status, finding.control_status) == ("reproduced", "")


def table1_rows(model, scores_by_embedding, coverage=0.5):
    """Table 1's rows of one model: per embedding (``layer N`` or a static one) its score on each benchmark."""
    return pd.DataFrame([{"model": model, "embedding": embedding, "layer": float(embedding.split()[1])
                          if embedding.startswith("layer") else np.nan, "benchmark": f"B{i}", "score": score,
                          "coverage": coverage}
                         for embedding, scores in scores_by_embedding.items() for i, score in enumerate(scores)])


def test_table1_scores_each_benchmark_with_the_layer_chosen_on_the_others():
    # Layer 1 has the best mean only through B0; chosen without B0, B0 is scored with layer 6, which loses there.
    per_layer = per_layer_table("minilm", [0.05, 0.2, 0.3, 0.4], [0.9, 0.7, 0.5, 0.3], [0.4, 0.3, 0.2, 0.1], [0.01] * 4)
    table1 = table1_rows("minilm", {"layer 1": [1.0, *[0.41] * 5], "layer 6": [0.0, *[0.5] * 5],
                                    "toy (same words)": [0.4] * 6})
    found = by_claim(claims.findings(evidence_of(per_layer, per_word_table(per_layer), n_lowest=2, table1=table1)))
    beats = found["Table 1: PC static embeddings beat GloVe on most benchmarks", "minilm"]
    assert beats.value == pytest.approx(5 / 6)
    assert beats.ours.startswith("the held-out layer (layer 1 for 5, layer 6 for 1) beats toy (same words) in 5 of 6")
    lower = found["Table 1: lower layers give better PC static embeddings than upper layers", "minilm"]
    assert lower.control.startswith("the last layer's") and lower.sampling_unit == "benchmarks"
    # Benchmarks covered below min_coverage count for no Table 1 finding.
    thin = table1_rows("minilm", {"layer 1": [0.9] * 6, "layer 6": [0.1] * 6, "toy (same words)": [0.4] * 6},
                       coverage=0.1)
    found = by_claim(claims.findings(evidence_of(per_layer, per_word_table(per_layer), n_lowest=2, table1=thin)))
    assert {found[claim, "minilm"].status for claim in (
        "Table 1: PC static embeddings beat GloVe on most benchmarks",
        "Table 1: lower layers give better PC static embeddings than upper layers")} == {"not comparable"}


def test_table1_judges_the_input_layer_by_the_same_rule_as_its_control():
    per_layer = per_layer_table("minilm", [0.05, 0.2, 0.3, 0.4], [0.9, 0.7, 0.5, 0.3], [0.4, 0.3, 0.2, 0.1], [0.01] * 4)
    name = "Table 1: PC static embeddings beat GloVe on most benchmarks", "minilm"
    scores = {"layer 1": [0.6] * 4, "layer 3": [0.5] * 4, "toy (same words)": [0.4] * 4}
    statuses = {}
    for case, input_scores in {"no context loses": [0.3] * 4, "no context wins too": [0.3, 0.45, 0.45, 0.45]}.items():
        table1 = table1_rows("minilm", {"layer 0": input_scores, **scores})
        found = by_claim(claims.findings(evidence_of(per_layer, per_word_table(per_layer), n_lowest=2, table1=table1)))
        statuses[case] = found[name]
    assert statuses["no context loses"].status == "reproduced"
    assert statuses["no context loses"].control_status == "fails"
    assert statuses["no context loses"].ours.endswith("; the input layer (layer 0) in 0 of 4")
    assert statuses["no context wins too"].status == "indistinguishable"
    assert statuses["no context wins too"].control_value == 0.75
    # The input layer never takes part in the layers' own comparisons.
    lower = by_claim(claims.findings(evidence_of(per_layer, per_word_table(per_layer), n_lowest=2, table1=table1)))[
        "Table 1: lower layers give better PC static embeddings than upper layers", "minilm"]
    assert lower.ours.startswith("mean score layer 1 0.600 vs layer 3 0.500")
    # Without layer 0 among Table 1's layers the control is not judged, and the line says so.
    table1 = table1_rows("minilm", scores)
    found = by_claim(claims.findings(evidence_of(per_layer, per_word_table(per_layer), n_lowest=2, table1=table1)))
    assert found[name].status == "reproduced" and found[name].control_status == ""
    assert "table1_layers has no 0" in found[name].control


def test_table1_sets_decoders_against_encoders_whose_layers_differ_with_the_input_layers_as_control():
    claim = "Table 1: GPT-2's PC static embeddings are worse than BERT's"
    labels = ["minilm", "smollm2 (start token)"]

    def judged(decoder_layer, decoder_input):
        encoder = table1_rows("minilm", {"layer 0": [0.5] * 4, "layer 1": [0.7, 0.72, 0.69, 0.71], "layer 6": [0.6] * 4})
        decoder = table1_rows("smollm2 (start token)", {"layer 0": decoder_input, "layer 1": decoder_layer,
                                                        "layer 30": [0.3] * 4})
        found = decoders_against_encoders(pd.concat([encoder, decoder]), labels, min_coverage=0.25)
        assert [f.finding for f in found] == [claim]  # the models' layers differ: every benchmark still counts
        return found[0]

    worse = judged([0.55, 0.56, 0.54, 0.57], decoder_input=[0.6] * 4)
    assert (worse.status, worse.control_status) == ("reproduced", "fails")
    assert worse.value == pytest.approx(0.705 - 0.555) and "over 4 benchmarks" in worse.ours
    # The decoder's input layer is as far behind: the gap is there without context, so it cannot be told apart.
    assert judged([0.55, 0.56, 0.54, 0.57], decoder_input=[0.3] * 4).status == "indistinguishable"
    assert judged([0.8, 0.81, 0.79, 0.8], decoder_input=[0.6] * 4).status == "not reproduced"
    # Without a decoder or an encoder among the counted views the claim does not apply.
    encoder = table1_rows("minilm", {"layer 1": [0.7] * 4})
    assert decoders_against_encoders(encoder, ["minilm"], min_coverage=0.25) == []


def test_the_slides_nouns_and_verbs_are_judged_against_words_of_the_same_frequencies():
    # MEV falls with the number of contexts alone: rare words beat frequent ones whatever their part of speech.
    per_layer = per_layer_table("minilm", [0.05, 0.2, 0.3, 0.4], [0.9, 0.7, 0.5, 0.3], [0.4, 0.3, 0.2, 0.1], [0.01] * 4)
    contexts = {"battery": 6, "piano": 7, "go": 300, "take": 280, "table": 6, "chair": 7, "thing": 290, "way": 310}
    per_word = pd.DataFrame([{"model": "minilm", "layer": layer, "word": word, "n_contexts": n, "self_similarity": 0.5,
                              "mev": 1 / np.log(n) + 0.01 * layer, "mev_centred": 0.3}
                             for layer in range(4) for word, n in contexts.items()])
    pairs = {"minilm": [("battery", "go"), ("piano", "take")]}
    finding = by_claim(claims.findings(evidence_of(per_layer, per_word, n_lowest=2, example_pairs=pairs)))[
        "Slides: a concrete noun's MEV stays high, a frequent verb's is lower", "minilm"]
    assert finding.status == "indistinguishable" and finding.control_status == "passes"
    assert "frequency-matched pairs 100% (table/thing 100%, chair/way 100%)" in finding.ours
    # A noun and a verb in as many contexts are matched with two different words, never one word twice.
    equal = per_word.assign(n_contexts=per_word.n_contexts.where(~per_word.word.isin(["go", "take"]), 6))
    finding = by_claim(claims.findings(evidence_of(per_layer, equal, n_lowest=2, example_pairs=pairs)))[
        "Slides: a concrete noun's MEV stays high, a frequent verb's is lower", "minilm"]
    assert "frequency-matched pairs" in finding.ours and "table/table" not in finding.ours
    matched = finding.ours.split("frequency-matched pairs ")[1]
    assert all(pair.split()[0].split("/")[0] != pair.split()[0].split("/")[1]
               for pair in matched[matched.index("(") + 1:-1].split(", "))


def test_views_of_the_first_position_keep_their_paper_model():
    assert settings.counterpart("smollm2 (position 0 dropped)") == "gpt2"
    assert settings.counterpart("gpt2 (start token)") == "gpt2"
    assert settings.counterpart("unknown-model") is None


def test_example_word_pairs_follow_the_stated_rule():
    senses = {("guitar", "noun"): 1, ("car", "noun"): 5, ("syria", "noun"): 1, ("battery", "noun"): 7,
              ("talks", "noun"): 1, ("led", "noun"): 1, ("dog", "noun"): 7, ("dog", "verb"): 3, ("piano", "noun"): 2,
              ("piano", "adverb"): 1, ("apple", "noun"): 2, ("go", "noun"): 4, ("go", "verb"): 30,
              ("make", "verb"): 49, ("run", "noun"): 16, ("run", "verb"): 41, ("hold", "noun"): 8,
              ("hold", "verb"): 45, ("free", "adjective"): 15, ("free", "verb"): 10, ("close", "adjective"): 21,
              ("close", "verb"): 17, ("pass", "verb"): 24, ("pass", "noun"): 9}
    wordnet = pd.DataFrame([{"word": word, "pos": pos, "n_senses": n} for (word, pos), n in senses.items()])
    supersenses = pd.DataFrame({"word": ["guitar", "car", "syria", "battery", "battery", "talks", "led", "dog", "piano",
                                         "apple", "apple"],
                                "supersense": ["noun.artifact", "noun.artifact", "noun.location", "noun.artifact",
                                               "noun.group", "noun.artifact", "noun.artifact", "noun.animal",
                                               "noun.artifact", "noun.food", "noun.plant"]})
    contexts = {"syria": 300, "Guitar": 250, "car": 200, "battery": 190, "talks": 180, "led": 170, "dog": 160,
                "piano": 150, "apple": 40, "go": 400, "make": 210, "run": 120, "hold": 195, "free": 200, "close": 205,
                "pass": 35, "the": 500}
    per_word = pd.DataFrame({"word": list(contexts), "n_contexts": list(contexts.values())})
    # Nouns: car and apple (all senses concrete); not syria (a location), Guitar (capitalised), battery (also a
    # group), talks and led (inflected forms), dog (also a verb), piano (also an adverb). Verbs: hold, run, pass;
    # not go and make (light verbs), free (more often an adjective), close (as often an adjective).
    # Each noun takes the verb of nearest number of contexts: car (200) hold (195), apple (40) pass (35).
    assert contextuality.example_word_pairs(per_word, wordnet, supersenses) == [("car", "hold"), ("apple", "pass")]
    assert contextuality.example_word_pairs(per_word, wordnet, supersenses, n_pairs=1) == [("car", "hold")]
    # A verb is paired once: apple in 196 contexts is nearest hold, which car took; it takes run, the next nearest.
    frequent_apple = per_word.assign(n_contexts=per_word.n_contexts.where(per_word.word != "apple", 196))
    assert contextuality.example_word_pairs(frequent_apple, wordnet, supersenses) == [("car", "hold"), ("apple", "run")]


def test_table1_wide_keeps_the_order_of_rows_and_benchmarks():
    long = pd.DataFrame({"model": ["m", "m", "m", "m", "glove", "glove"],
                         "embedding": ["L1", "L1", "L0", "L0", "glove", "glove"],
                         "benchmark": ["MEN", "RW", "MEN", "RW", "MEN", "RW"],
                         "score": [0.5, 0.4, 0.3, np.nan, 0.7, 0.6], "coverage": [1, 0.5, 1, 0, 1, 1.0]})
    scores, coverage = static_vectors.table1_wide(long)
    assert list(scores.columns) == ["model", "embedding", "MEN", "RW"]
    assert scores.embedding.tolist() == ["L1", "L0", "glove"] and np.isnan(scores.RW[1])
    assert coverage.RW.tolist() == [0.5, 0, 1.0]


# --------------------------------------------------------------------------- one view's tables, stored

TINY_SENTENCES = ["the cat sat on the mat", "a man is playing a guitar", "the dog barks at the cat",
                  "hi there the cat", "the man sat in the rain"] * 2


TOY_STATIC = WordVectors(["cat", "dog", "man", "mat", "rain", "guitar"], np.random.default_rng(0).normal(size=(6, 8)))


def _contextuality_tables(model, **options):
    return contextuality.contextuality_tables(model, TINY_SENTENCES, layers=[0, 1, -1], min_contexts=2, n_samples=20,
                                              table1_layers=[0, 1, -1], static=TOY_STATIC, static_name="toy", **options)


def _embedding_entries(cache_dir):
    folder = cache_dir / "embeddings"
    return sorted(path.parent.name for path in folder.glob("*/meta.json"))


@needs_data
def test_stored_tables_are_the_stepwise_ones_and_free_the_embeddings(tiny_models, cache_dir, monkeypatch):
    from isolib.embed import embed, first_position_norm_ratio

    decoder = tiny_models["gpt2"]
    on_disk = []  # embedding entries present whenever an extraction starts
    real_embed = contextuality.embed

    def recording_embed(*args, **kwargs):
        on_disk.append(_embedding_entries(cache_dir))
        return real_embed(*args, **kwargs)

    monkeypatch.setattr(contextuality, "embed", recording_embed)
    tables = _contextuality_tables(decoder, views=["start_token", "drop"], keep_embeddings=False)
    assert [View.parse(label) for label in tables] == [View(decoder, "keep"), View(decoder, "drop"),
                                                       View(decoder, "start_token")]
    assert all(tables[label].is_decoder for label in tables)
    # "drop" read the "keep" entry before it was deleted; "start_token" was extracted after: never two at once.
    assert [len(entries) for entries in on_disk] == [0, 1, 0]
    assert _embedding_entries(cache_dir) == []

    for label, first_position in zip(tables, ["keep", "drop", "start_token"]):
        embeddings = embed(decoder, TINY_SENTENCES, layers=[0, 1, -1], dtype="float16", keep_special=False,
                           first_position=first_position)
        index = occurrence_index(embeddings.tokens, min_contexts=2)
        per_layer, per_word, per_sentence, baselines = contextuality.contextuality_by_layer(embeddings, index,
                                                                                             n_samples=20)
        ours = tables[label]
        pd.testing.assert_frame_equal(ours.per_layer.drop(columns=["model", "first_position_norm_ratio"]),
                                      per_layer.drop(columns="model"))
        pd.testing.assert_frame_equal(ours.per_word.drop(columns="model"), per_word.drop(columns="model"))
        pd.testing.assert_frame_equal(ours.per_sentence.drop(columns="model"), per_sentence.drop(columns="model"))
        pd.testing.assert_frame_equal(ours.baselines.drop(columns="model"), baselines.drop(columns="model"))
        assert (ours.per_sentence.model == label).all() and (ours.baselines.model == label).all()
        pd.testing.assert_series_equal(ours.norm_ratio, first_position_norm_ratio(embeddings))
        assert ours.n_tokens == len(embeddings.tokens) and ours.n_kept == int(index.occurrences.kept.sum())
        table1 = static_vectors.static_embedding_table(embeddings, index, sorted({0, 1, embeddings.n_layers - 1}),
                                                       TOY_STATIC, static_name="toy")
        pd.testing.assert_frame_equal(ours.table1.drop(columns="model"), table1.drop(columns="model"))

    # A rerun reads the stored tables: nothing is extracted, even though the embeddings are gone.
    def fail(*args, **kwargs):
        raise AssertionError("stored tables must not be computed again")

    monkeypatch.setattr(contextuality, "embed", fail)
    again = _contextuality_tables(decoder, views=["start_token", "drop"], keep_embeddings=False)
    for label in tables:
        pd.testing.assert_frame_equal(again[label].per_layer, tables[label].per_layer)
        pd.testing.assert_frame_equal(again[label].table1, tables[label].table1)
    with pytest.raises(AssertionError, match="must not be computed again"):  # another option: computed
        _contextuality_tables(decoder, views=["start_token", "drop"], keep_embeddings=False, random_state=1)


@needs_data
def test_an_encoder_has_one_view_and_keeps_its_embeddings_if_asked(tiny_models, cache_dir):
    tables = _contextuality_tables(tiny_models["bert"], views=["start_token"], keep_embeddings=True)
    assert len(tables) == 1 and not next(iter(tables.values())).is_decoder
    assert _embedding_entries(cache_dir) == [next(iter(tables.values())).entry]
    with pytest.raises(ValueError, match="views must be among"):
        _contextuality_tables(tiny_models["bert"], views=["keep"])


# --------------------------------------------------------------------------- the evidence, stored and judged again


def whole_evidence():
    """Evidence of a run on an encoder and a decoder in two views, every item the notebook stores."""
    labels = {"minilm": [0.05, 0.2, 0.3, 0.4], "smollm2": [0.3, 0.8, 0.8, 0.9], "smollm2 (start token)": [0.3, 0.1, 0.2, 0.3]}
    per_layer = pd.concat([per_layer_table(label, baseline, [0.9, 0.7, 0.5, 0.3], [0.4, 0.3, 0.2, 0.25], [0.01] * 4)
                           for label, baseline in labels.items()], ignore_index=True)
    words = ["the", "of", "dog", "battery", "go"]
    per_word = pd.DataFrame([{"model": row.model, "layer": row.layer, "word": word, "n_contexts": 5 + rank,
                              "self_similarity": row.self_similarity + delta, "mev": row.mev + delta / 10,
                              "mev_centred": np.nan if row.layer == 0 else 0.3}
                             for row in per_layer.itertuples()
                             for rank, (word, delta) in enumerate(zip(words, [-0.02, -0.01, 0.03, 0.04, -0.04]))])
    per_sentence = pd.DataFrame([{"model": row.model, "layer": row.layer, "sentence_id": sentence,
                                  "intra_similarity": row.intra_similarity + 0.01 * sentence}
                                 for row in per_layer.itertuples() for sentence in range(3)])
    benchmarks = ["MEN", "RW", "WS353"]
    table1 = pd.DataFrame([{"model": label, "embedding": embedding, "layer": layer, "benchmark": benchmark,
                            "score": score + 0.01 * i, "coverage": 0.5}
                           for label, shift in zip(labels, [0.2, 0.0, 0.05])
                           for embedding, layer, score in [("layer 0", 0.0, 0.3), ("layer 1", 1.0, 0.5 + shift),
                                                           ("layer 3", 3.0, 0.4 + shift),
                                                           ("toy (same words)", np.nan, 0.45)]
                           for i, benchmark in enumerate(benchmarks)])
    run = {"profile": "quick", "models": ["minilm", "smollm2"], "corpus": "sts", "n_sentences": 3, "unit": "token",
           "min_contexts": 5, "n_samples": 1000, "max_occurrences": 0, "decoder_views": ["start_token"],
           "static_baseline": "toy", "n_lowest": 2, "min_coverage": 0.25, "wall_minutes": 0.25, "peak_gib": 1.5}
    return {**evidence_of(per_layer, per_word, n_lowest=2, baselines=baselines_of(per_layer, 0.01, -0.01)), "run": run,
            "per_sentence": per_sentence,
            "example_pairs": {label: [("battery", "go"), ("dog", "of")] for label in labels}, "table1": table1}


@pytest.fixture
def few_resamples(monkeypatch):
    """The claims' bootstraps over rows (``bootstrap_threshold``) with 50 resamples: a test of what is judged from what,
    in seconds (the per-type intervals are weighted and fast at 2,000)."""
    import functools

    monkeypatch.setattr(claims, "bootstrap_threshold", functools.partial(claims.bootstrap_threshold, n_resamples=50))


def test_the_stored_evidence_is_judged_again_to_the_same_record(tmp_path, few_resamples):
    from isolib.evidence import judge, load_evidence, save_evidence
    from isolib.findings import read_record

    evidence = whole_evidence()
    expected = claims.record(evidence)
    save_evidence(tmp_path, evidence)
    for name, table in load_evidence(tmp_path).items():  # the evidence comes back exactly
        if isinstance(table, pd.DataFrame):
            pd.testing.assert_frame_equal(table, evidence[name])
    # (repr: a finding whose value is NaN is not == to itself)
    assert repr(judge(tmp_path, claims.record)) == repr(expected) == repr(read_record(tmp_path))
    found = {(f.finding, f.model): f for f in expected.findings}
    # Every part of the evidence is judged: the example words, Table 1 per model and across models.
    assert found["Slides: a concrete noun's MEV stays high, a frequent verb's is lower", "minilm"].status == "reproduced"
    assert found["Table 1: PC static embeddings beat GloVe on most benchmarks", "minilm"].sampling_unit == "benchmarks"
    # The decoder's paper procedure (the sink kept) enters no finding across models.
    assert found["Table 1: GPT-2's PC static embeddings are worse than BERT's",
                 "smollm2 (start token), minilm"].status == "reproduced"
    assert {f.stand_in for f in expected.findings if f.model != "-"} == {"minilm", "smollm2", "smollm2, minilm"}
    assert expected.notes[0].startswith("Profile `quick`: models minilm, smollm2; 3 STS sentences; unit `token`")
    assert "MEV and PC vectors from at most all occurrences" in expected.notes[0]
    assert expected.notes[-1] == ("Wall time of the notebook: 0.2 min, reading from the cache what an earlier run "
                                 "stored (each model view's tables); the time from nothing is in "
                                 "docs/performance.md. Peak memory of the kernel: 1.5 GiB.")
    assert expected.models.endswith("; static baseline toy; ELMo is not run.")
    assert expected.notes[1].startswith("Every claim about layers is judged over the non-input layers")


def test_a_notebook_section_is_judged_on_the_evidence_computed_so_far(few_resamples):
    evidence = whole_evidence()
    partial = {name: evidence[name] for name in ("run", "per_layer", "baselines", "per_word", "lowest")}
    claims_judged = {f.finding for f in claims.findings(partial)}
    assert not any(claim.startswith(("Table 1", "Slides: a concrete noun")) for claim in claims_judged)
    assert "Anisotropy grows with depth" in claims_judged
    with pytest.raises(KeyError):  # a section that has not computed what it judges is a mistake, not a skip
        claims.findings({name: evidence[name] for name in ("run", "per_layer", "baselines", "per_word")})


def test_stored_steps_are_keyed_by_the_computation_alone():
    from isolib.computation import computation_modules

    keyed = set(computation_modules([contextuality]))
    study = "isolib.studies.ethayarajh_contextuality"
    assert {f"{study}.compute", f"{study}.occurrences", f"{study}.static_vectors", "isolib.metrics",
            "isolib.evaluation", "isolib.embed"} <= keyed
    # Claims, rules, figures, settings and prose never invalidate a stored step.
    assert not {f"{study}.claims", f"{study}.figures", f"{study}.settings", "isolib.findings", "isolib.plotting"} & keyed
    assert not any(name.startswith("isolib.findings") for name in keyed)


def test_the_parameter_check_loads_no_computation_and_no_plotting():
    import subprocess
    import sys

    code = ("import sys; from isolib.studies.ethayarajh_contextuality.settings import check_parameters; "
            "print(sorted({'matplotlib', 'sklearn', 'torch', 'isolib.metrics'} & set(sys.modules)))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


def test_views_are_drawn_by_model_and_first_position():
    per_layer = pd.DataFrame({"model": ["minilm", "smollm2", "smollm2 (start token)"], "layer": [1, 1, 1]})
    plotted = figures.by_view(per_layer)
    assert plotted.model.tolist() == ["minilm", "smollm2", "smollm2"]
    assert plotted.view.tolist() == ["keep", "keep", "start_token"]
