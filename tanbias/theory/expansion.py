"""The local expansion of a submanifold at a point: tangent and normal parts (chapter 1).

A point at geodesic distance ``t`` from ``mu`` in the unit direction ``u`` is

    y = exp_mu(t u) = mu + t u + (t^2 / 2) II(u, u) + O(t^3),

so its displacement ``y - mu`` has a tangent part ``v = t u + O(t^3)`` and a
normal part ``n = (t^2 / 2) II(u, u) + O(t^3)``: seen at scale ``t`` the
manifold is its tangent space, up to a relative error of order ``t``. This
module measures both parts on exact samples (:meth:`~tanbias.theory.manifolds.Submanifold.sample_at_radius`),
fits their scaling with ``t`` and gives the numbers of chapter 1's side view
(drawn by :mod:`tanbias.figures.expansion`).
"""

from __future__ import annotations

import math

import numpy as np

from tanbias._checks import check_array, check_int, check_real, check_rng
from tanbias.errors import ParameterError
from tanbias.theory.manifolds import check_manifold
from tanbias.stats import Check, check_close, check_in_interval, loglog_slope

__all__ = ["mean_square_ii", "local_expansion", "expansion_scaling", "side_view_data",
           "normal_ratio", "scaling_checks"]


def mean_square_ii(manifold) -> float:
    """``E ||II(u, u)||^2`` for ``u`` uniform on the unit sphere of ``T_mu``, exactly.

    For a symmetric ``A``, ``E[(u^T A u)^2] = (2 tr(A^2) + tr(A)^2) / (d (d + 2))``;
    sum over the normal directions.

    Example
    -------
    >>> from tanbias.theory.manifolds import Cylinder
    >>> round(mean_square_ii(Cylinder(R=1.0)), 12)      # E cos^4 = 3/8
    0.375
    """
    return check_manifold(manifold).mean_square_ii()


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
    PrecisionLossError
        ``t`` below the manifold's precision floor
        (:meth:`~tanbias.theory.manifolds.Submanifold.normal_floor`), where the normal part
        is float64 rounding of ``y - mu``.

    Example
    -------
    >>> from tanbias.theory.manifolds import Sphere
    >>> e = local_expansion(Sphere(2, R=1.0, D=3), 0.1, 5, 0)
    >>> bool(np.allclose(np.linalg.norm(e["normal"], axis=1), 1 - np.cos(0.1)))
    True
    >>> bool(np.max(e["normal_remainder"]) < 0.1 ** 4 / 20)        # t^4 / 24 on a unit sphere
    True
    """
    manifold = check_manifold(manifold)
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
    >>> from tanbias.theory.manifolds import Cylinder
    >>> sc = expansion_scaling(Cylinder(R=1.0), np.geomspace(0.01, 0.1, 4), n=200)
    >>> round(sc["slope_normal"].slope, 2), round(sc["slope_tangent"].slope, 2)
    (2.0, 1.0)
    """
    manifold = check_manifold(manifold)
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
    >>> from tanbias.theory.manifolds import Sphere
    >>> v = side_view_data(Sphere(2, R=1.0, D=3), 0.2, n=10)
    >>> bool(np.allclose(v["y"], (1 - np.cos(0.2)) / 0.2))
    True
    """
    manifold = check_manifold(manifold)
    e = local_expansion(manifold, t, n, rng)
    phi = np.linspace(0.0, 2 * math.pi, check_int("n_curve", n_curve, lo=3))
    u = np.zeros((phi.size, manifold.d))
    u[:, 0] = np.cos(phi)
    if manifold.d > 1:
        u[:, 1] = np.sin(phi)
    ii = manifold.second_fundamental_form(u)[:, 0]
    return dict(x=e["tangent"][:, 0] / t, y=e["normal"][:, 0] / t, curve_x=u[:, 0],
                curve_y=0.5 * t * ii, t=float(t))


def normal_ratio(manifold, t, n=2000, rng=0) -> float:
    """RMS normal part over the RMS of its prediction ``t^2 II(u, u) / 2``, at radius ``t``.

    Both are measured on the same directions, so there is no Monte Carlo noise:
    the ratio tends to 1 as ``t -> 0``, with an error of order ``t^2``.

    Parameters
    ----------
    manifold : Submanifold
        Curved somewhere (the prediction must not vanish).
    t : float in (0, patch_radius]
    n : int >= 1
    rng : numpy.random.Generator or int seed

    Returns
    -------
    float

    Raises
    ------
    PrecisionLossError
        ``t`` below the manifold's precision floor: there the ratio would be rounding
        noise (about 2 at a tenth of the floor on the unit cylinder, not 1).

    Example
    -------
    >>> from tanbias.theory.manifolds import Sphere
    >>> round(normal_ratio(Sphere(2, R=1.0, D=3), 0.01, n=10), 6)        # (1 - cos t) / (t^2 / 2)
    1.0
    """
    e = local_expansion(manifold, t, n, rng)
    rms = lambda x: np.sqrt(np.mean(np.sum(x ** 2, axis=1)))  # noqa: E731
    return float(rms(e["normal"]) / rms(e["predicted_normal"]))


def scaling_checks(name, scaling) -> list[Check]:
    """Chapter 1's checks of :func:`expansion_scaling`: normal part slope 2 (±0.02),
    tangent part slope 1 (±0.01), remainder slope in ``[2.9, 4.1]`` (order 3 or 4).

    Parameters
    ----------
    name : str
        The manifold's name, for the labels.
    scaling : dict
        Output of :func:`expansion_scaling`.

    Returns
    -------
    list[Check]

    Example
    -------
    >>> from tanbias.theory.manifolds import Cylinder
    >>> sc = expansion_scaling(Cylinder(R=1.0), np.geomspace(0.01, 0.2, 6), n=200)
    >>> [c.passed for c in scaling_checks("cylinder", sc)]
    [True, True, True]
    """
    return [check_close(f"{name}: slope of ||n|| vs t", scaling["slope_normal"].slope, 2.0,
                        atol=0.02),
            check_close(f"{name}: slope of ||v|| vs t", scaling["slope_tangent"].slope, 1.0,
                        atol=0.01),
            check_in_interval(f"{name}: slope of the remainder",
                              scaling["slope_remainder"].slope, 2.9, 4.1)]

