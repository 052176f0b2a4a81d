"""Covariates: registry, fetching, cleaning, pools, shells and the PC1 score (SPEC §3, §5, §6)."""

from postrisk.covariates.build import (
    build_covariates,
    covariates_from_raw,
    load_covariates,
    scaling_from_store,
    write_covariates,
)
from postrisk.covariates.fetch import (
    ChecksumMismatch,
    CovariateFetchError,
    CovariateSourceUnavailable,
    FetchSettings,
    load_raw_table,
    raw_path,
)
from postrisk.covariates.registry import DatasetSpec, get_dataset, registry, task_datasets
from postrisk.covariates.verify import verify_covariates

__all__ = [
    "ChecksumMismatch", "CovariateFetchError", "CovariateSourceUnavailable", "DatasetSpec",
    "FetchSettings", "build_covariates", "covariates_from_raw", "get_dataset", "load_covariates",
    "load_raw_table", "raw_path", "registry", "scaling_from_store", "task_datasets",
    "verify_covariates", "write_covariates",
]
