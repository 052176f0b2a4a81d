"""The one backbone all neural methods share (paper App. C.4), with spectral normalisation.

API
---
``BackboneSpec(in_dim, width, depth, residual=True, activation="tanh", dropout=0.0,
spectral_norm=False, sn_coeff=1.0, out_dim=None)`` — a frozen (hashable) description.

``init_backbone(spec, key) -> (params, sn_state)`` — ``key`` a JAX key (jittable) or an int
seed / NumPy Generator (no compilation)
    ``params = {"dense": [layer, ...], "out": layer | None}`` with ``layer = {"w": (fan_in,
    fan_out), "b": (fan_out,)}`` (a layer computes ``x @ w + b``).
    ``sn_state = {"u": [u, ...]}`` — one persistent power-iteration vector ``u`` of shape
    (fan_out,) per dense layer, aligned with ``params["dense"]``; ``{}`` when
    ``spec.spectral_norm`` is False.

``apply_backbone(spec, params, sn_state, x, *, train=False, key=None, power_iterations=1)
-> (features, new_sn_state)``
    ``x`` of shape (..., in_dim) → features (..., width), or (..., out_dim) with an out layer.

Topology
--------
Residual (``residual=True``; the paper's): ``h0 = Dropout(act(x W_in + b_in))``, then ``depth``
blocks ``h ← h + Dropout(act(h W1 + b1)) W2 + b2`` (dense → activation → dropout → dense, plus
skip). ``params["dense"]`` = [input, block0.dense1, block0.dense2, block1.dense1, ...].

Plain (``residual=False``; used by DKL): ``depth`` hidden layers ``h ← Dropout(act(h W + b))``
(the input layer is the first of them). ``params["dense"]`` = the hidden layers in order.

Either topology ends with an optional linear out layer (``out_dim``; no activation, never
spectrally normalised).

Dropout (inverted: kept units scaled by 1/(1−p)) is active only when ``train=True``,
``spec.dropout > 0`` and a ``key`` is given — so MC-dropout can call ``train=True`` at prediction.

Spectral normalisation (Miyato et al. 2018; the SNGP form of Liu et al. 2020): every dense layer
of ``params["dense"]`` is used as ``W_eff = W·min(1, c/σ̂)`` with ``c = sn_coeff`` and
``σ̂ = vᵀ W u`` estimated by power iteration from the layer's persistent ``u`` (see
:func:`spectral_normalize`). ``apply_backbone`` runs ``power_iterations`` steps from the stored
``u`` in both modes: with ``train=True`` it returns the updated ``u`` (training: one step per
forward pass, the default), with ``train=False`` it returns ``sn_state`` unchanged (prediction:
pass ``power_iterations=3``, the paper's refinement steps; the refinement is not persisted, so
predictions are a pure function of the fitted state). Gradients never flow through ``u``/``v``.

Initialisation: weights ``N(0, s²)`` with ``s² = 2/(fan_in + fan_out)`` (Glorot normal) for
tanh/gelu and ``s² = 2/fan_in`` (He normal) for relu; the out layer is Glorot normal; biases
are zero; each ``u`` is a random unit vector.

Shared hyper-parameters
-----------------------
:data:`SHARED_DEFAULTS` and :data:`SHARED_SEARCH_SPACE` (paper App. C.4, the final runs' space)
— every neural method merges them into its own ``defaults``/``search_space``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

#: The shared neural-network hyper-parameters (App. C.4): the residual backbone's width and
#: number of blocks, NAdamW settings and the minibatch schedule. Activation is fixed to tanh
#: (the final runs); it is a constructor keyword but not searched.
SHARED_DEFAULTS: dict[str, Any] = {
    "width": 32,
    "n_blocks": 2,
    "n_epochs": 150,
    "batch_size": 128,
    "learning_rate": 2e-3,
    "weight_decay": 1e-4,
    "momentum": 0.9,
    "activation": "tanh",
}

#: The shared search space (App. C.4; widths of the final runs).
SHARED_SEARCH_SPACE: dict[str, tuple] = {
    "width": ("categorical", [16, 32, 64]),
    "n_blocks": ("int", 1, 4),
    "n_epochs": ("int", 50, 200),
    "batch_size": ("categorical", [64, 128, 256, 512]),
    "learning_rate": ("float", 1e-4, 5e-3, "log"),
    "weight_decay": ("float", 1e-6, 1e-2, "log"),
    "momentum": ("float", 0.7, 0.95),
}

ACTIVATIONS = {"tanh": jnp.tanh, "relu": jax.nn.relu, "gelu": jax.nn.gelu}

_NORM_EPS = 1e-12


@dataclass(frozen=True)
class BackboneSpec:
    """The backbone's architecture (hashable, so it can be a static jit argument).

    ``depth``: residual=True — number of residual blocks (≥ 0); residual=False — number of
    hidden layers (≥ 1; the input layer counts as the first). ``out_dim=None``: the features
    are the last hidden layer (``width``).
    """

    in_dim: int
    width: int
    depth: int
    residual: bool = True
    activation: str = "tanh"
    dropout: float = 0.0
    spectral_norm: bool = False
    sn_coeff: float = 1.0
    out_dim: int | None = None

    def __post_init__(self) -> None:
        if self.in_dim < 1 or self.width < 1:
            raise ValueError(f"in_dim and width must be >= 1, got {self.in_dim}, {self.width}")
        if self.depth < (0 if self.residual else 1):
            raise ValueError(f"depth {self.depth} too small for residual={self.residual}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, "
                             f"got {self.activation!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        if self.spectral_norm and not self.sn_coeff > 0:
            raise ValueError(f"sn_coeff must be > 0, got {self.sn_coeff}")
        if self.out_dim is not None and self.out_dim < 1:
            raise ValueError(f"out_dim must be >= 1 or None, got {self.out_dim}")

    @property
    def feature_dim(self) -> int:
        """The width of ``apply_backbone``'s output."""
        return self.width if self.out_dim is None else self.out_dim

    def dense_shapes(self) -> list[tuple[int, int]]:
        """(fan_in, fan_out) of every dense (possibly spectrally normalised) layer, in order."""
        if self.residual:
            return [(self.in_dim, self.width)] + [(self.width, self.width)] * (2 * self.depth)
        return [(self.in_dim, self.width)] + [(self.width, self.width)] * (self.depth - 1)


# -- spectral normalisation (pure functions) ------------------------------------------------
def _unit(vector: jax.Array) -> jax.Array:
    return vector / (jnp.linalg.norm(vector) + _NORM_EPS)


def power_iteration(w: jax.Array, u: jax.Array, n_steps: int) -> tuple[jax.Array, jax.Array]:
    """``n_steps`` power-iteration steps for the top singular pair of ``w`` (fan_in, fan_out).

    Starting from ``u`` (fan_out,): ``v ← unit(W u)``, ``u ← unit(Wᵀ v)``. Returns
    ``(u, v)`` with ``v = unit(W u)`` for the final ``u`` (so ``σ̂ = vᵀ W u = ‖W u‖``, a lower
    bound of σ_max for any unit ``u``). ``n_steps = 0`` returns the normalised start.
    """
    u = _unit(u)
    for _ in range(int(n_steps)):
        v = _unit(w @ u)
        u = _unit(w.T @ v)
    return u, _unit(w @ u)


def spectral_normalize(w: jax.Array, u: jax.Array, coeff: float,
                       n_steps: int) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(W_eff, u_new, σ̂)``: ``W_eff = W·min(1, coeff/σ̂)``, ``σ̂ = vᵀ W u_new``.

    ``u_new``/``v`` come from :func:`power_iteration` on ``stop_gradient(W)`` and are constants
    for differentiation; ``σ̂`` is differentiable in ``W`` (Miyato et al. 2018).
    """
    u_new, v = power_iteration(jax.lax.stop_gradient(w), u, n_steps)
    u_new = jax.lax.stop_gradient(u_new)
    v = jax.lax.stop_gradient(v)
    sigma = v @ (w @ u_new)
    factor = jnp.minimum(1.0, coeff / jnp.maximum(sigma, _NORM_EPS))
    return w * factor, u_new, sigma


# -- initialisation --------------------------------------------------------------------------
def init_backbone(spec: BackboneSpec,
                  key: jax.Array | int | np.random.Generator) -> tuple[dict, dict]:
    """Initial ``(params, sn_state)`` (see the module docstring for the layout and scheme).

    ``key``: a JAX PRNG key (jittable and vmappable, e.g. over member keys), or an ``int``
    seed / ``numpy.random.Generator`` — the same scheme drawn with NumPy, which needs no XLA
    compilation (JAX's random-number kernels take seconds to compile on CPU).
    """
    shapes = spec.dense_shapes()
    he = spec.activation == "relu"
    if isinstance(key, int | np.integer | np.random.Generator):
        rng = np.random.default_rng(key)

        def normal(shape: tuple[int, ...]) -> np.ndarray:
            return rng.standard_normal(shape).astype(np.float32)

        draws = [normal(shape) for shape in shapes]
        out_draw = normal((spec.width, spec.out_dim)) if spec.out_dim is not None else None
        u_draws = [normal((fo,)) for _, fo in shapes]
        u_draws = [draw / np.float32(np.linalg.norm(draw) + _NORM_EPS) for draw in u_draws]
    else:
        k_dense, k_out, k_u = jax.random.split(key, 3)
        draws = [jax.random.normal(k, shape, dtype=jnp.float32)
                 for k, shape in zip(jax.random.split(k_dense, len(shapes)), shapes,
                                     strict=True)]
        out_draw = (jax.random.normal(k_out, (spec.width, spec.out_dim), dtype=jnp.float32)
                    if spec.out_dim is not None else None)
        u_draws = [_unit(jax.random.normal(k, (fo,), dtype=jnp.float32))
                   for k, (_, fo) in zip(jax.random.split(k_u, len(shapes)), shapes,
                                         strict=True)]

    def dense(draw: jax.Array, he: bool) -> dict[str, jax.Array]:
        fan_in, fan_out = draw.shape
        var = 2.0 / fan_in if he else 2.0 / (fan_in + fan_out)
        return {"w": np.float32(np.sqrt(var)) * draw, "b": np.zeros((fan_out,), np.float32)}

    params = {"dense": [dense(draw, he) for draw in draws],
              "out": None if out_draw is None else dense(out_draw, he=False)}
    sn_state = {"u": u_draws} if spec.spectral_norm else {}
    return jax.tree.map(jnp.asarray, (params, sn_state))


# -- forward pass ----------------------------------------------------------------------------
def _dropout(h: jax.Array, rate: float, key: jax.Array | None) -> jax.Array:
    if key is None or rate <= 0.0:
        return h
    keep = jax.random.bernoulli(key, 1.0 - rate, h.shape)
    return jnp.where(keep, h / (1.0 - rate), 0.0)


def apply_backbone(spec: BackboneSpec, params: dict, sn_state: dict, x: jax.Array, *,
                   train: bool = False, key: jax.Array | None = None,
                   power_iterations: int = 1) -> tuple[jax.Array, dict]:
    """Features of ``x`` (..., in_dim) and the new ``sn_state`` (module docstring)."""
    act = ACTIVATIONS[spec.activation]
    layers = params["dense"]
    use_dropout = train and spec.dropout > 0.0 and key is not None
    drop_keys = (list(jax.random.split(key, len(layers))) if use_dropout
                 else [None] * len(layers))
    rate = spec.dropout if use_dropout else 0.0

    new_u = []
    weights = []
    for i, layer in enumerate(layers):
        w = layer["w"]
        if spec.spectral_norm:
            w, u_new, _ = spectral_normalize(w, sn_state["u"][i], spec.sn_coeff,
                                             power_iterations)
            new_u.append(u_new)
        weights.append(w)

    def dense(i: int, h: jax.Array) -> jax.Array:
        return h @ weights[i] + layers[i]["b"]

    h = _dropout(act(dense(0, x)), rate, drop_keys[0])
    if spec.residual:
        for block in range(spec.depth):
            i1, i2 = 1 + 2 * block, 2 + 2 * block
            inner = _dropout(act(dense(i1, h)), rate, drop_keys[i1])
            h = h + dense(i2, inner)
    else:
        for i in range(1, spec.depth):
            h = _dropout(act(dense(i, h)), rate, drop_keys[i])
    if params.get("out") is not None:
        h = h @ params["out"]["w"] + params["out"]["b"]
    if spec.spectral_norm and train:
        return h, {"u": new_u}
    return h, sn_state


def spectral_norms(spec: BackboneSpec, params: dict, sn_state: dict,
                   power_iterations: int = 3) -> list[float]:
    """Exact largest singular values of the effective (normalised) dense weights at prediction.

    A diagnostic: the weights ``apply_backbone(..., train=False, power_iterations=...)`` uses.
    """
    out = []
    for i, layer in enumerate(params["dense"]):
        w = layer["w"]
        if spec.spectral_norm:
            w, _, _ = spectral_normalize(w, sn_state["u"][i], spec.sn_coeff, power_iterations)
        out.append(float(np.linalg.svd(np.asarray(w, dtype=np.float64), compute_uv=False)[0]))
    return out
