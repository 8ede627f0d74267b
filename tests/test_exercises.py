"""Exercise checkers: each passes its reference and names known mistakes."""

import numpy as np
import pytest

from tanbias.errors import ParameterError
from tanbias.book.exercises import (check_exercise_1, check_exercise_2, check_exercise_3,
                               reference_gradient_ratio, reference_loop_gains,
                               reference_more_suppressed, reference_relative_suppression)
from tanbias.theory.gradients import gradient_ratio
from tanbias.lab.analysis import sweep
from tanbias.lab.config import KINDS


# --- exercise 1 -----------------------------------------------------------------------

def test_ex1_reference_passes(capsys):
    check_exercise_1(reference_gradient_ratio)
    assert "Exercise 1 passed" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, message", [
    (lambda x, mu, d, T, N: gradient_ratio(x, d, T, N), "did you centre x before projecting"),
    (lambda x, mu, d, T, N: 1 / reference_gradient_ratio(x, mu, d, T, N),
     "returned tangent/normal instead of normal/tangent"),
    (lambda x, mu, d, T, N: gradient_ratio(x - mu, d, T, N, form="mean"),
     "used the mean gradient, which cancels on symmetric samples"),
    (lambda x, mu, d, T, N: reference_gradient_ratio(x, mu, d, T, N) ** 2, "square root"),
    (lambda x, mu, d, T, N: gradient_ratio(x - mu, d, T, N, form="per_sample"),
     "averaged the per-sample ratios"),
    (lambda x, mu, d, T, N: gradient_ratio(x - mu, np.ones((len(x), 1)), T, N),
     "dropped the back-propagated signal"),
    (lambda x, mu, d, T, N: gradient_ratio(x - x.mean(0), d, T, N), "batch mean"),
    (lambda x, mu, d, T, N: 0.5, "Wrong value"),
    (lambda x, mu, d, T, N: "0.1", "should return a float"),
])
def test_ex1_wrong_answers(wrong, message):
    with pytest.raises(AssertionError, match=f"(?i){message}"):
        check_exercise_1(wrong)


def test_ex1_accepts_numpy_scalar():
    check_exercise_1(lambda *a: np.float64(reference_gradient_ratio(*a)))


# --- exercise 2 -----------------------------------------------------------------------

def test_ex2_reference_passes(capsys):
    check_exercise_2(reference_more_suppressed, reference_relative_suppression)
    out = capsys.readouterr().out
    assert "Exercise 2 passed" in out and "simulated 0.1" in out


@pytest.mark.parametrize("wrong, message", [
    (lambda t1, t2: 2, "you picked the rare token|you picked type 2, the rare"),
    (lambda t1, t2: 1 if t1 > t2 else 2, "smaller t means MORE suppression"),
    (lambda t1, t2: 1, "whatever the radii"),
    (lambda t1, t2: 0, "should return the type number 1 or 2"),
])
def test_ex2_wrong_choice(wrong, message):
    with pytest.raises(AssertionError, match=message):
        check_exercise_2(wrong)


@pytest.mark.parametrize("wrong, message", [
    (lambda t1, t2: t2 / t1, "inverted the quotient"),
    (lambda t1, t2: (t1 / t2) ** 2, "You squared"),
    (lambda t1, t2: (t1 / t2) ** 0.5, "square root"),
    (lambda t1, t2: 1.0, "off by more than 5%"),
])
def test_ex2_wrong_quotient(wrong, message):
    with pytest.raises(AssertionError, match=message):
        check_exercise_2(reference_more_suppressed, wrong)


# --- exercise 3 -----------------------------------------------------------------------

@pytest.mark.slow
def test_ex3_reference_passes(capsys):
    check_exercise_3(reference_loop_gains, compounds=True)
    assert "Exercise 3 passed" in capsys.readouterr().out


def _swapped(df, step):
    g = reference_loop_gains(df, step)
    return {"closed": g["cut"], "cut": g["closed"]}


def _share(df, step):
    out = {}
    for loop in ("closed", "cut"):
        g = df[df["loop"] == loop].set_index("step")["share"]
        out[loop] = g.loc[step] / g.loc[0]
    return out


def _difference(df, step):
    out = {}
    for loop in ("closed", "cut"):
        g = df[df["loop"] == loop].set_index("step")["alignment"]
        out[loop] = g.loc[step] - g.loc[0]
    return out


@pytest.mark.parametrize("wrong, message", [
    (_swapped, "You swapped the runs"),
    (_share, "You used the `share` column"),
    (_difference, "You returned a difference"),
    (lambda df, s: {k: 1 / v for k, v in reference_loop_gains(df, s).items()},
     "divided the wrong way round"),
    (lambda df, s: reference_loop_gains(df, int(df["step"].max())), "last logged step"),
    (lambda df, s: [1.0, 2.0], "should return a dict"),
])
def test_ex3_wrong_answers(wrong, message):
    with pytest.raises(AssertionError, match=message):
        check_exercise_3(wrong)


def test_ex3_wrong_prediction():
    with pytest.raises(AssertionError, match="does not match the run"):
        check_exercise_3(reference_loop_gains, compounds=False)


@pytest.mark.slow
def test_exercise_4_checker_on_smoke_sweep(loaded):
    from tanbias.book.exercises import check_exercise_4, reference_balancing_effect

    m = sweep.run_metrics(loaded)
    check_exercise_4(reference_balancing_effect, metrics=m)
    with pytest.raises(AssertionError, match="Sign flipped"):
        check_exercise_4(lambda mm, k: -reference_balancing_effect(mm, k), metrics=m)
    with pytest.raises(AssertionError, match="early probe steps"):
        check_exercise_4(lambda mm, k: reference_balancing_effect(mm, k, phase="early"), metrics=m)
    with pytest.raises(AssertionError, match="should return a float"):
        check_exercise_4(lambda mm, k: "x", metrics=m)


@pytest.mark.slow
def test_exercise_4_checker_against_the_committed_sweep(capsys):
    from tanbias.book.exercises import check_exercise_4, reference_balancing_effect

    try:
        loaded = sweep.load_sweep()
    except ParameterError as exc:
        pytest.fail(f"the committed sweep is incomplete: {exc}")
    m = sweep.run_metrics(loaded)
    truth = {k: int(np.sign(reference_balancing_effect(m, k))) for k in KINDS}
    check_exercise_4(reference_balancing_effect, prediction=truth, metrics=m)
    assert "Exercise 4 passed" in capsys.readouterr().out
    wrong = {k: -v for k, v in truth.items()}
    with pytest.raises(AssertionError, match="does not match the sweep"):
        check_exercise_4(reference_balancing_effect, prediction=wrong, metrics=m)
    with pytest.raises(AssertionError, match="should be a dict"):
        check_exercise_4(reference_balancing_effect, prediction={"encoder": 2}, metrics=m)


# --- the chapters' exercise solutions pass their checkers -----------------------------

def test_chapter_solutions_pass_checkers(capsys):
    def gradient_ratio_rms(x, mu, delta, tangent_basis, normal_basis):
        x_c = np.asarray(x, dtype=float) - mu
        d_norm = np.linalg.norm(delta, axis=1)
        tangent = d_norm * np.linalg.norm(x_c @ tangent_basis, axis=1)
        normal = d_norm * np.linalg.norm(x_c @ normal_basis, axis=1)
        return float(np.sqrt(np.sum(normal ** 2) / np.sum(tangent ** 2)))

    def loop_gains(df, step):
        out = {}
        for loop in ("closed", "cut"):
            a = df[df["loop"] == loop].set_index("step")["alignment"]
            out[loop] = float(a.loc[step] / a.loc[0])
        return out

    check_exercise_1(gradient_ratio_rms)
    check_exercise_2(lambda t1, t2: 1 if t1 < t2 else 2, lambda t1, t2: t1 / t2)
    check_exercise_3(loop_gains, compounds=True)
    out = capsys.readouterr().out
    assert out.count("passed") == 3
    with pytest.raises(AssertionError, match="does not match the run"):
        check_exercise_3(loop_gains, compounds=False)


# --- exercise 4, extended (chapter 10) --------------------------------------------------

def _dose_analysis(flat_lo):
    """A stand-in for chapter 10's DoseAnalysis: two seeds at both ends of the token knob, and
    the late-enrichment row with the flattest level's interval starting at ``flat_lo``."""
    import types

    import pandas as pd

    table = pd.DataFrame([{"kind": kind, "level": level, "seed": seed, "on_token": True, "on_language": False,
                           "log_enrichment_late": value + 0.1 * seed, "log_enrichment_early": value}
                          for kind in KINDS for seed in (0, 1) for level, value in (("skewed", 1.0), ("b100", 0.5))])
    responses = pd.DataFrame([{"metric": "log_enrichment_late", "knob": "token", "kind": kind, "observed": "-",
                               "end_to_end": -0.5, "end_to_end_lo": -0.8, "end_to_end_hi": -0.2, "n_seeds": 2,
                               "change": -0.5, "change_lo": -0.7, "change_hi": -0.3, "flat_mean": 0.55,
                               "flat_lo": flat_lo, "flat_hi": 1.0} for kind in KINDS])
    return types.SimpleNamespace(table=table, responses=responses)


def test_exercise_4_dose_never_reads_absent(capsys):
    """A flattest level whose interval reaches 0 is not shown present, not absent
    (``dose-posthoc.toml`` ``[presence]``)."""
    from tanbias.book.exercises import check_exercise_4_dose, reference_dose_change

    absent = {kind: {"sign": -1, "shape": "absent"} for kind in KINDS}
    attenuated = {kind: {"sign": -1, "shape": "attenuated"} for kind in KINDS}
    check_exercise_4_dose(reference_dose_change, prediction=absent, analysis=_dose_analysis(-0.1))
    assert "not shown present" in capsys.readouterr().out
    check_exercise_4_dose(reference_dose_change, prediction=attenuated, analysis=_dose_analysis(-0.1))
    with pytest.raises(AssertionError, match="the runs say 'attenuated'"):
        check_exercise_4_dose(reference_dose_change, prediction=absent, analysis=_dose_analysis(0.2))
