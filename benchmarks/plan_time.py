"""How long `snakemake -n` takes to plan the full grid of config.yaml (budget ≤ 60 s;
docs/design.md, "Scale presets and budgets").

Runs, in one session and in a scratch working directory: (1) a dry run of a single task store
(the baseline: start-up and parsing), (2) a dry run of the whole config. Prints both times, the
job count, the ratio full/baseline and the ratio to the 60 s budget.
Usage: .venv/bin/python benchmarks/plan_time.py
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
BUDGET_S = 60.0


def dry_run(workdir: str, *targets: str) -> tuple[float, int]:
    start = time.perf_counter()
    run = subprocess.run([SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", workdir, "-n",
                          *targets], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if run.returncode != 0:
        raise SystemExit(run.stderr[-2000:])
    match = re.search(r"^total\s+(\d+)$", run.stdout, flags=re.MULTILINE)
    return seconds, int(match.group(1)) if match else 0


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        base_s, base_jobs = dry_run(tmp, "results/tasks/diamonds/gp/bump/balanced/0.zarr")
        full_s, full_jobs = dry_run(tmp)
    print(f"baseline (one task store): {base_s:6.1f} s  {base_jobs:>6} jobs")
    print(f"full config.yaml         : {full_s:6.1f} s  {full_jobs:>6} jobs")
    print(f"ratio full / baseline    : {full_s / base_s:6.2f}")
    print(f"ratio full / {BUDGET_S:.0f} s budget : {full_s / BUDGET_S:6.2f}")
    return 0 if full_s <= BUDGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
