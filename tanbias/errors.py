"""Exceptions raised by :mod:`tanbias`.

Both are :class:`ValueError` subclasses, so ``except ValueError`` keeps working
for callers who do not care about the distinction. Used by every module of the
package (chapters 1-8).
"""

from __future__ import annotations

__all__ = ["ParameterError", "CorruptFileError"]


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
