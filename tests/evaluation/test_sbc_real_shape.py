"""The real-shape SBC benchmark's statistics (benchmarks/sbc_real_shape.py) at toy size: the
exact sampler's nominals against brute force, and its pooled checks passing an exact posterior
and rejecting one widened or narrowed by 20%."""

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

from postrisk.evaluation.posterior_checks import perfect_sampler_coverage  # noqa: E402
from sbc_real_shape import (  # noqa: E402
    autocorrelated_coverage,
    draw_checks,
    loglik_rank_ks,
    nominal_z2,
    rho_for_ess_ratio,
    summary,
)


@pytest.mark.parametrize("n_draws", [20, 50])
def test_nominal_z2_equals_brute_force(n_draws):
    """f and D draws iid N(0, 1): the mean of (f − m̂)²/v̂ over 400,000 repetitions is the
    formula's (1.123 at D = 20, 1.063 at D = 50) within 4 SEs — well away from 1."""
    rng = np.random.default_rng(n_draws)
    reps = 400_000
    draws = rng.standard_normal((n_draws, reps))
    z2 = (rng.standard_normal(reps) - draws.mean(axis=0)) ** 2 / draws.var(axis=0, ddof=1)
    se = z2.std() / np.sqrt(reps)
    assert abs(z2.mean() - nominal_z2(n_draws)) < 4 * se
    assert nominal_z2(n_draws) - 1 > 10 * se


def test_autocorrelated_coverage_matches_iid_and_drops_with_correlation():
    """ρ = 0 is the exact value for independent draws; one AR(1) chain of 50 draws at lag-1
    correlation 0.6 covers about 0.839 (an independent simulation's figure), less than the
    nominal at D = 50 (0.865) and more than at the chain's ESS (12.5 draws: 0.762)."""
    assert autocorrelated_coverage(4, 250, 0.0) == perfect_sampler_coverage(1000)
    got = autocorrelated_coverage(1, 50, 0.6, reps=40_000)
    assert got == pytest.approx(0.839, abs=0.006)
    assert perfect_sampler_coverage(12) < got < perfect_sampler_coverage(50)
    assert rho_for_ess_ratio(0.25) == pytest.approx(0.6)
    assert rho_for_ess_ratio(1.7) == 0.0  # ESS above D (antithetic draws): treated as iid


def _replicates(factor: float, n_rep: int = 60, n_draws: int = 200, points: int = 100,
                seed: int = 0) -> pd.DataFrame:
    """Replicates of a Gaussian posterior per point: f* from it, D draws from it with their
    spread scaled by ``factor`` (1: an exact sampler)."""
    rng = np.random.default_rng(seed)
    rows = []
    for r in range(n_rep):
        mean, sd = rng.normal(size=points), rng.uniform(0.5, 2.0, size=points)
        f_true = mean + sd * rng.standard_normal(points)
        draws = mean + factor * sd * rng.standard_normal((n_draws, points))
        rows.append({"prior": "gp", "settings": "toy", "noise": "bump", "coverage": "ood",
                     "seed": r, "chains": 1, "draws": n_draws, "n_eval": points,
                     **draw_checks(draws, f_true, draws.mean(axis=0), draws.var(axis=0, ddof=1)),
                     "rank_point": int(np.sum(draws[:, 0] < f_true[0])),
                     "rank_loglik": int(rng.integers(n_draws + 1)),
                     "max_rhat": np.nan, "median_ess": float(n_draws)})
    return pd.DataFrame(rows)


def test_summary_passes_an_exact_posterior_and_rejects_its_dispersion_controls():
    """Over 100 toy SBCs (30 replicates × 50 points, D = 200) an exact posterior's 95%
    intervals hold the nominals about 95% of the time (each check at least 88%: 3 binomial
    SDs below), while its widened and narrowed controls are rejected in every one."""
    tables = pd.concat([summary(_replicates(1.0, n_rep=30, points=50, seed=s))
                        for s in range(100)])
    assert tables["nominal_iid"].iloc[0] == pytest.approx(perfect_sampler_coverage(200))
    assert tables["coverage_ok"].mean() >= 0.88 and tables["z2_ok"].mean() >= 0.88
    assert tables["wide_rejected"].all() and tables["narrow_rejected"].all()


@pytest.mark.parametrize("factor", [1.2, 0.8])
def test_summary_rejects_a_posterior_off_by_20_percent(factor):
    tables = pd.concat([summary(_replicates(factor, n_rep=30, points=50, seed=s))
                        for s in range(20)])
    assert not tables["coverage_ok"].any() and not tables["z2_ok"].any()


def test_loglik_rank_ks_passes_uniform_ranks_and_rejects_under_fitting_draws():
    """Ranks of f*'s log-likelihood among D = 200 draws: those of an exact posterior (uniform
    on 0 … D) pass the KS test; draws that under-fit the data (f* ranked in the upper part as
    often as the demo's short HBART warm-up ranked it: mean 0.65) fail at 100 replicates."""
    rng = np.random.default_rng(3)
    d = 200
    uniform = pd.Series(rng.integers(0, d + 1, size=100))
    assert loglik_rank_ks(uniform, d) > 0.01
    skewed = pd.Series(np.floor(d * rng.beta(1.6, 0.86, size=100)).astype(int))
    assert 0.6 < (skewed / d).mean() < 0.7
    assert loglik_rank_ks(skewed, d) < 1e-2  # at 100 replicates: below 0.01 in 98% of seeds
