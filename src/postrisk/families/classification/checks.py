"""The reference posteriors' check over classification instances: does each instance's stored
π draws cover the true class probabilities at the rate a perfect sampler would?

Per instance: the share of (evaluation point, class) pairs whose π*_k(x) lies in the central
90% interval of the D stored draws, recomputed from the draws; pooled over instances with a
t-interval over the instances' shares (points of one instance are dependent, instances are
not), against the nominal of a perfect sampler at D, 0.9·(D − 1)/(D + 1) (not 0.90). Also the
max R̂ and min ESS per instance and the seconds it took.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from postrisk.classification.store import validate_classification_store
from postrisk.evaluation.posterior_checks import mean_t_interval, perfect_sampler_coverage
from postrisk.tasks.diagnostics import covered_central


def instance_row(path: str | Path) -> dict:
    """One instance's row: key, sizes, amplitude, recomputed coverage of π*, diagnostics."""
    ds = validate_classification_store(path)
    draws = ds["prob_draws"].values
    d = draws.shape[0]
    covered = covered_central(draws.reshape(d, -1), ds["prob_true_eval"].values.reshape(-1))
    timings = json.loads(ds.attrs["timings"])
    summary = json.loads(ds.attrs["sampler_summary"])
    return {
        **{k: ds.attrs[k] for k in ("dataset", "prior", "noise", "coverage", "classes",
                                    "seed")},
        "n": int(ds.attrs["n"]), "n_eval": int(ds.attrs["n_eval"]), "draws": d,
        "amplitude": float(ds.attrs["amplitude"]),
        "entropy_share_prior": float(ds.attrs["entropy_share_prior"]),
        "coverage90": float(covered.mean()),
        "coverage_nominal": perfect_sampler_coverage(d),
        "max_rhat": float(ds["rhat"].max()) if "rhat" in ds else np.nan,
        "min_ess": float(ds["ess"].min()) if "ess" in ds else np.nan,
        "divergences": int(sum(summary.get("per_chain", {}).get("divergences", [0]))),
        "seconds": float(timings.get("sample_s", 0.0) + timings.get("posterior_s", 0.0)),
    }


def calibration_table(paths: Sequence[str | Path]) -> pd.DataFrame:
    """One row per instance, then a pooled row (``dataset`` "pooled"): the mean coverage with
    its 95% t-interval over instances and whether the nominal lies inside (``within``)."""
    rows = pd.DataFrame([instance_row(p) for p in paths])
    mean, lo, hi = mean_t_interval(rows["coverage90"].to_numpy())
    nominal = float(rows["coverage_nominal"].mean())
    pooled = {"dataset": "pooled", "coverage90": mean, "coverage_low": lo, "coverage_high": hi,
              "coverage_nominal": nominal, "within": bool(lo <= nominal <= hi),
              "max_rhat": rows["max_rhat"].max(), "min_ess": rows["min_ess"].min(),
              "seconds": rows["seconds"].sum(), "instances": len(rows)}
    table = pd.concat([rows, pd.DataFrame([pooled])], ignore_index=True)
    for column in ("classes", "seed", "n", "n_eval", "draws", "divergences", "instances"):
        table[column] = table[column].astype("Int64")  # integers, blank where not per instance
    return table
