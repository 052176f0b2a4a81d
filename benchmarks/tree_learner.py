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

``--tie-reference`` fits the presorted trees with a second random order of the features (each
tree's seed offset) instead: what the ties alone move, against both.

Usage: ``python benchmarks/tree_learner.py [--results results] [--out results/benchmarks/
tree_learner] [--methods ngboost_bag ngboost_nig] [--configurations defaults stress]
[--random-states 0 1 2] [--tie-reference] [--jobs 2] [--table]``; the rows kept:
``--out benchmarks/measured --table``.
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
#: The reference for what ties alone do: the presorted trees with a second random order of the
#: features (each tree's seed offset by this), fitted under ``--tie-reference``.
SECOND_TIE_ORDER = "presorted, second tie order"
TIE_SEED_OFFSET = 7919
METRICS = ("validation_nll", *(f"spearman_eu_{t}" for t in TARGETS), "spearman_au")


def run_item(method: str, configuration: str, condition: tuple[str, str, str],
             tree_learner: str, random_state: int, results: str) -> dict:
    """Both fits of one (method, configuration, condition, tree learner)."""
    from postrisk.evaluation.scoring import score_prediction
    from postrisk.methods.runner import run_fit
    from postrisk.tasks.task import Task
    from postrisk.tuning.objective import mean_gaussian_nll
    from postrisk.tuning.sweep import split_indices

    if tree_learner == SECOND_TIE_ORDER:
        from postrisk.methods import exact_tree

        first_order = exact_tree.feature_order
        exact_tree.feature_order = lambda seed, d: first_order(
            None if seed is None else (int(seed) + TIE_SEED_OFFSET) % (2**31 - 1), d)
    task = Task.load(_store(Path(results), condition))
    config = {**CONFIGURATIONS[configuration],
              "tree_learner": "presorted" if tree_learner == SECOND_TIE_ORDER else tree_learner}
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
    """Paired differences per method and configuration: presorted − sklearn (and, where the
    tie reference ran, the second tie order − sklearn and − presorted), each (condition, fit
    seed) a pair, the mean over a condition's seeds first, the 95% t-interval over the
    conditions."""
    comparisons = [("presorted", "sklearn"), (SECOND_TIE_ORDER, "sklearn"),
                   (SECOND_TIE_ORDER, "presorted")]
    lines = ["| method | configuration | metric | comparison | mean over conditions (95% "
             "t-interval) | conditions × seeds | 0 inside |", "|---|---|---|---|---|---|---|"]
    seconds = []
    for method in dict.fromkeys(r["method"] for r in rows):
        for configuration in CONFIGURATIONS:
            by = {(r["condition"], r.get("random_state", 0), r["tree_learner"]): r
                  for r in rows
                  if r["method"] == method and r["configuration"] == configuration}
            for new, old in comparisons:
                pairs = [(c, s) for c, s, t in by if t == new and (c, s, old) in by]
                if len(pairs) < 2:
                    continue
                for metric in METRICS:
                    per: dict[str, list[float]] = {}
                    for c, s in pairs:
                        a, b = by[(c, s, old)].get(metric), by[(c, s, new)].get(metric)
                        if a is not None and b is not None:
                            per.setdefault(c, []).append(b - a)
                    if len(per) < 2:
                        continue
                    mean, lo, hi = _interval([float(np.mean(v)) for v in per.values()])
                    lines.append(f"| {method} | {configuration} | {metric} | {new} − {old} | "
                                 f"{mean:+.4f} ({lo:+.4f} … {hi:+.4f}) | {len(per)} × "
                                 f"{max(map(len, per.values()))} | "
                                 f"{'yes' if lo <= 0 <= hi else 'NO'} |")
                if (new, old) == ("presorted", "sklearn"):
                    s_old = sum(by[(c, s, old)]["seconds"] for c, s in pairs)
                    s_new = sum(by[(c, s, new)]["seconds"] for c, s in pairs)
                    seconds.append(f"{method} {configuration}: {len(pairs)} pairs, sklearn "
                                   f"{s_old:.0f} s, presorted {s_new:.0f} s, ratio "
                                   f"{s_new / s_old:.3f}")
    return "\n".join([*lines, "", *seconds])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default="results", type=Path)
    parser.add_argument("--out", default=None, type=Path)
    parser.add_argument("--methods", nargs="+", default=["ngboost_bag", "ngboost_nig"])
    parser.add_argument("--configurations", nargs="+", default=list(CONFIGURATIONS))
    parser.add_argument("--random-states", nargs="+", type=int, default=[0],
                        help="fit seeds: each (condition, seed) is one pair")
    parser.add_argument("--tie-reference", action="store_true",
                        help=f"fit '{SECOND_TIE_ORDER}' instead of the two tree learners")
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
            for c in CONDITIONS for s in args.random_states
            for t in ((SECOND_TIE_ORDER,) if args.tie_reference else TREE_LEARNERS)
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
