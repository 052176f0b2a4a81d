"""postrisk.workflow.slurm_faults: the jobs SLURM ended, read from Snakemake's log as the slurm
executor plugin reports them, each with what to change (the cluster drills run them for real:
tests/cluster/test_fault_drills.py)."""

from postrisk.grid.config import read_config
from postrisk.planning.planner import Planner
from postrisk.planning.seeds import known_selections
from postrisk.workflow.slurm_faults import (
    advice,
    failure_report,
    request_for,
    slurm_failures,
)
from tests.workflow_helpers import REPO

# A job over its time limit, as Snakemake 9.27 and the slurm plugin 2.8 logged it on the test
# cluster (the time-limit drill), with a local job's error after it.
LOG = """\
Job 0 has been submitted with SLURM jobid 38 (log: /w/.snakemake/slurm_logs/rule_fit/c/38.log).
[Mon Dec  7 05:31:52 2026]
Error in rule fit:
    message: SLURM-job '38' failed, SLURM status is: 'TIMEOUT'. Reason: Unknown.For further \
error details see the cluster/cloud log and the log files of the involved rule(s).
    jobid: 0
    input: results/samples/concrete/gp/smooth_monotone/balanced/0.zarr
    output: {fit}, results/tuning/concrete/gp/smooth_monotone/balanced/nn_ens.json
    log: results/logs/fit/nn_ens.log, /w/.snakemake/slurm_logs/rule_fit/c/38.log (check log \
file(s) for error details)
    external_jobid: 38
Error in rule covariates:
    jobid: 1
    output: results/covariates/concrete.zarr
Shutting down, this might take some time.
"""


def _planner():
    cfg = read_config(str(REPO / "presets/smoke.yaml"))
    planner = Planner(cfg, known_selections(cfg))
    return planner, [rule for rule in planner.stage_rules("fit")]


def _nn_ens_fit(rules):
    for rule in rules:
        for job in rule.jobs.values():
            if job.units[0].method == "nn_ens":
                return job
    raise AssertionError("no nn_ens fit planned")


def test_a_slurm_failure_is_read_with_its_rule_state_outputs_and_logs():
    planner, rules = _planner()
    fit = _nn_ens_fit(rules).outputs[0]
    [failure] = slurm_failures(LOG.format(fit=fit))  # the local error is not SLURM's
    assert (failure.rule, failure.slurm_job, failure.state) == ("fit", "38", "TIMEOUT")
    assert failure.outputs[0] == fit
    assert failure.logs == ("results/logs/fit/nn_ens.log",
                            "/w/.snakemake/slurm_logs/rule_fit/c/38.log")


def test_a_job_over_its_time_limit_is_told_its_limit_and_the_cost_model_key():
    planner, rules = _planner()
    job = _nn_ens_fit(rules)
    [failure] = slurm_failures(LOG.format(fit=job.outputs[0]))
    request = request_for(failure, rules, planner.cost)
    assert request.runtime == job.resources.runtime
    assert request.entry_key == "cost_model.fit.nn_ens"
    text = advice(failure, request)
    entry = planner.cost.entry("fit", "nn_ens")
    assert f"reached its time limit ({job.resources.runtime} min)" in text
    assert f"raise cost_model.fit.nn_ens.minutes (now {entry['minutes']})" in text
    assert f"cost_model.margin ({planner.cost.model['margin']:g})" in text
    assert "/w/.snakemake/slurm_logs/rule_fit/c/38.log" in text


def test_memory_cancel_and_unknown_jobs_get_their_own_advice():
    planner, rules = _planner()
    fit = _nn_ens_fit(rules).outputs[0]
    oom = LOG.format(fit=fit).replace("TIMEOUT", "OUT_OF_MEMORY")
    [failure] = slurm_failures(oom)
    text = advice(failure, request_for(failure, rules, planner.cost))
    assert "ran out of memory" in text and "Raise cost_model.fit.nn_ens.mem_mb" in text
    cancelled = LOG.format(fit=fit).replace("TIMEOUT", "CANCELLED")
    report = failure_report(cancelled, lambda f: None)
    assert "was cancelled" in report and "rerun the same command" in report
    # a job the planner does not know still gets what SLURM said
    [unknown] = slurm_failures(LOG.format(fit="results/elsewhere.zarr"))
    assert request_for(unknown, rules, planner.cost) is None
    text = advice(unknown, None)
    assert "reached its time limit; logs: " in text and "To go on, rerun" in text
    assert failure_report("no errors here", lambda f: None) == ""
