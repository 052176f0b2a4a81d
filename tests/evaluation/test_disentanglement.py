import math

import numpy as np
import pytest

from postrisk.evaluation.disentanglement import (
    disentanglement_correlations,
    disentanglement_error,
)

LABEL = np.array([0.0, 0.1, 0.2, 0.4])          # U_a = p
SIZE = np.array([1.0, 0.5, 0.25, 0.1])          # U_e = −log f
U_E = -np.log(SIZE)


def ideal():
    """u_a tracks U_a and is constant over data size; u_e tracks U_e, constant over label
    noise."""
    return dict(label_levels=LABEL, label_au=2.0 * LABEL + 0.1, label_eu=np.full(4, 0.3),
                size_levels=SIZE, size_au=np.full(4, 0.5), size_eu=3.0 * U_E + 1.0)


@pytest.mark.parametrize("method", ["pearson", "spearman"])
def test_perfectly_disentangled_model_scores_zero(method):
    c = disentanglement_correlations(**ideal(), method=method)
    assert c["c_ea"] == 0.0 and c["c_ae"] == 0.0      # constant estimates: no association
    assert c["c_aa"] == pytest.approx(1.0, abs=1e-12)
    assert c["c_ee"] == pytest.approx(1.0, abs=1e-12)
    assert disentanglement_error(c) <= 1e-12


def test_runs_are_averaged_before_correlating():
    # two runs whose average is the ideal model; the per-run curves are not
    rng = np.random.default_rng(0)
    kw = ideal()
    runs = {}
    for k in ("label_au", "label_eu", "size_au", "size_eu"):
        noise = rng.normal(size=4)
        runs[k] = np.stack((kw[k] + noise, kw[k] - noise))
    c = disentanglement_correlations(LABEL, runs["label_au"], runs["label_eu"],
                                     SIZE, runs["size_au"], runs["size_eu"])
    assert disentanglement_error(c) <= 1e-12
    per_run = disentanglement_correlations(LABEL, runs["label_au"][0], runs["label_eu"][0],
                                           SIZE, runs["size_au"][0], runs["size_eu"][0])
    assert disentanglement_error(per_run) > 0.1


def test_swapped_uncertainties_score_at_least_one_half():
    # u_a follows U_e (and ignores label noise), u_e follows U_a (and ignores data size):
    # C_aa = 0, C_ea = 1, C_ae = 1, C_ee = 0 -> DE = 4/4 = 1
    c = disentanglement_correlations(LABEL, np.full(4, 0.5), 2.0 * LABEL,
                                     SIZE, U_E, np.full(4, 0.3))
    assert (c["c_aa"], c["c_ee"]) == (0.0, 0.0)
    assert c["c_ea"] == pytest.approx(1.0, abs=1e-12)
    assert c["c_ae"] == pytest.approx(1.0, abs=1e-12)
    de = disentanglement_error(c)
    assert de >= 0.5
    assert de == pytest.approx(1.0, abs=1e-12)


def hand_case():
    # three equally spaced levels in each experiment: U_a = (0, .1, .2), U_e = (0, 1, 2)
    return dict(label_levels=[0.0, 0.1, 0.2], label_au=[0.0, 1.0, 3.0], label_eu=[2.0, 0.0, 1.0],
                size_levels=[1.0, math.exp(-1.0), math.exp(-2.0)], size_au=[0.0, 0.0, 1.0],
                size_eu=[0.0, 2.0, 1.0])


def test_hand_computed_pearson_case():
    # with centred levels (−1, 0, 1), r = (y₃ − y₁) / √(2 Σ (y − ȳ)²):
    # C_aa: y = (0, 1, 3), ȳ = 4/3, Σ = 42/9       -> 3 / √(84/9) = 9/√84
    # C_ea: y = (2, 0, 1), Σ = 2                   -> −1/2
    # C_ae: y = (0, 0, 1), Σ = 2/3                 -> 1/√(4/3) = √3/2
    # C_ee: y = (0, 2, 1), Σ = 2                   -> 1/2
    c = disentanglement_correlations(**hand_case())
    c_aa, c_ea, c_ae, c_ee = 9 / math.sqrt(84), -0.5, math.sqrt(3) / 2, 0.5
    assert c["c_aa"] == pytest.approx(c_aa, abs=1e-12)
    assert c["c_ea"] == pytest.approx(c_ea, abs=1e-12)
    assert c["c_ae"] == pytest.approx(c_ae, abs=1e-12)
    assert c["c_ee"] == pytest.approx(c_ee, abs=1e-12)
    # DE = (|1 − 9/√84| + ½ + √3/2 + ½) / 4 ≈ 0.4710
    expected = ((1 - c_aa) + 0.5 + math.sqrt(3) / 2 + 0.5) / 4
    assert disentanglement_error(c) == pytest.approx(expected, abs=1e-12)
    # weights α = 2, β = 0.5, γ = 3: (|1 − C_aa| + 2·½ + 0.5·√3/2 + 3·½) / 6.5
    weighted = ((1 - c_aa) + 1.0 + 0.25 * math.sqrt(3) + 1.5) / 6.5
    assert disentanglement_error(c, alpha=2.0, beta=0.5, gamma=3.0) == pytest.approx(weighted,
                                                                                     abs=1e-12)


def test_hand_computed_spearman_case():
    # ranks: (1, 2, 3) -> 1; (3, 1, 2) -> −½; (1.5, 1.5, 3) -> √3/2; (1, 3, 2) -> ½
    c = disentanglement_correlations(**hand_case(), method="spearman")
    assert c["c_aa"] == pytest.approx(1.0, abs=1e-12)
    assert c["c_ea"] == pytest.approx(-0.5, abs=1e-12)
    assert c["c_ae"] == pytest.approx(math.sqrt(3) / 2, abs=1e-12)
    assert c["c_ee"] == pytest.approx(0.5, abs=1e-12)
    assert disentanglement_error(c) == pytest.approx((1 + math.sqrt(3) / 2) / 4, abs=1e-12)


@pytest.mark.parametrize("key, arg", [("c_aa", "label_au"), ("c_ea", "label_eu"),
                                      ("c_ae", "size_au"), ("c_ee", "size_eu")])
def test_each_correlation_alone_changes_the_error(key, arg):
    rng = np.random.default_rng(1)
    base = dict(label_levels=LABEL, label_au=LABEL + 0.1 * rng.normal(size=4),
                label_eu=0.2 * rng.normal(size=4), size_levels=SIZE,
                size_au=0.2 * rng.normal(size=4), size_eu=U_E + 0.5 * rng.normal(size=4))
    c0 = disentanglement_correlations(**base)
    changed = dict(base)
    changed[arg] = np.asarray(base[arg]) + rng.normal(size=4)
    c1 = disentanglement_correlations(**changed)
    for k in c0:
        if k == key:
            assert c1[k] != pytest.approx(c0[k], abs=1e-3)
        else:
            assert c1[k] == c0[k]
    assert disentanglement_error(c1) != pytest.approx(disentanglement_error(c0), abs=1e-4)


def test_explicit_manipulated_uncertainties():
    kw = ideal()
    default = disentanglement_correlations(**kw)
    same = disentanglement_correlations(**kw, label_uncertainty=LABEL, size_uncertainty=U_E)
    assert same == default
    # a ground-truth EU per level that is not linear in −log f lowers C_ee below 1
    other = disentanglement_correlations(**kw, size_uncertainty=[0.0, 0.1, 0.2, 5.0])
    assert other["c_ee"] < 0.99
    assert other["c_aa"] == default["c_aa"]


def test_not_applicable_cases():
    kw = ideal()
    # a single manipulated value: no correlation
    c = disentanglement_correlations(**kw, label_uncertainty=np.full(4, 0.2))
    assert c["c_aa"] is None and c["c_ea"] is None and c["c_ee"] is not None
    assert disentanglement_error(c) is None
    # fewer than three levels
    two = disentanglement_correlations([0.0, 0.2], [0.1, 0.3], [0.0, 0.1],
                                       SIZE, kw["size_au"], kw["size_eu"])
    assert two["c_aa"] is None and two["c_ea"] is None
    assert disentanglement_error(two) is None


def test_validation():
    kw = ideal()
    with pytest.raises(ValueError, match="size_levels"):
        disentanglement_correlations(**{**kw, "size_levels": [1.0, 0.5, 0.0, 0.1]})
    with pytest.raises(ValueError, match="size_levels"):
        disentanglement_correlations(**{**kw, "size_levels": [1.2, 0.5, 0.2, 0.1]})
    with pytest.raises(ValueError, match="label_levels"):
        disentanglement_correlations(**{**kw, "label_levels": [-0.1, 0.1, 0.2, 0.4]})
    with pytest.raises(ValueError, match="label_au contains non-finite"):
        disentanglement_correlations(**{**kw, "label_au": [0.1, np.nan, 0.2, 0.3]})
    with pytest.raises(ValueError, match="size_eu has 3 levels, expected 4"):
        disentanglement_correlations(**{**kw, "size_eu": [0.1, 0.2, 0.3]})
    with pytest.raises(ValueError, match="shape"):
        disentanglement_correlations(**{**kw, "size_eu": np.ones((2, 2, 4))})
    with pytest.raises(ValueError, match="size_uncertainty has 3 levels"):
        disentanglement_correlations(**kw, size_uncertainty=[0.0, 1.0, 2.0])
    with pytest.raises(ValueError, match="method"):
        disentanglement_correlations(**kw, method="kendall")
    c = disentanglement_correlations(**kw)
    with pytest.raises(ValueError, match="alpha"):
        disentanglement_error(c, alpha=-1.0)
    with pytest.raises(ValueError, match="lacks"):
        disentanglement_error({"c_aa": 1.0})
