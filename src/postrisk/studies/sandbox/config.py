"""Config ``studies.sandbox``: its schema, the checks a schema cannot state, whether it runs
and what its summary takes."""

from __future__ import annotations

from collections.abc import Mapping

from postrisk.grid.config_methods import ConfigError
from postrisk.grid.schema import positive_int_schema


def _section(**properties: dict) -> dict:
    """A mapping with exactly these keys, each required."""
    return {"type": "object", "additionalProperties": False, "required": list(properties),
            "properties": properties}


def sandbox_schema(methods: tuple[str, ...] = ()) -> dict:
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
        training=_section(n=positive_int_schema(), gap_centre={"type": "number"},
                          gap_width=positive,
                          gap_depth={"type": "number", "exclusiveMinimum": 0, "maximum": 1}),
        coverage={"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        lambdas={"type": "integer", "minimum": 2})


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


def sandbox_runs(section: Mapping) -> bool:
    """Whether ``all`` and ``studies`` plan the sandbox (``run`` of config
    ``studies.sandbox``, the ``section``)."""
    return bool(section.get("run"))


def summary_settings(section: Mapping) -> dict:
    """Config ``studies.sandbox`` (the ``section``) without ``run``: whether ``all`` plans the
    sandbox does not change what it builds (nor, then, its params)."""
    return {k: v for k, v in section.items() if k != "run"}
