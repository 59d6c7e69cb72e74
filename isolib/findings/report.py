"""Reports: the findings as tables and sentences, ``RESULTS.md``, and ``figures/README.md``.

Every page is rendered from the record (:mod:`isolib.findings.record`): :func:`write_results` writes a
study's ``results.json`` and renders its ``RESULTS.md`` from it; :func:`write_overview` writes
``figures/README.md`` (what reproduces, study by study, counting tests only) from every study's
``results.json``. No page is ever parsed back.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from isolib.findings.record import (
    BASES,
    CHECK_STATUSES,
    KIND_MEANINGS,
    MARKS,
    STATUS_MEANINGS,
    STATUSES,
    Finding,
    RULES,
    Record,
    read_record,
    write_record,
)
from isolib.findings.reference import STAND_IN_REASONS
from isolib.markdown import markdown_table
from isolib.views import View

_GLANCE_HEADING = "## At a glance"
_STAND_INS_HEADING = "## Stand-ins: why their results may differ from the paper's models"
_HEADLINE_HEADING = "## Headline findings"
_TESTS_HEADING = "## Tests: the paper's claims"
_BESIDE_HEADING = "## Beside the tests: the paper's procedure on a decoder (not counted)"
_CHECKS_HEADING = "## Checks: bookkeeping and properties true by construction (not counted)"
_NOT_COMPARABLE_HEADING = "## Not comparable"
EARLIER_RULES = ("**Judged under earlier rules.** This record comes from a run judged before every test was set beside "
                 "its control by the same rule, datasets were combined by one declared rule and stand-ins were counted "
                 "apart: its statuses are those rules', and the study's next full run judges it again.")
# The repository's glossary (isolib/findings/report.py is two folders down); not isolib.project, whose study
# registry imports the studies, which import this package.
GLOSSARY = Path(__file__).resolve().parents[2] / "docs" / "glossary.md"
_COLUMNS = ["finding", "paper", "model", "this run", "status", "control", "rule"]
_CHECK_COLUMNS = ["finding", "expected", "model", "this run", "status", "rule"]
# A status as a cell of :func:`verdict_table` shows it: one short word (a claim's row answers "reproduced?").
STATUS_WORDS = {"reproduced": "✓ yes", "indistinguishable": "= control", "mixed": "± mixed",
                "borderline": "~ borderline", "not reproduced": "✗ no", "not comparable": "· n/c",
                "passed": "✓ passed", "failed": "✗ failed"}
_NO_MODEL = "no model"  # the column of a finding on no model of this run (its paper's model is not run)
_BECAUSE = "not comparable because"


def findings_table(findings: Sequence[Finding]) -> pd.DataFrame:
    """The findings as a table, one row each: ``finding``, ``paper``, ``model``, ``this run``, ``kind``,
    ``status``, ``control``, ``rule`` (a note such as :data:`SINK_ARTEFACT` follows the status)."""
    rows = [{"finding": f.finding, "paper": f.paper, "model": f.model if f.counted else f"{f.model} (beside, not counted)",
             "this run": f.ours, "kind": f.kind, "status": f.status + _qualifiers(f),
             "control": f.control, "rule": f.rule} for f in findings]
    return pd.DataFrame(rows, columns=["finding", "paper", "model", "this run", "kind", "status", "control", "rule"])


def _qualifiers(finding: Finding) -> str:
    """" (knife edge; holds only with the attention sink)": the marks and the note that follow a status."""
    words = [*finding.marks, *([finding.note] if finding.note else [])]
    return f" ({'; '.join(words)})" if words else ""


def _counts_text(statuses: Sequence[str], names: Sequence[str]) -> str:
    """"3 reproduced, 1 mixed": the non-zero counts of ``statuses`` in the order of ``names`` ("none" if empty)."""
    counts = pd.Series(list(statuses), dtype=object).value_counts()
    return ", ".join(f"{counts[name]} {name}" for name in names if name in counts) or "none"


def count_line(findings: Sequence[Finding]) -> str:
    """The counts a notebook prints: counted tests by basis (paper's model, stand-in) and status, then checks."""
    tests = [f for f in findings if f.kind == "test" and f.counted]
    parts = [f"on the paper's models {_counts_text([f.status for f in tests if f.basis == BASES[0]], STATUSES)}",
             f"on stand-ins {_counts_text([f.status for f in tests if f.basis == BASES[1]], STATUSES)}"]
    checks = _counts_text([f.status for f in findings if f.kind == "check"], CHECK_STATUSES)
    return f"Tests {'; '.join(parts)}. Checks: {checks}."


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
        reproduced on (i) polarity (0.05 -> 0.41); not reproduced on ...``; a check reads ``Check:
        ... (expected: ...): passed ...``; a row beside the counted one (the paper's procedure on a
        decoder) says so. The rule that decided it is on the claim's line of ``RESULTS.md``.
    """
    lines = []
    for (kind, claim, paper), rows in _by_claim(findings, claims).items():
        judged = "; ".join(f.status + (f" on {f.model}" if f.model != "-" else "")
                           + ("" if f.counted else " (the paper's procedure, not counted)")
                           + (f" ({f.ours})" if values and f.ours != "-" else "")
                           + (f", {f.note}" if f.note else "") + _reason(f) for f in rows)
        lead, given = ("This run", "paper") if kind == "test" else ("Check", "expected")
        lines.append(f"{lead}: {claim} ({given}: {paper}): {judged}.")
    return "\n".join(lines)


def verdict_table(findings: Sequence[Finding], claims: Sequence[str] | None = None, *,
                  values: bool = True) -> pd.DataFrame:
    """The findings a figure shows as claims x models, each cell a status in one word: for a notebook.

    Shown with :func:`isolib.plotting.show_table`, a browser wraps it between words (JupyterLab breaks a
    printed line anywhere, inside a word too), and its plain text is its Markdown source.

    Parameters
    ----------
    findings : sequence of Finding
    claims : sequence of str, optional
        Keep the findings whose claim starts with one of these (all when None).
    values : bool
        Give this run's value after a status where it is short (at most 16 characters). False leaves every
        value out, as :func:`verdicts` does, for a cell that nbval checks.

    Returns
    -------
    pandas.DataFrame
        One row per claim (a check's claim begins "Check:"), those not comparable on any model last:
        ``claim``, ``paper`` (for a check: what is expected), then one column per model as
        :func:`findings_table` names it (``no model`` last, for a finding on no model of this run), each
        cell the status as :data:`STATUS_WORDS` writes it ("yes": reproduced), and, when a row is not
        comparable for a stated reason, ``not comparable because``.
    """
    rows = []
    for (kind, claim, paper), judged in _by_claim(findings, claims).items():
        row = {"claim": claim if kind == "test" else f"Check: {claim}", "paper": paper}
        for finding, model in zip(judged, findings_table(judged).model):
            value = f" {finding.ours}" if values and finding.ours != "-" and len(finding.ours) <= 16 else ""
            cell = STATUS_WORDS[finding.status] + value + _qualifiers(finding)
            column = _NO_MODEL if model == "-" else model + (" (stand-in)" if finding.stand_in else "")
            row[column] = "; ".join(filter(None, [row.get(column), cell]))
        reasons = dict.fromkeys(_reason(finding).removeprefix(" because ") for finding in judged)
        row[_BECAUSE] = "; ".join(filter(None, reasons))
        row["comparable"] = any(finding.status != "not comparable" for finding in judged)
        rows.append(row)
    table = (pd.DataFrame(rows).fillna("").sort_values("comparable", ascending=False, kind="stable")
             .drop(columns="comparable").reset_index(drop=True))
    models = [column for column in table.columns if column not in ("claim", "paper", _NO_MODEL, _BECAUSE)]
    last = [column for column in (_NO_MODEL, _BECAUSE) if column in table and table[column].any()]
    return table[["claim", "paper", *models, *last]]


def _by_claim(findings: Sequence[Finding], claims: Sequence[str] | None) -> dict[tuple[str, str, str], list[Finding]]:
    """The findings whose claim starts with one of ``claims`` (all when None), by kind, claim and paper's value."""
    chosen = [f for f in findings if claims is None or any(f.finding.startswith(claim) for claim in claims)]
    if not chosen:
        raise ValueError(f"No finding's claim starts with any of {list(claims or [])}.")
    grouped: dict[tuple[str, str, str], list[Finding]] = {}
    for finding in chosen:
        grouped.setdefault((finding.kind, finding.finding, finding.paper), []).append(finding)
    return grouped


def _reason(finding: Finding) -> str:
    """" because ..." for a finding that is not comparable for a stated reason (not for a rule that could not apply)."""
    rule = finding.rule.rstrip(".")
    if finding.status != "not comparable" or rule.lower().startswith(("reproduced if", "passed if")):
        return ""
    # "Not run ..." reads "because not run ...", but a name such as "GPT-2 ..." keeps its capitals.
    return " because " + (rule[0].lower() + rule[1:] if rule[1:2].islower() else rule)


def _headline_lines(findings: Sequence[Finding]) -> list[str]:
    """One bullet per headline claim: its status on every model it was tested on (counted tests only)."""
    claims: dict[str, list[Finding]] = {}
    for finding in findings:
        if finding.headline and finding.kind == "test" and finding.counted:
            claims.setdefault(finding.finding, []).append(finding)
    return [f"- {claim}: " + "; ".join(f"{f.model}{' (stand-in)' if f.stand_in else ''} {f.status}" + _qualifiers(f)
                                     for f in rows)
            for claim, rows in claims.items()]


def _section(heading: str, findings: Sequence[Finding], columns: list[str], empty: str) -> list[str]:
    table = findings_table(findings).drop(columns="kind")
    if columns is _CHECK_COLUMNS:
        table = table.drop(columns="control")
    table = table.set_axis(columns, axis=1)
    return [heading, "", markdown_table(table) if findings else empty, ""]


def cost_note(wall_minutes: float, peak_gib: float, stored: str, detail: str = "") -> str:
    """What a study's run cost, said alike on every page: its time counts only what it did not read back.

    ``stored`` names what the run reads from the cache when an earlier run stored it ("embeddings and training
    runs"); ``detail`` follows the minutes (", of which ...").
    """
    return (f"Wall time of the notebook: {wall_minutes:.1f} min{detail}, reading from the cache what an earlier run "
            f"stored ({stored}); the time from nothing is in docs/performance.md. Peak memory of the kernel: "
            f"{peak_gib:.1f} GiB.")


def glossary_link(folder: str | Path) -> str:
    """A Markdown link to the glossary from a page in ``folder`` (relative inside the repository)."""
    folder = Path(folder).resolve()
    target = os.path.relpath(GLOSSARY, folder) if folder.is_relative_to(GLOSSARY.parents[1]) else GLOSSARY.as_posix()
    return f"[the glossary]({Path(target).as_posix()})"


def _stand_in_lines(findings: Sequence[Finding]) -> list[str]:
    """One bullet per stand-in the counted tests rest on: why its results may differ from the paper's model's."""
    names = dict.fromkeys(name for f in findings if f.stand_in and f.kind == "test" for name in f.stand_in.split(", "))
    return [f"- **{name}**: {STAND_IN_REASONS.get(name, 'a model the paper did not run')}." for name in names]


def _decoder_lines(findings: Sequence[Finding]) -> list[str]:
    """How a decoder's attention sink is handled, said once where a page holds a decoder's views (else nothing)."""
    views = {View.parse(f.model).first_position for f in findings}
    if "start_token" not in views:
        return []
    beside = ("the paper's procedure (the model's name alone, the sink kept) "
              + ("and the view with position 0 dropped are" if "drop" in views else "is"))
    return [f"A decoder is judged in its start-token view: a start token before each input takes the attention sink "
            "(the first position, of huge norm, that most attention flows to) and is left out; "
            f"{beside} shown beside it, never counted, and a finding that holds only with the sink is marked so.", ""]


def _not_comparable_lines(findings: Sequence[Finding]) -> list[str]:
    """The tests that are not comparable, once per claim and reason with their models, collapsed."""
    reasons: dict[tuple[str, str], list[str]] = {}
    for f in findings:
        if f.kind == "test" and f.counted and f.status == "not comparable":
            reasons.setdefault((f.finding, f.rule), []).append(f.model)
    if not reasons:
        return []
    table = pd.DataFrame([{"claim": claim, "models": ", ".join(dict.fromkeys(models)), "why": rule}
                          for (claim, rule), models in reasons.items()])
    return [_NOT_COMPARABLE_HEADING, "", f"<details><summary>{len(reasons)} claims this run cannot judge "
            "(click to open)</summary>", "", markdown_table(table), "", "</details>", ""]


def results_page(record: Record, folder: str | Path = ".") -> str:
    """``RESULTS.md`` of a record, read in one screen first: the claims x models table, then the details.

    The page opens with the counted tests as claims x models, one symbol and word per status (those not
    comparable left to the end), the counts on the paper's models and on stand-ins apart, and why each
    stand-in may differ; then the headline findings, the tests with their rules and controls, the rows
    beside them, the checks, and the tests not comparable (once, collapsed). ``folder`` is where the
    page is written, for its link to the glossary.
    """
    findings = record.findings
    tests = [f for f in findings if f.kind == "test" and f.counted]
    judged = [f for f in tests if f.status != "not comparable"]
    beside = [f for f in findings if f.kind == "test" and not f.counted]
    checks = [f for f in findings if f.kind == "check"]
    stand_ins = _stand_in_lines(findings)
    glance = markdown_table(verdict_table(judged, values=False)) if judged else "No test could be judged."
    lines = [f"# {record.title}", "", f"**Study:** {record.citation}", "", f"**Models:** {record.models}", "",
             *([EARLIER_RULES, ""] if record.rules < RULES else []),
             _GLANCE_HEADING, "", glance, "", "**Summary:** " + count_line(findings) + " Statuses, marks and terms: "
             + glossary_link(folder) + ".", "",
             *([_STAND_INS_HEADING, "", *stand_ins, ""] if stand_ins else []),
             *_decoder_lines(findings),
             *[line for note in record.notes for line in (note, "")],
             _HEADLINE_HEADING, "", *_headline_lines(findings), "",
             *_section(_TESTS_HEADING, judged, _COLUMNS, "No test could be judged."),
             *(_section(_BESIDE_HEADING, beside, _COLUMNS, "") if beside else []),
             *_section(_CHECKS_HEADING, checks, _CHECK_COLUMNS, "No check is declared."),
             *_not_comparable_lines(findings),
             "**Statuses:** " + "; ".join(f"*{status}*: {meaning}" for status, meaning in STATUS_MEANINGS.items())
             + ".", "",
             "**Marks:** " + "; ".join(f"*{mark}*: {meaning}" for mark, meaning in MARKS.items()) + ".", "",
             "**Kinds:** " + "; ".join(f"*{kind}*: {meaning}" for kind, meaning in KIND_MEANINGS.items()) + ".", ""]
    return "\n".join(lines)


def write_pages(record: Record, folder: str | Path) -> Path:
    """Write ``record`` as the study's ``results.json`` and ``RESULTS.md`` rendered from it, in ``folder``.

    Returns
    -------
    Path
        The ``RESULTS.md`` written.
    """
    if not record.findings:
        raise ValueError("there are no findings to write.")
    write_record(record, folder)
    path = Path(folder) / "RESULTS.md"
    path.write_text(results_page(record, folder))
    return path


def write_results(findings: Sequence[Finding], path: str | Path, *, title: str, citation: str, models: str,
                  notes: Sequence[str] = ()) -> Path:
    """:func:`write_pages` of the :class:`Record` of ``findings``, in the folder of ``path`` (a ``RESULTS.md``)."""
    return write_pages(Record(title, citation, models, tuple(notes), tuple(findings)), Path(path).parent)


def overview_text(figures_dir: str | Path, studies: Sequence[str], *, thumbnail_width: int = 220) -> str:
    """``figures/README.md``: what reproduces, study by study, read from each study's ``results.json``.

    One section per folder of ``figures_dir`` (in name order): for a study, its title, citation,
    models, the count of its tests by status and of its checks, its headline findings, a link to its
    ``RESULTS.md``; for every folder, a thumbnail linking to each PNG figure. Only tests are counted as
    reproductions. A study without its record, or with a damaged one, raises
    :class:`isolib.errors.ResultsError` naming the file, never reads as no study.

    Parameters
    ----------
    figures_dir : str or Path
        The committed ``figures/`` folder.
    studies : sequence of str
        The folders that hold a study (every one must have its ``results.json``; the others hold no findings).
    thumbnail_width : int
        Width in pixels of each thumbnail.

    Returns
    -------
    str
    """
    figures_dir = Path(figures_dir)
    folders = sorted(p for p in figures_dir.iterdir() if p.is_dir())
    records = {name: read_record(figures_dir / name) for name in studies}  # every record read before any is used
    lines = ["# What reproduces", "",
             "Generated by `python -m isolib reproduce --profile full` (or `python -m isolib overview`) from the "
             "committed `results.json` of each study; do not edit by hand. Every count and status below is read "
             "from those records, which the latest `full` run wrote.", "",
             "Only *tests* are counted: claims of a paper that this run's data could refute, each judged beside "
             "its control by the same rule. Results on the paper's own models and on *stand-ins* (the offline "
             "models run in place of BERT, GPT-2 and the papers' static vectors) are counted apart: a stand-in that "
             "behaves differently is a finding about the stand-in, not the paper failing. *Checks* (bookkeeping, "
             "properties true by construction) are not counted. A decoder is judged in its *start-token* view "
             "(`smollm2 (start token)`): a start token before every input becomes the attention sink, the position "
             "most attention flows to and whose norm is many times the others', and is left out; the papers' "
             "procedure, the sink kept, is shown beside it and never counted. Every status, mark and measure is "
             f"defined in {glossary_link(figures_dir)}.", "",
             "| study | results on | " + " | ".join(STATUSES) + " | checks | results |",
             "|---|---|" + "---:|" * len(STATUSES) + "---:|---|"]
    for name, results in records.items():
        by_basis = results.counts_by_basis
        shown = [basis for basis in BASES if by_basis.loc[basis].sum()] or [BASES[1]]
        for basis in shown:  # the checks once, on the study's first row
            checks = _counts_text([f.status for f in results.checks], CHECK_STATUSES) if basis == shown[0] else ""
            earlier = " (earlier rules)" if results.rules < RULES else ""
            lines.append(f"| [{name}](#{name}){earlier} | {basis} | " + " | ".join(str(by_basis.loc[basis, status])
                                                                        for status in STATUSES)
                         + f" | {checks} | [RESULTS.md]({name}/RESULTS.md) |")
    lines += ["", "**What a status means.** " + " ".join(f"*{status}*: {meaning}." for status, meaning in
                                                          STATUS_MEANINGS.items() if status in STATUSES), ""]
    sections = []
    for folder in folders:
        figures = sorted(folder.glob("*.png"))
        section = [f"## {folder.name}", ""]
        if folder.name in records:
            results = records[folder.name]
            section += [f"**{results.title}**", "", f"*Study:* {results.citation}", "",
                        f"*Models:* {results.models}", "",
                        "*Summary:* " + count_line(results.findings) + f" ([RESULTS.md]({folder.name}/RESULTS.md))",
                        ""]
            headlines = _headline_lines(results.findings)
            if headlines:
                section += ["*Headline findings:*", "", *headlines, ""]
        else:
            section += ["No findings are declared for this notebook (it is not a study).", ""]
        if figures:
            section += [" ".join(f'<a href="{folder.name}/{png.name}"><img src="{folder.name}/{png.name}" '
                                 f'width="{thumbnail_width}" alt="{png.stem}"></a>' for png in figures), ""]
        sections += section
    return "\n".join([*lines, "", *sections])


def write_overview(figures_dir: str | Path, studies: Sequence[str]) -> Path:
    """Write :func:`overview_text` of ``figures_dir`` to ``<figures_dir>/README.md``; return its path."""
    path = Path(figures_dir) / "README.md"
    # Written aside and renamed: two notebooks finishing together (make -j2 figures) never interleave.
    partial = path.with_name(f".README.md.{os.getpid()}")
    partial.write_text(overview_text(figures_dir, studies))
    os.replace(partial, path)
    return path
