"""Seconds to score one prediction on one instance, and the Pareto gap against its definition.

A paper-sized evaluation set (``--n-eval`` points; the paper caps it at 1,500) with exponential
true A* and E* and a noisy estimate. Measured in the same run:

* the Pareto gap as the pipeline computes it (:func:`postrisk.evaluation.pareto.pareto_gap`,
  exact, with pruning) against the literal definition
  (:func:`~postrisk.evaluation.pareto.pareto_gap_by_definition`, every oracle point against
  every achievable point) at ``--n-definition`` points (the definition's cost does not depend
  on N beyond the sorts, so a smaller N keeps the run short), with their ratio and the largest
  difference of the two results;
* one whole :func:`postrisk.evaluation.scoring.score_prediction` call (every metric of one
  method on one instance) and, as its baseline, the rank metrics alone (Spearman and Δ_ent),
  so the ratio says what the full metric set costs on top of the paper's own metrics.

Usage: ``python benchmarks/scoring.py [--n-eval 1500] [--n-definition 600] [--repeats 20]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.task_helpers


def _median_seconds(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def _example(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    at, et = rng.exponential(1.0, n), rng.exponential(0.5, n)
    ah = at * np.exp(0.3 * rng.standard_normal(n))
    eh = et * np.exp(0.5 * rng.standard_normal(n))
    return ah, eh, at, et


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-eval", type=int, default=1500)
    parser.add_argument("--n-definition", type=int, default=600)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args(argv)

    from tests.task_helpers import gp_task

    from postrisk.evaluation.metrics import score_instance
    from postrisk.evaluation.pareto import pareto_gap, pareto_gap_by_definition
    from postrisk.evaluation.scoring import score_prediction
    from postrisk.methods.interface import Prediction

    ah, eh, at, et = _example(args.n_definition)
    fast = _median_seconds(lambda: pareto_gap(ah, eh, at, et), args.repeats)
    slow = _median_seconds(lambda: pareto_gap_by_definition(ah, eh, at, et), 1)
    a, b = pareto_gap(ah, eh, at, et), pareto_gap_by_definition(ah, eh, at, et)
    diff = max(abs(a.raw - b.raw), abs(a.normalised - b.normalised))
    print(f"Pareto gap, N = {args.n_definition}: pruned {1e3 * fast:.1f} ms, definition "
          f"{1e3 * slow:.0f} ms, ratio {slow / fast:.0f}x; largest difference {diff:.1e}")

    task = gp_task(n=500, m=args.n_eval, d=4, seed=1)
    oracle = Prediction(task.posterior_mean, task.noise_var_eval, task.posterior_var)
    rng = np.random.default_rng(2)
    pred = Prediction(oracle.mean + 0.1 * rng.standard_normal(args.n_eval),
                      oracle.aleatoric_var * np.exp(0.3 * rng.standard_normal(args.n_eval)),
                      oracle.epistemic_var * np.exp(0.5 * rng.standard_normal(args.n_eval)))
    targets = task.eu_targets(pred.mean)
    full = _median_seconds(lambda: score_prediction(task, pred), max(3, args.repeats // 4))
    rank = _median_seconds(lambda: score_instance(pred.epistemic_var, pred.aleatoric_var,
                                                  targets, task.noise_var_eval), args.repeats)
    print(f"score_prediction, N = {args.n_eval}: every metric {1e3 * full:.1f} ms, rank "
          f"metrics alone {1e3 * rank:.1f} ms, ratio {full / rank:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
