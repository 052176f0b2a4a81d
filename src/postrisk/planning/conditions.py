"""The grid: conditions (dataset, prior, noise, coverage), what is implemented, what is tuned.

A :class:`~postrisk.tasks.key.Condition` knows its cell; the paths of its files are
:func:`postrisk.grid.paths.condition_path`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from itertools import product

from postrisk.covariates.registry import registry
from postrisk.grid.study import studies
from postrisk.tasks.key import Condition


def covariate_datasets(cfg: Mapping) -> list[str]:
    """Datasets whose covariate store the workflow builds (tasks first, then OOD-only, then
    those the registered studies need where they run)."""
    names = list(cfg["datasets"]) + [n for n in cfg.get("ood_datasets", [])
                                     if n not in cfg["datasets"]]
    for study in studies():
        if study.datasets:
            names += [n for n in study.datasets(cfg) if n not in names]
    for name in list(names):
        ref = registry()[name].scaling_reference
        if ref and ref not in names:
            names.append(ref)
    return names


def training_size(dataset: str, n_cap: int | None) -> int:
    """Table 4's n for ``dataset``, capped by ``sizes.n_cap`` when a preset sets one."""
    n = registry()[dataset].n
    if n is None:
        raise ValueError(f"{dataset} is not a task dataset")
    return min(n, n_cap) if n_cap else n


#: The axes of a condition, as the configuration names them (``prior_grid``, ``method_grid``
#: and ``tuning.grid`` narrow them).
AXES = ("datasets", "priors", "noise_modes", "coverages")


def within(narrowing: Mapping, condition: tuple[str, str, str, str]) -> bool:
    """Whether ``condition`` lies inside a narrowing ({axis: allowed values}; an axis not named
    allows every value)."""
    return all(value in narrowing.get(axis, (value,))
               for axis, value in zip(AXES, condition, strict=True))


def conditions(cfg: Mapping) -> Iterator[Condition]:
    """(dataset, prior, noise, coverage) of the grid; ``prior_grid`` narrows a prior's axes
    (presets: e.g. the MCMC priors on a subset of the demo's cells)."""
    narrow = cfg.get("prior_grid", {})
    for condition in product(cfg["datasets"], cfg["priors"], cfg["noise_modes"],
                             cfg["coverages"]):
        if within(narrow.get(condition[1], {}), condition):
            yield Condition(*condition)


def available_priors() -> set[str]:
    """The priors whose modules import here."""
    import importlib.util

    from postrisk.priors.base import PRIOR_ENTRIES

    return {name for name, entry in PRIOR_ENTRIES.items()
            if importlib.util.find_spec(entry.module) is not None}


def implemented_priors(priors: Sequence[str]) -> list[str]:
    """The configured ``priors`` the workflow can build today."""
    available = available_priors()
    return [p for p in priors if p in available]


def implemented_methods(cfg: Mapping) -> list[str]:
    """The configured methods the workflow can fit: the built-in ones and the outside methods
    (``module:Class`` entries, resolved to names by the config's validation)."""
    from postrisk.methods.table import METHOD_ENTRIES

    outside = cfg.get("outside_methods") or {}
    return [m for m in cfg.get("methods", []) if m in METHOD_ENTRIES or m in outside]


def fits_method(method_grid: Mapping, method: str, condition: tuple[str, str, str, str]
                ) -> bool:
    """Whether ``method`` is fitted on ``condition``: everywhere unless config ``method_grid``
    narrows it (presets: e.g. the expensive methods on a subset of the demo's conditions)."""
    return within(method_grid.get(method) or {}, condition)


def condition_methods(cfg: Mapping, condition: tuple[str, str, str, str]) -> list[str]:
    """The implemented methods fitted on ``condition``, in the configured order."""
    grid = cfg.get("method_grid") or {}
    return [m for m in implemented_methods(cfg) if fits_method(grid, m, condition)]


def tuned_methods(cfg: Mapping) -> list[str]:
    """Implemented methods that get a tuning sweep (``tuning.methods``; null: all of them)."""
    chosen = cfg.get("tuning", {}).get("methods")
    methods = implemented_methods(cfg)
    return methods if chosen is None else [m for m in methods if m in chosen]


def disentanglement_methods(cfg: Mapping) -> list[str]:
    """Implemented methods the Disentanglement Error experiment refits
    (``disentanglement.methods``, in its order; null or absent: all of them)."""
    chosen = (cfg.get("disentanglement") or {}).get("methods")
    methods = implemented_methods(cfg)
    return methods if chosen is None else [m for m in chosen if m in methods]


def is_tuned(cfg: Mapping, method: str, condition: tuple[str, str, str, str]) -> bool:
    """Whether (method, condition) gets a sweep: a tuned method on a condition inside
    ``tuning.grid`` (presets narrow it; the paper tunes every condition)."""
    if method not in tuned_methods(cfg) or not fits_method(cfg.get("method_grid") or {}, method,
                                                           condition):
        return False
    return within(cfg.get("tuning", {}).get("grid", {}), condition)


def implemented_conditions(cfg: Mapping) -> list[Condition]:
    """The conditions of ``cfg`` whose prior is implemented."""
    priors = implemented_priors(cfg["priors"])
    return [c for c in conditions(cfg) if c[1] in priors]


# ---------------------------------------------------------------------------------- the studies

def is_study_dataset(dataset: str) -> bool:
    """A dataset registered for a study alone (role ``study``): not in the benchmark's grid, its
    instances built by the study that uses it."""
    return registry()[dataset].role == "study"
