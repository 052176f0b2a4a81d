"""The warm-up check's tables: written by its summary, shown on the studies' page."""

from __future__ import annotations

from postrisk.grid.artefact import Artefact

_WARMUP = "postrisk.studies.warmup_check.tables:write_warmup_check"

#: The study's entries, in their page's order.
CATALOGUE: tuple[Artefact, ...] = (
    Artefact("warmup_check", "studies/warmup_check.csv", "warmup_check", _WARMUP,
             title="HBART warm-up check (paper App. B.7)",
             caption="The same instances' reference posteriors (same samples, same posterior "
                     "seed) with factor × the warm-up (the tempered share unchanged) against "
                     "the benchmark's, per dataset: the change in pooled 90% coverage, and the "
                     "median, 95th percentile and largest relative change of the posterior SD "
                     "over the evaluation points; sd_change_mc_median: the median relative "
                     "change two independent runs of the benchmark's length would show from "
                     "Monte Carlo error alone (from the MCSE of the variance). The paper (Protein "
                     "and kin8nm, 4×): coverage changes by < 0.003, the SD by at most about 5%."),
    Artefact("warmup_check_instances", "studies/warmup_check_instances.csv", "warmup_check",
             _WARMUP, title="HBART warm-up check per instance",
             caption="Per instance and factor: 90% coverage (all points, the outermost shell, "
                     "the rest) of the benchmark's posterior and of the longer warm-up's, the "
                     "relative change of the posterior SD, and the max R̂ of each."),
)
