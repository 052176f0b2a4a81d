"""The paper-settings slice beside the paper's numbers and the demo's same cell.

`make paper-slice` runs Concrete × smooth_monotone × balanced × {GP, HBART, BNN} at the paper's
settings (presets/paper_slice.yaml). This script prints, as Markdown:

1. Table 3 per prior over the cell's scored instances (before any fit is scored, its valid
   seeds) — instances, points, pooled 90% coverage (95% t-interval over the
   instances, their number beside it), the rank histogram's largest deviation, the median
   relative MCSE of the variance, the largest R̂, the median corr(m, f*) — for the slice, for
   the demo's instances of the same cell (recomputed from its task stores with the same
   functions), for all of the demo's instances (its table3.csv) and the paper's (pooled over
   its whole grid);
2. each method's mean Spearman ρ over the cell's scored instances with the three EU targets
   (posterior excess risk, posterior variance, point-wise excess risk) and, for the methods
   that estimate AU, with σ²_ε, per prior and over the three priors, slice beside demo, the
   paper's value where its text gives one; every slice mean per prior with its 95% t-interval
   over the instances and their number (three instances say little: t(0.975, 2) = 4.30);
3. the order of the methods by mean ρ with the posterior excess risk, slice and demo.

    .venv/bin/python benchmarks/paper_slice.py --slice runs/paper_slice/results \
        --demo results
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from postrisk.evaluation.paper import paper_numbers, paper_value
from postrisk.evaluation.posterior_checks import mean_t_interval, table3
from postrisk.methods.registry import display_name
from postrisk.planning.seeds import selection_file
from postrisk.report.checks import collect_checks

CELL = ("concrete", "smooth_monotone", "balanced")
PRIORS = ("gp", "hbart", "bnn")
#: Table 3's columns shown, as this script names them.
TABLE3 = {"instances": "inst.", "points": "points", "coverage90_pooled": "cov90",
          "coverage90_ci": "cov90 CI", "rank_hist_max_dev_pp": "rank dev pp",
          "mcse_var_pct_median": "MCSE %", "max_rhat": "max R̂",
          "corr_mean_ftrue_median": "corr(m,f*)"}
PAPER3 = {"coverage90_pooled": "paper_coverage90_pooled", "coverage90_ci": "paper_coverage90_ci",
          "mcse_var_pct_median": "paper_mcse_var_pct_median",
          "corr_mean_ftrue_median": "paper_corr_mean_ftrue_median"}
TARGETS = {"spearman_eu_posterior_excess_risk": "ρ EU risk",
           "spearman_eu_posterior_variance": "ρ EU var",
           "spearman_eu_pointwise_excess_risk": "ρ EU pointwise",
           "spearman_au": "ρ AU"}


def cell_stores(results: Path, prior: str) -> list[Path]:
    dataset, noise, coverage = CELL
    return sorted((results / "tasks" / dataset / prior / noise / coverage).glob("*.zarr"))


def used_seeds(results: Path, prior: str) -> set[int]:
    """The seeds the run scored for ``prior`` on the cell (its score table's rows) or, before
    any fit is scored (`make embedded-suite` builds the posteriors alone), the cell's valid
    seeds (its seed-selection file)."""
    scores = score_table(results, prior)
    if scores is not None:
        return set(scores["seed"].astype(int))
    selection = Path(selection_file(CELL, root=str(results)))
    return set(json.loads(selection.read_text())["valid"]) if selection.exists() else set()


def cell_table3(results: Path) -> pd.DataFrame:
    """Table 3 over the cell's scored instances of ``results`` (the valid seeds), per prior."""
    paths = [p for prior in PRIORS for p in cell_stores(results, prior)
             if int(p.name.split(".")[0]) in used_seeds(results, prior)]
    if not paths:
        return pd.DataFrame()
    instances, points = collect_checks(paths)
    table = table3(instances, points)
    table["max_rhat"] = [float(instances.loc[instances["prior"] == p, "max_rhat"].max())
                         for p in table["prior"]]
    return table.set_index("prior")


def score_table(results: Path, prior: str) -> pd.DataFrame | None:
    dataset, noise, coverage = CELL
    path = results / "scores" / dataset / prior / noise / f"{coverage}.csv"
    if not path.exists():
        return None
    frame = pd.read_csv(path)
    return frame[(frame["kind"] == "method") & (frame["status"] == "ok")]


def method_rho(results: Path) -> pd.DataFrame:
    """Mean ρ per (method, prior) and over the priors (each prior's mean weighted alike); per
    (method, prior) also the number of instances (``n``) and, per target, the 95% t-interval
    of the mean over them (``<target>_lo``, ``<target>_hi``)."""
    frames = [f for p in PRIORS if (f := score_table(results, p)) is not None]
    if not frames:
        return pd.DataFrame()
    scores = pd.concat(frames)
    rows = []
    for (method, prior), group in scores.groupby(["method", "prior"]):
        row = {"method": method, "prior": prior, "n": len(group)}
        for target in TARGETS:
            values = group[target].dropna().to_numpy()
            row[target], row[f"{target}_lo"], row[f"{target}_hi"] = (
                mean_t_interval(values) if values.size else (np.nan, np.nan, np.nan))
        rows.append(row)
    per_prior = pd.DataFrame(rows).set_index(["method", "prior"])
    overall = per_prior.groupby("method")[list(TARGETS)].mean()
    overall["n"] = per_prior.groupby("method")["n"].sum()
    overall["prior"] = "all"
    return pd.concat([per_prior.reset_index(),
                      overall.reset_index()]).set_index(["method", "prior"])


def with_interval(row: pd.Series, target: str) -> str:
    """``mean [lo, hi] (n)`` — the t-interval over the instances, beside their number."""
    lo = row.get(f"{target}_lo", np.nan)
    n = int(row["n"])
    if pd.isna(lo):
        return f"{fmt(row[target])} (n = {n})"
    return f"{fmt(row[target])} [{fmt(lo)}, {fmt(row[f'{target}_hi'])}] (n = {n})"


def fmt(value: object) -> str:
    if isinstance(value, float | np.floating):
        return "–" if np.isnan(value) else f"{value:.3f}"
    return "–" if value is None else str(value)


def markdown(rows: list[list[object]], header: list[str]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(fmt(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def table3_section(slice_: Path, demo: Path | None) -> str:
    ours = cell_table3(slice_)
    demo_cell = cell_table3(demo) if demo else pd.DataFrame()
    demo_all = (pd.read_csv(demo / "checks" / "table3.csv").set_index("prior")
                if demo and (demo / "checks" / "table3.csv").exists() else pd.DataFrame())
    rows = []
    for prior in PRIORS:
        for label, frame in (("slice (paper settings)", ours), ("demo, same cell", demo_cell),
                             ("demo, all its instances", demo_all)):
            if prior in frame.index:
                rows.append([prior, label, *[frame.loc[prior, c] for c in TABLE3]])
        if prior in ours.index:
            rows.append([prior, "paper (whole grid)", None, None,
                         *[ours.loc[prior, PAPER3[c]] if c in PAPER3 else None
                           for c in list(TABLE3)[2:]]])
    return markdown(rows, ["prior", "run", *TABLE3.values()])


def rho_section(slice_: Path, demo: Path | None) -> str:
    ours = method_rho(slice_)
    theirs = method_rho(demo) if demo else pd.DataFrame()
    rows = []
    for method in ours.index.get_level_values("method").unique():
        paper = paper_value("text", "rho_eu_posterior_excess_risk", display_name(method))
        for prior in (*PRIORS, "all"):
            if (method, prior) not in ours.index:
                continue
            got = ours.loc[(method, prior)]
            other = (theirs.loc[(method, prior)] if (method, prior) in theirs.index
                     else pd.Series(np.nan, index=list(TARGETS)))
            rows.append([display_name(method), prior,
                         *[f"{with_interval(got, t)}; demo {fmt(other[t])}" for t in TARGETS],
                         paper if prior == "all" else None])
    header = ["method", "prior", *[f"{v}: slice [95% t-interval] (instances); demo"
                                   for v in TARGETS.values()], "paper ρ EU risk"]
    return markdown(rows, header)


def order_section(slice_: Path, demo: Path | None) -> str:
    lines = []
    methods = method_rho(slice_).index.get_level_values("method").unique()
    for label, results in (("slice", slice_), ("demo, same cell, the slice's methods", demo)):
        if results is None:
            continue
        rho = method_rho(results)
        if rho.empty:
            continue
        overall = rho.xs("all", level="prior")
        overall = overall[overall.index.isin(methods)]
        for target in ("spearman_eu_posterior_excess_risk", "spearman_au"):
            ranked = overall[target].dropna().sort_values(ascending=False)
            lines.append(f"- {label}, by {TARGETS[target]}: " + " > ".join(
                f"{display_name(m)} {v:.2f}" for m, v in ranked.items()))
    lo = paper_value("text", "eu_rho_range_across_methods", "all", "min")
    hi = paper_value("text", "eu_rho_range_across_methods", "all", "max")
    au_lo = paper_value("text", "au_rho_range_across_methods", "all", "min")
    au_hi = paper_value("text", "au_rho_range_across_methods", "all", "max")
    numbers = paper_numbers()
    best = numbers.loc[(numbers["source"] == "text") & (numbers["quantity"] == "best_methods"),
                       "group"].iloc[0]  # the text names them: the names are the entry's group
    lines.append(f"- paper (whole grid, all nineteen methods): mean ρ_EU {lo}–{hi}, ρ_AU "
                 f"{au_lo}–{au_hi}; best EU methods: {best.replace(';', ', ')}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slice", type=Path, required=True, dest="slice_",
                        help="the slice's results folder (runs/paper_slice/results)")
    parser.add_argument("--demo", type=Path, default=None,
                        help="a demo run's results folder (make demo: results)")
    args = parser.parse_args(argv)
    if not cell_stores(args.slice_, "gp"):
        print(f"no task stores of the cell under {args.slice_}: run `make paper-slice` first")
        return 1
    print("## Table 3 on Concrete × smooth_monotone × balanced\n")
    print(table3_section(args.slice_, args.demo))
    if method_rho(args.slice_).empty:
        print(f"\nNo fit is scored under {args.slice_} (`make embedded-suite` builds the "
              "posteriors alone): run `make paper-slice` for the methods' ρ and order.")
        return 0
    print("\n## Mean Spearman ρ per method\n")
    print(rho_section(args.slice_, args.demo))
    print("\n## Order of the methods\n")
    print(order_section(args.slice_, args.demo))
    return 0


if __name__ == "__main__":
    sys.exit(main())
