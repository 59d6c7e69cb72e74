"""Committed results against a rerun: each input checked first, then tables within tolerance and statuses equal.

``figures/<notebook>/`` holds what the notebook's full run wrote: its tables (CSV), the tolerances they
declare (``tolerances.json``) and, for a study, its record (``results.json``). :func:`check_figures` reruns
the full profile (minutes to hours) and :func:`compare_outputs` compares; :func:`validate_committed`
refuses a missing or damaged committed input first, in one sentence naming the file (``python -m isolib
overview`` checks every study's folder with it too).
"""

from __future__ import annotations

from pathlib import Path

from isolib import project, runner
from isolib.errors import ResultsError


def validate_committed(notebook: str, folder: str | Path) -> None:
    """Refuse (ResultsError, one sentence naming the file) committed results of ``notebook`` that cannot be read.

    Every file is read as :func:`isolib.comparison.compare_outputs` and the overview read it:

    - the folder holds CSV tables, each readable (neither empty nor junk);
    - a study (:func:`isolib.studies.is_study`) has its record, ``results.json``, and it reads
      (:func:`isolib.findings.read_record`);
    - ``tolerances.json``, where there is one, parses; each table it names has its CSV, and each tolerance
      is of a known kind, names the table's columns and holds a finite number of at least 0
      (:func:`isolib.plotting.check_tolerance`).

    Parameters
    ----------
    notebook : str
        A notebook's name, e.g. ``02_cai_clusters_manifolds``.
    folder : str or Path
        Its committed results (``figures/<notebook>/``).
    """
    import pandas as pd

    from isolib.findings import RECORD_FILE, read_record
    from isolib.plotting import TOLERANCES_FILE, check_tolerance, table_tolerances
    from isolib.studies import is_study

    folder = Path(folder)

    def damaged(path: Path, problem: str) -> ResultsError:
        return ResultsError(f"{path} {problem}; restore it (git checkout) or rerun the full profile "
                            f"(python -m isolib reproduce --profile full --only {notebook}).")

    if not folder.is_dir():
        raise ResultsError(f"{folder} does not exist: there is no committed full run of {notebook} to check against.")
    tables = {}
    for path in sorted(folder.glob("*.csv")):
        try:
            tables[path.stem] = pd.read_csv(path)
        except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as error:
            raise damaged(path, f"cannot be read as a CSV table ({str(error).strip().splitlines()[0]})") from None
    if not tables:
        raise damaged(folder, "holds no CSV table")
    record = folder / RECORD_FILE
    if is_study(notebook) and not record.exists():
        raise damaged(record, f"is missing, though {notebook} is a study and its full run writes one")
    try:
        if record.exists():
            read_record(folder)
        declared = table_tolerances(folder)
    except ValueError as error:  # one sentence naming the file
        raise ResultsError(str(error)) from None
    path = folder / TOLERANCES_FILE
    for name, tolerance in declared.items():
        if name not in tables:
            raise damaged(path, f"declares tolerances of table {name}, which has no {name}.csv beside it")
        try:
            check_tolerance(name, tolerance, tables[name].columns)
        except ValueError as error:
            raise damaged(path, f"is damaged: {str(error).rstrip('.')}") from None


def compare_outputs(committed: Path, fresh: Path, *, rtol: float = 1e-4, atol: float = 1e-6) -> list[str]:
    """The differences between two output folders of a notebook, one sentence each (empty: they agree).

    Every CSV table of ``committed`` must exist in ``fresh`` with the same columns and rows: text
    cells equal, numbers within ``|a - b| <= atol + rtol * |b|`` (NaN equals NaN), or within the
    tolerance the table declares for a column from its own variability when that is larger
    (:func:`isolib.plotting.save_table`: three standard deviations of a row's replicates, half its
    interval, or an absolute number; the smaller of what the committed and the new table allow, by
    :func:`isolib.plotting.allowed_movement`, so that no value widens its own tolerance); a column
    declared None (a measured time) is not compared. The statuses of the record (``results.json``) must be
    equal, finding by finding: a number may move within its tolerance, a verdict never; a record missing from
    ``committed`` where the new run wrote one is a difference. Figures are not compared (their pixels
    change with library versions; their numbers are in the tables).
    """
    import numpy as np
    import pandas as pd

    from isolib.findings import RECORD_FILE, read_record
    from isolib.plotting import allowed_movement, table_tolerances

    declared = {**table_tolerances(fresh), **table_tolerances(committed)}
    differences = []
    tables = sorted(committed.glob("*.csv"))
    if not tables:
        differences.append(f"{committed} holds no CSV table to compare.")
    for path in tables:
        other = fresh / path.name
        if not other.exists():
            differences.append(f"{path.name}: missing from the new run.")
            continue
        old, new = pd.read_csv(path), pd.read_csv(other)
        if list(old.columns) != list(new.columns) or len(old) != len(new):
            differences.append(f"{path.name}: columns or rows differ ({old.shape} {list(old.columns)} committed, "
                               f"{new.shape} {list(new.columns)} now).")
            continue
        tolerances = declared.get(path.stem, {})
        for column in old.columns:
            a, b = old[column], new[column]
            if pd.api.types.is_numeric_dtype(a) and pd.api.types.is_numeric_dtype(b):
                if column in tolerances and tolerances[column] is None:  # a measured time: not compared
                    continue
                close = np.isclose(b.to_numpy(float), a.to_numpy(float), rtol=rtol, atol=atol, equal_nan=True)
                if column in tolerances:
                    close |= np.abs(b.to_numpy(float) - a.to_numpy(float)) <= allowed_movement(
                        old, column, tolerances[column], new)
            else:  # missing in both is equal (pandas' string dtype keeps NaN through astype(str), and NaN != NaN)
                close = ((a.isna() & b.isna()) | (a.astype(str) == b.astype(str)).fillna(False)).to_numpy(bool)
            if not close.all():
                row = int(np.flatnonzero(~close)[0])
                differences.append(f"{path.name}: column {column} differs in {int((~close).sum())} row(s), first "
                                   f"row {row}: {a.iloc[row]!r} committed, {b.iloc[row]!r} now.")
    if not (committed / RECORD_FILE).exists() and (fresh / RECORD_FILE).exists():
        differences.append(f"{RECORD_FILE}: missing from {committed}, written by the new run.")
    elif (committed / RECORD_FILE).exists():
        # Findings are matched by section, claim and model, not by position: the order of a page is no status.
        old_statuses = sorted(read_record(committed).every_status)
        new_statuses = sorted(read_record(fresh).every_status) if (fresh / RECORD_FILE).exists() else []
        if old_statuses != new_statuses:
            old_by, new_by = ({(claim, model): status for claim, model, status in statuses}
                              for statuses in (old_statuses, new_statuses))
            changed = [f"{claim} ({model}): {old_by.get((claim, model), 'absent')} -> "
                       f"{new_by.get((claim, model), 'absent')}" for claim, model in sorted(old_by.keys() | new_by.keys())
                       if old_by.get((claim, model)) != new_by.get((claim, model))]
            differences.append(f"{RECORD_FILE}: statuses differ ({len(old_statuses)} findings committed, "
                               f"{len(new_statuses)} now; " + ("; ".join(changed) or "a finding repeated or removed")
                               + ").")
    return differences


def check_figures(notebook: str, *, rtol: float = 1e-4, atol: float = 1e-6,
                  outputs: str | Path | None = None) -> list[str]:
    """Rerun ``notebook``'s full profile into ``build/check/`` and compare with its committed ``figures/`` folder.

    Returns the differences (:func:`compare_outputs`); a failing run is one difference. Every committed
    input is checked first (:func:`isolib.committed.validate_committed`): a damaged one is refused in one
    sentence before the rerun, which takes minutes to hours. ``outputs``, the folder of a full run already
    made (the figures workflow's, regenerated in place and set aside), is compared instead of a rerun.
    """
    if notebook not in project.notebook_names():
        raise ValueError(f"Unknown notebook {notebook}; notebooks are: {', '.join(project.notebook_names())}.")
    committed = project.FIGURES_DIR / notebook
    validate_committed(notebook, committed)
    if outputs is not None:
        if not Path(outputs).is_dir():
            raise ResultsError(f"{outputs} does not exist: give --outputs the folder of a full run of {notebook} "
                               "(its tables and results.json).")
        return compare_outputs(committed, Path(outputs), rtol=rtol, atol=atol)
    folder = project.BUILD_DIR / "check"
    result = runner.run_notebook(notebook, "full", folder=folder)
    if not result.ok:
        return [f"the full run of {notebook} failed: {result.error} (see {result.executed})."]
    return compare_outputs(committed, folder / "figures" / notebook, rtol=rtol, atol=atol)

