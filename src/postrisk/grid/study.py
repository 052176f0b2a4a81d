"""The studies' one registration protocol: what a study declares so that the planner, the
rules, the command line and the studies' page can run it without naming it.

A study is a package (the paper's four live under ``postrisk.studies``; another one is named by
the config key ``study_packages``) whose ``STUDY`` is a :class:`Study`: its config section's
schema and checks, its file templates, its *unit stages* (batchable like the fit stage: units,
jobs, one rule per output shape; :class:`UnitStage`), its *summary* (one job that writes the
study's tables and figures, named like the study) and its catalogue entries. Every name of a
study starts with its own: the config section ``studies.<name>``, the package, the summary rule
and ``results/studies/<name>/``, its unit stages ``<name>_<what>``.

The functions a declaration points to by ``module:function`` (the steps) are imported only when a
job runs them, so planning imports no sampler and no plotting library; the other callables
(units, schema, inputs) are light. Discovery is lazy (the first call to :func:`studies`), so this
module, at the bottom of the grid, imports no study: a study package imports the grid, never the
other way round.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from postrisk.grid.artefact import Artefact

#: The package whose sub-packages are the built-in studies.
BUILTIN_PACKAGE = "postrisk.studies"
#: The cost of a study's job when the configuration's ``cost_model`` has no entry for it.
DEFAULT_COST: Mapping[str, float] = {"threads": 1, "minutes": 1.0, "mem_mb": 2000}


class StudyError(ValueError):
    """A study package that cannot be registered (no ``STUDY``, a name taken, …)."""


@dataclass(frozen=True)
class UnitStage:
    """A batchable stage of a study: ``units(cfg, seed_policy)`` lists its units (frozen
    dataclasses with ``wildcards``, ``inputs``, ``outputs``, ``dataset``, ``cost_name``, as the
    benchmark's units, and optionally ``cost_rows``: the rows its cost entry scales with, where
    they are not its dataset's); ``group_by.<name>`` groups them into jobs; ``step``
    (``module:function``, called with the job's units, ``n_threads`` and ``accelerator``) runs
    one job."""

    name: str
    keys: tuple[str, ...]
    outputs: tuple[str, ...]  # the kinds (templates) each unit writes, in order
    units: Callable[[Mapping, Any], list]
    step: str
    fixed: tuple[str, ...] = ()  # keys every job must fix (one prior / method per process)
    #: where every unit's inputs have one shape: (kind, the unit's keys its path takes)
    inputs: tuple[tuple[str, tuple[str, ...]], ...] | None = None
    cost_by: str | None = None  # "prior" | "method": cost entries per prior or method
    #: "prior": the prior's registry entry says GPU or not; "stage": every unit can use one
    accelerator_by: str | None = None
    directories: bool = True  # outputs are folders (zarr stores)
    host_devices: bool = False  # JAX: one CPU device per thread, set before JAX is imported
    cost: Mapping[str, Any] = field(default_factory=lambda: dict(DEFAULT_COST))


@dataclass(frozen=True)
class Study:
    """One study (see the module docstring)."""

    name: str
    title: str
    #: ``schema(methods)``: the JSON schema of config ``studies.<name>``
    schema: Callable[[tuple[str, ...]], dict]
    #: ``module:function`` called with (inputs: {name: paths}, out: {catalogue id: path},
    #: settings, scale): writes the study's tables and figures
    summary: str
    catalogue: tuple[Artefact, ...]
    stages: tuple[UnitStage, ...] = ()
    order: int = 100  # place on the studies' page and in the plan
    #: what a schema cannot say about the section (raise ConfigError)
    check: Callable[[Mapping], None] | None = None
    #: ``inputs(planner)``: the summary's inputs, {name: paths}
    inputs: Callable[[Any], Mapping[str, Sequence[str]]] | None = None
    #: ``settings(section)``: the summary's ``settings`` (its params: a change reruns it) from
    #: the study's config section (``studies.<name>``, :func:`study_settings`)
    settings: Callable[[Mapping], Mapping] | None = None
    #: a study without unit stages: ``runs(section)``, whether ``all`` and ``studies`` plan it
    runs: Callable[[Mapping], bool] | None = None
    #: the summary's cost is per unit of the first unit stage, scaled by its dataset's rows
    summary_cost_by_dataset: bool = False
    summary_cost: Mapping[str, Any] = field(default_factory=lambda: dict(DEFAULT_COST))
    #: file kinds of the study's units (:func:`postrisk.grid.paths.path`): kind → template
    templates: Mapping[str, str] = field(default_factory=dict)
    #: ``datasets(cfg)``: covariate stores the study needs beyond the grid's
    datasets: Callable[[Mapping], list[str]] | None = None
    #: ``instances(cfg)``: task keys of instances the study alone uses (their covariates,
    #: prior and sample store are built as the benchmark's)
    instances: Callable[[Mapping], list] | None = None
    #: ``prior_fits(cfg)``: (dataset, prior) pairs whose prior fit the study's units read,
    #: beyond the grid's (the prior stage fits them as the benchmark's)
    prior_fits: Callable[[Mapping], list[tuple[str, str]]] | None = None
    #: stage names this study used before (old → new): config keys under ``cost_model``,
    #: ``group_by`` and ``budget_s`` keep working for one release, with a deprecation message
    renamed: Mapping[str, str] = field(default_factory=dict)
    #: the config section and results folder it lives under: ``studies`` (a study), or
    #: ``families`` (the pipeline of a task family, :class:`TaskFamily`)
    section: str = "studies"

    @property
    def stage_names(self) -> tuple[str, ...]:
        """Every stage of the study in order: its unit stages, then its summary."""
        return (*(s.name for s in self.stages), self.name)


_REGISTERED: dict[str, Study] = {}
_SOURCES: dict[str, str] = {}
_DISCOVERED = False


def register(study: Study, source: str = "") -> Study:
    """Register ``study`` (``source``: the module it came from; registering the same module's
    study again is a no-op). A name taken by another study, or a unit stage not named after
    its study, is an error."""
    if not isinstance(study, Study):
        raise StudyError(f"{source or study!r}: STUDY must be a postrisk.grid.study.Study")
    known = _REGISTERED.get(study.name)
    if known is not None and _SOURCES.get(study.name) != source:
        raise StudyError(f"study {study.name!r} from {source} is already registered from "
                         f"{_SOURCES.get(study.name)}")
    for stage in study.stages:
        if not stage.name.startswith(study.name + "_"):
            raise StudyError(f"study {study.name!r}: its unit stage {stage.name!r} must be "
                             f"named {study.name}_<what> (one name per study everywhere)")
    ids = [a.id for a in study.catalogue]
    wrong = [a.id for a in study.catalogue if a.stage != study.name]
    if wrong:
        raise StudyError(f"study {study.name!r}: catalogue entries {wrong} must name the "
                         f"study as their stage")
    if len(set(ids)) != len(ids):
        raise StudyError(f"study {study.name!r}: two catalogue entries share an id")
    _REGISTERED[study.name] = study
    _SOURCES[study.name] = source
    return study


def unregister(name: str) -> None:
    """Forget a registered study (tests that register one of their own)."""
    _REGISTERED.pop(name, None)
    _SOURCES.pop(name, None)


def _declaration(module: str, attribute: str, what: str) -> Any:
    """``module``'s ``attribute`` (its ``STUDY`` or ``FAMILY``), imported now; a clear error
    where the module does not import or declares none."""
    try:
        package = importlib.import_module(module)
    except ImportError as err:
        raise StudyError(f"{what} {module!r} does not import: {err}") from None
    declared = getattr(package, attribute, None)
    if declared is None:
        raise StudyError(f"{what} {module!r} declares no {attribute}")
    return declared


def load_study_package(module: str) -> Study:
    """Import ``module`` and register its ``STUDY``."""
    return register(_declaration(module, "STUDY", "study package"), module)


def load_study_packages(modules: Iterable[str]) -> None:
    """Register the studies of ``modules`` (config ``study_packages``) besides the built-in
    ones."""
    _discover()
    for module in modules:
        load_study_package(module)


def _discover() -> None:
    global _DISCOVERED
    if _DISCOVERED:
        return
    _DISCOVERED = True
    package = importlib.import_module(BUILTIN_PACKAGE)
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if info.ispkg:
            load_study_package(f"{BUILTIN_PACKAGE}.{info.name}")
    package = importlib.import_module(FAMILY_PACKAGE)
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        load_family_module(f"{FAMILY_PACKAGE}.{info.name}")


def studies() -> tuple[Study, ...]:
    """Every registered study (and task family pipeline), in page order."""
    _discover()
    return tuple(sorted(_REGISTERED.values(), key=lambda s: (s.order, s.name)))


def study(name: str) -> Study:
    """The registered study ``name``; a clear error naming the known ones otherwise."""
    _discover()
    try:
        return _REGISTERED[name]
    except KeyError:
        raise KeyError(f"unknown study {name!r}; known: {', '.join(_REGISTERED)}") from None


def unit_stages() -> dict[str, UnitStage]:
    """Every study's unit stages by name, study by study."""
    return {s.name: s for st in studies() for s in st.stages}


def summary_stages() -> tuple[str, ...]:
    """Every study's summary stage (the study's name), in page order."""
    return tuple(s.name for s in studies())


def renamed_stages() -> dict[str, str]:
    """Old stage names of the studies → their names now."""
    return {old: new for s in studies() for old, new in s.renamed.items()}


def resolve(reference: str) -> Callable:
    """The function a ``module:function`` reference names (imported now)."""
    module, _, name = reference.partition(":")
    return getattr(importlib.import_module(module), name)


def study_settings(cfg: Mapping, study: str) -> Mapping:
    """Config ``<section>.<study>`` (``studies.<study>``, or ``families.<family>`` for a task
    family's pipeline; empty where the configuration has none)."""
    _discover()
    section = _REGISTERED[study].section if study in _REGISTERED else "studies"
    return (cfg.get(section) or {}).get(study) or {}


# ------------------------------------------------------------------------------ task families


@dataclass(frozen=True)
class TaskFamily:
    """A family of task instances: what its stores hold and how they are built and opened.

    ``task`` (``module:attribute``) is the class whose ``load(path)`` opens one of the family's
    stores (:func:`postrisk.release.load.load_task` dispatches on the store attribute
    ``family``; a store without it is a regression store). ``pipeline`` is the study-like
    declaration of the stages that build the family's instances and its checks (config
    ``families.<name>``, results under ``families/<name>/``), registered beside the studies so
    that the planner, the rules and the studies' page run it without naming it; None for the
    regression family, whose stages are the benchmark's own (sample, posterior, ...).
    Built-in families are the modules of ``postrisk.families``; config ``family_packages``
    names others (docs/contributing.md, "Adding a task family")."""

    name: str
    title: str
    task: str
    pipeline: Study | None = None


_FAMILIES: dict[str, TaskFamily] = {}
#: The package whose modules declare the built-in task families (``FAMILY``).
FAMILY_PACKAGE = "postrisk.families"


def register_family(family: TaskFamily, source: str = "") -> TaskFamily:
    """Register ``family`` and its pipeline (a study-like declaration whose section is
    ``families``)."""
    if not isinstance(family, TaskFamily):
        raise StudyError(f"{source or family!r}: FAMILY must be a postrisk.grid.study.TaskFamily")
    known = _FAMILIES.get(family.name)
    if known is not None and known != family:
        raise StudyError(f"task family {family.name!r} from {source} is already registered")
    if family.pipeline is not None:
        if family.pipeline.name != family.name or family.pipeline.section != "families":
            raise StudyError(f"task family {family.name!r}: its pipeline must be named "
                             f"{family.name!r} with section 'families'")
        register(family.pipeline, source)
    _FAMILIES[family.name] = family
    return family


def unregister_family(name: str) -> None:
    """Forget a registered family and its pipeline (tests that register one of their own)."""
    _FAMILIES.pop(name, None)
    unregister(name)


def load_family_module(module: str) -> TaskFamily:
    """Import ``module`` and register its ``FAMILY``."""
    return register_family(_declaration(module, "FAMILY", "task family module"), module)


def load_family_modules(modules: Iterable[str]) -> None:
    """Register the families of ``modules`` (config ``family_packages``) besides the built-in
    ones."""
    _discover()
    for module in modules:
        load_family_module(module)


def families() -> tuple[TaskFamily, ...]:
    """Every registered task family, regression first, then by name."""
    _discover()
    return tuple(sorted(_FAMILIES.values(), key=lambda f: (f.name != "regression", f.name)))


def family(name: str) -> TaskFamily:
    """The registered family ``name``; a clear error naming the known ones otherwise."""
    _discover()
    try:
        return _FAMILIES[name]
    except KeyError:
        raise KeyError(f"unknown task family {name!r}; known: {', '.join(_FAMILIES)}") from None
