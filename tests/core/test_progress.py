"""The progress helper: plain lines in a log (start, steps, final line; every tenth or every
interval), a rich bar on a terminal."""
from __future__ import annotations

import io
import logging

import pytest

from postrisk.core.progress import progress_steps, track

LOGGER = "postrisk.test_progress"


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def lines(caplog):
    caplog.set_level(logging.INFO, logger="postrisk")

    def get() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.name == LOGGER]

    return get


def test_plain_mode_few_steps_logs_start_every_step_and_final_line(lines):
    clock = FakeClock()
    with progress_steps(3, "[x] stages", LOGGER, clock=clock) as progress:
        for i in range(3):
            clock.now += 2.0
            progress.advance(message=f"stage {i + 1}: T = 1.0")
    got = lines()
    assert got[0] == "[x] stages: 3 steps"
    assert got[1] == "[x] stages: 1/3 (33%), 2.0 s, ~4.0 s left — stage 1: T = 1.0"
    assert got[3] == "[x] stages: 3/3 (100%), 6.0 s — stage 3: T = 1.0"
    assert got[4] == "[x] stages: done, 3/3 steps in 6.0 s" and len(got) == 5


def test_plain_mode_many_fast_steps_logs_each_tenth(lines):
    clock = FakeClock()
    for _ in track(range(1000), "[x] items", LOGGER, clock=clock):
        clock.now += 0.001
    got = lines()
    assert got[0] == "[x] items: 1000 steps"
    assert [g.split(": ")[1].split(" ")[0] for g in got[1:-1]] == [f"{k}/1000" for k in
                                                                  range(100, 1001, 100)]
    assert got[-1] == "[x] items: done, 1000/1000 steps in 1.0 s"


def test_plain_mode_slow_steps_log_every_interval(lines):
    clock = FakeClock()
    with progress_steps(1000, "[x] slow", LOGGER, interval_s=30.0, clock=clock) as progress:
        for _ in range(50):  # 5% of the total, 10 s a step: a line every 30 s, no tenth
            clock.now += 10.0
            progress.advance()
    got = lines()
    steps = got[1:-1]
    assert [s.split(": ")[1].split(" ")[0] for s in steps] == [f"{k}/1000" for k in
                                                              range(3, 50, 3)]
    assert got[-1] == "[x] slow: stopped at 50 of 1000 steps in 8:20 min"  # short of its total


def test_unknown_total_resumed_count_and_failure(lines):
    clock = FakeClock()
    with progress_steps(None, "[x] open", LOGGER, interval_s=5.0, clock=clock) as progress:
        for _ in range(4):
            clock.now += 3.0
            progress.advance(message="ok")
    with pytest.raises(RuntimeError):
        with progress_steps(10, "[x] resumed", LOGGER, completed=4, clock=clock) as progress:
            clock.now += 1.0
            progress.advance()
            raise RuntimeError("boom")
    assert lines() == [
        "[x] open: started",
        "[x] open: 2 steps, 6.0 s — ok",
        "[x] open: 4 steps, 12.0 s — ok",
        "[x] open: done, 4 steps in 12.0 s",
        "[x] resumed: 10 steps, 4 done before",
        "[x] resumed: 5/10 (50%), 1.0 s, ~5.0 s left",
        "[x] resumed: failed (RuntimeError) at 5 of 10 steps after 1.0 s",
    ]


def test_terminal_mode_drives_a_rich_bar_and_logs_no_step_lines(lines):
    from rich.console import Console

    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120, color_system=None)
    clock = FakeClock()
    with progress_steps(4, "[x] bar", LOGGER, console=console, clock=clock) as progress:
        for i in range(4):
            clock.now += 1.0
            progress.advance(message=f"loss {i}")
            if i == 1:  # a nested loop shares the display (a row of its own)
                with progress_steps(2, "[x] inner", LOGGER, console=console,
                                    clock=clock) as inner:
                    inner.advance(2)
    screen = out.getvalue()
    assert "[x] bar" in screen and "4/4" in screen and "loss 3" in screen
    assert "[x] inner" in screen and "2/2" in screen
    assert lines() == ["[x] inner: done, 2/2 steps in 0.0 s", "[x] bar: done, 4/4 steps in 4.0 s"]


def test_bytes_cut_off_half_way_are_not_done(lines):
    """A transfer that ends short of its total (a file cut off, skipped) does not say "done"."""
    clock = FakeClock()
    with progress_steps(15_336_918, "[download] transfer", LOGGER, clock=clock,
                        unit="bytes") as progress:
        clock.now += 2.0
        progress.advance(4_287_935)
    got = lines()
    assert got[0] == "[download] transfer: 15,336,918 bytes"
    assert got[1] == "[download] transfer: 4,287,935/15,336,918 bytes (28%), 2.0 s, ~5.2 s left"
    assert got[-1] == "[download] transfer: stopped at 4,287,935 of 15,336,918 bytes in 2.0 s"
    assert not any("done" in line for line in got)


def test_interrupt_and_early_break_say_what_happened(lines):
    clock = FakeClock()
    with pytest.raises(KeyboardInterrupt):
        with progress_steps(10_000, "[x] bytes", LOGGER, clock=clock, unit="bytes") as progress:
            clock.now += 1.5
            progress.advance(2_500)
            raise KeyboardInterrupt
    for i in track(range(10), "[x] loop", LOGGER, clock=clock):
        if i == 3:
            break  # leaving a track() loop early is no failure
    with progress_steps(None, "[x] open", LOGGER, clock=clock) as progress:
        progress.advance(7)
    finals = [line for line in lines() if " at " in line or " in " in line]
    assert finals == ["[x] bytes: interrupted (Ctrl-C) at 2,500 of 10,000 bytes after 1.5 s",
                      "[x] loop: stopped at 3 of 10 steps in 0.0 s",
                      "[x] open: done, 7 steps in 0.0 s"]
