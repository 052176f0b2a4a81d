"""Cleaning and scaling covariates (paper App. B.1; docs/design.md, "Covariates"). Pure
functions on data frames."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from postrisk.covariates.registry import normalise_column_name


@dataclass(frozen=True)
class CleanedTable:
    """Covariates after cleaning (unscaled), the real target, and what cleaning did."""

    x: pd.DataFrame  # float64, columns in registry order, minus dropped categoricals
    target: pd.Series  # float64; for fitting prior hyper-parameters only
    binary_levels: dict[str, tuple[str, str]] = field(default_factory=dict)  # col -> (0, 1)
    dropped_columns: dict[str, str] = field(default_factory=dict)  # col -> reason
    rows_in: int = 0
    rows_with_missing: int = 0


@dataclass(frozen=True)
class MinMaxScaling:
    """Per-column min-max constants; ``reference`` names the dataset they were computed on."""

    columns: tuple[str, ...]
    minimum: np.ndarray
    maximum: np.ndarray
    reference: str

    def apply(self, x: pd.DataFrame) -> pd.DataFrame:
        if tuple(x.columns) != self.columns:
            raise ValueError(
                f"scaling constants of {self.reference!r} are for columns {list(self.columns)}, "
                f"got {list(x.columns)}"
            )
        return (x - self.minimum) / (self.maximum - self.minimum)


def resolve_columns(frame_columns: Sequence[str], wanted: Sequence[str],
                    aliases: Mapping[str, str] | None = None) -> dict[str, str]:
    """Map each wanted (registry) name to the source column it denotes.

    Matching is on :func:`normalise_column_name`; ``aliases`` maps other source spellings to
    registry names. A wanted name with no source column raises, listing what the source has.
    """
    by_key: dict[str, str] = {}
    for col in frame_columns:
        by_key.setdefault(normalise_column_name(col), col)
    for other, registry_name in (aliases or {}).items():
        key = normalise_column_name(other)
        if key in by_key:
            by_key.setdefault(normalise_column_name(registry_name), by_key[key])
    mapping, missing = {}, []
    for name in wanted:
        col = by_key.get(normalise_column_name(name))
        if col is None:
            missing.append(name)
        else:
            mapping[name] = col
    if missing:
        raise KeyError(
            f"columns {missing} of the registry are not in the source table, whose columns are "
            f"{list(frame_columns)}"
        )
    return mapping


def select_rows(frame: pd.DataFrame, rows: Mapping[str, Sequence[str]] | None,
                aliases: Mapping[str, str] | None = None) -> pd.DataFrame:
    """The rows of ``frame`` whose column ``c`` holds one of ``rows[c]`` for every ``c`` (a
    registry entry's row filter), compared as text; ``frame`` itself when ``rows`` is empty.
    Columns are matched as :func:`resolve_columns` does; a value that no row holds raises,
    naming the values the column has (a misspelt filter would otherwise keep nothing)."""
    if not rows:
        return frame
    mapping = resolve_columns(frame.columns, list(rows), aliases)
    keep = pd.Series(True, index=frame.index)
    for name, values in rows.items():
        column = frame[mapping[name]].astype(str).str.strip()
        present = set(column.unique())
        missing = [v for v in values if str(v) not in present]
        if missing:
            raise ValueError(f"row filter {name}: {missing} occur in no row; the column holds "
                             f"{sorted(present)[:20]}")
        keep &= column.isin([str(v) for v in values])
    return frame.loc[keep]


def clean_covariates(frame: pd.DataFrame, columns: Sequence[str], target: str,
                     aliases: Mapping[str, str] | None = None) -> CleanedTable:
    """Apply the column list first, then the generic rules within it (App. B.1).

    Numeric columns are kept; a categorical column with exactly two levels becomes 0/1 (levels
    sorted, the first is 0); one with more (or fewer) levels is dropped; rows with a missing
    value in a kept column or in the target are removed. Scaling is separate
    (:func:`fit_min_max`), so a dataset can be scaled with another's constants.
    """
    mapping = resolve_columns(frame.columns, [*columns, target], aliases)
    table = pd.DataFrame({name: frame[mapping[name]] for name in [*columns, target]})
    table = table.reset_index(drop=True)
    kept: dict[str, pd.Series] = {}
    binary: dict[str, tuple[str, str]] = {}
    dropped: dict[str, str] = {}
    for name in columns:
        col = table[name]
        numeric = _as_numeric(col)
        if numeric is not None:
            kept[name] = numeric
            continue
        levels = sorted(str(v) for v in col.dropna().unique())
        if len(levels) == 2:
            kept[name] = col.map(lambda v, lv=levels: np.nan if pd.isna(v)
                                 else float(lv.index(str(v))))
            binary[name] = (levels[0], levels[1])
        else:
            dropped[name] = f"categorical with {len(levels)} levels"
    x = pd.DataFrame(kept)
    y = pd.to_numeric(table[target], errors="coerce").astype(float)
    complete = x.notna().all(axis=1) & y.notna()
    return CleanedTable(
        x=x.loc[complete].reset_index(drop=True),
        target=y.loc[complete].reset_index(drop=True),
        binary_levels=binary,
        dropped_columns=dropped,
        rows_in=len(table),
        rows_with_missing=int((~complete).sum()),
    )


def _as_numeric(col: pd.Series) -> pd.Series | None:
    """The column as floats if it is numeric (also numbers stored as text), else None."""
    if pd.api.types.is_bool_dtype(col):
        return None
    if pd.api.types.is_numeric_dtype(col):
        return col.astype(float)
    converted = pd.to_numeric(col, errors="coerce")
    if converted.notna().sum() == col.notna().sum():
        return converted.astype(float)
    return None


def fit_min_max(x: pd.DataFrame, reference: str) -> MinMaxScaling:
    """Min-max constants of ``x``; a constant column cannot be scaled and raises."""
    lo = x.min(axis=0).to_numpy(dtype=float)
    hi = x.max(axis=0).to_numpy(dtype=float)
    constant = [c for c, a, b in zip(x.columns, lo, hi, strict=True) if not b > a]
    if constant:
        raise ValueError(f"{reference}: columns {constant} are constant and cannot be scaled")
    return MinMaxScaling(columns=tuple(x.columns), minimum=lo, maximum=hi, reference=reference)
