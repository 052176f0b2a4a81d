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


def test_mcmc_posteriors_run_in_the_gpu_environment():
    """Rules take their environment from the accelerator declaration: with `accelerator.use`
    the MCMC posteriors get workflow/envs/jax-gpu.yaml; without it (the demo), the CPU one."""
    paper = rule_environments()
    assert paper["posterior_mcmc"] == "../workflow/envs/jax-gpu.yaml"
    assert paper["posterior_exact"] == paper["fit"] == paper["prior"] == "../workflow/envs/jax.yaml"
    assert paper["score"] == paper["checks"] == "../workflow/envs/core.yaml"
    assert all(env for name, env in paper.items() if name != "all")
    demo = rule_environments(REPO / "presets" / "demo.yaml")
    assert demo["posterior_mcmc"] == "../workflow/envs/jax.yaml"


def test_dry_run_of_the_demo_preset_plans_its_grouped_jobs(tmp_path):
    """The demo's grouped jobs (one per dataset and family, one fit job per method) use the same
    rule shape as one job per unit: one rule per output shape, named by what tells them apart."""
    from postrisk.grid import implemented_methods, load_config

    run = snakemake(tmp_path, "-n", "--configfile", str(REPO / "presets/demo.yaml"))
    assert run.returncode == 0, run.stderr
    counts = job_counts(run.stdout)
    demo = load_config(REPO / "config.yaml", REPO / "presets/demo.yaml")
    # the methods on every condition (the outside example among them), and the tree ensembles
    # and the other costly methods on parts of the grid (method_grid): one rule per shape
    fits = ("fit_blr_and_4_more", "fit_catboost_kgb_and_8_more", "fit_nn_bag_and_5_more")
    assert sum(counts[rule] for rule in fits) == len(implemented_methods(demo)) == 20
    assert demo["outside_methods"] == {"knn_uncertainty": {
        "location": "examples.knn_uncertainty:KNNUncertainty", "search_space": None}}
    assert counts[fits[1]] + counts[fits[2]] == len(demo["method_grid"]) == 15
    assert counts["sample_gp"] == counts["posterior_exact"] == len(demo["datasets"])
    assert counts["sample_bnn_hbart"] == counts["posterior_mcmc"] == 2
    assert "results/tasks/concrete/bnn/bump/ood/0.zarr" in run.stdout
    assert "results/logs/posterior/concrete/bnn.log" in run.stdout


def test_plain_local_run_of_full_grid_stops_with_plan(tmp_path):
    run = snakemake(tmp_path, "--cores", "1")
    assert run.returncode != 0
    text = run.stdout + run.stderr
    assert "4,056 instances" in text and "core-hours requested" in text
    assert "confirm_full_run=True" in text
    assert not (tmp_path / "results").exists()


def test_misspelled_dataset_stops_with_clear_message(tmp_path):
    run = snakemake(tmp_path, "-n", "--config", "datasets=[abalone,diamnds]")
    assert run.returncode != 0
    text = run.stdout + run.stderr
    assert "config key 'datasets[1]': 'diamnds' is not allowed" in text
    assert "allowed values: abalone, airfoil" in text


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


SMOKE_TASK = "results/tasks/concrete/gp/smooth_monotone/balanced/0.zarr"
SMOKE_CONDITION = "concrete/gp/smooth_monotone/balanced"


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """The smoke preset's whole DAG and its release, run once for the tests below."""
    workdir = tmp_path_factory.mktemp("smoke")
    run = snakemake(workdir, "all", "release", "--cores", "2", "--configfile",
                    str(REPO / "presets" / "smoke.yaml"))
    assert run.returncode == 0, run.stderr[-3000:]
    return workdir


def test_smoke_preset_end_to_end(smoke):
    tmp_path = smoke
    summary = summarize_store(tmp_path / "results/covariates/concrete.zarr")
    assert (summary["d"], summary["N"], summary["n_eval"]) == (8, 1030, 150)
    task = tmp_path / "results/tasks/concrete/gp/smooth_monotone/balanced/0.zarr"
    validate_store(task, kind="task")
    table3 = pd.read_csv(tmp_path / "results/checks/table3.csv")
    assert table3["prior"].tolist() == ["gp"] and table3["scale"].iloc[0] == "smoke"
    scores = pd.read_csv(tmp_path / "results/tables/scores.csv")
    assert {"blr", "oracle", "mahalanobis", "knn10", "constant_au", "nn_ens", "nn_bag", "nn_drop",
            "nn_edl", "nn_deup", "nn_lap", "nn_lap_sn", "nn_fsp", "nn_fsp_sn",
            "nn_swag"} <= set(scores["method"])
    assert (scores.loc[scores["method"].str.startswith("nn_"), "failed_fits"] == 0).all()
    oracle = scores[(scores["method"] == "oracle")
                    & (scores["target"] == "eu_posterior_excess_risk")]
    assert oracle["mean"].iloc[0] == pytest.approx(1.0)  # EU = σ²_f exactly when â = m_S
    # every evaluation table, the long table and the page of them all
    from postrisk.grid import EVALUATION_TABLES

    tables = tmp_path / "results/tables"
    for name in EVALUATION_TABLES:
        assert (tables / f"{name}.csv").exists(), name
    assert "smoke scale — not comparable to the paper" in (tables / "tables.md").read_text()
    long = pd.read_csv(tables / "metrics_long.csv")
    assert {"ok", "not applicable"} <= set(long["status"])
    assert {"pareto_gap_posterior_excess_risk", "crps", "eu_auroc_outer"} <= set(long["metric"])
    # the Disentanglement Error experiment ran BLR's 90 refits on the one (GP) instance
    de = pd.read_csv(tables / "disentanglement.csv")
    assert de["method"].tolist() == ["blr"] and de["status"].iloc[0] == "ok"
    assert de["n_fits"].iloc[0] == 90 and np.isfinite(de[["de", "de_true"]].to_numpy()).all()
    for png in ("rank_histograms.png", "fig2_mean_rho.png", "fig3a_entanglement.png",
                "fig8_per_dataset_eu.png"):
        assert (tmp_path / "results/figures" / png).stat().st_size > 1000
    # BLR was tuned (4 trials in the smoke preset) and every seed used the sweep's winner.
    condition = "concrete/gp/smooth_monotone/balanced"
    tuned = json.loads((tmp_path / f"results/tuning/{condition}/blr.json").read_text())
    assert tuned["n_trials"] == 4 and len(tuned["trials"]) == 4
    assert tuned["split"]["n_fit"] == 96 and tuned["split"]["n_validation"] == 24
    assert (tmp_path / f"results/tuning/journals/{condition}/blr.log").stat().st_size > 0
    fits = open_zarr(tmp_path / f"results/fits/{condition}/blr.zarr")
    assert json.loads(fits.attrs["config"]) == tuned["config"]
    # The outside method (module:Class in the preset) was tuned, fitted and scored by name, and
    # is in every table that lists methods.
    knn = json.loads((tmp_path / f"results/tuning/{condition}/knn_uncertainty.json").read_text())
    assert knn["n_trials"] == 4 and 3 <= knn["config"]["n_neighbors"] <= 50
    assert "knn_uncertainty" in set(scores["method"])
    assert scores.loc[scores["method"] == "knn_uncertainty", "display_name"].iloc[0] == "kNN-UQ"
    for name in ("metric_means", "table8", "table9", "table10", "shells"):
        assert "knn_uncertainty" in set(pd.read_csv(tables / f"{name}.csv")["method"]), name
    assert "kNN-UQ" in (tmp_path / "results/report/index.html").read_text()
    # Nothing left to do on a second run.
    again = snakemake(tmp_path, "-n", "--configfile", str(REPO / "presets" / "smoke.yaml"))
    assert "Nothing to be done" in again.stdout + again.stderr


def readme_snippet(marker: str) -> str:
    """The fenced code block between ``<!-- marker -->`` and ``<!-- /marker -->`` in the
    README."""
    text = (REPO / "README.md").read_text()
    block = text.split(f"<!-- {marker} -->", 1)[1].split(f"<!-- /{marker} -->", 1)[0]
    return block.split("```bash\n", 1)[1].rsplit("```", 1)[0]


def test_release_round_trip(smoke):
    """The release: packed by the DAG, served on 127.0.0.1, downloaded and loaded by the
    README's snippet as written and by rule `download`; the arrays equal the pipeline's own
    store."""
    import subprocess

    import postrisk

    workdir, store = smoke, smoke / SMOKE_TASK
    from tests.http_fixture import FakeSources, serve_files

    manifest = json.loads((workdir / "results/release/manifest.json").read_text())
    assert [i["key"] for i in manifest["instances"]] == ["concrete/gp/smooth_monotone/balanced/0"]
    assert manifest["scale"] == "smoke" and manifest["not_shipped"] == []
    assert {f["name"] for f in manifest["files"]} == {
        "concrete_gp.zip", "concrete_dataset.zip", "DATA_CARD.md", "CITATION.cff"}
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
        assert "4 file(s) downloaded and verified" in run.stdout
        assert "['concrete/gp/smooth_monotone/balanced/0']" in run.stdout
        assert "(120, 8) (120,) (150, 8)" in run.stdout
        # the README's evaluate-your-method snippet, as written, on the downloaded task
        run = subprocess.run(["bash", "-euo", "pipefail", "-c", readme_snippet("evaluate-snippet")],
                             cwd=user, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr[-3000:]
        assert "spearman_eu_posterior_excess_risk" in run.stdout
        assert "knn_uncertainty on 1 task(s)" in run.stdout
        assert len(pd.read_csv(user / "scores.csv")) == 1
        # the workflow's own rule: `snakemake download` from the config's release section
        settings = workdir / "release.yaml"
        settings.write_text(yaml.safe_dump({"release": {"base_url": url,
                                                        "download_dir": "fetched"}}))
        rule = snakemake(workdir, "download", "--cores", "1", "--configfile",
                         str(REPO / "presets" / "smoke.yaml"), str(settings))
        assert rule.returncode == 0, rule.stderr[-3000:]
    assert (workdir / "fetched/manifest.json").read_text() == \
        (workdir / "results/release/manifest.json").read_text()
    assert [t.label for t in postrisk.list_tasks(workdir / "fetched")] == [
        "concrete/gp/smooth_monotone/balanced/0"]
    loaded = postrisk.load_task("concrete/gp/smooth_monotone/balanced/0",
                                root=user / "postrisk-data", verify=True)
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


@pytest.mark.slow
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
task = postrisk.load_task("concrete/gp/smooth_monotone/balanced/0", root={str(release)!r})
rows = [postrisk.evaluate(m, task).iloc[0] for m in (KNNUncertainty(), make_method("blr"))]
print("SCORES" + json.dumps([[r["spearman_eu_posterior_excess_risk"], r["nll"]] for r in rows]))
"""
    run = subprocess.run([python, "-c", script], cwd=REPO, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    light = json.loads(run.stdout.split("SCORES", 1)[1])
    task = postrisk.load_task("concrete/gp/smooth_monotone/balanced/0", root=release)
    full = [postrisk.evaluate(m, task).iloc[0] for m in (KNNUncertainty(), make_method("blr"))]
    np.testing.assert_allclose(light, [[r["spearman_eu_posterior_excess_risk"], r["nll"]]
                                       for r in full], rtol=1e-12)


def test_one_task_store_builds_only_what_it_needs(tmp_path):
    target = "results/tasks/diamonds/gp/smooth_monotone/balanced/0.zarr"
    run = snakemake(tmp_path, "-n", target)
    assert run.returncode == 0, run.stderr
    assert job_counts(run.stdout) == {"covariates": 1, "prior": 1, "sample": 1,
                                      "posterior_exact": 1, "total": 4}
    mcmc = snakemake(tmp_path, "-n", target.replace("/gp/", "/bnn/"))
    assert job_counts(mcmc.stdout) == {"covariates": 1, "prior": 1, "sample": 1,
                                       "posterior_mcmc": 1, "total": 4}


def test_targeted_build_needs_only_its_inputs(tmp_path):
    run = snakemake(tmp_path, "-n", "results/covariates/red_wine.zarr")
    assert run.returncode == 0, run.stderr
    counts = job_counts(run.stdout)
    assert counts == {"covariates": 2, "total": 2}  # red_wine and white_wine (its scaling)


def test_lint_is_clean(tmp_path):
    run = snakemake(tmp_path, "--lint")
    assert run.returncode == 0, run.stdout + run.stderr
