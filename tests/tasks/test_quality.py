"""The quality record and the Monte-Carlo error of the oracle targets (postrisk.tasks.quality):
the standard errors against the spread of independent replicates, the record against values
computed by hand from its store."""

import numpy as np

from postrisk.tasks.diagnostics import batch_means_mcse_mean, batch_means_mcse_var
from postrisk.tasks.quality import (
    quality_record,
    record_differences,
    target_mcse,
)
from tests.release.release_helpers import with_diagnostics
from tests.task_helpers import gp_task


def test_standard_errors_match_the_spread_of_independent_replicates():
    """Brute force: 2,000 replicate sets of D = 400 independent draws at 30 points; the batch
    means' se of the mean, of the variance and of the excess risk of a fixed prediction agree
    with the replicates' standard deviations within 10%."""
    rng = np.random.default_rng(0)
    m, sd = rng.normal(size=30), rng.uniform(0.5, 2.0, size=30)
    pred = m + rng.normal(scale=1.5, size=30)
    reps = m + sd * rng.standard_normal((2000, 400, 30))
    means, variances = reps.mean(axis=1), reps.var(axis=1, ddof=1)
    risks = variances + (pred - means) ** 2
    one = reps[0]
    se = target_mcse(one.var(axis=0, ddof=1), batch_means_mcse_var(one),
                     batch_means_mcse_mean(one), pred, one.mean(axis=0))
    # batch means from one replicate are noisy (19 degrees of freedom): compare over points
    ratio_mean = batch_means_mcse_mean(one) / means.std(axis=0)
    ratio_var = se["posterior_variance"] / variances.std(axis=0)
    ratio_risk = se["posterior_excess_risk"] / risks.std(axis=0)
    for ratio in (ratio_mean, ratio_var, ratio_risk):
        assert abs(np.median(ratio) - 1) < 0.1
    # and averaged over replicates the batch-means se is unbiased to within 5%
    pooled = np.mean([batch_means_mcse_mean(r) for r in reps[:200]], axis=0)
    assert np.allclose(pooled / means.std(axis=0), 1, atol=0.12)


def test_dependence_between_draws_widens_the_standard_error():
    """An AR(1) chain (ρ = 0.9): batch means see the dependence that the i.i.d. formula σ/√D
    misses (about √19 ≈ 4.4 times as wide)."""
    rng = np.random.default_rng(1)
    x = np.zeros((4000, 5))
    for t in range(1, 4000):
        x[t] = 0.9 * x[t - 1] + np.sqrt(1 - 0.81) * rng.standard_normal(5)
    naive = x.std(axis=0, ddof=1) / np.sqrt(len(x))
    assert np.all(batch_means_mcse_mean(x) > 3 * naive)


def test_the_record_of_a_store():
    ds = with_diagnostics(gp_task(n=30, m=20, seed=3).ds, seed=3, chains=4)
    record = quality_record(ds, cell_bnn_max_rhat=1.02)
    checks = record["checks"]
    assert checks["coverage90"] == {"value": float(ds["covered90"].values.mean()),
                                    "nominal": 0.9, "points": 20}
    assert checks["validity"]["passed"] and checks["validity"]["threshold"] == 1.05
    assert checks["rhat"]["max"] == float(ds["rhat"].values.max())
    assert record["chains"] == 4 and record["draws"] == 200
    assert record["mcse"]["posterior_variance_relative"]["max"] == float(
        ds["mcse_var"].values.max())
    assert not quality_record(ds, cell_bnn_max_rhat=1.2)["checks"]["validity"]["passed"]
    assert quality_record(ds, None)["checks"]["validity"]["passed"]


def test_record_differences_name_each_path():
    a = {"checks": {"coverage90": {"value": 0.9}, "x": 1}, "draws": 10}
    b = {"checks": {"coverage90": {"value": 0.8}, "x": 1}, "draws": 10, "new": 1}
    assert record_differences(a, b) == ["checks.coverage90.value", "new"]


def test_a_task_gives_its_targets_standard_errors():
    from postrisk.tasks.task import Task

    task = Task(with_diagnostics(gp_task(n=30, m=20, seed=4).ds, seed=4, chains=1))
    at_mean = task.target_mcse()
    np.testing.assert_array_equal(at_mean["posterior_variance"],
                                  task.ds["mcse_var"].values * task.posterior_var)
    np.testing.assert_array_equal(at_mean["posterior_excess_risk"],
                                  at_mean["posterior_variance"])
    away = task.target_mcse(task.posterior_mean + 1.0)
    assert np.all(away["posterior_excess_risk"] > at_mean["posterior_excess_risk"])
