"""The horizon experiment's figures: what they draw is the analysis' numbers, with or without runs."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from figurehelpers import static_ok
from tanbias.figures import horizon as hf
from tanbias.lab.analysis import horizon, horizon_report
from tanbias.lab.experiments import HORIZON_COLLAPSE, HORIZON_LONG


def planted_steps(part="collapse", cells=HORIZON_COLLAPSE, kind="encoder", seeds=(0, 1), layers=(1, 2)) -> pd.DataFrame:
    """A step table (horizon.step_table's columns): each cell peaks at its own height, per layer and as the mean."""
    rows = []
    for i, cell in enumerate(cells):
        for seed in seeds:
            for step in (0, 1, 3, 7, 18, 47, 319):
                for layer in (*layers, "mean"):
                    peak = 0.5 + 0.1 * i + (0.02 * layer if layer != "mean" else 0.0)
                    rows.append({"run": f"horizon-{kind}-{cell}-s{seed}", "kind": kind, "part": part, "cell": cell,
                                 "seed": seed, "step": step, "layer": layer,
                                 "raw": peak * np.exp(-((np.log1p(step) - 2) ** 2)), "isoscore": 0.3,
                                 "participation": 20.0, "mean_share": 0.5})
    return pd.DataFrame(rows)


def test_the_collapse_interactive_draws_each_cell_in_words_and_moves_with_the_layer():
    it = hf.collapse_interactive(planted_steps())
    mean, block2 = it.compute(layer="mean"), it.compute(layer=2)
    assert set(mean) == set(HORIZON_COLLAPSE)
    x, m, se, n = mean["random-causal"]
    assert x[0] == 1 and n == 2 and (se >= 0).all()
    assert np.nanmax(block2["random-causal"][1]) > np.nanmax(m)            # the planted layer offset
    fig = static_ok(it, 3)                                                  # layers mean, 1, 2
    names = {tr.get("name") for tr in fig["data"]}
    assert all(any(w in (nm or "") for nm in names) for w in hf.CELL_WORDS.values())
    assert not any("-" in (nm or "").split(" (")[0] and "<mask>" not in (nm or "") and "random" not in (nm or "")
                   for nm in names)


def test_the_long_interactive_draws_the_four_cells_of_one_architecture():
    it = hf.long_interactive(planted_steps("long", HORIZON_LONG, "decoder"), "decoder")
    data = it.compute(layer="mean")
    assert set(data) == set(HORIZON_LONG) and all(v[3] == 2 for v in data.values())
    fig = static_ok(it, 3)
    assert any("unigram head, proxy surgery" in (tr.get("name") or "") for tr in fig["data"])


def test_the_interactives_say_when_nothing_is_in_yet():
    empty = horizon.step_table({})
    it = hf.collapse_interactive(empty)
    assert all(v[3] == 0 for v in it.compute(layer="mean").values())
    fig = it.static_dict()
    assert not fig["data"] and "no run" in fig["layout"]["annotations"][0]["text"]


def _horizons(sig320=True, sig1280=False):
    return pd.DataFrame([{"contrast": "head_final", "kind": "decoder", "estimate_320": np.log(0.46),
                          "lo_320": np.log(0.42), "hi_320": np.log(0.51), "word_320": "negative",
                          "significant_320": sig320, "estimate_1280": np.log(0.6), "lo_1280": np.log(0.5),
                          "hi_1280": np.log(0.7), "word_1280": "negative", "significant_1280": sig1280,
                          "n_seeds_1280": 2, "interim": True, "horizon": "holds"}])


def test_the_horizons_figure_fills_what_is_significant_at_either_horizon():
    contrasts = pd.DataFrame(columns=["contrast", "kind", "part", "estimate", "lo", "hi", "significant"])
    fig = hf.horizons_figure(_horizons(True, False), contrasts)
    by = {tr.name: tr for tr in fig.data}
    assert by["320 steps"].marker.symbol == ("circle",) and by["1280 steps"].marker.symbol == ("circle-open",)
    assert np.allclose(by["320 steps"].x, [0.46]) and "filled" in fig.layout.title.text


@pytest.mark.slow
@pytest.mark.committed
def test_the_horizons_figure_draws_each_interval_as_a_ratio():
    a = horizon_report.analyse()           # memoised: the book and the other tests share it
    fig = hf.horizons_figure(a.horizons, a.contrasts)
    assert fig.layout.title.text and fig.layout.xaxis.title.text
    by_name = {tr.name: tr for tr in fig.data}
    at320 = by_name["320 steps"]
    ok = a.horizons[np.isfinite(a.horizons["estimate_320"])]
    assert np.allclose(sorted(at320.x), sorted(np.exp(ok["estimate_320"])))
    # chapter 13's significant contrasts are filled
    assert sum(s == "circle" for s in at320.marker.symbol) == int(ok["significant_320"].sum()) > 0
