"""Throwaway methods shared by the method tests (tests/methods/test_interface.py and
tests/methods/test_runner.py): a well-behaved method and one whose predicted mean holds a NaN."""

import numpy as np

from postrisk.methods.interface import Prediction, UncertaintyMethod


class _Good(UncertaintyMethod):
    name = "good"
    display_name = "Good"
    defaults = {"scale": 1.0, "act": "tanh"}
    search_space = {"scale": ("float", 1e-3, 10.0, "log"), "act": ("categorical", ["tanh", "relu"])}

    def fit(self, x, y):
        self.mu_ = float(np.mean(y))
        return self

    def predict(self, x):
        m = len(x)
        return Prediction(np.full(m, self.mu_), np.full(m, self.scale), np.linspace(0, 1, m))


class _NaN(_Good):
    name = "nan_mean"

    def predict(self, x):
        p = super().predict(x)
        mean = p.mean.copy()
        mean[0] = np.nan
        return Prediction(mean, p.aleatoric_var, p.epistemic_var)
