"""The method interface, fit records and the guarded fit (SPEC §10).

Every uncertainty method is a subclass of :class:`UncertaintyMethod`: hyper-parameters are
constructor keywords (scikit-learn style, stored as attributes of the same name), together with
``random_state`` and ``n_threads``; ``fit(x_train, y_train)`` returns the method and
``predict(x)`` returns a :class:`Prediction` — mean, aleatoric variance (AU) and epistemic
variance (EU), all in target units. The tuning search space is declared beside the method as the
class attribute ``search_space``; every hyper-parameter and its default is declared in
``defaults``.

:func:`run_fit` is the only way the workflow fits a method: it times both phases, validates the
output and never raises — any exception or invalid output becomes a :class:`FitRecord` with
status ``"failed"`` and NaN-filled arrays, so a failed fit never stops the workflow.
"""

from __future__ import annotations

import json
import math
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

if TYPE_CHECKING:
    import xarray

FIT_RECORD_SCHEMA = "fit-record-1"
STATUS_OK = "ok"
STATUS_FAILED = "failed"
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


def reduce_members(member_means: Any, member_vars: Any) -> Prediction:
    """One prediction from M members (ensembles, dropout passes, posterior samples).

    Arrays of shape (M, m): mean = mean of member means, AU = mean of member variances,
    EU = variance of member means (population variance, divisor M). ``member_vars`` may be
    ``None`` for members that predict no variance (AU = 0).
    """
    means = np.asarray(member_means, dtype=np.float64)
    if means.ndim != 2 or means.shape[0] < 1:
        raise ValueError(f"member means must have shape (members, points), got {means.shape}")
    if member_vars is None:
        au = np.zeros(means.shape[1])
    else:
        variances = np.asarray(member_vars, dtype=np.float64)
        if variances.shape != means.shape:
            raise ValueError(f"member variances have shape {variances.shape}, means "
                             f"{means.shape}")
        au = variances.mean(axis=0)
    return Prediction(mean=means.mean(axis=0), aleatoric_var=au, epistemic_var=means.var(axis=0))


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


class UncertaintyMethod(ABC):
    """Base class of every uncertainty method (SPEC §10).

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
        unknown = sorted(set(hyper) - set(self.defaults))
        if unknown:
            allowed = ", ".join(sorted(self.defaults)) or "none"
            raise TypeError(f"{type(self).__name__} got unknown hyper-parameter(s) {unknown}; "
                            f"allowed: {allowed}")
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


@dataclass
class FitRecord:
    """The outcome of one (method, instance) fit (SPEC §10).

    Arrays have shape (m,) and are NaN-filled when ``status == "failed"``; ``error`` is ``""``
    when ok, otherwise the phase, exception type and message, or the failed output check.
    ``fit_seconds``/``predict_seconds`` are NaN for a phase that was never reached.
    """

    method: str
    status: str
    mean: np.ndarray
    aleatoric_var: np.ndarray
    epistemic_var: np.ndarray
    fit_seconds: float
    predict_seconds: float
    config: dict = field(default_factory=dict)
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.status == STATUS_OK

    def prediction(self) -> Prediction:
        return Prediction(self.mean, self.aleatoric_var, self.epistemic_var)


def _resolve(method_cls_or_name: type[UncertaintyMethod] | str) -> type[UncertaintyMethod]:
    if isinstance(method_cls_or_name, str):
        from postrisk.methods.registry import get_method

        return get_method(method_cls_or_name)
    if isinstance(method_cls_or_name, type) and issubclass(method_cls_or_name, UncertaintyMethod):
        return method_cls_or_name
    raise TypeError(f"expected an UncertaintyMethod subclass or a registry name, got "
                    f"{method_cls_or_name!r}")


def _method_label(method_cls_or_name: Any) -> str:
    if isinstance(method_cls_or_name, str):
        return method_cls_or_name
    return str(getattr(method_cls_or_name, "name", getattr(method_cls_or_name, "__name__", "?")))


def check_prediction(pred: Any, m: int) -> tuple[Prediction | None, str]:
    """Validate a method's output for m evaluation points.

    Returns ``(prediction, "")`` when valid, else ``(None, reason)``. Checks: a
    :class:`Prediction` (or a 3-tuple mean, AU, EU); each array numeric of shape (m,); every value
    finite; both variances ≥ 0.
    """
    if isinstance(pred, tuple) and len(pred) == 3:
        try:
            pred = Prediction(*pred)
        except (TypeError, ValueError) as exc:
            return None, f"output is not numeric: {type(exc).__name__}: {exc}"
    if not isinstance(pred, Prediction):
        return None, (f"predict returned {type(pred).__name__}, expected Prediction "
                      "(mean, aleatoric_var, epistemic_var)")
    for key in PREDICTION_FIELDS:
        arr = getattr(pred, key)
        if arr.shape != (m,):
            return None, f"{key} has shape {arr.shape}, expected ({m},)"
        bad = ~np.isfinite(arr)
        if bad.any():
            return None, f"{key} has {int(bad.sum())} non-finite value(s) (NaN or inf)"
    for key in ("aleatoric_var", "epistemic_var"):
        arr = getattr(pred, key)
        neg = arr < 0
        if neg.any():
            return None, (f"{key} has {int(neg.sum())} negative value(s) "
                          f"(min {float(arr.min()):.6g})")
    return pred, ""


def _failed(label: str, m: int, config: dict, error: str, fit_s: float,
            predict_s: float) -> FitRecord:
    nan = np.full(m, np.nan)
    return FitRecord(method=label, status=STATUS_FAILED, mean=nan, aleatoric_var=nan.copy(),
                     epistemic_var=nan.copy(), fit_seconds=fit_s, predict_seconds=predict_s,
                     config=config, error=error)


def thread_limit(n_threads: int):
    """A context limiting BLAS/LAPACK/OpenMP pools to ``n_threads`` (one home: ``run_fit`` and
    methods whose ``fit``/``predict`` are also called directly use it)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn
        from contextlib import nullcontext

        return nullcontext()
    return threadpool_limits(limits=n_threads)


def run_fit(method_cls_or_name: type[UncertaintyMethod] | str, config: dict, x_train, y_train,
            x_eval, *, random_state: int, n_threads: int = 1) -> FitRecord:
    """Construct, fit and predict one method; never raises (SPEC §10).

    The method is built as ``cls(random_state=..., n_threads=..., **config)``, fitted on
    (``x_train``, ``y_train``) and asked to predict at ``x_eval`` (m rows), with BLAS/OpenMP
    pools limited to ``n_threads``. Both phases are timed (``time.perf_counter``). The output is
    validated by :func:`check_prediction`. Any exception (construction, fit, predict) or
    invalid output yields status ``"failed"`` with the error text and NaN-filled arrays. The
    record's ``config`` is the method's full resolved hyper-parameters (defaults included), or
    the given ``config`` when construction failed.
    """
    label = _method_label(method_cls_or_name)
    config = dict(config or {})
    try:
        m = int(np.shape(x_eval)[0])
    except Exception:  # noqa: BLE001 - never raise
        m = 0
    fit_s = predict_s = math.nan
    phase = "construction"
    try:
        cls = _resolve(method_cls_or_name)
        label = cls.name
        method = cls(random_state=random_state, n_threads=n_threads, **config)
        config = method.get_params()
        with thread_limit(n_threads):
            phase = "fit"
            t0 = time.perf_counter()
            try:
                method.fit(x_train, y_train)
            finally:
                fit_s = time.perf_counter() - t0
            phase = "predict"
            t0 = time.perf_counter()
            try:
                raw = method.predict(x_eval)
            finally:
                predict_s = time.perf_counter() - t0
        phase = "output check"
        pred, reason = check_prediction(raw, m)
    except Exception as exc:  # noqa: BLE001 - a failed fit never stops the workflow
        return _failed(label, m, config, f"{phase} raised {type(exc).__name__}: {exc}",
                       fit_s, predict_s)
    if pred is None:
        return _failed(label, m, config, f"invalid output: {reason}", fit_s, predict_s)
    return FitRecord(method=label, status=STATUS_OK, mean=pred.mean.copy(),
                     aleatoric_var=pred.aleatoric_var.copy(),
                     epistemic_var=pred.epistemic_var.copy(), fit_seconds=fit_s,
                     predict_seconds=predict_s, config=config, error="")


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, tuple | set):
        return list(obj)
    raise TypeError(f"config value {obj!r} of type {type(obj).__name__} is not JSON-serialisable")


def config_json(config: dict) -> str:
    """Canonical JSON text of a configuration (sorted keys; numpy scalars as Python numbers)."""
    return json.dumps(config, sort_keys=True, default=_json_default)


def fit_records_to_dataset(records: list[FitRecord], seeds: list[int]) -> xarray.Dataset:
    """Stack one method's fit records over seeds into an ``xarray.Dataset``.

    Dims ``(seed, eval)``: ``mean``, ``aleatoric_var``, ``epistemic_var`` (float64, seed × eval);
    ``fit_seconds``, ``predict_seconds`` (float64, seed); ``status``, ``error`` (seed, Python
    ``object`` strings). Coordinate ``seed``. Attrs: ``method``, ``config`` (JSON text),
    ``schema_version = "fit-record-1"``. All records must share the method, the configuration
    and the number of evaluation points.
    """
    import xarray as xr

    if len(records) != len(seeds):
        raise ValueError(f"{len(records)} records but {len(seeds)} seeds")
    if not records:
        raise ValueError("no fit records")
    methods = {r.method for r in records}
    if len(methods) != 1:
        raise ValueError(f"records of several methods: {sorted(methods)}")
    configs = {config_json(r.config) for r in records}
    if len(configs) != 1:
        raise ValueError(f"records with different configurations: {sorted(configs)}")
    sizes = {np.shape(getattr(r, key)) for r in records for key in PREDICTION_FIELDS}
    if len(sizes) != 1 or len(next(iter(sizes))) != 1:
        raise ValueError(f"prediction arrays differ in shape or are not 1-D: {sorted(sizes)}")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"duplicate seeds: {list(seeds)}")

    def stack(key: str) -> np.ndarray:
        return np.stack([np.asarray(getattr(r, key), dtype=np.float64) for r in records])

    def strings(key: str) -> np.ndarray:
        out = np.empty(len(records), dtype=object)
        out[:] = [str(getattr(r, key)) for r in records]
        return out

    data_vars = {key: (("seed", "eval"), stack(key)) for key in PREDICTION_FIELDS}
    data_vars["fit_seconds"] = ("seed", np.array([r.fit_seconds for r in records], np.float64))
    data_vars["predict_seconds"] = ("seed",
                                    np.array([r.predict_seconds for r in records], np.float64))
    data_vars["status"] = ("seed", strings("status"))
    data_vars["error"] = ("seed", strings("error"))
    return xr.Dataset(
        data_vars,
        coords={"seed": np.asarray(seeds, dtype=np.int64)},
        attrs={"method": records[0].method, "config": next(iter(configs)),
               "schema_version": FIT_RECORD_SCHEMA},
    )


def fit_records_from_dataset(ds: xarray.Dataset) -> list[FitRecord]:
    """Inverse of :func:`fit_records_to_dataset`: one :class:`FitRecord` per seed, in order."""
    version = ds.attrs.get("schema_version")
    if version != FIT_RECORD_SCHEMA:
        raise ValueError(f"schema_version is {version!r}, expected {FIT_RECORD_SCHEMA!r}")
    config = json.loads(ds.attrs["config"])
    method = str(ds.attrs["method"])
    arrays = {key: np.asarray(ds[key].values, dtype=np.float64) for key in PREDICTION_FIELDS}
    records = []
    for i in range(ds.sizes["seed"]):
        records.append(FitRecord(
            method=method,
            status=str(ds["status"].values[i]),
            mean=arrays["mean"][i].copy(),
            aleatoric_var=arrays["aleatoric_var"][i].copy(),
            epistemic_var=arrays["epistemic_var"][i].copy(),
            fit_seconds=float(ds["fit_seconds"].values[i]),
            predict_seconds=float(ds["predict_seconds"].values[i]),
            config=dict(config),
            error=str(ds["error"].values[i]),
        ))
    return records
