"""The seed policy of a configuration: which seeds are built, and which a condition may use.

A cell is (dataset, noise, coverage); its instances of the three priors share a seed.
With BNN in the grid every candidate seed (``seeds.candidates``) is built and the cell's BNN R̂
decides at run time which are valid (``postrisk.tasks.validity``, the one home of that rule);
without it the first ``valid_per_cell`` seeds are all there is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from postrisk.grid.conditions import Condition, implemented_conditions, implemented_priors


def task_seeds(cfg: Mapping) -> list[int]:
    """Seeds whose task stores are built for every condition: every candidate when BNN is in
    the grid (its R̂ decides validity at run time), else the first ``valid_per_cell``."""
    seeds = cfg["seeds"]
    n = seeds["candidates"] if "bnn" in implemented_priors(cfg) else seeds["valid_per_cell"]
    return list(range(n))


class SeedPolicy:
    """The seed policy of one configuration, computed once: the seeds built for every
    condition, and per condition whether the BNN R̂ decides and which seeds its fits may use."""

    def __init__(self, cfg: Mapping) -> None:
        self.n_valid = int(cfg["seeds"]["valid_per_cell"])
        self.task_seeds = task_seeds(cfg)
        self.bnn_cells = {c.cell for c in implemented_conditions(cfg) if c.prior == "bnn"}

    def bnn_decides(self, condition: Sequence[str]) -> bool:
        """Whether the condition's cell has BNN instances, whose R̂ decides which seeds are
        valid."""
        return Condition(*condition).cell in self.bnn_cells

    def condition_seeds(self, condition: Sequence[str]) -> list[int]:
        """Seeds a condition's fits may use: every built seed where the BNN R̂ decides at run
        time (the cell's seed-selection file names the valid ones), else the first
        ``valid_per_cell``."""
        if self.bnn_decides(condition):
            return list(self.task_seeds)
        return self.task_seeds[: self.n_valid]


def condition_seeds(cfg: Mapping, condition: Sequence[str]) -> list[int]:
    """:meth:`SeedPolicy.condition_seeds` of ``cfg`` (workflows build the policy once)."""
    return SeedPolicy(cfg).condition_seeds(condition)
