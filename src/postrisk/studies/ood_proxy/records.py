"""The OOD study's two steps on files (App. D.3): the fits at the query rows, and the records.

1. :func:`write_ood_fits` — one method on one condition of the in-distribution dataset: for
   every seed its benchmark fit store holds, the method fitted as the benchmark fitted it (the
   store's configuration, ``random_state`` = the seed: :func:`postrisk.studies.ood_proxy.fits.
   fit_at_query`) and asked at the instance's query rows
   (:func:`postrisk.studies.ood_proxy.fits.study_query`); one store per (condition, method), dims
   (seed, query): ÊU, ÂU, the mean, ``is_ood``, the query's row indices and, for GP instances,
   the true posterior variance σ²_f there.
2. :func:`ood_records` — every method's store of the instances: per instance one matched
   subsample (:func:`~postrisk.studies.ood_proxy.statistics.instance_ood_record`, its seed
   from a stream
   keyed by the instance) shared by every method and reference; the per-(instance, scorer) rows
   of Tables 11–12 and, for GP instances, the ground-truth half (σ²_f's shift on all and on
   the matched points; per method the median-ÊU ratio on the matched points and the partial
   Spearman correlation of ÊU with σ²_f given the distance over the in-distribution query
   points, and over all query points as well:
   :func:`postrisk.studies.ood_proxy.statistics.ground_truth_partial_spearman`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from postrisk.core import seeding
from postrisk.core.io import json_attr, open_zarr, write_zarr_atomic
from postrisk.covariates.build import load_covariates
from postrisk.studies.ood_proxy.fits import (
    MAX_QUERY,
    fit_at_query,
    study_query,
    true_posterior_variance,
)
from postrisk.studies.ood_proxy.statistics import (
    ground_truth_partial_spearman,
    ground_truth_shift,
    instance_ood_record,
    median_eu_ratio,
)
from postrisk.tasks.key import CONDITION_COLUMNS, TaskKey
from postrisk.tasks.store import validate_store
from postrisk.tasks.task import Task

#: The schema of an OOD fit store.
OOD_FIT_SCHEMA = "ood-fit-1"


def _ood_rows(path: str | Path) -> tuple[str, np.ndarray]:
    """The OOD set's name and its (scaled) covariate rows, from its covariate store."""
    covariates = load_covariates(path)
    return str(covariates.ds.attrs["dataset"]), np.asarray(covariates.x, dtype=np.float64)


def _instance(path: str | Path) -> Task:
    """An instance as the study reads it: what its sample store holds (a task store holds the
    same and more) — training data, evaluation points and the prior's parameters, enough for
    the exact GP posterior at any input; the study reads no sampled posterior."""
    return Task(validate_store(path, kind="sample"))


def write_ood_fits(method: str, config: Mapping, instances: Mapping[int, str | Path],
                   ood_covariates: str | Path, out: str | Path, n_max: int = MAX_QUERY,
                   n_threads: int = 1) -> Path:
    """Step 1 (module docstring): ``method`` at ``config`` (the benchmark's configuration of
    the condition: :func:`postrisk.methods.records.benchmark_configuration`) on each instance
    of ``instances`` (seed → its sample or task store, in seed order); ``ood_covariates``: the
    OOD set's covariate store. A fit that fails is kept as such (``status``/``error``, NaN
    predictions), as in the fit stage."""
    if not instances:
        raise ValueError(f"{out}: no instance to fit {method} on")
    seeds = sorted(int(s) for s in instances)
    config = dict(config)
    ood_name, x_ood = _ood_rows(ood_covariates)
    columns: dict[str, list] = {k: [] for k in ("mean", "aleatoric_var", "epistemic_var",
                                                "is_ood", "row", "posterior_var", "status",
                                                "error")}
    keys = []
    for seed in seeds:
        task = _instance(instances[seed])
        keys.append(TaskKey.from_attrs(task.ds.attrs))
        query = study_query(task, x_ood, ood_name, n_max)
        record = fit_at_query(method, config, task, query, n_threads=n_threads)
        truth = true_posterior_variance(task, query)
        columns["mean"].append(record.mean)
        columns["aleatoric_var"].append(record.aleatoric_var)
        columns["epistemic_var"].append(record.epistemic_var)
        columns["is_ood"].append(query.is_ood)
        columns["row"].append(np.concatenate([query.id_index, query.ood_index]))
        columns["posterior_var"].append(np.full(query.x.shape[0], np.nan) if truth is None
                                        else truth)
        columns["status"].append(record.status)
        columns["error"].append(record.error)
    sizes = {len(v) for v in columns["row"]}
    if len(sizes) != 1:
        raise ValueError(f"{out}: the seeds' query sizes differ ({sorted(sizes)}): their "
                         "instances have evaluation pools of different sizes")
    import xarray as xr

    dims = ("seed", "query")
    data = {name: (dims, np.stack(columns[name]))
            for name in ("mean", "aleatoric_var", "epistemic_var", "is_ood", "row",
                         "posterior_var")}
    for name in ("status", "error"):
        values = np.empty(len(seeds), dtype=object)
        values[:] = columns[name]
        data[name] = (("seed",), values)
    key = keys[0]
    ds = xr.Dataset(data, coords={"seed": np.asarray(seeds, dtype=np.int64)},
                    attrs={"schema_version": OOD_FIT_SCHEMA, "method": method,
                           "config": json_attr(config), "ood_dataset": ood_name,
                           "n_max": int(n_max), "condition": json_attr(
                               {k: getattr(key, k) for k in CONDITION_COLUMNS})})
    return write_zarr_atomic(ds, out)


def _matching_stream(key: TaskKey, ood_dataset: str) -> np.random.Generator:
    return seeding.rng("ood_matching", key.label, ood_dataset)


def ood_records(ood_fits: Iterable[str | Path], instances: Mapping[str, str | Path],
                ood_covariates: str | Path) -> tuple[list[dict], list[dict]]:
    """Step 2 (module docstring): ``ood_fits`` every method's OOD fit store (of any
    conditions); ``instances``: instance label -> its sample or task store. Returns (the
    per-instance records' rows for :func:`postrisk.studies.ood_proxy.tables.record_rows`: ``(key,
    record)`` pairs, and the ground-truth rows' arguments for
    :func:`postrisk.studies.ood_proxy.tables.ground_truth_rows`: ``(key, shift_all, shift_matched,
    per_method)``, GP instances only)."""
    ood_name, x_ood = _ood_rows(ood_covariates)
    by_instance: dict[str, dict[str, tuple]] = {}
    for path in ood_fits:
        ds = open_zarr(path)
        if ds.attrs.get("schema_version") != OOD_FIT_SCHEMA or ds.attrs["ood_dataset"] != ood_name:
            raise ValueError(f"{path}: not an OOD fit store against {ood_name}")
        condition = json.loads(ds.attrs["condition"])
        for i, seed in enumerate(int(s) for s in ds["seed"].values):
            key = TaskKey.of([condition[k] for k in CONDITION_COLUMNS], seed)
            ok = ds["status"].values[i] == "ok"
            eu = ds["epistemic_var"].values[i] if ok else np.full(ds.sizes["query"], np.nan)
            by_instance.setdefault(key.label, {})[str(ds.attrs["method"])] = (
                eu, ds["aleatoric_var"].values[i] if ok else None, ds["is_ood"].values[i],
                ds["row"].values[i], ds["posterior_var"].values[i])
    records, truths = [], []
    for label, methods in sorted(by_instance.items()):
        task = _instance(instances[label])
        key = TaskKey.from_attrs(task.ds.attrs)
        first = next(iter(methods.values()))
        is_ood, rows = first[2].astype(bool), first[3]
        for name, (_, _, other_ood, other_rows, _) in methods.items():
            if not ((other_ood == is_ood).all() and (other_rows == rows).all()):
                raise ValueError(f"{label}: {name}'s query rows differ from the other methods'")
        x_query = np.concatenate([task.x_eval[rows[~is_ood]], x_ood[rows[is_ood]]])
        record = instance_ood_record({n: (v[0], v[1]) for n, v in methods.items()}, is_ood,
                                     task.x_train, x_query, _matching_stream(key, ood_name))
        records.append((key.as_dict(), record))
        truth = first[4]
        if key.prior == "gp" and np.isfinite(truth).all():
            matched = record["matching"]["indices"]
            distance = record["matching"]["distance"]
            per_method = {n: {"median_eu_ratio": median_eu_ratio(v[0], is_ood, matched),
                              **ground_truth_partial_spearman(v[0], truth, distance, is_ood)}
                          for n, v in methods.items()}
            truths.append((key.as_dict(), ground_truth_shift(truth, is_ood),
                           ground_truth_shift(truth, is_ood, matched), per_method))
    return records, truths
