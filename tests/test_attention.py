"""Chapter 5: attention's bilinear expansion around a centroid."""

import numpy as np
import pytest
import torch

from tanbias.theory.attention import (KEY_TERMS, ORDERS, TERMS, attention_weights, fit_term_slopes,
                               key_centred_rms, removal_effect, removal_over_heads,
                               removal_scaling, score_decomposition, score_term_scaling,
                               sensitivity_over_heads, random_attention_heads,
                               softmax_sensitivity, softmax_terms, term_slopes_over_heads)
from tanbias.errors import ParameterError
from tanbias.theory.residual import default_loop_manifold
from tanbias.stats import loglog_slope

TS = np.geomspace(0.02, 0.2, 8)


@pytest.fixture(scope="module")
def M():
    return default_loop_manifold()


@pytest.fixture(scope="module")
def stack(M):  # independent random heads
    return random_attention_heads(3, M.D, seed=0)


@pytest.fixture(scope="module")
def tokens(M):
    return M.sample_at_radius(0.1, 32, 0).y


def test_terms_sum_to_score(M, stack, tokens):
    s = score_decomposition(tokens, M.mu, M.tangent_basis, M.normal_basis, *stack.head(0))
    assert set(s.terms) == set(TERMS)
    np.testing.assert_allclose(sum(s.terms.values()), s.total, atol=1e-12)
    assert np.max(np.abs(s.rest)) < 1e-12
    Wq, Wk = stack.head(0)
    np.testing.assert_allclose(s.total, tokens @ stack.M(0) @ tokens.T, atol=1e-12)
    v = (tokens - M.mu) @ M.tangent_basis @ M.tangent_basis.T
    np.testing.assert_allclose(s.terms["v_v"], v @ Wq.T @ Wk @ v.T, atol=1e-14)


def test_torch_inputs_match_numpy(M, stack, tokens):
    a = score_decomposition(tokens, M.mu, M.tangent_basis, M.normal_basis, *stack.head(1))
    tt = [torch.tensor(z) for z in (tokens, M.mu, M.tangent_basis, M.normal_basis,
                                    *stack.head(1))]
    b = score_decomposition(*tt)
    for k in TERMS:
        np.testing.assert_allclose(a.terms[k], b.terms[k])


def test_incomplete_bases_leave_a_rest(M, stack, tokens):
    # a rank-1 "tangent proxy" and a rank-2 "control": the rest term carries the remainder
    s = score_decomposition(tokens, M.mu, M.tangent_basis[:, :1], M.normal_basis[:, :2],
                            *stack.head(0))
    assert np.max(np.abs(s.rest)) > 1e-6
    np.testing.assert_allclose(sum(s.terms.values()) + s.rest, s.total, atol=1e-12)


@pytest.mark.parametrize("layer", [0, 1, 2])
def test_term_orders(M, stack, layer):
    df = score_term_scaling(M, TS, *stack.head(layer), n_tokens=48, rng=layer)
    fits = fit_term_slopes(df)
    for name, fit in fits.items():
        assert abs(fit.slope - ORDERS[name]) < 0.1, (name, str(fit))


def test_removal_orders(M, stack):
    df = removal_scaling(M, TS, *stack.head(0), n_tokens=48, rng=0)
    for removed, order in (("tangent", 1), ("normal", 2)):
        g = df[df["removed"] == removed]
        assert abs(loglog_slope(g["t"], g["change"]).slope - order) < 0.1


def test_attention_weights_rows():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 4))
    A = attention_weights(x, rng.standard_normal((2, 4)), rng.standard_normal((2, 4)))
    np.testing.assert_allclose(A.sum(axis=1), 1.0)
    assert np.all(A > 0)


@pytest.mark.parametrize("side", ["keys", "queries"])
def test_softmax_sensitivity_matches_finite_difference(M, stack, tokens, side):
    Wq, Wk = stack.head(0)
    T, N = M.tangent_basis, M.normal_basis
    s = softmax_sensitivity(tokens, M.mu, T, N, Wq, Wk, rng=3, side=side)
    rng = np.random.default_rng(3)
    A = attention_weights(tokens, Wq, Wk)
    h = 1e-6
    for name, B in (("tangent", T), ("normal", N)):
        z = rng.standard_normal((tokens.shape[0], B.shape[1]))
        w = (z / np.linalg.norm(z, axis=1, keepdims=True)) @ B.T
        scale = 1 / np.sqrt(Wq.shape[0])
        q, k = tokens @ Wq.T, tokens @ Wk.T
        if side == "keys":
            Ah = attention_weights_from(q, k + h * w @ Wk.T, scale)
        else:
            Ah = attention_weights_from(q + h * w @ Wq.T, k, scale)
        fd = np.sqrt(np.mean(np.sum(((Ah - A) / h) ** 2, axis=1)))
        assert s[name] == pytest.approx(fd, rel=1e-4)


def attention_weights_from(q, k, scale):
    s = scale * q @ k.T
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_removal_effect_small_t(M, stack):
    x = M.sample_at_radius(0.05, 32, 1).y
    e = removal_effect(x, M.mu, M.tangent_basis, M.normal_basis, *stack.head(0))
    assert e["normal"] < 0.2 * e["tangent"]


def test_stack(M):
    a = random_attention_heads(4, 16, seed=5, d_head=8)
    b = random_attention_heads(4, 16, seed=5, d_head=8)
    np.testing.assert_array_equal(a.W_Q, b.W_Q)
    assert a.W_Q.shape == (4, 8, 16) and a.n_heads == 4
    assert np.var(a.W_Q) == pytest.approx(2 / 24, rel=0.15)      # Glorot normal
    assert not np.allclose(a.M(0), a.M(1))


def test_key_centred_rms_kills_query_only_terms(M):
    st = random_attention_heads(2, M.D, seed=0)
    s = M.sample_at_radius(0.1, 32, 0)
    terms = score_decomposition(s.y, M.mu, M.tangent_basis, M.normal_basis,
                                *st.head(0))
    r = key_centred_rms(terms)
    for name in ("mu_mu", "v_mu", "n_mu"):
        assert r[name] <= 1e-12 * r["mu_v"]
    for name in KEY_TERMS:
        assert r[name] > 0


def test_softmax_terms_orders(M):
    st = random_attention_heads(1, M.D, seed=0)
    ts = np.geomspace(0.02, 0.2, 5)
    rows = [softmax_terms(M, st, t, 0)["rms"] for t in ts]
    for name in KEY_TERMS:
        fit = loglog_slope(ts, np.array([r[name] for r in rows]))
        assert abs(fit.slope - ORDERS[name]) < 0.06, (name, str(fit))
    d = softmax_terms(M, st, 0.05, 0)
    assert d["tv_normal"] < d["tv_tangent"]


def test_sensitivity_over_heads(M):
    st = random_attention_heads(6, M.D, seed=0)
    sens = sensitivity_over_heads(M, st, 0.1, n_tokens=16)
    assert list(sens.columns) == ["head", "tangent", "normal"] and len(sens) == 6


def test_over_heads_match_the_per_head_loops(M):
    st = random_attention_heads(2, M.D, seed=3)
    ts = [0.02, 0.05, 0.1]
    slopes = term_slopes_over_heads(M, st, ts, n_tokens=16)
    for layer in range(2):
        fits = fit_term_slopes(score_term_scaling(M, ts, *st.head(layer),
                                                  n_tokens=16, rng=layer))
        got = slopes[slopes["head"] == layer].set_index("term")
        assert list(got.index) == list(fits) and "mu_mu" not in got.index
        for term, fit in fits.items():
            assert got.loc[term, "slope"] == fit.slope and got.loc[term, "order"] == ORDERS[term]
            assert got.loc[term, "ci_low"] == fit.ci_low and got.loc[term, "ci_high"] == fit.ci_high
    removal = removal_over_heads(M, st, ts, n_tokens=8)
    assert list(removal.columns) == ["t", "removed", "change", "head"]
    for layer in range(2):
        one = removal_scaling(M, ts, *st.head(layer), n_tokens=8, rng=layer)
        assert removal[removal["head"] == layer]["change"].tolist() == one["change"].tolist()


def test_bad_inputs(M, stack, tokens):
    T, N = M.tangent_basis, M.normal_basis
    Wq, Wk = stack.head(0)
    with pytest.raises(ParameterError, match=r"W_Q has shape \(8, 7\)"):
        score_decomposition(tokens, M.mu, T, N, Wq[:, :7], Wk)
    with pytest.raises(ParameterError, match=r"W_K has shape \(4, 8\)"):
        score_decomposition(tokens, M.mu, T, N, Wq, Wk[:4])
    with pytest.raises(ParameterError, match=r"x has shape \(32, 7\)"):
        score_decomposition(tokens[:, :7], M.mu, T, N, Wq, Wk)
    with pytest.raises(ParameterError, match=r"mu has shape"):
        score_decomposition(tokens, M.mu[:3], T, N, Wq, Wk)
    with pytest.raises(ParameterError, match=r"t=-0.1 is out of range"):
        score_term_scaling(M, [-0.1, 0.1], Wq, Wk)
    with pytest.raises(ParameterError, match=r"t=0.9 is out of range.*patch"):
        removal_scaling(M, [0.1, 0.9], Wq, Wk)
    with pytest.raises(ParameterError, match=r"h=3 is out of range: valid range is \[0, 2\]"):
        stack.head(3)
    with pytest.raises(ParameterError, match=r"n_heads=0 is out of range"):
        random_attention_heads(0, 8)
    with pytest.raises(ParameterError, match=r"side='values' is not allowed"):
        softmax_sensitivity(tokens, M.mu, T, N, Wq, Wk, side="values")
    with pytest.raises(ParameterError, match=r"scale=-1.0 is out of range"):
        attention_weights(tokens, Wq, Wk, scale=-1.0)
