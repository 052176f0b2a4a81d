"""Hyper-parameter tuning (docs/design.md, "Tuning"; paper App. C, "Hyperparameter tuning").

One sweep per (method, condition): Optuna's TPE sampler (the paper used a hosted W&B Bayesian
sweep) proposes ``n_trials`` configurations from the search space declared beside the method,
minus the entries fixed by the configuration (``method_settings``: "entries with a single value
are fixed"). Every trial fits the method on a uniformly random 80% of the condition's seed-0
training sample and scores it on the remaining 20% by the mean Gaussian negative log-likelihood
of the targets under N(mean, AU + EU) (:func:`mean_gaussian_nll`). Tuning never sees evaluation
points or any oracle quantity. The best trial's configuration is the condition's winner, used
for every seed.

Resumable and reproducible:

* Trials are recorded in an Optuna journal file (``JournalStorage`` over a
  ``JournalFileBackend``) as they finish, so a sweep killed half-way resumes from its journal
  and only runs the missing trials. The study name carries a digest of everything that defines
  the sweep: the method and its ``implementation_version``, the search space, the fixed
  entries, the split, the trial budget and the training data itself (x, y and the split's
  rows, :func:`data_digest`). A journal that holds only other sweeps (the data, the method's
  code or the settings changed since) is set aside under a new name with a message, and a new
  sweep starts: stale trials are never continued.
* Trial k is proposed by a TPE sampler seeded with ``sampler_seed + k`` from the finished trials
  0…k−1. The proposal therefore depends only on the history, never on how many processes the
  sweep took: an interrupted-then-resumed sweep proposes exactly the configurations an
  uninterrupted one does. A trial left ``RUNNING`` by a killed process is closed as failed
  (without an ``error`` attribute, which real failures carry) and repeated.
* A configuration already scored in this sweep is not refitted (TPE can propose a categorical
  configuration twice); its value is reused and the trial records ``repeat_of``.
* A trial whose fit fails (an exception or an invalid output, see
  :func:`postrisk.methods.runner.run_fit`) is recorded as failed with its error; TPE ignores it.
  With no successful trial the winner is the method's defaults plus the fixed entries, and the
  result says so.
* With early stopping (:mod:`postrisk.tuning.early_stopping`), a trial the rule stops along its
  fit is recorded ``PRUNED`` with the step it stopped at (``stopped_at``); it counts as one of
  the ``n_trials`` and is never the winner. The rule reads only trials recorded before, so a
  resumed sweep stops the trials an uninterrupted one does.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from postrisk.core import seeding
from postrisk.core.io import array_digest, canonical_json, digest, json_default, package_version
from postrisk.core.progress import progress_steps
from postrisk.methods.interface import FitStopped, check_hyperparameters, validate_search_space
from postrisk.methods.runner import resolve_method, run_fit
from postrisk.tuning.early_stopping import EarlyStopping, TrialMonitor, max_steps
from postrisk.tuning.objective import mean_gaussian_nll

logger = logging.getLogger(__name__)

TUNING_SCHEMA = "tuning-1"


def split_indices(n: int, validation_fraction: float, *key: object) -> tuple[np.ndarray,
                                                                                 np.ndarray]:
    """A uniformly random (fit, validation) split of ``n`` rows, fixed by ``key``.

    The validation part has ``round(validation_fraction·n)`` rows (at least 1, leaving at least
    2 to fit); both index arrays are sorted.
    """
    if not 0.0 < validation_fraction < 1.0:
        raise ValueError(f"validation_fraction must be in (0, 1), got {validation_fraction}")
    n_val = min(max(1, int(round(validation_fraction * n))), n - 2)
    if n_val < 1:
        raise ValueError(f"need at least 3 rows to split for tuning, got {n}")
    perm = seeding.rng("tuning-split", *key).permutation(n)
    return np.sort(perm[n_val:]), np.sort(perm[:n_val])


def searched_space(method_cls, fixed: Mapping[str, Any],
                   changes: Mapping[str, tuple] | None = None) -> dict[str, tuple]:
    """The method's declared search space, with the entries of ``changes`` replacing or added
    to its own (a study's constrained sweep, e.g. a weight decay range or a spectral-norm
    coefficient), without the entries ``fixed`` by the configuration."""
    check_hyperparameters(method_cls, fixed, f"fixed settings of {method_cls.name}")
    space = {**method_cls.search_space, **(changes or {})}
    if changes:
        validate_search_space(space, method_cls.defaults,
                              owner=f"{method_cls.name}'s changed search space")
    return {k: v for k, v in space.items() if k not in fixed}


def suggest(trial, space: Mapping[str, tuple]) -> dict[str, Any]:
    """Draw one configuration of ``space`` (the :func:`validate_search_space` format)."""
    params: dict[str, Any] = {}
    for name, spec in space.items():
        kind = spec[0]
        if kind == "categorical":
            params[name] = trial.suggest_categorical(name, list(spec[1]))
        else:
            log = len(spec) == 4 and spec[3] == "log"
            if kind == "int":
                params[name] = trial.suggest_int(name, spec[1], spec[2], log=log)
            else:
                params[name] = trial.suggest_float(name, spec[1], spec[2], log=log)
    return params


def data_digest(x, y, fit_idx, val_idx) -> str:
    """A digest of a sweep's training data: the bytes of x and y (float64) and the split."""
    return array_digest((x, np.float64), (y, np.float64), (fit_idx, np.int64),
                        (val_idx, np.int64))


@dataclass
class TuningResult:
    """A finished sweep: the winner (``config``: every hyper-parameter) and every trial."""

    method: str
    study_name: str
    n_trials: int
    config: dict
    searched: dict
    best_value: float | None
    best_trial: int | None
    trials: list[dict] = field(default_factory=list)
    split: dict = field(default_factory=dict)
    note: str = ""
    data_digest: str = ""
    implementation_version: int | None = None
    schema_version: str = TUNING_SCHEMA

    def to_json(self) -> str:
        payload = asdict(self)
        return json.dumps(payload, indent=2, sort_keys=True, default=json_default) + "\n"

    @classmethod
    def from_json(cls, text: str) -> TuningResult:
        payload = json.loads(text)
        if payload.get("schema_version") != TUNING_SCHEMA:
            raise ValueError(f"not a {TUNING_SCHEMA} tuning result "
                             f"(schema_version {payload.get('schema_version')!r})")
        return cls(**payload)


def _study_digest(method: str, implementation_version: int, space: Mapping, fixed: Mapping,
                  split: Mapping, data: str, n_trials: int, startup_trials: int,
                  sampler_seed: int, batch_size: int = 1,
                  early_stopping: EarlyStopping | None = None) -> str:
    fields = {"method": method, "implementation_version": implementation_version,
              "postrisk": package_version(), "space": {k: list(v) for k, v in space.items()},
              "fixed": dict(fixed), "split": dict(split), "data": data,
              "n_trials": n_trials, "startup_trials": startup_trials,
              "sampler_seed": sampler_seed}
    if batch_size != 1:  # one trial at a time keeps the names its journals have
        fields["batch_size"] = batch_size
    fields.update(early_stopping.fields() if early_stopping is not None else {})
    return digest(fields)


def _set_aside_stale_journal(journal: Path, study_name: str) -> None:
    """Move ``journal`` out of the way when it holds sweeps, but not ``study_name``."""
    if not journal.exists() or journal.stat().st_size == 0:
        return
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    names = [s.study_name for s in
             JournalStorage(JournalFileBackend(str(journal))).get_all_studies()]
    if not names or study_name in names:
        return
    aside = journal.with_name(f"{journal.name}.set-aside-{time.strftime('%Y%m%dT%H%M%S')}")
    journal.replace(aside)
    logger.warning("[tune] %s holds sweep(s) %s, made for other training data, method code "
                   "(implementation_version) or settings than %s: set aside as %s; starting a "
                   "new sweep", journal, ", ".join(names), study_name, aside)


def tune(method: str | type, x, y, *, journal: str | Path, fixed: Mapping[str, Any] | None = None,
         n_trials: int = 30, startup_trials: int = 10, validation_fraction: float = 0.2,
         split_key: tuple = (), sampler_seed: int = 0, random_state: int = 0,
         n_threads: int = 1, max_new_trials: int | None = None,
         space_changes: Mapping[str, tuple] | None = None, batch_size: int = 1,
         early_stopping: EarlyStopping | Mapping[str, Any] | None = None) -> TuningResult:
    """Run (or resume) the sweep of ``method`` (registry name or class) on the training sample
    (``x``, ``y``).

    ``journal``: the Optuna journal file (created if missing; appended to). ``fixed``: entries
    not searched. ``split_key``: key of the fixed 80/20 split (the condition). ``random_state``
    and ``n_threads`` go to every trial's fit. ``max_new_trials`` stops after that many new trials
    in this call (an interruption, for tests); the result then covers the trials so far.
    ``space_changes``: entries replacing or added to the method's search space
    (:func:`searched_space`). Progress is logged one step per trial, with the best validation
    NLL so far. ``batch_size`` > 1: trials are asked for ``batch_size`` at a time
    (:func:`_run_batch`; the study name records it). ``early_stopping``: the rule that stops
    hopeless trials along their fits (:mod:`postrisk.tuning.early_stopping`; config
    ``tuning.early_stopping``), for a method that reports along its fit
    (``iterations_parameter``) and trials run one at a time, where its ``methods`` (None:
    all) name the method; the study name records it.
    """
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend
    from optuna.trial import TrialState

    cls = resolve_method(method)
    method = cls.name
    fixed = dict(fixed or {})
    space = searched_space(cls, fixed, space_changes)
    if n_trials < 1:
        raise ValueError(f"n_trials must be >= 1, got {n_trials}")
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    fit_idx, val_idx = split_indices(len(y), validation_fraction, *split_key)
    split = {"validation_fraction": validation_fraction, "key": [str(k) for k in split_key],
             "n_fit": int(fit_idx.size), "n_validation": int(val_idx.size)}
    data = data_digest(x, y, fit_idx, val_idx)
    version = int(cls.implementation_version)
    if int(batch_size) < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    batch_size = int(batch_size)
    stopping = EarlyStopping.of(early_stopping, method)
    steps = max_steps(cls, space, fixed)
    rungs = stopping.checkpoints(steps) if steps is not None and batch_size == 1 else []
    if stopping.enabled and not rungs:
        logger.info("[tune %s] early stopping (%s) does not apply: %s", method, stopping.rule,
                    "trials run in batches" if batch_size > 1 else
                    "the method reports no steps along its fit")
    stopping = stopping if rungs else EarlyStopping()
    digest = _study_digest(method, version, space, fixed, split, data, n_trials,
                           startup_trials, sampler_seed, batch_size, stopping)
    study_name = f"{method}-{digest}"
    defaults = {**cls.defaults, **fixed}
    provenance = {"data_digest": data, "implementation_version": version}
    if not space:
        logger.info("[tune %s] nothing to search (every entry fixed or no search space)", method)
        return TuningResult(method=method, study_name=study_name, n_trials=0,
                            config=dict(defaults), searched={}, best_value=None,
                            best_trial=None, split=split, note="nothing to search",
                            **provenance)

    Path(journal).parent.mkdir(parents=True, exist_ok=True)
    _set_aside_stale_journal(Path(journal), study_name)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = JournalStorage(JournalFileBackend(str(journal)))
    study = optuna.create_study(study_name=study_name, storage=storage, direction="minimize",
                                load_if_exists=True,
                                pruner=stopping.pruner(steps or 0, startup_trials))

    def finished():
        """Scored trials, stopped ones and real failures (which carry an ``error``), in
        order."""
        return [t for t in study.get_trials(deepcopy=False)
                if t.state in (TrialState.COMPLETE, TrialState.PRUNED)
                or (t.state == TrialState.FAIL and "error" in t.user_attrs)]

    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        # left running by a killed process: closed as failed without an error, and repeated
        study.tell(t.number, state=TrialState.FAIL)
    done = finished()
    if done:
        logger.info("[tune %s] resuming %s from %s: %d of %d trials finished", method,
                    study_name, journal, len(done), n_trials)
    x_fit, y_fit, x_val, y_val = x[fit_idx], y[fit_idx], x[val_idx], y[val_idx]
    new = 0
    with progress_steps(n_trials, f"[tune {method}] trials", logger,
                        completed=len(done)) as progress:
        while len(done) < n_trials and (max_new_trials is None or new < max_new_trials):
            k = len(done)
            if batch_size > 1:
                t0 = time.perf_counter()
                size = min(batch_size, n_trials - k)
                statuses = _run_batch(study, cls, space, fixed, size, seed=sampler_seed + k,
                                      startup_trials=startup_trials, done=done,
                                      data=(x_fit, y_fit, x_val, y_val),
                                      random_state=random_state, n_threads=n_threads)
                new += size
                done = finished()
                scored = [t for t in done if t.state == TrialState.COMPLETE]
                so_far = (f"; best NLL {min(t.value for t in scored):.4f}" if scored else
                          "; no successful trial yet")
                seconds = time.perf_counter() - t0
                for i, status in enumerate(statuses):
                    progress.advance(message=f"trial {k + i + 1}/{n_trials} (batch of {size}, "
                                             f"{seconds:.1f} s) {status}{so_far}")
                continue
            study.sampler = optuna.samplers.TPESampler(seed=sampler_seed + k,
                                                       n_startup_trials=startup_trials)
            trial = study.ask()
            params = suggest(trial, space)
            key = canonical_json(params)
            seen = {canonical_json(t.params): t for t in done if t.state == TrialState.COMPLETE}
            t0 = time.perf_counter()
            if key in seen:
                trial.set_user_attr("repeat_of", seen[key].number)
                study.tell(trial, seen[key].value)
                status = f"repeat of trial {seen[key].number}: NLL {seen[key].value:.4f}"
            else:
                monitor = TrialMonitor(trial, x_val, y_val, rungs) if rungs else None
                try:
                    record = run_fit(cls, {**fixed, **params}, x_fit, y_fit, x_val,
                                     random_state=random_state, n_threads=n_threads,
                                     monitor=monitor)
                except FitStopped:
                    record = None
                value, error = (None, "") if record is None else _validation_nll(record, y_val)
                if record is None:
                    step, loss = monitor.reports[-1]
                    trial.set_user_attr("stopped_at", step)
                    study.tell(trial, state=TrialState.PRUNED)
                    status = f"stopped after step {step}: NLL {loss:.4f}"
                elif value is not None:
                    study.tell(trial, value)
                    status = f"NLL {value:.4f}"
                else:
                    trial.set_user_attr("error", error[:2000])
                    study.tell(trial, state=TrialState.FAIL)
                    status = f"failed: {error[:200]}"
            new += 1
            done = finished()
            scored = [t for t in done if t.state == TrialState.COMPLETE]
            so_far = (f"; best NLL {min(t.value for t in scored):.4f}" if scored else
                      "; no successful trial yet")
            progress.advance(message=f"trial {k + 1}/{n_trials} ({time.perf_counter() - t0:.1f} s) "
                                     f"{status}{so_far}")

    trials = [{"number": t.number, "state": t.state.name, "value": t.value,
               "params": dict(t.params), "seconds": _seconds(t),
               **{k: v for k, v in t.user_attrs.items()}} for t in done]
    complete = [t for t in done if t.state == TrialState.COMPLETE]
    if complete:
        best = min(complete, key=lambda t: (t.value, t.number))
        config = {**defaults, **best.params}
        result = TuningResult(method=method, study_name=study_name, n_trials=n_trials,
                              config=config, searched=dict(best.params),
                              best_value=float(best.value), best_trial=best.number,
                              trials=trials, split=split, **provenance)
        logger.info("[tune %s] best trial %d: NLL %.4f %s", method, best.number, best.value,
                    canonical_json(best.params))
    else:
        result = TuningResult(method=method, study_name=study_name, n_trials=n_trials,
                              config=dict(defaults), searched={}, best_value=None,
                              best_trial=None, trials=trials, split=split,
                              note="no successful trial: the defaults are used", **provenance)
        logger.info("[tune %s] no successful trial in %d; using the defaults", method, len(done))
    return result


def _validation_nll(record, y_val) -> tuple[float | None, str]:
    """A trial's validation NLL, or None with the error of a failed one."""
    value = (mean_gaussian_nll(y_val, record.mean, record.prediction().total_var)
             if record.ok else math.nan)
    if record.ok and math.isfinite(value):
        return value, ""
    return None, record.error or "non-finite validation NLL (zero total variance)"


def _run_batch(study, cls, space: Mapping, fixed: Mapping, size: int, *, seed: int,
               startup_trials: int, done: list, data: tuple, random_state: int,
               n_threads: int) -> list[str]:
    """Ask ``size`` trials at once, fit them and tell their values (one status line each).

    The sampler is TPE seeded with ``seed`` (the trials finished before the batch), with
    ``constant_liar``: a trial asked while others of its batch are still running sees them at
    the worst value so far, so a batch spreads out instead of asking one point ``size`` times.
    The proposals depend only on the history before the batch, so a sweep killed during a batch
    repeats the batch as it was. A configuration scored before (or earlier in the batch) is not
    refitted. The new configurations are grouped by the method's architecture and each group
    fitted as one program where the method can (:func:`~postrisk.methods.runner.run_together`),
    else one after another."""
    import optuna
    from optuna.trial import TrialState

    from postrisk.methods.runner import run_fit, run_together

    x_fit, y_fit, x_val, y_val = data
    study.sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=startup_trials,
                                               constant_liar=True)
    trials, configs = [], []
    for _ in range(size):
        trial = study.ask()
        trials.append(trial)
        configs.append(suggest(trial, space))
    seen = {canonical_json(t.params): (t.number, t.value) for t in done
            if t.state == TrialState.COMPLETE}
    first: dict[str, int] = {}
    fit_index = []
    for i, params in enumerate(configs):
        key = canonical_json(params)
        if key not in seen and key not in first:
            first[key] = i
            fit_index.append(i)
    records: dict[int, Any] = {}
    groups: dict[tuple, list[tuple[int, Any]]] = {}
    for i in fit_index:
        config = {**fixed, **configs[i]}
        try:
            method = cls(random_state=random_state, n_threads=n_threads, **config)
            group = (cls.architecture(method.hyperparameters())
                     if getattr(cls, "trial_batching", False) else ("alone", i))
        except Exception:  # noqa: BLE001 - run_fit records the construction's error
            records[i] = run_fit(cls, config, x_fit, y_fit, x_val, random_state=random_state,
                                 n_threads=n_threads)
            continue
        groups.setdefault(group, []).append((i, method))
    for members in groups.values():
        fitted = run_together([m for _, m in members], x_fit, y_fit, x_val)
        records.update({i: r for (i, _), r in zip(members, fitted, strict=True)})
    statuses = []
    values: dict[str, float | None] = {}
    for i, (trial, params) in enumerate(zip(trials, configs, strict=True)):
        key = canonical_json(params)
        if key in seen or first[key] != i:
            number, value = seen.get(key) or (trials[first[key]].number, values[key])
            trial.set_user_attr("repeat_of", number)
            if value is None:  # a repeat of a configuration that failed in this batch
                trial.set_user_attr("error", f"repeat of failed trial {number}")
                study.tell(trial, state=TrialState.FAIL)
                statuses.append(f"repeat of failed trial {number}")
            else:
                study.tell(trial, value)
                statuses.append(f"repeat of trial {number}: NLL {value:.4f}")
            continue
        value, error = _validation_nll(records[i], y_val)
        values[key] = value
        if value is None:
            trial.set_user_attr("error", error[:2000])
            study.tell(trial, state=TrialState.FAIL)
            statuses.append(f"failed: {error[:200]}")
        else:
            study.tell(trial, value)
            statuses.append(f"NLL {value:.4f}")
    return statuses


def _seconds(trial) -> float | None:
    if trial.datetime_start is None or trial.datetime_complete is None:
        return None
    return (trial.datetime_complete - trial.datetime_start).total_seconds()
