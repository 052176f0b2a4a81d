"""The BNN-first pass (docs/design.md, "Seeds"): a cell's seed selection written by a first
invocation (target ``seed_selections``) lets the next build the GP posteriors on the valid seeds
only. With one seed's BNN instance made to fail the R̂ rule, the two passes end with the same
valid seeds, the same stores for them and the same scores and tables as one invocation, which
builds every candidate's posterior."""

import json
import shutil
import sys

import pandas as pd
import pytest
import yaml
import zarr

from postrisk.core.io import array_digest
from postrisk.tasks.store import CONTENT_DIGESTS
from tests.workflow_helpers import REPO, snakemake

sys.path.insert(0, str(REPO / "benchmarks"))

from compare_results import compare_csv, compare_store  # noqa: E402

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

SMOKE = str(REPO / "presets" / "smoke.yaml")
#: Over the smoke preset: one cell with GP and BNN instances on three candidate seeds, two used;
#: BNN chains long enough that every seed converges unless made not to.
GRID = {"datasets": ["concrete"], "priors": ["gp", "bnn"], "noise_modes": ["smooth_monotone"],
        "coverages": ["balanced"], "methods": ["blr"], "tuning": {"methods": []},
        "disentanglement": {"methods": []}, "seeds": {"valid_per_cell": 2, "candidates": 3},
        "posterior": {"bnn": {"chains": 2, "warmup": 150, "samples": 200}}}
CELL = "concrete/{prior}/smooth_monotone/balanced"
SELECTION = "results/checks/seeds/concrete/smooth_monotone/balanced.json"


def _run(workdir, config, *targets):
    run = snakemake(workdir, *targets, "--cores", "2", "--configfile", SMOKE, config)
    assert run.returncode == 0, run.stderr[-4000:]
    return run


def test_two_passes_build_the_valid_seeds_posteriors_only_and_score_the_same(tmp_path):
    config = tmp_path / "bnn_first.yaml"
    config.write_text(yaml.safe_dump(GRID))
    two, one = tmp_path / "two", tmp_path / "one"
    two.mkdir()
    _run(two, str(config), "seed_selections")
    assert not (two / "results/tasks" / CELL.format(prior="gp")).exists()
    # inject a failing seed: seed 1's BNN instance did not converge
    bnn_store = two / "results/tasks" / CELL.format(prior="bnn") / "1.zarr"
    group = zarr.open_group(str(bnn_store), mode="r+")
    group["rhat"][...] = 1.2
    # as the sampler would have written it: the digest it records is of the new values (a value
    # changed without it is a damaged store, refused on loading)
    digests = json.loads(group.attrs[CONTENT_DIGESTS])
    digests["rhat"] = array_digest((group["rhat"][...], group["rhat"].dtype))
    group.attrs[CONTENT_DIGESTS] = json.dumps(digests, sort_keys=True)
    (two / SELECTION).unlink()
    shutil.copytree(two, one, symlinks=True)

    _run(two, str(config), "seed_selections")
    selection = json.loads((two / SELECTION).read_text())
    assert selection["valid"] == [0, 2] and selection["dropped"] == [1]
    _run(two, str(config))   # the second invocation: plans from the selection
    _run(one, str(config))   # one invocation: no selection known when planning
    assert json.loads((one / SELECTION).read_text()) == selection

    def built(root, kind, prior):
        folder = root / "results" / kind / CELL.format(prior=prior)
        return sorted(int(p.stem) for p in folder.glob("*.zarr"))

    assert built(one, "tasks", "gp") == [0, 1, 2]
    assert built(two, "tasks", "gp") == [0, 2]  # not the dropped seed's posterior
    for root in (one, two):
        assert built(root, "samples", "gp") == built(root, "tasks", "bnn") == [0, 1, 2]
    for seed in (0, 2):
        rel = f"results/tasks/{CELL.format(prior='gp')}/{seed}.zarr"
        assert compare_store(one / rel, two / rel, 0.0) == []
    for rel in (f"results/scores/{CELL.format(prior='gp')}.csv",
                f"results/scores/{CELL.format(prior='bnn')}.csv",
                "results/tables/scores.csv", "results/tables/table8.csv"):
        assert compare_csv(one / rel, two / rel, {}) == [], rel
    # Table 3 alike, but for the count of stores built and not used
    table3 = {root: pd.read_csv(root / "results/checks/table3.csv").set_index("prior")
              for root in (one, two)}
    assert table3[one].loc["gp", "instances_dropped"] == 1
    assert table3[two].loc["gp", "instances_dropped"] == 0
    pd.testing.assert_frame_equal(table3[one].drop(columns="instances_dropped"),
                                  table3[two].drop(columns="instances_dropped"))
    scores = pd.read_csv(two / f"results/scores/{CELL.format(prior='gp')}.csv")
    assert sorted(scores["seed"].unique()) == [0, 2]
    instances = pd.read_csv(two / "results/checks/instances.csv")
    assert not ((instances["prior"] == "gp") & (instances["seed"] == 1)).any()
