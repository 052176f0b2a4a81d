"""The MCMC reference posteriors in one run: HBART throughput over devices, BNN time per task.

1. HBART (bartz): chain-iterations per second with the chains spread over every CPU device vs
   one device, on a paper-size instance (n = 2,000, n_eval = 1,500, d = 8, 200 trees), each in
   a fresh subprocess (XLA reads the device count once per process); the ratio is printed.
2. BNN (NumPyro NUTS, float64): time per instance at paper settings, 4 chains × (500 + 250),
   n = 2,000, n_eval = 1,500, d = 8 — **extrapolated** from a shortened run (said so in the
   output), plus the shortened run's max R̂ and 90% coverage.

    .venv/bin/python benchmarks/mcmc_reference.py [--skip-hbart] [--skip-bnn]

The BNN part runs in a subprocess too, so its 2 host devices and x64 context never meet
bartz's process.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-hbart", action="store_true")
    parser.add_argument("--skip-bnn", action="store_true")
    parser.add_argument("--devices", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    if not args.skip_hbart:
        sys.path.insert(0, str(HERE))
        from mcmc_hbart import hbart_benchmark, report

        hb = hbart_benchmark(devices=args.devices)
        print("HBART (bartz), paper-size instance, d = 8, 200 trees:")
        print("\n".join(f"  {line}" for line in report(hb)))
        per_it = 1 / hb["all_devices"]["chain_iterations_per_s"]
        paper = 250 * (5000 + 4 * 25)
        print(f"  paper settings (250 chains × 5,100 iterations) at this rate: "
              f"{paper * per_it / 60:.0f} min per instance (extrapolated, not measured)")
    if not args.skip_bnn:
        proc = subprocess.run([sys.executable, str(HERE / "mcmc_bnn.py"), "--preset", "paper",
                               "--devices", str(args.devices)],
                              capture_output=True, text=True, check=True)
        out = json.loads(proc.stdout[proc.stdout.index("{"):])
        t = out["target"]
        print(f"BNN (NumPyro NUTS, float64), n = {out['instance']['n']}, n_eval = "
              f"{out['instance']['n_eval']}, d = {out['instance']['d']}, H = "
              f"{out['instance']['hidden']}, {out['devices']} device(s):")
        print(f"  shortened run {out['run']['chains']} × ({out['run']['warmup']} + "
              f"{out['run']['samples']}): {out['seconds_mcmc']:.1f} s MCMC + "
              f"{out['seconds_compile']:.1f} s compile; "
              f"{1e3 * out['seconds_per_leapfrog_step']:.2f} ms per leapfrog step; "
              f"max R̂ {out['max_rhat']:.3f}; 90% coverage "
              f"{out['coverage90_f_eval']:.3f}")
        print(f"  paper settings {t['chains']} × ({t['warmup']} + {t['samples']}): "
              f"{t['seconds_mcmc_extrapolated_by_steps'] / 60:.1f} min per instance by leapfrog "
              f"steps, {t['seconds_mcmc_extrapolated_by_iterations'] / 60:.1f} min by "
              f"iterations — extrapolated from the shortened run, not measured")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
