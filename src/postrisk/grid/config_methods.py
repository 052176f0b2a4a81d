"""The configuration's method names: outside methods resolved, and the entries that name
methods ``methods`` does not list set aside.

``methods`` lists the methods a configuration fits, the paper's by name and outside methods by
location (``module:Class``, :mod:`postrisk.methods.outside`). Five sections name methods too:
``tuning.methods``, ``disentanglement.methods``, ``method_settings``, ``method_grid`` and
``method_search_spaces`` (``tuning.early_stopping.methods`` too, but a name there that
``methods`` does not list is left as it is: it stops no trial of a method that is not fitted).
A file merged over a preset that narrows ``methods`` (lists replace, mappings merge) leaves the
preset's entries for the methods it dropped in those sections; they are ignored, with one
warning that lists them (:func:`resolve_outside_methods`). A name that is neither a paper
method nor an outside method of the configuration or of a file it was merged from is a typo and
stays an error.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from postrisk.grid.vocabulary import METHODS

logger = logging.getLogger(__name__)

#: The sections that name methods: list sections, then mappings keyed by method name.
LIST_SECTIONS = ("tuning.methods", "disentanglement.methods")
KEY_SECTIONS = ("method_settings", "method_grid", "method_search_spaces")


class ConfigError(ValueError):
    """An invalid configuration; the message names the key and what is allowed."""


def _section(cfg: Mapping, key: str):
    """The value at the dotted ``key`` of ``cfg`` (None where absent)."""
    value = cfg
    for part in key.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def _named(cfg: Mapping, key: str) -> list[str]:
    value = _section(cfg, key)
    if key in LIST_SECTIONS:
        return [n for n in value if isinstance(n, str)] if isinstance(value, list) else []
    return list(value) if isinstance(value, Mapping) else []


def _drop(cfg: dict, key: str, names: set[str]) -> None:
    """Remove ``names`` from the section ``key`` of ``cfg`` (in place, order kept)."""
    *parents, last = key.split(".")
    holder = cfg
    for part in parents:
        holder = holder[part]
    if key in LIST_SECTIONS:
        holder[last] = [n for n in holder[last] if n not in names]
    else:
        holder[last] = {k: v for k, v in holder[last].items() if k not in names}


def layer_locations(layers: Iterable[Mapping]) -> list[str]:
    """The outside methods (``module:Class``) that the ``methods`` of ``layers`` (the files a
    configuration was merged from) list, in order, once each."""
    from postrisk.methods.outside import is_location

    found = [entry for layer in layers for entry in (layer or {}).get("methods") or []
             if isinstance(entry, str) and is_location(entry)]
    return list(dict.fromkeys(found))


def _names_of(locations: Iterable[str]) -> set[str]:
    """The method names of outside ``locations`` (imported; one that fails to import is left
    out: its entries then read as typos)."""
    from postrisk.methods.outside import OutsideMethodError, import_location, method_name

    names = set()
    for location in locations:
        try:
            names.add(method_name(import_location(location), location))
        except OutsideMethodError:
            continue
    return names


def resolve_outside_methods(cfg: dict, layers: Iterable[Mapping] = ()) -> None:
    """Replace each ``module:Class`` entry of ``cfg["methods"]`` by the method's name,
    registered in this process (``postrisk.methods.registry.register_outside``), and record
    ``cfg["outside_methods"]`` (name -> location, search space) for the listed outside methods.
    The search space comes from ``method_search_spaces.<name>`` when given, else from the class.
    Already resolved entries (a validated configuration validated again) are registered again.

    Then the entries of :data:`LIST_SECTIONS` and :data:`KEY_SECTIONS` that name a method
    ``methods`` does not list — a paper method, an outside method of ``cfg["outside_methods"]``
    or one that the ``methods`` of ``layers`` (the files ``cfg`` was merged from) named — are
    removed, with one warning listing them; any other name is an error (a typo), as is a search
    space for a paper method (its space is declared on its class)."""
    from postrisk.methods.outside import (
        NAME,
        OutsideMethodError,
        import_location,
        is_location,
        method_name,
    )
    from postrisk.methods.registry import register_outside

    layers = list(layers)
    spaces = cfg.get("method_search_spaces") or {}
    earlier = dict(cfg.get("outside_methods") or {})
    outside = {}
    try:
        methods = []
        for entry in cfg.get("methods") or []:
            if isinstance(entry, str) and is_location(entry):
                space = spaces.get(method_name(import_location(entry), entry))
                name = register_outside(entry, space)
                outside[name] = {"location": entry, "search_space": space}
                entry = name
            elif isinstance(entry, str) and entry in earlier:
                spec = earlier[entry]
                space = spaces[entry] if entry in spaces else spec.get("search_space")
                register_outside(spec["location"], space)
                outside[entry] = {"location": spec["location"], "search_space": space}
            methods.append(entry)
    except OutsideMethodError as err:
        raise ConfigError(f"config key 'methods': {err}") from None
    if "methods" in cfg:
        cfg["methods"] = methods
    cfg.pop("outside_methods", None)
    if outside:
        cfg["outside_methods"] = outside
    listed = {m for m in methods if isinstance(m, str)}
    unlisted = {*METHODS, *earlier} - listed
    # names that are not method names are left to the schema, except a search space's (its
    # keys are free)
    found = {key: [n for n in _named(cfg, key) if n not in listed and (
                   key == "method_search_spaces" or isinstance(n, str) and NAME.match(n))]
             for key in (*LIST_SECTIONS, *KEY_SECTIONS)}
    if any(n not in unlisted for names in found.values() for n in names):
        # the outside methods of the merged files that `methods` no longer lists
        unlisted |= _names_of(set(layer_locations(layers)) - {s["location"]
                                                              for s in outside.values()})
    for key, names in found.items():
        strangers = [n for n in names if n not in unlisted]
        if key == "method_search_spaces":
            builtin = [n for n in _named(cfg, key) if n in METHODS]
            strangers = [n for n in strangers if n not in METHODS]
            if builtin or strangers:
                raise ConfigError(f"config key 'method_search_spaces': {builtin + strangers} "
                                  f"are not outside methods of 'methods' "
                                  f"({', '.join(outside) or 'none'}); a built-in method's "
                                  "space is declared on its class")
        elif strangers:
            raise ConfigError(f"config key '{key}': {strangers} are neither methods of the paper "
                              "nor outside methods listed under 'methods' (as module:Class)")
    dropped = {key: names for key, names in found.items() if names}  # no error: all unlisted
    for key, names in dropped.items():
        _drop(cfg, key, set(names))
    # where `methods` itself names an unknown method the schema stops on it next: no warning
    # about the entries it drops before that error
    if dropped and all(isinstance(m, str) and (m in METHODS or m in outside) for m in methods):
        logger.warning("config: ignoring the entries for methods that 'methods' (%s) does not "
                       "list: %s", ", ".join(map(str, methods)) or "none",
                       "; ".join(f"{key} {', '.join(names)}" for key, names in dropped.items()))


def check_method_settings(cfg: Mapping) -> None:
    """Every hyper-parameter ``method_settings`` fixes is one its method declares: a misspelt
    name (``method_settings: {blr: {alphaa: 2}}``) stops the run before any job, naming the key
    and the method's parameters, not inside a fit job. It looks each named method's class up
    (cheap: the classes import their numerical libraries on first use), once per run: the
    workflow's main process and the command line call it, not every job. A method whose extra
    is not installed is checked where it runs."""
    from postrisk.methods.interface import check_hyperparameters
    from postrisk.methods.registry import MissingExtra, get_method

    for name, settings in (cfg.get("method_settings") or {}).items():
        try:
            cls = get_method(name)
        except MissingExtra:
            continue
        check_hyperparameters(cls, settings or {}, f"config key 'method_settings.{name}'",
                              ConfigError)
