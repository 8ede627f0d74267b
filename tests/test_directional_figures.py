"""tanbias.figures.directional: chapter 3's figures and interactives, drawn from the data of
tanbias.theory.direction_samples, tanbias.theory.directional_density and tanbias.theory.ricci_sign."""

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from tanbias.theory.direction_samples import DirectionSamples, direction_density_data
from tanbias.theory.directional_density import amplitude_scan
from tanbias.errors import ParameterError
from tanbias.figures.directional import (amplitude_figure, direction_density_figure,
                                         directions_interactive, ricci_sign_figure, ring_figure,
                                         ring_interactive)
from tanbias.theory.manifolds import Cylinder, GeneralizedCylinder, Sphere
from tanbias.theory.radial import Epanechnikov, Gaussian
from tanbias.theory.ricci_sign import ring_data

S2R = GeneralizedCylinder(k=2, d=3, R=1.0, D=4, seed=0)


def test_direction_density_figure():
    C, law = Cylinder(R=1.0, D=3, seed=0), Epanechnikov(1.5)   # eta_g = 0.75
    data = direction_density_data(C, law, n=20_000, rng=0, bins=8)
    fig = direction_density_figure(data)
    assert len(fig.data) == 4 and fig.layout.title.text and fig.layout.xaxis.title.text
    assert fig.layout.yaxis.title.text == "density relative to uniform"


def test_amplitude_figure():
    C = Cylinder(R=1.0)
    sc = amplitude_scan(C, Gaussian(1.0), np.geomspace(1e-4, 1e-1, 4))
    fig = amplitude_figure({"cylinder": sc}, {"cylinder": {"eta_g": [0.1], "amplitude": [3e-4],
                                                           "se": [1e-4]}})
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert len(fig.data) == 3


def test_ricci_sign_figure_traces():
    law = Gaussian(0.3)
    u = S2R.sample(5000, law, 0).u
    fig = ricci_sign_figure(S2R, law, u)
    names = [t.name for t in fig.data]
    assert len(fig.data) == 6 and any("our derivation" in n for n in names)
    # the first-order curves are normalised: mean 1 under Beta(1, 1/2)
    s = np.asarray(fig.data[3].x)
    y = np.asarray(fig.data[3].y)
    assert np.all(np.isfinite(y)) and s[0] == 0 and s[-1] == 1


def test_ring_and_direction_interactives_are_light():
    demo = ring_interactive(S2R, etas=(0.01, 0.1), taus=(0.5, 2.0))
    sd = demo.static_dict()
    assert len(sd["frames"]) == 4 and len(pio.to_json(sd, validate=False)) < 1_000_000
    dirs = directions_interactive(DirectionSamples(
        {"cylinder": Cylinder(R=1.0), "sphere": Sphere(2, R=1.0, D=3)}, (0.01, 0.1), n=2000, bins=6))
    sd = dirs.static_dict()
    assert len(sd["frames"]) == 4
    assert dirs.data(0.1, "cylinder")["hist"].n == 2000          # cached frame data
    sphere_frame = dirs.data(0.1, "sphere")
    assert np.allclose(sphere_frame["exact"], 1.0, atol=1e-9)


def test_ring_figure_is_a_figure():
    fig = ring_figure(ring_data(S2R, Gaussian(1.0).with_eta(0.03, 3), 1.0))
    assert isinstance(fig, go.Figure) and len(fig.data) == 7
    assert fig.layout.title.text and fig.layout.xaxis.title.text and fig.layout.xaxis2.title.text
    # the interactive's default view (eta_g = 0.03, t = 1 RMS radius) is that figure
    sd = ring_interactive(S2R, etas=(0.01, 0.03), taus=(1.0, 2.0)).static_dict()
    assert sd["layout"]["title"]["text"] == fig.layout.title.text
    assert [t["name"] for t in sd["data"]] == [t.name for t in fig.data]


def test_directions_interactive_serves_the_samples_frames():
    C = Cylinder(R=1.0, D=3, seed=0)
    ds = DirectionSamples({"cylinder": C, "sphere": Sphere(2, R=1.0, D=3)}, (0.01, 0.1), n=3000,
                          bins=6)
    frame = ds.data(0.1, "cylinder")
    demo = directions_interactive(ds)
    assert demo.samples is ds and demo.data(0.1, "cylinder") is frame
    with pytest.raises(ParameterError, match="samples"):
        directions_interactive({"cylinder": C})
