"""The report of ``python -m tanbias measure``: one model's measurements as a page that opens offline.

:func:`report_html` turns a measurement folder's tables
(:func:`tanbias.lab.analysis.measure.load_measurement`) into one self-contained
HTML page: plotly.js inlined (no CDN, no network), what the measurements say
first, in sentences (:func:`tanbias.lab.analysis.measure.findings`), then the
book's figures for that model, each with a link to the section of the online
book that explains it (:func:`chapter_url`, from ``html.baseurl`` in
``_config.yml``). The figures are chapter 9's own (:mod:`tanbias.figures.pretrained`),
drawn from this model's tables; a series of checkpoints adds its trajectory
(:mod:`tanbias.figures.measure`). Like :mod:`tanbias.figures.renderer`, this module
draws no figure of its own: it puts the topics' figures on a page.

:func:`main` is the command itself, ``tanbias measure MODEL [...]`` (``python -m tanbias
measure``): the arguments, :func:`tanbias.lab.analysis.measure.measure_model` with this
page as its report, and a one-line error for bad input.
"""
from __future__ import annotations

import html
from pathlib import Path

import numpy as np

from tanbias.lab.analysis.measure import findings, split_revisions
from tanbias.lab.analysis.pretrained_report import LANGUAGE_NAMES

__all__ = ["CHAPTER", "SECTIONS", "MAX_REVISIONS_DRAWN", "book_url", "chapter_url", "drawn_revisions",
           "report_figures", "report_html", "main"]

#: The chapter whose measurements the command runs (its source, without ``.md``).
CHAPTER = "chapters/09_pretrained_models"
#: The report's figures, in order: key -> (heading, the section of the book that explains it).
SECTIONS = {
    "premise": ("The premise, under three readings", (CHAPTER, "sec-ch9-premise")),
    "types": ("Token types, one layer at a time", (CHAPTER, "sec-ch9-estimators")),
    "anisotropy": ("Anisotropy, with and without the first position", (CHAPTER, "sec-ch9-anisotropy")),
    "readings": ("Anisotropy, read six ways", ("chapters/13_rival_accounts", "ch-rivals")),
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


def drawn_revisions(parts: dict) -> dict:
    """The checkpoints of a series the per-checkpoint figures draw: all of them up to
    :data:`MAX_REVISIONS_DRAWN`, else the first, the last and evenly spaced ones between."""
    labels = list(parts)
    if len(labels) <= MAX_REVISIONS_DRAWN:
        return parts
    idx = sorted(set(np.linspace(0, len(labels) - 1, MAX_REVISIONS_DRAWN).round().astype(int)))
    return {labels[i]: parts[labels[i]] for i in idx}


def report_figures(tables: dict) -> dict:
    """The report's figures, ``{section key: Interactive}`` in :data:`SECTIONS`' order (the six
    anisotropy readings where the tables carry them, the alignment test's only with a
    language-model head, the trajectory only for a series)."""
    from tanbias.figures import pretrained as fig9
    from tanbias.figures.measure import READINGS, readings_interactive, trajectory_interactive

    parts = drawn_revisions(split_revisions(tables))
    figs = {"premise": fig9.premise_interactive(parts), "types": fig9.types_interactive(parts),
            "anisotropy": fig9.anisotropy_interactive(parts)}
    if all(set(READINGS) <= set(t["anisotropy"]) for t in parts.values()):
        figs["readings"] = readings_interactive(parts)
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


# ------------------------------------------------------------------------------------------ the command
def _measure_arguments(p: argparse.ArgumentParser) -> None:
    from tanbias.lab.analysis.measure import MIN_TOKENS, TEXT_LANGUAGE
    from tanbias.lab.analysis.pretrained import DEFAULTS
    from tanbias.lab.zoo import ZOO

    p.add_argument("model", help=f"a zoo name ({', '.join(ZOO)}), a local folder that transformers loads (a causal "
                                 "LM, a masked LM or an encoder), a folder of checkpoint folders, or a hub id where "
                                 "the network allows")
    p.add_argument("--text", default=None, metavar="FILE",
                   help="a UTF-8 text of your own, documents separated by blank lines (default: the corpus' "
                        "held-out documents)")
    p.add_argument("--language", nargs="+", default=None, metavar="LANG",
                   help="the corpus languages to read (default: a zoo model's own, else en); with --text, the "
                        f"text's language, whose corpus counts rank its types by frequency (default "
                        f"{TEXT_LANGUAGE})")
    p.add_argument("--tokens", type=int, default=None, metavar="N",
                   help=f"tokens per language, at least {MIN_TOKENS}: bounds time and memory (default "
                        f"{DEFAULTS['n_tokens']}, chapter 9's)")
    p.add_argument("--revisions", nargs="+", default=None, metavar="R",
                   help="checkpoints of a hub id or of a folder of checkpoint folders, in training order "
                        "(default: every folder's); a series gives trajectories over training")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="the folder to write (default measure-<model name>); replaced only once the new "
                        "measurement is complete")
    p.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N, mps or auto (default cpu)")
    p.add_argument("--no-alignment", action="store_true", help="skip the post-hoc alignment test")
    p.add_argument("--threads", type=int, default=None, metavar="N",
                   help="CPU threads of torch (default: torch's own; on a machine shared with other jobs, "
                        "1 or 2 are often faster)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def _run(args) -> int:
    from tanbias.lab.analysis.measure import measure_model

    if args.threads is not None:
        import torch

        from tanbias._checks import check_int

        torch.set_num_threads(check_int("threads", args.threads, lo=1, hint="Pass e.g. --threads 2."))

    man = measure_model(args.model, args.out, text=args.text, languages=args.language, n_tokens=args.tokens,
                        revisions=args.revisions, alignment=not args.no_alignment, device=args.device,
                        progress=not args.no_progress, report=report_html)
    sec = man["seconds"]
    print(f"{man['model']}: {man['n_tokens']} tokens in {sec['total']:.0f} s (forward {sec['forward']:.0f} s, "
          f"{man['tokens_per_s']:.0f} tokens/s), peak memory {man['peak_rss_gb']:.1f} GB")
    print(f"tables and manifest in {man['out']}; the report: {man['out']}/report.html")
    for note in man["notes"]:
        print(f"note: {note}")
    return 0


def main(argv=None) -> int:
    """``tanbias measure MODEL ...`` (``python -m tanbias measure``): measure, write, say where.

    Parameters
    ----------
    argv : list of str, optional
        The command's own arguments (after ``measure``).

    Returns
    -------
    int
        0, or 2 with a one-line error when the input is wrong (nothing is written then).
    """
    import argparse
    import sys

    from tanbias.errors import CorruptFileError, ParameterError
    from tanbias.lab.checkpoints import CheckpointUnavailable
    from tanbias.lab.zoo import ZooUnavailable

    parser = argparse.ArgumentParser(
        prog="tanbias measure", description="Run chapter 9's measurements on MODEL; write its tables, a manifest "
                                            "and a report that opens offline.")
    _measure_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except (ParameterError, CorruptFileError, CheckpointUnavailable, ZooUnavailable) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
