"""Every implemented method on the fixed 1-D toy, with its stated expectations
(docs/design.md, "Toy problem").

Each method is fitted with its DEFAULT hyper-parameters (random states 0, 1, 2) through
``run_fit`` — the workflow's own path — on the toy of ``postrisk.evaluation.toy`` (never retuned to
pass). Expectations:

* heteroscedastic AU (``vlgp``, ``sngp_het``): Spearman(AU, σ²_ε) ≥ 0.7 on ``in``;
* ``gp``, ``vlgp``, ``sngp_het``: EU-AUROC ≥ 0.8 for ``beyond`` vs ``in`` and ``gap`` vs ``in``;
* ``blr``: ``beyond`` vs ``in`` only;
* every other method (DKL, the tree ensembles): its measured values, recorded here, with the
  reason where it fails (trees extrapolate flat; NIG: EU = AU/λ).
"""

import pytest

from postrisk.evaluation.toy import toy_behaviour, toy_problem
from postrisk.methods.registry import implemented_methods
from postrisk.methods.runner import run_fit

THRESHOLD_AU = 0.7
THRESHOLD_EU = 0.8

#: method -> (heteroscedastic AU expected, regions whose EU-AUROC vs ``in`` must reach 0.8)
EXPECTED = {
    "blr": (False, ("beyond",)),
    "gp": (False, ("beyond", "gap")),
    "vlgp": (True, ("beyond", "gap")),
    "sngp_het": (True, ("beyond", "gap")),
    # The toy's expectations state none for DKL's EU; measured at writing (random states 0/1/2):
    # EU-AUROC beyond 0.999/1.000/0.999, gap 0.946/0.985/1.000; RMSE on `in` 0.043/0.030/0.031.
    # Asserted as measured-and-recorded, below.
    "dkl": (False, ()),
    # The tree ensembles: no EU-AUROC threshold (trees extrapolate flat: beyond the data and in
    # the gap every input falls into the leaves of the nearest training inputs); measured values
    # recorded below. NGBoost-NIG's EU is its AU divided by a learned λ.
    "ngboost_nig": (True, ()),
    "ngboost_bag": (True, ()),
    "catboost_ps": (True, ()),
    "catboost_kgb": (False, ()),  # AU: one held-out MSE (constant)
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
    # with AU largest where the noise is (x near 1), so EU is lowest beyond the data:
    # beyond 0.023 (all three: the 1-D fit has nothing random), gap 0.440.
    ("ngboost_nig", "beyond"): (0.0, 0.1),
    ("ngboost_nig", "gap"): (0.3, 0.6),
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
}

#: RMSE of the mean on ``in``: smooth methods fit the toy to < 0.1 (noise SD 0.05–0.3); tree
#: ensembles are piecewise constant in x, and the SGLB and KGB means average posterior samples
#: (measured: NIG 0.123; Bag 0.095/0.094/0.091; PS 0.121/0.122/0.115; KGB 0.137/0.135/0.135).
RMSE_IN = {"blr": 0.5, "ngboost_nig": 0.15, "ngboost_bag": 0.12, "catboost_ps": 0.15,
           "catboost_kgb": 0.16}


@pytest.fixture(scope="module")
def toy():
    return toy_problem(0)


@pytest.mark.slow
@pytest.mark.parametrize("random_state", [0, 1, 2])
@pytest.mark.parametrize("method", implemented_methods())
def test_toy_behaviour(method, random_state, toy):
    record = run_fit(method, {}, toy.x_train, toy.y_train, toy.x_eval,
                     random_state=random_state, n_threads=2)
    assert record.ok, record.error
    got = toy_behaviour(toy, record.mean, record.aleatoric_var, record.epistemic_var)
    if method not in EXPECTED:
        pytest.fail(f"{method}: state its toy expectations in EXPECTED (heteroscedastic AU?, "
                    "regions whose EU-AUROC must reach 0.8) before it is registered")
    heteroscedastic, regions = EXPECTED[method]
    if heteroscedastic:
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
