"""The real DAG: planning, validation, the guard, the smoke preset end to end, lint."""

import re
import socket

import yaml

from postrisk.covariates.build import summarize_store
from tests.workflow_helpers import REPO, snakemake


def job_counts(stdout: str) -> dict[str, int]:
    table = stdout.split("Job stats:")[-1]
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"^(\w+)\s+(\d+)$", table, flags=re.MULTILINE)}


def test_dry_run_of_full_config_plans_all_covariates(tmp_path):
    run = snakemake(tmp_path, "-n")
    assert run.returncode == 0, run.stderr
    counts = job_counts(run.stdout)
    assert counts["covariates"] == 14 and counts["total"] == 15
    for name in ("abalone", "sarcos", "white_wine", "red_wine"):
        assert f"results/covariates/{name}.zarr" in run.stdout


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
    for name, d, n_rows in (("concrete", 8, 1030), ("health_insurance", 4, 22272)):
        summary = summarize_store(tmp_path / f"results/covariates/{name}.zarr")
        assert (summary["d"], summary["N"], summary["n_eval"]) == (d, n_rows, 200)
        assert (tmp_path / f"results/logs/covariates/{name}.log").exists()
    # Nothing left to do on a second run.
    again = snakemake(tmp_path, "-n", "--configfile", str(REPO / "presets" / "smoke.yaml"))
    assert "Nothing to be done" in again.stdout + again.stderr


def test_targeted_build_needs_only_its_inputs(tmp_path):
    run = snakemake(tmp_path, "-n", "results/covariates/red_wine.zarr")
    assert run.returncode == 0, run.stderr
    counts = job_counts(run.stdout)
    assert counts == {"covariates": 2, "total": 2}  # red_wine and white_wine (its scaling)


def test_lint_is_clean(tmp_path):
    run = snakemake(tmp_path, "--lint")
    assert run.returncode == 0, run.stdout + run.stderr
