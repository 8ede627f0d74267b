"""Checkers for the inline exercises, ARENA style (chapters 1 to 6, 8 and 10).

Each ``check_exercise_<chapter>_<k>`` runs the reader's functions on several cases, compares
them with a reference, and either prints a line starting ``Exercise <chapter>.<k> passed`` or
raises ``AssertionError`` with a message that names the likely mistake. Exercises are
numbered by chapter, as the book renders them (:data:`EXERCISES`). The references live here,
next to their checkers, so that chapters never import solution code from a folder.

What every checker does, so that it cannot be fooled:

* it tests several cases, so that no hard-coded number passes;
* it checks the type of every argument and of every returned value, and names what was
  expected (a string ``"False"`` is not a prediction of ``False``);
* it says so kindly when it is given something that is not a function, or a stub that
  still raises ``NotImplementedError``;
* a typical mistake gets its own message: a mistake is named only when it reproduces the
  reader's answer in *every* case, so two mistakes that agree on one case are told apart
  on another;
* where the data do not decide (a 95 % interval contains 0) it says so and grades no sign.

The exercises:

* 1.1 (chapter 1): the slope of the volume count on two planes that cross at an angle;
* 2.1 (chapter 2): the moment ratio of the law ``exp(-(r/ell)^p)``;
* 3.1 (chapter 3): the bias function ``b(u)`` on a quadric surface;
* 4.1 (chapter 4; the statement's first exercise): the constant ``c`` derived, and the
  O(t) energy ratio computed;
* 4.2 (chapter 4; the statement's second): which token type is more suppressed, and by how much;
* 4.3 (chapter 4; the statement's fourth, in theory): data balancing on a Zipf vocabulary;
* 5.1 (chapter 5): the nine score terms, for a head whose query ignores the centroid;
* 6.1 (chapter 6; the statement's third): does the loop compound, in a setting not shown;
* 8.1 (chapter 8; the statement's fourth, in the lab): the balancing effect of the 2x2 sweep;
* 10.1 (chapter 10; the same, as a dose-response): sign and shape along the token knob.
"""

from __future__ import annotations

import functools
import math
import numbers

import numpy as np

from tanbias.lab.analysis import dose, sweep
from tanbias.lab.analysis.dose import knob_runs
from tanbias.lab.analysis.dose_design import level_positions
from tanbias.lab.config import KINDS
from tanbias.stats import interval_word
from tanbias.theory import attention as att
from tanbias.theory.balancing import (POOLINGS, balancing_effect, energy_sign_threshold, pooled_ratio,
                                      tied_radii, zipf_frequencies)
from tanbias.theory.directional_density import bias_function
from tanbias.theory.gradients import (gradient_ratio, predicted_rms_constant, split_gradient,
                                      two_token_types)
from tanbias.theory.manifolds import GeneralizedCylinder, Quadric
from tanbias.theory.residual import feedback_loop
from tanbias.theory.volume_growth import two_sheet_slope

__all__ = [
    "EXERCISES",
    "reference_count_slope", "check_exercise_1_1",
    "reference_eta_stretched", "check_exercise_2_1",
    "reference_bias_surface", "check_exercise_3_1",
    "reference_gradient_ratio", "reference_rms_constant", "check_exercise_4_1",
    "reference_more_suppressed", "reference_relative_suppression", "check_exercise_4_2",
    "BALANCING_SETTING", "reference_pooled_ratio", "reference_balancing_sign", "check_exercise_4_3",
    "reference_score_terms", "reference_removal_orders", "check_exercise_5_1",
    "reference_loop_gains", "check_exercise_6_1", "EX6_COMPOUND_LEAD", "loop_compounds",
    "EX8_SELECTION", "reference_balancing_effect", "check_exercise_8_1",
    "DOSE_SHAPES", "reference_dose_change", "check_exercise_10_1",
]

#: every exercise of the book, in reading order: (number as the book renders it, chapter file
#: stem, checker); the number is ``<chapter>.<k>``, the k-th exercise of that chapter
EXERCISES = (
    ("1.1", "01_manifold_hypothesis", "check_exercise_1_1"),
    ("2.1", "02_radial_concentration", "check_exercise_2_1"),
    ("3.1", "03_curvature_attenuation", "check_exercise_3_1"),
    ("4.1", "04_gradient_ratio", "check_exercise_4_1"),
    ("4.2", "04_gradient_ratio", "check_exercise_4_2"),
    ("4.3", "04_gradient_ratio", "check_exercise_4_3"),
    ("5.1", "05_attention_bilinear", "check_exercise_5_1"),
    ("6.1", "06_residual_feedback", "check_exercise_6_1"),
    ("8.1", "08_eurobert_vs_decoder", "check_exercise_8_1"),
    ("10.1", "10_dose_response", "check_exercise_10_1"),
)

_RTOL = 1e-6


# ============================================================================
# shared helpers: types, calls, and the diagnosis of a mistake over all cases
# ============================================================================

def _show(value) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def _require_function(fn, name: str, signature: str, number: str) -> None:
    """A friendly message when the reader passes something that is not a function."""
    if not callable(fn):
        raise AssertionError(
            f"Exercise {number}: {name} should be a function, {signature}; you passed {_show(fn)}. Define it with "
            f"`def {name}(...)`, run that cell, and pass its name without calling it.")


def _call(fn, name: str, args: tuple, label: str, number: str):
    """Run the reader's function on one case; its errors become a message naming the case."""
    try:
        return fn(*args)
    except NotImplementedError:
        raise AssertionError(f"Exercise {number}: {name} still raises NotImplementedError: replace that "
                             f"line with your code, run the cell, then run this check again.") from None
    except AssertionError:
        raise
    except Exception as exc:
        raise AssertionError(f"Exercise {number}: {name} raised {type(exc).__name__} on the case "
                             f"{label}: {exc}") from exc


def _as_float(value, what: str, finite: bool = True) -> float:
    """The reader's value as a float, or a clear AssertionError (``finite=False`` lets NaN and
    infinities through, for :func:`_grade` to diagnose)."""
    if hasattr(value, "item") and getattr(value, "size", 1) == 1:   # numpy / torch scalars
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise AssertionError(f"{what} should be a number (a float), got {_show(value)}.")
    value = float(value)
    if finite and not math.isfinite(value):
        raise AssertionError(f"{what} should be a finite number, got {value}.")
    return value


def _as_bool(value, what: str) -> bool:
    """``True`` or ``False`` (numpy's booleans too); anything else is refused by name."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise AssertionError(f"{what} must be True or False (a bool), got {_show(value)}. A string "
                         f"such as 'False' or 'yes' is not a prediction.")


class _Omitted:
    """The default of a prediction argument left out of the call (``None`` is the stub's value)."""

    def __repr__(self):
        return "<not passed>"


_OMITTED = _Omitted()


def _refuse_none_prediction(value, name: str, expected: str, exercise: str) -> None:
    """A prediction still at the stub's ``None`` is refused by name, before anything is run or shown."""
    if value is None:
        raise AssertionError(f"Exercise {exercise}: {name} is still None. Set {name} = {expected} in "
                             f"the cell above, as your prediction, then run this cell again. Nothing "
                             f"has been checked or shown yet. (To check only your functions, leave "
                             f"{name} out of the call.)")


def _as_sign(value, what: str) -> int:
    """-1, 0 or +1 as an int; booleans, strings, NaN and other numbers are refused by name."""
    if (not isinstance(value, (bool, np.bool_)) and isinstance(value, numbers.Real)
            and not (isinstance(value, float) and math.isnan(value)) and value in (-1, 0, 1)):
        return int(value)
    raise AssertionError(f"{what} must be -1, 0 or +1 (a number), got {_show(value)}.")


def _check_keys(value, what: str, keys) -> dict:
    if not isinstance(value, dict) or set(value) != set(keys):
        raise AssertionError(f"{what} should be a dict with exactly the keys {sorted(keys)}, "
                             f"got {_show(value)}.")
    return value


def _same(a, b, rtol=_RTOL):
    if a is None or b is None:
        return False
    if math.isinf(a) or math.isinf(b):
        return a == b
    if math.isnan(a) or math.isnan(b):
        return False
    return abs(a - b) <= rtol * max(abs(a), abs(b), 1e-300)


def _grade(number: str, got, cases, mistakes, rtol=_RTOL) -> None:
    """Compare the reader's values with the expected ones over every case.

    Parameters
    ----------
    number : str
        The exercise, for the messages.
    got : list of float
        The reader's value in each case (NaN allowed: a mistake may explain it).
    cases : list of (label, expected)
    mistakes : list of (message, values)
        A known mistake and what it gives in each case (None where it does not apply). A
        mistake is named only when it reproduces the reader's value in every case where it
        applies (NaN where the reader has NaN), and the reader is wrong in at least one of them.
    """
    def match(a, b):
        return (math.isnan(a) and math.isnan(b)) or _same(a, b, rtol)

    wrong = [k for k, (_, expected) in enumerate(cases) if not _same(got[k], expected, rtol)]
    if not wrong:
        return
    k = wrong[0]
    label, expected = cases[k]
    context = f"{label}: expected {expected:.6g}, got {got[k]:.6g}"
    for message, values in mistakes:
        applies = [j for j, v in enumerate(values) if v is not None]
        if (applies and any(j in wrong for j in applies)
                and all(match(got[j], float(values[j])) for j in applies)):
            raise AssertionError(f"Exercise {number}: {message} ({context})")
    bad = [j for j in wrong if not math.isfinite(got[j])]
    if bad:
        raise AssertionError(f"Exercise {number}: your function returned {got[bad[0]]} on the case "
                             f"{cases[bad[0]][0]}; it should be a finite number (a division by zero?).")
    if len(got) > 1 and len({round(g, 12) for g in got}) == 1:
        raise AssertionError(f"Exercise {number}: your function returns {got[0]:.6g} whatever its "
                             f"arguments; the answer must depend on them ({context}).")
    raise AssertionError(f"Exercise {number}: wrong value ({context}).")


def _grade_cases(number: str, got, raw, reference, mistakes_of, rtol=_RTOL):
    """:func:`_grade` on raw cases ``(label, args)``: the reference and each known mistake computed per case.

    ``mistakes_of(*args)`` gives ``[(value or None, message), ...]`` in the same order for every
    case; returns the ``(label, expected)`` cases graded.
    """
    cases = [(label, reference(*args)) for label, args in raw]
    per_case = [mistakes_of(*args) for _, args in raw]
    mistakes = [(per_case[0][i][1], [pc[i][0] for pc in per_case]) for i in range(len(per_case[0]))]
    _grade(number, got, cases, mistakes, rtol)
    return cases


def _values(fn, name, cases, what, number):
    """The reader's function on every case (args, label), as floats."""
    return [_as_float(_call(fn, name, args, label, number), f"Exercise {number}: {name}{what.format(*args)}",
                      finite=False) for label, args in cases]


# ============================================================================
# Exercise 1.1 (chapter 1): the slope of the volume count on two crossing planes
# ============================================================================

def reference_count_slope(r, xi, phi) -> float:
    """Reference of Exercise 1.1: ``d log #(r) / d log r`` for two planes at angle ``phi``.

    The ball of radius ``r`` is centred on one plane at distance ``xi`` from the crossing
    line. The other plane is at distance ``h = xi sin(phi)`` from the centre, so it enters
    the ball at ``r = h``; above that the count is ``nu pi (2 r^2 - h^2)`` and the slope
    ``4 r^2 / (2 r^2 - h^2)``: it jumps from 2 to 4 at ``r = h`` and relaxes back to 2.

    Example
    -------
    >>> reference_count_slope(0.1, 0.4, np.pi / 6), reference_count_slope(0.2001, 0.4, np.pi / 6) > 3.99
    (2.0, True)
    """
    return float(two_sheet_slope(np.array([float(r)]), float(xi), float(phi))[0])


def _slope_of(count, r):
    """Exact log-log derivative of a count law by a tiny symmetric step."""
    eps = 1e-7
    return float((np.log(count(r * (1 + eps))) - np.log(count(r * (1 - eps))))
                 / (np.log1p(eps) - np.log1p(-eps)))


_EX1_1_CASES = (
    ("r = 0.1, ξ = 0.4, φ = π/6 (inside the first sheet only)", (0.1, 0.4, math.pi / 6)),
    ("r = 0.21, ξ = 0.4, φ = π/6 (just after the jump)", (0.21, 0.4, math.pi / 6)),
    ("r = 0.35, ξ = 0.4, φ = π/6", (0.35, 0.4, math.pi / 6)),
    ("r = 0.5, ξ = 0.3, φ = π/2 (the chapter's perpendicular planes)", (0.5, 0.3, math.pi / 2)),
    ("r = 0.3, ξ = 0.5, φ = π/3", (0.3, 0.5, math.pi / 3)),
    ("r = 0.2, ξ = 0.0, φ = π/4 (at the crossing line)", (0.2, 0.0, math.pi / 4)),
    ("r = 1.5, ξ = 0.5, φ = π/4 (far out)", (1.5, 0.5, math.pi / 4)),
)


def _exercise_1_1_mistakes(r, xi, phi):
    h = xi * math.sin(phi)
    hc = xi * math.cos(phi)
    step = 4.0 if r > h else 2.0
    linear = (lambda x: x ** 2 + max(x - h, 0.0) ** 2) if r > h else None
    return [
        (reference_count_slope(r, xi, math.pi / 2),
         "the second plane enters at the distance from the centre to that plane, "
         "ξ sin φ, not at ξ: you left out the angle."),
        (reference_count_slope(r, hc, math.pi / 2),
         "the distance from the centre to the other plane is ξ sin φ, not ξ cos φ "
         "(at φ = π/2 the planes are perpendicular and the distance is ξ)."),
        (_slope_of(linear, r) if linear else None,
         "the other plane meets the ball in a disc of radius √(r² − h²) (Pythagoras), "
         "not r − h."),
        (2.0,
         "your slope stays at 2: once r exceeds the distance ξ sin φ from the centre to the second "
         "plane, that plane adds a disc to the count, which then grows faster."),
        (step,
         "after the jump the slope is 4 r² / (2 r² − h²): it relaxes back towards 2 as the "
         "second disc grows, it does not stay at 4."),
        (math.pi * (r ** 2 + max(r ** 2 - h ** 2, 0.0)),
         "you returned the count #(r) (per unit density), not the slope of log #(r) "
         "against log r."),
        (2 * math.pi * r * (2.0 if r > h else 1.0),
         "you returned d#/dr; the slope asked for is d log # / d log r = (r / #) d#/dr."),
    ]


def check_exercise_1_1(count_slope) -> None:
    """Check the reader's ``count_slope(r, xi, phi) -> float``.

    Parameters
    ----------
    count_slope : callable
        ``count_slope(r, xi, phi)``: the slope ``d log #(r) / d log r`` of the number of
        points within distance ``r`` of a point of one plane, at distance ``xi`` from the
        line where a second plane crosses it at angle ``phi`` (uniform density on both).

    Raises
    ------
    AssertionError
        With the likely mistake (the angle left out, cos for sin, a disc of radius ``r - h``,
        a slope that stays at 4, the count or ``d#/dr`` instead of the slope), or a bad type.

    Example
    -------
    >>> check_exercise_1_1(reference_count_slope)
    Exercise 1.1 passed: on 7 cases the slope is 2 until r = ξ sin φ, jumps to 4, then relaxes towards 2.
    """
    _require_function(count_slope, "count_slope", "count_slope(r, xi, phi) -> float", "1.1")
    got = _values(count_slope, "count_slope", _EX1_1_CASES, "(r={}, xi={}, phi={:.4g})", "1.1")
    cases = _grade_cases("1.1", got, _EX1_1_CASES, reference_count_slope, _exercise_1_1_mistakes, rtol=1e-4)
    print(f"Exercise 1.1 passed: on {len(cases)} cases the slope is 2 until r = ξ sin φ, jumps to 4, "
          f"then relaxes towards 2.")


# ============================================================================
# Exercise 2.1 (chapter 2): the moment ratio of a stretched exponential law
# ============================================================================

def reference_eta_stretched(ell, d, p) -> float:
    """Reference of Exercise 2.1: ``eta_g`` of ``g(r) = exp(-(r / ell)^p)`` in dimension ``d``.

    ``m_k = (ell^(k+1) / p) Gamma((k+1) / p)``, so
    ``eta_g = m_{d+1} / m_{d-1} = ell^2 Gamma((d+2)/p) / Gamma(d/p)``. At ``p = 1`` this is
    the Laplace law's ``d (d+1) ell^2``; at ``p = 2`` the Gaussian's ``d sigma^2`` with
    ``sigma = ell / sqrt(2)``.

    Example
    -------
    >>> round(reference_eta_stretched(1.0, 3, 1.0), 12), round(reference_eta_stretched(2.0, 2, 2.0), 12)
    (12.0, 4.0)
    """
    return float(ell ** 2 * math.exp(math.lgamma((d + 2) / p) - math.lgamma(d / p)))


_EX2_1_CASES = (
    ("ℓ = 1, d = 1, p = 1 (Laplace)", (1.0, 1, 1.0)),
    ("ℓ = 0.3, d = 2, p = 1 (Laplace)", (0.3, 2, 1.0)),
    ("ℓ = 1, d = 3, p = 2 (a Gaussian)", (1.0, 3, 2.0)),
    ("ℓ = 0.5, d = 2, p = 0.5 (a heavy tail)", (0.5, 2, 0.5)),
    ("ℓ = 2, d = 5, p = 3 (a light tail)", (2.0, 5, 3.0)),
    ("ℓ = 0.1, d = 4, p = 1.5", (0.1, 4, 1.5)),
)


def _gamma_ratio(a, b):
    if a <= 0 or b <= 0:
        return None
    return math.exp(math.lgamma(a) - math.lgamma(b))


def _exercise_2_1_mistakes(ell, d, p):
    g = lambda a, b: None if _gamma_ratio(a, b) is None else ell ** 2 * _gamma_ratio(a, b)  # noqa: E731
    ref = reference_eta_stretched(ell, d, p)
    return [
        (g(3 / p, 1 / p),
         "you left out the volume factor: in d dimensions the radius has density "
         "∝ g(r) r^(d−1), so η_g = m_{d+1} / m_{d−1}, not m_2 / m_0."),
        (g((d + 3) / p, (d + 1) / p),
         "the volume factor is r^(d−1), not r^d: η_g = m_{d+1} / m_{d−1}."),
        (g((d + 1) / p, (d - 1) / p),
         "check the argument of Γ: ∫ r^k exp(−(r/ℓ)^p) dr = (ℓ^(k+1) / p) Γ((k+1)/p)."),
        (math.sqrt(ref),
         "you returned the RMS radius √η_g: η_g is the mean *squared* radius."),
        (ref / ell ** 2,
         "you left out the scale: rescaling the law by ℓ multiplies η_g by ℓ²."),
        (ref / ell,
         "η_g has the units of a squared length: it scales with ℓ², not ℓ."),
        (d * (d + 1) * ell ** 2,
         "your answer does not depend on p: d (d+1) ℓ² is the Laplace law's (p = 1) alone."),
    ]


def check_exercise_2_1(eta_stretched) -> None:
    """Check the reader's ``eta_stretched(ell, d, p) -> float``.

    Parameters
    ----------
    eta_stretched : callable
        ``eta_stretched(ell, d, p)``: the moment ratio ``eta_g = m_{d+1} / m_{d-1}`` of the law
        ``g(r) = exp(-(r / ell)^p)`` in dimension ``d``.

    Raises
    ------
    AssertionError
        With the likely mistake (no volume factor, ``r^d`` for ``r^(d-1)``, a wrong Gamma
        argument, the RMS radius, the scale ``ell`` left out or to the first power, the
        Laplace answer for every ``p``), or a bad type.

    Example
    -------
    >>> check_exercise_2_1(reference_eta_stretched)
    Exercise 2.1 passed on 6 cases: η_g = ℓ² Γ((d+2)/p) / Γ(d/p), d (d+1) ℓ² at p = 1 and d ℓ²/2 at p = 2.
    """
    _require_function(eta_stretched, "eta_stretched", "eta_stretched(ell, d, p) -> float", "2.1")
    got = _values(eta_stretched, "eta_stretched", _EX2_1_CASES, "(ell={}, d={}, p={})", "2.1")
    cases = _grade_cases("2.1", got, _EX2_1_CASES, reference_eta_stretched, _exercise_2_1_mistakes, rtol=1e-6)
    print(f"Exercise 2.1 passed on {len(cases)} cases: η_g = ℓ² Γ((d+2)/p) / Γ(d/p), "
          f"d (d+1) ℓ² at p = 1 and d ℓ²/2 at p = 2.")


# ============================================================================
# Exercise 3.1 (chapter 3): the bias function on a quadric surface
# ============================================================================

def reference_bias_surface(theta, kappa1, kappa2) -> float:
    """Reference of Exercise 3.1: ``b(u)`` on ``z = (kappa1 x1^2 + kappa2 x2^2) / 2`` at 0.

    ``u = (cos theta, sin theta)`` in the principal frame, ``II(u,u) = kappa1 cos^2 theta +
    kappa2 sin^2 theta``, and on a surface ``Ric(u,u) = K = kappa1 kappa2``; with ``d = 2``,
    ``b = (1/6) (II(u,u)^2 - kappa1 kappa2)``. Computed here by
    :func:`tanbias.theory.directional_density.bias_function` on a
    :class:`~tanbias.theory.manifolds.Quadric`, which does not use that formula.

    Example
    -------
    >>> round(reference_bias_surface(0.0, 1.0, 0.0), 12)         # cylinder, curved direction
    0.166667
    >>> round(reference_bias_surface(0.4, 1.0, 1.0), 12)         # sphere-like: b = 0
    0.0
    """
    A = np.diag([float(kappa1), float(kappa2)])
    return float(bias_function(Quadric(A, D=3, seed=0), [math.cos(theta), math.sin(theta)]))


_EX3_1_CASES = (
    ("θ = 0.3, κ₁ = 1, κ₂ = 0 (the cylinder)", (0.3, 1.0, 0.0)),
    ("θ = 0.7, κ₁ = 1, κ₂ = −1 (the saddle)", (0.7, 1.0, -1.0)),
    ("θ = 1.1, κ₁ = κ₂ = 1 (a round bowl)", (1.1, 1.0, 1.0)),
    ("θ = 0.2, κ₁ = 1, κ₂ = 0.5 (an oval bowl)", (0.2, 1.0, 0.5)),
    ("θ = 2.0, κ₁ = −0.5, κ₂ = 2", (2.0, -0.5, 2.0)),
    ("θ = π/2, κ₁ = 2, κ₂ = 0.25", (math.pi / 2, 2.0, 0.25)),
)


def _exercise_3_1_mistakes(theta, k1, k2):
    c2, s2 = math.cos(theta) ** 2, math.sin(theta) ** 2
    ii = k1 * c2 + k2 * s2
    K = k1 * k2
    mean_ii2 = (3 * k1 ** 2 + 2 * k1 * k2 + 3 * k2 ** 2) / 8     # E_unif II(u,u)^2 on the circle
    return [
        ((ii ** 2 + K) / 6,
         "the Ricci term enters with a minus sign: b = (d+2)/24 ‖II(u,u)‖² − Ric(u,u)/6 "
         "(positive curvature makes less volume, so a lower density)."),
        ((ii ** 2 - (k1 + k2)) / 6,
         "on a surface Ric(u,u) is the Gauss curvature K = κ₁κ₂ times |u|², not the sum κ₁ + κ₂."),
        (5 / 24 * ii ** 2 - K / 6,
         "a surface has d = 2, so the extrinsic coefficient is (d+2)/24 = 1/6."),
        (ii ** 2 / 24 - K / 6,
         "the chord term carries (d+2)/24, not 1/24: the integration by parts of g'(r) r^(d+2) "
         "brings the factor d + 2."),
        (((k1 * math.cos(theta) + k2 * math.sin(theta)) ** 2 - K) / 6,
         "II(u,u) = κ₁ u₁² + κ₂ u₂² = κ₁ cos²θ + κ₂ sin²θ: the components of u enter squared."),
        ((ii ** 2 - mean_ii2) / 6,
         "you subtracted the mean over directions: b(u) itself is asked, not p(u) − 1 ∝ b − E b."),
        (ii ** 2 / 6,
         "you dropped the Ricci term. On a surface it is the same in every direction, but it is "
         "part of b: b = (1/6)(II(u,u)² − κ₁κ₂)."),
    ]


def check_exercise_3_1(bias_surface) -> None:
    """Check the reader's ``bias_surface(theta, kappa1, kappa2) -> float``.

    Parameters
    ----------
    bias_surface : callable
        ``bias_surface(theta, kappa1, kappa2)``: chapter 3's bias function
        ``b(u) = (d+2)/24 ||II(u,u)||^2 - Ric(u,u)/6`` at the origin of the surface
        ``z = (kappa1 x1^2 + kappa2 x2^2) / 2``, for the direction ``u`` at angle ``theta``
        from the ``x1`` axis.

    Raises
    ------
    AssertionError
        With the likely mistake (the Ricci sign, ``kappa1 + kappa2`` for the Gauss curvature,
        ``d = 3``, a missing ``d + 2``, unsquared components, the mean subtracted, the Ricci
        term dropped), or a bad type.

    Example
    -------
    >>> check_exercise_3_1(reference_bias_surface)
    Exercise 3.1 passed on 6 surfaces: b(θ) = (1/6)((κ₁ cos²θ + κ₂ sin²θ)² − κ₁κ₂).
    """
    _require_function(bias_surface, "bias_surface", "bias_surface(theta, kappa1, kappa2) -> float", "3.1")
    got = _values(bias_surface, "bias_surface", _EX3_1_CASES, "(theta={:.4g}, kappa1={}, kappa2={})", "3.1")
    cases = _grade_cases("3.1", got, _EX3_1_CASES, reference_bias_surface, _exercise_3_1_mistakes, rtol=1e-7)
    print(f"Exercise 3.1 passed on {len(cases)} surfaces: b(θ) = (1/6)((κ₁ cos²θ + κ₂ sin²θ)² − κ₁κ₂).")


# ============================================================================
# Exercise 4.1 (chapter 4): derive the constant c, then reproduce the O(t) ratio
# ============================================================================

def reference_gradient_ratio(x, mu, delta, tangent_basis, normal_basis) -> float:
    """Reference of Exercise 4.1: the RMS (energy) normal-to-tangent ratio.

    ``sqrt(sum_i ||G_i P_N||_F^2 / sum_i ||G_i P_T||_F^2)`` for the per-sample
    weight gradients ``G_i = delta_i (x_i - mu)^T`` of a linear layer.

    Parameters
    ----------
    x : ndarray, shape (B, D)
        Layer inputs (not centred).
    mu : ndarray, shape (D,)
        The centroid.
    delta : ndarray, shape (B, m)
        Back-propagated signals.
    tangent_basis, normal_basis : ndarray, shapes (D, d), (D, D-d)

    Returns
    -------
    float

    Example
    -------
    >>> T, N = np.eye(2)[:, :1], np.eye(2)[:, 1:]
    >>> x = np.array([[1.1, 2.01], [0.9, 2.01]])          # mu + (u, u^2), u = +-0.1
    >>> round(reference_gradient_ratio(x, [1.0, 2.0], np.ones((2, 1)), T, N), 12)
    0.1
    """
    x_c = np.asarray(x, dtype=float) - np.asarray(mu, dtype=float)
    return gradient_ratio(x_c, delta, tangent_basis, normal_basis, form="rms")


def reference_rms_constant(k, d, R) -> float:
    """Reference of Exercise 4.1's derivation: ``c = 1/2 sqrt(E_u ||II(u,u)||^2)`` on
    ``S^k_R x R^(d-k)``.

    There ``||II(u,u)|| = q / R`` with ``q = u_1^2 + ... + u_k^2`` (chapter 3's sphere share), and
    for ``u`` uniform on the unit sphere of ``R^d``, ``E[q^2] = k (k+2) / (d (d+2))``. So
    ``c = sqrt(k (k+2) / (d (d+2))) / (2 R)``: ``1/2 sqrt(3/8)`` on the unit cylinder.

    Example
    -------
    >>> round(reference_rms_constant(1, 2, 1.0), 6), round(0.5 * math.sqrt(3 / 8), 6)
    (0.306186, 0.306186)
    """
    return float(math.sqrt(k * (k + 2) / (d * (d + 2))) / (2 * R))


def _exercise_4_1_cases():
    """(label, (x, mu, delta, T, N)) cases: hand-made, manifold, single sample, zero signals."""
    cases = []
    T2, N2 = np.eye(2)[:, :1], np.eye(2)[:, 1:]
    u = np.array([0.1, -0.1, 0.1, -0.1])
    mu2 = np.array([1.0, 2.0])
    cases.append(("parabola x = mu + (u, u^2), u = +-0.1, constant signal",
                  (mu2 + np.column_stack([u, u ** 2]), mu2, np.ones((4, 1)), T2, N2)))
    M = GeneralizedCylinder(1, 2, R=1.0, D=5, seed=3)
    rng = np.random.default_rng(11)
    s = M.sample_at_radius(0.1, 40, rng)
    delta = rng.standard_normal((40, 3)) * rng.uniform(0.1, 3.0, size=(40, 1))
    cases.append(("cylinder S^1 x R in R^5 at t = 0.1, Gaussian signals of varying size",
                  (s.y, M.mu, delta, M.tangent_basis, M.normal_basis)))
    cases.append(("a single sample (edge case: B = 1)",
                  (s.y[:1], M.mu, delta[:1], M.tangent_basis, M.normal_basis)))
    d0 = delta[:10].copy()
    d0[::2] = 0.0                                   # samples with no signal contribute nothing
    cases.append(("half of the back-propagated signals are zero (edge case)",
                  (s.y[:10], M.mu, d0, M.tangent_basis, M.normal_basis)))
    return cases


def _exercise_4_1_mistakes(x, mu, delta, T, N):
    x = np.asarray(x, dtype=float)
    x_c = x - mu
    g = split_gradient(x_c, delta, T, N)
    expected = g.rms_ratio
    no_delta = split_gradient(x_c, np.ones((x.shape[0], 1)), T, N).rms_ratio
    with np.errstate(divide="ignore", invalid="ignore"):
        per_sample = float(np.mean(g.per_sample_ratio))          # NaN where a signal is zero
    return [
        (gradient_ratio(x, delta, T, N),
         "did you centre x before projecting? Subtract the centroid first (x_c = x - mu): "
         "mu is neither tangent nor normal signal, and it swamps both."),
        # On one sample the batch mean leaves x - mean = 0, and 0/0 is nan or inf depending on how
        # it is computed: the mistake is named from the other cases, and its message says why.
        (gradient_ratio(x - x.mean(axis=0), delta, T, N) if x.shape[0] > 1 else None,
         "you centred at the batch mean; the statement centres at the centroid mu "
         "(x_c = x - mu). The batch mean also removes the mean normal offset, and on a single "
         "sample it leaves nothing at all: x - mean = 0, so your ratio there is 0/0."),
        (1.0 / expected if expected else None,
         "you returned tangent/normal instead of normal/tangent."),
        (g.mean_ratio,
         "you used the mean gradient, which cancels on symmetric samples: use the RMS "
         "(Frobenius) form sqrt(sum_i ||G_i P_N||^2 / sum_i ||G_i P_T||^2)."),
        (float(np.sqrt(np.mean(g.normal ** 2))),
         "you forgot to divide by the tangent side: the ratio is the normal gradient energy "
         "over the tangent one, sqrt(sum_i ||G_i P_N||^2 / sum_i ||G_i P_T||^2)."),
        (float(np.sqrt(np.sum(g.normal ** 2))),
         "you forgot to divide by the tangent side: the ratio is the normal gradient energy "
         "over the tangent one, sqrt(sum_i ||G_i P_N||^2 / sum_i ||G_i P_T||^2)."),
        (expected ** 2,
         "you returned the energy ratio (a ratio of squared norms): take its square root."),
        (per_sample,
         "you averaged the per-sample ratios ||n_i|| / ||v_i||: the exercise asks for the "
         "RMS form, which weights each sample by its gradient energy."),
        (no_delta,
         "you dropped the back-propagated signal: each sample's gradient delta_i x_i^T is "
         "weighted by ||delta_i||, so sum ||delta_i||^2 ||n_i||^2, not sum ||n_i||^2."),
    ]


_EX4_1_CONSTANT_CASES = (
    ("k = 1, d = 2, R = 1 (the unit cylinder)", (1, 2, 1.0)),
    ("k = 2, d = 2, R = 1 (the unit sphere S²)", (2, 2, 1.0)),
    ("k = 1, d = 3, R = 2", (1, 3, 2.0)),
    ("k = 2, d = 3, R = 0.5 (S² × R)", (2, 3, 0.5)),
    ("k = 3, d = 5, R = 1.5", (3, 5, 1.5)),
)


def _exercise_4_1_constant_mistakes(k, d, R):
    c = reference_rms_constant(k, d, R)
    return [
        (2 * c, "you left out the 1/2 of n = (1/2) II(u,u) t²: c = (1/2) √(E‖II(u,u)‖²)."),
        (c ** 2, "that is c², the constant of the energy ratio R_E²: take its square root."),
        (0.5 * (k / d) / R,
         "E[q²] is not (E[q])² = (k/d)²: with q = u₁² + ... + u_k², E[q²] = k (k+2) / (d (d+2))."),
        (0.5 * math.sqrt(3 * k / (d * (d + 2))) / R,
         "you kept the fourth moments E[u_i⁴] = 3/(d(d+2)) and dropped the cross terms "
         "E[u_i² u_j²] = 1/(d(d+2)), i ≠ j."),
        (c * R, "‖II(u,u)‖ = q / R on a sphere of radius R: c scales like 1/R."),
        (c / R, "‖II(u,u)‖ = q / R, so c scales like 1/R, not 1/R²."),
        (0.5 * math.sqrt(3 / 8), "your answer does not depend on (k, d, R): (1/2) √(3/8) is the "
                                 "unit cylinder's value alone."),
    ]


def check_exercise_4_1(gradient_ratio_rms=None, rms_constant=None) -> None:
    """Check the reader's derivation ``rms_constant(k, d, R)`` and ``gradient_ratio_rms(...)``.

    Parameters
    ----------
    gradient_ratio_rms : callable, optional
        ``gradient_ratio_rms(x (B, D), mu (D,), delta (B, m), tangent_basis (D, d),
        normal_basis (D, D-d)) -> float``: the RMS (energy) ratio
        ``sqrt(sum_i ||G_i P_N||_F^2 / sum_i ||G_i P_T||_F^2)`` with ``G_i = delta_i (x_i - mu)^T``.
    rms_constant : callable, optional
        ``rms_constant(k, d, R) -> float``: the derived ``c = 1/2 sqrt(E ||II(u,u)||^2)`` on
        ``S^k_R x R^(d-k)``.

    At least one of the two.

    Raises
    ------
    AssertionError
        With the likely mistake (not centring, the inverted ratio, the mean gradient, no
        division by the tangent side, a squared ratio, a per-sample average, ignoring
        ``delta``; for the constant: a missing 1/2 or square root, ``(E q)^2`` for ``E q^2``,
        missing cross terms, the wrong power of ``R``, the cylinder's value for all), or a bad type.

    Example
    -------
    >>> check_exercise_4_1(reference_gradient_ratio, reference_rms_constant)
    Exercise 4.1 passed: c = (1/2) √(k(k+2) / (d(d+2))) / R on 5 manifolds, (1/2) √(3/8) = 0.3062 on the unit cylinder; the RMS ratio matches on 4 cases (0.1 on the parabola at t = 0.1: O(t)).
    """
    if gradient_ratio_rms is None and rms_constant is None:
        raise AssertionError("Exercise 4.1: pass your function(s): check_exercise_4_1(gradient_ratio_rms, "
                             "rms_constant), or one of them by name.")
    parts = []
    if rms_constant is not None:
        _require_function(rms_constant, "rms_constant", "rms_constant(k, d, R) -> float", "4.1")
        got = _values(rms_constant, "rms_constant", _EX4_1_CONSTANT_CASES, "(k={}, d={}, R={})", "4.1")
        cases = _grade_cases("4.1", got, _EX4_1_CONSTANT_CASES, reference_rms_constant,
                             _exercise_4_1_constant_mistakes, rtol=1e-6)
        parts.append(f"c = (1/2) √(k(k+2) / (d(d+2))) / R on {len(cases)} manifolds, (1/2) √(3/8) = "
                     f"{reference_rms_constant(1, 2, 1.0):.4f} on the unit cylinder")
    if gradient_ratio_rms is not None:
        _require_function(gradient_ratio_rms, "gradient_ratio_rms",
                          "gradient_ratio_rms(x, mu, delta, tangent_basis, normal_basis) -> float", "4.1")
        raw = _exercise_4_1_cases()
        got = []
        for label, args in raw:
            copies = tuple(np.array(a, dtype=float, copy=True) for a in args)
            got.append(_as_float(_call(gradient_ratio_rms, "gradient_ratio_rms", copies, label, "4.1"),
                                 f"Exercise 4.1: gradient_ratio_rms on the case {label}", finite=False))
        cases = _grade_cases("4.1", got, raw, reference_gradient_ratio, _exercise_4_1_mistakes)
        parts.append(f"the RMS ratio matches on {len(cases)} cases (0.1 on the parabola at t = 0.1: O(t))")
    print("Exercise 4.1 passed: " + "; ".join(parts) + ".")


# ============================================================================
# Exercise 4.2 (chapter 4): frequent vs rare token, which is more suppressed?
# ============================================================================

def reference_more_suppressed(t1, t2) -> int:
    """Reference of Exercise 4.2: the type with the smaller radius (1 or 2).

    The normal-to-tangent gradient ratio is ``c t``, so the normal signal is
    suppressed *more* (smaller ratio) for the more concentrated type.

    Example
    -------
    >>> reference_more_suppressed(0.01, 0.3), reference_more_suppressed(0.3, 0.01)
    (1, 2)
    """
    return 1 if t1 < t2 else 2


def reference_relative_suppression(t1, t2) -> float:
    """Predicted ``ratio(type 1) / ratio(type 2)`` on the same manifold: ``t1 / t2``.

    Example
    -------
    >>> reference_relative_suppression(0.02, 0.2)
    0.1
    """
    return t1 / t2


@functools.lru_cache(maxsize=None)
def _simulated_relative(t1, t2):
    """Measured RMS-ratio quotient of two token types on a cylinder (cached)."""
    df = two_token_types(GeneralizedCylinder(1, 2, R=1.0, D=5, seed=0), t1, t2, n=4000, rng=0)
    return float(df["relative_to_type2"].iloc[0])


_EX4_2_CASES = ((0.01, 0.3), (0.3, 0.01), (0.05, 0.1), (0.2, 0.02))
_EX4_2_QUOTIENT_CASES = ((0.02, 0.2), (0.05, 0.01), (0.03, 0.09), (0.15, 0.05))


def check_exercise_4_2(more_suppressed, relative_suppression=None) -> None:
    """Check the reader's answer to "which type's normal signal is more suppressed?".

    Parameters
    ----------
    more_suppressed : callable
        ``more_suppressed(t1, t2) -> int``: 1 or 2, the type whose
        normal-to-tangent gradient ratio is smaller.
    relative_suppression : callable, optional
        ``relative_suppression(t1, t2) -> float``: the predicted quotient
        ``ratio(type 1) / ratio(type 2)``; compared with a simulation on a
        cylinder within 5%, at four pairs of radii.

    Raises
    ------
    AssertionError
        With a diagnostic (picked the rare token, an answer that does not depend on the
        radii, an inverted, squared or square-rooted quotient), or a bad type.

    Example
    -------
    >>> check_exercise_4_2(reference_more_suppressed)
    Exercise 4.2 passed: the frequent (small-t) type is the more suppressed one.
    """
    _require_function(more_suppressed, "more_suppressed", "more_suppressed(t1, t2) -> int", "4.2")
    answers = {}
    for t1, t2 in _EX4_2_CASES:
        ans = _call(more_suppressed, "more_suppressed", (t1, t2), f"t1={t1}, t2={t2}", "4.2")
        if hasattr(ans, "item") and getattr(ans, "size", 1) == 1:
            ans = ans.item()
        if isinstance(ans, (bool, np.bool_)) or not isinstance(ans, numbers.Integral) or ans not in (1, 2):
            raise AssertionError(f"Exercise 4.2: more_suppressed should return the type number 1 or 2 "
                                 f"(an int), got {_show(ans)} for t1={t1}, t2={t2}.")
        answers[(t1, t2)] = int(ans)
    for (t1, t2), ans in answers.items():
        if ans != reference_more_suppressed(t1, t2):
            if len(set(answers.values())) == 1:
                raise AssertionError(
                    f"Exercise 4.2: you answer type {ans} whatever the radii (t1={t1}, t2={t2} here): "
                    f"the answer depends on which token is more concentrated, not on its label.")
            raise AssertionError(
                f"Exercise 4.2: for t1={t1}, t2={t2} you picked type {ans}, the rare (large-t) token: "
                f"the ratio normal/tangent is O(t), so smaller t means MORE suppression.")
    msg = "Exercise 4.2 passed: the frequent (small-t) type is the more suppressed one."
    if relative_suppression is not None:
        _require_function(relative_suppression, "relative_suppression",
                          "relative_suppression(t1, t2) -> float", "4.2")
        got = _values(relative_suppression, "relative_suppression",
                      [(f"t1={a}, t2={b}", (a, b)) for a, b in _EX4_2_QUOTIENT_CASES],
                      "(t1={}, t2={})", "4.2")
        sims = [_simulated_relative(a, b) for a, b in _EX4_2_QUOTIENT_CASES]
        ok = [g > 0 and abs(g / sim - 1.0) <= 0.05 for g, sim in zip(got, sims)]
        if not all(ok):
            k = ok.index(False)
            (t1, t2), sim = _EX4_2_QUOTIENT_CASES[k], sims[k]
            ctx = f"t1={t1}, t2={t2}: the simulation gives {sim:.4g}, you predicted {got[k]:.4g}"
            for fn, message in (
                    (lambda a, b: b / a, "you inverted the quotient: ratio(type 1) / ratio(type 2) = "
                                         "(c t1) / (c t2) = t1 / t2."),
                    (lambda a, b: (a / b) ** 2, "you squared: the ratio is first order in t (||n|| / ||v|| "
                                                "~ t^2 / t), so the quotient is t1 / t2."),
                    (lambda a, b: math.sqrt(a / b), "you took a square root: the ratio itself (not its "
                                                    "square) is O(t), so the quotient is t1 / t2.")):
                if all(abs(g / fn(a, b) - 1.0) <= 0.05 for g, (a, b) in zip(got, _EX4_2_QUOTIENT_CASES)):
                    raise AssertionError(f"Exercise 4.2: {message} ({ctx})")
            if len({round(g, 12) for g in got}) == 1:
                raise AssertionError(f"Exercise 4.2: your quotient is {got[0]:.4g} whatever the radii; "
                                     f"it must depend on t1 and t2 ({ctx}).")
            raise AssertionError(f"Exercise 4.2: quotient off by more than 5% ({ctx}); the prediction "
                                 f"is t1 / t2.")
        msg += (f" Predicted quotients match the simulation within 5% on {len(got)} pairs of radii: "
                f"at t1 = 0.02, t2 = 0.2 the frequent type keeps {100 * sims[0]:.0f}% of the rare "
                f"type's normal-to-tangent ratio.")
    print(msg)


# ============================================================================
# Exercise 4.3 (chapter 4): data balancing on a Zipf vocabulary, in theory
# ============================================================================

#: the setting of Exercise 4.3: the unit cylinder (d = 2) and the Gaussian family (``t_i`` is a
#: type's sigma, so ``eta_i = 2 t_i^2`` and ``kappa_g = 2``); the balancing moves a vocabulary
#: of ``V`` types from Zipf exponent ``s_natural`` to ``s_balanced``; ``alpha`` is the radius
#: exponent of the prediction
BALANCING_SETTING = {"V": 1000, "s_natural": 1.0, "s_balanced": 0.6, "t_star": 0.05, "d": 2,
                     "alpha": 0.5}

_C_CYLINDER = 0.5 * math.sqrt(3 / 8)


def reference_pooled_ratio(frequencies, radii, pooling) -> float:
    """Reference of Exercise 4.3: the pooled ratio on the unit cylinder, Gaussian family.

    :func:`tanbias.theory.balancing.pooled_ratio` with ``c = 1/2 sqrt(3/8)``, ``d = 2``.

    Example
    -------
    >>> round(reference_pooled_ratio([0.5, 0.5], [0.1, 0.1], "type"), 6)    # 2 c t
    0.061237
    """
    return pooled_ratio(frequencies, radii, pooling, c=_C_CYLINDER, d=BALANCING_SETTING["d"])


def reference_balancing_sign(alpha, pooling) -> int:
    """Reference of Exercise 4.3: the sign of ``log R(balanced) - log R(natural)``
    (:data:`BALANCING_SETTING`); +1 means balancing weakens the tangent alignment.

    Example
    -------
    >>> [reference_balancing_sign(0.5, p) for p in POOLINGS]
    [-1, 1, -1]
    """
    st = BALANCING_SETTING
    e = balancing_effect(st["V"], st["s_natural"], st["s_balanced"], alpha, pooling, st["t_star"])
    return 0 if abs(e) < 1e-12 else int(np.sign(e))


_EX4_3_VOCABS = ((50, 1.0, 0.5), (300, 1.2, 0.1), (1000, 0.6, -0.3), (20, 0.0, 0.4))
# 0.16, 0.18 and 0.2 lie between the model's threshold alpha* (about 0.144) and 1/4, the natural wrong
# guess: a threshold anywhere from about 0.15 to 1/4 fails at one of them
_EX4_3_SIGN_ALPHAS = (-0.5, -0.25, -0.1, 0.05, 0.1, 0.16, 0.18, 0.2, 0.3, 0.5)

_EX4_3_SIGN_MESSAGES = {
    "negative": ("with α < 0 the frequent types are the diffuse ones: balancing makes them rarer, "
                 "hence tighter, and the pooled ratios they lead fall."),
    "type": ("the mean over types counts each type once, and most types are rare: balancing makes "
             "them more frequent, which moves their radii against the frequent types' (tighter when "
             "α > 0, more diffuse when α < 0), so this mean moves against the mean over occurrences."),
    "strong": ("with a strong tie (α ≥ 1/4) a type's normal energy f η² ∝ f^(1−4α) grows as the type "
               "gets rarer: the rare types hold it, balancing makes them tighter, and the energy "
               "summed over occurrences falls."),
    "weak": ("with a weak tie (0 < α < α* ≈ {alpha_star:.2f} here) the frequent types still hold most "
             "of the normal energy; balancing spreads them, and the summed energy rises."),
    "quarter": ("the threshold is not 1/4. Below 1/4 both Σ f^(1−4α) (normal energy) and Σ f^(1−2α) "
                "(tangent energy) are Schur-concave and rise under balancing. Their ratio falls once the "
                "denominator wins, from α* ≈ {alpha_star:.2f} here."),
    "occurrence": ("most occurrences belong to frequent types; with α > 0 balancing makes them rarer, "
                   "hence more diffuse, so the mean over occurrences rises."),
}


def _energy_threshold() -> float:
    """The model's energy threshold alpha* for :data:`BALANCING_SETTING` (computed once)."""
    global _EX4_3_ALPHA_STAR
    if _EX4_3_ALPHA_STAR is None:
        st = BALANCING_SETTING
        _EX4_3_ALPHA_STAR = energy_sign_threshold(st["V"], st["s_natural"], st["s_balanced"])
    return _EX4_3_ALPHA_STAR


_EX4_3_ALPHA_STAR = None


def _check_prediction_signs(prediction, setting_text):
    pred = _check_keys(prediction, "Exercise 4.3: prediction", POOLINGS)
    signs = {p: _as_sign(v, f"Exercise 4.3: prediction[{p!r}]") for p, v in pred.items()}
    truth = {p: reference_balancing_sign(BALANCING_SETTING["alpha"], p) for p in POOLINGS}
    for p in POOLINGS:
        if signs[p] != truth[p]:
            reason = {"energy": _EX4_3_SIGN_MESSAGES["strong"], "type": _EX4_3_SIGN_MESSAGES["type"],
                      "occurrence": _EX4_3_SIGN_MESSAGES["occurrence"]}[p]
            raise AssertionError(f"Exercise 4.3: you predicted {signs[p]:+d} for the {p!r} pooling "
                                 f"{setting_text}; the model gives {truth[p]:+d}: {reason}")
    return truth


def check_exercise_4_3(pooled_ratio=None, prediction=_OMITTED, balancing_sign=None) -> None:
    """Check Exercise 4.3: the pooled ratio, the prediction, and the sign the reader found.

    The setting is :data:`BALANCING_SETTING`: the unit cylinder and the Gaussian family, a
    type of frequency ``f_i`` at radius ``t_i = t_* (V f_i)^(-alpha)``.

    Parameters
    ----------
    pooled_ratio : callable, optional
        ``pooled_ratio(frequencies (V,), radii (V,), pooling) -> float`` with ``pooling`` in
        ``"energy"``, ``"occurrence"``, ``"type"`` (:mod:`tanbias.theory.balancing`).
    prediction : dict, optional
        ``{"energy": s, "occurrence": s, "type": s}``, ``s`` in -1, 0, +1: the sign of the
        change of each pooling when balancing lowers ``s`` from 1.0 to 0.6, with
        ``alpha = 0.5``, made before looking at the figure. Left out, it is not checked;
        ``None`` (the stub's value) is refused before anything is checked or shown.
    balancing_sign : callable, optional
        ``balancing_sign(alpha, pooling) -> int``: that sign for any ``alpha``.

    At least one of the three.

    Raises
    ------
    AssertionError
        With the likely mistake (``kappa_g`` or ``d`` left out, squared ratios averaged, types
        weighted equally in the energy, the poolings swapped, ``c`` left out; a sign rule that
        ignores the pooling or the strength of the tie), or a bad type.

    Example
    -------
    >>> check_exercise_4_3(reference_pooled_ratio, {"energy": -1, "occurrence": 1, "type": -1},
    ...                    reference_balancing_sign)   # doctest: +ELLIPSIS
    Exercise 4.3 passed: ...
    """
    if pooled_ratio is None and prediction is _OMITTED and balancing_sign is None:
        raise AssertionError("Exercise 4.3: pass at least one of pooled_ratio, prediction and "
                             "balancing_sign, by name: check_exercise_4_3(prediction=prediction).")
    _refuse_none_prediction(prediction, "prediction", '{"energy": ±1, "occurrence": ±1, "type": ±1}', "4.3")
    parts = []
    st = BALANCING_SETTING
    if prediction is not _OMITTED:
        truth = _check_prediction_signs(prediction, f"(alpha = {st['alpha']}, s from {st['s_natural']} "
                                                    f"to {st['s_balanced']})")
        parts.append("your prediction matches the model (" + ", ".join(
            f"{p} {truth[p]:+d}" for p in POOLINGS) + ")")
    if pooled_ratio is not None:
        _require_function(pooled_ratio, "pooled_ratio", "pooled_ratio(frequencies, radii, pooling) -> float", "4.3")
        got, cases, mistakes = [], [], {}
        for V, s, alpha in _EX4_3_VOCABS:
            f = zipf_frequencies(V, s)
            t = tied_radii(f, alpha, st["t_star"])
            eta, R = 2 * t ** 2, 2 * _C_CYLINDER * t
            for p in POOLINGS:
                label = f"V = {V}, s = {s}, α = {alpha}, pooling {p!r}"
                got.append(_as_float(_call(pooled_ratio, "pooled_ratio", (f.copy(), t.copy(), p), label, "4.3"),
                                     f"Exercise 4.3: pooled_ratio(..., {p!r}) on {label}", finite=False))
                cases.append((label, reference_pooled_ratio(f, t, p)))
                ref = cases[-1][1]
                energy_types = _C_CYLINDER * math.sqrt(2 * np.sum(eta ** 2) / np.sum(eta))
                candidates = [
                    (ref / math.sqrt(2), "off by √2: R_i = c √(κ_g η_i) with η_i = 2 t_i² (d = 2) and "
                                         "κ_g = 2 (a Gaussian, chapter 4): R_i = 2 c t_i."),
                    (ref / 2, "off by 2: R_i = c √(κ_g η_i) = c √(2 · 2 t_i²) = 2 c t_i; you left out "
                              "both κ_g and the d of η_i = d t_i²."),
                    (ref / _C_CYLINDER, "multiply by the cylinder's constant c = (1/2) √(3/8)."),
                    (_C_CYLINDER * math.sqrt(2 * np.sum(f * eta)) if p == "energy" else None,
                     "you averaged squared ratios: the energy pooling divides the summed normal energy "
                     "by the summed tangent energy, √(κ_g Σ f_i η_i² / Σ f_i η_i) c."),
                    (energy_types if p == "energy" else None,
                     "the energy sums over occurrences: weight each type by its frequency f_i."),
                    (float(np.sum(f * R)) if p == "energy" else None,
                     "the energy pooling sums energies, not ratios: √(Σ f_i E‖n‖² / Σ f_i E‖v‖²)."),
                    (float(np.mean(R)) if p == "occurrence" else float(np.sum(f * R)) if p == "type"
                     else None, "you swapped the two means: over occurrences weights type i by f_i, "
                                "over types weights every type by 1/V."),
                ]
                for value, message in candidates:
                    mistakes.setdefault(message, []).append(value)
        _grade("4.3", got, cases, list(mistakes.items()), rtol=1e-6)
        parts.append(f"pooled_ratio matches on {len(_EX4_3_VOCABS)} vocabularies × 3 poolings")
    if balancing_sign is not None:
        _require_function(balancing_sign, "balancing_sign", "balancing_sign(alpha, pooling) -> int", "4.3")
        wrong = []
        for alpha in _EX4_3_SIGN_ALPHAS:
            for p in POOLINGS:
                ans = _as_sign(_call(balancing_sign, "balancing_sign", (alpha, p), f"alpha={alpha}, {p!r}", "4.3"),
                               f"Exercise 4.3: balancing_sign({alpha}, {p!r})")
                truth = reference_balancing_sign(alpha, p)
                if ans != truth:
                    wrong.append((alpha, p, ans, truth))
        if wrong:
            def category(alpha, pooling):
                if pooling == "type":
                    return "type"
                if alpha < 0:
                    return "negative"
                if pooling == "energy":
                    return ("strong" if alpha >= 0.25 else "quarter" if alpha > _energy_threshold()
                            else "weak")
                return "occurrence"

            answers = {ans for *_, ans, _ in wrong}
            if len(answers) == 1 and len(wrong) > len(_EX4_3_SIGN_ALPHAS):
                a, p, ans, truth = wrong[0]
                why = "the sign depends on α and on the pooling; your answer hardly does."
            else:
                order = ("type", "strong", "quarter", "weak", "negative", "occurrence")
                a, p, ans, truth = min(wrong, key=lambda w: order.index(category(w[0], w[1])))
                why = _EX4_3_SIGN_MESSAGES[category(a, p)].format(alpha_star=_energy_threshold())
            raise AssertionError(f"Exercise 4.3: balancing_sign({a}, {p!r}) is {ans:+d}, the model gives "
                                 f"{truth:+d} ({len(wrong)} of {len(_EX4_3_SIGN_ALPHAS) * 3} answers "
                                 f"differ): {why}")
        parts.append(f"balancing_sign is right at {len(_EX4_3_SIGN_ALPHAS)} radius exponents × 3 poolings")
    print("Exercise 4.3 passed: " + "; ".join(parts) + ".")


# ============================================================================
# Exercise 5.1 (chapter 5): the nine score terms of a head that ignores the centroid
# ============================================================================

def reference_score_terms(query_sees_centroid) -> dict:
    """Reference of Exercise 5.1: for each of the nine terms ``a_b = a_i^T M b_j``, its order
    in ``t`` (None when it vanishes) and whether it reaches a softmax over keys.

    With ``W_Q mu = 0`` (``query_sees_centroid=False``) every term whose query part is ``mu``
    vanishes; the others keep their orders. A term reaches the softmax when it depends on
    the key ``j``.

    Example
    -------
    >>> reference_score_terms(True)["mu_n"], reference_score_terms(False)["mu_n"]
    ((2, True), (None, False))
    """
    out = {}
    for name in att.TERMS:
        gone = not query_sees_centroid and name.startswith("mu_")
        out[name] = (None, False) if gone else (att.ORDERS[name], name in att.KEY_TERMS)
    return out


def reference_removal_orders(query_sees_centroid) -> tuple:
    """Reference of Exercise 5.1: the orders in ``t`` of the attention change when the tangent
    part, or the normal part, of every token is removed: ``(1, 2)`` for a head whose query
    reads the centroid (``mu^T M v_j``, ``mu^T M n_j``), ``(2, 3)`` when ``W_Q mu = 0``
    (``v_i^T M v_j``, then ``v_i^T M n_j`` and ``n_i^T M v_j``). Either way the normal part
    is suppressed by one factor of ``t``.

    Example
    -------
    >>> reference_removal_orders(True), reference_removal_orders(False)
    ((1, 2), (2, 3))
    """
    return (1, 2) if query_sees_centroid else (2, 3)


def _check_term_answer(ans, setting):
    ans = _check_keys(ans, f"Exercise 5.1: score_terms({setting})", att.TERMS)
    out = {}
    for name, value in ans.items():
        if not isinstance(value, (tuple, list)) or len(value) != 2:
            raise AssertionError(f"Exercise 5.1: score_terms({setting})[{name!r}] should be a pair "
                                 f"(order, reaches_softmax), got {_show(value)}.")
        order, reaches = value
        if hasattr(order, "item"):
            order = order.item()
        if order is not None and (isinstance(order, (bool, np.bool_)) or not isinstance(order, numbers.Real)
                                  or not float(order).is_integer() or order < 0):
            raise AssertionError(f"Exercise 5.1: the order of {name!r} should be a whole number >= 0, or None "
                                 f"for a term that vanishes; got {_show(order)}.")
        out[name] = (None if order is None else int(order),
                     _as_bool(reaches, f"Exercise 5.1: whether {name!r} reaches the softmax"))
    return out


def check_exercise_5_1(score_terms, removal_orders=None) -> None:
    """Check the reader's ``score_terms(query_sees_centroid) -> dict`` and ``removal_orders``.

    Parameters
    ----------
    score_terms : callable
        ``score_terms(query_sees_centroid: bool) -> {term: (order, reaches_softmax)}`` for the
        nine names of :data:`tanbias.theory.attention.TERMS` (``"v_n"`` is ``v_i^T M n_j``).
        ``order`` is the power of ``t`` (``None`` for a term that vanishes), ``reaches_softmax``
        whether it can move a softmax over keys. ``query_sees_centroid=False`` is a head with
        ``W_Q mu = 0``.
    removal_orders : callable, optional
        ``removal_orders(query_sees_centroid) -> (tangent_order, normal_order)``: the orders in
        ``t`` of the change of the attention weights when the tangent (normal) part of every
        token is removed.

    Raises
    ------
    AssertionError
        With the likely mistake (an order miscounted, a query-only term said to reach the
        softmax, a key-dependent one said not to, a term of ``W_Q mu = 0`` kept, an answer that
        ignores the setting, the removal orders of the other head), or a bad type.

    Example
    -------
    >>> check_exercise_5_1(reference_score_terms, reference_removal_orders)  # doctest: +ELLIPSIS
    Exercise 5.1 passed: ...
    """
    _require_function(score_terms, "score_terms", "score_terms(query_sees_centroid) -> dict", "5.1")
    answers = {}
    for setting in (True, False):
        answers[setting] = _check_term_answer(
            _call(score_terms, "score_terms", (setting,), f"query_sees_centroid={setting}", "5.1"),
            f"query_sees_centroid={setting}")
    if answers[True] == answers[False]:
        raise AssertionError("Exercise 5.1: your answer does not depend on query_sees_centroid; with "
                             "W_Q μ = 0 the terms whose query part is μ vanish.")
    for setting in (True, False):
        ref = reference_score_terms(setting)
        for name in att.TERMS:
            (order, reaches), (r_order, r_reaches) = answers[setting][name], ref[name]
            q, k = (("μ" if part == "mu" else f"{part}_{idx}") for part, idx in zip(name.split("_"), "ij"))
            where = f"{name} = {q}ᵀ M {k}, query_sees_centroid={setting}"
            if r_order is None and order is not None:
                raise AssertionError(f"Exercise 5.1: with W_Q μ = 0 the query part of μ is W_Q μ = 0, so "
                                     f"every term whose query part is μ vanishes: give it None ({where}).")
            if r_order is not None and order != r_order:
                raise AssertionError(f"Exercise 5.1: the order of {name} is {r_order}, not {order}: count one "
                                     f"power of t for each v and two for each n; μ counts none ({where}).")
            if reaches and not r_reaches:
                raise AssertionError(f"Exercise 5.1: {name} depends on the query alone (or vanishes): it adds "
                                     f"one constant to a whole row of scores, and the softmax cancels it "
                                     f"({where}).")
            if r_reaches and not reaches:
                raise AssertionError(f"Exercise 5.1: {name} depends on the key j through its "
                                     f"{name.split('_')[1]}_j: it moves the attention weights ({where}).")
    parts = ["the nine terms are right in both heads"]
    if removal_orders is not None:
        _require_function(removal_orders, "removal_orders", "removal_orders(query_sees_centroid) -> tuple", "5.1")
        for setting in (True, False):
            ans = _call(removal_orders, "removal_orders", (setting,), f"query_sees_centroid={setting}", "5.1")
            if not isinstance(ans, (tuple, list)) or len(ans) != 2:
                raise AssertionError(f"Exercise 5.1: removal_orders({setting}) should be a pair "
                                     f"(tangent_order, normal_order), got {_show(ans)}.")
            got = tuple(_as_float(a, f"Exercise 5.1: removal_orders({setting})[{i}]") for i, a in enumerate(ans))
            got = tuple(int(g) if g.is_integer() else g for g in got)
            ref = reference_removal_orders(setting)
            if got != ref:
                other = reference_removal_orders(not setting)
                why = ("those are the orders of the other head. " if got == other else "") + (
                    "The leading key-dependent terms are μᵀMv_j (order 1) and μᵀMn_j (order 2)"
                    if setting else "With W_Q μ = 0 the leading key-dependent terms are vᵢᵀMv_j (order 2) "
                                    "and vᵢᵀMn_j, nᵢᵀMv_j (order 3)")
                raise AssertionError(f"Exercise 5.1: removal_orders({setting}) is {ref}, not {got}: {why}.")
        parts.append("removing the tangent / normal part changes the weights at orders (1, 2), and (2, 3) "
                     "when W_Q μ = 0: the normal part is one factor of t behind either way")
    print("Exercise 5.1 passed: " + "; ".join(parts) + ".")


# ============================================================================
# Exercise 6.1 (chapter 6): the feedback loop compounds rather than repeats
# ============================================================================

_EX6_STEP = 500
#: Exercise 6.1's "compounds": the closed loop's gain at least this many times the cut loop's
#: (the lazy control, init_scale=1, stays below it)
EX6_COMPOUND_LEAD = 2.0


def loop_compounds(gains) -> bool:
    """Exercise 6.1's criterion: has the closed loop's gain reached ``EX6_COMPOUND_LEAD`` times
    the cut loop's? ``gains`` is ``{"closed": gain, "cut": gain}``."""
    return gains["closed"] >= EX6_COMPOUND_LEAD * gains["cut"]
#: initial scales of Exercise 6.1's runs: the chapter's two, and one the page does not show
_EX6_SCALES = {"default run (init_scale=0.1)": 0.1, "lazy control (init_scale=1)": 1.0,
               "unseen run (init_scale=0.3)": 0.3}


def reference_loop_gains(df, step) -> dict:
    """Reference of Exercise 6.1: alignment gain of each run up to ``step``.

    ``gain = alignment(step) / alignment(0)`` for the closed and the cut run of
    :func:`tanbias.theory.residual.feedback_loop`.

    Parameters
    ----------
    df : pandas.DataFrame
        Output of :func:`tanbias.theory.residual.feedback_loop`.
    step : int
        A logged step.

    Returns
    -------
    dict
        ``{"closed": float, "cut": float}``.
    """
    out = {}
    for loop in ("closed", "cut"):
        g = df[df["loop"] == loop].set_index("step")["alignment"]
        out[loop] = float(g.loc[step] / g.loc[0])
    return out


@functools.lru_cache(maxsize=None)
def _loop_runs():
    """The chapter's two runs and the unseen one, 600 steps each (cached)."""
    return {name: feedback_loop(steps=600, log_every=20, init_scale=scale)
            for name, scale in _EX6_SCALES.items()}


def _exercise_6_1_mistakes(df, step, ref):
    def per_loop(col, fn):
        out = {}
        for loop in ("closed", "cut"):
            g = df[df["loop"] == loop].set_index("step")[col]
            out[loop] = fn(g)
        return out

    last = int(df["step"].max())
    return [
        ({"closed": ref["cut"], "cut": ref["closed"]},
         "you swapped the runs: df['loop'] == 'closed' is ordinary SGD, 'cut' the "
         "linearised network whose gradients never see the weight updates."),
        ({k: 1.0 / v for k, v in ref.items()},
         "you divided the wrong way round: gain = alignment at `step` / alignment at step 0."),
        (per_loop("alignment", lambda g: float(g.loc[step] - g.loc[0])),
         "you returned a difference; the gain is a ratio, alignment(step) / alignment(0)."),
        (per_loop("share", lambda g: float(g.loc[step] / g.loc[0])),
         "you used the `share` column (activations); the gain asked for is of `alignment` "
         "(the first layer's weights)."),
        (per_loop("alignment", lambda g: float(g.loc[last] / g.loc[0])),
         f"you used the last logged step ({last}); use the row where df['step'] == step."),
    ]


def _fmt_gains(g):
    return "{" + ", ".join(f"{k}: {v:.4g}" for k, v in g.items()) + "}"


def check_exercise_6_1(loop_gains, compounds=_OMITTED, larger_lead=_OMITTED) -> None:
    """Check the reader's ``loop_gains(df, step) -> {"closed": gain, "cut": gain}`` and two
    predictions about a run the chapter does not show.

    The checker runs :func:`tanbias.theory.residual.feedback_loop` three times (600 steps):
    the chapter's feature-learning run (``init_scale=0.1``), its lazy control
    (``init_scale=1``) and a run between them (``init_scale=0.3``) that the page does not
    show, and compares the reader's gains at step 500 with the reference in all three.

    Parameters
    ----------
    loop_gains : callable
        ``loop_gains(df, step) -> dict`` with float values under ``"closed"`` and ``"cut"``.
    compounds : bool, optional
        Prediction: in the run at ``init_scale=0.3``, has the closed loop's alignment grown by
        at least ``EX6_COMPOUND_LEAD`` (2) times the cut loop's factor by step 500
        (:func:`loop_compounds`)? The lazy control does not.
    larger_lead : bool, optional
        Prediction: is the closed loop's lead there (gain closed / gain cut) larger than in the
        chapter's run at ``init_scale=0.1``?

    A prediction left out is not checked, and the pass message then keeps the unseen run's
    gains to itself; a prediction still ``None`` (the stub's value) is refused before anything
    is run or shown.

    Raises
    ------
    AssertionError
        With a diagnostic (swapped runs, inverted ratio, difference, wrong column, wrong step;
        a prediction the runs contradict), or a bad type (a prediction must be True or False).
    """
    _require_function(loop_gains, "loop_gains", "loop_gains(df, step) -> dict", "6.1")
    for name, value in (("compounds", compounds), ("larger_lead", larger_lead)):
        _refuse_none_prediction(value, name, "True or False", "6.1")
    preds = {name: None if value is _OMITTED else _as_bool(value, f"Exercise 6.1: {name}")
             for name, value in (("compounds", compounds), ("larger_lead", larger_lead))}
    runs = _loop_runs()
    gains = {}
    for name, df in runs.items():
        ref = reference_loop_gains(df, _EX6_STEP)
        ans = _call(loop_gains, "loop_gains", (df.copy(), _EX6_STEP), name, "6.1")
        ans = _check_keys(ans, f"Exercise 6.1: loop_gains on the {name}", ("closed", "cut"))
        if "update_alignment" in df and all(isinstance(v, (float, np.floating)) and math.isnan(v)
                                            for v in ans.values()):
            raise AssertionError("Exercise 6.1: your gains are nan. Did you use `update_alignment`? It is "
                                 "the alignment of W1 - W1(0), which is nan at step 0; the gain is of "
                                 "`alignment`.")
        got = {k: _as_float(v, f"Exercise 6.1: loop_gains(...)[{k!r}]") for k, v in ans.items()}
        gains[name] = ref
        if all(_same(got[k], ref[k]) for k in ref):
            continue
        for value, message in _exercise_6_1_mistakes(df, _EX6_STEP, ref):
            if all(_same(got[k], value[k]) for k in ref):
                raise AssertionError(f"Exercise 6.1: {message} ({name}, step {_EX6_STEP}: expected "
                                     f"{_fmt_gains(ref)}, got {_fmt_gains(got)})")
        raise AssertionError(f"Exercise 6.1: wrong gains ({name}, step {_EX6_STEP}): expected "
                             f"{_fmt_gains(ref)}, got {_fmt_gains(got)}.")
    rich, lazy, unseen = gains.values()
    lead = {name: g["closed"] / g["cut"] for name, g in gains.items()}
    rich_lead, unseen_lead = lead["default run (init_scale=0.1)"], lead["unseen run (init_scale=0.3)"]
    if preds["compounds"] is not None and preds["compounds"] != loop_compounds(unseen):
        raise AssertionError(
            f"Exercise 6.1: your prediction compounds={compounds!r} does not match the run at "
            f"init_scale=0.3: by step {_EX6_STEP} the closed loop's alignment grew x{unseen['closed']:.3g} "
            f"and the cut loop's x{unseen['cut']:.3g}, a lead of x{unseen_lead:.3g} (the threshold is "
            f"x{EX6_COMPOUND_LEAD:g}; the lazy control, init_scale=1, reaches "
            f"x{lead['lazy control (init_scale=1)']:.3g}). "
            f"The network still starts small enough to learn features, so each tangent-aligned update "
            f"still enlarges the next tangent gradient.")
    if preds["larger_lead"] is not None and preds["larger_lead"] != (unseen_lead > rich_lead):
        raise AssertionError(
            f"Exercise 6.1: your prediction larger_lead={larger_lead!r} does not match the runs: the closed "
            f"loop's lead is x{unseen_lead:.3g} at init_scale=0.3 against x{rich_lead:.3g} at 0.1. A larger "
            f"initial scale starts the network closer to its own linearisation (the lazy regime), where "
            f"the features barely move and the loop has less room to act.")
    if None in preds.values():
        print(f"Exercise 6.1 passed: your gains match the reference in the three runs. Your "
              f"predictions were not checked: pass compounds= and larger_lead= (True or False) to "
              f"check them and to see the gains.")
        return
    print(f"Exercise 6.1 passed. By step {_EX6_STEP}, tangent alignment grew x{rich['closed']:.3g} closed "
          f"vs x{rich['cut']:.3g} cut at init_scale=0.1, x{unseen['closed']:.3g} vs x{unseen['cut']:.3g} "
          f"at 0.3, x{lazy['closed']:.3g} vs x{lazy['cut']:.3g} at 1: the lead shrinks as the network "
          f"starts closer to its linearisation. Look at the later steps too: the closed loop does not "
          f"keep this lead.")


# ============================================================================
# Exercise 8.1 (chapter 8): data balancing, architecture aside, in the lab
# ============================================================================
#: what Exercise 8.1 measures: late-training log enrichment of the paper's frozen
#: proxy, mean over layers, all tokens
EX8_SELECTION = {"phase": "late", "proxy": "frozen", "layer": "mean", "bucket": "all"}


def _ex8_select(metrics, **over):
    sel = {**EX8_SELECTION, **over}
    m = metrics
    for k, v in sel.items():
        m = m[m[k] == v]
    return m


def reference_balancing_effect(metrics, kind: str, column: str = "log_enrichment", **over) -> float:
    """Mean over seeds of ``m[kind, balanced, s] - m[kind, natural, s]`` (the selection ``EX8_SELECTION``).

    ``metrics`` is :func:`tanbias.lab.analysis.tables.run_metrics` of the sweep. Negative:
    balancing weakens the tangent alignment of that architecture.
    """
    m = _ex8_select(metrics, **over)
    m = m[m["kind"] == kind]
    wide = m.pivot_table(index="seed", columns="regime", values=column, aggfunc="mean")
    return float((wide["balanced"] - wide["natural"]).mean())


def _exercise_8_1_mistakes(metrics, kind, ref):
    return [
        (-ref, "sign flipped: the effect of balancing is balanced minus natural, not natural "
               "minus balanced."),
        (reference_balancing_effect(metrics, kind, "log_enrichment", phase="early"),
         "you used the early probe steps; the exercise asks for the last one (phase == 'late')."),
        (reference_balancing_effect(metrics, kind, "log_enrichment", proxy="refit"),
         "you used the refit proxy; the exercise asks for the paper's frozen proxy (proxy == 'frozen')."),
        (reference_balancing_effect(metrics, kind, "log_enrichment", layer=metrics["layer"]
                                    .loc[metrics["layer"] != "mean"].max()),
         "you used the last layer only; use the mean over layers (layer == 'mean')."),
        (reference_balancing_effect(metrics, kind, "excess_iso"),
         "you used the excess ΔIsoScore*; the exercise asks for the log enrichment."),
        (float(np.exp(ref)), "you returned a ratio of enrichments; return the difference of "
                             "*log* enrichments (its exponential is that ratio)."),
    ]


def _sign_verdict(predicted, lo, hi, what):
    """Grade a predicted sign against an interval: ``None`` if it passes, else the reason.

    Only an interval that excludes 0 grades a sign (:func:`tanbias.stats.interval_word`); where
    it contains 0 the data do not decide, and every prediction passes.
    """
    word = interval_word(lo, hi)
    decided = {"positive": 1, "negative": -1}.get(word)
    if decided is None or predicted == decided:
        return None
    if predicted == 0:
        return f"you predicted no change for {what}; the interval [{lo:+.3f}, {hi:+.3f}] excludes 0."
    return (f"you predicted {predicted:+d} for {what}; the interval [{lo:+.3f}, {hi:+.3f}] lies "
            f"{'above' if decided > 0 else 'below'} 0.")


def _decided_text(lo, hi):
    return ("excludes 0" if interval_word(lo, hi) in ("positive", "negative")
            else "contains 0: the data do not decide, so no sign is graded")


def check_exercise_8_1(fn, prediction=None, metrics=None) -> None:
    """Check the reader's ``balancing_effect(metrics, kind) -> float`` and their prediction.

    Parameters
    ----------
    fn : callable
        ``fn(metrics, kind)`` with ``metrics`` the sweep's
        :func:`tanbias.lab.analysis.tables.run_metrics` table and ``kind`` in
        ``{"encoder", "decoder"}``; returns the mean over seeds of (balanced −
        natural) late log enrichment (frozen proxy, mean over layers, all tokens).
    prediction : dict, optional
        ``{"encoder": s, "decoder": s}`` with ``s = -1`` (balancing weakens the
        alignment), ``0`` (no effect) or ``+1`` (strengthens it), made from the
        mechanism before looking. A sign is graded only where the seeds' 95 % interval
        excludes 0; where it contains 0 the data do not decide and any prediction passes,
        with that note.
    metrics : pandas.DataFrame, optional
        Default: the committed sweep under ``data/runs``.

    Raises
    ------
    AssertionError
        With a diagnostic (flipped sign, wrong phase, proxy, layer or metric,
        ratio instead of log ratio; a prediction an interval that excludes 0 contradicts),
        or a bad type.
    """
    _require_function(fn, "balancing_effect", "balancing_effect(metrics, kind) -> float", "8.1")
    pred = None
    if prediction is not None:
        pred = {k: _as_sign(v, f"Exercise 8.1: prediction[{k!r}]")
                for k, v in _check_keys(prediction, "Exercise 8.1: prediction", KINDS).items()}
    if metrics is None:
        metrics = sweep.run_metrics(sweep.load_sweep())
    eff = sweep.effects(metrics, columns=("log_enrichment",))
    verdict = {}
    for kind in KINDS:
        ref = reference_balancing_effect(metrics, kind)
        got = _as_float(_call(fn, "balancing_effect", (metrics.copy(), kind), f"kind={kind!r}", "8.1"),
                        f"Exercise 8.1: balancing_effect(metrics, {kind!r})")
        if not _same(got, ref, rtol=1e-6):
            for value, message in _exercise_8_1_mistakes(metrics, kind, ref):
                if _same(got, value, rtol=1e-6):
                    raise AssertionError(f"Exercise 8.1: {message} ({kind}: expected {ref:+.4f}, "
                                         f"got {got:+.4f})")
            raise AssertionError(f"Exercise 8.1: wrong balancing effect for the {kind}: expected {ref:+.4f}, "
                                 f"got {got:+.4f}. Pair the runs by seed and average the differences.")
        row = _ex8_select(eff, contrast=f"balancing | {kind}").iloc[0]
        verdict[kind] = (ref, float(row["lo"]), float(row["hi"]), int(row["n"]))
    if pred is not None:
        for kind, (m, lo, hi, n) in verdict.items():
            reason = _sign_verdict(pred[kind], lo, hi, f"the {kind}")
            if reason:
                raise AssertionError(f"Exercise 8.1: {reason} Balancing changes its late log enrichment "
                                     f"by {m:+.3f} (95 % interval over {n} seeds).")
    parts = [f"{kind} {m:+.3f} [{lo:+.3f}, {hi:+.3f}] ({_decided_text(lo, hi)})"
             for kind, (m, lo, hi, n) in verdict.items()]
    print("Exercise 8.1 passed. Balancing changes the late log enrichment by " + "; ".join(parts) + ".")


# ============================================================================
# Exercise 10.1 (chapter 10): the dose-response, sign and shape
# ============================================================================
#: the shapes a reader may predict for the late enrichment at the token knob's flattest level
DOSE_SHAPES = ("absent", "attenuated", "unchanged", "stronger")


def reference_dose_change(table, kind: str, knob: str = "token", column: str = "log_enrichment_late") -> float:
    """Mean over seeds of ``m[flattest level] - m[skewed start]`` along a knob (chapter 10's run table)."""
    order = level_positions(knob)
    start, flat = min(order, key=order.get), max(order, key=order.get)
    g = knob_runs(table, knob, kind)
    wide = g.pivot_table(index="seed", columns="level", values=column)
    if start not in wide or flat not in wide:
        return float("nan")            # the runs of one of the two levels are not committed yet
    return float((wide[flat] - wide[start]).dropna().mean())


def _dose_prediction(prediction):
    pred = _check_keys(prediction, "Exercise 10.1: prediction", KINDS)
    out = {}
    for kind, v in pred.items():
        v = _check_keys(v, f"Exercise 10.1: prediction[{kind!r}]", ("sign", "shape"))
        shape = v["shape"]
        if not isinstance(shape, str) or shape not in DOSE_SHAPES:
            raise AssertionError(f"Exercise 10.1: prediction[{kind!r}]['shape'] must be one of {DOSE_SHAPES}, "
                                 f"got {_show(shape)}.")
        out[kind] = {"sign": _as_sign(v["sign"], f"Exercise 10.1: prediction[{kind!r}]['sign']"), "shape": shape}
    return out


def _dose_shape(flat_word, change_word):
    """The shape the runs show at the flattest level, from two intervals, or None where they do
    not decide it. A flattest level whose interval reaches 0 is not shown present; that is not
    absence, which would need an equivalence margin (``dose-posthoc.toml`` ``[presence]``)."""
    if flat_word != "positive":
        return None
    return {"negative": "attenuated", "positive": "stronger"}.get(change_word)


def check_exercise_10_1(fn, prediction=None, analysis=None) -> None:
    """Check the reader's ``dose_change(table, kind) -> float`` and their predicted sign and shape.

    One statistic grades both: the change of the late log enrichment from the skewed start to
    the flattest level of the token knob, paired by seed (the number the reader computes), with
    its 95 % t-interval over seeds. A sign is graded only where that interval excludes 0; the
    shape only where it is decided (the flattest level shown present, and the change's interval
    excluding 0). The chapter's verdict table reads the registered slope across all levels at a
    Holm-adjusted p, a stricter test; the pass message gives it too.

    Parameters
    ----------
    fn : callable
        ``fn(table, kind)`` with ``table`` chapter 10's :func:`tanbias.lab.analysis.dose.run_table`;
        returns the mean over seeds of (flattest − skewed) late log enrichment along the token knob.
    prediction : dict, optional
        ``{"encoder": {"sign": s, "shape": shape}, "decoder": {...}}``: ``s`` in -1, 0, +1 (the
        direction of the change as frequencies flatten) and ``shape`` in ``DOSE_SHAPES`` (the
        enrichment at the flattest level: ``"absent"`` = not above a random subspace,
        ``"attenuated"`` = lower than at the start but present, ``"unchanged"``,
        ``"stronger"``), made from the mechanism before looking. The runs never read
        ``"absent"``: a flattest level whose interval reaches 0 is "not shown present"
        (failing to show presence is not absence), and a predicted shape is then not scored.
    analysis : DoseAnalysis, optional
        Default: :func:`tanbias.lab.analysis.dose.analyse_dose` of the committed runs.

    Raises
    ------
    AssertionError
        With a diagnostic (flipped sign, wrong knob or phase, ratio instead of log ratio; a
        prediction that a decided interval contradicts), or a bad type.
    """
    _require_function(fn, "dose_change", "dose_change(table, kind) -> float", "10.1")
    pred = None if prediction is None else _dose_prediction(prediction)
    da = dose.analyse_dose() if analysis is None else analysis
    table = da.table
    results = {}
    missing = []
    for kind in KINDS:
        ref = reference_dose_change(table, kind)
        if not np.isfinite(ref):
            missing.append(kind)
            continue
        got = _as_float(_call(fn, "dose_change", (table.copy(), kind), f"kind={kind!r}", "10.1"),
                        f"Exercise 10.1: dose_change(table, {kind!r})")
        if not _same(got, ref, rtol=1e-6):
            mistakes = [(-ref, "sign flipped: the change is flattest minus start, not start minus flattest."),
                        (reference_dose_change(table, kind, column="log_enrichment_early"),
                         "you used the early phase; the exercise asks for the late enrichment."),
                        (reference_dose_change(table, kind, knob="language"),
                         "you used the language knob (uniform vs skewed); the exercise asks for the token "
                         "knob (b100 vs skewed)."),
                        (float(np.exp(ref)), "you returned a ratio; return the difference of *log* enrichments.")]
            for value, message in mistakes:
                if np.isfinite(value) and _same(got, value, rtol=1e-6):
                    raise AssertionError(f"Exercise 10.1: {message} ({kind}: expected {ref:+.4f}, got {got:+.4f})")
            raise AssertionError(f"Exercise 10.1: wrong dose change for the {kind}: expected {ref:+.4f}, got "
                                 f"{got:+.4f}. Pair the runs by seed (pivot on seed and level) and average the "
                                 "differences.")
        r = da.responses
        row = r[(r["metric"] == "log_enrichment_late") & (r["knob"] == "token") & (r["kind"] == kind)].iloc[0]
        lo, hi = row.get("change_lo", np.nan), row.get("change_hi", np.nan)
        flat_word = interval_word(row.get("flat_lo", np.nan), row.get("flat_hi", np.nan))
        shape = _dose_shape(flat_word, interval_word(lo, hi))
        results[kind] = (ref, lo, hi, flat_word, shape, row)
    if pred is not None:
        for kind, (ref, lo, hi, flat_word, shape, row) in results.items():
            reason = _sign_verdict(pred[kind]["sign"], lo, hi, f"the {kind}'s change")
            if reason:
                raise AssertionError(f"Exercise 10.1: {reason} (flattest − start {ref:+.3f}, paired over "
                                     f"{int(row['n_seeds'])} seeds).")
            if shape is not None and pred[kind]["shape"] != shape:
                raise AssertionError(
                    f"Exercise 10.1: you predicted '{pred[kind]['shape']}' at the flattest level for the {kind}; "
                    f"the runs say '{shape}' (flattest − start {ref:+.3f} [{lo:+.3f}, {hi:+.3f}]; flattest "
                    f"level's log enrichment {row['flat_mean']:+.3f} [{row['flat_lo']:+.3f}, "
                    f"{row['flat_hi']:+.3f}]).")
    parts = []
    for kind, (ref, lo, hi, flat_word, shape, row) in results.items():
        shape_text = shape or ("not shown present" if flat_word in ("negative", "indistinguishable")
                               else "not decided")
        parts.append(f"{kind}: flattest − start {ref:+.3f} [{lo:+.3f}, {hi:+.3f}] ({_decided_text(lo, hi)}), "
                     f"'{shape_text}'; the registered slope across all levels reads "
                     f"'{row['observed']}' at Holm-adjusted p")
    parts += [f"{kind}: not checked, its skewed or flattest runs are not committed yet (make dose)"
              for kind in missing]
    print("Exercise 10.1 passed. " + "; ".join(parts) + ".")
