"""One function per workflow step: what each thin Snakemake script calls (inputs → outputs)."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from postrisk.core import seeding
from postrisk.core.io import open_zarr, write_text_atomic, write_zarr_atomic
from postrisk.covariates.build import load_covariates
from postrisk.grid.seeds import select_valid_seeds, usable_seeds
from postrisk.tasks.generate import TaskKey, build_sample, build_task
from postrisk.tasks.store import validate_store

logger = logging.getLogger(__name__)


def fit_prior(dataset: str, prior: str, covariates: str | Path, settings: dict,
              out: str | Path) -> dict:
    """Fix a family's per-dataset parameters (GP: kernel by marginal likelihood, then ``a``)."""
    from postrisk.priors.base import get_family

    cov = load_covariates(covariates)
    params = get_family(prior).fit(dataset, cov.x, cov.ds["target"].values, cov.eval_index,
                                   settings, seeding.rng("prior", dataset, prior))
    params.update({"dataset": dataset, "prior": prior})
    write_text_atomic(out, json.dumps(params, indent=2) + "\n")
    return params


def make_sample(key: TaskKey, covariates: str | Path, prior: str | Path, n: int, digest: str,
                out: str | Path) -> None:
    params = json.loads(Path(prior).read_text())
    ds = build_sample(key, load_covariates(covariates), params, n, digest)
    write_zarr_atomic(validate_store(ds, kind="sample"), out)


def make_task(sample: str | Path, settings: dict, out: str | Path) -> None:
    """The reference posterior of one instance (``settings``: config ``posterior.<prior>``)."""
    task = build_task(validate_store(sample, kind="sample"), settings)
    write_zarr_atomic(validate_store(task, kind="task"), out)


def make_tasks(samples: Sequence[str | Path], settings: dict,
               outs: Sequence[str | Path]) -> None:
    """Reference posteriors of several instances in one process (the sampler is compiled once);
    each store is written as soon as it is done."""
    if len(samples) != len(outs):
        raise ValueError(f"{len(samples)} sample stores for {len(outs)} task stores")
    for i, (sample, out) in enumerate(zip(samples, outs, strict=True), 1):
        if len(outs) > 1:
            logger.info(f"instance {i}/{len(outs)}: {sample}")
        make_task(sample, settings, out)


def select_seeds(bnn_tasks: Sequence[str | Path], n_valid: int, out: str | Path) -> dict:
    """A cell's seed selection (:func:`postrisk.grid.seeds.select_valid_seeds`) from its BNN
    task stores, one per candidate seed; too few valid seeds is an error naming the cell."""
    max_rhat, cell = {}, ""
    for path in bnn_tasks:
        ds = validate_store(path, kind="task")
        max_rhat[int(ds.attrs["seed"])] = float(ds["rhat"].max())
        cell = "/".join(str(ds.attrs[k]) for k in ("dataset", "noise", "coverage"))
    selection = select_valid_seeds(max_rhat, n_valid, cell=cell)
    logger.info(f"valid seeds {selection['valid']}; dropped {selection['dropped']} (max R̂ " +
                ", ".join(f"{s}: {r:.3f}" for s, r in max_rhat.items()) + ")")
    write_text_atomic(out, json.dumps(selection, indent=2) + "\n")
    return selection


def read_usable_seeds(seeds: Sequence[int], n_valid: int,
                      selection: Sequence[str | Path] = ()) -> list[int]:
    """:func:`postrisk.grid.seeds.usable_seeds`, with the cell's seed-selection file (if the
    BNN R̂ decides) read from ``selection``."""
    chosen = json.loads(Path(selection[0]).read_text()) if selection else None
    return usable_seeds(seeds, n_valid, chosen)


def condition_config(method: str, settings: dict, sample: str | Path, tuning: dict | None,
                     journal: str | Path, condition: Sequence[str], n_threads: int = 1):
    """The configuration a condition's fits use, as a :class:`postrisk.tuning.TuningResult`.

    Tuned (``tuning``: config ``tuning``): the winner of the sweep on the seed-0 training
    ``sample`` (run or resumed from ``journal``), the fixed ``settings`` included. Not tuned
    (``tuning`` is None): the method's defaults updated by ``settings``.
    """
    from postrisk.methods.interface import check_hyperparameters
    from postrisk.methods.registry import get_method
    from postrisk.tuning import TuningResult, tune

    if tuning is None:
        cls = get_method(method)
        check_hyperparameters(cls, settings or {}, f"method_settings.{method}")
        return TuningResult(method=method, study_name="", n_trials=0,
                            config={**cls.defaults, **(settings or {})}, searched={},
                            best_value=None, best_trial=None,
                            note="not tuned: defaults and fixed settings",
                            implementation_version=int(cls.implementation_version))
    ds = validate_store(sample, kind="sample")
    return tune(method, ds["x_train"].values, ds["y_train"].values, journal=journal,
                fixed=settings, n_trials=int(tuning["trials"]),
                startup_trials=int(tuning["startup_trials"]),
                validation_fraction=float(tuning["validation_fraction"]),
                split_key=tuple(condition), sampler_seed=0, random_state=0, n_threads=n_threads)


def fit_condition(method: str, settings: dict, samples: Sequence[str | Path],
                  seeds: Sequence[int], out: str | Path, n_threads: int = 1,
                  n_valid: int | None = None, selection: Sequence[str | Path] = (),
                  tuning: dict | None = None, journal: str | Path | None = None,
                  condition: Sequence[str] = (), config_out: str | Path | None = None) -> None:
    """Tune (when ``tuning`` is given; on the seed-0 sample, ``samples[0]``) or take the fixed
    ``settings``, record that configuration in ``config_out``, then fit ``method`` on each usable
    seed's training sample (see :func:`usable_seeds`); a failed fit never raises."""
    from postrisk.methods.records import fit_records_to_dataset
    from postrisk.methods.runner import run_fit

    if tuning is not None and journal is None:
        raise ValueError("a tuned condition needs a journal path")
    chosen = condition_config(method, settings, samples[0], tuning, journal or "", condition,
                              n_threads)
    if config_out is not None:
        write_text_atomic(config_out, chosen.to_json())
    config = chosen.config
    use = read_usable_seeds(seeds, n_valid or len(seeds), selection)
    pairs = [(s, p) for s, p in zip(seeds, samples, strict=True) if int(s) in use]
    seeds = [s for s, _ in pairs]
    records = []
    for seed, path in pairs:
        ds = validate_store(path, kind="sample")
        record = run_fit(method, config, ds["x_train"].values, ds["y_train"].values,
                         ds["x_eval"].values, random_state=int(seed), n_threads=n_threads)
        logger.info(f"[{method}] seed {seed}: {record.status} in {record.fit_seconds:.2f} s"
                    + (f" — {record.error}" if record.error else ""))
        records.append(record)
    write_zarr_atomic(fit_records_to_dataset(records, list(seeds)), out)


def score_condition_files(tasks: Sequence[str | Path], seeds: Sequence[int],
                          fits: Sequence[str | Path], methods: Sequence[str],
                          out: str | Path, n_valid: int | None = None,
                          selection: Sequence[str | Path] = ()) -> pd.DataFrame:
    """Score every method and reference row on the condition's usable seeds."""
    from postrisk.evaluation.scoring import score_condition
    from postrisk.methods.records import fit_records_from_dataset
    from postrisk.tasks.task import Task

    use = read_usable_seeds(seeds, n_valid or len(seeds), selection)
    loaded = {int(s): Task.load(p) for s, p in zip(seeds, tasks, strict=True) if int(s) in use}
    fit_records, fit_seeds = {}, {}
    for method, path in zip(methods, fits, strict=True):
        ds = open_zarr(path)
        fit_records[method] = fit_records_from_dataset(ds)
        fit_seeds[method] = [int(s) for s in ds["seed"].values]
    frame = score_condition(loaded, fit_records, fit_seeds)
    write_text_atomic(out, frame.to_csv(index=False))
    return frame


def report_checks(tasks: Sequence[str | Path], table: str, instances: str, figure: str,
                  scale: str, n_valid: int, sensitivity: str | None = None,
                  family_figures: Sequence[str] = ()) -> pd.DataFrame:
    """Table 3, its R̂ ≤ 1.01 sensitivity version, the instance list and rank histograms
    (``family_figures``: paths ending in ``_<prior>.png``)."""
    from postrisk.report.checks import write_checks

    figures = {Path(f).stem.rsplit("_", 1)[-1]: str(f) for f in family_figures}
    result = write_checks(tasks, table, instances, figure, scale, np.random.default_rng(0),
                          n_valid, sensitivity, figures)
    logger.info("\n%s", result.to_string())
    return result


def report_scores(scores: Sequence[str | Path], instances: str, table: str, figure: str,
                  scale: str, sensitivity: str | None = None) -> pd.DataFrame:
    """Mean ρ per method and target over the valid instances; ``sensitivity``: the same over
    those whose BNN R̂ ≤ 1.01."""
    from postrisk.report.scores import write_scores

    result = write_scores(scores, instances, table, figure, scale, np.random.default_rng(0),
                          sensitivity)
    logger.info("\n%s", result.to_string())
    return result
