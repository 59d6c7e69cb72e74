"""The embedding cache, under the user's control: list, size, verify and prune it (``python -m isolib cache``).

:func:`isolib.embed.embed` stores one folder per extraction under ``<cache root>/embeddings/<key>/``
(``meta.json``, ``tokens.parquet``, ``layer_NN.npy``; ``meta.json`` and ``sentences.npy`` for the sentence
vectors of :func:`isolib.embed.sentence_embeddings`) and a ``manifest.json`` holding each file's size and
SHA-256, written before the folder gets its final name. An entry is trusted only if its final folder exists
and agrees with its manifest: every opening checks the sizes (and :mod:`isolib.embed` the array headers
against the token table and ``meta.json``), and the first opening in each process hashes every file
(:func:`isolib.integrity.manifest_problem`; :func:`verify` hashes every entry at once). A damaged entry is set aside under
``<key>.damaged-<id>`` (a leftover no run trusts) and computed again, with one warning. Reading an entry
marks it used (the time of ``meta.json``). Besides entries, the folder can hold the resumable shards of an
interrupted extraction (``<key>.partial``), leftovers of interrupted writes or prunes (``<key>.tmp-*``,
``<key>.deleting-*``) and the lock file of each key (``<key>.lock``, held while the entry is computed).

Besides embeddings, ``<cache root>/results/<name>/`` holds the results of long, deterministic steps
(:func:`isolib.steps.memoized`: a row of notebook 03's table, one fine-tuning run, one layer's statistics or one
model view's tables in notebook 01), one small file each, so a run
stopped half-way (or a session that ends) resumes with the steps it finished; they are listed, sized and
pruned as one entry per name. They are stored as data that cannot run code (JSON, arrays as raw bytes;
:func:`isolib.steps.encode_value`), behind a size and SHA-256 header; results pickled by older versions (``*.pkl``)
are never read. ``<cache root>/models/`` holds models unpacked from their packages (MPNet, 419 MB),
listed, sized and pruned like entries (the next load unpacks them again).

Pruning renames an entry to ``<key>.deleting-<id>`` (one atomic step: from then on no run trusts it) and
only then deletes the files, so an interrupted prune leaves nothing half-deleted under a trusted name;
the next prune removes the leftovers. An entry whose lock a running process holds is skipped.
"""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from filelock import FileLock, Timeout

from isolib.embed import CACHE_FORMAT, entry_problem
from isolib.integrity import (
    CacheWarning,
    cache_root,
    human_size,
    lock_path,
    manifest_problem,
    one_sentence_os_errors,
    remove_entry,
    set_aside,
)
from isolib.models import OFFLINE_MODELS
from isolib.steps import RESULT_SUFFIX, RESULTS_FOLDER

__all__ = ["CacheEntry", "entries", "listing", "sizes", "prune", "remove_entry", "verify"]

# A leftover is deleted only once it has not changed for this long: a running write may still be filling it.
LEFTOVER_AGE_SECONDS = 3600
# Under the cache root: models unpacked from their packages (:func:`isolib.models.load_model`).
MODELS_FOLDER = "models"
@dataclass(frozen=True)
class CacheEntry:
    """One folder of the embedding cache.

    Attributes
    ----------
    path : Path
    status : {"complete", "partial", "leftover", "broken", "outdated", "model"}
        A trusted entry, the resumable shards of an interrupted extraction, an untrusted leftover, an
        entry that fails its checks (``problem`` says why; the next run sets it aside), an entry of an
        older cache format (no run reads it), or a model unpacked into the cache.
    model : str
        The model's name or Hub id ("" when unknown: partial and leftover folders have no ``meta.json``).
    n_texts : int or None
    layers : tuple of int
    dtype : str
    rows : str
        What one row of the stored arrays is: ``tokens``, ``tokens without special`` (``keep_special=False``)
        or ``sentences`` (pooled sentence vectors); "" when unknown.
    size : int
        Bytes on disk.
    last_used : float
        Seconds since the epoch: when the entry was last written or read.
    problem : str
        Why a broken entry is not trusted; "" otherwise.
    """

    path: Path
    status: str
    model: str
    n_texts: int | None
    layers: tuple[int, ...]
    dtype: str
    rows: str
    size: int
    last_used: float
    problem: str = ""


# --------------------------------------------------------------------------- listing
def _folder_size(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def _last_time(folder: Path) -> float:
    times = [path.stat().st_mtime for path in folder.rglob("*")] or [folder.stat().st_mtime]
    return max(times)


def _unknown(path: Path, status: str, problem: str = "") -> CacheEntry:
    return CacheEntry(path, status, "", None, (), "", "", _folder_size(path), _last_time(path), problem)


def _embedding_entry(path: Path) -> CacheEntry:
    """One folder of ``embeddings/``, whatever state it is in: never an exception for a broken one."""

    meta_path = path / "meta.json"
    if "." in path.name:
        return _unknown(path, "partial" if path.name.endswith(".partial") else "leftover")
    if not meta_path.exists():
        return _unknown(path, "broken", "meta.json is missing")
    try:
        meta = json.loads(meta_path.read_text())
        model, layers, dtype = str(meta["model"]), tuple(int(layer) for layer in meta["layers"]), str(meta["dtype"])
        n_texts = meta.get("n_sentences")
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as error:
        return _unknown(path, "broken", f"meta.json is unreadable ({type(error).__name__}: {error})")
    status, problem = "complete", ""
    if meta.get("format") != CACHE_FORMAT:
        status = "outdated"
    elif problem := manifest_problem(path, full=False):
        status = "broken"
    return CacheEntry(path, status, model, n_texts, layers, dtype, _rows_stored(meta), _folder_size(path),
                      meta_path.stat().st_mtime, problem)


def _model_name(folder: Path) -> str:
    """The offline name of a model unpacked into the cache (its folder is the Hub id's last part)."""
    return next((model.name for model in OFFLINE_MODELS.values() if model.checkpoint.split("/")[-1] == folder.name),
                folder.name)


def entries(root: Path | None = None) -> list[CacheEntry]:
    """Every folder of the embedding cache, of memoized results and of unpacked models, most recently used first.

    A folder that cannot be read as an entry (an invalid ``meta.json``, a file missing or of the wrong
    size) is listed as ``broken``, never an exception, so that it can be pruned.
    """
    root = root or cache_root()
    found = []
    results = root / RESULTS_FOLDER
    for path in sorted(results.iterdir()) if results.is_dir() else []:
        if path.is_dir() and "." in path.name:  # a prune's leftover
            found.append(_unknown(path, "leftover"))
        elif path.is_dir():
            found.append(CacheEntry(path, "complete", "", len(list(path.glob(f"*{RESULT_SUFFIX}"))), (), "",
                                    f"results: {path.name}", _folder_size(path), _last_time(path)))
    models = root / MODELS_FOLDER
    for path in sorted(models.iterdir()) if models.is_dir() else []:
        if path.is_dir():
            complete = (path / ".complete").exists() and not path.name.startswith(".")
            found.append(CacheEntry(path, "model" if complete else "leftover", _model_name(path) if complete else "",
                                    None, (), "", "model files" if complete else "", _folder_size(path),
                                    _last_time(path)))
    folder = root / "embeddings"
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        if path.is_dir():
            found.append(_embedding_entry(path))
    return sorted(found, key=lambda entry: entry.last_used, reverse=True)


def _rows_stored(meta: dict) -> str:
    if "pooling" in meta:
        return "sentences"
    return "tokens" if meta.get("keep_special", True) else "tokens without special"



def _layers_text(layers: tuple[int, ...]) -> str:
    if not layers:
        return ""
    if len(layers) > 2 and list(layers) == list(range(layers[0], layers[-1] + 1)):
        return f"{layers[0]}-{layers[-1]}"
    return ",".join(map(str, layers))


def listing(found: list[CacheEntry]) -> pd.DataFrame:
    """A readable table of cache entries: model, texts, rows, layers, dtype, size, last used, status, folder."""
    return pd.DataFrame({
        "model": [entry.model or "-" for entry in found],
        "texts": [entry.n_texts if entry.n_texts is not None else "-" for entry in found],
        "rows": [entry.rows or "-" for entry in found],
        "layers": [_layers_text(entry.layers) or "-" for entry in found],
        "dtype": [entry.dtype or "-" for entry in found],
        "size": [human_size(entry.size) for entry in found],
        "last used": [time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.last_used)) for entry in found],
        "status": [entry.status for entry in found],
        "folder": [entry.path.name for entry in found],
    }, columns=["model", "texts", "rows", "layers", "dtype", "size", "last used", "status", "folder"])


def sizes(found: list[CacheEntry]) -> pd.DataFrame:
    """Entries and disk use per model (partial and leftover folders apart), with a total row."""
    label = {entry.path: entry.model or ("(stored results)" if entry.rows.startswith("results") else f"({entry.status})")
             for entry in found}
    table = pd.DataFrame({"model": [label[entry.path] for entry in found],
                          "bytes": [entry.size for entry in found]}, columns=["model", "bytes"])
    per_model = table.groupby("model", sort=True).bytes.agg(["count", "sum"]).reset_index()
    per_model.loc[len(per_model)] = ["total", int(per_model["count"].sum()), int(per_model["sum"].sum())]
    return pd.DataFrame({"model": per_model.model, "entries": per_model["count"].astype(int),
                         "size": per_model["sum"].map(human_size)})



def _try_lock(path: Path) -> FileLock | None:
    """The lock at ``path`` acquired without waiting, or None if a running process holds it."""
    lock = FileLock(path, timeout=0)
    try:
        lock.acquire()
    except Timeout:
        return None
    return lock


def prune(*, older_than_days: float | None = None, model: str | None = None, folders: Sequence[str] | None = None,
          everything: bool = False, dry_run: bool = False, root: Path | None = None) -> list[CacheEntry]:
    """Delete the cache entries that match every filter given, and the untrusted leftovers over an hour old.

    Broken entries, entries of an older cache format and unpacked models are pruned like the others.
    An entry whose lock a running process holds (it is computing that entry) is skipped with a
    :class:`CacheWarning`; lock files nobody holds are removed. A symbolic link (an entry or a lock
    file) is never followed nor deleted: it is skipped with a :class:`CacheWarning`, and so is the entry
    whose lock file is one.

    Parameters
    ----------
    older_than_days : float, optional
        Entries (and interrupted extractions) not used for more than this many days.
    model : str, optional
        Entries of this model (name or Hub id as given to ``embed``), its unpacked files included.
    folders : sequence of str, optional
        Entries by their folder name (the last column of ``cache list``), e.g. those a changed
        study no longer reads.
    everything : bool
        Every entry; needed when no filter is given, so that a bare ``prune`` deletes nothing by accident.
    dry_run : bool
        Only return what would be deleted.

    Returns
    -------
    list of CacheEntry
        What was (or would be) deleted.

    Raises
    ------
    ValueError
        If no filter is given and ``everything`` is False, or ``older_than_days`` is negative, NaN or
        infinite.
    CacheError
        If an entry or lock file cannot be deleted (a read-only cache, a folder where a lock file belongs).
    """
    if older_than_days is None and model is None and not folders and not everything:
        raise ValueError("Give --older-than DAYS, --model NAME, --folder NAME or --all; a bare prune deletes nothing.")
    # NaN compares false with every age, so "not used since NaN days ago" would choose every entry.
    if older_than_days is not None and not 0 <= older_than_days < math.inf:
        raise ValueError(f"--older-than must be a finite number of days >= 0, got {older_than_days}.")
    cutoff = None if older_than_days is None else time.time() - older_than_days * 86400
    root = root or cache_root()
    found = entries(root)
    links = _links_left_alone([entry.path for entry in found] + sorted((root / "embeddings").glob("*.lock")))
    chosen = []
    for entry in found:
        if entry.path in links or (entry.path.parent.name == "embeddings" and lock_path(entry.path) in links):
            continue
        if entry.status == "leftover":
            if entry.last_used < time.time() - LEFTOVER_AGE_SECONDS:
                chosen.append(entry)
            continue
        if model is not None and entry.model != model:  # partial folders have no known model
            continue
        if folders and entry.path.name not in folders:
            continue
        if cutoff is not None and entry.last_used >= cutoff:
            continue
        chosen.append(entry)
    if dry_run:
        return chosen
    removed = []
    with one_sentence_os_errors(root):
        for entry in chosen:
            in_embeddings = entry.path.parent.name == "embeddings"
            lock = _try_lock(lock_path(entry.path)) if in_embeddings else None
            if in_embeddings and lock is None:
                warnings.warn(f"Skipped {entry.path.name}: a running process is computing it.", CacheWarning,
                              stacklevel=2)
                continue
            try:
                if entry.status == "leftover":
                    shutil.rmtree(entry.path, ignore_errors=True)
                elif entry.path.exists():  # a concurrent prune may have taken it
                    remove_entry(entry.path)
            finally:
                if lock is not None:
                    lock.release()
            removed.append(entry)
        _remove_free_locks(root / "embeddings", links)
    return removed


def _links_left_alone(paths: Sequence[Path]) -> set[Path]:
    """The symbolic links among ``paths``, each named in a :class:`CacheWarning`.

    Prune never follows a link (its target may lie outside the cache, and a lock file is never one)
    nor deletes it: the user put it there.
    """
    links = {path for path in paths if path.is_symlink()}
    for link in sorted(links):
        warnings.warn(f"Skipped {link}: it is a symbolic link, which prune never follows; delete the link yourself "
                      "if it is not wanted (an entry whose lock file is a link is kept until then).", CacheWarning,
                      stacklevel=3)
    return links


def _remove_free_locks(folder: Path, links: set[Path]) -> None:
    """Delete the lock files no running process holds (taken first, so none is deleted under a holder), but no link."""
    for path in sorted(folder.glob("*.lock")) if folder.is_dir() else []:
        if path in links:
            continue
        lock = _try_lock(path)
        if lock is not None:
            path.unlink(missing_ok=True)
            lock.release()


def verify(root: Path | None = None) -> list[CacheEntry]:
    """Hash every file of every embedding entry against its manifest; set aside the damaged ones.

    Returns
    -------
    list of CacheEntry
        The damaged entries (``problem`` says why), under the names they were set aside as; the next
        run that asks for one computes it again.
    """

    damaged = []
    for entry in entries(root):
        if entry.status not in ("complete", "broken") or entry.path.parent.name != "embeddings":
            continue
        problem = entry.problem or entry_problem(entry.path)
        if problem:
            with warnings.catch_warnings(), one_sentence_os_errors(root):
                warnings.simplefilter("ignore", CacheWarning)  # the caller reports them
                aside = set_aside(entry.path, problem)
            damaged.append(dataclasses.replace(entry, path=aside, status="broken", problem=problem))
    return damaged


