"""The geometry toolkit (tanbias.theory.local_geometry): each identity the theory chapters use, from
II and from the exponential map alone, on the sphere, the cylinder, the saddle, S^2 x R and a random
quadric whose exp is integrated numerically."""

import math

import numpy as np
import pytest

from tanbias.errors import ParameterError
from tanbias.theory.local_geometry import (antipodal_gap, geodesic_derivatives, injectivity_radius,
                                           intrinsic_ricci, metric_expansion, normal_coordinate_metric,
                                           principal_curvatures, sectional_curvature, shape_operator)
from tanbias.theory.manifolds import Cylinder, GeneralizedCylinder, Quadric, Saddle, Sphere, uniform_directions
from tanbias.theory.residual import default_loop_manifold

SURFACES = {"sphere": Sphere(2, R=1.0, D=3, seed=0), "cylinder": Cylinder(R=1.0, D=3, seed=0),
            "saddle": Saddle(kappa=1.0, D=3, seed=0, patch_radius=1.0),
            "S2xR": GeneralizedCylinder(k=2, d=3, R=1.0, D=4, seed=0), "quadric": default_loop_manifold()}


def test_principal_curvatures_of_the_three_surfaces():
    assert np.allclose(principal_curvatures(Sphere(2, R=2.0, D=3)), [0.5, 0.5])
    assert np.allclose(principal_curvatures(Cylinder(R=2.0, D=3)), [0.0, 0.5])
    assert np.allclose(principal_curvatures(Saddle(kappa=3.0, D=3)), [-3.0, 3.0])


@pytest.mark.parametrize("name", SURFACES)
def test_the_shape_operator_is_symmetric_and_reads_ii(name):
    M = SURFACES[name]
    rng = np.random.default_rng(1)
    nu = rng.standard_normal(M.D - M.d)
    S = shape_operator(M, nu)
    u, w = rng.standard_normal((2, M.d))
    assert np.allclose(S, S.T) and math.isclose(u @ S @ w, M.second_fundamental_form(u, w) @ nu, abs_tol=1e-12)


@pytest.mark.parametrize("name", SURFACES)
def test_geodesic_derivatives_from_exp_alone_match_ii_and_weingarten(name):
    """gamma' = u, gamma'' = II(u,u) (no tangent part), the tangent part of gamma''' is
    -S_{II(u,u)} u, and its component along u is -||II(u,u)||^2: the relation behind chapter 3's
    chord expansion."""
    M = SURFACES[name]
    for u in uniform_directions(4, M.d, np.random.default_rng(2)):
        g = geodesic_derivatives(M, u, h=1e-2)
        assert np.allclose(g["first"]["tangent"], u, atol=1e-3) and np.allclose(g["first"]["normal"], 0, atol=1e-3)
        assert np.allclose(g["second"]["normal"], g["predicted_second"], atol=1e-3)
        assert np.allclose(g["second"]["tangent"], 0, atol=1e-3)
        assert np.allclose(g["third"]["tangent"], g["predicted_third_tangent"], atol=2e-3)
        assert math.isclose(g["third_along_u"], g["predicted_third_along_u"], abs_tol=2e-3)


@pytest.mark.parametrize("name", SURFACES)
def test_the_gauss_equation_agrees_with_the_volume_element(name):
    """Ric from II (Gauss equation) equals Ric read off the intrinsic volume element, and equals
    the sum of sectional curvatures over an orthonormal basis."""
    M = SURFACES[name]
    for u in uniform_directions(3, M.d, np.random.default_rng(3)):
        basis = np.linalg.qr(np.column_stack([u, np.random.default_rng(4).standard_normal((M.d, M.d - 1))]))[0]
        summed = sum(sectional_curvature(M, u, basis[:, i]) for i in range(1, M.d))
        ric = float(M.ricci(u))
        assert math.isclose(summed, ric, abs_tol=1e-12)
        assert math.isclose(intrinsic_ricci(M, u, r=0.02), ric, abs_tol=2e-3)


def test_surfaces_have_their_textbook_gauss_curvature():
    e1, e2 = [1.0, 0.0], [0.0, 1.0]
    assert math.isclose(sectional_curvature(Sphere(2, R=2.0), e1, e2), 0.25)
    assert sectional_curvature(Cylinder(R=2.0), e1, e2) == 0.0
    assert math.isclose(sectional_curvature(Saddle(kappa=2.0), e1, e2), -4.0)
    with pytest.raises(ParameterError, match="parallel"):
        sectional_curvature(Sphere(2), e1, [2.0, 0.0])


@pytest.mark.parametrize("name", SURFACES)
def test_the_metric_in_normal_coordinates_departs_from_the_identity_at_second_order(name):
    """g(x) = delta - (1/3) R x x + O(|x|^3): the residual shrinks like |x|^3 or faster, while the
    curvature term itself shrinks like |x|^2."""
    M = SURFACES[name]
    direction = uniform_directions(1, M.d, np.random.default_rng(5))[0]
    res = []
    for size in (0.1, 0.05):
        x = size * direction
        res.append(np.max(np.abs(normal_coordinate_metric(M, x) - metric_expansion(M, x))))
        if name != "cylinder":       # the cylinder is flat: its metric is exactly the identity
            assert np.max(np.abs(metric_expansion(M, x) - np.eye(M.d))) > 50 * res[-1]
    assert res[1] < res[0] / 6 or res[0] < 1e-9


def test_injectivity_radius_and_where_geodesics_meet():
    C = Cylinder(R=1.5, D=3)
    assert math.isclose(injectivity_radius(C), 1.5 * math.pi)
    gap = antipodal_gap(C, [1.0, 0.0], [1.5 * math.pi * 0.99, 1.5 * math.pi])
    assert gap[0] > 1e-3 and gap[1] < 1e-12
    assert antipodal_gap(C, [0.0, 1.0], [1.5 * math.pi])[0] > 9     # along the line they never meet
    assert injectivity_radius(Saddle()) == math.inf
    for M in SURFACES.values():                                     # the samplers stay inside it
        if not isinstance(M, Quadric) or isinstance(M, Saddle):
            assert M.patch_radius < injectivity_radius(M)
    with pytest.raises(ParameterError, match="closed-form injectivity radius"):
        injectivity_radius(default_loop_manifold())
