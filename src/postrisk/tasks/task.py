"""A task instance as a Python object (sbibm-style): its data, reference posterior and oracle.

>>> task = Task.load("results/tasks/diamonds/gp/smooth_monotone/balanced/0.zarr")
>>> method.fit(task.x_train, task.y_train)
>>> scores = score_prediction(task, method.predict(task.x_eval))  # postrisk.evaluation.scoring

A method sees only ``x_train``, ``y_train`` and ``x_eval``; everything else is the oracle's,
gathered in :attr:`Task.oracle`. ``postrisk.load_task`` opens a task from a released suite or
a store alike.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import xarray as xr

from postrisk.tasks import oracle
from postrisk.tasks.key import KEY_COLUMNS, TaskKey
from postrisk.tasks.store import validate_store


@dataclass(frozen=True)
class Oracle:
    """What only the oracle knows about an instance: the noise variances, the true function
    f*, and the reference posterior of f at the evaluation points (its draws, mean and
    variance). A method never sees any of it."""

    noise_var_train: np.ndarray
    noise_var_eval: np.ndarray
    f_true_train: np.ndarray
    f_true_eval: np.ndarray
    posterior_draws: np.ndarray
    posterior_mean: np.ndarray
    posterior_var: np.ndarray


@dataclass(frozen=True)
class Task:
    ds: xr.Dataset

    @classmethod
    def load(cls, path: str | Path) -> Task:
        return cls(validate_store(path, kind="task"))

    # -- what a method sees ------------------------------------------------------------------
    @property
    def x_train(self) -> np.ndarray:
        return self.ds["x_train"].values

    @property
    def y_train(self) -> np.ndarray:
        return self.ds["y_train"].values

    @property
    def x_eval(self) -> np.ndarray:
        return self.ds["x_eval"].values

    # -- the oracle ------------------------------------------------------------------------------
    @property
    def oracle(self) -> Oracle:
        return Oracle(**{name: self.ds[name].values for name in Oracle.__dataclass_fields__})

    @property
    def key(self) -> dict:
        return {k: self.ds.attrs[k] for k in KEY_COLUMNS}

    @property
    def noise_var_eval(self) -> np.ndarray:
        return self.ds["noise_var_eval"].values

    @property
    def f_true_eval(self) -> np.ndarray:
        return self.ds["f_true_eval"].values

    @property
    def posterior_mean(self) -> np.ndarray:
        return self.ds["posterior_mean"].values

    @property
    def posterior_var(self) -> np.ndarray:
        return self.ds["posterior_var"].values

    @property
    def posterior_draws(self) -> np.ndarray:
        return self.ds["posterior_draws"].values

    @property
    def shell_eval(self) -> np.ndarray:
        return self.ds["shell_eval"].values

    @property
    def heteroscedastic(self) -> bool:
        return self.ds.attrs["noise"] != "homoscedastic"

    @property
    def sampler_settings(self) -> dict:
        return json.loads(self.ds.attrs["sampler_settings"])

    def exact_posterior_at(self, x) -> tuple[np.ndarray, np.ndarray]:
        """The reference posterior's mean and variance of f at any inputs ``x`` (m, d) — beyond
        the evaluation points, e.g. the OOD study's rows — where the prior's posterior is exact
        (GP instances: the prior's ``posterior_moments``, conditioned on this instance's
        training data and noise variances; at ``x_eval`` it gives the stored ``posterior_mean``
        and ``posterior_var``). A ``ValueError`` for the sampled posteriors (HBART, BNN),
        whose draws exist only at the evaluation points."""
        from postrisk.priors.base import get_prior

        prior = get_prior(self.ds.attrs["prior"])
        if not hasattr(prior, "posterior_moments"):
            raise ValueError(f"the {self.ds.attrs['prior']} prior's reference posterior is a "
                             "set of draws at the evaluation points; its moments elsewhere "
                             "are known only for GP instances")
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.ds.sizes["feature"]:
            raise ValueError(f"x must have shape (m, {self.ds.sizes['feature']}), got "
                             f"{x.shape}")
        return prior.posterior_moments(json.loads(self.ds.attrs["prior_params"]),
                                       self.x_train, self.y_train,
                                       self.ds["noise_var_train"].values, x)

    def eu_targets(self, pred_mean: np.ndarray) -> dict[str, np.ndarray]:
        return oracle.eu_targets(pred_mean, self.posterior_mean, self.posterior_var,
                                 self.f_true_eval)

    @cached_property
    def reference_predictive(self) -> oracle.ReferencePredictive:
        """The reference posterior predictive at the evaluation points, for the CRPS and
        log-score targets: Gaussian where the prior's posterior is exact (GP), else the mixture
        of the stored draws (computed once per task object)."""
        from postrisk.priors.base import PRIOR_ENTRIES

        if PRIOR_ENTRIES[self.ds.attrs["prior"]].posterior == "exact":
            return oracle.ReferencePredictive.gaussian(self.posterior_mean, self.posterior_var,
                                                       self.noise_var_eval)
        return oracle.ReferencePredictive.mixture(self.posterior_draws, self.noise_var_eval)

    def loss_eu_targets(self, pred_mean: np.ndarray,
                        pred_var: np.ndarray | None) -> dict[str, np.ndarray]:
        """The EU targets under the CRPS and the log score (:data:`oracle.LOSS_EU_TARGETS`) of
        the predictive N(``pred_mean``, ``pred_var``); ``pred_var`` None: the generalized
        variances only (the excess risks NaN)."""
        return self.reference_predictive.eu_targets(pred_mean, pred_var)

    def target_mcse(self, pred_mean: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Per evaluation point, the Monte-Carlo standard error of the oracle targets from this
        store's draws (:func:`postrisk.tasks.quality.target_mcse`): ``posterior_variance`` and
        ``posterior_excess_risk`` of the prediction ``pred_mean`` (None: at the posterior
        mean)."""
        from postrisk.tasks.diagnostics import batch_means_mcse_mean
        from postrisk.tasks.quality import target_mcse

        return target_mcse(self.posterior_var, self.ds["mcse_var"].values,
                           batch_means_mcse_mean(self.posterior_draws), pred_mean,
                           self.posterior_mean)

    # -- what it says about itself ---------------------------------------------------------------
    def summary(self) -> list[tuple[str, str]]:
        """Its shape, provenance and diagnostics as (name, value) rows, what ``postrisk info``
        shows: the instance key, the sizes, the schema version, the library version and date
        that made it, the config digest, the sampler, the 90% interval coverage of the
        reference posterior, the rank of f*'s log-likelihood, the median MCSE of the variance,
        and where present, the max R̂ / min ESS and the variables a release left out."""
        ds, attrs = self.ds, self.ds.attrs
        versions = json.loads(attrs.get("versions", "{}"))
        sampler = json.loads(attrs.get("sampler_settings", "{}"))
        rows = [
            ("instance", TaskKey.from_attrs(attrs).label),
            ("shape", f"n = {ds.sizes['train']}, n_eval = {ds.sizes['eval']}, "
                      f"d = {ds.sizes['feature']}, draws = {ds.sizes['draw']} "
                      f"({attrs.get('chains')} chain(s))"),
            ("schema version", str(attrs["schema_version"])),
            ("made by", f"postrisk {versions.get('postrisk', '?')} on "
                        f"{attrs.get('created', '?')}"),
            ("config digest", str(attrs.get("config_digest"))),
            ("sampler", ", ".join(f"{k} {sampler[k]}" for k in ("backend", "device_kind")
                                  if k in sampler) or "?"),
            ("90% interval coverage", f"{float(np.mean(ds['covered90'].values)):.3f}"),
            ("rank of f*'s log-likelihood", f"{attrs.get('rank_loglik')} of {ds.sizes['draw']}"),
            ("median MCSE of the variance", f"{float(np.median(ds['mcse_var'].values)):.3g}"),
        ]
        if "rhat" in ds:
            rows.append(("max R̂ / min ESS", f"{float(ds['rhat'].max()):.4f} / "
                                             f"{float(ds['ess'].min()):.0f}"))
        if "released_without" in attrs:
            rows.append(("released without", ", ".join(json.loads(attrs["released_without"]))))
        return rows
