"""The figures of the sweep (tanbias.figures.sweep), on the smoke sweep."""
from __future__ import annotations

import pytest

import tanbias.figures.sweep as sweep_figures
from tanbias.lab.analysis import sweep


@pytest.mark.parametrize("make", [sweep_figures.trajectory_interactive, sweep_figures.cells_interactive,
                                  sweep_figures.eta_interactive, sweep_figures.radius_cdf_interactive])
@pytest.mark.slow
def test_interactives_render_every_frame(loaded, make):
    it = make(loaded)
    d = it.static_dict()
    assert d["data"] and d.get("frames")


@pytest.mark.slow
def test_effects_figure_has_a_row_per_contrast(loaded):
    m = sweep.run_metrics(loaded)
    fig = sweep_figures.effects_figure(sweep.effects(m), sweep.timing(loaded))
    assert len(fig.data) == 3
    assert list(fig.layout.yaxis.ticktext)[-1].startswith("last step / peak")
    assert len(fig.data[1].x) == len(sweep.CONTRASTS)
