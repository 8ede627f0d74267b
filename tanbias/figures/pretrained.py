"""Figures of chapter 9: real pretrained models on real text.

Everything here reads the committed tables of :mod:`tanbias.lab.analysis.pretrained`
(``data/pretrained/<model>/``) and never loads a model.

* :func:`premise_interactive` — Spearman correlation of each reading of
  "distance to the centroid" with log frequency, by layer, with its bootstrap
  interval; sliders over model and frequency source;
* :func:`types_interactive` — the token types themselves at one depth: a
  reading against frequency; sliders over model, depth and reading;
* :func:`anisotropy_interactive` — anisotropy by relative depth, one line per
  model; slider over the measure;
* :func:`alignment_interactive` — the post-hoc alignment test of the decoders
  by layer; sliders over model and frequency bucket;
* :func:`curvature_interactive` — each type's local normal share against its
  radius *t* on log axes, with the fitted slope and the slope 2 of a curved
  manifold; sliders over model and depth.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from tanbias.figures import BLACK, COLORS, GREY, frozen_layout, labelled
from tanbias.interactive import Interactive, Param
from tanbias.lab.analysis.pretrained_report import PAPER_RHO, premise_main

__all__ = ["READING_LABELS", "DEPTHS", "premise_interactive", "types_interactive",
           "anisotropy_interactive", "alignment_interactive", "curvature_interactive"]

#: The three readings of "distance to the centroid" (chapter 9) and their colours.
READING_LABELS = {"radius_t": "(a) radius t around the type's own centroid",
                  "centroid_distance": "(b) distance of the type's centroid to the layer mean",
                  "self_similarity": "(c) self-similarity (mean pairwise cosine)"}
READING_COLORS = dict(zip(READING_LABELS, COLORS[:3]))
#: Depths offered by the sliders that show one layer (a model's layers differ in number).
DEPTHS = ("embeddings", "quarter", "middle", "three quarters", "last")
_DEPTH_FRACTION = dict(zip(DEPTHS, (0.0, 0.25, 0.5, 0.75, 1.0)))
MAX_POINTS = 400          # types drawn per frame: enough to see a trend, light pages


def _depth_layer(depth: str, n_layers: int) -> int:
    """The layer (0 = embeddings) at a named relative ``depth`` of a model with ``n_layers`` blocks.

    Example
    -------
    >>> _depth_layer("middle", 30), _depth_layer("last", 6), _depth_layer("embeddings", 18)
    (15, 6, 0)
    """
    return int(round(_DEPTH_FRACTION[depth] * n_layers))


def _n_layers(tables) -> int:
    return int(tables["anisotropy"]["layer"].max())


def _subsample(frame, n=MAX_POINTS, seed=0):
    if len(frame) <= n:
        return frame
    return frame.sample(n, random_state=seed).sort_values("count")


@frozen_layout
def _premise_layout():
    fig = go.Figure()
    fig.add_hline(y=0.0, line=dict(color=GREY, width=1))
    fig.add_hline(y=PAPER_RHO, line=dict(color=BLACK, width=1, dash="dot"),
                  annotation_text="paper, decoders: about −0.5", annotation_position="bottom right")
    fig.update_yaxes(range=[-1, 1])
    return labelled(fig, " ", "layer (0 = embeddings)", "Spearman ρ with log frequency",
                    legend="reading")


def premise_interactive(pretrained: dict) -> Interactive:
    """Interactive: each reading's Spearman correlation with log frequency, by layer.

    Parameters
    ----------
    pretrained : dict
        ``{model: load_pretrained(model)}``.
    """
    models = tuple(pretrained)

    def compute(model, source):
        p = premise_main(pretrained[model])
        p = p[p["source"] == source]
        return {r: p[p["reading"] == r].sort_values("layer") for r in READING_LABELS}

    def figure(data, model, source):
        traces = []
        for reading, g in data.items():
            c = READING_COLORS[reading]
            x = g["layer"].tolist()
            traces.append(dict(type="scatter", x=x + x[::-1], y=g["hi"].tolist() + g["lo"].tolist()[::-1],
                               fill="toself", fillcolor=c, opacity=0.15, line=dict(width=0),
                               hoverinfo="skip", showlegend=False))
            traces.append(dict(type="scatter", x=x, y=g["rho"].tolist(), mode="lines+markers",
                               name=READING_LABELS[reading], line=dict(color=c)))
        layout = _premise_layout()
        layout["title"]["text"] = f"{model}: frequency against three readings of the radius"
        return go.Figure(data=traces, layout=layout)

    return Interactive(
        params=[Param("model", "model", options=models),
                Param("source", "frequency", options=("corpus", "wordfreq"),
                      fmt={"corpus": "the corpus, model's tokenizer",
                           "wordfreq": "web-scale (wordfreq), whole words"}.get)],
        compute=compute, figure=figure, title="The premise, under each reading",
        caption="Spearman correlation between a token type's log frequency and each reading, per "
                "layer; bands: bootstrap 95 % intervals over token types. The premise predicts a "
                "negative correlation for (a) and a positive one for (c): a concentrated type is "
                "more self-similar. Dotted: the value the paper reports for decoders.",
        name="ch9-premise", height=480)


def types_interactive(pretrained: dict) -> Interactive:
    """Interactive: token types at one depth, a reading against corpus frequency."""
    models = tuple(pretrained)

    def compute(model, depth, reading):
        t = pretrained[model]["types"]
        layer = _depth_layer(depth, _n_layers(pretrained[model]))
        g = _subsample(t[(t["layer"] == layer) & (t["corpus_count"] > 0)])
        return {"x": np.log10(g["corpus_count"].to_numpy()), "y": g[reading].to_numpy(),
                "n": len(t[t["layer"] == layer]), "layer": layer}

    def figure(data, model, depth, reading):
        fig = go.Figure(go.Scatter(x=data["x"], y=data["y"], mode="markers",
                                   marker=dict(size=5, color=READING_COLORS[reading], opacity=0.6),
                                   name="token types", showlegend=False))
        return labelled(fig, f"{model}, layer {data['layer']}: {data['n']} types "
                             f"(at most {MAX_POINTS} drawn)",
                        "log10 corpus frequency (model's tokenizer)", READING_LABELS[reading])

    return Interactive(
        params=[Param("model", "model", options=models),
                Param("depth", "depth", options=DEPTHS, default="last"),
                Param("reading", "reading", options=tuple(READING_LABELS),
                      fmt={"radius_t": "(a) radius t", "centroid_distance": "(b) centroid distance",
                           "self_similarity": "(c) self-similarity"}.get)],
        compute=compute, figure=figure, title="Token types, one layer at a time",
        caption="Each point is a token type with at least min_count occurrences in the held-out "
                "text. The premise says frequent types (right) sit tighter around their centroid.",
        name="ch9-types", height=460)


ANISOTROPY = {"mean_cosine": "mean cosine of random pairs", "isoscore_star": "IsoScore*",
              "top1_share": "variance share of the top principal direction",
              "outlier_share": "share of the mean cosine in outlier dimensions"}


def anisotropy_interactive(pretrained: dict) -> Interactive:
    """Interactive: an anisotropy measure against relative depth, one line per model."""

    def compute(measure):
        out = {}
        for model, tab in pretrained.items():
            a = tab["anisotropy"].sort_values("layer")
            out[model] = (a["layer"] / a["layer"].max(), a[measure])
        return out

    def figure(data, measure):
        fig = go.Figure([go.Scatter(x=x, y=y, mode="lines+markers", name=m,
                                    line=dict(color=COLORS[i]))
                         for i, (m, (x, y)) in enumerate(data.items())])
        return labelled(fig, f"Anisotropy by depth: {ANISOTROPY[measure]}",
                        "relative depth (0 = embeddings, 1 = last layer)", ANISOTROPY[measure],
                        legend="model")

    return Interactive(params=[Param("measure", "measure", options=tuple(ANISOTROPY),
                                     fmt=ANISOTROPY.get)],
                       compute=compute, figure=figure, title="How anisotropic are the layers?",
                       caption="An isotropic cloud has mean cosine 0, IsoScore* 1 and a top-"
                               "direction share of 1/D.", name="ch9-anisotropy", height=440)


def alignment_interactive(pretrained: dict) -> Interactive:
    """Interactive: the decoders' post-hoc enrichment by layer, controls as a band."""
    models = tuple(m for m, t in pretrained.items() if "alignment" in t)
    buckets = tuple(dict.fromkeys(pretrained[models[0]]["alignment"]["bucket"]))

    def compute(model, bucket):
        a = pretrained[model]["alignment"]
        a = a[(a["bucket"] == bucket) & (a["proxy"] == "refit")].sort_values("layer")
        return a[["layer", "enrichment", "p_energy"]]

    def figure(data, model, bucket):
        sig = data["p_energy"] <= 0.05
        fig = go.Figure([
            go.Scatter(x=data["layer"], y=data["enrichment"], mode="lines", name="enrichment",
                       line=dict(color=COLORS[0])),
            go.Scatter(x=data["layer"][sig], y=data["enrichment"][sig], mode="markers",
                       name="p ≤ 0.05 against 20 controls", marker=dict(color=COLORS[1], size=8))])
        fig.add_hline(y=1.0, line=dict(color=GREY, width=1))
        fig.update_yaxes(type="log")
        return labelled(fig, f"{model}: gradient energy in the activations' top-r PCA space",
                        "layer (0 = embeddings)", "enrichment (log scale; 1 = random subspace)")

    return Interactive(params=[Param("model", "model", options=models),
                               Param("bucket", "frequency bucket", options=buckets)],
                       compute=compute, figure=figure, title="The alignment test at the released "
                       "checkpoint", caption="The proxy is fitted on this checkpoint's own "
                       "activations: no early checkpoint ships with these packages.",
                       name="ch9-alignment", height=440)


def curvature_interactive(pretrained: dict) -> Interactive:
    """Interactive: local normal share against radius t, one point per type, log axes."""
    models = tuple(pretrained)

    def compute(model, depth):
        t = pretrained[model]["types"]
        layer = _depth_layer(depth, _n_layers(pretrained[model]))
        g = t[(t["layer"] == layer) & (t["normal_share"] > 0) & (t["radius_t"] > 0)]
        c = pretrained[model]["curvature"]
        row = c[c["layer"] == layer]
        g = _subsample(g)
        return {"x": g["radius_t"].to_numpy(), "y": g["normal_share"].to_numpy(), "layer": layer,
                "slope": float(row["slope"].iloc[0]) if len(row) else float("nan")}

    def figure(data, model, depth):
        fig = go.Figure(go.Scatter(x=data["x"], y=data["y"], mode="markers", name="token types",
                                   marker=dict(size=5, color=COLORS[0], opacity=0.6)))
        if len(data["x"]) > 2:
            x0 = float(np.median(data["x"]))
            y0 = float(np.median(data["y"]))
            xs = np.array([data["x"].min(), data["x"].max()])
            if np.isfinite(data["slope"]):
                fig.add_trace(go.Scatter(x=xs, y=y0 * (xs / x0) ** data["slope"], mode="lines",
                                         name=f"fitted slope {data['slope']:.2f}",
                                         line=dict(color=COLORS[1])))
            fig.add_trace(go.Scatter(x=xs, y=y0 * (xs / x0) ** 2, mode="lines",
                                     name="slope 2 (curved manifold)",
                                     line=dict(color=GREY, dash="dot")))
        fig.update_xaxes(type="log")
        fig.update_yaxes(type="log")
        return labelled(fig, f"{model}, layer {data['layer']}: variance outside the top "
                             "local directions", "radius t (units of the layer's spread)",
                        "normal share", legend="")

    return Interactive(params=[Param("model", "model", options=models),
                               Param("depth", "depth", options=DEPTHS[1:], default="middle")],
                       compute=compute, figure=figure, title="Is curvature visible in the "
                       "clouds?", caption="For points of a curved manifold sampled at radius t "
                       "the share of variance off the top local directions grows like t²; for "
                       "a flat cloud with isotropic noise it does not depend on t.",
                       name="ch9-curvature", height=460)
