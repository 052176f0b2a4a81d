"""What a SLURM run that failed tells its user at the end: for each job SLURM stopped, the rule,
the job's output, what SLURM said, and the one thing to change.

The executor plugin reports a job SLURM ended as ``Error in rule <rule>:`` with ``message:
SLURM-job '<id>' failed, SLURM status is: '<STATE>'`` in Snakemake's log, among the job's
output and logs. ``rules/common.smk`` (``onerror``) reads the run's log with
:func:`slurm_failures` and prints :func:`advice` for each: a job over its time limit or its
memory names the request and the cost-model key that sets it (``postrisk plan`` prints them); a
cancelled one, that it was cancelled and how to rerun.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from postrisk.planning.cost import CostModel
from postrisk.planning.jobs import StageRule

_BLOCK = re.compile(r"^Error in rule (?P<rule>\w+):\n(?P<body>(?:[ \t]+.*\n?)*)", re.M)
_STATUS = re.compile(r"SLURM-job '(?P<id>[^']+)' failed.*?SLURM status is: '(?P<state>\w+)'")
_FIELD = re.compile(r"^[ \t]+(?P<name>\w+): (?P<value>.*)$", re.M)

#: How SLURM's final states read to a user.
STATES = {"TIMEOUT": "reached its time limit", "OUT_OF_MEMORY": "ran out of memory",
          "CANCELLED": "was cancelled (scancel, or an administrator)",
          "NODE_FAIL": "lost its node", "PREEMPTED": "was preempted",
          "DEADLINE": "reached its deadline", "BOOT_FAIL": "could not start its node",
          "FAILED": "failed"}
RERUN = ("rerun the same command: the jobs that finished are kept, the rest run again "
         "(per-job logs: `postrisk progress`)")


@dataclass(frozen=True)
class SlurmFailure:
    """A job SLURM ended: its rule, SLURM job id and final state, outputs and logs."""

    rule: str
    slurm_job: str
    state: str
    outputs: tuple[str, ...]
    logs: tuple[str, ...]


def slurm_failures(log_text: str) -> list[SlurmFailure]:
    """The jobs SLURM ended, as Snakemake's log reports them (the last report of each job)."""
    found: dict[str, SlurmFailure] = {}
    for block in _BLOCK.finditer(log_text):
        status = _STATUS.search(block["body"])
        if status is None:
            continue
        fields = {m["name"]: m["value"].strip() for m in _FIELD.finditer(block["body"])}
        logs = fields.get("log", "").split(" (check log")[0]
        found[status["id"]] = SlurmFailure(
            rule=block["rule"], slurm_job=status["id"], state=status["state"],
            outputs=tuple(_split(fields.get("output", ""))), logs=tuple(_split(logs)))
    return list(found.values())


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


@dataclass(frozen=True)
class Request:
    """What the job asked for, and where that comes from: the cost-model entry's key
    (``cost_model.<stage>[.<name>]``) and its values."""

    runtime: int  # minutes
    mem_mb: int
    entry_key: str
    entry: Mapping[str, object]
    margin: float


def advice(failure: SlurmFailure, request: Request | None) -> str:
    """One paragraph for ``failure``: what happened to which job, and what to change."""
    what = STATES.get(failure.state, f"ended with state {failure.state}")
    output = failure.outputs[0] if failure.outputs else "(no output)"
    head = f"SLURM job {failure.slurm_job} of rule {failure.rule} ({output}) {what}"
    logs = f"; logs: {', '.join(failure.logs)}" if failure.logs else ""
    if failure.state in ("TIMEOUT", "DEADLINE") and request is not None:
        return (f"{head} ({request.runtime} min){logs}. The limit is the "
                f"cost model's estimate × cost_model.margin ({request.margin:g}): raise "
                f"{request.entry_key}.minutes (now {request.entry.get('minutes')}) or "
                f"cost_model.margin in a config file of yours (--configfile), then "
                f"{RERUN}.")
    if failure.state == "OUT_OF_MEMORY" and request is not None:
        return (f"{head}: it asked for {request.mem_mb} MB{logs}. Raise "
                f"{request.entry_key}.mem_mb (now {request.entry.get('mem_mb')}) in a config "
                f"file of yours (--configfile), then {RERUN}.")
    return f"{head}{logs}. To go on, {RERUN}."


def failure_report(log_text: str, request_of: Callable[[SlurmFailure], Request | None]) -> str:
    """Every SLURM failure of a run's log with its advice (empty: none), ``request_of`` giving
    a failed job's request (None where the planner does not know the job)."""
    return "\n".join(advice(f, request_of(f)) for f in slurm_failures(log_text))


def request_for(failure: SlurmFailure, rules: Iterable[StageRule],
                cost: CostModel) -> Request | None:
    """The request of the planned job that writes ``failure``'s first output (None where no
    planned job does), with the cost-model entry it comes from."""
    if not failure.outputs:
        return None
    for rule in rules:
        if rule.name != failure.rule:
            continue
        for job in rule.jobs.values():
            if failure.outputs[0] in job.outputs:
                name = getattr(job.units[0], "cost_name", None) if job.units else None
                return Request(job.resources.runtime, job.resources.mem_mb,
                               _entry_key(cost, rule.stage, name),
                               cost.entry(rule.stage, name),
                               float(cost.model.get("margin", 1.0)))
    return None


def _entry_key(cost: CostModel, stage: str, name: str | None) -> str:
    entry = cost.model.get(stage, {})
    if "threads" in entry or name is None:
        return f"cost_model.{stage}"
    return f"cost_model.{stage}.{name if name in entry else 'default'}"
