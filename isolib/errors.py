"""Exceptions raised by isolib.

Every error is meant to be read by a person: one sentence that says what was wrong
and, where there is one, the command that fixes it.
"""

import errno
import os
from pathlib import Path


class IsolibError(Exception):
    """Base class of all isolib errors."""


class DataError(IsolibError):
    """A dataset file is missing, corrupt or unparseable."""


class ModelError(IsolibError):
    """A model name cannot be resolved or loaded, or a layer index is out of range."""


class ResultsError(IsolibError):
    """A committed result of a notebook (``figures/<notebook>/``) is missing, unreadable or inconsistent."""


def folder_setting(path: Path, setting: str, error: type[IsolibError]) -> Path:
    """``path``, the folder the environment variable ``setting`` chooses (or its default), unless a file stands there.

    Raises
    ------
    error
        One sentence naming the setting and the file, if ``path`` is not a folder.
    """
    if path.exists() and not path.is_dir():
        named = f"{setting} names {path}" if os.environ.get(setting) else f"The default folder {path} (no {setting})"
        raise error(f"{named}, which is a file, not a folder; set {setting} to a folder instead.")
    return path


def os_error_text(error: OSError, setting: str) -> str:
    """One sentence for an OSError that names a file isolib keeps: the path, what is wrong with it, and the fix.

    ``setting`` is the environment variable that chooses where such files go (``ISOLIB_CACHE_DIR``), named
    where moving elsewhere is the fix.
    """
    path = Path(error.filename)
    if error.errno == errno.EROFS:
        return f"{path} is on a read-only file system; set {setting} to a folder on a writable one."
    if error.errno in (errno.EACCES, errno.EPERM):
        return (f"{path} cannot be used (permission denied); give this user read and write access to it, "
                f"or set {setting} to a folder it owns.")
    if error.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        return f"The disk holding {path} is full; free space there or set {setting} to a folder on a larger disk."
    if error.errno == errno.EISDIR:
        return f"{path} is a folder where a file belongs; move that folder away (or delete it) and run again."
    if error.errno == errno.ELOOP:
        return (f"{path} is a symbolic link that loops, or one isolib does not follow where it writes; replace it "
                "with the real file or folder.")
    if error.errno in (errno.ENOTDIR, errno.EEXIST):
        blocker = next((part for part in (path, *path.parents) if part.exists() and not part.is_dir()), None)
        if blocker is not None:
            return f"{blocker} is a file where a folder belongs; move that file away or set {setting} elsewhere."
    return f"{path}: {error.strerror}; check that {setting} names a folder this user can write."
