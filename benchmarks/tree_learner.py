"""NGBoost's trees grown from presorted columns against scikit-learn's: the same fixed
configurations of NGBoost-Bag and NGBoost-NIG fitted both ways (``tree_learner`` "presorted"
and "sklearn"), everything else equal, on the method-fidelity benchmark's 7 conditions.

Per (method, configuration, condition, tree learner): the validation Gaussian NLL of a fit on
the sweep's 80/20 split of the training sample (the tuning objective), and the fit on the whole
training sample scored at the evaluation points by the pipeline's ``score_prediction``
(Spearman ρ of ÊU with each EU target, of ÂU with the true noise variance); the seconds of both
fits (one thread each). Printed per method and configuration: the paired difference presorted −
sklearn, its mean over the pairs (condition, fit seed: ``--random-states``) with a 95%
t-interval, beside the metric's mean; and the ratio of the fits' seconds.

Configurations: each method's defaults, and a stress configuration that exercises the stages'
row and column samples and deeper trees (more ties between features).

Resumable: rows are appended to ``<out>/tree_learner.jsonl`` and not recomputed. Conditions are
the demo's task stores (seed 0, balanced coverage), so run ``make demo`` first.

Usage: ``python benchmarks/tree_learner.py [--results results] [--out results/benchmarks/
tree_learner] [--methods ngboost_bag ngboost_nig] [--configurations defaults stress]
[--random-states 0 1 2] [--jobs 2] [--table]``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402

from method_fidelity import CONDITIONS, TARGETS, _interval, _store  # noqa: E402

#: Name → fixed settings (on top of the method's defaults).
CONFIGURATIONS: dict[str, dict] = {
    "defaults": {},
    "stress": {"max_depth": 5, "minibatch_frac": 0.7, "col_sample": 0.6},
}
TREE_LEARNERS = ("sklearn", "presorted")
METRICS = ("validation_nll", *(f"spearman_eu_{t}" for t in TARGETS), "spearman_au")


def run_item(method: str, configuration: str, condition: tuple[str, str, str],
             tree_learner: str, random_state: int, results: str) -> dict:
    """Both fits of one (method, configuration, condition, tree learner)."""
    from postrisk.evaluation.scoring import score_prediction
    from postrisk.methods.runner import run_fit
    from postrisk.tasks.task import Task
    from postrisk.tuning.objective import mean_gaussian_nll
    from postrisk.tuning.sweep import split_indices

    task = Task.load(_store(Path(results), condition))
    config = {**CONFIGURATIONS[configuration], "tree_learner": tree_learner}
    fit_idx, val_idx = split_indices(len(task.y_train), 0.2, *condition)
    row = {"method": method, "configuration": configuration, "condition": "/".join(condition),
           "tree_learner": tree_learner, "random_state": random_state,
           "n": int(len(task.y_train))}
    val = run_fit(method, config, task.x_train[fit_idx], task.y_train[fit_idx],
                  task.x_train[val_idx], random_state=random_state)
    full = run_fit(method, config, task.x_train, task.y_train, task.x_eval,
                   random_state=random_state)
    row["status"] = f"{val.status}/{full.status}"
    row["seconds"] = float(val.fit_seconds) + float(full.fit_seconds)
    if not (val.ok and full.ok):
        return row
    pred = val.prediction()
    row["validation_nll"] = mean_gaussian_nll(task.y_train[val_idx], pred.mean,
                                              np.asarray(pred.aleatoric_var)
                                              + np.asarray(pred.epistemic_var))
    scores = score_prediction(task, full.prediction())
    for key in METRICS[1:]:
        row[key] = scores.get(key)
    return row


def table(rows: list[dict]) -> str:
    """Paired differences presorted − sklearn per method and configuration."""
    lines = ["| method | configuration | metric | sklearn (mean over pairs) | presorted − "
             "sklearn: mean (95% t-interval) | 0 inside |",
             "|---|---|---|---:|---|---|"]
    seconds = []
    for method in dict.fromkeys(r["method"] for r in rows):
        for configuration in CONFIGURATIONS:
            by = {((r["condition"], r.get("random_state", 0)), r["tree_learner"]): r
                  for r in rows
                  if r["method"] == method and r["configuration"] == configuration}
            conditions = [c for c in dict.fromkeys(k[0] for k in by)
                          if all((c, t) in by for t in TREE_LEARNERS)]
            if not conditions:
                continue
            for metric in METRICS:
                base = [by[(c, "sklearn")].get(metric) for c in conditions]
                new = [by[(c, "presorted")].get(metric) for c in conditions]
                pairs = [(a, b) for a, b in zip(base, new, strict=True)
                         if a is not None and b is not None]
                if len(pairs) < 2:
                    continue
                mean, lo, hi = _interval([b - a for a, b in pairs])
                lines.append(f"| {method} | {configuration} | {metric} | "
                             f"{np.mean([a for a, _ in pairs]):.4f} | {mean:+.4f} "
                             f"({lo:+.4f} … {hi:+.4f}) | {'yes' if lo <= 0 <= hi else 'NO'} |")
            s_old = sum(by[(c, "sklearn")]["seconds"] for c in conditions)
            s_new = sum(by[(c, "presorted")]["seconds"] for c in conditions)
            seconds.append(f"{method} {configuration}: {len(conditions)} pairs, sklearn "
                           f"{s_old:.0f} s, presorted {s_new:.0f} s, ratio {s_new / s_old:.3f}")
    return "\n".join([*lines, "", *seconds])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default="results", type=Path)
    parser.add_argument("--out", default=None, type=Path)
    parser.add_argument("--methods", nargs="+", default=["ngboost_bag", "ngboost_nig"])
    parser.add_argument("--configurations", nargs="+", default=list(CONFIGURATIONS))
    parser.add_argument("--random-states", nargs="+", type=int, default=[0],
                        help="fit seeds: each (condition, seed) is one pair")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--table", action="store_true", help="only print the table")
    args = parser.parse_args(argv)
    out = args.out or args.results / "benchmarks" / "tree_learner"
    out.mkdir(parents=True, exist_ok=True)
    path = out / "tree_learner.jsonl"
    done = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    have = {(r["method"], r["configuration"], r["condition"], r["tree_learner"],
             r.get("random_state", 0)) for r in done}
    todo = [(m, k, c, t, s) for m in args.methods for k in args.configurations
            for c in CONDITIONS for s in args.random_states for t in TREE_LEARNERS
            if (m, k, "/".join(c), t, s) not in have]
    if not args.table and todo:
        missing = [c for c in CONDITIONS if not _store(args.results, c).exists()]
        if missing:
            raise SystemExit(f"no task store for {missing} under {args.results}: run make demo")
        t0 = time.perf_counter()
        with ProcessPoolExecutor(args.jobs) as pool, path.open("a") as fh:
            futures = [pool.submit(run_item, *item, str(args.results)) for item in todo]
            for i, future in enumerate(as_completed(futures), 1):
                row = future.result()
                done.append(row)
                fh.write(json.dumps(row, default=str) + "\n")
                fh.flush()
                print(f"[{i}/{len(todo)}] {row['method']} {row['configuration']} "
                      f"{row['condition']} {row['tree_learner']}: {row['seconds']:.1f} s",
                      flush=True)
        print(f"ran {len(todo)} items in {time.perf_counter() - t0:.0f} s")
    print(table([r for r in done if r["method"] in args.methods]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
