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
from ._figcache import frozen_layout
from .stats import SlopeFit, loglog_slope

__all__ = ["volume_growth", "LocalDimension", "local_dimension_slopes", "two_sheet_count",
           "growth_profile", "growth_figure", "stratified_growth_interactive"]


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


# ----------------------------------------------------------------- chapter 1: profiles, figures
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


def growth_profile(points, center, radii, window=5, tree=None) -> dict:
    """Counts ``N(r)`` and the local slope of ``log N`` against ``log r``.

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


def _growth_dict(profiles: dict, predicted: dict | None = None, delta: float | None = None,
                 title: str | None = None) -> dict:
    import json

    from .figures import COLORS

    layout = _growth_layout()
    if title is None:
        title = ("Volume growth" if delta is None else
                 f"Volume growth, ball centre at distance δ = {delta:.2g} from the junction")
    layout["title"] = dict(text=title, y=0.985, yanchor="top")
    traces = []
    for i, (name, prof) in enumerate(profiles.items()):
        c = COLORS[i % len(COLORS)]
        traces.append(dict(type="scatter", x=prof["r"], y=prof["counts"], name=name,
                           mode="lines+markers", marker=dict(size=5, color=c),
                           line=dict(color=c, width=2), legendgroup=name))
        traces.append(dict(type="scatter", x=prof["r_local"], y=prof["local_slope"],
                           name=f"{name}: local slope", mode="lines+markers",
                           marker=dict(size=5, color=c), line=dict(color=c, width=2),
                           xaxis="x2", yaxis="y2", legendgroup=name, showlegend=False))
    for name, (r, slope) in (predicted or {}).items():
        traces.append(dict(type="scatter", x=np.asarray(r), y=np.asarray(slope),
                           name=name, mode="lines", line=dict(color="#222", dash="dash", width=1.5),
                           xaxis="x2", yaxis="y2"))
    return dict(data=traces, layout=layout)


@frozen_layout
def _growth_layout() -> go.Figure:
    import json

    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12,
                        subplot_titles=["count N(r) of points within r",
                                        "local slope d log N / d log r"])
    fig.update_xaxes(title_text="radius r", type="log", row=1, col=1)
    fig.update_yaxes(title_text="N(r) [points]", type="log", exponentformat="power", row=1, col=1)
    fig.update_xaxes(title_text="radius r", type="log", row=1, col=2)
    fig.update_yaxes(title_text="local dimension (slope)", row=1, col=2)
    # legend above the panels: below them is where the interactive puts its sliders
    fig.update_layout(legend=dict(orientation="h", x=0.0, y=1.12, yanchor="bottom"),
                      margin=dict(t=165), height=520)
    return fig


def growth_figure(profiles, predicted=None, delta=None, title=None):
    """Two panels: ``N(r)`` on log-log axes and its local slope, one curve per profile.

    Parameters
    ----------
    profiles : dict[str, dict]
        Name -> output of :func:`growth_profile`.
    predicted : dict[str, (array, array)], optional
        Name -> ``(r, slope)``: predicted local slopes (dashed).
    delta : float, optional
        Distance of the ball centre from the junction (for the title).
    title : str, optional

    Returns
    -------
    plotly.graph_objects.Figure
    """
    import plotly.graph_objects as go

    return go.Figure(_growth_dict(profiles, predicted, delta, title))


def stratified_growth_interactive(stratified, points, smooth_points, smooth_center, deltas,
                                  radii, window=5):
    """The chapter-1 volume-growth interactive: slider over the distance ``delta`` of the
    ball centre from the junction of a :class:`~tanbias.manifolds.StratifiedSet`.

    Parameters
    ----------
    stratified : StratifiedSet
    points : array_like (n, D)
        Points of the stratified set, sampled with a (nearly) uniform density.
    smooth_points : array_like (m, D_s)
        Points of a smooth manifold, for reference.
    smooth_center : array_like (D_s,)
    deltas : sequence of float
        Distances (static grid).
    radii : array_like
    window : int

    Returns
    -------
    tanbias.interactive.Interactive
    """
    from .interactive import Interactive, Param

    tree = cKDTree(np.asarray(points))
    smooth = growth_profile(smooth_points, smooth_center, radii, window)
    deltas = tuple(float(x) for x in deltas)
    r_pred = np.geomspace(float(np.min(radii)), float(np.max(radii)), 200)

    def compute(delta):
        prof = growth_profile(points, stratified.point_on_sheet(0, delta), radii, window, tree)
        h2 = (delta * np.sin(stratified.angle)) ** 2
        pred = np.where(r_pred ** 2 > h2, 4 * r_pred ** 2 / (2 * r_pred ** 2 - h2), 2.0)
        return dict(profiles={"two sheets (stratified set)": prof, "sphere (smooth manifold)": smooth},
                    predicted={"two sheets: predicted slope": (r_pred, pred)}, delta=delta)

    return Interactive(
        params=[Param("delta", "distance δ of the centre from the junction", deltas[0], deltas[-1],
                      default=deltas[len(deltas) // 2], values=deltas)],
        compute=compute,
        figure=lambda d, delta: _growth_dict(d["profiles"], d["predicted"], d["delta"]),
        title="Volume growth on a smooth manifold and on two crossing planes",
        caption="Count the points within radius r of a point. On the sphere the local slope is 2 at "
                "every radius. On two crossing planes, from a point at distance δ from the "
                "junction, it is 2 until r = δ, then jumps when the second sheet enters the ball "
                "and relaxes back towards 2: an increase of slope that no manifold produces.",
        name="ch1-volume-growth", height=520)
