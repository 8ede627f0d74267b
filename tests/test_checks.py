"""Parameter validation (tanbias._checks): message format, NaN/type rejection, shared array checks."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tanbias._checks import (check_array, check_int, check_real, check_rng, check_tangent,
                             format_interval)
from tanbias.errors import ParameterError
from tanbias.theory.residual import default_loop_manifold


def test_message_matches_the_house_style_exactly():
    with pytest.raises(ParameterError) as exc:
        check_real("t", -0.1, lo=0, hint="Pass a positive radius.")
    assert str(exc.value) == "t=-0.1 is out of range: valid range is (0, inf). Pass a positive radius."


@pytest.mark.parametrize("lo, hi, lo_open, hi_open, text", [
    (0, None, True, True, "(0, inf)"),
    (0, None, False, True, "[0, inf)"),
    (1, 10, False, False, "[1, 10]"),
    (None, 2.5, True, False, "(-inf, 2.5]"),
    (0, math.pi, True, True, "(0, 3.14159)"),
])
def test_interval_notation(lo, hi, lo_open, hi_open, text):
    assert format_interval(lo, hi, lo_open, hi_open) == text


def test_bounds_open_and_closed():
    assert check_real("x", 0.0, lo=0, lo_open=False) == 0.0
    with pytest.raises(ParameterError, match=r"x=0.0 is out of range: valid range is \(0, inf\)"):
        check_real("x", 0.0, lo=0)
    assert check_real("x", 1.0, lo=0, hi=1, hi_open=False) == 1.0
    with pytest.raises(ParameterError):
        check_real("x", 1.0, lo=0, hi=1)


@pytest.mark.parametrize("bad", [float("nan"), "a", None, [1.0], True, np.array([1.0, 2.0])])
def test_non_numbers_are_rejected(bad):
    with pytest.raises(ParameterError, match="valid range is"):
        check_real("sigma", bad, lo=0)


def test_infinity_rejected_unless_range_allows():
    with pytest.raises(ParameterError):
        check_real("t", math.inf, lo=0)
    with pytest.raises(ParameterError):
        check_real("t", -math.inf)


def test_numpy_scalars_accepted():
    assert check_real("t", np.float32(0.5), lo=0) == 0.5
    assert check_int("n", np.int64(3), lo=1) == 3
    assert check_int("n", 1e3, lo=1) == 1000


@settings(max_examples=60, deadline=None)
@given(st.floats(allow_nan=True, allow_infinity=True).filter(lambda x: not (x > 0 and math.isfinite(x))))
def test_check_real_rejects_every_non_positive_or_nan(t):
    with pytest.raises(ParameterError) as exc:
        check_real("t", t, lo=0, hint="Pass a positive radius.")
    msg = str(exc.value)
    assert msg.startswith("t=") and "valid range is (0, inf)" in msg and "Pass a positive radius." in msg
    shown = "nan" if math.isnan(t) else repr(float(t))
    assert shown in msg or f"{t:g}" in msg


@settings(max_examples=60, deadline=None)
@given(st.floats(min_value=-1e6, max_value=1e6).filter(lambda x: x != int(x)))
def test_check_int_rejects_non_integers(n):
    with pytest.raises(ParameterError) as exc:
        check_int("n", n, lo=1)
    msg = str(exc.value)
    assert "n=" in msg and repr(n) in msg and "valid range is [1, inf)" in msg


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=-10**6, max_value=0))
def test_check_int_rejects_out_of_range(n):
    with pytest.raises(ParameterError, match=rf"n={n} is out of range: valid range is \[1, inf\)"):
        check_int("n", n, lo=1)


def test_dimension_mismatch_message():
    with pytest.raises(ParameterError) as exc:
        check_tangent("w", np.zeros((5, 3)), d=2)
    assert str(exc.value) == ("w has shape (5, 3) but the manifold's tangent dimension is d=2: "
                              "expected shape (..., 2).")


def test_check_array_shape_and_nan():
    assert check_array("x", [[1, 2, 3]]).dtype == np.float64
    with pytest.raises(ParameterError, match=r"x has shape \(3,\) but expected shape \(any, 3\)"):
        check_array("x", [1, 2, 3])
    with pytest.raises(ParameterError, match=r"x contains nan at index \(0, 1\): valid range"):
        check_array("x", [[1.0, np.nan, 0.0]])
    with pytest.raises(ParameterError, match="not an array of real numbers"):
        check_array("x", [["a", "b", "c"]])


def test_check_rng():
    assert isinstance(check_rng(3), np.random.Generator)
    g = np.random.default_rng(0)
    assert check_rng(g) is g
    with pytest.raises(ParameterError, match="rng=None"):
        check_rng(None)


# --- shared array checks (rows, bases, radii) ----------------------------------------

def test_shared_checks():
    quad = default_loop_manifold()
    import torch

    from tanbias._checks import (check_bases, check_radii, check_radius, check_rows,
                                 max_radius, to_numpy)

    x = torch.ones(2, 3, dtype=torch.float64)
    assert isinstance(to_numpy(x), np.ndarray) and check_rows("x", x, D=3).shape == (2, 3)
    with pytest.raises(ParameterError, match=r"x_c has 0 rows"):
        check_rows("x_c", np.zeros((0, 3)))
    with pytest.raises(ParameterError, match=r"normal_basis has shape \(4, 1\)"):
        check_bases(np.eye(3)[:, :1], np.eye(4)[:, :1])
    with pytest.raises(ParameterError, match=r"tangent_basis has 0 and normal_basis 3 columns"):
        check_bases(np.eye(3)[:, :0], np.eye(3))
    assert max_radius(quad) == 0.5 and max_radius(None) is None
    assert check_radius(0.5, quad) == 0.5
    with pytest.raises(ParameterError, match=r"t=0.6 is out of range.*inside the manifold's patch"):
        check_radius(0.6, quad)
    with pytest.raises(ParameterError, match=r"ts is empty"):
        check_radii([], quad)


def test_a_value_below_its_precision_floor_is_refused_by_name_value_and_floor():
    from tanbias._checks import check_above_floor, check_radius, check_resolved
    from tanbias.errors import PrecisionLossError

    assert check_above_floor("eta_g", 1e-3, 1e-12, "why") == 1e-3
    with pytest.raises(PrecisionLossError) as exc:
        check_above_floor("eta_g", 1e-14, 6.0213e-12, "Pass a larger eta_g.")
    assert str(exc.value) == ("eta_g=1e-14 is below the precision floor: valid range is [6.02e-12, inf). "
                              "Pass a larger eta_g.")
    quad = default_loop_manifold()
    floor = quad.normal_floor()
    assert check_radius(2 * floor, quad) == 2 * floor and check_resolved(2 * floor, quad) == 2 * floor
    assert check_radius(floor / 2) == floor / 2          # no manifold, no floor
    with pytest.raises(PrecisionLossError, match=r"t=.*below the precision floor.*\|mu\| = 3.19"):
        check_radius(floor / 2, quad)
    assert check_resolved(1e-12, object()) == 1e-12     # a set without the interface has no floor
