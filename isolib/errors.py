"""Exceptions raised by isolib.

Every error is meant to be read by a person: one sentence that says what was wrong
and, where there is one, the command that fixes it.
"""


class IsolibError(Exception):
    """Base class of all isolib errors."""


class DataError(IsolibError):
    """A dataset file is missing, corrupt or unparseable."""


class ModelError(IsolibError):
    """A model name cannot be resolved or loaded, or a layer index is out of range."""


class ResultsError(IsolibError):
    """A committed result of a notebook (``figures/<notebook>/``) is missing, unreadable or inconsistent."""
