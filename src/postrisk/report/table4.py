"""Table 4 (the datasets): the run's d, N, n_eval, n, noise-to-signal ratio and GP kernel per
dataset, the paper's beside them, and the noise-to-signal ratio the instances realise.

:func:`table4` is a pure function of plain per-dataset records; :func:`table4_inputs` reads them
from the run's covariate stores (d, N and n_eval of the pool split), its GP prior files (the
kernel the GP prior uses) and its task stores (the n and ρ the instances were generated with,
and each instance's realised ratio, :func:`realised_noise_to_signal`, from its noise variance
and f* at the evaluation points); :func:`write_table4` is the checks job's step. The paper's
values are the registry's (``postrisk/covariates/datasets.yaml``, which holds Table 4).

**Configured and realised ρ.** ρ (``noise_to_signal``) is a ratio to a signal of variance 1:
the noise level is set so that the mean σ²_ε over the evaluation pool is exactly ρ
(docs/design.md, "Noise modes"), and the prior's scale constant ``a`` makes f*'s SD over the
pool 1 for the median prior draw, not for every draw (docs/design.md, "Priors"). The realised
ratio of an instance divides the same mean σ²_ε by the variance of its own f* over the pool, so
it is ρ / Var_pool(f*): above ρ where the drawn f* varies less than the median draw, below it
where it varies more.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from postrisk.core.io import open_zarr
from postrisk.covariates.registry import get_dataset

logger = logging.getLogger(__name__)

#: Table 4's columns per dataset, in the paper's order (ρ is ``noise_to_signal``).
TABLE4_COLUMNS = ("d", "N", "n_eval", "n", "noise_to_signal", "kernel")
#: The run's columns: Table 4's, with the realised ratio (:func:`realised_noise_to_signal`,
#: the mean over the dataset's instances) and the number of instances it averages beside ρ.
RUN_COLUMNS = ("d", "N", "n_eval", "n", "noise_to_signal", "realised_noise_to_signal",
               "n_instances", "kernel")


def kernel_label(components: Sequence[str] | None) -> str | None:
    """A kernel as Table 4 writes it: its components joined by " + " (None: no kernel)."""
    return " + ".join(components) if components else None


def paper_table4(dataset: str) -> dict[str, object]:
    """The paper's Table 4 row of ``dataset`` (the registry's entry)."""
    spec = get_dataset(dataset)
    return {"d": spec.d, "N": spec.N, "n_eval": spec.n_eval, "n": spec.n,
            "noise_to_signal": spec.noise_to_signal, "kernel": kernel_label(spec.kernel)}


def realised_noise_to_signal(noise_var_eval, f_eval) -> float:
    """The noise-to-signal ratio one instance realises: mean σ²_ε over its evaluation pool
    divided by the variance of f* over the pool, mean(noise_var_eval) / Var(f_eval).

    Var is the population variance (``np.var``, ddof 0, duplicate rows counted as rows), the
    square of the SD the prior's scale constant ``a`` normalises (docs/design.md, "Priors"), so
    the ratio is ρ's own (module docstring): the configured ρ where the drawn f* has the
    median draw's variance 1. A constant f* (no signal) raises ``ValueError``."""
    noise = np.asarray(noise_var_eval, dtype=np.float64)
    f = np.asarray(f_eval, dtype=np.float64)
    if noise.ndim != 1 or f.shape != noise.shape or noise.size == 0:
        raise ValueError(f"noise_var_eval and f_eval must be vectors of one length, got "
                         f"shapes {noise.shape} and {f.shape}")
    signal = float(np.var(f))
    if not signal > 0.0:
        raise ValueError("f* is constant over the evaluation pool: no signal to divide by")
    return float(np.mean(noise)) / signal


def table4(ours: Mapping[str, Mapping[str, object]], scale: str,
           paper: Mapping[str, Mapping[str, object]] | None = None) -> pd.DataFrame:
    """One row per dataset of ``ours`` (dataset → its d, N, n_eval, n, noise_to_signal and
    kernel, a missing one NaN, and ``realised`` the realised ratios of its instances,
    :func:`realised_noise_to_signal`), in its order: the run's values with
    ``realised_noise_to_signal`` (the mean of ``realised``; NaN without any) and
    ``n_instances`` (how many it averages) beside ρ, then the paper's as ``paper_<column>``
    of Table 4's columns (``paper``: dataset → the same fields; default: the registry's,
    :func:`paper_table4`)."""
    rows = []
    for dataset, values in ours.items():
        theirs = paper[dataset] if paper is not None else paper_table4(dataset)
        realised = [float(r) for r in values.get("realised", ())]
        run = {c: values.get(c, np.nan) for c in TABLE4_COLUMNS}
        run["realised_noise_to_signal"] = float(np.mean(realised)) if realised else np.nan
        run["n_instances"] = len(realised)
        rows.append({"scale": scale, "dataset": dataset, **{c: run[c] for c in RUN_COLUMNS},
                     **{f"paper_{c}": theirs.get(c, np.nan) for c in TABLE4_COLUMNS}})
    columns = ["scale", "dataset", *RUN_COLUMNS, *(f"paper_{c}" for c in TABLE4_COLUMNS)]
    return pd.DataFrame(rows, columns=columns)


def _one_value(values: set, name: str, dataset: str) -> object:
    if len(values) != 1:
        raise ValueError(f"{dataset}: the task stores disagree on {name}: {sorted(values)}")
    return values.pop()


def table4_inputs(covariates: Mapping[str, str | Path], gp_priors: Mapping[str, str | Path],
                  task_paths: Sequence[str | Path]) -> dict[str, dict[str, object]]:
    """Per dataset of ``covariates`` (dataset → covariate store), in its order: d, N and n_eval
    of the store's pool split; the kernel of its GP prior file (``gp_priors``: dataset → the
    prior JSON; a dataset without a GP prior in the run has no kernel); n and noise_to_signal
    of its task stores (attributes; every store of a dataset holds the same) and ``realised``,
    each task store's :func:`realised_noise_to_signal` in ``task_paths``' order (of a store
    only ``noise_var_eval`` and ``f_true_eval`` are read)."""
    attrs: dict[str, dict[str, set]] = {}
    realised: dict[str, list[float]] = {}
    for path in task_paths:
        ds = open_zarr(path, load=False)
        dataset = ds.attrs["dataset"]
        seen = attrs.setdefault(dataset, {"n": set(), "noise_to_signal": set()})
        seen["n"].add(int(ds.attrs["n"]))
        seen["noise_to_signal"].add(float(ds.attrs["noise_to_signal"]))
        realised.setdefault(dataset, []).append(realised_noise_to_signal(
            ds["noise_var_eval"].values, ds["f_true_eval"].values))
    out = {}
    for dataset, path in covariates.items():
        ds = open_zarr(path, load=False)
        row: dict[str, object] = {"d": int(ds.sizes["feature"]), "N": int(ds.sizes["row"]),
                                  "n_eval": int(ds.sizes["eval"])}
        for name, values in attrs.get(dataset, {}).items():
            row[name] = _one_value(set(values), name, dataset)
        row["realised"] = realised.get(dataset, [])
        if dataset in gp_priors:
            prior = json.loads(Path(gp_priors[dataset]).read_text(encoding="utf-8"))
            row["kernel"] = kernel_label(prior["kernel"]["components"])
        out[dataset] = row
    return out


def write_table4(task_paths: Sequence[str | Path], covariates: Mapping[str, str | Path],
                 gp_priors: Mapping[str, str | Path], out_csv: str | Path,
                 scale: str) -> pd.DataFrame:
    """Table 4 of the run into ``out_csv`` (:func:`table4_inputs`, :func:`table4`)."""
    table = table4(table4_inputs(covariates, gp_priors, task_paths), scale)
    Path(out_csv).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(out_csv, index=False)
    logger.info("Table 4:\n%s", table.to_string())
    return table
