"""Residual propagation of tangent and normal components, and the SGD feedback loop (chapter 6).

(a) Depth. A residual stack ``h_{l+1} = h_l + F_l(h_l)`` with linear blocks
``F_l = gain * T (I_d + Z_l / sqrt(d)) T^T + iso * G_l / sqrt(D)`` (``T`` the
tangent basis, ``Z_l, G_l`` standard Gaussian matrices). With ``iso = 0`` every
block reads only the tangent part and writes only into the tangent subspace, so
the normal part of the (centred) stream is copied forward *exactly* by the
identity path while the tangent part is reinforced, and the normal share
``||P_N h||^2 / ||h||^2`` falls with depth. ``iso > 0`` adds an isotropic part
that also writes into the normal subspace (:func:`residual_depth_profile`).
Blocks are linear, so the centroid and the centred part propagate separately
and only the centred part ``h_c = v + n`` is tracked.

(b) The loop. A two-layer network ``f(x) = w_2 . phi(W_1 x_c)`` is trained by
SGD on points of a curved manifold at radius ``t`` with a target that depends
on the tangent *and* the normal coordinates (each half of its variance). Two
runs start from the same weights and see the same minibatches:

* ``loop="closed"``: ordinary SGD.
* ``loop="cut"``: SGD on the network's first-order Taylor expansion at the
  initial weights (the "lazy" linearisation). Same parameters, same first
  gradient, but a weight update can no longer change the activations and
  backward signals that later gradients are computed from: the tangent bias
  of the data enters once and is repeated at constant strength.

:func:`feedback_loop` returns the tangent alignment of ``W_1``, the tangent
share of the layer-2 inputs that the gradients see, and the loss, per step,
for both runs.

Used by chapter 6 (and :mod:`tanbias.book.exercises`, exercise 3); its figures and
interactives are in :mod:`tanbias.figures.residual`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tanbias._checks import (check_array, check_bases, check_choice, check_int, check_radius,
                      check_real, check_rng, check_rows, to_numpy)
from tanbias.errors import ParameterError

__all__ = [
    "tangent_writing_blocks",
    "propagate",
    "residual_depth_profile",
    "residual_profile_from_manifold",
    "depth_report",
    "depth_cloud",
    "tangent_alignment",
    "unit_energies",
    "default_loop_manifold",
    "feedback_loop",
    "LoopRun",
    "run_feedback_loop",
    "loop_summary",
    "alignment_at_loss",
    "loop_report",
]


def _frame(data, **kwargs):
    """``pandas.DataFrame(data, **kwargs)``: pandas is imported here only, once a table is built."""
    import pandas as pd

    return pd.DataFrame(data, **kwargs)


# ----------------------------------------------------------------------------
# (a) depth
# ----------------------------------------------------------------------------

def tangent_writing_blocks(n_layers, tangent_basis, gain=0.1, iso=0.0, seed=0) -> np.ndarray:
    """Matrices of linear residual blocks that read and write the tangent subspace.

    ``F_l = gain * T (I_d + Z_l / sqrt(d)) T^T + iso * G_l / sqrt(D)``.

    Parameters
    ----------
    n_layers : int >= 1
    tangent_basis : array_like, shape (D, d)
        Orthonormal columns ``T``.
    gain : float >= 0
        Strength of the tangent-aligned part (its mean is ``gain * P_T``, so the
        tangent part grows roughly like ``(1 + gain)^l``).
    iso : float >= 0
        Strength of the isotropic part (0: normal inputs are killed and nothing
        is written into the normal subspace).
    seed : int

    Returns
    -------
    ndarray, shape (n_layers, D, D)
        ``F[l] @ h`` is block ``l`` applied to a column vector ``h``.

    Raises
    ------
    ParameterError
        ``n_layers <= 0`` or not an integer, negative strengths, bad basis.

    Example
    -------
    >>> T = np.eye(3)[:, :1]
    >>> F = tangent_writing_blocks(2, T, gain=0.5, iso=0.0, seed=0)
    >>> F.shape, bool(np.all(F[:, 1:, :] == 0)), bool(np.all(F[:, :, 1:] == 0))
    ((2, 3, 3), True, True)
    """
    n_layers = check_int("n_layers", n_layers, lo=1, hint="Pass a positive depth.")
    T = check_array("tangent_basis", to_numpy(tangent_basis), shape=(None, None),
                    hint="Pass the (D, d) tangent basis.")
    gain = check_real("gain", gain, 0, lo_open=False, hint="Pass a non-negative strength.")
    iso = check_real("iso", iso, 0, lo_open=False, hint="Pass a non-negative strength.")
    seed = check_int("seed", seed, lo=0, hint="Pass a non-negative seed.")
    D, d = T.shape
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n_layers, d, d)) / math.sqrt(d)
    G = rng.standard_normal((n_layers, D, D)) / math.sqrt(D)
    F = gain * np.einsum("Da,lab,Eb->lDE", T, np.eye(d) + Z, T)
    if iso > 0:       # skip the add when iso = 0 so that normal rows stay exactly zero
        F = F + iso * G
    return F


def propagate(h0, blocks) -> np.ndarray:
    """Run ``h_{l+1} = h_l + F_l h_l`` through linear residual blocks.

    Parameters
    ----------
    h0 : array_like, shape (n, D)
        Centred inputs, one row per token.
    blocks : array_like, shape (L, D, D)

    Returns
    -------
    ndarray, shape (L + 1, n, D)
        The stream after 0, 1, ..., L blocks.

    Raises
    ------
    ParameterError
        Shape mismatch.

    Example
    -------
    >>> propagate([[1.0, 2.0]], np.zeros((3, 2, 2)))[-1].tolist()
    [[1.0, 2.0]]
    """
    h = check_rows("h0", h0)
    F = check_array("blocks", to_numpy(blocks), shape=(None, h.shape[1], h.shape[1]),
                    hint=f"Pass (L, D, D) block matrices with D={h.shape[1]}.")
    out = [h]
    for Fl in F:
        h = h + h @ Fl.T
        out.append(h)
    return np.stack(out)


def residual_depth_profile(x_c, tangent_basis, normal_basis, n_layers=24, gain=0.1,
                           iso=0.0, seed=0):
    """Tangent and normal parts of a residual stream against depth.

    Parameters
    ----------
    x_c : array_like, shape (n, D)
        Centred inputs ``v + n``.
    tangent_basis, normal_basis : array_like, shapes (D, d), (D, D-d)
    n_layers : int >= 1
    gain, iso : float >= 0
        See :func:`tangent_writing_blocks`.
    seed : int

    Returns
    -------
    pandas.DataFrame
        One row per layer ``0..n_layers``: ``layer``, ``tangent_norm`` and
        ``normal_norm`` (RMS over tokens of ``||P_T h||``, ``||P_N h||``),
        ``normal_share`` (``sum ||P_N h||^2 / sum ||h||^2``),
        ``max_normal_change`` (largest ``|P_N h_l - P_N h_0|`` entry: 0 up to
        rounding when ``iso = 0``).

    Raises
    ------
    ParameterError
        Bad shapes, ``n_layers <= 0``, negative strengths.

    Example
    -------
    >>> T, N = np.eye(3)[:, :2], np.eye(3)[:, 2:]
    >>> df = residual_depth_profile([[0.1, 0.0, 0.005]], T, N, n_layers=3, gain=0.5)
    >>> df["normal_norm"].tolist() == [0.005] * 4, bool(df["tangent_norm"].is_monotonic_increasing)
    (True, True)
    """
    T, N = check_bases(tangent_basis, normal_basis)
    x = check_rows("x_c", x_c, T.shape[0])
    H = propagate(x, tangent_writing_blocks(n_layers, T, gain, iso, seed))
    ht, hn = H @ T, H @ N                                   # (L+1, n, d), (L+1, n, k)
    et, en = np.sum(ht ** 2, axis=(1, 2)), np.sum(hn ** 2, axis=(1, 2))
    n = x.shape[0]
    return _frame(dict(
        layer=np.arange(H.shape[0]), tangent_norm=np.sqrt(et / n), normal_norm=np.sqrt(en / n),
        normal_share=en / np.sum(H ** 2, axis=(1, 2)),
        max_normal_change=np.max(np.abs(hn - hn[0]), axis=(1, 2))))


def residual_profile_from_manifold(manifold, t, n=256, n_layers=24, gain=0.1, iso=0.0,
                                   seed=0):
    """:func:`residual_depth_profile` for tokens sampled at radius ``t`` on ``manifold``.

    Parameters
    ----------
    manifold : tanbias.theory.manifolds.Submanifold
    t : float
        Geodesic radius of the input tokens.
    n : int
        Tokens.
    n_layers, gain, iso, seed
        See :func:`residual_depth_profile`.

    Returns
    -------
    pandas.DataFrame
    """
    t = check_radius(t, manifold)
    n = check_int("n", n, lo=1, hint="Pass a positive number of tokens.")
    rng = check_rng(check_int("seed", seed, lo=0, hint="Pass a non-negative seed."))
    s = manifold.sample_at_radius(t, n, rng)
    return residual_depth_profile(s.y - manifold.mu, manifold.tangent_basis,
                                  manifold.normal_basis, n_layers, gain, iso, seed)


def depth_report(manifold, t, n=256, n_layers=24, gain=0.1, iso=0.05, draws=20) -> dict:
    """The numbers chapter 6 reports about the residual stream against depth.

    Tokens are drawn at radius ``t`` with seed 0 and propagated through
    :func:`tangent_writing_blocks` (seed 0) with and without an isotropic part;
    the tangent growth rate is averaged over ``draws`` independent draws of the
    tangent-aligned blocks (seeds ``0 .. draws-1``, same tokens).

    Parameters
    ----------
    manifold : tanbias.theory.manifolds.Submanifold
    t : float
        Geodesic radius of the input tokens.
    n : int >= 1
        Tokens.
    n_layers : int >= 1
    gain : float >= 0
        Strength of the tangent-aligned part of the blocks.
    iso : float >= 0
        Isotropic part of the second stack (the first has none).
    draws : int >= 1
        Independent block draws for the growth rate.

    Returns
    -------
    dict of str -> float
        ``normal_change`` (largest change of a normal coordinate over the stack,
        relative to the largest normal coordinate: 0 up to rounding),
        ``share0``, ``shareL`` (normal share at layer 0 and at the last layer),
        ``share0_predicted`` (``(c t)^2``, ``c`` from
        :func:`tanbias.theory.gradients.predicted_rms_constant`), ``growth`` (tangent
        norm, last layer over layer 0), ``log_growth`` (mean over the draws of
        the log-growth per layer; compare ``log(1 + gain)``), ``rate``
        (``exp(log_growth)``), ``shareL_iso`` (normal share at the last layer
        with the isotropic part).

    Example
    -------
    >>> r = depth_report(default_loop_manifold(), 0.1, n=32, n_layers=4, draws=2)
    >>> r["normal_change"] < 1e-12, r["shareL_iso"] > r["shareL"]
    (True, True)
    """
    from tanbias.theory.gradients import predicted_rms_constant

    t = check_radius(t, manifold)
    draws = check_int("draws", draws, lo=1, hint="Pass a positive number of block draws.")
    depth = residual_profile_from_manifold(manifold, t, n=n, n_layers=n_layers, gain=gain)
    s = manifold.sample_at_radius(t, n, np.random.default_rng(0))
    n0 = float(np.max(np.abs(s.normal)))
    x_c = s.y - manifold.mu
    rates = [np.log(p["tangent_norm"].iloc[-1] / p["tangent_norm"].iloc[0]) / n_layers
             for p in (residual_depth_profile(x_c, manifold.tangent_basis, manifold.normal_basis,
                                              n_layers, gain=gain, seed=k)
                       for k in range(draws))]
    with_iso = residual_profile_from_manifold(manifold, t, n=n, n_layers=n_layers, gain=gain,
                                              iso=iso)
    c = predicted_rms_constant(manifold)
    return dict(
        normal_change=float(depth["max_normal_change"].max()) / n0,
        share0=float(depth["normal_share"].iloc[0]), share0_predicted=(c * t) ** 2,
        shareL=float(depth["normal_share"].iloc[-1]),
        growth=float(depth["tangent_norm"].iloc[-1] / depth["tangent_norm"].iloc[0]),
        log_growth=float(np.mean(rates)), rate=float(np.exp(np.mean(rates))),
        shareL_iso=float(with_iso["normal_share"].iloc[-1]))


def depth_cloud(manifold, t, layer, iso=0.0, n=128, n_layers=24, gain=0.1, seed=0) -> dict:
    """Per-token tangent and normal norms of the residual stream at one layer.

    Parameters
    ----------
    manifold : tanbias.theory.manifolds.Submanifold
    t : float
        Geodesic radius of the input tokens.
    layer : int in [0, n_layers], or None
        Blocks applied; ``None`` returns every layer (``all_tangent``,
        ``all_normal``, arrays (n_layers + 1, n)) instead of one.
    iso, gain, n_layers, seed
        See :func:`tangent_writing_blocks`.
    n : int
        Tokens.

    Returns
    -------
    dict
        ``tangent0``, ``normal0`` (arrays (n,): ``||P_T h_0||``, ``||P_N h_0||``),
        ``tangent``, ``normal`` (the same at ``layer``), ``layers`` and
        ``normal_share`` (the whole profile, arrays (n_layers + 1,)), ``layer``,
        ``t``, ``iso``.

    Example
    -------
    >>> c = depth_cloud(default_loop_manifold(), 0.1, 6, n=16)
    >>> bool(np.allclose(c["normal"], c["normal0"])), bool(np.all(c["tangent"] > c["tangent0"]))
    (True, True)
    """
    t = check_radius(t, manifold)
    n_layers = check_int("n_layers", n_layers, lo=1, hint="Pass a positive depth.")
    if layer is not None:
        layer = check_int("layer", layer, lo=0, hi=n_layers, hint="Pick a layer of the stack.")
    n = check_int("n", n, lo=1, hint="Pass a positive number of tokens.")
    seed = check_int("seed", seed, lo=0, hint="Pass a non-negative seed.")
    s = manifold.sample_at_radius(t, n, np.random.default_rng(seed))
    T, N = manifold.tangent_basis, manifold.normal_basis
    H = propagate(s.y - manifold.mu, tangent_writing_blocks(n_layers, T, gain, iso, seed))
    nt = np.linalg.norm(H @ T, axis=2)                          # (L+1, n)
    nn = np.linalg.norm(H @ N, axis=2)
    share = np.sum(nn ** 2, axis=1) / np.sum(H ** 2, axis=(1, 2))
    out = dict(tangent0=nt[0], normal0=nn[0], layers=np.arange(n_layers + 1),
               normal_share=share, t=t, iso=float(iso))
    if layer is None:
        return dict(out, all_tangent=nt, all_normal=nn)
    return dict(out, tangent=nt[layer], normal=nn[layer], layer=layer)


# ----------------------------------------------------------------------------
# (b) the feedback loop
# ----------------------------------------------------------------------------

def tangent_alignment(W, tangent_basis, normal_basis) -> float:
    """Per-dimension energy ratio of a weight matrix's input side, tangent over normal.

    ``(||W T||_F^2 / d) / (||W N||_F^2 / k)``: 1 for an isotropic ``W`` (in
    expectation), above 1 when the rows of ``W`` lean into the tangent subspace.

    Parameters
    ----------
    W : array_like, shape (m, D)
        Rows act on inputs.
    tangent_basis, normal_basis : array_like, shapes (D, d), (D, k)

    Returns
    -------
    float

    Example
    -------
    >>> T, N = np.eye(3)[:, :1], np.eye(3)[:, 1:]
    >>> tangent_alignment(np.array([[2.0, 1.0, 1.0]]), T, N)
    4.0
    """
    T, N = check_bases(tangent_basis, normal_basis)
    W = check_array("W", to_numpy(W), shape=(None, T.shape[0]))
    en = float(np.sum((W @ N) ** 2)) / N.shape[1]
    et = float(np.sum((W @ T) ** 2)) / T.shape[1]
    return math.inf if en == 0 else et / en


def unit_energies(W, tangent_basis, normal_basis):
    """Per hidden unit: tangent and normal energy per dimension of its input weights.

    The unit-by-unit version of :func:`tangent_alignment`: row ``i`` of ``W`` gives
    ``||W_i T||^2 / d`` and ``||W_i N||^2 / k``.

    Parameters
    ----------
    W : array_like, shape (m, D)
        Rows are the input weights of the hidden units.
    tangent_basis, normal_basis : array_like, shapes (D, d), (D, k)

    Returns
    -------
    (ndarray, ndarray), shapes (m,) and (m,)

    Example
    -------
    >>> T, N = np.eye(3)[:, :1], np.eye(3)[:, 1:]
    >>> et, en = unit_energies(np.array([[2.0, 1.0, 1.0], [0.0, 2.0, 0.0]]), T, N)
    >>> et.tolist(), en.tolist()
    ([4.0, 0.0], [1.0, 2.0])
    """
    T, N = check_bases(tangent_basis, normal_basis)
    W = check_array("W", to_numpy(W), shape=(None, T.shape[0]))
    return np.sum((W @ T) ** 2, axis=1) / T.shape[1], np.sum((W @ N) ** 2, axis=1) / N.shape[1]


def default_loop_manifold(seed=0):
    """The manifold of the loop experiment: a random quadric, d = 2 in D = 8.

    ``Quadric`` whose six shape operators ``A_j`` are random symmetric matrices,
    rescaled so that the largest principal curvature is 1: every normal
    direction carries curvature of order 1, and the patch radius is 0.5.

    Example
    -------
    >>> M = default_loop_manifold()
    >>> M.d, M.D, M.patch_radius
    (2, 8, 0.5)
    """
    from tanbias.theory.manifolds import Quadric     # deferred: keeps residual importable on its own

    seed = check_int("seed", seed, lo=0, hint="Pass a non-negative seed.")
    rng = np.random.default_rng(seed)
    D, d = 8, 2
    A = rng.standard_normal((D - d, d, d))
    A = (A + A.transpose(0, 2, 1)) / 2
    A /= max(np.linalg.norm(a, 2) for a in A)
    return Quadric(A, D=D, seed=seed)


_PHI = {
    "tanh": (np.tanh, lambda z: 1.0 - np.tanh(z) ** 2),
    "linear": (lambda z: z, lambda z: np.ones_like(z)),
}


def _loop_data(manifold, t, n_train, rng):
    s = manifold.sample_at_radius(t, n_train, rng)
    T, N = manifold.tangent_basis, manifold.normal_basis
    X = s.y - manifold.mu
    v, n = (X @ T) @ T.T, (X @ N) @ N.T
    # target: half its variance from a tangent coordinate, half from a normal one,
    # so using the normal direction halves the loss (it is genuinely useful)
    c_t = rng.standard_normal(T.shape[1])
    c_n = rng.standard_normal(N.shape[1])
    z_t, z_n = (X @ T) @ c_t, (X @ N) @ c_n
    if z_n.std() <= 1e-9 * t ** 2:
        raise ParameterError(
            f"manifold={manifold!r} has normal coordinates that do not vary at a fixed radius "
            f"(II(u,u) is the same for every direction, e.g. a round sphere): valid range is "
            f"manifolds with non-umbilic curvature. Pass e.g. default_loop_manifold().")
    y_t, y_n = (z_t - z_t.mean()) / z_t.std(), (z_n - z_n.mean()) / z_n.std()
    return X, v, n, y_t + y_n, np.column_stack([y_t, y_n])


_HISTORY = ["step", "loop", "alignment", "update_alignment", "share", "loss"]


def feedback_loop(manifold=None, t=0.2, steps=2000, lr=0.05, width=32, init_scale=0.1,
                  phi="tanh", batch=128, n_train=2048, log_every=20, seed=0):
    """Train a two-layer network by SGD with the feedback loop closed and cut.

    Network: ``f(x) = w_2 . phi(W_1 x_c)`` with ``W_1`` (width, D) and ``w_2``
    (width,), initialised ``N(0, init_scale^2 / fan_in)``; squared loss. No
    biases: ``phi`` is odd, so the part of the target that is even in the
    tangent direction ``u`` (the normal coordinates are ``1/2 II(u,u) t^2``) can
    only be fitted *through the normal input directions*.

    Both runs use the same data, initial weights and minibatch sequence; they
    differ only in whether the gradients are computed with the current network
    (``"closed"``) or with its linearisation at the initial weights (``"cut"``;
    see the module docstring).

    Parameters
    ----------
    manifold : tanbias.theory.manifolds.Submanifold, optional
        Default :func:`default_loop_manifold` (a quadric, d = 2, D = 8).
    t : float
        Geodesic radius of the training points, ``(0, patch]``.
    steps : int >= 1
        SGD steps.
    lr : float > 0
        Learning rate.
    width : int >= 1
        Hidden units.
    init_scale : float > 0
        Standard deviation of the initial weights in units of ``1/sqrt(fan_in)``
        (1 is LeCun-normal). The default 0.1 puts this small network in the
        feature-learning ("rich") regime, where weight updates change the
        features and a loop can exist at all; at 1 it is close to the lazy
        regime, where the closed run stays near its own linearisation and the
        two runs barely differ (reported in chapter 6).
    phi : {"tanh", "linear"}
    batch : int >= 1
    n_train : int >= 2
        Training points (the metrics use the first 1024 of them).
    log_every : int >= 1
        Record every this many steps (and the last step).
    seed : int

    Returns
    -------
    pandas.DataFrame
        Tidy: ``step``, ``loop`` ("closed" / "cut"), ``alignment``
        (:func:`tangent_alignment` of ``W_1``), ``update_alignment`` (the same
        for ``W_1 - W_1(0)``, nan at step 0), ``share`` (tangent share
        ``sum ||W v||^2 / sum (||W v||^2 + ||W n||^2)`` of the layer-2 inputs
        *the gradients see*: ``W = W_1`` when closed, ``W_1(0)`` when cut), ``loss``.

    Raises
    ------
    ParameterError
        ``lr <= 0``, non-integer ``steps``, ``t`` out of range, a manifold whose
        normal coordinates are constant at fixed radius, or divergence.

    Notes
    -----
    What the default run shows (seeds 0-2 agree qualitatively; chapter 6 glues
    the numbers): the closed loop's alignment rises much faster than the cut
    loop's (tens of times higher by step 500) and peaks, then *falls* once the
    tangent half of the target is fitted and the remaining error lies along
    the normal directions, which the same loop then amplifies; run long enough
    (8000 steps) it ends below 1. The cut run accumulates its one-time bias
    slowly and monotonically. At equal training loss (rather than equal step)
    the cut run is the more aligned one, so the early lead is a lead in speed
    of feature learning, not a larger bias per unit of progress. At
    ``init_scale=1`` the two runs barely differ.

    Example
    -------
    >>> df = feedback_loop(steps=40, log_every=20)
    >>> df.groupby("loop", sort=False)["step"].apply(list).to_dict()
    {'closed': [0, 20, 40], 'cut': [0, 20, 40]}
    """
    return run_feedback_loop(manifold, t, steps, lr, width, init_scale, phi, batch, n_train,
                             log_every, seed).history[_HISTORY]


@dataclass(frozen=True)
class LoopRun:
    """A :func:`run_feedback_loop` result: the logged history and first-layer weight snapshots.

    Attributes
    ----------
    history : pandas.DataFrame
        The columns of :func:`feedback_loop` plus ``fit_tangent`` and
        ``fit_normal``: least-squares coefficients of the network's output on
        the two standardised halves of the target (tangent half, normal half),
        over the probe points. 1 means that half is fitted, 0 that it is not
        used at all.
    snapshots : dict
        ``{(loop, step): W_1}`` (arrays (width, D)) at the requested steps.
    params : dict
        The arguments of the run.
    """

    history: "pandas.DataFrame"
    snapshots: dict
    params: dict


def run_feedback_loop(manifold=None, t=0.2, steps=2000, lr=0.05, width=32, init_scale=0.1,
                      phi="tanh", batch=128, n_train=2048, log_every=20, seed=0,
                      snapshot_steps=()) -> LoopRun:
    """:func:`feedback_loop` with what was learned of each target half, and weight snapshots.

    Same arguments and the same training (bit for bit) as :func:`feedback_loop`,
    plus ``snapshot_steps``: steps (between 0 and ``steps``) at which a copy of
    ``W_1`` is kept for both runs (chapter 6's per-unit picture).

    Returns
    -------
    LoopRun

    Raises
    ------
    ParameterError
        As :func:`feedback_loop`; a snapshot step outside ``[0, steps]``.

    Example
    -------
    >>> run = run_feedback_loop(steps=40, log_every=20, snapshot_steps=(0, 40))
    >>> sorted(run.snapshots), run.snapshots["cut", 0].shape
    ([('closed', 0), ('closed', 40), ('cut', 0), ('cut', 40)], (32, 8))
    >>> list(run.history.columns[-2:])
    ['fit_tangent', 'fit_normal']
    """
    if manifold is None:
        manifold = default_loop_manifold()
    t = check_radius(t, manifold)
    steps = check_int("steps", steps, lo=1, hint="Pass a whole number of SGD steps.")
    lr = check_real("lr", lr, 0, hint="Pass a positive learning rate such as 0.05.")
    width = check_int("width", width, lo=1, hint="Pass a positive hidden width.")
    init_scale = check_real("init_scale", init_scale, 0,
                            hint="Pass a positive scale; 1 is LeCun-normal.")
    check_choice("phi", phi, tuple(_PHI), hint="Use 'tanh' or 'linear'.")
    batch = check_int("batch", batch, lo=1, hint="Pass a positive minibatch size.")
    n_train = check_int("n_train", n_train, lo=2, hint="Pass at least 2 training points.")
    log_every = check_int("log_every", log_every, lo=1, hint="Pass a positive logging period.")
    seed = check_int("seed", seed, lo=0, hint="Pass a non-negative seed.")
    rng = np.random.default_rng(seed)
    T, N = manifold.tangent_basis, manifold.normal_basis
    snapshot_steps = sorted({check_int("snapshot_steps", s_, lo=0, hi=steps,
                                       hint="Pass steps between 0 and `steps`.")
                             for s_ in snapshot_steps})
    params = dict(t=t, steps=steps, lr=lr, width=width, init_scale=init_scale, phi=phi,
                  batch=batch, n_train=n_train, log_every=log_every, seed=seed)
    X, V, Nrm, y, halves = _loop_data(manifold, t, n_train, rng)
    D = X.shape[1]
    W1_0 = rng.standard_normal((width, D)) * init_scale / math.sqrt(D)
    w2_0 = rng.standard_normal(width) * init_scale / math.sqrt(width)
    order = rng.integers(0, n_train, size=(steps, batch))   # shared minibatch sequence
    f, fp = _PHI[phi]
    # quantities of the initial network, frozen for the cut loop
    H0 = X @ W1_0.T
    A0, P0 = f(H0), fp(H0)

    def forward(loop, W1, w2, idx, Xi=None):
        """Output, and the activations/derivative that the gradient uses."""
        Xi = X[idx] if Xi is None else Xi
        if loop == "closed":
            H = Xi @ W1.T
            a = f(H)
            p = 1.0 - a ** 2 if phi == "tanh" else fp(H)     # tanh' from tanh: one tanh, not two
            return a @ w2, a, p, w2
        a, p = A0[idx], P0[idx]
        # first-order Taylor expansion of f in (W1, w2) around (W1_0, w2_0)
        out = a @ w2 + (p * (Xi @ (W1 - W1_0).T)) @ w2_0
        return out, a, p, w2_0

    # metrics on a fixed probe subset: cheap enough to log often, same for both runs
    probe = np.arange(min(n_train, 1024))
    Vp, Np, Hp, yp = V[probe], Nrm[probe], halves[probe], y[probe]
    kT, kN = T.shape[1], N.shape[1]

    def align(W):   # tangent_alignment without re-validating its inputs at every log
        en = float(np.sum((W @ N) ** 2)) / kN
        return math.inf if en == 0 else (float(np.sum((W @ T) ** 2)) / kT) / en

    def log(loop, step, W1, w2):
        out = forward(loop, W1, w2, probe)[0]
        W_seen = W1 if loop == "closed" else W1_0
        et = float(np.sum((Vp @ W_seen.T) ** 2))
        en = float(np.sum((Np @ W_seen.T) ** 2))
        fit = np.linalg.lstsq(Hp, out, rcond=None)[0]
        return dict(step=step, loop=loop, alignment=align(W1),
                    update_alignment=(align(W1 - W1_0) if step else math.nan),
                    share=et / (et + en), loss=float(0.5 * np.mean((out - yp) ** 2)),
                    fit_tangent=float(fit[0]), fit_normal=float(fit[1]))

    rows, snapshots, snaps_wanted = [], {}, set(snapshot_steps)
    for loop in ("closed", "cut"):
        W1, w2 = W1_0.copy(), w2_0.copy()
        with np.errstate(over="ignore", invalid="ignore"):       # divergence: reported below
            for step in range(steps):
                if step % log_every == 0:
                    rows.append(log(loop, step, W1, w2))
                if step in snaps_wanted:
                    snapshots[loop, step] = W1.copy()
                idx = order[step]
                Xi = X[idx]
                out, a, p, w2_back = forward(loop, W1, w2, idx, Xi)
                e = out - y[idx]                                  # dL/dout, (batch,)
                g_w2 = a.T @ e / batch
                g_W1 = (np.outer(e, w2_back) * p).T @ Xi / batch
                W1 -= lr * g_W1
                w2 -= lr * g_w2
                # one reduction catches both inf/nan (comparison is False) and blow-up
                if not np.abs(W1).max() < 1e100:
                    raise ParameterError(
                        f"lr={lr!r} is too large for this run: training diverged at step "
                        f"{step} (loop {loop!r}); valid range is (0, inf) but SGD needs lr "
                        f"below its stability limit. Pass a smaller learning rate, e.g. "
                        f"lr=0.05.")
        rows.append(log(loop, steps, W1, w2))
        if steps in snaps_wanted:
            snapshots[loop, steps] = W1.copy()
    return LoopRun(_frame(rows), snapshots, params)


# ----------------------------------------------------------------------------
# (b) summaries of the loop runs (the numbers chapter 6 reports)
# ----------------------------------------------------------------------------

def loop_summary(df, early=0.1, late=1.0):
    """Early and late values of the loop metrics, per run.

    Parameters
    ----------
    df : pandas.DataFrame
        Output of :func:`feedback_loop`.
    early, late : float in (0, 1]
        Fractions of the run: the logged step closest to ``early * steps`` and
        to ``late * steps``.

    Returns
    -------
    pandas.DataFrame
        Index ``loop``; columns ``alignment_early``, ``alignment_late``,
        ``alignment_peak``, ``peak_step``, ``share_early``, ``share_late``,
        ``loss_late``.
    """
    early = check_real("early", early, 0, 1, hi_open=False)
    late = check_real("late", late, 0, 1, hi_open=False)
    last = int(df["step"].max())
    out = {}
    for loop, g in df.groupby("loop", sort=False):
        s = g["step"].to_numpy()
        ie = int(np.argmin(np.abs(s - early * last)))
        il = int(np.argmin(np.abs(s - late * last)))
        ip = int(np.argmax(g["alignment"].to_numpy()))
        out[loop] = dict(
            alignment_early=float(g["alignment"].iloc[ie]),
            alignment_late=float(g["alignment"].iloc[il]),
            alignment_peak=float(g["alignment"].iloc[ip]), peak_step=int(s[ip]),
            share_early=float(g["share"].iloc[ie]), share_late=float(g["share"].iloc[il]),
            loss_late=float(g["loss"].iloc[il]))
    return _frame(out).T.rename_axis("loop")


def alignment_at_loss(history, levels):
    """Tangent alignment of each run at the first logged step where its loss reaches a level.

    Comparing runs at equal *loss* rather than equal *step* separates a larger
    bias from faster learning.

    Parameters
    ----------
    history : pandas.DataFrame
        Output of :func:`feedback_loop` (or ``LoopRun.history``).
    levels : sequence of float
        Loss levels.

    Returns
    -------
    pandas.DataFrame
        One row per (level, loop) reached: ``level``, ``loop``, ``step``, ``alignment``.
        Levels a run never reaches are absent for that run.

    Example
    -------
    >>> df = alignment_at_loss(feedback_loop(steps=400, log_every=100), [0.95, 0.5])
    >>> df[["level", "loop", "step"]].values.tolist()   # cut: not by step 400; none: 0.5
    [[0.95, 'closed', 200]]
    """
    levels = check_array("levels", levels, shape=(None,), hint="Pass loss levels.")
    rows = []
    for level in levels:
        for loop, g in history.groupby("loop", sort=False):
            hit = g[g["loss"] <= level]
            if len(hit):
                rows.append(dict(level=float(level), loop=loop, step=int(hit["step"].iloc[0]),
                                 alignment=float(hit["alignment"].iloc[0])))
    return _frame(rows, columns=["level", "loop", "step", "alignment"])


def loop_report(rich, lazy, loss_level=0.8, early_step=480, late_steps=(2000, 8000)) -> dict:
    """The numbers chapter 6 reports about a feature-learning run and a standard-init run.

    Parameters
    ----------
    rich, lazy : pandas.DataFrame
        ``LoopRun.history`` of the run at a small initial scale and of the run at
        initial scale 1 (same other arguments, logged at ``early_step``,
        ``late_steps`` and their last step).
    loss_level : float
        Loss level for the matched-loss comparison (must be reached by both
        closed and cut runs of ``rich``).
    early_step : int
        Logged step of the early comparison.
    late_steps : (int, int)
        Two logged steps of the late comparison; the second is the last one.

    Returns
    -------
    dict of str -> float
        Keys: ``a0`` (common initial alignment), ``closed_<s>``, ``cut_<s>`` for
        ``s`` in ``early_step`` and ``late_steps``, ``ratio_early``, ``peak`` and
        ``peak_step`` (closed run), ``fitT_peak`` (tangent half fitted at the
        peak), ``fitN_closed``, ``fitN_cut``, ``fitT_cut``, ``loss_closed``,
        ``loss_cut`` (at the last step), ``ml_step_closed``, ``ml_a_closed``,
        ``ml_step_cut``, ``ml_a_cut`` (matched loss), ``ns0``, ``ns_min``,
        ``ns_min_step``, ``ns_last`` (normal share ``1 - share`` of the closed
        run's hidden pre-activations), ``cut_peak_step``, ``lazy_closed_<s>``,
        ``lazy_cut_<s>`` (standard init at ``early_step`` and the last step),
        ``lazy_fitN_closed``, ``lazy_fitN_cut`` (normal half fitted at the last step).

    Raises
    ------
    ParameterError
        A step that was not logged, or a loss level one of the runs never reaches.
    """
    r = rich.set_index(["loop", "step"])
    z = lazy.set_index(["loop", "step"])
    last = int(late_steps[-1])
    steps = (int(early_step),) + tuple(int(s) for s in late_steps)
    for name, df in (("rich", r), ("lazy", z)):
        for s in steps:
            if (("closed", s) not in df.index) or (("cut", s) not in df.index):
                raise ParameterError(f"step {s} is not logged in {name}: valid range is the "
                                     f"logged steps. Pick multiples of log_every.")
    A = r["alignment"]
    closed = A["closed"]
    peak_step = int(closed.idxmax())
    ml = alignment_at_loss(rich, [loss_level]).set_index("loop")
    if set(ml.index) != {"closed", "cut"}:
        raise ParameterError(f"loss_level={loss_level!r} is not reached by both runs: valid "
                             f"range is levels above the larger final loss. Pass a higher level.")
    ns = 1.0 - r["share"]["closed"]
    out = {"a0": A["closed", 0], "peak": closed.max(), "peak_step": peak_step,
           "cut_peak_step": int(A["cut"].idxmax()),
           "fitT_peak": r["fit_tangent"]["closed", peak_step],
           "fitN_closed": r["fit_normal"]["closed", last], "fitN_cut": r["fit_normal"]["cut", last],
           "fitT_cut": r["fit_tangent"]["cut", last],
           "loss_closed": r["loss"]["closed", last], "loss_cut": r["loss"]["cut", last],
           "ml_step_closed": ml.loc["closed", "step"], "ml_a_closed": ml.loc["closed", "alignment"],
           "ml_step_cut": ml.loc["cut", "step"], "ml_a_cut": ml.loc["cut", "alignment"],
           "ns0": ns[0], "ns_min": ns.min(), "ns_min_step": int(ns.idxmin()), "ns_last": ns[last]}
    for s in steps:
        out[f"closed_{s}"], out[f"cut_{s}"] = A["closed", s], A["cut", s]
    out["ratio_early"] = out[f"closed_{early_step}"] / out[f"cut_{early_step}"]
    for s in (int(early_step), last):
        out[f"lazy_closed_{s}"] = z["alignment"]["closed", s]
        out[f"lazy_cut_{s}"] = z["alignment"]["cut", s]
    out["lazy_fitN_closed"] = z["fit_normal"]["closed", last]
    out["lazy_fitN_cut"] = z["fit_normal"]["cut", last]
    return {k: float(v) for k, v in out.items()}
