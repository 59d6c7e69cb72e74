"""The record: each finding with its kind, status, rule and control, kept in ``results.json``.

:func:`declare` pairs a verdict with the claim, the paper's value, ours and the rule, giving a
:class:`Finding`; :func:`judge_decoder_views` keeps one count per claim and decoder and
:func:`combine_corpora` one line per claim over corpora. :func:`write_record` and :func:`read_record`
store a study's findings as ``results.json``, the record every page and check reads.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from isolib.errors import ResultsError
from isolib.findings.rules import Verdict, _number, threshold_range
from isolib.views import View

KINDS = ("test", "check")
KIND_MEANINGS = {
    "test": "a claim of the paper that this run's data could refute; only tests count as reproductions",
    "check": "bookkeeping or a property true by construction (a count, an identity, a method raising the measure "
             "it optimises, our own synthetic demonstration): passed or failed, never counted",
}
STATUSES = ("reproduced", "borderline", "not reproduced", "not comparable")
CHECK_STATUSES = ("passed", "failed", "not comparable")
STATUS_MEANINGS = {
    "reproduced": "this run meets the rule stated on the line (with an interval, all of the interval does)",
    "borderline": "the 95% bootstrap interval of the judged value (over its sampling unit: word types, sentence "
                  "pairs and seeds, windows, layers) crosses the rule's threshold, so the verdict could go either way",
    "not reproduced": "this run is comparable and fails the rule",
    "not comparable": "the rule cannot be applied here (the paper's model is not run, or only a stand-in "
                      "for a reference number; a value is NaN; too few layers for a trend)",
    "passed / failed": "a check holds or does not",
}


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


def _status(verdict: Verdict, kind: str) -> str:
    if verdict.passed is None:
        return "not comparable"
    if kind == "check":
        return "passed" if verdict.passed else "failed"
    if verdict.borderline:
        return "borderline"
    return "reproduced" if verdict.passed else "not reproduced"


def _threshold_text(verdict: Verdict) -> str:
    """" Threshold ours: the status holds for any threshold below 0.11." (the rule's last sentence)."""
    span = threshold_range(verdict)
    if span is None:
        return " Threshold ours."
    low, high = span
    if np.isinf(low):
        where = f"below {_number(high)}"
    elif np.isinf(high):
        where = f"above {_number(low)}"
    else:
        where = f"from {_number(low)} to {_number(high)}"
    return f" Threshold ours: the status holds for any threshold {where}."


def declare(finding: str, paper: str, model: str, ours: str, verdict: Verdict, rule: str, *, kind: str,
            control: str | None = None, threshold_ours: bool = False, headline: bool = False,
            sampling_unit: str = "") -> Finding:
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
    threshold_ours : bool
        The rule's threshold is ours, not the paper's: the rule then says so and gives the range of
        thresholds over which the status holds (:func:`threshold_range`).
    headline : bool
        One of the study's most important findings.
    sampling_unit : str
        What the verdict's interval resamples (word types, sentence pairs and seeds ...).
    """
    if kind == "check" and (control is not None or threshold_ours):
        raise ValueError("a check has no control and no threshold of ours; declare it as a test.")
    rule = rule + (_threshold_text(verdict) if threshold_ours and verdict.passed is not None else "")
    interval = None if verdict.interval is None else tuple(map(float, verdict.interval))
    return Finding(finding, paper, model, ours, _status(verdict, kind), rule, kind, control or "-", headline,
                   value=float(verdict.value), interval=interval, threshold_ours=threshold_ours,
                   status_range=threshold_range(verdict) if threshold_ours else None, sampling_unit=sampling_unit)


def not_comparable(finding: str, paper: str, reason: str, *, kind: str, model: str = "-", ours: str = "-",
                   headline: bool = False) -> Finding:
    """A finding this run cannot judge, with the reason as its rule (e.g. "ELMo is not run.")."""
    return Finding(finding, paper, model, ours, "not comparable", reason, kind, headline=headline)


SINK_ARTEFACT = "holds only with the attention sink"


def judge_decoder_views(by_label: dict[str, Sequence[Finding]]) -> list[Finding]:
    """One count per claim and decoder: the start-token view judged, the paper's procedure beside it.

    A decoder's first position is an attention sink, a token of huge norm that every statistic over
    tokens sees. The collection judges a decoder in its start-token view (a start token absorbs
    the sink) and shows the paper's procedure (the sink kept) and any other view (position 0
    dropped) beside it, not counted. Where the paper's procedure reproduces a claim that the
    judged view does not, both rows say that the finding holds only with the attention sink: it
    is an artefact of it. A model without a start-token view (an encoder, or a decoder run in one
    view) is counted as it is.

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
                         if finding.status == "reproduced" and judged_status.get(finding.finding) == "not reproduced"}
            result += [dataclasses.replace(finding, note=SINK_ARTEFACT) if finding.finding in artefacts else finding
                       for finding in findings]
            result += [dataclasses.replace(finding, counted=False, headline=False,
                                           note=SINK_ARTEFACT if finding.finding in artefacts else finding.note)
                       for finding in procedure]
        elif view.first_position != "keep":  # the paper's procedure is written beside the start-token view, above
            result += [dataclasses.replace(finding, counted=False, headline=False) for finding in findings]
    return result


CORPORA_RULE = ("Judged on each corpus; combined: {agree} where every corpus agrees, borderline where they "
                "disagree.")


def combine_corpora(by_corpus: dict[str, Sequence[Finding]]) -> list[Finding]:
    """One line per claim and model over several corpora, with each corpus's number in the cell.

    The same claim, model and counting on every corpus becomes one finding: its status is the
    corpora's common status, or *borderline* (a check: *failed*) where they disagree, since the
    verdict then depends on the corpus; "not comparable" corpora are left out of the status unless
    all are. A claim judged on some corpora only keeps the corpora it has.

    Parameters
    ----------
    by_corpus : dict of str to sequence of Finding
        Each corpus's findings, with the corpus *not* in ``model``, in the order to write them.

    Returns
    -------
    list of Finding
        In the order each claim and model first appears.
    """
    groups: dict[tuple, list[tuple[str, Finding]]] = {}
    for corpus, findings in by_corpus.items():
        for finding in findings:
            groups.setdefault((finding.finding, finding.model, finding.counted), []).append((corpus, finding))
    combined = []
    for members in groups.values():
        first = members[0][1]
        if len(by_corpus) == 1:
            combined.append(first)
            continue
        statuses = [finding.status for _, finding in members]
        comparable = sorted({status for status in statuses if status != "not comparable"}, key=statuses.index)
        if not comparable:
            status = "not comparable"
        elif len(comparable) == 1:
            status = comparable[0]
        else:
            status = "borderline" if first.kind == "test" else "failed"
        marked = len(set(statuses)) > 1
        ours = "; ".join(f"{corpus}: {finding.ours}" + (f" ({finding.status})" if marked else "")
                         for corpus, finding in members)
        notes = list(dict.fromkeys(finding.note for _, finding in members if finding.note))
        agree = "the common status" if first.kind == "test" else "passed"
        rule = first.rule if status == "not comparable" and not comparable else (
            f"{first.rule} {CORPORA_RULE.format(agree=agree)}")
        combined.append(dataclasses.replace(first, ours=ours, status=status, rule=rule, note="; ".join(notes),
                                            headline=any(finding.headline for _, finding in members)))
    return combined




# --------------------------------------------------------------------------- results.json
RECORD_FILE = "results.json"
RECORD_FORMAT = 1
_PAIRS = ("interval", "status_range")


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
    """

    title: str
    citation: str
    models: str
    notes: tuple = ()
    findings: tuple = ()

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
    fields["value"] = None if math.isnan(finding.value) else finding.value
    for name in _PAIRS:  # JSON has no infinity: an open end is null
        if fields[name] is not None:
            fields[name] = [None if math.isinf(end) else end for end in fields[name]]
    fields["view"] = None if finding.view is None else dataclasses.asdict(finding.view)
    return fields


def _finding_from_json(fields: dict) -> Finding:
    fields = {name: value for name, value in fields.items() if name != "view"}
    fields["value"] = math.nan if fields["value"] is None else fields["value"]
    for name, infinite in zip(_PAIRS, ((math.nan, math.nan), (-math.inf, math.inf))):
        if fields[name] is not None:
            fields[name] = tuple(default if end is None else end for end, default in zip(fields[name], infinite))
    return Finding(**fields)


def write_record(record: Record, folder: str | Path) -> Path:
    """Write ``record`` as ``<folder>/results.json`` (written aside and renamed); return its path."""
    path = Path(folder) / RECORD_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {"format": RECORD_FORMAT, **{name: getattr(record, name) for name in ("title", "citation", "models")},
                "notes": list(record.notes), "findings": [_finding_json(f) for f in record.findings]}
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
                      tuple(_finding_from_json(fields) for fields in document["findings"]))
    except (KeyError, TypeError, ValueError) as error:
        raise ResultsError(f"{path} holds a malformed record ({type(error).__name__}: {error}); restore it with git "
                         "or rerun the study.") from None
