"""The embedding cache, under the user's control: list it, size it, prune it (``python -m isolib cache``).

:func:`isolib.embed.embed` stores one folder per extraction under ``<cache root>/embeddings/<key>/``
(``meta.json``, ``tokens.parquet``, ``layer_NN.npy``; ``meta.json`` and ``sentences.npy`` for the sentence
vectors of :func:`isolib.embed.sentence_embeddings`) and trusts a folder only if its final name exists
with a ``meta.json``. Reading an entry marks it used (the time of ``meta.json``). Besides entries, the
folder can hold the resumable shards of an interrupted extraction (``<key>.partial``) and leftovers of
interrupted writes or prunes (``<key>.tmp-*``, ``<key>.deleting-*``), which no run trusts.

Besides embeddings, ``<cache root>/results/<name>/`` holds the results of long, deterministic steps
(:func:`memoized`: a row of notebook 03's table, one fine-tuning run, one layer's statistics or one
model view's tables in notebook 01), one small file each, so a run
stopped half-way (or a session that ends) resumes with the steps it finished; they are listed, sized and
pruned as one entry per name.

Pruning renames an entry to ``<key>.deleting-<id>`` (one atomic step: from then on no run trusts it) and
only then deletes the files, so an interrupted prune leaves nothing half-deleted under a trusted name;
the next prune removes the leftovers.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import os
import pickle
import shutil
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd

from isolib.models import cache_root

__all__ = ["CacheEntry", "entries", "listing", "sizes", "prune", "remove_entry", "human_size", "memoized"]

# A leftover is deleted only once it has not changed for this long: a running write may still be filling it.
LEFTOVER_AGE_SECONDS = 3600
# Under the cache root, beside "embeddings": the stored values of :func:`memoized`, one folder per name.
RESULTS_FOLDER = "results"


@dataclass(frozen=True)
class CacheEntry:
    """One folder of the embedding cache.

    Attributes
    ----------
    path : Path
    status : {"complete", "partial", "leftover"}
        A trusted entry, the resumable shards of an interrupted extraction, or an untrusted leftover.
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


def _folder_size(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def _last_time(folder: Path) -> float:
    times = [path.stat().st_mtime for path in folder.rglob("*")] or [folder.stat().st_mtime]
    return max(times)


def entries(root: Path | None = None) -> list[CacheEntry]:
    """Every folder of the embedding cache and of memoized results, most recently used first."""
    folder = (root or cache_root()) / "embeddings"
    found = []
    results = (root or cache_root()) / RESULTS_FOLDER
    for path in sorted(results.iterdir()) if results.is_dir() else []:
        if path.is_dir() and "." in path.name:  # a prune's leftover
            found.append(CacheEntry(path, "leftover", "", None, (), "", "", _folder_size(path), _last_time(path)))
        elif path.is_dir():
            found.append(CacheEntry(path, "complete", "", len(list(path.glob("*.pkl"))), (), "", f"results: {path.name}",
                                    _folder_size(path), _last_time(path)))
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        if not path.is_dir():
            continue
        meta_path = path / "meta.json"
        if meta_path.exists() and "." not in path.name:
            meta = json.loads(meta_path.read_text())
            found.append(CacheEntry(path, "complete", meta["model"], meta.get("n_sentences"), tuple(meta["layers"]),
                                    meta["dtype"], _rows_stored(meta), _folder_size(path), meta_path.stat().st_mtime))
        else:
            status = "partial" if path.name.endswith(".partial") else "leftover"
            found.append(CacheEntry(path, status, "", None, (), "", "", _folder_size(path), _last_time(path)))
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


def prune(*, older_than_days: float | None = None, model: str | None = None, folders: Sequence[str] | None = None,
          everything: bool = False, dry_run: bool = False, root: Path | None = None) -> list[CacheEntry]:
    """Delete the cache entries that match every filter given, and the untrusted leftovers over an hour old.

    Do not prune the entries a running extraction is writing (``--all`` would include its ``.partial``
    shards): it would fail and have to start that extraction again.

    Parameters
    ----------
    older_than_days : float, optional
        Entries (and interrupted extractions) not used for more than this many days.
    model : str, optional
        Entries of this model (name or Hub id as given to ``embed``).
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
        If no filter is given and ``everything`` is False, or ``older_than_days`` is negative.
    """
    if older_than_days is None and model is None and not folders and not everything:
        raise ValueError("Give --older-than DAYS, --model NAME, --folder NAME or --all; a bare prune deletes nothing.")
    if older_than_days is not None and older_than_days < 0:
        raise ValueError(f"--older-than must be a number of days >= 0, got {older_than_days}.")
    cutoff = None if older_than_days is None else time.time() - older_than_days * 86400
    chosen = []
    for entry in entries(root):
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
    if not dry_run:
        for entry in chosen:
            if entry.status == "leftover":
                shutil.rmtree(entry.path)
            else:
                remove_entry(entry.path)
    return chosen


def remove_entry(path: Path) -> None:
    """Delete one entry (or ``.partial`` folder) so that no run ever trusts a half-deleted one.

    One atomic rename to ``<key>.deleting-<id>`` first (from then on no run trusts or resumes it),
    then the files; a deletion interrupted after the rename leaves a leftover that the next prune removes.
    """
    key = path.name.removesuffix(".partial")
    doomed = path.with_name(f"{key}.deleting-{uuid.uuid4().hex[:8]}")
    os.replace(path, doomed)
    shutil.rmtree(doomed)


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


def _source_files(module: ModuleType) -> list[Path]:
    path = Path(inspect.getfile(module))
    return sorted(path.parent.rglob("*.py")) if path.name == "__init__.py" else [path]


def memoized(name: str, inputs: dict, compute: Callable[[], object], *, code: Sequence[ModuleType],
             store: bool = True) -> object:
    """``compute()``, or the value it returned before for the same inputs and code.

    For long deterministic steps (a seeded clustering row, a fine-tuning run), so that a run stopped
    half-way resumes with the steps it finished. The value is stored in
    ``<cache root>/results/<name>/<key>.pkl``, written aside and renamed (an interrupted write leaves
    nothing trusted); ``key`` hashes ``inputs`` by content and the source of the ``code`` modules
    (a package: all its files), so editing the code that computes a value recomputes it.

    Parameters
    ----------
    name : str
        The kind of step (a folder of the cache: ``cache list`` shows one entry per name).
    inputs : dict
        Everything the value depends on besides the code: arrays, dataclasses, numbers, strings, and
        lists or dicts of them (seeds included; a model by its weights fingerprint).
    compute : callable
        Called without arguments when no stored value matches.
    code : sequence of module
        The modules (or packages) whose source determines the value.
    store : bool
        False: only ``compute()``, nothing read or written (a caller's ``resume=False``).
    """
    if not store:
        return compute()
    digest = hashlib.sha256()
    _feed(digest, inputs)
    for path in sorted({path for module in code for path in _source_files(module)}):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    folder = cache_root() / RESULTS_FOLDER / name
    path = folder / f"{digest.hexdigest()[:32]}.pkl"
    if path.exists():
        try:
            return pickle.loads(path.read_bytes())
        except (pickle.UnpicklingError, EOFError, AttributeError, ImportError):
            pass  # unreadable (another library version): computed again and replaced
    value = compute()
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f".{path.name}.tmp-{uuid.uuid4().hex[:8]}"
    partial.write_bytes(pickle.dumps(value))
    os.replace(partial, path)
    return value
