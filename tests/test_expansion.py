"""Local expansion (chapter 1): closed forms, orders in t (its figures: test_expansion_figures.py)."""

import numpy as np
import pytest

from tanbias.errors import ParameterError
from tanbias.theory.expansion import expansion_scaling, local_expansion, mean_square_ii, side_view_data
from tanbias.theory.manifolds import Cylinder, GeneralizedCylinder, Quadric, Saddle, Sphere, uniform_directions


@pytest.mark.parametrize("M, expected", [
    (Sphere(2, R=2.0, D=3), 1 / 4),                   # |II|^2 = 1/R^2 in every direction
    (Cylinder(R=2.0), 3 / 8 / 4),                     # E cos^4 / R^2
    (Saddle(kappa=1.5), 1.5 ** 2 / 2),                # kappa^2 E cos^2(2 theta)
    (GeneralizedCylinder(k=2, d=3, R=1.0, D=4), 8 / 15),  # E s^2, s ~ Beta(1, 1/2)
])
def test_mean_square_ii_closed_forms(M, expected):
    assert mean_square_ii(M) == pytest.approx(expected, rel=1e-12)


def test_mean_square_ii_matches_monte_carlo_on_a_random_quadric():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((2, 3, 3))
    A = (A + A.transpose(0, 2, 1)) / 2
    Q = Quadric(A, D=6, seed=1)
    u = uniform_directions(400_000, 3, rng)
    mc = np.mean(np.sum(Q.second_fundamental_form(u) ** 2, axis=1))
    assert mean_square_ii(Q) == pytest.approx(mc, rel=0.01)


def test_sphere_parts_are_exact():
    t = 0.3
    e = local_expansion(Sphere(2, R=1.0, D=3, seed=2), t, 50, 0)
    assert np.allclose(np.linalg.norm(e["normal"], axis=1), 1 - np.cos(t), atol=1e-12)
    assert np.allclose(np.linalg.norm(e["tangent"], axis=1), np.sin(t), atol=1e-12)
    # remainders: t - sin t ~ t^3/6 (tangent) and (1 - cos t) - t^2/2 ~ t^4/24 (normal)
    assert np.allclose(e["tangent_remainder"], t - np.sin(t), atol=1e-12)
    assert np.allclose(e["normal_remainder"], t ** 2 / 2 - (1 - np.cos(t)), atol=1e-12)


@pytest.mark.parametrize("M", [Cylinder(R=1.0, D=5), Saddle(kappa=1.0, D=4, patch_radius=1.0)],
                         ids=["cylinder", "saddle"])
def test_orders_of_the_parts(M):
    sc = expansion_scaling(M, np.geomspace(0.005, 0.1, 5), n=300, rng=1)
    assert sc["slope_normal"].slope == pytest.approx(2.0, abs=0.02)
    assert sc["slope_tangent"].slope == pytest.approx(1.0, abs=0.01)
    assert sc["slope_remainder"].slope > 2.9
    assert sc["predicted_rms_normal"][0] == pytest.approx(sc["rms_normal"][0], rel=0.1)


def test_bad_inputs_raise_parameter_errors():
    C = Cylinder(R=1.0)
    with pytest.raises(ParameterError, match="t=5.0 is out of range"):
        local_expansion(C, 5.0, 10, 0)
    with pytest.raises(ParameterError, match="ts has 2 radii"):
        expansion_scaling(C, [0.1, 0.2])
    with pytest.raises(ParameterError, match="manifold"):
        mean_square_ii("cylinder")


def test_the_side_view_lies_on_the_predicted_curve():
    C = Cylinder(R=1.0, D=3, seed=0)
    v = side_view_data(C, 0.2, n=100, rng=0)
    # to first order the points lie on the predicted curve y = t x^2 / 2
    assert np.allclose(v["y"], 0.2 * v["x"] ** 2 / 2, atol=0.2 ** 3)


def test_normal_ratio_and_scaling_checks():
    from tanbias.theory.expansion import normal_ratio, scaling_checks
    S = Sphere(2, R=1.0, D=3)
    t = 0.2
    assert normal_ratio(S, t, n=20) == pytest.approx((1 - np.cos(t)) / (t ** 2 / 2), rel=1e-12)
    sc = expansion_scaling(Cylinder(R=1.0), np.geomspace(0.01, 0.2, 6), n=200)
    checks = scaling_checks("cylinder", sc)
    assert [c.label for c in checks] == ["cylinder: slope of ||n|| vs t",
                                         "cylinder: slope of ||v|| vs t",
                                         "cylinder: slope of the remainder"]
    assert all(c.passed for c in checks)
    bad = dict(sc, slope_normal=sc["slope_tangent"])          # a flat surface would fail
    assert not scaling_checks("flat", bad)[0].passed
