"""NGBoost methods (the paper, App. C.3; NGBoost: Duan et al. 2020): the boosted
Normal–Inverse-Gamma output (``ngboost_nig``), its App. D.2-style ablation with the regularised
Fisher metric (``ngboost_nig_regularised_fisher``, :class:`RegularisedFisherNGBoostNIG`) and a
bag of Gaussian NGBoost models (``ngboost_bag``).

The NIG mathematics lives in :mod:`postrisk.methods.nig`; this module holds only the glue to
NGBoost's extension API (a ``RegressionDistn`` with its ``LogScore`` implementation, built per
instance because the regulariser strengths and the natural-gradient metric are
hyper-parameters), the booster both methods build, and NGBoost-NIG; NGBoost-Bag lives in
:mod:`postrisk.methods.ngboost_bag`.
"""

from __future__ import annotations

import functools
import logging
from typing import Any, ClassVar

import numpy as np

from postrisk.methods import nig
from postrisk.methods.interface import Prediction, UncertaintyMethod, ValidationMonitor
from postrisk.methods.scaling import Standardizer, as_inputs, as_training_data

logger = logging.getLogger(__name__)

#: The booster settings both NGBoost methods search alike (the paper, App. C.3); each adds its
#: own learning-rate range and method settings.
BOOSTER_SEARCH_SPACE: dict[str, tuple] = {
    "n_estimators": ("int", 200, 800),
    "max_depth": ("int", 2, 6),
    "minibatch_frac": ("float", 0.5, 1.0),
    "col_sample": ("float", 0.5, 1.0),
}

#: How NGBoost's trees are grown (:func:`make_ngb_regressor`): the same exact-split trees from
#: columns sorted once per fit, or by scikit-learn.
TREE_LEARNERS = ("presorted", "sklearn")

#: Floor of Var(y) in the NIG's initial β (a constant target would give ln 0).
MIN_INITIAL_VAR = 1e-12
#: The values of NGBoost-NIG's ``natural_gradient_metric`` (see :class:`NGBoostNIG`).
NIG_METRICS = ("regularised_fisher", "empirical", "euclidean")
#: NGBoost-NIG's default metric: the NGBoost authors' empirical metric, as the paper runs it.
DEFAULT_NIG_METRIC = "empirical"


def make_ngb_regressor(dist: type, *, n_estimators: int, learning_rate: float, max_depth: int,
                       minibatch_frac: float, col_sample: float, natural_gradient: bool,
                       random_state: int, tree_learner: str = "presorted") -> Any:
    """An unfitted NGBoost regressor with log score and regression trees (scikit-learn's
    ``DecisionTreeRegressor(criterion="friedman_mse", max_depth=max_depth)``, seeded by
    NGBoost's own stream from ``random_state``), silent. The one place both methods build
    their boosters.

    ``tree_learner``: ``"presorted"`` grows the same trees from columns sorted once per fit
    (:class:`~postrisk.methods.presorted_ngboost.PresortedNGBRegressor`; ties between
    features broken from another random stream), ``"sklearn"`` with scikit-learn's own."""
    from ngboost import NGBRegressor
    from ngboost.scores import LogScore
    from sklearn.tree import DecisionTreeRegressor

    if int(n_estimators) < 1 or int(max_depth) < 1 or not float(learning_rate) > 0:
        raise ValueError(f"need n_estimators >= 1, max_depth >= 1 and learning_rate > 0, got "
                         f"{n_estimators!r}, {max_depth!r}, {learning_rate!r}")
    if not (0 < float(minibatch_frac) <= 1 and 0 < float(col_sample) <= 1):
        raise ValueError(f"minibatch_frac and col_sample must lie in (0, 1], got "
                         f"{minibatch_frac!r}, {col_sample!r}")
    if tree_learner not in TREE_LEARNERS:
        raise ValueError(f"tree_learner must be one of {TREE_LEARNERS}, got {tree_learner!r}")
    if tree_learner == "presorted":
        from postrisk.methods.exact_tree import ExactTreeRegressor
        from postrisk.methods.presorted_ngboost import PresortedNGBRegressor

        regressor, base = PresortedNGBRegressor, ExactTreeRegressor(max_depth=int(max_depth))
    else:
        regressor = NGBRegressor
        base = DecisionTreeRegressor(criterion="friedman_mse", max_depth=int(max_depth))
    return regressor(
        Dist=dist, Score=LogScore, Base=base,
        natural_gradient=bool(natural_gradient), n_estimators=int(n_estimators),
        learning_rate=float(learning_rate), minibatch_frac=float(minibatch_frac),
        col_sample=float(col_sample), verbose=False, random_state=int(random_state))


@functools.cache
def gaussian_distribution() -> type:
    """NGBoost's ``Normal`` with its log score computed in closed form.

    ``ngboost.distns.Normal`` builds a frozen ``scipy.stats.norm`` object for every parameter
    update (each boosting iteration and each line-search step) only to evaluate its log density;
    that construction took 35% of a member's fit time (n = 400, 200 iterations; profiled). This
    subclass skips it and evaluates −log N(y | μ, σ²) with the very expression SciPy uses
    (z = (y − μ)/σ; z²/2 + ln √(2π) + ln σ), so the loss — and therefore every line-search
    decision and tree — is unchanged; the gradient and Fisher information are NGBoost's own.

    Built on first use (NGBoost is imported lazily), the two classes are reachable as
    ``postrisk.methods.ngboost.Gaussian`` and ``.GaussianLogScore`` (the module's
    ``__getattr__``), so ``pickle`` stores them, and a fitted member, by reference, and loading
    gives this very class in any process (NGBoost-Bag's members come back from its workers so).
    """
    from ngboost.distns import RegressionDistn
    from ngboost.distns.normal import Normal, NormalLogScore
    from ngboost.scores import LogScore

    log_sqrt_2pi = 0.5 * np.log(2 * np.pi)  # scipy.stats' _norm_pdf_logC

    class GaussianLogScore(NormalLogScore, LogScore):  # LogScore last: NGBoost's lookup key
        def score(self, Y):
            z = (Y - self.loc) / self.scale
            return -((-z ** 2 / 2.0 - log_sqrt_2pi) - np.log(self.scale))

    class Gaussian(Normal):
        """``Normal`` without the frozen SciPy distribution (mean = loc)."""

        scores: ClassVar[list] = [GaussianLogScore]

        def __init__(self, params):
            RegressionDistn.__init__(self, params)
            self.loc = params[0]
            self.scale = np.exp(params[1])
            self.var = self.scale ** 2

        def mean(self):
            return self.loc

        def sample(self, m):
            """m draws, shape (m, n) (unseeded, as NGBoost's own ``Normal``; not used in fitting,
            which has NGBoost's analytic metric)."""
            noise = np.random.default_rng().standard_normal((int(m), *self.loc.shape))
            return self.loc + self.scale * noise

        def __getattr__(self, name):  # Normal's forwards to the SciPy object, which is absent
            raise AttributeError(name)

    for cls in (GaussianLogScore, Gaussian):  # pickled by reference: see __getattr__ below
        cls.__module__, cls.__qualname__ = __name__, cls.__name__
    return Gaussian


def __getattr__(name: str) -> type:
    """``Gaussian`` and ``GaussianLogScore``: the classes :func:`gaussian_distribution` builds
    (the names ``pickle`` stores them under)."""
    if name == "Gaussian":
        return gaussian_distribution()
    if name == "GaussianLogScore":
        return gaussian_distribution().scores[0]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def check_nig_metric(natural_gradient_metric: str, kl_strength: float) -> str:
    """The metric's name, checked: ``ValueError`` unless it is one of :data:`NIG_METRICS`, or
    if it is ``"regularised_fisher"`` and kl_strength ≤ 0 (the KL term's Fisher information
    makes that metric invertible; the other two take any kl_strength ≥ 0)."""
    name = natural_gradient_metric
    if not isinstance(name, str) or name not in NIG_METRICS:
        raise ValueError(f"natural_gradient_metric must be one of "
                         f"{', '.join(map(repr, NIG_METRICS))}, got {name!r}")
    kl = float(kl_strength)
    if name == "regularised_fisher" and not kl > 0:
        raise ValueError(f"kl_strength must be > 0 with the regularised_fisher metric (the KL "
                         f"term's Fisher information makes it invertible), got {kl_strength!r}")
    if not kl >= 0:
        raise ValueError(f"kl_strength must be >= 0, got {kl_strength!r}")
    return name


def nig_distribution(evidential_strength: float, kl_strength: float,
                     natural_gradient_metric: str = DEFAULT_NIG_METRIC) -> type:
    """An NGBoost ``RegressionDistn`` for the NIG output with the score
    S = NLL + evidential_strength·|y−μ|(2λ+α) + kl_strength·KL(NIG ‖ NIG(μ, 1, 2, 1)) as its
    ``LogScore`` implementation (:mod:`postrisk.methods.nig`). Internal parameters per row:
    θ = (μ, ln λ, ln(α−1), ln β). The metric (never NGBoost's unseeded Monte-Carlo Fisher
    estimate), by ``natural_gradient_metric``:

    - ``"empirical"`` (the default): M = g gᵀ + ε·I of the row's own gradient g, which needs
      y, so ``grad`` is overridden to return M⁻¹g =
      :func:`postrisk.methods.nig.empirical_natural_gradient` (``metric()``, which gets no y,
      raises);
    - ``"regularised_fisher"``: ``metric()`` is :func:`postrisk.methods.nig.evidential_metric`
      and NGBoost's own ``grad`` solves it against ∂S/∂θ;
    - ``"euclidean"``: ``metric()`` is the identity, so the natural gradient is ∂S/∂θ itself
      (the booster is built with ``natural_gradient=False`` anyway).

    ``ValueError`` for an unknown metric, for evidential_strength < 0 and for a kl_strength
    that :func:`check_nig_metric` refuses.
    """
    from ngboost.distns import RegressionDistn
    from ngboost.scores import LogScore

    metric_name = check_nig_metric(natural_gradient_metric, kl_strength)
    ev, kl = float(evidential_strength), float(kl_strength)
    if not ev >= 0:
        raise ValueError(f"evidential_strength must be >= 0, got {evidential_strength!r}")

    class NIGEvidentialScore(LogScore):  # LogScore last: NGBoost finds it by its last base
        evidential_strength = ev
        kl_strength = kl
        natural_gradient_metric = metric_name

        def score(self, Y):
            # the line search probes large steps: overflow there is a non-finite loss, which
            # NGBoost treats as "step too long"
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                return nig.evidential_score(self._params, Y, ev, kl)

        def d_score(self, Y):
            return nig.evidential_score_grad(self._params, Y, ev, kl)

        if metric_name == "regularised_fisher":
            def metric(self):
                return nig.evidential_metric(self._params, kl)

        elif metric_name == "empirical":
            def grad(self, Y, natural=True):
                g = self.d_score(Y)
                return nig.empirical_natural_gradient(g) if natural else g

            def metric(self):
                raise NotImplementedError("the empirical metric g gᵀ + ε·I needs the targets: "
                                          "grad(Y, natural=True) applies it")

        else:  # euclidean
            def metric(self):
                n = np.shape(self._params)[1]
                return np.broadcast_to(np.eye(nig.N_PARAMS), (n, nig.N_PARAMS, nig.N_PARAMS))

    class NIG(RegressionDistn):
        """Normal–Inverse-Gamma output (Amini et al. 2020) for NGBoost (Duan et al. 2020)."""

        n_params = nig.N_PARAMS
        natural_gradient_metric = metric_name
        scores: ClassVar[list] = [NIGEvidentialScore]

        def __init__(self, params):
            super().__init__(params)
            with np.errstate(over="ignore"):
                self.mu, self.lam, self.alpha, self.beta = nig.nig_from_internal(params)

        @staticmethod
        def fit(Y):
            """μ = mean(y), λ = 1, α = 2, β = Var(y) (so AU = Var(y), EU = AU)."""
            y = np.asarray(Y, dtype=np.float64)
            var = max(float(np.var(y)), MIN_INITIAL_VAR)
            return nig.internal_from_nig(float(np.mean(y)), 1.0, 2.0, var)

        def sample(self, m):
            """m draws of y from the Student-t marginal, shape (m, n) (unseeded; not used in
            fitting, which has an analytic metric)."""
            from scipy import stats

            nu, scale2 = nig.student_t_params(self.lam, self.alpha, self.beta)
            return stats.t.rvs(nu, loc=self.mu, scale=np.sqrt(scale2),
                               size=(int(m),) + self.mu.shape)

        def mean(self):
            return self.mu

        @property
        def params(self):
            return {"mu": self.mu, "lam": self.lam, "alpha": self.alpha, "beta": self.beta}

    return NIG


class NGBoostNIG(UncertaintyMethod):
    """NGBoost with a Normal–Inverse-Gamma output (the paper, App. C.3): the deep evidential
    regression output (Amini et al. 2020) fitted by natural-gradient boosting (Duan et al.
    2020).

    Model (standardised target t = (y − ȳ)/s_y; inputs as given, trees are invariant to their
    scale): per input x, boosted trees give θ(x) = (μ, θ₂, θ₃, θ₄) with λ = e^θ₂, α = e^θ₃ + 1,
    β = e^θ₄, and

        σ² ~ InvGamma(α, β),   m | σ² ~ N(μ, σ²/λ),   t | m, σ² ~ N(m, σ²).

    The boosting minimises the mean over rows of

        S = NLL(t | NIG) + evidential_strength·|t − μ|·(2λ + α)
            + kl_strength·KL(NIG(μ, λ, α, β) ‖ NIG(μ, 1, 2, 1)),

    where NLL is the Student-t marginal (ν = 2α, location μ, scale² β(1+λ)/(λα)) and the KL's
    reference is centred at the row's own μ (it regularises λ, α, β only; see
    :mod:`postrisk.methods.nig`). Each boosting step fits the trees to the rows' natural
    gradients M⁻¹g, g = ∂S/∂θ, under the metric M that ``natural_gradient_metric`` names (a
    setting fixed per run, not searched: the ablation of the metric):

    - ``"empirical"`` (the default, the NGBoost authors' metric, with which the paper's
      ρ(ÊU, ÂU) = 1.00 is reproduced): the per-row M = g gᵀ + 1e-5·I of the row's own
      gradient (:func:`nig.empirical_metric`), so the step is M⁻¹g = g/(gᵀg + 1e-5)
      (:func:`nig.empirical_natural_gradient`);
    - ``"regularised_fisher"`` (the ablation :class:`RegularisedFisherNGBoostNIG`):
      M = I_t(θ) + kl_strength·I_NIG(θ) + 0.01·I, the Fisher information of the Student-t
      marginal (singular along the direction of (λ, β) that keeps β(1+λ)/λ fixed, to which y
      is blind), the regulariser's curvature and a Levenberg–Marquardt damping
      (:func:`nig.evidential_metric`); ``kl_strength`` must be > 0, which makes it invertible;
    - ``"euclidean"``: M = I, the plain gradient (NGBoost's ``natural_gradient=False``).

    With ``"empirical"`` and ``"euclidean"`` ``kl_strength`` ≥ 0 will do. Initial parameters:
    μ = mean(t), λ = 1, α = 2, β = Var(t).

    Prediction at x, in target units: mean = s_y μ + ȳ; AU = s_y² β/(α−1) (E[σ²]);
    EU = s_y² β/(λ(α−1)) = AU/λ (Var[m]).

    Fitted attributes: ``model_`` (the ``NGBRegressor``), ``y_mean_``, ``y_scale_``,
    ``n_features_``; :meth:`predict_params` gives the NIG parameters in target units.
    """

    defaults: ClassVar[dict[str, Any]] = {
        "n_estimators": 400, "learning_rate": 0.05, "max_depth": 4, "minibatch_frac": 1.0,
        "col_sample": 1.0, "evidential_strength": 0.1, "kl_strength": 0.1,
        "natural_gradient_metric": DEFAULT_NIG_METRIC, "tree_learner": "presorted"}
    search_space: ClassVar[dict[str, tuple]] = {
        **BOOSTER_SEARCH_SPACE,
        "learning_rate": ("float", 0.01, 0.2, "log"),
        "evidential_strength": ("float", 1e-4, 1.0, "log"),
        "kl_strength": ("float", 1e-4, 1.0, "log"),
    }
    # 2: natural_gradient_metric setting; 3: default metric empirical (was regularised_fisher);
    # 4: trees grown from presorted columns (tree_learner)
    implementation_version: ClassVar[int] = 4
    iterations_parameter: ClassVar[str] = "n_estimators"

    def fit(self, x: np.ndarray, y: np.ndarray,
            monitor: ValidationMonitor | None = None) -> NGBoostNIG:
        """Fit (see the class docstring). ``monitor``: its inputs go to NGBoost as the
        validation set (NGBoost then updates their parameters along the boosting, which
        changes nothing of the fit), and after each of its checkpoints (in boosting stages) the
        prediction there is reported; NGBoost never sees validation targets (it is given
        zeros, which only its unused validation score reads)."""
        x, y = as_training_data(x, y)
        dist = nig_distribution(self.evidential_strength, self.kl_strength,
                                self.natural_gradient_metric)
        scaler = Standardizer.fit(x, y, standardize_inputs=False, standardize_targets=True)
        model = make_ngb_regressor(
            dist, n_estimators=self.n_estimators, learning_rate=self.learning_rate,
            max_depth=self.max_depth, minibatch_frac=self.minibatch_frac,
            col_sample=self.col_sample,
            natural_gradient=dist.natural_gradient_metric != "euclidean",
            random_state=self.random_state, tree_learner=self.tree_learner)
        self.standardizer_ = scaler
        if monitor is None:
            model.fit(x, scaler.target(y))
        else:
            x_val = as_inputs(monitor.inputs, x.shape[1])
            model.fit(x, scaler.target(y), X_val=x_val, Y_val=np.zeros(x_val.shape[0]),
                      val_loss_monitor=_stage_reporter(
                          monitor, int(self.n_estimators),
                          lambda dist: self._prediction(np.asarray(dist._params))))
        self.model_ = model
        self.y_mean_, self.y_scale_ = scaler.y_mean, scaler.y_scale
        self.n_features_ = x.shape[1]
        return self

    def _theta(self, x: np.ndarray) -> np.ndarray:
        """The internal parameters θ (4, m) at ``x`` (standardised target units)."""
        x = as_inputs(x, self.n_features_)
        return self.model_.pred_param(x).T

    def predict_params(self, x: np.ndarray) -> dict[str, np.ndarray]:
        """The NIG at ``x`` in target units: {"mu": s_y μ + ȳ, "lam": λ, "alpha": α,
        "beta": s_y² β} (σ² and m scale with s_y² and s_y; λ and α are unit-free)."""
        mu, lam, alpha, beta = nig.nig_from_internal(self._theta(x))
        return {"mu": self.standardizer_.mean_to_target(mu), "lam": lam, "alpha": alpha,
                "beta": self.standardizer_.var_to_target(beta)}

    def predict(self, x: np.ndarray) -> Prediction:
        return self._prediction(self._theta(x))

    def _prediction(self, theta: np.ndarray) -> Prediction:
        """The prediction (target units) of the internal parameters θ (4, m)."""
        mu, lam, _, _ = nig.nig_from_internal(theta)
        au_std, _ = nig.nig_variances_internal(theta)  # β/(α−1) = e^(θ₄−θ₃), exact as α → 1
        au = self.standardizer_.var_to_target(au_std)
        return Prediction(mean=self.standardizer_.mean_to_target(mu), aleatoric_var=au,
                          epistemic_var=au / lam)


def _stage_reporter(monitor: ValidationMonitor, n_stages: int, prediction) -> Any:
    """NGBoost's ``val_loss_monitor`` (called after every boosting stage with the validation
    distribution) reporting ``prediction(distribution)`` to ``monitor`` after each of its
    checkpoints; it returns 0 to NGBoost, which keeps no validation score of ours."""
    marks = set(monitor.checkpoints(n_stages))
    stage = 0

    def after_stage(dist, _targets) -> float:
        nonlocal stage
        stage += 1
        if stage in marks:
            monitor.report(stage, prediction(dist))
        return 0.0

    return after_stage


class RegularisedFisherNGBoostNIG(NGBoostNIG):
    """NGBoost-NIG with the regularised Fisher metric M = I_t(θ) + kl_strength·I_NIG(θ) + 0.01·I
    (:func:`postrisk.methods.nig.evidential_metric`) instead of the empirical metric
    g gᵀ + 1e-5·I: an ablation in the manner of the paper's App. D.2 (its row of
    :data:`postrisk.methods.table.ABLATION_TABLE`, change ``natural_gradient_metric``). Only the
    default of ``natural_gradient_metric`` differs; the score, the centred KL reference, the
    other defaults and the search space are NGBoost-NIG's."""

    defaults: ClassVar[dict[str, Any]] = {"natural_gradient_metric": "regularised_fisher"}
