"""The workflow's jobs: for each stage, the units of work, how they are grouped into jobs, the
Snakemake rules that run them, and what each job asks of a cluster.

A *unit* is the smallest piece of work of a stage: one instance (``sample``, ``posterior``) or
one (method, condition) (``fit``: its sweep when tuned, then every usable seed). A *job* runs
the units that share the values of the config's ``group_by.<stage>`` keys in one process: every
key (the cluster default) gives one job per unit; fewer keys batch units, so imports are paid and
samplers compiled once (the presets). Batching is this one parameter, not a second rule set:
:func:`stage_rules` returns the rules of a stage and :class:`StageJobs` the job of every
wildcard assignment, with the list of units a script receives.

A job's rule is named after the stage (``posterior_exact`` / ``posterior_mcmc``: the family's
declared posterior kind). Jobs whose outputs differ in shape — a preset narrows a family to fewer
cells — get one rule each, named by the key values that tell them apart (``sample_gp``,
``sample_hbart_bnn``); their wildcard constraints keep them apart.

Resources come from the config's ``cost_model`` (:func:`unit_cost`, :func:`job_resources`):
threads per stage and family or method, and minutes and memory per unit scaled with the rows the
unit handles. Accelerators come from declarations: a prior family's or a method's registry entry
says whether its heavy job wants one; with ``accelerator.use`` such jobs ask for ``gpu: 1`` and
run in the ``jax-gpu`` environment.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from postrisk.covariates.pools import eval_pool_size
from postrisk.covariates.registry import registry
from postrisk.grid.conditions import (
    Condition,
    disentanglement_units,
    fits_method,
    implemented_conditions,
    implemented_methods,
    is_tuned,
    training_size,
)
from postrisk.grid.paths import path
from postrisk.grid.seeds import SeedPolicy

#: The keys of one unit of each batchable stage, in path order.
UNIT_KEYS: dict[str, tuple[str, ...]] = {
    "sample": ("dataset", "prior", "noise", "coverage", "seed"),
    "posterior": ("dataset", "prior", "noise", "coverage", "seed"),
    "fit": ("dataset", "prior", "noise", "coverage", "method"),
}
#: Keys every job of a stage must fix: one family per posterior process (bartz needs JAX x64
#: off, the BNN posterior on), one method per fit process.
FIXED_KEYS: dict[str, tuple[str, ...]] = {"sample": (), "posterior": ("prior",),
                                         "fit": ("method",)}
#: What each batchable stage writes per unit (kinds of postrisk.grid.paths).
OUTPUT_KINDS: dict[str, tuple[str, ...]] = {
    "sample": ("sample",), "posterior": ("task",), "fit": ("fit", "tuning_result"),
}
#: Inputs of a unit of the instance stages: (kind, the keys of the unit its path takes). The
#: inputs of a fit unit depend on its cell's seed policy and have no fixed shape.
INPUT_KINDS: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "sample": (("covariates", ("dataset",)), ("prior", ("dataset", "prior"))),
    "posterior": (("sample", UNIT_KEYS["posterior"]),),
}
#: Stages whose cost entry is per prior family or per method.
COST_BY = {"prior": "prior", "sample": "prior", "posterior": "prior", "fit": "method",
           "disentanglement": "method"}
#: Rows at which a cost entry's per-size terms are given (``cost_model.rows`` overrides it).
_ROWS_DEFAULT = 1000


class GroupingError(ValueError):
    """A ``group_by`` setting that cannot be turned into rules."""


# --------------------------------------------------------------------------------- cost model

@dataclass(frozen=True)
class Resources:
    """What one job asks of the scheduler: threads, wall-clock minutes, memory, GPUs."""

    threads: int
    runtime: int  # minutes
    mem_mb: int
    gpu: int = 0


def cost_entry(cfg: Mapping, stage: str, name: str | None = None) -> dict:
    """The cost-model entry of ``stage`` (for a family or method ``name`` where the stage's
    entry is per family/method: its own entry, else ``default``)."""
    model = cfg["cost_model"]
    if stage not in model:
        raise KeyError(f"cost_model has no entry for stage {stage!r}")
    entry = model[stage]
    if "threads" not in entry:  # per family / per method
        entry = entry.get(name) or entry.get("default")
        if entry is None:
            raise KeyError(f"cost_model.{stage} has no entry for {name!r} and no default")
    return entry


def unit_rows(cfg: Mapping, dataset: str) -> int:
    """Rows one unit on ``dataset`` handles: training rows plus evaluation rows."""
    spec = registry()[dataset]
    n_eval = eval_pool_size(spec.N, cfg["sizes"]["n_eval_cap"])
    n = training_size(dataset, cfg["sizes"].get("n_cap")) if spec.n is not None else 0
    return n + n_eval


def unit_cost(cfg: Mapping, stage: str, name: str | None = None,
              dataset: str | None = None) -> tuple[float, float]:
    """(minutes, MB) of one unit: ``minutes + minutes_per_size · s`` and
    ``mem_mb + mem_mb_per_size · s`` with ``s = (rows / cost_model.rows) ** power``; ``rows`` of
    the unit's dataset (:func:`unit_rows`), none (s = 0) for stages not tied to one."""
    entry = cost_entry(cfg, stage, name)
    scale = 0.0
    if dataset is not None:
        rows = unit_rows(cfg, dataset) / float(cfg["cost_model"].get("rows", _ROWS_DEFAULT))
        scale = rows ** float(entry.get("power", 1.0))
    minutes = float(entry["minutes"]) + float(entry.get("minutes_per_size", 0.0)) * scale
    mem = float(entry["mem_mb"]) + float(entry.get("mem_mb_per_size", 0.0)) * scale
    return minutes, mem


def job_resources(cfg: Mapping, stage: str, costs: Sequence[tuple[float, float]],
                  name: str | None = None, gpu: bool = False) -> Resources:
    """A job's request from its units' costs: runtime = margin × the sum of the units' minutes
    (whole minutes, at least ``min_runtime``); memory = the largest unit's (units run one after
    the other), in whole hundreds of MB."""
    model = cfg["cost_model"]
    minutes = float(model.get("margin", 1.0)) * sum(m for m, _ in costs)
    runtime = max(int(model.get("min_runtime", 1)), math.ceil(minutes))
    mem = max((mb for _, mb in costs), default=0.0)
    return Resources(threads=int(cost_entry(cfg, stage, name)["threads"]), runtime=runtime,
                     mem_mb=int(math.ceil(mem / 100.0) * 100), gpu=int(bool(gpu)))


def stage_resources(cfg: Mapping, stage: str, name: str | None = None,
                    datasets: Sequence[str | None] = (None,)) -> Resources:
    """Resources of a job of a stage that is not grouped (covariates, prior, score, …): one unit
    per entry of ``datasets`` (None: a unit not tied to a dataset)."""
    return job_resources(cfg, stage, [unit_cost(cfg, stage, name, d) for d in datasets], name)


# ------------------------------------------------------------------------------ accelerators

def wants_accelerator(cfg: Mapping, stage: str, name: str) -> bool:
    """Whether a job of ``stage`` for the family or method ``name`` asks for a GPU: its
    registry entry declares one (posterior: the family; fit: the method) and the config's
    ``accelerator.use`` is on."""
    if not cfg.get("accelerator", {}).get("use", False):
        return False
    if stage == "posterior":
        from postrisk.priors.base import FAMILY_ENTRIES

        return FAMILY_ENTRIES[name].accelerator
    if stage == "fit":
        from postrisk.methods.registry import METHOD_ENTRIES

        return METHOD_ENTRIES[name].accelerator
    return False


def env_family(accelerator: bool) -> str:
    """The job environment (``workflow/envs/<family>.yaml``) of a JAX job."""
    return "jax-gpu" if accelerator else "jax"


# ------------------------------------------------------------------------------------- units

def _units(cfg: Mapping, stage: str, policy: SeedPolicy) -> list[dict[str, Any]]:
    """Every unit of ``stage`` with its payload (what the script needs), in a fixed order."""
    from postrisk.grid.plan import config_digest

    conds = implemented_conditions(cfg)
    units: list[dict[str, Any]] = []
    if stage in ("sample", "posterior"):
        by_prior: dict[str, list[Condition]] = {}
        for c in conds:
            by_prior.setdefault(c.prior, []).append(c)
        for prior, cs in by_prior.items():
            digest = config_digest(cfg, prior)
            datasets = list(dict.fromkeys(c.dataset for c in cs))
            cells = sorted({(c.noise, c.coverage) for c in cs})
            present = {(c.dataset, c.noise, c.coverage) for c in cs}
            for dataset in datasets:
                for noise, coverage in cells:
                    if (dataset, noise, coverage) not in present:
                        continue
                    for seed in policy.task_seeds:
                        key = {"dataset": dataset, "prior": prior, "noise": noise,
                               "coverage": coverage, "seed": str(seed)}
                        units.append(_instance_unit(cfg, stage, key, digest))
    elif stage == "fit":
        for method in implemented_methods(cfg):
            for c in conds:
                if fits_method(cfg, method, c):
                    units.append(_fit_unit(cfg, policy, c, method))
    else:
        raise KeyError(f"stage {stage!r} is not grouped; grouped stages: {', '.join(UNIT_KEYS)}")
    return units


def _instance_unit(cfg: Mapping, stage: str, key: dict[str, str],
                   digest: str) -> dict[str, Any]:
    """One instance's unit; ``digest``: its family's sample-config digest."""
    sample = path("sample", **key)
    if stage == "sample":
        covariates = path("covariates", dataset=key["dataset"])
        prior = path("prior", dataset=key["dataset"], prior=key["prior"])
        return {"key": key, "inputs": [covariates, prior], "outputs": [sample],
                "covariates": covariates, "prior": prior, "out": sample,
                "n": training_size(key["dataset"], cfg["sizes"].get("n_cap")),
                "digest": digest}
    task = path("task", **key)
    return {"key": key, "inputs": [sample], "outputs": [task], "sample": sample, "out": task,
            "settings": cfg["posterior"][key["prior"]]}


def _fit_unit(cfg: Mapping, policy: SeedPolicy, c: Condition, method: str) -> dict[str, Any]:
    seeds = policy.condition_seeds(c)
    selection = [c.path("seed_selection")] if policy.bnn_decides(c) else []
    samples = [c.path("sample", seed=s) for s in seeds]
    fits, chosen = c.path("fit", method=method), c.path("tuning_result", method=method)
    return {"key": {**c._asdict(), "method": method},
            "inputs": samples + selection, "outputs": [fits, chosen],
            "method": method, "condition": list(c), "samples": samples, "seeds": seeds,
            "selection": selection, "settings": cfg.get("method_settings", {}).get(method, {}),
            "tuning": cfg["tuning"] if is_tuned(cfg, method, c) else None,
            "journal": c.path("tuning_journal", method=method), "fits": fits, "config": chosen,
            "n_valid": int(cfg["seeds"]["valid_per_cell"])}


# ------------------------------------------------------------------------------------- rules

@dataclass
class StageRule:
    """One Snakemake rule of a grouped stage: its name, the wildcards of its outputs (the
    stage's ``group_by`` keys), the output patterns, constraints, log and environment."""

    name: str
    stage: str
    keys: tuple[str, ...]
    outputs: dict[str, list[str]]  # kind -> patterns
    constraints: dict[str, str]
    accelerator: bool
    jobs: dict[tuple[str, ...], Job] = field(default_factory=dict)
    #: the inputs as patterns, where every job's inputs have the same shape (else None: the
    #: rule takes :meth:`job` ``.inputs`` per job)
    inputs: list[str] | None = None

    def constant(self, resource: str) -> int | None:
        """The value of ``resource`` (a :class:`Resources` field) when every job of the rule
        asks for the same, else None. A rule declares such a value as a constant: Snakemake
        evaluates a function per job, which costs planning time on the full grid."""
        values = {getattr(job.resources, resource) for job in self.jobs.values()}
        return values.pop() if len(values) == 1 else None

    @property
    def log(self) -> str:
        return f"results/logs/{self.stage}/" + "/".join("{" + k + "}" for k in self.keys) + ".log"

    @property
    def benchmark(self) -> str:
        return (f"results/benchmarks/{self.stage}/" + "_".join("{" + k + "}" for k in self.keys)
                + ".tsv")

    @property
    def env(self) -> str:
        return env_family(self.accelerator)

    def job(self, wildcards: Mapping[str, str]) -> Job:
        """The job of one wildcard assignment (a Snakemake ``wildcards`` object)."""
        return self.jobs[tuple(str(wildcards[k]) for k in self.keys)]


@dataclass
class Job:
    """One job: its units (in order), its inputs and outputs, its resources."""

    units: list[dict[str, Any]]
    resources: Resources

    @property
    def inputs(self) -> list[str]:
        return list(dict.fromkeys(p for u in self.units for p in u["inputs"]))

    @property
    def outputs(self) -> list[str]:
        return [p for u in self.units for p in u["outputs"]]

    @property
    def payload(self) -> list[dict[str, Any]]:
        """What the job's script receives (``params.jobs``): each unit's named arguments, without
        the input and output lists the rule declares."""
        return [{k: v for k, v in u.items() if k not in ("inputs", "outputs")}
                for u in self.units]


def _rule_base(stage: str, unit: dict[str, Any]) -> str:
    if stage == "posterior":
        from postrisk.priors.base import FAMILY_ENTRIES

        return f"posterior_{FAMILY_ENTRIES[unit['key']['prior']].posterior}"
    return stage


def group_keys(cfg: Mapping, stage: str) -> tuple[str, ...]:
    """The keys that name one job of ``stage`` (``group_by.<stage>``; default: all of a unit's
    keys, one job per unit), in path order; a clear error for keys a unit does not have or a
    missing key the stage needs."""
    keys = UNIT_KEYS[stage]
    chosen = cfg.get("group_by", {}).get(stage, list(keys))
    unknown = [k for k in chosen if k not in keys]
    if unknown:
        raise GroupingError(f"config key 'group_by.{stage}': {unknown} are not keys of a "
                            f"{stage} unit ({', '.join(keys)})")
    missing = [k for k in FIXED_KEYS[stage] if k not in chosen]
    if missing:
        raise GroupingError(f"config key 'group_by.{stage}' must include {missing}: one "
                            f"{' and one '.join(missing)} per {stage} job")
    return tuple(k for k in keys if k in chosen)  # path order


def _alternatives(values) -> str:
    return "|".join(sorted(values, key=lambda v: (-len(v), v)))


def stage_rules(cfg: Mapping, stage: str, policy: SeedPolicy | None = None) -> list[StageRule]:
    """The rules of a grouped stage with every job of ``cfg`` (see the module docstring)."""
    policy = policy or SeedPolicy(cfg)
    keys = group_keys(cfg, stage)
    groups: dict[tuple[str, tuple[str, ...]], list[dict[str, Any]]] = {}
    for unit in _units(cfg, stage, policy):
        ident = tuple(unit["key"][k] for k in keys)
        groups.setdefault((_rule_base(stage, unit), ident), []).append(unit)

    wild = {k: "{" + k + "}" for k in keys}
    # Jobs of one rule share their output patterns (the keys replaced by wildcards).
    shapes: dict[str, dict[tuple, list[tuple[str, ...]]]] = {}
    for (base, ident), units in groups.items():
        shape = tuple(path(kind, **{**u["key"], **wild}) for u in units
                      for kind in OUTPUT_KINDS[stage])
        shapes.setdefault(base, {}).setdefault(shape, []).append(ident)

    rules: list[StageRule] = []
    for base, by_shape in shapes.items():
        names = _rule_names(base, keys, list(by_shape.values()))
        for name, (shape, idents) in zip(names, by_shape.items(), strict=True):
            units0 = groups[(base, idents[0])]
            name_key = COST_BY[stage]  # the family or the method
            accelerator = wants_accelerator(cfg, stage, units0[0]["key"][name_key])
            outputs: dict[str, list[str]] = {kind: [] for kind in OUTPUT_KINDS[stage]}
            for i, pattern in enumerate(shape):
                outputs[OUTPUT_KINDS[stage][i % len(OUTPUT_KINDS[stage])]].append(pattern)
            rule = StageRule(
                name=name, stage=stage, keys=keys, outputs=outputs, accelerator=accelerator,
                constraints={k: _alternatives({ident[i] for ident in idents})
                             for i, k in enumerate(keys)})
            if stage in INPUT_KINDS:  # same output shape, so the same input shape
                rule.inputs = list(dict.fromkeys(
                    path(kind, **{k: wild.get(k, u["key"][k]) for k in fields})
                    for u in units0 for kind, fields in INPUT_KINDS[stage]))
            for ident in idents:
                units = groups[(base, ident)]
                if any(wants_accelerator(cfg, stage, u["key"][name_key]) != accelerator
                       for u in units):
                    raise GroupingError(f"group_by.{stage}: one {name} job would mix units "
                                        "that do and do not want an accelerator")
                costs = [unit_cost(cfg, stage, u["key"][COST_BY[stage]], u["key"]["dataset"])
                         for u in units]
                rule.jobs[ident] = Job(units, job_resources(
                    cfg, stage, costs, units[0]["key"][COST_BY[stage]], accelerator))
            rules.append(rule)
    return rules


# ------------------------------------------------------------------- stages that are not grouped

#: Wildcards of the one rule of each stage that is not grouped (its jobs are fixed by them).
SIMPLE_KEYS: dict[str, tuple[str, ...]] = {
    "covariates": ("dataset",),
    "prior": ("dataset", "prior"),
    "valid_seeds": ("dataset", "noise", "coverage"),
    "checks": (),
    "score": ("dataset", "prior", "noise", "coverage"),
    "disentanglement": ("dataset", "prior", "noise", "coverage", "seed", "method"),
    "aggregate_scores": (),
}


def _simple_units(cfg: Mapping, stage: str,
                  policy: SeedPolicy) -> dict[tuple[str, ...], list[tuple[str | None, str | None]]]:
    """Jobs of a stage that is not grouped: wildcard values → units as (family or method,
    dataset) pairs, the arguments of :func:`unit_cost`."""
    from postrisk.grid.conditions import covariate_datasets

    conds = implemented_conditions(cfg)
    seeds = policy.task_seeds
    if stage == "covariates":
        return {(d,): [(None, d)] for d in covariate_datasets(cfg)}
    if stage == "prior":
        return {(c.dataset, c.prior): [(c.prior, c.dataset)] for c in conds}
    if stage == "valid_seeds":
        return {c.cell: [(None, c.dataset)] * len(seeds) for c in conds if c.prior == "bnn"}
    if stage == "checks":
        return {(): [(None, c.dataset) for c in conds for _ in seeds]} if conds else {}
    if stage == "score":
        return {tuple(c): [(None, c.dataset)] for c in conds}
    if stage == "disentanglement":
        return {(*c, str(seed), method): [(method, c.dataset)]
                for c, seed, method in disentanglement_units(cfg)}
    if stage == "aggregate_scores":
        return {(): [(None, None)] * len(conds)} if conds else {}
    raise KeyError(f"unknown stage {stage!r}")


def simple_rule(cfg: Mapping, stage: str, policy: SeedPolicy | None = None) -> StageRule:
    """The one rule of a stage that is not grouped, with its jobs' resources (its outputs are
    written in the stage's .smk file)."""
    policy = policy or SeedPolicy(cfg)
    rule = StageRule(name=stage, stage=stage, keys=SIMPLE_KEYS[stage], outputs={},
                     constraints={}, accelerator=False)
    for ident, units in _simple_units(cfg, stage, policy).items():
        name = units[0][0]
        costs = [unit_cost(cfg, stage, n, d) for n, d in units]
        rule.jobs[ident] = Job([], job_resources(cfg, stage, costs, name))
    return rule


def verify_resources(cfg: Mapping, dataset: str) -> Resources:
    """Resources of a ``verify_covariates`` job (run on request, not part of the grid)."""
    return stage_resources(cfg, "covariates", None, [dataset])


#: Stages in the order the workflow runs them.
STAGES = ("covariates", "prior", "sample", "posterior", "valid_seeds", "checks", "fit", "score",
          "disentanglement", "aggregate_scores")


def workflow_rules(cfg: Mapping, policy: SeedPolicy | None = None
                   ) -> dict[str, list[StageRule]]:
    """Every rule of the workflow for ``cfg`` with every job and its resources, by stage: the
    one source of the Snakemake rules' jobs and of ``postrisk plan`` (``policy``: the config's
    seed policy, when the caller has built it already)."""
    policy = policy or SeedPolicy(cfg)
    return {stage: (stage_rules(cfg, stage, policy) if stage in UNIT_KEYS
                    else [simple_rule(cfg, stage, policy)]) for stage in STAGES}


def _rule_names(base: str, keys: tuple[str, ...],
                idents: list[list[tuple[str, ...]]]) -> list[str]:
    """One name per rule of ``base``: the base alone, or suffixed with the values of the first
    key whose value sets are disjoint between the rules (which also keeps them apart); more
    than two values are named by the first and a count (``fit_blr_and_4_more``)."""
    if len(idents) == 1:
        return [base]
    for i in range(len(keys)):
        sets = [{ident[i] for ident in group} for group in idents]
        if sum(len(s) for s in sets) == len(set().union(*sets)):
            return [f"{base}_" + ("_".join(sorted(s)) if len(s) <= 2
                                  else f"{min(s)}_and_{len(s) - 1}_more") for s in sets]
    raise GroupingError(f"{base}: jobs of different shapes share every key value; add a key "
                        f"({', '.join(keys)}) to group_by so that they can be told apart")
