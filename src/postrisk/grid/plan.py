"""The plan of a configuration as a person reads it (its jobs and what they request, per rule;
where its outputs are) and the guard against running the full grid locally by accident."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from postrisk.grid.artefacts import artefact, stage_artefacts
from postrisk.grid.conditions import (
    conditions,
    covariate_datasets,
    implemented_methods,
    implemented_priors,
)
from postrisk.grid.paths import RESULTS, path
from postrisk.grid.planner import Planner


@dataclass(frozen=True)
class RulePlan:
    """What the jobs of one rule ask for (:mod:`postrisk.grid.jobs`): the same numbers the
    workflow's rules declare, so ``postrisk plan`` and a cluster run agree."""

    rule: str
    stage: str
    jobs: int
    threads: int  # the largest of its jobs'
    runtime_min: int  # minutes, the shortest job's request
    runtime_max: int  # minutes, the longest job's request
    mem_mb: int  # the largest job's request
    gpu_jobs: int
    requested_hours: float  # Σ runtime × threads over the jobs (core-hours asked for)


def plan(cfg: Mapping, planner: Planner | None = None) -> list[RulePlan]:
    """Per rule of the workflow for ``cfg``: its jobs and what they request (threads, runtime
    and memory from ``cost_model``; a GPU where the prior or method declares one);
    ``planner``: the config's planner, when the caller has built it already."""
    rows = []
    for stage, rules in (planner or Planner(cfg)).rules.items():
        for rule in rules:
            res = [job.resources for job in rule.jobs.values()]
            if not res:
                continue
            rows.append(RulePlan(
                rule=rule.name, stage=stage, jobs=len(res), threads=max(r.threads for r in res),
                runtime_min=min(r.runtime for r in res), runtime_max=max(r.runtime for r in res),
                mem_mb=max(r.mem_mb for r in res), gpu_jobs=sum(r.gpu > 0 for r in res),
                requested_hours=sum(r.runtime * r.threads for r in res) / 60))
    return rows


def n_instances(cfg: Mapping) -> int:
    return sum(1 for _ in conditions(cfg)) * cfg["seeds"]["candidates"]


def plan_table(rows: list[RulePlan]) -> str:
    """The plan as a Markdown table (one row per rule, then the total)."""
    lines = ["| rule | jobs | threads | runtime (min) | mem_mb | GPU | core-hours requested |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        runtime = (f"{r.runtime_min}" if r.runtime_min == r.runtime_max
                   else f"{r.runtime_min}–{r.runtime_max}")
        lines.append(f"| {r.rule} | {r.jobs:,} | {r.threads} | {runtime} | {r.mem_mb:,} | "
                     f"{'1' if r.gpu_jobs else '–'} | {r.requested_hours:,.1f} |")
    lines.append(f"| total | {sum(r.jobs for r in rows):,} | | | | "
                 f"{sum(r.gpu_jobs for r in rows):,} jobs | "
                 f"{sum(r.requested_hours for r in rows):,.1f} |")
    return "\n".join(lines)


def plan_report(cfg: Mapping, planner: Planner | None = None) -> str:
    """The grid's size and, per rule, its jobs and what they request."""
    rows = plan(cfg, planner)
    lines = [
        f"grid: {len(cfg['datasets'])} datasets × {len(cfg['priors'])} priors × "
        f"{len(cfg['noise_modes'])} noise modes × {len(cfg['coverages'])} coverages × "
        f"{cfg['seeds']['candidates']} candidate seeds"
        f"{' (narrowed per prior by prior_grid)' if cfg.get('prior_grid') else ''} = "
        f"{n_instances(cfg):,} instances "
        f"({cfg['seeds']['valid_per_cell']} valid seeds used per cell)",
        "resources per job from cost_model (runtime: margin × estimate; what a cluster run "
        "requests):",
        plan_table(rows),
    ]
    missing_priors = [p for p in cfg["priors"] if p not in implemented_priors(cfg)]
    missing_methods = [m for m in cfg.get("methods", []) if m not in implemented_methods(cfg)]
    if missing_priors or missing_methods:
        lines.append(f"(not implemented yet, not planned: priors {missing_priors or '-'}; "
                     f"{len(missing_methods)} methods)")
    return "\n".join(lines)


def output_lines(cfg: Mapping, results: str | Path = RESULTS) -> Iterator[str]:
    """Where the outputs of ``cfg`` are under ``results``, line by line (``postrisk outputs``):
    each covariate store with its headline facts, how many task stores are present, every
    table, figure and page of the catalogue (the release: ``snakemake release``), each marked
    where missing, and the report's address."""
    from postrisk.covariates.build import summarize_store

    root = str(results)
    scale = cfg["scale"]
    note = "" if scale == "paper" else f" ({scale} scale — not comparable to the paper)"
    yield f"outputs{note}:"
    yield f"  covariates: {Path(root) / 'covariates'}/"
    for name in covariate_datasets(cfg):
        store = Path(path("covariates", root, dataset=name))
        if store.exists():
            s = summarize_store(store)
            yield (f"    {store}  d/N = {s['d']}/{s['N']:,}  n_eval = {s['n_eval']:,}  "
                   f"outermost-shell share (eval) = {s['outer_shell_share_eval']:.3f}")
        else:
            yield f"    {store}  (missing)"
    planner = Planner(cfg)
    if planner.conditions:
        tasks = [Path(path("task", root, **c._asdict(), seed=s))
                 for c in planner.conditions for s in planner.seeds.prior_seeds(c.prior)]
        present = sum(t.exists() for t in tasks)
        yield f"  task stores: {Path(root) / 'tasks'}/  ({present} of {len(tasks)} present)"
        for stage in ("checks", "tables", "figure", "report"):
            for item in planner.artefacts(*stage_artefacts(stage), root=root):
                keys = ", ".join(str(v) for _, v in item.keys)
                label = item.entry.title + (f" ({keys})" if keys else "")
                out = Path(item.path)
                yield f"  {label}: {out}" + ("" if out.exists() else "  (missing)")
        report = Path(artefact("report").path_of(root))
        yield (f"report (open in a browser): {report.resolve().as_uri()}"
               + ("" if report.exists() else "  (missing)"))


def study_output_lines(cfg: Mapping, results: str | Path = RESULTS) -> Iterator[str]:
    """Where the studies' outputs of ``cfg`` are (``postrisk outputs --studies``): each study
    that runs, its tables and figures, and the studies' page."""
    planner, root = Planner(cfg), str(results)
    if not planner.studies():
        yield "no study runs in this configuration (its `studies` section names none)"
        return
    scale = cfg["scale"]
    note = "" if scale == "paper" else f" ({scale} scale — not comparable to the paper)"
    yield f"studies{note}: {', '.join(planner.studies())}"
    for item in planner.study_contents(root):
        out = Path(item.path)
        yield f"  {item.entry.title}: {out}" + ("" if out.exists() else "  (missing)")
    page = Path(artefact("studies_report").path_of(root))
    yield (f"studies report (open in a browser): {page.resolve().as_uri()}"
           + ("" if page.exists() else "  (missing)"))


def guard_message(cfg: Mapping, planner: Planner | None = None) -> str | None:
    """Why a plain local run of ``cfg`` must stop for confirmation, or None if it may go on."""
    guard = cfg["local_guard"]
    if cfg.get("confirm_full_run", False) or n_instances(cfg) <= guard["max_instances"]:
        return None
    return (
        "This configuration is the full grid, meant for a cluster "
        "(`snakemake --profile profiles/slurm`).\n" + plan_report(cfg) + "\n"
        "To run it locally anyway, confirm with `--config confirm_full_run=True`; to try it "
        "small, use "
        "`--configfile presets/demo.yaml`; to build one target, name it on the command line."
    )
