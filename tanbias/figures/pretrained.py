"""Figures of chapter 9: real pretrained models on real text.

Everything here reads the committed tables of :mod:`tanbias.lab.analysis.pretrained`
(``data/pretrained/<model>/``) and never loads a model. A *measurement* is one model
read in one language ("smollm2-135m · English"): every slider that picks a model picks one.

* :func:`premise_interactive` — Spearman correlation of each reading of
  "distance to the centroid" with log frequency, by layer, with its band;
  sliders over measurement, estimator (count-matched, plain) and frequency source;
* :func:`types_interactive` — the token types themselves at one depth: a
  reading against frequency; sliders over measurement, depth, reading and estimator;
* :func:`anisotropy_interactive` — anisotropy by relative depth, one line per
  measurement; sliders over the measure and whether the first position (the
  attention sink) is included;
* :func:`alignment_interactive` — the checkpoint alignment test of the decoders by
  layer, the released checkpoint beside a randomly initialised copy;
* :func:`curvature_interactive` — each type's local normal share against its
  radius *t* on log axes, with the fitted slope and the slope 2 of a curved
  manifold; sliders over measurement and depth.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from tanbias.figures import BLACK, COLORS, GREY, frozen_layout, labelled
from tanbias.figures.interactive import Interactive, Param
from tanbias.lab.analysis.pretrained_report import LANGUAGE_NAMES, PAPER_RHO, premise_rows
from tanbias.numerals import format_spec

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
#: line dashes of the languages, in the order a figure meets them
_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
MAX_POINTS = 200          # types drawn per frame: enough to see a trend, light pages (ten measurements)
ESTIMATORS = {"matched": "count-matched (m occurrences per type)", "plain": "plain (all occurrences)"}


def _measurements(pretrained: dict) -> dict:
    """``{"<model> · <Language>": (model, language)}`` of every model and language measured."""
    out = {}
    for model, tab in pretrained.items():
        for lang in dict.fromkeys(tab["anisotropy"]["language"]):
            out[f"{model} · {LANGUAGE_NAMES.get(lang, lang)}"] = (model, lang)
    return out


def _choice(name: str, label: str, options, **kw) -> list:
    """A slider over ``options``, or none when there is a single option (one model read in one
    language, as ``python -m tanbias measure`` reports it): the figures then show that one."""
    options = tuple(options)
    return [Param(name, label, options=options, **kw)] if len(options) > 1 else []


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
    meas = _measurements(pretrained)
    first = next(iter(meas))

    def compute(measurement=first, estimator="matched", source="corpus"):
        model, lang = meas[measurement]
        p = premise_rows(pretrained[model], estimator)
        p = p[(p["source"] == source) & (p["language"] == lang)]
        band = ("band_lo", "band_hi") if estimator == "matched" else ("lo", "hi")
        return {r: (g["layer"].tolist(), g["rho"].tolist(), g[band[0]].tolist(), g[band[1]].tolist())
                for r in READING_LABELS for g in [p[p["reading"] == r].sort_values("layer")]}

    def figure(data, measurement=first, estimator="matched", source="corpus"):
        traces = []
        for reading, (x, rho, lo, hi) in data.items():
            c = READING_COLORS[reading]
            traces.append(dict(type="scatter", x=x + x[::-1], y=hi + lo[::-1], fill="toself", fillcolor=c,
                               opacity=0.15, line=dict(width=0), hoverinfo="skip", showlegend=False))
            traces.append(dict(type="scatter", x=x, y=rho, mode="lines+markers",
                               name=READING_LABELS[reading], line=dict(color=c)))
        layout = _premise_layout()
        layout["title"]["text"] = f"{measurement}: frequency against three readings ({estimator})"
        return go.Figure(data=traces, layout=layout)

    return Interactive(
        params=[*_choice("measurement", "model · language", meas),
                Param("estimator", "estimator", options=tuple(ESTIMATORS), fmt=ESTIMATORS.get),
                Param("source", "frequency", options=("corpus", "wordfreq"),
                      fmt={"corpus": "the language's corpus, model's tokenizer",
                           "wordfreq": "web-scale (wordfreq), whole words"}.get)],
        compute=compute, figure=figure, title="The premise, under each reading",
        caption="Spearman correlation between a token type's log frequency and each reading, per "
                "layer. Count-matched: each type measured on the same number of occurrences, the band "
                "holds for all layers at once (95 %, resampling documents). Plain: all occurrences, "
                "the band is each layer's interval over types, too narrow, and the readings carry "
                "their count's bias. The premise predicts a negative correlation for (a) and a "
                "positive one for (c). Dotted: the value the paper reports for decoders.",
        name="ch9-premise", height=500)


def types_interactive(pretrained: dict) -> Interactive:
    """Interactive: token types at one depth, a reading against corpus frequency."""
    meas = _measurements(pretrained)
    first = next(iter(meas))

    def compute(measurement=first, depth="last", reading="radius_t", estimator="matched"):
        model, lang = meas[measurement]
        t = pretrained[model]["types"]
        t = t[t["language"] == lang]
        layer = _depth_layer(depth, _n_layers(pretrained[model]))
        col = reading if estimator == "matched" else f"{reading}_plain"
        g = _subsample(t[(t["layer"] == layer) & (t["corpus_count"] > 0)])
        return {"x": np.log10(g["corpus_count"].to_numpy()), "y": g[col].to_numpy(),
                "n": len(t[t["layer"] == layer]), "layer": layer}

    def figure(data, measurement=first, depth="last", reading="radius_t", estimator="matched"):
        fig = go.Figure(go.Scatter(x=data["x"], y=data["y"], mode="markers",
                                   marker=dict(size=5, color=READING_COLORS[reading], opacity=0.6),
                                   name="token types", showlegend=False))
        return labelled(fig, f"{measurement}, layer {data['layer']}: {data['n']} types "
                             f"(at most {MAX_POINTS} drawn), {estimator}",
                        "log10 frequency in the language's corpus (model's tokenizer)", READING_LABELS[reading])

    return Interactive(
        params=[*_choice("measurement", "model · language", meas),
                Param("depth", "depth", options=DEPTHS, default="last"),
                Param("reading", "reading", options=tuple(READING_LABELS),
                      fmt={"radius_t": "(a) radius t", "centroid_distance": "(b) centroid distance",
                           "self_similarity": "(c) self-similarity"}.get),
                Param("estimator", "estimator", options=tuple(ESTIMATORS), fmt=ESTIMATORS.get)],
        compute=compute, figure=figure, title="Token types, one layer at a time",
        caption="Each point is a token type with at least m occurrences in the held-out text "
                "(the first position of each row and special tokens left out). The premise says "
                "frequent types (right) sit tighter around their centroid. Switch the estimator to "
                "see the count's bias: plain radii of rare types (left) are shrunk.",
        name="ch9-types", height=460)


#: the measures offered, in the slider's order (the sink's own ratio and the outlier share,
#: measured without the sink only, stand between measures the sink slider changes)
ANISOTROPY = {"mean_cosine": "mean cosine of random pairs",
              "sink_norm_ratio": "norm at the first position / median norm elsewhere",
              "outlier_share": "share of the mean cosine in outlier dimensions",
              "isoscore_star": "IsoScore*",
              "top1_share": "variance share of the top principal direction"}
_WITH_SINK = {"mean_cosine", "isoscore_star", "top1_share"}
SINK = {"without": "first position left out", "with": "first position included"}


def anisotropy_interactive(pretrained: dict) -> Interactive:
    """Interactive: an anisotropy measure against relative depth, one line per measurement."""
    meas = _measurements(pretrained)

    def compute(measure, sink):
        out = {}
        for label, (model, lang) in meas.items():
            a = pretrained[model]["anisotropy"]
            a = a[a["language"] == lang].sort_values("layer")
            col = f"{measure}_with_sink" if sink == "with" and measure in _WITH_SINK else measure
            out[label] = (a["layer"] / a["layer"].max(), a[col])   # all NaN (no sink): an empty line
        return out

    # a colour per model, a dash per language: ten lines, read as model x language
    models = list(dict.fromkeys(model for model, _ in meas.values()))
    langs = list(dict.fromkeys(lang for _, lang in meas.values()))

    def figure(data, measure, sink):
        fig = go.Figure([go.Scatter(x=x, y=y, mode="lines+markers", name=m,
                                    line=dict(color=COLORS[models.index(meas[m][0]) % len(COLORS)],
                                              dash=_DASHES[langs.index(meas[m][1]) % len(_DASHES)]))
                         for m, (x, y) in data.items()])
        if measure == "sink_norm_ratio":
            fig.update_yaxes(type="log")
        note = "" if measure not in _WITH_SINK else f" ({SINK[sink]})"
        return labelled(fig, f"Anisotropy by depth: {ANISOTROPY[measure]}{note}",
                        "relative depth (0 = embeddings, 1 = last layer)", ANISOTROPY[measure],
                        legend="model · language")

    return Interactive(params=[Param("measure", "measure", options=tuple(ANISOTROPY), fmt=ANISOTROPY.get),
                               Param("sink", "first position", options=tuple(SINK), fmt=SINK.get)],
                       compute=compute, figure=figure, title="How anisotropic are the layers?",
                       caption="An isotropic cloud has mean cosine 0, IsoScore* 1 and a top-direction "
                               "share of 1/D. The first position of a decoder's row is its attention "
                               "sink; with it included, the first three measures describe the sink as "
                               "much as the text. The encoders read their start token ([CLS]) first, a special token "
                               "left out of both. A colour per model, a dash per language.", name="ch9-anisotropy", height=460)


NETWORKS = {"trained": "released checkpoint", "random-init": "random-init copy (the null)"}


def alignment_interactive(pretrained: dict) -> Interactive:
    """Interactive: the decoders' enrichment on their checkpoints by layer, beside a randomly initialised copy."""
    models = tuple(m for m, t in pretrained.items() if "alignment" in t)

    def compute(model=models[0]):
        a = pretrained[model]["alignment"]
        return {net: a[a["model"] == net].sort_values("layer")[["layer", "enrichment", "p_energy"]]
                for net in NETWORKS}

    def figure(data, model=models[0]):
        fig = go.Figure()
        for i, (net, d) in enumerate(data.items()):
            sig = d["p_energy"] <= 0.05
            fig.add_trace(go.Scatter(x=d["layer"], y=d["enrichment"], mode="lines", name=NETWORKS[net],
                                     line=dict(color=COLORS[i], dash="solid" if net == "trained" else "dash")))
            fig.add_trace(go.Scatter(x=d["layer"][sig], y=d["enrichment"][sig], mode="markers",
                                     name=f"{NETWORKS[net]}: p ≤ 0.05 against its controls",
                                     marker=dict(color=COLORS[i], size=8)))
        fig.add_hline(y=1.0, line=dict(color=GREY, width=1))
        fig.update_yaxes(type="log")
        return labelled(fig, f"{model}: gradient energy in the activations' top-r PCA space",
                        "layer (0 = embeddings)", "enrichment (log scale; 1 = random subspace)",
                        legend="network")

    return Interactive(params=_choice("model", "model", models),
                       compute=compute, figure=figure, title="The alignment test at the released "
                       "checkpoint", caption="The proxy is fitted on held-out English documents (the "
                       "even-numbered ones), the gradients come from the odd-numbered ones: no token is "
                       "both fitted and tested. The first position of each row is left out. Dashed: the "
                       "same test on a randomly initialised copy of the architecture.",
                       name="ch9-alignment", height=460)


def curvature_interactive(pretrained: dict) -> Interactive:
    """Interactive: local normal share against radius t, one point per type, log axes."""
    meas = _measurements(pretrained)
    first = next(iter(meas))

    def compute(measurement=first, depth="middle"):
        model, lang = meas[measurement]
        t = pretrained[model]["types"]
        layer = _depth_layer(depth, _n_layers(pretrained[model]))
        g = t[(t["language"] == lang) & (t["layer"] == layer) & (t["normal_share"] > 0) & (t["radius_t"] > 0)]
        c = pretrained[model]["curvature"]
        row = c[(c["language"] == lang) & (c["layer"] == layer)]
        g = _subsample(g)
        return {"x": g["radius_t"].to_numpy(), "y": g["normal_share"].to_numpy(), "layer": layer,
                "slope": float(row["slope"].iloc[0]) if len(row) else float("nan")}

    def figure(data, measurement=first, depth="middle"):
        fig = go.Figure(go.Scatter(x=data["x"], y=data["y"], mode="markers", name="token types",
                                   marker=dict(size=5, color=COLORS[0], opacity=0.6)))
        # the same three traces at every depth (empty lines where too few types were measured)
        xs = fitted = two = np.array([])
        if len(data["x"]) > 2:
            x0 = float(np.median(data["x"]))
            y0 = float(np.median(data["y"]))
            xs = np.array([data["x"].min(), data["x"].max()])
            fitted = y0 * (xs / x0) ** data["slope"] if np.isfinite(data["slope"]) else np.array([])
            two = y0 * (xs / x0) ** 2
        slope = f"fitted slope {format_spec(data['slope'], '.2f')}" if np.isfinite(data["slope"]) else "fitted slope (too few types)"
        fig.add_trace(go.Scatter(x=xs if len(fitted) else [], y=fitted, mode="lines", name=slope,
                                 line=dict(color=COLORS[1])))
        fig.add_trace(go.Scatter(x=xs, y=two, mode="lines", name="slope 2 (curved manifold)",
                                 line=dict(color=GREY, dash="dot")))
        fig.update_xaxes(type="log")
        fig.update_yaxes(type="log")
        return labelled(fig, f"{measurement}, layer {data['layer']}: variance outside the top "
                             "local directions", "radius t, count-matched (units of the layer's spread)",
                        "normal share", legend="")

    return Interactive(params=[*_choice("measurement", "model · language", meas),
                               Param("depth", "depth", options=DEPTHS[1:], default="middle")],
                       compute=compute, figure=figure, title="Is curvature visible in the "
                       "clouds?", caption="For points of a curved manifold sampled at radius t "
                       "the share of variance off the top local directions grows like t²; for "
                       "a flat cloud with isotropic noise it does not depend on t.",
                       name="ch9-curvature", height=460)
