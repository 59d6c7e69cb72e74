"""Input validation shared by the metric, transform and evaluation functions.

All checks raise ``ValueError`` with one sentence naming the argument, in the
style of scikit-learn, so a notebook user sees what to fix.
"""

from __future__ import annotations

import numpy as np


def as_points(X, *, name: str = "X", min_samples: int = 1, dtype=np.float64) -> np.ndarray:
    """Return ``X`` as a finite 2-D array of shape ``(n_samples, n_features)``.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
    name : str
        Argument name used in error messages.
    min_samples : int
        Fewest rows the caller's measure needs.
    dtype : numpy dtype
        Dtype of the returned array (float64 by default, for exact accumulation).

    Raises
    ------
    ValueError
        If ``X`` is not 2-D, has fewer than ``min_samples`` rows, no columns,
        or contains NaN or infinity.
    """
    arr = np.asarray(X, dtype=dtype)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array of shape (n_samples, n_features), got shape {arr.shape}.")
    if arr.shape[0] < min_samples:
        raise ValueError(f"{name} has {arr.shape[0]} samples but this measure needs at least {min_samples}.")
    if arr.shape[1] == 0:
        raise ValueError(f"{name} has no features (shape {arr.shape}).")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinity.")
    return arr


def check_same_length(a, b, *, names: tuple[str, str]) -> None:
    """Raise ``ValueError`` unless ``len(a) == len(b)``."""
    if len(a) != len(b):
        raise ValueError(f"{names[0]} has {len(a)} entries but {names[1]} has {len(b)}; they must match.")


def rng(random_state) -> np.random.Generator:
    """Turn ``random_state`` (None, int or Generator) into a ``numpy.random.Generator``."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    return np.random.default_rng(random_state)
