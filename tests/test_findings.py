"""Tests of isolib.findings: the rules on small tables with a known verdict, RESULTS.md and the overview."""

import numpy as np
import pandas as pd
import pytest

from isolib.findings import (
    STATUSES,
    Finding,
    PaperModel,
    Verdict,
    all_of,
    bootstrap_threshold,
    compare_reference,
    declare,
    findings_table,
    not_comparable,
    read_results,
    sign,
    spearman,
    threshold,
    trend,
    within,
    write_overview,
    write_results,
)


def by_layer(values):
    return pd.Series(values, index=np.arange(len(values)), dtype=float)


# --------------------------------------------------------------------------- rules


def test_trend_rising_and_falling():
    rising = trend(by_layer([0.1, 0.2, 0.3, 0.5]), rising=True)
    assert rising.passed and rising.value == pytest.approx(1.0) and rising.margin == pytest.approx(0.5)
    assert trend(by_layer([0.1, 0.2, 0.3, 0.5]), rising=False).passed is False
    assert trend(by_layer([0.5, 0.4, 0.1, 0.0]), rising=False).passed
    # rho = 1 - 6 * 14 / 120 = 0.3: rising, but not beyond 0.5.
    weak = trend(by_layer([0.1, 0.3, 0.2, 0.0, 0.4]), rising=True)
    assert weak.passed is False and weak.value == pytest.approx(0.3) and weak.margin == pytest.approx(-0.2)


@pytest.mark.parametrize("values", [[0.1, 0.2], [0.3, 0.3, 0.3], [0.1, np.nan, 0.3, 0.4], []])
def test_trend_is_not_comparable_on_too_few_layers_constant_values_or_nan(values):
    verdict = trend(by_layer(values), rising=True)
    assert verdict.passed is None and np.isnan(verdict.margin)
    assert declare("claim", "paper", "m", "ours", verdict, "rule").status == "not comparable"


def test_threshold_in_every_layer():
    verdict = threshold([0.3, 0.12, 0.5], above=0.1)
    assert verdict.passed and verdict.value == 0.12 and verdict.margin == pytest.approx(0.02)
    assert threshold([0.3, 0.08, 0.5], above=0.1).passed is False
    assert threshold([0.1], above=0.1).passed is False
    assert threshold([0.1], above=0.1, inclusive=True).passed
    assert threshold(0.04, below=0.05).passed and threshold(0.06, below=0.05).passed is False
    both = threshold([0.2, 0.44], above=0.15, below=0.45)
    assert both.passed and both.value == 0.44 and both.margin == pytest.approx(0.01)
    assert threshold([0.2, np.nan], above=0.1).passed is None
    assert threshold([], above=0.1).passed is None
    with pytest.raises(ValueError, match="needs a bound"):
        threshold([0.2])


def test_within_a_tolerance_of_a_value_or_a_range():
    assert within(0.44, 0.42, 0.05).passed
    assert within(0.48, 0.42, 0.05).passed is False
    assert within(0.47, 0.42, 0.05).passed  # the bound itself counts
    assert within([0.56, 0.6, 0.66], (0.57, 0.62), 0.05).passed
    assert within([0.56, 0.6, 0.70], (0.57, 0.62), 0.05).passed is False
    assert within(np.nan, 0.42, 0.05).passed is None


def test_sign_and_all_of():
    assert sign(0.2).passed and sign(-0.2).passed is False and sign(0.0).passed is False
    assert sign(-0.2, positive=False).passed
    assert sign(np.nan).passed is None
    combined = all_of(sign(0.2), threshold(0.3, above=0.25))
    assert combined.passed and combined.margin == pytest.approx(0.05)
    assert all_of(sign(0.2), sign(-0.1)).passed is False
    assert all_of(sign(0.2), Verdict.undecided()).passed is None


def test_a_bootstrap_interval_straddling_the_threshold_is_borderline():
    # The audit's case: minilm's per-layer stopword shares, median 0.55 against "at least 0.5".
    shares = [0.0, 0.4, 0.8, 0.7, 0.2, 0.9]
    verdict = bootstrap_threshold(shares, np.median, above=0.5, inclusive=True)
    assert verdict.passed and verdict.value == pytest.approx(0.55)
    low, high = verdict.interval
    assert low < 0.5 < high and verdict.borderline
    assert declare("Stopwords", "paper", "minilm", "0.55", verdict, "rule").status == "borderline"
    # A clear pass: every resample is above the threshold.
    clear = bootstrap_threshold([0.8, 0.9, 0.7, 0.8, 0.9, 1.0], np.median, above=0.5, inclusive=True)
    assert clear.passed and not clear.borderline and clear.interval[0] >= 0.7
    assert declare("Stopwords", "paper", "mpnet", "0.85", clear, "rule").status == "reproduced"
    # A clear failure stays "not reproduced"; too few samples are not comparable.
    assert declare("s", "p", "m", "o", bootstrap_threshold([0.1, 0.0, 0.2], np.median, above=0.5), "r").status \
        == "not reproduced"
    assert bootstrap_threshold([0.9], np.median, above=0.5).passed is None


def test_bootstrap_resamples_the_rows_of_a_table():
    # Wins of one embedding over another on benchmarks: 3 of 4, resampled by benchmark.
    table = pd.DataFrame({"ours": [0.5, 0.6, 0.7, 0.2], "static": [0.4, 0.5, 0.6, 0.3]})
    verdict = bootstrap_threshold(table, lambda t: float((t.ours > t.static).mean()), above=0.5, inclusive=True,
                                  random_state=1)
    assert verdict.value == 0.75 and verdict.borderline  # a resample of 4 can hold 2 losses of 4
    again = bootstrap_threshold(table, lambda t: float((t.ours > t.static).mean()), above=0.5, inclusive=True,
                                random_state=1)
    assert again == verdict


def test_all_of_keeps_a_borderline_part():
    borderline = bootstrap_threshold([0.0, 0.4, 0.8, 0.7, 0.2, 0.9], np.median, above=0.5, inclusive=True)
    assert all_of(sign(1.0), borderline).borderline
    assert not all_of(sign(-1.0), borderline).borderline  # fails on a clear rule: not reproduced
    assert all_of(sign(1.0), sign(2.0)).borderline is False


def test_spearman_of_layers():
    assert spearman([0, 1, 2], [3, 2, 1]) == pytest.approx(-1.0)
    assert np.isnan(spearman([0, 1], [1, 2]))


def test_finding_rejects_an_unknown_status():
    with pytest.raises(ValueError, match="status must be"):
        Finding("claim", "paper", "model", "ours", "maybe", "rule")


# --------------------------------------------------------------------------- reference numbers

PAPER = (PaperModel("bert-base-cased", "BERT", 13), PaperModel("elmo", "ELMo", 3))
REFERENCE = {"bert-base-cased": {"cosine": {0: 0.10, 12: 0.48, (2, 4): (0.2, 0.3)}}, "elmo": {"cosine": {1: 0.16}}}
STAND_INS = {"tiny": "bert-base-cased"}


def counterpart(model):
    return model if model in REFERENCE else STAND_INS.get(model)


def per_layer(model, values):
    return pd.DataFrame({"model": model, "layer": np.arange(len(values)), "n_layers": len(values), "cosine": values})


def test_reference_numbers_judged_on_the_paper_model_and_shown_for_a_stand_in():
    table = pd.concat([per_layer("bert-base-cased", np.r_[0.12, 0.3, 0.22, 0.25, 0.36, [0.4] * 7, 0.6]),
                       per_layer("tiny", [0.0, 0.1, 0.2, 0.3, 0.4])], ignore_index=True)
    rows = compare_reference(table, REFERENCE, PAPER, counterpart, {"cosine": "average cosine"}, tolerance=0.05)
    got = {(f.finding, f.model): f for f in rows}
    assert got["average cosine, BERT L0", "bert-base-cased"].status == "reproduced"  # 0.12 vs 0.10
    assert got["average cosine, BERT L12", "bert-base-cased"].status == "not reproduced"  # 0.60 vs 0.48
    # Layers 2-4 hold 0.22, 0.25, 0.36; the range 0.2-0.3 plus 0.05 ends at 0.35.
    assert got["average cosine, BERT L2-4", "bert-base-cased"].status == "not reproduced"
    assert got["average cosine, BERT L2-4", "bert-base-cased"].ours == "0.22-0.36 (L2-4)"
    # The stand-in has 5 layers: paper layer 12 of 12 is its layer 4, shown but not judged.
    stand_in = got["average cosine, BERT L12", "tiny"]
    assert stand_in.status == "not comparable" and stand_in.ours == "0.400 (L4)"
    # No model for ELMo: one row that says so.
    assert got["average cosine, ELMo L1", "-"].status == "not comparable"
    assert "not run" in got["average cosine, ELMo L1", "-"].rule


def test_a_nan_reference_value_is_not_comparable():
    table = per_layer("bert-base-cased", np.r_[np.nan, [0.3] * 12])
    rows = compare_reference(table, {"bert-base-cased": {"cosine": {0: 0.10}}}, PAPER[:1], counterpart,
                             {"cosine": "average cosine"}, tolerance=0.05)
    assert [f.status for f in rows] == ["not comparable"]


# --------------------------------------------------------------------------- RESULTS.md and the overview

FINDINGS = [
    declare("Anisotropy | everywhere", "cosine > 0.1", "minilm", "lowest 0.2", threshold(0.2, above=0.1),
            "reproduced if |cos| > 0.1.", headline=True),
    declare("Anisotropy | everywhere", "cosine > 0.1", "mpnet", "lowest 0.05", threshold(0.05, above=0.1),
            "reproduced if |cos| > 0.1.", headline=True),
    declare("Trend", "rises", "minilm", "rho 0.9", trend(by_layer([1, 2, 3]), rising=True), "rule"),
    not_comparable("ELMo finding", "rises", "ELMo is not run."),
]


def test_results_round_trip(tmp_path):
    path = write_results(FINDINGS, tmp_path / "study" / "RESULTS.md", title="Study: results", citation="A. B. (2020)",
                         models="minilm (for BERT), mpnet (for BERT)", notes=["A note."])
    text = path.read_text()
    assert text.startswith("# Study: results\n")
    assert "A note." in text and "*not comparable*:" in text
    assert sum(line.startswith("| ") for line in text.splitlines()) == len(FINDINGS) + 1
    assert "**Summary:** 2 reproduced, 0 borderline, 1 not reproduced, 1 not comparable." in text
    results = read_results(path)
    assert results.title == "Study: results" and results.citation == "A. B. (2020)"
    assert results.headlines == [r"Anisotropy | everywhere: minilm reproduced; mpnet not reproduced"]
    assert list(results.counts) == [2, 0, 1, 1] and list(results.counts.index) == list(STATUSES)
    with pytest.raises(ValueError, match="no findings"):
        write_results([], tmp_path / "empty.md", title="t", citation="c", models="m")


def test_read_results_rejects_a_page_it_did_not_write(tmp_path):
    (tmp_path / "RESULTS.md").write_text("# Old\n\n| a | b |\n")
    with pytest.raises(ValueError, match="regenerate it"):
        read_results(tmp_path / "RESULTS.md")


def test_overview_counts_come_from_the_results_pages(tmp_path):
    write_results(FINDINGS, tmp_path / "01_a_study" / "RESULTS.md", title="A", citation="A (2019)", models="minilm")
    (tmp_path / "01_a_study" / "fig1.png").write_bytes(b"png")
    (tmp_path / "00_quickstart").mkdir()
    (tmp_path / "00_quickstart" / "plot.png").write_bytes(b"png")
    text = write_overview(tmp_path).read_text()
    assert "| [01_a_study](#01_a_study) | 2 | 0 | 1 | 1 | [RESULTS.md](01_a_study/RESULTS.md) |" in text
    assert '<img src="01_a_study/fig1.png"' in text and '<img src="00_quickstart/plot.png"' in text
    assert "- Anisotropy | everywhere: minilm reproduced; mpnet not reproduced" in text
    assert text.index("## 00_quickstart") < text.index("## 01_a_study")


def test_findings_table_has_the_results_columns():
    table = findings_table(FINDINGS)
    assert list(table.columns) == ["finding", "paper", "model", "this run", "status", "rule"]
    assert len(table) == len(FINDINGS) and table.status.iloc[-1] == "not comparable"
    assert findings_table([]).empty


def test_verdicts_say_per_claim_what_each_model_gives():
    from isolib.findings import verdicts

    findings = [
        declare("The silhouette rises", "rises in every setup", "(i)", "0.05 -> 0.41", threshold(1.0, above=0), "r."),
        declare("The silhouette rises", "rises in every setup", "(ii)", "0.05 -> 0.01", threshold(-1.0, above=0), "r."),
        not_comparable("Appendix A: GLUE", "IsoScore falls", "Not run in this profile."),
    ]
    assert verdicts(findings, ["The silhouette"]) == ("This run: The silhouette rises (paper: rises in every setup): "
                                                       "reproduced on (i) (0.05 -> 0.41); not reproduced on (ii) "
                                                       "(0.05 -> 0.01).")
    assert verdicts(findings, ["The silhouette"], values=False) == (
        "This run: The silhouette rises (paper: rises in every setup): reproduced on (i); not reproduced on (ii).")
    assert verdicts(findings).splitlines()[1] == ("This run: Appendix A: GLUE (paper: IsoScore falls): not comparable "
                                                  "because not run in this profile.")
    with pytest.raises(ValueError, match="No finding's claim starts with"):
        verdicts(findings, ["Table 9"])
    named = not_comparable("GPT-2 L12", "0.978", "GPT-2 is not run in this profile.")
    assert verdicts([named]).endswith("not comparable because GPT-2 is not run in this profile.")
    # A rule that could not be applied (a NaN) is not a reason: the line says what was found, without "because".
    unjudged = declare("Claim", "p", "m", "nan", threshold(float("nan"), above=0), "reproduced if positive.")
    assert verdicts([unjudged]) == "This run: Claim (paper: p): not comparable on m (nan)."
