"""The committed results of a notebook, checked before anything is rerun against them or read from them.

``figures/<notebook>/`` holds what the notebook's full run wrote: its tables (CSV), the tolerances they
declare (``tolerances.json``) and, for a study, its results page (``RESULTS.md``).
:func:`isolib.runner.check_figures` compares them with a rerun of minutes to hours, and
:func:`isolib.findings.overview_text` reads every study's page: :func:`validate_committed` refuses a
missing or damaged one first, in one sentence naming the file.
"""

from __future__ import annotations

from pathlib import Path

from isolib.errors import ResultsError


def validate_committed(notebook: str, folder: str | Path | None = None) -> None:
    """Refuse (ResultsError, one sentence naming the file) committed results of ``notebook`` that cannot be read.

    Every file is read as :func:`isolib.runner.compare_outputs` and the overview read it:

    - the folder holds CSV tables, each readable (neither empty nor junk);
    - a study (:func:`isolib.runner.is_study`) has its ``RESULTS.md``, and a results page reads
      (:func:`isolib.findings.read_results`);
    - ``tolerances.json``, where there is one, parses; each table it names has its CSV, and each tolerance
      is of a known kind, names the table's columns and holds a finite number of at least 0
      (:func:`isolib.plotting.check_tolerance`).

    Parameters
    ----------
    notebook : str
        A notebook's name, e.g. ``02_cai_clusters_manifolds``.
    folder : str or Path, optional
        Its committed results (default ``figures/<notebook>/``).
    """
    import pandas as pd

    from isolib import runner
    from isolib.findings import read_results
    from isolib.plotting import TOLERANCES_FILE, check_tolerance, table_tolerances

    folder = Path(folder) if folder is not None else runner.FIGURES_DIR / notebook

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
    page = folder / "RESULTS.md"
    if runner.is_study(notebook) and not page.exists():
        raise damaged(page, f"is missing, though {notebook} is a study and its full run writes one")
    try:
        if page.exists():
            read_results(page)
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
