"""Simulation-based calibration of both classification reference posteriors at toy size (fast
tier; one test file per prior, test_classification_sbc_gp.py and test_classification_sbc_bnn.py,
each importing the tests below and giving its ``design``, so the two run side by side): the GP
latents' and the network weights' NUTS, through the priors' own interface
(:mod:`postrisk.classification.priors`: the truth from ``draw``, the posterior from
``posterior``), with negative controls that must fail.

Instances: 1-D inputs, 20 training and 5 evaluation rows, K = 3, a known heteroscedastic
temperature τ(x) = exp(0.5·(x − 0.5)); f* from the prior, labels from softmax(f*/τ). GP: an RBF
kernel at scale 1.5, 120 instances (the slow tier's design,
tests/classification/test_gp_classification_sbc.py, runs 1,000 of these with the ±20%
dispersion controls). Network: H = 10 hidden units, 100 instances, the
regression BNN prior's fit (reference inputs and scale constant) on a pool of 100 rows, amplitude
1.5. NUTS: 2 chains × (150 warm-up + 100 draws), every second draw kept: D = 100.

Per instance: the rank of π*_k(x) and of the latent f*_k(x) at a random point and class among
the draws, the rank of f*'s training log-likelihood among the draws', and whether π*_k(x) lies
in the central 90% interval,
tested against a perfect sampler's coverage at D = 100 (0.882; α = 10⁻³,
:func:`postrisk.evaluation.posterior_checks.calibration_test`). Controls, each asserted to fail:
prior draws used as the posterior (f* ranks at the top of the log-likelihood), the posterior
conditioned on 2τ (its own sampler runs), and the posterior's latents at the evaluation rows
widened 2× about their mean before the softmax (coverage far above the nominal).
"""

from __future__ import annotations

import numpy as np
import pytest

from postrisk.classification.link import class_log_probabilities, class_probabilities
from postrisk.classification.priors import latent_prior
from postrisk.evaluation.posterior_checks import calibration_test
from postrisk.gp.kernels import default_kernel
from postrisk.priors.bnn.prior import BayesianNeuralNetworkPrior
from postrisk.tasks.diagnostics import covered_central
from tests.priors.sbc_helpers import scale_about_mean

K, N_TRAIN, N_EVAL = 3, 20, 5
SETTINGS = {"chains": 2, "warmup": 150, "samples": 100, "target_accept": 0.9,
            "max_tree_depth": 10}
THIN = 2
N_DRAWS = SETTINGS["chains"] * SETTINGS["samples"] // THIN
ALPHA = 1e-3
WIDENED = 2.0
#: (instances, of which the 2τ control reruns the sampler on the first ...) per prior: the
#: fewest at which every control fails with room (at 100 instances the 2× widening's coverage
#: p-value is ~10⁻⁵ against α = 10⁻³; the 2τ control's was 2·10⁻⁷ for the BNN at 60)
SIZES = {"gp": (120, 60), "bnn": (100, 40)}


def temperature(x: np.ndarray) -> np.ndarray:
    return np.exp(0.5 * (x[:, 0] - 0.5))


def make_design(name: str) -> dict:
    """The prior ``name``'s toy design: its interface, parameters, amplitude and salt."""
    if name == "gp":
        params = {"kernel": default_kernel(("rbf",), 1).to_dict(), "a": 1.5}
        amplitude = 1.0
    else:
        rng = np.random.default_rng(2026)
        params = BayesianNeuralNetworkPrior().fit(
            "sbc", rng.uniform(size=(100, 1)), None, np.arange(100),
            {"hidden": 10, "reference_inputs": 30, "scale_draws": 50}, rng)
        amplitude = 1.5
    return {"name": name, "prior": latent_prior(name), "params": params,
            "amplitude": amplitude, "salt": {"gp": 2041, "bnn": 2043}[name]}


def make_instance(design: dict, seed: int) -> dict:
    rng = np.random.default_rng([seed, design["salt"]])
    x = rng.uniform(size=(N_EVAL + N_TRAIN, 1))
    tau = temperature(x)
    f = design["prior"].draw(design["params"], design["amplitude"], x, rng, K)
    probs = class_probabilities(f[N_EVAL:], tau[N_EVAL:])
    y = np.sum(rng.uniform(size=(N_TRAIN, 1)) > np.cumsum(probs, axis=1)[:, :-1], axis=1)
    return {"x": x, "tau": tau, "f": f, "y": y, "point": int(rng.integers(N_EVAL)),
            "cls": int(rng.integers(K)), "rng": rng, "seed": seed}


def posterior_draws(design: dict, inst: dict, temperature_factor: float = 1.0) -> np.ndarray:
    """(D, N_EVAL + N_TRAIN, K) thinned posterior latents, evaluation rows first."""
    x, tau = inst["x"], inst["tau"]
    res = design["prior"].posterior(design["params"], design["amplitude"], x[N_EVAL:],
                                    inst["y"], temperature_factor * tau[N_EVAL:], x[:N_EVAL], K,
                                    inst["seed"], SETTINGS)
    draws = np.concatenate([res.latent_eval, res.latent_train], axis=1)
    by_chain = draws.reshape((SETTINGS["chains"], SETTINGS["samples"]) + draws.shape[1:])
    return by_chain[:, ::THIN].reshape((N_DRAWS,) + draws.shape[1:])


def prior_draws(design: dict, inst: dict) -> np.ndarray:
    return np.stack([design["prior"].draw(design["params"], design["amplitude"], inst["x"],
                                          inst["rng"], K) for _ in range(N_DRAWS)])


def widened(draws: np.ndarray, factor: float) -> np.ndarray:
    """The latent draws at the evaluation rows scaled about their mean by ``factor``."""
    out = np.array(draws)
    ev = out[:, :N_EVAL]
    out[:, :N_EVAL] = scale_about_mean(ev.reshape(N_DRAWS, -1), factor).reshape(ev.shape)
    return out


def checks(draws: np.ndarray, inst: dict) -> tuple[int, int, int, bool]:
    """(rank of π*_k(x), rank of f*'s training log-likelihood, rank of f*_k(x), π*_k(x)
    covered)."""
    j, k, tau = inst["point"], inst["cls"], inst["tau"]
    pi = class_probabilities(draws[:, [j]], tau[[j]])[:, 0, k]
    pi_true = class_probabilities(inst["f"][[j]], tau[[j]])[0, k]

    def loglik(f):
        logp = class_log_probabilities(f[..., N_EVAL:, :], tau[N_EVAL:])
        return logp[..., np.arange(N_TRAIN), inst["y"]].sum(axis=-1)

    return (int(np.sum(pi < pi_true)), int(np.sum(loglik(draws) < loglik(inst["f"]))),
            int(np.sum(draws[:, j, k] < inst["f"][j, k])),
            bool(covered_central(pi[:, None], [pi_true])[0]))


def calibration(rows: list):
    ranks, lls, latent, covs = (np.array(v) for v in zip(*rows, strict=True))
    return calibration_test({"pi_at_x": ranks, "loglik": lls, "f_at_x": latent}, covs, N_DRAWS,
                            alpha=ALPHA)


@pytest.fixture(scope="module")
def results(design) -> dict:
    n_main, n_tau = SIZES[design["name"]]
    rows: dict[str, list] = {k: [] for k in ("main", "widened", "prior", "tau_doubled")}
    for seed in range(n_main):
        inst = make_instance(design, seed)
        draws = posterior_draws(design, inst)
        rows["main"].append(checks(draws, inst))
        rows["widened"].append(checks(widened(draws, WIDENED), inst))
        rows["prior"].append(checks(prior_draws(design, inst), inst))
        if seed < n_tau:
            rows["tau_doubled"].append(checks(posterior_draws(design, inst, 2.0), inst))
    out = {name: calibration(r) for name, r in rows.items()}
    out["loglik_mean_rank"] = {name: float(np.mean([row[1] for row in r]))
                               for name, r in rows.items()}
    return out


def test_the_posterior_is_calibrated(design, results):
    result = results["main"]
    print(design["name"], result)
    assert result.n == SIZES[design["name"]][0]
    assert result.passed, result


def test_control_prior_as_posterior_fails(design, results):
    result = results["prior"]
    print(design["name"], "prior", result)
    assert not result.passed and result.rank_pvalues["loglik"] < ALPHA
    # the prior's draws fit the labels worse than f*: f* ranks at the top
    assert results["loglik_mean_rank"]["prior"] > 0.75 * N_DRAWS


def test_control_temperature_doubled_fails(design, results):
    result = results["tau_doubled"]
    print(design["name"], "tau_doubled", result)
    assert not result.passed and result.rank_pvalues["loglik"] < ALPHA
    # read with the true τ, the wrong posterior's draws fit the labels worse than f*
    assert results["loglik_mean_rank"]["tau_doubled"] > 0.6 * N_DRAWS


def test_control_widened_fails(design, results):
    result = results["widened"]
    print(design["name"], "widened", result)
    assert result.coverage90 > result.coverage_nominal and result.coverage_pvalue < ALPHA
    # the evaluation rows only: the log-likelihood rank is the posterior's own
    assert result.rank_pvalues["loglik"] == results["main"].rank_pvalues["loglik"]
