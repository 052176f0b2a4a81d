"""The planner: everything the workflow runs for one configuration, computed once.

``Planner(cfg)`` takes a validated configuration (:func:`postrisk.grid.config.validate_config`)
and holds its implemented conditions, its seed policy, the units of work of every stage
(:mod:`postrisk.planning.units`, frozen dataclasses that the step functions take as they are) and
the rules and jobs that run them (:mod:`postrisk.planning.jobs`). The Snakemake rules, ``postrisk
plan`` and the tests read the same object, so what a rule declares and what a test expects
come from one computation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from postrisk.grid.artefacts import (
    STUDIES_PAGE,
    Artefact,
    ArtefactFile,
    artefact,
    catalogue,
    expand,
    stage_artefacts,
    study_artefact_stages,
)
from postrisk.grid.config import load_config
from postrisk.grid.paths import RESULTS, path
from postrisk.grid.stages import is_batched
from postrisk.grid.study import Study, studies, study
from postrisk.planning.conditions import (
    Condition,
    covariate_datasets,
    implemented_conditions,
    implemented_methods,
    implemented_priors,
)
from postrisk.planning.cost import CostModel
from postrisk.planning.jobs import RuleSettings, StageRule, study_runs, workflow_rules
from postrisk.planning.seeds import SeedPolicy
from postrisk.planning.units import stage_units


class Planner:
    """The plan of one validated configuration (see the module docstring)."""

    def __init__(self, cfg: Mapping,
                 selections: Mapping[tuple[str, str, str], Sequence[int]] | None = None
                 ) -> None:
        """``selections``: the valid seeds of the cells whose seed selection is known when
        planning (:func:`~postrisk.planning.seeds.known_selections`; the GP and HBART posteriors
        of those cells are built on those seeds only)."""
        self.config = cfg
        self.priors: list[str] = implemented_priors(cfg["priors"])
        self.methods: list[str] = implemented_methods(cfg)
        self.conditions: list[Condition] = implemented_conditions(cfg)
        self.seeds = SeedPolicy(cfg, selections)
        self.covariate_datasets: list[str] = covariate_datasets(cfg)
        self.units: dict[str, list[Any]] = stage_units(cfg, self.seeds)
        settings = RuleSettings.of(cfg)
        self.cost: CostModel = settings.cost
        self.rules: dict[str, list[StageRule]] = workflow_rules(settings, self.units)

    @classmethod
    def from_files(cls, *paths: str | Path) -> Planner:
        """The planner of YAML files merged in order (config.yaml, then presets)."""
        return cls(load_config(*paths))

    # ---------------------------------------------------------------------------- rules

    def stage_rules(self, stage: str) -> list[StageRule]:
        """The rules of ``stage``: one per output shape for a batchable stage, else one."""
        return self.rules[stage]

    def rule(self, stage: str) -> StageRule:
        """The one rule of a stage that is not batched."""
        if is_batched(stage):
            raise KeyError(f"stage {stage!r} is batched: it has one rule per output shape "
                           "(stage_rules)")
        return self.rules[stage][0]

    def job_counts(self) -> dict[str, int]:
        """Jobs per rule name (what a dry run's job stats list, without ``all``)."""
        return {r.name: len(r.jobs) for rules in self.rules.values() for r in rules if r.jobs}

    def task_stores(self, root: str = RESULTS) -> list[str]:
        """Every task store, condition by condition, seed by seed (the order in which the
        checks read them: their tables' rows and bootstrap follow it)."""
        return [path("task", root, **c._asdict(), seed=s) for c in self.conditions
                for s in self.seeds.posterior_seeds(c)]

    def score_tables(self) -> list[str]:
        return [u.out for u in self.units["score"]]

    def disentanglement_runs(self) -> list[str]:
        return [u.out for u in self.units["disentanglement"]]

    # ------------------------------------------------------------------------ artefacts

    def artefact_values(self) -> dict[str, list]:
        """What a catalogue entry's fields expand over: the implemented priors; the datasets
        and (dataset, prior) pairs of the implemented conditions."""
        pairs = sorted({(c.dataset, c.prior) for c in self.conditions})
        return {"prior": list(self.priors), "dataset": sorted({d for d, _ in pairs}),
                "dataset,prior": pairs}

    def artefacts(self, *entries: str | Artefact, root: str = "results") -> list[ArtefactFile]:
        """The given catalogue entries (ids or entries) for this configuration, each expanded
        over its fields, in order."""
        values = self.artefact_values()
        return [f for e in entries
                for f in expand(artefact(e) if isinstance(e, str) else e, values, root)]

    def artefact_files(self, *entries: str | Artefact, root: str = "results") -> list[str]:
        """Every file of the given catalogue entries (a figure: PNG, then PDF)."""
        return [f for item in self.artefacts(*entries, root=root) for f in item.files]

    def stage_files(self, stage: str, root: str = "results", *, kind: str | None = None
                    ) -> list[str]:
        """Every file a catalogue stage writes (``kind``: only its tables, figures, …)."""
        return self.artefact_files(*stage_artefacts(stage, kind), root=root)

    def report_contents(self, root: str = "results") -> list[ArtefactFile]:
        """What the HTML report shows, in catalogue order: every shown table and figure of the
        benchmark (the studies have their own page)."""
        own = set(study_artefact_stages()) - set(self.families())
        return self.artefacts(*[a for a in catalogue() if a.shown
                                and a.kind in ("table", "figure") and a.stage not in own],
                              root=root)

    # -------------------------------------------------------------------------- studies

    def studies(self) -> list[str]:
        """The studies this configuration runs, in page order: those whose first stage has
        units (a study's tables and figures are written by its summary)."""
        return [s.name for s in self.running_studies()]

    def running_studies(self) -> list[Study]:
        return [s for s in studies() if s.section == "studies" and study_runs(s, self.units)]

    # --------------------------------------------------------------------- task families

    def families(self) -> list[str]:
        """The task families beside regression this configuration builds (their pipelines
        have units): their instances and checks are in ``all`` and their tables in the
        report."""
        return [s.name for s in studies() if s.section == "families"
                and study_runs(s, self.units)]

    def family_files(self, root: str = "results") -> list[str]:
        """Every catalogue file of the task families this configuration builds."""
        return [f for name in self.families() for f in self.stage_files(name, root)]

    def study_contents(self, root: str = "results") -> list[ArtefactFile]:
        """What the studies' page shows: the shown tables and figures of the studies that
        run, in catalogue order."""
        running = set(self.studies())
        return self.artefacts(*[a for a in catalogue() if a.shown
                                and a.kind in ("table", "figure") and a.stage in running],
                              root=root)

    def study_files(self, root: str = "results") -> list[str]:
        """Every file of the studies that run, and their page (empty when none runs)."""
        if not self.studies():
            return []
        return [*(f for s in self.studies() for f in self.stage_files(s, root)),
                *self.stage_files(STUDIES_PAGE, root)]

    def study_inputs(self, name: str) -> dict[str, list[str]]:
        """What the summary of study ``name`` reads, by name (its declaration's ``inputs``:
        e.g. its unit stages' outputs and the benchmark's score tables)."""
        declared = study(name).inputs
        return {k: list(v) for k, v in (declared(self) if declared else {}).items()}

    def instances_per_method(self) -> dict[str, int]:
        """Per implemented method, the instances it is scored on: its conditions' usable
        seeds (``seeds.valid_per_cell`` each)."""
        n_valid = int(self.config["seeds"]["valid_per_cell"])
        counts = dict.fromkeys(self.methods, 0)
        for unit in self.units["fit"]:
            counts[unit.method] += n_valid
        return counts
