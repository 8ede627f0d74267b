"""tanbias.book.tables: the one formatter of the book's tables (the built tables: test_book.py)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tanbias.errors import ParameterError
from tanbias.book.tables import (MAX_DIGITS, TABLE_CLASS, format_cell, format_number, format_table,
                            table_text, too_precise)

finite = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12)


@given(finite, st.integers(1, MAX_DIGITS))
def test_a_number_keeps_its_digits_and_its_value(x, digits):
    """Never more significant digits than asked, and the value within half a unit of the last."""
    text = format_number(x, digits)
    assert too_precise(text, digits) == []
    shown = float(text.replace(",", "").replace("−", "-"))
    if x == 0:
        assert text == "0"
    elif abs(x) >= 10 ** (digits - 1) - 0.5:
        assert abs(shown - x) <= 0.5 + 1e-9 * abs(x)           # a whole number
    else:
        assert math.isclose(shown, x, rel_tol=0.5 * 10 ** (1 - digits) * 1.0001)


@pytest.mark.parametrize("x, digits, text", [
    (301.4420, 3, "301"), (1.0, 3, "1"), (0.0033166, 3, "0.00332"), (9.996, 3, "10"),
    (0.99962, 2, "1"), (-0.0624, 3, "−0.0624"), (2.1e-5, 3, "2.1e−05"), (1519.04, 3, "1519"),
    (-0.06, 3, "−0.06"), (0.1, 3, "0.1"), (3.2149e-5, 2, "3.2e−05"), (12.04, 3, "12"),
    (0.00052521, 3, "0.000525"),
    (123456.7, 3, "123,457"), (0.5, 1, "0.5"), (float("nan"), 3, "–"), (float("-inf"), 3, "−∞"),
])
def test_number_examples(x, digits, text):
    assert format_number(x, digits) == text


def test_integers_print_whole_and_grouped():
    assert [format_number(v, integer=True) for v in (3.0, 8, 24384, -12000.4)] == \
        ["3", "8", "24,384", "−12,000"]


@pytest.mark.parametrize("digits", [0, 4, 2.5, "3"])
def test_digits_outside_the_allowed_range_are_refused(digits):
    with pytest.raises(ParameterError, match="digits"):
        format_number(1.234, digits)


def test_cells_intervals_missing_and_text():
    assert format_cell((np.float64(-0.0123), 0.0456)) == "[−0.0123, 0.0456]"
    assert format_cell((1, 2), integer=True) == "[1, 2]"
    assert format_cell(None) == format_cell(pd.NA) == format_cell(np.nan) == "–"
    assert format_cell(np.nan, na="no run yet") == "no run yet"
    assert format_cell(np.True_) == "True" and format_cell("≥ 10x") == "≥ 10x"


def test_whole_columns_print_as_integers_other_columns_with_digits():
    t = table_text(pd.DataFrame({"runs": [3.0, 6.0, np.nan], "kept": [1.0, 0.40213, 1.0],
                                 "types": [301.442, 316.4332, 12.5]}))
    assert t["runs"].tolist() == ["3", "6", "–"]
    assert t["kept"].tolist() == ["1", "0.402", "1"]
    assert t["types"].tolist() == ["301", "316", "12.5"]
    runs = table_text(pd.DataFrame({"runs": [np.nan, 6.0], "x": [np.nan, 0.5]}), na="no run yet",
                      na_columns={"runs": "0"})
    assert runs.to_dict("list") == {"runs": ["0", "6"], "x": ["no run yet", "0.5"]}


def test_no_stray_index_and_a_named_index_becomes_columns():
    plain = table_text(pd.DataFrame({"a": [1.5, 2.5]}))
    assert list(plain.columns) == ["a"]
    named = pd.DataFrame({"x": [1.5, 2.5]}, index=pd.MultiIndex.from_tuples(
        [("enc", "nat"), ("dec", "bal")], names=["kind", "regime"]))
    assert list(table_text(named).columns) == ["kind", "regime", "x"]
    # a transposed table: the columns' name heads the row labels
    shares = pd.DataFrame({"natural": [19.8], "balanced": [14.7]}, index=pd.Index(["en"], name="language"))
    assert list(table_text(shares.T).columns) == ["language", "en"]
    # a filtered table's row numbers are no index either
    rows = pd.DataFrame({"a": [1.5, 2.5, 3.5], "b": [0, 1, 0]})
    assert list(table_text(rows[rows["b"] == 0]).columns) == ["a", "b"]


def test_two_level_header_becomes_one():
    wide = pd.DataFrame([[5.6751, 0.0361]], columns=pd.MultiIndex.from_tuples([("loss", "mean"), ("loss", "std")]))
    t = table_text(wide)
    assert list(t.columns) == ["loss, mean", "loss, std"] and t.iloc[0].tolist() == ["5.68", "0.0361"]


def test_intervals_join_two_columns_where_the_first_was():
    t = table_text(pd.DataFrame({"kind": ["enc"], "hi": [1.1], "est": [1.0], "lo": [0.9]}),
                   intervals={"95 % interval": ("lo", "hi")})
    assert list(t.columns) == ["kind", "95 % interval", "est"]
    assert t.iloc[0].tolist() == ["enc", "[0.9, 1.1]", "1"]
    with pytest.raises(ParameterError, match="intervals"):
        table_text(pd.DataFrame({"lo": [1.0]}), intervals={"x": ("lo", "high")})


def test_a_frame_is_required():
    with pytest.raises(ParameterError, match="frame"):
        format_table([[1.0, 2.0]])


def test_html_has_the_class_no_index_and_escaped_text():
    html = format_table(pd.DataFrame({"rule": ["p <= 0.05"], "n": [3]})).to_html()
    assert f'class="dataframe {TABLE_CLASS}"' in html and "row_heading" not in html
    assert "p &lt;= 0.05" in html and ">3<" in html


@pytest.mark.parametrize("text, found", [
    ("effective types 301.4420 and 1.0000", ["301.4420", "1.0000"]),
    ("0.003308 | 0.00331 | -2.727 | 0.000", ["0.003308", "-2.727"]),
    ("[0.966, 1.04] ×1.40 −0.0624 3.21e-05 1.234e+02", ["1.234e+02"]),
    ("2.1e−05 −1.2345e−05", ["−1.2345e−05"]),
    ("24,384 tokens, steps 0..95, jupyter-book 1.0.4, 12.", []),
])
def test_too_precise_finds_long_floats_only(text, found):
    assert too_precise(text) == found
