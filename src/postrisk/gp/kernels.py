"""GP kernel families of Table 4 (docs/design.md, "Priors"): the component formulas, the
:class:`Kernel` sum of components and its matrix and diagonal evaluation.

Inputs ``x`` are ``(n, d)`` float64 arrays of min–max scaled covariates (mostly in [0, 1]). A
dataset's kernel is a weighted sum of components named as in
``postrisk.covariates.registry.KERNEL_COMPONENTS``::

    k(x, x') = Σ_c w_c k_c(x, x'),   w_c > 0,  Σ_c w_c = 1   (relative component variances)

The overall amplitude is not part of the kernel: the prior covariance is ``a²·k`` with the scale
constant ``a`` of :func:`postrisk.priors.base.scale_constant`.

Components and their natural-space parameters (``Kernel.params[component]``):

========== ================================================ ====================================
name       k_c(x, x')                                       parameters
========== ================================================ ====================================
matern12   exp(−r)                                          weight, lengthscale[d]
matern32   (1 + √3 r) exp(−√3 r)                            weight, lengthscale[d]
matern52   (1 + √5 r + 5r²/3) exp(−√5 r)                    weight, lengthscale[d]
rbf        exp(−r²/2)                                       weight, lengthscale[d]
rq         (1 + r²/(2α))^(−α)                               weight, lengthscale[d], alpha > 0
powexp     exp(−r^p)                                        weight, lengthscale[d], power ∈ (0,2]
periodic   exp(−2 Σ_j sin²(π(x_j − x'_j)/P_j) / ℓ_j²)        weight, lengthscale[d], period[d]
linear     Σ_j v_j (x_j − ½)(x'_j − ½)                      weight, variance[d]
arccos0    1 − θ/π, θ = angle between x̃ and x̃'             weight, bias σ_b > 0, lengthscale[d]
========== ================================================ ====================================

with ARD distances ``r² = Σ_j ((x_j − x'_j)/ℓ_j)²`` and, for the arc-cosine kernel of order 0
(Cho & Saul 2009), ``x̃ = [σ_b, (x − ½)/ℓ]``.

The kernel math is written once, in ``jax.numpy``, and serves both the type-II
maximum-likelihood fit of :mod:`postrisk.gp.fit` (autodiff) and the evaluation. Everything runs
inside ``with jax.enable_x64(True):`` (never the global switch: the HBART prior must run with
x64 off in the same process) and returns numpy float64 arrays.
Pairwise distances have two forms sharing the same component formulas: an *exact* form
(broadcast differences, computed in row blocks) used by :meth:`Kernel.matrix`, which gives exact
zeros for identical rows (k(x, x) = 1 exactly, duplicates identical, exact symmetry), and a
*fast* matrix-product form used inside the marginal-likelihood fit, where the rounding of
``|a|² + |b|² − 2ab`` is irrelevant next to the noise variance and the gradient is ~10× cheaper.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from postrisk.core.arrays import as_matrix
from postrisk.gp import COMPONENTS, STATIONARY

#: Parameter names per component: (name, "vector" of length d | "scalar").
PARAM_SHAPES: dict[str, tuple[tuple[str, str], ...]] = {
    **{c: (("weight", "scalar"), ("lengthscale", "vector"))
       for c in ("matern12", "matern32", "matern52", "rbf")},
    "rq": (("weight", "scalar"), ("lengthscale", "vector"), ("alpha", "scalar")),
    "powexp": (("weight", "scalar"), ("lengthscale", "vector"), ("power", "scalar")),
    "periodic": (("weight", "scalar"), ("lengthscale", "vector"), ("period", "vector")),
    "linear": (("weight", "scalar"), ("variance", "vector")),
    "arccos0": (("weight", "scalar"), ("bias", "scalar"), ("lengthscale", "vector")),
}

# Elements of one (rows × n2 × d) block in the exact pairwise form.
_BLOCK_ELEMENTS = 1 << 22


# ---------------------------------------------------------------------------------------------
# Kernel math (jax.numpy), written once
# ---------------------------------------------------------------------------------------------

def _sqdist(a, b, mode):
    """Squared Euclidean distances: pairwise (n1, n2) for 'exact'/'fast', row-wise for 'paired'."""
    if mode == "paired":
        return jnp.sum((a - b) ** 2, axis=-1)
    if mode == "exact":
        return jnp.sum((a[:, None, :] - b[None, :, :]) ** 2, axis=-1)
    a2 = jnp.sum(a * a, axis=1)
    b2 = jnp.sum(b * b, axis=1)
    return jnp.maximum(a2[:, None] + b2[None, :] - 2.0 * (a @ b.T), 0.0)


def _inner(a, b, mode):
    if mode == "paired":
        return jnp.sum(a * b, axis=-1)
    return a @ b.T


def _safe_sqrt(s):
    """sqrt with a zero (not NaN) gradient at 0."""
    pos = s > 0
    return jnp.where(pos, jnp.sqrt(jnp.where(pos, s, 1.0)), 0.0)


def _safe_pow(s, e):
    """s**e for s ≥ 0, e > 0, with finite gradients (also in e) at s = 0."""
    pos = s > 0
    return jnp.where(pos, jnp.exp(e * jnp.log(jnp.where(pos, s, 1.0))), 0.0)


def _safe_arccos(c):
    """arccos of a cosine clipped to [−1, 1], with finite gradients at the ends."""
    c = jnp.clip(c, -1.0, 1.0)
    inside = jnp.abs(c) < 1.0
    theta = jnp.arccos(jnp.where(inside, c, 0.0))
    return jnp.where(inside, theta, jnp.where(c > 0, 0.0, jnp.pi))


def evaluate_component(name, p, x1, x2, mode, same=None):
    """k_c(x1, x2) for one component (unweighted), without the argument checks of
    :func:`kernel_component`.

    ``same`` (fast mode only): a boolean (n1, n2) mask of identical row pairs, where the
    matrix-product distances are set to exactly 0 (their rounding error would otherwise make
    the gradients of the kernels that are not differentiable at r = 0 noisy).
    """
    def exact_zero(v, at_same=0.0):
        return v if same is None else jnp.where(same, at_same, v)

    if name in STATIONARY:
        ls = p["lengthscale"]
        r2 = exact_zero(_sqdist(x1 / ls, x2 / ls, mode))
        if name == "rbf":
            return jnp.exp(-0.5 * r2)
        if name == "rq":
            alpha = p["alpha"]
            return jnp.exp(-alpha * jnp.log1p(r2 / (2.0 * alpha)))
        if name == "powexp":
            return jnp.exp(-_safe_pow(r2, 0.5 * p["power"]))
        r = _safe_sqrt(r2)
        if name == "matern12":
            return jnp.exp(-r)
        if name == "matern32":
            s = math.sqrt(3.0) * r
            return (1.0 + s) * jnp.exp(-s)
        s = math.sqrt(5.0) * r  # matern52
        return (1.0 + s + (5.0 / 3.0) * r2) * jnp.exp(-s)
    if name == "periodic":
        w = 1.0 / p["lengthscale"] ** 2
        if mode == "fast":
            # sin²(u − v) = ½(1 − cos 2u cos 2v − sin 2u sin 2v): a matrix product.
            u1 = 2.0 * jnp.pi * x1 / p["period"]
            u2 = 2.0 * jnp.pi * x2 / p["period"]
            s = 0.5 * jnp.sum(w) - (jnp.cos(u1) * (0.5 * w)) @ jnp.cos(u2).T \
                - (jnp.sin(u1) * (0.5 * w)) @ jnp.sin(u2).T
            s = exact_zero(jnp.maximum(s, 0.0))
        elif mode == "exact":
            d = x1[:, None, :] - x2[None, :, :]
            s = jnp.sum(w * jnp.sin(jnp.pi * d / p["period"]) ** 2, axis=-1)
        else:
            s = jnp.sum(w * jnp.sin(jnp.pi * (x1 - x2) / p["period"]) ** 2, axis=-1)
        return jnp.exp(-2.0 * s)
    if name == "linear":
        sv = jnp.sqrt(p["variance"])
        return _inner((x1 - 0.5) * sv, (x2 - 0.5) * sv, mode)
    if name == "arccos0":
        def unit(x):
            z = (x - 0.5) / p["lengthscale"]
            b = jnp.broadcast_to(p["bias"], z.shape[:-1] + (1,))
            xt = jnp.concatenate([b, z], axis=-1)
            return xt / jnp.sqrt(jnp.sum(xt * xt, axis=-1, keepdims=True))
        u1, u2 = unit(x1), unit(x2)
        if mode == "fast":
            theta = _safe_arccos(exact_zero(_inner(u1, u2, mode), 1.0))
        else:
            # Kahan's formula: accurate for nearly parallel vectors, exactly 0 for equal ones.
            theta = 2.0 * jnp.arctan2(_safe_sqrt(_sqdist(u1, u2, mode)),
                                      _safe_sqrt(_sqdist(u1, -u2, mode)))
        return 1.0 - theta / jnp.pi
    raise ValueError(f"unknown kernel component {name!r}")


#: ν → component name of the Matérn kernels.
MATERN = {0.5: "matern12", 1.5: "matern32", 2.5: "matern52"}


def matern_component(nu: float) -> str:
    """The component name of Matérn-ν, ν ∈ {0.5, 1.5, 2.5}."""
    try:
        return MATERN[float(nu)]
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"nu must be one of {sorted(MATERN)}, got {nu!r}") from None


def kernel_component(name: str, params: dict, x1, x2, mode: str = "fast"):
    """One unweighted component k_c(x1, x2) in ``jax.numpy`` (differentiable, jit-able).

    The public entry to the kernel math for methods that learn kernel parameters (``gp``,
    ``vlgp``, ``dkl``): ``params`` holds the component's natural parameters as arrays (e.g.
    ``{"lengthscale": ℓ[d]}`` for the Matérn family, ``{"variance": v[d]}`` for ``linear``, whose
    inputs are centred at ½). ``mode``: ``"fast"`` (matrix-product distances; the training
    objective), ``"exact"`` (broadcast differences; exact zeros for identical rows) or
    ``"paired"`` (row-wise k(x1_i, x2_i), e.g. a diagonal). Runs in the caller's precision.
    """
    if name not in COMPONENTS:
        raise ValueError(f"unknown kernel component {name!r}; one of {', '.join(COMPONENTS)}")
    if mode not in ("fast", "exact", "paired"):
        raise ValueError(f"mode must be 'fast', 'exact' or 'paired', got {mode!r}")
    return evaluate_component(name, params, x1, x2, mode)


def _kernel_eval(components, params, x1, x2, mode, same=None):
    """Σ_c w_c k_c(x1, x2) with weights normalised to sum 1."""
    total = sum(params[c]["weight"] for c in components)
    out = 0.0
    for c in components:
        out = out + ((params[c]["weight"] / total)
                     * evaluate_component(c, params[c], x1, x2, mode, same))
    return out


@functools.partial(jax.jit, static_argnames=("components",))
def _matrix_block(components, params, x1, x2):
    return _kernel_eval(components, params, x1, x2, "exact")


@functools.partial(jax.jit, static_argnames=("components",))
def _diag_jit(components, params, x):
    return _kernel_eval(components, params, x, x, "paired")


def _bucket(n: int, step: int = 256) -> int:
    """Padded size (a multiple of ``step``): bounded recompilation across calls."""
    return max(step, -(-n // step) * step)


def _pad_rows(x: np.ndarray, n: int) -> np.ndarray:
    return x if x.shape[0] == n else np.concatenate([x, np.repeat(x[-1:], n - x.shape[0], 0)])


# ---------------------------------------------------------------------------------------------
# Kernel object
# ---------------------------------------------------------------------------------------------

def _as_float_list(v, name) -> list[float]:
    arr = np.asarray(v, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"kernel parameter {name} is not finite: {v!r}")
    return [float(t) for t in arr]


def as_input_matrix(x, name="x") -> np.ndarray:
    """``x`` as a finite (n, d) float64 matrix (a 1-d array is one column)."""
    x = np.asarray(x, dtype=np.float64)
    return as_matrix(name, x[:, None] if x.ndim == 1 else x, finite=True)


@dataclass(frozen=True)
class Kernel:
    """A sum of named components with natural-space parameters (plain floats and lists).

    ``params[c]["weight"]`` are relative component variances; they are normalised to sum 1 when
    the kernel is evaluated (:func:`default_kernel` and :func:`postrisk.gp.fit.fit_kernel` store
    them normalised).
    """

    components: tuple[str, ...]
    params: dict[str, Any]

    def __post_init__(self):
        comps = tuple(str(c) for c in self.components)
        if not comps:
            raise ValueError("a kernel needs at least one component")
        unknown = [c for c in comps if c not in COMPONENTS]
        if unknown:
            raise ValueError(f"unknown kernel components {unknown}; allowed: {COMPONENTS}")
        if len(set(comps)) != len(comps):
            raise ValueError(f"repeated kernel component in {comps}")
        params: dict[str, Any] = {}
        dims = set()
        for c in comps:
            if c not in self.params:
                raise ValueError(f"missing parameters for kernel component {c!r}")
            given = self.params[c]
            expected = {n for n, _ in PARAM_SHAPES[c]}
            if set(given) != expected:
                raise ValueError(f"component {c!r} needs parameters {sorted(expected)}, "
                                 f"got {sorted(given)}")
            cp: dict[str, Any] = {}
            for pname, kind in PARAM_SHAPES[c]:
                vals = _as_float_list(given[pname], f"{c}.{pname}")
                if kind == "scalar":
                    if len(vals) != 1:
                        raise ValueError(f"{c}.{pname} must be a scalar")
                    cp[pname] = vals[0]
                else:
                    dims.add(len(vals))
                    cp[pname] = vals
                if min(vals) <= 0:
                    raise ValueError(f"{c}.{pname} must be positive, got {given[pname]!r}")
            if c == "powexp" and cp["power"] > 2.0:
                raise ValueError(f"powexp.power must be in (0, 2], got {cp['power']}")
            params[c] = cp
        if len(dims) != 1:
            raise ValueError(f"inconsistent input dimensions across kernel parameters: {dims}")
        object.__setattr__(self, "components", comps)
        object.__setattr__(self, "params", params)

    @property
    def dim(self) -> int:
        """Input dimension d."""
        for c in self.components:
            for pname, kind in PARAM_SHAPES[c]:
                if kind == "vector":
                    return len(self.params[c][pname])
        raise AssertionError("unreachable")

    def _arrays(self) -> dict[str, dict[str, np.ndarray]]:
        return {c: {k: np.asarray(v, dtype=np.float64) for k, v in cp.items()}
                for c, cp in self.params.items()}

    def check_inputs(self, x, name) -> np.ndarray:
        """``x`` as a finite (n, d) float64 matrix with the kernel's d columns."""
        x = as_input_matrix(x, name)
        if x.shape[1] != self.dim:
            raise ValueError(f"{name} has {x.shape[1]} columns, the kernel expects {self.dim}")
        return x

    def matrix(self, x1, x2) -> np.ndarray:
        """k(x1, x2) as an (n1, n2) float64 array (exact pairwise form, computed in row blocks)."""
        x1 = self.check_inputs(x1, "x1")
        x2 = self.check_inputs(x2, "x2")
        n1, n2, d = x1.shape[0], x2.shape[0], x1.shape[1]
        out = np.empty((n1, n2), dtype=np.float64)
        if n1 == 0 or n2 == 0:
            return out
        # Row blocks of a fixed, bucketed shape: one compilation serves many (n1, n2).
        n2p = _bucket(n2)
        rows = max(8, _BLOCK_ELEMENTS // (n2p * (d + 1)))
        rows = min(1 << (rows.bit_length() - 1), 1 << max(3, (n1 - 1).bit_length()))
        params = self._arrays()
        with jax.enable_x64(True):
            x2j = jnp.asarray(_pad_rows(x2, n2p))
            for start in range(0, n1, rows):
                stop = min(start + rows, n1)
                block = _matrix_block(self.components, params,
                                      jnp.asarray(_pad_rows(x1[start:stop], rows)), x2j)
                out[start:stop] = np.asarray(block)[:stop - start, :n2]
        return out

    def diag(self, x) -> np.ndarray:
        """k(x_i, x_i) as an (n,) float64 array."""
        x = self.check_inputs(x, "x")
        n = x.shape[0]
        if n == 0:
            return np.zeros(0)
        with jax.enable_x64(True):
            out = _diag_jit(self.components, self._arrays(), jnp.asarray(_pad_rows(x, _bucket(n))))
            return np.array(out[:n], dtype=np.float64)

    def to_dict(self) -> dict:
        """JSON-serialisable form: ``{"components": [...], "params": {c: {name: float|list}}}``."""
        return {"components": list(self.components),
                "params": {c: {k: (list(v) if isinstance(v, list) else float(v))
                               for k, v in self.params[c].items()}
                           for c in self.components}}

    @classmethod
    def from_dict(cls, d: dict) -> Kernel:
        return cls(components=tuple(d["components"]),
                   params={c: dict(p) for c, p in d["params"].items()})


def default_kernel(components: Sequence[str], d: int) -> Kernel:
    """Starting values: equal weights; lengthscales 0.3·√d for the stationary and arc-cosine
    components (0.3 in one dimension; scaled with √d so that typical ARD distances stay O(1) as
    d grows); rq α = 1; powexp p = 1; periodic period 1 and lengthscale 1; linear variances
    12/d (so that k(x, x) ≈ 1 on average for uniform inputs); arc-cosine bias 1."""
    comps = tuple(components)
    if d < 1:
        raise ValueError("d must be ≥ 1")
    w = 1.0 / len(comps)
    ls = [0.3 * math.sqrt(d)] * d
    params: dict[str, Any] = {}
    for c in comps:
        if c in STATIONARY:
            params[c] = {"weight": w, "lengthscale": list(ls)}
            if c == "rq":
                params[c]["alpha"] = 1.0
            if c == "powexp":
                params[c]["power"] = 1.0
        elif c == "periodic":
            params[c] = {"weight": w, "lengthscale": [1.0] * d, "period": [1.0] * d}
        elif c == "linear":
            params[c] = {"weight": w, "variance": [12.0 / d] * d}
        elif c == "arccos0":
            params[c] = {"weight": w, "bias": 1.0, "lengthscale": list(ls)}
        else:
            raise ValueError(f"unknown kernel component {c!r}; allowed: {COMPONENTS}")
    return Kernel(comps, params)
