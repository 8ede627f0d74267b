"""The rivals chapter's figures (tanbias.figures.rivals), on planted tables."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from tanbias.figures import rivals as fr
from tanbias.figures.interactive import Interactive
from tanbias.lab.analysis import rivals

from figurehelpers import static_ok


def planted_trajectory(arms=("control", "long")):
    rows = []
    for kind in ("encoder", "decoder"):
        for head in ("standard", "unigram"):
            for arm in arms:
                for seed in (0, 1):
                    for step in (0, 1, 3, 10, 31, 99):
                        peak = 0.9 if head == "standard" else 0.5
                        for layer in (1, 2, "mean"):
                            rows.append({"kind": kind, "head": head, "arm": arm, "cell": f"{head}-{arm}",
                                         "seed": seed, "step": step, "layer": layer,
                                         "mean_cosine": peak * np.exp(-((np.log1p(step) - 2) ** 2))})
    return pd.DataFrame(rows)


def test_the_transient_draws_both_heads_in_both_panels_and_moves_with_the_layer():
    it = fr.transient_interactive(planted_trajectory(), {"encoder": [0, 1], "decoder": [0, 1]})
    assert isinstance(it, Interactive)
    data = it.compute(layer="mean")
    assert set(data) == {(k, h) for k in ("encoder", "decoder") for h in ("standard", "unigram")}
    x, m, se = data[("decoder", "unigram")]
    assert x[0] == 1 and np.nanmax(m) < np.nanmax(data[("decoder", "standard")][1])   # the planted peaks
    assert (se >= 0).all()
    assert static_ok(it, 3)["data"]                                   # layers mean, 1, 2


def test_the_long_runs_figure_draws_one_line_per_run():
    fig = fr.long_runs_figure(planted_trajectory())
    assert len(fig.data) == 2 * 2 * 2 and fig.layout.xaxis.type == "log"


def test_the_forest_splits_ratios_from_differences():
    rows = [{"family": "primary", "contrast": name, "kind": kind, "outcome": outcome, "estimate": -0.1,
             "lo": -0.2, "hi": 0.05, "p": 0.2, "p_holm": 0.4, "significant": False, "word": "indistinguishable"}
            for name, (outcome, _) in rivals.CONTRASTS.items() for kind in ("encoder", "decoder")]
    c = pd.DataFrame(rows)
    fig = fr.forest_figure(c)
    assert {t.name for t in fig.data} == {"encoder", "decoder"} and len(fig.data) == 4
    left = [t for t in fig.data if t.xaxis == "x"]
    assert all((np.asarray(t.x) > 0).all() for t in left)           # ratios
    assert fig.layout.xaxis.type == "log"


def test_the_initialisation_figure_has_the_four_readings():
    init = pd.DataFrame([{"attention": a, "input": i, "layer": layer, "positions": "content", "mean_cosine": 0.1}
                         for a in ("bidirectional", "causal") for i in ("masked", "unmasked") for layer in range(3)])
    fig = fr.initialisation_figure(init)
    assert len(fig.data) == 4 and fig.layout.title.text
