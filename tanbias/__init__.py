"""tanbias: teach and numerically test the tangent-bias hypothesis of transformer anisotropy.

Importing the package imports nothing heavy: the maths modules need numpy and
scipy only. Plotting is set up by :mod:`tanbias.figures` when a figure module
is imported: the book's plotly template becomes the default and, when the book
is being built (``TANBIAS_MODE=static``, or a kernel that no Jupyter server
started, i.e. myst-nb / nbclient), plotly's renderer becomes
:class:`tanbias.figures.renderer.BookRenderer` (``text/html``, no plotly.js, no CDN
MathJax). In a live JupyterLab kernel plotly's own rendering is kept.

See ``DESIGN.md`` for the map of modules and their layers.

``__version__`` is the one source of the version: the installed distribution's metadata
(``pyproject.toml`` reads it), ``tanbias --version``, the built book's footer and every new run
and measurement manifest take it from here. ``CHANGELOG.md`` says how releases are tagged.
"""

__version__ = "0.2.0"
