"""The figures of ``python -m tanbias measure`` that chapter 9 does not draw.

* :func:`readings_interactive` — each layer's anisotropy read six ways, one per rival
  account (:func:`tanbias.lab.analysis.measure.anisotropy_readings`), by relative depth;
* :func:`trajectory_interactive` — chapter 9's headline readings over the checkpoints of
  a series (:func:`tanbias.lab.analysis.measure.trajectory_table`): the premise's
  correlations with their intervals, the anisotropy, the curvature, the alignment test's
  enrichment beside its random-init null.

The report that shows them with chapter 9's own figures is :mod:`tanbias.figures.report`.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from tanbias.figures import COLORS, GREY, labelled
from tanbias.figures.interactive import Interactive, Param
from tanbias.lab.analysis.pretrained_report import LANGUAGE_NAMES

__all__ = ["READINGS", "READING_AXES", "readings_interactive", "TRAJECTORY", "trajectory_interactive"]

#: The six readings of :func:`tanbias.lab.analysis.measure.anisotropy_readings`, as the figure names them.
READINGS = {"raw": "mean cosine of all pairs (raw)",
            "centered": "mean cosine after removing the mean vector",
            "standardised": "mean cosine of standardised coordinates",
            "type_balanced": "mean cosine, every type weighted equally",
            "mean_share": "share of the squared norm in the mean vector",
            "top_share": "variance share of the top 3 coordinates"}
#: Each reading on the figure's y axis (short enough to stand beside the plot) and on its slider
#: (six labels side by side).
READING_AXES = {"raw": ("mean cosine (raw)", "raw"),
                "centered": ("mean cosine, centred", "centred"),
                "standardised": ("mean cosine, standardised", "standardised"),
                "type_balanced": ("mean cosine, types equal", "types equal"),
                "mean_share": ("mean vector's share of the norm²", "mean share"),
                "top_share": ("top-3 variance share", "top-3 share")}
_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")


def readings_interactive(parts: dict) -> Interactive:
    """Interactive: one anisotropy reading against relative depth, one line per measurement.

    Parameters
    ----------
    parts : dict
        ``{label: tables}`` (:func:`tanbias.lab.analysis.measure.split_revisions`) whose
        ``anisotropy`` tables carry the columns of :data:`READINGS`.
    """
    lines = {}
    for label, tab in parts.items():
        a = tab["anisotropy"]
        for i, lang in enumerate(dict.fromkeys(a["language"])):
            lines[f"{label} · {LANGUAGE_NAMES.get(lang, lang)}"] = (a[a["language"] == lang].sort_values("layer"), i)
    models = list(parts)

    def compute(reading):
        return {name: ((g["layer"] / g["layer"].max()).tolist(), g[reading].tolist()) for name, (g, _) in lines.items()}

    def figure(data, reading):
        fig = go.Figure([go.Scatter(x=x, y=y, mode="lines+markers", name=name,
                                    line=dict(color=COLORS[models.index(name.rsplit(" · ", 1)[0]) % len(COLORS)],
                                              dash=_DASHES[lines[name][1] % len(_DASHES)]))
                         for name, (x, y) in data.items()])
        fig.update_yaxes(range=[-0.05, 1.05])
        # the y axis' title is an annotation: a slider's frames redraw the annotations, not the axes
        fig.add_annotation(text=READING_AXES[reading][0], xref="paper", yref="paper", x=0.0, y=0.5,
                           xanchor="right", yanchor="middle", xshift=-44, textangle=-90, showarrow=False,
                           font=dict(size=14), name="y title")
        fig.update_layout(margin=dict(l=80))
        return labelled(fig, f"Anisotropy read six ways: {READINGS[reading]}",
                        "relative depth (0 = embeddings, 1 = last layer)", "", legend="")

    return Interactive(params=[Param("reading", "reading", options=tuple(READINGS),
                                     fmt=lambda r: READING_AXES[r][1])],
                       compute=compute, figure=figure, title="Anisotropy, read six ways",
                       caption="Each reading corrects for one account of anisotropy without a tangent bias: a "
                               "shared mean vector (centred, mean share), a few rogue coordinates (standardised, "
                               "top-3 share), frequent types counted many times (type-balanced). A reading that "
                               "falls to near 0 where the raw one is high says that account explains it. The "
                               "first position of a decoder's row is left out.",
                       name="measure-readings", height=460)


#: the readings :func:`trajectory_interactive` offers: column -> (label, interval columns or None)
TRAJECTORY = {"rho_radius_t": ("ρ(log frequency, radius t), last layer", ("lo_radius_t", "hi_radius_t")),
              "rho_centroid_distance": ("ρ(log frequency, centroid distance), last layer",
                                        ("lo_centroid_distance", "hi_centroid_distance")),
              "rho_self_similarity": ("ρ(log frequency, self-similarity), last layer",
                                      ("lo_self_similarity", "hi_self_similarity")),
              "mean_cosine_max": ("peak mean cosine over the blocks", None),
              "isoscore_min": ("lowest IsoScore* over the blocks", None),
              "top1_share_max": ("largest top-direction share over the blocks", None),
              "curvature_median": ("median normal-share slope over the blocks", None),
              "enrichment_gmean": ("enrichment, geometric mean over the layers", None)}


def trajectory_interactive(trajectory) -> Interactive:
    """Interactive: a reading against the checkpoints of a series, one line per language.

    Parameters
    ----------
    trajectory : pandas.DataFrame
        :func:`tanbias.lab.analysis.measure.trajectory_table`.
    """
    readings = {c: v for c, v in TRAJECTORY.items() if c in trajectory and np.isfinite(trajectory[c]).any()}
    langs = list(dict.fromkeys(trajectory["language"]))

    def compute(reading):
        out = {}
        for lang in langs:
            g = trajectory[trajectory["language"] == lang].sort_values("step")
            band = readings[reading][1]
            out[lang] = (g["revision"].astype(str).tolist(), g[reading].tolist(),
                         g[band[0]].tolist() if band else None, g[band[1]].tolist() if band else None)
        return out

    def figure(data, reading):
        # the same traces for every reading: an empty band where a reading has no interval, an
        # empty null line but for the enrichment
        traces = []
        for i, (lang, (x, y, lo, hi)) in enumerate(data.items()):
            c = COLORS[i % len(COLORS)]
            bx, by = (x + x[::-1], hi + lo[::-1]) if lo is not None else ([], [])
            traces.append(go.Scatter(x=bx, y=by, fill="toself", fillcolor=c, opacity=0.2, line=dict(width=0),
                                     mode="lines", showlegend=False, hoverinfo="skip"))
            traces.append(go.Scatter(x=x, y=y, mode="lines+markers", name=LANGUAGE_NAMES.get(lang, lang),
                                     line=dict(color=c)))
        nx, ny = [], []
        if reading == "enrichment_gmean" and "null_enrichment_gmean" in trajectory:
            x0 = data[langs[0]][0]
            nx, ny = [x0[0], x0[-1]], [float(trajectory["null_enrichment_gmean"].iloc[0])] * 2
        traces.append(go.Scatter(x=nx, y=ny, mode="lines", name="random-init copy",
                                 line=dict(color=GREY, dash="dash")))
        fig = go.Figure(traces)
        fig.add_hline(y=1.0 if reading == "enrichment_gmean" else 0.0, line=dict(color=GREY, width=1))
        fig.update_xaxes(type="category")
        return labelled(fig, f"Over training: {readings[reading][0]}", "checkpoint (training order)",
                        readings[reading][0], legend="")

    return Interactive(params=[Param("reading", "reading", options=tuple(readings),
                                     fmt=lambda c: readings[c][0])],
                       compute=compute, figure=figure, title="The readings over training",
                       caption="Each checkpoint measured on the same text. Shaded: the 95 % interval over "
                               "documents. Chapter 8 reads 'imprinted early' from when the enrichment peaks and "
                               "whether it falls after its peak.", name="measure-trajectory", height=460)
