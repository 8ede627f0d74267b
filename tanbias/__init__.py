"""tanbias: teach and numerically test the tangent-bias hypothesis of transformer anisotropy.

Importing the package sets up plotting for wherever it runs:

* the book's plotly template (:mod:`tanbias.figures`) becomes the default;
* when the book is being built (``TANBIAS_MODE=static``, or a kernel that no
  Jupyter server started, i.e. myst-nb / nbclient), plotly's default renderer
  becomes :class:`tanbias.renderer.BookRenderer` (``text/html``, no plotly.js,
  no CDN MathJax). In a live JupyterLab kernel plotly's own rendering is kept.

See ``DESIGN.md`` for the map of modules.
"""

__version__ = "0.1.0"


def _setup_plotting() -> None:
    try:
        from . import figures, renderer
    except ImportError:  # plotly missing: the numerical modules still work
        return
    figures.register_template(make_default=True)
    renderer.install()


_setup_plotting()
