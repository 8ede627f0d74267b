"""Figures of chapter 11's aliasing knob (input aliasing, ``data/preregistration/alias.toml``).

The numbers come from :mod:`tanbias.lab.analysis.alias`; this module only draws:

* :func:`chain_figure`: every reading of the chain against the effective vocabulary
  the runs are shown (1 / the collision probability of their input ids), per input id
  and per merged type for link 1;
* :func:`learning_figure`: how much the runs learn along the aliasing knob and along
  the direct knob, on one axis of effective vocabulary shown;
* :func:`convergence_interactive`: do a type's aliases become one cloud? Their
  centroids' spread over the type's radius during training, per level (layer slider).
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale
from plotly.subplots import make_subplots

from tanbias.figures import GREY, KIND_COLORS, LEVEL_COLORSCALE, frozen_layout, labelled, log_axis, shared_x_title
from tanbias.figures import dose as dose_figures
from tanbias.figures.interactive import Interactive, Param
from tanbias.lab.analysis.alias_design import positions
from tanbias.lab.config import KINDS

__all__ = ["PANELS", "KNOB_LABELS", "SHOWN", "chain_figure", "learning_figure", "convergence_interactive"]

SYMBOL = {"encoder": "circle", "decoder": "diamond"}
#: the chain's panels: run-table column -> panel title
PANELS = {"log_eta_q1": "ln η<sub>g</sub>, per input id",
          "log_eta_q1_type": "ln η<sub>g</sub>, per merged type",
          "log_enrichment_late": "ln late enrichment", "mean_cosine_late": "mean cosine",
          "isoscore_late": "IsoScore*", "gain": "gain over unigram [nats]"}
#: the three knobs of chapters 10 and 11 as their figures and tables name them: the direct knob by what
#: sets it apart from aliasing, the language knob as the dose figures name it (:data:`tanbias.figures.dose.KNOBS`)
KNOB_LABELS = {"alias": "aliasing knob (text kept)", "token": "direct knob (words removed)",
               "language": dose_figures.KNOBS["language"]}


#: the x quantity of the aliasing figures: the effective vocabulary of what the model is shown, which
#: rises as input frequencies flatten (an input id is a type at k0, a type's alias beyond it)
SHOWN = "effective vocabulary shown: 1 / collision probability of the input ids [log]"


def _level_color(x: float) -> str:
    """Colour of a level at design position ``x`` in [0, 1] (the dose levels' scale: dark = no aliases)."""
    return sample_colorscale(LEVEL_COLORSCALE, [0.9 * float(x)])[0]


def chain_figure(table) -> go.Figure:
    """The aliasing knob's chain: each reading against how flat the shown stream is.

    ``table``: :func:`tanbias.lab.analysis.alias.run_table`. One panel per reading
    (:data:`PANELS`), x the effective vocabulary the run is shown, 1 / the collision probability
    of its input ids (log, rising to the right: input frequencies flatten as you read;
    :func:`tanbias.figures.log_axis`); points are runs (seeds), lines join the level
    means, one colour per architecture.
    """
    fig = make_subplots(rows=3, cols=2, horizontal_spacing=0.12, vertical_spacing=0.11,
                        subplot_titles=list(PANELS.values()))
    for kind in KINDS:
        g = table[table["kind"] == kind] if len(table) else table
        if not len(g):
            continue
        g = g.assign(vocabulary=1 / g["collision"])
        means = g.groupby("level", sort=False)[["vocabulary", *PANELS]].mean().sort_values("vocabulary")
        for i, col in enumerate(PANELS):
            row, c = divmod(i, 2)
            fig.add_trace(go.Scatter(x=g["vocabulary"], y=g[col], mode="markers", name=f"{kind}: runs",
                                     legendgroup=kind, showlegend=i == 0,
                                     text=[f"{kind}, {lv}, seed {s}" for lv, s in zip(g["level"], g["seed"])],
                                     marker=dict(color=KIND_COLORS[kind], symbol=SYMBOL[kind], size=7, opacity=0.6)),
                          row=row + 1, col=c + 1)
            fig.add_trace(go.Scatter(x=means["vocabulary"], y=means[col], mode="lines", name=f"{kind}: level means",
                                     legendgroup=kind, showlegend=i == 0,
                                     line=dict(color=KIND_COLORS[kind], width=2)), row=row + 1, col=c + 1)
    if len(table):
        fig.update_xaxes(**log_axis(1 / table["collision"].to_numpy(dtype=float)))
    fig.update_layout(height=900)
    labelled(fig, "The chain along the aliasing knob (η<sub>g</sub>: the frequent types)", "", "",
             legend="architecture")
    return shared_x_title(fig, SHOWN)


def learning_figure(alias_table, dose_table) -> go.Figure:
    """Gain over unigram against the effective vocabulary the runs are shown (1 / collision probability),
    along the aliasing knob (filled markers, solid lines) and the direct knob (open markers, dashed lines),
    one panel per architecture: the same flattening, with the text kept or cut."""
    from tanbias.lab.analysis.dose import knob_runs

    fig = make_subplots(rows=1, cols=len(KINDS), horizontal_spacing=0.1, subplot_titles=list(KINDS))
    shown = []
    for col, kind in enumerate(KINDS, start=1):
        for knob, dash, fill in (("alias", "solid", True), ("token", "dash", False)):
            label = KNOB_LABELS[knob]
            t = alias_table if knob == "alias" else dose_table
            g = knob_runs(t, knob, kind) if len(t) else t
            if not len(g):
                continue
            g = g.assign(vocabulary=1 / g["collision"])
            shown.append(g["vocabulary"].to_numpy(dtype=float))
            means = g.groupby("level", sort=False)[["vocabulary", "gain"]].mean().sort_values("vocabulary")
            fig.add_trace(go.Scatter(x=g["vocabulary"], y=g["gain"], mode="markers", name=label, legendgroup=knob,
                                     showlegend=False, text=[f"{kind}, {lv}, seed {s}" for lv, s in
                                                             zip(g["level"], g["seed"])],
                                     marker=dict(color=KIND_COLORS[kind], size=7, opacity=0.6,
                                                 symbol=SYMBOL[kind] if fill else f"{SYMBOL[kind]}-open")),
                          row=1, col=col)
            fig.add_trace(go.Scatter(x=means["vocabulary"], y=means["gain"], mode="lines", name=label,
                                     legendgroup=knob, showlegend=col == 1,
                                     line=dict(color=KIND_COLORS[kind] if fill else GREY, width=2, dash=dash)),
                          row=1, col=col)
    if shown:
        fig.update_xaxes(**log_axis(np.concatenate(shown)))
    labelled(fig, "How much the models learn: aliasing against removing words", "", "gain over unigram [nats]",
             legend="knob")
    return shared_x_title(fig, SHOWN)


@frozen_layout
def _convergence_layout():
    fig = go.Figure()
    for y, dash in ((0.5, "dot"), (1.0, "dash")):
        fig.add_hline(y=y, line=dict(color=GREY, width=1, dash=dash))
    # fixed ranges: the reference lines need an axis range before a run is in, and the sliders keep
    # one scale (steps 1 .. 320 + 1; ratios 0.05 .. 20, log10)
    from tanbias.lab.experiments import RUN_STEPS

    fig.update_xaxes(type="log", range=[0, float(np.log10(RUN_STEPS + 1))])
    # labelled 1-2-5 ticks: plotly's own label the mantissas between decades in small print
    ticks = [0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20]
    fig.update_yaxes(type="log", range=[float(np.log10(0.05)), float(np.log10(20))], tickvals=ticks,
                     ticktext=[f"{v:g}" for v in ticks])
    return labelled(fig, " ", "training step + 1 [log]",
                    "spread of the aliases' centroids / type radius [log]")


def convergence_interactive(conv) -> Interactive:
    """Interactive: do a type's aliases become one cloud? The ratio of
    :func:`tanbias.lab.aliasing.alias_convergence` (geometric mean over the followed types, mean over
    seeds) during training, one line per aliased level; sliders: architecture, layer.

    ``conv``: :func:`tanbias.lab.analysis.alias.convergence_table`.
    """
    from tanbias.lab.config import SIZES

    # the small models' blocks until a run is in (layer 0, the embedding, has no radius)
    layers = (sorted(int(x) for x in set(conv["layer"])) if len(conv)
              else list(range(1, SIZES["small"].num_hidden_layers + 1)))
    levels = [lv for lv in positions() if lv != "k0"]
    st = conv.groupby(["kind", "layer", "level", "step"])["log_ratio"].mean() if len(conv) else None

    def compute(kind, layer):
        out = []
        for level in levels:
            try:
                c = st.loc[(kind, layer, level)]
                out.append((level, c.index.to_numpy() + 1, np.exp(c.to_numpy())))
            except (KeyError, AttributeError):
                out.append((level, np.empty(0), np.empty(0)))
        return out

    def figure(data, kind, layer):
        # a level with no run yet is one missing point (an empty trace on log axes draws NaN paths)
        traces = [dict(type="scatter", x=s_.tolist() or [None], y=y.tolist() or [None], mode="lines+markers",
                       name=level,
                       line=dict(color=_level_color(positions()[level]), width=2), marker=dict(size=5))
                  for level, s_, y in data]
        layout = _convergence_layout()
        layout["title"]["text"] = f"Do a type's aliases converge? {kind}, layer {layer}"
        layout["legend"] = {**layout.get("legend", {}), "title": {"text": "level of the aliasing knob"}}
        return {"data": traces, "layout": layout}

    return Interactive(
        params=[Param("kind", "architecture", options=KINDS, default="decoder"),
                Param("layer", "layer", options=tuple(layers), default=layers[-1])],
        compute=compute, figure=figure, title="The aliases of a type: one cloud or several?",
        caption="For the most frequent aliased types of one common held-out batch, the text is shown once per "
                "alias with every occurrence of the type as that alias (the contexts are the same each time). "
                "y: the spread of the aliases' centroids over the type's own radius around them (geometric "
                "mean over the types, mean over seeds). Below the dotted line (0.5) the aliases are one cloud, "
                "above the dashed line (1) each keeps a cloud of its own (the words of the rule fixed before the "
                "runs).",
        name="ch11-alias-convergence", height=480)
