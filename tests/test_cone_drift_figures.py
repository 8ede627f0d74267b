"""The cone chapter's figure (tanbias.figures.cone_drift): two panels, two sliders, light enough
for the static book."""

import plotly.io as pio

from tanbias.figures.cone_drift import cone_figure, cone_interactive
from tanbias.theory.cone_drift import cone_drift


def test_the_figure_has_both_kinds_of_anisotropy_for_both_updates():
    fig = cone_figure(cone_drift(1.0, 0.0, n_tokens=40))
    assert len(fig.data) == 4 and {t.name for t in fig.data} == {"tangent-projected update",
                                                                  "plain gradient (no tangent bias)"}
    assert "mean cosine" in fig.layout.yaxis.title.text and "participation" in fig.layout.yaxis2.title.text
    assert "common" in fig.layout.title.text


def test_the_interactive_has_its_two_sliders_and_fits_its_budget():
    sd = cone_interactive(sharings=(0.0, 1.0), alignments=(0.0, 1.0), n_tokens=40).static_dict()
    assert len(sd["frames"]) == 4 and len(sd["layout"]["sliders"]) == 2
    assert len(pio.to_json(cone_interactive().static_dict(), validate=False)) < 300_000
