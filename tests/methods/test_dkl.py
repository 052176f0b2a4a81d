"""Deep kernel learning (``dkl``): exact GP algebra on the features, training, target units."""

import logging
import math

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from postrisk.methods import run_fit
from postrisk.methods.dkl import (
    MIN_NOISE_VAR,
    DeepKernelLearning,
    GPPosterior,
    gp_hyper,
    init_gp_params,
    negative_mll,
)

PAPER_SPACE = {
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
#: Small and quick settings for the behaviour tests (not the defaults).
QUICK = {"n_layers": 2, "hidden_dim": 16, "feature_space_dim": 3, "num_iters": 60,
         "warmup_steps": 10, "peak_learning_rate": 1e-2}


def matern52_brute(a, b, variance, lengthscale):
    """σ²(1 + √5 r + 5r²/3) exp(−√5 r), r² = Σ_j ((a_j − b_j)/ℓ_j)², by explicit loops."""
    out = np.empty((len(a), len(b)))
    for i in range(len(a)):
        for j in range(len(b)):
            r = math.sqrt(float(np.sum(((a[i] - b[j]) / lengthscale) ** 2)))
            out[i, j] = variance * (1 + math.sqrt(5) * r + 5 * r * r / 3) * math.exp(-math.sqrt(5)
                                                                                      * r)
    return out


def brute_posterior(feats, t, test, variance, lengthscale, noise):
    k = matern52_brute(feats, feats, variance, lengthscale) + noise * np.eye(len(t))
    ks = matern52_brute(feats, test, variance, lengthscale)
    kinv = np.linalg.inv(k)
    mean = ks.T @ kinv @ t
    var = variance - np.einsum("ij,ik,kj->j", ks, kinv, ks)
    return mean, var


def data(n, d=2, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, size=(n, d))
    y = np.sin(2 * x[:, 0]) + 0.3 * x[:, -1] ** 2 + 0.1 * rng.standard_normal(n)
    return x, y


def natural(raw):
    return {k: np.asarray(v, dtype=np.float64) for k, v in gp_hyper(raw).items()}


def test_declared_interface():
    assert DeepKernelLearning.name == "dkl" and DeepKernelLearning.display_name == "DKL"
    assert DeepKernelLearning.search_space == PAPER_SPACE
    assert DeepKernelLearning.defaults["end_learning_rate"] == 0.0
    assert "end_learning_rate" not in DeepKernelLearning.search_space
    for key, spec in PAPER_SPACE.items():
        value = DeepKernelLearning.defaults[key]
        if spec[0] == "categorical":
            assert value in spec[1]
        else:
            assert spec[1] <= value <= spec[2], key


def test_gp_posterior_and_objective_equal_brute_force():
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(1)
    feats = rng.normal(size=(40, 3))
    test = np.vstack([rng.normal(size=(15, 3)), feats[:3], np.full((1, 3), 6.0)])
    t = rng.normal(size=40)
    with jax.enable_x64(True):
        raw = init_gp_params(3, 0.3, 1.7, 0.8)
        raw["lengthscale"] = raw["lengthscale"] + jnp.array([0.0, 0.5, -0.3])
        hyper = natural(raw)
        loss = float(negative_mll(jnp.asarray(feats), jnp.asarray(t), gp_hyper(raw)))
    assert hyper["noise"] == pytest.approx(0.09)
    assert hyper["variance"] == pytest.approx(1.7)
    var, ell, noise = hyper["variance"], hyper["lengthscale"], hyper["noise"]
    cov = matern52_brute(feats, feats, var, ell) + noise * np.eye(40)
    exact = multivariate_normal(mean=np.zeros(40), cov=cov).logpdf(t)
    assert loss * 40 == pytest.approx(-exact, rel=1e-10)

    post = GPPosterior(feats, t, hyper)
    mean, latent = post.predict(test, block=7)  # several blocks
    b_mean, b_var = brute_posterior(feats, t, test, var, ell, noise)
    np.testing.assert_allclose(mean, b_mean, rtol=0, atol=1e-8)
    np.testing.assert_allclose(latent, b_var, rtol=0, atol=1e-8)
    assert latent[-1] == pytest.approx(var, rel=1e-6)  # far from the data: the prior variance


def test_custom_gradient_equals_autodiff_through_a_jax_cholesky():
    import jax
    import jax.numpy as jnp

    from postrisk.methods.dkl import kernel

    def reference(raw, feats, t):
        hyper = gp_hyper(raw)
        cov = kernel(hyper, feats, feats) + hyper["noise"] * jnp.eye(t.shape[0])
        chol = jnp.linalg.cholesky(cov)
        w = jax.scipy.linalg.solve_triangular(chol, t, lower=True)
        return 0.5 * (w @ w + 2 * jnp.sum(jnp.log(jnp.diag(chol)))
                      + t.shape[0] * math.log(2 * math.pi)) / t.shape[0]

    rng = np.random.default_rng(7)
    with jax.enable_x64(True):
        feats, t = jnp.asarray(rng.normal(size=(30, 2))), jnp.asarray(rng.normal(size=30))
        raw = init_gp_params(2, 0.5, 1.3, 0.9)
        ours = jax.jit(jax.value_and_grad(lambda r, f: negative_mll(f, t, gp_hyper(r)),
                                          argnums=(0, 1)))(raw, feats)
        ref = jax.jit(jax.value_and_grad(reference, argnums=(0, 1)))(raw, feats, t)
    assert float(ours[0]) == pytest.approx(float(ref[0]), rel=1e-12)
    for a, b in zip(jax.tree_util.tree_leaves(ours[1]), jax.tree_util.tree_leaves(ref[1]),
                    strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-8, atol=1e-12)


def test_a_failed_cholesky_is_nan_in_the_objective_and_an_error_in_the_posterior():
    import jax
    import jax.numpy as jnp

    from postrisk.gp.linalg import negative_log_marginal_per_point

    with jax.enable_x64(True):
        assert np.isnan(float(negative_log_marginal_per_point(-jnp.eye(3), jnp.ones(3))))
    feats = np.zeros((4, 1))
    with pytest.raises(FloatingPointError, match="Cholesky"):
        GPPosterior(feats, np.ones(4), {"noise": 0.0, "variance": 1.0,
                                         "lengthscale": np.ones(1)})


def test_untrained_method_is_the_exact_gp_on_its_features():
    x, y = data(60, d=2, seed=2)
    x_eval = np.vstack([data(20, d=2, seed=3)[0], [[3.0, -3.0]]])
    model = DeepKernelLearning(num_iters=0, warmup_steps=0, noise_std=0.4,
                               base_kernel_variance=2.0, base_kernel_lengthscale=0.7).fit(x, y)
    assert model.loss_history_.size == 0
    m_y, s_y = y.mean(), y.std()
    t = (y - m_y) / s_y
    feats, test = model.features(x), model.features(x_eval)
    assert feats.shape == (60, DeepKernelLearning.defaults["feature_space_dim"])
    ell = np.full(feats.shape[1], 0.7)
    b_mean, b_var = brute_posterior(feats, t, test, 2.0, ell, 0.16)
    pred = model.predict(x_eval)
    np.testing.assert_allclose(pred.mean, s_y * b_mean + m_y, rtol=0, atol=1e-8 * s_y)
    np.testing.assert_allclose(pred.epistemic_var, s_y ** 2 * b_var, rtol=0, atol=1e-8 * s_y ** 2)
    np.testing.assert_allclose(pred.aleatoric_var, s_y ** 2 * 0.16, rtol=1e-12)
    cov = matern52_brute(feats, feats, 2.0, ell) + 0.16 * np.eye(60)
    exact = multivariate_normal(mean=np.zeros(60), cov=cov).logpdf(t)
    assert model.initial_loss_ * 60 == pytest.approx(-exact, rel=1e-10)
    assert model.final_loss_ == model.initial_loss_


@pytest.fixture(scope="module")
def trained():
    x, y = data(150, d=2, seed=4)
    return x, y, DeepKernelLearning(random_state=0, **QUICK).fit(x, y)


def test_training_increases_the_marginal_likelihood(trained):
    x, y, model = trained
    assert model.loss_history_.shape == (QUICK["num_iters"],)
    assert np.isfinite(model.loss_history_).all()
    assert model.final_loss_ < model.initial_loss_ - 0.1
    assert model.noise_var_ >= MIN_NOISE_VAR and model.kernel_variance_ > 0
    # the learned noise is near the true noise variance 0.01 (in standardised units /s_y²)
    assert 0.2 < model.noise_var_ * y.var() / 0.01 < 5.0


def test_same_seed_same_predictions_other_seed_differs(trained):
    x, y, model = trained
    again = DeepKernelLearning(random_state=0, **QUICK).fit(x, y)
    other = DeepKernelLearning(random_state=1, **QUICK).fit(x, y)
    p0, p1, p2 = model.predict(x[:30]), again.predict(x[:30]), other.predict(x[:30])
    for key in ("mean", "aleatoric_var", "epistemic_var"):
        np.testing.assert_array_equal(getattr(p0, key), getattr(p1, key))
    assert not np.allclose(p0.epistemic_var, p2.epistemic_var)


def test_output_is_in_target_units(trained):
    x, y, model = trained
    scaled = DeepKernelLearning(random_state=0, **QUICK).fit(x, 10 * y + 3)
    p, q = model.predict(x[:40]), scaled.predict(x[:40])
    np.testing.assert_allclose(q.mean, 10 * p.mean + 3, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(q.aleatoric_var, 100 * p.aleatoric_var, rtol=1e-5)
    np.testing.assert_allclose(q.epistemic_var, 100 * p.epistemic_var, rtol=1e-4, atol=1e-8)


def test_shapes_non_negative_and_progress(trained, caplog):
    x, y, model = trained
    pred = model.predict(np.vstack([x[:5], np.full((3, 2), 10.0)]))
    for key in ("mean", "aleatoric_var", "epistemic_var"):
        assert getattr(pred, key).shape == (8,)
        assert np.isfinite(getattr(pred, key)).all()
    assert (pred.aleatoric_var > 0).all() and (pred.epistemic_var >= 0).all()
    assert np.ptp(pred.aleatoric_var) == 0
    caplog.set_level(logging.INFO, logger="postrisk")
    DeepKernelLearning(**QUICK).fit(x, y)
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("postrisk.methods")]
    assert sum(line.startswith("[dkl] iterations: ") and "loss" in line for line in lines) == 10
    assert lines[0].startswith("[dkl] n = ") and lines[-1].startswith("[dkl] trained in")


def test_bad_inputs_raise():
    x, y = data(60, d=2, seed=5)
    with pytest.raises(ValueError, match="2-D"):
        DeepKernelLearning().fit(x[:, 0], y)
    with pytest.raises(ValueError, match="shape"):
        DeepKernelLearning().fit(x, y[:-1])
    with pytest.raises(ValueError, match="non-finite"):
        DeepKernelLearning().fit(x, np.r_[y[:-1], np.nan])
    with pytest.raises(ValueError, match="feature_space_dim"):
        DeepKernelLearning(feature_space_dim=0).fit(x, y)
    with pytest.raises(ValueError, match="noise_std"):
        DeepKernelLearning(noise_std=-1.0).fit(x, y)
    with pytest.raises(ValueError, match="warmup_steps"):
        DeepKernelLearning(num_iters=10, warmup_steps=20).fit(x, y)
    with pytest.raises(TypeError, match="unknown"):
        DeepKernelLearning(learning_rate=1.0)
    model = DeepKernelLearning(num_iters=0, warmup_steps=0).fit(x, y)
    with pytest.raises(ValueError, match="features"):
        model.predict(x[:, :1])
    with pytest.raises(ValueError, match="non-finite"):
        model.predict(np.full((2, 2), np.inf))
    with pytest.raises(RuntimeError, match="before fit"):
        DeepKernelLearning().predict(x)


def test_run_fit_is_ok():
    x, y = data(150, d=2, seed=6)  # the shapes and settings of ``trained``: no new compilation
    rec = run_fit("dkl", QUICK, x, y, x[:7], random_state=3)
    assert rec.ok, rec.error
    assert rec.mean.shape == (7,) and rec.config["end_learning_rate"] == 0.0
