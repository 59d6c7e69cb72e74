"""The record: each finding with its kind, status, rule and control, kept in ``results.json``.

:func:`declare` pairs a verdict with the claim, the paper's value, ours and the rule, giving a
:class:`Finding`; :func:`judge_decoder_views` keeps one count per claim and decoder and
:func:`combine_datasets` one line per claim over datasets or corpora (one declared rule), and
:func:`mark_stand_ins` says which results stand on a stand-in. :func:`write_record` and :func:`read_record`
store a study's findings as ``results.json``, the record every page and check reads.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from isolib.errors import ResultsError
from isolib.findings.rules import Verdict, _number, threshold_range
from isolib.models import OFFLINE_MODELS
from isolib.views import View

KINDS = ("test", "check")
KIND_MEANINGS = {
    "test": "a claim of the paper that this run's data could refute; only tests count as reproductions",
    "check": "bookkeeping or a property true by construction (a count, an identity, a method raising the measure "
             "it optimises, our own synthetic demonstration): passed or failed, never counted",
}
STATUSES = ("reproduced", "indistinguishable", "mixed", "borderline", "not reproduced", "not comparable")
CHECK_STATUSES = ("passed", "failed", "not comparable")
STATUS_MEANINGS = {
    "reproduced": "this run meets the rule stated on the line (with an interval, all of the interval does) and its "
                  "control, judged by the same rule, does not",
    "indistinguishable": "this run meets the rule, but so does its control judged by the same rule on the same units: "
                         "the data cannot tell the claim from its control, and it is not counted as reproduced",
    "mixed": "the datasets or corpora disagree: some reproduce the claim and some are against it, or no status holds "
             "on more than half of them (each one's status is in the cell)",
    "borderline": "the 95% bootstrap interval of the judged value (over its sampling unit: word types, sentence "
                  "pairs and seeds, windows, layers) crosses the rule's threshold, so the verdict could go either way",
    "not reproduced": "this run is comparable and fails the rule",
    "not comparable": "the rule cannot be applied here (the paper's model is not run, or only a stand-in "
                      "for a reference number; a value is NaN; too few layers for a trend)",
    "passed / failed": "a check holds or does not",
}
# Marks a finding's line can carry beside its status, and what each says.
MARKS = {
    "knife edge": "the judged value lies within 5% of its threshold: a slightly different threshold or sample could "
                  "change the status (on a line combined over datasets: a dataset's value does, and its status "
                  "changing would change the combined one)",
    "degenerate interval": "the interval has zero width by construction (what it resamples does not vary), so it "
                           "carries no uncertainty and no status rests on it",
    "depends on scale": "judged scale-free (on unit vectors, or a scale-free counterpart) the status differs: the "
                        "vectors' norms decide it",
}
# The two bases a test's result can stand on: they are counted apart on every page.
BASES = ("paper's model", "stand-in")


@dataclass(frozen=True)
class Finding:
    """One line of ``RESULTS.md``: a finding or number of the paper beside this run's.

    Attributes
    ----------
    finding : str
        The paper's claim or measure.
    paper : str
        What the paper reports (for a check: what is expected).
    model : str
        The model of this run it is compared with ("-" if none).
    ours : str
        What this run finds.
    status : str
        One of :data:`STATUSES` for a test, of :data:`CHECK_STATUSES` for a check.
    rule : str
        How the status was decided.
    kind : {"test", "check"}
        A *test* is a claim of the paper that this run's data could refute; a *check* is
        bookkeeping or a property true by construction (a count, an identity, a method raising the
        measure it optimises, our own synthetic demonstration). Checks are never counted as
        reproductions.
    control : str
        For a test, what would have made it fail: the control it is compared with (a baseline,
        global centring, shuffled labels, the static embedding ...) or the bound it must clear;
        "-" for a check.
    headline : bool
        One of the study's most important findings (listed first, and in ``figures/README.md``).
    counted : bool
        False for a row shown beside a counted one and not counted itself: the paper's procedure
        on a decoder, beside its start-token view (:func:`judge_decoder_views`).
    note : str
        A short qualification shown with the status ("holds only with the attention sink").
    value : float
        The number the rule judged (NaN where none, or for a finding recorded before values were kept).
    interval : (float, float) or None
        Its 95% bootstrap interval over :attr:`sampling_unit`; None for a number not from a sample.
    threshold_ours : bool
        The rule's threshold is ours, not the paper's.
    status_range : (float, float) or None
        For a threshold of ours: the thresholds over which the status holds (either end may be infinite).
    sampling_unit : str
        What the interval resamples (word types, sentence pairs and seeds ...); "" where not given.
    control_value : float
        The control's value under the same rule (NaN where no control is judged).
    control_status : {"passes", "fails", ""}
        Whether the control meets the same rule; "" where it is not judged.
    stand_in : str
        The model this result stands on when it is a stand-in for the paper's (:func:`mark_stand_ins`),
        several separated by ", " for a result over several; "" when it is on the paper's own model or data.
    marks : tuple of str
        Keys of :data:`MARKS` that apply (knife edge, degenerate interval, depends on scale).
    """

    finding: str
    paper: str
    model: str
    ours: str
    status: str
    rule: str
    kind: str
    control: str = "-"
    headline: bool = False
    counted: bool = True
    note: str = ""
    value: float = math.nan
    interval: tuple | None = None
    threshold_ours: bool = False
    status_range: tuple | None = None
    sampling_unit: str = ""
    control_value: float = math.nan
    control_status: str = ""
    stand_in: str = ""
    marks: tuple = ()

    @property
    def basis(self) -> str:
        """One of :data:`BASES`: whether this result is on the paper's model or on a stand-in."""
        return BASES[1] if self.stand_in else BASES[0]

    @property
    def view(self) -> View | None:
        """The model view this finding is about (None for a finding on no model)."""
        return None if self.model == "-" else View.parse(self.model)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}.")
        allowed = STATUSES if self.kind == "test" else CHECK_STATUSES
        if self.status not in allowed:
            raise ValueError(f"the status of a {self.kind} must be one of {allowed}, got {self.status!r}.")
        if self.kind == "test" and self.status != "not comparable" and self.control in ("", "-"):
            raise ValueError(f"the test {self.finding!r} names no control (what would have made it fail).")
        if self.control_status not in ("passes", "fails", ""):
            raise ValueError(f"control_status must be 'passes', 'fails' or '', got {self.control_status!r}.")
        unknown = set(self.marks) - set(MARKS)
        if unknown:
            raise ValueError(f"unknown marks {sorted(unknown)}; marks are {list(MARKS)}.")


def _status(verdict: Verdict, kind: str, control_verdict: Verdict | None = None) -> str:
    if verdict.passed is None:
        return "not comparable"
    if kind == "check":
        return "passed" if verdict.passed else "failed"
    if verdict.borderline:
        return "borderline"
    if verdict.passed and control_verdict is not None and control_verdict.passed:
        return "indistinguishable"
    return "reproduced" if verdict.passed else "not reproduced"


# The sentences a judged rule ends with: the threshold's range, then the control's outcome. A line combined over
# datasets replaces them with its own (:func:`_combined_judgement`), since each dataset has its numbers.
_THRESHOLD_SENTENCE = " Threshold ours"
_CONTROL_SENTENCE = " Its control, by the same rule: "
_CONTROL_UNJUDGED = " Its control cannot be judged by the same rule."


def _control_text(control_verdict: Verdict) -> str:
    """" Its control, by the same rule: 0.05 [95% CI ...], passes." (the rule's sentence on the control)."""
    if control_verdict.passed is None:
        return _CONTROL_UNJUDGED
    interval = f" {control_verdict.interval_text}" if control_verdict.interval is not None else ""
    outcome = ("passes too: the data cannot tell the claim from it" if control_verdict.passed else "fails")
    return f"{_CONTROL_SENTENCE}{_number(control_verdict.value)}{interval}, {outcome}."


def _threshold_text(span: tuple[float, float] | None, holds: str = "the status holds") -> str:
    """" Threshold ours: the status holds for any threshold below 0.11." (the rule's sentence on its threshold)."""
    if span is None:
        return f"{_THRESHOLD_SENTENCE}."
    low, high = span
    if np.isinf(low):
        where = f"below {_number(high)}"
    elif np.isinf(high):
        where = f"above {_number(low)}"
    else:
        where = f"from {_number(low)} to {_number(high)}"
    return f"{_THRESHOLD_SENTENCE}: {holds} for any threshold {where}."


def declare(finding: str, paper: str, model: str, ours: str, verdict: Verdict, rule: str, *, kind: str,
            control: str | None = None, control_verdict: Verdict | None = None, scale_free: Verdict | None = None,
            threshold_ours: bool = False, headline: bool = False, sampling_unit: str = "") -> Finding:
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
        The rule applied to this run's numbers (:func:`trend`, :func:`threshold`,
        :func:`compare_with_control` ...).
    rule : str
        The rule as a sentence ("reproduced if ...").
    kind : {"test", "check"}
        Required: whether our data could refute the claim (a test) or it holds by construction or
        bookkeeping (a check). See :class:`Finding`.
    control : str, optional
        For a test (required): what would have made it fail, e.g. "global centring (the same
        windows)" or "an isotropic space (average cosine 0)".
    control_verdict : Verdict, optional
        The control's value judged by the same rule on the same units. Where ours passes and the control
        passes too, the status is "indistinguishable": the data cannot tell the claim from its control.
    scale_free : Verdict, optional
        The same claim judged scale-free (unit vectors, or a scale-free counterpart of the measure): where
        its status differs, the line is marked "depends on scale".
    threshold_ours : bool
        The rule's threshold is ours, not the paper's: the rule then says so and gives the range of
        thresholds over which the status holds (:func:`threshold_range`).
    headline : bool
        One of the study's most important findings.
    sampling_unit : str
        What the verdict's interval resamples (word types, sentence pairs and seeds ...).
    """
    if kind == "check" and (control is not None or control_verdict is not None or threshold_ours):
        raise ValueError("a check has no control and no threshold of ours; declare it as a test.")
    judged = verdict.passed is not None
    rule = (rule + (_threshold_text(threshold_range(verdict)) if threshold_ours and judged else "")
            + (_control_text(control_verdict) if control_verdict is not None and judged else ""))
    status = _status(verdict, kind, control_verdict)
    marks = [name for name, applies in (
        ("knife edge", judged and verdict.knife_edge),
        ("degenerate interval", judged and verdict.degenerate),
        ("depends on scale", judged and scale_free is not None
         and _status(scale_free, kind, control_verdict) != status)) if applies]
    interval = None if verdict.interval is None else tuple(map(float, verdict.interval))
    control_status = "" if control_verdict is None or control_verdict.passed is None else (
        "passes" if control_verdict.passed else "fails")
    return Finding(finding, paper, model, ours, status, rule, kind, control or "-", headline,
                   value=float(verdict.value), interval=interval, threshold_ours=threshold_ours,
                   status_range=threshold_range(verdict) if threshold_ours else None, sampling_unit=sampling_unit,
                   control_value=math.nan if control_verdict is None else float(control_verdict.value),
                   control_status=control_status, marks=tuple(marks), stand_in=offline_stand_in(model))


def not_comparable(finding: str, paper: str, reason: str, *, kind: str, model: str = "-", ours: str = "-",
                   headline: bool = False) -> Finding:
    """A finding this run cannot judge, with the reason as its rule (e.g. "ELMo is not run.")."""
    return Finding(finding, paper, model, ours, "not comparable", reason, kind, headline=headline,
                   stand_in=offline_stand_in(model))


SINK_ARTEFACT = "holds only with the attention sink"


def judge_decoder_views(by_label: dict[str, Sequence[Finding]]) -> list[Finding]:
    """One count per claim and decoder: the start-token view judged, the paper's procedure beside it.

    A decoder's first position is an attention sink, a token of huge norm that every statistic over
    tokens sees. The collection judges a decoder in its start-token view (a start token absorbs
    the sink) and shows the paper's procedure (the sink kept) and any other view (position 0
    dropped) beside it, not counted. Where the paper's procedure reproduces a claim that the
    judged view does not, both rows say that the finding holds only with the attention sink: it
    is an artefact of it (also where the judged view cannot be told from its control). A model without
    a start-token view (an encoder, or a decoder run in one view) is counted as it is.

    Parameters
    ----------
    by_label : dict of str to sequence of Finding
        The findings of each model view, keyed by :attr:`isolib.views.View.label` (``smollm2``,
        ``smollm2 (start token)`` ...), in the order to write them.

    Returns
    -------
    list of Finding
        Per model: the judged view's findings, then the paper's procedure's and the other views'
        with ``counted=False``.
    """
    result = []
    for label, findings in by_label.items():
        view = View.parse(label)
        if dataclasses.replace(view, first_position="start_token").label not in by_label:
            result += findings
        elif view.first_position == "start_token":
            procedure = by_label.get(dataclasses.replace(view, first_position="keep").label, [])
            judged_status = {finding.finding: finding.status for finding in findings}
            artefacts = {finding.finding for finding in procedure
                         if finding.status == "reproduced"
                         and judged_status.get(finding.finding) in ("not reproduced", "indistinguishable")}
            result += [dataclasses.replace(finding, note=SINK_ARTEFACT) if finding.finding in artefacts else finding
                       for finding in findings]
            result += [dataclasses.replace(finding, counted=False, headline=False,
                                           note=SINK_ARTEFACT if finding.finding in artefacts else finding.note)
                       for finding in procedure]
        elif view.first_position != "keep":  # the paper's procedure is written beside the start-token view, above
            result += [dataclasses.replace(finding, counted=False, headline=False) for finding in findings]
    return result


COMBINE_RULE = ("Judged on each {unit}; combined by one rule declared before the data: the common status where "
                "every {unit} agrees; mixed where some reproduce it and some do not; otherwise the status of more "
                "than half of them, else mixed.")
COMBINE_CHECK_RULE = "Judged on each {unit}; passed where every {unit} passes."


def combined_status(statuses: Sequence[str], kind: str) -> str:
    """The status of one claim over several datasets or corpora, by the rule of :data:`COMBINE_RULE`.

    "Not comparable" datasets are left out unless all are. Datasets that disagree, some reproducing
    the claim and some not, or with no status on more than half of them, are *mixed*, never
    *borderline*: borderline says only that an interval crosses its threshold.
    """
    comparable = [status for status in statuses if status != "not comparable"]
    if not comparable:
        return "not comparable"
    if len(set(comparable)) == 1:
        return comparable[0]
    if kind == "check":
        return "failed"
    if "reproduced" in comparable and "not reproduced" in comparable:
        return "mixed"
    status, n = Counter(comparable).most_common(1)[0]
    return status if n > len(comparable) / 2 else "mixed"


def combine_datasets(by_dataset: dict[str, Sequence[Finding]], *, unit: str = "corpus") -> list[Finding]:
    """One line per claim and model over several datasets or corpora, each one's number in the cell.

    The same claim, model and counting on every dataset becomes one finding, its status given by
    :func:`combined_status` (stated in the rule); where the datasets' statuses differ, each is written
    after its value. A claim judged on some datasets only keeps the datasets it has.

    Parameters
    ----------
    by_dataset : dict of str to sequence of Finding
        Each dataset's findings, with the dataset *not* in ``model``, in the order to write them.
    unit : str
        What the keys are, for the rule's sentence ("corpus", "dataset").

    Returns
    -------
    list of Finding
        In the order each claim and model first appears.
    """
    groups: dict[tuple, list[tuple[str, Finding]]] = {}
    for dataset, findings in by_dataset.items():
        for finding in findings:
            groups.setdefault((finding.finding, finding.model, finding.counted), []).append((dataset, finding))
    combined = []
    for members in groups.values():
        first = members[0][1]
        if len(by_dataset) == 1:
            combined.append(first)
            continue
        statuses = [finding.status for _, finding in members]
        status = combined_status(statuses, first.kind)
        marked = len(set(statuses)) > 1
        ours = "; ".join(f"{dataset}: {finding.ours}" + (f" ({finding.status})" if marked else "")
                         for dataset, finding in members)
        notes = list(dict.fromkeys(finding.note for _, finding in members if finding.note))
        controls = {finding.control_status for _, finding in members}
        status_range, judgement = _combined_judgement(members, unit)
        rule = first.rule if status == "not comparable" else (
            judgement + " " + (COMBINE_RULE if first.kind == "test" else COMBINE_CHECK_RULE).format(unit=unit))
        combined.append(dataclasses.replace(
            first, ours=ours, status=status, rule=rule, note="; ".join(notes),
            headline=any(finding.headline for _, finding in members), value=math.nan, interval=None,
            status_range=status_range, control_value=math.nan,
            control_status=controls.pop() if len(controls) == 1 else "",
            marks=_combined_marks(statuses, [finding for _, finding in members], first.kind, status)))
    return combined


def _combined_marks(statuses: Sequence[str], members: Sequence[Finding], kind: str, status: str) -> tuple[str, ...]:
    """Every dataset's marks, but a knife edge only where one dataset's status changing would change the combined."""
    marks = dict.fromkeys(mark for finding in members for mark in finding.marks)
    judged = [name for name in (CHECK_STATUSES if kind == "check" else STATUSES)
              if name not in ("mixed", "not comparable")]
    decisive = any(combined_status([*statuses[:i], other, *statuses[i + 1:]], kind) != status
                   for i, finding in enumerate(members) if "knife edge" in finding.marks
                   for other in judged if other != finding.status)
    return tuple(mark for mark in marks if mark != "knife edge" or decisive)


def general_rule(rule: str) -> str:
    """A rule without the sentences :func:`declare` ends it with about its own numbers (its threshold's range, its
    control's outcome): what the rule is wherever it is applied."""
    return rule.split(_THRESHOLD_SENTENCE)[0].split(_CONTROL_SENTENCE)[0].split(_CONTROL_UNJUDGED)[0]


def _combined_judgement(members: Sequence[tuple[str, Finding]], unit: str) -> tuple[tuple | None, str]:
    """The range of thresholds and the rule of a line combined over datasets, with each dataset's control.

    Each dataset's rule ends with its own range and control (:func:`declare`); the combined rule keeps the rule
    and ends with the thresholds over which no dataset's status changes (so neither does the combined one),
    then the control's outcome on each dataset.
    """
    first = members[0][1]
    rule = general_rule(first.rule)
    judged = [(dataset, finding) for dataset, finding in members if finding.status != "not comparable"]
    status_range = None
    if first.threshold_ours and judged:
        spans = [finding.status_range for _, finding in judged]
        if None not in spans:
            status_range = (max(low for low, _ in spans), min(high for _, high in spans))
        rule += _threshold_text(status_range, holds=f"every {unit}'s status, and so the combined one, holds")
    controls = []
    for dataset, finding in judged:
        if _CONTROL_SENTENCE in finding.rule:
            controls.append(f"on {dataset} {finding.rule.split(_CONTROL_SENTENCE)[1].removesuffix('.')}")
        elif _CONTROL_UNJUDGED in finding.rule:
            controls.append(f"on {dataset} it cannot be judged")
    if controls:
        rule += f"{_CONTROL_SENTENCE}{'; '.join(controls)}."
    return status_range, rule


def offline_stand_in(model: str) -> str:
    """The offline model that ``model`` (a view's label) is ("" for none): each stands in for a paper's model."""
    if model == "-":
        return ""
    try:
        name = View.parse(model).model
    except ValueError:
        return ""
    return name if name in OFFLINE_MODELS else ""


def mark_stand_ins(findings: Sequence[Finding], stand_in_of: Callable[[Finding], str]) -> list[Finding]:
    """The findings with :attr:`Finding.stand_in` set: which results stand on a stand-in, not the paper's model.

    Pages and the overview count the two apart, so that a stand-in that behaves differently reads as a
    finding about the stand-in, never as the paper failing.

    Parameters
    ----------
    findings : sequence of Finding
    stand_in_of : callable
        Maps a finding to the stand-in it is on ("" for the paper's own model or data), for a study whose
        model column names settings rather than models: :func:`declare` already marks a finding whose
        model is a view of one of :data:`isolib.models.OFFLINE_MODELS` (none of them is a paper's model).
    """
    return [dataclasses.replace(finding, stand_in=stand_in_of(finding)) for finding in findings]


# --------------------------------------------------------------------------- results.json
RECORD_FILE = "results.json"
RECORD_FORMAT = 1
# The rules a record was judged under: 2 judges every test beside its control by the same rule, combines datasets by
# one declared rule (mixed, not borderline) and counts stand-ins apart. A record of earlier rules says so on its pages.
RULES = 2
_PAIRS = ("interval", "status_range")
_NUMBERS = ("value", "control_value")


@dataclass(frozen=True)
class Record:
    """A study's findings with what its page says around them: the content of ``results.json``.

    Attributes
    ----------
    title, citation, models : str
        The page's heading, the study's reference, and the models run (each with what it stands in for).
    notes : tuple of str
        Paragraphs under the title (the profile, wall time, memory ...).
    findings : tuple of Finding
    rules : int
        The rules it was judged under (:data:`RULES` for a record judged now; 1 for one written before).
    """

    title: str
    citation: str
    models: str
    notes: tuple = ()
    findings: tuple = ()
    rules: int = RULES

    @property
    def tests(self) -> list[Finding]:
        """The counted tests (only they are counted as reproductions)."""
        return [f for f in self.findings if f.kind == "test" and f.counted]

    @property
    def checks(self) -> list[Finding]:
        return [f for f in self.findings if f.kind == "check"]

    @property
    def counts(self) -> pd.Series:
        """Counted tests per status, in :data:`STATUSES` order."""
        return pd.Series([f.status for f in self.tests], dtype=object).value_counts().reindex(
            list(STATUSES), fill_value=0)

    @property
    def counts_by_basis(self) -> pd.DataFrame:
        """Counted tests per basis (:data:`BASES`, rows) and status (:data:`STATUSES`, columns)."""
        table = pd.crosstab(pd.Categorical([f.basis for f in self.tests], categories=list(BASES)),
                            pd.Categorical([f.status for f in self.tests], categories=list(STATUSES)), dropna=False)
        return table.rename_axis(index=None, columns=None)

    @property
    def check_counts(self) -> pd.Series:
        """Checks per status, in :data:`CHECK_STATUSES` order."""
        return pd.Series([f.status for f in self.checks], dtype=object).value_counts().reindex(
            list(CHECK_STATUSES), fill_value=0)

    @property
    def every_status(self) -> list[tuple[str, str, str]]:
        """(claim, model, status) of every line, rows beside the tests and checks marked: what
        :func:`isolib.comparison.compare_outputs` compares."""
        def section(f: Finding) -> str:
            return "check" if f.kind == "check" else ("test" if f.counted else "beside")

        return [(f"{section(f)}: {f.finding}", f.model, f.status) for f in self.findings]


def _finding_json(finding: Finding) -> dict:
    fields = dataclasses.asdict(finding)
    for name in _NUMBERS:  # JSON has no NaN: a missing value is null
        fields[name] = None if math.isnan(getattr(finding, name)) else getattr(finding, name)
    fields["marks"] = list(finding.marks)
    for name in _PAIRS:  # JSON has no infinity: an open end is null
        if fields[name] is not None:
            fields[name] = [None if math.isinf(end) else end for end in fields[name]]
    fields["view"] = None if finding.view is None else dataclasses.asdict(finding.view)
    return fields


def _finding_from_json(fields: dict) -> Finding:
    fields = {name: value for name, value in fields.items() if name != "view"}
    for name in _NUMBERS:
        fields[name] = math.nan if fields.get(name) is None else fields[name]
    fields["marks"] = tuple(fields.get("marks", ()))
    for name, infinite in zip(_PAIRS, ((math.nan, math.nan), (-math.inf, math.inf))):
        if fields[name] is not None:
            fields[name] = tuple(default if end is None else end for end, default in zip(fields[name], infinite))
    return Finding(**fields)


def write_record(record: Record, folder: str | Path) -> Path:
    """Write ``record`` as ``<folder>/results.json`` (written aside and renamed); return its path."""
    path = Path(folder) / RECORD_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {"format": RECORD_FORMAT, **{name: getattr(record, name) for name in ("title", "citation", "models")},
                "rules": record.rules, "notes": list(record.notes),
                "findings": [_finding_json(f) for f in record.findings]}
    partial = path.with_name(f".{RECORD_FILE}.{os.getpid()}")
    partial.write_text(json.dumps(document, indent=1, ensure_ascii=False, allow_nan=False) + "\n")
    os.replace(partial, path)
    return path


def read_record(folder: str | Path) -> Record:
    """The :class:`Record` in ``<folder>/results.json``.

    Raises
    ------
    ResultsError
        In one sentence naming the file, if it is missing, not JSON, of another format, or not a record.
    """
    path = Path(folder) / RECORD_FILE
    try:
        document = json.loads(path.read_text())
    except FileNotFoundError:
        raise ResultsError(f"{path} is missing: run the study's notebook (or `python -m isolib judge`) to write it."
                         ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ResultsError(f"{path} cannot be read ({error}); restore it with git or rerun the study.") from None
    if not isinstance(document, dict) or document.get("format") != RECORD_FORMAT:
        raise ResultsError(f"{path} is not a results record of format {RECORD_FORMAT}; restore it with git or rerun "
                         "the study.")
    try:
        return Record(document["title"], document["citation"], document["models"], tuple(document["notes"]),
                      tuple(_finding_from_json(fields) for fields in document["findings"]), int(document.get("rules", 1)))
    except (KeyError, TypeError, ValueError) as error:
        raise ResultsError(f"{path} holds a malformed record ({type(error).__name__}: {error}); restore it with git "
                         "or rerun the study.") from None
