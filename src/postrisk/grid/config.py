"""The workflow configuration: its schema, validation with clear messages, merging of files.

The schema's enums come from the registries (:mod:`postrisk.grid.vocabulary`). It is used by the
workflow at start and by the command line; a bad key stops everything with one message that names
the key and the allowed values.

The defaults are written once, in the checkout's root ``config.yaml``; the wheel ships the same
file as ``postrisk/config.yaml`` (:func:`default_config_path`). Every command reads its
configuration with :func:`read_config`: ``./config.yaml`` when the working directory has one,
else the packaged defaults, with each ``--configfile`` merged over it in order.

The cost model (``cost_model``: what each job asks of a cluster) is machine-fitted, not edited:
it lives in its own file, ``cost_model.yaml`` beside ``config.yaml`` (:func:`cost_model_path`),
written by ``benchmarks/cost_model.py``. :func:`read_layers` puts it first, under every file a
person writes, so any of those may override an entry.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from postrisk.covariates.registry import registry, task_datasets
from postrisk.grid.config_methods import ConfigError, resolve_outside_methods
from postrisk.grid.stages import BENCHMARK_STAGES, STUDIES_PAGE, GroupingError, cost_by, group_keys
from postrisk.grid.stages import stages as all_stages
from postrisk.grid.stages import unit_keys as all_unit_keys
from postrisk.grid.study import StudyError, load_study_packages, renamed_stages, studies
from postrisk.grid.vocabulary import COVERAGES, METHODS, NOISE_MODES, PRIORS

logger = logging.getLogger(__name__)


def names_schema(values) -> dict:
    """A non-empty list of distinct names from ``values`` (a config key's schema)."""
    return {"type": "array", "items": {"enum": list(values)}, "minItems": 1, "uniqueItems": True}


def positive_int_schema() -> dict:
    """A positive integer (a config key's schema)."""
    return {"type": "integer", "minimum": 1}


def _narrowing(priors: bool = True) -> dict:
    """A narrowing of the grid's axes (``prior_grid``'s per prior, without ``priors``;
    ``method_grid``'s per method; ``tuning.grid``): {axis: allowed values}."""
    axes = {"datasets": names_schema(task_datasets()), "priors": names_schema(PRIORS),
            "noise_modes": names_schema(NOISE_MODES), "coverages": names_schema(COVERAGES)}
    if not priors:
        del axes["priors"]
    return {"type": "object", "additionalProperties": False, "properties": axes}


def _cost_entry() -> dict:
    number = {"type": "number", "minimum": 0}
    values = {"threads": positive_int_schema(), "minutes": number, "minutes_per_size": number,
              "mem_mb": number, "mem_mb_per_size": number, "power": number,
              "mem_power": number}
    # on a GPU: any of the values, laid over the entry, and where they come from (false: guesses)
    gpu = {"type": "object", "additionalProperties": False, "properties": {
        **values, "measured": {"anyOf": [{"type": "string", "minLength": 1}, {"const": False}]}}}
    return {"type": "object", "additionalProperties": False,
            "required": ["threads", "minutes", "mem_mb"], "properties": {**values, "gpu": gpu}}


def _cost_model_schema(methods: tuple[str, ...] = METHODS) -> dict:
    """``cost_model``: global settings, then per stage one entry, or (stages whose cost depends
    on the prior or the method) one entry per prior/method with a ``default``."""
    by_name = {"type": "object", "additionalProperties": _cost_entry(),
               "propertyNames": {"enum": ["default", *PRIORS, *methods]},
               "required": ["default"]}
    per = cost_by()
    return {
        "type": "object", "additionalProperties": False,
        # a study's stages may go without: their declared cost applies (postrisk.planning.cost)
        "required": ["rows", "margin", "min_runtime", *BENCHMARK_STAGES, STUDIES_PAGE],
        "properties": {
            "rows": positive_int_schema(), "margin": {"type": "number", "minimum": 1},
            "min_runtime": positive_int_schema(), "job_minutes": {"type": "number", "minimum": 0},
            **{stage: ({"anyOf": [_cost_entry(), by_name]} if stage in per
                       else _cost_entry()) for stage in all_stages()},
        },
    }


def studies_schema(methods: tuple[str, ...]) -> dict:
    """Config ``studies``: one optional section per registered study, each its own schema."""
    return {"type": "object", "additionalProperties": False,
            "properties": {s.name: s.schema(methods) for s in studies()}}


def config_schema(methods: tuple[str, ...] = METHODS) -> dict:
    """The JSON schema of a workflow configuration (config.yaml merged with a preset);
    ``methods``: the method names it may use (the paper's and the outside methods')."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "additionalProperties": False,
        "required": ["scale", "datasets", "priors", "noise_modes", "coverages", "seeds", "sizes",
                     "noise_model", "covariates", "local_guard", "cost_model", "gp_prior",
                     "hbart_prior", "bnn_prior", "posterior", "accelerator"],
        "properties": {
            "scale": {"enum": ["paper", "paper_slice", "demo", "smoke"]},
            "datasets": names_schema(task_datasets()),
            "ood_datasets": {**names_schema(registry()), "minItems": 0},
            "priors": names_schema(PRIORS),
            "noise_modes": names_schema(NOISE_MODES),
            "coverages": names_schema(COVERAGES),
            "methods": {**names_schema(methods), "minItems": 0},
            # outside methods (module:Class), resolved: name -> location and search space
            "outside_methods": {
                "type": "object",
                "additionalProperties": {
                    "type": "object", "additionalProperties": False, "required": ["location"],
                    "properties": {"location": {"type": "string"},
                                   "search_space": {"anyOf": [{"type": "null"},
                                                              {"type": "object"}]}}},
            },
            "method_search_spaces": {
                "type": "object", "additionalProperties": {"type": "object"},
            },
            "seeds": {
                "type": "object", "additionalProperties": False,
                "required": ["valid_per_cell", "candidates"],
                "properties": {"valid_per_cell": positive_int_schema(),
                               "candidates": positive_int_schema(),
                               "per_prior": {"type": "object",
                                             "additionalProperties": positive_int_schema()}},
            },
            "sizes": {
                "type": "object", "additionalProperties": False,
                "required": ["n_eval_cap"],
                "properties": {
                    "n_eval_cap": positive_int_schema(),
                    "n_cap": {"anyOf": [{"type": "null"}, positive_int_schema()]},
                },
            },
            "noise_model": {
                "type": "object", "additionalProperties": False, "required": ["strength"],
                "properties": {"strength": {"type": "number", "minimum": 0}},
            },
            "covariates": {
                "type": "object", "additionalProperties": False,
                "properties": {
                    "prefer_offline_package": {"type": "boolean"},
                    "raw_dir": {"type": "string", "minLength": 1},
                    "fetch_retries": positive_int_schema(),
                    "fetch_timeout_s": {"type": "number", "exclusiveMinimum": 0},
                },
            },
            "confirm_full_run": {"type": "boolean"},
            "local_guard": {
                "type": "object", "additionalProperties": False,
                "required": ["max_instances"],
                "properties": {"max_instances": positive_int_schema()},
            },
            "cost_model": _cost_model_schema(methods),
            "gp_prior": {
                "type": "object", "additionalProperties": False,
                "required": ["fit_rows", "fit_max_iter", "fit_restarts", "scale_draws"],
                "properties": {"fit_rows": positive_int_schema(),
                               "fit_max_iter": positive_int_schema(),
                               "fit_restarts": {"type": "integer", "minimum": 0},
                               "scale_draws": positive_int_schema()},
            },
            "hbart_prior": {
                "type": "object", "additionalProperties": False,
                "required": ["num_trees", "max_depth", "base", "power", "n_cutpoints",
                             "scale_draws"],
                "properties": {"num_trees": positive_int_schema(),
                               "max_depth": {"type": "integer", "minimum": 2, "maximum": 10},
                               "base": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
                               "power": {"type": "number", "minimum": 0},
                               "n_cutpoints": {"type": "integer", "minimum": 1, "maximum": 255},
                               "scale_draws": positive_int_schema()},
            },
            "bnn_prior": {
                "type": "object", "additionalProperties": False,
                "required": ["hidden", "reference_inputs", "scale_draws"],
                "properties": {"hidden": positive_int_schema(),
                               "reference_inputs": positive_int_schema(),
                               "scale_draws": positive_int_schema()},
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
                            "warmup": positive_int_schema(),
                            "draws_per_chain": {"type": "integer", "minimum": 2},
                            "thin": positive_int_schema(),
                            "tempering": {
                                "type": "object", "additionalProperties": False,
                                "required": ["t0", "stages", "share"],
                                "properties": {
                                    "t0": {"type": "number", "minimum": 1},
                                    "stages": positive_int_schema(),
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
                            "warmup": positive_int_schema(), "samples": {"type": "integer",
                                                                   "minimum": 4},
                            "target_accept": {"type": "number", "exclusiveMinimum": 0,
                                              "exclusiveMaximum": 1},
                            "max_tree_depth": positive_int_schema(),
                            "chain_method": {"enum": ["parallel", "vectorized"]},
                        },
                    },
                },
            },
            "prior_grid": {
                "type": "object", "additionalProperties": False,
                "properties": {prior: _narrowing(priors=False) for prior in PRIORS},
            },
            "method_grid": {
                "type": "object", "propertyNames": {"enum": list(methods)},
                "additionalProperties": _narrowing(),
            },
            "method_settings": {
                "type": "object", "propertyNames": {"enum": list(methods)},
                "additionalProperties": {"type": "object"},
            },
            "group_by": {
                "type": "object", "additionalProperties": False,
                "properties": {stage: {"type": "array", "items": {"enum": list(keys)},
                                       "uniqueItems": True}
                               for stage, keys in all_unit_keys().items()},
            },
            "accelerator": {
                "type": "object", "additionalProperties": False,
                "required": ["use", "allow_cpu_fallback"],
                "properties": {"use": {"type": "boolean"},
                               "allow_cpu_fallback": {"type": "boolean"}},
            },
            "tuning": {
                "type": "object", "additionalProperties": False,
                "required": ["trials", "startup_trials", "validation_fraction"],
                "properties": {
                    "trials": positive_int_schema(),
                    "startup_trials": positive_int_schema(),
                    "validation_fraction": {"type": "number", "exclusiveMinimum": 0,
                                            "exclusiveMaximum": 1},
                    "batch_size": positive_int_schema(),
                    "methods": {"anyOf": [{"type": "null"},
                                          {**names_schema(methods), "minItems": 0}]},
                    "grid": _narrowing(),
                },
            },
            "disentanglement": {
                "type": "object", "additionalProperties": False,
                "required": ["grid", "seeds", "data_fractions", "label_noise_fractions",
                             "runs", "correlation", "definition"],
                "properties": {
                    # null or absent: every configured method; a list narrows them
                    "methods": {"anyOf": [{"type": "null"},
                                          {**names_schema(methods), "minItems": 0}]},
                    "grid": _narrowing(),
                    "seeds": {"type": "array", "items": {"type": "integer", "minimum": 0},
                              "minItems": 1, "uniqueItems": True},
                    "data_fractions": {"type": "array", "minItems": 3, "uniqueItems": True,
                                       "items": {"type": "number", "exclusiveMinimum": 0,
                                                 "maximum": 1}},
                    "label_noise_fractions": {"type": "array", "minItems": 3,
                                              "uniqueItems": True,
                                              "items": {"type": "number", "minimum": 0,
                                                        "maximum": 1}},
                    "runs": positive_int_schema(),
                    "correlation": {"enum": ["pearson", "spearman"]},
                    # the headline DE: correlation with the manipulated uncertainty per level
                    # ("level") or with the negated test score per run ("score")
                    "definition": {"enum": ["level", "score"], "default": "level"},
                },
            },
            # the studies (docs/design.md, "Studies"), each a package of its own
            # (postrisk.studies.<name>; others named by study_packages)
            "studies": studies_schema(methods),
            "study_packages": {"type": "array", "items": {"type": "string", "minLength": 1},
                               "uniqueItems": True},
            "release": {
                "type": "object", "additionalProperties": False,
                "required": ["base_url", "download_dir", "max_bytes", "max_files", "retries",
                             "timeout_s"],
                "properties": {
                    "base_url": {"anyOf": [{"type": "null"},
                                           {"type": "string", "pattern": "^https?://"}]},
                    "download_dir": {"type": "string", "minLength": 1},
                    "datasets": {"anyOf": [{"type": "null"}, names_schema(task_datasets())]},
                    "priors": {"anyOf": [{"type": "null"}, names_schema(PRIORS)]},
                    "max_bytes": positive_int_schema(),
                    "max_files": positive_int_schema(),
                    "retries": positive_int_schema(),
                    "timeout_s": {"type": "number", "exclusiveMinimum": 0},
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


#: Sections that a null clears (a file merged over a preset cannot remove a mapping's keys).
CLEARABLE = ("prior_grid", "method_grid", "method_settings", "method_search_spaces")


def validate_config(config: Mapping[str, Any], layers: Sequence[Mapping] = ()) -> dict:
    """Check ``config`` against :func:`config_schema` and the cross-key rules; return a copy.

    ``layers``: the files ``config`` was merged from (config.yaml, presets, in order), whose
    outside methods a later file's ``methods`` may have dropped: entries naming a method that
    ``methods`` does not list are ignored with one warning
    (:func:`~postrisk.grid.config_methods.resolve_outside_methods`). A null in one of
    :data:`CLEARABLE` stands for an empty mapping."""
    cfg = copy.deepcopy(dict(config))
    for key in CLEARABLE:
        if key in cfg and cfg[key] is None:
            cfg[key] = {}
    try:
        load_study_packages(cfg.get("study_packages") or [])
    except StudyError as err:
        raise ConfigError(f"config key 'study_packages': {err}") from None
    rename_stage_keys(cfg)
    resolve_outside_methods(cfg, layers)
    validator = jsonschema.Draft202012Validator(
        config_schema((*METHODS, *cfg.get("outside_methods", {}))))
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
    unknown = [p for p in seeds.get("per_prior") or {} if p not in cfg["priors"]]
    if unknown:
        raise ConfigError(f"config key 'seeds.per_prior': {unknown} not in 'priors' "
                          f"({', '.join(cfg['priors'])})")
    for key in ("prior_grid", "method_grid"):
        for name, grid in cfg.get(key, {}).items():
            for axis, values in grid.items():
                outside = [v for v in values if v not in cfg[axis]]
                if outside:
                    raise ConfigError(f"config key '{key}.{name}.{axis}': {outside} not in "
                                      f"'{axis}' ({', '.join(cfg[axis])})")
    for study in studies():
        section = (cfg.get("studies") or {}).get(study.name)
        if section and study.check is not None:
            study.check(section)
    cfg.setdefault("ood_datasets", [])
    cfg.setdefault("methods", [])
    cfg.setdefault("prior_grid", {})
    cfg.setdefault("method_grid", {})
    for stage in all_unit_keys():
        try:
            group_keys(cfg.get("group_by") or {}, stage)
        except GroupingError as err:
            raise ConfigError(str(err)) from None
    return cfg


#: Sections keyed by stage name, where a study's old stage names are still read.
STAGE_KEYED = ("cost_model", "group_by", "budget_s")


def rename_stage_keys(cfg: dict) -> None:
    """A study's stage renamed (its declaration's ``renamed``): its old key under
    :data:`STAGE_KEYED` is read as the new one for one release, with a one-line deprecation
    message. The defaults use the new names only, so an old key comes from a file merged later:
    it is merged over the new key's value as that file would have been."""
    for old, new in renamed_stages().items():
        for section in STAGE_KEYED:
            entries = cfg.get(section)
            if isinstance(entries, dict) and old in entries:
                value = entries.pop(old)
                current = entries.get(new)
                entries[new] = (deep_merge(current, value) if isinstance(current, Mapping)
                                and isinstance(value, Mapping) else value)
                logger.warning("config key '%s.%s' is deprecated: it is now '%s.%s' (the old "
                               "name is read until the next release)", section, old, section,
                               new)


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
    """Load and merge these YAML files in order (config.yaml, then presets) over the fitted cost
    model, then validate; :func:`read_config` is the same with the base configuration found
    for you."""
    layers = read_layers(*paths)
    merged: dict = {}
    for layer in layers:
        merged = deep_merge(merged, layer)
    return validate_config(merged, layers)


def read_layers(*paths: str | Path, cost_model: bool = True) -> list[dict]:
    """The layers of a configuration: the fitted cost model (:func:`cost_model_path`) first
    (unless ``cost_model`` is false: more files to go over layers read before), then the YAML
    files ``paths`` (config.yaml, then presets), each as a mapping (an empty file: an empty
    one); :func:`load_config` merges them in order, and passes them to :func:`validate_config`
    as its ``layers``."""
    files = [_read_yaml(path) for path in paths]
    return [_read_yaml(cost_model_path()), *files] if cost_model else files


def _read_yaml(path: str | Path) -> dict:
    return yaml.safe_load(Path(path).read_text()) or {}


#: The base configuration's name, in a working directory and inside the package.
CONFIG_FILE = "config.yaml"
#: The fitted cost model's file, beside the packaged defaults.
COST_MODEL_FILE = "cost_model.yaml"


def _packaged(name: str, what: str) -> Path:
    """``postrisk/<name>`` of an installed wheel (the checkout's root file, force-included by
    hatch), else, in a source or editable install, the checkout's root file itself."""
    packaged = Path(str(resources.files("postrisk").joinpath(name)))
    if packaged.is_file():
        return packaged
    source = Path(__file__).resolve().parents[3] / name
    if source.is_file():
        return source
    raise FileNotFoundError(f"the packaged {what} is missing (neither {packaged} nor {source}); "
                            f"reinstall postrisk")


def default_config_path() -> Path:
    """The packaged defaults, ``config.yaml`` (what a person edits)."""
    return _packaged(CONFIG_FILE, "default configuration")


def cost_model_path() -> Path:
    """The fitted cost model, ``cost_model.yaml`` (what ``benchmarks/cost_model.py``
    writes)."""
    return _packaged(COST_MODEL_FILE, "cost model")


def read_config(*configfiles: str | Path, base: str | Path | None = None) -> dict:
    """The configuration every command uses: the base configuration — ``base`` when given,
    else ``./config.yaml`` when the working directory has one, else the packaged defaults
    (:func:`default_config_path`) — merged over the fitted cost model, with each of
    ``configfiles`` merged over it in order (:func:`deep_merge`, Snakemake's ``--configfile``
    rule), validated."""
    if base is None:
        here = Path(CONFIG_FILE)
        base = here if here.is_file() else default_config_path()
    return load_config(base, *configfiles)
