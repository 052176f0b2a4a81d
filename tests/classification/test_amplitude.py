"""The amplitude: prior draws of π reach the stated mean entropy share."""

import numpy as np
import pytest

from postrisk.classification.amplitude import calibrate_amplitude, entropy_share


def _brute_share(latents, amplitude):
    total, count = 0.0, 0
    for draw in latents:
        for row in draw:
            p = np.exp(amplitude * row - np.max(amplitude * row))
            p /= p.sum()
            total += -sum(q * np.log(q) for q in p if q > 0) / np.log(len(p))
            count += 1
    return total / count


def test_entropy_share_against_brute_force():
    latents = np.random.default_rng(1).standard_normal((5, 7, 3))
    for amplitude in (0.1, 1.0, 4.0):
        assert entropy_share(latents, amplitude) == pytest.approx(
            _brute_share(latents, amplitude), rel=1e-12)


@pytest.mark.parametrize("k, target", [(2, 0.5), (3, 0.5), (10, 0.3), (3, 0.8)])
def test_calibrated_amplitude_reaches_the_target(k, target):
    latents = np.random.default_rng(k).standard_normal((40, 50, k))
    amplitude, share = calibrate_amplitude(latents, target)
    assert share == pytest.approx(target, abs=1e-5)
    assert _brute_share(latents, amplitude) == pytest.approx(target, abs=1e-5)
    # larger amplitude: nearer one-hot; smaller: nearer uniform
    assert entropy_share(latents, 1.1 * amplitude) < target < entropy_share(latents,
                                                                             amplitude / 1.1)


def test_unreachable_targets_are_refused():
    with pytest.raises(ValueError, match="no amplitude"):
        calibrate_amplitude(np.zeros((3, 4, 3)), 0.5)  # constant latents: always uniform
    with pytest.raises(ValueError, match=r"\(0, 1\)"):
        calibrate_amplitude(np.ones((3, 4, 3)), 1.0)
