"""Methods from outside the package, named by location (``"module:Class"``; docs/methods.md,
"Your own method").

A researcher's method need not subclass anything or be registered inside postrisk: the
configuration lists it as ``"mypackage.module:MyMethod"`` (an importable module) or
``"path/to/file.py:MyMethod"`` (a file, relative to the working directory), and the workflow
tunes, fits and scores it like the built-in methods. The class needs:

- a constructor taking its hyper-parameters as keywords, each with a default (and, if it wants
  one, ``random_state``: the pipeline passes the seed);
- ``fit(x, y)`` and ``predict(x) -> (mean, aleatoric_var, epistemic_var)`` (arrays of shape
  (m,), variances in target units) or a :class:`~postrisk.methods.interface.Prediction`;
- optionally ``name`` (its name in the tables and file paths; default: the class name in
  snake case, an acronym one word — :func:`snake_case`: ``GBRBootstrap`` → ``gbr_bootstrap``),
  ``display_name``, ``search_space`` (the tuning sweep's space, in the form of
  :func:`~postrisk.methods.interface.validate_search_space`; the configuration's
  ``method_search_spaces.<name>`` replaces it) and ``implementation_version``.

A subclass of :class:`~postrisk.methods.interface.UncertaintyMethod` is used as it is; any
other class is wrapped by :func:`adapt` into one, so tuning, the guarded fit and the fit records
treat it exactly like a built-in method.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
import sys
from pathlib import Path
from typing import Any

from postrisk.methods.interface import RUN_SETTINGS, Prediction, UncertaintyMethod

#: ``module:Class`` — a dotted module or a ``.py`` file, then a class name.
LOCATION = re.compile(r"^(?P<module>[^:\s]+):(?P<attr>[A-Za-z_][A-Za-z0-9_]*)$")
#: A method name: it becomes part of file paths and Snakemake wildcards.
NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class OutsideMethodError(ValueError):
    """An outside method's location or class cannot be used; the message says why."""


class OutsideImportError(OutsideMethodError):
    """The module of an outside method raised while it was imported (its own code, or a package
    it imports that is not installed); the exception is the ``__cause__``."""


def is_location(text: str) -> bool:
    return bool(LOCATION.match(str(text)))


#: The words of a class name: an acronym (capitals not followed by a lower-case letter), a
#: word (an optional capital, then lower-case letters) or digits.
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def snake_case(name: str) -> str:
    """A class name as a method name: its words in lower case, joined by ``_``.

    The words: underscores separate; an acronym (a run of capitals) is one word, ending where a
    capitalised word begins; digits join the word before them; a single capital joins a word
    ending in a digit or a two-letter capitalised word before it (``2D``, ``NaN``). So
    ``MyMethod`` → ``my_method``, ``GBRBootstrap`` → ``gbr_bootstrap``, ``KNNUncertainty`` →
    ``knn_uncertainty``, ``NaNVar`` → ``nan_var``, ``HTTPServer2`` → ``http_server2``,
    ``Conv2DNet`` → ``conv2d_net``, ``BayesGP`` → ``bayes_gp``.
    """
    words: list[str] = []
    for part in name.split("_"):
        for word in _WORD.findall(part):
            joins = words and (word.isdigit() or (
                len(word) == 1 and word.isupper()
                and (words[-1][-1].isdigit() or re.fullmatch(r"[A-Z][a-z]", words[-1]))))
            if joins:
                words[-1] += word
            else:
                words.append(word)
    return "_".join(words).lower() or name.lower()


def import_location(location: str) -> type:
    """The class at ``"module:Class"`` (a dotted module, or a ``.py`` file path)."""
    match = LOCATION.match(str(location))
    if not match:
        raise OutsideMethodError(f"{location!r} is not a method location: expected "
                                 "'module:Class' or 'path/to/file.py:Class'")
    module_name, attr = match["module"], match["attr"]
    key = module_name
    try:
        if module_name.endswith(".py"):
            path = Path(module_name).resolve()
            if not path.is_file():
                raise OutsideMethodError(f"{location}: no file {path}")
            key = f"postrisk_outside_{abs(hash(str(path)))}"
            module = sys.modules.get(key)
            if module is None:
                spec = importlib.util.spec_from_file_location(key, path)
                module = importlib.util.module_from_spec(spec)
                sys.modules[key] = module
                spec.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
    except OutsideMethodError:
        raise
    except ModuleNotFoundError as err:
        if err.name and (err.name == key or key.startswith(err.name + ".")):
            raise OutsideMethodError(
                f"{location}: cannot import {module_name!r} ({err}); is it installed, or on "
                "PYTHONPATH (the workflow adds the working directory and the checkout)?"
            ) from err
        raise _import_failed(location, key, err) from err
    except Exception as err:  # the module's own code raised: a one-line error naming it
        raise _import_failed(location, key, err) from err
    cls = getattr(module, attr, None)
    if not isinstance(cls, type):
        raise OutsideMethodError(f"{location}: {module_name} has no class {attr!r}")
    return cls


def _import_failed(location: str, key: str, err: Exception) -> OutsideImportError:
    """The error of a module whose own code raised while it was imported (it is forgotten, so a
    later import runs it again)."""
    if key.startswith("postrisk_outside_"):
        sys.modules.pop(key, None)
    return OutsideImportError(f"{location}: importing the module raised "
                              f"{type(err).__name__}: {err}")


def parameter_names(cls: type) -> list[str] | None:
    """The keywords ``cls``'s constructor takes, in order (None where it takes any: ``**kwargs``,
    or a signature that cannot be read)."""
    try:
        params = inspect.signature(cls).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind == p.VAR_KEYWORD for p in params):
        return None
    return [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def default_name(method: Any) -> str:
    """A method's (class's or instance's) ``name`` attribute, else its class name in snake_case:
    the rule both the workflow and ``postrisk.evaluate`` name a method by (unchecked)."""
    cls = method if isinstance(method, type) else type(method)
    return getattr(method, "name", None) or snake_case(cls.__name__)


def method_name(cls: type, location: str) -> str:
    """An outside method's name (:func:`default_name`), checked to be usable in file paths and
    wildcards."""
    name = default_name(cls)
    if not isinstance(name, str) or not NAME.match(name):
        raise OutsideMethodError(f"{location}: method name {name!r} must be lower case letters, "
                                 "digits and underscores, starting with a letter")
    return name


def _hyperparameters(cls: type) -> dict[str, Any]:
    """The constructor's keyword parameters with their defaults (run settings left out)."""
    defaults = getattr(cls, "defaults", None)
    if isinstance(defaults, dict):
        return dict(defaults)
    out = {}
    for param in inspect.signature(cls.__init__).parameters.values():
        if param.name == "self" or param.name in RUN_SETTINGS or param.kind in (
                param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if param.default is inspect.Parameter.empty:
            raise OutsideMethodError(f"{cls.__name__}: hyper-parameter {param.name!r} has no "
                                     "default; every constructor argument needs one")
        out[param.name] = param.default
    return out


def _as_space(space: dict | None) -> dict[str, tuple]:
    """A search space with lists (as YAML writes them) turned into tuples."""
    out = {}
    for key, spec in (space or {}).items():
        spec = tuple(spec)
        if spec and spec[0] == "categorical" and len(spec) == 2:
            spec = ("categorical", list(spec[1]))
        out[key] = spec
    return out


def adapt(cls: type, location: str, search_space: dict | None = None) -> type[UncertaintyMethod]:
    """``cls`` as an :class:`UncertaintyMethod` subclass (itself if it is one), with
    ``search_space`` (when given) replacing its own."""
    if not (callable(getattr(cls, "fit", None)) and callable(getattr(cls, "predict", None))):
        raise OutsideMethodError(f"{location}: a method needs fit(x, y) and predict(x)")
    name = method_name(cls, location)
    space = _as_space(search_space) if search_space is not None else \
        _as_space(getattr(cls, "search_space", None))
    if issubclass(cls, UncertaintyMethod):
        if search_space is None and "name" in vars(cls):
            return cls
        extra = {"name": name, "location": location, "__module__": cls.__module__}
        if "display_name" not in vars(cls):
            extra["display_name"] = cls.__name__
        if search_space is not None:
            extra["search_space"] = space
        try:
            return type(cls.__name__, (cls,), extra)
        except (TypeError, ValueError) as err:
            raise OutsideMethodError(f"{location}: {err}") from err
    accepts = set(inspect.signature(cls.__init__).parameters)
    hyper = _hyperparameters(cls)

    def fit(self, x, y):
        kwargs = self.hyperparameters()
        kwargs.update({k: getattr(self, k) for k in RUN_SETTINGS if k in accepts})
        self.model_ = cls(**kwargs)
        self.model_.fit(x, y)
        return self

    def predict(self, x):
        out = self.model_.predict(x)
        return out if isinstance(out, Prediction) else Prediction(*out)

    attrs = {"name": name, "display_name": getattr(cls, "display_name", None) or cls.__name__,
             "defaults": hyper, "search_space": space,
             "implementation_version": int(getattr(cls, "implementation_version", 1)),
             "location": location, "fit": fit, "predict": predict,
             "__module__": cls.__module__, "__doc__": cls.__doc__}
    try:
        return type(cls.__name__, (UncertaintyMethod,), attrs)
    except (TypeError, ValueError) as err:
        raise OutsideMethodError(f"{location}: {err}") from err


def load_outside(location: str, search_space: dict | None = None) -> type[UncertaintyMethod]:
    """The method at ``location`` as an :class:`UncertaintyMethod` subclass (:func:`adapt`)."""
    return adapt(import_location(location), location, search_space)
