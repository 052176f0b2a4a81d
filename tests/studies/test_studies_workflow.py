"""The studies' stages in the real DAG at toy size (`snakemake studies`), and their plan."""

import json

import pandas as pd
import pytest
import yaml

from postrisk.core.io import open_zarr
from postrisk.grid.config import ConfigError, load_config
from postrisk.grid.paths import path
from postrisk.planning.cost import CostModel
from postrisk.planning.planner import Planner
from postrisk.tasks.store import validate_store
from tests.workflow_helpers import REPO, snakemake

#: These tests start Snakemake (select them with `-m workflow`).
pytestmark = pytest.mark.workflow

SMOKE = REPO / "presets" / "smoke.yaml"
#: One toy HBART instance of Concrete (few trees, chains and iterations, no tempered stage: one
#: compiled loop per run length), nothing fitted, and the warm-up study at factor 1: the same
#: run, so every change must be zero (a longer warm-up against an unconverged one:
#: tests/report/test_warmup.py). The jobs share JAX's persistent compilation cache, so the
#: study's run reuses the benchmark run's compiled loop.
TOY_STUDIES = {
    "datasets": ["concrete"], "priors": ["hbart"], "noise_modes": ["smooth_monotone"],
    "coverages": ["ood"], "methods": [], "tuning": {"methods": []},
    "disentanglement": {"methods": []},
    "hbart_prior": {"num_trees": 20, "scale_draws": 20},
    "posterior": {"hbart": {"chains": 4, "warmup": 12, "draws_per_chain": 10, "thin": 2,
                            "tempering": {"t0": 3.0, "stages": 1, "share": 0.0}}},
    "studies": {"warmup_check": {"prior": "hbart", "datasets": ["concrete"],
                                 "factors": [1]}},
    "group_by": {"posterior": ["dataset", "prior"],
                 "warmup_check_posterior": ["dataset", "prior"]},
    "cost_model": {"posterior": {"hbart": {"threads": 1, "minutes": 1.0, "mem_mb": 1000}},
                   "warmup_check_posterior": {"hbart": {"threads": 1, "minutes": 1.0,
                                                        "mem_mb": 1000}}},
}


def _toy_config(tmp_path) -> str:
    preset = tmp_path / "toy_studies.yaml"
    preset.write_text(yaml.safe_dump(TOY_STUDIES))
    return str(preset)


@pytest.mark.slow  # 42 s: the fast tier keeps the sandbox and the config checks
def test_warmup_study_at_toy_size(tmp_path):
    config = _toy_config(tmp_path)
    planner = Planner(load_config(REPO / "config.yaml", SMOKE, config))
    assert planner.studies() == ["warmup_check"]
    run = snakemake(tmp_path, "studies", "--cores", "2", "--configfile", str(SMOKE), config,
                    env={"JAX_COMPILATION_CACHE_DIR": str(tmp_path / "jax_cache")})
    assert run.returncode == 0, run.stderr[-3000:]
    units = planner.units["warmup_check_posterior"]
    assert [u.factor for u in units] == [1]
    for unit in units:
        store = validate_store(tmp_path / unit.out, kind="task")
        settings = json.loads(store.attrs["sampler_settings"])
        assert settings["warmup"] == 12 * unit.factor
        assert settings["tempering"] == TOY_STUDIES["posterior"]["hbart"]["tempering"]
    summary = pd.read_csv(tmp_path / "results/studies/warmup_check.csv").set_index("factor")
    # factor 1: the same sample, posterior seed and settings rebuild the benchmark's posterior
    same = summary.loc[1]
    assert same["coverage90_change"] == 0 and same["sd_change_max"] == 0, same
    base = open_zarr(tmp_path / units[0].task)
    again = open_zarr(tmp_path / units[0].out)
    assert (base["posterior_draws"].values == again["posterior_draws"].values).all()
    page = (tmp_path / "results/studies/index.html").read_text()
    assert "HBART warm-up check" in page and "postrisk studies" in page
    # the benchmark's report does not list the study's tables
    assert not any(i.entry.id.startswith("warmup") for i in planner.report_contents())
    # nothing left to do
    again = snakemake(tmp_path, "studies", "-n", "--configfile", str(SMOKE), config)
    assert "Nothing to be done" in again.stdout + again.stderr


def test_the_paper_config_plans_the_warmup_check_with_resources():
    planner = Planner(load_config(REPO / "config.yaml"))
    cfg = planner.config
    study = cfg["studies"]["warmup_check"]
    units = planner.units["warmup_check_posterior"]
    hbart_keys = [k for k in planner.task_stores() if "/hbart/" in k
                  and k.split("/")[2] in study["datasets"]]
    assert units and len(units) == len(hbart_keys) * len(study["factors"])
    assert {u.key.dataset for u in units} == set(study["datasets"])
    for unit in units:  # k × the warm-up, everything else (the tempered share) unchanged
        base = cfg["posterior"][unit.key.prior]
        assert unit.settings == {**base, "warmup": base["warmup"] * unit.factor}
    for rule in planner.stage_rules("warmup_check_posterior"):
        assert rule.accelerator  # the HBART prior declares a GPU; the paper config uses one
        for job in rule.jobs.values():
            assert job.resources.gpu == 1 and job.resources.runtime > 0
            assert job.resources.threads == CostModel.of(cfg).entry(
                "warmup_check_posterior", "hbart", gpu=True)["threads"]
    assert planner.rule("warmup_check").jobs
    assert "results/studies/index.html" in planner.study_files()


def test_a_config_without_study_datasets_in_its_grid_plans_no_study(tmp_path):
    # the smoke grid has no HBART instance: a warm-up study of HBART on Concrete plans nothing
    config = tmp_path / "hbart_study_without_hbart.yaml"
    config.write_text(yaml.safe_dump({"priors": ["gp"], "studies": {"warmup_check": {
        "prior": "hbart", "datasets": ["concrete"], "factors": [4]}}}))
    planner = Planner(load_config(REPO / "config.yaml", SMOKE, config))
    assert planner.studies() == [] and planner.study_files() == []
    assert not planner.rule("warmup_check").jobs


def test_the_studies_preset_reuses_the_demos_instances():
    demo = Planner(load_config(REPO / "config.yaml", REPO / "presets" / "demo.yaml"))
    studies = Planner(load_config(REPO / "config.yaml", REPO / "presets" / "demo.yaml",
                                  REPO / "presets" / "studies.yaml"))
    assert studies.studies()
    # same task stores, same posterior jobs: `make studies` rebuilds none of the demo's stores
    assert studies.task_stores() == demo.task_stores()
    for stage in ("posterior", "fit", "score"):  # and the same fits and scores
        assert [(r.name, j.payload) for r in studies.stage_rules(stage)
                for j in r.jobs.values()] == [(r.name, j.payload) for r in demo.stage_rules(stage)
                                              for j in r.jobs.values()]
    # the study dataset's instances are jobs of their own, beside the demo's unchanged ones
    demo_samples = {(r.name, k): j.payload for r in demo.stage_rules("sample")
                    for k, j in r.jobs.items()}
    assert all({(r.name, k): j.payload for r in studies.stage_rules("sample")
                for k, j in r.jobs.items()}.get(key) == payload
               for key, payload in demo_samples.items())


#: The OOD study at toy size on the offline pair: two cheap methods on the smoke grid's one GP
#: instance of Concrete (the benchmark ranking) and on two GP instances of the study dataset,
#: asked at 60 held-out points and 60 OOD rows.
TOY_OOD = {
    "methods": ["blr", "examples.knn_uncertainty:KNNUncertainty"],
    "tuning": {"methods": []}, "disentanglement": {"methods": []},
    "studies": {"ood_proxy": {"in_distribution": "diamonds_ideal", "ood": "diamonds_fair",
                              "priors": ["gp"], "seeds_per_prior": 2, "n_query": 60}},
    "group_by": {"ood_proxy_fit": ["method"]},
}


@pytest.mark.slow  # 73 s
def test_ood_study_at_toy_size(tmp_path):
    preset = tmp_path / "toy_ood.yaml"
    preset.write_text(yaml.safe_dump(TOY_OOD))
    planner = Planner(load_config(REPO / "config.yaml", SMOKE, preset))
    assert planner.studies() == ["ood_proxy"]
    units = planner.units["ood_proxy_fit"]
    assert {u.method for u in units} == {"blr", "knn_uncertainty"}
    assert all(u.benchmark is None and u.seeds == (0, 1) for u in units)  # a study dataset
    run = snakemake(tmp_path, "studies", "--cores", "2", "--configfile", str(SMOKE), str(preset))
    assert run.returncode == 0, run.stderr[-3000:]
    results = tmp_path / "results" / "studies"
    table11 = pd.read_csv(results / "table11.csv")
    assert (table11["scale"] == "smoke").all()
    assert table11["method"].tolist()[-3:] == ["mahalanobis", "knn10", "classifier"]
    assert set(table11["method"][:2]) == {"blr", "knn_uncertainty"}
    assert (table11["n_instances"] == 2).all()
    assert table11["auroc_all"].between(0, 1).all()
    # (the classifier bound's 5 folds need more matched points than the toy size leaves)
    assert table11.loc[table11["method"] != "classifier", "auroc_matched"].between(0, 1).all()
    # the offline pair is a real shift: the separability bound sees it
    assert table11.set_index("method").loc["classifier", "auroc_all"] > 0.7
    table12 = pd.read_csv(results / "table12.csv")
    assert len(table12) == 8 and set(table12["version"]) == {"all", "matched"}
    truth = pd.read_csv(results / "ood_ground_truth.csv")
    assert "GP oracle: true posterior variance" in truth["display_name"].tolist()
    assert (results / "fig3b_ood_auroc.png").stat().st_size > 0
    assert (results / "fig3b_ood_auroc.pdf").stat().st_size > 0
    for unit in units:
        store = open_zarr(tmp_path / unit.out)
        assert store.attrs["ood_dataset"] == "diamonds_fair"
        assert store["is_ood"].values.sum(axis=1).tolist() == [60, 60]
    page = (results / "index.html").read_text()
    assert "paper Table 11" in page and "paper Figure 3B" in page
    # the study's instances are sample stores: no reference posterior was sampled for them
    assert not (tmp_path / "results/tasks/diamonds_ideal").exists()
    again = snakemake(tmp_path, "studies", "-n", "--configfile", str(SMOKE), str(preset))
    assert "Nothing to be done" in again.stdout + again.stderr


def test_the_paper_config_plans_the_wine_study_with_resources():
    planner = Planner(load_config(REPO / "config.yaml"))
    study = planner.config["studies"]["ood_proxy"]
    assert (study["in_distribution"], study["ood"]) == ("white_wine", "red_wine")
    units = planner.units["ood_proxy_fit"]
    cells = {(u.condition.prior, u.condition.noise, u.condition.coverage) for u in units}
    assert cells == {(p, study["noise"], study["coverage"]) for p in study["priors"]}
    assert {u.method for u in units} == set(planner.config["methods"])  # no ablation in it
    for unit in units:  # the benchmark's own instances and fits
        assert unit.condition.dataset == "white_wine" and unit.benchmark in unit.inputs
        assert unit.benchmark == path("fit", **unit.condition._asdict(), method=unit.method)
        assert unit.n_seeds == study["seeds_per_prior"] and unit.n_query == study["n_query"]
        assert unit.ood_covariates == path("covariates", dataset="red_wine")
    for rule in planner.stage_rules("ood_proxy_fit"):
        for job in rule.jobs.values():
            assert job.resources.threads >= 1 and job.resources.runtime > 0
    assert planner.rule("ood_proxy").jobs
    files = planner.study_files()
    assert "results/studies/table11.csv" in files and "results/studies/table12.csv" in files


def test_an_ood_study_of_a_benchmark_dataset_outside_the_grid_plans_nothing(tmp_path):
    # White Wine is a benchmark dataset: its instances are the grid's, and this grid has none
    config = tmp_path / "wine_outside_the_grid.yaml"
    config.write_text(yaml.safe_dump({"datasets": ["concrete"], "studies": {"ood_proxy": {
        "in_distribution": "white_wine", "ood": "red_wine"}}}))
    planner = Planner(load_config(REPO / "config.yaml", SMOKE, config))
    assert "ood_proxy" not in planner.studies() and not planner.units["ood_proxy_fit"]
    assert not {"white_wine", "red_wine"} & set(planner.covariate_datasets)
    assert not planner.rule("ood_proxy").jobs


def test_an_ood_set_must_be_scaled_with_its_in_distribution_dataset(tmp_path):
    config = tmp_path / "mismatched.yaml"
    config.write_text(yaml.safe_dump({"studies": {"ood_proxy": {
        "in_distribution": "diamonds_ideal", "ood": "red_wine"}}}))
    with pytest.raises(ConfigError, match=r"red_wine is scaled with white_wine's constants"):
        load_config(REPO / "config.yaml", config)


def test_the_sandbox_is_a_stage_of_its_own(tmp_path):
    # the smoke preset leaves the sandbox out of `all` and `studies`; `snakemake sandbox`
    # builds it all the same
    smoke = Planner(load_config(REPO / "config.yaml", SMOKE))
    assert "sandbox" not in smoke.studies() and not smoke.rule("sandbox").jobs
    run = snakemake(tmp_path, "sandbox", "--cores", "1", "--configfile", str(SMOKE))
    assert run.returncode == 0, run.stderr[-3000:]
    for f in smoke.stage_files("sandbox"):
        assert (tmp_path / f).stat().st_size > 0, f
    log = (tmp_path / smoke.rule("sandbox").log).read_text()
    assert "regret_above_oracle" in log
    scorers = pd.read_csv(tmp_path / "results/studies/sandbox_scorers.csv")
    assert set(scorers["scorer"]) == {"ood", "bald", "eer", "risk", "regret"}
    # switched on, `studies` plans it and its page; what was built is not rebuilt
    config = tmp_path / "sandbox_on.yaml"
    config.write_text(yaml.safe_dump({"studies": {"sandbox": {"run": True}}}))
    planner = Planner(load_config(REPO / "config.yaml", SMOKE, config))
    assert planner.studies() == ["sandbox"]
    assert planner.rule("sandbox").jobs and planner.rule("studies_report").jobs
    run = snakemake(tmp_path, "studies", "--cores", "1", "--configfile", str(SMOKE),
                    str(config))
    assert run.returncode == 0, run.stderr[-3000:]
    assert "rule sandbox:" not in run.stdout + run.stderr
    page = (tmp_path / "results/studies/index.html").read_text()
    assert "Which inputs do the Bayes-optimal scorers reject?" in page
    assert 'data-figure="fig_sandbox"' in page


def test_the_paper_config_plans_the_sandbox_and_the_demo_does_not():
    paper = Planner(load_config(REPO / "config.yaml"))
    assert "sandbox" in paper.studies()
    (job,) = paper.rule("sandbox").jobs.values()
    assert job.resources.threads == 1
    assert "results/studies/fig_sandbox.png" in paper.study_files()
    demo = Planner(load_config(REPO / "config.yaml", REPO / "presets" / "demo.yaml"))
    assert "sandbox" not in demo.studies() and not demo.rule("sandbox").jobs


@pytest.mark.parametrize(("change", "message"), [
    ({"domain": [1.0, 0.0]}, r"'studies.sandbox.domain': \[1.0, 0.0\] must run upwards"),
    ({"training": {"gap_centre": 1.5}}, r"'studies.sandbox.training.gap_centre': 1.5 lies "
                                        r"outside the domain \[0.0, 1.0\]"),
    ({"coverage": 1.0}, r"studies.sandbox.coverage"),
])
def test_a_bad_sandbox_section_stops_with_a_clear_message(tmp_path, change, message):
    config = tmp_path / "bad_sandbox.yaml"
    config.write_text(yaml.safe_dump({"studies": {"sandbox": change}}))
    with pytest.raises(ConfigError, match=message):
        load_config(REPO / "config.yaml", config)


#: The SN study at toy size: NN-Lap and NN-Ens (small networks, fewer epochs and samples) on
#: the smoke grid's one GP instance of Concrete, each arm re-tuned by a 2-trial sweep.
TOY_SN = {
    "methods": ["nn_lap", "nn_ens"], "tuning": {"methods": []},
    "method_settings": {
        "nn_lap": {"width": 16, "n_blocks": 1, "n_epochs": 20, "n_samples": 32},
        "nn_ens": {"width": 16, "n_blocks": 1, "n_epochs": 20, "n_members": 3}},
    "disentanglement": {"methods": []},
    "studies": {"sn_study": {"run": True, "methods": ["nn_lap", "nn_ens"],
                             "datasets": ["concrete"], "priors": ["gp"],
                             "seeds_per_condition": 1, "trials": 2, "startup_trials": 2,
                             "bootstrap": 50}},
    "group_by": {"sn_study_fit": ["method"]},
}


@pytest.mark.slow
def test_sn_study_at_toy_size(tmp_path):
    preset = tmp_path / "toy_sn.yaml"
    preset.write_text(yaml.safe_dump(TOY_SN))
    planner = Planner(load_config(REPO / "config.yaml", SMOKE, preset))
    assert planner.studies() == ["sn_study"]
    units = planner.units["sn_study_fit"]
    assert [u.method for u in units] == ["nn_lap", "nn_ens"]
    run = snakemake(tmp_path, "studies", "--cores", "2", "--configfile", str(SMOKE), str(preset))
    assert run.returncode == 0, run.stderr[-3000:]
    scores = pd.read_csv(tmp_path / planner.study_inputs("sn_study")["scores"][0])
    for unit in units:
        records = pd.read_csv(tmp_path / unit.out)
        assert records["arm"].tolist() == ["plain", "sn", "wd"]
        assert (records["status"] == "ok").all() and records["preservation"].between(-1, 1).all()
        n_eval = validate_store(tmp_path / unit.tasks[0], kind="task").sizes["eval"]
        assert (records["preservation_points"]
                == min(unit.study["max_preservation_points"], n_eval)).all()
        tuning = json.loads((tmp_path / unit.tuning_out).read_text())
        assert tuning["configs"]["sn"]["spectral_norm"] is True
        assert 0.5 <= tuning["configs"]["sn"]["sn_coeff"] <= 3.0
        assert 1e-2 <= tuning["configs"]["wd"]["weight_decay"] <= 1.0
        assert len(tuning["sweeps"]["wd"]["trials"]) == 2
        # the plain arm is the benchmark's fit: the same configuration, the same ρ
        bench = open_zarr(tmp_path / unit.benchmark, load=False)
        assert tuning["configs"]["plain"] == json.loads(bench.attrs["config"])
        row = scores[scores["method"] == unit.method].iloc[0]
        assert records.loc[0, "rho_risk"] == pytest.approx(
            row["spearman_eu_posterior_excess_risk"], abs=1e-6)
    results = tmp_path / "results" / "studies"
    table13 = pd.read_csv(results / "table13.csv")
    assert (table13["scale"] == "smoke").all()
    assert table13["method"].tolist() == ["NN-Lap", "NN-Lap", "NN-Ens", "NN-Ens",
                                          "All (pooled)", "All (pooled)"]
    assert (table13["n_datasets"] == 1).all() and table13["delta_rho_risk_low"].isna().all()
    assert table13["paper_delta_rho_risk"].notna().all()
    mediation = pd.read_csv(results / "sn_mediation.csv")
    assert not mediation["interpretable"].any()
    assert mediation["note"].str.contains("not interpretable at this scale").all()
    assert {"NN-Lap", "NN-Ens", "All (pooled)"} <= set(pd.read_csv(results / "table14.csv")
                                                         ["method"])
    assert (results / "fig10_sn_methods.png").stat().st_size > 0
    page = (results / "index.html").read_text()
    assert "paper Table 13" in page and "paper Figure 10" in page
    again = snakemake(tmp_path, "studies", "-n", "--configfile", str(SMOKE), str(preset))
    assert "Nothing to be done" in again.stdout + again.stderr


def test_the_paper_config_plans_the_sn_study_with_resources():
    planner = Planner(load_config(REPO / "config.yaml"))
    cfg = planner.config
    study = cfg["studies"]["sn_study"]
    units = planner.units["sn_study_fit"]
    cells = {u.condition for u in units if u.method == "nn_lap"}
    assert cells == {c for c in planner.conditions if c.prior in study["priors"]
                     and (c.noise, c.coverage) == (study["noise"], study["coverage"])}
    assert len(units) == len(cells) * len(study["methods"])
    assert {c.dataset for c in cells} == set(cfg["datasets"])
    for unit in units:  # the benchmark's own fits are the plain arm
        assert unit.benchmark == path("fit", **unit.condition._asdict(), method=unit.method)
        assert unit.benchmark in unit.inputs and unit.study["trials"] == study["trials"]
    for rule in planner.stage_rules("sn_study_fit"):
        for job in rule.jobs.values():
            assert job.resources.threads >= 1 and job.resources.runtime > 0
    assert planner.rule("sn_study").jobs
    assert "results/studies/table13.csv" in planner.study_files()
    assert "sn_study" not in Planner(load_config(REPO / "config.yaml", REPO / "presets" /
                                                 "demo.yaml")).studies()


def test_a_bad_sn_study_section_stops_with_a_clear_message(tmp_path):
    config = tmp_path / "bad_sn.yaml"
    config.write_text(yaml.safe_dump({"studies": {"sn_study": {"sn_coeff": [3.0, 0.5]}}}))
    with pytest.raises(ConfigError, match=r"'studies.sn_study.sn_coeff': \[3.0, 0.5\] must run "
                                          "upwards"):
        load_config(REPO / "config.yaml", config)
    config.write_text(yaml.safe_dump({"studies": {"sn_study": {"methods": ["blr"]}}}))
    with pytest.raises(ConfigError, match="sn_study"):
        load_config(REPO / "config.yaml", config)


def test_a_studys_former_stage_names_are_read_with_a_deprecation_message(tmp_path, caplog):
    """`ood_fit` (now `ood_proxy_fit`) and `ood_study` (now `ood_proxy`) under cost_model,
    group_by and budget_s keep working for one release, merged over the new keys' defaults."""
    old = tmp_path / "old_names.yaml"
    old.write_text(yaml.safe_dump({
        "cost_model": {"ood_fit": {"default": {"threads": 3, "minutes": 7.0, "mem_mb": 900}},
                       "ood_study": {"threads": 1, "minutes": 2.0, "mem_mb": 800}},
        "group_by": {"ood_fit": ["method"]}, "budget_s": {"ood_study": 33}}))
    with caplog.at_level("WARNING"):
        cfg = load_config(REPO / "config.yaml", old)
    assert "ood_fit" not in cfg["cost_model"] and "ood_study" not in cfg["budget_s"]
    base = load_config(REPO / "config.yaml")["cost_model"]["ood_proxy_fit"]["default"]
    assert CostModel.of(cfg).entry("ood_proxy_fit", "blr") == {**base, "threads": 3, "minutes": 7.0,
                                                       "mem_mb": 900}
    assert cfg["cost_model"]["ood_proxy"]["minutes"] == 2.0
    assert cfg["group_by"]["ood_proxy_fit"] == ["method"] and cfg["budget_s"]["ood_proxy"] == 33
    messages = [r.getMessage() for r in caplog.records if "deprecated" in r.getMessage()]
    assert "config key 'cost_model.ood_fit' is deprecated: it is now 'cost_model.ood_proxy_fit'" \
        in messages[0]
    assert len(messages) == 4  # one line per old key
