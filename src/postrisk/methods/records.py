"""Fit records: the outcome of fitting one method on one instance, and their Zarr form."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from postrisk.core.io import canonical_json, open_zarr
from postrisk.methods.interface import PREDICTION_FIELDS, Prediction

if TYPE_CHECKING:
    import xarray


FIT_RECORD_SCHEMA = "fit-record-1"
STATUS_OK = "ok"
STATUS_FAILED = "failed"


@dataclass
class FitRecord:
    """The outcome of one (method, instance) fit (docs/design.md, "Methods").

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
    configs = {canonical_json(r.config) for r in records}
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


def benchmark_configuration(fit_store: str | Path, n_seeds: int) -> tuple[str, dict, list[int]]:
    """(method, configuration, seeds) of a benchmark fit store: the configuration the fit
    stage chose for the condition and the first ``n_seeds`` of the seeds it fitted (its usable
    seeds, ascending)."""
    bench = open_zarr(fit_store, load=False)
    seeds = sorted(int(s) for s in bench["seed"].values)[:n_seeds]
    return str(bench.attrs["method"]), json.loads(bench.attrs["config"]), seeds
