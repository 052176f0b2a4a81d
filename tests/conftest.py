import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
OFFLINE_DATASETS = ("concrete", "diamonds", "health_insurance")

os.environ.setdefault("JAX_PLATFORMS", "cpu")
# Two CPU devices, as a posterior job gets on this machine (chains spread over devices); XLA
# reads this once, so it is set before anything imports jax.
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=2")


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture
def paper(repo):
    """The paper's configuration (the checkout's config.yaml, over the fitted cost model)."""
    from postrisk.grid.config import load_config

    return load_config(repo / "config.yaml")


@pytest.fixture(scope="session")
def offline_covariates():
    """Covariate datasets of the three offline datasets, built once per session."""
    from postrisk.covariates import FetchSettings, build_covariates

    settings = FetchSettings(prefer_offline_package=True)
    return {name: build_covariates(name, settings) for name in OFFLINE_DATASETS}


def pytest_collection_modifyitems(config, items):
    """Run the files whose tests start Snakemake (marker ``workflow``: the longest) first, the
    file with most of them first, so that the fast tier's two processes (whole files to each,
    in this order: ``--no-loadscope-reorder``) finish together; within a file, the order
    stays."""
    def file_of(item):
        return item.nodeid.split("::", 1)[0]

    workflow = {}
    for item in items:
        if item.get_closest_marker("workflow"):
            workflow[file_of(item)] = workflow.get(file_of(item), 0) + 1
    items.sort(key=lambda item: -workflow.get(file_of(item), 0))  # stable: files keep order
