"""Deep kernel learning (``dkl``; paper App. C.2, Wilson et al. 2015).

Model, in standardised units (x̃ = (x − x̄)/s_x, t = (y − ȳ)/s_y; :mod:`postrisk.methods.scaling`):

    φ(x̃) = MLP(x̃) ∈ R^{d_φ}      the shared backbone (``postrisk.methods.nn.backbone``) with
                                  ``residual=False``, ReLU, ``depth = n_layers`` hidden layers of
                                  width ``hidden_dim`` and a linear last layer to
                                  ``d_φ = feature_space_dim`` (no dropout, no spectral norm);
    f ~ GP(0, σ²·k_{5/2}(φ(x̃), φ(x̃'); ℓ))   ARD Matérn-5/2 (``kernel_component("matern52")``);
    t_i = f(x̃_i) + ε_i,  ε_i ~ N(0, σ²_n)    one homoscedastic noise variance.

Network weights θ, σ², ℓ ∈ R^{d_φ} and σ²_n are trained jointly by minimising the exact negative
log marginal likelihood per training row,

    L = −(1/n) ln N(t | 0, K_θ + σ²_n I),   K_θ = σ² k_{5/2}(Φ_θ, Φ_θ),

full batch (Cholesky), with the shared training loop (``postrisk.methods.nn.train``, one step
per iteration, ``n_epochs = num_iters``): AdamW with a warm-up cosine learning rate (0 →
``peak_learning_rate`` over ``warmup_steps``, cosine to ``end_learning_rate`` at ``num_iters``),
global-norm gradient clipping ``gradient_clip`` and decoupled weight decay ``weight_decay`` on
the network parameters only (weights and biases), not on the kernel or noise parameters, which
are not weights: decaying their unconstrained values would pull σ², ℓ and σ²_n towards
softplus(0) ≈ 0.69 for no modelling reason.

The objective's Cholesky runs in LAPACK (``dpotrf``/``dpotrs``) through ``jax.pure_callback``
with an exact custom gradient, ∂L/∂K = (K⁻¹ − ααᵀ)/(2n) with α = K⁻¹t (``dpotri``): about three
times cheaper per step at n = 2000 than differentiating through ``jnp.linalg.cholesky`` on CPU.
The shared loop passes the data in the caller's precision (float64 here), so K, its factor and
the gradient are float64 throughout.
BLAS/LAPACK threads are limited to ``n_threads`` during ``fit`` and ``predict``.

Positive parameters are softplus of unconstrained values, initialised at the given initial
values (``noise_std``² for σ²_n, ``base_kernel_variance``, ``base_kernel_lengthscale`` for every
ℓ_j); σ²_n has a floor of :data:`MIN_NOISE_VAR` (standardised units) that keeps the Cholesky
factor well defined. All GP algebra — the fit included — runs in float64 inside
``with jax.enable_x64(True):`` (never the global switch). A non-finite objective (a failed
Cholesky) raises ``FloatingPointError``; it never yields NaN silently.

Prediction at x (target units), after factoring K_θ + σ²_n I = LLᵀ once and predicting in
blocks of rows: with k* = σ² k_{5/2}(Φ_θ, φ(x̃)),

    mean = s_y · k*ᵀ (K_θ + σ²_n I)⁻¹ t + ȳ,
    EU   = s_y² · (σ² − k*ᵀ (K_θ + σ²_n I)⁻¹ k*)    (latent posterior variance, clipped at 0),
    AU   = s_y² · σ²_n                              (constant in x).

Fitted attributes: ``noise_var_``, ``kernel_variance_``, ``lengthscale_`` (standardised units),
``loss_history_`` (the objective L per iteration), ``initial_loss_``, ``final_loss_`` (L at the
initial and at the trained parameters), ``fit_seconds_``.
"""

from __future__ import annotations

import functools
import logging
import math
import time
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import optax

from postrisk.core.threads import thread_limit
from postrisk.gp.kernels import kernel_component
from postrisk.gp.linalg import condition, negative_log_marginal_per_point, predictive_moments
from postrisk.methods.interface import Prediction, UncertaintyMethod, ValidationMonitor
from postrisk.methods.nn.backbone import BackboneSpec, apply_backbone, init_backbone
from postrisk.methods.nn.train import train
from postrisk.methods.scaling import Standardizer, as_inputs, as_training_data

logger = logging.getLogger(__name__)

#: Floor of the noise variance σ²_n in standardised units (targets have unit variance), so the
#: matrix K + σ²_n I stays safely positive definite in float64.
MIN_NOISE_VAR = 1e-6

#: Rows of evaluation inputs per prediction block.
PREDICT_BLOCK = 2048


# ---------------------------------------------------------------------------------------------
# GP on features (jax.numpy; float64 when called inside ``jax.enable_x64(True)``)
# ---------------------------------------------------------------------------------------------

def _softplus_inverse(v: float) -> float:
    """z with softplus(z) = v (v > 0), stable for large v."""
    v = float(v)
    if not v > 0:
        raise ValueError(f"a positive initial value is required, got {v!r}")
    return v + math.log(-math.expm1(-v))


def init_gp_params(feature_dim: int, noise_std: float, kernel_variance: float,
                   lengthscale: float) -> dict:
    """Unconstrained GP parameters at the given initial (natural) values, float64."""
    noise_var = float(noise_std) ** 2 - MIN_NOISE_VAR
    if not noise_var > 0:
        raise ValueError(f"noise_std must exceed sqrt({MIN_NOISE_VAR}), got {noise_std!r}")
    return {
        "noise": jnp.asarray(_softplus_inverse(noise_var), dtype=jnp.float64),
        "variance": jnp.asarray(_softplus_inverse(kernel_variance), dtype=jnp.float64),
        "lengthscale": jnp.full((int(feature_dim),), _softplus_inverse(lengthscale),
                                dtype=jnp.float64),
    }


def gp_hyper(raw: dict) -> dict:
    """Natural GP parameters from unconstrained ones: σ²_n (≥ MIN_NOISE_VAR), σ², ℓ."""
    return {"noise": jax.nn.softplus(raw["noise"]) + MIN_NOISE_VAR,
            "variance": jax.nn.softplus(raw["variance"]),
            "lengthscale": jax.nn.softplus(raw["lengthscale"])}


def kernel(hyper: dict, a, b, mode: str = "fast"):
    """σ² k_{5/2}(a, b; ℓ): the ARD Matérn-5/2 of the project's kernel module, scaled."""
    return hyper["variance"] * kernel_component("matern52", {"lengthscale": hyper["lengthscale"]},
                                                a, b, mode)


def negative_mll(features, t, hyper: dict):
    """L = −(1/n) ln N(t | 0, σ²k(Φ, Φ) + σ²_n I) (NaN if the Cholesky factor fails)."""
    n = t.shape[0]
    cov = kernel(hyper, features, features) + hyper["noise"] * jnp.eye(n, dtype=features.dtype)
    return negative_log_marginal_per_point(cov, jnp.asarray(t).astype(cov.dtype))


class GPPosterior:
    """The exact GP posterior on fixed training features, factored once (float64, numpy).

    ``train_features`` (n, d_φ), ``t`` (n,) standardised targets, ``hyper`` natural parameters.
    :meth:`predict` gives the latent posterior mean and variance at test features, in blocks.
    """

    def __init__(self, train_features, t, hyper: dict) -> None:
        self.hyper = {k: np.asarray(v, dtype=np.float64) for k, v in hyper.items()}
        self.features = np.asarray(train_features, dtype=np.float64)
        t = np.asarray(t, dtype=np.float64)
        n = t.shape[0]
        with jax.enable_x64(True):
            k = np.asarray(kernel(self.hyper, jnp.asarray(self.features),
                                  jnp.asarray(self.features), "exact"))
        cov = k + float(self.hyper["noise"]) * np.eye(n)
        try:
            self.chol, self.alpha = condition(cov, t, check_finite=True)
        except (np.linalg.LinAlgError, ValueError) as exc:
            raise FloatingPointError(
                f"DKL: Cholesky of K + σ²_n I failed ({exc}); noise variance "
                f"{float(self.hyper['noise']):.3g}, kernel variance "
                f"{float(self.hyper['variance']):.3g}") from exc

    def predict(self, test_features, block: int = PREDICT_BLOCK) -> tuple[np.ndarray, np.ndarray]:
        """Latent posterior mean and variance (≥ 0) at ``test_features`` (m, d_φ)."""
        z = np.asarray(test_features, dtype=np.float64)
        mean = np.empty(z.shape[0])
        var = np.empty(z.shape[0])
        prior_var = float(self.hyper["variance"])
        with jax.enable_x64(True):
            train = jnp.asarray(self.features)
            for start in range(0, z.shape[0], block):
                stop = min(start + block, z.shape[0])
                ks = np.asarray(kernel(self.hyper, train, jnp.asarray(z[start:stop]), "exact"))
                mean[start:stop], var[start:stop], _ = predictive_moments(
                    self.chol, self.alpha, ks, prior_var)
        return mean, var


# ---------------------------------------------------------------------------------------------
# The method
# ---------------------------------------------------------------------------------------------

class DeepKernelLearning(UncertaintyMethod):
    """Deep kernel learning: an exact GP on learned MLP features (see the module docstring).

    Hyper-parameters (the paper's search space): ``n_layers``, ``hidden_dim``,
    ``feature_space_dim``; initial values ``noise_std``, ``base_kernel_variance``,
    ``base_kernel_lengthscale``; optimiser ``num_iters``, ``warmup_steps``,
    ``peak_learning_rate``, ``end_learning_rate`` (fixed 0, not searched), ``gradient_clip``,
    ``weight_decay``. ``random_state`` seeds the network initialisation (training is full batch
    and otherwise deterministic). Progress is logged about every 10% of the iterations.
    """

    #: 2: the shared backbone's initial biases are random (were zero).
    implementation_version: ClassVar[int] = 2
    iterations_parameter: ClassVar[str] = "num_iters"
    defaults: ClassVar[dict[str, Any]] = {
        "n_layers": 2,
        "hidden_dim": 64,
        "feature_space_dim": 4,
        "noise_std": 0.2,
        "base_kernel_variance": 1.0,
        "base_kernel_lengthscale": 1.0,
        "num_iters": 300,
        "warmup_steps": 50,
        "peak_learning_rate": 5e-3,
        "end_learning_rate": 0.0,
        "gradient_clip": 1.0,
        "weight_decay": 1e-4,
    }
    search_space: ClassVar[dict[str, tuple]] = {
        "n_layers": ("categorical", [1, 2, 3]),
        "hidden_dim": ("categorical", [16, 32, 64, 128]),
        "feature_space_dim": ("int", 2, 8),
        "noise_std": ("float", 0.05, 1.0, "log"),
        "base_kernel_variance": ("float", 0.1, 5.0, "log"),
        "base_kernel_lengthscale": ("float", 0.1, 5.0, "log"),
        "num_iters": ("int", 150, 500),
        "warmup_steps": ("int", 0, 150),
        "peak_learning_rate": ("float", 5e-4, 5e-2, "log"),
        "gradient_clip": ("float", 0.5, 2.0),
        "weight_decay": ("float", 1e-6, 1e-2, "log"),
    }

    # -- internals -----------------------------------------------------------------------
    def _checked_hyper(self) -> dict:
        h = {k: getattr(self, k) for k in self.defaults}
        for key in ("n_layers", "hidden_dim", "feature_space_dim"):
            if int(h[key]) < 1 or int(h[key]) != h[key]:
                raise ValueError(f"{key} must be a positive integer, got {h[key]!r}")
        for key in ("num_iters", "warmup_steps"):
            if int(h[key]) < 0 or int(h[key]) != h[key]:
                raise ValueError(f"{key} must be a non-negative integer, got {h[key]!r}")
        for key in ("noise_std", "base_kernel_variance", "base_kernel_lengthscale",
                    "peak_learning_rate", "gradient_clip"):
            if not (math.isfinite(float(h[key])) and float(h[key]) > 0):
                raise ValueError(f"{key} must be positive and finite, got {h[key]!r}")
        for key in ("end_learning_rate", "weight_decay"):
            if not (math.isfinite(float(h[key])) and float(h[key]) >= 0):
                raise ValueError(f"{key} must be non-negative and finite, got {h[key]!r}")
        if int(h["num_iters"]) > 0 and int(h["warmup_steps"]) > int(h["num_iters"]):
            raise ValueError(f"warmup_steps ({h['warmup_steps']}) exceeds num_iters "
                             f"({h['num_iters']})")
        return h

    def backbone_spec(self, in_dim: int) -> BackboneSpec:
        """The shared backbone's spec of the feature extractor."""
        return BackboneSpec(in_dim=int(in_dim), width=int(self.hidden_dim),
                            depth=int(self.n_layers), residual=False, activation="relu",
                            dropout=0.0, spectral_norm=False,
                            out_dim=int(self.feature_space_dim))

    def optimizer(self) -> optax.GradientTransformation:
        """Clip → AdamW (warm-up cosine lr; weight decay on the network parameters only)."""
        return _optimizer(int(self.num_iters), int(self.warmup_steps),
                          float(self.peak_learning_rate), float(self.end_learning_rate),
                          float(self.gradient_clip), float(self.weight_decay))

    def _features(self, params: dict, x) -> jax.Array:
        return _features_jit(self.spec_, params["net"], x)

    # -- interface -----------------------------------------------------------------------
    def fit(self, x: np.ndarray, y: np.ndarray,
            monitor: ValidationMonitor | None = None) -> DeepKernelLearning:
        """Fit (see the class docstring). ``monitor``: after each of its checkpoints (in
        iterations) the exact GP on the current features predicts at its inputs and reports
        (an extra factorisation each); the training is the same with or without it."""
        x, y = as_training_data(x, y)
        h = self._checked_hyper()
        with thread_limit(self.n_threads):
            return self._fit(x, y, h, monitor)

    def _fit(self, x: np.ndarray, y: np.ndarray, h: dict,
             monitor: ValidationMonitor | None = None) -> DeepKernelLearning:
        t_start = time.perf_counter()
        self.scaler_ = Standardizer.fit(x, y)
        xs = self.scaler_.inputs(x)
        ts = self.scaler_.target(y)
        self.spec_ = self.backbone_spec(x.shape[1])
        num_iters = int(h["num_iters"])
        objective = _objective(self.spec_)
        with jax.enable_x64(True):
            net, sn_state = init_backbone(self.spec_, jax.random.PRNGKey(self.random_state))
            params = {"net": jax.tree_util.tree_map(_to64, net),
                      "gp": init_gp_params(h["feature_space_dim"], h["noise_std"],
                                           h["base_kernel_variance"],
                                           h["base_kernel_lengthscale"])}
            sn_state = jax.tree_util.tree_map(_to64, sn_state)
            xj, tj = jnp.asarray(xs, jnp.float64), jnp.asarray(ts, jnp.float64)
            self.initial_loss_ = float(_loss_jit(self.spec_, params, sn_state, xj, tj))
            if not math.isfinite(self.initial_loss_):
                raise FloatingPointError("DKL: the marginal likelihood at the initial parameters "
                                         "is not finite (the Cholesky factor of K + σ²_n I "
                                         "failed)")
            logger.info("[dkl] n = %d, d = %d, d_phi = %d: %d iterations, initial loss %.4f",
                        x.shape[0], x.shape[1], h["feature_space_dim"], num_iters,
                        self.initial_loss_)
            checkpoints, report = [], None
            if monitor is not None:
                checkpoints = monitor.checkpoints(num_iters)
                x_report = jnp.asarray(self.scaler_.inputs(
                    as_inputs(monitor.inputs, self.scaler_.n_features)), jnp.float64)

                def report(step, trained, _state):
                    monitor.report(step, self._prediction(trained, xj, ts, x_report))
            if num_iters > 0:
                params, sn_state, history = train(
                    objective, params, sn_state, xj, tj, optimizer=self.optimizer(),
                    n_epochs=num_iters, batch_size=None,
                    key=jax.random.PRNGKey(self.random_state), label="[dkl] iterations",
                    checkpoints=checkpoints, after_checkpoint=report)
                self.loss_history_ = np.asarray(history["loss"], dtype=np.float64)
            else:
                self.loss_history_ = np.empty(0)
            self.final_loss_ = float(_loss_jit(self.spec_, params, sn_state, xj, tj))
            if not math.isfinite(self.final_loss_) or not np.all(np.isfinite(self.loss_history_)):
                bad = np.flatnonzero(~np.isfinite(self.loss_history_))
                where = f" (first at iteration {int(bad[0]) + 1})" if bad.size else ""
                raise FloatingPointError(f"DKL: the marginal likelihood became non-finite"
                                         f"{where}: the Cholesky factor of K + σ²_n I failed")
            self.params_ = params
            hyper = gp_hyper(params["gp"])
            feats = np.asarray(self._features(params, xj))
        self.noise_var_ = float(hyper["noise"])
        self.kernel_variance_ = float(hyper["variance"])
        self.lengthscale_ = np.asarray(hyper["lengthscale"], dtype=np.float64)
        self.posterior_ = GPPosterior(feats, ts, hyper)
        self.fit_seconds_ = time.perf_counter() - t_start
        logger.info("[dkl] trained in %.1f s: loss %.4f -> %.4f, noise var %.4g, kernel var "
                    "%.4g (standardised units)", self.fit_seconds_, self.initial_loss_,
                    self.final_loss_, self.noise_var_, self.kernel_variance_)
        return self

    def _prediction(self, params: dict, xj, ts, x_report) -> Prediction:
        """The prediction (target units) at standardised inputs ``x_report`` of the exact GP
        on the features of ``params`` (a validation report along the fit)."""
        hyper = gp_hyper(params["gp"])
        try:
            posterior = GPPosterior(np.asarray(_features_jit(self.spec_, params["net"], xj)),
                                    ts, hyper)
            mean, var = posterior.predict(np.asarray(_features_jit(self.spec_, params["net"],
                                                                   x_report)))
        except FloatingPointError:  # no factor here: a report of an infinite loss
            mean = var = np.full(x_report.shape[0], np.nan)
        return self.scaler_.prediction_to_target(Prediction(
            mean=mean, aleatoric_var=np.full(mean.shape[0], float(hyper["noise"])),
            epistemic_var=var))

    def features(self, x: np.ndarray) -> np.ndarray:
        """φ(x̃) at raw inputs ``x`` (after a fit), float64 (m, d_φ)."""
        xs = self.scaler_.inputs(as_inputs(x, self.scaler_.n_features))
        out = np.empty((xs.shape[0], int(self.feature_space_dim)))
        with jax.enable_x64(True):
            for start in range(0, xs.shape[0], PREDICT_BLOCK):
                stop = min(start + PREDICT_BLOCK, xs.shape[0])
                out[start:stop] = np.asarray(
                    self._features(self.params_, jnp.asarray(xs[start:stop], jnp.float64)))
        return out

    def predict(self, x: np.ndarray) -> Prediction:
        if not hasattr(self, "posterior_"):
            raise RuntimeError("DeepKernelLearning.predict called before fit")
        x = as_inputs(x, self.scaler_.n_features)
        with thread_limit(self.n_threads):
            mean, var = self.posterior_.predict(self.features(x))
        return self.scaler_.prediction_to_target(Prediction(
            mean=mean, aleatoric_var=np.full(x.shape[0], float(self.noise_var_)),
            epistemic_var=var))


def _to64(a):
    return jnp.asarray(a, dtype=jnp.float64)


@functools.lru_cache(maxsize=64)
def _objective(spec: BackboneSpec):
    """The training loss ``loss_fn(params, state, x, t, key) -> (L, state)`` for one backbone
    spec (cached, so the shared loop's compiled training is reused across fits)."""

    def loss_fn(params, state, xb, tb, key):
        del key  # deterministic: no dropout
        loss = _exact_objective(spec, params, state, xb, tb)
        # Recorded as float32 in the loop's history; the cast keeps the gradient exact (its
        # cotangent is 1) while the objective itself is computed in float64.
        return loss.astype(jnp.float32), state

    return loss_fn


def _exact_objective(spec: BackboneSpec, params, state, x, t):
    feats, _ = apply_backbone(spec, params["net"], state, x)
    return negative_mll(feats, t, gp_hyper(params["gp"]))


@functools.partial(jax.jit, static_argnums=0)
def _loss_jit(spec: BackboneSpec, params, state, x, t):
    """L in full float64 precision (the initial and final objective values)."""
    return _exact_objective(spec, params, state, x, t)


@functools.partial(jax.jit, static_argnums=0)
def _features_jit(spec: BackboneSpec, net, x):
    return apply_backbone(spec, net, {}, x)[0]


@functools.lru_cache(maxsize=64)
def _optimizer(num_iters: int, warmup_steps: int, peak: float, end: float, clip: float,
               weight_decay: float) -> optax.GradientTransformation:
    """Global-norm clipping, then AdamW with a warm-up cosine schedule; weight decay masked to
    the network parameters (cached: equal settings give the same object, so the jitted
    training loop is reused)."""
    if num_iters > 0 and warmup_steps >= num_iters:
        schedule = optax.linear_schedule(0.0, peak, num_iters)
    elif num_iters > 0:
        schedule = optax.warmup_cosine_decay_schedule(0.0, peak, warmup_steps, num_iters,
                                                      end_value=end)
    else:
        schedule = peak

    def decay_mask(params):
        return {"net": jax.tree_util.tree_map(lambda _: True, params["net"]),
                "gp": jax.tree_util.tree_map(lambda _: False, params["gp"])}

    return optax.chain(optax.clip_by_global_norm(clip),
                       optax.adamw(schedule, weight_decay=weight_decay, mask=decay_mask))
