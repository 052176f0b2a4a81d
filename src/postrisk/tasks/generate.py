"""Generating one task instance (paper App. B.5; docs/design.md, "Task instances"): the sample,
then the posterior.

Random numbers: a ``SeedSequence`` from a stable hash of (dataset, prior, noise, coverage, seed),
spawned into independent streams for the training inputs, the ground truth, the noise and the
posterior sampler; an instance regenerates bit-identically.
"""

from __future__ import annotations

import json
import logging
import time
from datetime import UTC, datetime

import numpy as np
import xarray as xr

from postrisk.core.io import digest, json_attr, library_versions
from postrisk.covariates.build import Covariates
from postrisk.covariates.registry import get_dataset
from postrisk.priors.base import get_prior
from postrisk.tasks.coverage import select_training
from postrisk.tasks.diagnostics import instance_point_checks, loglik_rank
from postrisk.tasks.key import TaskKey
from postrisk.tasks.noise import NOISE_STRENGTH, fit_noise_model
from postrisk.tasks.store import TASK_SCHEMA_VERSION

__all__ = ["TaskKey", "build_sample", "build_task"]

logger = logging.getLogger(__name__)


def build_sample(key: TaskKey, cov: Covariates, prior_params: dict, n: int,
                 config_digest: str = "", noise_strength: float = NOISE_STRENGTH) -> xr.Dataset:
    """Training inputs by scenario, f* jointly at the evaluation and training rows, noisy y.

    ``config_digest``: digest of the config sections that determine the sample (the sizes and
    the prior's prior settings, :func:`postrisk.tasks.key.config_digest`).
    ``noise_strength``: the strength ``s`` of the noise mode (:func:`~postrisk.tasks.noise.
    fit_noise_model`); the pipeline passes the config's ``noise_model.strength`` (whose
    default equals ``NOISE_STRENGTH``), ``benchmarks/noise_baseline.py`` varies it. It
    changes only the noise variances and y.
    """
    start = time.perf_counter()
    spec = get_dataset(key.dataset)
    rng = key.streams()
    ds = cov.ds
    x, score = ds["x"].values, ds["pc1_score"].values
    eval_index, candidate_index = cov.eval_index, cov.candidate_index
    positions = select_training(cov.shell[candidate_index], n, key.coverage, rng["training"])
    train_index = candidate_index[positions]
    pool_scores = score[eval_index]
    noise = fit_noise_model(key.noise, pool_scores, spec.noise_to_signal,
                            strength=noise_strength)
    noise_var_eval = noise.variance(score[eval_index], pool_scores)
    noise_var_train = noise.variance(score[train_index], pool_scores)
    prior = get_prior(key.prior)
    truth_info: dict = {}
    f_true = prior.sample(prior_params, np.concatenate([x[eval_index], x[train_index]]),
                          rng["truth"], info=truth_info)
    n_eval = eval_index.size
    f_eval, f_train = f_true[:n_eval], f_true[n_eval:]
    y_train = f_train + np.sqrt(noise_var_train) * rng["noise"].standard_normal(n)
    seconds = time.perf_counter() - start
    logger.info("[%s] sample: n = %d, n_eval = %d, mean σ²_ε(eval) = %.4f, SD f*(eval) = %.3f",
                key.label, n, n_eval, noise_var_eval.mean(), f_eval.std())
    features = ds["feature"].values
    return xr.Dataset(
        data_vars={
            "x_train": (("train", "feature"), x[train_index]),
            "train_index": (("train",), train_index.astype(np.int64)),
            "y_train": (("train",), y_train),
            "noise_var_train": (("train",), noise_var_train),
            "f_true_train": (("train",), f_train),
            "shell_train": (("train",), cov.shell[train_index].astype(np.int8)),
            "x_eval": (("eval", "feature"), x[eval_index]),
            "eval_index": (("eval",), eval_index.astype(np.int64)),
            "shell_eval": (("eval",), cov.shell[eval_index].astype(np.int8)),
            "noise_var_eval": (("eval",), noise_var_eval),
            "f_true_eval": (("eval",), f_eval),
        },
        coords={"feature": features},
        attrs={
            "schema_version": TASK_SCHEMA_VERSION,
            "store_kind": "sample",
            "dataset": key.dataset, "prior": key.prior, "noise": key.noise,
            "coverage": key.coverage, "seed": key.seed,
            "a": float(prior_params["a"]),
            "noise_model": json_attr(noise.to_dict()),
            "prior_params": json_attr(prior_params),
            "n": int(n), "n_eval": int(n_eval),
            "noise_to_signal": float(spec.noise_to_signal),
            "covariates_sha256": ds.attrs.get("raw_sha256", ""),
            "config_digest": config_digest,
            "f_true_sampler": json_attr(truth_info),
            "versions": json_attr(library_versions()),
            "timings": json_attr({"sample_s": round(seconds, 3)}),
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
        },
    )


def build_task(sample: xr.Dataset, settings: dict) -> xr.Dataset:
    """Condition the same prior on the sample (noise variances known): D draws at eval + train.

    ``settings``: the prior's sampler settings (config ``posterior.<prior>``; GP: ``draws``).
    The task store's ``config_digest`` covers the sample's digest and ``settings``; the sample's
    own is kept as ``sample_config_digest``. The draws are stored as float32; R̂ and ESS are
    computed from that stored array (recomputing them from the store gives the stored values
    exactly), the other point checks from the float64 draws.
    """
    start = time.perf_counter()
    key = TaskKey.from_attrs(sample.attrs)
    params = json.loads(sample.attrs["prior_params"])
    prior = get_prior(key.prior)
    x_eval, x_train = sample["x_eval"].values, sample["x_train"].values
    n_eval = x_eval.shape[0]
    result = prior.posterior(params, x_train, sample["y_train"].values,
                             sample["noise_var_train"].values, x_eval,
                             key.streams()["posterior"], settings)
    n_draws = result.draws.shape[0]
    draws_eval = result.draws[:, :n_eval]
    mean, var = result.mean[:n_eval], result.var[:n_eval]
    # stored as float32; R̂ and ESS come from exactly these, so a store reproduces them
    stored_eval = draws_eval.astype(np.float32)
    checks = instance_point_checks(draws_eval, sample["f_true_eval"].values, result.chains,
                                   rhat_draws=stored_eval)
    seconds = time.perf_counter() - start
    rhat = f"; max R̂ {checks['rhat'].max():.3f}" if "rhat" in checks else ""
    logger.info("[%s] posterior (%s): %d draws in %.1f s%s; 90%% coverage %.3f; corr(m, f*) %.3f",
                key.label, key.prior, n_draws, seconds, rhat, checks["covered90"].mean(),
                np.corrcoef(mean, sample["f_true_eval"].values)[0, 1])
    timings = {**json.loads(sample.attrs["timings"]), "posterior_s": round(seconds, 3)}
    extra = {name: (("eval",), values[:n_eval]) for name, values in result.diagnostics.items()}
    extra.update({name: (("eval",), checks[name]) for name in ("rhat", "ess") if name in checks})
    task = sample.assign(
        posterior_draws=(("draw", "eval"), stored_eval),
        posterior_draws_train=(("draw", "train"), result.draws[:, n_eval:].astype(np.float32)),
        posterior_mean=(("eval",), mean.astype(np.float64)),
        posterior_var=(("eval",), var.astype(np.float64)),
        rank_true=(("eval",), checks["rank_true"].astype(np.int32)),
        covered90=(("eval",), checks["covered90"]),
        mcse_var=(("eval",), checks["mcse_var"]),
        **extra,
    )
    rank_ll = loglik_rank(result.draws[:, n_eval:], sample["f_true_train"].values,
                          sample["y_train"].values, sample["noise_var_train"].values)
    sample_digest = sample.attrs.get("config_digest", "")
    task.attrs.update({"store_kind": "task", "sampler_settings": json_attr(result.settings),
                       "sample_config_digest": sample_digest,
                       "config_digest": digest({"sample": sample_digest,
                                                f"posterior.{key.prior}": settings}),
                       "chains": int(result.chains),
                       "rank_loglik": rank_ll,
                       "timings": json_attr(timings),
                       "created": datetime.now(UTC).isoformat(timespec="seconds")})
    return task
