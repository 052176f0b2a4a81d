"""The release tests' shared data: task stores and their packed release, built once."""

import pytest

from tests.release.release_helpers import build, make_stores


@pytest.fixture(scope="session")
def stores(tmp_path_factory):
    """Task stores of four instances (and one dropped), covariate stores and prior files."""
    return make_stores(tmp_path_factory.mktemp("results"))


@pytest.fixture(scope="session")
def release(stores, tmp_path_factory):
    """(folder, manifest) of the release packed from ``stores``."""
    out = tmp_path_factory.mktemp("pack") / "release"
    return out, build(stores, out)
