"""The papers' findings beside ours: rules, intervals, one record, and the pages rendered from it.

A study *declares* its findings; this package judges and records them the same way for every study,
so that every results page reads alike. One module per concern:

* :mod:`~isolib.findings.rules` turns this run's numbers into a :class:`Verdict` (:func:`trend`,
  :func:`threshold`, :func:`within`, :func:`sign`, :func:`all_of`, :func:`proportion`), says over which
  thresholds a verdict of ours keeps its status (:func:`threshold_range`) and when it sits on a knife
  edge, and holds the one rule for artefact groups (:func:`artefact_reason`);
* :mod:`~isolib.findings.intervals` adds a bootstrap interval over the unit that carries the
  uncertainty (:func:`bootstrap_threshold`, :func:`compare_with_control`, :func:`compare_correlations`):
  a verdict whose interval crosses the threshold is *borderline*;
* :mod:`~isolib.findings.record` pairs a verdict with the claim, the paper's value, ours, the rule, its
  **kind** and, for a test, its **control** judged by the same rule (:func:`declare`, giving a
  :class:`Finding`), keeps one count per claim and decoder (:func:`judge_decoder_views`) and per claim
  over datasets (:func:`combine_datasets`), marks results on stand-ins (:func:`mark_stand_ins`), and
  stores a study's findings as ``results.json`` (:class:`Record`);
* :mod:`~isolib.findings.reference` sets a paper's per-layer reference numbers beside ours;
* :mod:`~isolib.findings.report` renders ``RESULTS.md`` and ``figures/README.md`` from the records, and
  the tables and sentences a notebook shows (:func:`verdict_table`: claims x models, a status each).

Every public name is importable from ``isolib.findings``.

Kinds
-----
test
    An empirical claim of the paper that this run's data could refute. Only tests are counted
    as reproductions.
check
    Bookkeeping or a property true by construction: a count, an identity, a method raising the
    measure it optimises, our own synthetic demonstration. Passed or failed, never "reproduced".

Statuses of a test
------------------
reproduced
    This run meets the rule stated on the finding's line (with an interval: all of it does), and its
    control, judged by the same rule, does not.
indistinguishable
    This run meets the rule, and so does its control: the data cannot tell the claim from it.
mixed
    The datasets or corpora disagree: some reproduce the claim, some do not.
borderline
    The bootstrap interval of the judged value (over its sampling unit) crosses the rule's
    threshold: another sample could decide the other way.
not reproduced
    This run is comparable and fails the rule.
not comparable
    The rule cannot be applied: the paper's model is not run (or only a stand-in for a
    reference number), a value is NaN, or there are too few layers for a trend.
"""

from isolib.findings.intervals import (
    bootstrap_threshold,
    compare_correlations,
    compare_with_control,
    with_interval,
)
from isolib.findings.record import (
    CHECK_STATUSES,
    KIND_MEANINGS,
    KINDS,
    RECORD_FILE,
    RULES,
    SINK_ARTEFACT,
    STATUS_MEANINGS,
    STATUSES,
    Finding,
    Record,
    BASES,
    MARKS,
    combine_datasets,
    combined_status,
    declare,
    general_rule,
    judge_decoder_views,
    mark_stand_ins,
    not_comparable,
    read_record,
    write_record,
)
from isolib.findings.reference import (
    ENCODER_TRAINING_LENGTH,
    STAND_IN_REASONS,
    PaperModel,
    compare_reference,
    models_line,
    paper_counterpart,
)
from isolib.findings.report import (
    cost_note,
    count_line,
    findings_table,
    overview_text,
    STATUS_WORDS,
    results_page,
    verdict_table,
    verdicts,
    write_overview,
    write_pages,
    write_results,
)
from isolib.findings.rules import (
    ARTEFACT_RULE,
    KNIFE_EDGE,
    Verdict,
    all_of,
    artefact_reason,
    proportion,
    sign,
    spearman,
    threshold,
    threshold_range,
    trend,
    within,
)

__all__ = [
    "KINDS", "KIND_MEANINGS", "STATUSES", "CHECK_STATUSES", "STATUS_MEANINGS", "RECORD_FILE", "RULES",
    "Verdict", "trend", "spearman", "threshold", "within", "sign", "all_of", "proportion", "threshold_range",
    "KNIFE_EDGE", "ARTEFACT_RULE", "artefact_reason", "MARKS", "BASES",
    "bootstrap_threshold", "compare_correlations", "compare_with_control", "with_interval",
    "Finding", "declare", "general_rule", "not_comparable", "SINK_ARTEFACT", "combine_datasets", "combined_status",
    "judge_decoder_views", "mark_stand_ins",
    "Record", "read_record", "write_record",
    "ENCODER_TRAINING_LENGTH", "PaperModel", "STAND_IN_REASONS", "paper_counterpart", "models_line",
    "compare_reference",
    "findings_table", "cost_note", "count_line", "verdicts", "verdict_table", "STATUS_WORDS", "results_page", "write_pages", "write_results", "overview_text", "write_overview",
]
