"""The registry of methods: the built-in ones of the method table
(:mod:`postrisk.methods.table`) and the outside methods a configuration names by location
(docs/methods.md, "Your own method"). Classes are imported on first use, so listing the methods
(the workflow does it at every start) imports no numerical stack; a built-in method whose
packages are not installed (the light install has no JAX) is a :class:`MissingExtra` naming the
extra to install.

An exception raised inside a method's own code — its constructor here (:func:`make_model`), its
``fit`` or ``predict`` in ``postrisk.evaluate`` — is raised as a :class:`MethodError` naming the
method, the call and (for ``fit`` and ``predict``) the task, with the original exception as its
cause.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from postrisk.core.errors import install_extra
from postrisk.methods.table import METHOD_ENTRIES, ablation_entry, table_entry

if TYPE_CHECKING:
    from postrisk.methods.interface import UncertaintyMethod

#: The extra of pyproject.toml that installs the built-in methods' packages.
METHODS_EXTRA = "methods"


class MissingExtra(ImportError):
    """A built-in method needs a package that is not installed (the light install): the message
    names the extra that installs it."""


class UnknownSettings(ValueError):
    """Settings that are not parameters of the method (``unknown``: their names)."""

    def __init__(self, method: str, unknown: list[str], known: list[str]):
        import difflib

        self.unknown = list(unknown)
        close = dict.fromkeys(m for name in unknown
                              for m in difflib.get_close_matches(name, known, n=1))
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        plural = "s" if len(unknown) > 1 else ""
        super().__init__(f"{method} has no parameter{plural} {', '.join(unknown)}{hint}; its "
                         f"parameters: {', '.join(known) or 'none'}")


class MethodError(Exception):
    """An exception raised inside a method's own code: ``method`` (its name), ``call`` (what
    raised: ``"MyMethod.fit"``, ``"MyMethod(k=3)"``), ``error`` (the exception, also the
    ``__cause__``) and ``task`` (the task's key; None for the constructor). Its message is one
    line: ``my_method on concrete/gp/bump/balanced/0: MyMethod.fit raised KeyError: 'k'``."""

    def __init__(self, method: str, call: str, error: BaseException, task: str | None = None):
        super().__init__(method, call, error, task)
        self.method, self.call, self.error, self.task = method, call, error, task

    def __str__(self) -> str:
        where = f"{self.method} on {self.task}" if self.task else self.method
        text = str(self.error)
        raised = f"{type(self.error).__name__}: {text}" if text else type(self.error).__name__
        return f"{where}: {self.call} raised {raised}"


#: Outside methods of this process (``postrisk.methods.outside``): name -> class.
_OUTSIDE: dict[str, type[UncertaintyMethod]] = {}
#: The location each outside name was registered from (a subclass of UncertaintyMethod is
#: registered as it is, without a ``location`` attribute of its own).
_LOCATIONS: dict[str, str] = {}
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
    taken_by = _LOCATIONS.get(name, location) if name in _OUTSIDE else location
    if taken_by != location:
        raise OutsideMethodError(f"{location}: name {name!r} is taken by {taken_by}")
    _OUTSIDE[name] = cls
    _LOCATIONS[name] = location
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
        try:
            return METHOD_ENTRIES[name].load()
        except ModuleNotFoundError as err:
            missing = (err.name or "").partition(".")[0]
            if not missing or missing == "postrisk":
                raise
            raise MissingExtra(f"method {name} needs the {METHODS_EXTRA!r} extra ({missing} is "
                               f"not installed): {install_extra(METHODS_EXTRA)}",
                               name=err.name) from err
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
    ``make_method(method, settings)`` (``random_state`` and ``n_threads`` may be among the
    settings). A setting that is not a parameter of the method is an :class:`UnknownSettings`
    naming the method's parameters; an exception of the constructor is a :class:`MethodError`.
    """
    from postrisk.methods.interface import RUN_SETTINGS
    from postrisk.methods.outside import default_name, import_location, is_location, parameter_names

    settings = dict(settings or {})
    if is_location(method):
        cls = import_location(method)
        label, shown = default_name(cls), cls.__name__
        known = accepted = parameter_names(cls)
    else:
        cls = get_method(method)
        label = shown = method
        known, accepted = list(cls.defaults), [*cls.defaults, *RUN_SETTINGS]
    unknown = [key for key in settings if accepted is not None and key not in accepted]
    if unknown:
        raise UnknownSettings(shown, unknown, known or [])
    call = f"{cls.__name__}({', '.join(f'{k}={v!r}' for k, v in settings.items())})"
    try:
        if is_location(method):
            return cls(**settings)
        run = {key: settings.pop(key) for key in RUN_SETTINGS if key in settings}
        return make_method(method, settings, **run)
    except Exception as err:  # the method's own constructor raised
        raise MethodError(label, call, err) from err
