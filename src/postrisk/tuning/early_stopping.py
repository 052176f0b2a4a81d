"""Stopping a sweep's hopeless trials early, from the validation loss along their fits.

A method that reports along its fit (its ``iterations_parameter``: boosting stages, training
iterations; :class:`~postrisk.methods.interface.ValidationMonitor`) predicts at the sweep's
validation inputs at a few checkpoints — the *rungs* — and the sweep scores each prediction
with the objective it ranks finished trials by (:func:`mean_gaussian_nll` of the validation
targets under N(mean, AU + EU)). A rule then decides from the trials run so far whether this one
goes on:

* ``successive_halving`` (Optuna's ``SuccessiveHalvingPruner``; Jamieson & Talwalkar 2016, Li
  et al. 2020): ``rungs`` rungs at r, r·η, r·η², … steps with r = round(S / η^rungs), S the
  most steps any configuration of the sweep takes and η = ``reduction_factor``; a trial goes on
  past a rung
  only when its validation loss there is among the best 1/η of all trials that reached it.
* ``median`` (Optuna's ``MedianPruner``): the same rungs; a trial stops when its loss at a rung
  is worse than the median of earlier trials' at that rung, once ``startup_trials`` trials
  have finished.
* ``none``: every trial runs to its end (the paper's sweep).

What does not change: the sweep runs its 30 trials (a stopped trial is one of them, recorded
``PRUNED`` with the step and loss it stopped at), TPE proposes from the history (a stopped
trial counts at its last reported loss, Optuna's rule), and the winner is the finished trial
with the lowest validation loss. A stopped trial is never the winner.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from postrisk.methods.interface import FitStopped, Prediction
from postrisk.tuning.objective import mean_gaussian_nll

#: The rules :class:`EarlyStopping` knows.
RULES = ("none", "successive_halving", "median")


@dataclass(frozen=True)
class EarlyStopping:
    """How a sweep stops trials early (see the module docstring): ``rule``, the number of
    ``rungs`` and their spacing ``reduction_factor`` η (for successive halving also the share
    of trials, 1/η, that goes on past a rung)."""

    rule: str = "none"
    reduction_factor: int = 3
    rungs: int = 2

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise ValueError(f"early stopping rule must be one of {RULES}, got {self.rule!r}")
        if int(self.reduction_factor) < 2 or int(self.reduction_factor) != self.reduction_factor:
            raise ValueError(f"reduction_factor must be an integer >= 2, got "
                             f"{self.reduction_factor!r}")
        if int(self.rungs) < 1 or int(self.rungs) != self.rungs:
            raise ValueError(f"rungs must be an integer >= 1, got {self.rungs!r}")

    @classmethod
    def of(cls, settings: EarlyStopping | Mapping[str, Any] | None,
           method: str | None = None) -> EarlyStopping:
        """From config ``tuning.early_stopping`` (a mapping; None or absent: ``none``) for the
        sweeps of ``method``: ``none`` where its ``methods`` (None: every method) leaves the
        method out."""
        if isinstance(settings, EarlyStopping):
            return settings
        settings = dict(settings or {})
        methods = settings.pop("methods", None)
        if method is not None and methods is not None and method not in methods:
            return cls()
        return cls(**settings)

    @property
    def enabled(self) -> bool:
        return self.rule != "none"

    def checkpoints(self, max_steps: int) -> list[int]:
        """The checkpoints of a sweep whose longest configuration takes ``max_steps`` steps:
        r·η^k below ``max_steps``, r = max(1, round(max_steps / η^rungs)); none when
        disabled."""
        if not self.enabled or max_steps < 2:
            return []
        eta = int(self.reduction_factor)
        step = max(1, int(round(max_steps / eta ** int(self.rungs))))
        out = []
        while step < max_steps:
            out.append(step)
            step *= eta
        return out

    def pruner(self, max_steps: int, startup_trials: int) -> Any:
        """The Optuna pruner of the rule (None when disabled)."""
        import optuna

        rungs = self.checkpoints(max_steps)
        if not rungs:
            return None
        if self.rule == "successive_halving":
            return optuna.pruners.SuccessiveHalvingPruner(
                min_resource=rungs[0], reduction_factor=int(self.reduction_factor),
                min_early_stopping_rate=0)
        return optuna.pruners.MedianPruner(n_startup_trials=int(startup_trials),
                                           n_warmup_steps=0)

    def fields(self) -> dict:
        """What identifies the rule in a sweep's name (empty when disabled: the names of
        sweeps without early stopping stay as they were)."""
        if not self.enabled:
            return {}
        fields = {"rule": self.rule, "reduction_factor": int(self.reduction_factor)}
        if int(self.rungs) != 2:
            fields["rungs"] = int(self.rungs)
        return {"early_stopping": fields}


def max_steps(method_cls, space: Mapping[str, tuple], fixed: Mapping[str, Any]) -> int | None:
    """The most steps any configuration of the sweep takes: the largest value of the method's
    ``iterations_parameter`` (fixed, searched or default); None when it reports no steps."""
    name = getattr(method_cls, "iterations_parameter", None)
    if name is None:
        return None
    if name in fixed:
        return int(fixed[name])
    spec = space.get(name)
    if spec is None:
        return int(method_cls.defaults[name])
    if spec[0] == "categorical":
        return int(max(spec[1]))
    return int(math.floor(float(spec[2])))


class TrialMonitor:
    """The :class:`~postrisk.methods.interface.ValidationMonitor` of one trial: the fit sees
    the validation inputs, never their targets; at each rung it reports its prediction, the
    monitor scores it, tells Optuna (``trial.report``) and raises
    :class:`~postrisk.methods.interface.FitStopped` when the pruner says so."""

    def __init__(self, trial, inputs: np.ndarray, targets: np.ndarray, rungs: list[int]) -> None:
        self.trial = trial
        self.inputs = np.asarray(inputs, dtype=np.float64)
        self._targets = np.asarray(targets, dtype=np.float64)
        self._rungs = sorted(int(r) for r in rungs)
        #: (step, validation NLL) of each report, in order
        self.reports: list[tuple[int, float]] = []

    def checkpoints(self, total_steps: int) -> list[int]:
        return [r for r in self._rungs if r < int(total_steps)]

    def report(self, step: int, prediction: Prediction) -> None:
        value = mean_gaussian_nll(self._targets, prediction.mean, prediction.total_var)
        if not math.isfinite(value):
            value = math.inf
        self.reports.append((int(step), value))
        self.trial.report(value, int(step))
        if self.trial.should_prune():
            raise FitStopped(f"stopped after step {step}: validation NLL {value:.4f}")
