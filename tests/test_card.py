"""The isotropy card (``python -m isolib card``): on a tiny GPT-2 and a tiny BERT built from their configurations,
judged again from its evidence alone, and refused in one sentence for a wrong name, a model without hidden states
and a corpus too small for the budget."""

import re

import numpy as np
import pandas as pd
import pytest

from isolib.card import claims
from isolib.card.compute import mean_pooling
from isolib.card.settings import POST_PROCESSINGS, CardSettings
from isolib.cli import main
from isolib.evaluation import mean_pool
from isolib.evidence import load_evidence
from isolib.findings import STATUS_WORDS, read_record

# A card in seconds: PTB's validation split, 32 windows of the tiny models' 64 tokens, samples of 300 word tokens,
# 100 STS-B dev pairs, 200 resamples per interval, measured in this process.
SMALL = ["--split", "valid", "--token-budget", "2048", "--points", "300", "--sts-pairs", "100", "--resamples", "200",
         "--jobs", "1"]


@pytest.fixture(scope="module")
def cards(tiny_models, tmp_path_factory):
    """The cards of the tiny GPT-2 and BERT, written by the command line into a fresh cache, by family."""
    root = tmp_path_factory.mktemp("cards")
    written = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ISOLIB_CACHE_DIR", str(root / "cache"))
        for family, baseline in (("gpt2", "glove-50d"), ("bert", "none")):
            assert main(["card", tiny_models[family], *SMALL, "--static-baseline", baseline,
                         "--out", str(root / family)]) == 0
            written[family] = root / family
    return written


def _glance_rows(card: str, label: str) -> pd.DataFrame:
    """The table at a glance of one view, read back from card.md."""
    section = card.split(f"### {label}\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    header = [cell.strip() for cell in section[0].strip("|").split("|")]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in section[2:]]
    return pd.DataFrame(rows, columns=header)


def test_a_decoder_card_has_both_views_and_diagnoses_the_sink(cards, tiny_models):
    evidence = load_evidence(cards["gpt2"])
    model = tiny_models["gpt2"]
    assert evidence["run"]["kind"] == "decoder"
    assert evidence["run"]["views"] == [model, f"{model} (start token)"]
    assert set(evidence["sink_norms"].space) == set(evidence["attention"].space) == set(evidence["run"]["views"])
    assert set(evidence["attention"].layer) == {1, 2}  # one attention per block
    # Each post-processing of each layer's first sample, measured again by the spectrum's measures.
    changes = evidence["changes"]
    assert set(changes.replicate) == {0} and list(dict.fromkeys(changes.change)) == list(POST_PROCESSINGS)
    assert changes.lid.isna().all() and changes.isoscore.notna().all()
    record = read_record(cards["gpt2"])
    for label in evidence["run"]["views"]:
        for key in ("sink_norm", "anisotropic", "sts_whiten"):
            assert claims.verdict_of(record.findings, claims.statement_claim(key, 1), label) is not None
    # The papers' view is shown beside the judged one, never counted.
    assert {f.counted for f in record.findings if f.model == model and f.kind == "test"} == {False}
    card = (cards["gpt2"] / "card.md").read_text()
    assert "## The first position" in card and "fig_first_position.png" in card and "Does not apply" not in card


def test_an_encoder_card_says_the_sink_does_not_apply(cards, tiny_models):
    evidence = load_evidence(cards["bert"])
    assert evidence["run"]["kind"] == "encoder" and evidence["run"]["views"] == [tiny_models["bert"]]
    assert "sink_norms" not in evidence
    card = (cards["bert"] / "card.md").read_text()
    assert "Does not apply: an encoder's first position is [CLS]" in card
    assert not [f for f in read_record(cards["bert"]).findings if "first position" in f.finding]


@pytest.mark.parametrize("family", ["gpt2", "bert"])
def test_every_statement_is_judged_with_its_control_and_the_page_says_no_more(cards, family):
    record = read_record(cards[family])
    tests = [f for f in record.findings if f.kind == "test" and f.status != "not comparable"]
    assert tests and all(f.control not in ("", "-") for f in tests)
    assert all(f.interval is not None and f.sampling_unit for f in tests), \
        "each judged statement has an interval over its sampling unit"
    # The anisotropy baseline estimates the average cosine itself: their agreement is a check, never a test.
    same = [f for f in record.findings if f.finding == claims.agreement_claim(claims.SAME_QUANTITY)]
    assert same and {f.kind for f in same} == {"check"}
    evidence = load_evidence(cards[family])
    judged = evidence["run"]["views"][-1]
    glance = _glance_rows((cards[family] / "card.md").read_text(), judged)
    for row in glance.itertuples():
        finding = claims.verdict_of(record.findings, claims.statement_claim("anisotropic", int(row.layer)), judged)
        assert row.anisotropic == STATUS_WORDS[finding.status]
        measures = evidence["measures"]
        cosine = measures[(measures.space == judged) & (measures.layer == int(row.layer))].average_cosine
        assert row[2] == f"{cosine.mean():.3f} [{cosine.min():.3f}, {cosine.max():.3f}]"


@pytest.mark.parametrize("family", ["gpt2", "bert"])
def test_the_card_is_judged_again_from_its_evidence_alone(cards, family):
    assert claims.record(load_evidence(cards[family])) == read_record(cards[family])


@pytest.mark.parametrize("family", ["gpt2", "bert"])
def test_the_html_page_holds_its_figures(cards, family):
    page = (cards[family] / "card.html").read_text()
    images = re.findall(r'<img src="([^"]{0,30})', page)
    assert len(images) >= 4 and all(src.startswith("data:image/png;base64,") for src in images)
    assert page.count("<table") >= 5 and "<script" not in page


def test_mean_pooling_is_the_librarys_mean_pool():
    generator = np.random.default_rng(0)
    ids = np.sort(generator.integers(0, 40, 500))
    ids[:40] = np.arange(40)
    X = generator.normal(size=(500, 8))
    np.testing.assert_allclose(mean_pooling(ids, 40) @ X, mean_pool(X, ids, n_sentences=40), rtol=1e-12)
    with pytest.raises(ValueError, match="sentence 40 has no"):
        mean_pooling(ids, 41)


def _refused(capsys, *argv) -> str:
    assert main(["card", *argv]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("error: ") and "\n" not in error, error
    return error


def test_a_wrong_model_name_is_refused_in_one_sentence(capsys, cache_dir, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    error = _refused(capsys, "no-such-model-anywhere", *SMALL)
    assert "'no-such-model-anywhere' is not an offline model" in error and "minilm" in error


def test_a_model_without_hidden_states_is_refused_in_one_sentence(capsys, cache_dir, tmp_path):
    import torch
    import transformers
    from conftest import build_tiny_model

    folder = build_tiny_model("bert", tmp_path / "t5")  # its tokenizer; an encoder-decoder's weights replace BERT's
    vocabulary = len(transformers.AutoTokenizer.from_pretrained(folder))
    torch.manual_seed(0)
    transformers.T5Model(transformers.T5Config(vocab_size=vocabulary, d_model=32, d_ff=64, d_kv=16, num_layers=2,
                                               num_heads=2, decoder_start_token_id=0)).save_pretrained(folder)
    error = _refused(capsys, str(folder), *SMALL)
    assert f"{folder} gives no hidden states for a text alone" in error


def test_a_corpus_too_small_for_the_budget_is_refused_in_one_sentence(capsys, cache_dir, tiny_models):
    options = [option for option in SMALL if option != "2048"]
    options.insert(options.index("--token-budget") + 1, "100000000")
    error = _refused(capsys, tiny_models["bert"], *options)
    assert "The token budget 100,000,000 is more than the" in error and "lower it to at most" in error


def test_a_budget_with_too_few_word_tokens_for_a_sample_is_refused_in_one_sentence(capsys, cache_dir, tiny_models):
    options = [option for option in SMALL if option != "2048"]
    options.insert(options.index("--token-budget") + 1, "128")
    assert "fewer than the 300 each sample draws" in _refused(capsys, tiny_models["bert"], *options)


@pytest.mark.parametrize("change, message", [({"n_points": 50}, "lid_k (100) must be below n_points"),
                                             ({"corpus": "wiki"}, "corpus must be one of"),
                                             ({"n_jobs": 0}, "n_jobs must be")])
def test_bad_settings_are_refused_in_one_sentence(change, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        CardSettings().replace(**change)


def test_a_static_embedding_has_a_card_of_the_sections_that_apply(capsys, cache_dir, tmp_path):
    assert main(["card", "glove-50d", *SMALL, "--out", str(tmp_path / "glove")]) == 0
    evidence = load_evidence(tmp_path / "glove")
    assert evidence["run"]["kind"] == "static" and set(evidence["measures"].space) == {"glove-50d"}
    assert (evidence["measures"].n_points == 300).all() and evidence["sts_gold"].shape[0] > 90
    findings = read_record(tmp_path / "glove").findings
    assert {f.finding for f in findings} == {claims.statement_claim(key, 0) for key in claims.STATEMENTS
                                             if not key.startswith(("sink", "lid"))}
    card = (tmp_path / "glove" / "card.md").read_text()
    assert "no static baseline to face, being one" in card and "a static embedding has no position" in card


def test_the_comparison_page_sets_the_cards_beside_the_papers_numbers(cards, tmp_path):
    from isolib.card.page import comparison_references, write_comparison
    from isolib.studies.ethayarajh_contextuality.settings import PAPER_MODELS, PAPER_REFERENCE, counterpart
    from isolib.studies.rajaee_cluster_isotropy.settings import SLIDES_SIX_ROWS

    references = comparison_references(PAPER_REFERENCE, PAPER_MODELS, counterpart, SLIDES_SIX_ROWS["stsb"])
    page, html = write_comparison([cards["gpt2"], cards["bert"]], references, output=tmp_path)
    summary, reference = pd.read_csv(tmp_path / "cards.csv"), pd.read_csv(tmp_path / "reference.csv")
    assert len(summary) == 2 and summary.model.str.endswith("(start token)").sum() == 1
    # Neither tiny model stands in for a paper's: no reference number faces them.
    assert reference.empty
    assert "Isotropy cards side by side" in page.read_text() and "<table" in html.read_text()
    results = (tmp_path / "RESULTS.md").read_text()
    assert results.startswith("# Isotropy cards: results of this run") and "(COMPARISON.md)" in results
    assert results.count("\n- **") == 2 and "tests on the judged view" in results


def test_the_committed_cards_face_the_papers_numbers_as_stand_ins_never_judged():
    from isolib import project
    from isolib.card.page import comparison_references, comparison_table
    from isolib.studies.ethayarajh_contextuality.settings import PAPER_MODELS, PAPER_REFERENCE, counterpart
    from isolib.studies.rajaee_cluster_isotropy.settings import SLIDES_SIX_ROWS

    folder = project.FIGURES_DIR / "06_model_card"
    cards = {model: load_evidence(folder / model) for model in ("minilm", "smollm2")}
    table = comparison_table(cards, comparison_references(PAPER_REFERENCE, PAPER_MODELS, counterpart,
                                                          SLIDES_SIX_ROWS["stsb"])).set_index("finding")
    bert = table.loc["average cosine of random words (anisotropy baseline), BERT L12"]
    assert bert.paper == "0.477" and bert.minilm.endswith("(L6) · n/c") and not bert["smollm2 (start token)"]
    gpt2 = table.loc["average cosine of random words (anisotropy baseline), GPT-2 L0"]
    assert gpt2.smollm2.endswith("(L0) · n/c") and gpt2["smollm2 (start token)"].endswith("(L0) · n/c")
    assert "STS-B Spearman x 100, raw, BERT-base (Rajaee & Pilehvar's slides) L12" in table.index
    assert not [finding for finding in table.index if "ELMo" in finding], "no card faces ELMo"


def test_a_subset_of_the_measures_is_what_every_measure_gives_of_them():
    from isolib.measuring import MeasureOptions, every_measure
    from isolib.sampling import Sample

    generator = np.random.default_rng(1)
    sample = Sample(generator.normal(size=(300, 12)) + 2.0, generator.integers(0, 40, 300).astype(str))
    options = MeasureOptions(lid_k=20, lid_queries=100, k_max=3, kmeans_fit_size=None, silhouette_sample=None)
    every = every_measure(sample, options, random_state=3)
    some = every_measure(sample, options, random_state=3, measures=("average_cosine", "lid", "isoscore"))
    assert some["lid"] == every["lid"] and some["isoscore"] == every["isoscore"]
    assert np.isnan(some["silhouette"]) and np.isnan(some["s_inter"]) and not np.isnan(every["silhouette"])
    with pytest.raises(ValueError, match="Unknown measures"):
        every_measure(sample, options, measures=("cosine",))
