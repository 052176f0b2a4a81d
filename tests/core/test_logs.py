"""Logging set up once per process: a job's log file (``job_log``) routes library lines and
warnings and restores logging; nested setups add no duplicate lines; file and terminal targets."""
from __future__ import annotations

import io
import logging
import sys
import warnings

from postrisk.core.logs import configure_logging, job_log, logging_to, terminal_logging

LOGGER = "postrisk.test_logs"


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
