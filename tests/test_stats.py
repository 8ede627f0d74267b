"""Slope fits and Check objects."""

import numpy as np
import pytest

from tanbias.errors import ParameterError
from tanbias.stats import check_close, check_in_interval, loglog_slope


def test_exact_power_law_has_exact_slope():
    x = np.geomspace(0.01, 1, 10)
    fit = loglog_slope(x, 5 * x ** 2.5)
    assert fit.slope == pytest.approx(2.5, abs=1e-12)
    assert fit.intercept == pytest.approx(np.log(5), abs=1e-12)
    assert fit.r2 == pytest.approx(1.0)
    assert fit.ci_low == pytest.approx(2.5, abs=1e-6) and fit.ci_high == pytest.approx(2.5, abs=1e-6)


@pytest.mark.slow
def test_confidence_interval_coverage_is_nominal():
    rng = np.random.default_rng(0)
    x = np.geomspace(0.1, 10, 8)
    hits = 0
    for _ in range(400):
        y = 2 * x ** 1.5 * np.exp(0.1 * rng.standard_normal(x.size))
        hits += loglog_slope(x, y, 0.9).contains(1.5)
    assert 0.85 < hits / 400 < 0.95


def test_loglog_slope_rejects_bad_input():
    with pytest.raises(ParameterError, match="valid range is"):
        loglog_slope([1, 2, 3], [1, 0, 2])
    with pytest.raises(ParameterError, match="valid range is"):
        loglog_slope([1, 2], [1, 2])
    with pytest.raises(ParameterError):
        loglog_slope([1, 2, 3], [1, 2])
    with pytest.raises(ParameterError, match="confidence"):
        loglog_slope([1, 2, 3], [1, 2, 3], confidence=1.5)


def test_check_close_line_and_verdicts():
    c = check_close("slope of ||n|| vs t", 2.003, 2, atol=0.05)
    assert str(c) == "slope of ||n|| vs t: measured 2.003, predicted 2, tolerance ±0.05 -> PASS"
    assert c.passed and bool(c) and c.require() is c
    bad = check_close("slope of ||n|| vs t", 2.3, 2, atol=0.05)
    assert not bad.passed and str(bad).endswith("-> FAIL")
    with pytest.raises(AssertionError, match="measured 2.3, predicted 2"):
        bad.require()


def test_check_close_relative_tolerance():
    assert check_close("x", 1.04, 1.0, rtol=0.05).passed
    assert not check_close("x", 1.06, 1.0, rtol=0.05).passed
    assert check_close("x", 1.06, 1.0, rtol=0.05, atol=0.02).tolerance == pytest.approx(0.07)
    with pytest.raises(ParameterError):
        check_close("x", 1.0, 1.0)
    with pytest.raises(ParameterError):
        check_close("x", float("nan"), 1.0, rtol=0.1)


def test_check_in_interval_and_notebook_reprs():
    c = check_in_interval("predicted slope in CI", 1.0, 0.97, 1.04)
    assert c.passed and "[0.97, 1.04]" in str(c)
    assert not check_in_interval("x", 1.1, 0.97, 1.04).passed
    assert "PASS" in c._repr_markdown_() and "<div" in c._repr_html_()
    with pytest.raises(ParameterError):
        check_in_interval("x", 1.0, 2.0, 1.0)
