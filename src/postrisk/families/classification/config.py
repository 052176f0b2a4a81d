"""Config ``families.classification``: which instances, their sizes, the temperature field,
the amplitude's target and the reference posterior's NUTS settings."""

from __future__ import annotations

from collections.abc import Mapping

from postrisk.grid.config import ConfigError
from postrisk.grid.vocabulary import COVERAGES, NOISE_MODES

_POSITIVE = {"type": "integer", "minimum": 1}
#: The priors of classification instances: postrisk.classification.priors's, written out here so
#: that reading the config imports no sampler (JAX); a test checks the two agree.
CLASSIFICATION_PRIORS = ("gp", "bnn")
_NUTS = {"type": "object", "additionalProperties": False,
         "properties": {"chains": _POSITIVE, "warmup": _POSITIVE, "samples": _POSITIVE,
                        "target_accept": {"type": "number", "exclusiveMinimum": 0,
                                          "exclusiveMaximum": 1},
                        "max_tree_depth": _POSITIVE}}


def classification_schema(methods: tuple[str, ...]) -> dict:
    """The section's JSON schema (every key optional; :func:`settings_of` fills defaults)."""
    names = lambda allowed: {"type": "array", "items": {"enum": list(allowed)},  # noqa: E731
                             "uniqueItems": True}
    return {
        "type": "object", "additionalProperties": False,
        "properties": {
            # the grid's datasets to build instances on (empty: none; each needs its GP prior)
            "datasets": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            "priors": {**names(CLASSIFICATION_PRIORS), "minItems": 1},
            "noise_modes": {**names(NOISE_MODES), "minItems": 1},
            "coverages": {**names(COVERAGES), "minItems": 1},
            "classes": {"type": "array", "items": {"type": "integer", "minimum": 2},
                        "uniqueItems": True, "minItems": 1},
            "seeds": _POSITIVE,
            "n_cap": {"anyOf": [{"type": "null"}, _POSITIVE]},
            # evaluation rows per instance: the dataset's pool, or this many of its rows
            "n_eval_cap": {"anyOf": [{"type": "null"}, _POSITIVE]},
            "temperature_strength": {"type": "number", "minimum": 0},
            "entropy_share": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "amplitude_draws": _POSITIVE,
            # the reference posterior's NUTS settings, per prior
            "posterior": {"type": "object", "additionalProperties": False,
                          "properties": {p: _NUTS for p in CLASSIFICATION_PRIORS}},
        },
    }


#: The defaults of every key (the paper configuration's values live in config.yaml).
DEFAULTS: Mapping = {
    "datasets": [], "priors": ["gp"], "noise_modes": list(NOISE_MODES),
    "coverages": list(COVERAGES), "classes": [2, 3], "seeds": 1, "n_cap": None,
    "n_eval_cap": None,
    "temperature_strength": 1.25, "entropy_share": 0.5, "amplitude_draws": 100,
    "posterior": {
        "gp": {"chains": 2, "warmup": 500, "samples": 500, "target_accept": 0.9,
               "max_tree_depth": 10},
        "bnn": {"chains": 4, "warmup": 500, "samples": 250, "target_accept": 0.9,
                "max_tree_depth": 10},
    },
}


def settings_of(section: Mapping) -> dict:
    """The section with every default filled in."""
    out = {**DEFAULTS, **section}
    given = section.get("posterior") or {}
    out["posterior"] = {prior: {**nuts, **(given.get(prior) or {})}
                        for prior, nuts in DEFAULTS["posterior"].items()}
    return out


def check_classification(section: Mapping) -> None:
    """What the schema cannot say: D = chains × samples must allow the checks (batch means of
    20 batches of at least 2 draws)."""
    settings = settings_of(section)
    for prior, post in settings["posterior"].items():
        if post["chains"] * post["samples"] < 40:
            raise ConfigError(f"config key 'families.classification.posterior.{prior}': chains "
                              f"× samples must be at least 40 draws, got {post['chains']} × "
                              f"{post['samples']}")


def summary_settings(section: Mapping) -> dict:
    """The summary's params: the whole section with its defaults (the page shows it; a change
    reruns the summary)."""
    return settings_of(section)
