"""``postrisk.covariates.parse``: a small hand-written ARFF text (quoted names and values,
missing values, comments, header case) and CSV bytes (BOM, Latin-1) parsed to the values read
off by hand; the errors for a file that cannot be read name what is wrong."""
import numpy as np
import pandas as pd
import pytest

from postrisk.covariates.parse import parse_arff, parse_raw

ARFF = """% a comment before the header
@RELATION 'toy data'

@ATTRIBUTE weight NUMERIC
@attribute 'grade name' {'Very Good',Fair}
@Attribute\tcount\tINTEGER
@ATTRIBUTE "ratio" real
@ATTRIBUTE label string

@DATA
% a comment inside the data
1.5,'Very Good',3,0.25,'a, b'

  2,Fair, 4 ,?,plain
-0.5,?,5,1e-3,'x'
"""


def test_arff_values_and_types_as_read_by_hand():
    frame = parse_arff(ARFF)
    assert list(frame.columns) == ["weight", "grade name", "count", "ratio", "label"]
    np.testing.assert_array_equal(frame["weight"], [1.5, 2.0, -0.5])
    np.testing.assert_array_equal(frame["count"], [3, 4, 5])
    np.testing.assert_array_equal(frame["ratio"], [0.25, np.nan, 0.001])
    for name in ("weight", "count", "ratio"):
        assert pd.api.types.is_numeric_dtype(frame[name])
    assert frame["grade name"].iloc[:2].tolist() == ["Very Good", "Fair"]
    assert pd.isna(frame["grade name"].iloc[2])  # '?' is missing in a nominal column too
    assert frame["label"].tolist() == ["a, b", "plain", "x"]  # quotes removed, comma kept


def test_arff_double_quoted_values_are_unquoted():
    frame = parse_arff('@attribute n numeric\n@attribute c {a,b}\n@data\n"7","b"\n')
    assert frame["n"].tolist() == [7] and frame["c"].tolist() == ["b"]


@pytest.mark.parametrize("text, message", [
    ("@attribute a numeric\n1\n", "without an @data section"),
    ("@relation r\n@data\n1\n", "without @attribute lines"),
    ("@attribute a numeric\n@attribute b numeric\n@data\n{0 1, 1 2}\n",
     "sparse ARFF is not supported"),
])
def test_arff_that_cannot_be_read_is_refused_with_the_reason(text, message):
    with pytest.raises(ValueError, match=message):
        parse_arff(text)


def test_parse_raw_reads_openml_bytes_as_arff():
    pd.testing.assert_frame_equal(parse_raw("openml", ARFF.encode()), parse_arff(ARFF))


def test_uci_csv_with_a_header_row_bom_and_latin1():
    text = "Temperature(\u00b0C),Rings,Sex\n-1.5,15,M\n2.25,7,F\n"
    for data in (text.encode("utf-8"), text.encode("utf-8-sig"), text.encode("latin-1")):
        frame = parse_raw("uci", data)
        assert list(frame.columns) == ["Temperature(\u00b0C)", "Rings", "Sex"]
        np.testing.assert_array_equal(frame["Temperature(\u00b0C)"], [-1.5, 2.25])
        np.testing.assert_array_equal(frame["Rings"], [15, 7])
        assert frame["Sex"].tolist() == ["M", "F"]


def test_unknown_source_kind_is_named():
    with pytest.raises(ValueError, match="no parser for source kind 'kaggle'"):
        parse_raw("kaggle", b"a,b\n1,2\n")
