"""Check the demo's (or the studies') per-stage wall-clock budget (docs/design.md, "Scale
presets and budgets") from Snakemake's benchmark files.

Run after `make demo`:  .venv/bin/python benchmarks/demo_budget.py [--results results]
After `make studies` in a fresh clone:
    .venv/bin/python benchmarks/demo_budget.py --preset presets/demo.yaml \
        --preset presets/studies.yaml
(the presets' `budget_s` merged in order; each study's share, the sum of its stages', is
printed too).
Each rule writes `results/benchmarks/<stage>/<job>.tsv` (its `benchmark:` file). A stage's time
is the sum of its jobs' wall-clock seconds (an upper bound on its share of a 2-core run); it is
compared with `budget_s` in presets/demo.yaml, and the ratio used/budget is printed per stage.
The wall clock runs from the first job's start (a benchmark file's modification time minus its
seconds) to the last job's end, over the stages the last preset budgets (the demo's for the
demo preset; the studies' for presets/studies.yaml, which shares the demo's results folder, so
the demo's own jobs do not count towards `make studies`); it must stay within 15 minutes.
After `make classification` in a fresh clone:
    .venv/bin/python benchmarks/demo_budget.py --preset presets/demo.yaml \
        --preset presets/classification.yaml
(a preset's `budget_wall_s`, where it has one, replaces the 15 minutes: 5 for
presets/classification.yaml, whose stages then count from a fresh clone's first job.)
Exit status 1 when any stage, or the wall clock, is over budget; with `--guard F` (the slow
tier: F = 1.5) the per-stage ratios are figures only and the exit status is 1 only when the wall
clock exceeds F × its budget, as a guard against a runaway job.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import yaml

from postrisk.grid.study import renamed_stages, studies

TOTAL_BUDGET_S = 15 * 60


def stage_seconds(results: Path) -> dict[str, float]:
    out: dict[str, float] = {}
    for tsv in sorted((results / "benchmarks").glob("*/*.tsv")):
        with tsv.open() as fh:
            rows = list(csv.DictReader(fh, delimiter="\t"))
        out[tsv.parent.name] = out.get(tsv.parent.name, 0.0) + sum(float(r["s"]) for r in rows)
    return out


def wall_seconds(results: Path, stages: set[str] | None = None) -> float:
    """First job start to last job end, from the benchmark files' times (of ``stages`` only,
    where given)."""
    starts, ends = [], []
    for tsv in (results / "benchmarks").glob("*/*.tsv"):
        if stages is not None and tsv.parent.name not in stages:
            continue
        with tsv.open() as fh:
            seconds = sum(float(r["s"]) for r in csv.DictReader(fh, delimiter="\t"))
        ends.append(tsv.stat().st_mtime)
        starts.append(ends[-1] - seconds)
    return max(ends) - min(starts) if ends else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=Path("results"))
    parser.add_argument("--preset", type=Path, action="append", default=None,
                        help="a preset whose budget_s applies (repeatable, merged in order; "
                             "default presets/demo.yaml)")
    parser.add_argument("--guard", type=float, default=None, metavar="F",
                        help="fail only when the wall clock exceeds F × the 15-minute budget")
    args = parser.parse_args(argv)
    budget: dict[str, float] = {}
    last: set[str] = set()
    total_budget = TOTAL_BUDGET_S
    renamed = renamed_stages()  # a study's old stage names, read as the new ones
    for preset in args.preset or [Path("presets/demo.yaml")]:
        content = yaml.safe_load(preset.read_text())
        entries = {renamed.get(k, k): v for k, v in (content.get("budget_s") or {}).items()}
        last = set(entries)
        budget.update(entries)
        total_budget = float(content.get("budget_wall_s", TOTAL_BUDGET_S))
    used = stage_seconds(args.results)
    if not used:
        print(f"no benchmark files under {args.results}/benchmarks: run `make demo` first")
        return 1
    ok = True
    print(f"{'stage':<24}{'used s':>9}{'budget s':>10}{'ratio':>8}")
    for stage in sorted(set(budget) | set(used)):
        spent, allowed = used.get(stage, 0.0), budget.get(stage)
        ratio = spent / allowed if allowed else float("inf")
        flag = "" if allowed and ratio <= 1 else "  OVER" if allowed else "  (no budget)"
        ok &= bool(allowed) and ratio <= 1
        print(f"{stage:<24}{spent:>9.1f}{allowed or 0:>10.0f}{ratio:>8.2f}{flag}")
    total = sum(used.values())
    print(f"{'sum of jobs':<24}{total:>9.1f}")
    for study in studies():  # a study's share: the sum of its stages'
        stages = study.stage_names
        if any(stage in used for stage in stages):
            spent = sum(used.get(stage, 0.0) for stage in stages)
            allowed = sum(budget.get(stage, 0.0) for stage in stages)
            print(f"{'study ' + study.name:<24}{spent:>9.1f}{allowed:>10.0f}"
                  f"{spent / allowed if allowed else float('inf'):>8.2f}")
    wall = wall_seconds(args.results, last)
    ok &= wall <= total_budget
    print(f"{'wall clock':<24}{wall:>9.1f}{total_budget:>10.0f}{wall / total_budget:>8.2f}"
          + ("" if wall <= total_budget else "  OVER"))
    if args.guard is not None:
        limit = args.guard * total_budget
        runaway = wall > limit
        print(f"guard: wall clock {wall:.0f} s against {args.guard:g} × {total_budget:.0f} s = "
              f"{limit:.0f} s: " + ("EXCEEDED" if runaway else "ok")
              + ("" if ok else " (over budget: a benchmark figure, not a failure)"))
        return 1 if runaway else 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
