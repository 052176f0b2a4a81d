import pytest
import yaml

from postrisk.grid import (
    ConfigError,
    covariate_datasets,
    guard_message,
    load_config,
    n_instances,
    plan,
    validate_config,
)


@pytest.fixture
def paper(repo):
    return load_config(repo / "config.yaml")


def test_paper_config_is_the_full_grid(paper):
    assert len(paper["datasets"]) == 13 and len(paper["methods"]) == 19
    assert n_instances(paper) == 13 * 3 * 4 * 2 * paper["seeds"]["candidates"]
    assert covariate_datasets(paper)[-1] == "red_wine" and len(covariate_datasets(paper)) == 14
    assert plan(paper)[0].jobs == 14


def test_misspelled_dataset_names_key_and_allowed_values(paper):
    bad = dict(paper, datasets=["abalone", "diamnds"])
    with pytest.raises(ConfigError) as err:
        validate_config(bad)
    message = str(err.value)
    assert "datasets[1]" in message and "'diamnds'" in message
    assert "allowed values: abalone, airfoil" in message and "white_wine" in message


@pytest.mark.parametrize("key, value, expected", [
    ("seeds", {"valid_per_cell": 0, "candidates": 13}, "seeds.valid_per_cell"),
    ("sizes", {"n_eval_cap": 0}, "sizes.n_eval_cap"),
    ("sizes", {"n_eval_cap": 1500, "n_cap": -5}, "sizes.n_cap"),
])
def test_non_positive_sizes_rejected(paper, key, value, expected):
    with pytest.raises(ConfigError, match=expected):
        validate_config(dict(paper, **{key: value}))


@pytest.mark.parametrize("key, value, expected", [
    ("priors", ["gp", "hbrat"], "allowed values: gp, hbart, bnn"),
    ("noise_modes", ["bumpy"], "allowed values: homoscedastic, smooth_monotone, bump, edges"),
    ("coverages", ["ood", "balance"], "allowed values: balanced, ood"),
    ("methods", ["nn_ensemble"], "allowed values: blr, gp"),
])
def test_misspelled_vocabulary(paper, key, value, expected):
    with pytest.raises(ConfigError, match=expected):
        validate_config(dict(paper, **{key: value}))


def test_unknown_key_and_seed_consistency(paper):
    with pytest.raises(ConfigError, match="unknown key"):
        validate_config(dict(paper, sede=3))
    with pytest.raises(ConfigError, match="seeds.candidates"):
        validate_config(dict(paper, seeds={"valid_per_cell": 10, "candidates": 5}))


def test_presets_merge_and_validate(repo, tmp_path):
    """A preset merges over config.yaml the way Snakemake's --configfile does (a preset written
    here, so that no preset's values are pinned); both shipped presets validate and pass the
    local guard."""
    preset = tmp_path / "preset.yaml"
    preset.write_text(yaml.safe_dump({
        "scale": "demo", "sizes": {"n_eval_cap": 600}, "covariates":
        {"prefer_offline_package": True}, "tuning": {"trials": 6},
        "group_by": {"fit": ["method"], "posterior": ["dataset", "prior"]},
        "cost_model": {"posterior": {"hbart": {"threads": 2, "minutes": 0.5}}}}))
    paper = load_config(repo / "config.yaml")
    merged = load_config(repo / "config.yaml", preset)
    assert merged["scale"] == "demo" and merged["sizes"]["n_eval_cap"] == 600
    assert merged["covariates"]["prefer_offline_package"] is True
    # tuning merges key by key: a short sweep keeps the paper's validation split
    assert merged["tuning"]["trials"] == 6
    assert merged["tuning"]["validation_fraction"] == paper["tuning"]["validation_fraction"]
    assert merged["group_by"]["fit"] == ["method"]  # lists replace
    assert merged["group_by"]["posterior"] == ["dataset", "prior"]
    # cost entries merge key by key: the preset's MCMC jobs keep the paper's memory model
    hbart, paper_hbart = (c["cost_model"]["posterior"]["hbart"] for c in (merged, paper))
    assert hbart["threads"] == 2 and hbart["minutes"] == 0.5
    assert hbart["mem_mb"] == paper_hbart["mem_mb"] and hbart["power"] == paper_hbart["power"]
    assert merged["covariates"]["raw_dir"] == paper["covariates"]["raw_dir"]  # merged
    for name in ("demo", "smoke"):
        shipped = load_config(repo / "config.yaml", repo / "presets" / f"{name}.yaml")
        assert shipped["scale"] == name and guard_message(shipped) is None


def test_tuning_grid_narrows_the_tuned_conditions(paper):
    from postrisk.grid import is_tuned, tuned_methods

    cond = ("concrete", "gp", "bump", "ood")
    from postrisk.methods.registry import METHOD_ENTRIES

    assert tuned_methods(paper) == [m for m in paper["methods"] if m in METHOD_ENTRIES]
    assert len(tuned_methods(paper)) == len(METHOD_ENTRIES)
    assert is_tuned(paper, "dkl", cond)
    narrowed = validate_config(dict(paper, tuning=dict(paper["tuning"], methods=["dkl"],
                                                       grid={"noise_modes": ["bump"]})))
    assert is_tuned(narrowed, "dkl", cond)
    assert not is_tuned(narrowed, "gp", cond)
    assert not is_tuned(narrowed, "dkl", ("concrete", "gp", "edges", "ood"))
    with pytest.raises(ConfigError, match="tuning.validation_fraction"):
        validate_config(dict(paper, tuning=dict(paper["tuning"], validation_fraction=1.0)))
    with pytest.raises(ConfigError, match="tuning.grid"):
        validate_config(dict(paper, tuning=dict(paper["tuning"], grid={"seeds": [0]})))


def test_guard_stops_full_grid_unless_confirmed(paper):
    message = guard_message(paper)
    assert message and "4,056 instances" in message and "confirm_full_run=True" in message
    assert "core-hours requested" in message and "| posterior_mcmc |" in message
    assert guard_message(dict(paper, confirm_full_run=True)) is None


def test_prior_grid_narrows_a_family_and_rejects_values_outside_the_grid(paper):
    from postrisk.grid import conditions

    narrowed = validate_config(dict(paper, prior_grid={
        "bnn": {"datasets": ["concrete"], "noise_modes": ["homoscedastic", "bump"]}}))
    conds = list(conditions(narrowed))
    bnn = [c for c in conds if c[1] == "bnn"]
    assert len(bnn) == 1 * 2 * 2 and {c[0] for c in bnn} == {"concrete"}
    assert sum(c[1] == "gp" for c in conds) == 13 * 4 * 2
    assert n_instances(narrowed) == (2 * 13 * 8 + 4) * paper["seeds"]["candidates"]
    with pytest.raises(ConfigError, match="prior_grid.hbart.datasets"):
        validate_config(dict(paper, datasets=["concrete"],
                             prior_grid={"hbart": {"datasets": ["diamonds"]}}))


def test_method_grid_narrows_a_method_and_its_jobs(paper):
    from postrisk.grid import (
        Planner,
        condition_methods,
        fits_method,
        implemented_conditions,
        is_tuned,
    )

    cfg = validate_config(dict(paper, datasets=["concrete", "diamonds"], priors=["gp"],
                               methods=["blr", "gp"], method_grid={
        "gp": {"datasets": ["concrete"], "noise_modes": ["bump"], "coverages": ["ood"]}}))
    conds = implemented_conditions(cfg)
    assert len(conds) == 2 * 4 * 2
    fitted = [c for c in conds if fits_method(cfg, "gp", c)]
    assert fitted == [("concrete", "gp", "bump", "ood")]
    assert all(fits_method(cfg, "blr", c) for c in conds)  # not narrowed: everywhere
    assert condition_methods(cfg, ("concrete", "gp", "bump", "ood")) == ["blr", "gp"]
    assert condition_methods(cfg, ("diamonds", "gp", "bump", "ood")) == ["blr"]
    assert not is_tuned(cfg, "gp", ("diamonds", "gp", "bump", "ood"))  # never fitted there
    jobs = [key for rule in Planner(cfg).stage_rules("fit") for key in rule.jobs]
    assert len(jobs) == len(conds) + 1
    with pytest.raises(ConfigError, match="method_grid.gp.datasets"):
        validate_config(dict(paper, datasets=["concrete"],
                             method_grid={"gp": {"datasets": ["diamonds"]}}))
    with pytest.raises(ConfigError, match=r"method_grid': \['gp'\] not in 'methods'"):
        validate_config(dict(paper, methods=["blr"], method_grid={"gp": {}}))
    with pytest.raises(ConfigError, match="method_grid.blr"):
        validate_config(dict(paper, method_grid={"blr": {"seeds": [0]}}))


def test_posterior_settings_are_validated_per_family(paper):
    bad = dict(paper, posterior={**paper["posterior"], "bnn": {**paper["posterior"]["bnn"],
                                                               "target_accept": 1.5}})
    with pytest.raises(ConfigError, match="posterior.bnn.target_accept"):
        validate_config(bad)
    with pytest.raises(ConfigError, match="posterior.hbart"):
        validate_config(dict(paper, posterior={**paper["posterior"], "hbart": {"chains": 4}}))


def test_paths_come_from_one_template_per_kind():
    from postrisk.grid import Condition, path

    cond = Condition("concrete", "gp", "bump", "ood")
    assert cond.path("task", seed=3) == "results/tasks/concrete/gp/bump/ood/3.zarr"
    assert cond.path("fit", method="dkl") == "results/fits/concrete/gp/bump/ood/dkl.zarr"
    assert cond.cell == ("concrete", "bump", "ood")
    # a field left out keeps its Snakemake wildcard; another root moves everything
    assert path("sample", prior="gp") == \
        "results/samples/{dataset}/gp/{noise}/{coverage}/{seed}.zarr"
    assert path("covariates", "elsewhere", dataset="wine") == "elsewhere/covariates/wine.zarr"
    with pytest.raises(KeyError, match="unknown output kind"):
        path("nope")


def test_seed_policy_per_condition(paper):
    from postrisk.grid import SeedPolicy, condition_seeds

    policy = SeedPolicy(paper)
    assert policy.task_seeds == list(range(paper["seeds"]["candidates"]))
    with_bnn = ("concrete", "gp", "bump", "ood")
    assert policy.bnn_decides(with_bnn) and condition_seeds(paper, with_bnn) == policy.task_seeds
    no_bnn = validate_config(dict(paper, priors=["gp", "hbart"]))
    assert not SeedPolicy(no_bnn).bnn_decides(with_bnn)
    assert condition_seeds(no_bnn, with_bnn) == list(range(paper["seeds"]["valid_per_cell"]))
