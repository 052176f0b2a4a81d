"""What the OOD-proxy study's jobs run: its fits (one job of ``ood_proxy_fit``) and its summary
(Tables 11–12, the ground-truth half, Figure 3B)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

from postrisk.core.progress import progress_steps
from postrisk.studies.ood_proxy.units import OODFitUnit

logger = logging.getLogger(__name__)


def fits(units: Sequence[OODFitUnit], n_threads: int = 1,
         accelerator: Mapping | None = None) -> None:
    """One job of the study's fits: each (method, condition) refitted as the benchmark fits it
    on the condition's instances and asked at their query rows
    (:func:`postrisk.studies.ood_proxy.records.write_ood_fits`). On a benchmark dataset the
    configuration and seeds are its fit store's; on a study dataset the configuration is chosen
    as the fit stage chooses it (:func:`postrisk.workflow.steps.condition_config`)."""
    from postrisk.methods import benchmark_configuration
    from postrisk.studies.ood_proxy.records import write_ood_fits
    from postrisk.workflow.steps import condition_config

    with progress_steps(len(units), "OOD study fits", logger) as progress:
        for unit in units:
            samples = dict(zip(unit.seeds, unit.samples, strict=True))
            if unit.benchmark is not None:
                method, config, seeds = benchmark_configuration(unit.benchmark, unit.n_seeds)
                if method != unit.method:
                    raise ValueError(f"{unit.benchmark} holds {method}, not {unit.method}")
            else:
                config = condition_config(unit.method, dict(unit.settings), unit.samples[0],
                                          unit.tuning, unit.journal, unit.condition,
                                          n_threads).config
                seeds = list(unit.seeds[:unit.n_seeds])
            write_ood_fits(unit.method, config, {s: samples[s] for s in seeds},
                           unit.ood_covariates, unit.out, n_max=unit.n_query,
                           n_threads=n_threads)
            progress.advance(message=f"{unit.label}: seeds {seeds}")


def summarise(inputs: Mapping[str, Sequence[str | Path]], out: Mapping[str, str | Path],
              settings: Mapping, scale: str) -> None:
    """Rule ``ood_proxy``: the study's tables and Figure 3B
    (:func:`postrisk.studies.ood_proxy.tables.write_ood_proxy`); ``inputs["samples"]``: every
    instance's sample store that a fit store may hold."""
    from postrisk.core.io import open_zarr
    from postrisk.studies.ood_proxy.tables import write_ood_proxy
    from postrisk.tasks.key import TaskKey

    by_label = {TaskKey.from_attrs(open_zarr(p, load=False).attrs).label: p
                for p in inputs["samples"]}
    tables = write_ood_proxy(inputs["fits"], by_label, inputs["ood"][0], inputs["scores"], out,
                             scale)
    logger.info("\n%s", tables["table11"].to_string())
    logger.info("\n%s", tables["table12"].to_string())
