"""The local expansion of a submanifold at a point: tangent and normal parts (chapter 1).

A point at geodesic distance ``t`` from ``mu`` in the unit direction ``u`` is

    y = exp_mu(t u) = mu + t u + (t^2 / 2) II(u, u) + O(t^3),

so its displacement ``y - mu`` has a tangent part ``v = t u + O(t^3)`` and a
normal part ``n = (t^2 / 2) II(u, u) + O(t^3)``: seen at scale ``t`` the
manifold is its tangent space, up to a relative error of order ``t``. This
module measures both parts on exact samples (:meth:`~tanbias.manifolds.Submanifold.sample_at_radius`),
fits their scaling with ``t``, and builds the figures of chapter 1.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ._checks import check_array, check_instance, check_int, check_real, check_rng
from .errors import ParameterError
from ._figcache import frozen_layout
from .manifolds import Submanifold
from .stats import loglog_slope

__all__ = ["mean_square_ii", "local_expansion", "expansion_scaling", "side_view_data",
           "side_view_figure", "expansion_interactive"]


def _check_manifold(manifold) -> Submanifold:
    return check_instance("manifold", manifold, Submanifold,
                          hint="Pass e.g. tanbias.manifolds.Cylinder(R=1.0).")


def mean_square_ii(manifold) -> float:
    """``E ||II(u, u)||^2`` for ``u`` uniform on the unit sphere of ``T_mu``, exactly.

    For a symmetric ``A``, ``E[(u^T A u)^2] = (2 tr(A^2) + tr(A)^2) / (d (d + 2))``;
    sum over the normal directions.

    Example
    -------
    >>> from tanbias.manifolds import Cylinder
    >>> round(mean_square_ii(Cylinder(R=1.0)), 12)      # E cos^4 = 3/8
    0.375
    """
    manifold = _check_manifold(manifold)
    A = manifold.ii_matrices()
    d = manifold.d
    tr2 = np.einsum("jab,jba->", A, A)
    tr_sq = np.sum(np.einsum("jaa->j", A) ** 2)
    return float((2 * tr2 + tr_sq) / (d * (d + 2)))


def local_expansion(manifold, t, n, rng) -> dict:
    """Tangent and normal parts of ``n`` points at geodesic radius exactly ``t``.

    Parameters
    ----------
    manifold : Submanifold
    t : float in (0, patch_radius]
    n : int >= 1
    rng : numpy.random.Generator or int seed

    Returns
    -------
    dict
        ``u`` (n, d) directions; ``tangent`` (n, d) and ``normal`` (n, D-d)
        coordinates of ``y - mu``; ``predicted_normal`` (n, D-d)
        ``= t^2 II(u, u) / 2``; ``tangent_remainder`` and ``normal_remainder``
        (n,): ``||v - t u||`` and ``||n - t^2 II(u, u) / 2||``.

    Raises
    ------
    ParameterError
        Bad ``t`` (outside the patch), ``n`` or ``rng``.

    Example
    -------
    >>> from tanbias.manifolds import Sphere
    >>> e = local_expansion(Sphere(2, R=1.0, D=3), 0.1, 5, 0)
    >>> bool(np.allclose(np.linalg.norm(e["normal"], axis=1), 1 - np.cos(0.1)))
    True
    >>> bool(np.max(e["normal_remainder"]) < 0.1 ** 4 / 20)        # t^4 / 24 on a unit sphere
    True
    """
    manifold = _check_manifold(manifold)
    s = manifold.sample_at_radius(t, n, rng)
    pred = 0.5 * s.r[:, None] ** 2 * manifold.second_fundamental_form(s.u)
    return dict(u=s.u, tangent=s.tangent, normal=s.normal, predicted_normal=pred,
                tangent_remainder=np.linalg.norm(s.tangent - s.r[:, None] * s.u, axis=1),
                normal_remainder=np.linalg.norm(s.normal - pred, axis=1), t=float(s.r[0]))


def expansion_scaling(manifold, ts, n=2000, rng=0) -> dict:
    """RMS tangent and normal parts against the radius, with their log-log slopes.

    Parameters
    ----------
    manifold : Submanifold
    ts : array_like, shape (m,), m >= 3
        Geodesic radii (inside the patch).
    n : int
        Points per radius.
    rng : numpy.random.Generator or int seed

    Returns
    -------
    dict
        Arrays over ``t``: ``rms_tangent``, ``rms_normal``, ``max_normal_remainder``,
        ``predicted_rms_normal`` (``t^2 sqrt(E||II(u,u)||^2) / 2``); fits
        ``slope_tangent``, ``slope_normal``, ``slope_remainder``
        (:class:`~tanbias.stats.SlopeFit`); ``constant`` (``rms_normal / t^2`` at
        the smallest radius) and ``predicted_constant`` (``sqrt(E||II||^2) / 2``).

    Example
    -------
    >>> from tanbias.manifolds import Cylinder
    >>> sc = expansion_scaling(Cylinder(R=1.0), np.geomspace(0.01, 0.1, 4), n=200)
    >>> round(sc["slope_normal"].slope, 2), round(sc["slope_tangent"].slope, 2)
    (2.0, 1.0)
    """
    manifold = _check_manifold(manifold)
    ts = check_array("ts", ts, shape=(None,), hint="Pass an array of radii.")
    if ts.size < 3:
        raise ParameterError(f"ts has {ts.size} radii: valid range is [3, inf) radii for a "
                             f"slope. Pass more radii.")
    rng = check_rng(rng)
    rows = [local_expansion(manifold, t, n, rng) for t in ts]
    rms = lambda a: float(np.sqrt(np.mean(np.sum(a ** 2, axis=1))))  # noqa: E731
    rms_t = np.array([rms(r["tangent"]) for r in rows])
    rms_n = np.array([rms(r["normal"]) for r in rows])
    rem = np.array([float(np.max(r["normal_remainder"])) for r in rows])
    c = 0.5 * math.sqrt(mean_square_ii(manifold))
    out = dict(t=ts, rms_tangent=rms_t, rms_normal=rms_n, max_normal_remainder=rem,
               predicted_rms_normal=c * ts ** 2, slope_tangent=loglog_slope(ts, rms_t),
               slope_normal=loglog_slope(ts, rms_n), constant=float(rms_n[0] / ts[0] ** 2),
               predicted_constant=c)
    out["slope_remainder"] = loglog_slope(ts, rem) if np.all(rem > 0) else None
    return out


def side_view_data(manifold, t, n=300, rng=0, n_curve=121) -> dict:
    """Points at radius ``t`` seen side-on, in units of ``t``.

    ``x`` is the first tangent coordinate and ``y`` the first normal coordinate
    of ``y - mu``, both divided by ``t``; ``curve_x, curve_y`` trace the
    prediction ``(u_1, t II(u, u)_1 / 2)`` over the circle of directions
    ``u = (cos phi, sin phi, 0, ...)``.

    Example
    -------
    >>> from tanbias.manifolds import Sphere
    >>> v = side_view_data(Sphere(2, R=1.0, D=3), 0.2, n=10)
    >>> bool(np.allclose(v["y"], (1 - np.cos(0.2)) / 0.2))
    True
    """
    manifold = _check_manifold(manifold)
    e = local_expansion(manifold, t, n, rng)
    phi = np.linspace(0.0, 2 * math.pi, check_int("n_curve", n_curve, lo=3))
    u = np.zeros((phi.size, manifold.d))
    u[:, 0] = np.cos(phi)
    if manifold.d > 1:
        u[:, 1] = np.sin(phi)
    ii = manifold.second_fundamental_form(u)[:, 0]
    return dict(x=e["tangent"][:, 0] / t, y=e["normal"][:, 0] / t, curve_x=u[:, 0],
                curve_y=0.5 * t * ii, t=float(t))


@frozen_layout
def _two_panel_layout() -> go.Figure:
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, column_widths=[0.55, 0.45], horizontal_spacing=0.13,
                        subplot_titles=["side view at scale t (both axes ÷ t)",
                                        "size of each part against t"])
    fig.update_xaxes(title_text="tangent coordinate ÷ t", row=1, col=1)
    fig.update_yaxes(title_text="normal coordinate ÷ t", row=1, col=1)
    fig.update_xaxes(title_text="geodesic radius t [curvature radii]", type="log",
                     exponentformat="power", row=1, col=2)
    fig.update_yaxes(title_text="RMS length [curvature radii]", type="log",
                     exponentformat="power", row=1, col=2)
    # legend above the panels: below them is where the interactive puts its sliders
    fig.update_layout(legend=dict(orientation="h", x=0.0, y=1.12, yanchor="bottom"),
                      margin=dict(t=175), height=560)
    return fig


def _trace(x, y, name, col=1, **style) -> dict:
    axis = "" if col == 1 else str(col)
    return dict(type="scatter", x=np.asarray(x, dtype=np.float64),
                y=np.asarray(y, dtype=np.float64), name=name, xaxis=f"x{axis}",
                yaxis=f"y{axis}", **style)


def _side_view_dict(view, scaling, name) -> dict:
    from .figures import COLORS

    layout = _two_panel_layout()
    layout["title"] = dict(text=f"The {name} at geodesic radius t = {view['t']:.3g}",
                           y=0.985, yanchor="top")
    t = view["t"]
    i = int(np.argmin(np.abs(np.log(scaling["t"] / t))))
    traces = [
        _trace([-1.1, 1.1], [0, 0], "tangent plane", mode="lines",
               line=dict(color="#888", dash="dot", width=1.5)),
        _trace(view["curve_x"], view["curve_y"], "prediction t·II(u,u)/2", mode="lines",
               line=dict(color=COLORS[1], width=2)),
        _trace(view["x"], view["y"], "samples at radius t", mode="markers",
               marker=dict(color=COLORS[0], size=5, opacity=0.7)),
        _trace(scaling["t"], scaling["rms_tangent"], "tangent part ‖v‖ (slope 1)", col=2,
               mode="lines", line=dict(color=COLORS[2], width=2)),
        _trace(scaling["t"], scaling["rms_normal"], "normal part ‖n‖ (slope 2)", col=2,
               mode="lines", line=dict(color=COLORS[0], width=2)),
        _trace([t, t], [scaling["rms_tangent"][i], scaling["rms_normal"][i]], "current t", col=2,
               mode="markers", marker=dict(color=COLORS[7], size=10, symbol="diamond")),
    ]
    return dict(data=traces, layout=layout)


def side_view_figure(view, scaling, name="manifold"):
    """Two panels: the side view of :func:`side_view_data` and the RMS parts of
    :func:`expansion_scaling` on log-log axes, the current ``t`` marked.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    import plotly.graph_objects as go

    return go.Figure(_side_view_dict(view, scaling, name))


def expansion_interactive(manifolds, ts, n=300, seed=0, scaling_ts=None):
    """The chapter-1 interactive: sliders ``t`` (log) and the manifold.

    Parameters
    ----------
    manifolds : dict[str, Submanifold]
        Surfaces by name (the side view uses the first tangent and first normal
        coordinate, where the examples of the book put their curvature).
    ts : sequence of float
        Static grid of radii, inside every patch.
    n : int
        Points per frame.
    seed : int
    scaling_ts : array_like, optional
        Radii of the right panel (default: 25 from ``ts[0] / 2`` to ``ts[-1]``).

    Returns
    -------
    tanbias.interactive.Interactive
    """
    from .interactive import Interactive, Param

    manifolds = dict(manifolds)
    ts = tuple(float(t) for t in ts)
    seed = check_int("seed", seed, lo=0, hint="Pass an integer seed.")
    grid = np.geomspace(ts[0] / 2, ts[-1], 25) if scaling_ts is None else np.asarray(scaling_ts)
    names = tuple(manifolds)

    @functools.lru_cache(maxsize=None)
    def scaling(name):
        return expansion_scaling(manifolds[name], grid, n=400, rng=seed)

    def compute(t, manifold):
        rng = np.random.default_rng([seed, names.index(manifold)])
        return dict(view=side_view_data(manifolds[manifold], t, n, rng), scaling=scaling(manifold),
                    name=manifold)

    return Interactive(
        params=[Param("t", "geodesic radius t", ts[0], ts[-1], default=ts[len(ts) // 2],
                      log=True, values=ts),
                Param("manifold", "surface", options=names)],
        compute=compute,
        figure=lambda data, t, manifold: _side_view_dict(data["view"], data["scaling"],
                                                         data["name"]),
        title="Tangent and normal parts of displacements",
        caption="Left: points at geodesic radius t from μ, seen side-on and magnified by 1/t. "
                "Shrink t: the normal part, of order t² (t after magnification), flattens onto "
                "the tangent plane, following t·II(u,u)/2. Right: the tangent part grows like t, "
                "the normal part like t².",
        name="ch1-local-expansion", height=560)
