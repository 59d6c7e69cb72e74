"""The committed results of a notebook, checked before anything is rerun against them or read from them.

``figures/<notebook>/`` holds what the notebook's full run wrote: its tables (CSV), the tolerances they
declare (``tolerances.json``) and, for a study, its record (``results.json``).
:func:`isolib.runner.check_figures` compares them with a rerun of minutes to hours, and
``python -m isolib overview`` reads every study's record: :func:`validate_committed` refuses a
missing or damaged one first, in one sentence naming the file.
"""

from __future__ import annotations

from pathlib import Path

from isolib.errors import ResultsError


def validate_committed(notebook: str, folder: str | Path) -> None:
    """Refuse (ResultsError, one sentence naming the file) committed results of ``notebook`` that cannot be read.

    Every file is read as :func:`isolib.runner.compare_outputs` and the overview read it:

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
