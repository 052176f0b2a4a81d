"""The SN study's fits (App. D.4): three arms of a network method on one condition's instances.

Arms (:data:`ARMS`):

- ``plain`` — the benchmark's own configuration of the condition (its fit store's), refitted
  as the benchmark fits it (``random_state`` = the seed): a deterministic method's predictions
  equal the benchmark's; the refit is needed for the backbone's features.
- ``sn`` — every dense layer of the residual backbone spectrally normalised
  (``spectral_norm`` fixed on), ``sn_coeff`` searched log-uniformly in the configured range
  (paper: [0.5, 3]) and everything else re-tuned with the benchmark's sweep.
- ``wd`` — no spectral normalisation, ``weight_decay`` searched log-uniformly in the
  configured range (paper: [1e-2, 1], the benchmark's is [1e-6, 1e-2]) and everything else
  re-tuned. The control: does a conventional regulariser of comparable strength do the same?

Both sweeps run like the benchmark's (:func:`postrisk.tuning.tune`: Optuna TPE on the
training sample of the condition's first candidate seed, the benchmark's 80/20 split,
validation NLL; the method's fixed settings kept) with the study's trial count, each from its
own journal, and their winner is fitted on every seed.

Per (seed, arm) :func:`instance_record` gives one row of :data:`RECORD_COLUMNS`: ρ(ÊU, posterior
excess risk) and ρ(ÊU, posterior variance) (the oracle's targets of the arm's own mean), the
NMSE of the mean against f* (mean squared error over Var(f*), at the evaluation points), the
local distance preservation of the backbone's features
(:func:`postrisk.evaluation.distance_preservation.mean_preservation` over the networks the EU
is read from, :func:`postrisk.methods.nn.features.backbone_features`) on at most
:data:`MAX_POINTS` evaluation points (a fixed random subset keyed by the instance,
the same for every arm and method), and the configuration's depth, width, epochs, batch size,
gradient steps, spectral-norm coefficient, weight decay and learning rate.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from postrisk.core import seeding
from postrisk.core.io import write_text_atomic
from postrisk.core.progress import progress_steps
from postrisk.evaluation.distance_preservation import (
    MAX_POINTS,
    mean_preservation,
    preservation_subset,
)
from postrisk.evaluation.metrics import spearman
from postrisk.methods import (
    backbone_features,
    benchmark_configuration,
    resolve_method,
    run_estimator,
)
from postrisk.tasks.key import TaskKey
from postrisk.tasks.task import Task
from postrisk.tuning import TuningResult, tune

logger = logging.getLogger(__name__)

#: The study's arms, in the order they are fitted and reported.
ARMS = ("plain", "sn", "wd")
#: The columns of a record file, one row per (seed, arm).
RECORD_COLUMNS = ("dataset", "prior", "noise", "coverage", "seed", "method", "arm", "status",
                  "error", "rho_risk", "rho_var", "nmse", "preservation", "preservation_points",
                  "n_blocks", "width", "n_epochs", "batch_size", "grad_steps", "sn_coeff",
                  "weight_decay", "learning_rate", "fit_seconds")


def arm_sweep(arm: str, sn_coeff: Sequence[float], weight_decay: Sequence[float]
              ) -> tuple[dict[str, Any], dict[str, tuple]]:
    """(fixed settings, search-space changes) of a re-tuned arm; ``sn_coeff`` and
    ``weight_decay``: the [low, high] of their log-uniform ranges."""
    if arm == "sn":
        return {"spectral_norm": True}, {"sn_coeff": ("float", float(sn_coeff[0]),
                                                      float(sn_coeff[1]), "log")}
    if arm == "wd":
        return {"spectral_norm": False}, {"weight_decay": ("float", float(weight_decay[0]),
                                                           float(weight_decay[1]), "log")}
    raise ValueError(f"arm {arm!r} is not re-tuned (re-tuned arms: sn, wd)")


def nmse(mean: np.ndarray, f_true: np.ndarray) -> float:
    """mean((m − f*)²) / Var(f*) over the evaluation points (NaN where f* is constant)."""
    f_true = np.asarray(f_true, dtype=np.float64)
    var = float(np.var(f_true))
    if not var > 0:
        return math.nan
    return float(np.mean((np.asarray(mean, dtype=np.float64) - f_true) ** 2) / var)


def preservation_rows(task: Task, max_points: int = MAX_POINTS) -> np.ndarray:
    """The evaluation points whose distances enter the preservation: all of them, or a fixed
    random subset of ``max_points`` keyed by the instance."""
    label = TaskKey.from_attrs(task.ds.attrs).label
    return preservation_subset(task.x_eval.shape[0], int(max_points),
                               seeding.rng("sn_preservation", label))


def _config_columns(config: Mapping[str, Any], arm: str, n_train: int) -> dict[str, Any]:
    epochs, batch = int(config["n_epochs"]), int(config["batch_size"])
    return {"n_blocks": int(config["n_blocks"]), "width": int(config["width"]),
            "n_epochs": epochs, "batch_size": batch,
            "grad_steps": epochs * math.ceil(n_train / min(batch, n_train)),
            "sn_coeff": float(config["sn_coeff"]) if arm == "sn" else math.nan,
            "weight_decay": float(config["weight_decay"]),
            "learning_rate": float(config["learning_rate"])}


def instance_record(method: str, config: Mapping[str, Any], task: Task, arm: str,
                    n_threads: int = 1, max_points: int = MAX_POINTS
                    ) -> dict[str, Any]:
    """One row of :data:`RECORD_COLUMNS`: ``method`` at ``config`` fitted on the instance
    (``random_state`` = its seed) and judged against its oracle (module docstring); never
    raises on a failed fit (status ``failed``, NaN scores)."""
    key = TaskKey.from_attrs(task.ds.attrs)
    row: dict[str, Any] = {**{k: getattr(key, k) for k in ("dataset", "prior", "noise",
                                                             "coverage")},
                           "seed": int(key.seed), "method": method, "arm": arm,
                           **_config_columns(config, arm, task.x_train.shape[0])}
    cls = resolve_method(method)
    estimator = cls(random_state=int(key.seed), n_threads=int(n_threads), **dict(config))
    record = run_estimator(estimator, task.x_train, task.y_train, task.x_eval)
    row.update(status=record.status, error=record.error, fit_seconds=record.fit_seconds,
               rho_risk=math.nan, rho_var=math.nan, nmse=math.nan, preservation=math.nan,
               preservation_points=0)
    if record.status != "ok":
        return row
    targets = task.eu_targets(record.mean)
    rows = preservation_rows(task, max_points)
    inputs, features = backbone_features(estimator, task.x_eval[rows])
    preservation = mean_preservation(inputs, features)
    for name, target in (("rho_risk", "posterior_excess_risk"), ("rho_var", "posterior_variance")):
        value = spearman(record.epistemic_var, targets[target])
        row[name] = math.nan if value is None else value
    row.update(nmse=nmse(record.mean, task.f_true_eval),
               preservation=math.nan if preservation is None else preservation,
               preservation_points=int(rows.size))
    return row


def tune_arm(method: str, arm: str, task: Task, settings: Mapping[str, Any],
             study: Mapping[str, Any], journal: str | Path, condition: Sequence[str],
             n_threads: int = 1) -> TuningResult:
    """The sweep of a re-tuned arm on ``task``'s training sample (the condition's first seed;
    the benchmark's 80/20 split of the condition): the method's fixed ``settings`` and the
    arm's (:func:`arm_sweep`), ``study``: config
    ``studies.sn_study`` (``trials``, ``startup_trials``, ``validation_fraction``, the ranges)."""
    fixed, changes = arm_sweep(arm, study["sn_coeff"], study["weight_decay"])
    return tune(method, task.x_train, task.y_train, journal=journal,
                fixed={**dict(settings), **fixed}, n_trials=int(study["trials"]),
                startup_trials=int(study["startup_trials"]),
                validation_fraction=float(study["validation_fraction"]),
                split_key=tuple(condition), sampler_seed=0, random_state=0,
                n_threads=n_threads, space_changes=changes)


def write_sn_fits(method: str, benchmark: str | Path, tasks: Mapping[int, str | Path],
                  settings: Mapping[str, Any], study: Mapping[str, Any], journal: str,
                  condition: Sequence[str], out: str | Path, tuning_out: str | Path,
                  n_threads: int = 1) -> pd.DataFrame:
    """One (method, condition) of the study: the plain arm at the benchmark's configuration
    (its fit store ``benchmark``; its first ``study["seeds_per_condition"]`` seeds), the SN
    and WD sweeps (journals ``{journal}.<arm>.log``; on the training sample of the condition's
    first candidate seed, as the benchmark's) and their winners, each fitted on those seeds
    (``tasks``: every candidate seed → its task store); writes the records (``out``, CSV) and
    the arms' configurations and sweeps (``tuning_out``, JSON)."""
    name, plain, seeds = benchmark_configuration(benchmark, int(study["seeds_per_condition"]))
    if name != method:
        raise ValueError(f"{benchmark} holds {name}, not {method}")
    missing = [s for s in seeds if s not in tasks]
    if missing:
        raise ValueError(f"{out}: no task store given for seed(s) {missing}")
    if not seeds:
        raise ValueError(f"{benchmark}: the benchmark fitted {method} on no seed")
    instances = {s: Task.load(tasks[s]) for s in seeds}
    first = min(int(s) for s in tasks)  # the benchmark tunes on the condition's first seed
    tuned_on = instances.get(first) or Task.load(tasks[first])
    sweeps = {arm: tune_arm(method, arm, tuned_on, settings, study, f"{journal}.{arm}.log",
                            condition, n_threads) for arm in ARMS[1:]}
    configs = {"plain": dict(plain), **{arm: sweeps[arm].config for arm in ARMS[1:]}}
    rows = []
    with progress_steps(len(seeds) * len(ARMS), f"[{method}] SN study fits", logger) as progress:
        for seed in seeds:
            for arm in ARMS:
                row = instance_record(method, configs[arm], instances[seed], arm, n_threads,
                                      int(study["max_preservation_points"]))
                rows.append(row)
                progress.advance(message=f"seed {seed}, {arm}: {row['status']}, ρ_risk "
                                         f"{row['rho_risk']:.3f}, preservation "
                                         f"{row['preservation']:.3f}")
    frame = pd.DataFrame(rows, columns=list(RECORD_COLUMNS))
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out, index=False)
    payload = {"method": method, "condition": list(condition), "seeds": seeds,
               "configs": configs,
               "sweeps": {arm: json.loads(sweeps[arm].to_json()) for arm in ARMS[1:]}}
    write_text_atomic(tuning_out, json.dumps(payload, indent=2, sort_keys=True,
                                             default=str) + "\n")
    return frame
