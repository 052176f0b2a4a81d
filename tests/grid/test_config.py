"""The configuration: schema, validation messages, presets, narrowings, the guard, and the one way
to read it (./config.yaml, else the packaged defaults)."""
import pytest
import yaml

from postrisk.grid.config import ConfigError, deep_merge, load_config, validate_config
from postrisk.planning.conditions import covariate_datasets
from postrisk.planning.plan import guard_message, n_instances, plan


def test_paper_config_is_the_full_grid(paper):
    """config.yaml is the paper's grid: every dataset of Table 4, every prior, noise mode and
    coverage, every method of the method table (read from the registries, not counted here)."""
    from postrisk.covariates.registry import benchmark_datasets
    from postrisk.grid.vocabulary import COVERAGES, METHODS, NOISE_MODES, PRIORS

    assert paper["datasets"] == benchmark_datasets() and paper["methods"] == list(METHODS)
    axes = (paper["datasets"], PRIORS, NOISE_MODES, COVERAGES)
    assert [paper["priors"], paper["noise_modes"], paper["coverages"]] == [list(a) for a in
                                                                         axes[1:]]
    assert n_instances(paper) == (len(paper["datasets"]) * len(PRIORS) * len(NOISE_MODES)
                                  * len(COVERAGES) * paper["seeds"]["candidates"])
    assert covariate_datasets(paper) == [*paper["datasets"], *paper["ood_datasets"]]
    assert paper["ood_datasets"] == ["red_wine"]
    assert plan(paper)[0].jobs == len(covariate_datasets(paper))


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
    from postrisk.planning.conditions import is_tuned, tuned_methods

    cond = ("concrete", "gp", "bump", "ood")
    from postrisk.methods.table import METHOD_ENTRIES

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
    from postrisk.planning.conditions import conditions

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
    from postrisk.planning.conditions import (
        condition_methods,
        fits_method,
        implemented_conditions,
        is_tuned,
    )
    from postrisk.planning.planner import Planner

    cfg = validate_config(dict(paper, datasets=["concrete", "diamonds"], priors=["gp"],
                               methods=["blr", "gp"], method_grid={
        "gp": {"datasets": ["concrete"], "noise_modes": ["bump"], "coverages": ["ood"]}}))
    conds = implemented_conditions(cfg)
    assert len(conds) == 2 * 4 * 2
    fitted = [c for c in conds if fits_method(cfg["method_grid"], "gp", c)]
    assert fitted == [("concrete", "gp", "bump", "ood")]
    assert all(fits_method(cfg["method_grid"], "blr", c) for c in conds)  # not narrowed: everywhere
    assert condition_methods(cfg, ("concrete", "gp", "bump", "ood")) == ["blr", "gp"]
    assert condition_methods(cfg, ("diamonds", "gp", "bump", "ood")) == ["blr"]
    assert not is_tuned(cfg, "gp", ("diamonds", "gp", "bump", "ood"))  # never fitted there
    jobs = [key for rule in Planner(cfg).stage_rules("fit") for key in rule.jobs]
    assert len(jobs) == len(conds) + 1
    with pytest.raises(ConfigError, match="method_grid.gp.datasets"):
        validate_config(dict(paper, datasets=["concrete"],
                             method_grid={"gp": {"datasets": ["diamonds"]}}))
    # a narrowing of a method that `methods` does not list is ignored (test_narrowing_...)
    assert validate_config(dict(paper, methods=["blr"], method_grid={"gp": {}}))[
        "method_grid"] == {}
    with pytest.raises(ConfigError, match="method_grid.blr"):
        validate_config(dict(paper, method_grid={"blr": {"seeds": [0]}}))


#: An outside method (tests/methods/test_outside.py fits it), named by location.
KNN = "examples.knn_uncertainty:KNNUncertainty"
#: The logger of the one warning about ignored method entries.
METHODS_LOGGER = "postrisk.grid.config_methods"


def _method_preset(tmp_path, **extra):
    """A preset (written here) that names paper methods and an outside method in every section
    that names methods, as a preset does."""
    return _write(tmp_path / "preset.yaml", {
        "methods": ["blr", "gp", "vlgp", KNN],
        "tuning": {"methods": ["vlgp", "knn_uncertainty", "blr"]},
        "disentanglement": {"methods": ["blr", "vlgp"]},
        "method_settings": {"vlgp": {"num_iters": 10}, "gp": {}},
        "method_grid": {"vlgp": {"coverages": ["balanced"]},
                        "knn_uncertainty": {"coverages": ["ood"]}},
        "method_search_spaces": {"knn_uncertainty": {"n_neighbors": ["int", 2, 8]}},
        **extra})


def _method_warnings(caplog):
    return [r.getMessage() for r in caplog.records if r.name == METHODS_LOGGER]


def _ignored(warning: str) -> dict[str, set[str]]:
    """The entries a warning says were ignored: section -> method names."""
    listing = warning.split("does not list: ", 1)[1]
    return {section: set(names.split(", ")) for section, names in
            (part.split(" ", 1) for part in listing.split("; "))}


def test_narrowing_a_presets_methods_ignores_their_entries_with_one_warning(repo, tmp_path,
                                                                             caplog):
    """A file over a preset that lists fewer methods: the preset's entries for the methods it
    dropped (paper methods and outside methods, in all five sections) are ignored, with one
    warning naming them, instead of failing (and instead of copying the whole preset)."""
    from postrisk.grid.config import merge_layers, read_layers
    from postrisk.planning.conditions import tuned_methods

    preset = _method_preset(tmp_path)
    narrow = _write(tmp_path / "narrow.yaml", {"methods": ["blr", "gp"]})
    with caplog.at_level("WARNING", logger=METHODS_LOGGER):
        cfg = load_config(repo / "config.yaml", preset, narrow)
    assert cfg["methods"] == ["blr", "gp"] and "outside_methods" not in cfg
    assert cfg["tuning"]["methods"] == ["blr"] and tuned_methods(cfg) == ["blr"]
    assert cfg["disentanglement"]["methods"] == ["blr"]
    assert cfg["method_settings"] == {"gp": {}}
    assert cfg["method_grid"] == {} and cfg["method_search_spaces"] == {}
    [warning] = _method_warnings(caplog)
    assert _ignored(warning) == {
        "tuning.methods": {"vlgp", "knn_uncertainty"}, "disentanglement.methods": {"vlgp"},
        "method_settings": {"vlgp"}, "method_grid": {"vlgp", "knn_uncertainty"},
        "method_search_spaces": {"knn_uncertainty"}}
    caplog.clear()
    with caplog.at_level("WARNING", logger=METHODS_LOGGER):
        assert validate_config(cfg) == cfg  # validating again: nothing left to ignore
    assert _method_warnings(caplog) == []
    # every tuned method dropped: none is tuned (an empty list, not null: "all of them")
    only_gp = load_config(repo / "config.yaml", preset,
                          _write(tmp_path / "gp.yaml", {"methods": ["gp"]}))
    assert only_gp["tuning"]["methods"] == [] and tuned_methods(only_gp) == []
    # the outside method is known from the preset that listed it: without the files merged,
    # its name is no method's at all
    layers = read_layers(repo / "config.yaml", preset, narrow)
    merged = merge_layers(layers)  # the fitted cost model, config.yaml, the preset, the narrowing
    with pytest.raises(ConfigError, match=r"tuning.methods': \['knn_uncertainty'\] are "
                                          "neither methods of the paper"):
        validate_config(merged)
    assert validate_config(merged, layers) == cfg


@pytest.mark.parametrize("section, value, message", [
    ("tuning", {"methods": ["blr", "gpp"]}, r"tuning.methods': \['gpp'\] are neither"),
    ("disentanglement", {"methods": ["blrr"]}, r"disentanglement.methods': \['blrr'\]"),
    ("method_settings", {"vlpg": {}}, r"method_settings': \['vlpg'\] are neither"),
    ("method_grid", {"knn_uncertanty": {}}, r"method_grid': \['knn_uncertanty'\]"),
    ("method_search_spaces", {"gp": {}}, r"\['gp'\] are not outside methods"),
    ("method_search_spaces", {"knn": {}}, r"\['knn'\] are not outside methods"),
])
def test_a_misspelled_method_entry_still_fails(repo, tmp_path, section, value, message):
    """Over a narrowing: a name that is no paper method and no outside method of any merged
    file is a typo, in every section that names methods; a paper method's search space too."""
    preset = _method_preset(tmp_path)
    narrow = _write(tmp_path / "narrow.yaml", {"methods": ["blr", "gp"], section: value})
    with pytest.raises(ConfigError, match=message):
        load_config(repo / "config.yaml", preset, narrow)


def test_a_null_clears_a_presets_section(repo, tmp_path):
    """`method_grid: null` (likewise method_settings, method_search_spaces, prior_grid) over a
    preset clears the preset's section; an empty mapping merges and clears nothing."""
    from postrisk.planning.plan import n_instances

    preset = _method_preset(tmp_path, prior_grid={"hbart": {"datasets": ["concrete"]}})
    kept = load_config(repo / "config.yaml", preset, _write(
        tmp_path / "empty.yaml", {"method_grid": {}, "prior_grid": {}}))
    assert kept["method_grid"] and kept["prior_grid"]
    cleared = load_config(repo / "config.yaml", preset, _write(tmp_path / "null.yaml", {
        "method_grid": None, "method_settings": None, "method_search_spaces": None,
        "prior_grid": None}))
    assert cleared["methods"] == kept["methods"]
    for key in ("method_grid", "method_settings", "method_search_spaces", "prior_grid"):
        assert cleared[key] == {}, key
    assert n_instances(cleared) > n_instances(kept)
    assert validate_config(cleared) == cleared


@pytest.mark.slow
def test_narrowing_the_demo_preset_to_two_of_its_methods(repo, tmp_path, caplog):
    """The shipped demo preset narrowed by a one-line file to two of its methods: the
    configuration validates and plans; each entry the demo has for another method is named in
    the one warning (slow: it imports the demo's outside methods)."""
    from postrisk.methods.outside import is_location
    from postrisk.planning.planner import Planner

    demo = repo / "presets" / "demo.yaml"
    full = load_config(repo / "config.yaml", demo)
    keep = [m for m in yaml.safe_load(demo.read_text())["methods"] if not is_location(m)][:2]
    narrow = _write(tmp_path / "narrow.yaml", {"methods": keep})
    with caplog.at_level("WARNING", logger=METHODS_LOGGER):
        cfg = load_config(repo / "config.yaml", demo, narrow)
    assert cfg["methods"] == keep
    [warning] = _method_warnings(caplog)
    ignored = _ignored(warning)
    for key in ("tuning.methods", "disentanglement.methods", "method_settings", "method_grid"):
        section, before = cfg, full
        for part in key.split("."):
            section, before = section[part], before[part]
        assert set(section or []) <= set(keep), key
        assert ignored.get(key, set()) == set(before or []) - set(keep), key
    fitted = {u.method for rule in Planner(cfg).stage_rules("fit") for job in rule.jobs.values()
              for u in job.payload}
    assert fitted == set(keep)


def test_posterior_settings_are_validated_per_family(paper):
    bad = dict(paper, posterior={**paper["posterior"], "bnn": {**paper["posterior"]["bnn"],
                                                               "target_accept": 1.5}})
    with pytest.raises(ConfigError, match="posterior.bnn.target_accept"):
        validate_config(bad)
    with pytest.raises(ConfigError, match="posterior.hbart"):
        validate_config(dict(paper, posterior={**paper["posterior"], "hbart": {"chains": 4}}))


def _write(path, data):
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture
def own_checkout(repo, tmp_path, monkeypatch):
    """A working directory with its own config.yaml (config.yaml with one value changed)."""
    data = yaml.safe_load((repo / "config.yaml").read_text())
    data["local_guard"]["max_instances"] = 7
    _write(tmp_path / "config.yaml", data)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """A working directory without a config.yaml (outside a checkout)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_packaged_defaults_are_the_checkouts_config(repo):
    from postrisk.grid.config import default_config_path

    assert default_config_path().read_text() == (repo / "config.yaml").read_text()


def test_read_config_uses_the_working_directorys_config(own_checkout, paper):
    from postrisk.grid.config import read_config

    cfg = read_config()
    assert cfg["local_guard"]["max_instances"] == 7
    assert cfg == validate_config(dict(paper, local_guard={"max_instances": 7}))


def test_read_config_without_one_uses_the_packaged_defaults(elsewhere, paper):
    from postrisk.grid.config import read_config

    assert not (elsewhere / "config.yaml").exists()
    assert read_config() == paper


@pytest.mark.parametrize("where", ["own_checkout", "elsewhere"])
def test_configfiles_merge_over_the_base(where, request, paper, tmp_path):
    from postrisk.grid.config import read_config

    request.getfixturevalue(where)
    first = _write(tmp_path / "first.yaml", {"tuning": {"trials": 6}, "scale": "demo"})
    second = _write(tmp_path / "second.yaml", {"scale": "smoke"})
    cfg = read_config(first, second)
    assert cfg["scale"] == "smoke" and cfg["tuning"]["trials"] == 6  # in order
    assert cfg["tuning"]["validation_fraction"] == paper["tuning"]["validation_fraction"]
    assert cfg["local_guard"]["max_instances"] == (7 if where == "own_checkout" else
                                                   paper["local_guard"]["max_instances"])
    assert read_config(first, base=tmp_path / "config.yaml" if where == "own_checkout"
                       else None)["scale"] == "demo"


@pytest.mark.parametrize("where", ["own_checkout", "elsewhere"])
def test_cli_plan_merges_its_files_over_config_yaml(where, request, tmp_path, capsys):
    """`postrisk plan FILE`: FILE merged over config.yaml, not instead of it (a file naming one
    key alone is not a whole configuration)."""
    from postrisk.cli import main
    from postrisk.evaluation.paper import reported_fit_hours
    from postrisk.grid.config import read_config
    from postrisk.planning.plan import plan_report

    hours = reported_fit_hours()
    assert hours == {"final fits": 2850.0, "sweeps": 3150.0}  # App. C
    request.getfixturevalue(where)
    one_key = _write(tmp_path / "one_key.yaml", {"datasets": ["concrete"]})
    assert main(["plan", str(one_key)]) == 0
    said = capsys.readouterr().out
    merged = read_config(one_key)
    assert merged["priors"] and merged["cost_model"]  # every other key from config.yaml
    assert said == plan_report(merged, paper_fit_hours=hours) + "\n"
    assert main(["plan"]) == 0 and capsys.readouterr().out == plan_report(
        read_config(), paper_fit_hours=hours) + "\n"


def test_cli_plan_bad_config_is_one_line(elsewhere, capsys):
    from postrisk.cli import BAD_CONFIG, main

    bad = _write(elsewhere / "bad.yaml", {"priors": ["gpp"]})
    assert main(["plan", str(bad)]) == BAD_CONFIG
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "'gpp' is not allowed" in err


def _fake_download(monkeypatch):
    """`postrisk download` with the download replaced by a record of its arguments."""
    from types import SimpleNamespace

    import postrisk.release.download as download

    calls = []

    def fake(base_url, dest, **kwargs):
        calls.append({"base_url": base_url, "dest": dest, **kwargs})
        return SimpleNamespace(downloaded=[], skipped=[], bytes_downloaded=0, seconds=0.0)

    real = download.download_release
    monkeypatch.setattr(download, "download_release", fake)
    return calls, lambda: monkeypatch.setattr(download, "download_release", real)


def test_cli_download_outside_a_checkout_uses_the_packaged_defaults(elsewhere, paper,
                                                                      monkeypatch, capsys):
    from pathlib import Path

    from postrisk.cli import main

    calls, restore = _fake_download(monkeypatch)
    release = paper["release"]
    assert main(["download", "--url", "https://example.org/r"]) == 0
    assert calls[-1] == {"base_url": "https://example.org/r",
                         "dest": Path(release["download_dir"]), "datasets": release["datasets"],
                         "priors": release["priors"], "retries": release["retries"],
                         "timeout_s": release["timeout_s"], "replace": False}
    # a --configfile setting one key keeps the packaged defaults' others
    mine = _write(elsewhere / "mine.yaml", {"release": {"timeout_s": 5}})
    assert main(["download", "--url", "https://example.org/r", "--configfile", str(mine)]) == 0
    assert calls[-1]["timeout_s"] == 5 and calls[-1]["retries"] == release["retries"]
    assert calls[-1]["dest"] == Path(release["download_dir"])
    assert main(["download", "--url", "https://example.org/r", "--replace"]) == 0
    assert calls[-1]["replace"] is True  # on purpose only
    # without a URL: the packaged base_url (null), one line, exit 2
    capsys.readouterr()
    restore()
    assert main(["download"]) == 2 and "no release URL" in capsys.readouterr().err


def test_fetch_settings_from_the_config(paper, monkeypatch):
    """The covariates section as it is; the library's field defaults agree with config.yaml."""
    from pathlib import Path

    from postrisk.covariates import FetchSettings

    section = paper["covariates"]
    monkeypatch.delenv("POSTRISK_OPENML_URL", raising=False)
    monkeypatch.delenv("POSTRISK_UCI_URL", raising=False)
    assert FetchSettings.from_config(section) == FetchSettings()
    monkeypatch.setenv("POSTRISK_UCI_URL", "http://127.0.0.1:9")
    mine = FetchSettings.from_config({"raw_dir": "elsewhere", "fetch_retries": 5,
                                      "fetch_timeout_s": 2.5, "prefer_offline_package": True})
    assert mine == FetchSettings(raw_dir=Path("elsewhere"), uci_url="http://127.0.0.1:9",
                                 retries=5, timeout_s=2.5, prefer_offline_package=True)
    assert FetchSettings.from_config(section, raw_dir="x").raw_dir == Path("x")


def test_the_fitted_cost_model_is_read_under_every_configuration(repo, tmp_path):
    """config.yaml holds what a person edits: no cost model, no machine-fitted line. The cost
    model (cost_model.yaml) is read under it, by the commands and the workflow alike, and a
    user's entry wins, number by number (the rest of that entry stays the fitted one)."""
    from postrisk.grid.config import cost_model_path, read_config
    from postrisk.planning.cost import CostModel

    raw = yaml.safe_load((repo / "config.yaml").read_text())
    assert "cost_model" not in raw
    assert "# measured" not in (repo / "config.yaml").read_text()
    fitted = yaml.safe_load(cost_model_path().read_text())
    assert set(fitted) == {"cost_model"}
    assert cost_model_path().resolve() == (repo / "cost_model.yaml").resolve()
    snakefile = (repo / "Snakefile").read_text()
    assert snakefile.index('"cost_model.yaml"') < snakefile.index('"config.yaml"')

    paper = load_config(repo / "config.yaml")
    assert paper["cost_model"] == fitted["cost_model"]
    assert read_config(base=repo / "config.yaml") == paper

    entry = fitted["cost_model"]["fit"]["nn_ens"]
    user = _write(tmp_path / "mine.yaml", {"cost_model": {"fit": {"nn_ens": {"minutes": 99.0}},
                                                          "margin": 3.0}})
    cfg = read_config(user, base=repo / "config.yaml")
    assert cfg["cost_model"]["fit"]["nn_ens"] == {**entry, "minutes": 99.0}
    assert cfg["cost_model"]["margin"] == 3.0
    assert CostModel.of(cfg).entry("fit", "nn_ens")["minutes"] == 99.0
    assert CostModel.of(paper).entry("fit", "nn_ens")["minutes"] == entry["minutes"] != 99.0
    others = {k: v for k, v in cfg["cost_model"].items() if k not in ("fit", "margin")}
    assert others == {k: v for k, v in fitted["cost_model"].items() if k not in ("fit", "margin")}
    # a bad user entry is still a config error naming the key
    bad = _write(tmp_path / "bad.yaml", {"cost_model": {"fit": {"nn_ens": {"minutes": -1}}}})
    with pytest.raises(ConfigError, match="cost_model.fit"):
        read_config(bad, base=repo / "config.yaml")


def test_each_method_is_named_once(repo):
    """The Disentanglement Error's methods default to the benchmark's (null), so config.yaml
    lists the methods once; a list narrows them."""
    from postrisk.planning.conditions import disentanglement_methods, implemented_methods

    raw = yaml.safe_load((repo / "config.yaml").read_text())
    assert raw["disentanglement"]["methods"] is None
    paper = load_config(repo / "config.yaml")
    assert disentanglement_methods(paper) == implemented_methods(paper) == paper["methods"]
    narrowed = validate_config(deep_merge(paper, {"disentanglement": {"methods": ["gp", "blr"]}}))
    assert disentanglement_methods(narrowed) == ["gp", "blr"]


def test_one_section_is_read_and_checked_alone(repo, tmp_path, monkeypatch):
    """read_section: the section read_config would return (same files, same merge), checked
    against its own schema; a bad value there is a ConfigError naming the key, a bad key
    elsewhere is not its business."""
    from postrisk.grid.config import read_config, read_section

    monkeypatch.chdir(tmp_path)  # no ./config.yaml: the packaged defaults
    assert read_section("release") == read_config()["release"]
    mine = _write(tmp_path / "mine.yaml", {"release": {"download_dir": "elsewhere"},
                                           "datasets": ["not_a_dataset"]})
    assert read_section("release", mine)["download_dir"] == "elsewhere"
    with pytest.raises(ConfigError, match="datasets"):
        read_config(mine)
    bad = _write(tmp_path / "bad.yaml", {"release": {"retries": 0}})
    with pytest.raises(ConfigError, match=r"release\.retries"):
        read_section("release", bad)
    with pytest.raises(KeyError, match="not a section read alone"):
        read_section("methods")



def test_a_file_that_is_not_yaml_or_not_a_mapping_is_one_line(tmp_path, capsys):
    """Fault: a YAML syntax error or a list-shaped file gave an 86-line traceback in `postrisk
    plan` and `postrisk download`."""
    from postrisk.cli import main

    broken, listed = tmp_path / "broken.yaml", tmp_path / "listed.yaml"
    broken.write_text("methods: [blr\n")
    listed.write_text("- blr\n- gp\n")
    for args in (["plan", str(broken)], ["download", "--url", "http://127.0.0.1:9",
                                         "--configfile", str(broken)]):
        assert main(args) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [f"error: {broken}: not valid YAML at line 2, column 1: expected ',' or "
                       "']', but got '<stream end>'"]
    assert main(["plan", str(listed)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"error: {listed}: a configuration file is a mapping of keys (like `methods: [blr, gp]`), "
        "not a list"]
    # the workflow through `postrisk run`: checked before snakemake starts (its own message
    # names neither the file nor the place)
    for args, named in ((["run", "-n", "--cores", "1", "--configfile", str(broken)], broken),
                        (["run", "-n", f"--configfile={listed}", "--cores", "1"], listed)):
        assert main(args) == 2
        [line] = capsys.readouterr().err.strip().splitlines()
        assert line.startswith(f"error: {named}: ")


def test_the_config_files_snakemake_is_given_are_found():
    from postrisk.cli import _configfiles

    assert _configfiles(["-n", "--configfile", "a.yaml", "b.yaml", "--cores", "2", "x"]) == [
        "a.yaml", "b.yaml"]
    assert _configfiles(["--configfiles=c.yaml", "--config", "k=1"]) == ["c.yaml"]
    assert _configfiles(["results/x.zarr", "--cores", "2"]) == []


def test_an_unknown_method_over_a_preset_is_its_error_alone(repo, tmp_path, caplog):
    """Fault: a misspelt method in a file over a preset was preceded by a warning that the
    preset's entries of every other method are ignored."""
    preset = _method_preset(tmp_path)
    typo = _write(tmp_path / "typo.yaml", {"methods": ["blr", "nn_enz"]})
    with caplog.at_level("WARNING", logger=METHODS_LOGGER):
        with pytest.raises(ConfigError, match=r"^config key 'methods\[1\]': 'nn_enz' is not "
                                              "allowed"):
            load_config(repo / "config.yaml", preset, typo)
    assert _method_warnings(caplog) == []


def test_a_misspelt_hyper_parameter_stops_before_any_job(repo, tmp_path, paper, capsys):
    """Fault: `method_settings: {blr: {alphaa: 2}}` passed validation and the dry run and
    failed only inside the fit job."""
    from postrisk.cli import main
    from postrisk.grid.config_methods import check_method_settings

    for preset in ("demo", "studies", "smoke", "paper_slice"):  # every preset's settings hold
        check_method_settings(load_config(repo / "config.yaml", repo / f"presets/{preset}.yaml"))
    check_method_settings(paper)
    typo = _write(tmp_path / "typo.yaml", {"method_settings": {"blr": {"alphaa": 2}}})
    with pytest.raises(ConfigError, match=r"^config key 'method_settings.blr': unknown "
                                          r"hyper-parameter\(s\) \['alphaa'\] .*allowed: "
                                          r"evidence, max_iter, noise_std, prior_precision, tol$"):
        check_method_settings(load_config(repo / "config.yaml", typo))
    assert main(["plan", str(typo)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: config key 'method_settings.blr': unknown hyper-parameter(s) ['alphaa'] (these "
        "are not hyper-parameters of blr); allowed: evidence, max_iter, noise_std, "
        "prior_precision, tol"]
