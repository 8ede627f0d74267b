"""Shared figure styling: one plotly template and a labelling helper.

Every figure of the book (all chapters) goes through this look: same font,
same colour cycle, same margins and hover behaviour, so that figures from
different chapters can be compared at a glance. Importing :mod:`tanbias`
registers the template as ``"tanbias"`` and makes it plotly's default.

Figure builders elsewhere in the package *return* a
:class:`plotly.graph_objects.Figure` and never call ``.show()``.
"""

from __future__ import annotations

import plotly.graph_objects as go
import plotly.io as pio

__all__ = ["COLORS", "TEMPLATE", "TEMPLATE_NAME", "register_template", "labelled", "new_figure"]

#: Colour cycle (Okabe-Ito, colour-blind safe), first colour = the main curve.
COLORS = (
    "#0072B2",  # blue
    "#D55E00",  # vermillion
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#E69F00",  # orange
    "#56B4E9",  # sky blue
    "#F0E442",  # yellow
    "#000000",  # black
)

TEMPLATE_NAME = "tanbias"

#: The book's additions to ``plotly_white``. :func:`register_template` registers
#: the *merged* template under one name: a ``"plotly_white+tanbias"`` string
#: would be merged again for every new figure (~60 ms each, which would make
#: live slider updates sluggish).
TEMPLATE = go.layout.Template(
    layout=dict(
        font=dict(family="Inter, 'Helvetica Neue', Arial, sans-serif", size=14, color="#222"),
        title=dict(x=0.0, xanchor="left", font=dict(size=17)),
        colorway=list(COLORS),
        margin=dict(l=70, r=30, t=70, b=60),
        hovermode="closest",
        legend=dict(bgcolor="rgba(255,255,255,0.7)", borderwidth=0),
        xaxis=dict(showline=True, linecolor="#444", ticks="outside", zeroline=False,
                   automargin=True),
        yaxis=dict(showline=True, linecolor="#444", ticks="outside", zeroline=False,
                   automargin=True),
    )
)


def register_template(make_default: bool = True) -> str:
    """Register :data:`TEMPLATE` with plotly; optionally make it the default.

    Returns
    -------
    str
        The registered name, ``"tanbias"``.

    Example
    -------
    >>> register_template()
    'tanbias'
    >>> import plotly.io as pio
    >>> pio.templates.default, pio.templates["tanbias"].layout.hovermode
    ('tanbias', 'closest')
    """
    if TEMPLATE_NAME not in pio.templates:
        pio.templates[TEMPLATE_NAME] = pio.templates.merge_templates(
            pio.templates["plotly_white"], TEMPLATE)
    if make_default:
        pio.templates.default = TEMPLATE_NAME
    return TEMPLATE_NAME


def labelled(fig: go.Figure, title: str, x: str, y: str, *, legend: str | None = None) -> go.Figure:
    """Give ``fig`` a title and axis titles (with units); return the same figure.

    Parameters
    ----------
    fig : plotly.graph_objects.Figure
        Figure to label, modified in place.
    title : str
        Figure title (plain text or plotly's HTML subset, e.g. ``η<sub>g</sub>``).
    x, y : str
        Axis titles; put units in brackets, e.g. ``"radius t [geodesic units]"``.
    legend : str, optional
        Legend title.

    Returns
    -------
    plotly.graph_objects.Figure
        ``fig`` itself, so calls can be chained.

    Example
    -------
    >>> fig = labelled(go.Figure(go.Scatter(x=[0, 1], y=[1, 0])), "A line", "x [m]", "y [m]")
    >>> fig.layout.title.text, fig.layout.xaxis.title.text, fig.layout.yaxis.title.text
    ('A line', 'x [m]', 'y [m]')
    """
    fig.update_layout(title=dict(text=title), xaxis_title=x, yaxis_title=y)
    if legend is not None:
        fig.update_layout(legend_title_text=legend)
    return fig


def new_figure(title: str, x: str, y: str, **layout) -> go.Figure:
    """An empty, labelled figure in the book style.

    Example
    -------
    >>> fig = new_figure("Empty", "t", "density", height=300)
    >>> fig.layout.height
    300
    """
    fig = go.Figure(layout=layout)
    return labelled(fig, title, x, y)

