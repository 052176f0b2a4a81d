"""Type-II maximum-likelihood fit of a GP kernel family's hyper-parameters (docs/design.md,
"Priors"): :func:`fit_kernel` and :func:`log_marginal_likelihood`.

The kernels are those of :mod:`postrisk.gp.kernels`; the objective is the exact log marginal
likelihood of the z-scored target plus weak hyper-priors, maximised in float64 by L-BFGS-B, with
jitted JAX for the kernel matrices and their vector-Jacobian products and one LAPACK Cholesky
factorisation per evaluation (:func:`postrisk.gp.linalg.gaussian_loglik_with_grads`).
"""

from __future__ import annotations

import functools
import logging
import math
import time
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize

from postrisk.core.progress import progress_steps
from postrisk.gp.kernels import (
    PARAM_SHAPES,
    Kernel,
    as_input_matrix,
    default_kernel,
    evaluate_component,
)
from postrisk.gp.linalg import gaussian_loglik_with_grads

logger = logging.getLogger(__name__)

_NOISE_FLOOR = 1e-6
_FTOL = 1e-7  # L-BFGS-B: stop when an iteration improves −(LML + log prior)/n by < 1e-7 (rel.)
_MAXCOR = 20  # L-BFGS-B memory (fewer iterations than the default 10 on ~45 parameters)
_START_SIGNAL_VAR = 1.0
_START_NOISE_VAR = 0.1


@dataclass(frozen=True)
class KernelFit:
    """Result of :func:`fit_kernel`. ``log_marginal_likelihood`` is the exact LML (without the
    hyper-prior terms) of the z-scored target of the ``n_used`` subsampled rows under
    ``y_z ~ GP(mean, signal_var·k) + N(0, noise_var)``; ``noise_var``, ``mean`` and
    ``signal_var`` are in z-score units (``y_z = (y − y_mean)/y_sd``). ``iterations`` is the
    L-BFGS-B iteration count of the best start, ``seconds`` the whole fit, ``converged`` whether
    the best start met L-BFGS-B's convergence test; ``starts`` summarises every start."""

    kernel: Kernel
    noise_var: float
    mean: float
    log_marginal_likelihood: float
    n_used: int
    iterations: int
    seconds: float
    converged: bool
    signal_var: float = 1.0
    y_mean: float = 0.0
    y_sd: float = 1.0
    starts: tuple[dict, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict:
        return {"kernel": self.kernel.to_dict(), "noise_var": float(self.noise_var),
                "mean": float(self.mean),
                "log_marginal_likelihood": float(self.log_marginal_likelihood),
                "n_used": int(self.n_used), "iterations": int(self.iterations),
                "seconds": float(self.seconds), "converged": bool(self.converged),
                "signal_var": float(self.signal_var), "y_mean": float(self.y_mean),
                "y_sd": float(self.y_sd),
                "starts": [{k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                            for k, v in s.items()} for s in self.starts]}


@dataclass(frozen=True)
class _Slot:
    component: str | None  # None: a global parameter
    name: str
    size: int
    transform: str  # "log" | "sigmoid2" | "identity" | "logit"
    prior_mu: float | None  # Gaussian prior on the unconstrained value (None: flat)
    prior_sd: float | None
    perturb_sd: float  # random-restart perturbation of the unconstrained value


def _layout(components: tuple[str, ...], d: int) -> tuple[_Slot, ...]:
    k0 = default_kernel(components, d)
    slots: list[_Slot] = []
    for c in components:
        p = k0.params[c]
        for pname, kind in PARAM_SHAPES[c]:
            if pname == "weight":
                continue
            size = d if kind == "vector" else 1
            v0 = float(np.asarray(p[pname]).reshape(-1)[0])
            if pname == "power":
                slots.append(_Slot(c, pname, 1, "sigmoid2", 0.0, 1.5, 1.0))
            elif pname == "lengthscale" and c != "periodic":
                slots.append(_Slot(c, pname, size, "log", math.log(v0), 2.0, 1.0))
            elif pname == "variance":
                slots.append(_Slot(c, pname, size, "log", math.log(v0), 2.0, 1.0))
            else:  # alpha, bias, periodic lengthscale/period
                slots.append(_Slot(c, pname, size, "log", math.log(v0), 1.5, 0.5))
    if len(components) > 1:
        slots.append(_Slot(None, "logits", len(components) - 1, "logit", 0.0, 2.0, 0.5))
    slots.append(_Slot(None, "signal_var", 1, "log", 0.0, 2.0, 0.5))
    slots.append(_Slot(None, "noise_var", 1, "log", math.log(_START_NOISE_VAR), 2.0, 0.5))
    slots.append(_Slot(None, "mean", 1, "identity", None, None, 0.0))
    return tuple(slots)


def _start_vector(slots) -> np.ndarray:
    parts = []
    for s in slots:
        if s.name == "mean" or s.name == "logits" or s.transform == "sigmoid2":
            val = 0.0  # mean 0, equal weights, power 1
        elif s.name == "signal_var":
            val = math.log(_START_SIGNAL_VAR)
        elif s.name == "noise_var":
            val = math.log(_START_NOISE_VAR - _NOISE_FLOOR)
        else:
            val = s.prior_mu
        parts.append(np.full(s.size, val))
    return np.concatenate(parts)


def _unpack(components, slots, theta):
    """Unconstrained vector → (params pytree, signal_var, noise_var, mean) in jnp."""
    params = {c: {} for c in components}
    glob = {}
    i = 0
    for s in slots:
        v = theta[i:i + s.size]
        i += s.size
        if s.transform == "log":
            nat = jnp.exp(v)
        elif s.transform == "sigmoid2":
            nat = 2.0 * jax.nn.sigmoid(v)
        else:
            nat = v
        if s.component is None:
            glob[s.name] = nat
            continue
        kind = dict(PARAM_SHAPES[s.component])[s.name]
        params[s.component][s.name] = nat if kind == "vector" else nat[0]
    if len(components) > 1:
        w = jax.nn.softmax(jnp.concatenate([jnp.zeros(1), glob["logits"]]))
    else:
        w = jnp.ones(1)
    for j, c in enumerate(components):
        params[c]["weight"] = w[j]
    return (params, glob["signal_var"][0], _NOISE_FLOOR + glob["noise_var"][0],
            glob["mean"][0])


def _log_prior(slots, theta):
    lp = 0.0
    i = 0
    for s in slots:
        v = theta[i:i + s.size]
        i += s.size
        if s.prior_sd is not None:
            lp = lp - 0.5 * jnp.sum(((v - s.prior_mu) / s.prior_sd) ** 2)
    return lp


@functools.lru_cache(maxsize=32)
def _objective(components: tuple[str, ...], d: int):
    """Value and gradient of the log marginal likelihood (+ log prior) for a layout.

    Computed in separately jitted steps: each component's matrix k_c(θ); the assembled
    K = s²·Σ w_c k_c + σ²I and r = y − m; LML, G = ∂LML/∂K = ½(ααᵀ − K⁻¹) and −α from one
    Cholesky factorisation; then vector-Jacobian products back to θ, one per component
    (cotangent s²·w_c·G) plus one for the global parameters (weights, s², σ², m) and the
    prior. Measured on 2 CPU cores at n = 1000, d = 21: ~2× faster than one jitted
    ``value_and_grad`` through the Cholesky factorisation, and ~1.7× faster than one jitted
    pullback of the whole sum (XLA fuses the components' gradients poorly).
    """
    slots = _layout(components, d)

    def comp_fn(c):
        def k_c(theta, x, same):
            params = _unpack(components, slots, theta)[0]
            return evaluate_component(c, params[c], x, x, "fast", same)
        return k_c

    comp_jit = {c: jax.jit(comp_fn(c)) for c in components}

    def make_pull(c):
        f = comp_fn(c)

        @jax.jit
        def pull(theta, x, same, g_k, scale):
            _, vjp = jax.vjp(lambda t: f(t, x, same), theta)
            return vjp(scale * g_k)[0]
        return pull

    pull_jit = {c: make_pull(c) for c in components}

    def glob(theta):
        params, sv, nv, m = _unpack(components, slots, theta)
        w = jnp.stack([params[c]["weight"] for c in components])
        return w, sv, nv, m

    @jax.jit
    def assemble(theta, kcs, y):
        w, sv, nv, m = glob(theta)
        kmat = sv * sum(w[j] * kc for j, kc in enumerate(kcs))
        return kmat + nv * jnp.eye(y.shape[0], dtype=kmat.dtype), y - m, w, sv

    @jax.jit
    def glob_pull(theta, kcs, g_k, g_r):
        w, sv, _, _ = glob(theta)
        dots = jnp.stack([jnp.sum(g_k * kc) for kc in kcs])
        ct = (sv * dots, jnp.sum(w * dots), jnp.trace(g_k), -jnp.sum(g_r))
        _, vjp = jax.vjp(glob, theta)
        lp, g_lp = jax.value_and_grad(lambda t: _log_prior(slots, t))(theta)
        return vjp(ct)[0] + g_lp, lp

    def value_and_grad(theta, x, y, same):
        """(LML, log prior, ∂(LML + log prior)/∂θ) as Python/numpy float64."""
        kcs = tuple(comp_jit[c](theta, x, same) for c in components)
        kmat, r, w, sv = assemble(theta, kcs, y)
        try:
            lml, g_k, g_r = gaussian_loglik_with_grads(kmat, r)
        except np.linalg.LinAlgError:
            return math.nan, math.nan, np.full(theta.shape, np.nan)
        g_k, g_r = jnp.asarray(g_k), jnp.asarray(g_r)
        grad, lp = glob_pull(theta, kcs, g_k, g_r)
        for j, c in enumerate(components):
            grad = grad + pull_jit[c](theta, x, same, g_k, sv * w[j])
        return float(lml), float(lp), np.asarray(grad, dtype=np.float64)

    return slots, value_and_grad


def _kernel_from_theta(components, slots, theta) -> tuple[Kernel, float, float, float]:
    with jax.enable_x64(True):
        params, sv, nv, m = _unpack(components, slots, jnp.asarray(theta))
        nat = {c: {k: np.asarray(v, dtype=np.float64) for k, v in p.items()}
               for c, p in params.items()}
    out = {}
    for c in components:
        out[c] = {}
        for pname, kind in PARAM_SHAPES[c]:
            v = nat[c][pname]
            out[c][pname] = [float(t) for t in v.reshape(-1)] if kind == "vector" else float(v)
        if c == "powexp":
            out[c]["power"] = min(max(out[c]["power"], 1e-12), 2.0)
    return Kernel(tuple(components), out), float(sv), float(nv), float(m)


def log_marginal_likelihood(kernel: Kernel, x, y, *, signal_var: float, noise_var: float,
                            mean: float) -> float:
    """Exact log N(y; mean, signal_var·k(x, x) + noise_var·I) in float64 (exact pairwise form)."""
    x = kernel.check_inputs(x, "x")
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    with jax.enable_x64(True):
        kmat = signal_var * kernel.matrix(x, x) + noise_var * np.eye(x.shape[0])
        return gaussian_loglik_with_grads(kmat, y - mean)[0]


def fit_kernel(components, x, y, *, max_rows=1000, rng=None, max_iter=200,
               restarts=2) -> KernelFit:
    """Fit a kernel family's hyper-parameters to a real target by type-II maximum likelihood.

    Model, on a random subsample of at most ``max_rows`` rows (drawn with ``rng``; all rows if
    fewer) and the z-scored target ``y_z``::

        y_z ~ N(mean·1, signal_var·k(x, x) + noise_var·I)

    Unconstrained parametrisation: logs of lengthscales, periods, linear variances, rq α, the
    arc-cosine bias, signal and noise variance (noise_var = 1e-6 + exp(θ)); the powexp power
    is p = 2·sigmoid(θ); component weights are a softmax of logits (first fixed at 0).

    The objective is MAP, not plain ML: weak Gaussian priors on the unconstrained values keep
    the optimiser away from degenerate corners: log-lengthscales (stationary, arc-cosine) and
    log linear variances N(log start, 2²); log α, log bias, periodic log lengthscale and log
    period N(log start, 1.5²); the powexp logit N(0, 1.5²); weight logits N(0, 2²); log signal
    variance N(0, 2²); log noise variance N(log 0.1, 2²); the mean is flat.

    The exact log marginal likelihood plus these terms, divided by n, is maximised in float64 by
    L-BFGS-B (``max_iter`` iterations per start, memory 20, relative function tolerance 1e-7,
    projected gradient tolerance 1e-5) from the :func:`default_kernel` start (signal variance 1,
    noise variance 0.1, mean 0) and from ``restarts`` random starts (the default start perturbed in
    unconstrained space); the start with the best objective is kept and its plain LML reported.
    Value and gradient: jitted JAX for the kernel matrices and their vector-Jacobian products
    (autodiff), LAPACK for the Cholesky factor, α and K⁻¹ (∂LML/∂K = ½(ααᵀ − K⁻¹)); see
    :func:`_objective`. Identical rows get exact zero distances so the gradients of kernels
    that are not differentiable at r = 0 stay exact. ``max_iter=0`` evaluates the starts
    without optimising. ``rng`` defaults to ``np.random.default_rng(0)``. Progress is logged
    one step per start (LML at the end and at the start, iterations, seconds).
    """
    t_start = time.perf_counter()
    components = tuple(components)
    x = as_input_matrix(x, "x")
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    if y.shape[0] != x.shape[0]:
        raise ValueError(f"x has {x.shape[0]} rows, y has {y.shape[0]}")
    if not np.all(np.isfinite(y)):
        raise ValueError("y contains non-finite values")
    rng = np.random.default_rng(0) if rng is None else rng
    n, d = x.shape
    if n > max_rows:
        idx = np.sort(rng.choice(n, size=max_rows, replace=False))
        x, y = x[idx], y[idx]
    n_used = x.shape[0]
    if n_used < 3:
        raise ValueError("need at least 3 rows to fit a kernel")
    y_mean, y_sd = float(np.mean(y)), float(np.std(y))
    if not y_sd > 0:
        raise ValueError("the target is constant on the fitted rows")
    yz = (y - y_mean) / y_sd
    default_kernel(components, d)  # validates the component names
    slots, vg = _objective(components, d)
    theta0 = _start_vector(slots)
    perturb = np.concatenate([np.full(s.size, s.perturb_sd) for s in slots])

    starts = [("default", theta0)]
    for _ in range(restarts):
        starts.append(("random", theta0 + perturb * rng.standard_normal(theta0.shape)))

    # Identical rows: exact zero distances in the fast (matrix-product) form.
    _, inv = np.unique(x, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    same = inv[:, None] == inv[None, :]

    with jax.enable_x64(True):
        xj, yj, samej = jnp.asarray(x), jnp.asarray(yz), jnp.asarray(same)
        cache: dict[bytes, tuple[float, float, np.ndarray]] = {}

        def evaluate(theta):
            """(objective = −(LML + log prior)/n, LML, gradient of the objective)."""
            key = np.asarray(theta, dtype=np.float64).tobytes()
            if key not in cache:
                cache.clear()
                lml, lp, grad = vg(jnp.asarray(theta, dtype=jnp.float64), xj, yj, samej)
                obj = -(lml + lp) / n_used
                if not (np.isfinite(obj) and np.all(np.isfinite(grad))):
                    cache[key] = (math.inf, math.nan, np.zeros_like(grad))
                else:
                    cache[key] = (obj, lml, -grad / n_used)
            return cache[key]

        def fun(theta):
            obj, _, grad = evaluate(theta)
            return (obj, grad) if np.isfinite(obj) else (1e10, grad)

        results = []
        label = f"fit_kernel {'+'.join(components)} (n={n_used}, d={d}) starts"
        with progress_steps(len(starts), label, logger) as progress:
            for i, (kind, th) in enumerate(starts):
                t0 = time.perf_counter()
                v0, lml0, _ = evaluate(th)
                th_best, v1, lml1, nit, ok = th, v0, lml0, 0, bool(np.isfinite(v0))
                if max_iter > 0 and np.isfinite(v0):
                    res = scipy.optimize.minimize(fun, th, jac=True, method="L-BFGS-B",
                                                  options={"maxiter": int(max_iter), "ftol": _FTOL,
                                                           "gtol": 1e-5, "maxcor": _MAXCOR})
                    nit, ok = int(res.nit), bool(res.success)
                    v, lml, _ = evaluate(res.x)
                    if np.isfinite(v) and v <= v0:
                        th_best, v1, lml1 = np.asarray(res.x), v, lml
                sec = time.perf_counter() - t0
                results.append({"start": kind, "objective": v1, "lml": lml1, "lml_start": lml0,
                                "iterations": nit, "seconds": sec, "converged": ok,
                                "theta": th_best})
                progress.advance(message=f"start {i + 1} [{kind}]: LML {lml1:.2f} (start "
                                         f"{lml0:.2f}), {nit} iterations, {sec:.1f} s"
                                         f"{'' if ok else ', not converged'}")

    finite = [r for r in results if np.isfinite(r["objective"])]
    if not finite:
        raise RuntimeError(f"fit_kernel {components}: the marginal likelihood is not finite "
                           "at any start")
    best = min(finite, key=lambda r: r["objective"])
    kernel, sv, nv, m = _kernel_from_theta(components, slots, best["theta"])
    summary = tuple({k: v for k, v in r.items() if k != "theta"} for r in results)
    return KernelFit(kernel=kernel, noise_var=nv, mean=m,
                     log_marginal_likelihood=best["lml"], n_used=n_used,
                     iterations=best["iterations"], seconds=time.perf_counter() - t_start,
                     converged=best["converged"], signal_var=sv, y_mean=y_mean, y_sd=y_sd,
                     starts=summary)
