"""Every score of one prediction on a task: the oracle row scores what the truth must score, the
distance rows have no predictive scores, per-shell and risk–regret values agree with their
definitions, and reference rows are the paper's two distance rows."""

import numpy as np
import pytest

from postrisk.evaluation import predictive, selective
from postrisk.evaluation.reference_rows import (
    DISTANCE_ROWS,
    REFERENCE_ROWS,
    knn_prediction,
    mahalanobis_prediction,
)
from postrisk.evaluation.scoring import (
    METRICS,
    PAPER_METRICS,
    reference_predictions,
    score_prediction,
)
from postrisk.methods.interface import Prediction
from postrisk.tasks.oracle import LOSS_EU_TARGETS, ReferencePredictive
from tests.task_helpers import gp_task


@pytest.fixture(scope="module")
def task():
    return gp_task(n=80, m=120, seed=3)


def test_reference_rows_are_the_papers_four():
    assert REFERENCE_ROWS == ("oracle", "mahalanobis", "knn10", "constant_au")
    assert DISTANCE_ROWS == ("mahalanobis", "knn10")


def test_oracle_scores_what_the_truth_must(task):
    scores = score_prediction(task, reference_predictions(task)["oracle"])
    assert set(scores) == set(METRICS)
    # â = m_S, so the posterior excess risk is σ²_f itself: perfect rank agreement, the AuReC of
    # the oracle ranking, Δ_ent = 0
    assert scores["spearman_eu_posterior_excess_risk"] == pytest.approx(1.0)
    assert scores["spearman_au"] == pytest.approx(1.0)
    assert scores["delta_ent_posterior_excess_risk"] == pytest.approx(0.0)
    assert scores["aurec_posterior_excess_risk_excess"] == pytest.approx(0.0, abs=1e-15)
    assert scores["pareto_gap_posterior_excess_risk_normalised"] < 0.01
    assert scores["rmse"] == pytest.approx(
        np.sqrt(np.mean((task.posterior_mean - task.f_true_eval) ** 2)))
    v = task.posterior_var + task.noise_var_eval
    assert scores["nll"] == pytest.approx(np.mean(predictive.expected_gaussian_nll(
        task.posterior_mean, v, task.f_true_eval, task.noise_var_eval)))
    assert 0.7 < scores["coverage90"] < 1.0
    outer = task.shell_eval == 4
    assert 0 < outer.sum() < outer.size
    assert scores["eu_auroc_outer"] is not None


def test_total_ranking_and_pointwise_targets(task):
    pred = reference_predictions(task)["oracle"]
    noisy = Prediction(pred.mean + 0.3, pred.aleatoric_var, pred.epistemic_var[::-1].copy())
    scores = score_prediction(task, noisy)
    regret = (noisy.mean - task.f_true_eval) ** 2
    risk = task.noise_var_eval + regret
    rc = selective.aurc(noisy.aleatoric_var + noisy.epistemic_var, risk)
    assert scores["aurc_total_pointwise_excess_risk"] == pytest.approx(rc.value)
    assert scores["aurec_pointwise_excess_risk"] == pytest.approx(
        selective.aurec(noisy.epistemic_var, regret).value)
    assert scores["pareto_gap_posterior_excess_risk"] > 0


def test_distance_rows_have_rank_scores_only(task):
    preds = reference_predictions(task)
    for row in DISTANCE_ROWS:
        scores = score_prediction(task, preds[row], eu_is_variance=False)
        assert scores["nll"] is None and scores["crps"] is None and scores["rmse"] is None
        assert scores["spearman_eu_posterior_variance"] is not None
    # the two rows share the kNN mean and AU; only the distance differs
    maha, knn = preds["mahalanobis"], preds["knn10"]
    np.testing.assert_array_equal(maha.mean, knn.mean)
    assert not np.allclose(maha.epistemic_var, knn.epistemic_var)


def test_mahalanobis_distance_by_hand():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 3)) * [1.0, 5.0, 0.2]
    y = rng.normal(size=200)
    query = np.array([[0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [0.0, 10.0, 0.0]])
    eu = mahalanobis_prediction(x, y, query).epistemic_var
    z = (x - x.mean(0)) / x.std(0)
    cov = np.cov(z, rowvar=False)
    shrunk = 0.9 * cov + 0.1 * np.trace(cov) / 3 * np.eye(3)
    zq = (query - x.mean(0)) / x.std(0)
    expected = np.sqrt(np.einsum("ij,jk,ik->i", zq, np.linalg.inv(shrunk), zq))
    np.testing.assert_allclose(eu, expected, rtol=1e-12)
    # invariant to rescaling a feature (z-scored first), like the kNN row
    eu2 = mahalanobis_prediction(x * [1, 1e-3, 1], y, query * [1, 1e-3, 1]).epistemic_var
    np.testing.assert_allclose(eu, eu2, rtol=1e-9)
    assert knn_prediction(x, y, query).epistemic_var.shape == (3,)


# -- the EU targets under the CRPS and the log score (additions) ------------------------------
LOSS_SCORES = [f"spearman_eu_{t}" for t in LOSS_EU_TARGETS]


def test_loss_targets_are_additions_kept_out_of_the_papers_columns():
    for t in LOSS_EU_TARGETS:
        for stem in ("spearman_eu", "delta_ent", "rho_eu_au_true"):
            assert METRICS[f"{stem}_{t}"].addition
            assert f"{stem}_{t}" not in PAPER_METRICS
    assert not any(metric.addition for metric in PAPER_METRICS.values())


def test_oracle_has_no_deployment_gap_under_any_loss(task):
    """The GP oracle row's predictive is the reference predictive: its excess risk under each
    loss is the generalized variance, so the two scores agree."""
    scores = score_prediction(task, reference_predictions(task)["oracle"])
    for loss in ("crps", "log_score"):
        assert scores[f"spearman_eu_{loss}_posterior_excess_risk"] == pytest.approx(
            scores[f"spearman_eu_{loss}_generalized_variance"])
        assert scores[f"delta_ent_{loss}_posterior_excess_risk"] is not None


def test_under_homoscedastic_noise_every_target_ranks_as_the_posterior_variance():
    task = gp_task(n=80, m=100, seed=4, noise_slope=0.0)
    scores = score_prediction(task, reference_predictions(task)["oracle"])
    for column in LOSS_SCORES:
        assert scores[column] == pytest.approx(1.0), column
    # a method whose mean is off: its excess risks are no longer its variance's ranking
    pred = reference_predictions(task)["oracle"]
    rng = np.random.default_rng(0)
    shifted = Prediction(pred.mean + rng.normal(scale=0.5, size=pred.mean.size),
                         pred.aleatoric_var, pred.epistemic_var)
    scores = score_prediction(task, shifted)
    assert scores["spearman_eu_crps_posterior_excess_risk"] < 0.9
    assert scores["spearman_eu_crps_generalized_variance"] == pytest.approx(1.0)


def test_distance_rows_have_generalized_variances_only(task):
    preds = reference_predictions(task)
    for row in DISTANCE_ROWS:
        scores = score_prediction(task, preds[row], eu_is_variance=False)
        for loss in ("crps", "log_score"):
            assert scores[f"spearman_eu_{loss}_posterior_excess_risk"] is None
            assert scores[f"delta_ent_{loss}_posterior_excess_risk"] is None
            assert scores[f"spearman_eu_{loss}_generalized_variance"] is not None


def test_a_sampled_posterior_scores_from_the_mixture_of_its_draws():
    """The same data as a sampled-prior instance: the targets come from the mixture of its
    draws, which, drawn from the exact posterior, meet the closed forms to their Monte Carlo
    error."""
    exact = gp_task(n=60, m=50, seed=6, draws=3000)
    sampled = gp_task(n=60, m=50, seed=6, draws=3000, key={"prior": "hbart"})
    assert exact.reference_predictive.draws is None
    assert sampled.reference_predictive.draws is not None
    pred = reference_predictions(exact)["oracle"]
    rng = np.random.default_rng(1)
    mean = pred.mean + rng.normal(scale=0.3, size=pred.mean.size)
    var = pred.aleatoric_var + rng.uniform(0.5, 2.0, size=pred.mean.size) * pred.epistemic_var
    closed = exact.loss_eu_targets(mean, var)
    mixture = sampled.loss_eu_targets(mean, var)
    for name in LOSS_EU_TARGETS:  # within ~4 standard errors of 3,000 draws' moments
        np.testing.assert_allclose(mixture[name], closed[name], rtol=0.1, err_msg=name)
    # at the draws' own moments the finite mixture is all but Gaussian; the log score's excess
    # risk needs only the moments, so it is the closed form to rounding
    draws = sampled.posterior_draws.astype(np.float64)
    own = ReferencePredictive.gaussian(draws.mean(0), draws.var(0),
                                       sampled.noise_var_eval).eu_targets(mean, var)
    np.testing.assert_allclose(mixture["log_score_posterior_excess_risk"],
                               own["log_score_posterior_excess_risk"], rtol=1e-12)
    np.testing.assert_allclose(mixture["log_score_generalized_variance"],
                               own["log_score_generalized_variance"], rtol=0.005)
    for name in ("crps_posterior_excess_risk", "crps_generalized_variance"):
        np.testing.assert_allclose(mixture[name], own[name], rtol=0.01, err_msg=name)


class _ConstantAU:
    """A method whose AU is one number everywhere and whose EU is 0 at two points."""

    def fit(self, x, y):
        self.mean_ = float(np.mean(y))
        return self

    def predict(self, x):
        eu = np.linspace(0.0, 1.0, len(x))
        eu[:2] = 0.0
        return np.full(len(x), self.mean_), np.full(len(x), 0.0), eu


def test_an_undefined_score_says_why():
    """Fault: spearman_au was NaN for a constant-AU method with no explanation, and all-zero
    variances gave silent NaN scores."""
    from postrisk.evaluation.scoring import undefined_reasons

    m = 6
    ok = Prediction(np.zeros(m), np.linspace(0.1, 0.6, m), np.linspace(0.2, 0.7, m))
    assert undefined_reasons(ok) == ""
    flat = Prediction(np.zeros(m), np.full(m, 0.3), np.zeros(m))
    assert undefined_reasons(flat) == (
        "ÂU is constant (0.3) over the evaluation points: spearman_au and the other rank "
        "scores of ÂU are undefined; ÊU is constant (0) over the evaluation points: "
        "spearman_eu_* and the other rank scores of ÊU are undefined")
    zero = Prediction(np.zeros(m), np.zeros(m), np.r_[0.0, 0.0, np.linspace(0.1, 0.4, m - 2)])
    assert undefined_reasons(zero).endswith(
        "ÂU + ÊU is 0 at 2 of 6 points: nll, crps, coverage90 and width90 are undefined")
    assert "ÂU + ÊU" not in undefined_reasons(zero, eu_is_variance=False)
