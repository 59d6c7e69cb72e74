"""When to show progress bars: interactively yes, in Papermill runs and tests no."""

from __future__ import annotations

import os
import sys


def show_progress(progress: bool | None = None) -> bool:
    """Resolve a ``progress`` argument: explicit bool, else ``ISOLIB_PROGRESS`` (0/1), else interactivity.

    Interactive means a terminal on stderr or a Jupyter kernel; the runner and the
    tests set ``ISOLIB_PROGRESS=0`` so bars never reach stored notebook outputs.
    """
    if progress is not None:
        return progress
    setting = os.environ.get("ISOLIB_PROGRESS")
    if setting in ("0", "1"):
        return setting == "1"
    return sys.stderr.isatty() or "ipykernel" in sys.modules

