"""Chapter-2 additions to tanbias.theory.radial: the radius density and its figures."""

import numpy as np
import plotly.io as pio
import pytest

from tanbias.errors import ParameterError
from tanbias.figures.radial import radial_laws_figure, radial_laws_interactive
from tanbias.theory.radial import Epanechnikov, Gaussian, Laplace, PowerLaw, radius_density

LAWS = [Gaussian(0.7), Laplace(0.3), PowerLaw(0.5, a=6.0), Epanechnikov(1.3)]


@pytest.mark.parametrize("law", LAWS, ids=lambda l: l.name)
@pytest.mark.parametrize("d", [1, 2, 5])
def test_radius_density_normalised_with_mean_square_eta(law, d):
    top = law.support if np.isfinite(law.support) else 200 * law.scale
    r = np.linspace(0.0, top, 400_001)
    p = radius_density(law, r, d)
    dr = r[1] - r[0]
    assert np.trapezoid(p, dx=dr) == pytest.approx(1.0, rel=1e-5)
    assert np.trapezoid(p * r ** 2, dx=dr) == pytest.approx(law.eta_g(d), rel=1e-4)


def test_radius_density_bad_law():
    with pytest.raises(ParameterError, match="law="):
        radius_density("gaussian", [0.1], 2)


def test_figure_and_interactive():
    fam = {"Gaussian": Gaussian(1.0), "Laplace": Laplace(1.0)}
    fig = radial_laws_figure(fam, 0.01, 3)
    assert len(fig.data) == 3 and fig.layout.xaxis.type == "log"
    assert "0.01" in fig.layout.title.text and fig.layout.yaxis.title.text
    demo = radial_laws_interactive(fam, (1e-3, 1e-2, 1e-1), (1, 2, 3))
    sd = demo.static_dict()
    assert len(sd["frames"]) == 9 and len(pio.to_json(sd, validate=False)) < 300_000
    # a power law whose eta_g diverges in the largest dimension is refused up front
    with pytest.raises(ParameterError, match="a=3"):
        radial_laws_interactive({"heavy": PowerLaw(1.0, a=3.0)}, (1e-3, 1e-2), (1, 5))
