"""Whether the SLURM executor plugin's status queries can answer on this cluster, checked on the
submit host before anything is submitted.

The plugin asks ``sacct`` (the accounting database) by default, or ``squeue``
(``--slurm-status-command squeue``). A query that fails is not an error to it: it drops the jobs
it tracks and Snakemake then waits forever for them, ignoring SIGTERM. On a site without
accounting (``AccountingStorageType=accounting_storage/none``) every ``sacct`` fails, and the plugin
also goes back to ``sacct`` from ``squeue`` whenever ``MinJobAge`` is under three times its first
status interval. :func:`status_query_problem` runs the query the plugin would run, as it would
choose it, and says what to set where it cannot answer; ``rules/common.smk`` stops the run with
it (``onstart``: a real run, not a dry run).
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

#: The status query a site without accounting sets (the executor plugin's option).
SQUEUE_OPTION = "--slurm-status-command squeue"
#: How long one status query may take here before it counts as not answering (seconds).
QUERY_TIMEOUT = 60


@dataclass(frozen=True)
class QueryResult:
    returncode: int
    output: str


def run_query(command: str) -> QueryResult:
    """Run a status query as the plugin does (no shell), within :data:`QUERY_TIMEOUT`."""
    try:
        done = subprocess.run(shlex.split(command), capture_output=True, text=True,
                              timeout=QUERY_TIMEOUT)
    except FileNotFoundError as err:
        return QueryResult(127, str(err))
    except subprocess.TimeoutExpired:
        return QueryResult(124, f"no answer within {QUERY_TIMEOUT} s")
    return QueryResult(done.returncode, (done.stderr or done.stdout).strip())


def effective_status_command(requested: str, init_seconds: int, min_job_age: int | None,
                             have: Callable[[str], bool] = shutil.which) -> tuple[str, str]:
    """The status command the plugin will use, and why, from the one requested
    (``--slurm-status-command``), its first status interval and the cluster's ``MinJobAge``:
    ``squeue`` falls back to ``sacct`` where ``MinJobAge`` is under three times the interval and
    ``sacct`` is installed; ``sacct`` falls back to ``squeue`` where it is not installed."""
    threshold = 3 * init_seconds
    if requested == "squeue" and (min_job_age is None or min_job_age < threshold) \
            and have("sacct"):
        age = "unknown" if min_job_age is None else f"{min_job_age} s"
        return "sacct", (f"the plugin uses sacct instead of squeue because MinJobAge "
                         f"({age}) is under {threshold} s, three times its first status "
                         "interval")
    if requested == "sacct" and not have("sacct"):
        return "squeue", "sacct is not installed"
    return requested, ""


def status_query_problem(requested: str, init_seconds: int, run_id: str,
                         run: Callable[[str], QueryResult] = run_query,
                         min_job_age: int | None = None,
                         have: Callable[[str], bool] = shutil.which) -> str | None:
    """Why the plugin's status queries cannot answer on this cluster (one message saying what to
    set), or None where the query it will run answers. The query is the plugin's own, for
    ``run_id``."""
    from snakemake_executor_plugin_slurm.job_status_query import (
        query_job_status_sacct,
        query_job_status_squeue,
    )

    command, why = effective_status_command(requested, init_seconds, min_job_age, have)
    query = (query_job_status_sacct if command == "sacct" else query_job_status_squeue)(run_id)
    result = run(query)
    if result.returncode == 0:
        return None
    answer = result.output.splitlines()[-1] if result.output else f"exit {result.returncode}"
    message = (f"the SLURM status query cannot answer on this cluster ({command}: {answer}); "
               "the executor plugin would lose track of every job and wait forever")
    if command == "sacct":
        message += (f". A site without accounting: add {SQUEUE_OPTION} to the command (or "
                    "`slurm-status-command: squeue` to the profile)")
        if why:
            message += f"; {why}: ask the administrators for MinJobAge >= {3 * init_seconds}"
    else:
        message += ". Check that squeue works on this host (slurmctld reachable)"
    return message + " (nothing was submitted)"


def settings_of(workflow) -> dict:
    """:func:`status_query_problem`'s arguments from a Snakemake workflow run by the slurm
    executor: the status command and first interval it was given, the cluster's MinJobAge."""
    from snakemake_executor_plugin_slurm.job_status_query import get_min_job_age

    settings = workflow.executor_settings
    return {"requested": getattr(settings, "status_command", None) or "sacct",
            "init_seconds": int(getattr(settings, "init_seconds_before_status_checks", None)
                                or 40),
            "run_id": "postrisk-status-check", "min_job_age": get_min_job_age()}


def base_state(state: str) -> str:
    """A SLURM job state without what follows it: ``sacct`` reports a cancelled job as
    ``CANCELLED by <uid>``, and the plugin (2.8.0) matches states exactly, so it would take
    such a job for one still running and Snakemake would wait for it forever."""
    return state.split()[0] if state.strip() else state


def read_states_as_slurm_names_them() -> None:
    """Make the executor plugin read each job's state as :func:`base_state` gives it (its
    status query, wrapped once per process; the main Snakemake process of a SLURM run)."""
    import snakemake_executor_plugin_slurm as plugin

    query = plugin.query_job_status
    if getattr(query, "reads_base_states", False):
        return

    async def query_job_status(command, logger):
        states, duration = await query(command, logger)
        if states is not None:
            states = {job: base_state(state) for job, state in states.items()}
        return states, duration

    query_job_status.reads_base_states = True
    plugin.query_job_status = query_job_status
