"""postrisk.workflow.slurm_status: the status query the slurm executor plugin will run, chosen
as the plugin chooses it, checked before anything is submitted (the cluster drill of a site
without accounting runs it for real: tests/cluster/test_fault_drills.py)."""

import pytest

from postrisk.workflow.slurm_status import (
    QueryResult,
    effective_status_command,
    status_query_problem,
)


def _have(*tools):
    return lambda tool: tool in tools


@pytest.mark.parametrize("requested, min_job_age, tools, expected", [
    ("sacct", 300, ("sacct", "squeue"), "sacct"),
    ("squeue", 300, ("sacct", "squeue"), "squeue"),       # MinJobAge >= 3 × 40 s
    ("squeue", 100, ("sacct", "squeue"), "sacct"),        # too short: the plugin goes back
    ("squeue", None, ("sacct", "squeue"), "sacct"),       # unknown: the same
    ("squeue", 100, ("squeue",), "squeue"),               # no sacct to go back to
    ("sacct", 300, ("squeue",), "squeue"),                # sacct not installed
])
def test_the_status_command_is_the_one_the_plugin_will_use(requested, min_job_age, tools,
                                                           expected):
    command, _ = effective_status_command(requested, 40, min_job_age, _have(*tools))
    assert command == expected


def test_a_query_that_answers_is_no_problem_and_the_plugins_own_query_is_run():
    asked = []

    def run(command):
        asked.append(command)
        return QueryResult(0, "")

    assert status_query_problem("sacct", 40, "run-1", run=run, min_job_age=300,
                                have=_have("sacct", "squeue")) is None
    assert asked[0].startswith("sacct ") and "--name run-1" in asked[0]
    assert status_query_problem("squeue", 40, "run-1", run=run, min_job_age=300,
                                have=_have("sacct", "squeue")) is None
    assert asked[1].startswith("squeue ") and "--name run-1" in asked[1]


def test_a_site_without_accounting_is_told_the_setting_and_the_min_job_age_it_needs():
    def no_accounting(command):
        if command.startswith("sacct"):
            return QueryResult(1, "sacct: error: Slurm accounting storage is disabled")
        return QueryResult(0, "")

    message = status_query_problem("sacct", 40, "r", run=no_accounting, min_job_age=300,
                                   have=_have("sacct", "squeue"))
    assert "(sacct: sacct: error: Slurm accounting storage is disabled)" in message
    assert "add --slurm-status-command squeue" in message
    assert message.endswith("(nothing was submitted)")
    # squeue asked for, but MinJobAge too short: the plugin would query sacct anyway
    message = status_query_problem("squeue", 40, "r", run=no_accounting, min_job_age=60,
                                   have=_have("sacct", "squeue"))
    assert "MinJobAge (60 s) is under 120 s" in message and "MinJobAge >= 120" in message
    # squeue itself failing (controller unreachable)
    message = status_query_problem("squeue", 40, "r", run=lambda c: QueryResult(1, "down"),
                                   min_job_age=300, have=_have("squeue"))
    assert "(squeue: down)" in message and "slurmctld reachable" in message


def test_a_cancelled_jobs_state_is_read_as_the_plugin_knows_it(monkeypatch):
    """sacct reports `CANCELLED by 0`; the plugin matches `CANCELLED` exactly and would wait
    for the job forever (the cancelled-job drill hung on it)."""
    import asyncio

    import snakemake_executor_plugin_slurm as plugin

    from postrisk.workflow.slurm_status import base_state, read_states_as_slurm_names_them

    assert base_state("CANCELLED by 0") == "CANCELLED"
    assert base_state("COMPLETED") == "COMPLETED" and base_state("") == ""

    async def sacct(command, logger):
        return {"22": "CANCELLED by 0", "23": "RUNNING"}, 0.01

    async def failing(command, logger):
        return None, None

    monkeypatch.setattr(plugin, "query_job_status", sacct)
    read_states_as_slurm_names_them()
    read_states_as_slurm_names_them()  # once per process, however often it is called
    states, duration = asyncio.run(plugin.query_job_status("sacct …", None))
    assert states == {"22": "CANCELLED", "23": "RUNNING"} and duration == 0.01
    monkeypatch.setattr(plugin, "query_job_status", failing)
    read_states_as_slurm_names_them()
    assert asyncio.run(plugin.query_job_status("sacct …", None)) == (None, None)
