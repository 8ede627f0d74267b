"""Volume growth: how the number of points within radius r grows (chapter 1).

On a smooth ``d``-manifold sampled with a density that is roughly constant at
the scale ``r``, the count ``N(r)`` of sample points within distance ``r`` of a
point grows like ``r^d``, so the slope of ``log N`` against ``log r`` is ``d``
in every small-radius window. Robinson, Dey & Chiang (2025) turn this into a
test: where slopes in two windows differ in a way no manifold (or fiber
bundle) allows, the manifold hypothesis fails at that point. Here:

* :func:`volume_growth` counts points in balls (``scipy.spatial.cKDTree``);
* :func:`local_dimension_slopes` fits the slope in a small-radius and a
  large-radius window, with confidence intervals.

On a :class:`~tanbias.manifolds.StratifiedSet` (two planes crossing along a
line) the slope is 2 in both windows at the junction, but at a point of one
sheet at distance ``delta`` from the other it is 2 below ``delta`` and larger
above it: the second sheet enters the balls.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree
from scipy.stats import norm as _norm

from ._checks import check_array, check_int, check_real
from .errors import ParameterError
from .stats import SlopeFit, loglog_slope

__all__ = ["volume_growth", "LocalDimension", "local_dimension_slopes"]


def volume_growth(points, center, radii, tree=None) -> np.ndarray:
    """Number of ``points`` within distance ``r`` of ``center``, for each radius.

    Parameters
    ----------
    points : array_like, shape (n, D)
    center : array_like, shape (D,)
    radii : array_like, shape (m,), positive
    tree : scipy.spatial.cKDTree, optional
        A tree built on ``points`` (reuse it across centers).

    Returns
    -------
    ndarray of int, shape (m,)

    Raises
    ------
    ParameterError
        Bad shapes or non-positive radii.

    Example
    -------
    >>> pts = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
    >>> volume_growth(pts, [0.0, 0.0], [0.5, 1.5, 3.0]).tolist()
    [1, 2, 3]
    """
    points = check_array("points", points, shape=(None, None), hint="Pass an (n, D) array.")
    D = points.shape[1]
    center = check_array("center", center, shape=(D,), hint=f"Pass a point of R^{D}.")
    radii = check_array("radii", radii, shape=(None,))
    if radii.size == 0 or np.any(radii <= 0):
        bad = radii[radii <= 0][0] if radii.size else "[]"
        raise ParameterError(f"radii contains {bad}: valid range is (0, inf). Pass positive radii.")
    tree = cKDTree(points) if tree is None else tree
    centers = np.ascontiguousarray(np.broadcast_to(center, (radii.size, D)))
    return np.asarray(tree.query_ball_point(centers, radii, return_length=True), dtype=np.int64)


@dataclass(frozen=True)
class LocalDimension:
    """Volume-growth slopes at one point in two radius windows.

    Attributes
    ----------
    small, large : SlopeFit
        Fits of ``log N(r)`` against ``log r`` in each window.
    radii_small, radii_large : ndarray
    counts_small, counts_large : ndarray
    """

    small: SlopeFit
    large: SlopeFit
    radii_small: np.ndarray
    radii_large: np.ndarray
    counts_small: np.ndarray
    counts_large: np.ndarray

    @property
    def change(self) -> float:
        """``large.slope - small.slope`` (about 0 on a smooth manifold)."""
        return self.large.slope - self.small.slope


def _count_slope(radii, counts, confidence) -> SlopeFit:
    """OLS slope of log N on log r with a CI that respects nested counts.

    Counts in nested balls are cumulative, hence strongly correlated, so the
    textbook regression interval is far too narrow. Treat the sample as a
    Poisson process: ``Cov(N_i, N_j) = lambda_min(i, j)``, hence
    ``Cov(log N_i, log N_j) ~ 1 / N_max(i, j)``, and propagate it through the
    OLS weights (normal quantile). This is the sampling noise only, not misfit.
    """
    fit = loglog_slope(radii, counts, confidence)
    x = np.log(radii)
    wts = (x - x.mean()) / np.sum((x - x.mean()) ** 2)
    cov = 1.0 / np.maximum.outer(counts, counts).astype(np.float64)
    se = float(np.sqrt(wts @ cov @ wts))
    z = float(_norm.ppf(0.5 + confidence / 2))
    return SlopeFit(fit.slope, fit.intercept, fit.slope - z * se, fit.slope + z * se, fit.r2,
                    confidence, fit.n)


def local_dimension_slopes(points, center, r_small, r_large, n_radii=12,
                           confidence=0.95) -> LocalDimension:
    """Slopes of ``log N(r)`` vs ``log r`` in a small and a large radius window.

    Parameters
    ----------
    points : array_like, shape (n, D)
    center : array_like, shape (D,)
    r_small, r_large : (float, float)
        Windows ``(r_min, r_max)`` with ``0 < r_min < r_max``.
    n_radii : int >= 3
        Log-spaced radii per window.
    confidence : float
        Level of the slope confidence intervals (sampling noise of the
        nested counts, Poisson approximation).

    Returns
    -------
    LocalDimension

    Raises
    ------
    ParameterError
        Bad windows, or a window whose smallest ball is empty (pick larger radii
        or more points).

    Example
    -------
    >>> rng = np.random.default_rng(0)
    >>> pts = rng.uniform(-1, 1, size=(100_000, 2))          # a flat 2-D sheet
    >>> ld = local_dimension_slopes(pts, [0.0, 0.0], (0.05, 0.15), (0.2, 0.6))
    >>> bool(abs(ld.small.slope - 2) < 0.1), bool(abs(ld.large.slope - 2) < 0.1)
    (True, True)
    """
    points = check_array("points", points, shape=(None, None), hint="Pass an (n, D) array.")
    n_radii = check_int("n_radii", n_radii, lo=3, hint="Pass at least 3 radii per window.")
    windows = []
    for name, win in (("r_small", r_small), ("r_large", r_large)):
        win = check_array(name, win, shape=(2,), hint="Pass a window (r_min, r_max).")
        lo = check_real(f"{name}[0]", win[0], lo=0, hint="Pass a positive radius.")
        check_real(f"{name}[1]", win[1], lo=lo, hint="Pass r_max > r_min.")
        windows.append(np.geomspace(win[0], win[1], n_radii))
    tree = cKDTree(points)
    fits, counts = [], []
    for name, radii in zip(("r_small", "r_large"), windows):
        c = volume_growth(points, center, radii, tree=tree)
        if c[0] == 0:
            raise ParameterError(
                f"{name}[0]={radii[0]:g} is out of range: the ball of that radius around center "
                f"holds no point; valid range is radii whose balls are non-empty. Pass larger "
                f"radii or more points.")
        fits.append(_count_slope(radii, c, confidence))
        counts.append(c)
    return LocalDimension(fits[0], fits[1], windows[0], windows[1], counts[0], counts[1])
