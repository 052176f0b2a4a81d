"""The HBART warm-up check (App. B.7): its formulas by hand and against simulation, and (slow)
a deliberately unconverged HBART run against a long one."""

import numpy as np
import pandas as pd
import pytest

from postrisk.covariates.pools import N_SHELLS
from postrisk.studies.warmup_check.tables import (
    compare_instance,
    monte_carlo_sd_change,
    sd_relative_change,
    summarize,
)

OUTER = N_SHELLS - 1


def _arrays(var, covered, shell, mcse=None, max_rhat=1.0):
    var = np.asarray(var, float)
    return {"posterior_var": var, "covered90": np.asarray(covered, bool),
            "shell_eval": np.asarray(shell), "max_rhat": max_rhat,
            "mcse_var": np.full(var.size, 0.1) if mcse is None else np.asarray(mcse, float)}


def test_relative_sd_change_by_hand():
    assert sd_relative_change([1.0, 4.0, 4.0], [4.0, 4.0, 1.0]).tolist() == [1.0, 0.0, -0.5]


def test_the_same_run_shows_no_change():
    base = _arrays([1.0, 2.0, 3.0, 4.0], [1, 0, 1, 1], [0, OUTER, OUTER, 1])
    row, _ = compare_instance(base, dict(base))
    assert row["coverage90_change"] == 0
    assert row["sd_change_median"] == row["sd_change_max"] == row["sd_change_mean"] == 0


def test_coverage_and_sd_changes_by_hand():
    shell = [0, OUTER, OUTER, 1]
    base = _arrays([1.0, 1.0, 1.0, 1.0], [1, 0, 0, 1], shell)
    long = _arrays([1.0, 1.21, 0.81, 1.0], [1, 1, 0, 1], shell)
    row, points = compare_instance(base, long)
    assert row["coverage90_base"] == 0.5 and row["coverage90_long"] == 0.75
    assert row["coverage90_change"] == 0.25
    assert row["coverage90_outer_base"] == 0.0 and row["coverage90_outer_long"] == 0.5
    assert row["coverage90_rest_base"] == row["coverage90_rest_long"] == 1.0
    # |Δsd/sd| = 0, 0.1, 0.1, 0
    assert row["sd_change_median"] == pytest.approx(0.05)
    assert row["sd_change_max"] == pytest.approx(0.1)
    assert row["n_eval_outer"] == 2
    instances = pd.DataFrame([{"dataset": "d", "prior": "hbart", "factor": 4,
                               "warmup_base": 10, "warmup_long": 40, **row}])
    summary = summarize(instances, [points]).iloc[0]
    assert summary["coverage90_change"] == 0.25 and summary["points"] == 4
    assert summary["paper_coverage90_change_below"] == 0.003
    assert summary["paper_sd_change_at_most_about"] == 0.05


def test_stores_of_different_points_are_refused():
    base = _arrays([1.0, 1.0], [1, 1], [0, 1])
    with pytest.raises(ValueError, match="different evaluation points"):
        compare_instance(base, _arrays([1.0, 1.0], [1, 1], [1, 0]))


def test_monte_carlo_sd_change_matches_two_independent_runs():
    """Two independent runs of D iid draws per point: the median |relative SD change| equals
    the formula at the relative MCSE of an iid sample variance, sqrt(2 / (D − 1))."""
    rng = np.random.default_rng(1)
    d, points = 200, 20000
    var = [rng.standard_normal((points, d)).var(axis=1, ddof=1) for _ in range(2)]
    observed = np.median(np.abs(sd_relative_change(var[0], var[1])))
    mcse = np.full(points, np.sqrt(2.0 / (d - 1)))
    assert np.median(monte_carlo_sd_change(mcse, mcse)) == pytest.approx(observed, rel=0.04)


@pytest.mark.slow
def test_an_unconverged_short_warmup_against_a_long_one_shows_a_change():
    """The real HBART sampler on a small informative instance: one warm-up iteration against
    100, the seed and every other setting the same, reports a change; rebuilding the long run
    reports none. (On an instance this small HBART mixes within a few iterations: the short
    run's change is of the size two long runs with different seeds show, so this checks the
    comparison, not the sampler's convergence.)"""
    pytest.importorskip("bartz")
    from postrisk.priors.hbart.prior import HeteroscedasticBartPrior
    from postrisk.tasks.diagnostics import instance_point_checks

    fam = HeteroscedasticBartPrior()
    params = {"a": 1.0, "num_trees": 50, "max_depth": 6, "base": 0.95, "power": 2.0,
              "n_cutpoints": 255}
    rng = np.random.default_rng(3)
    x = rng.uniform(size=(140, 2))
    f = fam.sample(params, x, rng)
    n_eval = 40
    nv = np.full(100, 0.05)
    y = f[n_eval:] + np.sqrt(nv) * rng.standard_normal(100)
    shell = np.where(x[:n_eval, 0] > 0.8, OUTER, 0)

    def run(warmup):
        settings = {"chains": 16, "warmup": warmup, "draws_per_chain": 4, "thin": 1,
                    "tempering": {"t0": 3.0, "stages": 1, "share": 0.0}}
        res = fam.posterior(params, x[n_eval:], y, nv, x[:n_eval], np.random.default_rng(0),
                            settings)
        draws = res.draws[:, :n_eval]
        checks = instance_point_checks(draws, f[:n_eval], res.chains)
        return _arrays(draws.var(axis=0, ddof=1), checks["covered90"], shell,
                       checks["mcse_var"], float(checks["rhat"].max()))

    long = run(100)
    unconverged, _ = compare_instance(run(1), long)
    same, _ = compare_instance(run(100), long)
    print("unconverged vs long:", unconverged)
    assert unconverged["sd_change_median"] > 0 and unconverged["sd_change_max"] > 0
    assert same["sd_change_max"] == 0 and same["coverage90_change"] == 0, same
