"""Directional bias: exact uniform moments, first order vs exact vs Monte Carlo, Ricci sign."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from tanbias.directional import (angle_statistic, bias_amplitude, bias_function,
                                 compare_histogram, direction_histogram, exact_bias_amplitude,
                                 exact_directional_density, exact_expectation, exact_histogram,
                                 first_order_density, first_order_histogram,
                                 predicted_bias_amplitude, sphere_quadrature,
                                 sphere_share_statistic, uniform_bias_moments)
from tanbias.errors import ParameterError
from tanbias.manifolds import (Cylinder, GeneralizedCylinder, Quadric, Saddle, Sphere,
                               uniform_directions)
from tanbias.radial import Gaussian, Laplace
from tanbias.stats import loglog_slope

RNG = np.random.default_rng


# ------------------------------------------------------------------ b(u) and its uniform moments
def test_cylinder_bias_function_is_cos4_over_6():
    R = 2.0
    C = Cylinder(R=R)
    th = np.linspace(0, np.pi, 17)
    u = np.stack([np.cos(th), np.sin(th)], 1)
    assert np.allclose(bias_function(C, u), np.cos(th) ** 4 / (6 * R ** 2), atol=1e-15)


def test_sphere_has_no_directional_bias():
    for d in (2, 3, 5):
        S = Sphere(d, R=1.3, D=d + 2)
        b = bias_function(S, uniform_directions(50, d, RNG(0)))
        assert np.allclose(b, b[0]) and uniform_bias_moments(S)[1] == pytest.approx(0, abs=1e-15)


@pytest.mark.parametrize("M", [
    Cylinder(R=0.7), Saddle(1.3), GeneralizedCylinder(2, 3, 1.0, D=4),
    GeneralizedCylinder(1, 4, 0.5, D=6),
    Quadric(np.array([[[1.0, 0.2, 0.0], [0.2, -0.4, 0.3], [0.0, 0.3, 0.8]],
                      [[0.5, 0.0, 0.1], [0.0, 0.0, 0.0], [0.1, 0.0, -1.0]]]), D=6),
], ids=repr)
def test_uniform_moments_are_exact(M):
    # degree-8 polynomial on the sphere: the product rule with n >= 5 nodes per axis is exact
    x, w = sphere_quadrature(M.d, 6)
    b = bias_function(M, x)
    mean, var = uniform_bias_moments(M)
    assert mean == pytest.approx(w @ b, rel=1e-12, abs=1e-15)
    assert var == pytest.approx(w @ b ** 2 - (w @ b) ** 2, rel=1e-10, abs=1e-15)


def test_cylinder_moments_closed_form():
    mean, var = uniform_bias_moments(Cylinder(R=1.0))
    assert mean == pytest.approx(3 / 8 / 6) and var == pytest.approx(17 / 128 / 36)
    assert predicted_bias_amplitude(Cylinder(R=1.0), 0.1) == pytest.approx(0.1 * 17 / 4608)


def test_first_order_density_has_mean_one_under_uniform():
    for M in (Saddle(2.0), GeneralizedCylinder(2, 3, 1.0, D=4)):
        x, w = sphere_quadrature(M.d, 8)
        assert w @ first_order_density(M, 0.05, x) == pytest.approx(1.0, abs=1e-13)


# ------------------------------------------------------------------ exact density
def test_exact_density_is_flat_on_sphere_and_paraboloid():
    u = uniform_directions(5, 2, RNG(0))
    assert np.allclose(exact_directional_density(Sphere(2), Gaussian(0.3), u), 1.0, atol=1e-12)
    assert np.allclose(exact_directional_density(Quadric(np.eye(2)), Gaussian(0.1), u), 1, atol=1e-9)


def test_paper_cylinder_check_reproduced_by_quadrature():
    # the first order: E_p[cos^4] - 3/8 matches eta_g/6 Var(cos^4) to 0.6% (sigma=0.1) and 2.5% (0.2)
    C = Cylinder(R=1.0)
    rel = {}
    for sigma in (0.1, 0.2):
        law = Gaussian(sigma)
        measured = exact_expectation(C, law, lambda u: u[:, 0] ** 4) - 3 / 8
        predicted = law.eta_g(2) / 6 * 17 / 128
        rel[sigma] = measured / predicted - 1
    assert 0.0055 < rel[0.1] < 0.0068
    assert 0.024 < rel[0.2] < 0.027


def test_quadrature_is_converged():
    C, law = Saddle(1.0), Gaussian(0.12)
    a = exact_bias_amplitude(C, law)
    b = exact_bias_amplitude(C, law, n_panels=24, n_dirs=128)
    assert a == pytest.approx(b, rel=1e-8)


@pytest.mark.parametrize("M", [Cylinder(R=1.0), Saddle(1.0)], ids=repr)
def test_bias_amplitude_is_first_order_in_eta(M):
    etas, amps = [], []
    for sigma in (0.01, 0.02, 0.04):
        law = Gaussian(sigma)
        etas.append(law.eta_g(2))
        amps.append(exact_bias_amplitude(M, law))
        assert amps[-1] == pytest.approx(predicted_bias_amplitude(M, etas[-1]), rel=0.01)
    fit = loglog_slope(etas, amps)
    assert fit.slope == pytest.approx(1.0, abs=0.005)


def test_first_order_breaks_down_at_large_eta():
    C, law = Cylinder(R=1.0), Gaussian(0.4)
    a = exact_bias_amplitude(C, law)
    assert abs(a / predicted_bias_amplitude(C, law.eta_g(2)) - 1) > 0.05


# ------------------------------------------------------------------ Monte Carlo
def test_uniform_directions_give_a_flat_histogram():
    h = direction_histogram(uniform_directions(50_000, 2, RNG(3)), bins=10)
    assert h.chi_square(np.ones(10))[2] > 1e-3
    assert np.allclose(h.ref_prob, 0.1)


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


def test_saddle_monte_carlo_agrees_with_exact_density():
    S, law = Saddle(1.0, D=3, seed=1), Gaussian(0.15)
    s = S.sample(20_000, law, RNG(5))
    cmp = compare_histogram(S, law, s.u, bins=6)
    assert cmp.chi2_exact[2] > 1e-3 and cmp.chi2_first_order[2] > 1e-3


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


# ------------------------------------------------------------------ validation
@settings(max_examples=30, deadline=None)
@given(st.one_of(st.floats(max_value=0.0), st.just(float("nan"))))
def test_non_positive_eta_is_rejected(eta):
    C = Cylinder()
    for call in (lambda: first_order_density(C, eta, [1.0, 0.0]),
                 lambda: predicted_bias_amplitude(C, eta)):
        with pytest.raises(ParameterError) as exc:
            call()
        msg = str(exc.value)
        assert msg.startswith("eta_g=") and "valid range is (0, inf)" in msg
        assert ("nan" in msg) if math.isnan(eta) else (repr(float(eta)) in msg)


def test_direction_inputs_are_checked():
    with pytest.raises(ParameterError, match=r"u has shape \(4, 3\) but the manifold's tangent dimension is d=2"):
        bias_function(Cylinder(), np.ones((4, 3)))
    with pytest.raises(ParameterError, match="statistic=None"):
        direction_histogram(np.ones((4, 3)) / math.sqrt(3))
    with pytest.raises(ParameterError, match="manifold="):
        bias_function("cylinder", [1.0, 0.0])
    with pytest.raises(ParameterError, match="law="):
        exact_directional_density(Cylinder(), 0.1, [1.0, 0.0])
    assert angle_statistic().d == 2


def test_weighted_histogram_reduces_to_binomial_for_equal_weights():
    from tanbias.directional import direction_histogram
    from tanbias.manifolds import uniform_directions
    u = uniform_directions(3000, 2, np.random.default_rng(3))
    a = direction_histogram(u, 8)
    b = direction_histogram(u, 8, weights=np.full(3000, 2.5))
    assert np.allclose(a.density, b.density) and np.allclose(a.stderr, b.stderr)
    assert np.allclose(a.counts, b.counts)


def test_directions_live_update_is_exact_importance_sampling():
    from tanbias.directional import DirectionSamples, exact_directional_density
    from tanbias.manifolds import Cylinder
    from tanbias.radial import Epanechnikov
    C = Cylinder(R=1.0, D=3, seed=0)
    demo = DirectionSamples({"cylinder": C, "sphere": Sphere(2, R=1.0, D=3, seed=0)},
                            (0.01, 0.1), n=12_000)
    live = demo.live("cylinder", 0.03)
    n = live["hist"].n
    assert n == 2000 and 0.3 * n < live["ess"] <= n
    assert live["bank_eta_g"] >= 0.03
    law = Epanechnikov(1.0).with_eta(0.03, 2)
    assert np.allclose(live["exact"], exact_directional_density(C, law, np.stack(
        [np.cos(live["theta"]), np.sin(live["theta"])], axis=1)), atol=1e-3)
    # reweighted histogram against the exact bin densities, within its (weighted) s.e.
    from tanbias.directional import exact_histogram
    h = live["hist"]
    z = (h.density - exact_histogram(C, law, h.edges)) / h.stderr
    assert np.all(np.abs(z) < 4.5)
    # at a bank's own eta_g the weights are all 1
    assert demo.live("cylinder", 0.1)["ess"] == n
