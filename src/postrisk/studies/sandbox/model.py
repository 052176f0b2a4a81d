"""The closed-form 1-D sandbox in which the Bayes-optimal scorers of OOD detection, active
learning (BALD, expected error reduction), risk and regret reject different inputs.

Everything here is exact. The truth f* is the least-squares fit of a linear model on Gaussian
RBF features to the Rossellini function sin(0.2 / (x + 0.16)³) on a grid; the prior is the
Bayesian linear model on the same features, w ~ N(0, prior_sd² I), with the known
heteroscedastic Gaussian noise y = φ(x)ᵀw + σ(x) ε, so f* lies in the prior's support and the
posterior given a training sample is Gaussian in closed form. With v(x) the posterior variance
of f(x) (fixed dataset, Bayesian view), per input x:

* squared loss: A* = σ²(x), E* = v(x), T* = A* + E*;
* log loss: A* = ½ log(2πe σ²), T* = ½ log(2πe (σ² + v)) (the entropy of the predictive),
  E* = T* − A* = ½ log(1 + v / σ²), which is also BALD, the mutual information
  E_θ[KL(p(y | x, θ) ‖ p(y | x, D))];
* expected error reduction (squared loss): one more label at x leaves the posterior covariance
  Σ − Σφφᵀ Σ / (σ²(x) + v(x)) whatever its value y, so the integrated regret after it is
  ∫ v(t) p_te(t) dt − ∫ k(t, x)² / (σ²(x) + v(x)) p_te(t) dt, k the posterior covariance of f;
* OOD detection: the likelihood ratio p_ood(x) / p_id(x) of the input densities alone.

Densities live on an evaluation grid; integrals over x are quadrature sums with trapezoid weights
(:attr:`Sandbox.weights`: the test density's mass per grid point, summing to 1). Pure functions
on arrays, one frozen dataclass for the built environment; nothing here reads or writes files.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy import linalg

#: Offset of the Rossellini function sin(0.2 / (x + offset)³).
ROSSELLINI_OFFSET = 0.16
#: The scorers compared, each higher = rejected first, with their display names.
SCORERS = {"ood": "OOD likelihood ratio p_ood/p_id", "bald": "BALD (mutual information)",
           "eer": "Expected error reduction", "risk": "Risk T*", "regret": "Regret E*"}


def rossellini(x: np.ndarray) -> np.ndarray:
    """sin(0.2 / (x + 0.16)³): fast oscillations near 0, slow beyond about 0.4."""
    return np.sin(0.2 / (np.asarray(x, float) + ROSSELLINI_OFFSET) ** 3)


def feature_centres(count: int, domain: tuple[float, float], offset: float,
                    width: float) -> tuple[np.ndarray, np.ndarray]:
    """RBF centres equally spaced in log(x + offset) over the domain (dense where the target
    oscillates fast) and each one's width: ``width`` × the local spacing of the centres."""
    lo, hi = domain
    centres = np.exp(np.linspace(np.log(lo + offset), np.log(hi + offset), count)) - offset
    return centres, width * np.gradient(centres)


def rbf_features(x: np.ndarray, centres: np.ndarray, widths: np.ndarray) -> np.ndarray:
    """φ_k(x) = exp(−½ ((x − c_k) / w_k)²), one row per input."""
    z = (np.asarray(x, float)[:, None] - centres[None, :]) / widths[None, :]
    return np.exp(-0.5 * z * z)


def bump(x: np.ndarray, centre: float, width: float) -> np.ndarray:
    """exp(−½ ((x − centre) / width)²)."""
    return np.exp(-0.5 * ((np.asarray(x, float) - centre) / width) ** 2)


def trapezoid_weights(grid: np.ndarray) -> np.ndarray:
    """Quadrature weights of the trapezoid rule on a sorted grid (∑ w f ≈ ∫ f)."""
    steps = np.diff(grid)
    weights = np.zeros_like(grid)
    weights[:-1] += steps / 2.0
    weights[1:] += steps / 2.0
    return weights


def normalised_density(values: np.ndarray, quadrature: np.ndarray) -> np.ndarray:
    """``values`` scaled to integrate to 1 over the grid."""
    return values / float(np.sum(values * quadrature))


def sample_from_density(grid: np.ndarray, density: np.ndarray, n: int,
                        rng: np.random.Generator) -> np.ndarray:
    """``n`` draws from a density given on a grid (inverse CDF of its piecewise-linear
    cumulative integral)."""
    cdf = np.concatenate([[0.0], np.cumsum(np.diff(grid) * (density[1:] + density[:-1]) / 2)])
    return np.interp(rng.uniform(0.0, cdf[-1], n), cdf, grid)


def gaussian_linear_posterior(features: np.ndarray, y: np.ndarray, noise_var: np.ndarray,
                              prior_sd: float) -> tuple[np.ndarray, np.ndarray]:
    """Mean and covariance of w | D for w ~ N(0, prior_sd² I) and y_i ~ N(φ_iᵀ w, σ²_i)."""
    scaled = features / noise_var[:, None]
    precision = features.T @ scaled + np.eye(features.shape[1]) / prior_sd ** 2
    factor = linalg.cho_factor(precision, lower=True)
    cov = linalg.cho_solve(factor, np.eye(features.shape[1]))
    cov = (cov + cov.T) / 2.0
    return linalg.cho_solve(factor, scaled.T @ y), cov


def squared_loss_uncertainty(posterior_var: np.ndarray, noise_var: np.ndarray
                             ) -> dict[str, np.ndarray]:
    """T*, A*, E* under squared loss: A* = σ², E* = v, T* = σ² + v."""
    return {"total": noise_var + posterior_var, "aleatoric": np.asarray(noise_var, float),
            "epistemic": np.asarray(posterior_var, float)}


def log_loss_uncertainty(posterior_var: np.ndarray, noise_var: np.ndarray
                         ) -> dict[str, np.ndarray]:
    """T*, A*, E* under log loss: the predictive's entropy, the expected entropy of y | x, θ
    and their difference."""
    total = 0.5 * np.log(2 * np.pi * np.e * (noise_var + posterior_var))
    aleatoric = 0.5 * np.log(2 * np.pi * np.e * noise_var)
    return {"total": total, "aleatoric": aleatoric, "epistemic": total - aleatoric}


def bald(posterior_var: np.ndarray, noise_var: np.ndarray) -> np.ndarray:
    """The mutual information of y and θ at x, ½ log(1 + v / σ²) (Gaussian model)."""
    return 0.5 * np.log1p(np.asarray(posterior_var, float) / noise_var)


def expected_integrated_regret(posterior_cov_f: np.ndarray, noise_var: np.ndarray,
                               weights: np.ndarray) -> np.ndarray:
    """Per candidate x_j, the squared-loss regret integrated over the test density after one
    more label at x_j, in expectation over that label:
    ∑_t w_t (k(t, t) − k(t, j)² / (σ²_j + k(j, j))) (it does not depend on the label)."""
    v = np.diag(posterior_cov_f)
    reduction = (weights @ posterior_cov_f ** 2) / (noise_var + v)
    return float(weights @ v) - reduction


def ood_likelihood_ratio(p_ood: np.ndarray, p_id: np.ndarray) -> np.ndarray:
    """The Bayes-optimal OOD score p_ood(x) / p_id(x)."""
    return np.asarray(p_ood, float) / np.asarray(p_id, float)


@dataclass(frozen=True)
class SandboxSettings:
    """The sandbox's parameters (their one home is config ``studies.sandbox``, read by
    :meth:`from_config`; docs/design.md, "The 1-D sandbox")."""

    domain: tuple[float, float]
    grid_points: int
    n_features: int
    feature_offset: float
    feature_width: float
    prior_sd: float
    noise_low: float
    noise_high: float
    noise_centre: float
    noise_width: float
    n_train: int
    gap_centre: float
    gap_width: float
    gap_depth: float
    coverage: float
    n_lambdas: int
    seed: int

    @classmethod
    def from_config(cls, section: Mapping) -> SandboxSettings:
        """From config ``studies.sandbox`` (its nested keys; ``run`` is the planner's)."""
        features, noise, train = section["features"], section["noise"], section["training"]
        return cls(domain=tuple(section["domain"]), grid_points=int(section["grid_points"]),
                   n_features=int(features["count"]), feature_offset=float(features["offset"]),
                   feature_width=float(features["width"]), prior_sd=float(section["prior_sd"]),
                   noise_low=float(noise["low"]), noise_high=float(noise["high"]),
                   noise_centre=float(noise["centre"]), noise_width=float(noise["width"]),
                   n_train=int(train["n"]), gap_centre=float(train["gap_centre"]),
                   gap_width=float(train["gap_width"]), gap_depth=float(train["gap_depth"]),
                   coverage=float(section["coverage"]), n_lambdas=int(section["lambdas"]),
                   seed=int(section["seed"]))


@dataclass(frozen=True, eq=False)
class Sandbox:
    """One built sandbox (:func:`build_sandbox`): the grid, the densities, the truth, one
    training sample and the exact posterior; every quantity on the grid is derived from these."""

    settings: SandboxSettings
    grid: np.ndarray
    #: the test density's mass per grid point (trapezoid weight × p_te), summing to 1
    weights: np.ndarray
    p_id: np.ndarray
    p_te: np.ndarray
    p_ood: np.ndarray
    features: np.ndarray
    truth_weights: np.ndarray
    noise_var: np.ndarray
    x_train: np.ndarray
    y_train: np.ndarray
    posterior_mean_w: np.ndarray
    posterior_cov_w: np.ndarray

    @property
    def f_star(self) -> np.ndarray:
        return self.features @ self.truth_weights

    @property
    def posterior_mean(self) -> np.ndarray:
        return self.features @ self.posterior_mean_w

    @cached_property
    def posterior_cov_f(self) -> np.ndarray:
        """The posterior covariance of f between grid points."""
        return self.features @ self.posterior_cov_w @ self.features.T

    @property
    def posterior_var(self) -> np.ndarray:
        return np.einsum("ik,kl,il->i", self.features, self.posterior_cov_w, self.features)

    def uncertainty(self, loss: str = "squared") -> dict[str, np.ndarray]:
        """T*, A*, E* at every grid point under ``loss`` (``squared`` or ``log``)."""
        if loss == "squared":
            return squared_loss_uncertainty(self.posterior_var, self.noise_var)
        if loss == "log":
            return log_loss_uncertainty(self.posterior_var, self.noise_var)
        raise ValueError(f"unknown loss {loss!r}; known: squared, log")

    def realized_regret(self) -> np.ndarray:
        """The squared-loss regret of the posterior mean under the truth, (m(x) − f*(x))²."""
        return (self.posterior_mean - self.f_star) ** 2

    def scores(self) -> dict[str, np.ndarray]:
        """Each Bayes-optimal scorer on the grid (:data:`SCORERS`), higher = rejected first.
        EER ranks by the expected reduction of the integrated regret (the integrated regret
        after the label, negated, up to a constant)."""
        squared = self.uncertainty("squared")
        after = expected_integrated_regret(self.posterior_cov_f, self.noise_var, self.weights)
        return {"ood": ood_likelihood_ratio(self.p_ood, self.p_id),
                "bald": bald(self.posterior_var, self.noise_var),
                "eer": float(self.weights @ squared["epistemic"]) - after,
                "risk": squared["total"], "regret": squared["epistemic"]}


def truth_weights(settings: SandboxSettings, grid: np.ndarray, features: np.ndarray
                  ) -> np.ndarray:
    """f*'s weights: least squares of the features to the Rossellini function on the grid."""
    weights, *_ = np.linalg.lstsq(features, rossellini(grid), rcond=None)
    return weights


def noise_sd(x: np.ndarray, settings: SandboxSettings) -> np.ndarray:
    """σ(x): ``noise_low`` plus a bump up to ``noise_high`` at ``noise_centre``."""
    return settings.noise_low + (settings.noise_high - settings.noise_low) * bump(
        x, settings.noise_centre, settings.noise_width)


def training_density(x: np.ndarray, settings: SandboxSettings) -> np.ndarray:
    """The training inputs' density up to a constant: uniform with a Gaussian-shaped gap at
    ``gap_centre``, suppressed to ``gap_depth`` × the rest at its centre (the OOD region)."""
    return 1.0 - (1.0 - settings.gap_depth) * bump(x, settings.gap_centre, settings.gap_width)


def build_sandbox(settings: SandboxSettings, noise_scale: float = 1.0) -> Sandbox:
    """The sandbox of ``settings``: grid, densities (p_te = p_ood uniform on the domain; p_id
    the training density), f*, one training sample of ``n_train`` from seed ``seed`` and its
    exact posterior. ``noise_scale`` multiplies σ(x) (the tests change the noise profile)."""
    if not 0.0 < settings.coverage < 1.0:
        raise ValueError(f"coverage {settings.coverage} must lie in (0, 1)")
    lo, hi = settings.domain
    if not hi > lo:
        raise ValueError(f"domain {settings.domain}: the upper end must exceed the lower")
    grid = np.linspace(lo, hi, settings.grid_points)
    quadrature = trapezoid_weights(grid)
    p_te = normalised_density(np.ones_like(grid), quadrature)
    p_id = normalised_density(training_density(grid, settings), quadrature)
    centres, widths = feature_centres(settings.n_features, settings.domain,
                                      settings.feature_offset, settings.feature_width)
    features = rbf_features(grid, centres, widths)
    truth = truth_weights(settings, grid, features)
    rng = np.random.default_rng(settings.seed)
    x_train = np.sort(sample_from_density(grid, p_id, settings.n_train, rng))
    phi_train = rbf_features(x_train, centres, widths)
    var_train = (noise_scale * noise_sd(x_train, settings)) ** 2
    y_train = phi_train @ truth + np.sqrt(var_train) * rng.standard_normal(settings.n_train)
    mean_w, cov_w = gaussian_linear_posterior(phi_train, y_train, var_train, settings.prior_sd)
    return Sandbox(settings=settings, grid=grid, weights=quadrature * p_te, p_id=p_id, p_te=p_te,
                   p_ood=p_te, features=features, truth_weights=truth,
                   noise_var=(noise_scale * noise_sd(grid, settings)) ** 2, x_train=x_train,
                   y_train=y_train, posterior_mean_w=mean_w, posterior_cov_w=cov_w)
