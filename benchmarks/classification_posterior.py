"""GP classification reference posterior (NumPyro NUTS on whitened latents, float64): time per
instance and convergence at growing n.

One synthetic instance per size n: covariates standard normal in d = 8, an RBF kernel with ARD
lengthscales √d·(0.7 … 1.5) (so that typical distances are O(1)), scale a = 1.5, K = 3 latent
functions drawn from the prior jointly at the n training and ``n_eval`` evaluation rows, known
temperatures τ(x) = exp(0.3·x₁), labels from softmax(f*/τ). The posterior
(:func:`postrisk.classification.sampler.gp_classification_posterior`) runs with 2 chains ×
(500 warm-up + 500 draws) by default. Reported per size: seconds compiling, running NUTS and
drawing the evaluation rows' conditional; the max over evaluation points and classes of R̂ of
π_k(x) (``postrisk.tasks.diagnostics.rhat_and_ess``: ArviZ's rank-normalised split-R̂);
divergences, tree depths and max-tree-depth hits per chain; the share of π*_k(x) inside the
central 90% interval of the draws.

Usage (the process sets 2 host devices, one per CPU core, before importing JAX)::

    python benchmarks/classification_posterior.py                   # n = 348, 1000, 2000
    python benchmarks/classification_posterior.py --sizes 100       # a quick check
    python benchmarks/classification_posterior.py --out    # and append to MEASURED (JSON lines)
    python benchmarks/classification_posterior.py --dataset diamonds --out   # whole instances
    python benchmarks/classification_posterior.py --dataset diamonds --prior bnn --chains 4 \
        --warmup 500 --samples 250 --sizes 348 1000 --out     # the BNN prior's
"""

from __future__ import annotations

import time

_T_START = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
from pathlib import Path  # noqa: E402

from postrisk.core.jax_env import use_host_devices  # noqa: E402
from postrisk.core.logs import terminal_logging  # noqa: E402

D_IN, K, SCALE = 8, 3, 1.5
MEASURED = Path(__file__).resolve().parent / "measured" / "classification_posterior.jsonl"


def instance(n: int, n_eval: int, seed: int) -> dict:
    """Covariates, kernel, temperatures, f* and labels of one synthetic instance."""
    import numpy as np

    from postrisk.classification.link import class_probabilities
    from postrisk.classification.sampler import prior_latents
    from postrisk.gp.kernels import Kernel

    rng = np.random.default_rng([seed, n])
    kernel = Kernel(("rbf",), {"rbf": {
        "weight": 1.0, "lengthscale": list(math.sqrt(D_IN) * np.linspace(0.7, 1.5, D_IN))}})
    x = rng.standard_normal((n_eval + n, D_IN))
    tau = np.exp(0.3 * x[:, 0])
    f = prior_latents(kernel, SCALE, x, K, rng)
    probs = class_probabilities(f[n_eval:], tau[n_eval:])
    y = np.sum(rng.uniform(size=(n, 1)) > np.cumsum(probs, axis=1)[:, :-1], axis=1)
    return {"kernel": kernel, "x": x, "tau": tau, "f": f, "y": y}


def benchmark(n: int, n_eval: int, chains: int, warmup: int, samples: int, seed: int) -> dict:
    import jax
    import numpy as np

    from postrisk.classification.link import class_probabilities
    from postrisk.classification.sampler import gp_classification_posterior
    from postrisk.tasks.diagnostics import covered_central, rhat_and_ess

    inst = instance(n, n_eval, seed)
    x, tau = inst["x"], inst["tau"]
    settings = {"chains": chains, "warmup": warmup, "samples": samples, "target_accept": 0.9,
                "max_tree_depth": 10}
    t0 = time.perf_counter()
    res = gp_classification_posterior(inst["kernel"], SCALE, x[n_eval:], inst["y"],
                                      tau[n_eval:], x[:n_eval], K, seed, settings)
    seconds_total = time.perf_counter() - t0
    pi = class_probabilities(res.latent_eval, tau[:n_eval]).reshape(res.latent_eval.shape[0], -1)
    pi_true = class_probabilities(inst["f"][:n_eval], tau[:n_eval]).reshape(-1)
    rhat, ess = rhat_and_ess(pi, res.chains)
    s, pc = res.summary, res.summary["per_chain"]
    return {
        "n": n, "n_eval": n_eval, "d": D_IN, "K": K, "scale": SCALE, "seed": seed,
        "chains": chains, "warmup": warmup, "samples": samples,
        "devices": s["devices"], "rounds": s["rounds"], "jax_devices": jax.local_device_count(),
        "device_kind": res.settings["device_kind"],
        "seconds_compile": s["seconds_compile"], "seconds_mcmc": s["seconds_mcmc"],
        "seconds_conditional": s["seconds_conditional"], "seconds_posterior": seconds_total,
        "max_rhat_pi": float(np.max(rhat)), "median_rhat_pi": float(np.median(rhat)),
        "min_ess_pi": float(np.min(ess)), "median_ess_pi": float(np.median(ess)),
        "divergences": pc["divergences"], "mean_accept_prob": pc["mean_accept_prob"],
        "step_size": pc["step_size"], "mean_tree_depth": pc["mean_tree_depth"],
        "max_tree_depth_hits": pc["max_tree_depth_hits"],
        "coverage90_pi_eval": float(np.mean(covered_central(pi, pi_true))),
        "seconds_since_process_start": time.perf_counter() - _T_START,
    }


def real_instance(dataset: str, n: int, seed: int, settings: dict, prior: str = "gp") -> dict:
    """One whole classification instance on a dataset's real covariates (its offline copy),
    as the workflow builds it (:func:`postrisk.classification.generate.
    build_classification_task`: training rows, amplitude, truth, labels, NUTS, diagnostics),
    K = 3, the bump temperature field, balanced coverage; the GP or BNN prior fitted with the
    paper configuration's settings (once per dataset, not timed)."""
    import json as _json

    from postrisk.classification.generate import build_classification_task
    from postrisk.classification.key import ClassificationKey
    from postrisk.core import seeding
    from postrisk.covariates import FetchSettings, build_covariates
    from postrisk.covariates.build import Covariates
    from postrisk.grid.config import load_config
    from postrisk.priors.base import get_prior

    if (dataset, prior) not in _PRIORS:
        cov = Covariates(build_covariates(dataset, FetchSettings(prefer_offline_package=True)))
        cfg = load_config(Path(__file__).resolve().parents[1] / "config.yaml")
        params = get_prior(prior).fit(dataset, cov.x, cov.ds["target"].values, cov.eval_index,
                                      cfg[f"{prior}_prior"], seeding.rng("prior", dataset, prior))
        _PRIORS[dataset, prior] = (cov, params)
    cov, params = _PRIORS[dataset, prior]
    key = ClassificationKey(dataset, prior, "bump", "balanced", K, seed)
    t0 = time.perf_counter()
    ds = build_classification_task(key, cov, params, n, settings)
    seconds = time.perf_counter() - t0
    summary = _json.loads(ds.attrs["sampler_summary"])
    return {"dataset": dataset, "prior": prior, "n": int(ds.attrs["n"]),
            "n_eval": int(ds.attrs["n_eval"]),
            "K": K, "seed": seed, "seconds_instance": seconds,
            **{k: summary.get(k) for k in ("seconds_compile", "seconds_mcmc",
                                           "seconds_conditional", "seconds_latents")},
            "max_rhat_pi": float(ds["rhat"].max()), "min_ess_pi": float(ds["ess"].min()),
            "divergences": summary["per_chain"]["divergences"],
            "mean_tree_depth": summary["per_chain"]["mean_tree_depth"],
            "coverage90_pi_eval": float(ds["covered90"].mean()),
            "amplitude": float(ds.attrs["amplitude"])}


_PRIORS: dict = {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[348, 1000, 2000])
    parser.add_argument("--n-eval", type=int, default=600)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--samples", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--devices", type=int, default=2, help="host devices (CPU cores)")
    parser.add_argument("--out", type=Path, nargs="?", const=MEASURED, default=None,
                        help=f"append one JSON line per size to this file (default {MEASURED})")
    parser.add_argument("--dataset", default=None,
                        help="time whole instances on this dataset's real covariates (offline "
                             "copy: concrete, diamonds, health_insurance) instead")
    parser.add_argument("--prior", choices=("gp", "bnn"), default="gp",
                        help="with --dataset: the instances' prior (bnn: set --chains 4 "
                             "--warmup 500 --samples 250 for the paper configuration's NUTS)")
    args = parser.parse_args()
    use_host_devices(args.devices)
    if args.dataset:
        settings = {"temperature_strength": 1.25, "entropy_share": 0.5, "amplitude_draws": 100,
                    "posterior": {args.prior: {"chains": args.chains, "warmup": args.warmup,
                                               "samples": args.samples, "target_accept": 0.9,
                                               "max_tree_depth": 10}}}
        for n in args.sizes:
            with terminal_logging():
                row = real_instance(args.dataset, n, args.seed, settings, args.prior)
            print(f"{args.dataset} {args.prior} n = {row['n']}: instance "
                  f"{row['seconds_instance']:.1f} s (compile {row['seconds_compile']:.1f}, "
                  f"MCMC {row['seconds_mcmc']:.1f}), max R̂ "
                  f"{row['max_rhat_pi']:.3f}, coverage {row['coverage90_pi_eval']:.3f}",
                  flush=True)
            if args.out is not None:
                args.out.parent.mkdir(parents=True, exist_ok=True)
                with args.out.open("a") as fh:
                    fh.write(json.dumps(row) + "\n")
        return
    for n in args.sizes:
        with terminal_logging():  # the posterior's progress on stderr
            row = benchmark(n, args.n_eval, args.chains, args.warmup, args.samples, args.seed)
        print(f"n = {n}: compile {row['seconds_compile']:.1f} s, MCMC {row['seconds_mcmc']:.1f} s, "
              f"conditional {row['seconds_conditional']:.2f} s, max R̂ {row['max_rhat_pi']:.3f}, "
              f"divergences {row['divergences']}, mean tree depth "
              f"{[round(t, 2) for t in row['mean_tree_depth']]}, max-depth hits "
              f"{row['max_tree_depth_hits']}", flush=True)
        if args.out is not None:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            with args.out.open("a") as fh:
                fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
