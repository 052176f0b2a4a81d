"""What the sandbox's one job runs."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

logger = logging.getLogger(__name__)


def summarise(inputs: Mapping[str, Sequence[str | Path]], out: Mapping[str, str | Path],
              settings: Mapping, scale: str) -> None:
    """Rule ``sandbox``: the sandbox of config ``studies.sandbox`` (``settings``) built, its
    tables and its figure written (:func:`postrisk.studies.sandbox.tables.write_sandbox`)."""
    from postrisk.studies.sandbox.tables import write_sandbox

    if not settings:
        raise ValueError("config key 'studies.sandbox' is missing: the sandbox's settings live "
                         "there (config.yaml)")
    tables = write_sandbox(settings, out, scale)
    logger.info("\n%s", tables["sandbox_scorers"].drop(columns=["scale", "name"]).to_string())
    logger.info("\n%s", tables["sandbox_overlap"].drop(columns="scale").to_string())
