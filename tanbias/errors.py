"""Exceptions raised by :mod:`tanbias`.

All are :class:`ValueError` subclasses, so ``except ValueError`` keeps working
for callers who do not care about the distinction. Used by every module of the
package. :class:`PrecisionLossError` is a :class:`ParameterError`:
a radius or a moment ratio so small that floating-point rounding swamps the answer
is out of its valid range, a range that the arithmetic sets.
"""

from __future__ import annotations

__all__ = ["ParameterError", "PrecisionLossError", "CorruptFileError"]


class ParameterError(ValueError):
    """A parameter is out of its valid range, of the wrong type or shape.

    The message always names the parameter, the value that was passed, the
    valid range and what to do instead; build it with :mod:`tanbias._checks`.

    Example
    -------
    >>> from tanbias._checks import check_real
    >>> try:
    ...     check_real("t", -0.1, lo=0, hint="Pass a positive radius.")
    ... except ParameterError as err:
    ...     print(err)
    t=-0.1 is out of range: valid range is (0, inf). Pass a positive radius.
    """


class PrecisionLossError(ParameterError):
    """A parameter is so small that float64 rounding would swamp the result.

    Raised where a function's answer is a small difference of large numbers: the
    normal part of ``y - mu`` at a radius ``t`` (about ``c t^2`` beside a rounding of
    about ``eps ||mu||``), or a directional bias of order ``eta_g`` beside a
    quadrature of order 1. Below the floor the function would not fail: it would
    return a number, and the number would mean nothing (a normal ratio of 197 where
    the answer is 1, a log-log slope near 0 where it is 1). The message names the
    parameter, its value, the floor (the valid range) and what to do, like every
    :class:`ParameterError`; build it with :func:`tanbias._checks.check_resolved`
    or :func:`tanbias._checks.check_above_floor`.

    Example
    -------
    >>> from tanbias._checks import check_above_floor
    >>> try:
    ...     check_above_floor("t", 1e-9, 3e-7, "The normal part is below the rounding of y - mu.")
    ... except PrecisionLossError as caught:
    ...     print(caught, isinstance(caught, ParameterError))
    t=1e-09 is below the precision floor: valid range is [3e-07, inf). The normal part is below the rounding of y - mu. True
    """


class CorruptFileError(ValueError):
    """A committed data file is missing, truncated or fails its checksum.

    Parameters
    ----------
    path : str or os.PathLike
        The offending file.
    regenerate : str
        The shell command that rebuilds the file (e.g. ``"make data"``).
    detail : str, optional
        What exactly is wrong (e.g. the checksum mismatch).

    Attributes
    ----------
    path : str
    regenerate : str

    Example
    -------
    >>> err = CorruptFileError("data/x.npz", "make data", "sha256 mismatch")
    >>> print(err)
    data/x.npz is corrupt (sha256 mismatch). Regenerate it with: make data
    >>> isinstance(err, ValueError), err.regenerate
    (True, 'make data')
    """

    def __init__(self, path, regenerate: str, detail: str = "") -> None:
        self.path = str(path)
        self.regenerate = str(regenerate)
        self.detail = str(detail)
        what = f" ({self.detail})" if self.detail else ""
        super().__init__(
            f"{self.path} is corrupt{what}. Regenerate it with: {self.regenerate}"
        )

    def __reduce__(self):  # keep the exception picklable (multiprocessing, pytest-xdist)
        return (type(self), (self.path, self.regenerate, self.detail))
