"""The report of ``python -m tanbias measure``: one model's measurements as a page that opens offline.

:func:`report_html` turns a measurement folder's tables
(:func:`tanbias.lab.analysis.measure_folder.load_measurement`) into one self-contained
HTML page: plotly.js inlined (no CDN, no network), what the measurements say
first, in sentences (:func:`tanbias.lab.analysis.measure_report.findings`), then the
book's figures for that model, each with a link to the section of the online
book that explains it (:func:`chapter_url`, from ``html.baseurl`` in
``_config.yml``). The figures are chapter 9's own (:mod:`tanbias.figures.pretrained`),
drawn from this model's tables; a series of checkpoints adds its trajectory
(:mod:`tanbias.figures.measure`). Like :mod:`tanbias.figures.renderer`, this module
draws no figure of its own: it puts the topics' figures on a page.

The command that writes the page, ``tanbias measure MODEL [...]``, is
:mod:`tanbias.lab.measure_command`; the package face (:func:`tanbias.__main__.measure`)
gives it :func:`report_html` as its report.
"""
from __future__ import annotations

import html
from pathlib import Path

import numpy as np
import yaml
from plotly.offline import get_plotlyjs

from tanbias.figures import pretrained as fig9
from tanbias.figures.renderer import PLOT_CONFIG
import plotly.graph_objects as go

from tanbias.figures.measure import reading_figure, spectrum_figure, trajectory_interactive
from tanbias.lab.analysis.measure_folder import split_revisions
from tanbias.lab.analysis.measure_report import findings, reference_readings
from tanbias.lab.analysis.pretrained_report import LANGUAGE_NAMES
from tanbias.lab.runs import ROOT
from tanbias.theory import anisotropy
from tanbias.theory.anisotropy import metric

__all__ = ["CHAPTER", "sections", "SECTIONS", "MAX_REVISIONS_DRAWN", "book_url", "chapter_url", "drawn_revisions",
           "report_figures", "report_html"]

#: The chapter whose measurements the command runs (its source, without ``.md``).
CHAPTER = "chapters/09_pretrained_models"
#: The report's figures, in order: key -> (heading, the section of the book that explains it); one
#: figure per anisotropy reading (``reading-<name>``, :func:`tanbias.theory.anisotropy.drawn_readings`),
#: when the report is drawn (:func:`sections`).
_SECTIONS = {
    "premise": ("The premise, under three readings", (CHAPTER, "sec-ch9-premise")),
    "types": ("Token types, one layer at a time", (CHAPTER, "sec-ch9-estimators")),
    "anisotropy": ("Anisotropy, with and without the first position", (CHAPTER, "sec-ch9-anisotropy")),
    "readings": None,
    "spectrum": ("The output matrix's singular spectrum", ("chapters/13_rival_accounts", "ch-rivals")),
    "alignment": ("The alignment test, against a random-init copy", (CHAPTER, "sec-ch9-alignment")),
    "curvature": ("Is curvature visible?", (CHAPTER, "sec-ch9-curvature")),
    "trajectory": ("Over training", ("chapters/08_eurobert_vs_decoder", "sec-ch8-timing")),
}


def sections() -> dict:
    """The report's sections in order, ``{key: (heading, (document, label))}``: the fixed ones and one
    per reading of :func:`tanbias.theory.anisotropy.drawn_readings`, headed by its record's title.

    Example
    -------
    >>> list(sections())[:4]
    ['premise', 'types', 'anisotropy', 'reading-raw']
    """
    out = {}
    for key, value in _SECTIONS.items():
        if key != "readings":
            out[key] = value
            continue
        for r in anisotropy.drawn_readings():
            title = metric(r).labels[0]
            out[f"reading-{r}"] = (f"Beside the book's models: {title}", ("chapters/13_rival_accounts", "ch-rivals"))
    return out


#: :func:`sections`, when the package was imported
SECTIONS = sections()
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


def drawn_revisions(parts: dict) -> dict:
    """The checkpoints of a series the per-checkpoint figures draw: all of them up to
    :data:`MAX_REVISIONS_DRAWN`, else the first, the last and evenly spaced ones between."""
    labels = list(parts)
    if len(labels) <= MAX_REVISIONS_DRAWN:
        return parts
    idx = sorted(set(np.linspace(0, len(labels) - 1, MAX_REVISIONS_DRAWN).round().astype(int)))
    return {labels[i]: parts[labels[i]] for i in idx}


def report_figures(tables: dict, reference=None) -> dict:
    """The report's figures, ``{section key: Interactive or go.Figure}`` in :data:`SECTIONS`' order.

    One figure per anisotropy reading the tables carry, over ``reference`` (the book's own
    models, :func:`tanbias.lab.analysis.measure_report.reference_readings`; None: the model alone);
    the output matrix's spectrum and the alignment test's figure only for a model with a
    language-model head; the trajectory only for a series.
    """
    parts = drawn_revisions(split_revisions(tables))
    figs = {"premise": fig9.premise_interactive(parts), "types": fig9.types_interactive(parts),
            "anisotropy": fig9.anisotropy_interactive(parts)}
    # one figure per reading that every part's table carries (chapter 9's committed tables: IsoScore* alone)
    figs.update({f"reading-{r}": reading_figure(parts, r, reference) for r in anisotropy.drawn_readings()
                 if all(r in t["anisotropy"] for t in parts.values())})
    if all("spectrum" in t for t in parts.values()):
        figs["spectrum"] = spectrum_figure(parts)
    if any("alignment" in t for t in parts.values()):
        figs["alignment"] = fig9.alignment_interactive(parts)
    figs["curvature"] = fig9.curvature_interactive(parts)
    if "trajectory" in tables:
        figs["trajectory"] = trajectory_interactive(tables["trajectory"])
    return figs


_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 62rem; margin: 2rem auto;
       padding: 0 1rem; line-height: 1.5; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.25rem; margin-top: 2.2rem; }
.tanbias-explained { font-size: 0.92em; } .tanbias-provenance td { padding: 0.1em 0.8em 0.1em 0; vertical-align: top; }
.tanbias-provenance td:first-child { font-style: italic; white-space: nowrap; } code { font-size: 0.9em; }
"""


def report_html(tables: dict, reference=True) -> str:
    """The whole report: one HTML page with plotly.js inlined, which opens offline.

    Parameters
    ----------
    tables : dict
        A measurement's tables, its ``manifest`` and its ``results``
        (:func:`tanbias.lab.analysis.measure_folder.load_measurement`).
    reference : bool or pandas.DataFrame
        The book's models each reading is drawn beside: True reads them
        (:func:`tanbias.lab.analysis.measure_report.reference_readings`: the zoo's committed measurements
        and the lab's final runs, where the book's data is at hand), False draws the model alone.

    Returns
    -------
    str
    """
    man = tables["manifest"]
    esc = html.escape
    heads = sections()
    link = {key: chapter_url(*where) for key, (_, where) in heads.items()}
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
    if reference is True:
        reference = reference_readings()
    body = []
    for key, fig in report_figures(tables, reference if reference is not False else None).items():
        heading, where = heads[key]
        drawn = (fig.to_html(full_html=False, include_plotlyjs=False, div_id=f"fig-{key}", config=PLOT_CONFIG)
                 if isinstance(fig, go.Figure) else fig.to_html(div_id=f"fig-{key}"))
        note = metric(key.removeprefix("reading-")).note if key.startswith("reading-") else ""
        body.append(f'<section id="{key}"><h2>{esc(heading)}</h2>{drawn}'
                    + (f"<p>{esc(note)}</p>" if note else "")
                    + f'<p class="tanbias-explained">Explained in the book: <a href="{link[key]}">'
                    f'{esc(link[key].rsplit("/", 1)[-1])}</a>.</p></section>')
    css = (Path(ROOT) / "assets" / "tanbias.css").read_text(encoding="utf8") + _STYLE
    title = f"tanbias measure: {Path(str(man['model']).rstrip('/')).name}"
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}</title><style>{css}</style>"
            f'<script type="text/javascript">{get_plotlyjs()}</script></head><body>'
            f"<h1>{esc(title)}</h1>"
            f'<p>Chapter 9\'s measurements of the <a href="{chapter_url("intro")}">tangent-bias book</a>, run on '
            f"this model by <code>{esc(man.get('command_line', man['command']))}</code>.</p>"
            f"<h2>What the measurements say</h2><ul>{items}</ul>"
            f'<table class="tanbias-provenance">{prov}</table>'
            + "".join(body) + "</body></html>\n")
