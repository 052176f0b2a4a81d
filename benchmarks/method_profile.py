"""Where a method's fit spends its time: one fit and one prediction of each costly method at the
three sizes the cost model measures, profiled, the time split by stage of the fit, and how much
of the job's threads it keeps busy.

    .venv/bin/python benchmarks/method_profile.py [--methods ngboost_bag dkl ...]
        [--sizes concrete space_ga sarcos] [--out benchmarks/measured/method_profile.csv]
        [--work 1.0] [--threads N]

Each (method, size) runs in a process of its own (its imports counted apart, as a job pays
them): generated data of the dataset's shape (its training rows n, evaluation rows n_eval and
d columns: uniform inputs, a smooth target plus noise; a fit's cost depends on the shape, not
the values), its libraries imported first (timed apart), the method's defaults (its sweep
draws around them) with ``n_threads`` = its cost-model entry's threads (but
:data:`PROFILE_THREADS`), fitted under
``cProfile`` and then predicting at the n_eval rows.
``--work`` < 1 shortens the iteration counts (boosting stages, training steps, sampled
functions) by that factor where a full fit would take too long; the row says which settings ran,
and the stages are reported as shares and seconds per unit of work.

The stages are the cumulative times of the functions that do each part of a fit (non-nested,
listed per method in :data:`STAGES`); ``other`` is the rest of ``fit`` (data preparation,
Python bookkeeping). ``busy`` is the process's CPU time (user + system, its children included)
over the wall-clock time of fit and prediction: 1.0 keeps one core busy, 2.0 two. For the JAX
methods ``compile_s`` is the time JAX spent compiling during the fit (its own monitoring
events; it overlaps the stages, and a jitted loop's steps are not seen by ``cProfile``: they
are in the stage that calls the loop, else in ``other``).

Rows are appended to ``--out`` as each profile ends (a rerun skips the (method, size) pairs
already there).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from job_times import machine  # noqa: E402

SIZES = ("concrete", "space_ga", "sarcos")
METHODS = ("ngboost_bag", "dkl", "catboost_kgb", "vlgp", "ngboost_nig")

#: Per method, the stages of a fit: (label, path fragment of the function's file, function
#: name[, the caller's function name: only the calls from there]); a stage's time is the
#: cumulative time of its functions (they do not nest).
_NGBOOST = (
    ("gradients", "ngboost", "grad"),
    ("trees: fit", "sklearn/tree/_classes.py", "fit"),
    ("trees: predict (boosting)", "sklearn/tree/_classes.py", "predict"),
    ("line search", "ngboost/ngboost.py", "line_search"),
    # tree_learner "presorted" (the default): the same stages in its own functions, and the
    # stage's rows and columns drawn with their sorted orders
    ("trees: fit", "postrisk/methods/presorted_ngboost.py", "fit_base"),
    ("trees: predict (boosting)", "postrisk/methods/exact_tree.py", "predict"),
    ("rows and columns (sorted)", "postrisk/methods/presorted_ngboost.py", "sample"),
)
STAGES: dict[str, tuple[tuple[str, ...], ...]] = {
    "ngboost_bag": _NGBOOST,
    "ngboost_nig": _NGBOOST,
    "catboost_kgb": (
        ("sampled functions (the members)", "postrisk/methods/catboost.py", "_sample", "fit"),
        ("second ensemble (the AU)", "postrisk/methods/resampling.py", "held_out_errors"),
    ),
    "dkl": (
        ("training loop (compile + steps)", "postrisk/methods/nn/train.py", "train"),
        ("Cholesky callbacks (LAPACK)", "postrisk/methods/dkl.py", ""),
        ("posterior factor", "postrisk/methods/dkl.py", "__init__"),
    ),
    "vlgp": (),  # its jitted loop is called from _fit itself: compile_s, the rest in other
}
#: The libraries a method's fit imports on first use: imported (and timed) before the profile,
#: so that the stages are the fit's own work.
_NGBOOST_IMPORTS = ("ngboost", "sklearn.tree", "postrisk.methods.presorted_ngboost")
IMPORTS = {"ngboost_bag": _NGBOOST_IMPORTS, "ngboost_nig": _NGBOOST_IMPORTS,
           "catboost_kgb": ("catboost",), "dkl": ("jax", "optax"), "vlgp": ("jax", "optax")}
#: Threads a method is profiled with where not its entry's: NGBoost-Bag's members run on worker
#: processes with more than one, which neither ``cProfile`` nor the CPU count of this process
#: sees (the workers live on); with one they run here, each exactly as a worker runs it
#: (``benchmarks/ngboost_bag_parallel.py`` times the two).
PROFILE_THREADS = {"ngboost_bag": 1}
#: The settings ``--work`` shortens, per method (integers scaled, at least 1).
WORK_SETTINGS = {"ngboost_bag": ("n_estimators",), "ngboost_nig": ("n_estimators",),
                 "catboost_kgb": ("posterior_iterations", "prior_iterations"),
                 "dkl": ("num_iters", "warmup_steps"), "vlgp": ("num_iters",)}
FIELDS = ("method", "dataset", "n", "n_eval", "d", "threads", "work", "settings", "imports_s",
          "compile_s", "fit_s",
          "predict_s", "busy", "stages", "machine", "date")


def _shape(dataset: str) -> tuple[int, int, int]:
    from postrisk.covariates.pools import eval_pool_size
    from postrisk.covariates.registry import registry
    from postrisk.grid.config import load_config
    from postrisk.planning.conditions import training_size

    cfg = load_config(REPO / "config.yaml")
    spec = registry()[dataset]
    return (training_size(dataset, cfg["sizes"].get("n_cap")),
            eval_pool_size(spec.N, cfg["sizes"]["n_eval_cap"]), len(spec.columns))


def _threads(method: str) -> int:
    from postrisk.grid.config import load_config
    from postrisk.planning.cost import CostModel

    return int(CostModel.of(load_config(REPO / "config.yaml")).entry("fit", method)["threads"])


def _stage_seconds(stats, stages) -> dict[str, float]:
    """Cumulative seconds per stage from ``pstats`` data (a function with an empty name stands
    for every function of the file whose name holds ``callback``; with a caller's name, only
    the calls from a function of that name count)."""
    out = {stage[0]: 0.0 for stage in stages}
    for (filename, _, func), (_, _, _, cumtime, callers) in stats.stats.items():
        path = filename.replace(os.sep, "/")
        for label, fragment, name, *caller in stages:
            if fragment in path and (func == name or (not name and "callback" in func)):
                if caller:
                    cumtime = sum(c[3] for (_, _, f), c in callers.items() if f == caller[0])
                out[label] += cumtime
    return out


def profile_one(method: str, dataset: str, work: float, threads: int | None) -> dict:
    """One fit and prediction of ``method`` on data of ``dataset``'s shape, profiled."""
    import cProfile
    import importlib
    import pstats
    import resource
    import time

    import numpy as np

    from postrisk.core.threads import thread_limit
    from postrisk.methods.registry import make_method

    t_imports = time.perf_counter()
    for module in IMPORTS.get(method, ()):
        importlib.import_module(module)
    imports_s = time.perf_counter() - t_imports
    compile_events: dict[str, float] = {}
    if "jax" in IMPORTS.get(method, ()):
        from jax import monitoring

        def on_duration(event: str, duration: float, **_) -> None:
            if event.startswith("/jax/core/compile/"):
                compile_events[event] = compile_events.get(event, 0.0) + duration

        monitoring.register_event_duration_secs_listener(on_duration)
    n, n_eval, d = _shape(dataset)
    threads = threads or PROFILE_THREADS.get(method) or _threads(method)
    rng = np.random.default_rng(0)
    x = rng.random((n + n_eval, d))
    y = np.sin(3 * x[:, 0]) + x[:, 1:].mean(axis=1) + 0.1 * rng.standard_normal(n + n_eval)
    settings = dict(make_method(method).hyperparameters())
    for key in WORK_SETTINGS.get(method, ()):
        settings[key] = max(1, round(int(settings[key]) * work))
    est = make_method(method, settings, random_state=0, n_threads=threads)

    def cpu() -> float:
        own, kids = (resource.getrusage(resource.RUSAGE_SELF),
                     resource.getrusage(resource.RUSAGE_CHILDREN))
        return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

    profiler = cProfile.Profile()
    c0, t0 = cpu(), time.perf_counter()
    with thread_limit(threads):
        profiler.enable()
        est.fit(x[:n], y[:n])
        profiler.disable()
        t1 = time.perf_counter()
        est.predict(x[n:])
    t2, c2 = time.perf_counter(), cpu()
    stats = pstats.Stats(profiler)
    fit_s = t1 - t0
    compile_s = sum(compile_events.values())  # fit and prediction: the prediction's is small
    stages = _stage_seconds(stats, STAGES.get(method, ()))
    stages["other"] = max(fit_s - sum(stages.values()), 0.0)
    return {"method": method, "dataset": dataset, "n": n, "n_eval": n_eval, "d": d,
            "threads": threads, "work": work, "settings": json.dumps(settings, sort_keys=True),
            "imports_s": round(imports_s, 3), "compile_s": round(compile_s, 3),
            "fit_s": round(fit_s, 3), "predict_s": round(t2 - t1, 3),
            "busy": round((c2 - c0) / (t2 - t0), 2),
            "stages": json.dumps({k: round(v, 3) for k, v in stages.items()}),
            "machine": machine(), "date": date.today().isoformat()}


def _done(out: Path) -> set[tuple[str, str]]:
    if not out.exists():
        return set()
    with out.open() as f:
        return {(r["method"], r["dataset"]) for r in csv.DictReader(f)}


def print_table(out: Path) -> None:
    """The profiles in ``out`` as a Markdown table: per (method, size) the fit's seconds, each
    stage's share, prediction seconds and busy cores."""
    with out.open() as f:
        rows = list(csv.DictReader(f))
    order = {name: i for i, name in enumerate((*METHODS, *SIZES))}
    rows.sort(key=lambda r: (order.get(r["method"], 99), order.get(r["dataset"], 99)))
    print("| method | size (n × d) | work | fit s | stages (share of fit) | JAX compile s | "
          "predict s | busy |")
    print("|---|---|---:|---:|---|---:|---:|---:|")
    for r in rows:
        fit = float(r["fit_s"])
        stages = json.loads(r["stages"])
        split = "; ".join(f"{k} {v / fit:.0%}" for k, v in stages.items() if fit and v > 0)
        print(f"| {r['method']} | {r['dataset']} ({r['n']} × {r['d']}) | {r['work']} | "
              f"{fit:.1f} | {split} | {float(r['compile_s']):.1f} | "
              f"{float(r['predict_s']):.1f} | {r['busy']} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", nargs="+", default=list(METHODS))
    parser.add_argument("--sizes", nargs="+", default=list(SIZES))
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks/measured/method_profile.csv")
    parser.add_argument("--work", type=float, default=1.0)
    parser.add_argument("--threads", type=int, default=None,
                        help="threads of every fit (default: the method's cost-model entry's)")
    parser.add_argument("--one", nargs=2, metavar=("METHOD", "DATASET"), help=argparse.SUPPRESS)
    parser.add_argument("--table", action="store_true", help="print --out as a table and stop")
    args = parser.parse_args(argv)
    if args.table:
        print_table(args.out)
        return 0
    if args.one:  # the child process: one profile, its row as JSON on the last line
        print(json.dumps(profile_one(*args.one, args.work, args.threads)))
        return 0
    done = _done(args.out)
    for dataset in args.sizes:
        for method in args.methods:
            if (method, dataset) in done:
                continue
            cmd = [sys.executable, __file__, "--one", method, dataset, "--work", str(args.work)]
            if args.threads:
                cmd += ["--threads", str(args.threads)]
            run = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
            if run.returncode != 0:
                print(f"{method} on {dataset} failed:\n{run.stderr[-2000:]}", file=sys.stderr)
                continue
            row = json.loads(run.stdout.strip().splitlines()[-1])
            new = not args.out.exists()
            with args.out.open("a", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=FIELDS)
                if new:
                    writer.writeheader()
                writer.writerow(row)
            print(f"{method} on {dataset}: fit {row['fit_s']} s, busy {row['busy']}, "
                  f"{row['stages']}", flush=True)
    if args.out.exists():
        print_table(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
