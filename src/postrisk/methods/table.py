"""The method table: one row per built-in method and per reference row (docs/methods.md).

Each :class:`MethodEntry` says what a method is called in the registry and file paths
(``name``), what the paper's tables call it (``display_name``), which prior it belongs to
(``group``), where its class lives (``location``, ``"module:Class"``, imported on first use —
reading the table imports no numerical stack) and whether its fit jobs want a GPU
(``accelerator``). Everything else reads it: the registry, each class's ``name`` and
``display_name``, the grid's vocabulary, the tables and figures, and the matched-prior groups.
The order is the paper's tables' order. Adding a method is adding its row here.

Beside it, the ablation table (:data:`ABLATION_TABLE`): the paper's App. D.2 variants of a
method (one change each), with the same name, display name and location; they are run like
outside methods and tabled beside the method they change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from postrisk.core.lazy import Entry

#: The method groups → the prior each is matched to in the matched-prior comparison
#: (paper App. D.1, Figure 7): GP-based methods ↔ the GP oracle, tree ensembles ↔ HBART, neural
#: networks (SNGP-Het included, as in the paper's Tables 8–10) ↔ the BNN oracle. Reference
#: rows are matched to none.
GROUP_PRIORS: dict[str, str | None] = {"gp_based": "gp", "trees": "hbart", "neural": "bnn",
                                       "reference": None}


@dataclass(frozen=True)
class MethodEntry:
    """One row of the method table (module docstring). A reference row has no ``location``:
    it is computed from the task by the scoring stage, not fitted."""

    name: str
    display_name: str
    group: str
    location: str | None = None
    accelerator: bool = False

    def __post_init__(self) -> None:
        if self.group not in GROUP_PRIORS:
            raise ValueError(f"method {self.name!r}: unknown group {self.group!r}; "
                             f"groups: {', '.join(GROUP_PRIORS)}")
        if (self.location is None) != (self.group == "reference"):
            raise ValueError(f"method {self.name!r}: a method has a location, a reference row "
                             "none")

    def load(self) -> Any:
        """The method's class (imported now)."""
        return Entry(str(self.location)).load()


def _method(name: str, display_name: str, group: str, location: str) -> MethodEntry:
    return MethodEntry(name, display_name, group, f"postrisk.methods.{location}")


METHOD_TABLE: tuple[MethodEntry, ...] = (
    _method("blr", "BLR", "gp_based", "blr:BayesianLinearRegression"),
    _method("gp", "GP", "gp_based", "gp:ExactGP"),
    _method("vlgp", "VLGP", "gp_based", "vlgp:VariationalHeteroscedasticGP"),
    _method("dkl", "DKL", "gp_based", "dkl:DeepKernelLearning"),
    _method("sngp_het", "SNGP-Het", "neural", "nn.sngp_het:HeteroscedasticSNGP"),
    _method("ngboost_nig", "NGBoost-NIG", "trees", "ngboost:NGBoostNIG"),
    _method("ngboost_bag", "NGBoost-Bag", "trees", "ngboost_bag:NGBoostBag"),
    _method("catboost_ps", "CatBoost-PS", "trees", "catboost:CatBoostPS"),
    _method("catboost_kgb", "CatBoost-KGB", "trees", "catboost:CatBoostKGB"),
    _method("nn_bag", "NN-Bag", "neural", "nn.ensembles:NeuralBag"),
    _method("nn_ens", "NN-Ens", "neural", "nn.ensembles:NeuralEnsemble"),
    _method("nn_drop", "NN-Drop", "neural", "nn.ensembles:MCDropout"),
    _method("nn_edl", "NN-EDL", "neural", "nn.edl:NeuralEvidentialRegression"),
    _method("nn_deup", "NN-DEUP", "neural", "nn.deup:NeuralDEUP"),
    _method("nn_lap", "NN-Lap", "neural", "nn.laplace:NeuralLaplace"),
    _method("nn_lap_sn", "NN-Lap-SN", "neural", "nn.laplace:SpectralNeuralLaplace"),
    _method("nn_fsp", "NN-FSP", "neural", "nn.fsp:NeuralFSP"),
    _method("nn_fsp_sn", "NN-FSP-SN", "neural", "nn.fsp:SpectralNeuralFSP"),
    _method("nn_swag", "NN-SWAG", "neural", "nn.swag:NeuralSWAG"),
    MethodEntry("oracle", "Oracle", "reference"),
    MethodEntry("mahalanobis", "Mahalanobis", "reference"),
    MethodEntry("knn10", "10-NN", "reference"),
    MethodEntry("constant_au", "Constant AU", "reference"),
)

#: Registry name → entry, the built-in methods only (reference rows are not fitted).
METHOD_ENTRIES: dict[str, MethodEntry] = {e.name: e for e in METHOD_TABLE
                                          if e.group != "reference"}
#: The reference rows of every table, in the table's order.
REFERENCE_ROWS: tuple[str, ...] = tuple(e.name for e in METHOD_TABLE if e.group == "reference")


@dataclass(frozen=True)
class AblationEntry:
    """One ablation of the paper's App. D.2: a method (``ablates``) with one thing changed
    (``change``, a key of :data:`ABLATION_CHANGES`), as its own class at ``location`` (a
    subclass that changes only that). A configuration lists it under ``methods`` by its
    location, like an outside method; the tables keep it out of the method tables and show it
    beside the method it ablates."""

    name: str
    display_name: str
    ablates: str
    change: str
    location: str

    def __post_init__(self) -> None:
        if self.ablates not in METHOD_ENTRIES:
            raise ValueError(f"ablation {self.name!r}: {self.ablates!r} is not a method")
        if self.change not in ABLATION_CHANGES:
            raise ValueError(f"ablation {self.name!r}: unknown change {self.change!r}")


@dataclass(frozen=True)
class AblationChange:
    """What an ablation changes: how the tables describe it (``description``), the App. D.2
    table (an artefact id of the catalogue) that shows it beside its method, and the column of
    that table that holds the ablation's name."""

    description: str
    table: str
    column: str


#: What an ablation changes → its description and its table.
ABLATION_CHANGES: dict[str, AblationChange] = {
    "natural_head": AblationChange(
        "natural-parameter head (η₁, η₂) instead of (μ, softplus σ)", "natural_heads",
        "ablation"),
    "plug_in_au": AblationChange(
        "plug-in AU exp(m_g) instead of the reported exp(m_g + v_g/2)", "vlgp_plug_in",
        "method"),
    "natural_gradient_metric": AblationChange(
        "regularised Fisher metric I_t + c_kl·I_NIG + 0.01·I instead of the empirical "
        "g gᵀ + 1e-5·I", "ngboost_nig_metric", "ablation"),
}


def _ablation(name: str, display_name: str, ablates: str, change: str,
              location: str) -> AblationEntry:
    return AblationEntry(name, display_name, ablates, change, f"postrisk.methods.{location}")


#: The ablations of App. D.2, in the order of the tables (the last, NGBoost-NIG's metric, is
#: this project's, in the same manner: the paper runs the empirical metric, our default).
ABLATION_TABLE: tuple[AblationEntry, ...] = (
    _ablation("nn_ens_natural_head", "NN-Ens (natural head)", "nn_ens", "natural_head",
              "nn.ablations:NaturalHeadEnsemble"),
    _ablation("nn_bag_natural_head", "NN-Bag (natural head)", "nn_bag", "natural_head",
              "nn.ablations:NaturalHeadBag"),
    _ablation("nn_drop_natural_head", "NN-Drop (natural head)", "nn_drop", "natural_head",
              "nn.ablations:NaturalHeadDropout"),
    _ablation("nn_swag_natural_head", "NN-SWAG (natural head)", "nn_swag", "natural_head",
              "nn.ablations:NaturalHeadSWAG"),
    _ablation("vlgp_plug_in_au", "VLGP (plug-in AU)", "vlgp", "plug_in_au",
              "vlgp:PlugInNoiseVLGP"),
    _ablation("ngboost_nig_regularised_fisher", "NGBoost-NIG (regularised Fisher)",
              "ngboost_nig", "natural_gradient_metric",
              "ngboost:RegularisedFisherNGBoostNIG"),
)
#: Registry name → ablation entry.
ABLATION_ENTRIES: dict[str, AblationEntry] = {e.name: e for e in ABLATION_TABLE}
_BY_NAME = {e.name: e for e in METHOD_TABLE}
_BY_LOCATION: dict[str, MethodEntry | AblationEntry] = {
    e.location: e for e in (*METHOD_TABLE, *ABLATION_TABLE) if e.location}


def table_entry(name: str) -> MethodEntry | None:
    """The row of a built-in method or reference row (None for any other name)."""
    return _BY_NAME.get(name)


def ablation_entry(name: str) -> AblationEntry | None:
    """The ablation called ``name`` (None for any other name)."""
    return ABLATION_ENTRIES.get(name)


def entry_at(location: str) -> MethodEntry | AblationEntry | None:
    """The row (method or ablation) whose class lives at ``location`` (``"module:Class"``), if
    any."""
    return _BY_LOCATION.get(location)


def matched_groups() -> dict[str, tuple[str, tuple[str, ...]]]:
    """Method group → (its matched prior, its methods in table order)."""
    return {group: (prior, tuple(e.name for e in METHOD_TABLE if e.group == group))
            for group, prior in GROUP_PRIORS.items() if prior is not None}
