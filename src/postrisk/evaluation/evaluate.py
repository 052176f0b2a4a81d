"""Your method through the paper's metrics in a few lines: :func:`evaluate`.

>>> import postrisk
>>> scores = postrisk.evaluate(MyModel(), root="postrisk-data", prior="gp")
>>> scores[["dataset", "prior", "noise", "spearman_eu_posterior_excess_risk", "spearman_au"]]

``model`` is any object with ``fit(x, y)`` and ``predict(x) -> (mean, aleatoric_var,
epistemic_var)`` — arrays of shape (m,), variances in target units. It is fitted afresh (a deep
copy of the object as given) on each task's ``x_train``, ``y_train`` and asked to predict at
``x_eval``; the prediction is scored by :func:`postrisk.evaluation.scoring.score_prediction`, the
function that writes the pipeline's own score files, so a row here equals the pipeline's row for
the same fit. A prediction of the wrong shape, with NaN or infinite values or negative variances
is an error naming the task and the method (the pipeline instead records such a fit as failed),
and so is an exception raised by the model's ``fit`` or ``predict``: a
:class:`~postrisk.methods.registry.MethodError`, the model's exception its cause.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from postrisk.core.progress import progress_steps
from postrisk.evaluation.scoring import (
    HEADLINE,
    SCORE_COLUMNS,
    UNDEFINED,
    score_prediction,
    undefined_reasons,
)
from postrisk.methods.outside import default_name
from postrisk.methods.registry import MethodError
from postrisk.methods.runner import check_prediction
from postrisk.release.load import (
    Roots,
    TaskEntry,
    download_command,
    list_tasks,
    load_task,
    search_roots,
)
from postrisk.tasks.key import KEY_COLUMNS, TaskKey
from postrisk.tasks.task import Task

logger = logging.getLogger(__name__)

#: The columns of :func:`evaluate`'s table before the score columns (those of the pipeline's
#: per-condition score files).
ROW_COLUMNS = (*KEY_COLUMNS, "heteroscedastic", "method",
               "kind", "status", "error", UNDEFINED, "fit_seconds", "predict_seconds")


class InvalidPrediction(ValueError):
    """A model's prediction cannot be scored (shape, non-finite values, negative variances)."""


def _task_list(tasks: Any, root: Roots, filters: dict) -> list[tuple[str, Any]]:
    """(label, Task or loader) for each task named by ``tasks`` (see :func:`evaluate`)."""
    if tasks is None:
        entries = list_tasks(root, **filters)
        if not entries:
            roots = search_roots(root)
            where = " or ".join(str(r) for r in roots)
            chosen = {k: v for k, v in filters.items() if v is not None}
            one = {k: v if isinstance(v, str) else next(iter(v))
                   for k, v in chosen.items() if isinstance(v, str) or len(v) == 1}
            command = download_command(roots[0], one.get("dataset"), one.get("prior"))
            raise LookupError(f"no tasks under {where} match {chosen or 'any key'}; download "
                              f"some (`{command}`), or name tasks explicitly")
        return [(e.label, e) for e in entries]
    if isinstance(tasks, Task | TaskEntry | TaskKey | str | Path):
        tasks = [tasks]
    out = []
    for item in tasks:
        if isinstance(item, Task):
            out.append((TaskKey(**item.key).label, item))
        elif isinstance(item, TaskEntry):
            out.append((item.label, item))
        else:
            out.append((str(item.label if isinstance(item, TaskKey) else item), item))
    return out


def _load(item: Any, root: Roots) -> Task:
    if isinstance(item, Task):
        return item
    if isinstance(item, TaskEntry):
        return item.load()
    return load_task(item, root)


def _call(function: Any, call: str, method: str, task: str, *args: Any) -> Any:
    """``function(*args)``, the model's code: its exception raised as a :class:`MethodError`."""
    try:
        return function(*args)
    except Exception as err:
        raise MethodError(method, call, err, task=task) from err


def evaluate(model: Any, tasks: Task | str | Path | TaskKey | Iterable | None = None, *,
             root: Roots = None, name: str | None = None,
             **filters: Any) -> pd.DataFrame:
    """Fit ``model`` on each task and score it with the pipeline's metrics; one row per task.

    ``tasks``: a :class:`~postrisk.tasks.task.Task`, a key (``"concrete/gp/bump/ood/0"``), a
    store or packed-instance path, a :class:`~postrisk.release.load.TaskEntry`, or a list of
    these; None: every task under ``root`` (a folder or several; None: the download folder,
    then the suite inside the package) matching ``filters`` (``dataset``, ``prior``,
    ``noise``, ``coverage``, ``seed``; :func:`~postrisk.release.load.list_tasks`). ``name``: the
    method's name in the table (default: the model's ``name`` attribute, else its class name in
    snake case: the name the workflow gives it as an outside method).

    Columns: the instance key, ``method``, ``status``, the fit and predict seconds and every
    score column of the pipeline's score files (``postrisk.evaluation.scoring.METRICS``).
    Raises :class:`InvalidPrediction` naming the task and the method when a prediction cannot
    be scored, and :class:`~postrisk.methods.registry.MethodError` naming them when the model's
    ``fit`` or ``predict`` (or copying the model) raises: the model's exception is its ``error``
    and its ``__cause__``.
    """
    label = name or default_name(model)
    if not (callable(getattr(model, "fit", None)) and callable(getattr(model, "predict", None))):
        raise TypeError(f"method {label}: needs fit(x, y) and predict(x) -> (mean, "
                        "aleatoric_var, epistemic_var)")
    items = _task_list(tasks, root, {k: v for k, v in filters.items() if v is not None})
    cls = type(model).__name__
    rows = []
    with progress_steps(len(items), f"[evaluate] {label}", logger) as progress:
        for task_label, item in items:
            task = _load(item, root)
            fitted = _call(copy.deepcopy, f"copy.deepcopy({cls})", label, task_label, model)
            t0 = time.perf_counter()
            _call(fitted.fit, f"{cls}.fit", label, task_label, task.x_train, task.y_train)
            fit_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            raw = _call(fitted.predict, f"{cls}.predict", label, task_label, task.x_eval)
            predict_s = time.perf_counter() - t0
            prediction, reason = check_prediction(raw, task.x_eval.shape[0])
            if prediction is None:
                raise InvalidPrediction(f"method {label} on task {task_label}: {reason}")
            rows.append({**task.key, "heteroscedastic": task.heteroscedastic, "method": label,
                         "kind": "method", "status": "ok", "error": "",
                         UNDEFINED: undefined_reasons(prediction), "fit_seconds": fit_s,
                         "predict_seconds": predict_s, **score_prediction(task, prediction)})
            progress.advance(message=task_label)
    frame = pd.DataFrame(rows, columns=[*ROW_COLUMNS, *SCORE_COLUMNS])
    frame[list(SCORE_COLUMNS)] = frame[list(SCORE_COLUMNS)].astype(float)  # None: NaN
    return frame


def headline_rows(scores: pd.DataFrame) -> list[tuple[str, list[str]]]:
    """The headline scores (:data:`postrisk.evaluation.scoring.HEADLINE`) of an
    :func:`evaluate` table, to three decimals ("n/a" where a score does not apply): one row per
    task, named by its key, then their mean, named ``mean``."""
    names = ["/".join(str(row[k]) for k in KEY_COLUMNS)
             for _, row in scores.iterrows()]
    values = scores[list(HEADLINE)].astype(float)
    return [(name, ["n/a" if row[c] != row[c] else f"{row[c]:.3f}" for c in HEADLINE])
            for name, (_, row) in zip([*names, "mean"],
                                      [*values.iterrows(), (None, values.mean())], strict=True)]
