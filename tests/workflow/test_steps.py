"""postrisk.workflow.steps: the functions the Snakemake scripts call, called directly on tiny
inputs in a scratch folder (no Snakemake): each step writes what the library function it wraps
makes from the files it is given (covariates, priors, samples, reference posteriors, seed
selection, tuning and fits over the usable seeds, scores, the Disentanglement experiment, study
dispatch, release packing and download, source verification), and stops with a clear error
where its inputs are wrong."""

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from postrisk.core import seeding
from postrisk.core.io import open_zarr, write_text_atomic, write_zarr_atomic
from postrisk.covariates.build import load_covariates
from postrisk.gp.kernels import default_kernel
from postrisk.methods.records import fit_records_from_dataset
from postrisk.methods.runner import run_fit
from postrisk.planning.units import (
    DisentanglementUnit,
    FitUnit,
    PosteriorUnit,
    SampleUnit,
    ScoreUnit,
    ValidSeedsUnit,
)
from postrisk.tasks.generate import build_sample, build_task
from postrisk.tasks.key import Condition, TaskKey
from postrisk.tasks.store import StoreValidationError, validate_store
from postrisk.tasks.task import Task
from postrisk.tasks.validity import TooFewValidSeeds
from postrisk.tuning import TuningResult
from postrisk.workflow import steps

CONDITION = Condition("concrete", "gp", "bump", "balanced")
SEEDS = (0, 1, 2)
N_TRAIN = 40
#: A small evaluation pool (concrete has 1,030 rows: min(cap, N // 2) = the cap).
N_EVAL_CAP = 60


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A covariate store, a GP prior file, and the sample and task stores of three seeds of one
    condition, all written by the steps (``make_covariates``, ``make_samples``,
    ``make_tasks``)."""
    root = tmp_path_factory.mktemp("steps")
    fetch = {"prefer_offline_package": True, "raw_dir": str(root / "raw")}
    covariates = root / "covariates" / "concrete.zarr"
    steps.make_covariates("concrete", fetch, N_EVAL_CAP, covariates)
    d = load_covariates(covariates).x.shape[1]
    params = {"prior": "gp", "kernel": default_kernel(("rq", "linear"), d).to_dict(), "a": 1.0}
    prior = write_text_atomic(root / "priors" / "concrete" / "gp.json", json.dumps(params))
    samples = [SampleUnit(TaskKey.of(CONDITION, s), str(covariates), str(prior), N_TRAIN,
                          "sample-digest", str(root / "samples" / f"{s}.zarr"), 1.0)
               for s in SEEDS]
    steps.make_samples(samples)
    posteriors = [PosteriorUnit(u.key, u.out, {"draws": 40}, str(root / "tasks" / f"{s}.zarr"))
                  for s, u in zip(SEEDS, samples, strict=True)]
    steps.make_tasks(posteriors)
    return SimpleNamespace(root=root, fetch=fetch, covariates=covariates, params=params,
                           prior=prior, samples=samples, posteriors=posteriors)


def _fit_unit(built, out: Path, *, n_valid: int = 2, selection: tuple[str, ...] = (),
              settings: dict | None = None, tuning: dict | None = None,
              method: str = "blr") -> FitUnit:
    return FitUnit(method, CONDITION, SEEDS, tuple(u.out for u in built.samples), selection,
                   n_valid, settings or {}, tuning, str(out / "journal.log"),
                   str(out / f"{method}.zarr"), str(out / f"{method}.json"))


def _selection(path: Path, valid: list[int]) -> str:
    return str(write_text_atomic(path, json.dumps({"valid": valid, "dropped": []})))


# -- covariates, priors, samples, reference posteriors ------------------------------------------

def test_make_covariates_writes_the_store_build_covariates_makes(built):
    from postrisk.covariates import FetchSettings, build_covariates

    stored = load_covariates(built.covariates).ds
    direct = build_covariates("concrete", FetchSettings(prefer_offline_package=True,
                                                        raw_dir=built.root / "raw"),
                              n_eval_cap=N_EVAL_CAP)
    assert set(stored.data_vars) == set(direct.data_vars)
    for name in direct.data_vars:
        if direct[name].dtype.kind in "fiub":
            np.testing.assert_array_equal(stored[name].values, direct[name].values,
                                          err_msg=name)
    assert stored.attrs["dataset"] == "concrete"
    assert stored["eval_index"].size == N_EVAL_CAP  # the cap reaches the split


def test_make_covariates_takes_the_reference_stores_scaling(built, tmp_path):
    """Red Wine's case: another store's min-max constants; a reference whose ranges are twice
    this dataset's own halves every scaled covariate."""
    own = open_zarr(built.covariates)
    lo, hi = own["scale_min"].values, own["scale_max"].values
    reference = write_zarr_atomic(own.assign(scale_max=("feature", lo + 2 * (hi - lo))),
                                  tmp_path / "reference.zarr")
    out = tmp_path / "scaled.zarr"
    steps.make_covariates("concrete", built.fetch, N_EVAL_CAP, out, reference=reference)
    np.testing.assert_allclose(load_covariates(out).x, own["x"].values / 2, rtol=1e-12,
                               atol=1e-15)


def test_fit_prior_writes_the_priors_fit_with_its_own_stream(built, tmp_path):
    """The BNN prior (cheap to fix): the file is the returned parameters, which are the prior's
    ``fit`` on the covariate store with the (dataset, prior) stream, plus its dataset and
    prior."""
    from postrisk.priors.base import get_prior

    settings = {"hidden": 5, "reference_inputs": 12, "scale_draws": 10}
    params = steps.fit_prior("concrete", "bnn", built.covariates, settings, tmp_path / "p.json")
    assert json.loads((tmp_path / "p.json").read_text()) == params
    assert params["dataset"] == "concrete" and params["prior"] == "bnn"
    cov = load_covariates(built.covariates)
    direct = get_prior("bnn").fit("concrete", cov.x, cov.ds["target"].values, cov.eval_index,
                                  settings, seeding.rng("prior", "concrete", "bnn"))
    assert params["a"] == direct["a"]
    assert params["reference_index"] == direct["reference_index"]
    assert len(params["reference_index"]) == 12
    assert set(params["reference_index"]) <= set(cov.eval_index.tolist())
    again = steps.fit_prior("concrete", "bnn", built.covariates, settings, tmp_path / "q.json")
    assert {k: v for k, v in again.items() if k != "seconds"} == \
        {k: v for k, v in params.items() if k != "seconds"}


def test_make_samples_writes_what_build_sample_makes(built, tmp_path):
    cov = load_covariates(built.covariates)
    for unit in built.samples:
        stored = validate_store(unit.out, kind="sample")
        direct = build_sample(unit.key, cov, built.params, N_TRAIN, "sample-digest",
                              noise_strength=1.0)
        for name in direct.data_vars:
            np.testing.assert_array_equal(stored[name].values, direct[name].values,
                                          err_msg=name)
        assert stored.attrs["config_digest"] == "sample-digest"
        assert stored.attrs["seed"] == unit.key.seed and stored.sizes["train"] == N_TRAIN
    y = [open_zarr(u.out)["y_train"].values for u in built.samples]
    assert not np.array_equal(y[0], y[1]) and not np.array_equal(y[1], y[2])
    # the noise strength reaches the sample
    unit = built.samples[0]
    steps.make_sample(unit.key, unit.covariates, unit.prior, N_TRAIN, "d", tmp_path / "s.zarr",
                      noise_strength=2.0)
    stronger = open_zarr(tmp_path / "s.zarr")
    direct = build_sample(unit.key, cov, built.params, N_TRAIN, "d", noise_strength=2.0)
    np.testing.assert_array_equal(stronger["noise_var_eval"].values,
                                  direct["noise_var_eval"].values)
    assert not np.array_equal(stronger["noise_var_eval"].values,
                              open_zarr(unit.out)["noise_var_eval"].values)


def test_make_tasks_writes_what_build_task_makes(built):
    for unit in built.posteriors:
        stored = validate_store(unit.out, kind="task")
        assert stored.sizes["draw"] == 40 and stored.attrs["seed"] == unit.key.seed
        assert stored.sizes["eval"] == N_EVAL_CAP
        assert "accelerator" not in stored.attrs  # nothing asked for
    unit = built.posteriors[1]
    stored = open_zarr(unit.out)
    direct = build_task(validate_store(unit.sample, kind="sample"), {"draws": 40})
    for name in ("posterior_draws", "posterior_mean", "posterior_var", "rank_true",
                 "covered90", "mcse_var", "y_train", "f_true_eval"):
        np.testing.assert_array_equal(stored[name].values, direct[name].values, err_msg=name)


def test_make_task_refuses_a_store_that_is_no_sample(built, tmp_path):
    with pytest.raises(StoreValidationError, match="schema version"):
        steps.make_task(built.covariates, {"draws": 40}, tmp_path / "u.zarr")
    assert not (tmp_path / "u.zarr").exists()


# -- seed selection -----------------------------------------------------------------------------

def _bnn_store(built, tmp_path: Path, seed: int, max_rhat: float) -> str:
    """A BNN task store (2 chains) of ``seed`` whose largest R̂ is ``max_rhat``: a built
    store relabelled."""
    ds = open_zarr(built.posteriors[0].out)
    m = ds.sizes["eval"]
    rhat = np.full(m, 1.0)
    rhat[seed] = max_rhat
    ds = ds.assign(rhat=("eval", rhat), ess=("eval", np.full(m, 400.0))).assign_attrs(
        prior="bnn", seed=seed, chains=2)
    return str(write_zarr_atomic(validate_store(ds, kind="task"), tmp_path / f"{seed}.zarr"))


def test_select_seeds_records_each_seeds_max_rhat_and_the_valid_ones(built, tmp_path):
    rhats = {0: 1.004, 1: 1.3, 2: 1.02, 3: 1.001}
    paths = tuple(_bnn_store(built, tmp_path, s, r) for s, r in rhats.items())
    out = tmp_path / "cell.json"
    cell = ("concrete", "bump", "balanced")
    selection = steps.select_seeds(ValidSeedsUnit(cell, paths, 2, str(out), "cafe"))
    assert json.loads(out.read_text()) == json.loads(json.dumps(selection))
    assert selection["valid"] == [0, 2] and selection["dropped"] == [1]
    assert selection["max_rhat"] == rhats and selection["config_digest"] == "cafe"
    with pytest.raises(TooFewValidSeeds, match="cell concrete/bump/balanced: 3 valid seed"):
        steps.select_seeds(ValidSeedsUnit(cell, paths, 4, str(tmp_path / "short.json")))
    assert not (tmp_path / "short.json").exists()


# -- tuning and fits ----------------------------------------------------------------------------

def test_condition_config_untuned_is_the_defaults_updated_by_the_settings(built):
    from postrisk.methods.blr import BayesianLinearRegression

    result = steps.condition_config("blr", {"noise_std": 0.5}, built.samples[0].out, None,
                                    "unused", CONDITION)
    assert result.config == {**BayesianLinearRegression.defaults, "noise_std": 0.5}
    assert result.n_trials == 0 and result.searched == {} and result.best_value is None
    assert result.note == "not tuned: defaults and fixed settings"
    assert result.implementation_version == BayesianLinearRegression.implementation_version
    assert steps.condition_config("blr", None, "unused", None, "unused", ()).config == \
        BayesianLinearRegression.defaults
    with pytest.raises(ValueError, match=r"method_settings.blr: unknown hyper-parameter\(s\) "
                                         r"\['noise_sd'\]"):
        steps.condition_config("blr", {"noise_sd": 0.5}, "unused", None, "unused", ())
    with pytest.raises(KeyError, match="unknown method 'no_such_method'"):
        steps.condition_config("no_such_method", {}, "unused", None, "unused", ())


def test_condition_config_tuned_is_the_sweep_on_the_seed_0_sample(built, tmp_path):
    from postrisk.tuning import tune

    tuning = {"trials": 3, "startup_trials": 2, "validation_fraction": 0.25}
    result = steps.condition_config("blr", {"evidence": False}, built.samples[0].out, tuning,
                                    tmp_path / "a.log", CONDITION)
    sample = open_zarr(built.samples[0].out)
    direct = tune("blr", sample["x_train"].values, sample["y_train"].values,
                  journal=tmp_path / "b.log", fixed={"evidence": False}, n_trials=3,
                  startup_trials=2, validation_fraction=0.25, split_key=tuple(CONDITION),
                  sampler_seed=0, random_state=0)
    assert result.study_name == direct.study_name and result.n_trials == 3
    assert result.config == direct.config and result.best_value == direct.best_value
    from postrisk.methods.blr import BayesianLinearRegression

    assert result.config["evidence"] is False
    assert set(result.searched) == set(BayesianLinearRegression.search_space) - {"evidence"}
    # run again on the same journal: resumed, the same winner
    again = steps.condition_config("blr", {"evidence": False}, built.samples[0].out, tuning,
                                   tmp_path / "a.log", CONDITION)
    assert again.config == result.config and again.n_trials == 3


def test_fit_condition_fits_the_first_usable_seeds_as_run_fit_does(built, tmp_path):
    settings = {"evidence": False, "noise_std": 0.5}
    unit = _fit_unit(built, tmp_path, n_valid=2, settings=settings)
    steps.fit_conditions([unit])
    store = open_zarr(unit.fits)
    assert store["seed"].values.tolist() == [0, 1]  # the first n_valid candidates
    chosen = TuningResult.from_json(Path(unit.config).read_text())
    assert chosen.config["noise_std"] == 0.5 and chosen.config["evidence"] is False
    assert json.loads(store.attrs["config"]) == chosen.config
    for seed, record in zip([0, 1], fit_records_from_dataset(store), strict=True):
        sample = open_zarr(built.samples[seed].out)
        direct = run_fit("blr", chosen.config, sample["x_train"].values,
                         sample["y_train"].values, sample["x_eval"].values, random_state=seed)
        assert record.status == "ok" and record.error == ""
        for name in ("mean", "aleatoric_var", "epistemic_var"):
            np.testing.assert_allclose(getattr(record, name), getattr(direct, name),
                                       rtol=1e-12, err_msg=name)


def test_fit_condition_uses_the_cells_valid_seeds_in_candidate_order(built, tmp_path):
    selection = _selection(tmp_path / "cell.json", [2, 0, 1])
    unit = _fit_unit(built, tmp_path, n_valid=2, selection=(selection,))
    steps.fit_conditions([unit])
    assert open_zarr(unit.fits)["seed"].values.tolist() == [0, 2]
    short = _selection(tmp_path / "short.json", [2, 7])
    with pytest.raises(TooFewValidSeeds, match="1 of the cell's valid seeds"):
        steps.fit_conditions([_fit_unit(built, tmp_path / "b", n_valid=2, selection=(short,))])
    assert not (tmp_path / "b" / "blr.zarr").exists()


class SeedEcho:
    """An outside method whose mean prediction is its ``random_state`` and whose AU is the
    variance of the training targets: what each fit was given shows in its record."""

    def __init__(self, random_state=0):
        self.random_state = random_state

    def fit(self, x, y):
        self.y_var_ = float(np.var(y))
        return self

    def predict(self, x):
        m = len(x)
        return np.full(m, float(self.random_state)), np.full(m, self.y_var_), np.ones(m)


def test_each_fit_gets_its_seeds_sample_and_random_state(built, tmp_path, monkeypatch):
    from postrisk.methods import registry

    monkeypatch.setattr(registry, "_OUTSIDE", {})
    name = registry.register_outside(f"{__name__}:SeedEcho")
    selection = _selection(tmp_path / "cell.json", [2, 1, 0])
    steps.fit_condition(name, {}, [u.out for u in built.samples], SEEDS, tmp_path / "f.zarr",
                        n_valid=2, selection=[selection])
    store = open_zarr(tmp_path / "f.zarr")
    assert store["seed"].values.tolist() == [1, 2]
    for seed, record in zip([1, 2], fit_records_from_dataset(store), strict=True):
        y = open_zarr(built.samples[seed].out)["y_train"].values
        assert record.status == "ok", record.error
        np.testing.assert_array_equal(record.mean, float(seed))
        np.testing.assert_allclose(record.aleatoric_var, np.var(y), rtol=1e-12)


def test_a_failed_fit_is_recorded_not_raised(built, tmp_path):
    unit = _fit_unit(built, tmp_path, n_valid=3, settings={"max_iter": 0})
    steps.fit_conditions([unit])
    records = fit_records_from_dataset(open_zarr(unit.fits))
    assert [r.status for r in records] == ["failed"] * 3
    assert all("max_iter >= 1" in r.error for r in records)
    assert all(np.isnan(r.mean).all() for r in records)


def test_fit_conditions_runs_every_unit_and_a_tuned_one_records_its_sweep(built, tmp_path):
    tuning = {"trials": 2, "startup_trials": 2, "validation_fraction": 0.25}
    plain = _fit_unit(built, tmp_path / "plain")
    tuned = _fit_unit(built, tmp_path / "tuned", tuning=tuning)
    steps.fit_conditions([plain, tuned])
    sweep = TuningResult.from_json(Path(tuned.config).read_text())
    assert sweep.n_trials == 2 and sweep.study_name.startswith("blr-")
    assert Path(tuned.journal).exists() and not Path(plain.journal).exists()
    assert json.loads(open_zarr(tuned.fits).attrs["config"]) == sweep.config
    assert TuningResult.from_json(Path(plain.config).read_text()).n_trials == 0


def test_a_tuned_condition_needs_a_journal(built, tmp_path):
    with pytest.raises(ValueError, match="a tuned condition needs a journal path"):
        steps.fit_condition("blr", {}, [u.out for u in built.samples], SEEDS,
                            tmp_path / "f.zarr", tuning={"trials": 2, "startup_trials": 1,
                                                         "validation_fraction": 0.2},
                            config_out=tmp_path / "c.json")
    assert list(tmp_path.iterdir()) == []


# -- scores and the Disentanglement experiment ----------------------------------------------------

def test_score_condition_files_scores_the_usable_seeds_from_the_stores(built, tmp_path):
    from postrisk.evaluation.scoring import score_condition

    selection = _selection(tmp_path / "cell.json", [2, 1])
    fit = _fit_unit(built, tmp_path, n_valid=2, selection=(selection,))
    steps.fit_conditions([fit])
    tasks = tuple(u.out for u in built.posteriors)
    unit = ScoreUnit(CONDITION, SEEDS, tasks, ("blr",), (fit.fits,), (selection,), 2,
                     str(tmp_path / "scores.csv"))
    frame = steps.score_condition_files(unit)
    assert sorted(set(frame["seed"])) == [1, 2]
    methods = frame[frame["kind"] == "method"]
    assert methods["method"].tolist() == ["blr", "blr"] and set(methods["status"]) == {"ok"}
    direct = score_condition({s: Task.load(tasks[s]) for s in (1, 2)},
                             {"blr": fit_records_from_dataset(open_zarr(fit.fits))},
                             {"blr": [1, 2]})
    pd.testing.assert_frame_equal(frame, direct)
    written = pd.read_csv(unit.out)
    assert list(written.columns) == list(frame.columns) and len(written) == len(frame)
    np.testing.assert_allclose(written["spearman_au"].to_numpy(dtype=float),
                               frame["spearman_au"].to_numpy(dtype=float), rtol=1e-12)
    # a fit store without a usable seed's fit is an error naming both
    other = ScoreUnit(CONDITION, SEEDS, tasks, ("blr",), (fit.fits,), (), 2,
                      str(tmp_path / "other.csv"))  # the first two seeds: 0 was not fitted
    with pytest.raises(ValueError, match="no fit of blr for seed 0"):
        steps.score_condition_files(other)
    assert not (tmp_path / "other.csv").exists()


def test_disentanglement_experiment_refits_at_the_fit_stores_configuration(built, tmp_path):
    from postrisk.evaluation.disentanglement_experiment import run_experiment

    fit = _fit_unit(built, tmp_path, n_valid=2, settings={"evidence": False, "noise_std": 0.3})
    steps.fit_conditions([fit])
    seed = 1
    unit = DisentanglementUnit(CONDITION, seed, "blr", built.posteriors[seed].out, fit.fits,
                               str(tmp_path / "de.csv"))
    settings = {"data_fractions": [0.5, 1.0], "label_noise_fractions": [0.0, 0.5], "runs": 1}
    frame = steps.disentanglement_experiment(unit, settings)
    config = json.loads(open_zarr(fit.fits).attrs["config"])
    assert config["noise_std"] == 0.3
    direct = run_experiment("blr", config, Task.load(unit.task), data_fractions=(0.5, 1.0),
                            label_noise_fractions=(0.0, 0.5), runs=1, seed=seed)
    keep = [c for c in frame.columns if c != "fit_seconds"]
    pd.testing.assert_frame_equal(frame[keep], direct[keep])
    assert len(frame) == 4 and set(frame["seed"]) == {seed}
    written = pd.read_csv(unit.out)
    np.testing.assert_allclose(written["score"].to_numpy(), frame["score"].to_numpy(),
                               rtol=1e-12)


# -- studies -------------------------------------------------------------------------------------

CALLS: list = []


def record_units(units, n_threads=1, accelerator=None):
    CALLS.append(("units", units, n_threads, accelerator))


def record_summary(inputs, out, settings, scale):
    CALLS.append(("summary", inputs, out, settings, scale))


def test_study_steps_call_the_function_their_registration_names():
    CALLS.clear()
    steps.study_units(f"{__name__}:record_units", ["u1", "u2"], n_threads=3,
                      accelerator={"requested": False})
    steps.study_summary(f"{__name__}:record_summary", {"a": ["x"]}, {"table": "t.csv"},
                        {"k": 1}, "smoke")
    assert CALLS == [("units", ["u1", "u2"], 3, {"requested": False}),
                     ("summary", {"a": ["x"]}, {"table": "t.csv"}, {"k": 1}, "smoke")]
    with pytest.raises(AttributeError, match="no_such_step"):
        steps.study_units(f"{__name__}:no_such_step", [])


# -- release -------------------------------------------------------------------------------------

def test_pack_release_packs_the_valid_instances_and_download_release_fetches_them(built,
                                                                                    tmp_path):
    """The release of the three built instances, seed 2 not valid (as the checks' instance
    table says), served on loopback and downloaded by the download step."""
    from tests.http_fixture import FakeSources, serve_files

    keys = [u.key for u in built.posteriors]
    rows = [{**vars(k), "valid": k.seed != 2, "max_rhat": None} for k in keys]
    instances = tmp_path / "instances.csv"
    pd.DataFrame(rows).to_csv(instances, index=False)
    card = write_text_atomic(tmp_path / "DATA_CARD.md", "card\n")
    out = tmp_path / "release"
    settings = {"max_bytes": 10**9, "max_files": 100, "base_url": None}
    tasks = [u.out for u in built.posteriors]
    manifest = steps.pack_release(instances, tasks, keys, {"concrete": str(built.covariates)},
                                  {("concrete", "gp"): str(built.prior)}, [str(card)], out,
                                  settings, "smoke", "abc")
    assert json.loads((out / "manifest.json").read_text()) == manifest
    assert [i["key"] for i in manifest["instances"]] == [k.label for k in keys[:2]]
    assert [n["key"] for n in manifest["not_shipped"]] == [keys[2].label]
    assert "seed 2 is beyond the cell's first valid seeds" in manifest["not_shipped"][0]["reason"]
    assert manifest["scale"] == "smoke" and manifest["config_digest"] == "abc"
    assert "DATA_CARD.md" in {f["name"] for f in manifest["files"]}
    shipped = Task.load(tasks[0])
    np.testing.assert_array_equal(
        _load_released(out, keys[0]).posterior_mean, shipped.posterior_mean)
    with pytest.raises(ValueError, match="shorter"):  # a task store for each key
        steps.pack_release(instances, tasks[:2], keys, {"concrete": built.covariates},
                           {("concrete", "gp"): built.prior}, [card], tmp_path / "other",
                           settings, "smoke", "abc")

    with FakeSources() as server:
        url = serve_files(server, out)
        target = tmp_path / "download" / "manifest.json"
        steps.download_release({"base_url": url, "download_dir": "ignored", "datasets": None,
                                "priors": ["gp"], "retries": 1, "timeout_s": 10}, target)
    assert json.loads(target.read_text()) == manifest
    assert {f["name"] for f in manifest["files"]} <= {p.name for p in target.parent.iterdir()}
    assert not (tmp_path / "ignored").exists() and not Path("ignored").exists()


def _load_released(root: Path, key: TaskKey) -> Task:
    """An instance of a release folder, verified against its manifest."""
    import postrisk

    return postrisk.load_task(key.label, root=root, verify=True)


def test_download_release_without_a_url_or_settings_says_so(tmp_path):
    from postrisk.grid.config import ConfigError
    from postrisk.release.download import ReleaseURLMissing

    settings = {"base_url": None, "download_dir": "x", "retries": 1, "timeout_s": 1}
    with pytest.raises(ReleaseURLMissing, match="no release URL"):
        steps.download_release(settings, tmp_path / "r" / "manifest.json")
    with pytest.raises(ConfigError, match="config key 'release': missing"):
        steps.download_release({}, tmp_path / "r" / "manifest.json")
    with pytest.raises(ConfigError, match=r"\['retries'\] missing"):
        steps.download_release({"base_url": "http://x", "download_dir": "x", "timeout_s": 1},
                               tmp_path / "r" / "manifest.json")
    assert not (tmp_path / "r").exists()


# -- source verification ----------------------------------------------------------------------

def test_verify_dataset_queries_the_configured_source_and_writes_its_report(tmp_path,
                                                                           monkeypatch):
    """The canonical source is fetched even where an offline copy is preferred; one that does
    not answer gives a failed report, not an exception."""
    from tests.http_fixture import FakeSources

    with FakeSources() as server:
        monkeypatch.setenv("POSTRISK_UCI_URL", server.url)
        monkeypatch.setenv("POSTRISK_OPENML_URL", server.url)
        fetch = {"prefer_offline_package": True, "raw_dir": str(tmp_path / "raw"),
                 "fetch_retries": 1, "fetch_timeout_s": 5}
        steps.verify_dataset("concrete", fetch, tmp_path / "verify.json")
    report = json.loads((tmp_path / "verify.json").read_text())
    assert report["dataset"] == "concrete" and report["verified"] is False
    assert report["problems"] and sum(server.hits.values()) >= 1
