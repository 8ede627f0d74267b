"""The figures package: every figure and interactive of the book, apart from the maths.

Each chapter topic has a module here (``tanbias.figures.<topic>``) that turns
the public data functions of a maths or lab module into plotly figures and
:class:`tanbias.figures.interactive.Interactive` definitions. The maths modules never
import plotly nor this package (``tests/test_layers.py`` keeps it so).

This ``__init__`` holds what every figure shares, one definition each:

* the book's plotly template (:data:`TEMPLATE`, same font, colour cycle,
  margins and hover behaviour everywhere), registered as ``"tanbias"`` and made
  plotly's default when this package is imported;
* the colours, every one named once in :mod:`tanbias.palette`
  (:data:`~tanbias.palette.COLORS`, Okabe-Ito; :data:`~tanbias.palette.KIND_COLORS`;
  the greys): figure modules import them from here, never as literals;
* :func:`labelled` and :func:`new_figure` (title and axis titles),
  :func:`shared_x_title` (one x title under a grid of panels) and :func:`log_axis` (a log axis
  with readable ticks);
* :func:`frozen_layout`, the cache of figure layouts that keeps live updates
  under 50 ms.

Importing this package also installs the book's plotly renderer
(:mod:`tanbias.figures.renderer`) when a chapter is executed for the built book.

Figure builders *return* a :class:`plotly.graph_objects.Figure` (or a
:class:`tanbias.figures.interactive.Interactive`, or an :class:`SVGFigure`: a static figure
that needs no browser to draw), say so in their annotation, and never
call ``.show()`` (``tests/test_figure_contract.py`` keeps it so).
"""

from __future__ import annotations

import functools
import json
import sys

import numpy as np

# plotly's renderers import nbformat, which imports jsonschema, which imports the optional
# rfc3987_syntax package when it is installed (JupyterLab's jupyter-events installs it): it
# compiles a grammar at import, about 3 s of CPU in every chapter's kernel, to check one string
# format ("iri") the book never validates. A None entry in sys.modules makes that optional
# import fail as if the package were absent, and jsonschema skips that one checker.
if "rfc3987_syntax" not in sys.modules:
    sys.modules["rfc3987_syntax"] = None

import plotly.graph_objects as go  # noqa: E402
import plotly.io as pio  # noqa: E402

from tanbias.figures import renderer  # noqa: E402

# every colour of the figures, from the one palette; the figure modules import them from here
from tanbias.errors import ParameterError  # noqa: E402
from tanbias.palette import (AXIS_LINE, BLACK, COLORS, FAINT_GREY, GREY, INK,  # noqa: E402, F401
                       KIND_COLORS, LEGEND_BACKGROUND, LEVEL_COLORSCALE, LIGHT_GREY,
                       REFERENCE_GREY, VERDICT_COLORS, WHITE)

# COLORS and KIND_COLORS are documented in their home, tanbias.palette
__all__ = ["TEMPLATE", "TEMPLATE_NAME", "register_template", "labelled", "shared_x_title", "log_axis", "new_figure",
           "frozen_layout", "SVGFigure"]


class SVGFigure(str):
    """A static figure: an SVG document, written by the package itself (no browser draws it, so it can be
    made wherever a chapter runs, Binder included). It is the text of the file a reader downloads, and a
    notebook or the book shows it as an image (``_repr_svg_``).

    >>> f = SVGFigure('<svg xmlns="http://www.w3.org/2000/svg"/>')
    >>> f._repr_svg_() == f and f.startswith("<svg")
    True
    """

    def _repr_svg_(self) -> str:
        return str(self)

TEMPLATE_NAME = "tanbias"

#: The book's additions to ``plotly_white``. :func:`register_template` registers
#: the *merged* template under one name: a ``"plotly_white+tanbias"`` string
#: would be merged again for every new figure (~60 ms each, which would make
#: live slider updates sluggish).
TEMPLATE = go.layout.Template(
    layout=dict(
        font=dict(family="Inter, 'Helvetica Neue', Arial, sans-serif", size=14, color=INK),
        title=dict(x=0.0, xanchor="left", font=dict(size=17)),
        colorway=list(COLORS),
        margin=dict(l=70, r=30, t=70, b=60),
        hovermode="closest",
        legend=dict(bgcolor=LEGEND_BACKGROUND, borderwidth=0),
        xaxis=dict(showline=True, linecolor=AXIS_LINE, ticks="outside", zeroline=False,
                   automargin=True),
        yaxis=dict(showline=True, linecolor=AXIS_LINE, ticks="outside", zeroline=False,
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


def shared_x_title(fig: go.Figure, text: str) -> go.Figure:
    """One x-axis title, centred under a grid of panels that share their x quantity; return ``fig``.

    Each panel's own x title would be centred under that panel alone, and a title longer than
    the panel runs into its neighbour's; so every axis title is cleared and ``text`` is written
    once below the bottom row, as a paper-anchored annotation (the bottom margin grows to hold it).

    Example
    -------
    >>> from plotly.subplots import make_subplots
    >>> fig = shared_x_title(make_subplots(rows=1, cols=2), "collision probability [log]")
    >>> fig.layout.xaxis.title.text, fig.layout.xaxis2.title.text, fig.layout.annotations[-1].text
    (None, None, 'collision probability [log]')
    """
    fig.for_each_xaxis(lambda ax: ax.update(title_text=None))
    fig.add_annotation(text=text, xref="paper", yref="paper", x=0.5, y=0.0, xanchor="center",
                       yanchor="top", yshift=-40, showarrow=False, font=dict(size=14), name="x title")
    fig.update_layout(margin=dict(b=100))
    return fig


def log_axis(values) -> dict:
    """A log axis over ``values`` with ticks a reader can read: a fixed range a little wider than
    the values, and 1-2-5 ticks per decade, or round linear steps where the values span too little
    of a decade for those.

    Plotly's own log ticks label only the mantissa between powers of ten (``2``, ``5``) and thin
    out on a narrow panel; an axis that spans a few per cent (chapter 10's language knob) gets
    none. Fixed ticks keep one scale across the frames of an interactive figure.

    Parameters
    ----------
    values : array-like of float
        The values the axis must hold (the finite ones > 0 are read).

    Returns
    -------
    dict
        Plotly axis properties: ``type``, ``range`` (log10), ``tickvals``, ``ticktext``.

    Raises
    ------
    ParameterError
        No finite positive value.

    Example
    -------
    >>> log_axis([302, 4604])["ticktext"]
    ['500', '1,000', '2,000', '5,000']
    >>> log_axis([302, 331])["ticktext"]
    ['300', '310', '320', '330', '340']
    """
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    if not v.size:
        raise ParameterError(f"values={list(values)!r} is not allowed: valid range is at least one finite "
                             "value > 0. Pass the values the axis must hold.")
    lo, hi = np.log10(v.min()), np.log10(v.max())
    pad = 0.06 * (hi - lo) + 0.01
    lo, hi = lo - pad, hi + pad
    a, b = 10 ** lo, 10 ** hi
    ticks: list[float] = []
    for mantissas in ((1,), (1, 2, 5)):
        ticks = [m * 10.0 ** e for e in range(int(np.floor(lo)), int(np.ceil(hi)) + 1) for m in mantissas
                 if a <= m * 10.0 ** e <= b]
        if len(ticks) >= 3:
            break
    if len(ticks) < 3:               # a narrow span: round linear steps (1, 2 or 5 x 10^k)
        raw = (b - a) / 4
        step = min((m * 10.0 ** np.floor(np.log10(raw)) for m in (1, 2, 5, 10)),
                   key=lambda s: abs(np.log(s / raw)))
        ticks = list(np.arange(np.ceil(a / step) * step, b, step))
    return {"type": "log", "range": [float(lo), float(hi)], "tickvals": [float(x) for x in ticks],
            "ticktext": [f"{x:,.0f}" if x >= 1 else f"{x:g}" for x in ticks]}


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



def frozen_layout(build):
    """Decorator: build a figure's layout once, hand out a fresh plain-dict copy per call.

    Merging the book's template into a ``go.Figure`` costs about 60 ms, more
    than a live update may take (chapter figures redraw in < 50 ms). ``build``
    returns a ``go.Figure`` carrying only the layout (its arguments must be
    hashable); the decorated function returns that layout as a new ``dict`` on
    every call (JSON round trip of a cached string), so callers can edit titles
    and axis ranges freely.

    Example
    -------
    >>> @frozen_layout
    ... def _layout(title):
    ...     return go.Figure(layout=dict(title=dict(text=title)))
    >>> a = _layout("A"); a["title"]["text"] = "changed"
    >>> _layout("A")["title"]["text"]
    'A'
    """
    @functools.lru_cache(maxsize=None)
    def cached(*args, **kwargs) -> str:
        return json.dumps(build(*args, **kwargs).to_plotly_json()["layout"])

    @functools.wraps(build)
    def fresh(*args, **kwargs) -> dict:
        return json.loads(cached(*args, **kwargs))

    fresh.cache_clear = cached.cache_clear
    return fresh


def _setup_plotting() -> None:
    """Make the book's template plotly's default and, when building, its renderer."""
    register_template(make_default=True)
    renderer.install()


_setup_plotting()
