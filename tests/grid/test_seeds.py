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


def test_per_prior_seeds_build_a_prior_on_the_first_seeds_only(paper):
    """``seeds.per_prior``: the prior's instances (samples, posteriors) exist for its first k
    seeds only; its fits and scores use the valid ones among them (at most k); the other
    priors and the cell's seed selection are untouched."""
    import pytest

    from postrisk.grid import ConfigError, SeedPolicy
    from postrisk.grid.units import (
        fit_units,
        posterior_units,
        sample_units,
        score_units,
        valid_seeds_units,
    )

    cfg = validate_config(dict(paper, datasets=["concrete"], noise_modes=["bump"],
                               coverages=["ood"], methods=["blr"],
                               seeds={"valid_per_cell": 3, "candidates": 5,
                                      "per_prior": {"hbart": 2}}))
    policy = SeedPolicy(cfg)
    assert policy.prior_seeds("hbart") == [0, 1]
    assert policy.prior_seeds("gp") == policy.prior_seeds("bnn") == [0, 1, 2, 3, 4]
    built = {(u.key.prior, u.key.seed) for u in posterior_units(cfg, policy)}
    assert built == {(u.key.prior, u.key.seed) for u in sample_units(cfg, policy)}
    assert built == {(p, s) for p in ("gp", "bnn") for s in range(5)} | {("hbart", 0),
                                                                         ("hbart", 1)}
    (selection,) = valid_seeds_units(cfg, policy)
    assert len(selection.bnn_tasks) == 5 and selection.n_valid == 3
    for unit in [*fit_units(cfg, policy), *score_units(cfg, policy)]:
        hbart = unit.condition.prior == "hbart"
        assert unit.seeds == ((0, 1) if hbart else (0, 1, 2, 3, 4))
        assert unit.n_valid == (2 if hbart else 3)
    with pytest.raises(ConfigError, match="'seeds.per_prior'.*not in 'priors'"):
        validate_config(dict(paper, seeds={"valid_per_cell": 1, "candidates": 1,
                                           "per_prior": {"hbart_typo": 1}}))


def _bnn_cell_config(paper):
    return validate_config(dict(paper, datasets=["concrete"], noise_modes=["bump"],
                                coverages=["ood"], methods=["blr"],
                                seeds={"valid_per_cell": 3, "candidates": 5}))


def test_a_known_selection_builds_gp_and_hbart_posteriors_on_its_valid_seeds_only(paper):
    """The BNN-first pass: once a cell's seed selection is known when planning, its GP and
    HBART posteriors are built on the valid seeds it names only; every sample and every BNN
    posterior is built as before, the fits read the same samples, and the scores the same
    valid seeds (the cell's selection, read when they run)."""
    from postrisk.grid import SeedPolicy
    from postrisk.grid.units import fit_units, posterior_units, sample_units, score_units

    cfg = _bnn_cell_config(paper)
    cell = ("concrete", "bump", "ood")
    before, after = SeedPolicy(cfg), SeedPolicy(cfg, {cell: (0, 2, 4)})
    posteriors = {(u.key.prior, u.key.seed) for u in posterior_units(cfg, after)}
    assert posteriors == ({("bnn", s) for s in range(5)}
                          | {(p, s) for p in ("gp", "hbart") for s in (0, 2, 4)})
    assert len(posterior_units(cfg, before)) == 15
    assert sample_units(cfg, after) == sample_units(cfg, before)
    assert fit_units(cfg, after) == fit_units(cfg, before)
    for unit in score_units(cfg, after):
        bnn = unit.condition.prior == "bnn"
        assert unit.seeds == ((0, 1, 2, 3, 4) if bnn else (0, 2, 4))
        assert len(unit.tasks) == len(unit.seeds) and unit.selection
    # a selection of another cell changes nothing here
    other = SeedPolicy(cfg, {("concrete", "bump", "balanced"): (0,)})
    assert posterior_units(cfg, other) == posterior_units(cfg, before)


def test_known_selections_are_read_from_the_results_folder(paper, tmp_path):
    import json

    from postrisk.grid import assumed_selections, known_selections
    from postrisk.grid.seeds import selection_file

    cfg = _bnn_cell_config(paper)
    cell = ("concrete", "bump", "ood")
    assert known_selections(cfg, str(tmp_path)) == {}
    target = tmp_path / selection_file(cell, ".")
    target.parent.mkdir(parents=True)
    target.write_text("{not json")
    assert known_selections(cfg, str(tmp_path)) == {}  # unreadable: not known
    target.write_text(json.dumps({"valid": [0, 1, 3], "dropped": [2]}))
    assert known_selections(cfg, str(tmp_path)) == {cell: (0, 1, 3)}
    assert assumed_selections(cfg) == {cell: (0, 1, 2)}
