"""The real DAG: planning, validation, the guard, the smoke preset end to end, lint."""

import json
import re
import socket

import pandas as pd
import pytest
import yaml

from postrisk.core.io import open_zarr
from postrisk.covariates.build import summarize_store
from postrisk.tasks.store import validate_store
from tests.workflow_helpers import REPO, snakemake

#: These tests start Snakemake (select them with `-m workflow`).
pytestmark = pytest.mark.workflow


def job_counts(stdout: str) -> dict[str, int]:
    table = stdout.split("Job stats:")[-1]
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"^(\w+)\s+(\d+)$", table, flags=re.MULTILINE)}


def test_dry_run_of_full_config_plans_the_whole_grid(tmp_path):
    run = snakemake(tmp_path, "-n")
    assert run.returncode == 0, run.stderr
    counts = job_counts(run.stdout)
    cells = 13 * 4 * 2  # datasets × noise × coverage
    per_family = cells * 13  # every candidate seed: validity is decided by the BNN R̂
    assert counts["covariates"] == 14 and counts["prior"] == 13 * 3
    assert counts["sample"] == 3 * per_family
    assert counts["posterior_exact"] == per_family and counts["posterior_mcmc"] == 2 * per_family
    assert counts["valid_seeds"] == cells
    from postrisk.methods.registry import METHOD_PATHS

    methods = len(METHOD_PATHS)  # every implemented method (each job tunes, then fits)
    assert counts["fit"] == methods * 3 * cells and counts["score"] == 3 * cells
    assert "tune" not in counts
    assert counts["checks"] == 1 and counts["aggregate_scores"] == 1
    for name in ("abalone", "sarcos", "white_wine", "red_wine"):
        assert f"results/covariates/{name}.zarr" in run.stdout


def test_dry_run_of_the_demo_preset_plans_its_batched_jobs(tmp_path):
    """The demo's batched rules (one job per dataset and family, one fit job per method) plan:
    their outputs are built from the same path templates as the per-instance rules."""
    from postrisk.grid import implemented_methods, load_config

    run = snakemake(tmp_path, "-n", "--configfile", str(REPO / "presets/demo.yaml"))
    assert run.returncode == 0, run.stderr
    counts = job_counts(run.stdout)
    demo = load_config(REPO / "config.yaml", REPO / "presets/demo.yaml")
    assert counts["fit_batch"] == len(implemented_methods(demo))
    assert counts["sample_batch_gp"] == counts["posterior_batch_gp"] == len(demo["datasets"])
    assert "sample" not in counts and "fit" not in counts
    assert "results/tasks/concrete/bnn/bump/ood/0.zarr" in run.stdout


def test_plain_local_run_of_full_grid_stops_with_plan(tmp_path):
    run = snakemake(tmp_path, "--cores", "1")
    assert run.returncode != 0
    text = run.stdout + run.stderr
    assert "4,056 instances" in text and "CPU-hours" in text
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


def test_smoke_preset_end_to_end(tmp_path):
    run = snakemake(tmp_path, "--cores", "2", "--configfile",
                    str(REPO / "presets" / "smoke.yaml"))
    assert run.returncode == 0, run.stderr[-3000:]
    summary = summarize_store(tmp_path / "results/covariates/concrete.zarr")
    assert (summary["d"], summary["N"], summary["n_eval"]) == (8, 1030, 150)
    task = tmp_path / "results/tasks/concrete/gp/smooth_monotone/balanced/0.zarr"
    validate_store(task, kind="task")
    table3 = pd.read_csv(tmp_path / "results/checks/table3.csv")
    assert table3["prior"].tolist() == ["gp"] and table3["scale"].iloc[0] == "smoke"
    scores = pd.read_csv(tmp_path / "results/tables/scores.csv")
    assert {"blr", "oracle", "distance", "constant_au"} <= set(scores["method"])
    oracle = scores[(scores["method"] == "oracle")
                    & (scores["target"] == "eu_posterior_excess_risk")]
    assert oracle["mean"].iloc[0] == pytest.approx(1.0)  # EU = σ²_f exactly when â = m_S
    for png in ("rank_histograms.png", "scores.png"):
        assert (tmp_path / "results/figures" / png).stat().st_size > 1000
    # BLR was tuned (4 trials in the smoke preset) and every seed used the sweep's winner.
    condition = "concrete/gp/smooth_monotone/balanced"
    tuned = json.loads((tmp_path / f"results/tuning/{condition}/blr.json").read_text())
    assert tuned["n_trials"] == 4 and len(tuned["trials"]) == 4
    assert tuned["split"]["n_fit"] == 96 and tuned["split"]["n_validation"] == 24
    assert (tmp_path / f"results/tuning/journals/{condition}/blr.log").stat().st_size > 0
    fits = open_zarr(tmp_path / f"results/fits/{condition}/blr.zarr")
    assert json.loads(fits.attrs["config"]) == tuned["config"]
    # Nothing left to do on a second run.
    again = snakemake(tmp_path, "-n", "--configfile", str(REPO / "presets" / "smoke.yaml"))
    assert "Nothing to be done" in again.stdout + again.stderr


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


def test_slurm_profile_sends_mcmc_posteriors_to_a_gpu(tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_ACCOUNT", "test")
    run = snakemake(tmp_path, "--profile", str(REPO / "profiles" / "slurm"),
                    "--sdm", "env-modules", "-n", "-p",
                    "results/tasks/concrete/hbart/bump/ood/0.zarr",
                    "results/tasks/concrete/gp/bump/ood/0.zarr")
    assert run.returncode == 0, run.stderr
    blocks = run.stdout.split("rule ")
    mcmc = [b for b in blocks if b.startswith("posterior_mcmc")]
    exact = [b for b in blocks if b.startswith("posterior_exact")]
    assert len(mcmc) == 1 and len(exact) == 1
    assert "gpu=1" in mcmc[0] and "slurm_partition=gpu" in mcmc[0]
    assert "gpu=" not in exact[0] and "slurm_partition=cpu" in exact[0]
