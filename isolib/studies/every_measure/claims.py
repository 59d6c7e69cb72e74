"""The literature's claims about the measures, judged on notebook 05's evidence, and the checks.

Tests, each with its control judged by the same rule on the same units (the positive status needs ours to
pass and the control to fail). Per model view (a decoder judged in its start-token view, the paper's
procedure beside it, :func:`isolib.findings.judge_decoder_views`), Timkey & van Schijndel (2021): a few
rogue coordinates carry most of the average cosine of the anisotropic layers (control: the same points
randomly rotated), and standardising each coordinate removes it (control: global centring alone). Over
the cells of the judged views, Rudman et al. (2022): IsoScore ranks the cells differently from the
average cosine and from I(W) (control: two estimates of the same mean cosine), and some pair of measures
ranks them in opposite orders; each judged again on unit vectors, where norms play no part.

Checks (never counted): what the measures' definitions fix -- IsoScore and the average cosine unchanged
where they are invariant, and moved where they are not (the average cosine by centring, I(W) by a
uniform scaling, IsoScore by unit length; Rudman et al.'s properties, true by construction) -- the
whitened samples, and the bookkeeping.

Everything here reads the evidence tables the notebook stores (:func:`record` takes them as
:func:`isolib.evidence.load_evidence` gives them back): ``measures_by_replicate`` and ``changed`` (every
measure per cell and token sample, and per change of each sample), ``rogue_shares`` and ``rogue_resamples``
(the rogue shares per cell, and per bootstrap resample of its windows), ``library_agreement`` (a
number) and ``run`` (the parameters and the run's time and memory). Every threshold is ours: neither
paper states one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import pandas as pd

from isolib.findings import (
    Finding,
    Record,
    Verdict,
    all_of,
    bootstrap_threshold,
    cost_note,
    declare,
    judge_decoder_views,
    mark_stand_ins,
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
from isolib.views import View

__all__ = ["SHARE_BOUND", "STANDARDISED_BOUND", "AGREE_BOUND", "assess_findings", "findings", "notes", "record"]

# The thresholds of the tests (ours): the share of the average cosine that "most" means, |average cosine|
# that standardisation must leave, and the Kendall tau below which two measures disagree.
SHARE_BOUND = 0.5
STANDARDISED_BOUND = 0.05
AGREE_BOUND = 0.5
# The checks' rounding: a measure invariant to a change moves by less (the average cosine, a mean of products of
# unit vectors, by far less); one that is not moves by more.
ROUNDING = 1e-6
COSINE_ROUNDING = 1e-9
# The changes that move a measure by its definition (Rudman et al. 2022's properties), shown by one check.
MOVED_BY = {"average_cosine": "centre", "log10_iw": "scale", "isoscore": "unit_length"}
WINDOWS = "windows of the weakest layer"
# The agreement tests' interval draws whole model views: with fewer, a resample repeats one or two of them.
MIN_MODELS = 3
MODEL_BLOCKS = "model views (the cells of one model resampled together) crossed with token samples"


# --------------------------------------------------------------------------- helpers


def _interval_verdict(value: float, low: float, high: float, *, above: float | None = None,
                      below: float | None = None) -> Verdict:
    """:func:`isolib.findings.threshold` on ``value`` with a bootstrap interval computed elsewhere."""
    verdict = threshold(value, above=above, below=below)
    if verdict.passed is None or not (np.isfinite(low) and np.isfinite(high)):
        return verdict
    ends = [threshold(end, above=above, below=below).passed for end in (low, high)]
    return dataclasses.replace(verdict, interval=(float(low), float(high)), borderline=ends[0] != ends[1],
                               degenerate=bool(high - low <= 1e-12 * max(1.0, abs(verdict.value))))


def _changes_of(by_replicate: pd.DataFrame, changed: pd.DataFrame, change: str, column: str) -> pd.DataFrame:
    """Per cell and replicate: ``before`` and ``after`` of one measure under one change, with the cell's space."""
    keys = ["space", "layer", "replicate"]
    before = by_replicate.set_index(keys)[column]
    after = changed[changed.change == change].set_index(keys)[column]
    joined = pd.DataFrame({"before": before, "after": after}).dropna()
    return joined.reset_index()


def _judged_spaces(spaces) -> list[str]:
    """The model views whose cells count: a decoder's start-token view where it was run, every other space as it is.

    The paper's procedure on a decoder (the attention sink kept) and any other view of it are shown
    beside its start-token view, never counted (:func:`isolib.findings.judge_decoder_views`); the claims
    over cells leave their cells out.
    """
    labels = list(dict.fromkeys(spaces))
    return [label for label in labels
            if View.parse(label).first_position == "start_token"
            or dataclasses.replace(View.parse(label), first_position="start_token").label not in labels]


def _selection_range(cosines: pd.Series, status_at: Callable[[float], object], chosen: float) -> tuple[float, float]:
    """The thresholds on the average cosine that pick the anisotropic layers and give the status ``chosen`` gives.

    ``status_at(t)`` is the status (any comparable value) with the layers whose average cosine is at
    least ``t``; the selection changes only at the layers' own cosines, so those are the thresholds tried.

    Returns
    -------
    (float, float)
        ``(low, high)``: every threshold above ``low`` (``-inf``: any lower one) and up to ``high`` gives
        the same status.
    """
    edges = np.unique(cosines.to_numpy())  # a threshold in (edges[i - 1], edges[i]] picks the layers from edges[i] up
    first = int(np.searchsorted(edges, chosen, side="left"))  # some layer is at least ``chosen``: the caller's case
    status = status_at(edges[first])
    low = first
    while low > 0 and status_at(edges[low - 1]) == status:
        low -= 1
    high = first
    while high + 1 < len(edges) and status_at(edges[high + 1]) == status:
        high += 1
    return (-np.inf if low == 0 else float(edges[low - 1])), float(edges[high])


def _selection_text(cells: pd.DataFrame, status_at: Callable[[float], object], chosen: float) -> str:
    """"9 of 13 layers with average cosine >= 0.1 (ours; the least 0.10; the same status for any from 0.08 to 0.31)"."""
    low, high = _selection_range(cells.average_cosine, status_at, chosen)
    picked = cells[cells.average_cosine >= chosen]
    span = f"up to {high:.2f}" if np.isinf(low) else f"above {low:.2f} and up to {high:.2f}"
    return (f"{len(picked)} of {len(cells)} layers with average cosine >= {chosen} (ours; the least "
            f"{picked.average_cosine.min():.2f}; the same status for any such threshold {span})")


# --------------------------------------------------------------------------- the claims about one model view


def _rogue_verdicts(layers: pd.DataFrame, share_bound: float) -> tuple[Verdict, Verdict]:
    """Ours (the weakest layer's share, with its interval over windows) and the rotated control, by one rule."""
    weakest = layers.loc[layers.top_share.idxmin()]
    ours = _interval_verdict(weakest.top_share, weakest.top_share_low, weakest.top_share_high, above=share_bound)
    return ours, threshold(layers.rotated_share, above=share_bound)


def _rogue_finding(label: str, cells: pd.DataFrame, *, anisotropic_cosine: float, share_bound: float,
                   n_dimensions: int) -> Finding:
    """Timkey & van Schijndel (2021): a few rogue coordinates carry most of the anisotropic layers' average cosine."""
    claim = f"{n_dimensions} rogue coordinates carry most of the average cosine in the anisotropic layers"
    paper = "1-3 dimensions dominate cosine similarity (Timkey & van Schijndel 2021)"
    anisotropic = cells[cells.average_cosine >= anisotropic_cosine]
    if anisotropic.empty:
        return not_comparable(claim, paper, f"no anisotropic layer: the average cosine is below "
                              f"{anisotropic_cosine} in every layer.", kind="test", model=label,
                              ours=f"average cosine at most {cells.average_cosine.max():.2f}")
    ours, control = _rogue_verdicts(anisotropic, share_bound)

    def status_at(chosen: float) -> tuple:
        picked = cells[cells.average_cosine >= chosen]
        return tuple(verdict.passed for verdict in _rogue_verdicts(picked, share_bound))

    weakest = anisotropic.loc[anisotropic.top_share.idxmin()]
    return declare(
        claim, paper, label,
        f"{_selection_text(cells, status_at, anisotropic_cosine)}; the top {n_dimensions} coordinates carry at least "
        f"{weakest.top_share:.0%} of it (L{int(weakest.layer)}) {ours.interval_text}; after a random rotation at most "
        f"{anisotropic.rotated_share.max():.0%}",
        ours,
        f"reproduced if, in every layer whose average cosine is at least {anisotropic_cosine}, the {n_dimensions} "
        f"coordinates contributing most to it carry more than {share_bound:.0%} of the average cosine (on unit "
        "vectors: no scale enters), with the 95% interval over the windows of the weakest layer (it assumes the "
        "windows independent), while the same points randomly rotated fail the same rule.",
        kind="test", control="the same points randomly rotated (every cosine kept, no privileged axis), judged by "
                             "the same rule", control_verdict=control,
        threshold_ours=True, headline=True, sampling_unit=WINDOWS if ours.interval else "")


def _standardisation_finding(label: str, mine: pd.DataFrame, theirs: pd.DataFrame, cells: pd.DataFrame, *,
                             anisotropic_cosine: float, standardised_bound: float) -> Finding:
    """Timkey & van Schijndel (2021): standardising each coordinate removes the anisotropic layers' average cosine."""
    claim = "Standardisation removes the average cosine of the anisotropic layers"
    paper = "standardising each dimension removes the rogue dimensions' effect (Timkey & van Schijndel 2021)"
    standardised = _changes_of(mine, theirs, "standardise", "average_cosine")
    centred = _changes_of(mine, theirs, "centre", "average_cosine")

    def verdicts(chosen: float) -> tuple[Verdict, Verdict]:
        layers = cells.layer[cells.average_cosine >= chosen]
        return tuple(threshold(changes.after[changes.layer.isin(layers)].abs(), below=standardised_bound)
                     for changes in (standardised, centred))

    ours, control = verdicts(anisotropic_cosine)
    if ours.passed is None:
        return not_comparable(claim, paper, f"no anisotropic layer: the average cosine is below "
                              f"{anisotropic_cosine} in every layer.", kind="test", model=label)
    before = standardised.before[standardised.layer.isin(cells.layer[cells.average_cosine >= anisotropic_cosine])]
    return declare(
        claim, paper, label,
        f"{_selection_text(cells, lambda chosen: tuple(v.passed for v in verdicts(chosen)), anisotropic_cosine)}; "
        f"|average cosine| after standardisation at most {ours.value:.3f} (before: at least {before.min():.2f}); "
        f"after global centring alone at most {control.value:.3f}",
        ours,
        f"reproduced if, in every layer whose average cosine is at least {anisotropic_cosine} and every token "
        f"sample, |average cosine| after standardising each coordinate is below {standardised_bound}, while after "
        "global centring alone (the same rule) it is not: the scaling of each coordinate, not the centring, removes "
        "it.",
        kind="test", control="global centring alone (no coordinate rescaled), judged by the same rule",
        control_verdict=control, threshold_ours=True, headline=True)


def _model_findings(label: str, by_replicate: pd.DataFrame, changed: pd.DataFrame, rogue: pd.DataFrame, *,
                    anisotropic_cosine: float, share_bound: float, standardised_bound: float,
                    n_dimensions: int) -> list[Finding]:
    """The claims judged on one model view's cells."""
    mine = by_replicate[by_replicate.space == label]
    theirs = changed[changed.space == label]
    cells = rogue[rogue.space == label]
    return [_rogue_finding(label, cells, anisotropic_cosine=anisotropic_cosine, share_bound=share_bound,
                           n_dimensions=n_dimensions),
            _standardisation_finding(label, mine, theirs, cells, anisotropic_cosine=anisotropic_cosine,
                                     standardised_bound=standardised_bound)]


# --------------------------------------------------------------------------- the claims over every cell


def _block_tau(by_replicate: pd.DataFrame, pair: tuple[str, str] | None, *, below: float,
               n_resamples: int) -> tuple[Verdict, tuple[str, str]]:
    """Kendall's tau-b of a pair of measures over the cells, with its interval resampling whole model views.

    The cells of one model are not independent draws (neighbouring layers are alike): a resample draws
    model views with replacement, each with all its cells, crossed with the token samples. ``pair`` None
    takes the most opposed pair of this table (chosen on it: its interval is optimistic).
    """
    array, cells = replicate_array(by_replicate)
    if pair is None:
        tau = mean_kendall(array)
        np.fill_diagonal(tau, np.nan)
        first, second = np.unravel_index(np.nanargmin(tau), tau.shape)
        pair = MEASURE_NAMES[first], MEASURE_NAMES[second]
    columns = [MEASURE_NAMES.index(name) for name in pair]
    spaces = list(dict.fromkeys(space for space, _ in cells))
    members = [np.flatnonzero([space == label for space, _ in cells]) for label in spaces]
    # Each unit carries its own (model view, token sample) indices, so that the statistic knows what was drawn.
    units = np.stack(np.meshgrid(np.arange(len(spaces)), np.arange(array.shape[1]), indexing="ij"), axis=-1)

    def statistic(sample: np.ndarray) -> float:
        rows = np.concatenate([members[block] for block in sample[:, 0, 0].astype(int)])
        values = array[rows][:, sample[0, :, 1].astype(int)][:, :, columns]
        with np.errstate(invalid="ignore"):
            taus = [kendall_matrix(values[:, replicate])[0, 1] for replicate in range(values.shape[1])]
        return float(np.nanmean(taus)) if not np.isnan(taus).all() else np.nan

    return bootstrap_threshold(units, statistic, below=below, crossed=True, n_resamples=n_resamples), pair


def _unit_vectors(changed: pd.DataFrame) -> pd.DataFrame:
    """Every measure of each cell and token sample with every vector scaled to unit length (no norm enters)."""
    return changed[changed.change == "unit_length"].drop(columns="change")


def _disagreement_findings(by_replicate: pd.DataFrame, changed: pd.DataFrame, *, agree_bound: float,
                           n_resamples: int) -> list[Finding]:
    """Rudman et al. (2022)'s pairs, and the most opposed pair, judged over the cells of the judged model views."""
    spaces = _judged_spaces(by_replicate.space)
    raw = by_replicate[by_replicate.space.isin(spaces)]
    unit = _unit_vectors(changed)
    unit = unit[unit.space.isin(spaces)]
    model = f"{raw.groupby(['space', 'layer']).ngroups} cells of {len(spaces)} models"
    if len(spaces) < MIN_MODELS:
        return [not_comparable("The measures rank the cells differently", "disagree (Rudman et al. 2022)",
                               f"fewer than {MIN_MODELS} model views: the interval resamples whole models.",
                               kind="test", model=model)]
    control, _ = _block_tau(raw, ("average_cosine", "anisotropy_baseline"), below=agree_bound, n_resamples=n_resamples)
    findings = []
    for other, headline in [("average_cosine", True), ("iw", False)]:
        pair = ("isoscore", other)
        verdict, _ = _block_tau(raw, pair, below=agree_bound, n_resamples=n_resamples)
        scale_free, _ = _block_tau(unit, pair, below=agree_bound, n_resamples=n_resamples)
        findings.append(declare(
            f"IsoScore and {MEASURE_BY_NAME[other].label} rank the cells differently",
            f"{MEASURE_BY_NAME[other].label} does not measure isotropy as IsoScore does (Rudman et al. 2022)", model,
            f"Kendall tau {verdict.value:.2f} {verdict.interval_text}; on unit vectors {scale_free.value:.2f} "
            f"{scale_free.interval_text}; the control pair (average cosine and the anisotropy baseline) "
            f"{control.value:.2f}",
            verdict,
            f"reproduced if Kendall's tau-b of the two (oriented to isotropy) over the cells is below {agree_bound}, "
            "with its 95% interval resampling whole model views crossed with token samples, while the control pair "
            "fails the same rule; judged again on unit vectors.",
            kind="test", control="two estimates of the same quantity (the average cosine and the anisotropy baseline), "
                                 "judged by the same rule", control_verdict=control, scale_free=scale_free,
            threshold_ours=True, headline=headline, sampling_unit=MODEL_BLOCKS))
    verdict, (first, second) = _block_tau(raw, None, below=0.0, n_resamples=n_resamples)
    scale_free, (unit_first, unit_second) = _block_tau(unit, None, below=0.0, n_resamples=n_resamples)
    findings.append(declare(
        "Some pair of measures ranks the cells in opposite orders",
        "the measures disagree on which spaces are isotropic (Rudman et al. 2022)", model,
        f"most opposed: {MEASURE_BY_NAME[first].label} and {MEASURE_BY_NAME[second].label}, Kendall tau "
        f"{verdict.value:.2f} {verdict.interval_text}; on unit vectors {MEASURE_BY_NAME[unit_first].label} and "
        f"{MEASURE_BY_NAME[unit_second].label}, {scale_free.value:.2f} {scale_free.interval_text}",
        verdict,
        "reproduced if the most opposed pair's Kendall tau-b (oriented to isotropy) is below 0, with its 95% interval "
        "resampling whole model views crossed with token samples (the pair is chosen on this run: its interval is "
        "optimistic); judged again on unit vectors.",
        kind="test", control="none can be computed: no pair of measures is known to oppose, so the bound 0 is the "
                             "rule", scale_free=scale_free, sampling_unit=MODEL_BLOCKS))
    return findings


# --------------------------------------------------------------------------- the checks


def _per_layer_change(by_replicate: pd.DataFrame, changed: pd.DataFrame, change: str, column: str) -> pd.DataFrame:
    """|after - before| of one measure under one change, per cell: the mean over its token samples."""
    rows = _changes_of(by_replicate, changed, change, column)
    return (rows.after - rows.before).groupby([rows.space, rows.layer], sort=False).mean().abs().rename(
        "change").reset_index()


def _invariance_checks(by_replicate: pd.DataFrame, changed: pd.DataFrame) -> list[Finding]:
    """IsoScore and the average cosine unchanged where invariant by construction, and moved where they are not."""
    def largest_change(changes: tuple[str, ...], column: str) -> float:
        moved = [_changes_of(by_replicate, changed, change, column) for change in changes]
        return float(np.nanmax([(rows.after - rows.before).abs().max() for rows in moved]))

    worst_isoscore = largest_change(("centre", "scale", "rotate"), "isoscore")
    worst_cosine = largest_change(("scale", "unit_length", "rotate"), "average_cosine")
    medians = {column: _per_layer_change(by_replicate, changed, change, column).groupby("space").change.median()
               for column, change in MOVED_BY.items()}
    least = min(float(values.min()) for values in medians.values())
    moved = "; ".join(f"{label} {values.min():.3g} to {values.max():.3g}" for label, values in zip(
        ("the average cosine under centring", "log10 I(W) under uniform scaling", "IsoScore under unit length"),
        medians.values()))
    return [declare("IsoScore and the average cosine are unchanged where they are invariant",
                    "IsoScore: centring, uniform scaling, rotation (Rudman et al. 2022); the average cosine: "
                    "uniform scaling, unit length, rotation", "every cell",
                    f"largest change: IsoScore {worst_isoscore:.1g}, average cosine {worst_cosine:.1g}",
                    all_of(threshold(worst_isoscore, below=ROUNDING), threshold(worst_cosine, below=COSINE_ROUNDING)),
                    f"passed if no cell's IsoScore moves by {ROUNDING:g} or more, nor its average cosine by "
                    f"{COSINE_ROUNDING:g}.", kind="check"),
            declare("The average cosine, I(W) and IsoScore move under what they are not invariant to",
                    "the average cosine under centring, I(W) under uniform scaling, IsoScore under unit length "
                    "(Rudman et al. 2022)", "every model view",
                    f"median |change| over a model's layers, least to most over models: {moved}",
                    threshold(least, above=ROUNDING),
                    f"passed if each moves by more than {ROUNDING:g} in the median layer of every model view (the size "
                    "is shown, not judged: the space's mean, scale and spread of norms set it).", kind="check")]


def _whitening_check(by_replicate: pd.DataFrame, changed: pd.DataFrame) -> Finding:
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
    return declare("Whitening gives every direction with variance the same variance, where I(W) is undefined",
                   "IsoScore of r equal variances among d (1 when r = d); I(W)'s directions not determined where "
                   "eigenvalues coincide, and only there", "every cell",
                   f"largest difference from it {worst:.1g} over {len(whitened)} samples of "
                   f"{whitened.groupby(['space', 'layer']).ngroups} cells "
                   f"({int((ranks < whitened.dim).sum())} with fewer directions than dimensions); I(W) undefined on "
                   f"{int((undefined & is_whitened).sum())} of {int(is_whitened.sum())} whitened samples and "
                   f"{int((undefined & ~is_whitened).sum())} of the {int((~is_whitened).sum())} others",
                   all_of(threshold(worst, below=ROUNDING), threshold(float((undefined != is_whitened).sum()), below=0.5)),
                   f"passed if every whitened sample's IsoScore is within {ROUNDING:g} of that of r equal variances, r "
                   "its effective rank, and I(W) is undefined (Spectrum.directions_determined) on every whitened sample "
                   "and on no other.", kind="check")


def _bookkeeping_check(by_replicate: pd.DataFrame, *, library_difference: float | None, n_points: int,
                       n_replicates: int) -> Finding:
    """Every cell measured in full, and the shared decomposition against the library."""
    counts = by_replicate.groupby(["space", "layer"]).n_points.agg(["min", "count"])
    verdicts = [threshold(float(counts["count"].min() == n_replicates), above=0.5)]
    ours = (f"{len(counts)} cells, {int(counts['min'].min())}-{int(counts['min'].max())} tokens, "
            f"{int(counts['count'].min())} replicates")
    if library_difference is not None:
        verdicts.append(threshold(library_difference, below=ROUNDING))
        ours += f"; largest difference from isolib.metrics {library_difference:.1g} (first cell)"
    return declare("Every cell is measured on its full token sample in every replicate, as isolib.metrics measures it",
                   f"{n_points} tokens x {n_replicates} replicates; IsoScore, effective rank, top-PC share and "
                   "log10 I(W) equal to isolib.metrics'", "every cell", ours, all_of(*verdicts),
                   "passed if every cell has every replicate (fewer tokens only where the corpus sample has fewer) "
                   f"and the shared decomposition differs from isolib.metrics by less than {ROUNDING:g} (rounding in "
                   "directions without variance).", kind="check")


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
            *_disagreement_findings(by_replicate, changed, agree_bound=agree_bound, n_resamples=n_resamples),
            *_invariance_checks(by_replicate, changed), _whitening_check(by_replicate, changed),
            _bookkeeping_check(by_replicate, library_difference=library_difference, n_points=n_points,
                               n_replicates=n_replicates)]


def findings(evidence: dict) -> list[Finding]:
    """:func:`assess_findings` of the stored evidence, with the run's parameters."""
    parameters = evidence["run"]["parameters"]
    return assess_findings(evidence["measures_by_replicate"], evidence["changed"],
                           rogue_table(evidence["rogue_shares"], evidence["rogue_resamples"]),
                           anisotropic_cosine=parameters["anisotropic_cosine"],
                           library_difference=evidence.get("library_agreement"), n_points=parameters["n_points"],
                           n_replicates=parameters["n_replicates"], n_resamples=parameters["n_resamples"])


def _most_anisotropic_layers(by_replicate: pd.DataFrame) -> str:
    """"minilm 0.22 (L5), mpnet 0.44 (L11)": each judged contextual view's highest average cosine of a non-input layer."""
    judged = by_replicate[by_replicate.space.isin(_judged_spaces(by_replicate.space)) & (by_replicate.view != "static")
                          & (by_replicate.layer > 0)]
    per_layer = judged.groupby(["space", "layer"], sort=False).average_cosine.mean().reset_index()
    highest = per_layer.loc[per_layer.groupby("space", sort=False).average_cosine.idxmax()]
    return ", ".join(f"{row.space} {row.average_cosine:.2f} (L{row.layer})" for row in highest.itertuples())


def notes(run: dict, by_replicate: pd.DataFrame, n_point_sets: int) -> list[str]:
    """The paragraphs under the page's title: the profile, the settings, the stand-ins, the intervals, time and memory.

    Parameters
    ----------
    run : dict
        The evidence ``run``: ``parameters`` (the notebook's), ``wall_minutes``, ``measuring_minutes``,
        ``peak_gib``.
    by_replicate : pandas.DataFrame
        The evidence ``measures_by_replicate`` (the last layers' average cosine is quoted).
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
        "Layers: 0 is the input embedding layer.",
        "Every model here stands in for the papers' (Timkey & van Schijndel's BERT, RoBERTa, XLNet and GPT-2; Rudman et "
        "al.'s pretrained BERT- and GPT-family models): a status says what these models do. The contextual models read "
        f"windows of {params['window_length']} tokens of running text, far longer than the sentences the sentence "
        "encoders among them were trained on, and their geometry differs from that on sentences: highest average "
        f"cosine of a non-input layer here {_most_anisotropic_layers(by_replicate)}; notebook 01 reads the same "
        "encoders on STS sentences (its per-layer baseline cosine).",
        "Intervals: the rogue share's resamples the windows of the weakest layer (the tokens of one window are not "
        "independent draws; the windows are taken to be); the agreement tests' resample whole model views, each with "
        "all its cells (the layers of one model are not independent draws), crossed with the token samples: with few "
        "models they are wide. The standardisation test takes the worst layer and token sample, without an interval.",
        cost_note(run["wall_minutes"], run["peak_gib"], "embeddings",
                  f", of which {run['measuring_minutes']:.1f} min measuring {n_point_sets} point sets, "
                  f"{params['n_jobs'] if params['n_jobs'] > 0 else 'one per core'} at a time on one thread each"),
    ]


def _on_stand_ins(findings: list[Finding], spaces) -> list[Finding]:
    """The findings with their stand-ins: a test over the cells of several ``spaces`` stands on every stand-in among them.

    A finding on one space has its stand-in already (:func:`isolib.findings.declare`); a test whose model is
    no one space pools the cells of the judged views.
    """
    spaces = set(spaces)
    every = ", ".join(dict.fromkeys(finding.stand_in for finding in findings
                                    if finding.stand_in and finding.model in spaces))
    return mark_stand_ins(findings, lambda finding: every if finding.kind == "test" and finding.model not in spaces
                          else finding.stand_in)


def record(evidence: dict) -> Record:
    """The study's record, judged from its stored evidence (what ``python -m isolib judge 05_every_measure`` writes)."""
    by_replicate = evidence["measures_by_replicate"]
    return Record(TITLE, CITATION, models_line(list(dict.fromkeys(by_replicate.model))),
                  tuple(notes(evidence["run"], by_replicate, len(by_replicate) + len(evidence["changed"]))),
                  tuple(_on_stand_ins(findings(evidence), by_replicate.space)))
