"""Registry of the implemented uncertainty methods (docs/design.md, "Methods").

The full list of the 19 method names is ``postrisk.grid.METHODS``; this registry lists only the
methods implemented so far.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from postrisk.methods.interface import UncertaintyMethod

#: Registry names of the paper's 19 methods, in the order of its tables.
METHOD_NAMES = ("blr", "gp", "vlgp", "dkl", "sngp_het", "ngboost_nig", "ngboost_bag",
                "catboost_ps", "catboost_kgb", "nn_bag", "nn_ens", "nn_drop", "nn_edl", "nn_deup",
                "nn_lap", "nn_lap_sn", "nn_fsp", "nn_fsp_sn", "nn_swag")

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
