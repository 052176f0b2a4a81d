"""The network methods on the one model module: NN-Ens, NN-Bag, MC dropout, NN-EDL, NN-DEUP,
the shared base class, and sweeps that compile the training loop once."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from postrisk.methods.ensemble import reduce_members
from postrisk.methods.interface import Prediction
from postrisk.methods.nig import evidential_regulariser, nig_nll
from postrisk.methods.nn.deup import NeuralDEUP, deup_epistemic
from postrisk.methods.nn.edl import NeuralEvidentialRegression, evidential_loss
from postrisk.methods.nn.ensembles import MCDropout, NeuralBag, NeuralEnsemble
from postrisk.methods.nn.heads import EVIDENCE_EPS
from postrisk.methods.nn.method import NETWORK_DEFAULTS, SN_COEFF_SPACE, NeuralNetworkMethod
from postrisk.methods.nn.network import (
    NetworkSpec,
    gaussian_members,
    gaussian_nll_loss,
    init_network,
    predict_raw,
)
from postrisk.methods.nn.train import loop_compilations, nadamw, train
from postrisk.methods.resampling import member_resamples, member_seeds
from postrisk.methods.runner import run_fit
from postrisk.tuning.sweep import tune

SMALL = {"width": 8, "n_blocks": 1, "n_epochs": 3, "batch_size": 16}


def data(n: int = 48, d: int = 2, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 2, (n, d))
    y = 3.0 + 2.0 * np.sin(x.sum(axis=1)) + rng.normal(0, 0.3, n)
    return x, y


def softplus(z):
    return np.logaddexp(0.0, z)


# -- the base class ---------------------------------------------------------------------------
def test_search_spaces_merge_the_shared_space_with_each_methods_own():
    for cls in (NeuralEnsemble, NeuralBag, MCDropout, NeuralEvidentialRegression, NeuralDEUP):
        assert set(NETWORK_DEFAULTS) <= set(cls.defaults)
        assert {"width", "n_blocks", "n_epochs", "batch_size", "learning_rate", "weight_decay",
                "momentum"} <= set(cls.search_space)
        assert "sn_coeff" not in cls.search_space  # spectral normalisation off by default
    assert (NeuralEnsemble.defaults["variance_floor"],
            NeuralEnsemble.defaults["variance_ceiling"]) == (1e-6, 50.0)
    assert NeuralEnsemble.defaults["n_members"] == 10 and NeuralBag.defaults["n_members"] == 10
    assert MCDropout.defaults["n_members"] == 128
    assert MCDropout.search_space["dropout"] == ("float", 0.05, 0.35)
    assert "dropout" not in NeuralEnsemble.search_space and NeuralEnsemble.defaults["dropout"] == 0
    assert NeuralBag.search_space["sample_fraction"] == ("float", 0.6, 0.95)
    assert NeuralEvidentialRegression.search_space["evidential_strength"] == (
        "float", 1e-3, 0.3, "log")

    class SpectralEnsemble(NeuralEnsemble):  # a spectrally normalised variant is a setting
        defaults = {"spectral_norm": True}

    assert SpectralEnsemble.defaults["spectral_norm"] is True
    assert SpectralEnsemble.defaults["n_members"] == 10  # the parent's own entries are kept
    assert SpectralEnsemble.search_space["sn_coeff"] == SN_COEFF_SPACE
    assert issubclass(SpectralEnsemble, NeuralNetworkMethod)


# -- ensembles and bags equal M single-network fits -------------------------------------------
def _single_fits(method, x_std, y_std, rows=None) -> tuple[np.ndarray, np.ndarray]:
    """Each member fitted alone with the seed and key the method gives it."""
    spec = method.spec_
    n_members = int(method.n_members)
    seeds = member_seeds(method.random_state, n_members)
    keys = jax.random.split(jax.random.PRNGKey(method.random_state), n_members)
    optimizer = nadamw(method.learning_rate, method.momentum, method.weight_decay)
    means, variances = [], []
    for i in range(n_members):
        params, state = init_network(spec, seeds[i], sn_coeff=method.sn_coeff)
        xi, yi = (x_std, y_std) if rows is None else (x_std[rows[i]], y_std[rows[i]])
        params, state, _ = train(gaussian_nll_loss(spec), params, state, xi, yi,
                                 optimizer=optimizer, n_epochs=method.n_epochs,
                                 batch_size=method.batch_size, key=keys[i])
        mean, var = gaussian_members(spec, predict_raw(spec, params, state, x_std))
        means.append(mean[0])
        variances.append(var[0])
    return np.array(means), np.array(variances)


@pytest.mark.slow
@pytest.mark.parametrize("spectral_norm", [False, True])
@pytest.mark.parametrize("cls", [NeuralEnsemble, NeuralBag])
def test_members_are_exactly_single_network_fits(cls, spectral_norm):
    x, y = data()
    # float64, 3 epochs × 3 steps (48 rows, or 38 resampled, in batches of 16) = 9 steps
    with jax.enable_x64(True):
        method = cls(random_state=4, n_members=3, spectral_norm=spectral_norm, sn_coeff=0.9,
                     **SMALL).fit(x, y)
        scaler = method.standardizer_
        x_std, y_std = scaler.inputs(x), scaler.target(y)
        rows = getattr(method, "member_rows_", None)
        if cls is NeuralBag:
            np.testing.assert_array_equal(rows, member_resamples(48, 3, 0.8, False, 4))
        means, variances = _single_fits(method, x_std, y_std, rows)
        got = method.predict(x)
    assert method.spec_.spectral_norm is spectral_norm
    expected = scaler.prediction_to_target(
        reduce_members(means, variances, variance_bounds=method.variance_bounds()))
    for field in ("mean", "aleatoric_var", "epistemic_var"):
        np.testing.assert_allclose(getattr(got, field), getattr(expected, field), rtol=1e-6)
    assert np.all(got.epistemic_var > 0)


def test_same_random_state_same_prediction_and_members_differ():
    x, y = data()
    a = run_fit("nn_ens", {**SMALL, "n_members": 3}, x, y, x, random_state=1)
    b = run_fit("nn_ens", {**SMALL, "n_members": 3}, x, y, x, random_state=1)
    c = run_fit("nn_ens", {**SMALL, "n_members": 3}, x, y, x, random_state=2)
    assert a.ok and b.ok and c.ok
    np.testing.assert_array_equal(a.mean, b.mean)
    np.testing.assert_array_equal(a.epistemic_var, b.epistemic_var)
    assert not np.allclose(a.mean, c.mean)


# -- MC dropout -------------------------------------------------------------------------------
def test_mc_dropout_passes_are_its_members():
    x, y = data()
    method = MCDropout(random_state=0, n_members=16, dropout=0.2, **SMALL).fit(x, y)
    assert method.spec_.dropout and float(method.state_["settings"]["dropout"]) == \
        pytest.approx(0.2)
    got = method.predict(x)
    again = method.predict(x)
    np.testing.assert_array_equal(got.epistemic_var, again.epistemic_var)  # fixed pass keys
    assert np.all(got.epistemic_var > 0)
    raw = predict_raw(method.spec_, method.params_, method.state_, method._inputs(x),
                      pass_keys=method._pass_keys(16))
    assert raw.shape == (16, 48, 2) and not np.allclose(raw[0], raw[1])
    means, variances = gaussian_members(method.spec_, raw)
    expected = method.standardizer_.prediction_to_target(
        reduce_members(means, variances, variance_bounds=(1e-6, 50.0)))
    np.testing.assert_allclose(got.epistemic_var, expected.epistemic_var, rtol=1e-12)
    # a network without dropout has no epistemic uncertainty to report: refused
    with pytest.raises(ValueError, match="dropout rate in"):
        MCDropout(dropout=0.0, **SMALL).fit(x, y)


# -- evidential regression --------------------------------------------------------------------
def test_evidential_variances_on_known_outputs():
    x, y = data()
    method = NeuralEvidentialRegression(random_state=0, **SMALL).fit(x, y)
    # set the head to known raw outputs (μ̃, a, b, c) at every input
    raw = np.array([0.3, -1.2, 0.4, 0.8])
    out = method.params_["out"]
    method.params_ = {**method.params_,
                      "out": {"w": np.zeros_like(out["w"]), "b": raw.astype(out["b"].dtype)}}
    got = method.predict(x[:5])
    nu, alpha, beta = (softplus(raw[1]) + EVIDENCE_EPS, softplus(raw[2]) + 1 + EVIDENCE_EPS,
                       softplus(raw[3]) + EVIDENCE_EPS)
    s_y, m_y = method.standardizer_.y_scale, method.standardizer_.y_mean
    np.testing.assert_allclose(got.mean, s_y * raw[0] + m_y, rtol=1e-6)
    np.testing.assert_allclose(got.aleatoric_var, s_y ** 2 * beta / (alpha - 1), rtol=1e-5)
    np.testing.assert_allclose(got.epistemic_var, got.aleatoric_var / nu, rtol=1e-5)


def test_evidential_loss_is_the_nig_nll_plus_the_weighted_regulariser():
    spec = NetworkSpec(in_dim=2, width=8, n_blocks=1, head="evidential")
    params, state = init_network(spec, 0, evidential_strength=0.05)
    x, y = data(n=20)
    loss, _ = evidential_loss(spec)(params, state, x, y, jax.random.PRNGKey(0))
    raw = np.asarray(predict_raw(spec, params, state, x)[0], dtype=np.float64)
    mu, nu = raw[:, 0], softplus(raw[:, 1]) + EVIDENCE_EPS
    alpha, beta = softplus(raw[:, 2]) + 1 + EVIDENCE_EPS, softplus(raw[:, 3]) + EVIDENCE_EPS
    expected = np.mean(nig_nll(y, mu, nu, alpha, beta)
                       + 0.05 * evidential_regulariser(y, mu, nu, alpha))
    assert float(loss) == pytest.approx(expected, rel=1e-5)


# -- DEUP -------------------------------------------------------------------------------------
def test_deup_epistemic_by_hand():
    np.testing.assert_array_equal(deup_epistemic([0.5, 0.1, 0.3, 2.0], [0.3, 0.3, 0.3, 0.3]),
                                  [0.2, 0.0, 0.0, 1.7])


def test_deup_holds_out_rows_the_main_network_never_sees():
    x, y = data(n=60)
    settings = {**SMALL, "error_epochs": 5}
    a = NeuralDEUP(random_state=3, **settings).fit(x, y)
    fit_rows, held = a.held_out_.fit_rows, a.held_out_.held_rows
    assert len(held) == 12 and not set(fit_rows) & set(held)
    assert sorted([*fit_rows, *held]) == list(range(60))
    pred = a.predict(x)
    assert np.all(pred.aleatoric_var == a.aleatoric_var_)
    assert a.aleatoric_var_ == pytest.approx(np.mean(a.held_out_.squared_errors))
    np.testing.assert_allclose(pred.epistemic_var,
                               np.maximum(a.predicted_error(x) - a.aleatoric_var_, 0))
    # the held-out targets reach only AU and the error network, never the main network
    y_changed = y.copy()
    y_changed[held] += 5.0
    b = NeuralDEUP(random_state=3, **settings).fit(x, y_changed)
    np.testing.assert_array_equal(b.predict(x).mean, pred.mean)
    assert b.aleatoric_var_ > 10 * a.aleatoric_var_


# -- sweeps ---------------------------------------------------------------------------------
def test_a_sweep_with_one_architecture_compiles_the_training_loop_once(tmp_path):
    x, y = data(n=71, d=3, seed=5)  # a shape no other test trains on
    before = loop_compilations()
    result = tune("nn_ens", x, y, journal=tmp_path / "sweep.log", n_trials=5, startup_trials=5,
                  fixed={"width": 8, "n_blocks": 1, "batch_size": 16, "n_members": 2})
    assert sum(t["state"] == "COMPLETE" for t in result.trials) == 5
    assert len({t["params"]["learning_rate"] for t in result.trials}) == 5
    assert len({t["params"]["n_epochs"] for t in result.trials}) > 1
    assert loop_compilations() - before == 1


def test_bad_settings_are_refused():
    x, y = data()
    for cls, bad in ((NeuralEnsemble, {"n_members": 0}), (NeuralBag, {"sample_fraction": 1.5}),
                     (NeuralEvidentialRegression, {"evidential_strength": -1.0}),
                     (NeuralDEUP, {"held_out_fraction": 0.0})):
        with pytest.raises(ValueError):
            cls(**SMALL, **bad).fit(x, y)
    record = run_fit("nn_ens", {**SMALL, "n_members": 0}, x, y, x, random_state=0)
    assert not record.ok and "n_members" in record.error


def test_outputs_are_predictions_in_target_units():
    x, y = data()
    for method in (NeuralEnsemble(n_members=4, **SMALL), MCDropout(n_members=4, **SMALL),
                   NeuralEvidentialRegression(**SMALL), NeuralDEUP(error_epochs=3, **SMALL)):
        pred = method.fit(x, y).predict(x)
        assert isinstance(pred, Prediction) and pred.mean.shape == (48,)
        assert abs(np.mean(pred.mean) - np.mean(y)) < 2.0  # target units, not standardised
