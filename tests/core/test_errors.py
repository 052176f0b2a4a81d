"""``postrisk.core.errors.StopJob``: a job's stop whose message says it all — under
:func:`~postrisk.core.logs.job_log` the log and the terminal get the message alone, without a
traceback, and the job exits with code 1 (any other error keeps its traceback and type)."""
import sys

import pytest

from postrisk.core.errors import StopJob
from postrisk.core.logs import job_log


def test_stop_job_is_a_runtime_error_carrying_its_message():
    err = StopJob("no GPU visible to JAX")
    assert isinstance(err, RuntimeError) and str(err) == "no GPU visible to JAX"
    with pytest.raises(RuntimeError, match="^no GPU visible to JAX$"):
        raise err


def test_a_stop_job_ends_the_job_with_its_message_alone(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "__stderr__", sys.stderr)  # the terminal line, captured
    path = tmp_path / "logs" / "job.log"

    class _Subclass(StopJob):  # as AcceleratorMissing is one
        pass

    with pytest.raises(SystemExit) as exit_info, job_log(path):
        raise _Subclass("the job asked for a GPU and got none")
    assert exit_info.value.code == 1
    text = path.read_text()
    assert "error: the job asked for a GPU and got none\n" in text and "stopped after" in text
    assert "Traceback" not in text and "done in" not in text
    terminal = capsys.readouterr().err
    assert terminal == f"error: the job asked for a GPU and got none (log: {path})\n"


def test_any_other_error_keeps_its_traceback_and_type(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "__stderr__", sys.stderr)
    path = tmp_path / "job.log"
    with pytest.raises(RuntimeError, match="boom"), job_log(path):
        raise RuntimeError("boom")
    text = path.read_text()
    assert "Traceback" in text and "RuntimeError: boom" in text and "failed after" in text
    assert "stopped after" not in text
    assert capsys.readouterr().err == f"error: see {path}: boom\n"
