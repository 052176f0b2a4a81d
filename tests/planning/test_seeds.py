"""The seed policy per condition."""
from pathlib import Path

from postrisk.grid.config import validate_config


def test_seed_policy_per_condition(paper):
    from postrisk.planning.seeds import SeedPolicy, condition_seeds

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

    from postrisk.grid.config import ConfigError
    from postrisk.planning.seeds import SeedPolicy
    from postrisk.planning.units import (
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
    from postrisk.planning.seeds import SeedPolicy
    from postrisk.planning.units import fit_units, posterior_units, sample_units, score_units

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


def _write_selection(root, cell, valid, digest=None) -> Path:
    """A cell's seed-selection file under ``root`` as rule valid_seeds writes it (the valid
    seeds of ``valid`` and, unless None, the settings digest ``digest``)."""
    import json

    from postrisk.planning.seeds import selection_file
    from postrisk.tasks.validity import select_valid_seeds

    selection = select_valid_seeds({s: 1.0 if s in valid else 1.2 for s in range(max(valid) + 1)},
                                   len(valid))
    if digest is not None:
        selection["config_digest"] = digest
    target = Path(selection_file(cell, str(root)))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(selection, indent=2) + "\n")
    return target


def _seed_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "postrisk.planning.seeds"]


def test_known_selections_are_read_from_the_results_folder(paper, tmp_path, caplog):
    """A selection made under this config's settings is used; one that cannot be read, one
    without a digest (written before selections recorded one) and one of other settings are
    ignored, each with one warning naming the file."""
    from postrisk.planning.seeds import assumed_selections, known_selections, selection_digest

    cfg = _bnn_cell_config(paper)
    cell = ("concrete", "bump", "ood")
    assert known_selections(cfg, str(tmp_path)) == {}
    target = _write_selection(tmp_path, cell, [0, 1, 3], selection_digest(cfg))
    assert known_selections(cfg, str(tmp_path)) == {cell: (0, 1, 3)}
    assert assumed_selections(cfg) == {cell: (0, 1, 2)}
    assert not _seed_warnings(caplog)
    other = validate_config(dict(cfg, posterior=dict(cfg["posterior"], bnn=dict(
        cfg["posterior"]["bnn"], warmup=50))))
    for text, why in [("{not json", "cannot be read (JSONDecodeError)"),
                      (None, "records no settings digest"),
                      (selection_digest(other), "was made under other settings")]:
        if text is None:
            _write_selection(tmp_path, cell, [0, 1, 3])
        elif text.startswith("{"):
            target.write_text(text)
        else:
            _write_selection(tmp_path, cell, [0, 1, 3], text)
        caplog.clear()
        assert known_selections(cfg, str(tmp_path)) == {}
        said = _seed_warnings(caplog)
        assert len(said) == 1 and said[0].startswith(f"seed selection {target} {why}"), said
        assert "ignored; this plan builds the cell's GP and HBART posteriors on every " \
               "candidate seed" in said[0]


def test_the_selection_digest_covers_exactly_what_decides_the_selection(paper):
    """The digest changes with the scale, the BNN's sample settings (sizes, noise model, BNN
    prior), the BNN sampler's settings and the seed policy; not with another prior's sampler,
    the methods or the BNN's cells."""
    from postrisk.planning.seeds import selection_digest

    cfg = _bnn_cell_config(paper)
    base = selection_digest(cfg)

    def changed(**edits):
        return selection_digest(validate_config(dict(cfg, **edits))) != base

    def section(name, **values):
        return {name: dict(cfg[name], **values)}

    posterior = cfg["posterior"]
    assert changed(scale="demo")
    assert changed(**section("sizes", n_cap=200))
    assert changed(**section("noise_model", strength=0.5))
    assert changed(**section("bnn_prior", hidden=20))
    assert changed(posterior=dict(posterior, bnn=dict(posterior["bnn"], samples=10)))
    assert changed(seeds={"valid_per_cell": 2, "candidates": 5})
    assert changed(seeds={"valid_per_cell": 3, "candidates": 6})
    assert changed(seeds={"valid_per_cell": 3, "candidates": 5, "per_prior": {"bnn": 4}})
    assert not changed(posterior=dict(posterior, gp=dict(posterior["gp"], draws=400)))
    assert not changed(seeds={"valid_per_cell": 3, "candidates": 5, "per_prior": {"hbart": 2}})
    assert not changed(methods=["blr", "gp"], noise_modes=["bump", "edges"])


def test_a_demo_selection_under_the_paper_config_is_ignored(paper, repo, tmp_path, caplog):
    """A folder where the demo ran holds its four Concrete cells' selections (seed 0 valid): the
    paper's plan warns about each file and plans every candidate — the planned job count is a
    clean folder's — where using them would drop 12 of 13 seeds' GP and HBART posteriors in
    those cells."""
    import logging

    from postrisk.grid.config import load_config
    from postrisk.planning.planner import Planner
    from postrisk.planning.seeds import known_selections, selection_cells, selection_digest

    caplog.set_level(logging.WARNING, logger="postrisk")
    demo = load_config(repo / "config.yaml", repo / "presets" / "demo.yaml")
    files = [_write_selection(tmp_path, cell, [0], selection_digest(demo))
             for cell in selection_cells(demo)]
    assert len(files) == 4 and known_selections(demo, str(tmp_path)) == {
        cell: (0,) for cell in selection_cells(demo)}  # the demo's own plan uses them
    caplog.clear()
    planned = Planner(paper, known_selections(paper, str(tmp_path))).job_counts()
    said = _seed_warnings(caplog)
    assert [m.split()[2] for m in said] == [str(f) for f in files], said
    assert all("was made under other settings" in m for m in said)
    clean = Planner(paper).job_counts()
    assert planned == clean
    used = Planner(paper, {cell: (0,) for cell in selection_cells(demo)}).job_counts()
    n_candidates = paper["seeds"]["candidates"]
    assert sum(clean.values()) - sum(used.values()) == 4 * 2 * (n_candidates - 1)  # GP, HBART
