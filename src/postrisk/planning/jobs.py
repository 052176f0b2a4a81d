"""The workflow's jobs and rules: how each stage's units (:mod:`postrisk.planning.units`) are
grouped into jobs, the Snakemake rules that run them, and what each job asks of a cluster.

A *job* of a batchable stage runs the units that share the values of the config's
``group_by.<stage>`` keys in one process: every key (the cluster default) gives one job per
unit; fewer keys batch units, so imports are paid and samplers compiled once (the presets).
Batching is this one parameter, not a second rule set: :func:`stage_rules` returns the rules of a
stage and each rule the job of every wildcard assignment, with the units its script receives.

A job's rule is named after the stage (``posterior_exact`` / ``posterior_mcmc``: the prior's
declared posterior kind; ``posterior_mcmc_cpu`` for an MCMC prior whose cost entry runs it
faster on CPUs while the other MCMC posteriors ask for GPUs). Jobs whose outputs differ in
shape (a preset narrows a method or a prior to part of the grid) get one rule each, named by
what the rule's outputs have in common (:func:`rule_name`): the values of each axis where the
rule covers only part of its stage's, e.g. ``fit_smooth_monotone_bump_balanced``. A name never
counts methods and does not change when a method moves between rules; their wildcard
constraints keep the rules apart.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from postrisk.grid.artefacts import stage_artefacts
from postrisk.grid.paths import benchmark_path, log_path, path
from postrisk.grid.stages import (
    STUDIES_PAGE,
    GroupingError,
    group_keys,
    input_kinds,
    is_batched,
    output_kinds,
    simple_keys,
    stages,
    unit_keys,
)
from postrisk.grid.study import Study, studies
from postrisk.planning.cost import CostModel, Resources, env_family
from postrisk.tasks.key import CONDITION_COLUMNS

#: The axes a rule name may describe (a seed or a method is never part of one).
NAMED_AXES = CONDITION_COLUMNS


@dataclass
class Job:
    """One job: its units (in order) and its resources."""

    units: list[Any]
    resources: Resources

    @property
    def inputs(self) -> list[str]:
        return list(dict.fromkeys(p for u in self.units for p in u.inputs))

    @property
    def outputs(self) -> list[str]:
        return [p for u in self.units for p in u.outputs]

    @property
    def payload(self) -> list[Any]:
        """What the job's script receives (``params.jobs``): its units, as they are."""
        return list(self.units)


@dataclass
class StageRule:
    """One Snakemake rule: its name, the wildcards that name its jobs (a batchable stage's
    ``group_by`` keys), its output patterns, constraints, environment and jobs."""

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
        return log_path(self.stage, self.keys)

    @property
    def benchmark(self) -> str:
        return benchmark_path(self.stage, self.keys)

    @property
    def env(self) -> str:
        return env_family(self.accelerator)

    def job(self, wildcards: Mapping[str, str]) -> Job:
        """The job of one wildcard assignment (a Snakemake ``wildcards`` object)."""
        return self.jobs[tuple(str(wildcards[k]) for k in self.keys)]

    def unit(self, wildcards: Mapping[str, str]) -> Any:
        """The one unit of a rule whose jobs each run one (the stages that are not batched)."""
        return self.job(wildcards).units[0]


# ------------------------------------------------------------------------- batchable stages

def _rule_base(stage: str, unit: Any, cost: CostModel) -> str:
    """The name a stage's rule starts from: the stage (posterior: ``posterior_`` and the prior's
    declared kind), with ``_cpu`` for units that could use a GPU and run on CPUs because their
    cost entry estimates them faster there while the other jobs of the stage ask for GPUs
    (:meth:`~postrisk.planning.cost.CostModel.slower_on_gpu`): a rule asks for one kind of
    machine."""
    base = stage
    if stage == "posterior":
        from postrisk.priors.base import PRIOR_ENTRIES

        base = f"posterior_{PRIOR_ENTRIES[unit.key.prior].posterior}"
    return base + "_cpu" if cost.declines_accelerator(stage, unit.cost_name) else base


def _alternatives(values) -> str:
    return "|".join(sorted(values, key=lambda v: (-len(v), v)))


def _axis_values(units: Sequence[Any], order: Mapping[str, Sequence[str]]
                 ) -> dict[str, list[str]]:
    """The values each named axis takes over ``units``, in the configuration's order."""
    out = {}
    for axis in NAMED_AXES:
        if axis in units[0].wildcards:
            seen = {u.wildcards[axis] for u in units}
            rank = {v: i for i, v in enumerate(order.get(axis, ()))}
            out[axis] = sorted(seen, key=lambda v: (rank.get(v, len(rank)), v))
    return out


#: The configuration's key of each named axis (its values' order).
_AXIS_KEYS = {"dataset": "datasets", "prior": "priors", "noise": "noise_modes",
              "coverage": "coverages"}


@dataclass(frozen=True)
class RuleSettings:
    """What making the rules reads of a configuration, and nothing else: ``group_by``, the
    order of each named axis' values (rule names list them in it) and the cost model.
    :meth:`of` takes them from a validated configuration."""

    group_by: Mapping[str, Sequence[str]]
    axis_order: Mapping[str, Sequence[str]]
    cost: CostModel

    @classmethod
    def of(cls, cfg: Mapping) -> RuleSettings:
        """The rule settings of the validated configuration ``cfg``."""
        return cls(cfg.get("group_by") or {},
                   {axis: tuple(cfg.get(key, ())) for axis, key in _AXIS_KEYS.items()},
                   CostModel.of(cfg))


def rule_name(base: str, units: Sequence[Any], all_units: Sequence[Any],
              axes: Sequence[str] = NAMED_AXES,
              order: Mapping[str, Sequence[str]] | None = None) -> str:
    """A rule's name from what its outputs have in common: ``base`` followed, for each of
    ``axes`` in path order, by the values the rule's ``units`` take where they are only part of
    those its base takes over ``all_units`` (``fit_smooth_monotone_bump_balanced``: the fits
    of the heteroscedastic modes on the balanced coverage), in the ``order`` of each axis'
    values (:attr:`RuleSettings.axis_order`; else sorted). A rule that covers every value of
    every axis is named ``base``."""
    order = order or {}
    mine, every = _axis_values(units, order), _axis_values(all_units, order)
    parts = [value for axis in axes if axis in mine and len(mine[axis]) < len(every[axis])
             for value in mine[axis]]
    return "_".join([base, *parts])


def _name_rules(order: Mapping[str, Sequence[str]], base: str, keys: tuple[str, ...],
                by_shape: list[list[Any]], all_units: list[Any]) -> list[str]:
    """Names for the rules of one base (one list of units per output shape): by the axes the
    rules' outputs fix; where two would share a name, by every axis; those that still would
    get a digest of their outputs appended."""
    fixed = [a for a in NAMED_AXES if a not in keys]
    names = [rule_name(base, units, all_units, fixed, order) for units in by_shape]
    if len(set(names)) < len(names):
        names = [rule_name(base, units, all_units, NAMED_AXES, order) for units in by_shape]
    if len(set(names)) < len(names):
        names = [name if names.count(name) == 1 else name + "_" + hashlib.sha1("\n".join(
                     sorted(p for u in units for p in u.outputs)).encode()).hexdigest()[:6]
                 for name, units in zip(names, by_shape, strict=True)]
    return names


def _check_separable(stage: str, base: str, keys: tuple[str, ...],
                     idents: list[list[tuple[str, ...]]]) -> None:
    """Rules of one base must be told apart by their wildcard constraints: every two of them
    differ in the value sets of at least one key."""
    sets = [[{ident[i] for ident in group} for i in range(len(keys))] for group in idents]
    for a in range(len(sets)):
        for b in range(a + 1, len(sets)):
            if all(sets[a][i] & sets[b][i] for i in range(len(keys))):
                raise GroupingError(
                    f"{base}: jobs of different shapes share every key value; add a key "
                    f"({', '.join(unit_keys()[stage])}) to group_by so that "
                    "they can be told apart")


def stage_rules(settings: RuleSettings, stage: str, units: Sequence[Any]) -> list[StageRule]:
    """The rules of a batchable stage with every job of its ``units`` (see the module
    docstring)."""
    keys = group_keys(settings.group_by, stage)
    cost = settings.cost
    kinds, in_kinds = output_kinds(stage), input_kinds(stage)
    groups: dict[tuple[str, tuple[str, ...]], list[Any]] = {}
    for unit in units:
        wc = unit.wildcards
        ident = tuple(wc[k] for k in keys)
        groups.setdefault((_rule_base(stage, unit, cost), ident), []).append(unit)

    wild = {k: "{" + k + "}" for k in keys}
    # Jobs of one rule share their output patterns (the keys replaced by wildcards).
    shapes: dict[str, dict[tuple, list[tuple[str, ...]]]] = {}
    for (base, ident), members in groups.items():
        shape = tuple(path(kind, **{**u.wildcards, **wild}) for u in members
                      for kind in kinds)
        shapes.setdefault(base, {}).setdefault(shape, []).append(ident)

    rules: list[StageRule] = []
    for base, by_shape in shapes.items():
        idents = list(by_shape.values())
        _check_separable(stage, base, keys, idents)
        shape_units = [[u for ident in group for u in groups[(base, ident)]] for group in idents]
        base_units = [u for group in shape_units for u in group]
        names = _name_rules(settings.axis_order, base, keys, shape_units, base_units)
        for name, (shape, group) in zip(names, by_shape.items(), strict=True):
            first = groups[(base, group[0])]
            accelerator = cost.wants_accelerator(stage, first[0].cost_name)
            outputs: dict[str, list[str]] = {kind: [] for kind in kinds}
            for i, pattern in enumerate(shape):
                outputs[kinds[i % len(kinds)]].append(pattern)
            rule = StageRule(
                name=name, stage=stage, keys=keys, outputs=outputs, accelerator=accelerator,
                constraints={k: _alternatives({ident[i] for ident in group})
                             for i, k in enumerate(keys)})
            if in_kinds is not None:  # same output shape, so the same input shape
                rule.inputs = list(dict.fromkeys(
                    path(kind, **{k: wild.get(k, u.wildcards[k]) for k in fields})
                    for u in first for kind, fields in in_kinds))
            for ident in group:
                members = groups[(base, ident)]
                if any(cost.wants_accelerator(stage, u.cost_name) != accelerator
                       for u in members):
                    raise GroupingError(f"group_by.{stage}: one {name} job would mix units "
                                        "that do and do not want an accelerator")
                rule.jobs[ident] = Job(members, cost.units_resources(
                    stage, [(u.cost_name, getattr(u, "cost_rows", u.dataset)) for u in members],
                    accelerator))
            rules.append(rule)
    return rules


# ------------------------------------------------------------------- stages that are not batched

def _simple_jobs(stage: str, units: Mapping[str, Sequence[Any]]
                 ) -> dict[tuple[str, ...], tuple[list[Any], list[tuple[str | None, str | None]]]]:
    """Jobs of a stage that is not batched: wildcard values → (its units, the (prior or
    method, dataset) pairs its cost sums: :meth:`~postrisk.planning.cost.CostModel.unit_cost`'s
    arguments)."""
    if stage == "checks":  # one job reading every task store
        costs = [(None, u.dataset) for u in units["posterior"]]
        return {(): ([], costs)} if costs else {}
    if stage in ("tables", "report"):  # one job over every condition's scores
        costs = [(None, None)] * len(units["score"])
        return {(): ([], costs)} if costs else {}
    if stage == STUDIES_PAGE:  # one page of every study's tables, where a study runs
        running = [st for st in studies() if study_runs(st, units)]
        return {(): ([], [(None, None)] * len(running))} if running else {}
    if stage == "figure":  # one job per figure of the catalogue, each over every score table
        costs = [(None, None)] * len(units["score"])
        return {(entry.id,): ([entry], costs) for entry in stage_artefacts("figure")
                } if costs else {}
    jobs = {}
    for u in units[stage]:
        ident = tuple(u.wildcards[k] for k in simple_keys(stage))
        repeat = len(u.bnn_tasks) if stage == "valid_seeds" else 1  # reads every candidate
        jobs[ident] = ([u], [(u.cost_name, u.dataset)] * repeat)
    return jobs


def study_runs(study: Study, units: Mapping[str, Sequence[Any]]) -> bool:
    """Whether ``study`` runs in this configuration: its first stage has units (a study without
    unit stages: its summary, where its ``runs`` says so)."""
    return bool(units.get(study.stage_names[0]))


def _summary_jobs(study: Study, units: Mapping[str, Sequence[Any]]
                  ) -> dict[tuple[str, ...], tuple[list[Any], list[tuple[str | None, str | None]]]]:
    """A study's summary: one job over its units' outputs where it runs, its cost one item per
    unit of its first unit stage (scaled by the unit's dataset where the study says so)."""
    if not study.stages:
        return {(): ([], [(None, None)])} if units.get(study.name) else {}
    first = units[study.stages[0].name]
    costs = [(None, u.dataset if study.summary_cost_by_dataset else None) for u in first]
    return {(): ([], costs)} if costs else {}


def simple_rule(cost: CostModel, stage: str, units: Mapping[str, Sequence[Any]]) -> StageRule:
    """The one rule of a stage that is not batched, with its jobs' units and resources (its
    outputs are written in the stage's .smk file); ``units``: every stage's units."""
    rule = StageRule(name=stage, stage=stage, keys=simple_keys(stage), outputs={},
                     constraints={}, accelerator=False)
    summaries = {st.name: st for st in studies()}
    jobs = (_summary_jobs(summaries[stage], units) if stage in summaries
            else _simple_jobs(stage, units))
    for ident, (members, items) in jobs.items():
        rule.jobs[ident] = Job(members, cost.units_resources(stage, items))
    return rule


def workflow_rules(settings: RuleSettings, units: Mapping[str, Sequence[Any]]
                   ) -> dict[str, list[StageRule]]:
    """Every rule of the workflow with every job and its resources, by stage, from every
    stage's ``units`` (:func:`postrisk.planning.units.stage_units`): the one source of the
    Snakemake rules' jobs and of ``postrisk plan``."""
    return {stage: (stage_rules(settings, stage, units[stage]) if is_batched(stage)
                    else [simple_rule(settings.cost, stage, units)]) for stage in stages()}
