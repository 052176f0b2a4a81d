"""NGBoost-NIG's fit stability at the corners of its search space, per natural-gradient metric.

For each ``natural_gradient_metric`` of NGBoost-NIG (``regularised_fisher``, ``empirical``,
``euclidean``) and each of the 8 corners of (kl_strength ∈ {1e-4, 1}) × (evidential_strength
∈ {1e-4, 1}) × (learning_rate ∈ {0.01, 0.2}) — with n_estimators ``--corners-n-estimators``
(400), max_depth 6, minibatch_frac and col_sample 1 — one fit (seed ``--seed``) is made the
workflow's way: the method built as ``run_fit`` builds it, then fitted, predicted and checked
by ``run_estimator`` (which ``run_fit`` calls; it is called here directly to keep the fitted
model, whose θ₃ = ln(α − 1) the check below reads). Each fit is then:

- ``failed``: the fit or prediction raised (the error is printed);
- ``diverged``: any AU or EU at x_eval non-finite or above 1e12 (standardised or not, that is
  a blown-up output), or θ₃ below −30 anywhere at x_eval (α − 1 < 1e-13: the collapse
  α → 1 that an undamped natural step in θ₃ runs into);
- ``ok`` otherwise.

Printed per fit: the status, the fit seconds, the median over x_eval of EU/AU (= 1/λ, the
NIG's split of the predictive variance), the smallest θ₃ at x_eval and, with a task store, the
Spearman correlation of the EU with the reference posterior variance of f (the true EU). A
markdown table, then one line per metric: "k of 8 corners stable".

Data: ``--store PATH`` (a task store, ``Task.load``: x_train, y_train, x_eval); without it a toy
problem, ``--toy``:

- ``1d`` (default): the project's 1-D toy (:mod:`postrisk.evaluation.toy`; 400 inputs on
  [−1, −0.3] ∪ [0.3, 1], f = sin 3x + x/2, σ_ε from 0.05 to 0.3; 601 evaluation points on
  [−1.5, 1.5], so the gap and beyond the data are included);
- ``8d``: 400 inputs uniform in [0, 1]^8, f(x) = sin(2πx₁) + x₂² − x₃ + 0.5·x₄x₅, noise
  variance 0.02 + 0.28·x₁ (heteroscedastic along the first input); 500 evaluation points
  uniform in [−0.25, 1.25]^8 (partly outside the data).

Usage: ``python benchmarks/ngboost_nig_stability.py [--store PATH | --toy 1d|8d]
[--metrics regularised_fisher empirical euclidean] [--corners-n-estimators 400] [--seed 0]``
(24 fits; about 5 to 10 seconds each at n = 400 on one core).
"""

from __future__ import annotations

import argparse
import itertools
import math
from dataclasses import dataclass

import numpy as np

from postrisk.methods.ngboost import NIG_METRICS
from postrisk.methods.runner import resolve_method, run_estimator

#: The corners' axes: (kl_strength, evidential_strength, learning_rate), each at the bounds of
#: NGBoost-NIG's search space.
CORNER_AXES = {"kl_strength": (1e-4, 1.0), "evidential_strength": (1e-4, 1.0),
               "learning_rate": (0.01, 0.2)}
#: The rest of each corner's setting.
FIXED = {"max_depth": 6, "minibatch_frac": 1.0, "col_sample": 1.0}
#: AU or EU above this (or non-finite) anywhere at x_eval: diverged.
MAX_VARIANCE = 1e12
#: θ₃ = ln(α − 1) below this anywhere at x_eval: diverged (α collapsed onto 1).
MIN_THETA3 = -30.0


@dataclass
class Data:
    label: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_eval: np.ndarray
    true_eu: np.ndarray | None = None  # the reference posterior variance of f at x_eval


@dataclass
class Outcome:
    metric: str
    corner: dict
    status: str
    fit_seconds: float
    eu_over_au: float
    min_theta3: float
    eu_spearman: float | None
    error: str


def toy_data(kind: str, seed: int = 0) -> Data:
    """The toy problems of the module docstring."""
    if kind == "1d":
        from postrisk.evaluation.toy import toy_problem

        toy = toy_problem(seed)
        return Data("toy 1-D", toy.x_train, toy.y_train, toy.x_eval)
    if kind != "8d":
        raise ValueError(f"unknown toy {kind!r} (1d, 8d)")
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.0, 1.0, size=(400, 8))
    f = np.sin(2 * np.pi * x[:, 0]) + x[:, 1] ** 2 - x[:, 2] + 0.5 * x[:, 3] * x[:, 4]
    y = f + np.sqrt(0.02 + 0.28 * x[:, 0]) * rng.standard_normal(len(x))
    return Data("toy 8-D", x, y, rng.uniform(-0.25, 1.25, size=(500, 8)))


def store_data(path: str) -> Data:
    from postrisk.tasks.task import Task

    task = Task.load(path)
    return Data(f"store {path}", task.x_train, task.y_train, task.x_eval,
                true_eu=task.posterior_var)


def corners() -> list[dict]:
    names = list(CORNER_AXES)
    return [dict(zip(names, values, strict=True))
            for values in itertools.product(*(CORNER_AXES[n] for n in names))]


def fit_one(data: Data, metric: str, corner: dict, n_estimators: int, seed: int) -> Outcome:
    config = {**FIXED, **corner, "n_estimators": n_estimators,
              "natural_gradient_metric": metric}
    method = resolve_method("ngboost_nig")(random_state=seed, n_threads=1, **config)
    record = run_estimator(method, data.x_train, data.y_train, data.x_eval)
    theta3 = math.nan
    if hasattr(method, "model_"):
        with np.errstate(all="ignore"):
            theta = method._theta(data.x_eval)
        theta3 = float(np.min(theta[2])) if np.all(np.isfinite(theta)) else -math.inf
    au, eu = record.aleatoric_var, record.epistemic_var
    status, error = "ok", ""
    if not record.ok:
        nonfinite = "non-finite" in record.error
        status, error = ("diverged" if nonfinite else "failed"), record.error
    elif max(float(np.max(au)), float(np.max(eu))) > MAX_VARIANCE:
        status, error = "diverged", f"max AU {np.max(au):.3g}, max EU {np.max(eu):.3g}"
    if status == "ok" and not theta3 >= MIN_THETA3:
        status, error = "diverged", f"min θ₃ {theta3:.3g}"
    with np.errstate(all="ignore"):
        ratio = float(np.median(eu / au)) if record.ok else math.nan
    rho = None
    if data.true_eu is not None and record.ok:
        from postrisk.evaluation.metrics import spearman

        rho = spearman(eu, data.true_eu)
    return Outcome(metric, corner, status, record.fit_seconds, ratio, theta3, rho, error)


def _number(value: float | None, fmt: str) -> str:
    return "–" if value is None or not math.isfinite(value) else format(value, fmt)


def table(outcomes: list[Outcome], with_spearman: bool) -> str:
    head = ["metric", "kl_strength", "evidential_strength", "learning_rate", "status",
            "fit s", "median EU/AU", "min θ₃"] + (["ρ(EU, true EU)"] if with_spearman else [])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for o in outcomes:
        status = o.status if not o.error else f"{o.status}: {o.error[:90]}"
        row = [o.metric, f"{o.corner['kl_strength']:g}", f"{o.corner['evidential_strength']:g}",
               f"{o.corner['learning_rate']:g}", status, _number(o.fit_seconds, ".1f"),
               _number(o.eu_over_au, ".3g"), _number(o.min_theta3, ".3g")]
        if with_spearman:
            row.append(_number(o.eu_spearman, ".2f"))
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def summary(outcomes: list[Outcome], metrics: list[str]) -> list[str]:
    out = []
    for metric in metrics:
        mine = [o for o in outcomes if o.metric == metric]
        stable = sum(o.status == "ok" for o in mine)
        counts = {s: sum(o.status == s for o in mine) for s in ("failed", "diverged")}
        out.append(f"{metric}: {stable} of {len(mine)} corners stable "
                   f"({counts['diverged']} diverged, {counts['failed']} failed)")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", help="a task store (Zarr); default: a toy problem")
    parser.add_argument("--toy", choices=["1d", "8d"], default="1d",
                        help="the toy problem without --store (default 1d)")
    parser.add_argument("--metrics", nargs="+", choices=list(NIG_METRICS),
                        default=list(NIG_METRICS))
    parser.add_argument("--corners-n-estimators", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    data = store_data(args.store) if args.store else toy_data(args.toy)
    print(f"# NGBoost-NIG stability: {data.label}; n = {len(data.y_train)}, "
          f"d = {data.x_train.shape[1]}, m = {len(data.x_eval)}; "
          f"n_estimators {args.corners_n_estimators}, {FIXED}, seed {args.seed}\n")
    # warm-up (imports, first-call costs), so that the first corner's time is its fit's alone
    fit_one(data, args.metrics[0], corners()[0], 1, args.seed)
    outcomes = []
    for metric in args.metrics:
        for corner in corners():
            outcome = fit_one(data, metric, corner, args.corners_n_estimators, args.seed)
            outcomes.append(outcome)
            print(f"  {metric} {corner}: {outcome.status} ({outcome.fit_seconds:.1f} s)",
                  flush=True)
    print()
    print(table(outcomes, with_spearman=data.true_eu is not None))
    print()
    print("\n".join(summary(outcomes, args.metrics)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
