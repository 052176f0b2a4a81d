"""Hyper-parameter tuning: one resumable, reproducible sweep per (method, condition)
(:mod:`postrisk.tuning.sweep`)."""

from postrisk.tuning.sweep import (
    TUNING_SCHEMA,
    TuningResult,
    data_digest,
    mean_gaussian_nll,
    searched_space,
    split_indices,
    suggest,
    tune,
)

__all__ = ["TUNING_SCHEMA", "TuningResult", "data_digest", "mean_gaussian_nll",
           "searched_space", "split_indices", "suggest", "tune"]
