"""Figures of the 2x2 sweep (chapter 8) and the closing page's forest plot.

The numbers come from :mod:`tanbias.lab.analysis.sweep`; this module only draws.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from tanbias.figures import BLACK, COLORS, GREY, KIND_COLORS, LIGHT_GREY, frozen_layout, labelled
from tanbias.figures.interactive import Interactive, Param
from tanbias.lab.analysis import sweep
from tanbias.lab.analysis.registered import t_interval
from tanbias.lab.analysis.tables import bucket_label, run_cell, run_metrics, tokens_table
from tanbias.lab.config import EARLY_FRAC, KINDS, REGIMES

__all__ = ["trajectory_interactive", "cells_interactive", "eta_interactive", "radius_cdf_interactive",
           "frequency_figure", "effects_figure"]

DASH = {"natural": "solid", "balanced": "dash"}
SYMBOL = {"natural": "circle", "balanced": "diamond-open"}
METRICS = {"log_enrichment": "log enrichment  ln[E(Q<sub>T</sub>) / mean E(controls)]",
           "excess_iso": "excess ΔIsoScore*  (proxy − mean of controls)"}


def _label(fig, title, x, y, legend="cell"):
    return labelled(fig, title, x, y, legend=legend)


@frozen_layout
def _trajectory_layout(early_x: float, ylabel: str):
    fig = go.Figure()
    fig.add_hline(y=0.0, line=dict(color=GREY, width=1))
    fig.add_vline(x=early_x, line=dict(color=GREY, width=1, dash="dot"))
    fig.update_xaxes(type="log")
    return _label(fig, " ", "training step + 1 [log]", ylabel)


def trajectory_interactive(loaded: dict, proxy: str = "frozen") -> Interactive:
    """Interactive: a metric against training step, the 4 cells' seed means with 95 % bands.

    Sliders: layer (``mean`` = mean over layers), frequency bucket, metric.
    """
    a = sweep.alignment_frame(loaded, proxy)
    L = int(max(x for x in a["layer"] if x != "mean"))
    layers = ("mean", *range(L + 1))
    buckets = tuple(dict.fromkeys(a["bucket"]))
    steps_total = next(iter(loaded.values())).config.steps

    # every (layer, bucket, metric, cell) curve computed once: a slider move is then a lookup
    curves = {}
    for metric in METRICS:
        st = sweep.summarise(a, ["layer", "bucket", "kind", "regime", "step"], metric)
        for (layer, bucket, kind, regime), g in st.groupby(["layer", "bucket", "kind", "regime"], sort=False):
            g = g.sort_values("step")
            curves[layer, bucket, metric, kind, regime] = (
                (g["step"].to_numpy() + 1).tolist(), g["mean"].tolist(), g["lo"].to_numpy(), g["hi"].to_numpy())
    empty = ([], [], np.empty(0), np.empty(0))

    def compute(layer, bucket, metric):
        return {c: curves.get((layer, bucket, metric, *c), empty) for c in sweep.cells()}

    def figure(data, layer, bucket, metric):
        # plain dicts on a cached layout (a go.Figure per update cost ~25 ms)
        lname = "mean over layers" if layer == "mean" else f"layer {layer}"
        traces = []
        for kind, regime in sweep.cells():
            x, m, lo, hi = data[kind, regime]
            ok = np.isfinite(lo)
            xs = np.asarray(x)[ok]
            traces.append(dict(type="scatter", x=np.concatenate([xs, xs[::-1]]).tolist(),
                               y=np.concatenate([hi[ok], lo[ok][::-1]]).tolist(), fill="toself",
                               line=dict(width=0), fillcolor=KIND_COLORS[kind],
                               opacity=0.12 if regime == "natural" else 0.08, hoverinfo="skip",
                               showlegend=False, mode="lines"))
            traces.append(dict(type="scatter", x=x, y=m, mode="lines+markers", name=f"{kind}, {regime}",
                               line=dict(color=KIND_COLORS[kind], dash=DASH[regime]),
                               marker=dict(symbol=SYMBOL[regime], size=6)))
        layout = _trajectory_layout(EARLY_FRAC * steps_total + 1, METRICS[metric])
        layout["title"]["text"] = (f"{'Log enrichment' if metric == 'log_enrichment' else 'Excess ΔIsoScore*'}"
                                   f" during training, {lname}, tokens: {bucket}")
        return {"data": traces, "layout": layout}

    return Interactive(
        params=[Param("layer", "layer (0 = embeddings)", options=layers, default="mean"),
                Param("bucket", "frequency bucket", options=buckets),
                Param("metric", "metric", options=tuple(METRICS),
                      fmt={"log_enrichment": "log enrichment", "excess_iso": "excess ΔIsoScore*"}.get)],
        compute=compute, figure=figure, title="The four cells during training",
        caption="Lines: mean over seeds of each cell (blue encoder, orange decoder; solid natural "
                "mixture, dashed balanced); bands: 95 % t-interval over seeds. The proxy is the "
                "paper's (PCA of activations from the first 30 % of training, frozen; dotted line). "
                "Grey line: a random subspace (log enrichment 0, excess 0).",
        name="ch8-trajectories", height=520)


@frozen_layout
def _cells_layout():
    fig = go.Figure()
    fig.add_hline(y=0.0, line=dict(color=GREY, width=1))
    fig.update_xaxes(categoryorder="array", categoryarray=[f"{k}, {g}" for k, g in sweep.cells()])
    return _label(fig, " ", "cell (architecture, data regime)", METRICS["log_enrichment"])


def cells_interactive(loaded: dict, proxy: str = "frozen") -> Interactive:
    """Interactive: the four cells at one training step, seeds as points, mean and 95 % interval.

    Sliders: training step, layer, bucket.
    """
    a = sweep.alignment_frame(loaded, proxy)
    all_steps = sorted(set(int(s) for s in a["step"]))
    # every other probe step and the last: the trajectories show every step already
    steps = tuple(dict.fromkeys([*all_steps[::2], all_steps[-1]]))
    L = int(max(x for x in a["layer"] if x != "mean"))
    buckets = tuple(dict.fromkeys(a["bucket"]))

    # one pass of groupby instead of a filter per frame (the static figure has ~300 frames)
    lookup = {key: g.sort_values("seed")["log_enrichment"].to_numpy()
              for key, g in a.groupby(["step", "layer", "bucket", "kind", "regime"], sort=False)}
    empty = np.empty(0)

    def compute(step, layer, bucket):
        return {c: lookup.get((step, layer, bucket, *c), empty) for c in sweep.cells()}

    def figure(data, step, layer, bucket):
        # plain dicts on a cached layout: this figure has ~200 static frames
        traces = []
        for kind, regime in sweep.cells():
            y = data[kind, regime]
            mean, lo, hi, n = t_interval(y)
            name = f"{kind}, {regime}"
            traces.append(dict(type="scatter", x=[name] * len(y), y=y.tolist(), mode="markers",
                               name=f"{name}: seeds", showlegend=False,
                               marker=dict(color=KIND_COLORS[kind], symbol=SYMBOL[regime], size=9)))
            traces.append(dict(type="scatter", x=[name], y=[mean], mode="markers", name=name,
                               error_y=dict(type="data", symmetric=False,
                                            array=[hi - mean if np.isfinite(hi) else 0],
                                            arrayminus=[mean - lo if np.isfinite(lo) else 0]),
                               marker=dict(color=KIND_COLORS[kind], symbol="line-ew-open", size=26,
                                           line=dict(width=3, color=KIND_COLORS[kind]))))
        layout = _cells_layout()
        lname = "mean over layers" if layer == "mean" else f"layer {layer}"
        layout["title"]["text"] = f"Log enrichment at step {step}, {lname}, tokens: {bucket}"
        return {"data": traces, "layout": layout}

    return Interactive(
        params=[Param("step", "training step", options=steps, default=steps[-1]),
                Param("layer", "layer (0 = embeddings)", options=("mean", *range(L + 1)),
                      default="mean"),
                Param("bucket", "frequency bucket", options=buckets)],
        compute=compute, figure=figure, title="The 2×2 at one training step",
        caption="Points: seeds. Bars: the cell mean and its 95 % t-interval over seeds. "
                "0 = what a random subspace of the same rank gets.",
        name="ch8-cells", height=460)


def eta_interactive(loaded: dict, proxy: str = "frozen") -> Interactive:
    """Interactive: a bucket's late enrichment against its implied eta_g, one point per run and bucket.

    Sliders: layer, data regime shown, and the bucket whose eta_g is highlighted.
    """
    eta = sweep.eta_by_bucket(loaded)
    met = run_metrics(loaded)
    met = met[(met["proxy"] == proxy) & (met["phase"] == "late") & (met["bucket"] != "all")]
    met = met[met["layer"] != "mean"].astype({"layer": int})
    j = eta.merge(met, on=["run", "kind", "regime", "seed", "layer", "bucket"])
    L = int(j["layer"].max())
    buckets = tuple(sorted(set(j["bucket"])))

    def compute(layer, regime, bucket):
        g = j[j["layer"] == layer]
        return {c: g[(g["kind"] == c[0]) & (g["regime"] == c[1])][["eta", "log_enrichment", "bucket", "seed"]]
                .to_numpy() if regime in ("both", c[1]) else np.empty((0, 4), object) for c in sweep.cells()}

    def figure(data, layer, regime, bucket):
        fig = go.Figure()
        for (kind, reg), arr in data.items():   # one trace per cell, empty when filtered out
            sel = arr[:, 2] == bucket
            fig.add_trace(go.Scatter(
                x=arr[:, 0].astype(float), y=arr[:, 1].astype(float), mode="markers",
                name=f"{kind}, {reg}", text=[f"{b}, seed {s}" for b, s in zip(arr[:, 2], arr[:, 3])],
                marker=dict(color=KIND_COLORS[kind], symbol=SYMBOL[reg],
                            size=[14 if s else 7 for s in sel], line=dict(width=1, color=KIND_COLORS[kind]))))
        fig.add_hline(y=0.0, line=dict(color=GREY, width=1))
        fig.update_xaxes(type="log")
        return _label(fig, f"Late enrichment against a bucket's implied η<sub>g</sub>, layer {layer} "
                      f"(large markers: {bucket})", "implied η<sub>g</sub> of the bucket = mean t² [log]",
                      METRICS["log_enrichment"])

    return Interactive(
        params=[Param("layer", "layer", 1, L, default=L, integer=True, steps=L),
                Param("regime", "data regime", options=("both", *REGIMES)),
                Param("bucket", "highlighted bucket", options=("none", *buckets),
                      default=buckets[0])],
        compute=compute, figure=figure, title="Enrichment and the η<sub>g</sub> of a frequency bucket",
        caption="One point per (run, frequency bucket): x = the bucket's implied η<sub>g</sub> "
                "(occurrence-weighted mean squared concentration radius t², t in units of the "
                "layer's overall spread, measured on one common held-out text), y = the bucket's "
                "log enrichment at the last probe step. The hypothesis predicts smaller "
                "η<sub>g</sub> (tighter tokens) with larger enrichment.",
        name="ch8-eta", height=500)


def radius_cdf_interactive(loaded: dict) -> Interactive:
    """Interactive: distribution of the per-token radius t, natural vs balanced; sliders kind, layer, bucket."""
    tok = tokens_table(loaded)
    L = int(tok["layer"].max())
    n_b = next(iter(loaded.values())).config.probe.n_buckets
    labels = {bucket_label(b, n_b): b for b in range(n_b)}

    def compute(kind, layer, bucket):
        g = tok[(tok["kind"] == kind) & (tok["layer"] == layer)]
        if bucket != "all":
            g = g[g["bucket"] == labels[bucket]]
        out = {}
        for regime in REGIMES:
            h = g[g["regime"] == regime]
            t = h["t"].to_numpy()
            w = h["count_text"].to_numpy(np.float64)
            o = np.argsort(t)
            t, c = t[o], np.cumsum(w[o]) / max(w.sum(), 1)
            # at most ~200 steps of the CDF: the page carries 32 frames of 2 curves
            keep = np.unique(np.searchsorted(c, np.linspace(0, 1, 201)).clip(0, max(len(c) - 1, 0)))
            out[regime] = (t[keep], c[keep]) if len(c) else (t, c)
        return out

    def figure(data, kind, layer, bucket):
        fig = go.Figure()
        for regime, (t, c) in data.items():
            fig.add_trace(go.Scatter(x=t, y=c, mode="lines", name=regime, line_shape="hv",
                                     line=dict(color=KIND_COLORS[kind], dash=DASH[regime])))
        fig.update_xaxes(type="log")
        return _label(fig, f"Per-token radius t, {kind}s, layer {layer}, tokens: {bucket}",
                      "t = RMS distance to the token's centroid / layer spread [log]",
                      "share of occurrences with radius ≤ t", legend="data regime")

    return Interactive(
        params=[Param("kind", "architecture", options=KINDS),
                Param("layer", "layer", 1, L, default=L, integer=True, steps=L),
                Param("bucket", "frequency bucket", options=("all", *labels))],
        compute=compute, figure=figure, title="How tightly tokens concentrate, by data regime",
        caption="Cumulative distribution of the concentration radius t over token occurrences, "
                "pooled over seeds, measured on the same held-out text for every run. A curve "
                "further left means more occurrences at small t (tighter tokens).",
        name="ch8-radius", height=460)


def frequency_figure(loaded: dict) -> go.Figure:
    """Rank-frequency curves of the training streams, one line per run."""
    fig = go.Figure()
    shown = set()
    for name, r in loaded.items():
        kind, regime, seed = run_cell(r)
        if kind != "decoder":      # both kinds read the same streams per (regime, seed)
            continue
        x, y = sweep.rank_frequency(r.token_counts)
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=regime, legendgroup=regime,
                                 showlegend=regime not in shown,
                                 line=dict(color=COLORS[2] if regime == "natural" else COLORS[3],
                                           dash=DASH[regime])))
        shown.add(regime)
    fig.update_xaxes(type="log")
    fig.update_yaxes(type="log")
    return _label(fig, "Token frequency seen in training, by data regime (one line per seed)",
                  "rank of the token type [log]", "share of training tokens [log]", legend="data regime")


def effects_figure(eff, tim=None, layer="mean", bucket="all", proxy="frozen") -> go.Figure:
    """Forest plot: every seed-paired contrast of log enrichment as a ratio with its 95 % interval.

    Early and late phases side by side; with ``tim`` (:func:`~tanbias.lab.analysis.sweep.timing`), one more
    row: the last step's enrichment over the run's peak.
    """
    e = eff[(eff["layer"] == layer) & (eff["bucket"] == bucket) & (eff["proxy"] == proxy)
            & (eff["metric"] == "log_enrichment") & eff["phase"].isin(["early", "late"])]
    order = list(sweep.CONTRASTS)
    fig = go.Figure()
    for phase, color, dy in (("early", LIGHT_GREY, -0.15), ("late", BLACK, 0.15)):
        g = e[e["phase"] == phase].set_index("contrast").reindex(order)
        y = np.arange(len(order)) + dy
        fig.add_trace(go.Scatter(
            x=np.exp(g["mean"]), y=y, mode="markers", name=f"{phase} in training",
            marker=dict(color=color, size=9),
            error_x=dict(type="data", symmetric=False, array=np.exp(g["hi"]) - np.exp(g["mean"]),
                         arrayminus=np.exp(g["mean"]) - np.exp(g["lo"]), color=color)))
    pretty = {"interaction": "interaction (1 if effects add)", "architecture | natural": "architecture, natural data",
              "architecture | balanced": "architecture, balanced data"}
    labels = [pretty.get(c, c.replace(" | ", " within ")) for c in order]
    if tim is not None:
        m, lo, hi, n = t_interval(tim["log_late_over_peak"])
        fig.add_trace(go.Scatter(x=[np.exp(m)], y=[len(order)], mode="markers", name="last step / peak",
                                 marker=dict(color=COLORS[2], size=9, symbol="diamond"),
                                 error_x=dict(type="data", symmetric=False, array=[np.exp(hi) - np.exp(m)],
                                              arrayminus=[np.exp(m) - np.exp(lo)], color=COLORS[2])))
        labels.append(f"last step / peak (all {n} runs)")
    fig.add_vline(x=1.0, line=dict(color=GREY, width=1))
    fig.update_xaxes(type="log")
    fig.update_yaxes(tickmode="array", tickvals=list(range(len(labels))), ticktext=labels, autorange="reversed")
    return _label(fig, "What the sweep decides: ratios of enrichment with 95 % intervals over seeds",
                  "ratio of tangent enrichment [log; 1 = no effect]", "contrast", legend="phase")
