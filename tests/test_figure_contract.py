"""Figures keep their contract (DESIGN.md, "Where things go": a figure, a constant).

* No colour is spelled as a literal (``#rgb``, ``#rrggbb``, ``#rrggbbaa``, ``rgb(``,
  ``rgba(``, or a bare CSS name such as ``"grey"``) in a string of any module of the
  package but :mod:`tanbias.palette`, which names every colour once. Only string
  literals are read (with :mod:`tokenize`), so ``# see #170`` in a comment is not
  a colour.
* The figure modules (``tanbias.figures.<topic>``) take their colours from
  :mod:`tanbias.figures`, never from the palette directly.
* Every public function of a figure module is annotated to return a
  :class:`plotly.graph_objects.Figure`, a :class:`tanbias.figures.interactive.Interactive` or a
  :class:`tanbias.figures.SVGFigure` (a static figure, drawn without a browser), unless it is listed
  below as a data helper.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import io
import re
import tokenize
from pathlib import Path

import plotly.graph_objects as go
import pytest

from tanbias.figures import SVGFigure
from tanbias.figures.interactive import Interactive

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "tanbias"
PALETTE = PKG / "palette.py"

COLOUR = re.compile(r"(?<![\w&])#(?:[0-9a-fA-F]{8}|[0-9a-fA-F]{6}|[0-9a-fA-F]{3})\b"
                    r"|\brgba?\(")
#: CSS colour names that, as a whole string, can only mean a colour
NAMED = {"black", "white", "grey", "gray", "red", "green", "blue", "darkgrey", "lightgrey"}

#: the figure topics: every module of tanbias/figures/ but the machinery that draws them
#: (the interactive, the book's renderer, and the report page of python -m tanbias measure,
#: which puts the topics' figures on one page)
FIGURE_MODULES = sorted(f"tanbias.figures.{p.stem}" for p in (PKG / "figures").glob("*.py")
                        if p.stem not in ("__init__", "interactive", "renderer", "report"))
#: Public functions of figure modules that return data, not a figure (module -> names).
#: Each is a candidate to become private or to move to the lab module that owns its data;
#: both modules belong to the lab's figures.
DATA_HELPERS: dict = {}
#: Builders not annotated yet; each entry must leave this list once its builder is annotated
#: (the test says so).
PENDING: dict = {}


def colour_literals(source: str) -> list[tuple[int, str]]:
    """(line, string) of every string literal of ``source`` that spells a colour."""
    found = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type != tokenize.STRING:
            continue
        bare = tok.string.lstrip("rRbBuUfF").strip("\"'")
        if COLOUR.search(tok.string) or bare.lower() in NAMED:
            found.append((tok.start[0], tok.string))
    return found


@pytest.mark.parametrize("source, flagged", [
    ('c = "#0072B2"', True),
    ("c = '#222'", True),
    ('c = "#11223344"', True),
    ("c = f'<pre style=\"color:#b00\">{x}</pre>'", True),
    ('c = "rgba(255,255,255,0.7)"', True),
    ('c = "rgb(0, 0, 0)"', True),
    ('c = "grey"', True),
    ("x = 1  # see #170, colour #222 in a comment", False),
    ('s = "see ticket #17"', False),
    ('s = "&#123; is an entity, #abcdefg is not a colour"', False),
    ('s = "plotly_white"', False),
])
def test_the_colour_detector(source, flagged):
    assert bool(colour_literals(source)) is flagged


@pytest.mark.slow
def test_no_colour_literal_outside_the_palette():
    bad = []
    for path in sorted(PKG.rglob("*.py")):
        if path == PALETTE:
            continue
        bad += [f"{path.relative_to(ROOT)}:{line}: {text[:60]}"
                for line, text in colour_literals(path.read_text(encoding="utf8"))]
    assert not bad, ("colour literals outside tanbias/palette.py (name the colour there and "
                     "import it; figure modules from tanbias.figures):\n" + "\n".join(bad))


def test_the_detector_finds_the_palettes_colours():
    """The one file allowed colour literals holds them (tests/test_palette.py tests their values)."""
    assert colour_literals(PALETTE.read_text(encoding="utf8"))


def _imports_palette(module: str, tree: ast.Module) -> list[int]:
    """Lines of ``module`` that import tanbias.palette (or a name from it)."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            lines += [node.lineno for a in node.names if a.name == "tanbias.palette"]
        elif isinstance(node, ast.ImportFrom):
            parts = module.split(".")
            base = (node.module or "") if node.level == 0 else ".".join(
                parts[:len(parts) - node.level] + ([node.module] if node.module else []))
            if "tanbias.palette" in {base} | {f"{base}.{a.name}" for a in node.names}:
                lines.append(node.lineno)
    return lines


@pytest.mark.parametrize("module", FIGURE_MODULES)
def test_figure_modules_take_their_colours_from_tanbias_figures(module):
    tree = ast.parse((ROOT / (module.replace(".", "/") + ".py")).read_text(encoding="utf8"))
    lines = _imports_palette(module, tree)
    assert not lines, f"{module} imports tanbias.palette (lines {lines}): import from tanbias.figures"


def _public_functions(module: str):
    mod = importlib.import_module(module)
    return {name: fn for name, fn in vars(mod).items()
            if inspect.isfunction(fn) and fn.__module__ == module and not name.startswith("_")}


@pytest.mark.parametrize("module", FIGURE_MODULES)
def test_figure_builders_return_a_figure_or_an_interactive(module):
    helpers, pending = DATA_HELPERS.get(module, set()), PENDING.get(module, set())
    bad, done = [], []
    for name, fn in sorted(_public_functions(module).items()):
        if name in helpers:
            continue
        returns = inspect.signature(fn, eval_str=True).return_annotation
        ok = returns is go.Figure or returns is Interactive or returns is SVGFigure
        if name in pending:
            if ok:
                done.append(name)
        elif not ok:
            bad.append(f"{name} -> {returns if returns is not inspect.Signature.empty else '?'}")
    assert not bad, (f"{module}: public functions that are not annotated to return go.Figure, "
                     f"Interactive or SVGFigure: {bad}. Annotate them, or make a data helper private (or move "
                     f"it to the maths/lab module that owns the data).")
    assert not done, f"{module}: {done} are annotated now: remove them from PENDING"
    stale = (helpers | pending) - set(_public_functions(module))
    assert not stale, f"{module}: {sorted(stale)} listed here but not public functions any more"
