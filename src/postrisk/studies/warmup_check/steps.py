"""What the warm-up check's jobs run: the longer posteriors (as the posterior stage builds
them) and the summary's tables."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

from postrisk.studies.warmup_check.units import WarmupPosteriorUnit

logger = logging.getLogger(__name__)


def posteriors(units: Sequence[WarmupPosteriorUnit], n_threads: int = 1,
               accelerator: Mapping | None = None) -> None:
    """One job of rule ``warmup_check_posterior``: each instance's posterior at the longer
    warm-up, built as the posterior stage builds the benchmark's."""
    from postrisk.workflow.steps import make_tasks

    make_tasks(units, accelerator)


def summarise(inputs: Mapping[str, Sequence[str | Path]], out: Mapping[str, str | Path],
              settings: Mapping, scale: str) -> None:
    """Rule ``warmup_check``: the check's tables from the benchmark's task stores and the same
    instances' stores at the longer warm-up."""
    from postrisk.studies.warmup_check.tables import write_warmup_check

    summary = write_warmup_check(inputs["tasks"], inputs["warmup"], out["warmup_check"],
                                 out["warmup_check_instances"], scale)
    logger.info("\n%s", summary.to_string())
