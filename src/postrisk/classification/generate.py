"""Building one classification instance (docs/classification.md): the training rows by coverage
scenario, K latents f* from the GP prior at the calibrated amplitude, the temperature field,
labels y ~ Cat(softmax(f*/τ)) at the training and evaluation rows, then the reference posterior
by NUTS (:mod:`postrisk.classification.sampler`) and its diagnostics per point and class.

Random numbers: the key's own streams (:class:`~postrisk.classification.key.ClassificationKey`);
the amplitude's prior draws one stream per (dataset, prior, K). An instance regenerates
bit-identically on the same machine.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from datetime import UTC, datetime

import numpy as np
import xarray as xr

from postrisk.classification.amplitude import calibrate_amplitude
from postrisk.classification.key import ClassificationKey, amplitude_rng
from postrisk.classification.link import class_probabilities
from postrisk.classification.store import CLASSIFICATION_SCHEMA_VERSION, FAMILY
from postrisk.classification.temperature import fit_temperature_field
from postrisk.core.io import digest, json_attr, library_versions
from postrisk.covariates.build import Covariates
from postrisk.gp.exact import sample_prior
from postrisk.gp.kernels import Kernel
from postrisk.tasks.coverage import select_training
from postrisk.tasks.diagnostics import covered_central, rank_of_truth, rhat_and_ess

logger = logging.getLogger(__name__)

#: The priors a classification instance can use (the GP: NUTS on its whitened latents).
CLASSIFICATION_PRIORS = ("gp",)


def draw_labels(probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One label per row of ``probs`` (n, K), y ~ Cat(probs), by inverting the CDF at a
    uniform."""
    u = rng.uniform(size=probs.shape[0])
    cdf = np.cumsum(probs, axis=1)
    return np.minimum((u[:, None] > cdf).sum(axis=1), probs.shape[1] - 1).astype(np.int64)


def prior_amplitude(kernel: Kernel, a: float, x_pool: np.ndarray, key: ClassificationKey,
                    target: float, n_draws: int) -> tuple[float, float]:
    """(A, share reached) for the instance's (dataset, prior, K): ``n_draws`` unit-amplitude
    prior draws of the K latents at the evaluation pool (:mod:`~postrisk.classification.
    amplitude`)."""
    k = key.classes
    draws = sample_prior(kernel, a, x_pool, amplitude_rng(key.dataset, key.prior, k),
                         size=n_draws * k)
    unit = draws.reshape(n_draws, k, -1).transpose(0, 2, 1)
    return calibrate_amplitude(unit, target)


def build_classification_task(key: ClassificationKey, cov: Covariates, prior_params: Mapping,
                              n: int, settings: Mapping) -> xr.Dataset:
    """The instance ``key``'s store: ``prior_params`` are the dataset's GP prior (kernel and
    scale constant ``a``), ``n`` the training size, ``settings`` config
    ``families.classification`` (``temperature_strength``, ``entropy_share``,
    ``amplitude_draws``, ``posterior``)."""
    from postrisk.classification.sampler import gp_classification_posterior

    if key.prior not in CLASSIFICATION_PRIORS:
        raise ValueError(f"classification instances use the priors {CLASSIFICATION_PRIORS}, "
                         f"not {key.prior!r}")
    start = time.perf_counter()
    rng = key.streams()
    ds = cov.ds
    x, score = ds["x"].values, ds["pc1_score"].values
    eval_index, candidate_index = cov.eval_index, cov.candidate_index
    positions = select_training(cov.shell[candidate_index], n, key.coverage, rng["training"])
    train_index = candidate_index[positions]
    pool_scores = score[eval_index]
    field = fit_temperature_field(key.noise, pool_scores, settings["temperature_strength"])
    tau_eval = field.temperature(score[eval_index], pool_scores)
    tau_train = field.temperature(score[train_index], pool_scores)
    kernel, a = Kernel.from_dict(prior_params["kernel"]), float(prior_params["a"])
    amplitude, share = prior_amplitude(kernel, a, x[eval_index], key,
                                       settings["entropy_share"], settings["amplitude_draws"])
    scale = amplitude * a
    x_all = np.concatenate([x[eval_index], x[train_index]])
    f_true = sample_prior(kernel, scale, x_all, rng["truth"], size=key.classes).T
    n_eval = eval_index.size
    f_eval, f_train = f_true[:n_eval], f_true[n_eval:]
    prob_eval = class_probabilities(f_eval, tau_eval)
    prob_train = class_probabilities(f_train, tau_train)
    labels_train = draw_labels(prob_train, rng["labels"])
    labels_eval = draw_labels(prob_eval, rng["labels"])
    sample_s = time.perf_counter() - start
    posterior_settings = dict(settings["posterior"])
    seed = int(rng["posterior"].integers(2**31 - 1))
    result = gp_classification_posterior(kernel, scale, x[train_index], labels_train, tau_train,
                                         x[eval_index], key.classes, seed, posterior_settings)
    draws = class_probabilities(result.latent_eval, tau_eval)  # (D, n_eval, K)
    stored = draws.astype(np.float32)
    flat, truth = stored.reshape(stored.shape[0], -1), prob_eval.reshape(-1)
    checks = {"rank_true": rank_of_truth(flat, truth).astype(np.int32),
              "covered90": covered_central(flat, truth, 0.9)}
    if result.chains > 1:
        checks["rhat"], checks["ess"] = rhat_and_ess(flat, result.chains)
    per_class = {name: (("eval", "class"), values.reshape(n_eval, key.classes))
                 for name, values in checks.items()}
    seconds = time.perf_counter() - start
    rhat = f"; max R̂ {checks['rhat'].max():.3f}" if "rhat" in checks else ""
    logger.info("[%s] n = %d, n_eval = %d, K = %d, amplitude %.3f (prior entropy share %.3f); "
                "%d draws in %.1f s%s; 90%% coverage of π* %.3f", key.label, n, n_eval,
                key.classes, amplitude, share, stored.shape[0], seconds, rhat,
                checks["covered90"].mean())
    return xr.Dataset(
        data_vars={
            "x_train": (("train", "feature"), x[train_index]),
            "train_index": (("train",), train_index.astype(np.int64)),
            "labels_train": (("train",), labels_train),
            "shell_train": (("train",), cov.shell[train_index].astype(np.int8)),
            "temperature_train": (("train",), tau_train),
            "f_true_train": (("train", "class"), f_train),
            "prob_true_train": (("train", "class"), prob_train),
            "x_eval": (("eval", "feature"), x[eval_index]),
            "eval_index": (("eval",), eval_index.astype(np.int64)),
            "labels_eval": (("eval",), labels_eval),
            "shell_eval": (("eval",), cov.shell[eval_index].astype(np.int8)),
            "temperature_eval": (("eval",), tau_eval),
            "f_true_eval": (("eval", "class"), f_eval),
            "prob_true_eval": (("eval", "class"), prob_eval),
            "prob_draws": (("draw", "eval", "class"), stored),
            "prob_mean": (("eval", "class"), draws.mean(axis=0)),
            **per_class,
        },
        coords={"feature": ds["feature"].values, "class": np.arange(key.classes)},
        attrs={
            **key.as_dict(),
            "family": FAMILY,
            "schema_version": CLASSIFICATION_SCHEMA_VERSION,
            "store_kind": "classification_task",
            "n": int(n), "n_eval": int(n_eval),
            "a": a, "amplitude": amplitude,
            "entropy_share_target": float(settings["entropy_share"]),
            "entropy_share_prior": share,
            "prior_params": json_attr(dict(prior_params)),
            "temperature_field": json_attr(field.to_dict()),
            "config_digest": digest({"settings": dict(settings), "n": int(n)}),
            "sampler_settings": json_attr(result.settings),
            "sampler_summary": json_attr(result.summary),
            "chains": int(result.chains),
            "covariates_sha256": ds.attrs.get("raw_sha256", ""),
            "versions": json_attr(library_versions()),
            "timings": json_attr({"sample_s": round(sample_s, 3),
                                  "posterior_s": round(seconds - sample_s, 3)}),
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
        },
    )
