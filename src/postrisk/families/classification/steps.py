"""What the classification family's jobs run: one job's instances (sample and reference
posterior, one store each, written as soon as it is done), and the summary (the checks over
every instance: the calibration table, Table 3 per prior, the rank histograms and their
page)."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from postrisk.core.io import write_zarr_atomic
from postrisk.core.progress import progress_steps

if TYPE_CHECKING:
    import pandas as pd

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
    """Every check over the instances (``inputs["tasks"]``), each to its catalogue path in
    ``out``, the run's scale first in each table: the calibration table per instance
    (:func:`~postrisk.families.classification.checks.calibration_table`, with whether each
    instance is ``valid``), Table 3 per prior over the valid instances
    (:mod:`~postrisk.families.classification.table3`), the rank histograms and the page of
    them all (:mod:`~postrisk.families.classification.page`; ``settings`` as its
    configuration)."""
    from postrisk.families.classification.checks import calibration_table
    from postrisk.families.classification.page import draw_rank_histograms, write_page
    from postrisk.families.classification.table3 import classification_table3, collect
    from postrisk.report.style import save_figure, write_scaled_tables

    instances, points = collect(inputs["tasks"])
    table3 = classification_table3(instances, points)
    calibration = with_validity(calibration_table(inputs["tasks"]), instances)
    tables = {"classification_calibration": calibration, "classification_table3": table3}
    write_scaled_tables(tables, out, scale)
    save_figure(draw_rank_histograms(instances, points), out["classification_rank_histograms"],
                scale)
    write_page(out, tables, settings, scale)
    pooled = calibration.iloc[-1]
    logger.info("coverage of π* %.4f [%.4f, %.4f] over %d instances; nominal %.4f",
                pooled["coverage90"], pooled["coverage_low"], pooled["coverage_high"],
                int(pooled["instances"]), pooled["coverage_nominal"])
    for row in table3.itertuples():
        logger.info("%s: %d valid instance(s), %d dropped by the seed rule (not replaced)",
                    row.prior, row.instances, row.instances_dropped)


def with_validity(calibration: pd.DataFrame, instances: pd.DataFrame) -> pd.DataFrame:
    """The calibration table with ``valid`` (:func:`~postrisk.families.classification.table3.
    mark_valid`'s flag of each instance's row; blank on the pooled row) after ``seed``."""
    import pandas as pd

    from postrisk.classification.key import CLASSIFICATION_KEY_COLUMNS

    def key(row) -> tuple:
        return tuple(str(row[c]) for c in CLASSIFICATION_KEY_COLUMNS)

    valid = {key(row): bool(row["valid"]) for _, row in instances.iterrows()}
    flags = [valid.get(key(row), pd.NA) for _, row in calibration.iterrows()]
    out = calibration.copy()
    out.insert(out.columns.get_loc("seed") + 1, "valid", pd.array(flags, dtype="boolean"))
    return out
