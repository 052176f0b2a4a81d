"""The real DAG: planning, validation, the guard, the smoke preset end to end, lint."""

import json
import os
import socket

import numpy as np
import pandas as pd
import pytest
import yaml

from postrisk.core.io import open_zarr
from postrisk.covariates.build import summarize_store
from postrisk.tasks.store import validate_store
from tests.workflow_helpers import REPO, job_counts, rule_environments, snakemake

#: These tests start Snakemake (select them with `-m workflow`).
pytestmark = pytest.mark.workflow


def test_mcmc_posteriors_run_in_the_gpu_environment(tmp_path):
    """Rules take their environment from the accelerator declaration: with `accelerator.use`
    the MCMC posteriors get workflow/envs/jax-gpu.yaml; without it, the CPU one."""
    paper = rule_environments()
    assert paper["posterior_mcmc"] == "../workflow/envs/jax-gpu.yaml"
    assert paper["posterior_exact"] == paper["fit"] == paper["prior"] == "../workflow/envs/jax.yaml"
    assert paper["score"] == paper["checks"] == "../workflow/envs/core.yaml"
    # the warm-up study's posteriors run where the posteriors they repeat do
    assert paper["warmup_check_posterior"] == paper["posterior_mcmc"]
    # every rule that runs code has one (the target rules run none)
    assert all(env for name, env in paper.items()
               if name not in ("all", "studies", "seed_selections"))
    cpu = tmp_path / "cpu.yaml"
    cpu.write_text(yaml.safe_dump({"accelerator": {"use": False, "allow_cpu_fallback": False}}))
    on_cpu = rule_environments(cpu)
    assert (on_cpu["posterior_mcmc"] == on_cpu["warmup_check_posterior"]
            == "../workflow/envs/jax.yaml")


def test_dry_run_of_the_demo_preset_plans_its_grouped_jobs(tmp_path):
    """The demo's grouped jobs (a preset's `group_by`) use the same rule shape as one job per
    unit: one rule per output shape. The dry run plans exactly the planner's rules and jobs,
    every method (the outside ones among them) in one fit job, every task store once."""
    from postrisk.planning.planner import Planner

    run = snakemake(tmp_path, "-n", "--configfile", str(REPO / "presets/demo.yaml"))
    assert run.returncode == 0, run.stderr
    counts = job_counts(run.stdout)
    planner = Planner.from_files(REPO / "config.yaml", REPO / "presets/demo.yaml")
    assert counts == {**planner.job_counts(), "all": 1, "total": sum(counts.values()) // 2}
    fits = planner.stage_rules("fit")
    jobs = [job for rule in fits for job in rule.jobs.values()]
    assert sorted(u.method for job in jobs for u in job.units[:1]) == sorted(planner.methods)
    assert set(planner.config.get("outside_methods", {})) <= set(planner.methods)
    # no rule name counts methods; every name is its stage's (or the posterior kind's) and what
    # its outputs share
    for rule in fits:
        assert rule.name == "fit" or rule.name.startswith("fit_"), rule.name
        assert not any(part.isdigit() for part in rule.name.split("_")), rule.name
    for store in planner.task_stores():
        assert store in run.stdout
    for rule in planner.stage_rules("posterior"):
        for job in rule.jobs.values():
            log = rule.log.format(**job.units[0].wildcards)
            assert log in run.stdout, log


def test_plain_local_run_of_full_grid_stops_with_plan(tmp_path):
    run = snakemake(tmp_path, "--cores", "1")
    assert run.returncode != 0
    text = run.stdout + run.stderr
    assert "4,056 instances" in text and "core-hours requested" in text
    assert "confirm_full_run=True" in text
    assert "Traceback" not in text and "Wildcards:" not in text  # the plan alone, no traceback
    assert not (tmp_path / "results").exists()


def test_misspelled_dataset_stops_with_clear_message(tmp_path):
    run = snakemake(tmp_path, "-n", "--config", "datasets=[abalone,diamnds]")
    assert run.returncode != 0
    text = run.stdout + run.stderr
    assert "config key 'datasets[1]': 'diamnds' is not allowed" in text
    assert "allowed values: abalone, airfoil" in text
    # one line of ours after Snakemake's own about merging the config (at most 3 in all)
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) <= 3 and "Traceback" not in text and 'File "' not in text, lines


def test_zero_seed_count_stops_with_clear_message(tmp_path):
    preset = tmp_path / "zero.yaml"
    preset.write_text(yaml.safe_dump({"seeds": {"valid_per_cell": 0, "candidates": 1}}))
    run = snakemake(tmp_path, "-n", "--configfile", str(preset))
    assert run.returncode != 0
    assert "config key 'seeds.valid_per_cell': 0 must be positive" in run.stdout + run.stderr


def test_unreachable_source_fails_with_clear_message(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
    preset = tmp_path / "fast_fail.yaml"
    preset.write_text(yaml.safe_dump({"covariates": {"fetch_retries": 1, "fetch_timeout_s": 2}}))
    run = snakemake(tmp_path, "results/covariates/abalone.zarr", "--cores", "1",
                    "--configfile", str(preset), env={"POSTRISK_UCI_URL": url})
    assert run.returncode != 0
    log = (tmp_path / "results/logs/covariates/abalone.log").read_text()
    assert "dataset 'abalone' (UCI 1) could not be fetched from" in log
    assert f"{url}/api/dataset?id=1" in log
    assert "No local copy at resources/raw/abalone/uci_1.csv" in log
    assert not (tmp_path / "results/covariates/abalone.zarr").exists()


#: The instance the README's snippets load (from the smoke run's release, below).
SMOKE_KEY = "concrete/gp/smooth_monotone/balanced/0"
SMOKE_TASK = f"results/tasks/{SMOKE_KEY}.zarr"
SMOKE_CONDITION = SMOKE_KEY.rsplit("/", 1)[0]
REFERENCE_ROWS = {"oracle", "mahalanobis", "knn10", "constant_au"}


@pytest.fixture(scope="module")
def smoke_plan():
    """The smoke preset's planner: what the tests below expect, computed from the preset."""
    from postrisk.planning.planner import Planner

    planner = Planner.from_files(REPO / "config.yaml", REPO / "presets" / "smoke.yaml")
    assert SMOKE_TASK in planner.task_stores(), (
        f"the README's snippets load {SMOKE_KEY}: the smoke preset must build it")
    return planner


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """The smoke preset's whole DAG and its release, run once for the tests below."""
    workdir = tmp_path_factory.mktemp("smoke")
    run = snakemake(workdir, "all", "release", "--cores", "2", "--configfile",
                    str(REPO / "presets" / "smoke.yaml"))
    assert run.returncode == 0, run.stderr[-3000:]
    return workdir


def test_smoke_preset_end_to_end(smoke, smoke_plan):
    from postrisk.covariates.pools import eval_pool_size
    from postrisk.covariates.registry import registry
    from postrisk.methods.registry import display_name, get_method
    from postrisk.tuning.sweep import split_indices

    tmp_path, cfg = smoke, smoke_plan.config
    for name in smoke_plan.covariate_datasets:
        spec = registry()[name]
        summary = summarize_store(tmp_path / f"results/covariates/{name}.zarr")
        assert (summary["d"], summary["N"], summary["n_eval"]) == (
            spec.d, spec.N, eval_pool_size(spec.N, cfg["sizes"]["n_eval_cap"]))
    for task in smoke_plan.task_stores():
        validate_store(tmp_path / task, kind="task")
    table3 = pd.read_csv(tmp_path / "results/checks/table3.csv")
    assert table3["prior"].tolist() == smoke_plan.priors
    assert (table3["scale"] == cfg["scale"]).all()
    scores = pd.read_csv(tmp_path / "results/tables/scores.csv")
    assert set(smoke_plan.methods) | REFERENCE_ROWS <= set(scores["method"])
    assert (scores.loc[scores["method"].str.startswith("nn_"), "failed_fits"] == 0).all()
    oracle = scores[(scores["method"] == "oracle")
                    & (scores["target"] == "eu_posterior_excess_risk")]
    assert oracle["mean"].iloc[0] == pytest.approx(1.0)  # EU = σ²_f exactly when â = m_S
    # every evaluation table of the catalogue, the long table and the page of them all
    tables = tmp_path / "results/tables"
    for table in smoke_plan.stage_files("tables"):
        assert (tmp_path / table).exists(), table
    assert f"{cfg['scale']} scale — not comparable to the paper" in \
        (tables / "tables.md").read_text()
    long = pd.read_csv(tables / "metrics_long.csv")
    assert {"ok", "not applicable"} <= set(long["status"])
    assert {"pareto_gap_posterior_excess_risk", "crps", "eu_auroc_outer"} <= set(long["metric"])
    # the Disentanglement Error experiment: every configured method's refits (each data
    # fraction and label-noise fraction, `runs` times) on its instances
    settings = cfg["disentanglement"]
    refits = (len(settings["data_fractions"]) + len(settings["label_noise_fractions"])) * \
        settings["runs"]
    units = smoke_plan.units["disentanglement"]
    de = pd.read_csv(tables / "disentanglement.csv")
    assert sorted(de["method"]) == sorted({u.method for u in units})
    assert (de["status"] == "ok").all()
    assert de.set_index("method")["n_fits"].to_dict() == {
        m: refits * sum(u.method == m for u in units) for m in de["method"]}
    assert np.isfinite(de[["de", "de_true"]].to_numpy()).all()
    for figure in smoke_plan.stage_files("checks", kind="figure") + \
            smoke_plan.stage_files("figure"):
        assert (tmp_path / figure).stat().st_size > 1000, figure
    # Every tuned (method, condition) ran its sweep's trials on the seed-0 sample's split, and
    # every seed used the sweep's winner; the others record their fixed configuration.
    tuned_units = [u for u in smoke_plan.units["fit"] if u.tuning is not None]
    assert tuned_units
    for unit in smoke_plan.units["fit"]:
        chosen = json.loads((tmp_path / unit.config).read_text())
        fits = open_zarr(tmp_path / unit.fits)
        assert json.loads(fits.attrs["config"]) == chosen["config"], unit.label
        if unit.tuning is None:
            assert chosen["n_trials"] == 0, unit.label
            continue
        trials = unit.tuning["trials"]
        assert chosen["n_trials"] == trials and len(chosen["trials"]) == trials, unit.label
        n = open_zarr(tmp_path / unit.samples[0])["y_train"].size
        fit_rows, validation_rows = split_indices(n, unit.tuning["validation_fraction"])
        assert (chosen["split"]["n_fit"], chosen["split"]["n_validation"]) == (
            fit_rows.size, validation_rows.size), unit.label
        assert (tmp_path / unit.journal).stat().st_size > 0, unit.label
    # The outside methods (module:Class in the preset) were tuned or fixed, fitted and scored by
    # name, and are in every table that lists methods, under their display names.
    for name in cfg.get("outside_methods", {}):
        space = get_method(name).search_space  # the class's own
        for unit in (u for u in tuned_units if u.method == name):
            config = json.loads((tmp_path / unit.config).read_text())["config"]
            for key, (_, low, high, *_) in space.items():
                assert low <= config[key] <= high, (name, key, config[key])
        shown = scores.loc[scores["method"] == name, "display_name"]
        assert len(shown) and (shown == display_name(name)).all(), name
        for table in ("metric_means", "table8", "table9", "table10", "shells"):
            assert name in set(pd.read_csv(tables / f"{table}.csv")["method"]), (name, table)
        assert display_name(name) in (tmp_path / "results/report/index.html").read_text()
    # Nothing left to do on a second run.
    again = snakemake(tmp_path, "-n", "--configfile", str(REPO / "presets" / "smoke.yaml"))
    assert "Nothing to be done" in again.stdout + again.stderr


def readme_snippet(marker: str) -> str:
    """The fenced code block between ``<!-- marker -->`` and ``<!-- /marker -->`` in the
    README."""
    text = (REPO / "README.md").read_text()
    block = text.split(f"<!-- {marker} -->", 1)[1].split(f"<!-- /{marker} -->", 1)[0]
    return block.split("```bash\n", 1)[1].rsplit("```", 1)[0]


def test_a_changed_figure_or_table_reruns_only_what_reads_it(smoke, smoke_plan):
    """The report's stages are separate rules: redoing the figures reruns them and the page;
    redoing the tables reruns the tables, the figures that read a table and the page; nothing
    upstream."""
    from postrisk.grid.artefacts import CONDITION_SCORES, stage_artefacts

    smoke_config = str(REPO / "presets" / "smoke.yaml")
    n_figures = len(smoke_plan.rules["figure"][0].jobs)
    figures = snakemake(smoke, "-n", "--configfile", smoke_config, "--forcerun", "figure")
    assert figures.returncode == 0, figures.stderr
    assert job_counts(figures.stdout) == {"figure": n_figures, "report": 1, "all": 1,
                                          "total": n_figures + 2}
    reading = sum(set(a.reads) != {CONDITION_SCORES} for a in stage_artefacts("figure"))
    tables = snakemake(smoke, "-n", "--configfile", smoke_config, "--forcerun", "tables")
    assert job_counts(tables.stdout) == {"tables": 1, "figure": reading, "report": 1,
                                         "all": 1, "total": reading + 3}


def test_another_noise_strength_makes_every_sample_stale(smoke, smoke_plan, tmp_path):
    """``noise_model.strength`` is inside the sample stores' config digest: after the smoke
    run, the same preset with another strength plans every sample job again (and what reads
    them), while the covariates and priors stay."""
    smoke_config = str(REPO / "presets" / "smoke.yaml")
    same = snakemake(smoke, "-n", "--configfile", smoke_config)
    assert same.returncode == 0, same.stderr
    assert "sample" not in " ".join(job_counts(same.stdout))
    layer = tmp_path / "strength.yaml"
    strength = smoke_plan.config["noise_model"]["strength"] + 0.5
    layer.write_text(yaml.safe_dump({"noise_model": {"strength": strength}}))
    other = snakemake(smoke, "-n", "--configfile", smoke_config, str(layer))
    assert other.returncode == 0, other.stderr
    counts = job_counts(other.stdout)
    n_samples = sum(len(rule.jobs) for rule in smoke_plan.stage_rules("sample"))
    assert sum(v for k, v in counts.items() if k.startswith("sample")) == n_samples
    assert not any(k.startswith(("covariates", "prior")) for k in counts), counts


def test_release_round_trip(smoke, smoke_plan):
    """The release: packed by the DAG, served on 127.0.0.1, downloaded and loaded by the
    README's snippet as written and by rule `download`; the arrays equal the pipeline's own
    store."""
    import subprocess

    import postrisk
    from postrisk.covariates.registry import registry
    from postrisk.planning.conditions import training_size
    from postrisk.release import dataset_file, instances_file

    workdir, store = smoke, smoke / SMOKE_TASK
    from tests.http_fixture import FakeSources, serve_files

    cfg = smoke_plan.config
    keys = sorted(u.key.label for u in smoke_plan.units["posterior"])  # no BNN: all valid
    pairs = sorted({(u.key.dataset, u.key.prior) for u in smoke_plan.units["posterior"]})
    manifest = json.loads((workdir / "results/release/manifest.json").read_text())
    assert sorted(i["key"] for i in manifest["instances"]) == keys
    assert manifest["scale"] == cfg["scale"] and manifest["not_shipped"] == []
    assert {f["name"] for f in manifest["files"]} == {
        *(instances_file(d, p) for d, p in pairs), *(dataset_file(d) for d, _ in pairs),
        "DATA_CARD.md", "CITATION.cff", "instances.csv"}
    # and the release verifies as packed, its Croissant file beside the manifest
    from postrisk.release.verify import verify_release

    assert verify_release(workdir / "results/release")[0] == []
    assert (workdir / "results/release/croissant.json").is_file()
    # what the README's snippets download and print: the README instance's (dataset, prior)
    dataset, prior = SMOKE_KEY.split("/")[:2]
    downloaded = [k for k in keys if k.startswith(f"{dataset}/{prior}/")]
    spec = registry()[dataset]
    n_eval = int(open_zarr(workdir / SMOKE_TASK)["x_eval"].shape[0])
    user = workdir / "user"  # stands for a checkout: its environment and examples/
    user.mkdir()
    (user / ".venv").symlink_to(REPO / ".venv")
    (user / "examples").symlink_to(REPO / "examples")
    with FakeSources() as server:
        url = serve_files(server, workdir / "results/release")
        run = subprocess.run(["bash", "-euo", "pipefail", "-c", readme_snippet("release-snippet")],
                             cwd=user, capture_output=True, text=True, timeout=300,
                             env={**os.environ, "RELEASE_URL": url})
        assert run.returncode == 0, run.stderr[-3000:]
        # its instances file, its dataset file, the two documents and the instance index
        assert "5 file(s) downloaded and verified" in run.stdout
        assert str(downloaded[:3]) in run.stdout
        n = training_size(dataset, cfg["sizes"].get("n_cap"))
        assert f"({n}, {spec.d}) ({n},) ({n_eval}, {spec.d})" in run.stdout
        # the README's evaluate-your-method snippet, as written, on the downloaded task
        run = subprocess.run(["bash", "-euo", "pipefail", "-c", readme_snippet("evaluate-snippet")],
                             cwd=user, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr[-3000:]
        assert "spearman_eu_posterior_excess_risk" in run.stdout
        assert f"knn_uncertainty on {len(downloaded)} task(s)" in run.stdout
        assert len(pd.read_csv(user / "scores.csv")) == len(downloaded)
        # the workflow's own rule: `snakemake download` from the config's release section
        settings = workdir / "release.yaml"
        settings.write_text(yaml.safe_dump({"release": {"base_url": url,
                                                        "download_dir": "fetched"}}))
        rule = snakemake(workdir, "download", "--cores", "1", "--configfile",
                         str(REPO / "presets" / "smoke.yaml"), str(settings))
        assert rule.returncode == 0, rule.stderr[-3000:]
    assert (workdir / "fetched/manifest.json").read_text() == \
        (workdir / "results/release/manifest.json").read_text()
    assert [t.label for t in postrisk.list_tasks(workdir / "fetched")] == keys
    loaded = postrisk.load_task(SMOKE_KEY, root=user / "postrisk-data", verify=True)
    own = postrisk.load_task(store)
    assert set(own.ds.variables) - set(loaded.ds.variables) == {"posterior_draws_train"}
    for name in loaded.ds.variables:
        np.testing.assert_array_equal(loaded.ds[name].values, own.ds[name].values,
                                      err_msg=name)


def test_evaluate_gives_the_pipelines_scores(smoke):
    """`postrisk.evaluate` with BLR at its fit record's configuration and random_state gives
    the pipeline's own score row for the same instance."""
    import postrisk
    from postrisk.evaluation.scoring import SCORE_COLUMNS
    from postrisk.methods.registry import make_method

    fits = open_zarr(smoke / f"results/fits/{SMOKE_CONDITION}/blr.zarr")
    config = json.loads(fits.attrs["config"])
    seed = int(fits["seed"].values[0])
    own = pd.read_csv(smoke / f"results/scores/{SMOKE_CONDITION}.csv")
    own = own[(own["method"] == "blr") & (own["seed"] == seed)].iloc[0]
    ours = postrisk.evaluate(make_method("blr", config, random_state=seed),
                             smoke / SMOKE_TASK).iloc[0]
    for column in SCORE_COLUMNS:
        np.testing.assert_allclose(ours[column], own[column], rtol=1e-10, err_msg=column)


def test_light_install_loads_and_evaluates(smoke, tmp_path):
    """A fresh virtual environment with only the default dependencies (no extras) loads a
    packed smoke instance and evaluates two methods, with the scores of the full environment."""
    import shutil
    import subprocess
    import sys

    from examples.knn_uncertainty import KNNUncertainty

    import postrisk
    from postrisk.methods.registry import make_method

    uv = shutil.which("uv") or str(REPO / ".tools/bin/uv")
    requirements = subprocess.run(
        [uv, "export", "--frozen", "--no-dev", "--no-hashes", "--no-emit-project", "-q",
         "--format", "requirements-txt"], cwd=REPO, capture_output=True, text=True, check=True)
    (tmp_path / "light.txt").write_text(requirements.stdout)
    venv = tmp_path / "light"
    python = str(venv / "bin/python")
    for cmd in ([uv, "venv", "-q", "--python", sys.executable, str(venv)],
                [uv, "pip", "install", "-q", "--python", python, "-r", str(tmp_path / "light.txt")],
                [uv, "pip", "install", "-q", "--python", python, "--no-deps", str(REPO)]):
        subprocess.run(cmd, check=True, capture_output=True, text=True)
    release = smoke / "results/release"
    script = f"""
import importlib.util, json
heavy = ["jax", "numpyro", "bartz", "snakemake", "catboost", "ngboost", "optuna", "sklearn",
         "matplotlib", "arviz", "equinox", "optax"]
assert not [m for m in heavy if importlib.util.find_spec(m)], "not a light install"
import postrisk
from examples.knn_uncertainty import KNNUncertainty
from postrisk.methods.registry import make_method
task = postrisk.load_task({SMOKE_KEY!r}, root={str(release)!r})
rows = [postrisk.evaluate(m, task).iloc[0] for m in (KNNUncertainty(), make_method("blr"))]
print("SCORES" + json.dumps([[r["spearman_eu_posterior_excess_risk"], r["nll"]] for r in rows]))
"""
    run = subprocess.run([python, "-c", script], cwd=REPO, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    light = json.loads(run.stdout.split("SCORES", 1)[1])
    task = postrisk.load_task(SMOKE_KEY, root=release)
    full = [postrisk.evaluate(m, task).iloc[0] for m in (KNNUncertainty(), make_method("blr"))]
    np.testing.assert_allclose(light, [[r["spearman_eu_posterior_excess_risk"], r["nll"]]
                                       for r in full], rtol=1e-12)


def test_one_task_store_builds_only_what_it_needs(tmp_path):
    target = "results/tasks/diamonds/gp/smooth_monotone/balanced/0.zarr"
    run = snakemake(tmp_path, "-n", target)
    assert run.returncode == 0, run.stderr
    assert job_counts(run.stdout) == {"covariates": 1, "prior": 1, "sample": 1,
                                      "posterior_exact": 1, "total": 4}
    for prior in ("bnn", "hbart"):  # one MCMC posterior job (on a GPU or, BNN's, on CPUs)
        counts = job_counts(snakemake(tmp_path, "-n", target.replace("/gp/", f"/{prior}/")
                                      ).stdout)
        mcmc = {rule: n for rule, n in counts.items() if rule.startswith("posterior_mcmc")}
        assert list(mcmc.values()) == [1], counts
        assert {rule: n for rule, n in counts.items() if rule not in mcmc} == {
            "covariates": 1, "prior": 1, "sample": 1, "total": 4}


def test_targeted_build_needs_only_its_inputs(tmp_path):
    run = snakemake(tmp_path, "-n", "results/covariates/red_wine.zarr")
    assert run.returncode == 0, run.stderr
    counts = job_counts(run.stdout)
    assert counts == {"covariates": 2, "total": 2}  # red_wine and white_wine (its scaling)


def test_lint_is_clean(tmp_path):
    run = snakemake(tmp_path, "--lint")
    assert run.returncode == 0, run.stdout + run.stderr
