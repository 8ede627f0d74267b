"""Figure of chapter 4's Exercise 4.3: data balancing on a Zipf vocabulary.

The numbers come from :func:`tanbias.theory.balancing.balancing_data`; this module only draws
them.
"""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from tanbias._checks import check_int
from tanbias.figures import COLORS, GREY, frozen_layout
from tanbias.figures.interactive import Interactive, Param
from tanbias.theory.balancing import POOLINGS, balancing_data

__all__ = ["balancing_figure", "balancing_interactive"]

#: legend text of each pooling
POOLING_NAMES = {"energy": "energy summed over occurrences",
                 "occurrence": "mean over occurrences of each type's ratio",
                 "type": "mean over types of each type's ratio"}


def _balancing_dict(data) -> dict:
    layout = _balancing_layout()
    layout["title"] = dict(y=0.985, yanchor="top", text=(
        f"Zipf exponent s = {data['s']:.2g}, radius exponent α = {data['alpha']:+.2g}"))
    traces = [
        dict(type="scatter", x=data["rank"], y=data["occurrence_share"], mode="lines",
             name="share of the occurrences", line=dict(color=GREY, width=3)),
        dict(type="scatter", x=data["rank"], y=data["energy_share"], mode="lines",
             name="share of the normal gradient energy", line=dict(color=COLORS[3], width=3)),
    ]
    for p, color in zip(POOLINGS, COLORS):
        traces.append(dict(type="scatter", x=data["s_grid"], y=data["ratios"][p], mode="lines",
                           name=POOLING_NAMES[p], line=dict(color=color, width=2),
                           xaxis="x2", yaxis="y2"))
        traces.append(dict(type="scatter", x=[data["s"]], y=[data["at_s"][p]], mode="markers",
                           showlegend=False, marker=dict(color=color, size=11),
                           xaxis="x2", yaxis="y2", hoverinfo="skip"))
    return dict(data=traces, layout=layout)


@frozen_layout
def _balancing_layout() -> go.Figure:
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.13, subplot_titles=[
        "who holds the normal gradient energy", "pooled normal-to-tangent ratio"])
    fig.update_xaxes(title_text="frequency rank i [most frequent first]", type="log",
                     exponentformat="power", row=1, col=1)
    fig.update_yaxes(title_text="cumulative share of the types up to rank i", range=[0, 1.02],
                     row=1, col=1)
    fig.update_xaxes(title_text="Zipf exponent s [← balancing]", row=1, col=2)
    fig.update_yaxes(title_text="ratio R [no unit]", type="log", exponentformat="power", row=1, col=2)
    # legend above the panels: below them is where the interactive puts its sliders
    fig.update_layout(legend=dict(orientation="h", x=0.0, y=1.12, yanchor="bottom"),
                      margin=dict(t=190), height=560)
    return fig


def balancing_figure(data) -> go.Figure:
    """Two panels: the cumulative shares of the occurrences and of the normal gradient energy
    by frequency rank, and the three pooled ratios against the Zipf exponent ``s`` (a marker
    at the current ``s``). ``data`` is :func:`tanbias.theory.balancing.balancing_data`'s output.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    return go.Figure(_balancing_dict(data))


def balancing_interactive(V=1000, s_values=(0.0, 0.3, 0.6, 0.8, 1.0, 1.2, 1.5),
                          alphas=(-0.5, -0.25, -0.1, 0.0, 0.1, 0.2, 0.3, 0.5), t_star=0.05, c=1.0,
                          law=None, d=2) -> Interactive:
    """Exercise 4.3's interactive: sliders over the Zipf exponent ``s`` and the radius exponent
    ``alpha``.

    Returns
    -------
    tanbias.figures.interactive.Interactive
    """
    V = check_int("V", V, lo=2, hint="Pass a vocabulary of at least two types.")
    s_values, alphas = tuple(map(float, s_values)), tuple(map(float, alphas))

    def compute(s, alpha):
        return balancing_data(V, s, alpha, t_star=t_star, c=c, law=law, d=d)

    return Interactive(
        params=[Param("s", "Zipf exponent s", s_values[0], s_values[-1], default=1.0,
                      values=s_values),
                Param("alpha", "radius exponent α", alphas[0], alphas[-1], default=0.1,
                      values=alphas)],
        compute=compute,
        figure=lambda data, s, alpha: _balancing_dict(data),
        title="Balancing a Zipf vocabulary",
        caption="Type i has frequency f<sub>i</sub> ∝ i<sup>−s</sup> and radius "
                "t<sub>i</sub> = t<sub>∗</sub> (V f<sub>i</sub>)<sup>−α</sup>. Left: how much of "
                "the occurrences and of the normal gradient energy the most frequent types hold. "
                "Right: the vocabulary's ratio, pooled three ways; balancing moves left.",
        name="ch4-balancing", height=560)
