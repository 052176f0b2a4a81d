"""What a Snakemake session sets up before it plans: where jobs import from, JAX's process
settings, the outside methods the jobs may fit.

``rules/common.smk`` puts the checkout's ``src`` on ``sys.path`` (so this module can be found),
calls :func:`prepare_imports` before and :func:`export_outside_methods` after validating the
configuration; nothing else of the workflow touches the environment.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from postrisk.core.jax_env import share_accelerator_memory
from postrisk.methods.registry import OUTSIDE_ENV

#: JAX jobs share compiled kernels across processes (its persistent compilation cache).
JAX_CACHE = "resources/jax_cache"


def importable_paths(basedir: str | Path, cwd: str | Path) -> list[str]:
    """Where the session and its jobs import from, first to last: the checkout's ``src`` (the
    library), the working directory and the checkout (outside methods, ``module:Class`` in
    ``methods``, live in either, e.g. ``examples/``)."""
    return list(dict.fromkeys([str(Path(basedir) / "src"), str(cwd), str(Path(basedir))]))


def prepare_imports(basedir: str | Path, cwd: str | Path | None = None) -> None:
    """Set up this process, and through the environment every job it starts, for the workflow
    of the checkout ``basedir`` (before the configuration is validated: validating imports the
    outside methods):

    * ``sys.path`` and ``PYTHONPATH`` start with :func:`importable_paths` (jobs, local, conda or
      cluster, import the library from this checkout), the inherited ``PYTHONPATH`` after them;
    * JAX: a persistent compilation cache under ``resources/jax_cache`` (unless set), and GPU
      memory allocated on demand, so several jobs can share a device.
    """
    paths = importable_paths(basedir, cwd or os.getcwd())
    for path in reversed(paths):
        if path not in sys.path:
            sys.path.insert(0, path)
    inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                 if p and p not in paths]
    os.environ["PYTHONPATH"] = os.pathsep.join([*paths, *inherited])
    os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(Path(JAX_CACHE).resolve()))
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    share_accelerator_memory()


def export_outside_methods(outside_methods: Mapping | None) -> None:
    """A validated configuration's ``outside_methods`` (name → location and search space), for
    the jobs to import (:data:`postrisk.methods.registry.OUTSIDE_ENV`)."""
    os.environ[OUTSIDE_ENV] = json.dumps(dict(outside_methods or {}))
