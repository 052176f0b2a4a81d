"""The GP prior: its scale constant gives prior draws a median SD of 1."""
from __future__ import annotations

import numpy as np

from postrisk.gp.exact import (
    sample_prior,
)
from postrisk.priors.gp.model import gp_scale_constant as scale_constant
from tests.gp.kernel_helpers import random_kernel


def test_scale_constant_gives_unit_median_sd():
    rng = np.random.default_rng(21)
    kern = random_kernel(("matern52", "linear"), 3, rng)
    x_eval = rng.random((300, 3))
    x_eval[:50] = x_eval[50:100]  # duplicates count as rows
    a = scale_constant(kern, x_eval, np.random.default_rng(1), n_draws=100)
    assert a > 0
    draws = sample_prior(kern, a, x_eval, np.random.default_rng(2), size=100)
    assert abs(np.median(np.std(draws, axis=1)) - 1.0) < 0.15
