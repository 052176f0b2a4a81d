"""Starting the workflow from the command line (``postrisk run``, ``postrisk task``): the
checkout that holds it and the snakemake command that runs it.

The workflow is the Snakefile of a checkout of the postrisk repository (a folder holding
``Snakefile`` and ``rules/``): the current folder's or the nearest such folder above it, else
the checkout this package was installed from (an editable install's). So a command run inside a
checkout runs that checkout's workflow, whichever checkout the environment came from.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Iterable, Sequence
from importlib.util import find_spec
from pathlib import Path

from postrisk.core.errors import install_extra

#: The checkout this package was installed from, where it was installed from one (editable).
PACKAGE_CHECKOUT = Path(__file__).resolve().parents[3]


def is_checkout(folder: Path) -> bool:
    """Whether ``folder`` holds the workflow: a ``Snakefile`` and a ``rules/`` folder."""
    return (folder / "Snakefile").is_file() and (folder / "rules").is_dir()


def find_checkout() -> tuple[Path, str]:
    """The checkout holding the workflow and where it was found: the current folder or the
    nearest folder above it that is one, else this package's own (the installed package's
    checkout)."""
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if is_checkout(folder):
            return folder, ("the current folder" if folder == here
                            else "a folder above the current one")
    if is_checkout(PACKAGE_CHECKOUT):
        return PACKAGE_CHECKOUT, "the installed package's checkout"
    raise FileNotFoundError("the workflow needs a checkout of the postrisk repository (its "
                            "Snakefile and rules/); run this inside one")


def checkout() -> Path:
    """The checkout holding the workflow (:func:`find_checkout`)."""
    return find_checkout()[0]


def snakemake_command(args: Sequence[str], root: Path | None = None) -> list[str]:
    """The command that runs the workflow of the checkout ``root`` (default: :func:`checkout`)
    with snakemake's arguments ``args``, with this interpreter; a ``RuntimeError`` where
    snakemake is not installed."""
    if find_spec("snakemake") is None:
        raise RuntimeError(f"the workflow needs the pipeline extra: {install_extra('pipeline')}; "
                           "a checkout's `make env` installs everything")
    root = root or checkout()
    return [sys.executable, "-m", "snakemake", "-s", str(root / "Snakefile"), *args]


def check_key(key: str):
    """The :class:`~postrisk.tasks.key.TaskKey` of ``key`` (dataset/prior/noise/coverage/seed),
    each name checked against the workflow's: a ``ValueError`` naming the unknown ones, with
    the close names (``did you mean …``) or else every known one."""
    from postrisk.covariates.registry import registry
    from postrisk.grid.vocabulary import COVERAGES, NOISE_MODES, PRIORS
    from postrisk.tasks.key import TaskKey

    parsed = TaskKey.parse(key)
    known = {"dataset": list(registry()), "prior": PRIORS, "noise": NOISE_MODES,
             "coverage": COVERAGES}
    problems = []
    for field, names in known.items():
        value = getattr(parsed, field)
        if value not in names:
            close = list(dict.fromkeys([
                *difflib.get_close_matches(value, names, n=3, cutoff=0.5),
                *(name for name in names if value and name.startswith(value))]))
            hint = (f"did you mean {' or '.join(close)}?" if close
                    else f"known: {', '.join(names)}")
            problems.append(f"unknown {field} {value!r} ({hint})")
    if problems:
        raise ValueError(f"{key}: {'; '.join(problems)}")
    return parsed


def task_arguments(key: str, cores: int, configfiles: Iterable[str | Path] | None = None
                   ) -> list[str]:
    """Snakemake's arguments that build one task instance (``key``:
    dataset/prior/noise/coverage/seed, its names checked by :func:`check_key`), its store and
    only what it needs."""
    from postrisk.grid.paths import path

    args = [path("task", **vars(check_key(key))), "--cores", str(cores)]
    if configfiles:
        args += ["--configfile", *map(str, configfiles)]
    return args
