"""The units of work of the benchmark's stages (postrisk.planning.units): which units each
enumeration lists, in which order, with which seeds, paths and settings.

Every expectation is computed here, independently of the module: the grid as the product of a
small configuration's lists (narrowed by ``prior_grid`` / ``method_grid`` by hand), the seeds by
the rules of docs/design.md ("Seeds": a cell with BNN instances builds every candidate and its
BNN R̂ decides; a cell without uses its first ``valid_per_cell``), the paths as literal
strings. The seed policy's own tests are tests/planning/test_seeds.py."""

from __future__ import annotations

import dataclasses
from itertools import product

import pytest

from postrisk.grid.config import load_config
from postrisk.grid.study import studies
from postrisk.planning.seeds import SeedPolicy, selection_digest
from postrisk.planning.units import (
    CovariatesUnit,
    covariates_unit,
    covariates_units,
    disentanglement_units,
    fit_units,
    key_wildcards,
    posterior_keys,
    posterior_units,
    prior_units,
    sample_units,
    score_units,
    stage_units,
    study_instances,
    unit_paths,
    valid_seeds_units,
)
from postrisk.tasks.key import Condition, TaskKey, config_digest
from tests.planning.helpers import small_config as _config

#: Table 4's training sizes of the datasets used here (covariates/datasets.yaml).
N_TRAIN = {"concrete": 348, "diamonds": 2000, "diamonds_ideal": 2000}

# SMALL, the small grid over config.yaml these tests build on, and ``_config`` (SMALL merged
# over config.yaml, then layers over it): tests/planning/helpers.py, shared with test_planner.py.

#: BNN on Concrete's bump mode only: two cells where its R̂ decides, six where it does not.
BNN_ON_CONCRETE_BUMP = {"prior_grid": {"bnn": {"datasets": ["concrete"],
                                               "noise_modes": ["bump"]}}}
#: The axes of a condition, as the configuration names them.
AXES = ("datasets", "priors", "noise_modes", "coverages")


@pytest.fixture(scope="module")
def paper(repo):
    return load_config(repo / "config.yaml")


def _inside(narrowing, condition) -> bool:
    return all(v in narrowing.get(axis, [v]) for axis, v in zip(AXES, condition, strict=True))


def _grid(cfg) -> list[Condition]:
    """The conditions: the product of the four lists, each prior narrowed by ``prior_grid``."""
    grid = cfg.get("prior_grid") or {}
    return [Condition(*c) for c in product(*(cfg[a] for a in AXES))
            if _inside(grid.get(c[1], {}), c)]


def _bnn_cells(cfg) -> set[tuple[str, str, str]]:
    return {c.cell for c in _grid(cfg) if c.prior == "bnn"}


def _built(cfg, prior) -> list[int]:
    """Seeds a prior's instances are built on: every candidate with BNN in the grid (else the
    first valid_per_cell), the first seeds.per_prior of them."""
    seeds = cfg["seeds"]
    n = seeds["candidates"] if "bnn" in cfg["priors"] else seeds["valid_per_cell"]
    k = (seeds.get("per_prior") or {}).get(prior, n)
    return list(range(n))[:k]


def _n_valid(cfg, condition) -> int:
    seeds = cfg["seeds"]
    return min(seeds["valid_per_cell"],
               (seeds.get("per_prior") or {}).get(condition.prior, seeds["valid_per_cell"]))


def _usable(cfg, condition) -> list[int]:
    """Seeds a condition's fits may use: every built seed where the BNN R̂ decides, else the
    first n_valid."""
    built = _built(cfg, condition.prior)
    return built if condition.cell in _bnn_cells(cfg) else built[: _n_valid(cfg, condition)]


def _at(kind, c, **keys) -> str:
    """A condition's file, as a literal path (postrisk.grid.paths' templates, written out)."""
    d, p, n, v = c
    return {"sample": f"results/samples/{d}/{p}/{n}/{v}/{keys.get('seed')}.zarr",
            "task": f"results/tasks/{d}/{p}/{n}/{v}/{keys.get('seed')}.zarr",
            "fit": f"results/fits/{d}/{p}/{n}/{v}/{keys.get('method')}.zarr",
            "tuning": f"results/tuning/{d}/{p}/{n}/{v}/{keys.get('method')}.json",
            "journal": f"results/tuning/journals/{d}/{p}/{n}/{v}/{keys.get('method')}.log",
            "scores": f"results/scores/{d}/{p}/{n}/{v}.csv",
            "selection": f"results/checks/seeds/{d}/{n}/{v}.json",
            "de": (f"results/disentanglement/{d}/{p}/{n}/{v}/{keys.get('seed')}/"
                   f"{keys.get('method')}.csv")}[kind]


# ------------------------------------------------------------------------- small helpers

def test_key_wildcards_are_the_instance_key_as_strings():
    key = TaskKey("concrete", "hbart", "bump", "ood", 12)
    assert key_wildcards(key) == {"dataset": "concrete", "prior": "hbart", "noise": "bump",
                                  "coverage": "ood", "seed": "12"}


def test_unit_paths_gives_a_path_or_a_list_of_paths(paper):
    cfg = _config(paper)
    fit = fit_units(cfg, SeedPolicy(cfg))[0]
    assert unit_paths(fit, "fits") == fit.fits and isinstance(unit_paths(fit, "fits"), str)
    assert unit_paths(fit, "samples") == list(fit.samples)
    assert isinstance(unit_paths(fit, "samples"), list) and len(fit.samples) == 3
    assert unit_paths(fit, "selection") == [_at("selection", fit.condition)]
    no_bnn = _config(paper, {"priors": ["gp"]})
    fit = fit_units(no_bnn, SeedPolicy(no_bnn))[0]
    assert unit_paths(fit, "selection") == []  # a tuple, even an empty one: a list


def test_units_are_frozen(paper):
    cfg = _config(paper)
    policy = SeedPolicy(cfg)
    for unit in (covariates_unit("concrete"), prior_units(cfg)[0],
                 sample_units(cfg, policy)[0], fit_units(cfg, policy)[0],
                 score_units(cfg, policy)[0]):
        with pytest.raises(dataclasses.FrozenInstanceError):
            unit.out = "elsewhere"  # type: ignore[misc]


# ------------------------------------------------------------------- covariates and priors

def test_a_covariate_store_names_the_store_whose_scaling_it_takes():
    assert covariates_unit("concrete") == CovariatesUnit(
        "concrete", None, "results/covariates/concrete.zarr")
    red = covariates_unit("red_wine")  # an OOD set, scaled with White Wine's constants
    assert red.reference == "results/covariates/white_wine.zarr"
    assert red.out == "results/covariates/red_wine.zarr"
    assert covariates_unit("diamonds_fair").reference == "results/covariates/diamonds_ideal.zarr"
    assert red.wildcards == {"dataset": "red_wine"} and red.cost_name is None


def test_covariates_units_cover_the_grid_then_the_ood_sets_then_their_references(paper):
    cfg = _config(paper, {"ood_datasets": ["red_wine", "concrete"]})
    units = covariates_units(cfg)
    # Concrete is a task dataset already (once); White Wine only as Red Wine's reference
    assert [u.dataset for u in units] == ["concrete", "diamonds", "red_wine", "white_wine"]
    assert [u.reference for u in units] == [None, None,
                                            "results/covariates/white_wine.zarr", None]
    assert [u.dataset for u in covariates_units(_config(paper))] == ["concrete", "diamonds"]


def test_prior_units_one_per_dataset_and_prior_in_condition_order(paper):
    cfg = _config(paper, {"prior_grid": {"hbart": {"datasets": ["diamonds"]}}})
    units = prior_units(cfg)
    assert [(u.dataset, u.prior) for u in units] == [
        ("concrete", "gp"), ("concrete", "bnn"),
        ("diamonds", "gp"), ("diamonds", "hbart"), ("diamonds", "bnn")]
    for u in units:
        assert u.covariates == f"results/covariates/{u.dataset}.zarr"
        assert u.out == f"results/priors/{u.dataset}/{u.prior}.json"
        assert u.wildcards == {"dataset": u.dataset, "prior": u.prior}
        assert u.cost_name == u.prior


# ------------------------------------------------------------------ samples and posteriors

def test_sample_units_are_every_instance_prior_by_prior_with_its_settings(paper):
    cfg = _config(paper, {"sizes": {"n_cap": 500}, "noise_model": {"strength": 0.75}})
    units = sample_units(cfg, SeedPolicy(cfg))
    # prior by prior; within a prior dataset by dataset, its (noise, coverage) cells sorted,
    # every candidate seed (BNN everywhere: its R̂ decides every cell)
    cells = sorted(product(cfg["noise_modes"], cfg["coverages"]))
    want = [TaskKey(d, p, n, v, s) for p in cfg["priors"] for d in cfg["datasets"]
            for n, v in cells for s in range(3)]
    assert [u.key for u in units] == want
    digests = {p: config_digest(cfg, p) for p in cfg["priors"]}
    assert len(set(digests.values())) == 3  # each prior's own prior settings
    for u in units:
        k = u.key
        assert u.covariates == f"results/covariates/{k.dataset}.zarr"
        assert u.prior == f"results/priors/{k.dataset}/{k.prior}.json"
        assert u.n == min(N_TRAIN[k.dataset], 500)
        assert u.digest == digests[k.prior]
        assert u.noise_strength == 0.75 and isinstance(u.noise_strength, float)
        assert u.out == _at("sample", k.condition, seed=k.seed)
        assert u.inputs == (u.covariates, u.prior) and u.outputs == (u.out,)
        assert u.wildcards == key_wildcards(k)
        assert (u.dataset, u.cost_name) == (k.dataset, k.prior)
    uncapped = _config(paper)
    assert {u.key.dataset: u.n for u in sample_units(uncapped, SeedPolicy(uncapped))} == {
        "concrete": 348, "diamonds": 2000}


def test_posterior_units_are_the_instances_with_their_priors_sampler_settings(paper):
    cfg = _config(paper)
    policy = SeedPolicy(cfg)
    units = posterior_units(cfg, policy)
    # BNN in every cell and no selection known: every sampled instance gets its posterior
    assert [u.key for u in units] == [u.key for u in sample_units(cfg, policy)]
    assert posterior_keys(cfg, policy) == [u.key for u in units]
    for u in units:
        k = u.key
        assert u.settings == cfg["posterior"][k.prior]
        assert u.sample == _at("sample", k.condition, seed=k.seed)
        assert u.out == _at("task", k.condition, seed=k.seed)
        assert u.inputs == (u.sample,) and u.outputs == (u.out,)
        assert u.wildcards == key_wildcards(k) and u.cost_name == k.prior


def test_a_known_selection_keeps_the_posterior_order(paper):
    """With a cell's selection known, its GP and HBART posteriors drop the other seeds; the
    rest keep the order of the sample stores."""
    cfg = _config(paper)
    cell = ("diamonds", "bump", "ood")
    policy = SeedPolicy(cfg, {cell: (2, 0)})
    keys = posterior_keys(cfg, policy)
    dropped = [u.key for u in sample_units(cfg, policy)
               if u.key.condition.cell == cell and u.key.prior != "bnn" and u.key.seed == 1]
    assert len(dropped) == 2
    assert keys == [u.key for u in sample_units(cfg, policy) if u.key not in dropped]


def test_cells_without_bnn_use_their_first_valid_seeds(paper):
    """BNN narrowed to two cells: there every candidate is used and the cell's selection file
    is read; elsewhere the first valid_per_cell seeds are all a condition uses."""
    cfg = _config(paper, BNN_ON_CONCRETE_BUMP)
    policy = SeedPolicy(cfg)
    assert _bnn_cells(cfg) == {("concrete", "bump", "balanced"), ("concrete", "bump", "ood")}
    posteriors = {}
    for u in posterior_units(cfg, policy):
        posteriors.setdefault(u.key.condition, []).append(u.key.seed)
    assert posteriors == {c: _usable(cfg, c) for c in _grid(cfg)}
    # BNN cells: 2 × 3 priors × 3 seeds; the other six cells: GP and HBART × 2 seeds
    assert sum(len(s) for s in posteriors.values()) == 2 * 3 * 3 + 6 * 2 * 2
    for u in [*fit_units(cfg, policy), *score_units(cfg, policy)]:
        bnn = u.condition.cell in _bnn_cells(cfg)
        assert u.seeds == ((0, 1, 2) if bnn else (0, 1))
        assert u.selection == ((_at("selection", u.condition),) if bnn else ())
        assert u.n_valid == 2


def test_every_planned_sample_store_is_read_by_a_posterior_or_a_fit(paper):
    cfg = _config(paper, BNN_ON_CONCRETE_BUMP)
    policy = SeedPolicy(cfg)
    read = ({u.sample for u in posterior_units(cfg, policy)}
            | {s for u in fit_units(cfg, policy) for s in u.samples})
    planned = {u.out for u in sample_units(cfg, policy)}
    assert planned - read == set()
    assert len(planned) == sum(len(_usable(cfg, c)) for c in _grid(cfg))


# --------------------------------------------------------------------------- seed selection

def test_valid_seeds_units_one_per_cell_with_bnn_instances(paper):
    cfg = _config(paper, BNN_ON_CONCRETE_BUMP)
    units = valid_seeds_units(cfg, SeedPolicy(cfg))
    assert [u.cell for u in units] == [("concrete", "bump", "balanced"),
                                       ("concrete", "bump", "ood")]
    for u in units:
        bnn = Condition(u.cell[0], "bnn", *u.cell[1:])
        assert u.bnn_tasks == tuple(_at("task", bnn, seed=s) for s in range(3))
        assert u.n_valid == 2
        assert u.out == _at("selection", bnn)
        assert u.config_digest == selection_digest(cfg)
        assert u.wildcards == {"dataset": "concrete", "noise": "bump", "coverage": u.cell[2]}
        assert u.dataset == "concrete" and u.cost_name is None
    per_prior = _config(paper, BNN_ON_CONCRETE_BUMP,
                        {"seeds": {"valid_per_cell": 2, "candidates": 3,
                                   "per_prior": {"bnn": 2}}})
    assert {len(u.bnn_tasks) for u in valid_seeds_units(per_prior, SeedPolicy(per_prior))} == {2}
    no_bnn = _config(paper, {"priors": ["gp", "hbart"]})
    assert valid_seeds_units(no_bnn, SeedPolicy(no_bnn)) == []


# ------------------------------------------------------------------------- fits and scores

def test_fit_units_method_by_method_where_the_method_grid_allows(paper):
    cfg = _config(paper, BNN_ON_CONCRETE_BUMP, {
        "methods": ["gp", "blr"], "method_grid": {"gp": {"coverages": ["balanced"]}},
        "method_settings": {"blr": {"alpha": 2.0}},
        "tuning": {"methods": ["gp"], "grid": {"noise_modes": ["bump"]}}})
    units = fit_units(cfg, SeedPolicy(cfg))
    want = [(m, c) for m in ("gp", "blr") for c in _grid(cfg)
            if m == "blr" or c.coverage == "balanced"]
    assert [(u.method, u.condition) for u in units] == want
    assert len(units) == 9 + 18  # GP on the 9 balanced conditions, BLR on all 18
    for u in units:
        c, m = u.condition, u.method
        assert u.seeds == tuple(_usable(cfg, c))
        assert u.samples == tuple(_at("sample", c, seed=s) for s in u.seeds)
        assert u.n_valid == 2
        assert u.settings == ({"alpha": 2.0} if m == "blr" else {})
        # tuned: a tuned method (tuning.methods) on a condition inside tuning.grid
        assert u.tuning == (cfg["tuning"] if m == "gp" and c.noise == "bump" else None)
        assert u.journal == _at("journal", c, method=m)
        assert u.fits == _at("fit", c, method=m)
        assert u.config == _at("tuning", c, method=m)
        assert u.inputs == u.samples + u.selection
        assert u.outputs == (u.fits, u.config)
        assert u.label == f"{m} on {c.dataset}/{c.prior}/{c.noise}/{c.coverage}"
        assert u.wildcards == {**c._asdict(), "method": m}
        assert (u.dataset, u.cost_name) == (c.dataset, m)


def test_score_units_one_per_condition_with_the_methods_fitted_there(paper):
    cfg = _config(paper, BNN_ON_CONCRETE_BUMP, {
        "methods": ["gp", "blr"], "method_grid": {"gp": {"datasets": ["diamonds"]}}})
    cell = ("concrete", "bump", "ood")
    policy = SeedPolicy(cfg, {cell: (1, 2)})
    units = score_units(cfg, policy)
    assert [u.condition for u in units] == _grid(cfg)
    for u in units:
        c = u.condition
        known = c.cell == cell and c.prior != "bnn"
        assert u.seeds == ((1, 2) if known else tuple(_usable(cfg, c)))
        assert u.tasks == tuple(_at("task", c, seed=s) for s in u.seeds)
        # the configured order, not sorted; GP on Diamonds only
        assert u.methods == (("gp", "blr") if c.dataset == "diamonds" else ("blr",))
        assert u.fits == tuple(_at("fit", c, method=m) for m in u.methods)
        assert u.out == _at("scores", c)
        assert u.wildcards == c._asdict()
        assert (u.dataset, u.cost_name) == (c.dataset, None)


# ---------------------------------------------------------------------- disentanglement

def test_disentanglement_units_within_its_grid_on_its_built_seeds(paper):
    de = {"grid": {"datasets": ["concrete"], "priors": ["gp", "hbart"],
                   "noise_modes": ["homoscedastic", "bump"], "coverages": ["balanced", "ood"]},
          "seeds": [2, 0, 7], "methods": ["gp", "blr"]}
    cfg = _config(paper, BNN_ON_CONCRETE_BUMP, {
        "disentanglement": de, "method_grid": {"gp": {"coverages": ["ood"]}}})
    units = disentanglement_units(cfg, SeedPolicy(cfg))
    # condition by condition, method by method (in disentanglement.methods' order), seed by
    # seed of disentanglement.seeds that the condition builds: seed 2 only where BNN decides
    # (Concrete's bump cells), seed 7 nowhere
    want = [(c, m, s) for c in _grid(cfg) if c.dataset == "concrete" and c.prior != "bnn"
            for m in ("gp", "blr") if m == "blr" or c.coverage == "ood"
            for s in (2, 0) if s in _usable(cfg, c)]
    assert [(u.condition, u.method, u.seed) for u in units] == want
    assert {u.seed for u in units} == {0, 2}
    for u in units:
        c = u.condition
        assert u.task == _at("task", c, seed=u.seed)
        assert u.fit == _at("fit", c, method=u.method)
        assert u.out == _at("de", c, seed=u.seed, method=u.method)
        assert u.wildcards == {**c._asdict(), "seed": str(u.seed), "method": u.method}
        assert (u.dataset, u.cost_name) == (c.dataset, u.method)
    assert disentanglement_units(cfg) == units  # the configuration's own policy by default
    # a method that `methods` does not configure is skipped; null: every configured method
    unlisted = dict(cfg, disentanglement=dict(cfg["disentanglement"],
                                              methods=["nn_drop", "blr"]))
    assert {u.method for u in disentanglement_units(unlisted)} == {"blr"}
    every = dict(cfg, disentanglement=dict(cfg["disentanglement"], methods=None))
    assert {u.method for u in disentanglement_units(every)} == {"blr", "gp"}
    none = dict(cfg, disentanglement=dict(cfg["disentanglement"], methods=[]))
    assert disentanglement_units(none) == []


# ------------------------------------------------------------------------- the studies

def test_a_study_datasets_instances_are_planned_after_the_benchmarks(paper):
    """The OOD study on the offline pair: Diamonds of ideal cut (a study dataset) gets its
    covariates, priors and sample stores like the benchmark's, after them, and no reference
    posterior; Diamonds of fair cut its covariates only."""
    cfg = _config(paper, {"sizes": {"n_cap": 700}, "studies": {"ood_proxy": {
        "in_distribution": "diamonds_ideal", "ood": "diamonds_fair", "priors": ["hbart", "gp"],
        "noise": "bump", "coverage": "ood", "seeds_per_prior": 2}}})
    policy = SeedPolicy(cfg)
    want = [TaskKey("diamonds_ideal", p, "bump", "ood", s) for p in ("hbart", "gp")
            for s in (0, 1)]
    assert study_instances(cfg) == want
    assert [u.dataset for u in covariates_units(cfg)] == [
        "concrete", "diamonds", "diamonds_ideal", "diamonds_fair"]
    pairs = [(u.dataset, u.prior) for u in prior_units(cfg)]
    assert pairs == [(d, p) for d in ("concrete", "diamonds") for p in ("gp", "hbart", "bnn")
                     ] + [("diamonds_ideal", "hbart"), ("diamonds_ideal", "gp")]
    samples = sample_units(cfg, policy)
    assert [u.key for u in samples[-4:]] == want
    assert [u.key for u in samples[:-4]] == [u.key for u in posterior_units(cfg, policy)]
    for u in samples[-4:]:
        assert u.n == min(N_TRAIN["diamonds_ideal"], 700)
        assert u.digest == config_digest(cfg, u.key.prior)
        assert u.prior == f"results/priors/diamonds_ideal/{u.key.prior}.json"
    assert study_instances(_config(paper)) == []  # White Wine is not in the grid: none


def test_stage_units_are_every_stages_from_one_seed_policy(paper):
    cfg = _config(paper, BNN_ON_CONCRETE_BUMP, {"studies": {"sandbox": {"run": True}}})
    policy = SeedPolicy(cfg, {("concrete", "bump", "ood"): (0,)})
    units = stage_units(cfg, policy)
    study_keys = [name for s in studies() for name in
                  ([st.name for st in s.stages] if s.stages else [s.name])]
    assert list(units) == ["covariates", "prior", "sample", "posterior", "valid_seeds", "fit",
                           "score", "disentanglement", *study_keys]
    assert units["covariates"] == covariates_units(cfg)
    assert units["prior"] == prior_units(cfg)
    for name, enumerate_ in (("sample", sample_units), ("posterior", posterior_units),
                             ("valid_seeds", valid_seeds_units), ("fit", fit_units),
                             ("score", score_units),
                             ("disentanglement", disentanglement_units)):
        assert units[name] == enumerate_(cfg, policy), name
    # the selection reached the posteriors: GP and HBART on seed 0 only in that cell
    assert len(units["posterior"]) == len(stage_units(cfg)["posterior"]) - 2 * 2
    assert stage_units(cfg) == stage_units(cfg, SeedPolicy(cfg))  # deterministic, default
    # a study without unit stages: its name once where its `runs` says it runs, else nothing
    assert units["sandbox"] == ["sandbox"]
    assert stage_units(_config(paper))["sandbox"] == []
    assert all(units[k] == [] for k in study_keys if k != "sandbox")
