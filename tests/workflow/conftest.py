"""The demo run the slow tier's demo and README tests share."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.workflow_helpers import REPO, SNAKEMAKE, snakemake

#: A working directory where the demo preset already ran (CI: its clean clone, after
#: `make demo`): the slow tier checks that run instead of running the demo again.
DEMO_RUN = "POSTRISK_DEMO_RUN"


@pytest.fixture(scope="session")
def demo(tmp_path_factory) -> Path:
    """The working directory of one complete demo run, its outputs under ``results/``.

    With ``POSTRISK_DEMO_RUN`` set (``.ci/run`` sets it to its clean clone after running
    ``make demo``, the README's first command, as written), that directory, once a dry run of
    the demo preset there, as ``make demo`` would start it, finds nothing left to do; otherwise
    the demo preset run here in a scratch directory, as ``make demo`` runs it."""
    preset = str(REPO / "presets/demo.yaml")
    given = os.environ.get(DEMO_RUN)
    if given:
        workdir = Path(given).resolve()
        check = subprocess.run([SNAKEMAKE, "-n", "--configfile", "presets/demo.yaml"],
                               cwd=workdir, capture_output=True, text=True, timeout=300)
        assert check.returncode == 0, check.stderr[-3000:]
        assert "Nothing to be done" in check.stdout + check.stderr, (
            f"{DEMO_RUN}={given} is not a complete demo run (a dry run of presets/demo.yaml "
            f"there still has jobs to run):\n{(check.stdout + check.stderr)[-3000:]}")
        return workdir
    workdir = tmp_path_factory.mktemp("demo")
    # the 15-minute budget is a benchmark (test_demo.py); the timeout only guards against a
    # hang, beyond the 1.5 × 15-minute guard on the jobs' wall clock
    run = snakemake(workdir, "--cores", "2", "--configfile", preset, timeout=25 * 60)
    assert run.returncode == 0, run.stderr[-3000:]
    return workdir
