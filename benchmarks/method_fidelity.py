"""Where our methods contradict the paper: a tuned fidelity benchmark of NGBoost-NIG (each
natural-gradient metric), NN-SWAG (each gradient-clipping variant), NN-DEUP, and SNGP-Het and
NN-Ens as references (docs/methods.md, "Fidelity").

The paper's protocol per condition: a sweep of ``--trials`` trials (the paper's 30) on the seed-0
training sample (:func:`postrisk.tuning.tune`: TPE, 80/20 split, validation Gaussian NLL), then
the fit at the winner on that sample, predicting at the evaluation points; ``--modes default``
fits at the method's defaults instead (both by default). Every fit goes through the guarded
``run_fit`` and is scored by the pipeline's own ``score_prediction``.

Conditions (seed 0, balanced coverage; the demo's task stores, so run ``make demo`` first):
GP prior × {concrete, diamonds, health_insurance} × smooth_monotone, and HBART and BNN ×
concrete × {smooth_monotone, bump}.

Printed per variant and mode: the mean over conditions of ρ(ÊU, each EU target), ρ(ÊU, ÂU) and
Δ_ent (posterior excess risk), each with a 95% t-interval over conditions, beside the paper's
numbers (Section 5, Tables 8 and 10); the share of failed or diverged fits; for NGBoost-NIG the
median 1/ν = ÊU/ÂU per coverage shell (innermost first); for NN-DEUP the share of exact-zero ÊU
and ρ(ÊU, posterior excess risk) with ties broken at random (mean over 20 draws) beside the plain
ρ (average ranks).

Resumable: each (variant, condition, mode, trials) result is appended to
``<out>/fidelity.jsonl`` as it finishes and is not recomputed (delete the file to start again);
sweeps keep their Optuna journals under ``<out>/journals``. ``--jobs`` processes run items in
parallel (each is one process-wide JAX/NumPy job; a worker is replaced every few items, and a
run whose worker dies keeps what finished and exits 1: rerun it). The running time is printed at
the end: a full run (140 items) took 7,007 s of item time on 2 processes, about 58 minutes, on
this project's 2-core machine.

Usage: ``python benchmarks/method_fidelity.py [--results results] [--out results/benchmarks/
fidelity] [--variants ngboost_nig/empirical nn_swag/clip_off ...] [--modes default tuned]
[--trials 30] [--jobs 2]``; ``--list`` prints the variants.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

#: Variant → (method, fixed settings): the ablation variable is fixed, the rest is searched.
VARIANTS: dict[str, tuple[str, dict]] = {
    "ngboost_nig/regularised_fisher": ("ngboost_nig",
                                       {"natural_gradient_metric": "regularised_fisher"}),
    "ngboost_nig/empirical": ("ngboost_nig", {"natural_gradient_metric": "empirical"}),
    "ngboost_nig/euclidean": ("ngboost_nig", {"natural_gradient_metric": "euclidean"}),
    "nn_swag/clip_1": ("nn_swag", {"swag_clip_norm": 1.0}),
    "nn_swag/clip_off": ("nn_swag", {"swag_clip_norm": None}),
    "nn_swag/clip_10": ("nn_swag", {"swag_clip_norm": 10.0}),
    "nn_swag/clip_off_lr_1e-3": ("nn_swag", {"swag_clip_norm": None, "swag_lr": 1e-3}),
    "nn_deup": ("nn_deup", {}),
    "sngp_het": ("sngp_het", {}),
    "nn_ens": ("nn_ens", {}),
}
#: (dataset, prior, noise), coverage balanced, seed 0.
CONDITIONS: tuple[tuple[str, str, str], ...] = (
    ("concrete", "gp", "smooth_monotone"), ("diamonds", "gp", "smooth_monotone"),
    ("health_insurance", "gp", "smooth_monotone"), ("concrete", "hbart", "smooth_monotone"),
    ("concrete", "hbart", "bump"), ("concrete", "bnn", "smooth_monotone"),
    ("concrete", "bnn", "bump"))
TARGETS = ("posterior_excess_risk", "posterior_variance", "pointwise_excess_risk")
#: Above this an AU or EU counts as diverged (standardised targets are O(1)).
DIVERGED = 1e12
TIE_DRAWS = 20
#: Items one worker process runs before it is replaced (bounds its memory).
MAX_ITEMS_PER_WORKER = 4


def _store(results: Path, condition: tuple[str, str, str]) -> Path:
    dataset, prior, noise = condition
    return results / "tasks" / dataset / prior / noise / "balanced" / "0.zarr"


def random_tie_spearman(estimate: np.ndarray, target: np.ndarray, rng: np.random.Generator,
                        draws: int = TIE_DRAWS) -> float:
    """Spearman ρ with the estimate's ties broken at random (mean over ``draws``): the ranks of
    ``estimate`` by value, equal values ordered by a uniform draw."""
    target_ranks = stats.rankdata(target)
    values = []
    for _ in range(draws):
        order = np.lexsort((rng.random(estimate.size), estimate))
        ranks = np.empty(estimate.size)
        ranks[order] = np.arange(1, estimate.size + 1)
        values.append(float(np.corrcoef(ranks, target_ranks)[0, 1]))
    return float(np.mean(values))


def run_item(variant: str, condition: tuple[str, str, str], mode: str, trials: int,
             results: str, out: str) -> dict:
    """One (variant, condition, mode): tune (``tuned``) or take the defaults, fit, score."""
    from postrisk.evaluation.scoring import score_prediction
    from postrisk.methods.runner import run_fit
    from postrisk.tasks.task import Task
    from postrisk.tuning import tune

    method, fixed = VARIANTS[variant]
    task = Task.load(_store(Path(results), condition))
    t0 = time.perf_counter()
    config, note = dict(fixed), "defaults"
    if mode == "tuned":
        journal = Path(out) / "journals" / f"{variant.replace('/', '__')}__{'_'.join(condition)}"
        journal.parent.mkdir(parents=True, exist_ok=True)
        result = tune(method, task.x_train, task.y_train, journal=f"{journal}.jsonl",
                      fixed=fixed, n_trials=trials, startup_trials=min(10, trials),
                      split_key=condition, sampler_seed=0, random_state=0)
        config, note = dict(result.config), result.note or f"best of {result.n_trials}"
    tune_s = time.perf_counter() - t0
    record = run_fit(method, config, task.x_train, task.y_train, task.x_eval, random_state=0)
    row = {"variant": variant, "condition": "/".join(condition), "mode": mode,
           "trials": trials if mode == "tuned" else 0, "status": record.status,
           "error": record.error, "note": note, "tune_seconds": tune_s,
           "fit_seconds": float(record.fit_seconds),
           "config": {k: v for k, v in config.items() if not isinstance(v, np.ndarray)}}
    pred = record.prediction()
    au, eu = np.asarray(pred.aleatoric_var), np.asarray(pred.epistemic_var)
    finite = record.ok and bool(np.all(np.isfinite(au)) and np.all(np.isfinite(eu)))
    row["diverged"] = (not finite) or bool(np.max(au) > DIVERGED or np.max(eu) > DIVERGED)
    if not record.ok:
        return row
    scores = score_prediction(task, pred)
    for key in [*(f"spearman_eu_{t}" for t in TARGETS), "rho_eu_au_hat", "spearman_au",
                *(f"delta_ent_{t}" for t in TARGETS)]:
        row[key] = scores.get(key)
    shells = task.shell_eval
    if method == "ngboost_nig":  # EU = AU/λ exactly: 1/ν per shell
        ratio = eu / au
        row["inverse_nu_by_shell"] = [float(np.median(ratio[shells == s]))
                                      for s in np.unique(shells)]
    if method == "nn_deup":
        target = task.eu_targets(pred.mean)["posterior_excess_risk"]
        row["eu_zero_share"] = float(np.mean(eu == 0.0))
        row["spearman_eu_posterior_excess_risk_random_ties"] = random_tie_spearman(
            eu, target, np.random.default_rng(0))
    return row


def _interval(values: list[float]) -> tuple[float, float, float]:
    """Mean and 95% t-interval over conditions (NaN interval for fewer than 2)."""
    v = np.asarray([x for x in values if x is not None and np.isfinite(x)], dtype=float)
    if v.size == 0:
        return math.nan, math.nan, math.nan
    if v.size < 2:
        return float(v.mean()), math.nan, math.nan
    half = stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size)
    return float(v.mean()), float(v.mean() - half), float(v.mean() + half)


def _paper(method: str) -> dict[str, float | None]:
    from postrisk.evaluation.paper import paper_value
    from postrisk.methods.registry import display_name

    name = display_name(method)
    return {"spearman_eu_posterior_excess_risk": paper_value(
                "text", "rho_eu_posterior_excess_risk", name),
            "rho_eu_au_hat": paper_value("table8", "rho_eu_au_hat", name,
                                         "posterior_excess_risk"),
            "delta_ent_posterior_excess_risk": paper_value("table8", "delta_ent", name,
                                                           "posterior_excess_risk"),
            "delta_ent_pointwise_excess_risk": paper_value("table10", "delta_ent", name,
                                                           "pointwise_excess_risk")}


def _fmt(mean: float, lo: float, hi: float) -> str:
    if not np.isfinite(mean):
        return "n/a"
    return f"{mean:+.2f}" + (f" [{lo:+.2f}, {hi:+.2f}]" if np.isfinite(lo) else "")


def report(rows: list[dict]) -> str:
    """The Markdown tables of the module docstring."""
    columns = [*(f"spearman_eu_{t}" for t in TARGETS), "rho_eu_au_hat", "spearman_au",
               "delta_ent_posterior_excess_risk"]
    head = ["variant", "mode", "fits", "failed/diverged", *columns]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    papers = []
    extras = []
    keys = sorted({(r["variant"], r["mode"], r["trials"]) for r in rows},
                  key=lambda k: (list(VARIANTS).index(k[0]), k[1], k[2]))
    for variant, mode, trials in keys:
        sub = [r for r in rows if (r["variant"], r["mode"], r["trials"]) == (variant, mode,
                                                                               trials)]
        bad = sum(1 for r in sub if r["status"] != "ok" or r.get("diverged"))
        label = f"tuned ({trials})" if mode == "tuned" else mode
        cells = [_fmt(*_interval([r.get(c) for r in sub])) for c in columns]
        lines.append(f"| {variant} | {label} | {len(sub)} | {bad} | " + " | ".join(cells) + " |")
        method = VARIANTS[variant][0]
        if variant.split("/")[0] == method and method not in [p[0] for p in papers]:
            papers.append((method, _paper(method)))
        if method == "ngboost_nig":
            profiles = [r["inverse_nu_by_shell"] for r in sub if r.get("inverse_nu_by_shell")]
            if profiles:
                width = min(len(p) for p in profiles)
                mean = np.mean([p[:width] for p in profiles], axis=0)
                extras.append(f"- {variant}, {label}: median 1/ν by shell (inner → outer) "
                              + ", ".join(f"{v:.3f}" for v in mean))
        if method == "nn_deup":
            zero = _interval([r.get("eu_zero_share") for r in sub])
            plain = _interval([r.get("spearman_eu_posterior_excess_risk") for r in sub])
            ties = _interval([r.get("spearman_eu_posterior_excess_risk_random_ties")
                              for r in sub])
            extras.append(f"- {variant}, {label}: exact-zero ÊU share {_fmt(*zero)}; "
                          f"ρ(ÊU, posterior excess risk) plain {_fmt(*plain)}, ties broken at "
                          f"random {_fmt(*ties)}")
    lines += ["", "Paper (Section 5 text; Table 8: posterior excess risk; Table 10: pointwise):",
              ""]
    for method, values in papers:
        lines.append(f"- {method}: " + ", ".join(
            f"{k} {v:.2f}" for k, v in values.items() if v is not None))
    if extras:
        lines += ["", *extras]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", default="results", type=Path)
    parser.add_argument("--out", default=None, type=Path)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS))
    parser.add_argument("--modes", nargs="+", default=["default", "tuned"],
                        choices=["default", "tuned"])
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(f"{k}: {m} {s}" for k, (m, s) in VARIANTS.items()))
        return 0
    unknown = sorted(set(args.variants) - set(VARIANTS))
    if unknown:
        parser.error(f"unknown variants {unknown}; --list shows them")
    missing = [c for c in CONDITIONS if not _store(args.results, c).exists()]
    if missing:
        parser.error(f"no task store for {missing} under {args.results}/tasks: run make demo")
    out = args.out or args.results / "benchmarks" / "fidelity"
    out.mkdir(parents=True, exist_ok=True)
    cache = out / "fidelity.jsonl"
    done = [json.loads(line) for line in cache.read_text().splitlines()] \
        if cache.exists() else []
    have = {(r["variant"], r["condition"], r["mode"], r["trials"]) for r in done}
    todo = [(v, c, m) for m in args.modes for v in args.variants for c in CONDITIONS
            if (v, "/".join(c), m, args.trials if m == "tuned" else 0) not in have]
    print(f"{len(todo)} items to run ({len(have)} cached) on {args.jobs} processes", flush=True)
    t0 = time.perf_counter()
    broken = False
    # a worker is replaced after MAX_ITEMS_PER_WORKER items: JAX's compilation caches grow
    # with every architecture a sweep tries (two long-lived workers ran out of 24 GB)
    with ProcessPoolExecutor(max_workers=args.jobs,
                             max_tasks_per_child=MAX_ITEMS_PER_WORKER) as pool:
        futures = {pool.submit(run_item, v, c, m, args.trials, str(args.results), str(out)):
                   (v, c, m) for v, c, m in todo}
        for k, future in enumerate(as_completed(futures), 1):
            try:
                row = future.result()
            except BrokenProcessPool as err:  # a worker died (out of memory?): keep what is done
                broken = True
                print(f"{futures[future]}: {err}; rerun to resume", flush=True)
                continue
            with cache.open("a") as fh:
                fh.write(json.dumps(row, default=str) + "\n")
            done.append(row)
            print(f"[{k}/{len(todo)}] {row['variant']} {row['condition']} {row['mode']}: "
                  f"{row['status']} (tune {row['tune_seconds']:.0f} s, fit "
                  f"{row['fit_seconds']:.1f} s)", flush=True)
    wanted = [r for r in done if r["variant"] in args.variants and r["mode"] in args.modes
              and r["trials"] in (0, args.trials)]
    text = report(wanted)
    (out / "fidelity.md").write_text(text + "\n")
    print(text)
    print(f"\nrunning time {time.perf_counter() - t0:.0f} s for {len(todo)} new items")
    return 1 if broken else 0


if __name__ == "__main__":
    raise SystemExit(main())
