"""Exercise checkers (tanbias.book.exercises): each passes its reference, names each listed
mistake with its own message, refuses malformed input by name, and cannot be fooled by a
hard-coded answer; the chapters number their exercises as the book renders them."""

import math
import re
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tanbias.book import _sphinxext
from tanbias.book import exercises as ex
from tanbias.book.exercises import (
    check_exercise_1_1, check_exercise_2_1, check_exercise_3_1, check_exercise_4_1, check_exercise_4_2,
    check_exercise_4_3, check_exercise_5_1, check_exercise_6_1, check_exercise_8_1, check_exercise_10_1,
    reference_balancing_effect, reference_balancing_sign, reference_bias_surface, reference_count_slope,
    reference_dose_change, reference_eta_stretched, reference_gradient_ratio, reference_loop_gains,
    reference_more_suppressed, reference_pooled_ratio, reference_relative_suppression,
    reference_removal_orders, reference_rms_constant, reference_score_terms)
from tanbias.errors import ParameterError
from tanbias.lab.analysis import sweep
from tanbias.lab.config import KINDS
from tanbias.theory import attention as att
from tanbias.theory.balancing import POOLINGS, tied_radii, zipf_frequencies
from tanbias.theory.gradients import gradient_ratio, predicted_rms_constant, split_gradient
from tanbias.theory.manifolds import GeneralizedCylinder

ROOT = Path(__file__).resolve().parents[1]


def _stub(*args):
    raise NotImplementedError("Exercise: your code here")


def _fails(match, checker, *args, **kwargs):
    with pytest.raises(AssertionError, match=match):
        checker(*args, **kwargs)


# --- every checker: malformed input fails clearly ------------------------------------------

#: (checker, the function argument's name) for the checkers whose first argument is a function
FIRST_FUNCTION = [(check_exercise_1_1, "count_slope"), (check_exercise_2_1, "eta_stretched"),
                  (check_exercise_3_1, "bias_surface"), (check_exercise_4_2, "more_suppressed"),
                  (check_exercise_5_1, "score_terms"), (check_exercise_6_1, "loop_gains"),
                  (check_exercise_8_1, "balancing_effect"), (check_exercise_10_1, "dose_change")]


@pytest.mark.parametrize("checker, name", FIRST_FUNCTION, ids=lambda x: getattr(x, "__name__", x))
@pytest.mark.parametrize("not_a_function", ["gradient", 0.1, None, [1, 2]])
def test_something_that_is_not_a_function_gets_a_friendly_message(checker, name, not_a_function):
    _fails(f"{name} should be a function.*you passed", checker, not_a_function)


@pytest.mark.parametrize("checker", [check_exercise_1_1, check_exercise_2_1, check_exercise_3_1,
                                     check_exercise_4_2, check_exercise_5_1])
def test_an_unfinished_stub_is_named_not_raised(checker):
    _fails("still raises NotImplementedError: replace that line", checker, _stub)


def test_a_function_that_crashes_is_reported_with_its_case():
    _fails(r"count_slope raised ZeroDivisionError on the case r = 0\.1", check_exercise_1_1,
           lambda r, xi, phi: 1 / 0)


@pytest.mark.parametrize("checker, answer", [
    (check_exercise_1_1, "2.0"), (check_exercise_1_1, None), (check_exercise_1_1, math.nan),
    (check_exercise_2_1, True), (check_exercise_2_1, [1.0]), (check_exercise_3_1, math.inf),
])
def test_a_returned_value_of_the_wrong_type_is_named(checker, answer):
    _fails("should be a (finite )?number", checker, lambda *a: answer)


def test_optional_parts_need_at_least_one_argument():
    _fails("pass your function", check_exercise_4_1)
    _fails("pass at least one", check_exercise_4_3)


# --- shared helpers ---------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["False", "yes", math.nan, 0, 1, None, np.float64(1.0)])
def test_a_bool_prediction_must_be_a_bool(value):
    with pytest.raises(AssertionError, match="must be True or False"):
        ex._as_bool(value, "compounds")


@pytest.mark.parametrize("value", [True, np.True_, False])
def test_numpy_and_python_bools_are_bools(value):
    assert ex._as_bool(value, "x") is bool(value)


@pytest.mark.parametrize("value", ["-1", 2, 0.5, math.nan, True, None])
def test_a_sign_must_be_minus_one_zero_or_one(value):
    with pytest.raises(AssertionError, match="must be -1, 0 or \\+1"):
        ex._as_sign(value, "s")


def test_a_mistake_is_named_only_when_it_explains_every_case():
    cases = [("a", 1.0), ("b", 2.0)]
    mistakes = [("first", [0.5, 0.0]), ("second", [0.5, 1.5])]
    with pytest.raises(AssertionError, match="second"):
        ex._grade("0.0", [0.5, 1.5], cases, mistakes)
    with pytest.raises(AssertionError, match="wrong value"):
        ex._grade("0.0", [0.5, 7.0], cases, mistakes)
    with pytest.raises(AssertionError, match="whatever its arguments"):
        ex._grade("0.0", [3.0, 3.0], cases, mistakes)
    ex._grade("0.0", [1.0, 2.0], cases, mistakes)


# --- Exercise 1.1 ----------------------------------------------------------------------------

def test_ex1_1_reference_passes(capsys):
    check_exercise_1_1(reference_count_slope)
    assert "Exercise 1.1 passed" in capsys.readouterr().out


def test_ex1_1_reference_is_the_closed_form():
    for r, xi, phi in ((0.1, 0.4, math.pi / 6), (0.35, 0.4, math.pi / 6), (0.5, 0.3, math.pi / 2)):
        h = xi * math.sin(phi)
        assert reference_count_slope(r, xi, phi) == pytest.approx(2.0 if r <= h else 4 * r * r / (2 * r * r - h * h))


def _sheet_slope(h_of, disc=lambda r, h: r * r - h * h):
    def fn(r, xi, phi):
        h = h_of(xi, phi)
        count = lambda x: x * x + (max(disc(x, h), 0.0) if x > h else 0.0)   # noqa: E731
        return ex._slope_of(count, r)
    return fn


@pytest.mark.parametrize("wrong, message", [
    (_sheet_slope(lambda xi, phi: xi), "you left out the angle"),
    (_sheet_slope(lambda xi, phi: xi * math.cos(phi)), "not ξ cos φ"),
    (_sheet_slope(lambda xi, phi: xi * math.sin(phi), lambda r, h: (r - h) ** 2), "Pythagoras"),
    (lambda r, xi, phi: 4.0 if r > xi * math.sin(phi) else 2.0, "it does not stay at 4"),
    (lambda r, xi, phi: 2.0, "your slope stays at 2"),
    (lambda r, xi, phi: math.pi * (r * r + max(r * r - (xi * math.sin(phi)) ** 2, 0.0)),
     "you returned the count"),
    (lambda r, xi, phi: 2 * math.pi * r * (2.0 if r > xi * math.sin(phi) else 1.0), "d#/dr"),
    (lambda r, xi, phi: 3.0, "whatever its arguments"),
])
def test_ex1_1_each_mistake_has_its_own_message(wrong, message):
    _fails(message, check_exercise_1_1, wrong)


# --- Exercise 2.1 ----------------------------------------------------------------------------

def test_ex2_1_reference_passes_and_matches_the_table_and_quadrature(capsys):
    from tanbias.theory.radial import Custom, Gaussian, Laplace

    check_exercise_2_1(reference_eta_stretched)
    assert "Exercise 2.1 passed" in capsys.readouterr().out
    for d in (1, 2, 5):
        assert reference_eta_stretched(0.3, d, 1.0) == pytest.approx(Laplace(0.3).eta_g(d))
        assert reference_eta_stretched(0.3, d, 2.0) == pytest.approx(Gaussian(0.3 / math.sqrt(2)).eta_g(d))
        law = Custom(lambda r: np.exp(-(r / 0.7) ** 0.6), scale=0.7)
        assert reference_eta_stretched(0.7, d, 0.6) == pytest.approx(law.eta_g(d), rel=1e-6)


def _gamma_eta(k_top, k_bottom):
    return lambda ell, d, p: ell ** 2 * math.gamma(k_top(d) / p) / math.gamma(k_bottom(d) / p)


@pytest.mark.parametrize("wrong, message", [
    (_gamma_eta(lambda d: 3, lambda d: 1), "you left out the volume factor"),
    (_gamma_eta(lambda d: d + 3, lambda d: d + 1), "not r\\^d"),
    (lambda ell, d, p: math.sqrt(reference_eta_stretched(ell, d, p)), "RMS radius"),
    (lambda ell, d, p: reference_eta_stretched(1.0, d, p), "you left out the scale"),
    (lambda ell, d, p: reference_eta_stretched(ell, d, p) / ell, "not ℓ\\."),
    (lambda ell, d, p: d * (d + 1) * ell ** 2, "does not depend on p"),
    (lambda ell, d, p: 1.0, "whatever its arguments"),
])
def test_ex2_1_each_mistake_has_its_own_message(wrong, message):
    _fails(message, check_exercise_2_1, wrong)


def test_ex2_1_a_wrong_gamma_argument_is_named_where_it_is_defined():
    """Γ((d+1)/p) / Γ((d-1)/p) is undefined at d = 1: the reader's crash names the case; on
    cases where it is defined the mistake gets its message."""
    wrong = _gamma_eta(lambda d: d + 1, lambda d: d - 1)
    _fails("raised ValueError on the case ℓ = 1, d = 1", check_exercise_2_1, wrong)
    safe = lambda ell, d, p: (wrong(ell, d, p) if d > 1 else reference_eta_stretched(ell, d, p))  # noqa: E731
    _fails("check the argument of Γ", check_exercise_2_1, safe)


# --- Exercise 3.1 ----------------------------------------------------------------------------

def _b(ii=lambda t, a, b: a * math.cos(t) ** 2 + b * math.sin(t) ** 2, coef=1 / 6,
       ric=lambda a, b: a * b, sign=-1.0):
    return lambda t, a, b: coef * ii(t, a, b) ** 2 + sign * ric(a, b) / 6


def test_ex3_1_reference_passes_and_is_the_closed_form(capsys):
    check_exercise_3_1(reference_bias_surface)
    assert "Exercise 3.1 passed" in capsys.readouterr().out
    check_exercise_3_1(_b())
    assert reference_bias_surface(0.0, 1.0, 0.0) == pytest.approx(1 / 6)       # chapter 3's cylinder


@pytest.mark.parametrize("wrong, message", [
    (_b(sign=1.0), "minus sign"),
    (_b(ric=lambda a, b: a + b), "not the sum κ₁ \\+ κ₂"),
    (_b(coef=5 / 24), "d = 2"),
    (_b(coef=1 / 24), "brings the factor d \\+ 2"),
    (_b(ii=lambda t, a, b: a * math.cos(t) + b * math.sin(t)), "enter squared"),
    (lambda t, a, b: _b()(t, a, b) - ((3 * a * a + 2 * a * b + 3 * b * b) / 8 - a * b) / 6,
     "subtracted the mean"),
    (_b(ric=lambda a, b: 0.0), "dropped the Ricci term"),
])
def test_ex3_1_each_mistake_has_its_own_message(wrong, message):
    _fails(message, check_exercise_3_1, wrong)


# --- Exercise 4.1 ----------------------------------------------------------------------------

def test_ex4_1_reference_passes(capsys):
    check_exercise_4_1(reference_gradient_ratio, reference_rms_constant)
    out = capsys.readouterr().out
    assert "Exercise 4.1 passed" in out and "0.3062" in out
    check_exercise_4_1(rms_constant=reference_rms_constant)
    check_exercise_4_1(gradient_ratio_rms=reference_gradient_ratio)


@pytest.mark.parametrize("k, d, R", [(1, 2, 1.0), (2, 2, 1.0), (1, 3, 2.0), (2, 3, 0.5), (3, 5, 1.5)])
def test_ex4_1_derived_constant_is_the_package_prediction(k, d, R):
    M = GeneralizedCylinder(k, d, R=R, D=d + 2, seed=0)
    assert reference_rms_constant(k, d, R) == pytest.approx(predicted_rms_constant(M), rel=1e-9)


@pytest.mark.parametrize("wrong, message", [
    (lambda x, mu, d, T, N: gradient_ratio(x, d, T, N), "did you centre x before projecting"),
    (lambda x, mu, d, T, N: 1 / reference_gradient_ratio(x, mu, d, T, N),
     "returned tangent/normal instead of normal/tangent"),
    (lambda x, mu, d, T, N: gradient_ratio(x - mu, d, T, N, form="mean"),
     "used the mean gradient, which cancels on symmetric samples"),
    (lambda x, mu, d, T, N: reference_gradient_ratio(x, mu, d, T, N) ** 2, "take its square root"),
    (lambda x, mu, d, T, N: float(np.sqrt(np.mean(split_gradient(x - mu, d, T, N).normal ** 2))),
     "forgot to divide by the tangent side"),
    (lambda x, mu, d, T, N: float(np.sqrt(np.sum(split_gradient(x - mu, d, T, N).normal ** 2))),
     "forgot to divide by the tangent side"),
    (lambda x, mu, d, T, N: gradient_ratio(x - mu, d, T, N, form="per_sample"),
     "averaged the per-sample ratios"),
    (lambda x, mu, d, T, N: gradient_ratio(x - mu, np.ones((len(x), 1)), T, N),
     "dropped the back-propagated signal"),
    (lambda x, mu, d, T, N: gradient_ratio(x - x.mean(0), d, T, N), "batch mean"),
    (lambda x, mu, d, T, N: 0.5, "whatever its arguments"),
])
def test_ex4_1_each_mistake_has_its_own_message(wrong, message):
    _fails(message, check_exercise_4_1, wrong)


def _batch_mean_by_hand(x, mu, delta, T, N):
    """Batch-mean centring written as a reader would: 0/0 = nan on a single sample."""
    x_c = x - x.mean(axis=0)
    d = np.linalg.norm(delta, axis=1)
    with np.errstate(invalid="ignore"):
        return float(np.sqrt(np.sum((d * np.linalg.norm(x_c @ N, axis=1)) ** 2)
                             / np.sum((d * np.linalg.norm(x_c @ T, axis=1)) ** 2)))


def test_ex4_1_batch_mean_centring_is_named_even_where_one_sample_gives_nan():
    """The library's ratio gives inf on one sample centred at its own mean, a hand-written one nan;
    both are the batch-mean mistake, not a division by zero."""
    with pytest.raises(AssertionError) as err:
        check_exercise_4_1(_batch_mean_by_hand)
    assert "centred at the batch mean" in str(err.value) and "a single sample" in str(err.value)
    assert "division by zero" not in str(err.value)


def test_ex4_1_forgetting_the_tangent_side_is_not_called_a_missing_square_root():
    """On the parabola sqrt(mean ||n||^2) equals the squared ratio; the cylinder tells them apart."""
    def numerator_only(x, mu, d, T, N):
        return float(np.sqrt(np.mean(split_gradient(x - mu, d, T, N).normal ** 2)))
    with pytest.raises(AssertionError) as err:
        check_exercise_4_1(numerator_only)
    assert "tangent side" in str(err.value) and "square root" not in str(err.value)


@pytest.mark.parametrize("wrong, message", [
    (lambda k, d, R: 2 * reference_rms_constant(k, d, R), "you left out the 1/2"),
    (lambda k, d, R: reference_rms_constant(k, d, R) ** 2, "that is c²"),
    (lambda k, d, R: 0.5 * (k / d) / R, "E\\[q²\\] is not"),
    (lambda k, d, R: 0.5 * math.sqrt(3 * k / (d * (d + 2))) / R, "dropped the cross terms"),
    (lambda k, d, R: reference_rms_constant(k, d, R) * R, "c scales like 1/R"),
    (lambda k, d, R: reference_rms_constant(k, d, R) / R, "not 1/R²"),
    (lambda k, d, R: 0.5 * math.sqrt(3 / 8), "unit cylinder's value alone"),
])
def test_ex4_1_each_mistake_of_the_derivation_has_its_own_message(wrong, message):
    _fails(message, check_exercise_4_1, rms_constant=wrong)


def test_ex4_1_accepts_numpy_scalars():
    check_exercise_4_1(lambda *a: np.float64(reference_gradient_ratio(*a)),
                       lambda *a: np.float32(reference_rms_constant(*a)).astype(np.float64))


# --- Exercise 4.2 ----------------------------------------------------------------------------

def test_ex4_2_reference_passes(capsys):
    check_exercise_4_2(reference_more_suppressed, reference_relative_suppression)
    out = capsys.readouterr().out
    assert "Exercise 4.2 passed" in out and "4 pairs of radii" in out


@pytest.mark.parametrize("wrong, message", [
    (lambda t1, t2: 1 if t1 > t2 else 2, "smaller t means MORE suppression"),
    (lambda t1, t2: 1, "whatever the radii"),
    (lambda t1, t2: 2, "whatever the radii"),
    (lambda t1, t2: 0, "should return the type number 1 or 2"),
    (lambda t1, t2: "1", "should return the type number 1 or 2"),
    (lambda t1, t2: True, "should return the type number 1 or 2"),
])
def test_ex4_2_each_wrong_choice_has_its_own_message(wrong, message):
    _fails(message, check_exercise_4_2, wrong)


@pytest.mark.parametrize("wrong, message", [
    (lambda t1, t2: t2 / t1, "inverted the quotient"),
    (lambda t1, t2: (t1 / t2) ** 2, "you squared"),
    (lambda t1, t2: (t1 / t2) ** 0.5, "square root"),
    (lambda t1, t2: 0.1, "whatever the radii"),       # the hard-coded answer of the first pair
    (lambda t1, t2: 1.0, "whatever the radii"),
    (lambda t1, t2: t1 / t2 * 1.2, "off by more than 5%"),
])
def test_ex4_2_each_wrong_quotient_has_its_own_message(wrong, message):
    _fails(message, check_exercise_4_2, reference_more_suppressed, wrong)


# --- Exercise 4.3 ----------------------------------------------------------------------------

MECHANISM_4_3 = {"energy": -1, "occurrence": 1, "type": -1}


def test_ex4_3_reference_passes(capsys):
    check_exercise_4_3(reference_pooled_ratio, MECHANISM_4_3, reference_balancing_sign)
    out = capsys.readouterr().out
    assert "Exercise 4.3 passed" in out and "energy -1, occurrence +1, type -1" in out


def test_ex4_3_reference_signs_are_the_models():
    assert [reference_balancing_sign(0.5, p) for p in POOLINGS] == [-1, 1, -1]
    assert [reference_balancing_sign(0.1, p) for p in POOLINGS] == [1, 1, -1]
    assert [reference_balancing_sign(-0.3, p) for p in POOLINGS] == [-1, -1, 1]
    assert reference_balancing_sign(0.0, "energy") == 0


def test_ex4_3_the_written_sign_rule_is_the_models():
    """The solution's rule: with -1 < alpha < 0 the two means reverse and the energy still falls;
    the occurrence mean rises only for 0 < alpha < 1 and stands still at 1, the type mean at -1."""
    for alpha in (-0.9, -0.5, -0.25, -0.05):
        assert [reference_balancing_sign(alpha, p) for p in POOLINGS] == [-1, -1, 1]
    for alpha in (0.05, 0.5, 0.9):
        assert reference_balancing_sign(alpha, "occurrence") == 1
        assert reference_balancing_sign(alpha, "type") == -1
    assert reference_balancing_sign(1.0, "occurrence") == 0 and reference_balancing_sign(1.0, "type") == -1
    assert reference_balancing_sign(-1.0, "type") == 0 and reference_balancing_sign(-1.0, "energy") == -1
    with pytest.raises(ParameterError, match=r"valid range is \[-1, 1\]"):
        tied_radii(zipf_frequencies(10, 1.0), 1.5, 0.05)


def test_ex4_3_a_prediction_still_none_is_refused_by_name_before_anything_is_shown(capsys):
    _fails("Exercise 4.3: prediction is still None. Set prediction = ", check_exercise_4_3,
           reference_pooled_ratio, None, reference_balancing_sign)
    _fails("prediction is still None", check_exercise_4_3, prediction=None)
    assert capsys.readouterr().out == ""
    check_exercise_4_3(reference_pooled_ratio)                 # left out: only the function is checked
    assert "Exercise 4.3 passed: pooled_ratio matches" in capsys.readouterr().out


@pytest.mark.parametrize("prediction, message", [
    ({"energy": 1, "occurrence": 1, "type": -1}, "strong tie"),
    ({"energy": -1, "occurrence": 1, "type": 1}, "most types are rare"),
    ({"energy": -1, "occurrence": -1, "type": -1}, "most occurrences belong to frequent types"),
    ({"energy": "-1", "occurrence": 1, "type": -1}, "must be -1, 0 or \\+1"),
    ({"energy": -1, "occurrence": 1}, "exactly the keys"),
    ([-1, 1, -1], "exactly the keys"),
])
def test_ex4_3_each_wrong_prediction_has_its_own_message(prediction, message):
    _fails(message, check_exercise_4_3, prediction=prediction)


C_CYL = 0.5 * math.sqrt(3 / 8)


def _pooled(kappa=2.0, d=2, c=C_CYL, weights="f", energy="ratio of sums"):
    def fn(f, t, pooling):
        f, eta = np.asarray(f), d * np.asarray(t) ** 2
        w = f if weights == "f" else np.full(f.size, 1 / f.size)
        per_type = c * np.sqrt(kappa * eta)
        if pooling == "energy":
            if energy == "mean of squares":
                return float(c * np.sqrt(kappa * np.sum(f * eta)))
            if energy == "ratios":
                return float(np.sum(f * per_type))
            return float(c * np.sqrt(kappa * np.sum(w * eta ** 2) / np.sum(w * eta)))
        return float(np.sum(f * per_type) if pooling == "occurrence" else np.mean(per_type))
    return fn


@pytest.mark.parametrize("wrong, message", [
    (_pooled(kappa=1.0), "off by √2"),
    (_pooled(d=1), "off by √2"),
    (_pooled(kappa=1.0, d=1), "off by 2"),
    (_pooled(c=1.0), "multiply by the cylinder's constant"),
    (_pooled(energy="mean of squares"), "you averaged squared ratios"),
    (_pooled(weights="1/V"), "weight each type by its frequency"),
    (_pooled(energy="ratios"), "sums energies, not ratios"),
    (lambda f, t, p: _pooled()(f, t, {"type": "occurrence", "occurrence": "type"}.get(p, p)),
     "swapped the two means"),
    (lambda f, t, p: "0.1", "should be a number"),
])
def test_ex4_3_each_pooling_mistake_has_its_own_message(wrong, message):
    _fails(message, check_exercise_4_3, pooled_ratio=wrong)


def test_ex4_3_the_chapters_pooled_ratio_is_the_packages():
    f = zipf_frequencies(40, 1.1)
    t = tied_radii(f, 0.3, 0.05)
    for p in POOLINGS:
        assert _pooled()(f, t, p) == pytest.approx(reference_pooled_ratio(f, t, p), rel=1e-12)


@pytest.mark.parametrize("wrong, message", [
    (lambda a, p: int(np.sign(a)), "most types are rare"),
    (lambda a, p: int(np.sign(a)) * (-1 if p == "type" else 1), "strong tie"),
    (lambda a, p: -1 if (p == "energy" and a > 0) else reference_balancing_sign(a, p), "weak tie"),
    (lambda a, p: -reference_balancing_sign(a, p) if (a < 0 and p != "type") else reference_balancing_sign(a, p),
     "frequent types are the diffuse ones"),
    (lambda a, p: (1 if 0 < a < 0.25 else -1) if p == "energy" else reference_balancing_sign(a, p),
     "the threshold is not 1/4"),
    (lambda a, p: (1 if 0 < a < 0.19 else -1) if p == "energy" else reference_balancing_sign(a, p),
     "alpha\\* ≈ 0.14|α\\* ≈ 0.14"),                                   # a threshold between alpha* and 0.2
    (lambda a, p: 1, "your answer hardly does"),
    (lambda a, p: True, "must be -1, 0 or \\+1"),
])
def test_ex4_3_each_wrong_sign_rule_has_its_own_message(wrong, message):
    _fails(message, check_exercise_4_3, balancing_sign=wrong)


# --- Exercise 5.1 ----------------------------------------------------------------------------

def test_ex5_1_reference_passes(capsys):
    check_exercise_5_1(reference_score_terms, reference_removal_orders)
    assert "Exercise 5.1 passed" in capsys.readouterr().out


def test_ex5_1_reference_follows_the_chapters_table():
    sees = reference_score_terms(True)
    assert {k: v[0] for k, v in sees.items()} == att.ORDERS
    assert {k for k, v in sees.items() if v[1]} == set(att.KEY_TERMS)
    blind = reference_score_terms(False)
    assert {k for k, v in blind.items() if v[0] is None} == {"mu_mu", "mu_v", "mu_n"}
    assert {k for k, v in blind.items() if v[1]} == {"v_v", "v_n", "n_v", "n_n"}


def _terms(change):
    def fn(q):
        d = dict(reference_score_terms(q))
        return {**d, **change(q, d)}
    return fn


@pytest.mark.parametrize("wrong, message", [
    (lambda q: reference_score_terms(True), "does not depend on query_sees_centroid"),
    (_terms(lambda q, d: {} if q else {"mu_v": (1, True), "mu_n": (2, True)}), "give it None"),
    (_terms(lambda q, d: {"v_n": (4, True)}), "the order of v_n is 3, not 4"),
    (_terms(lambda q, d: {"v_mu": (1, True)}), "the softmax cancels it"),
    (_terms(lambda q, d: {"mu_n": (2, False)} if q else {}), "depends on the key j through its n_j"),
    (_terms(lambda q, d: {"v_v": (2, "yes")}), "must be True or False"),
    (_terms(lambda q, d: {"v_v": (-1, True)}), "whole number >= 0, or None"),
    (_terms(lambda q, d: {"v_v": 2}), "should be a pair"),
    (lambda q: {"v_v": (2, True)}, "exactly the keys"),
])
def test_ex5_1_each_term_mistake_has_its_own_message(wrong, message):
    _fails(message, check_exercise_5_1, wrong)


@pytest.mark.parametrize("wrong, message", [
    (lambda q: (1, 2), "those are the orders of the other head"),
    (lambda q: (2, 3), "those are the orders of the other head"),
    (lambda q: (1, 3) if q else (2, 3), "μᵀMv_j \\(order 1\\) and μᵀMn_j \\(order 2\\)"),
    (lambda q: 12, "should be a pair"),
])
def test_ex5_1_each_removal_mistake_has_its_own_message(wrong, message):
    _fails(message, check_exercise_5_1, reference_score_terms, wrong)


def test_ex5_1_integer_valued_floats_are_accepted():
    check_exercise_5_1(lambda q: {k: (None if o is None else float(o), r)
                                  for k, (o, r) in reference_score_terms(q).items()},
                       lambda q: tuple(map(float, reference_removal_orders(q))))


@pytest.mark.slow
def test_ex5_1_removal_orders_are_measured():
    """The blind head's removal slopes, measured (chapter 5's solution)."""
    from tanbias.stats import loglog_slope
    from tanbias.theory.residual import default_loop_manifold

    quad = default_loop_manifold()
    W_Q, W_K = np.random.default_rng(7).standard_normal((2, quad.D, quad.D)) / np.sqrt(quad.D)
    mu = quad.mu / np.linalg.norm(quad.mu)
    for W, orders in ((W_Q, reference_removal_orders(True)),
                      (W_Q @ (np.eye(quad.D) - np.outer(mu, mu)), reference_removal_orders(False))):
        change = att.removal_scaling(quad, np.geomspace(0.01, 0.25, 6), W, W_K, n_tokens=48)
        for removed, order in zip(("tangent", "normal"), orders):
            g = change[change["removed"] == removed].groupby("t")["change"].median()
            assert loglog_slope(g.index.to_numpy(), g.to_numpy()).slope == pytest.approx(order, abs=0.1)


# --- Exercise 6.1 ----------------------------------------------------------------------------

@pytest.mark.slow
def test_ex6_1_reference_passes_with_the_right_predictions(capsys):
    check_exercise_6_1(reference_loop_gains, compounds=True, larger_lead=False)
    out = capsys.readouterr().out
    assert "Exercise 6.1 passed" in out and "at 0.3" in out


@pytest.mark.slow
@pytest.mark.parametrize("kwargs, message", [
    ({"compounds": False}, "compounds=False does not match the run at init_scale=0.3"),
    ({"larger_lead": True}, "larger_lead=True does not match the runs"),
    ({"compounds": "False"}, "must be True or False"),
    ({"compounds": "yes"}, "must be True or False"),
    ({"compounds": math.nan}, "must be True or False"),
    ({"larger_lead": 0}, "must be True or False"),
])
def test_ex6_1_each_wrong_prediction_has_its_own_message(kwargs, message):
    _fails(message, check_exercise_6_1, reference_loop_gains, **kwargs)


@pytest.mark.parametrize("kwargs, name", [
    ({"compounds": None, "larger_lead": None}, "compounds"),
    ({"compounds": True, "larger_lead": None}, "larger_lead"),
    ({"compounds": None}, "compounds"),
])
def test_ex6_1_a_prediction_still_none_is_refused_by_name_before_anything_runs(kwargs, name, capsys):
    calls = []

    def gains(df, step):
        calls.append(step)
        return reference_loop_gains(df, step)

    _fails(f"Exercise 6.1: {name} is still None. Set {name} = True or False", check_exercise_6_1,
           gains, **kwargs)
    assert calls == [] and capsys.readouterr().out == ""


@pytest.mark.slow
def test_ex6_1_compounds_is_a_criterion_the_lazy_control_fails():
    gains = {name: reference_loop_gains(df, ex._EX6_STEP) for name, df in ex._loop_runs().items()}
    assert ex.loop_compounds(gains["default run (init_scale=0.1)"])
    assert not ex.loop_compounds(gains["lazy control (init_scale=1)"])
    # the old criterion (closed > cut) would call the lazy control compounding too
    lazy = gains["lazy control (init_scale=1)"]
    assert not ex.loop_compounds({"closed": 0.99 * ex.EX6_COMPOUND_LEAD * lazy["cut"], "cut": lazy["cut"]})


@pytest.mark.slow
def test_ex6_1_the_update_alignment_column_is_named():
    def from_update_alignment(df, step):
        out = {}
        for loop in ("closed", "cut"):
            g = df[df["loop"] == loop].set_index("step")["update_alignment"]
            out[loop] = float(g.loc[step] / g.loc[0])
        return out

    _fails("Did you use `update_alignment`", check_exercise_6_1, from_update_alignment)


@pytest.mark.slow
def test_ex6_1_left_out_predictions_keep_the_gains_to_themselves(capsys):
    check_exercise_6_1(reference_loop_gains)
    out = capsys.readouterr().out
    assert "predictions were not checked" in out and "at 0.3" not in out


def _swapped(df, step):
    g = reference_loop_gains(df, step)
    return {"closed": g["cut"], "cut": g["closed"]}


def _column(col, fn):
    def gains(df, step):
        out = {}
        for loop in ("closed", "cut"):
            g = df[df["loop"] == loop].set_index("step")[col]
            out[loop] = fn(g, step)
        return out
    return gains


@pytest.mark.slow
@pytest.mark.parametrize("wrong, message", [
    (_swapped, "You swapped the runs"),
    (_column("share", lambda g, s: g.loc[s] / g.loc[0]), "You used the `share` column"),
    (_column("alignment", lambda g, s: g.loc[s] - g.loc[0]), "You returned a difference"),
    (lambda df, s: {k: 1 / v for k, v in reference_loop_gains(df, s).items()}, "divided the wrong way round"),
    (lambda df, s: reference_loop_gains(df, int(df["step"].max())), "last logged step"),
    (lambda df, s: [1.0, 2.0], "should be a dict"),
    (lambda df, s: {"closed": "1", "cut": 1.0}, "should be a number"),
])
def test_ex6_1_each_mistake_has_its_own_message(wrong, message):
    _fails(f"(?i){message}", check_exercise_6_1, wrong)


# --- Exercise 8.1: a sign is graded only where the interval excludes 0 ------------------------

def _planted_metrics(effects):
    """A sweep's metrics with per-seed balancing effects ``effects[kind]`` at the exercise's
    selection, and other rows (early phase, refit proxy, a layer) that differ from it."""
    rows = []
    for kind in KINDS:
        for seed, effect in enumerate(effects[kind]):
            for regime, value in (("natural", 1.0 + 0.1 * seed), ("balanced", 1.0 + 0.1 * seed + effect)):
                for phase in ("early", "late"):
                    for proxy in ("frozen", "refit"):
                        for layer in (0, 1, "mean"):
                            shift = (0.3 if phase == "early" else 0) + (0.2 if proxy == "refit" else 0) + (
                                0.05 * layer if layer != "mean" else 0)
                            rows.append(dict(run=f"{kind}-{regime}-s{seed}", kind=kind, regime=regime, seed=seed,
                                             phase=phase, layer=layer, bucket="all", proxy=proxy,
                                             log_enrichment=value + shift * (1.5 if regime == "balanced" else 1),
                                             excess_iso=0.01 * value, p_energy=0.05))
    return pd.DataFrame(rows)


#: the encoder's interval lies below 0, the decoder's contains it
DECIDED_AND_NOT = {"encoder": (-0.5, -0.45, -0.55), "decoder": (0.2, -0.3, 0.05)}


def test_ex8_1_the_mechanisms_prediction_passes_where_the_data_do_not_decide(capsys):
    m = _planted_metrics(DECIDED_AND_NOT)
    check_exercise_8_1(reference_balancing_effect, prediction={"encoder": -1, "decoder": -1}, metrics=m)
    out = capsys.readouterr().out
    assert "decoder" in out and "the data do not decide, so no sign is graded" in out
    assert re.search(r"encoder -0\.500 \[[^]]+\] \(excludes 0\)", out)
    for decoder in (-1, 0, 1):           # any prediction passes where the interval contains 0
        check_exercise_8_1(reference_balancing_effect, prediction={"encoder": -1, "decoder": decoder}, metrics=m)


@pytest.mark.parametrize("encoder, message", [(1, "lies below 0"), (0, "predicted no change")])
def test_ex8_1_a_sign_is_graded_where_the_interval_excludes_0(encoder, message):
    m = _planted_metrics(DECIDED_AND_NOT)
    _fails(f"{message}", check_exercise_8_1, reference_balancing_effect,
           prediction={"encoder": encoder, "decoder": -1}, metrics=m)


def test_ex8_1_the_old_bug_is_gone():
    """A point estimate of +0.001 inside [-0.3, +0.3] no longer fails a prediction of -1."""
    m = _planted_metrics({"encoder": (-0.5, -0.45, -0.55), "decoder": (0.301, -0.3, 0.002)})
    check_exercise_8_1(reference_balancing_effect, prediction={"encoder": -1, "decoder": -1}, metrics=m)


@pytest.mark.parametrize("wrong, message", [
    (lambda mm, k: -reference_balancing_effect(mm, k), "sign flipped"),
    (lambda mm, k: reference_balancing_effect(mm, k, phase="early"), "early probe steps"),
    (lambda mm, k: reference_balancing_effect(mm, k, proxy="refit"), "refit proxy"),
    (lambda mm, k: reference_balancing_effect(mm, k, layer=1), "last layer only"),
    (lambda mm, k: float(np.exp(reference_balancing_effect(mm, k))), "ratio of enrichments"),
    (lambda mm, k: "x", "should be a number"),
])
def test_ex8_1_each_mistake_has_its_own_message(wrong, message):
    _fails(message, check_exercise_8_1, wrong, metrics=_planted_metrics(DECIDED_AND_NOT))


@pytest.mark.parametrize("prediction, message", [
    ({"encoder": 2, "decoder": -1}, "must be -1, 0 or \\+1"),
    ({"encoder": "-1", "decoder": -1}, "must be -1, 0 or \\+1"),
    ({"encoder": -1}, "exactly the keys"),
    ("weaker", "exactly the keys"),
])
def test_ex8_1_a_malformed_prediction_is_refused_by_name(prediction, message):
    _fails(message, check_exercise_8_1, reference_balancing_effect, prediction=prediction,
           metrics=_planted_metrics(DECIDED_AND_NOT))


@pytest.mark.slow
def test_ex8_1_the_committed_sweep_decides_no_sign(capsys):
    try:
        loaded = sweep.load_sweep()
    except ParameterError as exc:
        pytest.fail(f"the committed sweep is incomplete: {exc}")
    m = sweep.run_metrics(loaded)
    for s in (-1, 0, 1):
        check_exercise_8_1(reference_balancing_effect, prediction={"encoder": s, "decoder": s}, metrics=m)
    out = capsys.readouterr().out
    assert out.count("Exercise 8.1 passed") == 3 and out.count("the data do not decide") == 6


# --- Exercise 10.1: sign and shape from one interval ------------------------------------------

def _dose_analysis(change=(-0.5, -0.7, -0.3), flat=(0.55, 0.2, 1.0), observed="0"):
    """A stand-in for chapter 10's DoseAnalysis: two seeds at both ends of the token knob, and the
    late-enrichment row with the given paired change and flattest-level intervals."""
    table = pd.DataFrame([{"kind": kind, "level": level, "seed": seed, "on_token": True, "on_language": False,
                           "log_enrichment_late": value + 0.1 * seed, "log_enrichment_early": early}
                          for kind in KINDS for seed in (0, 1)
                          for level, value, early in (("skewed", 1.0, 0.8), ("b100", 0.5, 0.6))])
    responses = pd.DataFrame([{"metric": "log_enrichment_late", "knob": "token", "kind": kind, "observed": observed,
                               "end_to_end": -0.5, "end_to_end_lo": -0.9, "end_to_end_hi": 0.1, "n_seeds": 2,
                               "change": change[0], "change_lo": change[1], "change_hi": change[2],
                               "flat_mean": flat[0], "flat_lo": flat[1], "flat_hi": flat[2]} for kind in KINDS])
    return types.SimpleNamespace(table=table, responses=responses)


MECHANISM_10_1 = {kind: {"sign": -1, "shape": "attenuated"} for kind in KINDS}


def test_ex10_1_sign_and_shape_read_one_interval(capsys):
    """The registered slope reads '0' here, the paired change lies below 0: the checker grades the
    change, so the mechanism's -1 and 'attenuated' agree with each other and pass."""
    check_exercise_10_1(reference_dose_change, prediction=MECHANISM_10_1, analysis=_dose_analysis())
    out = capsys.readouterr().out
    assert "'attenuated'" in out and "excludes 0" in out and "reads '0' at Holm-adjusted p" in out
    _fails("lies below 0", check_exercise_10_1, reference_dose_change,
           prediction={kind: {"sign": 1, "shape": "attenuated"} for kind in KINDS}, analysis=_dose_analysis())
    _fails("predicted no change", check_exercise_10_1, reference_dose_change,
           prediction={kind: {"sign": 0, "shape": "attenuated"} for kind in KINDS}, analysis=_dose_analysis())


def test_ex10_1_an_undecided_change_grades_neither_sign_nor_shape(capsys):
    undecided = _dose_analysis(change=(-0.1, -0.4, 0.2))
    for sign, shape in ((-1, "attenuated"), (1, "stronger"), (0, "unchanged")):
        check_exercise_10_1(reference_dose_change, analysis=undecided,
                            prediction={kind: {"sign": sign, "shape": shape} for kind in KINDS})
    assert "the data do not decide" in capsys.readouterr().out


def test_ex10_1_never_reads_absent(capsys):
    """A flattest level whose interval reaches 0 is not shown present, not absent
    (``dose-posthoc.toml`` ``[presence]``): a predicted shape is then not scored."""
    absent = {kind: {"sign": -1, "shape": "absent"} for kind in KINDS}
    check_exercise_10_1(reference_dose_change, prediction=absent, analysis=_dose_analysis(flat=(0.2, -0.1, 0.5)))
    assert "not shown present" in capsys.readouterr().out
    _fails("the runs say 'attenuated'", check_exercise_10_1, reference_dose_change, prediction=absent,
           analysis=_dose_analysis())


@pytest.mark.parametrize("prediction, message", [
    ({kind: {"sign": "-1", "shape": "attenuated"} for kind in KINDS}, "must be -1, 0 or \\+1"),
    ({kind: {"sign": -1, "shape": "weaker"} for kind in KINDS}, "must be one of"),
    ({kind: {"sign": -1} for kind in KINDS}, "exactly the keys"),
    ({"encoder": {"sign": -1, "shape": "attenuated"}}, "exactly the keys"),
])
def test_ex10_1_a_malformed_prediction_is_refused_by_name(prediction, message):
    _fails(message, check_exercise_10_1, reference_dose_change, prediction=prediction, analysis=_dose_analysis())


@pytest.mark.parametrize("wrong, message", [
    (lambda t, k: -reference_dose_change(t, k), "sign flipped"),
    (lambda t, k: reference_dose_change(t, k, column="log_enrichment_early"), "early phase"),
    (lambda t, k: float(np.exp(reference_dose_change(t, k))), "return the difference of \\*log\\*"),
])
def test_ex10_1_each_mistake_has_its_own_message(wrong, message):
    _fails(message, check_exercise_10_1, wrong, analysis=_dose_analysis())


# --- the book: every exercise numbered as it renders, its stub and its checker agree ----------

def _exercise_blocks(path):
    text = path.read_text(encoding="utf8")
    starts = [m.start() for m in re.finditer(r"```\{exercise-start\}", text)]
    return [text[s:text.index("```{solution-end}", s)] for s in starts]


def test_every_exercise_is_numbered_as_the_book_renders_it():
    """Label ``chN_exk``, stub "Exercise N.k", difficulty and time labels, and checkers that exist.
    A checker of :mod:`tanbias.book.exercises` is ``check_exercise_N_k`` and listed in ``EXERCISES``;
    a page may keep its checkers in a module of its own (``tanbias.book.exercises_<topic>``)."""
    import importlib

    seen = []
    for path in sorted((ROOT / "chapters").glob("*.md")):
        blocks = _exercise_blocks(path)
        chapter = _sphinxext.chapter_number(f"chapters/{path.stem}")
        for k, block in enumerate(blocks, start=1):
            number = f"{chapter}.{k}"
            label = re.search(r":label: (\S+)", block).group(1)
            assert label == f"ch{chapter}_ex{k}", (path.name, label)
            assert f"```{{solution-start}} {label}" in block, (path.name, label)
            stubs = re.findall(r'NotImplementedError\("Exercise ([\w.]+):', block)
            assert stubs and set(stubs) == {number}, (path.name, number, stubs)
            assert re.search(r"\*\*Difficulty\*\* \w+ · \*\*Importance\*\* \w+ · \*\*Time\*\* about \d+ minutes",
                             block), (path.name, number)
            imported = {}
            for module, names in re.findall(r"from (tanbias\.book\.exercises\w*) import ([\w, ]+)", block):
                for name in (n.strip() for n in names.split(",")):
                    imported[name] = module
            calls = set(re.findall(r"\b(check_\w+)\(", block))
            assert calls and calls <= set(imported), (path.name, number, calls, imported)
            for name in calls:
                assert callable(getattr(importlib.import_module(imported[name]), name)), (path.name, name)
            if "tanbias.book.exercises" in {imported[name] for name in calls}:
                seen.append((number, path.stem, f"check_exercise_{number.replace('.', '_')}"))
                assert calls == {seen[-1][2]}, (path.name, number, calls)
    assert tuple(seen) == ex.EXERCISES


def test_every_theory_chapter_has_an_exercise():
    chapters = {stem for _, stem, _ in ex.EXERCISES}
    for n in range(1, 7):
        assert any(stem.startswith(f"0{n}_") for stem in chapters), n


def test_every_checker_of_the_registry_exists_and_is_public():
    for number, _, name in ex.EXERCISES:
        assert callable(getattr(ex, name)) and name in ex.__all__, number


def test_the_chapters_solutions_pass_their_checkers(capsys):
    """The theory chapters' solutions, as written there, pass (the book build runs them too)."""
    def count_slope(r, xi, phi):
        h = xi * np.sin(phi)
        return 2.0 if r <= h else 4 * r ** 2 / (2 * r ** 2 - h ** 2)

    def eta_stretched(ell, d, p):
        return ell ** 2 * math.exp(math.lgamma((d + 2) / p) - math.lgamma(d / p))

    def bias_surface(theta, kappa1, kappa2):
        ii = kappa1 * np.cos(theta) ** 2 + kappa2 * np.sin(theta) ** 2
        return (ii ** 2 - kappa1 * kappa2) / 6

    def gradient_ratio_rms(x, mu, delta, tangent_basis, normal_basis):
        x_c = np.asarray(x, dtype=float) - mu
        d_norm = np.linalg.norm(delta, axis=1)
        tangent = d_norm * np.linalg.norm(x_c @ tangent_basis, axis=1)
        normal = d_norm * np.linalg.norm(x_c @ normal_basis, axis=1)
        return float(np.sqrt(np.sum(normal ** 2) / np.sum(tangent ** 2)))

    check_exercise_1_1(count_slope)
    check_exercise_2_1(eta_stretched)
    check_exercise_3_1(bias_surface)
    check_exercise_4_1(gradient_ratio_rms, lambda k, d, R: np.sqrt(k * (k + 2) / (d * (d + 2))) / (2 * R))
    check_exercise_4_2(lambda t1, t2: 1 if t1 < t2 else 2, lambda t1, t2: t1 / t2)
    assert capsys.readouterr().out.count("passed") == 5
