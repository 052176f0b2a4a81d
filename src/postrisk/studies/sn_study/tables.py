"""The spectral-normalisation study's tables (paper App. D.4: Tables 13 and 14, the mediation
analysis and the data of Figure 10), from the fitting stage's records, the paper's values beside.

A record is one fit: an instance (``dataset, prior, noise, coverage, seed``), a network method
(``nn_lap`` … ``nn_bag``) and an arm: ``plain`` (the benchmark's configuration), ``sn`` (every
dense layer spectrally normalised, re-tuned) or ``wd`` (weight decay forced into [1e-2, 1],
re-tuned). Each arm is compared with the plain network of the same instance and method by the
paired differences Δ = arm − plain (:func:`paired_differences`); every interval resamples the
datasets, the unit the conclusions should generalise to
(:mod:`postrisk.studies.sn_study.statistics`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from postrisk.core import seeding
from postrisk.evaluation.paper import paper_value
from postrisk.methods.registry import display_name
from postrisk.report.style import write_scaled_tables
from postrisk.report.table_builders import without_ablations
from postrisk.studies.sn_study.config import SN_METHODS
from postrisk.studies.sn_study.fits import RECORD_COLUMNS
from postrisk.studies.sn_study.statistics import (
    dataset_bootstrap,
    geometric_mean_ratio,
    regression_with_intervals,
    within_dataset_spearman,
)
from postrisk.tasks.key import KEY_COLUMNS

#: An instance of the benchmark.
INSTANCE = KEY_COLUMNS
#: The network methods in the paper's order (Table 13).
METHODS = SN_METHODS
#: The arms compared with the plain network.
ARMS = ("sn", "wd")
POOLED = "All (pooled)"
#: Table 13's changes: (column in the differences, the paper's quantity after ``<arm>_``).
DELTAS = {"delta_rho_risk": "minus_plain_rho_risk", "delta_rho_var": "minus_plain_rho_var",
          "delta_preservation": "minus_plain_preservation"}
#: The plain network's quantities carried into the differences.
PLAIN = ("n_blocks", "width", "n_epochs", "grad_steps", "preservation")
#: The mediation models: name → (terms, rows used, standardised, the paper's quantity prefix).
MODELS = {
    "arm_only": (("sn",), ARMS, False, "arm_only"),
    "mediators": (("delta_preservation", "log_nmse_ratio", "sn", "delta_depth"), ARMS, False,
                  "mediation"),
    "within_sn": (("delta_preservation", "log_nmse_ratio"), ("sn",), True, "within_sn"),
}
#: A regression term → the paper's coefficient (β_pres, β_fit, β_SN, β_depth).
COEFFICIENTS = {"delta_preservation": "beta_pres", "log_nmse_ratio": "beta_fit",
                "sn": "beta_sn", "delta_depth": "beta_depth"}
OUTCOMES = {"delta_rho_risk": "rho_risk", "delta_rho_var": "rho_var"}
#: Table 14: column stem → (x, y, frame: "plain" records or "sn" differences, paper quantity).
TABLE14 = {
    "pres_vs_depth": ("n_blocks", "preservation", "plain", "plain_preservation_vs_depth"),
    "pres_vs_width": ("width", "preservation", "plain", "plain_preservation_vs_width"),
    "pres_vs_epochs": ("n_epochs", "preservation", "plain", "plain_preservation_vs_epochs"),
    "pres_vs_grad_steps": ("grad_steps", "preservation", "plain",
                           "plain_preservation_vs_grad_steps"),
    "depth_vs_sn_gain_pres": ("plain_n_blocks", "delta_preservation", "sn",
                              "depth_vs_sn_gain_preservation"),
    "depth_vs_sn_gain_rho_var": ("plain_n_blocks", "delta_rho_var", "sn",
                                 "depth_vs_sn_gain_rho_var"),
}
#: Figure 10's targets: the benchmark's score column and the record's column.
TARGETS = {"posterior_excess_risk": ("spearman_eu_posterior_excess_risk", "rho_risk"),
           "posterior_variance": ("spearman_eu_posterior_variance", "rho_var")}
ARM_LABELS = {"plain": "plain, study", "sn": "SN", "wd": "WD"}
NOT_ESTIMABLE = ("not estimable: too few rows, or a term constant or collinear within "
                 "datasets")
#: The catalogue ids the study writes.
OUTPUTS = ("table13", "sn_mediation", "table14", "sn_instances", "fig10_sn_methods")


def _paper(source: str, quantity: str, group: str, item: str = "") -> float:
    value = paper_value(source, quantity, group, item)
    return np.nan if value is None else value


def _methods(frame: pd.DataFrame) -> list[str]:
    """The methods present, the paper's order first, any other after (sorted)."""
    present = set(frame["method"].astype(str))
    return [m for m in METHODS if m in present] + sorted(present - set(METHODS))


def _groups(frame: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame]]:
    """(display name, the paper's group, rows) per method, then the pooled rows."""
    names = {m: display_name(m) for m in _methods(frame)}
    out = [(name, name, frame[frame["method"] == m]) for m, name in names.items()]
    return [*out, (POOLED, "pooled", frame)]


# -- records and differences -------------------------------------------------------------------
def sn_records(paths: Sequence[str | Path]) -> pd.DataFrame:
    """Every record CSV, concatenated; a file without every column of :data:`RECORD_COLUMNS`,
    or a fit recorded twice, is an error naming it."""
    frames = []
    for path in paths:
        try:
            frame = pd.read_csv(path)
        except pd.errors.EmptyDataError as exc:
            raise ValueError(f"SN study record {path}: the file is empty") from exc
        missing = [c for c in RECORD_COLUMNS if c not in frame]
        if missing:
            raise ValueError(f"SN study record {path}: missing columns {missing}")
        frames.append(frame)
    if not frames:
        raise ValueError("the SN study has no record file")
    records = pd.concat(frames, ignore_index=True)
    twice = records.duplicated([*INSTANCE, "method", "arm"], keep=False)
    if twice.any():
        first = records[twice].iloc[0]
        raise ValueError(f"SN study records: {int(twice.sum())} fits recorded twice, e.g. "
                         f"{first['method']} {first['arm']} on "
                         f"{', '.join(str(first[k]) for k in INSTANCE)}")
    return records


def paired_differences(records: pd.DataFrame) -> pd.DataFrame:
    """One row per (instance, method, arm ∈ {sn, wd}) where both the arm's and the plain fit are
    ok: ``delta_rho_risk``, ``delta_rho_var``, ``delta_preservation`` (arm − plain),
    ``log_nmse_ratio`` = log(NMSE_arm / NMSE_plain) (NaN unless both are positive),
    ``delta_depth`` = n_blocks_arm − n_blocks_plain, ``sn`` = 1[arm = sn], the two NMSEs
    (``arm_nmse``, ``plain_nmse``) and the plain network's ``plain_n_blocks``, ``plain_width``,
    ``plain_n_epochs``, ``plain_grad_steps``, ``plain_preservation``."""
    keys = [*INSTANCE, "method"]
    ok = records[records["status"].astype(str) == "ok"]
    values = ["rho_risk", "rho_var", "preservation", "nmse", "n_blocks"]
    plain = ok[ok["arm"] == "plain"][keys + sorted({*values, *PLAIN})]
    plain = plain.rename(columns={c: f"plain_{c}" for c in {*values, *PLAIN}})
    arms = ok[ok["arm"].isin(ARMS)][[*keys, "arm", *values]]
    pairs = arms.merge(plain, on=keys, how="inner")
    out = pairs[[*keys, "arm"]].copy()
    out.insert(len(keys) - 1, "display_name", pairs["method"].map(display_name))
    for column in ("rho_risk", "rho_var", "preservation"):
        out[f"delta_{column}"] = pairs[column].astype(float) - pairs[f"plain_{column}"]
    arm_nmse, plain_nmse = pairs["nmse"].astype(float), pairs["plain_nmse"].astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.log(arm_nmse / plain_nmse)
    out["log_nmse_ratio"] = ratio.where((arm_nmse > 0) & (plain_nmse > 0))
    out["delta_depth"] = pairs["n_blocks"].astype(float) - pairs["plain_n_blocks"]
    out["sn"] = (pairs["arm"] == "sn").astype(int)
    out["arm_nmse"], out["plain_nmse"] = arm_nmse, plain_nmse
    for column in PLAIN:
        out[f"plain_{column}"] = pairs[f"plain_{column}"].astype(float)
    order = {m: i for i, m in enumerate(_methods(out))} if len(out) else {}
    out = out.assign(_m=out["method"].map(order), _a=out["arm"].map(ARMS.index))
    return out.sort_values(["_m", "_a", *INSTANCE], kind="stable").drop(
        columns=["_m", "_a"]).reset_index(drop=True)


# -- Table 13 ----------------------------------------------------------------------------------
def _bootstrap(values: pd.Series, datasets: pd.Series, rng: np.random.Generator,
               n_boot: int) -> tuple[float, float, float]:
    keep = values.notna().to_numpy()
    if not keep.any():
        return np.nan, np.nan, np.nan
    interval = dataset_bootstrap(values.to_numpy(dtype=float)[keep],
                                 datasets.to_numpy()[keep], statistic=np.mean, n_boot=n_boot,
                                 rng=rng)
    return float(interval.estimate), float(interval.low), float(interval.high)


def table13(diffs: pd.DataFrame, rng: np.random.Generator, n_boot: int = 2000) -> pd.DataFrame:
    """Table 13: per method (the paper's order) and pooled over the methods, per arm (SN, WD),
    the mean paired change Δρ_risk, Δρ_var, Δpreservation over the instances, and the NMSE
    ratio as a geometric mean, exp(mean log(NMSE_arm / NMSE_plain)), each with a 95% percentile
    interval from a bootstrap that resamples the datasets (NaN with fewer than two datasets);
    ``n_instances`` (paired rows: instances, pooled instance–method pairs), ``n_datasets``, and
    the paper's value beside each (``paper_*``, NaN where the paper has none)."""
    rows = []
    for label, group_name, frame in _groups(diffs):
        for arm in ARMS:
            sub = frame[frame["arm"] == arm]
            if sub.empty:
                continue
            row = {"method": label, "arm": arm, "n_instances": int(len(sub)),
                   "n_datasets": int(sub["dataset"].nunique())}
            for column, quantity in DELTAS.items():
                est, low, high = _bootstrap(sub[column], sub["dataset"], rng, n_boot)
                row |= {column: est, f"{column}_low": low, f"{column}_high": high,
                        f"paper_{column}": _paper("table13", f"{arm}_{quantity}", group_name)}
            _, low, high = _bootstrap(sub["log_nmse_ratio"], sub["dataset"], rng, n_boot)
            ok = sub["log_nmse_ratio"].notna()
            ratio = (geometric_mean_ratio(sub.loc[ok, "arm_nmse"].to_numpy(dtype=float),
                                          sub.loc[ok, "plain_nmse"].to_numpy(dtype=float))
                     if ok.any() else np.nan)
            row |= {"nmse_ratio": float(ratio), "nmse_ratio_low": float(np.exp(low)),
                    "nmse_ratio_high": float(np.exp(high)),
                    "paper_nmse_ratio": _paper("table13", f"{arm}_nmse_ratio", group_name)}
            rows.append(row)
    return pd.DataFrame(rows)


# -- mediation ---------------------------------------------------------------------------------
def _n_instances(frame: pd.DataFrame) -> int:
    return int(len(frame.drop_duplicates(list(INSTANCE)))) if len(frame) else 0


def mediation(diffs: pd.DataFrame, rng: np.random.Generator, n_boot: int = 2000,
              min_instances: int = 10) -> pd.DataFrame:
    """The mediation analysis of App. D.4, per method and pooled (pooled: method fixed effects
    besides the dataset's), for Δρ_risk and Δρ_var, three least-squares models with dataset
    fixed effects α_dataset:

    - ``arm_only``:  Δρ = β_SN·1[SN] + α_dataset + ε, over both arms' rows;
    - ``mediators``: Δρ = β_pres·Δpres + β_fit·ΔlogNMSE + β_SN·1[SN] + β_depth·Δdepth
      + α_dataset + ε, over both arms' rows;
    - ``within_sn``: the SN rows only, all variables standardised,
      Δρ = β_pres·Δpres + β_fit·ΔlogNMSE + α_dataset + ε.

    One row per coefficient: ``estimate`` with its 95% dataset-bootstrap interval, ``n`` (rows
    used), ``n_datasets``, ``n_instances``, ``n_boot_estimable``; ``interpretable`` is False
    where the method has fewer than ``min_instances`` instances or the fit is not estimable
    (``note`` says which); the paper's value and interval where its text states one."""
    rows = []
    for label, group_name, frame in _groups(diffs):
        effects = ("dataset", "method") if label == POOLED else ("dataset",)
        for outcome, short in OUTCOMES.items():
            for model, (terms, arms, standardise, quantity) in MODELS.items():
                data = frame[frame["arm"].isin(arms)]
                data = data.dropna(subset=[outcome, *terms])
                n_inst = _n_instances(data)
                fit = (regression_with_intervals(
                    data, outcome, list(terms), effects=effects, standardise=standardise,
                    n_boot=n_boot, rng=rng) if len(data) else None)
                for term in terms:
                    hit = (fit[fit["term"] == term] if fit is not None and len(fit)
                           else pd.DataFrame())
                    res = hit.iloc[0] if len(hit) else {}
                    est = float(res.get("estimate", np.nan))
                    n_datasets = int(res.get("n_datasets", data["dataset"].nunique()))
                    note, ok = "", True
                    if n_inst < min_instances:
                        per = "instances" if label == POOLED else "instances per method"
                        note, ok = (f"not interpretable at this scale: {n_inst} {per} "
                                    f"(< {min_instances})"), False
                    if not np.isfinite(est):
                        ok = False
                        note = "; ".join(filter(None, [note, NOT_ESTIMABLE]))
                    elif n_datasets < 2:
                        note = "; ".join(filter(None, [note, "no interval: one dataset"]))
                    item = COEFFICIENTS[term]
                    rows.append({
                        "method": label, "outcome": outcome, "model": model, "term": term,
                        "coefficient": item, "estimate": est,
                        "ci_low": float(res.get("ci_low", np.nan)),
                        "ci_high": float(res.get("ci_high", np.nan)),
                        "n": int(res.get("n", len(data))), "n_datasets": n_datasets,
                        "n_instances": n_inst,
                        "n_boot_estimable": int(res.get("n_boot_estimable", 0)),
                        "interpretable": bool(ok), "note": note,
                        "paper_estimate": _paper("appD4", f"{quantity}_{short}", group_name,
                                                 item),
                        "paper_ci_low": _paper("appD4", f"{quantity}_{short}_ci_low",
                                               group_name, item),
                        "paper_ci_high": _paper("appD4", f"{quantity}_{short}_ci_high",
                                                group_name, item)})
    return pd.DataFrame(rows)


# -- Table 14 ----------------------------------------------------------------------------------
def _constant_within(values: pd.Series, cells: list[pd.Series]) -> bool:
    """Whether ``values`` are constant within every cell (dataset, or dataset × method), up
    to rounding (range at most 1e-12 · max |v|)."""
    v = values.astype(float)
    spread = v.groupby(cells).transform("max") - v.groupby(cells).transform("min")
    return bool((spread <= 1e-12 * float(v.abs().max())).all())


def table14(diffs: pd.DataFrame, records: pd.DataFrame) -> pd.DataFrame:
    """Table 14: per method and pooled, Spearman correlations within datasets (dataset means
    removed from both variables; pooled: centred per method as well) with their p-values and
    the paper's values: the plain network's preservation with its tuned depth (``n_blocks``),
    width, epochs and gradient steps (over its ok plain fits), and the plain depth with the SN
    gains Δpreservation and Δρ_var (over the SN pairs). Columns ``rho_<q>``, ``p_<q>``,
    ``paper_<q>`` for q in :data:`TABLE14`; ``n_instances`` (plain fits), ``n_sn_pairs``;
    NaN where a correlation is not defined, ``note`` saying why."""
    ok = records[(records["status"].astype(str) == "ok") & (records["arm"] == "plain")]
    sn = diffs[diffs["arm"] == "sn"]
    methods = _methods(pd.concat([ok[["method"]], sn[["method"]]]))
    rows = []
    for method in [*methods, None]:
        pooled = method is None
        name = None if pooled else display_name(method)
        label, group = (POOLED, "pooled") if pooled else (name, name)
        frames = {"plain": ok if pooled else ok[ok["method"] == method],
                  "sn": sn if pooled else sn[sn["method"] == method]}
        row: dict = {"method": label, "n_instances": int(len(frames["plain"])),
                     "n_sn_pairs": int(len(frames["sn"]))}
        notes = []
        for stem, (x, y, source, quantity) in TABLE14.items():
            data = frames[source].dropna(subset=[x, y])
            cells = [data["dataset"], data["method"]] if pooled else [data["dataset"]]
            res = within_dataset_spearman(
                data[x].to_numpy(dtype=float), data[y].to_numpy(dtype=float),
                data["dataset"].to_numpy(), data["method"].to_numpy() if pooled else None)
            rho, p = float(res.rho), float(res.p_value)
            if np.isfinite(rho):
                pass
            elif len(data) < 3:
                notes.append(f"{stem}: {len(data)} pairs (< 3)")
            else:
                const = [v for v in (x, y) if _constant_within(data[v], cells)]
                notes.append(f"{stem}: " + (f"{const[0]} constant within datasets" if const
                                            else "no variation left after centring"))
            row |= {f"rho_{stem}": rho, f"p_{stem}": p,
                    f"paper_{stem}": _paper("table14", quantity, group)}
        row["note"] = "; ".join(notes)
        rows.append(row)
    return pd.DataFrame(rows)


# -- Figure 10's data --------------------------------------------------------------------------
def _summary(values: pd.Series) -> tuple[float, float, float, int]:
    """Mean with mean ± 1.96·SD/√n (NaN below two values) and n."""
    v = values.dropna().to_numpy(dtype=float)
    if not v.size:
        return np.nan, np.nan, np.nan, 0
    mean = float(v.mean())
    half = 1.96 * float(v.std(ddof=1)) / np.sqrt(v.size) if v.size > 1 else np.nan
    return mean, mean - half, mean + half, int(v.size)


def figure10_frame(records: pd.DataFrame, scores: pd.DataFrame | None) -> pd.DataFrame:
    """Figure 10's data on the instances of the study (those in ``records``): each benchmark
    method's mean ρ(ÊU, posterior excess risk) and ρ(ÊU, posterior variance) over its ok score
    rows there (``source`` benchmark, ``arm`` plain; no App. D.2 ablation), and the study's
    arms as their own rows (``source`` sn_study; labels "NN-Lap + SN", "NN-Lap + WD" and
    "NN-Lap (plain, study)", the last of which should agree with the benchmark's row).
    Intervals: mean ± 1.96·SD/√n over instances. Columns: label, method, source, arm, target,
    mean, low, high, n."""
    rows = []
    keys = list(INSTANCE)
    if scores is not None and len(scores):
        present = records[keys].drop_duplicates()
        bench = scores[(scores["kind"] == "method") & (scores["status"].astype(str) == "ok")]
        bench = bench.merge(present, on=keys, how="inner")
        bench = without_ablations(bench)
        for method, group in bench.groupby("method", sort=True):
            for target, (column, _) in TARGETS.items():
                mean, low, high, n = _summary(group[column])
                rows.append({"label": display_name(method), "method": method, "source": "benchmark",
                             "arm": "plain", "target": target, "mean": mean, "low": low,
                             "high": high, "n": n})
    ok = records[records["status"].astype(str) == "ok"]
    for method in _methods(ok) if len(ok) else []:
        for arm in ("plain", *ARMS):
            group = ok[(ok["method"] == method) & (ok["arm"] == arm)]
            if group.empty:
                continue
            label = (f"{display_name(method)} (plain, study)" if arm == "plain"
                     else f"{display_name(method)} + {ARM_LABELS[arm]}")
            for target, (_, column) in TARGETS.items():
                mean, low, high, n = _summary(group[column])
                rows.append({"label": label, "method": method, "source": "sn_study",
                             "arm": arm, "target": target, "mean": mean, "low": low,
                             "high": high, "n": n})
    columns = ["label", "method", "source", "arm", "target", "mean", "low", "high", "n"]
    return pd.DataFrame(rows, columns=columns)


# -- the study's stage -------------------------------------------------------------------------
def _score_tables(paths: Sequence[str | Path]) -> pd.DataFrame | None:
    """The benchmark's score tables of the study's conditions (None without any)."""
    from postrisk.report.scores import read_condition_scores

    return read_condition_scores(paths) if paths else None


def sn_instances(records: pd.DataFrame, diffs: pd.DataFrame) -> pd.DataFrame:
    """Every record (all arms, failed fits too) with its paired differences (NaN for the plain
    arm and where either fit failed)."""
    keys = [*INSTANCE, "method", "arm"]
    extra = [c for c in diffs if c not in records and c not in keys and c != "display_name"]
    return records.merge(diffs[keys + extra], on=keys, how="left")


def sn_study_tables(records: pd.DataFrame, scores: pd.DataFrame | None,
                    rng: np.random.Generator, n_boot: int = 2000, min_instances: int = 10
                    ) -> dict[str, pd.DataFrame]:
    """The study's tables by catalogue id from one bootstrap stream, in a fixed order
    (Table 13, the mediation, Table 14), with the per-record table and Figure 10's data."""
    diffs = paired_differences(records)
    return {"table13": table13(diffs, rng, n_boot),
            "sn_mediation": mediation(diffs, rng, n_boot, min_instances),
            "table14": table14(diffs, records),
            "sn_instances": sn_instances(records, diffs),
            "fig10_sn_methods": figure10_frame(records, scores)}


def write_sn_study(records: Sequence[str | Path], scores: Sequence[str | Path],
                   out: Mapping[str, str | Path], scale: str, n_boot: int = 2000,
                   min_instances: int = 10) -> dict[str, pd.DataFrame]:
    """Rule ``sn_study``: the record CSVs (``records``) and the benchmark's score CSVs
    (``scores``) → the tables ``table13``, ``sn_mediation``, ``table14``, ``sn_instances`` as
    CSVs whose first column is the run's scale, and Figure 10 (``fig10_sn_methods``: its PNG
    path, the PDF beside it); ``out``: catalogue id → path. One bootstrap stream,
    ``seeding.rng("sn_study_bootstrap")``. Returns the frames by id (the figure's data under
    ``fig10_sn_methods``)."""
    from postrisk.studies.sn_study.figure import figure10

    missing = [ident for ident in OUTPUTS if ident not in out]
    if missing:
        raise ValueError(f"the SN study has no output path for {missing}")
    tables = sn_study_tables(sn_records(records), _score_tables(scores),
                             seeding.rng("sn_study_bootstrap"), n_boot, min_instances)
    frame = tables.pop("fig10_sn_methods")
    write_scaled_tables(tables, out, scale)
    figure10(frame, out["fig10_sn_methods"], scale)
    return {**tables, "fig10_sn_methods": frame}
