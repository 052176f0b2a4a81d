"""Workflow configuration: the grid's vocabulary, schema validation with clear messages, the plan.

The schema is built here (enums come from the registries), used by ``rules/common.smk`` at
workflow start and by the command line; a bad key stops everything with one message that
names the key and the allowed values.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from postrisk.covariates.registry import registry, task_datasets

PRIORS = ("gp", "hbart", "bnn")
NOISE_MODES = ("homoscedastic", "smooth_monotone", "bump", "edges")
COVERAGES = ("balanced", "ood")
#: Registry names of the 19 methods (SPEC §10), then the reference rows scored beside them.
METHODS = ("blr", "gp", "vlgp", "dkl", "sngp_het", "ngboost_nig", "ngboost_bag", "catboost_ps",
           "catboost_kgb", "nn_bag", "nn_ens", "nn_drop", "nn_edl", "nn_deup", "nn_lap",
           "nn_lap_sn", "nn_fsp", "nn_fsp_sn", "nn_swag")
REFERENCE_ROWS = ("oracle", "distance", "constant_au")


class ConfigError(ValueError):
    """An invalid configuration; the message names the key and what is allowed."""


def _names(values) -> dict:
    return {"type": "array", "items": {"enum": list(values)}, "minItems": 1, "uniqueItems": True}


def _positive_int() -> dict:
    return {"type": "integer", "minimum": 1}


def config_schema() -> dict:
    """The JSON schema of a workflow configuration (config.yaml merged with a preset)."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "additionalProperties": False,
        "required": ["scale", "datasets", "priors", "noise_modes", "coverages", "seeds", "sizes",
                     "covariates", "local_guard", "cost_model", "gp_prior", "hbart_prior",
                     "bnn_prior", "posterior"],
        "properties": {
            "scale": {"enum": ["paper", "demo", "smoke"]},
            "datasets": _names(task_datasets()),
            "ood_datasets": {**_names(registry()), "minItems": 0},
            "priors": _names(PRIORS),
            "noise_modes": _names(NOISE_MODES),
            "coverages": _names(COVERAGES),
            "methods": {**_names(METHODS), "minItems": 0},
            "seeds": {
                "type": "object", "additionalProperties": False,
                "required": ["valid_per_cell", "candidates"],
                "properties": {"valid_per_cell": _positive_int(), "candidates": _positive_int()},
            },
            "sizes": {
                "type": "object", "additionalProperties": False,
                "required": ["n_eval_cap"],
                "properties": {
                    "n_eval_cap": _positive_int(),
                    "n_cap": {"anyOf": [{"type": "null"}, _positive_int()]},
                },
            },
            "covariates": {
                "type": "object", "additionalProperties": False,
                "properties": {
                    "prefer_offline_package": {"type": "boolean"},
                    "raw_dir": {"type": "string", "minLength": 1},
                    "fetch_retries": _positive_int(),
                    "fetch_timeout_s": {"type": "number", "exclusiveMinimum": 0},
                },
            },
            "confirm_full_run": {"type": "boolean"},
            "posterior_batch": {"type": "boolean"},
            "local_guard": {
                "type": "object", "additionalProperties": False,
                "required": ["max_instances"],
                "properties": {"max_instances": _positive_int()},
            },
            "cost_model": {
                "type": "object",
                "additionalProperties": {"type": "number", "minimum": 0},
            },
            "gp_prior": {
                "type": "object", "additionalProperties": False,
                "required": ["fit_rows", "fit_max_iter", "fit_restarts", "scale_draws"],
                "properties": {"fit_rows": _positive_int(), "fit_max_iter": _positive_int(),
                               "fit_restarts": {"type": "integer", "minimum": 0},
                               "scale_draws": _positive_int()},
            },
            "hbart_prior": {
                "type": "object", "additionalProperties": False,
                "required": ["num_trees", "max_depth", "base", "power", "n_cutpoints",
                             "scale_draws"],
                "properties": {"num_trees": _positive_int(),
                               "max_depth": {"type": "integer", "minimum": 2, "maximum": 10},
                               "base": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
                               "power": {"type": "number", "minimum": 0},
                               "n_cutpoints": {"type": "integer", "minimum": 1, "maximum": 255},
                               "scale_draws": _positive_int()},
            },
            "bnn_prior": {
                "type": "object", "additionalProperties": False,
                "required": ["hidden", "reference_inputs", "scale_draws"],
                "properties": {"hidden": _positive_int(), "reference_inputs": _positive_int(),
                               "scale_draws": _positive_int()},
            },
            "posterior": {
                "type": "object", "additionalProperties": False,
                "required": ["gp", "hbart", "bnn"],
                "properties": {
                    "gp": {"type": "object", "additionalProperties": False, "required": ["draws"],
                           "properties": {"draws": {"type": "integer", "minimum": 40}}},
                    "hbart": {
                        "type": "object", "additionalProperties": False,
                        "required": ["chains", "warmup", "draws_per_chain", "thin", "tempering"],
                        "properties": {
                            "chains": {"type": "integer", "minimum": 2},
                            "warmup": _positive_int(),
                            "draws_per_chain": {"type": "integer", "minimum": 2},
                            "thin": _positive_int(),
                            "tempering": {
                                "type": "object", "additionalProperties": False,
                                "required": ["t0", "stages", "share"],
                                "properties": {
                                    "t0": {"type": "number", "minimum": 1},
                                    "stages": _positive_int(),
                                    "share": {"type": "number", "minimum": 0, "maximum": 1}},
                            },
                        },
                    },
                    "bnn": {
                        "type": "object", "additionalProperties": False,
                        "required": ["chains", "warmup", "samples", "target_accept",
                                     "max_tree_depth"],
                        "properties": {
                            "chains": {"type": "integer", "minimum": 2},
                            "warmup": _positive_int(), "samples": {"type": "integer",
                                                                   "minimum": 4},
                            "target_accept": {"type": "number", "exclusiveMinimum": 0,
                                              "exclusiveMaximum": 1},
                            "max_tree_depth": _positive_int(),
                            "chain_method": {"enum": ["parallel", "vectorized"]},
                        },
                    },
                },
            },
            "prior_grid": {
                "type": "object", "additionalProperties": False,
                "properties": {prior: {
                    "type": "object", "additionalProperties": False,
                    "properties": {"datasets": _names(task_datasets()),
                                   "noise_modes": _names(NOISE_MODES),
                                   "coverages": _names(COVERAGES)},
                } for prior in PRIORS},
            },
            "method_settings": {
                "type": "object", "propertyNames": {"enum": list(METHODS)},
                "additionalProperties": {"type": "object"},
            },
            "fit_batch": {"type": "boolean"},
            "tuning": {
                "type": "object", "additionalProperties": False,
                "required": ["trials", "startup_trials", "validation_fraction"],
                "properties": {
                    "trials": _positive_int(),
                    "startup_trials": _positive_int(),
                    "validation_fraction": {"type": "number", "exclusiveMinimum": 0,
                                            "exclusiveMaximum": 1},
                    "methods": {"anyOf": [{"type": "null"}, {**_names(METHODS), "minItems": 0}]},
                    "grid": {
                        "type": "object", "additionalProperties": False,
                        "properties": {"datasets": _names(task_datasets()),
                                       "priors": _names(PRIORS),
                                       "noise_modes": _names(NOISE_MODES),
                                       "coverages": _names(COVERAGES)},
                    },
                },
            },
            "budget_s": {
                "type": "object",
                "additionalProperties": {"type": "number", "exclusiveMinimum": 0},
            },
        },
    }


def _key(path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _message(err: jsonschema.ValidationError) -> str:
    key = _key(err.absolute_path)
    if err.validator == "enum":
        allowed = ", ".join(map(str, err.validator_value))
        return f"config key '{key}': {err.instance!r} is not allowed; allowed values: {allowed}"
    if err.validator in ("minimum", "exclusiveMinimum"):
        return f"config key '{key}': {err.instance!r} must be positive (≥ {err.validator_value})"
    if err.validator == "additionalProperties":
        allowed = ", ".join(err.schema.get("properties", {}))
        extra = sorted(set(err.instance) - set(err.schema.get("properties", {})))
        return f"config key '{key}': unknown key(s) {extra}; allowed keys: {allowed}"
    if err.validator == "required":
        return f"config key '{key}': {err.message}"
    if err.validator == "anyOf":
        return f"config key '{key}': {err.instance!r} must be null or a positive integer"
    return f"config key '{key}': {err.message}"


def validate_config(config: Mapping[str, Any]) -> dict:
    """Check ``config`` against :func:`config_schema` and the cross-key rules; return a copy."""
    cfg = copy.deepcopy(dict(config))
    validator = jsonschema.Draft202012Validator(config_schema())
    errors = sorted(validator.iter_errors(cfg), key=lambda e: (len(e.absolute_path), e.path))
    if errors:
        best = jsonschema.exceptions.best_match(errors)
        # Prefer the deepest error inside an anyOf so the message names the real problem.
        raise ConfigError(_message(best))
    seeds = cfg["seeds"]
    if seeds["candidates"] < seeds["valid_per_cell"]:
        raise ConfigError(
            f"config key 'seeds.candidates': {seeds['candidates']} is smaller than "
            f"seeds.valid_per_cell = {seeds['valid_per_cell']}"
        )
    for prior, grid in cfg.get("prior_grid", {}).items():
        for axis, values in grid.items():
            outside = [v for v in values if v not in cfg[axis]]
            if outside:
                raise ConfigError(f"config key 'prior_grid.{prior}.{axis}': {outside} not in "
                                  f"'{axis}' ({', '.join(cfg[axis])})")
    cfg.setdefault("ood_datasets", [])
    cfg.setdefault("methods", [])
    cfg.setdefault("prior_grid", {})
    cfg.setdefault("posterior_batch", False)
    return cfg


def deep_merge(base: Mapping, override: Mapping) -> dict:
    """Snakemake's rule for ``--configfile``: mappings merge recursively, other values replace."""
    out = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def load_config(*paths: str | Path) -> dict:
    """Load and merge YAML files in order (config.yaml, then presets), then validate."""
    merged: dict = {}
    for path in paths:
        merged = deep_merge(merged, yaml.safe_load(Path(path).read_text()) or {})
    return validate_config(merged)


# -- the grid ----------------------------------------------------------------------------------

def covariate_datasets(cfg: Mapping) -> list[str]:
    """Datasets whose covariate store the workflow builds (tasks first, then OOD-only)."""
    names = list(cfg["datasets"]) + [n for n in cfg.get("ood_datasets", [])
                                     if n not in cfg["datasets"]]
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


def conditions(cfg: Mapping) -> Iterator[tuple[str, str, str, str]]:
    """(dataset, prior, noise, coverage) of the grid; ``prior_grid`` narrows a family's axes
    (presets: e.g. the MCMC families on a subset of the demo's cells)."""
    narrow = cfg.get("prior_grid", {})
    for dataset, prior, noise, coverage in product(cfg["datasets"], cfg["priors"],
                                                   cfg["noise_modes"], cfg["coverages"]):
        grid = narrow.get(prior, {})
        if all(value in grid.get(axis, [value]) for axis, value in
               (("datasets", dataset), ("noise_modes", noise), ("coverages", coverage))):
            yield dataset, prior, noise, coverage


@dataclass(frozen=True)
class StagePlan:
    stage: str
    jobs: int
    cpu_minutes_per_job: float

    @property
    def cpu_hours(self) -> float:
        return self.jobs * self.cpu_minutes_per_job / 60


def implemented_priors(cfg: Mapping) -> list[str]:
    """The configured prior families the workflow can build today."""
    import importlib.util

    from postrisk.priors.family import FAMILY_PATHS

    available = {name for name, path in FAMILY_PATHS.items()
                 if importlib.util.find_spec(path.split(":")[0]) is not None}
    return [p for p in cfg["priors"] if p in available]


def implemented_methods(cfg: Mapping) -> list[str]:
    """The configured methods the workflow can fit today."""
    from postrisk.methods.registry import METHOD_PATHS

    return [m for m in cfg.get("methods", []) if m in METHOD_PATHS]


def tuned_methods(cfg: Mapping) -> list[str]:
    """Implemented methods that get a tuning sweep (``tuning.methods``; null: all of them)."""
    chosen = cfg.get("tuning", {}).get("methods")
    methods = implemented_methods(cfg)
    return methods if chosen is None else [m for m in methods if m in chosen]


def is_tuned(cfg: Mapping, method: str, condition: tuple[str, str, str, str]) -> bool:
    """Whether (method, condition) gets a sweep: a tuned method on a condition inside
    ``tuning.grid`` (presets narrow it; the paper tunes every condition)."""
    if method not in tuned_methods(cfg):
        return False
    grid = cfg.get("tuning", {}).get("grid", {})
    keys = ("datasets", "priors", "noise_modes", "coverages")
    return all(value in grid.get(key, [value]) for key, value in zip(keys, condition,
                                                                       strict=True))


def task_seeds(cfg: Mapping) -> list[int]:
    """Seeds whose task stores are built for every condition.

    With BNN in the grid, every candidate seed is built (validity is decided by the BNN
    instance's R̂ at aggregation); without it every seed is valid and the first
    ``valid_per_cell`` suffice (SPEC §8).
    """
    seeds = cfg["seeds"]
    n = seeds["candidates"] if "bnn" in implemented_priors(cfg) else seeds["valid_per_cell"]
    return list(range(n))


def implemented_conditions(cfg: Mapping) -> list[tuple[str, str, str, str]]:
    priors = implemented_priors(cfg)
    return [c for c in conditions(cfg) if c[1] in priors]


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
    from postrisk.io import digest

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
