"""Simulation-based calibration of the classification reference posteriors at a real task's
shape, for each prior (GP latents, network weights).

Every replicate is one classification instance built exactly as the workflow builds one
(:func:`postrisk.classification.generate.build_classification_task`: training rows by the
coverage scenario, the amplitude, f* from the prior, the temperature field, labels, NUTS), on
Concrete's covariate store and the dataset's GP or BNN prior fit by the workflow's own steps
(``make_covariate_store``, ``postrisk.workflow.steps.fit_prior``; built once in ``--work``), at
the sizes and NUTS settings of ``make classification``'s preset (config.yaml, then
presets/demo.yaml, then presets/classification.yaml: its n cap, K, temperature fields,
coverages and ``posterior.<prior>``). The seeds start at 1000, so no replicate is one of the
preset's instances (seed 0); replicate r runs every (noise, coverage) cell before replicate
r + 1, so a run cut short stays balanced.

One CSV row per replicate (appended as each finishes; a rerun skips rows already there): the
cell and seed, n, n_eval, K, D; recomputed from the store's draws, the 90% coverage of π* over
every (evaluation point, class) pair; the same for the posterior's latent draws widened and
narrowed by 20% about their mean before the softmax (negative controls, no sampler run of their
own); the coverage of f* (the store's flags); the rank of π*_k(x) and of f*_k(x) at one fixed
(point, class) (the same in every replicate); max R̂ and median ESS of π over the pairs,
divergences, mean tree depth, seconds.

``report`` pools per prior: the mean coverage over replicates with its 95% t-interval, against
a perfect sampler's 0.9·(D − 1)/(D + 1), for the posterior and the two controls; the χ²
p-values of the fixed pair's ranks (one per replicate: independent); the replicates with
max R̂ > 1.05 (the seed rule) counted, and the pooled coverage without them.

Usage (2 host devices, one per core; one prior per process)::

    python benchmarks/classification_sbc_real_shape.py run --prior gp --replicates 25
    python benchmarks/classification_sbc_real_shape.py run --prior bnn --replicates 25
    python benchmarks/classification_sbc_real_shape.py report
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the demo's configuration names a method in examples/
CSV = REPO / "benchmarks" / "measured" / "classification_sbc_real_shape.csv"
DATASET = "concrete"
SEED_BASE = 1000
#: The (evaluation point, class) whose ranks are tested, the same in every replicate.
POINT_SEED = 20261208
RHAT_RULE = 1.05
CONTROL_FACTORS = {"wide": 1.2, "narrow": 0.8}
LAYERS = (REPO / "presets" / "demo.yaml", REPO / "presets" / "classification.yaml")


def preset_config() -> dict:
    from postrisk.grid.config import read_config

    cfg = read_config(*LAYERS, base=REPO / "config.yaml")
    cfg["covariates"]["prefer_offline_package"] = True
    return cfg


def setup(prior: str, cfg: dict, work: Path):
    """Concrete's covariate store and ``prior``'s regression fit, as the workflow's steps build
    them."""
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


def replicate_row(ds, latent_eval: np.ndarray, pair: tuple[int, int], seconds: float) -> dict:
    """One replicate's checks, recomputed from its store and its latent draws."""
    from postrisk.classification.link import class_probabilities
    from postrisk.tasks.diagnostics import covered_central

    draws = ds["prob_draws"].values.astype(np.float64)
    d = draws.shape[0]
    truth = ds["prob_true_eval"].values
    tau = ds["temperature_eval"].values
    row = {**{k: ds.attrs[k] for k in ("prior", "noise", "coverage", "classes", "seed")},
           "n": int(ds.attrs["n"]), "n_eval": int(ds.attrs["n_eval"]), "draws": d,
           "coverage90": float(covered_central(draws.reshape(d, -1), truth.reshape(-1)).mean()),
           "simplex_max_dev": float(np.max(np.abs(draws.sum(axis=-1) - 1.0)))}
    centre = latent_eval.mean(axis=0)
    for name, factor in CONTROL_FACTORS.items():
        probs = class_probabilities(centre + factor * (latent_eval - centre), tau)
        row[f"coverage90_{name}"] = float(
            covered_central(probs.reshape(d, -1), truth.reshape(-1)).mean())
    point, k = pair
    summary = json.loads(ds.attrs["sampler_summary"])["per_chain"]
    row.update({
        "coverage90_latent": float(ds["covered90_latent"].values.mean()),
        "point": point, "class": k,
        "rank_pi": int(ds["rank_true"].values[point, k]),
        "rank_f": int(ds["rank_true_latent"].values[point, k]),
        "max_rhat": float(ds["rhat"].values.max()) if "rhat" in ds else np.nan,
        "median_ess": float(np.median(ds["ess"].values)) if "ess" in ds else float(d),
        "divergences": int(sum(summary["divergences"])),
        "tree_depth_mean": float(np.mean(summary["mean_tree_depth"])),
        "seconds": round(seconds, 2)})
    return row


def done_keys(path: Path) -> set[tuple]:
    if not path.exists():
        return set()
    frame = pd.read_csv(path)
    return set(zip(frame["prior"], frame["noise"], frame["coverage"], frame["seed"].astype(int),
                   strict=True))


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
    from postrisk.classification.generate import build_instance, evaluation_rows
    from postrisk.classification.key import ClassificationKey
    from postrisk.families.classification.config import settings_of
    from postrisk.planning.conditions import training_size

    cfg = preset_config()
    settings = settings_of(cfg["families"]["classification"])
    if args.warmup is not None:  # a longer warm-up than the preset's (write to another --out)
        settings["posterior"][args.prior]["warmup"] = args.warmup
    cov, params = setup(args.prior, cfg, Path(args.work))
    n = training_size(DATASET, cfg["sizes"].get("n_cap"))
    if settings["n_cap"]:
        n = min(n, int(settings["n_cap"]))
    k = int(settings["classes"][0])
    n_eval = evaluation_rows(DATASET, cov.eval_index, settings["n_eval_cap"]).size
    rng = np.random.default_rng(POINT_SEED)
    pair = (int(rng.integers(n_eval)), int(rng.integers(k)))
    cells = [(noise, coverage) for noise in settings["noise_modes"]
             for coverage in settings["coverages"]]
    done = done_keys(Path(args.out))
    print(f"{args.prior}: {args.replicates} replicates × {len(cells)} cells, n = {n}, "
          f"n_eval = {n_eval}, K = {k}, NUTS {settings['posterior'][args.prior]}",
          flush=True)
    for r in range(args.replicates):
        for noise, coverage in cells:
            key = ClassificationKey(DATASET, args.prior, noise, coverage, k, args.seed_base + r)
            if (args.prior, noise, coverage, key.seed) in done:
                continue
            t0 = time.perf_counter()
            ds, posterior = build_instance(key, cov, params, n, settings)
            row = replicate_row(ds, posterior.latent_eval, pair, time.perf_counter() - t0)
            append_row(Path(args.out), row)
            print(f"{key.label}: coverage {row['coverage90']:.3f} (wide "
                  f"{row['coverage90_wide']:.3f}, narrow {row['coverage90_narrow']:.3f}), "
                  f"max R̂ {row['max_rhat']:.3f}, {row['seconds']:.1f} s", flush=True)


def report(args: argparse.Namespace) -> pd.DataFrame:
    from postrisk.evaluation.posterior_checks import (
        mean_t_interval,
        perfect_sampler_coverage,
        rank_uniformity_pvalue,
    )

    frame = pd.read_csv(args.out)
    rows = []
    for prior, group in frame.groupby("prior", sort=False):
        d = int(group["draws"].iloc[0])
        nominal = perfect_sampler_coverage(d)
        ok = group[group["max_rhat"] <= RHAT_RULE]
        row = {"prior": prior, "replicates": len(group), "D": d, "nominal": round(nominal, 4),
               "rhat_over_rule": int((group["max_rhat"] > RHAT_RULE).sum())}
        for column, name in (("coverage90", "posterior"), ("coverage90_wide", "widened 20%"),
                             ("coverage90_narrow", "narrowed 20%")):
            mean, lo, hi = mean_t_interval(group[column].to_numpy())
            row[name] = f"{mean:.4f} [{lo:.4f}, {hi:.4f}]" + (
                " ok" if lo <= nominal <= hi else " OFF")
        mean, lo, hi = mean_t_interval(ok["coverage90"].to_numpy())
        row["posterior, R̂ ≤ 1.05"] = f"{mean:.4f} [{lo:.4f}, {hi:.4f}]"
        mean, lo, hi = mean_t_interval(group["coverage90_latent"].to_numpy())
        row["coverage f*"] = f"{mean:.4f} [{lo:.4f}, {hi:.4f}]"
        row["rank p (π)"] = round(rank_uniformity_pvalue(group["rank_pi"].to_numpy(), d), 4)
        row["rank p (f)"] = round(rank_uniformity_pvalue(group["rank_f"].to_numpy(), d), 4)
        row["max R̂"] = round(float(group["max_rhat"].max()), 4)
        row["simplex max dev"] = float(group["simplex_max_dev"].max())
        row["seconds median"] = round(float(group["seconds"].median()), 1)
        rows.append(row)
    table = pd.DataFrame(rows)
    with pd.option_context("display.width", 250, "display.max_columns", 30):
        print(table.to_string(index=False))
    return table


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run", help="build replicates and append their rows")
    p_run.add_argument("--prior", choices=("gp", "bnn"), required=True)
    p_run.add_argument("--replicates", type=int, default=25)
    p_run.add_argument("--seed-base", type=int, default=SEED_BASE)
    p_run.add_argument("--devices", type=int, default=2)
    p_run.add_argument("--warmup", type=int, default=None,
                       help="NUTS warm-up iterations instead of the preset's (with --out)")
    p_run.add_argument("--work", default=str(REPO / "runs" / "classification_sbc"))
    for p in (p_run, sub.add_parser("report", help="pool the rows per prior")):
        p.add_argument("--out", default=str(CSV))
    args = parser.parse_args(argv)
    (run if args.command == "run" else report)(args)


if __name__ == "__main__":
    main()
