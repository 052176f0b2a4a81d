"""The HBART warm-up check (paper App. B.7): the benchmark's reference posteriors against the
same instances' posteriors with a longer warm-up.

Both stores of a pair hold the same sample, and the longer run draws from the same posterior
seed (:meth:`postrisk.tasks.key.TaskKey.streams`), so at factor 1 the two are the same run and
every change is zero. Per evaluation point the relative change of the posterior SD is
``sqrt(var_long / var_base) − 1``; its size is compared with what Monte Carlo error alone would
give two independent runs of the benchmark's length (the MCSE of the variance halved is the
relative error of the SD; the difference of two runs has √2 × that spread; the median of its
absolute value is 0.674 × the spread). Pure functions on arrays and frames, then thin I/O.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from postrisk.core.io import open_zarr
from postrisk.tasks.coverage import N_SHELLS
from postrisk.tasks.key import KEY_COLUMNS

#: Median of |Z| for a standard normal Z.
_HALF_NORMAL_MEDIAN = 0.6744897501960817
#: The variables of a task store the check reads (no draws).
_VARIABLES = ("posterior_var", "covered90", "shell_eval", "mcse_var")


def sd_relative_change(var_base: np.ndarray, var_long: np.ndarray) -> np.ndarray:
    """Per point, sqrt(var_long / var_base) − 1 (the relative change of the posterior SD)."""
    return np.sqrt(np.asarray(var_long, float) / np.asarray(var_base, float)) - 1.0


def monte_carlo_sd_change(mcse_base: np.ndarray, mcse_long: np.ndarray) -> np.ndarray:
    """Per point, the median |relative SD change| that Monte Carlo error alone gives two
    independent runs with these relative MCSEs of the variance."""
    spread = np.hypot(np.asarray(mcse_base, float), np.asarray(mcse_long, float)) / 2.0
    return _HALF_NORMAL_MEDIAN * spread


def _coverages(covered: np.ndarray, outer: np.ndarray) -> dict[str, float]:
    rest = ~outer
    return {"": float(covered.mean()),
            "_outer": float(covered[outer].mean()) if outer.any() else np.nan,
            "_rest": float(covered[rest].mean()) if rest.any() else np.nan}


def compare_instance(base: dict, long: dict) -> tuple[dict, dict[str, np.ndarray]]:
    """One instance's row of the check and its per-point arrays, from the two stores' arrays
    (``posterior_var``, ``covered90``, ``shell_eval``, ``mcse_var``) and ``max_rhat``."""
    if not np.array_equal(base["shell_eval"], long["shell_eval"]):
        raise ValueError("the two stores hold different evaluation points")
    outer = np.asarray(base["shell_eval"]) == N_SHELLS - 1
    change = sd_relative_change(base["posterior_var"], long["posterior_var"])
    mc = monte_carlo_sd_change(base["mcse_var"], long["mcse_var"])
    row = {"n_eval": int(change.size), "covered90_base": int(np.sum(base["covered90"])),
           "covered90_long": int(np.sum(long["covered90"])),
           "n_eval_outer": int(outer.sum())}
    for run, arrays in (("base", base), ("long", long)):
        for part, value in _coverages(np.asarray(arrays["covered90"], bool), outer).items():
            row[f"coverage90{part}_{run}"] = value
    row["coverage90_change"] = row["coverage90_long"] - row["coverage90_base"]
    row.update(sd_change_median=float(np.median(np.abs(change))),
               sd_change_p95=float(np.quantile(np.abs(change), 0.95)),
               sd_change_max=float(np.max(np.abs(change))),
               sd_change_mean=float(np.mean(change)),
               sd_change_mc_median=float(np.median(mc)),
               max_rhat_base=base["max_rhat"], max_rhat_long=long["max_rhat"])
    return row, {"change": change, "mc": mc, "outer": outer,
                 "covered_base": np.asarray(base["covered90"], bool),
                 "covered_long": np.asarray(long["covered90"], bool)}


def summarize(instances: pd.DataFrame, points: Sequence[dict[str, np.ndarray]]) -> pd.DataFrame:
    """Per (dataset, prior, factor): pooled coverage of both runs and its change, and the
    relative SD change's median, 95th percentile and maximum over every evaluation point of
    its instances, beside the paper's figures."""
    from postrisk.evaluation.paper import paper_value

    rows = []
    for (dataset, prior, factor), group in instances.groupby(["dataset", "prior", "factor"],
                                                             sort=False):
        pts = [points[i] for i in group.index]
        change = np.abs(np.concatenate([p["change"] for p in pts]))
        outer = np.concatenate([p["outer"] for p in pts])
        cov = {run: np.concatenate([p[f"covered_{run}"] for p in pts]) for run in ("base",
                                                                                    "long")}
        row = {"dataset": dataset, "prior": prior, "factor": int(factor),
               "warmup_base": int(group["warmup_base"].iloc[0]),
               "warmup_long": int(group["warmup_long"].iloc[0]),
               "instances": len(group), "points": int(change.size)}
        for run in ("base", "long"):
            row[f"coverage90_{run}"] = round(float(cov[run].mean()), 4)
            row[f"coverage90_outer_{run}"] = (round(float(cov[run][outer].mean()), 4)
                                              if outer.any() else np.nan)
        row["coverage90_change"] = round(float(cov["long"].mean() - cov["base"].mean()), 4)
        row.update(sd_change_median=round(float(np.median(change)), 4),
                   sd_change_p95=round(float(np.quantile(change, 0.95)), 4),
                   sd_change_max=round(float(change.max()), 4),
                   sd_change_mc_median=round(float(np.median(np.concatenate(
                       [p["mc"] for p in pts]))), 4),
                   paper_coverage90_change_below=paper_value(
                       "appB7", "warmup_coverage90_change", prior.upper(), "below"),
                   paper_sd_change_at_most_about=paper_value(
                       "appB7", "warmup_sd_change", prior.upper(), "at_most_about"))
        rows.append(row)
    return pd.DataFrame(rows)


def _read(path: str | Path) -> tuple[dict, dict]:
    ds = open_zarr(path, load=False)
    arrays = {name: ds[name].values for name in _VARIABLES}
    arrays["max_rhat"] = float(ds["rhat"].values.max()) if "rhat" in ds else np.nan
    attrs = {k: ds.attrs[k] for k in KEY_COLUMNS}
    settings = json.loads(ds.attrs["sampler_settings"])
    attrs.update(warmup=int(settings["warmup"]), draws=int(ds.sizes["draw"]),
                 posterior_s=json.loads(ds.attrs["timings"]).get("posterior_s"))
    return attrs, arrays


def warmup_check(base_stores: Sequence[str | Path], long_stores: Sequence[str | Path]
                 ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summary, per-instance table) of the check over pairs of stores (the benchmark's
    task store, the same instance at a longer warm-up), in the given order."""
    if len(base_stores) != len(long_stores):
        raise ValueError("one longer-warm-up store per benchmark store is needed")
    rows, points = [], []
    for base_path, long_path in zip(base_stores, long_stores, strict=True):
        (base_attrs, base), (long_attrs, long) = _read(base_path), _read(long_path)
        keys = {k: base_attrs[k] for k in KEY_COLUMNS}
        if keys != {k: long_attrs[k] for k in KEY_COLUMNS} or base_attrs["draws"] != \
                long_attrs["draws"]:
            raise ValueError(f"{long_path} is not {base_path} with a longer warm-up")
        if long_attrs["warmup"] % base_attrs["warmup"]:
            raise ValueError(f"{long_path}: warm-up {long_attrs['warmup']} is no multiple of "
                             f"the benchmark's {base_attrs['warmup']}")
        row, pts = compare_instance(base, long)
        rows.append({**keys, "factor": long_attrs["warmup"] // base_attrs["warmup"],
                     "warmup_base": base_attrs["warmup"], "warmup_long": long_attrs["warmup"],
                     "draws": base_attrs["draws"], **row,
                     "posterior_s_base": base_attrs["posterior_s"],
                     "posterior_s_long": long_attrs["posterior_s"]})
        points.append(pts)
    instances = pd.DataFrame(rows)
    return summarize(instances, points), instances.round(4)


def write_warmup_check(base_stores: Sequence[str | Path], long_stores: Sequence[str | Path],
                       summary_csv: str | Path, instances_csv: str | Path, scale: str
                       ) -> pd.DataFrame:
    """The check's two tables as CSV files (the run's scale first)."""
    summary, instances = warmup_check(base_stores, long_stores)
    for frame, out in ((summary, summary_csv), (instances, instances_csv)):
        frame.insert(0, "scale", scale)
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        frame.to_csv(out, index=False)
    return summary
