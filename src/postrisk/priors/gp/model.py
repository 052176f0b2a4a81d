"""The Gaussian-process prior: f ~ GP(0, a²k), k the dataset's kernel of the paper's
Table 4, fitted to its real target by type-II maximum likelihood, and ``a`` the scale constant
that gives prior draws a median SD of 1 over the evaluation pool (the rule of every prior,
:func:`postrisk.priors.base.scale_constant`). Conditioning is exact (:mod:`postrisk.gp.exact`).
"""

from __future__ import annotations

import logging
import time

import numpy as np

from postrisk.covariates.registry import get_dataset
from postrisk.gp.exact import sample_prior
from postrisk.gp.kernels import Kernel
from postrisk.priors.base import PosteriorResult, scale_constant

logger = logging.getLogger(__package__)  # one logger per prior: postrisk.priors.gp


def gp_scale_constant(kernel: Kernel, x_eval, rng: np.random.Generator,
                      n_draws: int = 100) -> float:
    """The scale constant (:func:`~postrisk.priors.base.scale_constant`) of ``n_draws``
    unit-scale prior draws f ~ N(0, k(x_eval, x_eval))."""
    return scale_constant(sample_prior(kernel, 1.0, x_eval, rng, size=n_draws))


class GaussianProcessPrior:
    """f ~ GP(0, a²k), k the dataset's Table 4 kernel family fitted to its real target."""

    name = "gp"

    def fit(self, dataset, x, target, eval_index, settings, rng):
        from postrisk.gp.fit import fit_kernel

        spec = get_dataset(dataset)
        if spec.kernel is None:
            raise ValueError(f"{dataset} has no GP kernel family (not a task dataset)")
        start = time.perf_counter()
        fit = fit_kernel(spec.kernel, x, target, max_rows=settings["fit_rows"], rng=rng,
                         max_iter=settings["fit_max_iter"], restarts=settings["fit_restarts"])
        a = gp_scale_constant(fit.kernel, x[eval_index], rng, n_draws=settings["scale_draws"])
        logger.info("[%s/gp] kernel %s fitted on %d rows (LML %.1f); scale constant a = %.4g",
                    dataset, "+".join(spec.kernel), fit.n_used, fit.log_marginal_likelihood, a)
        return {"prior": "gp", "kernel": fit.kernel.to_dict(), "a": float(a),
                "fit": fit.to_dict(), "seconds": time.perf_counter() - start,
                "fit_rows": settings["fit_rows"], "scale_draws": settings["scale_draws"]}

    def sample(self, params, x, rng, info=None):
        from postrisk.gp.exact import sample_prior
        from postrisk.gp.kernels import Kernel

        return sample_prior(Kernel.from_dict(params["kernel"]), params["a"], x, rng, size=1,
                            info=info)[0]

    def posterior_moments(self, params, x_train, y_train, noise_var_train, x):
        """The exact posterior mean and marginal variance of f at any inputs ``x`` (m, d), no
        draws: the moments :meth:`posterior` gives at the evaluation points, anywhere else
        (the OOD study's rows)."""
        from postrisk.gp.exact import posterior_moments

        return posterior_moments(Kernel.from_dict(params["kernel"]), params["a"], x_train,
                                 y_train, noise_var_train, x)

    def posterior(self, params, x_train, y_train, noise_var_train, x_eval, rng, settings):
        from postrisk.gp.exact import posterior_draws
        from postrisk.gp.kernels import Kernel

        n_draws = settings["draws"]
        factor: dict = {}
        draws, mean, var = posterior_draws(Kernel.from_dict(params["kernel"]), params["a"],
                                           x_train, y_train, noise_var_train,
                                           np.concatenate([x_eval, x_train]), n_draws, rng,
                                           info=factor)
        return PosteriorResult(draws=draws, mean=mean, var=var,
                               settings={"conditioning": "exact", "draws": int(n_draws),
                                         "precision": "float64", "backend": "scipy",
                                         "device_kind": "cpu",
                                         "covariance_factor": factor})
