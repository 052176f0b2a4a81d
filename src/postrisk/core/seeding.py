"""Random numbers from stable keys: the same key gives bit-identical streams."""

from __future__ import annotations

import hashlib

import numpy as np


def stable_hash(*parts: object) -> int:
    """A 128-bit integer from the parts' text, identical across processes and machines."""
    text = "\x1f".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:16], "little")


def seed_sequence(*parts: object) -> np.random.SeedSequence:
    """A ``SeedSequence`` for a key such as ("pools", dataset) or (dataset, prior, ..., seed)."""
    return np.random.SeedSequence(stable_hash(*parts))


def rng(*parts: object) -> np.random.Generator:
    return np.random.default_rng(seed_sequence(*parts))
