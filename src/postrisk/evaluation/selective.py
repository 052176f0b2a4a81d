"""Risk–regret–coverage metrics: selective prediction with true aleatoric and epistemic risk.

Pure functions on numpy arrays; nothing here reads or writes files.

The framework is the risk–regret–coverage view of selective prediction (Paplhám et al., 2026),
whose curves and summaries are built from Traub et al. (2024), "Overcoming Common Flaws in the
Evaluation of Selective Classification Systems" (generalised risk curves divided by N, not by
the number accepted), Geifman, Uziel & El-Yaniv (2019), "Bias-Reduced Uncertainty Estimation
for Deep Neural Classifiers" (the excess over the oracle) and Cattelan & Silva (2024), "How to
Fix a Broken Confidence Estimator: Evaluating Post-hoc Methods for Selective Classification
with Deep Neural Networks" (the normalised area).

Notation
--------
N points; per point a true aleatoric risk A* ≥ 0 and a true epistemic risk (regret) E* ≥ 0,
and estimates Â, Ê (any real numbers). A *selector* ranking by a score s accepts points in
ascending order of s — a stable sort, ties kept in index order (``np.argsort(kind="stable")``).
With π the resulting order and k = 0..N points accepted, the curves at coverage k/N are

* risk curve    Ri(k) = (1/N) Σ_{m=1..k} (A* + E*)_{π(m)},
* regret curve  Re(k) = (1/N) Σ_{m=1..k} E*_{π(m)},

both divided by N (not by k), so Ri(0) = Re(0) = 0 and Ri(N) = mean(A* + E*), Re(N) = mean(E*).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from postrisk.core.arrays import as_vector


@dataclass(frozen=True)
class AreaResult:
    """Area under a selection curve and its references (see :func:`aurec`, :func:`aurc`).

    ``value`` the area when ranking by the scores, ``oracle`` the smallest achievable area,
    ``random`` the expected area of a random ranking, ``excess = value − oracle`` and
    ``normalised = (value − oracle) / (random − oracle)`` (``None`` when random − oracle ≤ 0,
    i.e. when every loss is equal and no ranking can do better than another).
    """

    value: float
    oracle: float
    random: float
    excess: float
    normalised: float | None


@dataclass(frozen=True)
class AurecResult(AreaResult):
    """Area under the regret–coverage curve (:func:`aurec`)."""


@dataclass(frozen=True)
class AurcResult(AreaResult):
    """Area under the risk–coverage curve (:func:`aurc`)."""


def _scores_and_losses(scores, losses, losses_name: str) -> tuple[np.ndarray, np.ndarray]:
    sv = as_vector("scores", scores, finite=True)
    lv = as_vector(losses_name, losses, finite=True)
    if sv.shape != lv.shape:
        raise ValueError(f"scores and {losses_name} differ in length: "
                         f"{sv.shape[0]} vs {lv.shape[0]}")
    if sv.size == 0:
        raise ValueError("scores and losses are empty")
    if (lv < 0).any():
        raise ValueError(f"{losses_name} must be non-negative")
    return sv, lv


def selection_curve(scores, losses) -> np.ndarray:
    """Selection curve C(k) = (1/N) Σ_{m=1..k} L_{π(m)}, k = 0..N, of the losses ``losses``
    accepted in ascending order π of ``scores`` (stable sort: ties in index order).

    With L = E* this is the regret curve Re, with L = A* + E* the risk curve Ri. The curve is
    plotted over coverage k/N and divided by N, not by k (Traub et al., 2024, "Overcoming Common
    Flaws in the Evaluation of Selective Classification Systems"). Returns the N + 1 values.
    ``ValueError`` on a length mismatch, an empty or non-finite input or a negative loss.
    """
    sv, lv = _scores_and_losses(scores, losses, "losses")
    return _curve(sv, lv)


def _curve(sv: np.ndarray, lv: np.ndarray) -> np.ndarray:
    order = np.argsort(sv, kind="stable")
    return np.concatenate(([0.0], np.cumsum(lv[order]))) / lv.size


def _area(curve: np.ndarray) -> float:
    """Trapezoid area over coverage k/N, k = 0..N: (1/N) Σ_{k<N} (C(k) + C(k+1)) / 2."""
    n = curve.size - 1
    return float(np.sum(curve[:-1] + curve[1:]) / (2.0 * n))


def _area_result(sv: np.ndarray, lv: np.ndarray, cls: type[AreaResult]) -> AreaResult:
    value = _area(_curve(sv, lv))
    oracle = _area(_curve(lv, lv))
    random = 0.5 * float(np.mean(lv))
    gain = random - oracle
    normalised = (value - oracle) / gain if gain > 0.0 else None
    return cls(value=value, oracle=oracle, random=random, excess=value - oracle,
               normalised=normalised)


def aurec(scores, regret) -> AurecResult:
    """Area under the regret–coverage curve (AuReC) of a selector ranking by ``scores``.

    With π the stable ascending order of the scores and E* = ``regret`` (≥ 0), the regret curve
    is Re(k) = (1/N) Σ_{m=1..k} E*_{π(m)}, k = 0..N, over coverage k/N (divided by N, not by k:
    Traub et al., 2024, "Overcoming Common Flaws in the Evaluation of Selective Classification
    Systems"), and its area by the trapezoid rule is

        AuReC = (1/N) Σ_{k=0..N−1} (Re(k) + Re(k+1)) / 2.

    * ``oracle``: the AuReC of ranking by E* itself (ascending; the smallest possible area);
    * ``random``: the expected AuReC of a uniformly random ranking, whose expected curve is the
      line from 0 to mean(E*), so random = ½·mean(E*);
    * ``excess`` = AuReC − oracle (Geifman, Uziel & El-Yaniv, 2019, "Bias-Reduced Uncertainty
      Estimation for Deep Neural Classifiers");
    * ``normalised`` = (AuReC − oracle) / (random − oracle) (Cattelan & Silva, 2024, "How to Fix
      a Broken Confidence Estimator: Evaluating Post-hoc Methods for Selective Classification
      with Deep Neural Networks"): 0 for the oracle, 1 for random; ``None`` when
      random − oracle ≤ 0 (all regrets equal).

    Worked example: scores (3, 1, 4, 1, 5), regrets (2, 5, 1, 3, 4) give Re = (0, 1.0, 1.6,
    2.0, 2.2, 3.0), AuReC 1.66, oracle 1.10, random 1.50, excess 0.56, normalised 1.40.

    ``ValueError`` on a length mismatch, an empty or non-finite input or a negative regret.
    """
    sv, lv = _scores_and_losses(scores, regret, "regret")
    return _area_result(sv, lv, AurecResult)  # type: ignore[return-value]


def aurc(scores, risk) -> AurcResult:
    """Area under the risk–coverage curve (AuRC) of a selector ranking by ``scores``.

    ``risk`` is the per-point total risk A* + E* (≥ 0), summed by the caller; the caller ranks
    once by Ê and once by Â + Ê. With π the stable ascending order of the scores, the risk
    curve is Ri(k) = (1/N) Σ_{m=1..k} (A* + E*)_{π(m)}, k = 0..N, over coverage k/N (divided by
    N: Traub et al., 2024, "Overcoming Common Flaws in the Evaluation of Selective
    Classification Systems"), and

        AuRC = (1/N) Σ_{k=0..N−1} (Ri(k) + Ri(k+1)) / 2      (trapezoid rule).

    ``oracle`` is the AuRC of ranking by the risk itself, ``random`` = ½·mean(risk) (the
    expected area of a random ranking), ``excess`` = AuRC − oracle (Geifman, Uziel & El-Yaniv,
    2019, "Bias-Reduced Uncertainty Estimation for Deep Neural Classifiers") and ``normalised``
    = (AuRC − oracle) / (random − oracle) (Cattelan & Silva, 2024, "How to Fix a Broken
    Confidence Estimator: Evaluating Post-hoc Methods for Selective Classification with Deep
    Neural Networks"), ``None`` when random − oracle ≤ 0 (all risks equal).

    ``ValueError`` on a length mismatch, an empty or non-finite input or a negative risk.
    """
    sv, lv = _scores_and_losses(scores, risk, "risk")
    return _area_result(sv, lv, AurcResult)  # type: ignore[return-value]
