"""Volume growth: how the number of points within radius r grows (chapter 1).

On a smooth ``d``-manifold sampled with a density that is roughly constant at
the scale ``r``, the count ``#(r)`` of sample points within distance ``r`` of a
point grows like ``r^d``, so the slope of ``log #`` against ``log r`` is ``d``
in every small-radius window. Robinson, Dey & Chiang (2025) turn this into a
test: where slopes in two windows differ in a way no manifold (or fiber
bundle) allows, the manifold hypothesis fails at that point. Here:

* :func:`volume_growth` counts points in balls (``scipy.spatial.cKDTree``);
* :func:`local_dimension_slopes` fits the slope in a small-radius and a
  large-radius window, with confidence intervals.

On a :class:`~tanbias.theory.manifolds.StratifiedSet` (two planes crossing along a
line) the slope is 2 in both windows at the junction, but at a point of one
sheet at distance ``delta`` from the other it is 2 below ``delta`` and larger
above it: the second sheet enters the balls.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree
from scipy.stats import norm as _norm

from tanbias._checks import check_array, check_int, check_real
from tanbias.errors import ParameterError
from tanbias.stats import Check, SlopeFit, check_close, loglog_slope

__all__ = ["volume_growth", "LocalDimension", "local_dimension_slopes", "two_sheet_count",
           "two_sheet_slope", "two_sheet_window_slope", "slope_stderr", "window_checks",
           "growth_profile"]


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
        Fits of ``log #(r)`` against ``log r`` in each window.
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
    """Slopes of ``log #(r)`` vs ``log r`` in a small and a large radius window.

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


# ----------------------------------------------------------------- chapter 1: profiles
def two_sheet_count(radii, delta, angle=np.pi / 2, density=1.0) -> np.ndarray:
    """Expected count in a ball of radius ``r`` at distance ``delta`` from the junction of
    two planes (uniform ``density`` per unit area on each sheet), the ball's centre on
    sheet 0: ``density * pi * (r^2 + max(r^2 - (delta sin(angle))^2, 0))``.

    Parameters
    ----------
    radii : array_like, shape (m,)
    delta : float >= 0
    angle : float in (0, pi/2]
    density : float > 0

    Returns
    -------
    ndarray, shape (m,)

    Example
    -------
    >>> two_sheet_count([0.1, 0.5], 0.3, density=1 / np.pi).round(6).tolist()
    [0.01, 0.41]
    """
    radii = check_array("radii", radii, shape=(None,))
    delta = check_real("delta", delta, lo=0, lo_open=False, hint="Pass a distance >= 0.")
    angle = check_real("angle", angle, lo=0, hi=np.pi / 2, hi_open=False,
                       hint="Pass the angle between the sheets in radians.")
    density = check_real("density", density, lo=0, hint="Pass a positive density.")
    h2 = (delta * np.sin(angle)) ** 2
    return density * np.pi * (radii ** 2 + np.maximum(radii ** 2 - h2, 0.0))


def two_sheet_slope(radii, delta, angle=np.pi / 2) -> np.ndarray:
    """Local slope ``d log N / d log r`` of :func:`two_sheet_count`, in closed form.

    Below ``h = delta sin(angle)`` only the centre's own sheet is in the ball and
    the slope is 2; above it the second sheet adds ``pi (r^2 - h^2)`` and the
    slope is ``4 r^2 / (2 r^2 - h^2)``, which jumps to 4 at ``r = h`` and relaxes
    back towards 2.

    Parameters
    ----------
    radii : array_like, shape (m,)
    delta : float >= 0
        Distance of the ball centre from the junction, along its sheet.
    angle : float in (0, pi/2]
        Angle between the sheets.

    Returns
    -------
    ndarray, shape (m,)

    Example
    -------
    >>> two_sheet_slope([0.1, 0.3, 0.6], 0.2).round(4).tolist()
    [2.0, 2.5714, 2.1176]
    """
    radii = check_array("radii", radii, shape=(None,))
    delta = check_real("delta", delta, lo=0, lo_open=False, hint="Pass a distance >= 0.")
    angle = check_real("angle", angle, lo=0, hi=np.pi / 2, hi_open=False,
                       hint="Pass the angle between the sheets in radians.")
    h2 = (delta * np.sin(angle)) ** 2
    return np.where(radii ** 2 > h2, 4 * radii ** 2 / (2 * radii ** 2 - h2), 2.0)


def growth_profile(points, center, radii, window=5, tree=None) -> dict:
    """Counts ``#(r)`` and the local slope of ``log #`` against ``log r``.

    The local slope at the middle of each run of ``window`` consecutive radii is
    the least-squares slope over that run.

    Parameters
    ----------
    points : array_like, shape (n, D)
    center : array_like, shape (D,)
    radii : array_like, shape (m,), increasing, ``m >= window``
    window : int >= 2
    tree : scipy.spatial.cKDTree, optional

    Returns
    -------
    dict
        ``r`` (m,), ``counts`` (m,), ``r_local`` and ``local_slope`` (m - window + 1,).

    Example
    -------
    >>> pts = np.random.default_rng(0).uniform(-1, 1, size=(50_000, 2))
    >>> prof = growth_profile(pts, [0.0, 0.0], np.geomspace(0.1, 0.5, 6), window=3)
    >>> bool(np.all(np.abs(prof["local_slope"] - 2) < 0.2))
    True
    """
    radii = check_array("radii", radii, shape=(None,))
    window = check_int("window", window, lo=2, hi=radii.size,
                       hint="Pass a window no longer than the number of radii.")
    counts = volume_growth(points, center, radii, tree=tree)
    lr = np.log(radii)
    lc = np.log(np.maximum(counts, 1))
    m = radii.size - window + 1
    slopes = np.empty(m)
    mids = np.empty(m)
    for i in range(m):
        x, y = lr[i:i + window], lc[i:i + window]
        slopes[i] = np.polyfit(x, y, 1)[0]
        mids[i] = np.exp(x.mean())
    return dict(r=radii, counts=counts, r_local=mids, local_slope=slopes)


def two_sheet_window_slope(radii, delta, density=1.0, angle=np.pi / 2) -> float:
    """The slope that :func:`local_dimension_slopes` should find over a window of ``radii``
    on two crossing planes: the log-log least-squares slope of :func:`two_sheet_count`.

    Example
    -------
    >>> round(two_sheet_window_slope(np.geomspace(0.05, 0.25, 8), 0.0), 6)
    2.0
    """
    radii = check_array("radii", radii, shape=(None,))
    return loglog_slope(radii, two_sheet_count(radii, delta, angle, density)).slope


def slope_stderr(fit) -> float:
    """Standard error of a fitted slope, read off its 95% interval: ``(high - low) / (2 * 1.96)``.

    Example
    -------
    >>> from tanbias.stats import SlopeFit
    >>> round(slope_stderr(SlopeFit(2.0, 0.0, 1.804, 2.196, 0.99)), 6)
    0.1
    """
    return (fit.ci_high - fit.ci_low) / (2 * 1.96)


def window_checks(prefix, local, predicted) -> list[Check]:
    """Slopes of a :class:`LocalDimension` in its small and large windows against a
    prediction, each within 3 standard errors (:func:`slope_stderr`).

    Parameters
    ----------
    prefix : str
        Start of the labels, e.g. ``"sphere"``: ``"sphere: slope, small window"``.
    local : LocalDimension
    predicted : float or callable
        The predicted slope, or a function of the window's radii returning it
        (e.g. :func:`two_sheet_window_slope`).

    Returns
    -------
    list[Check]
        Small window first.

    Example
    -------
    >>> pts = np.random.default_rng(0).uniform(-1, 1, size=(50_000, 2))
    >>> ld = local_dimension_slopes(pts, [0.0, 0.0], (0.05, 0.2), (0.3, 0.6))
    >>> [c.passed for c in window_checks("square", ld, 2.0)]
    [True, True]
    """
    out = []
    for label, fit, r in (("small", local.small, local.radii_small),
                          ("large", local.large, local.radii_large)):
        target = predicted(r) if callable(predicted) else predicted
        out.append(check_close(f"{prefix}: slope, {label} window", fit.slope, target,
                               atol=3 * slope_stderr(fit)))
    return out

