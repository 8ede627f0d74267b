"""The geometry toolkit: every object the theory chapters use, computed and checked (the toolkit page).

The page "Geometry toolkit and notation" defines the tangent and normal spaces, the second
fundamental form ``II`` and the shape operator, the Gauss-Weingarten relations, the Gauss
equation, normal coordinates and the injectivity radius, each with a worked example on the
sphere, the cylinder or the saddle of :mod:`tanbias.theory.manifolds`. This module computes
those examples two ways: from ``II`` (the closed forms the chapters use) and from the
exponential map alone (finite differences, volume, distances), so that each identity is
checked rather than assumed:

* :func:`shape_operator`, :func:`principal_curvatures`: ``<S_nu u, w> = <II(u, w), nu>``;
* :func:`geodesic_derivatives`: the first three derivatives of ``gamma(s) = exp(s u)`` by
  finite differences, against ``u``, ``II(u, u)`` and the Gauss-Weingarten prediction
  ``gamma'''(0) = -S_{II(u,u)} u + (normal part)``, whose component along ``u`` is
  ``-||II(u, u)||^2`` (chapter 3's chord expansion);
* :func:`sectional_curvature` (Gauss equation) against :func:`intrinsic_ricci`, read off the
  volume element alone;
* :func:`normal_coordinate_metric` (the Gram matrix of ``d exp`` at ``x``) against
  :func:`metric_expansion`, ``delta_ij - (1/3) R_ikjl x^k x^l`` written through ``II``;
* :func:`injectivity_radius` (closed forms) and :func:`antipodal_gap` (where two geodesics
  from ``mu`` meet).
"""

from __future__ import annotations

import math

import numpy as np

from tanbias._checks import check_array, check_real, check_tangent
from tanbias.errors import ParameterError
from tanbias.theory.manifolds import GeneralizedCylinder, Saddle, check_manifold

__all__ = ["shape_operator", "principal_curvatures", "geodesic_derivatives", "sectional_curvature",
           "intrinsic_ricci", "normal_coordinate_metric", "metric_expansion", "injectivity_radius",
           "antipodal_gap"]


def shape_operator(manifold, nu) -> np.ndarray:
    """The shape operator ``S_nu`` at ``mu``: the symmetric ``(d, d)`` matrix with
    ``<S_nu u, w> = <II(u, w), nu>``.

    Parameters
    ----------
    manifold : Submanifold
    nu : array_like, shape (D - d,)
        A normal vector in normal coordinates.

    Returns
    -------
    ndarray, shape (d, d)

    Example
    -------
    >>> from tanbias.theory.manifolds import Cylinder
    >>> shape_operator(Cylinder(R=2.0), [1.0, 0.0][:1]).round(3).tolist()   # D = 3: one normal
    [[0.5, 0.0], [0.0, 0.0]]
    """
    manifold = check_manifold(manifold)
    nu = check_array("nu", nu, shape=(manifold.D - manifold.d,),
                     hint=f"Pass a normal vector in normal coordinates, shape ({manifold.D - manifold.d},).")
    return np.einsum("j,jab->ab", nu, manifold.ii_matrices())


def principal_curvatures(manifold, nu=None) -> np.ndarray:
    """Eigenvalues of :func:`shape_operator` (ascending); ``nu`` defaults to the first normal.

    Example
    -------
    >>> from tanbias.theory.manifolds import Saddle, Sphere
    >>> principal_curvatures(Saddle(kappa=2.0)).round(6).tolist(), principal_curvatures(Sphere(2, R=0.5)).tolist()
    ([-2.0, 2.0], [2.0, 2.0])
    """
    manifold = check_manifold(manifold)
    if nu is None:
        nu = np.eye(manifold.D - manifold.d)[0]
    return np.linalg.eigvalsh(shape_operator(manifold, nu))


def geodesic_derivatives(manifold, u, h: float = 1e-2) -> dict:
    """The derivatives of the geodesic ``gamma(s) = exp_mu(s u)`` at ``s = 0``, from ``exp`` alone.

    Central differences of ``exp`` at ``s = 0, +-h, +-2h`` (errors of order ``h^2``), split into
    tangent and normal coordinates, beside what ``II`` predicts: ``gamma' = u``,
    ``gamma'' = II(u, u)`` (normal: a geodesic does not turn within the manifold) and the
    tangent part of ``gamma'''`` equal to ``-S_{II(u,u)} u`` (Weingarten), whose component
    along ``u`` is ``-||II(u, u)||^2``.

    Parameters
    ----------
    manifold : Submanifold
    u : array_like, shape (d,)
        A unit tangent direction (normalised here).
    h : float in (0, patch_radius / 2]

    Returns
    -------
    dict
        ``first``, ``second``, ``third``: each a dict with ``tangent`` (d,) and ``normal``
        (D - d,) coordinates; ``predicted_second`` (D - d,); ``predicted_third_tangent`` (d,);
        ``third_along_u`` and ``predicted_third_along_u`` (floats).

    Example
    -------
    >>> from tanbias.theory.manifolds import Cylinder
    >>> g = geodesic_derivatives(Cylinder(R=1.0), [math.cos(0.5), math.sin(0.5)])
    >>> round(g["third_along_u"], 4), round(g["predicted_third_along_u"], 4)   # -cos^4(0.5)
    (-0.5931, -0.5931)
    """
    manifold = check_manifold(manifold)
    u = check_tangent("u", u, manifold.d).reshape(manifold.d)
    u = u / np.linalg.norm(u)
    h = check_real("h", h, lo=0, hi=manifold.patch_radius / 2, hi_open=False,
                   hint="Pass a small step inside the patch, e.g. 1e-2.")
    s = np.array([-2, -1, 0, 1, 2], dtype=float) * h
    y = manifold.exp(s[:, None] * u[None, :]) - manifold.mu
    d1 = (y[3] - y[1]) / (2 * h)
    d2 = (y[3] - 2 * y[2] + y[1]) / h ** 2
    d3 = (y[4] - 2 * y[3] + 2 * y[1] - y[0]) / (2 * h ** 3)
    T, N = manifold.tangent_basis, manifold.normal_basis
    split = lambda v: dict(tangent=v @ T, normal=v @ N)  # noqa: E731
    ii = manifold.second_fundamental_form(u)
    weingarten = -shape_operator(manifold, ii) @ u
    return dict(first=split(d1), second=split(d2), third=split(d3), predicted_second=ii,
                predicted_third_tangent=weingarten, third_along_u=float(d3 @ T @ u),
                predicted_third_along_u=float(-ii @ ii))


def sectional_curvature(manifold, x, w) -> float:
    """Sectional curvature of the plane spanned by ``x`` and ``w``, by the Gauss equation:

    ``K(x, w) = (<II(x, x), II(w, w)> - ||II(x, w)||^2) / (|x|^2 |w|^2 - <x, w>^2)``.

    Summed over an orthonormal basis, ``Ric(u, u) = sum_i K(u, e_i)`` for unit ``u``, which is
    :meth:`~tanbias.theory.manifolds.Submanifold.ricci`.

    Example
    -------
    >>> from tanbias.theory.manifolds import Saddle, Sphere
    >>> sectional_curvature(Sphere(2, R=2.0), [1.0, 0.0], [0.0, 1.0]), sectional_curvature(Saddle(kappa=1.0), [1.0, 0.0], [0.3, 1.0])
    (0.25, -1.0)
    """
    manifold = check_manifold(manifold)
    x = check_tangent("x", x, manifold.d).reshape(manifold.d)
    w = check_tangent("w", w, manifold.d).reshape(manifold.d)
    area = float(x @ x * (w @ w) - (x @ w) ** 2)
    if area <= 1e-300:
        raise ParameterError("x and w are parallel: valid range is two independent tangent vectors. "
                             "Pass two vectors that span a plane.")
    II = manifold.second_fundamental_form
    return float((II(x) @ II(w) - II(x, w) @ II(x, w)) / area)


def intrinsic_ricci(manifold, u, r: float = 0.02) -> float:
    """``Ric(u, u)`` read off the polar volume element alone, with no ``II``.

    ``V(r, u) / r^(d-1) = 1 - Ric(u, u) r^2 / 6 + O(r^3)``, so
    ``6 (1 - V / r^(d-1)) / r^2`` tends to ``Ric(u, u)``; the estimate at ``r`` and ``r/2``
    combined by Richardson extrapolation cancels the ``O(r)`` error. The volume element
    itself is intrinsic (the Jacobian of ``exp``), so agreement with the Gauss equation
    (:meth:`~tanbias.theory.manifolds.Submanifold.ricci`) is a check of it.

    Example
    -------
    >>> from tanbias.theory.manifolds import GeneralizedCylinder
    >>> M = GeneralizedCylinder(k=2, d=3, R=1.0, D=4)
    >>> round(intrinsic_ricci(M, [1.0, 0.0, 0.0]), 4), round(float(M.ricci([1.0, 0.0, 0.0])), 4)
    (1.0, 1.0)
    """
    manifold = check_manifold(manifold)
    u = check_tangent("u", u, manifold.d).reshape(1, manifold.d)
    u = u / np.linalg.norm(u)
    r = check_real("r", r, lo=0, hi=manifold.patch_radius, hi_open=False,
                   hint="Pass a small radius inside the patch, e.g. 0.02.")
    radii = np.array([r, r / 2])
    vol = manifold.polar_volume_element(radii, u)[:, 0] / radii ** (manifold.d - 1)
    est = 6 * (1 - vol) / radii ** 2
    return float(2 * est[1] - est[0])


def normal_coordinate_metric(manifold, x, h: float = 1e-5) -> np.ndarray:
    """The metric in normal coordinates at ``x``: ``<d_i exp(x), d_j exp(x)>``, by central
    differences of ``exp`` (error of order ``h^2``).

    Parameters
    ----------
    manifold : Submanifold
    x : array_like, shape (d,)
        Normal coordinates of the point (its tangent vector at ``mu``).
    h : float > 0

    Returns
    -------
    ndarray, shape (d, d)

    Example
    -------
    >>> from tanbias.theory.manifolds import Sphere
    >>> g = normal_coordinate_metric(Sphere(2, R=1.0), [0.3, 0.0])
    >>> round(float(g[0, 0]), 6), round(float(g[1, 1]), 6), round((math.sin(0.3) / 0.3) ** 2, 6)
    (1.0, 0.970358, 0.970358)
    """
    manifold = check_manifold(manifold)
    x = check_tangent("x", x, manifold.d).reshape(manifold.d)
    h = check_real("h", h, lo=0, hint="Pass a small step, e.g. 1e-5.")
    e = np.eye(manifold.d) * h
    J = (manifold.exp(x + e) - manifold.exp(x - e)) / (2 * h)           # (d, D): rows d_i exp
    return J @ J.T


def metric_expansion(manifold, x) -> np.ndarray:
    """``delta_ij - (1/3) R_ikjl x^k x^l`` at ``x``, written through ``II`` (Gauss equation):

    ``R_ikjl x^k x^l = <II(e_i, e_j), II(x, x)> - <II(e_i, x), II(e_j, x)>``.

    For ``w`` orthogonal to ``x`` this reads ``|w|^2 (1 - K(x, w) |x|^2 / 3)``: directions of
    positive curvature shrink. Compare :func:`normal_coordinate_metric`; they differ at
    order ``|x|^3``.

    Example
    -------
    >>> from tanbias.theory.manifolds import Sphere
    >>> metric_expansion(Sphere(2, R=1.0), [0.3, 0.0]).round(4).tolist()   # 1 - 0.09 / 3
    [[1.0, 0.0], [0.0, 0.97]]
    """
    manifold = check_manifold(manifold)
    x = check_tangent("x", x, manifold.d).reshape(manifold.d)
    E = np.eye(manifold.d)
    II = manifold.second_fundamental_form
    iix = II(x)                                                           # (D-d,)
    ii_e = II(E[:, None, :], E[None, :, :])                              # (d, d, D-d)
    ii_ex = II(E, x[None, :])                                            # (d, D-d)
    curvature = ii_e @ iix - ii_ex @ ii_ex.T
    return E - curvature / 3


def injectivity_radius(manifold) -> float:
    """The injectivity radius at ``mu``, in closed form where the book's manifolds have one.

    ``S^k_R x R^(d-k)``: ``pi R`` (the geodesics leaving along the sphere factor in
    opposite directions meet after ``pi R``). The saddle: infinite (its Gauss curvature is
    negative everywhere and it is a graph over the plane, hence simply connected: by the
    Cartan-Hadamard theorem ``exp`` is a diffeomorphism). Other quadrics: not known in
    closed form here.

    Raises
    ------
    ParameterError
        A manifold without a closed form.

    Example
    -------
    >>> from tanbias.theory.manifolds import Cylinder, Saddle
    >>> round(injectivity_radius(Cylinder(R=1.0)), 6), injectivity_radius(Saddle())
    (3.141593, inf)
    """
    manifold = check_manifold(manifold)
    if isinstance(manifold, GeneralizedCylinder):
        return math.pi * manifold.R
    if isinstance(manifold, Saddle):
        return math.inf
    raise ParameterError(f"manifold={type(manifold).__name__} is out of range for a closed-form "
                         f"injectivity radius: valid range is GeneralizedCylinder (Sphere, Cylinder) "
                         f"or Saddle.")


def antipodal_gap(manifold, u, r) -> np.ndarray:
    """``||exp(r u) - exp(-r u)||`` for radii ``r``: zero where two geodesics leaving ``mu`` in
    opposite directions meet, which bounds the injectivity radius from above.

    Example
    -------
    >>> from tanbias.theory.manifolds import Cylinder
    >>> antipodal_gap(Cylinder(R=1.0), [1.0, 0.0], [1.0, math.pi]).round(6).tolist()
    [1.682942, 0.0]
    """
    manifold = check_manifold(manifold)
    u = check_tangent("u", u, manifold.d).reshape(manifold.d)
    u = u / np.linalg.norm(u)
    r = check_array("r", r, shape=(None,), hint="Pass an array of radii.")
    return np.linalg.norm(manifold.exp(r[:, None] * u) - manifold.exp(-r[:, None] * u), axis=-1)
