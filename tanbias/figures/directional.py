"""Figures of chapter 3: sampled directions against the predicted directional law.

The numbers come from the maths modules of chapter 3:
:class:`~tanbias.theory.direction_samples.DirectionSamples` (:mod:`tanbias.theory.direction_samples`),
:func:`~tanbias.theory.directional_density.amplitude_scan` (:mod:`tanbias.theory.directional_density`),
:func:`~tanbias.theory.ricci_sign.ricci_sign_data` and :func:`~tanbias.theory.ricci_sign.ring_data`
(:mod:`tanbias.theory.ricci_sign`); this module only draws them.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from tanbias._checks import check_instance
from tanbias.theory.direction_samples import DirectionSamples
from tanbias.figures.interactive import Interactive, Param, resolve_mode
from tanbias.theory.radial import Gaussian, RadialLaw
from tanbias.theory.ricci_sign import ricci_sign_data, ring_data
from tanbias.figures import COLORS, INK, REFERENCE_GREY, frozen_layout

__all__ = ["direction_density_figure", "directions_interactive", "amplitude_figure",
           "ricci_sign_figure", "ring_figure", "ring_interactive"]


def _scatter(x, y, name, **style) -> dict:
    """A scatter trace as a plain dict (no per-frame validation cost)."""
    return dict(type="scatter", x=np.asarray(x, dtype=np.float64),
                y=np.asarray(y, dtype=np.float64), name=name, **style)


def direction_density_figure(data, title=None) -> go.Figure:
    """Monte Carlo histogram of the direction angle against the predicted densities.

    Parameters
    ----------
    data : dict
        Output of :func:`tanbias.theory.direction_samples.direction_density_data`
        (or of :meth:`~tanbias.theory.direction_samples.DirectionSamples.live`).
    title : str, optional

    Returns
    -------
    plotly.graph_objects.Figure
    """
    return go.Figure(_direction_density_dict(data, title))


@frozen_layout
def _direction_layout() -> go.Figure:
    """Base layout (with the book's template) of the direction figure, built once."""
    fig = go.Figure(layout=dict(
        xaxis=dict(title=dict(text="direction angle θ from the first principal direction "
                                   "[degrees]"), tickvals=[0, 45, 90, 135, 180]),
        yaxis=dict(title=dict(text="density relative to uniform")),
        # legend above the plot: below it is where the interactive puts its sliders
        legend=dict(orientation="h", x=0.0, y=1.03, yanchor="bottom"), margin=dict(t=140),
        height=510))
    return fig


def _direction_density_dict(data, title=None) -> dict:
    deg = np.degrees(data["theta"])
    h = data["hist"]
    traces = [
        _scatter([0.0, 180.0], [1.0, 1.0], "uniform (no bias)",
                 mode="lines", line=dict(color=REFERENCE_GREY, dash="dot", width=1.5)),
        _scatter(deg, data["first_order"], "first order in η<sub>g</sub> (our derivation)",
                 mode="lines", line=dict(color=COLORS[0], dash="dash", width=2)),
        _scatter(deg, data["exact"], "exact (quadrature, all orders)",
                 mode="lines", line=dict(color=COLORS[1], width=2.5)),
        _scatter(np.degrees(h.centers), h.density,
                 f"Monte Carlo (n = {h.n:,}), ±1 s.e." if data.get("ess") is None else
                 f"Monte Carlo (n = {h.n:,} reweighted, ESS = {data['ess']:,.0f}), ±1 s.e.",
                 mode="markers", marker=dict(color=COLORS[7], size=7),
                 error_y=dict(type="data", array=np.asarray(h.stderr), visible=True,
                              thickness=1.2, width=3)),
    ]
    if title is None:
        title = (f"Directions of samples on the {data['name']}, "
                 f"η<sub>g</sub> = {data['eta_g']:.3g}")
    layout = _direction_layout()
    layout["title"] = dict(text=title, y=0.985, yanchor="top")
    return dict(data=traces, layout=layout)


def directions_interactive(samples) -> Interactive:
    """The chapter-3 interactive: sampled directions on several surfaces, slider over ``eta_g``.

    Parameters
    ----------
    samples : tanbias.theory.direction_samples.DirectionSamples
        The sample bank: its surfaces, ``eta_g`` grid (the default view is the
        largest), law, sizes and seed. In the built book each frame shows fresh
        exact samples (:meth:`~tanbias.theory.direction_samples.DirectionSamples.data`); live
        sliders reweight the banks (:meth:`~tanbias.theory.direction_samples.DirectionSamples.live`;
        the legend reports the effective sample size).

    Returns
    -------
    tanbias.figures.interactive.Interactive
        With ``samples``, and its ``data`` and ``live`` methods, as attributes.
    """
    samples = check_instance("samples", samples, DirectionSamples,
                             hint="Pass tanbias.theory.direction_samples.DirectionSamples(surfaces, etas).")
    etas = samples.etas

    def compute(surface, eta_g):
        if resolve_mode() == "static":
            return samples.data(eta_g, surface)
        return samples.live(surface, float(eta_g))

    demo = Interactive(
        params=[Param("surface", "surface", options=samples.names),
                Param("eta_g", "η<sub>g</sub>", etas[0], etas[-1], default=etas[-1], log=True,
                      values=etas)],
        compute=compute,
        figure=lambda d, surface, eta_g: _direction_density_dict(d),
        title="Sampled directions against the predicted density",
        caption="Each marker is a histogram bin of the sampled geodesic directions (±1 standard "
                "error); the curves are our first-order prediction and the exact law. Lower "
                "η<sub>g</sub>: every surface's histogram flattens onto the uniform line. The "
                "sphere is the control: no direction is special, at any η<sub>g</sub>.",
        name="ch3-directions", height=510)
    demo.samples, demo.data, demo.live = samples, samples.data, samples.live
    return demo


def amplitude_figure(scans, mc=None, title=None) -> go.Figure:
    """Log-log bias amplitude against ``eta_g``: exact curves, first-order lines, MC points.

    Parameters
    ----------
    scans : dict[str, dict]
        Name -> output of :func:`tanbias.theory.directional_density.amplitude_scan`.
    mc : dict[str, dict], optional
        Name -> ``{"eta_g", "amplitude", "se"}`` arrays of Monte Carlo estimates.
    title : str, optional

    Returns
    -------
    plotly.graph_objects.Figure
    """
    traces = []
    for i, (name, sc) in enumerate(scans.items()):
        c = COLORS[i % len(COLORS)]
        traces.append(_scatter(sc["eta_g"], sc["exact"], f"{name}: exact (quadrature)",
                               mode="lines", line=dict(color=c, width=2.5)))
        traces.append(_scatter(sc["eta_g"], sc["first_order"],
                               f"{name}: first order η<sub>g</sub> Var<sub>unif</sub>(b)",
                               mode="lines", line=dict(color=c, width=1.5, dash="dash")))
        if mc and name in mc:
            m = mc[name]
            traces.append(_scatter(m["eta_g"], m["amplitude"], f"{name}: Monte Carlo ±2 s.e.",
                                   mode="markers", marker=dict(color=c, size=9, symbol="diamond",
                                                               line=dict(color=INK, width=1)),
                                   error_y=dict(type="data", array=2 * np.asarray(m["se"]),
                                                visible=True)))
    layout = dict(
        title=dict(text=title or "The directional bias is first order in η<sub>g</sub>"),
        xaxis=dict(type="log", exponentformat="power",
                   title=dict(text="η<sub>g</sub> = E[r²]  [(curvature radius)²]")),
        yaxis=dict(type="log", exponentformat="power",
                   title=dict(text="bias amplitude E<sub>p</sub>[b] − E<sub>unif</sub>[b]")),
        legend=dict(orientation="v", x=1.02, y=1.0), height=480)
    return go.Figure(dict(data=traces, layout=layout))


def ricci_sign_figure(manifold, law, u, bins=10, n_curve=81, title=None) -> go.Figure:
    """Histogram of the sphere share ``s = |u_S|^2`` against the two readings of the Ricci sign.

    Parameters
    ----------
    manifold : GeneralizedCylinder with ``2 <= k < d``
    law : RadialLaw
    u : array_like (n, d)
        Sampled directions.
    bins : int
    n_curve : int

    Returns
    -------
    plotly.graph_objects.Figure
    """
    data = ricci_sign_data(manifold, law, u, bins, n_curve)
    s, hist, eta, first = data["s"], data["hist"], data["eta_g"], data["first_order"]
    traces = [
        _scatter([0, 1], [1, 1], "uniform (no bias)", mode="lines",
                 line=dict(color=REFERENCE_GREY, dash="dot", width=1.5)),
        _scatter(s, first["statement"], "first order, Ricci term favoured (statement's wording)",
                 mode="lines", line=dict(color=COLORS[3], dash="dash", width=2)),
        _scatter(s, first["extrinsic only"], "first order, extrinsic term only", mode="lines",
                 line=dict(color=COLORS[4], dash="dashdot", width=2)),
        _scatter(s, first["ours"], "first order, Ricci term lowers (our derivation)",
                 mode="lines", line=dict(color=COLORS[0], dash="dash", width=2)),
        _scatter(s, data["exact"], "exact (quadrature, all orders)", mode="lines",
                 line=dict(color=COLORS[1], width=2.5)),
        _scatter(hist.centers, hist.density, f"Monte Carlo (n = {hist.n:,}), ±1 s.e.",
                 mode="markers", marker=dict(color=COLORS[7], size=7),
                 error_y=dict(type="data", array=np.asarray(hist.stderr), visible=True)),
    ]
    layout = dict(
        title=dict(text=title or (f"Which sign? Directions on S²×ℝ in ℝ⁴, η<sub>g</sub> = {eta:.3g}")),
        xaxis=dict(title=dict(text="sphere share q = |u<sub>S</sub>|² of the direction "
                                   "(0: flat factor, 1: sphere factor)")),
        yaxis=dict(title=dict(text="density relative to uniform")),
        legend=dict(orientation="h", y=-0.22, x=0.0), height=520)
    return go.Figure(dict(data=traces, layout=layout))


@frozen_layout
def _ring_layout() -> go.Figure:
    fig = make_subplots(rows=1, cols=2, column_widths=[0.64, 0.36], horizontal_spacing=0.12,
                        subplot_titles=["direction law on one ring (fixed geodesic radius r), and its two factors",
                                        "where the ring sits in the radius law"])
    fig.update_xaxes(title_text="sphere share q = |u<sub>S</sub>|²", row=1, col=1)
    fig.update_yaxes(title_text="density relative to uniform", row=1, col=1)
    fig.update_xaxes(title_text="geodesic radius r / √η<sub>g</sub>", row=1, col=2)
    fig.update_yaxes(title_text="density of r / √η<sub>g</sub>", row=1, col=2)
    fig.update_layout(legend=dict(orientation="h", x=0.0, y=1.12, yanchor="bottom"),
                      margin=dict(t=175), height=560)
    return fig


def ring_figure(data) -> go.Figure:
    """Two panels: the ring's direction law with its chord and volume factors, and the
    radius law with the ring marked.

    Parameters
    ----------
    data : dict
        Output of :func:`tanbias.theory.ricci_sign.ring_data`.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    return go.Figure(_ring_dict(data))


def _ring_dict(data) -> dict:
    """:func:`ring_figure` as a plain dict (a slider frame: no per-update validation cost)."""
    layout = _ring_layout()
    layout["title"] = dict(y=0.985, yanchor="top", text=(f"S²×ℝ, η<sub>g</sub> = {data['eta_g']:.3g}: ring at "
                                 f"r = {data['tau']:.3g} √η<sub>g</sub> = {data['t']:.3g}"))
    s = data["s"]
    top = float(np.max(data["radius_density"]))
    traces = [
        _scatter(s, data["volume"], "volume factor (Ricci curvature)", mode="lines",
                 line=dict(color=COLORS[0], dash="dash", width=2)),
        _scatter(s, data["chord"], "chord factor (extrinsic curvature)", mode="lines",
                 line=dict(color=COLORS[1], dash="dash", width=2)),
        _scatter(s, data["ring"], "the ring: product", mode="lines",
                 line=dict(color=COLORS[2], width=3)),
        _scatter(s, data["marginal"], "all radii: exact marginal", mode="lines",
                 line=dict(color=COLORS[7], width=2)),
        _scatter(s, data["first_order"], "all radii: first order", mode="lines",
                 line=dict(color=COLORS[7], width=1.5, dash="dot")),
        dict(_scatter(data["x"], data["radius_density"], "radius law", mode="lines",
                      line=dict(color=COLORS[5], width=2), showlegend=False),
             xaxis="x2", yaxis="y2"),
        dict(_scatter([data["tau"], data["tau"]], [0.0, top], "the ring", mode="lines",
                      line=dict(color=COLORS[2], width=3), showlegend=False),
             xaxis="x2", yaxis="y2"),
    ]
    return dict(data=traces, layout=layout)


def ring_interactive(manifold, law=None, etas=(0.003, 0.01, 0.03, 0.1),
                     taus=(0.5, 1.0, 1.5, 2.0, 2.5)) -> Interactive:
    """The chapter-3 ring interactive on ``S^k x R^(d-k)``: sliders ``eta_g`` and the
    ring's geodesic radius ``r`` (in units of the RMS radius ``sqrt(eta_g)``).

    Returns
    -------
    tanbias.figures.interactive.Interactive
    """
    base = Gaussian(1.0) if law is None else check_instance(
        "law", law, RadialLaw, hint="Pass e.g. tanbias.theory.radial.Gaussian(1.0).")
    etas, taus = tuple(map(float, etas)), tuple(map(float, taus))
    return Interactive(
        params=[Param("eta_g", "η<sub>g</sub>", etas[0], etas[-1], default=etas[-1], log=True,
                      values=etas),
                Param("tau", "ring radius r / √η<sub>g</sub>", taus[0], taus[-1],
                      default=taus[-2], values=taus)],
        compute=lambda eta_g, tau: ring_data(manifold, base.with_eta(eta_g, manifold.d), tau),
        figure=lambda d, eta_g, tau: _ring_dict(d),
        title="Ricci versus extrinsic curvature, ring by ring",
        caption="Samples at geodesic radius exactly t: their direction law is the product of a "
                "volume factor (positive Ricci curvature: less volume along the sphere, s → 1) "
                "and a chord factor (shorter chords along the sphere). Inner rings follow the "
                "volume factor, outer rings the chord factor; all radii together (black) average "
                "them into a bias of order η<sub>g</sub>.",
        name="ch3-rings", height=560)
