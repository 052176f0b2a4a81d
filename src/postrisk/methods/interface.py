"""The method interface: what every uncertainty method is and returns.

Every uncertainty method is a subclass of :class:`UncertaintyMethod`: hyper-parameters are
constructor keywords (scikit-learn style, stored as attributes of the same name), together with
``random_state`` and ``n_threads``; ``fit(x_train, y_train)`` returns the method and
``predict(x)`` returns a :class:`Prediction` — mean, aleatoric variance (AU) and epistemic
variance (EU), all in target units. The tuning search space is declared beside the method as the
class attribute ``search_space``; every hyper-parameter and its default is declared in
``defaults``. The workflow fits a method only through :func:`postrisk.methods.runner.run_fit`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

PREDICTION_FIELDS = ("mean", "aleatoric_var", "epistemic_var")
#: Names a hyper-parameter may not take (they are attributes of every method).
_RESERVED = frozenset({"random_state", "n_threads", "name", "display_name", "search_space",
                       "defaults", "implementation_version", "fit", "predict", "get_params"})


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
    """Base class of every uncertainty method (docs/design.md, "Methods").

    Subclasses set ``name`` (registry name), ``display_name`` (as in the paper's tables),
    ``defaults`` (every hyper-parameter with its default value) and ``search_space`` (the subset
    that tuning searches; see :func:`validate_search_space`), and implement ``fit`` and
    ``predict``. ``implementation_version`` is bumped whenever a change to the method's code
    changes what it predicts: a tuning sweep is identified by it (with its data and search
    space), so sweeps of the old code are set aside rather than continued. The constructor
    accepts exactly the declared hyper-parameters as keywords and stores each as an attribute
    of the same name; :meth:`get_params` returns them.
    """

    name: ClassVar[str]
    display_name: ClassVar[str]
    defaults: ClassVar[dict[str, Any]] = {}
    search_space: ClassVar[dict[str, tuple]] = {}
    implementation_version: ClassVar[int] = 1

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        reserved = _RESERVED.intersection(cls.defaults)
        if reserved:
            raise TypeError(f"{cls.__name__}: hyper-parameter names {sorted(reserved)} are "
                            "reserved")
        validate_search_space(cls.search_space, cls.defaults, owner=cls.__name__)

    def __init__(self, *, random_state: int = 0, n_threads: int = 1, **hyper: Any) -> None:
        check_hyperparameters(type(self), hyper, type(self).__name__, error=TypeError)
        if int(n_threads) < 1:
            raise ValueError(f"n_threads must be >= 1, got {n_threads!r}")
        self.random_state = int(random_state)
        self.n_threads = int(n_threads)
        for key, default in self.defaults.items():
            setattr(self, key, hyper.get(key, default))

    @abstractmethod
    def fit(self, x: np.ndarray, y: np.ndarray) -> UncertaintyMethod:
        """Fit to training inputs ``x`` (n, d) and targets ``y`` (n,); return ``self``."""

    @abstractmethod
    def predict(self, x: np.ndarray) -> Prediction:
        """Mean, AU and EU at inputs ``x`` (m, d), each of shape (m,) in target units."""

    def get_params(self) -> dict[str, Any]:
        """The hyper-parameters (every key of ``defaults``) with their current values.

        ``random_state`` and ``n_threads`` are run settings, not part of the configuration.
        """
        return {key: getattr(self, key) for key in self.defaults}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"
