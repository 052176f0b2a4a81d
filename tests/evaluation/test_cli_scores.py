"""postrisk.evaluation.cli_scores: what `postrisk evaluate` reads from its command line (the
`--set` settings, a misspelt one named as given) and the score table it prints, with the note
that says why a score is undefined."""

import pytest

from postrisk.evaluation.cli_scores import model_from_options, parse_settings, print_scores
from tests.evaluation.test_scoring import _ConstantAU


def test_settings_are_name_value_pairs_read_as_yaml():
    assert parse_settings(["n_neighbors=10", "scale=0.5", "flag=true", "sizes=[1, 2]"]) == {
        "n_neighbors": 10, "scale": 0.5, "flag": True, "sizes": [1, 2]}
    assert parse_settings(None) == {}
    with pytest.raises(ValueError, match="--set 'n_neighbors': expected name=value"):
        parse_settings(["n_neighbors"])


def test_a_misspelt_setting_is_named_as_it_was_given():
    model = model_from_options("examples.knn_uncertainty:KNNUncertainty", ["n_neighbors=7"])
    assert model.n_neighbors == 7
    with pytest.raises(ValueError, match=r"^--set n_neighbours=7: .*n_neighbours"):
        model_from_options("examples.knn_uncertainty:KNNUncertainty", ["n_neighbours=7"])


def test_the_score_table_carries_the_reason(capsys):
    import postrisk
    from postrisk.release.load import embedded_root

    scores = postrisk.evaluate(_ConstantAU(), prior="gp", root=embedded_root())
    assert scores["spearman_au"].isna().all() and scores["nll"].isna().all()
    assert scores["undefined"].str.startswith("ÂU is constant (0) over the evaluation "
                                              "points").all()
    assert scores["undefined"].str.endswith("nll, crps, coverage90 and width90 are "
                                            "undefined").all()
    print_scores(scores)
    assert f"note: on {len(scores)} task(s), ÂU is constant (0)" in capsys.readouterr().err
