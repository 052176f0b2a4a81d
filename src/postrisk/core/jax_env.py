"""Process-level JAX settings, applied before JAX is imported.

A job's chains are spread over host devices (``--xla_force_host_platform_device_count``), which
XLA reads once, when JAX initialises its CPU backend; so this must run first in a job's process.
bartz needs JAX x64 off and the BNN posterior needs it on: x64 is never switched on globally here
(the BNN code uses ``jax.enable_x64(True)`` as a context).
"""

from __future__ import annotations

import os
import re
import sys

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


def device_provenance() -> dict[str, object]:
    """What a JAX sampler ran on, for a store's ``sampler_settings``: ``jax.default_backend()``
    ("cpu", "gpu", …), the first device's kind (e.g. "cpu" or the GPU model) and the number
    of devices. GPU and CPU runs of the same sampler differ in their draws."""
    import jax

    devices = jax.devices()
    return {"backend": jax.default_backend(), "device_kind": devices[0].device_kind,
            "device_count": len(devices)}
