"""The grid of the experiment, its configuration and its planner.

Modules, from the bottom up (each imports only those below it; ``make lint`` checks it):

* :mod:`~postrisk.grid.study` — the studies' registration protocol (the studies themselves are
  packages above the grid, ``postrisk.studies``, found when first asked for);
* :mod:`~postrisk.grid.vocabulary` — the names each axis may take, read from the registries;
* :mod:`~postrisk.grid.paths` — where every store, log and benchmark lives;
* :mod:`~postrisk.grid.artefacts` — the catalogue of every table, figure, page and release file;
* :mod:`~postrisk.grid.stages` — the stages, the keys of their units, how units group;
* :mod:`~postrisk.grid.config_methods` — the configuration's method names: outside methods
  resolved, entries for methods that ``methods`` does not list set aside;
* :mod:`~postrisk.grid.config` — the configuration's schema, validation and merging;
* :mod:`~postrisk.grid.conditions` — conditions, what is implemented, fitted and tuned;
* :mod:`~postrisk.grid.seeds` — the seed policy: which seeds are built and may be used;
* :mod:`~postrisk.grid.units` — the benchmark's units of work (frozen dataclasses), and every
  stage's units at once (the studies' from their registrations);
* :mod:`~postrisk.grid.cost` — what a job asks of a cluster (cost model, accelerators);
* :mod:`~postrisk.grid.jobs` — units grouped into jobs, and the Snakemake rules that run them;
* :mod:`~postrisk.grid.planner` — :class:`Planner`: all of the above for one config, once;
* :mod:`~postrisk.grid.plan` — the plan as a table (requests and estimates, on GPUs and on a
  CPU-only cluster), where its outputs are, and the guard against a local full run.

Which of the built seeds are *valid* (the BNN R̂ rule) is decided at run time by
``postrisk.tasks.validity``. The names below are importable from ``postrisk.grid`` directly.
"""

from postrisk.grid.artefacts import CATALOGUE, Artefact, artefact, figure_files, stage_artefacts
from postrisk.grid.conditions import (
    Condition,
    condition_methods,
    conditions,
    covariate_datasets,
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
    default_config_path,
    load_config,
    read_config,
    read_layers,
    validate_config,
)
from postrisk.grid.cost import Resources, env_family
from postrisk.grid.jobs import Job, StageRule, rule_name
from postrisk.grid.paths import RESULTS, TEMPLATES, benchmark_path, log_path, path
from postrisk.grid.plan import (
    CPU_SCENARIO,
    GPU_SCENARIO,
    RulePlan,
    guard_message,
    n_instances,
    output_lines,
    plan,
    plan_report,
    plan_table,
    plan_totals,
    scenarios,
    study_output_lines,
)
from postrisk.grid.planner import Planner
from postrisk.grid.seeds import (
    SeedPolicy,
    assumed_selections,
    condition_seeds,
    known_selections,
    task_seeds,
)
from postrisk.grid.stages import stages, unit_keys
from postrisk.grid.study import Study, UnitStage, studies
from postrisk.grid.units import (
    CovariatesUnit,
    DisentanglementUnit,
    FitUnit,
    PosteriorUnit,
    PriorUnit,
    SampleUnit,
    ScoreUnit,
    ValidSeedsUnit,
    covariates_unit,
    disentanglement_units,
    unit_paths,
)
from postrisk.grid.vocabulary import COVERAGES, METHODS, NOISE_MODES, PRIORS

__all__ = [
    "Artefact", "CATALOGUE", "COVERAGES", "CPU_SCENARIO", "GPU_SCENARIO", "Condition",
    "ConfigError", "CovariatesUnit", "DisentanglementUnit", "FitUnit", "Job", "METHODS",
    "NOISE_MODES", "PRIORS", "Planner", "PosteriorUnit", "PriorUnit", "RESULTS", "Resources",
    "RulePlan", "SampleUnit", "ScoreUnit", "SeedPolicy", "StageRule", "TEMPLATES",
    "Study", "UnitStage", "ValidSeedsUnit", "artefact", "assumed_selections", "benchmark_path",
    "condition_methods", "condition_seeds", "conditions", "config_schema", "covariate_datasets",
    "covariates_unit", "deep_merge", "default_config_path", "disentanglement_units", "env_family",
    "figure_files", "fits_method", "guard_message", "implemented_conditions",
    "implemented_methods", "implemented_priors", "is_tuned", "known_selections", "load_config",
    "log_path", "n_instances", "output_lines", "path", "plan", "plan_report", "plan_table",
    "plan_totals", "read_config", "read_layers", "rule_name", "scenarios", "stage_artefacts",
    "stages", "studies",
    "study_output_lines", "task_seeds", "training_size", "tuned_methods", "unit_keys", "unit_paths",
    "validate_config",
]
