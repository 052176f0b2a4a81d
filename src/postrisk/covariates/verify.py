"""Networked verification of registry entries against their canonical sources
(docs/design.md, "Covariates").

Registry entries carry ``verified: false`` until this has run where OpenML/UCI are reachable
and confirmed that the fetched table has the registry's columns and target, and that cleaning
gives Table 4's ``d`` and ``N``. The report gives the sha256 to pin in the registry.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field, replace

from postrisk.covariates.clean import clean_covariates
from postrisk.covariates.fetch import load_raw_table
from postrisk.covariates.registry import DatasetSpec, get_dataset
from postrisk.covariates.sources import CovariateFetchError, FetchSettings

logger = logging.getLogger(__name__)


@dataclass
class VerificationReport:
    dataset: str
    source: str
    verified: bool
    url: str | None = None
    sha256: str | None = None
    d: int | None = None
    N: int | None = None
    problems: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def verify_covariates(spec: DatasetSpec | str,
                      fetch: FetchSettings | None = None) -> VerificationReport:
    """Fetch the canonical source (never an offline package copy) and check the entry."""
    spec = get_dataset(spec) if isinstance(spec, str) else spec
    fetch = replace(fetch or FetchSettings.from_env(), prefer_offline_package=False)
    report = VerificationReport(dataset=spec.name, source=spec.source.label, verified=False)
    try:
        raw = load_raw_table(spec, fetch)
    except CovariateFetchError as err:
        report.problems.append(str(err))
        return report
    report.url, report.sha256 = raw.url, raw.sha256
    try:
        cleaned = clean_covariates(raw.frame, spec.columns, spec.target, spec.aliases)
    except KeyError as err:
        report.problems.append(str(err))
        return report
    report.d, report.N = cleaned.x.shape[1], cleaned.x.shape[0]
    if report.d != spec.d:
        report.problems.append(f"d = {report.d} after cleaning, Table 4 says {spec.d} "
                               f"(dropped: {cleaned.dropped_columns})")
    if report.N != spec.N:
        report.problems.append(f"N = {report.N} after cleaning, Table 4 says {spec.N}")
    if spec.sha256 and spec.sha256 != raw.sha256:
        report.problems.append(f"sha256 {raw.sha256} differs from the pinned {spec.sha256}")
    report.verified = not report.problems
    logger.log(logging.INFO if report.verified else logging.WARNING, "[%s] verification %s%s",
               spec.name, "passed" if report.verified else "FAILED",
               "".join(f"\n  - {p}" for p in report.problems))
    return report
