"""What the cost benchmark's points are scaled by before a curve is fitted to them
(``benchmarks/cost_model.py fit``): the paper-settings slice's measured job times (anchors) and
a later day's machine speed (reference units timed again that day)."""

from __future__ import annotations

import csv
import statistics
from pathlib import Path

#: Fits per method unit (a 30-trial sweep and this many seeds' fits).
UNIT_FITS = 10


def read_points(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with path.open() as fh:
        return list(csv.DictReader(fh))



def slice_anchors(anchor: Path, results: Path) -> dict[tuple[str, str], tuple[int, float]]:
    """(stage, name) -> (rows, seconds of one unit at the paper's settings, note) from the
    slice's job times; fit units rescaled from its 3 seeds' fits to 10 with its fit stores'
    seconds (where those are not at hand, the 3-seed job's seconds, which the note says)."""
    import pandas as pd

    if not anchor.exists():
        return {}
    frame = pd.read_csv(anchor)
    frame = frame[frame["units"] == 1]
    out = {}
    for (stage, entry), group in frame.groupby(["stage", "cost_entry"]):
        seconds = float(group["seconds"].mean())
        note = ""
        if stage == "fit":
            extra = _slice_fit_seconds(results, entry)
            if extra is None:  # its fit stores are not here: the job's own seeds only
                note = "its job of 3 seeds (the fit stores, for 7 more, not at hand)"
            else:
                seconds += (UNIT_FITS - extra[1]) * extra[0]
        out[(stage, entry)] = (int(group["rows"].iloc[0]), seconds, note)
    return out


def _slice_fit_seconds(results: Path, method: str) -> tuple[float, int] | None:
    """Mean fit + predict seconds per seed of ``method``'s fit stores in the slice's results,
    and how many seeds each fitted."""
    import numpy as np

    from postrisk.core.io import open_zarr

    stores = sorted(results.glob(f"fits/**/{method}.zarr")) if results.exists() else []
    if not stores:
        return None
    per_seed, seeds = [], []
    for store in stores:
        ds = open_zarr(store)
        per_seed.append(float(np.nanmean(ds["fit_seconds"].values + ds["predict_seconds"].values)))
        seeds.append(int(ds.sizes["seed"]))
    return float(np.mean(per_seed)), int(round(np.mean(seeds)))


def speed_factors(reference: Path, points: list[dict]) -> dict[str, tuple[float, int]]:
    """date -> (factor, units): how much longer the points' machine took on the reference day
    (the first date of ``points``) than on that date, the median ratio over the units that
    ``reference`` (a ``measure --out`` of a few reference units on that date) and ``points``
    both hold. The machine's speed drifts from day to day; the factor puts a day's points on
    the reference day's footing."""
    again = read_points(reference)
    if not again:
        return {}
    first = {(p["dataset"], p["stage"], p["name"]): float(p["seconds"]) for p in points
             if p["date"] == min(q["date"] for q in points)}
    ratios = [first[k] / float(p["seconds"]) for p in again
              if (k := (p["dataset"], p["stage"], p["name"])) in first]
    return {again[0]["date"]: (statistics.median(ratios), len(ratios))} if ratios else {}
