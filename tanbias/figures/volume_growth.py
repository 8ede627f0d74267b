"""Figures of chapter 1: volume growth on a smooth manifold and on two crossing planes.

The numbers come from :mod:`tanbias.theory.volume_growth` (:func:`~tanbias.theory.volume_growth.growth_profile`,
:func:`~tanbias.theory.volume_growth.two_sheet_slope`); this module only draws them.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots
from scipy.spatial import cKDTree

from tanbias.figures.interactive import Interactive, Param
from tanbias.theory.volume_growth import growth_profile, two_sheet_slope
from tanbias.figures import COLORS, INK, frozen_layout

__all__ = ["growth_figure", "stratified_growth_interactive"]


def _growth_dict(profiles: dict, predicted: dict | None = None, delta: float | None = None,
                 title: str | None = None) -> dict:
    layout = _growth_layout()
    if title is None:
        title = ("Volume growth" if delta is None else
                 f"Volume growth, ball centre at distance ξ = {delta:.2g} from the junction")
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
                           name=name, mode="lines", line=dict(color=INK, dash="dash", width=1.5),
                           xaxis="x2", yaxis="y2"))
    return dict(data=traces, layout=layout)


@frozen_layout
def _growth_layout() -> go.Figure:
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12,
                        subplot_titles=["count #(r) of points within r",
                                        "local slope d log # / d log r"])
    fig.update_xaxes(title_text="radius r", type="log", row=1, col=1)
    fig.update_yaxes(title_text="#(r) [points]", type="log", exponentformat="power", row=1, col=1)
    fig.update_xaxes(title_text="radius r", type="log", row=1, col=2)
    fig.update_yaxes(title_text="local dimension (slope)", row=1, col=2)
    # legend above the panels: below them is where the interactive puts its sliders
    fig.update_layout(legend=dict(orientation="h", x=0.0, y=1.12, yanchor="bottom"),
                      margin=dict(t=165), height=520)
    return fig


def growth_figure(profiles, predicted=None, delta=None, title=None) -> go.Figure:
    """Two panels: ``N(r)`` on log-log axes and its local slope, one curve per profile.

    Parameters
    ----------
    profiles : dict[str, dict]
        Name -> output of :func:`~tanbias.theory.volume_growth.growth_profile`.
    predicted : dict[str, (array, array)], optional
        Name -> ``(r, slope)``: predicted local slopes (dashed).
    delta : float, optional
        Distance of the ball centre from the junction (for the title).
    title : str, optional

    Returns
    -------
    plotly.graph_objects.Figure
    """
    return go.Figure(_growth_dict(profiles, predicted, delta, title))


def stratified_growth_interactive(stratified, points, smooth_points, smooth_center, deltas,
                                  radii, window=5) -> Interactive:
    """The chapter-1 volume-growth interactive: slider over the distance ``delta`` of the
    ball centre from the junction of a :class:`~tanbias.theory.manifolds.StratifiedSet`.

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
    tanbias.figures.interactive.Interactive
    """
    tree = cKDTree(np.asarray(points))
    smooth = growth_profile(smooth_points, smooth_center, radii, window)
    deltas = tuple(float(x) for x in deltas)
    r_pred = np.geomspace(float(np.min(radii)), float(np.max(radii)), 200)

    def compute(delta):
        prof = growth_profile(points, stratified.point_on_sheet(0, delta), radii, window, tree)
        pred = two_sheet_slope(r_pred, delta, stratified.angle)
        return dict(profiles={"two sheets (stratified set)": prof, "sphere (smooth manifold)": smooth},
                    predicted={"two sheets: predicted slope": (r_pred, pred)}, delta=delta)

    return Interactive(
        params=[Param("delta", "distance ξ of the centre from the junction", deltas[0], deltas[-1],
                      default=deltas[len(deltas) // 2], values=deltas)],
        compute=compute,
        figure=lambda d, delta: _growth_dict(d["profiles"], d["predicted"], d["delta"]),
        title="Volume growth on a smooth manifold and on two crossing planes",
        caption="Count the points within radius r of a point. On the sphere the local slope is 2 at "
                "every radius. On two crossing planes, from a point at distance ξ from the "
                "junction, it is 2 until r = ξ, then jumps when the second sheet enters the ball "
                "and relaxes back towards 2: an increase of slope that no manifold produces.",
        name="ch1-volume-growth", height=520)
