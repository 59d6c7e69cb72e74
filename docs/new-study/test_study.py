"""Tests of isolib.studies.<<NAME>>: its evidence on points with a known answer, and its claims beside their control."""

import numpy as np
import pandas as pd

from isolib.evidence import judge, save_evidence
from isolib.findings import read_record
from isolib.studies.<<NAME>> import claims


def _cosines(model_cosine: float, control_cosine: float) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = [["m", layer, sample, model_cosine + rng.normal(0, 0.01), control_cosine + rng.normal(0, 0.01)]
            for layer in range(3) for sample in range(5)]
    return pd.DataFrame(rows, columns=["model", "layer", "sample", "average_cosine", "control_cosine"])


def test_anisotropy_is_reproduced_only_where_the_control_fails_the_same_rule():
    (found,) = claims.anisotropy_findings(_cosines(0.5, 0.0))
    assert found.status == "reproduced" and found.sampling_unit == "token samples"
    (control_passes,) = claims.anisotropy_findings(_cosines(0.5, 0.5))
    assert control_passes.status == "not reproduced", "a control that passes too shows nothing"
    (isotropic,) = claims.anisotropy_findings(_cosines(0.0, 0.0))
    assert isotropic.status == "not reproduced"


def test_the_stored_evidence_is_judged_as_the_computed_one(tmp_path):
    evidence = {"cosines": _cosines(0.5, 0.0), "run": {"profile": "test", "models": ["m"], "n_samples": 5,
                                                       "n_tokens": 10}}
    save_evidence(tmp_path, evidence)
    assert judge(tmp_path, claims.record) == claims.record(evidence) == read_record(tmp_path)
