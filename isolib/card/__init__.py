"""An isotropy report card for any model: every measure of notebook 05 per layer, judged, on one page.

``python -m isolib card MODEL`` (or :func:`make_card`) measures one model, an offline name, a model folder
or a Hub id, on running text and on STS-B dev, and writes one folder: ``card.md`` and ``card.html`` (the
figures inline), the figures, the evidence (``evidence/``) and the record of every statement
(``results.json``). Per layer (and, for a decoder, per view of its first position):

* every measure of :mod:`isolib.measures` with its interval over token samples, and which measures rank the
  layers as the average cosine does;
* for a decoder, its attention sink: the first position's norm against the others' and the share of
  attention it draws, with position 1 as the control;
* rogue dimensions (the top coordinates' share of the average cosine, against a random rotation);
* what centring, all-but-the-top, whitening and standardisation change;
* the local intrinsic dimension against a static baseline at the same number of points; the clusters, with
  artefact groups flagged (:func:`isolib.findings.artefact_reason`);
* STS-B dev with and without each post-processing, paired over sentence pairs.

Every statement is a finding of :mod:`isolib.findings` (kind, control, interval), so a card never says
more than its numbers. The parts: :mod:`~isolib.card.settings` (what a card runs with, checked),
:mod:`~isolib.card.compute` (the evidence), :mod:`~isolib.card.claims` (the statements) and
:mod:`~isolib.card.page` (the page, and several cards side by side with the papers' numbers).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from isolib.card.settings import DEFAULT_TOKEN_BUDGET, CardSettings, card_folder_name

__all__ = ["DEFAULT_TOKEN_BUDGET", "CardSettings", "Card", "make_card", "default_folder"]


@dataclass(frozen=True)
class Card:
    """A card written: its folder, its two pages, and its record of statements."""

    folder: Path
    markdown: Path
    html: Path
    record: object


def default_folder(model: str) -> Path:
    """Where ``python -m isolib card MODEL`` writes without ``--out``: ``build/cards/<model>/``."""
    from isolib import project

    return project.BUILD_DIR / "cards" / card_folder_name(model)


def make_card(model: str, settings: CardSettings = CardSettings(), *, out: str | Path | None = None) -> Card:
    """Measure ``model``, judge every statement and write its card into ``out`` (default :func:`default_folder`).

    Raises
    ------
    isolib.errors.ModelError
        In one sentence, for a name no model answers to or a model without hidden states.
    ValueError
        In one sentence, for a setting a card cannot run with, or a corpus too small for the token budget.
    """
    from isolib.card import claims
    from isolib.card.compute import card_evidence
    from isolib.card.page import write_card_page
    from isolib.evidence import load_evidence, save_evidence
    from isolib.findings import write_record
    from isolib.runner import peak_memory_gib

    settings.check()
    folder = Path(out) if out is not None else default_folder(model)
    started = time.perf_counter()
    evidence = card_evidence(model, settings)
    evidence["run"] |= {"wall_minutes": (time.perf_counter() - started) / 60, "peak_gib": peak_memory_gib()}
    save_evidence(folder, evidence)
    # Judged from what was stored, as a re-judging would: the card's page replaces a RESULTS.md.
    record = claims.record(load_evidence(folder))
    write_record(record, folder)
    markdown, html = write_card_page(evidence, record, folder)
    return Card(folder, markdown, html, record)
