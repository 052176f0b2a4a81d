"""Which task instances are valid: the run-time seed rule (the paper's App. B.7).

A cell is (dataset, noise, coverage); its instances of the three priors share a seed.
A seed is valid when the cell's BNN instance converged (max point-wise R̂ ≤ ``RHAT_THRESHOLD``;
GP and HBART instances are always valid); the first ``seeds.valid_per_cell`` valid seeds are
fitted, scored and pooled in Table 3, for all three priors alike, and the stricter
``RHAT_STRICT`` subset feeds the sensitivity tables. This module is the one place where that
rule is written: the workflow's seed selection, the checks and score reports and the release
use it. Which seeds are *built* is the planner's (``postrisk.planning.seeds``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

#: A seed is valid when its BNN instance's max R̂ ≤ RHAT_THRESHOLD (the paper's App. B.7); the
#: sensitivity analysis restricts further to RHAT_STRICT.
RHAT_THRESHOLD = 1.05
RHAT_STRICT = 1.01


class TooFewValidSeeds(ValueError):
    """A cell has fewer valid seeds among its candidates than it needs (never a silent
    shortfall): the message names the cell, every candidate's max R̂ and the config key."""


def valid_seeds(candidates: list[int], max_rhat: dict[int, float] | None, n_valid: int,
                threshold: float = RHAT_THRESHOLD,
                cell: str = "") -> tuple[list[int], list[int]]:
    """The first ``n_valid`` seeds whose BNN instance has max R̂ ≤ threshold, and the dropped.

    ``max_rhat`` maps seed → the BNN instance's max point-wise R̂; None (no BNN in the grid)
    makes every seed valid (GP and HBART instances are always valid, App. B.7). Fewer than
    ``n_valid`` valid seeds among the candidates raises :class:`TooFewValidSeeds` naming
    ``cell``, every candidate's max R̂ and the config key ``seeds.candidates``.
    """
    valid, dropped = [], []
    for seed in sorted(candidates):
        if len(valid) == n_valid:
            break
        if max_rhat is None or max_rhat.get(seed, np.inf) <= threshold:
            valid.append(seed)
        else:
            dropped.append(seed)
    if len(valid) < n_valid:
        listed = ", ".join(f"seed {s}: " + (f"{max_rhat[s]:.4f}" if s in (max_rhat or {})
                                            else "no BNN store")
                           for s in sorted(candidates))
        raise TooFewValidSeeds(
            f"cell {cell or '?'}: {len(valid)} valid seed(s) (BNN max R̂ ≤ {threshold}) among "
            f"{len(candidates)} candidate(s), but {n_valid} are needed. Max R̂ per candidate: "
            f"{listed}. Raise the config key 'seeds.candidates' (now {len(candidates)}) so "
            "that more seeds are built, or lengthen the BNN chains ('posterior.bnn').")
    return valid, dropped


#: The columns that name a cell (a condition's ``cell``).
CELL = ["dataset", "noise", "coverage"]


def strict_seeds(valid: Sequence[int], max_rhat: Mapping[int, float] | None,
                 strict: float = RHAT_STRICT) -> list[int]:
    """The valid seeds of the sensitivity analysis: those whose BNN max R̂ ≤ ``strict`` (all of
    them when no BNN decides)."""
    return [s for s in valid if max_rhat is None or max_rhat[s] <= strict]


def mark_valid(instances: pd.DataFrame, n_valid: int, threshold: float = RHAT_THRESHOLD,
               strict: float = RHAT_STRICT) -> pd.DataFrame:
    """Add ``valid``: per cell, the first ``n_valid`` seeds whose BNN instance has max R̂ ≤
    ``threshold``, for every prior alike (the paper's App. B.7); cells without BNN instances
    use their first ``n_valid`` seeds. Add ``valid_strict``: valid and the seed's BNN R̂ ≤ ``strict``
    (the sensitivity analysis). Dropped instances stay in the frame, flagged."""
    out = instances.copy()
    out["valid"] = False
    out["valid_strict"] = False
    for _, cell in out.groupby(CELL):
        bnn = cell[cell["prior"] == "bnn"]
        max_rhat = dict(zip(bnn["seed"], bnn["max_rhat"], strict=True)) if len(bnn) else None
        label = "/".join(str(v) for v in cell[CELL].iloc[0])
        keep, _ = valid_seeds(sorted(cell["seed"].unique().tolist()), max_rhat, n_valid,
                              threshold, cell=label)
        keep_strict = strict_seeds(keep, max_rhat, strict)
        out.loc[cell.index[cell["seed"].isin(keep)], "valid"] = True
        out.loc[cell.index[cell["seed"].isin(keep_strict)], "valid_strict"] = True
    return out


def usable_seeds(candidates: Sequence[int], n_valid: int,
                 selection: Mapping | None = None) -> list[int]:
    """The seeds a condition's fits and scores use: the first ``n_valid`` of its cell's valid
    seeds (the seed selection's ``valid`` list, :func:`select_valid_seeds`) that are among its
    ``candidates`` when the BNN R̂ decides, else the first ``n_valid`` candidates. A prior built
    on fewer seeds than the cell (``seeds.per_prior``) whose seeds hold fewer than ``n_valid``
    valid ones raises :class:`TooFewValidSeeds`."""
    if selection is None:
        return valid_seeds(list(candidates), None, n_valid)[0]
    built = {int(s) for s in candidates}
    use = [int(s) for s in selection["valid"] if int(s) in built][:n_valid]
    if len(use) < n_valid:
        raise TooFewValidSeeds(
            f"{len(use)} of the cell's valid seeds {list(selection['valid'])} are among the "
            f"seeds {sorted(built)} this prior is built on, but {n_valid} are needed: raise "
            "the config key 'seeds.per_prior' for this prior, or remove it; or, if the cell's "
            "seed selection changed after this run was planned (the BNN-first pass), run the "
            "workflow again so that it plans from the new selection")
    return use


def select_valid_seeds(max_rhat: Mapping[int, float], n_valid: int, cell: str = "") -> dict:
    """A cell's seed selection from each candidate seed's BNN max R̂: the valid seeds, the
    dropped ones, the stricter R̂ ≤ ``RHAT_STRICT`` subset, the thresholds and every R̂."""
    max_rhat = {int(s): float(r) for s, r in max_rhat.items()}
    valid, dropped = valid_seeds(sorted(max_rhat), max_rhat, n_valid, RHAT_THRESHOLD, cell=cell)
    return {"valid": valid, "dropped": dropped, "threshold": RHAT_THRESHOLD,
            "valid_strict": strict_seeds(valid, max_rhat),
            "strict_threshold": RHAT_STRICT, "max_rhat": max_rhat}


def read_usable_seeds(candidates: Sequence[int], n_valid: int,
                      selection: Sequence[str | Path] = ()) -> list[int]:
    """:func:`usable_seeds`, with the cell's seed-selection file read from ``selection`` (one
    path where the BNN R̂ decides, none otherwise)."""
    chosen = json.loads(Path(selection[0]).read_text()) if selection else None
    return usable_seeds(candidates, n_valid, chosen)
