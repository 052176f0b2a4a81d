"""The seed policy of a configuration: which seeds are built, and which a condition may use.

A cell is (dataset, noise, coverage); its instances of the three priors share a seed.
With BNN in the grid every candidate seed (``seeds.candidates``) is built and the cell's BNN R̂
decides at run time which are valid (``postrisk.tasks.validity``, the one home of that rule);
without it the first ``valid_per_cell`` seeds are all there is. ``seeds.per_prior`` (presets)
builds a prior's instances on the first k of those seeds only (e.g. the costly HBART posterior on
one seed of a paper-settings slice); its conditions use the valid ones among them.

Reference posteriors only for the seeds that are used (docs/design.md, "Seeds"): every prior's
sample stores, and the BNN's posteriors, are built on every candidate seed; the GP and HBART
posteriors of a cell whose seed selection is known when the workflow is planned — written by an
earlier invocation, the BNN-first pass (target ``seed_selections``) — only on the valid seeds
it names. Where it is not known yet they are built on every candidate, as before: one
invocation still plans and runs the whole grid.

A selection is keyed to the settings that made it: each file records
:func:`selection_digest` (``config_digest``), the digest of exactly what decides which seeds are
valid — the scale, the BNN instances' sample settings (sizes, noise model, BNN prior), the BNN
sampler's settings and the seed policy (the BNN's candidate seeds, ``valid_per_cell``). A plan
uses a file only when its digest is the plan's own; any other file (another config's, or one
written before selections recorded a digest) is ignored with a warning naming it, and the plan
builds every candidate as it would without it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

from postrisk.core.io import digest
from postrisk.grid.paths import RESULTS, path
from postrisk.planning.conditions import Condition, implemented_conditions, implemented_priors
from postrisk.tasks.key import config_digest

logger = logging.getLogger(__name__)

#: A cell: (dataset, noise, coverage).
Cell = tuple[str, str, str]


def task_seeds(cfg: Mapping) -> list[int]:
    """Seeds whose task stores are built for every condition: every candidate when BNN is in
    the grid (its R̂ decides validity at run time), else the first ``valid_per_cell``."""
    seeds = cfg["seeds"]
    bnn = "bnn" in implemented_priors(cfg["priors"])
    n = seeds["candidates"] if bnn else seeds["valid_per_cell"]
    return list(range(n))


def selection_cells(cfg: Mapping) -> list[Cell]:
    """The cells whose seeds the BNN R̂ decides (those with BNN instances), in condition
    order: each has a seed-selection file."""
    return list(dict.fromkeys(c.cell for c in implemented_conditions(cfg) if c.prior == "bnn"))


def selection_file(cell: Cell, root: str = RESULTS) -> str:
    """The seed-selection file of ``cell`` (rule ``valid_seeds``)."""
    return path("seed_selection", root, **dict(zip(("dataset", "noise", "coverage"), cell,
                                                    strict=True)))


def prior_seeds(cfg: Mapping, prior: str) -> list[int]:
    """Seeds whose instances of ``prior`` are built: every built seed, or the first
    ``seeds.per_prior.<prior>`` of them (for the BNN: the candidates a selection chooses
    from)."""
    per_prior = cfg["seeds"].get("per_prior") or {}
    seeds = task_seeds(cfg)
    return seeds[: int(per_prior.get(prior, len(seeds)))]


def selection_digest(cfg: Mapping) -> str:
    """The digest of exactly the settings a cell's seed selection depends on (recorded in its
    file as ``config_digest``): the scale, the BNN sample stores' digest
    (:func:`postrisk.tasks.key.config_digest`: sizes, noise model, BNN prior), the BNN
    sampler's settings (``posterior.bnn``) and the seed policy — the BNN's candidate seeds and
    ``valid_per_cell``."""
    return digest({"scale": cfg.get("scale"), "sample": config_digest(cfg, "bnn"),
                   "posterior.bnn": (cfg.get("posterior") or {}).get("bnn"),
                   "seeds": {"candidates": prior_seeds(cfg, "bnn"),
                             "valid_per_cell": int(cfg["seeds"]["valid_per_cell"])}})


def read_selection(file: str | Path, want: str) -> tuple[int, ...] | None:
    """The valid seeds a selection file names, when it records the digest ``want``
    (:func:`selection_digest`); None when it is absent (silently) or unreadable, or was
    written under other settings (each with a one-line warning naming the file)."""
    file = Path(file)
    if not file.exists():
        return None
    try:
        chosen = json.loads(file.read_text())
        valid = tuple(int(s) for s in chosen["valid"])
        recorded = chosen.get("config_digest")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        logger.warning("seed selection %s cannot be read (%s): ignored; this plan builds the "
                       "cell's GP and HBART posteriors on every candidate seed", file,
                       type(err).__name__)
        return None
    if recorded != want:
        made = ("records no settings digest (written before selections recorded one)"
                if recorded is None else
                f"was made under other settings (digest {recorded}, this config's {want})")
        logger.warning("seed selection %s %s: ignored; this plan builds the cell's GP and "
                       "HBART posteriors on every candidate seed (`snakemake seed_selections` "
                       "rewrites it for this config)", file, made)
        return None
    return valid


def known_selections(cfg: Mapping, root: str = RESULTS) -> dict[Cell, tuple[int, ...]]:
    """The valid seeds of every cell whose seed-selection file exists under ``root`` now and
    was made under this config's settings (:func:`read_selection`; read when the workflow is
    planned). Any other file is ignored, with a warning naming it."""
    want = selection_digest(cfg)
    out = {}
    for cell in selection_cells(cfg):
        valid = read_selection(selection_file(cell, root), want)
        if valid is not None:
            out[cell] = valid
    return out


def assumed_selections(cfg: Mapping) -> dict[Cell, tuple[int, ...]]:
    """Every cell's selection as a cost estimate assumes it: its first ``valid_per_cell``
    candidate seeds (which seeds are valid is known only after the BNN posteriors; how many
    is all a cost needs)."""
    n_valid = int(cfg["seeds"]["valid_per_cell"])
    return {cell: tuple(task_seeds(cfg)[:n_valid]) for cell in selection_cells(cfg)}


class SeedPolicy:
    """The seed policy of one configuration, computed once: the seeds built for every
    condition, and per condition whether the BNN R̂ decides, which seeds its fits may use and
    which get a reference posterior. ``selections``: the valid seeds of the cells whose seed
    selection is known when planning (:func:`known_selections`)."""

    def __init__(self, cfg: Mapping,
                 selections: Mapping[Cell, Sequence[int]] | None = None) -> None:
        self.n_valid = int(cfg["seeds"]["valid_per_cell"])
        self._cfg = cfg
        self.task_seeds = task_seeds(cfg)
        self.selection_digest = selection_digest(cfg)
        self.per_prior = {p: int(k) for p, k in (cfg["seeds"].get("per_prior") or {}).items()}
        self.bnn_cells = set(selection_cells(cfg))
        self.selections = {tuple(cell): tuple(int(s) for s in seeds)
                           for cell, seeds in (selections or {}).items()}

    def prior_seeds(self, prior: str) -> list[int]:
        """Seeds whose instances of ``prior`` are built (:func:`prior_seeds`)."""
        return prior_seeds(self._cfg, prior)

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

    def posterior_seeds(self, condition: Sequence[str]) -> list[int]:
        """Seeds whose reference posterior (task store) a condition builds: its
        :meth:`condition_seeds`, but for a GP or HBART condition whose cell's selection is
        known only the valid seeds that selection names (the BNN's are what decide it)."""
        c = Condition(*condition)
        seeds = self.condition_seeds(c)
        chosen = self.selections.get(c.cell)
        if c.prior == "bnn" or chosen is None or not self.bnn_decides(c):
            return seeds
        return [s for s in seeds if s in set(chosen)]


def condition_seeds(cfg: Mapping, condition: Sequence[str]) -> list[int]:
    """:meth:`SeedPolicy.condition_seeds` of ``cfg`` (workflows build the policy once)."""
    return SeedPolicy(cfg).condition_seeds(condition)
