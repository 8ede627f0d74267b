"""Figures and interactives of chapter 5 (attention's bilinear expansion).

Every function here turns the data of :mod:`tanbias.theory.attention` into a plotly
figure or a :class:`tanbias.figures.interactive.Interactive`; the mathematics and the
numbers the figures show live there.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from tanbias._checks import check_int
from tanbias.theory.attention import KEY_TERMS, NORMAL_TERMS, ORDERS, softmax_terms
from tanbias.figures import COLORS, frozen_layout, labelled
from tanbias.figures.interactive import Interactive, Param

__all__ = [
    "term_scaling_figure",
    "softmax_terms_figure",
    "softmax_terms_interactive",
    "removal_figure",
]

_PRETTY = {"mu_v": "μᵀM v<sub>j</sub>", "mu_n": "μᵀM n<sub>j</sub>",
           "v_v": "v<sub>i</sub>ᵀM v<sub>j</sub>", "v_n": "v<sub>i</sub>ᵀM n<sub>j</sub>",
           "n_v": "n<sub>i</sub>ᵀM v<sub>j</sub>", "n_n": "n<sub>i</sub>ᵀM n<sub>j</sub>"}
_TITLE_SLOT = "\x00title\x00"


def term_scaling_figure(df, title="Attention score terms against the radius t") -> go.Figure:
    """Log-log RMS of every score term against ``t`` (output of :func:`tanbias.theory.attention.score_term_scaling`).

    Parameters
    ----------
    df : pandas.DataFrame or dict of lists
    title : str

    Returns
    -------
    plotly.graph_objects.Figure
    """
    df = pd.DataFrame(df)
    fig = go.Figure()
    for name, g in df.groupby("term", sort=False):
        fig.add_trace(go.Scatter(x=g["t"], y=g["rms"], mode="lines+markers",
                                 name=f"{name} (order {ORDERS[name]})"))
    fig.update_layout(xaxis_type="log", yaxis_type="log", xaxis_exponentformat="power",
                      yaxis_exponentformat="power")
    return labelled(fig, title, "radius t [geodesic distance, log]",
                    "RMS of the term over token pairs [score units, log]", legend="term")


def removal_figure(df, title="Attention change when a part of every token is removed"
                   ) -> go.Figure:
    """Log-log total-variation change of the attention weights against ``t``.

    Parameters
    ----------
    df : pandas.DataFrame
        Output of :func:`tanbias.theory.attention.removal_scaling`.
    title : str

    Returns
    -------
    plotly.graph_objects.Figure
    """
    df = pd.DataFrame(df)
    fig = go.Figure()
    for removed, g in df.groupby("removed", sort=False):
        fig.add_trace(go.Scatter(x=g["t"], y=g["change"], mode="lines+markers",
                                 name=f"{removed} part removed (predicted order "
                                      f"{1 if removed == 'tangent' else 2})"))
    fig.update_layout(xaxis_type="log", yaxis_type="log", legend=dict(x=0.01, y=0.99),
                      xaxis_exponentformat="power", yaxis_exponentformat="power")
    return labelled(fig, title, "radius t [geodesic distance, log]",
                    "mean TV distance between attention rows [log]", legend="removed")


def softmax_terms_figure(data, title=None) -> go.Figure:
    """Bars of the key-dependent score terms, log scale.

    Parameters
    ----------
    data : dict
        Output of :func:`tanbias.theory.attention.softmax_terms`.
    title : str, optional
        Default: the head, the radius and the two attention changes.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    return go.Figure(_softmax_terms_dict(data, title))


def _sup(k):
    return "".join("⁰¹²³⁴⁵⁶⁷⁸⁹"[int(c)] for c in str(k))


@frozen_layout
def _softmax_terms_layout() -> go.Figure:
    """Layout (with the book's template) of :func:`softmax_terms_figure`, built once."""
    fig = go.Figure()
    fig.update_layout(yaxis_type="log", yaxis_exponentformat="power",
                      legend=dict(x=0.99, xanchor="right", y=0.99),
                      title_font_size=14, barmode="group")
    fig.update_xaxes(categoryorder="array",
                     categoryarray=[f"{_PRETTY[k]} (t{_sup(ORDERS[k])})" for k in KEY_TERMS])
    labelled(fig, _TITLE_SLOT, "score term (order in t)",
             "RMS of the key-dependent part [score units, log]", legend="term")
    return fig


def _softmax_terms_dict(data, title=None) -> dict:
    """:func:`softmax_terms_figure` as a plain dict (no per-update validation cost)."""
    traces = []
    for group, names, color in (("tangent only", [k for k in KEY_TERMS if k not in NORMAL_TERMS],
                                 COLORS[0]),
                                ("involves the normal part n", list(NORMAL_TERMS), COLORS[1])):
        traces.append(dict(type="bar", x=[f"{_PRETTY[k]} (t{_sup(ORDERS[k])})" for k in names],
                           y=[float(data["rms"][k]) for k in names], name=group,
                           marker=dict(color=color)))
    if title is None:
        title = (f"Head {data['head']}, t = {data['t']:.3g}: removing n moves the attention "
                 f"weights by {data['tv_normal']:.2g}, removing v by {data['tv_tangent']:.2g} (TV)")
    layout = _softmax_terms_layout()
    layout["title"]["text"] = title
    return dict(data=traces, layout=layout)


def softmax_terms_interactive(manifold, heads, ts=None, n_tokens=64, rng=0) -> Interactive:
    """Interactive over ``t`` and the head of a set of random heads: what reaches the softmax.

    Parameters
    ----------
    manifold : tanbias.theory.manifolds.Submanifold
    heads : tanbias.theory.attention.AttentionHeads
        Independent random heads, one per step of the "head" slider (not a depth).
    ts : sequence of float, optional
        Static grid of radii (default 7 values from 0.02 to 0.4).
    n_tokens : int
    rng : int
        Seed.

    Returns
    -------
    tanbias.figures.interactive.Interactive
    """
    hi = min(0.4, float(getattr(manifold, "patch_radius", 0.4)))
    ts = tuple(float(v) for v in (np.geomspace(0.02, hi, 7) if ts is None else ts))
    seed = check_int("rng", rng, lo=0, hint="Pass an integer seed.")
    H = heads.n_heads
    draws = {}

    def compute(t, head):
        # one draw of tokens per radius, shared by every head (as in the static grid)
        if t not in draws:
            if len(draws) > 32:              # live sliders take continuous t: keep it bounded
                draws.clear()
            draws[t] = manifold.sample_at_radius(float(t), n_tokens, seed).y
        return softmax_terms(manifold, heads, t, head, tokens=draws[t])

    return Interactive(
        params=[Param("t", "radius t", ts[0], ts[-1], default=ts[len(ts) // 2], log=True,
                      values=ts),
                Param("head", "random head", 0, H - 1, default=0, integer=True,
                      steps=H)],
        compute=compute,
        figure=lambda data, t, head: _softmax_terms_dict(data),
        title="Attention score terms that reach the softmax",
        caption="Key-dependent part of each bilinear term of the scores, for tokens at radius "
                "t around one centroid. Blue terms involve only the tangent part, vermillion "
                "ones the normal part. Shrinking t spreads the bars by one decade of t per "
                "order; note that μᵀM n<sub>j</sub> keeps pace with v<sub>i</sub>ᵀM "
                "v<sub>j</sub> (both t²). Each head is an independent random draw: the orders "
                "do not depend on it.",
        name="ch5-softmax-terms", height=460)
