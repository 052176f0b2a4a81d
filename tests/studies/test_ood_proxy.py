import numpy as np
import pytest
from scipy.stats import ks_2samp, rankdata

from postrisk.evaluation.agreement import kendalls_w
from postrisk.evaluation.metrics import spearman
from postrisk.evaluation.posterior_checks import bootstrap_pooled_share
from postrisk.evaluation.reference_rows import knn_prediction, mahalanobis_prediction
from postrisk.studies.ood_proxy.statistics import (
    bin_class_counts,
    classifier_separability,
    distance_bins,
    distance_matched_indices,
    ground_truth_partial_spearman,
    ground_truth_shift,
    instance_mean_interval,
    instance_ood_record,
    mahalanobis_distance,
    match_instance,
    median_eu_ratio,
    method_ood_record,
    ood_auroc,
    ood_benchmark_agreement,
    partial_spearman,
    reference_ood_record,
    reference_scores,
)


def location_shift(seed: int, n: int = 2000, d: int = 5, shift: float = 1.75):
    """ID ~ N(0, I_d) (training and query), OOD ~ N(shift·1, I_d): a pure location shift."""
    rng = np.random.default_rng(seed)
    x_train = rng.normal(size=(1000, d))
    x_query = np.concatenate([rng.normal(size=(n, d)), rng.normal(size=(n, d)) + shift])
    is_ood = np.repeat([False, True], n)
    return x_train, x_query, is_ood


@pytest.fixture(scope="module")
def shifted():
    x_train, x_query, is_ood = location_shift(0)
    return x_train, x_query, is_ood, match_instance(x_train, x_query, is_ood, seed=7)


# -- distance matching ---------------------------------------------------------------------------
def test_matching_removes_a_pure_location_shift(shifted):
    _, _, is_ood, matching = shifted
    d, idx = matching["distance"], matching["indices"]
    assert ood_auroc(d, is_ood) > 0.95
    assert idx.size == 2 * matching["n_matched_per_class"] > 200
    assert np.array_equal(idx, np.unique(idx))
    d_m, o_m = d[idx], is_ood[idx]
    assert o_m.sum() == (~o_m).sum()
    assert ks_2samp(d_m[o_m], d_m[~o_m]).pvalue > 0.01
    assert ood_auroc(d, is_ood, idx) == pytest.approx(0.5, abs=0.05)
    # per bin (bins of the full pooled sample): equal counts, the smaller class's count
    after = bin_class_counts(d, is_ood, indices=idx)
    before = bin_class_counts(d, is_ood)
    assert np.array_equal(after["n_id"], after["n_ood"])
    assert np.array_equal(after["n_ood"], np.minimum(before["n_id"], before["n_ood"]))
    assert np.array_equal(matching["counts"]["n_matched"], after["n_ood"])
    assert before["n_id"].sum() + before["n_ood"].sum() == d.size


def test_bins_are_pooled_quantiles_and_repeated_edges_leave_bins_empty():
    bins, edges = distance_bins([1.0, 2.0, 3.0, 4.0], n_bins=2)
    assert np.allclose(edges, [1.0, 2.5, 4.0]) and bins.tolist() == [0, 0, 1, 1]
    # an inner edge value goes to the bin above it
    bins, edges = distance_bins([1.0, 2.0, 3.0], n_bins=2)
    assert np.allclose(edges, [1.0, 2.0, 3.0]) and bins.tolist() == [0, 1, 1]
    # quantiles 0, 0, 1/3, 2: bin 0 (between the repeated edges) is empty
    bins, edges = distance_bins([0.0, 0.0, 0.0, 0.0, 1.0, 2.0], n_bins=3)
    assert np.allclose(edges, [0.0, 0.0, 1 / 3, 2.0]) and bins.tolist() == [1, 1, 1, 1, 2, 2]
    counts = bin_class_counts([0.0, 0.0, 0.0, 0.0, 1.0, 2.0], [0, 1, 1, 1, 0, 1], n_bins=3)
    assert counts["n_id"].tolist() == [0, 1, 1] and counts["n_ood"].tolist() == [0, 3, 1]


def test_matching_draws_the_smaller_class_count_per_bin():
    # bins (n_bins = 2, edges 0, 4.5, 9): {0..4} and {5..9}
    d = np.arange(10.0)
    ood = np.array([0, 0, 0, 1, 1, 0, 1, 1, 1, 1], dtype=bool)
    for seed in range(20):
        idx = distance_matched_indices(d, ood, np.random.default_rng(seed), n_bins=2)
        low, high = idx[idx < 5], idx[idx >= 5]
        assert {3, 4} <= set(low) and ood[low].sum() == 2 and (~ood[low]).sum() == 2
        assert 5 in high and high.size == 2
    # one class absent: nothing to match
    assert distance_matched_indices(d, np.zeros(10, bool), np.random.default_rng(0)).size == 0


def test_matching_is_deterministic_given_the_seed(shifted):
    x_train, x_query, is_ood, matching = shifted
    d = matching["distance"]
    a = distance_matched_indices(d, is_ood, np.random.default_rng(3))
    b = distance_matched_indices(d, is_ood, np.random.default_rng(3))
    c = distance_matched_indices(d, is_ood, np.random.default_rng(4))
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    again = match_instance(x_train, x_query, is_ood, seed=7)
    assert again["seed"] == 7 and np.array_equal(again["indices"], matching["indices"])
    assert np.array_equal(
        matching["indices"], distance_matched_indices(d, is_ood, np.random.default_rng(7)))


def test_monotone_function_of_distance_has_the_mahalanobis_auroc(shifted):
    _, _, is_ood, matching = shifted
    d, idx = matching["distance"], matching["indices"]
    score = 3.0 * np.log1p(d) + 1.0
    assert ood_auroc(score, is_ood) == ood_auroc(d, is_ood)
    assert ood_auroc(score, is_ood, idx) == ood_auroc(d, is_ood, idx)
    record = method_ood_record(score, None, is_ood, idx)
    assert record["auroc_eu"] == ood_auroc(d, is_ood)
    assert record["auroc_eu_matched"] == ood_auroc(d, is_ood, idx)
    assert record["auroc_total"] is None and record["auroc_total_matched"] is None


def test_reference_scores_are_the_reference_rows(shifted):
    x_train, x_query, _, matching = shifted
    scores = reference_scores(x_train, x_query)
    y = np.random.default_rng(0).normal(size=x_train.shape[0])
    assert np.array_equal(scores["mahalanobis"],
                          mahalanobis_prediction(x_train, y, x_query).epistemic_var)
    assert np.array_equal(scores["knn10"], knn_prediction(x_train, y, x_query).epistemic_var)
    assert np.array_equal(matching["distance"], scores["mahalanobis"])
    assert np.array_equal(mahalanobis_distance(x_train, x_query), scores["mahalanobis"])


def test_ood_auroc_is_auroc_with_ood_positive():
    assert ood_auroc([1.0, 2.0, 3.0, 4.0], [0, 0, 1, 1]) == 1.0
    assert ood_auroc([4.0, 3.0, 2.0, 1.0], [0, 0, 1, 1]) == 0.0
    assert ood_auroc([1.0, 1.0, 3.0], [0, 1, 1]) == pytest.approx(0.75)  # a tie counts ½
    assert ood_auroc([1.0, 2.0, 3.0], [0, 1, 1], indices=[1, 2]) is None
    assert ood_auroc([1.0, 2.0, 3.0], [1, 0, 1], indices=[0, 1]) == 0.0


# -- the classifier bound ------------------------------------------------------------------------
def test_classifier_bound_separates_a_shift_and_not_one_distribution():
    pytest.importorskip("sklearn")
    rng = np.random.default_rng(1)
    a, b, c = (rng.normal(size=(1000, 5)) for _ in range(3))
    assert classifier_separability(a, b + 1.5, np.random.default_rng(0)) > 0.9
    same = classifier_separability(a, c, np.random.default_rng(0))
    assert same == pytest.approx(0.5, abs=0.06)
    assert classifier_separability(a, c, np.random.default_rng(0)) == same  # rng decides all
    assert classifier_separability(a, c[:4], np.random.default_rng(0)) is None  # < n_folds


def test_instance_record_shares_one_matched_subsample():
    pytest.importorskip("sklearn")
    x_train, x_query, is_ood = location_shift(2, n=300)
    rng = np.random.default_rng(5)
    noise = np.random.default_rng(9).uniform(size=is_ood.size)
    d = mahalanobis_distance(x_train, x_query)
    record = instance_ood_record({"distance": (d, None), "noisy": (d + noise, noise)}, is_ood,
                                 x_train, x_query, rng)
    matching, reference = record["matching"], record["reference"]
    seed = int(np.random.default_rng(5).integers(2**31 - 1))
    assert matching["seed"] == seed
    assert np.array_equal(matching["indices"],
                          match_instance(x_train, x_query, is_ood, seed)["indices"])
    dist = record["methods"]["distance"]
    assert dist["auroc_eu"] == reference["auroc_mahalanobis"]
    assert dist["auroc_eu_matched"] == reference["auroc_mahalanobis_matched"]
    noisy = record["methods"]["noisy"]
    assert noisy["auroc_total_matched"] == ood_auroc(d + 2 * noise, is_ood, matching["indices"])
    assert reference["auroc_classifier"] > 0.9
    assert reference["auroc_mahalanobis_matched"] == pytest.approx(0.5, abs=0.1)
    again = reference_ood_record(x_train, x_query, is_ood, matching["indices"],
                                 np.random.default_rng(5))
    assert set(again) == set(reference)


# -- agreement with the benchmark ----------------------------------------------------------------
def test_w_of_two_rankings_is_one_plus_spearman_over_two():
    rng = np.random.default_rng(0)
    scores = rng.uniform(0.4, 0.9, size=(12, 7))
    bench = rng.normal(size=7)
    out = ood_benchmark_agreement(scores, {"t": bench}, np.random.default_rng(1), n_boot=50)
    rho = spearman(scores.mean(axis=0), bench)
    assert out["pairs"]["t"]["w"] == pytest.approx((1 + rho) / 2, abs=1e-12)
    assert out["methods"] == list(range(7))
    # the four-way W: OOD ranking plus three benchmark rankings
    three = {f"t{k}": rng.normal(size=7) for k in range(3)}
    out = ood_benchmark_agreement(scores, three, np.random.default_rng(1), n_boot=50)
    stacked = np.vstack([scores.mean(axis=0), *three.values()])
    assert out["all"]["w"] == pytest.approx(kendalls_w(stacked, higher_is_better=True))


def test_identical_instances_give_a_degenerate_interval_for_any_benchmark():
    row = np.array([0.9, 0.6, 0.7, 0.5])
    scores = np.tile(row, (8, 1))
    bench_a = {"t": np.array([4.0, 2.0, 3.0, 1.0])}   # the OOD order: W = 1
    bench_b = {"t": np.array([1.0, 3.0, 2.0, 4.0])}   # reversed: W = 0
    for bench, expected in ((bench_a, 1.0), (bench_b, 0.0)):
        out = ood_benchmark_agreement(scores, bench, np.random.default_rng(0), n_boot=200)
        entry = out["pairs"]["t"]
        assert entry["w"] == pytest.approx(expected, abs=1e-12)
        assert entry["ci_low"] == entry["w"] == entry["ci_high"]
        assert entry["n_boot"] == 200


def test_bootstrap_resamples_instances_and_holds_the_benchmark_fixed():
    rng = np.random.default_rng(3)
    scores = rng.uniform(0.4, 0.9, size=(6, 5))
    bench = {"a": rng.normal(size=5), "b": rng.normal(size=5)}
    out = ood_benchmark_agreement(scores, bench, np.random.default_rng(11), n_boot=300)
    draws = np.random.default_rng(11).integers(6, size=(300, 6))
    boot = {"a": [], "b": [], "all": []}
    for rows in draws:
        mean = scores[rows].mean(axis=0)
        for name, v in bench.items():
            boot[name].append(kendalls_w([mean, v], higher_is_better=True))
        boot["all"].append(kendalls_w([mean, bench["a"], bench["b"]], higher_is_better=True))
    for key, entry in [("a", out["pairs"]["a"]), ("b", out["pairs"]["b"]), ("all", out["all"])]:
        lo, hi = np.quantile(boot[key], [0.025, 0.975])
        assert entry["ci_low"] == pytest.approx(lo) and entry["ci_high"] == pytest.approx(hi)
    # a benchmark resampled along with the instances would move these; changing it does
    assert out["pairs"]["a"]["w"] != out["pairs"]["b"]["w"]


def test_missing_ood_scores_average_over_applicable_instances():
    scores = np.array([[0.9, 0.6, None, np.nan],
                       [0.7, np.nan, 0.5, np.nan],
                       [0.8, 0.5, 0.6, np.nan]], dtype=object)
    bench = {"t": np.array([3.0, 2.0, 1.0, 0.0]), "u": np.array([1.0, 2.0, np.nan, 4.0])}
    out = ood_benchmark_agreement(scores, bench, np.random.default_rng(0), n_boot=100)
    assert out["n_applicable"] == [3, 2, 2, 0]
    assert out["methods"] == [0, 1]  # 2: no benchmark under "u"; 3: no applicable instance
    assert out["ood_mean"][:2] == [pytest.approx(0.8), pytest.approx(0.55)]
    assert out["ood_mean"][2:] == [None, None]
    # replicates that miss every instance of method 1 (row 1 alone) are skipped
    draws = np.random.default_rng(0).integers(3, size=(100, 3))
    used = int(np.sum(~(draws == 1).all(axis=1)))
    assert out["all"]["n_boot"] == out["pairs"]["t"]["n_boot"] == used


def test_agreement_rejects_bad_input():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="entries"):
        ood_benchmark_agreement(np.ones((3, 4)), {"t": np.ones(3)}, rng)
    with pytest.raises(ValueError, match="inf"):
        ood_benchmark_agreement([[np.inf, 1.0]], {"t": [1.0, 2.0]}, rng)
    with pytest.raises(ValueError, match="empty"):
        ood_benchmark_agreement(np.ones((3, 4)), {}, rng)


def test_instance_mean_interval_reuses_the_pooled_bootstrap():
    values = [0.6, None, 0.7, 0.9, 0.5]
    mean, lo, hi = instance_mean_interval(values, np.random.default_rng(2), n_boot=500)
    kept = np.array([0.6, 0.7, 0.9, 0.5])
    assert (mean, lo, hi) == bootstrap_pooled_share(kept, np.ones(4), np.random.default_rng(2),
                                                    n_boot=500)
    assert mean == pytest.approx(0.675) and lo <= mean <= hi
    assert instance_mean_interval([0.4, 0.4], np.random.default_rng(0)) == (0.4, 0.4, 0.4)
    assert instance_mean_interval([None], np.random.default_rng(0)) == (None, None, None)
    with pytest.raises(ValueError, match="never NaN"):
        instance_mean_interval([0.5, float("nan")], np.random.default_rng(0))


# -- the ground-truth half -----------------------------------------------------------------------
def test_ground_truth_shift_by_hand():
    var = np.array([1.0, 2.0, 4.0, 100.0, 3.0, 6.0, 9.0, 50.0])
    ood = np.array([0, 0, 0, 0, 1, 1, 1, 1], dtype=bool)
    matched = [0, 1, 2, 4, 5, 6]
    # matched ID {1, 2, 4}: median 2; matched OOD {3, 6, 9}: median 6
    out = ground_truth_shift(var, ood, matched)
    assert out["median_var_ratio"] == pytest.approx(3.0)
    # pairs OOD > ID: 3 > {1, 2}, 6 > all, 9 > all: 8 of 9
    assert out["auroc_posterior_var"] == pytest.approx(8 / 9)
    # all points: ID median (2 + 4)/2 = 3, OOD median (6 + 9)/2 = 7.5
    assert ground_truth_shift(var, ood)["median_var_ratio"] == pytest.approx(2.5)
    assert median_eu_ratio(var, ood, matched) == pytest.approx(3.0)
    assert median_eu_ratio(np.r_[np.zeros(4), np.ones(4)], ood) is None  # ID median 0
    assert median_eu_ratio(var, ood, [0, 1, 2]) is None  # no OOD point
    assert median_eu_ratio(np.r_[var[:7], np.nan], ood) == pytest.approx(2.0)  # NaN dropped


def residual_partial(x, y, z):
    """Brute force: residualise the ranks of x and y on (1, rank z) by least squares."""
    rx, ry, rz = rankdata(x), rankdata(y), rankdata(z)
    design = np.column_stack([np.ones_like(rz), rz])
    ex = rx - design @ np.linalg.lstsq(design, rx, rcond=None)[0]
    ey = ry - design @ np.linalg.lstsq(design, ry, rcond=None)[0]
    return float(np.corrcoef(ex, ey)[0, 1])


def test_partial_spearman_matches_residualised_ranks():
    rng = np.random.default_rng(4)
    for _ in range(5):
        z = rng.normal(size=200)
        x = z + rng.normal(size=200)
        y = np.exp(z) + x + rng.normal(size=200)
        assert partial_spearman(x, y, z) == pytest.approx(residual_partial(x, y, z), abs=1e-10)
    # non-finite triples are dropped before ranking
    x[3], y[7] = np.nan, np.inf
    keep = np.isfinite(x) & np.isfinite(y)
    assert partial_spearman(x, y, z) == pytest.approx(
        residual_partial(x[keep], y[keep], z[keep]), abs=1e-10)


def test_partial_spearman_vanishes_when_eu_follows_distance_only():
    rng = np.random.default_rng(6)
    d = rng.normal(size=3000)
    true_var = d + rng.normal(size=3000)
    eu = np.exp(d) + 0.5 * rng.normal(size=3000)
    assert spearman(eu, true_var) > 0.4
    assert partial_spearman(eu, true_var, d) == pytest.approx(0.0, abs=0.06)
    assert partial_spearman(np.exp(d), true_var, d) is None  # ÊU a monotone function of d
    assert partial_spearman(np.ones(3000), true_var, d) is None
    assert partial_spearman([1.0, 2.0, 3.0], [2.0, 1.0, 3.0], [3.0, 1.0, 2.0]) is None


def test_the_ground_truth_partial_spearman_is_over_the_in_distribution_points():
    """Seven ID query points at distances 1…7 and three OOD points farther out (8, 9, 10),
    where the truth is more uncertain but ÊU is lowest. Within the ID points ÊU and σ²_f are
    each rank-uncorrelated with the distance (Σd² against the distance ranks is 56 for both,
    so ρ = 1 − 6·56/(7·48) = 0) and Σd² between them is 14, so ρ(ÊU, σ²_f) = 1 − 6·14/336 =
    0.75, which the partial correlation keeps: (0.75 − 0·0) / √(1·1) = 0.75. Over all ten
    points the OOD points' opposite ranks pull it to about 0.05."""
    distance = np.arange(1.0, 11.0)
    eu = np.array([1, 4, 6, 7, 5, 3, 2, 0.3, 0.2, 0.1])
    posterior_var = np.array([1, 5, 6, 4, 7, 3, 2, 8, 9, 10], dtype=float)
    is_ood = np.arange(10) >= 7
    ranks_id = rankdata(eu[:7]), rankdata(posterior_var[:7]), rankdata(distance[:7])
    assert [float(np.sum((a - b) ** 2)) for a, b in
            ((ranks_id[0], ranks_id[2]), (ranks_id[1], ranks_id[2]),
             (ranks_id[0], ranks_id[1]))] == [56.0, 56.0, 14.0]
    got = ground_truth_partial_spearman(eu, posterior_var, distance, is_ood)
    assert got["partial_spearman"] == pytest.approx(0.75, abs=1e-12)  # the headline: ID only
    assert got["partial_spearman"] == pytest.approx(
        residual_partial(eu[:7], posterior_var[:7], distance[:7]), abs=1e-12)
    # all points, ID and OOD together: the additional value, a different number
    assert got["partial_spearman_all_points"] == pytest.approx(
        residual_partial(eu, posterior_var, distance), abs=1e-12)
    assert got["partial_spearman_all_points"] == pytest.approx(0.0538, abs=1e-3)
    assert got["partial_spearman_all_points"] == partial_spearman(eu, posterior_var, distance)
    # fewer than four ID points: no ID value, the all-points one remains
    few = ground_truth_partial_spearman(eu, posterior_var, distance, np.arange(10) >= 3)
    assert few["partial_spearman"] is None and few["partial_spearman_all_points"] is not None
    with pytest.raises(ValueError, match="differ in shape"):
        ground_truth_partial_spearman(eu, posterior_var[:9], distance, is_ood)


def test_bad_input_raises_clear_errors():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="is_ood has 2 entries"):
        distance_matched_indices([1.0, 2.0, 3.0], [0, 1], rng)
    with pytest.raises(ValueError, match="booleans"):
        distance_matched_indices([1.0, 2.0], [0, 2], rng)
    with pytest.raises(ValueError, match="non-finite"):
        distance_bins([1.0, np.nan])
    with pytest.raises(ValueError, match="n_bins"):
        distance_bins([1.0, 2.0], n_bins=0)
    with pytest.raises(ValueError, match="empty"):
        distance_bins([])
    with pytest.raises(ValueError, match="indices must lie"):
        ood_auroc([1.0, 2.0], [0, 1], indices=[0, 2])
    with pytest.raises(ValueError, match="repeat"):
        ood_auroc([1.0, 2.0], [0, 1], indices=[0, 0])
    with pytest.raises(ValueError, match="features"):
        reference_scores(np.ones((5, 2)), np.ones((3, 3)))
    with pytest.raises(ValueError, match="differ in shape"):
        method_ood_record([1.0, 2.0], [1.0], [0, 1], None)
    with pytest.raises(ValueError, match="n_folds"):
        classifier_separability(np.ones((10, 2)), np.ones((10, 2)), rng, n_folds=1)
