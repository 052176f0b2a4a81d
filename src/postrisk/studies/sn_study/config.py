"""Config ``studies.sn_study``: its methods, schema, checks and what its summary takes."""

from __future__ import annotations

from collections.abc import Mapping

from postrisk.covariates.registry import task_datasets
from postrisk.grid.config_methods import ConfigError
from postrisk.grid.schema import names_schema, positive_int_schema
from postrisk.grid.vocabulary import COVERAGES, NOISE_MODES, PRIORS

#: The methods on the shared network that App. D.4 re-tunes with spectral normalisation and
#: with strong weight decay, in the order of its Table 13.
SN_METHODS: tuple[str, ...] = ("nn_lap", "nn_fsp", "nn_deup", "nn_edl", "nn_swag", "nn_drop",
                               "nn_ens", "nn_bag")


def sn_study_schema(methods: tuple[str, ...] = ()) -> dict:
    """Config ``studies.sn_study`` (docs/design.md, "Does spectral normalisation help the
    network methods?"; ``run``: planned in ``all`` and ``studies``)."""
    range_ = {"type": "array", "minItems": 2, "maxItems": 2,
              "items": {"type": "number", "exclusiveMinimum": 0}}
    properties = dict(
        run={"type": "boolean"}, methods=names_schema(SN_METHODS),
        datasets={"anyOf": [{"type": "null"}, names_schema(task_datasets())]},
        priors=names_schema(PRIORS), noise={"enum": list(NOISE_MODES)},
        coverage={"enum": list(COVERAGES)}, seeds_per_condition=positive_int_schema(),
        trials=positive_int_schema(), startup_trials={"type": "integer", "minimum": 0},
        sn_coeff=range_, weight_decay=range_,
        max_preservation_points={"type": "integer", "minimum": 10},
        min_instances=positive_int_schema(), bootstrap=positive_int_schema())
    return {"type": "object", "additionalProperties": False, "required": list(properties),
            "properties": properties}


def check_sn_study(study: Mapping) -> None:
    """The study's ranges run upwards."""
    for key in ("sn_coeff", "weight_decay"):
        low, high = study[key]
        if not high > low:
            raise ConfigError(f"config key 'studies.sn_study.{key}': {study[key]} must run "
                              "upwards ([low, high], high > low)")


def summary_settings(section: Mapping) -> dict:
    """What the study's tables take from its config ``section`` (``studies.sn_study``): the
    bootstrap's replicates and the instances per method below which a regression is not
    interpreted."""
    return {key: section[key] for key in ("bootstrap", "min_instances") if key in section}
