"""Config ``families.classification``: which instances, their sizes, the temperature field,
the amplitude's target and the reference posterior's NUTS settings."""

from __future__ import annotations

from collections.abc import Mapping

from postrisk.grid.config import ConfigError
from postrisk.grid.vocabulary import COVERAGES, NOISE_MODES

_POSITIVE = {"type": "integer", "minimum": 1}


def classification_schema(methods: tuple[str, ...]) -> dict:
    """The section's JSON schema (every key optional; :func:`settings_of` fills defaults)."""
    names = lambda allowed: {"type": "array", "items": {"enum": list(allowed)},  # noqa: E731
                             "uniqueItems": True}
    return {
        "type": "object", "additionalProperties": False,
        "properties": {
            # the grid's datasets to build instances on (empty: none; each needs its GP prior)
            "datasets": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            "priors": {**names(("gp",)), "minItems": 1},
            "noise_modes": {**names(NOISE_MODES), "minItems": 1},
            "coverages": {**names(COVERAGES), "minItems": 1},
            "classes": {"type": "array", "items": {"type": "integer", "minimum": 2},
                        "uniqueItems": True, "minItems": 1},
            "seeds": _POSITIVE,
            "n_cap": {"anyOf": [{"type": "null"}, _POSITIVE]},
            "temperature_strength": {"type": "number", "minimum": 0},
            "entropy_share": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "amplitude_draws": _POSITIVE,
            "posterior": {
                "type": "object", "additionalProperties": False,
                "properties": {"chains": _POSITIVE, "warmup": _POSITIVE, "samples": _POSITIVE,
                               "target_accept": {"type": "number", "exclusiveMinimum": 0,
                                                 "exclusiveMaximum": 1},
                               "max_tree_depth": _POSITIVE},
            },
        },
    }


#: The defaults of every key (the paper configuration's values live in config.yaml).
DEFAULTS: Mapping = {
    "datasets": [], "priors": ["gp"], "noise_modes": list(NOISE_MODES),
    "coverages": list(COVERAGES), "classes": [2, 3], "seeds": 1, "n_cap": None,
    "temperature_strength": 1.25, "entropy_share": 0.5, "amplitude_draws": 100,
    "posterior": {"chains": 2, "warmup": 500, "samples": 500, "target_accept": 0.9,
                  "max_tree_depth": 10},
}


def settings_of(section: Mapping) -> dict:
    """The section with every default filled in."""
    out = {**DEFAULTS, **section}
    out["posterior"] = {**DEFAULTS["posterior"], **(section.get("posterior") or {})}
    return out


def check_classification(section: Mapping) -> None:
    """What the schema cannot say: D = chains × samples must allow a coverage check."""
    settings = settings_of(section)
    post = settings["posterior"]
    if post["chains"] * post["samples"] < 20:
        raise ConfigError("config key 'families.classification.posterior': chains × samples "
                          "must be at least 20 draws")


def summary_settings(section: Mapping) -> dict:
    """The summary's params: the posterior settings (a change reruns it)."""
    return {"posterior": settings_of(section)["posterior"]}
