"""What every figure shares (tanbias.figures): the book's template made plotly's default, titles
and axis titles, one x title under a grid, and the cache of layouts that live updates read."""

from __future__ import annotations

import json

import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

import tanbias.figures as F
from tanbias import palette


def test_importing_the_figures_makes_the_books_template_the_default():
    assert pio.templates.default == F.TEMPLATE_NAME == "tanbias"
    merged = pio.templates[F.TEMPLATE_NAME].layout
    assert list(merged.colorway) == list(palette.COLORS)
    assert merged.font.color == palette.INK and merged.hovermode == "closest"
    assert merged.plot_bgcolor == pio.templates["plotly_white"].layout.plot_bgcolor    # plotly_white beneath


def test_registering_again_keeps_one_merged_template(monkeypatch):
    monkeypatch.setattr(pio.templates, "default", "plotly")
    before = pio.templates[F.TEMPLATE_NAME]
    assert F.register_template(make_default=False) == "tanbias" and pio.templates.default == "plotly"
    assert pio.templates[F.TEMPLATE_NAME] is before
    F.register_template()
    assert pio.templates.default == "tanbias"


def test_a_new_figure_is_empty_and_labelled():
    fig = F.new_figure("A title", "t [geodesic units]", "density", height=320)
    assert fig.layout.title.text == "A title" and fig.layout.height == 320 and not fig.data
    assert fig.layout.xaxis.title.text == "t [geodesic units]" and fig.layout.yaxis.title.text == "density"


def test_labelled_sets_the_titles_in_place_and_the_legend_only_when_given():
    fig = go.Figure(go.Scatter(y=[1, 2]))
    assert F.labelled(fig, "T", "x [m]", "y [m]") is fig
    assert fig.layout.legend.title.text is None
    F.labelled(fig, "T2", "x", "y", legend="architecture")
    assert (fig.layout.title.text, fig.layout.legend.title.text) == ("T2", "architecture")


def test_a_grid_shares_one_x_title_below_its_bottom_row():
    fig = make_subplots(rows=2, cols=3)
    fig.update_xaxes(title_text="per panel")
    F.shared_x_title(fig, "collision probability [log]")
    axes = [fig.layout[k] for k in fig.layout if k.startswith("xaxis")]
    assert len(axes) == 6 and all(ax.title.text is None for ax in axes)
    (note,) = [a for a in fig.layout.annotations if a.name == "x title"]
    assert (note.text, note.xref, note.yref, note.x, note.yanchor) == (
        "collision probability [log]", "paper", "paper", 0.5, "top")
    assert note.yshift < 0 and fig.layout.margin.b >= -note.yshift        # the margin holds it


def test_a_frozen_layout_is_built_once_per_argument_and_copied_for_every_caller():
    calls = []

    @F.frozen_layout
    def layout(title, height=300):
        calls.append(title)
        return go.Figure(layout=dict(title=dict(text=title), height=height))

    a = layout("A")
    a["title"]["text"] = "changed"
    a["height"] = 1
    again = layout("A")
    assert again["title"]["text"] == "A" and again["height"] == 300 and again is not a
    assert layout("B", height=200)["height"] == 200
    assert calls == ["A", "B"]
    json.dumps(again)                                 # plain JSON: a figure dict takes it as it is
    layout.cache_clear()
    layout("A")
    assert calls == ["A", "B", "A"]
