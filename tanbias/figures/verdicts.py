"""The verdicts at a glance (the closing page): each property of the statement against each line of
evidence, one coloured cell each, every cell a link to the section that decides it.

The words and their categories are :func:`tanbias.lab.analysis.findings.verdict_grid`'s; this
module only draws them, with the colours of :data:`tanbias.palette.VERDICT_COLORS`.
"""
from __future__ import annotations

import html

import plotly.graph_objects as go

from tanbias.figures import (AXIS_LINE, FAINT_GREY, GREY, INK, REFERENCE_GREY, VERDICT_COLORS, WHITE, SVGFigure,
                             labelled)
from tanbias import __version__
from tanbias.lab.analysis.findings import HEADLINE_CELLS, Effect, cell_href
from tanbias.lab.analysis.verdicts import CATEGORIES, EVIDENCE, PROPERTIES, SURVIVAL

__all__ = ["verdicts_figure", "headline_effects_svg", "CELL_FONT", "CELL_CHARS", "QUALIFIED_OPACITY", "QUALIFIED_MARK"]

#: the categories whose cells are drawn in light text: no verdict to read
_QUIET = ("not tested",)
#: the top margin, px: the title and the three lines of the column headers under it, no more
_TOP = 96
#: a cell whose word needs its qualifier (the grid's ``qualifier``) is drawn paler, its word marked
QUALIFIED_OPACITY = 0.45
QUALIFIED_MARK = "†"


def _two_lines(text: str, width: int) -> str:
    """``text`` on two lines, broken at the space nearest its middle, when it is longer than ``width``.

    >>> _two_lines("not yet tested", 12), _two_lines("causal test, decoder", 8), _two_lines("partly", 12)
    ('not yet<br>tested', 'causal test,<br>decoder', 'partly')
    """
    spaces = [i for i, ch in enumerate(text) if ch == " "]
    if len(text) <= width or not spaces:
        return text
    cut = min(spaces, key=lambda i: abs(i - len(text) / 2))
    return f"{text[:cut]}<br>{text[cut + 1:]}"


#: a cell's word is drawn at this size, never smaller: the figure fits its words, not the words the figure
CELL_FONT = 11
#: the most characters of a line of a cell (its qualifier's mark included): seven columns share the book's
#: column of about 690 px with the rows' names, so a cell is about 70 px wide
CELL_CHARS = 11
#: where a word too long for one line of a cell breaks, hyphenated
_HYPHENATION = {"indistinguishable": "indistin-guishable", "contradicted": "contra-dicted"}


def _cell_lines(word: str, mark: str = "") -> list[str]:
    """``word`` (and ``mark`` after it) as the lines of a cell: two lines broken at the space nearest the
    middle, or a long single word at its hyphenation point (:data:`_HYPHENATION`).

    >>> _cell_lines("not assessable"), _cell_lines("indistinguishable", "†"), _cell_lines("supported", "†")
    (['not', 'assessable'], ['indistin-', 'guishable†'], ['supported†'])
    """
    text = word + mark
    if len(text) <= CELL_CHARS:
        return [text]
    if " " in word:
        first, second = _two_lines(word, 0).split("<br>")
        return [first, second + mark]
    if word in _HYPHENATION:
        head, tail = _HYPHENATION[word].split("-", 1)
        return [f"{head}-", tail + mark]
    return [text]


def _short_chapters(text: str) -> str:
    """``chapters 7–8`` as ``ch. 7–8``, for a column header.

    >>> _short_chapters("chapters 10–11"), _short_chapters("chapter 9")
    ('ch. 10–11', 'ch. 9')
    """
    return text.replace("chapters ", "ch. ").replace("chapter ", "ch. ")


def verdicts_figure(grid, suffix: str = ".html") -> go.Figure:
    """The verdicts at a glance: one row per property (:data:`~tanbias.lab.analysis.verdicts.PROPERTIES`),
    one column per line of evidence (:data:`~tanbias.lab.analysis.verdicts.EVIDENCE`), each cell its
    word on the colour of its category, the word a link to the section that decides it. A cell of category
    :data:`~tanbias.lab.analysis.verdicts.SURVIVAL` (the rivals column: whether other cells' verdicts keep
    their word) is drawn on the background colour, that of ``not tested``: its word in italics, in a dotted frame.

    Parameters
    ----------
    grid : pandas.DataFrame
        :func:`tanbias.lab.analysis.findings.verdict_grid`: columns ``property``, ``evidence``,
        ``word``, ``category``, ``chapter``, ``label``, one row per cell.
    suffix : str
        What turns a chapter's file stem into its page (``.html`` in the built book).

    Returns
    -------
    plotly.graph_objects.Figure

    Raises
    ------
    ValueError
        When a cell is missing or a category is not one of
        :data:`~tanbias.lab.analysis.verdicts.CATEGORIES` or
        :data:`~tanbias.lab.analysis.verdicts.SURVIVAL`.

    Example
    -------
    >>> import pandas as pd
    >>> rows = [{"property": p, "evidence": e, "word": "not tested", "category": "not tested",
    ...          "chapter": "01_manifold_hypothesis", "label": ""} for p in PROPERTIES for e in EVIDENCE]
    >>> fig = verdicts_figure(pd.DataFrame(rows))
    >>> len(fig.layout.shapes) == len(PROPERTIES) * len(EVIDENCE), fig.layout.yaxis.autorange
    (True, 'reversed')
    """
    g = grid.set_index(["property", "evidence"])
    missing = [(p, e) for p in PROPERTIES for e in EVIDENCE if (p, e) not in g.index]
    if missing:
        raise ValueError(f"grid lacks the cells {missing}: pass tanbias.lab.analysis.findings.verdict_grid(...)")
    unknown = set(g["category"]) - {*CATEGORIES, SURVIVAL}
    if unknown:
        raise ValueError(f"categories {sorted(unknown)} are not among {(*CATEGORIES, SURVIVAL)}")
    props, evid = list(PROPERTIES), list(EVIDENCE)
    shapes, notes, hx, hy, htext = [], [], [], [], []
    for j, p in enumerate(props):
        for i, e in enumerate(evid):
            cell = g.loc[(p, e)]
            quiet = cell["category"] in _QUIET
            survival = cell["category"] == SURVIVAL
            qualifier = str(cell.get("qualifier", "") or "")
            # a word that needs a qualifier beside it is drawn paler, with a dagger (the hover names it); a
            # survival word judges other cells' verdicts: the background colour (not tested's), a dotted frame
            shapes.append(dict(type="rect", x0=i - 0.47, x1=i + 0.47, y0=j - 0.44, y1=j + 0.44, layer="below",
                               fillcolor=VERDICT_COLORS["not tested" if survival else cell["category"]],
                               opacity=QUALIFIED_OPACITY if qualifier else 1,
                               line=dict(color=INK, width=1, dash="dot") if survival else dict(color=AXIS_LINE, width=0.5)))
            href = cell_href(cell["chapter"], cell["label"], suffix)
            word = "<br>".join(html.escape(line) for line in _cell_lines(cell["word"], QUALIFIED_MARK if qualifier else ""))
            word = f"<i>{word}</i>" if survival else word
            colour = GREY if quiet else INK
            # one size for every word, broken into lines that fit a cell (_cell_lines)
            notes.append(dict(x=i, y=j, xref="x", yref="y", showarrow=False, font=dict(size=CELL_FONT, color=colour),
                              text=f'<a href="{href}" target="_self" style="color:{colour}">{word}</a>'))
            hx.append(i)
            hy.append(j)
            htext.append(f"{PROPERTIES[p]}, {EVIDENCE[e][0]} ({EVIDENCE[e][1]}): {cell['word']}"
                         + (f" ({qualifier})" if qualifier else ""))
    traces = [go.Scatter(x=hx, y=hy, mode="markers", marker=dict(size=40, opacity=0), hovertext=htext,
                         hoverinfo="text", showlegend=False, name="cells")]
    # the legend: one square per category a cell has, in CATEGORIES' order (no swatch that no cell uses)
    traces += [go.Scatter(x=[None], y=[None], mode="markers", name=c,
                          marker=dict(symbol="square", size=14, color=VERDICT_COLORS[c],
                                      line=dict(color=AXIS_LINE, width=0.5)))
               for c in CATEGORIES if (g["category"] == c).any()]
    if (g["category"] == SURVIVAL).any():
        traces.append(go.Scatter(x=[None], y=[None], mode="markers", name="framed: survival",
                                 marker=dict(symbol="square-open", size=14, color=INK)))
    if "qualifier" in g and g["qualifier"].fillna("").astype(bool).any():
        traces.append(go.Scatter(x=[None], y=[None], mode="markers", name=f"{QUALIFIED_MARK} paler: qualified",
                                 marker=dict(symbol="square", size=14, color=VERDICT_COLORS["supported"],
                                             opacity=QUALIFIED_OPACITY, line=dict(color=AXIS_LINE, width=0.5))))
    fig = go.Figure(traces)
    labelled(fig, "The verdicts at a glance: each property against each line of evidence", "", "",
             legend="verdict")
    fig.update_layout(
        shapes=shapes, annotations=notes, height=_TOP + 70 + 56 * len(props), hovermode="closest",
        margin=dict(l=10, r=10, t=_TOP, b=70), plot_bgcolor=VERDICT_COLORS["not tested"],
        # the title right above the column headers (three lines of 11 px), which never rotate into it
        title=dict(y=1 - 6 / (_TOP + 70 + 56 * len(props)), yanchor="top"),
        legend=dict(orientation="h", x=0, y=-0.02, xanchor="left", yanchor="top"),
        xaxis=dict(tickvals=list(range(len(evid))), side="top", showline=False, ticks="", showgrid=False, tickangle=0,
                   # short and small: seven columns of about 90 px, the headers never rotate
                   ticktext=[f"{_two_lines(EVIDENCE[e][0], 8)}<br><i>{_short_chapters(EVIDENCE[e][1])}</i>"
                             for e in evid], tickfont=dict(size=11),
                   range=[-0.5, len(evid) - 0.5], fixedrange=True),
        # the rows' names on two lines where long: the cells keep the width
        yaxis=dict(tickvals=list(range(len(props))), ticktext=[_two_lines(PROPERTIES[p], 16) for p in props],
                   autorange="reversed",
                   showline=False, ticks="", showgrid=False, fixedrange=True))
    return fig


# --------------------------------------------------------------------------- the headline effects, static
#: the static figure's layout, in px: its width (the book's column), the column of words on the left (its
#: width in characters of the bold heading and of the lighter lines under it: DejaVu Sans, the widest of
#: the fonts named, at about 0.6 em a character), the column of each row's numbers, axis and verdict
_SVG = dict(width=720, left=16, heading_chars=49, words_chars=60, wide_chars=115, right=410, right_end=704,
            font=12.5, small=11.5, line=15, top=92)
_FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"


def _wrap(text: str, width: int) -> list[str]:
    """``text`` broken at spaces into lines of at most ``width`` characters (a longer word stands alone).

    >>> _wrap("mean cosine, proxy / control", 40), _wrap("a b c d e f", 3)
    (['mean cosine, proxy / control'], ['a b', 'c d', 'e f'])
    """
    out, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            out.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return out + [line]


def _axis(effect):
    """The row's scale, value -> x in the right column, over the effect's interval, estimate and reference
    (logarithmic for a ratio)."""
    import math

    values = [v for v in (effect.lo, effect.hi, effect.estimate, effect.reference) if math.isfinite(v)]
    log = effect.scale == "ratio" and min(values) > 0
    f = math.log if log else float
    lo, hi = f(min(values)), f(max(values))
    pad = 0.08 * (hi - lo) or 0.05
    lo, hi = lo - pad, hi + pad
    a0, a1 = _SVG["right"] + 6, _SVG["right_end"] - 6
    return lambda v: a0 + (f(v) - lo) / (hi - lo) * (a1 - a0)


def headline_effects_svg(records, cells=None, source: str = "") -> SVGFigure:
    """The headline effects, each with its interval, labelled in words: a static figure fit to cite, as wide
    as the book's column.

    One row per cell of ``cells`` (default: every cell of
    :data:`~tanbias.lab.analysis.findings.HEADLINE_CELLS`, those the introduction's verdict lines read)
    that a measured effect decides. On the left: the property, the line of evidence and what is read, in
    words. On the right: the effect as the book quotes it; the estimate (a dot in its verdict's colour)
    with its interval, beside the value its rule compares it with (dashed: ×1, 0 or a threshold), on the
    row's own scale (logarithmic for a ratio); the verdict word, and its rule's word where that differs.
    A cell no measured effect decides (a derivation) is named under the rows. Every number carries the
    minus sign U+2212.

    The package writes the SVG itself. Plotly's static export needs kaleido and a Chrome it drives: the
    pinned stack holds neither, and Binder, where a reader runs this page, has no Chrome.

    Parameters
    ----------
    records : pandas.DataFrame
        :func:`tanbias.lab.analysis.findings.verdict_records`.
    cells : iterable of (property, evidence), optional
        The rows, in order.
    source : str
        Where the figure comes from (e.g. the closing page's address), written under it.

    Returns
    -------
    SVGFigure

    Raises
    ------
    ValueError
        When a cell is not among ``records``.
    """
    import html

    import numpy as np

    cells = list(dict.fromkeys(c for cs in HEADLINE_CELLS.values() for c in cs)) if cells is None else list(cells)
    missing = [c for c in cells if c not in records.index]
    if missing:
        raise ValueError(f"records lack the cells {missing}: pass tanbias.lab.analysis.findings.verdict_records(...)")
    esc = html.escape
    W, L, R, RE, fs, sm, ln = (_SVG[k] for k in ("width", "left", "right", "right_end", "font", "small", "line"))
    body, y = [], _SVG["top"]
    notes = []
    for cell in cells:
        r = records.loc[cell]
        name = r["property"][0].upper() + r["property"][1:]
        if not r["glue key"]:
            notes.append(f"{name} is {r['verdict']} ({r['the rule' + chr(39) + 's word']}) by a derivation "
                         f"({r['chapter']}): no measured effect decides it.")
            continue
        effect = Effect.from_record(r)
        heading = _wrap(f"{name}: {r['line of evidence']}", _SVG["heading_chars"])
        words = _wrap(f"{effect.label}: {effect.measure}" if effect.label else effect.measure, _SVG["words_chars"])
        height = max(92, 12 + ln * (len(heading) + len(words)) + 8)
        if body:
            body.append(f'<line x1="{L}" x2="{W - L}" y1="{y}" y2="{y}" stroke="{FAINT_GREY}"/>')
        for i, line in enumerate(heading):
            body.append(f'<text x="{L}" y="{y + 18 + ln * i}" font-weight="bold">{esc(line)}</text>')
        for i, line in enumerate(words):
            body.append(f'<text x="{L}" y="{y + 18 + ln * (len(heading) + i)}" font-size="{sm}" fill="{AXIS_LINE}">'
                        f"{esc(line)}</text>")
        body.append(f'<text x="{R}" y="{y + 18}">{esc(effect.text(label=False))}</text>')
        x, mid = _axis(effect), y + 38
        ref = x(effect.reference)
        body.append(f'<line x1="{ref:.1f}" x2="{ref:.1f}" y1="{mid - 10}" y2="{mid + 8}" stroke="{REFERENCE_GREY}" '
                    f'stroke-dasharray="4 3"/><text x="{ref:.1f}" y="{mid + 19}" font-size="10.5" fill="{AXIS_LINE}" '
                    f'text-anchor="middle">{esc(effect.reference_text())}</text>')
        colour = VERDICT_COLORS.get(r["verdict"], WHITE)
        if np.isfinite(effect.lo) and np.isfinite(effect.hi):
            x0, x1 = x(effect.lo), x(effect.hi)
            body.append(f'<line x1="{x0:.1f}" x2="{x1:.1f}" y1="{mid}" y2="{mid}" stroke="{INK}" stroke-width="2.5"/>')
            body += [f'<line x1="{xe:.1f}" x2="{xe:.1f}" y1="{mid - 6}" y2="{mid + 6}" stroke="{INK}" '
                     'stroke-width="1.5"/>' for xe in (x0, x1)]
        body.append(f'<circle cx="{x(effect.estimate):.1f}" cy="{mid}" r="5.5" fill="{colour}" stroke="{INK}"/>')
        chip = 12 + 8.2 * len(r["verdict"])
        body.append(f'<rect x="{R}" y="{y + 64}" width="{chip:.0f}" height="19" rx="3" fill="{colour}" '
                    f'stroke="{AXIS_LINE}" stroke-width="0.5"/><text x="{R + 6}" y="{y + 78}" font-weight="bold">'
                    f"{esc(r['verdict'])}</text>")
        rule_word = r["the rule's word"]
        if rule_word != r["verdict"]:
            body.append(f'<text x="{R + chip + 8:.0f}" y="{y + 78}" font-size="{sm}" fill="{AXIS_LINE}">'
                        f"the rule’s word: {esc(rule_word)}</text>")
        y += height
    foot = [*notes, "Each row’s seeds, training steps and the readings beside it: the closing page’s table of every "
            "verdict (CSV).", f"{source or 'tanbias'} · tanbias {__version__}, from the committed runs · CC BY 4.0"]
    foot = [line for text in foot for line in _wrap(text, _SVG["wide_chars"])]
    height = y + 20 + 16 * len(foot)
    head = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" viewBox="0 0 {W} {height}" '
            f'role="img" font-family="{_FONT}" font-size="{fs}" fill="{INK}">',
            "<title>The headline effects, each with its interval</title>",
            f'<rect width="{W}" height="{height}" fill="{WHITE}"/>',
            f'<text x="{L}" y="28" font-size="17" font-weight="bold">The headline effects, each with its interval</text>']
    intro = ("Each verdict line of the statement with the effect its rule reads. Dot: the verdict’s colour; bar: "
             "the 95 % interval unless marked; dashed: what the rule compares it with. Each row has its own scale "
             "(logarithmic for a ratio).")
    head += [f'<text x="{L}" y="{50 + 16 * i}" font-size="{sm}" fill="{AXIS_LINE}">{esc(line)}</text>'
             for i, line in enumerate(_wrap(intro, _SVG["wide_chars"]))]
    tail = [f'<line x1="{L}" x2="{W - L}" y1="{y}" y2="{y}" stroke="{AXIS_LINE}"/>']
    tail += [f'<text x="{L}" y="{y + 20 + 16 * i}" font-size="{sm}" fill="{AXIS_LINE if i >= len(notes) else INK}">'
             f"{esc(line)}</text>" for i, line in enumerate(foot)]
    return SVGFigure("\n".join([*head, *body, *tail, "</svg>"]) + "\n")
