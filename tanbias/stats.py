"""Small statistics used to check claims numerically (all chapters).

* :func:`loglog_slope` fits ``log y = slope * log x + intercept`` and gives a
  t-based confidence interval for the slope (a scaling law is a slope).
* :func:`interval_word` is the one rule that turns an interval into a word:
  ``"positive"``, ``"negative"`` or ``"indistinguishable"`` (from 0);
  every verdict of the book that rests on an interval's sign uses it.
* :func:`check_close`, :func:`check_in_interval`, :func:`check_greater`,
  :func:`check_less`, :func:`check_sign` (an interval's word) and
  :func:`check_word` (a verdict rule's word) return a :class:`Check`: measured vs predicted with a
  tolerance (or a one-sided bound), printable as one line, rendered in
  notebooks, and ``.require()``-able so that a regression breaks the strict
  book build. A prediction the measurement is expected to *reject* is shown
  with ``.refute()``, which fails the build if the check unexpectedly passes.

Chapters show every check the same way: ``display(check.require())`` (or
``.refute()``), so the reader sees a rendered PASS/FAIL line.
"""

from __future__ import annotations

import dataclasses
import html
import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as _st

from tanbias._checks import check_array, check_real
from tanbias.errors import ParameterError
from tanbias.palette import FAIL_COLOR, PASS_COLOR

__all__ = ["SlopeFit", "loglog_slope", "Check", "check_close", "check_in_interval", "check_greater",
           "check_less", "SIGN_WORDS", "interval_word", "BAND_WORDS", "band_word", "check_sign", "check_word",
           "check_words"]


@dataclass(frozen=True)
class SlopeFit:
    """Least-squares line in log-log coordinates.

    Attributes
    ----------
    slope, intercept : float
        ``log y ~ slope * log x + intercept`` (natural logs).
    ci_low, ci_high : float
        Confidence interval of the slope (Student t, ``n - 2`` dof).
    r2 : float
        Coefficient of determination of the log-log fit.
    confidence : float
        Level of the interval.
    n : int
        Number of points fitted.
    """

    slope: float
    intercept: float
    ci_low: float
    ci_high: float
    r2: float
    confidence: float = 0.95
    n: int = 0

    def __str__(self) -> str:
        return (f"slope {self.slope:.4g} [{self.ci_low:.4g}, {self.ci_high:.4g}] "
                f"({100 * self.confidence:g}% CI, n={self.n}, R^2={self.r2:.4f})")

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies inside the slope's confidence interval."""
        return bool(self.ci_low <= value <= self.ci_high)


def loglog_slope(x, y, confidence: float = 0.95) -> SlopeFit:
    """Fit the slope of ``log y`` against ``log x`` with a confidence interval.

    Parameters
    ----------
    x, y : array_like, shape (n,)
        Positive values, ``n >= 3``.
    confidence : float in (0, 1)
        Level of the two-sided interval for the slope.

    Returns
    -------
    SlopeFit

    Raises
    ------
    ParameterError
        Shapes differ, fewer than 3 points, non-positive or non-finite values.

    Example
    -------
    >>> x = np.array([1.0, 2.0, 4.0, 8.0])
    >>> fit = loglog_slope(x, 3 * x**2)
    >>> round(fit.slope, 6), round(fit.r2, 6)
    (2.0, 1.0)
    """
    confidence = check_real("confidence", confidence, 0, 1,
                            hint="Pass a confidence level such as 0.95.")
    x = check_array("x", x, shape=(None,))
    y = check_array("y", y, shape=(x.shape[0],),
                    hint=f"x and y must have the same length ({x.shape[0]}).")
    if x.shape[0] < 3:
        raise ParameterError(
            f"x has {x.shape[0]} points: valid range is [3, inf) points for a slope "
            f"with a confidence interval. Pass more radii.")
    for name, arr in (("x", x), ("y", y)):
        if np.any(arr <= 0):
            i = int(np.argmax(arr <= 0))
            raise ParameterError(
                f"{name}[{i}]={arr[i]!r} is out of range: valid range is (0, inf). "
                f"A log-log fit needs positive values; drop empty bins or zero counts.")
    lx, ly = np.log(x), np.log(y)
    if np.ptp(lx) == 0:
        raise ParameterError("x has all values equal: valid range is at least two distinct x. "
                             "Pass a range of radii.")
    res = _st.linregress(lx, ly)
    n = x.shape[0]
    if n > 2:
        tq = _st.t.ppf(0.5 + confidence / 2.0, n - 2)
        half = tq * res.stderr
    else:
        half = math.inf
    return SlopeFit(float(res.slope), float(res.intercept), float(res.slope - half),
                    float(res.slope + half), float(res.rvalue ** 2), confidence, n)


def _fmt(v) -> str:
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    v = float(v)
    if v == 0:
        return "0"
    if v == int(v) and abs(v) < 1e6:
        return str(int(v))
    return f"{v:.4g}"


@dataclass(frozen=True)
class Check:
    """Outcome of comparing a measured number with a prediction.

    Attributes
    ----------
    label : str
        What was measured (e.g. ``"slope of ||n|| vs t"``).
    measured, predicted : float
        For interval checks ``predicted`` is the interval midpoint.
    tolerance : float
        Allowed absolute deviation (for interval checks: half-width).
    passed : bool
    lo, hi : float or None
        The interval, for :func:`check_in_interval`; one of them is None for the
        one-sided :func:`check_greater` / :func:`check_less`.
    expected_to_fail : bool
        Set by :meth:`refute`: the check shows a prediction that the
        measurement rejects, and it did fail.

    Example
    -------
    >>> c = check_close("slope of ||n|| vs t", 2.003, 2, atol=0.05)
    >>> print(c)
    slope of ||n|| vs t: measured 2.003, predicted 2, tolerance ±0.05 -> PASS
    >>> c.require().passed
    True
    """

    label: str
    measured: float
    predicted: float
    tolerance: float
    passed: bool
    lo: float | None = None
    hi: float | None = None
    expected_to_fail: bool = False
    #: for :func:`check_sign` and :func:`check_word`: the word measured and the word expected
    words: tuple[str, str] | None = None

    def __str__(self) -> str:
        verdict = "PASS" if self.passed else "FAIL"
        if self.expected_to_fail:
            verdict += " (expected: the measurement rejects this prediction)"
        if self.words is not None:
            where = (f"interval [{_fmt(self.lo)}, {_fmt(self.hi)}], "
                     if self.lo is not None and self.hi is not None else "")
            return f"{self.label}: {where}{self.words[0]}, expected {self.words[1]} -> {verdict}"
        if self.lo is not None and self.hi is not None:
            return (f"{self.label}: measured {_fmt(self.measured)}, expected in "
                    f"[{_fmt(self.lo)}, {_fmt(self.hi)}] -> {verdict}")
        if self.lo is not None:
            return f"{self.label}: measured {_fmt(self.measured)}, expected > {_fmt(self.lo)} -> {verdict}"
        if self.hi is not None:
            return f"{self.label}: measured {_fmt(self.measured)}, expected < {_fmt(self.hi)} -> {verdict}"
        return (f"{self.label}: measured {_fmt(self.measured)}, predicted "
                f"{_fmt(self.predicted)}, tolerance ±{_fmt(self.tolerance)} -> {verdict}")

    def __bool__(self) -> bool:
        return bool(self.passed)

    def require(self) -> "Check":
        """Return ``self`` if the check passed, else raise ``AssertionError``.

        Raises
        ------
        AssertionError
            With the one-line summary as message.
        """
        if not self.passed:
            raise AssertionError(str(self))
        return self

    def refute(self) -> "Check":
        """Assert that the check *failed*: the measurement rejects this prediction.

        Use it for a statement the book shows to be wrong (e.g. the mean-gradient
        form of a proposition): if a regression made it pass, the build breaks.

        Returns
        -------
        Check
            A copy marked ``expected_to_fail``, rendered as an expected failure.

        Raises
        ------
        AssertionError
            If the check passed.

        Example
        -------
        >>> print(check_close("mean-gradient slope", 0.003, 1.0, atol=0.1).refute())
        mean-gradient slope: measured 0.003, predicted 1, tolerance ±0.1 -> FAIL (expected: the measurement rejects this prediction)
        >>> check_close("slope", 1.0, 1.0, atol=0.1).refute()
        Traceback (most recent call last):
        ...
        AssertionError: expected to fail but passed: slope: measured 1, predicted 1, tolerance ±0.1 -> PASS
        """
        if self.passed:
            raise AssertionError(f"expected to fail but passed: {self}")
        return dataclasses.replace(self, expected_to_fail=True)

    def _repr_markdown_(self) -> str:
        mark = "✅" if (self.passed or self.expected_to_fail) else "❌"
        return f"{mark} {str(self)}"

    def _repr_html_(self) -> str:
        color = PASS_COLOR if (self.passed or self.expected_to_fail) else FAIL_COLOR
        return (f'<div class="tanbias-check" style="border-left:4px solid {color};'
                f'padding:2px 8px"><code>{html.escape(str(self))}</code></div>')


def check_close(label: str, measured, predicted, rtol=None, atol=None) -> Check:
    """Compare ``measured`` with ``predicted`` within ``atol + rtol * |predicted|``.

    Parameters
    ----------
    label : str
        What is being checked; appears in the printed line.
    measured, predicted : float
    rtol, atol : float >= 0 or None
        Relative and absolute tolerances; at least one must be given.

    Returns
    -------
    Check

    Raises
    ------
    ParameterError
        Non-finite values, negative tolerances, or no tolerance given.

    Example
    -------
    >>> print(check_close("eta_g", 0.0198, 0.02, rtol=0.05))
    eta_g: measured 0.0198, predicted 0.02, tolerance ±0.001 -> PASS
    """
    measured = check_real("measured", measured)
    predicted = check_real("predicted", predicted)
    if rtol is None and atol is None:
        raise ParameterError("rtol=None and atol=None: valid range is at least one tolerance "
                             "in [0, inf). Pass rtol= or atol=.")
    r = 0.0 if rtol is None else check_real("rtol", rtol, 0, lo_open=False)
    a = 0.0 if atol is None else check_real("atol", atol, 0, lo_open=False)
    tol = a + r * abs(predicted)
    return Check(str(label), measured, predicted, tol, bool(abs(measured - predicted) <= tol))


def check_in_interval(label: str, value, lo, hi) -> Check:
    """Check that ``lo <= value <= hi`` (e.g. a predicted slope inside a CI).

    Example
    -------
    >>> print(check_in_interval("predicted slope in CI", 1.0, 0.97, 1.04))
    predicted slope in CI: measured 1, expected in [0.97, 1.04] -> PASS
    """
    value = check_real("value", value)
    lo = check_real("lo", lo)
    hi = check_real("hi", hi, lo=lo, lo_open=False, hint="Pass lo <= hi.")
    return Check(str(label), value, 0.5 * (lo + hi), 0.5 * (hi - lo),
                 bool(lo <= value <= hi), lo, hi)


def check_greater(label: str, value, bound) -> Check:
    """One-sided check: ``value > bound`` (e.g. a ratio that must exceed 1).

    Example
    -------
    >>> print(check_greater("closed / cut loop", 42.9, 1.0))
    closed / cut loop: measured 42.9, expected > 1 -> PASS
    >>> check_greater("ratio", 0.5, 1.0).passed
    False
    """
    value = check_real("value", value)
    bound = check_real("bound", bound)
    return Check(str(label), value, bound, 0.0, bool(value > bound), lo=bound)


def check_less(label: str, value, bound) -> Check:
    """One-sided check: ``value < bound``.

    Example
    -------
    >>> print(check_less("normal share", 1e-5, 1e-3))
    normal share: measured 1e-05, expected < 0.001 -> PASS
    """
    value = check_real("value", value)
    bound = check_real("bound", bound)
    return Check(str(label), value, bound, 0.0, bool(value < bound), hi=bound)


#: the words :func:`interval_word` gives an interval (of a difference, a slope, a correlation,
#: a log ratio): above 0, below 0, or containing it; ``"undecided"`` when it is not finite
SIGN_WORDS = ("positive", "negative", "indistinguishable", "undecided")


def interval_word(lo, hi) -> str:
    """The word of an interval: ``"positive"`` (it lies above 0), ``"negative"`` (below 0),
    ``"indistinguishable"`` (it contains 0) or ``"undecided"`` (a bound is NaN: too few runs).

    The one rule the book uses to read an interval's sign.

    Example
    -------
    >>> interval_word(0.06, 0.20), interval_word(-0.48, -0.24), interval_word(-0.1, 0.02)
    ('positive', 'negative', 'indistinguishable')
    >>> interval_word(float("nan"), 1.0)
    'undecided'
    """
    lo, hi = float(lo), float(hi)
    if math.isnan(lo) or math.isnan(hi):
        return "undecided"
    return "positive" if lo > 0 else "negative" if hi < 0 else "indistinguishable"


#: the words of :func:`band_word`
BAND_WORDS = ("positive", "negative", "indistinguishable", "mixed", "undecided")


def band_word(lo, hi) -> str:
    """The word of a band over layers (a simultaneous band: it holds at every layer at once).

    ``"positive"`` (``"negative"``) when the band lies above (below) 0 at every layer,
    ``"indistinguishable"`` when it contains 0 at every layer, ``"mixed"`` otherwise
    (above or below 0 at some layers only), ``"undecided"`` when no layer has a band.
    Layers without a band (NaN) are left out. The one rule the book reads a statement
    "at every layer" with; a count of layers whose own interval excludes 0 is not evidence
    about all of them.

    Example
    -------
    >>> band_word([0.1, 0.2], [0.3, 0.4]), band_word([-0.1, 0.2], [0.3, 0.4]), band_word([-0.1], [0.1])
    ('positive', 'mixed', 'indistinguishable')
    """
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    ok = np.isfinite(lo) & np.isfinite(hi)
    if not ok.any():
        return "undecided"
    words = {interval_word(a, b) for a, b in zip(lo[ok], hi[ok])}
    return words.pop() if len(words) == 1 else "mixed"


def check_sign(label: str, lo, hi, expected: str) -> Check:
    """Check that an interval reads ``expected`` (:func:`interval_word`).

    The check beside a sentence that states an interval's sign in words
    ("falls", "not detected", "as predicted").

    Example
    -------
    >>> print(check_sign("decoder slope", -0.3, -0.1, "negative"))
    decoder slope: interval [-0.3, -0.1], negative, expected negative -> PASS
    """
    if expected not in SIGN_WORDS:
        raise ParameterError(f"expected={expected!r} is out of range: valid values are {SIGN_WORDS}.")
    word = interval_word(lo, hi)
    return Check(str(label), float("nan"), float("nan"), 0.0, word == expected, float(lo), float(hi),
                 words=(word, expected))


def check_word(label: str, measured: str, expected: str) -> Check:
    """Check that a verdict rule gives the word ``expected`` (e.g. a property's verdict).

    Example
    -------
    >>> print(check_word("imprinted early", "supported", "supported"))
    imprinted early: supported, expected supported -> PASS
    """
    return Check(str(label), float("nan"), float("nan"), 0.0, str(measured) == str(expected),
                 words=(str(measured), str(expected)))


def check_words(words: dict, expected: dict) -> list:
    """One :func:`check_word` per ``name: word`` of ``expected``, against the measured ``words``
    (a chapter states its words by name; the analysis computes them once, by name).

    Raises
    ------
    KeyError
        For a name ``words`` does not have, naming it and the known ones.

    Example
    -------
    >>> [c.passed for c in check_words({"early": "supported", "late": "against"}, {"late": "against"})]
    [True]
    """
    unknown = sorted(set(expected) - set(words))
    if unknown:
        raise KeyError(f"expected={unknown!r}: no such word; the known names are {sorted(words)}")
    return [check_word(name, words[name], word) for name, word in expected.items()]
