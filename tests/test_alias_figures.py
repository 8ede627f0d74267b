"""The figures of chapter 11's aliasing knob (tanbias.figures.alias), on planted tables."""
from __future__ import annotations

import numpy as np
import pytest
import pandas as pd
import plotly.graph_objects as go

import tanbias.figures.alias as alias_figures
from tanbias.figures.interactive import Interactive
from tanbias.lab.analysis.alias_design import positions


def _table(knob="alias", levels=None):
    g = np.random.default_rng(0)
    levels = levels or list(positions())
    rows = []
    for kind in ("encoder", "decoder"):
        for s in range(3):
            for i, level in enumerate(levels):
                rows.append({"run": f"{kind}-{level}-{s}", "kind": kind, "level": level, "seed": s,
                             f"on_{knob}": True, "collision": 3e-3 / 2.5 ** i, "gain": 1.5 - 0.1 * i,
                             **{c: g.normal() for c in alias_figures.PANELS if c != "gain"}})
    return pd.DataFrame(rows)


def test_chain_figure_draws_every_panel_for_both_architectures():
    fig = alias_figures.chain_figure(_table())
    assert isinstance(fig, go.Figure)
    assert len(fig.data) == 2 * 2 * len(alias_figures.PANELS)          # runs + level means, per kind and panel
    # x rises as input frequencies flatten: 1 / collision, on a log axis that holds every run, with ticks
    x = fig.data[0].x
    assert np.allclose(x, 1 / _table().query("kind == 'encoder'")["collision"])
    ax = fig.layout.xaxis
    assert ax.type == "log" and ax.autorange is None and len(ax.tickvals) >= 3
    assert 10 ** ax.range[0] < min(x) and max(x) < 10 ** ax.range[1]
    assert fig.layout.title.text and [a.text for a in fig.layout.annotations][:2] == list(alias_figures.PANELS.values())[:2]
    _one_x_title(fig, alias_figures.SHOWN)


def _one_x_title(fig, text):
    """The grid's x quantity is named once, under it, and by no panel's own axis (a long title centred
    under each narrow panel runs into its neighbour's)."""
    assert [a.text for a in fig.layout.annotations if a.name == "x title"] == [text]
    fig.for_each_xaxis(lambda ax: not ax.title.text or pytest.fail(f"a panel's own x title: {ax.title.text}"))


def test_learning_figure_sets_both_knobs_side_by_side():
    fig = alias_figures.learning_figure(_table(), _table("token", ["skewed", "b16", "b37", "b100"]))
    names = {t.name for t in fig.data}
    assert names == {"aliasing knob (text kept)", "direct knob (words removed)"} and len(fig.data) == 8
    _one_x_title(fig, alias_figures.SHOWN)
    assert fig.layout.yaxis.title.text == "gain over unigram [nats]"
    assert alias_figures.learning_figure(_table().iloc[:0], _table("token")).data    # no aliasing run yet


def test_convergence_interactive_renders_every_frame_and_an_empty_table():
    rows = [{"kind": k, "layer": l, "level": lv, "step": s, "log_ratio": np.log(2.0 / (1 + s / 10)), "seed": 0}
            for k in ("encoder", "decoder") for l in (1, 2) for lv in ("k1", "k2", "k3") for s in (0, 10, 100)]
    it = alias_figures.convergence_interactive(pd.DataFrame(rows))
    assert isinstance(it, Interactive)
    d = it.static_dict()
    assert len(d["data"]) == 3 and d.get("frames")
    assert alias_figures.convergence_interactive(pd.DataFrame(columns=["kind", "layer", "level", "step",
                                                                       "log_ratio"])).static_dict()["data"]
