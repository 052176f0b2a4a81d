"""Bayesian linear regression with evidence-maximised α and β (``blr``; paper App. C.1)."""

from __future__ import annotations

import math
import warnings
from typing import Any, ClassVar

import numpy as np

from postrisk.methods.interface import Prediction, UncertaintyMethod
from postrisk.methods.scaling import Standardizer, as_inputs, as_training_data

#: Bounds that keep α and β finite when the data make the evidence unbounded (a constant target
#: drives α → ∞; an exact fit drives β → ∞). In standardised units these are far from any
#: value real data produce.
PRECISION_BOUNDS = (1e-12, 1e12)


class BayesianLinearRegression(UncertaintyMethod):
    """Bayesian linear regression on standardised inputs and target.

    Model (in standardised units): x̃ = (x − x̄)/s_x per column (training mean and SD; an SD of 0
    is replaced by 1), t = (y − ȳ)/s_y, features φ(x) = [1, x̃] ∈ R^M, M = d + 1,
    t | w ~ N(Φw, β⁻¹I), prior w ~ N(0, α⁻¹I).

    α and β maximise the evidence p(t | α, β) by MacKay's fixed-point updates (Bishop, PRML
    §3.5.2): with λ_i the eigenvalues of βΦᵀΦ,

        A = αI + βΦᵀΦ,  S_N = A⁻¹,  m_N = β S_N Φᵀt,
        γ = Σ_i λ_i / (α + λ_i),
        α ← γ / (m_Nᵀm_N),   β ← (n − γ) / ‖t − Φm_N‖²,

    started at α = ``prior_precision``, β = 1/``noise_std``² and iterated until both change by
    less than ``tol`` relatively (at most ``max_iter`` iterations; a ``RuntimeWarning`` if not
    converged).

    Prediction at x, in target units: mean = s_y·φᵀm_N + ȳ; AU = s_y²/β (constant);
    EU = s_y²·φᵀS_Nφ.

    Tunable: ``evidence`` chooses between the evidence-maximised α and β (default;
    ``prior_precision`` and ``noise_std`` are then the start of the fixed-point iteration) and
    fixed values α = ``prior_precision``, β = 1/``noise_std``² (standardised units; the authors'
    earlier code fixed α and searched σ). The search space holds all three; the paper states
    only the prior w ~ N(0, α⁻¹I). ``max_iter`` and ``tol`` control the fixed-point iteration.
    Fitted attributes: ``alpha_``, ``beta_``,
    ``coef_`` (m_N), ``n_iter_``, ``converged_``, ``log_evidence_`` (standardised units),
    ``x_mean_``, ``x_scale_``, ``y_mean_``, ``y_scale_``.
    """

    defaults: ClassVar[dict[str, Any]] = {"evidence": True, "prior_precision": 1.0,
                                          "noise_std": 1.0, "max_iter": 1000, "tol": 1e-8}
    search_space: ClassVar[dict[str, tuple]] = {
        "evidence": ("categorical", [True, False]),
        "prior_precision": ("float", 1e-3, 1e3, "log"),
        "noise_std": ("float", 0.01, 2.0, "log"),
    }

    # -- internals -----------------------------------------------------------------------
    def _features(self, x: np.ndarray) -> np.ndarray:
        z = (x - self.x_mean_) / self.x_scale_
        return np.hstack([np.ones((z.shape[0], 1)), z])

    def _posterior_mean(self, alpha: float, beta: float) -> np.ndarray:
        # m_N = β V diag(1/(α + βe)) Vᵀ Φᵀt
        return beta * (self._eigvec_ @ (self._proj_b_ / (alpha + beta * self._eigval_)))

    # -- interface -----------------------------------------------------------------------
    def fit(self, x: np.ndarray, y: np.ndarray) -> BayesianLinearRegression:
        x, y = as_training_data(x, y)
        n = x.shape[0]
        max_iter, tol = int(self.max_iter), float(self.tol)
        if max_iter < 1 or not tol > 0:
            raise ValueError(f"need max_iter >= 1 and tol > 0, got {max_iter}, {tol}")
        alpha0, noise_std = float(self.prior_precision), float(self.noise_std)
        if not (alpha0 > 0 and noise_std > 0):
            raise ValueError(f"need prior_precision > 0 and noise_std > 0, got {alpha0}, "
                             f"{noise_std}")

        scaler = Standardizer.fit(x, y)
        self.x_mean_, self.x_scale_ = scaler.x_mean, scaler.x_scale
        self.y_mean_, self.y_scale_ = scaler.y_mean, scaler.y_scale
        phi = self._features(x)
        t = scaler.target(y)

        gram = phi.T @ phi
        eigval, eigvec = np.linalg.eigh(gram)
        self._eigval_ = np.clip(eigval, 0.0, None)
        self._eigvec_ = eigvec
        self._proj_b_ = eigvec.T @ (phi.T @ t)

        lo, hi = PRECISION_BOUNDS
        alpha, beta = alpha0, 1.0 / noise_std ** 2
        converged = not self.evidence  # fixed α and β: nothing to iterate
        n_iter = 0
        for n_iter in range(1, (max_iter if self.evidence else 0) + 1):  # noqa: B007 - n_iter is used after the loop
            lam = beta * self._eigval_
            m_n = self._posterior_mean(alpha, beta)
            gamma = float(np.sum(lam / (alpha + lam)))
            mm = float(m_n @ m_n)
            resid = float(np.sum((t - phi @ m_n) ** 2))
            alpha_new = gamma / mm if mm > 0 else hi
            beta_new = (n - gamma) / resid if resid > 0 else hi
            alpha_new = min(max(alpha_new, lo), hi)
            beta_new = min(max(beta_new, lo), hi)
            done = (abs(alpha_new - alpha) <= tol * alpha_new
                    and abs(beta_new - beta) <= tol * beta_new)
            alpha, beta = alpha_new, beta_new
            if done:
                converged = True
                break
        if not converged:
            warnings.warn(f"BLR evidence maximisation did not converge in {max_iter} iterations "
                          f"(alpha={alpha:.6g}, beta={beta:.6g})", RuntimeWarning, stacklevel=2)
        self.alpha_ = alpha
        self.beta_ = beta
        self.coef_ = self._posterior_mean(alpha, beta)
        self.n_iter_ = n_iter
        self.converged_ = converged
        self._n_ = n
        self._tt_ = float(t @ t)
        self._resid_ = float(np.sum((t - phi @ self.coef_) ** 2))
        self.log_evidence_ = self.log_evidence(alpha, beta)
        return self

    def log_evidence(self, alpha: float, beta: float) -> float:
        """ln p(t | α, β) of the standardised training target (Bishop PRML eq. 3.86).

        ln p = (M/2) ln α + (n/2) ln β − E(m_N) − ½ ln|A| − (n/2) ln 2π,
        E(m_N) = (β/2)‖t − Φm_N‖² + (α/2) m_Nᵀm_N, with m_N and A at the given (α, β).
        """
        m_n = self._posterior_mean(alpha, beta)
        if alpha == self.alpha_ and beta == self.beta_:
            resid = self._resid_
        else:
            # ‖t − Φm‖² = tᵀt − 2 mᵀΦᵀt + mᵀΦᵀΦm, all in the eigenbasis of ΦᵀΦ
            proj_m = self._eigvec_.T @ m_n
            resid = max(self._tt_ - 2 * float(proj_m @ self._proj_b_)
                        + float(np.sum(self._eigval_ * proj_m ** 2)), 0.0)
        big_m = self._eigval_.size
        e_mn = 0.5 * beta * resid + 0.5 * alpha * float(m_n @ m_n)
        logdet_a = float(np.sum(np.log(alpha + beta * self._eigval_)))
        return (0.5 * big_m * math.log(alpha) + 0.5 * self._n_ * math.log(beta) - e_mn
                - 0.5 * logdet_a - 0.5 * self._n_ * math.log(2 * math.pi))

    def predict(self, x: np.ndarray) -> Prediction:
        x = as_inputs(x, self.x_mean_.shape[0])
        phi = self._features(x)
        mean = self.y_scale_ * (phi @ self.coef_) + self.y_mean_
        proj = phi @ self._eigvec_
        latent = np.sum(proj ** 2 / (self.alpha_ + self.beta_ * self._eigval_), axis=1)
        s2 = self.y_scale_ ** 2
        aleatoric = np.full(x.shape[0], s2 / self.beta_)
        return Prediction(mean=mean, aleatoric_var=aleatoric, epistemic_var=s2 * latent)
