"""Token-representation clouds of one layer of a real model: radii, centroids, anisotropy.

Input: the activations ``X`` (n, D) of one layer (one row per token position,
float32 or float64) and ``type_ids`` (n,), the token-type id of each row. Every
computation runs in float64 and holds at most about two ``(n, D)`` float64
arrays (a float32 ``X`` is converted once; everything else is done per group
or in chunks of rows).

* **Spread** (:func:`layer_spread`): ``s = sqrt(mean_i ||x_i - xbar||^2)``,
  the RMS distance of the rows to their mean. Radii divided by ``s`` are
  scale-free and comparable across layers and models.
* **Per-type statistics** (:func:`type_statistics`), over the token types with
  at least ``min_count`` occurrences: the concentration radius
  ``t = sqrt(mean ||x - mu_type||^2) / s`` (the statement's ``t``), the
  centroid distance ``||mu_type - xbar|| / s`` and the self-similarity of
  Ethayarajh (2019), the mean cosine of distinct pairs of occurrences,
  ``(||sum_i u_i||^2 - c) / (c (c - 1))`` with ``u_i = x_i / ||x_i||``.
* **Readings that do not depend on a type's count** (:func:`matched_statistics`):
  the plain estimates depend on how often a type occurs (the RMS radius is
  shrunk by about ``(c - 1) / c``, the centroid distance inflated by about
  ``sigma^2 / c``), and a type's count in a text follows its frequency, so
  their correlation with frequency is partly mechanical. Drawing the same
  number ``m`` of occurrences of every type, many times, removes that.
* **Spearman correlation with a bootstrap interval** (:func:`spearman_ci`, over
  types) and the premise's correlations with an interval over *documents*
  (:func:`premise_bootstrap`): documents are resampled and every per-type
  statistic recomputed inside each resample, so the interval holds the noise of
  a type's own occurrences and the dependence of types drawn from one document.
* **Anisotropy of the whole cloud** (:func:`anisotropy`): mean cosine of random
  pairs of rows (raw activations, as Ethayarajh), IsoScore* (Rudman & Eickhoff,
  :func:`tanbias.theory.alignment.isoscore_star`), the variance share of the top
  principal directions, and the *rogue dimensions* of Timkey & van Schijndel
  (2021): dimension ``i`` contributes ``E[x_i y_i / (||x|| ||y||)]`` to the
  expected cosine of random pairs, and a dimension whose contribution exceeds
  ``outlier_threshold`` (default 5 %) of the mean cosine is an outlier.
* **Local normal share** (:func:`normal_share`, :func:`type_normal_shares`,
  :func:`normal_share_scaling`): the variance of a type's cloud outside its
  top-``k`` principal directions, as a share of its total variance. Points of a
  smooth ``d``-dimensional manifold within radius ``t`` have tangent parts
  ``O(t)`` and normal parts ``O(t^2)`` (the second fundamental form), so with
  ``k = d`` the share is ``O(t^2)``: log-log slope 2 against ``t``. A flat cloud
  with isotropic noise of the cloud's own size keeps a constant share: slope 0.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse as _sparse
from scipy import stats as _st

from tanbias._checks import check_array, check_int, check_real, check_rng, check_rows, to_numpy
from tanbias._threads import thread_map
from tanbias.theory.alignment import DEFAULT_ZETA, isoscore_star_spectrum
from tanbias.theory.anisotropy import pair_contributions
from tanbias.errors import ParameterError
from tanbias.stats import SlopeFit, loglog_slope

__all__ = [
    "OUTLIER_THRESHOLD", "RADIUS_READINGS", "layer_spread", "type_statistics", "matched_statistics", "unbiased_radius",
    "spearman_ci", "premise_bootstrap", "anisotropy", "normal_share", "type_normal_shares",
    "normal_share_scaling",
]

#: the three readings of "distance to the centroid" (chapter 9): (a) the concentration radius
#: t, (b) the centroid's distance to the layer mean, (c) self-similarity
RADIUS_READINGS = ("radius_t", "centroid_distance", "self_similarity")

#: Default rogue-dimension threshold: share of the mean cosine one dimension must exceed.
OUTLIER_THRESHOLD = 0.05

_CHUNK = 4096          # rows per chunk in the O(n D) passes
_BOOT_CHUNK = 256      # resamples per chunk in the bootstrap


# ----------------------------------------------------------------------------- checks
def _check_X(X, name: str = "X", min_rows: int = 2) -> np.ndarray:
    X = check_rows(name, X, hint="Pass the activations of one layer, one row per token.")
    if X.shape[0] < min_rows:
        raise ParameterError(
            f"{name} has {X.shape[0]} rows: valid range is [{min_rows}, inf) rows. "
            f"Pass more tokens.")
    return X


def _check_type_ids(type_ids, n: int) -> np.ndarray:
    a = np.asarray(to_numpy(type_ids))
    if a.ndim != 1 or a.shape[0] != n:
        raise ParameterError(
            f"type_ids has shape {tuple(a.shape)} but expected shape ({n},): valid range is one "
            f"integer id per row of X. Pass the token-type id of each row.")
    if a.dtype.kind in "iu":
        return a.astype(np.int64, copy=False)
    if a.dtype.kind == "f" and np.all(np.isfinite(a)) and np.all(a == np.round(a)):
        return a.astype(np.int64)
    bad = a if a.dtype.kind not in "f" else a[~(np.isfinite(a) & (a == np.round(a)))]
    raise ParameterError(
        f"type_ids has dtype {a.dtype} (e.g. {bad.ravel()[:1].tolist()}): valid range is "
        f"integer token ids. Pass an integer array, one id per row of X.")


def _check_k(k, D: int, name: str = "k") -> int:
    return check_int(name, k, lo=1, hi=D - 1,
                     hint=f"{name} is the number of principal (tangent) directions kept; they "
                          f"must span a proper subspace of R^{D}: 1 <= {name} <= D-1.")


def _check_spread(spread, X: np.ndarray) -> float:
    if spread is None:
        s = _spread(X, X.mean(axis=0))
        if s == 0.0:
            raise ParameterError(
                "X has spread=0.0 (all rows equal): valid range is (0, inf). Radii are measured "
                "in units of the layer's spread; pass a layer whose rows differ.")
        return s
    return check_real("spread", spread, lo=0,
                      hint="Pass the layer's spread, tanbias.theory.token_clouds.layer_spread(X), "
                           "or None to compute it.")


# ----------------------------------------------------------------------------- helpers
def _row_sq_dist(X, M, rows=None, groups=None) -> np.ndarray:
    """``||X[rows[i]] - M[groups[i]]||^2`` in chunks (no (n, D) temporary)."""
    rows = np.arange(X.shape[0]) if rows is None else rows
    out = np.empty(len(rows))
    for s in range(0, len(rows), _CHUNK):
        r = rows[s:s + _CHUNK]
        diff = X[r] - (M[0] if groups is None else M[groups[s:s + _CHUNK]])
        out[s:s + _CHUNK] = np.einsum("ij,ij->i", diff, diff)
    return out


def _spread(X, mean) -> float:
    return float(np.sqrt(np.mean(_row_sq_dist(X, mean[None, :]))))


def _group_sums(X, rows, groups, m, weights=None) -> np.ndarray:
    """``sum_{i: groups[i] = g} w_i X[rows[i]]`` for g < m, as a sparse product (m, D)."""
    w = np.ones(len(rows)) if weights is None else weights
    S = _sparse.csr_matrix((w, (groups, rows)), shape=(m, X.shape[0]))
    return np.asarray(S @ X)


def _centred_cov(X, mean) -> np.ndarray:
    """Scatter matrix ``sum_i (x_i - mean)(x_i - mean)^T`` (D, D), in chunks of rows."""
    C = np.zeros((X.shape[1], X.shape[1]))
    for s in range(0, X.shape[0], _CHUNK):
        Y = X[s:s + _CHUNK] - mean
        C += Y.T @ Y
    return C


def _tail_share(Y, k: int) -> float:
    """Share of the variance of the centred rows ``Y`` outside their top-``k`` directions."""
    G = Y @ Y.T if Y.shape[0] <= Y.shape[1] else Y.T @ Y
    lam = np.clip(np.linalg.eigvalsh(G), 0.0, None)        # ascending
    total = float(np.einsum("ij,ij->", Y, Y))
    if total == 0.0:
        return float("nan")
    return float(min(lam[:max(len(lam) - k, 0)].sum() / total, 1.0))


# ----------------------------------------------------------------------------- spread, types
def layer_spread(X) -> float:
    """The layer's spread: RMS distance of the rows of ``X`` to their mean.

    ``s = sqrt(mean_i ||x_i - xbar||^2)`` (the square root of the total variance,
    ``ddof = 0``); radii divided by ``s`` are scale-free.

    Parameters
    ----------
    X : array (n, D)
        Activations, one row per token, ``n >= 2``.

    Returns
    -------
    float

    Raises
    ------
    ParameterError
        Wrong shape, fewer than 2 rows, non-finite entries.

    Example
    -------
    >>> layer_spread(np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [2.0, 2.0]]))
    1.4142135623730951
    """
    X = _check_X(X)
    return _spread(X, X.mean(axis=0))


def unbiased_radius(t, count) -> np.ndarray:
    """The RMS radius of ``count`` occurrences with its count bias removed: ``t·sqrt(c/(c−1))``.

    The mean squared distance of ``c`` points to *their own* centroid is, in
    expectation, ``(c−1)/c`` times the squared radius of the cloud they come from, so
    a rarely seen type looks tighter than it is. Multiplying ``t²`` by ``c/(c−1)``
    makes each type's squared radius unbiased whatever its count (its square root
    keeps a small bias of its own, the same for every count up to ``O(1/c)``). Where
    the occurrences are still at hand, :func:`matched_statistics` (every type on the
    same number of points) removes the dependence entirely; this is the correction
    for radii stored with their counts only.

    Example
    -------
    >>> rng = np.random.default_rng(0)
    >>> plain = [np.sqrt(((x - x.mean(0)) ** 2).sum(1).mean()) for x in rng.normal(size=(4000, 3, 2))]
    >>> round(float(np.mean(np.square(plain))), 2), round(float(np.mean(unbiased_radius(plain, 3) ** 2)), 2)  # true: 2
    (1.32, 1.98)
    """
    t = np.asarray(t, np.float64)
    c = np.asarray(count, np.float64)
    if np.any(c < 2):
        raise ParameterError(f"count has values below 2 (min {float(c.min()):g}): valid range is [2, inf): "
                             "a type seen once has no radius.")
    return t * np.sqrt(c / (c - 1.0))


def type_statistics(X, type_ids, min_count: int = 8, spread=None) -> dict:
    """Per token type: count, concentration radius, centroid distance, self-similarity.

    Over the ``m`` token types with at least ``min_count`` occurrences, sorted by
    type id, with ``s`` the layer's spread (:func:`layer_spread`, over all ``n``
    rows) and ``xbar`` the mean of all ``n`` rows:

    * ``radius_t = sqrt(mean_{i in type} ||x_i - mu_type||^2) / s``;
    * ``centroid_distance = ||mu_type - xbar|| / s``;
    * ``self_similarity``: mean cosine of the ``c (c - 1)`` ordered pairs of distinct
      occurrences (Ethayarajh 2019), ``(||sum_i u_i||^2 - c) / (c (c - 1))`` with
      ``u_i = x_i / ||x_i||`` (raw, uncentred rows); NaN for a type with a zero row.

    Vectorised: group sums are one sparse-times-dense product, squared distances
    are computed in chunks of rows (two passes, no cancellation).

    Parameters
    ----------
    X : array (n, D)
        Activations of one layer.
    type_ids : array of int (n,)
        Token-type id of each row.
    min_count : int >= 2
        Types with fewer occurrences are skipped.
    spread : float > 0, optional
        Unit of the radii; default ``layer_spread(X)``.

    Returns
    -------
    dict of ndarray (m,)
        ``type``, ``count`` (int64), ``radius_t``, ``centroid_distance``,
        ``self_similarity`` (float64).

    Raises
    ------
    ParameterError
        Bad shapes, non-finite values, ``type_ids`` not integers or of another length,
        ``min_count < 2``, no type with ``min_count`` occurrences, zero spread.

    Example
    -------
    >>> X = np.array([[1.0, 0], [3, 0], [0, 1], [0, 1], [0, 1]])
    >>> st = type_statistics(X, [7, 7, 9, 9, 9], min_count=2, spread=1.0)
    >>> st["type"].tolist(), st["count"].tolist(), st["radius_t"].tolist()
    ([7, 9], [2, 3], [1.0, 0.0])
    >>> st["self_similarity"].tolist()
    [1.0, 1.0]
    """
    X = _check_X(X)
    n = X.shape[0]
    ids = _check_type_ids(type_ids, n)
    min_count = check_int("min_count", min_count, lo=2,
                          hint="A radius needs at least 2 occurrences; the default is 8.")
    gm = X.mean(axis=0)
    s = _check_spread(spread, X)
    uniq, inv, counts = np.unique(ids, return_inverse=True, return_counts=True)
    keep = counts >= min_count
    if not np.any(keep):
        raise ParameterError(
            f"min_count={min_count} is out of range: no token type occurs that often (the most "
            f"frequent occurs {int(counts.max())} times): valid range is [2, {int(counts.max())}]. "
            f"Lower min_count or pass more tokens.")
    new = np.cumsum(keep) - 1                     # kept type index of each unique id
    rows = np.flatnonzero(keep[inv])
    groups = new[inv[rows]]
    m, c = int(keep.sum()), counts[keep].astype(np.int64)

    mu = _group_sums(X, rows, groups, m) / c[:, None]
    sq = np.bincount(groups, weights=_row_sq_dist(X, mu, rows, groups), minlength=m)
    radius = np.sqrt(sq / c) / s
    dist = np.linalg.norm(mu - gm, axis=1) / s

    norms = np.concatenate([np.linalg.norm(X[rows[i:i + _CHUNK]], axis=1)
                            for i in range(0, len(rows), _CHUNK)])
    zero = norms == 0
    w = np.where(zero, 0.0, 1.0 / np.where(zero, 1.0, norms))
    usum = _group_sums(X, rows, groups, m, weights=w)
    self_sim = (np.einsum("ij,ij->i", usum, usum) - c) / (c * (c - 1.0))
    self_sim[np.bincount(groups, weights=zero, minlength=m) > 0] = np.nan
    return {"type": uniq[keep].astype(np.int64), "count": c, "radius_t": radius,
            "centroid_distance": dist, "self_similarity": self_sim}


# ----------------------------------------------------------------------------- count-matched
def _matched_draw(ids, weights, m: int, rng):
    """One draw of ``m`` distinct occurrences of every type that has at least ``m``: ``(types, idx (K, m))``.

    ``weights[i]`` is how many times row ``i`` is in the sample (a bootstrap's multiplicity;
    1 for the text itself). A row is drawn at most once: a resampled document counted twice
    would otherwise give a rare type the same point twice, shrinking its radius and
    widening its centroid's error, a count effect of its own.
    """
    rows = np.flatnonzero(weights)
    tids = ids[rows]
    order = np.lexsort((rng.random(len(rows)), tids))     # by type, in random order within a type
    rows, tids = rows[order], tids[order]
    uniq, start, counts = np.unique(tids, return_index=True, return_counts=True)
    keep = counts >= m
    idx = rows[start[keep, None] + np.arange(m)[None, :]]
    return uniq[keep], idx


def _prepared(X) -> tuple:
    """What every draw of :func:`_subset_readings` reads of a layer, computed once: the rows
    (float32 is kept), their squared norms and norms (float64) and unit rows (float32)."""
    sq = np.einsum("ij,ij->i", X, X, dtype=np.float64)
    norms = np.sqrt(sq)
    U = (X / np.where(norms == 0, 1.0, norms)[:, None]).astype(np.float32)
    return X, sq, norms, U


def _subset_readings(rows, idx, gm, s) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The three readings of the types whose occurrences are the rows ``idx`` (K, m) of a layer.

    ``rows`` is :func:`_prepared` of the layer. The radius uses
    ``mean ||x||² − ||mean x||²`` (sums in float64), the self-similarity the sum of the
    unit rows: no (K, m, D) float64 copy is made.
    """
    X, sq, norms, U = rows
    m = idx.shape[1]
    mu = X[idx].mean(axis=1, dtype=np.float64)
    r2 = sq[idx].mean(axis=1) - np.einsum("kd,kd->k", mu, mu)
    radius = np.sqrt(np.maximum(r2, 0.0)) / s
    dist = np.linalg.norm(mu - gm, axis=1) / s
    usum = U[idx].sum(axis=1, dtype=np.float64)
    self_sim = (np.einsum("kd,kd->k", usum, usum) - m) / (m * (m - 1.0))
    self_sim[np.any(norms[idx] == 0, axis=1)] = np.nan
    return radius, dist, self_sim


def matched_statistics(X, type_ids, m: int = 8, draws: int = 20, spread=None, rng=0) -> dict:
    """Per token type: the three readings computed on ``m`` occurrences, averaged over draws.

    Every type with at least ``m`` occurrences contributes ``m`` of them, drawn
    without replacement, ``draws`` times; each reading (:func:`type_statistics`'
    definitions: radius ``t``, centroid distance, self-similarity, with the layer's
    mean and spread over all ``n`` rows) is the mean over the draws. A type seen 10
    times and one seen 1,000 times are measured on the same number of points, so
    the readings carry the same count bias and a correlation with frequency is no
    longer the count's.

    Parameters
    ----------
    X : array (n, D)
    type_ids : array of int (n,)
    m : int >= 2
        Occurrences per type (and the minimum count of a type kept).
    draws : int >= 1
    spread : float > 0, optional
        Unit of the radii; default ``layer_spread(X)``.
    rng : numpy.random.Generator or int seed

    Returns
    -------
    dict of ndarray
        ``type``, ``count`` (occurrences in ``X``), ``radius_t``, ``centroid_distance``,
        ``self_similarity``.

    Raises
    ------
    ParameterError
        Bad shapes or values, ``m < 2``, no type with ``m`` occurrences.

    Example
    -------
    Fifty rare types (5 occurrences each) and fifty frequent ones (200 each), all
    drawn from the same cloud: the plain radius of the rare ones is shrunk by about
    ``sqrt(4/5)``, the matched one is not.

    >>> rng = np.random.default_rng(0)
    >>> ids = np.concatenate([np.repeat(np.arange(50), 5), np.repeat(np.arange(50, 100), 200)])
    >>> X = rng.normal(size=(len(ids), 3))
    >>> plain = type_statistics(X, ids, min_count=5, spread=1.0)["radius_t"]
    >>> matched = matched_statistics(X, ids, m=5, draws=50, spread=1.0, rng=1)["radius_t"]
    >>> round(float(plain[:50].mean() / plain[50:].mean()), 2), round(float(matched[:50].mean() / matched[50:].mean()), 2)
    (0.91, 1.03)
    """
    X = _check_X(X)
    ids = _check_type_ids(type_ids, X.shape[0])
    m = check_int("m", m, lo=2, hint="Pass the number of occurrences drawn per type, e.g. 8.")
    draws = check_int("draws", draws, lo=1)
    rng = check_rng(rng)
    s = _check_spread(spread, X)
    gm = X.mean(axis=0)
    uniq, counts = np.unique(ids, return_counts=True)
    if counts.max() < m:
        raise ParameterError(f"m={m} is out of range: no token type occurs that often (the most frequent "
                             f"occurs {int(counts.max())} times): valid range is [2, {int(counts.max())}]. "
                             "Lower m or pass more tokens.")
    ones = np.ones(len(ids), np.int64)
    rows = _prepared(X)
    acc = None
    for _ in range(draws):
        types, idx = _matched_draw(ids, ones, m, rng)
        r = np.stack(_subset_readings(rows, idx, gm, s))
        acc = r if acc is None else acc + r
    acc /= draws
    count = counts[np.searchsorted(uniq, types)]
    return {"type": types.astype(np.int64), "count": count.astype(np.int64), "radius_t": acc[0],
            "centroid_distance": acc[1], "self_similarity": acc[2]}


# ----------------------------------------------------------------------------- correlation
def _avg_ranks(codes, idx, n_values) -> np.ndarray:
    """Average (tie-aware) ranks, 1-based, of ``codes[idx]`` within each row of ``idx``.

    ``codes`` are the dense ranks 0..n_values-1 of the original values; a counting
    pass per resample replaces a sort (same result as ``scipy.stats.rankdata``).
    """
    B = idx.shape[0]
    v = codes[idx]                                          # (B, n)
    cnt = np.bincount((v + n_values * np.arange(B)[:, None]).ravel(),
                      minlength=B * n_values).reshape(B, n_values)
    avg = np.cumsum(cnt, axis=1) - (cnt - 1) / 2.0           # average rank of each value
    return np.take_along_axis(avg, v, axis=1)


def spearman_ci(x, y, n_boot: int = 1000, confidence: float = 0.95, rng=0) -> dict:
    """Spearman correlation with a percentile bootstrap interval over items.

    ``rho`` is ``scipy.stats.spearmanr(x, y)``; the interval is the
    ``(1 - confidence)/2`` and ``(1 + confidence)/2`` percentiles of ``rho`` over
    ``n_boot`` resamples of the ``n`` pairs ``(x_i, y_i)`` with replacement (indices
    ``rng.integers(0, n, size=(b, n))`` in blocks of resamples). Ranks per resample
    are computed by counting (ties get average ranks, as in ``spearmanr``), so
    ``n = 3000`` and ``n_boot = 1000`` take a fraction of a second. A resample in
    which ``x`` or ``y`` is constant is left out of the percentiles. When ``x`` or
    ``y`` itself is constant, ``rho``, ``lo`` and ``hi`` are NaN (e.g. the radii of
    a context-free embedding layer, all zero).

    Parameters
    ----------
    x, y : array (n,)
        Paired values, finite, ``n >= 3`` (e.g. log counts and radii of token types).
    n_boot : int >= 1
    confidence : float in (0, 1)
    rng : numpy.random.Generator or int seed

    Returns
    -------
    dict
        ``rho``, ``lo``, ``hi`` (float), ``n`` (int).

    Raises
    ------
    ParameterError
        Different lengths, fewer than 3 pairs (too few types left to correlate),
        non-finite values, bad ``n_boot``, ``confidence`` or ``rng``.

    Example
    -------
    >>> x = np.arange(50.0)
    >>> res = spearman_ci(x, x**3 + np.sin(x) * 1e3, n_boot=200, rng=0)
    >>> round(res["rho"], 3), res["lo"] <= res["rho"] <= res["hi"], res["n"]
    (0.99, True, 50)
    """
    x = check_array("x", to_numpy(x), shape=(None,), hint="Pass a 1-D array of values.")
    y = check_array("y", to_numpy(y), shape=(x.shape[0],),
                    hint=f"x and y must have the same length ({x.shape[0]}): one pair per item.")
    n = x.shape[0]
    if n < 3:
        raise ParameterError(
            f"x has {n} items: valid range is [3, inf) items to correlate. Too few token types "
            f"are left: lower min_count or pass more tokens.")
    n_boot = check_int("n_boot", n_boot, lo=1, hint="Pass a number of resamples such as 1000.")
    confidence = check_real("confidence", confidence, 0, 1,
                            hint="Pass a confidence level such as 0.95.")
    rng = check_rng(rng)
    nan = float("nan")
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return {"rho": nan, "lo": nan, "hi": nan, "n": int(n)}
    rho = float(_st.spearmanr(x, y).statistic)
    ux, cx = np.unique(x, return_inverse=True)
    uy, cy = np.unique(y, return_inverse=True)
    boot = np.empty(n_boot)
    for s in range(0, n_boot, _BOOT_CHUNK):
        b = min(_BOOT_CHUNK, n_boot - s)
        idx = rng.integers(0, n, size=(b, n))
        rx = _avg_ranks(cx, idx, len(ux))
        ry = _avg_ranks(cy, idx, len(uy))
        rx -= rx.mean(axis=1, keepdims=True)
        ry -= ry.mean(axis=1, keepdims=True)
        den = np.sqrt(np.einsum("ij,ij->i", rx, rx) * np.einsum("ij,ij->i", ry, ry))
        num = np.einsum("ij,ij->i", rx, ry)
        with np.errstate(invalid="ignore", divide="ignore"):
            boot[s:s + b] = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    ok = boot[np.isfinite(boot)]
    if ok.size == 0:
        return {"rho": rho, "lo": nan, "hi": nan, "n": int(n)}
    lo, hi = np.percentile(ok, [50 * (1 - confidence), 50 * (1 + confidence)])
    return {"rho": rho, "lo": float(lo), "hi": float(hi), "n": int(n)}


def _spearman(x, y) -> float:
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 3 or np.ptp(x[ok]) == 0 or np.ptp(y[ok]) == 0:
        return float("nan")
    return float(_st.spearmanr(x[ok], y[ok]).statistic)


def _ranks(a) -> np.ndarray:
    """Average (tie-aware) ranks, 1-based, along the last axis of a finite array (1-D or 2-D): the
    values of ``scipy.stats.rankdata(a, axis=-1)``, exactly (a tie group's rank is the mean of its
    sorted positions, an integer or a half), without its per-call checks. The rows of a 2-D array
    are ranked together: one sort, no loop over rows.

    Example
    -------
    >>> _ranks([3.0, 1.0, 3.0, 2.0]).tolist()
    [3.5, 1.0, 3.5, 2.0]
    >>> _ranks([[2.0, 2.0, 1.0], [0.0, 5.0, 5.0]]).tolist()
    [[2.5, 2.5, 1.0], [1.0, 2.5, 2.5]]
    """
    a = np.asarray(a, np.float64)
    one = a.ndim == 1
    a = np.atleast_2d(a)
    R, n = a.shape
    out = np.empty((R, n))
    if R == 0 or n == 0:
        return out[0] if one else out
    order = np.argsort(a, axis=1, kind="stable")
    v = np.take_along_axis(a, order, axis=1)
    new = np.empty((R, n), bool)
    new[:, 0] = True
    np.not_equal(v[:, 1:], v[:, :-1], out=new[:, 1:])
    if new.all():
        ranks = np.broadcast_to(np.arange(1.0, n + 1.0), (R, n))
    else:
        pos = np.arange(n)
        start = np.maximum.accumulate(np.where(new, pos, 0), axis=1)        # where each group starts
        last = np.empty((R, n), bool)                                         # a group's last position
        last[:, -1] = True
        last[:, :-1] = new[:, 1:]
        stop = np.minimum.accumulate(np.where(last, pos + 1, n)[:, ::-1], axis=1)[:, ::-1]  # ... ends (excl.)
        ranks = 0.5 * (start + stop + 1)
    np.put_along_axis(out, order, ranks, axis=1)
    return out[0] if one else out


def _spearman_rows(x, Y) -> list:
    """``[_spearman(x, y) for y in Y]``, ranking ``x`` once.

    Spearman's ρ is Pearson's r of the average ranks (``scipy.stats.rankdata``'s, :func:`_ranks`),
    which is what ``scipy.stats.spearmanr`` computes; their per-call checks cost more than the
    ranks themselves here, where the bootstrap asks for ρ tens of thousands of times. Positions
    where ``x`` is missing (a type without a frequency: never counted, or not a whole word)
    are left out of every row at once; a row missing values of its own is read on its own.
    """
    x = np.asarray(x, np.float64)
    Y = [np.asarray(y, np.float64) for y in Y]
    ok = np.isfinite(x)
    if not ok.all() and all(np.isfinite(y[ok]).all() for y in Y):
        x, Y = x[ok], [y[ok] for y in Y]
    if len(x) < 3 or not np.isfinite(x).all() or not all(np.isfinite(y).all() for y in Y) \
            or np.ptp(x) == 0:
        return [_spearman(x, y) for y in Y]
    rx = _ranks(x)
    rx -= rx.mean()
    ry = _ranks(np.stack(Y))
    ry -= ry.mean(axis=1, keepdims=True)
    den = np.sqrt((rx @ rx) * np.einsum("ij,ij->i", ry, ry))
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.where(den > 0, (ry @ rx) / np.where(den > 0, den, 1.0), np.nan)
    return [float(r) for r in rho]


def _spearman_layers(x, R) -> np.ndarray:
    """:func:`_spearman_rows` of ``x`` with each layer's readings, all layers at once: ``R`` is
    (L, r, K), the ``r`` readings of each of ``L`` layers over the same ``K`` types (a layer of NaN:
    not read, NaN out). Returns (L, r), the values :func:`_spearman_rows` gives layer by layer.

    ``x`` is ranked once, and the layers whose readings are finite wherever ``x`` is are ranked
    in one sort; a layer with a missing reading of its own is read as :func:`_spearman_rows`
    reads it, alone.
    """
    x = np.asarray(x, np.float64)
    R = np.asarray(R, np.float64)
    L, r, _ = R.shape
    out = np.full((L, r), np.nan)
    ok = np.isfinite(x)
    read = ~np.isnan(R).all(axis=(1, 2))
    fast = read & np.isfinite(R[:, :, ok]).all(axis=(1, 2))
    xs = x[ok]
    if len(xs) < 3 or np.ptp(xs) == 0:
        fast[:] = False
    if fast.any():
        rx = _ranks(xs)
        rx -= rx.mean()
        ry = _ranks(R[fast][:, :, ok].reshape(-1, len(xs)))
        ry -= ry.mean(axis=1, keepdims=True)
        den = np.sqrt((rx @ rx) * np.einsum("ij,ij->i", ry, ry))
        with np.errstate(invalid="ignore", divide="ignore"):
            rho = np.where(den > 0, (ry @ rx) / np.where(den > 0, den, 1.0), np.nan)
        out[fast] = rho.reshape(-1, r)
    for layer in np.flatnonzero(read & ~fast):
        out[layer] = _spearman_rows(x, list(R[layer]))
    return out


def premise_bootstrap(H, type_ids, doc_ids, frequency, m: int = 8, draws: int = 20, n_boot: int = 200,
                      confidence: float = 0.95, rng=0, progress: bool = False, point=None,
                      workers: int = 1) -> dict:
    """Spearman ρ of each count-matched reading with a frequency, per layer, with an interval over documents.

    The point estimate is ρ over the types of :func:`matched_statistics` (``draws``
    draws). Its uncertainty comes from ``n_boot`` resamples of the *documents* with
    replacement: in each, the layer's mean and spread (weighting a document by how often
    it was drawn), the types that reach ``m`` distinct occurrences and one draw of ``m``
    of them are recomputed from the resampled text, then ρ. The interval is
    ``ρ ± z·sd`` with ``sd`` the resamples' standard deviation (``z`` = 1.96 at 95 %),
    and the band over layers ``ρ ± c·sd`` with ``c`` the bootstrap max-t quantile
    (``_max_t``): it holds for every layer at once, and is the one to read a
    statement "at every layer" from (not a count of layers: the layers share their
    documents). Percentile intervals are not used: a row is drawn at most once (two
    copies of one occurrence would shrink a rare type's radius), so a resample holds
    about 63 % of the distinct documents, its types are those that reach ``m`` in that
    shorter text and its ρ is shifted (``shift``); and a band over 30 layers would need
    far more resamples than a percentile can use. With one draw per resample where the
    point estimate averages ``draws``, the interval errs on the wide side (on synthetic
    text with no dependence, a 95 % band over ten layers excludes 0 somewhere in about
    1 text in 20). The same resample serves every layer and every frequency source.

    Parameters
    ----------
    H : array (L, n, D)
        One layer after another, the same ``n`` token positions in each (float32 is fine).
    type_ids, doc_ids : array of int (n,)
        Each position's token type and document.
    frequency : array (vocab,) or dict of them
        The frequency measure of each type id (e.g. ``log`` of corpus counts; NaN: the
        type is not ranked). A dict ``{source: array}`` measures every source on the
        same draws and resamples; every type is drawn (and enters the layer's mean and
        spread), and each source correlates the types it ranks.
    m, draws : int
        As :func:`matched_statistics`.
    n_boot : int >= 1
    confidence : float in (0, 1)
    rng : numpy.random.Generator or int seed
    progress : bool
        A progress bar over the resamples.
    point : list of dict, optional
        The point estimate's readings, one :func:`matched_statistics` result per layer
        (computed on these rows with this ``m``), when the caller has them already: ρ is
        then computed from them, and no new draws are made for it.
    workers : int >= 1
        Threads that read the resamples side by side (the resamples are drawn first, in
        order, so the result does not depend on it; numpy's work lets go of the GIL).

    Returns
    -------
    dict
        ``rho``, ``lo``, ``hi``, ``sd``: arrays (L, 3), layers by :data:`RADIUS_READINGS` (``lo``,
        ``hi``: each layer's own interval); ``band_lo``, ``band_hi`` (L, 3): the band that
        covers every layer at once with probability ``confidence``;
        ``shift`` (L, 3): the resamples' mean minus ρ; ``n_types`` (L,) (types in the point
        estimate), ``n_docs`` (int), ``kept`` (the mean share of distinct documents in a
        resample). For a dict of sources, a dict of such results, one per source.

    Example
    -------
    >>> rng = np.random.default_rng(0)
    >>> ids = rng.integers(0, 30, size=3000)
    >>> docs = np.arange(3000) // 30
    >>> H = rng.normal(size=(1, 3000, 4)) * (1 + ids[None, :, None] / 30)  # radius grows with the id
    >>> res = premise_bootstrap(H, ids, docs, np.log1p(np.arange(30.0)), m=8, draws=5, n_boot=50)
    >>> bool(res["rho"][0, 0] > 0.8 and res["lo"][0, 0] > 0.5)
    True
    """
    H = np.asarray(H)
    if H.ndim != 3:
        raise ParameterError(f"H has shape {H.shape}: valid range is (L, n, D). Pass the layers stacked.")
    L, n, _ = H.shape
    ids = _check_type_ids(type_ids, n)
    docs = _check_type_ids(doc_ids, n)
    single = not isinstance(frequency, dict)
    sources = {"": frequency} if single else dict(frequency)
    if not sources:
        raise ParameterError("frequency={} is empty: valid range is one array or a dict of arrays.")
    freqs = {}
    for name, f in sources.items():
        f = np.asarray(f, np.float64)
        if f.ndim != 1 or f.shape[0] <= ids.max():
            label = "frequency" if single else f"frequency[{name!r}]"
            raise ParameterError(f"{label} has shape {f.shape}: valid range is (vocab,) with vocab > "
                                 f"{int(ids.max())}, one value per type id.")
        freqs[name] = f
    m = check_int("m", m, lo=2)
    n_boot = check_int("n_boot", n_boot, lo=1)
    confidence = check_real("confidence", confidence, 0, 1)
    rng = check_rng(rng)
    workers = check_int("workers", workers, lo=1, hint="Pass a number of threads, e.g. 2.")
    if point is not None and len(point) != L:
        raise ParameterError(f"point has {len(point)} layers: valid range is one per layer of H ({L}).")
    # every type is drawn and enters the layer's mean and spread; a source ranks the types it
    # has a finite value for (_spearman leaves the others out)
    S = len(freqs)
    rho = np.full((S, L, 3), np.nan)
    n_types = np.zeros((S, L), np.int64)
    for layer in range(L):
        if point is None:
            X = H[layer]
            if layer_spread(X) == 0:
                continue
            st = matched_statistics(X, ids, m=m, draws=draws, rng=rng)
        else:
            st = point[layer]
        for k, f in enumerate(freqs.values()):
            n_types[k, layer] = int((np.isfinite(f[st["type"]]) & np.isfinite(st["radius_t"])).sum())
            rho[k, layer] = _spearman_rows(f[st["type"]], [st[r] for r in RADIUS_READINGS])
    udocs, doc_of = np.unique(docs, return_inverse=True)
    nd = len(udocs)
    # per-document sums of each layer's rows and squared norms: a resample's mean and
    # spread are weighted sums of these (no pass over the n rows per resample)
    doc_sum = np.zeros((L, nd, H.shape[2]))
    doc_sq = np.zeros((L, nd))
    prepared = [_prepared(H[layer]) for layer in range(L)]
    by_doc = np.argsort(doc_of, kind="stable")
    starts = np.searchsorted(doc_of[by_doc], np.arange(nd))
    for layer in range(L):
        X = H[layer][by_doc].astype(np.float64)
        doc_sum[layer] = np.add.reduceat(X, starts, axis=0)
        doc_sq[layer] = np.add.reduceat(np.einsum("ij,ij->i", X, X), starts)
    doc_n = np.bincount(doc_of, minlength=nd).astype(np.float64)
    boot = np.full((S, n_boot, L, 3), np.nan)
    kept = np.full(n_boot, np.nan)
    resamples = []                       # drawn in order first: the threads below consume no rng
    for b in range(n_boot):
        dw = np.bincount(rng.integers(0, nd, nd), minlength=nd).astype(np.float64)
        kept[b] = np.mean(dw > 0)
        resamples.append((dw, *_matched_draw(ids, dw[doc_of], m, rng)))
    def read(b):
        dw, types, idx = resamples[b]
        if len(types) >= 3:
            W = dw @ doc_n
            readings = np.full((L, 3, len(types)), np.nan)       # a layer without spread stays NaN
            for layer in range(L):
                gm = (dw @ doc_sum[layer]) / W
                var = (dw @ doc_sq[layer]) / W - gm @ gm
                if var > 0:
                    readings[layer] = _subset_readings(prepared[layer], idx, gm, np.sqrt(var))
            for k, f in enumerate(freqs.values()):
                boot[k, b] = _spearman_layers(f[types], readings)

    thread_map(read, n_boot, workers, progress=progress and "document bootstrap", unit="resample")
    out = {}
    f_kept = float(np.nanmean(kept))      # reported: how much shorter a resample's text is
    z = _normal_quantile(confidence)
    for k, name in enumerate(freqs):
        with np.errstate(all="ignore"):
            sd = np.nanstd(boot[k], axis=0, ddof=1)
            c = _max_t(boot[k], sd, confidence)
        half_band = np.maximum(c, z)[None] * sd
        out[name] = {"rho": rho[k], "lo": rho[k] - z * sd, "hi": rho[k] + z * sd,
                     "band_lo": rho[k] - half_band, "band_hi": rho[k] + half_band,
                     "sd": sd, "shift": np.nanmean(boot[k], axis=0) - rho[k], "n_types": n_types[k],
                     "n_docs": int(nd), "kept": f_kept}
    return out[""] if single else out


def _normal_quantile(confidence: float) -> float:
    return float(_st.norm.ppf(0.5 + confidence / 2))


def _max_t(boot, sd, confidence: float) -> np.ndarray:
    """Per reading: the ``confidence`` quantile over resamples of ``max_layer |ρ* − mean ρ*| / sd``.

    ``rho ± c·sd`` then covers every layer at once (the bootstrap max-t band): the
    deviations are the resamples' from their own mean, so a shift of the resamples
    (their texts are shorter) does not move the band. Layers without variation (the
    embeddings' radii: sd 0 or NaN) do not enter the maximum.
    """
    with np.errstate(all="ignore"):
        dev = np.abs(boot - np.nanmean(boot, axis=0)[None]) / np.where(sd > 0, sd, np.nan)[None]
        dev = np.where(np.isfinite(dev), dev, -np.inf).max(axis=1)          # (B, R)
        dev = np.where(np.isfinite(dev), dev, np.nan)
        return np.array([np.nanquantile(d, confidence) if np.isfinite(d).any() else np.nan for d in dev.T])


# ----------------------------------------------------------------------------- anisotropy
def anisotropy(X, n_pairs: int = 20000, top_k: int = 10, zeta: float = DEFAULT_ZETA, rng=0,
               outlier_threshold: float = OUTLIER_THRESHOLD) -> dict:
    """Anisotropy of a layer's cloud: mean cosine, IsoScore*, top-PC shares, rogue dimensions.

    * ``mean_cosine``: mean cosine similarity of ``n_pairs`` random pairs of distinct
      rows ``(i, j)``, ``i`` uniform and ``j = (i + U{1..n-1}) mod n``, on the raw
      (uncentred) activations, as in Ethayarajh (2019).
    * ``contributions`` (D,): dimension ``i``'s part of that mean,
      ``mean x_i y_i / (||x|| ||y||)`` over the same pairs; they sum to ``mean_cosine``
      (Timkey & van Schijndel 2021).
    * ``outlier_dims``: the "rogue" dimensions whose contribution exceeds
      ``outlier_threshold * mean_cosine`` (default 5 %; an isotropic layer spreads
      the mean over ``D`` dimensions, ``1/D`` each), sorted by decreasing
      contribution; ``outlier_share`` is their summed contribution over
      ``mean_cosine``. When ``mean_cosine <= 0`` there are none and the share is NaN.
    * ``isoscore_star``: :func:`tanbias.theory.alignment.isoscore_star` of the rows
      (computed from the same covariance matrix).
    * ``top1_share``, ``topk_share``: share of the total variance of the centred cloud
      in its top 1 and top ``top_k`` principal directions.

    Parameters
    ----------
    X : array (n, D)
        Activations of one layer, ``n >= 2``, ``D >= 2``, no zero row.
    n_pairs : int >= 1
    top_k : int in [1, D - 1]
    zeta : float in [0, 1)
        IsoScore* shrinkage weight.
    rng : numpy.random.Generator or int seed
    outlier_threshold : float in (0, 1]

    Returns
    -------
    dict
        ``mean_cosine``, ``isoscore_star``, ``top1_share``, ``topk_share``,
        ``outlier_share`` (float), ``outlier_dims`` (list of int), ``contributions``
        (ndarray (D,)), ``top_k``, ``n_pairs`` (int), ``outlier_threshold`` (float), ``spectrum``
        (ndarray (D,): the scatter matrix's eigenvalues, clipped at 0, largest first: a reading
        of the covariance's shape, :class:`tanbias.theory.anisotropy.Cloud`, need not compute
        them again).

    Raises
    ------
    ParameterError
        Bad shapes or values, a zero row (its cosine is undefined), bad ``n_pairs``,
        ``top_k``, ``zeta``, ``rng`` or ``outlier_threshold``.

    Example
    -------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(4000, 16))
    >>> X[:, 3] += 20.0                                   # one rogue dimension
    >>> a = anisotropy(X, top_k=2, rng=0)
    >>> a["outlier_dims"], round(a["mean_cosine"], 2), a["mean_cosine"] > 0.9
    ([3], 0.96, True)
    """
    X = _check_X(X)
    n, D = X.shape
    if D < 2:
        raise ParameterError(f"X has D={D} columns: valid range is [2, inf). Pass activations "
                             f"with at least two dimensions.")
    n_pairs = check_int("n_pairs", n_pairs, lo=1, hint="Pass a number of pairs such as 20000.")
    top_k = _check_k(top_k, D, "top_k")
    zeta = check_real("zeta", zeta, 0, 1, lo_open=False, hi_open=True,
                      hint="zeta is the shrinkage weight; 0 gives plain IsoScore.")
    outlier_threshold = check_real(
        "outlier_threshold", outlier_threshold, 0, 1, hi_open=False,
        hint="Pass the share of the mean cosine that makes a dimension an outlier, e.g. 0.05.")
    rng = check_rng(rng)
    norms = np.concatenate([np.linalg.norm(X[s:s + _CHUNK], axis=1)
                            for s in range(0, n, _CHUNK)])
    if np.any(norms == 0):
        i = int(np.argmax(norms == 0))
        raise ParameterError(f"X[{i}] is a zero row: valid range is rows with a non-zero norm "
                             f"(a cosine needs a direction). Drop zero rows first.")
    contrib = pair_contributions(X, norms, n_pairs, rng, _CHUNK)
    mean_cos = float(contrib.sum())

    C = _centred_cov(X, X.mean(axis=0))
    raw = np.linalg.eigvalsh(C)
    lam = np.clip(raw, 0.0, None)[::-1]
    total = float(lam.sum())
    nan = float("nan")
    top1 = float(lam[0] / total) if total > 0 else nan
    topk = float(lam[:top_k].sum() / total) if total > 0 else nan
    iso = isoscore_star_spectrum(raw, zeta, trace=float(np.trace(C)))

    if mean_cos > 0:
        dims = np.flatnonzero(contrib > outlier_threshold * mean_cos)
        dims = dims[np.argsort(-contrib[dims], kind="stable")]
        share = float(contrib[dims].sum() / mean_cos)
    else:
        dims, share = np.array([], dtype=np.int64), nan
    return {"mean_cosine": mean_cos, "isoscore_star": iso, "top1_share": top1,
            "topk_share": topk, "top_k": top_k, "outlier_dims": [int(d) for d in dims],
            "outlier_share": share, "contributions": contrib, "n_pairs": n_pairs,
            "outlier_threshold": outlier_threshold, "spectrum": lam}


# ----------------------------------------------------------------------------- normal share
def normal_share(cloud, k: int) -> float:
    """Share of the variance of a centred cloud outside its top-``k`` principal directions.

    ``sum_{j > k} lambda_j / sum_j lambda_j`` for the eigenvalues ``lambda`` of the
    scatter matrix of ``cloud - mean``: a local estimate of the normal share. For
    points of a smooth ``d``-dimensional manifold within radius ``t`` and ``k = d``
    it is ``O(t^2)`` (normal parts ``O(t^2)``, tangent parts ``O(t)``); for a flat
    cloud it is 0; for isotropic noise in ``R^D`` about ``(D - k) / D``. NaN when all
    points coincide.

    Parameters
    ----------
    cloud : array (c, D)
        Points, ``c >= k + 2`` (with fewer the centred cloud has rank ``<= k`` and the
        share is trivially 0).
    k : int in [1, D - 1]
        Number of principal (tangent) directions.

    Returns
    -------
    float in [0, 1]

    Raises
    ------
    ParameterError
        Bad shape, non-finite values, ``k`` out of range, too few points.

    Example
    -------
    >>> t = np.linspace(-1.0, 1.0, 21)
    >>> normal_share(np.stack([t, 0 * t, 0 * t], axis=1), k=1)   # a segment: flat
    0.0
    >>> parabola = [normal_share(np.stack([a * t, (a * t)**2, 0 * t], axis=1), k=1)
    ...             for a in (0.1, 0.2)]      # half-width 0.1, then 0.2
    >>> round(parabola[0], 5), round(parabola[1] / parabola[0], 2)   # O(t^2): x4
    (0.0029, 3.97)
    """
    cloud = check_rows("cloud", cloud, hint="Pass the (c, D) points of one token type.")
    c, D = cloud.shape
    if D < 2:
        raise ParameterError(f"cloud has D={D} columns: valid range is [2, inf). Pass points "
                             f"in at least two dimensions.")
    k = _check_k(k, D)
    if c < k + 2:
        raise ParameterError(
            f"cloud has {c} rows: valid range is [k + 2, inf) = [{k + 2}, inf) rows for k={k}. "
            f"Pass more points or lower k.")
    return _tail_share(cloud - cloud.mean(axis=0), k)


def type_normal_shares(X, type_ids, k: int, min_count: int = 8, spread=None) -> dict:
    """Concentration radius and normal share (:func:`normal_share`) of each token type.

    Over the types with at least ``max(min_count, k + 2)`` occurrences, sorted by
    type id; ``radius_t`` is the same as in :func:`type_statistics` (RMS distance
    to the type's centroid over the layer's spread).

    Parameters
    ----------
    X : array (n, D)
    type_ids : array of int (n,)
    k : int in [1, D - 1]
        Number of principal directions taken as tangent.
    min_count : int >= 2
    spread : float > 0, optional
        Default ``layer_spread(X)``.

    Returns
    -------
    dict of ndarray (m,)
        ``type``, ``count``, ``radius_t``, ``normal_share``.

    Raises
    ------
    ParameterError
        As :func:`type_statistics`, and ``k`` out of range.

    Example
    -------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 3)) * [1.0, 1.0, 0.0]      # two types in a plane
    >>> res = type_normal_shares(X, np.repeat([4, 5], 30), k=2)
    >>> res["type"].tolist(), res["count"].tolist(), bool(res["normal_share"].max() < 1e-12)
    ([4, 5], [30, 30], True)
    """
    X = _check_X(X)
    n, D = X.shape
    ids = _check_type_ids(type_ids, n)
    if D < 2:
        raise ParameterError(f"X has D={D} columns: valid range is [2, inf). Pass activations "
                             f"with at least two dimensions.")
    k = _check_k(k, D)
    min_count = check_int("min_count", min_count, lo=2,
                          hint="A radius needs at least 2 occurrences; the default is 8.")
    s = _check_spread(spread, X)
    need = max(min_count, k + 2)
    order = np.argsort(ids, kind="stable")
    uniq, start, counts = np.unique(ids[order], return_index=True, return_counts=True)
    keep = np.flatnonzero(counts >= need)
    if keep.size == 0:
        raise ParameterError(
            f"min_count={min_count} is out of range: no token type occurs max(min_count, k + 2)"
            f"={need} times (the most frequent occurs {int(counts.max())} times): valid range is "
            f"types with at least k + 2 occurrences. Lower min_count or k, or pass more tokens.")
    radius = np.empty(keep.size)
    share = np.empty(keep.size)
    for out, g in enumerate(keep):
        Y = X[order[start[g]:start[g] + counts[g]]]
        Y = Y - Y.mean(axis=0)
        radius[out] = np.sqrt(np.einsum("ij,ij->", Y, Y) / len(Y)) / s
        share[out] = _tail_share(Y, k)
    return {"type": uniq[keep].astype(np.int64), "count": counts[keep].astype(np.int64),
            "radius_t": radius, "normal_share": share}


def normal_share_scaling(radius_t, share, confidence: float = 0.95) -> SlopeFit:
    """Log-log slope of the normal share against the radius ``t``.

    A curved manifold predicts slope 2 (share ``O(t^2)``); a flat cloud with
    isotropic noise of the cloud's own size gives slope 0 (a constant share).

    Parameters
    ----------
    radius_t, share : array (m,)
        Positive and finite (e.g. from :func:`type_normal_shares`), ``m >= 3``.
    confidence : float in (0, 1)

    Returns
    -------
    tanbias.stats.SlopeFit

    Raises
    ------
    ParameterError
        Different lengths, fewer than 3 values, zero, negative or non-finite values.

    Example
    -------
    >>> t = np.array([0.05, 0.1, 0.2, 0.4])
    >>> round(normal_share_scaling(t, 0.3 * t**2).slope, 6)
    2.0
    """
    t = check_array("radius_t", to_numpy(radius_t), shape=(None,),
                    hint="Pass the radii of the types, e.g. type_normal_shares(...)['radius_t'].")
    y = check_array("share", to_numpy(share), shape=(t.shape[0],),
                    hint=f"radius_t and share must have the same length ({t.shape[0]}).")
    if t.shape[0] < 3:
        raise ParameterError(
            f"radius_t has {t.shape[0]} values: valid range is [3, inf) values for a slope with "
            f"an interval. Too few token types are left: lower min_count or pass more tokens.")
    for name, arr in (("radius_t", t), ("share", y)):
        if np.any(arr <= 0):
            i = int(np.argmax(arr <= 0))
            raise ParameterError(
                f"{name}[{i}]={arr[i]!r} is out of range: valid range is (0, inf). A log-log fit "
                f"needs positive values; keep the types with radius_t > 0 and share > 0.")
    return loglog_slope(t, y, confidence)
