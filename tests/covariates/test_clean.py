import numpy as np
import pandas as pd
import pytest

from postrisk.covariates.clean import (
    clean_covariates,
    fit_min_max,
    normalise_column_name,
    resolve_columns,
)


def hand_made():
    return pd.DataFrame({
        "Num A": [1.0, 2.0, 3.0, np.nan, 5.0, 6.0],
        "flag": ["yes", "no", "yes", "no", "no", "yes"],
        "colour": ["red", "green", "blue", "red", "green", "blue"],
        "outside": [np.nan, np.nan, "x", "y", "z", np.nan],  # not in the column list
        "as_text": ["10", "20", "30", "40", "50", "60"],
        "target": [0.1, 0.2, np.nan, 0.4, 0.5, 0.6],
    })


def test_column_list_applied_first_then_rules():
    out = clean_covariates(hand_made(), ["num_a", "flag", "colour", "as_text"], "target")
    # "outside" has missing values in rows 0, 1, 5 but is not listed: those rows survive.
    # Row 3 (missing Num A) and row 2 (missing target) are removed.
    assert out.rows_in == 6 and out.rows_with_missing == 2
    assert list(out.x.columns) == ["num_a", "flag", "as_text"]
    assert out.dropped_columns == {"colour": "categorical with 3 levels"}
    assert out.binary_levels == {"flag": ("no", "yes")}
    np.testing.assert_array_equal(out.x["flag"], [1.0, 0.0, 0.0, 1.0])
    np.testing.assert_array_equal(out.x["num_a"], [1.0, 2.0, 5.0, 6.0])
    np.testing.assert_array_equal(out.x["as_text"], [10.0, 20.0, 50.0, 60.0])
    np.testing.assert_array_equal(out.target, [0.1, 0.2, 0.5, 0.6])


def test_min_max_scaling_within_unit_interval():
    out = clean_covariates(hand_made(), ["num_a", "flag", "as_text"], "target")
    scaled = fit_min_max(out.x, "hand").apply(out.x)
    assert scaled.min().min() == 0.0 and scaled.max().max() == 1.0
    np.testing.assert_allclose(scaled["num_a"], [0.0, 0.2, 0.8, 1.0])


def test_scaling_with_another_datasets_constants_leaves_unit_interval():
    white = pd.DataFrame({"a": [0.0, 1.0, 2.0], "b": [10.0, 15.0, 20.0]})
    red = pd.DataFrame({"a": [-1.0, 1.0, 3.0], "b": [12.0, 15.0, 18.0]})
    scaled = fit_min_max(white, "white").apply(red)
    np.testing.assert_allclose(scaled["a"], [-0.5, 0.5, 1.5])  # outside [0, 1], as it should be
    np.testing.assert_allclose(scaled["b"], [0.2, 0.5, 0.8])
    with pytest.raises(ValueError, match="columns"):
        fit_min_max(white, "white").apply(red[["b", "a"]])


def test_constant_column_cannot_be_scaled():
    with pytest.raises(ValueError, match="constant"):
        fit_min_max(pd.DataFrame({"a": [1.0, 1.0]}), "x")


def test_column_matching_and_aliases():
    assert normalise_column_name("Whole weight") == normalise_column_name("whole_weight")
    mapping = resolve_columns(["Cement", "compressive_strength"], ["cement", "Strength"],
                              aliases={"compressive_strength": "Strength"})
    assert mapping == {"cement": "Cement", "Strength": "compressive_strength"}
    with pytest.raises(KeyError, match="not in the source table"):
        resolve_columns(["a"], ["b"])


def test_row_filter_keeps_the_listed_values_before_the_column_list():
    from postrisk.covariates.clean import select_rows

    frame = pd.DataFrame({"Cut ": ["Ideal", "Fair", "Ideal ", "Good"],
                          "carat": [1.0, 2.0, 3.0, 4.0]})
    kept = select_rows(frame, {"cut": ("Ideal",)})
    assert kept["carat"].tolist() == [1.0, 3.0]  # names matched normalised, values stripped
    assert select_rows(frame, {"cut": ("Fair", "Good")})["carat"].tolist() == [2.0, 4.0]
    assert select_rows(frame, {}) is frame
    with pytest.raises(ValueError, match=r"row filter cut: \['Idael'\] occur in no row.*'Fair'"):
        select_rows(frame, {"cut": ("Idael",)})
    with pytest.raises(KeyError, match="colour"):
        select_rows(frame, {"colour": ("D",)})
