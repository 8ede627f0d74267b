"""The horizon experiment's figures: what they draw is the analysis' numbers, with or without runs."""
from __future__ import annotations

import numpy as np
import pytest

from tanbias.figures import horizon as hf
from tanbias.lab.analysis import horizon, horizon_report


@pytest.mark.slow
@pytest.mark.committed
def test_the_horizons_figure_draws_each_interval_as_a_ratio():
    a = horizon_report.analyse()           # memoised: the book and the other tests share it
    fig = hf.horizons_figure(a.horizons, a.contrasts)
    assert fig.layout.title.text and fig.layout.xaxis.title.text
    by_name = {tr.name: tr for tr in fig.data}
    assert "320 steps" in by_name                              # chapter 13's six long contrasts
    at320 = by_name["320 steps"]
    ok = a.horizons[np.isfinite(a.horizons["estimate_320"])]
    assert np.allclose(sorted(at320.x), sorted(np.exp(ok["estimate_320"])))
    assert len(at320.y) == len(ok)


@pytest.mark.slow
@pytest.mark.committed
def test_the_figures_say_when_nothing_is_in_yet():
    a = horizon.analyse_horizon(loaded={}, stand_ins={})
    empty = hf.collapse_figure(a.trajectory)
    assert not empty.data and "no collapse run" in empty.layout.annotations[0].text


@pytest.mark.slow
@pytest.mark.committed
def test_the_collapse_figure_has_one_line_per_run():
    a = horizon_report.analyse()           # memoised: the book and the other tests share it
    fig = hf.collapse_figure(a.trajectory)
    n = a.trajectory[a.trajectory["part"] == "collapse"]["run"].nunique()
    assert len(fig.data) == n
    if n:
        assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text
        assert max(max(tr.y) for tr in fig.data) <= 1.0
