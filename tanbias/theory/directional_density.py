"""The directional law of radially concentrated samples on a curved manifold (chapter 3).

Sample ``y`` on a ``d``-manifold with density ``~ g(||y - mu||) dvol`` and
record its geodesic direction ``u`` at ``mu``. The book's derivation of the
sampling side (chapter 3, "First-order directional law") predicts, to first
order in the moment ratio ``eta_g = m_{d+1} / m_{d-1}``::

    p(u) = (1 + eta_g b(u)) / (1 + eta_g E_unif[b]),
    b(u) = (d+2)/24 ||II(u, u)||^2 - Ric(u, u) / 6,

a density relative to the uniform law on the unit sphere of ``T_mu``. This
module holds the theory: it computes ``b`` and its uniform mean and variance
*exactly* (Gaussian moments of quadratic forms, no Monte Carlo), the
first-order density and bias amplitude, the *exact*, all-orders directional
density by quadrature (:func:`exact_directional_density`, with the quadrature
rules it is built from), and where the first-order formula stops being
enough (:func:`amplitude_scan`, :func:`amplitude_crossing`). Chapter 3 uses
it directly and through the modules built on it:
:mod:`tanbias.theory.direction_statistics` (histograms of sampled directions),
:mod:`tanbias.theory.ricci_sign` (ring laws, the sign of the Ricci term) and
:mod:`tanbias.theory.direction_samples` (the chapter's Monte Carlo banks and checks).
"""

from __future__ import annotations

import itertools
import math
from typing import Callable

import numpy as np
from scipy import special

from tanbias._checks import (PRECISION_RTOL, check_above_floor, check_array, check_callable, check_instance,
                             check_int, check_real, check_tangent)
from tanbias.errors import ParameterError
from tanbias.theory.manifolds import GeneralizedCylinder, Quadric, check_manifold
from tanbias.theory.radial import Gaussian, RadialLaw  # noqa: F401  (Gaussian: doctests)

__all__ = [
    "bias_function", "uniform_bias_moments", "first_order_density",
    "predicted_bias_amplitude", "bias_amplitude", "sphere_quadrature", "gauss_legendre_panels",
    "polar_data", "uniform_direction_rule", "exact_directional_density", "exact_expectation",
    "exact_bias_amplitude", "amplitude_scan", "amplitude_crossing", "ETA_HINT", "eta_floor",
    "check_eta_resolved",
]

#: The hint of every error about ``eta_g`` (here and in :mod:`tanbias.theory.direction_statistics`).
ETA_HINT = "eta_g is a mean squared radius; pass a positive number (e.g. law.eta_g(d))."


# ---------------------------------------------------------------------------- b(u)
def bias_function(manifold, u) -> np.ndarray:
    """``b(u) = (d+2)/24 ||II(u,u)||^2 - Ric(u,u)/6`` (our derivation).

    Parameters
    ----------
    manifold : Submanifold
    u : array_like, shape (..., d)
        Unit tangent directions (tangent coordinates).

    Returns
    -------
    ndarray, shape (...)

    Raises
    ------
    ParameterError
        If ``u`` does not have last axis ``d``.

    Example
    -------
    >>> from tanbias.theory.manifolds import Cylinder
    >>> C = Cylinder(R=1.0)
    >>> round(float(bias_function(C, [1.0, 0.0])), 6)   # cos^4(0) / 6
    0.166667
    """
    manifold = check_manifold(manifold)
    u = check_tangent("u", u, manifold.d)
    ii = manifold.second_fundamental_form(u)
    return (manifold.d + 2) / 24.0 * np.sum(ii ** 2, axis=-1) - manifold.ricci(u) / 6.0


def _quartic_terms(manifold) -> list[tuple[float, np.ndarray, np.ndarray]]:
    """``b(u) = sum_t w_t (u^T P_t u)(u^T Q_t u)`` on the unit sphere."""
    d = manifold.d
    A = manifold.ii_matrices()
    terms = [((d + 2) / 24.0, a, a) for a in A if np.any(a)]
    ric = manifold.ricci_matrix()
    if np.any(ric):
        terms.append((-1.0 / 6.0, ric, np.eye(d)))
    return terms


def _gaussian_qf_moment(mats) -> float:
    """``E[prod_i z^T B_i z]`` for ``z ~ N(0, I)`` and symmetric ``B_i``.

    Sum over set partitions of products of joint cumulants,
    ``kappa(B_1..B_p) = 2^(p-1) sum_{sigma in S_(p-1)} tr(B_1 B_sigma(2) ... B_sigma(p))``.
    """
    m = len(mats)

    def cumulant(idx):
        first, rest = idx[0], idx[1:]
        tot = 0.0
        for perm in itertools.permutations(rest):
            prod = mats[first]
            for j in perm:
                prod = prod @ mats[j]
            tot += np.trace(prod)
        return 2.0 ** (len(idx) - 1) * tot

    def partitions(items):
        if not items:
            yield []
            return
        head, tail = items[0], items[1:]
        for part in partitions(tail):
            for i in range(len(part)):
                yield part[:i] + [[head] + part[i]] + part[i + 1:]
            yield [[head]] + part

    return float(sum(np.prod([cumulant(b) for b in part]) for part in partitions(list(range(m)))))


def uniform_bias_moments(manifold) -> tuple[float, float]:
    """Exact ``(E_unif[b], Var_unif[b])`` for ``u`` uniform on the unit sphere.

    ``b`` is a quartic form on the sphere; with ``z ~ N(0, I_d)``,
    ``E_unif[b] = E[b(z)] / (d(d+2))`` and
    ``E_unif[b^2] = E[b(z)^2] / (d(d+2)(d+4)(d+6))``, and Gaussian moments of
    products of quadratic forms are traces (no Monte Carlo, no grid).

    Parameters
    ----------
    manifold : Submanifold

    Returns
    -------
    (mean, variance) : tuple of float

    Raises
    ------
    ParameterError
        If ``manifold`` is not a Submanifold.

    Example
    -------
    >>> from tanbias.theory.manifolds import Cylinder
    >>> m, v = uniform_bias_moments(Cylinder(R=1.0))
    >>> round(m * 6, 12), round(v * 36, 12)       # E cos^4 = 3/8, Var cos^4 = 17/128
    (0.375, 0.1328125)
    """
    manifold = check_manifold(manifold)
    d = manifold.d
    terms = _quartic_terms(manifold)
    if not terms:
        return 0.0, 0.0
    m1 = sum(w * _gaussian_qf_moment([P, Q]) for w, P, Q in terms) / (d * (d + 2))
    m2 = 0.0
    for (w1, P1, Q1), (w2, P2, Q2) in itertools.product(terms, terms):
        m2 += w1 * w2 * _gaussian_qf_moment([P1, Q1, P2, Q2])
    m2 /= d * (d + 2) * (d + 4) * (d + 6)
    return float(m1), float(max(m2 - m1 * m1, 0.0))


def eta_floor(manifold, rtol: float = PRECISION_RTOL) -> float:
    """The smallest ``eta_g`` at which a directional bias survives float64 quadrature.

    The bias amplitude is about ``eta_g Var_unif(b)``, a difference of two expectations
    of ``b`` each computed from weights and densities of order 1, so each carries a
    rounding of about ``eps`` (measured: at most ``0.2 eps / (eta_g Var_unif(b))``
    relative, on the cylinder, the saddle and ``S^2 x R``). The floor is where
    ``eps / (eta_g Var_unif(b))`` is ``rtol``. Below it an amplitude, a relative error
    or a coefficient read from it (:func:`~tanbias.theory.ricci_sign.exact_ricci_coefficient`)
    is rounding noise. A manifold whose ``b`` is constant (the sphere) has no bias and
    no floor (0).

    Parameters
    ----------
    manifold : Submanifold
    rtol : float in (0, 1)

    Returns
    -------
    float

    Example
    -------
    >>> from tanbias.theory.manifolds import Cylinder
    >>> f"{eta_floor(Cylinder(R=1.0)):.1e}"          # eps / (0.01 * 17 / 4608)
    '6.0e-12'
    """
    rtol = check_real("rtol", rtol, lo=0, hi=1, hint="Pass a relative error, e.g. 0.01.")
    var = uniform_bias_moments(manifold)[1]
    return 0.0 if var <= 1e-300 else float(np.finfo(np.float64).eps / (rtol * var))


def check_eta_resolved(manifold, eta_g, name: str = "eta_g") -> float:
    """Refuse an ``eta_g`` below :func:`eta_floor` with a
    :class:`~tanbias.errors.PrecisionLossError`; return it otherwise.

    Example
    -------
    >>> from tanbias.theory.manifolds import Cylinder
    >>> check_eta_resolved(Cylinder(R=1.0), 1e-4)
    0.0001
    """
    floor = eta_floor(manifold)
    return check_above_floor(
        name, float(eta_g), floor,
        f"There the directional bias (about {float(eta_g) * uniform_bias_moments(manifold)[1]:.2g}) "
        f"is within a factor {1 / PRECISION_RTOL:g} of the float64 rounding of the quadrature "
        f"(about {float(np.finfo(np.float64).eps):.2g}), so an amplitude or a coefficient read "
        f"from it would be rounding noise. Pass a larger eta_g.")


def first_order_density(manifold, eta_g, u) -> np.ndarray:
    """First-order directional density relative to the uniform law on ``S^(d-1)``.

    ``p(u) = (1 + eta_g b(u)) / (1 + eta_g E_unif[b])`` (mean 1 under uniform).

    Parameters
    ----------
    manifold : Submanifold
    eta_g : float > 0
    u : array_like, shape (..., d)

    Returns
    -------
    ndarray, shape (...)

    Raises
    ------
    ParameterError
        ``eta_g <= 0`` or NaN; wrong shape of ``u``.

    Example
    -------
    >>> from tanbias.theory.manifolds import Cylinder
    >>> p = first_order_density(Cylinder(R=1.0), 0.02, [[1.0, 0.0], [0.0, 1.0]])
    >>> bool(p[0] > 1 > p[1])        # the curved direction is favoured
    True
    """
    manifold = check_manifold(manifold)
    eta_g = check_real("eta_g", eta_g, lo=0, hint=ETA_HINT)
    mean_b, _ = uniform_bias_moments(manifold)
    return (1.0 + eta_g * bias_function(manifold, u)) / (1.0 + eta_g * mean_b)


def predicted_bias_amplitude(manifold, eta_g) -> float:
    """First-order prediction of ``E_p[b] - E_unif[b]``: ``eta_g Var_unif(b)``.

    Parameters
    ----------
    manifold : Submanifold
    eta_g : float > 0

    Returns
    -------
    float

    Raises
    ------
    ParameterError
        ``eta_g <= 0`` or NaN.

    Example
    -------
    >>> from tanbias.theory.manifolds import Cylinder
    >>> round(predicted_bias_amplitude(Cylinder(R=1.0), 0.02) * 1e5, 6)   # 0.02 * 17/4608
    7.378472
    """
    manifold = check_manifold(manifold)
    eta_g = check_real("eta_g", eta_g, lo=0, hint=ETA_HINT)
    return eta_g * uniform_bias_moments(manifold)[1]


def bias_amplitude(samples_u, manifold, return_stderr: bool = False):
    """Monte Carlo ``E_p[b] - E_unif[b]`` from sampled directions.

    Parameters
    ----------
    samples_u : array_like, shape (n, d)
        Geodesic directions of samples (``Samples.u``).
    manifold : Submanifold
    return_stderr : bool
        Also return the standard error ``sd(b) / sqrt(n)``.

    Returns
    -------
    float, or (float, float)

    Example
    -------
    >>> from tanbias.theory.manifolds import Cylinder, uniform_directions
    >>> u = uniform_directions(10_000, 2, np.random.default_rng(0))
    >>> a, se = bias_amplitude(u, Cylinder(), return_stderr=True)
    >>> bool(abs(a) < 4 * se)       # uniform directions: no bias
    True
    """
    manifold = check_manifold(manifold)
    u = check_array("samples_u", samples_u, shape=(None, manifold.d),
                    hint=f"Pass Samples.u, shape (n, {manifold.d}).")
    b = bias_function(manifold, u)
    amp = float(np.mean(b) - uniform_bias_moments(manifold)[0])
    if return_stderr:
        return amp, float(np.std(b, ddof=1) / math.sqrt(b.size)) if b.size > 1 else math.inf
    return amp


# ------------------------------------------------------------------ quadratures
def sphere_quadrature(d, n=32) -> tuple[np.ndarray, np.ndarray]:
    """Product quadrature on the unit sphere ``S^(d-1)`` of ``R^d`` (uniform law).

    ``d = 2``: ``2n`` equally spaced angles (exact for trigonometric
    polynomials of degree < 2n); ``d >= 3``: Gauss-Jacobi in ``t = u_1`` with
    weight ``(1-t^2)^((d-3)/2)`` times the rule on ``S^(d-2)``. Exact for
    polynomials of degree ``<= 2n - 1``. Uses ``(2n) n^(d-2)`` nodes.

    Parameters
    ----------
    d : int >= 1
        Dimension of the ambient space of the sphere.
    n : int >= 1
        Nodes per axis.

    Returns
    -------
    nodes : ndarray, shape (N, d)
    weights : ndarray, shape (N,), summing to 1

    Example
    -------
    >>> x, w = sphere_quadrature(3, 8)
    >>> round(float(w @ x[:, 0] ** 4), 12)      # E u_1^4 = 3 / (d (d + 2))
    0.2
    """
    d = check_int("d", d, lo=1, hint="Pass a dimension d >= 1.")
    n = check_int("n", n, lo=1, hint="Pass a number of nodes per axis n >= 1.")
    if d == 1:
        return np.array([[1.0], [-1.0]]), np.array([0.5, 0.5])
    if d == 2:
        th = np.pi * np.arange(2 * n) / n
        return np.stack([np.cos(th), np.sin(th)], axis=1), np.full(2 * n, 1.0 / (2 * n))
    a = (d - 3) / 2.0
    t, wt = special.roots_jacobi(n, a, a)
    wt = wt / wt.sum()
    sub, ws = sphere_quadrature(d - 1, n)
    nodes = np.concatenate([
        np.repeat(t, sub.shape[0])[:, None],
        (np.sqrt(1 - t ** 2)[:, None, None] * sub[None]).reshape(-1, d - 1)], axis=1)
    return nodes, np.outer(wt, ws).ravel()


def gauss_legendre_panels(top: float, n_panels: int,
                          order: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """Composite Gauss-Legendre rule on ``[0, top]``: ``n_panels`` equal panels of ``order`` nodes.

    The radial rule of :func:`exact_directional_density` and of the exact
    density of :class:`tanbias.theory.direction_samples.DirectionBank`.

    Parameters
    ----------
    top : float
        Upper end of the interval.
    n_panels, order : int
        Panels, and nodes per panel.

    Returns
    -------
    nodes : ndarray, shape (n_panels * order,)
    weights : ndarray, shape (n_panels * order,), summing to ``top``

    Example
    -------
    >>> r, w = gauss_legendre_panels(2.0, 3, 4)
    >>> r.shape, round(float(w @ r ** 7), 10)          # exact: 2^8 / 8
    ((12,), 32.0)
    """
    x, w = np.polynomial.legendre.leggauss(order)
    edges = np.linspace(0.0, top, n_panels + 1)
    half = np.diff(edges) / 2
    mid = (edges[:-1] + edges[1:]) / 2
    return (mid[:, None] + half[:, None] * x).ravel(), (half[:, None] * w).ravel()


def polar_data(manifold, r, u) -> tuple[np.ndarray, np.ndarray]:
    """Chord ``||exp(r u) - mu||`` and polar volume element ``V(r, u)`` on a grid.

    Closed forms on a ``GeneralizedCylinder``; complex-step derivatives of the
    RK4 exponential map on a ``Quadric``.

    Parameters
    ----------
    manifold : GeneralizedCylinder or Quadric
    r : ndarray, shape (m,)
        Geodesic radii.
    u : ndarray, shape (k, d)
        Unit directions.

    Returns
    -------
    chord, volume : ndarray, shape (m, k) each

    Raises
    ------
    NotImplementedError
        For other manifold classes.

    Example
    -------
    >>> from tanbias.theory.manifolds import Cylinder
    >>> chord, vol = polar_data(Cylinder(R=1.0), np.array([0.5]), np.array([[0.0, 1.0]]))
    >>> float(chord[0, 0]), float(vol[0, 0])     # the flat direction: chord r, V = r^(d-1)
    (0.5, 0.5)
    """
    if isinstance(manifold, GeneralizedCylinder):
        return manifold.chord_along(r, u), manifold.polar_volume_element(r, u)
    if isinstance(manifold, Quadric):
        return manifold._polar_data(r, u)
    raise NotImplementedError(
        f"Exact directional laws are implemented for GeneralizedCylinder and Quadric, "
        f"not {type(manifold).__name__}.")


def _radial_integral(manifold, law, u, n_panels) -> np.ndarray:
    """``I(u) = int_0^rho g(||exp(r u) - mu||) V(r, u) dr`` for unit ``u`` (k, d) -> (k,)."""
    c_eff = law.effective_radius(manifold.d, 1e-16)
    top = min(manifold.patch_radius, 0.5 * math.pi * c_eff)
    r, wr = gauss_legendre_panels(top, n_panels)
    if isinstance(manifold, GeneralizedCylinder):
        chord = manifold.chord_along(r, u)
        vol = manifold.polar_volume_element(r, u)
    elif isinstance(manifold, Quadric):
        chord, vol = manifold._polar_data(r, u)
    else:
        raise NotImplementedError(
            f"exact_directional_density is implemented for GeneralizedCylinder and Quadric, "
            f"not {type(manifold).__name__}.")
    return wr @ (law.g(chord) * vol)


def uniform_direction_rule(manifold, n_dirs) -> tuple[np.ndarray, np.ndarray]:
    """Directions and weights that integrate the directional laws against the uniform law.

    Exact enough for the functions of this module: on a ``GeneralizedCylinder``
    with ``d > 2`` a 1-D rule in the sphere share ``s = |u_S|^2`` (so the
    integrand must depend on ``u`` through ``s`` only); for ``d = 2``
    ``n_dirs`` equally spaced angles on half the circle (every density here is
    even, ``p(u) = p(-u)``; callers symmetrise what they integrate); otherwise
    :func:`sphere_quadrature`.

    Parameters
    ----------
    manifold : Submanifold
    n_dirs : int
        Resolution (directions on the half circle for ``d = 2``).

    Returns
    -------
    nodes : ndarray, shape (N, d)
    weights : ndarray, shape (N,), summing to 1

    Example
    -------
    >>> from tanbias.theory.manifolds import Cylinder
    >>> u, w = uniform_direction_rule(Cylinder(R=1.0), 8)
    >>> u.shape, round(float(w @ u[:, 0] ** 2), 12)    # E cos^2 = 1/2
    ((8, 2), 0.5)
    """
    d = manifold.d
    if isinstance(manifold, GeneralizedCylinder) and d > 2:
        k = manifold.k
        if k == d:
            return np.eye(d)[:1], np.ones(1)
        # s = sin^2(phi); uniform u gives density ~ sin^(k-1) cos^(d-k-1) on [0, pi/2]
        phi, wphi = gauss_legendre_panels(0.5 * math.pi, 8, 16)
        wphi = wphi * np.sin(phi) ** (k - 1) * np.cos(phi) ** (d - k - 1)
        u = np.zeros((phi.size, d))
        u[:, 0], u[:, k] = np.sin(phi), np.cos(phi)
        return u, wphi / wphi.sum()
    if d == 2:
        # every density here is even (p(u) = p(-u)), so half the circle suffices;
        # callers symmetrise the integrand they pass.
        th = np.pi * np.arange(n_dirs) / n_dirs
        return np.stack([np.cos(th), np.sin(th)], axis=1), np.full(n_dirs, 1.0 / n_dirs)
    return sphere_quadrature(d, max(8, n_dirs // 4))


def exact_directional_density(manifold, law, u, n_panels: int = 12, n_dirs: int = 64) -> np.ndarray:
    """Exact (all orders) directional density relative to uniform, by quadrature.

    ``p(u) ~ int_0^rho g(||exp(r u) - mu||) V(r, u) dr`` with ``V`` the volume
    element in geodesic polar coordinates (closed form on a
    ``GeneralizedCylinder``; complex-step derivatives of the RK4 exponential map
    on a ``Quadric``), truncated to the sampling patch ``rho`` exactly like
    :meth:`~tanbias.theory.manifolds.Submanifold.sample`, and normalised to mean 1 under the uniform law.
    ``r`` is integrated by composite 16-point Gauss-Legendre (``n_panels``
    panels); the normalisation by :func:`sphere_quadrature` (or a 1-D rule in
    ``s = |u_S|^2`` on a ``GeneralizedCylinder``).

    Parameters
    ----------
    manifold : GeneralizedCylinder or Quadric
    law : RadialLaw
    u : array_like, shape (..., d)
        Unit directions.
    n_panels, n_dirs : int
        Quadrature resolution.

    Returns
    -------
    ndarray, shape (...)

    Raises
    ------
    ParameterError
        Bad inputs. ``NotImplementedError`` for other manifold classes.

    Example
    -------
    >>> from tanbias.theory.manifolds import Cylinder
    >>> p = exact_directional_density(Cylinder(R=1.0), Gaussian(0.1), [[1.0, 0.0], [0.0, 1.0]])
    >>> bool(p[0] > 1 > p[1])
    True
    """
    manifold = check_manifold(manifold)
    law = check_instance("law", law, RadialLaw, hint="Pass e.g. tanbias.theory.radial.Gaussian(0.1).")
    u = check_tangent("u", u, manifold.d)
    n_panels = check_int("n_panels", n_panels, lo=1, hint="Pass a positive number of panels.")
    n_dirs = check_int("n_dirs", n_dirs, lo=4, hint="Pass at least 4 directions.")
    shape = u.shape[:-1]
    uf = u.reshape(-1, manifold.d)
    uf = uf / np.linalg.norm(uf, axis=1, keepdims=True)
    nodes, weights = uniform_direction_rule(manifold, n_dirs)
    both = _radial_integral(manifold, law, np.concatenate([uf, nodes]), n_panels)
    norm = weights @ both[uf.shape[0]:]
    return (both[:uf.shape[0]] / norm).reshape(shape)


def exact_expectation(manifold, law, f: Callable, n_panels: int = 12, n_dirs: int = 64) -> float:
    """``E_p[f(u)]`` under the exact directional law (quadrature, all orders).

    ``f`` maps directions (N, d) to values (N,). On a ``GeneralizedCylinder``
    with ``d > 2`` the 1-D rule in ``s`` is used, so ``f`` must then depend on
    ``u`` only through ``s = |u_S|^2``.

    Parameters
    ----------
    manifold : GeneralizedCylinder or Quadric
    law : RadialLaw
    f : callable
        Directions, shape (N, d), to values, shape (N,); symmetrised in ``u -> -u``.
    n_panels, n_dirs : int
        Quadrature resolution (as :func:`exact_directional_density`).

    Returns
    -------
    float

    Example
    -------
    >>> from tanbias.theory.manifolds import Cylinder
    >>> e = exact_expectation(Cylinder(R=1.0), Gaussian(0.1), lambda u: u[:, 0] ** 4)
    >>> bool(e > 3 / 8)
    True
    """
    manifold = check_manifold(manifold)
    law = check_instance("law", law, RadialLaw, hint="Pass e.g. tanbias.theory.radial.Gaussian(0.1).")
    f = check_callable("f", f, hint="Pass a function of directions (N, d) -> (N,).")
    nodes, weights = uniform_direction_rule(manifold, n_dirs)
    p = _radial_integral(manifold, law, nodes, n_panels)
    vals = 0.5 * (np.asarray(f(nodes), dtype=np.float64) + np.asarray(f(-nodes), dtype=np.float64))
    return float((weights * p) @ vals / (weights @ p))


def exact_bias_amplitude(manifold, law, **kw) -> float:
    """``E_p[b] - E_unif[b]`` under the exact directional law (quadrature).

    Parameters
    ----------
    manifold : GeneralizedCylinder or Quadric
    law : RadialLaw
    **kw
        ``n_panels``, ``n_dirs``: passed to :func:`exact_expectation`.

    Returns
    -------
    float

    Raises
    ------
    PrecisionLossError
        The law's ``eta_g`` below :func:`eta_floor`.

    Example
    -------
    >>> from tanbias.theory.manifolds import Cylinder
    >>> a = exact_bias_amplitude(Cylinder(R=1.0), Gaussian(0.01))   # eta_g = 2e-4: first order
    >>> round(a / predicted_bias_amplitude(Cylinder(R=1.0), 2e-4), 3)
    1.0
    """
    manifold = check_manifold(manifold)
    law = check_instance("law", law, RadialLaw, hint="Pass e.g. tanbias.theory.radial.Gaussian(0.1).")
    check_eta_resolved(manifold, law.eta_g(manifold.d))
    return exact_expectation(manifold, law, lambda u: bias_function(manifold, u), **kw) \
        - uniform_bias_moments(manifold)[0]


# ---------------------------------------------- where the first order stops being enough
def amplitude_scan(manifold, law, etas, n_panels: int = 12) -> dict:
    """Bias amplitude ``E_p[b] - E_unif[b]`` over a grid of ``eta_g``: exact and first order.

    Parameters
    ----------
    manifold : GeneralizedCylinder or Quadric
    law : RadialLaw
        Family, rescaled to each ``eta_g`` with :meth:`~tanbias.theory.radial.RadialLaw.with_eta`.
    etas : array_like, shape (m,)

    Returns
    -------
    dict
        ``eta_g``, ``exact``, ``first_order`` (arrays (m,)), ``relative_error``
        (``exact / first_order - 1``).

    Raises
    ------
    PrecisionLossError
        An ``eta_g`` below :func:`eta_floor`, where the amplitude is rounding noise (a
        log-log slope of the scan would read near 0 instead of 1).

    Example
    -------
    >>> from tanbias.theory.manifolds import Cylinder
    >>> sc = amplitude_scan(Cylinder(R=1.0), Gaussian(1.0), [1e-3, 1e-2])
    >>> bool(np.all(np.abs(sc["relative_error"]) < 0.01))
    True
    """
    manifold = check_manifold(manifold)
    law = check_instance("law", law, RadialLaw, hint="Pass e.g. tanbias.theory.radial.Gaussian(1.0).")
    etas = check_array("etas", etas, shape=(None,))
    exact = np.array([exact_bias_amplitude(manifold, law.with_eta(e, manifold.d), n_panels=n_panels)
                      for e in etas])
    first = np.array([predicted_bias_amplitude(manifold, e) for e in etas])
    return dict(eta_g=etas, exact=exact, first_order=first, relative_error=exact / first - 1.0)


def amplitude_crossing(scan, level=0.10) -> float:
    """First ``eta_g`` where the exact amplitude departs from first order by ``level``.

    Interpolates ``|exact / first order - 1|`` linearly in ``log eta_g`` between the
    two grid points that bracket ``level``.

    Parameters
    ----------
    scan : dict
        Output of :func:`amplitude_scan`; the error must reach ``level`` after the first
        grid point.
    level : float > 0

    Returns
    -------
    float

    Raises
    ------
    ParameterError
        If the relative error never reaches ``level`` past the first grid point.

    Example
    -------
    >>> sc = dict(eta_g=np.array([0.01, 0.1, 1.0]), relative_error=np.array([0.0, 0.05, 0.15]))
    >>> round(amplitude_crossing(sc, 0.10), 4)
    0.3162
    """
    level = check_real("level", level, lo=0, hint="Pass a positive relative error, e.g. 0.1.")
    err = np.abs(scan["relative_error"])
    i = int(np.argmax(err >= level))
    if i == 0:
        raise ParameterError(
            f"level={level:g} is out of range for this scan: valid range is relative errors "
            f"reached after its first grid point (max {float(err.max()):.3g}). Extend the "
            f"scan's eta_g grid or pass a smaller level.")
    x = np.log(scan["eta_g"])
    return float(np.exp(np.interp(level, err[i - 1:i + 1], x[i - 1:i + 1])))
