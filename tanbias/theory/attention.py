"""Attention's bilinear score expansion around a centroid, and softmax sensitivity (chapter 5).

A head scores query token ``i`` against key token ``j`` with
``s_ij = (W_Q x_i) . (W_K x_j) = x_i^T M x_j``, ``M = W_Q^T W_K``. Writing every
token as ``x = mu + v + n`` (centroid, tangent part of order ``t``, normal part
of order ``t^2``), the score splits into nine bilinear terms

    mu^T M mu                              order t^0
    mu^T M v_j,  v_i^T M mu                order t^1
    mu^T M n_j,  n_i^T M mu,  v_i^T M v_j  order t^2
    v_i^T M n_j, n_i^T M v_j               order t^3
    n_i^T M n_j                            order t^4

The statement's "v^T M v dominates the O(t^3) cross terms and the O(t^4)
normal-normal term" is about the *centred* part. Note (our reading) that the
uncentred score also contains ``mu^T M n_j``, of order ``t^2`` like
``v^T M v``: the normal part reaches the softmax linearly through the centroid,
one order below the tangent part's ``mu^T M v_j`` (order ``t``). Both routes
give the same conclusion for the attention weights: removing the normal part
changes them by ``O(t^2)``, removing the tangent part by ``O(t)``
(:func:`removal_scaling`).

All functions take numpy arrays or torch tensors (converted to float64 numpy),
so the same decomposition runs on simulated and on real activations (later
chapters). Used by chapter 5; its figures and interactives are in
:mod:`tanbias.figures.attention`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tanbias._checks import (check_array, check_bases, check_choice, check_int, check_radii, check_real,
                      check_rng, to_numpy)
from tanbias.errors import ParameterError
from tanbias.stats import loglog_slope

__all__ = [
    "TERMS",
    "ORDERS",
    "KEY_TERMS",
    "NORMAL_TERMS",
    "ScoreTerms",
    "score_decomposition",
    "key_centred_rms",
    "score_term_scaling",
    "fit_term_slopes",
    "term_slopes_over_heads",
    "attention_weights",
    "removal_effect",
    "removal_scaling",
    "removal_over_heads",
    "softmax_sensitivity",
    "AttentionHeads",
    "random_attention_heads",
    "softmax_terms",
    "sensitivity_over_heads",
]

#: Names of the bilinear terms: ``"a_b"`` is ``a_i^T M b_j`` (query part a, key part b).
TERMS = ("mu_mu", "mu_v", "v_mu", "mu_n", "n_mu", "v_v", "v_n", "n_v", "n_n")
#: Predicted order in ``t`` of each term (the slope of its RMS against ``t``).
ORDERS = {"mu_mu": 0, "mu_v": 1, "v_mu": 1, "mu_n": 2, "n_mu": 2, "v_v": 2,
          "v_n": 3, "n_v": 3, "n_n": 4}
#: Key-dependent terms: the only ones that can change a softmax over keys
#: (terms that depend on the query alone shift a whole row and cancel).
KEY_TERMS = ("mu_v", "mu_n", "v_v", "v_n", "n_v", "n_n")
#: Terms that involve the normal part ``n`` (the curvature signal).
NORMAL_TERMS = ("mu_n", "v_n", "n_v", "n_n")


def _frame(rows):
    """Rows (dicts) as a pandas DataFrame: pandas is imported here only, once a table is built."""
    import pandas as pd

    return pd.DataFrame(rows)


def _check_weights(W_Q, W_K, D):
    W_Q = check_array("W_Q", to_numpy(W_Q), shape=(None, D),
                      hint=f"Pass the (d_head, D={D}) query projection (rows act on x).")
    W_K = check_array("W_K", to_numpy(W_K), shape=(W_Q.shape[0], D),
                      hint=f"Pass the (d_head={W_Q.shape[0]}, D={D}) key projection.")
    return W_Q, W_K


def _check_tokens(x, D=None, name="x"):
    x = check_array(name, to_numpy(x), shape=(None, D),
                    hint="Pass tokens as rows: shape (n_tokens, D).")
    if x.shape[0] == 0:
        raise ParameterError(f"{name} has 0 rows: valid range is [1, inf) tokens. "
                             f"Pass at least one token.")
    return x



# ----------------------------------------------------------------------------
# the nine bilinear terms
# ----------------------------------------------------------------------------

@dataclass(frozen=True)
class ScoreTerms:
    """The bilinear terms of the attention scores of one head.

    Attributes
    ----------
    terms : dict of str -> ndarray, shape (n_tokens, n_tokens)
        ``terms["v_n"][i, j] = v_i^T M n_j`` etc., keys as in :data:`TERMS`.
    total : ndarray, shape (n_tokens, n_tokens)
        ``x_i^T M x_j`` computed directly.
    rest : ndarray, shape (n_tokens, n_tokens)
        ``total - sum(terms)``: the terms involving the part of ``x - mu``
        outside ``span(tangent_basis, normal_basis)`` (zero up to rounding when
        the bases complete each other, as for a simulated manifold; not zero
        for a rank-r tangent proxy of real activations).
    """

    terms: dict
    total: np.ndarray
    rest: np.ndarray

    def rms(self) -> dict:
        """Root-mean-square of every term over all (query, key) pairs, plus ``"rest"``."""
        out = {k: float(np.sqrt(np.mean(v ** 2))) for k, v in self.terms.items()}
        out["rest"] = float(np.sqrt(np.mean(self.rest ** 2)))
        return out


def score_decomposition(x, mu, tangent_basis, normal_basis, W_Q, W_K) -> ScoreTerms:
    """Split the scores ``x_i^T W_Q^T W_K x_j`` into centroid, tangent and normal terms.

    Parameters
    ----------
    x : array_like or torch.Tensor, shape (n_tokens, D)
        Token activations (used both as queries and as keys).
    mu : array_like, shape (D,)
        The centroid.
    tangent_basis : array_like, shape (D, d)
        Orthonormal columns (or a rank-d tangent proxy).
    normal_basis : array_like, shape (D, k)
        Orthonormal columns orthogonal to the tangent ones.
    W_Q, W_K : array_like, shape (d_head, D)
        Query and key projections (``q = W_Q x``).

    Returns
    -------
    ScoreTerms

    Raises
    ------
    ParameterError
        Mismatched shapes or non-finite entries.

    Example
    -------
    >>> T, N = np.eye(2)[:, :1], np.eye(2)[:, 1:]
    >>> x = np.array([[1.1, 0.01], [0.9, 0.01]])     # mu = (1, 0), t = 0.1
    >>> s = score_decomposition(x, [1.0, 0.0], T, N, np.eye(2), np.eye(2))
    >>> round(float(s.terms["v_v"][0, 1]), 6), round(float(s.terms["n_n"][0, 1]), 6)
    (-0.01, 0.0001)
    >>> bool(np.allclose(sum(s.terms.values()), s.total))
    True
    """
    T, N = check_bases(tangent_basis, normal_basis)
    D = T.shape[0]
    x = _check_tokens(x, D)
    mu = check_array("mu", to_numpy(mu), shape=(D,), hint=f"Pass the centroid, shape ({D},).")
    W_Q, W_K = _check_weights(W_Q, W_K, D)
    xc = x - mu
    parts = {"mu": np.broadcast_to(mu, x.shape), "v": (xc @ T) @ T.T, "n": (xc @ N) @ N.T}
    q = {a: p @ W_Q.T for a, p in parts.items()}      # (n, d_head) query pieces
    k = {b: p @ W_K.T for b, p in parts.items()}
    terms = {name: q[name.split("_")[0]] @ k[name.split("_")[1]].T for name in TERMS}
    total = (x @ W_Q.T) @ (x @ W_K.T).T
    return ScoreTerms(terms, total, total - sum(terms.values()))


def key_centred_rms(terms: ScoreTerms) -> dict:
    """RMS over (query, key) pairs of each term minus its mean over keys.

    A softmax over keys ignores anything constant along a row, so this is the
    size of the part of each term that can move the attention weights. It is
    0 for the query-only terms (``mu_mu``, ``v_mu``, ``n_mu``); for ``mu_n``
    it removes the mean normal offset ``mu^T M E[n]``.

    Parameters
    ----------
    terms : ScoreTerms
        Output of :func:`score_decomposition`.

    Returns
    -------
    dict of str -> float
        One entry per name in :data:`TERMS`.

    Example
    -------
    >>> T, N = np.eye(2)[:, :1], np.eye(2)[:, 1:]
    >>> x = np.array([[1.1, 0.01], [0.9, 0.01]])
    >>> r = key_centred_rms(score_decomposition(x, [1.0, 0.0], T, N, np.eye(2), np.eye(2)))
    >>> r["v_mu"], r["mu_n"], round(r["mu_v"], 6)
    (0.0, 0.0, 0.1)
    """
    out = {}
    for name, s in terms.terms.items():
        c = s - s.mean(axis=1, keepdims=True)
        out[name] = float(np.sqrt(np.mean(c ** 2)))
    return out


def score_term_scaling(manifold, ts, W_Q, W_K, n_tokens=64, rng=0):
    """RMS of every score term against the radius ``t`` (tokens at geodesic radius ``t``).

    Parameters
    ----------
    manifold : tanbias.theory.manifolds.Submanifold
    ts : array_like, shape (n_t,)
        Radii in ``(0, patch]``.
    W_Q, W_K : array_like, shape (d_head, D)
    n_tokens : int
        Tokens per radius (all pairs are used).
    rng : numpy.random.Generator or int

    Returns
    -------
    pandas.DataFrame
        Long format: ``t``, ``term``, ``rms``, ``order`` (predicted slope).

    Raises
    ------
    ParameterError
        Radii out of range, bad shapes.
    """
    ts = check_radii(ts, manifold)
    n_tokens = check_int("n_tokens", n_tokens, lo=2, hint="Pass at least 2 tokens.")
    rng = check_rng(rng)
    W_Q, W_K = _check_weights(W_Q, W_K, manifold.D)
    rows = []
    for t in ts:
        s = manifold.sample_at_radius(float(t), n_tokens, rng)
        rms = score_decomposition(s.y, manifold.mu, manifold.tangent_basis,
                                  manifold.normal_basis, W_Q, W_K).rms()
        rows += [dict(t=float(t), term=name, rms=rms[name], order=ORDERS[name])
                 for name in TERMS]
    return _frame(rows)


def fit_term_slopes(df, confidence=0.95) -> dict:
    """Log-log slope of each term's RMS against ``t``.

    Parameters
    ----------
    df : pandas.DataFrame
        Output of :func:`score_term_scaling`.
    confidence : float

    Returns
    -------
    dict of str -> tanbias.stats.SlopeFit
        One fit per term except ``mu_mu`` (constant, order 0: not a power law
        worth a log-log fit). Compare ``fit.slope`` with ``ORDERS[term]``.
    """
    return {name: loglog_slope(g["t"].to_numpy(), g["rms"].to_numpy(), confidence)
            for name, g in df.groupby("term", sort=False) if name != "mu_mu"}


def term_slopes_over_heads(manifold, heads, ts, n_tokens=96, confidence=0.95):
    """Fitted log-log slope of every score term, for every head of a set.

    Head ``l`` draws its tokens with seed ``l`` (:func:`score_term_scaling`),
    then :func:`fit_term_slopes` fits each term but ``mu_mu``.

    Parameters
    ----------
    manifold : tanbias.theory.manifolds.Submanifold
    heads : AttentionHeads
    ts : array_like, shape (n_t,)
        Radii in ``(0, patch]`` (at least 3).
    n_tokens : int >= 2
    confidence : float

    Returns
    -------
    pandas.DataFrame
        One row per (head, term): ``head``, ``term``, ``order`` (predicted,
        :data:`ORDERS`), ``slope``, ``ci_low``, ``ci_high``.

    Example
    -------
    >>> from tanbias.theory.residual import default_loop_manifold
    >>> M = default_loop_manifold()
    >>> df = term_slopes_over_heads(M, random_attention_heads(1, M.D), [0.01, 0.02, 0.04])
    >>> bool(np.allclose(df["slope"], df["order"], atol=0.1))
    True
    """
    rows = []
    for head in range(heads.n_heads):
        W_Q, W_K = heads.head(head)
        df = score_term_scaling(manifold, ts, W_Q, W_K, n_tokens=n_tokens, rng=head)
        for term, fit in fit_term_slopes(df, confidence).items():
            rows.append(dict(head=head, term=term, order=ORDERS[term], slope=fit.slope,
                             ci_low=fit.ci_low, ci_high=fit.ci_high))
    return _frame(rows)



# ----------------------------------------------------------------------------
# softmax
# ----------------------------------------------------------------------------

def _softmax_rows(s):
    s = s - s.max(axis=1, keepdims=True)    # stable: weights do not change
    e = np.exp(s)
    return e / e.sum(axis=1, keepdims=True)


def _scale(scale, d_head):
    if scale is None:
        return 1.0 / math.sqrt(d_head)
    return check_real("scale", scale, 0, hint="Pass a positive temperature, e.g. 1/sqrt(d_head).")


def attention_weights(x, W_Q, W_K, scale=None):
    """Row-softmax attention weights ``softmax_j(scale * q_i . k_j)``.

    Parameters
    ----------
    x : array_like, shape (n_tokens, D)
    W_Q, W_K : array_like, shape (d_head, D)
    scale : float, optional
        Default ``1 / sqrt(d_head)``.

    Returns
    -------
    ndarray, shape (n_tokens, n_tokens)
        Each row sums to 1.

    Example
    -------
    >>> A = attention_weights(np.eye(3), np.eye(3), np.eye(3), scale=1.0)
    >>> bool(np.allclose(A.sum(axis=1), 1.0))
    True
    """
    x = _check_tokens(x)
    W_Q, W_K = _check_weights(W_Q, W_K, x.shape[1])
    c = _scale(scale, W_Q.shape[0])
    return _softmax_rows(c * (x @ W_Q.T) @ (x @ W_K.T).T)


def removal_effect(x, mu, tangent_basis, normal_basis, W_Q, W_K, scale=None) -> dict:
    """How much the attention weights move when the tangent or the normal part is removed.

    Every token ``x = mu + v + n`` is replaced by ``x - n`` ("normal removed") or
    ``x - v`` ("tangent removed"), queries and keys alike; the change is the
    total-variation distance between attention rows, averaged over queries.

    Parameters
    ----------
    x : array_like, shape (n_tokens, D)
    mu : array_like, shape (D,)
    tangent_basis, normal_basis : array_like, shapes (D, d), (D, k)
    W_Q, W_K : array_like, shape (d_head, D)
    scale : float, optional

    Returns
    -------
    dict
        ``{"tangent": tv_when_tangent_removed, "normal": tv_when_normal_removed}``,
        each in ``[0, 1]``.

    Example
    -------
    >>> T, N = np.eye(2)[:, :1], np.eye(2)[:, 1:]
    >>> x = np.array([[1.1, 0.01], [0.9, 0.01]])
    >>> e = removal_effect(x, [1.0, 0.0], T, N, np.eye(2), np.eye(2))
    >>> e["normal"] < e["tangent"]
    True
    """
    T, N = check_bases(tangent_basis, normal_basis)
    x = _check_tokens(x, T.shape[0])
    mu = check_array("mu", to_numpy(mu), shape=(x.shape[1],))
    W_Q, W_K = _check_weights(W_Q, W_K, x.shape[1])
    xc = x - mu
    v, n = (xc @ T) @ T.T, (xc @ N) @ N.T
    A = attention_weights(x, W_Q, W_K, scale)

    def tv(B):
        return float(np.mean(0.5 * np.abs(A - B).sum(axis=1)))

    return {"tangent": tv(attention_weights(x - v, W_Q, W_K, scale)),
            "normal": tv(attention_weights(x - n, W_Q, W_K, scale))}


def _removal_rows(manifold, ts, W_Q, W_K, n_tokens, rng, scale):
    ts = check_radii(ts, manifold)
    n_tokens = check_int("n_tokens", n_tokens, lo=2, hint="Pass at least 2 tokens.")
    rng = check_rng(rng)
    rows = []
    for t in ts:
        s = manifold.sample_at_radius(float(t), n_tokens, rng)
        e = removal_effect(s.y, manifold.mu, manifold.tangent_basis, manifold.normal_basis,
                           W_Q, W_K, scale)
        rows += [dict(t=float(t), removed=k, change=v) for k, v in e.items()]
    return rows


def removal_scaling(manifold, ts, W_Q, W_K, n_tokens=64, rng=0, scale=None):
    """:func:`removal_effect` against the radius ``t`` (predicted slopes 1 and 2).

    Returns
    -------
    pandas.DataFrame
        Long format: ``t``, ``removed`` ("tangent" / "normal"), ``change``.
    """
    return _frame(_removal_rows(manifold, ts, W_Q, W_K, n_tokens, rng, scale))


def removal_over_heads(manifold, heads, ts, n_tokens=64, scale=None):
    """:func:`removal_scaling` for every head of a set, head ``h`` drawing its tokens with seed ``h``.

    Parameters
    ----------
    manifold : tanbias.theory.manifolds.Submanifold
    heads : AttentionHeads
    ts : array_like, shape (n_t,)
        Radii in ``(0, patch]``.
    n_tokens : int >= 2
        Tokens per radius and head.
    scale : float, optional

    Returns
    -------
    pandas.DataFrame
        Long format: ``t``, ``removed``, ``change``, ``head``.

    Example
    -------
    >>> from tanbias.theory.residual import default_loop_manifold
    >>> M = default_loop_manifold()
    >>> df = removal_over_heads(M, random_attention_heads(2, M.D), [0.05, 0.1], n_tokens=8)
    >>> len(df), sorted(set(df["head"]))
    (8, [0, 1])
    """
    rows = []
    for h in range(heads.n_heads):
        rows += [dict(r, head=h) for r in
                 _removal_rows(manifold, ts, *heads.head(h), n_tokens, h, scale)]
    return _frame(rows)


def softmax_sensitivity(x, mu, tangent_basis, normal_basis, W_Q, W_K, rng=0,
                        side="keys", scale=None) -> dict:
    """Jacobian-vector norms of the attention weights for unit tangent vs normal perturbations.

    Each token on ``side`` is moved along its own random *unit* direction drawn
    uniformly in the tangent (resp. normal) subspace; the derivative of the
    attention weights along that move is computed exactly (softmax Jacobian
    ``dA_i = A_i * (ds_i - A_i . ds_i)``). Because the perturbations have the
    same size, this measures how sensitive the head is to each subspace *per
    unit of movement*; for a random (isotropic) ``M`` the two are close. The
    suppression of normal signal comes from the *size* of ``n`` (``O(t^2)``),
    not from this sensitivity, unless the head itself is tangent-aligned.

    Parameters
    ----------
    x : array_like, shape (n_tokens, D)
    mu : array_like, shape (D,)
        Unused by the derivative but validated, so the signature matches
        :func:`score_decomposition`.
    tangent_basis, normal_basis : array_like, shapes (D, d), (D, k)
    W_Q, W_K : array_like, shape (d_head, D)
    rng : numpy.random.Generator or int
    side : {"keys", "queries"}
    scale : float, optional

    Returns
    -------
    dict
        ``{"tangent": rms_norm, "normal": rms_norm}``: RMS over query rows of
        ``||dA_i / d eps||_2`` for a unit-size move.

    Example
    -------
    >>> T, N = np.eye(2)[:, :1], np.eye(2)[:, 1:]
    >>> x = np.array([[1.1, 0.01], [0.9, 0.01], [1.0, 0.0]])
    >>> s = softmax_sensitivity(x, [1.0, 0.0], T, N, np.eye(2), np.eye(2))
    >>> sorted(s)
    ['normal', 'tangent']
    """
    T, N = check_bases(tangent_basis, normal_basis)
    x = _check_tokens(x, T.shape[0])
    check_array("mu", to_numpy(mu), shape=(x.shape[1],))
    W_Q, W_K = _check_weights(W_Q, W_K, x.shape[1])
    check_choice("side", side, ("keys", "queries"), hint="Perturb 'keys' or 'queries'.")
    rng = check_rng(rng)
    c = _scale(scale, W_Q.shape[0])
    q, k = x @ W_Q.T, x @ W_K.T
    A = _softmax_rows(c * q @ k.T)
    out = {}
    for name, B in (("tangent", T), ("normal", N)):
        z = rng.standard_normal((x.shape[0], B.shape[1]))
        w = (z / np.linalg.norm(z, axis=1, keepdims=True)) @ B.T       # unit moves, (n, D)
        if side == "keys":
            ds = c * q @ (w @ W_K.T).T          # d s_ij = c q_i . (W_K w_j)
        else:
            ds = c * (w @ W_Q.T) @ k.T          # d s_ij = c (W_Q w_i) . k_j
        dA = A * (ds - np.sum(A * ds, axis=1, keepdims=True))
        out[name] = float(np.sqrt(np.mean(np.sum(dA ** 2, axis=1))))
    return out



# ----------------------------------------------------------------------------
# a set of independent random heads
# ----------------------------------------------------------------------------

@dataclass(frozen=True)
class AttentionHeads:
    """Random query/key projections of ``n_heads`` independent heads.

    The heads are not a stack: no head reads another's output. Chapter 5 uses them
    to show that what it finds does not depend on one draw of a head.

    Attributes
    ----------
    W_Q, W_K : ndarray, shape (n_heads, d_head, D)
    seed : int
    """

    W_Q: np.ndarray
    W_K: np.ndarray
    seed: int

    @property
    def n_heads(self) -> int:
        return int(self.W_Q.shape[0])

    def head(self, h):
        """``(W_Q, W_K)`` of head ``h`` (0-based), each (d_head, D).

        Raises
        ------
        ParameterError
            ``h`` outside ``[0, n_heads - 1]``.
        """
        h = check_int("h", h, 0, self.n_heads - 1, hint="Pick an existing head.")
        return self.W_Q[h], self.W_K[h]

    def M(self, h) -> np.ndarray:
        """``W_Q^T W_K`` of head ``h``, shape (D, D)."""
        W_Q, W_K = self.head(h)
        return W_Q.T @ W_K


def random_attention_heads(n_heads, D, seed=0, d_head=None) -> AttentionHeads:
    """Random Xavier-initialised query/key projections of independent heads.

    Entries are i.i.d. ``N(0, 2 / (D + d_head))`` (Glorot normal), independent
    across heads, so a "head" slider shows the expansion for different random
    heads; nothing here is trained (trained heads come in chapter 7), and nothing
    here models depth.

    Parameters
    ----------
    n_heads : int >= 1
    D : int >= 2
        Model width (the manifold's ambient dimension).
    seed : int
    d_head : int, optional
        Head dimension, default ``D``.

    Returns
    -------
    AttentionHeads

    Raises
    ------
    ParameterError
        Non-integer or non-positive sizes.

    Example
    -------
    >>> hs = random_attention_heads(4, 8, seed=0, d_head=2)
    >>> hs.W_Q.shape, hs.M(3).shape
    ((4, 2, 8), (8, 8))
    """
    n_heads = check_int("n_heads", n_heads, lo=1, hint="Pass a positive number of heads.")
    D = check_int("D", D, lo=2, hint="Pass the ambient dimension.")
    d_head = D if d_head is None else check_int("d_head", d_head, lo=1,
                                                hint="Pass a positive head dimension.")
    rng = check_rng(check_int("seed", seed, lo=0, hint="Pass a non-negative seed."))
    std = math.sqrt(2.0 / (D + d_head))
    W = rng.standard_normal((2, n_heads, d_head, D)) * std
    return AttentionHeads(W[0], W[1], int(seed))



# ----------------------------------------------------------------------------
# what reaches the softmax, head by head (the data of chapter 5's figures)
# ----------------------------------------------------------------------------

def softmax_terms(manifold, heads, t, head, n_tokens=64, rng=0, tokens=None) -> dict:
    """Key-centred RMS of the score terms and attention changes, for one head at radius ``t``.

    Parameters
    ----------
    manifold : tanbias.theory.manifolds.Submanifold
    heads : AttentionHeads
    t : float
        Geodesic radius of the tokens (all around the same centroid).
    head : int
        Which head of ``heads`` to use.
    n_tokens : int >= 2
    rng : numpy.random.Generator or int
    tokens : array_like, shape (n_tokens, D), optional
        Tokens to use instead of drawing them (they must lie at radius ``t``);
        lets a caller reuse one draw for every head.

    Returns
    -------
    dict
        ``rms`` (dict over :data:`KEY_TERMS`), ``tv_tangent`` and ``tv_normal``
        (:func:`removal_effect`), ``t``, ``head``.
    """
    (t,) = check_radii([t], manifold)
    W_Q, W_K = heads.head(head)
    if tokens is None:
        tokens = manifold.sample_at_radius(float(t), n_tokens, check_rng(rng)).y
    T, N = manifold.tangent_basis, manifold.normal_basis
    rms = key_centred_rms(score_decomposition(tokens, manifold.mu, T, N, W_Q, W_K))
    e = removal_effect(tokens, manifold.mu, T, N, W_Q, W_K)
    return dict(rms={k: rms[k] for k in KEY_TERMS}, tv_tangent=e["tangent"],
                tv_normal=e["normal"], t=float(t), head=int(head))


def sensitivity_over_heads(manifold, heads, t, n_tokens=64, rng=0, side="keys"):
    """:func:`softmax_sensitivity` for every head of a set, tokens at radius ``t``.

    Parameters
    ----------
    manifold : tanbias.theory.manifolds.Submanifold
    heads : AttentionHeads
    t : float
    n_tokens : int
    rng : numpy.random.Generator or int
    side : {"keys", "queries"}

    Returns
    -------
    pandas.DataFrame
        ``head``, ``tangent``, ``normal`` (per-unit-move sensitivities).
    """
    (t,) = check_radii([t], manifold)
    rng = check_rng(rng)
    s = manifold.sample_at_radius(float(t), n_tokens, rng)
    rows = []
    for h in range(heads.n_heads):
        W_Q, W_K = heads.head(h)
        e = softmax_sensitivity(s.y, manifold.mu, manifold.tangent_basis, manifold.normal_basis,
                                W_Q, W_K, rng=rng, side=side)
        rows.append(dict(head=h, **e))
    return _frame(rows)
