"""The registry against the paper's Table 4 (the kernel families as in the authors' earlier
public code, which agree with Table 4)."""

import pytest

from postrisk.covariates.registry import (
    benchmark_datasets,
    get_dataset,
    registry,
    task_datasets,
)

TABLE4 = {  # name: (source, d, N, n_eval, n, noise_to_signal, kernel)
    "abalone": ("UCI 1", 7, 4177, 1500, 2084, 0.28, ("arccos0",)),
    "airfoil": ("UCI 291", 5, 1503, 751, 584, 0.32, ("matern12", "linear")),
    "concrete": ("UCI 165", 8, 1030, 515, 348, 0.23, ("rq", "linear")),
    "cpu_activity": ("OpenML 44978", 21, 8192, 1500, 1782, 0.25, ("matern52", "powexp")),
    "diamonds": ("OpenML 44979", 6, 53940, 1500, 2000, 0.32, ("rbf",)),
    "health_insurance": ("OpenML 44993", 4, 22272, 1500, 3279, 0.42, ("arccos0",)),
    "kin8nm": ("OpenML 44980", 8, 8192, 1500, 3136, 0.33, ("matern32",)),
    "protein": ("OpenML 44963", 9, 45730, 1500, 3223, 0.36, ("rq", "linear")),
    "qsar_fish": ("UCI 504", 6, 908, 454, 336, 0.41, ("matern32",)),
    "sarcos": ("OpenML 44976", 21, 48933, 1500, 4771, 0.42, ("matern52",)),
    "seoul_bike": ("UCI 560", 9, 8760, 1500, 1945, 0.21, ("periodic", "linear")),
    "space_ga": ("OpenML 45402", 6, 3107, 1500, 1260, 0.21, ("powexp",)),
    "white_wine": ("OpenML 44971", 11, 4898, 1500, 2668, 0.23, ("rbf",)),
}


#: The OOD study's offline pair: (in distribution, OOD).
OFFLINE_PAIR = ("diamonds_ideal", "diamonds_fair")


def test_table4_then_red_wine_then_the_offline_pair():
    assert list(registry()) == [*TABLE4, "red_wine", *OFFLINE_PAIR]
    assert benchmark_datasets() == list(TABLE4)
    assert task_datasets() == [*TABLE4, "diamonds_ideal"]
    assert {registry()[n].role for n in TABLE4} == {"benchmark"}


def test_offline_pair_is_two_cuts_of_diamonds():
    """The pair has Diamonds' columns and target, one cut each; the in-distribution half is a
    task dataset of its own with Diamonds' n, kernel and ρ, the OOD half covariates only,
    scaled with the in-distribution half's constants (as Red Wine with White Wine's)."""
    diamonds = get_dataset("diamonds")
    ideal, fair = map(get_dataset, OFFLINE_PAIR)
    for spec in (ideal, fair):
        assert (spec.columns, spec.target, spec.source) == (diamonds.columns, diamonds.target,
                                                             diamonds.source)
        assert spec.offline_source == diamonds.offline_source
        assert spec.n_eval == min(1500, spec.N // 2)
    assert ideal.rows == {"cut": ("Ideal",)} and fair.rows == {"cut": ("Fair",)}
    assert ideal.role == "study" and ideal.is_task_dataset and ideal.scaling_reference is None
    assert (ideal.n, ideal.kernel, ideal.noise_to_signal) == (diamonds.n, diamonds.kernel,
                                                              diamonds.noise_to_signal)
    assert fair.role == "ood" and not fair.is_task_dataset
    assert fair.scaling_reference == "diamonds_ideal"


@pytest.mark.parametrize("name", TABLE4)
def test_entry_matches_table4(name):
    spec = get_dataset(name)
    source, d, n_rows, n_eval, n, rho, kernel = TABLE4[name]
    facts = (spec.source.label, spec.d, spec.N, spec.n_eval, spec.n)
    assert facts == (source, d, n_rows, n_eval, n)
    assert spec.noise_to_signal == rho and spec.kernel == kernel
    assert len(spec.columns) == d
    assert spec.n_eval == min(1500, spec.N // 2)
    assert spec.n <= 0.6 * spec.N  # App. B.4: n at most 60% of the rows
    assert spec.verified is False and spec.provenance and spec.licence


def test_red_wine_scaled_with_white_wine():
    red, white = get_dataset("red_wine"), get_dataset("white_wine")
    assert red.source.label == "OpenML 44972" and red.scaling_reference == "white_wine"
    assert red.columns == white.columns and not red.is_task_dataset and red.role == "ood"


def test_unknown_dataset_names_allowed():
    with pytest.raises(KeyError, match="allowed: abalone"):
        get_dataset("diamnds")
