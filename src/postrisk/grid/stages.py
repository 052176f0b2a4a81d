"""The workflow's stages: their order, the keys of one unit of work, and how units group.

A *unit* is the smallest piece of work of a stage: one instance (``sample``, ``posterior``), one
(method, condition) (``fit``: its sweep when tuned, then every usable seed), one condition
(``score``), and so on. The three *batchable* stages run several units in one job: the units
that share the values of the config's ``group_by.<stage>`` keys (:func:`group_keys`). Plain
constants and one validation function, importing nothing else of the grid.
"""

from __future__ import annotations

from collections.abc import Mapping

from postrisk.tasks.key import CONDITION_COLUMNS, KEY_COLUMNS

#: Stages in the order the workflow runs them: the benchmark's, then the studies'.
STAGES = ("covariates", "prior", "sample", "posterior", "valid_seeds", "checks", "fit", "score",
          "disentanglement", "tables", "figure", "report", "warmup_posterior", "warmup_check",
          "ood_fit", "ood_study", "sandbox", "sn_fit", "sn_study", "studies_report")
#: The studies (``studies.<study>`` in the config): the stages each runs, in order, before the
#: one page of every study's tables (``studies_report``). Each study's budget is the sum of its
#: stages' (``benchmarks/demo_budget.py`` prints it).
STUDIES: dict[str, tuple[str, ...]] = {"warmup_check": ("warmup_posterior", "warmup_check"),
                                       "ood_proxy": ("ood_fit", "ood_study"),
                                       "sandbox": ("sandbox",),
                                       "sn_study": ("sn_fit", "sn_study")}

#: The keys of one unit of each batchable stage, in path order.
UNIT_KEYS: dict[str, tuple[str, ...]] = {
    "sample": KEY_COLUMNS,
    "posterior": KEY_COLUMNS,
    "fit": (*CONDITION_COLUMNS, "method"),
    "warmup_posterior": KEY_COLUMNS,
    "ood_fit": (*CONDITION_COLUMNS, "method"),
    "sn_fit": (*CONDITION_COLUMNS, "method"),
}
#: Keys every job of a batchable stage must fix: one prior per posterior process (bartz needs
#: JAX x64 off, the BNN posterior on), one method per fit process.
FIXED_KEYS: dict[str, tuple[str, ...]] = {"sample": (), "posterior": ("prior",),
                                         "fit": ("method",), "warmup_posterior": ("prior",),
                                         "ood_fit": ("method",), "sn_fit": ("method",)}
#: What each batchable stage writes per unit (kinds of :mod:`postrisk.grid.paths`).
OUTPUT_KINDS: dict[str, tuple[str, ...]] = {
    "sample": ("sample",), "posterior": ("task",), "fit": ("fit", "tuning_result"),
    "warmup_posterior": ("warmup_task",), "ood_fit": ("ood_fit",),
    "sn_fit": ("sn_fit", "sn_tuning"),
}
#: Inputs of a unit of the instance stages: (kind, the keys of the unit its path takes). The
#: inputs of a fit unit depend on its cell's seed policy and have no fixed shape.
INPUT_KINDS: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "sample": (("covariates", ("dataset",)), ("prior", ("dataset", "prior"))),
    "posterior": (("sample", UNIT_KEYS["posterior"]),),
    "warmup_posterior": (("sample", KEY_COLUMNS), ("task", KEY_COLUMNS)),
}
#: Wildcards of the one rule of each stage that is not batched (its jobs are fixed by them).
SIMPLE_KEYS: dict[str, tuple[str, ...]] = {
    "covariates": ("dataset",),
    "prior": ("dataset", "prior"),
    "valid_seeds": ("dataset", "noise", "coverage"),
    "checks": (),
    "score": CONDITION_COLUMNS,
    "disentanglement": (*KEY_COLUMNS, "method"),
    "tables": (),
    "figure": ("name",),
    "report": (),
    "warmup_check": (),
    "ood_study": (),
    "sandbox": (),
    "sn_study": (),
    "studies_report": (),
}
#: Stages whose cost entry is per prior or per method.
COST_BY = {"prior": "prior", "sample": "prior", "posterior": "prior", "fit": "method",
           "disentanglement": "method", "warmup_posterior": "prior", "ood_fit": "method",
           "sn_fit": "method"}


class GroupingError(ValueError):
    """A ``group_by`` setting that cannot be turned into rules."""


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
