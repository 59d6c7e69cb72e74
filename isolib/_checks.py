"""Input validation shared by the metric, transform and evaluation functions.

All checks raise ``ValueError`` with one sentence naming the argument, in the
style of scikit-learn, so a notebook user sees what to fix.
"""

from __future__ import annotations

import numbers
import operator
import sys

import numpy as np


def _is_scipy_sparse(X) -> bool:
    """Whether ``X`` is a scipy sparse matrix or array, without importing scipy.

    A sparse object can only exist once ``scipy.sparse`` has been imported, so
    looking it up in ``sys.modules`` is exact and keeps this module light.
    """
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and sparse.issparse(X)


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
        If ``X`` is a scipy sparse matrix, holds complex numbers, is not 2-D,
        has fewer than ``min_samples`` rows, no columns, or contains NaN or infinity.
    """
    if _is_scipy_sparse(X):
        # numpy would otherwise fail with "setting an array element with a sequence".
        raise ValueError(
            f"{name} is a scipy sparse matrix; pass a dense array ({name}.toarray()) of shape (n_samples, n_features)."
        )
    arr = np.asarray(X)
    if arr.dtype.kind == "c":  # numpy would only warn, and drop the imaginary part
        raise ValueError(f"{name} holds complex numbers, whose imaginary part this measure would drop; pass real "
                         f"points ({name}.real, or abs({name})).")
    arr = arr.astype(dtype, copy=False)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array of shape (n_samples, n_features), got shape {arr.shape}.")
    if arr.shape[0] < min_samples:
        raise ValueError(f"{name} has {arr.shape[0]} samples but this measure needs at least {min_samples}.")
    if arr.shape[1] == 0:
        raise ValueError(f"{name} has no features (shape {arr.shape}).")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinity.")
    # Sums of squares over every sample and feature (norms, covariances, distances) must stay finite.
    largest, limit = float(np.abs(arr).max()), float(np.sqrt(np.finfo(arr.dtype).max / arr.size) / 10)
    if largest > limit:
        raise ValueError(f"{name} has values up to {largest:.1e}, too large to square and sum in {arr.dtype} for "
                         f"shape {arr.shape} (at most {limit:.1e}); divide it by a constant first.")
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


def check_int(value, name: str, *, low: int, high: int | None = None) -> int:
    """Return ``value`` as an int in ``[low, high]`` or raise one ``ValueError`` sentence."""
    try:
        number = operator.index(value)
    except TypeError:
        raise ValueError(f"{name} must be an integer, got {value!r}.") from None
    if number < low or (high is not None and number > high):
        upper = "" if high is None else f" and at most {high}"
        raise ValueError(f"{name} must be at least {low}{upper}, got {number}.")
    return number


def sample_rows(n_rows: int, n_samples: int | None, generator: np.random.Generator) -> np.ndarray:
    """Sorted indices of ``n_samples`` rows drawn without replacement (all rows if None or too many)."""
    if n_samples is None or n_samples >= n_rows:
        return np.arange(n_rows)
    return np.sort(generator.choice(n_rows, size=n_samples, replace=False))


def sklearn_seed(random_state) -> int | None:
    """The int seed scikit-learn takes: ints pass through, a Generator draws one."""
    if random_state is None or isinstance(random_state, numbers.Integral):
        return random_state
    return int(rng(random_state).integers(2**31 - 1))
