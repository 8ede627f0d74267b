"""The report of ``python -m tanbias measure``: one model's measurements as a page that opens offline.

:func:`report_html` turns a measurement folder's tables
(:func:`tanbias.lab.analysis.measure.load_measurement`) into one self-contained
HTML page: plotly.js inlined (no CDN, no network), what the measurements say
first, in sentences, then the book's figures for that model, each with a link
to the section of the online book that explains it (:func:`chapter_url`, from
``html.baseurl`` in ``_config.yml``). The figures are chapter 9's own
(:mod:`tanbias.figures.pretrained`), drawn from this model's tables; a series
of checkpoints adds :func:`trajectory_interactive`, its readings over training.
"""
from __future__ import annotations

import html
from pathlib import Path

import numpy as np
import plotly.graph_objects as go

from tanbias.figures import COLORS, GREY, labelled
from tanbias.figures.interactive import Interactive, Param
from tanbias.lab.analysis.pretrained_report import LANGUAGE_NAMES, SINK_RATIO, pretrained_table

__all__ = ["CHAPTER", "SECTIONS", "book_url", "chapter_url", "split_revisions", "findings",
           "trajectory_interactive", "report_figures", "report_html"]

#: The chapter whose measurements the command runs (its source, without ``.md``).
CHAPTER = "chapters/09_pretrained_models"
#: The report's figures, in order: key -> (heading, the section of the book that explains it).
SECTIONS = {
    "premise": ("The premise, under three readings", (CHAPTER, "sec-ch9-premise")),
    "types": ("Token types, one layer at a time", (CHAPTER, "sec-ch9-estimators")),
    "anisotropy": ("Anisotropy, with and without the first position", (CHAPTER, "sec-ch9-anisotropy")),
    "alignment": ("The alignment test, against a random-init copy", (CHAPTER, "sec-ch9-alignment")),
    "curvature": ("Is curvature visible?", (CHAPTER, "sec-ch9-curvature")),
    "trajectory": ("Over training", ("chapters/08_eurobert_vs_decoder", "sec-ch8-timing")),
}
#: Checkpoints of a series drawn in the per-checkpoint figures (the first, the last and evenly
#: spaced ones between): every one is in the tables and in the trajectory.
MAX_REVISIONS_DRAWN = 5


def book_url(root=None) -> str:
    """The online book's address: ``html.baseurl`` of ``_config.yml``, ending with ``/``.

    Example
    -------
    >>> book_url().startswith("https://") and book_url().endswith("/")
    True
    """
    import yaml

    from tanbias.lab.runs import ROOT

    book = yaml.safe_load((Path(root or ROOT) / "_config.yml").read_text(encoding="utf8"))
    return book["html"]["baseurl"].rstrip("/") + "/"


def chapter_url(doc: str, label: str | None = None) -> str:
    """The address of a page of the online book, at a section's label.

    Example
    -------
    >>> chapter_url("chapters/09_pretrained_models", "sec-ch9-premise").endswith(
    ...     "/chapters/09_pretrained_models.html#sec-ch9-premise")
    True
    """
    return f"{book_url()}{doc}.html" + (f"#{label}" if label else "")


def split_revisions(tables: dict) -> dict:
    """``{label: tables}``: one entry per checkpoint, in the form the chapter's figures read.

    One model gives ``{its name: tables}``; a series (tables with a ``revision`` column)
    gives one entry per revision, each with the random-init null of the alignment test
    (measured once) beside its own rows.
    """
    man = tables["manifest"]
    name = Path(str(man["model"]).rstrip("/\\")).name or str(man["model"])
    keys = [k for k in tables if k not in ("manifest", "trajectory")]
    if "revision" not in tables["anisotropy"]:
        return {name: tables}
    out = {}
    for rev in dict.fromkeys(tables["anisotropy"]["revision"]):
        part = {"manifest": man}
        for key in keys:
            t = tables[key]
            keep = t["revision"] == rev
            if key == "alignment":
                keep |= t["model"] == "random-init"
            part[key] = t[keep].drop(columns=["revision", "step"]).reset_index(drop=True)
        out[str(rev)] = part
    return out


def _drawn(parts: dict) -> dict:
    labels = list(parts)
    if len(labels) <= MAX_REVISIONS_DRAWN:
        return parts
    idx = sorted(set(np.linspace(0, len(labels) - 1, MAX_REVISIONS_DRAWN).round().astype(int)))
    return {labels[i]: parts[labels[i]] for i in idx}


def _ci(v, lo, hi) -> str:
    return f"{v:+.2f} [{lo:+.2f}, {hi:+.2f}]"


def findings(tables: dict) -> list[tuple[str, str]]:
    """What the measurements say, in sentences, each with the key of the section that explains it.

    Read from :func:`tanbias.lab.analysis.pretrained_report.pretrained_table` (chapter 9's
    numbers and its words: an interval's word, the band's word over the blocks), at the last
    checkpoint of a series.

    Returns
    -------
    list of (section key of :data:`SECTIONS`, sentence)
    """
    parts = split_revisions(tables)
    label = list(parts)[-1]
    tab = parts[label]
    rep = pretrained_table({label: tab})
    k = f"ch9_{label}"
    out = []
    where = "" if len(parts) == 1 else f" (checkpoint {label})"
    for lang in dict.fromkeys(tab["anisotropy"]["language"]):
        kl, name = f"{k}_{lang}", LANGUAGE_NAMES.get(lang, lang)
        t = f"{kl}_t_corpus"
        out.append(("premise", f"{name}{where}: at the last layer, ρ(log frequency, radius t) = "
                    f"{_ci(rep[f'{t}_rho'], rep[f'{t}_lo'], rep[f'{t}_hi'])}, {rep[f'{t}_sign']}; over the blocks "
                    f"the band is {rep[f'{t}_band']}. The premise predicts negative."))
        d = f"{kl}_dist_corpus"
        out.append(("premise", f"{name}: the distance of a type's centroid to the layer mean gives "
                    f"{_ci(rep[f'{d}_rho'], rep[f'{d}_lo'], rep[f'{d}_hi'])} at the last layer, "
                    f"{rep[f'{d}_sign']}; self-similarity {rep[f'{kl}_self_corpus_rho']:+.2f}, "
                    f"{rep[f'{kl}_self_corpus_sign']}."))
        out.append(("anisotropy", f"{name}: the mean cosine of random pairs peaks at {rep[f'{kl}_cos_max']:.2f} "
                    f"(block {rep[f'{kl}_cos_max_layer']}, first position left out; "
                    f"{rep[f'{kl}_cos_max_with_sink']:.2f} with it); IsoScore* reaches at most "
                    f"{rep[f'{kl}_iso_max']:.2f}; outlier dimensions: {rep[f'{kl}_outliers']}."))
        if f"{kl}_sink_ratio_max" in rep:
            ratio = rep[f"{kl}_sink_ratio_max"]
            out.append(("anisotropy", f"{name}: the first position's norm is up to {ratio:.1f} times the median "
                        f"elsewhere (block {rep[f'{kl}_sink_ratio_layer']}): "
                        f"{'a sink' if ratio > SINK_RATIO else 'no sink'} by chapter 9's rule (above "
                        f"{SINK_RATIO:.0f} times)."))
        out.append(("curvature", f"{name}: the normal share's slope against t has median "
                    f"{rep[f'{kl}_curv_median']:+.2f} over the blocks (from {rep[f'{kl}_curv_min']:+.2f} to "
                    f"{rep[f'{kl}_curv_max']:+.2f}); a curved manifold gives 2, a flat cloud 0."))
    if f"{k}_enrich_trained_median" in rep:
        out.append(("alignment", f"The gradients' median enrichment in the activations' top principal directions "
                    f"over the inner layers is {rep[f'{k}_enrich_trained_median']:.2f}{where}, against "
                    f"{rep[f'{k}_enrich_null_median']:.2f} for a randomly initialised copy (1 = a random "
                    "subspace)."))
    traj = tables.get("trajectory")
    if traj is not None and "enrichment_gmean" in traj and traj["enrichment_gmean"].notna().any():
        curve = traj.drop_duplicates("revision").set_index("revision")["enrichment_gmean"]
        peak = curve.idxmax()
        at = list(curve.index).index(peak) + 1
        out.append(("trajectory", f"Over the {len(curve)} checkpoints the enrichment (geometric mean over the "
                    f"layers) peaks at {peak} ({at} of {len(curve)}: ×{curve.max():.2f}); the last holds "
                    f"×{curve.iloc[-1] / curve.max():.2f} of that peak. 'Imprinted early' means a peak early in "
                    "training that later training does not raise."))
    return out


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


def report_figures(tables: dict) -> dict:
    """The report's figures, ``{section key: Interactive}`` in :data:`SECTIONS`' order (the
    alignment test's only with a language-model head, the trajectory only for a series)."""
    from tanbias.figures import pretrained as fig9

    parts = _drawn(split_revisions(tables))
    figs = {"premise": fig9.premise_interactive(parts), "types": fig9.types_interactive(parts),
            "anisotropy": fig9.anisotropy_interactive(parts)}
    if any("alignment" in t for t in parts.values()):
        figs["alignment"] = fig9.alignment_interactive(parts)
    figs["curvature"] = fig9.curvature_interactive(parts)
    if "trajectory" in tables:
        figs["trajectory"] = trajectory_interactive(tables["trajectory"])
    return figs


_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 62rem; margin: 2rem auto;
       padding: 0 1rem; color: #222; line-height: 1.5; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.25rem; margin-top: 2.2rem; }
.tanbias-explained { font-size: 0.92em; } .tanbias-provenance td { padding: 0.1em 0.8em 0.1em 0; vertical-align: top; }
.tanbias-provenance td:first-child { color: #555; white-space: nowrap; } code { font-size: 0.9em; }
"""


def report_html(tables: dict) -> str:
    """The whole report: one HTML page with plotly.js inlined, which opens offline.

    Parameters
    ----------
    tables : dict
        A measurement's tables and its ``manifest`` (:func:`tanbias.lab.analysis.measure.load_measurement`).

    Returns
    -------
    str
    """
    from plotly.offline import get_plotlyjs

    from tanbias.lab.runs import ROOT

    man = tables["manifest"]
    esc = html.escape
    link = {key: chapter_url(*where) for key, (_, where) in SECTIONS.items()}
    said = findings(tables)
    items = "".join(f'<li>{esc(text)} <a class="tanbias-explained" href="{link[key]}">Explained in the book.</a></li>'
                    for key, text in said)
    weights = man.get("weight_sha256") or "unknown"
    tokens = ", ".join(f"{LANGUAGE_NAMES.get(lang, lang)} {n:,}" for lang, n in man["tokens_measured"].items())
    rows = [("model", man["model"]), ("kind", f"{man['kind']} ({man['arch']}, {man['model_type']})"),
            ("weights (sha256)", weights), ("text", man["text"].get("path") or "the corpus' held-out documents"),
            ("tokens measured", tokens + (" (special tokens and each row's first position left out)"
                                          if man["kind"] == "decoder" else " (special tokens left out)")),
            ("checkpoints", ", ".join(man["revisions"])),
            ("settings", ", ".join(f"{k} = {v}" for k, v in man["settings"].items()
                                   if k in ("n_tokens", "m", "draws", "n_boot", "probe_tokens", "seed"))),
            ("package", f"tanbias {man['versions']['tanbias']}, torch {man['versions']['torch']}, "
                        f"transformers {man['versions']['transformers']}")]
    rows += [("note", n) for n in man.get("notes", [])]
    prov = "".join(f"<tr><td>{esc(k)}</td><td>{esc(str(v))}</td></tr>" for k, v in rows)
    body = []
    for key, fig in report_figures(tables).items():
        heading, where = SECTIONS[key]
        body.append(f'<section id="{key}"><h2>{esc(heading)}</h2>{fig.to_html(div_id=f"fig-{key}")}'
                    f'<p class="tanbias-explained">Explained in the book: <a href="{link[key]}">'
                    f'{esc(link[key].rsplit("/", 1)[-1])}</a>.</p></section>')
    css = (Path(ROOT) / "assets" / "tanbias.css").read_text(encoding="utf8") + _STYLE
    title = f"tanbias measure: {Path(str(man['model']).rstrip('/')).name}"
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}</title><style>{css}</style>"
            f'<script type="text/javascript">{get_plotlyjs()}</script></head><body>'
            f"<h1>{esc(title)}</h1>"
            f'<p>Chapter 9\'s measurements of the <a href="{chapter_url("intro")}">tangent-bias book</a>, run on '
            f"this model by <code>{esc(man['command'])}</code>.</p>"
            f"<h2>What the measurements say</h2><ul>{items}</ul>"
            f'<table class="tanbias-provenance">{prov}</table>'
            + "".join(body) + "</body></html>\n")
