"""Registry of the implemented uncertainty methods (docs/design.md, "Methods").

The full list of the 19 method names is ``postrisk.grid.METHODS``; this registry lists only the
methods implemented so far.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from postrisk.core.lazy import Entry

if TYPE_CHECKING:
    from postrisk.methods.interface import UncertaintyMethod

#: Registry names of the paper's 19 methods, in the order of its tables.
METHOD_NAMES = ("blr", "gp", "vlgp", "dkl", "sngp_het", "ngboost_nig", "ngboost_bag",
                "catboost_ps", "catboost_kgb", "nn_bag", "nn_ens", "nn_drop", "nn_edl", "nn_deup",
                "nn_lap", "nn_lap_sn", "nn_fsp", "nn_fsp_sn", "nn_swag")

#: Registry name -> the name in the paper's tables (each class's ``display_name``; kept here too
#: so that tables can print them without importing the numerical stack; a test keeps both equal).
DISPLAY_NAMES = {
    "blr": "BLR", "gp": "GP", "vlgp": "VLGP", "dkl": "DKL", "sngp_het": "SNGP-Het",
    "ngboost_nig": "NGBoost-NIG", "ngboost_bag": "NGBoost-Bag", "catboost_ps": "CatBoost-PS",
    "catboost_kgb": "CatBoost-KGB", "nn_bag": "NN-Bag", "nn_ens": "NN-Ens", "nn_drop": "NN-Drop",
    "nn_edl": "NN-EDL", "nn_deup": "NN-DEUP", "nn_lap": "NN-Lap", "nn_lap_sn": "NN-Lap-SN",
    "nn_fsp": "NN-FSP", "nn_fsp_sn": "NN-FSP-SN", "nn_swag": "NN-SWAG",
}

#: The method groups of the matched-prior comparison (paper App. D.1, Figure 7) and the prior
#: family each group is matched to: GP-based methods ↔ the GP oracle, tree ensembles ↔ HBART,
#: neural networks (SNGP-Het included, as in the paper's Tables 8–10) ↔ the BNN oracle.
METHOD_GROUPS = {
    "gp_based": ("gp", ("blr", "gp", "vlgp", "dkl")),
    "trees": ("hbart", ("ngboost_nig", "ngboost_bag", "catboost_ps", "catboost_kgb")),
    "neural": ("bnn", ("sngp_het", "nn_bag", "nn_ens", "nn_drop", "nn_edl", "nn_deup", "nn_lap",
                       "nn_lap_sn", "nn_fsp", "nn_fsp_sn", "nn_swag")),
}

#: Registry name -> entry (the class's location; ``accelerator=True`` where a method's fit jobs
#: want a GPU — none of the implemented ones yet). Classes are imported on first use, so listing
#: the implemented methods (the workflow does it at every start) imports no numerical stack.
METHOD_ENTRIES: dict[str, Entry] = {
    "blr": Entry("postrisk.methods.blr:BayesianLinearRegression"),
    "gp": Entry("postrisk.methods.gp:ExactGP"),
    "vlgp": Entry("postrisk.methods.vlgp:VariationalHeteroscedasticGP"),
    "dkl": Entry("postrisk.methods.dkl:DeepKernelLearning"),
    "sngp_het": Entry("postrisk.methods.sngp_het:HeteroscedasticSNGP"),
    "ngboost_nig": Entry("postrisk.methods.ngboost:NGBoostNIG"),
    "ngboost_bag": Entry("postrisk.methods.ngboost:NGBoostBag"),
    "catboost_ps": Entry("postrisk.methods.catboost:CatBoostPS"),
    "catboost_kgb": Entry("postrisk.methods.catboost:CatBoostKGB"),
    "nn_bag": Entry("postrisk.methods.nn_ensemble:NeuralBag"),
    "nn_ens": Entry("postrisk.methods.nn_ensemble:NeuralEnsemble"),
    "nn_drop": Entry("postrisk.methods.nn_ensemble:MCDropout"),
    "nn_edl": Entry("postrisk.methods.nn_edl:NeuralEvidentialRegression"),
    "nn_deup": Entry("postrisk.methods.nn_deup:NeuralDEUP"),
    "nn_lap": Entry("postrisk.methods.nn_laplace:NeuralLaplace"),
    "nn_lap_sn": Entry("postrisk.methods.nn_laplace:SpectralNeuralLaplace"),
    "nn_fsp": Entry("postrisk.methods.nn_fsp:NeuralFSP"),
    "nn_fsp_sn": Entry("postrisk.methods.nn_fsp:SpectralNeuralFSP"),
    "nn_swag": Entry("postrisk.methods.nn_swag:NeuralSWAG"),
}


#: Outside methods of this process (``postrisk.methods.outside``): name -> class.
_OUTSIDE: dict[str, type[UncertaintyMethod]] = {}
#: The environment variable through which a workflow hands its outside methods to its jobs:
#: JSON ``{name: {"location": "module:Class", "search_space": {...} | null}}``.
OUTSIDE_ENV = "POSTRISK_OUTSIDE_METHODS"


def register_outside(location: str, search_space: dict | None = None) -> str:
    """Load the method at ``location`` (``"module:Class"``), register it under its name and
    return the name. A name of a built-in method, or of another outside class, is an error."""
    from postrisk.methods.outside import OutsideMethodError, load_outside

    cls = load_outside(location, search_space)
    name = cls.name
    if name in METHOD_ENTRIES:
        raise OutsideMethodError(f"{location}: its name {name!r} is a built-in method's; give "
                                 "the class another `name`")
    known = _OUTSIDE.get(name)
    if known is not None and getattr(known, "location", location) != location:
        raise OutsideMethodError(f"{location}: name {name!r} is taken by {known.location}")
    _OUTSIDE[name] = cls
    return name


def outside_methods() -> dict[str, type[UncertaintyMethod]]:
    """The outside methods registered in this process, including those a workflow handed over
    through :data:`OUTSIDE_ENV`."""
    import json
    import os

    for name, spec in json.loads(os.environ.get(OUTSIDE_ENV) or "{}").items():
        if name not in _OUTSIDE:
            register_outside(spec["location"], spec.get("search_space"))
    return dict(_OUTSIDE)


def implemented_methods() -> list[str]:
    return list(METHOD_ENTRIES)


def get_method(name: str) -> type[UncertaintyMethod]:
    """The method class registered under ``name`` (built-in or outside); ``KeyError`` naming
    the allowed names."""
    if name in METHOD_ENTRIES:
        return METHOD_ENTRIES[name].load()
    outside = _OUTSIDE if name in _OUTSIDE else outside_methods()
    if name not in outside:
        known = f"; outside methods: {', '.join(sorted(outside))}" if outside else ""
        raise KeyError(f"unknown method {name!r}; implemented: "
                       f"{', '.join(sorted(METHOD_ENTRIES))}{known}")
    return outside[name]


def display_name(name: str) -> str:
    """The name of a method in the tables: the paper's for the built-in methods, the class's
    ``display_name`` for an outside one, else ``name`` itself."""
    if name in DISPLAY_NAMES:
        return DISPLAY_NAMES[name]
    if name in _OUTSIDE or name in outside_methods():
        return str(_OUTSIDE[name].display_name)
    return name


def __getattr__(name: str):
    if name == "METHODS":  # name -> class, imported on access
        return {key: get_method(key) for key in METHOD_ENTRIES}
    raise AttributeError(name)


def make_method(name: str, config: dict[str, Any] | None = None, random_state: int = 0,
                n_threads: int = 1) -> UncertaintyMethod:
    """An unfitted instance: ``get_method(name)(random_state=..., n_threads=..., **config)``."""
    return get_method(name)(random_state=random_state, n_threads=n_threads, **(config or {}))
