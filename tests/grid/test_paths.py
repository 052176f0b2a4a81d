"""Paths come from one template per kind; an instance key is a condition plus a seed."""
import pytest


def test_paths_come_from_one_template_per_kind():
    from postrisk.grid.paths import condition_path, path
    from postrisk.planning.conditions import Condition
    from postrisk.tasks.key import KEY_COLUMNS, TaskKey

    cond = Condition("concrete", "gp", "bump", "ood")
    assert condition_path(cond, "task", seed=3) == "results/tasks/concrete/gp/bump/ood/3.zarr"
    assert condition_path(cond, "fit", method="dkl") == \
        "results/fits/concrete/gp/bump/ood/dkl.zarr"
    assert cond.cell == ("concrete", "bump", "ood")
    # an instance key is the condition plus the seed, its columns in one order
    key = TaskKey.of(cond, 3)
    assert key.condition == cond and key.label == "concrete/gp/bump/ood/3"
    assert tuple(key.as_dict()) == KEY_COLUMNS and TaskKey.from_attrs(key.as_dict()) == key
    # a field left out keeps its Snakemake wildcard; another root moves everything
    assert path("sample", prior="gp") == \
        "results/samples/{dataset}/gp/{noise}/{coverage}/{seed}.zarr"
    assert path("covariates", "elsewhere", dataset="wine") == "elsewhere/covariates/wine.zarr"
    with pytest.raises(KeyError, match="unknown output kind"):
        path("nope")
