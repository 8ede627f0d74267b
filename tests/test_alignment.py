"""The alignment test's metrics: closed forms first, then planted data, then bad input."""
from __future__ import annotations

import numpy as np
import pytest

from tanbias.theory import alignment as al
from tanbias.errors import ParameterError


# --------------------------------------------------------------------------- energy share
@pytest.mark.parametrize("D,r", [(16, 2), (64, 4), (192, 8)])
def test_random_subspace_energy_share_is_r_over_D(D, r):
    # E[E(Q)] = r/D exactly for a uniformly random Q, whatever G (here a very anisotropic G).
    rng = np.random.default_rng(0)
    G = rng.normal(size=(200, D)) * np.geomspace(10, 0.1, D)
    shares = [al.energy_share(G, al.random_subspace(D, r, rng)) for _ in range(400)]
    assert np.mean(shares) == pytest.approx(r / D, rel=0.1)


def test_energy_share_closed_form():
    G = np.array([[1.0, 2.0, 2.0]])
    assert al.energy_share(G, np.eye(3)[:, :1]) == pytest.approx(1 / 9)
    assert al.energy_share(G, np.eye(3)[:, 1:]) == pytest.approx(8 / 9)


def test_controls_are_orthogonal_and_orthonormal():
    Q = al.random_subspace(20, 3, 1)
    C = al.random_controls(Q, 20, 2)
    assert C.shape == (20, 20, 3)
    for B in C:
        assert np.allclose(B.T @ B, np.eye(3))
        assert np.allclose(Q.T @ B, 0, atol=1e-12)


# --------------------------------------------------------------------------- enrichment
def test_planted_tangent_space_is_enriched_and_random_is_not():
    d = al.planted_tangent_data(n=2000, D=64, d=4, gradient_bias=3.0, rng=0)
    true = al.enrichment_test(d.G, d.tangent_basis, rng=1)
    # expected share (9*4 + 4)/(9*4 + 64) = 0.40 vs 4/64 -> enrichment ~ 6.4
    assert true["energy_proxy"] == pytest.approx(40 / 100, rel=0.1)
    assert true["enrichment"] > 4
    assert true["p_energy"] == pytest.approx(1 / 21)
    rand = al.enrichment_test(d.G, al.random_subspace(64, 4, 3), rng=4)
    assert rand["enrichment"] == pytest.approx(1.0, abs=0.35)
    # PCA of the activations recovers the planted space, so the proxy works too
    Q = al.pca_basis(d.X, 4)
    assert al.enrichment_test(d.G, Q, rng=5)["enrichment"] > 4


def test_p_value_bounds():
    d = al.planted_tangent_data(n=500, D=32, d=2, rng=0)
    row = al.alignment_test(d.G, d.tangent_basis, rng=0)
    assert 1 / 21 <= row["p_energy"] <= 1
    assert row["p_energy"] == pytest.approx(1 / 21)


def test_local_alignment_finds_per_token_tangent_spaces():
    d = al.planted_tangent_data(n=3000, D=32, d=2, n_types=6, rng=0)
    local = al.local_alignment(d.X, d.G, d.token_ids, rank=2, rng=0)
    assert local["n_types"] == 6
    assert local["enrichment"] > 4 and local["p_energy"] == pytest.approx(1 / 21)
    assert local["d_iso_proxy"] > local["d_iso_control_mean"]
    # a global PCA cannot see six different tangent planes as well
    glob = al.alignment_test(d.G, al.pca_basis(d.X, 2), rng=0)
    assert glob["enrichment"] < local["enrichment"]


# --------------------------------------------------------------------------- IsoScore*
def test_isoscore_closed_forms():
    rng = np.random.default_rng(0)
    assert al.isoscore_star(rng.normal(size=(50_000, 10)), zeta=0) == pytest.approx(1, abs=0.01)
    assert al.isoscore_star(np.outer(rng.normal(size=300), rng.normal(size=10)), zeta=0) \
        == pytest.approx(0, abs=1e-9)
    for k in (1, 3, 7, 10):
        C = np.diag([1.0] * k + [0.0] * (10 - k))
        assert al.isoscore_star_cov(C, zeta=0) == pytest.approx((k - 1) / 9)
    # shrinkage towards a scale-matched identity only moves a score towards 1
    C = np.diag([1.0, 0.0, 0.0, 0.0])
    assert al.isoscore_star_cov(C, zeta=0.1) > 0
    assert al.isoscore_star_cov(np.eye(4) * 1e-9, zeta=0.5) == pytest.approx(1)


def test_isoscore_matches_the_package_given_the_same_target():
    IsoScore = pytest.importorskip("IsoScore.IsoScore")
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 6)) * [3, 2, 1, 1, 0.5, 0.1]
    C0 = np.diag(rng.uniform(0.5, 2, 6))
    for zeta in (0.0, 0.2, 0.7):
        ours = al.isoscore_star(X, zeta=zeta, C0=C0)
        theirs = float(IsoScore.IsoScore_star(X, C0, zeta))
        assert ours == pytest.approx(theirs, abs=1e-6)


def test_package_unscaled_identity_target_swamps_small_gradients():
    # why tanbias uses a scale-matched target: with C0 = I and gradient-sized data the
    # package reports ~1 for a rank-one cloud; ours (C0 = tr(C)/D I) does not.
    IsoScore = pytest.importorskip("IsoScore.IsoScore")
    rng = np.random.default_rng(2)
    X = 1e-4 * np.outer(rng.normal(size=300), np.ones(8))
    assert float(IsoScore.IsoScore_star(X, np.eye(8), 0.1)) > 0.99
    assert al.isoscore_star(X, zeta=0.1) < 0.2


def test_projecting_out_planted_space_raises_isoscore_more_than_controls():
    d = al.planted_tangent_data(n=2000, D=32, d=3, rng=0)
    res = al.delta_isoscore_test(d.G, d.tangent_basis, rng=0)
    assert res["d_iso_proxy"] > 0.1
    assert res["d_iso_proxy"] > res["d_iso_controls"].max()
    assert res["p_iso"] == pytest.approx(1 / 21)


# --------------------------------------------------------------------------- frequency side
def test_frequency_buckets_equal_occurrence_mass():
    counts = np.concatenate([np.zeros(5), 1000 / np.arange(1, 501)])
    b = al.frequency_buckets(counts, 3)
    assert (b[:5] == -1).all()
    mass = [counts[b == k].sum() / counts[5:].sum() for k in range(3)]
    assert np.allclose(mass, 1 / 3, atol=0.02)
    assert b[5] == 0 and b[-1] == 2


def test_concentration_radius_and_correlation():
    X = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 0.0], [0.0, 4.0], [9.0, 9.0]])
    out = al.concentration_radius(X, [1, 1, 2, 2, 3], min_count=2)
    assert out["token_id"].tolist() == [1, 2]
    assert np.allclose(out["radius"], [1.0, 2.0])
    c = al.frequency_radius_correlation([10, 100, 1000, 1e4], [4, 3, 2, 1])
    assert c["spearman"] == pytest.approx(-1) and c["pearson"] == pytest.approx(-1)


# --------------------------------------------------------------------------- bad input
def test_bad_inputs_name_parameter_value_and_range():
    with pytest.raises(ParameterError, match=r"r=0 is out of range: valid range is \[1, 9\]"):
        al.random_subspace(10, 0)
    with pytest.raises(ParameterError, match=r"r=10 is out of range"):
        al.pca_basis(np.ones((5, 10)), 10)
    with pytest.raises(ParameterError, match="orthonormal"):
        al.energy_share(np.ones((3, 4)), np.ones((4, 1)))
    with pytest.raises(ParameterError, match="zeta=1"):
        al.isoscore_star_cov(np.eye(3), zeta=1)
    with pytest.raises(ParameterError, match="rng"):
        al.random_subspace(10, 2, rng=None)


# ----------------------------------------------------------------------------- the output bottleneck
def _bottleneck_gradients(n=3000, D=48, V=300, r=6, rng=0):
    """Gradients W_U^T (p - y) of an output matrix whose top-r right singular subspace dominates."""
    rng = np.random.default_rng(rng)
    Uv = al.orthonormal(rng.normal(size=(V, D)))
    Vd = al.orthonormal(rng.normal(size=(D, D)))
    s = np.r_[np.full(r, 30.0), np.ones(D - r)]
    W_U = Uv @ np.diag(s) @ Vd.T                                    # (V, D)
    resid = rng.normal(size=(n, V))                                 # stands for p - y
    G = resid @ W_U
    top = np.linalg.svd(W_U, full_matrices=False)[2][:r].T          # (D, r)
    return G, top, Vd[:, :r]


def test_gradients_made_from_a_known_output_matrix_give_enrichment_one_after_the_projection():
    G, top, planted = _bottleneck_gradients()
    assert np.allclose(top @ top.T, planted @ planted.T, atol=1e-8)          # the SVD finds it
    Q = al.orthonormal(top + 0.7 * al.random_subspace(G.shape[1], top.shape[1], rng=3))
    before = al.enrichment_test(G, Q, rng=0)["enrichment"]
    after = al.enrichment_outside(G, Q, top, rng=0)
    assert before > 10
    assert after["enrichment"] == pytest.approx(1.0, abs=0.1)
    assert after["energy_removed"] > 0.9 and 0 < after["overlap"] < 1
    assert after["rank"] == top.shape[1]


def test_a_proxy_enriched_outside_the_output_subspace_stays_enriched():
    G, top, _ = _bottleneck_gradients(rng=1)
    D = G.shape[1]
    Q = al.random_subspace(D, 4, rng=5, orthogonal_to=top)
    G = G + 20 * np.random.default_rng(2).normal(size=(len(G), 4)) @ Q.T   # planted energy in Q
    assert al.enrichment_outside(G, Q, top, rng=0)["enrichment"] > 5


def test_a_proxy_inside_the_removed_subspace_has_no_enrichment_left():
    G, top, _ = _bottleneck_gradients(rng=2)
    out = al.enrichment_outside(G, top[:, :3], top, rng=0)
    assert out["rank"] == 0 and np.isnan(out["enrichment"]) and out["overlap"] == pytest.approx(1.0)


def test_subspace_sharpness_reads_the_gap_after_rank_r():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20000, 5)) * [3.0, 3.0, 1.0, 1.0, 1.0]
    assert al.subspace_sharpness(X, 2) == pytest.approx(3.0, rel=0.05)
    assert al.subspace_sharpness(X, 1) == pytest.approx(1.0, abs=0.05)
    with pytest.raises(ParameterError, match="rows"):
        al.subspace_sharpness(X[:2], 2)


def test_the_variance_calibrated_enrichment_tells_a_planted_tangent_bias_from_variance_following():
    """Chapter 7's enrichment is large for gradients that only follow the activations' variance; the
    calibrated reading is 1 for them and above 1 only where the gradients concentrate in the proxy
    beyond the variance (the variance null of the horizon experiment)."""
    for normal_scale, bias in ((0.5, 3.0), (0.3, 5.0), (0.1, 3.0)):
        d = al.planted_tangent_data(n=4000, D=48, d=4, normal_scale=normal_scale, gradient_bias=bias, rng=3)
        following = al.variance_following_gradients(d.X, rng=4)
        null = al.variance_calibrated_test(d.X, following, d.tangent_basis, rng=5)
        assert null["grad_enrichment"] > 3                 # the enrichment alone would call it tangent
        assert abs(np.log(null["calibrated"])) < np.log(1.15)
        planted = al.variance_calibrated_test(d.X, d.G, d.tangent_basis, rng=5)
        assert planted["grad_enrichment"] == pytest.approx(
            al.enrichment_test(d.G, d.tangent_basis, controls=al.random_controls(d.tangent_basis, 20, 5))["enrichment"])
        # above 1 where the planted gradients are more concentrated than the activations; the
        # strongly concentrated activations of normal_scale 0.1 out-concentrate the gradients
        assert (planted["calibrated"] > 1.4) == (normal_scale > 0.1)
    with pytest.raises(ParameterError, match="one activation row per gradient row"):
        al.variance_calibrated_test(d.X[:10], d.G, d.tangent_basis)


def test_isoscore_from_the_spectrum_is_isoscore_of_the_covariance():
    """anisotropy() reads IsoScore* from the eigenvalues it has: the shrunk matrix's eigenvalues are
    the shifted ones, so the two agree to rounding, for every shrinkage and shape of spectrum."""
    from tanbias.theory.alignment import isoscore_star_cov, isoscore_star_spectrum

    rng = np.random.default_rng(2)
    for zeta in (0.0, 0.2, 0.9):
        for scale in ([1.0] * 6, [50.0, 1, 1, 1, 0, 0], [1e3, 1e-3, 1e-3, 0, 0, 0]):
            X = rng.normal(size=(400, 6)) * np.sqrt(scale)
            C = np.cov(X.T)
            got = isoscore_star_spectrum(np.linalg.eigvalsh(C), zeta, trace=np.trace(C))
            assert abs(got - isoscore_star_cov(C, zeta)) < 1e-12
    with pytest.raises(ParameterError, match="lam"):
        isoscore_star_spectrum([1.0])
