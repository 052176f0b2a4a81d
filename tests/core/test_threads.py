"""``postrisk.core.threads.thread_limit``: every loaded BLAS/OpenMP pool runs with the given
number of threads inside the block, the previous sizes come back on exit (also after an error),
and without threadpoolctl the context does nothing."""
import sys

import numpy as np
import pytest

from postrisk.core.threads import thread_limit

threadpoolctl = pytest.importorskip("threadpoolctl")


def _sizes() -> list[int]:
    return [pool["num_threads"] for pool in threadpoolctl.threadpool_info()]


@pytest.fixture
def pools():
    np.ones((2, 2)) @ np.ones((2, 2))  # numpy's BLAS is loaded
    before = _sizes()
    if not before:
        pytest.skip("no BLAS/OpenMP thread pool loaded")
    return before


def test_pools_run_with_the_limit_inside_and_their_own_sizes_after(pools):
    with thread_limit(1):
        assert _sizes() == [1] * len(pools)
        np.linalg.inv(np.eye(3) * 2.0)  # numerical work runs under the limit
    assert _sizes() == pools


def test_sizes_come_back_after_an_error_in_the_block(pools):
    with pytest.raises(ZeroDivisionError), thread_limit(1):
        assert _sizes() == [1] * len(pools)
        1 / 0  # noqa: B018
    assert _sizes() == pools


def test_without_threadpoolctl_the_context_does_nothing(pools, monkeypatch):
    monkeypatch.setitem(sys.modules, "threadpoolctl", None)  # its import raises ImportError
    with thread_limit(1) as inside:
        assert inside is None  # contextlib.nullcontext
        assert _sizes() == pools  # read through the module imported above
