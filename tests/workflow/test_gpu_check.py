"""benchmarks/gpu_check.py on this CPU machine: a bundle built without wheels from a small config
of the test's own, then `run` as on the GPU machine — refused without a GPU, and with
--allow-cpu --quick both instances' real make_task, each in its own process."""

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "gpu_check.py"
SMALL = """\
sizes: {n_eval_cap: 60, n_cap: 40}
hbart_prior: {num_trees: 20, scale_draws: 10}
bnn_prior: {hidden: 8, reference_inputs: 10, scale_draws: 10}
"""


def _script():
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _call(*args, env=None):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          cwd=REPO, env={**os.environ, **(env or {})}, timeout=600)


@pytest.fixture(scope="module")
def small_bundle(tmp_path_factory):
    root = tmp_path_factory.mktemp("gpu_check")
    (root / "small.yaml").write_text(SMALL)
    proc = _call("bundle", "--out", str(root / "bundle"), "--no-wheels",
                 "--config", str(root / "small.yaml"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return root / "bundle"


def test_the_size_guard_counts_bundle_and_working_tree():
    gpu_check = _script()
    mib = gpu_check.MIB
    gpu_check.check_size(60 * mib, 3 * mib)  # within 64 MiB
    with pytest.raises(SystemExit, match=r"over the 64 MiB the device tool carries"):
        gpu_check.check_size(62 * mib, 3 * mib)
    with pytest.raises(SystemExit, match=r"the bundle is 10\.0 MiB"):
        gpu_check.check_size(10 * mib, limit=5 * mib)


@pytest.mark.slow
def test_the_bundle_holds_both_sample_stores_and_what_the_device_lacks(small_bundle):
    manifest = json.loads((small_bundle / "manifest.json").read_text())
    assert set(manifest["instances"]) == {"hbart", "bnn"}
    for prior, entry in manifest["instances"].items():
        assert entry["key"] == f"concrete/{prior}/smooth_monotone/balanced/0"
        assert (small_bundle / entry["sample"]).is_dir()
        assert entry["settings"].keys() >= {"chains", "warmup"}  # config.yaml's posterior.<prior>
    # zarr, bartz and arviz are what the GPU machine lacks; never its own JAX or numpy
    assert {"zarr", "bartz", "arviz"} <= set(manifest["needed"])
    assert not {"jax", "jaxlib", "numpy", "numpyro", "xarray"} & set(manifest["needed"])
    assert manifest["wheels"] == []
    assert manifest["cpu_reference"]["hbart"]["seconds"] is None  # no --cpu-times given


@pytest.mark.slow
def test_run_without_a_gpu_exits_1_naming_it(small_bundle, tmp_path):
    proc = _call("run", "--bundle", str(small_bundle), "--quick", env={"OUT": str(tmp_path)})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "no GPU: JAX sees backend 'cpu'" in proc.stderr and "--allow-cpu" in proc.stderr
    assert "error" in json.loads((tmp_path / "gpu_check.json").read_text())


@pytest.mark.slow
def test_run_on_the_cpu_quick_times_both_instances(small_bundle, tmp_path):
    proc = _call("run", "--bundle", str(small_bundle), "--allow-cpu", "--quick",
                 env={"OUT": str(tmp_path)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "backend: cpu" in out and "running on the CPU (--allow-cpu)" in out
    for prior in ("hbart", "bnn"):  # its status line and its row of the table, with seconds
        assert re.search(rf"concrete/{prior}/smooth_monotone/balanced/0: ok, \d+\.\d s", out)
        assert re.search(rf"concrete/{prior}/smooth_monotone/balanced/0 +cpu +\d+\.\d", out)
        assert (tmp_path / f"gpu_check_{prior}.log").is_file()
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert report.keys() >= {"backend", "device_kind", "versions", "instances", "total_s",
                             "imported_not_listed", "installed_from_bundle"}
    assert report["backend"] == "cpu" and report["quick"] is True
    assert set(report["versions"]) >= {"jax", "jaxlib", "bartz", "numpyro", "zarr", "arviz"}
    assert set(report["instances"]) == {"hbart", "bnn"}
    for row in report["instances"].values():
        assert row["status"] == "ok" and row["seconds"] > 0 and row["make_task_s"] > 0
        assert row["sampler"]["backend"] == "cpu" and row["max_rhat"] is not None
        assert row["ratio"] is None  # quick: no comparison with the paper-settings CPU time
    assert report["instances"]["bnn"]["compile_s"] > 0
    # every distribution the two processes imported is on the device or in the bundle's list
    assert report["imported_not_listed"] == []
    assert report["installed_from_bundle"] == []  # here everything is importable already


def test_this_machines_seconds_come_from_a_measured_job_times_table(tmp_path):
    """Without a finished run's results, the slice's measured table gives each instance's
    posterior seconds (its own row, by job key), and says so; a missing row stays unknown."""
    table = tmp_path / "paper_slice.csv"
    table.write_text(
        "stage,rule,job,seconds,machine,date\n"
        "posterior,posterior_mcmc,concrete/hbart/smooth_monotone/balanced/0,1359.59,M,2026-12-03\n"
        "posterior,posterior_mcmc,concrete/bnn/smooth_monotone/balanced/1,57.0,M,2026-12-03\n"
        "fit,fit,concrete/bnn/smooth_monotone/balanced/0,9.0,M,2026-12-03\n")
    instances = {p: {"key": f"concrete/{p}/smooth_monotone/balanced/0"} for p in ("hbart", "bnn")}
    ref = _script().cpu_reference(table, {}, instances, tmp_path)
    assert ref["hbart"]["seconds"] == 1359.59
    assert ref["hbart"]["note"] == "from paper_slice.csv (M, 2026-12-03)"
    assert ref["bnn"]["seconds"] is None and ref["bnn"]["note"].startswith("unknown")
