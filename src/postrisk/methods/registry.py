"""The registry of methods: the built-in ones of the method table
(:mod:`postrisk.methods.table`) and the outside methods a configuration names by location
(docs/methods.md, "Your own method"). Classes are imported on first use, so listing the methods
(the workflow does it at every start) imports no numerical stack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from postrisk.methods.table import METHOD_ENTRIES, ablation_entry, table_entry

if TYPE_CHECKING:
    from postrisk.methods.interface import UncertaintyMethod

#: Outside methods of this process (``postrisk.methods.outside``): name -> class.
_OUTSIDE: dict[str, type[UncertaintyMethod]] = {}
#: The environment variable through which a workflow hands its outside methods to its jobs:
#: JSON ``{name: {"location": "module:Class", "search_space": {...} | null}}``.
OUTSIDE_ENV = "POSTRISK_OUTSIDE_METHODS"


def register_outside(location: str, search_space: dict | None = None) -> str:
    """Load the method at ``location`` (``"module:Class"``), register it under its name and
    return the name. A name of a built-in method, or of another outside class, is an error."""
    from postrisk.methods.outside import OutsideMethodError, load_outside

    cls = load_outside(location, search_space)
    name = cls.name
    if name in METHOD_ENTRIES:
        raise OutsideMethodError(f"{location}: its name {name!r} is a built-in method's; give "
                                 "the class another `name`")
    known = _OUTSIDE.get(name)
    if known is not None and getattr(known, "location", location) != location:
        raise OutsideMethodError(f"{location}: name {name!r} is taken by {known.location}")
    _OUTSIDE[name] = cls
    return name


def outside_methods() -> dict[str, type[UncertaintyMethod]]:
    """The outside methods registered in this process, including those a workflow handed over
    through :data:`OUTSIDE_ENV`."""
    import json
    import os

    for name, spec in json.loads(os.environ.get(OUTSIDE_ENV) or "{}").items():
        if name not in _OUTSIDE:
            register_outside(spec["location"], spec.get("search_space"))
    return dict(_OUTSIDE)


def implemented_methods() -> list[str]:
    return list(METHOD_ENTRIES)


def get_method(name: str) -> type[UncertaintyMethod]:
    """The method class registered under ``name`` (built-in or outside); ``KeyError`` naming
    the allowed names."""
    if name in METHOD_ENTRIES:
        return METHOD_ENTRIES[name].load()
    outside = _OUTSIDE if name in _OUTSIDE else outside_methods()
    if name not in outside:
        known = f"; outside methods: {', '.join(sorted(outside))}" if outside else ""
        raise KeyError(f"unknown method {name!r}; implemented: "
                       f"{', '.join(sorted(METHOD_ENTRIES))}{known}")
    return outside[name]


def display_name(name: str) -> str:
    """The name of a method or reference row in the tables and figures: the method table's for
    the built-in methods, the reference rows and the ablations, the class's ``display_name``
    for an outside method, else ``name`` itself."""
    entry = table_entry(name) or ablation_entry(name)
    if entry is not None:
        return entry.display_name
    if name in _OUTSIDE or name in outside_methods():
        return str(_OUTSIDE[name].display_name)
    return name


def __getattr__(name: str):
    if name == "METHODS":  # name -> class, imported on access
        return {key: get_method(key) for key in METHOD_ENTRIES}
    raise AttributeError(name)


def make_method(name: str, config: dict[str, Any] | None = None, random_state: int = 0,
                n_threads: int = 1) -> UncertaintyMethod:
    """An unfitted instance: ``get_method(name)(random_state=..., n_threads=..., **config)``."""
    return get_method(name)(random_state=random_state, n_threads=n_threads, **(config or {}))


def make_model(method: str, settings: dict[str, Any] | None = None) -> Any:
    """A fresh, unfitted model for ``postrisk evaluate``: an outside method by its location
    (``module:Class``, built with ``settings`` as they are), else the built-in method
    ``make_method(method, settings)``."""
    from postrisk.methods.outside import import_location, is_location

    if is_location(method):
        return import_location(method)(**(settings or {}))
    return make_method(method, settings)
