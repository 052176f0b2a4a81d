"""The instance key, its random-number streams (docs/design.md, "Task instances") and the digest
of the settings that determine a sample store's numbers. Light: numpy only."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import astuple, dataclass

import numpy as np

from postrisk.core import seeding
from postrisk.core.io import digest

STREAMS = ("training", "truth", "noise", "posterior")


@dataclass(frozen=True)
class TaskKey:
    """(dataset, prior, noise, coverage, seed): one task instance."""

    dataset: str
    prior: str
    noise: str
    coverage: str
    seed: int

    @property
    def label(self) -> str:
        """``dataset/prior/noise/coverage/seed``, for progress messages (where an instance's
        files live is ``postrisk.grid.paths``)."""
        return "/".join(str(v) for v in astuple(self))

    def streams(self) -> dict[str, np.random.Generator]:
        """Independent generators for training inputs, ground truth, noise and the sampler,
        spawned from a ``SeedSequence`` of a stable hash of the key."""
        children = seeding.seed_sequence("instance", *astuple(self)).spawn(len(STREAMS))
        return {name: np.random.default_rng(child)
                for name, child in zip(STREAMS, children, strict=True)}

    @classmethod
    def parse(cls, label: str) -> TaskKey:
        """The key of a label ``dataset/prior/noise/coverage/seed`` (:attr:`label`)."""
        parts = str(label).strip("/").split("/")
        if len(parts) != 5 or not parts[4].isdigit():
            raise ValueError(f"{label!r} is not an instance key: expected "
                             "dataset/prior/noise/coverage/seed, e.g. "
                             "concrete/gp/smooth_monotone/balanced/0")
        return cls(*parts[:4], int(parts[4]))

    @classmethod
    def from_attrs(cls, attrs: dict) -> TaskKey:
        return cls(attrs["dataset"], attrs["prior"], attrs["noise"], attrs["coverage"],
                   int(attrs["seed"]))


def config_digest(cfg: Mapping, prior: str) -> str:
    """A short digest of the config sections that determine a sample store's numbers: the sizes
    and the family's prior settings (``<prior>_prior``), recorded in the store. A task store's
    own digest adds its posterior settings (:func:`postrisk.tasks.generate.build_task`)."""
    return digest({key: cfg.get(key) for key in ("sizes", f"{prior}_prior")})
