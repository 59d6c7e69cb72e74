"""The cache's integrity: where it is, manifests of sizes and SHA-256, damaged entries set aside, a full disk named.

Every cached folder (an embedding entry, a study's stored evidence) records each file's size and SHA-256 in
its ``manifest.json`` when it is written (:func:`write_manifest`) and is trusted only while it agrees
(:func:`manifest_problem`); what disagrees is set aside, never deleted (:func:`set_aside`). Writes that
could fill the disk say so in one sentence (:func:`disk_full_error`), as does any other OSError on a path
inside the cache (:func:`one_sentence_os_errors`). This module imports no other part of isolib's cache,
so the embeddings, the stored steps and the cache's listing all build on it.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import uuid
import warnings
from collections.abc import Sequence
from pathlib import Path

from isolib.errors import IsolibError, folder_setting, os_error_text

__all__ = ["CacheError", "CacheWarning", "MANIFEST", "cache_root", "file_sha256", "write_manifest",
           "manifest_problem", "set_aside", "disk_full_error", "ensure_space", "is_disk_full", "reserve",
           "write_text", "one_sentence_os_errors", "lock_path", "human_size", "remove_entry"]

REPO_ROOT = Path(__file__).resolve().parent.parent
# In every entry: each file's size and SHA-256 at write time.
MANIFEST = "manifest.json"
HASH_CHUNK_BYTES = 16 << 20


class CacheError(IsolibError):
    """The cache cannot hold or serve an entry: a full disk, or an entry deleted while it was read."""


class CacheWarning(UserWarning):
    """A damaged cache entry or stored result was set aside and is computed again."""



def cache_root() -> Path:
    """Root of isolib's on-disk caches: ``ISOLIB_CACHE_DIR``, default ``<repo>/.cache``.

    Raises
    ------
    CacheError
        If a file stands there.
    """
    root = Path(os.environ.get("ISOLIB_CACHE_DIR", REPO_ROOT / ".cache"))
    return folder_setting(root, "ISOLIB_CACHE_DIR", CacheError)


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



def human_size(n_bytes: float) -> str:
    """``1536`` -> ``1.5 KB`` (powers of 1024)."""
    for unit in ("B", "KB", "MB", "GB"):
        if n_bytes < 1024 or unit == "GB":
            return f"{n_bytes:.0f} {unit}" if unit == "B" else f"{n_bytes:.1f} {unit}"
        n_bytes /= 1024
    return ""  # unreachable



def lock_path(folder: Path) -> Path:
    """The lock file of an entry's key (``<key>.lock`` beside it), held while the entry is computed."""
    return folder.with_name(f"{folder.name.split('.')[0]}.lock")


def remove_entry(path: Path) -> None:
    """Delete one entry (or ``.partial`` folder) so that no run ever trusts a half-deleted one.

    One atomic rename to ``<key>.deleting-<id>`` first (from then on no run trusts or resumes it),
    then the files; a deletion interrupted after the rename leaves a leftover that the next prune removes.
    """
    key = path.name.removesuffix(".partial")
    doomed = path.with_name(f"{key}.deleting-{uuid.uuid4().hex[:8]}")
    os.replace(path, doomed)
    shutil.rmtree(doomed)
