"""The workflow's stages: their order, the keys of one unit of work, and how units group.

A *unit* is the smallest piece of work of a stage: one instance (``sample``, ``posterior``), one
(method, condition) (``fit``: its sweep when tuned, then every usable seed), one condition
(``score``), and so on. The *batchable* stages (sample, posterior, fit and the studies' unit
stages) run several units in one job: the units that share the values of the config's
``group_by.<stage>`` keys (:func:`group_keys`). The benchmark's stages are constants here; the
studies' come from their registrations (:mod:`postrisk.grid.study`), so no study is named
here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from postrisk.grid.study import studies, unit_stages
from postrisk.tasks.key import CONDITION_COLUMNS, KEY_COLUMNS

#: The benchmark's stages in the order the workflow runs them; the studies' follow
#: (:func:`stages`).
BENCHMARK_STAGES = ("covariates", "prior", "sample", "posterior", "valid_seeds", "checks", "fit",
                    "score", "disentanglement", "tables", "figure", "report")
#: The one page of every study's tables and figures, after the studies' own stages.
STUDIES_PAGE = "studies_report"

#: The keys of one unit of each batchable stage of the benchmark, in path order.
_UNIT_KEYS: dict[str, tuple[str, ...]] = {
    "sample": KEY_COLUMNS,
    "posterior": KEY_COLUMNS,
    "fit": (*CONDITION_COLUMNS, "method"),
}
#: Keys every job of a batchable stage must fix: one prior per posterior process (bartz needs
#: JAX x64 off, the BNN posterior on), one method per fit process.
_FIXED_KEYS: dict[str, tuple[str, ...]] = {"sample": (), "posterior": ("prior",),
                                          "fit": ("method",)}
#: What each batchable stage writes per unit (kinds of :mod:`postrisk.grid.paths`).
_OUTPUT_KINDS: dict[str, tuple[str, ...]] = {
    "sample": ("sample",), "posterior": ("task",), "fit": ("fit", "tuning_result"),
}
#: Inputs of a unit of the instance stages: (kind, the keys of the unit its path takes). The
#: inputs of a fit unit depend on its cell's seed policy and have no fixed shape.
_INPUT_KINDS: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "sample": (("covariates", ("dataset",)), ("prior", ("dataset", "prior"))),
    "posterior": (("sample", KEY_COLUMNS),),
}
#: Wildcards of the one rule of each stage that is not batched (its jobs are fixed by them;
#: a study's summary and the studies' page have none).
_SIMPLE_KEYS: dict[str, tuple[str, ...]] = {
    "covariates": ("dataset",),
    "prior": ("dataset", "prior"),
    "valid_seeds": ("dataset", "noise", "coverage"),
    "checks": (),
    "score": CONDITION_COLUMNS,
    "disentanglement": (*KEY_COLUMNS, "method"),
    "tables": (),
    "figure": ("name",),
    "report": (),
}
#: The benchmark's stages whose cost entry is per prior or per method.
_COST_BY = {"prior": "prior", "sample": "prior", "posterior": "prior", "fit": "method",
            "disentanglement": "method"}


def stages() -> tuple[str, ...]:
    """Every stage in the order the workflow runs them: the benchmark's, then each registered
    study's (its unit stages, then its summary), then the studies' page."""
    return (*BENCHMARK_STAGES, *(name for s in studies() for name in s.stage_names),
            STUDIES_PAGE)


def unit_keys() -> dict[str, tuple[str, ...]]:
    """The keys of one unit of every batchable stage (the benchmark's and the studies' unit
    stages), in path order."""
    return {**_UNIT_KEYS, **{name: s.keys for name, s in unit_stages().items()}}


def is_batched(stage: str) -> bool:
    """Whether ``stage`` groups its units into jobs (one rule per output shape)."""
    return stage in _UNIT_KEYS or stage in unit_stages()


def fixed_keys(stage: str) -> tuple[str, ...]:
    return _FIXED_KEYS[stage] if stage in _FIXED_KEYS else unit_stages()[stage].fixed


def output_kinds(stage: str) -> tuple[str, ...]:
    return _OUTPUT_KINDS[stage] if stage in _OUTPUT_KINDS else unit_stages()[stage].outputs


def input_kinds(stage: str) -> tuple[tuple[str, tuple[str, ...]], ...] | None:
    """Where every unit of ``stage`` has inputs of one shape: (kind, keys) each; else None."""
    if stage in _UNIT_KEYS:
        return _INPUT_KINDS.get(stage)
    return unit_stages()[stage].inputs


def simple_keys(stage: str) -> tuple[str, ...]:
    return _SIMPLE_KEYS.get(stage, ())


def cost_by() -> dict[str, str]:
    """Stages whose cost entry is per prior or per method."""
    return {**_COST_BY, **{name: s.cost_by for name, s in unit_stages().items() if s.cost_by}}


class GroupingError(ValueError):
    """A ``group_by`` setting that cannot be turned into rules."""


def group_keys(group_by: Mapping[str, Sequence[str]], stage: str) -> tuple[str, ...]:
    """The keys that name one job of ``stage`` (config ``group_by``'s entry for it; default:
    all of a unit's keys, one job per unit), in path order; a clear error for keys a unit does
    not have or a missing key the stage needs."""
    keys = unit_keys()[stage]
    chosen = group_by.get(stage, list(keys))
    unknown = [k for k in chosen if k not in keys]
    if unknown:
        raise GroupingError(f"config key 'group_by.{stage}': {unknown} are not keys of a "
                            f"{stage} unit ({', '.join(keys)})")
    missing = [k for k in fixed_keys(stage) if k not in chosen]
    if missing:
        raise GroupingError(f"config key 'group_by.{stage}' must include {missing}: one "
                            f"{' and one '.join(missing)} per {stage} job")
    return tuple(k for k in keys if k in chosen)  # path order
