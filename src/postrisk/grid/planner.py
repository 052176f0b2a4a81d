"""The planner: everything the workflow runs for one configuration, computed once.

``Planner(cfg)`` takes a validated configuration (:func:`postrisk.grid.config.validate_config`)
and holds its implemented conditions, its seed policy, the units of work of every stage
(:mod:`postrisk.grid.units`, frozen dataclasses that the step functions take as they are) and
the rules and jobs that run them (:mod:`postrisk.grid.jobs`). The Snakemake rules, ``postrisk
plan`` and the tests read the same object, so what a rule declares and what a test expects
come from one computation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from postrisk.grid.artefacts import (
    CATALOGUE,
    STUDY_ARTEFACT_STAGES,
    Artefact,
    ArtefactFile,
    artefact,
    expand,
    stage_artefacts,
)
from postrisk.grid.conditions import (
    Condition,
    covariate_datasets,
    implemented_conditions,
    implemented_methods,
    implemented_priors,
)
from postrisk.grid.config import load_config
from postrisk.grid.jobs import StageRule, workflow_rules
from postrisk.grid.paths import RESULTS, path
from postrisk.grid.seeds import SeedPolicy
from postrisk.grid.stages import STUDIES, UNIT_KEYS
from postrisk.grid.study_units import stage_units


class Planner:
    """The plan of one validated configuration (see the module docstring)."""

    def __init__(self, cfg: Mapping,
                 selections: Mapping[tuple[str, str, str], Sequence[int]] | None = None
                 ) -> None:
        """``selections``: the valid seeds of the cells whose seed selection is known when
        planning (:func:`~postrisk.grid.seeds.known_selections`; the GP and HBART posteriors
        of those cells are built on those seeds only)."""
        self.config = cfg
        self.priors: list[str] = implemented_priors(cfg)
        self.methods: list[str] = implemented_methods(cfg)
        self.conditions: list[Condition] = implemented_conditions(cfg)
        self.seeds = SeedPolicy(cfg, selections)
        self.covariate_datasets: list[str] = covariate_datasets(cfg)
        self.units: dict[str, list[Any]] = stage_units(cfg, self.seeds)
        self.rules: dict[str, list[StageRule]] = workflow_rules(cfg, self.units)

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
        if stage in UNIT_KEYS:
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
        return self.artefacts(*[a for a in CATALOGUE if a.shown and a.kind in ("table", "figure")
                                and a.stage not in STUDY_ARTEFACT_STAGES], root=root)

    # -------------------------------------------------------------------------- studies

    def studies(self) -> list[str]:
        """The studies this configuration runs: those whose first stage has jobs (a study's
        tables and figures are written by its last stage)."""
        return [name for name, stages in STUDIES.items()
                if any(r.jobs for r in self.rules[stages[0]])]

    def study_contents(self, root: str = "results") -> list[ArtefactFile]:
        """What the studies' page shows: the shown tables and figures of the studies that
        run, in catalogue order."""
        stages = {STUDIES[s][-1] for s in self.studies()}
        return self.artefacts(*[a for a in CATALOGUE if a.shown and a.kind in ("table", "figure")
                                and a.stage in stages], root=root)

    def study_files(self, root: str = "results") -> list[str]:
        """Every file of the studies that run, and their page (empty when none runs)."""
        if not self.studies():
            return []
        return [*(f for s in self.studies() for f in self.stage_files(STUDIES[s][-1], root)),
                *self.stage_files("studies_report", root)]

    def warmup_stores(self) -> dict[str, list[str]]:
        """The warm-up study's stores: the benchmark's (``task``) and the longer warm-up's
        (``warmup``), unit by unit."""
        units = self.units["warmup_posterior"]
        return {"task": [u.task for u in units], "warmup": [u.out for u in units]}

    def ood_stores(self) -> dict[str, list[str]]:
        """The OOD study's inputs: its fit stores (``fits``), the sample stores of every
        instance they may hold (``samples``), the OOD set's covariate store (``ood``) and
        every condition's score table (``scores``: the benchmark rankings)."""
        units = self.units["ood_fit"]
        return {"fits": [u.out for u in units],
                "samples": list(dict.fromkeys(p for u in units for p in u.samples)),
                "ood": list(dict.fromkeys(u.ood_covariates for u in units)),
                "scores": self.score_tables() if units else []}

    def sn_study_inputs(self) -> dict[str, list[str]]:
        """The SN study's inputs: its record files (``records``) and the score tables of its
        conditions (``scores``: the benchmark's methods on the same instances, Figure 10)."""
        units = self.units["sn_fit"]
        conditions = {u.condition for u in units}
        return {"records": [u.out for u in units],
                "scores": [u.out for u in self.units["score"] if u.condition in conditions]}

    def instances_per_method(self) -> dict[str, int]:
        """Per implemented method, the instances it is scored on: its conditions' usable
        seeds (``seeds.valid_per_cell`` each)."""
        n_valid = int(self.config["seeds"]["valid_per_cell"])
        counts = dict.fromkeys(self.methods, 0)
        for unit in self.units["fit"]:
            counts[unit.method] += n_valid
        return counts
