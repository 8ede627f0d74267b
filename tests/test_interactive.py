"""The interactive-figure system: one definition, a live and a static rendering."""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import plotly.graph_objects as go
import pytest

from tanbias.figures import interactive as I
from tanbias.errors import ParameterError
from tanbias.figures.interactive import Interactive, Param


def _arc(t, R):
    r = np.linspace(-t, t, 41)
    return {"x": R * np.sin(r / R), "y": R * (1 - np.cos(r / R))}


def _arc_figure(data, t, R):
    fig = go.Figure([go.Scatter(x=data["x"], y=data["y"], name="arc"),
                     go.Scatter(x=data["x"], y=0 * data["x"], name="tangent")])
    fig.update_layout(title=f"t = {t:.3g}, R = {R:.3g}", xaxis_title="tangent offset",
                      yaxis_title="normal offset")
    return fig


def two_param_demo(**kw) -> Interactive:
    return Interactive(
        params=[Param("t", "radius t", 0.01, 0.5, default=0.1, log=True, steps=9),
                Param("R", "curvature radius R", 0.5, 4.0, default=1.0, log=True, steps=5)],
        compute=_arc, figure=_arc_figure, title="Arc", caption="Shrink t.", **kw)


def one_param_demo() -> Interactive:
    return Interactive(
        params=[Param("a", "slope a", 0.0, 2.0, default=1.0, steps=5)],
        compute=lambda a: {"x": np.linspace(0, 1, 11), "y": a * np.linspace(0, 1, 11)},
        figure=lambda d, a: go.Figure(go.Scatter(x=d["x"], y=d["y"])),
        title="Line", caption="")


def _decode(spec):
    return I._decode(spec)


# ------------------------------------------------------------------ Param
def test_param_grid_contains_default_and_keeps_ends():
    p = Param("t", "radius t", 0.01, 0.5, default=0.1, log=True, steps=9)
    assert len(p.grid) == 9 and p.grid[0] == 0.01 and p.grid[-1] == 0.5
    assert p.grid[p.default_index] == 0.1
    assert all(b > a for a, b in zip(p.grid, p.grid[1:]))


def test_param_kinds():
    assert Param("d", "d", 1, 6, default=2).kind == "int"
    assert Param("d", "d", 1, 3, default=2, steps=9).grid == (1, 2, 3)
    assert Param("x", "x", 0.0, 1.0).kind == "float"
    c = Param("regime", "data regime", options=("zipf", "uniform"), default="uniform")
    assert (c.kind, c.grid, c.default_index) == ("choice", ("zipf", "uniform"), 1)


@pytest.mark.parametrize("kwargs, words", [
    (dict(lo=0.5, hi=0.1), ["t.hi", "0.1", "(0.5, inf)"]),
    (dict(lo=0.1, hi=0.5, default=0.9), ["t.default", "0.9", "[0.1, 0.5]"]),
    (dict(lo=0.0, hi=0.5, log=True), ["t.lo", "0", "(0, inf)"]),
    (dict(lo=-1.0, hi=0.5, log=True), ["t.lo", "-1", "(0, inf)"]),
    (dict(lo=0.1, hi=0.5, steps=1), ["t.steps", "1", "[2, inf)"]),
    (dict(lo=0.1, hi=0.1), ["t.hi", "0.1"]),
    (dict(lo=None, hi=0.5), ["lo=None"]),
])
def test_bad_param_raises_parameter_error(kwargs, words):
    with pytest.raises(ParameterError) as err:
        Param("t", "radius t", **kwargs)
    assert isinstance(err.value, ValueError)
    for word in words:
        assert word in str(err.value)


def test_bad_categorical_and_name():
    with pytest.raises(ParameterError, match="at least 2"):
        Param("r", options=("only",))
    with pytest.raises(ParameterError, match="regime.default"):
        Param("regime", options=("a", "b"), default="c")
    with pytest.raises(ParameterError, match="identifier"):
        Param("not a name", "x", 0, 1)


def test_compute_out_of_range_names_parameter_value_and_range():
    demo = two_param_demo(register=False)
    with pytest.raises(ParameterError) as err:
        demo.compute(t=0.9, R=1.0)
    msg = str(err.value)
    assert "t=0.9" in msg and "[0.01, 0.5]" in msg
    with pytest.raises(ParameterError, match="Rr"):
        demo.compute(Rr=1.0)
    assert demo.compute(0.2)["x"].shape == (41,)  # positional, missing -> default


def test_interactive_checks_compute_signature_and_names():
    with pytest.raises(ParameterError, match="does not accept"):
        Interactive([Param("a", "a", 0.0, 1.0)], compute=lambda b: b, figure=lambda d, a: go.Figure(),
                    register=False)
    with pytest.raises(ParameterError, match="distinct"):
        Interactive([Param("a", "a", 0.0, 1.0), Param("a", "a", 0.0, 1.0)],
                    compute=lambda a: a, figure=lambda d, a: go.Figure(), register=False)


# ------------------------------------------------------------------ static rendering
@pytest.mark.slow
def test_static_figure_sliders_steps_default_and_frames():
    demo = two_param_demo(register=False)
    fig = demo.static_dict()
    sliders = fig["layout"]["sliders"]
    assert len(sliders) == 2
    assert [len(s["steps"]) for s in sliders] == [9, 5]
    assert [s["active"] for s in sliders] == [p.default_index for p in demo.params]
    assert sliders[0]["currentvalue"]["prefix"].startswith("radius t")
    assert [st["label"] for st in sliders[1]["steps"]] == ["0.5", "1", "1.41", "2.38", "4"]
    assert len(fig["frames"]) == 9 * 5 == math.prod(demo.shape)
    names = {f["name"] for f in fig["frames"]}
    assert "5-1" in names and "8-4" in names and "0-0" in names
    # the initial view is the default grid point
    default = next(f for f in fig["frames"] if f["name"] == "5-1")
    assert np.allclose(_decode(fig["data"][0]["y"]), _decode(default["data"][0]["y"]))
    assert "t = 0.1, R = 1" in default["layout"]["title"]["text"]
    # the figure stays valid plotly
    assert len(demo.static_figure().frames) == 45


@pytest.mark.slow
def test_static_axes_fixed_to_union_of_grid():
    demo = two_param_demo(register=False)
    lay = demo.static_dict()["layout"]
    ys = [_arc(t, R)["y"] for t in demo.params[0].grid for R in demo.params[1].grid]
    lo, hi = min(y.min() for y in ys), max(y.max() for y in ys)
    y0, y1 = lay["yaxis"]["range"]
    assert y0 <= lo and y1 >= hi and lay["yaxis"]["autorange"] is False
    free = two_param_demo(register=False, fixed_ranges=False).static_dict()["layout"]
    assert "range" not in free.get("yaxis", {})


def test_an_axis_the_figure_fits_itself_follows_each_frame():
    """A figure that sets its y range for each value (each reading its own scale) keeps it: every
    frame carries its own range, and the x axis keeps the grid's union."""
    scale = {"small": 1.0, "large": 100.0}
    demo = Interactive([Param("which", "which", options=("small", "large"))],
                       compute=lambda which: {"y": scale[which] * np.array([1.0, 2.0, 3.0])},
                       figure=lambda d, which: go.Figure(go.Scatter(x=[0, 1, 2], y=d["y"])).update_yaxes(
                           range=[0, 1.1 * d["y"].max()]),
                       title="fitted", register=False)
    fig = demo.static_dict()
    ranges = {f["name"]: f["layout"]["yaxis"]["range"] for f in fig["frames"]}
    assert ranges["0"][1] == pytest.approx(3.3) and ranges["1"][1] == pytest.approx(330.0)
    assert all("xaxis" not in f["layout"] for f in fig["frames"]) and fig["layout"]["xaxis"]["autorange"] is False


def test_static_data_is_compact_float32_typed_arrays():
    fig = two_param_demo(register=False).static_dict()
    spec = fig["frames"][3]["data"][0]["x"]
    assert spec["dtype"] == "f4" and "bdata" in spec


def test_multi_param_uses_post_script_single_param_animates():
    two, one = two_param_demo(register=False), one_param_demo()
    assert "plotly_sliderchange" in two.post_script()
    assert all(st["method"] == "skip" for st in two.static_dict()["layout"]["sliders"][0]["steps"])
    assert "plotly_sliderchange" not in one.post_script()
    step = one.static_dict()["layout"]["sliders"][0]["steps"][4]
    assert step["method"] == "animate" and step["args"][0] == ["4"]


def test_to_html_has_no_plotlyjs_no_mathjax_and_caption():
    html = two_param_demo(register=False).to_html()
    assert "Plotly.newPlot" in html and "plotly_sliderchange" in html
    assert len(html) < 400_000  # plotly.js itself is 4.8 MB: clearly not embedded
    assert re.findall(r"<script[^>]*\bsrc=", html) == []  # nothing fetched: no CDN, no plotly.js
    assert "mathjax" not in html.lower()
    assert 'class="tanbias-caption">Shrink t.' in html
    assert "Plotly.animate(" in html and "auto_play" not in html


@pytest.mark.slow
def test_budget_warns_and_hard_limit_raises(monkeypatch):
    demo = two_param_demo(register=False, budget_bytes=1000)
    with pytest.warns(I.FigureBudgetWarning):
        demo.to_html()
    monkeypatch.setattr(I, "HARD_LIMIT", 1000)
    with pytest.raises(ValueError, match="fewer steps"):
        two_param_demo(register=False).to_html()


def test_inconsistent_traces_are_rejected():
    demo = Interactive(
        [Param("k", "k", 1, 3, default=1)], compute=lambda k: k,
        figure=lambda d, k: go.Figure([go.Scatter(y=[0, 1])] * d), register=False)
    with pytest.raises(ParameterError, match="same traces"):
        demo.static_dict()


# ------------------------------------------------------------------ live rendering
@pytest.mark.slow
def test_live_widget_updates_figurewidget_in_place():
    import ipywidgets as W

    demo = two_param_demo(register=False)
    view = demo.widget()
    assert isinstance(view.sliders["t"], W.FloatLogSlider)
    assert isinstance(view.figure, go.FigureWidget)
    fw, trace = view.figure, view.figure.data[0]
    y0 = np.array(trace.y, dtype=float)
    view.sliders["t"].value = 0.37  # any value, not only grid points
    assert view.figure is fw and view.figure.data[0] is trace  # same widget, same trace object
    assert view.n_updates == 1
    assert np.allclose(fw.data[0].y, _arc(0.37, 1.0)["y"]) and not np.allclose(fw.data[0].y, y0)
    assert "t = 0.37" in fw.layout.title.text
    view.sliders["R"].value = 2.0
    assert np.allclose(fw.data[0].y, _arc(0.37, 2.0)["y"]) and view.n_updates == 2
    # axis ranges are the static grid's, so the live view does not rescale either
    assert fw.layout.yaxis.range == tuple(demo.static_dict()["layout"]["yaxis"]["range"])


def test_live_widget_kinds():
    import ipywidgets as W

    demo = Interactive(
        [Param("x", "x", 0.0, 1.0), Param("d", "d", 1, 4, default=2),
         Param("regime", "regime", options=("zipf", "uniform"))],
        compute=lambda x, d, regime: {"y": np.full(3, x * d)},
        figure=lambda data, **p: go.Figure(go.Scatter(y=data["y"])), register=False)
    view = demo.widget()
    assert isinstance(view.sliders["x"], W.FloatSlider)
    assert isinstance(view.sliders["d"], W.IntSlider)
    assert isinstance(view.sliders["regime"], W.SelectionSlider)
    view.sliders["regime"].value = "uniform"
    assert view.n_updates == 1
    assert len(demo.static_dict()["frames"]) == 7 * 4 * 2


def test_update_latency_reports_median_p95_and_max_of_the_updates(monkeypatch):
    """The figures are those of the timed updates, split into their parts: under a clock the test
    moves (each compute takes a planted time, nothing else any) they are exact. How fast a real
    update is, is make bench's (against its 50 ms target), never a test's."""
    planted_ms = [4.0, 1.0, 9.0, 2.0, 3.0]          # median 3 (mean 3.8), p95 8, max 9
    delays = iter([0.0] + planted_ms)             # the first compute draws the view's initial figure
    now = [0.0]

    def compute(t, R):
        now[0] += next(delays) / 1e3
        return _arc(t, R)

    monkeypatch.setattr(I.time, "perf_counter", lambda: now[0])
    # fixed_ranges=False: no grid of computes for the axes' ranges before the view, only the updates
    demo = Interactive(params=two_param_demo(register=False).params, compute=compute, figure=_arc_figure,
                       fixed_ranges=False, register=False)
    stats = demo.update_latency(n=len(planted_ms))
    assert stats["n"] == len(planted_ms) and next(delays, None) is None      # every planted update timed
    assert [stats["median_ms"], stats["p95_ms"], stats["max_ms"]] == pytest.approx(
        [np.median(planted_ms), np.percentile(planted_ms, 95), max(planted_ms)])
    assert stats["parts_median_ms"] == pytest.approx({"compute": np.median(planted_ms), "figure": 0.0,
                                                      "widget": 0.0})


def test_update_latency_times_real_updates():
    stats = two_param_demo(register=False).update_latency(n=3)
    assert stats["n"] == 3 and set(stats) == {"name", "n", "median_ms", "p95_ms", "max_ms", "parts_median_ms"}
    assert all(np.isfinite(stats[k]) and stats[k] > 0 for k in ("median_ms", "p95_ms", "max_ms"))


# ------------------------------------------------------------------ mode and display
def test_mode_resolution(monkeypatch):
    assert I.resolve_mode(environ={}) == "static"
    assert I.resolve_mode(environ={"JPY_SESSION_NAME": "ch.md"}) == "live"
    # every jupyter_client kernel (nbclient, myst-nb) has JPY_PARENT_PID: not a live signal
    assert I.resolve_mode(environ={"JPY_PARENT_PID": "42"}) == "static"
    assert I.resolve_mode(environ={"TANBIAS_MODE": "static", "JPY_SESSION_NAME": "x"}) == "static"
    assert I.resolve_mode("live", environ={"TANBIAS_MODE": "static"}) == "live"
    with pytest.raises(ParameterError, match="mode"):
        I.resolve_mode(environ={"TANBIAS_MODE": "fancy"})


def test_repr_mimebundle_per_mode(monkeypatch):
    demo = one_param_demo()
    monkeypatch.setenv("TANBIAS_MODE", "static")
    assert "Plotly.newPlot" in demo._repr_mimebundle_()["text/html"]
    monkeypatch.setenv("TANBIAS_MODE", "bench")
    assert list(demo._repr_mimebundle_()) == ["text/plain"]
    monkeypatch.setenv("TANBIAS_MODE", "live")
    bundle = demo._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_registry_collects_interactives():
    before = len(I.REGISTRY)
    demo = one_param_demo()
    assert I.REGISTRY[before:] == [demo]
