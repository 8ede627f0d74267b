"""Every colour the package uses, named, in one place (core layer: no imports).

The figures take their colours from here through :mod:`tanbias.figures`
(``COLORS``, ``KIND_COLORS`` and the book's plotly template); code below the
presentation layer (the PASS/FAIL lines of :class:`tanbias.stats.Check`, the
error box of :class:`tanbias.figures.interactive.Interactive`) imports this module
directly. ``tests/test_figure_contract.py`` rejects a colour literal anywhere
else in the package. The values are the strings plotly and the browser
receive, unchanged.

* :data:`COLORS`: the Okabe-Ito cycle (colour-blind safe), first colour = the
  main curve; also available one by one (:data:`BLUE`, :data:`VERMILLION`, ...).
* :data:`KIND_COLORS`: the lab's two architectures.
* The greys of reference lines, background points and markers, darkest first:
  :data:`INK`, :data:`AXIS_LINE`, :data:`GREY`, :data:`REFERENCE_GREY`,
  :data:`LIGHT_GREY`, :data:`FAINT_GREY`; :data:`LEGEND_BACKGROUND`.
* :data:`LEVEL_COLORSCALE`: the plotly colour scale of chapter 10's dose levels.
* :data:`PASS_COLOR`, :data:`FAIL_COLOR`, :data:`ERROR_COLOR`: the rendered checks
  and errors.
* :data:`VERDICT_COLORS`: the closing page's verdict categories (the verdicts figure), on
  :data:`WHITE` where a line of evidence does not test a property.

Example
-------
>>> COLORS[0] == BLUE and KIND_COLORS["decoder"] == VERMILLION and COLORS[-1] == BLACK
True
"""

from __future__ import annotations

__all__ = ["BLUE", "VERMILLION", "BLUISH_GREEN", "REDDISH_PURPLE", "ORANGE", "SKY_BLUE",
           "YELLOW", "BLACK", "COLORS", "KIND_COLORS", "INK", "AXIS_LINE", "GREY",
           "REFERENCE_GREY", "LIGHT_GREY", "FAINT_GREY", "LEGEND_BACKGROUND", "WHITE", "LEVEL_COLORSCALE",
           "PASS_COLOR", "FAIL_COLOR", "ERROR_COLOR", "VERDICT_COLORS"]

# ---------------------------------------------------------------- the Okabe-Ito cycle
#: Okabe-Ito blue: the main curve, the lab's encoder, the closed feedback loop.
BLUE = "#0072B2"
#: Okabe-Ito vermillion: the second curve, the lab's decoder, the cut loop, predictions.
VERMILLION = "#D55E00"
#: Okabe-Ito bluish green.
BLUISH_GREEN = "#009E73"
#: Okabe-Ito reddish purple.
REDDISH_PURPLE = "#CC79A7"
#: Okabe-Ito orange.
ORANGE = "#E69F00"
#: Okabe-Ito sky blue.
SKY_BLUE = "#56B4E9"
#: Okabe-Ito yellow.
YELLOW = "#F0E442"
#: Black: the last colour of the cycle; markers of "this run" and measured reference lines.
BLACK = "#000000"
#: Colour cycle (Okabe-Ito, colour-blind safe), first colour = the main curve.
COLORS = (BLUE, VERMILLION, BLUISH_GREEN, REDDISH_PURPLE, ORANGE, SKY_BLUE, YELLOW, BLACK)
#: The lab's two architectures, in every figure of the lab's chapters and the closing page.
KIND_COLORS = {"encoder": BLUE, "decoder": VERMILLION}

# ---------------------------------------------------------------- greys, darkest first
#: Text of the book's template; dark dashed reference lines and marker outlines.
INK = "#222"
#: Axis lines of the book's template.
AXIS_LINE = "#444"
#: Zero lines and reference levels of the lab's figures (CSS grey, ``#808080``).
GREY = "grey"
#: The "uniform" / "no bias" and other dotted or dashed reference lines of chapters 1-6.
REFERENCE_GREY = "#888"
#: The early-phase points of chapter 8's forest plot.
LIGHT_GREY = "#999999"
#: Background clouds of points (every token, beneath the highlighted ones).
FAINT_GREY = "#BBBBBB"
#: The legend's box: white, seven tenths opaque.
LEGEND_BACKGROUND = "rgba(255,255,255,0.7)"
#: White: the cells of the verdicts figure where a line of evidence does not test a property.
WHITE = "#FFFFFF"

# ---------------------------------------------------------------- scales, checks, errors
#: Plotly colour scale of chapter 10's dose levels (dark: skewed start, light: flattest).
LEVEL_COLORSCALE = "Viridis"
#: Left rule of a rendered check that passed (or failed as expected): green.
PASS_COLOR = "#1a7f37"
#: Left rule of a rendered check that failed: red.
FAIL_COLOR = "#cf222e"
#: Text of the error an interactive shows in place of its figure: dark red.
ERROR_COLOR = "#b00"
#: The closing page's verdict categories (:data:`tanbias.lab.analysis.verdicts.CATEGORIES`), one fill
#: each in the verdicts figure: green for a verdict as predicted, yellow for part of it, vermillion
#: against it, grey for no answer either way, sky blue for a test still running, white for none.
VERDICT_COLORS = {"supported": BLUISH_GREEN, "partly": YELLOW, "against": VERMILLION, "neither": LIGHT_GREY,
                  "not yet tested": SKY_BLUE, "not tested": WHITE}
