import numpy as np
import pytest

from postrisk.tasks.coverage import SCENARIOS, allocate, select_training


@pytest.mark.parametrize("n", [5, 7, 348, 2084, 4771])
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_allocation_largest_remainder(n, scenario):
    counts = allocate(n, SCENARIOS[scenario])
    assert counts.sum() == n
    quota = np.asarray(SCENARIOS[scenario]) * n
    assert np.all(np.abs(counts - quota) < 1)


def test_allocate_hand_case():
    np.testing.assert_array_equal(allocate(7, (0.2,) * 5), [2, 2, 1, 1, 1])
    np.testing.assert_array_equal(allocate(6, (0.25,) * 4 + (0.0,)), [2, 2, 1, 1, 0])


def test_selection_respects_shells_and_is_deterministic():
    rng = np.random.default_rng(0)
    shells = rng.integers(0, 5, size=5000)
    for scenario, shares in SCENARIOS.items():
        pick = select_training(shells, 1000, scenario, np.random.default_rng(1))
        assert len(np.unique(pick)) == 1000
        np.testing.assert_array_equal(np.bincount(shells[pick], minlength=5),
                                      allocate(1000, shares))
        again = select_training(shells, 1000, scenario, np.random.default_rng(1))
        np.testing.assert_array_equal(pick, again)
    ood = select_training(shells, 1000, "ood", np.random.default_rng(2))
    assert not np.any(shells[ood] == 4)


def test_too_small_shell_raises():
    with pytest.raises(ValueError, match="shell 4"):
        select_training(np.repeat([0, 1, 2, 3, 4], [50, 50, 50, 50, 2]), 20, "balanced",
                        np.random.default_rng(0))
