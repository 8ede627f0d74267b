"""The figures of chapter 10's knobs (tanbias.figures.dose), on planted tables."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

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


def _chain_table():
    """Both knobs' runs: the token knob divides the collision probability by 15, the language knob by 1.1."""
    g = np.random.default_rng(2)
    rows = []
    for kind in ("encoder", "decoder"):
        for s in range(2):
            for knob, levels, factor in (("token", ("skewed", "b16", "b37", "b100"), 2.5),
                                         ("language", ("T2", "T4", "uniform"), 1.03)):
                for i, level in enumerate(levels):
                    i = i if knob == "token" else i + 1
                    rows.append({"run": f"{kind}-{level}-{s}", "kind": kind, "level": level, "seed": s,
                                 "on_token": knob == "token", "on_language": knob == "language" or level == "skewed",
                                 "collision": 3.3e-3 / factor ** i, **{c: g.normal() for c in (
                                     "log_eta_q1", "log_eta_all", "log_enrichment_late", "log_enrichment_early",
                                     "mean_cosine_late", "isoscore_late", "gain", "accuracy", "unigram_accuracy")}})
    return pd.DataFrame(rows)


def test_log_axis_reads_left_to_right_with_ticks_on_a_wide_and_a_narrow_span():
    from tanbias.errors import ParameterError
    from tanbias.figures import log_axis

    for values in ([302.0, 4604.0], [302.0, 331.0], [0.5, 80.0]):
        ax = log_axis(values)
        lo, hi = 10 ** ax["range"][0], 10 ** ax["range"][1]
        assert ax["type"] == "log" and lo < min(values) and max(values) < hi     # not reversed, holds them
        assert len(ax["tickvals"]) >= 3 and all(lo <= v <= hi for v in ax["tickvals"])
        assert len(ax["ticktext"]) == len(ax["tickvals"]) and ax["tickvals"] == sorted(ax["tickvals"])
    assert log_axis([302.0, 331.0])["ticktext"][:2] == ["300", "310"]   # linear steps
    with pytest.raises(ParameterError, match="values"):
        log_axis([0.0, float("nan")])


@pytest.mark.slow
def test_chain_interactive_rises_to_the_right_and_keeps_its_sliders_off_the_axis_title():
    table = _chain_table()
    for knob in ("token", "language"):
        it = dose_figures.chain_interactive(table, knob)
        d = it.static_dict()
        lay = d["layout"]
        runs = table[table[f"on_{knob}"] & (table["kind"] == "encoder")]
        x = it.make_figure(bucket="q1", phase="late").data[0].x
        assert np.allclose(sorted(x), sorted(1 / runs["collision"]))                   # effective vocabulary
        for i in range(1, 7):
            ax = lay[f"xaxis{i if i > 1 else ''}"]
            assert ax["type"] == "log" and "autorange" not in ax and len(ax["tickvals"]) >= 3
            assert not ax.get("title", {}).get("text")                  # no panel's own title
        # the x title is an annotation under the grid, which the page script puts the sliders below
        assert [a["text"] for a in lay["annotations"] if a.get("name") == "x title"] == [dose_figures.VOCABULARY]
        assert [s["name"] for s in lay["sliders"]] == ["bucket", "phase"]
        assert knob in lay["title"]["text"] or dose_figures.KNOBS[knob] in lay["title"]["text"]
    with pytest.raises(Exception, match="knob"):
        dose_figures.chain_interactive(table, "alias")
