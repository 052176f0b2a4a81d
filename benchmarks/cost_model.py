"""The cost model, measured: one unit of every stage timed at three sizes spanning Table 4, the
entries of the cost model (``cost_model.yaml``) fitted to them.

    .venv/bin/python benchmarks/cost_model.py measure [--out benchmarks/measured/cost_model.csv]
        [--sizes concrete space_ga sarcos] [--only STAGE[/NAME] ...] [--budget-min 60]
    .venv/bin/python benchmarks/cost_model.py fit [--points benchmarks/measured/cost_model.csv]
        [--anchor benchmarks/measured/paper_slice.csv] [--slice-results runs/paper_slice/results]
        [--speed-reference benchmarks/measured/speed_DATE.csv ...] [--write-config
        [--write-only E ..]]

``measure`` builds, for each size, one instance per prior of the dataset's shape (its N, d, n
and n_eval: Concrete 863 rows = n + n_eval, Space GA 2,760, SARCOS 6,271) from *generated*
covariates (uniform columns under the dataset's column names, a smooth target): the timings
depend on the shapes, not on the values. Every unit runs in a process of its own through the
workflow's own step (`postrisk.workflow.steps`) with the paper's settings (config.yaml), as a
cluster job does, so each time includes the imports and JAX's compilations:

- covariates, each prior's fit and sample store: measured whole;
- the exact GP posterior: measured whole; HBART's and BNN's MCMC posteriors: two shortened runs
  (fewer warm-up steps and draws, the chains as configured), a line through (steps, seconds)
  *extrapolated* to the configured steps (said so in the ``how`` column);
- each method's unit (a 30-trial sweep and 10 seeds' fits): the sweep's first trials (the
  journal's own, resumed one trial at a time until the size's time cap, at least one) and one fit
  with the best configuration, *extrapolated* to 30 × the mean trial + 10 × the fit + the
  process's own overhead.

Rows are appended as each unit ends (a rerun skips the points already in ``--out``).

A rerun with the same ``--out`` goes on where the last stopped (``--budget-min`` stops it
between units).

``fit`` fits each entry's ``minutes + minutes_per_size · (rows / 1000)^power`` to its points
(least squares on the relative error, power in [0.5, 3]); where the paper-settings slice measured
the same unit at the same size (``benchmarks/measured/paper_slice.csv``: whole jobs at the paper's
settings), the entry's points are scaled so that the curve passes through the slice's time (the
slice's fit jobs fitted 3 seeds: 7 more fits are added from their fit stores' recorded seconds).
It prints the points and the entries; ``--write-config`` writes the entries into cost_model.yaml's
``cost_model`` (minutes, minutes_per_size and power; threads and memory are kept), each under a
comment saying where it came from.
"""

from __future__ import annotations

import argparse
import csv
import functools
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from cost_anchors import UNIT_FITS, read_points, slice_anchors, speed_factors  # noqa: E402
from job_times import machine  # noqa: E402

SIZES = ("concrete", "space_ga", "sarcos")
PRIORS = ("gp", "hbart", "bnn")
#: Seconds of sweep trials per method and size after which no further trial starts (at least
#: one always runs), by the size's place in SIZES.
TRIAL_CAP_S = (10.0, 15.0, 20.0)
#: The shortened MCMC runs: (warm-up, draws) per chain, two lengths for the line.
SHORT_RUNS = {"hbart": ((20, 4), (60, 4)), "bnn": ((20, 10), (60, 30))}
#: Entries scaled like their family's members that the slice measured, where the slice did not
#: measure them: the network methods share one training loop (their sweeps' first trials each
#: compile a new architecture, which the extrapolation counts 30 times).
FAMILIES = {"fit": ("nn_",)}
FIELDS = ("dataset", "rows", "d", "stage", "name", "seconds", "how", "detail", "machine",
          "date")
UNIT_TRIALS = 30  # and UNIT_FITS fits (cost_anchors)


# ------------------------------------------------------------------------- one unit (a process)

@functools.cache
def _config(dataset: str) -> dict:
    """config.yaml narrowed to one cell of ``dataset`` and one seed (its settings untouched)."""
    from postrisk.grid.config import merge_layers, read_layers, validate_config

    layers = [*read_layers(REPO / "config.yaml"),
              {"datasets": [dataset], "ood_datasets": [], "noise_modes": ["smooth_monotone"],
               "coverages": ["balanced"], "seeds": {"valid_per_cell": 1, "candidates": 1},
               "studies": {}, "disentanglement": {"methods": []}}]
    return validate_config(merge_layers(layers), layers)


def _units(cfg: dict, stage: str) -> list:
    from postrisk.planning.planner import Planner

    return Planner(cfg).units[stage]


def _generated_covariates(dataset: str, out: str) -> None:
    """The dataset's covariate store from generated columns (its N rows and d columns): the
    workflow's own processing (cleaning, split, shells, PC1)."""
    import numpy as np
    import pandas as pd

    from postrisk.covariates.build import covariates_from_raw, write_covariates
    from postrisk.covariates.fetch import RawTable
    from postrisk.covariates.registry import registry

    spec = registry()[dataset]
    rng = np.random.default_rng(0)
    x = rng.random((spec.N, len(spec.columns)))
    target = np.sin(3 * x[:, 0]) + x[:, 1:].mean(axis=1) + 0.1 * rng.standard_normal(spec.N)
    frame = pd.DataFrame(x, columns=list(spec.columns)).assign(**{spec.target: target})
    raw = RawTable(frame=frame, origin="generated", source=spec.source, url=None, path=None,
                   sha256="")
    write_covariates(covariates_from_raw(spec, raw, n_eval_cap=1500), out)


def _mcmc_settings(cfg: dict, prior: str, warmup: int, draws: int) -> dict:
    settings = json.loads(json.dumps(cfg["posterior"][prior]))
    settings["warmup"] = warmup
    settings["draws_per_chain" if prior == "hbart" else "samples"] = draws
    if prior == "hbart":
        settings["thin"] = 1  # every step costs the same: the shortened runs keep every draw
    return settings


def mcmc_steps(settings: dict, prior: str) -> int:
    """MCMC steps per chain of ``settings`` (HBART: warm-up + draws × thinning)."""
    if prior == "hbart":
        return int(settings["warmup"]) + int(settings["draws_per_chain"]) * int(settings["thin"])
    return int(settings["warmup"]) + int(settings["samples"])


def run_unit(dataset: str, stage: str, name: str | None, size_index: int) -> dict:
    """One unit in this process (the current folder holds the size's ``results``)."""
    from postrisk.workflow import steps

    cfg = _config(dataset)
    t0 = time.perf_counter()
    if stage == "covariates":
        _generated_covariates(dataset, _units(cfg, "covariates")[0].out)
        return {"seconds": time.perf_counter() - t0, "how": "measured"}
    if stage == "prior":
        unit = next(u for u in _units(cfg, "prior") if u.prior == name)
        steps.fit_prior(dataset, name, unit.covariates, cfg[f"{name}_prior"], unit.out)
        return {"seconds": time.perf_counter() - t0, "how": "measured"}
    if stage == "sample":
        unit = next(u for u in _units(cfg, "sample") if u.key.prior == name)
        steps.make_samples([unit])
        return {"seconds": time.perf_counter() - t0, "how": "measured"}
    if stage == "posterior":
        unit = next(u for u in _units(cfg, "posterior") if u.key.prior == name)
        if name not in SHORT_RUNS:
            steps.make_task(unit.sample, dict(unit.settings), unit.out)
            return {"seconds": time.perf_counter() - t0, "how": "measured"}
        runs = []
        for warmup, draws in SHORT_RUNS[name]:
            settings = _mcmc_settings(cfg, name, warmup, draws)
            t1 = time.perf_counter()
            steps.make_task(unit.sample, settings, unit.out + f".short{warmup}")
            runs.append((mcmc_steps(settings, name), time.perf_counter() - t1))
        (s1, t1), (s2, t2) = runs
        per_step = max((t2 - t1) / (s2 - s1), 0.0)
        full = mcmc_steps(dict(unit.settings), name)
        overhead = (time.perf_counter() - t0) - t1 - t2  # imports, loading: once per job
        seconds = overhead + t1 + per_step * (full - s1)
        return {"seconds": seconds, "how": f"extrapolated from {s1} and {s2} steps per chain "
                f"to {full}", "detail": {"runs": runs, "per_step": per_step}}
    if stage == "fit":
        return _fit_unit(cfg, name, size_index, t0)
    if stage == "job":
        return _job_start(t0)
    raise ValueError(f"no unit for stage {stage!r}")


def _job_start(t0: float) -> dict:
    """What every cluster job pays before its units: Snakemake's start in the job (parsing the
    workflow and planning config.yaml's full grid) — measured as a dry run of one sample store
    in a scratch folder, the median of three."""
    import statistics

    snakemake = str(Path(sys.executable).with_name("snakemake"))
    times = []
    with tempfile.TemporaryDirectory() as scratch:
        for _ in range(3):
            t1 = time.perf_counter()
            run = subprocess.run([snakemake, "-s", str(REPO / "Snakefile"), "-d", scratch, "-n",
                                  "results/samples/concrete/gp/smooth_monotone/balanced/0.zarr"],
                                 capture_output=True, text=True)
            times.append(time.perf_counter() - t1)
            if run.returncode != 0:
                raise RuntimeError(run.stderr[-2000:])
    return {"seconds": statistics.median(times), "how": "measured: median of 3 dry runs of one "
            "store on config.yaml", "detail": {"runs": times}}


def _fit_unit(cfg: dict, method: str, size_index: int, t0: float) -> dict:
    """The sweep's first trials (until the size's cap) and one fit, extrapolated to the unit."""
    from postrisk.core.io import open_zarr
    from postrisk.methods.runner import run_fit
    from postrisk.tuning import tune

    unit = next(u for u in _units(cfg, "fit") if u.method == method)
    ds = open_zarr(unit.samples[0])
    x, y, x_eval = ds["x_train"].values, ds["y_train"].values, ds["x_eval"].values
    threads = int(cfg["cost_model"]["fit"].get(method, cfg["cost_model"]["fit"]["default"])
                  ["threads"])
    tuning = cfg["tuning"]
    journal = Path(unit.journal + ".cost")
    journal.unlink(missing_ok=True)
    trials: list[float] = []
    result = None
    t_sweep = time.perf_counter()
    while not trials or (sum(trials) < TRIAL_CAP_S[size_index] and len(trials) < UNIT_TRIALS):
        t1 = time.perf_counter()
        result = tune(method, x, y, journal=journal, fixed=unit.settings,
                      n_trials=int(tuning["trials"]), startup_trials=int(tuning["startup_trials"]),
                      validation_fraction=float(tuning["validation_fraction"]),
                      split_key=tuple(unit.condition), sampler_seed=0, random_state=0,
                      n_threads=threads, max_new_trials=1)
        trials.append(time.perf_counter() - t1)
        if result.n_trials == 0:  # nothing to search
            break
    sweep = time.perf_counter() - t_sweep
    t1 = time.perf_counter()
    record = run_fit(method, result.config, x, y, x_eval, random_state=0, n_threads=threads)
    fit = time.perf_counter() - t1
    overhead = (time.perf_counter() - t0) - sweep - fit
    searched = result.n_trials > 0
    mean_trial = sum(trials) / len(trials)
    seconds = overhead + (UNIT_TRIALS * mean_trial if searched else 0.0) + UNIT_FITS * fit
    return {"seconds": seconds,
            "how": (f"extrapolated: {UNIT_TRIALS} × the mean of {len(trials)} trials + "
                    f"{UNIT_FITS} × one fit" if searched else f"{UNIT_FITS} × one fit"),
            "detail": {"trials": trials, "fit": fit, "overhead": overhead,
                       "fit_ok": bool(record.ok), "n": len(y), "n_eval": len(x_eval)}}


# ------------------------------------------------------------------------------- measure

#: The stages whose stores the others read: always run (recorded once).
SETUP = ("covariates", "prior", "sample")


def _plan(sizes: list[str], only: list[str]) -> list[tuple[str, str, str | None]]:
    """(dataset, stage, name) in order: each size's set-up, then stage by stage over sizes."""
    from postrisk.grid.config import read_layers

    methods = read_layers(REPO / "config.yaml", cost_model=False)[0]["methods"]
    setup = [("covariates", None), *(("prior", p) for p in PRIORS),
             *(("sample", p) for p in PRIORS)]
    rest = [("posterior", p) for p in PRIORS] + [("fit", m) for m in methods]
    rest = [(s, n) for s, n in rest if not only or s in only or f"{s}/{n}" in only]
    job = [] if only and "job" not in only else [(sizes[0], "job", None)]
    return ([(d, s, n) for d in sizes for s, n in setup] + job
            + [(d, s, n) for s, n in rest for d in sizes])


def measure(args: argparse.Namespace) -> int:
    from postrisk.covariates.registry import registry
    from postrisk.planning.cost import CostModel

    out = Path(args.out)
    done = {(r["dataset"], r["stage"], r["name"]) for r in read_points(out)}
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    budget = args.budget_min * 60.0
    start = time.perf_counter()
    new_file = not out.exists()
    out.parent.mkdir(parents=True, exist_ok=True)
    print(f"cost model benchmark in {work}: sizes {', '.join(args.sizes)}; {machine()}",
          flush=True)
    with out.open("a", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        if new_file:
            writer.writeheader()
        for dataset, stage, name in _plan(args.sizes, args.only):
            recorded = (dataset, stage, name or "") in done
            if recorded and stage not in SETUP:
                continue
            elapsed = time.perf_counter() - start
            if elapsed > budget:
                print(f"budget of {args.budget_min} min spent: stopping (rerun to go on)")
                return 1
            folder = work / dataset
            folder.mkdir(exist_ok=True)
            t0 = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, __file__, "_unit", dataset, stage, name or "-",
                 str(list(args.sizes).index(dataset) if dataset in args.sizes else 0)],
                cwd=folder, capture_output=True, text=True,
                env={**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(REPO / "src")})
            wall = time.perf_counter() - t0
            label = f"{dataset:<9} {stage}/{name or ''}"
            if proc.returncode != 0:
                print(f"{label}: FAILED after {wall:.1f} s\n{proc.stderr[-3000:]}", flush=True)
                return 1
            result = json.loads(proc.stdout.strip().splitlines()[-1])
            if recorded:
                continue
            # the process's start (interpreter, imports before the unit's clock) is the job's too
            seconds = result["seconds"] + (max(wall - result["process_seconds"], 0.0)
                                           if stage != "job" else 0.0)
            spec = registry()[dataset]
            rows = CostModel.of(_config(dataset)).unit_rows(dataset)
            writer.writerow({"dataset": dataset, "rows": rows, "d": spec.d,
                             "stage": stage, "name": name or "", "seconds": f"{seconds:.2f}",
                             "how": result["how"],
                             "detail": json.dumps(result.get("detail", {})),
                             "machine": machine(), "date": date.today().isoformat()})
            fh.flush()
            print(f"{label:<32} {seconds:9.1f} s  (process {wall:.1f} s; {result['how']}) "
                  f"[{(time.perf_counter() - start) / 60:.1f} min]", flush=True)
    print(f"points in {out}")
    return 0


def unit_main(dataset: str, stage: str, name: str, size_index: int) -> int:
    t0 = time.perf_counter()
    result = run_unit(dataset, stage, None if name == "-" else name, size_index)
    result["process_seconds"] = time.perf_counter() - t0
    print(json.dumps(result))
    return 0


# ----------------------------------------------------------------------------------- fit

def fit_curve(rows: list[float], seconds: list[float]) -> dict[str, float]:
    """``minutes + minutes_per_size · (rows / 1000)^power`` through the points (minutes), least
    squares on the relative error; minutes and minutes_per_size ≥ 0, power in [0.5, 3]."""
    import numpy as np
    from scipy.optimize import least_squares

    s = np.asarray(rows, float) / 1000.0
    m = np.asarray(seconds, float) / 60.0

    def residual(theta):
        base, per, power = theta
        return (base + per * s ** power) / m - 1.0

    best = None
    for power0 in (0.75, 1.0, 1.5, 2.0):
        guess = [max(m.min() * 0.2, 1e-4), max(m.max() / s.max() ** power0, 1e-4), power0]
        fit = least_squares(residual, guess, bounds=([0, 0, 0.5], [np.inf, np.inf, 3.0]))
        if best is None or fit.cost < best.cost:
            best = fit
    base, per, power = best.x
    worst = float(np.max(np.abs(residual(best.x))))
    return {"minutes": base, "minutes_per_size": per, "power": power, "worst_rel_error": worst}


def _family(stage: str, name: str) -> str | None:
    return next((f for f in FAMILIES.get(stage, ()) if name.startswith(f)), None)


def early_stopping_ratios(path: Path, rule: str) -> dict[str, tuple[float, int]]:
    """Per method, the seconds its sweeps took with early stopping by ``rule`` over the seconds
    of the same sweeps run in full (``benchmarks/early_stopping.py --csv``: the conditions
    re-tuned both ways, at Concrete's size), and the number of conditions. Seconds, not the
    steps the trials ran: a method's cost per step differs between configurations (NGBoost-Bag's
    members, DKL's widths), and a trial's fixed costs (compilation, worker processes) are not
    cut; at larger sizes, where the steps dominate, the ratio is if anything smaller."""
    with path.open() as f:
        rows = list(csv.DictReader(f))
    out = {}
    for method in sorted({r["method"] for r in rows}):
        steps = {(r["condition"], r["rule"]): float(r["seconds"]) for r in rows
                 if r["method"] == method}
        both = [c for c, k in steps if k == rule and (c, "none") in steps]
        if both:
            out[method] = (sum(steps[c, rule] for c in both)
                           / sum(steps[c, "none"] for c in both), len(both))
    return out


def sweep_seconds(point: dict) -> float:
    """The seconds of a fit point's sweep: 30 × its mean trial (from its ``detail``)."""
    trials = json.loads(point["detail"] or "{}").get("trials") or []
    return UNIT_TRIALS * sum(trials) / len(trials) if trials else 0.0


def fitted_entries(points: list[dict], anchors: dict,
                   speed: dict[str, tuple[float, int]] | None = None,
                   sweep_ratio: dict[str, tuple[float, int]] | None = None,
                   rule: str = "") -> list[dict]:
    """Each entry's points (a day's times times its :func:`speed_factors` factor; scaled to
    the slice where it or its family was measured there; a fit unit's sweep times its
    method's ``sweep_ratio``, :func:`early_stopping_ratios`, after the scaling: the slice ran
    full sweeps) and its fitted curve."""
    speed = speed or {}
    sweep_ratio = sweep_ratio or {}
    by_entry: dict[tuple[str, str], list[dict]] = {}
    for p in points:
        factor = 1.0
        if p["date"] in speed:
            factor, units = speed[p["date"]]
            p = {**p, "seconds": str(float(p["seconds"]) * factor),
                 "how": f"{p['how']}; × {factor:.2f} for that day's machine speed (the median "
                        f"of {units} reference units timed again that day)"}
        if p["stage"] == "fit" and p["name"] in sweep_ratio:
            ratio, conditions = sweep_ratio[p["name"]]
            p = {**p, "sweep_cut": (1.0 - ratio) * sweep_seconds(p) * factor,
                 "how": f"{p['how']}; its sweep × {ratio:.2f}, the seconds of sweeps with "
                        f"early stopping ({rule}) over full sweeps' on {conditions} Concrete "
                        f"conditions (benchmarks/measured/early_stopping.csv)"}
        by_entry.setdefault((p["stage"], p["name"]), []).append(p)
    ratios: dict[tuple[str, str], list[tuple[str, float]]] = {}
    for (stage, name), group in by_entry.items():
        family = _family(stage, name)
        at = anchors.get((stage, name))
        bench = {int(p["rows"]): float(p["seconds"]) for p in group}
        if family and at and at[0] in bench:
            ratios.setdefault((stage, family), []).append((name, at[1] / bench[at[0]]))
    family_scale = {k: (math.exp(sum(math.log(r) for _, r in v) / len(v)), [n for n, _ in v])
                    for k, v in ratios.items()}
    entries = []
    for (stage, name), group in by_entry.items():
        group = sorted(group, key=lambda p: int(p["rows"]))
        rows = [int(p["rows"]) for p in group]
        seconds = [float(p["seconds"]) for p in group]
        scale, anchored = 1.0, ""
        key = (stage, name or "")
        if key in anchors and anchors[key][0] in rows:
            at, measured, *note = anchors[key]
            scale = measured / seconds[rows.index(at)]
            anchored = (f"scaled × {scale:.2f} to the slice's {measured:.0f} s at {at} rows"
                        + (f", {note[0]}" if note and note[0] else ""))
        elif (stage, _family(stage, name)) in family_scale:
            scale, members = family_scale[(stage, _family(stage, name))]
            anchored = (f"scaled × {scale:.2f}, the geometric mean of its family's slice "
                        f"anchors ({', '.join(members)})")
        if stage == "job":  # one number, no size
            curve = {"minutes": sum(seconds) / len(seconds) / 60.0, "minutes_per_size": 0.0,
                     "power": 1.0, "worst_rel_error": 0.0}
        else:
            cut = [float(p.get("sweep_cut", 0.0)) for p in group]
            curve = (fit_curve(rows, [(s - c) * scale for s, c in zip(seconds, cut, strict=True)])
                     if len(rows) >= 3 else None)
        entries.append({"stage": stage, "name": name, "rows": rows, "seconds": seconds,
                        "scale": scale, "anchored": anchored, "curve": curve,
                        "how": group[-1]["how"], "machine": group[0]["machine"],
                        "date": ", ".join(sorted({p["date"] for p in group}))})
    return entries


def print_entries(entries: list[dict]) -> None:
    print("| stage | entry | rows | seconds per unit (measured or extrapolated) | anchor | "
          "minutes | minutes_per_size | power | worst rel. error |")
    print("|---|---|---|---|---|---:|---:|---:|---:|")
    for e in entries:
        c = e["curve"] or {}
        print(f"| {e['stage']} | {e['name'] or '–'} | {', '.join(f'{r:,}' for r in e['rows'])} "
              f"| {', '.join(f'{s:,.1f}' for s in e['seconds'])} | {e['anchored'] or '–'} | "
              f"{c.get('minutes', math.nan):.3g} | {c.get('minutes_per_size', math.nan):.3g} | "
              f"{c.get('power', math.nan):.2f} | {c.get('worst_rel_error', math.nan):.2f} |")


def fit_main(args: argparse.Namespace) -> int:
    points = read_points(Path(args.points))
    if not points:
        print(f"no points in {args.points}: run `measure` first")
        return 1
    speed = {}
    for reference in args.speed_reference:
        speed.update(speed_factors(Path(reference), points))
    for day, (factor, units) in speed.items():
        print(f"points of {day}: × {factor:.3f} (median over {units} reference units)")
    ratios, rule = {}, ""
    if args.early_stopping:
        from early_stopping import label
        from postrisk.tuning.early_stopping import EarlyStopping

        settings = _config("concrete")["tuning"].get("early_stopping")
        chosen = EarlyStopping.of(settings)
        rule = label(chosen.rule, int(chosen.rungs), int(chosen.reduction_factor))
        measured = early_stopping_ratios(Path(args.early_stopping), rule)
        ratios = {m: r for m, r in measured.items() if EarlyStopping.of(settings, m).enabled}
        for method, (ratio, conditions) in measured.items():
            print(f"{method}: sweeps × {ratio:.3f} ({rule}, {conditions} conditions)"
                  + ("" if method in ratios else "; config.yaml's early stopping leaves it out"))
    entries = fitted_entries(points, slice_anchors(Path(args.anchor), Path(args.slice_results)),
                             speed, ratios, rule)
    print_entries(entries)
    if args.write_config:
        from cost_config import write_entries

        chosen = [e for e in entries if not args.write_only
                  or f"{e['stage']}/{e['name']}" in args.write_only]
        changed = write_entries(REPO / "cost_model.yaml", chosen)
        print(f"wrote {changed} entries into cost_model.yaml")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_unit":
        return unit_main(argv[1], argv[2], argv[3], int(argv[4]))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    m = sub.add_parser("measure", help="time the units (each in its own process)")
    m.add_argument("--out", default=str(REPO / "benchmarks" / "measured" / "cost_model.csv"))
    m.add_argument("--sizes", nargs="+", default=list(SIZES))
    m.add_argument("--only", nargs="*", default=[], help="stage or stage/name")
    m.add_argument("--budget-min", type=float, default=60.0)
    m.add_argument("--workdir", default=str(Path(tempfile.gettempdir()) / "postrisk-cost-model"),
                   help="where the units' stores are built")
    f = sub.add_parser("fit", help="fit the entries to the points")
    f.add_argument("--points", default=str(REPO / "benchmarks" / "measured" / "cost_model.csv"))
    f.add_argument("--anchor", default=str(REPO / "benchmarks" / "measured" /
                                          "paper_slice.csv"))
    f.add_argument("--slice-results", default=str(REPO / "runs" / "paper_slice" / "results"),
                   help="the slice's results (its fit stores' seconds per seed)")
    f.add_argument("--write-config", action="store_true")
    f.add_argument("--write-only", nargs="*", default=[],
                   help="write only these entries (stage/name); the others keep their lines")
    f.add_argument("--speed-reference", nargs="*", default=[],
                   help="`measure --out` files of reference units timed again on later days "
                        "(one per day): each day's points are put on the first day's footing")
    f.add_argument("--early-stopping", default="",
                   help="benchmarks/early_stopping.py --csv file: the fit units' sweeps of the "
                        "methods config.yaml's tuning.early_stopping applies to are cut to the "
                        "ratio of seconds it measured for the rule")
    args = parser.parse_args(argv)
    return measure(args) if args.command == "measure" else fit_main(args)


if __name__ == "__main__":
    raise SystemExit(main())
