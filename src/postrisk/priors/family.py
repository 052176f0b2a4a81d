"""Prior families behind one interface: fit per dataset, draw f*, condition on a sample.

A family knows (1) how to fix its per-dataset parameters once, before any task (GP: kernel
hyper-parameters fitted to the real target, then the scale constant ``a``), (2) how to draw the
ground truth f* jointly at given rows, and (3) how to condition on a training sample with known
noise variances and return D posterior draws. Only the GP family exists so far; HBART and BNN
follow (issue 4).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from postrisk.covariates.registry import get_dataset


@dataclass
class PosteriorResult:
    """Posterior draws at the requested rows, exact moments where they exist, and settings."""

    draws: np.ndarray  # (D, m) float64
    mean: np.ndarray  # (m,)
    var: np.ndarray  # (m,)
    settings: dict[str, Any] = field(default_factory=dict)
    diagnostics: dict[str, np.ndarray] = field(default_factory=dict)  # per point, e.g. rhat


class PriorFamily(Protocol):
    name: str

    def fit(self, dataset: str, x: np.ndarray, target: np.ndarray, eval_index: np.ndarray,
            settings: dict, rng: np.random.Generator,
            progress: Callable[[str], None]) -> dict: ...

    def sample(self, params: dict, x: np.ndarray, rng: np.random.Generator) -> np.ndarray: ...

    def posterior(self, params: dict, x_train: np.ndarray, y_train: np.ndarray,
                  noise_var_train: np.ndarray, x_test: np.ndarray, n_draws: int,
                  rng: np.random.Generator, settings: dict,
                  progress: Callable[[str], None]) -> PosteriorResult: ...


class GaussianProcessFamily:
    """f ~ GP(0, a²k), k the dataset's Table 4 kernel family fitted to its real target."""

    name = "gp"

    def fit(self, dataset, x, target, eval_index, settings, rng, progress):
        from postrisk.priors.gp import scale_constant
        from postrisk.priors.kernels import fit_kernel

        spec = get_dataset(dataset)
        if spec.kernel is None:
            raise ValueError(f"{dataset} has no GP kernel family (not a task dataset)")
        start = time.perf_counter()
        fit = fit_kernel(spec.kernel, x, target, max_rows=settings["fit_rows"], rng=rng,
                         max_iter=settings["fit_max_iter"], restarts=settings["fit_restarts"],
                         progress=progress)
        a = scale_constant(fit.kernel, x[eval_index], rng, n_draws=settings["scale_draws"])
        progress(f"[{dataset}/gp] kernel {'+'.join(spec.kernel)} fitted on {fit.n_used} rows "
                 f"(LML {fit.log_marginal_likelihood:.1f}); scale constant a = {a:.4g}")
        return {"family": "gp", "kernel": fit.kernel.to_dict(), "a": float(a),
                "fit": fit.to_dict(), "seconds": time.perf_counter() - start,
                "fit_rows": settings["fit_rows"], "scale_draws": settings["scale_draws"]}

    def sample(self, params, x, rng):
        from postrisk.priors.gp import sample_prior
        from postrisk.priors.kernels import Kernel

        return sample_prior(Kernel.from_dict(params["kernel"]), params["a"], x, rng, size=1)[0]

    def posterior(self, params, x_train, y_train, noise_var_train, x_test, n_draws, rng,
                  settings, progress):
        from postrisk.priors.gp import posterior_draws
        from postrisk.priors.kernels import Kernel

        draws, mean, var = posterior_draws(Kernel.from_dict(params["kernel"]), params["a"],
                                           x_train, y_train, noise_var_train, x_test, n_draws,
                                           rng)
        return PosteriorResult(draws=draws, mean=mean, var=var,
                               settings={"conditioning": "exact", "draws": int(n_draws),
                                         "precision": "float64"})


FAMILIES: dict[str, PriorFamily] = {"gp": GaussianProcessFamily()}


def get_family(name: str) -> PriorFamily:
    if name not in FAMILIES:
        raise KeyError(f"prior family {name!r} is not implemented yet; implemented: "
                       f"{', '.join(FAMILIES)}")
    return FAMILIES[name]
