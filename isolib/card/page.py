"""A model card's page, in Markdown and in HTML with its figures inline, and the page comparing cards.

:func:`write_card_page` draws the card's figures from its evidence and writes ``card.md`` (figures linked)
and ``card.html`` (one file, figures inline) from the evidence and the record: every number is read from
the evidence tables, every statement from the record's findings (statuses as
:data:`isolib.findings.STATUS_WORDS` writes them), so the page says nothing the record does not.
:func:`write_comparison` sets several cards side by side with the papers' reference numbers for BERT and
GPT-2 (:func:`isolib.findings.compare_reference`).
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from isolib.card.claims import (
    AGREE,
    ANISOTROPIC,
    METHOD_NAMES,
    STATEMENTS,
    agreement_claim,
    norm_ratio,
    spearman,
    statement_claim,
    verdict_of,
)
from isolib.card.settings import POST_PROCESSINGS
from isolib.findings import (
    CHECK_STATUSES,
    KIND_MEANINGS,
    PaperModel,
    STATUS_MEANINGS,
    STATUS_WORDS,
    STATUSES,
    Record,
    compare_reference,
    findings_table,
    general_rule,
)
from isolib.measures import LABELS, MEASURE_NAMES, MEASURES, mean_kendall, replicate_array
from isolib.plotting import save_figure, set_style
from isolib.views import View

__all__ = ["Page", "statement_counts", "statement_summary", "rules_table", "glance_table", "card_page", "write_card_page", "COMPARED",
           "comparison_references", "comparison_table", "write_comparison"]

CARD_FILE, HTML_FILE = "card.md", "card.html"
CARD_DPI = 80
COMPARISON_FILE = "COMPARISON"
VIEW_NAMES = {"keep": "as the papers fed it (the sink kept)", "start_token": "behind a start token (judged)",
              "drop": "position 0 dropped (judged)"}
# What a card of a static embedding holds, and what it cannot.
STATIC_SECTIONS = ("A static embedding has one layer and no position: its card holds every measure (on as many "
                   "distinct words of the same windows as a transformer's sample has tokens), rogue dimensions, "
                   "post-processing, clusters and STS-B (each sentence the mean of its words' vectors); it has no "
                   "views, no first position, no agreement over layers, and no static baseline to face, being one.")
_STYLE = ("body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;line-height:1.45;"
          "color:#222}table{border-collapse:collapse;font-size:0.85em;margin:0.8em 0}th,td{border:1px solid #ccc;"
          "padding:2px 6px;text-align:right}th{background:#f2f2f2}td:first-child,th:first-child{text-align:left}"
          "img{max-width:100%}details{margin:1em 0}code{background:#f4f4f4;padding:0 3px}h2{border-bottom:1px solid "
          "#ddd;padding-bottom:0.2em;margin-top:1.6em}.note{color:#555;font-size:0.9em}")


# --------------------------------------------------------------------------- a page: blocks rendered twice


@dataclass
class Page:
    """A page as blocks, rendered as Markdown (:meth:`markdown`) or one HTML file (:meth:`html`).

    A block is ``("h1" | "h2" | "p" | "note", text)``, ``("table", DataFrame)``, ``("figure", (path, caption))`` or
    ``("details", (summary, Page))``. Text may hold ``**bold**``, ```code``` and ``[text](link)``.
    """

    blocks: list = field(default_factory=list)

    def add(self, kind: str, content) -> Page:
        self.blocks.append((kind, content))
        return self

    def markdown(self, folder: Path) -> str:
        lines = []
        for kind, content in self.blocks:
            if kind in ("h1", "h2", "h3"):
                lines += ["#" * int(kind[1]) + " " + content, ""]
            elif kind in ("p", "note"):
                lines += [content, ""]
            elif kind == "table":
                lines += [content.to_markdown(index=False), ""]
            elif kind == "figure":
                path, caption = content
                lines += [f"![{caption}]({Path(path).relative_to(folder).as_posix()})", "", f"*{caption}*", ""]
            elif kind == "details":
                summary, inner = content
                lines += [f"<details><summary>{summary}</summary>", "", inner.markdown(folder), "</details>", ""]
        return "\n".join(lines)

    def html(self, title: str) -> str:
        return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
                f"<style>{_STYLE}</style></head>\n<body>\n{self._body()}\n</body></html>\n")

    def _body(self) -> str:
        parts = []
        for kind, content in self.blocks:
            if kind in ("h1", "h2", "h3"):
                parts.append(f"<{kind}>{_inline(content)}</{kind}>")
            elif kind in ("p", "note"):
                parts.append(f"<p class=\"{kind}\">{_inline(content)}</p>")
            elif kind == "table":
                parts.append(content.to_html(index=False, border=0, na_rep="", escape=True))
            elif kind == "figure":
                path, caption = content
                data = base64.b64encode(Path(path).read_bytes()).decode()
                parts.append(f"<figure><img src=\"data:image/png;base64,{data}\" alt=\"{html.escape(caption)}\">"
                             f"<figcaption class=\"note\">{_inline(caption)}</figcaption></figure>")
            elif kind == "details":
                summary, inner = content
                parts.append(f"<details><summary>{_inline(summary)}</summary>\n{inner._body()}\n</details>")
        return "\n".join(parts)


def _inline(text: str) -> str:
    """Markdown's bold, code and links in one line of text, as HTML (everything else escaped)."""
    text = html.escape(text, quote=False)
    text = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", text)
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    return re.sub(r"\[([^\]]+)\]\(([^)]+)\)", r'<a href="\2">\1</a>', text)


# --------------------------------------------------------------------------- numbers read off the evidence


def _layers(evidence: dict, label: str) -> list[int]:
    measures = evidence["measures"]
    return sorted(int(layer) for layer in measures[measures.space == label].layer.unique())


def _over_samples(table: pd.DataFrame, column: str) -> pd.DataFrame:
    """Per (space, layer): the mean of ``column`` over the token samples and its range (min, max)."""
    return table.groupby(["space", "layer"])[column].agg(["mean", "min", "max"]).reset_index()


def _with_range(mean: float, low: float, high: float, digits: int = 3) -> str:
    if not np.isfinite(mean):
        return ""
    return f"{mean:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def statement_counts(findings) -> str:
    """"412 tests on the judged view: 30 ✓ yes, ...; 300 beside it; checks: 1 passed" (how many of each status)."""
    def counts(chosen) -> str:
        statuses = pd.Series([f.status for f in chosen], dtype=object).value_counts()
        return ", ".join(f"{statuses[status]} {STATUS_WORDS[status]}" for status in dict.fromkeys((*STATUSES, *CHECK_STATUSES))
                         if status in statuses) or "none"

    tests = [f for f in findings if f.kind == "test" and f.counted]
    beside = [f for f in findings if f.kind == "test" and not f.counted]
    checks = [f for f in findings if f.kind == "check"]
    return (f"{len(tests)} tests on the judged view: {counts(tests)}"
            + (f"; {len(beside)} on the papers' view beside it: {counts(beside)}" if beside else "")
            + f". Checks: {counts(checks)}.")


def _status(findings, claim: str, label: str) -> str:
    finding = verdict_of(findings, claim, label)
    return "" if finding is None else STATUS_WORDS[finding.status]


def _judged_view(evidence: dict) -> str:
    views = evidence["run"]["views"]
    return next((label for label in views if View.parse(label).first_position != "keep"), views[0])


# --------------------------------------------------------------------------- figures


def _bands(ax, table: pd.DataFrame, labels: Sequence[str], column: str, *, style: str = "-", suffix: str = ""):
    for label in labels:
        rows = _over_samples(table[table.space == label], column)
        line, = ax.plot(rows.layer, rows["mean"], style, marker="o", markersize=3, label=label + suffix)
        ax.fill_between(rows.layer, rows["min"], rows["max"], color=line.get_color(), alpha=0.2)


def _measures_figure(evidence: dict, labels: Sequence[str]) -> plt.Figure:
    measures = evidence["measures"]
    baseline = evidence["run"]["parameters"]["static_baseline"]
    fig, axes = plt.subplots(3, 4, figsize=(16, 10.5), constrained_layout=True)
    for ax, measure in zip(axes.flat, MEASURES):
        column = "log10_iw" if measure.name == "iw" else measure.name
        _bands(ax, measures, labels, column)
        if baseline in set(measures.space) and baseline not in labels:
            ax.axhline(measures.loc[measures.space == baseline, column].mean(), color="black", ls=":",
                       label=f"{baseline} (static)")
        ax.set_title(f"{LABELS[column]} ({'higher' if measure.isotropic == 'high' else 'lower'} is more isotropic)",
                     fontsize="medium")
        ax.set_xlabel("layer")
    handles, names = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="outside lower center", ncol=4, fontsize="small")
    return fig


def _first_position_figure(evidence: dict, labels: Sequence[str]) -> plt.Figure:
    norms, attention = evidence["sink_norms"], evidence["attention"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(14, 4.5), constrained_layout=True)
    for label in labels:
        rows = norms[norms.space == label]
        for position, style in ((0, "-"), (1, "--")):
            ratios = rows.groupby("layer")[["first", "second", "rest_sum", "rest_count"]].apply(
                lambda windows, at=position: norm_ratio(windows.to_numpy(dtype=float), at))
            left.plot(ratios.index, ratios.to_numpy(), style, marker="o", markersize=3, label=f"{label}: position {position}")
        shares = attention[attention.space == label].groupby("layer")[["first_share", "second_share"]].mean()
        for column, style, position in (("first_share", "-", 0), ("second_share", "--", 1)):
            if len(shares):
                right.plot(shares.index, shares[column], style, marker="o", markersize=3,
                           label=f"{label}: position {position}")
    left.axhline(2.0, color="grey", lw=0.8)
    left.set_yscale("log")
    left.set(xlabel="layer", ylabel="mean norm over the tokens after it", title="norm of positions 0 and 1")
    right.axhline(0.5, color="grey", lw=0.8)
    right.set(xlabel="block", ylabel="share of the attention of the positions after it", ylim=(0, 1),
              title="attention drawn by positions 0 and 1")
    for ax in (left, right):
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="x-small")
    return fig


def _rogue_lid_figure(evidence: dict, labels: Sequence[str]) -> plt.Figure:
    rogue, measures = evidence["rogue_shares"], evidence["measures"]
    baseline = evidence["run"]["parameters"]["static_baseline"]
    resamples = evidence["rogue_resamples"].groupby(["space", "layer"]).top_share.quantile([0.025, 0.975]).unstack()
    fig, (left, right) = plt.subplots(1, 2, figsize=(14, 4.5), constrained_layout=True)
    for label in labels:
        rows = rogue[rogue.space == label].sort_values("layer")
        line, = left.plot(rows.layer, rows.top_share, marker="o", markersize=3, label=label)
        ends = resamples.loc[label].reindex(rows.layer)
        left.fill_between(rows.layer, ends[0.025], ends[0.975], color=line.get_color(), alpha=0.2)
        left.plot(rows.layer, rows.rotated_share, "--", color=line.get_color(), label=f"{label}, randomly rotated")
    left.axhline(0.5, color="grey", lw=0.8)
    left.set(xlabel="layer", ylabel="share of the average cosine", ylim=(0, 1.05),
             title="carried by the top 3 coordinates (band: 95% over tokens)")
    _bands(right, measures, labels, "lid")
    if baseline in set(measures.space) and baseline not in labels:
        lid = measures.loc[measures.space == baseline, "lid"]
        right.axhspan(lid.min(), lid.max(), color="black", alpha=0.15, label=f"{baseline} (static), same n")
    right.set(xlabel="layer", ylabel="LID", title="local intrinsic dimension (band: the token samples)")
    for ax in (left, right):
        ax.legend(fontsize="x-small")
    return fig


def _post_processing_figure(evidence: dict, label: str) -> plt.Figure:
    measures, changes = evidence["measures"], evidence["changes"]
    columns = ["average_cosine", "isoscore", "top_dimension_share", "effective_rank"]
    fig, axes = plt.subplots(1, 4, figsize=(16, 4), constrained_layout=True)
    for ax, column in zip(axes, columns):
        for method, table in (("raw", measures), *((method, changes[changes.change == method])
                                                   for method in POST_PROCESSINGS)):
            rows = _over_samples(table[table.space == label], column)
            ax.plot(rows.layer, rows["mean"], marker="o", markersize=3, ls="-" if method == "raw" else "--",
                    label=METHOD_NAMES.get(method, method))
        ax.set(xlabel="layer", title=LABELS[column])
    axes[0].legend(fontsize="x-small")
    return fig


def _sts_spearman(evidence: dict) -> pd.DataFrame:
    """Spearman x 100 of every (space, layer, method) with the gold scores."""
    gold = evidence["sts_gold"].sort_values("pair").score.to_numpy(dtype=float)
    rows = [{"space": space, "layer": layer, "method": method,
             "spearman": 100 * spearman(gold, cell.sort_values("pair").similarity.to_numpy(dtype=float))}
            for (space, layer, method), cell in evidence["sts"].groupby(["space", "layer", "method"])]
    return pd.DataFrame(rows)


def _sts_figure(spearman: pd.DataFrame, labels: Sequence[str]) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(9, 4.5), constrained_layout=True)
    for label in labels:
        for method in ("raw", *POST_PROCESSINGS):
            rows = spearman[(spearman.space == label) & (spearman.method == method)].sort_values("layer")
            ax.plot(rows.layer, rows.spearman, marker="o", markersize=3, ls="-" if method == "raw" else "--",
                    label=f"{label}: {METHOD_NAMES.get(method, 'raw')}")
    ax.set(xlabel="layer", ylabel="Spearman x 100", title="STS-B dev, cosine of mean-pooled token vectors")
    ax.legend(fontsize="x-small", ncol=2)
    return fig


# --------------------------------------------------------------------------- sections


def glance_table(evidence: dict, record: Record, label: str | None = None) -> pd.DataFrame:
    """The card's table at a glance of one view (the judged one by default): per layer, the average cosine, the raw
    STS-B score and the status of every statement."""
    label = label or _judged_view(evidence)
    cosine = _over_samples(evidence["measures"][evidence["measures"].space == label], "average_cosine")
    spearman = _sts_spearman(evidence)
    rows = []
    for layer in _layers(evidence, label):
        mean = cosine[cosine.layer == layer].iloc[0]
        raw = spearman[(spearman.space == label) & (spearman.layer == layer) & (spearman.method == "raw")].spearman
        row = {"layer": layer, "average cosine": _with_range(mean["mean"], mean["min"], mean["max"]),
               "STS-B x 100": f"{raw.iloc[0]:.1f}" if len(raw) else ""}
        for key, statement in STATEMENTS.items():
            row[statement.short] = _status(record.findings, statement_claim(key, layer), label)
        rows.append(row)
    table = pd.DataFrame(rows)
    return table.loc[:, (table != "").any()]


def statement_summary(evidence: dict, record: Record, label: str) -> pd.DataFrame:
    """Per kind of statement, in how many of the view's layers each status came out (the card's first table)."""
    rows = []
    for key, statement in STATEMENTS.items():
        found = [verdict_of(record.findings, statement_claim(key, layer), label) for layer in _layers(evidence, label)]
        statuses = pd.Series([f.status for f in found if f is not None], dtype=object).value_counts()
        if len(statuses):
            rows.append({"statement": statement.text.format(layer="L").replace("Layer L: ", "").replace("Layer L ", ""),
                         "layers": int(statuses.sum()),
                         **{STATUS_WORDS[status]: int(statuses.get(status, 0)) for status in STATUSES if status != "mixed"}})
    return pd.DataFrame(rows)


def _general(finding) -> str:
    """A finding's rule as it reads for every layer: its own numbers aside, "Threshold ours." kept."""
    return general_rule(finding.rule) + (" Threshold ours." if finding.threshold_ours else "")


def rules_table(record: Record) -> pd.DataFrame:
    """One row per kind of statement the record holds: its rule (the first layer's, the layer's numbers aside), its
    control, what the literature says."""
    claims = {finding.finding: finding for finding in record.findings if finding.kind == "test"}
    rows = []
    for key, statement in STATEMENTS.items():
        finding = next((claims[claim] for layer in range(200)
                        if (claim := statement_claim(key, layer)) in claims and claims[claim].status != "not comparable"),
                       None)
        if finding is not None:
            rows.append({"statement": statement.short, "rule": _general(finding), "control": finding.control,
                         "the literature": statement.source})
    agreement = next((f for f in record.findings if f.kind == "test"
                      and f.finding in {agreement_claim(name) for name in MEASURE_NAMES[1:]}), None)
    if agreement is not None:
        rows.append({"statement": "agrees with the average cosine", "rule": _general(agreement),
                     "control": agreement.control, "the literature": agreement.paper})
    return pd.DataFrame(rows)


def _measures_table(evidence: dict, label: str) -> pd.DataFrame:
    measures = evidence["measures"]
    mine = measures[measures.space == label]
    table = pd.DataFrame({"layer": _layers(evidence, label)})
    for name in [*MEASURE_NAMES, "log10_iw"]:
        if name == "iw":
            continue
        stats = _over_samples(mine, name).set_index("layer")
        table[LABELS[name]] = [_with_range(*stats.loc[layer, ["mean", "min", "max"]]) for layer in table.layer]
    return table


def _clusters_table(evidence: dict, record: Record, label: str) -> pd.DataFrame:
    from isolib.findings import artefact_reason

    control, clusters = evidence["cluster_control"], evidence["clusters"]
    rows = []
    for layer in _layers(evidence, label):
        cell = control[(control.space == label) & (control.layer == layer)].iloc[0]
        mine = clusters[(clusters.space == label) & (clusters.layer == layer)]
        artefacts = [f"{row.size} points: {reason}" for row in mine.itertuples()
                     if (reason := artefact_reason(row.dominant_share, row.norm_ratio))]
        rows.append({"layer": layer, "k": int(cell.k), "silhouette": round(float(cell.silhouette), 3),
                     "Gaussian control": round(float(cell.gaussian_silhouette), 3),
                     "artefact groups": "; ".join(artefacts) or "none",
                     "clusters beyond artefacts": _status(record.findings, statement_claim("clusters", layer), label)})
    return pd.DataFrame(rows)


def _sts_table(evidence: dict, record: Record, label: str) -> pd.DataFrame:
    spearman = _sts_spearman(evidence)
    mine = spearman[spearman.space == label].pivot(index="layer", columns="method", values="spearman")
    rows = []
    for layer in mine.index:
        row = {"layer": int(layer), "raw": f"{mine.loc[layer, 'raw']:.1f}"}
        for method, name in METHOD_NAMES.items():
            status = _status(record.findings, statement_claim(f"sts_{method}", int(layer)), label)
            row[name] = f"{mine.loc[layer, method]:.1f} {status}"
        rows.append(row)
    return pd.DataFrame(rows)


def _agreement_table(record: Record, label: str) -> pd.DataFrame:
    rows = []
    for name in MEASURE_NAMES[1:]:
        finding = verdict_of(record.findings, agreement_claim(name), label)
        if finding is not None:
            rows.append({"measure": LABELS[name], "agrees with the average cosine": STATUS_WORDS[finding.status],
                         "this run": finding.ours})
    return pd.DataFrame(rows)


def _agreement_figure(evidence: dict, label: str) -> plt.Figure:
    import seaborn as sns

    measures = evidence["measures"]
    array, _ = replicate_array(measures[measures.space == label])
    tau = pd.DataFrame(mean_kendall(array), index=[LABELS[n] for n in MEASURE_NAMES],
                       columns=[LABELS[n] for n in MEASURE_NAMES])
    fig, ax = plt.subplots(figsize=(9, 7.5), constrained_layout=True)
    sns.heatmap(tau, annot=True, fmt=".2f", cmap="vlag", vmin=-1, vmax=1, center=0, square=True,
                annot_kws={"fontsize": 7}, cbar_kws={"label": "Kendall tau-b over layers (oriented to isotropy)"}, ax=ax)
    ax.set_title(f"Do the measures rank {label}'s layers alike?")
    return fig


def _legend(page: Page) -> None:
    page.add("h2", "How to read this card")
    page.add("p", "Each statement is a test: a rule applied to this run's numbers and, by the same rule, to a "
                  "control that would make it fail; the status is " + "; ".join(
                      f"**{STATUS_WORDS[status]}** ({status}): {meaning}" for status, meaning in
                      STATUS_MEANINGS.items() if status in STATUS_WORDS) + ".")
    page.add("note", "Kinds: " + "; ".join(f"*{kind}*: {meaning}" for kind, meaning in KIND_MEANINGS.items())
             + ". Every rule and control is in the table of rules above; every statement's interval in its line "
               "and in results.json beside this page.")


def _figure(page: Page, folder: Path, name: str, fig: plt.Figure, caption: str) -> None:
    from matplotlib.ticker import MaxNLocator

    for ax in fig.axes:
        if ax.get_xlabel() in ("layer", "block"):
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    save_figure(fig, folder, name, formats=("png",))
    plt.close(fig)
    page.add("figure", (folder / f"{name}.png", caption))


def card_page(evidence: dict, record: Record, folder: str | Path) -> Page:
    """The card of one model as a :class:`Page`, its figures written to ``folder`` (PNG and PDF)."""
    folder = Path(folder)
    run = evidence["run"]
    model, kind, labels = run["model"], run["kind"], run["views"]
    judged = _judged_view(evidence)
    page = Page().add("h1", f"Isotropy card: {model}")
    if kind == "static":
        page.add("p", f"**Model:** {record.models}; static, {run['dim']} dimensions. {STATIC_SECTIONS}")
    else:
        views = ("; ".join(f"`{label}` {VIEW_NAMES[View.parse(label).first_position]}" for label in labels)
                 if kind == "decoder" else f"`{model}`, every token as the model reads it ([CLS] and [SEP] left out)")
        page.add("p", f"**Model:** {record.models}; {kind}, {run['n_layers']} layers (0 is the input embeddings), "
                      f"{run['dim']} dimensions. **Views:** {views}.")
    for note in record.notes:
        page.add("p", note)
    page.add("p", "**Statements:** " + statement_counts(record.findings) + " Read each status as the answer to its "
                  "column; a number is the mean over the token samples [their range].")
    page.add("h2", f"In short ({judged})")
    page.add("p", "How many layers each statement holds for (✓ yes), and how many it could not be told from its "
                  "control (= control), was undecided by its interval (~ borderline), failed (✗ no) or could not be "
                  "judged (· n/c).")
    page.add("table", statement_summary(evidence, record, judged))
    page.add("h2", "At a glance")
    for label in labels:
        page.add("h3", f"{label}").add("table", glance_table(evidence, record, label))
    page.add("h2", "Every measure, per layer")
    page.add("p", f"The twelve measures of notebook 05 on {run['parameters']['n_replicates']} samples of "
                  f"{run['parameters']['n_points']:,} word tokens per layer (the same tokens in every layer and view); "
                  "the band and the range are the samples' spread.")
    if kind != "static":
        _figure(page, folder, "fig_measures", _measures_figure(evidence, labels),
                "Every measure per layer (band: range over the token samples; dotted: the static baseline).")
    for label in labels:
        page.add("details", (f"{label}: every measure, mean [range] over the token samples",
                             Page().add("table", _measures_table(evidence, label))))
    agreement = _agreement_table(record, judged)
    if len(agreement):
        page.add("h3", f"Which measures agree ({judged})")
        _figure(page, folder, "fig_agreement", _agreement_figure(evidence, judged),
                "Kendall's tau-b of every pair of measures over the layers, mean over the token samples.")
        page.add("table", agreement)
    page.add("h2", "The first position")
    if kind == "decoder":
        page.add("p", "A decoder's first position is an attention sink: its norm, and the attention it draws, "
                      "against position 1 as the control. " + (f"Attention: {run['attention']}." if run["attention"]
                                                               else ""))
        _figure(page, folder, "fig_first_position", _first_position_figure(evidence, labels),
                "Left: the mean norm of positions 0 and 1 over the mean norm of the word tokens after them (grey: "
                "twice). Right: the share of attention they draw, mean over heads, queries and windows.")
    else:
        page.add("p", "Does not apply: " + ("an encoder's first position is [CLS], a special token left out of every "
                                            "statistic." if kind == "encoder" else "a static embedding has no position."))
    page.add("h2", "Rogue dimensions and local dimension")
    _figure(page, folder, "fig_rogue_lid", _rogue_lid_figure(evidence, labels),
            "Left: the share of the average cosine the top 3 coordinates carry, and after a random rotation (the "
            "control). Right: LID (k nearest neighbours), against the static baseline at the same number of points.")
    page.add("h2", f"What post-processing changes ({judged})")
    _figure(page, folder, "fig_post_processing", _post_processing_figure(evidence, judged),
            "Measures read off the spectrum, raw (mean over the token samples) and after each post-processing of "
            "the first sample.")
    page.add("h2", "Clusters")
    for label in labels:
        page.add("h3", label).add("table", _clusters_table(evidence, record, label))
    page.add("h2", "A similarity task: STS-B dev")
    spearman = _sts_spearman(evidence)
    page.add("p", f"Cosine of mean-pooled token vectors against the gold scores of {run['sts']['pairs']:,} pairs, "
                  "raw and after each post-processing of them (fitted on the dev set's sentences); the status says whether it "
                  "beats raw, paired over sentence pairs.")
    _figure(page, folder, "fig_sts", _sts_figure(spearman, [judged]), f"STS-B dev Spearman x 100 per layer ({judged}).")
    for label in labels:
        page.add("h3", label).add("table", _sts_table(evidence, record, label))
    every = findings_table(record.findings).drop(columns=["paper", "rule"])
    page.add("h2", "Every statement")
    page.add("p", "Each kind of statement has one rule, applied layer by layer, and one control judged by the same "
                  "rule (results.json keeps each statement's own line).")
    page.add("table", rules_table(record))
    page.add("details", (f"Every statement ({len(every)}), with this run's numbers", Page().add("table", every)))
    _legend(page)
    page.add("note", f"Anisotropic: average cosine above {ANISOTROPIC}; measures agree: Kendall tau above {AGREE}. "
                     "Generated by `python -m isolib card` (isolib.card); re-judged from evidence/ alone.")
    return page


def write_card_page(evidence: dict, record: Record, folder: str | Path) -> tuple[Path, Path]:
    """Write the card's figures, ``card.md`` and ``card.html`` into ``folder``; return the two pages."""
    folder = Path(folder)
    with matplotlib.rc_context():
        set_style()
        plt.rcParams["savefig.dpi"] = CARD_DPI  # figures inline in one HTML file: a lighter page
        page = card_page(evidence, record, folder)
    markdown, page_html = folder / CARD_FILE, folder / HTML_FILE
    markdown.write_text(page.markdown(folder))
    page_html.write_text(page.html(f"Isotropy card: {evidence['run']['model']}"))
    return markdown, page_html


# --------------------------------------------------------------------------- cards side by side


def _per_layer(cards: dict[str, dict]) -> pd.DataFrame:
    """One row per (view, layer) of every card: the measures and the STS scores a reference number can face."""
    rows = []
    for evidence in cards.values():
        spearman = _sts_spearman(evidence)
        for label in evidence["run"]["views"]:
            for layer in _layers(evidence, label):
                mine = evidence["measures"]
                cell = mine[(mine.space == label) & (mine.layer == layer)]
                row = {"model": label, "layer": layer, "n_layers": evidence["run"]["n_layers"]}
                row |= {name: float(cell[name].mean()) for name in ("average_cosine", "anisotropy_baseline", "isoscore",
                                                                   "lid", "log10_iw")}
                sts = spearman[(spearman.space == label) & (spearman.layer == layer)].set_index("method").spearman
                row |= {f"sts_{method}": float(sts.get(method, np.nan)) for method in ("raw", *POST_PROCESSINGS)}
                rows.append(row)
    return pd.DataFrame(rows)


# What the papers' reference numbers are compared with: our columns of :func:`_per_layer`, and how a line names them.
COMPARED = {"anisotropy_baseline": "average cosine of random words (anisotropy baseline)",
            "sts_raw": "STS-B Spearman x 100, raw", "sts_centre": "STS-B Spearman x 100, centred",
            "sts_abtt": "STS-B Spearman x 100, all-but-the-top"}
# Rajaee & Pilehvar's slides give one BERT-base's STS-B scores, with no checkpoint name: a model of its own.
SLIDES_BERT = PaperModel("bert-base (slides)", "BERT-base (Rajaee & Pilehvar's slides)", 13)


def comparison_references(cosine_reference: dict, cosine_models: Sequence[PaperModel], counterpart,
                          sts_rows: dict) -> list[tuple]:
    """The papers' numbers a card can face, as :func:`comparison_table` takes them.

    Parameters
    ----------
    cosine_reference : dict
        Ethayarajh (2019)'s numbers per paper model, measure and layer (notebook 01's ``PAPER_REFERENCE``): its
        ``baseline_cosine`` faces the cards' anisotropy baseline.
    cosine_models : sequence of PaperModel
        Its models (notebook 01's ``PAPER_MODELS``).
    counterpart : callable
        The paper model each of ours is compared with (notebook 01's ``counterpart``: BERT for an encoder, GPT-2
        for a decoder).
    sts_rows : dict
        Rajaee & Pilehvar's BERT-base STS-B Spearman x 100 per method (notebook 03's ``SLIDES_SIX_ROWS["stsb"]``):
        ``pre-trained``, ``Mean`` and ``Mean + PCA`` face the last layer raw, centred and after all-but-the-top.

    Returns
    -------
    list of (reference, paper_models, counterpart, tolerance)
    """
    cosines = {name: {"anisotropy_baseline": measures["baseline_cosine"]}
               for name, measures in cosine_reference.items() if "baseline_cosine" in measures}
    last = SLIDES_BERT.n_layers - 1
    sts = {SLIDES_BERT.name: {"sts_raw": {last: sts_rows["pre-trained"]}, "sts_centre": {last: sts_rows["Mean"]},
                              "sts_abtt": {last: sts_rows["Mean + PCA"]}}}

    def sts_counterpart(model: str) -> str | None:
        return SLIDES_BERT.name if (counterpart(model) or "").startswith("bert") else None

    return [(cosines, [model for model in cosine_models if model.name in cosines], counterpart, 0.05),
            (sts, [SLIDES_BERT], sts_counterpart, 2.0)]


def comparison_table(cards: dict[str, dict], references: Sequence[tuple]) -> pd.DataFrame:
    """The papers' numbers beside every card's, by :func:`isolib.findings.compare_reference`.

    Parameters
    ----------
    cards : dict of str to dict
        Each model's evidence (:func:`isolib.evidence.load_evidence` of its card's folder).
    references : sequence of (reference, paper_models, counterpart, tolerance)
        As :func:`~isolib.findings.compare_reference` takes them (:func:`comparison_references`): the paper's
        numbers per model, measure and layer, its models, the paper model each of ours is compared with (itself,
        or the one it stands in for), and how far from the paper's a number of the paper's own model may be.

    Returns
    -------
    pandas.DataFrame
        One row per reference number that a card faces: ``finding`` (measure, paper model, layer), ``paper``, then
        one column per view of each card compared, with this run's value (at the same relative depth) and its status.
    """
    per_layer = _per_layer(cards)
    findings = [finding for reference, paper_models, counterpart, tolerance in references
                for finding in compare_reference(per_layer, reference, paper_models, counterpart, COMPARED,
                                                 tolerance=tolerance)]
    rows: dict[tuple, dict] = {}
    for finding in findings:
        row = rows.setdefault((finding.finding, finding.paper), {"finding": finding.finding, "paper": finding.paper})
        if finding.model != "-":
            row[finding.model] = f"{finding.ours} {STATUS_WORDS[finding.status]}"
    # A paper model no card faces (ELMo; GPT-2 without a decoder's card) is left out.
    faced = [row for row in rows.values() if len(row) > 2]
    return pd.DataFrame(faced, columns=list(dict.fromkeys(["finding", "paper", *(key for row in faced for key in row)]))
                        ).fillna("")


def _summary(cards: dict[str, dict], records: dict[str, Record]) -> pd.DataFrame:
    """Each card in one row: its model, its judged view, and how many layers each statement holds for."""
    rows = []
    for model, evidence in cards.items():
        judged = _judged_view(evidence)
        findings = [f for f in records[model].findings if f.model == judged]
        row = {"model": judged, "kind": evidence["run"]["kind"], "layers": len(_layers(evidence, judged)),
               "dim": evidence["run"]["dim"]}
        for key, statement in STATEMENTS.items():
            claims = {statement_claim(key, layer) for layer in _layers(evidence, judged)}
            judged_here = [f for f in findings if f.finding in claims]
            yes = sum(f.status == "reproduced" for f in judged_here)
            row[statement.short] = f"{yes} of {len(judged_here)}" if judged_here else "-"
        cosine = evidence["measures"]
        row["largest average cosine"] = round(float(cosine[cosine.space == judged].groupby("layer")
                                                    .average_cosine.mean().max()), 3)
        rows.append(row)
    return pd.DataFrame(rows)


def write_comparison(folders: Sequence[str | Path], references: Sequence[tuple], *, output: str | Path
                     ) -> tuple[Path, Path]:
    """Write ``COMPARISON.md`` and ``COMPARISON.html`` in ``output``: the cards in ``folders`` side by side, with the
    papers' reference numbers (:func:`comparison_table`); the two tables as ``cards.csv`` and ``reference.csv``; and
    ``RESULTS.md``, the folder's results page: each card's statement counts and where to read it."""
    from isolib.evidence import load_evidence
    from isolib.findings import read_record

    cards, records, links = {}, {}, []
    output = Path(output)
    for folder in map(Path, folders):
        evidence = load_evidence(folder)
        model = evidence["run"]["model"]
        cards[model], records[model] = evidence, read_record(folder)
        inside = folder.resolve().is_relative_to(output.resolve())
        links.append(f"[{model}]({folder.resolve().relative_to(output.resolve()).as_posix()}/{HTML_FILE})" if inside
                     else model)
    page = Page().add("h1", "Isotropy cards side by side")
    page.add("p", "Each card's judged view (a decoder behind a start token) in one row, and for each statement the "
                  "number of layers where it holds (✓ yes) of those judged. Each card says which and why: "
                  + ", ".join(links) + ".")
    summary, reference = _summary(cards, records), comparison_table(cards, references)
    page.add("table", summary)
    page.add("h2", "Beside the papers' reference numbers")
    page.add("p", "Ethayarajh (2019) gives the average cosine of random words per layer of BERT and GPT-2; Rajaee & "
                  "Pilehvar's slides the STS-B Spearman of BERT-base's last layer, raw, centred and after "
                  "all-but-the-top. Those models are not offline: an offline model stands in for each (an encoder "
                  "for BERT, the decoder for GPT-2), its number set at the same relative depth (layer / last layer) "
                  "and never judged against the paper's (· n/c). The paper's own model, run by the paper profile, "
                  "is judged within a tolerance (0.05 for a cosine, 2 points of Spearman).")
    page.add("table", reference)
    output.mkdir(parents=True, exist_ok=True)
    summary.to_csv(output / "cards.csv", index=False)  # the page's two tables, as every folder of figures/ keeps them
    reference.to_csv(output / "reference.csv", index=False)
    markdown, page_html = output / f"{COMPARISON_FILE}.md", output / f"{COMPARISON_FILE}.html"
    markdown.write_text(page.markdown(output))
    page_html.write_text(page.html("Isotropy cards side by side"))
    (output / "RESULTS.md").write_text(_results_page(records, list(map(Path, folders)), output))
    return markdown, page_html


def _results_page(records: dict, folders: Sequence[Path], output: Path) -> str:
    """The results page of a folder of cards: per model, how many statements hold and where its card is."""
    from isolib.findings.report import glossary_link

    lines = ["# Isotropy cards: results of this run", "",
             "Each model's card is judged from its own evidence: its record is the card folder's `results.json` "
             "(this folder has none of its own), and the checks are counted apart on each line. The cards side by "
             f"side, with the papers' reference numbers, are in [{COMPARISON_FILE}.md]({COMPARISON_FILE}.md). "
             f"Statuses, marks and terms: {glossary_link(output)}.", ""]
    for (model, record), folder in zip(records.items(), folders):
        inside = folder.resolve().is_relative_to(output.resolve())
        card = f" ([card]({folder.resolve().relative_to(output.resolve()).as_posix()}/{CARD_FILE}))" if inside else ""
        lines.append(f"- **{model}**{card}: {statement_counts(record.findings)}")
    return "\n".join(lines) + "\n"
