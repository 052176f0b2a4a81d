"""One function per workflow step: what each thin Snakemake script calls (inputs → outputs)."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from postrisk.core import seeding
from postrisk.core.io import json_attr, open_zarr, write_text_atomic, write_zarr_atomic
from postrisk.core.progress import progress_steps
from postrisk.covariates.build import load_covariates, make_covariate_store
from postrisk.tasks.generate import TaskKey, build_sample, build_task
from postrisk.tasks.store import validate_store, with_content_digests
from postrisk.tasks.validity import read_usable_seeds, select_valid_seeds

if TYPE_CHECKING:
    from postrisk.planning.units import (
        DisentanglementUnit,
        FitUnit,
        PosteriorUnit,
        SampleUnit,
        ScoreUnit,
        ValidSeedsUnit,
    )

logger = logging.getLogger(__name__)


def make_covariates(dataset: str, fetch: Mapping, n_eval_cap: int, out: str | Path,
                    reference: str | Path | None = None) -> None:
    """One dataset's covariate store (``fetch``: the config's ``covariates`` section;
    ``reference``: the store whose scaling constants to use, for Red Wine)."""
    make_covariate_store(dataset, fetch, n_eval_cap, out, reference)
    logger.info("wrote %s", out)


def verify_dataset(dataset: str, fetch: Mapping, out: str | Path) -> None:
    """Fetch a dataset's canonical source, check it against the registry, write the report."""
    from postrisk.covariates import verify_covariates
    from postrisk.covariates.sources import FetchSettings

    report = verify_covariates(dataset, FetchSettings.from_config(fetch))
    write_text_atomic(out, json.dumps(report.as_dict(), indent=2) + "\n")


def fit_prior(dataset: str, prior: str, covariates: str | Path, settings: dict,
              out: str | Path) -> dict:
    """Fix a prior's per-dataset parameters (GP: kernel by marginal likelihood, then ``a``)."""
    from postrisk.priors.base import get_prior

    cov = load_covariates(covariates)
    params = get_prior(prior).fit(dataset, cov.x, cov.ds["target"].values, cov.eval_index,
                                   settings, seeding.rng("prior", dataset, prior))
    params.update({"dataset": dataset, "prior": prior})
    write_text_atomic(out, json.dumps(params, indent=2) + "\n")
    return params


def make_sample(key: TaskKey, covariates: str | Path, prior: str | Path, n: int, digest: str,
                out: str | Path, noise_strength: float) -> None:
    params = json.loads(Path(prior).read_text())
    ds = build_sample(key, load_covariates(covariates), params, n, digest,
                      noise_strength=noise_strength)
    write_zarr_atomic(validate_store(with_content_digests(ds), kind="sample"), out)


def make_samples(units: Sequence[SampleUnit]) -> None:
    """The sample stores of one job's instances (a sample rule's ``params.jobs``:
    :mod:`postrisk.planning.units`), in order, each written as soon as it is done."""
    with progress_steps(len(units), "sample stores", logger) as progress:
        for unit in units:
            make_sample(unit.key, unit.covariates, unit.prior, unit.n, unit.digest, unit.out,
                        unit.noise_strength)
            progress.advance(message=unit.key.label)


def make_task(sample: str | Path, settings: dict, out: str | Path,
              accelerator: Mapping | None = None) -> None:
    """The reference posterior of one instance (``settings``: config ``posterior.<prior>``);
    ``accelerator``: the job's GPU record (:func:`postrisk.core.jax_env.check_accelerator`),
    kept in the store's ``accelerator`` attribute when the job asked for one."""
    task = build_task(validate_store(sample, kind="sample"), settings)
    if accelerator is not None:
        task.attrs["accelerator"] = json_attr(dict(accelerator))
    write_zarr_atomic(validate_store(with_content_digests(task), kind="task"), out)


def make_tasks(units: Sequence[PosteriorUnit], accelerator: Mapping | None = None) -> None:
    """Reference posteriors of one job's instances (a posterior rule's ``params.jobs``) in one
    process, so the sampler is compiled once; each store is written as soon as it is done.

    ``accelerator`` (``requested``, ``allow_cpu_fallback``): a job that asked for a GPU first
    checks that JAX sees one (:func:`~postrisk.core.jax_env.check_accelerator`) and stops with
    one message if not, before any sampling.
    """
    from postrisk.core.jax_env import check_accelerator

    record = check_accelerator(**accelerator) if accelerator else None
    with progress_steps(len(units), "reference posteriors", logger) as progress:
        for unit in units:
            make_task(unit.sample, unit.settings, unit.out, record)
            progress.advance(message=unit.key.label)


def select_seeds(unit: ValidSeedsUnit) -> dict:
    """A cell's seed selection (:func:`postrisk.tasks.validity.select_valid_seeds`) from its
    BNN task stores, one per candidate seed, with the digest of the settings it depends on
    (``config_digest``: a later plan uses it only under the same settings,
    :func:`postrisk.planning.seeds.known_selections`); too few valid seeds is an error naming the
    cell."""
    max_rhat, cell = {}, ""
    for path in unit.bnn_tasks:
        ds = validate_store(path, kind="task")
        max_rhat[int(ds.attrs["seed"])] = float(ds["rhat"].max())
        cell = "/".join(str(ds.attrs[k]) for k in ("dataset", "noise", "coverage"))
    selection = {**select_valid_seeds(max_rhat, unit.n_valid, cell=cell),
                 "config_digest": unit.config_digest}
    logger.info(f"valid seeds {selection['valid']}; dropped {selection['dropped']} (max R̂ " +
                ", ".join(f"{s}: {r:.3f}" for s, r in max_rhat.items()) + ")")
    write_text_atomic(unit.out, json.dumps(selection, indent=2) + "\n")
    return selection


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
                split_key=tuple(condition), sampler_seed=0, random_state=0, n_threads=n_threads,
                batch_size=int(tuning.get("batch_size", 1)),
                early_stopping=tuning.get("early_stopping"))


def fit_conditions(units: Sequence[FitUnit], n_threads: int = 1) -> None:
    """One fit job (a fit rule's ``params.jobs``): :func:`fit_condition` for each of its
    (method, condition) units, in order."""
    with progress_steps(len(units), "conditions", logger) as progress:
        for unit in units:
            fit_condition(unit.method, unit.settings, unit.samples, unit.seeds, unit.fits,
                          n_threads=n_threads, n_valid=unit.n_valid, selection=unit.selection,
                          tuning=unit.tuning, journal=unit.journal, condition=unit.condition,
                          config_out=unit.config)
            progress.advance(message=unit.label)


def fit_condition(method: str, settings: dict, samples: Sequence[str | Path],
                  seeds: Sequence[int], out: str | Path, n_threads: int = 1,
                  n_valid: int | None = None, selection: Sequence[str | Path] = (),
                  tuning: dict | None = None, journal: str | Path | None = None,
                  condition: Sequence[str] = (), config_out: str | Path | None = None) -> None:
    """Tune (when ``tuning`` is given; on the seed-0 sample, ``samples[0]``) or take the fixed
    ``settings``, record that configuration in ``config_out``, then fit ``method`` on each usable
    seed's training sample (:func:`postrisk.tasks.validity.usable_seeds`); a failed fit never
    raises."""
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
    with progress_steps(len(pairs), f"[{method}] fits over seeds", logger) as progress:
        for seed, path in pairs:
            ds = validate_store(path, kind="sample")
            record = run_fit(method, config, ds["x_train"].values, ds["y_train"].values,
                             ds["x_eval"].values, random_state=int(seed), n_threads=n_threads)
            records.append(record)
            progress.advance(message=f"seed {seed}: {record.status} in "
                             f"{record.fit_seconds:.2f} s"
                             + (f" — {record.error}" if record.error else ""))
    write_zarr_atomic(fit_records_to_dataset(records, list(seeds)), out)


def score_condition_files(unit: ScoreUnit) -> pd.DataFrame:
    """Score every method and reference row on the condition's usable seeds."""
    from postrisk.evaluation.scoring import score_condition
    from postrisk.methods.records import fit_records_from_dataset
    from postrisk.tasks.task import Task

    use = read_usable_seeds(unit.seeds, unit.n_valid, unit.selection)
    loaded = {int(s): Task.load(p) for s, p in zip(unit.seeds, unit.tasks, strict=True)
              if int(s) in use}
    fit_records, fit_seeds = {}, {}
    for method, path in zip(unit.methods, unit.fits, strict=True):
        ds = open_zarr(path)
        fit_records[method] = fit_records_from_dataset(ds)
        fit_seeds[method] = [int(s) for s in ds["seed"].values]
    frame = score_condition(loaded, fit_records, fit_seeds)
    write_text_atomic(unit.out, frame.to_csv(index=False))
    return frame


def disentanglement_experiment(unit: DisentanglementUnit, settings: Mapping,
                               n_threads: int = 1) -> pd.DataFrame:
    """Refit the unit's method at the configuration of its fit store on the manipulated
    training sets of the Disentanglement Error experiment on one instance (``settings``: config
    ``disentanglement``); one row per (experiment, level, run) in the unit's ``out``."""
    from postrisk.evaluation.disentanglement_experiment import run_experiment
    from postrisk.tasks.task import Task

    instance = Task.load(unit.task)
    config = json.loads(open_zarr(unit.fit, load=False).attrs["config"])
    frame = run_experiment(unit.method, config, instance,
                           data_fractions=tuple(settings["data_fractions"]),
                           label_noise_fractions=tuple(settings["label_noise_fractions"]),
                           runs=int(settings["runs"]), seed=int(instance.key["seed"]),
                           n_threads=n_threads)
    write_text_atomic(unit.out, frame.to_csv(index=False))
    return frame


def report_checks(tasks: Sequence[str | Path], table: str, instances: str, figure: str,
                  scale: str, n_valid: int, sensitivity: str | None = None,
                  prior_figures: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Table 3, its R̂ ≤ 1.01 sensitivity version, the instance list and rank histograms
    (``prior_figures``: prior → PNG path)."""
    from postrisk.report.checks import write_checks

    result = write_checks(tasks, table, instances, figure, scale, n_valid, sensitivity,
                          dict(prior_figures or {}))
    logger.info("\n%s", result.to_string())
    return result


def report_tables(scores: Sequence[str | Path], instances: str | Path,
                  out: Mapping[str, str | Path], page: str | Path, scale: str,
                  disentanglement: Sequence[str | Path] = (), correlation: str = "pearson",
                  definition: str = "level") -> None:
    """Rule ``tables``: every evaluation table (``out``: table id → path) and the tables page,
    from one bootstrap stream seeded 0 (:func:`postrisk.report.scores.write_evaluation_tables`)."""
    from postrisk.report.scores import write_evaluation_tables

    tables = write_evaluation_tables(scores, instances, out, page, scale,
                                     np.random.default_rng(0), disentanglement=disentanglement,
                                     correlation=correlation, definition=definition)
    logger.info("\n%s", next(t.frame for t in tables if t.name == "scores").to_string())


def report_figure(figure: str, tables: Mapping[str, str | Path], scores: Sequence[str | Path],
                  scale: str, png: str | Path) -> None:
    """Rule ``figure``: one catalogue figure (PNG and PDF) from the tables it reads."""
    from postrisk.report.scores import write_figure

    for path in write_figure(figure, tables, scores, scale, png):
        logger.info("wrote %s", path)


def study_units(step: str, units: Sequence, n_threads: int = 1,
                accelerator: Mapping | None = None) -> None:
    """One job of a study's unit stage (the study rules' ``params.jobs``): the step its
    registration names (:class:`postrisk.grid.study.UnitStage`)."""
    from postrisk.grid.study import resolve

    resolve(step)(units, n_threads=n_threads, accelerator=accelerator)


def study_summary(step: str, inputs: Mapping[str, Sequence[str | Path]],
                  out: Mapping[str, str | Path], settings: Mapping, scale: str) -> None:
    """A study's summary (rule ``<study>``): its tables and figures from its inputs, by the step
    its registration names (:class:`postrisk.grid.study.Study`)."""
    from postrisk.grid.study import resolve

    resolve(step)(inputs, out, settings, scale)


def report_page(html: str | Path, manifest: str | Path, contents: Sequence, scale: str,
                config: Mapping, deviations: str | Path, settings: Mapping,
                title: str = "postrisk report") -> None:
    """Rules ``report`` and ``studies_report``: the HTML page of the catalogue's shown tables
    and figures (``contents``)."""
    from postrisk.report.scores import write_report_page

    shown = write_report_page(html, manifest, contents, scale, config, deviations, settings,
                              title)
    logger.info("report %s: %d tables, %d figures", html, len(shown["tables"]),
                len(shown["figures"]))


def pack_release(instances: str | Path, tasks: Sequence[str | Path], task_keys: Sequence,
                 covariates: Mapping[str, str | Path], priors: Mapping[tuple[str, str], str | Path],
                 documents: Sequence[str | Path], out_dir: str | Path, settings: Mapping,
                 scale: str, config_digest: str) -> dict:
    """Rule ``release``: the valid instances of the checks' instance table packed into
    ``out_dir`` with the per-dataset artefacts, the documents and the manifest
    (:func:`postrisk.release.pack.build_release`). ``tasks``: the task stores as the workflow
    resolved them, one per :class:`~postrisk.tasks.key.TaskKey` of ``task_keys``;
    ``covariates``: dataset → store; ``priors``: (dataset, prior) → prior file."""
    from postrisk.release.pack import build_release, release_instances

    stores = {key: Path(p) for key, p in zip(task_keys, tasks, strict=True)}
    table = pd.read_csv(instances)
    offered = release_instances(table, stores.__getitem__)
    return build_release(offered, {d: Path(p) for d, p in covariates.items()},
                         {tuple(k): Path(p) for k, p in priors.items()}, out_dir,
                         documents=[Path(d) for d in documents], scale=scale,
                         config_digest=config_digest, max_bytes=int(settings["max_bytes"]),
                         max_files=int(settings["max_files"]),
                         base_url=settings.get("base_url"))


def download_release(settings: Mapping, out: str | Path) -> None:
    """Rule ``download``: the release at ``release.base_url`` into ``release.download_dir``
    (``out`` is its manifest, moved into place last)."""
    from postrisk.release import download_settings
    from postrisk.release.download import download_release as download

    settings = download_settings(settings)
    download(settings["base_url"], Path(out).parent, datasets=settings["datasets"],
             priors=settings["priors"], retries=int(settings["retries"]),
             timeout_s=float(settings["timeout_s"]))
