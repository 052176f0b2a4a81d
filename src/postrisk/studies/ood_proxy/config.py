"""Config ``studies.ood_proxy``: its schema and the check a schema cannot state."""

from __future__ import annotations

from collections.abc import Mapping

from postrisk.covariates.registry import registry, task_datasets
from postrisk.grid.config_methods import ConfigError
from postrisk.grid.schema import names_schema, positive_int_schema
from postrisk.grid.vocabulary import COVERAGES, NOISE_MODES, PRIORS


def ood_proxy_schema(methods: tuple[str, ...]) -> dict:
    """Methods fitted on the in-distribution dataset's instances of (noise, coverage) and
    ``priors`` (``seeds_per_prior`` each), asked at ``n_query`` held-out points and as many rows
    of ``ood`` (scaled with the in-distribution dataset's constants); ``methods``: the names the
    configuration may use."""
    return {
        "type": "object", "additionalProperties": False,
        "required": ["in_distribution", "ood", "priors", "noise", "coverage",
                     "seeds_per_prior", "n_query"],
        "properties": {
            "in_distribution": {"enum": task_datasets()},
            "ood": {"enum": [n for n, s in registry().items() if s.role == "ood"]},
            "priors": names_schema(PRIORS),
            "noise": {"enum": list(NOISE_MODES)},
            "coverage": {"enum": list(COVERAGES)},
            "seeds_per_prior": positive_int_schema(),
            "n_query": {"type": "integer", "minimum": 10},
            "methods": {"anyOf": [{"type": "null"}, names_schema(methods)]},
        },
    }


def check_ood_pair(study: Mapping) -> None:
    """The OOD set must be scaled with its in-distribution dataset's constants (registry
    ``scaling_reference``), or its rows would not live in the same input space."""
    reference = registry()[study["ood"]].scaling_reference
    if reference != study["in_distribution"]:
        raise ConfigError(
            f"config key 'studies.ood_proxy.ood': {study['ood']} is scaled with "
            f"{reference}'s constants, not with those of in_distribution = "
            f"{study['in_distribution']} (registered pairs: " + ", ".join(
                f"{s.scaling_reference} → {n}" for n, s in registry().items()
                if s.role == "ood" and s.scaling_reference) + ")")
