"""HBART posterior throughput: chain-iterations per second, chains over all devices vs one.

XLA reads the CPU device count once per process, so each configuration runs in its own
subprocess (``XLA_FLAGS=--xla_force_host_platform_device_count=N``). Each measures a short
run of :func:`postrisk.priors.hbart.sampler.posterior_draws` on a paper-size-ish instance (n = 2,000
training rows, n_eval = 1,500, d = 8, 200 trees), after a first run of the same shape that
absorbs compilation; reported: seconds per run and chain-iterations per second.

    python benchmarks/mcmc_hbart.py [--chains 8] [--warmup 20] [--devices 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

_FLAG = "--xla_force_host_platform_device_count"


def _measure(n_train: int, n_eval: int, d: int, chains: int, warmup: int,
             draws_per_chain: int, thin: int) -> dict:
    """In this process: compile run + timed run; chain-iterations per second."""
    import jax
    import numpy as np

    from postrisk.priors.hbart.model import TreePrior, sample_prior_draws
    from postrisk.priors.hbart.sampler import posterior_draws

    prior = TreePrior()
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(n_train + n_eval, d))
    f = sample_prior_draws(prior, 1.0, x, rng)[0]
    nv = (0.2 + 0.4 * x[n_eval:, 0]) ** 2
    y = f[n_eval:] + np.sqrt(nv) * rng.standard_normal(n_train)
    settings = {"chains": chains, "warmup": warmup, "draws_per_chain": draws_per_chain,
                "thin": thin, "tempering": {"t0": 3.0, "stages": 2, "share": 0.5}}
    times = []
    for _ in range(2):  # the first absorbs compilation
        t = time.perf_counter()
        _, record = posterior_draws(prior, 1.0, x[n_eval:], y, nv, x[:n_eval], rng, settings)
        times.append(time.perf_counter() - t)
    iterations = warmup + draws_per_chain * thin
    return {"devices": jax.local_device_count(), "devices_used": record["devices_used"],
            "chains": chains, "iterations": iterations, "n_train": n_train, "n_eval": n_eval,
            "d": d, "seconds_first": times[0], "seconds": times[1],
            "chain_iterations_per_s": chains * iterations / times[1]}


def hbart_benchmark(n_train: int = 2000, n_eval: int = 1500, d: int = 8, chains: int = 8,
                    warmup: int = 20, draws_per_chain: int = 2, thin: int = 5,
                    devices: int | None = None) -> dict:
    """Throughput with ``devices`` CPU devices (default: the CPU count) vs one, each in a
    fresh subprocess; returns both measurements and their ratio."""
    devices = devices or os.cpu_count() or 1
    out = {}
    for n in sorted({1, devices}):
        env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS=f"{_FLAG}={n}")
        args = json.dumps([n_train, n_eval, d, chains, warmup, draws_per_chain, thin])
        proc = subprocess.run([sys.executable, __file__, "--child", args], env=env,
                              capture_output=True, text=True, check=True)
        out[n] = json.loads(proc.stdout.strip().splitlines()[-1])
    ratio = out[devices]["chain_iterations_per_s"] / out[1]["chain_iterations_per_s"]
    return {"one_device": out[1], "all_devices": out[devices], "speedup": ratio}


def report(result: dict) -> list[str]:
    """Lines describing a :func:`hbart_benchmark` result."""
    lines = []
    for label in ("one_device", "all_devices"):
        r = result[label]
        lines.append(f"{label:12s}: {r['devices_used']} device(s), {r['chains']} chains × "
                     f"{r['iterations']} iterations, n = {r['n_train']} + {r['n_eval']}: "
                     f"{r['seconds']:.1f} s ({r['seconds_first']:.1f} s with compile), "
                     f"{r['chain_iterations_per_s']:.1f} chain-iterations/s")
    lines.append(f"speedup all devices / one device: {result['speedup']:.2f}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--chains", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--devices", type=int, default=None)
    parser.add_argument("--n-train", type=int, default=2000)
    parser.add_argument("--n-eval", type=int, default=1500)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_measure(*json.loads(args.child))))
        return
    result = hbart_benchmark(n_train=args.n_train, n_eval=args.n_eval, chains=args.chains,
                             warmup=args.warmup, devices=args.devices)
    print("\n".join(report(result)))


if __name__ == "__main__":
    main()
