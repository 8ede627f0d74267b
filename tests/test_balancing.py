"""tanbias.theory.balancing: the pooled gradient ratio of a Zipf vocabulary, and the sign of balancing."""

import numpy as np
import pytest

from tanbias.errors import ParameterError
from tanbias.theory.balancing import (POOLINGS, balancing_data, balancing_effect, energy_sign_threshold,
                                      pooled_ratio, simulated_pooled_ratios, tied_radii, token_eta,
                                      zipf_frequencies)
from tanbias.theory.gradients import predicted_rms_constant, radial_shape_constant
from tanbias.theory.manifolds import GeneralizedCylinder
from tanbias.theory.radial import Gaussian, Laplace


def test_zipf_frequencies_sum_to_one_and_flatten_with_s():
    for s in (0.0, 0.5, 1.0, 1.5):
        f = zipf_frequencies(50, s)
        assert f.shape == (50,) and abs(f.sum() - 1) < 1e-12 and np.all(np.diff(f) <= 0)
    # a larger s majorises a smaller one: every head holds more
    assert np.all(np.cumsum(zipf_frequencies(50, 1.2)) >= np.cumsum(zipf_frequencies(50, 0.8)) - 1e-15)


def test_the_radius_is_a_function_of_the_frequency_alone():
    """A type moved by balancing to frequency f gets the radius every type of frequency f has."""
    f_nat, f_bal = zipf_frequencies(100, 1.2), zipf_frequencies(100, 0.4)
    t_nat, t_bal = tied_radii(f_nat, 0.3, 0.05), tied_radii(f_bal, 0.3, 0.05)
    rule = lambda f: 0.05 * (100 * f) ** -0.3   # noqa: E731
    assert np.allclose(t_nat, rule(f_nat)) and np.allclose(t_bal, rule(f_bal))
    assert np.allclose(tied_radii(zipf_frequencies(100, 0.0), 0.7, 0.05), 0.05)


@pytest.mark.parametrize("law", [Gaussian(1.0), Laplace(2.0)], ids=["gaussian", "laplace"])
def test_token_eta_rescales_the_family(law):
    t = np.array([0.01, 0.1, 0.3])
    assert np.allclose(token_eta(t, law, 3), [law.scaled(x / law.scale).eta_g(3) for x in t])


def test_pooling_by_hand_on_two_types():
    f, t = np.array([0.75, 0.25]), np.array([0.02, 0.1])
    eta, kappa = 2 * t ** 2, 2.0                     # Gaussian in d = 2
    c = 0.3
    R = c * np.sqrt(kappa * eta)
    assert pooled_ratio(f, t, "energy", c) == pytest.approx(c * np.sqrt(kappa * (f @ eta ** 2) / (f @ eta)))
    assert pooled_ratio(f, t, "occurrence", c) == pytest.approx(f @ R)
    assert pooled_ratio(f, t, "type", c) == pytest.approx(R.mean())
    # the energy pooling weighs the far samples of the diffuse type most
    assert pooled_ratio(f, t, "energy", c) > pooled_ratio(f, t, "occurrence", c)


def test_the_constants_scale_out_of_the_balancing_effect():
    ref = balancing_effect(300, 1.0, 0.5, 0.2, "energy")
    assert balancing_effect(300, 1.0, 0.5, 0.2, "energy", t_star=0.01, c=3.0,
                            law=Laplace(1.0), d=4) == pytest.approx(ref, rel=1e-10)


@pytest.mark.parametrize("alpha", [-0.5, -0.2, -0.05, 0.05, 0.2, 0.5])
def test_occurrence_pooling_follows_the_premise_and_type_pooling_goes_against_it(alpha):
    """Schur concavity (occurrence) and convexity (type) fix these two signs (module docstring)."""
    for V, (s_nat, s_bal) in ((50, (1.0, 0.6)), (2000, (1.5, 0.2))):
        assert np.sign(balancing_effect(V, s_nat, s_bal, alpha, "occurrence")) == np.sign(alpha)
        assert np.sign(balancing_effect(V, s_nat, s_bal, alpha, "type")) == -np.sign(alpha)


def test_energy_pooling_rises_only_for_a_weak_tie():
    for V, (s_nat, s_bal) in ((100, (1.0, 0.6)), (1000, (1.1, 0.7)), (10_000, (1.0, 0.0))):
        a_star = energy_sign_threshold(V, s_nat, s_bal)
        assert 0.1 < a_star < 0.25
        assert balancing_effect(V, s_nat, s_bal, a_star / 2, "energy") > 0
        for alpha in (0.25, 0.5, -0.1, -0.5):
            assert balancing_effect(V, s_nat, s_bal, alpha, "energy") < 0


@pytest.mark.parametrize("alpha", np.linspace(0.25, 1.0, 7).tolist() + [-0.05, -0.5, -1.0])
def test_energy_pooling_falls_for_a_strong_or_a_reversed_tie(alpha):
    for V in (20, 1000):
        for s_nat, s_bal in ((1.0, 0.6), (1.5, 0.2), (2.0, 1.8)):
            assert balancing_effect(V, s_nat, s_bal, alpha, "energy") < 0, (V, s_nat, s_bal)


def test_energy_threshold_refuses_what_it_cannot_find():
    with pytest.raises(ParameterError, match="s_balanced"):
        energy_sign_threshold(100, 0.5, 0.9)


@pytest.mark.slow
@pytest.mark.parametrize("alpha", [0.5, -0.3])
def test_the_leading_order_matches_exact_samples(alpha):
    cyl = GeneralizedCylinder(1, 2, R=1.0, D=5, seed=0)
    f = zipf_frequencies(6, 1.0)
    t = tied_radii(f, alpha, 0.03)
    sim = simulated_pooled_ratios(cyl, f, t, n_per_type=6000, rng=1)
    c = predicted_rms_constant(cyl)
    for p in POOLINGS:
        assert sim[p] == pytest.approx(pooled_ratio(f, t, p, c), rel=0.05), p
    assert np.allclose(sim["per_type"], c * np.sqrt(radial_shape_constant(Gaussian(1.0), 2) * 2 * t ** 2),
                       rtol=0.06)


def test_balancing_data_shapes_and_shares():
    b = balancing_data(500, 1.0, 0.5, s_grid=[0.0, 0.5, 1.0], n_ranks=20)
    assert b["rank"][0] == 1 and b["rank"][-1] == 500 and len(b["rank"]) <= 20
    for key in ("occurrence_share", "energy_share"):
        assert np.all(np.diff(b[key]) >= 0) and b[key][-1] == pytest.approx(1.0)
    assert set(b["ratios"]) == set(POOLINGS) and all(len(v) == 3 for v in b["ratios"].values())
    assert b["ratios"]["energy"][2] == pytest.approx(b["at_s"]["energy"])
    # with alpha = 1/2 the tail holds the normal energy; with alpha < 0 the head does
    assert b["energy_share"][5] < b["occurrence_share"][5]
    neg = balancing_data(500, 1.0, -0.3, s_grid=[1.0], n_ranks=20)
    assert neg["energy_share"][5] > neg["occurrence_share"][5]


@pytest.mark.parametrize("call, match", [
    (lambda: zipf_frequencies(0, 1.0), "V"),
    (lambda: zipf_frequencies(10, -1.0), "s"),
    (lambda: tied_radii([0.5, 0.6], 0.5, 0.1), "sum to 1"),
    (lambda: tied_radii([0.5, 0.5], 2.0, 0.1), "alpha"),
    (lambda: tied_radii([0.5, 0.5], 0.5, 0.0), "t_star"),
    (lambda: token_eta([0.1, -0.1]), "radii"),
    (lambda: pooled_ratio([0.5, 0.5], [0.1], "energy"), "one radius per type"),
    (lambda: pooled_ratio([0.5, 0.5], [0.1, 0.1], "mean"), "pooling"),
    (lambda: pooled_ratio([0.5, 0.5], [0.1, 0.1], "type", c=0), "c"),
])
def test_bad_input_is_named(call, match):
    with pytest.raises(ParameterError, match=match):
        call()
