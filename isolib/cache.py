"""The embedding cache, under the user's control: list, size, verify and prune it (``python -m isolib cache``).

:func:`isolib.embed.embed` stores one folder per extraction under ``<cache root>/embeddings/<key>/``
(``meta.json``, ``tokens.parquet``, ``layer_NN.npy``; ``meta.json`` and ``sentences.npy`` for the sentence
vectors of :func:`isolib.embed.sentence_embeddings`) and a ``manifest.json`` holding each file's size and
SHA-256, written before the folder gets its final name. An entry is trusted only if its final folder exists
and agrees with its manifest: every opening checks the sizes (and :mod:`isolib.embed` the array headers
against the token table and ``meta.json``), and the first opening in each process hashes every file
(:func:`manifest_problem`; :func:`verify` hashes every entry at once). A damaged entry is set aside under
``<key>.damaged-<id>`` (a leftover no run trusts) and computed again, with one warning. Reading an entry
marks it used (the time of ``meta.json``). Besides entries, the folder can hold the resumable shards of an
interrupted extraction (``<key>.partial``), leftovers of interrupted writes or prunes (``<key>.tmp-*``,
``<key>.deleting-*``) and the lock file of each key (``<key>.lock``, held while the entry is computed).

Besides embeddings, ``<cache root>/results/<name>/`` holds the results of long, deterministic steps
(:func:`memoized`: a row of notebook 03's table, one fine-tuning run, one layer's statistics or one
model view's tables in notebook 01), one small file each, so a run
stopped half-way (or a session that ends) resumes with the steps it finished; they are listed, sized and
pruned as one entry per name. They are stored as data that cannot run code (JSON, arrays as raw bytes;
:func:`encode_value`), behind a size and SHA-256 header; results pickled by older versions (``*.pkl``)
are never read. ``<cache root>/models/`` holds models unpacked from their packages (MPNet, 419 MB),
listed, sized and pruned like entries (the next load unpacks them again).

Pruning renames an entry to ``<key>.deleting-<id>`` (one atomic step: from then on no run trusts it) and
only then deletes the files, so an interrupted prune leaves nothing half-deleted under a trusted name;
the next prune removes the leftovers. An entry whose lock a running process holds is skipped.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import errno
import hashlib
import importlib
import json
import math
import os
import pickle
import shutil
import time
import uuid
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
from filelock import FileLock, Timeout

from isolib.computation import computation_digest
from isolib.errors import IsolibError, os_error_text
from isolib.models import OFFLINE_MODELS, cache_root

__all__ = ["CacheEntry", "CacheError", "CacheWarning", "entries", "listing", "sizes", "prune", "remove_entry",
           "verify", "human_size", "memoized", "encode_value", "decode_value"]

# A leftover is deleted only once it has not changed for this long: a running write may still be filling it.
LEFTOVER_AGE_SECONDS = 3600
# Under the cache root, beside "embeddings": the stored values of :func:`memoized`, one folder per name.
RESULTS_FOLDER = "results"
# Under the cache root: models unpacked from their packages (:func:`isolib.models.load_model`).
MODELS_FOLDER = "models"
# In every entry: each file's size and SHA-256 at write time.
MANIFEST = "manifest.json"
# Version of the stored results' layout (:func:`memoized`): header line, then the encoded value.
RESULT_FORMAT = 1
RESULT_SUFFIX = ".jsonl"
HASH_CHUNK_BYTES = 16 << 20


class CacheError(IsolibError):
    """The cache cannot hold or serve an entry: a full disk, or an entry deleted while it was read."""


class CacheWarning(UserWarning):
    """A damaged cache entry or stored result was set aside and is computed again."""


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


# --------------------------------------------------------------------------- integrity
def file_sha256(path: Path) -> str:
    """SHA-256 of a file, read in chunks (about 1.5 GB/s on one core)."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        while chunk := stream.read(HASH_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def write_manifest(folder: Path) -> None:
    """Record the size and SHA-256 of every file of ``folder`` in its ``manifest.json`` (written last)."""
    files = {path.name: {"size": path.stat().st_size, "sha256": file_sha256(path)}
             for path in sorted(folder.iterdir()) if path.is_file() and path.name != MANIFEST}
    write_text(folder / MANIFEST, json.dumps({"files": files}, indent=1))


# Files hashed in this process, by (path, inode, size, mtime, expected hash): each is hashed once per process.
_HASHED: set[tuple] = set()


def manifest_problem(folder: Path, *, full: bool = True, required: Sequence[str] = ()) -> str:
    """Why ``folder`` disagrees with its manifest ("" if it agrees).

    Sizes are always compared; with ``full``, each file is also hashed, once per process (a file
    already hashed here, unchanged since, is not read again). ``required``: files the manifest must list.
    """
    try:
        files = json.loads((folder / MANIFEST).read_text())["files"]
        records = {str(name): (int(record["size"]), str(record["sha256"])) for name, record in files.items()}
    except FileNotFoundError:
        return f"it has no {MANIFEST}"
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return f"its {MANIFEST} is unreadable"
    if missing := [name for name in required if name not in records]:
        return f"its {MANIFEST} does not list {missing[0]}"
    for name, (size, sha256) in records.items():
        path = folder / name
        try:
            stat = path.stat()
        except FileNotFoundError:
            return f"{name} is missing"
        if stat.st_size != size:
            return f"{name} has {stat.st_size} bytes where {size} were written"
        seen = (str(path), stat.st_ino, stat.st_size, stat.st_mtime_ns, sha256)
        if full and seen not in _HASHED:
            if file_sha256(path) != sha256:
                return f"{name} does not match the checksum recorded when it was written"
            _HASHED.add(seen)
    return ""


def set_aside(folder: Path, problem: str) -> Path:
    """Rename a damaged entry or stored result to ``<name>.damaged-<id>`` (no run trusts it; prune removes it) and
    warn once."""
    aside = folder.with_name(f"{folder.name}.damaged-{uuid.uuid4().hex[:8]}")
    os.replace(folder, aside)
    warnings.warn(f"The cache entry {folder} was damaged ({problem}); it was set aside as {aside.name} "
                  "and is computed again.", CacheWarning, stacklevel=3)
    return aside


# --------------------------------------------------------------------------- space
def disk_full_error(folder: Path, needed: int) -> CacheError:
    """The one sentence of a full disk: where, how much is needed, and the fix."""
    free = shutil.disk_usage(folder).free if folder.exists() else 0
    return CacheError(
        f"The cache folder {folder} has {human_size(free)} free but this step needs {human_size(needed)}; "
        "free space there (python -m isolib cache prune --older-than DAYS) or set ISOLIB_CACHE_DIR to a "
        "folder on a larger disk, then run again (finished shards are kept).")


def ensure_space(folder: Path, needed: int) -> None:
    """Raise :class:`CacheError` unless ``folder``'s disk has ``needed`` bytes free (checked before writing)."""
    if shutil.disk_usage(folder).free < needed:
        raise disk_full_error(folder, needed)


def is_disk_full(error: OSError) -> bool:
    """Whether an OSError means no space (or no quota) is left (pyarrow's errors say so only in their text)."""
    return error.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)) or os.strerror(errno.ENOSPC) in str(error)


def reserve(path: Path) -> None:
    """Allocate a file's blocks now, so a full disk fails here (ENOSPC) and never later in a memory map (SIGBUS).

    Where the system has no ``posix_fallocate`` (macOS, Windows), only :func:`ensure_space`'s check before
    writing guards against a full disk.
    """
    if not hasattr(os, "posix_fallocate"):
        return
    with open(path, "r+b") as stream:
        try:
            os.posix_fallocate(stream.fileno(), 0, os.fstat(stream.fileno()).st_size)
        except OSError as error:
            if error.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):  # a filesystem without it
                raise


def write_text(path: Path, text: str) -> None:
    """Write a small text file, a full disk raising :class:`CacheError` (one sentence) instead of a bare OSError."""
    try:
        path.write_text(text)
    except OSError as error:
        if is_disk_full(error):
            raise disk_full_error(path.parent, len(text.encode())) from None
        raise


@contextlib.contextmanager
def one_sentence_os_errors(root: Path | None = None):
    """Raise an OSError on a path inside the cache as a :class:`CacheError` of one sentence: the path, what is
    wrong with it (read-only, a folder where a file belongs, a link, no permission) and the fix.

    Other OSErrors (a model's files, a file a concurrent prune took) pass unchanged.
    """
    try:
        yield
    except OSError as error:
        inside = error.filename is not None and Path(error.filename).absolute().is_relative_to(
            (root or cache_root()).absolute())
        if not inside or isinstance(error, FileNotFoundError):
            raise
        raise CacheError(os_error_text(error, "ISOLIB_CACHE_DIR")) from None


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
    from isolib.embed import CACHE_FORMAT

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


def human_size(n_bytes: float) -> str:
    """``1536`` -> ``1.5 KB`` (powers of 1024)."""
    for unit in ("B", "KB", "MB", "GB"):
        if n_bytes < 1024 or unit == "GB":
            return f"{n_bytes:.0f} {unit}" if unit == "B" else f"{n_bytes:.1f} {unit}"
        n_bytes /= 1024
    return ""  # unreachable


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


def lock_path(folder: Path) -> Path:
    """The lock file of an entry's key (``<key>.lock`` beside it), held while the entry is computed."""
    return folder.with_name(f"{folder.name.split('.')[0]}.lock")


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


def remove_entry(path: Path) -> None:
    """Delete one entry (or ``.partial`` folder) so that no run ever trusts a half-deleted one.

    One atomic rename to ``<key>.deleting-<id>`` first (from then on no run trusts or resumes it),
    then the files; a deletion interrupted after the rename leaves a leftover that the next prune removes.
    """
    key = path.name.removesuffix(".partial")
    doomed = path.with_name(f"{key}.deleting-{uuid.uuid4().hex[:8]}")
    os.replace(path, doomed)
    shutil.rmtree(doomed)


def verify(root: Path | None = None) -> list[CacheEntry]:
    """Hash every file of every embedding entry against its manifest; set aside the damaged ones.

    Returns
    -------
    list of CacheEntry
        The damaged entries (``problem`` says why), under the names they were set aside as; the next
        run that asks for one computes it again.
    """
    from isolib.embed import entry_problem

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


# --------------------------------------------------------------------------- memoized
def _feed(digest, value) -> None:
    """Add ``value`` to a hash, by content: arrays by dtype, shape and bytes; containers item by item."""
    if isinstance(value, np.ndarray):
        contiguous = np.ascontiguousarray(value)
        digest.update(f"ndarray{contiguous.dtype.str}{contiguous.shape}".encode())
        digest.update(contiguous.view(np.uint8).reshape(-1) if contiguous.dtype != object else pickle.dumps(contiguous))
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        digest.update(type(value).__qualname__.encode())
        _feed(digest, {field.name: getattr(value, field.name) for field in dataclasses.fields(value)})
    elif isinstance(value, dict):
        digest.update(b"dict")
        for key in sorted(value, key=str):
            _feed(digest, str(key))
            _feed(digest, value[key])
    elif isinstance(value, (list, tuple)):
        digest.update(f"{type(value).__name__}{len(value)}".encode())
        for item in value:
            _feed(digest, item)
    elif value is None or isinstance(value, (str, int, float, bool, np.integer, np.floating)):
        digest.update(f"{type(value).__name__}:{value!r}".encode())
    else:
        raise TypeError(f"memoized cannot hash an input of type {type(value).__name__}.")


# Stored results are JSON: lists are JSON arrays, every other container a JSON object tagged by "$".
# Decoding builds only these types (and dataclasses of isolib), so a stored file can never run code.
_TAG = "$"


def _encode_array(array: np.ndarray) -> dict:
    if array.dtype == object:
        return {_TAG: "ndarray", "dtype": "object", "shape": list(array.shape),
                "items": [encode_value(item) for item in array.reshape(-1)]}
    if array.dtype.kind == "V" or array.dtype.hasobject:
        raise TypeError(f"memoized cannot store an array of dtype {array.dtype}.")
    contiguous = np.ascontiguousarray(array)
    return {_TAG: "ndarray", "dtype": contiguous.dtype.str, "shape": list(contiguous.shape),
            "data": base64.b64encode(contiguous.tobytes()).decode("ascii")}


def _decode_array(node: dict) -> np.ndarray:
    shape = tuple(int(n) for n in node["shape"])
    if node["dtype"] == "object":
        array = np.empty(len(node["items"]), dtype=object)
        array[:] = [decode_value(item) for item in node["items"]]  # slice assignment: items stay whole
        return array.reshape(shape)
    dtype = np.dtype(node["dtype"])
    if dtype.hasobject or dtype.kind == "V":
        raise ValueError(f"a stored array of dtype {dtype} is not allowed")
    return np.frombuffer(base64.b64decode(node["data"], validate=True), dtype=dtype).reshape(shape).copy()


def _encode_values(values) -> dict:
    """A column's or an index's values, dtype included (numpy, categorical, string or another pandas dtype)."""
    dtype = values.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return {_TAG: "categorical", "codes": _encode_array(np.asarray(values.codes)),
                "categories": _encode_index(dtype.categories), "ordered": bool(dtype.ordered)}
    if isinstance(dtype, pd.StringDtype):
        return {_TAG: "strings", "storage": dtype.storage, "na": "NA" if dtype.na_value is pd.NA else "nan",
                "items": [None if pd.isna(item) else str(item) for item in values]}
    if isinstance(dtype, np.dtype):
        return _encode_array(np.asarray(values))
    return {_TAG: "extension", "dtype": str(dtype),
            "items": [{_TAG: "NA"} if item is pd.NA else encode_value(item) for item in values]}


def _decode_values(node: dict):
    kind = node[_TAG]
    if kind == "categorical":
        return pd.Categorical.from_codes(_decode_array(node["codes"]),
                                         dtype=pd.CategoricalDtype(_decode_index(node["categories"]),
                                                                   ordered=bool(node["ordered"])))
    if kind == "strings":
        dtype = pd.StringDtype(node["storage"], na_value=pd.NA if node["na"] == "NA" else np.nan)
        return pd.array([dtype.na_value if item is None else str(item) for item in node["items"]], dtype=dtype)
    if kind == "extension":
        items = [pd.NA if isinstance(item, dict) and item.get(_TAG) == "NA" else decode_value(item)
                 for item in node["items"]]
        return pd.array(items, dtype=pd.api.types.pandas_dtype(node["dtype"]))
    return _decode_array(node)


def _encode_index(index: pd.Index) -> dict:
    if isinstance(index, pd.RangeIndex):
        return {_TAG: "range", "start": index.start, "stop": index.stop, "step": index.step,
                "name": encode_value(index.name)}
    if isinstance(index, pd.MultiIndex):
        return {_TAG: "multiindex", "levels": [_encode_index(level) for level in index.levels],
                "codes": [_encode_array(np.asarray(codes)) for codes in index.codes],
                "names": [encode_value(name) for name in index.names]}
    return {_TAG: "index", "values": _encode_values(index.array if not isinstance(index.dtype, np.dtype)
                                                     else index.to_numpy()),
            "name": encode_value(index.name)}


def _decode_index(node: dict) -> pd.Index:
    kind = node[_TAG]
    if kind == "range":
        return pd.RangeIndex(int(node["start"]), int(node["stop"]), int(node["step"]), name=decode_value(node["name"]))
    if kind == "multiindex":
        return pd.MultiIndex(levels=[_decode_index(level) for level in node["levels"]],
                             codes=[_decode_array(codes) for codes in node["codes"]],
                             names=[decode_value(name) for name in node["names"]])
    if kind != "index":
        raise ValueError(f"a stored index of kind {kind!r} is not allowed")
    values = _decode_values(node["values"])
    return pd.Index(values, dtype=values.dtype, name=decode_value(node["name"]))


def encode_value(value):
    """A JSON-ready form of a stored result that :func:`decode_value` turns back into an equal value.

    Types kept exactly: None, bool, int, float, str, numpy scalars and arrays (bytes and dtype),
    lists, tuples, dicts (any of these as keys), pandas DataFrames, Series and Indexes (dtypes, index
    and names included) and dataclasses defined in :mod:`isolib`.

    Raises
    ------
    TypeError
        For any other type, which :func:`memoized` then cannot store.
    """
    if value is None or isinstance(value, (bool, str)) or type(value) is int:
        return value
    if type(value) is float:
        return {_TAG: "float", "hex": value.hex()}  # exact, NaN and infinities included
    if isinstance(value, np.generic):
        return {_TAG: "scalar", "array": _encode_array(np.asarray(value).reshape(1))}
    if isinstance(value, np.ndarray):
        return _encode_array(value)
    if type(value) is list:
        return [encode_value(item) for item in value]
    if type(value) is tuple:
        return {_TAG: "tuple", "items": [encode_value(item) for item in value]}
    if type(value) is dict:
        return {_TAG: "dict", "items": [[encode_value(key), encode_value(item)] for key, item in value.items()]}
    if isinstance(value, pd.DataFrame):
        return {_TAG: "dataframe", "columns": _encode_index(value.columns), "index": _encode_index(value.index),
                "data": [_encode_values(value.iloc[:, i].array if not isinstance(value.dtypes.iloc[i], np.dtype)
                                        else value.iloc[:, i].to_numpy()) for i in range(value.shape[1])],
                "attrs": encode_value(dict(value.attrs))}
    if isinstance(value, pd.Series):
        return {_TAG: "series", "values": _encode_values(value.array if not isinstance(value.dtype, np.dtype)
                                                         else value.to_numpy()),
                "index": _encode_index(value.index), "name": encode_value(value.name),
                "attrs": encode_value(dict(value.attrs))}
    if isinstance(value, pd.Index):
        return _encode_index(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        kind = type(value)
        if not kind.__module__.split(".")[0] == "isolib" or not all(field.init for field in dataclasses.fields(value)):
            raise TypeError(f"memoized can only store dataclasses of isolib, not {kind.__module__}.{kind.__qualname__}.")
        return {_TAG: "dataclass", "module": kind.__module__, "qualname": kind.__qualname__,
                "fields": {field.name: encode_value(getattr(value, field.name)) for field in dataclasses.fields(value)}}
    raise TypeError(f"memoized cannot store a value of type {type(value).__name__}.")


def decode_value(node):
    """The value :func:`encode_value` encoded; ValueError (or KeyError, TypeError) for anything else."""
    if node is None or isinstance(node, (bool, str, int)):
        return node
    if isinstance(node, list):
        return [decode_value(item) for item in node]
    if not isinstance(node, dict):
        raise ValueError(f"a stored {type(node).__name__} is not allowed")
    kind = node[_TAG]
    if kind == "float":
        return float.fromhex(node["hex"])
    if kind == "scalar":
        return _decode_array(node["array"])[0]
    if kind == "ndarray":
        return _decode_array(node)
    if kind == "tuple":
        return tuple(decode_value(item) for item in node["items"])
    if kind == "dict":
        return {decode_value(key): decode_value(item) for key, item in node["items"]}
    if kind == "dataframe":
        columns = _decode_index(node["columns"])
        frame = pd.DataFrame({i: _decode_values(data) for i, data in enumerate(node["data"])},
                             index=_decode_index(node["index"]))
        frame.columns = columns
        frame.attrs.update(decode_value(node["attrs"]))
        return frame
    if kind == "series":
        series = pd.Series(_decode_values(node["values"]), index=_decode_index(node["index"]),
                           name=decode_value(node["name"]))
        series.attrs.update(decode_value(node["attrs"]))
        return series
    if kind in ("range", "multiindex", "index"):
        return _decode_index(node)
    if kind == "dataclass":
        module, qualname = str(node["module"]), str(node["qualname"])
        if module.split(".")[0] != "isolib":
            raise ValueError(f"a stored dataclass of {module} is not allowed")
        kind_class = importlib.import_module(module)  # a module of isolib: code this process already trusts
        for part in qualname.split("."):
            kind_class = getattr(kind_class, part)
        if not (isinstance(kind_class, type) and dataclasses.is_dataclass(kind_class)):
            raise ValueError(f"{module}.{qualname} is not a dataclass")
        return kind_class(**{name: decode_value(item) for name, item in node["fields"].items()})
    raise ValueError(f"a stored value of kind {kind!r} is not allowed")


def _read_result(path: Path):
    """The value stored at ``path``; ValueError (with why) if the file disagrees with its header or cannot be decoded."""
    data = path.read_bytes()
    header_line, _, payload = data.partition(b"\n")
    try:
        header = json.loads(header_line)
        size, sha256 = int(header["size"]), str(header["sha256"])
        if header["format"] != RESULT_FORMAT:
            raise ValueError(f"it has format {header['format']!r}, not {RESULT_FORMAT}")
    except (ValueError, KeyError, TypeError, RecursionError) as error:
        raise ValueError(f"its header is unreadable ({error})") from None
    if len(payload) != size:
        raise ValueError(f"it holds {len(payload)} bytes where {size} were written")
    if hashlib.sha256(payload).hexdigest() != sha256:
        raise ValueError("it does not match the checksum recorded when it was written")
    try:
        return decode_value(json.loads(payload))
    except Exception as error:  # whatever a damaged value makes the decoder raise (a RecursionError too): not trusted
        raise ValueError(f"it cannot be decoded ({type(error).__name__}: {error})") from None


def _write_result(path: Path, value) -> None:
    """Store ``value`` at ``path``: a header line (format, size, SHA-256) then the encoded value, written aside."""
    payload = json.dumps(encode_value(value), separators=(",", ":"), allow_nan=False).encode()
    header = json.dumps({"format": RESULT_FORMAT, "size": len(payload), "sha256": hashlib.sha256(payload).hexdigest()})
    partial = path.with_name(f".{path.name}.tmp-{uuid.uuid4().hex[:8]}")
    try:
        partial.write_bytes(header.encode() + b"\n" + payload)
        os.replace(partial, path)
    except OSError as error:
        partial.unlink(missing_ok=True)
        if is_disk_full(error):
            raise disk_full_error(path.parent, len(header) + 1 + len(payload)) from None
        raise


def memoized(name: str, inputs: dict, compute: Callable[[], object], *, code: Sequence[ModuleType],
             store: bool = True) -> object:
    """``compute()``, or the value it returned before for the same inputs and code.

    For long deterministic steps (a seeded clustering row, a fine-tuning run), so that a run stopped
    half-way resumes with the steps it finished. The value is stored in
    ``<cache root>/results/<name>/<key>.jsonl`` (:func:`encode_value`: data only, never code, behind a
    header with its size and SHA-256), written aside and renamed (an interrupted write leaves
    nothing trusted); ``key`` hashes ``inputs`` by content and what the ``code`` modules compute
    (:func:`isolib.computation.computation_digest`: their code and the library code they import, never
    their docstrings or comments), so editing the code that computes a value recomputes it and editing
    its prose does not. A stored value that fails its checks or cannot be decoded is set aside
    (``<key>.jsonl.damaged-<id>``) and computed again, with one :class:`CacheWarning`; a value pickled by
    an older version (``<key>.pkl``) is never read, only replaced.

    Parameters
    ----------
    name : str
        The kind of step (a folder of the cache: ``cache list`` shows one entry per name).
    inputs : dict
        Everything the value depends on besides the code: arrays, dataclasses, numbers, strings, and
        lists or dicts of them (seeds included; a model by its weights fingerprint).
    compute : callable
        Called without arguments when no stored value matches; it returns what :func:`encode_value` takes.
    code : sequence of module
        The modules (or packages) that compute the value; the library modules they import count too.
    store : bool
        False: only ``compute()``, nothing read or written (a caller's ``resume=False``).

    Raises
    ------
    TypeError
        If an input cannot be hashed, or the computed value cannot be stored.
    CacheError
        If the stored value cannot be read or written (a read-only cache, a folder where its file belongs).
    """
    if not store:
        return compute()
    digest = hashlib.sha256()
    _feed(digest, inputs)
    digest.update(computation_digest(code).encode())
    folder = cache_root() / RESULTS_FOLDER / name
    key = digest.hexdigest()[:32]
    path = folder / f"{key}{RESULT_SUFFIX}"
    with one_sentence_os_errors():
        try:
            return _read_result(path)
        except FileNotFoundError:
            pass
        except ValueError as problem:
            set_aside(path, str(problem))
    value = compute()
    with one_sentence_os_errors():
        folder.mkdir(parents=True, exist_ok=True)
        _write_result(path, value)
        (folder / f"{key}.pkl").unlink(missing_ok=True)  # a pickle of an older version: never read, now replaced
    return value
