"""Token clouds of one layer: closed forms and brute force first, then synthetic clouds whose
answer is known, then bad input."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from tanbias.theory import alignment as al
from tanbias.theory import token_clouds as tc
from tanbias.errors import ParameterError
from tanbias.theory.manifolds import Cylinder, Sphere
from tanbias.theory.radial import Gaussian


def _typed_cloud(rng, n_types=12, D=6, lo=2, hi=9):
    counts = rng.integers(lo, hi, size=n_types)
    ids = np.repeat(rng.permutation(100)[:n_types] * 3, counts)
    X = rng.normal(size=(len(ids), D)) + rng.normal(size=(100 * 3, D))[ids] * 2
    perm = rng.permutation(len(ids))
    return X[perm], ids[perm]


# --------------------------------------------------------------------------- closed forms
def test_layer_spread_closed_form():
    X = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [2.0, 2.0]])
    assert tc.layer_spread(X) == pytest.approx(np.sqrt(2.0), abs=1e-15)
    rng = np.random.default_rng(0)
    Y = rng.normal(size=(50, 4))
    brute = np.sqrt(np.mean(np.sum((Y - Y.mean(0)) ** 2, axis=1)))
    assert tc.layer_spread(Y) == pytest.approx(brute, rel=1e-13)


def test_type_statistics_equal_brute_force():
    rng = np.random.default_rng(1)
    X, ids = _typed_cloud(rng)
    res = tc.type_statistics(X, ids, min_count=4)
    s = tc.layer_spread(X)
    gm = X.mean(axis=0)
    want = [t for t in np.unique(ids) if np.sum(ids == t) >= 4]
    assert res["type"].tolist() == want
    for j, t in enumerate(want):
        Y = X[ids == t]
        mu = Y.mean(axis=0)
        assert res["count"][j] == len(Y)
        assert res["radius_t"][j] == pytest.approx(
            np.sqrt(np.mean(np.sum((Y - mu) ** 2, axis=1))) / s, rel=1e-12)
        assert res["centroid_distance"][j] == pytest.approx(np.linalg.norm(mu - gm) / s,
                                                            rel=1e-12)
        U = Y / np.linalg.norm(Y, axis=1, keepdims=True)
        cos = [U[a] @ U[b] for a, b in itertools.permutations(range(len(Y)), 2)]
        assert res["self_similarity"][j] == pytest.approx(np.mean(cos), abs=1e-12)


def test_type_statistics_float32_spread_and_zero_rows():
    rng = np.random.default_rng(2)
    X, ids = _typed_cloud(rng, n_types=20)
    a = tc.type_statistics(X, ids, min_count=3)
    b = tc.type_statistics(X.astype(np.float32), ids.astype(np.int32), min_count=3)
    for key in ("radius_t", "centroid_distance", "self_similarity"):
        assert np.allclose(a[key], b[key], rtol=1e-5, atol=1e-6)
    c = tc.type_statistics(X, ids, min_count=3, spread=2.0)     # the unit is the spread
    assert np.allclose(c["radius_t"] * 2.0, a["radius_t"] * tc.layer_spread(X))
    X[np.flatnonzero(ids == a["type"][0])[0]] = 0.0             # a zero row: cosine undefined
    z = tc.type_statistics(X, ids, min_count=3)
    assert np.isnan(z["self_similarity"][0]) and np.all(np.isfinite(z["self_similarity"][1:]))


@settings(max_examples=25, deadline=None)
@given(scale=st.floats(1e-3, 1e3), shift=st.floats(-100, 100), seed=st.integers(0, 2**16))
def test_radii_are_scale_free_and_translation_free(scale, shift, seed):
    rng = np.random.default_rng(seed)
    X, ids = _typed_cloud(rng, n_types=6, D=3)
    a = tc.type_statistics(X, ids, min_count=2)
    b = tc.type_statistics(scale * X + shift, ids, min_count=2)
    assert np.allclose(a["radius_t"], b["radius_t"], rtol=1e-8, atol=1e-10)
    assert np.allclose(a["centroid_distance"], b["centroid_distance"], rtol=1e-8, atol=1e-10)


# --------------------------------------------------------------------------- frequency
def test_radius_falls_and_centroid_distance_rises_with_frequency():
    # The test: within-type radius FALLS with frequency while the centroid's distance
    # to the global mean RISES; the two Spearman correlations with log count have opposite signs.
    rng = np.random.default_rng(3)
    D, n_types = 24, 150
    counts = np.round(np.exp(rng.uniform(np.log(8), np.log(300), n_types))).astype(int)
    lc = np.log(counts)
    rows, ids = [], []
    for t, (c, l) in enumerate(zip(counts, lc)):
        direction = rng.normal(size=D)
        centre = direction / np.linalg.norm(direction) * (1.0 + l) * rng.uniform(0.8, 1.2)
        sigma = 1.0 / l * rng.uniform(0.8, 1.2)
        rows.append(centre + sigma * rng.normal(size=(c, D)))
        ids.append(np.full(c, 1000 + 7 * t))
    X, ids = np.concatenate(rows), np.concatenate(ids)
    st_ = tc.type_statistics(X, ids, min_count=8)
    assert len(st_["type"]) == n_types
    r = tc.spearman_ci(np.log(st_["count"]), st_["radius_t"], n_boot=500, rng=0)
    d = tc.spearman_ci(np.log(st_["count"]), st_["centroid_distance"], n_boot=500, rng=0)
    assert np.sign(r["rho"]) == -np.sign(d["rho"])
    assert r["hi"] < 0 < d["lo"]


# --------------------------------------------------------------------------- spearman_ci
def test_spearman_ci_matches_scipy_and_brute_force_bootstrap():
    rng = np.random.default_rng(4)
    x = np.round(rng.normal(size=80), 1)                # ties, as counts have
    y = np.round(x + rng.normal(size=80), 1)
    res = tc.spearman_ci(x, y, n_boot=300, confidence=0.9, rng=7)
    assert res["rho"] == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-15)
    assert res["lo"] <= res["rho"] <= res["hi"] and res["n"] == 80
    # the documented resampling: rng.integers(0, n, size=(b, n)) in blocks, ranks with ties
    g = np.random.default_rng(7)
    idx = np.concatenate([g.integers(0, 80, size=(b, 80)) for b in (256, 44)])
    boot = [stats.spearmanr(x[i], y[i]).statistic for i in idx]
    lo, hi = np.percentile(boot, [5, 95])
    assert (res["lo"], res["hi"]) == pytest.approx((lo, hi), abs=1e-12)


def test_spearman_ci_is_deterministic_and_handles_constants():
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=200), rng.normal(size=200)
    assert tc.spearman_ci(x, y, rng=3) == tc.spearman_ci(x, y, rng=3)
    assert tc.spearman_ci(x, y, rng=3) != tc.spearman_ci(x, y, rng=4)
    assert tc.spearman_ci(x, y, rng=np.random.default_rng(3)) == tc.spearman_ci(x, y, rng=3)
    flat = tc.spearman_ci(x, np.zeros(200))              # e.g. radii of an embedding layer
    assert np.isnan(flat["rho"]) and np.isnan(flat["lo"]) and flat["n"] == 200


# --------------------------------------------------------------------------- anisotropy
def test_isotropic_gaussian_is_isotropic():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(20000, 20))
    a = tc.anisotropy(X, top_k=5, rng=0)
    assert abs(a["mean_cosine"]) < 0.01
    assert a["isoscore_star"] > 0.97
    assert a["isoscore_star"] == pytest.approx(al.isoscore_star(X), abs=1e-12)
    assert a["topk_share"] == pytest.approx(5 / 20, rel=0.1)
    assert a["top1_share"] == pytest.approx(1 / 20, rel=0.15)
    assert a["contributions"].sum() == pytest.approx(a["mean_cosine"], abs=1e-15)
    assert len(a["outlier_dims"]) <= 2 or np.isnan(a["outlier_share"])


def test_one_huge_mean_dimension_is_the_rogue_dimension():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(3000, 64))
    X[:, 17] += 40.0
    a = tc.anisotropy(X, rng=1)
    assert a["outlier_dims"] == [17]
    assert a["mean_cosine"] > 0.9 and a["outlier_share"] > 0.95
    assert a["top1_share"] < 0.05        # the mean is not variance: the centred cloud is round
    X[:, 3] += 8.0                       # about 4 % of the mean cosine: below the 5 % bar
    a = tc.anisotropy(X, rng=1)
    assert a["outlier_dims"] == [17]
    assert a["contributions"][3] / a["mean_cosine"] == pytest.approx(64 / 1664, rel=0.1)
    assert tc.anisotropy(X, rng=1, outlier_threshold=0.01)["outlier_dims"] == [17, 3]


def test_mean_cosine_estimates_all_pairs():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(60, 5)) + [1.0, 0.5, 0, 0, 0]
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    G = U @ U.T
    exact = (G.sum() - np.trace(G)) / (60 * 59)
    assert tc.anisotropy(X, n_pairs=200000, top_k=2, rng=0)["mean_cosine"] == pytest.approx(
        exact, abs=0.01)


# --------------------------------------------------------------------------- normal share
@pytest.mark.parametrize("c", [20, 200])
def test_points_on_a_subspace_have_no_normal_share(c):
    rng = np.random.default_rng(9)
    cloud = rng.normal(size=(c, 3)) @ rng.normal(size=(3, 50)) + rng.normal(size=50) * 10
    assert abs(tc.normal_share(cloud, 3)) < 1e-12
    assert tc.normal_share(cloud, 2) > 0.01


def test_isotropic_noise_normal_share_is_D_minus_k_over_D():
    X = np.random.default_rng(10).normal(size=(20000, 16))
    assert tc.normal_share(X, 4) == pytest.approx(12 / 16, rel=0.02)


def _clouds(make, ts):
    X = np.concatenate([make(t, i) for i, t in enumerate(ts)])
    ids = np.repeat(np.arange(len(ts)) * 5, [len(make(t, i)) for i, t in enumerate(ts)])
    return X, ids


def test_curved_clouds_scale_as_t_squared_and_flat_noise_as_t_to_zero():
    ts = np.geomspace(0.02, 0.4, 8)
    cyl = Cylinder(R=1.0, D=5, seed=0)
    sph = Sphere(2, R=1.0, D=5, seed=1)
    for make in (lambda t, i: cyl.sample_at_radius(t, 300, np.random.default_rng(i)).y,
                 lambda t, i: sph.sample(300, Gaussian(t), np.random.default_rng(i)).y):
        X, ids = _clouds(make, ts)
        res = tc.type_normal_shares(X, ids, k=2, spread=1.0)
        assert len(res["type"]) == len(ts)
        assert np.all(np.diff(res["radius_t"]) > 0)
        fit = tc.normal_share_scaling(res["radius_t"], res["normal_share"])
        assert fit.slope == pytest.approx(2.0, abs=0.1) and fit.r2 > 0.99
    noise = lambda t, i: t * np.random.default_rng(i).normal(size=(300, 5))  # noqa: E731
    X, ids = _clouds(noise, ts)
    res = tc.type_normal_shares(X, ids, k=2)
    fit = tc.normal_share_scaling(res["radius_t"], res["normal_share"])
    assert abs(fit.slope) < 0.1


def test_type_normal_shares_agree_with_type_statistics_and_normal_share():
    rng = np.random.default_rng(11)
    X, ids = _typed_cloud(rng, n_types=15, D=8, lo=3, hi=20)
    a = tc.type_normal_shares(X, ids, k=2, min_count=3)
    b = tc.type_statistics(X, ids, min_count=4)              # max(min_count, k + 2) = 4
    assert a["type"].tolist() == b["type"].tolist()
    assert np.allclose(a["radius_t"], b["radius_t"], rtol=1e-12)
    for t, share in zip(a["type"], a["normal_share"]):
        assert share == pytest.approx(tc.normal_share(X[ids == t], 2), rel=1e-10)


# --------------------------------------------------------------------------- bad input
_X = np.random.default_rng(12).normal(size=(40, 6))
_IDS = np.repeat(np.arange(4), 10)
_NAN = _X.copy()
_NAN[3, 2] = np.nan
_ZERO = _X.copy()
_ZERO[5] = 0.0
_T = np.array([0.1, 0.2, 0.4])

BAD = [
    ("X", lambda: tc.layer_spread(np.ones(5))),
    ("X", lambda: tc.layer_spread(_NAN)),
    ("X", lambda: tc.layer_spread(_X[:1])),
    ("X", lambda: tc.type_statistics(_NAN, _IDS)),
    ("X", lambda: tc.type_statistics(np.ones((40, 6)), _IDS)),
    ("type_ids", lambda: tc.type_statistics(_X, _IDS[:-1])),
    ("type_ids", lambda: tc.type_statistics(_X, _IDS + 0.5)),
    ("type_ids", lambda: tc.type_statistics(_X, _IDS.reshape(4, 10))),
    ("min_count", lambda: tc.type_statistics(_X, _IDS, min_count=1)),
    ("min_count", lambda: tc.type_statistics(_X, _IDS, min_count=11)),
    ("spread", lambda: tc.type_statistics(_X, _IDS, spread=-1.0)),
    ("y", lambda: tc.spearman_ci([1, 2, 3], [1, 2])),
    ("x", lambda: tc.spearman_ci([1, 2], [1, 2])),
    ("x", lambda: tc.spearman_ci([1, np.inf, 3], [1, 2, 3])),
    ("n_boot", lambda: tc.spearman_ci([1, 2, 3], [1, 3, 2], n_boot=0)),
    ("confidence", lambda: tc.spearman_ci([1, 2, 3], [1, 3, 2], confidence=1.5)),
    ("rng", lambda: tc.spearman_ci([1, 2, 3], [1, 3, 2], rng=None)),
    ("X", lambda: tc.anisotropy(_X[:, :1])),
    ("X[5]", lambda: tc.anisotropy(_ZERO, top_k=2)),
    ("top_k", lambda: tc.anisotropy(_X, top_k=0)),
    ("top_k", lambda: tc.anisotropy(_X, top_k=6)),
    ("zeta", lambda: tc.anisotropy(_X, top_k=2, zeta=1.0)),
    ("n_pairs", lambda: tc.anisotropy(_X, n_pairs=0, top_k=2)),
    ("outlier_threshold", lambda: tc.anisotropy(_X, top_k=2, outlier_threshold=0.0)),
    ("cloud", lambda: tc.normal_share(np.ones(6), 1)),
    ("cloud", lambda: tc.normal_share(_NAN, 1)),
    ("cloud", lambda: tc.normal_share(_X[:3], 2)),
    ("k", lambda: tc.normal_share(_X, 0)),
    ("k", lambda: tc.normal_share(_X, 6)),
    ("k", lambda: tc.type_normal_shares(_X, _IDS, k=6)),
    ("k", lambda: tc.type_normal_shares(_X, _IDS, k=2.5)),
    ("min_count", lambda: tc.type_normal_shares(_X, _IDS, k=2, min_count=1)),
    ("min_count", lambda: tc.type_normal_shares(_X, _IDS, k=2, min_count=20)),
    ("type_ids", lambda: tc.type_normal_shares(_X, _IDS[:5], k=2)),
    ("share", lambda: tc.normal_share_scaling(_T, _T[:2])),
    ("radius_t", lambda: tc.normal_share_scaling(_T[:2], _T[:2])),
    ("share", lambda: tc.normal_share_scaling(_T, [0.1, 0.0, 0.2])),
    ("radius_t", lambda: tc.normal_share_scaling([0.1, np.nan, 0.2], _T)),
]


@pytest.mark.parametrize("name,call", BAD, ids=[f"{i}-{n}" for i, (n, _) in enumerate(BAD)])
def test_bad_input_raises_parameter_error_naming_the_parameter(name, call):
    with pytest.raises(ParameterError) as err:
        call()
    msg = str(err.value)
    assert msg.startswith(name), msg
    assert "valid range" in msg or "expected shape" in msg, msg    # the range, or the shape
    assert msg.rstrip().endswith("."), msg


# ----------------------------------------------------------------------------- count-matched readings
def _count_confounded_text(seed=0, n_types=120, D=32):
    """Types whose true radius and centroid distance do not depend on their count, with counts
    from 6 to about 600 (Zipf-like): a text in documents of 40 tokens. The types come in pairs
    of one count with opposite centres, so that the layer mean stays at 0 however the counts
    fall (a frequent type would otherwise pull the mean towards its own centre)."""
    rng = np.random.default_rng(seed)
    half = np.unique(np.round(6 * np.geomspace(1, 100, n_types // 2))).astype(int)
    counts = np.repeat(half, 2)
    ids = np.repeat(np.arange(len(counts)), counts)
    rng.shuffle(ids)
    centres = rng.normal(size=(len(half), D))
    centres = np.repeat(centres, 2, axis=0) * np.tile([1.0, -1.0], len(half))[:, None]
    centres *= 2.0 / np.linalg.norm(centres, axis=1, keepdims=True)     # all at distance 2
    X = centres[ids] + rng.normal(size=(len(ids), D))                   # all of radius sqrt(D)
    docs = np.arange(len(ids)) // 40
    return X, ids, docs, np.log(counts.astype(float))


@pytest.mark.slow
def test_a_count_matched_reading_does_not_follow_the_count():
    """The plain RMS radius grows with the count ((c - 1)/c) and the plain centroid distance
    falls with it (+sigma^2/c): both correlate with a frequency that is the count. Matched to
    the same number of occurrences, neither does, and the interval over documents contains 0."""
    X, ids, docs, log_count = _count_confounded_text()
    plain = tc.type_statistics(X, ids, min_count=6)
    r_plain = tc.spearman_ci(log_count[plain["type"]], plain["radius_t"], rng=0)
    d_plain = tc.spearman_ci(log_count[plain["type"]], plain["centroid_distance"], rng=0)
    assert r_plain["lo"] > 0 and d_plain["hi"] < 0, (r_plain, d_plain)       # a frequency effect of the count
    matched = tc.matched_statistics(X, ids, m=6, draws=30, rng=1)
    for reading in ("radius_t", "centroid_distance"):
        assert abs(stats.spearmanr(log_count[matched["type"]], matched[reading]).statistic) < 0.2, reading
    res = tc.premise_bootstrap(X[None], ids, docs, log_count, m=6, draws=10, n_boot=100, rng=2)
    assert np.all(res["lo"][0, :2] < 0) and np.all(res["hi"][0, :2] > 0), res
    assert res["n_types"][0] == len(matched["type"]) and res["n_docs"] == docs.max() + 1


def test_the_count_correction_of_stored_radii_removes_the_count_effect():
    """The lab's radii are stored with their counts only (tokens.csv): t·sqrt(c/(c−1)) makes
    the mean squared radius the same for rare and frequent types, where the plain one is not."""
    X, ids, _, log_count = _count_confounded_text(seed=5, D=2)    # few dimensions: a large count bias
    plain = tc.type_statistics(X, ids, min_count=6)
    count = np.exp(log_count[plain["type"]])
    fixed = tc.unbiased_radius(plain["radius_t"], count)
    rare, frequent = count < 20, count > 200
    ratio_plain = np.mean(plain["radius_t"][rare] ** 2) / np.mean(plain["radius_t"][frequent] ** 2)
    ratio_fixed = np.mean(fixed[rare] ** 2) / np.mean(fixed[frequent] ** 2)
    assert ratio_plain < 0.93 and abs(ratio_fixed - 1) < abs(ratio_plain - 1) / 2, (ratio_plain, ratio_fixed)
    with pytest.raises(ParameterError, match="count has values below 2"):
        tc.unbiased_radius([0.3], [1])


def test_premise_bootstrap_finds_a_real_dependence_and_checks_its_input():
    X, ids, docs, log_count = _count_confounded_text(seed=3)
    rng = np.random.default_rng(4)
    X = X * (0.5 + log_count[ids] / log_count.max())[:, None]        # frequent types truly wider
    res = tc.premise_bootstrap(np.stack([X, X]), ids, docs, log_count, m=6, draws=5, n_boot=60, rng=rng)
    assert np.all(res["lo"][:, 0] > 0.3)                              # found at both "layers"
    # the simultaneous band over layers holds the pointwise intervals inside it
    assert np.all(res["band_lo"] <= res["lo"] + 1e-12) and np.all(res["band_hi"] >= res["hi"] - 1e-12)
    assert np.all(res["band_lo"][:, 0] > 0)


@pytest.mark.slow
def test_the_band_over_layers_covers_every_layer_at_once():
    """Ten independent "layers" of pure noise: the band over layers holds every layer's own
    interval inside it, is wider than them, and excludes 0 somewhere in about 5 % of texts."""
    rng = np.random.default_rng(11)
    miss_band = 0
    reps = 12
    wider = []
    for _ in range(reps):
        ids = rng.integers(0, 40, size=2400)
        docs = np.arange(2400) // 24
        H = rng.normal(size=(10, 2400, 3))                   # no dependence on frequency at all
        res = tc.premise_bootstrap(H, ids, docs, np.log1p(np.arange(40.0)), m=6, draws=2, n_boot=100, rng=rng)
        assert np.all(res["band_lo"] <= res["lo"] + 1e-12) and np.all(res["band_hi"] >= res["hi"] - 1e-12)
        wider.append(np.mean((res["band_hi"] - res["band_lo"]) / (res["hi"] - res["lo"])))
        miss_band += int(np.any((res["band_lo"] > 0) | (res["band_hi"] < 0), axis=0).sum())   # per reading
    assert np.mean(wider) > 1.1, "ten layers at once need a wider band than one"
    assert miss_band <= 5, f"{miss_band} of {3 * reps} bands exclude 0 somewhere (about 5 % expected)"


@pytest.mark.slow
def test_spearman_rows_equal_scipys_spearman_with_ties_constants_and_gaps():
    """The bootstrap's fast ρ (ranks of x computed once) is scipy's ρ, case by case."""
    from scipy.stats import spearmanr

    rng = np.random.default_rng(3)
    for trial in range(200):
        n = int(rng.integers(3, 30))
        x = rng.integers(0, 5, n).astype(float) if trial % 2 else rng.normal(size=n)
        Y = [rng.integers(0, 4, n).astype(float) if trial % 3 == 0 else rng.normal(size=n) for _ in range(3)]
        if trial % 7 == 0:
            Y[1][:] = 1.0                                  # a constant reading: NaN, as scipy's guard
        if trial % 5 == 0:
            Y[2][0] = np.nan                               # a missing value: that reading drops it
        got = tc._spearman_rows(x, Y)
        for g, y in zip(got, Y):
            ok = np.isfinite(y)
            want = np.nan if np.ptp(y[ok]) == 0 or np.ptp(x[ok]) == 0 else spearmanr(x[ok], y[ok]).statistic
            assert np.isclose(g, want, atol=1e-12, equal_nan=True), (trial, g, want)


def test_spearman_rows_leaves_out_the_types_without_a_frequency_as_spearmanr_does():
    """Types with no frequency (NaN: never counted, not a whole word) are left out of every
    reading at once; ρ is scipy's on the remaining pairs, reading by reading."""
    from scipy.stats import spearmanr

    from tanbias.theory.token_clouds import _spearman_rows

    rng = np.random.default_rng(0)
    x = rng.normal(size=200)
    x[rng.random(200) < 0.3] = np.nan
    Y = [x * 0.5 + rng.normal(size=200), rng.normal(size=200), np.round(rng.normal(size=200), 1)]
    ok = np.isfinite(x)
    expected = [spearmanr(x[ok], y[ok]).statistic for y in Y]
    assert np.allclose(_spearman_rows(x, Y), expected, rtol=0, atol=1e-12)
    Y[1][~ok] = np.nan                                   # missing where x is missing: the same
    assert np.allclose(_spearman_rows(x, Y), expected, rtol=0, atol=1e-12)
    Y[2][np.flatnonzero(ok)[0]] = np.nan                 # a reading missing on its own: read alone
    assert np.isclose(_spearman_rows(x, Y)[2], spearmanr(x[ok][1:], Y[2][ok][1:]).statistic, atol=1e-12)


def test_ranks_of_many_rows_at_once_are_scipys_rankdata_exactly():
    """The 2-D ranks (one sort for every row) equal scipy's average ranks, ties and all."""
    from scipy.stats import rankdata

    rng = np.random.default_rng(4)
    A = np.round(rng.normal(size=(40, 57)), 1)           # many ties
    A[3] = 2.0                                           # a constant row
    assert np.array_equal(tc._ranks(A), rankdata(A, axis=-1))
    assert np.array_equal(tc._ranks(A[5]), rankdata(A[5]))


def test_every_layer_at_once_gives_each_layers_own_spearman_bit_for_bit():
    """The bootstrap reads all layers of a resample in one pass: the same ρ, to the bit, as layer by
    layer, with types missing a frequency, a reading missing on its own and a layer not read."""
    rng = np.random.default_rng(5)
    for trial in range(60):
        K, L = int(rng.integers(3, 200)), int(rng.integers(1, 12))
        x = rng.integers(0, 9, K).astype(float) if trial % 2 else rng.normal(size=K)
        if trial % 3 == 0:
            x[rng.random(K) < 0.3] = np.nan
        R = rng.normal(size=(L, 3, K))
        if trial % 4 == 0:
            R[int(rng.integers(L)), 2, int(rng.integers(K))] = np.nan
        if trial % 5 == 0:
            R[int(rng.integers(L))] = np.nan
        want = [tc._spearman_rows(x, list(R[layer])) if not np.isnan(R[layer]).all() else [np.nan] * 3
                for layer in range(L)]
        assert np.array_equal(tc._spearman_layers(x, R), np.array(want), equal_nan=True), trial


def test_the_bootstrap_read_by_two_threads_is_the_one_read_by_one():
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 30, size=2000)
    H = rng.normal(size=(3, 2000, 4)) * (1 + ids[None, :, None] / 30)
    args = (H, ids, np.arange(2000) // 25, {"a": np.log1p(np.arange(30.0)), "b": np.sqrt(np.arange(30.0))})
    one = tc.premise_bootstrap(*args, m=6, draws=3, n_boot=40, rng=7)
    two = tc.premise_bootstrap(*args, m=6, draws=3, n_boot=40, rng=7, workers=2)
    for source in one:
        for key in ("rho", "lo", "hi", "band_lo", "band_hi", "shift", "sd"):
            assert np.array_equal(one[source][key], two[source][key], equal_nan=True), (source, key)
    with pytest.raises(ParameterError, match="workers"):
        tc.premise_bootstrap(*args, n_boot=5, workers=0)
