"""Failure drills: what a user sees when something goes wrong (README, "When something goes
wrong"). Each drill breaks one thing on purpose and checks that the workflow says so clearly,
loses nothing and builds nothing on a broken input."""

import json
import os
import signal
import subprocess
import time

import numpy as np
import pandas as pd
import pytest
import yaml

from postrisk.core.io import PAUSE_ENV, open_zarr
from postrisk.tasks.store import StoreValidationError, validate_store
from tests.workflow_helpers import REPO, SNAKEMAKE, snakemake

#: These tests start Snakemake (select them with `-m workflow`).
pytestmark = pytest.mark.workflow


SMOKE = str(REPO / "presets" / "smoke.yaml")
#: The drills' grid, over the smoke preset's sizes and settings: one GP instance, whatever the
#: preset's grid is.
ONE_INSTANCE = {"datasets": ["concrete"], "priors": ["gp"], "noise_modes": ["smooth_monotone"],
                "coverages": ["balanced"], "seeds": {"valid_per_cell": 1, "candidates": 1}}
TASK = "results/tasks/concrete/gp/smooth_monotone/balanced/0.zarr"
CONDITION = "concrete/gp/smooth_monotone/balanced"


def _one_instance(tmp_path, **extra) -> str:
    """A config file of :data:`ONE_INSTANCE` and ``extra``, to pass after the smoke preset."""
    preset = tmp_path / "one_instance.yaml"
    preset.write_text(yaml.safe_dump({**ONE_INSTANCE, **extra}))
    return str(preset)


@pytest.mark.slow
def test_killed_store_write_leaves_nothing_valid_and_a_failing_method_is_counted(tmp_path):
    """(1) The posterior job is killed (SIGKILL) after the first variable of its task store is
    written: nothing that validates is left, and the next run rebuilds the store. (2) That run
    has a method whose every fit raises (a bad fixed setting): its fit records say `failed`
    with the error, the rest of the workflow completes and the score tables count the
    failures."""
    env = {**os.environ, PAUSE_ENV: "results/tasks/"}
    cmd = [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(tmp_path), TASK, "--cores", "2",
           "--configfile", SMOKE, _one_instance(tmp_path)]
    job = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
    store = tmp_path / TASK
    marker = store.with_name(f".{store.name}.paused")
    deadline = time.monotonic() + 300
    while not marker.exists():
        assert job.poll() is None, job.stdout.read()
        assert time.monotonic() < deadline, "the posterior job never reached the pause"
        time.sleep(0.5)
    time.sleep(0.5)  # the marker is written after the first variable
    os.kill(int(marker.read_text()), signal.SIGKILL)
    out, _ = job.communicate(timeout=120)
    assert job.returncode != 0, out
    assert not store.exists()
    partial = list(store.parent.glob(f".{store.name}.tmp-*"))
    assert len(partial) == 1  # the half-written store, under its temporary name
    with pytest.raises((StoreValidationError, FileNotFoundError, KeyError, ValueError)):
        validate_store(partial[0], kind="task")
    for candidate in store.parent.iterdir():  # nothing in the folder validates
        if candidate.is_dir():
            with pytest.raises((StoreValidationError, FileNotFoundError, KeyError, ValueError)):
                validate_store(candidate, kind="task")

    # the whole smoke DAG, with BLR given a setting that makes every fit raise
    preset = _one_instance(tmp_path, methods=["blr"], tuning={"methods": ["blr"]},
                           method_settings={"blr": {"noise_std": -1.0}})
    run = snakemake(tmp_path, "--cores", "2", "--configfile", SMOKE, preset)
    assert run.returncode == 0, run.stderr[-3000:]
    validate_store(store, kind="task")  # rebuilt
    assert not list(store.parent.glob(".*")), "leftovers of the killed write remain"
    fits = open_zarr(tmp_path / f"results/fits/{CONDITION}/blr.zarr")
    assert fits["status"].values.tolist() == ["failed"]
    assert "need prior_precision > 0 and noise_std > 0" in str(fits["error"].values[0])
    assert np.isnan(fits["mean"].values).all()
    tuned = json.loads((tmp_path / f"results/tuning/{CONDITION}/blr.json").read_text())
    assert "no successful trial" in tuned["note"]
    scores = pd.read_csv(tmp_path / f"results/scores/{CONDITION}.csv")
    blr = scores[scores["method"] == "blr"]
    assert blr["status"].tolist() == ["failed"] and "noise_std" in blr["error"].iloc[0]
    table = pd.read_csv(tmp_path / "results/tables/scores.csv")
    blr_rows = table[table["method"] == "blr"]
    assert len(blr_rows) and (blr_rows["failed_fits"] == 1).all()
    assert blr_rows["mean"].isna().all() and (blr_rows["n_instances"] == 0).all()
    oracle = table[(table["method"] == "oracle") & (table["target"] == "eu_posterior_variance")]
    assert oracle["mean"].iloc[0] == pytest.approx(1.0)  # the rest was scored


def test_changed_raw_file_stops_with_both_checksums(tmp_path):
    """A raw covariate file whose bytes changed after its sha256 was recorded: a clear error
    naming the file and both checksums; no covariate store is built on it."""
    import hashlib

    raw = tmp_path / "resources/raw/abalone/uci_1.csv"
    raw.parent.mkdir(parents=True)
    raw.write_text("Sex,Length,Diameter\nM,0.455,0.365\n")
    recorded = hashlib.sha256(raw.read_bytes()).hexdigest()  # as a download records it
    raw.with_name(raw.name + ".json").write_text(json.dumps(
        {"sha256": recorded, "origin": "download", "url": "https://example.org/abalone.csv"}))
    raw.write_text("Sex,Length,Diameter\nM,0.455,0.366\n")  # one byte changed afterwards
    run = snakemake(tmp_path, "--cores", "1", "results/covariates/abalone.zarr")
    assert run.returncode != 0
    log = (tmp_path / "results/logs/covariates/abalone.log").read_text()
    actual = hashlib.sha256(raw.read_bytes()).hexdigest()
    assert "resources/raw/abalone/uci_1.csv" in log
    assert actual in log and recorded in log
    assert "changed or is corrupt" in log
    assert not (tmp_path / "results/covariates/abalone.zarr").exists()


def test_misspelled_config_key_or_value_is_one_clear_line(tmp_path):
    preset = tmp_path / "typo.yaml"
    preset.write_text(yaml.safe_dump({"posterior": {"gp": {"drawz": 100}}}))
    run = snakemake(tmp_path, "-n", "--configfile", str(preset))
    assert run.returncode != 0
    text = run.stdout + run.stderr
    assert "config key 'posterior.gp': unknown key(s) ['drawz']; allowed keys: draws" in text
    value = snakemake(tmp_path, "-n", "--config", "noise_modes=[bumpy]")
    assert value.returncode != 0
    assert "config key 'noise_modes[0]': 'bumpy' is not allowed; allowed values: " \
        "homoscedastic, smooth_monotone, bump, edges" in value.stdout + value.stderr
