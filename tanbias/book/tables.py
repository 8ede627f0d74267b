"""The one way a table is shown: integers as integers, other numbers to a few significant digits.

Every table a chapter displays goes through :func:`format_table`, in the book and in JupyterLab
alike. The functions that compute a table (``tanbias.lab.analysis.*_report``, ``dose``,
``causal`` ...) keep returning numbers, so that checks and tests read full precision; this module
decides only how they print:

* a column whose numbers are all whole is shown as integers (``3``, ``24,384``);
* any other number with at most :data:`DEFAULT_DIGITS` significant digits (``301``,
  ``0.00332``, ``0.000525``, ``0.97``; ``2.1e−05`` below 0.0001), never more than
  :data:`MAX_DIGITS`, and no trailing zero (a number rounded upstream, 0.06, does not become
  0.0600); a negative one with the minus sign U+2212 (``−0.0624``): :func:`tanbias.numerals.format_number` is
  :func:`tanbias.numerals.format_number`, the book's one way of writing a number;
* an interval, a ``(lo, hi)`` pair or two columns named in ``intervals=``, as ``[lo, hi]``;
* no index that means nothing: row numbers (an unnamed integer index) are dropped, a named
  index becomes columns, and a header of two levels becomes one (``"loss, mean"``);
* missing values as ``–``; text as it is (escaped).

Units belong in the column names the chapter gives (``"held-out loss [nats]"``).
:func:`too_precise` is the converse check: the numbers in a printed text that carry more
significant digits than this module ever prints (the book test reads every rendered table with it).
"""

from __future__ import annotations

import math
import numbers
import re

from tanbias._checks import check_instance, check_int
from tanbias.errors import ParameterError
from tanbias.numerals import DEFAULT_DIGITS, MAX_DIGITS, NA, check_digits, format_number

__all__ = ["DEFAULT_DIGITS", "MAX_DIGITS", "TABLE_CLASS", "WIDE_CLASS", "WIDE_COLUMNS", "HEADER_WORDS", "CODE_NAME",
           "header", "format_number", "format_cell", "table_text", "format_table", "too_precise"]

#: CSS class of every table made here (the book test finds the tables that bypassed it); beside
#: pandas' own ``dataframe``, which the book's theme colours (light and dark)
TABLE_CLASS = "tanbias-table"
#: CSS class added to a table of :data:`WIDE_COLUMNS` columns or more, which the book sets smaller
WIDE_CLASS = "tanbias-wide"
#: from this many columns a table is printed smaller, to fit the page's column
WIDE_COLUMNS = 8


def _is_number(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _missing(v) -> bool:
    """None, NaN, pandas' NA and NaT."""
    return (v is None or (isinstance(v, float) and math.isnan(v))
            or type(v).__name__ in ("NAType", "NaTType"))


def format_cell(value, digits: int = DEFAULT_DIGITS, integer: bool = False, na: str = NA) -> str:
    """One cell: a number (:func:`tanbias.numerals.format_number`), an interval ``(lo, hi)`` as ``[lo, hi]``,
    a missing value as ``na``, anything else as its text.

    Example
    -------
    >>> format_cell((0.96612, 1.0357)), format_cell(float("nan")), format_cell("as predicted")
    ('[0.966, 1.04]', '–', 'as predicted')
    >>> format_cell((-0.0123, 0.0456))
    '[−0.0123, 0.0456]'
    >>> format_cell(True), format_cell(3, integer=True)
    ('True', '3')
    """
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(
            _is_number(v) or _missing(v) for v in value):
        return "[" + ", ".join(format_cell(v, digits, integer, na) for v in value) + "]"
    if _missing(value):
        return na
    if _is_number(value):
        return format_number(value, digits, integer=integer)
    return str(value)


def _whole_column(values) -> bool:
    """Whether every number of a column is whole (so it prints as integers)."""
    nums = [v for v in values if _is_number(v) and not _missing(v)]
    return bool(nums) and all(math.isfinite(v) and float(v).is_integer() for v in nums)


def _flat(label) -> str:
    if isinstance(label, tuple):
        return ", ".join(str(p) for p in label if str(p) != "")
    return str(label)


def table_text(frame, digits: int = DEFAULT_DIGITS, intervals: dict | None = None, na: str = NA,
               na_columns: dict | None = None):
    """The text of every cell of ``frame`` as the book shows it (module docstring).

    Parameters
    ----------
    frame : pandas.DataFrame
        The numbers, unrounded.
    digits : int
        Significant digits of the numbers that are not whole, 1 to :data:`MAX_DIGITS`.
    intervals : dict, optional
        ``{new column: (low column, high column)}``: each pair of columns becomes one column
        ``[lo, hi]``, where the first of the two was.
    na : str
        What a missing value shows.
    na_columns : dict, optional
        ``{column: text}``: what a missing value shows in those columns instead.

    Returns
    -------
    pandas.DataFrame
        Strings, one column per column shown (a named index first), index ``0 .. n-1``.

    Raises
    ------
    ParameterError
        If ``frame`` is not a DataFrame, ``digits`` is outside 1 to :data:`MAX_DIGITS`, or an
        interval does not name two columns of the table.

    Example
    -------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"runs": [3.0, 6.0], "ratio": [1.0, 0.40213],
    ...                   "lo": [0.9, 0.3512], "hi": [1.1, 0.45]})
    >>> table_text(t, intervals={"95 % interval": ("lo", "hi")}).to_dict("records")[1]
    {'runs': '6', 'ratio': '0.402', '95 % interval': '[0.351, 0.45]'}
    """
    import pandas as pd

    check_instance("frame", frame, pd.DataFrame)
    digits = check_digits(digits)
    df = frame.copy()
    # an unnamed integer index numbers the rows (0 .. n-1, or what a filter left of it): dropped
    row_numbers = (df.index.nlevels == 1 and df.index.name is None
                   and pd.api.types.is_integer_dtype(df.index.dtype))
    if not row_numbers:
        if df.index.nlevels == 1 and df.index.name is None:
            # e.g. a transposed table: its columns' name says what the rows are
            df.index.name = _flat(df.columns.name) if df.columns.name is not None else ""
        df = df.reset_index()
    df.columns = [_flat(c) for c in df.columns]
    for name, pair in (intervals or {}).items():
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and all(c in df.columns for c in pair)):
            raise ParameterError(f"intervals={{{name!r}: {pair!r}}} is not allowed: valid range is two "
                                 f"of the columns {list(df.columns)}. Name the low and the high column.")
        lo, hi = pair
        at = min(df.columns.get_loc(lo), df.columns.get_loc(hi))
        joined = pd.Series(list(zip(df[lo], df[hi])), index=df.index, dtype=object)
        df = df.drop(columns=[lo, hi])
        df.insert(at, name, joined)
    out = {}
    for column in df.columns:
        values = list(df[column])
        whole = _whole_column(values)
        text = (na_columns or {}).get(column, na)
        out[column] = [format_cell(v, digits, integer=whole, na=text) for v in values]
    return pd.DataFrame(out, columns=list(df.columns))


def format_table(frame, digits: int = DEFAULT_DIGITS, intervals: dict | None = None, na: str = NA,
                 na_columns: dict | None = None, links: dict | None = None, strong: tuple = ()):
    """``frame`` as the book shows a table: :func:`table_text`, as HTML without index.

    Parameters and errors are :func:`table_text`'s, and:

    links : dict, optional
        ``{column: hrefs}``, one address per row (``""`` for none): each such cell's text becomes a
        link (a section of the book, as a figure's cells link).
    strong : tuple
        Columns whose text is shown in bold (a verdict beside what qualifies it).

    Returns
    -------
    pandas.io.formats.style.Styler
        What a chapter displays; its HTML (``to_html()``) is a ``<table>`` of class
        :data:`TABLE_CLASS`, in the book and in JupyterLab.

    Example
    -------
    >>> import pandas as pd
    >>> html = format_table(pd.DataFrame({"effective types": [301.442], "kept": [1.0]})).to_html()
    >>> 'class="dataframe tanbias-table"' in html, ">301<" in html, "row_heading" in html
    (True, True, False)
    >>> WIDE_CLASS in format_table(pd.DataFrame({c: [1] for c in "abcdefghij"})).to_html()
    True
    >>> ">planned SD<" in format_table(pd.DataFrame({"planned_sd": [0.1]})).to_html()
    True
    >>> t = format_table(pd.DataFrame({"verdict": ["a<b"], "where": ["ch. 8"]}), links={"where": ["x.html#s"]},
    ...                  strong=("verdict",)).to_html()
    >>> ">ch. 8</a>" in t and 'href="x.html#s"' in t, "<strong>a&lt;b</strong>" in t
    (True, True)
    """
    import html

    import pandas as pd

    text = table_text(frame, digits=digits, intervals=intervals, na=na, na_columns=na_columns)
    for column in (*(links or {}), *strong):
        if column not in text.columns:
            raise ParameterError(f"links or strong names the column {column!r}: valid range is the table's columns "
                                 f"{list(text.columns)}.")
    for column, hrefs in (links or {}).items():
        if len(hrefs) != len(text):
            raise ParameterError(f"links[{column!r}] has {len(hrefs)} addresses: valid range is one per row "
                                 f"({len(text)}), '' where a cell has none.")
    renamed = {c: header(c) for c in text.columns}
    text.columns = list(renamed.values())
    classes = f"dataframe {TABLE_CLASS}" + (f" {WIDE_CLASS}" if text.shape[1] >= WIDE_COLUMNS else "")
    styler = text.style.format(escape="html")
    # the marked-up cells escape their own text (a formatter with escape= would escape the markup too)
    for column in strong:
        styler = styler.format(lambda v: f"<strong>{html.escape(v)}</strong>", subset=[renamed[column]])
    for column, hrefs in (links or {}).items():
        bold = column in strong
        for i, href in enumerate(hrefs):
            if href:
                styler = styler.format(
                    lambda v, h=href, b=bold: f'<a href="{html.escape(h)}">'
                    + (f"<strong>{html.escape(v)}</strong>" if b else html.escape(v)) + "</a>",
                    subset=pd.IndexSlice[[i], [renamed[column]]])
    return styler.hide(axis="index").set_table_attributes(f'class="{classes}"')


#: the words a reader sees for the package's column names where spaces for underscores are not enough (a
#: table's header is read, not typed): one place, so that a column reads the same in every table;
#: :func:`header` applies it
HEADER_WORDS = {
    # the gradient tables (chapter 4)
    "median_mean_ratio": "median ratio", "predicted_rms": "predicted RMS",
    "relative_to_type2": "relative to type 2", "rms_ratio": "RMS ratio",
    # the alignment test (chapters 7 and 8): early = the first 30 % of training, late = the last step
    "energy_proxy": "energy share, proxy", "random_share": "energy share, random", "p_energy": "p (energy)",
    "d_iso_proxy": "ΔIsoScore*, proxy", "d_iso_control_mean": "ΔIsoScore*, random (mean)",
    "enrichment_init": "enrichment at step 0", "enrichment_early": "enrichment, early",
    "enrichment_late": "enrichment, last step", "excess_iso_early": "excess ΔIsoScore*, early",
    "excess_iso_late": "excess ΔIsoScore*, last step", "p_energy_late_max": "largest p (energy), last step",
    "spearman_late": "ρ(log frequency, radius), last step",
    "late_over_peak": "last / peak", "peak_frac": "peak, % of training",
    # the power tables (chapter 10)
    "planned_sd": "planned SD", "realised_sd": "realised SD", "planned_detectable": "planned detectable change",
    "realised_detectable": "realised detectable change", "seed_p": "p (seeds)",
    # the measurement's costs and interval widths
    "peak_gb": "peak memory (GB)",
}
#: a name as code writes it: lower-case words joined by underscores
CODE_NAME = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")


def header(label: str) -> str:
    """A column's header in words: each code name in it (``planned_sd``) by :data:`HEADER_WORDS`, else with
    spaces for its underscores; a name with capitals (``W_U``) or in mathematics is kept.

    Example
    -------
    >>> header("planned_sd"), header("late_over_peak, max"), header("outside W_U"), header("some_new_name")
    ('planned SD', 'last / peak, max', 'outside W_U', 'some new name')
    """
    return CODE_NAME.sub(lambda m: HEADER_WORDS.get(m.group(0), m.group(0).replace("_", " ")), str(label))


#: a number printed with a point or an exponent, not inside a word or a version string
_PRINTED = re.compile(r"(?<![\w.])[-+−]?(\d*\.\d+|\d+\.)(?:[eE][-+−]?\d+)?(?![\w.])")


def too_precise(text: str, digits: int = MAX_DIGITS) -> list[str]:
    """The numbers in ``text`` printed with a point and more than ``digits`` significant digits.

    Whole numbers (no point) may be long; leading zeros do not count, trailing ones do; a zero
    counts its decimals.

    Example
    -------
    >>> too_precise("effective types 301.4420, kept 1.0000, ratio 1.04 [0.966, 1.12], n = 24384")
    ['301.4420', '1.0000']
    >>> too_precise("p = 2.10e-05, 0.000, steps 0..95, v1.0.4")
    []
    """
    digits = check_int("digits", digits, 1, None)
    found = []
    for m in _PRINTED.finditer(text):
        mantissa = re.split(r"[eE]", m.group(0))[0].lstrip("+-−")
        figures = mantissa.replace(".", "").lstrip("0")
        count = len(figures) if figures else len(mantissa.partition(".")[2])
        if count > digits:
            found.append(m.group(0))
    return found
