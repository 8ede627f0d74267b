"""Numbers in prose: one source for the built book and for JupyterLab.

A chapter's prose quotes computed numbers (and single words) with MyST's ``{eval}`` role, which
both renderers understand: myst-nb evaluates it while it executes the chapter
for the book (inline execution mode), and the ``jupyterlab-myst`` extension
evaluates it against the running kernel when a reader runs the Markdown cell.
A chapter records each number once, in a code cell::

    from tanbias.book.prose import glue, glued
    glue("ch1_slope", fit.slope)

and its prose reads ``{eval}`glued["ch1_slope:.3f"]```: the key, then
optionally ``:`` and a format spec, with the same meaning as myst-nb's
``{glue:text}`` role (the spec's last character coerces the value: ``f``,
``e``, ``g``, ``%`` to ``float``, ``d`` to ``int``, ``s`` to ``str``). The
value comes back as plain text, so neither renderer adds quotes. A negative number
reads with the minus sign U+2212 (``−0.02``), as every number the book formats does
(:mod:`tanbias.numerals`); the value glued, and so the glue log, stays the number itself.

This module imports nothing from the package but the core's :mod:`tanbias.numerals`.
"""

from __future__ import annotations

import json
import numbers
import os
import re

from tanbias.numerals import format_spec, minus

__all__ = ["Glued", "glue", "glued", "format_value", "EVAL_PATTERN", "NOT_AVAILABLE", "GLUE_LOG"]

#: The expressions that chapters may put in ``{eval}`` roles (myst-nb's
#: ``nb_eval_name_regex`` in ``_config.yml`` is this pattern): a plain name, or
#: ``glued["key:spec"]``.
EVAL_PATTERN = r'^(glued\["[A-Za-z0-9_]+(:[^"\]]*)?"\]|[A-Za-z_][A-Za-z0-9_]*)$'

_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def format_value(value, spec: str = "") -> str:
    """Format ``value`` as myst-nb's ``{glue:text}`key:spec``` would show it, a negative number with
    the minus sign U+2212 (:func:`tanbias.numerals.format_spec`).

    Parameters
    ----------
    value : object
        The glued value (a number, a word, ...).
    spec : str
        A Python format spec; its last character picks the type the value is
        coerced to, as in myst-nb.

    Returns
    -------
    str

    Raises
    ------
    ValueError
        When the value cannot be formatted with ``spec``; the message names both.

    Example
    -------
    >>> format_value(1.99812, ".3f"), format_value(0.00612, ".1%"), format_value(3.0, "d")
    ('1.998', '0.6%', '3')
    >>> format_value("weaker")
    'weaker'
    >>> format_value(float("nan"), ".2f")
    'n/a'
    >>> format_value((47, 75, 122))
    '47, 75, 122'
    >>> format_value(-0.0192, "+.3f"), format_value(-3, "d"), format_value(-0.5)
    ('−0.019', '−3', '−0.5')
    """
    if isinstance(value, (tuple, list)):           # a few numbers, e.g. the steps where runs peak
        return ", ".join(format_value(v, spec) for v in value)
    if spec == "":
        number = isinstance(value, numbers.Real) and not isinstance(value, bool)
        return minus(str(value)) if number else str(value)
    kind = spec[-1]
    try:
        if kind == "s":
            return format(str(value), spec)
        if kind in "bcdoxX":
            value = int(value)
        elif kind in "eEfFgGn%":
            value = float(value)
            if value != value:             # NaN: a statistic the data cannot give yet
                return NOT_AVAILABLE
        number = isinstance(value, numbers.Real) and not isinstance(value, bool)
        return format_spec(value, spec) if number else format(value, spec)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"cannot format {value!r} with spec {spec!r}: {exc}. "
                         "Use a spec that fits the value's type (e.g. '.3f' for a number).") from None


#: how a number the data cannot give yet (NaN) reads in the prose
NOT_AVAILABLE = "n/a"


class Glued(dict):
    """The numbers a chapter quotes in its prose, by key.

    ``glued[key]`` is the value as recorded; ``glued["key:spec"]`` is its text,
    formatted (see :func:`format_value`). Keys are recorded once per chapter
    run: recording a key again replaces it (re-running a cell is fine).

    Example
    -------
    >>> g = Glued()
    >>> g.put("slope", 1.99812)
    >>> g["slope:.3f"], g["slope"]
    ('1.998', '1.99812')
    >>> g["slop:.3f"]
    Traceback (most recent call last):
    ...
    KeyError: "no number glued as 'slop' (known: slope); run the chapter's cells above this paragraph first"
    """

    def put(self, key: str, value) -> None:
        """Record ``value`` under ``key`` (letters, digits, underscores)."""
        if not isinstance(key, str) or not _KEY.match(key):
            raise ValueError(f"key={key!r} is not valid: use letters, digits and underscores, "
                             "starting with a letter (e.g. 'ch1_slope').")
        dict.__setitem__(self, key, value)

    def __getitem__(self, spec: str) -> str:
        key, _, fmt = str(spec).partition(":")
        if not dict.__contains__(self, key):
            known = ", ".join(sorted(self)) or "none yet"
            raise KeyError(f"no number glued as {key!r} (known: {known}); "
                           "run the chapter's cells above this paragraph first")
        return format_value(dict.__getitem__(self, key), fmt)


#: The registry the chapters use (one kernel runs one chapter).
glued = Glued()


def glue(name: str, value) -> None:
    """Record ``value`` under ``name`` for the prose (``{eval}`glued["name:spec"]```).

    ``value`` is a number, a single word, or a tuple of numbers (quoted as
    ``47, 75, 122``): a sentence that states a result belongs in the Markdown,
    beside a displayed check. Prose numbers are never shown as outputs; display
    figures and tables directly.

    Example
    -------
    >>> glue("demo_ratio", 0.5)
    >>> glued["demo_ratio:.0%"]
    '50%'
    """
    glued.put(name, value)
    log = os.environ.get(GLUE_LOG)
    if log:                             # a mechanical record of every glued value (one JSON line each)
        with open(log, "a", encoding="utf-8") as f:
            f.write(json.dumps({"key": name, "value": repr(value)}) + "\n")


#: the environment variable naming a file to which :func:`glue` appends every glued value, one JSON
#: line each (``{"key": ..., "value": repr(value)}``): build the book with it set before and after
#: a change, and compare the two files to show which glued values the change moved
GLUE_LOG = "TANBIAS_GLUE_LOG"
