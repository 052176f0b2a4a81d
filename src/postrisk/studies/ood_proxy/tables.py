"""The OOD study's tables (paper App. D.3: Tables 11 and 12 and the ground-truth half), from the
per-instance records of :mod:`postrisk.studies.ood_proxy.statistics`, with the paper's values beside
ours.

The records are long frames, one row per (instance, scorer): :func:`record_rows` flattens one
instance's :func:`~postrisk.studies.ood_proxy.statistics.instance_ood_record` into rows of ``kind``
``method`` (a fitted method: the OOD AUROC of its ÊU and of ÊU + ÂU, all points and
distance-matched) and ``reference`` (Mahalanobis, kNN-10, the classifier bound);
:func:`ground_truth_rows` does the same for a GP instance's ground-truth half.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from postrisk.evaluation.metrics import mean_applicable
from postrisk.evaluation.paper import paper_text, paper_value
from postrisk.methods.registry import display_name
from postrisk.report.style import write_scaled_tables
from postrisk.studies.ood_proxy.statistics import instance_mean_interval, ood_benchmark_agreement
from postrisk.tasks.key import KEY_COLUMNS
from postrisk.tasks.oracle import EU_TARGETS

#: The reference scores: our name → (the name we show, the paper's name in Table 11).
REFERENCES = {"mahalanobis": ("Mahalanobis", "Mahalanobis"), "knn10": ("10-NN", "10-NN"),
              "classifier": ("Classifier bound", "supervised_classifier")}
#: The two versions of the task: (our column suffix, the paper's name).
VERSIONS = {"all": "all_points", "matched": "distance_matched"}


def record_rows(key: Mapping, record: Mapping) -> list[dict]:
    """One instance's record as rows: ``key`` (the instance's KEY_COLUMNS), ``kind``, ``name``
    and ``auroc_all``, ``auroc_matched``, ``auroc_total_all``, ``auroc_total_matched`` (None
    for a reference), plus ``n_matched_per_class``."""
    base = {k: key[k] for k in KEY_COLUMNS}
    n_matched = record["matching"]["n_matched_per_class"]
    rows = []
    for name, values in record["methods"].items():
        rows.append({**base, "kind": "method", "name": name, "n_matched_per_class": n_matched,
                     "auroc_all": values["auroc_eu"],
                     "auroc_matched": values["auroc_eu_matched"],
                     "auroc_total_all": values["auroc_total"],
                     "auroc_total_matched": values["auroc_total_matched"]})
    ref = record["reference"]
    for name in REFERENCES:
        rows.append({**base, "kind": "reference", "name": name,
                     "n_matched_per_class": n_matched, "auroc_all": ref[f"auroc_{name}"],
                     "auroc_matched": ref[f"auroc_{name}_matched"], "auroc_total_all": None,
                     "auroc_total_matched": None})
    return rows


def ground_truth_rows(key: Mapping, shift_all: Mapping, shift_matched: Mapping,
                      methods: Mapping[str, Mapping]) -> list[dict]:
    """A GP instance's ground-truth half as rows: ``kind`` ``truth`` (the true posterior
    variance: its median OOD/ID ratio on the matched points, its OOD AUROC all and matched)
    and ``method`` (each method's median-ÊU ratio on the matched points and its partial
    Spearman correlation with σ²_f given the distance, ``partial_spearman`` over the
    in-distribution query points and ``partial_spearman_all_points`` over all of them;
    ``methods``: name -> ``{"median_eu_ratio", "partial_spearman",
    "partial_spearman_all_points"}``, :func:`postrisk.studies.ood_proxy.statistics.
    ground_truth_partial_spearman`; a missing all-points value is None)."""
    base = {k: key[k] for k in KEY_COLUMNS}
    rows = [{**base, "kind": "truth", "name": "posterior_variance",
             "median_ratio_matched": shift_matched["median_var_ratio"],
             "auroc_all": shift_all["auroc_posterior_var"],
             "auroc_matched": shift_matched["auroc_posterior_var"], "partial_spearman": None,
             "partial_spearman_all_points": None}]
    for name, values in methods.items():
        rows.append({**base, "kind": "method", "name": name,
                     "median_ratio_matched": values["median_eu_ratio"], "auroc_all": None,
                     "auroc_matched": None, "partial_spearman": values["partial_spearman"],
                     "partial_spearman_all_points": values.get("partial_spearman_all_points")})
    return rows


def _none(value):
    return None if value is None or (isinstance(value, float) and np.isnan(value)) else value


def _interval(values: pd.Series, rng: np.random.Generator, n_boot: int) -> tuple:
    return instance_mean_interval([_none(v) for v in values], rng, n_boot=n_boot)


def _display(kind: str, name: str) -> str:
    return REFERENCES[name][0] if kind == "reference" else display_name(name)


def _paper_name(kind: str, name: str) -> str:
    return REFERENCES[name][1] if kind == "reference" else display_name(name)


def table11(records: pd.DataFrame, rng: np.random.Generator, n_boot: int = 1000
            ) -> pd.DataFrame:
    """Table 11: per method (by mean all-points AUROC, best first), then the references
    (Mahalanobis, kNN-10, the classifier bound), the
    mean OOD AUROC over instances with a 95% bootstrap interval over instances, all points and
    distance-matched, the AUROC of ÊU + ÂU, the mean matched points per class and the paper's
    two values."""
    rows = []
    for (kind, name), group in records.groupby(["kind", "name"], sort=False):
        row = {"kind": kind, "method": name, "display_name": _display(kind, name),
               "n_instances": int(len(group))}
        for version in VERSIONS:
            mean, lo, hi = _interval(group[f"auroc_{version}"], rng, n_boot)
            row |= {f"auroc_{version}": mean, f"auroc_{version}_ci_low": lo,
                    f"auroc_{version}_ci_high": hi}
        if kind == "method":
            row["auroc_total_all"] = _interval(group["auroc_total_all"], rng, n_boot)[0]
            row["auroc_total_matched"] = _interval(group["auroc_total_matched"], rng, n_boot)[0]
        row["matched_points_per_class"] = float(group["n_matched_per_class"].mean())
        for version, paper in VERSIONS.items():
            row[f"paper_auroc_{version}"] = paper_value(
                "table11", f"ood_auroc_{paper}", _paper_name(kind, name),
                "reference" if kind == "reference" else "")
        rows.append(row)
    frame = pd.DataFrame(rows)
    is_ref = frame["kind"] == "reference"
    methods = frame[~is_ref]
    methods = methods.assign(_auc=-methods["auroc_all"].astype(float).fillna(-np.inf))
    references = frame[is_ref]
    references = references.assign(_auc=references["method"].map(list(REFERENCES).index))
    return pd.concat([methods.sort_values("_auc", kind="stable"),
                      references.sort_values("_auc")]).drop(columns="_auc").reset_index(
        drop=True)


def table12(records: pd.DataFrame, benchmark: Mapping[str, pd.Series],
            rng: np.random.Generator, n_boot: int = 1000) -> pd.DataFrame:
    """Table 12: Kendall's W (tie-corrected) between the methods' OOD ranking (mean AUROC over
    instances) and their benchmark ranking, per EU target (``benchmark``: target -> mean ρ per
    method over the run's instances) and for all four rankings together, all points and
    distance-matched, with 95% intervals from a bootstrap over the OOD instances that holds the
    benchmark rankings fixed
    (:func:`~postrisk.studies.ood_proxy.statistics.ood_benchmark_agreement`)."""
    methods = records[records["kind"] == "method"]
    targets = [t for t in EU_TARGETS if t in benchmark]
    rows = []
    for version, paper in VERSIONS.items():
        wide = methods.pivot_table(index=list(KEY_COLUMNS), columns="name",
                                   values=f"auroc_{version}", aggfunc="first", dropna=False)
        names = list(wide.columns)
        bench = {t: np.array([benchmark[t].get(n, np.nan) for n in names], dtype=float)
                 for t in targets}
        result = ood_benchmark_agreement(wide.to_numpy(dtype=float), bench, rng, n_boot=n_boot)
        for target in [*targets, "all_four"]:
            w = result["all"] if target == "all_four" else result["pairs"][target]
            rows.append({"target": target, "version": version, "w": w["w"],
                         "ci_low": w["ci_low"], "ci_high": w["ci_high"],
                         "n_boot": w["n_boot"], "n_methods": len(result["methods"]),
                         "n_instances": result["n_instances"],
                         "paper_w": paper_value("table12", "kendall_w_ood_vs_benchmark",
                                                target, paper),
                         "paper_ci": paper_text("appD3", "kendall_w_ood_vs_benchmark_ci",
                                                target, paper)})
    return pd.DataFrame(rows)


def ground_truth_table(rows: pd.DataFrame, rng: np.random.Generator, n_boot: int = 1000
                       ) -> pd.DataFrame:
    """The ground-truth half over the GP instances: the true posterior variance (its median
    OOD/ID ratio on the matched points with the range over instances, its OOD AUROC all and
    matched) and each method's median-ÊU ratio and partial Spearman correlation (over the
    in-distribution query points; ``partial_spearman_all_points``: over all of them, an
    addition, a plain mean that draws nothing from ``rng``), means over instances with
    bootstrap intervals, the paper's values beside."""
    out = []
    for (kind, name), group in rows.groupby(["kind", "name"], sort=False):
        label = "GP oracle: true posterior variance" if kind == "truth" else display_name(name)
        ratio, lo, hi = _interval(group["median_ratio_matched"], rng, n_boot)
        ratios = group["median_ratio_matched"].dropna().astype(float)
        row = {"kind": kind, "name": name, "display_name": label,
               "n_instances": int(len(group)), "median_ratio_matched": ratio,
               "median_ratio_ci_low": lo, "median_ratio_ci_high": hi,
               "median_ratio_min": float(ratios.min()) if len(ratios) else None,
               "median_ratio_max": float(ratios.max()) if len(ratios) else None}
        if kind == "truth":
            row["auroc_all"] = _interval(group["auroc_all"], rng, n_boot)[0]
            row["auroc_matched"] = _interval(group["auroc_matched"], rng, n_boot)[0]
            row["paper_median_ratio"] = paper_value(
                "appD3", "true_posterior_variance_ratio_matched", "GP", "median")
            row["paper_auroc_all"] = paper_value("appD3", "auroc_true_posterior_variance",
                                                 "GP", "all_points")
            row["paper_auroc_matched"] = paper_value("appD3", "auroc_true_posterior_variance",
                                                     "GP", "distance_matched")
        else:
            row["partial_spearman"] = _interval(group["partial_spearman"], rng, n_boot)[0]
            row["partial_spearman_all_points"] = mean_applicable(
                _none(v) for v in group["partial_spearman_all_points"])[0]
            row["paper_median_ratio"] = paper_value("appD3", "median_eu_ratio_matched", label)
            row["paper_partial_spearman"] = paper_value(
                "appD3", "partial_spearman_given_mahalanobis", label)
        out.append(row)
    return pd.DataFrame(out)


# -- the study's stage: records → tables, figure ------------------------------------------------
def benchmark_rankings(scores: pd.DataFrame) -> dict[str, pd.Series]:
    """Per EU target, the benchmark's score of each fitted method: its mean ρ(ÊU, EU*_t) over
    every instance of the run (:func:`postrisk.evaluation.tables.method_ranking`)."""
    from postrisk.evaluation.tables import method_ranking

    return {t: method_ranking(scores, f"spearman_eu_{t}") for t in EU_TARGETS}


#: The ground-truth table's columns where no GP instance was studied (an empty table).
_TRUTH_COLUMNS = ("kind", "name", "display_name", "n_instances", "median_ratio_matched")


def ood_study_tables(records: list, truths: list, scores: pd.DataFrame,
                     rng: np.random.Generator, n_boot: int = 1000) -> dict[str, pd.DataFrame]:
    """The study's tables from :func:`postrisk.studies.ood_proxy.records.ood_records`' two lists
    and the run's score rows (the benchmark rankings), by catalogue id, from one bootstrap
    stream in a fixed order (Table 11, Table 12, the ground-truth half)."""
    instances = pd.DataFrame([r for key, record in records for r in record_rows(key, record)])
    truth = pd.DataFrame([r for args in truths for r in ground_truth_rows(*args)])
    return {
        "table11": table11(instances, rng, n_boot),
        "table12": table12(instances, benchmark_rankings(scores), rng, n_boot),
        "ood_ground_truth": (ground_truth_table(truth, rng, n_boot) if len(truth)
                             else pd.DataFrame(columns=list(_TRUTH_COLUMNS))),
        "ood_instances": instances,
        "ood_ground_truth_instances": truth,
    }


def write_ood_proxy(fits: Sequence[str | Path], samples: Mapping[str, str | Path],
                    ood_covariates: str | Path, score_csvs: Sequence[str | Path],
                    out: Mapping[str, str | Path], scale: str, n_boot: int = 1000
                    ) -> dict[str, pd.DataFrame]:
    """Rule ``ood_proxy``: the records of every OOD fit store (``samples``: instance label →
    its sample store), the tables and Figure 3B (``out``: catalogue id → path; the figure's
    PNG, its PDF beside it); every table's CSV starts with the run's scale. One bootstrap
    stream seeded 0."""
    from postrisk.report.scores import read_condition_scores
    from postrisk.studies.ood_proxy.figure import figure_ood_auroc
    from postrisk.studies.ood_proxy.records import ood_records

    records, truths = ood_records(fits, samples, ood_covariates)
    if not records:
        raise ValueError("the OOD study has no instance: no OOD fit store holds a seed")
    tables = ood_study_tables(records, truths, read_condition_scores(score_csvs),
                              np.random.default_rng(0), n_boot)
    write_scaled_tables(tables, out, scale)
    figure = Path(out["fig3b_ood_auroc"])
    figure_ood_auroc(tables["table11"].drop(columns="scale"), scale, figure.with_suffix(""))
    return tables
