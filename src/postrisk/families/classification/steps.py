"""What the classification family's jobs run: one job's instances (sample and reference
posterior, one store each, written as soon as it is done), and the summary (the calibration
table over every instance)."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

from postrisk.core.io import write_zarr_atomic
from postrisk.core.progress import progress_steps

logger = logging.getLogger(__name__)


def build_tasks(units: Sequence, n_threads: int = 1, accelerator: Mapping | None = None) -> None:
    """Build every unit's store in this process (NUTS compiles once per shape). A job that
    asked for a GPU first checks that JAX sees one."""
    from postrisk.classification.generate import build_classification_task
    from postrisk.core.jax_env import check_accelerator
    from postrisk.covariates.build import load_covariates

    record = check_accelerator(**accelerator) if accelerator else None
    with progress_steps(len(units), "classification instances", logger) as progress:
        for unit in units:
            cov = load_covariates(unit.covariates)
            params = json.loads(Path(unit.prior).read_text())
            ds = build_classification_task(unit.key, cov, params, unit.n, unit.settings)
            if record:
                ds.attrs["accelerator"] = json.dumps(record)
            write_zarr_atomic(ds, unit.out)
            progress.advance(message=unit.key.label)


def summarise(inputs: Mapping[str, Sequence[str]], out: Mapping[str, str], settings: Mapping,
              scale: str) -> None:
    """The calibration table (:func:`~postrisk.families.classification.checks.
    calibration_table`), the run's scale first."""
    from postrisk.families.classification.checks import calibration_table

    table = calibration_table(inputs["tasks"])
    table.insert(0, "scale", scale)
    Path(out["classification_calibration"]).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(out["classification_calibration"], index=False)
    pooled = table.iloc[-1]
    logger.info("coverage of π* %.4f [%.4f, %.4f] over %d instances; nominal %.4f",
                pooled["coverage90"], pooled["coverage_low"], pooled["coverage_high"],
                int(pooled["instances"]), pooled["coverage_nominal"])
