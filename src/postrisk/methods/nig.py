"""The Normal–Inverse-Gamma (NIG) output of evidential regression: its mathematics in one home.

A NIG output (Amini et al. 2020, "Deep Evidential Regression") is a distribution over the
mean m and variance σ² of a Gaussian target,

    σ² ~ InvGamma(α, β)   (shape α > 1, rate β > 0),
    m | σ² ~ N(μ, σ²/λ)   (λ > 0),
    y | m, σ² ~ N(m, σ²),

with aleatoric uncertainty AU = E[σ²] = β/(α−1) and epistemic uncertainty
EU = Var[m] = β/(λ(α−1)) = AU/λ. The marginal of y is a Student-t with ν = 2α degrees of
freedom, location μ and scale² β(1+λ)/(λα) (Amini et al. 2020, eq. 8).

The boosted variant (the paper, App. C.3; NGBoost: Duan et al. 2020) learns per row the
internal parameters θ = (μ, θ₂, θ₃, θ₄), unconstrained, with

    λ = exp(θ₂),   α = exp(θ₃) + 1,   β = exp(θ₄),

by minimising the per-row score

    S(θ, y) = NLL(y | NIG) + c_ev·|y − μ|·(2λ + α) + c_kl·KL(NIG(μ, λ, α, β) ‖ NIG(μ, 1, 2, 1)).

The KL regulariser's reference NIG is centred at the row's own μ (:data:`EVIDENCE_PRIOR` gives
its λ₀, α₀, β₀): it shrinks the evidence parameters (λ, α, β) towards one pseudo-observation of
unit variance and leaves the regression function alone. A reference fixed at μ₀ = 0 would add
½λ₀μ²α/β, which pulls μ towards 0 and — through β — ties the AU to μ² rather than to the noise
(on the project's 1-D toy problem the default strengths with the regularised Fisher metric then
gave Spearman(AU, σ²_ε) = −0.11 on the training support, against 0.71 centred).

Everything here is vectorised NumPy/SciPy over arrays of rows (no NGBoost; the NLL and the
evidential regulariser also take JAX arrays, for the neural variant): the NLL, the
evidential regulariser, the KL divergence, their gradients, the Fisher information of the
Student-t marginal and of the NIG itself (both in θ), the natural-gradient metrics built from
them or from a row's own score gradient, and AU/EU. Arrays ``mu, lam, alpha, beta``
broadcast against each other and against ``y``; gradients and metrics come back with the rows
first: (n, 4) and (n, 4, 4), parameters in the order (μ, λ, α, β) for "natural" functions and
(μ, θ₂, θ₃, θ₄) for "internal" ones. ``theta`` arguments are (4, n) arrays (NGBoost's layout)
or sequences of four arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.special import digamma, gammaln, polygamma

#: A reference NIG (μ₀, λ₀, α₀, β₀) for :func:`nig_kl`'s default: the standard one.
PRIOR = (0.0, 1.0, 2.0, 1.0)
#: (λ₀, α₀, β₀) of the score's KL regulariser; its μ₀ is the row's own μ (module docstring).
EVIDENCE_PRIOR = PRIOR[1:]
#: Levenberg–Marquardt damping added to the natural-gradient metric (times the identity in θ):
#: near α = 1 both Fisher terms' θ₃θ₃ entries vanish like (α−1)², so an undamped natural step
#: in θ₃ = ln(α−1) grows like 1/(α−1) and overshoots towards α → 1 without recovery (measured:
#: θ₃ reached −1e56 in 25 iterations at kl_strength 0.01 on the toy problem).
METRIC_DAMPING = 1e-2
#: Ridge ε of the empirical metric g gᵀ + ε·I (:func:`empirical_metric`): the value of the
#: authors' earlier code. It makes the rank-one g gᵀ invertible and bounds the natural step,
#: whose length |g|/(|g|² + ε) peaks at 1/(2√ε) ≈ 158 where |g| = √ε.
EMPIRICAL_METRIC_RIDGE = 1e-5
N_PARAMS = 4


def _arrays(*args: Any) -> list[np.ndarray]:
    return [np.asarray(a, dtype=np.float64) for a in np.broadcast_arrays(*args)]


# ---------------------------------------------------------------------------------------------
# Parametrisation
# ---------------------------------------------------------------------------------------------

def nig_from_internal(theta: Sequence[Any]) -> tuple[np.ndarray, ...]:
    """(μ, λ, α, β) from the internal θ = (μ, θ₂, θ₃, θ₄): λ = e^θ₂, α = e^θ₃ + 1, β = e^θ₄."""
    mu, lam, alpha, beta, _ = _internal(theta)
    return mu, lam, alpha, beta


def _internal(theta: Sequence[Any]) -> tuple[np.ndarray, ...]:
    """(μ, λ, α, β, α − 1), with α − 1 = e^θ₃ exactly (1 + e^θ₃ − 1 loses it as α → 1)."""
    mu, t2, t3, t4 = _arrays(theta[0], theta[1], theta[2], theta[3])
    alpha_m1 = np.exp(t3)
    return mu, np.exp(t2), alpha_m1 + 1.0, np.exp(t4), alpha_m1


def internal_from_nig(mu: Any, lam: Any, alpha: Any, beta: Any) -> np.ndarray:
    """θ = (μ, ln λ, ln(α − 1), ln β) as a (4, ...) array (the inverse of
    :func:`nig_from_internal`)."""
    mu, lam, alpha, beta = _arrays(mu, lam, alpha, beta)
    return np.stack([mu, np.log(lam), np.log(alpha - 1.0), np.log(beta)])


def internal_jacobian(theta: Sequence[Any]) -> np.ndarray:
    """d(μ, λ, α, β)/dθ, which is diagonal: (1, λ, α − 1, β) = (1, e^θ₂, e^θ₃, e^θ₄), as an
    (n, 4) array."""
    _, lam, _, beta, alpha_m1 = _internal(theta)
    return np.stack([np.ones_like(lam), lam, alpha_m1, beta], axis=-1)


def nig_variances(lam: Any, alpha: Any, beta: Any) -> tuple[np.ndarray, np.ndarray]:
    """(AU, EU) = (β/(α−1), β/(λ(α−1))): E[σ²] and Var[m] of the NIG; EU = AU/λ."""
    lam, alpha, beta = _arrays(lam, alpha, beta)
    au = beta / (alpha - 1.0)
    return au, au / lam


def nig_variances_internal(theta: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """(AU, EU) of :func:`nig_variances` from θ: AU = e^(θ₄−θ₃) (finite however close α is to
    1), EU = AU/λ."""
    _, t2, t3, t4 = _arrays(theta[0], theta[1], theta[2], theta[3])
    au = np.exp(t4 - t3)
    return au, au / np.exp(t2)


def student_t_params(lam: Any, alpha: Any, beta: Any) -> tuple[np.ndarray, np.ndarray]:
    """(ν, scale²) of the Student-t marginal of y: ν = 2α, scale² = β(1+λ)/(λα)."""
    lam, alpha, beta = _arrays(lam, alpha, beta)
    return 2.0 * alpha, beta * (1.0 + lam) / (lam * alpha)


# ---------------------------------------------------------------------------------------------
# The three terms of the score and their gradients in (μ, λ, α, β)
# ---------------------------------------------------------------------------------------------

def _nll_expression(xp: Any, lgamma: Any, y: Any, mu: Any, lam: Any, alpha: Any,
                    beta: Any) -> Any:
    omega = 2.0 * beta * (1.0 + lam)
    return (0.5 * xp.log(xp.pi / lam) - alpha * xp.log(omega)
            + (alpha + 0.5) * xp.log((y - mu) ** 2 * lam + omega)
            + lgamma(alpha) - lgamma(alpha + 0.5))


def nig_nll(y: Any, mu: Any, lam: Any, alpha: Any, beta: Any) -> np.ndarray:
    """−ln p(y | μ, λ, α, β), the Student-t marginal in the closed form of Amini et al. (2020),
    eq. 8: with Ω = 2β(1+λ),

        NLL = ½ ln(π/λ) − α ln Ω + (α+½) ln((y−μ)²λ + Ω) + lnΓ(α) − lnΓ(α+½).
    """
    return _nll_expression(np, gammaln, *_arrays(y, mu, lam, alpha, beta))


def nig_nll_jax(y: Any, mu: Any, lam: Any, alpha: Any, beta: Any) -> Any:
    """:func:`nig_nll` on JAX arrays (traceable and differentiable: the neural evidential
    regression's loss)."""
    import jax.numpy as jnp
    from jax.scipy.special import gammaln as jax_gammaln

    return _nll_expression(jnp, jax_gammaln, y, mu, lam, alpha, beta)


def nig_nll_grad(y: Any, mu: Any, lam: Any, alpha: Any, beta: Any) -> np.ndarray:
    """∂NLL/∂(μ, λ, α, β), shape (n, 4). With r = y − μ, Ω = 2β(1+λ), D = r²λ + Ω:

        ∂μ = −(2α+1) r λ / D,
        ∂λ = −1/(2λ) − α/(1+λ) + (α+½)(r² + 2β)/D,
        ∂α = ln(D/Ω) + ψ(α) − ψ(α+½),
        ∂β = −α/β + (2α+1)(1+λ)/D.
    """
    y, mu, lam, alpha, beta = _arrays(y, mu, lam, alpha, beta)
    r = y - mu
    omega = 2.0 * beta * (1.0 + lam)
    d = r ** 2 * lam + omega
    return np.stack([
        -(2.0 * alpha + 1.0) * r * lam / d,
        -0.5 / lam - alpha / (1.0 + lam) + (alpha + 0.5) * (r ** 2 + 2.0 * beta) / d,
        np.log(d / omega) + digamma(alpha) - digamma(alpha + 0.5),
        -alpha / beta + (2.0 * alpha + 1.0) * (1.0 + lam) / d,
    ], axis=-1)


def evidential_regulariser(y: Any, mu: Any, lam: Any, alpha: Any) -> np.ndarray:
    """|y − μ|·(2λ + α): the error scaled by the total evidence (Amini et al. 2020, eq. 9).

    Plain arithmetic: NumPy arrays give float64 NumPy, JAX arrays a traceable JAX result.
    """
    if not any(type(a).__module__.startswith("jax") for a in (y, mu, lam, alpha)):
        y, mu, lam, alpha = _arrays(y, mu, lam, alpha)
    return abs(y - mu) * (2.0 * lam + alpha)


def evidential_regulariser_grad(y: Any, mu: Any, lam: Any, alpha: Any) -> np.ndarray:
    """∂/∂(μ, λ, α, β) of :func:`evidential_regulariser`: (−sign(y−μ)(2λ+α), 2|y−μ|, |y−μ|, 0)
    (sign(0) = 0), shape (n, 4)."""
    y, mu, lam, alpha = _arrays(y, mu, lam, alpha)
    r = y - mu
    a = np.abs(r)
    return np.stack([-np.sign(r) * (2.0 * lam + alpha), 2.0 * a, a, np.zeros_like(a)], axis=-1)


def nig_kl(mu: Any, lam: Any, alpha: Any, beta: Any,
           prior: tuple[float, float, float, float] = PRIOR) -> np.ndarray:
    """KL(NIG(μ, λ, α, β) ‖ NIG(μ₀, λ₀, α₀, β₀)) over (m, σ²).

    The chain rule of the KL: the KL of the inverse-gamma marginals of σ² (equal to that of the
    gamma distributions of 1/σ², shape/rate) plus the expected KL of the Gaussians of m given σ²
    (E[1/σ²] = α/β):

        KL = (α−α₀)ψ(α) − lnΓ(α) + lnΓ(α₀) + α₀(ln β − ln β₀) + α(β₀−β)/β
             + ½[ln(λ/λ₀) + λ₀/λ − 1 + λ₀(μ−μ₀)² α/β].
    """
    mu, lam, alpha, beta = _arrays(mu, lam, alpha, beta)
    mu0, lam0, alpha0, beta0 = prior
    kl_gamma = ((alpha - alpha0) * digamma(alpha) - gammaln(alpha) + gammaln(alpha0)
                + alpha0 * (np.log(beta) - np.log(beta0)) + alpha * (beta0 - beta) / beta)
    kl_normal = 0.5 * (np.log(lam / lam0) + lam0 / lam - 1.0
                       + lam0 * (mu - mu0) ** 2 * alpha / beta)
    return kl_gamma + kl_normal


def nig_kl_grad(mu: Any, lam: Any, alpha: Any, beta: Any,
                prior: tuple[float, float, float, float] = PRIOR) -> np.ndarray:
    """∂KL/∂(μ, λ, α, β) of :func:`nig_kl`, shape (n, 4):

        ∂μ = λ₀(μ−μ₀)α/β,   ∂λ = ½(1/λ − λ₀/λ²),
        ∂α = (α−α₀)ψ'(α) + β₀/β − 1 + ½λ₀(μ−μ₀)²/β,
        ∂β = α₀/β − αβ₀/β² − ½λ₀(μ−μ₀)²α/β².
    """
    mu, lam, alpha, beta = _arrays(mu, lam, alpha, beta)
    mu0, lam0, alpha0, beta0 = prior
    q = lam0 * (mu - mu0) ** 2
    return np.stack([
        lam0 * (mu - mu0) * alpha / beta,
        0.5 * (1.0 / lam - lam0 / lam ** 2),
        (alpha - alpha0) * polygamma(1, alpha) + beta0 / beta - 1.0 + 0.5 * q / beta,
        alpha0 / beta - alpha * beta0 / beta ** 2 - 0.5 * q * alpha / beta ** 2,
    ], axis=-1)


# ---------------------------------------------------------------------------------------------
# The score in the internal parameters
# ---------------------------------------------------------------------------------------------

def evidential_score(theta: Sequence[Any], y: Any, evidential_strength: float,
                     kl_strength: float) -> np.ndarray:
    """S(θ, y) per row (see the module docstring), shape (n,)."""
    mu, lam, alpha, beta = nig_from_internal(theta)
    return (nig_nll(y, mu, lam, alpha, beta)
            + evidential_strength * evidential_regulariser(y, mu, lam, alpha)
            + kl_strength * nig_kl(mu, lam, alpha, beta, prior=(mu, *EVIDENCE_PRIOR)))


def evidential_score_grad(theta: Sequence[Any], y: Any, evidential_strength: float,
                          kl_strength: float) -> np.ndarray:
    """∂S/∂θ per row, shape (n, 4): the (μ, λ, α, β) gradients times the diagonal Jacobian
    (1, λ, α−1, β) of the exponential links. The KL's reference moves with μ, so its μ-terms
    vanish (as :func:`nig_kl_grad` gives at μ₀ = μ)."""
    mu, lam, alpha, beta = nig_from_internal(theta)
    grad = (nig_nll_grad(y, mu, lam, alpha, beta)
            + evidential_strength * evidential_regulariser_grad(y, mu, lam, alpha)
            + kl_strength * nig_kl_grad(mu, lam, alpha, beta, prior=(mu, *EVIDENCE_PRIOR)))
    return grad * internal_jacobian(theta)


# ---------------------------------------------------------------------------------------------
# Natural-gradient metrics: the Fisher information (regularised), and the empirical metric
# ---------------------------------------------------------------------------------------------

def student_t_fisher(sigma: Any, nu: Any) -> np.ndarray:
    """Fisher information of a Student-t(ν, μ, σ) observation in (μ, σ, ν), shape (n, 3, 3)
    (Lange, Little & Taylor 1989, JASA 84:881):

        I_μμ = (ν+1)/((ν+3)σ²),   I_σσ = 2ν/((ν+3)σ²),   I_σν = −2/((ν+1)(ν+3)σ),
        I_νν = ¼[ψ'(ν/2) − ψ'((ν+1)/2)] − (ν+5)/(2ν(ν+1)(ν+3)),   I_μσ = I_μν = 0.
    """
    sigma, nu = _arrays(sigma, nu)
    out = np.zeros(sigma.shape + (3, 3))
    out[..., 0, 0] = (nu + 1.0) / ((nu + 3.0) * sigma ** 2)
    out[..., 1, 1] = 2.0 * nu / ((nu + 3.0) * sigma ** 2)
    out[..., 1, 2] = out[..., 2, 1] = -2.0 / ((nu + 1.0) * (nu + 3.0) * sigma)
    out[..., 2, 2] = (0.25 * (polygamma(1, nu / 2.0) - polygamma(1, (nu + 1.0) / 2.0))
                      - (nu + 5.0) / (2.0 * nu * (nu + 1.0) * (nu + 3.0)))
    return out


def student_t_fisher_internal(theta: Sequence[Any]) -> np.ndarray:
    """Fisher information of the Student-t marginal of y in θ, shape (n, 4, 4): Jᵀ I J with
    I = :func:`student_t_fisher` and J = ∂(μ, σ, ν)/∂θ, where σ² = β(1+λ)/(λα), ν = 2α:

        ∂σ/∂θ₂ = −σ/(2(1+λ)),  ∂σ/∂θ₃ = −σ(α−1)/(2α),  ∂σ/∂θ₄ = σ/2,  ∂ν/∂θ₃ = 2(α−1).

    Rank 3: the marginal depends on (λ, β) only through β(1+λ)/λ.
    """
    mu, lam, alpha, beta, alpha_m1 = _internal(theta)
    nu, scale2 = student_t_params(lam, alpha, beta)
    sigma = np.sqrt(scale2)
    jac = np.zeros(sigma.shape + (3, 4))
    jac[..., 0, 0] = 1.0
    jac[..., 1, 1] = -sigma / (2.0 * (1.0 + lam))
    jac[..., 1, 2] = -sigma * alpha_m1 / (2.0 * alpha)
    jac[..., 1, 3] = sigma / 2.0
    jac[..., 2, 2] = 2.0 * alpha_m1
    return np.swapaxes(jac, -1, -2) @ student_t_fisher(sigma, nu) @ jac


def nig_fisher(mu: Any, lam: Any, alpha: Any, beta: Any) -> np.ndarray:
    """Fisher information of the NIG density of (m, σ²) in (μ, λ, α, β), shape (n, 4, 4):

        I_μμ = λα/β,  I_λλ = 1/(2λ²),  I_αα = ψ'(α),  I_αβ = −1/β,  I_ββ = α/β²,  others 0

    (minus the expected Hessian of ½ln λ − λ(m−μ)²/(2σ²) + α ln β − lnΓ(α) − (α+1)ln σ² − β/σ²
    + const, with E[1/σ²] = α/β).
    """
    mu, lam, alpha, beta = _arrays(mu, lam, alpha, beta)
    out = np.zeros(mu.shape + (4, 4))
    out[..., 0, 0] = lam * alpha / beta
    out[..., 1, 1] = 0.5 / lam ** 2
    out[..., 2, 2] = polygamma(1, alpha)
    out[..., 2, 3] = out[..., 3, 2] = -1.0 / beta
    out[..., 3, 3] = alpha / beta ** 2
    return out


def nig_fisher_internal(theta: Sequence[Any]) -> np.ndarray:
    """:func:`nig_fisher` in θ (the links' Jacobian is diagonal, D = diag(1, λ, α−1, β)), shape
    (n, 4, 4): I_μμ = λα/β, I_22 = ½, I_33 = (α−1)²ψ'(α), I_34 = −(α−1), I_44 = α. Positive
    definite (αψ'(α) > 1)."""
    mu, lam, alpha, beta = nig_from_internal(theta)
    d = internal_jacobian(theta)
    return nig_fisher(mu, lam, alpha, beta) * d[..., :, None] * d[..., None, :]


def evidential_metric(theta: Sequence[Any], kl_strength: float,
                      damping: float = METRIC_DAMPING) -> np.ndarray:
    """The regularised-Fisher natural-gradient metric of the boosted NIG (its ablation; the
    default is :func:`empirical_metric`), shape (n, 4, 4): the Fisher information
    of the Student-t marginal of y in θ plus ``kl_strength`` times the Fisher information of
    the NIG over (m, σ²) in θ (the curvature of the KL term), plus ``damping``·I
    (:data:`METRIC_DAMPING`).

    The marginal of y depends on λ and β only through β(1+λ)/λ, so its Fisher information is
    singular (rank 3): moving along that direction changes neither the likelihood nor its
    gradient, which has no component there. The regulariser's Fisher term makes the metric
    positive definite and gives it a scale along that direction consistent with the score's
    only gradient there (the regularisers'); hence ``kl_strength`` must be positive.
    """
    if not kl_strength > 0:
        raise ValueError(f"kl_strength must be > 0 (it makes the metric invertible), got "
                         f"{kl_strength!r}")
    if not damping >= 0:
        raise ValueError(f"damping must be >= 0, got {damping!r}")
    return (student_t_fisher_internal(theta) + kl_strength * nig_fisher_internal(theta)
            + damping * np.eye(N_PARAMS))


def empirical_metric(grad: Any, ridge: float = EMPIRICAL_METRIC_RIDGE) -> np.ndarray:
    """The per-row empirical metric M = g gᵀ + ``ridge``·I, shape (n, 4, 4), from the rows'
    score gradients g = ∂S/∂θ, an (n, 4) array (:func:`evidential_score_grad`): the outer
    product of the row's own gradient (a one-observation estimate of the Fisher information)
    plus a ridge (:data:`EMPIRICAL_METRIC_RIDGE`) that makes it invertible."""
    g = _gradient_rows(grad)
    if not ridge > 0:
        raise ValueError(f"ridge must be > 0 (it makes g gᵀ invertible), got {ridge!r}")
    return g[:, :, None] * g[:, None, :] + ridge * np.eye(g.shape[1])


def empirical_natural_gradient(grad: Any, ridge: float = EMPIRICAL_METRIC_RIDGE) -> np.ndarray:
    """M⁻¹g per row for M = :func:`empirical_metric`, shape (n, 4): by Sherman–Morrison,
    (g gᵀ + εI)⁻¹ g = g/(gᵀg + ε), the row's gradient rescaled to length |g|/(|g|² + ε) (no
    matrix is formed or solved)."""
    g = _gradient_rows(grad)
    if not ridge > 0:
        raise ValueError(f"ridge must be > 0 (it makes g gᵀ invertible), got {ridge!r}")
    return g / (np.sum(g * g, axis=1, keepdims=True) + ridge)


def _gradient_rows(grad: Any) -> np.ndarray:
    g = np.asarray(grad, dtype=np.float64)
    if g.ndim != 2:
        raise ValueError(f"expected an (n, k) array of gradients, got shape {g.shape}")
    return g
