"""Radial laws: closed forms against quadrature, exact radius sampling, validation."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from tanbias.errors import ParameterError
from tanbias.theory.radial import Custom, Epanechnikov, Gaussian, Laplace, PowerLaw, RadialLaw

def reference_cdf(law, d, top):
    """Independent CDF of g(r) r^(d-1): trapezoid on a dense grid, normalised by quadrature."""
    t = np.linspace(0.0, top, 200_001)
    f = law.g(t) * t ** (d - 1)
    cum = np.concatenate([[0.0], np.cumsum((f[1:] + f[:-1]) / 2 * np.diff(t))])
    norm = quad_moment(law, d - 1)
    return lambda x: np.interp(x, t, cum / norm)


LAWS = [Gaussian(0.7), Laplace(0.3), PowerLaw(0.5, a=6.0), Epanechnikov(1.3)]


def quad_moment(law, k):
    top = law.support if math.isfinite(law.support) else np.inf
    return integrate.quad(lambda t: float(law.g(t)) * t ** k, 0, top, epsabs=0, epsrel=1e-12,
                          limit=400)[0]


@pytest.mark.parametrize("law", LAWS, ids=lambda l: l.name)
@pytest.mark.parametrize("k", [0, 1, 2, 3.5, 5])
def test_closed_form_moments_match_quadrature(law, k):
    assert law.moment(k) == pytest.approx(quad_moment(law, k), rel=1e-9)


@pytest.mark.parametrize("d", [1, 2, 3, 7])
def test_eta_closed_forms(d):
    s, b, h = 0.3, 0.2, 1.7
    assert Gaussian(s).eta_g(d) == pytest.approx(d * s ** 2, rel=1e-14)
    assert Laplace(b).eta_g(d) == pytest.approx(d * (d + 1) * b ** 2, rel=1e-14)
    assert Epanechnikov(h).eta_g(d) == pytest.approx(h ** 2 * d / (d + 4), rel=1e-14)
    a = d / 2 + 3.0
    assert PowerLaw(s, a).eta_g(d) == pytest.approx(s ** 2 * d / (2 * a - d - 2), rel=1e-12)
    for law in (Gaussian(s), Laplace(b), Epanechnikov(h), PowerLaw(s, a)):
        ratio = quad_moment(law, d + 1) / quad_moment(law, d - 1)
        assert law.eta_g(d) == pytest.approx(ratio, rel=1e-9)


@pytest.mark.parametrize("law", LAWS, ids=lambda l: l.name)
def test_profiles_strictly_decrease_on_support(law):
    t = np.linspace(0, min(law.support, 10 * law.scale), 2001)[:-1]
    assert np.all(np.diff(law.g(t)) < 0)
    assert np.allclose(law.log_g(t), np.log(law.g(t)), atol=1e-12)


@pytest.mark.parametrize("law", LAWS + [Custom(lambda t: 1 / (1 + t ** 2) ** 4, scale=1.0)],
                         ids=lambda l: l.name)
@pytest.mark.parametrize("d", [1, 2, 5])
def test_sampled_radii_follow_g_r_to_the_d_minus_1(law, d):
    r = law.sample_radius(4000, d, np.random.default_rng(d))
    assert r.shape == (4000,) and np.all(r >= 0)
    ref = reference_cdf(law, d, r.max())
    assert stats.kstest(r, ref).pvalue > 1e-3
    assert np.allclose(law.radius_cdf(np.quantile(r, [0.1, 0.5, 0.9]), d),
                       ref(np.quantile(r, [0.1, 0.5, 0.9])), atol=1e-6)


def test_sampler_mean_square_radius_is_eta():
    rng = np.random.default_rng(7)
    for law in LAWS:
        r = law.sample_radius(200_000, 3, rng)
        assert np.mean(r ** 2) == pytest.approx(law.eta_g(3), rel=0.03)


@pytest.mark.parametrize("law", LAWS, ids=lambda l: l.name)
def test_with_eta_rescales_within_the_family(law):
    new = law.with_eta(0.0123, d=3)
    assert type(new) is type(law)
    assert new.eta_g(3) == pytest.approx(0.0123, rel=1e-12)
    assert new.scaled(2.0).eta_g(3) == pytest.approx(4 * 0.0123, rel=1e-12)


def test_custom_matches_the_builtin_family():
    sigma = 0.4
    cust = Custom(lambda t: np.exp(-t ** 2 / (2 * sigma ** 2)), scale=sigma)
    for d in (1, 2, 4):
        assert cust.eta_g(d) == pytest.approx(Gaussian(sigma).eta_g(d), rel=1e-9)
    comp = Custom(lambda t: 1 - t ** 2, support=1.0)
    assert comp.eta_g(2) == pytest.approx(Epanechnikov(1.0).eta_g(2), rel=1e-9)
    r = comp.sample_radius(3000, 2, np.random.default_rng(1))
    assert r.max() < 1.0
    assert stats.kstest(r, lambda x: Epanechnikov(1.0).radius_cdf(x, 2)).pvalue > 1e-3
    scaled = cust.with_eta(0.01, d=2)
    assert scaled.eta_g(2) == pytest.approx(0.01, rel=1e-9)


def test_powerlaw_divergent_moment_names_a():
    law = PowerLaw(1.0, a=1.5)
    with pytest.raises(ParameterError) as exc:
        law.eta_g(2)
    msg = str(exc.value)
    assert msg.startswith("a=1.5") and "valid range is (2, inf)" in msg
    with pytest.raises(ParameterError, match="a=0.9"):
        PowerLaw(1.0, a=0.9).sample_radius(10, 2, np.random.default_rng(0))
    assert np.isfinite(law.moment(1.5))


def test_law_is_a_radial_law_abc():
    with pytest.raises(TypeError):
        RadialLaw()


# ----------------------------------------------------------------- bad inputs (property tests)
bad_positive = st.one_of(st.floats(max_value=0.0), st.just(float("nan")))


@settings(max_examples=30, deadline=None)
@given(bad_positive)
def test_bad_scale_raises_naming_value_and_range(v):
    for cls, name in ((Gaussian, "sigma"), (Laplace, "scale"), (Epanechnikov, "h")):
        with pytest.raises(ParameterError) as exc:
            cls(v)
        msg = str(exc.value)
        assert msg.startswith(f"{name}=") and "valid range" in msg
        assert ("nan" in msg) if math.isnan(v) else (repr(float(v)) in msg)


@settings(max_examples=30, deadline=None)
@given(bad_positive)
def test_with_eta_rejects_non_positive_eta(eta):
    with pytest.raises(ParameterError) as exc:
        Gaussian(1.0).with_eta(eta, d=2)
    msg = str(exc.value)
    assert msg.startswith("eta_g=") and "valid range is (0, inf)" in msg


@settings(max_examples=30, deadline=None)
@given(st.floats(min_value=0.05, max_value=5.0), st.floats(min_value=0.3, max_value=3.0))
def test_custom_rejects_a_profile_that_stops_decreasing(t0, bump):
    # exp(-t), multiplied by a ramp that rises on [t0, t0 + 0.2]: increasing there, decaying after
    def g(t):
        t = np.asarray(t, dtype=float)
        return np.exp(-t) * (1 + bump * np.clip((t - t0) / 0.2, 0, 1))
    with pytest.raises(ParameterError) as exc:
        Custom(g, scale=1.0)
    msg = str(exc.value)
    assert msg.startswith("g is not strictly decreasing") and "valid range" in msg
    first = float(msg.split("first failure at t=")[1].split(" ")[0])
    assert t0 - 0.01 <= first <= t0 + 0.01


@settings(max_examples=20, deadline=None)
@given(st.one_of(st.floats(min_value=0.5, max_value=1e3).filter(lambda x: x != int(x)),
                 st.integers(max_value=0)))
def test_sample_radius_rejects_bad_n(n):
    with pytest.raises(ParameterError) as exc:
        Gaussian(1.0).sample_radius(n, 2, np.random.default_rng(0))
    msg = str(exc.value)
    assert msg.startswith("n=") and "valid range is [1, inf)" in msg


def test_quadrature_moment_matches_the_closed_forms():
    from tanbias.theory.radial import quadrature_moment
    for law in (Gaussian(0.3), Laplace(0.2), PowerLaw(1.0, a=6.0), Epanechnikov(0.5)):
        for k in (0, 1, 3):
            assert quadrature_moment(law, k) == pytest.approx(law.moment(k), rel=1e-9)
    with pytest.raises(ParameterError, match="k="):
        quadrature_moment(Gaussian(1.0), -1)
    with pytest.raises(ParameterError, match="law="):
        quadrature_moment(lambda t: t, 1)


def test_nearly_flat_is_a_decreasing_custom_law_on_its_ball():
    from tanbias.theory.radial import nearly_flat
    law = nearly_flat(1.5)
    assert isinstance(law, Custom) and law.name == "flat" and law.support == 1.5
    assert float(law.g(2.0)) == 0.0 and float(law.g(0.0)) == 1.0
    r = law.sample_radius(50_000, 2, np.random.default_rng(0))
    assert np.mean(r <= 0.75) == pytest.approx(0.25, abs=0.01)      # uniform in the disc
    with pytest.raises(ParameterError, match="support="):
        nearly_flat(-1.0)
