"""Simulation-based calibration over small instances of one prior (docs/design.md,
"Reference-posterior checks").

Each instance: x uniform in [0, 1]^d (evaluation rows first), f* from the prior's own
``sample``, known heteroscedastic noise SD 0.2 + 0.3·x₁ at the training rows, y = f* + noise,
one random evaluation point and a random other one. Per instance the draws (from the
posterior, or a control) give the rank of f*(x) at the point, the rank of f*'s data
log-likelihood and whether f*(x) is in the central 90% interval; ``"main"`` uses the point's
draws, ``"other_point"`` the other point's (a negative control).

Region-excluding design (``excluded_from=c``, the outermost shell of an OOD task in small):
the same draws with x₁ mapped to [c, 1] at the evaluation rows and to [0, c) at the training
rows, so no training input lies in the region x₁ ≥ c that the evaluation rows (the random
point and the other one included) fill; the posterior there is an extrapolation. With
``excluded_from=None`` (the default) the instances are exactly those of the design above.
``controls`` adds negative controls that reuse the posterior's draws (no new sampler run):
each maps (draws, instance) to the draws checked at the point, e.g. :func:`scaled`, and
:func:`dispersion_controls`, the posterior widened and narrowed by 20%, which every SBC runs.
The coverage is tested against a perfect sampler's at the SBC's D
(:func:`postrisk.evaluation.posterior_checks.calibration_test`), so an assert that a control
covers too little or too much compares with ``coverage_nominal``, not with 0.9.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from postrisk.evaluation.posterior_checks import CalibrationTest, calibration_test
from postrisk.tasks.diagnostics import covered_central, loglik_rank


def make_instance(sample: Callable[[np.ndarray, np.random.Generator], np.ndarray], seed: int,
                  salt: int, d: int, n_train: int, n_eval: int,
                  excluded_from: float | None = None) -> dict:
    rng = np.random.default_rng([seed, salt])
    x = rng.uniform(size=(n_eval + n_train, d))
    if excluded_from is not None:  # evaluation rows x₁ ∈ [c, 1], training rows x₁ ∈ [0, c)
        c = float(excluded_from)
        x[:n_eval, 0] = c + (1.0 - c) * x[:n_eval, 0]
        x[n_eval:, 0] = c * x[n_eval:, 0]
    f = sample(x, rng)
    sd = 0.2 + 0.3 * x[n_eval:, 0]  # known heteroscedastic noise
    y = f[n_eval:] + sd * rng.standard_normal(n_train)
    return {"x": x, "f": f, "nv": sd**2, "y": y, "point": int(rng.integers(n_eval)),
            "other": int(rng.integers(1, n_eval)), "rng": rng, "n_eval": n_eval}


def _checks(draws: np.ndarray, inst: dict, point: int) -> tuple[int, int, bool]:
    f, j, n_eval = inst["f"], inst["point"], inst["n_eval"]
    rank = int(np.sum(draws[:, point] < f[j]))
    ll = loglik_rank(draws[:, n_eval:], f[n_eval:], inst["y"], inst["nv"])
    cov = bool(covered_central(draws[:, [point]], f[[j]])[0])
    return rank, ll, cov


def scale_about_mean(draws: np.ndarray, factor: float) -> np.ndarray:
    """Each column's draws moved away from (``factor`` > 1) or towards (< 1) their mean: a
    posterior whose spread is off by ``factor``, its mean kept."""
    draws = np.asarray(draws, dtype=float)
    mean = draws.mean(axis=0)
    return mean + factor * (draws - mean)


def scaled(factor: float) -> Callable[[np.ndarray, dict], np.ndarray]:
    """A control: the draws at the evaluation rows scaled about their mean by ``factor``
    (below 1: an over-confident posterior at the point, above 1: an under-confident one; the
    training rows, hence the log-likelihood rank, unchanged: only f(x)'s rank and coverage can
    see it)."""
    def control(draws: np.ndarray, inst: dict) -> np.ndarray:
        n_eval = inst["n_eval"]
        out = np.array(draws, dtype=float)
        out[:, :n_eval] = scale_about_mean(out[:, :n_eval], factor)
        return out

    return control


#: The dispersion controls every SBC runs on its posterior's own draws: widened and narrowed
#: by 20% about their mean at the evaluation rows (no sampler run of their own).
WIDENED, NARROWED = 1.2, 0.8


def dispersion_controls() -> dict[str, Callable[[np.ndarray, dict], np.ndarray]]:
    """``{"widened": …, "narrowed": …}``: :func:`scaled` by :data:`WIDENED` and
    :data:`NARROWED`."""
    return {"widened": scaled(WIDENED), "narrowed": scaled(NARROWED)}


def run_sbc(instance: Callable[[int], dict], draws_of: Callable[[dict], np.ndarray],
            n_instances: int, n_draws: int,
            controls: dict[str, Callable[[np.ndarray, dict], np.ndarray]] | None = None,
            ) -> dict[str, CalibrationTest]:
    """``calibration_test`` (α = 10⁻³) over ``n_instances`` instances, for ``"main"``,
    ``"other_point"`` and each of ``controls`` (name → draws at the point from the draws and
    the instance); ``draws_of(instance)`` gives (n_draws, n_eval + n_train) draws."""
    controls = controls or {}
    out: dict[str, list] = {key: [] for key in ("main", "other_point", *controls)}
    for seed in range(n_instances):
        inst = instance(seed)
        draws = draws_of(inst)
        out["main"].append(_checks(draws, inst, inst["point"]))
        out["other_point"].append(
            _checks(draws, inst, (inst["point"] + inst["other"]) % inst["n_eval"]))
        for name, control in controls.items():
            out[name].append(_checks(control(draws, inst), inst, inst["point"]))
    results = {}
    for key, rows in out.items():
        ranks, lls, covs = (np.array(v) for v in zip(*rows, strict=True))
        results[key] = calibration_test({"f_at_x": ranks, "loglik": lls}, covs, n_draws,
                                        alpha=1e-3)
    return results
