"""Starting the workflow from the command line (``postrisk run``, ``postrisk task``): the
checkout that holds it and the snakemake command that runs it."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from importlib.util import find_spec
from pathlib import Path


def checkout() -> Path:
    """The checkout holding the workflow (its Snakefile): this package's own, else the current
    folder."""
    for root in (Path(__file__).resolve().parents[3], Path.cwd()):
        if (root / "Snakefile").is_file() and (root / "rules").is_dir():
            return root
    raise FileNotFoundError("the workflow needs a checkout of the postrisk repository (its "
                            "Snakefile); run this inside one")


def snakemake_command(args: Sequence[str]) -> list[str]:
    """The command that runs the checkout's workflow with snakemake's arguments ``args``, with
    this interpreter; a ``RuntimeError`` where snakemake is not installed."""
    if find_spec("snakemake") is None:
        raise RuntimeError("the workflow needs the pipeline extra: pip install "
                           "'postrisk[pipeline]' (a checkout's `make env` installs everything)")
    return [sys.executable, "-m", "snakemake", "-s", str(checkout() / "Snakefile"), *args]


def task_arguments(key: str, cores: int, configfiles: Iterable[str | Path] | None = None
                   ) -> list[str]:
    """Snakemake's arguments that build one task instance (``key``:
    dataset/prior/noise/coverage/seed), its store and only what it needs."""
    from postrisk.grid.paths import path
    from postrisk.tasks.key import TaskKey

    args = [path("task", **vars(TaskKey.parse(key))), "--cores", str(cores)]
    if configfiles:
        args += ["--configfile", *map(str, configfiles)]
    return args
