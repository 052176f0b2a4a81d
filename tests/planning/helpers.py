"""The small configuration the planning tests build over config.yaml
(tests/planning/test_planner.py, tests/planning/test_units.py)."""

from __future__ import annotations

from postrisk.grid.config import merge_layers, validate_config

#: A small grid over config.yaml: two datasets, the three priors (BNN in every cell, so every
#: condition uses all 3 candidate seeds), two noise modes, both coverages, two methods, 2 valid
#: seeds of 3 candidates; no OOD set, no study runs, no Disentanglement Error experiment
#: (config.yaml's grid is outside these noise modes).
SMALL = {"datasets": ["concrete", "diamonds"], "ood_datasets": [],
         "priors": ["gp", "hbart", "bnn"], "noise_modes": ["homoscedastic", "bump"],
         "coverages": ["balanced", "ood"], "methods": ["blr", "gp"],
         "seeds": {"valid_per_cell": 2, "candidates": 3},
         "studies": {"sandbox": {"run": False}, "sn_study": {"run": False},
                     "warmup_check": {"datasets": []}}}


def small_config(paper, *layers) -> dict:
    """SMALL merged over config.yaml (``paper``), then ``layers`` over it, validated."""
    return validate_config(merge_layers([paper, SMALL, *layers]))


def mcmc_merged(counts: dict[str, int]) -> dict[str, int]:
    """Job counts per rule with the MCMC posterior rules (``posterior_mcmc`` and, where a prior
    runs faster on CPUs while the others ask for GPUs, ``posterior_mcmc_cpu``) counted as one."""
    out = {rule: n for rule, n in counts.items() if not rule.startswith("posterior_mcmc")}
    mcmc = sum(n for rule, n in counts.items() if rule.startswith("posterior_mcmc"))
    return {**out, "posterior_mcmc": mcmc} if mcmc else out
