"""A study's evidence is stored as tables beside its results and judged again from them alone."""

import numpy as np
import pandas as pd
import pytest

from isolib.evidence import EvidenceError, judge, load_evidence, save_evidence
from isolib.findings import Record, bootstrap_threshold, declare, read_record


def _evidence():
    per_type = pd.DataFrame({"model": ["minilm"] * 4 + ["mpnet"] * 4, "layer": [1, 1, 2, 2] * 2,
                             "self_similarity": [0.9, 0.8, 0.5, 0.4, 0.7, 0.6, 0.3, 0.2]})
    return {"per_type": per_type, "run": {"profile": "quick", "seconds": 12.5, "layers": [1, 2]},
            "baseline": np.array([0.1, 0.2])}


def _claims(evidence):
    per_type = evidence["per_type"]
    findings = []
    for model, rows in per_type.groupby("model", sort=False):
        last = rows[rows.layer == rows.layer.max()].self_similarity.to_numpy()
        verdict = bootstrap_threshold(last, np.mean, below=0.6)
        findings.append(declare("Self-similarity is low in the last layer", "< 0.6", model, f"{verdict.value:.2f}",
                                verdict, "reproduced if below 0.6.", kind="test", control="0.6",
                                sampling_unit="word types"))
    return Record("Toy: results", "A. B. (2020)", "minilm, mpnet", (f"Profile {evidence['run']['profile']}.",),
                  tuple(findings))


def test_evidence_round_trips_exactly(tmp_path):
    evidence = _evidence()
    folder = save_evidence(tmp_path, evidence)
    assert sorted(p.name for p in folder.iterdir()) == ["baseline.json", "manifest.json", "per_type.parquet",
                                                        "run.json"]
    loaded = load_evidence(tmp_path)
    pd.testing.assert_frame_equal(loaded["per_type"], evidence["per_type"])
    assert loaded["run"] == evidence["run"] and np.array_equal(loaded["baseline"], evidence["baseline"])


def test_saving_again_replaces_the_evidence_whole(tmp_path):
    save_evidence(tmp_path, _evidence())
    save_evidence(tmp_path, {"run": {"profile": "full"}})
    assert set(load_evidence(tmp_path)) == {"run"}
    assert [p.name for p in tmp_path.iterdir()] == ["evidence"], "nothing is left beside it"


def test_judging_writes_the_record_and_the_page_from_the_stored_evidence(tmp_path):
    save_evidence(tmp_path, _evidence())
    record = judge(tmp_path, _claims)
    assert read_record(tmp_path) == record and (tmp_path / "RESULTS.md").read_text().startswith("# Toy: results")
    assert [f.status for f in record.findings] == ["reproduced", "reproduced"]
    assert record.findings[0].sampling_unit == "word types" and record.findings[0].interval is not None


def test_damaged_or_missing_evidence_is_refused_in_one_sentence(tmp_path):
    with pytest.raises(EvidenceError, match="holds no stored evidence"):
        load_evidence(tmp_path)
    folder = save_evidence(tmp_path, _evidence())
    table = folder / "per_type.parquet"
    table.write_bytes(table.read_bytes()[:-8] + b"\0" * 8)
    with pytest.raises(EvidenceError, match="is damaged .*per_type.parquet does not match"):
        load_evidence(tmp_path)


@pytest.mark.parametrize("evidence, problem", [
    ({"../escape": {"a": 1}}, "not a plain name"),
    ({"mixed": pd.DataFrame({"a": [1, "x"]})}, "does not survive Parquet"),
    ({"tuples": pd.DataFrame({"a": [(1, 2), (3,)]})}, "does not survive Parquet"),
])
def test_evidence_that_cannot_be_stored_faithfully_is_refused(tmp_path, evidence, problem):
    with pytest.raises(EvidenceError, match=problem):
        save_evidence(tmp_path, evidence)
    assert not any(tmp_path.iterdir()), "nothing half-written is left"
