"""The task-store contract (docs/design.md, "Task instances"; docs/task_store.md) and its
validator.

A **sample store** holds what a method may see plus the ground truth at the same rows; a **task
store** adds the reference posterior. Both are Zarr v3 (via xarray), written atomically.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import xarray as xr

from postrisk.core.io import array_digest, open_zarr
from postrisk.covariates.pools import shared_values
from postrisk.tasks import TASK_SCHEMA_VERSION  # noqa: F401 - re-exported, the contract's version
from postrisk.tasks.key import KEY_COLUMNS

#: name -> (dims, dtype kind) of the sample store's variables.
SAMPLE_VARIABLES: dict[str, tuple[tuple[str, ...], str]] = {
    "x_train": (("train", "feature"), "f8"),
    "train_index": (("train",), "i8"),
    "y_train": (("train",), "f8"),
    "noise_var_train": (("train",), "f8"),
    "f_true_train": (("train",), "f8"),
    "shell_train": (("train",), "i1"),
    "x_eval": (("eval", "feature"), "f8"),
    "eval_index": (("eval",), "i8"),
    "shell_eval": (("eval",), "i1"),
    "noise_var_eval": (("eval",), "f8"),
    "f_true_eval": (("eval",), "f8"),
}
#: name -> (dims, dtype) added by the posterior rule.
POSTERIOR_VARIABLES: dict[str, tuple[tuple[str, ...], str]] = {
    "posterior_draws": (("draw", "eval"), "f4"),
    "posterior_draws_train": (("draw", "train"), "f4"),
    "posterior_mean": (("eval",), "f8"),
    "posterior_var": (("eval",), "f8"),
    "rank_true": (("eval",), "i4"),
    "covered90": (("eval",), "b1"),
    "mcse_var": (("eval",), "f8"),
}
#: Task-store variables a released suite leaves out (the draws at the training inputs: the
#: evaluation needs none of them, and they would double the release). A released instance
#: names them in its attribute ``released_without``.
RELEASE_OMITTED = ("posterior_draws_train",)
#: Per-evaluation-point MCMC diagnostics, present exactly when ``chains`` > 1.
OPTIONAL_VARIABLES: dict[str, tuple[tuple[str, ...], str]] = {
    "rhat": (("eval",), "f8"),
    "ess": (("eval",), "f8"),
}
INSTANCE_ATTRS = KEY_COLUMNS
SAMPLE_ATTRS = (*INSTANCE_ATTRS, "schema_version", "store_kind", "a", "noise_model", "prior_params",
                "n", "n_eval", "noise_to_signal", "config_digest", "f_true_sampler", "versions",
                "timings")
TASK_ATTRS = (*SAMPLE_ATTRS, "sampler_settings", "sample_config_digest", "rank_loglik", "chains")


class StoreValidationError(ValueError):
    """A store that breaks the contract; the message lists every problem found."""


def schema_message(where: object, version: object) -> str:
    """Why a store of another schema version is refused, and how to rebuild it."""
    return (f"{where}: task/sample store of schema version {version!r}; this version of "
            f"postrisk reads version {TASK_SCHEMA_VERSION!r} (docs/task_store.md). Rebuild it: "
            "`snakemake --cores 2 --force <path of the store>` in the checkout (a plain run "
            "rebuilds it too where .snakemake/metadata recorded its version); a released suite "
            "is downloaded anew.")


def check_variables(ds: xr.Dataset, spec: dict, problems: list[str]) -> None:
    """Append to ``problems`` each variable of ``spec`` (name -> (dims, dtype)) that ``ds``
    lacks or holds with other dims or dtype."""
    for name, (dims, dtype) in spec.items():
        if name not in ds.variables:
            problems.append(f"missing variable {name!r}")
            continue
        var = ds[name]
        if var.dims != dims:
            problems.append(f"{name}: dims {var.dims}, expected {dims}")
        if var.dtype != np.dtype(dtype):
            problems.append(f"{name}: dtype {var.dtype}, expected {np.dtype(dtype)}")


def released_without(attrs: dict, problems: list[str]) -> tuple[str, ...]:
    """The variables a released instance leaves out (its ``released_without`` attribute); any
    but :data:`RELEASE_OMITTED` is a problem."""
    names = attrs.get("released_without")
    if names is None:
        return ()
    names = tuple(json.loads(names) if isinstance(names, str) else names)
    problems += [f"released_without names {n!r}, which a release may not leave out"
                 for n in names if n not in RELEASE_OMITTED]
    return tuple(n for n in names if n in RELEASE_OMITTED)


#: The attribute recording each numeric variable's digest as the store was written (variable ->
#: :func:`~postrisk.core.io.array_digest` of its values): a byte flipped in a stored chunk that
#: still decodes is found when the store is loaded. Stores written before it have none.
CONTENT_DIGESTS = "content_digests"


def content_digests(ds: xr.Dataset) -> dict[str, str]:
    """Each numeric data variable's digest (dtype, shape and values)."""
    return {name: array_digest((var.values, var.dtype))
            for name, var in sorted(ds.data_vars.items()) if var.dtype.kind in "biuf"}


def with_content_digests(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` with its :data:`CONTENT_DIGESTS` attribute set to its variables' digests now."""
    out = ds.copy()
    out.attrs[CONTENT_DIGESTS] = json.dumps(content_digests(ds), sort_keys=True)
    return out


def content_problems(ds: xr.Dataset) -> list[str]:
    """The variables whose values no longer have the digest recorded when the store was
    written (a variable a release leaves out is not checked)."""
    recorded = json.loads(ds.attrs.get(CONTENT_DIGESTS) or "{}")
    now = content_digests(ds[[n for n in recorded if n in ds.data_vars]])
    changed = sorted(n for n, digest in now.items() if digest != recorded[n])
    return [f"{name}: its values differ from those the store was written with (the store is "
            "damaged: rebuild it, or download it again)" for name in changed]


def validate_store(store: str | Path | xr.Dataset, kind: str | None = None) -> xr.Dataset:
    """Check a sample or task store against the contract; return it loaded, or raise.

    ``kind`` is "sample" or "task"; by default it is read from the store's ``store_kind``.
    Checks: schema version (a store of another version is refused with how to rebuild it),
    variables with dims and dtypes, attributes, finite values, positive noise variances,
    non-negative posterior variances, evaluation rows disjoint from the training inputs by row
    index and by value ("no evaluation point is ever a training input"), and each variable's
    values against the digest recorded when the store was written (:data:`CONTENT_DIGESTS`). A
    released instance may leave out :data:`RELEASE_OMITTED` (named in its ``released_without``
    attribute).
    """
    ds = open_zarr(store) if not isinstance(store, xr.Dataset) else store
    where = store if not isinstance(store, xr.Dataset) else "dataset"
    kind = kind or ds.attrs.get("store_kind")
    problems: list[str] = []
    if ds.attrs.get("schema_version") != TASK_SCHEMA_VERSION:
        raise StoreValidationError(schema_message(where, ds.attrs.get("schema_version")))
    if kind not in ("sample", "task"):
        raise StoreValidationError(f"unknown store kind {kind!r} (expected 'sample' or 'task')")
    check_variables(ds, SAMPLE_VARIABLES, problems)
    attrs = TASK_ATTRS if kind == "task" else SAMPLE_ATTRS
    problems += [f"missing attribute {a!r}" for a in attrs if a not in ds.attrs]
    if kind == "task":
        omitted = released_without(ds.attrs, problems)
        check_variables(ds, {k: v for k, v in POSTERIOR_VARIABLES.items() if k not in omitted},
                    problems)
        chains = int(ds.attrs.get("chains", 1))
        if chains > 1:
            check_variables(ds, OPTIONAL_VARIABLES, problems)
        problems += [f"{name} present but chains = {chains}" for name in OPTIONAL_VARIABLES
                     if chains == 1 and name in ds.variables]
        if "draw" in ds.sizes and ds.sizes["draw"] % chains:
            problems.append(f"{ds.sizes['draw']} draws are not {chains} equal chains")
    if not problems:
        for name in ("y_train", "f_true_train", "f_true_eval", "noise_var_train",
                     "noise_var_eval", "x_train", "x_eval"):
            if not np.all(np.isfinite(ds[name].values)):
                problems.append(f"{name} has non-finite values")
        for name in ("noise_var_train", "noise_var_eval"):
            if not np.all(ds[name].values > 0):
                problems.append(f"{name} has non-positive values")
        if set(ds["train_index"].values.tolist()) & set(ds["eval_index"].values.tolist()):
            problems.append("training and evaluation rows overlap")
        twins = shared_values(ds["x_train"].values, ds["x_eval"].values)
        if twins:
            problems.append(f"{twins} evaluation point value(s) equal a training input (no "
                            "evaluation point may be a training input)")
        if ds.sizes["train"] != ds.attrs.get("n") or ds.sizes["eval"] != ds.attrs.get("n_eval"):
            problems.append("sizes disagree with attrs n / n_eval")
        if kind == "task":
            if not np.all(np.isfinite(ds["posterior_draws"].values)):
                problems.append("posterior_draws has non-finite values")
            if not np.all(ds["posterior_var"].values >= 0):
                problems.append("posterior_var has negative values")
        problems += content_problems(ds)
    if problems:
        raise StoreValidationError(f"{where}: " + "; ".join(problems))
    return ds
