"""tanbias.theory.direction_samples: chapter 3's Monte Carlo directions (banks reweighted live), their
checks and verdicts, and the Monte Carlo bias amplitudes."""

import numpy as np
import pytest

from tanbias.theory.direction_samples import (DirectionSamples, direction_checks, direction_density_data,
                                       direction_verdicts, mc_bias_amplitudes,
                                       surface_direction_checks)
from tanbias.theory.direction_statistics import exact_histogram
from tanbias.theory.directional_density import exact_directional_density
from tanbias.errors import ParameterError
from tanbias.theory.manifolds import Cylinder, GeneralizedCylinder, Sphere
from tanbias.theory.radial import Epanechnikov, Gaussian

S2R = GeneralizedCylinder(k=2, d=3, R=1.0, D=4, seed=0)


def test_direction_data_and_checks_on_the_cylinder():
    C, law = Cylinder(R=1.0, D=3, seed=0), Epanechnikov(1.5)   # eta_g = 0.75
    data = direction_density_data(C, law, n=20_000, rng=0, bins=8)
    assert data["hist"].n == 20_000 and data["u"].shape == (20_000, 2)
    assert data["exact"][0] > 1 > data["exact"][len(data["exact"]) // 2]   # theta = 0 favoured
    c = direction_checks(C, law, data["u"], bins=8)
    assert c["chi2_exact"][2] > 1e-3 and c["chi2_uniform"][2] < 1e-3
    assert abs(c["amplitude"] - c["exact_amplitude"]) < 4 * c["amplitude_se"]


def test_direction_data_needs_a_surface():
    with pytest.raises(ParameterError, match="manifold.d=3"):
        direction_density_data(S2R, Gaussian(0.1), n=10)


def test_directions_live_update_is_exact_importance_sampling():
    C = Cylinder(R=1.0, D=3, seed=0)
    demo = DirectionSamples({"cylinder": C, "sphere": Sphere(2, R=1.0, D=3, seed=0)},
                            (0.01, 0.1), n=12_000)
    live = demo.live("cylinder", 0.03)
    n = live["hist"].n
    assert n == 2000 and 0.3 * n < live["ess"] <= n
    assert live["bank_eta_g"] >= 0.03
    law = Epanechnikov(1.0).with_eta(0.03, 2)
    assert np.allclose(live["exact"], exact_directional_density(C, law, np.stack(
        [np.cos(live["theta"]), np.sin(live["theta"])], axis=1)), atol=1e-3)
    # reweighted histogram against the exact bin densities, within its (weighted) s.e.
    h = live["hist"]
    z = (h.density - exact_histogram(C, law, h.edges)) / h.stderr
    assert np.all(np.abs(z) < 4.5)
    # at a bank's own eta_g the weights are all 1
    assert demo.live("cylinder", 0.1)["ess"] == n


def test_direction_samples_cache_their_frames():
    C = Cylinder(R=1.0, D=3, seed=0)
    ds = DirectionSamples({"cylinder": C, "sphere": Sphere(2, R=1.0, D=3)}, (0.01, 0.1), n=3000,
                          bins=6)
    frame = ds.data(0.1, "cylinder")
    assert frame is ds.data(0.1, "cylinder") and frame["u"].shape == (3000, 2)
    with pytest.raises(ParameterError, match="surface"):
        ds.data(0.1, "torus")


def test_chapter3_checks_and_verdicts():
    ds = DirectionSamples({"cylinder": Cylinder(R=1.0, D=3, seed=0),
                           "sphere": Sphere(2, R=1.0, D=3, seed=0)}, (0.01, 0.3), n=6000)
    numbers = surface_direction_checks(ds, 0.3)
    assert {"chi2_exact", "chi2_uniform", "amplitude", "exact_amplitude"} <= set(numbers["cylinder"])
    verdicts = direction_verdicts(ds, numbers)
    assert [c.label.split(":")[0] for c in verdicts] == ["cylinder", "cylinder", "sphere", "sphere"]
    assert all(c.passed for c in verdicts)
    mc = mc_bias_amplitudes(Cylinder(R=1.0), Gaussian(1.0), [0.1, 0.3], n=20_000)
    assert len(mc["amplitude"]) == 2
    assert all(abs(a - e) < 4 * s for a, e, s in zip(mc["amplitude"], mc["exact"], mc["se"]))
