"""Exact GP reference posterior: ``postrisk.gp.exact.posterior_draws`` against GPJax.

One instance: ``--n`` training points and ``--n-eval`` evaluation points, uniform in [0, 1]^8,
an ARD RBF kernel, heteroscedastic known noise variances; f is drawn from the prior and
y = f + noise. Both libraries condition the same prior on the same data and return joint draws
at the evaluation points *and* the training points (m = n_eval + n, as the task store needs),
plus the posterior mean and marginal variance. GPJax takes the per-point noise as an array
``obs_stddev`` of its Gaussian likelihood (its conjugate posterior adds ``diag(obs_stddev²)``
to the Gram matrix). Both run in float64 (x64 is enabled for this whole process: it is its
own process). GPJax's default jitters (1e-6 on the Gram matrix and on the predictive
covariance) are lowered to 1e-10 (absolute; the prior variance is 1) so that the two compute
the same quantity; ours uses a jitter of 1e-10 × mean diagonal only for the draws' factor.

Usage: ``python benchmarks/gp_reference.py [--n 2000] [--n-eval 1500] [--draws 1000]``.
"""

from __future__ import annotations

import argparse
import time

import jax

jax.config.update("jax_enable_x64", True)  # own process; the library itself never does this

import gpjax as gpx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from postrisk.gp.exact import posterior_draws, sample_prior  # noqa: E402
from postrisk.gp.kernels import Kernel  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="training points")
    parser.add_argument("--n-eval", type=int, default=1500, help="evaluation points")
    parser.add_argument("--draws", type=int, default=1000, help="joint posterior draws")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    d = 8
    rng = np.random.default_rng(args.seed)
    lengthscale = rng.uniform(0.3, 1.0, size=d)
    kernel = Kernel(("rbf",), {"rbf": {"weight": 1.0, "lengthscale": lengthscale.tolist()}})
    a = 1.0
    x_train = rng.random((args.n, d))
    x_eval = rng.random((args.n_eval, d))
    noise_var = 0.05 * (0.5 + 2.5 * rng.random(args.n))  # heteroscedastic, a 1:6 range
    f_train = sample_prior(kernel, a, x_train, rng)[0]
    y_train = f_train + np.sqrt(noise_var) * rng.standard_normal(args.n)
    x_test = np.concatenate([x_eval, x_train])
    m = x_test.shape[0]
    print(f"instance: n={args.n}, n_eval={args.n_eval}, m={m} joint test points, d={d}, "
          f"D={args.draws} draws, RBF (ARD), heteroscedastic known noise "
          f"(variance {noise_var.min():.3f}–{noise_var.max():.3f}), float64, "
          f"{jax.device_count()} {jax.devices()[0].platform} device(s)")

    # --- ours -------------------------------------------------------------------------------
    ours = {}
    for run in ("first", "warm"):
        t0 = time.perf_counter()
        info: dict = {}
        draws, mean, var = posterior_draws(kernel, a, x_train, y_train, noise_var, x_test,
                                           args.draws, np.random.default_rng(1), info=info)
        ours[run] = time.perf_counter() - t0
    print(f"ours   (postrisk, numpy/scipy + JAX kernel): first call {ours['first']:.2f} s, "
          f"warm {ours['warm']:.2f} s; draws factor: {info}")

    # --- GPJax -------------------------------------------------------------------------------
    gkernel = gpx.kernels.RBF(lengthscale=jnp.asarray(lengthscale), variance=a ** 2)
    prior = gpx.gps.Prior(mean_function=gpx.mean_functions.Zero(), kernel=gkernel,
                          jitter=1e-10)
    likelihood = gpx.likelihoods.Gaussian(num_datapoints=args.n,
                                          obs_stddev=jnp.asarray(np.sqrt(noise_var)))
    posterior = gpx.gps.ConjugatePosterior(prior=prior, likelihood=likelihood, jitter=1e-10)
    data = gpx.Dataset(X=jnp.asarray(x_train), y=jnp.asarray(y_train)[:, None])

    @jax.jit
    def gpjax_run(xt, key):
        dist = posterior.predict(xt, data, return_covariance_type="dense")
        return dist.mean, dist.variance, dist.sample(key, (args.draws,))

    theirs = {}
    for run in ("first", "warm"):
        t0 = time.perf_counter()
        g_mean, g_var, g_draws = jax.block_until_ready(
            gpjax_run(jnp.asarray(x_test), jax.random.key(1)))
        theirs[run] = time.perf_counter() - t0
    print(f"GPJax  {gpx.__version__} (ConjugatePosterior.predict dense + sample, jitted): "
          f"first call {theirs['first']:.2f} s, warm {theirs['warm']:.2f} s")
    print(f"time ratio ours / GPJax: first call {ours['first'] / theirs['first']:.2f}, "
          f"warm {ours['warm'] / theirs['warm']:.2f}")

    g_mean, g_var, g_draws = (np.asarray(t, dtype=np.float64) for t in (g_mean, g_var, g_draws))
    sd = np.sqrt(np.maximum(g_var, 1e-300))
    print(f"posterior mean: max |ours − GPJax| = {np.max(np.abs(mean - g_mean)):.3e} "
          f"(max |mean| {np.max(np.abs(g_mean)):.3f}; in posterior SDs: "
          f"{np.max(np.abs(mean - g_mean) / sd):.3e})")
    print(f"posterior variance: max |ours − GPJax| / GPJax = "
          f"{np.max(np.abs(var - g_var) / g_var):.3e} (absolute {np.max(np.abs(var - g_var)):.3e};"
          f" GPJax adds its 1e-10 jitter to the variance)")
    # The draws use different random numbers: compare their Monte-Carlo moments instead.
    for name, dr in (("ours", draws), ("GPJax", g_draws)):
        z = (dr.mean(axis=0) - mean) / np.sqrt(var / dr.shape[0])
        ratio = dr.var(axis=0, ddof=1) / var
        print(f"draws {name:5s}: mean error in MC SEs |z| max {np.max(np.abs(z)):.2f} "
              f"(rms {np.sqrt(np.mean(z ** 2)):.2f}); empirical / exact variance: median "
              f"{np.median(ratio):.3f}, range {ratio.min():.3f}–{ratio.max():.3f}")


if __name__ == "__main__":
    main()
