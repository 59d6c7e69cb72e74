"""What a model card says: each statement judged by the findings machinery, from the card's evidence alone.

Every sentence of a card is a :class:`~isolib.findings.Finding`: a *test* with its rule, its control judged
by the same rule, and its interval over the unit that carries its uncertainty (token samples, windows,
sentence pairs), or a *check*. Per layer and view: anisotropy, rogue dimensions, the local dimension against
the static baseline, clusters beyond artefact groups, the first position's norm and attention (a decoder),
and whether each post-processing raises the STS-B dev score; per view, which measures rank the layers as
the average cosine does. A decoder's views are all shown; the start-token view is the one judged
(:func:`isolib.findings.judge_decoder_views`), the papers' view beside it. Every threshold but Cai et al.'s
silhouette (0.1) is ours, and says so.

Nothing here loads a model or reads the cache: :func:`record` takes the evidence as
:func:`isolib.evidence.load_evidence` gives it back.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pandas as pd

from isolib.findings import (
    ARTEFACT_RULE,
    Finding,
    Record,
    artefact_reason,
    bootstrap_threshold,
    compare_correlations,
    compare_with_control,
    declare,
    judge_decoder_views,
    mark_stand_ins,
    models_line,
    not_comparable,
    threshold,
    with_interval,
)
from isolib.measures import LABELS, MEASURE_NAMES, TOP_COORDINATES, kendall_matrix, replicate_array
from isolib.views import View

__all__ = ["ANISOTROPIC", "ROGUE_SHARE", "SILHOUETTE", "SINK_RATIO", "ATTENTION_SHARE", "AGREE", "Statement",
           "STATEMENTS", "METHOD_NAMES", "norm_ratio", "spearman", "statement_claim", "agreement_claim", "view_findings", "verdict_of", "record"]

# The thresholds. Ours, as notebook 05's: an anisotropic layer's average cosine, the share that "most" means,
# the Kendall tau above which two measures agree, the attention share "most" means. The artefact rule's: a
# norm more than twice the others'. Cai et al.'s: a silhouette below 0.1 is no clustering.
ANISOTROPIC = 0.1
ROGUE_SHARE = 0.5
AGREE = 0.5
ATTENTION_SHARE = 0.5
SINK_RATIO = 2.0
SILHOUETTE = 0.1
TOKEN_SAMPLES = "token samples"
METHOD_NAMES = {"centre": "centring", "abtt": "all-but-the-top", "whiten": "whitening",
                "standardise": "standardisation"}
CITATION = ("A model card: the measures of notebook 05 (Ethayarajh 2019; Cai et al. 2021; Mu & Viswanath 2018; "
            "Rudman et al. 2022; Timkey & van Schijndel 2021) on one model, every statement judged with its "
            "control and interval")


@dataclass(frozen=True)
class Statement:
    """One kind of statement a card makes about each layer.

    Attributes
    ----------
    key : str
    text : str
        The claim, with ``{layer}``.
    source : str
        What the literature says (the findings' "paper" column).
    short : str
        Its column in the card's table at a glance.
    """

    key: str
    text: str
    source: str
    short: str

    def claim(self, layer: int) -> str:
        return self.text.format(layer=layer)


_POST = "post-processing makes a space more isotropic and similarity better (Mu & Viswanath 2018; Rajaee & Pilehvar 2021)"
STATEMENTS = {statement.key: statement for statement in (
    Statement("anisotropic", "Layer {layer} is anisotropic",
              "contextual layers are anisotropic: random tokens have a high average cosine (Ethayarajh 2019)",
              "anisotropic"),
    Statement("rogue", f"Layer {{layer}}: {TOP_COORDINATES} coordinates carry most of the average cosine",
              "1-3 rogue dimensions dominate cosine similarity (Timkey & van Schijndel 2021)", "rogue coordinates"),
    Statement("lid", "Layer {layer} uses fewer local dimensions than the static baseline",
              "contextual spaces are manifolds of low local dimension (Cai et al. 2021)", "LID below static"),
    Statement("clusters", "Layer {layer} holds clusters beyond artefact groups",
              "contextual spaces hold clusters (Cai et al. 2021)", "clusters"),
    Statement("sink_norm", "Layer {layer}: the first position's norm is more than twice the others'",
              "a decoder's first position is an attention sink of huge norm", "sink: norm"),
    Statement("sink_attention", "Layer {layer}: the first position draws most of the attention",
              "a decoder's first position is an attention sink that draws most attention", "sink: attention"),
    *(Statement(f"sts_{method}", f"Layer {{layer}}: {name} raises the STS-B dev score", _POST, f"STS: {name}")
      for method, name in METHOD_NAMES.items()),
)}


def statement_claim(key: str, layer: int) -> str:
    """The claim of statement ``key`` about ``layer`` (how the card's page finds each layer's finding)."""
    return STATEMENTS[key].claim(layer)


# Two estimates of one quantity, as notebook 05 uses them (its control pair): their agreement is a check.
SAME_QUANTITY = "anisotropy_baseline"


def agreement_claim(measure: str) -> str:
    """The claim that ``measure`` ranks the layers as the average cosine does."""
    return f"{LABELS[measure]} ranks the layers as the average cosine does"


# --------------------------------------------------------------------------- one layer


def _replicates(table: pd.DataFrame, space: str, layer: int, column: str) -> np.ndarray:
    rows = table[(table.space == space) & (table.layer == layer)].sort_values("replicate")
    return rows[column].to_numpy(dtype=float)


def _anisotropy(label: str, layer: int, evidence: dict, resampling: dict) -> Finding:
    statement = STATEMENTS["anisotropic"]
    values = _replicates(evidence["measures"], label, layer, "average_cosine")
    changes = evidence["changes"]
    centred = _replicates(changes[changes.change == "centre"], label, layer, "average_cosine")
    verdict = bootstrap_threshold(values, np.mean, above=ANISOTROPIC, **resampling)
    control = threshold(centred.mean(), above=ANISOTROPIC)  # the first sample centred
    return declare(statement.claim(layer), statement.source, label,
                   f"average cosine {verdict.value:.3f} {verdict.interval_text}; centred {control.value:.3f}", verdict,
                   f"reproduced if the mean over the {len(values)} token samples of the average cosine between tokens is "
                   f"above {ANISOTROPIC}, with its 95% interval over the samples.", kind="test",
                   control="the first sample's tokens centred (the mean vector removed)", control_verdict=control,
                   threshold_ours=True, sampling_unit=TOKEN_SAMPLES)


def _rogue(label: str, layer: int, evidence: dict, anisotropic: bool) -> Finding:
    statement = STATEMENTS["rogue"]
    shares = evidence["rogue_shares"]
    cell = shares[(shares.space == label) & (shares.layer == layer)].iloc[0]
    if not anisotropic:
        return not_comparable(statement.claim(layer), statement.source,
                              f"the layer is not anisotropic (average cosine {cell.average_cosine:.3f}): there is no "
                              "common cosine for coordinates to carry.", kind="test", model=label)
    resamples = evidence["rogue_resamples"]
    drawn = resamples[(resamples.space == label) & (resamples.layer == layer)].top_share.to_numpy(dtype=float)
    verdict = with_interval(threshold(cell.top_share, above=ROGUE_SHARE), drawn, above=ROGUE_SHARE)
    control = threshold(cell.rotated_share, above=ROGUE_SHARE)
    return declare(statement.claim(layer), statement.source, label,
                   f"top {TOP_COORDINATES} coordinates (#{cell.rogue.replace(' ', ', #')}) carry {cell.top_share:.0%} "
                   f"{verdict.interval_text}; randomly rotated {cell.rotated_share:.0%}", verdict,
                   f"reproduced if the {TOP_COORDINATES} coordinates that contribute most carry more than "
                   f"{ROGUE_SHARE:.0%} of the average cosine of the first token sample, with its 95% interval over the "
                   "sample's windows, each drawn whole (its tokens share a context).", kind="test",
                   control="the same points randomly rotated (every cosine kept, no axis special)",
                   control_verdict=control, threshold_ours=True, sampling_unit="windows")


def _lid(label: str, layer: int, evidence: dict, resampling: dict) -> Finding | None:
    statement = STATEMENTS["lid"]
    baseline = evidence["run"]["parameters"]["static_baseline"]
    measures = evidence["measures"]
    if not baseline or label == baseline or baseline not in set(measures.space):
        return None
    ours = _replicates(measures, label, layer, "lid")
    static = _replicates(measures, baseline, 0, "lid")
    points, static_points = (_replicates(measures, space, at, "n_points")[0] for space, at in
                             ((label, layer), (baseline, 0)))
    if static_points < points:
        return not_comparable(statement.claim(layer), statement.source,
                              f"{baseline} has {int(static_points)} distinct words in these windows, fewer than the "
                              f"{int(points)} tokens of a sample: the LID would not be compared at the same n.",
                              kind="test", model=label)
    verdict = compare_with_control(ours, static, higher=False, **resampling)
    return declare(statement.claim(layer), statement.source, label,
                   f"LID {ours.mean():.1f} against {static.mean():.1f} for {baseline}, both at n = {int(points)}; "
                   f"difference {verdict.value:+.1f} {verdict.interval_text}", verdict,
                   "reproduced if the mean LID over the token samples (k nearest neighbours, the same n) is below the "
                   "static baseline's, the interval of the paired difference over the samples below 0.",
                   kind="test", control=f"{baseline} on as many distinct words of the same windows",
                   sampling_unit=TOKEN_SAMPLES)


def _clusters(label: str, layer: int, evidence: dict, resampling: dict) -> Finding:
    statement = STATEMENTS["clusters"]
    values = _replicates(evidence["measures"], label, layer, "silhouette")
    controls = evidence["cluster_control"]
    control_row = controls[(controls.space == label) & (controls.layer == layer)].iloc[0]
    clusters = evidence["clusters"]
    clusters = clusters[(clusters.space == label) & (clusters.layer == layer)]
    reasons = [artefact_reason(row.dominant_share, row.norm_ratio) for row in clusters.itertuples()]
    artefacts = [f"cluster {row.cluster} ({row.size} points, '{row.dominant_type}'): {reason}"
                 for row, reason in zip(clusters.itertuples(), reasons) if reason]
    verdict = bootstrap_threshold(values, np.mean, above=SILHOUETTE, **resampling)
    genuine = len(clusters) - len(artefacts)
    if verdict.passed and genuine <= 1:  # what separates the points is artefact groups, never counted as structure
        verdict = dataclasses.replace(verdict, passed=False, borderline=False)
    ours = (f"best silhouette {verdict.value:.2f} {verdict.interval_text} at k = {int(control_row.k)}; "
            f"{len(artefacts)} artefact group{'s' * (len(artefacts) != 1)}" + (f" ({'; '.join(artefacts)})" if artefacts
                                                                               else "")
            + f"; Gaussian control {control_row.gaussian_silhouette:.2f}")
    return declare(statement.claim(layer), statement.source, label, ours, verdict,
                   f"reproduced if the mean over the token samples of the best k-means silhouette (k from 2) is "
                   f"above {SILHOUETTE} (Cai et al.'s threshold), with its 95% interval over the samples, and at least "
                   f"two clusters of the first sample's partition are no artefact group ({ARTEFACT_RULE}).",
                   kind="test", control="a Gaussian cloud of the layer's mean and covariance, the same selection",
                   control_verdict=threshold(control_row.gaussian_silhouette, above=SILHOUETTE),
                   sampling_unit=TOKEN_SAMPLES)


def norm_ratio(windows: np.ndarray, position: int) -> float:
    """Mean norm of ``position`` (0 or 1) over the mean norm of the word tokens after it, over windows' rows
    ``first, second, rest_sum, rest_count``."""
    first, second, rest_sum, rest_count = windows.T
    if position == 1:
        return float(np.nanmean(second) / (rest_sum.sum() / rest_count.sum()))
    seen = ~np.isnan(second)
    return float(first.mean() / ((second[seen].sum() + rest_sum.sum()) / (seen.sum() + rest_count.sum())))


def _sink_norm(label: str, layer: int, evidence: dict, resampling: dict) -> Finding:
    statement = STATEMENTS["sink_norm"]
    norms = evidence["sink_norms"]
    windows = norms[(norms.space == label) & (norms.layer == layer)][["first", "second", "rest_sum",
                                                                       "rest_count"]].to_numpy(dtype=float)
    verdict = bootstrap_threshold(windows, lambda sample: norm_ratio(sample, 0), above=SINK_RATIO, **resampling)
    control = bootstrap_threshold(windows, lambda sample: norm_ratio(sample, 1), above=SINK_RATIO, **resampling)
    return declare(statement.claim(layer), statement.source, label,
                   f"first position {verdict.value:.2f} times the mean norm of the tokens after it {verdict.interval_text}; "
                   f"second position {control.value:.2f}", verdict,
                   f"reproduced if position 0's mean norm is more than {SINK_RATIO:g} times the mean norm of the word "
                   f"tokens after it (the artefact rule's factor), with its 95% interval over the {len(windows)} "
                   "windows.", kind="test", control="position 1, against the tokens after it, by the same rule",
                   control_verdict=control, threshold_ours=True, sampling_unit="windows")


def _sink_attention(label: str, layer: int, evidence: dict, resampling: dict) -> Finding | None:
    statement = STATEMENTS["sink_attention"]
    attention = evidence["attention"]
    rows = attention[(attention.space == label) & (attention.layer == layer)]
    if rows.empty:
        return None
    verdict = bootstrap_threshold(rows.first_share.to_numpy(dtype=float), np.mean, above=ATTENTION_SHARE, **resampling)
    control = bootstrap_threshold(rows.second_share.to_numpy(dtype=float), np.mean, above=ATTENTION_SHARE,
                                  **resampling)
    return declare(statement.claim(layer), statement.source, label,
                   f"{verdict.value:.0%} of the attention of the positions after it {verdict.interval_text}; position 1: "
                   f"{control.value:.0%}", verdict,
                   f"reproduced if, averaged over heads and the positions after it, position 0 draws more than "
                   f"{ATTENTION_SHARE:.0%} of the attention of the layer's block, with its 95% interval over the "
                   f"{len(rows)} windows read.", kind="test", control="position 1, by the same rule",
                   control_verdict=control, threshold_ours=True, sampling_unit="windows")


def spearman(gold: np.ndarray, similarities: np.ndarray) -> float:
    """Spearman's correlation of the similarities with the gold scores."""
    from scipy import stats

    return float(stats.spearmanr(similarities, gold).statistic)


def _sts(label: str, layer: int, evidence: dict, resampling: dict) -> list[Finding]:
    sts = evidence["sts"]
    cell = sts[(sts.space == label) & (sts.layer == layer)]
    gold = evidence["sts_gold"].sort_values("pair").score.to_numpy(dtype=float)
    by_method = {method: rows.sort_values("pair").similarity.to_numpy(dtype=float)
                 for method, rows in cell.groupby("method")}
    raw = spearman(gold, by_method["raw"])
    findings = []
    for method, name in METHOD_NAMES.items():
        statement = STATEMENTS[f"sts_{method}"]
        verdict = compare_correlations(gold, by_method[method], by_method["raw"], **resampling)
        low, high = verdict.interval if verdict.interval else (np.nan, np.nan)
        findings.append(declare(
            statement.claim(layer), statement.source, label,
            f"Spearman x 100 {100 * spearman(gold, by_method[method]):.1f} against {100 * raw:.1f} raw, "
            f"{100 * verdict.value:+.1f} [95% CI {100 * low:+.1f} to {100 * high:+.1f}]", verdict,
            f"reproduced if Spearman's correlation with the gold scores of the cosine of the sentences' mean-pooled "
            f"token vectors is higher after {name} of them (fitted on the dev set's) than without, the interval of the paired "
            f"difference over the {len(gold)} sentence pairs above 0.", kind="test",
            control="the same layer without post-processing, on the same pairs", sampling_unit="sentence pairs"))
    return findings


def _layer_findings(label: str, layer: int, evidence: dict, resampling: dict) -> list[Finding]:
    anisotropy = _anisotropy(label, layer, evidence, resampling)
    findings = [anisotropy, _rogue(label, layer, evidence, anisotropy.value >= ANISOTROPIC),
                _lid(label, layer, evidence, resampling), _clusters(label, layer, evidence, resampling)]
    if "sink_norms" in evidence and label in set(evidence["sink_norms"].space):
        findings += [_sink_norm(label, layer, evidence, resampling), _sink_attention(label, layer, evidence, resampling)]
    findings += _sts(label, layer, evidence, resampling)
    return [finding for finding in findings if finding is not None]


# --------------------------------------------------------------------------- one view


def _agreement(label: str, evidence: dict, resampling: dict) -> list[Finding]:
    """Which measures rank the view's layers as the average cosine does (Kendall's tau over layers)."""
    measures = evidence["measures"]
    mine = measures[measures.space == label]
    if mine.layer.nunique() < 3:
        return []
    array, _ = replicate_array(mine)
    index = {name: i for i, name in enumerate(MEASURE_NAMES)}
    shuffled = np.random.default_rng(resampling["random_state"]).permutation(len(array))

    def tau(sample: np.ndarray) -> float:
        """The mean over replicates of Kendall's tau of the pair: one matrix over (layers, both x replicates)."""
        n_replicates = sample.shape[1]
        matrix = kendall_matrix(np.concatenate([sample[:, :, 0], sample[:, :, 1]], axis=1))
        taus = matrix[np.arange(n_replicates), n_replicates + np.arange(n_replicates)]
        return float(taus[~np.isnan(taus)].mean()) if (~np.isnan(taus)).any() else np.nan

    findings = []
    for name in MEASURE_NAMES[1:]:
        pair = array[:, :, [index[name], index["average_cosine"]]]
        verdict = bootstrap_threshold(pair, tau, above=AGREE, crossed=True, **resampling)
        if name == SAME_QUANTITY:
            findings.append(declare(
                agreement_claim(name), "the same quantity as the average cosine", label,
                f"Kendall tau {verdict.value:.2f} {verdict.interval_text}", verdict,
                f"passed if Kendall's tau-b of the two over the {len(array)} layers is above {AGREE}: the anisotropy "
                "baseline is the average cosine over the pairs of a subsample from different windows, so the two "
                "agree unless the sampling is broken.", kind="check"))
            continue
        control_pair = np.stack([array[shuffled, :, index[name]], array[:, :, index["average_cosine"]]], axis=2)
        control = bootstrap_threshold(control_pair, tau, above=AGREE, crossed=True, **resampling)
        findings.append(declare(
            agreement_claim(name), "the measures disagree on what is isotropic (Rudman et al. 2022)", label,
            f"Kendall tau {verdict.value:.2f} {verdict.interval_text}; layers shuffled {control.value:.2f}", verdict,
            f"reproduced if Kendall's tau-b of the two, oriented to isotropy, over the {len(array)} layers is above "
            f"{AGREE}, with its 95% interval crossed over layers and token samples.", kind="test",
            control="the same measure with its layers in a random order", control_verdict=control,
            threshold_ours=True, sampling_unit="layers and token samples, crossed"))
    return findings


def _checks(label: str, evidence: dict) -> list[Finding]:
    """Bookkeeping: the sink's ratio is the library's :func:`isolib.embed.first_position_norm_ratio`."""
    library = evidence.get("sink_library")
    if library is None or label not in set(library.space):
        return []
    norms = evidence["sink_norms"]
    differences = []
    for row in library[library.space == label].itertuples():
        windows = norms[(norms.space == label) & (norms.layer == row.layer)][["first", "second", "rest_sum",
                                                                               "rest_count"]].to_numpy(dtype=float)
        differences.append(abs(norm_ratio(windows, 0) / row.first_position_norm_ratio - 1))
    largest = max(differences)
    return [declare("The first position's norm ratio is the library's", "equal (isolib.embed.first_position_norm_ratio)",
                    label, f"largest relative difference {largest:.1g} over {len(differences)} layers",
                    threshold(largest, below=1e-4), "passed if every layer's ratio is within 1e-4 of the library's.",
                    kind="check")]


def view_findings(label: str, evidence: dict) -> list[Finding]:
    """Every statement about one view of the model (or the static model): per layer, then over its layers."""
    parameters = evidence["run"]["parameters"]
    resampling = {"n_resamples": parameters["n_resamples"], "random_state": parameters["random_state"]}
    measures = evidence["measures"]
    layers = sorted(measures[measures.space == label].layer.unique())
    findings = [finding for layer in layers for finding in _layer_findings(label, int(layer), evidence, resampling)]
    attention = evidence.get("attention")
    if "sink_norms" in evidence and label in set(evidence["sink_norms"].space) and (
            attention is None or label not in set(attention.space)):
        findings.append(not_comparable("The first position draws most of the attention", STATEMENTS[
            "sink_attention"].source, f"{evidence['run']['attention'] or 'no attention was read'}.", kind="test",
            model=label))
    return findings + _agreement(label, evidence, resampling) + _checks(label, evidence)


def _notes(run: dict) -> tuple[str, ...]:
    parameters = run["parameters"]
    seconds = run["seconds"]
    minutes = run.get("wall_minutes", sum(seconds.values()) / 60)
    return (f"**Run:** {parameters['corpus']} ({parameters['split']}), {run['n_windows']} windows of {run['window_length']} tokens "
            f"(token budget {parameters['token_budget']:,}); {parameters['n_replicates']} samples of "
            f"{parameters['n_points']:,} word tokens per layer; STS-B dev, {run['sts']['pairs']:,} pairs; "
            f"{parameters['n_resamples']:,} bootstrap resamples per interval.",
            f"**Time:** {minutes:.1f} min in all (" + ", ".join(f"{step} {value / 60:.1f} min" for step, value
                                                            in seconds.items())
            + f"); peak memory {run.get('peak_gib', float('nan')):.1f} GiB.")


def record(evidence: dict) -> Record:
    """The card's :class:`~isolib.findings.Record`: every statement about every view, from the evidence alone."""
    run = evidence["run"]
    model = run["model"]
    by_label = {label: view_findings(label, evidence) for label in run["views"]}
    findings = judge_decoder_views(by_label) if len(by_label) > 1 else by_label[model]
    # The card judges the model itself: no result of it stands in for a paper's model.
    findings = mark_stand_ins(findings, lambda finding: "")
    baseline = run["parameters"]["static_baseline"]
    models = models_line([model]) + (f"; static baseline {baseline}" if baseline and baseline != model else "")
    return Record(f"Isotropy card: {model}", CITATION, models, _notes(run), tuple(findings))


def verdict_of(findings, claim: str, label: str) -> Finding | None:
    """The finding about ``claim`` on view ``label`` (None where the card makes no such statement)."""
    return next((finding for finding in findings if finding.finding == claim and finding.model == label), None)

