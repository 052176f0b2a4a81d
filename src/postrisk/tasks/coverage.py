"""Training-sample coverage scenarios (paper App. B.4; docs/design.md, "Coverage"). Pure
functions."""

from __future__ import annotations

import numpy as np

from postrisk.covariates.pools import N_SHELLS

#: Share of the training sample drawn from each shell (innermost first).
SCENARIOS: dict[str, tuple[float, ...]] = {
    "balanced": (0.2, 0.2, 0.2, 0.2, 0.2),
    "ood": (0.25, 0.25, 0.25, 0.25, 0.0),
}


def allocate(n: int, shares: tuple[float, ...]) -> np.ndarray:
    """Integer counts per shell summing to ``n`` by the largest-remainder method (ties: inner)."""
    quota = np.asarray(shares, dtype=float) * n
    counts = np.floor(quota).astype(int)
    remainder = quota - counts
    order = np.argsort(-remainder, kind="stable")
    counts[order[: n - counts.sum()]] += 1
    return counts


def select_training(candidate_shells: np.ndarray, n: int, scenario: str,
                    rng: np.random.Generator) -> np.ndarray:
    """Positions (into the candidate pool) of ``n`` training inputs for ``scenario``.

    Per shell, the allocated count is drawn uniformly without replacement; the result is
    sorted. A shell with too few candidates raises (Table 4's n is chosen so both scenarios fit).
    """
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown coverage {scenario!r}; allowed: {', '.join(SCENARIOS)}")
    shells = np.asarray(candidate_shells)
    counts = allocate(n, SCENARIOS[scenario])
    chosen = []
    for shell in range(N_SHELLS):
        members = np.flatnonzero(shells == shell)
        if counts[shell] > members.size:
            raise ValueError(f"coverage {scenario!r}: shell {shell} has {members.size} "
                             f"candidates but {counts[shell]} are needed for n={n}")
        chosen.append(rng.choice(members, size=counts[shell], replace=False))
    return np.sort(np.concatenate(chosen))
