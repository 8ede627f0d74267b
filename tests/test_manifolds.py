"""Submanifolds: closed-form curvature, exp/log, exact sampling, validation."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from tanbias.errors import ParameterError
from tanbias.theory.manifolds import (Cylinder, GeneralizedCylinder, Quadric, Saddle, Sphere,
                               StratifiedSet, uniform_directions)
from tanbias.theory.radial import Epanechnikov, Gaussian, Laplace
from tanbias.stats import loglog_slope

RNG = np.random.default_rng


def rand_vectors(n, d, seed=0):
    return RNG(seed).standard_normal((n, d))


# ------------------------------------------------------------------ frames
@pytest.mark.parametrize("M", [Sphere(3, R=2.0, D=6, seed=1), Cylinder(R=0.5, D=5, seed=2),
                               GeneralizedCylinder(2, 4, 1.5, D=7, seed=3),
                               Quadric(np.stack([np.eye(3), np.diag([1.0, -2, 0])]), D=8, seed=4),
                               Saddle(1.3, D=4, seed=5)], ids=repr)
def test_bases_are_orthonormal_and_complementary(M):
    B = np.concatenate([M.tangent_basis, M.normal_basis], axis=1)
    assert B.shape == (M.D, M.D)
    assert np.allclose(B.T @ B, np.eye(M.D), atol=1e-12)
    assert M.mu.shape == (M.D,)
    # exp(0) = mu and the differential of exp at 0 is the tangent basis
    assert np.allclose(M.exp(np.zeros(M.d)), M.mu, atol=1e-14)
    eps = 1e-6
    for i in range(M.d):
        e = np.zeros(M.d)
        e[i] = eps
        deriv = (M.exp(e) - M.exp(-e)) / (2 * eps)
        assert np.allclose(deriv, M.tangent_basis[:, i], atol=1e-6)


# ------------------------------------------------------------------ curvature closed forms
@pytest.mark.parametrize("d, R, D", [(2, 1.0, 3), (3, 2.5, 5), (5, 0.7, 9)])
def test_sphere_second_fundamental_form_and_ricci(d, R, D):
    S = Sphere(d, R=R, D=D, seed=d)
    u, v = rand_vectors(50, d, 1), rand_vectors(50, d, 2)
    ii = S.second_fundamental_form(u, v)
    assert ii.shape == (50, D - d)
    assert np.allclose(ii[:, 0], np.sum(u * v, axis=1) / R, atol=1e-13)
    assert np.allclose(ii[:, 1:], 0)
    assert np.allclose(S.ricci(u), (d - 1) * np.sum(u ** 2, axis=1) / R ** 2, atol=1e-12)
    # the mean curvature vector points to the centre: exp along any direction moves towards it
    y = S.exp(0.1 * uniform_directions(5, d, RNG(0)))
    assert np.all((y - S.mu) @ S.normal_basis[:, 0] > 0)


def test_cylinder_ii_is_cos_squared_and_ricci_vanishes():
    R = 1.7
    C = Cylinder(R=R, D=3, seed=0)
    th = np.linspace(0, np.pi, 13)
    u = np.stack([np.cos(th), np.sin(th)], axis=1)
    assert np.allclose(C.second_fundamental_form(u)[:, 0], np.cos(th) ** 2 / R, atol=1e-14)
    assert np.allclose(np.sum(C.second_fundamental_form(u) ** 2, axis=1), np.cos(th) ** 4 / R ** 2)
    assert np.allclose(C.ricci(rand_vectors(20, 2)), 0, atol=1e-14)


def test_generalized_cylinder_ricci_counts_only_the_sphere_factor():
    M = GeneralizedCylinder(3, 5, R=2.0, D=7, seed=0)
    u = rand_vectors(30, 5)
    assert np.allclose(M.ricci(u), 2 * np.sum(u[:, :3] ** 2, axis=1) / 4.0, atol=1e-12)


def test_quadric_ii_and_gauss_equation():
    A = np.array([[[1.0, 0.3], [0.3, -0.5]], [[0.2, 0.0], [0.0, 0.7]]])
    Q = Quadric(A, D=6, seed=1)
    u, v = rand_vectors(40, 2, 3), rand_vectors(40, 2, 4)
    ii = Q.second_fundamental_form(u, v)
    assert np.allclose(ii[:, :2], np.einsum("na,jab,nb->nj", u, A, v))
    assert np.allclose(ii[:, 2:], 0)
    # d = 2: Ric(u, u) = K |u|^2 with K = sum_j det(A_j)
    K = sum(np.linalg.det(a) for a in A)
    assert np.allclose(Q.ricci(u), K * np.sum(u ** 2, axis=1), atol=1e-12)
    assert np.allclose(Saddle(2.0).ricci(u), -4.0 * np.sum(u ** 2, axis=1))
    assert np.allclose(Q.ricci(u), np.einsum("na,ab,nb->n", u, Q.ricci_matrix(), u))


# ------------------------------------------------------------------ exp / log
@pytest.mark.parametrize("M", [Sphere(2, R=1.3, D=4, seed=0), Cylinder(R=0.8, D=3, seed=1),
                               GeneralizedCylinder(2, 3, 1.0, D=5, seed=2)], ids=repr)
def test_closed_form_exp_log_round_trip(M):
    w = uniform_directions(200, M.d, RNG(0)) * RNG(1).uniform(0, M.patch_radius, (200, 1))
    y = M.exp(w)
    assert np.max(M.residual(y)) < 1e-12
    assert np.allclose(M.log(y), w, atol=1e-11)


def test_sphere_geodesic_distance_is_the_arc():
    R = 2.0
    S = Sphere(2, R=R, D=3, seed=0)
    s = S.sample_at_radius(1.2, 100, RNG(0))
    assert np.allclose(s.r, 1.2)
    assert np.allclose(s.chord, 2 * R * np.sin(1.2 / (2 * R)), atol=1e-13)
    # great-circle distance from the ambient angle
    c = S.mu + R * S.normal_basis[:, 0]                       # centre (inward normal)
    a = (s.y - c) / R
    b = (S.mu - c) / R
    assert np.allclose(R * np.arccos(np.clip(a @ b, -1, 1)), 1.2, atol=1e-7)


@pytest.mark.slow
def test_quadric_exp_log_round_trip_and_rk4_convergence():
    A = np.array([[[1.0, 0.4], [0.4, -0.6]]])
    Q = Quadric(A, D=4, seed=3)
    w = uniform_directions(300, 2, RNG(0)) * RNG(1).uniform(0, Q.patch_radius, (300, 1))
    y = Q.exp(w)
    assert np.max(Q.residual(y)) < 1e-12
    assert np.max(np.linalg.norm(Q.log(y) - w, axis=1) / np.linalg.norm(w, axis=1)) < 1e-9
    # the integrator is converged: 8x more steps changes nothing that matters
    fine = Quadric(A, D=4, seed=3, n_steps=512)
    assert np.max(np.abs(fine.exp(w) - y)) < 1e-10


def test_paraboloid_geodesics_are_meridians_of_known_length():
    kappa = 1.5
    Q = Quadric(kappa * np.eye(2), D=3, seed=0, patch_radius=0.65)
    t = 0.6
    s = Q.sample_at_radius(t, 20, RNG(0))
    x = s.tangent                                               # parameter coords at the apex
    rho = np.linalg.norm(x, axis=1)
    arc = (kappa * rho * np.sqrt(1 + (kappa * rho) ** 2) + np.arcsinh(kappa * rho)) / (2 * kappa)
    assert np.allclose(arc, t, atol=1e-10)
    assert np.allclose(x / rho[:, None], s.u, atol=1e-12)
    # polar volume element on a surface of revolution = radius of the parallel
    V = Q.polar_volume_element(np.array([t]), s.u[:3])
    assert np.allclose(V, rho[:3], atol=1e-9)


def test_polar_volume_element_matches_the_ricci_expansion():
    S = Saddle(1.0, D=3, seed=0)
    u = uniform_directions(5, 2, RNG(2))
    r = np.array([1e-3, 2e-3, 4e-3, 1e-2])
    V = S.polar_volume_element(r, u)
    approx = r[:, None] * (1 - S.ricci(u)[None] * r[:, None] ** 2 / 6)
    assert np.allclose(V, approx, rtol=1e-6, atol=0)
    G = GeneralizedCylinder(2, 3, R=1.0, D=4)
    uu = uniform_directions(5, 3, RNG(3))
    VG = G.polar_volume_element(r, uu)
    approx = r[:, None] ** 2 * (1 - G.ricci(uu)[None] * r[:, None] ** 2 / 6)
    assert np.allclose(VG, approx, rtol=1e-6, atol=0)


# ------------------------------------------------------------------ exact sampling
def test_samples_lie_on_the_manifold_and_carry_geodesic_coordinates():
    for M, law in [(Sphere(2, R=1.0, D=5, seed=0), Gaussian(0.2)),
                   (Cylinder(R=1.0, D=3, seed=1), Laplace(0.1)),
                   (GeneralizedCylinder(2, 3, 1.0, D=4, seed=2), Epanechnikov(0.5)),
                   (Saddle(1.0, D=3, seed=3), Gaussian(0.1))]:
        s = M.sample(2000, law, RNG(0))
        assert s.y.shape == (2000, M.D) and s.u.shape == (2000, M.d)
        assert np.max(M.residual(s.y)) < 1e-10
        assert np.allclose(np.linalg.norm(s.u, axis=1), 1)
        assert np.max(np.abs(M.exp(s.r[:, None] * s.u) - s.y)) < 1e-9
        assert np.all(s.r <= M.patch_radius + 1e-12) and np.all(s.chord <= s.r + 1e-12)
        assert np.allclose(s.chord, np.linalg.norm(s.y - M.mu, axis=1))
        assert np.allclose(s.tangent @ M.tangent_basis.T + s.normal @ M.normal_basis.T, s.y - M.mu)


@pytest.mark.parametrize("law", [Gaussian(0.3), Laplace(0.1), Epanechnikov(0.8)], ids=lambda l: l.name)
def test_archimedes_chord_on_the_two_sphere_follows_the_flat_radius_law(law):
    # On S^2 the chord vector has density g(|z|) in the plane (Archimedes): chord ~ flat radius law
    S = Sphere(2, R=1.0, D=3, seed=0, patch_radius=math.pi * 0.99)
    s = S.sample(5000, law, RNG(11))
    cmax = 2 * math.sin(S.patch_radius / 2)
    F = lambda c: law.radius_cdf(np.minimum(c, cmax), 2) / law.radius_cdf(cmax, 2)  # noqa: E731
    assert stats.kstest(s.chord, F).pvalue > 1e-3


def test_cylinder_sampler_matches_importance_weighted_area_sampling():
    # independent method: uniform points on a big piece of the cylinder, weights g(chord)
    R, law = 1.0, Gaussian(0.35)
    C = Cylinder(R=R, D=3, seed=4)
    s = C.sample(100_000, law, RNG(5))
    rng = RNG(6)
    n = 1_000_000
    a = rng.uniform(-math.pi * R, math.pi * R, n)
    b = rng.uniform(-3, 3, n)
    ok = a ** 2 + b ** 2 <= C.patch_radius ** 2
    a, b = a[ok], b[ok]
    wts = law.g(np.sqrt(4 * R ** 2 * np.sin(a / (2 * R)) ** 2 + b ** 2))
    for f_s, f_w in [(s.u[:, 0] ** 2, a ** 2 / (a ** 2 + b ** 2)), (s.r ** 2, a ** 2 + b ** 2)]:
        mean_w = np.sum(wts * f_w) / np.sum(wts)
        se = np.std(f_s) / math.sqrt(f_s.size) + np.sqrt(np.sum(wts ** 2 * (f_w - mean_w) ** 2)) / np.sum(wts)
        assert abs(np.mean(f_s) - mean_w) < 4 * se


@pytest.mark.slow
def test_quadric_sampler_matches_parameter_space_quadrature():
    S = Saddle(1.0, D=3, seed=0)
    law = Gaussian(0.15)
    s = S.sample(20_000, law, RNG(8))
    # E[chord^2] by polar quadrature in parameter space: density g(chord) sqrt(1 + |A x|^2) dx
    rho, th = np.polynomial.legendre.leggauss(80), np.linspace(0, 2 * np.pi, 129)[:-1]
    rr = (rho[0] + 1) / 2 * S.patch_radius
    wr = rho[1] / 2 * S.patch_radius
    x = rr[:, None, None] * np.stack([np.cos(th), np.sin(th)], -1)[None]
    c2 = np.sum(x ** 2, -1) + (0.5 * (x[..., 0] ** 2 - x[..., 1] ** 2)) ** 2
    dens = law.g(np.sqrt(c2)) * np.sqrt(1 + np.sum(x ** 2, -1)) * rr[:, None]
    mean_c2 = np.sum(wr[:, None] * dens * c2) / np.sum(wr[:, None] * dens)
    se = np.std(s.chord ** 2) / math.sqrt(len(s))
    assert abs(np.mean(s.chord ** 2) - mean_c2) < 4 * se


@pytest.mark.slow
def test_quadric_direction_is_geodesic_not_projected():
    S = Saddle(2.0, D=3, seed=1)
    s = S.sample(3000, Gaussian(0.1), RNG(9))
    proj = s.tangent / np.linalg.norm(s.tangent, axis=1, keepdims=True)
    gap = np.linalg.norm(proj - s.u, axis=1)
    assert np.max(gap) > 1e-3                              # they differ ...
    ok = gap > 1e-9
    fit = loglog_slope(s.r[ok], gap[ok])
    assert 1.8 < fit.slope < 2.2                           # ... at order r^2


def test_sample_at_radius_has_uniform_directions():
    M = GeneralizedCylinder(2, 3, 1.0, D=4, seed=0)
    s = M.sample_at_radius(0.4, 4000, RNG(1))
    assert np.allclose(s.r, 0.4) and np.allclose(np.linalg.norm(M.log(s.y), axis=1), 0.4)
    assert stats.kstest(M.sphere_share(s.u), stats.beta(1, 0.5).cdf).pvalue > 1e-3


def test_too_wide_law_is_reported():
    with pytest.raises(ParameterError, match="too wide for patch_radius"):
        Cylinder(R=1.0, patch_radius=0.05).sample(100, Gaussian(100.0), RNG(0))


# ------------------------------------------------------------------ stratified set
def test_stratified_set_samples_and_refuses_geometry():
    X = StratifiedSet(D=4, angle=1.0, seed=0)
    s = X.sample(3000, Gaussian(1.0), RNG(0))
    assert np.max(X.residual(s.y)) < 1e-12
    assert abs(np.mean(s.sheet) - 0.5) < 0.05
    assert np.allclose(np.linalg.norm(s.y - X.mu, axis=1), s.chord)
    p = X.point_on_sheet(1, 0.3)
    assert X.residual(p) < 1e-14
    for call in (lambda: X.ricci([1.0, 0.0]), lambda: X.second_fundamental_form([1.0, 0.0]),
                 lambda: X.exp([0.1, 0.0])):
        with pytest.raises(NotImplementedError, match="not a manifold"):
            call()


# ------------------------------------------------------------------ validation (property tests)
bad_t = st.one_of(st.floats(max_value=0.0), st.just(float("nan")))


@settings(max_examples=30, deadline=None)
@given(bad_t)
def test_sample_at_radius_rejects_bad_t(t):
    with pytest.raises(ParameterError) as exc:
        Sphere(2).sample_at_radius(t, 10, RNG(0))
    msg = str(exc.value)
    assert msg.startswith("t=") and "valid range is (0, " in msg
    assert ("nan" in msg) if math.isnan(t) else (repr(float(t)) in msg)


def test_sample_at_radius_rejects_t_beyond_the_patch():
    with pytest.raises(ParameterError, match=r"t=3.0 is out of range: valid range is \(0, 1.5708\]"):
        Sphere(2).sample_at_radius(3.0, 10, RNG(0))


@settings(max_examples=30, deadline=None)
@given(st.integers(min_value=1, max_value=6), st.integers(min_value=1, max_value=6),
       st.integers(min_value=1, max_value=4))
def test_dimension_mismatch_names_the_shape_and_d(d, wrong, batch):
    if wrong == d:
        wrong = d + 1
    M = Sphere(d, D=d + 1, seed=0)
    bad = np.ones((batch, wrong))
    for name, call in (("u", lambda: M.second_fundamental_form(bad)),
                       ("u", lambda: M.ricci(bad)), ("w", lambda: M.exp(bad))):
        with pytest.raises(ParameterError) as exc:
            call()
        assert str(exc.value) == (f"{name} has shape {(batch, wrong)} but the manifold's tangent "
                                  f"dimension is d={d}: expected shape (..., {d}).")
    with pytest.raises(ParameterError, match=r"v has shape"):
        M.second_fundamental_form(np.ones((batch, d)), bad)


@settings(max_examples=30, deadline=None)
@given(st.one_of(st.floats(min_value=-1e3, max_value=1e3).filter(lambda x: x != int(x)),
                 st.integers(max_value=0), st.just(float("nan"))))
def test_sample_rejects_bad_n(n):
    for M in (Cylinder(), Saddle()):
        with pytest.raises(ParameterError) as exc:
            M.sample(n, Gaussian(0.1), RNG(0))
        msg = str(exc.value)
        assert msg.startswith("n=") and "valid range is [1, inf)" in msg


@settings(max_examples=30, deadline=None)
@given(bad_t)
def test_constructors_reject_bad_radius_and_curvature(v):
    for call, name in ((lambda: Sphere(2, R=v), "R"), (lambda: Cylinder(R=v), "R"),
                       (lambda: Saddle(kappa=v), "kappa")):
        with pytest.raises(ParameterError) as exc:
            call()
        msg = str(exc.value)
        assert msg.startswith(f"{name}=") and "valid range is (0, inf)" in msg


def test_constructor_ranges():
    with pytest.raises(ParameterError, match=r"k=3 is out of range: valid range is \[1, 2\]"):
        GeneralizedCylinder(3, 2)
    with pytest.raises(ParameterError, match=r"D=3 is out of range: valid range is \[4, inf\)"):
        Sphere(3, D=3)
    with pytest.raises(ParameterError, match=r"D=2 is out of range: valid range is \[3, inf\)"):
        Quadric(np.eye(2), D=2)
    with pytest.raises(ParameterError, match="A is not symmetric"):
        Quadric([[1.0, 1.0], [0.0, 1.0]])
    with pytest.raises(ParameterError, match="law=.*valid range is instances of RadialLaw"):
        Sphere(2).sample(10, "gaussian", RNG(0))
    with pytest.raises(ParameterError, match="patch_radius"):
        Cylinder(R=1.0, patch_radius=4.0)


# ------------------------------------------------------------ the precision floor of the normal part
def _rounding_error_of_normal_part(M, t, n=500):
    """RMS relative error of the normal part of y - mu against t^2 II(u,u)/2, computed the way
    every function computes it (an ambient difference), with no guard."""
    from tanbias.theory.manifolds import uniform_directions

    u = uniform_directions(n, M.d, np.random.default_rng(0))
    normal = (M.exp(t * u) - M.mu) @ M.normal_basis
    pred = 0.5 * t * t * M.second_fundamental_form(u)
    return float(np.sqrt(np.mean(np.sum((normal - pred) ** 2, 1)) / np.mean(np.sum(pred ** 2, 1))))


PRECISION_MANIFOLDS = [Cylinder(R=1.0, D=3, seed=0), Sphere(2, R=1.0, D=3, seed=0),
                       Saddle(kappa=1.0, D=3, seed=0, patch_radius=1.0)]


@pytest.mark.parametrize("M", PRECISION_MANIFOLDS, ids=lambda M: type(M).__name__)
def test_the_normal_floor_is_where_rounding_reaches_one_percent_of_the_normal_part(M):
    """At the floor the normal part keeps two digits; at a tenth of it (t^2 a hundredth) its
    rounding is tens of percent: the answers there (a normal ratio, a slope) mean nothing."""
    from tanbias._checks import PRECISION_RTOL

    floor = M.normal_floor()
    assert 1e-8 < floor < 1e-5                             # |mu| of order 1: t^2 near eps |mu|
    assert _rounding_error_of_normal_part(M, floor) <= PRECISION_RTOL
    assert _rounding_error_of_normal_part(M, floor / 10) > 10 * PRECISION_RTOL


def test_the_floor_follows_the_base_point_and_the_curvature():
    far = Cylinder(R=1.0, D=3, seed=0, mu=np.array([1e4, 0.0, 0.0]))
    near = Cylinder(R=1.0, D=3, seed=0, mu=np.zeros(3))
    flatter = Cylinder(R=100.0, D=3, seed=0)
    base = Cylinder(R=1.0, D=3, seed=0)
    assert far.normal_floor() > 50 * base.normal_floor() > 50 * near.normal_floor()
    assert flatter.normal_floor() > 5 * base.normal_floor()      # c = sqrt(3/8) / (2R)


def test_sampling_below_the_floor_raises_a_named_error():
    from tanbias.errors import PrecisionLossError
    from tanbias.theory.expansion import normal_ratio

    M = Cylinder(R=1.0, D=3, seed=0)
    floor = M.normal_floor()
    assert abs(normal_ratio(M, 2 * floor, 500, 0) - 1) < 1e-3
    with pytest.raises(PrecisionLossError, match=r"t=.* is below the precision floor: valid range is \[3.2e-07, inf\)"):
        normal_ratio(M, floor / 2, 500, 0)
    with pytest.raises(PrecisionLossError, match="rounding of y - mu"):
        M.sample_at_radius(1e-9, 10, 0)
    with pytest.raises(PrecisionLossError, match=r"eta_g=.*RMS radius"):
        M.sample(10, Gaussian(1e-8), 0)
    assert isinstance(PrecisionLossError("x"), ParameterError)
    M.sample(10, Gaussian(1e-5), 0)                        # above the floor: fine


def test_every_function_that_takes_a_radius_and_a_manifold_refuses_one_below_its_floor():
    """gradients, attention and residual check their radius with check_radius(t, manifold)."""
    import tanbias.theory.attention as att
    import tanbias.theory.gradients as grad
    import tanbias.theory.residual as res
    from tanbias.errors import PrecisionLossError

    quad = res.default_loop_manifold()
    tiny = quad.normal_floor() / 3
    calls = {"gradients.ratio_scaling": lambda: grad.ratio_scaling(quad, [tiny, 0.1, 0.2], n=10, rng=0),
             "attention.softmax_terms": lambda: att.softmax_terms(quad, att.random_attention_heads(1, quad.D, seed=0),
                                                                  tiny, 0, rng=0),
             "residual.depth_cloud": lambda: res.depth_cloud(quad, tiny, 0, n=8)}
    for name, call in calls.items():
        with pytest.raises(PrecisionLossError, match="below the precision floor"):
            call()
