"""Measured job times of a run, per job and per stage, beside the cost model's estimate.

Each rule writes its Snakemake benchmark file (`<results>/benchmarks/<stage>/<job>.tsv`: wall
seconds `s`, `cpu_time`, `max_rss` in MB). This script maps every planned job of the run's
configuration to its file (the planner's own rules), and prints per stage and per cost entry
(a prior's or a method's) the jobs measured, their units, the mean and the largest wall seconds
per unit, and the cost model's current estimate for the same units at margin 1; then the run's
wall clock (first job's start to last job's end). With `--out` it writes one row per measured
job (stage, rule, the job's keys, units, cost entry, dataset, rows = n + n_eval, threads,
seconds, CPU seconds, max RSS, the estimate, the machine and the date): the measurements the
cost model is fitted from (`benchmarks/measured/`).

    .venv/bin/python benchmarks/job_times.py --results runs/paper_slice/results \
        --configfile presets/paper_slice.yaml [--out benchmarks/measured/paper_slice.csv]
"""

from __future__ import annotations

import argparse
import csv
import datetime
import os
import platform
import sys
from pathlib import Path

import pandas as pd

from postrisk.grid.paths import RESULTS
from postrisk.planning.cost import CostModel
from postrisk.planning.planner import Planner


def machine() -> str:
    """This machine in a few words: the CPU model and the cores the run could use."""
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        names = [line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
                 if line.startswith("model name")]
        model = names[0] if names else model
    return f"{model}, {os.cpu_count()} cores"


def _benchmark(path: Path) -> dict[str, float] | None:
    if not path.exists():
        return None
    with path.open() as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    if not rows:
        return None
    total = {k: sum(float(r[k]) for r in rows if r.get(k) not in (None, "", "-"))
             for k in ("s", "cpu_time")}
    total["max_rss"] = max(float(r["max_rss"]) for r in rows if r.get("max_rss") not in
                           (None, "", "-")) if any(r.get("max_rss") not in (None, "", "-")
                                                   for r in rows) else float("nan")
    total["end"] = path.stat().st_mtime
    return total


def job_times(results: Path, planner: Planner) -> pd.DataFrame:
    """One row per planned job whose benchmark file exists under ``results``."""
    cfg = planner.config
    stamp = datetime.date.today().isoformat()
    where = machine()
    rows = []
    for stage, rules in planner.rules.items():
        for rule in rules:
            for ident, job in rule.jobs.items():
                keys = dict(zip(rule.keys, ident, strict=True))
                file = rule.benchmark.replace(RESULTS, str(results), 1).format(**keys)
                measured = _benchmark(Path(file))
                if measured is None:
                    continue
                units = job.units or [None]  # a job over the whole run (tables, report)
                names = {getattr(u, "cost_name", None) for u in units}
                datasets = {getattr(u, "dataset", None) for u in units}
                name = names.pop() if len(names) == 1 else "mixed"
                dataset = datasets.pop() if len(datasets) == 1 else None
                estimate = job.resources.estimate  # the planner's: the job's start included
                rows.append({
                    "stage": stage, "rule": rule.name,
                    "job": "/".join(ident) if ident else stage,
                    **{k: keys.get(k, "") for k in ("dataset", "prior", "noise", "coverage",
                                                     "seed", "method")},
                    "units": len(units), "cost_entry": name or "",
                    "rows": CostModel.of(cfg).unit_rows(dataset) if dataset else "",
                    "threads": job.resources.threads,
                    "seconds": round(measured["s"], 2),
                    "cpu_seconds": round(measured["cpu_time"], 2),
                    "max_rss_mb": round(measured["max_rss"], 1),
                    "estimate_seconds": round(60 * estimate, 1),
                    "end": measured["end"], "machine": where, "date": stamp,
                    "scale": cfg["scale"], "unit_type": type(units[0]).__name__})
    return pd.DataFrame(rows)


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Per stage and cost entry: jobs, units, the mean and largest seconds per unit, the sum,
    and the cost model's estimate per unit (margin 1) with measured / estimate."""
    per_unit = frame.assign(per_unit=frame["seconds"] / frame["units"],
                            estimate_per_unit=frame["estimate_seconds"] / frame["units"])
    out = per_unit.groupby(["stage", "cost_entry"], sort=False).agg(
        jobs=("seconds", "size"), units=("units", "sum"), mean_s=("per_unit", "mean"),
        max_s=("per_unit", "max"), sum_s=("seconds", "sum"),
        estimate_s=("estimate_per_unit", "mean"))
    out["measured/estimate"] = out["mean_s"] / out["estimate_s"]
    return out.round(2)


def wall_seconds(frame: pd.DataFrame) -> float:
    """First job's start to the last job's end (a benchmark file's time minus its seconds)."""
    return float((frame["end"]).max() - (frame["end"] - frame["seconds"]).min())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, required=True,
                        help="the run's results folder (holding benchmarks/)")
    parser.add_argument("--configfile", type=Path, action="append", default=[],
                        help="the presets the run was made with, in order (over config.yaml)")
    parser.add_argument("--out", type=Path, default=None,
                        help="write the per-job rows here (CSV)")
    args = parser.parse_args(argv)
    planner = Planner.from_files(Path("config.yaml"), *args.configfile)
    frame = job_times(args.results, planner)
    if frame.empty:
        print(f"no benchmark files of this configuration's jobs under {args.results}")
        return 1
    with pd.option_context("display.width", 200, "display.max_rows", 200):
        print(summary(frame).to_string())
    planned = sum(len(r.jobs) for rules in planner.rules.values() for r in rules)
    print(f"jobs measured: {len(frame)} of {planned} planned; sum of job seconds "
          f"{frame['seconds'].sum():.0f}; wall clock {wall_seconds(frame):.0f} s "
          f"({wall_seconds(frame) / 60:.1f} min) on {machine()}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        frame.drop(columns=["end"]).to_csv(args.out, index=False)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
