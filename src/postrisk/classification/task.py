"""A classification instance as a Python object: its data, ground truth and oracle.

>>> task = postrisk.load_task(
...     "results/families/classification/tasks/concrete/gp/bump/balanced/k3/0.zarr")
>>> task.x_train, task.y_train, task.x_eval        # what a method sees (y: labels 0 … K−1)
>>> task.oracle.decomposition(pred, "log_loss")     # the App. A.5 terms of a prediction π̂

A method sees only ``x_train``, ``y_train`` and ``x_eval``; the oracle holds the reference
posterior's draws of π at the evaluation points and the true class probabilities π*.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import xarray as xr

from postrisk.classification.key import ClassificationKey
from postrisk.classification.oracle import ClassificationOracle
from postrisk.classification.store import validate_classification_store


@dataclass(frozen=True)
class ClassificationTask:
    ds: xr.Dataset

    @classmethod
    def load(cls, path: str | Path) -> ClassificationTask:
        return cls(validate_classification_store(path))

    family = "classification"

    # -- what a method sees ------------------------------------------------------------------
    @property
    def x_train(self) -> np.ndarray:
        return self.ds["x_train"].values

    @property
    def y_train(self) -> np.ndarray:
        """The training labels, 0 … K−1."""
        return self.ds["labels_train"].values

    @property
    def x_eval(self) -> np.ndarray:
        return self.ds["x_eval"].values

    @property
    def n_classes(self) -> int:
        return int(self.ds.sizes["class"])

    # -- the oracle ------------------------------------------------------------------------
    @cached_property
    def oracle(self) -> ClassificationOracle:
        """The exact App. A.5/A.6 terms of any prediction for the mixture of the stored draws,
        and its excess risk against π* (:class:`ClassificationOracle`)."""
        return ClassificationOracle(self.ds["prob_draws"].values,
                                    self.ds["prob_true_eval"].values)

    @property
    def key(self) -> ClassificationKey:
        return ClassificationKey.from_attrs(self.ds.attrs)

    @property
    def prob_true_eval(self) -> np.ndarray:
        return self.ds["prob_true_eval"].values

    @property
    def labels_eval(self) -> np.ndarray:
        """Labels drawn from π* at the evaluation points (held out: for realised losses)."""
        return self.ds["labels_eval"].values

    @property
    def temperature_eval(self) -> np.ndarray:
        return self.ds["temperature_eval"].values

    @property
    def prob_draws(self) -> np.ndarray:
        return self.ds["prob_draws"].values

    @property
    def sampler_settings(self) -> dict:
        return json.loads(self.ds.attrs["sampler_settings"])

    def summary(self) -> list[tuple[str, str]]:
        """Its shape, provenance and diagnostics as (name, value) rows."""
        ds, attrs = self.ds, self.ds.attrs
        rows = [
            ("instance", self.key.label),
            ("shape", f"n = {ds.sizes['train']}, n_eval = {ds.sizes['eval']}, "
                      f"d = {ds.sizes['feature']}, K = {ds.sizes['class']}, "
                      f"draws = {ds.sizes['draw']} ({attrs.get('chains')} chain(s))"),
            ("schema version", f"classification {attrs['schema_version']}"),
            ("amplitude", f"{attrs['amplitude']:.4g} (prior entropy share "
                          f"{attrs['entropy_share_prior']:.3f})"),
            ("90% interval coverage of π*", f"{float(np.mean(ds['covered90'].values)):.3f}"),
        ]
        if "rhat" in ds:
            rows.append(("max R̂ / min ESS", f"{float(ds['rhat'].max()):.4f} / "
                                             f"{float(ds['ess'].min()):.0f}"))
        return rows
