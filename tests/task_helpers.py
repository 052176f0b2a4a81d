"""Small task stores built in memory for tests: no pipeline, exact reference posterior."""

import json

import numpy as np
import xarray as xr

from postrisk.gp.exact import posterior_moments, sample_prior
from postrisk.gp.kernels import Kernel
from postrisk.tasks.store import TASK_SCHEMA_VERSION, validate_store
from postrisk.tasks.task import Task


def _shells(x: np.ndarray) -> np.ndarray:
    dist = np.linalg.norm(x - 0.5, axis=1)
    return np.digitize(dist, np.quantile(dist, [0.2, 0.4, 0.6, 0.8])).astype(np.int8)


def gp_task(n: int = 80, m: int = 40, d: int = 2, seed: int = 5,
            key: dict | None = None, draws: int = 4, noise_slope: float = 0.3) -> Task:
    """A small heteroscedastic GP-prior task store, built in memory (exact reference posterior;
    the ``draws`` posterior draws, from it, are only there to satisfy the store contract unless
    ``key`` names a sampled prior). ``key``: instance-key fields (dataset, prior, noise,
    coverage, seed) to record instead of the defaults. The noise variance is 0.05 +
    ``noise_slope`` · x₀² (0: homoscedastic)."""
    rng = np.random.default_rng(seed)
    kernel = Kernel(("matern32",), {"matern32": {"weight": 1.0, "lengthscale": [0.4] * d}})
    a = 1.3
    x = rng.uniform(size=(n + m, d))
    f = sample_prior(kernel, a, x, rng)[0]
    noise_var = 0.05 + noise_slope * x[:, 0] ** 2
    y = f[:n] + np.sqrt(noise_var[:n]) * rng.standard_normal(n)
    mean, var = posterior_moments(kernel, a, x[:n], y, noise_var[:n], x[n:])
    attrs = {"schema_version": TASK_SCHEMA_VERSION, "store_kind": "task", "dataset": "toy",
             "prior": "gp", "noise": "bump", "coverage": "random", "seed": 3, "a": a,
             "noise_model": "{}", "n": n, "n_eval": m,
             **(key or {}),
             "prior_params": json.dumps({"prior": "gp", "kernel": kernel.to_dict(), "a": a}),
             "noise_to_signal": 0.1, "config_digest": "x", "f_true_sampler": "{}",
             "versions": "{}", "timings": "{}", "sampler_settings": "{}",
             "sample_config_digest": "y", "rank_loglik": 0, "chains": 1}
    ds = xr.Dataset({
        "x_train": (("train", "feature"), x[:n]),
        "train_index": (("train",), np.arange(n, dtype=np.int64)),
        "y_train": (("train",), y),
        "noise_var_train": (("train",), noise_var[:n]),
        "f_true_train": (("train",), f[:n]),
        "shell_train": (("train",), np.zeros(n, np.int8)),
        "x_eval": (("eval", "feature"), x[n:]),
        "eval_index": (("eval",), np.arange(n, n + m, dtype=np.int64)),
        # quintile shells of the distance from the centre: 0 (inner) … 4 (outermost)
        "shell_eval": (("eval",), _shells(x[n:])),
        "noise_var_eval": (("eval",), noise_var[n:]),
        "f_true_eval": (("eval",), f[n:]),
        "posterior_draws": (("draw", "eval"),
                            (mean + np.sqrt(var) * rng.standard_normal((draws, m)))
                            .astype(np.float32)),
        "posterior_draws_train": (("draw", "train"),
                                  rng.standard_normal((draws, n)).astype(np.float32)),
        "posterior_mean": (("eval",), mean), "posterior_var": (("eval",), var),
        "rank_true": (("eval",), np.zeros(m, np.int32)),
        "covered90": (("eval",), np.ones(m, bool)), "mcse_var": (("eval",), np.zeros(m)),
    }, attrs=attrs)
    return Task(validate_store(ds, kind="task"))
