"""Simulation-based calibration of the reference posteriors at a real task's shape.

Every replicate is one instance built exactly as the pipeline builds one, on Concrete (d = 8,
n = 348, n_eval = 515): the covariate store and the prior fit of the workflow's own steps
(``make_covariate_store``, ``postrisk.workflow.steps.fit_prior``; built once in ``--work``),
training inputs drawn for the replicate's seed by the coverage scenario, f* from the fitted
prior, y from the noise model at the configured strength (``build_sample``), and the reference
posterior from the workflow's posterior step (``build_task``) at the chosen settings: ``paper``
(config.yaml's ``posterior.<prior>``: BNN 4 chains × (500 + 250), target acceptance 0.9,
float64) or ``demo`` (presets/demo.yaml's). The seeds start at 1000, so no replicate is one of
the pipeline's instances (seeds 0–12); replicate r runs every (noise, coverage) cell asked for
before replicate r + 1, so a run cut short stays balanced. ``--seed-base 0`` builds the
pipeline's own instances instead (the report lists them apart, outside the pooled SBC).

One CSV row per replicate (appended as each finishes; a rerun skips the rows already there):
the settings, the cell and seed, D, the per-replicate 90% coverage over all evaluation points,
the mean z² = (f* − posterior mean)²/posterior variance over them, the same two for the
posterior widened and narrowed by 20% about its mean (negative controls), the rank of f* at one
fixed random evaluation point (the same point for every replicate) and the rank of the
training log-likelihood, the max and median R̂ and the median bulk ESS over the evaluation
points, divergences, mean step size, mean tree depth and tree-depth hits (the MCMC families).

``report`` pools the rows per (prior, settings), with and without the R̂ ≤ 1.05 validity rule:

* coverage — the mean of the per-replicate coverages with its 95% t-interval over replicates
  (the evaluation points of one replicate share one f* and one posterior, so the replicate is
  the unit), against what an exact sampler gives: ``nominal_iid`` = 0.9·(D − 1)/(D + 1) for D
  independent draws (``perfect_sampler_coverage``), and ``nominal_ac``, the same for draws as
  autocorrelated as the replicate's (each chain an AR(1) series whose lag-1 correlation gives
  the replicate's median ESS/D, the coverage of the pooled chains' central interval by
  simulation). The check uses ``nominal_ac`` for the MCMC families and ``nominal_iid`` for the
  exact GP (independent draws, where the two agree);
* mean z² with its t-interval, against what an exact sampler gives, (1 + 1/E)(E − 1)/(E − 3)
  with E the draws' ESS (D for the GP): the estimated mean and variance are noisy, which lifts
  z² above 1 by O(1/E) (1.003 at E = 1,000);
* the χ² p-values of the two ranks' uniformity (10 bins), each a single point per replicate;
* the share of replicates with z² below 0.86, beside what a χ²_k/k law with the replicates'
  spread gives (k = 2/SD²), and the GP control's share.

Usage (one prior per process: bartz needs JAX x64 off, the BNN float64)::

    python benchmarks/sbc_real_shape.py run --prior bnn --settings paper --replicates 25
    python benchmarks/sbc_real_shape.py run --prior hbart --settings demo --replicates 10
    python benchmarks/sbc_real_shape.py run --prior gp --settings paper --replicates 25
    python benchmarks/sbc_real_shape.py report
    python benchmarks/sbc_real_shape.py rhat-null   # R̂ of exact draws, 4 per chain
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
# The demo's configuration names a method outside the package (examples.knn_uncertainty), which
# the workflow imports from the checkout; reading that configuration here needs the same path.
sys.path.insert(0, str(REPO))
CSV = REPO / "benchmarks" / "measured" / "sbc_real_shape.csv"
DATASET = "concrete"
SEED_BASE = 1000
#: The evaluation point whose rank of f* is tested, the same in every replicate.
POINT_SEED = 20261205
RHAT_RULE = 1.05
Z2_LOW = 0.86
CONTROL_FACTORS = {"wide": 1.2, "narrow": 0.8}
SETTINGS_LAYERS = {"paper": (), "demo": (REPO / "presets" / "demo.yaml",)}


def setup(prior: str, cfg: dict, work: Path):
    """Concrete's covariate store and ``prior``'s fit, as the pipeline's steps build them."""
    from postrisk.covariates.build import load_covariates, make_covariate_store
    from postrisk.workflow.steps import fit_prior

    store = work / "covariates" / f"{DATASET}.zarr"
    fitted = work / "priors" / DATASET / f"{prior}.json"
    if not store.exists():
        store.parent.mkdir(parents=True, exist_ok=True)
        make_covariate_store(DATASET, cfg["covariates"], cfg["sizes"]["n_eval_cap"], store)
    if fitted.exists():
        params = json.loads(fitted.read_text())
    else:
        fitted.parent.mkdir(parents=True, exist_ok=True)
        params = fit_prior(DATASET, prior, store, cfg[f"{prior}_prior"], fitted)
    return load_covariates(store), params


def draw_checks(draws: np.ndarray, f_true: np.ndarray, mean: np.ndarray,
                var: np.ndarray) -> dict:
    """One replicate's coverage and mean z² over its evaluation points (draws × points; the
    posterior mean and variance as the task store holds them), and the same for the draws
    moved away from (``wide``) and towards (``narrow``) their mean by 20%."""
    from postrisk.tasks.diagnostics import covered_central

    row = {"coverage90": float(covered_central(draws, f_true).mean()),
           "z2_mean": float(np.mean((f_true - mean) ** 2 / var))}
    centre = draws.mean(axis=0)
    for name, factor in CONTROL_FACTORS.items():
        scaled = centre + factor * (draws - centre)
        row[f"coverage90_{name}"] = float(covered_central(scaled, f_true).mean())
        row[f"z2_mean_{name}"] = float(np.mean((f_true - centre) ** 2
                                               / scaled.var(axis=0, ddof=1)))
    return row


def replicate_row(task, prior: str, settings_name: str, point: int, seconds: float) -> dict:
    f_true = task["f_true_eval"].values
    draws = task["posterior_draws"].values.astype(np.float64)
    sampler = json.loads(task.attrs["sampler_settings"])
    per_chain = sampler.get("per_chain", {})
    row = {"prior": prior, "settings": settings_name, "noise": task.attrs["noise"],
           "coverage": task.attrs["coverage"], "seed": int(task.attrs["seed"]),
           "chains": int(task.attrs["chains"]), "draws": int(draws.shape[0]),
           "n": int(task.sizes["train"]), "n_eval": int(task.sizes["eval"]),
           **draw_checks(draws, f_true, task["posterior_mean"].values,
                         task["posterior_var"].values),
           "rank_point": int(task["rank_true"].values[point]), "point": point,
           "rank_loglik": int(task.attrs["rank_loglik"])}
    has_rhat = "rhat" in task
    row.update({
        "max_rhat": float(np.nanmax(task["rhat"].values)) if has_rhat else np.nan,
        "median_rhat": float(np.nanmedian(task["rhat"].values)) if has_rhat else np.nan,
        "median_ess": float(np.nanmedian(task["ess"].values)) if has_rhat else float(
            draws.shape[0]),
        "divergences": int(sum(per_chain.get("divergences", [0]))),
        "step_size_mean": float(np.mean(per_chain["step_size"])) if "step_size" in per_chain
        else np.nan,
        "tree_depth_mean": float(np.mean(per_chain["mean_tree_depth"]))
        if "mean_tree_depth" in per_chain else np.nan,
        "tree_depth_hits": int(sum(per_chain.get("max_tree_depth_hits", [0]))),
        "seconds": round(seconds, 1)})
    return row


def done_keys(path: Path) -> set[tuple]:
    if not path.exists():
        return set()
    frame = pd.read_csv(path)
    return set(zip(frame["prior"], frame["settings"], frame["noise"], frame["coverage"],
                   frame["seed"].astype(int), strict=True))


def append_row(path: Path, row: dict) -> None:
    """Append ``row`` under the file's header (its columns in the header's order)."""
    new = not path.exists()
    path.parent.mkdir(parents=True, exist_ok=True)
    fields = list(row) if new else next(csv.reader(path.open()))
    if set(fields) != set(row):
        raise ValueError(f"{path} has the columns {fields}, the row {list(row)}")
    with path.open("a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        if new:
            writer.writeheader()
        writer.writerow(row)


def run(args: argparse.Namespace) -> None:
    from postrisk.core.jax_env import use_host_devices

    use_host_devices(args.devices)  # before JAX is imported: one CPU device per core
    from postrisk.core.logs import terminal_logging

    with terminal_logging():
        run_replicates(args)


def run_replicates(args: argparse.Namespace) -> None:
    from postrisk.grid.config import read_config
    from postrisk.planning.conditions import training_size
    from postrisk.tasks.generate import TaskKey, build_sample, build_task

    cfg = read_config(*SETTINGS_LAYERS[args.settings], base=REPO / "config.yaml")
    cfg["covariates"]["prefer_offline_package"] = True  # Concrete from its PyPI copy
    settings = dict(cfg["posterior"][args.prior])
    label = args.settings
    # a sampler setting between the demo's and the paper's, recorded in the settings column
    for name in ("warmup", "chains"):
        if getattr(args, name) is not None:
            settings[name] = getattr(args, name)
            label += f"-{name}{getattr(args, name)}"
    cov, params = setup(args.prior, cfg, Path(args.work))
    n = training_size(DATASET, cfg["sizes"].get("n_cap"))
    strength = float(cfg["noise_model"]["strength"])
    point = int(np.random.default_rng(POINT_SEED).integers(cov.eval_index.size))
    done = done_keys(Path(args.out))
    cells = [(noise, coverage) for noise in args.noise for coverage in args.coverage]
    print(f"{args.prior} at {label} settings {settings}: {args.replicates} replicates "
          f"× {len(cells)} cells, n = {n}, n_eval = {cov.eval_index.size}, s = {strength}",
          flush=True)
    for r in range(args.replicates):
        for noise, coverage in cells:
            key = TaskKey(DATASET, args.prior, noise, coverage, args.seed_base + r)
            if (args.prior, label, noise, coverage, key.seed) in done:
                continue
            start = time.perf_counter()
            sample = build_sample(key, cov, params, n, noise_strength=strength)
            task = build_task(sample, settings)
            row = replicate_row(task, args.prior, label, point,
                                time.perf_counter() - start)
            append_row(Path(args.out), row)
            print(f"{key.label}: coverage {row['coverage90']:.3f}, z² {row['z2_mean']:.3f}, "
                  f"max R̂ {row['max_rhat']:.3f}, {row['seconds']:.0f} s", flush=True)


@cache
def autocorrelated_coverage(chains: int, per_chain: int, rho: float, reps: int = 100_000,
                            level: float = 0.9) -> float:
    """Coverage of the central ``level`` interval of ``chains`` stationary Gaussian AR(1)
    chains (lag-1 correlation ``rho``, ``per_chain`` draws each) for an independent truth from
    the same distribution: what an exact but autocorrelated sampler gives (by simulation, SE
    about 0.001 at 100,000 repetitions; at ``rho`` = 0 the exact value for independent draws,
    :func:`~postrisk.evaluation.posterior_checks.perfect_sampler_coverage`)."""
    from postrisk.evaluation.posterior_checks import perfect_sampler_coverage
    from postrisk.tasks.diagnostics import covered_central

    if rho <= 0.0:
        return perfect_sampler_coverage(chains * per_chain, level)
    rng = np.random.default_rng([chains, per_chain, int(round(rho * 1000))])
    hits = 0
    batch = max(1, 2_000_000 // (chains * per_chain))
    for start in range(0, reps, batch):
        m = min(batch, reps - start)
        z = np.empty((per_chain, chains, m))
        z[0] = rng.standard_normal((chains, m))
        scale = np.sqrt(1.0 - rho**2)
        for t in range(1, per_chain):
            z[t] = rho * z[t - 1] + scale * rng.standard_normal((chains, m))
        draws = z.transpose(1, 0, 2).reshape(chains * per_chain, m)
        hits += int(covered_central(draws, rng.standard_normal(m), level).sum())
    return hits / reps


def rho_for_ess_ratio(ratio: float) -> float:
    """Lag-1 correlation of an AR(1) series whose ESS/D is ``ratio``: (1 − ρ)/(1 + ρ)."""
    ratio = float(np.clip(ratio, 1e-3, 1.0))
    return (1.0 - ratio) / (1.0 + ratio)


def nominal_z2(ess: float) -> float:
    """E[(f − m̂)²/v̂] for f and E draws exchangeable Gaussian: (1 + 1/E)(E − 1)/(E − 3)."""
    return (1.0 + 1.0 / ess) * (ess - 1.0) / (ess - 3.0)


def nominals(frame: pd.DataFrame) -> pd.DataFrame:
    """Per replicate: the coverage an exact sampler gives with independent draws and with
    draws as autocorrelated as the replicate's, and the z² it gives."""
    from postrisk.evaluation.posterior_checks import perfect_sampler_coverage

    frame = frame.copy()
    frame["nominal_iid"] = [perfect_sampler_coverage(int(d)) for d in frame["draws"]]
    exact = frame["prior"] == "gp"
    ratio = (frame["median_ess"] / frame["draws"]).clip(upper=1.0)
    rho = (ratio.map(rho_for_ess_ratio) * 50).round() / 50  # cached on a 0.02 grid
    frame["nominal_ac"] = [
        iid if is_exact else autocorrelated_coverage(int(c), int(d) // int(c), float(r))
        for iid, is_exact, c, d, r in zip(frame["nominal_iid"], exact, frame["chains"],
                                          frame["draws"], rho, strict=True)]
    ess = frame["draws"].where(exact, frame["median_ess"].clip(upper=frame["draws"]))
    frame["nominal_z2"] = ess.map(nominal_z2)
    return frame


def below_under_chi2(z2: pd.Series, threshold: float = Z2_LOW) -> float:
    """The share of replicates with mean z² below ``threshold`` that a χ²_k/k law with the
    replicates' spread gives (k = 2/SD²: the mean z² over points whose errors are correlated
    behaves like an average of k independent squares, its median below its mean of 1)."""
    from scipy import stats

    if len(z2) < 2:
        return np.nan
    k = 2.0 / float(z2.std(ddof=1)) ** 2
    return float(stats.chi2.cdf(threshold * k, k))


def loglik_rank_ks(ranks: pd.Series, draws: int) -> float:
    """KS p-value of the ranks (0 … D, uniform for a calibrated posterior), each spread
    uniformly over its cell of width 1/(D + 1) so that the reference is the continuous
    uniform (randomised with a fixed seed)."""
    from scipy import stats

    rng = np.random.default_rng(0)
    u = (ranks.to_numpy(dtype=float) + rng.uniform(size=len(ranks))) / (draws + 1)
    return float(stats.kstest(u, "uniform").pvalue)


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per (prior, settings, validity rule): the pooled checks."""
    from postrisk.evaluation.posterior_checks import mean_t_interval, rank_uniformity_pvalue

    rows = []
    frame = nominals(frame)
    for (prior, settings), group in frame.groupby(["prior", "settings"], sort=False):
        valid = group["max_rhat"].isna() | (group["max_rhat"] <= RHAT_RULE)
        for rule, part in (("all", group), (f"R̂ ≤ {RHAT_RULE}", group[valid])):
            if part.empty:  # say so: e.g. HBART's few draws per chain keep R̂ above the rule
                rows.append({"prior": prior, "settings": settings, "replicates": rule, "n": 0})
                continue
            d = int(part["draws"].iloc[0])
            cov, cov_lo, cov_hi = mean_t_interval(part["coverage90"])
            z2, z2_lo, z2_hi = mean_t_interval(part["z2_mean"])
            check = "nominal_iid" if prior == "gp" else "nominal_ac"
            nominal_cov = float(part[check].mean())
            nominal_z = float(part["nominal_z2"].mean())
            row = {"prior": prior, "settings": settings, "replicates": rule, "n": len(part),
                   "D": d, "coverage90": cov, "cov_lo": cov_lo, "cov_hi": cov_hi,
                   "nominal_iid": float(part["nominal_iid"].mean()),
                   "nominal_ac": float(part["nominal_ac"].mean()),
                   "coverage_ok": bool(cov_lo <= nominal_cov <= cov_hi),
                   "z2": z2, "z2_lo": z2_lo, "z2_hi": z2_hi, "nominal_z2": nominal_z,
                   "z2_ok": bool(z2_lo <= nominal_z <= z2_hi),
                   "p_rank_point": rank_uniformity_pvalue(part["rank_point"].to_numpy(), d),
                   "p_rank_loglik": rank_uniformity_pvalue(part["rank_loglik"].to_numpy(), d),
                   # the log-likelihood rank's mean on [0, 1] (0.5 for a calibrated posterior;
                   # above: the draws under-fit the training data, below: they over-fit) and a
                   # KS test of uniformity, which has more power than 10 bins at few replicates
                   "mean_rank_loglik": float((part["rank_loglik"] / d).mean()),
                   "p_ks_loglik": loglik_rank_ks(part["rank_loglik"], d),
                   "share_z2_below_0.86": float((part["z2_mean"] < Z2_LOW).mean()),
                   "z2_sd": float(part["z2_mean"].std(ddof=1)) if len(part) > 1 else np.nan,
                   "share_below_chi2": below_under_chi2(part["z2_mean"]),
                   "max_rhat_median": (float(part["max_rhat"].median())
                                       if part["max_rhat"].notna().any() else np.nan),
                   }
            for name in CONTROL_FACTORS:  # a control is rejected when either check fails it
                c, c_lo, c_hi = mean_t_interval(part[f"coverage90_{name}"])
                z, z_lo, z_hi = mean_t_interval(part[f"z2_mean_{name}"])
                row.update({f"{name}_coverage90": c, f"{name}_z2": z,
                            f"{name}_rejected": bool(not c_lo <= nominal_cov <= c_hi
                                                     or not z_lo <= nominal_z <= z_hi)})
            rows.append(row)
    table = pd.DataFrame(rows)
    table["D"] = table["D"].map(lambda d: "n/a" if pd.isna(d) else int(d))  # beside empty rows
    return table


def per_cell(frame: pd.DataFrame) -> pd.DataFrame:
    from postrisk.evaluation.posterior_checks import mean_t_interval

    rows = []
    for (prior, settings, noise, coverage), g in frame.groupby(
            ["prior", "settings", "noise", "coverage"], sort=False):
        cov = mean_t_interval(g["coverage90"])
        z2 = mean_t_interval(g["z2_mean"])
        rows.append({"prior": prior, "settings": settings, "noise": noise,
                     "coverage": coverage, "n": len(g),
                     "coverage90": f"{cov[0]:.3f} [{cov[1]:.3f}, {cov[2]:.3f}]",
                     "z2": f"{z2[0]:.3f} [{z2[1]:.3f}, {z2[2]:.3f}]",
                     "max R̂ (median)": (round(float(g["max_rhat"].median()), 3)
                                        if g["max_rhat"].notna().any() else np.nan)})
    return pd.DataFrame(rows)


def report(args: argparse.Namespace) -> None:
    from postrisk.report.tables import markdown_table

    frame = pd.read_csv(args.out)
    replicates = frame[frame["seed"] >= SEED_BASE]
    print(markdown_table(summary(replicates)))
    print()
    print(markdown_table(per_cell(replicates)))
    pipeline = frame[frame["seed"] < SEED_BASE]
    if not pipeline.empty:
        print("\nThe pipeline's own seeds, built the same way:\n")
        print(markdown_table(pipeline[["prior", "settings", "noise", "coverage", "seed",
                                       "coverage90", "z2_mean", "max_rhat"]]))


def rhat_null(args: argparse.Namespace) -> None:
    """The split-R̂ an exact sampler shows: independent N(0, 1) draws arranged as ``chains`` ×
    ``per_chain``, at ``points`` independent evaluation points, ``reps`` times; the max and
    median over the points and the share above the 1.05 rule, as the task stores compute R̂
    (:func:`postrisk.tasks.diagnostics.rhat_and_ess`). What R̂ reads with 4 draws per chain
    when nothing is wrong."""
    from postrisk.report.tables import markdown_table
    from postrisk.tasks.diagnostics import rhat_and_ess

    rng = np.random.default_rng(0)
    rows = []
    for chains in args.chains:
        for per_chain in args.per_chain:
            stats = []
            for _ in range(args.reps):
                rhat, _ = rhat_and_ess(rng.standard_normal((chains * per_chain, args.points)),
                                       chains)
                stats.append((rhat.max(), np.median(rhat), (rhat > RHAT_RULE).mean()))
            stats = np.array(stats)
            rows.append({"chains": chains, "per chain": per_chain, "points": args.points,
                         "max R̂ (range over reps)": f"{stats[:, 0].min():.3f}–"
                                                     f"{stats[:, 0].max():.3f}",
                         "median R̂": float(stats[:, 1].mean()),
                         "share > 1.05": float(stats[:, 2].mean())})
    print(markdown_table(pd.DataFrame(rows)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    go = sub.add_parser("run", help="build and condition replicates; append to the CSV")
    go.add_argument("--prior", choices=("gp", "hbart", "bnn"), required=True)
    go.add_argument("--settings", choices=tuple(SETTINGS_LAYERS), default="paper")
    go.add_argument("--warmup", type=int, default=None,
                    help="the sampler's warm-up iterations instead of the settings' own "
                         "(recorded in the settings column)")
    go.add_argument("--chains", type=int, default=None,
                    help="the sampler's chains instead of the settings' own (HBART: a subset of "
                         "the paper's independent chains; recorded in the settings column)")
    go.add_argument("--replicates", type=int, default=25, help="per (noise, coverage) cell")
    go.add_argument("--noise", nargs="+", default=["smooth_monotone", "bump"])
    go.add_argument("--coverage", nargs="+", default=["balanced", "ood"])
    go.add_argument("--seed-base", type=int, default=SEED_BASE,
                    help="first seed; below 1000: the pipeline's own instances, which the "
                         "report lists apart from the SBC's replicates")
    go.add_argument("--devices", type=int, default=2, help="CPU devices the chains use")
    go.add_argument("--work", default=str(REPO / "runs" / "sbc_real_shape"),
                    help="covariate store and prior fits, reused")
    go.add_argument("--out", default=str(CSV))
    rep = sub.add_parser("report", help="the pooled checks, as Markdown")
    rep.add_argument("--out", default=str(CSV))
    null = sub.add_parser("rhat-null", help="R̂ of exact draws at a sampler's chain layout")
    null.add_argument("--chains", type=int, nargs="+", default=[250, 50, 4])
    null.add_argument("--per-chain", type=int, nargs="+", default=[4])
    null.add_argument("--points", type=int, default=515)
    null.add_argument("--reps", type=int, default=10)
    args = parser.parse_args()
    {"run": run, "report": report, "rhat-null": rhat_null}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
