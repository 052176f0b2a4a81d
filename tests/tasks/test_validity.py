"""Which instances are valid: the BNN R̂ rule, too few valid seeds, the cell files and the seeds in
use."""
import json

import numpy as np
import pandas as pd
import pytest

from postrisk.tasks import validity


def test_valid_seeds():
    assert validity.valid_seeds(list(range(13)), None, 10) == (list(range(10)), [])
    rhat = {s: 1.0 for s in range(13)} | {2: 1.2, 5: 1.06}
    valid, dropped = validity.valid_seeds(list(range(13)), rhat, 10)
    assert valid == [0, 1, 3, 4, 6, 7, 8, 9, 10, 11] and dropped == [2, 5]


def test_too_few_valid_seeds_is_an_error_naming_the_cell_and_every_rhat():
    rhat = {s: 1.0 for s in range(13)} | {2: 1.2, 5: 1.06, 7: 1.0512, 9: 1.3}
    with pytest.raises(validity.TooFewValidSeeds) as err:
        validity.valid_seeds(list(range(13)), rhat, 10, cell="concrete/bump/ood")
    text = str(err.value)
    assert "cell concrete/bump/ood: 9 valid seed(s)" in text and "10 are needed" in text
    for seed, value in rhat.items():
        assert f"seed {seed}: {value:.4f}" in text
    assert "'seeds.candidates' (now 13)" in text
    # a missing BNN store counts as invalid and is named
    with pytest.raises(validity.TooFewValidSeeds, match="seed 1: no BNN store"):
        validity.valid_seeds([0, 1], {0: 1.0}, 2, cell="c")
    # aggregation applies the same rule
    rows = [{"dataset": "a", "noise": "bump", "coverage": "ood", "seed": s, "prior": "bnn",
             "max_rhat": r} for s, r in enumerate([1.0, 1.2])]
    with pytest.raises(validity.TooFewValidSeeds, match="cell a/bump/ood"):
        validity.mark_valid(pd.DataFrame(rows), n_valid=2)


def test_select_seeds_fails_for_a_short_cell(tmp_path):
    """The valid-seed step on hand-made BNN stores: one message, no seed file."""
    from postrisk.planning.units import ValidSeedsUnit
    from postrisk.tasks import store
    from postrisk.workflow.steps import select_seeds

    paths = []
    for seed, rhat in enumerate([1.02, 1.09]):
        ds = _hand_made_task(seed, rhat)
        path = tmp_path / f"{seed}.zarr"
        from postrisk.core.io import write_zarr_atomic

        write_zarr_atomic(store.validate_store(ds, kind="task"), path)
        paths.append(path)
    out = tmp_path / "cell.json"
    cell = ("concrete", "bump", "ood")
    with pytest.raises(validity.TooFewValidSeeds, match="cell concrete/bump/ood: 1 valid seed"):
        select_seeds(ValidSeedsUnit(cell, tuple(map(str, paths)), 2, str(out)))
    assert not out.exists()
    assert select_seeds(ValidSeedsUnit(cell, tuple(map(str, paths)), 1, str(out)))["valid"] == [0]
    assert out.exists()
    # the file records the digest of the settings it depends on (grid.seeds.selection_digest)
    select_seeds(ValidSeedsUnit(cell, tuple(map(str, paths)), 1, str(out), "0123abcd"))
    assert json.loads(out.read_text())["config_digest"] == "0123abcd"


def _hand_made_task(seed: int, max_rhat: float):
    """A minimal valid BNN task store whose largest R̂ is ``max_rhat``."""
    import json

    import xarray as xr

    from postrisk.tasks.store import TASK_SCHEMA_VERSION

    n, m, draws = 3, 4, 8
    rng = np.random.default_rng(seed)
    rhat = np.full(m, 1.0)
    rhat[1] = max_rhat
    attrs = {"schema_version": TASK_SCHEMA_VERSION, "store_kind": "task", "dataset": "concrete",
             "prior": "bnn", "noise": "bump", "coverage": "ood", "seed": seed, "a": 1.0,
             "noise_model": "{}", "prior_params": "{}", "n": n, "n_eval": m,
             "noise_to_signal": 0.1, "config_digest": "x", "f_true_sampler": "{}",
             "versions": "{}", "timings": json.dumps({}), "sampler_settings": "{}",
             "sample_config_digest": "y", "rank_loglik": 0, "chains": 2}
    f = np.float64
    return xr.Dataset({
        "x_train": (("train", "feature"), rng.uniform(size=(n, 2))),
        "train_index": (("train",), np.arange(n, dtype=np.int64)),
        "y_train": (("train",), rng.normal(size=n)),
        "noise_var_train": (("train",), np.ones(n)), "f_true_train": (("train",), np.zeros(n)),
        "shell_train": (("train",), np.zeros(n, np.int8)),
        "x_eval": (("eval", "feature"), 2 + rng.uniform(size=(m, 2))),
        "eval_index": (("eval",), np.arange(n, n + m, dtype=np.int64)),
        "shell_eval": (("eval",), np.zeros(m, np.int8)),
        "noise_var_eval": (("eval",), np.ones(m)), "f_true_eval": (("eval",), np.zeros(m)),
        "posterior_draws": (("draw", "eval"), rng.normal(size=(draws, m)).astype(np.float32)),
        "posterior_draws_train": (("draw", "train"),
                                  rng.normal(size=(draws, n)).astype(np.float32)),
        "posterior_mean": (("eval",), np.zeros(m, f)), "posterior_var": (("eval",), np.ones(m)),
        "rank_true": (("eval",), np.zeros(m, np.int32)),
        "covered90": (("eval",), np.ones(m, bool)), "mcse_var": (("eval",), np.zeros(m)),
        "rhat": (("eval",), rhat), "ess": (("eval",), np.full(m, 8.0)),
    }, attrs=attrs)


def test_mark_valid_drops_seeds_with_high_bnn_rhat_for_every_family():
    rows = []
    for seed, rhat in enumerate([1.0, 1.2, 1.01, 1.0]):
        for prior in ("gp", "bnn"):
            rows.append({"dataset": "a", "noise": "bump", "coverage": "ood", "seed": seed,
                         "prior": prior, "max_rhat": rhat if prior == "bnn" else np.nan})
    out = validity.mark_valid(pd.DataFrame(rows), n_valid=2)
    assert sorted(out.loc[out["valid"], "seed"].unique()) == [0, 2]
    assert out.groupby("seed")["valid"].nunique().eq(1).all()  # priors share their seeds
    no_bnn = validity.mark_valid(pd.DataFrame(rows).query("prior == 'gp'"), n_valid=3)
    assert sorted(no_bnn.loc[no_bnn["valid"], "seed"]) == [0, 1, 2]
    # sensitivity: the valid seeds whose BNN R̂ ≤ 1.01 (seed 2 sits exactly on it)
    out3 = validity.mark_valid(pd.DataFrame(rows), n_valid=3)
    assert sorted(out3.loc[out3["valid"], "seed"].unique()) == [0, 2, 3]
    assert sorted(out3.loc[out3["valid_strict"], "seed"].unique()) == [0, 2, 3]
    tight = validity.mark_valid(pd.DataFrame(rows), n_valid=3, strict=1.005)
    assert sorted(tight.loc[tight["valid_strict"], "seed"].unique()) == [0, 3]
    assert not (tight["valid_strict"] & ~tight["valid"]).any()


def test_usable_seeds_follow_the_cell_file_or_the_first_seeds(tmp_path):
    import json

    from postrisk.tasks.validity import read_usable_seeds as usable_seeds

    assert usable_seeds([0, 1, 2, 3], 2) == [0, 1]
    cell = tmp_path / "cell.json"
    cell.write_text(json.dumps({"valid": [0, 3], "dropped": [1, 2]}))
    assert usable_seeds([0, 1, 2, 3], 2, [str(cell)]) == [0, 3]
    # a prior built on fewer seeds than the cell (seeds.per_prior): the first valid ones among
    # its seeds, and an error naming the key when they hold too few
    assert usable_seeds([0], 1, [str(cell)]) == [0]
    assert usable_seeds([0, 1, 2, 3], 1, [str(cell)]) == [0]
    with pytest.raises(validity.TooFewValidSeeds, match="seeds.per_prior"):
        usable_seeds([1, 2], 1, [str(cell)])
