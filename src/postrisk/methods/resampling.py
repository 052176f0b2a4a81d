"""Row resampling and held-out errors: the one home of what bagged and two-model methods share.

* :func:`member_seeds` — independent integer seeds for M members from one ``random_state``
  (``numpy.random.SeedSequence.spawn``), for libraries that take an integer seed.
* :func:`resample_rows` / :func:`member_resamples` — each bagged member's training rows:
  ⌊fraction·n⌋ row indices drawn with or without replacement (NGBoost-Bag, CatBoost-PS's row
  bagging, and the neural bag later).
* :func:`held_out_errors` — "AU from the held-out error of a second model": fit a model on one
  part of the rows, predict the held-out rest, return the squared errors (CatBoost-KGB's AU is
  their mean; direct epistemic uncertainty prediction also regresses on them).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


def member_seeds(random_state: int, n_members: int) -> list[int]:
    """``n_members`` independent seeds in [0, 2³¹) spawned from ``random_state``.

    The same ``random_state`` gives the same seeds; member k's seed does not depend on how many
    members there are.
    """
    if int(n_members) < 1:
        raise ValueError(f"need at least one member, got {n_members!r}")
    children = np.random.SeedSequence(int(random_state)).spawn(int(n_members))
    return [int(child.generate_state(1)[0] >> 1) for child in children]


def resample_size(n_rows: int, fraction: float) -> int:
    """⌊fraction·n⌋, at least 1; ``ValueError`` unless 0 < fraction ≤ 1 and n ≥ 1."""
    if int(n_rows) < 1:
        raise ValueError(f"need at least one row, got {n_rows!r}")
    if not 0 < float(fraction) <= 1:
        raise ValueError(f"the resampling fraction must lie in (0, 1], got {fraction!r}")
    return max(1, math.floor(float(fraction) * int(n_rows)))


def resample_rows(n_rows: int, fraction: float, replace: bool,
                  rng: np.random.Generator) -> np.ndarray:
    """Indices of ⌊fraction·n⌋ of ``n_rows`` rows drawn uniformly, with or without replacement
    (int64, in the order drawn)."""
    size = resample_size(n_rows, fraction)
    return rng.choice(int(n_rows), size=size, replace=bool(replace)).astype(np.int64)


def member_resamples(n_rows: int, n_members: int, fraction: float, replace: bool,
                     random_state: int) -> list[np.ndarray]:
    """One :func:`resample_rows` per member, each from its own stream (:func:`member_seeds`)."""
    return [resample_rows(n_rows, fraction, replace, np.random.default_rng(seed))
            for seed in member_seeds(random_state, n_members)]


@dataclass(frozen=True)
class HeldOutErrors:
    """Squared errors of a model fitted on ``fit_rows`` at the held-out ``held_rows``."""

    fit_rows: np.ndarray
    held_rows: np.ndarray
    squared_errors: np.ndarray

    @property
    def mse(self) -> float:
        """The held-out mean squared error (an estimate of the noise variance plus the model's
        own error at the held-out rows)."""
        return float(np.mean(self.squared_errors))


def held_out_split(n_rows: int, held_out_fraction: float,
                   random_state: int) -> tuple[np.ndarray, np.ndarray]:
    """(fit rows, held-out rows), both sorted: ⌊fraction·n⌋ rows held out (at least 1, leaving
    at least 1 to fit), chosen by a permutation drawn from ``random_state``."""
    n = int(n_rows)
    if n < 2:
        raise ValueError(f"a held-out split needs at least 2 rows, got {n}")
    n_held = min(resample_size(n, held_out_fraction), n - 1)
    order = np.random.default_rng(int(random_state)).permutation(n)
    return np.sort(order[n_held:]), np.sort(order[:n_held])


def held_out_errors(fit_predict: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
                    x: np.ndarray, y: np.ndarray, held_out_fraction: float,
                    random_state: int) -> HeldOutErrors:
    """Hold out ⌊fraction·n⌋ random rows (at least 1, leaving at least 1 to fit), fit on the
    rest and return the squared errors at the held-out rows.

    ``fit_predict(x_fit, y_fit, x_held)`` fits a fresh model and returns its mean at ``x_held``
    (shape (n_held,)). The split is a permutation drawn from ``random_state``.
    """
    fit, held = held_out_split(int(np.shape(x)[0]), held_out_fraction, random_state)
    n_held = len(held)
    mean = np.asarray(fit_predict(x[fit], y[fit], x[held]), dtype=np.float64)
    if mean.shape != (n_held,):
        raise ValueError(f"fit_predict returned shape {mean.shape}, expected ({n_held},)")
    if not np.all(np.isfinite(mean)):
        raise ValueError("fit_predict returned non-finite predictions")
    return HeldOutErrors(fit_rows=fit, held_rows=held,
                         squared_errors=(np.asarray(y, dtype=np.float64)[held] - mean) ** 2)
