"""Figures of the chapter "From tangent bias to a narrow cone": the toy of
:mod:`tanbias.theory.cone_drift`, with sliders over the sharing and the alignment of the
tokens' tangent planes.

The numbers come from :func:`tanbias.theory.cone_drift.cone_drift`; this module only draws them.
"""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from tanbias.figures import COLORS, frozen_layout
from tanbias.figures.interactive import Interactive, Param
from tanbias.theory.cone_drift import cone_drift

__all__ = ["cone_figure", "cone_interactive"]

_GRID = (0.0, 0.25, 0.5, 0.75, 1.0)


@frozen_layout
def _cone_layout() -> go.Figure:
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12,
                        subplot_titles=["the shared mean: mean cosine",
                                        "the centred cloud: effective dimensions"])
    for col in (1, 2):
        fig.update_xaxes(title_text="RMS displacement of the hidden states [stream norms]",
                         row=1, col=col)
    fig.update_yaxes(title_text="mean cosine of hidden states", range=[-0.05, 1.0], row=1, col=1)
    fig.update_yaxes(title_text="participation ratio [dimensions]", rangemode="tozero", row=1, col=2)
    fig.update_layout(legend=dict(orientation="h", x=0.0, y=1.12, yanchor="bottom"),
                      margin=dict(t=165), height=500)
    return fig


def _cone_dict(data) -> dict:
    layout = _cone_layout()
    t, p = data["tangent"], data["plain"]
    layout["title"] = dict(y=0.985, yanchor="top", text=(
        f"sharing {data['sharing']:.2g}, alignment {data['alignment']:.2g}: the tangent update's "
        f"moves are {100 * t['coherence']:.0f} % common, the plain gradient's "
        f"{100 * p['coherence']:.0f} %"))
    s = data["sizes"]
    traces = []
    for col, key in ((1, "mean_cosine"), (2, "participation")):
        axes = {} if col == 1 else dict(xaxis="x2", yaxis="y2")
        traces += [dict(type="scatter", x=s, y=t[key], mode="lines", name="tangent-projected update",
                        line=dict(color=COLORS[0], width=3), showlegend=col == 1, legendgroup="t", **axes),
                   dict(type="scatter", x=s, y=p[key], mode="lines", name="plain gradient (no tangent bias)",
                        line=dict(color=COLORS[1], width=2, dash="dash"), showlegend=col == 1,
                        legendgroup="p", **axes)]
    return dict(data=traces, layout=layout)


def cone_figure(data) -> go.Figure:
    """Two panels against the RMS displacement: the mean cosine of the hidden states (a shared
    mean) and the participation ratio of their centred cloud (its shape), for the
    tangent-projected update and the plain gradient. ``data`` is the output of
    :func:`tanbias.theory.cone_drift.cone_drift`.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    return go.Figure(_cone_dict(data))


def cone_interactive(sharings=_GRID, alignments=_GRID, n_tokens=200, D=32, d=2, seed=0) -> Interactive:
    """The toy with two sliders: how far the tokens share one tangent plane, and how far that
    plane is aligned with the input all tokens share.

    Returns
    -------
    tanbias.figures.interactive.Interactive
    """
    sharings, alignments = tuple(map(float, sharings)), tuple(map(float, alignments))

    def compute(sharing, alignment):
        return cone_drift(sharing, alignment, n_tokens=n_tokens, D=D, d=d, seed=seed)

    return Interactive(
        params=[Param("sharing", "sharing of the tangent planes", sharings[0], sharings[-1],
                      default=sharings[-1], values=sharings),
                Param("alignment", "alignment of the shared plane with the shared input",
                      alignments[0], alignments[-1], default=alignments[-1], values=alignments)],
        compute=compute,
        figure=lambda data, sharing, alignment: _cone_dict(data),
        title="When does a tangent-concentrated update make a cone?",
        caption="A silent linear block learns one update and adds its output to an isotropic "
                "stream. Left: the mean cosine (a shared mean). Right: the centred cloud's "
                "effective number of dimensions (its shape). The plain gradient reads the "
                "input every token shares, so it makes a cone whatever the sliders say; the "
                "tangent-projected update does so only where the shared tangent plane contains "
                "that input.",
        name="cone-drift", height=500)
