"""The guarded fit: the only way the workflow fits a method.

:func:`run_fit` times both phases, validates the output and never raises — any exception or
invalid output becomes a :class:`~postrisk.methods.records.FitRecord` with status ``"failed"``
and NaN-filled arrays, so a failed fit never stops the workflow.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any

import numpy as np

from postrisk.core.threads import thread_limit
from postrisk.methods.interface import (
    PREDICTION_FIELDS,
    FitStopped,
    Prediction,
    UncertaintyMethod,
    ValidationMonitor,
)
from postrisk.methods.records import STATUS_FAILED, STATUS_OK, FitRecord
from postrisk.methods.registry import get_method

logger = logging.getLogger(__name__)


def resolve_method(method_cls_or_name: type[UncertaintyMethod] | str) -> type[UncertaintyMethod]:
    """The method class of a registry name, or the class itself."""
    if isinstance(method_cls_or_name, str):
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


def _rows(x_eval: Any) -> int:
    try:
        return int(np.shape(x_eval)[0])
    except Exception:  # noqa: BLE001 - never raise
        return 0


def run_fit(method_cls_or_name: type[UncertaintyMethod] | str, config: dict, x_train, y_train,
            x_eval, *, random_state: int, n_threads: int = 1,
            monitor: ValidationMonitor | None = None) -> FitRecord:
    """Construct, fit and predict one method; never raises (docs/design.md, "Methods"), but
    for :class:`~postrisk.methods.interface.FitStopped` (a ``monitor`` ending the fit).

    The method is built as ``cls(random_state=..., n_threads=..., **config)`` and handed to
    :func:`run_estimator`. A construction that raises yields status ``"failed"`` with the error
    text, NaN-filled arrays and the given ``config``.
    """
    label = _method_label(method_cls_or_name)
    config = dict(config or {})
    try:
        cls = resolve_method(method_cls_or_name)
        label = cls.name
        method = cls(random_state=random_state, n_threads=n_threads, **config)
    except Exception as exc:  # noqa: BLE001 - a failed fit never stops the workflow
        return _failed(label, _rows(x_eval), config,
                       f"construction raised {type(exc).__name__}: {exc}", math.nan, math.nan)
    return run_estimator(method, x_train, y_train, x_eval, monitor=monitor)


def run_together(methods: list[UncertaintyMethod], x_train, y_train, x_eval) -> list[FitRecord]:
    """:func:`run_estimator` for several configurations of one method on the same data; never
    raises. Where the class trains configurations of one architecture as one program
    (``trial_batching``, its ``fit_together``) they are fitted that way, each record carrying
    an equal share of the joint fit's seconds; should the joint fit raise, each is fitted
    alone, so one bad configuration costs the others nothing."""
    cls = type(methods[0]) if methods else None
    together = (len(methods) > 1 and getattr(cls, "trial_batching", False)
                and all(type(m) is cls for m in methods))
    if together:
        try:
            with thread_limit(max(1, int(methods[0].n_threads))):
                t0 = time.perf_counter()
                cls.fit_together(methods, x_train, y_train)
                share = (time.perf_counter() - t0) / len(methods)
        except Exception as exc:  # noqa: BLE001 - fall back to one fit each
            logger.warning("%s: fitting %d configurations together raised %s: %s; fitting each "
                           "alone", cls.name, len(methods), type(exc).__name__, exc)
        else:
            return [run_estimator(m, x_train, y_train, x_eval, fitted_seconds=share)
                    for m in methods]
    return [run_estimator(m, x_train, y_train, x_eval) for m in methods]


def run_estimator(method: UncertaintyMethod, x_train, y_train, x_eval,
                  fitted_seconds: float | None = None,
                  monitor: ValidationMonitor | None = None) -> FitRecord:
    """Fit an unfitted method instance (say, a ``sklearn.base.clone``) and predict; never raises.
    ``fitted_seconds``: the instance is fitted already (:func:`run_together`), in that time.

    It is fitted on (``x_train``, ``y_train``) and asked to predict at ``x_eval`` (m rows), with
    BLAS/OpenMP pools limited to its ``n_threads``. Both phases are timed
    (``time.perf_counter``). ``monitor``: handed to the fit (``fit(x, y, monitor=...)``; the
    method must name its ``iterations_parameter``); the
    :class:`~postrisk.methods.interface.FitStopped` it raises is passed on, not recorded.
    The output is validated by :func:`check_prediction`. Any other exception
    (fit, predict) or invalid output yields status ``"failed"`` with the error text and
    NaN-filled arrays. The record's ``config`` is the method's hyper-parameters
    (:meth:`~postrisk.methods.interface.UncertaintyMethod.hyperparameters`, defaults included).
    """
    label = str(getattr(method, "name", None) or type(method).__name__)
    m = _rows(x_eval)
    fit_s = predict_s = math.nan
    try:
        config = method.hyperparameters()
    except Exception as exc:  # noqa: BLE001 - e.g. a constructor that did not store a parameter
        return _failed(label, m, {}, f"reading its hyper-parameters raised "
                       f"{type(exc).__name__}: {exc}", fit_s, predict_s)
    phase = "fit"
    try:
        n_threads = int(method.n_threads)
        if n_threads < 1:
            raise ValueError(f"n_threads must be >= 1, got {method.n_threads!r}")
        with thread_limit(n_threads):
            t0 = time.perf_counter()
            try:
                if fitted_seconds is None and monitor is not None:
                    if getattr(type(method), "iterations_parameter", None) is None:
                        raise TypeError(f"{label} reports no steps along its fit: it takes no "
                                        "monitor")
                    method.fit(x_train, y_train, monitor=monitor)
                elif fitted_seconds is None:
                    method.fit(x_train, y_train)
            finally:
                fit_s = time.perf_counter() - t0 if fitted_seconds is None else fitted_seconds
            phase = "predict"
            t0 = time.perf_counter()
            try:
                raw = method.predict(x_eval)
            finally:
                predict_s = time.perf_counter() - t0
        phase = "output check"
        pred, reason = check_prediction(raw, m)
    except FitStopped:
        raise
    except Exception as exc:  # noqa: BLE001 - a failed fit never stops the workflow
        return _failed(label, m, config, f"{phase} raised {type(exc).__name__}: {exc}",
                       fit_s, predict_s)
    if pred is None:
        return _failed(label, m, config, f"invalid output: {reason}", fit_s, predict_s)
    return FitRecord(method=label, status=STATUS_OK, mean=pred.mean.copy(),
                     aleatoric_var=pred.aleatoric_var.copy(),
                     epistemic_var=pred.epistemic_var.copy(), fit_seconds=fit_s,
                     predict_seconds=predict_s, config=config, error="")
