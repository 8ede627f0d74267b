"""Figures of the horizon experiment: each primary contrast as a ratio with its interval, at 320 steps
(chapter 13's runs) and at 1280, and the encoder's collapse in its 2 x 2.

The numbers come from :mod:`tanbias.lab.analysis.horizon`; this module only draws.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from tanbias.figures import COLORS, GREY, KIND_COLORS, frozen_layout, labelled, log_axis
from tanbias.figures.interactive import Interactive, Param
from tanbias.lab.analysis.horizon_report import CELL_NAMES, LONG_CELL_NAMES
from tanbias.lab.analysis.rivals import CONTRAST_NAMES
from tanbias.lab.experiments import HORIZON_COLLAPSE, HORIZON_LONG

__all__ = ["HORIZON_COLORS", "COLLAPSE_TRACE", "COLLAPSE_NAMES", "CELL_WORDS", "LONG_CELL_WORDS", "horizons_figure",
           "collapse_interactive", "long_interactive"]

#: the cells in words (the analysis' names, one source): the collapse part's and the long part's
CELL_WORDS, LONG_CELL_WORDS = CELL_NAMES, LONG_CELL_NAMES
#: one colour per horizon
HORIZON_COLORS = {"320 steps": COLORS[7], "1280 steps": COLORS[5]}
#: the legend's name of the collapse part's two contrasts (320-step runs, read at their early peak)
COLLAPSE_TRACE = "the collapse part, at the peak"
#: the collapse part's two main effects in words
COLLAPSE_NAMES = {"corruption_peak": "random tokens instead of <mask>, at the peak",
                  "attention_peak": "causal instead of bidirectional attention, at the peak"}


def horizons_figure(horizons, contrasts) -> go.Figure:
    """Forest plot: each long primary contrast of each architecture as a ratio of mean cosines with its
    95 % interval, at 320 steps (chapter 13's runs) and at 1280 (this experiment's long runs), one above
    the other; the collapse part's two main effects below, at their early peak. A marker is filled where
    its contrast is significant after Holm in its own registered family (chapter 13's at 320 steps, this
    experiment's primary family otherwise), open where it is not; log axis, a line at 1.

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
        rows.append((label, "320 steps", r["estimate_320"], r["lo_320"], r["hi_320"], bool(r["significant_320"])))
        rows.append((label, "1280 steps", r["estimate_1280"], r["lo_1280"], r["hi_1280"],
                     bool(r["significant_1280"])))
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
    return labelled(fig, "Each contrast as a ratio of mean cosines (filled: significant after Holm in its family; "
                         "open: not)", "ratio (95 % interval) [log]", "", legend="read at")


def _cell_curves(steps, part: str, cells: tuple, kind: str):
    """``compute`` of the horizon's interactives: per cell, the mean over its runs of the mean cosine at
    every probe step of one layer (``"mean"``: the blocks' mean), with ±1 standard error and the runs' count."""
    t = steps[(steps["part"] == part) & (steps["kind"] == kind)] if len(steps) else steps

    def compute(layer):
        out = {}
        at = t[t["layer"].astype(str) == str(layer)] if len(t) else t
        for cell in cells:
            g = at[at["cell"] == cell].groupby("step")["raw"] if len(at) else None
            if g is None or not len(at[at["cell"] == cell]):
                out[cell] = (np.array([]), np.array([]), np.array([]), 0)
                continue
            m, n = g.mean(), g.count()
            se = (g.std(ddof=1) / np.sqrt(n)).fillna(0.0)
            out[cell] = (m.index.to_numpy() + 1, m.to_numpy(float), se.to_numpy(float), int(n.max()))
        return out
    return compute


@frozen_layout
def _curves_layout():
    fig = go.Figure()
    fig.update_xaxes(type="log")
    fig.update_yaxes(range=[0, 1.02])
    return labelled(fig, " ", "training step + 1 [log]", "mean cosine", legend="cell (runs)")


def _curves_interactive(steps, part, cells, words, colors, dashes, kind, title, caption, name) -> Interactive:
    layers = sorted({int(x) for x in steps["layer"] if str(x) != "mean"}) if len(steps) else [1, 2, 3, 4]

    def figure(data, layer):
        layout = _curves_layout()
        where = "the blocks' mean" if layer == "mean" else f"block {layer}"
        layout["title"]["text"] = f"{title}, {where}"
        traces = []
        for cell in cells:
            x, m, se, n = data[cell]
            if not n:
                continue
            color, dash = colors[cell], dashes[cell]
            traces.append(dict(type="scatter", x=np.concatenate([x, x[::-1]]).tolist(),
                               y=np.concatenate([m + se, (m - se)[::-1]]).tolist(), fill="toself", fillcolor=color,
                               opacity=0.15, line=dict(width=0), hoverinfo="skip", showlegend=False,
                               name=words[cell]))
            traces.append(dict(type="scatter", x=x.tolist(), y=m.tolist(), mode="lines+markers",
                               name=f"{words[cell]} ({n})", line=dict(color=color, width=2, dash=dash),
                               marker=dict(size=4)))
        if not traces:
            layout["annotations"] = [dict(text="no run is committed yet", x=0.5, y=0.5, xref="paper", yref="paper",
                                          showarrow=False, font=dict(size=15))]
        return {"data": traces, "layout": layout}

    return Interactive(params=[Param("layer", "layer", options=("mean", *layers), default="mean")],
                       compute=_cell_curves(steps, part, cells, kind), figure=figure, title=title, caption=caption,
                       name=name, height=460)


def collapse_interactive(steps) -> Interactive:
    """Interactive: the encoder's collapse in its 2 x 2, the mean cosine on intact positions against the
    training step, one line per cell (the mean over its runs, a ±1 standard-error band), coloured by what a
    masked position shows, dashed under causal attention. Slider: the layer (``mean``: the blocks' mean).

    Parameters
    ----------
    steps : pandas.DataFrame
        :func:`tanbias.lab.analysis.horizon.step_table`.
    """
    colors = {c: COLORS[7] if c.startswith("mask") else COLORS[5] for c in HORIZON_COLLAPSE}
    dashes = {c: "dash" if c.endswith("causal") else "solid" for c in HORIZON_COLLAPSE}
    return _curves_interactive(
        steps, "collapse", HORIZON_COLLAPSE, CELL_WORDS, colors, dashes, "encoder",
        "The encoder's collapse in its four cells",
        "The mean cosine between the activations of the positions that show the text's own token, at every "
        "probe step of the 320-step runs; lines: the mean over each cell's runs (their number in brackets), bands: "
        "±1 standard error. A colour per corruption (the shared <mask> row, or random tokens in its place); "
        "dashed: causal attention, solid: the encoder's own, bidirectional.", "ch14-collapse")


def long_interactive(steps, kind: str = "decoder") -> Interactive:
    """Interactive: the long part's four cells of one architecture over their 1280 steps, the mean cosine on
    content positions against the step (the mean over each cell's committed runs, a ±1 standard-error band),
    coloured by output head, dashed under the proxy surgery. Slider: the layer."""
    colors = {c: COLORS[7] if c.startswith("standard") else COLORS[5] for c in HORIZON_LONG}
    dashes = {c: "dash" if c.endswith("proxy") else "solid" for c in HORIZON_LONG}
    return _curves_interactive(
        steps, "long", HORIZON_LONG, LONG_CELL_WORDS, colors, dashes, kind,
        f"The {kind}'s long runs: four times the training",
        "The mean cosine between the activations of the content positions (special tokens and the first "
        "position left out), at every probe step of the 1280-step runs; lines: the mean over each cell's "
        "committed runs (their number in brackets), bands: ±1 standard error. A colour per output head; dashed: "
        "the proxy surgery over the whole run, solid: no surgery.", f"ch14-long-{kind}")
