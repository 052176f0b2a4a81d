"""Process-level JAX settings, applied before JAX is imported.

A job's chains are spread over host devices (``--xla_force_host_platform_device_count``), which
XLA reads once, when JAX initialises its CPU backend; so this must run first in a job's process
(:func:`devices_for_chains` says over how many of them a sampler spreads its chains).
bartz needs JAX x64 off and the BNN posterior needs it on: x64 is never switched on globally here
(the BNN code uses ``jax.enable_x64(True)`` as a context).
"""

from __future__ import annotations

import os
import re
import sys

from postrisk.core.errors import StopJob

_FLAG = "--xla_force_host_platform_device_count"


def use_host_devices(n: int) -> int:
    """Ask XLA for ``n`` CPU devices in this process (before JAX is imported); returns ``n``.

    Leaves an explicit count already in ``XLA_FLAGS`` alone. Raises if JAX has already
    initialised with a different number of devices, since the setting would be ignored silently.
    """
    n = max(1, int(n))
    flags = os.environ.get("XLA_FLAGS", "")
    match = re.search(rf"{_FLAG}=(\d+)", flags)
    if match:
        n = int(match.group(1))
    else:
        os.environ["XLA_FLAGS"] = f"{flags} {_FLAG}={n}".strip()
    if "jax" in sys.modules:
        import jax

        have = jax.local_device_count("cpu") if jax.default_backend() == "cpu" else n
        if have != n and jax.default_backend() == "cpu":
            raise RuntimeError(f"JAX is already initialised with {have} CPU device(s); call "
                               f"use_host_devices({n}) before importing jax")
    return n


def share_accelerator_memory() -> None:
    """Let several JAX processes share one GPU: allocate on demand instead of 75% up front."""
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


def devices_for_chains(chains: int, available: int) -> int:
    """How many of ``available`` devices ``chains`` equal chains are spread over: the largest
    count not above ``available`` that divides ``chains``, so every device used gets the same
    number of chains (the samplers shard the chain axis evenly). The one rule of both MCMC
    samplers."""
    chains, available = int(chains), int(available)
    if chains < 1 or available < 1:
        raise ValueError(f"need at least one chain and one device, got {chains} chain(s) and "
                         f"{available} device(s)")
    return max(k for k in range(1, min(chains, available) + 1) if chains % k == 0)


def device_provenance() -> dict[str, object]:
    """What a JAX sampler ran on, for a store's ``sampler_settings``: ``jax.default_backend()``
    ("cpu", "gpu", …), the first device's kind (e.g. "cpu" or the GPU model) and the number
    of devices. GPU and CPU runs of the same sampler differ in their draws."""
    import jax

    devices = jax.devices()
    return {"backend": jax.default_backend(), "device_kind": devices[0].device_kind,
            "device_count": len(devices)}


class AcceleratorMissing(StopJob):
    """A job that was given a GPU, whose JAX sees none (see :func:`check_accelerator`)."""


def check_accelerator(requested: bool, allow_cpu_fallback: bool = False,
                      backend: str | None = None, platforms: dict[str, str] | None = None
                      ) -> dict[str, object] | None:
    """Check, before any sampling, that a job that asked for a GPU got one JAX can use.

    ``requested``: the job's rule asked for ``gpu: 1`` (its prior or method declares an
    accelerator and the config's ``accelerator.use`` is on). Returns None when nothing was
    requested; else the record kept in the store (``requested``, ``backend``,
    ``cpu_fallback``). No GPU visible to JAX raises :class:`AcceleratorMissing` with one message
    naming the likely causes, unless ``allow_cpu_fallback`` (then the job runs on the CPU and
    the record says so). ``backend`` and ``platforms`` (JAX's default backend and versions,
    CUDA_VISIBLE_DEVICES) are read from this process when not given (tests pass them).
    """
    if not requested:
        return None
    if backend is None:
        import jax
        import jaxlib

        backend = jax.default_backend()
        platforms = {"jax": jax.__version__, "jaxlib": jaxlib.__version__,
                     "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES", "(unset)")}
    found = backend in ("gpu", "cuda", "rocm")
    record: dict[str, object] = {"requested": "gpu", "backend": backend,
                                 "cpu_fallback": not found}
    if found:
        return record
    details = ", ".join(f"{k} {v}" for k, v in (platforms or {}).items())
    if allow_cpu_fallback:
        import logging

        logging.getLogger(__name__).warning(
            "this job asked for a GPU but JAX sees none (backend %r; %s): running on the CPU "
            "because accelerator.allow_cpu_fallback is true; the store records it", backend,
            details)
        return record
    raise AcceleratorMissing(
        f"this job asked for a GPU but JAX sees none (backend {backend!r}; {details}). Run it "
        "in the GPU environment (workflow/envs/jax-gpu.yaml, `--sdm conda`) on a node with a "
        "CUDA 12 driver; or, to run on the CPU (much slower), set "
        "accelerator.allow_cpu_fallback: true (recorded in the store) or accelerator.use: false "
        "(no GPU requested)")
