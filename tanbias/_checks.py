"""Parameter validation shared by every module of :mod:`tanbias`.

Every check raises :class:`tanbias.errors.ParameterError` with one message
shape, so a reader of any chapter sees the same kind of error:

    ``t=-0.1 is out of range: valid range is (0, inf). Pass a positive radius.``

that is: the parameter name, the value, the valid range in interval notation,
then a hint saying what to do. NaN, infinities (unless the range allows them),
booleans and non-numeric values are rejected too.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from tanbias.errors import ParameterError, PrecisionLossError

__all__ = [
    "format_interval",
    "check_real",
    "check_int",
    "check_array",
    "check_tangent",
    "check_rng",
    "check_instance",
    "check_choice",
    "check_callable",
    "to_numpy",
    "check_rows",
    "check_bases",
    "max_radius",
    "check_radius",
    "check_radii",
    "PRECISION_RTOL",
    "check_above_floor",
    "check_resolved",
]

#: The relative rounding error beyond which a function refuses its argument
#: (:class:`~tanbias.errors.PrecisionLossError`): 1 %. Below it an answer that is a
#: small difference of large numbers (a normal part, a directional bias) keeps at
#: least two correct digits.
PRECISION_RTOL = 1e-2


def _fmt_bound(x) -> str:
    if x is None:
        return "inf"
    x = float(x)
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:g}" if x != int(x) or abs(x) >= 1e16 else str(int(x))


def format_interval(lo=None, hi=None, lo_open: bool = True, hi_open: bool = True) -> str:
    """Interval in math notation; ``None`` bounds are infinite (and always open).

    Example
    -------
    >>> format_interval(0, None)
    '(0, inf)'
    >>> format_interval(1, 10, lo_open=False, hi_open=False)
    '[1, 10]'
    """
    left = "(" if (lo is None or lo_open or math.isinf(float(lo))) else "["
    right = ")" if (hi is None or hi_open or math.isinf(float(hi))) else "]"
    lo_s = "-inf" if lo is None else _fmt_bound(lo)
    return f"{left}{lo_s}, {_fmt_bound(hi)}{right}"


def _fmt_value(value) -> str:
    """Short, unambiguous rendering of a user value for a message."""
    if isinstance(value, (bool, np.bool_)):
        return repr(bool(value))
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        v = float(value)
        if math.isnan(v):
            return "nan"
        return repr(v)
    if isinstance(value, np.ndarray):
        return f"array of shape {value.shape}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _tail(hint: str) -> str:
    return f" {hint.strip()}" if hint and hint.strip() else ""


def check_real(name: str, value, lo=None, hi=None, lo_open: bool = True,
               hi_open: bool = True, hint: str = "") -> float:
    """Return ``value`` as a float after checking it lies in the interval.

    Parameters
    ----------
    name : str
        Parameter name used in the message.
    value : real number
        The value to check; numpy scalars and 0-d arrays are accepted.
    lo, hi : float or None
        Interval bounds; ``None`` means unbounded.
    lo_open, hi_open : bool
        Whether the bounds are excluded (default: open interval).
    hint : str
        What the caller should do instead, appended to the message.

    Returns
    -------
    float

    Raises
    ------
    ParameterError
        If ``value`` is not a real number, is NaN, or is out of range.

    Example
    -------
    >>> check_real("sigma", 0.5, lo=0)
    0.5
    >>> check_real("t", float("nan"), lo=0, hint="Pass a positive radius.")
    Traceback (most recent call last):
    ...
    tanbias.errors.ParameterError: t=nan is not a number: valid range is (0, inf). Pass a positive radius.
    """
    interval = format_interval(lo, hi, lo_open, hi_open)
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ParameterError(
            f"{name}={_fmt_value(value)} is not a real number: valid range is "
            f"{interval}.{_tail(hint)}")
    v = float(value)
    if math.isnan(v):
        raise ParameterError(
            f"{name}=nan is not a number: valid range is {interval}.{_tail(hint)}")
    below = (v == -math.inf) if lo is None else (v < lo or (lo_open and v == lo))
    above = (v == math.inf) if hi is None else (v > hi or (hi_open and v == hi))
    if below or above:
        raise ParameterError(
            f"{name}={_fmt_value(value)} is out of range: valid range is "
            f"{interval}.{_tail(hint)}")
    return v


def check_int(name: str, value, lo=None, hi=None, hint: str = "") -> int:
    """Return ``value`` as an int after checking it lies in ``[lo, hi]``.

    Integral floats such as ``1e5`` are accepted (notebooks write them);
    ``2.5``, booleans, NaN and strings are not.

    Raises
    ------
    ParameterError
        If ``value`` is not an integer or is outside ``[lo, hi]``.

    Example
    -------
    >>> check_int("n", 1e3, lo=1)
    1000
    >>> check_int("n", 2.5, lo=1, hint="Pass a whole number of samples.")
    Traceback (most recent call last):
    ...
    tanbias.errors.ParameterError: n=2.5 is not an integer: valid range is [1, inf). Pass a whole number of samples.
    """
    interval = format_interval(lo, hi, lo_open=False, hi_open=False)
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    ok = False
    if isinstance(value, (bool, np.bool_)):
        ok = False
    elif isinstance(value, numbers.Integral):
        ok = True
    elif isinstance(value, numbers.Real):
        v = float(value)
        ok = math.isfinite(v) and v == int(v)
    if not ok:
        raise ParameterError(
            f"{name}={_fmt_value(value)} is not an integer: valid range is "
            f"{interval}.{_tail(hint)}")
    iv = int(value)
    if (lo is not None and iv < lo) or (hi is not None and iv > hi):
        raise ParameterError(
            f"{name}={iv} is out of range: valid range is {interval}.{_tail(hint)}")
    return iv


def _shape_str(shape) -> str:
    parts = ["..." if s is Ellipsis else ("any" if s is None else str(s)) for s in shape]
    if len(parts) == 1:
        return f"({parts[0]},)"
    return "(" + ", ".join(parts) + ")"


def check_array(name: str, a, shape=(None, 3), hint: str = "", finite: bool = True) -> np.ndarray:
    """Return ``a`` as a float64 array after checking its shape and values.

    Parameters
    ----------
    name : str
        Parameter name used in the message.
    a : array_like
        Real numbers.
    shape : tuple
        Expected shape; ``None`` matches any length, a leading ``...`` matches
        any number of leading axes (e.g. ``(..., 3)``).
    hint : str
        What to do instead, appended to the message.
    finite : bool
        Reject NaN and infinities (default).

    Returns
    -------
    ndarray, float64

    Raises
    ------
    ParameterError
        Non-numeric input, wrong shape, or non-finite entries.

    Example
    -------
    >>> check_array("x", [[1, 2, 3]], shape=(None, 3)).shape
    (1, 3)
    >>> check_array("x", [1, 2], shape=(..., 3))
    Traceback (most recent call last):
    ...
    tanbias.errors.ParameterError: x has shape (2,) but expected shape (..., 3).
    """
    try:
        arr = np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError(
            f"{name}={_fmt_value(a)} is not an array of real numbers: valid range "
            f"is arrays of shape {_shape_str(shape)} with finite real entries."
            f"{_tail(hint)}") from None
    if shape is not None:
        shape = tuple(shape)
        if shape and shape[0] is Ellipsis:
            tail = shape[1:]
            ok = arr.ndim >= len(tail) and all(
                s is None or s == arr.shape[arr.ndim - len(tail) + i] for i, s in enumerate(tail))
        else:
            ok = arr.ndim == len(shape) and all(s is None or s == n for s, n in zip(shape, arr.shape))
        if not ok:
            raise ParameterError(
                f"{name} has shape {tuple(arr.shape)} but expected shape "
                f"{_shape_str(shape)}.{_tail(hint)}")
    if finite and arr.size and not np.all(np.isfinite(arr)):
        idx = tuple(int(i) for i in np.argwhere(~np.isfinite(arr))[0])
        raise ParameterError(
            f"{name} contains {arr[idx]} at index {idx}: valid range is finite real "
            f"numbers.{_tail(hint)}")
    return arr


def check_tangent(name: str, a, d: int, hint: str = "") -> np.ndarray:
    """Check ``a`` has shape ``(..., d)``: vectors in tangent coordinates.

    Raises
    ------
    ParameterError
        E.g. ``w has shape (5, 3) but the manifold's tangent dimension is d=2:
        expected shape (..., 2).``

    Example
    -------
    >>> check_tangent("w", [[1.0, 0.0, 0.0]], d=2)
    Traceback (most recent call last):
    ...
    tanbias.errors.ParameterError: w has shape (1, 3) but the manifold's tangent dimension is d=2: expected shape (..., 2).
    """
    try:
        arr = np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError(
            f"{name}={_fmt_value(a)} is not an array of real numbers: valid range is "
            f"arrays of shape (..., {d}) with finite real entries.{_tail(hint)}") from None
    if arr.ndim == 0 or arr.shape[-1] != d:
        raise ParameterError(
            f"{name} has shape {tuple(arr.shape)} but the manifold's tangent dimension "
            f"is d={d}: expected shape (..., {d}).{_tail(hint)}")
    if arr.size and not np.all(np.isfinite(arr)):
        idx = tuple(int(i) for i in np.argwhere(~np.isfinite(arr))[0])
        raise ParameterError(
            f"{name} contains {arr[idx]} at index {idx}: valid range is finite real "
            f"numbers.{_tail(hint)}")
    return arr


def check_rng(rng, name: str = "rng") -> np.random.Generator:
    """Return a :class:`numpy.random.Generator` from a Generator or an int seed.

    Raises
    ------
    ParameterError
        For anything else (``None`` is refused: randomness must be explicit).

    Example
    -------
    >>> isinstance(check_rng(0), np.random.Generator)
    True
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, numbers.Integral) and not isinstance(rng, (bool, np.bool_)) and rng >= 0:
        return np.random.default_rng(int(rng))
    raise ParameterError(
        f"{name}={_fmt_value(rng)} is not a random generator: valid range is "
        f"numpy.random.Generator instances or seeds in [0, inf). "
        f"Pass rng=numpy.random.default_rng(0).")


def check_instance(name: str, value, cls, hint: str = ""):
    """Check ``isinstance(value, cls)``; return ``value``.

    Example
    -------
    >>> check_instance("k", 3, int)
    3
    """
    if not isinstance(value, cls):
        names = (" or ".join(c.__name__ for c in cls) if isinstance(cls, tuple) else cls.__name__)
        raise ParameterError(
            f"{name}={_fmt_value(value)} has type {type(value).__name__}: valid range is "
            f"instances of {names}.{_tail(hint)}")
    return value


def check_choice(name: str, value, choices, hint: str = ""):
    """Check ``value`` is one of ``choices``; return it.

    Example
    -------
    >>> check_choice("family", "gaussian", ("gaussian", "laplace"))
    'gaussian'
    """
    if value not in tuple(choices):
        raise ParameterError(
            f"{name}={_fmt_value(value)} is not allowed: valid range is "
            f"{{{', '.join(repr(c) for c in choices)}}}.{_tail(hint)}")
    return value


def check_callable(name: str, value, hint: str = ""):
    """Check ``value`` is callable; return it.

    Example
    -------
    >>> check_callable("g", abs) is abs
    True
    """
    if not callable(value):
        raise ParameterError(
            f"{name}={_fmt_value(value)} is not callable: valid range is functions "
            f"of one array argument.{_tail(hint)}")
    return value


# ----------------------------------------------------------------------------
# arrays of activations, subspace bases and radii (the gradient-side chapters)
# ----------------------------------------------------------------------------

def to_numpy(a):
    """Return ``a`` unchanged, or a torch tensor as a numpy array (without importing torch).

    Duck typing on ``detach`` and ``cpu``, so real activations from a model
    (later chapters) go through the same checks as simulated ones.

    Example
    -------
    >>> to_numpy([1.0, 2.0])
    [1.0, 2.0]
    """
    if hasattr(a, "detach") and hasattr(a, "cpu"):
        return a.detach().cpu().numpy()
    return a


def check_rows(name: str, x, D=None, hint: str = "Pass a batch of activations, one row per "
                                                  "sample.") -> np.ndarray:
    """Check a non-empty batch ``x`` of shape ``(n, D)`` (rows are samples); return float64.

    Parameters
    ----------
    name : str
        Parameter name used in the message.
    x : array_like or torch.Tensor, shape (n, D)
    D : int, optional
        Required number of columns (any if ``None``).
    hint : str

    Raises
    ------
    ParameterError
        Wrong shape, no rows, non-finite entries.

    Example
    -------
    >>> check_rows("x_c", [[1.0, 2.0]], D=2).shape
    (1, 2)
    >>> check_rows("x_c", np.zeros((0, 2)))
    Traceback (most recent call last):
    ...
    tanbias.errors.ParameterError: x_c has 0 rows: valid range is [1, inf) samples. Pass at least one sample.
    """
    x = check_array(name, to_numpy(x), shape=(None, D), hint=hint)
    if x.shape[0] == 0:
        raise ParameterError(f"{name} has 0 rows: valid range is [1, inf) samples. "
                             f"Pass at least one sample.")
    return x


def check_bases(tangent_basis, normal_basis, D=None):
    """Check a tangent and a normal basis with the same ``D`` rows; return both as float64.

    Parameters
    ----------
    tangent_basis : array_like or torch.Tensor, shape (D, d)
    normal_basis : array_like or torch.Tensor, shape (D, k)
    D : int, optional
        Required number of rows (any if ``None``).

    Returns
    -------
    (ndarray, ndarray)

    Raises
    ------
    ParameterError
        Mismatched rows, an empty basis, non-finite entries.

    Example
    -------
    >>> T, N = check_bases(np.eye(3)[:, :1], np.eye(3)[:, 1:])
    >>> T.shape, N.shape
    ((3, 1), (3, 2))
    """
    T = check_array("tangent_basis", to_numpy(tangent_basis), shape=(D, None),
                    hint="Pass the (D, d) matrix whose columns span the tangent space.")
    N = check_array("normal_basis", to_numpy(normal_basis), shape=(T.shape[0], None),
                    hint=f"Pass a (D, D-d) matrix with the same D={T.shape[0]} rows as "
                         f"tangent_basis.")
    if T.shape[1] == 0 or N.shape[1] == 0:
        raise ParameterError(
            f"tangent_basis has {T.shape[1]} and normal_basis {N.shape[1]} columns: valid "
            f"range is [1, D-1] columns each. Pass non-empty bases.")
    return T, N


def max_radius(manifold):
    """The largest radius a manifold samples at, if it says (``patch_radius`` or ``max_radius``).

    Returns
    -------
    float or None
        ``None`` when the manifold has no finite limit (or is ``None``).

    Example
    -------
    >>> class Patch:
    ...     patch_radius = 0.5
    >>> max_radius(Patch()), max_radius(None)
    (0.5, None)
    """
    for name in ("patch_radius", "max_radius"):
        r = getattr(manifold, name, None)
        if r is not None and np.isfinite(r):
            return float(r)
    return None


def check_above_floor(name: str, value: float, floor: float, why: str) -> float:
    """Raise :class:`~tanbias.errors.PrecisionLossError` when ``value < floor``.

    ``floor`` is where float64 rounding reaches :data:`PRECISION_RTOL` of the answer;
    ``why`` says which difference loses its digits and what to do.

    Example
    -------
    >>> check_above_floor("eta_g", 1e-3, 1e-12, "")
    0.001
    """
    if value < floor:
        raise PrecisionLossError(
            f"{name}={_fmt_value(value)} is below the precision floor: valid range is "
            f"{format_interval(float(f'{floor:.3g}'), None, lo_open=False)}. {why}".rstrip())
    return value


def check_resolved(t, manifold, name: str = "t") -> float:
    """Refuse a radius at which the normal part of ``y - mu`` is float64 rounding.

    A point at geodesic radius ``t`` has a normal part of size about ``c t^2``
    (``c = sqrt(E||II(u,u)||^2) / 2``), computed as a difference ``y - mu`` whose
    rounding is about ``eps (||mu|| + t)``. ``manifold.normal_floor()`` is the radius
    where that rounding reaches :data:`PRECISION_RTOL` of the normal part; a manifold
    without one (flat, or not a :class:`~tanbias.theory.manifolds.Submanifold`) has
    no floor.

    Raises
    ------
    PrecisionLossError
        ``t`` below the floor.

    Example
    -------
    >>> class Curved:                  # the interface of tanbias.theory.manifolds.Submanifold
    ...     mu = np.zeros(3)
    ...     def normal_floor(self): return 1e-12
    ...     def normal_size(self, t): return 0.5 * t ** 2
    >>> check_resolved(0.01, Curved())
    0.01
    >>> check_resolved(1e-13, Curved())                   # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    tanbias.errors.PrecisionLossError: t=1e-13 is below the precision floor: valid range is [1e-12, inf). ...
    """
    floor_of = getattr(manifold, "normal_floor", None)
    if floor_of is None:
        return t
    floor = float(floor_of())
    eps = float(np.finfo(np.float64).eps)
    mu = float(np.linalg.norm(getattr(manifold, "mu", 0.0)))
    return check_above_floor(
        name, t, floor,
        f"At this radius the normal part of y - mu (about {manifold.normal_size(t):.2g}) "
        f"is within a factor {1 / PRECISION_RTOL:g} of the rounding of y - mu (about "
        f"{eps * (mu + t):.2g}, from |mu| = {mu:.3g}), so every normal quantity would be "
        f"rounding noise. Pass a larger radius, or build the manifold with its base point "
        f"mu nearer the origin.")


def check_radius(t, manifold=None, name: str = "t") -> float:
    """Check a geodesic radius ``t`` in ``(0, max_radius(manifold)]``; return it as a float.

    With a manifold, ``t`` must also stand above its precision floor
    (:func:`check_resolved`; :class:`~tanbias.errors.PrecisionLossError`).

    Example
    -------
    >>> check_radius(0.1)
    0.1
    >>> check_radius(-1.0)
    Traceback (most recent call last):
    ...
    tanbias.errors.ParameterError: t=-1.0 is out of range: valid range is (0, inf). Pass a positive radius.
    """
    hi = max_radius(manifold)
    t = check_real(name, t, 0, hi, hi_open=False,
                   hint="Pass a positive radius" + ("" if hi is None else
                         " inside the manifold's patch") + ".")
    return check_resolved(t, manifold, name) if manifold is not None else t


def check_radii(ts, manifold=None) -> np.ndarray:
    """Check a non-empty 1-D array ``ts`` of radii, each as in :func:`check_radius`.

    Example
    -------
    >>> check_radii([0.1, 0.2]).tolist()
    [0.1, 0.2]
    """
    ts = check_array("ts", ts, shape=(None,), hint="Pass a 1-D array of radii.")
    if ts.size == 0:
        raise ParameterError("ts is empty: valid range is at least one radius in (0, inf). "
                             "Pass e.g. numpy.geomspace(0.02, 0.2, 8).")
    for t in ts:
        check_radius(t, manifold)
    return ts
