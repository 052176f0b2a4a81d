import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
OFFLINE_DATASETS = ("concrete", "diamonds", "health_insurance")

os.environ.setdefault("JAX_PLATFORMS", "cpu")


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def offline_covariates():
    """Covariate datasets of the three offline datasets, built once per session."""
    from postrisk.covariates import FetchSettings, build_covariates

    settings = FetchSettings(prefer_offline_package=True)
    return {name: build_covariates(name, settings, progress=lambda _: None)
            for name in OFFLINE_DATASETS}
