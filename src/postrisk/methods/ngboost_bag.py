"""NGBoost-Bag (``ngboost_bag``; the paper, App. C.3): a bag of Gaussian NGBoost models.

The members are fitted on up to ``n_threads`` worker processes (joblib's ``loky`` backend,
:data:`MEMBER_BACKEND`): NGBoost's boosting loop is Python holding the GIL, and the members are
independent, so processes, not threads, use the job's cores. With a validation monitor (a
sweep that stops hopeless trials early) they are boosted in rounds, each continuing every
member exactly where the last stopped (:func:`advance_member`).
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

import numpy as np

from postrisk.core.progress import track
from postrisk.core.threads import thread_limit
from postrisk.methods.ensemble import reduce_members
from postrisk.methods.interface import Prediction, UncertaintyMethod, ValidationMonitor
from postrisk.methods.ngboost import (
    BOOSTER_SEARCH_SPACE,
    gaussian_distribution,
    make_ngb_regressor,
)
from postrisk.methods.resampling import member_resamples, member_seeds
from postrisk.methods.scaling import Standardizer, as_inputs, as_training_data

logger = logging.getLogger(__name__)

#: joblib backend of NGBoost-Bag's members when ``n_threads`` > 1: worker processes, each with
#: its BLAS/OpenMP pools at one thread. On 2 cores (10 members, 500 iterations, depth 3;
#: ``benchmarks/ngboost_bag_parallel.py``) processes were 1.8× as fast as the sequential loop
#: at n = 350, d = 8 and 2.0× at n = 4,800, d = 21; threads 1.1× and 1.9× (NGBoost's Python
#: loop holds the GIL; the trees, which dominate at large n, release it).
MEMBER_BACKEND = "loky"


def fit_member(x: np.ndarray, t: np.ndarray, seed: int, settings: dict[str, Any]) -> Any:
    """NGBoost-Bag's member: a Gaussian NGBoost model (:func:`make_ngb_regressor` with
    ``settings`` and ``random_state=seed``) fitted on its rows ``x``, ``t``, with BLAS/OpenMP
    pools at one thread (in a worker process, or in the caller's)."""
    with thread_limit(1):
        model = make_ngb_regressor(gaussian_distribution(), random_state=int(seed), **settings)
        return model.fit(x, t)


def boosting_params(model: Any, x: np.ndarray) -> np.ndarray:
    """The parameters (m, n_params) a fitted NGBoost model's training loop holds at rows ``x``
    after its last stage, computed as the loop computes them (``init − (lr·scale)·trees``,
    stage by stage): bit for bit the loop's own values. (NGBoost's ``pred_param`` multiplies in
    another order, which rounds differently.)"""
    params = np.ones((x.shape[0], model.Manifold.n_params)) * model.init_params
    for models, scale, cols in zip(model.base_models, model.scalings, model.col_idxs,
                                   strict=True):
        params -= model.learning_rate * scale * np.array(
            [m.predict(x[:, cols]) for m in models]).T
    return params


def advance_member(model: Any, x: np.ndarray, t: np.ndarray, seed: int,
                   settings: dict[str, Any], stop: int) -> Any:
    """NGBoost-Bag's member boosted to stage ``stop``: fitted from scratch (``model`` None)
    or continued from ``model`` (the member fitted to fewer stages) through NGBoost's
    ``partial_fit``, started from the loop's own parameters (:func:`boosting_params`) and its
    random stream, so the member at its last stage is bit for bit :func:`fit_member`'s. A member
    whose boosting stopped before (NGBoost's gradient tolerance) is returned as it is."""
    with thread_limit(1):
        if model is None:
            model = make_ngb_regressor(gaussian_distribution(), random_state=int(seed),
                                       **{**settings, "n_estimators": int(stop)})
            model.fit(x, t)
        elif len(model.base_models) == model.n_estimators_done_:
            params = boosting_params(model, x)
            model.n_estimators = int(stop) - len(model.base_models)
            model.pred_param = lambda *_args, **_kwargs: params.copy()
            try:
                model.partial_fit(x, t)
            finally:
                del model.pred_param
        model.n_estimators_done_ = int(stop)
        model.n_estimators = int(settings["n_estimators"])
        return model


class NGBoostBag(UncertaintyMethod):
    """A bag of Gaussian NGBoost models (the paper, App. C.3; NGBoost: Duan et al. 2020).

    Model: member k = 1..n_regressors is an NGBoost regressor with a Normal output
    (:func:`gaussian_distribution`)
    N(μ_k(x), σ_k²(x)) (log score, natural gradient if ``natural_gradient``), fitted on its own
    resample of ⌊sample_fraction·n⌋ rows drawn with or without replacement (``replace``) and
    with its own seed (:func:`member_resamples`, :func:`member_seeds`), on the target
    standardised if ``standardize_y``, its trees grown as ``tree_learner`` says
    (:func:`make_ngb_regressor`). Prediction (:func:`reduce_members`, then in target
    units):

        mean = (1/K) Σ_k μ_k,   AU = (1/K) Σ_k σ_k²,   EU = (1/K) Σ_k (μ_k − mean)².

    The members are fitted on up to ``n_threads`` workers at once (:data:`MEMBER_BACKEND`
    processes, each with one BLAS/OpenMP thread; ``n_threads`` = 1: one after another in this
    process, with one BLAS/OpenMP thread too): each member's model depends only on its rows and
    seed, so the fit is bit for bit the same for any ``n_threads``, members in their order.

    Fitted attributes: ``members_`` (the fitted ``NGBRegressor`` models), ``member_rows_``
    (each member's training row indices), ``member_seeds_``, ``y_mean_``, ``y_scale_``,
    ``n_features_``; :meth:`member_predictions` gives the members' means and variances in
    the units they were fitted in.
    """

    defaults: ClassVar[dict[str, Any]] = {
        "n_estimators": 500, "learning_rate": 0.01, "max_depth": 3, "minibatch_frac": 1.0,
        "col_sample": 1.0, "natural_gradient": True, "n_regressors": 10,
        "sample_fraction": 0.8, "replace": False, "standardize_y": True,
        "tree_learner": "presorted"}
    search_space: ClassVar[dict[str, tuple]] = {
        **BOOSTER_SEARCH_SPACE,
        "learning_rate": ("float", 0.005, 0.1, "log"),
        "natural_gradient": ("categorical", [True, False]),
        "n_regressors": ("int", 5, 25),
        "sample_fraction": ("float", 0.6, 0.95),
        "replace": ("categorical", [True, False]),
        "standardize_y": ("categorical", [True, False]),
    }

    iterations_parameter: ClassVar[str] = "n_estimators"
    # 2: trees grown from presorted columns (tree_learner)
    implementation_version: ClassVar[int] = 2

    def fit(self, x: np.ndarray, y: np.ndarray,
            monitor: ValidationMonitor | None = None) -> NGBoostBag:
        """Fit (see the class docstring). ``monitor``: the members are boosted in rounds up to
        each of its checkpoints (:func:`advance_member`: each member at its last stage is the
        one a single fit gives), and after each round the bag's prediction at its inputs is
        reported."""
        x, y = as_training_data(x, y)
        n = x.shape[0]
        k = int(self.n_regressors)
        scaler = Standardizer.fit(x, y, standardize_inputs=False,
                                  standardize_targets=bool(self.standardize_y))
        t = scaler.target(y)
        seeds = member_seeds(self.random_state, k)
        rows = member_resamples(n, k, self.sample_fraction, bool(self.replace),
                                self.random_state)
        settings = {"n_estimators": self.n_estimators, "learning_rate": self.learning_rate,
                    "max_depth": self.max_depth, "minibatch_frac": self.minibatch_frac,
                    "col_sample": self.col_sample, "natural_gradient": self.natural_gradient,
                    "tree_learner": self.tree_learner}
        jobs = [(x[idx], t[idx], seed) for seed, idx in zip(seeds, rows, strict=True)]
        n_workers = min(int(self.n_threads), k)
        self.member_rows_ = rows
        self.member_seeds_ = seeds
        self.standardizer_ = scaler
        self.y_mean_, self.y_scale_ = scaler.y_mean, scaler.y_scale
        self.n_features_ = x.shape[1]
        if monitor is None:
            self.members_ = self._in_parallel(fit_member, [(*job, settings) for job in jobs],
                                              n_workers, "ngboost_bag: members")
            return self
        x_val = as_inputs(monitor.inputs, x.shape[1])
        members: list[Any] = [None] * k
        total = int(self.n_estimators)
        for stop in [*monitor.checkpoints(total), total]:
            members = self._in_parallel(
                advance_member, [(m, *job, settings, stop) for m, job in zip(
                    members, jobs, strict=True)], n_workers, f"ngboost_bag: stages to {stop}")
            self.members_ = members
            if stop < total:
                monitor.report(stop, self.predict(x_val))
        for member in members:
            del member.n_estimators_done_
        return self

    @staticmethod
    def _in_parallel(function, jobs: list[tuple], n_workers: int, label: str) -> list[Any]:
        """``function(*job)`` for each job, on ``n_workers`` worker processes
        (:data:`MEMBER_BACKEND`) or, with one, one after another here; in order."""
        if n_workers <= 1:
            done = (function(*job) for job in jobs)
        else:
            from joblib import Parallel, delayed

            done = Parallel(n_jobs=n_workers, backend=MEMBER_BACKEND, return_as="generator")(
                delayed(function)(*job) for job in jobs)
        return list(track(done, label, logger, total=len(jobs)))

    def member_predictions(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Members' means and variances (scale²) at ``x``, each (n_regressors, m), in the units
        the members were fitted in (standardised if ``standardize_y``)."""
        x = as_inputs(x, self.n_features_)
        dists = [member.pred_dist(x) for member in self.members_]
        return (np.stack([d.loc for d in dists]), np.stack([d.scale ** 2 for d in dists]))

    def predict(self, x: np.ndarray) -> Prediction:
        means, variances = self.member_predictions(x)
        return self.standardizer_.prediction_to_target(reduce_members(means, variances))
