"""Figures and interactives of chapter 4 (the gradient ratio).

Every function here turns the data of :mod:`tanbias.theory.gradients` into a plotly
figure or a :class:`tanbias.figures.interactive.Interactive`; the mathematics and the
numbers the figures show live there.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from tanbias._checks import check_int, check_radius, max_radius
from tanbias.figures import BLACK, COLORS, frozen_layout, labelled
from tanbias.theory.gradients import eta_histogram, gradient_cloud
from tanbias.figures.interactive import Interactive, Param

__all__ = [
    "ratio_figure",
    "gradient_cloud_figure",
    "gradient_cloud_interactive",
    "eta_histogram_figure",
    "eta_histogram_interactive",
    "two_types_figure",
]


def ratio_figure(df, title="Normal-to-tangent gradient ratio of a linear layer") -> go.Figure:
    """Log-log plot of the ratio forms against ``t`` with the II prediction.

    Parameters
    ----------
    df : pandas.DataFrame or dict of lists
        Output of :func:`tanbias.theory.gradients.ratio_scaling` (or its ``to_dict("list")``, as an
        interactive ``compute`` returns it).
    title : str

    Returns
    -------
    plotly.graph_objects.Figure
    """
    df = pd.DataFrame(df)
    fig = go.Figure()
    names = dict(per_sample="per sample, mean of ||n||/||v||", rms="RMS (energy) form",
                 mean="batch-mean gradient")
    for col, dash in (("per_sample", "solid"), ("rms", "solid"), ("mean", "dot")):
        y = df[col].to_numpy(dtype=float)
        fig.add_trace(go.Scatter(x=df["t"], y=np.where(np.isfinite(y), y, np.nan),
                                 mode="lines+markers", name=names[col],
                                 line=dict(dash=dash)))
    fig.add_trace(go.Scatter(x=df["t"], y=df["predicted_rms"], mode="lines",
                             name="prediction c t from II", line=dict(dash="dash", color=BLACK)))
    fig.update_layout(legend=dict(x=0.01, y=0.99), xaxis_type="log", yaxis_type="log",
                      xaxis_exponentformat="power", yaxis_exponentformat="power")
    return labelled(fig, title, "radius t [geodesic distance, log]",
                    "normal / tangent gradient norm [ratio, log]")


def gradient_cloud_figure(data, title=None) -> go.Figure:
    """Scatter of per-sample gradients (output of :func:`tanbias.theory.gradients.gradient_cloud`) and their batch mean.

    Parameters
    ----------
    data : dict
        Output of :func:`tanbias.theory.gradients.gradient_cloud`.
    title : str, optional
        Default: the radius and the three ratios.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=data["tangent"], y=data["normal"], mode="markers",
                             name="per-sample gradient δ<sub>i</sub> x<sub>i</sub>",
                             marker=dict(size=5, opacity=0.55)))
    fig.add_trace(go.Scatter(x=[data["mean"][0]], y=[data["mean"][1]], mode="markers",
                             name="batch-mean gradient",
                             marker=dict(symbol="x", size=14, color=BLACK)))
    mr = data["mean_ratio"]
    mr_text = "∞" if not np.isfinite(mr) else f"{mr:.3g}"
    if title is None:
        title = (f"t = {data['t']:.3g}, {data['delta']} signal: RMS ratio {data['rms']:.3g} "
                 f"(c t = {data['predicted']:.3g}), batch-mean ratio {mr_text}")
    fig.update_layout(legend=dict(x=0.01, y=0.99), title_font_size=14)
    return labelled(fig, title, "tangent component / t [along the first tangent direction]",
                    "normal component / t [along the mean curvature]")


def gradient_cloud_interactive(manifold, ts=None, n=20_000, rng=0) -> Interactive:
    """The chapter-4 interactive: per-sample gradients at radius ``t``, two kinds of signal.

    Sliders: ``t`` (log scale) and the back-propagated signal (Gaussian or
    constant). Each frame recomputes :func:`tanbias.theory.gradients.gradient_cloud` with a fixed seed.

    Parameters
    ----------
    manifold : tanbias.theory.manifolds.Submanifold
    ts : sequence of float, optional
        Static grid of radii (default 7 values from 0.02 to 0.4, inside the patch).
    n : int
    rng : int
        Seed (an int, so every frame is reproducible).

    Returns
    -------
    tanbias.figures.interactive.Interactive
    """
    hi = min(0.4, max_radius(manifold) or 0.4)
    ts = tuple(float(v) for v in (np.geomspace(0.02, hi, 7) if ts is None else ts))
    seed = check_int("rng", rng, lo=0, hint="Pass an integer seed.")
    default = ts[len(ts) // 2]
    return Interactive(
        params=[Param("t", "radius t", ts[0], ts[-1], default=default, log=True, values=ts),
                Param("signal", "back-propagated signal", options=("gaussian", "constant"))],
        compute=lambda t, signal: gradient_cloud(manifold, t, n, signal, seed),
        figure=lambda data, t, signal: gradient_cloud_figure(data),
        title="Per-sample weight gradients, tangent vs normal component",
        caption="Each dot is one sample's weight gradient, both components divided by t. "
                "Shrink t: the cloud flattens onto the tangent axis (normal/tangent = O(t)). "
                "Switch to a constant signal: the cloud becomes the manifold itself and the "
                "batch mean (black cross) leaves the tangent axis, so the batch-mean ratio "
                "no longer shrinks like t.",
        name="ch4-gradient-cloud", height=470)


def eta_histogram_figure(data, title=None) -> go.Figure:
    """Histogram of per-sample ratios with the RMS ratio and its prediction (vertical lines)."""
    return go.Figure(_eta_histogram_dict(data, title))


@frozen_layout
def _eta_histogram_layout() -> go.Figure:
    """Layout (with the book's template) of :func:`eta_histogram_figure`, built once."""
    fig = go.Figure()
    fig.update_layout(xaxis_type="log", legend=dict(x=0.01, y=0.99), title_font_size=14,
                      xaxis_exponentformat="power")
    labelled(fig, "", "normal / tangent gradient norm of one sample [ratio, log]",
             "density [per unit of log10 ratio]")
    return fig


def _eta_histogram_dict(data, title=None) -> dict:
    """:func:`eta_histogram_figure` as a plain dict (no per-update validation cost)."""
    top = 1.05 * float(max(np.max(data["density"]), 1e-9))
    traces = [dict(type="scatter", x=np.asarray(data["centers"], dtype=np.float64),
                   y=np.asarray(data["density"], dtype=np.float64), mode="lines",
                   line=dict(shape="hvh"), name="per-sample ratio ||n<sub>i</sub>|| / "
                                                "||v<sub>i</sub>||")]
    for key, name, dash, color in (
            ("rms", "RMS ratio (measured)", "solid", BLACK),
            ("predicted", "prediction c √(κ<sub>g</sub> η<sub>g</sub>)", "dash", COLORS[1]),
            ("naive", "c √η<sub>g</sub> (ignores the spread of radii)", "dot", COLORS[2])):
        traces.append(dict(type="scatter", x=[float(data[key])] * 2, y=[0.0, top], mode="lines",
                           name=name, line=dict(dash=dash, color=color, width=2)))
    if title is None:
        title = (f"η<sub>g</sub> = {data['eta_g']:.3g}: RMS ratio {data['rms']:.3g}, "
                 f"predicted {data['predicted']:.3g}")
    layout = _eta_histogram_layout()
    layout["title"]["text"] = title
    return dict(data=traces, layout=layout)


def eta_histogram_interactive(manifold, law, etas=None, n=4000, rng=0) -> Interactive:
    """Interactive over ``eta_g``: per-sample ratios for a radial law, RMS vs prediction.

    Parameters
    ----------
    manifold : tanbias.theory.manifolds.Submanifold
    law : tanbias.theory.radial.RadialLaw
    etas : sequence of float, optional
        Static grid (default 7 values from 1e-4 to 3e-2).
    n : int
    rng : int
        Seed.

    Returns
    -------
    tanbias.figures.interactive.Interactive
    """
    etas = tuple(float(v) for v in (np.geomspace(1e-4, 3e-2, 7) if etas is None else etas))
    seed = check_int("rng", rng, lo=0, hint="Pass an integer seed.")
    return Interactive(
        params=[Param("eta_g", "η<sub>g</sub>", etas[0], etas[-1], default=etas[len(etas) // 2],
                      log=True, values=etas)],
        compute=lambda eta_g: eta_histogram(manifold, law, eta_g, n, seed),
        figure=lambda data, eta_g: _eta_histogram_dict(data),
        title="Per-sample gradient ratios under a radial law",
        caption="Samples drawn with the radial law rescaled to each η<sub>g</sub>. Each sample's "
                "ratio is ½‖II(u,u)‖ r, so the histogram is wide; the RMS ratio weights samples "
                "by their gradient energy and sits near c √(κ<sub>g</sub> η<sub>g</sub>), "
                "moving by √10 per decade of η<sub>g</sub>.",
        name="ch4-eta-histogram", height=440)


def two_types_figure(manifold, t1, t2, n=2000, rng=0, delta="constant") -> go.Figure:
    """Gradient clouds of a frequent (``t1``) and a rare (``t2``) token type, side by side.

    Each panel divides both components by its own radius, so it shows the
    normal gradient *relative to the type's own tangent gradient*.

    Parameters
    ----------
    manifold : tanbias.theory.manifolds.Submanifold
    t1, t2 : float
        Radii of the two types.
    n : int
    rng : int
        Seed.
    delta : {"gaussian", "constant"}

    Returns
    -------
    plotly.graph_objects.Figure
    """
    t1 = check_radius(t1, manifold, "t1")
    t2 = check_radius(t2, manifold, "t2")
    seed = check_int("rng", rng, lo=0, hint="Pass an integer seed.")
    clouds = [gradient_cloud(manifold, t, n, delta, seed) for t in (t1, t2)]
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.06,
                        subplot_titles=[f"type {k} (t = {c['t']:.3g}): RMS ratio {c['rms']:.3g}"
                                        for k, c in ((1, clouds[0]), (2, clouds[1]))])
    for col, (c, name) in enumerate(zip(clouds, ("frequent type 1", "rare type 2")), start=1):
        fig.add_trace(go.Scatter(x=c["tangent"], y=c["normal"], mode="markers", name=name,
                                 marker=dict(size=5, opacity=0.6)), row=1, col=col)
        fig.update_xaxes(title_text="tangent component / t", row=1, col=col)
    fig.update_yaxes(title_text="normal component / t", row=1, col=1)
    fig.update_layout(title=dict(text="Two token types on the same manifold: normal gradient "
                                      "relative to each type's own tangent gradient"),
                      height=420, legend=dict(x=0.01, y=0.99))
    return fig
