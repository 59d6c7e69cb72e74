"""The papers' findings beside ours: one record, a few rule shapes, one ``RESULTS.md`` writer.

A study module *declares* its findings; this module decides and writes them, the same way for
every study, so that every ``RESULTS.md`` reads alike:

* a **rule** (:func:`trend`, :func:`threshold`, :func:`within`, :func:`sign`, combined with
  :func:`all_of`) turns this run's numbers into a :class:`Verdict`: passed, failed, or not
  comparable (no model, NaN, too few layers), with the value it judged and its margin;
  :func:`bootstrap_threshold` does the same for a statistic of a sample (layers, words,
  benchmarks) and adds a bootstrap interval: a verdict whose interval crosses the threshold
  is *borderline*;
* :func:`declare` pairs a verdict with the claim, the paper's value, our value as text and the
  rule as a sentence, giving a :class:`Finding` with one of :data:`STATUSES`;
* :func:`compare_reference` sets a paper's per-layer reference numbers beside the same layer of
  the paper's own model, or beside the layer at the same relative depth of a stand-in model;
* :func:`write_results` writes ``RESULTS.md``; :func:`read_results` reads one back, and
  :func:`write_overview` writes ``figures/README.md`` (what reproduces, study by study) from
  the committed ``RESULTS.md`` files; the runner calls it after every ``full`` run.

Statuses
--------
reproduced
    This run meets the rule stated on the finding's line.
borderline
    The value meets or fails the rule, but its bootstrap interval (over the sample it comes
    from) crosses the rule's threshold: another sample could decide the other way.
not reproduced
    This run is comparable and fails the rule.
not comparable
    The rule cannot be applied: the paper's model is not run (or only a stand-in for a
    reference number), a value is NaN, or there are too few layers for a trend.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from isolib.plotting import markdown_table

__all__ = [
    "STATUSES",
    "STATUS_MEANINGS",
    "Verdict",
    "trend",
    "spearman",
    "threshold",
    "within",
    "sign",
    "all_of",
    "bootstrap_threshold",
    "Finding",
    "declare",
    "not_comparable",
    "findings_table",
    "verdicts",
    "PaperModel",
    "paper_counterpart",
    "models_line",
    "compare_reference",
    "write_results",
    "StudyResults",
    "read_results",
    "overview_text",
    "write_overview",
]

STATUSES = ("reproduced", "borderline", "not reproduced", "not comparable")
STATUS_MEANINGS = {
    "reproduced": "this run meets the rule stated on the line",
    "borderline": "the 95% bootstrap interval of the judged value (over the sample it comes from: layers, "
                  "words, benchmarks) crosses the rule's threshold, so the verdict could go either way",
    "not reproduced": "this run is comparable and fails the rule",
    "not comparable": "the rule cannot be applied here (the paper's model is not run, or only a stand-in "
                      "for a reference number; a value is NaN; too few layers for a trend)",
}


# --------------------------------------------------------------------------- rules


@dataclass(frozen=True)
class Verdict:
    """A rule applied to this run's numbers.

    Attributes
    ----------
    passed : bool or None
        None when the rule cannot be applied (the finding is then "not comparable").
    value : float
        The number the rule judged (a correlation, a minimum, a difference ...); NaN if none.
    margin : float
        Signed distance of ``value`` from the rule's threshold, positive on the passing side
        (NaN when not comparable). A small margin is a thin verdict.
    interval : (float, float) or None
        Bootstrap interval of ``value`` (:func:`bootstrap_threshold`); None for a rule on a
        number that does not come from a sample.
    borderline : bool
        The interval crosses the threshold: the verdict could go either way.
    """

    passed: bool | None
    value: float
    margin: float
    interval: tuple | None = None
    borderline: bool = False

    @classmethod
    def undecided(cls, value: float = np.nan) -> Verdict:
        """A verdict the rule cannot reach (the finding is "not comparable")."""
        return cls(None, float(value), np.nan)

    @property
    def interval_text(self) -> str:
        """``[95% CI low-high]`` for a bootstrapped verdict, "" otherwise (for the "this run" text)."""
        return "" if self.interval is None else f"[95% CI {self.interval[0]:.2f}-{self.interval[1]:.2f}]"


def spearman(x, y) -> float:
    """Spearman's rho of ``y`` against ``x``; NaN with fewer than 3 points or a constant ``y``.

    Parameters
    ----------
    x, y : array_like of shape (n_points,)
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) < 3 or np.isnan(y).any() or np.ptp(y) == 0:
        return np.nan
    return float(stats.spearmanr(x, y).statistic)


def trend(values: pd.Series, *, rising: bool, min_rho: float = 0.5) -> Verdict:
    """A trend over layers: Spearman's rho of ``values`` against their layer beyond ``min_rho``.

    Parameters
    ----------
    values : pandas.Series of shape (n_layers,)
        Indexed by layer.
    rising : bool
        True: passes if rho > ``min_rho``; False: passes if rho < ``-min_rho``.
    min_rho : float

    Returns
    -------
    Verdict
        ``value`` is rho; not comparable with fewer than 3 layers, a NaN or constant values.
    """
    rho = spearman(values.index, values.to_numpy())
    if np.isnan(rho):
        return Verdict.undecided()
    margin = rho - min_rho if rising else -min_rho - rho
    return Verdict(bool(margin > 0), rho, float(margin))


def threshold(values, *, above: float | None = None, below: float | None = None,
              inclusive: bool = False) -> Verdict:
    """A threshold in every layer (or for one number): every value above and/or below a bound.

    Parameters
    ----------
    values : float or array_like of shape (n_values,)
    above, below : float or None
        Lower and upper bounds (at least one).
    inclusive : bool
        Whether a value equal to a bound passes.

    Returns
    -------
    Verdict
        ``value`` is the value nearest to failing (the minimum for ``above`` only, the maximum for
        ``below`` only, the one closest to a bound for both); ``margin`` its distance to that
        bound. Not comparable if there is no value or any value is NaN.
    """
    if above is None and below is None:
        raise ValueError("threshold needs a bound: above, below or both.")
    array = np.atleast_1d(np.asarray(values, dtype=float))
    if array.size == 0 or np.isnan(array).any():
        return Verdict.undecided()
    margins = np.full(array.shape, np.inf)
    if above is not None:
        margins = np.minimum(margins, array - above)
    if below is not None:
        margins = np.minimum(margins, below - array)
    worst = int(np.argmin(margins))
    margin = float(margins[worst])
    return Verdict(bool(margin >= 0 if inclusive else margin > 0), float(array[worst]), margin)


def within(values, paper, tolerance: float) -> Verdict:
    """A value within ``tolerance`` of the paper's: every value in ``[low - tol, high + tol]``.

    Parameters
    ----------
    values : float or array_like of shape (n_values,)
        Ours (several values, e.g. layers, must all be within).
    paper : float or (float, float)
        The paper's value, or the range it gives.
    tolerance : float
    """
    low, high = paper if isinstance(paper, tuple) else (paper, paper)
    return threshold(values, above=low - tolerance, below=high + tolerance, inclusive=True)


def sign(value: float, *, positive: bool = True) -> Verdict:
    """A sign: ``value`` > 0 (or < 0 with ``positive=False``); not comparable if NaN."""
    return threshold(value, above=0.0) if positive else threshold(value, below=0.0)


def all_of(*verdicts: Verdict) -> Verdict:
    """All rules at once: passes if every one passes; not comparable if any is; the smallest margin.

    Borderline if it passes and a borderline rule could make it fail, or if it fails only on
    borderline rules.
    """
    if any(verdict.passed is None for verdict in verdicts):
        return Verdict.undecided()
    weakest = min(verdicts, key=lambda verdict: verdict.margin)
    passed = all(verdict.passed for verdict in verdicts)
    failing = [verdict for verdict in verdicts if not verdict.passed]
    borderline = (any(verdict.borderline for verdict in verdicts) if passed
                  else all(verdict.borderline for verdict in failing))
    return Verdict(passed, weakest.value, weakest.margin, weakest.interval, borderline)


def bootstrap_threshold(samples, statistic: Callable, *, above: float | None = None, below: float | None = None,
                        inclusive: bool = False, n_resamples: int = 2000, level: float = 0.95,
                        random_state: int = 0) -> Verdict:
    """:func:`threshold` on ``statistic(samples)``, with a percentile bootstrap interval over the samples.

    The samples (rows) are drawn with replacement ``n_resamples`` times; the verdict is
    borderline when the ``level`` interval of the statistic crosses a bound (one end passes,
    the other fails), whichever way the full sample decides.

    Parameters
    ----------
    samples : array_like of shape (n_samples,) or (n_samples, n_columns), or pandas.DataFrame
        The units the value comes from (layers, words, benchmarks ...), one per row.
    statistic : callable
        Maps a resample (same type as ``samples``) to a float (e.g. ``np.median``).
    above, below, inclusive
        As in :func:`threshold`.
    n_resamples : int
    level : float
        Coverage of the interval.
    random_state : int
        Seed of the resampling.

    Returns
    -------
    Verdict
        Not comparable with fewer than 2 samples or a NaN statistic.
    """
    table = samples if isinstance(samples, pd.DataFrame) else None
    array = None if table is not None else np.asarray(samples, dtype=float)
    n = len(table) if table is not None else len(array)
    if n < 2:
        return Verdict.undecided()

    def take(rows):
        return table.iloc[rows] if table is not None else array[rows]

    verdict = threshold(statistic(take(np.arange(n))), above=above, below=below, inclusive=inclusive)
    if verdict.passed is None:
        return verdict
    generator = np.random.default_rng(random_state)
    replicates = np.array([statistic(take(generator.integers(0, n, n))) for _ in range(n_resamples)], dtype=float)
    low, high = np.nanquantile(replicates, [(1 - level) / 2, (1 + level) / 2])
    ends = [threshold(end, above=above, below=below, inclusive=inclusive).passed for end in (low, high)]
    return Verdict(verdict.passed, verdict.value, verdict.margin, (float(low), float(high)), ends[0] != ends[1])


# --------------------------------------------------------------------------- findings


@dataclass(frozen=True)
class Finding:
    """One line of ``RESULTS.md``: a finding or number of the paper beside this run's.

    Attributes
    ----------
    finding : str
        The paper's claim or measure.
    paper : str
        What the paper reports.
    model : str
        The model of this run it is compared with ("-" if none).
    ours : str
        What this run finds.
    status : {"reproduced", "borderline", "not reproduced", "not comparable"}
    rule : str
        How the status was decided.
    headline : bool
        One of the study's most important findings (listed first, and in ``figures/README.md``).
    """

    finding: str
    paper: str
    model: str
    ours: str
    status: str
    rule: str
    headline: bool = False

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}.")


def _status(verdict: Verdict) -> str:
    if verdict.passed is None:
        return "not comparable"
    if verdict.borderline:
        return "borderline"
    return "reproduced" if verdict.passed else "not reproduced"


def declare(finding: str, paper: str, model: str, ours: str, verdict: Verdict, rule: str, *,
            headline: bool = False) -> Finding:
    """A finding of the paper, judged: the claim, the paper's value, our value, the rule and its verdict.

    Parameters
    ----------
    finding : str
        The claim (the same text for every model it is tested on).
    paper : str
        What the paper reports.
    model : str
        The model of this run.
    ours : str
        What this run finds, as text (usually ``verdict.value`` formatted, with context).
    verdict : Verdict
        The rule applied to this run's numbers (:func:`trend`, :func:`threshold` ...).
    rule : str
        The rule as a sentence ("reproduced if ...").
    headline : bool
        One of the study's most important findings.
    """
    return Finding(finding, paper, model, ours, _status(verdict), rule, headline)


def not_comparable(finding: str, paper: str, reason: str, *, model: str = "-", ours: str = "-",
                   headline: bool = False) -> Finding:
    """A finding this run cannot judge, with the reason as its rule (e.g. "ELMo is not run.")."""
    return Finding(finding, paper, model, ours, "not comparable", reason, headline)


# --------------------------------------------------------------------------- per-layer reference numbers


@dataclass(frozen=True)
class PaperModel:
    """A model the paper reports numbers for.

    Attributes
    ----------
    name : str
        Its Hugging Face Hub id (or a plain name for models outside transformers, e.g. ``elmo``).
    label : str
        As the paper names it (``BERT``).
    n_layers : int
        Hidden states including the input layer (13 for a 12-block model), in our indexing:
        layer 0 is the input embedding layer.
    """

    name: str
    label: str
    n_layers: int


def paper_counterpart(model: str, paper_names, stand_ins: dict[str, str]) -> str | None:
    """The paper model that ``model`` (or a view of it, e.g. ``smollm2 (position 0 dropped)``) is compared with.

    Itself when it is one of ``paper_names`` (the paper ran it), else its entry in ``stand_ins``
    (an offline model standing in for a paper model), else None.
    """
    from isolib.embed import split_view  # lazy: isolib.embed loads torch

    name = split_view(model)[0]
    return name if name in paper_names else stand_ins.get(name)


def models_line(models: Sequence[str], paper_models: Sequence[PaperModel],
                counterpart: Callable[[str], str | None]) -> str:
    """Each model run, with the paper model it stands in for: ``minilm (for BERT), gpt2`` (``RESULTS.md``)."""
    labels = {paper.name: paper.label for paper in paper_models}
    return ", ".join(name if counterpart(name) in (name, None) else f"{name} (for {labels[counterpart(name)]})"
                     for name in models)


def compare_reference(per_layer: pd.DataFrame, reference: dict, paper_models: Sequence[PaperModel],
                      counterpart: Callable[[str], str | None], measure_names: dict[str, str], *,
                      tolerance: float) -> list[Finding]:
    """A paper's per-layer numbers beside ours: same layer on its own model, same relative depth on a stand-in.

    A number is judged (:func:`within` ``tolerance``) only on the paper's own model; on a model
    that stands in for it, the stored layers at the same relative depth (layer / last layer) are
    shown as "not comparable"; with no such model run, one "not comparable" row says so.

    Parameters
    ----------
    per_layer : pandas.DataFrame
        One row per (model, layer): ``model``, ``layer``, ``n_layers`` (hidden states of the model)
        and one column per measure.
    reference : dict
        ``{paper model name: {measure: {layer or (low, high): value or (low, high)}}}``, layers in
        our indexing; a value given over several layers is keyed by ``(low, high)``.
    paper_models : sequence of PaperModel
        Every paper model named in ``reference``.
    counterpart : callable
        Maps one of our model names to the paper model it is compared with (itself, the model it
        stands in for, or None).
    measure_names : dict of str to str
        How each measure reads in the finding's text.
    tolerance : float
        Largest absolute difference that counts as reproduced.

    Returns
    -------
    list of Finding
    """
    findings = []
    models = list(pd.unique(per_layer.model))
    for paper_model in paper_models:
        paper_last = paper_model.n_layers - 1
        compared = [model for model in models if counterpart(model) == paper_model.name]
        for measure, values in reference.get(paper_model.name, {}).items():
            for layers, paper_value in values.items():
                low, high = layers if isinstance(layers, tuple) else (layers, layers)
                expected = (f"{paper_value[0]:.2f}-{paper_value[1]:.2f}" if isinstance(paper_value, tuple)
                            else f"{paper_value:.3f}")
                label = f"L{low}" if low == high else f"L{low}-{high}"
                claim = f"{measure_names[measure]}, {paper_model.label} {label}"
                if not compared:
                    findings.append(not_comparable(claim, expected, f"{paper_model.label} is not run in this profile."))
                for model in compared:
                    table = per_layer[per_layer.model == model].set_index("layer")
                    last = int(table.n_layers.iloc[0]) - 1
                    if model == paper_model.name:
                        chosen = table.loc[low:high]
                    else:  # the stored layers at the same relative depth
                        depth = table.index.to_numpy() / last
                        near = [table.index[np.argmin(np.abs(depth - layer / paper_last))] for layer in (low, high)]
                        chosen = table.loc[near[0]:near[1]]
                    ours_values = chosen[measure]
                    where = f"L{chosen.index[0]}" if len(chosen) == 1 else f"L{chosen.index[0]}-{chosen.index[-1]}"
                    ours = (f"{ours_values.iloc[0]:.3f} ({where})" if len(chosen) == 1
                            else f"{ours_values.min():.2f}-{ours_values.max():.2f} ({where})")
                    if model != paper_model.name:
                        findings.append(not_comparable(
                            claim, expected, f"{model} stands in for {paper_model.label}; shown at the same relative depth.",
                            model=model, ours=ours))
                        continue
                    verdict = within(ours_values.to_numpy(), paper_value, tolerance) if len(chosen) else Verdict.undecided()
                    findings.append(declare(claim, expected, model, ours, verdict,
                                            f"reproduced if within {tolerance} of the paper's value."))
    return findings


# --------------------------------------------------------------------------- RESULTS.md


_HEADLINE_HEADING = "## Headline findings"
_TABLE_HEADING = "## Findings and reference numbers"
_COLUMNS = ["finding", "paper", "model", "this run", "status", "rule"]


def findings_table(findings: Sequence[Finding]) -> pd.DataFrame:
    """The findings as a table, one row each: ``finding``, ``paper``, ``model``, ``this run``, ``status``, ``rule``."""
    table = pd.DataFrame([vars(finding) for finding in findings], columns=[field.name for field in fields(Finding)])
    return table.drop(columns="headline").set_axis(_COLUMNS, axis=1)


def verdicts(findings: Sequence[Finding], claims: Sequence[str] | None = None, *, values: bool = True) -> str:
    """"This run:" sentences for the findings a figure shows: per claim, the paper's value and each model's verdict.

    Parameters
    ----------
    findings : sequence of Finding
    claims : sequence of str, optional
        Keep the findings whose claim starts with one of these (all when None).
    values : bool
        Give this run's value after each verdict. False leaves it out: for a line that nbval checks when
        the value moves between machines more than its printed digits (the verdict does not).

    Returns
    -------
    str
        One line per claim, e.g. ``This run: The silhouette rises (paper: rises in every setup):
        reproduced on (i) polarity (0.05 -> 0.41); not reproduced on ...``; the rule that decided it
        is on the claim's line of ``RESULTS.md``.
    """
    chosen = [f for f in findings if claims is None or any(f.finding.startswith(claim) for claim in claims)]
    if not chosen:
        raise ValueError(f"No finding's claim starts with any of {list(claims or [])}.")
    grouped: dict[tuple[str, str], list[Finding]] = {}
    for finding in chosen:
        grouped.setdefault((finding.finding, finding.paper), []).append(finding)
    lines = []
    for (claim, paper), rows in grouped.items():
        judged = "; ".join(f.status + (f" on {f.model}" if f.model != "-" else "") + (f" ({f.ours})" if values and f.ours != "-" else "")
                           + _reason(f) for f in rows)
        lines.append(f"This run: {claim} (paper: {paper}): {judged}.")
    return "\n".join(lines)


def _reason(finding: Finding) -> str:
    """" because ..." for a finding that is not comparable for a stated reason (not for a rule that could not apply)."""
    rule = finding.rule.rstrip(".")
    if finding.status != "not comparable" or rule.lower().startswith("reproduced if"):
        return ""
    # "Not run ..." reads "because not run ...", but a name such as "GPT-2 ..." keeps its capitals.
    return " because " + (rule[0].lower() + rule[1:] if rule[1:2].islower() else rule)


def _headline_lines(findings: Sequence[Finding]) -> list[str]:
    """One bullet per headline claim: its status on every model it was tested on."""
    claims: dict[str, list[Finding]] = {}
    for finding in findings:
        if finding.headline:
            claims.setdefault(finding.finding, []).append(finding)
    return [f"- {claim}: " + "; ".join(f"{f.model} {f.status}" for f in rows) for claim, rows in claims.items()]


def write_results(findings: Sequence[Finding], path: str | Path, *, title: str, citation: str, models: str,
                  notes: Sequence[str] = ()) -> Path:
    """Write ``RESULTS.md``: what was run, the headline findings, every finding, the count per status.

    Parameters
    ----------
    findings : sequence of Finding
    path : str or Path
        The file to write (its folder is created).
    title : str
        First heading.
    citation : str
        The study's reference (authors, year, title, venue).
    models : str
        The models run and which paper model each stands in for.
    notes : sequence of str
        Paragraphs written under the title (the profile, wall time, memory ...).

    Returns
    -------
    Path
    """
    if not findings:
        raise ValueError("there are no findings to write.")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    table = findings_table(findings)
    counts = table.status.value_counts().reindex(list(STATUSES), fill_value=0)
    lines = [f"# {title}", "", f"**Study:** {citation}", "", f"**Models:** {models}", "",
             *[line for note in notes for line in (note, "")],
             _HEADLINE_HEADING, "", *_headline_lines(findings), "",
             _TABLE_HEADING, "", markdown_table(table), "",
             "**Summary:** " + ", ".join(f"{count} {status}" for status, count in counts.items()) + ".", "",
             "**Statuses:** " + "; ".join(f"*{status}*: {meaning}" for status, meaning in STATUS_MEANINGS.items())
             + ".", ""]
    path.write_text("\n".join(lines))
    return path


@dataclass(frozen=True)
class StudyResults:
    """A ``RESULTS.md`` read back by :func:`read_results`.

    Attributes
    ----------
    title, citation, models : str
    headlines : list of str
        The headline bullets, without the leading ``- ``.
    statuses : pandas.Series
        The status of every finding, in table order.
    """

    title: str
    citation: str
    models: str
    headlines: list
    statuses: pd.Series

    @property
    def counts(self) -> pd.Series:
        """Findings per status, in :data:`STATUSES` order."""
        return self.statuses.value_counts().reindex(list(STATUSES), fill_value=0)


def _field(text: str, name: str, path: Path) -> str:
    match = re.search(rf"^\*\*{name}:\*\* (.+)$", text, re.M)
    if not match:
        raise ValueError(f"{path} has no '**{name}:**' line; regenerate it with isolib.findings.write_results.")
    return match.group(1)


def read_results(path: str | Path) -> StudyResults:
    """Read a ``RESULTS.md`` written by :func:`write_results`.

    Raises
    ------
    ValueError
        If the file lacks one of the parts :func:`write_results` writes.
    """
    path = Path(path)
    text = path.read_text()
    title = text.splitlines()[0].removeprefix("# ")
    sections = re.split(r"^## ", text, flags=re.M)
    headline = [s for s in sections if s.startswith(_HEADLINE_HEADING[3:])]
    table = [s for s in sections if s.startswith(_TABLE_HEADING[3:])]
    if not headline or not table:
        raise ValueError(f"{path} lacks its headline or findings section; regenerate it with "
                         "isolib.findings.write_results.")
    headlines = [line[2:] for line in headline[0].splitlines() if line.startswith("- ")]
    rows = [line for line in table[0].splitlines() if line.startswith("| ")][1:]  # the header row aside
    status_column = _COLUMNS.index("status") + 1
    # Escaped pipes (\|) inside a cell are not column separators.
    statuses = [re.split(r"(?<!\\)\|", row)[status_column].strip() for row in rows]
    return StudyResults(title, _field(text, "Study", path), _field(text, "Models", path), headlines,
                        pd.Series(statuses, dtype=object))


def overview_text(figures_dir: str | Path, *, thumbnail_width: int = 220) -> str:
    """``figures/README.md``: what reproduces, study by study, read from the ``RESULTS.md`` files.

    One section per folder of ``figures_dir`` (in name order): for a study with a ``RESULTS.md``,
    its title, citation, models, the count of findings by status, its headline findings, a link to
    the ``RESULTS.md``; for every folder, a thumbnail linking to each PNG figure.

    Parameters
    ----------
    figures_dir : str or Path
        The committed ``figures/`` folder.
    thumbnail_width : int
        Width in pixels of each thumbnail.

    Returns
    -------
    str
    """
    figures_dir = Path(figures_dir)
    lines = ["# What reproduces", "",
             "Generated by `python -m isolib reproduce --profile full` (or `python -m isolib overview`) from the "
             "committed `RESULTS.md` of each study; do not edit by hand. Every count and status below is read "
             "from those files, which the latest `full` run wrote.", "",
             "| study | " + " | ".join(STATUSES) + " | results |",
             "|---|" + "---:|" * len(STATUSES) + "---|"]
    sections = []
    for folder in sorted(p for p in figures_dir.iterdir() if p.is_dir()):
        results_path = folder / "RESULTS.md"
        figures = sorted(folder.glob("*.png"))
        section = [f"## {folder.name}", ""]
        if results_path.exists():
            results = read_results(results_path)
            counts = results.counts
            lines.append(f"| [{folder.name}](#{folder.name}) | "
                         + " | ".join(str(counts[status]) for status in STATUSES)
                         + f" | [RESULTS.md]({folder.name}/RESULTS.md) |")
            section += [f"**{results.title}**", "", f"*Study:* {results.citation}", "",
                        f"*Models:* {results.models}", "",
                        "*Findings:* " + ", ".join(f"{counts[status]} {status}" for status in STATUSES)
                        + f" ([RESULTS.md]({folder.name}/RESULTS.md)).", ""]
            if results.headlines:
                section += ["*Headline findings:*", "", *[f"- {line}" for line in results.headlines], ""]
        else:
            section += ["No findings are declared for this notebook (it is not a study).", ""]
        if figures:
            section += [" ".join(f'<a href="{folder.name}/{png.name}"><img src="{folder.name}/{png.name}" '
                                 f'width="{thumbnail_width}" alt="{png.stem}"></a>' for png in figures), ""]
        sections += section
    return "\n".join([*lines, "", *sections])


def write_overview(figures_dir: str | Path) -> Path:
    """Write :func:`overview_text` of ``figures_dir`` to ``<figures_dir>/README.md``; return its path."""
    path = Path(figures_dir) / "README.md"
    # Written aside and renamed: two notebooks finishing together (make -j2 figures) never interleave.
    partial = path.with_name(f".README.md.{os.getpid()}")
    partial.write_text(overview_text(figures_dir))
    os.replace(partial, path)
    return path
