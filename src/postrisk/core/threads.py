"""Limits on the thread pools of numerical libraries."""

from __future__ import annotations


def thread_limit(n_threads: int):
    """A context limiting BLAS/LAPACK/OpenMP pools to ``n_threads``: the guarded fit uses it, and
    so do methods whose ``fit``/``predict`` are also called directly."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn
        from contextlib import nullcontext

        return nullcontext()
    return threadpool_limits(limits=n_threads)
