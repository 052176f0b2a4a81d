"""The configuration's JSON schema: every key a configuration may hold and the values each
takes (the names from the registries, :mod:`postrisk.grid.vocabulary`; each study's section
from its registration, :mod:`postrisk.grid.study`). :func:`postrisk.grid.config.validate_config`
checks a configuration against it and turns the first error into one message.
"""

from __future__ import annotations

from postrisk.covariates.registry import registry, task_datasets
from postrisk.grid.stages import BENCHMARK_STAGES, STUDIES_PAGE, cost_by
from postrisk.grid.stages import stages as all_stages
from postrisk.grid.stages import unit_keys as all_unit_keys
from postrisk.grid.study import studies
from postrisk.grid.vocabulary import COVERAGES, METHODS, NOISE_MODES, PRIORS


def names_schema(values) -> dict:
    """A non-empty list of distinct names from ``values`` (a config key's schema)."""
    return {"type": "array", "items": {"enum": list(values)}, "minItems": 1, "uniqueItems": True}


def positive_int_schema() -> dict:
    """A positive integer (a config key's schema)."""
    return {"type": "integer", "minimum": 1}


def _narrowing(priors: bool = True) -> dict:
    """A narrowing of the grid's axes (``prior_grid``'s per prior, without ``priors``;
    ``method_grid``'s per method; ``tuning.grid``): {axis: allowed values}."""
    axes = {"datasets": names_schema(task_datasets()), "priors": names_schema(PRIORS),
            "noise_modes": names_schema(NOISE_MODES), "coverages": names_schema(COVERAGES)}
    if not priors:
        del axes["priors"]
    return {"type": "object", "additionalProperties": False, "properties": axes}


def _cost_entry() -> dict:
    number = {"type": "number", "minimum": 0}
    values = {"threads": positive_int_schema(), "minutes": number, "minutes_per_size": number,
              "mem_mb": number, "mem_mb_per_size": number, "power": number,
              "mem_power": number}
    # on a GPU: any of the values, laid over the entry, and where they come from (false: guesses)
    gpu = {"type": "object", "additionalProperties": False, "properties": {
        **values, "measured": {"anyOf": [{"type": "string", "minLength": 1}, {"const": False}]}}}
    return {"type": "object", "additionalProperties": False,
            "required": ["threads", "minutes", "mem_mb"], "properties": {**values, "gpu": gpu}}


def _cost_model_schema(methods: tuple[str, ...] = METHODS) -> dict:
    """``cost_model``: global settings, then per stage one entry, or (stages whose cost depends
    on the prior or the method) one entry per prior/method with a ``default``."""
    by_name = {"type": "object", "additionalProperties": _cost_entry(),
               "propertyNames": {"enum": ["default", *PRIORS, *methods]},
               "required": ["default"]}
    per = cost_by()
    return {
        "type": "object", "additionalProperties": False,
        # a study's stages may go without: their declared cost applies (postrisk.planning.cost)
        "required": ["rows", "margin", "min_runtime", *BENCHMARK_STAGES, STUDIES_PAGE],
        "properties": {
            "rows": positive_int_schema(), "margin": {"type": "number", "minimum": 1},
            "min_runtime": positive_int_schema(), "job_minutes": {"type": "number", "minimum": 0},
            **{stage: ({"anyOf": [_cost_entry(), by_name]} if stage in per
                       else _cost_entry()) for stage in all_stages()},
        },
    }


def studies_schema(methods: tuple[str, ...], section: str = "studies") -> dict:
    """Config ``studies`` (or ``families``): one optional section per registered study (task
    family pipeline), each its own schema."""
    return {"type": "object", "additionalProperties": False,
            "properties": {s.name: s.schema(methods) for s in studies()
                           if s.section == section}}


def release_schema() -> dict:
    """Config ``release``: the released suite's packing limits and where downloads come from
    and go (a section that stands alone: :data:`SECTION_SCHEMAS`)."""
    return {
        "type": "object", "additionalProperties": False,
        "required": ["base_url", "download_dir", "max_bytes", "max_files", "retries",
                     "timeout_s"],
        "properties": {
            "base_url": {"anyOf": [{"type": "null"},
                                   {"type": "string", "pattern": "^https?://"}]},
            "download_dir": {"type": "string", "minLength": 1},
            "datasets": {"anyOf": [{"type": "null"}, names_schema(task_datasets())]},
            "priors": {"anyOf": [{"type": "null"}, names_schema(PRIORS)]},
            "max_bytes": positive_int_schema(),
            "max_files": positive_int_schema(),
            "retries": positive_int_schema(),
            "timeout_s": {"type": "number", "exclusiveMinimum": 0},
        },
    }


#: The sections whose schema stands alone (no study, no method list): one of them is read and
#: checked without validating the rest (:func:`postrisk.grid.config.read_section`).
SECTION_SCHEMAS = {"release": release_schema}


def config_schema(methods: tuple[str, ...] = METHODS) -> dict:
    """The JSON schema of a workflow configuration (config.yaml merged with a preset);
    ``methods``: the method names it may use (the paper's and the outside methods')."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "additionalProperties": False,
        "required": ["scale", "datasets", "priors", "noise_modes", "coverages", "seeds", "sizes",
                     "noise_model", "covariates", "local_guard", "cost_model", "gp_prior",
                     "hbart_prior", "bnn_prior", "posterior", "accelerator"],
        "properties": {
            "scale": {"enum": ["paper", "paper_slice", "demo", "smoke"]},
            "datasets": names_schema(task_datasets()),
            "ood_datasets": {**names_schema(registry()), "minItems": 0},
            "priors": names_schema(PRIORS),
            "noise_modes": names_schema(NOISE_MODES),
            "coverages": names_schema(COVERAGES),
            "methods": {**names_schema(methods), "minItems": 0},
            # outside methods (module:Class), resolved: name -> location and search space
            "outside_methods": {
                "type": "object",
                "additionalProperties": {
                    "type": "object", "additionalProperties": False, "required": ["location"],
                    "properties": {"location": {"type": "string"},
                                   "search_space": {"anyOf": [{"type": "null"},
                                                              {"type": "object"}]}}},
            },
            "method_search_spaces": {
                "type": "object", "additionalProperties": {"type": "object"},
            },
            "seeds": {
                "type": "object", "additionalProperties": False,
                "required": ["valid_per_cell", "candidates"],
                "properties": {"valid_per_cell": positive_int_schema(),
                               "candidates": positive_int_schema(),
                               "per_prior": {"type": "object",
                                             "additionalProperties": positive_int_schema()}},
            },
            "sizes": {
                "type": "object", "additionalProperties": False,
                "required": ["n_eval_cap"],
                "properties": {
                    "n_eval_cap": positive_int_schema(),
                    "n_cap": {"anyOf": [{"type": "null"}, positive_int_schema()]},
                },
            },
            "noise_model": {
                "type": "object", "additionalProperties": False, "required": ["strength"],
                "properties": {"strength": {"type": "number", "minimum": 0}},
            },
            "covariates": {
                "type": "object", "additionalProperties": False,
                "properties": {
                    "prefer_offline_package": {"type": "boolean"},
                    "raw_dir": {"type": "string", "minLength": 1},
                    "fetch_retries": positive_int_schema(),
                    "fetch_timeout_s": {"type": "number", "exclusiveMinimum": 0},
                },
            },
            "confirm_full_run": {"type": "boolean"},
            "local_guard": {
                "type": "object", "additionalProperties": False,
                "required": ["max_instances"],
                "properties": {"max_instances": positive_int_schema()},
            },
            "cost_model": _cost_model_schema(methods),
            "gp_prior": {
                "type": "object", "additionalProperties": False,
                "required": ["fit_rows", "fit_max_iter", "fit_restarts", "scale_draws"],
                "properties": {"fit_rows": positive_int_schema(),
                               "fit_max_iter": positive_int_schema(),
                               "fit_restarts": {"type": "integer", "minimum": 0},
                               "scale_draws": positive_int_schema()},
            },
            "hbart_prior": {
                "type": "object", "additionalProperties": False,
                "required": ["num_trees", "max_depth", "base", "power", "n_cutpoints",
                             "scale_draws"],
                "properties": {"num_trees": positive_int_schema(),
                               "max_depth": {"type": "integer", "minimum": 2, "maximum": 10},
                               "base": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
                               "power": {"type": "number", "minimum": 0},
                               "n_cutpoints": {"type": "integer", "minimum": 1, "maximum": 255},
                               "scale_draws": positive_int_schema()},
            },
            "bnn_prior": {
                "type": "object", "additionalProperties": False,
                "required": ["hidden", "reference_inputs", "scale_draws"],
                "properties": {"hidden": positive_int_schema(),
                               "reference_inputs": positive_int_schema(),
                               "scale_draws": positive_int_schema()},
            },
            "posterior": {
                "type": "object", "additionalProperties": False,
                "required": ["gp", "hbart", "bnn"],
                "properties": {
                    "gp": {"type": "object", "additionalProperties": False, "required": ["draws"],
                           "properties": {"draws": {"type": "integer", "minimum": 40}}},
                    "hbart": {
                        "type": "object", "additionalProperties": False,
                        "required": ["chains", "warmup", "draws_per_chain", "thin", "tempering"],
                        "properties": {
                            "chains": {"type": "integer", "minimum": 2},
                            "warmup": positive_int_schema(),
                            "draws_per_chain": {"type": "integer", "minimum": 2},
                            "thin": positive_int_schema(),
                            "tempering": {
                                "type": "object", "additionalProperties": False,
                                "required": ["t0", "stages", "share"],
                                "properties": {
                                    "t0": {"type": "number", "minimum": 1},
                                    "stages": positive_int_schema(),
                                    "share": {"type": "number", "minimum": 0, "maximum": 1}},
                            },
                        },
                    },
                    "bnn": {
                        "type": "object", "additionalProperties": False,
                        "required": ["chains", "warmup", "samples", "target_accept",
                                     "max_tree_depth"],
                        "properties": {
                            "chains": {"type": "integer", "minimum": 2},
                            "warmup": positive_int_schema(), "samples": {"type": "integer",
                                                                   "minimum": 4},
                            "target_accept": {"type": "number", "exclusiveMinimum": 0,
                                              "exclusiveMaximum": 1},
                            "max_tree_depth": positive_int_schema(),
                            "chain_method": {"enum": ["parallel", "vectorized"]},
                        },
                    },
                },
            },
            "prior_grid": {
                "type": "object", "additionalProperties": False,
                "properties": {prior: _narrowing(priors=False) for prior in PRIORS},
            },
            "method_grid": {
                "type": "object", "propertyNames": {"enum": list(methods)},
                "additionalProperties": _narrowing(),
            },
            "method_settings": {
                "type": "object", "propertyNames": {"enum": list(methods)},
                "additionalProperties": {"type": "object"},
            },
            "group_by": {
                "type": "object", "additionalProperties": False,
                "properties": {stage: {"type": "array", "items": {"enum": list(keys)},
                                       "uniqueItems": True}
                               for stage, keys in all_unit_keys().items()},
            },
            "accelerator": {
                "type": "object", "additionalProperties": False,
                "required": ["use", "allow_cpu_fallback"],
                "properties": {"use": {"type": "boolean"},
                               "allow_cpu_fallback": {"type": "boolean"}},
            },
            "tuning": {
                "type": "object", "additionalProperties": False,
                "required": ["trials", "startup_trials", "validation_fraction"],
                "properties": {
                    "trials": positive_int_schema(),
                    "startup_trials": positive_int_schema(),
                    "validation_fraction": {"type": "number", "exclusiveMinimum": 0,
                                            "exclusiveMaximum": 1},
                    "batch_size": positive_int_schema(),
                    "early_stopping": {
                        "type": "object", "additionalProperties": False,
                        "required": ["rule"],
                        "properties": {
                            "rule": {"enum": ["none", "successive_halving", "median"]},
                            "reduction_factor": {"type": "integer", "minimum": 2},
                            "rungs": {"type": "integer", "minimum": 1},
                            "methods": {"anyOf": [{"type": "null"},
                                                  {**names_schema(methods),
                                                   "minItems": 0}]}}},
                    "methods": {"anyOf": [{"type": "null"},
                                          {**names_schema(methods), "minItems": 0}]},
                    "grid": _narrowing(),
                },
            },
            "disentanglement": {
                "type": "object", "additionalProperties": False,
                "required": ["grid", "seeds", "data_fractions", "label_noise_fractions",
                             "runs", "correlation", "definition"],
                "properties": {
                    # null or absent: every configured method; a list narrows them
                    "methods": {"anyOf": [{"type": "null"},
                                          {**names_schema(methods), "minItems": 0}]},
                    "grid": _narrowing(),
                    "seeds": {"type": "array", "items": {"type": "integer", "minimum": 0},
                              "minItems": 1, "uniqueItems": True},
                    "data_fractions": {"type": "array", "minItems": 3, "uniqueItems": True,
                                       "items": {"type": "number", "exclusiveMinimum": 0,
                                                 "maximum": 1}},
                    "label_noise_fractions": {"type": "array", "minItems": 3,
                                              "uniqueItems": True,
                                              "items": {"type": "number", "minimum": 0,
                                                        "maximum": 1}},
                    "runs": positive_int_schema(),
                    "correlation": {"enum": ["pearson", "spearman"]},
                    # the headline DE: correlation with the manipulated uncertainty per level
                    # ("level") or with the negated test score per run ("score")
                    "definition": {"enum": ["level", "score"], "default": "level"},
                },
            },
            # the studies (docs/design.md, "Studies"), each a package of its own
            # (postrisk.studies.<name>; others named by study_packages)
            "studies": studies_schema(methods),
            "study_packages": {"type": "array", "items": {"type": "string", "minLength": 1},
                               "uniqueItems": True},
            # the task families beside regression (docs/design.md, "Task families"), each a
            # module of postrisk.families; others named by family_packages
            "families": studies_schema(methods, "families"),
            "family_packages": {"type": "array", "items": {"type": "string", "minLength": 1},
                                "uniqueItems": True},
            "release": release_schema(),
            "budget_s": {
                "type": "object",
                "additionalProperties": {"type": "number", "exclusiveMinimum": 0},
            },
            # the wall clock a scale preset allows its own stages (benchmarks/demo_budget.py;
            # 15 minutes where a preset names none)
            "budget_wall_s": {"type": "number", "exclusiveMinimum": 0},
        },
    }
