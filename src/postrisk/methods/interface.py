"""The method interface: what every uncertainty method is and returns.

Every uncertainty method is a subclass of :class:`UncertaintyMethod`: hyper-parameters are
constructor keywords (scikit-learn style, stored as attributes of the same name), together with
``random_state`` and ``n_threads``; ``fit(x_train, y_train)`` returns the method and
``predict(x)`` returns a :class:`Prediction` — mean, aleatoric variance (AU) and epistemic
variance (EU), all in target units. The tuning search space is declared beside the method as the
class attribute ``search_space``; every hyper-parameter and its default is declared in
``defaults``. The workflow fits a method only through :func:`postrisk.methods.runner.run_fit`.

A method whose fit walks a number of steps set by one hyper-parameter (boosting stages,
training iterations) may report along the way: it names that hyper-parameter in
``iterations_parameter`` and its ``fit`` takes a keyword ``monitor`` (a
:class:`ValidationMonitor`, scikit-learn's ``GradientBoostingRegressor.fit(monitor=...)`` is the
precedent). At each of the monitor's checkpoints the fit predicts at the monitor's inputs and
hands the prediction to :meth:`ValidationMonitor.report`, which may end the fit by raising
:class:`FitStopped`. Without a monitor the fit is exactly the fit it always was; with one that
never stops it, the fitted model is the same (tests check both per method).
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np

from postrisk.methods.table import entry_at

PREDICTION_FIELDS = ("mean", "aleatoric_var", "epistemic_var")
#: Names a hyper-parameter may not take (they are attributes of every method).
_RESERVED = frozenset({"random_state", "n_threads", "name", "display_name", "search_space",
                       "defaults", "implementation_version", "fit", "predict", "get_params",
                       "set_params", "hyperparameters", "iterations_parameter", "monitor"})


class FitStopped(Exception):  # noqa: N818 - a stop asked for, not an error
    """Raised out of a fit by its :class:`ValidationMonitor`: the fit ends here, on purpose
    (a sweep stopping a hopeless trial). Never recorded as a failure."""


class ValidationMonitor(Protocol):
    """What a fit with ``monitor=`` sees: validation inputs (never their targets) and the steps
    at which to report."""

    #: Validation inputs (m, d) in the units of the fit's ``x``.
    inputs: np.ndarray

    def checkpoints(self, total_steps: int) -> list[int]:
        """The steps (1 … ``total_steps`` − 1, increasing) after which the fit reports."""

    def report(self, step: int, prediction: Prediction) -> None:
        """The fit's prediction at :attr:`inputs` after ``step`` steps; raises
        :class:`FitStopped` to end the fit."""


@dataclass(frozen=True)
class Prediction:
    """A method's output at m evaluation inputs, each array of shape (m,) in target units.

    ``mean`` is the point prediction â(x); ``aleatoric_var`` the AU estimate (a variance);
    ``epistemic_var`` the EU estimate (a variance). Arrays are converted to float64; shape and
    value checks are done by :func:`run_fit`, not here.
    """

    mean: np.ndarray
    aleatoric_var: np.ndarray
    epistemic_var: np.ndarray

    def __post_init__(self) -> None:
        for name in PREDICTION_FIELDS:
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=np.float64))

    @property
    def total_var(self) -> np.ndarray:
        """AU + EU: the variance of the Gaussian predictive N(mean, AU + EU) used for tuning."""
        return self.aleatoric_var + self.epistemic_var


def validate_search_space(space: dict[str, tuple], defaults: dict[str, Any],
                          owner: str = "method") -> None:
    """Check a search space declaration; raise ``ValueError`` naming the offending entry.

    Allowed entries: ``("float", low, high)`` / ``("float", low, high, "log")``,
    ``("int", low, high)`` / ``("int", low, high, "log")``, ``("categorical", [choices...])``.
    Every searched name must also have a default.
    """
    for key, spec in space.items():
        where = f"{owner}.search_space[{key!r}]"
        if key not in defaults:
            raise ValueError(f"{where}: no default declared for this hyper-parameter")
        if not isinstance(spec, tuple) or not spec:
            raise ValueError(f"{where} must be a non-empty tuple, got {spec!r}")
        kind = spec[0]
        if kind in ("float", "int"):
            if len(spec) not in (3, 4) or (len(spec) == 4 and spec[3] not in ("log", "linear")):
                raise ValueError(f"{where} must be ({kind!r}, low, high[, 'log']), got {spec!r}")
            low, high = spec[1], spec[2]
            if not (low < high):
                raise ValueError(f"{where}: low {low!r} must be below high {high!r}")
            if len(spec) == 4 and spec[3] == "log" and low <= 0:
                raise ValueError(f"{where}: a log scale needs low > 0, got {low!r}")
            if kind == "int" and not (isinstance(low, int) and isinstance(high, int)):
                raise ValueError(f"{where}: int bounds must be integers, got {spec!r}")
        elif kind == "categorical":
            if len(spec) != 2 or not isinstance(spec[1], list | tuple) or not spec[1]:
                raise ValueError(f"{where} must be ('categorical', [choices...]), got {spec!r}")
        else:
            raise ValueError(f"{where}: unknown kind {kind!r} (float, int, categorical)")


def check_hyperparameters(method_cls: type[UncertaintyMethod], names: Iterable[str],
                          where: str, error: type[Exception] = ValueError) -> None:
    """Raise ``error`` naming ``where`` if any of ``names`` is not a declared hyper-parameter (a
    key of ``method_cls.defaults``). The one check of hyper-parameter names: the constructor
    (``TypeError``, as Python does for unexpected keywords), fixed tuning settings and the
    configuration's ``method_settings`` (``ValueError``) use it."""
    unknown = sorted(set(names) - set(method_cls.defaults))
    if unknown:
        allowed = ", ".join(sorted(method_cls.defaults)) or "none"
        label = getattr(method_cls, "name", method_cls.__name__)
        raise error(f"{where}: unknown hyper-parameter(s) {unknown} (these are not "
                    f"hyper-parameters of {label}); allowed: {allowed}")


class UncertaintyMethod(ABC):
    """Base class of every uncertainty method: a scikit-learn estimator (docs/methods.md).

    A subclass declares its hyper-parameters once, as ``defaults`` (name → default value) with
    ``search_space`` beside it (the subset that tuning searches; see
    :func:`validate_search_space`); a subclass of a method declares only what it adds or
    changes, and the parents' declarations are merged in (in their order). From the declaration
    each class gets its constructor: keyword-only parameters, one per hyper-parameter with its
    default, then ``random_state`` (0) and ``n_threads`` (1); each is stored unchanged as the
    attribute of the same name (no validation or conversion: :meth:`fit` does that), so
    :meth:`get_params` (with ``deep``), :meth:`set_params` and ``sklearn.base.clone`` behave as
    for any scikit-learn estimator. Fitted state lives in attributes ending in ``_``.

    A built-in method's ``name`` (registry name) and ``display_name`` (as in the paper's
    tables) come from its row of the method table (:mod:`postrisk.methods.table`); any other
    subclass sets them itself. ``implementation_version`` is bumped whenever a change to the
    method's code changes what it predicts: a tuning sweep is identified by it (with its data
    and search space), so sweeps of the old code are set aside rather than continued.

    Why not ``sklearn.base.BaseEstimator``: the light install (loading and evaluating the
    released suite) has no scikit-learn, and the methods it evaluates (BLR, outside methods)
    subclass this class. :meth:`get_params` and :meth:`set_params` follow BaseEstimator's
    definitions (parameter names from the constructor's signature, sorted; ``deep`` descends
    into parameters that are estimators; ``set_params`` takes ``component__param`` keys); a test
    checks them against scikit-learn's own.
    """

    name: ClassVar[str]
    display_name: ClassVar[str]
    defaults: ClassVar[dict[str, Any]] = {}
    search_space: ClassVar[dict[str, tuple]] = {}
    implementation_version: ClassVar[int] = 1
    #: The hyper-parameter that counts the steps a fit with ``monitor=`` reports along (None:
    #: the fit takes no monitor).
    iterations_parameter: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        defaults: dict[str, Any] = {}
        space: dict[str, tuple] = {}
        for klass in reversed(cls.__mro__):  # a subclass adds to (or changes) its parents'
            defaults.update(klass.__dict__.get("defaults", {}))
            space.update(klass.__dict__.get("search_space", {}))
        reserved = _RESERVED.intersection(defaults)
        if reserved:
            raise TypeError(f"{cls.__name__}: hyper-parameter names {sorted(reserved)} are "
                            "reserved")
        cls.defaults = defaults
        cls.search_space = cls._arrange_search_space(space)
        validate_search_space(cls.search_space, cls.defaults, owner=cls.__name__)
        entry = entry_at(f"{cls.__module__}:{cls.__qualname__}")
        if entry is not None and "name" not in cls.__dict__:
            cls.name, cls.display_name = entry.name, entry.display_name
        if "__init__" not in cls.__dict__:
            cls.__init__ = _constructor(cls)

    @classmethod
    def _arrange_search_space(cls, space: dict[str, tuple]) -> dict[str, tuple]:
        """The merged search space as the class searches it (a base class may add entries that
        follow from the defaults, or fix their order: the order of the sweep's suggestions)."""
        return space

    def __init__(self, **params: Any) -> None:
        _store_params(self, params)

    @abstractmethod
    def fit(self, x: np.ndarray, y: np.ndarray) -> UncertaintyMethod:
        """Fit to training inputs ``x`` (n, d) and targets ``y`` (n,); return ``self``."""

    @abstractmethod
    def predict(self, x: np.ndarray) -> Prediction:
        """Mean, AU and EU at inputs ``x`` (m, d), each of shape (m,) in target units."""

    # -- the scikit-learn estimator contract ---------------------------------------------
    @classmethod
    def _get_param_names(cls) -> list[str]:
        """The constructor's parameter names, sorted (as scikit-learn's BaseEstimator)."""
        return sorted(p.name for p in inspect.signature(cls.__init__).parameters.values()
                      if p.name != "self" and p.kind != p.VAR_KEYWORD)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Every constructor parameter (the hyper-parameters, ``random_state``, ``n_threads``)
        with its value; with ``deep``, also ``name__key`` for a parameter that is an
        estimator."""
        out: dict[str, Any] = {}
        for key in self._get_param_names():
            value = getattr(self, key)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update((f"{key}__{k}", v) for k, v in value.get_params().items())
            out[key] = value
        return out

    def set_params(self, **params: Any) -> UncertaintyMethod:
        """Set constructor parameters (``name__key`` for a parameter that is an estimator);
        ``ValueError`` naming the valid ones for any other name. Returns ``self``."""
        if not params:
            return self
        valid = self.get_params(deep=True)
        nested: dict[str, dict[str, Any]] = {}
        for key, value in params.items():
            key, sep, sub_key = key.partition("__")
            if key not in valid:
                raise ValueError(f"Invalid parameter {key!r} for estimator {self}. Valid "
                                 f"parameters are: {self._get_param_names()!r}.")
            if sep:
                nested.setdefault(key, {})[sub_key] = value
            else:
                setattr(self, key, value)
                valid[key] = value
        for key, sub_params in nested.items():
            valid[key].set_params(**sub_params)
        return self

    def hyperparameters(self) -> dict[str, Any]:
        """The hyper-parameters (every key of ``defaults``, in declaration order) with their
        current values: the configuration a fit record and a tuning result store (the run
        settings ``random_state`` and ``n_threads`` are not part of it)."""
        return {key: getattr(self, key) for key in self.defaults}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.hyperparameters().items())
        return f"{type(self).__name__}({args})"


#: The run settings every method's constructor takes after its hyper-parameters (not
#: hyper-parameters: a fit record's configuration leaves them out).
RUN_SETTINGS = {"random_state": 0, "n_threads": 1}


def _store_params(method: UncertaintyMethod, params: dict[str, Any]) -> None:
    """Store the constructor's keywords unchanged (defaults for those not given); an unknown
    name is a ``TypeError`` listing the declared hyper-parameters."""
    cls = type(method)
    check_hyperparameters(cls, set(params) - set(RUN_SETTINGS), cls.__name__, error=TypeError)
    for key, default in {**cls.defaults, **RUN_SETTINGS}.items():
        setattr(method, key, params.get(key, default))


def _constructor(cls: type[UncertaintyMethod]):
    """``cls.__init__``: keyword-only parameters from the declaration (the class docstring),
    with that signature, so ``inspect.signature``, ``help`` and scikit-learn read them."""

    def __init__(self, **params: Any) -> None:
        _store_params(self, params)

    keyword = inspect.Parameter.KEYWORD_ONLY
    __init__.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(key, keyword, default=value)
           for key, value in {**cls.defaults, **RUN_SETTINGS}.items()])
    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    __init__.__module__ = cls.__module__
    __init__.__doc__ = (f"{cls.__name__}'s hyper-parameters (its ``defaults``) and run "
                        "settings, stored unchanged as attributes.")
    return __init__
