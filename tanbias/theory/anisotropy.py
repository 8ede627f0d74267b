"""Anisotropy read six ways, one per account of where it comes from (the rivals chapter, chapter 9's tool).

A mean cosine near 1 says that a layer's vectors share a direction. Several
accounts predict that number without any tangent bias, and each names a
correction that should remove it if it is right:

* **raw** (:func:`mean_cosine`): the mean cosine of all pairs of distinct rows, the
  uncentred quantity of Ethayarajh (2019) that the lab's chapters read;
* **common drift** (Biś et al. 2021): the vectors share a shifted mean. The
  **centred** mean cosine subtracts the layer's mean vector first, and the **mean
  share** ``||mean||^2 / mean ||x||^2`` says how much of the squared norm that mean
  carries (0 for a centred cloud, 1 for identical rows);
* **rogue dimensions** (Timkey & van Schijndel 2021): one to three coordinates
  dominate the cosine. The **standardised** mean cosine centres each coordinate and
  divides it by its standard deviation over positions, and the **top-coordinate
  share** is the share of the total variance held by the ``top`` (3) coordinates
  with the largest variance (``top / D`` for an isotropic cloud);
* **measurement** (Ethayarajh 2019; Yokoi et al. 2024): an occurrence-weighted mean
  moves with the probe text's frequencies. The **type-balanced** mean cosine weights
  each row by ``1 / count`` of its type, so that every type counts equally.

Every mean cosine here is *exact* over all ``n (n - 1)`` ordered pairs of distinct
rows, from the identity ``sum_{i != j} u_i . u_j = ||sum_i u_i||^2 - sum_i ||u_i||^2``
for unit rows ``u_i``, in ``O(n D)``: no pair is sampled, so two readings of one
cloud differ only by what they correct. The lab's older ``mean_cosine`` column
(:func:`tanbias.theory.token_clouds.anisotropy`) estimates the same quantity from
20,000 sampled pairs, :func:`pair_contributions`, which lives here beside the exact one
so that the mean cosine has one home; the tests check that the two agree within the
sample's error. The sampled estimate stays because every committed run's
``anisotropy.csv`` holds it: an experiment reads one estimator across all its runs.

The measurement command (``python -m tanbias measure``) reads its own set of a model's layers,
:data:`MEASURE_READINGS` (:func:`measure_readings`): the centred mean cosine is left out (it is
near 0 by construction: a centred cloud's rows sum to 0), and the **cosine top share**, the
part of the raw mean cosine that its ``top`` coordinates carry (:func:`cosine_contributions`,
exact), is added: Timkey & van Schijndel's rogue dimensions read off the cosine itself rather
than off the variance. :func:`singular_spectrum` reads a model's output matrix. Every reading's
name on a figure is in :data:`LABELS`, its one home. The lab's runs read :func:`readings`
(``rivals.csv``), unchanged.

The output-bottleneck account and the proxy's sharpness are about gradients and
proxies, not clouds: :func:`tanbias.theory.alignment.enrichment_outside` and
:func:`tanbias.theory.alignment.subspace_sharpness`.
"""
from __future__ import annotations

import numpy as np

from tanbias._checks import check_array, check_int
from tanbias.errors import ParameterError

__all__ = ["READINGS", "TOP_COORDINATES", "MEASURE_READINGS", "LABELS", "mean_cosine", "pair_contributions",
           "coordinate_shares", "readings", "cosine_contributions", "cosine_top_share", "measure_readings",
           "singular_spectrum"]

#: the readings :func:`readings` returns, in the order tables show them
READINGS = ("raw", "centered", "standardised", "type_balanced", "mean_share", "top_share")
#: how many coordinates the top-coordinate share reads (the rogue-dimension account's "one to three")
TOP_COORDINATES = 3
#: the readings :func:`measure_readings` returns (the measurement command's ``anisotropy.csv``), in order
MEASURE_READINGS = ("raw", "mean_share", "cosine_top_share", "top_share", "standardised", "type_balanced")
#: Each reading's names: ``(title, axis title, short label)``; the readings of this module, and
#: IsoScore* (:func:`tanbias.theory.alignment.isoscore_star`), which the measurement reads beside them
LABELS = {
    "raw": ("mean cosine of all pairs (raw)", "mean cosine (raw)", "raw"),
    "centered": ("mean cosine after removing the mean vector", "mean cosine, centred", "centred"),
    "standardised": ("mean cosine of standardised coordinates", "mean cosine, standardised", "standardised"),
    "type_balanced": ("mean cosine, every type weighted equally", "mean cosine, types equal", "types equal"),
    "mean_share": ("share of the squared norm in the mean vector", "mean vector's share of the norm²",
                   "mean share"),
    "top_share": (f"variance share of the top {TOP_COORDINATES} coordinates", f"top-{TOP_COORDINATES} variance share",
                  f"top-{TOP_COORDINATES} variance"),
    "cosine_top_share": (f"share of the mean cosine in its top {TOP_COORDINATES} coordinates",
                         f"top-{TOP_COORDINATES} share of the cosine", f"top-{TOP_COORDINATES} cosine"),
    "isoscore_star": ("IsoScore* of the centred cloud (1 = isotropic)", "IsoScore*", "IsoScore*"),
}


def _rows(X) -> np.ndarray:
    X = check_array("X", np.asarray(X, dtype=np.float64), shape=(None, None))
    if X.shape[0] < 2:
        raise ParameterError(f"X has {X.shape[0]} rows: valid range is [2, inf). A mean cosine needs "
                             "a pair of rows.")
    if X.shape[1] < 2:
        raise ParameterError(f"X has D={X.shape[1]} columns: valid range is [2, inf).")
    return X


def mean_cosine(X, weights=None) -> float:
    """Exact mean cosine over all pairs of distinct rows, optionally weighted by ``w_i w_j``.

    ``sum_{i != j} w_i w_j cos(x_i, x_j) / sum_{i != j} w_i w_j``, computed as
    ``(||sum_i w_i u_i||^2 - sum_i w_i^2) / ((sum_i w_i)^2 - sum_i w_i^2)`` with
    ``u_i = x_i / ||x_i||``. Rows of norm 0 have no direction and are left out.

    Parameters
    ----------
    X : array (n, D)
    weights : array (n,), optional
        Non-negative row weights (default 1): :func:`readings` passes ``1 / count`` of each
        row's type for the type-balanced reading.

    Returns
    -------
    float in [-1, 1]; NaN when fewer than two rows (of positive weight) have a direction.

    Raises
    ------
    ParameterError
        Bad shapes, fewer than two rows, or negative / non-finite weights.

    Example
    -------
    >>> round(mean_cosine([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), 6)   # pairs: 0, 1/sqrt 2, 1/sqrt 2
    0.471405
    >>> mean_cosine([[1.0, 0.0], [2.0, 0.0], [3.0, 0.0]])
    1.0
    """
    X = _rows(X)
    w = np.ones(len(X)) if weights is None else check_array("weights", np.asarray(weights, float),
                                                            shape=(len(X),))
    if np.any(w < 0):
        raise ParameterError(f"weights has a negative entry ({float(w.min())}): valid range is [0, inf).")
    return _mean_cosine(X, _norms(X), w)


def _norms(X: np.ndarray) -> np.ndarray:
    """Each row's Euclidean norm (one pass, no copy of ``X``)."""
    return np.sqrt(np.einsum("ij,ij->i", X, X))


def _mean_cosine(X: np.ndarray, norms: np.ndarray, w: np.ndarray) -> float:
    """:func:`mean_cosine` of checked rows with their ``norms``: ``sum_i w_i u_i`` is one product
    ``(w / norms) @ X``, so the unit rows ``u_i`` are never formed."""
    keep = (norms > 0) & (w > 0)
    if keep.sum() < 2:
        return float("nan")
    if not keep.all():
        X, norms, w = X[keep], norms[keep], w[keep]
    s = (w / norms) @ X
    w2 = float(w @ w)
    denom = float(w.sum()) ** 2 - w2
    return float(np.clip((float(s @ s) - w2) / denom, -1.0, 1.0))


def pair_contributions(X: np.ndarray, norms: np.ndarray, n_pairs: int, rng: np.random.Generator,
                       chunk: int = 4096) -> np.ndarray:
    """Each dimension's part of the mean cosine over ``n_pairs`` sampled pairs of distinct rows (D,).

    Pair ``k`` is ``(i_k, j_k)`` with ``i_k`` uniform and ``j_k = (i_k + U{1..n-1}) mod n``;
    dimension ``d`` gets ``mean_k x_{i_k d} x_{j_k d} / (||x_{i_k}|| ||x_{j_k}||)``. The parts sum
    to the sampled mean cosine, an unbiased estimate of :func:`mean_cosine` (Timkey & van
    Schijndel 2021 read the parts for rogue dimensions). ``X`` is checked by the caller, its
    ``norms`` are positive, and ``rng`` is consumed in this order so that a seed gives the
    committed runs' values bit for bit.

    Example
    -------
    >>> X = np.random.default_rng(0).normal(size=(500, 4)) + [3.0, 0, 0, 0]
    >>> c = pair_contributions(X, _norms(X), 20000, np.random.default_rng(1))
    >>> int(np.argmax(c)), abs(float(c.sum()) - mean_cosine(X)) < 0.02
    (0, True)
    """
    n, D = X.shape
    i = rng.integers(0, n, size=n_pairs)
    j = (i + rng.integers(1, n, size=n_pairs)) % n
    contrib = np.zeros(D)
    for s in range(0, n_pairs, chunk):
        a, b = i[s:s + chunk], j[s:s + chunk]
        contrib += np.einsum("ij,ij->j", X[a] / norms[a, None], X[b] / norms[b, None])
    return contrib / n_pairs


def coordinate_shares(X) -> np.ndarray:
    """Each coordinate's share of the cloud's total variance, largest first (D,).

    Example
    -------
    >>> coordinate_shares([[0.0, 0.0], [2.0, 1.0], [4.0, 2.0]])
    array([0.8, 0.2])
    """
    return _variance_shares(_rows(X).var(axis=0))


def _variance_shares(var: np.ndarray) -> np.ndarray:
    """Each coordinate's share of the summed variances ``var``, largest first; NaN when they sum to 0."""
    total = float(var.sum())
    if total == 0:
        return np.full(len(var), np.nan)
    return np.sort(var / total)[::-1]


def readings(X, type_ids=None, top: int = TOP_COORDINATES) -> dict:
    """The six readings of :data:`READINGS` for one layer's cloud.

    Parameters
    ----------
    X : array (n, D)
        One layer's vectors at the positions read (the lab: content positions, the first
        position and special tokens left out).
    type_ids : array (n,) of int, optional
        The type (token id) of each row, for the type-balanced reading; without it that
        reading is NaN.
    top : int in [1, D - 1]
        Coordinates in the top-coordinate share.

    Returns
    -------
    dict
        ``raw``, ``centered``, ``standardised``, ``type_balanced`` (mean cosines),
        ``mean_share`` and ``top_share`` (shares in [0, 1]), ``n`` (rows) and ``types``
        (distinct types, 0 without ``type_ids``).

    Raises
    ------
    ParameterError
        Bad shapes, fewer than two rows, ``type_ids`` of another length, a bad ``top``.

    Example
    -------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(3000, 16))
    >>> X[:, 2] += 30.0                                          # a shifted mean
    >>> r = readings(X)
    >>> round(r["raw"], 2), abs(r["centered"]) < 0.01, round(r["mean_share"], 2)
    (0.98, True, 0.98)
    """
    X = _rows(X)
    n, D = X.shape
    top = check_int("top", top, lo=1, hi=D - 1, hint="Pass the number of coordinates, e.g. 3.")
    # one pass over the cloud for each quantity, shared by the readings (the measurement command
    # reads every layer of a model this way: make bench times it)
    ones = np.ones(n)
    norms = _norms(X)
    mu = X.mean(axis=0)
    Xc = X - mu
    var = np.einsum("ij,ij->j", Xc, Xc) / n
    sd = np.sqrt(var)
    live = sd > 0
    if live.sum() >= 2:
        Z = Xc[:, live] / sd[live]
        standardised = _mean_cosine(Z, _norms(Z), ones)
    else:
        standardised = float("nan")
    sq = float(np.mean(norms ** 2))
    out = {"raw": _mean_cosine(X, norms, ones), "centered": _mean_cosine(Xc, _norms(Xc), ones),
           "standardised": standardised, "type_balanced": float("nan"),
           "mean_share": float(mu @ mu / sq) if sq > 0 else float("nan"),
           "top_share": float(_variance_shares(var)[:top].sum()),
           "n": int(n), "types": 0}
    if type_ids is not None:
        ids = check_array("type_ids", np.asarray(type_ids), shape=(n,))
        _, inverse, counts = np.unique(ids, return_inverse=True, return_counts=True)
        out["type_balanced"] = _mean_cosine(X, norms, 1.0 / counts[inverse])
        out["types"] = int(len(counts))
    return out


def cosine_contributions(X) -> np.ndarray:
    """Each coordinate's exact part of the mean cosine over all pairs of distinct rows (D,).

    ``c_d = ((sum_i u_id)^2 - sum_i u_id^2) / (n (n - 1))`` with ``u_i = x_i / ||x_i||``: the parts
    sum to :func:`mean_cosine` (rows of norm 0 left out). :func:`pair_contributions` estimates
    them from sampled pairs; these are exact, in ``O(n D)``.

    Example
    -------
    >>> X = np.random.default_rng(0).normal(size=(400, 4)) + [3.0, 0, 0, 0]
    >>> c = cosine_contributions(X)
    >>> int(np.argmax(c)), bool(np.isclose(c.sum(), mean_cosine(X)))
    (0, True)
    """
    X = _rows(X)
    norms = _norms(X)
    keep = norms > 0
    if keep.sum() < 2:
        return np.full(X.shape[1], np.nan)
    U = X[keep] / norms[keep, None]
    n = len(U)
    return (U.sum(axis=0) ** 2 - np.einsum("ij,ij->j", U, U)) / (n * (n - 1))


def cosine_top_share(X, top: int = TOP_COORDINATES) -> float:
    """The share of the mean cosine that its ``top`` largest coordinate parts carry.

    Timkey & van Schijndel (2021) found one to three coordinates carrying most of a layer's
    cosine: a share near 1 says the anisotropy lives in a few rogue coordinates, a share near
    ``top / D`` that it is spread over all of them. The share is of the signed sum, so it may
    pass 1 when other coordinates pull the cosine down; NaN when the mean cosine is 0.

    Example
    -------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 32))
    >>> rogue = X + 8.0 * (np.arange(32) == 5)       # one rogue coordinate
    >>> spread = X + 1.5                             # the same shift over every coordinate
    >>> round(cosine_top_share(rogue, top=1), 2), round(cosine_top_share(spread, top=1), 2)
    (1.0, 0.03)
    """
    X = _rows(X)
    top = check_int("top", top, lo=1, hi=X.shape[1], hint="Pass the number of coordinates, e.g. 3.")
    c = cosine_contributions(X)
    total = float(c.sum())
    if not np.isfinite(total) or total == 0:
        return float("nan")
    return float(np.sort(c)[::-1][:top].sum() / total)


def measure_readings(X, type_ids=None, top: int = TOP_COORDINATES) -> dict:
    """The readings of :data:`MEASURE_READINGS` for one layer's cloud (the measurement command's).

    :func:`readings` without the centred mean cosine (near 0 by construction), with the
    :func:`cosine_top_share`. Parameters and errors as :func:`readings`.

    Example
    -------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(3000, 16))
    >>> X[:, 2] += 30.0                                          # a shifted mean, in one coordinate
    >>> r = measure_readings(X)
    >>> tuple(r) == MEASURE_READINGS, round(r["mean_share"], 2), round(r["cosine_top_share"], 2)
    (True, 0.98, 1.0)
    """
    r = readings(X, type_ids=type_ids, top=top)
    r["cosine_top_share"] = cosine_top_share(X, top=top)
    return {k: r[k] for k in MEASURE_READINGS}


def singular_spectrum(W, chunk: int = 16384) -> np.ndarray:
    """The singular values of a matrix ``W`` (V, D), largest first (min(V, D),).

    Read from the eigenvalues of ``W^T W`` (or ``W W^T``, the smaller), summed in float64 over
    blocks of ``chunk`` rows: a vocabulary of 262,144 rows never needs a float64 copy. A model's
    output matrix (its unembedding) is one: a few large values say its logits move along few
    directions (the softmax-bottleneck reading of anisotropy).

    Example
    -------
    >>> W = np.diag([3.0, 2.0, 1.0])[:, :2]
    >>> singular_spectrum(W).round(6).tolist()
    [3.0, 2.0]
    """
    W = check_array("W", np.asarray(W), shape=(None, None))
    chunk = check_int("chunk", chunk, lo=1, hint="Pass e.g. 16384.")
    if W.shape[0] < W.shape[1]:
        W = W.T
    G = np.zeros((W.shape[1], W.shape[1]))
    for s in range(0, W.shape[0], chunk):
        B = np.asarray(W[s:s + chunk], np.float64)
        G += B.T @ B
    lam = np.clip(np.linalg.eigvalsh(G)[::-1], 0.0, None)
    return np.sqrt(lam)
