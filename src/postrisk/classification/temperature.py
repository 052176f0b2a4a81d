"""The temperature field τ(x) of a classification task: where the labels are noisier.

π*(x) = softmax(f*(x) / τ(x)). The field has the regression noise modes' four shapes
(:mod:`postrisk.tasks.noise`), on the same scale: ``log τ(x) = ½ · s · h̃(z(x))``, with z the
PC1 score rank-Gaussianised against the evaluation pool, h one of the shapes, h̃ that shape
standardised to mean 0 / SD 1 over the pool and s the strength. τ plays the role of the noise
SD (the regression noise variance is ``exp(c + s·h̃)``, so its SD varies as ``exp(½·s·h̃)``):
where τ is large the class probabilities are pulled towards uniform, the aleatoric uncertainty
rises, whatever the latent function does. Its geometric mean over the pool is 1 (homoscedastic:
τ ≡ 1); the overall level of the logits is the prior's amplitude's job
(:mod:`postrisk.classification.amplitude`). The posterior's likelihood uses the same known τ,
so it stays correctly specified. Pure functions.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from postrisk.tasks.noise import SHAPES, rank_gaussianise, shape_over_pool

#: The default strength s: the regression noise modes' (their SD varies as exp(½·s·h̃)).
TEMPERATURE_STRENGTH = 1.25


@dataclass(frozen=True)
class TemperatureField:
    """A fitted temperature field: everything needed to evaluate τ at any row (stored in
    attrs)."""

    mode: str
    strength: float
    shape_mean: float  # mean of h over the evaluation pool
    shape_sd: float  # SD of h over the evaluation pool (1 for homoscedastic)

    def temperature(self, score: np.ndarray, pool_scores: np.ndarray) -> np.ndarray:
        """τ at rows of PC1 score ``score``: exp(½ · s · h̃(z(score)))."""
        h = SHAPES[self.mode](rank_gaussianise(score, pool_scores))
        return np.exp(0.5 * self.strength * (h - self.shape_mean) / self.shape_sd)

    def to_dict(self) -> dict:
        return asdict(self)


def fit_temperature_field(mode: str, pool_scores: np.ndarray,
                          strength: float = TEMPERATURE_STRENGTH) -> TemperatureField:
    """Standardise the shape ``mode`` over the evaluation pool (``pool_scores``: its PC1
    scores); ``strength`` s ≥ 0."""
    if not strength >= 0:
        raise ValueError(f"the temperature strength must be non-negative, got {strength}")
    _, mean, sd = shape_over_pool(mode, pool_scores)
    return TemperatureField(mode, float(strength), mean, sd)
