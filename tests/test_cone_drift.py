"""The toy of the step from a tangent bias to a narrow cone (tanbias.theory.cone_drift): the exact
identity behind its coherence, its two readings of anisotropy, and when it makes a cone."""

import math

import numpy as np
import pytest

from tanbias.errors import ParameterError
from tanbias.theory.cone_drift import (cone_drift, cone_setting, displacement_coherence, mean_cosine_of_rows,
                                       participation_ratio, update_coherence)


def test_coherence_from_displacements_equals_coherence_from_the_update():
    """mean_k W x_k = W m and mean ||W x_k||^2 = ||W m||^2 + mean ||W z_k||^2, for any W and inputs."""
    rng = np.random.default_rng(0)
    for _ in range(5):
        W, x = rng.standard_normal((4, 6)), rng.standard_normal((30, 6)) + rng.standard_normal(6)
        assert math.isclose(update_coherence(W, x), displacement_coherence(x @ W.T), rel_tol=1e-12)
    assert displacement_coherence(np.tile([[2.0, -1.0]], (5, 1))) == 1.0
    assert displacement_coherence([[1.0, 0.0], [-1.0, 0.0], [0.0, 3.0], [0.0, -3.0]]) == 0.0
    assert displacement_coherence(np.zeros((3, 2))) == 0.0


def test_the_two_readings_of_anisotropy():
    rng = np.random.default_rng(1)
    h = rng.standard_normal((400, 8))
    brute = np.mean([h[i] @ h[j] / np.linalg.norm(h[i]) / np.linalg.norm(h[j])
                     for i in range(40) for j in range(40) if i != j])
    assert math.isclose(mean_cosine_of_rows(h[:40]), brute, rel_tol=1e-10)
    assert abs(mean_cosine_of_rows(h)) < 0.05 and mean_cosine_of_rows(h + 10) > 0.9   # a shared mean
    assert participation_ratio(h) > 7 and participation_ratio(h + 10) > 7            # the shape ignores it
    line = np.outer(rng.standard_normal(50), rng.standard_normal(8))
    assert math.isclose(participation_ratio(line), 1.0, rel_tol=1e-9)


def test_shared_tangent_planes_aligned_with_the_shared_input_make_a_cone():
    c = cone_drift(1.0, 1.0)
    t = c["tangent"]
    assert t["coherence"] > 0.9 and t["mean_cosine"][0] < 0.05 and t["mean_cosine"][-1] > 0.8
    assert np.all(np.diff(t["mean_cosine"]) > 0)


def test_a_shared_plane_that_misses_the_shared_input_squeezes_the_centred_cloud_instead():
    c = cone_drift(1.0, 0.0)
    t = c["tangent"]
    assert t["coherence"] < 0.05 and abs(t["mean_cosine"][-1]) < 0.05
    assert t["participation"][-1] < 4 < 20 < t["participation"][0]                   # near d = 2 directions


def test_the_tangent_bias_not_the_shared_input_alone_makes_the_cone():
    """With the signals centred, the plain gradient's moves are about half common in every setting
    (the shared input is about as large as a token's own part); the tangent update's are nearly all
    common where one shared plane contains the shared input."""
    for sharing, alignment in ((1.0, 1.0), (1.0, 0.0), (0.0, 1.0)):
        c = cone_drift(sharing, alignment, sizes=[0.0, 3.0])
        assert 0.3 < c["plain"]["coherence"] < 0.7
    aligned = cone_drift(1.0, 1.0, sizes=[0.0, 3.0])
    assert aligned["tangent"]["coherence"] > aligned["plain"]["coherence"] + 0.3
    assert aligned["tangent"]["mean_cosine"][-1] > aligned["plain"]["mean_cosine"][-1] + 0.2


def test_own_planes_drift_about_as_much_as_the_plain_gradient_and_no_shared_input_no_cone():
    aligned = cone_drift(1.0, 1.0, sizes=[0.0, 3.0])["tangent"]["coherence"]
    for alignment in (0.0, 1.0):
        c = cone_drift(0.0, alignment, sizes=[0.0, 3.0])
        assert abs(c["tangent"]["coherence"] - c["plain"]["coherence"]) < 0.25
        assert c["tangent"]["coherence"] < aligned - 0.2
    none = cone_drift(1.0, 1.0, offset=0.0)
    assert none["tangent"]["coherence"] < 0.05 and none["plain"]["coherence"] < 0.05


def test_the_setting_is_what_it_says():
    s = cone_setting(sharing=0.0, alignment=0.5, n_tokens=50, D=10, seed=3)
    assert s["x"].shape == (50, 10) and s["tangent"].shape == (50, 10, 2)
    assert np.allclose(np.einsum("kai,kaj->kij", s["tangent"], s["tangent"]), np.eye(2))
    assert math.isclose(np.sum((s["U"].T @ s["m_hat"]) ** 2), 0.5, rel_tol=1e-12)
    assert np.allclose(s["delta"].sum(axis=0), 0.0, atol=1e-12)                    # no shared signal
    assert s["delta"].std() > 0.1


def test_bad_settings_are_named():
    with pytest.raises(ParameterError, match=r"sharing=1.5 is out of range: valid range is \[0, 1\]"):
        cone_setting(sharing=1.5)
    with pytest.raises(ParameterError, match=r"D=3 is out of range"):
        cone_setting(D=3, d=2)
    with pytest.raises(ParameterError, match="update"):
        update_coherence(np.ones(3), np.ones((2, 3)))
