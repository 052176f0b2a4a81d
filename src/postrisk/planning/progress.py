"""How far a run of the workflow has got (``postrisk progress``): every job the planner plans,
classified from the files on disk, without building Snakemake's DAG (cheap on the full grid).

A job's files are those its rule declares (rules/*.smk): its outputs (:func:`job_outputs`) and
its ``log:`` file (:func:`job_log`), paths under ``results/`` relative to Snakemake's working
directory (``--directory``; ``results`` may be given elsewhere). Snakemake records there, in
``.snakemake/``, what it is doing: when it submits a job it writes one *incomplete marker* per
output (``.snakemake/incomplete/``, named as :func:`marker_path` names it) and removes them when
the job ends, failed or not (a failed job's outputs are deleted, its log kept); while a run
goes it holds the folder's lock (``.snakemake/locks/``). So a job is

- ``finished``: every output exists and none is marked;
- ``running``: an output is marked while a Snakemake run holds the lock (submitted or running);
- ``failed``: it ended without its outputs (its log exists, an output is missing, nothing is
  marked), or an output is marked and no run holds the lock (the run stopped before the job
  ended: Snakemake calls such outputs incomplete);
- ``missing``: not started (no log, no marker, an output missing).

The slurm executor plugin keeps a failed job's SLURM log in
``.snakemake/slurm_logs/rule_<rule>/<wildcard values joined by _>/<SLURM job id>.log``.
"""

from __future__ import annotations

import json
import os
from base64 import urlsafe_b64encode
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from postrisk.grid.artefact import figure_files
from postrisk.grid.paths import RESULTS
from postrisk.grid.stages import is_batched
from postrisk.planning.jobs import Job, StageRule
from postrisk.planning.planner import Planner
from postrisk.planning.seeds import known_selections

FINISHED, RUNNING, FAILED, MISSING = "finished", "running", "failed", "missing"
#: The states of a job, in the order the table shows them.
STATES = (FINISHED, RUNNING, FAILED, MISSING)
#: How many failed jobs the report lists.
LISTED = 20


def job_outputs(planner: Planner, rule: StageRule, job: Job) -> list[str]:
    """The outputs of ``job`` of ``rule`` as its rule declares them (``results/…`` paths): a
    batched stage's units' outputs; a figure job's PNG and PDF; a stage with one unit per job
    (covariates, prior, valid_seeds, score, disentanglement) that unit's file; a stage of one
    job without units (checks, tables, report, a study's summary, the studies' page) every
    file of its catalogue stage."""
    if is_batched(rule.stage):
        return job.outputs
    if rule.stage == "figure":
        return [f for entry in job.units for f in figure_files(entry.path_of())]
    if job.units:
        return [unit.out for unit in job.units]
    return planner.stage_files(rule.stage)


def job_log(rule: StageRule, ident: tuple[str, ...]) -> str:
    """The ``log:`` file of the job of ``rule`` named by the wildcard values ``ident``."""
    return rule.log.format(**dict(zip(rule.keys, ident, strict=True)))


def marker_path(incomplete: Path, key: str, max_len: int = 255) -> Path:
    """Snakemake's incomplete marker of the output ``key`` (its path as the rule declares it)
    under the folder ``incomplete`` (``.snakemake/incomplete``), as its file persistence names
    it: the key urlsafe-base64-encoded, cut into pieces of ``max_len - 1`` characters (the
    file system's longest name), each but the last a folder prefixed with ``@``."""
    encoded = urlsafe_b64encode(key.encode()).decode()
    step = max_len - 1
    pieces = [encoded[i:i + step] for i in range(0, len(encoded), step)]
    return incomplete.joinpath(*("@" + p for p in pieces[:-1]), pieces[-1])


def _name_max(folder: Path) -> int:
    """The longest file name of ``folder``'s file system (255 where it cannot be asked)."""
    try:
        return os.pathconf(folder, "PC_NAME_MAX") or 255
    except (OSError, ValueError, AttributeError):
        return 255


def slurm_log(workdir: Path, rule: str, ident: tuple[str, ...]) -> Path | None:
    """The newest SLURM log the slurm executor plugin kept for the job of ``rule`` named by
    ``ident`` (None where there is none)."""
    folder = workdir / ".snakemake" / "slurm_logs" / f"rule_{rule}"
    folder = folder / "_".join(ident).replace("/", "_") if ident else folder
    logs = [p for p in folder.glob("*.log") if p.is_file()] if folder.is_dir() else []
    return max(logs, key=lambda p: p.stat().st_mtime, default=None)


def snakemake_running(workdir: Path) -> bool:
    """Whether a Snakemake run holds ``workdir``'s lock (a stale lock, left by a run that was
    killed, reads the same until ``snakemake --unlock``)."""
    locks = workdir / ".snakemake" / "locks"
    return locks.is_dir() and any(locks.glob("*.lock"))


@dataclass(frozen=True)
class JobState:
    """One planned job: its rule, its name (its wildcard values joined by ``/``; empty for a
    rule of one job), its state, why (failed and running jobs), its log and SLURM log."""

    rule: str
    name: str
    state: str
    log: Path
    reason: str = ""
    slurm_log: Path | None = None

    @property
    def label(self) -> str:
        return f"{self.rule} {self.name}" if self.name else self.rule


@dataclass
class Progress:
    """Every rule's job counts by state (rules in workflow order) and its failed jobs."""

    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    failed: list[JobState] = field(default_factory=list)
    locked: bool = False  # a Snakemake run holds the working directory's lock

    def total(self, state: str | None = None) -> int:
        """Jobs in ``state`` over every rule (None: every planned job)."""
        return sum(n for c in self.counts.values() for s, n in c.items() if state in (None, s))


def _marked(incomplete: Path) -> set[Path]:
    """Every incomplete marker under ``incomplete`` (one walk, as Snakemake reads them)."""
    return {Path(root) / f for root, _, files in os.walk(incomplete) for f in files}


def _slurm_job(marker: Path) -> str | None:
    """The SLURM job id a marker records (``external_jobid``), where it records one."""
    try:
        return json.loads(marker.read_text()).get("external_jobid")
    except (OSError, ValueError, AttributeError):
        return None


def job_states(planner: Planner, workdir: str | Path = ".",
               results: str | Path | None = None) -> Iterator[JobState]:
    """The state of every planned job (see the module docstring), rule by rule in workflow
    order. ``workdir``: Snakemake's working directory (the one holding ``.snakemake``);
    ``results``: the results folder (default: ``workdir/results``)."""
    workdir = Path(workdir)
    root = Path(results) if results is not None else workdir / RESULTS

    def on_disk(p: str) -> Path:
        return root / p[len(RESULTS) + 1:] if p.startswith(RESULTS + "/") else workdir / p

    incomplete = workdir / ".snakemake" / "incomplete"
    marked = _marked(incomplete) if incomplete.is_dir() else set()
    max_len = _name_max(incomplete) if marked else 255
    locked = snakemake_running(workdir)
    for rules in planner.rules.values():
        for rule in rules:
            for ident, job in rule.jobs.items():
                outputs = job_outputs(planner, rule, job)
                markers = [m for m in (marker_path(incomplete, k, max_len) for k in outputs)
                           if m in marked] if marked else []
                log = on_disk(job_log(rule, ident))
                absent = [p for p in outputs if not on_disk(p).exists()]
                reason = ""
                if markers and locked:
                    state, reason = RUNNING, "submitted or running"
                elif markers:
                    state, slurm_id = FAILED, _slurm_job(markers[0])
                    reason = ("marked incomplete: its Snakemake run stopped before it ended"
                              + (f" (SLURM job {slurm_id})" if slurm_id else "")
                              + "; --rerun-incomplete reruns it (profiles/slurm sets it)")
                elif not absent:
                    state = FINISHED
                elif log.exists():
                    state = FAILED
                    more = f" and {len(absent) - 1:,} more" if len(absent) > 1 else ""
                    reason = f"ended without its outputs: {on_disk(absent[0])} missing{more}"
                else:
                    state = MISSING
                yield JobState(rule.name, "/".join(ident), state, log, reason,
                               slurm_log(workdir, rule.name, ident) if state == FAILED else None)


def progress(planner: Planner, workdir: str | Path = ".",
             results: str | Path | None = None) -> Progress:
    """Every planned job's state (:func:`job_states`), counted per rule, the failed ones
    listed."""
    out = Progress(locked=snakemake_running(Path(workdir)))
    for job in job_states(planner, workdir, results):
        counts = out.counts.setdefault(job.rule, dict.fromkeys(STATES, 0))
        counts[job.state] += 1
        if job.state == FAILED:
            out.failed.append(job)
    return out


def config_progress(cfg: Mapping, workdir: str | Path = ".",
                    results: str | Path | None = None) -> Progress:
    """:func:`progress` of the validated configuration ``cfg``, planned as the workflow plans
    it there: with the seed selections written in the results folder (default:
    ``workdir/results``)."""
    root = Path(results) if results is not None else Path(workdir) / RESULTS
    return progress(Planner(cfg, known_selections(cfg, str(root))), workdir, root)


def progress_lines(report: Progress, limit: int = LISTED) -> list[str]:
    """The report as lines: a table per rule (planned, then the jobs in each state) with the
    totals, the failed jobs (at most ``limit``) with their logs, and what to do next."""
    header = ("rule", "planned", *STATES)
    rows = [(rule, sum(c.values()), *(c[s] for s in STATES))
            for rule, c in report.counts.items()]
    rows.append(("total", report.total(), *(report.total(s) for s in STATES)))
    width = max(len(str(r[0])) for r in [header, *rows])
    lines = []
    for row in [header, *rows]:
        cells = [f"{v:,}" if isinstance(v, int) else v for v in row[1:]]
        lines.append(f"{row[0]:<{width}}  " + "  ".join(f"{c:>8}" for c in cells).rstrip())
    if report.failed:
        lines += ["", f"failed jobs ({len(report.failed):,}):"]
        for job in report.failed[:limit]:
            lines.append(f"  {job.label}: {job.reason}")
            lines.append(f"    log: {job.log}" + ("" if job.log.exists() else " (none)"))
            if job.slurm_log:
                lines.append(f"    SLURM log: {job.slurm_log}")
        if len(report.failed) > limit:
            lines.append(f"  … and {len(report.failed) - limit:,} more")
    lines += ["", _next_step(report)]
    return lines


def _next_step(report: Progress) -> str:
    """One line: what to do now."""
    n = report.total(RUNNING)
    running = (f"a Snakemake run is going ({n:,} job{'' if n == 1 else 's'} submitted or "
               "running); " if report.locked else "")
    if report.failed:
        return (running + ("once it has ended, " if report.locked else "to go on, ")
                + "rerun the same snakemake command (it reruns the failed jobs and the missing "
                "ones); the failed jobs' logs are listed above")
    if report.total(MISSING):
        return running + ("wait for it (on SLURM, `squeue --me` lists its jobs)"
                          if report.locked else
                          "to go on, run (or rerun) the same snakemake command")
    if report.total(RUNNING):
        return running.removesuffix("; ")
    return "every planned job is finished"
