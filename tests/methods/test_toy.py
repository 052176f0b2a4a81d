"""Every implemented method on the fixed 1-D toy, with its stated expectations
(docs/design.md, "Toy problem").

Each method is fitted with its DEFAULT hyper-parameters (random states 0, 1, 2) — a
``sklearn.base.clone`` of it, through ``run_estimator``, the workflow's own guarded fit — on the
toy of ``postrisk.evaluation.toy`` (never retuned to pass). Expectations:

* heteroscedastic AU (``vlgp``, ``sngp_het``, the tree and network methods with a variance
  output): Spearman(AU, σ²_ε) ≥ 0.7 on ``in``;
* ``gp``, ``vlgp``, ``sngp_het``, ``nn_ens``, ``nn_bag``, ``nn_lap_sn``, ``nn_fsp_sn``: EU-AUROC
  ≥ 0.8 for ``beyond`` vs ``in`` and ``gap`` vs ``in``;
* ``blr``: ``beyond`` vs ``in`` only;
* every other method (DKL, the trees, MC dropout, NN-EDL, NN-DEUP, NN-Lap, NN-FSP, NN-SWAG):
  its measured values, recorded here, with the reason where it fails (trees extrapolate flat;
  NIG: EU = AU/λ);
* a heteroscedastic-AU method that misses 0.7 for a documented reason (``RECORDED_AU``: only
  NGBoost-NIG with its default, the empirical metric): its measured Spearman, recorded as a
  range around it.

The App. D.2-style ablation of NGBoost-NIG's metric (``ngboost_nig_regularised_fisher``) runs
here too (``ABLATIONS``), at the full thresholds.
"""

import pytest
from scipy import stats
from sklearn.base import clone

from postrisk.core.lazy import Entry
from postrisk.evaluation.toy import toy_behaviour, toy_problem
from postrisk.methods.registry import implemented_methods, make_method
from postrisk.methods.runner import run_estimator
from postrisk.methods.table import ABLATION_ENTRIES

THRESHOLD_AU = 0.7
THRESHOLD_EU = 0.8
#: The ablations held to the toy's expectations too (by registry name; each needs its own
#: EXPECTED entry).
ABLATIONS = ("ngboost_nig_regularised_fisher",)

#: method -> (heteroscedastic AU expected, regions whose EU-AUROC vs ``in`` must reach 0.8)
EXPECTED = {
    "blr": (False, ("beyond",)),
    "gp": (False, ("beyond", "gap")),
    "vlgp": (True, ("beyond", "gap")),
    "sngp_het": (True, ("beyond", "gap")),
    # The toy's expectations state none for DKL's EU; measured at writing (random states 0/1/2):
    # EU-AUROC beyond 1.000/1.000/1.000, gap 0.996/1.000/1.000; RMSE on `in` 0.059/0.057/0.052.
    # Asserted as measured-and-recorded, below.
    "dkl": (False, ()),
    # The tree ensembles: no EU-AUROC threshold (trees extrapolate flat: beyond the data and in
    # the gap every input falls into the leaves of the nearest training inputs); measured values
    # recorded below. NGBoost-NIG's EU is its AU divided by a learned λ; its AU with the default
    # (empirical) metric is a documented exception (RECORDED_AU), the ablation's is held to 0.7.
    "ngboost_nig": (True, ()),
    "ngboost_nig_regularised_fisher": (True, ()),
    "ngboost_bag": (True, ()),
    "catboost_ps": (True, ()),
    "catboost_kgb": (False, ()),  # AU: one held-out MSE (constant)
    # Deep ensembles and bags: EU from the members' disagreement (measured, random states 0/1/2:
    # NN-Ens at its learning rate 5e-4 beyond 0.99/0.98/0.91, gap 0.99/0.98/0.93; NN-Bag beyond
    # 0.98/0.87/0.95, gap 0.97/0.95/1.00. NN-Ens at 2e-3 had gap 0.66 and 0.79 for random
    # states 1 and 2 on one machine, 0.92 on another: see its class docstring).
    "nn_ens": (True, ("beyond", "gap")),
    "nn_bag": (True, ("beyond", "gap")),
    "nn_drop": (True, ()),
    "nn_edl": (True, ()),
    "nn_deup": (False, ()),  # AU: one held-out MSE (constant)
    # Last-layer Laplace: the SN variant's expectation is the toy's (measured at writing: beyond
    # 0.96/0.97/0.96, gap 0.989/0.980/0.981); the plain one's is recorded below.
    "nn_lap": (True, ()),
    "nn_lap_sn": (True, ("beyond", "gap")),
    "nn_swag": (True, ()),
    # FSP-Laplace: the SN variant's expectation is the toy's (measured at writing: beyond
    # 0.99/0.99/1.00, gap 0.996/0.995/0.997); the plain one's is recorded below.
    "nn_fsp": (True, ()),
    "nn_fsp_sn": (True, ("beyond", "gap")),
}

#: Recorded, not required by the toy's expectations (the paper's explanation in the comment).
RECORDED = {
    # A linear model's EU xᵀS_N x is smallest at the training mean, which lies in the gap:
    # the gap gets the *lowest* EU (measured 0.014), so gap-vs-in fails by construction.
    ("blr", "gap"): (0.0, 0.1),
    # DKL's features are learned on the data; measured 0.946–1.000 above.
    ("dkl", "beyond"): (0.9, 1.0),
    ("dkl", "gap"): (0.8, 1.0),
    # Measured at writing (random states 0/1/2), recorded as ranges around them. NIG: EU = AU/λ
    # with AU largest right of the gap, where the noise is, so EU is lowest beyond the data. The
    # default, empirical metric: beyond 0.009, gap 0.297 (all three: the 1-D fit has nothing
    # random); the regularised Fisher ablation: beyond 0.023, gap 0.440.
    ("ngboost_nig", "beyond"): (0.0, 0.1),
    ("ngboost_nig", "gap"): (0.15, 0.45),
    ("ngboost_nig_regularised_fisher", "beyond"): (0.0, 0.1),
    ("ngboost_nig_regularised_fisher", "gap"): (0.3, 0.6),
    # Bags of flat extrapolators: members agree beyond the data and in the gap about as much as
    # inside it. Beyond 0.443/0.590/0.440, gap 0.531/0.568/0.567.
    ("ngboost_bag", "beyond"): (0.3, 0.7),
    ("ngboost_bag", "gap"): (0.4, 0.7),
    # SGLB samples differ most where the trees' splits are unconstrained, the gap's middle:
    # beyond 0.779/0.451/0.614, gap 0.981/0.964/0.980.
    ("catboost_ps", "beyond"): (0.3, 0.9),
    ("catboost_ps", "gap"): (0.9, 1.0),
    # KGB's sampled functions agree most away from the data (the gap and beyond share leaves
    # with the nearest training inputs, whose sample variance is small): beyond 0.185/0.350/
    # 0.150, gap 0.036/0.038/0.109.
    ("catboost_kgb", "beyond"): (0.0, 0.5),
    ("catboost_kgb", "gap"): (0.0, 0.25),
    # MC dropout's passes share one network's weights: they disagree beyond the data but barely
    # more in the gap than where the noise is large. Beyond 0.77/0.86/0.82, gap 0.72/0.81/0.81.
    ("nn_drop", "beyond"): (0.65, 0.95),
    ("nn_drop", "gap"): (0.6, 0.95),
    # NN-EDL: EU = AU/ν, and AU is largest where the noise is, so EU follows the noise more
    # than the distance to the data (Spearman(EU, AU) on the whole grid 0.94/0.89/0.92, on `in`
    # 0.98/0.95/0.97, printed by the test). Beyond 0.51/0.50/0.59, gap 0.50/0.67/0.68.
    ("nn_edl", "beyond"): (0.35, 0.75),
    ("nn_edl", "gap"): (0.35, 0.85),
    # NN-DEUP: the error network is fitted on the 80 held-out rows only and extrapolates their
    # squared errors smoothly; the gap lies between rows of small error. Beyond 0.68/0.69/0.71,
    # gap 0.36/0.37/0.42.
    ("nn_deup", "beyond"): (0.5, 0.85),
    ("nn_deup", "gap"): (0.2, 0.6),
    # NN-Lap without spectral normalisation: on a 1-D input the last layer's features still
    # spread out away from the data here (beyond 0.96/0.96/0.96, gap 0.996/0.996/0.996).
    ("nn_lap", "beyond"): (0.85, 1.0),
    ("nn_lap", "gap"): (0.85, 1.0),
    # SWAG's draws spread along the directions SGD wanders in at the end of training, which
    # the data pin down in `in` but not reliably elsewhere: beyond 0.75/0.87/0.64, gap
    # 0.33/0.22/0.83 (seed-dependent).
    ("nn_swag", "beyond"): (0.5, 0.95),
    ("nn_swag", "gap"): (0.1, 0.95),
    # NN-FSP without spectral normalisation: the function-space prior keeps the last layer's
    # posterior wide away from the data (beyond 0.99/0.99/0.99, gap 0.998/0.997/0.998).
    ("nn_fsp", "beyond"): (0.85, 1.0),
    ("nn_fsp", "gap"): (0.85, 1.0),
}

#: Heteroscedastic-AU methods whose Spearman(AU, σ²_ε) on ``in`` misses THRESHOLD_AU for a
#: documented reason: method -> (low, high) around the measured value. Every other method with
#: heteroscedastic AU is held to THRESHOLD_AU.
RECORDED_AU = {
    # NGBoost-NIG with its default, the NGBoost authors' empirical metric g gᵀ + 1e-5·I (as the
    # paper runs it: it reproduces the paper's ρ(ÊU, ÂU) = 1.00; docs/deviations.md M16): measured
    # 0.373 (random states 0/1/2 alike), against 0.712 with the regularised Fisher metric (the
    # ablation ngboost_nig_regularised_fisher, held to 0.7 above). With the per-row step
    # g/(gᵀg + 1e-5), λ stays within 1.4–1.9 on `in` (regularised Fisher: 2.4–6.2), so EU = AU/λ
    # ranks as AU (ρ(ÊU, ÂU) there 0.99, the paper's coupling); AU = E[σ²] stays far above the
    # noise (0.29–0.42 against σ²_ε 0.003–0.085) and rises with it left of the gap (Spearman
    # 0.63) but not right of it (−0.42).
    "ngboost_nig": (0.25, 0.5),
}

#: RMSE of the mean on ``in``: smooth methods fit the toy to < 0.1 (noise SD 0.05–0.3); tree
#: ensembles are piecewise constant in x, and the SGLB and KGB means average posterior samples
#: (measured: NIG 0.113, with the regularised Fisher metric 0.123; Bag 0.095/0.094/0.091; PS
#: 0.121/0.122/0.115; KGB 0.137/0.135/0.135); MC dropout's mean averages 128 thinned networks,
#: each trained to fit with a tenth of its units dropped (measured 0.103/0.082/0.094).
RMSE_IN = {"blr": 0.5, "ngboost_nig": 0.15, "ngboost_nig_regularised_fisher": 0.15,
           "ngboost_bag": 0.12, "catboost_ps": 0.15, "catboost_kgb": 0.16, "nn_drop": 0.13}


@pytest.fixture(scope="module")
def toy():
    return toy_problem(0)


def _method(name: str, random_state: int):
    """An unfitted instance of a built-in method or of an ablation (by its location)."""
    if name in ABLATION_ENTRIES:
        cls = Entry(ABLATION_ENTRIES[name].location).load()
        return cls(random_state=random_state, n_threads=2)
    return make_method(name, random_state=random_state, n_threads=2)


@pytest.mark.slow
@pytest.mark.parametrize("random_state", [0, 1, 2])
@pytest.mark.parametrize("method", [*implemented_methods(), *ABLATIONS])
def test_toy_behaviour(method, random_state, toy):
    fitted = clone(_method(method, random_state))
    record = run_estimator(fitted, toy.x_train, toy.y_train, toy.x_eval)
    assert record.ok, record.error
    state = set(vars(fitted)) - set(fitted.get_params())  # fitted state ends in "_"
    assert state and all(k.endswith("_") for k in state), sorted(state)
    got = toy_behaviour(toy, record.mean, record.aleatoric_var, record.epistemic_var)
    if method not in EXPECTED:
        pytest.fail(f"{method}: state its toy expectations in EXPECTED (heteroscedastic AU?, "
                    "regions whose EU-AUROC must reach 0.8) before it is registered")
    heteroscedastic, regions = EXPECTED[method]
    if heteroscedastic and method in RECORDED_AU:  # a documented exception, as measured
        low, high = RECORDED_AU[method]
        assert low <= got["au_spearman_in"] <= high, got
    elif heteroscedastic:
        assert got["au_spearman_in"] >= THRESHOLD_AU, got
    else:
        assert got["au_spearman_in"] is None, got  # constant AU: not applicable
    for region in regions:
        assert got[f"eu_auroc_{region}"] >= THRESHOLD_EU, (region, got)
    for (name, region), (low, high) in RECORDED.items():
        if name == method:
            assert low <= got[f"eu_auroc_{region}"] <= high, (region, got)
    # every method's mean fits the toy where it has data (noise SD 0.05–0.3)
    assert got["rmse_in"] < RMSE_IN.get(method, 0.1), got
    if method == "nn_edl":  # reported, not asserted: how tightly EU = AU/ν follows AU
        rho = stats.spearmanr(record.epistemic_var, record.aleatoric_var).statistic
        print(f"nn_edl random_state {random_state}: Spearman(EU, AU) on the grid {rho:.3f}")
