"""Figures of chapter 2: from token frequency to concentration (a Zipf vocabulary).

The numbers come from :mod:`tanbias.theory.frequency` (:func:`~tanbias.theory.frequency.zipf_data`);
this module only draws them.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from tanbias._checks import check_int
from tanbias.theory.frequency import ZipfVocabulary, zipf_data
from tanbias.figures.interactive import Interactive, Param
from tanbias.figures import COLORS, frozen_layout
from tanbias.numerals import format_spec

__all__ = ["zipf_figure", "zipf_interactive"]


def _zipf_dict(data) -> dict:
    layout = _zipf_layout()
    layout["title"] = dict(y=0.985, yanchor="top", text=(
        f"s = {data['s']:.3g}, α = {data['alpha']:.3g}: the top 1 % of tokens hold "
        f"{100 * data['top_share']:.0f} % of occurrences; occurrence-weighted mean "
        f"η<sub>g</sub> = {format_spec(data['mean_eta'], '.2g')}; rank correlation {format_spec(data['spearman'], '+.2f')}"))
    f = data["frequencies"]
    traces = [
        dict(type="scatter", x=f, y=data["eta_g"], mode="lines", name="η<sub>g</sub> of each token",
             line=dict(color=COLORS[0], width=3)),
        dict(type="scatter", x=data["occ_frequency"], y=data["occ_distance"], mode="markers",
             name="sampled occurrences", marker=dict(color=COLORS[1], size=4, opacity=0.5),
             xaxis="x2", yaxis="y2"),
        dict(type="scatter", x=f, y=np.sqrt(data["eta_g"]), mode="lines",
             name="RMS radius √η<sub>g</sub>", line=dict(color=COLORS[0], width=2, dash="dash"),
             xaxis="x2", yaxis="y2"),
    ]
    return dict(data=traces, layout=layout)


@frozen_layout
def _zipf_layout() -> go.Figure:
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12,
                        subplot_titles=["moment ratio of each token", "distance to the centroid"])
    for col in (1, 2):
        fig.update_xaxes(title_text="token frequency f", type="log", exponentformat="power",
                         row=1, col=col)
    fig.update_yaxes(title_text="η<sub>g</sub> [curvature radii²]", type="log",
                     exponentformat="power", row=1, col=1)
    fig.update_yaxes(title_text="‖y − μ‖ [curvature radii]", type="log", exponentformat="power",
                     row=1, col=2)
    # legend above the panels: below them is where the interactive puts its sliders
    fig.update_layout(legend=dict(orientation="h", x=0.0, y=1.12, yanchor="bottom"),
                      margin=dict(t=165), height=520)
    return fig


def zipf_figure(data) -> go.Figure:
    """Two panels: ``eta_g`` per token against frequency, and sampled distances to the
    centroid against frequency. ``data`` is the output of
    :func:`tanbias.theory.frequency.zipf_data`.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    return go.Figure(_zipf_dict(data))


def zipf_interactive(n_tokens=500, exponents=(0.5, 0.75, 1.0, 1.25, 1.5),
                     alphas=(0.0, 0.25, 0.5, 0.75, 1.0), t_max=0.2, d=2, n=800, seed=0,
                     law=None) -> Interactive:
    """The chapter-2 Zipf interactive: sliders over the Zipf exponent ``s`` and ``alpha``.

    ``s`` is the balancing knob: a smaller ``s`` flattens the frequencies. The radius
    ``t_max`` of the rarest token only shifts the curves on log axes, so it is fixed.

    Returns
    -------
    tanbias.figures.interactive.Interactive
    """
    exponents, alphas = tuple(map(float, exponents)), tuple(map(float, alphas))
    seed = check_int("seed", seed, lo=0, hint="Pass an integer seed.")

    def compute(s, alpha):
        V = ZipfVocabulary(n_tokens, s=s, t_max=t_max, alpha=alpha, law=law)
        return zipf_data(V, d, n, np.random.default_rng(seed))

    return Interactive(
        params=[Param("s", "Zipf exponent s (smaller: more balanced)", exponents[0], exponents[-1],
                      default=exponents[len(exponents) // 2], values=exponents),
                Param("alpha", "radius exponent α", alphas[0], alphas[-1],
                      default=alphas[len(alphas) // 2], values=alphas)],
        compute=compute,
        figure=lambda data, s, alpha: _zipf_dict(data),
        title="From frequency to concentration",
        caption="Token i has frequency f<sub>i</sub> ∝ i<sup>−s</sup> and concentration radius "
                "t<sub>i</sub> = t<sub>max</sub> (f<sub>i</sub>/f<sub>min</sub>)<sup>−α</sup>, so "
                "η<sub>g</sub> ∝ f<sup>−2α</sup>. Right: distances of sampled occurrences. A "
                "smaller s (balanced frequencies) gives the rare tokens more occurrences and, "
                "with the rarest token's radius fixed, larger radii to the frequent ones. "
                "α = 0 switches the link off.",
        name="ch2-zipf", height=520)
