"""Logging setup: where the library's log lines go, decided once per process (docs/contributing.md,
"Engineering rules").

Library modules report through :mod:`logging` only — ``logger = logging.getLogger(__name__)``,
``logger.info`` for progress, ``logger.warning`` for warnings — and never print (a long loop
through :mod:`postrisk.core.progress`). :func:`configure_logging` (or the context managers
:func:`logging_to` and :func:`terminal_logging`) sends every ``postrisk.*`` logger's INFO
lines, Python warnings and third-party WARNING+ lines to a stream or file as plain timestamped
lines (``2026-11-30 11:40:02 INFO postrisk.priors.hbart: ...``). A Snakemake job does so
through :func:`job_log` (its ``log:`` file); the ``postrisk`` command through
:func:`terminal_logging`.

This module imports only the standard library (and :class:`postrisk.core.errors.StopJob`).
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from postrisk.core.errors import StopJob

__all__ = ["DATE_FORMAT", "LIBRARY", "LOG_FORMAT", "configure_logging", "job_log",
           "logging_to", "terminal_logging"]

#: The library's logger namespace: its INFO lines are shown, other libraries' from WARNING on.
LIBRARY = "postrisk"
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
DATE_FORMAT = "%Y-%m-%d %H:%M:%S"


class _LibraryOrWarning(logging.Filter):
    """The library's records from ``level`` on, everyone's from WARNING on."""

    def __init__(self, level: int) -> None:
        super().__init__()
        self.level = level

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            return True
        ours = record.name == LIBRARY or record.name.startswith(LIBRARY + ".")
        return ours and record.levelno >= self.level


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is when a line is emitted (a redirection, or rich's
    proxy that prints above a live progress bar)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self):  # type: ignore[override]
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


def _captures_warnings() -> bool:
    return getattr(logging, "_warnings_showwarning", None) is not None


def configure_logging(target: IO[str] | str | Path | None = None,
                      level: int = logging.INFO) -> Callable[[], None]:
    """Send the library's log lines (``postrisk.*`` from ``level`` on), Python warnings
    (``logging.captureWarnings``) and other libraries' WARNING+ lines to ``target`` as plain
    timestamped lines; returns a function that restores the previous state.

    ``target``: an open text stream, a file path (appended to; closed on restore) or ``None``
    (``sys.stderr`` as it is at each line). A handler installed by an earlier call is detached
    until the restore, so nested configurations do not print lines twice.
    """
    root = logging.getLogger()
    library = logging.getLogger(LIBRARY)
    opened = None
    if target is None:
        handler: logging.Handler = _StderrHandler()
    elif isinstance(target, str | Path):
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        opened = open(target, "a", buffering=1, encoding="utf-8")  # noqa: SIM115
        handler = logging.StreamHandler(opened)
    else:
        handler = logging.StreamHandler(target)
    handler.setFormatter(logging.Formatter(LOG_FORMAT, DATE_FORMAT))
    handler.addFilter(_LibraryOrWarning(level))
    handler._postrisk = True  # type: ignore[attr-defined]
    earlier = [h for h in root.handlers if getattr(h, "_postrisk", False)]
    for h in earlier:
        root.removeHandler(h)
    previous_level, previous_capture = library.level, _captures_warnings()
    root.addHandler(handler)
    library.setLevel(level)
    logging.captureWarnings(True)

    def restore() -> None:
        logging.captureWarnings(previous_capture)
        library.setLevel(previous_level)
        root.removeHandler(handler)
        handler.close()
        if opened is not None:
            opened.close()
        for h in earlier:
            root.addHandler(h)

    return restore


@contextlib.contextmanager
def logging_to(target: IO[str] | str | Path | None = None,
               level: int = logging.INFO) -> Iterator[None]:
    """:func:`configure_logging` for the duration of the block."""
    restore = configure_logging(target, level)
    try:
        yield
    finally:
        restore()


def terminal_logging(level: int = logging.INFO) -> contextlib.AbstractContextManager[None]:
    """The library's INFO lines (and warnings) on the terminal's stderr, for the block: what a
    command-line entry point wraps itself in."""
    return logging_to(None, level)


@contextlib.contextmanager
def job_log(path: str | Path) -> Iterator[None]:
    """Send stdout and stderr of the job to ``path``, and the library's log lines (``postrisk.*``
    INFO, warnings, other libraries' WARNING+; :func:`configure_logging`) as timestamped
    lines; a failure is logged, then re-raised (a
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
