"""Figures of the horizon experiment: each primary contrast as a ratio with its interval, at 320 steps
(chapter 13's runs) and at 1280, and the encoder's collapse in its 2 x 2.

The numbers come from :mod:`tanbias.lab.analysis.horizon`; this module only draws.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from tanbias.figures import COLORS, GREY, KIND_COLORS, labelled, log_axis
from tanbias.lab.analysis.rivals import CONTRAST_NAMES
from tanbias.lab.config import KINDS

__all__ = ["HORIZON_COLORS", "COLLAPSE_TRACE", "COLLAPSE_NAMES", "horizons_figure", "collapse_figure"]

#: one colour per horizon
HORIZON_COLORS = {"320 steps": COLORS[7], "1280 steps": COLORS[5]}
#: the legend's name of the collapse part's two contrasts (320-step runs, read at their early peak)
COLLAPSE_TRACE = "the collapse part, at the peak"
#: the collapse part's two main effects in words
COLLAPSE_NAMES = {"corruption_peak": "random tokens instead of <mask>, at the peak",
                  "attention_peak": "causal instead of bidirectional attention, at the peak"}


def horizons_figure(horizons, contrasts) -> go.Figure:
    """Forest plot: each long primary contrast of each architecture as a ratio of mean cosines with its
    95 % interval, at 320 steps (chapter 13) and at 1280 (this experiment), one above the other; the
    collapse part's two main effects below, at 320 steps. A filled marker where the 1280-step contrast
    (or the collapse effect) is significant after Holm; log axis, a line at 1.

    Parameters
    ----------
    horizons : pandas.DataFrame
        :func:`tanbias.lab.analysis.horizon.horizon_rows`.
    contrasts : pandas.DataFrame
        :func:`tanbias.lab.analysis.horizon.contrast_rows` (its collapse rows are drawn).
    """
    rows = []                       # (label, horizon, estimate, lo, hi, filled)
    for _, r in horizons.iterrows():
        label = f"{CONTRAST_NAMES.get(r['contrast'], r['contrast'])} ({r['kind']})"
        rows.append((label, "320 steps", r["estimate_320"], r["lo_320"], r["hi_320"], False))
        sig = contrasts.set_index(["contrast", "kind"]).loc[(r["contrast"], r["kind"]), "significant"]
        rows.append((label, "1280 steps", r["estimate_1280"], r["lo_1280"], r["hi_1280"], bool(sig)))
    for _, r in contrasts[contrasts["part"] == "collapse"].iterrows():
        rows.append((COLLAPSE_NAMES.get(r["contrast"], r["contrast"]), COLLAPSE_TRACE, r["estimate"],
                     r["lo"], r["hi"], bool(r["significant"])))
    fig = go.Figure()
    finite = [np.exp(v) for row in rows for v in row[2:5] if np.isfinite(v)]
    for horizon, color in (*HORIZON_COLORS.items(), (COLLAPSE_TRACE, KIND_COLORS["encoder"])):
        sel = [row for row in rows if row[1] == horizon and np.isfinite(row[2])]
        if not sel:
            continue
        est = np.exp([row[2] for row in sel])
        lo, hi = np.exp([row[3] for row in sel]), np.exp([row[4] for row in sel])
        fig.add_trace(go.Scatter(
            x=est, y=[row[0] for row in sel], mode="markers", name=horizon,
            marker=dict(color=color, size=9, symbol=["circle" if row[5] else "circle-open" for row in sel]),
            error_x=dict(type="data", symmetric=False, array=np.nan_to_num(hi - est),
                         arrayminus=np.nan_to_num(est - lo))))
    fig.add_vline(x=1.0, line=dict(color=GREY, width=1))
    if finite:
        fig.update_xaxes(**log_axis([*finite, 1.0]))
    else:
        fig.add_annotation(text="no contrast yet: fewer than two complete seeds", x=0.5, y=0.5, xref="paper",
                           yref="paper", showarrow=False, font=dict(size=15))
    labels = list(dict.fromkeys(row[0] for row in rows))
    fig.update_yaxes(categoryorder="array", categoryarray=labels, autorange="reversed")
    fig.update_layout(height=max(420, 34 * len(labels) + 200))
    return labelled(fig, "Each contrast as a ratio of mean cosines (filled: significant after Holm)",
                    "ratio (95 % interval) [log]", "", legend="horizon")


def collapse_figure(trajectory) -> go.Figure:
    """The encoder's collapse in its 2 x 2: the layer-mean mean cosine on intact positions against the
    training step, one line per run, coloured by corruption, dashed under causal attention.

    Parameters
    ----------
    trajectory : pandas.DataFrame
        :func:`tanbias.lab.analysis.horizon.trajectory_table`.
    """
    t = trajectory[trajectory["part"] == "collapse"] if len(trajectory) else trajectory
    fig = go.Figure()
    colors = {"mask": COLORS[7], "random": COLORS[5]}
    shown = set()
    for (cell, seed), g in (t.groupby(["cell", "seed"]) if len(t) else []):
        corruption, attention = cell.split("-")
        g = g.sort_values("step")
        fig.add_trace(go.Scatter(x=g["step"] + 1, y=np.exp(g["raw"]), mode="lines", name=cell, legendgroup=cell,
                                 showlegend=cell not in shown,
                                 line=dict(color=colors[corruption], dash="dash" if attention == "causal" else "solid")))
        shown.add(cell)
    if not len(t):
        fig.add_annotation(text="no collapse run is committed yet", x=0.5, y=0.5, xref="paper", yref="paper",
                           showarrow=False, font=dict(size=15))
    else:
        fig.update_xaxes(**log_axis(t["step"] + 1))
    fig.update_yaxes(range=[0, 1.02])
    return labelled(fig, "The encoder's collapse in its four cells",
                    "training step + 1 [log]", "mean cosine (blocks' mean)", legend="corruption-attention")
