"""Zipf vocabulary: radii, eta_g per token, sampling, buckets."""

import numpy as np
import pytest
from scipy import stats

from tanbias.errors import ParameterError
from tanbias.theory.frequency import ZipfVocabulary, bucket
from tanbias.theory.manifolds import Cylinder, Sphere
from tanbias.theory.radial import Gaussian, Laplace


def test_frequencies_and_radii():
    V = ZipfVocabulary(50, s=1.2, t_max=0.4, alpha=0.7)
    f = np.arange(1, 51) ** -1.2
    assert np.allclose(V.frequencies, f / f.sum())
    assert V.t[-1] == pytest.approx(0.4)
    assert np.allclose(V.t, 0.4 * (f / f[-1]) ** -0.7)
    assert np.all(np.diff(V.t) > 0)
    assert np.allclose(ZipfVocabulary(10, alpha=0.0).t, 1.0)


def test_eta_g_per_token_matches_the_token_laws():
    for base in (Gaussian(1.0), Laplace(2.0)):
        V = ZipfVocabulary(12, t_max=0.3, alpha=0.5, law=base)
        eta = V.eta_g(3)
        for i in (0, 5, 11):
            law = V.law(i)
            assert type(law) is type(base) and law.scale == pytest.approx(V.t[i])
            assert eta[i] == pytest.approx(law.eta_g(3), rel=1e-12)


def test_token_sampling_follows_the_frequencies():
    V = ZipfVocabulary(8, s=1.0)
    tok = V.sample_tokens(50_000, np.random.default_rng(0))
    counts = np.bincount(tok, minlength=8)
    assert stats.chisquare(counts, 50_000 * V.frequencies).pvalue > 1e-3


def test_occurrences_use_each_token_law():
    V = ZipfVocabulary(5, t_max=0.2, alpha=1.0)
    occ = V.sample_occurrences(20_000, Sphere(2, D=3, seed=0), np.random.default_rng(1))
    assert len(occ) == 20_000 and np.all(np.diff(occ.token) >= 0)
    for i in range(5):
        r = occ.samples.r[occ.token == i]
        # on the sphere chord ~ flat radius law (Archimedes); r^2 mean ~ eta at small t
        assert np.mean(occ.samples.chord[occ.token == i] ** 2) == pytest.approx(V.eta_g(2)[i], rel=0.15)
        assert r.size > 0
    mans = [Cylinder(R=1.0, seed=i) for i in range(5)]
    occ2 = V.sample_occurrences(500, mans, np.random.default_rng(2))
    for i in np.unique(occ2.token):
        assert np.max(mans[i].residual(occ2.samples.y[occ2.token == i])) < 1e-10


def test_buckets():
    f = np.array([0.05, 0.5, 0.1, 0.2, 0.1, 0.05])
    assert bucket(f, 3).tolist() == [2, 0, 1, 0, 1, 2]
    b = ZipfVocabulary(100).bucket(4)
    assert np.bincount(b).tolist() == [25, 25, 25, 25] and np.all(np.diff(b) >= 0)
    occ = ZipfVocabulary(1000, s=1.0).bucket(4, by="occurrences")
    V = ZipfVocabulary(1000, s=1.0)
    mass = np.bincount(occ, weights=V.frequencies)
    assert np.all(np.diff(occ) >= 0) and np.all(np.abs(mass - 0.25) < 0.1)


def test_bad_inputs():
    with pytest.raises(ParameterError, match=r"n_tokens=0 is out of range: valid range is \[1, inf\)"):
        ZipfVocabulary(0)
    with pytest.raises(ParameterError, match=r"alpha=-0.5 is out of range: valid range is \[0, inf\)"):
        ZipfVocabulary(10, alpha=-0.5)
    with pytest.raises(ParameterError, match="valid range"):
        ZipfVocabulary(10).law(10)
    with pytest.raises(ParameterError, match="valid range"):
        ZipfVocabulary(10).sample_occurrences(5, "sphere", np.random.default_rng(0))
    with pytest.raises(ParameterError, match="valid range"):
        bucket([1.0, -1.0])


def test_bucket_second_moments_follow_eta_g():
    from tanbias.theory.frequency import bucket_second_moments
    V = ZipfVocabulary(200, s=1.0, t_max=0.2, alpha=0.5)
    occ = V.sample_occurrences(20_000, Sphere(2, R=1.0, D=3), np.random.default_rng(2))
    b = bucket_second_moments(V, occ, 2, 4, predict=lambda eta: eta * (1 + eta / 6))
    assert b["count"].sum() == 20_000 and b["measured"].shape == (4,)
    assert np.all(np.abs(b["measured"] - b["predicted"]) < 4.5 * b["stderr"])
    assert np.all(np.diff(b["predicted"]) > 0)                 # rarer buckets: larger radii
    flat = bucket_second_moments(V, occ, 2, 4)
    assert np.all(flat["predicted"] < b["predicted"])          # the sphere adds eta^2 / 6
    with pytest.raises(ParameterError, match="occ="):
        bucket_second_moments(V, None, 2)
