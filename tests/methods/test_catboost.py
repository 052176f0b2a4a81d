"""CatBoost-PS and CatBoost-KGB: the members, the reduction and the held-out AU checked by hand,
seeds, threads, target units, and no files written (small data, few trees and members)."""

import catboost
import numpy as np
import pytest
from catboost import CatBoostRegressor

from postrisk.methods.catboost import CatBoostKGB, CatBoostPS
from postrisk.methods.resampling import held_out_errors

N, D = 150, 3
SMALL = {
    CatBoostPS: {"iterations": 40, "depth": 4, "n_regressors": 4},
    CatBoostKGB: {"posterior_iterations": 60, "prior_iterations": 20, "depth": 4,
                  "n_regressors": 4},
}
BOTH = pytest.mark.parametrize("cls", [CatBoostPS, CatBoostKGB], ids=lambda c: c.name)


@pytest.fixture(autouse=True)
def empty_cwd(tmp_path, monkeypatch):
    """Every test runs in an empty working directory that must stay empty: CatBoost writes
    ``catboost_info/`` there unless told not to (users run the workflow in their checkouts)."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    yield cwd
    assert sorted(p.name for p in cwd.iterdir()) == []


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    x = rng.uniform(-2, 2, size=(N, D))
    y = np.sin(2 * x[:, 0]) + 0.5 * x[:, 1] + (0.1 + 0.2 * np.abs(x[:, 0])) * rng.normal(size=N)
    x_eval = rng.uniform(-3, 3, size=(40, D))
    return x, y, x_eval


def fit(cls, data, y=None, random_state=0, n_threads=1, **hyper):
    x, y0, _ = data
    return cls(random_state=random_state, n_threads=n_threads, **{**SMALL[cls], **hyper}).fit(
        x, y0 if y is None else y)


def as_tuple(pred):
    return pred.mean, pred.aleatoric_var, pred.epistemic_var


@BOTH
def test_same_seed_same_prediction_and_valid_output(cls, data):
    x_eval = data[2]
    first = as_tuple(fit(cls, data, random_state=3).predict(x_eval))
    again = as_tuple(fit(cls, data, random_state=3).predict(x_eval))
    other = fit(cls, data, random_state=4).predict(x_eval)
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], other.mean)
    mean, au, eu = first
    assert mean.shape == au.shape == eu.shape == (x_eval.shape[0],)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(au)) and np.all(np.isfinite(eu))
    assert np.all(au >= 0) and np.all(eu >= 0)
    assert np.all(au > 0) and np.any(eu > 0)  # both uncertainties are really estimated


@BOTH
def test_thread_count_does_not_change_the_prediction(cls, data):
    x_eval = data[2]
    one = as_tuple(fit(cls, data, n_threads=1).predict(x_eval))
    two = as_tuple(fit(cls, data, n_threads=2).predict(x_eval))
    for a, b in zip(one, two, strict=True):
        np.testing.assert_array_equal(a, b)


@BOTH
def test_affine_target_maps_mean_and_variances(cls, data):
    """With standardize_y, y → 10y + 3 gives mean → 10·mean + 3 and AU, EU → 100·AU, 100·EU."""
    x_eval, y = data[2], data[1]
    base = fit(cls, data, standardize_y=True).predict(x_eval)
    moved = fit(cls, data, y=10 * y + 3, standardize_y=True).predict(x_eval)
    np.testing.assert_allclose(moved.mean, 10 * base.mean + 3, rtol=1e-6)
    np.testing.assert_allclose(moved.aleatoric_var, 100 * base.aleatoric_var, rtol=1e-6)
    np.testing.assert_allclose(moved.epistemic_var, 100 * base.epistemic_var, rtol=1e-6)


@BOTH
def test_no_files_are_written(cls, data, empty_cwd):
    fit(cls, data).predict(data[2])
    assert not (empty_cwd / "catboost_info").exists()


def test_every_catboost_model_gets_the_thread_count_and_writes_nothing(data, monkeypatch):
    """CatBoost's sample_gaussian_process has no thread_count: every model it builds (prior and
    posterior, both ensembles) must still get n_threads and allow_writing_files=False."""
    import postrisk.methods.catboost as module

    built = []

    class Recording(CatBoostRegressor):
        def __init__(self, **kwargs):
            built.append(kwargs)
            super().__init__(**kwargs)

    monkeypatch.setattr(module, "CatBoostRegressor", Recording)
    fit(CatBoostKGB, data, n_threads=2, n_regressors=2)
    assert len(built) == 2 * 2 * 2  # (prior + posterior) x 2 samples x (samples + held-out)
    assert all(kw["thread_count"] == 2 and kw["allow_writing_files"] is False for kw in built)
    built.clear()
    ps = fit(CatBoostPS, data, n_threads=2, n_regressors=2)
    assert len(built) == 2
    assert all(m.get_params()["thread_count"] == 2 for m in ps.members_)
    assert all(m.get_params()["allow_writing_files"] is False for m in ps.members_)


# -- CatBoost-PS --------------------------------------------------------------------------------

def test_ps_prediction_is_the_reduction_of_its_members_by_hand(data):
    x, y, x_eval = data
    model = fit(CatBoostPS, data, standardize_y=True)
    assert len(model.members_) == 4
    outs = [m.predict(x_eval) for m in model.members_]  # (m, 2): [mean, variance], ỹ units
    means = np.array([o[:, 0] for o in outs])
    variances = np.array([o[:, 1] for o in outs])
    # the members differ (own seeds, Langevin noise) and each predicts a positive variance
    assert all(not np.allclose(means[0], means[k]) for k in range(1, 4))
    assert np.all(variances > 0)
    s_y, m_y = y.std(), y.mean()
    pred = model.predict(x_eval)
    mix_mean = sum(means) / 4
    np.testing.assert_allclose(pred.mean, s_y * mix_mean + m_y, rtol=1e-12)
    np.testing.assert_allclose(pred.aleatoric_var, s_y ** 2 * sum(variances) / 4, rtol=1e-12)
    np.testing.assert_allclose(pred.epistemic_var,
                               s_y ** 2 * sum((mu - mix_mean) ** 2 for mu in means) / 4,
                               rtol=1e-12)


def test_ps_members_are_sglb_gaussian_regressors(data):
    """Each member: RMSEWithUncertainty under posterior sampling (Langevin, shrink rate 1/(2N),
    diffusion temperature N), Bayesian bootstrap; its predict's 2nd column is the variance."""
    x_eval = data[2]
    model = fit(CatBoostPS, data, bagging_temperature=0.7)
    for member in model.members_:
        params = member.get_all_params()
        assert params["loss_function"] == "RMSEWithUncertainty"
        assert params["posterior_sampling"] and params["langevin"]
        assert params["diffusion_temperature"] == N
        assert params["model_shrink_rate"] == pytest.approx(1 / (2 * N), rel=1e-6)
        assert params["bootstrap_type"] == "Bayesian"
        assert params["bagging_temperature"] == pytest.approx(0.7)
        out = member.predict(x_eval)
        raw = member.predict(x_eval, prediction_type="RawFormulaVal")  # [mean, log σ]
        np.testing.assert_array_equal(out[:, 0], raw[:, 0])
        np.testing.assert_allclose(out[:, 1], np.exp(2 * raw[:, 1]), rtol=1e-12)


def test_ps_row_bagging_without_replacement(data):
    x, y, x_eval = data
    model = fit(CatBoostPS, data, bagging_frac=0.7, standardize_y=False)
    size = int(0.7 * N)  # ⌊0.7·150⌋ = 105
    assert len(model.member_rows_) == 4
    for rows, member in zip(model.member_rows_, model.members_, strict=True):
        assert rows.shape == (size,) and np.unique(rows).size == size
        assert rows.min() >= 0 and rows.max() < N
        # the member saw exactly these rows: its SGLB settings are those of N_k = 105 rows, and
        # refitting its own settings on them reproduces it
        assert member.get_all_params()["diffusion_temperature"] == size
        again = CatBoostRegressor(**member.get_params()).fit(x[rows], y[rows])
        np.testing.assert_array_equal(again.predict(x_eval), member.predict(x_eval))
    assert not np.array_equal(np.sort(model.member_rows_[0]), np.sort(model.member_rows_[1]))
    full = fit(CatBoostPS, data, bagging_frac=1.0)
    assert all(np.array_equal(rows, np.arange(N)) for rows in full.member_rows_)


# -- CatBoost-KGB -------------------------------------------------------------------------------

def test_kgb_eu_is_the_variance_of_the_sampled_functions_by_hand(data):
    x, y, x_eval = data
    model = fit(CatBoostKGB, data, standardize_y=True)
    f = np.array([m.predict(x_eval) for m in model.members_])  # (4, m), ỹ units
    assert f.shape == (4, x_eval.shape[0])
    assert all(not np.allclose(f[0], f[k]) for k in range(1, 4))  # the samples differ
    s_y, m_y = y.std(), y.mean()
    pred = model.predict(x_eval)
    f_mean = f.mean(axis=0)
    np.testing.assert_allclose(pred.mean, s_y * f_mean + m_y, rtol=1e-12)
    np.testing.assert_allclose(pred.epistemic_var, s_y ** 2 * ((f - f_mean) ** 2).mean(axis=0),
                               rtol=1e-12)


def test_kgb_au_is_the_held_out_mse_of_a_second_ensemble(data, tmp_path, monkeypatch):
    """Recomputed with CatBoost's own ``sample_gaussian_process`` (which writes files, so it runs
    in another directory): the samples are exactly CatBoost's, and the AU is the held-out MSE of
    a second call fitted on the other 90 %."""
    x, y, x_eval = data
    model = fit(CatBoostKGB, data, standardize_y=False)
    pred = model.predict(x_eval)
    assert np.all(pred.aleatoric_var == pred.aleatoric_var[0])  # a constant
    settings = {"samples": 4, "posterior_iterations": 60, "prior_iterations": 20, "depth": 4,
                "learning_rate": 0.1, "sigma": 0.1, "delta": 0.01, "random_strength": 0.1,
                "eps": 1e-4}
    own = tmp_path / "catboost_own"
    own.mkdir()
    monkeypatch.chdir(own)
    reference = catboost.sample_gaussian_process(x, y, random_seed=model.sampler_seed_,
                                                 **settings)
    for ours, theirs in zip(model.members_, reference, strict=True):
        np.testing.assert_array_equal(ours.predict(x_eval), theirs.predict(x_eval))

    split_seed, second_seed = model.held_out_seeds_
    assert second_seed != model.sampler_seed_

    def fit_predict(x_fit, y_fit, x_held):
        sampled = catboost.sample_gaussian_process(x_fit, y_fit, random_seed=second_seed,
                                                   **settings)
        return np.mean([m.predict(x_held) for m in sampled], axis=0)

    held = held_out_errors(fit_predict, x, y, held_out_fraction=0.1, random_state=split_seed)
    assert held.held_rows.size == 15 and held.fit_rows.size == 135
    np.testing.assert_array_equal(held.held_rows, model.held_out_.held_rows)
    np.testing.assert_allclose(pred.aleatoric_var, held.mse, rtol=1e-12)
    # the second ensemble never saw the held-out rows: its error there exceeds the in-sample
    # error of the main ensemble (which did), so the AU is not a training error
    in_sample = model.predict(x[held.held_rows]).mean
    assert held.mse > np.mean((y[held.held_rows] - in_sample) ** 2)
    # CatBoost's own function writes catboost_info/: what the autouse check guards against
    assert (own / "catboost_info").is_dir()


def test_kgb_rejects_invalid_settings(data):
    with pytest.raises(ValueError, match="sigma"):
        fit(CatBoostKGB, data, sigma=0.0)
    with pytest.raises(ValueError, match="bagging_frac"):
        fit(CatBoostPS, data, bagging_frac=1.5)
