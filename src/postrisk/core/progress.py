"""Progress of a long loop: the library's one way of saying how far it has got
(docs/contributing.md, "Engineering rules").

A long loop reports through :func:`progress_steps` (or :func:`track`, its iterable form):

- on an interactive terminal (``sys.stderr`` is a TTY, not redirected to a file) it drives a
  ``rich`` progress bar, refreshed from the loop itself (no thread), and logs only the final
  line; several loops active at once share one bar display (one row each);
- otherwise (a job's log file, CI, a test) it logs plain lines: one at the start; then a line
  for a step when the loop has at most :data:`FEW_STEPS` steps (few steps are slow ones), when
  the step crosses a further tenth of the total, or when ``interval_s`` seconds have passed
  since the last line (an unknown total: by time only); always a final line with the elapsed
  time.

The final line says how the loop ended: ``done, 3/3 steps in 6.0 s`` when it reached its total
(or had none); ``stopped at 4,287,935 of 15,336,918 bytes in 2.0 s`` when it left the block
short of its total (a ``break``, a transfer that failed and was skipped); ``interrupted
(Ctrl-C) at …`` or ``failed (RuntimeError) at …`` when an exception left it. ``unit`` names
what is counted (``"steps"``; another unit, e.g. ``"bytes"``, prints its counts with
thousands separators and the unit in every line).

The lines go through :mod:`logging`, wherever :mod:`postrisk.core.logs` sends them.

This module imports only the standard library (``rich`` lazily, on a terminal).
"""

from __future__ import annotations

import logging
import math
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

__all__ = ["DEFAULT_INTERVAL_S", "FEW_STEPS", "Progress", "progress_steps", "track"]

#: Plain mode: at most one time-triggered line per this many seconds.
DEFAULT_INTERVAL_S = 30.0
#: Plain mode: loops with at most this many steps log every step.
FEW_STEPS = 20
#: Plain mode: a line whenever the loop crosses another 1/TENTHS of its total.
TENTHS = 10

T = TypeVar("T")


def _stderr_is_terminal() -> bool:
    try:
        return bool(sys.stderr.isatty())
    except (AttributeError, ValueError):  # no stderr, or a closed one
        return False


def _seconds(s: float) -> str:
    if s < 60:
        return f"{s:.1f} s"
    minutes, sec = divmod(int(round(s)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{sec:02d}" if hours else f"{minutes}:{sec:02d} min"


class _Display:
    """The one rich progress display of the process, shared by the loops active at once."""

    def __init__(self, console: Any) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as RichProgress

        self.progress = RichProgress(
            TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(),
            TaskProgressColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
            TextColumn("{task.fields[message]}", markup=False), console=console,
            auto_refresh=False, transient=False)  # markup off: "[bnn] …" is no rich tag
        self.users = 0
        self.last_refresh = -math.inf

    def refresh(self, now: float, force: bool = False) -> None:
        if force or now - self.last_refresh >= 0.1:  # at most 10 redraws a second
            self.progress.refresh()
            self.last_refresh = now


_DISPLAY: _Display | None = None


class Progress:
    """The progress of one loop (see the module docstring); made by :func:`progress_steps`.

    A context manager: leaving the block logs the final line (and ends the bar's row).
    """

    def __init__(self, total: int | None, description: str, logger: logging.Logger | str, *,
                 interval_s: float = DEFAULT_INTERVAL_S, completed: int = 0,
                 console: Any = None, clock: Callable[[], float] = time.monotonic,
                 unit: str = "steps") -> None:
        self.total = None if total is None else max(0, int(total))
        self.description = description
        self.unit = unit
        self.logger = logging.getLogger(logger) if isinstance(logger, str) else logger
        self.interval_s = float(interval_s)
        self.completed = self._initial = int(completed)
        self.message = ""
        self._clock = clock
        self._start = self._last_line = clock()
        self._closed = False
        self._next_tenth = self._tenth_after(self.completed)
        terminal = console.is_terminal if console is not None else _stderr_is_terminal()
        self._display: _Display | None = None
        self._task = None
        if terminal:
            self._open_bar(console)
        else:
            of = "started" if self.total is None else f"{self._n(self.total)} {self._units()}"
            if self.completed:
                of += f", {self._n(self.completed)} done before"
            self.logger.info("%s: %s", description, of)

    # -- plain mode ---------------------------------------------------------------------------
    def _n(self, count: int) -> str:
        """A count as the lines print it (steps plainly, other units with separators)."""
        return str(count) if self.unit == "steps" else f"{count:,}"

    def _units(self) -> str:
        return self.unit[:-1] if self.unit == "steps" and self.total == 1 else self.unit

    def _tenth_after(self, done: int) -> int | None:
        """The next multiple of total/10 (in steps) above ``done``."""
        if not self.total:
            return None
        k = math.floor(done * TENTHS / self.total) + 1
        return math.ceil(k * self.total / TENTHS)

    def _step_line(self, now: float) -> str:
        elapsed = now - self._start
        if self.total:
            done = self.completed - self._initial
            eta = ""
            if 0 < done and self.completed < self.total:
                eta = f", ~{_seconds(elapsed / done * (self.total - self.completed))} left"
            unit = "" if self.unit == "steps" else f" {self.unit}"
            head = (f"{self._n(self.completed)}/{self._n(self.total)}{unit} "
                    f"({100 * self.completed / self.total:.0f}%), {_seconds(elapsed)}{eta}")
        else:
            head = f"{self._n(self.completed)} {self.unit}, {_seconds(elapsed)}"
        return f"{self.description}: {head}" + (f" — {self.message}" if self.message else "")

    # -- terminal mode ------------------------------------------------------------------------
    def _open_bar(self, console: Any) -> None:
        global _DISPLAY
        if _DISPLAY is None:
            if console is None:
                from rich.console import Console

                console = Console(stderr=True)
            _DISPLAY = _Display(console)
            _DISPLAY.progress.start()
        self._display = _DISPLAY
        self._display.users += 1
        self._task = self._display.progress.add_task(
            self.description, total=self.total, completed=self.completed, message="")
        self._display.refresh(self._clock(), force=True)

    def _close_bar(self) -> None:
        global _DISPLAY
        display, self._display = self._display, None
        if display is None:
            return
        display.refresh(self._clock(), force=True)
        display.users -= 1
        if display.users == 0:
            display.progress.stop()
            if _DISPLAY is display:
                _DISPLAY = None
        elif self._task is not None:
            display.progress.remove_task(self._task)

    # -- the API ------------------------------------------------------------------------------
    def advance(self, n: int = 1, message: str = "") -> None:
        """``n`` more steps done; ``message`` (e.g. the current loss) shown with them."""
        self.completed += int(n)
        if message:
            self.message = message
        now = self._clock()
        if self._display is not None:
            self._display.progress.update(self._task, completed=self.completed,
                                          message=self.message)
            self._display.refresh(now)
            return
        due = now - self._last_line >= self.interval_s
        if self.total is not None and self.total <= FEW_STEPS:
            due = True
        elif self._next_tenth is not None and self.completed >= self._next_tenth:
            due = True
        if due:
            self.logger.info("%s", self._step_line(now))
            self._last_line = now
            self._next_tenth = self._tenth_after(self.completed)

    @property
    def elapsed(self) -> float:
        return self._clock() - self._start

    def close(self, failed: bool = False, error: BaseException | None = None) -> None:
        """The final line (called on leaving the block): how the loop ended (the module
        docstring), the steps done and the elapsed time. ``failed``/``error``: an exception
        ended it (``error``, when given, is named: a ``KeyboardInterrupt`` reads "interrupted
        (Ctrl-C)")."""
        if self._closed:
            return
        self._closed = True
        self._close_bar()
        done, total, unit = self._n(self.completed), self.total, self.unit
        took = _seconds(self.elapsed)
        if failed or error is not None:
            what = ("interrupted (Ctrl-C)" if isinstance(error, KeyboardInterrupt) else
                    "failed" if error is None else f"failed ({type(error).__name__})")
            at = f"{done} {unit}" if total is None else f"{done} of {self._n(total)} {unit}"
            line = f"{what} at {at} after {took}"
        elif total is None or self.completed >= total:
            line = f"done, {done}{'' if total is None else '/' + self._n(total)} {unit} in {took}"
        else:
            line = f"stopped at {done} of {self._n(total)} {unit} in {took}"
        self.logger.info("%s: %s", self.description, line)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is GeneratorExit:  # a loop over track() left early: no failure
            self.close()
        else:
            self.close(failed=exc_type is not None, error=exc)


def progress_steps(total: int | None, description: str, logger: logging.Logger | str, *,
                   interval_s: float = DEFAULT_INTERVAL_S, completed: int = 0,
                   console: Any = None,
                   clock: Callable[[], float] = time.monotonic,
                   unit: str = "steps") -> Progress:
    """A loop's progress reporter (see the module docstring): ``with progress_steps(n, "[x]
    fit", logger) as p: ... p.advance(message=...)``.

    ``total``: the number of steps (``None``: unknown); ``completed``: steps already done
    before (a resumed loop); ``description``: the lines' prefix (the bar's label); ``unit``:
    what a step is (``"bytes"``: counts with thousands separators). ``console``
    (a ``rich.console.Console``) replaces the terminal check and the display's console (tests);
    ``clock``: seconds, monotonic (tests pass a fake one).
    """
    return Progress(total, description, logger, interval_s=interval_s, completed=completed,
                    console=console, clock=clock, unit=unit)


def track(iterable: Iterable[T], description: str, logger: logging.Logger | str, *,
          total: int | None = None, interval_s: float = DEFAULT_INTERVAL_S,
          console: Any = None, clock: Callable[[], float] = time.monotonic) -> Iterator[T]:
    """Iterate over ``iterable``, one step per item (counted once the loop body is done);
    ``total`` defaults to ``len(iterable)`` where it has one."""
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    with progress_steps(total, description, logger, interval_s=interval_s, console=console,
                        clock=clock) as progress:
        for item in iterable:
            yield item
            progress.advance()
