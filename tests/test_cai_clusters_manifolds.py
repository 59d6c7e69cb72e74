"""The study package of notebook 02 (Cai et al. 2021), on constructed data with a known answer and on real PTB."""

import numpy as np
import pandas as pd
import pytest

from isolib import datasets
from isolib.embed import TOKEN_COLUMNS, token_table
from isolib.findings import STATUSES
from isolib.metrics import lid_mle
from isolib.studies.cai_clusters_manifolds import compute
from isolib.studies.cai_clusters_manifolds.claims import findings, layer_findings, picture_findings
from isolib.studies.cai_clusters_manifolds.compute import (
    describe_extremes,
    describe_symbols,
    layer_name,
    lid_against_n,
    middle_layer,
    paper_layer,
    token_types,
)
from isolib.studies.cai_clusters_manifolds.measures import (
    centring_units,
    cluster_means,
    describe_clusters,
    layer_geometry,
    lid_variants,
    per_cluster_similarity,
)
from isolib.views import View
from isolib.windows import placeholder_mask, running_text_windows


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
    assert len(token_types(tokens, keep_symbols=True, max_windows=1).rows) == 8  # the symbols kept, one window
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
    # Repeated tokens (the same vector several times): as many queries as points still works.
    repeated = np.vstack([X, X[:8]])
    assert lid_against_n(repeated, [300], k=20, queries=608, random_state=0).n.tolist() == [300, 608]


def _units(model, layers, per_cluster, global_, n_units=400, random_state=0):
    """Centring units of one model: per type and layer, its per-cluster and global value plus noise."""
    generator = np.random.default_rng(random_state)
    rows = []
    for layer in layers:
        noise = generator.normal(scale=0.05, size=n_units)
        rows.append(pd.DataFrame({"model": model, "corpus": "ptb", "layer": layer, "unit": np.arange(n_units),
                                  "per_cluster": per_cluster + noise, "global": global_ + noise}))
    return pd.concat(rows, ignore_index=True)


def _silhouettes(model, layers, n_clusters, scores):
    """Three restarts per layer at its chosen k, each with the given silhouette (and a jitter)."""
    return pd.DataFrame([(model, "ptb", layer, k, restart, score + 0.01 * (restart - 1))
                         for layer, k, score in zip(layers, n_clusters, scores) for restart in range(3)],
                        columns=["model", "corpus", "layer", "k", "restart", "silhouette"])


def _per_layer(model, s_inter, s_intra, n_clusters, inside, lid, gaussian=(1, 0.05)):
    """Per-layer rows of one model; ``gaussian``: its control's chosen k and silhouette in every layer."""
    layers = np.arange(len(s_inter))
    return pd.DataFrame({
        "model": model, "corpus": "ptb", "layer": layers, "n_layers": len(layers), "n_tokens": 1000,
        "s_inter": s_inter, "s_intra": s_intra, "n_clusters": n_clusters, "silhouette": 0.2,
        "s_inter_clusters": inside, "s_inter_clusters_weighted": inside, "s_inter_centred": 0.0,
        "lid_cosine": lid, "lid_cosine_squared": np.asarray(lid) / 2,
        "gaussian_n_clusters": gaussian[0], "gaussian_silhouette": gaussian[1],
    })


def _clusters(model, n_clusters, artefact=None):
    """The chosen clusters of each layer with k >= 2: many types each, norms like the layer's. ``artefact``: the
    make-up of the last cluster of every layer instead (``why``, ``dominant_type_share``, ``norm_ratio``)."""
    rows = []
    for layer, k in enumerate(n_clusters):
        for cluster in range(k if k > 1 else 0):
            made = dict(why="", dominant_type_share=0.1, norm_ratio=1.0)
            if artefact and cluster == k - 1:
                made |= artefact
            rows.append(dict(model=model, corpus="ptb", layer=layer, cluster=cluster, top_types="the 10%", **made))
    return pd.DataFrame(rows, columns=["model", "corpus", "layer", "cluster", "top_types", "why", "dominant_type_share",
                                       "norm_ratio"])


def test_findings_follow_their_rules():
    per_layer = pd.concat([
        _per_layer("gpt2", [0.0, 0.5, 0.6], [0.1, 0.8, 0.9], [1, 2, 3], [0.3, 0.01, -0.02], [9.0, 12.0, 14.0]),
        _per_layer("minilm", [0.0, 0.05, 0.6], [0.1, 0.8, 0.9], [1, 1, 1], [0.3, 0.2, 0.0], [30.0, 40.0, 40.0]),
        _per_layer("mpnet", [0.0, 0.5, 0.6], [0.1, 0.8, 0.9], [2, 2, 2], [0.3, 0.01, 0.0], [9.0, 12.0, 14.0]),
    ])
    # Every layer of mpnet split in two, but one of the two is an outlier group (the attention sink, say).
    clusters = pd.concat([_clusters("gpt2", [1, 2, 3]), _clusters("minilm", [1, 1, 1]),
                          _clusters("mpnet", [2, 2, 2], {"why": "window-first tokens (the sink)"})])
    silhouettes = pd.concat([_silhouettes("gpt2", [0, 1, 2], [1, 2, 3], [0.05, 0.3, 0.3]),
                             _silhouettes("minilm", [0, 1, 2], [1, 1, 1], [0.05, 0.05, 0.05]),
                             _silhouettes("mpnet", [0, 1, 2], [2, 2, 2], [0.9, 0.98, 0.98])])
    units = pd.concat([_units("gpt2", [0, 1, 2], 0.01, 0.3),  # per-cluster centring beats global centring
                       _units("minilm", [0, 1, 2], 0.2, 0.2),  # k = 1: per-cluster centring is global centring
                       _units("mpnet", [0, 1, 2], 0.08, 0.045)])  # the encoders' case: per-cluster is higher
    table3 = pd.DataFrame({"model": ["gpt2", "minilm", "static"], "corpus": ["ptb", "ptb", "glove"],
                           "n": [1000, 1000, 1000], "lid_cosine": [13.0, 40.0, 30.0],
                           "lid_cosine_squared": [6.5, 20.0, 15.0]})
    curve = pd.DataFrame({"model": ["gpt2", "gpt2", "minilm", "minilm", "mpnet", "mpnet", "static", "static"],
                          "n": [100, 1000] * 4, "layer": [1] * 8,
                          "lid_cosine": [20.0, 13.0, 50.0, 40.0, 10.0, 12.0, 15.0, 30.0]})
    judged = findings({"per_layer": per_layer, "silhouettes": silhouettes, "clusters": clusters, "units": units,
                       "table3": table3, "lid_curve": curve, "swiss_roll": {"gpt2": "a picture"}})
    assert {finding.status for finding in judged} <= set(STATUSES)

    def status(claim, model):
        (found,) = [finding.status for finding in judged if finding.finding.startswith(claim) and finding.model == model]
        return found

    assert status("Anisotropy in every layer", "gpt2") == "reproduced"
    assert status("Anisotropy in every layer", "minilm") == "not reproduced"  # S_inter 0.05 at L1
    assert status("The space is dominated", "gpt2") == "reproduced"
    assert status("The space is dominated", "minilm") == "not reproduced"
    assert status("The space is dominated", "mpnet") == "not reproduced"  # silhouette 0.98 from outlier groups
    assert status("Per-cluster centring", "gpt2") == "reproduced"
    assert status("Per-cluster centring", "minilm") == "not reproduced"  # a difference of exactly 0
    assert status("Per-cluster centring", "mpnet") == "not reproduced"  # global centring does better
    assert status("Inside clusters", "gpt2") == "reproduced"  # layer 0 is not judged
    assert status("Inside clusters", "mpnet") == "not reproduced"  # 0.08 > 0.05
    assert status("Contextual spaces", "gpt2") == "reproduced"  # above the static LID at n = 100, below at 1,000
    assert status("Contextual spaces", "minilm") == "not reproduced"  # above at every n
    assert status("Contextual spaces", "mpnet") == "reproduced"  # below at every n
    assert status("Table 3: average cosine LID of GPT-2", "gpt2") == "reproduced"  # 6.5 within 1.0 of 7.0
    assert status("Table 3: average cosine LID of D-BERT", "minilm") == "not comparable"  # a stand-in for DistilBERT
    assert status("A Swiss-roll", "gpt2") == "not comparable"
    # A picture is described, never counted as a test.
    assert not [finding for finding in judged if finding.finding.startswith("A Swiss-roll")][0].counted
    inside = [finding for finding in judged if finding.finding.startswith("Inside clusters")]
    assert all("Threshold ours" in finding.rule for finding in inside)
    # Each interval says what it resamples.
    assert all(finding.sampling_unit.startswith("types") for finding in inside)


def test_a_decoder_is_judged_in_its_start_token_view_and_the_symbols_view_is_not_counted():
    layers = [0, 1, 2]
    per_layer = pd.concat([
        _per_layer("smollm2", [0.1, 0.5, 0.6], [0.2, 0.8, 0.9], [1, 2, 2], [0.3, 0.01, 0.0], [9.0, 9.0, 9.0]),
        _per_layer("smollm2 (start token)", [0.1, 0.5, 0.6], [0.2, 0.8, 0.9], [1, 1, 1], [0.3, 0.2, 0.0],
                   [9.0, 9.0, 9.0]),
        _per_layer(View("minilm", symbols_kept=True).label, [0.1, 0.5, 0.6], [0.2, 0.8, 0.9], [1, 2, 2], [0.3, 0.01, 0.0],
                   [9.0, 9.0, 9.0]),
    ])
    silhouettes = pd.concat([_silhouettes("smollm2", layers, [1, 2, 2], [0.0, 0.9, 0.9]),
                             _silhouettes("smollm2 (start token)", layers, [1, 1, 1], [0.0, 0.05, 0.05]),
                             _silhouettes(View("minilm", symbols_kept=True).label, layers, [1, 2, 2], [0.0, 0.9, 0.9])])
    units = pd.concat([_units(label, layers, 0.0, 0.1) for label in pd.unique(per_layer.model)])
    clusters = pd.concat([_clusters("smollm2", [1, 2, 2]), _clusters("smollm2 (start token)", [1, 1, 1]),
                          _clusters(View("minilm", symbols_kept=True).label, [1, 2, 2])])
    judged = layer_findings({"per_layer": per_layer, "silhouettes": silhouettes, "clusters": clusters, "units": units})
    dominated = {finding.model: finding for finding in judged if finding.finding.startswith("The space is dominated")}
    assert dominated["smollm2 (start token)"].counted and dominated["smollm2 (start token)"].status == \
        "not reproduced"
    assert not dominated["smollm2"].counted and dominated["smollm2"].status == "reproduced"
    assert "attention sink" in dominated["smollm2"].note  # holds only with the sink
    assert not dominated["minilm (symbols kept)"].counted


def _one_model(model="gpt2", *, corpus="ptb", s_inter_centred=0.0, gaussian=(1, 0.05), per_cluster=0.01,
               global_=0.3, artefact=None):
    """The layer evidence of one model that reproduces every per-layer claim, but for what the arguments change."""
    per_layer = _per_layer(model, [0.0, 0.5, 0.6], [0.1, 0.8, 0.9], [1, 2, 2], [0.3, 0.01, 0.0], [9.0, 9.0, 9.0],
                           gaussian=gaussian).assign(s_inter_centred=s_inter_centred)
    evidence = {"per_layer": per_layer, "silhouettes": _silhouettes(model, [0, 1, 2], [1, 2, 2], [0.05, 0.3, 0.3]),
                "clusters": _clusters(model, [1, 2, 2], artefact), "units": _units(model, [0, 1, 2], per_cluster, global_)}
    return {name: table.assign(corpus=corpus) for name, table in evidence.items()}


def _statuses(evidence):
    return {finding.finding.split(":")[0]: finding for finding in layer_findings(evidence)}


def test_a_claim_whose_control_passes_the_same_rule_is_indistinguishable_from_it():
    judged = _statuses(_one_model())
    assert {finding.status for finding in judged.values()} == {"reproduced"}
    assert {finding.control_status for name, finding in judged.items() if not name.startswith("Per-cluster")} == {"fails"}
    # Global centring alone leaves S_inter ~ 0 as well: per-cluster centring shows nothing more.
    inside = _statuses(_one_model(per_cluster=0.01, global_=0.01))["Inside clusters the space is nearly isotropic"]
    assert inside.status == "indistinguishable" and inside.control_status == "passes"
    assert "after global centring 0.0" in inside.ours and "passes too" in inside.rule
    # A Gaussian of each layer's mean and covariance gets k = 2 at a silhouette of 0.3 too.
    assert _statuses(_one_model(gaussian=(2, 0.3)))["The space is dominated by isolated clusters"].status == \
        "indistinguishable"
    assert _statuses(_one_model(gaussian=(2, 0.05)))["The space is dominated by isolated clusters"].status == "reproduced"
    # The globally centred space still has S_inter above 0.1: the anisotropy rule cannot tell.
    assert _statuses(_one_model(s_inter_centred=0.3))["Anisotropy in every layer"].status == "indistinguishable"


def test_corpora_that_disagree_are_mixed_not_borderline():
    both = {name: pd.concat([_one_model()[name], _one_model(per_cluster=0.2, corpus="wikitext2")[name]])
            for name in ("per_layer", "silhouettes", "clusters", "units")}
    inside = _statuses(both)["Inside clusters the space is nearly isotropic"]
    assert inside.status == "mixed" and "ptb:" in inside.ours and "(not reproduced)" in inside.ours


@pytest.mark.parametrize("artefact, reason", [
    ({"dominant_type_share": 0.93}, "93% of it is one token type"),
    ({"norm_ratio": 5.8}, "its median norm is 5.8 times all the points' median"),
    ({"norm_ratio": 0.3}, "its median norm is 0.3 times all the points' median"),
    ({"why": "window-first tokens (the sink)"}, "window-first tokens (the sink)"),
])
def test_a_cluster_of_one_type_far_norms_or_the_sink_is_an_artefact_group_never_structure(artefact, reason):
    from isolib.studies.cai_clusters_manifolds.claims import artefact_groups

    evidence = _one_model(artefact=artefact)
    assert artefact_groups(evidence["clusters"]).tolist() == ["", reason] * 2
    clustered = _statuses(evidence)["The space is dominated by isolated clusters"]
    assert clustered.status == "not reproduced"  # two clusters per layer, one of them an artefact group
    assert f"2 artefact groups: L1 (the 10%: {reason}); L2 (the 10%: {reason})" in clustered.ours


def _lid(contextual, static, n=(1000, 10_000, 40_000)):
    """A matched LID curve of one model and the static vectors (its table3: the model's mean at the largest n)."""
    curve = pd.DataFrame({"model": ["gpt2"] * len(n) + ["static"] * len(n), "n": list(n) * 2, "layer": 7,
                          "lid_cosine": [*contextual, *static]})
    table3 = pd.DataFrame({"model": ["gpt2", "static"], "corpus": ["ptb", "glove-50d"], "n": [n[-1]] * 2,
                           "lid_cosine": [contextual[-1], static[-1]], "lid_cosine_squared": [0.0, 0.0]})
    evidence = _one_model() | {"lid_curve": curve, "table3": table3}
    return _statuses(evidence)["Contextual spaces have a lower LID than static ones"]


def test_the_lid_claim_is_judged_at_the_largest_n_and_on_the_trend_toward_more_points():
    # Above the static vectors at 1,000 points (k = 100 is 10% of them), below from 10,000 on, the gap widening.
    widening = _lid([19.6, 15.4, 12.9], [17.6, 20.1, 21.1])
    assert widening.status == "reproduced" and "at n = 40,000: 12.9 against 21.1 (gap -8.2)" in widening.ours
    # Below at the largest n, but the gap narrowing with n: more points would reverse the order.
    assert _lid([10.0, 14.0, 18.0], [20.0, 20.0, 20.0]).status == "not reproduced"
    assert _lid([25.0, 24.0, 23.0], [20.0, 20.0, 20.0]).status == "not reproduced"  # above at every n


def test_rows_of_a_view_not_counted_in_the_layer_claims_are_counted_nowhere():
    evidence = {name: pd.concat([_one_model("smollm2")[name], _one_model("smollm2 (start token)")[name]])
                for name in ("per_layer", "silhouettes", "clusters", "units")}
    evidence["table3"] = pd.DataFrame({"model": ["smollm2", "smollm2 (start token)", "static"],
                                       "corpus": ["ptb", "ptb", "glove-50d"], "n": [1000] * 3,
                                       "lid_cosine": [13.0, 13.0, 21.0], "lid_cosine_squared": [6.5, 6.5, 10.5]})
    judged = findings(evidence | {"swiss_roll": {"smollm2": "a roll", "smollm2 (start token)": "a roll"}})
    table3 = {finding.model: finding for finding in judged if finding.finding == "Table 3: average cosine LID of GPT-2"}
    assert table3["smollm2 (start token)"].counted and not table3["smollm2"].counted  # the sink view
    assert not any(finding.counted for finding in judged if finding.finding.startswith("A Swiss-roll"))
    glove = [finding for finding in judged if finding.finding.startswith("Table 3: average cosine LID of GloVe")]
    assert {finding.stand_in for finding in glove} == {"glove-50d"}  # our static vectors stand in for the paper's


def test_a_planted_outlier_group_of_0_2_percent_is_not_a_cluster():
    generator = np.random.default_rng(0)
    # One Gaussian blob of 4,990 tokens and a tight group of 10 (0.2%) far from it: k-means with the silhouette
    # picks k = 2 at a silhouette near 1, but the small group is an outlier group, not a second cluster.
    X = np.vstack([generator.normal(size=(4990, 20)), generator.normal(size=(10, 20)) * 0.1 + 60])
    types = generator.integers(0, 300, len(X)).astype(str)
    positions = generator.integers(1, 500, len(X))
    values, selection, clusters, units = layer_geometry(X, types, positions, k_range=range(2, 5), n_init=3,
                                                        silhouette_sample=2000, lid_k=10, lid_queries=100,
                                                        random_state=0)
    assert selection.n_clusters == 2 and values["silhouette"] > 0.9
    assert values["n_real_clusters"] == 1 and values["n_outlier_groups"] == 1
    small = clusters.iloc[-1]
    assert small["size"] == 10 and small.outlier_group and small.why == "below 1% of the tokens"
    assert small.norm_ratio > 10  # its tokens lie far out
    assert not clusters.iloc[0].outlier_group
    # Every restart is scored: the chosen k comes with its spread.
    assert len(selection.silhouettes) == 3 * 3 and selection.restarts_agreeing == 1.0
    assert set(selection.by_k().columns) >= {"silhouette", "silhouette_std"}
    assert len(units) == len(np.unique(types))  # one unit per type


def test_clusters_of_window_first_tokens_or_placeholders_are_outlier_groups():
    X = np.zeros((400, 2))
    labels = np.repeat([0, 1, 2], [200, 100, 100])
    positions = np.where(labels == 1, 0, 5)  # cluster 1: the attention sink
    placeholder = labels == 2  # cluster 2: pieces of <unk> and N
    table = describe_clusters(X + 1, labels, np.repeat(["the", "a", "n"], [200, 100, 100]), positions, placeholder)
    assert table.outlier_group.tolist() == [False, True, True]
    assert table.why.tolist()[1:] == ["window-first tokens (the sink)", "placeholder pieces"]
    assert table.top_types.tolist() == ["the 100%", "a 100%", "n 100%"]


def test_each_cluster_carries_its_dominant_type_share_and_its_norms_against_the_layers():
    generator = np.random.default_rng(0)
    # Cluster 0: 300 tokens of 30 types at norm 1; cluster 1: 100 tokens, 80 of them "the", at norm 10.
    directions = generator.normal(size=(400, 5))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    labels = np.repeat([0, 1], [300, 100])
    X = directions * np.where(labels == 1, 10.0, 1.0)[:, None]
    types = np.concatenate([np.arange(300) % 30, np.repeat(["the", "a"], [80, 20])]).astype(str)
    table = describe_clusters(X, labels, types, np.ones(400, int)).set_index("cluster")
    np.testing.assert_allclose(table.dominant_type_share, [10 / 300, 0.8])
    np.testing.assert_allclose(table.norm_ratio, [1.0, 10.0], rtol=1e-5)  # median norm over the layer's


def test_the_clusters_control_is_the_same_selection_on_a_gaussian_of_the_layer_s_covariance():
    generator = np.random.default_rng(0)
    # Two tight blobs far apart and one round blob: the silhouette finds two clusters in the first. A Gaussian
    # with their mean and covariance is one elongated cloud: k-means still cuts it in two, at a lower silhouette
    # (the silhouette alone cannot tell the two apart); the round blob's Gaussian has no cut worth 0.1.
    blobs = np.vstack([generator.normal(size=(500, 10)), generator.normal(size=(500, 10)) + np.r_[12, np.zeros(9)]])
    options = dict(k_range=range(2, 5), n_init=2, silhouette_sample=600, lid_k=10, lid_queries=50, random_state=0)
    types = (np.arange(1000) % 100).astype(str)
    values = layer_geometry(blobs, types, np.ones(1000, int), **options)[0]
    assert values["n_clusters"] == 2 and values["silhouette"] > 0.6
    assert values["gaussian_n_clusters"] == 2 and 0.1 < values["gaussian_silhouette"] < values["silhouette"] - 0.2
    round_blob = layer_geometry(generator.normal(size=(1000, 10)), types, np.ones(1000, int), **options)[0]
    assert round_blob["gaussian_n_clusters"] == 1 and round_blob["gaussian_silhouette"] < 0.1


def test_per_cluster_centring_beats_global_centring_only_where_global_centring_is_not_enough():
    from isolib.findings import compare_with_control

    generator = np.random.default_rng(0)
    everything = np.arange(4000)
    # Not enough: a tight cluster of 90% of the tokens and a diffuse one far away. After global centring the
    # tight cluster's vectors all point away from the other one (S_inter ~ 0.64); inside each cluster ~ 0.
    X = np.vstack([generator.normal(size=(3600, 20)) * 0.1, generator.normal(size=(400, 20)) * 2 + 10]) + 5
    per_cluster, global_ = centring_units(X, np.repeat([0, 1], [3600, 400]), everything)
    assert np.nanmean(global_) > 0.5 and abs(np.nanmean(per_cluster)) < 0.02
    assert compare_with_control(per_cluster, global_, higher=False).passed
    # Enough: one elongated blob that k-means would cut in two. Global centring leaves it isotropic; centring
    # each half leaves each half skewed along the cut, so per-cluster S_inter is higher (the encoders' case).
    X = generator.normal(size=(4000, 20)) * np.r_[5, np.ones(19)] + 30
    per_cluster, global_ = centring_units(X, (X[:, 0] > 30).astype(int), everything)
    verdict = compare_with_control(per_cluster, global_, higher=False)
    assert not verdict.passed and not verdict.borderline and verdict.interval[0] > 0
    # Within one cluster the units' mean is that cluster's S_inter after centring it.
    alone = centring_units(X, np.zeros(len(X), int), everything)
    np.testing.assert_allclose(alone[0], alone[1])


def test_placeholders_of_ptb_are_left_out_with_their_count():
    rows = [(0, 0, "[CLS]", -1, "", True)]
    words = [("the", ["the"]), ("<", ["<"]), ("unk", ["un", "##k"]), (">", [">"]), ("rose", ["rose"]),
             ("N", ["n"]), ("%", ["%"]), ("un", ["un"])]
    for word_id, (word, pieces) in enumerate(words):
        rows += [(0, len(rows), piece, word_id, word, False) for piece in pieces]
    tokens = pd.DataFrame(rows, columns=list(TOKEN_COLUMNS))
    assert tokens.token[placeholder_mask(tokens)].tolist() == ["<", "un", "##k", ">", "n"]
    analysed = token_types(tokens)
    assert list(analysed.types) == ["the", "rose", "un"]  # a real "un" stays
    assert analysed.n_placeholders_left_out == 3  # un, ##k, n ("<" and ">" are symbols, left out anyway)
    kept = token_types(tokens, keep_placeholders=True)
    assert list(kept.types) == ["the", "un", "##k", "rose", "n", "un"] and kept.n_placeholders_left_out == 0
    assert kept.is_placeholder.tolist() == [False, True, True, False, True, False]


@pytest.mark.models
def test_placeholders_are_found_in_a_ptb_line_as_minilm_reads_it(minilm_tokenizer):
    tokens = token_table(minilm_tokenizer, ["the <unk> index rose N % to $ N million"])
    found = tokens.token[placeholder_mask(tokens)].tolist()
    assert found == ["<", "un", "##k", ">", "n", "n"]
    assert token_types(tokens).types.tolist() == ["the", "index", "rose", "to", "million"]


def test_extremes_of_a_view_name_the_type_that_makes_a_streak():
    generator = np.random.default_rng(0)
    coordinates = generator.normal(size=(1000, 2))
    coordinates[:10, 0] += 50  # a streak of one type
    types = np.array(["the"] * 10 + ["x"] * 990)
    text = describe_extremes(coordinates, types, np.arange(1000) % 7)
    assert text.startswith("the 1% of tokens farthest along PC1 (10): 'the' 100%; ")


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
    pictures = picture_findings({"swiss_roll": {}, "symbols": {"minilm": mixed}})
    assert [f.status for f in pictures] == ["not comparable", "not comparable"]
    assert "no decoder in this run" in pictures[0].rule and pictures[1].ours == mixed


def _two_groups(layers=(0, 1, 2), n=600, random_state=0):
    """Stand-ins for one model's embeddings and analysed tokens: two groups that move apart from layer 1 on."""
    from pathlib import Path
    from types import SimpleNamespace

    generator = np.random.default_rng(random_state)
    arrays = {layer: np.vstack([generator.normal(size=(n // 2, 8)), generator.normal(size=(n // 2, 8)) + 6 * layer])
              for layer in layers}
    embeddings = SimpleNamespace(layers=list(layers), n_layers=len(layers), layer=arrays.__getitem__,
                                 path=Path("entry"))
    analysed = SimpleNamespace(rows=np.arange(n), types=generator.integers(0, 40, n).astype(str),
                               positions=generator.integers(1, 50, n), is_placeholder=np.zeros(n, dtype=bool))
    return embeddings, analysed


def test_worker_processes_give_the_layers_of_one_process_and_a_rerun_reads_them_back(cache_dir, monkeypatch):
    from isolib.studies.cai_clusters_manifolds.compute import geometry_by_layer

    embeddings, analysed = _two_groups()
    options = dict(k_range=range(2, 4), n_init=2, silhouette_sample=400, lid_k=10, lid_queries=50)
    serial = geometry_by_layer(embeddings, analysed, n_jobs=1, **options)
    parallel = geometry_by_layer(embeddings, analysed, n_jobs=2, **options)
    pd.testing.assert_frame_equal(serial.per_layer, parallel.per_layer, rtol=1e-9)
    # A worker runs k-means on one thread: its float32 inertia is summed in another order.
    pd.testing.assert_frame_equal(serial.silhouettes, parallel.silhouettes, rtol=1e-5)
    assert serial.per_layer.n_clusters.tolist()[1:] == [2, 2]  # two groups apart from layer 1 on
    # With resume, each layer is stored as it is finished; a rerun reads them back without computing.
    stored = geometry_by_layer(embeddings, analysed, n_jobs=1, resume=True, **options)

    def fail(*args, **kwargs):
        raise AssertionError("a stored layer must not be analysed again")

    monkeypatch.setattr(compute, "layer_geometry", fail)
    again = geometry_by_layer(embeddings, analysed, n_jobs=1, resume=True, **options)
    pd.testing.assert_frame_equal(again.per_layer, stored.per_layer)
    pd.testing.assert_frame_equal(again.units, stored.units)
    with pytest.raises(AssertionError, match="must not be analysed"):  # another seed is not stored
        geometry_by_layer(embeddings, analysed, n_jobs=1, resume=True, random_state=1, **options)


def test_the_evidence_is_stored_exactly_and_judged_as_in_memory(tmp_path):
    import dataclasses

    from isolib.evidence import judge, load_evidence, save_evidence
    from isolib.findings import read_record
    from isolib.studies.cai_clusters_manifolds import claims
    from isolib.studies.cai_clusters_manifolds.compute import geometry_by_view

    embeddings, analysed = _two_groups(layers=(0, 1), n=200)
    keys = [(View("minilm"), "ptb"), (View("minilm", symbols_kept=True), "ptb")]
    tables, labels = geometry_by_view(dict.fromkeys(keys, embeddings), dict.fromkeys(keys, analysed),
                                      k_range=range(2, 3), n_init=2, silhouette_sample=200, lid_k=10, lid_queries=50)
    assert labels.keys() == set(keys) and tables["per_layer"].model.unique().tolist() == ["minilm",
                                                                                           "minilm (symbols kept)"]
    curve = lid_against_n(embeddings.layer(1), [100], k=10, queries=50, random_state=0)
    static = lid_against_n(np.random.default_rng(1).normal(size=(900, 8)), [100, 200], k=10, queries=50,
                           random_state=0)
    contextual = compute.mean_lid(tables["per_layer"], {(key[0].label, "ptb"): 8 for key in keys})
    evidence = {name: tables[name] for name in ("per_layer", "silhouettes", "units", "clusters")}
    evidence |= {
        "lid_curve": pd.concat([curve.assign(model="minilm", layer=1), static.assign(model="static", layer=0)],
                               ignore_index=True),
        "table3": compute.with_static(contextual, static, name="glove-50d", dim=8, n_words=900),
        "swiss_roll": {}, "symbols": {"minilm": "4 symbol tokens of 200 (2.0%); silhouette 0.10"},
        "run": dict(profile="quick", models=["minilm"], corpora=["ptb"], window_length=512, token_budget=0,
                    keep_symbols=False, symbols_kept_view=True, keep_placeholders=False, k_max=3, n_init=2,
                    kmeans_fit_size=0, silhouette_sample=400, min_cluster_share=0.01, lid_k=10, lid_queries=50,
                    decoder_views=[], static_baseline="glove-50d", wall_minutes=0.25, peak_gib=1.5)}
    assert evidence["table3"].n.tolist() == [200, 200, 200, 900]  # the static vectors at the same n, and whole
    save_evidence(tmp_path, evidence)  # raises if a table does not survive Parquet unchanged
    stored = load_evidence(tmp_path)
    for name in ("per_layer", "silhouettes", "units", "clusters", "table3", "lid_curve"):
        pd.testing.assert_frame_equal(stored[name], evidence[name])
    in_memory = claims.record(evidence)

    def fields(record):  # a finding's value may be NaN, which no Finding equals
        return pd.DataFrame([dataclasses.asdict(finding) for finding in record.findings])

    for judged in (judge(tmp_path, claims.record), read_record(tmp_path)):
        assert judged.notes == in_memory.notes and judged.models == in_memory.models
        pd.testing.assert_frame_equal(fields(judged), fields(in_memory))
    assert "about all tokens per corpus" in in_memory.notes[0]
    assert "Wall time of the notebook: 0.2 min" in in_memory.notes[2]
    # A sentence encoder reading windows longer than its training inputs is said once.
    assert in_memory.notes[3].startswith("The sentence encoders (minilm) read 512-token windows here")
    assert len(claims.notes(evidence["run"] | {"models": ["smollm2"]})) == 3
    # The symbols-kept view is judged beside its model, not counted.
    assert {f.counted for f in in_memory.findings if f.model == "minilm (symbols kept)"
            and not f.finding.startswith("Table 3")} == {False}


def test_the_stored_layers_are_keyed_by_the_computation_alone():
    from isolib.computation import computation_modules

    keyed = set(computation_modules(compute._LAYER_CODE))
    assert {"isolib.studies.cai_clusters_manifolds.compute", "isolib.studies.cai_clusters_manifolds.measures",
            "isolib.metrics"} <= keyed
    # A claim, a threshold, a figure, the paper's numbers or their prose never recompute a layer.
    assert not keyed & {f"isolib.studies.cai_clusters_manifolds.{part}" for part in ("claims", "figures", "settings")}
    assert not keyed & {"isolib.findings", "isolib.plotting"}
    # And the claims reach no computation: judging loads no model and reads no embedding.
    judging = set(computation_modules(["isolib.studies.cai_clusters_manifolds.claims"]))
    assert "isolib.studies.cai_clusters_manifolds.settings" in judging
    study = "isolib.studies.cai_clusters_manifolds"
    # (isolib.models is reached for the names of the offline models the parameter check accepts, never a model.)
    assert not judging & {f"{study}.compute", f"{study}.measures", "isolib.embed", "isolib.metrics", "isolib.steps"}


def test_a_plot_of_views_groups_each_model_and_names_its_view():
    from isolib.studies.cai_clusters_manifolds.figures import by_model_and_view, percentile_limits

    per_layer = pd.DataFrame({"model": ["smollm2", "smollm2 (start token)", "minilm (symbols kept)"],
                              "corpus": "ptb", "layer": [1, 1, 1]})
    plotted = by_model_and_view(per_layer)
    assert plotted.model.tolist() == ["smollm2, ptb", "smollm2, ptb", "minilm, ptb"]
    assert plotted.view.tolist() == ["keep", "start_token", "keep, symbols kept"]
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    points = np.vstack([np.random.default_rng(0).uniform(0, 1, size=(999, 2)), [[1000.0, -1000.0]]])
    percentile_limits(ax, points)  # one far point (a sink) does not squash the view
    assert ax.get_xlim()[1] < 2 and ax.get_ylim()[0] > -1
    plt.close(fig)
