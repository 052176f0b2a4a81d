"""The cluster tier (``make test-cluster``): one real SLURM cluster for the session
(tests/cluster/slurm_cluster.py), the smoke preset run through the README's cluster command on
it, and the same preset run locally to compare with."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.cluster.slurm_cluster import ACCOUNT, SlurmCluster, stop_from_file
from tests.workflow_helpers import REPO, SNAKEMAKE

#: The smoke preset, as `make test` runs the workflow.
PRESET = str(REPO / "presets/smoke.yaml")
#: The executor plugin's first status check after a submission (default 40 s, and 10 s more
#: at each check that finds no job finished): a few seconds keep a run of 15-second jobs short.
FAST_STATUS = ("--slurm-init-seconds-before-status-checks", "5")


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/cluster/" in str(item.fspath):
            item.add_marker(pytest.mark.cluster)


def cluster_command(workdir: Path, *args: str, profile_args: tuple[str, ...] = FAST_STATUS,
                    configfiles: tuple[str, ...] = ()) -> list[str]:
    """The README's cluster command (``snakemake --profile profiles/slurm``) over the smoke
    preset (then ``configfiles``: one ``--configfile`` option, as a second would replace the
    first) in ``workdir``."""
    return [SNAKEMAKE, "--profile", "profiles/slurm", "--configfile", PRESET, *configfiles,
            "--directory", str(workdir), *profile_args, *args]


def cluster_env() -> dict[str, str]:
    return {**os.environ, "SLURM_ACCOUNT": ACCOUNT}


def run_on_cluster(workdir: Path, *args: str, timeout: float = 600, **kwargs
                   ) -> subprocess.CompletedProcess:
    """Run the cluster command to its end (``timeout`` only guards against a hang)."""
    return subprocess.run(cluster_command(workdir, *args, **kwargs), cwd=REPO,
                          env=cluster_env(), capture_output=True, text=True, timeout=timeout)


#: The Snakemake processes a test started in the background (stopped after it, whatever
#: happened).
_STARTED: list[subprocess.Popen] = []


def start_on_cluster(workdir: Path, *args: str, **kwargs) -> subprocess.Popen:
    """Start the cluster command; its output in ``workdir``/snakemake.out."""
    workdir.mkdir(parents=True, exist_ok=True)
    with open(workdir / "snakemake.out", "w") as out:
        proc = subprocess.Popen(cluster_command(workdir, *args, **kwargs), cwd=REPO,
                                env=cluster_env(), stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    _STARTED.append(proc)
    return proc


@pytest.fixture(autouse=True)
def nothing_left_running():
    """After each test: its background Snakemake stopped and its cluster jobs cancelled, so
    that the next test starts on an empty queue."""
    yield
    while _STARTED:
        proc = _STARTED.pop()
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    if shutil.which("scancel"):
        subprocess.run(["scancel", "--me"], capture_output=True)
        wait_for(lambda: not squeue(), 60, "the cancelled jobs to leave the queue")


def copy_run(source: Path, target: Path) -> Path:
    """A copy of a finished run's working directory (results and Snakemake's records, file
    times kept; no lock): a drill starts from it and reruns only what it changes."""
    shutil.copytree(source, target, symlinks=True,
                    ignore=shutil.ignore_patterns("locks", "slurm_logs", "snakemake.out"))
    return target


def wait_for(condition, timeout: float, what: str, step: float = 1.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def squeue(*args: str) -> list[list[str]]:
    """``squeue``'s rows (job id, name, state, comment) for this user's jobs."""
    out = subprocess.run(["squeue", "--me", "-h", "-o", "%i|%j|%T|%k", *args],
                         capture_output=True, text=True, check=True).stdout
    return [line.split("|") for line in out.splitlines() if line.strip()]


def running_job(rule: str) -> str | None:
    """The id of a running SLURM job of ``rule`` (the plugin's comment names the rule)."""
    for job_id, _name, state, comment in squeue():
        if state == "RUNNING" and comment.startswith(f"rule_{rule}"):
            return job_id
    return None


#: Where the cluster keeps its state, logs and PIDs (``make test-cluster`` names a folder, so
#: that it can stop what a killed session left running); else a temporary folder.
STATE = "POSTRISK_CLUSTER_STATE"


@pytest.fixture(scope="session")
def cluster(tmp_path_factory):
    """The running cluster; every daemon stopped by its PID at the end, on SIGTERM too (and no
    second signal interrupts the stopping)."""
    state = Path(os.environ.get(STATE) or tmp_path_factory.mktemp("slurm"))
    if (state / "ctld").is_dir():  # an earlier session's cluster: stopped, then started anew
        stop_from_file(state)
        shutil.rmtree(state)
    previous = signal.getsignal(signal.SIGTERM)

    def interrupted(signum, frame):
        raise KeyboardInterrupt("SIGTERM")

    signal.signal(signal.SIGTERM, interrupted)
    instance = SlurmCluster(state)
    try:
        instance.start()
        yield instance
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
        subprocess.run(["scancel", "--me"], capture_output=True)
        instance.stop()
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def local_run(tmp_path_factory):
    """The smoke preset run locally, started with the session so that it overlaps the
    cluster run; the fixture waits for it."""
    workdir = Path(tmp_path_factory.mktemp("local"))
    proc = subprocess.Popen([SNAKEMAKE, "--cores", "2", "--configfile", PRESET, "--directory",
                             str(workdir)], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        yield lambda: _finished(proc, workdir)
    finally:
        if proc.poll() is None:
            proc.kill()


def _finished(proc: subprocess.Popen, workdir: Path) -> Path:
    out, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, (out or "")[-3000:]
    return workdir


@pytest.fixture(scope="session")
def cluster_run(cluster, local_run, tmp_path_factory):
    """The README's two cluster commands over the smoke preset, run to their end: the seed
    selections, then everything."""
    workdir = Path(tmp_path_factory.mktemp("cluster"))
    for args in (("seed_selections",), ()):
        run = run_on_cluster(workdir, *args, timeout=900)
        assert run.returncode == 0, (run.stdout + run.stderr)[-4000:] + cluster.log_tails()
    return workdir, run
