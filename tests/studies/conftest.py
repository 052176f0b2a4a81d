"""Fixtures shared by the studies' tests."""

import pytest

from postrisk.grid.config import load_config


@pytest.fixture(scope="module")
def paper(repo):
    """The checkout's config.yaml, as tests/conftest.py's ``paper``, but loaded once per file
    (loading it takes a while; the studies' configuration tests only read it)."""
    return load_config(repo / "config.yaml")
