"""The Disentanglement Error experiment (de Jong, Sburlea, Sabatelli & Valdenegro-Toro, 2024,
*Measuring Orthogonality as the Blind-Spot of Uncertainty Disentanglement*) on a regression task
(docs/design.md, "Metrics"); the metric itself is
:mod:`postrisk.evaluation.disentanglement`.

Procedure
---------
One method, one task, ``runs`` runs (default :data:`N_RUNS` = 5). In every run the method is
fitted once per level of two experiments, always predicting at the task's evaluation points
``x_eval``:

* **data size** (``experiment = "data_size"``): for each kept fraction f in
  :data:`DATA_FRACTIONS`, the training set is a uniform random subset, without replacement, of
  k(f) = min(n, max(:data:`MIN_ROWS`, round(f·n))) of the task's n training rows
  (:func:`subsample_rows`). The floor of :data:`MIN_ROWS` = 10 rows exists because a fit on
  round(0.01·n) rows (3 rows for n = 300) is meaningless for most methods (a network, a
  boosted ensemble, an evidence-maximised BLR with more weights than rows); levels whose k
  coincide then share their training rows and differ only in the fit's random state.
  The subsample is **uniform, never stratified on y**: the public implementation stratified the
  split on the unique target values, which for a continuous target (every value unique) cannot
  drop any row, so its "data size" experiment never reduced the data.
* **label noise** (``experiment = "label_noise"``): for each fraction p in
  :data:`LABEL_NOISE_FRACTIONS` (0, 0.1, …, 1), all n rows with round(p·n) of them chosen
  uniformly and their targets permuted among themselves (:func:`permute_labels`): the marginal
  distribution of the targets is kept, their link to x is broken for a fraction p of the rows.

"round" is round-half-up, ⌊x + ½⌋.

Randomness (everything is a function of ``seed``): the rows of run r in experiment e come from
``np.random.default_rng(SeedSequence([seed, r, e]))`` (e = 0 data size, 1 label noise), a fresh
generator per level. Both manipulations start with one uniform permutation of the rows, so within
a run the subsets are **nested** (the level-f subset is the first k(f) rows of one permutation,
sorted) and the label-noise rows chosen at p are a subset of those chosen at p' > p: common
random numbers across levels, so that a run's estimates respond to the level rather than to
which rows happened to be drawn (and the true EU below is non-increasing in f within a run). The
fit's ``random_state`` is drawn from ``SeedSequence([seed, r, e, round(level·10⁶)])`` (31 bits),
one per (run, experiment, level); a level's rows and fit do not depend on which other levels are
run.

Output: one row per (experiment, level, run) with the fit's status, the test-set means
``mean_au`` / ``mean_eu`` of the reported aleatoric and epistemic variances and the fit's
``score`` (NaN for a failed fit; a failed fit never raises, see
:func:`postrisk.methods.runner.run_fit`).

Score and test targets (for the "score" definition of the summary)
------------------------------------------------------------------
``score`` = 1 − MAE, the mean over ``x_eval`` of |predicted mean − test target|, as the public
package scores a regression model. A task store holds f* and the noise variances at the
evaluation points but no noisy targets there, so the test targets are drawn once per task:
y_eval = f*(x_eval) + N(0, ``noise_var_eval``), from ``SeedSequence([seed, 0, 2])`` (a store
with a ``y_eval`` variable uses that instead). The data-size experiment scores every level
against y_eval. In the label-noise experiment, as in the package, the same fraction p of the
test targets is permuted (:func:`permute_labels`, from ``SeedSequence([seed, r, 3])``, a fresh
generator per level, so the permuted test rows are nested across levels like the training
rows). Experiment codes 2 and 3 in these seeds are reserved for the test targets; the
estimates ``mean_au`` / ``mean_eu`` and the training data never depend on them.

Ground truth (GP-prior tasks; ``ground_truth`` defaults to "the task's prior is gp")
-----------------------------------------------------------------------------------
The task knows f*, the noise variances σ²_ε and the prior GP(0, a²k) f* was drawn from
(``prior_params``: ``kernel``, ``a``), so the experiment's true uncertainties are exact:

* ``true_mean_eu``: the mean over ``x_eval`` of the closed-form posterior variance of f given
  the level's training inputs with their known noise variances (``noise_var_train`` of the kept
  rows), under the task's own prior (:func:`postrisk.gp.exact.posterior_moments`; no sampling).
  The posterior variance does not depend on the targets, so it is the same for every
  label-noise level (all rows).
* ``true_mean_au``: in the data-size experiment, mean(``noise_var_eval``), the same at every
  level (less data does not change the noise). In the label-noise experiment, **the ground
  truth is defined as** the mean over the evaluation points (where the estimates are averaged)
  of the variance of a label at x under the manipulation: the label is the original target
  (variance σ²_ε(x) around f*(x)) with probability 1 − p and a randomly drawn other target
  (mean ȳ, variance V_y, the mean and population variance of ``y_train``) with probability p,
  so

      Var(x; p) = (1 − p)·σ²_ε(x) + p·V_y + p(1 − p)·(f*(x) − ȳ)²,

  which equals the data-size experiment's truth at p = 0. This idealises the permutation (a
  permuted row may keep its own target; the drawn target comes from the chosen rows only).

Summary (:func:`disentanglement_summary`)
----------------------------------------
Both definitions of :mod:`postrisk.evaluation.disentanglement` are reported, the setting
``definition`` naming the headline one (``de_headline``).

"level" (the default). Per method and task: per level, the test-set mean AU and EU averaged
over the runs whose fit is ok (a level with no ok run is dropped; fewer than 3 levels left in
either experiment makes all four correlations and DE "not applicable"); then the correlations
C_aa = corr(U_a, AU), C_ea = corr(U_a, EU) over the label-noise levels and C_ae = corr(U_e, AU),
C_ee = corr(U_e, EU) over the data-size levels (an estimate constant across levels counts as
correlation 0; a manipulated uncertainty with a single value is "not applicable"), and
DE = (|1 − C_aa| + |C_ea| + |C_ae| + |1 − C_ee|)/4
(:func:`postrisk.evaluation.disentanglement.disentanglement_error`, α = β = γ = 1).

* the metric variant (``c_aa`` … ``de``): U_a = p, U_e = −log f, as in the paper;
* the ground-truth variant (``c_aa_true`` … ``de_true``; when the truth columns are present and
  finite): U_a = ``true_mean_au`` per label-noise level and U_e = ``true_mean_eu`` per data-size
  level, each averaged over the same ok runs as the estimates. The oracle (estimates := truth)
  has C_aa = C_ee = 1 and, its truth being constant across the other experiment's levels,
  C_ea = C_ae = 0: DE = 0.

"score" (``c_aa_score`` … ``de_score``, the package's procedure). Per run, the ok levels'
test-set means are correlated (the same ``correlation``, Pearson by default) with the run's
negated ``score`` across the levels of each experiment
(:func:`~postrisk.evaluation.disentanglement.score_correlations`), one DE per run by the same
formula; ``de_score`` is the mean of the per-run DEs and ``c_*_score`` the means of the per-run
correlations, over the ``n_runs_score`` runs with all four correlations (a run with fewer than
3 ok levels in an experiment or a score constant across them has none). Not copied from the
package: its repeated aleatoric term and its stratified data-size split.
"""

from __future__ import annotations

import json
import logging
import math
from typing import Any

import numpy as np
import pandas as pd

from postrisk.core.progress import progress_steps
from postrisk.evaluation.disentanglement import (
    DEFINITIONS,
    MIN_LEVELS,
    disentanglement_correlations,
    disentanglement_error,
    score_disentanglement,
)
from postrisk.gp.exact import posterior_moments
from postrisk.gp.kernels import Kernel
from postrisk.methods.records import STATUS_OK
from postrisk.methods.runner import run_fit
from postrisk.tasks.key import KEY_COLUMNS
from postrisk.tasks.task import Task

logger = logging.getLogger(__name__)

__all__ = ["DATA_FRACTIONS", "DEFINITIONS", "EXPERIMENTS", "LABEL_NOISE_FRACTIONS",
           "MIN_LEVELS", "MIN_ROWS", "N_RUNS", "disentanglement_summary", "eval_targets",
           "kept_rows", "permute_labels", "run_experiment", "subsample_rows"]

#: Kept fractions f of the training rows (data-size experiment); U_e = −log f.
DATA_FRACTIONS = (0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 1.0)
#: Fractions p of rows whose targets are permuted (label-noise experiment); U_a = p.
LABEL_NOISE_FRACTIONS = tuple(round(0.1 * i, 1) for i in range(11))
#: Runs per level.
N_RUNS = 5
#: A data-size level keeps at least this many rows (capped at n): see the module docstring.
MIN_ROWS = 10
#: The two experiments, with the codes that enter their seeds.
EXPERIMENTS = {"data_size": 0, "label_noise": 1}
CORRELATIONS = ("c_aa", "c_ea", "c_ae", "c_ee")
#: Seed codes of the test targets' draw and of their label-noise permutation (docstring).
_EVAL_TARGETS, _TEST_PERMUTATION = 2, 3


def _round(x: float) -> int:
    """Round half up."""
    return int(math.floor(x + 0.5))


def _check_fraction(fraction: float, name: str) -> float:
    fraction = float(fraction)
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"{name} must lie in [0, 1], got {fraction}")
    return fraction


def kept_rows(n: int, fraction: float, min_rows: int = MIN_ROWS) -> int:
    """k(f) = min(n, max(min_rows, round(f·n))): the rows a data-size level keeps."""
    fraction = _check_fraction(fraction, "fraction")
    return min(int(n), max(int(min_rows), _round(fraction * n)))


def subsample_rows(n: int, fraction: float, rng: np.random.Generator,
                   min_rows: int = MIN_ROWS) -> np.ndarray:
    """Sorted indices of k = :func:`kept_rows` (n, fraction) rows drawn uniformly without
    replacement: the first k entries of ``rng.permutation(n)`` (so generators in the same
    state give nested subsets for growing fractions). Never stratified on the target."""
    k = kept_rows(n, fraction, min_rows)
    return np.sort(rng.permutation(int(n))[:k])


def permute_labels(y, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """A copy of ``y`` with the targets of round(fraction·n) rows, chosen uniformly (the first
    entries of ``rng.permutation(n)``), permuted among themselves (``rng.permutation``); the
    other rows unchanged. ``fraction`` 0 returns a copy of ``y``."""
    y = np.asarray(y)
    fraction = _check_fraction(fraction, "fraction")
    out = y.copy()
    n = y.shape[0]
    k = _round(fraction * n)
    if k < 2:
        return out
    chosen = rng.permutation(n)[:k]
    out[chosen] = y[chosen[rng.permutation(k)]]
    return out


def _fit_seed(seed: int, run: int, experiment: str, level: float) -> int:
    ss = np.random.SeedSequence([int(seed), int(run), EXPERIMENTS[experiment],
                                 _round(float(level) * 1e6)])
    return int(ss.generate_state(1, dtype=np.uint32)[0] >> 1)


def _data_rng(seed: int, run: int, experiment: str) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([int(seed), int(run),
                                                         EXPERIMENTS[experiment]]))


def eval_targets(task: Task, seed: int) -> np.ndarray:
    """The test targets at ``x_eval``: the store's ``y_eval`` where it has one, else
    f*(x_eval) + N(0, noise_var_eval) drawn from ``SeedSequence([seed, 0, 2])``."""
    if "y_eval" in task.ds:
        return np.asarray(task.ds["y_eval"].values, dtype=np.float64)
    f = np.asarray(task.f_true_eval, dtype=np.float64)
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0, _EVAL_TARGETS]))
    noise_sd = np.sqrt(np.asarray(task.noise_var_eval, dtype=np.float64))
    return f + noise_sd * rng.standard_normal(f.shape[0])


def _score(mean: np.ndarray, y_test: np.ndarray) -> float:
    """1 − MAE of the predicted mean against the test targets."""
    return float(1.0 - np.mean(np.abs(np.asarray(mean, dtype=np.float64) - y_test)))


class _Truth:
    """The exact true uncertainties of one GP-prior task (module docstring)."""

    def __init__(self, task: Task):
        ds = task.ds
        params = json.loads(ds.attrs["prior_params"])
        self.kernel = Kernel.from_dict(params["kernel"])
        self.a = float(params["a"])
        self.x = task.x_train
        self.y = np.asarray(task.y_train, dtype=np.float64)
        self.x_eval = task.x_eval
        self.noise_var = np.asarray(ds["noise_var_train"].values, dtype=np.float64)
        self.noise_var_eval = np.asarray(task.noise_var_eval, dtype=np.float64)
        self.f_true_eval = np.asarray(task.f_true_eval, dtype=np.float64)
        self.au_size = float(np.mean(self.noise_var_eval))
        self._eu: dict[tuple[int, ...], float] = {}

    def mean_eu(self, rows: np.ndarray) -> float:
        key = tuple(rows.tolist())
        if key not in self._eu:
            _, var = posterior_moments(self.kernel, self.a, self.x[rows], self.y[rows],
                                       self.noise_var[rows], self.x_eval)
            self._eu[key] = float(np.mean(var))
        return self._eu[key]

    def mean_au_label(self, p: float) -> float:
        y_bar, v_y = float(np.mean(self.y)), float(np.var(self.y))
        var = ((1 - p) * self.noise_var_eval + p * v_y
               + p * (1 - p) * (self.f_true_eval - y_bar) ** 2)
        return float(np.mean(var))


def _levels(values, name: str) -> tuple[float, ...]:
    levels = tuple(_check_fraction(v, name) for v in values)
    if len(set(levels)) != len(levels):
        raise ValueError(f"{name} has repeated levels: {levels}")
    return levels


def run_experiment(method: Any, config: dict | None, task: Task, *,
                   data_fractions=DATA_FRACTIONS, label_noise_fractions=LABEL_NOISE_FRACTIONS,
                   runs: int = N_RUNS, seed: int = 0, ground_truth: bool | None = None,
                   n_threads: int = 1) -> pd.DataFrame:
    """The data-size and label-noise experiments of one method on one task (module
    docstring): one row per (experiment, level, run).

    Columns: ``method``, the task key (``dataset``, ``prior``, ``noise``, ``coverage``,
    ``seed``), ``experiment`` ("data_size" / "label_noise"), ``level`` (f or p), ``run``,
    ``n_train``, ``status``, ``error``, ``fit_seconds``, ``mean_au``, ``mean_eu``, ``score``
    (1 − MAE against the test targets, module docstring) and, with
    ``ground_truth`` (default: the task's prior is "gp"; True for another prior is an error),
    ``true_mean_au``, ``true_mean_eu``.

    ``method``: a registry name or method class, fitted through
    :func:`postrisk.methods.runner.run_fit` with ``config``; never raises for a failed fit.
    Progress: one line per fit through :func:`postrisk.core.progress.progress_steps`.
    """
    config = dict(config or {})
    data_fractions = _levels(data_fractions, "data_fractions")
    label_noise_fractions = _levels(label_noise_fractions, "label_noise_fractions")
    runs = int(runs)
    if runs < 1:
        raise ValueError(f"runs must be ≥ 1, got {runs}")
    prior = task.ds.attrs.get("prior")
    if ground_truth is None:
        ground_truth = prior == "gp"
    if ground_truth and prior != "gp":
        raise ValueError(f"the ground truth needs a GP-prior task, this one's prior is {prior!r}")
    truth = _Truth(task) if ground_truth else None
    key = task.key
    label = method if isinstance(method, str) else str(getattr(method, "name", method))
    x, y, x_eval = task.x_train, task.y_train, task.x_eval
    y_eval = eval_targets(task, seed)
    n = x.shape[0]
    plan = [(r, e, lv) for r in range(runs)
            for e, levels in (("data_size", data_fractions), ("label_noise", label_noise_fractions))
            for lv in levels]
    rows: list[dict] = []
    description = f"[{label}] disentanglement experiment on " + "/".join(
        str(key[k]) for k in KEY_COLUMNS)
    with progress_steps(len(plan), description, logger) as reporter:
        for run, experiment, level in plan:
            rng = _data_rng(seed, run, experiment)
            if experiment == "data_size":
                idx = subsample_rows(n, level, rng)
                x_fit, y_fit, y_test = x[idx], y[idx], y_eval
            else:
                idx = np.arange(n)
                x_fit, y_fit = x, permute_labels(y, level, rng)
                y_test = permute_labels(y_eval, level, np.random.default_rng(
                    np.random.SeedSequence([int(seed), run, _TEST_PERMUTATION])))
            record = run_fit(method, config, x_fit, y_fit, x_eval,
                             random_state=_fit_seed(seed, run, experiment, level),
                             n_threads=n_threads)
            ok = record.status == STATUS_OK
            row = {"method": label, **{k: key[k] for k in KEY_COLUMNS},
                   "experiment": experiment, "level": float(level), "run": run,
                   "n_train": int(idx.size), "status": record.status, "error": record.error,
                   "fit_seconds": float(record.fit_seconds),
                   "mean_au": float(np.mean(record.aleatoric_var)) if ok else math.nan,
                   "mean_eu": float(np.mean(record.epistemic_var)) if ok else math.nan,
                   "score": _score(record.mean, y_test) if ok else math.nan}
            if truth is not None:
                row["true_mean_au"] = (truth.au_size if experiment == "data_size"
                                       else truth.mean_au_label(level))
                row["true_mean_eu"] = truth.mean_eu(idx)
            rows.append(row)
            if not ok:
                logger.warning("[%s] %s level %g run %d failed: %s", label, experiment, level,
                               run, record.error)
            reporter.advance(message=f"{experiment} {level:g} run {run}: {record.status} in "
                             f"{record.fit_seconds:.2f} s")
    return pd.DataFrame(rows)


def _per_level(frame: pd.DataFrame, experiment: str, columns: list[str]) -> pd.DataFrame:
    """Per level (ascending) the mean over the ok runs of ``columns``; levels without an ok run
    are dropped."""
    sub = frame[(frame["experiment"] == experiment) & (frame["status"] == STATUS_OK)]
    return sub.groupby("level")[columns].mean().sort_index()


def _correlations(label: pd.DataFrame, size: pd.DataFrame, method: str,
                  truth: bool) -> dict:
    if len(label) < MIN_LEVELS or len(size) < MIN_LEVELS:
        return {c: None for c in CORRELATIONS}
    kwargs = {}
    if truth:
        kwargs = {"label_uncertainty": label["true_mean_au"].to_numpy(),
                  "size_uncertainty": size["true_mean_eu"].to_numpy()}
    corr = disentanglement_correlations(
        label.index.to_numpy(dtype=float), label["mean_au"].to_numpy(),
        label["mean_eu"].to_numpy(), size.index.to_numpy(dtype=float),
        size["mean_au"].to_numpy(), size["mean_eu"].to_numpy(), method, **kwargs)
    return {c: (None if corr.get(c) is None or not np.isfinite(corr[c]) else float(corr[c]))
            for c in CORRELATIONS}


def _with_de(corr: dict, suffix: str = "") -> dict:
    out = {f"{c}{suffix}": corr[c] for c in CORRELATIONS}
    de = None
    if all(corr[c] is not None for c in CORRELATIONS):
        de = disentanglement_error(corr)
    out[f"de{suffix}"] = None if de is None or not np.isfinite(de) else float(de)
    return out


_SCORE_KEYS = (*CORRELATIONS, "de")


def _score_variant(sub: pd.DataFrame, method: str) -> dict:
    """``c_aa_score`` … ``de_score`` and ``n_runs_score`` of one method and task (module
    docstring); ``None`` and 0 without a ``score`` column or with fewer than :data:`MIN_LEVELS`
    levels in an experiment."""
    none = {**{f"{k}_score": None for k in _SCORE_KEYS}, "n_runs_score": 0}
    if "score" not in sub.columns:
        return none
    runs = sorted(sub["run"].unique())
    ok = sub[sub["status"] == STATUS_OK]
    arrays = []
    for experiment in ("label_noise", "data_size"):
        levels = sorted(sub.loc[sub["experiment"] == experiment, "level"].unique())
        if len(levels) < MIN_LEVELS:
            return none
        rows = ok[ok["experiment"] == experiment]
        for column in ("score", "mean_au", "mean_eu"):
            table = rows.pivot_table(index="run", columns="level", values=column,
                                     aggfunc="mean")
            arrays.append(table.reindex(index=runs, columns=levels).to_numpy(dtype=float))
    result = score_disentanglement(*arrays, method=method)
    out = {f"{k}_score": result[k] for k in _SCORE_KEYS}
    return {**out, "n_runs_score": int(result["n_runs"])}


def disentanglement_summary(frame: pd.DataFrame, correlation: str = "pearson",
                            definition: str = "level") -> pd.DataFrame:
    """One row per method and task of a :func:`run_experiment` frame (or several
    concatenated): ``c_aa``, ``c_ea``, ``c_ae``, ``c_ee``, ``de`` (U_a = p, U_e = −log f); with
    the truth columns present and finite, ``c_aa_true`` … ``de_true`` (U_a = true_mean_au,
    U_e = true_mean_eu); ``n_fits``, ``n_failed`` and ``status`` ("ok", or "not applicable"
    when a correlation is None: fewer than :data:`MIN_LEVELS` levels with an ok fit in an
    experiment, or a manipulated uncertainty with a single value, e.g. a true EU equal at every
    data-size level because n ≤ :data:`MIN_ROWS`). ``correlation``: "pearson" (the paper's) or what
    :func:`~postrisk.evaluation.disentanglement.disentanglement_correlations` accepts.

    Then, whatever ``definition`` says: ``definition``; ``de_headline``, the DE of that
    definition (``de`` for "level", ``de_score`` for "score"); the "score" definition's
    ``c_aa_score`` … ``c_ee_score`` (means of per-run correlations), ``de_score`` (mean of the
    per-run DEs) and ``n_runs_score`` (the runs averaged; 0 and ``None`` values without a
    ``score`` column). ``status`` concerns the level and ground-truth columns only.
    ``ValueError`` for a ``definition`` not in
    :data:`~postrisk.evaluation.disentanglement.DEFINITIONS`."""
    if definition not in DEFINITIONS:
        raise ValueError(f"definition must be one of {DEFINITIONS}, got {definition!r}")
    group_cols = ["method", *KEY_COLUMNS]
    has_truth = {"true_mean_au", "true_mean_eu"} <= set(frame.columns)
    out = []
    for group, sub in frame.groupby(group_cols, sort=True, dropna=False):
        row = dict(zip(group_cols, group, strict=True))
        columns = ["mean_au", "mean_eu"]
        truth = has_truth and bool(np.all(np.isfinite(
            sub[["true_mean_au", "true_mean_eu"]].to_numpy(dtype=float))))
        if truth:
            columns += ["true_mean_au", "true_mean_eu"]
        label = _per_level(sub, "label_noise", columns)
        size = _per_level(sub, "data_size", columns)
        corr = _correlations(label, size, correlation, truth=False)
        row.update(_with_de(corr))
        correlations = [corr[c] for c in CORRELATIONS]
        if truth:
            corr_true = _correlations(label, size, correlation, truth=True)
            row.update(_with_de(corr_true, "_true"))
            correlations += [corr_true[c] for c in CORRELATIONS]
        row["n_fits"] = int(len(sub))
        row["n_failed"] = int((sub["status"] != STATUS_OK).sum())
        row["status"] = "ok" if all(c is not None for c in correlations) else "not applicable"
        score = _score_variant(sub, correlation)
        row["definition"] = definition
        row["de_headline"] = row["de"] if definition == "level" else score["de_score"]
        row.update(score)
        out.append(row)
    return pd.DataFrame(out)
