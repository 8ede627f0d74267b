"""The static figures of chapter 10's direct knob (tanbias.figures.dose), on planted tables."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

import tanbias.figures.dose as dose_figures


def _adaptive_frame():
    g = np.random.default_rng(0)
    rows = [{"kind": kind, "level": level, "step": step, "seed": s, "frac": step / 320,
             "participation": 10 + g.normal(), "heldout_loss": 7 + g.normal(0, 0.1)}
            for kind in ("encoder", "decoder") for level in ("skewed", "b100") for step in (16, 160, 304)
            for s in range(3)]
    return pd.DataFrame(rows)


def test_adaptive_figure_splits_early_and_late_and_names_its_x_once():
    fig = dose_figures.adaptive_figure(_adaptive_frame())
    assert isinstance(fig, go.Figure) and fig.layout.title.text
    early = [t for t in fig.data if t.xaxis == "x"]
    assert sum(len(t.x) for t in early) == 2 * 2 * 1 * 3                 # step 16 alone is early (≤ 30 %)
    for t in fig.data:                                                   # deviations from each cell's mean
        assert abs(float(np.mean(t.y))) < 0.2
    titles = [a.text for a in fig.layout.annotations if a.name == "x title"]
    assert titles == ["participation ratio − its cell mean [within-cell SDs]"]
    assert not fig.layout.xaxis.title.text and not fig.layout.xaxis2.title.text
    assert fig.layout.yaxis.title.text == "held-out loss − its cell mean [nats]"


def test_progress_figure_draws_each_level_of_the_direct_knob():
    g = np.random.default_rng(1)
    rows = [{"run": f"{k}-{lv}-{s}", "kind": k, "level": lv, "seed": s, "on_token": True, "gain": g.normal(1, 0.2),
             "log_enrichment_late": g.normal(2.5, 0.1)}
            for k in ("encoder", "decoder") for lv in ("skewed", "b16", "b37", "b100") for s in range(2)]
    fig = dose_figures.progress_figure(pd.DataFrame(rows))
    assert {t.name for t in fig.data} == {"skewed", "b16", "b37", "b100"} and len(fig.data) == 8
    assert fig.layout.xaxis.title.text == "gain over unigram [nats]"
