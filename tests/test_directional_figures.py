"""Chapter-3 additions to tanbias.directional: ring laws, the Ricci sign test, figures."""

import numpy as np
import plotly.io as pio
import pytest
from scipy import stats

from tanbias.directional import (DirectionSamples, RicciSignTest, amplitude_scan,
                                 direction_checks, direction_density_data,
                                 exact_directional_density, exact_ricci_coefficient,
                                 ricci_sign_data, ricci_sign_test, ring_data, ring_factors)
from tanbias.figures.directional import (amplitude_figure, direction_density_figure,
                                         directions_interactive, ricci_sign_figure,
                                         ring_interactive)
from tanbias.errors import ParameterError
from tanbias.manifolds import Cylinder, GeneralizedCylinder, Saddle, Sphere
from tanbias.radial import Epanechnikov, Gaussian

S2R = GeneralizedCylinder(k=2, d=3, R=1.0, D=4, seed=0)


def share_dirs(s):
    phi = np.arcsin(np.sqrt(s))
    u = np.zeros((len(s), 3))
    u[:, 0], u[:, 2] = np.sin(phi), np.cos(phi)
    return u


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


def test_direction_data_and_checks_on_the_cylinder():
    C, law = Cylinder(R=1.0, D=3, seed=0), Epanechnikov(1.5)   # eta_g = 0.75
    data = direction_density_data(C, law, n=20_000, rng=0, bins=8)
    assert data["hist"].n == 20_000 and data["u"].shape == (20_000, 2)
    assert data["exact"][0] > 1 > data["exact"][len(data["exact"]) // 2]   # theta = 0 favoured
    c = direction_checks(C, law, data["u"], bins=8)
    assert c["chi2_exact"][2] > 1e-3 and c["chi2_uniform"][2] < 1e-3
    assert abs(c["amplitude"] - c["exact_amplitude"]) < 4 * c["amplitude_se"]
    fig = direction_density_figure(data)
    assert len(fig.data) == 4 and fig.layout.title.text and fig.layout.xaxis.title.text
    assert fig.layout.yaxis.title.text == "density relative to uniform"


def test_direction_data_needs_a_surface():
    with pytest.raises(ParameterError, match="manifold.d=3"):
        direction_density_data(S2R, Gaussian(0.1), n=10)


def test_amplitude_scan_is_first_order_and_plots():
    C = Cylinder(R=1.0)
    sc = amplitude_scan(C, Gaussian(1.0), np.geomspace(1e-4, 1e-1, 4))
    assert np.all(np.abs(sc["relative_error"][:3]) < 0.01)
    slope = np.polyfit(np.log(sc["eta_g"]), np.log(sc["exact"]), 1)[0]
    assert slope == pytest.approx(1.0, abs=0.01)
    fig = amplitude_figure({"cylinder": sc}, {"cylinder": {"eta_g": [0.1], "amplitude": [3e-4],
                                                           "se": [1e-4]}})
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert len(fig.data) == 3


def test_ricci_sign_figure_traces():
    law = Gaussian(0.3)
    u = S2R.sample(5000, law, 0).u
    fig = ricci_sign_figure(S2R, law, u)
    names = [t.name for t in fig.data]
    assert len(fig.data) == 6 and any("our derivation" in n for n in names)
    # the first-order curves are normalised: mean 1 under Beta(1, 1/2)
    s = np.asarray(fig.data[3].x)
    y = np.asarray(fig.data[3].y)
    assert np.all(np.isfinite(y)) and s[0] == 0 and s[-1] == 1


def test_ring_data_and_interactives_are_light():
    r = ring_data(S2R, Gaussian(0.1), 2.0)
    assert r["t"] == pytest.approx(2.0 * np.sqrt(0.03))
    assert np.sum(r["radius_density"]) * (r["x"][1] - r["x"][0]) == pytest.approx(1.0, abs=1e-6)
    demo = ring_interactive(S2R, etas=(0.01, 0.1), taus=(0.5, 2.0))
    sd = demo.static_dict()
    assert len(sd["frames"]) == 4 and len(pio.to_json(sd, validate=False)) < 1_000_000
    dirs = directions_interactive(DirectionSamples(
        {"cylinder": Cylinder(R=1.0), "sphere": Sphere(2, R=1.0, D=3)}, (0.01, 0.1), n=2000, bins=6))
    sd = dirs.static_dict()
    assert len(sd["frames"]) == 4
    assert dirs.data(0.1, "cylinder")["hist"].n == 2000          # cached frame data
    sphere_frame = dirs.data(0.1, "sphere")
    assert np.allclose(sphere_frame["exact"], 1.0, atol=1e-9)


def test_direction_samples_serve_checks_and_figure_alike():
    C = Cylinder(R=1.0, D=3, seed=0)
    ds = DirectionSamples({"cylinder": C, "sphere": Sphere(2, R=1.0, D=3)}, (0.01, 0.1), n=3000,
                          bins=6)
    frame = ds.data(0.1, "cylinder")
    assert frame is ds.data(0.1, "cylinder") and frame["u"].shape == (3000, 2)
    demo = directions_interactive(ds)
    assert demo.samples is ds and demo.data(0.1, "cylinder") is frame
    with pytest.raises(ParameterError, match="surface"):
        ds.data(0.1, "torus")
    with pytest.raises(ParameterError, match="samples"):
        directions_interactive({"cylinder": C})


def test_ricci_sign_data_orders_the_three_readings():
    law = Gaussian(0.3)
    rs = ricci_sign_data(S2R, law, S2R.sample(3000, law, 0).u, n_curve=11)
    f = rs["first_order"]
    # along the sphere factor (s = 1) the Ricci term lowers the density in our reading
    assert f["ours"][-1] < f["extrinsic only"][-1] < f["statement"][-1]
    assert rs["hist"].n == 3000 and rs["exact"].shape == (11,)


def test_chapter3_check_helpers():
    from tanbias.directional import (amplitude_crossing, direction_verdicts, mc_bias_amplitudes,
                                     ring_first_order, surface_direction_checks)
    ds = DirectionSamples({"cylinder": Cylinder(R=1.0, D=3, seed=0),
                           "sphere": Sphere(2, R=1.0, D=3, seed=0)}, (0.01, 0.3), n=6000)
    numbers = surface_direction_checks(ds, 0.3)
    assert {"chi2_exact", "chi2_uniform", "amplitude", "exact_amplitude"} <= set(numbers["cylinder"])
    verdicts = direction_verdicts(ds, numbers)
    assert [c.label.split(":")[0] for c in verdicts] == ["cylinder", "cylinder", "sphere", "sphere"]
    assert all(c.passed for c in verdicts)
    sc = amplitude_scan(Cylinder(R=1.0), Gaussian(1.0), np.geomspace(1e-3, 1.0, 9))
    eta10 = amplitude_crossing(sc, 0.10)
    assert sc["eta_g"][0] < eta10 < sc["eta_g"][-1]
    with pytest.raises(ParameterError, match="level=5"):
        amplitude_crossing(sc, 5.0)
    mc = mc_bias_amplitudes(Cylinder(R=1.0), Gaussian(1.0), [0.1, 0.3], n=20_000)
    assert len(mc["amplitude"]) == 2
    assert all(abs(a - e) < 4 * s for a, e, s in zip(mc["amplitude"], mc["exact"], mc["se"]))
    s = np.linspace(0.0, 1.0, 21)
    u = np.stack([np.sqrt(s), 0 * s, np.sqrt(1 - s)], axis=1)
    law = Gaussian(1.0).with_eta(0.01, 3)
    t = 0.5 * np.sqrt(0.01)
    exact = ring_factors(S2R, law, t, u)["ring"] - 1
    first = ring_first_order(S2R, law, t, s)
    assert np.max(np.abs(exact - first)) < 0.01 * np.max(np.abs(first))
    with pytest.raises(ParameterError, match="law="):
        ring_first_order(S2R, Epanechnikov(1.0), t, s)


def test_ricci_sign_test_report_and_verdicts():
    law = Gaussian(0.3)
    sign = ricci_sign_test(S2R, law, n=200_000, rng=3)
    assert sign.report().startswith(f"η_g = {sign.eta_g:.3g}, n = 200,000")
    assert all(c.passed for c in sign.checks())
    rejected = [c.refute() for c in sign.rejected_readings()]
    assert all(c.expected_to_fail for c in rejected)
