"""Registry of the implemented uncertainty methods (SPEC §10).

The full list of the 19 method names is ``postrisk.config.METHODS``; this registry lists only the
methods implemented so far.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from postrisk.methods.base import UncertaintyMethod

#: Registry name -> "module:class". Classes are imported on first use, so listing the
#: implemented methods (the workflow does it at every start) imports no numerical stack.
METHOD_PATHS: dict[str, str] = {
    "blr": "postrisk.methods.blr:BayesianLinearRegression",
    "gp": "postrisk.methods.gp:ExactGP",
    "vlgp": "postrisk.methods.vlgp:VariationalHeteroscedasticGP",
    "dkl": "postrisk.methods.dkl:DeepKernelLearning",
    "sngp_het": "postrisk.methods.sngp_het:HeteroscedasticSNGP",
}


def implemented_methods() -> list[str]:
    return list(METHOD_PATHS)


def get_method(name: str) -> type[UncertaintyMethod]:
    """The method class registered under ``name``; ``KeyError`` naming the allowed names."""
    if name not in METHOD_PATHS:
        raise KeyError(f"unknown method {name!r}; implemented: "
                       f"{', '.join(sorted(METHOD_PATHS))}")
    module, attr = METHOD_PATHS[name].split(":")
    return getattr(importlib.import_module(module), attr)


def __getattr__(name: str):
    if name == "METHODS":  # name -> class, imported on access
        return {key: get_method(key) for key in METHOD_PATHS}
    raise AttributeError(name)


def make_method(name: str, config: dict[str, Any] | None = None, random_state: int = 0,
                n_threads: int = 1) -> UncertaintyMethod:
    """An unfitted instance: ``get_method(name)(random_state=..., n_threads=..., **config)``."""
    return get_method(name)(random_state=random_state, n_threads=n_threads, **(config or {}))
