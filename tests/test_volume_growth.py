"""Volume growth: slopes ~ d on manifolds, a change of slope off the junction of two sheets."""

import numpy as np
import pytest

from tanbias.errors import ParameterError
from tanbias.theory.manifolds import Sphere, StratifiedSet
from tanbias.theory.radial import Gaussian
from tanbias.theory.volume_growth import local_dimension_slopes, volume_growth


def within(fit, value, k=3.0):
    """|slope - value| within k standard errors (from the 95% interval)."""
    se = (fit.ci_high - fit.ci_low) / (2 * 1.96)
    return abs(fit.slope - value) < k * se


def test_counts_are_exact_on_a_small_example():
    pts = np.array([[0.0, 0.0, 0.0], [0.5, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 2.0]])
    assert volume_growth(pts, [0, 0, 0], [0.1, 0.6, 1.1, 5.0]).tolist() == [1, 2, 3, 4]


@pytest.mark.parametrize("d", [1, 2, 3])
def test_uniform_cube_slopes_equal_the_dimension(d):
    pts = np.random.default_rng(d).uniform(-1, 1, size=(60_000, d))
    ld = local_dimension_slopes(pts, np.zeros(d), (0.05, 0.2), (0.3, 0.9))
    assert within(ld.small, d) and within(ld.large, d)
    assert ld.large.ci_high - ld.large.ci_low < 0.3


def test_sphere_slopes_are_two():
    S = Sphere(2, R=1.0, D=5, seed=0)
    s = S.sample(100_000, Gaussian(2.0), np.random.default_rng(1))     # nearly uniform
    ld = local_dimension_slopes(s.y, S.mu, (0.03, 0.1), (0.1, 0.3))
    assert within(ld.small, 2) and within(ld.large, 2)


def test_off_junction_point_shows_the_second_sheet_entering():
    X = StratifiedSet(D=3, seed=0)
    s = X.sample(200_000, Gaussian(2.0), np.random.default_rng(0))
    at_junction = local_dimension_slopes(s.y, X.mu, (0.05, 0.25), (0.35, 0.7))
    off = local_dimension_slopes(s.y, X.point_on_sheet(0, 0.3), (0.05, 0.25), (0.35, 0.7))
    # on the junction both windows look 2-dimensional; 0.3 away, the second sheet enters the
    # large balls and N(r) = pi (2 r^2 - 0.09) grows faster than r^2
    assert abs(at_junction.change) < 0.2
    assert off.small.slope == pytest.approx(2, abs=0.2)
    assert off.large.ci_low > 2.2 and off.change > 0.3


@pytest.mark.slow
def test_confidence_intervals_cover_the_truth():
    hits = 0
    for seed in range(60):
        pts = np.random.default_rng(100 + seed).uniform(-1, 1, size=(20_000, 2))
        ld = local_dimension_slopes(pts, [0.0, 0.0], (0.05, 0.15), (0.2, 0.6))
        hits += ld.small.contains(2.0) + ld.large.contains(2.0)
    assert hits / 120 > 0.85


def test_bad_inputs():
    pts = np.zeros((10, 2))
    with pytest.raises(ParameterError, match="radii contains"):
        volume_growth(pts, [0, 0], [0.0, 1.0])
    with pytest.raises(ParameterError, match=r"center has shape \(3,\)"):
        volume_growth(pts, [0, 0, 0], [1.0])
    with pytest.raises(ParameterError, match=r"r_small\[1\]"):
        local_dimension_slopes(pts, [0, 0], (0.5, 0.1), (1, 2))
    with pytest.raises(ParameterError, match="holds no point"):
        local_dimension_slopes(pts, [5, 5], (0.1, 0.2), (0.3, 0.4))
