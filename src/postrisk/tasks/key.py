"""The instance key, its random-number streams (docs/design.md, "Task instances") and the digest
of the settings that determine a sample store's numbers. Light: numpy only."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import astuple, dataclass
from typing import NamedTuple

import numpy as np

from postrisk.core import seeding
from postrisk.core.io import digest

STREAMS = ("training", "truth", "noise", "posterior")


class Condition(NamedTuple):
    """One condition of the grid: (dataset, prior, noise, coverage). A task instance is a
    condition plus a seed (:class:`TaskKey`)."""

    dataset: str
    prior: str
    noise: str
    coverage: str

    @property
    def cell(self) -> tuple[str, str, str]:
        """(dataset, noise, coverage): the instances of the three priors that share seeds."""
        return self.dataset, self.noise, self.coverage


#: The instance-key columns in their order — a condition's, then the seed: the one definition
#: every store attribute, score table, path template and filter uses.
CONDITION_COLUMNS: tuple[str, ...] = Condition._fields
KEY_COLUMNS: tuple[str, ...] = (*CONDITION_COLUMNS, "seed")


@dataclass(frozen=True)
class TaskKey:
    """One task instance: a condition plus a seed (fields :data:`KEY_COLUMNS`)."""

    dataset: str
    prior: str
    noise: str
    coverage: str
    seed: int

    @classmethod
    def of(cls, condition: Condition | tuple, seed: int) -> TaskKey:
        """The instance ``seed`` of ``condition``."""
        return cls(*condition, int(seed))

    @property
    def condition(self) -> Condition:
        return Condition(self.dataset, self.prior, self.noise, self.coverage)

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
    def from_attrs(cls, attrs: Mapping) -> TaskKey:
        """The key of a store's attributes (or any mapping with the :data:`KEY_COLUMNS`)."""
        return cls.of([attrs[k] for k in CONDITION_COLUMNS], attrs["seed"])

    def as_dict(self) -> dict[str, object]:
        """``{column: value}`` over :data:`KEY_COLUMNS`."""
        return dict(zip(KEY_COLUMNS, astuple(self), strict=True))


def config_digest(cfg: Mapping, prior: str) -> str:
    """A short digest of the config sections that determine a sample store's numbers: the sizes,
    the noise model's strength (``noise_model``) and the prior's prior settings
    (``<prior>_prior``), recorded in the store. A task store's own digest adds its posterior
    settings (:func:`postrisk.tasks.generate.build_task`)."""
    return digest({key: cfg.get(key) for key in ("sizes", "noise_model", f"{prior}_prior")})
