"""The configuration of the paper's studies (``studies.<study>``; docs/design.md, "Studies"):
the schema of each study's section and the checks a schema cannot state. Used by
:func:`postrisk.grid.config.validate_config`; a bad key stops everything with one message.
"""

from __future__ import annotations

from collections.abc import Mapping

from postrisk.covariates.registry import registry, task_datasets
from postrisk.grid.config_methods import ConfigError
from postrisk.grid.vocabulary import COVERAGES, NOISE_MODES, PRIORS, SN_METHODS


def _names(values) -> dict:
    return {"type": "array", "items": {"enum": list(values)}, "minItems": 1,
            "uniqueItems": True}


def _positive_int() -> dict:
    return {"type": "integer", "minimum": 1}


def _section(**properties: dict) -> dict:
    """A mapping with exactly these keys, each required."""
    return {"type": "object", "additionalProperties": False, "required": list(properties),
            "properties": properties}


def sandbox_schema() -> dict:
    """Config ``studies.sandbox`` (docs/design.md, "The 1-D sandbox")."""
    positive = {"type": "number", "exclusiveMinimum": 0}
    return _section(
        run={"type": "boolean"}, seed={"type": "integer", "minimum": 0},
        domain={"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
        grid_points={"type": "integer", "minimum": 21},
        features=_section(count={"type": "integer", "minimum": 2}, offset=positive,
                          width=positive),
        prior_sd=positive,
        noise=_section(low=positive, high=positive, centre={"type": "number"}, width=positive),
        training=_section(n=_positive_int(), gap_centre={"type": "number"}, gap_width=positive,
                          gap_depth={"type": "number", "exclusiveMinimum": 0, "maximum": 1}),
        coverage={"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        lambdas={"type": "integer", "minimum": 2})


def sn_study_schema() -> dict:
    """Config ``studies.sn_study`` (docs/design.md, "Spectral normalisation")."""
    range_ = {"type": "array", "minItems": 2, "maxItems": 2,
              "items": {"type": "number", "exclusiveMinimum": 0}}
    return _section(
        run={"type": "boolean"}, methods=_names(SN_METHODS),
        datasets={"anyOf": [{"type": "null"}, _names(task_datasets())]},
        priors=_names(PRIORS), noise={"enum": list(NOISE_MODES)},
        coverage={"enum": list(COVERAGES)}, seeds_per_condition=_positive_int(),
        trials=_positive_int(), startup_trials={"type": "integer", "minimum": 0},
        sn_coeff=range_, weight_decay=range_,
        max_preservation_points={"type": "integer", "minimum": 10},
        min_instances=_positive_int(), bootstrap=_positive_int())


def studies_schema(methods: tuple[str, ...]) -> dict:
    """Config ``studies``: one optional section per study; ``methods``: the method names the
    configuration may use."""
    return {
        "type": "object", "additionalProperties": False,
        "properties": {
            # App. B.7: the same instances' MCMC posteriors with `factors` × the warm-up,
            # on those of `datasets` that the grid builds `prior` instances for
            "warmup_check": {
                "type": "object", "additionalProperties": False,
                "required": ["prior", "datasets", "factors"],
                "properties": {
                    "prior": {"enum": ["hbart", "bnn"]},
                    "datasets": {**_names(task_datasets()), "minItems": 0},
                    "factors": {"type": "array", "minItems": 1, "uniqueItems": True,
                                "items": {"type": "integer", "minimum": 1}},
                },
            },
            # App. D.3: is OOD detection a proxy for EU? Methods fitted on the
            # in-distribution dataset's instances of (noise, coverage) and `priors`
            # (`seeds_per_prior` each), asked at n_query held-out points and as many
            # rows of `ood` (scaled with the in-distribution dataset's constants)
            "ood_proxy": {
                "type": "object", "additionalProperties": False,
                "required": ["in_distribution", "ood", "priors", "noise", "coverage",
                             "seeds_per_prior", "n_query"],
                "properties": {
                    "in_distribution": {"enum": task_datasets()},
                    "ood": {"enum": [n for n, s in registry().items() if s.role == "ood"]},
                    "priors": _names(PRIORS),
                    "noise": {"enum": list(NOISE_MODES)},
                    "coverage": {"enum": list(COVERAGES)},
                    "seeds_per_prior": _positive_int(),
                    "n_query": {"type": "integer", "minimum": 10},
                    "methods": {"anyOf": [{"type": "null"}, _names(methods)]},
                },
            },
            # the closed-form 1-D sandbox (`run`: planned in `all` and
            # `studies`; `snakemake sandbox` builds it either way)
            "sandbox": sandbox_schema(),
            # App. D.4: eight network methods plain, spectrally normalised and with strong
            # weight decay (`run`: planned in `all` and `studies`)
            "sn_study": sn_study_schema(),
        },
    }


def check_studies(cfg: Mapping) -> None:
    """What the schema cannot say about the studies' sections (:func:`check_ood_pair`,
    :func:`check_sandbox`, :func:`check_sn_study`)."""
    studies = cfg.get("studies") or {}
    if studies.get("ood_proxy"):
        check_ood_pair(studies["ood_proxy"])
    if studies.get("sandbox"):
        check_sandbox(studies["sandbox"])
    if studies.get("sn_study"):
        check_sn_study(studies["sn_study"])


def check_ood_pair(study: Mapping) -> None:
    """The OOD study's OOD set must be scaled with its in-distribution dataset's constants
    (registry ``scaling_reference``), or its rows would not live in the same input space."""
    reference = registry()[study["ood"]].scaling_reference
    if reference != study["in_distribution"]:
        raise ConfigError(
            f"config key 'studies.ood_proxy.ood': {study['ood']} is scaled with "
            f"{reference}'s constants, not with those of in_distribution = "
            f"{study['in_distribution']} (registered pairs: " + ", ".join(
                f"{s.scaling_reference} → {n}" for n, s in registry().items()
                if s.role == "ood" and s.scaling_reference) + ")")


def check_sandbox(study: Mapping) -> None:
    """The sandbox's domain runs upwards and holds its gap and its noisy region."""
    lo, hi = study["domain"]
    if not hi > lo:
        raise ConfigError(f"config key 'studies.sandbox.domain': {study['domain']} must run "
                          "upwards ([lower, upper], upper > lower)")
    for key, value in (("training.gap_centre", study["training"]["gap_centre"]),
                       ("noise.centre", study["noise"]["centre"])):
        if not lo <= value <= hi:
            raise ConfigError(f"config key 'studies.sandbox.{key}': {value} lies outside the "
                              f"domain [{lo}, {hi}]")


def check_sn_study(study: Mapping) -> None:
    """The SN study's ranges run upwards."""
    for key in ("sn_coeff", "weight_decay"):
        low, high = study[key]
        if not high > low:
            raise ConfigError(f"config key 'studies.sn_study.{key}': {study[key]} must run "
                              "upwards ([low, high], high > low)")
