"""The natural-parameter-head ablations (App. D.2): each is its method with only the head
changed."""

from __future__ import annotations

import numpy as np
import pytest

from postrisk.methods.nn.ablations import (
    NaturalHeadBag,
    NaturalHeadDropout,
    NaturalHeadEnsemble,
    NaturalHeadSWAG,
)
from postrisk.methods.nn.ensembles import MCDropout, NeuralBag, NeuralEnsemble
from postrisk.methods.nn.swag import NeuralSWAG
from postrisk.methods.registry import display_name
from postrisk.methods.table import ABLATION_TABLE, entry_at

PAIRS = [(NaturalHeadEnsemble, NeuralEnsemble), (NaturalHeadBag, NeuralBag),
         (NaturalHeadDropout, MCDropout), (NaturalHeadSWAG, NeuralSWAG)]
SMALL = {"n_epochs": 5, "width": 16, "n_blocks": 1, "batch_size": 64}


@pytest.mark.parametrize(("ablation", "base"), PAIRS)
def test_an_ablation_is_its_method_with_the_natural_head(ablation, base):
    entry = entry_at(f"{ablation.__module__}:{ablation.__qualname__}")
    assert entry in ABLATION_TABLE and entry.ablates == base.name
    assert (ablation.name, ablation.display_name) == (entry.name, entry.display_name)
    assert display_name(entry.name) == entry.display_name
    assert ablation.defaults == base.defaults and ablation.search_space == base.search_space
    assert (ablation.head, base.head) == ("natural", "gaussian")


@pytest.mark.parametrize(("ablation", "base"), PAIRS[3:])  # the demo fits all four
def test_the_ablation_fits_with_the_natural_head(ablation, base):
    rng = np.random.default_rng(0)
    x = rng.uniform(-2, 2, (96, 2))
    y = np.sin(x.sum(axis=1)) + rng.normal(0, 0.2 + 0.2 * np.abs(x[:, 0]), 96)
    settings = {**SMALL, **({"n_members": 2} if "n_members" in base.defaults else {}),
                **({"n_checkpoints": 3, "epochs_per_checkpoint": 2}
                   if base is NeuralSWAG else {})}
    natural = ablation(**settings).fit(x, y)
    standard = base(**settings).fit(x, y)
    assert natural.spec_.head == "natural" and standard.spec_.head == "gaussian"
    a, b = natural.predict(x[:10]), standard.predict(x[:10])
    assert np.all(np.isfinite(a.mean)) and np.all(a.aleatoric_var > 0)
    assert not np.allclose(a.aleatoric_var, b.aleatoric_var)
