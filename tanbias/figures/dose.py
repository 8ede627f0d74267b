"""Figures of the dose experiment (chapter 10).

The numbers come from :mod:`tanbias.lab.analysis.dose`; this module only draws.
"""
from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale
from plotly.subplots import make_subplots

from tanbias._checks import check_choice
from tanbias.figures import (GREY, KIND_COLORS, LEVEL_COLORSCALE, frozen_layout, labelled, log_axis,
                              shared_x_title)
from tanbias.figures.interactive import Interactive, Param
from tanbias.lab.analysis import dose, dose_design, sweep
from tanbias.lab.config import EARLY_FRAC, KINDS
from tanbias.lab.experiments import DOSE

__all__ = ["KNOBS", "VOCABULARY", "chain_interactive", "trajectory_interactive", "adaptive_figure",
           "progress_figure"]

#: the two knobs as the chapter names them
KNOBS = {"token": "token knob (subsampling frequent types)",
         "language": "language knob (mixture temperature)"}
SYMBOL = {"encoder": "circle", "decoder": "diamond"}
#: the x quantity of the chain figures, which rises as frequencies flatten
VOCABULARY = "effective vocabulary: 1 / collision probability of the training stream [log]"


def _level_color(x: float) -> str:
    """Colour of a level at design position ``x`` in [0, 1]: dark (skewed start) to light (flattest)."""
    return sample_colorscale(LEVEL_COLORSCALE, [0.9 * float(x)])[0]


@frozen_layout
def _chain_layout(titles: tuple, axis: str):
    # a 3 x 2 grid: six panels side by side leave each too narrow for its log axis; one x title under
    # the grid, an annotation, so that the sliders' labels go below it
    fig = make_subplots(rows=3, cols=2, horizontal_spacing=0.12, vertical_spacing=0.11,
                        subplot_titles=list(titles))
    fig.update_xaxes(**json.loads(axis))
    fig = labelled(fig, " ", "", "", legend="architecture")
    return shared_x_title(fig, VOCABULARY)


@frozen_layout
def _trajectory_layout(early_x: float):
    fig = go.Figure()
    fig.add_hline(y=0.0, line=dict(color=GREY, width=1))
    fig.add_vline(x=early_x, line=dict(color=GREY, width=1, dash="dot"))
    fig.update_xaxes(type="log")
    return labelled(fig, " ", "training step + 1 [log]", "log enrichment  ln[E(proxy) / mean E(controls)]")


def chain_interactive(table, knob: str = "token") -> Interactive:
    """Interactive: every link of the chain along one knob, against how flat the training stream is.

    Six panels share the x axis, the effective vocabulary of each run's training stream
    (1 / collision probability, log, rising to the right as frequencies flatten): the η<sub>g</sub>
    of a frequency bucket, the frozen proxy's enrichment, the mean cosine and IsoScore* of the
    activations, and how much the run learned (gain over unigram, top-1 accuracy beside the
    unigram model's). Points: runs (seeds); lines: level means. Sliders: bucket, phase.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`tanbias.lab.analysis.dose.run_table`, one row per dose run.
    knob : str
        ``"token"`` (the direct knob) or ``"language"`` (the realistic one): one figure per knob,
        each with the ticks of its own span (the language knob moves the vocabulary by a few per cent).

    Returns
    -------
    Interactive

    Raises
    ------
    ParameterError
        ``knob`` not one of :data:`KNOBS`.
    """
    check_choice("knob", knob, tuple(KNOBS))
    panels = [("log_eta", "ln η<sub>g</sub> of the bucket"), ("log_enrichment", "ln enrichment"),
              ("mean_cosine_late", "mean cosine"), ("isoscore_late", "IsoScore*"),
              ("gain", "gain over unigram [nats]"), ("accuracy", "top-1 accuracy (model, unigram dotted)")]
    buckets = [c.removeprefix("log_eta_") for c in table.columns if c.startswith("log_eta_")]
    runs = {kind: dose.knob_runs(table, knob, kind) for kind in KINDS}
    axis = json.dumps(log_axis(np.concatenate([1 / g["collision"].to_numpy() for g in runs.values()])))

    def compute(bucket, phase):
        out = {}
        for kind in KINDS:
            g = runs[kind].assign(vocabulary=1 / runs[kind]["collision"])
            cols = {"log_eta": f"log_eta_{bucket}", "log_enrichment": f"log_enrichment_{phase}",
                    "mean_cosine_late": "mean_cosine_late", "isoscore_late": "isoscore_late",
                    "gain": "gain", "accuracy": "accuracy"}
            pts = {p: (g["vocabulary"].to_numpy(), g[c].to_numpy(), g["level"].to_numpy(), g["seed"].to_numpy())
                   for p, c in cols.items()}
            means = g.groupby("level", sort=False)[["vocabulary", "unigram_accuracy", *cols.values()]].mean()
            means = means.sort_values("vocabulary")
            lines = {p: (means["vocabulary"].to_numpy(), means[c].to_numpy()) for p, c in cols.items()}
            lines["unigram_accuracy"] = (means["vocabulary"].to_numpy(), means["unigram_accuracy"].to_numpy())
            out[kind] = (pts, lines)
        return out

    def figure(data, bucket, phase):
        # plain dicts on a cached layout: make_subplots per update would cost ~100 ms
        traces = []
        for kind in KINDS:
            pts, lines = data[kind]
            for i, (p, _) in enumerate(panels, start=1):
                ax = dict(xaxis=f"x{i if i > 1 else ''}", yaxis=f"y{i if i > 1 else ''}")
                x, y, lv, seed = pts[p]
                traces.append(dict(type="scatter", x=x.tolist(), y=y.tolist(), mode="markers",
                                   name=f"{kind}: runs", legendgroup=kind, showlegend=i == 1,
                                   text=[f"{a}, seed {b}" for a, b in zip(lv, seed)],
                                   marker=dict(color=KIND_COLORS[kind], symbol=SYMBOL[kind], size=7, opacity=0.6),
                                   **ax))
                lx, ly = lines[p]
                traces.append(dict(type="scatter", x=lx.tolist(), y=ly.tolist(), mode="lines",
                                   name=f"{kind}: level means", legendgroup=kind, showlegend=i == 1,
                                   line=dict(color=KIND_COLORS[kind], width=2), **ax))
                if p == "accuracy":
                    ux, uy = lines["unigram_accuracy"]
                    traces.append(dict(type="scatter", x=ux.tolist(), y=uy.tolist(), mode="lines",
                                       name=f"{kind}: unigram model", legendgroup=kind, showlegend=False,
                                       line=dict(color=KIND_COLORS[kind], width=1, dash="dot"), **ax))
        layout = _chain_layout(tuple(t for _, t in panels), axis)
        layout["title"]["text"] = f"The chain along the {KNOBS[knob]}: bucket {bucket}, enrichment {phase}"
        return {"data": traces, "layout": layout}

    return Interactive(
        params=[Param("bucket", "frequency bucket (η<sub>g</sub> panel)", options=tuple(buckets)),
                Param("phase", "enrichment phase", options=("late", "early"))],
        compute=compute, figure=figure, title=f"The chain along the {KNOBS[knob]}",
        caption="x: the effective vocabulary of each run's own training stream, 1 / its collision probability "
                "(the chance that two random training tokens are the same type), rising to the right: "
                "frequencies flatten as you read. Panels: η<sub>g</sub> (mean t², the statement's "
                "concentration) of a fixed set of types — q1 are those frequent at the skewed start —, measured "
                "at the last layer on one common held-out text; the frozen proxy's enrichment (geometric mean "
                "over layers); the activations' mean cosine and IsoScore* at the last step; how much each run "
                "learned (its final held-out loss below an add-½ unigram model of its own training counts, and "
                "its top-1 accuracy beside the unigram model's, dotted). Points are seeds, lines join the level "
                "means.",
        name=f"ch10-chain-{knob}", height=900, fixed_ranges=False)


def trajectory_interactive(loaded: dict, proxy: str = "frozen") -> Interactive:
    """Interactive: log enrichment during training, one line per level of a knob (seed means).

    Sliders: knob, architecture, layer (``mean`` = mean over layers), frequency bucket.
    """
    a = sweep.alignment_frame(loaded, proxy)
    a["level"] = [DOSE.parse(r)[1] for r in a["run"]]
    L = int(max(x for x in a["layer"] if x != "mean"))
    buckets = tuple(dict.fromkeys(a["bucket"]))
    total = next(iter(loaded.values())).config.steps
    st = a.groupby(["layer", "bucket", "kind", "level", "step"], sort=False)["log_enrichment"].mean()
    curves = {k: g.droplevel([0, 1, 2, 3]) for k, g in st.groupby(level=[0, 1, 2, 3], sort=False)}
    n_max = max(len(dose_design.level_positions(k)) for k in KNOBS)

    def compute(knob, kind, layer, bucket):
        out = []
        for level, x in dose_design.level_positions(knob).items():
            c = curves.get((layer, bucket, kind, level))
            out.append((level, x, (c.index.to_numpy() + 1, c.to_numpy()) if c is not None else
                        (np.empty(0), np.empty(0))))
        return out + [("", 0.0, (np.empty(0), np.empty(0)))] * (n_max - len(out))

    def figure(data, knob, kind, layer, bucket):
        traces = [dict(type="scatter", x=s_.tolist(), y=y.tolist(), mode="lines+markers", name=level or " ",
                       showlegend=bool(level), line=dict(color=_level_color(x), width=2), marker=dict(size=5))
                  for level, x, (s_, y) in data]
        layout = _trajectory_layout(EARLY_FRAC * total + 1)
        lname = "mean over layers" if layer == "mean" else f"layer {layer}"
        layout["title"]["text"] = f"Log enrichment during training, {kind}, {lname}, tokens: {bucket}"
        layout["legend"] = {**layout.get("legend", {}), "title": {"text": f"level of the {knob} knob"}}
        return {"data": traces, "layout": layout}

    return Interactive(
        params=[Param("knob", "knob", options=tuple(KNOBS)),
                Param("kind", "architecture", options=KINDS, default="decoder"),
                Param("layer", "layer (0 = embeddings)", options=("mean", *range(L + 1)), default="mean"),
                Param("bucket", "frequency bucket", options=buckets)],
        compute=compute, figure=figure, title="Enrichment during training, by level",
        caption="Each line: the mean over seeds of one level of the knob (dark = the skewed start, light = "
                "the flattest level). Frozen proxy (PCA of the activations of the first 30 % of training, "
                "dotted line). 0 = what a random subspace of the same rank gets.",
        name="ch10-trajectories", height=480)


def adaptive_figure(frame, early_frac: float = EARLY_FRAC) -> go.Figure:
    """Held-out loss against effective dimension within a (kind, level, step) cell: what is left across
    seeds, early and late in training apart (exploratory), each in its own within-cell SD."""
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1,
                        subplot_titles=[f"early: step ≤ {early_frac:.0%} of training", "late: after it"])
    cell = list(dose.ADAPTIVE_CELL)
    for col, early in ((1, True), (2, False)):
        f = frame[(frame["frac"] <= early_frac) == early] if len(frame) else frame
        sd = dose.within_cell_sd(f) if len(f) else np.nan
        for kind in KINDS:
            g = f[f["kind"] == kind] if len(f) else f
            if not len(g):
                fig.add_trace(go.Scatter(x=[], y=[], mode="markers", name=kind, showlegend=col == 1), row=1, col=col)
                continue
            dx = (g["participation"] - g.groupby(cell)["participation"].transform("mean")) / sd
            dy = g["heldout_loss"] - g.groupby(cell)["heldout_loss"].transform("mean")
            fig.add_trace(go.Scatter(x=dx, y=dy, mode="markers", name=kind, legendgroup=kind, showlegend=col == 1,
                                     text=[f"{lv}, step {s}, seed {sd_}" for lv, s, sd_ in
                                           zip(g["level"], g["step"], g["seed"])],
                                     marker=dict(color=KIND_COLORS[kind], symbol=SYMBOL[kind], size=6, opacity=0.6)),
                          row=1, col=col)
        fig.add_hline(y=0.0, line=dict(color=GREY, width=1), row=1, col=col)
        fig.add_vline(x=0.0, line=dict(color=GREY, width=1), row=1, col=col)
    labelled(fig, "Within a level and a step: effective dimension against held-out loss (exploratory split)",
             "", "held-out loss − its cell mean [nats]", legend="architecture")
    return shared_x_title(fig, "participation ratio − its cell mean [within-cell SDs]")


def progress_figure(table) -> go.Figure:
    """Late enrichment against how much each run learned (gain over unigram), along the direct knob.

    One panel per architecture; points are runs, coloured by the knob's level (dark = the
    skewed start, light = the flattest level). A knob effect at matched training progress is a
    vertical offset between levels at the same gain.
    """
    fig = make_subplots(rows=1, cols=len(KINDS), horizontal_spacing=0.1, subplot_titles=list(KINDS))
    pos = dose_design.level_positions("token")
    for col, kind in enumerate(KINDS, start=1):
        g = dose.knob_runs(table, "token", kind)
        for level, x in pos.items():
            h = g[g["level"] == level]
            fig.add_trace(go.Scatter(x=h["gain"], y=h["log_enrichment_late"], mode="markers", name=level,
                                     legendgroup=level, showlegend=col == 1,
                                     text=[f"{kind}, {level}, seed {s}" for s in h["seed"]],
                                     marker=dict(color=_level_color(x), symbol=SYMBOL[kind], size=9)),
                          row=1, col=col)
    fig.update_xaxes(title_text="gain over unigram [nats]")
    return labelled(fig, "Late enrichment against training progress, direct knob", "gain over unigram [nats]",
                    "ln late enrichment (frozen proxy)", legend="level of the token knob")
