"""Covariates: registry, fetching, cleaning, pools, shells and the PC1 score (SPEC §3, §5, §6).

Names are imported lazily so that reading the registry (every workflow start) stays light.
"""

import importlib

_EXPORTS = {
    "build_covariates": "postrisk.covariates.build",
    "covariates_from_raw": "postrisk.covariates.build",
    "load_covariates": "postrisk.covariates.build",
    "scaling_from_store": "postrisk.covariates.build",
    "write_covariates": "postrisk.covariates.build",
    "ChecksumMismatch": "postrisk.covariates.fetch",
    "CovariateFetchError": "postrisk.covariates.fetch",
    "CovariateSourceUnavailable": "postrisk.covariates.fetch",
    "FetchSettings": "postrisk.covariates.fetch",
    "load_raw_table": "postrisk.covariates.fetch",
    "raw_path": "postrisk.covariates.fetch",
    "DatasetSpec": "postrisk.covariates.registry",
    "get_dataset": "postrisk.covariates.registry",
    "task_datasets": "postrisk.covariates.registry",
    "verify_covariates": "postrisk.covariates.verify",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'postrisk.covariates' has no attribute {name!r}")
