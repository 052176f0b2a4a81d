import math

import numpy as np
import pytest
from scipy.stats import spearmanr

from postrisk.evaluation.disentanglement import (
    DEFINITIONS,
    disentanglement_correlations,
    disentanglement_error,
    score_correlations,
    score_disentanglement,
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


# -- the "score" definition (the public package's): per run, corr(u, −score), DE averaged ------
def score_case():
    """2 runs × 4 label-noise levels and 2 runs × 3 data-size levels, chosen by hand."""
    return dict(
        label_score=np.array([[0.9, 0.7, 0.6, 0.2], [0.8, 0.8, 0.5, 0.1]]),
        label_au=np.array([[0.1, 0.2, 0.4, 0.5], [0.3, 0.2, 0.6, 0.9]]),
        label_eu=np.array([[0.3, 0.1, 0.2, 0.4], [0.2, 0.5, 0.1, 0.3]]),
        size_score=np.array([[0.9, 0.6, 0.3], [0.7, 0.7, 0.2]]),
        size_au=np.array([[0.2, 0.1, 0.3], [0.5, 0.4, 0.4]]),
        size_eu=np.array([[0.1, 0.4, 0.8], [0.3, 0.2, 0.9]]))


def _r(u, score):
    """Pearson's r of an estimate with the negated score, by np.corrcoef."""
    return float(np.corrcoef(np.asarray(u), -np.asarray(score))[0, 1])


def _hand_de(c_aa, c_ea, c_ae, c_ee):
    return (abs(1 - c_aa) + abs(c_ea) + abs(c_ae) + abs(1 - c_ee)) / 4


def test_definitions():
    assert DEFINITIONS == ("level", "score")


def test_score_definition_hand_computed():
    kw = score_case()
    per_run = []
    for r in range(2):
        c = (_r(kw["label_au"][r], kw["label_score"][r]),
             _r(kw["label_eu"][r], kw["label_score"][r]),
             _r(kw["size_au"][r], kw["size_score"][r]),
             _r(kw["size_eu"][r], kw["size_score"][r]))
        per_run.append((*c, _hand_de(*c)))
    hand = np.mean(per_run, axis=0)
    out = score_disentanglement(**kw)
    assert out["n_runs"] == 2
    for i, key in enumerate(("c_aa", "c_ea", "c_ae", "c_ee", "de")):
        assert out[key] == pytest.approx(hand[i], abs=1e-12), key
        for r in range(2):
            assert out["per_run"][r][key] == pytest.approx(per_run[r][i], abs=1e-12), (key, r)
    # the sign: u_a rises as the score falls in run 0, so its correlation is positive
    assert per_run[0][0] > 0.9
    # the DE is averaged over runs, not recomputed from the mean correlations (C_ea changes
    # sign between the runs, so the two differ)
    assert per_run[0][1] * per_run[1][1] < 0
    assert out["de"] != pytest.approx(_hand_de(*hand[:4]), abs=1e-3)
    # one run, as vectors, is that run's value
    one = score_disentanglement(*(v[1] for v in kw.values()))
    assert one["de"] == pytest.approx(per_run[1][4], abs=1e-12) and one["n_runs"] == 1
    assert score_correlations(*(v[0] for v in kw.values()))["c_ee"] == pytest.approx(
        per_run[0][3], abs=1e-12)
    # and it is not the level definition on the same means
    level = disentanglement_error(disentanglement_correlations(
        [0.0, 0.1, 0.2, 0.3], kw["label_au"], kw["label_eu"], [1.0, 0.5, 0.1],
        kw["size_au"], kw["size_eu"]))
    assert level != pytest.approx(out["de"], abs=1e-3)


def test_score_definition_spearman_and_weights():
    kw = score_case()
    out = score_disentanglement(**kw, method="spearman")
    for r in range(2):
        rho = float(spearmanr(kw["label_eu"][r], -kw["label_score"][r])[0])
        assert out["per_run"][r]["c_ea"] == pytest.approx(rho, abs=1e-12)
    weighted = score_disentanglement(**kw, alpha=2.0, beta=0.0, gamma=1.0)
    hand = np.mean([(abs(1 - c["c_aa"]) + 2 * abs(c["c_ea"]) + abs(1 - c["c_ee"])) / 4
                    for c in score_disentanglement(**kw)["per_run"]])
    assert weighted["de"] == pytest.approx(hand, abs=1e-12)


def test_score_definition_constant_estimate_and_constant_score():
    kw = score_case()
    # an estimate constant across levels: no association, correlation 0 (as for "level")
    flat = dict(kw, label_eu=np.array([[0.3, 0.3, 0.3, 0.3], kw["label_eu"][1]]))
    out = score_disentanglement(**flat)
    assert out["per_run"][0]["c_ea"] == 0.0 and out["n_runs"] == 2
    assert out["c_ea"] == pytest.approx(_r(kw["label_eu"][1], kw["label_score"][1]) / 2,
                                        abs=1e-12)
    # a score constant across a run's data-size levels: that run's C_ae, C_ee are None (the
    # package gives NaN), it has no DE and the means are over the other run
    const = dict(kw, size_score=np.array([kw["size_score"][0], [0.5, 0.5, 0.5]]))
    out = score_disentanglement(**const)
    assert out["per_run"][1]["c_ae"] is None and out["per_run"][1]["c_ee"] is None
    assert out["per_run"][1]["de"] is None and out["per_run"][1]["c_aa"] is not None
    alone = score_disentanglement(*(v[0] for v in kw.values()))
    assert out["n_runs"] == 1
    for key in ("c_aa", "c_ea", "c_ae", "c_ee", "de"):
        assert out[key] == pytest.approx(alone[key], abs=1e-15)
    # constant up to rounding counts as constant
    nearly = dict(kw, size_score=np.array([kw["size_score"][0], [0.5, 0.5 + 1e-16, 0.5]]))
    assert score_disentanglement(**nearly)["n_runs"] == 1
    # every run's score constant: nothing to average
    none = score_disentanglement(**dict(kw, label_score=np.full((2, 4), 0.7)))
    assert none["n_runs"] == 0
    assert all(none[k] is None for k in ("c_aa", "c_ea", "c_ae", "c_ee", "de"))


def test_score_definition_missing_levels():
    kw = score_case()
    # a failed fit (NaN) drops that level from that run only
    gap = {k: v.copy() for k, v in kw.items()}
    gap["label_au"][1, 2] = np.nan
    out = score_disentanglement(**gap)
    keep = [0, 1, 3]
    assert out["per_run"][1]["c_aa"] == pytest.approx(
        _r(kw["label_au"][1][keep], kw["label_score"][1][keep]), abs=1e-12)
    assert out["per_run"][1]["c_ea"] == pytest.approx(
        _r(kw["label_eu"][1][keep], kw["label_score"][1][keep]), abs=1e-12)
    assert out["per_run"][0] == score_disentanglement(**kw)["per_run"][0]
    # fewer than three levels left in a run: not applicable there
    gap["size_score"][0, 0] = np.nan
    out = score_disentanglement(**gap)
    assert out["per_run"][0]["c_ee"] is None and out["n_runs"] == 1


def test_score_definition_validation():
    kw = score_case()
    with pytest.raises(ValueError, match="infinite"):
        score_disentanglement(**dict(kw, size_eu=np.where(kw["size_eu"] > 0.8, np.inf, 0.1)))
    with pytest.raises(ValueError, match="label arrays differ in shape"):
        score_disentanglement(**dict(kw, label_au=kw["label_au"][:, :3]))
    with pytest.raises(ValueError, match="runs"):
        score_disentanglement(**dict(kw, size_score=kw["size_score"][:1],
                                     size_au=kw["size_au"][:1], size_eu=kw["size_eu"][:1]))
    with pytest.raises(ValueError, match="method"):
        score_disentanglement(**kw, method="kendall")
    with pytest.raises(ValueError, match="alpha"):
        score_disentanglement(**kw, alpha=-1.0)
    with pytest.raises(ValueError, match="differ in length"):
        score_correlations([0.1, 0.2, 0.3], [0.1, 0.2], [0.1, 0.2, 0.3], *([0.1, 0.2, 0.3],) * 3)
