"""Fixtures of the grid's tests."""

import pytest

from postrisk.grid import load_config


@pytest.fixture
def paper(repo):
    """The paper's configuration (the checkout's config.yaml)."""
    return load_config(repo / "config.yaml")
