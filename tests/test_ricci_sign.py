"""tanbias.theory.ricci_sign: ring laws (chord and volume factors) and the Ricci sign test on S^k x R^(d-k)."""

import math

import numpy as np
import pytest
from scipy import stats

from tanbias.errors import ParameterError
from tanbias.theory.manifolds import Cylinder, GeneralizedCylinder, Sphere
from tanbias.theory.radial import Epanechnikov, Gaussian
from tanbias.theory.ricci_sign import (RicciSignTest, exact_ricci_coefficient, ricci_sign_data,
                                ricci_sign_test, ring_data, ring_factors, ring_first_order)

S2R = GeneralizedCylinder(k=2, d=3, R=1.0, D=4, seed=0)


def share_dirs(s):
    phi = np.arcsin(np.sqrt(s))
    u = np.zeros((len(s), 3))
    u[:, 0], u[:, 2] = np.sin(phi), np.cos(phi)
    return u


# ------------------------------------------------------------------ ring laws
def test_ring_factors_have_mean_one_and_multiply():
    law = Gaussian(0.2)
    beta = stats.beta(1, 0.5)
    x, w = np.polynomial.legendre.leggauss(60)
    s = 0.5 * (x + 1)                       # integrate against Beta(1, 1/2) by substitution
    # Beta(1,1/2) density 0.5 (1-s)^(-1/2): use s = 1 - v^2 to remove the singularity
    v = 0.5 * (x + 1)
    s = 1 - v ** 2
    wt = 0.5 * w * 2 * v * beta.pdf(s)
    f = ring_factors(S2R, law, 0.3, share_dirs(s))
    for key in ("chord", "volume", "ring"):
        assert wt @ f[key] == pytest.approx(1.0, abs=1e-6), key
    prod = f["chord"] * f["volume"]
    assert np.allclose(f["ring"], prod / (wt @ prod), rtol=1e-6)


def test_ring_factors_signs_and_first_order():
    sigma = 0.05
    law = Gaussian(sigma)
    t = 1.5 * np.sqrt(law.eta_g(3))
    s = np.linspace(0, 1, 11)
    f = ring_factors(S2R, law, t, share_dirs(s))
    assert np.all(np.diff(f["chord"]) > 0) and np.all(np.diff(f["volume"]) < 0)
    # first order on the ring: 1 + t^2 [(t^2/sigma^2) s^2/24 - s/6] - mean (Beta(1, 1/2) moments)
    E1, E2 = 2 / 3, 8 / 15
    pred = 1 + t ** 2 * ((t / sigma) ** 2 * (s ** 2 - E2) / 24 - (s - E1) / 6)
    assert np.allclose(f["ring"], pred, atol=5 * t ** 4)


def test_ring_factors_bad_radius():
    with pytest.raises(ParameterError, match="t=3.0 is out of range"):
        ring_factors(S2R, Gaussian(0.1), 3.0, [[1.0, 0.0, 0.0]])


def test_ring_first_order_matches_the_ring_factors():
    s = np.linspace(0.0, 1.0, 21)
    u = np.stack([np.sqrt(s), 0 * s, np.sqrt(1 - s)], axis=1)
    law = Gaussian(1.0).with_eta(0.01, 3)
    t = 0.5 * np.sqrt(0.01)
    exact = ring_factors(S2R, law, t, u)["ring"] - 1
    first = ring_first_order(S2R, law, t, s)
    assert np.max(np.abs(exact - first)) < 0.01 * np.max(np.abs(first))
    with pytest.raises(ParameterError, match="law="):
        ring_first_order(S2R, Epanechnikov(1.0), t, s)


def test_ring_data():
    r = ring_data(S2R, Gaussian(0.1), 2.0)
    assert r["t"] == pytest.approx(2.0 * np.sqrt(0.03))
    assert np.sum(r["radius_density"]) * (r["x"][1] - r["x"][0]) == pytest.approx(1.0, abs=1e-6)


# ------------------------------------------------------------------ the sign of the Ricci term
def test_ricci_sign_test_supports_our_sign():
    res = ricci_sign_test(S2R, Gaussian(0.3), n=300_000, rng=4)
    assert isinstance(res, RicciSignTest)
    assert res.beta_ours == pytest.approx(-1 / 6) and res.beta_statement == pytest.approx(1 / 6)
    assert abs(res.z("ours")) < 4 and res.z("statement") < -8
    assert abs(res.shift - res.exact_shift) < 4 * res.shift_se
    # the three first-order readings are ordered: ours < extrinsic only < statement
    p = res.predicted
    assert p["ours"] < p["extrinsic only"] < p["statement"]
    with pytest.raises(ParameterError, match="reading"):
        res.z("both")


@pytest.mark.parametrize("k, d, R", [(2, 3, 1.0), (3, 5, 2.0), (2, 4, 0.5)])
def test_exact_ricci_coefficient_tends_to_minus_k_minus_1_over_6R2(k, d, R):
    M = GeneralizedCylinder(k=k, d=d, R=R, D=d + 1)
    beta = exact_ricci_coefficient(M, Gaussian(1.0).with_eta(1e-5 * R ** 2, d))
    assert beta == pytest.approx(-(k - 1) / (6 * R ** 2), rel=1e-3)


@pytest.mark.parametrize("M", [Cylinder(R=1.0), Sphere(3, R=1.0, D=4),
                               GeneralizedCylinder(k=1, d=3, R=1.0)],
                         ids=["cylinder", "sphere", "k=1"])
def test_ricci_sign_test_rejects_manifolds_without_a_directional_ricci_term(M):
    with pytest.raises(ParameterError):
        ricci_sign_test(M, Gaussian(0.1), n=10)


def test_ricci_sign_data_orders_the_three_readings():
    law = Gaussian(0.3)
    rs = ricci_sign_data(S2R, law, S2R.sample(3000, law, 0).u, n_curve=11)
    f = rs["first_order"]
    # along the sphere factor (s = 1) the Ricci term lowers the density in our reading
    assert f["ours"][-1] < f["extrinsic only"][-1] < f["statement"][-1]
    assert rs["hist"].n == 3000 and rs["exact"].shape == (11,)


def test_ricci_sign_test_report_and_verdicts():
    law = Gaussian(0.3)
    sign = ricci_sign_test(S2R, law, n=200_000, rng=3)
    assert sign.report().startswith(f"η_g = {sign.eta_g:.3g}, 200,000 samples")
    assert all(c.passed for c in sign.checks())
    rejected = [c.refute() for c in sign.rejected_readings()]
    assert all(c.expected_to_fail for c in rejected)


def test_the_projected_direction_shifts_the_mean_share_by_its_own_first_order():
    """v/|v| shortens the sphere part: s_hat = s - r^2 s^2 (1 - s) / 3; on S^2 x R the mean share
    then falls where the geodesic u's rises, beta read from it is not -1/6, and both shifts still
    vanish linearly in eta_g (attenuation holds either way)."""
    from tanbias.theory.ricci_sign import direction_variables, projected_share_correction

    M = GeneralizedCylinder(k=2, d=3, R=1.0, D=4, seed=0)
    assert math.isclose(projected_share_correction(M, 0.3), -0.3 * 8 / 105 / 3, rel_tol=1e-9)
    assert math.isclose(projected_share_correction(GeneralizedCylinder(k=2, d=3, R=2.0, D=4), 0.3),
                        projected_share_correction(M, 0.3) / 4, rel_tol=1e-9)
    shifts = {}
    for sigma in (0.3, 0.15):
        law = Gaussian(sigma)
        dv = direction_variables(M, law, M.sample(400_000, law, np.random.default_rng(5)))
        for name, row in dv.items():
            assert abs(row["shift"] - row["predicted"]) < 4 * row["shift_se"] + 0.1 * abs(row["predicted"]), (sigma, name)
        shifts[sigma] = dv
    dv = shifts[0.3]
    assert dv["geodesic"]["shift"] > 0 > dv["projected"]["shift"]
    assert abs(dv["geodesic"]["beta"] + 1 / 6) < 4 * dv["geodesic"]["beta_se"]
    assert dv["projected"]["beta"] < -1 / 6 - 8 * dv["projected"]["beta_se"]          # about -0.45
    ratio = shifts[0.3]["projected"]["predicted"] / shifts[0.15]["projected"]["predicted"]
    assert math.isclose(ratio, 4.0, rel_tol=1e-9)                      # linear in eta_g = 3 sigma^2
