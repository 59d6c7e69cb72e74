"""The paper's claims, each judged from the study's evidence tables alone: no model, no embeddings.

:func:`record` is what ``python -m isolib judge 01_ethayarajh_contextuality`` and the notebook call on the
evidence (:mod:`isolib.evidence`); :func:`findings` judges whatever part of it a notebook section has
computed so far, so that the section can print its verdicts. The evidence, by name:

``run``
    The run's parameters (``profile``, ``models``, ``corpus``, ``n_sentences``, ``unit``, ``min_contexts``,
    ``n_samples``, ``max_occurrences``, ``decoder_views``, ``static_baseline``, ``n_lowest``,
    ``min_coverage``) and, once the notebook ends, ``wall_minutes`` and ``peak_gib``.
``per_layer``, ``per_word``, ``per_sentence``
    :func:`~isolib.studies.ethayarajh_contextuality.compute.contextuality_by_layer`'s tables over every
    model view: the baselines and means per layer, SelfSim and MEV per word type, IntraSim per sentence.
``baselines``
    The same function's baselines per (model view, layer, draw): ``baseline_cosine`` and ``mev_baseline`` of
    each independent draw of occurrences, draw 0 being ``per_layer``'s.
``lowest``
    The words of lowest self-similarity per layer, with their share of stopwords.
``example_pairs`` (optional)
    Per model view, the (concrete noun, polysemous verb) pairs of the slides' per-word MEV finding.
``table1`` (optional)
    Table 1's rows: per model view and embedding (the layers of ``table1_layers``, the input layer among them as
    the control, and the static embedding), each benchmark's score and coverage.

Every status follows a rule stated in its :class:`~isolib.findings.Finding`. A qualitative finding about
BERT (or GPT-2) is tested on the models that stand in for it (``settings.STAND_INS``; each such result is
marked as a stand-in's, :func:`isolib.findings.mark_stand_ins`); a reference number is compared only on
the paper's own model (within :data:`TOLERANCE`) and otherwise shown once, at the same relative depth of
every stand-in, as "not comparable". A decoder's paper procedure (the attention sink kept) is shown beside
its start-token view and enters no other finding.

One layer set for every claim about layers: the non-input layers (:data:`LAYER_SET`); the input layer
(layer 0, no context) enters only as a control or where the paper names it. One estimator convention for
MEV: every MEV claim is judged with the paper's formula (uncentred word MEV) and with the authors' code
(centred word MEV), both against the uncentred baseline, and the two are combined by
:func:`isolib.findings.combine_datasets`. Every test judges its control by its own rule where the
evidence allows one (:func:`isolib.findings.declare`'s ``control_verdict``) and says so where it does not.
The per-type claims carry a bootstrap interval over word types: the types are resampled and each layer's
mean recomputed; a claim on a measure adjusted for anisotropy also draws, in each resample, one of the
baseline's independent draws of occurrences (the same draw in every layer, as a draw takes the same occurrences
in every layer), so that its interval covers the sampling of the baseline too (:func:`_bootstrap_over_types`).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from isolib.findings import (
    Finding,
    Record,
    Verdict,
    all_of,
    bootstrap_threshold,
    combine_datasets,
    compare_reference,
    cost_note,
    declare,
    judge_decoder_views,
    mark_stand_ins,
    not_comparable,
    proportion,
    sign,
    spearman,
    threshold,
    trend,
    with_interval,
)
from isolib.studies.ethayarajh_contextuality.settings import (
    CITATION,
    PAPER_MODELS,
    PAPER_REFERENCE,
    STAND_INS,
    counterpart,
    models_run,
)
from isolib.studies.ethayarajh_contextuality import table1
from isolib.views import View

__all__ = ["TITLE", "TOLERANCE", "LAYER_SET", "MEV_ESTIMATORS", "findings", "notes", "record"]

TITLE = "Ethayarajh (2019): results of this run"
# Largest absolute difference from a reference number that counts as reproduced.
TOLERANCE = 0.05
LAYER_SET = ("Every claim about layers is judged over the non-input layers (1 to the last stored); the input layer "
             "(0, no context) enters only as a control, or where the paper names it.")
MEASURE_NAMES = {"baseline_cosine": "average cosine between random words",
                 "self_similarity": "mean raw self-similarity",
                 "intra_similarity": "mean raw intra-sentence similarity"}
# Per-word MEV column of each estimator (REFERENCE.md, 01): both are set against the uncentred baseline.
MEV_ESTIMATORS = {"the paper's formula (uncentred)": "mev", "the authors' code (centred)": "mev_centred"}
NO_TREND_CONTROL = ("no trend with depth (rho 0); no control can be judged by this rule from the evidence (a "
                    "static space has one layer)")


def _upper(table: pd.DataFrame) -> pd.DataFrame:
    """The layers of :data:`LAYER_SET`: every stored layer but the input layer."""
    return table[table.index > 0]


def _input(table: pd.DataFrame, column: str) -> float:
    """The input layer's value of ``column`` (NaN where layer 0 is not stored: its controls are then undecided)."""
    return float(table[column].get(0, np.nan))


def _over_types(per_word: pd.DataFrame, model: str, column: str, layers) -> np.ndarray:
    """One model's per-type measure as an array of shape (n_types, n_layers): the sampling unit in rows."""
    rows = per_word[per_word.model == model].pivot(index="word", columns="layer", values=column)
    return rows.reindex(columns=list(layers)).to_numpy(dtype=float)


def _baseline_draws(baselines: pd.DataFrame, model: str, column: str, layers) -> np.ndarray:
    """One model's baseline ``column`` of every draw, as an array of shape (n_draws, n_layers), draw 0 first."""
    rows = baselines[baselines.model == model].pivot(index="draw", columns="layer", values=column)
    return rows.sort_index().reindex(columns=list(layers)).to_numpy(dtype=float)


def _bootstrap_over_types(types: np.ndarray, draws: np.ndarray | None, statistic, *, per_type=None,
                          n_resamples: int = 2000, **bounds) -> Verdict:
    """:func:`isolib.findings.threshold` on ``statistic(means, baseline)``, with a bootstrap interval over word
    types, crossed with the baseline's draws where there are any.

    ``types`` holds one row per word type (n_types, n_layers); ``draws`` one baseline per row (n_draws, n_layers),
    draw 0 the one the value uses, or None for a claim without a baseline. ``means`` is each layer's mean over the
    types, NaN left out, of ``per_type(types, baseline)`` (the types themselves where None). Each resample draws the
    types with replacement and one draw (uniformly at random), the same in every layer, as a draw takes the same
    occurrences in every layer. A resample weights each type by how often it draws it, so that its means are one
    matrix product over about ten thousand types instead of a copy of them (01's claims are judged in seconds).
    """
    baselines = [None] if draws is None else list(draws)
    averaged = [types if per_type is None else per_type(types, baseline) for baseline in baselines]
    sums = [np.nan_to_num(values, nan=0.0) for values in averaged]
    counts = [(~np.isnan(values)).astype(float) for values in averaged]

    def value(draw: int, weights: np.ndarray) -> float:
        with np.errstate(invalid="ignore", divide="ignore"):
            return statistic(weights @ sums[draw] / (weights @ counts[draw]), baselines[draw])

    n = len(types)
    if n < 2:
        return Verdict.undecided()
    verdict = threshold(value(0, np.ones(n)), **bounds)
    if verdict.passed is None:
        return verdict
    generator = np.random.default_rng(0)

    def resampled() -> float:
        weights = np.bincount(generator.integers(0, n, n), minlength=n).astype(float)
        return value(int(generator.integers(0, len(baselines))), weights)

    return with_interval(verdict, np.array([resampled() for _ in range(n_resamples)]), **bounds)


def _counted_views(labels) -> list[str]:
    """The views that count (:func:`isolib.findings.judge_decoder_views`): a decoder's start-token view, never its
    paper procedure (the attention sink kept) nor another view beside it; every other model as it is."""
    labels = list(labels)

    def start_token(label: str) -> str:
        return dataclasses.replace(View.parse(label), first_position="start_token").label

    return [label for label in labels
            if start_token(label) not in labels or View.parse(label).first_position == "start_token"]


# --------------------------------------------------------------------------- anisotropy


def _anisotropy_findings(model: str, table: pd.DataFrame) -> list[Finding]:
    """Anisotropy in every non-input layer, above the input layer's, and growing with depth."""
    upper, input_cosine = _upper(table), _input(table, "baseline_cosine")
    above_input = (proportion((upper.baseline_cosine > input_cosine).tolist(), at_least=0.75)
                   if np.isfinite(input_cosine) else Verdict.undecided())
    return [
        declare("Anisotropy in every non-input layer",
                "average cosine between random words well above 0 in every non-input layer of BERT, GPT-2 and ELMo",
                model, f"lowest {upper.baseline_cosine.min():.3f} (L{upper.baseline_cosine.idxmin()}); input layer "
                f"{input_cosine:.3f}",
                threshold(upper.baseline_cosine, above=0.1),
                "reproduced if the average cosine exceeds 0.1 in every non-input layer, and the input layer (no "
                "context) does not.", kind="test", control="the input layer, by the same rule",
                control_verdict=threshold(input_cosine, above=0.1), threshold_ours=True, headline=True),
        declare("Anisotropy: hidden layers above the input layer",
                "contextual hidden layers almost always more anisotropic than the input layer, in all three models",
                model, f"{above_input.value:.0%} of non-input layers above the input layer's {input_cosine:.3f}",
                above_input,
                "reproduced if the average cosine of at least 75% of the non-input layers exceeds the input layer's "
                "(the paper: \"almost always\").", kind="test",
                control="the input layer (the claim's comparison); no other control is judged by this rule",
                threshold_ours=True),
        declare("Anisotropy grows with depth", "higher layers more anisotropic (BERT 0.105 at L0, 0.42 at L6, 0.675 at L11)",
                model, f"Spearman {spearman(upper.index, upper.baseline_cosine):.2f} (layer vs average cosine)",
                trend(upper.baseline_cosine, rising=True),
                "reproduced if Spearman's rho of the average cosine against the layer exceeds 0.5 over "
                "non-input layers.", kind="test", control=NO_TREND_CONTROL, threshold_ours=True),
    ]


def _top_layers(table: pd.DataFrame) -> pd.DataFrame | None:
    """The last three non-input layers (the last, the one below, the one below that), or None with fewer."""
    upper = _upper(table)
    return upper.iloc[-3:] if len(upper) >= 3 else None


def _bert_top_findings(model: str, table: pd.DataFrame) -> list[Finding]:
    """BERT's exceptions at its top: the penultimate layer more anisotropic than the last (the paper); self- and
    intra-sentence similarity rising again at the last layer (the slides). Each judged against the same
    comparison one layer lower, where it should not hold."""
    top = _top_layers(table)
    if counterpart(model) != "bert-base-cased" or top is None:
        return []
    below, penultimate, last = (top.iloc[i] for i in range(3))
    names = [f"L{layer}" for layer in top.index]

    def rises(upper_row, lower_row) -> Verdict:
        return all_of(sign(upper_row.self_similarity_adjusted - lower_row.self_similarity_adjusted),
                      sign(upper_row.intra_similarity_adjusted - lower_row.intra_similarity_adjusted))

    return [
        declare("Anisotropy: BERT's penultimate layer above its last",
                "the penultimate layer much more anisotropic than the last (0.675 at L11, 0.477 at L12)", model,
                f"average cosine {names[1]} {penultimate.baseline_cosine:.3f}, {names[2]} {last.baseline_cosine:.3f}; "
                f"one layer lower: {names[0]} {below.baseline_cosine:.3f}",
                sign(penultimate.baseline_cosine - last.baseline_cosine),
                "reproduced if the average cosine of the penultimate layer exceeds the last layer's, and the same "
                "comparison one layer lower does not hold.", kind="test",
                control="the same comparison one layer lower (the layer below the penultimate against it)",
                control_verdict=sign(below.baseline_cosine - penultimate.baseline_cosine)),
        declare("Slides: self- and intra-sentence similarity rise again at BERT's last layer",
                "both go up at layer 12 (SNLI)", model,
                f"last minus previous layer: self {last.self_similarity_adjusted - penultimate.self_similarity_adjusted:+.3f}, "
                f"intra {last.intra_similarity_adjusted - penultimate.intra_similarity_adjusted:+.3f}; one layer "
                f"lower: self {penultimate.self_similarity_adjusted - below.self_similarity_adjusted:+.3f}, intra "
                f"{penultimate.intra_similarity_adjusted - below.intra_similarity_adjusted:+.3f}",
                rises(last, penultimate),
                "reproduced if both adjusted measures are higher in the last layer than in the one below, and not "
                "both one layer lower.", kind="test", control="the same comparison one layer lower",
                control_verdict=rises(penultimate, below)),
    ]


# --------------------------------------------------------------------------- context-specificity


def _input_stopword_share(model: str, per_word: pd.DataFrame, lowest: pd.DataFrame) -> float:
    """The stopword share among the words of lowest self-similarity in the input layer: the control of the stopword
    finding (NaN where the input layer is not stored, or gives every word one self-similarity, as a decoder's does:
    its lowest words are then a tie)."""
    at_input = per_word[(per_word.model == model) & (per_word.layer == 0)].self_similarity
    share = lowest[(lowest.model == model) & (lowest.layer == 0)].stopword_share
    return float(share.iloc[0]) if len(share) and np.nanstd(at_input) > 1e-6 else np.nan


def _self_similarity_findings(model: str, table: pd.DataFrame, per_word: pd.DataFrame, baselines: pd.DataFrame,
                              lowest: pd.DataFrame, n_lowest: int) -> list[Finding]:
    """Self-similarity falls with depth (interval over word types and baseline draws); stopwords lowest (interval
    over layers)."""
    upper = _upper(table)
    draws = _baseline_draws(baselines, model, "baseline_cosine", upper.index)
    falls = _bootstrap_over_types(_over_types(per_word, model, "self_similarity", upper.index), draws,
                                  lambda means, baseline: spearman(upper.index, means - baseline), below=-0.5)
    shares = lowest[(lowest.model == model) & (lowest.layer > 0)].stopword_share
    stopwords = bootstrap_threshold(shares.to_numpy(), np.median, above=0.5, inclusive=True)
    at_input = _input_stopword_share(model, per_word, lowest)
    return [
        declare("Self-similarity falls with depth", "upper layers more context-specific in all three models", model,
                f"Spearman {spearman(upper.index, upper.self_similarity_adjusted):.2f} {falls.interval_text} "
                "(layer vs adjusted self-similarity)",
                falls,
                "reproduced if Spearman's rho of the adjusted self-similarity against the layer is below -0.5 over "
                "the non-input layers; borderline if the 95% bootstrap interval over word types, each resample "
                f"also taking one of the baseline's {len(draws)} independent draws of occurrences, crosses -0.5.",
                kind="test", control="random words: the anisotropy baseline, subtracted in every layer; "
                + NO_TREND_CONTROL, threshold_ours=True, headline=True,
                sampling_unit="word types and baseline draws"),
        declare("Stopwords have the lowest self-similarity", "e.g. ELMo's lowest: and, of, 's, the, to", model,
                f"median stopword share {shares.median():.2f} {stopwords.interval_text} among the {n_lowest} lowest "
                f"(per layer: {', '.join(f'{share:.1f}' for share in shares)}); input layer {at_input:.1f}",
                stopwords,
                f"reproduced if, in the median non-input layer, at least half of the {n_lowest} words of lowest "
                "self-similarity are stopwords (scikit-learn's English list), and not so in the input layer (no "
                "context: an encoder's input varies only with position); "
                "borderline if the 95% bootstrap interval over layers crosses 0.5 (layers of one model are not "
                "independent draws: the interval assumes they are).", kind="test",
                control="the input layer, by the same rule",
                control_verdict=threshold(at_input, above=0.5, inclusive=True), threshold_ours=True,
                sampling_unit="layers"),
    ]


def _most_context_specific(per_layer: pd.DataFrame) -> list[Finding]:
    """GPT-2 the most context-specific of the models: its lowest adjusted self-similarity below every encoder's."""
    labels = _counted_views(pd.unique(per_layer.model))
    decoders = [label for label in labels if counterpart(label) == "gpt2"]
    encoders = [label for label in labels if counterpart(label) == "bert-base-cased"]
    if not decoders or not encoders:
        return []
    tables = {label: per_layer[per_layer.model == label].set_index("layer") for label in decoders + encoders}
    lowest = {label: _upper(table).self_similarity_adjusted.min() for label, table in tables.items()}
    at_input = {label: _input(table, "self_similarity_adjusted") for label, table in tables.items()}

    def gap(values: dict) -> Verdict:
        return sign(min(values[label] for label in encoders) - max(values[label] for label in decoders))

    return [declare(
        "Self-similarity falls lowest in GPT-2: the most context-specific model",
        "GPT-2's representations the most context-specific of the three models, its last layer nearly maximally",
        ", ".join(decoders + encoders),
        "lowest adjusted self-similarity over non-input layers: "
        + "; ".join(f"{label} {value:.3f}" for label, value in lowest.items())
        + "; input layer: " + "; ".join(f"{label} {value:.3f}" for label, value in at_input.items()),
        gap(lowest),
        "reproduced if every decoder's lowest adjusted self-similarity over the non-input layers is below every "
        "encoder's, and not so in the input layer (no context); no interval: the models' word types differ.",
        kind="test", control="the input layer, by the same rule", control_verdict=gap(at_input))]


def _intra_findings(model: str, table: pd.DataFrame) -> list[Finding]:
    """How same-sentence words relate: BERT's (and its stand-ins') or GPT-2's (and its stand-in's) finding."""
    upper = _upper(table)
    intra = upper.intra_similarity_adjusted
    if counterpart(model) == "bert-base-cased":
        rho = spearman(upper.index, intra)
        return [declare(
            "BERT: same-sentence words grow apart in upper layers but stay more similar than random words",
            "adjusted intra-sentence similarity > 0 in every layer; lower in upper layers", model,
            f"min adjusted {intra.min():.3f} (non-input layers); Spearman {rho:.2f}",
            all_of(threshold(intra, above=0.0), trend(intra, rising=False, min_rho=0.0)),
            "reproduced if the adjusted intra-sentence similarity is above 0 in every non-input layer and falls "
            "with depth over them (Spearman's rho < 0).", kind="test",
            control="random words: the anisotropy baseline, subtracted in every layer (adjusted 0, no trend); no "
                    "other control is judged by this rule")]
    if counterpart(model) == "gpt2":
        near_zero = proportion((intra.abs() < 0.05).tolist(), at_least=0.5)
        input_intra = _input(table, "intra_similarity_adjusted")
        return [declare(
            "GPT-2: same-sentence words no more similar than random words",
            "adjusted intra-sentence similarity near 0 in most layers, highest in the input layer", model,
            f"|adjusted| < 0.05 in {near_zero.value:.0%} of non-input layers; highest non-input "
            f"{intra.max():.3f} (L{intra.idxmax()}), input layer {input_intra:.3f}",
            all_of(near_zero, threshold(input_intra - intra.max(), above=0.0, inclusive=True)),
            "reproduced if |adjusted intra-sentence similarity| < 0.05 in at least half of the non-input "
            "layers and none of them exceeds the input layer's.", kind="test",
            control="random words: the anisotropy baseline (adjusted 0), the claim's own comparison; no other "
                    "control is judged by this rule", threshold_ours=True)]
    return []


# --------------------------------------------------------------------------- MEV


def _below(types: np.ndarray, bound: np.ndarray) -> np.ndarray:
    """Per type and layer, 1 where its MEV is below ``bound``, else 0 (NaN without an MEV): its mean over the types
    is each layer's share of types below ``bound``."""
    return np.where(np.isnan(types), np.nan, types < bound)


def _at_input(per_word: pd.DataFrame, model: str, column: str, table: pd.DataFrame, claim: dict) -> float:
    """An MEV claim's statistic on the input layer alone: its control (NaN where no type has an MEV there, e.g. the
    centred MEV of a decoder's input layer, whose occurrences of a word are all one vector)."""
    types = _over_types(per_word, model, column, [0])
    if 0 not in table.index or np.isnan(types).all():
        return np.nan
    baseline = table.mev_baseline.reindex([0]).to_numpy()
    averaged = claim["per_type"](types, baseline) if "per_type" in claim else types
    return float(claim["statistic"](np.nanmean(averaged, axis=0), baseline))


def _mev_claims(model: str) -> list[dict]:
    """The MEV claims judged on ``model``: per claim its statistic of each layer's mean over the types of a layer
    set (of ``per_type`` where given) and the layers' uncentred baseline (which it reads where ``adjusted``), rule
    and texts (:func:`_bootstrap_over_types`)."""
    claims = [
        {"finding": "Less than 5% of a word's variance is explained by a static embedding",
         "paper": "mean adjusted MEV < 0.05 in every layer", "headline": True,
         "adjusted": True, "statistic": lambda means, baseline: np.max(means - baseline),
         "bounds": {"below": 0.05}, "ours": "max mean adjusted MEV {value:.3f} {interval}; input layer {at_input:.3f}",
         "rule": "reproduced if the mean adjusted MEV (word MEV minus the uncentred baseline) is below 0.05 in every "
                 "non-input layer, and not in the input layer (no context)", "threshold_ours": False},
        {"finding": "Many words have a raw MEV below the anisotropy baseline", "paper": "many words (no number given)",
         "adjusted": True, "per_type": _below, "statistic": lambda means, baseline: np.max(means),
         "bounds": {"above": 0.1, "inclusive": True},
         "ours": "at most {value:.1%} of words {interval}; input layer {at_input:.1%}",
         "rule": "reproduced if at least 10% of words have a raw MEV below the uncentred MEV baseline in some "
                 "non-input layer, and not in the input layer", "threshold_ours": True},
    ]
    if counterpart(model) == "bert-base-cased":
        claims.append(
            {"finding": "BERT: raw MEV below 5% in every layer", "paper": "mean raw MEV < 0.05",
             "adjusted": False, "statistic": lambda means, baseline: np.max(means),
             "bounds": {"below": 0.05}, "ours": "max mean raw MEV {value:.3f} {interval}; input layer {at_input:.3f}",
             "rule": "reproduced if the mean raw MEV is below 0.05 in every non-input layer, and not in the input "
                     "layer", "threshold_ours": False})
    if counterpart(model) == "gpt2":
        claims.append(
            {"finding": "GPT-2: raw MEV about 30% in layers 2-11", "paper": "mean raw MEV about 0.30", "inner": True,
             "adjusted": False, "statistic": lambda means, baseline: np.nanmean(means),
             "bounds": {"above": 0.15, "below": 0.45, "inclusive": True},
             "ours": "{value:.3f} {interval} (mean over the inner non-input layers); input layer {at_input:.3f}",
             "rule": "reproduced if the mean raw MEV over the non-input layers but the first and last lies between "
                     "0.15 and 0.45 (the paper's 0.30, 0.15 either side), and the input layer's does not",
             "threshold_ours": True})
    return claims


def _mev_findings(model: str, table: pd.DataFrame, per_word: pd.DataFrame, baselines: pd.DataFrame) -> list[Finding]:
    """Every MEV claim on one model, judged with both estimators and combined (:data:`MEV_ESTIMATORS`)."""
    upper = _upper(table)
    found = []
    for claim in _mev_claims(model):
        layers = upper.index[1:-1] if claim.get("inner") else upper.index
        by_estimator = {}
        for estimator, column in MEV_ESTIMATORS.items():
            types = _over_types(per_word, model, column, layers)
            if claim["adjusted"]:
                draws = _baseline_draws(baselines, model, "mev_baseline", layers)
                interval, unit = (f"over word types, each resample also taking one of the baseline's {len(draws)} "
                                  "independent draws of occurrences,", "word types and baseline draws")
            else:
                draws, interval, unit = None, "over word types", "word types"
            verdict = _bootstrap_over_types(types, draws, claim["statistic"], per_type=claim.get("per_type"),
                                            **claim["bounds"])
            at_input = _at_input(per_word, model, column, table, claim)
            control = threshold(at_input, **claim["bounds"])
            by_estimator[estimator] = [declare(
                claim["finding"], claim["paper"], model,
                claim["ours"].format(value=verdict.value, interval=verdict.interval_text, at_input=at_input),
                verdict, claim["rule"] + f"; borderline if the 95% bootstrap interval {interval} crosses a bound.",
                kind="test", control="the input layer (no context), by the same rule", control_verdict=control,
                threshold_ours=claim["threshold_ours"], headline=claim.get("headline", False),
                sampling_unit=unit)]
        found += combine_datasets(by_estimator, unit="estimator")
    return found


def _frequency_matched(contexts: pd.Series, word: str, taken: set) -> str | None:
    """The alphabetic word not in ``taken`` whose number of contexts is nearest ``word``'s (ties: the first in
    ``contexts``); None if there is none."""
    candidates = contexts[contexts.index.str.isalpha() & ~contexts.index.isin(list(taken))]
    return (candidates - contexts[word]).abs().idxmin() if len(candidates) else None


def _example_words_finding(model: str, per_word: pd.DataFrame, pairs: dict) -> Finding:
    """The slides' per-word MEV finding on one model, over several (noun, verb) pairs, against frequency-matched pairs.

    The pairs are chosen by
    :func:`~isolib.studies.ethayarajh_contextuality.compute.example_word_pairs` (the evidence's ``example_pairs``).
    A word's MEV depends on how many occurrences it has (a few vectors share more of their variance with one
    direction): the rule pairs each noun with a verb of about as many contexts, and the control pairs two other
    words, each of the number of contexts nearest the noun's and the verb's, whatever their part of speech.
    """
    claim, paper = "Slides: a concrete noun's MEV stays high, a frequent verb's is lower", "beverage near 1; go and school lower"
    chosen = pairs.get(model, [])
    if not chosen:
        return not_comparable(claim, paper, "not comparable when no (noun, verb) pair meets the rule.", kind="test",
                              model=model)
    upper = per_word[(per_word.model == model) & (per_word.layer > 0)]
    words = upper.pivot(index="layer", columns="word", values="mev")
    contexts = upper[upper.layer == upper.layer.min()].set_index("word").n_contexts
    taken = {word for pair in chosen for word in pair}
    matched = []
    for pair in chosen:
        match = []
        for word in pair:  # a word is matched once: never both sides of a pair of equally frequent words
            match.append(_frequency_matched(contexts, word, taken))
            taken.add(match[-1])
        matched.append(tuple(match))

    def wins(chosen_pairs) -> pd.Series:
        return pd.Series([float((words[noun] > words[verb]).mean()) for noun, verb in chosen_pairs],
                         index=[f"{noun}/{verb}" for noun, verb in chosen_pairs])

    ours = wins(chosen)
    verdict = bootstrap_threshold(ours.to_numpy(), np.mean, above=0.5)
    matched = [pair for pair in matched if None not in pair]
    control = wins(matched) if len(matched) == len(chosen) else pd.Series(dtype=float)
    return declare(claim, paper, model,
                   f"noun above verb in {ours.mean():.0%} of non-input layers {verdict.interval_text} ("
                   + ", ".join(f"{pair} {share:.0%}" for pair, share in ours.items()) + "); "
                   + (f"frequency-matched pairs {control.mean():.0%} ("
                      + ", ".join(f"{pair} {share:.0%}" for pair, share in control.items()) + ")" if len(control)
                      else "too few other words to match every pair's frequencies"),
                   verdict,
                   "reproduced if, averaged over the (noun, verb) pairs of example_word_pairs' rule, the noun's raw "
                   "(uncentred: the slides' values near 1) MEV exceeds the verb's in more than half of the non-input "
                   "layers, and not so for the frequency-matched pairs; borderline if the 95% bootstrap interval over "
                   "pairs crosses 0.5. The rule picks nouns whose every WordNet sense is concrete (an artifact, food, "
                   "plant, animal, substance or body part: no place or person), and pairs each with a verb of ten or "
                   "more WordNet verb senses, neither a stopword nor a light verb (be, have, make), in about as many "
                   "contexts.",
                   kind="test", control="frequency-matched pairs: for each pair, the two words whose numbers of "
                   "contexts are nearest the noun's and the verb's, by the same rule",
                   control_verdict=bootstrap_threshold(control.to_numpy(), np.mean, above=0.5) if len(control)
                   else Verdict.undecided(),
                   sampling_unit="(noun, verb) pairs")


# --------------------------------------------------------------------------- Table 1


# --------------------------------------------------------------------------- reference numbers


def _reference_findings(per_layer: pd.DataFrame) -> list[Finding]:
    """The paper's per-layer numbers, each once: judged on the paper's model, else one row of every stand-in's value."""
    compared = per_layer[per_layer.model.isin(_counted_views(pd.unique(per_layer.model)))]
    rows = compare_reference(compared, PAPER_REFERENCE, PAPER_MODELS, counterpart, MEASURE_NAMES, tolerance=TOLERANCE)
    merged: dict[str, list[Finding]] = {}
    found = []
    for row in rows:
        if row.status == "not comparable" and row.model != "-":  # a stand-in's value, shown, not compared
            merged.setdefault(row.finding, []).append(row)
            if len(merged[row.finding]) == 1:
                found.append(row.finding)
        else:
            found.append(row)
    paper_label = {paper.name: paper.label for paper in PAPER_MODELS}
    return [item if isinstance(item, Finding) else dataclasses.replace(
        merged[item][0], model=", ".join(row.model for row in merged[item]),
        ours="; ".join(f"{row.model} {row.ours}" for row in merged[item]),
        rule=f"{paper_label[counterpart(merged[item][0].model)]} is not run; its stand-ins are shown at the same "
             "relative depth, not compared.") for item in found]


# --------------------------------------------------------------------------- the study


def _model_findings(model: str, table: pd.DataFrame, evidence: dict) -> list[Finding]:
    """The paper's qualitative findings on one model view, from the evidence computed so far."""
    per_word, table1_rows, run = evidence["per_word"], evidence.get("table1"), evidence["run"]
    found = [*_anisotropy_findings(model, table), *_bert_top_findings(model, table),
             *_self_similarity_findings(model, table, per_word, evidence["baselines"], evidence["lowest"],
                                        run["n_lowest"]),
             *_intra_findings(model, table), *_mev_findings(model, table, per_word, evidence["baselines"])]
    if "example_pairs" in evidence:
        found.append(_example_words_finding(model, per_word, evidence["example_pairs"]))
    if table1_rows is not None and (table1_rows[table1_rows.model == model].layer > 0).any():
        found += table1.model_findings(model, table1_rows[table1_rows.model == model], run["min_coverage"])
    return found


def findings(evidence: dict) -> list[Finding]:
    """Decide, finding by finding, whether this run reproduces Ethayarajh (2019), from its evidence.

    Parameters
    ----------
    evidence : dict
        ``run``, ``per_layer``, ``baselines``, ``per_word`` and ``lowest`` at least (the module docstring); the
        findings of ``example_pairs`` and ``table1`` are judged when those are there.

    Returns
    -------
    list of Finding
        Per model view its findings (a decoder judged in its start-token view, the paper's procedure beside
        it: :func:`isolib.findings.judge_decoder_views`), then the findings across models, the reference
        numbers and ELMo's finding.
    """
    per_layer = evidence["per_layer"]
    found = judge_decoder_views({model: _model_findings(model, table.set_index("layer").sort_index(), evidence)
                                 for model, table in per_layer.groupby("model", sort=False)})
    found += _most_context_specific(per_layer)
    if "table1" in evidence:
        found += table1.decoders_against_encoders(evidence["table1"], _counted_views(
            pd.unique(evidence["table1"].dropna(subset=["layer"]).model)), evidence["run"]["min_coverage"])
    found += _reference_findings(per_layer)
    found.append(not_comparable("ELMo: same-sentence words grow more similar in upper layers",
                                "adjusted intra-sentence similarity rises with depth", "ELMo is not run.", kind="test"))
    return found


def notes(run: dict) -> tuple[str, ...]:
    """The paragraphs under the title of ``RESULTS.md``: what was run, the conventions, how a decoder is judged,
    time and memory."""
    return (
        f"Profile `{run['profile']}`: models {', '.join(run['models'])}; {run['n_sentences']} {run['corpus'].upper()} "
        f"sentences; unit `{run['unit']}`; types in at least {run['min_contexts']} sentences; baselines from "
        f"{run['n_samples']} random occurrences; MEV and PC vectors from at most {run['max_occurrences'] or 'all'} "
        "occurrences per word.",
        f"{LAYER_SET} Every MEV claim is judged with two estimators, both against the uncentred MEV baseline: the "
        "paper's formula (uncentred word MEV) and the authors' code (centred word MEV, whose numbers the paper "
        "reports); the line combines them (both agree: their status; one reproduced and one not: mixed).",
        "Besides the stand-ins' reasons above: minilm has 6 layers to BERT's 12, so a reference number is shown at "
        "the same relative depth; the STS sentences are short, within every stand-in's training length; Table 1's "
        f"static embedding, {run['static_baseline']}, is weaker than the paper's 300-d GloVe and FastText.",
        cost_note(run["wall_minutes"], run["peak_gib"], "each model view's tables"),
    )


def _stand_in_of(finding: Finding) -> str:
    """The stand-ins a finding is on (``settings.STAND_INS``), several for a finding across models or a reference
    number's row ("" for none)."""
    names = (View.parse(model).model for model in finding.model.split(", ") if model != "-")
    return ", ".join(dict.fromkeys(name for name in names if name in STAND_INS))


def record(evidence: dict) -> Record:
    """The study's record (``results.json``) judged from its whole evidence (the module docstring)."""
    run = evidence["run"]
    return Record(TITLE, CITATION, models_run(run["models"], run["static_baseline"]), notes(run),
                  tuple(mark_stand_ins(findings(evidence), _stand_in_of)))
