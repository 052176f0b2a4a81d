"""Gaussian output heads and the Gaussian NLL shared by the neural methods (paper App. C.4).

Everything here works in standardised target units (ỹ = (y − m_y)/s_y, see
:class:`postrisk.methods.scaling.Standardizer`); back in target units μ = s_y μ̃ + m_y and
v = s_y² ṽ (``Standardizer.mean_to_target`` / ``var_to_target``).

- :func:`gaussian_head` — raw outputs (μ̃, ρ): s = softplus(ρ) + ε, ṽ = s².
- :func:`natural_gaussian_head` — raw outputs (a, ρ) read as natural parameters
  η₁ = a, η₂ = −(softplus(ρ) + ε)/2 < 0: ṽ = −1/(2η₂) = 1/(softplus(ρ) + ε), μ̃ = η₁ṽ.
- :func:`evidential_head` — raw outputs (μ̃, a, b, c) read as a Normal–Inverse-Gamma output
  (Amini et al. 2020): ν = softplus(a) + ε₀, α − 1 = softplus(b) + ε₀, β = softplus(c) + ε₀
  with ε₀ = :data:`EVIDENCE_EPS` (α − 1 is returned, not α, so β/(α − 1) keeps its precision
  as α → 1).
- :func:`positive_head` — one raw output read as a non-negative value softplus(r) (a predicted
  squared error).
- :func:`pointwise_gaussian_nll` — per-point −log N(y | μ, v).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

#: ε of the heads: a floor on the standard deviation (mean-variance head) or on −2η₂ (natural
#: head), in standardised units.
HEAD_EPS = 1e-3
#: ε₀ of the evidential head: the floor of ν, α − 1 and β.
EVIDENCE_EPS = 1e-6

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def gaussian_head(raw: jax.Array, eps: float = HEAD_EPS) -> tuple[jax.Array, jax.Array]:
    """``(μ̃, ṽ)`` from raw outputs (..., 2) = (μ̃, ρ): ṽ = (softplus(ρ) + ε)²."""
    sd = jax.nn.softplus(raw[..., 1]) + eps
    return raw[..., 0], sd ** 2


def natural_gaussian_head(raw: jax.Array,
                          eps: float = HEAD_EPS) -> tuple[jax.Array, jax.Array]:
    """``(μ̃, ṽ)`` from raw outputs (..., 2) read as natural parameters (module docstring)."""
    eta1 = raw[..., 0]
    eta2 = -0.5 * (jax.nn.softplus(raw[..., 1]) + eps)
    var = -0.5 / eta2
    return eta1 * var, var


def evidential_head(raw: jax.Array, eps: float = EVIDENCE_EPS,
                    ) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """``(μ̃, ν, α − 1, β)`` from raw outputs (..., 4) (module docstring)."""
    positive = jax.nn.softplus(raw[..., 1:]) + eps
    return raw[..., 0], positive[..., 0], positive[..., 1], positive[..., 2]


def positive_head(raw: jax.Array) -> jax.Array:
    """softplus of the single raw output (..., 1): a non-negative prediction."""
    return jax.nn.softplus(raw[..., 0])


def pointwise_gaussian_nll(mean: jax.Array, var: jax.Array, y: jax.Array) -> jax.Array:
    """Per-point negative log density: ½ log(2π) + ½ log v + (y − μ)²/(2v)."""
    return _HALF_LOG_2PI + 0.5 * jnp.log(var) + 0.5 * (y - mean) ** 2 / var
