"""Compare two `results/` trees of the same configuration: are the numbers the same?

    python benchmarks/compare_results.py RESULTS_A RESULTS_B [--tolerance GLOB=RTOL ...]
                                                             [--rho-tolerance METHOD=ATOL ...]

Used to show that a change of the code (a refactoring, a new library version) leaves the
workflow's outputs alone, and to measure how far two runs of the same code differ:

* Zarr stores (covariates, samples, tasks, fits): every array bit for bit (NaN equal to NaN),
  dtype and dimensions included; attributes equal except times, library versions and paths
  (see ``IGNORED_ATTRS``). ``--tolerance 'fits/*/dkl.zarr=1e-10'`` accepts a relative difference
  up to RTOL in the arrays of the stores whose path (relative to the results root) matches.
* CSV tables (scores, checks): equal after dropping timing columns; ``--rho-tolerance dkl=0.01``
  accepts an absolute difference up to ATOL in the numeric columns of that method's rows.
* JSON files (prior parameters, tuning results): equal after dropping times.
* ``--rename OLD=NEW`` (repeatable): a name the change renamed on purpose. In tree A, a CSV
  column, a JSON key or an attribute's JSON key named OLD, and a CSV cell, JSON value or
  attribute whose whole text is OLD, are read as NEW before comparing.
* ``--added GLOB`` (repeatable): what the change added on purpose, leaving everything else as
  it was. In tree B, a file, a CSV column or a JSON list entry whose name matches GLOB, and a
  CSV row with a cell matching GLOB (in a column none of whose cells in A match it), are set
  aside before comparing and counted as additions, not differences.

Prints one line per difference and a summary; exits 1 if anything differs beyond the stated
tolerances, 0 otherwise. Run-to-run differences of one code version (measure them first) are the
tolerance to state for the comparison across versions.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

#: Attributes and keys that record when, where or with which library versions a file was made.
IGNORED_ATTRS = ("timings", "library_versions", "created", "created_at", "path", "hostname",
                 "seconds", "fit_seconds", "predict_seconds", "datetime_start",
                 "datetime_complete", "posterior_s")
TIMING_COLUMNS = ("fit_seconds", "predict_seconds", "posterior_s", "seconds")


def _is_timing(column: str) -> bool:
    """A measured wall time: a timing column, or one of them with a suffix (the warm-up check's
    ``posterior_s_base`` and ``posterior_s_long``)."""
    return column in TIMING_COLUMNS or any(column.startswith(t + "_") for t in TIMING_COLUMNS)
TIMING_VARIABLES = ("fit_seconds", "predict_seconds")


def _ignored(key: str) -> bool:
    """Times (``seconds``, ``seconds_*``, ``*_seconds``, ``*_s``), versions, paths."""
    return (key in IGNORED_ATTRS or "seconds" in key or key.endswith("_s"))


def _strip(value, renames: dict[str, str] | None = None):
    """A JSON value without time keys (recursively), with ``renames`` applied to its keys and
    to its string values."""
    renames = renames or {}
    if isinstance(value, dict):
        return {renames.get(k, k): _strip(v, renames) for k, v in value.items()
                if not _ignored(str(k))}
    if isinstance(value, list):
        return [_strip(v, renames) for v in value]
    if isinstance(value, str):
        return renames.get(value, value)
    return value


def _attr_value(value, renames: dict[str, str] | None = None):
    if isinstance(value, str):
        try:
            return _strip(json.loads(value), renames)
        except (json.JSONDecodeError, ValueError):
            return (renames or {}).get(value, value)
    return value


def _tolerance(rel: str, rules: list[tuple[str, float]]) -> float:
    return max([tol for pattern, tol in rules if fnmatch.fnmatch(rel, pattern)], default=0.0)


def compare_arrays(a: np.ndarray, b: np.ndarray, rtol: float) -> str | None:
    """None when equal (within ``rtol`` relative), else a short description."""
    if a.shape != b.shape:
        return f"shape {a.shape} vs {b.shape}"
    if a.dtype != b.dtype:
        return f"dtype {a.dtype} vs {b.dtype}"
    if a.dtype.kind not in "fc":
        return None if np.array_equal(a, b) else "values differ"
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    if same.all():
        return None
    diff = np.abs(a - b)
    scale = np.maximum(np.abs(a), np.abs(b))
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(same, 0.0, np.where(scale > 0, diff / scale, np.inf))
    worst = float(np.nanmax(np.where(np.isnan(rel), np.inf, rel)))
    if worst <= rtol:
        return None
    return (f"{int((~same).sum())} of {a.size} values differ, max relative difference "
            f"{worst:.3g} (tolerance {rtol:g})")


def compare_store(path_a: Path, path_b: Path, rtol: float,
                  renames: dict[str, str] | None = None) -> list[str]:
    import xarray as xr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = xr.open_zarr(path_a, zarr_format=3, consolidated=False).load()
        b = xr.open_zarr(path_b, zarr_format=3, consolidated=False).load()
    problems = []
    names_a, names_b = set(a.variables), set(b.variables)
    if names_a != names_b:
        problems.append(f"variables differ: only in A {sorted(names_a - names_b)}, "
                        f"only in B {sorted(names_b - names_a)}")
    for name in sorted(names_a & names_b):
        if name in TIMING_VARIABLES:
            continue
        va, vb = a.variables[name], b.variables[name]
        if va.dims != vb.dims:
            problems.append(f"{name}: dims {va.dims} vs {vb.dims}")
            continue
        issue = compare_arrays(np.asarray(va.values), np.asarray(vb.values), rtol)
        if issue:
            problems.append(f"{name}: {issue}")
    keys = (set(a.attrs) | set(b.attrs))
    for key in sorted(k for k in keys if not _ignored(k)):
        if _attr_value(a.attrs.get(key), renames) != _attr_value(b.attrs.get(key)):
            problems.append(f"attribute {key!r}: {str(a.attrs.get(key))[:200]!r} vs "
                            f"{str(b.attrs.get(key))[:200]!r}")
    return problems


def _read_csv(path: Path) -> pd.DataFrame:
    try:
        frame = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        return pd.DataFrame()
    return frame.drop(columns=[c for c in frame.columns if _is_timing(c)])


def _matches(value, patterns: list[str]) -> bool:
    return isinstance(value, str) and any(fnmatch.fnmatchcase(value, p) for p in patterns)


def set_aside_csv(a: pd.DataFrame, b: pd.DataFrame, added: list[str]
                  ) -> tuple[pd.DataFrame, int, int]:
    """``b`` without its added columns and rows (see ``--added``), and how many of each."""
    columns = [c for c in b.columns if c not in a.columns and _matches(c, added)]
    b = b.drop(columns=columns)
    new_rows = pd.Series(False, index=b.index)
    for column in b.columns:
        if b[column].dtype == object and column in a.columns and not \
                a[column].map(lambda v: _matches(v, added)).any():
            new_rows |= b[column].map(lambda v: _matches(v, added))
    return b[~new_rows].reset_index(drop=True), len(columns), int(new_rows.sum())


def compare_csv(path_a: Path, path_b: Path, rho_tol: dict[str, float],
                renames: dict[str, str] | None = None, added: list[str] | None = None,
                tally: dict[str, int] | None = None) -> list[str]:
    a, b = _read_csv(path_a), _read_csv(path_b)
    if added:
        b, n_columns, n_rows = set_aside_csv(a, b, added)
        if tally is not None:
            tally["columns"] += n_columns
            tally["rows"] += n_rows
    if renames:
        a = a.rename(columns=renames)
        for column in a.columns:
            if a[column].dtype == object:
                a[column] = a[column].map(lambda v: renames.get(v, v) if isinstance(v, str)
                                          else v)
    if list(a.columns) != list(b.columns) or a.shape != b.shape:
        return [f"shape/columns differ: {a.shape} {list(a.columns)} vs {b.shape} "
                f"{list(b.columns)}"]
    problems = []
    for column in a.columns:
        ca, cb = a[column], b[column]
        if ca.dtype.kind in "fc" and cb.dtype.kind in "fc":
            va, vb = ca.to_numpy(float), cb.to_numpy(float)
            same = (va == vb) | (np.isnan(va) & np.isnan(vb))
            if same.all():
                continue
            tol = np.zeros(len(a))
            if "method" in a.columns:
                tol = a["method"].map(rho_tol).fillna(0.0).to_numpy(float)
            diff = np.where(same, 0.0, np.abs(va - vb))
            over = ~same & ~(diff <= tol)
            if over.any():
                rows = np.flatnonzero(over)
                where = (a["method"].iloc[rows].unique().tolist() if "method" in a.columns
                         else rows[:5].tolist())
                problems.append(f"{column}: {over.sum()} value(s) differ, max |Δ| "
                                f"{np.nanmax(np.where(over, diff, 0)):.3g} ({where})")
        elif not ca.equals(cb):
            problems.append(f"{column}: values differ")
    return problems


def _without_added(value, added: list[str]):
    """A JSON value without the list entries whose text matches ``added`` (recursively)."""
    if isinstance(value, dict):
        return {k: _without_added(v, added) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_added(v, added) for v in value if not _matches(v, added)]
    return value


def compare_json(path_a: Path, path_b: Path, renames: dict[str, str] | None = None,
                 added: list[str] | None = None) -> list[str]:
    a = _strip(json.loads(path_a.read_text()), renames)
    b = _strip(json.loads(path_b.read_text()))
    if added:
        b = _without_added(b, added)
    if a == b:
        return []
    if isinstance(a, dict) and isinstance(b, dict):
        keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        return [f"keys differ: {keys}"]
    return ["content differs"]


def files(root: Path) -> dict[str, Path]:
    """Stores, CSV and JSON files under ``root`` by relative path (logs and benchmarks not)."""
    out = {}
    for path in root.rglob("*"):
        rel = path.relative_to(root).as_posix()
        if rel.split("/")[0] in ("logs", "benchmarks") or any(p.startswith(".") for p in
                                                              rel.split("/")):
            continue
        if path.suffix == ".zarr" and path.is_dir():
            out[rel] = path
        elif path.suffix in (".csv", ".json") and ".zarr/" not in rel + "/" and path.is_file():
            if ".zarr" not in rel:
                out[rel] = path
    return out


def compare(root_a: Path, root_b: Path, tolerances: list[tuple[str, float]],
            rho_tol: dict[str, float], renames: dict[str, str] | None = None,
            added: list[str] | None = None, tally: dict[str, int] | None = None
            ) -> tuple[int, list[str]]:
    added = added or []
    tally = {"files": 0, "columns": 0, "rows": 0} if tally is None else tally
    fa, fb = files(root_a), files(root_b)
    lines = []
    for rel in sorted(set(fa) ^ set(fb)):
        if rel in fb and _matches(Path(rel).stem, added):
            tally["files"] += 1
            continue
        lines.append(f"{rel}: only in {'A' if rel in fa else 'B'}")
    checked = 0
    for rel in sorted(set(fa) & set(fb)):
        checked += 1
        if rel.endswith(".zarr"):
            problems = compare_store(fa[rel], fb[rel], _tolerance(rel, tolerances), renames)
        elif rel.endswith(".csv"):
            problems = compare_csv(fa[rel], fb[rel], rho_tol, renames, added, tally)
        else:
            problems = compare_json(fa[rel], fb[rel], renames, added)
        lines += [f"{rel}: {p}" for p in problems]
    return checked, lines


def _pairs(values: list[str], kind) -> list[tuple[str, float]]:
    out = []
    for value in values:
        key, _, number = value.rpartition("=")
        if not key:
            raise SystemExit(f"expected NAME=VALUE, got {value!r}")
        out.append((key, kind(number)))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results_a", type=Path)
    parser.add_argument("results_b", type=Path)
    parser.add_argument("--tolerance", action="append", default=[],
                        help="GLOB=RTOL: relative tolerance for the arrays of matching stores")
    parser.add_argument("--rho-tolerance", action="append", default=[],
                        help="METHOD=ATOL: absolute tolerance in that method's CSV rows")
    parser.add_argument("--rename", action="append", default=[],
                        help="OLD=NEW: a name renamed on purpose (read as NEW in tree A)")
    parser.add_argument("--added", action="append", default=[],
                        help="GLOB: files, columns and rows tree B added on purpose")
    args = parser.parse_args(argv)
    renames = dict(_pairs(args.rename, str))
    tally = {"files": 0, "columns": 0, "rows": 0}
    checked, lines = compare(args.results_a, args.results_b, _pairs(args.tolerance, float),
                             dict(_pairs(args.rho_tolerance, float)), renames, args.added,
                             tally)
    for line in lines:
        print(line)
    if args.added:
        print(f"set aside as additions in B: {tally['files']} file(s), {tally['columns']} "
              f"column(s), {tally['rows']} row(s)")
    print(f"compared {checked} files: "
          + ("identical within the stated tolerances" if not lines
             else f"{len(lines)} difference(s)"))
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
