"""Lazy package exports (`from package import name` imports the defining module on first use)
and registry entries (a thing registered by its location, imported on first use)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Entry:
    """A registry entry: where the registered class lives (``"module:attribute"``, imported on
    first use, so reading a registry imports no numerical stack) and what its heavy jobs need:
    ``accelerator`` — they want a GPU (on the cluster: ``resources: gpu`` and the GPU job
    environment)."""

    location: str
    accelerator: bool = False

    @property
    def module(self) -> str:
        return self.location.split(":")[0]

    def load(self) -> Any:
        module, attr = self.location.split(":")
        return getattr(importlib.import_module(module), attr)


def lazy_exports(package: str, exports: dict[str, str]) -> Callable[[str], object]:
    """A module ``__getattr__`` resolving ``exports`` (name -> defining module) on demand."""

    def __getattr__(name: str) -> object:
        if name in exports:
            return getattr(importlib.import_module(exports[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
