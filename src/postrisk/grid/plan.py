"""The plan of a configuration (jobs and cost per stage), the guard against running the full
grid locally by accident, and the digest of the settings that determine a store's numbers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from postrisk.core.io import digest
from postrisk.grid.conditions import (
    conditions,
    covariate_datasets,
    implemented_conditions,
    implemented_methods,
    implemented_priors,
)
from postrisk.grid.seeds import task_seeds


@dataclass(frozen=True)
class StagePlan:
    stage: str
    jobs: int
    cpu_minutes_per_job: float

    @property
    def cpu_hours(self) -> float:
        return self.jobs * self.cpu_minutes_per_job / 60


def plan(cfg: Mapping) -> list[StagePlan]:
    """Jobs per stage the workflow would run for ``cfg`` and their estimated CPU time.

    Only stages and families the workflow implements are listed; each stage's per-job cost
    comes from ``cost_model`` in the config (minutes on one 2-core node).
    """
    costs = cfg["cost_model"]
    conds = implemented_conditions(cfg)
    n_seeds = len(task_seeds(cfg))
    n_tasks = len(conds) * n_seeds
    n_methods = len(implemented_methods(cfg))
    priors = implemented_priors(cfg)
    posterior = [StagePlan(f"posterior_{p}", sum(c[1] == p for c in conds) * n_seeds,
                           costs.get(f"posterior_{p}", 1.0)) for p in priors]
    return [
        StagePlan("covariates", len(covariate_datasets(cfg)), costs.get("covariates", 1.0)),
        StagePlan("prior", len({(c[0], c[1]) for c in conds}), costs.get("prior", 1.0)),
        StagePlan("sample", n_tasks, costs.get("sample", 0.1)),
        *posterior,
        StagePlan("fit", len(conds) * n_methods, costs.get("fit", 1.0)),
        StagePlan("score", len(conds), costs.get("score", 0.5)),
    ]


def n_instances(cfg: Mapping) -> int:
    return sum(1 for _ in conditions(cfg)) * cfg["seeds"]["candidates"]


def plan_report(cfg: Mapping) -> str:
    """A few lines: the grid's size, jobs per stage and an estimate of the cost."""
    stages = plan(cfg)
    lines = [
        f"grid: {len(cfg['datasets'])} datasets × {len(cfg['priors'])} priors × "
        f"{len(cfg['noise_modes'])} noise modes × {len(cfg['coverages'])} coverages × "
        f"{cfg['seeds']['candidates']} candidate seeds"
        f"{' (narrowed per prior by prior_grid)' if cfg.get('prior_grid') else ''} = "
        f"{n_instances(cfg):,} instances "
        f"({cfg['seeds']['valid_per_cell']} valid seeds used per cell)",
    ]
    for s in stages:
        lines.append(f"  {s.stage:<12} {s.jobs:>7,} jobs  ≈ {s.cpu_hours:,.1f} CPU-hours")
    missing_priors = [p for p in cfg["priors"] if p not in implemented_priors(cfg)]
    missing_methods = [m for m in cfg.get("methods", []) if m not in implemented_methods(cfg)]
    if missing_priors or missing_methods:
        lines.append(f"  (not implemented yet, not planned: priors {missing_priors or '-'}; "
                     f"{len(missing_methods)} methods)")
    total_jobs = sum(s.jobs for s in stages)
    total_hours = sum(s.cpu_hours for s in stages)
    lines.append(f"  {'total':<12} {total_jobs:>7,} jobs  ≈ {total_hours:,.1f} CPU-hours "
                 f"(≈ {total_hours / 2:,.1f} h wall-clock on 2 local cores)")
    return "\n".join(lines)


def config_digest(cfg: Mapping, prior: str) -> str:
    """A short digest of the config sections that determine a sample store's numbers: the sizes
    and the family's prior settings (``<prior>_prior``). A task store's own digest adds its
    posterior settings (``postrisk.tasks.generate.build_task``)."""
    return digest({key: cfg.get(key) for key in ("sizes", f"{prior}_prior")})


def guard_message(cfg: Mapping) -> str | None:
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
