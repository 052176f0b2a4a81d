"""One function per workflow step: what each thin Snakemake script calls (inputs → outputs)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from postrisk import seeding
from postrisk.covariates.build import load_covariates
from postrisk.io import open_zarr, write_zarr_atomic
from postrisk.tasks.generate import TaskKey, build_sample, build_task
from postrisk.tasks.store import validate_store


def _atomic_text(path: str | Path, text: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def fit_prior(dataset: str, prior: str, covariates: str | Path, settings: dict,
              out: str | Path) -> dict:
    """Fix a family's per-dataset parameters (GP: kernel by marginal likelihood, then ``a``)."""
    from postrisk.priors.family import get_family

    cov = load_covariates(covariates)
    params = get_family(prior).fit(dataset, cov.x, cov.ds["target"].values, cov.eval_index,
                                   settings, seeding.rng("prior", dataset, prior), print)
    params.update({"dataset": dataset, "prior": prior})
    _atomic_text(out, json.dumps(params, indent=2) + "\n")
    return params


def make_sample(key: TaskKey, covariates: str | Path, prior: str | Path, n: int, digest: str,
                out: str | Path) -> None:
    params = json.loads(Path(prior).read_text())
    ds = build_sample(key, load_covariates(covariates), params, n, digest)
    write_zarr_atomic(validate_store(ds, kind="sample"), out)


def make_task(sample: str | Path, draws: int, out: str | Path) -> None:
    task = build_task(open_zarr(sample), draws)
    write_zarr_atomic(validate_store(task, kind="task"), out)


def fit_condition(method: str, config: dict, samples: Sequence[str | Path], seeds: Sequence[int],
                  out: str | Path, n_threads: int = 1) -> None:
    """Fit ``method`` with one configuration on each seed's training sample; never raises."""
    from postrisk.methods.base import fit_records_to_dataset, run_fit

    records = []
    for seed, path in zip(seeds, samples, strict=True):
        ds = open_zarr(path)
        record = run_fit(method, config, ds["x_train"].values, ds["y_train"].values,
                         ds["x_eval"].values, random_state=int(seed), n_threads=n_threads)
        print(f"[{method}] seed {seed}: {record.status} in {record.fit_seconds:.2f} s"
              + (f" — {record.error}" if record.error else ""))
        records.append(record)
    write_zarr_atomic(fit_records_to_dataset(records, list(seeds)), out)


def score_condition_files(tasks: Sequence[str | Path], seeds: Sequence[int],
                          fits: Sequence[str | Path], methods: Sequence[str],
                          out: str | Path) -> pd.DataFrame:
    from postrisk.methods.base import fit_records_from_dataset
    from postrisk.scoring import score_condition
    from postrisk.tasks.task import Task

    loaded = {int(s): Task.load(p) for s, p in zip(seeds, tasks, strict=True)}
    fit_records, fit_seeds = {}, {}
    for method, path in zip(methods, fits, strict=True):
        ds = open_zarr(path)
        fit_records[method] = fit_records_from_dataset(ds)
        fit_seeds[method] = [int(s) for s in ds["seed"].values]
    frame = score_condition(loaded, fit_records, fit_seeds)
    _atomic_text(out, frame.to_csv(index=False))
    return frame


def report_checks(tasks: Sequence[str | Path], table: str, instances: str, figure: str,
                  scale: str, n_valid: int) -> pd.DataFrame:
    from postrisk.report import write_checks

    result = write_checks(tasks, table, instances, figure, scale, np.random.default_rng(0),
                          n_valid)
    print(result.to_string())
    return result


def report_scores(scores: Sequence[str | Path], instances: str, table: str, figure: str,
                  scale: str) -> pd.DataFrame:
    from postrisk.report import write_scores

    result = write_scores(scores, instances, table, figure, scale, np.random.default_rng(0))
    print(result.to_string())
    return result
