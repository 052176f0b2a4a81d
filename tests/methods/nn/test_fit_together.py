"""Several configurations of one architecture fitted as one program (a sweep's batch): each
ends as its own fit would, and configurations of different architectures are refused."""

import numpy as np
import pytest

from postrisk.methods.nn.ensembles import MCDropout, NeuralBag, NeuralEnsemble

SMALL = {"width": 8, "n_blocks": 1, "batch_size": 16}


def _data(n=60, d=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    y = np.sin(x[:, 0]) + 0.2 * rng.standard_normal(n)
    return x, y, rng.normal(size=(20, d))


@pytest.mark.parametrize("cls, configs", [
    (NeuralEnsemble, [{"n_members": 3, "learning_rate": 2e-3, "n_epochs": 6},
                      {"n_members": 3, "learning_rate": 4e-3, "momentum": 0.8, "n_epochs": 9},
                      {"n_members": 3, "weight_decay": 1e-2, "n_epochs": 4}]),
    (MCDropout, [{"n_members": 16, "dropout": 0.1, "n_epochs": 7},
                 {"n_members": 16, "dropout": 0.3, "learning_rate": 1e-3, "n_epochs": 5}]),
])
def test_each_configuration_ends_as_its_own_fit(cls, configs):
    x, y, x_new = _data()
    together = [cls(**SMALL, **c, random_state=4) for c in configs]
    cls.fit_together(together, x, y)
    for config, method in zip(configs, together, strict=True):
        alone = cls(**SMALL, **config, random_state=4).fit(x, y)
        a, b = method.predict(x_new), alone.predict(x_new)
        for name in ("mean", "aleatoric_var", "epistemic_var"):
            np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=1e-3,
                                       atol=1e-5, err_msg=f"{config} {name}")
        assert method.history_["loss"].shape[-1] == config["n_epochs"]
        np.testing.assert_allclose(method.history_["loss"], alone.history_["loss"], rtol=1e-3)


def test_other_architectures_and_methods_are_refused():
    x, y, _ = _data()
    with pytest.raises(ValueError, match="one architecture"):
        NeuralEnsemble.fit_together([NeuralEnsemble(width=8, n_members=2),
                                     NeuralEnsemble(width=16, n_members=2)], x, y)
    with pytest.raises(NotImplementedError, match="does not train trials together"):
        NeuralBag.fit_together([NeuralBag(**SMALL)], x, y)
    assert NeuralEnsemble.architecture({"width": 8, "learning_rate": 1e-3}) == \
        NeuralEnsemble.architecture({"width": 8, "learning_rate": 5e-3})
