"""tanbias.theory.directional_density: b(u) and its exact uniform moments, the first-order and the
exact directional density, bias amplitudes, where the first order stops being enough."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tanbias.theory.directional_density import (amplitude_crossing, amplitude_scan, bias_function,
                                         exact_bias_amplitude, exact_directional_density,
                                         exact_expectation, first_order_density,
                                         predicted_bias_amplitude, sphere_quadrature,
                                         uniform_bias_moments)
from tanbias.errors import ParameterError
from tanbias.theory.manifolds import (Cylinder, GeneralizedCylinder, Quadric, Saddle, Sphere,
                               uniform_directions)
from tanbias.theory.radial import Gaussian
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


# ------------------------------------------------------------------ where the first order stops
def test_amplitude_scan_is_first_order():
    C = Cylinder(R=1.0)
    sc = amplitude_scan(C, Gaussian(1.0), np.geomspace(1e-4, 1e-1, 4))
    assert np.all(np.abs(sc["relative_error"][:3]) < 0.01)
    slope = np.polyfit(np.log(sc["eta_g"]), np.log(sc["exact"]), 1)[0]
    assert slope == pytest.approx(1.0, abs=0.01)


def test_amplitude_crossing():
    sc = amplitude_scan(Cylinder(R=1.0), Gaussian(1.0), np.geomspace(1e-3, 1.0, 9))
    eta10 = amplitude_crossing(sc, 0.10)
    assert sc["eta_g"][0] < eta10 < sc["eta_g"][-1]
    with pytest.raises(ParameterError, match="level=5"):
        amplitude_crossing(sc, 5.0)


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
    with pytest.raises(ParameterError, match="manifold="):
        bias_function("cylinder", [1.0, 0.0])
    with pytest.raises(ParameterError, match="law="):
        exact_directional_density(Cylinder(), 0.1, [1.0, 0.0])


# ------------------------------------------------------------ the precision floor of a directional bias
def test_the_eta_floor_is_where_the_amplitude_keeps_two_digits():
    """At the floor the exact amplitude agrees with the first order within 1 % (its own next order
    is ~eta_g, nothing); a thousand times below it the unguarded quadrature is off by tens of
    percent, and further down it returns noise (a log-log slope near 0, not 1)."""
    from tanbias.theory.directional_density import (eta_floor, exact_expectation, predicted_bias_amplitude,
                                                    uniform_bias_moments)

    for M in (Cylinder(R=1.0), GeneralizedCylinder(k=2, d=3, R=1.0, D=4)):
        floor = eta_floor(M)
        assert 1e-13 < floor < 1e-9
        sc = amplitude_scan(M, Gaussian(1.0), [1.01 * floor, 10 * floor])
        assert np.all(np.abs(sc["relative_error"]) < 1e-2)

        def raw(eta):                   # the amplitude with no guard
            law = Gaussian(1.0).with_eta(eta, M.d)
            return exact_expectation(M, law, lambda u: bias_function(M, u)) - uniform_bias_moments(M)[0]
        assert abs(raw(floor / 1e3) / predicted_bias_amplitude(M, floor / 1e3) - 1) > 0.1


def test_an_eta_below_the_floor_raises_a_named_error():
    from tanbias.errors import PrecisionLossError
    from tanbias.theory.directional_density import eta_floor
    from tanbias.theory.ricci_sign import exact_ricci_coefficient

    C, S2R = Cylinder(R=1.0), GeneralizedCylinder(k=2, d=3, R=1.0, D=4)
    with pytest.raises(PrecisionLossError, match=r"eta_g=.* is below the precision floor: valid range is \[6.02e-12, inf\)"):
        amplitude_scan(C, Gaussian(1.0), [1e-14, 1e-3])
    with pytest.raises(PrecisionLossError, match="rounding"):
        exact_ricci_coefficient(S2R, Gaussian(1.0).with_eta(eta_floor(S2R) / 10, 3))
    assert eta_floor(Sphere(2)) == 0.0                   # b constant: no bias, no floor
