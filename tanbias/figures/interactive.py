"""Interactive figures: one definition, two renderings (used by every chapter).

A chapter defines a figure once, as *parameters* + a pure ``compute`` function
+ a ``figure`` function, and shows it with one line::

    from tanbias.figures.interactive import Param, Interactive
    demo = Interactive(
        params=[Param("t", "radius t", 0.01, 0.5, default=0.1, log=True, steps=9),
                Param("eta_g", "η_g", 1e-3, 1e-1, default=1e-2, log=True, steps=7)],
        compute=lambda t, eta_g: {"x": ..., "y": ...},
        figure=lambda data, **p: go.Figure(...),
        title="...", caption="...")
    demo

How it renders depends on where the notebook runs (:func:`resolve_mode`):

``live``
    In JupyterLab (a kernel started by a Jupyter server): ipywidgets sliders
    take continuous values; each move re-runs ``compute`` and updates a
    :class:`plotly.graph_objects.FigureWidget` *in place* (``batch_update`` of
    the trace data; the widget is never re-created).
``static``
    In the built book (no kernel): ``compute`` runs on a grid (``Param.steps``
    values per parameter, the default being one of them and the initial view)
    and the figure carries every grid point as a plotly frame, with plotly's
    own sliders, one per parameter. With several parameters a small script
    combines the sliders' positions to pick the frame named by the index tuple.
    Axis ranges are the union over the grid, so moving a slider never rescales.
``bench``
    Nothing is displayed; :mod:`tanbias.book.bench` times live updates.

Every :class:`Interactive` created is appended to :data:`REGISTRY`, which is how
the benchmark finds the interactives of a chapter.
"""

from __future__ import annotations

import inspect
import itertools
import json
import base64
import copy
import math
import numbers
import os
import re
import time
import warnings
from typing import Any, Callable, Sequence

import numpy as np

from tanbias._checks import check_choice, check_int, check_real
from tanbias.errors import ParameterError
from tanbias.numerals import minus
from tanbias.figures.renderer import figure_html
from tanbias.palette import ERROR_COLOR

__all__ = [
    "MODES", "REGISTRY", "Param", "Interactive", "LiveView", "FigureBudgetWarning",
    "resolve_mode", "in_jupyter_server",
]

#: Valid values of ``TANBIAS_MODE`` / ``show(mode=...)``.
MODES = ("live", "static", "bench")

#: Every :class:`Interactive` created in this process, in creation order.
REGISTRY: list["Interactive"] = []

#: Static figures above this many bytes of JSON warn; above ``HARD_LIMIT`` raise.
DEFAULT_BUDGET = 1_000_000
HARD_LIMIT = 2_000_000

# Vertical room (px) for one plotly slider under the plot, and the gap below the x axis.
_SLIDER_BLOCK = 80
_SLIDER_GAP = 62
_TRACE_ARRAY_MIN = 8  # numeric tuples at least this long are sent as typed arrays
_CARTESIAN = {"scatter", "scattergl", "bar", "heatmap", "contour", "histogram2d",
              "histogram2dcontour", "box", "violin"}


class FigureBudgetWarning(UserWarning):
    """A static interactive figure is heavier than its byte budget."""


# --------------------------------------------------------------------------- mode
def in_jupyter_server(environ=None) -> bool:
    """True inside a kernel that a Jupyter server (Lab / Notebook) started.

    jupyter_server's session manager sets ``JPY_SESSION_NAME`` for kernels it
    starts for a notebook. ``JPY_PARENT_PID`` is *not* a usable signal: every
    kernel launched through jupyter_client has it, including the ones nbclient
    and myst-nb start to build the book.

    Example
    -------
    >>> in_jupyter_server({"JPY_SESSION_NAME": "/chapters/01.md"}), in_jupyter_server({"JPY_PARENT_PID": "1"})
    (True, False)
    """
    env = os.environ if environ is None else environ
    return bool(env.get("JPY_SESSION_NAME"))


def resolve_mode(mode: str | None = None, environ=None) -> str:
    """Pick the rendering mode: explicit ``mode`` > ``TANBIAS_MODE`` > live server > static.

    Example
    -------
    >>> resolve_mode(environ={"TANBIAS_MODE": "static", "JPY_SESSION_NAME": "x"})
    'static'
    >>> resolve_mode(environ={"JPY_SESSION_NAME": "x"}), resolve_mode(environ={})
    ('live', 'static')
    >>> resolve_mode("bench")
    'bench'
    """
    env = os.environ if environ is None else environ
    chosen = mode if mode is not None else (env.get("TANBIAS_MODE") or "").strip().lower() or None
    if chosen is None:
        return "live" if in_jupyter_server(env) else "static"
    return check_choice("mode", chosen, MODES,
                        hint="Set TANBIAS_MODE to live, static or bench (or leave it unset).")


# --------------------------------------------------------------------------- Param
def _nice(v: float) -> str:
    """Short label for a slider value: 3 significant digits, no float noise.

    Example
    -------
    >>> [_nice(v) for v in (0.1, 0.0125, 1234.5, 2.5e-5, 1e6, 0.0, -0.5)]
    ['0.1', '0.0125', '1.23e3', '2.5e−5', '1e6', '0', '−0.5']
    """
    v = float(v)
    if v == 0:
        return "0"
    if 1e-3 <= abs(v) < 1e3:
        return minus(f"{v:.3g}")
    mant, exp = f"{v:.2e}".split("e")
    mant = mant.rstrip("0").rstrip(".")
    return minus(f"{mant}e{int(exp)}")


def _fine_step(lo: float, hi: float, default: float, n: int = 400) -> float:
    """About ``(hi - lo) / n``, adjusted so that ``default`` is on the slider's step grid
    (the front end snaps values to ``lo + k * step``).

    Example
    -------
    >>> step = _fine_step(0.0, 1.0, 0.3)
    >>> round(0.3 / step, 9) == round(0.3 / step), abs(step - 1 / 400) < 1e-4
    (True, True)
    """
    base = (hi - lo) / n
    offset = default - lo
    if offset <= 0:
        return base
    return offset / max(1, round(offset / base))


class Param:
    """One parameter of an :class:`Interactive`: range, default, grid, widget.

    Three kinds, chosen from the arguments:

    * float: ``Param("t", "radius t", 0.01, 0.5, default=0.1, log=True, steps=9)``;
      live: ``FloatLogSlider`` (``log=True``) or ``FloatSlider``;
    * int: ``Param("d", "d", 1, 8, default=2, integer=True)`` (also inferred
      when ``lo``, ``hi`` and ``default`` are all ints); live: ``IntSlider``;
    * categorical: ``Param("regime", "data regime", options=("zipf", "uniform"))``;
      live: ``SelectionSlider``.

    Parameters
    ----------
    name : str
        Keyword passed to ``compute`` (a Python identifier).
    label : str, optional
        Text shown beside the slider (plain text or plotly's HTML subset such as
        ``η<sub>g</sub>``); defaults to ``name``.
    lo, hi : float
        Closed range ``[lo, hi]`` of numeric parameters, ``lo < hi``.
    default : optional
        Initial value; ``lo`` (first option) when omitted. It is always a point
        of the static grid (it replaces the nearest grid point if needed).
    log : bool
        Geometric grid and log slider; needs ``lo > 0``.
    steps : int
        Number of grid points of the static figure, at least 2.
    integer : bool, optional
        Integer parameter (see above).
    options : sequence, optional
        The values of a categorical parameter (at least 2).
    values : sequence, optional
        Explicit static grid (sorted, inside ``[lo, hi]``) instead of ``steps``.
    fmt : callable, optional
        ``value -> str`` for slider labels; default: 3 significant digits.

    Raises
    ------
    ParameterError
        ``lo >= hi``, default outside the range, ``log`` with ``lo <= 0``,
        ``steps < 2``, fewer than two options, or a name that is not an identifier.

    Example
    -------
    >>> p = Param("t", "radius t", 0.01, 1.0, default=0.1, log=True, steps=3)
    >>> p.grid, p.default_index
    ((0.01, 0.1, 1.0), 1)
    >>> Param("t", "radius t", 0.5, 0.1)
    Traceback (most recent call last):
    ...
    tanbias.errors.ParameterError: t.hi=0.1 is out of range: valid range is (0.5, inf). ...
    """

    def __init__(self, name: str, label: str | None = None, lo=None, hi=None, *,
                 default=None, log: bool = False, steps: int = 7, integer: bool | None = None,
                 options: Sequence | None = None, values: Sequence | None = None,
                 fmt: Callable[[Any], str] | None = None):
        if not isinstance(name, str) or not name.isidentifier():
            raise ParameterError(
                f"name={name!r} is not allowed: valid range is Python identifiers. "
                f"The name is the keyword passed to compute().")
        self.name = name
        self.label = name if label is None else str(label)
        self.log = bool(log)
        self.fmt = fmt
        if options is not None:
            self.kind = "choice"
            self.options = tuple(options)
            if len(self.options) < 2 or len(set(map(repr, self.options))) != len(self.options):
                raise ParameterError(
                    f"{name}.options={self.options!r} is not allowed: valid range is at least "
                    f"2 distinct options. Use a constant instead of a one-option parameter.")
            self.default = self.options[0] if default is None else default
            check_choice(f"{name}.default", self.default, self.options,
                         hint="The default must be one of the options.")
            self.lo = self.hi = None
            self.steps = len(self.options)
            self.grid = self.options
            self.default_index = self.options.index(self.default)
            return

        self.options = None
        if lo is None or hi is None:
            raise ParameterError(
                f"{name}: lo={lo!r}, hi={hi!r} is not allowed: valid range is two finite numbers "
                f"lo < hi. Pass lo and hi, or options=... for a categorical parameter.")
        raw = (lo, hi) + (() if default is None else (default,))
        lo = check_real(f"{name}.lo", lo)
        if self.log:
            lo = check_real(f"{name}.lo", lo, lo=0,
                            hint="A log-scale parameter needs lo > 0; use log=False otherwise.")
        check_real(f"{name}.hi", hi, lo=lo, hint="The range must satisfy lo < hi.")
        self.steps = check_int(f"{name}.steps", steps, lo=2,
                               hint="A slider needs at least 2 grid points.")
        if integer is None:  # ints everywhere (and linear) -> an integer parameter
            integer = not self.log and all(
                isinstance(v, numbers.Integral) and not isinstance(v, bool)
                for v in raw)
        self.kind = "int" if integer else "float"
        if self.kind == "int":
            self.lo = check_int(f"{name}.lo", lo)
            self.hi = check_int(f"{name}.hi", hi, lo=self.lo + 1,
                                hint="The range must satisfy lo < hi.")
            self.steps = min(self.steps, self.hi - self.lo + 1)
        else:
            self.lo, self.hi = float(lo), float(hi)
        if default is None:
            default = self.lo
        self.default = self.validate(default, what=f"{name}.default")
        self.grid = self._make_grid(values)
        self.steps = len(self.grid)
        self.default_index = self.grid.index(self.default)

    # -- grid ---------------------------------------------------------------
    def _make_grid(self, values) -> tuple:
        if values is not None:
            vals = [self.validate(v, what=f"{self.name}.values") for v in values]
            if len(vals) < 2 or any(b <= a for a, b in zip(vals, vals[1:])):
                raise ParameterError(
                    f"{self.name}.values={tuple(vals)!r} is not allowed: valid range is at least "
                    f"2 strictly increasing values. Sort them and drop duplicates.")
        elif self.log:
            vals = list(np.geomspace(self.lo, self.hi, self.steps))
        else:
            vals = list(np.linspace(self.lo, self.hi, self.steps))
        if self.kind == "int":
            vals = sorted({int(round(v)) for v in vals})
        else:
            vals = [float(v) for v in vals]
            vals[0], vals[-1] = (vals[0], vals[-1]) if values is not None else (self.lo, self.hi)
        # The default must be a grid point (it is the initial view): replace the
        # nearest interior point, so the count and both ends of the range stay.
        if self.default not in vals:
            if len(vals) >= 3:
                dist = (lambda v: abs(math.log(v / self.default))) if self.log else \
                    (lambda v: abs(v - self.default))
                nearest = min(range(1, len(vals) - 1), key=lambda i: dist(vals[i]))
                vals[nearest] = self.default
            else:
                vals.append(self.default)
            vals = sorted(set(vals))
        return tuple(vals)

    # -- values -------------------------------------------------------------
    def validate(self, value, what: str | None = None):
        """Return ``value`` (as float / int / option) or raise :class:`~tanbias.errors.ParameterError`.

        Example
        -------
        >>> Param("t", "t", 0.01, 0.5).validate(0.2)
        0.2
        >>> Param("t", "t", 0.01, 0.5).validate(2.0)
        Traceback (most recent call last):
        ...
        tanbias.errors.ParameterError: t=2.0 is out of range: valid range is [0.01, 0.5]. ...
        """
        name = what or self.name
        if self.kind == "choice":
            return check_choice(name, value, self.options,
                                hint=f"Pick one of the options of {self.name!r}.")
        hint = f"Move {self.name!r} inside its slider range."
        if self.kind == "int":
            return check_int(name, value, lo=self.lo, hi=self.hi, hint=hint)
        return check_real(name, value, lo=self.lo, hi=self.hi, lo_open=False, hi_open=False,
                          hint=hint)

    def format(self, value) -> str:
        """Slider label for ``value``.

        Example
        -------
        >>> Param("eta_g", "η_g", 1e-3, 1e-1, log=True).format(0.01)
        '0.01'
        """
        if self.fmt is not None:
            return str(self.fmt(value))
        if self.kind == "choice":
            return str(value)
        if self.kind == "int":
            return str(int(value))
        return _nice(value)

    def sample(self, rng: np.random.Generator):
        """A random value of the live range (uniform in log space for ``log``)."""
        if self.kind == "choice":
            return self.options[int(rng.integers(len(self.options)))]
        if self.kind == "int":
            return int(rng.integers(self.lo, self.hi + 1))
        if self.log:
            return float(np.exp(rng.uniform(math.log(self.lo), math.log(self.hi))))
        return float(rng.uniform(self.lo, self.hi))

    def widget(self):
        """The ipywidgets control of the live figure (continuous values)."""
        import ipywidgets as W

        common = dict(description=self.label, continuous_update=True,
                      style={"description_width": "initial"},
                      layout=W.Layout(width="95%"))
        if self.kind == "choice":
            return W.SelectionSlider(options=list(self.options), value=self.default, **common)
        if self.kind == "int":
            return W.IntSlider(min=self.lo, max=self.hi, value=self.default, step=1, **common)
        if self.log:
            lo, hi = math.log10(self.lo), math.log10(self.hi)
            return W.FloatLogSlider(base=10, min=lo, max=hi, value=self.default,
                                    step=_fine_step(lo, hi, math.log10(self.default)),
                                    readout_format=".3g", **common)
        return W.FloatSlider(min=self.lo, max=self.hi, value=self.default,
                             step=_fine_step(self.lo, self.hi, self.default),
                             readout_format=".3g", **common)

    def __repr__(self) -> str:
        if self.kind == "choice":
            return f"Param({self.name!r}, options={self.options!r}, default={self.default!r})"
        return (f"Param({self.name!r}, {self.lo!r}, {self.hi!r}, default={self.default!r}, "
                f"log={self.log}, steps={self.steps}, kind={self.kind!r})")


# --------------------------------------------------------------------------- helpers
_TYPED_DTYPES = {"f8": "<f8", "f4": "<f4", "i1": "i1", "u1": "u1", "i2": "<i2", "u2": "<u2",
                 "i4": "<i4", "u4": "<u4", "i8": "<i8", "u8": "<u8"}


def _decode(obj):
    """Turn plotly's base64 typed-array dicts (``to_plotly_json`` output) back into numpy.

    Example
    -------
    >>> import plotly.graph_objects as go
    >>> tr = go.Figure(go.Heatmap(z=np.ones((2, 3)))).to_plotly_json()["data"][0]
    >>> _decode(tr)["z"].shape
    (2, 3)
    """
    if isinstance(obj, dict):
        if set(obj) <= {"dtype", "bdata", "shape"} and "bdata" in obj and obj.get("dtype") in _TYPED_DTYPES:
            arr = np.frombuffer(base64.b64decode(obj["bdata"]), dtype=_TYPED_DTYPES[obj["dtype"]])
            if obj.get("shape"):
                arr = arr.reshape([int(s) for s in str(obj["shape"]).split(",")])
            return arr.copy()
        return {k: _decode(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_decode(v) for v in obj]
    return obj


def _typed(arr: np.ndarray, float32: bool):
    """A numeric array as plotly.js's base64 typed-array spec (``{dtype, bdata, shape}``).

    Encoding a figure *dict* (no validation) does not do this for us: plotly's
    JSON encoder would write a list of decimal numbers, 3-5 times larger.
    """
    if arr.dtype.kind == "b":
        return arr.tolist()
    if arr.dtype.kind in "iu":
        info = np.iinfo(np.int32)
        arr = arr.astype("<i4") if (arr.size == 0 or (arr.min() >= info.min and arr.max() <= info.max)) \
            else arr.astype("<f8")
    elif arr.dtype.kind == "f":
        arr = arr.astype("<f8")
        if float32:
            finite = np.abs(arr[np.isfinite(arr)])
            nonzero = finite[finite > 0]
            # float32 keeps ~7 digits; stay inside its normal range so nothing under/overflows
            if nonzero.size == 0 or (nonzero.min() > 1e-30 and nonzero.max() < 1e30):
                arr = arr.astype("<f4")
    else:
        return arr.tolist()
    code = {"<i4": "i4", "<f4": "f4", "<f8": "f8"}[arr.dtype.str]
    spec = {"dtype": code, "bdata": base64.b64encode(np.ascontiguousarray(arr).tobytes()).decode()}
    if arr.ndim > 1:
        spec["shape"] = ", ".join(map(str, arr.shape))
    return spec


def _compact(obj, float32: bool):
    """Numeric arrays and long numeric lists inside *traces* -> typed-array specs.

    Example
    -------
    >>> _compact({"y": np.arange(3.0), "name": "a"}, float32=True)
    {'y': {'dtype': 'f4', 'bdata': 'AAAAAAAAgD8AAABA'}, 'name': 'a'}
    """
    if isinstance(obj, dict):
        return {k: _compact(v, float32) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        if len(obj) >= _TRACE_ARRAY_MIN and all(
                isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
                for v in obj):
            return _typed(np.asarray(obj), float32)
        return [_compact(v, float32) for v in obj]
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind in "iuf" and obj.ndim >= 1:
            return _typed(obj, float32)
        return obj.tolist()
    if isinstance(obj, (np.integer, np.floating)):
        return obj.item()
    return obj


def _as_float_array(a):
    try:
        arr = np.asarray(a, dtype=float).ravel()
    except (TypeError, ValueError):
        return None
    return arr[np.isfinite(arr)]


def _update_extent(ext: dict, key: str, values, log: bool):
    arr = _as_float_array(values)
    if arr is None or arr.size == 0:
        return
    if log:
        arr = arr[arr > 0]
        if arr.size == 0:
            return
        arr = np.log10(arr)
    lo, hi = float(arr.min()), float(arr.max())
    old = ext.get(key)
    ext[key] = (lo, hi) if old is None else (min(old[0], lo), max(old[1], hi))


_AXIS_KEY = re.compile(r"^[xy]axis[0-9]*$")


def _axis_name(ref: str, letter: str) -> str:
    suffix = ref[1:] if ref and len(ref) > 1 else ""
    return f"{letter}axis{suffix}"


def _union_ranges(frames: list[dict], base_layout: dict) -> dict:
    """Layout patch fixing every cartesian axis (and colour scale) to the grid's union."""
    ext: dict[str, tuple[float, float]] = {}
    zext: dict[tuple, tuple[float, float]] = {}
    for fig in frames:
        for tr in fig["data"]:
            ttype = tr.get("type", "scatter")
            if ttype not in _CARTESIAN:
                continue
            xa = _axis_name(tr.get("xaxis", "x"), "x")
            ya = _axis_name(tr.get("yaxis", "y"), "y")
            xlog = base_layout.get(xa, {}).get("type") == "log"
            ylog = base_layout.get(ya, {}).get("type") == "log"
            for ax, key, log in ((xa, "x", xlog), (ya, "y", ylog)):
                if key in tr and tr[key] is not None:
                    vals = _as_float_array(tr[key])
                    if vals is None:
                        continue  # categorical axis
                    _update_extent(ext, ax, vals, log)
                    err = tr.get(f"error_{key}") or {}
                    if err.get("visible", True) and err.get("array") is not None:
                        e = np.asarray(err["array"], dtype=float).ravel()
                        em = np.asarray(err.get("arrayminus", e), dtype=float).ravel()
                        if e.shape == vals.shape == em.shape:
                            _update_extent(ext, ax, vals + e, log)
                            _update_extent(ext, ax, vals - em, log)
            if ttype == "bar":
                horizontal = tr.get("orientation") == "h"
                ax, log = (xa, xlog) if horizontal else (ya, ylog)
                if not log:
                    _update_extent(ext, ax, [0.0], False)
            if "z" in tr and ttype in ("heatmap", "contour", "histogram2d", "histogram2dcontour"):
                if tr.get("zmin") is None and tr.get("zmax") is None:
                    _update_extent(zext, ("z", tr.get("coloraxis")), tr["z"], False)
    patch: dict[str, Any] = {}
    for ax, (lo, hi) in ext.items():
        if base_layout.get(ax, {}).get("range") is not None or \
                base_layout.get(ax, {}).get("autorange") not in (None, True):
            continue  # the author fixed or reversed this axis
        pad = 0.04 * (hi - lo) if hi > lo else (0.5 if lo == 0 else 0.1 * abs(lo))
        patch[ax] = {"range": [lo - pad, hi + pad], "autorange": False}
    for (_, coloraxis), (lo, hi) in zext.items():
        if coloraxis:
            patch.setdefault(coloraxis, {}).update({"cmin": lo, "cmax": hi})
        else:
            patch["_z"] = (lo, hi)
    return patch


def _apply_z(fig: dict, patch: dict) -> None:
    if "_z" not in patch:
        return
    lo, hi = patch["_z"]
    for tr in fig["data"]:
        if "z" in tr and not tr.get("coloraxis") and tr.get("zmin") is None:
            tr["zmin"], tr["zmax"] = lo, hi


def _layout_patch(patch: dict) -> dict:
    return {k: v for k, v in patch.items() if k != "_z"}


_PLACE_SCRIPT = """
(function () {
  var gd = document.getElementById('{plot_id}');
  if (!gd || !window.Plotly || !gd._fullLayout) { return; }
  // Put the sliders under the lowest thing drawn below the plot area.
  var fl = gd._fullLayout, svg = gd.querySelector('svg.main-svg');
  if (!svg || !fl.sliders || !fl.sliders.length) { return; }
  var origin = svg.getBoundingClientRect().top, bottom = fl._size.t + fl._size.h, lowest = bottom;
  gd.querySelectorAll('g.legend, g.xaxislayer-above, g[class*="xtitle"], g.annotation').forEach(
    function (el) {
      var r = el.getBoundingClientRect();
      if (r.height > 0 && r.top - origin >= bottom - 2) { lowest = Math.max(lowest, r.bottom - origin); }
    });
  var gap = Math.ceil(lowest - bottom) + 12, update = {}, changed = false;
  fl.sliders.forEach(function (s, k) {
    var want = gap + k * BLOCK;
    if (Math.abs(((s.pad || {}).t || 0) - want) > 2) { update['sliders[' + k + '].pad.t'] = want; changed = true; }
  });
  if (changed) { Plotly.relayout(gd, update); }
})();
""".replace("BLOCK", str(_SLIDER_BLOCK))

_COMBINE_SCRIPT = """
(function () {
  var gd = document.getElementById('{plot_id}');
  if (!gd || !window.Plotly || gd.__tanbiasSliders) { return; }
  gd.__tanbiasSliders = true;
  // Combine every slider's position into the name of the precomputed frame.
  gd.on('plotly_sliderchange', function (e) {
    // gd.layout.sliders holds every slider's position; the event's own slider
    // object (a copy, not gd._fullLayout's) is the freshest for the one moved.
    var idx = (gd.layout.sliders || []).map(function (s) { return s.active || 0; });
    if (e && e.slider && typeof e.slider._index === 'number') { idx[e.slider._index] = e.slider.active; }
    var key = idx.join('-');
    var done = Plotly.animate(gd, [key], {mode: 'immediate', frame: {duration: 0, redraw: true},
                                          transition: {duration: 0}});
    // a newer slider move interrupts this animation, which rejects its promise
    if (done && done.catch) { done.catch(function () {}); }
  });
})();
"""


# --------------------------------------------------------------------------- live view
class LiveView:
    """The live rendering: sliders + a FigureWidget updated in place + caption.

    Attributes
    ----------
    box : ipywidgets.VBox
        What is displayed.
    sliders : dict[str, ipywidgets.Widget]
        One control per parameter, by name.
    figure : plotly.graph_objects.FigureWidget
        The plot; its traces are updated in place on every slider move.
    n_updates : int
        How many updates ran (a test hook).
    """

    def __init__(self, interactive: "Interactive"):
        import ipywidgets as W
        import plotly.graph_objects as go

        self.interactive = interactive
        self.sliders = {p.name: p.widget() for p in interactive.params}
        values = {p.name: p.default for p in interactive.params}
        fig = interactive._figure_dict(values)
        if interactive.fixed_ranges:
            patch = interactive._ranges()
            fig["layout"] = _deep_merge(fig["layout"], _layout_patch(patch))
            _apply_z(fig, patch)
        self.figure = go.FigureWidget(fig)
        self.caption = W.HTML(f'<p class="tanbias-caption"><em>{interactive.caption}</em></p>'
                              if interactive.caption else "")
        self.error = W.HTML("")
        self.n_updates = 0
        self.last_timing: dict = {}
        for slider in self.sliders.values():
            slider.observe(self._on_change, names="value")
        self.box = W.VBox(list(self.sliders.values()) + [self.figure, self.error, self.caption])

    def values(self) -> dict:
        return {name: s.value for name, s in self.sliders.items()}

    def _on_change(self, _change=None):
        try:
            self.update(**self.values())
            self.error.value = ""
        except Exception as exc:  # show the error under the plot, keep the widget alive
            self.error.value = f'<pre style="color:{ERROR_COLOR}">{type(exc).__name__}: {exc}</pre>'
            raise

    def update(self, **values) -> None:
        """Recompute at ``values`` and patch the FigureWidget's traces in place.

        ``self.last_timing`` then holds the seconds spent in ``compute``, in
        ``figure`` and in the widget update.
        """
        timing: dict = {}
        fig = self.interactive._figure_dict(values, timing)
        t0 = time.perf_counter()
        fw = self.figure
        new = fig["data"]
        layout = fig.get("layout", {})
        with fw.batch_update():
            if len(new) == len(fw.data) and all(
                    t.get("type", "scatter") == o.type for t, o in zip(new, fw.data)):
                for old, tr in zip(fw.data, new):
                    old.update({k: v for k, v in tr.items() if k not in ("type", "uid")},
                               overwrite=True)
            else:  # the trace list changed shape: replace it (not in place, but correct)
                fw.data = []
                fw.add_traces(new)
            for key in ("title", "annotations", "shapes"):
                if key in layout:
                    fw.layout[key] = layout[key]
        timing["widget"] = time.perf_counter() - t0
        self.last_timing = timing
        self.n_updates += 1

    def _repr_mimebundle_(self, include=None, exclude=None):
        return self.box._repr_mimebundle_(include=include, exclude=exclude)


def _deep_merge(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = _deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


# --------------------------------------------------------------------------- Interactive
class Interactive:
    """A figure with parameters: live sliders in Jupyter, plotly sliders in the book.

    Parameters
    ----------
    params : sequence of Param
        The parameters, one slider each (distinct names). Empty: one fixed figure (a
        figure whose only choice has one option, e.g. one model where there could be several).
    compute : callable
        ``compute(**values) -> data``: the numbers only (dict, arrays), no plotting.
    figure : callable
        ``figure(data, **values) -> plotly.graph_objects.Figure`` with a title,
        axis titles and a legend when there are several traces. It must return
        the same number and types of traces for every parameter value.
    title : str
        Figure title, used when ``figure`` sets none.
    caption : str
        One or two sentences shown under the figure: what to look at.
    name : str, optional
        Identifier used by the benchmark; defaults to ``title``.
    fixed_ranges : bool
        Fix every axis to the union of the data over the grid (default) so a
        slider move never rescales. Set False to let plotly autoscale. An axis whose
        range ``figure`` sets itself keeps that range, value by value: each frame
        carries it (a figure that fits its y axis to each reading).
    float32 : bool
        Send static data as float32 (half the bytes).
    budget_bytes : int
        Warn (:class:`FigureBudgetWarning`) when the static figure's JSON is
        larger; above 2 MB it is an error (a page must stay under 2 MB).
    height : int, optional
        Plot height in px (sliders are added below it in the static figure).

    Raises
    ------
    ParameterError
        Duplicate parameter names, or ``compute`` does not accept them.

    Example
    -------
    >>> import numpy as np, plotly.graph_objects as go
    >>> demo = Interactive(
    ...     params=[Param("a", "slope a", 0.5, 2.0, default=1.0, steps=4)],
    ...     compute=lambda a: {"x": np.linspace(0, 1, 5), "y": a * np.linspace(0, 1, 5)},
    ...     figure=lambda data, a: go.Figure(go.Scatter(x=data["x"], y=data["y"])),
    ...     title="A line", caption="Steeper as a grows.")
    >>> float(demo.compute(a=2.0)["y"][-1])
    2.0
    >>> demo.compute(a=3.0)
    Traceback (most recent call last):
    ...
    tanbias.errors.ParameterError: a=3.0 is out of range: valid range is [0.5, 2]. ...
    >>> fig = demo.static_dict()
    >>> len(fig["frames"]), fig["layout"]["sliders"][0]["active"]
    (4, 1)
    """

    def __init__(self, params: Sequence[Param], compute: Callable[..., Any],
                 figure: Callable[..., Any], title: str = "", caption: str = "", *,
                 name: str | None = None, fixed_ranges: bool = True, float32: bool = True,
                 budget_bytes: int = DEFAULT_BUDGET, height: int | None = None,
                 register: bool = True):
        params = list(params)
        if not all(isinstance(p, Param) for p in params):
            raise ParameterError(
                f"params={params!r} is not allowed: valid range is a list of Param. "
                f"Build each slider with Param(name, label, lo, hi, ...).")
        names = [p.name for p in params]
        if len(set(names)) != len(names):
            raise ParameterError(
                f"params={names!r} is not allowed: valid range is distinct names. "
                f"Rename the duplicated parameter.")
        for label, fn in (("compute", compute), ("figure", figure)):
            if not callable(fn):
                raise ParameterError(f"{label}={fn!r} is not callable: valid range is functions. "
                                     f"Pass a function (a lambda is fine).")
        try:
            inspect.signature(compute).bind(**{p.name: p.default for p in params})
        except TypeError as exc:
            raise ParameterError(
                f"compute={getattr(compute, '__name__', compute)!r} does not accept the "
                f"parameters {names}: {exc}. Give compute one keyword argument per Param.") from None
        except ValueError:
            pass  # builtins without a signature: trust the caller
        self.params = params
        self._compute = compute
        self._figure = figure
        self.title = str(title)
        self.caption = str(caption)
        self.name = name or self.title or f"interactive-{len(REGISTRY)}"
        self.fixed_ranges = bool(fixed_ranges)
        self.float32 = bool(float32)
        self.budget_bytes = int(budget_bytes)
        self.height = height
        self._grid_cache: dict[tuple, dict] | None = None
        self._static_cache: dict | None = None
        self._ranges_cache: dict | None = None
        self.last_view: LiveView | None = None
        if register:
            REGISTRY.append(self)

    # -- pure parts -----------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        """Grid size per parameter; the static figure has ``prod(shape)`` frames."""
        return tuple(p.steps for p in self.params)

    @property
    def defaults(self) -> dict:
        return {p.name: p.default for p in self.params}

    def _bind(self, args, values) -> dict:
        if len(args) > len(self.params):
            raise ParameterError(
                f"args={args!r} is not allowed: valid range is at most {len(self.params)} "
                f"positional values ({', '.join(p.name for p in self.params)}).")
        merged = dict(self.defaults)
        merged.update({p.name: a for p, a in zip(self.params, args)})
        unknown = set(values) - set(merged)
        if unknown:
            raise ParameterError(
                f"{sorted(unknown)[0]} is not allowed: valid range is the parameters "
                f"{[p.name for p in self.params]}. Check the spelling.")
        merged.update(values)
        return {p.name: p.validate(merged[p.name]) for p in self.params}

    def compute(self, *args, **values):
        """Run ``compute`` at validated values (missing ones take their default).

        Raises
        ------
        ParameterError
            A value outside its parameter's range, naming parameter, value and range.
        """
        return self._compute(**self._bind(args, values))

    def make_figure(self, *args, **values):
        """The :class:`plotly.graph_objects.Figure` at ``values`` (no sliders)."""
        import plotly.graph_objects as go

        return go.Figure(self._figure_dict(self._bind(args, values)))

    def _figure_dict(self, values: dict, timing: dict | None = None) -> dict:
        values = self._bind((), values)
        t0 = time.perf_counter()
        data = self._compute(**values)
        t1 = time.perf_counter()
        fig = self._figure(data, **values)
        if hasattr(fig, "_data") and hasattr(fig, "_layout"):
            # the figure's validated values as they are (numpy arrays): to_plotly_json
            # would base64-encode every array, only for us to decode it again
            fig = {"data": fig._data, "layout": fig._layout}
        elif hasattr(fig, "to_plotly_json"):
            fig = _decode(fig.to_plotly_json())
        if timing is not None:
            timing["compute"] = t1 - t0
            timing["figure"] = time.perf_counter() - t1
        fig = {"data": [dict(t) for t in fig.get("data", [])],
               "layout": dict(fig.get("layout", {}))}
        title = fig["layout"].get("title") or {}
        if isinstance(title, str):
            title = {"text": title}
        if self.title and not title.get("text"):
            title = {**title, "text": self.title}
        if title:
            fig["layout"]["title"] = title
        if self.height is not None:
            fig["layout"]["height"] = self.height
        return fig

    # -- static ---------------------------------------------------------------
    def _grid(self) -> dict[tuple, dict]:
        if self._grid_cache is None:
            grid = {}
            for idx in itertools.product(*(range(n) for n in self.shape)):
                values = {p.name: p.grid[i] for p, i in zip(self.params, idx)}
                grid[idx] = self._figure_dict(values)
            self._check_consistent(grid)
            self._grid_cache = grid
        return self._grid_cache

    def _check_consistent(self, grid: dict[tuple, dict]) -> None:
        ref_idx = tuple(p.default_index for p in self.params)
        ref = [t.get("type", "scatter") for t in grid[ref_idx]["data"]]
        for idx, fig in grid.items():
            types = [t.get("type", "scatter") for t in fig["data"]]
            if types != ref:
                where = ", ".join(f"{p.name}={p.grid[i]!r}" for p, i in zip(self.params, idx))
                raise ParameterError(
                    f"figure at {where} has traces {types}: valid range is the same traces "
                    f"as at the defaults ({ref}). Return the same traces for every value "
                    f"(an empty trace is fine).")

    def _ranges(self) -> dict:
        if self._ranges_cache is None:
            grid = self._grid()
            ref = grid[tuple(p.default_index for p in self.params)]
            self._ranges_cache = _union_ranges(list(grid.values()), ref["layout"])
        return self._ranges_cache

    @staticmethod
    def frame_name(idx: Sequence[int]) -> str:
        """Name of the frame at grid index ``idx`` (e.g. ``(2, 0) -> '2-0'``)."""
        return "-".join(str(int(i)) for i in idx)

    def static_dict(self) -> dict:
        """The static figure as a plotly dict: base view at the defaults, frames, sliders.

        Cached: the grid is computed once.
        """
        if self._static_cache is not None:
            return self._static_cache
        grid = self._grid()
        default_idx = tuple(p.default_index for p in self.params)
        patch = self._ranges() if self.fixed_ranges else {}
        layout = _deep_merge(copy.deepcopy(grid[default_idx]["layout"]), _layout_patch(patch))

        # Sliders hang under the plot area (y=0) at a pixel offset (pad.t), so
        # plotly's automatic margins cannot shift them onto the axis; the page
        # script then moves them below whatever really sits there (tick labels,
        # axis title, a legend placed under the plot).
        n = len(self.params)
        plot_h = int(layout.get("height") or 420)
        margin = dict(layout.get("margin") or {})
        layout["height"] = plot_h + n * _SLIDER_BLOCK
        layout["margin"] = {**margin, "b": int(margin.get("b", 60)) + n * _SLIDER_BLOCK}
        sliders = []
        for k, p in enumerate(self.params):
            if n == 1:
                steps = [{"label": p.format(v), "method": "animate",
                          "args": [[self.frame_name((i,))],
                                   {"mode": "immediate", "frame": {"duration": 0, "redraw": True},
                                    "transition": {"duration": 0}}]}
                         for i, v in enumerate(p.grid)]
            else:
                steps = [{"label": p.format(v), "method": "skip", "args": [None]}
                         for v in p.grid]
            sliders.append({
                "name": p.name, "active": p.default_index, "steps": steps,
                "currentvalue": {"prefix": f"{p.label} = ", "visible": True, "xanchor": "left"},
                "x": 0.0, "len": 1.0, "xanchor": "left", "y": 0.0, "yanchor": "top",
                "pad": {"t": _SLIDER_GAP + k * _SLIDER_BLOCK, "b": 0, "l": 0, "r": 0},
                "transition": {"duration": 0},
            })
        layout["sliders"] = sliders

        frames = []
        for idx, fig in grid.items():
            data = [dict(t) for t in fig["data"]]
            _apply_z({"data": data}, patch)
            frame_layout = {key: fig["layout"][key] for key in ("title", "annotations", "shapes")
                            if key in fig["layout"]}
            # an axis the figure fits to each value itself (its range set by the figure) follows
            # the frame, where the others keep the grid's union
            frame_layout.update({key: {"range": list(ax["range"]), "autorange": False}
                                 for key, ax in fig["layout"].items()
                                 if _AXIS_KEY.match(key) and isinstance(ax, dict) and ax.get("range") is not None})
            frames.append({"name": self.frame_name(idx), "data": data,
                           "traces": list(range(len(data))), "layout": frame_layout})
        data = [dict(t) for t in grid[default_idx]["data"]]
        _apply_z({"data": data}, patch)
        for frame in frames:
            frame["data"] = _compact(frame["data"], self.float32)
        out = {"data": _compact(data, self.float32), "layout": layout, "frames": frames}
        self._static_cache = out
        return out

    def static_figure(self):
        """:meth:`static_dict` as a :class:`plotly.graph_objects.Figure`."""
        import plotly.graph_objects as go

        return go.Figure(self.static_dict())

    def post_script(self) -> str:
        """JavaScript run after the plot exists: places the sliders under what is
        drawn below the plot and, with several parameters, combines them."""
        return _PLACE_SCRIPT + (_COMBINE_SCRIPT if len(self.params) > 1 else "")

    def to_html(self, div_id: str | None = None) -> str:
        """Self-contained HTML of the static figure + caption (plotly.js not included).

        Warns :class:`FigureBudgetWarning` above ``budget_bytes``; raises ValueError
        above 2 MB of figure JSON.
        """
        fig = self.static_dict()
        import plotly.io as pio

        size = len(pio.to_json(fig, validate=False))
        self.static_bytes = size
        if size > HARD_LIMIT:
            raise ValueError(
                f"{self.name!r}: static figure is {size / 1e6:.1f} MB of JSON: valid range is "
                f"<= {HARD_LIMIT / 1e6:.0f} MB per page. Use fewer steps or fewer points.")
        if size > self.budget_bytes:
            warnings.warn(
                f"{self.name!r}: static figure is {size / 1e6:.2f} MB of JSON (budget "
                f"{self.budget_bytes / 1e6:.2f} MB); use fewer steps or points.",
                FigureBudgetWarning, stacklevel=2)
        script = self.post_script()
        html = figure_html(fig, post_script=[script] if script else None, div_id=div_id)
        caption = (f'<p class="tanbias-caption">{self.caption}</p>' if self.caption else "")
        return f'<div class="tanbias-interactive">{html}{caption}</div>'

    # -- live -------------------------------------------------------------------
    def widget(self) -> LiveView:
        """A new live view (sliders + FigureWidget), also kept as ``self.last_view``."""
        self.last_view = LiveView(self)
        return self.last_view

    def update_latency(self, n: int = 50, seed: int = 0) -> dict:
        """Time ``n`` live updates (compute + FigureWidget batch_update) at random values.

        Returns
        -------
        dict
            ``{"name", "n", "median_ms", "p95_ms", "max_ms", "parts_median_ms"}``;
            the parts split the median between ``compute``, ``figure`` (building
            the plotly figure) and ``widget`` (the FigureWidget update).
        """
        n = check_int("n", n, lo=1)
        rng = np.random.default_rng(seed)
        view = LiveView(self)
        times, parts = [], {"compute": [], "figure": [], "widget": []}
        for _ in range(n):
            values = {p.name: p.sample(rng) for p in self.params}
            t0 = time.perf_counter()
            view.update(**values)
            times.append(time.perf_counter() - t0)
            for key in parts:
                parts[key].append(view.last_timing.get(key, 0.0))
        ms = np.asarray(times) * 1e3
        return {"name": self.name, "n": n, "median_ms": float(np.median(ms)),
                "p95_ms": float(np.percentile(ms, 95)), "max_ms": float(ms.max()),
                "parts_median_ms": {k: float(np.median(v) * 1e3) for k, v in parts.items()}}

    # -- display ----------------------------------------------------------------
    def show(self, mode: str | None = None):
        """Display in the resolved mode (see :func:`resolve_mode`); returns the view."""
        mode = resolve_mode(mode)
        if mode == "bench":
            return None
        from IPython.display import HTML, display

        if mode == "live":
            view = self.widget()
            display(view.box)
            return view
        display(HTML(self.to_html()))
        return None

    def _repr_mimebundle_(self, include=None, exclude=None):
        mode = resolve_mode()
        if mode == "live":
            return self.widget()._repr_mimebundle_(include=include, exclude=exclude)
        if mode == "bench":
            return {"text/plain": repr(self)}
        return {"text/html": self.to_html(), "text/plain": repr(self)}

    def __repr__(self) -> str:
        return (f"Interactive({self.name!r}, params=[{', '.join(p.name for p in self.params)}], "
                f"grid={'x'.join(map(str, self.shape))})")


def _json_default(obj):
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, (np.integer, np.floating)):
        return obj.item()
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")
