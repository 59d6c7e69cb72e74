"""The study module of notebook 02 (Cai et al. 2021), on constructed data with a known answer and on real PTB."""

import numpy as np
import pandas as pd
import pytest

from isolib import datasets
from isolib.embed import TOKEN_COLUMNS
from isolib.findings import STATUSES
from isolib.metrics import lid_mle
from isolib.studies.cai_clusters_manifolds import (
    assess_findings,
    cluster_means,
    describe_symbols,
    layer_name,
    lid_against_n,
    lid_variants,
    middle_layer,
    paper_layer,
    per_cluster_similarity,
    picture_findings,
    running_text_windows,
    token_types,
)


def test_layer_indexing_maps_ours_to_the_authors():
    assert paper_layer(0) is None  # the authors never analysed the input layer
    assert paper_layer(1) == 0 and paper_layer(7) == 6
    assert layer_name(0) == "L0" and layer_name(7) == "L7 (paper 6)"
    assert middle_layer(13) == 7  # BERT / GPT-2: the paper's layer 6
    assert middle_layer(7) == 4


@pytest.fixture(scope="module")
def minilm_tokenizer(minilm):
    return minilm.tokenizer


@pytest.fixture(scope="module")
def ptb_lines():
    if not datasets.dataset_path("ptb").exists():
        pytest.skip("PTB is not available")
    return datasets.load_corpus("ptb", split="valid").text.tolist()[:300]


@pytest.mark.models
def test_windows_are_consecutive_full_and_never_split_a_word(minilm_tokenizer, ptb_lines):
    windows = running_text_windows(ptb_lines, minilm_tokenizer, window_length=64)
    assert windows.attrs["n_windows"] == len(windows) > 10
    assert (windows.n_pieces <= 64).all() and (windows.n_pieces >= 56).all()  # full up to a word's pieces
    # Non-overlapping and consecutive: each window starts where the previous one's pieces end.
    content = windows.n_pieces - 2  # [CLS] and [SEP]
    assert (windows.first_piece.iloc[1:].to_numpy() == (windows.first_piece + content).iloc[:-1].to_numpy()).all()
    # The short last window is dropped: what is left after the last window is less than a window.
    left = windows.attrs["n_pieces"] - (windows.first_piece.iloc[-1] + content.iloc[-1])
    assert 0 <= left < 62
    # Never a word split: every window's text is whole words of the stream.
    words = " ".join(ptb_lines).split()
    joined = " ".join(windows.text).split()
    assert joined == words[:len(joined)]


@pytest.mark.models
def test_a_budget_draws_windows_reproducibly_in_corpus_order(minilm_tokenizer, ptb_lines):
    drawn = running_text_windows(ptb_lines, minilm_tokenizer, window_length=64, token_budget=64 * 5, random_state=1)
    assert len(drawn) == 5 and drawn.window.is_monotonic_increasing
    again = running_text_windows(ptb_lines, minilm_tokenizer, window_length=64, token_budget=64 * 5, random_state=1)
    pd.testing.assert_frame_equal(drawn, again)
    with pytest.raises(ValueError, match="fewer than one window"):
        running_text_windows(ptb_lines[:2], minilm_tokenizer, window_length=512)


def _tokens(pieces_per_window):
    rows = []
    for window, pieces in enumerate(pieces_per_window):
        for position, piece in enumerate(pieces):
            special = piece in ("[CLS]", "[SEP]")
            rows.append((window, position, piece, -1 if special else position, piece, special))
    return pd.DataFrame(rows, columns=list(TOKEN_COLUMNS))


def test_symbol_tokens_and_special_tokens_are_left_out_unless_kept():
    tokens = _tokens([["[CLS]", "the", "cat", ",", "$", "5", "Ġthe", "[SEP]"], ["[CLS]", "##s", ".", "the", "[SEP]"]])
    words = token_types(tokens)
    assert list(words.types) == ["the", "cat", "5", "the", "##s", "the"]  # Ġ dropped, ## kept, digits are words
    assert list(words.frequency) == [3, 1, 1, 3, 1, 3]
    assert list(words.positions) == [1, 2, 5, 6, 1, 3] and list(words.windows) == [0, 0, 0, 0, 1, 1]
    assert list(tokens.token[words.symbol_rows]) == [",", "$", "."]
    everything = token_types(tokens, keep_symbols=True)
    assert len(everything.rows) == len(tokens) and everything.is_symbol.sum() == 3  # [CLS] has letters
    assert list(token_types(tokens, max_windows=1).windows) == [0, 0, 0, 0]
    with pytest.raises(ValueError, match="No token is left"):
        token_types(_tokens([["[CLS]", ".", "[SEP]"]]))


def test_per_cluster_similarity_and_its_two_means_on_a_constructed_example():
    e = np.eye(6)
    # Cluster 0 (4 tokens): after centring, a = e1, e1 and b = -e1, -e1. Cluster 1 (6 tokens): c = e2, d = e3,
    # e = -e2 - e3, two instances each. Each cluster sits far from the origin (its mean is removed).
    centred = [e[0], e[0], -e[0], -e[0], e[1], e[1], e[2], e[2], -e[1] - e[2], -e[1] - e[2]]
    clusters = np.array([0] * 4 + [1] * 6)
    X = np.array(centred) + np.where(clusters[:, None] == 0, 10 * e[3], 10 * e[4])
    types = np.array(list("aabbccddee"))
    table = per_cluster_similarity(X, types, clusters, random_state=0)
    assert table["size"].tolist() == [4, 6] and table.n_types.tolist() == [2, 3]
    inter = [-1.0, -np.sqrt(2) / 3]  # cos(c, d) = 0, cos(c, e) = cos(d, e) = -1/sqrt(2)
    np.testing.assert_allclose(table.s_inter, inter, atol=1e-12)
    np.testing.assert_allclose(table.s_intra, [1.0, 1.0], atol=1e-12)
    unweighted, weighted = cluster_means(table, "s_inter")
    assert unweighted == pytest.approx(np.mean(inter))
    assert weighted == pytest.approx((4 * inter[0] + 6 * inter[1]) / 10)
    # A singleton cluster is all zero after centring: it has no S and does not count.
    table = per_cluster_similarity(np.vstack([X, 5 * e[5]]), np.append(types, "f"), np.append(clusters, 2))
    assert table.set_index("cluster").loc[2, ["s_inter", "s_intra"]].isna().all()
    assert cluster_means(table, "s_inter")[0] == pytest.approx(np.mean(inter))


def _query_seed(random_state):
    """The query seed :func:`lid_variants` draws from ``random_state``."""
    return int(np.random.default_rng(random_state).integers(2**31 - 1))


def test_lid_on_squared_distances_is_half_the_true_value_on_a_5_dimensional_subspace():
    generator = np.random.default_rng(0)
    X = generator.normal(size=(3000, 5)) @ generator.normal(size=(5, 40))
    values = lid_variants(X, k=50, queries=500, random_state=0)
    assert values["lid_euclidean"] == pytest.approx(5, abs=0.8)
    for metric in ("euclidean", "cosine"):  # the halved value is what the squared-distance estimator measures
        measured = lid_mle(X, k=50, metric=metric, squared=True, queries=500, random_state=_query_seed(0))
        assert values[f"lid_{metric}_squared"] == pytest.approx(measured, rel=1e-12)
        assert measured == pytest.approx(values[f"lid_{metric}"] / 2, rel=1e-12)
    assert values["lid_cosine"] == pytest.approx(4, abs=0.8)  # on the sphere, one dimension fewer


def test_lid_against_n_uses_nested_sizes_up_to_every_point():
    X = np.random.default_rng(0).normal(size=(600, 8))
    curve = lid_against_n(X, [50, 200, 400, 10_000], k=20, queries=100, random_state=0)
    assert curve.n.tolist() == [50, 200, 400, 600]
    np.testing.assert_allclose(curve.lid_cosine_squared, curve.lid_cosine / 2)
    assert curve.lid_cosine.between(4, 9).all()


def _per_layer(model, s_inter, s_intra, n_clusters, inside, lid):
    layers = np.arange(len(s_inter))
    return pd.DataFrame({
        "model": model, "corpus": "ptb", "layer": layers, "n_layers": len(layers), "n_tokens": 1000,
        "s_inter": s_inter, "s_intra": s_intra, "n_clusters": n_clusters, "silhouette": 0.2,
        "s_inter_clusters": inside, "s_inter_clusters_weighted": inside, "s_inter_centred": 0.0,
        "lid_cosine": lid, "lid_cosine_squared": np.asarray(lid) / 2,
    })


def test_findings_follow_their_rules():
    per_layer = pd.concat([
        _per_layer("gpt2", [0.0, 0.5, 0.6], [0.1, 0.8, 0.9], [1, 2, 3], [0.3, 0.01, -0.02], [9.0, 12.0, 14.0]),
        _per_layer("minilm", [0.0, 0.05, 0.6], [0.1, 0.8, 0.9], [1, 1, 1], [0.3, 0.2, 0.0], [30.0, 40.0, 40.0]),
    ])
    table3 = pd.DataFrame({"model": ["gpt2", "minilm", "static"], "corpus": ["ptb", "ptb", "glove"],
                           "n": [1000, 1000, 1000], "lid_cosine": [13.0, 40.0, 30.0],
                           "lid_cosine_squared": [6.5, 20.0, 15.0]})
    curve = pd.DataFrame({"model": ["gpt2", "gpt2", "static", "static"], "n": [100, 1000, 100, 1000],
                          "lid_cosine": [20.0, 13.0, 15.0, 30.0]})
    findings = assess_findings(per_layer, table3, curve, swiss_roll={"gpt2": "a picture"})
    assert {finding.status for finding in findings} <= set(STATUSES)

    def status(claim, model):
        (found,) = [finding.status for finding in findings if finding.finding.startswith(claim) and finding.model == model]
        return found

    assert status("Anisotropy in every layer", "gpt2, ptb") == "reproduced"
    assert status("Anisotropy in every layer", "minilm, ptb") == "not reproduced"  # S_inter 0.05 at L1
    assert status("The space is dominated", "gpt2, ptb") == "reproduced"
    assert status("The space is dominated", "minilm, ptb") == "not reproduced"
    assert status("Inside clusters", "gpt2, ptb") == "reproduced"  # layer 0 is not judged
    assert status("Contextual spaces", "gpt2, ptb") == "reproduced"
    assert status("Contextual spaces", "minilm, ptb") == "not reproduced"
    assert status("Beyond the paper", "gpt2") == "not reproduced"  # 20 > 15 at n = 100
    assert status("Table 3: average cosine LID of GPT-2", "gpt2") == "reproduced"  # 6.5 within 1.0 of 7.0
    assert status("Table 3: average cosine LID of D-BERT", "minilm") == "not comparable"  # a stand-in for DistilBERT
    assert status("A Swiss-roll", "gpt2") == "not comparable"


def test_pictures_are_described_not_judged():
    generator = np.random.default_rng(0)
    apart = np.vstack([generator.normal(size=(50, 2)), generator.normal(size=(450, 2)) + 20])
    is_symbol = np.arange(500) < 50
    described = describe_symbols(apart, is_symbol, sample_size=400)
    assert described.startswith("50 symbol tokens of 500 (10.0%); silhouette of symbols against words in the view ")
    assert float(described.rsplit(" ", 1)[1]) > 0.9  # groups 20 standard deviations apart
    mixed = describe_symbols(generator.normal(size=(500, 2)), is_symbol)
    assert float(mixed.rsplit(" ", 1)[1]) < 0.1  # overlapping groups
    assert describe_symbols(apart, np.zeros(500, bool)).endswith("no silhouette with one group")
    findings = picture_findings({}, {"minilm": mixed})
    assert [f.status for f in findings] == ["not comparable", "not comparable"]
    assert "no decoder in this run" in findings[0].rule and findings[1].ours == mixed
