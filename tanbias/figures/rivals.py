"""Figures of the rival accounts (chapter 13): the transient by head, the long runs, the registered
contrasts, and where the encoder's anisotropy at initialisation comes from.

The numbers come from :mod:`tanbias.lab.analysis.rivals`; this module only draws.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from tanbias.figures import COLORS, GREY, KIND_COLORS, frozen_layout, labelled, shared_x_title
from tanbias.figures.interactive import Interactive, Param
from tanbias.lab.analysis.rivals import CONTRAST_NAMES
from tanbias.lab.analysis.rivals import LOG_OUTCOMES as _LOG_OUTCOMES
from tanbias.lab.config import KINDS

__all__ = ["HEAD_COLORS", "transient_interactive", "long_runs_figure", "forest_figure", "initialisation_figure"]

#: one colour per output head
HEAD_COLORS = {"standard": COLORS[7], "unigram": COLORS[5]}


@frozen_layout
def _transient_layout():
    fig = make_subplots(rows=1, cols=2, subplot_titles=KINDS, horizontal_spacing=0.08)
    for col in (1, 2):
        fig.update_xaxes(type="log", row=1, col=col)
        fig.update_yaxes(range=[0, 1.02], row=1, col=col)
    fig = labelled(fig, " ", "", "mean cosine (content positions)", legend="output head")
    return shared_x_title(fig, "training step + 1 [log]")


def _head_curves(traj, seeds: dict | None, arm: str = "control"):
    """``compute`` of :func:`transient_interactive`: per architecture and head, the mean over the seeds
    (``seeds[kind]``; None: every committed one) of the mean cosine at every probe step, ±1 standard error."""
    def compute(layer):
        out = {}
        for kind in KINDS:
            t = traj[(traj["kind"] == kind) & (traj["arm"] == arm) & (traj["layer"].astype(str) == str(layer))]
            if seeds is not None:
                t = t[t["seed"].isin(seeds.get(kind, []))]
            for head in HEAD_COLORS:
                g = t[t["head"] == head].groupby("step")["mean_cosine"]
                m, n = g.mean(), g.count()
                se = (g.std(ddof=1) / np.sqrt(n)).fillna(0.0)
                out[(kind, head)] = (m.index.to_numpy() + 1, m.to_numpy(float), se.to_numpy(float))
        return out
    return compute


def transient_interactive(traj, seeds: dict | None = None) -> Interactive:
    """Interactive: the mean cosine during training, the standard against the unigram head, the
    control arm, encoder and decoder side by side (mean over ``seeds[kind]``, default every committed
    seed, with a ±1 standard-error band). Slider: the layer (``mean``: the mean over the blocks)."""
    L = int(max(x for x in traj["layer"] if x != "mean")) if len(traj) else 4

    def figure(data, layer):
        layout = _transient_layout()
        where = "the mean over the blocks" if layer == "mean" else f"block {layer}"
        layout["title"]["text"] = f"The transient, {where}: standard against unigram head"
        traces = []
        for col, kind in enumerate(KINDS, start=1):
            axis = "" if col == 1 else str(col)
            for head, color in HEAD_COLORS.items():
                x, m, se = data[(kind, head)]
                traces.append(dict(type="scatter", x=np.concatenate([x, x[::-1]]).tolist(),
                                   y=np.concatenate([m + se, (m - se)[::-1]]).tolist(), fill="toself",
                                   fillcolor=color, opacity=0.15, line=dict(width=0), hoverinfo="skip",
                                   showlegend=False, xaxis=f"x{axis}", yaxis=f"y{axis}", name=head))
                traces.append(dict(type="scatter", x=x.tolist(), y=m.tolist(), mode="lines+markers", name=head,
                                   legendgroup=head, showlegend=col == 1, xaxis=f"x{axis}", yaxis=f"y{axis}",
                                   line=dict(color=color, width=2), marker=dict(size=4)))
        return {"data": traces, "layout": layout}

    return Interactive(
        params=[Param("layer", "layer", options=("mean", *range(1, L + 1)), default="mean")],
        compute=_head_curves(traj, seeds), figure=figure,
        title="The transient: the mean cosine during training, by output head",
        caption="The mean cosine between the activations of the captured positions (special tokens and the "
                "first position left out), at every probe step of the control runs; lines: the mean over the "
                "seeds, bands: ±1 standard error. The standard head has no output bias, as in every earlier "
                "chapter; the unigram head has one, started at the log of the unigram distribution.",
        name="ch13-transient", height=460)


def long_runs_figure(traj) -> go.Figure:
    """The long runs (four times the steps): the layer-mean mean cosine of each run against its step,
    encoder and decoder side by side, one line per head and seed."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=KINDS, horizontal_spacing=0.08)
    t = traj[(traj["arm"] == "long") & (traj["layer"].astype(str) == "mean")]
    for col, kind in enumerate(KINDS, start=1):
        for (head, seed), g in t[t["kind"] == kind].groupby(["head", "seed"]):
            g = g.sort_values("step")
            fig.add_trace(go.Scatter(x=g["step"] + 1, y=g["mean_cosine"], mode="lines+markers",
                                     name=f"{head} head", legendgroup=head, showlegend=col == 1 and seed == 0,
                                     line=dict(color=HEAD_COLORS[head], dash="solid" if seed == 0 else "dot"),
                                     marker=dict(size=4)), row=1, col=col)
        fig.update_xaxes(type="log", row=1, col=col)
        fig.update_yaxes(range=[0, 1.02], row=1, col=col)
    if not fig.data:
        _nothing_yet(fig, "no long run is committed yet")
    seeds = sorted(t["seed"].unique())
    fig = labelled(fig, "After the transient: four times the steps", "", "mean cosine (mean over the blocks)",
                   legend="output head" + (" (solid: seed 0, dotted: seed 1)" if len(seeds) > 1 else
                                           f" (seed {seeds[0]})" if seeds else ""))
    fig.update_layout(legend=dict(orientation="h", x=0.0, y=1.12, yanchor="bottom"), margin=dict(t=120))
    return shared_x_title(fig, "training step + 1 [log]")


def _nothing_yet(fig: go.Figure, text: str) -> None:
    """A figure whose runs are not in yet: the sentence alone, without empty axes' default ranges."""
    fig.add_annotation(text=text, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False, font=dict(size=15))
    fig.update_xaxes(showticklabels=False, showgrid=False, zeroline=False, ticks="")
    fig.update_yaxes(showticklabels=False, showgrid=False, zeroline=False, ticks="")


def forest_figure(contrasts) -> go.Figure:
    """Forest plot of the registered contrasts: above, those on a logarithm (read as ratios, log axis,
    a line at 1); below, those on a linear reading (differences, a line at 0). One marker per
    architecture with its 95 % interval; a filled marker where Holm finds it significant. One panel
    above the other: the contrasts' names are long, and side by side they ran into each other."""
    n_log = int(contrasts["outcome"].isin(_LOG_OUTCOMES).groupby(contrasts["contrast"]).any().sum())
    n_lin = max(int(contrasts["contrast"].nunique()) - n_log, 1)
    fig = make_subplots(rows=2, cols=1,
                        subplot_titles=("ratios (log readings)", "differences (linear readings)"),
                        row_heights=[max(n_log, 1), n_lin], vertical_spacing=0.12)
    for row, logs in ((1, True), (2, False)):
        sel = contrasts[contrasts["outcome"].isin(_LOG_OUTCOMES) == logs]
        for kind in KINDS:
            r = sel[(sel["kind"] == kind) & np.isfinite(sel["estimate"])]
            if r.empty:
                continue
            f = np.exp if logs else (lambda v: v)
            est, lo, hi = f(r["estimate"].to_numpy()), f(r["lo"].to_numpy()), f(r["hi"].to_numpy())
            fig.add_trace(go.Scatter(
                x=est, y=r["contrast"].map(lambda c: CONTRAST_NAMES.get(c, c)), mode="markers", name=kind, legendgroup=kind, showlegend=row == 1,
                marker=dict(color=KIND_COLORS[kind], size=9, symbol=np.where(r["significant"], "circle",
                                                                             "circle-open").tolist()),
                error_x=dict(type="data", symmetric=False, array=hi - est, arrayminus=est - lo)), row=row, col=1)
        fig.add_vline(x=1.0 if logs else 0.0, line=dict(color=GREY, width=1), row=row, col=1)
        if logs:                 # labelled ratios: plotly's own log labels print 0.3 as "3"
            ticks = [0.1, 0.2, 0.3, 0.5, 0.7, 1, 1.5, 2, 3, 5, 10]
            fig.update_xaxes(type="log", tickvals=ticks, ticktext=[f"{v:g}" for v in ticks], row=row, col=1)
        fig.update_yaxes(autorange="reversed", row=row, col=1)
    if not fig.data:
        _nothing_yet(fig, "no contrast yet: fewer than two complete seeds")
    fig.update_layout(height=max(480, 24 * contrasts["contrast"].nunique() + 200))
    return labelled(fig, "The registered contrasts (filled: significant after Holm)", "", "", legend="architecture")


def initialisation_figure(init) -> go.Figure:
    """Where the encoder's mean cosine at step 0 comes from: the mean cosine of the content positions
    by block at initialisation, for the encoder's weights with bidirectional and with causal attention,
    on its masked first batch and on the same text unmasked
    (:func:`tanbias.lab.analysis.rivals.initialisation_anisotropy`)."""
    fig = go.Figure()
    t = init[init["positions"] == "content"]
    styles = {("bidirectional", "masked"): (KIND_COLORS["encoder"], "solid"),
              ("bidirectional", "unmasked"): (KIND_COLORS["encoder"], "dot"),
              ("causal", "masked"): (KIND_COLORS["decoder"], "solid"),
              ("causal", "unmasked"): (KIND_COLORS["decoder"], "dot")}
    for (attention, shown), (color, dash) in styles.items():
        g = t[(t["attention"] == attention) & (t["input"] == shown)].groupby("layer")["mean_cosine"].mean()
        fig.add_trace(go.Scatter(x=g.index, y=g.to_numpy(), mode="lines+markers", name=f"{attention}, {shown}",
                                 line=dict(color=color, dash=dash), marker=dict(size=6)))
    fig.update_yaxes(range=[0, 1])
    fig.update_xaxes(dtick=1)
    return labelled(fig, "Anisotropy before any update: the <mask> row, mixed in by attention",
                    "layer (0: the embedding)", "mean cosine of the content positions",
                    legend="attention, input")
