"""GP kernels: every component against its formula written out by hand, matrix properties, weights,
round trips, validation, no global x64."""
from __future__ import annotations

import json
import zlib

import jax
import numpy as np
import pytest

from postrisk.covariates.registry import KERNEL_COMPONENTS
from postrisk.gp.kernels import Kernel, default_kernel
from tests.gp.kernel_helpers import random_kernel, reference_matrix

SUMS = [("matern52", "powexp"), ("rq", "linear"), ("periodic", "linear"),
        ("matern12", "linear"), ("rbf", "arccos0", "matern32")]


ALL_KERNELS = [(c,) for c in KERNEL_COMPONENTS] + SUMS


STATIONARY_LIKE = {"matern12", "matern32", "matern52", "rbf", "rq", "powexp", "periodic",
                   "arccos0"}  # k(x, x) = 1








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
