"""HBART prior and posterior (fast tier): our prior sampler against bartz's, tempering,
determinism, fixed error precision. The bartz runs share one shape (one compilation)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

pytest.importorskip("bartz")

from postrisk.priors.hbart import model, prior, sampler  # noqa: E402

ALPHA = 1e-3
D = 3
PRIOR = model.TreePrior()  # 200 trees, max depth 6, 0.95, 2, 255 cutpoints
# one shape for every bartz run below: 8 eval rows + 32 training rows, 8 chains
N_EVAL, N_TRAIN, CHAINS = 8, 32, 8
SETTINGS = {"chains": CHAINS, "warmup": 60, "draws_per_chain": 40, "thin": 20,
            "tempering": {"t0": 3.0, "stages": 3, "share": 0.75}}


def _chi2_two_sample(a: np.ndarray, b: np.ndarray, top: int) -> float:
    """χ² homogeneity p-value of two integer samples, values ≥ top pooled."""
    a, b = np.minimum(a, top), np.minimum(b, top)
    table = np.array([np.bincount(a, minlength=top + 1), np.bincount(b, minlength=top + 1)])
    table = table[:, table.sum(0) > 0]
    return float(stats.chi2_contingency(table)[1])


def _bartz_prior_forests(n_forests: int, seed: int) -> model.Forests:
    import jax
    import jax.numpy as jnp
    from bartz.debug import sample_prior

    trace = sample_prior(jax.random.key(seed), n_forests, PRIOR.num_trees,
                         jnp.full(D, PRIOR.n_cutpoints, jnp.uint8),
                         jnp.asarray(PRIOR.p_nonterminal(), jnp.float32),
                         jnp.float32(1 / np.sqrt(PRIOR.num_trees)))
    return model.Forests(var=np.asarray(trace.var_tree, dtype=np.int32),
                         split=np.asarray(trace.split_tree, dtype=np.int32),
                         leaf=np.asarray(trace.leaf_tree, dtype=np.float64))


@pytest.fixture(scope="module")
def points():
    rng = np.random.default_rng(5)
    x = rng.uniform(size=(N_EVAL + N_TRAIN, D))
    x[1::2] = np.clip(x[0::2] + rng.normal(scale=0.02, size=x[0::2].shape), 0, 1)  # pairs
    return x


def _tree_pvalues(ours: model.Forests, theirs: model.Forests, x: np.ndarray) -> dict:
    bins = model.bin_covariates(x, PRIOR)
    fo, ft = model.evaluate_forests(ours, bins), model.evaluate_forests(theirs, bins)
    diff_p = [stats.ks_2samp(fo[:, i] - fo[:, i + 1], ft[:, i] - ft[:, i + 1]).pvalue
              for i in range(0, x.shape[0], 2)]
    level_p = [stats.ks_2samp(fo[:, i], ft[:, i]).pvalue for i in range(0, x.shape[0], 4)]
    root_var = lambda f: f.var[..., 1][f.split[..., 1] != 0].ravel()  # noqa: E731
    return {"depth": _chi2_two_sample(ours.depth().ravel(), theirs.depth().ravel(), 5),
            "leaves": _chi2_two_sample(ours.n_leaves().ravel(), theirs.n_leaves().ravel(), 8),
            "root_var": _chi2_two_sample(root_var(ours), root_var(theirs), D - 1),
            "f_diff": min(1.0, min(diff_p) * len(diff_p)),  # Bonferroni over pairs
            "f": min(1.0, min(level_p) * len(level_p))}


def test_binning_matches_bartz():
    import jax.numpy as jnp
    from bartz.prepcovars import GivenSplitsBinner

    cuts = PRIOR.cutpoints().astype(np.float64)
    x = np.concatenate([cuts, np.nextafter(cuts, 2), np.nextafter(cuts, -1), cuts + 1e-12,
                        [-0.3, 0.0, 1.0, 1.7, 0.5 / 256]])
    x = np.stack([x, x[::-1]], axis=1)
    xt = jnp.asarray(x.T.astype(np.float32))
    binner = GivenSplitsBinner(xt, xinfo=jnp.asarray(np.tile(PRIOR.cutpoints(), (2, 1))))
    np.testing.assert_array_equal(model.bin_covariates(x, PRIOR), np.asarray(binner.bin(xt)).T)
    assert model.bin_covariates(np.array([[1 / 256]]), PRIOR)[0, 0] == 0  # equal: goes left
    assert model.bin_covariates(np.array([[1.7]]), PRIOR)[0, 0] == 255


def test_prior_matches_bartz_sample_prior(points):
    n_forests = 400
    ours = model.sample_forests(PRIOR, n_forests, D, 1 / np.sqrt(PRIOR.num_trees),
                                np.random.default_rng(1))
    theirs = _bartz_prior_forests(n_forests, seed=2)
    p = _tree_pvalues(ours, theirs, points)
    assert all(v >= ALPHA for v in p.values()), p
    # the comparison has power: a shallower prior is detected
    for wrong in (replace(PRIOR, base=0.5), replace(PRIOR, max_depth=4)):
        bad = model.sample_forests(wrong, n_forests, D, 1 / np.sqrt(PRIOR.num_trees),
                                   np.random.default_rng(3))
        p_bad = _tree_pvalues(bad, theirs, points)
        assert p_bad["depth"] < ALPHA and p_bad["leaves"] < ALPHA, p_bad


def _state(x, y, scale, missing, precision=1.0):
    return sampler.init_state(PRIOR, 1.0, x, y, scale, missing, CHAINS, 2, precision)


@pytest.mark.slow
def test_prior_matches_bartz_mcmc_without_data(points):
    """bartz with every target missing samples the prior: trees and f at the points."""
    import jax

    n = points.shape[0]
    schedule = sampler.tempering_schedule(SETTINGS["warmup"], SETTINGS["draws_per_chain"],
                                        SETTINGS["thin"], 3.0, 3, 0.75)
    state = _state(points, np.zeros(n), np.ones(n), np.ones(n, dtype=bool))
    run = sampler.run_tempered(state, jax.random.key(7), schedule, SETTINGS["thin"])
    draws = run.draws.reshape(-1, n)
    ours = model.sample_prior_draws(PRIOR, 1.0, points, np.random.default_rng(8),
                                    size=draws.shape[0])
    # rounded: bartz's float32 running residuals turn exact zero differences (both points in
    # the same leaf of every tree) into ±1e-7 noise, which KS would see against our atom at 0
    diff_p = [stats.ks_2samp(np.round(draws[:, i] - draws[:, i + 1], 4),
                             np.round(ours[:, i] - ours[:, i + 1], 4)).pvalue
              for i in range(0, n, 2)]
    assert min(diff_p) * len(diff_p) >= ALPHA, diff_p
    level_p = [stats.ks_2samp(draws[:, i], ours[:, i]).pvalue for i in range(0, n, 4)]
    assert min(level_p) * len(level_p) >= ALPHA, level_p
    # final trees of all chains (independent across chains and trees with no data)
    split = np.asarray(jax.device_get(run.final_state.forest.split_tree), dtype=np.int32)
    mc = model.Forests(var=split * 0, split=split, leaf=np.zeros(split.shape[:-1] + (64,)))
    mine = model.sample_forests(PRIOR, CHAINS, D, 0.1, np.random.default_rng(9))
    assert _chi2_two_sample(mc.depth().ravel(), mine.depth().ravel(), 5) >= ALPHA
    assert _chi2_two_sample(mc.n_leaves().ravel(), mine.n_leaves().ravel(), 8) >= ALPHA


@pytest.fixture(scope="module")
def problem(points):
    rng = np.random.default_rng(11)
    params = {"a": 1.0, "num_trees": PRIOR.num_trees, "max_depth": PRIOR.max_depth,
              "base": PRIOR.base, "power": PRIOR.power, "n_cutpoints": PRIOR.n_cutpoints}
    f = prior.HeteroscedasticBartPrior().sample(params, points, rng)
    nv = rng.uniform(0.05, 0.3, size=N_TRAIN)
    y = f[N_EVAL:] + rng.normal(size=N_TRAIN) * np.sqrt(nv)
    return params, points[N_EVAL:], y, nv, points[:N_EVAL], f


@pytest.fixture(scope="module")
def posterior(problem):
    params, xtr, y, nv, xev, _ = problem
    fam = prior.HeteroscedasticBartPrior()
    runs = [fam.posterior(params, xtr, y, nv, xev, np.random.default_rng(21), SETTINGS)
            for _ in range(2)]
    return runs


def test_posterior_deterministic_and_shaped(posterior, problem):
    first, second = posterior
    np.testing.assert_array_equal(first.draws, second.draws)
    assert first.draws.shape == (CHAINS * SETTINGS["draws_per_chain"], N_EVAL + N_TRAIN)
    assert first.draws.dtype == np.float64 and first.chains == CHAINS
    s = first.settings
    assert s["x64"] is False and s["devices_used"] == 2 and s["thin"] == SETTINGS["thin"]
    # what it ran on: GPU and CPU runs differ in their draws
    assert (s["backend"], s["device_kind"], s["device_count"]) == ("cpu", "cpu", 2)
    # the data are informative: the posterior mean tracks f* at the training rows
    f = problem[-1]
    assert np.corrcoef(first.mean[N_EVAL:], f[N_EVAL:])[0, 1] > 0.8


def test_tempering_and_fixed_error_precision(posterior):
    s = posterior[0].settings
    temps = [st["temperature"] for st in s["stages"]]
    np.testing.assert_allclose(temps, [3.0, 3.0 ** (2 / 3), 3.0 ** (1 / 3), 1.0])
    assert [st["iterations"] for st in s["stages"]] == [15, 15, 15, 15 + 40 * 20]
    for st in s["stages"]:
        # noise SD σᵢ·√T ⇔ global precision 1/T on top of the per-point scales σᵢ
        assert st["noise_sd_multiplier"] == pytest.approx(np.sqrt(st["temperature"]))
        assert st["error_precision_used"][0] == st["error_precision_used"][1] == \
            np.float32(1 / st["temperature"])
    assert s["final_error_precision"] == [1.0, 1.0]  # σ fixed: exactly 1 after the run


def test_error_scale_in_state_and_sigma_fixed(problem):
    import jax

    _, xtr, y, nv, xev, _ = problem
    x = np.concatenate([xev, xtr])
    scale = np.concatenate([np.ones(N_EVAL), np.sqrt(nv)])
    missing = np.arange(x.shape[0]) < N_EVAL
    schedule = sampler.tempering_schedule(60, 40, 20, 3.0, 3, 0.75)
    state = _state(x, np.concatenate([np.zeros(N_EVAL), y]), scale, missing, 1 / 3.0)
    run = sampler.run_tempered(state, jax.random.key(3), schedule, 20)
    final = run.final_state
    np.testing.assert_array_equal(np.asarray(final.error_scale), scale.astype(np.float32))
    np.testing.assert_array_equal(np.asarray(final.error_cov_inv.value), np.ones(CHAINS))


@pytest.mark.slow
def test_untempered_stages_equal_one_plain_run(problem):
    """With t0 = 1 the staged run is bartz's single run with the same key, bit for bit."""
    import jax
    from bartz.mcmcloop import MainTraceWithTrainPred, run_mcmc

    _, xtr, y, nv, xev, _ = problem
    x = np.concatenate([xev, xtr])
    args = (x, np.concatenate([np.zeros(N_EVAL), y]),
            np.concatenate([np.ones(N_EVAL), np.sqrt(nv)]), np.arange(x.shape[0]) < N_EVAL)
    schedule = sampler.tempering_schedule(60, 40, 20, 1.0, 3, 0.75)
    staged = sampler.run_tempered(_state(*args), jax.random.key(4), schedule, 20).draws
    plain = run_mcmc(jax.random.key(4), _state(*args), 40, n_burn=60, n_skip=20,
                     step=sampler.fixed_error_step, main_trace_type=MainTraceWithTrainPred)
    np.testing.assert_array_equal(staged, np.asarray(plain.main_trace.train_pred))


def test_sample_and_fit(points):
    fam = prior.HeteroscedasticBartPrior()
    settings = {"num_trees": 200, "max_depth": 6, "base": 0.95, "power": 2.0,
                "n_cutpoints": 255, "scale_draws": 100}
    x = np.random.default_rng(0).uniform(-0.05, 1.05, size=(300, D))  # a few out of range
    eval_index = np.arange(0, 300, 2)
    params = fam.fit("toy", x, np.zeros(300), eval_index, settings, np.random.default_rng(1))
    assert params["prior"] == "hbart" and np.isfinite(params["a"]) and params["a"] > 0
    for key in ("num_trees", "max_depth", "base", "power", "n_cutpoints", "scale_draws"):
        assert params[key] == settings[key]
    # the same rng replays the unit-scale draws: their SD × a has median 1
    unit = model.sample_prior_draws(model.TreePrior.from_params(params), 1.0, x[eval_index],
                                    np.random.default_rng(1), size=100)
    assert np.median(unit.std(axis=1) * params["a"]) == pytest.approx(1.0, rel=1e-12)
    one = fam.sample(params, x, np.random.default_rng(5))
    np.testing.assert_array_equal(one, fam.sample(params, x, np.random.default_rng(5)))
    assert one.dtype == np.float64 and one.shape == (300,)


def test_x64_on_is_refused(problem):
    import jax

    params, xtr, y, nv, xev, _ = problem
    jax.config.update("jax_enable_x64", True)
    try:
        with pytest.raises(RuntimeError, match="x64"):
            prior.HeteroscedasticBartPrior().posterior(
                params, xtr, y, nv, xev, np.random.default_rng(0), SETTINGS)
    finally:
        jax.config.update("jax_enable_x64", False)
