"""The plan of a configuration as a person reads it (its jobs, what they request and the cost
model's estimate behind it, per rule, on GPUs and on a CPU-only cluster; where its outputs are)
and the guard against running the full grid locally by accident."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from postrisk.grid.artefacts import artefact, stage_artefacts
from postrisk.grid.paths import RESULTS, path
from postrisk.planning.conditions import (
    conditions,
    covariate_datasets,
    implemented_methods,
    implemented_priors,
)
from postrisk.planning.cost import Resources
from postrisk.planning.planner import Planner
from postrisk.planning.seeds import Cell, assumed_selections, known_selections, selection_cells

#: The two ways the grid may run: ``accelerator.use`` on (the jobs that declare an accelerator
#: ask for a GPU and use their cost entries' ``gpu`` values) and off (everything on CPUs).
GPU_SCENARIO = "MCMC posteriors on GPUs"
CPU_SCENARIO = "CPU-only cluster"

#: How a rule's row (its GPU column) says that its GPU jobs' cost values are guesses
#: (``measured: false``).
UNMEASURED = "(GPU, unmeasured)"


@dataclass(frozen=True)
class RulePlan:
    """What the jobs of one rule ask for (:mod:`postrisk.planning.jobs`): the same numbers the
    workflow's rules declare, so ``postrisk plan`` and a cluster run agree; beside them the
    cost model's estimate (margin 1) in job-hours (wall-clock) and core-hours (× threads)."""

    rule: str
    stage: str
    jobs: int
    threads: int  # the largest of its jobs'
    runtime_min: int  # minutes, the shortest job's request
    runtime_max: int  # minutes, the longest job's request
    mem_mb: int  # the largest job's request
    gpu_jobs: int
    estimate_job_hours: float  # Σ estimate (margin 1) over the jobs
    requested_job_hours: float  # Σ runtime
    estimate_core_hours: float  # Σ estimate × threads
    requested_core_hours: float  # Σ runtime × threads (what a cluster is asked for)
    unmeasured: bool = False  # some GPU job's cost values are guesses (``measured: false``)

    @property
    def ratio(self) -> float:
        """Requested over estimated job-hours (the margin, and rounding and min_runtime)."""
        return (self.requested_job_hours / self.estimate_job_hours if self.estimate_job_hours
                else math.nan)


def _rule_plan(rule: str, stage: str, res: list[Resources]) -> RulePlan:
    return RulePlan(
        rule=rule, stage=stage, jobs=len(res), threads=max(r.threads for r in res),
        runtime_min=min(r.runtime for r in res), runtime_max=max(r.runtime for r in res),
        mem_mb=max(r.mem_mb for r in res), gpu_jobs=sum(r.gpu > 0 for r in res),
        estimate_job_hours=sum(r.estimate for r in res) / 60,
        requested_job_hours=sum(r.runtime for r in res) / 60,
        estimate_core_hours=sum(r.estimate * r.threads for r in res) / 60,
        requested_core_hours=sum(r.runtime * r.threads for r in res) / 60,
        unmeasured=any(r.gpu and r.unmeasured for r in res))


def plan(cfg: Mapping, planner: Planner | None = None,
         selections: Mapping[Cell, Sequence[int]] | None = None) -> list[RulePlan]:
    """Per rule of the workflow for ``cfg``: its jobs and what they request (threads, runtime
    and memory from ``cost_model``; a GPU where the prior or method declares one) and the
    estimate behind it; ``planner``: the config's planner, when the caller has built it
    already; else one planned with the seed ``selections`` (None: none known, one pass)."""
    return [_rule_plan(rule.name, stage, [job.resources for job in rule.jobs.values()])
            for stage, rules in (planner or Planner(cfg, selections)).rules.items()
            for rule in rules if rule.jobs]


def plan_totals(rows: list[RulePlan]) -> RulePlan:
    """The rows summed (jobs, GPU jobs, hours); threads, runtimes and memory their extremes."""
    def total(name: str) -> float:
        return sum(getattr(r, name) for r in rows)

    return RulePlan(
        rule="total", stage="", jobs=int(total("jobs")),
        threads=max((r.threads for r in rows), default=0),
        runtime_min=min((r.runtime_min for r in rows), default=0),
        runtime_max=max((r.runtime_max for r in rows), default=0),
        mem_mb=max((r.mem_mb for r in rows), default=0), gpu_jobs=int(total("gpu_jobs")),
        estimate_job_hours=total("estimate_job_hours"),
        requested_job_hours=total("requested_job_hours"),
        estimate_core_hours=total("estimate_core_hours"),
        requested_core_hours=total("requested_core_hours"),
        unmeasured=any(r.unmeasured for r in rows))


def scenarios(cfg: Mapping) -> list[tuple[str, Mapping]]:
    """The two scenarios of ``cfg`` as (name, config), the one it runs first: with
    ``accelerator.use`` on (:data:`GPU_SCENARIO`) and off (:data:`CPU_SCENARIO`), the other a
    copy of ``cfg`` with the switch flipped."""
    accelerator = dict(cfg.get("accelerator", {}))
    on = bool(accelerator.get("use", False))
    other = {**cfg, "accelerator": {**accelerator, "use": not on}}
    gpu, cpu = (cfg, other) if on else (other, cfg)
    pairs = [(GPU_SCENARIO, gpu), (CPU_SCENARIO, cpu)]
    return pairs if on else pairs[::-1]


def n_instances(cfg: Mapping) -> int:
    return sum(1 for _ in conditions(cfg)) * cfg["seeds"]["candidates"]


def _hours(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def plan_table(rows: list[RulePlan]) -> str:
    """The plan as a Markdown table (one row per rule, then the total): the request per job
    (threads, GPU, runtime in minutes, memory), then over the rule's jobs the estimate (margin
    1) and the request in job-hours and in core-hours; a rule whose GPU values are guesses is
    marked."""
    def hours(r: RulePlan) -> str:
        ratio = "–" if math.isnan(r.ratio) else f"{r.ratio:.2f}"
        return (f"| {_hours(r.estimate_job_hours)} | {_hours(r.requested_job_hours)} | {ratio} "
                f"| {_hours(r.estimate_core_hours)} | {_hours(r.requested_core_hours)} |")

    lines = ["| rule | jobs | threads | GPU | min | mem_mb | job-h est. | req. | req/est "
             "| core-h est. | req. |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        runtime = _runtime(r)
        gpu = ("1" + (f" {UNMEASURED}" if r.unmeasured else "")) if r.gpu_jobs else "–"
        lines.append(f"| {r.rule} | {r.jobs:,} | {r.threads} | {gpu} | {runtime} | "
                     f"{r.mem_mb:,} " + hours(r))
    total = plan_totals(rows)
    lines.append(f"| total | {total.jobs:,} | | {total.gpu_jobs:,} jobs | | " + hours(total))
    return "\n".join(lines)


def _runtime(r: RulePlan) -> str:
    """A row's requested minutes: one value, or the shortest–longest job's."""
    return (f"{r.runtime_min}" if r.runtime_min == r.runtime_max
            else f"{r.runtime_min}–{r.runtime_max}")


def _fit_hours(rows: list[RulePlan]) -> float:
    return sum(r.estimate_job_hours for r in rows if r.stage == "fit")


def method_fit_plan(planner: Planner) -> list[RulePlan]:
    """The fit stage's jobs per method (a fit job holds one method), in the order the
    configuration lists the methods: the same numbers as the fit rules' rows, split by method
    instead of by rule (the share of the fit compute a method takes)."""
    by_method: dict[str, list[Resources]] = {}
    for rule in planner.rules.get("fit", []):
        for job in rule.jobs.values():
            by_method.setdefault(job.units[0].method, []).append(job.resources)
    order = {m: i for i, m in enumerate(planner.config.get("methods", []))}
    return [_rule_plan(method, "fit", res) for method, res in
            sorted(by_method.items(), key=lambda item: (order.get(item[0], len(order)), item[0]))]


def method_fit_table(rows: list[RulePlan], paper_hours: float | None = None) -> str:
    """The fit compute per method as a Markdown table: its jobs, the estimate (margin 1) in
    job-hours and its share of the fit estimate, the request per job (minutes, the shortest and
    longest) and in core-hours; the total, and beside it the paper's fit compute
    (``paper_hours``, wall-clock hours) and the ratio."""
    total = plan_totals(rows)
    lines = ["| method | jobs | threads | min | job-h est. | share | core-h est. |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in sorted(rows, key=lambda r: -r.estimate_job_hours):
        share = r.estimate_job_hours / total.estimate_job_hours if total.estimate_job_hours else 0
        lines.append(f"| {r.rule} | {r.jobs:,} | {r.threads} | {_runtime(r)} | "
                     f"{_hours(r.estimate_job_hours)} | {share:.0%} | "
                     f"{_hours(r.estimate_core_hours)} |")
    lines.append(f"| total | {total.jobs:,} | | | {_hours(total.estimate_job_hours)} | 100% | "
                 f"{_hours(total.estimate_core_hours)} |")
    if paper_hours:
        lines.append(f"| the paper | | | | ≈ {paper_hours:,.0f} | "
                     f"{total.estimate_job_hours / paper_hours:.2f}× | |")
    return "\n".join(lines)


def _selections_line(cfg: Mapping, selections: Mapping, assumed: bool) -> str:
    """How the plan takes the GP and HBART posteriors: on the valid seeds of the cells whose
    seed selection it knows (or, ``assumed``, takes as known), on every candidate seed
    elsewhere."""
    cells = selection_cells(cfg)
    known = sum(cell in selections for cell in cells)
    if not cells:
        return "seeds: no BNN instances decide them (every cell uses its first seeds)"
    if assumed and known:
        return ("seeds: run as the README runs it, the BNN-first pass (target seed_selections) "
                "then the rest: GP and HBART posteriors on the valid_per_cell valid seeds of "
                "each cell only (--single-pass: on every candidate)")
    if known == len(cells):
        return ("seeds: the BNN-first pass has written every cell's selection (target "
                "seed_selections): GP and HBART posteriors on the valid seeds only")
    return (f"seeds: {known} of {len(cells)} cells' selections known: elsewhere GP and HBART "
            "posteriors on every candidate seed (run target seed_selections first to build "
            "only the valid ones)")


def plan_report(cfg: Mapping, planner: Planner | None = None,
                paper_fit_hours: Mapping[str, float] | None = None,
                both: bool = True, bnn_first: bool = True) -> str:
    """The grid's size and, per rule, its jobs, what they request and the estimate behind it,
    in the scenario ``cfg`` runs and (``both``) in the other one (:func:`scenarios`: a copy of
    ``cfg`` planned too); ``planner``: ``cfg``'s, when built already. ``paper_fit_hours``: the
    compute the paper reports for its fits, in wall-clock hours by part (e.g. final fits,
    sweeps), printed beside the fit stage's estimate in each scenario. ``bnn_first``: the grid
    run in two invocations, the BNN-first pass writing every cell's seed selection (the GP and
    HBART posteriors then only on ``valid_per_cell`` seeds per cell:
    :func:`~postrisk.planning.seeds.assumed_selections`); else in one."""
    model = cfg["cost_model"]
    lines = [
        f"grid: {len(cfg['datasets'])} datasets × {len(cfg['priors'])} priors × "
        f"{len(cfg['noise_modes'])} noise modes × {len(cfg['coverages'])} coverages × "
        f"{cfg['seeds']['candidates']} candidate seeds"
        f"{' (narrowed per prior by prior_grid)' if cfg.get('prior_grid') else ''}\n"
        f"  = {n_instances(cfg):,} instances "
        f"({cfg['seeds']['valid_per_cell']} valid seeds used per cell)",
        "per job, its request from cost_model: threads, GPU, min (runtime: margin "
        f"{float(model.get('margin', 1.0)):g} × the estimate,",
        f"at least {model.get('min_runtime', 1)} minutes), mem_mb; per rule, the estimate (est., "
        "margin 1) and the request (req.)",
        "in job-h (Σ wall-clock hours of its jobs) and core-h (Σ hours × threads)",
    ]
    if planner is not None:
        selections = planner.seeds.selections
    else:
        selections = assumed_selections(cfg) if bnn_first else {}
    lines.append(_selections_line(cfg, selections, assumed=planner is None))
    fit = {}
    methods: list[RulePlan] = []
    cases = scenarios(cfg)[:2 if both else 1]
    for i, (name, scenario) in enumerate(cases):
        scenario_planner = (planner if scenario is cfg and planner is not None
                            else Planner(scenario, selections))
        rows = plan(scenario, scenario_planner)
        fit[name] = _fit_hours(rows)
        if scenario is cfg:
            methods = method_fit_plan(scenario_planner)
        use = f"accelerator.use: {str(name == GPU_SCENARIO).lower()}"
        where = (f"what this config runs ({use})" if scenario is cfg
                 else f"the same config with {use}")
        total = plan_totals(rows)
        lines += ["", f"scenario {i + 1} of {len(cases)}: {name} — {where};",
                  f"{total.requested_core_hours:,.0f} core-hours requested "
                  f"({total.estimate_core_hours:,.0f} estimated), "
                  f"{f'{total.gpu_jobs:,}' if total.gpu_jobs else 'none'} of the "
                  f"{total.jobs:,} jobs on GPUs:",
                  plan_table(rows)]
        if any(r.unmeasured for r in rows):
            lines.append(f"{UNMEASURED}: the rule's GPU jobs use cost_model `gpu` values that "
                         "say `measured: false`")
    if paper_fit_hours:
        label = {CPU_SCENARIO: "CPU-only", GPU_SCENARIO: "GPUs"}
        estimates = " / ".join(
            f"{_hours(fit[name])}{' job-hours' if k == 0 else ''} ({label[name]})"
            for k, name in enumerate(n for n in (CPU_SCENARIO, GPU_SCENARIO) if n in fit))
        parts = " + ".join(f"{v:,.0f} {k}" for k, v in paper_fit_hours.items())
        lines += ["", f"fit (sweeps + final fits): estimate {estimates};",
                  f"  the paper reports ≈ {sum(paper_fit_hours.values()):,.0f} ({parts})"]
    if methods:
        lines += ["", "the fit estimate per method (what this config runs; margin 1, the "
                  "share of the fit estimate):",
                  method_fit_table(methods, sum(paper_fit_hours.values())
                                   if paper_fit_hours else None)]
    missing_priors = [p for p in cfg["priors"] if p not in implemented_priors(cfg["priors"])]
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
    planner = Planner(cfg, known_selections(cfg, root))
    if planner.conditions:
        tasks = [Path(t) for t in planner.task_stores(root)]
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
        "(`snakemake --profile profiles/slurm`).\n" + plan_report(cfg, planner, both=False)
        + "\n"
        "To run it locally anyway, confirm with `--config confirm_full_run=True`; to try it "
        "small, use "
        "`--configfile presets/demo.yaml`; to build one target, name it on the command line."
    )
