"""Assemble one dataset's covariate store: fetch, clean, scale, split, shells, PC1
(docs/design.md, "Covariates" to "Coverage")."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from postrisk.core import seeding
from postrisk.core.io import json_attr, library_versions, open_zarr, write_zarr_atomic
from postrisk.covariates import COVARIATES_SCHEMA_VERSION
from postrisk.covariates.clean import MinMaxScaling, clean_covariates, fit_min_max, select_rows
from postrisk.covariates.fetch import RawTable, load_raw_table
from postrisk.covariates.pools import (
    covariate_groups,
    duplicate_summary,
    eval_pool_size,
    fit_principal_score,
    fit_shells,
    split_pools,
)
from postrisk.covariates.registry import DatasetSpec, get_dataset
from postrisk.covariates.sources import FetchSettings

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Covariates:
    """A dataset's processed covariates as read back from its store."""

    ds: xr.Dataset

    @property
    def x(self) -> np.ndarray:
        return self.ds["x"].values

    @property
    def eval_index(self) -> np.ndarray:
        return self.ds["eval_index"].values

    @property
    def candidate_index(self) -> np.ndarray:
        return self.ds["candidate_index"].values

    @property
    def shell(self) -> np.ndarray:
        return self.ds["shell"].values


def load_covariates(path: str | Path) -> Covariates:
    ds = open_zarr(path)
    version = ds.attrs.get("schema_version")
    if version != COVARIATES_SCHEMA_VERSION:
        raise ValueError(
            f"{path}: covariate store of schema {version!r}; this version of postrisk reads "
            f"{COVARIATES_SCHEMA_VERSION!r} (its evaluation/candidate split keeps identical rows "
            "on one side). Delete the store and everything built from it (results/) and run "
            "the workflow again to rebuild it.")
    return Covariates(ds)


def scaling_from_store(path: str | Path) -> MinMaxScaling:
    """The min-max constants recorded in another dataset's covariate store (Red Wine: White's)."""
    ds = open_zarr(path)
    return MinMaxScaling(columns=tuple(str(c) for c in ds["feature"].values),
                         minimum=ds["scale_min"].values, maximum=ds["scale_max"].values,
                         reference=ds.attrs["dataset"])


def build_covariates(spec: DatasetSpec | str, fetch: FetchSettings | None = None,
                     n_eval_cap: int = 1500,
                     scaling: MinMaxScaling | None = None) -> xr.Dataset:
    """Everything fixed once per dataset (cleaned covariates, split, shells, PC1 score), as an
    in-memory dataset."""
    spec = get_dataset(spec) if isinstance(spec, str) else spec
    if spec.scaling_reference and scaling is None:
        raise ValueError(f"{spec.name} is scaled with {spec.scaling_reference}'s constants; "
                         "pass them as `scaling`")
    raw = load_raw_table(spec, fetch)
    return covariates_from_raw(spec, raw, n_eval_cap=n_eval_cap, scaling=scaling)


def covariates_from_raw(spec: DatasetSpec, raw: RawTable, n_eval_cap: int = 1500,
                        scaling: MinMaxScaling | None = None) -> xr.Dataset:
    frame = select_rows(raw.frame, spec.rows, spec.aliases)
    cleaned = clean_covariates(frame, spec.columns, spec.target, spec.aliases)
    scaling = scaling or fit_min_max(cleaned.x, reference=spec.name)
    x = scaling.apply(cleaned.x).to_numpy(dtype=float)
    n_rows, d = x.shape
    if n_rows != spec.N or d != spec.d:
        logger.warning("[%s] cleaning gave d/N = %d/%s; the registry (Table 4) says %d/%s",
                       spec.name, d, f"{n_rows:,}", spec.d, f"{spec.N:,}")
    n_eval = eval_pool_size(n_rows, n_eval_cap)
    groups = covariate_groups(x)
    duplicates = duplicate_summary(groups)
    eval_index, candidate_index = split_pools(groups, n_eval, seeding.rng("pools", spec.name))
    shells = fit_shells(x[candidate_index])
    distance = shells.distance(x)
    shell = shells.assign(x)
    pcs = fit_principal_score(x[eval_index])
    features = list(cleaned.x.columns)
    outer_share = np.mean(shell[eval_index] == 4)
    logger.info(f"[{spec.name}] d/N = {d}/{n_rows:,}, n_eval = {n_eval:,}, "
                f"outermost-shell share of the evaluation pool = {outer_share:.3f}; "
                f"{duplicates['duplicate_groups']:,} covariate values occur more than once "
                f"({duplicates['rows_in_duplicate_groups']:,} rows), each kept on one side of "
                "the split")
    ds = xr.Dataset(
        data_vars={
            "x": (("row", "feature"), x),
            "target": (("row",), cleaned.target.to_numpy(dtype=float)),
            "eval_index": (("eval",), eval_index.astype(np.int64)),
            "candidate_index": (("candidate",), candidate_index.astype(np.int64)),
            "shell": (("row",), shell),
            "shell_distance": (("row",), distance),
            "pc1_score": (("row",), pcs.score(x)),
            "pc1_loadings": (("feature",), pcs.loadings),
            "pc1_center": (("feature",), pcs.center),
            "pc1_scale": (("feature",), pcs.scale),
            "shell_center": (("feature",), shells.center),
            "shell_scale": (("feature",), shells.scale),
            "shell_precision": (("feature", "feature_"), shells.precision),
            "scale_min": (("feature",), np.asarray(scaling.minimum, dtype=float)),
            "scale_max": (("feature",), np.asarray(scaling.maximum, dtype=float)),
        },
        coords={"feature": features, "feature_": features},
        attrs={
            "schema_version": COVARIATES_SCHEMA_VERSION,
            "dataset": spec.name,
            "display_name": spec.display_name,
            "source": spec.source.label,
            "raw_origin": raw.origin,
            "raw_source": raw.source.label,
            "raw_url": raw.url or "",
            "raw_sha256": raw.sha256,
            "registry_verified": spec.verified,
            "N": n_rows,
            "d": d,
            "n_eval": n_eval,
            "n_eval_cap": int(n_eval_cap),
            "registry_N": spec.N,
            "registry_d": spec.d,
            "registry_n": spec.n if spec.n is not None else -1,
            "noise_to_signal": spec.noise_to_signal if spec.noise_to_signal is not None else -1.0,
            "kernel": json_attr(list(spec.kernel) if spec.kernel else []),
            "scaling_reference": scaling.reference,
            "dropped_columns": json_attr(cleaned.dropped_columns),
            "binary_levels": json_attr({k: list(v) for k, v in cleaned.binary_levels.items()}),
            "rows_before_cleaning": cleaned.rows_in,
            **({"row_filter": json_attr({k: list(v) for k, v in spec.rows.items()}),
                "rows_in_source": len(raw.frame)} if spec.rows else {}),
            "rows_with_missing": cleaned.rows_with_missing,
            "split_seed_key": json_attr(["pools", spec.name]),
            "split_grouping": "identical covariate rows on one side",
            **duplicates,
            "shell_thresholds": [float(t) for t in shells.thresholds],
            "shell_shrinkage": shells.shrinkage,
            "pc1_explained_variance_ratio": pcs.explained_variance_ratio,
            "pc1_sign_convention": "largest-magnitude loading positive",
            "versions": json_attr(library_versions()),
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
        },
    )
    return ds


def write_covariates(ds: xr.Dataset, path: str | Path) -> Path:
    return write_zarr_atomic(ds, path)


def make_covariate_store(dataset: str, fetch: Mapping[str, Any], n_eval_cap: int,
                         out: str | Path, reference: str | Path | None = None,
                         **overrides: Any) -> Path:
    """Build one dataset's covariate store and write it to ``out``: the workflow's covariates
    step and ``postrisk covariates`` alike. ``fetch``: a configuration's ``covariates``
    section, ``overrides`` of its fetch settings (:meth:`FetchSettings.from_config`; None
    ones ignored); ``reference``: the store whose scaling constants to use (Red Wine's: White
    Wine's)."""
    scaling = scaling_from_store(reference) if reference else None
    ds = build_covariates(get_dataset(dataset), FetchSettings.from_config(fetch, **overrides),
                          n_eval_cap=n_eval_cap, scaling=scaling)
    return write_covariates(ds, out)


def summarize_store(path: str | Path) -> dict:
    """The headline facts of a covariate store (for logs and tests)."""
    ds = open_zarr(path)
    shell_eval = ds["shell"].values[ds["eval_index"].values]
    return {"dataset": ds.attrs["dataset"], "d": int(ds.attrs["d"]), "N": int(ds.attrs["N"]),
            "n_eval": int(ds.attrs["n_eval"]),
            "outer_shell_share_eval": float(np.mean(shell_eval == 4))}


__all__ = ["build_covariates", "covariates_from_raw", "load_covariates", "make_covariate_store",
           "scaling_from_store", "write_covariates", "summarize_store",
           "COVARIATES_SCHEMA_VERSION"]
