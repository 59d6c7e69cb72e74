"""A study's evidence: the tables its claims read, stored beside its results, and the judging of them.

A study computes *evidence* (tables at the granularity its claims resample: per word type, per sentence
pair and seed, per seed and update, per cell) and *claims* judge it. The notebook stores the evidence with
:func:`save_evidence` in ``<output folder>/evidence/`` (tables as Parquet, anything else as JSON data,
each file's size and SHA-256 in a manifest), then :func:`judge` reads it back and writes the study's record
(``results.json``) and its ``RESULTS.md``. ``python -m isolib judge NB`` calls the same :func:`judge` on a
folder's stored evidence, so the notebook and the command cannot disagree, and re-judging needs no model
and recomputes nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path

import pandas as pd
from pyarrow import ArrowException

from isolib.errors import IsolibError
from isolib.findings.record import Record
from isolib.findings.report import write_pages
from isolib.integrity import MANIFEST, manifest_problem, write_manifest
from isolib.steps import decode_value, encode_value

__all__ = ["EVIDENCE_FOLDER", "EvidenceError", "save_evidence", "load_evidence", "judge"]

EVIDENCE_FOLDER = "evidence"


class EvidenceError(IsolibError):
    """A study's stored evidence is missing, damaged, or cannot be stored as it is."""


def _write_table(name: str, table: pd.DataFrame, folder: Path) -> None:
    path = folder / f"{name}.parquet"
    problem = ("it does not survive Parquet unchanged (mixed types in a column, or an index Parquet cannot keep); "
               "give it plain columns of one type each")
    try:
        table.to_parquet(path)
    except (ValueError, TypeError, ArrowException) as error:
        raise EvidenceError(f"The evidence table {name!r} cannot be stored: {problem} ({error}).") from None
    if not pd.read_parquet(path).equals(table):  # a claim must read exactly what was computed
        raise EvidenceError(f"The evidence table {name!r} cannot be stored: {problem}.")


def save_evidence(folder: str | Path, evidence: Mapping[str, object]) -> Path:
    """Store ``evidence`` in ``<folder>/evidence/`` (replacing what was there) and return that folder.

    Parameters
    ----------
    folder : str or Path
        The run's output folder (``figures/<notebook>/`` for the full profile).
    evidence : mapping of str to DataFrame or data
        By name: DataFrames are stored as Parquet; anything :func:`isolib.steps.encode_value` takes
        (numbers, strings, lists, dicts, arrays, Series) as JSON.

    Raises
    ------
    EvidenceError
        If a name is not a plain file name, or a table does not survive Parquet unchanged.
    """
    target = Path(folder) / EVIDENCE_FOLDER
    partial = target.with_name(f".{EVIDENCE_FOLDER}.tmp-{uuid.uuid4().hex[:8]}")
    partial.mkdir(parents=True)
    try:
        for name, value in evidence.items():
            if not name.replace("_", "").isalnum():
                raise EvidenceError(f"The evidence name {name!r} is not a plain name (letters, digits, _).")
            if isinstance(value, pd.DataFrame):
                _write_table(name, value, partial)
            else:
                (partial / f"{name}.json").write_text(json.dumps(encode_value(value), allow_nan=False))
        write_manifest(partial)
        if target.exists():
            shutil.rmtree(target)
        os.replace(partial, target)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return target


def load_evidence(folder: str | Path) -> dict[str, object]:
    """The evidence :func:`save_evidence` stored under ``folder``, each file checked against its manifest.

    Raises
    ------
    EvidenceError
        In one sentence naming the folder, if it holds no evidence or a file is damaged.
    """
    stored = Path(folder) / EVIDENCE_FOLDER
    if not (stored / MANIFEST).is_file():
        raise EvidenceError(f"{stored} holds no stored evidence: run the study's notebook to compute it.")
    if problem := manifest_problem(stored):
        raise EvidenceError(f"The evidence in {stored} is damaged ({problem}); restore it with git or rerun the "
                            "study's notebook.")
    evidence = {}
    for path in sorted(stored.iterdir()):
        if path.suffix == ".parquet":
            evidence[path.stem] = pd.read_parquet(path)
        elif path.suffix == ".json" and path.name != MANIFEST:
            evidence[path.stem] = decode_value(json.loads(path.read_text()))
    return evidence


def judge(folder: str | Path, claims: Callable[[dict], Record]) -> Record:
    """Judge the evidence stored under ``folder`` with a study's ``claims`` and write its record and page there.

    Parameters
    ----------
    folder : str or Path
        The run's output folder, holding ``evidence/``.
    claims : callable
        The study's claims: evidence in, :class:`~isolib.findings.Record` out (``isolib.studies.<study>.claims.record``).

    Returns
    -------
    Record
        What was written to ``<folder>/results.json`` (and rendered to ``<folder>/RESULTS.md``).
    """
    record = claims(load_evidence(folder))
    write_pages(record, folder)
    return record
