"""Figures of committed training runs: chapter 7, and the trained views of chapters 5 and 6.

Everything here reads committed run folders (:mod:`tanbias.lab.runs`) and the
numbers of :mod:`tanbias.lab.analysis` and never trains.

* :func:`loss_figure` — training loss against the unigram baseline;
* :func:`alignment_interactive` — enrichment (log axis) and excess ΔIsoScore* against
  the training step, sliders over layer and bucket;
* :func:`layer_interactive` — the same by layer, slider over the training step;
* :func:`radius_interactive` — concentration radius against token frequency;
* :func:`trained_attention_view` (chapter 5) and :func:`trained_depth_view`
  (chapter 6) — the chapters' simulated pictures redrawn from a trained model,
  from ``views.json`` (:func:`tanbias.lab.analysis.views.load_views`).
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from tanbias.figures.attention import softmax_terms_figure
from tanbias.figures import BLACK, FAINT_GREY, GREY, KIND_COLORS, labelled
from tanbias.figures.interactive import Interactive, Param
from tanbias.lab.analysis.views import load_views
from tanbias.numerals import format_spec

__all__ = ["loss_figure", "alignment_interactive", "layer_interactive", "radius_interactive",
           "trained_attention_view", "trained_depth_view"]

DASH = {"frozen": "solid", "refit": "dash", "local": "dot"}
PROXY_LABEL = {"frozen": "global PCA, frozen at 30 %", "refit": "global PCA, refit each step",
               "local": "local (per-token) PCA"}


def _fig(title, x, y):
    fig = go.Figure()
    return fig, (lambda f: labelled(f, title, x, y, legend="model, proxy"))


def loss_figure(loaded: dict) -> go.Figure:
    """Training loss per step for each run, with its unigram baseline (dotted)."""
    fig, label = _fig("Training loss (per step) against the unigram baseline", "training step",
                      "cross-entropy [nats/token]")
    for name, r in loaded.items():
        k = r.config.kind
        m = r.metrics
        fig.add_trace(go.Scatter(x=m["step"], y=m["loss"], name=f"{name} (train)", mode="lines",
                                 line=dict(color=KIND_COLORS[k])))
        if r.evaluation:
            fig.add_trace(go.Scatter(x=[0, m["step"].max()], y=[r.evaluation["unigram_loss"]] * 2,
                                     name=f"{name}: unigram baseline", mode="lines",
                                     line=dict(color=KIND_COLORS[k], dash="dot")))
            fig.add_trace(go.Scatter(x=[m["step"].max()], y=[r.evaluation["loss"]], mode="markers",
                                     name=f"{name}: held-out loss", marker=dict(color=KIND_COLORS[k], size=10,
                                                                                 symbol="diamond")))
    return label(fig)


def _log_range(values, include: float = 1.0, pad: float = 0.08) -> list[float]:
    """A log axis range (in decades, as plotly wants it) holding every positive value and ``include``."""
    v = np.asarray(values, float)
    v = v[np.isfinite(v) & (v > 0)]
    lo, hi = np.log10(min(v.min(initial=include), include)), np.log10(max(v.max(initial=include), include))
    span = max(hi - lo, 0.1)
    return [float(lo - pad * span), float(hi + pad * span)]


def _linear_range(values, include: float = 0.0, pad: float = 0.06) -> list[float]:
    """A linear axis range holding every finite value and ``include``."""
    v = np.asarray(values, float)
    v = v[np.isfinite(v)]
    lo, hi = min(v.min(initial=include), include), max(v.max(initial=include), include)
    span = max(hi - lo, 1e-9)
    return [float(lo - pad * span), float(hi + pad * span)]


def alignment_interactive(loaded: dict, proxies=("frozen", "refit", "local")) -> Interactive:
    """Interactive: enrichment (top, log axis) and excess ΔIsoScore* (bottom) against the training step.

    Sliders: layer and frequency bucket. Enrichment is a ratio, so its axis is logarithmic, and
    its reference (a random subspace, 1) is always inside the range, as is the excess's (0): both
    ranges are fixed to every layer's and bucket's values, so a slider move never rescales.

    Parameters
    ----------
    loaded : dict
        ``{name: RunData}`` of committed runs (:func:`tanbias.lab.analysis.sweep.load_runs`).
    proxies : tuple of str
        Which tangent proxies to draw (``"frozen"``, ``"refit"``, ``"local"``).

    Returns
    -------
    tanbias.figures.interactive.Interactive
    """
    tables = {}
    for name, r in loaded.items():
        a = r.alignment[r.alignment["proxy"].isin(proxies)].copy()
        a["excess_iso"] = a["d_iso_proxy"] - a["d_iso_control_mean"]
        tables[name] = a
    any_a = next(iter(tables.values()))
    L = int(any_a["layer"].max())
    buckets = tuple(dict.fromkeys(any_a["bucket"]))
    enrichment_range = _log_range(np.concatenate([a["enrichment"].to_numpy() for a in tables.values()]), 1.0)
    excess_range = _linear_range(np.concatenate([a["excess_iso"].to_numpy() for a in tables.values()]), 0.0)

    def compute(layer, bucket):
        out = {}
        for name, a in tables.items():
            for proxy in proxies:
                g = a[(a["layer"] == layer) & (a["bucket"] == bucket) & (a["proxy"] == proxy)]
                g = g.sort_values("step")
                out[name, proxy] = (g["step"].to_numpy() + 1, g["enrichment"].to_numpy(),
                                    g["excess_iso"].to_numpy())
        return out

    def figure(data, layer, bucket):
        fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08, row_heights=[0.62, 0.38])
        for (name, proxy), (x, enrichment, excess) in data.items():
            kind = loaded[name].config.kind
            style = dict(color=KIND_COLORS[kind], dash=DASH[proxy])
            label = f"{kind}, {PROXY_LABEL[proxy]}"
            fig.add_trace(go.Scatter(x=x, y=enrichment, mode="lines+markers", name=label, legendgroup=label,
                                     line=style, marker=dict(size=5)), row=1, col=1)
            fig.add_trace(go.Scatter(x=x, y=excess, mode="lines+markers", name=label, legendgroup=label,
                                     showlegend=False, line=style, marker=dict(size=4)), row=2, col=1)
        for row, ref in ((1, 1.0), (2, 0.0)):
            fig.add_hline(y=ref, line=dict(color=GREY, width=1.5, dash="dot"), row=row, col=1)
            # an annotation on a log axis is placed in decades: log10(1) = 0 is the line at 1
            fig.add_annotation(text=f"random subspace: {ref:g}", x=1, xref="x domain", y=0.0,
                               yref="y" if row == 1 else "y2", showarrow=False, xanchor="right",
                               yanchor="bottom", font=dict(color=GREY, size=12))
        fig.update_xaxes(type="log")
        fig.update_xaxes(title_text="training step + 1 [log]", row=2, col=1)
        fig.update_yaxes(type="log", range=enrichment_range, title_text="enrichment [log]", row=1, col=1)
        fig.update_yaxes(range=excess_range, title_text="excess ΔIsoScore*", row=2, col=1)
        # the legend above the panels, in two rows: at the side it would take a third of the width
        fig.update_layout(title=dict(text=f"Gradient energy in the proxy during training, layer {layer}, "
                                          f"tokens: {bucket}", y=0.985, yref="container", yanchor="top"),
                          legend_title_text="model, proxy",
                          legend=dict(orientation="h", x=0.0, y=1.02, xanchor="left", yanchor="bottom"),
                          margin=dict(t=170))
        return fig

    return Interactive(
        params=[Param("layer", "layer (0 = embeddings)", 0, L, default=L // 2 + 1 if L > 1 else 0,
                      integer=True, steps=L + 1),
                Param("bucket", "frequency bucket", options=buckets)],
        compute=compute, figure=figure, title="Gradient-tangent alignment during training",
        caption="Each point is one probe step (log-spaced, step 0 = untrained model). Top: enrichment, "
                "the proxy's share of the gradient energy over a random subspace's, on a log axis; "
                "bottom: how much more projecting out the proxy raises IsoScore* than a random "
                "subspace does. Dotted grey lines: what a random subspace gives (1 and 0). Solid: the "
                "paper's proxy (PCA of activations from the first 30 % of training, frozen); dashed: "
                "refit at each step; dotted: per-token local PCA.",
        name="ch7-alignment-vs-step", height=620)


def layer_interactive(loaded: dict, proxy: str = "frozen") -> Interactive:
    """Interactive: enrichment against the layer, one curve per run and bucket; slider: step."""
    tables = {n: r.alignment[r.alignment["proxy"] == proxy] for n, r in loaded.items()}
    steps = sorted(set.intersection(*(set(t["step"]) for t in tables.values())))
    buckets = [b for b in dict.fromkeys(next(iter(tables.values()))["bucket"]) if b != "all"]
    dashes = ["solid", "dash", "dot", "dashdot"]

    def compute(step):
        return {(n, b): t[(t["step"] == step) & (t["bucket"] == b)].sort_values("layer")
                [["layer", "enrichment"]].to_numpy().T for n, t in tables.items() for b in buckets}

    def figure(data, step):
        fig, label = _fig(f"Enrichment by layer and frequency bucket at step {step} ({PROXY_LABEL[proxy]})",
                          "layer (0 = embeddings)", "enrichment [log]")
        for (n, b), (x, y) in data.items():
            kind = loaded[n].config.kind
            fig.add_trace(go.Scatter(x=x, y=y, mode="lines+markers", name=f"{kind}, {b}",
                                     line=dict(color=KIND_COLORS[kind], dash=dashes[buckets.index(b) % 4])))
        fig.add_hline(y=1.0, line=dict(color=GREY, width=1))
        fig.update_yaxes(type="log")
        return label(fig)

    return Interactive(
        params=[Param("step", "training step", options=tuple(int(s) for s in steps),
                      default=int(steps[-1]))],
        compute=compute, figure=figure, title="Enrichment by layer and frequency bucket",
        caption="Buckets hold equal shares of the token occurrences: q1 a few dozen very frequent "
                "types, the last one the long tail. Move the step to see when the pattern forms.",
        name="ch7-alignment-by-layer", height=480)


def radius_interactive(loaded: dict) -> Interactive:
    """Interactive: each frequent token's concentration radius against its frequency; sliders layer, step."""
    rad = {n: r.radius for n, r in loaded.items()}
    corr = {n: r.radius_corr for n, r in loaded.items()}
    any_r = next(iter(rad.values()))
    L = int(any_r["layer"].max())
    steps = sorted(set.intersection(*(set(t["step"]) for t in rad.values())))
    show = tuple(int(s) for s in steps[:: max(1, len(steps) // 6)]) + ((int(steps[-1]),) if
                                                                      steps[-1] not in steps[:: max(1, len(steps) // 6)] else ())

    def compute(layer, step):
        out = {}
        for n, t in rad.items():
            g = t[(t["layer"] == layer) & (t["step"] == step) & (t["radius"] > 0)]
            c = corr[n][(corr[n]["layer"] == layer) & (corr[n]["step"] == step)]
            med = float(np.median(g["radius"])) if len(g) else 1.0
            out[n] = (g["corpus_count"].to_numpy(), g["radius"].to_numpy() / med,
                      float(c["spearman"].iloc[0]) if len(c) else float("nan"))
        return out

    def figure(data, layer, step):
        txt = ", ".join(f"{loaded[n].config.kind} ρ = {format_spec(s, '+.2f')}" for n, (_, _, s) in data.items())
        fig, label = _fig(f"Concentration radius vs frequency, layer {layer}, step {step}: Spearman {txt}",
                          "token count in the run's training stream [log]",
                          "radius / median radius [log]")
        for n, (x, y, _) in data.items():
            kind = loaded[n].config.kind
            fig.add_trace(go.Scatter(x=x, y=y, mode="markers", name=kind,
                                     marker=dict(color=KIND_COLORS[kind], size=6, opacity=0.7)))
        fig.update_xaxes(type="log")
        fig.update_yaxes(type="log")
        return label(fig)

    return Interactive(
        params=[Param("layer", "layer (0 = embeddings)", 0, L, default=L, integer=True, steps=L + 1),
                Param("step", "training step", options=show, default=show[-1])],
        compute=compute, figure=figure, title="Frequency and concentration radius",
        caption="One point per token type with at least min_count occurrences in the probed batch: "
                "the RMS distance of its occurrences to their centroid (divided by the median over "
                "tokens, so layers are comparable). The paper reports a negative correlation "
                "(about −0.5 for decoders): frequent tokens concentrate more tightly.",
        name="ch7-radius", height=480)


def trained_attention_view(run="decoder-natural-s0") -> Interactive:
    """Chapter 5's score-term bars, from a trained model: slider over the block.

    Returns
    -------
    tanbias.figures.interactive.Interactive
    """
    v = load_views(run)
    by_layer = {a["layer"]: a for a in v["attention"]}
    # Block 1 reads the token embedding, which is the same vector for every
    # occurrence of a token: no spread around the centroid, every term is 0.
    # The default view is the first block whose input varies with context.
    first = min((l for l, a in by_layer.items() if a["t"] > 0), default=min(by_layer))

    def compute(layer):
        return by_layer[layer]

    def figure(data, layer):
        if data["t"] == 0:
            title = (f"Trained {v['run']}, block {layer}: its input is the context-free token "
                     "embedding, identical at every occurrence, so there is nothing to split")
        else:
            title = (f"Trained {v['run']}, block {layer}, head 0: removing n moves the attention by "
                     f"{data['tv_normal']:.2g}, removing v by {data['tv_tangent']:.2g} (TV)")
        return softmax_terms_figure(data, title=title)

    return Interactive(
        params=[Param("layer", "block", options=tuple(sorted(by_layer)), default=first)],
        compute=compute, figure=figure, title="Score terms in a trained model",
        caption=(f"The same bars as above, from the trained {v['run']} (last probe step): queries and "
                 f"keys are the occurrences of its {v['attention'][0]['n_types']} most frequent token "
                 f"types at each block's attention input; μ is the token's centroid, v its part in the "
                 f"token's own rank-{v['local_rank']} PCA (local tangent proxy), n everything else "
                 "(so n is not small here). Scores at relative position 0 (RoPE ignored). The 'orders "
                 "in t' of the labels belong to the simulated manifold, not to this data. Block 1 shows no "
                 "bars: its input is the context-free token embedding, identical for every occurrence."),
        name="ch5-trained-attention", height=460)


def trained_depth_view(run="decoder-natural-s0") -> Interactive:
    """Chapter 6's residual-stream picture, from a trained model: sliders layer and step.

    Tangent = the layer's frozen global proxy (rank-``r`` PCA of activations from
    the first 30 % of training), normal = its complement.
    """
    v = load_views(run)
    by_step = {d["step"]: d for d in v["depth"]}
    steps = tuple(sorted(by_step))
    L = len(v["depth"][0]["normal_share"]) - 1

    def compute(layer, step):
        d = by_step[step]
        return {"t0": d["tangent"][0], "n0": d["normal"][0], "t": d["tangent"][layer],
                "n": d["normal"][layer], "share": d["normal_share"]}

    # the two panels' layout, written out as make_subplots(1, 2, column_widths=[0.55, 0.45],
    # horizontal_spacing=0.12, subplot_titles=...) would build it: that call and the axis
    # updates after it cost about 10 ms of each slider move (half the figure's time)
    spacing = 0.12
    width0 = 0.55 * (1 - spacing)
    domains = ([0.0, width0], [width0 + spacing, 1.0])
    titles = ("tokens: tangent vs normal norm", "normal share of the stream")
    panels = dict(
        xaxis=dict(domain=domains[0], anchor="y", type="log", title=dict(text="||P<sub>T</sub>(h − mean)|| [log]")),
        yaxis=dict(domain=[0.0, 1.0], anchor="x", type="log", title=dict(text="||P<sub>N</sub>(h − mean)|| [log]")),
        xaxis2=dict(domain=domains[1], anchor="y2", title=dict(text="layer (0 = embeddings)")),
        yaxis2=dict(domain=[0.0, 1.0], anchor="x2", title=dict(text="normal share")),
        annotations=[dict(text=t, x=(d[0] + d[1]) / 2, y=1.0, xref="paper", yref="paper", xanchor="center",
                          yanchor="bottom", showarrow=False, font=dict(size=16))
                     for t, d in zip(titles, domains)],
        legend=dict(orientation="h", x=0.0, y=1.09, yanchor="bottom"), margin=dict(t=150))

    def figure(data, layer, step):
        traces = [
            go.Scatter(x=data["t0"], y=data["n0"], mode="markers", name="tokens at layer 0",
                       marker=dict(size=5, color=FAINT_GREY)),
            go.Scatter(x=data["t"], y=data["n"], mode="markers", name="tokens at the chosen layer",
                       marker=dict(size=6, color=KIND_COLORS["encoder"], opacity=0.7)),
            go.Scatter(x=list(range(L + 1)), y=data["share"], mode="lines+markers", name="normal share",
                       line=dict(color=KIND_COLORS["decoder"]), xaxis="x2", yaxis="y2"),
            go.Scatter(x=[layer], y=[data["share"][layer]], mode="markers", name="chosen layer",
                       marker=dict(size=11, color=BLACK), xaxis="x2", yaxis="y2")]
        title = dict(text=f"Trained {v['run']}, step {step}, layer {layer}: normal share "
                          f"{data['share'][layer]:.2f} (rank-{v['rank']} proxy)")
        return go.Figure(data=traces, layout=dict(panels, title=title))

    return Interactive(
        params=[Param("layer", "layer l", 0, L, default=L, integer=True, steps=L + 1),
                Param("step", "training step", options=steps, default=steps[-1])],
        compute=compute, figure=figure, title="Residual stream of a trained model",
        caption=(f"As in the simulated stack above, but from {v['run']}: each layer's tangent proxy is "
                 f"the rank-{v['rank']} PCA of its activations early in training, 'normal' is the rest "
                 f"of R^D. Here the normal part is most of the energy (D is large and r small): compare "
                 "the share across layers and steps, not with the simulation's absolute values."),
        name="ch6-trained-depth", height=540)
