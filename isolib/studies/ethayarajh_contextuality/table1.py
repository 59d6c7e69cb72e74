"""Judging Table 1 of Ethayarajh (2019): static embeddings made of a layer's first principal components.

:func:`model_findings` judges one model view (a layer chosen on the other benchmarks against the static
embedding, the input layer's PC vectors by the same rule as its control; the lowest layer against the last);
:func:`decoders_against_encoders` sets every decoder's best layer against every encoder's. Both read the
evidence table ``table1`` only, and count only benchmarks scored with at least ``min_coverage`` of their items.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from isolib.findings import (
    Finding,
    Verdict,
    bootstrap_threshold,
    compare_with_control,
    declare,
    not_comparable,
)
from isolib.studies.ethayarajh_contextuality.settings import counterpart


def covered(scores: pd.DataFrame, coverage: pd.DataFrame, embeddings, min_coverage: float) -> pd.Index:
    """The benchmarks every one of ``embeddings`` scores with at least ``min_coverage`` of its items."""
    rows = list(embeddings)
    return scores.columns[(scores.loc[rows].notna() & (coverage.loc[rows] >= min_coverage)).all(axis=0)]


def model_findings(model: str, rows: pd.DataFrame, min_coverage: float) -> list[Finding]:
    """Table 1 on one model: a held-out layer against the static embedding (the input layer's PC vectors judged by the
    same rule as its control), the lowest non-input layer against the last."""
    scores = rows.pivot_table(index="embedding", columns="benchmark", values="score", dropna=False, sort=False)
    coverage = rows.pivot_table(index="embedding", columns="benchmark", values="coverage", dropna=False, sort=False)
    layers = rows.dropna(subset=["layer"]).groupby("embedding", sort=False).layer.first()
    static = rows[rows.layer.isna()].embedding.iloc[0]
    inputs = list(layers.index[layers == 0])  # the input layer's PC vectors (no context), where table1_layers has 0
    layers = layers[layers > 0]
    found = _beats_static(model, scores, coverage, layers, inputs, static, min_coverage)
    if len(layers) >= 2:
        found.append(_lower_beats_upper(model, scores, coverage, layers, min_coverage))
    return found


def _beats_static(model, scores, coverage, layers, inputs, static, min_coverage: float) -> list[Finding]:
    """The layer chosen on the other benchmarks against the static embedding, the input layer's PC vectors beside."""
    claim, paper = ("Table 1: PC static embeddings beat GloVe on most benchmarks",
                    "BERT layer 1 best; most layers beat GloVe and FastText")
    benchmarks = covered(scores, coverage, [*layers.index, *inputs, static], min_coverage)
    left_out = f" (left out: {', '.join(scores.columns.difference(benchmarks, sort=False))})" if len(
        benchmarks) < scores.shape[1] else ""
    found = []
    if len(benchmarks) < 2:
        found.append(not_comparable(claim, paper, f"not comparable: fewer than two benchmarks are scored with at least "
                                    f"{min_coverage:.0%} of their items covered{left_out}.", kind="test", model=model))
    else:
        # Each benchmark is scored with the layer of best mean score on the other benchmarks: never chosen on itself.
        chosen = pd.Series({benchmark: scores.loc[layers.index, benchmarks.drop(benchmark)].mean(axis=1).idxmax()
                            for benchmark in benchmarks})

        def beats_static(ours) -> tuple[int, Verdict]:
            pairs = pd.DataFrame({"ours": np.asarray(ours, dtype=float),
                                  "static": scores.loc[static, benchmarks].to_numpy()}, index=benchmarks)
            return (int((pairs.ours > pairs.static).sum()),
                    bootstrap_threshold(pairs, lambda t: float((t.ours > t.static).mean()), above=0.5, inclusive=True))

        wins, verdict = beats_static([scores.at[chosen[b], b] for b in benchmarks])
        control_wins, control = beats_static(scores.loc[inputs[0], benchmarks]) if inputs else (0, Verdict.undecided())
        found.append(declare(
            claim, paper, model,
            f"the held-out layer ({', '.join(f'{name} for {n}' for name, n in chosen.value_counts().items())}) beats "
            f"{static} in {wins} of {len(benchmarks)} benchmarks covered at least {min_coverage:.0%} "
            f"{verdict.interval_text}{left_out}"
            + (f"; the input layer ({inputs[0]}) in {control_wins} of {len(benchmarks)}" if inputs else ""),
            verdict,
            "reproduced if the layer chosen on the other benchmarks (best mean score) beats the static embedding "
            f"restricted to the same words on at least half of the benchmarks scored with at least {min_coverage:.0%} "
            "of items covered, and the input layer's PC vectors (no context) do not; borderline if the 95% bootstrap "
            "interval over benchmarks crosses one half. The static embedding is 50-d GloVe, weaker than the paper's "
            "300-d GloVe and FastText.", kind="test",
            control=f"the input layer's PC vectors (no context), by the same rule, against {static} restricted to the "
                    "same words" if inputs else f"{static} restricted to the same words (the comparison); the input "
                    "layer's PC vectors, the control this rule could judge, are not scored (table1_layers has no 0)",
            control_verdict=control, sampling_unit="benchmarks"))
    return found


def _lower_beats_upper(model, scores, coverage, layers, min_coverage: float) -> Finding:
    """The lowest non-input layer's PC static embedding against the last's, over the benchmarks both cover."""
    low, high = layers.index[0], layers.index[-1]
    shared = covered(scores, coverage, [low, high], min_coverage)
    claim, paper = "Table 1: lower layers give better PC static embeddings than upper layers", "layers 1-2 beat layers 11-12"
    if len(shared) < 2:
        return not_comparable(claim, paper, "not comparable: fewer than two benchmarks are scored with at least "
                              f"{min_coverage:.0%} of their items covered.", kind="test", model=model)
    verdict = compare_with_control(scores.loc[low, shared].to_numpy(), scores.loc[high, shared].to_numpy())
    return declare(
        claim, paper, model, f"mean score {low} {scores.loc[low, shared].mean():.3f} vs {high} "
        f"{scores.loc[high, shared].mean():.3f} over {len(shared)} benchmarks covered at least {min_coverage:.0%}; "
        f"difference {verdict.value:.3f} {verdict.interval_text}",
        verdict,
        "reproduced if the lowest non-input layer scored has a higher mean score than the last, over the "
        f"benchmarks scored with at least {min_coverage:.0%} of items covered; borderline if the 95% bootstrap "
        "interval of the mean difference over benchmarks crosses 0.", kind="test",
        control="the last layer's PC static embedding, on the same benchmarks", sampling_unit="benchmarks")


def decoders_against_encoders(table1: pd.DataFrame, labels, min_coverage: float) -> list[Finding]:
    """Table 1: every decoder's best layer against every encoder's (of the counted views ``labels``), bootstrapped
    over benchmarks; the input layers (no context) by the same rule as the control, where Table 1 has them."""
    decoders = [m for m in labels if counterpart(m) == "gpt2"]
    encoders = [m for m in labels if counterpart(m) == "bert-base-cased"]
    if not decoders or not encoders:
        return []
    rows = table1[table1.model.isin(decoders + encoders) & (table1.layer >= 0)]
    # pivot, not pivot_table: only the (model, layer) columns that exist, whose layers differ between models.
    scores = rows.pivot(index="benchmark", columns=["model", "embedding"], values="score")
    covered = rows.pivot(index="benchmark", columns=["model", "embedding"], values="coverage")
    scores = scores[((covered >= min_coverage) & scores.notna()).all(axis=1)]
    input_layer = rows.groupby(["model", "embedding"]).layer.first().reindex(scores.columns).eq(0).to_numpy()
    has_inputs = rows[rows.layer == 0].model.nunique() == len(decoders + encoders)

    def smallest_gap(columns: pd.Index):
        """The statistic over benchmarks (rows) of ``columns``: every encoder's best layer minus every decoder's."""
        model = columns.get_level_values("model").to_numpy()

        def gap(benchmarks: np.ndarray) -> float:
            means = benchmarks.mean(axis=0)  # each column's mean over benchmarks; a model's best is its largest
            return float(min(means[model == m].max() for m in encoders) - max(means[model == m].max() for m in decoders))
        return gap

    layers, inputs = scores.loc[:, ~input_layer], scores.loc[:, input_layer]
    best = layers.mean().groupby("model").max()
    verdict = bootstrap_threshold(layers.to_numpy(), smallest_gap(layers.columns), above=0.0)
    control = (bootstrap_threshold(inputs.to_numpy(), smallest_gap(inputs.columns), above=0.0) if has_inputs
               else Verdict.undecided())
    return [declare(
        "Table 1: GPT-2's PC static embeddings are worse than BERT's", "clearly worse on every benchmark",
        ", ".join(decoders + encoders),
        "; ".join(f"{m} {best[m]:.3f}" for m in decoders + encoders)
        + f" (best non-input layer, mean score over {len(scores)} benchmarks covered at least {min_coverage:.0%}); "
        f"gap {verdict.value:.3f} {verdict.interval_text}"
        + (f"; input layers: gap {control.value:.3f} {control.interval_text}" if has_inputs else ""),
        verdict,
        "reproduced if every decoder's best non-input layer has a lower mean score than every encoder's "
        "(vocabularies differ between models, so the word sets differ too), and the input layers (no context) "
        "do not; borderline if the 95% bootstrap interval of the smallest gap over benchmarks crosses 0 (each "
        "resample chooses each model's best layer again).", kind="test",
        control="the input layers' PC vectors (no context), by the same rule" if has_inputs else
        "the input layers' PC vectors, not judged: table1_layers has no 0", control_verdict=control,
        sampling_unit="benchmarks")]
