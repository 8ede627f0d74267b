"""Chapter-1 additions to tanbias.theory.volume_growth: two-sheet counts, local slopes, figures."""

import numpy as np
import plotly.io as pio
import pytest

from tanbias.errors import ParameterError
from tanbias.figures.volume_growth import growth_figure, stratified_growth_interactive
from tanbias.theory.manifolds import Sphere, StratifiedSet
from tanbias.theory.radial import Custom
from tanbias.theory.volume_growth import growth_profile, two_sheet_count, two_sheet_slope

FLAT = Custom(lambda t: 1.0 - 1e-6 * t, support=1.5, name="flat")


def test_two_sheet_count_closed_form():
    r = np.array([0.1, 0.3, 0.5])
    assert np.allclose(two_sheet_count(r, 0.0), 2 * np.pi * r ** 2)
    assert np.allclose(two_sheet_count(r, 0.3), np.pi * (r ** 2 + np.maximum(r ** 2 - 0.09, 0)))
    # sheets at 30 degrees: the other sheet is at distance delta sin(30 deg) = delta / 2
    assert np.allclose(two_sheet_count(r, 0.4, angle=np.pi / 6),
                       np.pi * (r ** 2 + np.maximum(r ** 2 - 0.04, 0)))
    with pytest.raises(ParameterError, match="delta=-0.1"):
        two_sheet_count(r, -0.1)


def test_counts_on_two_planes_match_the_closed_form():
    X = StratifiedSet(D=3, seed=0)
    n = 200_000
    y = X.sample(n, FLAT, np.random.default_rng(0)).y
    radii = np.array([0.2, 0.4, 0.6, 0.8])
    prof = growth_profile(y, X.point_on_sheet(0, 0.3), radii, window=2)
    expected = two_sheet_count(radii, 0.3, density=n / 2 / (np.pi * 1.5 ** 2))
    assert np.allclose(prof["counts"], expected, rtol=4 / np.sqrt(expected))


def test_local_slope_is_two_on_a_sphere_and_jumps_off_the_junction():
    S = Sphere(2, R=1.0, D=3, seed=0)
    ys = S.sample(100_000, FLAT, np.random.default_rng(1)).y
    radii = np.geomspace(0.1, 0.8, 10)
    prof = growth_profile(ys, S.mu, radii, window=4)
    assert np.all(np.abs(prof["local_slope"] - 2) < 0.15)
    X = StratifiedSet(D=3, seed=0)
    y = X.sample(200_000, FLAT, np.random.default_rng(2)).y
    prof = growth_profile(y, X.point_on_sheet(0, 0.3), radii, window=4)
    assert prof["local_slope"][0] < 2.3 and np.max(prof["local_slope"]) > 2.5


def test_growth_profile_window_is_checked():
    with pytest.raises(ParameterError, match="window=5"):
        growth_profile(np.zeros((5, 2)), [0.0, 0.0], [0.1, 0.2, 0.3], window=5)


def test_figure_and_interactive():
    X = StratifiedSet(D=3, seed=0)
    y = X.sample(20_000, FLAT, np.random.default_rng(0)).y
    S = Sphere(2, R=1.0, D=3, seed=0)
    ys = S.sample(20_000, FLAT, np.random.default_rng(1)).y
    radii = np.geomspace(0.1, 0.8, 8)
    prof = growth_profile(y, X.mu, radii)
    fig = growth_figure({"planes": prof}, {"predicted": (radii, 2 + 0 * radii)}, delta=0.0)
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis2.title.text
    assert len(fig.data) == 3 and "ξ = 0" in fig.layout.title.text
    demo = stratified_growth_interactive(X, y, ys, S.mu, (0.0, 0.2, 0.4), radii)
    sd = demo.static_dict()
    assert len(sd["frames"]) == 3 and len(pio.to_json(sd, validate=False)) < 300_000


def test_two_sheet_slope_is_the_log_derivative_of_the_count():
    r = np.geomspace(0.05, 0.9, 400)
    for delta in (0.0, 0.2, 0.4):
        slope = two_sheet_slope(r, delta)
        numeric = np.gradient(np.log(two_sheet_count(r, delta)), np.log(r))
        away = np.abs(r - delta) > 0.02               # the kink at r = delta
        assert np.allclose(slope[away], numeric[away], atol=0.02)
    assert np.all(two_sheet_slope(r, 0.0) == 2.0)
    assert two_sheet_slope([0.2001], 0.2)[0] == pytest.approx(4.0, abs=0.01)


def test_window_checks_against_two_sheet_prediction():
    from tanbias.stats import SlopeFit
    from tanbias.theory.volume_growth import (local_dimension_slopes, slope_stderr,
                                       two_sheet_window_slope, window_checks)
    assert slope_stderr(SlopeFit(2.0, 0.0, 1.9, 2.1, 0.99)) == pytest.approx(0.1 / 1.96)
    r = np.geomspace(0.35, 0.9, 12)
    assert two_sheet_window_slope(r, 0.0) == pytest.approx(2.0)
    assert two_sheet_window_slope(r, 0.3) > 2.0
    X = StratifiedSet(D=3, seed=0)
    y = X.sample(100_000, FLAT, np.random.default_rng(0)).y
    density = 100_000 / 2 / (np.pi * 1.5 ** 2)
    ld = local_dimension_slopes(y, X.point_on_sheet(0, 0.3), (0.05, 0.25), (0.35, 0.9))
    checks = window_checks("planes", ld, lambda rr: two_sheet_window_slope(rr, 0.3, density))
    assert [c.label for c in checks] == ["planes: slope, small window", "planes: slope, large window"]
    assert all(c.passed for c in checks)
    assert not window_checks("planes", ld, 2.0)[1].passed      # a manifold's slope is refuted
