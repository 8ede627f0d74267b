"""The figures of ``python -m tanbias measure`` that chapter 9 does not draw.

* :func:`reading_figure` — one anisotropy reading by relative depth, the measured model's
  lines (:func:`tanbias.lab.analysis.measure.anisotropy_readings`) over the book's own: the
  zoo's committed measurements and the lab's final runs
  (:func:`tanbias.lab.analysis.measure_report.reference_readings`), one figure per reading of
  :data:`READINGS` in the report;
* :func:`spectrum_figure` — the singular spectrum of the model's output matrix
  (:func:`tanbias.lab.analysis.measure.output_spectrum`);
* :func:`widths_figure` — how the premise's interval narrows with the tokens read
  (:func:`tanbias.lab.analysis.measure_report.token_widths`);
* :func:`trajectory_interactive` — chapter 9's headline readings over the checkpoints of
  a series (:func:`tanbias.lab.analysis.measure.trajectory_table`): the premise's
  correlations with their intervals, the anisotropy, the curvature, the alignment test's
  enrichment beside its random-init null.

Every reading's names and note are its record's (:data:`tanbias.theory.anisotropy.METRICS`). The report
that shows these figures with chapter 9's own is :mod:`tanbias.figures.report`.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from tanbias.figures import COLORS, GREY, LIGHT_GREY, REFERENCE_GREY, labelled
from tanbias.figures.interactive import Interactive, Param
from tanbias.lab.analysis.pretrained_report import LANGUAGE_NAMES
from tanbias.theory import anisotropy

__all__ = ["READINGS", "READING_NOTES", "reading_figure", "spectrum_figure", "widths_figure",
           "TRAJECTORY", "trajectory_interactive"]

#: :func:`tanbias.theory.anisotropy.drawn_readings`, when the package was imported
READINGS = anisotropy.drawn_readings()
#: What a reading's figure says under it: its record's note
READING_NOTES = {m.name: m.note for m in anisotropy.METRICS}
_DASHES = ("dash", "dot", "dashdot", "longdash", "longdashdot", "solid")


def _model_lines(parts: dict, reading: str) -> list[tuple[str, list, list]]:
    """``(name, depth, value)`` of each measured model (or checkpoint) and language."""
    out = []
    for label, tab in parts.items():
        a = tab["anisotropy"]
        if reading not in a:
            continue
        for lang in dict.fromkeys(a["language"]):
            g = a[a["language"] == lang].sort_values("layer")
            name = label if len(set(a["language"])) == 1 else f"{label} · {LANGUAGE_NAMES.get(lang, lang)}"
            out.append((name, (g["layer"] / max(g["layer"].max(), 1)).tolist(), g[reading].tolist()))
    return out


def reading_figure(parts: dict, reading: str, reference=None) -> go.Figure:
    """One reading against relative depth: the measured model's lines over the book's own.

    Parameters
    ----------
    parts : dict
        ``{label: tables}`` (:func:`tanbias.lab.analysis.measure_folder.split_revisions`).
    reading : str
        The name of a record of :data:`tanbias.theory.anisotropy.METRICS`.
    reference : pandas.DataFrame, optional
        :func:`tanbias.lab.analysis.measure_report.reference_readings`: the zoo's lines (grey,
        dashed) and the lab's (light grey, dotted) behind the model's.
    """
    title, axis, _ = anisotropy.metric(reading).labels
    traces = []
    if reference is not None and len(reference):
        ref = reference[reference["reading"] == reading]
        for i, (source, g) in enumerate(ref.groupby("source", sort=False)):
            lab = g["group"].iloc[0] == "lab"
            g = g.sort_values("depth")
            traces.append(go.Scatter(x=g["depth"], y=g["value"], mode="lines", name=f"{source} ({'final run' if lab else 'zoo'})",
                                     line=dict(color=LIGHT_GREY if lab else REFERENCE_GREY, width=1.5,
                                               dash=_DASHES[i % len(_DASHES)])))
    for i, (name, x, y) in enumerate(_model_lines(parts, reading)):
        traces.append(go.Scatter(x=x, y=y, mode="lines+markers", name=name,
                                 line=dict(color=COLORS[i % len(COLORS)], width=2.5)))
    fig = go.Figure(traces)
    if reading == "cosine_top_share":
        fig.add_hline(y=1.0, line=dict(color=GREY, width=1))
    fig.update_layout(height=420, legend=dict(orientation="h", yanchor="top", y=-0.22, x=0))
    return labelled(fig, f"{title[0].upper()}{title[1:]}", "relative depth (0 = embeddings, 1 = last layer)", axis)


def spectrum_figure(parts: dict) -> go.Figure:
    """The output matrix's singular spectrum: the cumulative share of its squared singular values
    against the fraction of directions, one line per model or checkpoint, beside an isotropic
    matrix's diagonal.

    Parameters
    ----------
    parts : dict
        ``{label: tables}`` whose tables carry ``spectrum``
        (:func:`tanbias.lab.analysis.measure.output_spectrum`).
    """
    traces = [go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="isotropic matrix",
                         line=dict(color=GREY, dash="dash", width=1))]
    for i, (label, tab) in enumerate(parts.items()):
        sp = tab["spectrum"].sort_values("rank")
        traces.append(go.Scatter(x=[0, *(sp["rank"] / sp["dims"])], y=[0, *sp["cumulative"]], mode="lines",
                                 name=label, line=dict(color=COLORS[i % len(COLORS)], width=2.5)))
    fig = go.Figure(traces)
    fig.update_layout(height=420, legend=dict(orientation="h", yanchor="top", y=-0.22, x=0))
    fig.update_yaxes(range=[0, 1.02])
    return labelled(fig, "The output matrix's singular spectrum", "fraction of directions, largest first",
                    "cumulative share of σ²")


def widths_figure(widths, chapter: float | None = None) -> go.Figure:
    """The premise interval's width against the tokens read, with the ``1 / sqrt(tokens)`` law through
    the first point and (``chapter``) the width of chapter 9's measurement.

    Parameters
    ----------
    widths : pandas.DataFrame
        :func:`tanbias.lab.analysis.measure_report.token_widths`.
    chapter : float, optional
        Chapter 9's width at its last layer (:func:`tanbias.lab.analysis.measure_report.premise_width`).
    """
    w = widths.sort_values("tokens")
    n = w["tokens"].to_numpy(float)
    law = float(w["width"].iloc[0]) * np.sqrt(n[0] / n)
    traces = [go.Scatter(x=n, y=law, mode="lines", name="1 / √tokens", line=dict(color=GREY, dash="dash", width=1)),
              go.Scatter(x=n, y=w["width"], mode="lines+markers", name="last layer", line=dict(color=COLORS[0], width=2.5)),
              go.Scatter(x=n, y=w["median_width"], mode="lines+markers", name="median over the blocks",
                         line=dict(color=COLORS[1], width=2))]
    if chapter is not None:
        traces.append(go.Scatter(x=[n[0], n[-1]], y=[chapter, chapter], mode="lines", name="chapter 9, last layer",
                                 line=dict(color=REFERENCE_GREY, dash="dot", width=1.5)))
    fig = go.Figure(traces)
    fig.update_xaxes(type="log", tickvals=n.tolist(), ticktext=[f"{int(x):,}" for x in n])
    fig.update_yaxes(rangemode="tozero")
    fig.update_layout(height=400, legend=dict(orientation="h", yanchor="top", y=-0.22, x=0))
    return labelled(fig, "The premise's interval narrows with the tokens read", "tokens read (--tokens)",
                    "width of the 95 % interval of ρ")


#: the readings :func:`trajectory_interactive` offers: column -> (label, interval columns or None, slider
#: label); the enrichment first, the reading chapter 8 follows over training
TRAJECTORY = {"enrichment_gmean": ("enrichment, geometric mean over the layers", None, "enrichment"),
              "rho_radius_t": ("ρ(log frequency, radius t), last layer", ("lo_radius_t", "hi_radius_t"), "ρ radius"),
              "rho_centroid_distance": ("ρ(log frequency, centroid distance), last layer",
                                        ("lo_centroid_distance", "hi_centroid_distance"), "ρ centroid"),
              "rho_self_similarity": ("ρ(log frequency, self-similarity), last layer",
                                      ("lo_self_similarity", "hi_self_similarity"), "ρ self-sim."),
              "mean_cosine_max": ("peak mean cosine over the blocks", None, "mean cos."),
              "isoscore_min": ("lowest IsoScore* over the blocks", None, "IsoScore*"),
              "top1_share_max": ("largest top-direction share over the blocks", None, "top-1 share"),
              "curvature_median": ("median normal-share slope over the blocks", None, "curvature")}


#: Up to this many checkpoints, the trajectory's x axis has a tick at each one's step
_TICKED_STEPS = 8


def _fitted_range(values, baseline=None) -> list[float]:
    """A y range that holds ``values`` (and ``baseline`` when it lies within a quarter of their span)."""
    v = np.asarray([x for x in values if x is not None], float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return [0.0, 1.0]
    lo, hi = float(v.min()), float(v.max())
    if baseline is not None and lo - 0.25 * (hi - lo) <= baseline <= hi + 0.25 * (hi - lo):
        lo, hi = min(lo, baseline), max(hi, baseline)
    pad = 0.08 * (hi - lo) if hi > lo else max(0.05 * abs(lo), 0.05)
    return [lo - pad, hi + pad]


def trajectory_interactive(trajectory) -> Interactive:
    """Interactive: a reading against the training step of each checkpoint of a series, one line per
    language; the y axis fitted to each reading.

    Parameters
    ----------
    trajectory : pandas.DataFrame
        :func:`tanbias.lab.analysis.measure.trajectory_table`.
    """
    readings = {c: v for c, v in TRAJECTORY.items() if c in trajectory and np.isfinite(trajectory[c]).any()}
    langs = list(dict.fromkeys(trajectory["language"]))
    null = (float(trajectory["null_enrichment_gmean"].iloc[0]) if "null_enrichment_gmean" in trajectory
            else None)

    first = next(iter(readings))

    def compute(reading=first):
        out = {}
        for lang in langs:
            g = trajectory[trajectory["language"] == lang].sort_values("step")
            band = readings[reading][1]
            out[lang] = (g["step"].astype(int).tolist(), g[reading].tolist(),
                         g[band[0]].tolist() if band else None, g[band[1]].tolist() if band else None,
                         g["revision"].astype(str).tolist())
        return out

    def figure(data, reading=first):
        # the same traces for every reading: an empty band where a reading has no interval, an
        # empty null line but for the enrichment
        traces, shown = [], []
        for i, (lang, (x, y, lo, hi, names)) in enumerate(data.items()):
            c = COLORS[i % len(COLORS)]
            bx, by = (x + x[::-1], hi + lo[::-1]) if lo is not None else ([], [])
            traces.append(go.Scatter(x=bx, y=by, fill="toself", fillcolor=c, opacity=0.2, line=dict(width=0),
                                     mode="lines", showlegend=False, hoverinfo="skip"))
            traces.append(go.Scatter(x=x, y=y, mode="lines+markers", name=LANGUAGE_NAMES.get(lang, lang),
                                     line=dict(color=c), text=names,
                                     hovertemplate="step %{x}: %{y:.3g} (%{text})<extra></extra>"))
            shown += y + (lo or []) + (hi or [])
        nx, ny = [], []
        if reading == "enrichment_gmean" and null is not None:
            x0 = data[langs[0]][0]
            nx, ny = [x0[0], x0[-1]], [null] * 2
            shown += ny
        traces.append(go.Scatter(x=nx, y=ny, mode="lines", name="random-init copy",
                                 line=dict(color=GREY, dash="dash")))
        fig = go.Figure(traces)
        baseline = 1.0 if reading == "enrichment_gmean" else 0.0
        fig.add_hline(y=baseline, line=dict(color=GREY, width=1))
        steps = sorted({s for v in data.values() for s in v[0]})
        if len(steps) <= _TICKED_STEPS:                     # a tick at each checkpoint, where they are few
            fig.update_xaxes(tickmode="array", tickvals=steps, ticktext=[f"{s:,}" for s in steps])
        fig.update_xaxes(type="linear", tickformat=",d")
        fig.update_yaxes(range=_fitted_range(shown, baseline))
        # the y axis' title is an annotation: a slider's frames redraw the annotations, not the axes
        fig.add_annotation(text=readings[reading][2], xref="paper", yref="paper", x=0.0, y=0.5, xanchor="right",
                           yanchor="middle", xshift=-44, textangle=-90, showarrow=False, font=dict(size=14),
                           name="y title")
        fig.update_layout(margin=dict(l=80))
        return labelled(fig, f"Over training: {readings[reading][0]}", "training step of the checkpoint", "",
                        legend="")

    # a slider where there is a choice (a lab run's trajectory may carry the enrichment alone)
    params = [Param("reading", "reading", options=tuple(readings), fmt=lambda c: readings[c][2])] if len(readings) > 1 else []
    return Interactive(params=params,
                       compute=compute, figure=figure, title="The readings over training",
                       caption="Each checkpoint measured on the same text, at its training step. Shaded: the 95 % "
                               "interval over documents. The y axis fits each reading. Chapter 8 reads 'imprinted "
                               "early' from when the enrichment peaks and whether it falls after its peak.",
                       name="measure-trajectory", height=460)
