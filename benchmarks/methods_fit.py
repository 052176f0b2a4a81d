"""Fit + predict seconds per method on a paper-sized instance, against the exact GP reference.

One instance of paper size: ``--n`` training points (Table 4's largest n is 2,000) and
``--n-eval`` evaluation points, uniform in [0, 1]^8; f is a draw from a GP prior (ARD RBF,
a = 1) and the noise is heteroscedastic (variance 0.02–0.3 along the first input). Each method
runs with its default hyper-parameters through ``run_fit`` (the workflow's own path: thread
limits, output checks), twice in the same process with the same seed: the first call includes
importing and compiling (JIT), the second is the steady state a batched or tuned run sees.

The baseline measured in the same run is the task's own exact GP reference posterior at the
same sizes (``posterior_moments``: mean and variance at the evaluation points, float64), so the
printed ratio "× reference" says how many reference posteriors one fit costs on this machine.

With ``--corners`` each method that declares one in :data:`CORNERS` is also timed at the most
expensive corner of its search space (the largest numbers of iterations, members and depth).
Corners are measured with fewer members or iterations and extrapolated linearly in them (each
member is an independent fit; each boosting iteration costs about the same), and printed as
"extrapolated" — an estimate, not a measurement. CatBoost-KGB's rows are also given as a ratio
to the paper's median fit time of that method (24 minutes, App. C.3).

With ``--sweep`` a 10-trial tuning sweep (``--sweep-method``, default NN-Ens, on the first
``--sweep-n`` rows, architecture and batch size fixed, the optimiser settings and epochs
searched) runs twice in the same process: with the compiled-loop cache on (the optimiser's
numbers are traced, so trials share one compiled training loop) and off
(``compiled_loop_sharing(False)``: the numbers are baked into each trial's optimiser, so every
trial compiles anew — the behaviour before the cache). It prints the number of compilations of
the training loop and the trials per minute of each, and their ratio.

Usage: ``python benchmarks/methods_fit.py [--methods blr gp ...] [--n 2000] [--n-eval 1500]
[--corners] [--sweep] [--sweep-method nn_ens] [--sweep-n 500]``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402

from postrisk.gp.exact import posterior_moments, sample_prior  # noqa: E402
from postrisk.gp.kernels import Kernel  # noqa: E402
from postrisk.methods.registry import implemented_methods  # noqa: E402
from postrisk.methods.runner import run_fit  # noqa: E402

#: The paper's median fit time of CatBoost-KGB (App. C.3), seconds.
PAPER_KGB_MEDIAN_S = 24 * 60.0

#: method -> (the corner of its search space, what is measured instead, the factor from the
#: measured time to the corner's: members × iterations of the corner over the measured ones).
CORNERS: dict[str, tuple[dict, dict, float]] = {
    "ngboost_nig": ({"n_estimators": 800, "max_depth": 6, "minibatch_frac": 1.0,
                     "col_sample": 1.0},
                    {"n_estimators": 200, "max_depth": 6, "minibatch_frac": 1.0,
                     "col_sample": 1.0}, 800 / 200),
    "ngboost_bag": ({"n_estimators": 800, "max_depth": 6, "minibatch_frac": 1.0,
                     "col_sample": 1.0, "natural_gradient": True, "n_regressors": 25,
                     "sample_fraction": 0.95},
                    {"n_estimators": 200, "max_depth": 6, "minibatch_frac": 1.0,
                     "col_sample": 1.0, "natural_gradient": True, "n_regressors": 2,
                     "sample_fraction": 0.95}, (25 * 800) / (2 * 200)),
    "catboost_ps": ({"iterations": 600, "depth": 8, "n_regressors": 20, "bagging_frac": 1.0},
                    {"iterations": 600, "depth": 8, "n_regressors": 2, "bagging_frac": 1.0},
                    20 / 2),
    "catboost_kgb": ({"posterior_iterations": 1000, "prior_iterations": 300, "depth": 8,
                      "n_regressors": 20},
                     {"posterior_iterations": 1000, "prior_iterations": 300, "depth": 8,
                      "n_regressors": 2}, 20 / 2),
}
#: The neural methods' most expensive corner of the shared search space (widest, deepest,
#: longest, smallest batches), measured at a tenth of the epochs (each epoch costs the same),
#: after one compiling run.
_NN_CORNER = {"width": 64, "n_blocks": 4, "n_epochs": 200, "batch_size": 64}
for _name in ("nn_ens", "nn_bag", "nn_drop", "nn_edl", "nn_deup", "nn_lap", "nn_lap_sn",
              "nn_fsp", "nn_fsp_sn", "nn_swag"):
    _extra = {"nn_bag": {"sample_fraction": 0.95}, "nn_drop": {"dropout": 0.35}}.get(_name, {})
    CORNERS[_name] = ({**_NN_CORNER, **_extra}, {**_NN_CORNER, **_extra, "n_epochs": 20},
                      200 / 20)
#: The fixed part of the compilation sweep: one architecture and batch size.
SWEEP_FIXED = {"width": 32, "n_blocks": 2, "batch_size": 128}
SWEEP_TRIALS = 10


def sweep_compilations(method: str, x: np.ndarray, y: np.ndarray, seed: int,
                       threads: int) -> None:
    """The 10-trial sweep with the compiled-loop cache on, then off (module docstring)."""
    from postrisk.methods.nn.train import compiled_loop_sharing, loop_compilations
    from postrisk.tuning.sweep import tune

    print(f"\n{SWEEP_TRIALS}-trial sweep of {method} on n={len(y)} rows (fixed {SWEEP_FIXED}; "
          "learning rate, weight decay, momentum and epochs searched)")
    print(f"{'compiled-loop cache':<20} {'compilations':>12} {'seconds':>8} "
          f"{'trials/min':>11}")
    rates = {}
    for label, sharing in (("on", True), ("off", False)):
        with tempfile.TemporaryDirectory() as tmp, compiled_loop_sharing(sharing):
            before = loop_compilations()
            t0 = time.perf_counter()
            result = tune(method, x, y, journal=Path(tmp) / "sweep.log", n_trials=SWEEP_TRIALS,
                          startup_trials=SWEEP_TRIALS, fixed=SWEEP_FIXED, random_state=seed,
                          n_threads=threads)
            seconds = time.perf_counter() - t0
            compiled = loop_compilations() - before
        done = sum(t["state"] == "COMPLETE" for t in result.trials)
        rates[label] = 60.0 * done / seconds
        print(f"{label:<20} {compiled:>12d} {seconds:>8.1f} {rates[label]:>11.2f}", flush=True)
    print(f"trials per minute, cache on / off: {rates['on'] / rates['off']:.2f}×")


def instance(n: int, n_eval: int, d: int, seed: int):
    rng = np.random.default_rng(seed)
    kernel = Kernel(("rbf",), {"rbf": {"weight": 1.0,
                                       "lengthscale": rng.uniform(0.4, 1.0, d).tolist()}})
    x = rng.random((n + n_eval, d))
    f = sample_prior(kernel, 1.0, x, rng)[0]
    noise_var = 0.02 + 0.28 * x[:, 0]
    y = f + np.sqrt(noise_var) * rng.standard_normal(n + n_eval)
    return kernel, x[:n], y[:n], noise_var[:n], x[n:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", nargs="*", default=implemented_methods())
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--n-eval", type=int, default=1500)
    parser.add_argument("--d", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--corners", action="store_true",
                        help="also time the most expensive corner of each search space "
                             "(measured smaller, extrapolated)")
    parser.add_argument("--sweep", action="store_true",
                        help="also run a 10-trial sweep with the compiled-loop cache on and off")
    parser.add_argument("--sweep-method", default="nn_ens")
    parser.add_argument("--sweep-n", type=int, default=500)
    args = parser.parse_args()

    kernel, x, y, noise_var, x_eval = instance(args.n, args.n_eval, args.d, args.seed)
    print(f"instance: n={args.n}, n_eval={args.n_eval}, d={args.d}; {os.cpu_count()} CPU "
          f"core(s), n_threads={args.threads}")
    t0 = time.perf_counter()
    posterior_moments(kernel, 1.0, x, y, noise_var, x_eval)
    reference = time.perf_counter() - t0
    print(f"baseline: exact GP reference posterior (mean, variance) {reference:.2f} s\n")
    print(f"{'method':<12} {'first fit':>10} {'predict':>8} {'steady fit':>11} {'predict':>8} "
          f"{'steady total':>13} {'× reference':>12}  status")
    for name in args.methods:
        rows = []
        for _ in range(2):
            rec = run_fit(name, {}, x, y, x_eval, random_state=args.seed,
                          n_threads=args.threads)
            rows.append(rec)
        first, steady = rows
        total = steady.fit_seconds + steady.predict_seconds
        status = "ok" if first.ok and steady.ok else f"failed: {(steady.error or first.error)[:80]}"
        paper = (f"; {total / PAPER_KGB_MEDIAN_S:.3f} × the paper's median"
                 if name == "catboost_kgb" else "")
        print(f"{name:<12} {first.fit_seconds:>10.2f} {first.predict_seconds:>8.2f} "
              f"{steady.fit_seconds:>11.2f} {steady.predict_seconds:>8.2f} {total:>13.2f} "
              f"{total / reference:>12.1f}  {status}{paper}", flush=True)
    if args.sweep:
        sweep_compilations(args.sweep_method, x[:args.sweep_n], y[:args.sweep_n], args.seed,
                           args.threads)
    if not args.corners:
        return
    print("\nmost expensive corner of each search space (measured smaller, extrapolated "
          "linearly in members × iterations)")
    print(f"{'method':<12} {'measured s':>10} {'factor':>7} {'extrapolated s':>15} "
          f"{'× reference':>12}  corner")
    for name in args.methods:
        if name not in CORNERS:
            continue
        corner, measured, factor = CORNERS[name]
        for _ in range(2 if name.startswith("nn_") else 1):  # networks: the second, compiled
            rec = run_fit(name, measured, x, y, x_eval, random_state=args.seed,
                          n_threads=args.threads)
        seconds = rec.fit_seconds + rec.predict_seconds
        estimate = seconds * factor
        paper = (f"; {estimate / PAPER_KGB_MEDIAN_S:.3f} × the paper's median"
                 if name == "catboost_kgb" else "")
        status = "" if rec.ok else f"  failed: {rec.error[:80]}"
        print(f"{name:<12} {seconds:>10.2f} {factor:>7.1f} {estimate:>15.1f} "
              f"{estimate / reference:>12.1f}  {corner}{paper}{status}", flush=True)


if __name__ == "__main__":
    main()
