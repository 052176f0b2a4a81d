"""The OOD study's queries and fits (App. D.3): what each method is asked, and how it is fitted.

On one benchmark instance (a task of the in-distribution dataset) the study asks every method
at its **query rows**: m = min(1,500, n_eval) held-out in-distribution points, drawn from the
instance's evaluation points (never a training input), and as many OOD rows, drawn from the
OOD set's covariates (all of them when it has fewer). Both draws come from one stream keyed by
the instance and the OOD set (:func:`postrisk.core.seeding.rng`), so every method of an
instance sees the same rows, and a rerun the same.

A method is fitted **exactly as the benchmark fitted it** on that instance: the condition's
chosen configuration (its tuned or fixed hyper-parameters, the fit stage's record) and
``random_state`` = the instance's seed (:func:`postrisk.methods.runner.run_fit`, the function
the fit stage calls); only the rows it predicts at differ. A deterministic method's ID
predictions therefore equal its benchmark predictions at those evaluation points (tested).

For GP instances the truth at the query rows is exact
(:meth:`postrisk.tasks.task.Task.exact_posterior_at`): the ground-truth half of the study.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from postrisk.core import seeding
from postrisk.core.arrays import as_matrix
from postrisk.methods import FitRecord, run_fit
from postrisk.tasks.key import TaskKey
from postrisk.tasks.task import Task

#: At most this many in-distribution query points per instance (and as many OOD rows).
MAX_QUERY = 1500


@dataclass(frozen=True)
class OODQuery:
    """The query rows of one instance: ``x`` (the ID points, then the OOD rows), ``is_ood``,
    ``id_index`` (rows of the instance's ``x_eval``) and ``ood_index`` (rows of the OOD set's
    covariates), both sorted."""

    x: np.ndarray
    is_ood: np.ndarray
    id_index: np.ndarray
    ood_index: np.ndarray

    @property
    def n_id(self) -> int:
        return int(self.id_index.size)

    @property
    def n_ood(self) -> int:
        return int(self.ood_index.size)


def query_rows(n_id: int, n_ood: int, rng: np.random.Generator,
               n_max: int = MAX_QUERY) -> tuple[np.ndarray, np.ndarray]:
    """Sorted indices of the ID points (m = min(``n_max``, ``n_id``) of ``n_id``; all of them
    when m = ``n_id``) and of the OOD rows (min(m, ``n_ood``) of ``n_ood``), each drawn without
    replacement from ``rng``, ID first."""
    if n_id < 1 or n_ood < 1:
        raise ValueError(f"the query needs ID points and OOD rows, got {n_id} and {n_ood}")
    if n_max < 1:
        raise ValueError(f"n_max must be >= 1, got {n_max}")
    m = min(int(n_max), int(n_id))
    ids = np.arange(n_id) if m == n_id else np.sort(rng.choice(n_id, size=m, replace=False))
    k = min(m, int(n_ood))
    oods = np.sort(rng.choice(n_ood, size=k, replace=False))
    return ids.astype(np.int64), oods.astype(np.int64)


def query_stream(task: Task, ood_dataset: str) -> np.random.Generator:
    """The stream of an instance's query rows: keyed by the instance and the OOD set."""
    return seeding.rng("ood_query", TaskKey.from_attrs(task.ds.attrs).label, ood_dataset)


def study_query(task: Task, x_ood, ood_dataset: str, n_max: int = MAX_QUERY) -> OODQuery:
    """The query rows of ``task`` against the OOD set ``ood_dataset`` (its covariates
    ``x_ood``, scaled as the instance's dataset is), drawn by :func:`query_rows` from
    :func:`query_stream`."""
    x_eval = task.x_eval
    x_out = as_matrix("x_ood", x_ood, n_columns=x_eval.shape[1], finite=True)
    ids, oods = query_rows(x_eval.shape[0], x_out.shape[0], query_stream(task, ood_dataset),
                           n_max)
    return OODQuery(x=np.concatenate([x_eval[ids], x_out[oods]]),
                    is_ood=np.r_[np.zeros(ids.size, bool), np.ones(oods.size, bool)],
                    id_index=ids, ood_index=oods)


def fit_at_query(method: str, config: dict, task: Task, query: OODQuery,
                 n_threads: int = 1) -> FitRecord:
    """``method`` fitted on the instance as the benchmark fits it (``config``: the condition's
    chosen configuration; ``random_state``: the instance's seed) and asked at the query rows;
    never raises (a failure is a record with status ``failed``, as in the fit stage)."""
    seed = int(TaskKey.from_attrs(task.ds.attrs).seed)
    return run_fit(method, config, task.x_train, task.y_train, query.x, random_state=seed,
                   n_threads=n_threads)


def true_posterior_variance(task: Task, query: OODQuery) -> np.ndarray | None:
    """σ²_f at the query rows where the instance's posterior is exact (GP), else ``None``."""
    if task.ds.attrs["prior"] != "gp":
        return None
    return task.exact_posterior_at(query.x)[1]
