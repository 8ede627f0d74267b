"""Every colour of the package, named once (tanbias.palette): valid colours for plotly and the
browser, the Okabe-Ito cycle, the greys darkest first, green for a pass and red for a failure, and
a module that imports nothing."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import plotly.colors
import pytest
from _plotly_utils.basevalidators import ColorValidator

from tanbias import palette

#: the one CSS colour name the palette uses, as the CSS specification defines it
CSS_NAMES = {"grey": "#808080"}
#: Okabe & Ito's colour-blind-safe cycle, as RGB
OKABE_ITO = {(0, 0, 0), (230, 159, 0), (86, 180, 233), (0, 158, 115), (240, 228, 66), (0, 114, 178),
             (213, 94, 0), (204, 121, 167)}


def rgb(colour: str) -> tuple[int, int, int]:
    """(r, g, b) of a hex colour (#rgb, #rrggbb), an rgb()/rgba() string or a name of CSS_NAMES."""
    colour = CSS_NAMES.get(colour, colour)
    if m := re.fullmatch(r"#([0-9a-fA-F]{3})", colour):
        return tuple(int(c * 2, 16) for c in m[1])
    if m := re.fullmatch(r"#([0-9a-fA-F]{6})", colour):
        return tuple(int(m[1][i:i + 2], 16) for i in (0, 2, 4))
    if m := re.fullmatch(r"rgba?\((\d+),\s*(\d+),\s*(\d+)(,\s*[\d.]+)?\)", colour):
        return tuple(int(m[i]) for i in (1, 2, 3))
    raise ValueError(f"{colour!r}: not a colour this test reads (add it to CSS_NAMES)")


def luminance(colour: str) -> float:
    """Relative luminance (WCAG), 0 for black, 1 for white."""
    def lin(c):
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = map(lin, rgb(colour))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def colours() -> dict[str, str]:
    return {name: getattr(palette, name) for name in palette.__all__
            if isinstance(getattr(palette, name), str) and name != "LEVEL_COLORSCALE"}


@pytest.mark.parametrize("name", sorted(colours()))
def test_every_colour_is_one_plotly_and_the_browser_accept(name):
    value = colours()[name]
    assert ColorValidator("color", "palette").validate_coerce(value) == value
    rgb(value)


def test_every_public_name_is_defined_and_every_colour_public():
    assert all(hasattr(palette, name) for name in palette.__all__)
    defined = {n for n, v in vars(palette).items() if n.isupper() and not n.startswith("_")}
    assert defined == set(palette.__all__)


def test_the_cycle_is_okabe_ito_main_curve_first():
    assert len(palette.COLORS) == len(set(palette.COLORS)) == 8
    assert {rgb(c) for c in palette.COLORS} == OKABE_ITO
    assert palette.COLORS[0] == palette.BLUE and palette.COLORS[-1] == palette.BLACK


def test_the_two_architectures_have_two_colours_of_the_cycle():
    assert set(palette.KIND_COLORS) == {"encoder", "decoder"}
    assert set(palette.KIND_COLORS.values()) <= set(palette.COLORS)
    assert len(set(palette.KIND_COLORS.values())) == 2


def test_the_greys_are_darkest_first():
    greys = [palette.INK, palette.AXIS_LINE, palette.GREY, palette.REFERENCE_GREY, palette.LIGHT_GREY,
             palette.FAINT_GREY]
    assert all(len(set(rgb(g))) == 1 for g in greys), "a grey has equal red, green and blue"
    lum = [luminance(g) for g in greys]
    assert lum == sorted(lum) and len(set(lum)) == len(lum)


def test_a_pass_is_green_and_a_failure_or_an_error_red():
    r, g, b = rgb(palette.PASS_COLOR)
    assert g > r and g > b
    for colour in (palette.FAIL_COLOR, palette.ERROR_COLOR):
        r, g, b = rgb(colour)
        assert r > g and r > b


def test_the_level_scale_is_a_plotly_colour_scale():
    scale = plotly.colors.get_colorscale(palette.LEVEL_COLORSCALE)
    assert scale[0][0] == 0 and scale[-1][0] == 1
    assert luminance(scale[0][1]) < luminance(scale[-1][1])      # dark: skewed start, light: flattest


def test_the_palette_imports_nothing():
    """The core's lowest module: any module may import it, so it imports none."""
    tree = ast.parse(Path(palette.__file__).read_text(encoding="utf8"))
    imports = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert imports == ["from __future__ import annotations"]
