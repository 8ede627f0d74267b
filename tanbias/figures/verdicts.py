"""The verdicts at a glance (the closing page): each property of the statement against each line of
evidence, one coloured cell each, every cell a link to the section that decides it.

The words and their categories are :func:`tanbias.lab.analysis.findings.verdict_grid`'s; this
module only draws them, with the colours of :data:`tanbias.palette.VERDICT_COLORS`.
"""
from __future__ import annotations

import html

import plotly.graph_objects as go

from tanbias.figures import AXIS_LINE, GREY, INK, VERDICT_COLORS, labelled
from tanbias.lab.analysis.findings import CATEGORIES, EVIDENCE, PROPERTIES, SURVIVAL, cell_href

__all__ = ["verdicts_figure", "QUALIFIED_OPACITY", "QUALIFIED_MARK"]

#: the categories whose cells are drawn in light text: no verdict to read
_QUIET = ("not tested",)
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


def _short_chapters(text: str) -> str:
    """``chapters 7–8`` as ``ch. 7–8``, for a column header.

    >>> _short_chapters("chapters 10–11"), _short_chapters("chapter 9")
    ('ch. 10–11', 'ch. 9')
    """
    return text.replace("chapters ", "ch. ").replace("chapter ", "ch. ")


def verdicts_figure(grid, suffix: str = ".html") -> go.Figure:
    """The verdicts at a glance: one row per property (:data:`~tanbias.lab.analysis.findings.PROPERTIES`),
    one column per line of evidence (:data:`~tanbias.lab.analysis.findings.EVIDENCE`), each cell its
    word on the colour of its category, the word a link to the section that decides it. A cell of category
    :data:`~tanbias.lab.analysis.findings.SURVIVAL` (the rivals column: whether other cells' verdicts keep
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
        :data:`~tanbias.lab.analysis.findings.CATEGORIES` or
        :data:`~tanbias.lab.analysis.findings.SURVIVAL`.

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
            word = _two_lines(html.escape(cell["word"]), 12) + (QUALIFIED_MARK if qualifier else "")
            word = f"<i>{word}</i>" if survival else word
            colour = GREY if quiet else INK
            # long words in a smaller font: a cell is about 90 px wide in the book's column
            size = 12 if len(cell["word"]) <= 10 else 10 if len(cell["word"]) <= 14 else 9
            notes.append(dict(x=i, y=j, xref="x", yref="y", showarrow=False, font=dict(size=size, color=colour),
                              text=f'<a href="{href}" target="_self" style="color:{colour}">{word}</a>'))
            hx.append(i)
            hy.append(j)
            htext.append(f"{PROPERTIES[p]}, {EVIDENCE[e][0]} ({EVIDENCE[e][1]}): {cell['word']}"
                         + (f" ({qualifier})" if qualifier else ""))
    traces = [go.Scatter(x=hx, y=hy, mode="markers", marker=dict(size=40, opacity=0), hovertext=htext,
                         hoverinfo="text", showlegend=False, name="cells")]
    # the legend: one square per category, in CATEGORIES' order
    traces += [go.Scatter(x=[None], y=[None], mode="markers", name=c,
                          marker=dict(symbol="square", size=14, color=VERDICT_COLORS[c],
                                      line=dict(color=AXIS_LINE, width=0.5)))
               for c in CATEGORIES]
    if (g["category"] == SURVIVAL).any():
        traces.append(go.Scatter(x=[None], y=[None], mode="markers", name="framed: survival",
                                 marker=dict(symbol="square-open", size=14, color=INK)))
    traces.append(go.Scatter(x=[None], y=[None], mode="markers", name=f"{QUALIFIED_MARK} paler: qualified",
                             marker=dict(symbol="square", size=14, color=VERDICT_COLORS["supported"],
                                         opacity=QUALIFIED_OPACITY, line=dict(color=AXIS_LINE, width=0.5))))
    fig = go.Figure(traces)
    labelled(fig, "The verdicts at a glance: each property against each line of evidence", "", "",
             legend="verdict")
    fig.update_layout(
        shapes=shapes, annotations=notes, height=110 + 62 * len(props), hovermode="closest",
        margin=dict(l=10, r=10, t=170, b=60), plot_bgcolor=VERDICT_COLORS["not tested"],
        # the title above the column headers, which never rotate into it
        title=dict(y=0.995, yanchor="top"),
        legend=dict(orientation="h", x=0, y=-0.02, xanchor="left", yanchor="top"),
        xaxis=dict(tickvals=list(range(len(evid))), side="top", showline=False, ticks="", showgrid=False, tickangle=0,
                   # short and small: seven columns of about 90 px, the headers never rotate
                   ticktext=[f"{_two_lines(EVIDENCE[e][0], 8)}<br><i>{_short_chapters(EVIDENCE[e][1])}</i>"
                             for e in evid], tickfont=dict(size=11),
                   range=[-0.5, len(evid) - 0.5], fixedrange=True),
        yaxis=dict(tickvals=list(range(len(props))), ticktext=[PROPERTIES[p] for p in props], autorange="reversed",
                   showline=False, ticks="", showgrid=False, fixedrange=True))
    return fig
