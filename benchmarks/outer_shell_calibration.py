"""Outer-shell calibration of the MCMC reference posteriors: is the outermost shell of an OOD
task (no training input; evaluation points fill it) miscalibrated beyond finite D and the luck
of one ground-truth draw, and if so, is it the number of chains, the sampler or the prior draw?

On the Concrete instances of a finished demo run (``--results``, read only: the task stores
``tasks/concrete/{hbart,bnn}/<noise>/<coverage>/0.zarr`` and their sample stores), the share of
evaluation points with f* inside the central 90% interval of the draws, on the outermost shell
(``shell_eval`` == max) and on the rest, for:

1. **stored**: the demo's posterior (HBART 50 chains × 4 draws, D = 200; BNN 2 chains × 300,
   D = 600), every coverage scenario, beside the median bulk ESS of f(x) per region;
2. **more chains**: the OOD instances rebuilt by the library's own
   :func:`postrisk.tasks.generate.build_task` from their sample stores with the stored
   settings but more chains (HBART 250 as in the paper, same warm-up, thinning, tempering:
   D = 1,000; BNN 4 chains, same warm-up and samples: D = 1,200); also two subsets of those
   draws at the demo's D: the first demo-many chains (a replicate of the demo run) and one
   draw from each of D chains (HBART) / every other draw of all chains (BNN) — independent
   chains at the same D;
3. **prior redraws** (the instance-noise question): on each OOD instance's own design (its
   x_train, x_eval and noise variances) new f* from the same prior (``prior.sample``), new y,
   conditioned by the prior's ``posterior`` at the demo settings; and the same with the exact
   GP prior fitted to Concrete (``priors/concrete/gp.json``): exact posterior mean and
   covariance (:func:`postrisk.gp.exact.posterior_predictor`, :func:`posterior_covariance`),
   D joint draws per redraw — a perfect sampler on the same design, whose spread over redraws
   is what one instance's coverage over 103 correlated points can do by luck alone.

Beside them, the perfect-sampler expectation at each D (:func:`expected_coverage`: f* and D
independent exact draws, the interval as the task stores compute it): 0.9·(D − 1)/(D + 1),
0.891 at D = 200, 0.897 at D = 600, 0.898 at D = 1,000.

HBART (bartz, JAX x64 off) and BNN (NumPyro, x64 inside its own context) each run in a
subprocess with 2 host CPU devices, as a demo posterior job does. Default run ≈ 15 min on 2
busy cores; ``--quick`` (one OOD instance per prior, fewer redraws) ≈ 4 min.

    .venv/bin/python benchmarks/outer_shell_calibration.py [--results /tmp/base/results]
        [--quick] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

DATASET = "concrete"
NOISES = ("smooth_monotone", "bump")
COVERAGES = ("balanced", "ood")
_FLAG = "--xla_force_host_platform_device_count"


def expected_coverage(n_draws: int, level: float = 0.9) -> float:
    """E[share covered] of a perfect sampler's central ``level`` interval from ``n_draws``
    draws, as :func:`postrisk.tasks.diagnostics.covered_central` computes it (``np.quantile``,
    linear interpolation): f*'s rank r among the D draws is uniform on 0 … D; with
    (D − 1)(1 − level)/2 = j + g and (D − 1)(1 + level)/2 = k + g', f* is inside for
    j + 2 ≤ r ≤ k, and at r = j + 1 (r = k + 1) it lies in the end gap at a uniform position,
    inside with probability 1 − g (g'): E = level·(D − 1)/(D + 1), exact for uniform draws
    and within 10⁻³ of a Gaussian simulation."""
    return level * (n_draws - 1) / (n_draws + 1)


def _regions(shell: np.ndarray) -> dict[str, np.ndarray]:
    outer = shell == shell.max()
    return {"outer": outer, "rest": ~outer}


def _coverage(covered: np.ndarray, shell: np.ndarray) -> dict[str, float]:
    return {name: float(np.mean(covered[mask])) for name, mask in _regions(shell).items()}


def _store_path(results: Path, kind: str, prior: str, noise: str, coverage: str) -> Path:
    return results / kind / DATASET / prior / noise / coverage / "0.zarr"


def _settings(prior: str, recorded: dict) -> dict:
    """The ``posterior.<prior>`` settings a task store was built with, from its
    ``sampler_settings`` record."""
    if prior == "hbart":
        keys = ("chains", "warmup", "draws_per_chain", "thin", "tempering")
    else:
        keys = ("chains", "warmup", "samples", "target_accept", "max_tree_depth",
                "chain_method")
    return {k: recorded[k] for k in keys if k in recorded}


def _subsets(prior: str, draws: np.ndarray, chains: int, demo_chains: int,
             demo_draws: int) -> dict[str, np.ndarray]:
    """Subsets of a rerun's chain-major draws at the demo's D: each block of ``demo_chains``
    consecutive chains (block 0 is the demo's own run: bartz and NumPyro key chain c the same
    whatever the chain count; the others are independent replicates of the demo run), and
    (HBART) one draw from each of D chains outside block 0."""
    per = draws.shape[0] // chains
    by_chain = draws.reshape(chains, per, -1)
    out = {f"chains {b * demo_chains}–{(b + 1) * demo_chains - 1}":
           by_chain[b * demo_chains:(b + 1) * demo_chains].reshape(-1, draws.shape[1])
           for b in range(chains // demo_chains)}
    if prior == "hbart" and chains - demo_chains >= demo_draws:
        out[f"{demo_draws} chains × 1 draw"] = by_chain[demo_chains:demo_chains + demo_draws, 0]
    return out


def run_prior(prior: str, results: Path, quick: bool, redraws: int, more_chains: int) -> dict:
    """In this process (a child): stored, more-chains and prior-redraw coverages of one MCMC
    prior."""
    from postrisk.priors.base import get_prior
    from postrisk.tasks.diagnostics import covered_central
    from postrisk.tasks.generate import build_task
    from postrisk.tasks.store import validate_store

    fam = get_prior(prior)
    out: dict = {"prior": prior, "stored": [], "more_chains": [], "redraws": []}
    for noise in NOISES:
        for coverage in COVERAGES:
            ds = validate_store(_store_path(results, "tasks", prior, noise, coverage),
                                kind="task")
            shell = ds["shell_eval"].values
            row = {"noise": noise, "coverage": coverage, "draws": int(ds.sizes["draw"]),
                   "chains": int(ds.attrs["chains"]),
                   "coverage90": _coverage(ds["covered90"].values, shell),
                   "n": {k: int(m.sum()) for k, m in _regions(shell).items()}}
            row["ess_median"] = {k: float(np.median(ds["ess"].values[m]))
                                 for k, m in _regions(shell).items()}
            out["stored"].append(row)
    ood = [n for n in NOISES if not quick or n == "bump"]
    for noise in ood:
        task = validate_store(_store_path(results, "tasks", prior, noise, "ood"), kind="task")
        sample = validate_store(_store_path(results, "samples", prior, noise, "ood"),
                                kind="sample")
        demo = _settings(prior, json.loads(task.attrs["sampler_settings"]))
        shell = sample["shell_eval"].values
        f_eval = sample["f_true_eval"].values
        more = {**demo, "chains": more_chains}
        t = time.perf_counter()
        rebuilt = build_task(sample, more)
        seconds = time.perf_counter() - t
        draws = rebuilt["posterior_draws"].values.astype(np.float64)
        row = {"noise": noise, "chains": more["chains"], "draws": int(draws.shape[0]),
               "seconds": seconds, "coverage90": _coverage(rebuilt["covered90"].values, shell),
               "subsets": {}}
        stored = task["posterior_draws"].values
        for name, sub in _subsets(prior, draws, more["chains"], int(demo["chains"]),
                                  stored.shape[0]).items():
            row["subsets"][name] = {"draws": int(sub.shape[0]),
                                    "coverage90": _coverage(covered_central(sub, f_eval),
                                                            shell),
                                    "is_stored": bool(sub.shape == stored.shape
                                                      and np.array_equal(sub, stored))}
        out["more_chains"].append(row)
        print(f"[{prior}] {noise}/ood rebuilt with {more['chains']} chains in {seconds:.0f} s",
              file=sys.stderr, flush=True)
        # prior redraws on this instance's design, posterior at the demo settings
        params = json.loads(sample.attrs["prior_params"])
        x_eval, x_train = sample["x_eval"].values, sample["x_train"].values
        nv = sample["noise_var_train"].values
        n_eval = x_eval.shape[0]
        x_all = np.concatenate([x_eval, x_train])
        for r in range(redraws):
            rng = np.random.default_rng([20260, COVERAGES.index("ood"), NOISES.index(noise), r])
            f = fam.sample(params, x_all, rng)
            y = f[n_eval:] + np.sqrt(nv) * rng.standard_normal(nv.size)
            t = time.perf_counter()
            res = fam.posterior(params, x_train, y, nv, x_eval, rng, demo)
            cov = covered_central(res.draws[:, :n_eval], f[:n_eval])
            out["redraws"].append({"noise": noise, "redraw": r, "draws": int(res.draws.shape[0]),
                                   "seconds": time.perf_counter() - t,
                                   "coverage90": _coverage(cov, shell)})
        print(f"[{prior}] {noise}/ood: {redraws} prior redraws done", file=sys.stderr,
              flush=True)
    return out


def run_gp(results: Path, quick: bool, redraws: int, draws_of: dict[str, int]) -> dict:
    """Exact-GP redraws on each MCMC prior's OOD designs: f* from the Concrete GP prior
    (:func:`postrisk.gp.exact.sample_prior`, all redraws jointly), y = f* + noise; the exact
    posterior mean of every redraw at once (the library's :func:`postrisk.gp.linalg.condition`
    and :func:`predictive_moments` with one column per redraw: K + Σ is factored once per
    design), checked against :func:`postrisk.gp.exact.posterior_predictor` on the first; D
    joint draws per redraw from the exact posterior covariance
    (:func:`postrisk.gp.exact.posterior_covariance`, which does not depend on y)."""
    from postrisk.gp.exact import posterior_covariance, posterior_predictor, sample_prior
    from postrisk.gp.kernels import Kernel
    from postrisk.gp.linalg import condition, predictive_moments, robust_factor
    from postrisk.tasks.diagnostics import covered_central
    from postrisk.tasks.store import validate_store

    params = json.loads((results / "priors" / DATASET / "gp.json").read_text())
    kernel, a = Kernel.from_dict(params["kernel"]), float(params["a"])
    out = []
    for prior, n_draws in draws_of.items():
        for noise in [n for n in NOISES if not quick or n == "bump"]:
            sample = validate_store(_store_path(results, "samples", prior, noise, "ood"),
                                    kind="sample")
            x_eval, x_train = sample["x_eval"].values, sample["x_train"].values
            nv = sample["noise_var_train"].values
            shell = sample["shell_eval"].values
            n_eval = x_eval.shape[0]
            rng = np.random.default_rng([20261, list(draws_of).index(prior),
                                         NOISES.index(noise)])
            f_all = sample_prior(kernel, a, np.concatenate([x_eval, x_train]), rng,
                                 size=redraws)
            y_all = f_all[:, n_eval:] + np.sqrt(nv) * rng.standard_normal((redraws, nv.size))
            k_train = a**2 * kernel.matrix(x_train, x_train)
            k_train = 0.5 * (k_train + k_train.T) + np.diag(nv)
            chol, alpha = condition(k_train, y_all.T)
            means, var, _ = predictive_moments(chol, alpha, a**2 * kernel.matrix(x_train, x_eval),
                                               a**2 * kernel.diag(x_eval))
            check_mean, check_var = posterior_predictor(kernel, a, x_train, y_all[0], nv)(x_eval)
            if not (np.allclose(means[:, 0], check_mean, rtol=1e-6, atol=1e-8)
                    and np.allclose(var, check_var, rtol=1e-6, atol=1e-10)):
                raise RuntimeError("batched GP posterior differs from posterior_predictor")
            _, cov = posterior_covariance(kernel, a, x_train, y_all[0], nv, x_eval)
            factor, _ = robust_factor(cov, None)
            half = 1.6448536269514722 * np.sqrt(var)  # exact central 90% interval
            for r in range(redraws):
                f, mean = f_all[r, :n_eval], means[:, r]
                draws = mean + rng.standard_normal((n_draws, n_eval)) @ factor.T
                out.append({"design": prior, "noise": noise, "redraw": r, "draws": n_draws,
                            "coverage90": _coverage(covered_central(draws, f), shell),
                            "coverage90_exact_interval": _coverage(np.abs(f - mean) <= half,
                                                                   shell)})
    return out


def _child(prior: str, results: Path, quick: bool, redraws: int, chains: int) -> dict:
    env = dict(os.environ, JAX_PLATFORMS=os.environ.get("JAX_PLATFORMS", "cpu"),
               XLA_FLAGS=f"{_FLAG}=2")
    args = [sys.executable, __file__, "--child", prior, "--results", str(results),
            "--redraws", str(redraws), f"--{prior}-chains", str(chains)]
    proc = subprocess.run(args + (["--quick"] if quick else []), env=env,
                          stdout=subprocess.PIPE, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _mean_se_sd(values: list[float]) -> tuple[float, float, float]:
    v = np.asarray(values, dtype=float)
    if v.size < 2:
        return float(v.mean()), float("nan"), float("nan")
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(v.size)), float(v.std(ddof=1))


def _fmt(values: list[float]) -> str:
    m, se, sd = _mean_se_sd(values)
    return f"{m:.3f}" if np.isnan(se) else f"{m:.3f} ± {se:.3f} (SD {sd:.3f}, {len(values)})"


def _row(label: str, instance: str, draws: int, cov: dict, extra: str = "") -> str:
    return (f"{label:28s} {instance:26s} {draws:5d} {cov['outer']:6.3f} {cov['rest']:6.3f} "
            f"{cov['outer'] - cov['rest']:+7.3f} {expected_coverage(draws):6.3f}  {extra}")


def report(res: dict) -> list[str]:
    """The printed tables of a run's results: per prior, every posterior's 90% coverage of f*
    on the outermost shell and the rest, then the noise summary (mean ± SE, SD over units)."""
    lines = ["90% coverage of f* on the outermost shell (outer, 103 points) and the rest (412); "
             "E[D]: a perfect sampler's expectation at that D"]
    for prior in ("hbart", "bnn"):
        if prior not in res:
            continue
        r = res[prior]
        lines += ["", f"== {prior.upper()} ==",
                  f"{'posterior':28s} {'instance':26s} {'D':>5s} {'outer':>6s} {'rest':>6s} "
                  f"{'o − r':>7s} {'E[D]':>6s}  note"]
        for s in r["stored"]:
            lines.append(_row("stored (demo)", f"{s['noise']}/{s['coverage']}", s["draws"],
                              s["coverage90"], f"median ESS {s['ess_median']['outer']:.0f}"
                                               f"/{s['ess_median']['rest']:.0f}"))
        for s in r["more_chains"]:
            lines.append(_row(f"{s['chains']} chains", f"{s['noise']}/ood", s["draws"],
                              s["coverage90"], f"{s['seconds']:.0f} s"))
            for name, sub in s["subsets"].items():
                note = "= the stored draws" if sub["is_stored"] else ""
                lines.append(_row(f"  {name}", f"{s['noise']}/ood", sub["draws"],
                                  sub["coverage90"], note))
        for row in r["redraws"]:
            lines.append(_row(f"redraw {row['redraw']} (demo settings)", f"{row['noise']}/ood",
                              row["draws"], row["coverage90"], f"{row['seconds']:.0f} s"))
        gp = [g for g in res.get("gp", []) if g["design"] == prior]
        d = r["stored"][0]["draws"]
        stored_ood = [s["coverage90"] for s in r["stored"] if s["coverage"] == "ood"]
        blocks = [[sub["coverage90"] for name, sub in s["subsets"].items()
                   if name.startswith("chains")] for s in r["more_chains"]]
        lines += ["", f"{prior.upper()} summary at the demo's D = {d} (perfect sampler "
                      f"{expected_coverage(d):.3f}); outer | outer − rest:"]
        units = [("stored OOD instances", stored_ood),
                 (f"{prior} prior redraws, MCMC", [x["coverage90"] for x in r["redraws"]]),
                 ("exact-GP prior redraws, D draws", [x["coverage90"] for x in gp]),
                 ("exact-GP prior redraws, exact interval",
                  [x["coverage90_exact_interval"] for x in gp])]
        for label, covs in units:
            if covs:
                lines.append(f"  {label:48s} {_fmt([c['outer'] for c in covs]):34s} | "
                             f"{_fmt([c['outer'] - c['rest'] for c in covs])}")
        if any(len(b) > 1 for b in blocks):  # chain luck at fixed f*: SD within an instance
            within = [np.var([c[k] for c in b], ddof=1) for b in blocks if len(b) > 1
                      for k in ("outer",)]
            within_d = [np.var([c["outer"] - c["rest"] for c in b], ddof=1) for b in blocks
                        if len(b) > 1]
            n_blocks = sum(len(b) for b in blocks)
            lines.append(f"  {'demo-size chain blocks of the reruns (same f*)':48s} "
                         f"{_fmt([c['outer'] for b in blocks for c in b])[:5]} (SD within an "
                         f"instance {np.sqrt(np.mean(within)):.3f}, {n_blocks})     | "
                         f"(SD within {np.sqrt(np.mean(within_d)):.3f})")
        if r["more_chains"]:
            lines.append(f"  {'more chains, pooled over the reruns':48s} " + _fmt(
                [s["coverage90"]["outer"] for s in r["more_chains"]]) + f" at D = "
                f"{r['more_chains'][0]['draws']} (perfect sampler "
                f"{expected_coverage(r['more_chains'][0]['draws']):.3f})")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, default=Path("/tmp/base/results"),
                        help="a finished demo run's results folder (read only)")
    parser.add_argument("--quick", action="store_true",
                        help="the bump/ood instance only, HBART 100 chains, fewer redraws")
    parser.add_argument("--redraws", type=int, default=None,
                        help="MCMC prior redraws per OOD instance (default HBART 12, BNN 4; "
                             "--quick 3, 1)")
    parser.add_argument("--gp-redraws", type=int, default=None,
                        help="exact-GP redraws per OOD design (default 200; --quick 50)")
    parser.add_argument("--hbart-chains", type=int, default=None,
                        help="chains of the HBART rerun (default 250, --quick 100)")
    parser.add_argument("--bnn-chains", type=int, default=4, help="chains of the BNN rerun")
    parser.add_argument("--priors", nargs="+", default=["hbart", "bnn"],
                        choices=["hbart", "bnn"])
    parser.add_argument("--json", type=Path, help="write the raw results here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    chains = {"hbart": args.hbart_chains or (100 if args.quick else 250),
              "bnn": args.bnn_chains}
    if args.child:
        print(json.dumps(run_prior(args.child, args.results, args.quick, args.redraws or 0,
                                   chains[args.child])))
        return 0
    missing = [p for prior in args.priors for n in NOISES for c in COVERAGES
               for kind in ("tasks", "samples")
               for p in [_store_path(args.results, kind, prior, n, c)] if not p.exists()]
    if missing:
        print(f"missing stores (a finished demo run?): {', '.join(map(str, missing))}",
              file=sys.stderr)
        return 1
    default_redraws = {"hbart": 3, "bnn": 1} if args.quick else {"hbart": 12, "bnn": 4}
    start = time.perf_counter()
    res: dict = {"chains": chains}
    for prior in args.priors:
        n = args.redraws if args.redraws is not None else default_redraws[prior]
        res[prior] = _child(prior, args.results, args.quick, n, chains[prior])
    gp_redraws = args.gp_redraws or (50 if args.quick else 200)
    draws_of = {p: res[p]["stored"][0]["draws"] for p in args.priors}
    res["gp"] = run_gp(args.results, args.quick, gp_redraws, draws_of)
    res["seconds"] = time.perf_counter() - start
    print("\n".join(report(res)))
    print(f"\n({res['seconds'] / 60:.1f} min)")
    if args.json:
        args.json.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
