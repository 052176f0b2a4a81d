"""The seed policy of a configuration: which seeds are built, and which a condition may use.

A cell is (dataset, noise, coverage); its instances of the three priors share a seed.
With BNN in the grid every candidate seed (``seeds.candidates``) is built and the cell's BNN R̂
decides at run time which are valid (``postrisk.tasks.validity``, the one home of that rule);
without it the first ``valid_per_cell`` seeds are all there is. ``seeds.per_prior`` (presets)
builds a prior's instances on the first k of those seeds only (e.g. the costly HBART posterior on
one seed of a paper-settings slice); its conditions use the valid ones among them.
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
        self.per_prior = {p: int(k) for p, k in (cfg["seeds"].get("per_prior") or {}).items()}
        self.bnn_cells = {c.cell for c in implemented_conditions(cfg) if c.prior == "bnn"}

    def prior_seeds(self, prior: str) -> list[int]:
        """Seeds whose instances of ``prior`` are built: every built seed, or the first
        ``seeds.per_prior.<prior>`` of them."""
        return self.task_seeds[: self.per_prior.get(prior, len(self.task_seeds))]

    def n_valid_for(self, condition: Sequence[str]) -> int:
        """How many valid seeds a condition uses: ``valid_per_cell``, at most
        ``seeds.per_prior`` of its prior."""
        return min(self.n_valid, self.per_prior.get(Condition(*condition).prior, self.n_valid))

    def bnn_decides(self, condition: Sequence[str]) -> bool:
        """Whether the condition's cell has BNN instances, whose R̂ decides which seeds are
        valid."""
        return Condition(*condition).cell in self.bnn_cells

    def condition_seeds(self, condition: Sequence[str]) -> list[int]:
        """Seeds a condition's fits may use: every seed its prior is built on where the BNN R̂
        decides at run time (the cell's seed-selection file names the valid ones), else the
        first :meth:`n_valid_for`."""
        built = self.prior_seeds(Condition(*condition).prior)
        if self.bnn_decides(condition):
            return built
        return built[: self.n_valid_for(condition)]


def condition_seeds(cfg: Mapping, condition: Sequence[str]) -> list[int]:
    """:meth:`SeedPolicy.condition_seeds` of ``cfg`` (workflows build the policy once)."""
    return SeedPolicy(cfg).condition_seeds(condition)
