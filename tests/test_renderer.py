"""The book's plotly renderer (tanbias.figures.renderer): HTML only, no plotly.js and no CDN
MathJax in a page, installed as plotly's default only where the book is built."""

from __future__ import annotations

import re

import plotly.graph_objects as go
import plotly.io as pio
import pytest

from tanbias.figures import renderer

FIGURE = {"data": [{"type": "scatter", "y": [1, 2]}], "layout": {}}


def test_book_renderer_emits_html_only_without_cdn():
    bundle = renderer.BookRenderer().to_mimebundle(go.Figure(go.Scatter(y=[1, 2])).to_dict())
    assert list(bundle) == ["text/html"]
    html = bundle["text/html"]
    assert "Plotly.newPlot" in html and "mathjax" not in html.lower()
    assert re.findall(r"<script[^>]*\bsrc=", html) == []
    assert "function(root, factory)" not in html  # no plotly.js bundle inside


@pytest.mark.parametrize("tag", [
    '<script src="https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-svg.js"></script>',
    "<script type='text/javascript' SRC='https://cdnjs.cloudflare.com/ajax/libs/MathJax/2.7.5/MathJax.js'> </script>",
    '<script src="/_static/mathjax/tex-chtml.js" async></script>',
])
def test_every_mathjax_script_tag_goes_and_the_rest_stays(tag):
    page = f'<div id="a"></div>{tag}<script src="plotly.min.js"></script><script>var x = 1;</script>'
    kept = '<div id="a"></div><script src="plotly.min.js"></script><script>var x = 1;</script>'
    assert renderer.strip_mathjax(page) == kept
    assert renderer.strip_mathjax(kept) == kept


def test_plotlys_mathjax_2_configuration_goes_too():
    line = ('if (window.MathJax && window.MathJax.Hub && window.MathJax.Hub.Config) '
            '{window.MathJax.Hub.Config({SVG: {font: "STIX-Web"}});}')
    assert renderer.strip_mathjax(f"<script>{line}var y = 2;</script>") == "<script>var y = 2;</script>"


def test_figure_html_places_the_figure_where_asked_and_runs_the_script_on_it():
    html = renderer.figure_html(FIGURE, div_id="fig-1", post_script="console.log('{plot_id}')")
    assert 'id="fig-1"' in html and "console.log('fig-1')" in html
    assert '"displaylogo": false' in html and '"responsive": true' in html        # PLOT_CONFIG
    assert "Plotly.newPlot" in html and "<script src=" not in html
    other = renderer.figure_html(FIGURE, div_id="fig-2", config={"displayModeBar": False})
    assert '"displayModeBar": false' in other and "displaylogo" not in other


def test_frames_do_not_play_on_load_unless_asked():
    fig = go.Figure(go.Scatter(y=[1, 2]), frames=[go.Frame(data=[go.Scatter(y=[2, 1])], name="b")])
    assert "Plotly.animate" not in renderer.figure_html(fig, div_id="f")
    assert "Plotly.animate" in renderer.figure_html(fig, div_id="f", auto_play=True)


def test_renderer_install_rules():
    assert renderer.should_install({"TANBIAS_MODE": "static"})
    assert renderer.should_install({"TANBIAS_MODE": " Bench "})
    assert not renderer.should_install({"TANBIAS_MODE": "live"})
    assert not renderer.should_install({"JPY_SESSION_NAME": "x"})  # live JupyterLab: untouched
    assert not renderer.should_install({})  # plain Python, not a kernel


def test_install_registers_the_renderer_and_makes_it_default_only_when_asked(monkeypatch):
    monkeypatch.setattr(pio.renderers, "default", "json")
    monkeypatch.setenv("TANBIAS_MODE", "live")
    assert renderer.install() is False and pio.renderers.default == "json"
    assert isinstance(pio.renderers[renderer.RENDERER_NAME], renderer.BookRenderer)
    monkeypatch.setenv("TANBIAS_MODE", "static")
    assert renderer.install() is True and pio.renderers.default == renderer.RENDERER_NAME
    monkeypatch.setenv("TANBIAS_MODE", "live")
    assert renderer.install(force=True) is True and pio.renderers.default == renderer.RENDERER_NAME


@pytest.mark.slow
def test_kernels_started_like_the_book_build_are_not_live(tmp_path):
    """nbclient (what myst-nb uses) must not look like a Jupyter server kernel."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import os, plotly.io as pio, tanbias.figures  # importing the figures sets up plotting\n"
        "from tanbias.figures.interactive import resolve_mode\n"
        "print(os.environ.get('JPY_SESSION_NAME'), resolve_mode(), pio.renderers.default)")])
    env_mode = __import__("os").environ.pop("TANBIAS_MODE", None)
    try:
        # a hang guard: the cell (importing the figures in a fresh kernel) takes a few seconds
        NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    finally:
        if env_mode is not None:
            __import__("os").environ["TANBIAS_MODE"] = env_mode
    text = nb.cells[0].outputs[0]["text"].split()
    assert text == ["None", "static", "tanbias_book"]
