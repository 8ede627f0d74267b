"""From a tangent bias to a narrow cone: a toy model of the step (the chapter after chapter 6).

A weight update ``Delta W`` moves the hidden state of token ``k`` by ``Delta W x_k``. Split
every input into the part all tokens share and the rest, ``x_k = m + z_k`` with ``m`` the
mean input and ``mean_k z_k = 0``. Then, exactly (our derivation, a line of algebra):

    mean_k Delta W x_k = Delta W m,
    mean_k ||Delta W x_k||^2 = ||Delta W m||^2 + mean_k ||Delta W z_k||^2,

so the *coherence* of the displacements, the share of their mean square that is common to
every token,

    C = ||mean_k Delta h_k||^2 / mean_k ||Delta h_k||^2 = ||Delta W m||^2 / (||Delta W m||^2 + mean_k ||Delta W z_k||^2),

is 1 when the update reads only the shared input ``m`` and 0 when it reads only what tokens
do not share. A coherent displacement added to an isotropic stream makes a narrow cone (the
mean cosine rises: anisotropy as a *shared mean*); an incoherent one confined to few output
directions stretches the centred cloud instead (a fall of its participation ratio: anisotropy
as the *shape of the centred cloud*).

The tangent bias says the update reads each token's tangent directions. The toy
(:func:`cone_drift`) lets two things vary that the bias does not fix: how far the tokens'
tangent planes are *shared* (one plane for all, or a plane of their own each) and how far the
shared plane is *aligned* with the shared input ``m``. Everything else is as simple as it can
be: one linear block that starts silent (``W = 0``) and adds its output to an isotropic stream,
one input and one back-propagated signal per token (the signals centred exactly, so that they
share no mean), and one update, the tangent-projected gradient
``G = sum_j delta_j (P_{T_j} x_j)^T`` scaled to a given RMS displacement. It shows a mechanism;
it does not show that training does it. :mod:`tanbias.figures.cone_drift` draws it.

The toy's update is an *assumption*, not chapter 4's result. Chapter 4 derives the tangent bias
in the energy of the per-sample gradients ``delta (x - mu)^T``. For the update, their mean, it
holds only for the covariance part ``sum delta (x - xbar_tok)^T``, centred at the token's own
sample mean; the rest, ``mean(delta) xbar_tok^T``, reads the token's mean input (the normal
offset ``t^2 E II / 2`` included) and no bias touches it. Each toy token has one input and no
spread around a mean of its own, so it has no covariance part, and the toy projects that whole
input, the shared part ``m`` included. So in the toy the tangent bias acts on the shared input
by assumption: in chapter 4's terms the toy's update would be the plain gradient.
"""

from __future__ import annotations

import numpy as np

from tanbias._checks import check_array, check_int, check_real

__all__ = ["displacement_coherence", "update_coherence", "mean_cosine_of_rows", "participation_ratio",
           "cone_setting", "cone_drift"]


def displacement_coherence(displacements) -> float:
    """``||mean_k Delta h_k||^2 / mean_k ||Delta h_k||^2`` over the rows of ``displacements``.

    1 when every token moves by the same vector, near 0 when the moves cancel.

    Parameters
    ----------
    displacements : array_like, shape (n, D), n >= 1

    Returns
    -------
    float in [0, 1]

    Example
    -------
    >>> displacement_coherence([[1.0, 0.0], [1.0, 0.0]]), displacement_coherence([[1.0, 0.0], [-1.0, 0.0]])
    (1.0, 0.0)
    """
    dh = check_array("displacements", displacements, shape=(None, None),
                     hint="Pass one displacement per row, shape (n, D).")
    ms = float(np.mean(np.sum(dh ** 2, axis=1)))
    return 0.0 if ms == 0 else float(np.sum(dh.mean(axis=0) ** 2) / ms)


def update_coherence(update, inputs) -> float:
    """The same coherence from the update and the inputs: ``||W m||^2 / (||W m||^2 + mean_k ||W z_k||^2)``
    with ``m`` the mean input and ``z_k = x_k - m``; equal to
    ``displacement_coherence(inputs @ update.T)`` (the identity in the module docstring).

    Parameters
    ----------
    update : array_like, shape (D_out, D)
    inputs : array_like, shape (n, D)

    Returns
    -------
    float

    Example
    -------
    >>> W, x = np.array([[1.0, 2.0], [0.0, 1.0]]), np.array([[1.0, 0.5], [1.0, -0.5], [1.0, 0.0]])
    >>> round(update_coherence(W, x), 12) == round(displacement_coherence(x @ W.T), 12)
    True
    """
    W = check_array("update", update, shape=(None, None), hint="Pass a weight update, shape (D_out, D).")
    x = check_array("inputs", inputs, shape=(None, W.shape[1]), hint=f"Pass inputs of shape (n, {W.shape[1]}).")
    m = x.mean(axis=0)
    common = float(np.sum((W @ m) ** 2))
    specific = float(np.mean(np.sum(((x - m) @ W.T) ** 2, axis=1)))
    return 0.0 if common + specific == 0 else common / (common + specific)


def mean_cosine_of_rows(h) -> float:
    """Mean cosine over all pairs of distinct rows (the uncentred mean cosine of chapter 12).

    Example
    -------
    >>> round(mean_cosine_of_rows(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])), 6)   # (0 + 2 * 0.7071) / 3
    0.471405
    """
    h = check_array("h", h, shape=(None, None), hint="Pass one vector per row.")
    hn = h / np.linalg.norm(h, axis=1, keepdims=True)
    n = hn.shape[0]
    s = hn.sum(axis=0)
    return float((s @ s - n) / (n * (n - 1)))


def participation_ratio(h) -> float:
    """Participation ratio ``(sum lambda)^2 / sum lambda^2`` of the centred rows' covariance
    (the glossary's effective number of dimensions of the centred cloud).

    Example
    -------
    >>> round(participation_ratio(np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])), 6)
    2.0
    """
    h = check_array("h", h, shape=(None, None), hint="Pass one vector per row.")
    hc = h - h.mean(axis=0)
    ev = np.linalg.eigvalsh(hc.T @ hc)
    return float(ev.sum() ** 2 / np.sum(ev ** 2))


def cone_setting(sharing=1.0, alignment=1.0, n_tokens=200, D=32, d=2, offset=1.0, seed=0) -> dict:
    """The toy's tokens: inputs, tangent planes, signals and the isotropic stream they join.

    Token ``k`` has input ``x_k = offset * m_hat + z_k`` (``z_k ~ N(0, I/D)``, so ``||z_k|| ~ 1``)
    and a tangent plane ``T_k`` of dimension ``d``: the orthonormalised mix
    ``sqrt(sharing) U + sqrt(1 - sharing) R_k`` of a plane ``U`` shared by every token and a
    random plane ``R_k`` of its own. The shared input direction ``m_hat`` makes the angle with
    ``U`` whose squared cosine is ``alignment``. Its back-propagated signal is drawn
    ``N(0, I/D)`` and then centred over the tokens, so that ``sum_k delta_k = 0`` exactly: the
    signals have no shared mean, and whatever is common comes from the input side. (Left
    uncentred, their sample sum would drive the plain gradient's common move
    ``sum_k delta_k <x_k, m> ~ ||m||^2 sum_k delta_k``, chapter 4's ``delta_0`` mechanism.)

    Parameters
    ----------
    sharing, alignment : float in [0, 1]
    n_tokens : int >= 2
    D : int >= d + 2
    d : int >= 1
    offset : float >= 0
        Size of the shared input ``m = offset * m_hat``.
    seed : int

    Returns
    -------
    dict
        ``x`` (n, D), ``tangent`` (n, D, d) orthonormal bases, ``delta`` (n, D), ``stream`` (n, D)
        the isotropic hidden states the block's output is added to, ``m_hat`` (D,), ``U`` (D, d).

    Example
    -------
    >>> s = cone_setting(sharing=1.0, alignment=1.0, n_tokens=5, D=6)
    >>> bool(np.allclose(s["tangent"][0] @ s["tangent"][0].T @ s["m_hat"], s["m_hat"]))   # m in the shared plane
    True
    """
    sharing = check_real("sharing", sharing, lo=0, hi=1, lo_open=False, hi_open=False,
                         hint="Pass a share between 0 (own planes) and 1 (one shared plane).")
    alignment = check_real("alignment", alignment, lo=0, hi=1, lo_open=False, hi_open=False,
                           hint="Pass a squared cosine between 0 and 1.")
    n = check_int("n_tokens", n_tokens, lo=2, hint="Pass at least two tokens.")
    d = check_int("d", d, lo=1, hint="Pass a tangent dimension >= 1.")
    D = check_int("D", D, lo=d + 2, hint="Pass an ambient dimension at least d + 2.")
    offset = check_real("offset", offset, lo=0, lo_open=False, hint="Pass a non-negative size.")
    rng = np.random.default_rng(check_int("seed", seed, lo=0, hint="Pass a non-negative seed."))
    Q = np.linalg.qr(rng.standard_normal((D, D)))[0]
    U = Q[:, :d]
    m_hat = np.sqrt(alignment) * U[:, 0] + np.sqrt(1 - alignment) * Q[:, d]
    x = offset * m_hat + rng.standard_normal((n, D)) / np.sqrt(D)
    own = np.linalg.qr(rng.standard_normal((n, D, d)))[0]
    tangent = np.linalg.qr(np.sqrt(sharing) * U[None] + np.sqrt(1 - sharing) * own)[0]
    delta = rng.standard_normal((n, D)) / np.sqrt(D)
    delta -= delta.mean(axis=0)                                                   # no shared signal
    stream = rng.standard_normal((n, D)) / np.sqrt(D)
    return dict(x=x, tangent=tangent, delta=delta, stream=stream, m_hat=m_hat, U=U)


def cone_drift(sharing=1.0, alignment=1.0, sizes=None, n_tokens=200, D=32, d=2, offset=1.0, seed=0) -> dict:
    """Add a tangent-projected update's output to an isotropic stream; read both kinds of anisotropy.

    The update is ``G = sum_k delta_k (P_{T_k} x_k)^T`` (the gradient of a silent linear block
    with each token's whole input read through its tangent plane: an assumption, see the module
    docstring), and the plain gradient
    ``sum_k delta_k x_k^T`` (no tangent bias) is the reference. Each moves token ``k`` by
    ``-s G x_k``, scaled so that the RMS displacement is ``s`` (the stream's RMS norm is 1),
    and the hidden states are ``stream_k - s G x_k``.

    Parameters
    ----------
    sharing, alignment : float in [0, 1]
        See :func:`cone_setting`.
    sizes : array_like, optional
        RMS displacements ``s`` (default 13 values from 0 to 3).
    n_tokens, D, d, offset, seed
        See :func:`cone_setting`.

    Returns
    -------
    dict
        ``sizes``; for ``"tangent"`` and ``"plain"`` updates: ``mean_cosine`` and
        ``participation`` (arrays over ``sizes``) and ``coherence`` (float); ``sharing``,
        ``alignment``.

    Example
    -------
    >>> aligned = cone_drift(1.0, 1.0, sizes=[0.0, 3.0], n_tokens=100)
    >>> orthogonal = cone_drift(1.0, 0.0, sizes=[0.0, 3.0], n_tokens=100)
    >>> bool(aligned["tangent"]["mean_cosine"][-1] > 0.8), bool(abs(orthogonal["tangent"]["mean_cosine"][-1]) < 0.05)
    (True, True)
    >>> bool(orthogonal["tangent"]["participation"][-1] < 4)      # the centred cloud collapses instead
    True
    """
    sizes = np.linspace(0.0, 3.0, 13) if sizes is None else check_array(
        "sizes", sizes, shape=(None,), hint="Pass RMS displacements, e.g. numpy.linspace(0, 3, 13).")
    s = cone_setting(sharing, alignment, n_tokens, D, d, offset, seed)
    x, T = s["x"], s["tangent"]
    projected = np.einsum("kab,kb->ka", T, np.einsum("kba,kb->ka", T, x))       # P_{T_k} x_k
    out = dict(sizes=sizes, sharing=float(sharing), alignment=float(alignment))
    for name, read in (("tangent", projected), ("plain", x)):
        G = s["delta"].T @ read
        move = -(x @ G.T)
        move /= np.sqrt(np.mean(np.sum(move ** 2, axis=1)))
        hs = [s["stream"] + size * move for size in sizes]
        out[name] = dict(mean_cosine=np.array([mean_cosine_of_rows(h) for h in hs]),
                         participation=np.array([participation_ratio(h) for h in hs]),
                         coherence=displacement_coherence(move))
    return out
