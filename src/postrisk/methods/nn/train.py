"""The one training loop all neural methods share (paper App. C.4).

API
---
``nadamw(learning_rate, momentum, weight_decay, decay_mask=None) -> Optimizer``
    ``clip_by_global_norm(1.0)`` then ``optax.nadamw(lr, b1=momentum, b2=0.999, eps=1e-8,
    weight_decay=weight_decay, mask=decay_mask)`` (constant lr, decoupled weight decay, applied
    to the leaves ``decay_mask(params)`` marks, all by default). The three numbers are *traced*
    (``optax.inject_hyperparams``): they live in the optimiser state, and every setting uses
    the same transformation object, so a tuning sweep whose trials share an architecture and
    batch shape compiles the training loop once (:func:`loop_compilations` counts them).

``sgd(learning_rate, momentum, clip_norm=CLIP_NORM) -> Optimizer``
    ``clip_by_global_norm(clip_norm)`` (``None``: no clipping; else a positive threshold) then
    ``optax.sgd(lr, momentum)`` (heavy ball: trace ← g + momentum·trace, θ ← θ − lr·trace),
    SWAG's phase after training. All three numbers are traced (``None`` as +inf, which passes
    the gradients through unchanged), so every setting shares one compiled loop.

``train(loss_fn, params, state, x, y, *, optimizer, n_epochs, batch_size, key, n_members=None,
member_rows=None, label="train: epochs") -> (params, state, history)``
    ``loss_fn(params, state, xb, yb, key) -> (loss, new_state)`` is the loss of ONE member on
    one minibatch (a scalar, normally the mean over the batch plus penalties; ``state`` is any
    pytree carried between steps and not differentiated, e.g. spectral-norm vectors or traced
    settings such as a dropout rate — use ``{}`` when there is none; ``key`` is a fresh PRNG
    key per step for dropout etc.). ``optimizer`` is an :class:`Optimizer` (e.g.
    :func:`nadamw`) or any optax ``GradientTransformation`` (e.g. DKL's own AdamW with a
    warm-up cosine schedule). ``x`` (n, ...) and ``y`` (n, ...) are the training arrays
    (``jnp.asarray``: float32, or float64 under ``jax.enable_x64(True)``).

    Epochs: each epoch draws a fresh random permutation of the rows (argsort of uniforms) and
    runs ``ceil(n/batch_size)`` steps on batches of exactly ``batch_size`` rows; the last batch
    is completed with rows from the start of the same permutation, so every row is used at
    least once per epoch and every step has the same shape. ``batch_size=None`` (or ≥ n) =
    full batch, one step per epoch, no shuffling. The whole loop is jitted (``lax.scan`` over
    steps inside a ``lax.fori_loop`` over epochs) and compiled once per (loss_fn, optimizer
    transformation, shapes, batch size): the number of epochs is a traced value too. Pass the
    same ``loss_fn`` object to reuse it. The epochs run in chunks of at most
    :data:`CHUNK_EPOCHS` (about a tenth of them each), and the progress (epochs, the last
    epoch's mean loss) is logged after each, prefixed by ``label``.

    Members ("members vmapped as one model"): with ``n_members = M`` every leaf of ``params``
    and ``state`` has a leading member axis M, the optimiser state is per member (``init`` and
    ``update`` vmapped) and member i trains with key ``jax.random.split(key, M)[i]`` — exactly
    as ``train(..., key=split[i])`` would train it alone (its own shuffling, its own gradient
    clipping; the joint loss is the sum over members of the per-member mean-over-batch loss).
    ``member_rows`` (M, n_sub) integer array: member i trains only on rows
    ``member_rows[i]`` (bagging; equal sizes, repeats allowed for resampling with replacement).
    Per-member settings (several configurations of one architecture trained as one program,
    e.g. a sweep's trials): ``optimizer=per_member([...])`` gives member i its own traced
    numbers, and ``n_epochs`` a sequence of M counts gives member i its own (the loop runs to
    the largest; a member stops after its own, its later losses NaN) — member i then trains
    exactly as it would alone with those settings. ``member_keys`` (M keys) replaces the
    members' keys ``split(key, M)``: stacking several models (each its own members and keys)
    into one call trains each as its own call would.

    ``history = {"loss": per-epoch mean training loss, shape (n_epochs,) or (M, n_epochs),
    "seconds": wall time of the loop including compilation}``.

    Running moments (SWAG): with ``moments_every = k`` the loop also keeps, inside the compiled
    loop, the running means of θ and θ² over the parameters after every k-th epoch;
    ``history["moments"] = {"count", "mean", "sq_mean"}`` (per member with members).

Keys: the per-epoch key is ``fold_in(member_key, epoch)``; it is split into the permutation key
and one key per step.

``compiled_loop_sharing(False)`` (a context manager, for benchmarks) restores the behaviour
before the hyper-parameters were traced: :func:`nadamw` then bakes its numbers into a new
transformation per setting, so every new setting compiles the loop anew.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import numbers
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from postrisk.core.progress import progress_steps

logger = logging.getLogger(__name__)

#: Global-norm gradient clipping threshold of the shared optimiser (App. C.4).
CLIP_NORM = 1.0
#: The most epochs one compiled call runs (the per-call loss buffer's static length).
CHUNK_EPOCHS = 32

LossFn = Callable[[Any, Any, jax.Array, jax.Array, jax.Array], tuple[jax.Array, Any]]

_SHARING = {"enabled": True}
_TRACES = {"loop": 0}


def loop_compilations() -> int:
    """How many times the training loop has been traced (= compiled) in this process."""
    return _TRACES["loop"]


@contextlib.contextmanager
def compiled_loop_sharing(enabled: bool) -> Iterator[None]:
    """Within the block, :func:`nadamw` traces its numbers (True, the default) or bakes them
    into a new transformation per setting (False: the loop compiles for every new setting)."""
    previous = _SHARING["enabled"]
    _SHARING["enabled"] = bool(enabled)
    try:
        yield
    finally:
        _SHARING["enabled"] = previous


def _nadamw_chain(learning_rate: Any, momentum: Any, weight_decay: Any,
                  decay_mask: Callable | None = None) -> optax.GradientTransformation:
    return optax.chain(
        optax.clip_by_global_norm(CLIP_NORM),
        optax.nadamw(learning_rate, b1=momentum, b2=0.999, eps=1e-8,
                     weight_decay=weight_decay, mask=decay_mask),
    )


@functools.lru_cache(maxsize=16)
def _traced_nadamw(decay_mask: Callable | None) -> optax.GradientTransformation:
    """The one NAdamW transformation (per weight-decay mask) with traced hyper-parameters."""
    return optax.inject_hyperparams(_nadamw_chain, static_args=("decay_mask",))(
        learning_rate=0.0, momentum=0.0, weight_decay=0.0, decay_mask=decay_mask)


@functools.lru_cache(maxsize=64)
def _baked_nadamw(learning_rate: float, momentum: float, weight_decay: float,
                  decay_mask: Callable | None) -> optax.GradientTransformation:
    return _nadamw_chain(learning_rate, momentum, weight_decay, decay_mask)


def _sgd_chain(learning_rate: Any, momentum: Any,
               clip_norm: Any) -> optax.GradientTransformation:
    return optax.chain(optax.clip_by_global_norm(clip_norm),
                       optax.sgd(learning_rate, momentum=momentum))


@functools.lru_cache(maxsize=1)
def _traced_sgd() -> optax.GradientTransformation:
    """The one SGD transformation, its three numbers traced (the clip threshold too: with
    ``clip_by_global_norm``'s ``select(norm < max_norm, g, g / norm · max_norm)`` a threshold of
    +inf passes every finite gradient through unchanged, bit for bit)."""
    return optax.inject_hyperparams(_sgd_chain)(learning_rate=0.0, momentum=0.0,
                                                clip_norm=CLIP_NORM)


@dataclass(frozen=True, eq=False)
class Optimizer:
    """An optax transformation plus the values of its traced hyper-parameters.

    ``transform`` is a static argument of the compiled loop (shared by every setting);
    ``hyperparams`` are written into the state at :meth:`init`, so they are traced.
    """

    transform: optax.GradientTransformation
    hyperparams: Mapping[str, float]

    def init(self, params: Any) -> Any:
        return with_hyperparams(self.transform.init(params), self.hyperparams)

    def update(self, updates: Any, state: Any, params: Any = None) -> tuple[Any, Any]:
        return self.transform.update(updates, state, params)


def with_hyperparams(opt_state: Any, values: Mapping[str, Any]) -> Any:
    """``opt_state`` of an ``inject_hyperparams`` transformation with ``values`` written in
    (each broadcast to the shape and dtype of the value it replaces, e.g. a member axis; a
    value with that member axis gives each member its own, :func:`per_member`)."""
    current = opt_state.hyperparams
    unknown = sorted(set(values) - set(current))
    if unknown:
        raise ValueError(f"unknown optimiser hyper-parameter(s) {unknown}; have "
                         f"{sorted(current)}")
    new = dict(current)
    for name, value in values.items():
        old = jnp.asarray(current[name])
        if np.ndim(value) == 0:
            new[name] = jnp.full(old.shape, value, dtype=old.dtype)
        else:
            new[name] = jnp.broadcast_to(jnp.asarray(value, dtype=old.dtype), old.shape)
    return opt_state._replace(hyperparams=new)


def per_member(optimizers: list[Optimizer]) -> Optimizer:
    """One optimiser whose traced numbers differ per member: member i of a vmapped
    :func:`train` call runs with ``optimizers[i]``'s (all must share one transformation, as
    the settings of :func:`nadamw` or :func:`sgd` do)."""
    if not optimizers or any(not isinstance(o, Optimizer) for o in optimizers):
        raise ValueError("per_member needs one or more Optimizer objects (traced settings)")
    transform = optimizers[0].transform
    if any(o.transform is not transform for o in optimizers):
        raise ValueError("per_member: the optimisers differ in their transformation; only "
                         "their traced numbers may differ")
    names = list(optimizers[0].hyperparams)
    return Optimizer(transform, {name: np.asarray([o.hyperparams[name] for o in optimizers])
                                 for name in names})


def sgd(learning_rate: float, momentum: float,
        clip_norm: float | None = CLIP_NORM) -> Optimizer:
    """Global-norm clip at ``clip_norm`` (``None``: no clipping), then SGD with heavy-ball
    momentum (SWAG's phase after training); the three numbers are traced (``None`` as +inf),
    so every setting shares one compiled loop."""
    if clip_norm is None:
        threshold = math.inf
    elif isinstance(clip_norm, numbers.Real) and not isinstance(clip_norm, bool) \
            and clip_norm > 0:  # NaN fails the comparison
        threshold = float(clip_norm)
    else:
        raise ValueError(f"clip_norm must be a positive number or None, got {clip_norm!r}")
    return Optimizer(_traced_sgd(), {"learning_rate": float(learning_rate),
                                     "momentum": float(momentum), "clip_norm": threshold})


def nadamw(learning_rate: float, momentum: float, weight_decay: float,
           decay_mask: Callable | None = None) -> Optimizer | optax.GradientTransformation:
    """Global-norm clip 1, then NAdamW(lr, β₁ = momentum, β₂ = 0.999, ε = 1e-8, wd) with the
    weight decay on the leaves ``decay_mask(params)`` marks True (all when None). The numbers
    are traced (module docstring); pass a module-level ``decay_mask`` function so that fits
    share its compiled loop."""
    values = {"learning_rate": float(learning_rate), "momentum": float(momentum),
              "weight_decay": float(weight_decay)}
    if not _SHARING["enabled"]:
        return _baked_nadamw(*values.values(), decay_mask)
    return Optimizer(_traced_nadamw(decay_mask), values)


def steps_per_epoch(n_rows: int, batch_size: int | None) -> tuple[int, int]:
    """(steps per epoch, rows per step) for ``n_rows`` rows (``None`` or ≥ n: full batch)."""
    if batch_size is None or batch_size >= n_rows:
        return 1, n_rows
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    return math.ceil(n_rows / batch_size), int(batch_size)


def _epoch(carry: tuple, x: jax.Array, y: jax.Array, epoch_key: jax.Array, *,
           loss_fn: LossFn, optimizer: optax.GradientTransformation,
           batch_size: int | None) -> tuple[tuple, jax.Array]:
    """One epoch of one member: shuffled minibatch steps; returns (carry, mean step loss)."""
    n = x.shape[0]
    n_steps, rows = steps_per_epoch(n, batch_size)
    perm_key, steps_key = jax.random.split(epoch_key)
    step_keys = jax.random.split(steps_key, n_steps)
    if n_steps == 1 and rows == n:
        index = jnp.arange(n)[None, :]
    else:
        perm = jnp.argsort(jax.random.uniform(perm_key, (n,)))
        pad = n_steps * rows - n
        index = jnp.concatenate([perm, perm[:pad]]).reshape(n_steps, rows)

    grad_fn = jax.value_and_grad(loss_fn, has_aux=True)

    def step(carry: tuple, inputs: tuple) -> tuple[tuple, jax.Array]:
        params, state, opt_state = carry
        idx, key = inputs
        (loss, new_state), grads = grad_fn(params, state, x[idx], y[idx], key)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        return (params, new_state, opt_state), loss

    carry, losses = jax.lax.scan(step, carry, (index, step_keys))
    return carry, losses.mean()


def _epochs(carry: tuple, losses: jax.Array, x: jax.Array, y: jax.Array, key: jax.Array,
            start: jax.Array, stop: jax.Array, **settings: Any) -> tuple[tuple, jax.Array]:
    """Epochs ``start ≤ e < stop`` of one member; epoch e's loss goes to ``losses[e − start]``."""

    def body(epoch: jax.Array, value: tuple) -> tuple:
        (inner, moments), losses = value
        inner, loss = _epoch(inner, x, y, jax.random.fold_in(key, epoch), **settings)
        if moments:  # collecting running moments of the parameters (static)
            moments = _accumulate(moments, inner[0], epoch)
        return (inner, moments), losses.at[epoch - start].set(loss)

    return jax.lax.fori_loop(start, stop, body, (carry, losses))


def _accumulate(moments: dict, params: Any, epoch: jax.Array) -> dict:
    """Add ``params`` to the running first and second moments after every ``every``-th epoch
    (a running mean, so no sums grow): with k the new count, m ← m + (θ − m)/k."""
    take = ((epoch + 1) % moments["every"]) == 0
    count = moments["count"] + take.astype(moments["count"].dtype)
    weight = jnp.where(take, 1.0 / jnp.maximum(count, 1), 0.0)

    def update(average: jax.Array, value: jax.Array) -> jax.Array:
        return average + weight.astype(average.dtype) * (value - average)

    return {**moments, "count": count,
            "mean": jax.tree.map(update, moments["mean"], params),
            "sq_mean": jax.tree.map(lambda a, p: update(a, p * p), moments["sq_mean"], params)}


@functools.partial(jax.jit, static_argnames=("loss_fn", "optimizer", "batch_size", "members",
                                             "member_stops"))
def _run_epochs(carry: tuple, losses: jax.Array, x: jax.Array, y: jax.Array, keys: jax.Array,
                start: jax.Array, stop: jax.Array, *, loss_fn: LossFn,
                optimizer: optax.GradientTransformation, batch_size: int | None,
                members: bool, member_stops: bool = False) -> tuple[tuple, jax.Array]:
    _TRACES["loop"] += 1  # runs only while tracing, i.e. once per compilation
    run = functools.partial(_epochs, loss_fn=loss_fn, optimizer=optimizer,
                            batch_size=batch_size)
    if members:  # with member_stops, each member's own last epoch (a batched loop bound)
        run = jax.vmap(run, in_axes=(0, 0, 0, 0, 0, None, 0 if member_stops else None))
    return run(carry, losses, x, y, keys, start, stop)


def train(loss_fn: LossFn, params: Any, state: Any, x: Any, y: Any, *,
          optimizer: Optimizer | optax.GradientTransformation, n_epochs: int,
          batch_size: int | None, key: jax.Array | None, n_members: int | None = None,
          member_rows: Any = None, label: str = "train: epochs",
          moments_every: int | None = None, member_keys: Any = None,
          checkpoints: Sequence[int] = (),
          after_checkpoint: Callable[[int, Any, Any], None] | None = None,
          ) -> tuple[Any, Any, dict]:
    """Train one model or ``n_members`` vmapped members (see the module docstring).

    ``checkpoints``: epochs after which ``after_checkpoint(epoch, params, state)`` is called
    (a validation report; it may raise to end the training). The loop's chunks end there too;
    the steps, and so the trained parameters, are the same with or without them."""
    members = n_members is not None
    member_epochs = np.ndim(n_epochs) > 0
    if member_epochs:
        epochs = np.asarray(n_epochs).astype(int)
        if not members or epochs.shape != (int(n_members),):
            raise ValueError(f"per-member n_epochs needs n_members and one count per member; "
                             f"got {np.shape(n_epochs)} for n_members={n_members}")
        n_epochs = int(epochs.max())
        if int(epochs.min()) < 1:
            raise ValueError(f"n_epochs must be >= 1, got {epochs.tolist()}")
    n_epochs = int(n_epochs)
    if n_epochs < 1:
        raise ValueError(f"n_epochs must be >= 1, got {n_epochs}")
    x = jnp.asarray(x)  # float32, or float64 inside ``jax.enable_x64(True)``
    y = jnp.asarray(y)
    if member_rows is not None:
        if not members:
            raise ValueError("member_rows needs n_members")
        rows = np.asarray(member_rows)
        if rows.ndim != 2 or rows.shape[0] != n_members:
            raise ValueError(f"member_rows must have shape ({n_members}, n_sub), got "
                             f"{rows.shape}")
        x, y = x[rows], y[rows]
    elif members:
        # every member sees all rows: the same compiled loop as with member_rows
        x = jnp.broadcast_to(x, (int(n_members), *x.shape))
        y = jnp.broadcast_to(y, (int(n_members), *y.shape))
    n_rows = x.shape[1] if members else x.shape[0]
    if batch_size is not None:
        batch_size = int(batch_size)
        if batch_size >= n_rows:
            batch_size = None

    transform = optimizer.transform if isinstance(optimizer, Optimizer) else optimizer
    if members:
        if member_keys is not None:
            keys = jnp.asarray(member_keys)
            if keys.shape[0] != int(n_members):
                raise ValueError(f"member_keys must hold {n_members} keys, got {keys.shape}")
        else:
            keys = jax.random.split(key, int(n_members))
        opt_state = jax.vmap(transform.init)(params)
        buffer_shape: tuple[int, ...] = (int(n_members), CHUNK_EPOCHS)
    else:
        keys = key
        opt_state = transform.init(params)
        buffer_shape = (CHUNK_EPOCHS,)
    if isinstance(optimizer, Optimizer):
        opt_state = with_hyperparams(opt_state, optimizer.hyperparams)

    moments: dict = {}
    if moments_every is not None:
        if int(moments_every) < 1:
            raise ValueError(f"moments_every must be >= 1, got {moments_every!r}")
        lead = (int(n_members),) if members else ()
        zeros = jax.tree.map(jnp.zeros_like, params)
        moments = {"count": jnp.zeros(lead, jnp.int32),
                   "every": jnp.full(lead, int(moments_every), jnp.int32),
                   "mean": zeros, "sq_mean": zeros}
    carry = ((params, state, opt_state), moments)
    chunk = min(CHUNK_EPOCHS, max(1, math.ceil(n_epochs / 10)))
    history = []
    t0 = time.perf_counter()
    start = 0
    marks = sorted({int(c) for c in checkpoints if 0 < int(c) < n_epochs})
    if marks and (after_checkpoint is None or members):
        raise ValueError("checkpoints need after_checkpoint, and one model (not members)")
    with progress_steps(n_epochs, label, logger) as progress:
        while start < n_epochs:
            stop = min([start + chunk, n_epochs, *(m for m in marks if m > start)])
            stops = (jnp.asarray(np.clip(epochs, start, stop), dtype=jnp.int32)
                     if member_epochs else jnp.int32(stop))
            carry, losses = _run_epochs(carry, jnp.zeros(buffer_shape, dtype=float), x, y, keys,
                                        jnp.int32(start), stops, loss_fn=loss_fn,
                                        optimizer=transform, batch_size=batch_size,
                                        members=members, member_stops=member_epochs)
            losses = np.asarray(losses)[..., :stop - start]
            if member_epochs:  # a member past its own last epoch has no loss
                done = np.arange(start, stop)[None, :] >= epochs[:, None]
                losses = np.where(done, np.nan, losses)
            history.append(losses)
            last = losses[..., -1]
            progress.advance(stop - start, message=f"loss {float(np.nanmean(last)):.4g}"
                             if np.isfinite(last).any() else "")
            if stop in marks:
                after_checkpoint(stop, carry[0][0], carry[0][1])
            start = stop
    (params, state, _), moments = carry
    jax.block_until_ready(params)
    out = {"loss": np.concatenate(history, axis=-1), "seconds": time.perf_counter() - t0}
    if moments:
        out["moments"] = {k: moments[k] for k in ("count", "mean", "sq_mean")}
    return params, state, out
