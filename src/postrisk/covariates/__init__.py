"""Covariates: registry, fetching, cleaning, pools, shells and the PC1 score (docs/design.md,
"Covariates", "Noise modes" and "Coverage").

Names are imported lazily so that reading the registry (every workflow start) stays light.
"""

from postrisk.core.lazy import lazy_exports

#: Version of the covariate stores (light to import: the workflow passes it to the jobs that
#: write them). Version 2: the evaluation/candidate split keeps identical rows on one side;
#: version 1 split by row index only.
COVARIATES_SCHEMA_VERSION = "covariates-2"

_EXPORTS = {
    "build_covariates": "postrisk.covariates.build",
    "covariates_from_raw": "postrisk.covariates.build",
    "load_covariates": "postrisk.covariates.build",
    "scaling_from_store": "postrisk.covariates.build",
    "write_covariates": "postrisk.covariates.build",
    "load_raw_table": "postrisk.covariates.fetch",
    "DatasetSpec": "postrisk.covariates.registry",
    "get_dataset": "postrisk.covariates.registry",
    "task_datasets": "postrisk.covariates.registry",
    "ChecksumMismatch": "postrisk.covariates.sources",
    "CovariateFetchError": "postrisk.covariates.sources",
    "CovariateSourceUnavailable": "postrisk.covariates.sources",
    "FetchSettings": "postrisk.covariates.sources",
    "raw_path": "postrisk.covariates.sources",
    "verify_covariates": "postrisk.covariates.verify",
}
__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports("postrisk.covariates", _EXPORTS)
