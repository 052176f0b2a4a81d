"""Simulation-based calibration of the GP classification reference posterior at toy
size, with its negative controls (the design and the tests: tests/classification/toy_sbc.py)."""

import pytest

from tests.classification import toy_sbc
from tests.classification.toy_sbc import (  # noqa: F401 - the tests, on this file's design
    results,
    test_control_prior_as_posterior_fails,
    test_control_temperature_doubled_fails,
    test_control_widened_fails,
    test_the_posterior_is_calibrated,
)


@pytest.fixture(scope="module")
def design() -> dict:
    return toy_sbc.make_design("gp")
