"""tanbias.theory.direction_statistics: direction statistics and histograms (weighted or not), and
their comparison with the first-order and exact laws."""

import math

import numpy as np
import pytest

from tanbias.theory.direction_statistics import (angle_statistic, compare_histogram, direction_histogram,
                                          exact_histogram, first_order_histogram,
                                          sphere_share_statistic)
from tanbias.theory.directional_density import bias_amplitude, exact_bias_amplitude, uniform_bias_moments
from tanbias.errors import ParameterError
from tanbias.theory.manifolds import Cylinder, GeneralizedCylinder, Saddle, uniform_directions
from tanbias.theory.radial import Gaussian

RNG = np.random.default_rng


# ------------------------------------------------------------------ Monte Carlo histograms
def test_uniform_directions_give_a_flat_histogram():
    h = direction_histogram(uniform_directions(50_000, 2, RNG(3)), bins=10)
    assert h.chi_square(np.ones(10))[2] > 1e-3
    assert np.allclose(h.ref_prob, 0.1)


@pytest.mark.slow
def test_cylinder_monte_carlo_agrees_with_first_order_and_rejects_uniform():
    C, law = Cylinder(R=1.0, D=3, seed=0), Gaussian(0.35)
    s = C.sample(400_000, law, RNG(4))
    cmp = compare_histogram(C, law, s.u, bins=8)
    assert cmp.chi2_first_order[2] > 1e-3
    assert cmp.chi2_exact[2] > 1e-3
    assert cmp.histogram.chi_square(np.ones(8))[2] < 1e-6         # the test has power
    amp, se = bias_amplitude(s.u, C, return_stderr=True)
    assert abs(amp - exact_bias_amplitude(C, law)) < 4 * se
    assert amp > 3 * se


@pytest.mark.slow
def test_saddle_monte_carlo_agrees_with_exact_density():
    S, law = Saddle(1.0, D=3, seed=1), Gaussian(0.15)
    s = S.sample(20_000, law, RNG(5))
    cmp = compare_histogram(S, law, s.u, bins=6)
    assert cmp.chi2_exact[2] > 1e-3 and cmp.chi2_first_order[2] > 1e-3


@pytest.mark.slow
def test_ricci_term_lowers_the_density_on_s2_times_r():
    """Our derivation: on S^2_R x R the share s = |u_S|^2 has first-order density
    ~ 1 + eta [(5/24) s^2 - s/6] / R^2. The seed statement's reading (positive Ricci
    favoured) would give + s/6. Monte Carlo must pick ours and reject the other sign."""
    M, law = GeneralizedCylinder(2, 3, R=1.0, D=4, seed=0), Gaussian(0.3)
    eta = law.eta_g(3)
    stat = sphere_share_statistic(M)
    edges = np.linspace(0, 1, 11)
    s = M.sample(400_000, law, RNG(6))
    h = direction_histogram(s.u, edges, stat)
    ours = first_order_histogram(M, eta, edges, stat)
    # the flipped Ricci sign, bin-averaged against Beta(1, 1/2) (exact Gauss-Legendre in phi)
    x, w = np.polynomial.legendre.leggauss(40)
    mean_alt = (5 * 8 / 15 + 4 * 2 / 3) / 24
    alt = []
    for lo, hi in zip(np.arcsin(np.sqrt(edges[:-1])), np.arcsin(np.sqrt(edges[1:]))):
        phi = (lo + hi) / 2 + (hi - lo) / 2 * x
        sv, wt = np.sin(phi) ** 2, w * np.sin(phi)
        alt.append(np.sum(wt * (1 + eta * (5 * sv ** 2 + 4 * sv) / 24)) / np.sum(wt) / (1 + eta * mean_alt))
    assert h.chi_square(ours)[2] > 1e-3
    assert h.chi_square(np.array(alt))[2] < 1e-12
    exact = exact_histogram(M, law, edges, stat)
    assert np.max(np.abs(exact - ours)) < 0.001
    # the predicted shape is non-monotone: the dip at s ~ 0.4 is the Ricci term at work
    assert exact[4] < exact[0] and exact[4] < exact[-1]
    assert math.isclose(uniform_bias_moments(M)[0], 0.0, abs_tol=1e-15)


def test_weighted_histogram_reduces_to_binomial_for_equal_weights():
    u = uniform_directions(3000, 2, np.random.default_rng(3))
    a = direction_histogram(u, 8)
    b = direction_histogram(u, 8, weights=np.full(3000, 2.5))
    assert np.allclose(a.density, b.density) and np.allclose(a.stderr, b.stderr)
    assert np.allclose(a.counts, b.counts)


# ------------------------------------------------------------------ validation
def test_statistic_inputs_are_checked():
    with pytest.raises(ParameterError, match="statistic=None"):
        direction_histogram(np.ones((4, 3)) / math.sqrt(3))
    assert angle_statistic().d == 2
