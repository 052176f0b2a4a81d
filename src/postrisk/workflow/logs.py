"""Helpers for the thin Snakemake scripts: logging a job to its `log:` file."""

from __future__ import annotations

import contextlib
import sys
import time
import traceback
from collections.abc import Iterator
from pathlib import Path

from postrisk.core.errors import StopJob
from postrisk.core.progress import logging_to


@contextlib.contextmanager
def job_log(path: str | Path) -> Iterator[None]:
    """Send stdout and stderr of the job to ``path``, and the library's log lines (``postrisk.*``
    INFO, warnings, other libraries' WARNING+; :func:`postrisk.core.progress.configure_logging`)
    as timestamped lines; a failure is logged, then re-raised (a
    :class:`~postrisk.core.errors.StopJob` as its message alone, then exit code 1). The previous
    logging state is restored on exit."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with open(path, "w", buffering=1) as fh, contextlib.redirect_stdout(fh), \
            contextlib.redirect_stderr(fh), logging_to(fh):
        try:
            yield
        except StopJob as err:
            print(f"error: {err}", file=fh)
            print(f"stopped after {time.perf_counter() - start:.1f} s", file=fh)
            print(f"error: {err} (log: {path})", file=sys.__stderr__)
            raise SystemExit(1) from None
        except BaseException:
            traceback.print_exc(file=fh)
            print(f"failed after {time.perf_counter() - start:.1f} s", file=fh)
            # Also show the reason where the user is looking.
            print(f"error: see {path}: {sys.exc_info()[1]}", file=sys.__stderr__)
            raise
        print(f"done in {time.perf_counter() - start:.1f} s")
