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

Usage: ``python benchmarks/methods_fit.py [--methods blr gp ...] [--n 2000] [--n-eval 1500]``.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402

from postrisk.gp.exact import posterior_moments, sample_prior  # noqa: E402
from postrisk.gp.kernels import Kernel  # noqa: E402
from postrisk.methods.registry import implemented_methods  # noqa: E402
from postrisk.methods.runner import run_fit  # noqa: E402


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
    args = parser.parse_args()

    kernel, x, y, noise_var, x_eval = instance(args.n, args.n_eval, args.d, args.seed)
    print(f"instance: n={args.n}, n_eval={args.n_eval}, d={args.d}; {os.cpu_count()} CPU "
          f"core(s), n_threads={args.threads}")
    t0 = time.perf_counter()
    posterior_moments(kernel, 1.0, x, y, noise_var, x_eval)
    reference = time.perf_counter() - t0
    print(f"baseline: exact GP reference posterior (mean, variance) {reference:.2f} s\n")
    print(f"{'method':<10} {'first fit':>10} {'predict':>8} {'steady fit':>11} {'predict':>8} "
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
        print(f"{name:<10} {first.fit_seconds:>10.2f} {first.predict_seconds:>8.2f} "
              f"{steady.fit_seconds:>11.2f} {steady.predict_seconds:>8.2f} {total:>13.2f} "
              f"{total / reference:>12.1f}  {status}", flush=True)


if __name__ == "__main__":
    main()
