"""Oracle targets (paper App. A, B.6; docs/design.md, "Oracle targets"). Pure functions on
arrays of evaluation points.

Under squared loss, for a point prediction â(x) and the reference posterior with mean m_S and
variance σ²_f:

- AU = σ²_ε(x) (the generating noise variance);
- posterior variance σ²_f(x);  deployment gap (â − m_S)²;
- **posterior excess risk** EU = σ²_f + (â − m_S)² (the primary EU target);
- pointwise excess risk (â − f*)² (the fixed-truth, risk-based EU);
- total = AU + EU.

For a Gaussian predictive N(μ̂, ŝ²) the CRPS and log-score risks decompose into AU +
generalized variance + deployment gap (App. A.3/A.4). With a Gaussian reference posterior (GP
instances) all three terms have closed forms (``*_gaussian``); with D posterior draws (HBART,
BNN) the reference predictive is the mixture of the draws, and the terms are exact for that
mixture (``*_mixture``; Monte Carlo only through the draws themselves, as every target of those
instances). :class:`ReferencePredictive` holds either and gives each loss's EU targets
(:data:`LOSS_EU_TARGETS`: the posterior excess risk and the generalized variance).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr, xlogy

SQRT_PI = np.sqrt(np.pi)
EU_TARGETS = ("posterior_excess_risk", "posterior_variance", "pointwise_excess_risk")


def deployment_gap(pred_mean, posterior_mean) -> np.ndarray:
    return (np.asarray(pred_mean) - np.asarray(posterior_mean)) ** 2


def posterior_excess_risk(pred_mean, posterior_mean, posterior_var) -> np.ndarray:
    """EU_S(â; x) = σ²_f(x) + (â(x) − m_S(x))² (App. B.6)."""
    return np.asarray(posterior_var) + deployment_gap(pred_mean, posterior_mean)


def pointwise_excess_risk(pred_mean, f_true) -> np.ndarray:
    return (np.asarray(pred_mean) - np.asarray(f_true)) ** 2


def eu_targets(pred_mean, posterior_mean, posterior_var, f_true) -> dict[str, np.ndarray]:
    """The three EU targets of a method's mean prediction, keyed as in :data:`EU_TARGETS`."""
    shapes = {np.shape(v) for v in (pred_mean, posterior_mean, posterior_var, f_true)}
    if len(shapes) != 1:
        raise ValueError(f"pred_mean, posterior_mean, posterior_var and f_true differ in shape: "
                         f"{shapes}")
    return {
        "posterior_excess_risk": posterior_excess_risk(pred_mean, posterior_mean, posterior_var),
        "posterior_variance": np.asarray(posterior_var, dtype=float).copy(),
        "pointwise_excess_risk": pointwise_excess_risk(pred_mean, f_true),
    }


def total_risk(pred_mean, posterior_mean, posterior_var, noise_var) -> np.ndarray:
    return np.asarray(noise_var) + posterior_excess_risk(pred_mean, posterior_mean, posterior_var)


# -- CRPS (App. A.3) ---------------------------------------------------------------------------

def mean_abs_normal(mu, var) -> np.ndarray:
    """E|X| for X ~ N(mu, var)."""
    mu = np.asarray(mu, dtype=float)
    sd = np.sqrt(np.asarray(var, dtype=float))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(sd > 0, mu / sd, 0.0)
    return np.where(sd > 0, sd * np.sqrt(2 / np.pi) * np.exp(-0.5 * t**2) + mu * (2 * ndtr(t) - 1),
                    np.abs(mu))


def crps_decomposition_gaussian(pred_mean, pred_var, posterior_mean, posterior_var,
                                noise_var) -> dict[str, np.ndarray]:
    """Exact CRPS risk terms for a Gaussian predictive under a Gaussian reference posterior.

    With v = σ²_f + σ²_ε:  AU = σ_ε/√π;  generalized variance = (√v − σ_ε)/√π;
    deployment gap = E|N(m − μ̂, v + ŝ²)| − √v/√π − ŝ/√π.
    """
    noise_sd = np.sqrt(noise_var)
    v = np.asarray(posterior_var) + np.asarray(noise_var)
    au = noise_sd / SQRT_PI
    gv = (np.sqrt(v) - noise_sd) / SQRT_PI
    gap = (mean_abs_normal(np.asarray(posterior_mean) - pred_mean, v + pred_var)
           - np.sqrt(v) / SQRT_PI - np.sqrt(pred_var) / SQRT_PI)
    return {"aleatoric": au, "generalized_variance": gv, "deployment_gap": gap,
            "total": au + gv + gap}


# -- log score (App. A.4) ----------------------------------------------------------------------

def log_score_decomposition_gaussian(pred_mean, pred_var, posterior_mean, posterior_var,
                                     noise_var) -> dict[str, np.ndarray]:
    """Exact log-score risk terms: AU = ½log(2πeσ²_ε), GV = ½log(1 + σ²_f/σ²_ε),
    deployment gap = KL(N(m, v) ‖ N(μ̂, ŝ²)) with v = σ²_f + σ²_ε."""
    noise_var = np.asarray(noise_var, dtype=float)
    v = np.asarray(posterior_var) + noise_var
    au = 0.5 * np.log(2 * np.pi * np.e * noise_var)
    gv = 0.5 * np.log1p(np.asarray(posterior_var) / noise_var)
    gap = 0.5 * (np.log(pred_var / v) + (v + (np.asarray(pred_mean) - posterior_mean) ** 2)
                 / pred_var - 1)
    return {"aleatoric": au, "generalized_variance": gv, "deployment_gap": gap,
            "total": au + gv + gap}


# -- a D-draw reference posterior: the mixture p̄ = (1/D) Σ_d N(f_d, σ²_ε) ---------------------

#: Grid spacing of the quadrature over y, in units of σ_ε. The integrands are smooth mixtures of
#: Gaussians (densities, CDFs) of width σ_ε, for which the trapezoid rule converges like
#: exp(−c/h²); p̄ log p̄ less so where the components thin out: at h = σ_ε/2 its error reached
#: 1e−8 relative, at σ_ε/4 it stays below 1e−12 (tested against adaptive quadrature).
GRID_STEP = 0.25
#: How far past the outermost draw the grid reaches, in σ_ε (Φ(−8) ≈ 6e−16).
GRID_REACH = 8.0
#: Most grid points per evaluation point; beyond it the step widens (only where the draws span
#: more than 1,000 σ_ε, far beyond any noise level of the suite).
GRID_MAX = 4096


def mixture_entropies(draws, noise_var) -> tuple[np.ndarray, np.ndarray]:
    """Per evaluation point, the CRPS entropy ½E|Y − Y'| = ∫Ḡ(1 − Ḡ)dy and the differential
    entropy H(p̄) = −∫p̄ log p̄ dy of the posterior predictive mixture p̄ = (1/D) Σ_d N(f_d, σ²_ε)
    of the D draws (``draws``: (D, m); ``noise_var``: (m,)), by the trapezoid rule on a grid
    from the lowest draw − 8σ_ε to the highest + 8σ_ε in steps of σ_ε/4.

    Exact for the D-component mixture (to rounding); as an estimate of the posterior's own
    value, the Monte Carlo error is the draws'."""
    draws = np.asarray(draws, dtype=np.float64)
    sd = np.sqrt(np.asarray(noise_var, dtype=np.float64))
    if draws.ndim != 2 or sd.shape != (draws.shape[1],) or not np.all(sd > 0):
        raise ValueError(f"draws must be (D, m) and noise_var (m,) positive; got "
                         f"{draws.shape} and {sd.shape}")
    m = draws.shape[1]
    crps_entropy, entropy = np.empty(m), np.empty(m)
    lo = draws.min(axis=0) - GRID_REACH * sd
    hi = draws.max(axis=0) + GRID_REACH * sd
    for i in range(m):
        n_grid = int(min(GRID_MAX, np.ceil((hi[i] - lo[i]) / (GRID_STEP * sd[i])) + 1))
        y = np.linspace(lo[i], hi[i], n_grid)
        z = (y[None, :] - draws[:, i, None]) / sd[i]
        cdf = ndtr(z).mean(axis=0)
        density = np.exp(-0.5 * z**2).mean(axis=0) / (sd[i] * np.sqrt(2 * np.pi))
        crps_entropy[i] = np.trapezoid(cdf * (1 - cdf), y)
        entropy[i] = -np.trapezoid(xlogy(density, density), y)
    return crps_entropy, entropy


def crps_decomposition_mixture(pred_mean, pred_var, draws, noise_var,
                               crps_entropy=None) -> dict[str, np.ndarray]:
    """CRPS risk terms of N(μ̂, ŝ²) under the mixture of the D draws, exact for the mixture:
    with P/2 = ½E|Y − Y'| (:func:`mixture_entropies`; pass ``crps_entropy`` to reuse it) and
    E|Y − X̂| = (1/D) Σ_d E|N(f_d − μ̂, σ²_ε + ŝ²)|: AU = σ_ε/√π, generalized variance =
    P/2 − σ_ε/√π, deployment gap = E|Y − X̂| − P/2 − ŝ/√π (App. A.3, "Computation")."""
    draws = np.asarray(draws, dtype=np.float64)
    noise_var = np.asarray(noise_var, dtype=np.float64)
    if crps_entropy is None:
        crps_entropy = mixture_entropies(draws, noise_var)[0]
    to_pred = mean_abs_normal(draws - np.asarray(pred_mean), noise_var + pred_var).mean(axis=0)
    au = np.sqrt(noise_var) / SQRT_PI
    gv = crps_entropy - au
    gap = to_pred - crps_entropy - np.sqrt(pred_var) / SQRT_PI
    return {"aleatoric": au, "generalized_variance": gv, "deployment_gap": gap,
            "total": au + gv + gap}


def log_score_decomposition_mixture(pred_mean, pred_var, draws, noise_var,
                                    entropy=None) -> dict[str, np.ndarray]:
    """Log-score risk terms of N(μ̂, ŝ²) under the mixture of the D draws, exact for the
    mixture: the risk E_p̄[−log q̂(Y)] needs only p̄'s mean and variance (the draws' mean, their
    variance + σ²_ε), the split needs H(p̄) (:func:`mixture_entropies`; pass ``entropy`` to
    reuse it): AU = ½log(2πeσ²_ε), generalized variance = H(p̄) − AU (the mutual information
    I(Y; F)), deployment gap = KL(p̄ ‖ q̂) = risk − H(p̄)."""
    draws = np.asarray(draws, dtype=np.float64)
    noise_var = np.asarray(noise_var, dtype=np.float64)
    if entropy is None:
        entropy = mixture_entropies(draws, noise_var)[1]
    mean, var = draws.mean(axis=0), draws.var(axis=0) + noise_var
    risk = 0.5 * (np.log(2 * np.pi * pred_var) + (var + (mean - pred_mean) ** 2) / pred_var)
    au = 0.5 * np.log(2 * np.pi * np.e * noise_var)
    return {"aleatoric": au, "generalized_variance": entropy - au,
            "deployment_gap": risk - entropy, "total": risk}


# -- the EU targets under the CRPS and the log score ---------------------------------------

#: The EU targets under the CRPS and the log score (App. A.3, A.4) of a Gaussian predictive
#: N(μ̂, ŝ²), μ̂ the method's mean and ŝ² = ÂU + ÊU: each loss's posterior excess risk
#: (generalized variance + deployment gap; squared loss: ``posterior_excess_risk``) and its
#: generalized variance (squared loss: ``posterior_variance``). Additions: the paper scores
#: squared loss only.
LOSS_EU_TARGETS = ("crps_posterior_excess_risk", "crps_generalized_variance",
                   "log_score_posterior_excess_risk", "log_score_generalized_variance")
#: The loss of each of :data:`LOSS_EU_TARGETS` (its prefix).
LOSSES = ("crps", "log_score")


@dataclass(frozen=True)
class ReferencePredictive:
    """The reference posterior predictive at the evaluation points, as the CRPS and log-score
    targets need it: Gaussian N(m, σ²_f + σ²_ε) where the reference posterior is (GP: closed
    forms) or the mixture of its D draws (HBART, BNN: exact for the mixture, whose entropies —
    the only prediction-free part — are computed once, by quadrature)."""

    noise_var: np.ndarray
    posterior_mean: np.ndarray | None = None
    posterior_var: np.ndarray | None = None
    draws: np.ndarray | None = None
    crps_entropy: np.ndarray | None = None
    entropy: np.ndarray | None = None

    @classmethod
    def gaussian(cls, posterior_mean, posterior_var, noise_var) -> ReferencePredictive:
        return cls(np.asarray(noise_var, dtype=np.float64),
                   posterior_mean=np.asarray(posterior_mean, dtype=np.float64),
                   posterior_var=np.asarray(posterior_var, dtype=np.float64))

    @classmethod
    def mixture(cls, draws, noise_var) -> ReferencePredictive:
        draws = np.asarray(draws, dtype=np.float64)
        noise_var = np.asarray(noise_var, dtype=np.float64)
        crps_entropy, entropy = mixture_entropies(draws, noise_var)
        return cls(noise_var, draws=draws, crps_entropy=crps_entropy, entropy=entropy)

    def decomposition(self, loss: str, pred_mean, pred_var) -> dict[str, np.ndarray]:
        """The risk terms (aleatoric, generalized_variance, deployment_gap, total) of the
        predictive N(``pred_mean``, ``pred_var``) under ``loss`` ("crps" or "log_score")."""
        if loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
        pred_mean = np.asarray(pred_mean, dtype=np.float64)
        pred_var = np.asarray(pred_var, dtype=np.float64)
        if self.draws is None:
            exact = (crps_decomposition_gaussian if loss == "crps"
                     else log_score_decomposition_gaussian)
            return exact(pred_mean, pred_var, self.posterior_mean, self.posterior_var,
                         self.noise_var)
        if loss == "crps":
            return crps_decomposition_mixture(pred_mean, pred_var, self.draws, self.noise_var,
                                              crps_entropy=self.crps_entropy)
        return log_score_decomposition_mixture(pred_mean, pred_var, self.draws, self.noise_var,
                                               entropy=self.entropy)

    def generalized_variance(self, loss: str) -> np.ndarray:
        """The generalized variance under ``loss``: no prediction enters it."""
        if self.draws is None:  # at the reference predictive itself (any would do)
            return self.decomposition(loss, self.posterior_mean,
                                      self.posterior_var + self.noise_var)["generalized_variance"]
        if loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
        if loss == "crps":
            return self.crps_entropy - np.sqrt(self.noise_var) / SQRT_PI
        return self.entropy - 0.5 * np.log(2 * np.pi * np.e * self.noise_var)

    def eu_targets(self, pred_mean, pred_var=None) -> dict[str, np.ndarray]:
        """The :data:`LOSS_EU_TARGETS` of the predictive N(``pred_mean``, ``pred_var``); with
        ``pred_var`` None (no predictive variance: a distance EU) the generalized variances
        only, and NaN excess risks."""
        out = {}
        for loss in LOSSES:
            if pred_var is None:
                out[f"{loss}_posterior_excess_risk"] = np.full(self.noise_var.shape, np.nan)
                out[f"{loss}_generalized_variance"] = self.generalized_variance(loss)
            else:
                terms = self.decomposition(loss, pred_mean, pred_var)
                out[f"{loss}_posterior_excess_risk"] = (terms["generalized_variance"]
                                                        + terms["deployment_gap"])
                out[f"{loss}_generalized_variance"] = terms["generalized_variance"]
        return out
