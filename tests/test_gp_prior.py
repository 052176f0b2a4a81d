"""GP prior family math: kernels, exact conditioning with known noise, draws, scale, fit."""

from __future__ import annotations

import json
import logging
import math
import zlib

import jax
import numpy as np
import pytest

from postrisk.covariates.registry import KERNEL_COMPONENTS
from postrisk.gp import exact as gp
from postrisk.gp import kernels as K
from postrisk.gp.exact import (
    posterior_covariance,
    posterior_draws,
    posterior_moments,
    robust_sqrt,
    sample_prior,
)
from postrisk.gp.kernels import Kernel, default_kernel, fit_kernel
from postrisk.priors.gp import scale_constant

SUMS = [("matern52", "powexp"), ("rq", "linear"), ("periodic", "linear"),
        ("matern12", "linear"), ("rbf", "arccos0", "matern32")]
ALL_KERNELS = [(c,) for c in KERNEL_COMPONENTS] + SUMS
STATIONARY_LIKE = {"matern12", "matern32", "matern52", "rbf", "rq", "powexp", "periodic",
                   "arccos0"}  # k(x, x) = 1


def random_kernel(components, d, rng) -> Kernel:
    """A kernel with random (not default) parameters."""
    params = {}
    for c in components:
        p = {"weight": float(rng.uniform(0.2, 1.0))}
        if c in K.STATIONARY or c == "arccos0":
            p["lengthscale"] = rng.uniform(0.2, 1.5, d).tolist()
        if c == "rq":
            p["alpha"] = float(rng.uniform(0.3, 3.0))
        if c == "powexp":
            p["power"] = float(rng.uniform(0.5, 2.0))
        if c == "periodic":
            p["lengthscale"] = rng.uniform(0.5, 2.0, d).tolist()
            p["period"] = rng.uniform(0.3, 1.5, d).tolist()
        if c == "linear":
            p["variance"] = rng.uniform(0.5, 3.0, d).tolist()
        if c == "arccos0":
            p["bias"] = float(rng.uniform(0.3, 2.0))
        params[c] = p
    return Kernel(tuple(components), params)


def reference_component(c, p, u, v) -> float:
    """Textbook formula of one component at one pair, plain numpy."""
    if c in K.STATIONARY:
        r = math.sqrt(float(np.sum(((u - v) / np.asarray(p["lengthscale"])) ** 2)))
        return {"matern12": lambda: math.exp(-r),
                "matern32": lambda: (1 + math.sqrt(3) * r) * math.exp(-math.sqrt(3) * r),
                "matern52": lambda: (1 + math.sqrt(5) * r + 5 * r * r / 3)
                * math.exp(-math.sqrt(5) * r),
                "rbf": lambda: math.exp(-r * r / 2),
                "rq": lambda: (1 + r * r / (2 * p["alpha"])) ** (-p["alpha"]),
                "powexp": lambda: math.exp(-r ** p["power"])}[c]()
    if c == "periodic":
        s = np.sin(np.pi * (u - v) / np.asarray(p["period"])) ** 2
        return math.exp(-2 * float(np.sum(s / np.asarray(p["lengthscale"]) ** 2)))
    if c == "linear":
        return float(np.sum(np.asarray(p["variance"]) * (u - 0.5) * (v - 0.5)))
    if c == "arccos0":
        tu = np.concatenate([[p["bias"]], (u - 0.5) / np.asarray(p["lengthscale"])])
        tv = np.concatenate([[p["bias"]], (v - 0.5) / np.asarray(p["lengthscale"])])
        cos = float(tu @ tv / (np.linalg.norm(tu) * np.linalg.norm(tv)))
        return 1 - math.acos(min(1.0, max(-1.0, cos))) / math.pi
    raise AssertionError(c)


def reference_matrix(kernel: Kernel, x1, x2) -> np.ndarray:
    total = sum(kernel.params[c]["weight"] for c in kernel.components)
    out = np.zeros((len(x1), len(x2)))
    for i, u in enumerate(x1):
        for j, v in enumerate(x2):
            out[i, j] = sum(kernel.params[c]["weight"] / total
                            * reference_component(c, kernel.params[c], u, v)
                            for c in kernel.components)
    return out


def test_registry_components_are_implemented():
    for c in KERNEL_COMPONENTS:
        assert default_kernel((c,), 3).components == (c,)
    with pytest.raises(ValueError):
        default_kernel(("nope",), 2)


@pytest.mark.parametrize("components", ALL_KERNELS, ids="+".join)
def test_kernel_matrix_properties(components):
    rng = np.random.default_rng(zlib.crc32("+".join(components).encode()))
    d = 3
    kern = random_kernel(components, d, rng)
    x = rng.uniform(-0.05, 1.05, (40, d))
    x[5] = x[7]  # a duplicate row
    kmat = kern.matrix(x, x)
    assert kmat.shape == (40, 40) and kmat.dtype == np.float64
    np.testing.assert_allclose(kmat, kmat.T, rtol=0, atol=1e-13)
    evals = np.linalg.eigvalsh(0.5 * (kmat + kmat.T))
    assert evals.min() > -1e-8 * evals.max()
    np.testing.assert_allclose(kern.diag(x), np.diag(kmat), rtol=0, atol=1e-13)
    np.testing.assert_array_equal(kmat[5], kmat[7])
    if set(components) <= STATIONARY_LIKE:
        np.testing.assert_array_equal(np.diag(kmat), 1.0)
        np.testing.assert_array_equal(kern.diag(x), 1.0)
    # The textbook formulas, pair by pair, on a cross block.
    x2 = rng.uniform(0, 1, (6, d))
    np.testing.assert_allclose(kern.matrix(x[:5], x2), reference_matrix(kern, x[:5], x2),
                               rtol=1e-12, atol=1e-13)


def test_weights_are_relative_variances():
    rng = np.random.default_rng(3)
    x = rng.random((7, 2))
    kern = random_kernel(("rq", "linear"), 2, rng)
    parts = {c: Kernel((c,), {c: kern.params[c]}).matrix(x, x) for c in kern.components}
    w = {c: kern.params[c]["weight"] for c in kern.components}
    expected = sum(w[c] * parts[c] for c in parts) / sum(w.values())
    np.testing.assert_allclose(kern.matrix(x, x), expected, rtol=1e-13, atol=1e-14)
    # The special cases: powexp with p = 2 is the RBF with lengthscale ℓ/√2.
    ls = [0.4, 0.7]
    pe = Kernel(("powexp",), {"powexp": {"weight": 1.0, "lengthscale": ls, "power": 2.0}})
    rbf = Kernel(("rbf",), {"rbf": {"weight": 1.0, "lengthscale": (np.array(ls) / 2 ** 0.5)
                                    .tolist()}})
    np.testing.assert_allclose(pe.matrix(x, x), rbf.matrix(x, x), rtol=1e-12)


@pytest.mark.parametrize("components", [("periodic", "linear"), ("arccos0",), ("rq",)],
                         ids="+".join)
def test_kernel_dict_round_trip(components):
    kern = random_kernel(components, 4, np.random.default_rng(1))
    d = json.loads(json.dumps(kern.to_dict()))
    back = Kernel.from_dict(d)
    assert back == kern
    assert back.to_dict() == kern.to_dict()
    x = np.random.default_rng(2).random((5, 4))
    np.testing.assert_array_equal(back.matrix(x, x), kern.matrix(x, x))


def test_kernel_validation():
    with pytest.raises(ValueError):
        Kernel(("rbf",), {"rbf": {"weight": 1.0, "lengthscale": [0.3, -1.0]}})
    with pytest.raises(ValueError):
        Kernel(("rbf", "linear"), {"rbf": {"weight": 1.0, "lengthscale": [0.3]},
                                   "linear": {"weight": 1.0, "variance": [1.0, 1.0]}})
    with pytest.raises(ValueError):
        default_kernel(("rbf",), 2).matrix(np.zeros((3, 3)), np.zeros((3, 3)))


def test_x64_is_not_switched_on_globally():
    # Kernels compute in float64 inside a context; the process-wide setting is left as it was
    # (bartz needs it off), whatever the environment set it to.
    before = bool(jax.config.jax_enable_x64)
    kern = default_kernel(("matern32",), 2)
    out = kern.matrix(np.random.default_rng(0).random((4, 2)), np.zeros((1, 2)) + 0.5)
    assert out.dtype == np.float64
    assert bool(jax.config.jax_enable_x64) == before
    expected = np.float64 if before else np.float32
    assert jax.numpy.ones(1).dtype == expected


# ------------------------------------------------------------------------------------------
# Conditioning and draws
# ------------------------------------------------------------------------------------------

def brute_force_posterior(kern, a, x_train, y, noise_var, x_test):
    """Condition (f_train, f_test) on y via the joint Gaussian of (f_train, f_test, y)."""
    n, m = len(x_train), len(x_test)
    xa = np.concatenate([x_train, x_test])
    kf = a ** 2 * reference_matrix(kern, xa, xa)
    joint = np.zeros((2 * n + m, 2 * n + m))
    joint[: n + m, : n + m] = kf
    joint[n + m:, : n + m] = kf[:n]  # cov(y, f) = cov(f_train, f)
    joint[: n + m, n + m:] = kf[:, :n]
    joint[n + m:, n + m:] = kf[:n, :n] + np.diag(noise_var)
    f_idx, y_idx = np.arange(n, n + m), np.arange(n + m, 2 * n + m)  # f_test, y
    s_fy = joint[np.ix_(f_idx, y_idx)]
    s_yy_inv = np.linalg.inv(joint[np.ix_(y_idx, y_idx)])
    mean = s_fy @ s_yy_inv @ y
    cov = joint[np.ix_(f_idx, f_idx)] - s_fy @ s_yy_inv @ s_fy.T
    return mean, cov


@pytest.fixture(scope="module")
def small_problem():
    rng = np.random.default_rng(11)
    d = 2
    kern = random_kernel(("rq", "linear"), d, rng)
    x_train = rng.random((6, d))
    x_test = np.concatenate([rng.random((3, d)), x_train[2:3]])  # 4 test points, one a train x
    noise_var = rng.uniform(0.01, 0.3, 6)  # heteroscedastic, known
    y = rng.standard_normal(6)
    return kern, 1.7, x_train, y, noise_var, x_test


def test_conditioning_matches_brute_force(small_problem):
    kern, a, x_train, y, noise_var, x_test = small_problem
    mean_bf, cov_bf = brute_force_posterior(kern, a, x_train, y, noise_var, x_test)
    mean, cov = posterior_covariance(kern, a, x_train, y, noise_var, x_test)
    np.testing.assert_allclose(mean, mean_bf, rtol=0, atol=1e-8)
    np.testing.assert_allclose(cov, cov_bf, rtol=0, atol=1e-8)
    mean2, var2 = posterior_moments(kern, a, x_train, y, noise_var, x_test)
    np.testing.assert_allclose(mean2, mean_bf, rtol=0, atol=1e-8)
    np.testing.assert_allclose(var2, np.diag(cov_bf), rtol=0, atol=1e-8)
    _, mean3, var3 = posterior_draws(kern, a, x_train, y, noise_var, x_test, 3,
                                     np.random.default_rng(0))
    np.testing.assert_allclose(mean3, mean_bf, rtol=0, atol=1e-8)
    np.testing.assert_allclose(var3, np.diag(cov_bf), rtol=0, atol=1e-8)


def assert_moments_match(draws, mean, cov, n_sigma=5.0):
    """Empirical mean/covariance of the draws within n_sigma Monte-Carlo standard errors."""
    n_draws = draws.shape[0]
    var = np.diag(cov)
    se_mean = np.sqrt(var / n_draws)
    assert np.all(np.abs(draws.mean(axis=0) - mean) <= n_sigma * se_mean + 1e-12)
    emp = np.cov(draws, rowvar=False)
    se_cov = np.sqrt((np.outer(var, var) + cov ** 2) / n_draws)
    assert np.all(np.abs(emp - cov) <= n_sigma * se_cov + 1e-12)


def test_posterior_draws_monte_carlo(small_problem):
    kern, a, x_train, y, noise_var, x_test = small_problem
    x_dup = np.concatenate([x_test, x_test[1:2], x_test[3:4]])  # duplicates of rows 1 and 3
    draws, mean, var = posterior_draws(kern, a, x_train, y, noise_var, x_dup, 20_000,
                                       np.random.default_rng(5))
    assert draws.shape == (20_000, 6)
    np.testing.assert_array_equal(draws[:, 4], draws[:, 1])
    np.testing.assert_array_equal(draws[:, 5], draws[:, 3])
    mean_bf, cov_bf = brute_force_posterior(kern, a, x_train, y, noise_var, x_test)
    assert_moments_match(draws[:, :4], mean_bf, cov_bf)
    np.testing.assert_allclose(mean[:4], mean_bf, atol=1e-8)


def test_prior_draws_monte_carlo():
    rng = np.random.default_rng(8)
    kern = random_kernel(("matern32", "periodic"), 2, rng)
    x = rng.random((5, 2))
    x = np.concatenate([x, x[:2]])
    a = 0.6
    draws = sample_prior(kern, a, x, np.random.default_rng(9), size=20_000)
    assert draws.shape == (20_000, 7)
    np.testing.assert_array_equal(draws[:, 5:], draws[:, :2])
    assert_moments_match(draws[:, :5], np.zeros(5), a ** 2 * reference_matrix(kern, x[:5], x[:5]))


def test_determinism(small_problem):
    kern, a, x_train, y, noise_var, x_test = small_problem
    one = posterior_draws(kern, a, x_train, y, noise_var, x_test, 50, np.random.default_rng(3))
    two = posterior_draws(kern, a, x_train, y, noise_var, x_test, 50, np.random.default_rng(3))
    for u, v in zip(one, two, strict=True):
        np.testing.assert_array_equal(u, v)
    p1 = sample_prior(kern, a, x_test, np.random.default_rng(4), size=3)
    p2 = sample_prior(kern, a, x_test, np.random.default_rng(4), size=3)
    np.testing.assert_array_equal(p1, p2)
    assert scale_constant(kern, x_test, np.random.default_rng(2)) == \
        scale_constant(kern, x_test, np.random.default_rng(2))


def test_robust_sqrt_jitter_and_fallback():
    # Nearly singular (a smooth kernel on close points): Cholesky with jitter.
    x = np.linspace(0, 0.05, 60)[:, None]
    cov = default_kernel(("rbf",), 1).matrix(x, x)
    info = {}
    f = robust_sqrt(cov, info)
    assert info["method"] == "cholesky"
    np.testing.assert_allclose(f @ f.T, cov, atol=1e-6)
    # Indefinite: eigendecomposition with negative eigenvalues clipped to 0.
    rng = np.random.default_rng(0)
    q, _ = np.linalg.qr(rng.standard_normal((5, 5)))
    lam = np.array([2.0, 1.0, 0.5, 0.0, -1e-3])
    bad = (q * lam) @ q.T
    info = {}
    f = robust_sqrt(bad, info)
    assert info["method"] == "eigh"
    np.testing.assert_allclose(f @ f.T, (q * np.clip(lam, 0, None)) @ q.T, atol=1e-12)


def test_scale_constant_gives_unit_median_sd():
    rng = np.random.default_rng(21)
    kern = random_kernel(("matern52", "linear"), 3, rng)
    x_eval = rng.random((300, 3))
    x_eval[:50] = x_eval[50:100]  # duplicates count as rows
    a = scale_constant(kern, x_eval, np.random.default_rng(1), n_draws=100)
    assert a > 0
    draws = sample_prior(kern, a, x_eval, np.random.default_rng(2), size=100)
    assert abs(np.median(np.std(draws, axis=1)) - 1.0) < 0.15


def test_input_validation(small_problem):
    kern, a, x_train, y, noise_var, x_test = small_problem
    with pytest.raises(ValueError):
        posterior_moments(kern, a, x_train, y, -noise_var, x_test)
    with pytest.raises(ValueError):
        posterior_moments(kern, a, x_train, y[:-1], noise_var, x_test)
    assert gp.JITTERS[0] == 1e-10 and gp.JITTERS[-1] == 1e-6


# ------------------------------------------------------------------------------------------
# Fitting
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("components", [("powexp", "periodic"), ("arccos0", "linear"),
                                        ("matern12",)], ids="+".join)
def test_objective_gradient_matches_finite_differences(components):
    import jax.numpy as jnp

    rng = np.random.default_rng(4)
    n, d = 30, 2
    x = rng.random((n, d))
    x[3] = x[4]  # duplicates must not break the gradient of non-smooth kernels
    y = rng.standard_normal(n)
    same = np.all(x[:, None, :] == x[None, :, :], axis=-1)
    slots, vg = K._objective(tuple(components), d)
    theta = K._start_vector(slots) + 0.3 * rng.standard_normal(sum(s.size for s in slots))
    with jax.enable_x64(True):
        args = (jnp.asarray(x), jnp.asarray(y), jnp.asarray(same))

        def f(t):
            lml, lp, _ = vg(jnp.asarray(t), *args)
            return lml + lp

        grad = vg(jnp.asarray(theta), *args)[2]
        eps = 1e-6
        fd = np.array([(f(theta + eps * e) - f(theta - eps * e)) / (2 * eps)
                       for e in np.eye(theta.size)])
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-5)


@pytest.fixture(scope="module")
def rbf_data():
    rng = np.random.default_rng(7)
    n = 300
    x = rng.random((n, 2))
    truth = Kernel(("rbf",), {"rbf": {"weight": 1.0, "lengthscale": [2.0, 0.08]}})
    f = sample_prior(truth, 1.0, x, rng)[0]
    y = 3.0 + 2.0 * (f + 0.1 * rng.standard_normal(n))
    return x, y


def test_fit_kernel_recovers_lengthscales(rbf_data, caplog):
    x, y = rbf_data
    caplog.set_level(logging.INFO, logger="postrisk")
    fit = fit_kernel(("rbf",), x, y, rng=np.random.default_rng(0), max_iter=100, restarts=1)
    lines = [r.getMessage() for r in caplog.records if r.name == "postrisk.gp.kernels"]
    assert [line.split(": ")[1].split(" ")[0] for line in lines] == ["2", "1/2", "2/2", "done,"]
    assert all("LML" in s for s in lines[1:3])
    ls_long, ls_short = fit.kernel.params["rbf"]["lengthscale"]
    assert ls_short < 0.3 < 1.0 < ls_long
    assert fit.n_used == 300 and fit.iterations > 0
    start = fit_kernel(("rbf",), x, y, rng=np.random.default_rng(0), max_iter=0, restarts=0)
    assert fit.log_marginal_likelihood >= start.log_marginal_likelihood
    assert start.kernel == default_kernel(("rbf",), 2)
    # The reported LML is the exact one for the fitted hyper-parameters (z-scored target).
    yz = (y - fit.y_mean) / fit.y_sd
    lml = K.log_marginal_likelihood(fit.kernel, x, yz, signal_var=fit.signal_var,
                                    noise_var=fit.noise_var, mean=fit.mean)
    assert lml == pytest.approx(fit.log_marginal_likelihood, abs=1e-6)
    assert 0.001 < fit.noise_var < 0.05  # true noise variance / var(y) ≈ 0.01
    d = json.loads(json.dumps(fit.to_dict()))
    assert Kernel.from_dict(d["kernel"]) == fit.kernel


def test_fit_kernel_subsample_and_determinism():
    rng = np.random.default_rng(12)
    x = rng.random((120, 3))
    y = np.sin(4 * x[:, 0]) + 0.2 * rng.standard_normal(120)
    kw = dict(max_rows=80, max_iter=15, restarts=1)
    one = fit_kernel(("matern32", "linear"), x, y, rng=np.random.default_rng(5), **kw)
    two = fit_kernel(("matern32", "linear"), x, y, rng=np.random.default_rng(5), **kw)
    assert one.n_used == 80
    assert one.kernel == two.kernel
    assert one.log_marginal_likelihood == two.log_marginal_likelihood
    w = [one.kernel.params[c]["weight"] for c in one.kernel.components]
    assert sum(w) == pytest.approx(1.0)
