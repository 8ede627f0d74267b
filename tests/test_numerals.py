"""tanbias.numerals: how the book writes a number, with one minus sign (U+2212) wherever it prints one."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tanbias.errors import ParameterError
from tanbias.numerals import MAX_DIGITS, MINUS, format_number, format_spec

finite = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12)


def test_the_minus_sign_is_u2212():
    assert MINUS == "\u2212" and MINUS != "-"


@pytest.mark.parametrize("value, spec, text", [
    (-0.0192, "+.3f", "−0.019"), (-0.46, ".2f", "−0.46"), (0.46, "+.2f", "+0.46"), (-0.065, ".0%", "−6%"),
    (-12000, ",d", "−12,000"), (-2.5e-6, ".2e", "−2.50e−06"), (2.5e-6, ".3g", "2.5e−06"),
])
def test_a_formatted_negative_number_uses_the_minus_sign(value, spec, text):
    assert format_spec(value, spec) == text


@settings(deadline=None)   # no test asserts a duration (a loaded machine is slow)
@given(finite, st.integers(1, MAX_DIGITS))
def test_no_number_the_book_formats_has_a_hyphen_minus(x, digits):
    """Significant digits or a format spec: a negative number starts with U+2212, and reads back."""
    for text in (format_number(x, digits), format_spec(x, "+.3g"), format_number(x, integer=True)):
        assert "-" not in text
        read = float(text.replace(MINUS, "-").replace(",", ""))
        assert text.startswith(MINUS) == (math.copysign(1, read) < 0), text


@pytest.mark.parametrize("x, digits, text", [
    (-0.0624, 3, "−0.0624"), (2.1e-5, 3, "2.1e−05"), (-1519.04, 3, "−1519"), (float("-inf"), 3, "−∞"),
    (float("nan"), 3, "–"), (0.0, 3, "0"),
])
def test_format_number_examples(x, digits, text):
    assert format_number(x, digits) == text


@pytest.mark.parametrize("digits", [0, MAX_DIGITS + 1, 2.5, "3"])
def test_digits_outside_the_allowed_range_are_refused(digits):
    with pytest.raises(ParameterError, match="digits"):
        format_number(1.234, digits)
