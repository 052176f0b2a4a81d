"""Batched sweeps (``batch_size`` > 1): trials asked a batch at a time (TPE with a constant
liar), the network trials of one architecture fitted as one program with the values their own
fits give, reproducible, resumable at a batch boundary and after a batch killed half-way, and
one trial at a time unchanged."""

import numpy as np
import pytest

from postrisk.methods.nn.ensembles import NeuralEnsemble
from postrisk.methods.runner import run_fit
from postrisk.tuning import mean_gaussian_nll, split_indices, tune

#: A small NN-Ens whose architecture is fixed: only traced numbers are searched.
FIXED = {"width": 8, "n_blocks": 1, "batch_size": 32, "n_members": 2}
SWEEP = dict(fixed=FIXED, n_trials=6, startup_trials=3, split_key=("toy",), random_state=1)


def _data(n=80, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    return x, np.sin(x[:, 0]) + 0.2 * rng.standard_normal(n)


def _complete(result):
    return [(t["number"], t["params"], t["value"]) for t in result.trials
            if t["state"] == "COMPLETE"]


@pytest.fixture(scope="module")
def batched(tmp_path_factory):
    x, y = _data()
    journal = tmp_path_factory.mktemp("batched") / "sweep.log"
    return tune("nn_ens", x, y, journal=journal, batch_size=3, **SWEEP)


def test_batch_trials_score_as_their_own_fits(batched, monkeypatch):
    x, y = _data()
    fit_idx, val_idx = split_indices(len(y), 0.2, "toy")
    complete = _complete(batched)
    assert len(complete) == 6
    for _, params, value in complete[:3]:
        record = run_fit("nn_ens", {**FIXED, **params}, x[fit_idx], y[fit_idx], x[val_idx],
                         random_state=1)
        alone = mean_gaussian_nll(y[val_idx], record.mean, record.prediction().total_var)
        assert value == pytest.approx(alone, rel=1e-3)
    # the batch's three configurations were asked apart (constant liar), not one point thrice
    assert len({str(p) for _, p, _ in complete[:3]}) == 3


def test_batched_sweep_is_reproducible_and_resumes(batched, tmp_path, monkeypatch):
    x, y = _data()
    calls = []
    original = NeuralEnsemble.fit_together.__func__

    def counted(cls, methods, x_, y_):
        calls.append(len(methods))
        return original(cls, methods, x_, y_)

    monkeypatch.setattr(NeuralEnsemble, "fit_together", classmethod(counted))
    journal = tmp_path / "sweep.log"
    first = tune("nn_ens", x, y, journal=journal, batch_size=3, max_new_trials=3, **SWEEP)
    assert len(_complete(first)) == 3 and calls == [3]  # one batch, one program
    # a batch killed half-way: asked, never told; the resumed sweep repeats it as it was
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    study = optuna.load_study(study_name=first.study_name,
                              storage=JournalStorage(JournalFileBackend(str(journal))))
    study.ask()
    study.ask()
    resumed = tune("nn_ens", x, y, journal=journal, batch_size=3, **SWEEP)
    assert [(p, v) for _, p, v in _complete(resumed)] == \
        [(p, v) for _, p, v in _complete(batched)]
    assert resumed.best_value == batched.best_value
    assert resumed.study_name == batched.study_name
    # another batch size is another sweep
    one = tune("nn_ens", x, y, journal=tmp_path / "one.log", batch_size=1, max_new_trials=1,
               **SWEEP)
    assert one.study_name != batched.study_name
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        tune("nn_ens", x, y, journal=tmp_path / "x.log", batch_size=0, **SWEEP)
