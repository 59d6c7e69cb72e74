"""BLAS threading: the one place that decides when linear algebra runs on a single thread.

LAPACK's symmetric eigensolvers and loops over thousands of small matrices gain nothing
from several BLAS threads, and on a machine whose cores are shared with other work those
threads wait for each other: measured 10 to 100 times slower on two shared cores
(2.3 s instead of 0.02 s for one 384 x 384 ``eigh``).
"""

from __future__ import annotations

import functools

import numpy as np
from threadpoolctl import ThreadpoolController


@functools.cache
def _controller() -> ThreadpoolController:
    # Scanning the loaded BLAS libraries costs milliseconds: do it once, on first use
    # (by then numpy's and scipy's libraries are loaded).
    return ThreadpoolController()


def one_blas_thread():
    """Context manager: BLAS limited to one thread inside the ``with`` block."""
    return _controller().limit(limits=1, user_api="blas")


def eigh(symmetric: np.ndarray, *, vectors: bool = True):
    """``numpy.linalg.eigh`` (``eigvalsh`` when ``vectors`` is False) on one BLAS thread.

    Returns eigenvalues in ascending order (and the eigenvectors as columns).
    """
    with one_blas_thread():
        return np.linalg.eigh(symmetric) if vectors else np.linalg.eigvalsh(symmetric)
