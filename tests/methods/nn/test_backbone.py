"""The shared neural backbone, spectral normalisation, Gaussian heads and training loop."""

from __future__ import annotations

import functools
import logging

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from scipy import stats

from postrisk.methods.nn.backbone import (
    SHARED_DEFAULTS,
    SHARED_SEARCH_SPACE,
    BackboneSpec,
    apply_backbone,
    init_backbone,
    power_iteration,
    spectral_normalize,
    spectral_norms,
)
from postrisk.methods.nn.heads import (
    HEAD_EPS,
    gaussian_head,
    natural_gaussian_head,
    pointwise_gaussian_nll,
)
from postrisk.methods.nn.train import (
    compiled_loop_sharing,
    loop_compilations,
    nadamw,
    per_member,
    sgd,
    steps_per_epoch,
    train,
)

SN_TOLERANCE = 1e-2


def _sigma_max(w) -> float:
    return float(np.linalg.svd(np.asarray(w, dtype=np.float64), compute_uv=False)[0])


def _random_weight(rng, shape, sigma_max):
    w = rng.standard_normal(shape)
    return jnp.asarray(w * sigma_max / _sigma_max(w), dtype=jnp.float32)


def _trained_u(w, rng, n_updates=20, jitter=1e-3):
    """A persistent u after training-like updates: one power step per 'step' while W drifts."""
    u = jnp.asarray(rng.standard_normal(w.shape[1]), dtype=jnp.float32)
    for _ in range(n_updates):
        drifted = w + jitter * jnp.asarray(rng.standard_normal(w.shape), dtype=jnp.float32)
        u, _ = power_iteration(drifted, u, 1)
    return u


# -- (a) spectral normalisation ---------------------------------------------------------------
@pytest.mark.parametrize("shape,sigma_max", [((8, 8), 20.0), ((16, 32), 5.0), ((32, 16), 50.0),
                                             ((1, 32), 3.0), ((64, 64), 10.0)])
@pytest.mark.parametrize("coeff", [0.5, 3.0])
def test_spectral_norm_bounds_effective_weight(shape, sigma_max, coeff):
    rng = np.random.default_rng(hash((shape, coeff)) % 2**32)
    w = _random_weight(rng, shape, sigma_max * coeff)
    u = _trained_u(w, rng)
    w_eff, u_new, sigma_hat = spectral_normalize(w, u, coeff, 3)
    assert _sigma_max(w_eff) <= coeff * (1 + SN_TOLERANCE)
    # σ̂ is a lower bound of σ_max that is nearly tight
    assert float(sigma_hat) <= _sigma_max(w) * (1 + 1e-5)
    assert float(sigma_hat) >= _sigma_max(w) * (1 - SN_TOLERANCE)
    assert np.isclose(float(jnp.linalg.norm(u_new)), 1.0, atol=1e-5)


@pytest.mark.parametrize("shape", [(8, 8), (16, 32), (32, 4)])
def test_spectral_norm_leaves_small_layers_unchanged(shape):
    rng = np.random.default_rng(1)
    w = _random_weight(rng, shape, 0.5)
    u = jnp.asarray(rng.standard_normal(shape[1]), dtype=jnp.float32)
    for steps in (0, 1, 3):
        w_eff, _, _ = spectral_normalize(w, u, 1.0, steps)
        np.testing.assert_array_equal(np.asarray(w_eff), np.asarray(w))


def test_spectral_norm_without_refinement_from_random_u_can_violate_bound():
    # negative control: σ̂ = ‖W u‖ for a random unit u underestimates σ_max, so the bound fails
    rng = np.random.default_rng(2)
    w = _random_weight(rng, (64, 64), 10.0)
    u = jnp.asarray(rng.standard_normal(64), dtype=jnp.float32)
    w_eff, _, _ = spectral_normalize(w, u, 1.0, 0)
    assert _sigma_max(w_eff) > 1.0 * (1 + SN_TOLERANCE) * 1.2
    w_eff3, _, _ = spectral_normalize(w, _trained_u(w, rng), 1.0, 3)
    assert _sigma_max(w_eff3) <= 1.0 + SN_TOLERANCE


def test_backbone_spectral_norm_state_updates_and_bounds_every_dense_layer():
    spec = BackboneSpec(in_dim=3, width=16, depth=2, spectral_norm=True, sn_coeff=0.8, out_dim=2)
    params, sn_state = init_backbone(spec, jax.random.PRNGKey(0))
    # blow the weights up so that normalisation is active in every layer
    params = {**params, "dense": [{"w": 10.0 * layer["w"], "b": layer["b"]}
                                  for layer in params["dense"]]}
    x = jax.random.normal(jax.random.PRNGKey(1), (20, 3))
    _, same = apply_backbone(spec, params, sn_state, x, power_iterations=3)
    assert same is sn_state  # prediction never changes the persistent vectors
    state = sn_state
    training_forward = jax.jit(lambda s: apply_backbone(spec, params, s, x, update_sn=True))
    for _ in range(20):
        _, new_state = training_forward(state)
        assert not all(np.array_equal(a, b) for a, b in zip(new_state["u"], state["u"],
                                                           strict=True))
        state = new_state
    norms = spectral_norms(spec, params, state, power_iterations=3)
    assert len(norms) == 1 + 2 * spec.depth
    assert max(norms) <= spec.sn_coeff * (1 + SN_TOLERANCE)
    assert min(norms) >= spec.sn_coeff * (1 - SN_TOLERANCE)  # all were ≫ c before


def test_no_gradient_flows_through_power_iteration_vectors():
    spec = BackboneSpec(in_dim=2, width=8, depth=1, spectral_norm=True, out_dim=1)
    params, sn_state = init_backbone(spec, jax.random.PRNGKey(3))
    x = jax.random.normal(jax.random.PRNGKey(4), (10, 2))

    def total(state):
        return apply_backbone(spec, params, state, x, update_sn=True)[0].sum()

    grads = jax.jit(jax.grad(total))(sn_state)
    assert all(float(jnp.abs(g).max()) == 0.0 for g in grads["u"])


# -- (b) the training loop -------------------------------------------------------------------
@functools.cache
def _mse_loss(spec):
    """One loss object per spec, so the jitted loop is compiled once per test module."""

    def loss_fn(params, state, xb, yb, key):
        out, new_state = apply_backbone(spec, params, state, xb, dropout_key=key, update_sn=True)
        return jnp.mean((out[:, 0] - yb) ** 2), new_state

    return loss_fn


def _mse_problem(spec, n=48):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((n, spec.in_dim)).astype(np.float32)
    y = (20.0 * np.sin(x.sum(axis=1))).astype(np.float32)  # large targets: clipping is active
    return x, y, _mse_loss(spec)


#: the member tests share one spec, loss, optimiser and data shape (one compilation each way)
MEMBER_SPEC = BackboneSpec(in_dim=2, width=8, depth=1, spectral_norm=True, out_dim=1)
MEMBER_SETTINGS = dict(optimizer=nadamw(1e-2, 0.9, 1e-3), n_epochs=6, batch_size=16)


def _stack(trees):
    return jax.tree.map(lambda *leaves: jnp.stack(leaves), *trees)


@pytest.mark.slow
def test_vmapped_members_train_exactly_as_alone():
    x, y, loss_fn = _mse_problem(MEMBER_SPEC)
    inits = [init_backbone(MEMBER_SPEC, seed) for seed in (0, 1)]
    grad = jax.grad(lambda p: loss_fn(p, inits[0][1], x, y, None)[0])(inits[0][0])
    assert float(optax.tree.norm(grad)) > 10.0  # the clip at 1 is active
    key = jax.random.PRNGKey(9)
    settings = MEMBER_SETTINGS
    p_all, s_all, h_all = train(loss_fn, _stack([i[0] for i in inits]),
                                _stack([i[1] for i in inits]), x, y, key=key, n_members=2,
                                **settings)
    assert h_all["loss"].shape == (2, 6)
    member_keys = jax.random.split(key, 2)
    alone = [train(loss_fn, *inits[i], x, y, key=member_keys[i], **settings) for i in range(2)]
    for i, (p_i, s_i, h_i) in enumerate(alone):
        jax.tree.map(lambda a, b, i=i: np.testing.assert_allclose(a[i], b, rtol=1e-4,
                                                                   atol=1e-5), p_all, p_i)
        jax.tree.map(lambda a, b, i=i: np.testing.assert_allclose(a[i], b, atol=1e-5),
                     s_all, s_i)
        np.testing.assert_allclose(h_all["loss"][i], h_i["loss"], rtol=1e-4)
    # and the two members did differ (different keys and initialisations)
    assert not np.allclose(p_all["out"]["w"][0], p_all["out"]["w"][1])


def test_member_rows_train_each_member_on_its_rows():
    x, y, loss_fn = _mse_problem(MEMBER_SPEC)
    rows = np.random.default_rng(0).integers(0, 48, (2, 48))  # bootstrap resamples
    params, state = init_backbone(MEMBER_SPEC, 3)
    settings = MEMBER_SETTINGS
    key = jax.random.PRNGKey(1)
    p_all, _, _ = train(loss_fn, _stack([params, params]), _stack([state, state]), x, y,
                        key=key, n_members=2, member_rows=rows, **settings)
    for i in range(2):
        p_i, _, _ = train(loss_fn, params, state, x[rows[i]], y[rows[i]],
                          key=jax.random.split(key, 2)[i], **settings)
        np.testing.assert_allclose(p_all["out"]["w"][i], p_i["out"]["w"], rtol=1e-4, atol=1e-5)


def test_per_member_settings_train_each_member_as_it_would_alone():
    """Three configurations of one architecture (their own learning rate, momentum, weight
    decay and epochs) trained as one vmapped program: each member ends where it would alone,
    its losses after its own last epoch are NaN, and the loop compiles once for any
    settings."""
    x, y, loss_fn = _mse_problem(MEMBER_SPEC)
    params, state = init_backbone(MEMBER_SPEC, 5)
    key = jax.random.PRNGKey(2)
    configs = [(1e-2, 0.9, 1e-3, 5), (3e-3, 0.8, 0.0, 9), (2e-2, 0.95, 1e-2, 7)]
    optimizer = per_member([nadamw(lr, mom, wd) for lr, mom, wd, _ in configs])
    epochs = [e for *_, e in configs]
    p_all, _, history = train(loss_fn, _stack([params] * 3), _stack([state] * 3), x, y,
                              key=key, n_members=3, optimizer=optimizer, n_epochs=epochs,
                              batch_size=16)
    assert history["loss"].shape == (3, 9)
    for i, (lr, mom, wd, n_epochs) in enumerate(configs):
        assert np.isnan(history["loss"][i, n_epochs:]).all()
        assert np.isfinite(history["loss"][i, :n_epochs]).all()
        p_i, _, alone = train(loss_fn, params, state, x, y, key=jax.random.split(key, 3)[i],
                              optimizer=nadamw(lr, mom, wd), n_epochs=n_epochs, batch_size=16)
        np.testing.assert_allclose(p_all["out"]["w"][i], p_i["out"]["w"], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(history["loss"][i, :n_epochs], alone["loss"], rtol=1e-4)
    before = loop_compilations()
    train(loss_fn, _stack([params] * 3), _stack([state] * 3), x, y, key=key, n_members=3,
          optimizer=per_member([nadamw(5e-3, 0.7, 0.0)] * 3), n_epochs=[2, 3, 4],
          batch_size=16)
    assert loop_compilations() == before
    with pytest.raises(ValueError, match="one count per member"):
        train(loss_fn, params, state, x, y, key=key, optimizer=nadamw(1e-2, 0.9, 0.0),
              n_epochs=[2, 3], batch_size=16)
    with pytest.raises(ValueError, match="differ in their transformation"):
        per_member([nadamw(1e-2, 0.9, 0.0), sgd(1e-2, 0.9)])


def test_full_batch_with_any_optax_optimizer_reduces_the_loss(caplog):
    spec = BackboneSpec(in_dim=2, width=8, depth=2, residual=False, activation="relu", out_dim=1)
    x, y, loss_fn = _mse_problem(spec)
    schedule = optax.warmup_cosine_decay_schedule(0.0, 1e-2, 5, 60, 0.0)
    optimizer = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(schedule))
    params, state = init_backbone(spec, jax.random.PRNGKey(0))
    caplog.set_level(logging.INFO, logger="postrisk")
    _, _, history = train(loss_fn, params, state, x, y / 20.0, optimizer=optimizer, n_epochs=60,
                          batch_size=None, key=jax.random.PRNGKey(0), label="toy: epochs")
    assert history["loss"].shape == (60,)
    assert history["loss"][-1] < 0.5 * history["loss"][0]
    # progress: a start line, one line per chunk of 6 epochs (each a tenth), a final line
    lines = [r.getMessage() for r in caplog.records if r.name == "postrisk.methods.nn.train"]
    assert len(lines) == 12 and lines[0] == "toy: epochs: 60 steps"
    assert lines[10].startswith("toy: epochs: 60/60 (100%)") and "loss" in lines[10]
    assert lines[11].startswith("toy: epochs: done, 60/60 steps in ")


def test_steps_per_epoch():
    assert steps_per_epoch(400, 128) == (4, 128)
    assert steps_per_epoch(400, 400) == (1, 400)
    assert steps_per_epoch(400, None) == (1, 400)
    assert steps_per_epoch(400, 512) == (1, 400)


def test_nadamw_clips_then_applies_nadamw():
    params = {"w": jnp.zeros(3)}
    grads = {"w": jnp.array([30.0, 40.0, 0.0])}  # norm 50 → clipped to norm 1
    ours = nadamw(0.1, 0.8, 0.0)
    reference = optax.nadamw(0.1, b1=0.8, b2=0.999, eps=1e-8, weight_decay=0.0)
    u1, _ = ours.update(grads, ours.init(params), params)
    u2, _ = reference.update({"w": grads["w"] / 50.0}, reference.init(params), params)
    np.testing.assert_allclose(u1["w"], u2["w"], rtol=1e-5)
    # the numbers are traced: every setting shares one transformation (one compiled loop)
    assert nadamw(0.3, 0.7, 1e-2).transform is ours.transform


def test_a_sweep_over_optimiser_settings_and_epochs_compiles_the_loop_once():
    spec = BackboneSpec(in_dim=2, width=8, depth=1, out_dim=1)
    x, y, loss_fn = _mse_problem(spec)
    params, state = init_backbone(spec, 0)
    settings = [(1e-3, 0.9, 1e-4, 7), (3e-3, 0.8, 1e-2, 11), (2e-4, 0.95, 1e-6, 40)]

    def sweep() -> list[float]:
        before = loop_compilations()
        finals = []
        for lr, momentum, wd, epochs in settings:
            _, _, history = train(loss_fn, params, state, x, y / 20.0,
                                  optimizer=nadamw(lr, momentum, wd), n_epochs=epochs,
                                  batch_size=16, key=jax.random.PRNGKey(0))
            finals.append(float(history["loss"][-1]))
        return loop_compilations() - before, finals

    traced, finals = sweep()
    with compiled_loop_sharing(False):
        baked, baked_finals = sweep()
    assert traced <= 1 and baked == len(settings)
    np.testing.assert_allclose(finals, baked_finals, rtol=1e-5)  # the same training either way


# -- (c) dropout -------------------------------------------------------------------------------
def test_dropout_active_only_with_a_key():
    spec = BackboneSpec(in_dim=3, width=32, depth=2, dropout=0.3, out_dim=2)
    params, state = init_backbone(spec, jax.random.PRNGKey(0))
    x = jax.random.normal(jax.random.PRNGKey(1), (50, 3))
    ev1, _ = apply_backbone(spec, params, state, x)
    no_key, _ = apply_backbone(spec, params, state, x, update_sn=True)
    np.testing.assert_array_equal(ev1, no_key)
    tr1, _ = apply_backbone(spec, params, state, x, dropout_key=jax.random.PRNGKey(2))
    tr2, _ = apply_backbone(spec, params, state, x, dropout_key=jax.random.PRNGKey(3))
    assert not np.allclose(tr1, ev1) and not np.allclose(tr1, tr2)
    spec0 = BackboneSpec(in_dim=3, width=32, depth=2, dropout=0.0, out_dim=2)
    tr0, _ = apply_backbone(spec0, params, state, x, dropout_key=jax.random.PRNGKey(2))
    np.testing.assert_array_equal(tr0, ev1)
    # a rate passed as an argument (traced in a sweep) overrides the spec's
    over, _ = apply_backbone(spec0, params, state, x, dropout_key=jax.random.PRNGKey(2),
                             dropout_rate=jnp.float32(0.3))
    np.testing.assert_allclose(over, tr1, rtol=1e-6)


def test_dropout_and_the_power_iteration_update_are_separate_switches():
    # MC-dropout with spectral normalisation: masks at prediction, persistent vectors untouched
    spec = BackboneSpec(in_dim=3, width=16, depth=1, dropout=0.2, spectral_norm=True, out_dim=2)
    params, state = init_backbone(spec, jax.random.PRNGKey(0))
    x = jax.random.normal(jax.random.PRNGKey(1), (20, 3))
    masked, kept = apply_backbone(spec, params, state, x, dropout_key=jax.random.PRNGKey(2),
                                  power_iterations=3)
    assert kept is state
    clean, _ = apply_backbone(spec, params, state, x, power_iterations=3)
    assert not np.allclose(masked, clean)
    same, updated = apply_backbone(spec, params, state, x, update_sn=True, power_iterations=3)
    np.testing.assert_array_equal(same, clean)
    assert not np.allclose(updated["u"][0], state["u"][0])


def test_dropout_after_input_layer_zeroes_units_at_the_rate():
    # depth 0, no out layer: features = Dropout(act(x W + b)) → a fraction p exactly zero,
    # the rest scaled by 1/(1 − p)
    spec = BackboneSpec(in_dim=2, width=64, depth=0, dropout=0.25)
    params, state = init_backbone(spec, jax.random.PRNGKey(0))
    x = jax.random.normal(jax.random.PRNGKey(1), (200, 2))
    clean, _ = apply_backbone(spec, params, state, x)
    dropped, _ = apply_backbone(spec, params, state, x, dropout_key=jax.random.PRNGKey(5))
    zero = np.asarray(dropped) == 0.0
    assert abs(zero.mean() - 0.25) < 0.02
    np.testing.assert_allclose(np.asarray(dropped)[~zero], np.asarray(clean)[~zero] / 0.75,
                               rtol=1e-5)


# -- (d) shapes --------------------------------------------------------------------------------
@pytest.mark.parametrize("residual,depth,out_dim,n_dense", [(True, 0, None, 1), (True, 3, None, 7),
                                                            (True, 2, 2, 5), (False, 1, None, 1),
                                                            (False, 3, 4, 3)])
def test_shapes(residual, depth, out_dim, n_dense):
    spec = BackboneSpec(in_dim=5, width=12, depth=depth, residual=residual, out_dim=out_dim,
                        spectral_norm=True)
    params, state = init_backbone(spec, jax.random.PRNGKey(0))
    assert len(params["dense"]) == n_dense == len(state["u"])
    assert params["dense"][0]["w"].shape == (5, 12)
    assert (params["out"] is None) == (out_dim is None)
    feats, _ = apply_backbone(spec, params, state, jnp.ones((7, 5)))
    assert feats.shape == (7, spec.feature_dim) == (7, out_dim or 12)
    batched, _ = apply_backbone(spec, params, state, jnp.ones((2, 7, 5)))
    assert batched.shape == (2, 7, spec.feature_dim)


def test_plain_topology_is_a_stack_of_dense_tanh_layers():
    spec = BackboneSpec(in_dim=2, width=4, depth=2, residual=False, out_dim=1)
    params, state = init_backbone(spec, jax.random.PRNGKey(0))
    x = np.array([[0.3, -1.2], [1.0, 0.5]], dtype=np.float32)
    h = np.tanh(x @ params["dense"][0]["w"] + params["dense"][0]["b"])
    h = np.tanh(h @ params["dense"][1]["w"] + params["dense"][1]["b"])
    expected = h @ params["out"]["w"] + params["out"]["b"]
    np.testing.assert_allclose(apply_backbone(spec, params, state, x)[0], expected, rtol=1e-5)


def test_residual_topology_matches_hand_computation():
    spec = BackboneSpec(in_dim=2, width=4, depth=1, activation="relu")
    params, state = init_backbone(spec, jax.random.PRNGKey(0))
    x = np.array([[0.3, -1.2], [1.0, 0.5]], dtype=np.float32)
    d = params["dense"]
    h = np.maximum(x @ d[0]["w"] + d[0]["b"], 0)
    h = h + np.maximum(h @ d[1]["w"] + d[1]["b"], 0) @ d[2]["w"] + d[2]["b"]
    np.testing.assert_allclose(apply_backbone(spec, params, state, x)[0], h, rtol=1e-5)


def test_initialisation_scale_and_random_biases():
    spec = BackboneSpec(in_dim=200, width=300, depth=1, out_dim=2)
    for key in (jax.random.PRNGKey(0), 0):  # the JAX and the NumPy path draw the same scheme
        params, _ = init_backbone(spec, key)
        w = np.asarray(params["dense"][0]["w"])
        assert abs(w.var() / (1.0 / 200) - 1) < 0.05  # LeCun normal for tanh
        assert abs(np.asarray(params["out"]["w"]).var() / (1.0 / 300) - 1) < 0.1
        # biases U(±1/√fan_in): variance 1/(3·fan_in), bounded by 1/√fan_in
        b = np.concatenate([np.asarray(layer["b"]) for layer in params["dense"][1:]])
        assert abs(b.var() / (1.0 / (3 * 300)) - 1) < 0.1
        assert np.abs(b).max() <= 1 / np.sqrt(300)
        first = np.asarray(params["dense"][0]["b"])
        assert np.abs(first).max() <= 1 / np.sqrt(200) and first.std() > 0
    relu = BackboneSpec(in_dim=200, width=300, depth=1, activation="relu")
    w = np.asarray(init_backbone(relu, jax.random.PRNGKey(0))[0]["dense"][0]["w"])
    assert abs(w.var() / (2.0 / 200) - 1) < 0.05  # He normal for relu
    # the NumPy path (int seed) draws the same scheme, reproducibly
    params_np, _ = init_backbone(relu, 7)
    w = np.asarray(params_np["dense"][0]["w"])
    assert abs(w.var() / (2.0 / 200) - 1) < 0.05
    np.testing.assert_array_equal(w, np.asarray(init_backbone(relu, 7)[0]["dense"][0]["w"]))


def test_shared_hyperparameters_are_declared_once():
    assert set(SHARED_SEARCH_SPACE) <= set(SHARED_DEFAULTS)
    assert SHARED_SEARCH_SPACE["width"] == ("categorical", [16, 32, 64])
    assert SHARED_DEFAULTS["activation"] == "tanh"


# -- (e) heads -----------------------------------------------------------------------------------
def test_gaussian_head_and_nll_match_hand_formulas():
    raw = jnp.array([[0.5, -3.0], [-1.0, 0.0], [2.0, 4.0]])
    mean, var = gaussian_head(raw)
    sd = np.log1p(np.exp(np.asarray(raw[:, 1], dtype=np.float64))) + HEAD_EPS
    np.testing.assert_allclose(mean, raw[:, 0])
    np.testing.assert_allclose(var, sd ** 2, rtol=1e-5)
    y = jnp.array([0.0, 1.0, -2.0])
    expected = -stats.norm.logpdf(np.asarray(y), np.asarray(mean), sd)
    np.testing.assert_allclose(pointwise_gaussian_nll(mean, var, y), expected, rtol=1e-5)


def test_natural_parameter_head():
    raw = jnp.array([[0.5, -30.0], [-1.0, 0.0], [2.0, 4.0]])
    mean, var = natural_gaussian_head(raw)
    eta2 = -0.5 * (np.log1p(np.exp(np.asarray(raw[:, 1], dtype=np.float64))) + HEAD_EPS)
    assert np.all(eta2 < 0) and np.all(np.isfinite(var))
    np.testing.assert_allclose(var, -1.0 / (2 * eta2), rtol=1e-5)
    np.testing.assert_allclose(mean, np.asarray(raw[:, 0]) * (-1.0 / (2 * eta2)), rtol=1e-5)


def test_running_moments_equal_the_moments_of_the_stored_iterates():
    # full batch and plain SGD: training is a deterministic map, so k-epoch calls chained from
    # each other's parameters visit exactly the iterates of one long call
    spec = BackboneSpec(in_dim=2, width=8, depth=1, out_dim=1)
    x, y, loss_fn = _mse_problem(spec)
    params, state = init_backbone(spec, 0)
    settings = dict(optimizer=optax.sgd(0.01), batch_size=None, key=jax.random.PRNGKey(0))
    _, _, history = train(loss_fn, params, state, x, y / 20.0, n_epochs=12, moments_every=3,
                          **settings)
    iterates, current = [], params
    for _ in range(4):
        current, _, _ = train(loss_fn, current, state, x, y / 20.0, n_epochs=3, **settings)
        iterates.append(current)
    moments = history["moments"]
    assert int(moments["count"]) == 4
    for got, expected in ((moments["mean"], jax.tree.map(lambda *t: np.mean(t, axis=0),
                                                         *iterates)),
                          (moments["sq_mean"], jax.tree.map(
                              lambda *t: np.mean(np.square(t), axis=0), *iterates))):
        jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7),
                     got, expected)
    # per member, vmapped
    _, _, both = train(loss_fn, _stack([params, params]), _stack([state, state]), x, y / 20.0,
                       n_epochs=12, moments_every=3, n_members=2, **settings)
    assert both["moments"]["count"].tolist() == [4, 4]
    np.testing.assert_allclose(both["moments"]["mean"]["out"]["w"][1],
                               moments["mean"]["out"]["w"], rtol=1e-5, atol=1e-7)
