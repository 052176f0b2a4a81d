"""A sweep with early stopping against the full sweep: the same conditions re-tuned both ways.

Per method and condition (Concrete's seed-0 training sample of the demo's task stores, balanced
coverage; run ``make demo`` first), two sweeps of ``--trials`` trials (the paper's 30) on the
same 80/20 split, each in a journal of its own: every trial to its end (``none``), and with
``--rule`` (``successive_halving`` by default; :mod:`postrisk.tuning.early_stopping`).
Printed per method: per condition the selected configuration's validation NLL both ways and
their difference (early − full: positive means the early-stopped sweep selected worse), the
trials stopped, and the sweeps' wall-clock seconds and their ratio; then the mean difference
with a 95% t-interval over conditions and the ratio of the summed seconds (what the cost model
takes for a sweep with early stopping).

Rows are appended to ``<out>/early_stopping.jsonl`` as each sweep finishes and are not
recomputed (delete the file to start again).

Usage: ``python benchmarks/early_stopping.py --methods dkl ngboost_nig [--results results]
[--out results/benchmarks/early_stopping] [--rule successive_halving] [--trials 30]
[--threads 2]``; ``--table`` prints what the file holds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import date
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from job_times import machine  # noqa: E402

#: (dataset, prior, noise), coverage balanced, seed 0: Concrete under each prior.
CONDITIONS: tuple[tuple[str, str, str], ...] = (
    ("concrete", "gp", "smooth_monotone"), ("concrete", "hbart", "bump"),
    ("concrete", "bnn", "smooth_monotone"))


def _store(results: Path, condition: tuple[str, str, str]) -> Path:
    dataset, prior, noise = condition
    return results / "tasks" / dataset / prior / noise / "balanced" / "0.zarr"


def label(rule: str, rungs: int = 2, eta: int = 3) -> str:
    """A rule's name in the rows: the rule, with its rungs and η where not 2 and 3."""
    return rule + (f"-rungs{rungs}" if rungs != 2 else "") + (f"-eta{eta}" if eta != 3 else "")


def settings(name: str) -> dict:
    """The ``early_stopping`` settings of a :func:`label`."""
    rule, *rest = name.split("-")
    out: dict = {"rule": rule}
    for part in rest:
        key = "rungs" if part.startswith("rungs") else "reduction_factor"
        out[key] = int(part.removeprefix("rungs").removeprefix("eta"))
    return out


def run_sweep(method: str, condition: tuple[str, str, str], rule: str, trials: int,
              threads: int, results: Path, out: Path) -> dict:
    """One sweep; its selected validation NLL, configuration, stopped trials and seconds."""
    from postrisk.tasks.task import Task
    from postrisk.tuning import tune

    task = Task.load(_store(results, condition))
    journal = out / "journals" / f"{method}__{'_'.join(condition)}__{rule}.jsonl"
    journal.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    result = tune(method, task.x_train, task.y_train, journal=journal, n_trials=trials,
                  startup_trials=min(10, trials), split_key=condition, sampler_seed=0,
                  random_state=0, n_threads=threads, early_stopping=settings(rule))
    seconds = time.perf_counter() - t0
    stopped = [t for t in result.trials if t["state"] == "PRUNED"]
    steps = sweep_steps(journal, method)
    return {"machine": machine(), "date": date.today().isoformat(), "method": method,
            "condition": "/".join(condition), "rule": rule,
            "trials": trials, "best_value": result.best_value, "config": result.searched,
            "stopped": len(stopped), "steps": steps,
            "stopped_at": [t["stopped_at"] for t in stopped],
            "seconds": seconds, "trial_seconds": sum(t["seconds"] or 0.0
                                                     for t in result.trials)}


def sweep_steps(journal: Path, method: str) -> int:
    """The steps (the method's ``iterations_parameter``) a sweep's trials ran, from its
    journal: a finished trial its configuration's count, a stopped one the step it stopped
    after, a repeat of an earlier configuration none."""
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend
    from optuna.trial import TrialState

    from postrisk.methods.registry import get_method

    cls = get_method(method)
    name = cls.iterations_parameter
    storage = JournalStorage(JournalFileBackend(str(journal)))
    (study,) = storage.get_all_studies()
    total = 0
    for t in storage.get_all_trials(study._study_id):
        if "repeat_of" in t.user_attrs:
            continue
        if t.state == TrialState.PRUNED:
            total += int(t.user_attrs["stopped_at"])
        elif t.state == TrialState.COMPLETE:
            total += int(t.params.get(name, cls.defaults[name]))
    return total


def table(rows: list[dict], rule: str) -> str:
    lines = []
    for method in sorted({r["method"] for r in rows}):
        mine = {(r["condition"], r["rule"]): r for r in rows if r["method"] == method}
        conditions = sorted({c for c, _ in mine})
        lines += [f"{method} ({rule} against none)",
                  "| condition | NLL full | NLL early | early − full | stopped | s full | "
                  "s early | ratio | steps full | steps early | ratio |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        diffs, full_s, early_s, full_n, early_n = [], 0.0, 0.0, 0, 0
        for c in conditions:
            full, early = mine.get((c, "none")), mine.get((c, rule))
            if full is None or early is None:
                continue
            d = early["best_value"] - full["best_value"]
            diffs.append(d)
            full_s += full["seconds"]
            early_s += early["seconds"]
            full_n += full["steps"]
            early_n += early["steps"]
            lines.append(f"| {c} | {full['best_value']:.4f} | {early['best_value']:.4f} | "
                         f"{d:+.4f} | {early['stopped']}/{early['trials']} | "
                         f"{full['seconds']:.0f} | {early['seconds']:.0f} | "
                         f"{early['seconds'] / full['seconds']:.2f} | {full['steps']:,} | "
                         f"{early['steps']:,} | {early['steps'] / full['steps']:.2f} |")
        if diffs:
            mean = float(np.mean(diffs))
            half = (float(stats.t.ppf(0.975, len(diffs) - 1) * np.std(diffs, ddof=1)
                          / np.sqrt(len(diffs))) if len(diffs) > 1 else float("nan"))
            lines.append(f"mean early − full {mean:+.4f} (95% t-interval {mean - half:+.4f} … "
                         f"{mean + half:+.4f}, {len(diffs)} conditions); seconds "
                         f"{early_s:.0f} / {full_s:.0f} = {early_s / full_s:.3f}; steps "
                         f"{early_n:,} / {full_n:,} = {early_n / full_n:.3f}")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--methods", nargs="+", default=["dkl", "ngboost_nig"])
    parser.add_argument("--results", type=Path, default=Path("results"))
    parser.add_argument("--out", type=Path, default=Path("results/benchmarks/early_stopping"))
    parser.add_argument("--rule", default="successive_halving")
    parser.add_argument("--rungs", type=int, default=2)
    parser.add_argument("--reduction-factor", type=int, default=3)
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--table", action="store_true")
    parser.add_argument("--csv", type=Path, default=None,
                        help="also write the rows here (benchmarks/measured/early_stopping.csv:"
                             " the ratios benchmarks/cost_model.py fit --early-stopping reads)")
    args = parser.parse_args(argv)
    args.rule = label(args.rule, args.rungs, args.reduction_factor)
    path = args.out / "early_stopping.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    for r in rows:  # rows written before the steps were counted
        if "steps" not in r:
            condition = r["condition"].replace("/", "_")
            r["steps"] = sweep_steps(args.out / "journals" /
                                     f"{r['method']}__{condition}__{r['rule']}.jsonl", r["method"])
    if not args.table:
        done = {(r["method"], r["condition"], r["rule"], r["trials"]) for r in rows}
        for method in args.methods:
            for condition in CONDITIONS:
                for rule in ("none", args.rule):
                    key = (method, "/".join(condition), rule, args.trials)
                    if key in done:
                        continue
                    row = run_sweep(method, condition, rule, args.trials, args.threads,
                                    args.results, args.out)
                    rows.append(row)
                    with path.open("a") as f:
                        f.write(json.dumps(row) + "\n")
                    print(f"{method} {row['condition']} {rule}: NLL {row['best_value']:.4f}, "
                          f"{row['stopped']} stopped, {row['seconds']:.0f} s", flush=True)
    print(table([r for r in rows if r["trials"] == args.trials], args.rule))
    if args.csv is not None:
        write_csv(rows, args.csv)
    return 0


def write_csv(rows: list[dict], path: Path) -> None:
    """One line per sweep: method, condition, rule, trials, selected validation NLL, trials
    stopped, seconds, machine and date."""
    import csv

    fields = ["method", "condition", "rule", "trials", "best_value", "stopped", "steps",
              "seconds", "machine", "date"]
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        for r in rows:
            writer.writerow({**{k: r[k] for k in fields[:8]},
                             "machine": r.get("machine", machine()),
                             "date": r.get("date", date.today().isoformat())})


if __name__ == "__main__":
    raise SystemExit(main())
