"""Figures of chapter 2: radius laws at equal moment ratio ``eta_g``.

The numbers come from :mod:`tanbias.theory.radial` (:func:`~tanbias.theory.radial.radius_density`);
this module only draws them.
"""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from tanbias._checks import check_int, check_real
from tanbias.figures.interactive import Interactive, Param
from tanbias.theory.radial import radius_density
from tanbias.figures import COLORS, INK, frozen_layout

__all__ = ["radial_laws_figure", "radial_laws_interactive"]

_D_HINT = "Pass the intrinsic dimension d of the manifold (a whole number >= 1)."


@frozen_layout
def _radial_layout() -> go.Figure:
    """Base layout (with the book's template) of the radial-law figure, built once."""
    fig = go.Figure(layout=dict(
        xaxis=dict(type="log", exponentformat="power",
                   title=dict(text="radius r = ‖y − μ‖ [curvature radii]")),
        yaxis=dict(title=dict(text="density per unit of ln r:  r·p(r)")),
        # legend above the plot: below it is where the interactive puts its sliders
        legend=dict(orientation="h", x=0.0, y=1.03, yanchor="bottom"), margin=dict(t=140),
        height=510))
    return fig


def _radial_laws_dict(families, eta_g, d, n_points=120) -> dict:
    lo, hi = math.sqrt(eta_g) / 40, math.sqrt(eta_g) * 8
    r = np.geomspace(lo, hi, n_points)
    traces = []
    peak = 0.0
    for i, (name, base) in enumerate(families.items()):
        law = base.with_eta(eta_g, d)
        y = r * radius_density(law, r, d)          # density per unit of log r
        peak = max(peak, float(np.max(y)))
        traces.append(dict(type="scatter", x=r, y=y, mode="lines", name=name,
                           line=dict(color=COLORS[i % len(COLORS)], width=2.5)))
    rms = math.sqrt(eta_g)
    traces.append(dict(type="scatter", x=[rms, rms], y=[0.0, 1.05 * peak], mode="lines",
                       name="RMS radius √η<sub>g</sub>", line=dict(color=INK, dash="dash")))
    layout = _radial_layout()
    layout["title"] = dict(y=0.985, yanchor="top",
                           text=f"Radius of a sample: four laws with η<sub>g</sub> = {eta_g:.3g}, "
                                f"d = {d}")
    return dict(data=traces, layout=layout)


def radial_laws_figure(families, eta_g, d) -> go.Figure:
    """Radius densities of several families rescaled to the same ``eta_g``.

    Parameters
    ----------
    families : dict[str, RadialLaw]
        Name -> law (any scale; each is rescaled with :meth:`~tanbias.theory.radial.RadialLaw.with_eta`).
    eta_g : float > 0
    d : int >= 1

    Returns
    -------
    plotly.graph_objects.Figure

    Example
    -------
    >>> from tanbias.theory.radial import Gaussian, Laplace
    >>> fig = radial_laws_figure({"Gaussian": Gaussian(1.0), "Laplace": Laplace(1.0)}, 0.01, 2)
    >>> [t.name for t in fig.data]
    ['Gaussian', 'Laplace', 'RMS radius √η<sub>g</sub>']
    """
    eta_g = check_real("eta_g", eta_g, lo=0, hint="Pass a positive mean squared radius.")
    d = check_int("d", d, lo=1, hint=_D_HINT)
    return go.Figure(_radial_laws_dict(families, eta_g, d))


def radial_laws_interactive(families, etas, ds) -> Interactive:
    """The chapter-2 interactive: sliders ``eta_g`` (log) and the dimension ``d``.

    Parameters
    ----------
    families : dict[str, RadialLaw]
        Laws whose moment ``m_(d+1)`` is finite for every ``d`` in ``ds``.
    etas : sequence of float
        Static grid of ``eta_g``.
    ds : sequence of int
        Static grid of dimensions.

    Returns
    -------
    tanbias.figures.interactive.Interactive
    """
    etas = tuple(float(e) for e in etas)
    ds = tuple(int(d) for d in ds)
    for name, law in families.items():
        law.eta_g(max(ds))          # fail early, with the law's own message, if eta_g diverges
    return Interactive(
        params=[Param("eta_g", "η<sub>g</sub>", etas[0], etas[-1], default=etas[len(etas) // 2],
                      log=True, values=etas),
                Param("d", "intrinsic dimension d", ds[0], ds[-1], default=ds[1], values=ds,
                      integer=True)],
        compute=lambda eta_g, d: dict(eta_g=eta_g, d=d),
        figure=lambda data, eta_g, d: _radial_laws_dict(families, eta_g, d),
        title="Radial laws at equal η<sub>g</sub>",
        caption="The radius of a sample has density g(r) r<sup>d−1</sup> / m<sub>d−1</sub>; "
                "η<sub>g</sub> = E[r²] fixes its scale (dashed line). Lower η<sub>g</sub>: "
                "every law slides towards μ. Raise d: the radius piles up near √η<sub>g</sub> "
                "(a thin shell), whatever the law; the laws differ in their tails.",
        name="ch2-radial-laws", height=510)
