"""The library's logging and progress convention: the progress helper (plain lines in a log, a
rich bar on a terminal) and a job's log file (``job_log``)."""

from __future__ import annotations

import io
import logging
import sys
import warnings

import pytest

from postrisk.core.progress import (
    configure_logging,
    logging_to,
    progress_steps,
    terminal_logging,
    track,
)
from postrisk.workflow.logs import job_log

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
    assert got[-1] == "[x] slow: done, 50/1000 steps in 8:20 min"


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
        "[x] resumed: stopped after 5/10 steps in 1.0 s",
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


def test_job_log_routes_library_lines_and_warnings_and_restores_logging(tmp_path):
    root = logging.getLogger()
    handlers, level = list(root.handlers), logging.getLogger("postrisk").level
    captured = getattr(logging, "_warnings_showwarning", None)
    library = logging.getLogger("postrisk.methods.nn.sngp_het")
    path = tmp_path / "logs" / "job.log"
    for attempt in range(2):  # a second job in the same process starts from a clean state
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            with job_log(path):
                library.info("training on n=%d", 40 + attempt)
                logging.getLogger("postrisk").debug("not shown at INFO")
                logging.getLogger("thirdparty").info("not shown: a third-party INFO line")
                logging.getLogger("thirdparty").warning("third-party warning")
                warnings.warn("a library warning", RuntimeWarning, stacklevel=1)
                print("a plain print")
        text = path.read_text()
        assert f"INFO postrisk.methods.nn.sngp_het: training on n={40 + attempt}\n" in text
        assert "WARNING thirdparty: third-party warning" in text
        assert "WARNING py.warnings:" in text and "RuntimeWarning: a library warning" in text
        assert "a plain print" in text and "done in" in text
        assert "not shown" not in text
        first = text.splitlines()[0]
        assert first[:4].isdigit() and first[10] == " " and first[13] == ":"  # timestamped
        assert list(root.handlers) == handlers
        assert logging.getLogger("postrisk").level == level
        assert getattr(logging, "_warnings_showwarning", None) is captured


def test_nested_configurations_do_not_duplicate_lines(tmp_path):
    outer, inner = io.StringIO(), io.StringIO()
    library = logging.getLogger(LOGGER)
    with logging_to(outer):
        library.info("one")
        with logging_to(inner):
            library.info("two")
        library.info("three")
    library.info("four: after the restore, nowhere")
    assert [line.split(": ", 1)[1] for line in outer.getvalue().splitlines()] == ["one",
                                                                                   "three"]
    assert [line.split(": ", 1)[1] for line in inner.getvalue().splitlines()] == ["two"]


def test_file_target_and_terminal_logging(tmp_path, monkeypatch):
    path = tmp_path / "sub" / "run.log"
    restore = configure_logging(path)
    logging.getLogger(LOGGER).info("to the file")
    restore()
    assert path.read_text().rstrip().endswith(f"INFO {LOGGER}: to the file")
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)  # the terminal handler writes to sys.stderr now
    with terminal_logging():
        logging.getLogger(LOGGER).info("to the terminal")
    assert err.getvalue().rstrip().endswith(f"INFO {LOGGER}: to the terminal")
