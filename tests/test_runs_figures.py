"""The figures of committed training runs (tanbias.figures.runs), on chapter 7's two seed-0 runs."""
from __future__ import annotations

import numpy as np
import pytest

import tanbias.figures.runs as run_figures
from tanbias.lab.analysis import sweep


@pytest.fixture(scope="module")
def runs():
    return sweep.load_runs()


def test_log_range_holds_the_values_and_the_reference():
    lo, hi = run_figures._log_range([2.0, 80.0], include=1.0)
    assert lo < 0 < np.log10(80.0) < hi                       # 1 (decade 0) is inside, so is 80
    lo, hi = run_figures._log_range([0.05, 0.5, -1.0, np.nan], include=1.0)
    assert lo < np.log10(0.05) and hi > 0                     # non-positive and NaN values are left out
    lo, hi = run_figures._linear_range([0.1, 0.7], include=0.0)
    assert lo < 0 < 0.7 < hi


@pytest.mark.slow
def test_enrichment_is_drawn_on_a_log_axis_with_its_reference_at_one(runs):
    it = run_figures.alignment_interactive(runs)
    d = it.static_dict()
    layout = d["layout"]
    assert layout["yaxis"]["type"] == "log"                   # a ratio: ×2 and ×0.5 sit equally far from 1
    lo, hi = layout["yaxis"]["range"]
    enrichment = np.concatenate([r.alignment["enrichment"].to_numpy() for r in runs.values()])
    assert lo < 0 < hi                                        # the reference line at 1 is on screen
    assert 10 ** lo <= enrichment.min() and enrichment.max() <= 10 ** hi
    assert hi - lo < 6                                        # a few decades, not a flattened linear axis
    lo2, hi2 = layout["yaxis2"]["range"]                      # the excess ΔIsoScore* panel holds its 0
    assert lo2 < 0 < hi2 and layout.get("yaxis2", {}).get("type") != "log"
    refs = sorted(s["y0"] for s in layout["shapes"])
    assert refs == [0.0, 1.0]
    # one frame per (layer, bucket), no metric slider: both metrics are always visible
    assert len(d["frames"]) == int(np.prod(it.shape)) and [p.name for p in it.params] == ["layer", "bucket"]
    legend = [t for t in d["data"] if t.get("showlegend", True) is not False]
    assert len(legend) == len(runs) * 3 and len(d["data"]) == 2 * len(legend)


@pytest.mark.parametrize("make", [run_figures.loss_figure])
def test_loss_figure_has_the_runs_and_their_baselines(runs, make):
    fig = make(runs)
    assert len(fig.data) == 3 * len(runs)


@pytest.mark.parametrize("make", [run_figures.layer_interactive, run_figures.radius_interactive])
@pytest.mark.slow
def test_interactives_render_every_frame(runs, make):
    d = make(runs).static_dict()
    assert d["data"] and d.get("frames")
