"""The seed policy per condition."""
from postrisk.grid import (
    validate_config,
)


def test_seed_policy_per_condition(paper):
    from postrisk.grid import SeedPolicy, condition_seeds

    policy = SeedPolicy(paper)
    assert policy.task_seeds == list(range(paper["seeds"]["candidates"]))
    with_bnn = ("concrete", "gp", "bump", "ood")
    assert policy.bnn_decides(with_bnn) and condition_seeds(paper, with_bnn) == policy.task_seeds
    no_bnn = validate_config(dict(paper, priors=["gp", "hbart"]))
    assert not SeedPolicy(no_bnn).bnn_decides(with_bnn)
    assert condition_seeds(no_bnn, with_bnn) == list(range(paper["seeds"]["valid_per_cell"]))
