"""The key of a classification instance: a regression condition, the number of classes K and a
seed, with its own random-number streams (a classification instance never shares a stream, or
a path, with a regression one)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import astuple, dataclass

import numpy as np

from postrisk.core import seeding

#: The key's columns, in path order.
CLASSIFICATION_KEY_COLUMNS = ("dataset", "prior", "noise", "coverage", "classes", "seed")
STREAMS = ("training", "truth", "labels", "posterior", "amplitude")


@dataclass(frozen=True)
class ClassificationKey:
    """One classification instance."""

    dataset: str
    prior: str
    noise: str
    coverage: str
    classes: int
    seed: int

    def __post_init__(self) -> None:
        if int(self.classes) < 2:
            raise ValueError(f"a classification task needs at least 2 classes, got "
                             f"{self.classes}")

    @property
    def label(self) -> str:
        """``dataset/prior/noise/coverage/k<K>/seed``, for progress messages."""
        d, p, n, c, k, s = astuple(self)
        return f"{d}/{p}/{n}/{c}/k{k}/{s}"

    def streams(self) -> dict[str, np.random.Generator]:
        """Independent generators for the training inputs, the truth, the labels, the sampler
        and the instance's share of nothing else, spawned from a ``SeedSequence`` of a stable
        hash of ("classification", key)."""
        children = seeding.seed_sequence("classification", *astuple(self)).spawn(len(STREAMS))
        return {name: np.random.default_rng(child)
                for name, child in zip(STREAMS, children, strict=True)}

    @classmethod
    def from_attrs(cls, attrs: Mapping) -> ClassificationKey:
        return cls(*(attrs[k] for k in CLASSIFICATION_KEY_COLUMNS[:4]), int(attrs["classes"]),
                   int(attrs["seed"]))

    def as_dict(self) -> dict[str, object]:
        return dict(zip(CLASSIFICATION_KEY_COLUMNS, astuple(self), strict=True))


def amplitude_rng(dataset: str, prior: str, classes: int) -> np.random.Generator:
    """The prior draws that set the amplitude of (dataset, prior, K): one stream shared by
    every instance of theirs, so they share one amplitude."""
    return seeding.rng("classification_amplitude", dataset, prior, int(classes))
