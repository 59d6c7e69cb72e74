"""The literature's claims about the measures, judged on notebook 05's evidence, and the checks.

Per model view (a decoder judged in its start-token view, the paper's procedure beside it,
:func:`isolib.findings.judge_decoder_views`): the average cosine moves under centring and I(W) under
scaling while IsoScore does not, IsoScore moves under normalisation while the average cosine does not
(Rudman et al. 2022); a few rogue coordinates carry most of the average cosine of the anisotropic
layers, and standardisation removes it (Timkey & van Schijndel 2021). Over all cells: IsoScore against
the average cosine and I(W), and the most opposed pair of measures.

Everything here reads the evidence tables the notebook stores (:func:`record` takes them as
:func:`isolib.evidence.load_evidence` gives them back): ``measures_by_replicate`` and ``changed`` (every
measure per cell and token sample, and per change of each sample), ``rogue_shares`` and ``rogue_resamples``
(the rogue shares per cell, and per bootstrap resample of the tokens), ``library_agreement`` (a
number) and ``run`` (the parameters and the run's time and memory). Every threshold is ours: neither
paper states one.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from isolib.findings import (
    Finding,
    Record,
    Verdict,
    bootstrap_threshold,
    declare,
    judge_decoder_views,
    models_line,
    not_comparable,
    threshold,
)
from isolib.studies.every_measure.settings import (
    CITATION,
    MEASURE_BY_NAME,
    MEASURE_NAMES,
    TITLE,
    TOP_COORDINATES,
)
from isolib.studies.every_measure.tables import (
    isoscore_of_variances,
    kendall_matrix,
    mean_kendall,
    replicate_array,
    rogue_table,
)

__all__ = ["SHARE_BOUND", "STANDARDISED_BOUND", "AGREE_BOUND", "assess_findings", "findings", "notes", "record"]

# The thresholds of the tests (ours): the share of the average cosine that "most" means, |average cosine|
# that standardisation must leave, and the Kendall tau below which two measures disagree.
SHARE_BOUND = 0.5
STANDARDISED_BOUND = 0.05
AGREE_BOUND = 0.5
LAYERS = "layers of the model"
CELLS_AND_SAMPLES = "cells and token samples, crossed"


# --------------------------------------------------------------------------- helpers


def _interval_verdict(value: float, low: float, high: float, *, above: float | None = None,
                      below: float | None = None) -> Verdict:
    """:func:`isolib.findings.threshold` on ``value`` with a bootstrap interval computed elsewhere."""
    verdict = threshold(value, above=above, below=below)
    if verdict.passed is None or not (np.isfinite(low) and np.isfinite(high)):
        return verdict
    ends = [threshold(end, above=above, below=below).passed for end in (low, high)]
    return dataclasses.replace(verdict, interval=(float(low), float(high)), borderline=ends[0] != ends[1])


def _changes_of(by_replicate: pd.DataFrame, changed: pd.DataFrame, change: str, column: str) -> pd.DataFrame:
    """Per cell and replicate: ``before`` and ``after`` of one measure under one change, with the cell's space."""
    keys = ["space", "layer", "replicate"]
    before = by_replicate.set_index(keys)[column]
    after = changed[changed.change == change].set_index(keys)[column]
    joined = pd.DataFrame({"before": before, "after": after}).dropna()
    return joined.reset_index()


def _median_change_finding(claim: str, paper: str, label: str, moved: pd.DataFrame, unmoved: pd.DataFrame, *,
                           bound: float, unit: str, control_text: str, rule: str, headline: bool = False) -> Finding:
    """A test that a measure moves by more than ``bound``: the median over a model's layers, interval over layers.

    ``moved`` and ``unmoved`` are :func:`_changes_of` the measure and of its control; a layer's change
    is the mean over its replicates. A space of one cell (a static embedding) is judged on its one
    change, without an interval.
    """
    def per_layer(changes: pd.DataFrame) -> pd.Series:
        return (changes.after - changes.before).groupby(changes.layer).mean()

    deltas, control = per_layer(moved), per_layer(unmoved)
    unit = f" {unit}" if unit else ""
    if len(deltas) == 0:
        return not_comparable(claim, paper, "no cell of this space was changed.", kind="test", model=label)
    if len(deltas) == 1:
        verdict = threshold(abs(float(deltas.iloc[0])), above=bound)
        measured = f"|change| {verdict.value:.3g}{unit} (one cell)"
    else:
        verdict = bootstrap_threshold(deltas.abs().to_numpy(), np.median, above=bound)
        measured = f"median |change| {verdict.value:.3g}{unit} over {len(deltas)} layers {verdict.interval_text}"
    ours = f"{measured}; {control_text}: at most {control.abs().max():.1g}"
    return declare(claim, paper, label, ours, verdict, rule, kind="test", control=control_text + " (0 by construction)",
                   threshold_ours=True, headline=headline, sampling_unit=LAYERS if verdict.interval else "")


# --------------------------------------------------------------------------- the claims about one model view


def _invariance_findings(label: str, mine: pd.DataFrame, theirs: pd.DataFrame) -> list[Finding]:
    """Rudman et al. (2022): what moves the average cosine and I(W) leaves IsoScore still, and the reverse."""
    findings = []
    # The average cosine moves with the mean, IsoScore does not.
    findings.append(_median_change_finding(
        "The average cosine changes under global centring, to which IsoScore is invariant",
        "the average cosine depends on the mean vector; IsoScore is mean-agnostic (Rudman et al. 2022)", label,
        _changes_of(mine, theirs, "centre", "average_cosine"), _changes_of(mine, theirs, "centre", "isoscore"),
        bound=0.05, unit="", control_text="IsoScore's change under the same centring", headline=True,
        rule="reproduced if the median over layers of |average cosine after centring - before| exceeds 0.05, with its "
             "95% interval over layers (a space of one cell: its one change)."))
    # I(W) moves with the scale, IsoScore does not.
    findings.append(_median_change_finding(
        "I(W) changes under uniform scaling, to which IsoScore is invariant",
        "I(W) is not scale invariant; IsoScore is (Rudman et al. 2022)", label,
        _changes_of(mine, theirs, "scale", "log10_iw"), _changes_of(mine, theirs, "scale", "isoscore"),
        bound=1.0, unit="in log10 I(W)", control_text="IsoScore's change under the same scaling",
        rule="reproduced if the median over layers of |log10 I(W) after scaling - before| exceeds 1 (a factor of 10), "
             "with its 95% interval over layers (a space of one cell: its one change)."))
    # The reverse: IsoScore moves under a change the average cosine is blind to.
    findings.append(_median_change_finding(
        "IsoScore changes when every vector is scaled to unit length, to which the average cosine is invariant",
        "IsoScore reads the variance of the points, norms included; a cosine ignores norms (Rudman et al. 2022)",
        label, _changes_of(mine, theirs, "unit_length", "isoscore"),
        _changes_of(mine, theirs, "unit_length", "average_cosine"), bound=0.05, unit="",
        control_text="the average cosine's change under the same normalisation",
        rule="reproduced if the median over layers of |IsoScore after normalising every vector - before| exceeds 0.05, "
             "with its 95% interval over layers (a space of one cell: its one change)."))
    return findings


def _rogue_finding(label: str, cells: pd.DataFrame, anisotropic: pd.DataFrame, *, anisotropic_cosine: float,
                   share_bound: float, n_dimensions: int) -> Finding:
    """Timkey & van Schijndel (2021): a few rogue coordinates carry most of the anisotropic layers' average cosine."""
    claim = f"{n_dimensions} rogue coordinates carry most of the average cosine in the anisotropic layers"
    paper = "1-3 dimensions dominate cosine similarity (Timkey & van Schijndel 2021)"
    if anisotropic.empty:
        return not_comparable(claim, paper, f"no anisotropic layer: the average cosine is below "
                              f"{anisotropic_cosine} in every layer.", kind="test", model=label,
                              ours=f"average cosine at most {cells.average_cosine.max():.2f}")
    weakest = anisotropic.loc[anisotropic.top_share.idxmin()]
    verdict = all_shares = _interval_verdict(weakest.top_share, weakest.top_share_low, weakest.top_share_high,
                                             above=share_bound)
    controlled = threshold(anisotropic.rotated_share.max(), below=share_bound)
    if all_shares.passed is not None and not controlled.passed:
        verdict = dataclasses.replace(all_shares, passed=False, borderline=False)
    return declare(
        claim, paper, label,
        f"{len(anisotropic)} layers with average cosine >= {anisotropic_cosine}; the top {n_dimensions} coordinates "
        f"carry at least {weakest.top_share:.0%} of it (L{int(weakest.layer)}) {verdict.interval_text}; after a "
        f"random rotation at most {anisotropic.rotated_share.max():.0%}",
        verdict,
        f"reproduced if, in every layer whose average cosine is at least {anisotropic_cosine}, the {n_dimensions} "
        f"coordinates contributing most carry more than {share_bound:.0%} of the average cosine, with the 95% "
        "interval over tokens of the weakest layer, while after a random rotation of the same points they do not.",
        kind="test", control="the same points randomly rotated (every cosine kept, no privileged axis)",
        threshold_ours=True, headline=True, sampling_unit="tokens of the weakest layer" if verdict.interval else "")


def _standardisation_finding(label: str, mine: pd.DataFrame, theirs: pd.DataFrame, anisotropic: pd.DataFrame, *,
                             anisotropic_cosine: float, standardised_bound: float) -> Finding:
    """Timkey & van Schijndel (2021): standardising each coordinate removes the anisotropic layers' average cosine."""
    claim = "Standardisation removes the average cosine of the anisotropic layers"
    paper = "standardising each dimension removes the rogue dimensions' effect (Timkey & van Schijndel 2021)"
    layers = set(anisotropic.layer) if not anisotropic.empty else set()
    standardised = _changes_of(mine, theirs, "standardise", "average_cosine")
    centred = _changes_of(mine, theirs, "centre", "average_cosine")
    standardised = standardised[standardised.layer.isin(layers)]
    centred = centred[centred.layer.isin(layers)]
    if standardised.empty:
        return not_comparable(claim, paper, f"no anisotropic layer: the average cosine is below "
                              f"{anisotropic_cosine} in every layer.", kind="test", model=label)
    return declare(
        claim, paper, label,
        f"|average cosine| after standardisation at most {standardised.after.abs().max():.3f} (before: at least "
        f"{standardised.before.min():.2f}); after global centring alone at most {centred.after.abs().max():.3f}",
        threshold(standardised.after.abs(), below=standardised_bound),
        f"reproduced if, in every layer whose average cosine is at least {anisotropic_cosine}, |average cosine| "
        f"after standardising each coordinate is below {standardised_bound}.",
        kind="test", control="the raw average cosine of the same layers; global centring alone shown beside",
        threshold_ours=True)


def _model_findings(label: str, by_replicate: pd.DataFrame, changed: pd.DataFrame, rogue: pd.DataFrame, *,
                    anisotropic_cosine: float, share_bound: float, standardised_bound: float,
                    n_dimensions: int) -> list[Finding]:
    """The claims judged on one model view's cells."""
    mine = by_replicate[by_replicate.space == label]
    theirs = changed[changed.space == label]
    cells = rogue[rogue.space == label]
    anisotropic = cells[cells.average_cosine >= anisotropic_cosine]
    return [*_invariance_findings(label, mine, theirs),
            _rogue_finding(label, cells, anisotropic, anisotropic_cosine=anisotropic_cosine, share_bound=share_bound,
                           n_dimensions=n_dimensions),
            _standardisation_finding(label, mine, theirs, anisotropic, anisotropic_cosine=anisotropic_cosine,
                                     standardised_bound=standardised_bound)]


# --------------------------------------------------------------------------- the claims over every cell


def _disagreement_findings(by_replicate: pd.DataFrame, *, agree_bound: float, n_resamples: int) -> list[Finding]:
    """Rudman et al. (2022)'s pairs, and the most opposed pair, judged over every cell."""
    array, cells = replicate_array(by_replicate)
    index = {name: i for i, name in enumerate(MEASURE_NAMES)}
    model = f"all {len(cells)} cells"
    if len(cells) < 3:
        return [not_comparable("The measures rank the cells differently", "disagree (Rudman et al. 2022)",
                               "fewer than 3 cells.", kind="test")]

    def tau_of(a: str, b: str):
        def statistic(sample: np.ndarray) -> float:
            with np.errstate(invalid="ignore"):
                return float(np.nanmean([kendall_matrix(sample[:, r])[0, 1] for r in range(sample.shape[1])]))
        return statistic, array[:, :, [index[a], index[b]]]

    control_statistic, control_sample = tau_of("average_cosine", "anisotropy_baseline")
    control_tau = control_statistic(control_sample)
    findings = []
    for a, b, headline in [("isoscore", "average_cosine", True), ("isoscore", "iw", False)]:
        statistic, sample = tau_of(a, b)
        verdict = bootstrap_threshold(sample, statistic, below=agree_bound, crossed=True, n_resamples=n_resamples)
        findings.append(declare(
            f"IsoScore and {MEASURE_BY_NAME[b].label} rank the cells differently",
            f"{MEASURE_BY_NAME[b].label} does not measure isotropy as IsoScore does (Rudman et al. 2022)", model,
            f"Kendall tau {verdict.value:.2f} {verdict.interval_text}; the control pair (average cosine and the "
            f"anisotropy baseline) {control_tau:.2f}",
            verdict,
            f"reproduced if Kendall's tau-b of the two (oriented to isotropy) over the cells is below {agree_bound}, with "
            "its 95% interval crossed over cells and token samples.",
            kind="test", control="two estimates of the same quantity (the average cosine and the anisotropy baseline), "
                                 "which must agree", threshold_ours=True, headline=headline,
            sampling_unit=CELLS_AND_SAMPLES))
    tau = mean_kendall(array)
    np.fill_diagonal(tau, np.nan)
    i, j = np.unravel_index(np.nanargmin(tau), tau.shape)
    a, b = MEASURE_NAMES[i], MEASURE_NAMES[j]
    statistic, sample = tau_of(a, b)
    verdict = bootstrap_threshold(sample, statistic, below=0.0, crossed=True, n_resamples=n_resamples)
    findings.append(declare(
        "Some pair of measures ranks the cells in opposite orders",
        "the measures disagree on which spaces are isotropic (Rudman et al. 2022)", model,
        f"most opposed: {MEASURE_BY_NAME[a].label} and {MEASURE_BY_NAME[b].label}, Kendall tau {verdict.value:.2f} "
        f"{verdict.interval_text}",
        verdict,
        "reproduced if the most opposed pair's Kendall tau-b (oriented to isotropy) is below 0 with its 95% interval "
        "crossed over cells and token samples (the pair is chosen on this run: its interval is optimistic).",
        kind="test", control="no disagreement (tau 0 or above for every pair)", sampling_unit=CELLS_AND_SAMPLES))
    return findings


# --------------------------------------------------------------------------- the checks


def _invariance_checks(by_replicate: pd.DataFrame, changed: pd.DataFrame) -> list[Finding]:
    """IsoScore and the average cosine unchanged where they are invariant by construction."""
    def largest_change(changes: tuple[str, ...], column: str) -> float:
        moved = [_changes_of(by_replicate, changed, change, column) for change in changes]
        return float(np.nanmax([(rows.after - rows.before).abs().max() for rows in moved]))

    worst_isoscore = largest_change(("centre", "scale", "rotate"), "isoscore")
    worst_cosine = largest_change(("scale", "unit_length", "rotate"), "average_cosine")
    return [declare("IsoScore is unchanged by centring, uniform scaling and rotation",
                    "invariant (Rudman et al. 2022)", "every cell", f"largest change {worst_isoscore:.1g}",
                    threshold(worst_isoscore, below=1e-6), "passed if no cell's IsoScore moves by 1e-6 or more.",
                    kind="check"),
            declare("The average cosine is unchanged by uniform scaling, unit length and rotation",
                    "invariant (a cosine ignores norms)", "every cell", f"largest change {worst_cosine:.1g}",
                    threshold(worst_cosine, below=1e-9), "passed if no cell's average cosine moves by 1e-9 or more.",
                    kind="check")]


def _whitening_checks(by_replicate: pd.DataFrame, changed: pd.DataFrame) -> list[Finding]:
    """Whitened samples: IsoScore of r equal variances, and I(W) undefined on them and only on them."""
    whitened = changed[changed.change == "whiten"]
    # Whitening gives every direction that has variance the same variance: r equal variances of d (r < d where
    # coordinates are constant, or with fewer points than dimensions), whose IsoScore is known. The effective rank of
    # r equal singular values is r.
    ranks = (whitened.effective_rank * whitened.dim).round().astype(int)
    expected = [isoscore_of_variances(np.r_[np.ones(rank), np.zeros(dim - rank)])
                for rank, dim in zip(ranks, whitened.dim)]
    worst = float(np.max(np.abs(whitened.isoscore.to_numpy() - expected))) if len(whitened) else np.nan
    samples = pd.concat([by_replicate.assign(change="none"), changed], ignore_index=True)
    undefined, is_whitened = samples.iw.isna(), samples.change == "whiten"
    return [declare("Whitening gives every direction with variance the same variance",
                    "IsoScore of r equal variances among d (1 when r = d)", "every cell",
                    f"largest difference from it {worst:.1g} over {len(whitened)} samples of "
                    f"{whitened.groupby(['space', 'layer']).ngroups} cells "
                    f"({int((ranks < whitened.dim).sum())} with fewer directions than dimensions)",
                    threshold(worst, below=1e-6), "passed if every whitened sample's IsoScore is within 1e-6 of "
                    "that of r equal variances, r its effective rank.", kind="check"),
            declare("I(W) is undefined on the whitened samples, and only there",
                    "its directions are not determined where eigenvalues coincide", "every cell",
                    f"undefined on {int((undefined & is_whitened).sum())} of {int(is_whitened.sum())} "
                    f"whitened samples and {int((undefined & ~is_whitened).sum())} of the "
                    f"{int((~is_whitened).sum())} others",
                    threshold(float((undefined != is_whitened).sum()), below=0.5),
                    "passed if I(W) is undefined (Spectrum.directions_determined) on every whitened "
                    "sample and on no other.", kind="check")]


def _bookkeeping_checks(by_replicate: pd.DataFrame, *, library_difference: float | None, n_points: int,
                        n_replicates: int) -> list[Finding]:
    """The shared decomposition against the library, and every cell measured in full."""
    findings = []
    if library_difference is not None:
        findings.append(declare("The shared decomposition gives what isolib.metrics gives",
                                "IsoScore, effective rank, top-PC share and log10 I(W) equal", "first cell",
                                f"largest difference {library_difference:.1g}",
                                threshold(library_difference, below=1e-6),
                                "passed if every difference is below 1e-6 (rounding in directions without "
                                "variance).", kind="check"))
    counts = by_replicate.groupby(["space", "layer"]).n_points.agg(["min", "count"])
    findings.append(declare("Every cell is measured on its full token sample in every replicate",
                            f"{n_points} tokens x {n_replicates} replicates", "every cell",
                            f"{len(counts)} cells, {int(counts['min'].min())}-{int(counts['min'].max())} tokens, "
                            f"{int(counts['count'].min())} replicates",
                            threshold(float(counts["count"].min() == n_replicates), above=0.5),
                            "passed if every cell has every replicate (fewer tokens only where the corpus sample "
                            "has fewer).", kind="check"))
    return findings


# --------------------------------------------------------------------------- the record


def assess_findings(by_replicate: pd.DataFrame, changed: pd.DataFrame, rogue: pd.DataFrame, *,
                    anisotropic_cosine: float = 0.1, share_bound: float = SHARE_BOUND,
                    standardised_bound: float = STANDARDISED_BOUND, agree_bound: float = AGREE_BOUND,
                    n_dimensions: int = TOP_COORDINATES, library_difference: float | None = None,
                    n_points: int = 0, n_replicates: int = 1, n_resamples: int = 2000) -> list[Finding]:
    """The literature's claims judged on this run's tables (module docstring), and the checks.

    Parameters
    ----------
    by_replicate, changed : pandas.DataFrame
        :func:`~isolib.studies.every_measure.compute.measure_spaces`' tables.
    rogue : pandas.DataFrame
        :func:`~isolib.studies.every_measure.tables.rogue_table`.
    anisotropic_cosine : float
        A layer is anisotropic when its average cosine is at least this (ours).
    share_bound, standardised_bound, agree_bound : float
        The thresholds (ours) of the rogue-coordinate share, of |average cosine| after
        standardisation, and of Kendall's tau below which two measures disagree.
    n_dimensions : int
        Rogue coordinates counted (as in :func:`~isolib.studies.every_measure.compute.rogue_shares`).
    library_difference : float or None
        :func:`~isolib.studies.every_measure.compute.library_agreement` of a sample (a check), if measured.
    n_points, n_replicates : int
        The sample sizes asked for (a check).
    n_resamples : int
        Bootstrap resamples of the agreement tests.

    Returns
    -------
    list of Finding
    """
    by_label = {label: _model_findings(label, by_replicate, changed, rogue, anisotropic_cosine=anisotropic_cosine,
                                       share_bound=share_bound, standardised_bound=standardised_bound,
                                       n_dimensions=n_dimensions)
                for label in pd.unique(by_replicate.space)}
    return [*judge_decoder_views(by_label),
            *_disagreement_findings(by_replicate, agree_bound=agree_bound, n_resamples=n_resamples),
            *_invariance_checks(by_replicate, changed), *_whitening_checks(by_replicate, changed),
            *_bookkeeping_checks(by_replicate, library_difference=library_difference, n_points=n_points,
                                 n_replicates=n_replicates)]


def findings(evidence: dict) -> list[Finding]:
    """:func:`assess_findings` of the stored evidence, with the run's parameters."""
    parameters = evidence["run"]["parameters"]
    return assess_findings(evidence["measures_by_replicate"], evidence["changed"],
                           rogue_table(evidence["rogue_shares"], evidence["rogue_resamples"]),
                           anisotropic_cosine=parameters["anisotropic_cosine"],
                           library_difference=evidence.get("library_agreement"), n_points=parameters["n_points"],
                           n_replicates=parameters["n_replicates"], n_resamples=parameters["n_resamples"])


def notes(run: dict, n_point_sets: int) -> list[str]:
    """The paragraphs under the page's title: the profile, the measures' and changes' settings, time and memory.

    Parameters
    ----------
    run : dict
        The evidence ``run``: ``parameters`` (the notebook's), ``wall_minutes``, ``measuring_minutes``,
        ``peak_gib``.
    n_point_sets : int
        The sets of points measured (samples and changed samples).
    """
    params = run["parameters"]
    return [
        f"Profile `{params['profile']}`: models {', '.join(params['models'])}; {params['corpus']} (train) in windows "
        f"of {params['window_length']} tokens, about {params['token_budget'] or 'all'} tokens per model (notebook 02's "
        f"windows and cache entries); {params['n_replicates']} samples of {params['n_points']:,} word tokens per cell; "
        f"static vectors: {params['static_baseline'] or 'none'}.",
        f"Measures: baselines on {params['baseline_samples']:,} tokens; LID k = {params['lid_k']} over "
        f"{params['lid_queries'] or 'all'} queries; k-means k = 2-{params['k_max']}, {params['n_init']} restart(s), "
        f"fitted on {params['kmeans_fit_size'] or 'all'} points, silhouette on {params['silhouette_sample'] or 'all'}. "
        f"Changes: ABTT {params['abtt_components']} directions; cluster-based k and directions "
        f"{params['cluster_encoder']} (encoders), {params['cluster_decoder']} (decoders); top "
        f"{', '.join(map(str, params['rogue_dimensions']))} coordinates removed; scaling x{params['scale']}; outlier at "
        f"{params['outlier_scale']} median distances; {params['small_n']} points.",
        "A decoder is judged in its start-token view; the papers' procedure (the model's name alone, the attention sink "
        f"kept) is shown beside it, not counted (views run: {', '.join(params['decoder_views']) or 'none'}). Layers: 0 "
        "is the input embedding layer.",
        f"Wall time of the notebook: {run['wall_minutes']:.1f} min, of which {run['measuring_minutes']:.1f} min "
        f"measuring {n_point_sets} point sets, {params['n_jobs'] if params['n_jobs'] > 0 else 'one per core'} at a time "
        "on one thread each (embeddings read from the cache when present); peak memory of the kernel: "
        f"{run['peak_gib']:.1f} GiB.",
    ]


def record(evidence: dict) -> Record:
    """The study's record, judged from its stored evidence (what ``python -m isolib judge 05_every_measure`` writes)."""
    by_replicate = evidence["measures_by_replicate"]
    return Record(TITLE, CITATION, models_line(list(dict.fromkeys(by_replicate.model))),
                  tuple(notes(evidence["run"], len(by_replicate) + len(evidence["changed"]))),
                  tuple(findings(evidence)))
