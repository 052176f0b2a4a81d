"""The fixed 1-D toy problem (docs/design.md, "Toy problem") and the behaviour measures tests
and benchmarks use.

x ∈ R¹; 400 training inputs uniform on [−1, −0.3] ∪ [0.3, 1] (seed 0); f(x) = sin(3x) + 0.5x;
σ_ε(x) = 0.05 + 0.25·(x + 1)/2 on [−1, 1] (clipped to that interval outside it, where no
training data lie); evaluation grid of 601 points on [−1.5, 1.5]. Regions: ``in`` (training
support), ``gap`` (−0.3, 0.3), ``beyond`` (|x| > 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from postrisk.evaluation.metrics import auroc, spearman

N_TRAIN = 400
N_GRID = 601


def toy_function(x: np.ndarray) -> np.ndarray:
    return np.sin(3 * x) + 0.5 * x


def toy_noise_sd(x: np.ndarray) -> np.ndarray:
    return 0.05 + 0.25 * (np.clip(x, -1.0, 1.0) + 1.0) / 2.0


@dataclass(frozen=True)
class ToyProblem:
    x_train: np.ndarray  # (400, 1)
    y_train: np.ndarray  # (400,)
    x_eval: np.ndarray   # (601, 1)
    region: np.ndarray   # (601,) "in" | "gap" | "beyond"

    @property
    def noise_var_eval(self) -> np.ndarray:
        return toy_noise_sd(self.x_eval[:, 0]) ** 2


def toy_problem(seed: int = 0) -> ToyProblem:
    """The toy problem (seed 0 is the fixed one): half the inputs on each side of the gap."""
    rng = np.random.default_rng(seed)
    side = rng.integers(0, 2, N_TRAIN)
    u = rng.uniform(0.3, 1.0, N_TRAIN)
    x = np.where(side == 0, -u, u)
    y = toy_function(x) + toy_noise_sd(x) * rng.standard_normal(N_TRAIN)
    grid = np.linspace(-1.5, 1.5, N_GRID)
    region = np.where(np.abs(grid) > 1.0, "beyond",
                      np.where(np.abs(grid) < 0.3, "gap", "in"))
    return ToyProblem(x[:, None], y, grid[:, None], region)


def toy_behaviour(problem: ToyProblem, mean, aleatoric_var, epistemic_var) -> dict:
    """The toy's measures: Spearman(AU, σ²_ε) on ``in``; EU-AUROC of ``beyond`` vs ``in`` and of
    ``gap`` vs ``in``; RMSE of the mean on ``in``. ``None`` where not applicable (constant AU)."""
    inside = problem.region == "in"
    eu = np.asarray(epistemic_var, dtype=np.float64)
    out = {"au_spearman_in": spearman(np.asarray(aleatoric_var)[inside],
                                      problem.noise_var_eval[inside])}
    for other in ("beyond", "gap"):
        keep = inside | (problem.region == other)
        out[f"eu_auroc_{other}"] = auroc(eu[keep], (problem.region == other)[keep])
    err = np.asarray(mean)[inside] - toy_function(problem.x_eval[inside, 0])
    out["rmse_in"] = float(np.sqrt(np.mean(err ** 2)))
    return out
