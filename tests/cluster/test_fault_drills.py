"""What a cluster throws at a run, drilled on the real cluster: each drill starts from a copy of
the finished smoke run and reruns one or two fit jobs through the profile, then checks the
message a user sees and that the documented next step ends with the local run's outputs.

The drills run in this order; the last one takes the cluster's accounting away."""

from __future__ import annotations

import os
import re
import signal
import subprocess

import yaml

from tests.cluster.conftest import (
    PRESET,
    cluster_env,
    copy_run,
    run_on_cluster,
    running_job,
    squeue,
    start_on_cluster,
    wait_for,
)
from tests.cluster.test_cluster_run import compare
from tests.workflow_helpers import REPO, SNAKEMAKE


def planned_fit(method: str, *configfiles: str):
    """(first output, request) of the planned fit job of ``method`` under the smoke preset."""
    from postrisk.grid.config import read_config
    from postrisk.planning.planner import Planner
    from postrisk.planning.seeds import known_selections

    cfg = read_config(PRESET, *configfiles)
    for rule in Planner(cfg, known_selections(cfg)).stage_rules("fit"):
        for job in rule.jobs.values():
            if job.units[0].method == method:
                return job.outputs[0], job.resources
    raise AssertionError(f"the smoke preset plans no fit of {method}")


def finish(proc: subprocess.Popen, workdir, timeout: float = 420) -> str:
    proc.wait(timeout=timeout)
    return _out(workdir)


def test_a_cancelled_job_is_named_with_its_log_and_the_rerun_completes(
        cluster_run, local_run, tmp_path):
    workdir = copy_run(cluster_run[0], tmp_path / "run")
    target, _ = planned_fit("nn_ens")
    # one attempt: the profile's `retries: 1` would submit it once more, and the plugin notices
    # a failure only at its next status check, 10 s later at each check that finds none
    proc = start_on_cluster(workdir, "--retries", "0", "--forcerun", target, "--", target)
    job = wait_for(lambda: running_job("fit"), 120, "the fit job to run", step=0.2)
    subprocess.run(["scancel", job], check=True)
    out = finish(proc, workdir)
    assert proc.returncode != 0, out[-3000:]
    assert f"SLURM-job '{job}' failed, SLURM status is: 'CANCELLED'" in out
    assert ".snakemake/slurm_logs/rule_fit/" in out and f"/{job}.log" in out
    # the advice at the end: which job, that it was cancelled, its logs, what to do
    assert f"SLURM job {job} of rule fit ({target}) was cancelled" in out, out[-3000:]
    assert "rerun the same command" in out
    rerun = run_on_cluster(workdir, target)
    assert rerun.returncode == 0, (rerun.stdout + rerun.stderr)[-3000:]
    result = compare(local_run(), workdir)
    assert result.returncode == 0, result.stdout[-3000:]


def _out(workdir) -> str:
    path = workdir / "snakemake.out"
    return path.read_text() if path.exists() else ""


def test_a_job_over_its_time_limit_names_the_rule_the_limit_and_the_key_to_raise(
        cluster_run, tmp_path):
    workdir = copy_run(cluster_run[0], tmp_path / "run")
    # a slow fit with a cost-model entry that asks for the least time (one minute). The fit
    # must outlast the minute and the controller's time-limit check by far on any machine:
    # 5,000,000 epochs take ≈ 8 min at the ≈ 10,600 epochs/s measured here (500,000, 47 s,
    # finished inside the limit on a quiet machine)
    slow = tmp_path / "slow_fit.yaml"
    smoke = yaml.safe_load(open(PRESET))
    settings = {**smoke["method_settings"]["nn_ens"], "n_epochs": 5_000_000}
    slow.write_text(yaml.safe_dump({
        "method_settings": {"nn_ens": settings},
        "cost_model": {"fit": {"nn_ens": {"minutes": 0.001, "minutes_per_size": 0.0}}}}))
    target, request = planned_fit("nn_ens", str(slow))
    # one attempt (the profile's retry would only hit the same limit again)
    run = run_on_cluster(workdir, "--retries", "0", "--", target, configfiles=(str(slow),))
    out = run.stdout + run.stderr
    assert run.returncode != 0, out[-3000:]
    assert "SLURM status is: 'TIMEOUT'" in out
    advice = re.search(r"SLURM job \d+ of rule fit .*", out)
    assert advice, out[-3000:]
    line = advice[0]
    assert target in line and f"reached its time limit ({request.runtime} min)" in line
    assert "raise cost_model.fit.nn_ens.minutes (now 0.001) or cost_model.margin" in line
    assert not (workdir / target).exists()  # the killed job's output is not left half-written


def test_a_restarted_controller_leaves_the_run_going(cluster, cluster_run, local_run,
                                                     tmp_path):
    workdir = copy_run(cluster_run[0], tmp_path / "run")
    target, _ = planned_fit("nn_ens")
    proc = start_on_cluster(workdir, "--forcerun", target, "--", target)
    wait_for(lambda: running_job("fit"), 180, "the fit job to run", step=0.3)
    cluster.restart_controller()
    out = finish(proc, workdir)
    assert proc.returncode == 0, out[-3000:] + cluster.log_tails()
    again = run_on_cluster(workdir, target)
    assert "Nothing to be done" in again.stdout + again.stderr
    result = compare(local_run(), workdir)
    assert result.returncode == 0, result.stdout[-3000:]


def test_a_killed_workflow_is_rerun_as_documented_and_leaves_nothing_incomplete(
        cluster_run, local_run, tmp_path):
    workdir = copy_run(cluster_run[0], tmp_path / "run")
    targets = [planned_fit(method)[0] for method in ("blr", "nn_lap_sn")]
    proc = start_on_cluster(workdir, "--forcerun", *targets, "--", *targets)
    wait_for(lambda: running_job("fit"), 180, "a fit job to run", step=0.3)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    out = (workdir / "snakemake.out").read_text()
    run_id = re.search(r"SLURM run ID: (\S+)", out)[1]
    # the documented rerun (docs/guide.md, "When a cluster run fails"): cancel the killed run's
    # jobs, unlock, run the same command
    subprocess.run(["scancel", "--name", run_id], check=True)
    wait_for(lambda: not [r for r in squeue() if r[1] == run_id], 60, "the jobs to end")
    unlock = subprocess.run([SNAKEMAKE, "--profile", "profiles/slurm", "--configfile", PRESET,
                             "--directory", str(workdir), "--unlock"], cwd=REPO,
                            env=cluster_env(), capture_output=True, text=True)
    assert unlock.returncode == 0, unlock.stderr[-2000:]
    rerun = run_on_cluster(workdir, *targets)
    assert rerun.returncode == 0, (rerun.stdout + rerun.stderr)[-3000:]
    assert not any((workdir / ".snakemake/incomplete").iterdir())
    result = compare(local_run(), workdir)
    assert result.returncode == 0, result.stdout[-3000:]


def test_a_site_without_accounting_stops_at_once_then_runs_with_squeue(
        cluster, cluster_run, local_run, tmp_path):
    cluster.stop_accounting()
    workdir = copy_run(cluster_run[0], tmp_path / "run")
    target, _ = planned_fit("blr")
    # the plugin's default status query (sacct) cannot answer: one message, nothing submitted
    run = run_on_cluster(workdir, "--forcerun", target, "--", target, timeout=120)
    out = run.stdout + run.stderr
    assert run.returncode != 0, out[-3000:]
    assert "the SLURM status query cannot answer on this cluster (sacct:" in out
    assert "add --slurm-status-command squeue" in out and "(nothing was submitted)" in out
    run_id = re.search(r"SLURM run ID: (\S+)", out)[1]
    assert "has been submitted" not in out
    assert not [row for row in squeue("--states=all") if row[1] == run_id]
    # the profile's documented setting for such a site
    run = run_on_cluster(workdir, "--slurm-status-command", "squeue", "--forcerun", target,
                         "--", target)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    result = compare(local_run(), workdir)
    assert result.returncode == 0, result.stdout[-3000:]
