"""CatBoost ensembles: CatBoost-PS and CatBoost-KGB (``catboost_ps``, ``catboost_kgb``; the
paper, App. C.3).

Both fit gradient-boosted oblivious trees with CatBoost (Prokhorenkova et al. 2018, "CatBoost:
unbiased boosting with categorical features") on the raw inputs (trees are invariant to
monotone input transforms) and the target ỹ = (y − ȳ)/s_y (``standardize_y``; otherwise ỹ = y),
and reduce their members with the one ensemble reducer
(:func:`postrisk.methods.ensemble.reduce_members`); predictions are returned in target units
(mean = s_y·m̃ + ȳ, variances ×s_y²).

* :class:`CatBoostPS` — an ensemble of SGLB posterior samples (Ustimenko & Prokhorenkova 2021,
  "SGLB: Stochastic Gradient Langevin Boosting"; Malinin et al. 2021, "Uncertainty in Gradient
  Boosting via Ensembles"), each predicting a Gaussian.
* :class:`CatBoostKGB` — samples from the Gaussian-process posterior that kernel gradient
  boosting targets (Ustimenko et al. 2023, "Gradient Boosting Performs Gaussian Process
  Inference", Alg. 4), with a constant AU from a held-out error.

Every CatBoost model is built with ``thread_count = n_threads`` and ``allow_writing_files =
False`` (CatBoost otherwise writes a ``catboost_info/`` folder into the working directory).
``catboost.sample_gaussian_process`` takes neither setting, so :func:`sample_gaussian_process`
runs CatBoost's own implementation with its model constructor bound to them (see there).
"""

from __future__ import annotations

import functools
import logging
import types
from typing import Any, ClassVar

import catboost
import catboost.core
import numpy as np
from catboost import CatBoostRegressor

from postrisk.core.progress import track
from postrisk.methods.ensemble import reduce_members
from postrisk.methods.interface import Prediction, UncertaintyMethod
from postrisk.methods.resampling import (
    HeldOutErrors,
    held_out_errors,
    member_resamples,
    member_seeds,
)
from postrisk.methods.scaling import Standardizer, as_inputs, as_training_data

logger = logging.getLogger(__name__)


def engine_settings(n_threads: int) -> dict[str, Any]:
    """The run settings of every CatBoost model the methods build: ``n_threads`` threads (for
    fitting and the model's own predictions) and no files written."""
    return {"thread_count": int(n_threads), "allow_writing_files": False}


@functools.cache
def _gp_sampler_code() -> types.CodeType:
    code = catboost.core.sample_gaussian_process.__code__
    if "CatBoostRegressor" not in code.co_names:  # a CatBoost release that builds models otherwise
        raise RuntimeError("catboost.sample_gaussian_process no longer builds its models with "
                           "CatBoostRegressor; its thread count and file writing cannot be set")
    return code


def sample_gaussian_process(x: np.ndarray, y: np.ndarray, *, n_threads: int,
                            **kwargs: Any) -> list[catboost.CatBoost]:
    """``catboost.sample_gaussian_process(x, y, **kwargs)`` (KGB, Ustimenko et al. 2023,
    Alg. 4) with every model it builds using ``n_threads`` threads and writing no files.

    CatBoost's function constructs its prior and posterior ``CatBoostRegressor`` models without
    ``thread_count`` (so they use every core) or ``allow_writing_files`` (so each writes
    ``catboost_info/`` into the working directory), and takes no parameters to set them. This
    runs CatBoost's own function — its code object, unchanged — with the one global name
    ``CatBoostRegressor`` resolved to ``CatBoostRegressor`` with :func:`engine_settings` bound
    (``functools.partial``); nothing global is modified, so concurrent calls do not interfere.
    The algorithm, its random streams and so its samples are exactly CatBoost's (the thread
    count does not change CatBoost's results). Returns the list of ``samples`` models, each the
    sum of a prior and a posterior model; ``model.predict(x)`` is one sampled function f(x).
    """
    original = catboost.core.sample_gaussian_process
    namespace = dict(vars(catboost.core))
    namespace["CatBoostRegressor"] = functools.partial(CatBoostRegressor,
                                                       **engine_settings(n_threads))
    bound = types.FunctionType(_gp_sampler_code(), namespace, original.__name__,
                               original.__defaults__, original.__closure__)
    bound.__kwdefaults__ = original.__kwdefaults__
    return bound(x, y, **kwargs)


class _CatBoostMethod(UncertaintyMethod):
    """What CatBoost-PS and CatBoost-KGB share: input checks, target standardisation
    (``standardize_y``) and the way back to target units, the engine settings."""

    def _training_target(self, x: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
        """Checked inputs and the training target ỹ; stores ``y_mean_``, ``y_scale_``,
        ``n_features_``."""
        x, y = as_training_data(x, y)
        scaler = Standardizer.fit(x, y, standardize_inputs=False,
                                  standardize_targets=bool(self.standardize_y))
        self.standardizer_ = scaler
        self.y_mean_, self.y_scale_ = scaler.y_mean, scaler.y_scale
        self.n_features_ = x.shape[1]
        return x, scaler.target(y)

    def _inputs(self, x: Any) -> np.ndarray:
        if not hasattr(self, "standardizer_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted; call fit first")
        return as_inputs(x, self.n_features_)


    def _engine_settings(self) -> dict[str, Any]:
        return engine_settings(self.n_threads)


class CatBoostPS(_CatBoostMethod):
    """An ensemble of SGLB posterior samples, each a Gaussian regressor (the paper, App. C.3).

    Model (in standardised units ỹ): member k = 1..M (M = ``n_regressors``) is a CatBoost model
    (Prokhorenkova et al. 2018) with two outputs per leaf, the mean μ_k(x) and log σ_k(x), fitted
    to the Gaussian negative log-likelihood (``loss_function = "RMSEWithUncertainty"``)

        L(μ, log σ; ỹ) = ½ (ỹ − μ)²/σ² + log σ

    by Stochastic Gradient Langevin Boosting (``posterior_sampling = True``; Ustimenko &
    Prokhorenkova 2021): Langevin boosting with diffusion temperature N_k and constant model
    shrinkage rate 1/(2N_k) (N_k the member's training rows), so each member is a sample from
    the posterior over tree ensembles (Malinin et al. 2021, "Uncertainty in Gradient Boosting
    via Ensembles"). Each iteration reweights the rows by the Bayesian bootstrap
    (``bootstrap_type = "Bayesian"``: weights (−log u)^T, u ~ U(0, 1), T =
    ``bagging_temperature``; T = 0 gives unit weights). Member k has its own seed
    (:func:`member_seeds`) and, when ``bagging_frac`` < 1, its own ⌊bagging_frac·n⌋ training
    rows drawn without replacement (:func:`member_resamples`); with ``bagging_frac`` = 1 every
    member sees every row.

    Prediction at x: member k predicts N(μ_k(x), σ_k²(x)) (CatBoost's ``predict`` returns
    [μ, σ²], i.e. exp(2·log σ) of the raw output); then (:func:`reduce_members`)

        mean = (1/M) Σ_k μ_k,   AU = (1/M) Σ_k σ_k²,   EU = (1/M) Σ_k (μ_k − mean)²,

    reported in target units (mean·s_y + ȳ, variances ·s_y²).

    Tree hyper-parameters: ``iterations``, ``learning_rate``, ``depth``, ``l2_leaf_reg``,
    ``random_strength`` (the scale of the random noise added to split scores). Fitted
    attributes: ``members_`` (the M ``CatBoostRegressor`` models, in standardised units),
    ``member_rows_`` (each member's training row indices), ``member_seeds_``, ``y_mean_``,
    ``y_scale_``, ``n_features_``.
    """

    defaults: ClassVar[dict[str, Any]] = {
        "iterations": 300, "learning_rate": 0.1, "depth": 6, "l2_leaf_reg": 3.0,
        "random_strength": 1.0, "bagging_temperature": 1.0, "n_regressors": 10,
        "bagging_frac": 1.0, "standardize_y": True,
    }
    search_space: ClassVar[dict[str, tuple]] = {
        "iterations": ("int", 100, 600),
        "learning_rate": ("float", 0.01, 0.3, "log"),
        "depth": ("int", 3, 8),
        "l2_leaf_reg": ("float", 0.5, 10.0, "log"),
        "random_strength": ("float", 0.0, 2.0),
        "bagging_temperature": ("float", 0.0, 2.0),
        "n_regressors": ("int", 5, 20),
        "bagging_frac": ("float", 0.6, 1.0),
        "standardize_y": ("categorical", [True, False]),
    }

    def _member(self, seed: int) -> CatBoostRegressor:
        return CatBoostRegressor(
            iterations=int(self.iterations), learning_rate=float(self.learning_rate),
            depth=int(self.depth), l2_leaf_reg=float(self.l2_leaf_reg),
            random_strength=float(self.random_strength),
            loss_function="RMSEWithUncertainty", posterior_sampling=True,
            bootstrap_type="Bayesian", bagging_temperature=float(self.bagging_temperature),
            random_seed=int(seed), verbose=False, **self._engine_settings())

    def fit(self, x: np.ndarray, y: np.ndarray) -> CatBoostPS:
        x, t = self._training_target(x, y)
        n, n_members = x.shape[0], int(self.n_regressors)
        if n_members < 1:
            raise ValueError(f"n_regressors must be >= 1, got {self.n_regressors!r}")
        frac = float(self.bagging_frac)
        if not 0 < frac <= 1:
            raise ValueError(f"bagging_frac must lie in (0, 1], got {self.bagging_frac!r}")
        # independent streams for the members' CatBoost seeds and for their row subsets
        seed_root, rows_root = member_seeds(self.random_state, 2)
        self.member_seeds_ = member_seeds(seed_root, n_members)
        if frac < 1:
            self.member_rows_ = member_resamples(n, n_members, frac, replace=False,
                                                 random_state=rows_root)
        else:
            self.member_rows_ = [np.arange(n, dtype=np.int64) for _ in range(n_members)]
        self.members_ = []
        for seed, rows in track(list(zip(self.member_seeds_, self.member_rows_, strict=True)),
                                "catboost_ps: members", logger):
            self.members_.append(self._member(seed).fit(x[rows], t[rows]))
        return self

    def member_outputs(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The members' means and variances at ``x``, each (M, m), in standardised units."""
        x = self._inputs(x)
        out = np.stack([m.predict(x, thread_count=self.n_threads) for m in self.members_])
        return out[:, :, 0], out[:, :, 1]

    def predict(self, x: np.ndarray) -> Prediction:
        means, variances = self.member_outputs(x)
        return self.standardizer_.prediction_to_target(reduce_members(means, variances))


class CatBoostKGB(_CatBoostMethod):
    """Kernel gradient boosting: samples of the GP posterior that boosting targets, plus a
    held-out AU (the paper, App. C.3; Ustimenko et al. 2023).

    Model (in standardised units ỹ; Ustimenko et al. 2023, "Gradient Boosting Performs Gaussian
    Process Inference", Alg. 4, as ``catboost.sample_gaussian_process`` implements it): with K
    the kernel of CatBoost's random oblivious trees (depth ``depth``, split-score noise of scale
    ``random_strength``), the prior is f ~ GP(0, σ²K + δ²I) (σ = ``sigma``, δ = ``delta``). A
    sample of f from the posterior given (x_i, ỹ_i), i = 1..n, is drawn as

    1. a prior sample f₀ ~ GP(0, σ²K): ``prior_iterations`` random trees (fitted with step
       ``eps`` to N(0, eps²) noise, Gumbel score noise of scale 1/eps) whose leaf values are
       redrawn from N(0, n/√w_leaf) (a variance; w_leaf the leaf weight) and the sum scaled
       by σ/√``prior_iterations``;
    2. the posterior step: ``posterior_iterations`` rounds of plain L2 boosting (no bootstrap,
       l2_leaf_reg 0, step ``learning_rate``, Gumbel score noise ``random_strength``, model
       shrinkage rate (random_strength/σ)²/n) on the residual ỹ − f₀(x) + ε, ε ~ N(0, δ²I);
       the sample is f = f₀ + the boosted model.

    M = ``n_regressors`` samples f_1..f_M are drawn from one seed; then (:func:`reduce_members`
    without member variances)

        mean = (1/M) Σ_k f_k(x),   EU = (1/M) Σ_k (f_k(x) − mean)²,

    and the AU is a constant: the held-out mean squared error of a second ensemble with the same
    settings, fitted on a random (1 − ``held_out_fraction``) of the rows and predicting its mean
    at the held-out rest (:func:`held_out_errors`) — the noise variance plus that ensemble's own
    error. All three are reported in target units (mean·s_y + ȳ, variances ·s_y²).
    ``held_out_fraction`` is not searched.

    Seeds: three independent streams from ``random_state`` (:func:`member_seeds`): the samples,
    the held-out split and the second ensemble. ``n_threads`` is honoured by every CatBoost model
    (:func:`sample_gaussian_process`). Fitted attributes: ``members_`` (the M sampled models, in
    standardised units), ``held_out_`` (the :class:`HeldOutErrors` of the second ensemble, in
    standardised units), ``noise_var_`` (its MSE, standardised units), ``sampler_seed_``,
    ``held_out_seeds_`` ((split seed, second ensemble seed)), ``y_mean_``, ``y_scale_``,
    ``n_features_``.
    """

    defaults: ClassVar[dict[str, Any]] = {
        "posterior_iterations": 900, "prior_iterations": 100, "learning_rate": 0.1, "depth": 6,
        "sigma": 0.1, "delta": 0.01, "random_strength": 0.1, "eps": 1e-4, "n_regressors": 10,
        "standardize_y": True, "held_out_fraction": 0.1,
    }
    search_space: ClassVar[dict[str, tuple]] = {
        "posterior_iterations": ("int", 200, 1000),
        "prior_iterations": ("int", 50, 300),
        "learning_rate": ("float", 0.03, 0.3, "log"),
        "depth": ("int", 4, 8),
        "sigma": ("float", 0.05, 0.5, "log"),
        "delta": ("float", 0.01, 0.5, "log"),
        "random_strength": ("float", 0.05, 1.0, "log"),
        "eps": ("float", 1e-5, 1e-3, "log"),
        "n_regressors": ("int", 5, 20),
        "standardize_y": ("categorical", [True, False]),
    }

    def sampler_settings(self) -> dict[str, Any]:
        """The keyword arguments of ``catboost.sample_gaussian_process`` but the seed."""
        settings = {
            "samples": int(self.n_regressors),
            "posterior_iterations": int(self.posterior_iterations),
            "prior_iterations": int(self.prior_iterations),
            "learning_rate": float(self.learning_rate), "depth": int(self.depth),
            "sigma": float(self.sigma), "delta": float(self.delta),
            "random_strength": float(self.random_strength), "eps": float(self.eps),
        }
        checks = {"n_regressors": settings["samples"] >= 1, "sigma": settings["sigma"] > 0,
                  "delta": settings["delta"] >= 0,
                  "random_strength": settings["random_strength"] > 0,
                  "eps": settings["eps"] > 0,
                  "posterior_iterations": settings["posterior_iterations"] >= 1,
                  "prior_iterations": settings["prior_iterations"] >= 1}
        bad = {key: getattr(self, key) for key, ok in checks.items() if not ok}
        if bad:
            raise ValueError(f"invalid CatBoost-KGB hyper-parameter(s): {bad} (need "
                             "n_regressors, posterior_iterations, prior_iterations >= 1, "
                             "sigma, random_strength, eps > 0, delta >= 0)")
        return settings

    def _sample(self, x: np.ndarray, t: np.ndarray, seed: int) -> list[catboost.CatBoost]:
        return sample_gaussian_process(x, t, n_threads=self.n_threads, random_seed=int(seed),
                                       **self.sampler_settings())

    def _sampled_functions(self, members: list[catboost.CatBoost], x: np.ndarray) -> np.ndarray:
        return np.stack([m.predict(x, thread_count=self.n_threads) for m in members])

    def fit(self, x: np.ndarray, y: np.ndarray) -> CatBoostKGB:
        x, t = self._training_target(x, y)
        self.sampler_settings()  # check the hyper-parameters before any fitting
        sampler_seed, split_seed, second_seed = member_seeds(self.random_state, 3)
        self.sampler_seed_ = sampler_seed
        self.held_out_seeds_ = (split_seed, second_seed)
        logger.info("catboost_kgb: sampling %d functions on %d rows", self.n_regressors,
                    x.shape[0])
        self.members_ = self._sample(x, t, sampler_seed)

        def fit_predict(x_fit: np.ndarray, t_fit: np.ndarray, x_held: np.ndarray) -> np.ndarray:
            return self._sampled_functions(self._sample(x_fit, t_fit, second_seed),
                                           x_held).mean(axis=0)

        logger.info("catboost_kgb: held-out ensemble for the AU")
        self.held_out_: HeldOutErrors = held_out_errors(
            fit_predict, x, t, held_out_fraction=float(self.held_out_fraction),
            random_state=split_seed)
        self.noise_var_ = self.held_out_.mse
        return self

    def sampled_functions(self, x: np.ndarray) -> np.ndarray:
        """The M sampled functions f_k at ``x``, shape (M, m), in standardised units."""
        return self._sampled_functions(self.members_, self._inputs(x))

    def predict(self, x: np.ndarray) -> Prediction:
        pred = reduce_members(self.sampled_functions(x))
        pred = Prediction(mean=pred.mean, aleatoric_var=np.full(pred.mean.shape, self.noise_var_),
                          epistemic_var=pred.epistemic_var)
        return self.standardizer_.prediction_to_target(pred)
