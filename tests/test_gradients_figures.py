"""tanbias.figures.gradients: chapter 4's figures and interactives (static grids stay light)."""

import plotly.graph_objects as go
import pytest

from figurehelpers import static_ok
from tanbias.figures.gradients import (eta_histogram_interactive, gradient_cloud_figure,
                                       gradient_cloud_interactive, ratio_figure,
                                       two_types_figure)
from tanbias.theory.gradients import gradient_cloud, ratio_scaling
from tanbias.theory.manifolds import GeneralizedCylinder
from tanbias.theory.radial import Gaussian


@pytest.fixture(scope="module")
def cylinder():
    return GeneralizedCylinder(1, 3, R=1.0, D=7, seed=2)


@pytest.fixture(scope="module")
def cyl():
    return GeneralizedCylinder(1, 2, R=1.0, D=5, seed=0)


def test_ratio_figure(cylinder):
    fig = ratio_figure(ratio_scaling(cylinder, [0.05, 0.1, 0.2], n=200))
    assert isinstance(fig, go.Figure)
    assert fig.layout.title.text and fig.layout.xaxis.title.text and fig.layout.yaxis.title.text
    assert len(fig.data) == 4


@pytest.mark.slow
def test_chapter4_interactives_and_figures(cyl):
    fig = static_ok(gradient_cloud_interactive(cyl), 7 * 2)
    assert fig["layout"]["sliders"][1]["steps"][1]["label"] == "constant"
    static_ok(eta_histogram_interactive(cyl, Gaussian(1.0)), 7)
    f = two_types_figure(cyl, 0.02, 0.2)
    assert isinstance(f, go.Figure) and len(f.data) == 2 and f.layout.title.text
    f = gradient_cloud_figure(gradient_cloud(cyl, 0.1, n=100))
    assert f.layout.xaxis.title.text and f.layout.yaxis.title.text and len(f.data) == 2
