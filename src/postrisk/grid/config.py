"""The workflow configuration: reading, validation with clear messages, merging of files.

A configuration is checked against its schema (:mod:`postrisk.grid.schema`, whose enums come
from the registries) and the rules a schema cannot state. It is used by the workflow at start
and by the command line; a bad key stops everything with one message that names the key and the
allowed values.

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

from postrisk.grid.config_methods import ConfigError, resolve_outside_methods
from postrisk.grid.schema import SECTION_SCHEMAS, config_schema
from postrisk.grid.stages import GroupingError, group_keys
from postrisk.grid.stages import unit_keys as all_unit_keys
from postrisk.grid.study import (
    StudyError,
    load_family_modules,
    load_study_packages,
    renamed_stages,
    studies,
)
from postrisk.grid.vocabulary import METHODS

logger = logging.getLogger(__name__)


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
    try:
        load_family_modules(cfg.get("family_packages") or [])
    except StudyError as err:
        raise ConfigError(f"config key 'family_packages': {err}") from None
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
        section = (cfg.get(study.section) or {}).get(study.name)
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
    return validate_config(merge_layers(layers), layers)


def merge_layers(layers: Sequence[Mapping]) -> dict:
    """``layers`` (:func:`read_layers`) merged in order, each over those before it
    (:func:`deep_merge`), not validated."""
    merged: dict = {}
    for layer in layers:
        merged = deep_merge(merged, layer)
    return merged


def read_layers(*paths: str | Path, cost_model: bool = True) -> list[dict]:
    """The layers of a configuration: the fitted cost model (:func:`cost_model_path`) first
    (unless ``cost_model`` is false: more files to go over layers read before), then the YAML
    files ``paths`` (config.yaml, then presets), each as a mapping (an empty file: an empty
    one); :func:`load_config` merges them in order, and passes them to :func:`validate_config`
    as its ``layers``."""
    files = [_read_yaml(path) for path in paths]
    return [_read_yaml(cost_model_path()), *files] if cost_model else files


def _read_yaml(path: str | Path) -> dict:
    """One configuration file as a mapping (empty: ``{}``); a :class:`ConfigError` naming the
    file and the place where it is not YAML or not a mapping of keys."""
    try:
        data = yaml.safe_load(Path(path).read_text())
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise ConfigError(f"{path}: not valid YAML{where}: {problem}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a configuration file is a mapping of keys (like "
                          f"`methods: [blr, gp]`), not a {type(data).__name__}")
    return data


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
    return load_config(_base(base), *configfiles)


def read_section(key: str, *configfiles: str | Path, base: str | Path | None = None) -> Any:
    """The section ``key`` of the configuration :func:`read_config` reads (the same files,
    merged the same way), checked against that section's own schema alone
    (:data:`~postrisk.grid.schema.SECTION_SCHEMAS`): no study package is looked up and no other
    section validated, so that what needs one section — a task's loader, its download
    folder — stays light."""
    if key not in SECTION_SCHEMAS:
        raise KeyError(f"read_section: {key!r} is not a section read alone; known: "
                       f"{', '.join(SECTION_SCHEMAS)}")
    merged = merge_layers(read_layers(_base(base), *configfiles, cost_model=False))
    wrapped = {key: merged.get(key)}
    validator = jsonschema.Draft202012Validator({
        "type": "object", "required": [key], "properties": {key: SECTION_SCHEMAS[key]()}})
    errors = list(validator.iter_errors(wrapped))
    if errors:
        raise ConfigError(_message(jsonschema.exceptions.best_match(errors)))
    return copy.deepcopy(wrapped[key])


def _base(base: str | Path | None) -> str | Path:
    """The base configuration: ``base``, else ``./config.yaml`` where the working directory
    has one, else the packaged defaults."""
    if base is not None:
        return base
    here = Path(CONFIG_FILE)
    return here if here.is_file() else default_config_path()
