"""Is OOD detection a good proxy for epistemic uncertainty? The study's mathematics (App. D.3).

Methods are fitted on an in-distribution (ID) training set and queried at held-out ID points
and at out-of-distribution (OOD) rows; a method's EU estimate ÊU(x) is used as an OOD score.
Pure functions on numpy arrays, no files. "Not applicable" is ``None``, never NaN (as in
:mod:`postrisk.evaluation.metrics`); random draws come from a ``numpy.random.Generator`` passed in.

Quantities
----------
* **OOD AUROC** of a score s: AUROC(s; OOD positive) = P(s_OOD > s_ID) + ½·P(s_OOD = s_ID)
  (:func:`postrisk.evaluation.metrics.auroc`), for ÊU and for the total ÊU + ÂU.
* **Distance**: d(x) = the Mahalanobis distance of x from the instance's training inputs under
  their shrunk covariance (the ``mahalanobis`` reference row's EU,
  :func:`postrisk.evaluation.reference_rows.mahalanobis_prediction`).
* **Distance-matched subsample**: the pooled distances of the query points (ID and OOD
  together) are cut into B bins at the pooled quantiles q_0 ≤ q_1 ≤ … ≤ q_B; bin b holds the
  points with q_b ≤ d < q_{b+1} (the last bin also d = q_B; a point on an inner edge belongs to
  the bin above it, and a bin between repeated edges is empty). In bin b, with n_b^ID and
  n_b^OOD points of each class, k_b = min(n_b^ID, n_b^OOD) points of each class are drawn
  without replacement. On the subsample the two classes have (up to the within-bin spread) the
  same distance distribution, so a score's matched AUROC measures what it sees beyond distance.
* **Reference AUROCs**: the Mahalanobis distance, the kNN distance (k = 10, mean distance to the
  nearest training inputs in shrinkage-whitened coordinates: the ``knn10`` row) and the
  **classifier bound** — the out-of-fold AUROC of a classifier trained to tell the OOD from the
  ID query inputs, an estimate of how separable the two input samples are at all.
* **Ranking agreement**: Kendall's W (:func:`postrisk.evaluation.agreement.kendalls_w`) of the
  ranking by mean OOD AUROC and the benchmark rankings (one per EU target), with a percentile
  bootstrap over OOD instances holding the benchmark rankings fixed.
* **Ground truth** (GP-prior instances, exact posterior variance σ²_f): the median ratio
  med(σ²_f | OOD) / med(σ²_f | ID) on the matched subsample, the OOD AUROC of σ²_f there, the
  same ratio for ÊU, and the partial Spearman correlation of ÊU with σ²_f given d,

      ρ_{xy·z} = (r_xy − r_xz·r_yz) / √((1 − r_xz²)(1 − r_yz²)),

  r the Spearman correlations, over the ID query points (:func:`ground_truth_partial_spearman`):
  does ÊU follow the posterior's variation within the ID data beyond what the distance explains
  ("within the white-wine data", App. D.3); over all query points too, an addition.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from postrisk.core.arrays import as_matrix, as_vector
from postrisk.core.errors import install_extra
from postrisk.evaluation.agreement import kendalls_w
from postrisk.evaluation.metrics import MIN_POINTS, auroc, mean_applicable, spearman
from postrisk.evaluation.posterior_checks import bootstrap_pooled_share
from postrisk.evaluation.reference_rows import knn_prediction, mahalanobis_prediction

#: Pooled-quantile bins of the distance matching.
N_BINS = 20
#: Folds of the classifier bound's cross-validation.
N_FOLDS = 5
N_BOOT = 1000
LEVEL = 0.95


# -- input checks --------------------------------------------------------------------------------
def _as_mask(name: str, values, n: int | None = None) -> np.ndarray:
    """``values`` as a boolean vector (booleans or 0/1), of length ``n`` when given."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.dtype != bool:
        if arr.size and not (np.issubdtype(arr.dtype, np.number) and np.isin(arr, (0, 1)).all()):
            raise ValueError(f"{name} must hold booleans (or 0/1)")
        arr = arr.astype(bool)
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{name} has {arr.shape[0]} entries, expected {n}")
    return arr


def _as_indices(indices, n: int) -> np.ndarray:
    """Row indices into n points (``None``: all of them), as a sorted unique int vector."""
    if indices is None:
        return np.arange(n)
    arr = np.asarray(indices)
    if arr.ndim != 1:
        raise ValueError(f"indices must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"indices must be integers, got dtype {arr.dtype}")
    if arr.min() < 0 or arr.max() >= n:
        raise ValueError(f"indices must lie in [0, {n}), got [{arr.min()}, {arr.max()}]")
    out = np.unique(arr)
    if out.size != arr.size:
        raise ValueError("indices must not repeat")
    return out


def _check_level(n_boot: int, level: float) -> None:
    if int(n_boot) < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot!r}")
    if not 0.0 < float(level) < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")


# -- distance matching ---------------------------------------------------------------------------
def mahalanobis_distance(x_train, x_query) -> np.ndarray:
    """d(x) of every query row: the ``mahalanobis`` reference row's EU, fitted on ``x_train``.

    The distance has one home (the coverage shells' ``fit_shells(x_train).distance``, called by
    :func:`postrisk.evaluation.reference_rows.mahalanobis_prediction`); the row's kNN mean is
    not used, so it is computed with k = 1 (the distance does not depend on k).
    """
    x_tr = as_matrix("x_train", x_train, finite=True)
    x_q = as_matrix("x_query", x_query, n_columns=x_tr.shape[1], finite=True)
    return mahalanobis_prediction(x_tr, np.zeros(x_tr.shape[0]), x_q, k=1).epistemic_var


def distance_bins(distance, n_bins: int = N_BINS) -> tuple[np.ndarray, np.ndarray]:
    """Bin of every point and the bin edges: B = ``n_bins`` bins at the pooled quantiles.

    edges = ``np.quantile(distance, linspace(0, 1, B + 1))``; bin b holds q_b ≤ d < q_{b+1}
    (``searchsorted`` on the inner edges, side right: a point on an inner edge goes to the bin
    above it; the maximum goes to the last bin). Repeated edges leave the bins between them
    empty. ``ValueError`` on an empty or non-finite ``distance`` or ``n_bins`` < 1.
    """
    d = as_vector("distance", distance, finite=True)
    if d.size == 0:
        raise ValueError("distance is empty")
    if int(n_bins) != n_bins or int(n_bins) < 1:
        raise ValueError(f"n_bins must be an integer >= 1, got {n_bins!r}")
    edges = np.quantile(d, np.linspace(0.0, 1.0, int(n_bins) + 1))
    return np.searchsorted(edges[1:-1], d, side="right"), edges


def bin_class_counts(distance, is_ood, n_bins: int = N_BINS, indices=None) -> dict:
    """Points of each class per bin of :func:`distance_bins` (bins from ALL points).

    With ``indices`` (e.g. a matched subsample) only those points are counted, still in the
    bins of the full pooled sample. Returns ``edges`` (B + 1 floats) and ``n_id``, ``n_ood``
    (B ints each).
    """
    bins, edges = distance_bins(distance, n_bins)
    ood = _as_mask("is_ood", is_ood, bins.size)
    idx = _as_indices(indices, bins.size)
    b, o = bins[idx], ood[idx]
    return {"edges": edges, "n_id": np.bincount(b[~o], minlength=int(n_bins)),
            "n_ood": np.bincount(b[o], minlength=int(n_bins))}


def distance_matched_indices(distance, is_ood, rng: np.random.Generator,
                             n_bins: int = N_BINS) -> np.ndarray:
    """Sorted indices of the distance-matched subsample (module docstring).

    In every bin of :func:`distance_bins`, k_b = min(n_b^ID, n_b^OOD) points of each class are
    drawn without replacement with ``rng.choice`` (bins in ascending order, ID before OOD, no
    draw for an empty side), so the subsample holds the same number of ID and OOD points in
    every bin. Empty when the classes share no bin (or one class is absent).
    """
    bins, _ = distance_bins(distance, n_bins)
    ood = _as_mask("is_ood", is_ood, bins.size)
    chosen = []
    for b in range(int(n_bins)):
        in_bin = bins == b
        ids, oods = np.flatnonzero(in_bin & ~ood), np.flatnonzero(in_bin & ood)
        k = min(ids.size, oods.size)
        if k:
            chosen.append(rng.choice(ids, size=k, replace=False))
            chosen.append(rng.choice(oods, size=k, replace=False))
    if not chosen:
        return np.zeros(0, dtype=np.int64)
    return np.sort(np.concatenate(chosen)).astype(np.int64)


def match_instance(x_train, x_query, is_ood, seed: int, n_bins: int = N_BINS) -> dict:
    """The matched subsample of one instance, drawn once from ``default_rng(seed)`` and shared
    by every method and reference of the instance.

    Returns ``seed``, ``n_bins``, ``distance`` (d of every query row), ``indices`` (sorted),
    ``n_id``, ``n_ood`` (all query points), ``n_matched_per_class`` (Σ_b k_b) and the per-bin
    ``counts`` of :func:`bin_class_counts` before (``n_id``/``n_ood``) and after matching
    (``n_matched``: equal for the two classes).
    """
    distance = mahalanobis_distance(x_train, x_query)
    ood = _as_mask("is_ood", is_ood, distance.size)
    idx = distance_matched_indices(distance, ood, np.random.default_rng(int(seed)), n_bins)
    before = bin_class_counts(distance, ood, n_bins)
    after = bin_class_counts(distance, ood, n_bins, idx)
    return {"seed": int(seed), "n_bins": int(n_bins), "distance": distance, "indices": idx,
            "n_id": int((~ood).sum()), "n_ood": int(ood.sum()),
            "n_matched_per_class": int(after["n_ood"].sum()),
            "counts": {"edges": before["edges"], "n_id": before["n_id"],
                       "n_ood": before["n_ood"], "n_matched": after["n_ood"]}}


# -- OOD scores ----------------------------------------------------------------------------------
def ood_auroc(score, is_ood, indices=None) -> float | None:
    """AUROC of ``score`` with OOD as the positive class, over ``indices`` (default all points).

    :func:`postrisk.evaluation.metrics.auroc`: non-finite scores are dropped, ties count ½;
    ``None`` when a class is empty.
    """
    s = as_vector("score", score)
    ood = _as_mask("is_ood", is_ood, s.size)
    idx = _as_indices(indices, s.size)
    return auroc(s[idx], ood[idx])


def reference_scores(x_train, x_query) -> dict[str, np.ndarray]:
    """OOD scores of the query rows from the distance reference rows, fitted on ``x_train``:
    ``mahalanobis`` (:func:`mahalanobis_distance`) and ``knn10`` (the EU of
    :func:`postrisk.evaluation.reference_rows.knn_prediction`; its mean, which needs targets,
    is not used)."""
    x_tr = as_matrix("x_train", x_train, finite=True)
    x_q = as_matrix("x_query", x_query, n_columns=x_tr.shape[1], finite=True)
    knn = knn_prediction(x_tr, np.zeros(x_tr.shape[0]), x_q).epistemic_var
    return {"mahalanobis": mahalanobis_distance(x_tr, x_q), "knn10": knn}


def classifier_separability(x_id, x_ood, rng: np.random.Generator,
                            n_folds: int = N_FOLDS) -> float | None:
    """The classifier bound: out-of-fold AUROC of an OOD-vs-ID classifier on the inputs.

    Stratified, shuffled ``n_folds``-fold cross-validation (its shuffle and the classifier's
    ``random_state`` from one seed drawn from ``rng``) of scikit-learn's
    ``HistGradientBoostingClassifier`` with its default trees (100 iterations, 31 leaves,
    learning rate 0.1) and no early stopping (a fixed model whatever the sample size); the
    AUROC of the out-of-fold P(OOD | x) with OOD positive. Histogram gradient boosting rather
    than ``GradientBoostingClassifier``: it is an order of magnitude faster at the same
    flexibility (binned features; ~1 s for 2,000 + 2,000 rows of d = 25), needs no feature
    scaling and handles interactions a linear or distance score misses. It runs on one OpenMP
    thread: on a shared or busy machine its default thread pool can be many times slower,
    and the result does not depend on the machine's core count.

    ``None`` when either class has fewer than ``n_folds`` rows. Needs scikit-learn (the
    ``methods`` extra).
    """
    a = as_matrix("x_id", x_id, finite=True)
    b = as_matrix("x_ood", x_ood, n_columns=a.shape[1], finite=True)
    if int(n_folds) != n_folds or int(n_folds) < 2:
        raise ValueError(f"n_folds must be an integer >= 2, got {n_folds!r}")
    n_folds = int(n_folds)
    if min(a.shape[0], b.shape[0]) < n_folds:
        return None
    try:
        from sklearn.ensemble import HistGradientBoostingClassifier
        from sklearn.model_selection import StratifiedKFold
        from threadpoolctl import threadpool_limits
    except ModuleNotFoundError as err:
        raise ModuleNotFoundError("classifier_separability needs scikit-learn (the 'methods' "
                                  f"extra): {install_extra('methods')}") from err
    seed = int(rng.integers(2**31 - 1))
    x = np.concatenate([a, b])
    y = np.concatenate([np.zeros(a.shape[0], dtype=int), np.ones(b.shape[0], dtype=int)])
    prob = np.empty(y.size)
    folds = StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=seed)
    with threadpool_limits(limits=1, user_api="openmp"):
        for train, test in folds.split(x, y):
            model = HistGradientBoostingClassifier(early_stopping=False, random_state=seed)
            model.fit(x[train], y[train])
            prob[test] = model.predict_proba(x[test])[:, 1]
    return auroc(prob, y.astype(bool))


# -- per-instance records ------------------------------------------------------------------------
def method_ood_record(eu, au, is_ood, matched_indices) -> dict[str, float | None]:
    """One method on one instance: ``auroc_eu``, ``auroc_eu_matched``, ``auroc_total``,
    ``auroc_total_matched`` (the total is ÊU + ÂU; ``None`` when ``au`` is ``None``). The
    matched values use the instance's ``matched_indices`` (:func:`match_instance`)."""
    e = as_vector("eu", eu)
    ood = _as_mask("is_ood", is_ood, e.size)
    idx = _as_indices(matched_indices, e.size)
    out = {"auroc_eu": ood_auroc(e, ood), "auroc_eu_matched": ood_auroc(e, ood, idx),
           "auroc_total": None, "auroc_total_matched": None}
    if au is not None:
        a = as_vector("au", au)
        if a.shape != e.shape:
            raise ValueError(f"eu and au differ in shape: {e.shape} vs {a.shape}")
        out["auroc_total"] = ood_auroc(e + a, ood)
        out["auroc_total_matched"] = ood_auroc(e + a, ood, idx)
    return out


def reference_ood_record(x_train, x_query, is_ood, matched_indices, rng: np.random.Generator,
                         n_folds: int = N_FOLDS) -> dict[str, float | None]:
    """The references of one instance, all points and matched: ``auroc_mahalanobis[_matched]``,
    ``auroc_knn10[_matched]`` and ``auroc_classifier[_matched]`` (the bound of
    :func:`classifier_separability`; matched: cross-validated afresh on the matched rows alone,
    the separability left once distance is matched). ``rng`` is drawn from twice, all points
    first."""
    x_q = as_matrix("x_query", x_query, finite=True)
    ood = _as_mask("is_ood", is_ood, x_q.shape[0])
    idx = _as_indices(matched_indices, x_q.shape[0])
    out: dict[str, float | None] = {}
    for name, score in reference_scores(x_train, x_q).items():
        out[f"auroc_{name}"] = ood_auroc(score, ood)
        out[f"auroc_{name}_matched"] = ood_auroc(score, ood, idx)
    out["auroc_classifier"] = classifier_separability(x_q[~ood], x_q[ood], rng, n_folds)
    xm, om = x_q[idx], ood[idx]
    out["auroc_classifier_matched"] = classifier_separability(xm[~om], xm[om], rng, n_folds)
    return out


def instance_ood_record(estimates: Mapping[str, tuple], is_ood, x_train, x_query,
                        rng: np.random.Generator, n_bins: int = N_BINS,
                        n_folds: int = N_FOLDS) -> dict:
    """Everything of one instance: ``matching`` (:func:`match_instance`, its seed the first
    draw from ``rng`` and recorded), ``reference`` (:func:`reference_ood_record`, from the rest
    of ``rng``) and ``methods``: name → :func:`method_ood_record`, every method on the same
    matched subsample. ``estimates``: method name → (ÊU, ÂU or ``None``) at the query rows."""
    seed = int(rng.integers(2**31 - 1))
    matching = match_instance(x_train, x_query, is_ood, seed, n_bins)
    idx = matching["indices"]
    reference = reference_ood_record(x_train, x_query, is_ood, idx, rng, n_folds)
    methods = {name: method_ood_record(eu, au, is_ood, idx)
               for name, (eu, au) in estimates.items()}
    return {"matching": matching, "reference": reference, "methods": methods}


# -- over instances ------------------------------------------------------------------------------
def _percentile_interval(boot: list[float], level: float) -> tuple[float | None, float | None]:
    if not boot:
        return None, None
    lo, hi = np.quantile(np.asarray(boot), [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def instance_mean_interval(values, rng: np.random.Generator, n_boot: int = N_BOOT,
                           level: float = LEVEL) -> tuple[float | None, float | None,
                                                          float | None]:
    """(mean, lo, hi): the mean over instances with a percentile bootstrap interval resampling
    instances (:func:`postrisk.evaluation.posterior_checks.bootstrap_pooled_share` with one
    unit per instance). ``None`` entries (not applicable) are skipped, a NaN raises
    (:func:`postrisk.evaluation.metrics.mean_applicable`); all ``None`` with nothing
    applicable."""
    _check_level(n_boot, level)
    items = list(values)
    mean_applicable(items)  # raises on NaN
    kept = np.array([float(v) for v in items if v is not None])
    if kept.size == 0:
        return None, None, None
    mean, lo, hi = bootstrap_pooled_share(kept, np.ones(kept.size), rng, int(n_boot), level)
    return mean, lo, hi


def _applicable_means(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    finite = np.isfinite(scores)
    counts = finite.sum(axis=0)
    sums = np.where(finite, scores, 0.0).sum(axis=0)
    return sums / np.maximum(counts, 1), counts


def ood_benchmark_agreement(ood_scores, benchmark_rankings: Mapping[str, np.ndarray],
                            rng: np.random.Generator, n_boot: int = N_BOOT,
                            level: float = LEVEL) -> dict:
    """Kendall's W between the methods' OOD ranking and their benchmark rankings.

    ``ood_scores``: (instances × methods) OOD AUROCs (matched or not), NaN or ``None`` where
    not applicable. ``benchmark_rankings``: target name → one benchmark score per method
    (e.g. mean ρ(ÊU, EU*_t)). Higher is better on both sides.

    Rule for missing values: a method's OOD score is its mean AUROC over the instances where
    it applies; methods with no applicable instance, or a non-finite benchmark score under any
    target, are left out of every ranking (``methods``: the column indices compared).

    * ``pairs``: target → W of (OOD ranking, that target's ranking), m = 2;
    * ``all``: W of the OOD ranking and every benchmark ranking together, m = 1 + targets;

    each as ``{"w", "ci_low", "ci_high", "n_boot"}``: the percentile interval at ``level`` of
    W over bootstrap replicates that resample the instances (rows, with replacement: one draw
    ``rng.integers(n_instances, size=(n_boot, n_instances))``) and recompute the OOD means,
    while the benchmark rankings stay fixed. A replicate in which a compared method has no
    applicable instance, or W is not applicable, is skipped (``n_boot``: replicates used).
    Also ``ood_mean`` (per column, ``None`` if left out) and ``n_applicable`` (per column).
    """
    _check_level(n_boot, level)
    scores = as_matrix("ood_scores", ood_scores)
    if np.isinf(scores).any():
        raise ValueError("ood_scores contains ±inf; 'not applicable' must be NaN or None")
    n_inst, n_methods = scores.shape
    if n_inst == 0:
        raise ValueError("ood_scores has no instances")
    if not benchmark_rankings:
        raise ValueError("benchmark_rankings is empty")
    bench = {}
    for name, values in benchmark_rankings.items():
        v = as_vector(f"benchmark_rankings[{name!r}]", values)
        if v.size != n_methods:
            raise ValueError(f"benchmark_rankings[{name!r}] has {v.size} entries, "
                             f"ood_scores {n_methods} methods")
        bench[name] = v
    means, counts = _applicable_means(scores)
    keep = (counts > 0) & np.all([np.isfinite(v) for v in bench.values()], axis=0)
    cols = np.flatnonzero(keep)
    fixed = {name: v[cols] for name, v in bench.items()}
    fixed_all = np.vstack(list(fixed.values()))

    def ws(ood_mean: np.ndarray) -> dict[str, float | None]:
        out = {name: kendalls_w(np.vstack([ood_mean, v]), higher_is_better=True)
               for name, v in fixed.items()}
        out[None] = kendalls_w(np.vstack([ood_mean, fixed_all]), higher_is_better=True)
        return out

    point = ws(means[cols])
    boot: dict = {key: [] for key in point}
    sub = scores[:, cols]
    draws = rng.integers(n_inst, size=(int(n_boot), n_inst))
    for rows in draws:
        rep_mean, rep_count = _applicable_means(sub[rows])
        if not (rep_count > 0).all():
            continue
        for key, w in ws(rep_mean).items():
            if w is not None:
                boot[key].append(w)

    def entry(key) -> dict:
        lo, hi = _percentile_interval(boot[key], level) if point[key] is not None else (None,
                                                                                         None)
        return {"w": point[key], "ci_low": lo, "ci_high": hi, "n_boot": len(boot[key])}

    return {"methods": cols.tolist(), "n_instances": n_inst,
            "ood_mean": [float(means[j]) if keep[j] else None for j in range(n_methods)],
            "n_applicable": counts.astype(int).tolist(),
            "pairs": {name: entry(name) for name in fixed}, "all": entry(None)}


# -- the ground-truth half (GP-prior instances) --------------------------------------------------
def _median_ratio(values: np.ndarray, ood: np.ndarray, idx: np.ndarray) -> float | None:
    v, o = values[idx], ood[idx]
    keep = np.isfinite(v)
    v, o = v[keep], o[keep]
    if not o.any() or o.all():
        return None
    denom = float(np.median(v[~o]))
    if not denom > 0.0:
        return None
    return float(np.median(v[o])) / denom


def median_eu_ratio(eu, is_ood, matched_indices=None) -> float | None:
    """med(ÊU | OOD) / med(ÊU | ID) over ``matched_indices`` (default all points); non-finite
    ÊU dropped. ``None`` when a class is empty or the ID median is not positive."""
    e = as_vector("eu", eu)
    ood = _as_mask("is_ood", is_ood, e.size)
    return _median_ratio(e, ood, _as_indices(matched_indices, e.size))


def ground_truth_shift(posterior_var, is_ood, matched_indices=None) -> dict[str, float | None]:
    """How much more the truth is uncertain at OOD points, over ``matched_indices`` (default
    all points): ``median_var_ratio`` = med(σ²_f | OOD) / med(σ²_f | ID) (``None`` as in
    :func:`median_eu_ratio`) and ``auroc_posterior_var`` = the OOD AUROC of σ²_f."""
    v = as_vector("posterior_var", posterior_var, finite=True)
    ood = _as_mask("is_ood", is_ood, v.size)
    idx = _as_indices(matched_indices, v.size)
    return {"median_var_ratio": _median_ratio(v, ood, idx),
            "auroc_posterior_var": auroc(v[idx], ood[idx])}


def partial_spearman(eu, posterior_var, distance) -> float | None:
    """Partial Spearman correlation of ÊU with σ²_f given the distance d (module docstring).

    The three Spearman correlations come from :func:`postrisk.evaluation.metrics.spearman` on
    the points where all three values are finite. ``None`` when fewer than four such points
    remain, a correlation is not applicable (a constant input) or |r_xz| or |r_yz| is 1 (ÊU or
    σ²_f a monotone function of d: nothing is left once d is accounted for). Clipped to
    [−1, 1] against rounding.
    """
    x = as_vector("eu", eu)
    y = as_vector("posterior_var", posterior_var)
    z = as_vector("distance", distance)
    if not (x.shape == y.shape == z.shape):
        raise ValueError(f"eu, posterior_var and distance differ in shape: "
                         f"{x.shape}, {y.shape}, {z.shape}")
    keep = np.isfinite(x) & np.isfinite(y) & np.isfinite(z)
    x, y, z = x[keep], y[keep], z[keep]
    if x.size < MIN_POINTS + 1:
        return None
    r_xy, r_xz, r_yz = spearman(x, y), spearman(x, z), spearman(y, z)
    if r_xy is None or r_xz is None or r_yz is None:
        return None
    rest_x, rest_y = 1.0 - r_xz * r_xz, 1.0 - r_yz * r_yz
    if rest_x <= 1e-12 or rest_y <= 1e-12:
        return None
    return float(min(1.0, max(-1.0, (r_xy - r_xz * r_yz) / math.sqrt(rest_x * rest_y))))


def ground_truth_partial_spearman(eu, posterior_var, distance, is_ood
                                  ) -> dict[str, float | None]:
    """The partial Spearman correlation of ÊU with σ²_f given d (:func:`partial_spearman`) on
    the two sets of query points: ``partial_spearman`` over the in-distribution points only
    (``is_ood`` False) — the study's value: App. D.3 asks whether ÊU reproduces the
    posterior's variation *within* the in-distribution (white-wine) data, which a correlation
    over both classes mixes with the ID/OOD contrast — and ``partial_spearman_all_points``
    over every query point, ID and OOD together."""
    e = as_vector("eu", eu)
    ood = _as_mask("is_ood", is_ood, e.size)
    v = as_vector("posterior_var", posterior_var)
    d = as_vector("distance", distance)
    if not (v.shape == d.shape == e.shape):
        raise ValueError(f"eu, posterior_var and distance differ in shape: "
                         f"{e.shape}, {v.shape}, {d.shape}")
    return {"partial_spearman": partial_spearman(e[~ood], v[~ood], d[~ood]),
            "partial_spearman_all_points": partial_spearman(e, v, d)}
