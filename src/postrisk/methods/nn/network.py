"""The one network model of the neural methods: backbone + head, members, passes, prediction.

Every neural method that is "the shared network with a head" (the ensembles, MC dropout,
evidential regression, DEUP and the Laplace family) builds on these pure functions; the
method classes (:mod:`postrisk.methods.nn.method`) only choose the head, the loss and how many
members or passes there are.

- :class:`NetworkSpec` — the static description (hashable: the compiled training loop and the
  compiled prediction are keyed by it): input width, backbone width and number of residual
  blocks, activation, head, and two switches: whether the network has dropout layers and
  whether its dense layers are spectrally normalised. The *values* of the dropout rate and of
  the spectral-norm coefficient are not part of it: they sit in the network's state as traced
  numbers (:func:`init_network`), so a sweep over them shares one compilation.
- :func:`init_network` / :func:`init_members` — initial ``(params, state)`` of one network or
  of M members stacked on a leading axis, drawn with NumPy from integer seeds (no compilation).
  ``state = {"sn": spectral-norm vectors, "settings": {"dropout", "sn_coeff", ...}}``; a loss
  may keep its own traced numbers in ``settings`` (e.g. the evidential regulariser's weight).
- :func:`forward` — raw head outputs; dropout is on when a ``dropout_key`` is given (and the
  spec has dropout layers), the power-iteration vectors are updated when ``update_sn`` is True.
- :func:`training_forward` — the forward pass a loss uses (both switches on).
- :func:`gaussian_nll_loss` — the shared Gaussian objective (mean NLL over the batch) for a
  spec with a Gaussian head.
- :func:`predict_raw` — raw outputs at many rows, batched over members (``members=True``) or
  over dropout passes (``pass_keys``), in padded blocks of rows so prediction compiles once
  per spec and block size; spectral norms use :data:`PREDICT_POWER_ITERATIONS` refinement steps.
- :func:`predict_features` — one network's last-layer features and raw outputs (the Laplace
  methods' inputs).
- :func:`gaussian_members` — (means, variances) per member or pass from raw outputs.

Heads (:mod:`postrisk.methods.nn.heads`): ``gaussian`` (μ̃, ρ) → v = (softplus ρ + ε)²;
``natural`` (η₁, η₂); ``evidential`` (μ̃, ν, α − 1, β); ``positive`` (one softplus output).
All values are in standardised units (ỹ = (y − m_y)/s_y, Var(ỹ) = 1); the method classes map
them back to target units.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from postrisk.methods.nn.backbone import ACTIVATIONS, BackboneSpec, apply_backbone, init_backbone
from postrisk.methods.nn.heads import gaussian_head, natural_gaussian_head, pointwise_gaussian_nll

#: Raw outputs per head.
HEAD_OUTPUTS = {"gaussian": 2, "natural": 2, "evidential": 4, "positive": 1}
#: Gaussian heads and how their raw outputs become (μ̃, ṽ).
GAUSSIAN_HEADS = {"gaussian": gaussian_head, "natural": natural_gaussian_head}
#: Power-iteration refinement steps of the spectral norms at prediction (paper).
PREDICT_POWER_ITERATIONS = 3
#: The largest block of rows one compiled prediction call takes (smaller inputs are padded to
#: the next power of two, so a method compiles a handful of block sizes at most).
BLOCK_ROWS = 1024


@dataclass(frozen=True)
class NetworkSpec:
    """The network's architecture and head (see the module docstring)."""

    in_dim: int
    width: int
    n_blocks: int
    head: str = "gaussian"
    activation: str = "tanh"
    dropout: bool = False
    spectral_norm: bool = False

    def __post_init__(self) -> None:
        if self.head not in HEAD_OUTPUTS:
            raise ValueError(f"head must be one of {sorted(HEAD_OUTPUTS)}, got {self.head!r}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, "
                             f"got {self.activation!r}")
        self.backbone  # validates the sizes  # noqa: B018

    @property
    def backbone(self) -> BackboneSpec:
        """The residual backbone with a linear out layer of the head's width. Its dropout
        rate and spectral-norm coefficient are placeholders: the values are traced
        (``state["settings"]``)."""
        return BackboneSpec(in_dim=int(self.in_dim), width=int(self.width),
                            depth=int(self.n_blocks), residual=True,
                            activation=self.activation, dropout=0.0,
                            spectral_norm=bool(self.spectral_norm), sn_coeff=1.0,
                            out_dim=HEAD_OUTPUTS[self.head])


def init_network(spec: NetworkSpec, seed: int, *, dropout: float = 0.0, sn_coeff: float = 1.0,
                 **settings: float) -> tuple[dict, dict]:
    """Initial ``(params, state)`` of one network from an integer seed (NumPy draws, see
    :func:`postrisk.methods.nn.backbone.init_backbone`); ``settings`` are extra traced numbers
    for the loss, kept in ``state["settings"]``."""
    if not 0.0 <= float(dropout) < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
    if dropout > 0 and not spec.dropout:
        raise ValueError("a dropout rate > 0 needs a spec with dropout layers")
    if spec.spectral_norm and not float(sn_coeff) > 0:
        raise ValueError(f"sn_coeff must be > 0, got {sn_coeff!r}")
    params, sn_state = init_backbone(spec.backbone, int(seed))
    values = {"dropout": float(dropout), "sn_coeff": float(sn_coeff), **settings}
    dtype = jax.dtypes.canonicalize_dtype(np.float64)
    state = {"sn": sn_state,
             "settings": {name: jnp.asarray(value, dtype=dtype) for name, value in
                          values.items()}}
    return params, state


def init_members(spec: NetworkSpec, seeds: list[int], **settings: float) -> tuple[dict, dict]:
    """:func:`init_network` for every seed, stacked on a leading member axis."""
    members = [init_network(spec, seed, **settings) for seed in seeds]
    return jax.tree.map(lambda *leaves: jnp.stack(leaves), *members)


def member(tree: Any, index: int) -> Any:
    """Member ``index`` of a member-stacked pytree."""
    return jax.tree.map(lambda leaf: leaf[index], tree)


def forward(spec: NetworkSpec, params: dict, state: dict, x: jax.Array, *,
            dropout_key: jax.Array | None = None, update_sn: bool = False,
            power_iterations: int = 1) -> tuple[jax.Array, dict]:
    """Raw head outputs (rows, HEAD_OUTPUTS[head]) at standardised inputs, and the new state."""
    settings = state["settings"]
    raw, sn_state = apply_backbone(
        spec.backbone, params, state["sn"], x,
        dropout_key=dropout_key if spec.dropout else None, update_sn=update_sn,
        power_iterations=power_iterations, dropout_rate=settings["dropout"],
        sn_coeff=settings["sn_coeff"])
    return raw, {**state, "sn": sn_state}


def training_forward(spec: NetworkSpec, params: dict, state: dict, xb: jax.Array,
                     key: jax.Array) -> tuple[jax.Array, dict]:
    """The forward pass of a training step: dropout on (with ``key``), power iteration on."""
    return forward(spec, params, state, xb, dropout_key=key, update_sn=True)


@functools.lru_cache(maxsize=64)
def gaussian_nll_loss(spec: NetworkSpec):
    """The shared Gaussian objective of one member: the mean over the batch of
    −log N(ỹ | μ̃, ṽ) (cached per spec, so every fit of that spec reuses the compiled loop)."""
    if spec.head not in GAUSSIAN_HEADS:
        raise ValueError(f"the Gaussian objective needs a Gaussian head, got {spec.head!r}")
    head = GAUSSIAN_HEADS[spec.head]

    def loss(params: dict, state: dict, xb: jax.Array, yb: jax.Array,
             key: jax.Array) -> tuple[jax.Array, dict]:
        raw, new_state = training_forward(spec, params, state, xb, key)
        mean, var = head(raw)
        return pointwise_gaussian_nll(mean, var, yb).mean(), new_state

    return loss


@functools.partial(jax.jit, static_argnames=("spec", "members"))
def _raw_block(spec: NetworkSpec, params: dict, state: dict, x: jax.Array,
               pass_keys: jax.Array | None, members: bool) -> jax.Array:
    def one(p: dict, s: dict, key: jax.Array | None) -> jax.Array:
        return forward(spec, p, s, x, dropout_key=key,
                       power_iterations=PREDICT_POWER_ITERATIONS)[0]

    if members:
        return jax.vmap(lambda p, s: one(p, s, None))(params, state)
    if pass_keys is not None:
        return jax.vmap(lambda key: one(params, state, key))(pass_keys)
    return one(params, state, None)[None]


def _in_blocks(compute: Any, x: Any) -> list[np.ndarray]:
    """``compute(block)`` on zero-padded blocks of at most :data:`BLOCK_ROWS` rows of ``x``: each
    of its outputs (arrays with rows on axis −2) cut back to the real rows and concatenated over
    the blocks, as float64."""
    x = np.asarray(x)
    m = x.shape[0]
    block = min(BLOCK_ROWS, 1 << max(0, (m - 1).bit_length()))
    dtype = jax.dtypes.canonicalize_dtype(np.float64)
    parts = []
    for start in range(0, m, block):
        rows = x[start:start + block]
        padded = np.zeros((block, x.shape[1]), dtype=dtype)
        padded[:rows.shape[0]] = rows
        parts.append([np.asarray(out, dtype=np.float64)[..., :rows.shape[0], :]
                      for out in compute(jnp.asarray(padded))])
    return [np.concatenate(outs, axis=-2) for outs in zip(*parts, strict=True)]


def predict_raw(spec: NetworkSpec, params: dict, state: dict, x: Any, *, members: bool = False,
                pass_keys: jax.Array | None = None) -> np.ndarray:
    """Raw outputs (P, m, HEAD_OUTPUTS[head]) as float64 at standardised inputs ``x`` (m, d).

    P = the number of members (``members=True``: params/state member-stacked), of dropout
    passes (``pass_keys``: one key per pass, dropout on), or 1 (a single network, dropout off).
    Computed in zero-padded blocks of at most :data:`BLOCK_ROWS` rows.
    """
    if members and pass_keys is not None:
        raise ValueError("members and dropout passes cannot be combined")
    return _in_blocks(lambda xb: (_raw_block(spec, params, state, xb, pass_keys, members),),
                      x)[0]


@functools.partial(jax.jit, static_argnames=("spec",))
def _features_block(spec: NetworkSpec, params: dict, state: dict,
                    x: jax.Array) -> tuple[jax.Array, jax.Array]:
    features_spec = dataclasses.replace(spec.backbone, out_dim=None)
    h, _ = apply_backbone(features_spec, {**params, "out": None}, state["sn"], x,
                          power_iterations=PREDICT_POWER_ITERATIONS,
                          dropout_rate=state["settings"]["dropout"],
                          sn_coeff=state["settings"]["sn_coeff"])
    return h, h @ params["out"]["w"] + params["out"]["b"]


def predict_features(spec: NetworkSpec, params: dict, state: dict,
                     x: Any) -> tuple[np.ndarray, np.ndarray]:
    """(last-layer features h (m, width), raw outputs (m, HEAD_OUTPUTS[head])) of one network
    at standardised inputs ``x`` (dropout off), float64; raw = h W_out + b_out."""
    h, raw = _in_blocks(lambda xb: _features_block(spec, params, state, xb), x)
    return h, raw


def gaussian_members(spec: NetworkSpec, raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(means, variances), each (P, m) float64, from raw Gaussian-head outputs (P, m, 2)."""
    mean, var = GAUSSIAN_HEADS[spec.head](jnp.asarray(raw))
    return np.asarray(mean, dtype=np.float64), np.asarray(var, dtype=np.float64)
