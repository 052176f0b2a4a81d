"""The classification task-store contract (docs/task_store.md, "Classification stores") and its
validator. One store per instance holds what a method may see (training inputs and labels,
evaluation inputs), the ground truth (latents f*, class probabilities π*, the temperature field,
the evaluation labels) and the reference posterior (D draws of π at the evaluation points) with
its diagnostics per point and class (of π, and of the latents f: their posterior mean, the
rank of f* among their draws and its 90% coverage; the latent draws themselves are not kept).
Zarr v3 via xarray, written atomically."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from postrisk.classification.key import CLASSIFICATION_KEY_COLUMNS
from postrisk.core.io import open_zarr
from postrisk.tasks.store import check_variables

#: The store format's version (its own: the regression stores have TASK_SCHEMA_VERSION).
CLASSIFICATION_SCHEMA_VERSION = "2"
FAMILY = "classification"

#: name -> (dims, dtype kind).
VARIABLES: dict[str, tuple[tuple[str, ...], str]] = {
    "x_train": (("train", "feature"), "f8"),
    "train_index": (("train",), "i8"),
    "labels_train": (("train",), "i8"),
    "shell_train": (("train",), "i1"),
    "temperature_train": (("train",), "f8"),
    "f_true_train": (("train", "class"), "f8"),
    "prob_true_train": (("train", "class"), "f8"),
    "x_eval": (("eval", "feature"), "f8"),
    "eval_index": (("eval",), "i8"),
    "labels_eval": (("eval",), "i8"),
    "shell_eval": (("eval",), "i1"),
    "temperature_eval": (("eval",), "f8"),
    "f_true_eval": (("eval", "class"), "f8"),
    "prob_true_eval": (("eval", "class"), "f8"),
    "prob_draws": (("draw", "eval", "class"), "f4"),
    "prob_mean": (("eval", "class"), "f8"),
    "latent_mean": (("eval", "class"), "f8"),
    # per (point, class), of the π draws: rank of π*, in the central 90% interval, relative
    # MCSE of the variance (batch means); of the latent draws: rank of f*, in its 90% interval
    "rank_true": (("eval", "class"), "i4"),
    "covered90": (("eval", "class"), "b1"),
    "mcse_var": (("eval", "class"), "f8"),
    "rank_true_latent": (("eval", "class"), "i4"),
    "covered90_latent": (("eval", "class"), "b1"),
}
#: Present exactly when ``chains`` > 1: ArviZ's rank-normalised split-R̂ and bulk ESS of the
#: stored π draws, per point and class.
CHAIN_VARIABLES: dict[str, tuple[tuple[str, ...], str]] = {
    "rhat": (("eval", "class"), "f8"),
    "ess": (("eval", "class"), "f8"),
}
ATTRS = (*CLASSIFICATION_KEY_COLUMNS, "family", "schema_version", "store_kind", "n", "n_eval",
         "a", "amplitude", "entropy_share_target", "entropy_share_prior", "prior_params",
         "temperature_field", "config_digest", "sampler_settings", "sampler_summary", "chains",
         "versions", "timings", "created")


class ClassificationStoreError(ValueError):
    """A classification store that breaks the contract; the message lists every problem."""


def validate_classification_store(store: str | Path | xr.Dataset) -> xr.Dataset:
    """Check a classification store against the contract; return it loaded, or raise.

    Checks: family and schema version, variables with dims and dtypes, attributes, finite
    values, positive temperatures, labels in 0 … K−1, probabilities on the simplex (rows of π*,
    of the draws and of their mean summing to 1), and no evaluation row among the training rows.
    """
    ds = open_zarr(store) if not isinstance(store, xr.Dataset) else store
    where = store if not isinstance(store, xr.Dataset) else "dataset"
    if ds.attrs.get("family") != FAMILY:
        raise ClassificationStoreError(f"{where}: not a classification store (family "
                                       f"{ds.attrs.get('family', 'regression')!r})")
    if ds.attrs.get("schema_version") != CLASSIFICATION_SCHEMA_VERSION:
        raise ClassificationStoreError(
            f"{where}: classification store of schema version "
            f"{ds.attrs.get('schema_version')!r}; this version of postrisk reads version "
            f"{CLASSIFICATION_SCHEMA_VERSION!r}. Rebuild it: `snakemake --cores 2 --force "
            f"<path of the store>`.")
    problems: list[str] = []
    chains = int(ds.attrs.get("chains", 1))
    spec = {**VARIABLES, **(CHAIN_VARIABLES if chains > 1 else {})}
    check_variables(ds, spec, problems)
    problems += [f"{name}: non-finite values" for name, (_, kind) in spec.items()
                 if kind[0] == "f" and name in ds.variables
                 and not np.all(np.isfinite(ds[name].values))]
    problems += [f"missing attribute {a!r}" for a in ATTRS if a not in ds.attrs]
    if not problems:
        k = ds.sizes["class"]
        if int(ds.attrs["classes"]) != k:
            problems.append(f"attribute classes = {ds.attrs['classes']} but {k} classes stored")
        for name in ("labels_train", "labels_eval"):
            labels = ds[name].values
            if labels.size and (labels.min() < 0 or labels.max() >= k):
                problems.append(f"{name}: labels outside 0 … {k - 1}")
        for name in ("temperature_train", "temperature_eval"):
            if not np.all(ds[name].values > 0):
                problems.append(f"{name}: non-positive temperatures")
        for name, tol in (("prob_true_train", 1e-9), ("prob_true_eval", 1e-9),
                          ("prob_mean", 1e-6), ("prob_draws", 1e-4)):
            values = ds[name].values
            if np.any(values < 0) or np.max(np.abs(values.sum(axis=-1) - 1.0)) > tol:
                problems.append(f"{name}: rows off the probability simplex")
        if np.intersect1d(ds["train_index"].values, ds["eval_index"].values).size:
            problems.append("an evaluation row is a training row")
    if problems:
        raise ClassificationStoreError(f"{where}: " + "; ".join(problems))
    return ds
