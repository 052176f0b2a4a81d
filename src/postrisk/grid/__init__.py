"""The grid of the experiment and its configuration.

* :mod:`~postrisk.grid.vocabulary` — the names each axis may take, read from the registries;
* :mod:`~postrisk.grid.config` — the configuration's schema, validation and merging;
* :mod:`~postrisk.grid.conditions` — conditions, what is implemented and what is tuned;
* :mod:`~postrisk.grid.seeds` — the one seed policy (built, valid and used seeds);
* :mod:`~postrisk.grid.paths` — where every output lives;
* :mod:`~postrisk.grid.jobs` — units, jobs and rules of each stage, resources, accelerators;
* :mod:`~postrisk.grid.plan` — what the jobs request per rule, the local guard, settings digests.

The names below are importable from ``postrisk.grid`` directly.
"""

from postrisk.grid.conditions import (
    Condition,
    condition_methods,
    conditions,
    covariate_datasets,
    disentanglement_units,
    fits_method,
    implemented_conditions,
    implemented_methods,
    implemented_priors,
    is_tuned,
    training_size,
    tuned_methods,
)
from postrisk.grid.config import (
    ConfigError,
    config_schema,
    deep_merge,
    load_config,
    validate_config,
)
from postrisk.grid.jobs import (
    Job,
    Resources,
    StageRule,
    env_family,
    stage_rules,
    workflow_rules,
)
from postrisk.grid.paths import EVALUATION_TABLES, REPORT_FIGURES, RESULTS, TEMPLATES, path
from postrisk.grid.plan import (
    RulePlan,
    config_digest,
    guard_message,
    n_instances,
    plan,
    plan_report,
    plan_table,
)
from postrisk.grid.seeds import (
    RHAT_STRICT,
    RHAT_THRESHOLD,
    SeedPolicy,
    TooFewValidSeeds,
    condition_seeds,
    task_seeds,
    usable_seeds,
    valid_seeds,
)
from postrisk.grid.vocabulary import COVERAGES, METHODS, NOISE_MODES, PRIORS

__all__ = [
    "EVALUATION_TABLES",
    "REPORT_FIGURES",
    "disentanglement_units",
    "COVERAGES", "Condition", "ConfigError", "Job", "METHODS", "NOISE_MODES", "PRIORS",
    "RESULTS", "RHAT_STRICT", "RHAT_THRESHOLD", "Resources", "RulePlan", "SeedPolicy",
    "StageRule", "TEMPLATES", "TooFewValidSeeds", "env_family", "plan_table", "stage_rules",
    "workflow_rules",
    "condition_methods", "condition_seeds", "conditions", "config_digest", "config_schema",
    "covariate_datasets",
    "deep_merge", "fits_method", "guard_message", "implemented_conditions", "implemented_methods",
    "implemented_priors", "is_tuned", "load_config", "n_instances", "path", "plan", "plan_report",
    "task_seeds", "training_size", "tuned_methods", "usable_seeds", "valid_seeds",
    "validate_config",
]
