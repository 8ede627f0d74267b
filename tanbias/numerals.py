"""How the book writes a number for a reader: one minus sign, and a few significant digits.

Every number the book formats for a reader goes through here, whatever prints it: a glued number in
the prose (:func:`tanbias.book.prose.format_value`), a table's cell (:mod:`tanbias.book.tables`), a
verdict's effect (:mod:`tanbias.lab.analysis.findings`), a figure's title or label. So a negative
number reads the same everywhere:

* :data:`MINUS` is the minus sign, U+2212 (``−0.02``), never the hyphen-minus (``-0.02``) that
  Python's ``format`` writes; :func:`minus` puts it into a number Python has formatted;
* :func:`format_spec` is ``format(value, spec)`` with that sign (``+.2f``, ``.3g``, ``.0%`` ...);
* :func:`format_number` gives a number :data:`DEFAULT_DIGITS` significant digits, no trailing zero,
  as a table shows it.

Plotly's own tick labels already use U+2212 (plotly.js replaces the hyphen-minus of every tick it
formats); a number the book puts into a figure's text comes from here. Data meant for a program,
such as the numeric columns of a CSV file, keep the hyphen-minus that every parser reads.
"""

from __future__ import annotations

import math

from tanbias._checks import check_int

__all__ = ["MINUS", "DEFAULT_DIGITS", "MAX_DIGITS", "NA", "minus", "format_spec", "check_digits", "format_number"]

#: the minus sign of every number the book formats (U+2212)
MINUS = "\u2212"
#: significant digits of a number that is not whole, unless a caller asks for fewer
DEFAULT_DIGITS = 3
#: the most significant digits a table shows (two or three say it all for a ratio or a correlation)
MAX_DIGITS = 3
#: what a missing number (NaN) shows
NA = "–"


def minus(text: str) -> str:
    """``text``, a number as Python formats it, with each hyphen-minus as the minus sign :data:`MINUS`
    (the exponent's too). Only for the text of a number: a word's hyphen is not a minus.

    Example
    -------
    >>> minus("-0.25"), minus("2.1e-05"), minus("+0.07")
    ('−0.25', '2.1e−05', '+0.07')
    """
    return text.replace("-", MINUS)


def format_spec(value, spec: str = "") -> str:
    """``format(value, spec)`` with the minus sign :data:`MINUS`.

    Parameters
    ----------
    value : real number
    spec : str
        A Python format spec (``"+.2f"``, ``".3g"``, ``".0%"``, ``",d"``).

    Returns
    -------
    str

    Raises
    ------
    ValueError
        When ``value`` cannot be formatted with ``spec`` (Python's own error).

    Example
    -------
    >>> format_spec(-0.0192, "+.3f"), format_spec(0.46, ".2f"), format_spec(-0.065, ".0%")
    ('−0.019', '0.46', '−6%')
    """
    return minus(format(value, spec))


def check_digits(digits) -> int:
    """``digits`` if it is a number of significant digits the book prints (1 to :data:`MAX_DIGITS`), else a
    ParameterError naming it."""
    return check_int("digits", digits, 1, MAX_DIGITS, hint="Tables show two or three significant digits.")


def format_number(x, digits: int = DEFAULT_DIGITS, integer: bool = False) -> str:
    """``x`` with ``digits`` significant digits, or as an integer, with the minus sign :data:`MINUS`.

    Numbers with ``digits`` or more digits before the point print as whole numbers (1519, not
    1520); those below 0.0001 in scientific notation; zero as ``0``; no trailing zero after
    the point (``1`` for 1.0, ``0.06`` for 0.06: a number rounded upstream does not look more
    precise than it is); NaN as :data:`NA`.

    Parameters
    ----------
    x : real number
    digits : int
        Significant digits, 1 to :data:`MAX_DIGITS`.
    integer : bool
        Print ``x`` rounded to an integer (thousands grouped from 10,000 on).

    Returns
    -------
    str

    Raises
    ------
    ParameterError
        If ``digits`` is outside 1 to :data:`MAX_DIGITS`.

    Example
    -------
    >>> [format_number(v) for v in (301.442, 1.0, 0.0033166, 0.9612, -0.0624, 2.1e-5, 0.06)]
    ['301', '1', '0.00332', '0.961', '−0.0624', '2.1e−05', '0.06']
    >>> format_number(24384.0, integer=True), format_number(0.12345, digits=2)
    ('24,384', '0.12')
    """
    digits = check_digits(digits)
    x = float(x)
    if math.isnan(x):
        return NA
    if math.isinf(x):
        return "∞" if x > 0 else f"{MINUS}∞"
    if integer:
        n = int(round(x))
        return minus(f"{n:,}" if abs(n) >= 10_000 else str(n))
    if x == 0:
        return "0"
    if abs(x) >= 10 ** (digits - 1):               # as many digits before the point: a whole number
        return format_number(x, integer=True)
    rounded = float(f"{x:.{digits - 1}e}")        # rounding may carry: 9.996 -> 10.0
    exponent = math.floor(math.log10(abs(rounded)))
    if exponent >= digits - 1:
        return format_number(rounded, integer=True)
    if exponent < -4:
        mantissa, _, power = f"{rounded:.{digits - 1}e}".partition("e")
        return minus(f"{_trim(mantissa)}e{power}")
    return minus(_trim(f"{rounded:.{digits - 1 - exponent}f}"))


def _trim(text: str) -> str:
    """No trailing zero after the point: a number rounded upstream (0.06) is not shown as
    more precise than it is (0.0600)."""
    return text.rstrip("0").rstrip(".") if "." in text else text
