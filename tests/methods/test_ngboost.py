"""NGBoost-NIG and NGBoost-Bag (the paper, App. C.3): determinism, equivariance under affine
maps of the target, the members' reduction and resampling, and the NIG's EU = AU/λ; NGBoost-NIG's
default metric (the empirical one) and its regularised-Fisher ablation."""

import numpy as np
import pytest
from ngboost.distns import Normal

from postrisk.methods import nig
from postrisk.methods.ngboost import (
    NGBoostNIG,
    RegularisedFisherNGBoostNIG,
    make_ngb_regressor,
    nig_distribution,
)
from postrisk.methods.ngboost_bag import NGBoostBag
from postrisk.methods.resampling import member_resamples, member_seeds

N = 150
#: Small settings for the fast tier; minibatch and column sampling make the seed matter.
NIG_SMALL = {"n_estimators": 40, "learning_rate": 0.1, "max_depth": 3, "minibatch_frac": 0.8,
             "col_sample": 0.67}
BAG_SMALL = {"n_estimators": 30, "learning_rate": 0.05, "max_depth": 2, "minibatch_frac": 0.8,
             "col_sample": 0.67, "n_regressors": 4}


def data(seed: int = 0, n: int = N):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, size=(n, 3))
    y = np.sin(3 * x[:, 0]) + 0.5 * x[:, 1] + (0.1 + 0.2 * (x[:, 2] + 1)) * rng.normal(size=n)
    return x, y, rng.uniform(-1.5, 1.5, size=(60, 3))


@pytest.fixture(scope="module")
def toy():
    return data()


def check_valid(pred, m):
    for arr in (pred.mean, pred.aleatoric_var, pred.epistemic_var):
        assert arr.shape == (m,) and np.all(np.isfinite(arr))
    assert np.all(pred.aleatoric_var >= 0) and np.all(pred.epistemic_var >= 0)


def assert_same(a, b):
    for key in ("mean", "aleatoric_var", "epistemic_var"):
        np.testing.assert_array_equal(getattr(a, key), getattr(b, key))


def assert_affine(pred, pred_scaled):
    """y → 10y + 3: mean → 10·mean + 3, AU and EU → 100·(AU, EU).

    The standardised targets of y and 10y + 3 differ by rounding (~1e-16), and a tree node
    whose rows two different splits separate identically (a few extreme rows of a small node)
    has tied improvements, which that rounding breaks either way. Both choices predict the same
    at every row the tree was fitted on, so with every tree fitted on all training rows
    (minibatch_frac = 1, and for the bag sample_fraction = 1) the boosting path and the
    predictions at the training inputs are the same up to rounding; elsewhere they may differ.
    """
    np.testing.assert_allclose(pred_scaled.mean, 10 * pred.mean + 3, rtol=1e-6)
    np.testing.assert_allclose(pred_scaled.aleatoric_var, 100 * pred.aleatoric_var, rtol=1e-6)
    np.testing.assert_allclose(pred_scaled.epistemic_var, 100 * pred.epistemic_var, rtol=1e-6)


def test_declared_interface():
    assert (NGBoostNIG.name, NGBoostNIG.display_name) == ("ngboost_nig", "NGBoost-NIG")
    assert (NGBoostBag.name, NGBoostBag.display_name) == ("ngboost_bag", "NGBoost-Bag")
    assert NGBoostNIG().hyperparameters() == {
        "n_estimators": 400, "learning_rate": 0.05, "max_depth": 4, "minibatch_frac": 1.0,
        "col_sample": 1.0, "evidential_strength": 0.1, "kl_strength": 0.1,
        "natural_gradient_metric": "empirical", "tree_learner": "presorted"}
    # the metric is the ablation variable, fixed per run, and how the trees are grown an
    # implementation choice: declared, never searched
    assert set(NGBoostNIG.search_space) == set(NGBoostNIG.defaults) - {
        "natural_gradient_metric", "tree_learner"}
    assert NGBoostNIG.implementation_version == 4  # 4: trees from presorted columns
    assert NGBoostBag().hyperparameters() == {
        "n_estimators": 500, "learning_rate": 0.01, "max_depth": 3, "minibatch_frac": 1.0,
        "col_sample": 1.0, "natural_gradient": True, "n_regressors": 10,
        "sample_fraction": 0.8, "replace": False, "standardize_y": True,
        "tree_learner": "presorted"}
    assert set(NGBoostBag.search_space) == set(NGBoostBag.defaults) - {"tree_learner"}
    assert NGBoostBag.implementation_version == 2  # 2: trees from presorted columns


# -- NGBoost-NIG ---------------------------------------------------------------------------------

def test_nig_is_deterministic_and_equivariant(toy):
    x, y, x_eval = toy
    fitted = NGBoostNIG(random_state=3, **NIG_SMALL).fit(x, y)
    pred = fitted.predict(x_eval)
    check_valid(pred, len(x_eval))
    assert_same(pred, NGBoostNIG(random_state=3, **NIG_SMALL).fit(x, y).predict(x_eval))
    other = NGBoostNIG(random_state=4, **NIG_SMALL).fit(x, y).predict(x_eval)
    assert not np.array_equal(pred.mean, other.mean)  # the seed drives the row/column sampling
    full = dict(NIG_SMALL, minibatch_frac=1.0)
    assert_affine(NGBoostNIG(random_state=3, **full).fit(x, y).predict(x),
                  NGBoostNIG(random_state=3, **full).fit(x, 10 * y + 3).predict(x))

    # EU = AU/λ from its own fitted parameters, AU = β/(α−1) (target units)
    p = fitted.predict_params(x_eval)
    np.testing.assert_array_equal(pred.epistemic_var, pred.aleatoric_var / p["lam"])
    np.testing.assert_allclose(pred.aleatoric_var, p["beta"] / (p["alpha"] - 1), rtol=1e-10)
    np.testing.assert_array_equal(pred.mean, p["mu"])
    assert np.all(p["lam"] > 0) and np.all(p["alpha"] > 1) and np.all(p["beta"] > 0)
    # heteroscedastic data: AU is not constant
    assert np.ptp(pred.aleatoric_var) > 0


def test_nig_refuses_a_non_positive_kl_strength_where_the_metric_needs_one(toy):
    x, y, _ = toy
    for bad in (0.0, -0.1):  # the regularised Fisher metric is invertible only with c_kl > 0
        with pytest.raises(ValueError, match="kl_strength"):
            NGBoostNIG(kl_strength=bad, natural_gradient_metric="regularised_fisher",
                       **NIG_SMALL).fit(x, y)
    with pytest.raises(ValueError, match="kl_strength"):
        NGBoostNIG(kl_strength=-0.1, natural_gradient_metric="empirical", **NIG_SMALL).fit(x, y)
    # the empirical metric needs no KL term
    NGBoostNIG(kl_strength=0.0, natural_gradient_metric="empirical", **NIG_SMALL).fit(x, y)


def test_nig_distribution_uses_the_analytic_score_and_metric():
    """NGBoost finds the NIG score for LogScore, and its manifold's score, gradient and metric
    are the ones of postrisk.methods.nig (no Monte-Carlo Fisher estimate)."""
    dist = nig_distribution(0.2, 0.3, "regularised_fisher")
    model = make_ngb_regressor(dist, n_estimators=1, learning_rate=0.1, max_depth=2,
                               minibatch_frac=1.0, col_sample=1.0, natural_gradient=True,
                               random_state=0)
    rng = np.random.default_rng(0)
    theta = rng.normal(0, 0.5, size=(4, 7))
    y = rng.normal(size=7)
    manifold = model.Manifold(theta)
    np.testing.assert_array_equal(manifold.score(y), nig.evidential_score(theta, y, 0.2, 0.3))
    np.testing.assert_array_equal(manifold.d_score(y),
                                  nig.evidential_score_grad(theta, y, 0.2, 0.3))
    np.testing.assert_array_equal(manifold.metric(), nig.evidential_metric(theta, 0.3))
    natural_grad = manifold.grad(y, natural=True)
    np.testing.assert_allclose(np.einsum("nij,nj->ni", nig.evidential_metric(theta, 0.3),
                                         natural_grad), manifold.d_score(y), rtol=1e-9)
    # initial parameters: μ = mean, λ = 1, α = 2, β = Var(y) (so AU = Var(y))
    init = dist.fit(y)
    np.testing.assert_allclose(init, [y.mean(), 0.0, 0.0, np.log(y.var())], rtol=1e-12)


def first_step_gradients(dist, x, y, natural_gradient=True):
    """The gradients NGBoost hands its first trees (one iteration, every row), with the
    parameters they were taken at (NGBoost's initial ones: the distribution's fit to y)."""
    model = make_ngb_regressor(dist, n_estimators=1, learning_rate=0.1, max_depth=2,
                               minibatch_frac=1.0, col_sample=1.0,
                               natural_gradient=natural_gradient, random_state=0)
    seen = []
    fit_base = model.fit_base

    def spy(x_batch, grads, sample_weight=None):
        seen.append(np.array(grads))
        return fit_base(x_batch, grads, sample_weight)

    model.fit_base = spy
    model.fit(x, y)
    theta = np.repeat(np.asarray(dist.fit(y))[:, None], len(y), axis=1)
    return seen[0], theta


def hand_empirical_step(theta, y, ev, kl):
    """M⁻¹g with M = g gᵀ + 1e-5·I written out per row and solved as a matrix."""
    g = nig.evidential_score_grad(theta, y, ev, kl)
    return np.stack([np.linalg.solve(np.outer(row, row) + 1e-5 * np.eye(4), row) for row in g])


def test_nig_empirical_metric_is_the_one_ngboost_steps_with():
    rng = np.random.default_rng(1)
    theta = np.array([[0.2, -0.5, 1.0], [0.0, np.log(3.0), -1.0], [np.log(0.5), 0.0, -2.0],
                      [np.log(2.0), -1.0, 0.5]])
    y = np.array([0.1, 1.7, -2.5])
    for ev, kl in ((0.2, 0.3), (0.0, 0.0)):  # kl_strength 0 is allowed with this metric
        dist = nig_distribution(ev, kl, "empirical")
        model = make_ngb_regressor(dist, n_estimators=1, learning_rate=0.1, max_depth=2,
                                   minibatch_frac=1.0, col_sample=1.0, natural_gradient=True,
                                   random_state=0)
        manifold = model.Manifold(theta)
        g = nig.evidential_score_grad(theta, y, ev, kl)
        np.testing.assert_array_equal(manifold.d_score(y), g)
        np.testing.assert_allclose(manifold.grad(y, natural=True),
                                   hand_empirical_step(theta, y, ev, kl), rtol=1e-8)
        np.testing.assert_array_equal(manifold.grad(y, natural=False), g)
        with pytest.raises(NotImplementedError, match="targets"):
            manifold.metric()

    # and what the boosting loop hands the trees: M⁻¹g at NGBoost's initial parameters
    x = rng.uniform(-1, 1, size=(30, 2))
    y30 = rng.normal(size=30)
    grads, theta0 = first_step_gradients(nig_distribution(0.1, 0.05, "empirical"), x, y30)
    np.testing.assert_allclose(grads, hand_empirical_step(theta0, y30, 0.1, 0.05), rtol=1e-8)
    # the default metric; unlike the regularised Fisher metric's step
    default, _ = first_step_gradients(nig_distribution(0.1, 0.05), x, y30)
    np.testing.assert_array_equal(default, grads)
    fisher, _ = first_step_gradients(nig_distribution(0.1, 0.05, "regularised_fisher"), x, y30)
    assert not np.allclose(grads, fisher)


def test_nig_euclidean_metric_is_the_plain_gradient(toy):
    x, y, x_eval = toy
    dist = nig_distribution(0.1, 0.0, "euclidean")
    grads, theta0 = first_step_gradients(dist, x, y, natural_gradient=False)
    np.testing.assert_array_equal(grads, nig.evidential_score_grad(theta0, y, 0.1, 0.0))
    manifold = make_ngb_regressor(dist, n_estimators=1, learning_rate=0.1, max_depth=2,
                                  minibatch_frac=1.0, col_sample=1.0, natural_gradient=True,
                                  random_state=0).Manifold(theta0)
    np.testing.assert_array_equal(manifold.metric(), np.broadcast_to(np.eye(4), (N, 4, 4)))
    np.testing.assert_array_equal(manifold.grad(y, natural=True), grads)

    fits = {name: NGBoostNIG(random_state=3, natural_gradient_metric=name, kl_strength=0.0,
                             **NIG_SMALL).fit(x, y) for name in ("euclidean", "empirical")}
    assert fits["euclidean"].model_.natural_gradient is False
    assert fits["empirical"].model_.natural_gradient is True
    assert NGBoostNIG(**NIG_SMALL).fit(x, y).model_.natural_gradient is True
    preds = {name: fit.predict(x_eval) for name, fit in fits.items()}
    for pred in preds.values():
        check_valid(pred, len(x_eval))
    assert not np.allclose(preds["euclidean"].mean, preds["empirical"].mean)


def test_nig_default_metric_is_the_empirical_one(toy):
    """The paper's NGBoost-NIG: the NGBoost authors' empirical metric by default, read from the
    estimator's parameters, and the fit is the one with the metric named."""
    from postrisk.methods.registry import make_method

    assert make_method("ngboost_nig").get_params()["natural_gradient_metric"] == "empirical"
    assert NGBoostNIG().get_params()["natural_gradient_metric"] == "empirical"
    x, y, x_eval = toy
    default = NGBoostNIG(random_state=3, **NIG_SMALL).fit(x, y)
    explicit = NGBoostNIG(random_state=3, natural_gradient_metric="empirical",
                          **NIG_SMALL).fit(x, y)
    assert_same(default.predict(x_eval), explicit.predict(x_eval))
    assert default.model_.Dist.natural_gradient_metric == "empirical"


def test_the_regularised_fisher_ablation_is_ngboost_nig_with_that_metric(toy):
    """An ablation of ngboost_nig (its row of the ablation table), with only the metric's
    default changed: it fits as NGBoost-NIG with natural_gradient_metric="regularised_fisher"."""
    from postrisk.methods.registry import display_name
    from postrisk.methods.table import ABLATION_TABLE, entry_at

    entry = entry_at("postrisk.methods.ngboost:RegularisedFisherNGBoostNIG")
    assert entry in ABLATION_TABLE and entry.ablates == "ngboost_nig" == NGBoostNIG.name
    assert entry.change == "natural_gradient_metric"
    assert (RegularisedFisherNGBoostNIG.name, RegularisedFisherNGBoostNIG.display_name) == (
        "ngboost_nig_regularised_fisher", "NGBoost-NIG (regularised Fisher)") == (
        entry.name, entry.display_name)
    assert display_name(entry.name) == entry.display_name
    params = RegularisedFisherNGBoostNIG().get_params()
    assert params == {**NGBoostNIG().get_params(), "natural_gradient_metric": "regularised_fisher"}
    assert RegularisedFisherNGBoostNIG.search_space == NGBoostNIG.search_space
    x, y, x_eval = toy
    ablation = RegularisedFisherNGBoostNIG(random_state=3, **NIG_SMALL).fit(x, y)
    explicit = NGBoostNIG(random_state=3, natural_gradient_metric="regularised_fisher",
                          **NIG_SMALL).fit(x, y)
    assert ablation.model_.Dist.natural_gradient_metric == "regularised_fisher"
    assert_same(ablation.predict(x_eval), explicit.predict(x_eval))
    default = NGBoostNIG(random_state=3, **NIG_SMALL).fit(x, y).predict(x_eval)
    assert not np.allclose(ablation.predict(x_eval).aleatoric_var, default.aleatoric_var)


def test_the_metric_ablation_is_kept_out_of_the_method_tables():
    import pandas as pd

    from postrisk.report.table_builders import without_ablations

    scores = pd.DataFrame({"method": ["ngboost_nig", "ngboost_nig_regularised_fisher", "gp"],
                           "spearman_au": [0.1, 0.2, 0.3]})
    assert list(without_ablations(scores)["method"]) == ["ngboost_nig", "gp"]


def test_nig_refuses_unknown_metrics_and_a_negative_kl_strength(toy):
    x, y, _ = toy
    allowed = "'regularised_fisher', 'empirical', 'euclidean'"
    for bad in ("fisher", "Empirical", "", None, 1):
        with pytest.raises(ValueError, match=allowed):
            NGBoostNIG(natural_gradient_metric=bad, **NIG_SMALL).fit(x, y)
        with pytest.raises(ValueError, match="natural_gradient_metric"):
            nig_distribution(0.1, 0.1, bad)
    for name in ("empirical", "euclidean"):
        with pytest.raises(ValueError, match="kl_strength must be >= 0"):
            nig_distribution(0.1, -0.1, name)
    with pytest.raises(ValueError, match="regularised_fisher"):
        nig_distribution(0.1, 0.0, "regularised_fisher")


# -- NGBoost-Bag ---------------------------------------------------------------------------------

def test_bag_is_deterministic_and_equivariant(toy):
    x, y, x_eval = toy
    pred = NGBoostBag(random_state=5, **BAG_SMALL).fit(x, y).predict(x_eval)
    check_valid(pred, len(x_eval))
    assert_same(pred, NGBoostBag(random_state=5, **BAG_SMALL).fit(x, y).predict(x_eval))
    full = dict(BAG_SMALL, minibatch_frac=1.0, sample_fraction=1.0)
    pred_full = NGBoostBag(random_state=5, **full).fit(x, y).predict(x)
    assert np.all(pred_full.epistemic_var > 0)  # members still differ (column sampling)
    assert_affine(pred_full, NGBoostBag(random_state=5, **full).fit(x, 10 * y + 3).predict(x))


def test_bag_prediction_is_the_members_reduction(toy):
    x, y, x_eval = toy
    model = NGBoostBag(random_state=2, **BAG_SMALL).fit(x, y)
    pred = model.predict(x_eval)
    k = BAG_SMALL["n_regressors"]
    assert len(model.members_) == k

    # member outputs, recomputed from the fitted NGBoost models (standardised target units)
    means = np.stack([m.pred_dist(x_eval).params["loc"] for m in model.members_])
    variances = np.stack([m.pred_dist(x_eval).params["scale"] ** 2 for m in model.members_])
    # the members differ from one another
    for i in range(k):
        for j in range(i + 1, k):
            assert not np.allclose(means[i], means[j])
    s_y, m_y = y.std(), y.mean()
    assert (model.y_mean_, model.y_scale_) == pytest.approx((m_y, s_y), rel=1e-12)
    np.testing.assert_allclose(pred.mean, s_y * means.mean(axis=0) + m_y, rtol=1e-12)
    np.testing.assert_allclose(pred.aleatoric_var, s_y ** 2 * variances.mean(axis=0),
                               rtol=1e-12)
    eu = s_y ** 2 * np.mean((means - means.mean(axis=0)) ** 2, axis=0)
    np.testing.assert_allclose(pred.epistemic_var, eu, rtol=1e-10)
    assert np.all(pred.epistemic_var > 0)

    # each member was fitted on its own resample, with its own seed
    assert model.member_seeds_ == member_seeds(2, k)
    assert [m.random_state for m in model.members_] == model.member_seeds_
    for rows, expected in zip(model.member_rows_, member_resamples(N, k, 0.8, False, 2),
                              strict=True):
        np.testing.assert_array_equal(rows, expected)
        assert len(rows) == int(0.8 * N) and len(np.unique(rows)) == len(rows)
    # a member refitted by hand on its rows and seed predicts what the bag's member predicts
    member = make_ngb_regressor(
        Normal,
        n_estimators=BAG_SMALL["n_estimators"], learning_rate=BAG_SMALL["learning_rate"],
        max_depth=BAG_SMALL["max_depth"], minibatch_frac=BAG_SMALL["minibatch_frac"],
        col_sample=BAG_SMALL["col_sample"], natural_gradient=True,
        random_state=model.member_seeds_[1])
    rows = model.member_rows_[1]
    member.fit(x[rows], (y[rows] - m_y) / s_y)
    np.testing.assert_array_equal(member.pred_dist(x_eval).params["loc"], means[1])


def test_bag_resamples_with_replacement_and_raw_targets(toy):
    x, y, x_eval = toy
    settings = dict(BAG_SMALL, n_regressors=3, sample_fraction=0.7, replace=True,
                    standardize_y=False, natural_gradient=False)
    model = NGBoostBag(random_state=1, **settings).fit(x, y)
    check_valid(model.predict(x_eval), len(x_eval))
    assert (model.y_mean_, model.y_scale_) == (0.0, 1.0)
    for rows in model.member_rows_:
        assert len(rows) == int(0.7 * N)
        assert len(np.unique(rows)) < len(rows)  # 105 draws of 150 with replacement repeat
        assert rows.min() >= 0 and rows.max() < N
    means, variances = model.member_predictions(x_eval)
    pred = model.predict(x_eval)
    np.testing.assert_allclose(pred.mean, means.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(pred.aleatoric_var, variances.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(pred.epistemic_var, means.var(axis=0), rtol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("metric", ["empirical", "regularised_fisher"])
@pytest.mark.parametrize("kl_strength, evidential_strength",
                         [(1e-4, 1e-4), (1e-4, 1.0), (1.0, 1e-4), (1e-3, 1e-3), (0.01, 0.01)])
def test_nig_fits_across_its_regulariser_search_space(kl_strength, evidential_strength, metric):
    """The corners of the strengths' search space (and the settings where the undamped
    regularised Fisher natural gradient drove α → 1: AU non-finite) give finite predictions on
    the 1-D toy problem, with the default metric and with the ablation's."""
    from postrisk.evaluation.toy import toy_problem
    from postrisk.methods.runner import run_fit

    toy = toy_problem(0)
    record = run_fit("ngboost_nig", {"kl_strength": kl_strength,
                                     "evidential_strength": evidential_strength,
                                     "natural_gradient_metric": metric},
                     toy.x_train, toy.y_train, toy.x_eval, random_state=0, n_threads=1)
    assert record.ok, record.error


def test_the_closed_form_gaussian_fits_exactly_as_ngboosts_normal(toy):
    """The bag's members use NGBoost's Normal with the log score in closed form (no frozen SciPy
    distribution per update): the same loss bit for bit, so the same trees and predictions."""
    from ngboost.distns import Normal

    from postrisk.methods.ngboost import gaussian_distribution, make_ngb_regressor

    x, y, x_eval = toy
    settings = {"n_estimators": 40, "learning_rate": 0.05, "max_depth": 3,
                "minibatch_frac": 0.8, "col_sample": 0.67, "natural_gradient": True,
                "random_state": 3}
    ours = make_ngb_regressor(gaussian_distribution(), **settings).fit(x, y).pred_dist(x_eval)
    theirs = make_ngb_regressor(Normal, **settings).fit(x, y).pred_dist(x_eval)
    assert np.array_equal(ours.loc, theirs.loc) and np.array_equal(ours.scale, theirs.scale)
    params = np.array([np.zeros(5), np.log(np.linspace(0.5, 2.0, 5))])
    y5 = np.linspace(-1.0, 1.0, 5)
    from ngboost.manifold import manifold
    from ngboost.scores import LogScore

    ours = manifold(LogScore, gaussian_distribution())(params)
    theirs = manifold(LogScore, Normal)(params)
    assert np.array_equal(ours.score(y5), theirs.score(y5))
    assert np.array_equal(ours.d_score(y5), theirs.d_score(y5))
    assert np.array_equal(ours.mean(), params[0])


def test_bag_fits_its_members_in_parallel_exactly_as_one_after_another(toy):
    """n_threads = 2 fits the members on worker processes: the same members, rows and seeds, in
    the same order, as the sequential loop of n_threads = 1, bit for bit; the members come back
    with this process's Gaussian class (pickled by reference) and pickle as they are."""
    import pickle

    from postrisk.methods.ngboost import gaussian_distribution

    x, y, x_eval = toy
    one = NGBoostBag(random_state=7, n_threads=1, **BAG_SMALL).fit(x, y)
    two = NGBoostBag(random_state=7, n_threads=2, **BAG_SMALL).fit(x, y)
    assert two.member_seeds_ == one.member_seeds_
    for rows_two, rows_one in zip(two.member_rows_, one.member_rows_, strict=True):
        np.testing.assert_array_equal(rows_two, rows_one)
    for a, b in zip(two.member_predictions(x_eval), one.member_predictions(x_eval), strict=True):
        np.testing.assert_array_equal(a, b)
    assert_same(two.predict(x_eval), one.predict(x_eval))
    assert [m.random_state for m in two.members_] == one.member_seeds_
    assert all(m.Dist is gaussian_distribution() for m in two.members_)
    restored = pickle.loads(pickle.dumps(two))
    assert all(m.Dist is gaussian_distribution() for m in restored.members_)
    assert_same(restored.predict(x_eval), one.predict(x_eval))
