"""Chapter 4: the linear-layer gradient split, its O(t) scaling and its limits."""

import math

import numpy as np
import pytest

from tanbias.errors import ParameterError
from tanbias.theory.gradients import (affine_signal_scaling, centre, counterexample_batch_scaling,
                               eta_scaling, fit_ratio_slope, fit_rms_constant, gradient_cloud,
                               gradient_ratio, ii_moments, parabola_counterexample,
                               predicted_rms_constant, predicted_rms_from_eta,
                               radial_shape_constant, ratio_scaling, split_gradient,
                               two_token_types)
from tanbias.theory.manifolds import Cylinder, GeneralizedCylinder, Sphere
from tanbias.theory.radial import Epanechnikov, Gaussian, Laplace
from tanbias.theory.residual import default_loop_manifold
from tanbias.stats import loglog_slope

TS = np.geomspace(0.02, 0.2, 8)


@pytest.fixture(scope="module")
def quadric():
    return default_loop_manifold()


@pytest.fixture(scope="module")
def cylinder():
    return GeneralizedCylinder(1, 3, R=1.0, D=7, seed=2)


@pytest.fixture(scope="module")
def cyl():
    """A cylinder S^1 x R in R^5: the manifold of the eta_g scaling and the affine signal."""
    return GeneralizedCylinder(1, 2, R=1.0, D=5, seed=0)


# --- closed forms ------------------------------------------------------------------

def test_split_closed_form():
    T, N = np.eye(3)[:, :1], np.eye(3)[:, 1:]
    x_c = np.array([[0.1, 0.003, 0.004], [-0.2, 0.0, 0.01]])
    delta = np.array([[2.0, 0.0], [0.0, 3.0]])
    s = split_gradient(x_c, delta, T, N)
    np.testing.assert_allclose(s.tangent, [0.2, 0.6])
    np.testing.assert_allclose(s.normal, [2 * 0.005, 3 * 0.01])
    # the per-sample ratio is ||n|| / ||v||, whatever delta is
    np.testing.assert_allclose(s.per_sample_ratio, [0.05, 0.05])
    # mean gradient: (1/2) sum_i delta_i (T^T x_i)^T, by hand
    G_t = 0.5 * (np.outer(delta[0], [0.1]) + np.outer(delta[1], [-0.2]))
    assert s.mean_tangent == pytest.approx(np.linalg.norm(G_t))


def test_ratio_does_not_depend_on_delta_per_sample(cylinder):
    s = cylinder.sample_at_radius(0.1, 50, 0)
    x_c = s.y - cylinder.mu
    T, N = cylinder.tangent_basis, cylinder.normal_basis
    a = split_gradient(x_c, np.ones(3), T, N).per_sample_ratio
    b = split_gradient(x_c, np.random.default_rng(1).standard_normal((50, 5)), T, N).per_sample_ratio
    np.testing.assert_allclose(a, b, rtol=1e-12)
    np.testing.assert_allclose(a, np.linalg.norm(s.normal, axis=1) / np.linalg.norm(s.tangent, axis=1))


def test_ii_moments_exact_vs_monte_carlo(quadric):
    second, mean = ii_moments(quadric)
    rng = np.random.default_rng(0)
    u = rng.standard_normal((400_000, quadric.d))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    ii = quadric.second_fundamental_form(u)
    assert second == pytest.approx(np.mean(np.sum(ii ** 2, axis=1)), rel=0.01)
    np.testing.assert_allclose(mean, ii.mean(axis=0), atol=0.01)


def test_predicted_constant_sphere():
    S = Sphere(2, R=2.0, D=5, seed=0)         # II(u, u) = (1/R) nu for every unit u
    assert predicted_rms_constant(S) == pytest.approx(0.25)
    assert predicted_rms_constant(S, "batch") == pytest.approx(0.0, abs=1e-12)


# --- scaling --------------------------------------------------------------------------

@pytest.mark.parametrize("delta", ["gaussian", "constant"])
@pytest.mark.parametrize("centring", ["mu", "batch"])
def test_slopes_and_constant_cylinder(cylinder, delta, centring):
    df = ratio_scaling(cylinder, TS, n=2000, rng=0, delta=delta, centring=centring)
    for col in ("per_sample", "rms"):
        fit = fit_ratio_slope(df, col)
        assert abs(fit.slope - 1) < 0.05, (col, str(fit))
        assert fit.ci_low < fit.slope < fit.ci_high
    c = fit_rms_constant(df)
    assert abs(c["rel_error"]) < 0.05, c


@pytest.mark.slow
def test_slopes_and_constant_quadric(quadric):
    df = ratio_scaling(quadric, TS, n=1000, rng=1)
    assert abs(fit_ratio_slope(df, "per_sample").slope - 1) < 0.05
    assert abs(fit_ratio_slope(df, "rms").slope - 1) < 0.05
    c = fit_rms_constant(df)
    assert abs(c["rel_error"]) < 0.05, c
    # batch centring removes the mean normal offset: a smaller constant
    assert predicted_rms_constant(quadric, "batch") < predicted_rms_constant(quadric, "mu")


def test_batch_centring_kills_sphere_normal_at_fixed_radius():
    S = Sphere(2, R=1.0, D=5, seed=0)
    df = ratio_scaling(S, [0.05, 0.1], n=200, rng=0, centring="batch")
    assert np.all(df["rms"] < 1e-9)       # all points share the same height
    df = ratio_scaling(S, [0.05, 0.1], n=200, rng=0, centring="mu")
    np.testing.assert_allclose(df["rms"], 0.5 * df["t"], rtol=0.01)


def test_centre():
    x = np.array([[1.0, 2.0], [3.0, 6.0]])
    np.testing.assert_allclose(centre(x, [1.0, 2.0]), [[0, 0], [2, 4]])
    np.testing.assert_allclose(centre(x, centring="batch"), [[-1, -2], [1, 2]])


# --- where it breaks ------------------------------------------------------------------

def test_parabola_counterexample():
    c = parabola_counterexample(0.1, n=20_000, rng=0)
    assert abs(c.mean_tangent) < 4 * c.mean_tangent_se          # E[u] = 0
    assert c.mean_normal == pytest.approx(0.01)                  # E[u^2] = t^2 > 0
    assert c.rms_ratio == pytest.approx(0.1)                     # energy form: O(t)
    assert c.mean_ratio > 10 * c.rms_ratio                       # mean form: not O(t)
    assert "Corrected proposition" in parabola_counterexample.__doc__


def test_mean_form_fails_but_rms_holds_on_exact_symmetric_batch():
    T, N = np.eye(2)[:, :1], np.eye(2)[:, 1:]
    x_c = np.array([[0.1, 0.01], [-0.1, 0.01]])
    assert gradient_ratio(x_c, [1.0], T, N, form="mean") == np.inf
    assert gradient_ratio(x_c, [1.0], T, N) == pytest.approx(0.1)


def test_two_token_types(cylinder):
    df = two_token_types(cylinder, 0.02, 0.2, n=2000)
    assert df["rms"].iloc[0] < df["rms"].iloc[1]
    assert df["relative_to_type2"].iloc[0] == pytest.approx(0.1, rel=0.05)


# --- the radius law: eta_g, the batch mean, the gradient cloud ----------------------

@pytest.mark.parametrize("d", [1, 2, 3, 5])
def test_radial_shape_constant_closed_forms(d):
    assert radial_shape_constant(Gaussian(0.37), d) == pytest.approx((d + 2) / d)
    # Laplace: m_k = k!, so kappa = (d+3)! (d-1)! / ((d+1)!)^2
    expected = math.factorial(d + 3) * math.factorial(d - 1) / math.factorial(d + 1) ** 2
    assert radial_shape_constant(Laplace(2.0), d) == pytest.approx(expected)


def test_predicted_rms_from_eta_sphere():
    S = Sphere(2, R=2.0, D=4, seed=0)            # c = 1/(2R) = 1/4
    assert predicted_rms_from_eta(S, Gaussian(1.0), 0.02) == pytest.approx(0.25 * math.sqrt(0.04))


@pytest.mark.parametrize("law", [Gaussian(1.0), Epanechnikov(1.0)])
def test_eta_scaling_matches_prediction(cyl, law):
    etas = np.geomspace(1e-4, 1e-2, 5)
    df = eta_scaling(cyl, law, etas, n=8000, rng=0)
    np.testing.assert_allclose(df["mean_r2"] / df["eta_g"], 1.0, rtol=0.05)
    np.testing.assert_allclose(df["rms"] / df["predicted_rms"], 1.0, rtol=0.08)
    assert abs(loglog_slope(df["eta_g"], df["rms"]).slope - 0.5) < 0.03


def test_counterexample_batch_scaling_grows_like_sqrt_n():
    df = counterexample_batch_scaling(0.1, [100, 1000, 10_000, 100_000], reps=201)
    assert abs(loglog_slope(df["n"], df["median_mean_ratio"]).slope - 0.5) < 0.1
    np.testing.assert_allclose(df["rms_ratio"], 0.1)


def test_gradient_cloud_is_the_parabola_for_a_constant_signal():
    # Cylinder in R^3: the normal coordinate of exp(t u) is R (1 - cos(t u_1 / R)),
    # so with delta = 1 the cloud (divided by t) is the curve (sin(t u_1)/t, (1 - cos(t u_1))/t).
    C = Cylinder(R=1.0, D=3, seed=0)
    c = gradient_cloud(C, 0.2, n=500, delta="constant", rng=0)
    assert np.all(c["normal"] >= -1e-12)                         # even in u: one sign
    assert np.max(c["normal"]) == pytest.approx((1 - math.cos(0.2)) / 0.2, rel=0.02)
    assert c["rms"] == pytest.approx(c["predicted"], rel=0.05)
    # the normal mean is t/4 in these units and never averages away; the tangent mean is
    # sampling noise of size ~0.7/sqrt(n)
    big = gradient_cloud(C, 0.3, n=40_000, delta="constant", rng=0)
    assert big["mean"][1] == pytest.approx(0.3 / 4, rel=0.05)
    assert big["mean"][1] > 10 * abs(big["mean"][0])
    g = gradient_cloud(C, 0.3, n=40_000, delta="gaussian", rng=0)
    assert g["mean_ratio"] < 0.2 * big["mean_ratio"]


def test_affine_signal_mean_ratio_is_order_one(cyl):
    df = affine_signal_scaling(cyl, np.geomspace(0.03, 0.3, 5), n=20_000, rng=1)
    # sampling noise of the tangent mean is ~ t / sqrt(n) against its t^2 value: a few percent
    assert float(np.median(df["mean"] / df["predicted_mean"])) == pytest.approx(1.0, rel=0.1)
    np.testing.assert_allclose(df["mean"] / df["predicted_mean"], 1.0, rtol=0.2)
    assert abs(loglog_slope(df["t"], df["mean"]).slope) < 0.1
    assert abs(loglog_slope(df["t"], df["rms"]).slope - 1.0) < 0.05


# --- bad input ------------------------------------------------------------------------

def test_bad_inputs(cylinder):
    T, N = cylinder.tangent_basis, cylinder.normal_basis
    x = np.zeros((4, cylinder.D))
    with pytest.raises(ParameterError, match=r"t=-0.1 is out of range: valid range is \(0, "):
        ratio_scaling(cylinder, [-0.1, 0.1])
    with pytest.raises(ParameterError, match=r"t=100.0 is out of range.*patch"):
        ratio_scaling(cylinder, [0.1, 100.0])
    with pytest.raises(ParameterError, match=r"x_c has shape \(4, 3\)"):
        split_gradient(np.zeros((4, 3)), np.ones(2), T, N)
    with pytest.raises(ParameterError, match=r"delta has shape \(3, 2\)"):
        split_gradient(x, np.ones((3, 2)), T, N)
    with pytest.raises(ParameterError, match=r"normal_basis has shape"):
        split_gradient(x, np.ones(2), T, N[:-1])
    with pytest.raises(ParameterError, match=r"form='energy' is not allowed"):
        gradient_ratio(x, np.ones(2), T, N, form="energy")
    with pytest.raises(ParameterError, match=r"n=2.5 is not an integer"):
        ratio_scaling(cylinder, [0.1], n=2.5)
    with pytest.raises(ParameterError, match=r"mu=None"):
        centre(x)
    with pytest.raises(ParameterError, match=r"t=0.0 is out of range"):
        parabola_counterexample(0.0)


def test_chapter4_bad_inputs(cyl):
    with pytest.raises(ParameterError, match=r"eta_g=-0.01 is out of range"):
        predicted_rms_from_eta(cyl, Gaussian(1.0), -0.01)
    with pytest.raises(ParameterError, match=r"delta='uniform'"):
        gradient_cloud(cyl, 0.1, delta="uniform")
    with pytest.raises(ParameterError, match=r"ns=1 is out of range"):
        counterexample_batch_scaling(0.1, [1, 10])
    with pytest.raises(ParameterError, match=r"t=0.0 is out of range"):
        gradient_cloud(cyl, 0.0)
    with pytest.raises(ParameterError, match=r"d=0 is out of range"):
        radial_shape_constant(Gaussian(1.0), 0)
