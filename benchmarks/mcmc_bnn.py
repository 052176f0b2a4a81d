"""BNN reference posterior (NumPyro NUTS, float64): time per instance, R̂, coverage.

One synthetic instance: covariates uniform in [0, 1]^d, the BNN prior fitted on the evaluation
pool (H = 50, R = 65 reference inputs, scale constant from 100 draws), f* drawn from it,
heteroscedastic known noise (variance 0.23 on average over a 1:6 range, Concrete's
noise-to-signal ratio), y = f* + noise. The posterior runs with the ``run_*`` settings in this
process (compilation timed separately); the time of the ``target_*`` settings (by default the
paper's 4 chains × (500 + 250)) is **extrapolated** from it, not measured: seconds per
leapfrog step of the run × the leapfrog steps the target would take, with the run's mean steps
per warm-up and per sampling iteration (a short warm-up under-adapts, so this is a rough
figure), and, for comparison, by iterations alone. Also reported: the max over evaluation
points of R̂ (``postrisk.tasks.diagnostics.rhat_and_ess``: ArviZ's rank-normalised split-R̂, function
space) and the share of evaluation points with f* inside the central 90% interval of the draws.

Usage (the process sets 2 host devices, one per CPU core, before importing JAX)::

    python benchmarks/mcmc_bnn.py                  # paper scale, shortened run, extrapolated
    python benchmarks/mcmc_bnn.py --preset demo    # Concrete-like demo instance, measured
"""

from __future__ import annotations

import time

_T_START = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402

from postrisk.core.jax_env import use_host_devices  # noqa: E402
from postrisk.core.logs import terminal_logging  # noqa: E402

PRESETS = {
    # paper scale: n ≈ 2,000, n_eval 1,500, d = 8; a shortened run, extrapolated
    "paper": {"n": 2000, "n_eval": 1500, "d": 8, "run_chains": 2, "run_warmup": 60,
              "run_samples": 20, "target_chains": 4, "target_warmup": 500,
              "target_samples": 250},
    # demo preset proposal: Concrete sizes (n = 348, n_eval = 515), D = 2 × 100 = 200, measured
    "demo": {"n": 348, "n_eval": 515, "d": 8, "run_chains": 2, "run_warmup": 150,
             "run_samples": 100, "target_chains": 2, "target_warmup": 150,
             "target_samples": 100},
}
FIT_SETTINGS = {"hidden": 50, "reference_inputs": 65, "scale_draws": 100}
NOISE_TO_SIGNAL = 0.23


def bnn_benchmark(n: int = 2000, n_eval: int = 1500, d: int = 8, run_chains: int = 2,
                  run_warmup: int = 60, run_samples: int = 20, target_chains: int = 4,
                  target_warmup: int = 500, target_samples: int = 250,
                  seed: int = 0) -> dict:
    """Run one BNN posterior with the ``run_*`` settings; extrapolate to ``target_*``."""
    import jax
    import numpy as np

    from postrisk.priors.bnn.prior import BayesianNeuralNetworkPrior
    from postrisk.tasks.diagnostics import rhat_and_ess

    rng = np.random.default_rng(seed)
    fam = BayesianNeuralNetworkPrior()
    x = rng.uniform(size=(n_eval + n, d))
    eval_index = np.arange(n_eval)
    params = fam.fit("benchmark", x, None, eval_index, FIT_SETTINGS, rng)
    f = fam.sample(params, x, rng)
    noise_var = 0.5 + 2.5 * rng.uniform(size=n)  # a 1:6 range
    noise_var *= NOISE_TO_SIGNAL / noise_var.mean()
    y = f[n_eval:] + np.sqrt(noise_var) * rng.standard_normal(n)
    settings = {"chains": run_chains, "warmup": run_warmup, "samples": run_samples,
                "target_accept": 0.9, "max_tree_depth": 10}
    t0 = time.perf_counter()
    res = fam.posterior(params, x[n_eval:], y, noise_var, x[:n_eval], np.random.default_rng(1),
                        settings)
    seconds_posterior = time.perf_counter() - t0
    s = res.settings
    pc = s["per_chain"]
    devices = s["devices"]
    warm_steps = float(np.mean(pc["warmup_mean_num_steps"]))
    draw_steps = float(np.mean(pc["mean_num_steps"]))
    run_steps = run_chains * (run_warmup * warm_steps + run_samples * draw_steps)
    sec_per_step = s["seconds_mcmc"] / (run_steps / devices)  # devices run side by side
    target_rounds = -(-target_chains // devices)
    target_by_steps = sec_per_step * target_rounds * (target_warmup * warm_steps
                                                      + target_samples * draw_steps)
    run_rounds = s["rounds"]
    target_by_iterations = s["seconds_mcmc"] * (target_rounds * (target_warmup + target_samples)
                                                / (run_rounds * (run_warmup + run_samples)))
    rhat = rhat_and_ess(res.draws[:, :n_eval], res.chains)[0]
    f_eval = f[:n_eval]
    lo, hi = np.quantile(res.draws[:, :n_eval], [0.05, 0.95], axis=0)
    return {
        "instance": {"n": n, "n_eval": n_eval, "d": d, "hidden": params["hidden"],
                     "a": params["a"], "noise_to_signal": NOISE_TO_SIGNAL},
        "devices": devices, "jax_devices": jax.local_device_count(),
        "run": {"chains": run_chains, "warmup": run_warmup, "samples": run_samples,
                "chain_method": s["chain_method"], "rounds": run_rounds},
        "seconds_compile": s["seconds_compile"], "seconds_mcmc": s["seconds_mcmc"],
        "seconds_posterior": seconds_posterior,
        "seconds_since_process_start": time.perf_counter() - _T_START,
        "mean_steps_warmup": warm_steps, "mean_steps_sampling": draw_steps,
        "step_size": pc["step_size"], "divergences": pc["divergences"],
        "max_tree_depth_hits": pc["max_tree_depth_hits"],
        "seconds_per_leapfrog_step": sec_per_step,
        "target": {"chains": target_chains, "warmup": target_warmup,
                   "samples": target_samples,
                   "seconds_mcmc_extrapolated_by_steps": target_by_steps,
                   "seconds_mcmc_extrapolated_by_iterations": target_by_iterations,
                   "note": "extrapolated from the run, not measured (compile time excluded)"},
        "max_rhat": float(np.max(rhat)), "median_rhat": float(np.median(rhat)),
        "share_rhat_le_1.05": float(np.mean(rhat <= 1.05)),
        "coverage90_f_eval": float(np.mean((f_eval >= lo) & (f_eval <= hi))),
        "corr_mean_ftrue": float(np.corrcoef(res.mean[:n_eval], f_eval)[0, 1]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="paper")
    parser.add_argument("--devices", type=int, default=2, help="host devices (CPU cores)")
    parser.add_argument("--seed", type=int, default=0)
    for key in PRESETS["paper"]:
        parser.add_argument(f"--{key.replace('_', '-')}", type=int, default=None)
    args = parser.parse_args()
    use_host_devices(args.devices)
    kwargs = {k: (getattr(args, k) if getattr(args, k) is not None else v)
              for k, v in PRESETS[args.preset].items()}
    with terminal_logging():  # the posterior's progress on stderr
        out = bnn_benchmark(**kwargs, seed=args.seed)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
