"""What the SN study's jobs run: its fits (one job of ``sn_study_fit``) and its summary
(Tables 13–14, the mediation regressions, Figure 10)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

from postrisk.core.progress import progress_steps
from postrisk.studies.sn_study.units import SNFitUnit

logger = logging.getLogger(__name__)


def fits(units: Sequence[SNFitUnit], n_threads: int = 1,
         accelerator: Mapping | None = None) -> None:
    """One job of the study's fits: each (method, condition)'s plain, SN and WD arms on the
    seeds its benchmark fit store holds (:func:`postrisk.studies.sn_study.fits.write_sn_fits`)."""
    from postrisk.studies.sn_study.fits import write_sn_fits

    with progress_steps(len(units), "SN study fits", logger) as progress:
        for unit in units:
            frame = write_sn_fits(unit.method, unit.benchmark,
                                  dict(zip(unit.seeds, unit.tasks, strict=True)),
                                  unit.settings, unit.study, unit.journal, unit.condition,
                                  unit.out, unit.tuning_out, n_threads=n_threads)
            summary = frame.groupby("arm", sort=False)[["rho_risk", "preservation"]].mean()
            progress.advance(message=f"{unit.label}: " + "; ".join(
                f"{arm} ρ_risk {row.rho_risk:.3f}, preservation {row.preservation:.3f}"
                for arm, row in summary.iterrows()))


def summarise(inputs: Mapping[str, Sequence[str | Path]], out: Mapping[str, str | Path],
              settings: Mapping, scale: str) -> None:
    """Rule ``sn_study``: Tables 13–14, the mediation regressions and Figure 10
    (:func:`postrisk.studies.sn_study.tables.write_sn_study`); ``settings``: the bootstrap's
    replicates and the instances per method a regression needs."""
    from postrisk.studies.sn_study.tables import write_sn_study

    tables = write_sn_study(inputs["records"], inputs["scores"], out, scale,
                            n_boot=int(settings.get("bootstrap", 2000)),
                            min_instances=int(settings.get("min_instances", 10)))
    logger.info("\n%s", tables["table13"].to_string())
    logger.info("\n%s", tables["table14"].to_string())
