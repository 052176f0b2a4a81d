"""A job that was given a GPU whose JAX sees none: one clear message and exit code 1, or, with
`accelerator.allow_cpu_fallback`, a CPU run recorded in the store. Simulated: the job's
request is set as the workflow sets it, on this machine's CPU-only JAX (or the backend faked)."""

import json
import logging

import pytest

from postrisk.core.io import open_zarr, write_zarr_atomic
from postrisk.core.jax_env import AcceleratorMissing, check_accelerator
from postrisk.core.logs import job_log
from postrisk.covariates.build import Covariates
from postrisk.gp.kernels import default_kernel
from postrisk.planning.units import PosteriorUnit
from postrisk.tasks.generate import TaskKey, build_sample
from postrisk.workflow.steps import make_tasks


def test_nothing_requested_nothing_checked():
    assert check_accelerator(False, backend="cpu") is None


def test_a_visible_gpu_passes_and_is_recorded():
    assert check_accelerator(True, backend="gpu") == {"requested": "gpu", "backend": "gpu",
                                                      "cpu_fallback": False}


def test_no_gpu_stops_with_one_message_naming_the_way_out():
    with pytest.raises(AcceleratorMissing) as err:
        check_accelerator(True, backend="cpu",
                          platforms={"jax": "0.10.2", "CUDA_VISIBLE_DEVICES": "0"})
    message = str(err.value)
    assert "asked for a GPU but JAX sees none" in message and "backend 'cpu'" in message
    assert "jax-gpu.yaml" in message and "accelerator.allow_cpu_fallback: true" in message
    assert "CUDA_VISIBLE_DEVICES 0" in message


def test_cpu_fallback_warns_and_is_recorded(caplog):
    with caplog.at_level(logging.WARNING):
        record = check_accelerator(True, allow_cpu_fallback=True, backend="cpu")
    assert record == {"requested": "gpu", "backend": "cpu", "cpu_fallback": True}
    assert "running on the CPU" in caplog.text


@pytest.fixture
def gp_unit(tmp_path, offline_covariates):
    concrete = Covariates(offline_covariates["concrete"])
    kernel = default_kernel(("rq", "linear"), concrete.x.shape[1])
    key = TaskKey("concrete", "gp", "bump", "ood", 0)
    sample = build_sample(key, concrete, {"prior": "gp", "kernel": kernel.to_dict(), "a": 1.0},
                          60)
    write_zarr_atomic(sample, tmp_path / "sample.zarr")
    return PosteriorUnit(key, str(tmp_path / "sample.zarr"), {"draws": 40},
                         str(tmp_path / "task.zarr"))


def test_posterior_job_given_a_gpu_it_cannot_see_exits_1_with_the_message(tmp_path, gp_unit,
                                                                          capfd):
    """This machine's JAX sees no GPU: a job whose rule asked for one stops before sampling."""
    log = tmp_path / "job.log"
    with pytest.raises(SystemExit) as stop, job_log(log):
        make_tasks([gp_unit], {"requested": True, "allow_cpu_fallback": False})
    assert stop.value.code == 1
    text = log.read_text()
    assert "asked for a GPU but JAX sees none" in text and "Traceback" not in text
    assert "asked for a GPU but JAX sees none" in capfd.readouterr().err
    assert not (tmp_path / "task.zarr").exists()


def test_posterior_job_with_cpu_fallback_records_it_in_the_store(gp_unit):
    make_tasks([gp_unit], {"requested": True, "allow_cpu_fallback": True})
    record = json.loads(open_zarr(gp_unit.out).attrs["accelerator"])
    assert record == {"requested": "gpu", "backend": "cpu", "cpu_fallback": True}


def test_posterior_job_without_a_request_stores_no_record(gp_unit):
    make_tasks([gp_unit], {"requested": False, "allow_cpu_fallback": False})
    assert "accelerator" not in open_zarr(gp_unit.out).attrs
