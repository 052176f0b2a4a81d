"""Heteroscedastic BART as a prior (:class:`HeteroscedasticBartPrior`): the tree prior
of :mod:`postrisk.priors.hbart.model` (fit: the scale constant; the ground truth f*),
conditioned by :mod:`postrisk.priors.hbart.sampler` (bartz, JAX x64 off)."""

from __future__ import annotations

import logging
import time

import numpy as np

from postrisk.priors.base import PosteriorResult
from postrisk.priors.hbart.model import TreePrior, hbart_scale_constant, sample_prior_draws
from postrisk.priors.hbart.sampler import posterior_draws

logger = logging.getLogger(__package__)  # one logger per prior: postrisk.priors.hbart

NAME = "hbart"


class HeteroscedasticBartPrior:
    """f = sum of ``num_trees`` bartz prior trees with leaves N(0, a²/num_trees)."""

    name = NAME

    def fit(self, dataset: str, x: np.ndarray, target: np.ndarray, eval_index: np.ndarray,
            settings: dict, rng: np.random.Generator) -> dict:
        """Scale constant from ``settings["scale_draws"]`` unit-scale draws over
        ``x[eval_index]``; ``target`` is ignored (no data-dependent defaults)."""
        del target
        start = time.perf_counter()
        prior = TreePrior(num_trees=int(settings["num_trees"]),
                          max_depth=int(settings["max_depth"]), base=float(settings["base"]),
                          power=float(settings["power"]),
                          n_cutpoints=int(settings["n_cutpoints"]))
        x_eval = np.asarray(x, dtype=np.float64)[np.asarray(eval_index)]
        a = hbart_scale_constant(prior, x_eval, rng, n_draws=int(settings["scale_draws"]))
        logger.info("[%s/hbart] %d trees, max depth %d, %d cutpoints; scale constant a = %.4g",
                    dataset, prior.num_trees, prior.max_depth, prior.n_cutpoints, a)
        return {"prior": NAME, "a": float(a), "num_trees": prior.num_trees,
                "max_depth": prior.max_depth, "base": prior.base, "power": prior.power,
                "n_cutpoints": prior.n_cutpoints, "scale_draws": int(settings["scale_draws"]),
                "seconds": time.perf_counter() - start}

    def sample(self, params: dict, x: np.ndarray, rng: np.random.Generator,
               info: dict | None = None) -> np.ndarray:
        """One draw of f* at the rows ``x`` (float64), by our sampler of bartz's tree prior."""
        if info is not None:
            info.update(method="tree prior draw (bartz's prior rules)")
        return sample_prior_draws(TreePrior.from_params(params), params["a"], x, rng, size=1)[0]

    def posterior(self, params: dict, x_train: np.ndarray, y_train: np.ndarray,
                  noise_var_train: np.ndarray, x_eval: np.ndarray, rng: np.random.Generator,
                  settings: dict) -> PosteriorResult:
        """bartz MCMC with tempered warm-up; draws at [x_eval; x_train], chain-major."""
        draws, record = posterior_draws(TreePrior.from_params(params), params["a"], x_train,
                                        y_train, noise_var_train, x_eval, rng, settings)
        return PosteriorResult.from_chains(draws, settings=record, diagnostics={})
