"""`postrisk progress` (postrisk.planning.progress): every planned job classified from the files
of a working directory — finished, running (marked by a Snakemake run that holds the lock),
failed (a log without its outputs, or marked incomplete with no run going) and missing — with
the failed jobs listed, their SLURM logs, and the exit status scripts poll.

The jobs come from the smoke preset's planner; a temporary working directory gets some jobs'
files. No count or rule name of a preset is written here: expectations come from the planner.
The incomplete markers are named by Snakemake's own function; the job → files mapping is
checked against a Snakemake dry run (marker ``workflow``)."""

from __future__ import annotations

import os
import re
from types import SimpleNamespace

import pytest

from postrisk.cli import main
from postrisk.grid.config import read_config
from postrisk.planning.planner import Planner
from postrisk.planning.progress import (
    FAILED,
    FINISHED,
    MISSING,
    RUNNING,
    job_log,
    job_outputs,
    marker_path,
    progress,
    progress_lines,
)
from tests.workflow_helpers import REPO, snakemake

SMOKE = REPO / "presets" / "smoke.yaml"


@pytest.fixture(scope="module")
def planner():
    return Planner(read_config(SMOKE, base=REPO / "config.yaml"))


@pytest.fixture(autouse=True)
def _checkout(monkeypatch):
    monkeypatch.chdir(REPO)  # the CLI reads ./config.yaml, as the planner above does


def _jobs(planner):
    """Every planned job as (rule, its wildcard values, its outputs, its log)."""
    return [(rule, ident, job_outputs(planner, rule, job), job_log(rule, ident))
            for rules in planner.rules.values() for rule in rules
            for ident, job in rule.jobs.items()]


def _touch(workdir, *paths):
    for p in paths:
        (workdir / p).parent.mkdir(parents=True, exist_ok=True)
        (workdir / p).write_text("")


def _snakemake_marker(workdir, key, max_len=None):
    """The incomplete marker Snakemake's file persistence writes for the output ``key``."""
    from snakemake.persistence.file import FilePersistence

    persistence = object.__new__(FilePersistence)  # its naming only: no .snakemake made
    persistence._max_len = max_len
    return persistence._record_path(str(workdir / ".snakemake" / "incomplete"), key)


def _mark(workdir, key):
    (workdir / ".snakemake" / "incomplete").mkdir(parents=True, exist_ok=True)
    marker = _snakemake_marker(workdir, key)
    os.makedirs(os.path.dirname(marker), exist_ok=True)
    with open(marker, "w") as f:
        f.write('{"external_jobid": "4242"}')


def _scene(planner, workdir):
    """One job finished, one ended without an output (its log there), one whose outputs and
    log are there but marked incomplete; the rest untouched. Returns the three jobs."""
    jobs = _jobs(planner)
    assert len(jobs) >= 3
    finished = jobs[0]
    # the longest job's outputs: with two or more, the failed one keeps one of them
    ended = max(jobs[1:], key=lambda j: len(j[2]))
    interrupted = next(j for j in jobs[1:] if j is not ended)
    _touch(workdir, *finished[2], finished[3])
    _touch(workdir, *ended[2][:-1], ended[3])
    _touch(workdir, *interrupted[2], interrupted[3])
    _mark(workdir, interrupted[2][0])
    return finished, ended, interrupted


def _label(job):
    rule, ident = job[0], job[1]
    return f"{rule.name} {'/'.join(ident)}" if ident else rule.name


def test_a_fresh_folder_has_every_planned_job_missing_and_exits_0(planner, tmp_path, capsys):
    assert main(["progress", "--configfile", str(SMOKE), "--directory", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    total = sum(len(rule.jobs) for rules in planner.rules.values() for rule in rules)
    assert re.search(rf"^total\s+{total:,}\s+0\s+0\s+0\s+{total:,}$", out, flags=re.MULTILINE)
    for name, n in planner.job_counts().items():
        assert re.search(rf"^{name}\s+{n:,}\s+0\s+0\s+0\s+{n:,}$", out, flags=re.MULTILINE)
    assert "failed jobs" not in out
    assert "run (or rerun) the same snakemake command" in out


def test_finished_failed_and_incomplete_jobs_are_counted_and_listed(planner, tmp_path, capsys):
    finished, ended, interrupted = _scene(planner, tmp_path)
    report = progress(planner, tmp_path)
    want = {}
    for job, state in ((finished, FINISHED), (ended, FAILED), (interrupted, FAILED)):
        want.setdefault(job[0].name, {}).setdefault(state, 0)
        want[job[0].name][state] += 1
    total = len(_jobs(planner))
    for name, counts in report.counts.items():
        assert sum(counts.values()) == planner.job_counts()[name]
        for state in (FINISHED, FAILED):
            assert counts[state] == want.get(name, {}).get(state, 0), (name, state)
        assert counts[RUNNING] == 0
    assert report.total(MISSING) == total - 3
    assert sorted(j.label for j in report.failed) == sorted(map(_label, (ended, interrupted)))

    assert main(["progress", "--configfile", str(SMOKE), "--directory", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "failed jobs (2):" in out
    assert re.search(rf"^total\s+{total:,}\s+1\s+0\s+2\s+{total - 3:,}$", out, flags=re.M)
    lines = out.splitlines()
    for job in (ended, interrupted):
        at = lines.index(next(line for line in lines if line.startswith(f"  {_label(job)}:")))
        assert lines[at + 1] == f"    log: {tmp_path / job[3]}"
    assert f"{tmp_path / ended[2][-1]} missing" in out
    assert "marked incomplete" in out and "SLURM job 4242" in out
    assert "rerun the same snakemake command" in out.splitlines()[-1]


def test_a_marked_job_is_running_while_a_snakemake_run_holds_the_lock(planner, tmp_path,
                                                                      capsys):
    """Snakemake marks a job's outputs when it submits the job and holds the folder's lock
    while it runs: such a job is running, not failed (exit status 0)."""
    _, ended, interrupted = _scene(planner, tmp_path)
    _touch(tmp_path, ".snakemake/locks/0.output.lock")
    report = progress(planner, tmp_path)
    assert report.locked and report.total(RUNNING) == 1
    assert report.counts[interrupted[0].name][RUNNING] == 1
    assert [j.label for j in report.failed] == [_label(ended)]
    (tmp_path / ended[3]).unlink()  # without its log, the failed one has not started
    assert main(["progress", "--configfile", str(SMOKE), "--directory", str(tmp_path)]) == 0
    assert "a Snakemake run is going (1 job submitted or running)" in capsys.readouterr().out


def test_the_newest_slurm_log_of_a_failed_job_is_listed(planner, tmp_path):
    """Where the slurm executor plugin keeps it: in a folder per job named as the plugin
    names it (none for a rule without wildcards), the newest log."""
    utils = pytest.importorskip("snakemake_executor_plugin_slurm.utils")
    failed = _scene(planner, tmp_path)[1:]
    newest = {}
    for i, (rule, ident, _, _) in enumerate(failed):
        folder = (tmp_path / ".snakemake" / "slurm_logs" / f"rule_{rule.name}"
                  / utils.get_job_wildcards(SimpleNamespace(wildcards=ident)))
        _touch(folder, f"{i}00.log", f"{i}01.log")
        os.utime(folder / f"{i}01.log", (1e9, 1e9))  # the older one
        newest[_label(failed[i])] = folder / f"{i}00.log"
    report = progress(planner, tmp_path)
    assert {j.label: j.slurm_log for j in report.failed} == newest
    lines = progress_lines(report)
    assert all(f"    SLURM log: {log}" in lines for log in newest.values())


def test_the_listing_stops_at_its_limit(planner, tmp_path):
    _scene(planner, tmp_path)
    lines = progress_lines(progress(planner, tmp_path), limit=1)
    assert "failed jobs (2):" in lines and "  … and 1 more" in lines


def test_a_results_folder_elsewhere(planner, tmp_path):
    """``--results``: the outputs and logs there, Snakemake's records in ``--directory``."""
    rule, _, outputs, _ = _jobs(planner)[0]
    elsewhere = tmp_path / "elsewhere"
    _touch(elsewhere, *(p.removeprefix("results/") for p in outputs))
    assert progress(planner, tmp_path, elsewhere).counts[rule.name][FINISHED] == 1
    assert progress(planner, tmp_path).counts[rule.name][FINISHED] == 0


@pytest.mark.parametrize("key, max_len", [
    ("results/tasks/concrete/gp/smooth_monotone/balanced/0.zarr", None),
    ("results/fits/" + "x" * 300 + "/blr.zarr", None),  # longer than a file name may be
    ("results/tuning/concrete/gp/bump/ood/blr.json", 16),  # cut into folders
])
def test_markers_are_named_as_snakemake_names_them(tmp_path, key, max_len):
    incomplete = tmp_path / ".snakemake" / "incomplete"
    incomplete.mkdir(parents=True)
    ours = marker_path(incomplete, key, max_len or os.pathconf(incomplete, "PC_NAME_MAX"))
    assert str(ours) == _snakemake_marker(tmp_path, key, max_len)


@pytest.mark.workflow
def test_each_jobs_files_are_those_snakemake_declares(tmp_path):
    """A dry run of the demo preset with the studies (every kind of rule: batched with
    group_by, one job per unit, one job per stage, figures, the studies' summaries): each job's
    outputs and log as Snakemake prints them are the planner's."""
    files = [str(REPO / "presets" / f) for f in ("demo.yaml", "studies.yaml")]
    run = snakemake(tmp_path, "-n", "--cores", "1", "--configfile", *files)
    assert run.returncode == 0, run.stderr[-3000:]
    printed = set()
    for block in re.split(r"^\[.*\]\n(?=(?:local)?rule )", run.stdout, flags=re.M)[1:]:
        rule = re.match(r"(?:local)?rule (\w+):", block).group(1)
        fields = dict(re.findall(r"^    (\w+): (.*)$", block, flags=re.M))
        if rule != "all":
            printed.add((rule, frozenset(fields["output"].split(", ")), fields.get("log")))
    planner = Planner(read_config(*files, base=REPO / "config.yaml"))
    planned = {(rule.name, frozenset(outputs), log) for rule, _, outputs, log in _jobs(planner)}
    assert planned == printed
