"""Figures of chapter 1: the local expansion seen side-on, and the scaling of its parts.

The numbers come from :mod:`tanbias.theory.expansion` (:func:`~tanbias.theory.expansion.side_view_data`,
:func:`~tanbias.theory.expansion.expansion_scaling`); this module only draws them.
"""

from __future__ import annotations

import functools

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from tanbias._checks import check_int
from tanbias.theory.expansion import expansion_scaling, side_view_data
from tanbias.figures.interactive import Interactive, Param
from tanbias.figures import COLORS, REFERENCE_GREY, frozen_layout

__all__ = ["side_view_figure", "expansion_interactive"]


@frozen_layout
def _two_panel_layout() -> go.Figure:
    fig = make_subplots(rows=1, cols=2, column_widths=[0.55, 0.45], horizontal_spacing=0.13,
                        subplot_titles=["side view at scale t (both axes ÷ t)",
                                        "size of each part against t"])
    fig.update_xaxes(title_text="tangent coordinate ÷ t", row=1, col=1)
    fig.update_yaxes(title_text="normal coordinate ÷ t", row=1, col=1)
    fig.update_xaxes(title_text="geodesic radius t [curvature radii]", type="log",
                     exponentformat="power", row=1, col=2)
    fig.update_yaxes(title_text="RMS length [curvature radii]", type="log",
                     exponentformat="power", row=1, col=2)
    # legend above the panels: below them is where the interactive puts its sliders
    fig.update_layout(legend=dict(orientation="h", x=0.0, y=1.12, yanchor="bottom"),
                      margin=dict(t=175), height=560)
    return fig


def _trace(x, y, name, col=1, **style) -> dict:
    axis = "" if col == 1 else str(col)
    return dict(type="scatter", x=np.asarray(x, dtype=np.float64),
                y=np.asarray(y, dtype=np.float64), name=name, xaxis=f"x{axis}",
                yaxis=f"y{axis}", **style)


def _side_view_dict(view, scaling, name) -> dict:
    layout = _two_panel_layout()
    layout["title"] = dict(text=f"The {name} at geodesic radius t = {view['t']:.3g}",
                           y=0.985, yanchor="top")
    t = view["t"]
    i = int(np.argmin(np.abs(np.log(scaling["t"] / t))))
    traces = [
        _trace([-1.1, 1.1], [0, 0], "tangent plane", mode="lines",
               line=dict(color=REFERENCE_GREY, dash="dot", width=1.5)),
        _trace(view["curve_x"], view["curve_y"], "prediction t·II(u,u)/2", mode="lines",
               line=dict(color=COLORS[1], width=2)),
        _trace(view["x"], view["y"], "samples at radius t", mode="markers",
               marker=dict(color=COLORS[0], size=5, opacity=0.7)),
        _trace(scaling["t"], scaling["rms_tangent"], "tangent part ‖v‖ (slope 1)", col=2,
               mode="lines", line=dict(color=COLORS[2], width=2)),
        _trace(scaling["t"], scaling["rms_normal"], "normal part ‖n‖ (slope 2)", col=2,
               mode="lines", line=dict(color=COLORS[0], width=2)),
        _trace([t, t], [scaling["rms_tangent"][i], scaling["rms_normal"][i]], "current t", col=2,
               mode="markers", marker=dict(color=COLORS[7], size=10, symbol="diamond")),
    ]
    return dict(data=traces, layout=layout)


def side_view_figure(view, scaling, name="manifold") -> go.Figure:
    """Two panels: the side view of :func:`~tanbias.theory.expansion.side_view_data` and the RMS parts of
    :func:`~tanbias.theory.expansion.expansion_scaling` on log-log axes, the current ``t`` marked.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    return go.Figure(_side_view_dict(view, scaling, name))


def expansion_interactive(manifolds, ts, n=300, seed=0, scaling_ts=None) -> Interactive:
    """The chapter-1 interactive: sliders ``t`` (log) and the manifold.

    Parameters
    ----------
    manifolds : dict[str, Submanifold]
        Surfaces by name (the side view uses the first tangent and first normal
        coordinate, where the examples of the book put their curvature).
    ts : sequence of float
        Static grid of radii, inside every patch.
    n : int
        Points per frame.
    seed : int
    scaling_ts : array_like, optional
        Radii of the right panel (default: 25 from ``ts[0] / 2`` to ``ts[-1]``).

    Returns
    -------
    tanbias.figures.interactive.Interactive
    """
    manifolds = dict(manifolds)
    ts = tuple(float(t) for t in ts)
    seed = check_int("seed", seed, lo=0, hint="Pass an integer seed.")
    grid = np.geomspace(ts[0] / 2, ts[-1], 25) if scaling_ts is None else np.asarray(scaling_ts)
    names = tuple(manifolds)

    @functools.lru_cache(maxsize=None)
    def scaling(name):
        return expansion_scaling(manifolds[name], grid, n=400, rng=seed)

    def compute(t, manifold):
        rng = np.random.default_rng([seed, names.index(manifold)])
        return dict(view=side_view_data(manifolds[manifold], t, n, rng), scaling=scaling(manifold),
                    name=manifold)

    return Interactive(
        params=[Param("t", "geodesic radius t", ts[0], ts[-1], default=ts[len(ts) // 2],
                      log=True, values=ts),
                Param("manifold", "surface", options=names)],
        compute=compute,
        figure=lambda data, t, manifold: _side_view_dict(data["view"], data["scaling"],
                                                         data["name"]),
        title="Tangent and normal parts of displacements",
        caption="Left: points at geodesic radius t from μ, seen side-on and magnified by 1/t. "
                "Shrink t: the normal part, of order t² (t after magnification), flattens onto "
                "the tangent plane, following t·II(u,u)/2. Right: the tangent part grows like t, "
                "the normal part like t².",
        name="ch1-local-expansion", height=560)
