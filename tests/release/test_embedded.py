"""The small suite inside the package: thinning keeps the chains' structure and the oracle's
mean and variance and recomputes the diagnostics (so the suite verifies); the suite packs like
any release and ``postrisk.get_task`` loads from it with no download."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import postrisk
from postrisk.core.io import open_zarr
from postrisk.release import embedded
from postrisk.release.embedded import build_embedded_suite, kept_draws, thin_task
from postrisk.release.verify import verify_release
from postrisk.tasks.recheck import recheck_diagnostics
from tests.release.release_helpers import KEYS, with_diagnostics
from tests.task_helpers import gp_task


@pytest.mark.parametrize("n, chains, draws, kept, kept_chains", [
    (1000, 250, 200, 200, 50),    # HBART: 4 draws per chain -> 50 whole chains
    (1000, 4, 500, 500, 4),       # BNN: every chain thinned evenly
    (1000, 1, 200, 200, 1),       # GP: independent draws
    (100, 4, 200, 100, 4),        # fewer than asked: all of them
])
def test_kept_draws(n, chains, draws, kept, kept_chains):
    index, new_chains = kept_draws(n, chains, draws)
    assert len(index) == kept and new_chains == kept_chains
    assert len(set(index)) == kept and index.max() < n
    per_chain = n // chains
    if kept_chains == chains:  # the same share of each chain, first and last draw kept
        counts = np.bincount(index // per_chain, minlength=chains)
        assert np.all(counts == kept // chains)


def test_a_thinned_task_keeps_the_oracle_and_rechecks_against_its_draws():
    ds = with_diagnostics(gp_task(n=30, m=20, seed=3).ds, seed=3, chains=4)
    thin = thin_task(ds, draws=100)
    assert thin.sizes["draw"] == 100 and thin.attrs["chains"] == 4
    np.testing.assert_array_equal(thin["posterior_mean"].values, ds["posterior_mean"].values)
    np.testing.assert_array_equal(thin["posterior_var"].values, ds["posterior_var"].values)
    recorded = {n: thin[n].values for n in ("rank_true", "covered90", "mcse_var", "rhat",
                                            "ess")}
    assert recheck_diagnostics(thin["posterior_draws"].values, thin["f_true_eval"].values, 4,
                               recorded) == []
    assert thin["rank_true"].dtype == ds["rank_true"].dtype
    postrisk.validate_store(thin, kind="task")


def test_the_suite_packs_verifies_and_get_task_loads_from_it(stores, tmp_path, monkeypatch):
    root, tasks, _, _ = stores
    (root / "checks").mkdir(exist_ok=True)
    # the checks' instance table: every instance valid, each BNN row with its max R̂
    pd.DataFrame([{**vars(k), "valid": True,
                   "max_rhat": float(open_zarr(tasks[k])["rhat"].max()) if k.prior == "bnn"
                   else float("nan")} for k in KEYS]).to_csv(
        root / "checks" / "instances.csv", index=False)
    out = tmp_path / "suite"
    # GP thinned to 100 draws; BNN keeps its 200 (4 chains of 50: thinner chains' R̂ would no
    # longer be the one that made the seed valid)
    manifest = build_embedded_suite(root, out, draws={"gp": 100, "bnn": 200})
    assert {i["prior"]: i["draws"] for i in manifest["instances"]} == {"gp": 100, "bnn": 200}
    assert verify_release(out)[0] == []
    monkeypatch.setattr(embedded, "embedded_root", lambda: out)
    task = postrisk.get_task(KEYS[0].label)
    assert isinstance(task, postrisk.Task) and task.posterior_draws.shape == (100, 20)
    np.testing.assert_array_equal(task.posterior_var,
                                  postrisk.Task.load(tasks[KEYS[0]]).posterior_var)
    with pytest.raises(LookupError, match="not in the small suite inside the package; it "
                                          "holds .*postrisk download"):
        postrisk.get_task("concrete/hbart/bump/balanced/0")


def test_the_packaged_suite_holds_each_prior_loads_and_verifies():
    """The suite shipped in the package: Concrete instances of all three priors, each loaded by
    get_task as the same Task the full suite gives, thinned from the paper's D = 1,000 draws;
    the whole suite verifies."""
    keys = embedded.embedded_keys()
    assert {k.split("/")[1] for k in keys} == {"gp", "hbart", "bnn"}
    assert {k.split("/")[0] for k in keys} == {"concrete"}
    for key in keys:
        task = postrisk.get_task(key)
        assert task.key["prior"] == key.split("/")[1]
        assert task.posterior_draws.shape[0] == embedded.DRAWS_PER_PRIOR[task.key["prior"]]
        assert task.x_eval.shape[0] == 515 and task.x_train.shape[0] == 348  # paper sizes
        assert json.loads(task.ds.attrs["thinned"])["from_draws"] == 1000
    problems, counts = verify_release(embedded.embedded_root())
    assert problems == [] and counts["instances"] == len(keys)
    size = sum(p.stat().st_size for p in embedded.embedded_root().rglob("*") if p.is_file())
    assert size < 10_000_000  # a few MB in the wheel
