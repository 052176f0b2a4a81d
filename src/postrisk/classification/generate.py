"""Building one classification instance (docs/classification.md): the training rows by coverage
scenario, K latents f* from the prior (GP or network: :mod:`postrisk.classification.priors`) at
the calibrated amplitude, the temperature field, labels y ~ Cat(softmax(f*/τ)) at the training
and evaluation rows, then the reference posterior by NUTS and its diagnostics per point and
class, of π and of f.

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
from postrisk.classification.nuts import ClassificationPosterior
from postrisk.classification.store import CLASSIFICATION_SCHEMA_VERSION, FAMILY
from postrisk.classification.temperature import fit_temperature_field
from postrisk.core import seeding
from postrisk.core.io import array_digest, digest, json_attr, library_versions
from postrisk.covariates.build import Covariates
from postrisk.tasks.coverage import select_training
from postrisk.tasks.diagnostics import (
    batch_means_mcse_var,
    covered_central,
    rank_of_truth,
    rhat_and_ess,
)

logger = logging.getLogger(__name__)

def draw_labels(probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One label per row of ``probs`` (n, K), y ~ Cat(probs), by inverting the CDF at a
    uniform."""
    u = rng.uniform(size=probs.shape[0])
    cdf = np.cumsum(probs, axis=1)
    return np.minimum((u[:, None] > cdf).sum(axis=1), probs.shape[1] - 1).astype(np.int64)


def prior_amplitude(prior, params: Mapping, x_pool: np.ndarray, key: ClassificationKey,
                    target: float, n_draws: int) -> tuple[float, float]:
    """(A, share reached) for the instance's (dataset, prior, K): ``n_draws`` unit-amplitude
    prior draws of the K latents at the evaluation pool (:mod:`~postrisk.classification.
    amplitude`), from the stream shared by every instance of that (dataset, prior, K). The
    answer is a function of its inputs, kept for the process: a job's further instances of the
    same (dataset, prior, K) reuse it."""
    memo = (key.dataset, key.prior, key.classes, float(target), int(n_draws), digest(
        dict(params)), array_digest((x_pool, np.float64)))
    if memo not in _AMPLITUDES:
        unit = prior.unit_draws(params, x_pool,
                                amplitude_rng(key.dataset, key.prior, key.classes), n_draws,
                                key.classes)
        _AMPLITUDES[memo] = calibrate_amplitude(unit, target)
    return _AMPLITUDES[memo]


#: :func:`prior_amplitude`'s answers in this process.
_AMPLITUDES: dict[tuple, tuple[float, float]] = {}


def evaluation_rows(dataset: str, pool: np.ndarray, cap: int | None) -> np.ndarray:
    """The instance's evaluation rows: the dataset's evaluation pool, or, with ``cap`` below
    its size, ``cap`` of its rows drawn without replacement from a stream of the dataset's own
    (the same rows for every instance of the dataset), in pool order. The temperature field and
    the amplitude are set over the whole pool either way."""
    pool = np.asarray(pool)
    if cap is None or int(cap) >= pool.size:
        return pool
    chosen = seeding.rng("classification_eval_rows", dataset).choice(pool.size, size=int(cap),
                                                                     replace=False)
    return pool[np.sort(chosen)]


def point_checks(draws: np.ndarray, truth: np.ndarray, chains: int,
                 mcse: bool = True) -> dict[str, np.ndarray]:
    """Per (evaluation point, class): the rank of the truth among the D draws, whether it lies
    in their central 90% interval, the relative MCSE of their variance (batch means) and, with
    several chains, R̂ and bulk ESS. ``draws`` (D, n_eval, K) chain-major, ``truth``
    (n_eval, K)."""
    d, n_eval, k = draws.shape
    flat, true = draws.reshape(d, -1), np.asarray(truth).reshape(-1)
    checks = {"rank_true": rank_of_truth(flat, true).astype(np.int32),
              "covered90": covered_central(flat, true, 0.9)}
    if mcse:
        checks["mcse_var"] = batch_means_mcse_var(flat)
    if chains > 1:
        checks["rhat"], checks["ess"] = rhat_and_ess(flat, chains)
    return {name: values.reshape(n_eval, k) for name, values in checks.items()}


def build_classification_task(key: ClassificationKey, cov: Covariates, prior_params: Mapping,
                              n: int, settings: Mapping) -> xr.Dataset:
    """The instance ``key``'s store (:func:`build_instance`'s)."""
    return build_instance(key, cov, prior_params, n, settings)[0]


def build_instance(key: ClassificationKey, cov: Covariates, prior_params: Mapping, n: int,
                   settings: Mapping) -> tuple[xr.Dataset, ClassificationPosterior]:
    """The instance ``key``'s store and its posterior (with the latent draws, which the store
    does not keep): ``prior_params`` are the dataset's regression prior of
    ``key.prior`` (the GP's kernel and scale constant ``a``; the network's ``a``, hidden units
    and reference inputs), ``n`` the training size, ``settings`` config
    ``families.classification`` (``temperature_strength``, ``entropy_share``,
    ``amplitude_draws``, ``posterior``: the NUTS settings per prior)."""
    from postrisk.classification.priors import latent_prior

    prior = latent_prior(key.prior)
    start = time.perf_counter()
    rng = key.streams()
    ds = cov.ds
    x, score = ds["x"].values, ds["pc1_score"].values
    pool, candidate_index = cov.eval_index, cov.candidate_index
    eval_index = evaluation_rows(key.dataset, pool, settings.get("n_eval_cap"))
    positions = select_training(cov.shell[candidate_index], n, key.coverage, rng["training"])
    train_index = candidate_index[positions]
    pool_scores = score[pool]
    field = fit_temperature_field(key.noise, pool_scores, settings["temperature_strength"])
    tau_eval = field.temperature(score[eval_index], pool_scores)
    tau_train = field.temperature(score[train_index], pool_scores)
    a = float(prior_params["a"])
    amplitude, share = prior_amplitude(prior, prior_params, x[pool], key,
                                       settings["entropy_share"], settings["amplitude_draws"])
    x_all = np.concatenate([x[eval_index], x[train_index]])
    f_true = prior.draw(prior_params, amplitude, x_all, rng["truth"], key.classes)
    n_eval = eval_index.size
    f_eval, f_train = f_true[:n_eval], f_true[n_eval:]
    prob_eval = class_probabilities(f_eval, tau_eval)
    prob_train = class_probabilities(f_train, tau_train)
    labels_train = draw_labels(prob_train, rng["labels"])
    labels_eval = draw_labels(prob_eval, rng["labels"])
    sample_s = time.perf_counter() - start
    posterior_settings = dict(settings["posterior"][key.prior])
    seed = int(rng["posterior"].integers(2**31 - 1))
    result = prior.posterior(prior_params, amplitude, x[train_index], labels_train, tau_train,
                             x[eval_index], key.classes, seed, posterior_settings)
    draws = class_probabilities(result.latent_eval, tau_eval)  # (D, n_eval, K)
    stored = draws.astype(np.float32)
    checks = point_checks(stored, prob_eval, result.chains)
    latent = point_checks(result.latent_eval, f_eval, 1, mcse=False)
    per_class = {
        **{name: (("eval", "class"), values) for name, values in checks.items()},
        **{f"{name}_latent": (("eval", "class"), values) for name, values in latent.items()},
    }
    seconds = time.perf_counter() - start
    rhat = f"; max R̂ {checks['rhat'].max():.3f}" if "rhat" in checks else ""
    logger.info("[%s] n = %d, n_eval = %d, K = %d, amplitude %.3f (prior entropy share %.3f); "
                "%d draws in %.1f s%s; 90%% coverage of π* %.3f", key.label, n, n_eval,
                key.classes, amplitude, share, stored.shape[0], seconds, rhat,
                checks["covered90"].mean())
    store = xr.Dataset(
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
            "latent_mean": (("eval", "class"), result.latent_eval.mean(axis=0)),
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
    return store, result
