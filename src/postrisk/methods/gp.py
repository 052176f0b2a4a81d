"""Exact Gaussian process regression with a homoscedastic noise (``gp``; paper App. C.1).

Kernel (paper): σ_m²·Matérn-ν(ARD ℓ_1..ℓ_d) + σ_l²·(linear); hyper-parameters and the noise
variance by marginal likelihood; mean = posterior mean; EU = latent posterior variance;
AU = the noise variance (constant).

Everything is reused from the project's kernel and GP code: the kernel family
``(f"matern{ν}", "linear")`` of :mod:`postrisk.gp.kernels` (written as
signal_var·(w_m·k_ν + w_l·k_lin) with relative weights w summing to 1 and per-dimension linear
variances, i.e. σ_m² = signal_var·w_m, σ_l²·xᵀx′ with ARD variances), its type-II fit
:func:`~postrisk.gp.fit.fit_kernel` (constant mean, signal and noise variance; weak
hyper-priors, i.e. MAP-II rather than plain ML-II) and the exact float64 conditioning of
:mod:`postrisk.gp.exact` used for the reference posteriors of the GP tasks.

Units. The method works in standardised units and reports in target units
(:class:`~postrisk.methods.scaling.Standardizer`):

    ỹ = (y − ȳ)/s_y,   u = x̃/√12 + ½ with x̃ = (x − x̄)/s_x   (``standardize_inputs=True``)
                        u = x                                (``standardize_inputs=False``)

The factor 1/√12 gives every input column the SD of a U[0, 1] variable, the spread that
``fit_kernel``'s starting values and hyper-priors are calibrated for (min–max scaled
covariates); the shift by ½ centres the ``linear`` component (centred at ½ in kernels.py) at
the training mean. Stationary components are shift-invariant.

Model in these units: ỹ = m + f(u) + ε, f ~ GP(0, signal_var·k), ε ~ N(0, noise_var).
Prediction: mean = ȳ + s_y·(m + E[f]), EU = s_y²·Var[f], AU = s_y²·noise_var.

``fixed_hyperparameters`` (a dict ``{"kernel": Kernel.to_dict(), "signal_var", "noise_var",
"mean"}`` in these standardised units) skips the fit and only conditions — e.g. on a GP task
whose kernel lies in the family, with the task's hyper-parameters, ``gp`` reproduces the task's
reference posterior.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any, ClassVar

import numpy as np

from postrisk.core.threads import thread_limit
from postrisk.gp.kernels import matern_component
from postrisk.methods.interface import Prediction, UncertaintyMethod
from postrisk.methods.scaling import INPUT_SCALE, Standardizer, as_inputs, as_training_data

logger = logging.getLogger(__name__)


class ExactGP(UncertaintyMethod):
    """Exact GP, kernel Matérn-ν(ARD) + linear, homoscedastic noise, type-II (MAP) fit.

    Hyper-parameters:

    - ``nu`` (searched, {0.5, 1.5, 2.5}): Matérn smoothness.
    - ``restarts``: random restarts of the hyper-parameter fit besides the default start
      (default 0: the default start suits standardised data; each restart costs a full fit).
    - ``max_iter``: L-BFGS-B iterations per start.
    - ``fit_rows``: at most this many training rows (a random subset drawn with
      ``random_state``) enter the hyper-parameter fit, whose cost is cubic in the rows; the
      conditioning always uses every row. ``None``: all rows. Default 600: the fit is cubic in
      the rows; measured on 2 loaded CPU cores at d = 8, one start takes ~1.5 s on 600 rows
      and ~5–7 s on 1,000 (about 50 L-BFGS-B iterations either way).
    - ``standardize_inputs``: see the module docstring.
    - ``fixed_hyperparameters``: ``None`` (fit) or the dict of the module docstring (no fit).

    Fitted attributes: ``kernel_`` (a :class:`~postrisk.gp.kernels.Kernel`),
    ``signal_var_``, ``noise_var_``, ``mean_`` (standardised units), ``hyperparameters_``
    (the same as a dict in the ``fixed_hyperparameters`` form), ``log_marginal_likelihood_``
    (of the fitted rows, ``None`` when fixed), ``scaler_``, ``fit_seconds_``.
    """

    defaults: ClassVar[dict[str, Any]] = {
        "nu": 2.5,
        "restarts": 0,
        "max_iter": 200,
        "fit_rows": 600,
        "standardize_inputs": True,
        "fixed_hyperparameters": None,
    }
    search_space: ClassVar[dict[str, tuple]] = {"nu": ("categorical", [0.5, 1.5, 2.5])}

    # -- internals -----------------------------------------------------------------------
    def _inputs(self, x: np.ndarray) -> np.ndarray:
        z = self.scaler_.inputs(x)
        return z * INPUT_SCALE + 0.5 if self.standardize_inputs else z

    def _check_hyper(self) -> None:
        matern_component(self.nu)
        if int(self.restarts) < 0 or int(self.max_iter) < 0:
            raise ValueError(f"restarts and max_iter must be >= 0, got {self.restarts}, "
                             f"{self.max_iter}")
        if self.fit_rows is not None and int(self.fit_rows) < 3:
            raise ValueError(f"fit_rows must be >= 3 or None, got {self.fit_rows}")

    # -- interface -----------------------------------------------------------------------
    def fit(self, x: np.ndarray, y: np.ndarray) -> ExactGP:
        # BLAS/LAPACK pools limited to n_threads (as run_fit does): small factorisations
        # with many threads are ~40x slower on a loaded 2-core machine.
        with thread_limit(self.n_threads):
            return self._fit(x, y)

    def _fit(self, x: np.ndarray, y: np.ndarray) -> ExactGP:
        from postrisk.gp.exact import posterior_predictor
        from postrisk.gp.fit import fit_kernel
        from postrisk.gp.kernels import Kernel

        t0 = time.perf_counter()
        self._check_hyper()
        x, y = as_training_data(x, y, min_rows=3)
        self.scaler_ = Standardizer.fit(x, y, standardize_inputs=bool(self.standardize_inputs))
        u = self._inputs(x)
        t = self.scaler_.target(y)
        n, d = u.shape
        fixed = self.fixed_hyperparameters
        if fixed is not None:
            missing = {"kernel", "signal_var", "noise_var", "mean"} - set(fixed)
            if missing:
                raise ValueError(f"fixed_hyperparameters lacks {sorted(missing)}")
            kernel = fixed["kernel"]
            kernel = kernel if isinstance(kernel, Kernel) else Kernel.from_dict(kernel)
            if kernel.dim != d:
                raise ValueError(f"the fixed kernel has dimension {kernel.dim}, x has {d}")
            signal_var, noise_var = float(fixed["signal_var"]), float(fixed["noise_var"])
            mean = float(fixed["mean"])
            if not (signal_var > 0 and noise_var > 0 and math.isfinite(mean)):
                raise ValueError("fixed signal_var and noise_var must be > 0, mean finite")
            self.log_marginal_likelihood_ = None
        else:
            rows = n if self.fit_rows is None else min(n, int(self.fit_rows))
            res = fit_kernel((matern_component(self.nu), "linear"), u, t, max_rows=rows,
                             rng=np.random.default_rng(self.random_state),
                             max_iter=int(self.max_iter), restarts=int(self.restarts))
            # fit_kernel z-scores the target of its rows again: back to the units of t.
            kernel = res.kernel
            signal_var = res.signal_var * res.y_sd ** 2
            noise_var = res.noise_var * res.y_sd ** 2
            mean = res.y_mean + res.y_sd * res.mean
            self.log_marginal_likelihood_ = float(res.log_marginal_likelihood)
        self.kernel_ = kernel
        self.signal_var_, self.noise_var_, self.mean_ = signal_var, noise_var, mean
        self.hyperparameters_ = {"kernel": kernel.to_dict(), "signal_var": signal_var,
                                 "noise_var": noise_var, "mean": mean}
        self._predictor_ = posterior_predictor(kernel, math.sqrt(signal_var), u, t - mean,
                                              np.full(n, noise_var))
        self.fit_seconds_ = time.perf_counter() - t0
        logger.info("gp: n=%d, d=%d, nu=%s: noise_var %.4g, signal_var %.4g (standardised "
                    "units), %.1f s", n, d, self.nu, noise_var, signal_var, self.fit_seconds_)
        return self

    def predict(self, x: np.ndarray) -> Prediction:
        if not hasattr(self, "_predictor_"):
            raise RuntimeError("gp: call fit before predict")
        u = self._inputs(as_inputs(x, self.scaler_.n_features))
        mean, var = self._predictor_(u)
        return self.scaler_.prediction_to_target(Prediction(
            mean=mean + self.mean_, aleatoric_var=np.full(u.shape[0], float(self.noise_var_)),
            epistemic_var=var))
