"""Chapter 1's figures (tanbias.figures.expansion): the side view beside the scaling of the two
parts, and the interactive over radii and surfaces."""

import json

import numpy as np
import plotly.io as pio

from tanbias.figures.expansion import expansion_interactive, side_view_figure
from tanbias.theory.expansion import expansion_scaling, side_view_data
from tanbias.theory.manifolds import Cylinder, Sphere


def test_side_view_and_its_figure():
    C = Cylinder(R=1.0, D=3, seed=0)
    v = side_view_data(C, 0.2, n=100, rng=0)
    sc = expansion_scaling(C, np.geomspace(0.01, 0.4, 5), n=50)
    fig = side_view_figure(v, sc, "cylinder")
    assert fig.layout.title.text.startswith("The cylinder")
    assert fig.layout.xaxis.title.text and fig.layout.yaxis2.title.text
    assert fig.layout.xaxis2.type == "log" and len(fig.data) == 6
    # the samples and the prediction drawn are the data's, and the current t sits on the scaling curves
    samples = next(tr for tr in fig.data if tr.name == "samples at radius t")
    assert np.array_equal(samples.x, v["x"]) and np.array_equal(samples.y, v["y"])
    current = next(tr for tr in fig.data if tr.name == "current t")
    i = int(np.argmin(np.abs(np.log(sc["t"] / 0.2))))
    assert list(current.x) == [0.2, 0.2] and list(current.y) == [sc["rms_tangent"][i], sc["rms_normal"][i]]
    assert {tr.xaxis for tr in fig.data} == {"x", "x2"}


def test_interactive_grid_and_weight():
    demo = expansion_interactive({"sphere": Sphere(2, R=1.0, D=3), "cylinder": Cylinder(R=1.0)},
                                 np.geomspace(0.02, 0.5, 3), n=50)
    sd = demo.static_dict()
    assert len(sd["frames"]) == 6 and len(sd["layout"]["sliders"]) == 2
    assert len(pio.to_json(sd, validate=False)) < 500_000
    # each frame's title names the radius and the surface it shows
    titles = [f["layout"]["title"]["text"] for f in sd["frames"]]
    assert "0.02" in titles[0] and {t.split()[1] for t in titles} == {"sphere", "cylinder"}


def test_a_frame_is_the_same_view_every_time():
    """The static frames and the live figure draw one computation: seeded per surface."""
    surfaces = {"sphere": Sphere(2, R=1.0, D=3), "cylinder": Cylinder(R=1.0)}
    a, b = (expansion_interactive(surfaces, [0.05, 0.1], n=30, seed=3).static_dict() for _ in range(2))
    assert json.dumps(a["frames"]) == json.dumps(b["frames"])
    other = expansion_interactive(surfaces, [0.05, 0.1], n=30, seed=4).static_dict()
    assert json.dumps(other["frames"]) != json.dumps(a["frames"])
