"""The claims of notebook <<NN>>, judged from its evidence alone: rules, thresholds and their sentences.

:func:`record` is what ``python -m isolib judge <<NN>>_<<NAME>>`` and the notebook both call, so they cannot
disagree; edit a rule or a threshold here and re-judge in seconds, nothing is recomputed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np
import pandas as pd

from isolib.findings import Finding, Record, bootstrap_threshold, declare
from isolib.studies.<<NAME>>.settings import CITATION, PAPER_ANISOTROPY, TITLE

# Ours: the paper gives no threshold, so the rule says so and gives the range where its status holds.
ANISOTROPY_THRESHOLD = 0.1


def _lowest_layer_mean(samples: np.ndarray) -> float:
    """The lowest layer's mean over samples; ``samples`` has one row per sample, one column per layer."""
    return float(samples.mean(axis=0).min())


def anisotropy_findings(cosines: pd.DataFrame) -> list[Finding]:
    """"Every layer but the input is anisotropic", per model, judged beside its isotropic control by one rule."""
    findings = []
    for model, rows in cosines[cosines.layer > 0].groupby("model", sort=False):
        judged = {column: rows.pivot(index="sample", columns="layer", values=column).to_numpy()
                  for column in ("average_cosine", "control_cosine")}
        verdict, control = (bootstrap_threshold(judged[column], _lowest_layer_mean, above=ANISOTROPY_THRESHOLD)
                            for column in ("average_cosine", "control_cosine"))
        if control.passed:  # the control passes the same rule: the data cannot tell the claim from it
            verdict = dataclasses.replace(verdict, passed=False, borderline=False)
        findings.append(declare(
            "Every layer but the input is anisotropic", PAPER_ANISOTROPY, model,
            f"lowest layer mean {verdict.value:.3f} {verdict.interval_text}; control {control.value:.3f}",
            verdict, f"reproduced if the lowest layer's mean average cosine is above {ANISOTROPY_THRESHOLD} and the "
                     "control's is not.", kind="test", threshold_ours=True, headline=True,
            control=f"an isotropic Gaussian cloud of the same shape ({'passes' if control.passed else 'fails'})",
            sampling_unit="token samples"))
    return findings


def record(evidence: Mapping[str, object]) -> Record:
    """The study's record from its evidence: ``cosines`` (:func:`.compute.cosine_samples`) and ``run``."""
    run = evidence["run"]
    notes = (f"Profile `{run['profile']}`: {run['n_samples']} samples of {run['n_tokens']} tokens per layer.",)
    return Record(TITLE, CITATION, ", ".join(run["models"]), notes, tuple(anisotropy_findings(evidence["cosines"])))
