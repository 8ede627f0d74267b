"""The plotly renderer used when the book is built (all chapters).

Why a renderer of our own (DESIGN.md, "The stack"):

* executed by myst-nb, plotly picks its ``plotly_mimetype`` renderer, whose
  MIME type myst-nb drops: the figure silently disappears from the HTML;
* plotly's HTML renderers add a CDN MathJax ``<script>`` to every figure, which
  fights the page's own (self-hosted) MathJax and breaks the offline book;
* the default HTML renderer embeds the whole plotly.js (~4.8 MB) in each page.

:class:`BookRenderer` emits ``text/html`` only: a ``<div>`` plus the
``Plotly.newPlot`` call, no plotly.js (the book loads it once, as a static
asset listed in ``_config.yml``) and no MathJax tag. It is made the default
only when the book is being built (:func:`should_install`); in a live
JupyterLab kernel plotly's own mimetype rendering is left alone.
"""

from __future__ import annotations

import os
import re
import sys

from plotly.io._base_renderers import NotebookRenderer

__all__ = ["RENDERER_NAME", "PLOT_CONFIG", "BookRenderer", "figure_html", "strip_mathjax",
           "should_install", "install"]

RENDERER_NAME = "tanbias_book"

#: plotly.js config for every figure of the book.
PLOT_CONFIG = {"responsive": True, "displaylogo": False}

_MATHJAX_TAG = re.compile(
    r"<script[^>]*\bsrc=[\"'][^\"']*mathjax[^\"']*[\"'][^>]*>\s*</script>", re.IGNORECASE
)
_MATHJAX_V2_CONFIG = re.compile(
    r"if \(window\.MathJax && window\.MathJax\.Hub && window\.MathJax\.Hub\.Config\)"
    r" \{window\.MathJax\.Hub\.Config\(\{SVG: \{font: \"STIX-Web\"\}\}\);\}"
)


def strip_mathjax(html: str) -> str:
    """Remove any ``<script src=...mathjax...>`` tag and plotly's MathJax 2 config line.

    Example
    -------
    >>> strip_mathjax('<script src="https://cdn.x/mathjax/3/tex-svg.js"></script><div>ok</div>')
    '<div>ok</div>'
    """
    return _MATHJAX_V2_CONFIG.sub("", _MATHJAX_TAG.sub("", html))


def figure_html(fig_or_dict, *, post_script=None, div_id=None, config=None,
                auto_play: bool = False) -> str:
    """HTML for one figure, for a page that already loads plotly.js.

    Parameters
    ----------
    fig_or_dict : plotly.graph_objects.Figure or dict
        The figure (a dict is not validated again).
    post_script : str or list of str, optional
        JavaScript run after the plot exists; ``{plot_id}`` is replaced by the div id.
    div_id : str, optional
        Id of the figure's ``<div>``; random when omitted.
    auto_play : bool
        Play the frames on load (plotly's default is True; ours is False).

    Returns
    -------
    str
        ``<div>`` + ``<script>``, without plotly.js and without MathJax.

    Example
    -------
    >>> html = figure_html({"data": [{"type": "scatter", "y": [1, 2]}], "layout": {}}, div_id="f")
    >>> 'id="f"' in html, "plotly.min.js" in html, "mathjax" in html.lower()
    (True, False, False)
    """
    import plotly.io as pio

    html = pio.to_html(
        fig_or_dict,
        config=dict(PLOT_CONFIG if config is None else config),
        include_plotlyjs=False,
        include_mathjax=False,
        full_html=False,
        post_script=post_script,
        auto_play=auto_play,  # our frames are slider states, not an animation to play on load
        default_width="100%",
        default_height=450,  # used only when the layout has no height
        validate=not isinstance(fig_or_dict, dict),
        div_id=div_id,
    )
    return strip_mathjax(html)


class BookRenderer(NotebookRenderer):
    """``text/html``-only renderer for the built book.

    No plotly.js is embedded and nothing is injected on activation: the page
    loads plotly.js once. Any MathJax script tag plotly adds is stripped.

    Example
    -------
    >>> import plotly.graph_objects as go
    >>> bundle = BookRenderer().to_mimebundle(go.Figure(go.Scatter(y=[1, 3])).to_dict())
    >>> list(bundle)
    ['text/html']
    >>> "cdn" in bundle["text/html"], "Plotly.newPlot" in bundle["text/html"]
    (False, True)
    """

    def __init__(self, config=None, post_script=None):
        super().__init__(connected=False, config=config or PLOT_CONFIG,
                         post_script=post_script, include_plotlyjs=False)
        self.global_init = False

    def activate(self):
        """Nothing to inject: plotly.js is a static asset of the book."""

    def to_mimebundle(self, fig_dict):
        return {"text/html": figure_html(fig_dict, post_script=self.post_script,
                                          config=self.config, auto_play=self.auto_play)}


def _in_ipython_kernel() -> bool:
    return "ipykernel" in sys.modules and "IPython" in sys.modules and (
        getattr(sys.modules["IPython"], "get_ipython", lambda: None)() is not None
    )


def should_install(environ=None) -> bool:
    """Whether the book renderer should be plotly's default in this process.

    True when ``TANBIAS_MODE`` is ``static`` or ``bench`` (the Makefile sets
    ``static`` for the book build), or when it is unset and we run in a kernel
    that was *not* started by a Jupyter server (myst-nb and nbclient start
    kernels through jupyter_client, which sets ``JPY_PARENT_PID`` but not
    ``JPY_SESSION_NAME``; only jupyter_server's session manager sets the latter).

    Example
    -------
    >>> should_install({"TANBIAS_MODE": "static"}), should_install({"TANBIAS_MODE": "live"})
    (True, False)
    """
    env = os.environ if environ is None else environ
    mode = env.get("TANBIAS_MODE", "").strip().lower()
    if mode:
        return mode in ("static", "bench")
    return not env.get("JPY_SESSION_NAME") and _in_ipython_kernel()


def install(force: bool = False) -> bool:
    """Register :class:`BookRenderer` as ``"tanbias_book"``; make it default if needed.

    Parameters
    ----------
    force : bool
        Make it the default even if :func:`should_install` says no.

    Returns
    -------
    bool
        Whether the renderer is now plotly's default.

    Example
    -------
    >>> import plotly.io as pio
    >>> before = pio.renderers.default
    >>> install(force=True), pio.renderers.default
    (True, 'tanbias_book')
    >>> pio.renderers.default = before
    """
    import plotly.io as pio

    if RENDERER_NAME not in pio.renderers:
        pio.renderers[RENDERER_NAME] = BookRenderer()
    if force or should_install():
        pio.renderers.default = RENDERER_NAME
        return True
    return False
