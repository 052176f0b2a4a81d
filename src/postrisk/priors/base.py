"""Priors behind one interface: fit per dataset, draw f*, condition on a sample.

A prior knows (1) how to fix its per-dataset parameters once, before any task (GP: kernel
hyper-parameters fitted to the real target, then the scale constant ``a``), (2) how to draw the
ground truth f* jointly at given rows, and (3) how to condition on a training sample with known
noise variances and return D posterior draws at the evaluation rows followed by the training
rows. Priors: ``gp`` (exact), ``hbart`` (bartz MCMC), ``bnn`` (NumPyro NUTS), one package
each (``postrisk.priors.<prior>``: the prior model, and for the MCMC priors the sampler and
the prior class over both); a prior is imported only when asked for (bartz needs JAX x64 off,
the BNN posterior needs it on: one prior per process). Every prior's scale constant ``a``
follows one rule, :func:`scale_constant`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from postrisk.core.lazy import Entry


@dataclass
class PosteriorResult:
    """Posterior draws at [evaluation rows; training rows], moments, sampler settings.

    ``draws`` is chain-major: with ``chains`` = C equal-length chains of S = D / C draws each,
    ``draws[c*S:(c+1)*S]`` is chain c in sampling order (the diagnostics — split-R̂, ESS,
    batch-means MCSE — rely on it). An exact sampler has ``chains = 1``. ``mean`` and ``var``
    are exact where they exist (GP), else the draws' moments. ``settings`` is JSON-able and
    records everything needed to rerun the sampler (per-stage temperatures and scales for
    tempered HBART, step sizes, …); ``diagnostics`` holds extra per-point arrays.
    """

    draws: np.ndarray  # (D, m) float64, m = n_eval + n_train
    mean: np.ndarray  # (m,)
    var: np.ndarray  # (m,)
    settings: dict[str, Any] = field(default_factory=dict)
    diagnostics: dict[str, np.ndarray] = field(default_factory=dict)  # per point
    chains: int = 1

    @classmethod
    def from_chains(cls, draws: np.ndarray, settings: dict[str, Any],
                    diagnostics: dict[str, np.ndarray] | None = None) -> PosteriorResult:
        """From MCMC draws shaped (chains, draws per chain, points): moments of the draws."""
        draws = np.asarray(draws, dtype=np.float64)
        if draws.ndim != 3:
            raise ValueError(f"expected (chains, draws, points) draws, got shape {draws.shape}")
        flat = draws.reshape(-1, draws.shape[-1])
        return cls(draws=flat, mean=flat.mean(axis=0), var=flat.var(axis=0, ddof=1),
                   settings=settings, diagnostics=diagnostics or {}, chains=draws.shape[0])


def training_targets(n_train: int, y_train, noise_var_train) -> tuple[np.ndarray, np.ndarray]:
    """y and the noise variances as float64 vectors of length ``n_train``; raises on a length
    mismatch, non-finite values or non-positive variances (the MCMC priors' input check)."""
    y = np.asarray(y_train, dtype=np.float64).reshape(-1)
    nv = np.asarray(noise_var_train, dtype=np.float64).reshape(-1)
    if y.shape[0] != n_train or nv.shape[0] != n_train:
        raise ValueError(f"x_train has {n_train} rows, y_train {y.shape[0]}, "
                         f"noise_var_train {nv.shape[0]}")
    if not (np.all(np.isfinite(y)) and np.all(np.isfinite(nv)) and np.all(nv > 0)):
        raise ValueError("y_train must be finite and noise_var_train finite and > 0")
    return y, nv


def scale_constant(unit_draws: np.ndarray) -> float:
    """The scale constant of every prior: ``unit_draws`` are independent prior draws of f with
    unit scale (a = 1), shaped (draws, evaluation rows); the SD of each draw over the rows
    (``np.std``, ddof 0, duplicate rows counted as rows); ``a = 1 / median SD``, so that draws
    with scale ``a`` have a median SD of 1 over the evaluation pool."""
    sd = np.std(np.asarray(unit_draws, dtype=np.float64), axis=1)
    med = float(np.median(sd))
    if not med > 0:
        raise ValueError("prior draws have zero spread over the evaluation points")
    return 1.0 / med


class Prior(Protocol):
    """What a prior provides (docs/design.md, "Priors" and "Task instances").

    ``fit``: per-dataset parameters fixed before any task (``settings`` = the config section
    ``<prior>_prior``; ``x`` all scaled covariate rows, ``target`` the real target, which only
    the GP uses); returns a JSON-able dict with at least ``prior`` and the scale constant ``a``.
    ``sample``: one draw of f* jointly at the rows ``x``; ``info`` (a dict), when given, receives
    how it was drawn (GP: which jitter step of the Cholesky factor, or the eigendecomposition
    fallback). ``posterior``: condition the same prior on (x_train, y_train) with the noise
    variances known; draws at [x_eval; x_train] (``settings`` = the config section
    ``posterior.<prior>``); the result's ``settings`` record what the sampler ran on.
    """

    name: str

    def fit(self, dataset: str, x: np.ndarray, target: np.ndarray, eval_index: np.ndarray,
            settings: dict, rng: np.random.Generator) -> dict: ...

    def sample(self, params: dict, x: np.ndarray, rng: np.random.Generator,
               info: dict | None = None) -> np.ndarray: ...

    def posterior(self, params: dict, x_train: np.ndarray, y_train: np.ndarray,
                  noise_var_train: np.ndarray, x_eval: np.ndarray, rng: np.random.Generator,
                  settings: dict) -> PosteriorResult: ...


@dataclass(frozen=True)
class PriorEntry(Entry):
    """A prior's registration: its class and what its reference posterior needs —
    ``posterior`` "exact" (closed form) or "mcmc" (the workflow's rules ``posterior_exact`` and
    ``posterior_mcmc``), ``accelerator`` whether that job wants a GPU."""

    posterior: str = "exact"


#: prior name → its entry; classes imported on first use (keeps bartz and NumPyro out of GP
#: jobs, and the workflow reads the declarations without importing any of them).
PRIOR_ENTRIES: dict[str, PriorEntry] = {
    "gp": PriorEntry("postrisk.priors.gp.model:GaussianProcessPrior", posterior="exact",
                      accelerator=False),
    "hbart": PriorEntry("postrisk.priors.hbart.prior:HeteroscedasticBartPrior",
                         posterior="mcmc", accelerator=True),
    "bnn": PriorEntry("postrisk.priors.bnn.prior:BayesianNeuralNetworkPrior",
                       posterior="mcmc", accelerator=True),
}


def get_prior(name: str) -> Prior:
    if name not in PRIOR_ENTRIES:
        raise KeyError(f"unknown prior {name!r}; known: {', '.join(PRIOR_ENTRIES)}")
    return PRIOR_ENTRIES[name].load()()
