"""Directional bias of radially concentrated samples on a curved manifold (chapter 3).

Sample ``y`` on a ``d``-manifold with density ``~ g(||y - mu||) dvol`` and
record its geodesic direction ``u`` at ``mu``. The book's derivation of the
sampling side (chapter 3, "First-order directional law") predicts, to first
order in the moment ratio ``eta_g = m_{d+1} / m_{d-1}``::

    p(u) = (1 + eta_g b(u)) / (1 + eta_g E_unif[b]),
    b(u) = (d+2)/24 ||II(u, u)||^2 - Ric(u, u) / 6,

a density relative to the uniform law on the unit sphere of ``T_mu``. This
module computes ``b`` and its uniform mean and variance *exactly* (Gaussian
moments of quadratic forms, no Monte Carlo), estimates the density from
samples (:func:`direction_histogram`), and computes the *exact*, all-orders
directional density by quadrature (:func:`exact_directional_density`) to show
where the first-order formula stops being enough.

Direction statistics
--------------------
For ``d = 2`` the natural statistic is the angle ``theta`` in ``[0, pi)``
(``u`` and ``-u`` are equally likely on the classes here). For ``d > 2`` use a
1-D statistic: :func:`sphere_share_statistic` (``s = |u_S|^2`` on a
``GeneralizedCylinder``) or :func:`axis_statistic`.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy import special
from scipy import stats as _st

from ._checks import (check_array, check_callable, check_choice, check_instance, check_int,
                      check_real, check_tangent)
from .errors import ParameterError
from .manifolds import GeneralizedCylinder, Quadric, Submanifold
from .radial import Gaussian, RadialLaw  # noqa: F401  (Gaussian: doctests)
from .stats import Check, check_close, check_in_interval

__all__ = [
    "bias_function", "uniform_bias_moments", "first_order_density",
    "predicted_bias_amplitude", "bias_amplitude", "exact_directional_density",
    "exact_expectation", "exact_bias_amplitude", "sphere_quadrature",
    "DirectionStatistic", "angle_statistic", "sphere_share_statistic", "axis_statistic",
    "DirectionHistogram", "direction_histogram", "first_order_histogram",
    "exact_histogram", "HistogramComparison", "compare_histogram",
    "ring_factors", "RicciSignTest", "ricci_sign_test", "exact_ricci_coefficient",
    "direction_density_data", "direction_checks", "DirectionBank", "DirectionSamples",
    "amplitude_scan", "ricci_sign_data", "ring_data", "surface_direction_checks",
    "direction_verdicts", "amplitude_crossing", "mc_bias_amplitudes", "ring_first_order",
]

_ETA_HINT = "eta_g is a mean squared radius; pass a positive number (e.g. law.eta_g(d))."


def _check_manifold(manifold) -> Submanifold:
    return check_instance("manifold", manifold, Submanifold,
                          hint="Pass e.g. tanbias.manifolds.Cylinder(R=1.0).")


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
    >>> from tanbias.manifolds import Cylinder
    >>> C = Cylinder(R=1.0)
    >>> round(float(bias_function(C, [1.0, 0.0])), 6)   # cos^4(0) / 6
    0.166667
    """
    manifold = _check_manifold(manifold)
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

    Returns
    -------
    (mean, variance) : tuple of float

    Example
    -------
    >>> from tanbias.manifolds import Cylinder
    >>> m, v = uniform_bias_moments(Cylinder(R=1.0))
    >>> round(m * 6, 12), round(v * 36, 12)       # E cos^4 = 3/8, Var cos^4 = 17/128
    (0.375, 0.1328125)
    """
    manifold = _check_manifold(manifold)
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
    >>> from tanbias.manifolds import Cylinder
    >>> p = first_order_density(Cylinder(R=1.0), 0.02, [[1.0, 0.0], [0.0, 1.0]])
    >>> bool(p[0] > 1 > p[1])        # the curved direction is favoured
    True
    """
    manifold = _check_manifold(manifold)
    eta_g = check_real("eta_g", eta_g, lo=0, hint=_ETA_HINT)
    mean_b, _ = uniform_bias_moments(manifold)
    return (1.0 + eta_g * bias_function(manifold, u)) / (1.0 + eta_g * mean_b)


def predicted_bias_amplitude(manifold, eta_g) -> float:
    """First-order prediction of ``E_p[b] - E_unif[b]``: ``eta_g Var_unif(b)``.

    Example
    -------
    >>> from tanbias.manifolds import Cylinder
    >>> round(predicted_bias_amplitude(Cylinder(R=1.0), 0.02) * 1e5, 6)   # 0.02 * 17/4608
    7.378472
    """
    manifold = _check_manifold(manifold)
    eta_g = check_real("eta_g", eta_g, lo=0, hint=_ETA_HINT)
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
    >>> from tanbias.manifolds import Cylinder, uniform_directions
    >>> u = uniform_directions(10_000, 2, np.random.default_rng(0))
    >>> a, se = bias_amplitude(u, Cylinder(), return_stderr=True)
    >>> bool(abs(a) < 4 * se)       # uniform directions: no bias
    True
    """
    manifold = _check_manifold(manifold)
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


def _gl_panels(top: float, n_panels: int, order: int = 16) -> tuple[np.ndarray, np.ndarray]:
    x, w = np.polynomial.legendre.leggauss(order)
    edges = np.linspace(0.0, top, n_panels + 1)
    half = np.diff(edges) / 2
    mid = (edges[:-1] + edges[1:]) / 2
    return (mid[:, None] + half[:, None] * x).ravel(), (half[:, None] * w).ravel()


def _radial_integral(manifold, law, u, n_panels) -> np.ndarray:
    """``I(u) = int_0^rho g(||exp(r u) - mu||) V(r, u) dr`` for unit ``u`` (k, d) -> (k,)."""
    c_eff = law.effective_radius(manifold.d, 1e-16)
    top = min(manifold.patch_radius, 0.5 * math.pi * c_eff)
    r, wr = _gl_panels(top, n_panels)
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


def _uniform_rule(manifold, n_dirs) -> tuple[np.ndarray, np.ndarray]:
    """Directions and weights integrating the functions of this module exactly
    enough against the uniform law (``GeneralizedCylinder``: 1-D rule in ``s``)."""
    d = manifold.d
    if isinstance(manifold, GeneralizedCylinder) and d > 2:
        k = manifold.k
        if k == d:
            return np.eye(d)[:1], np.ones(1)
        # s = sin^2(phi); uniform u gives density ~ sin^(k-1) cos^(d-k-1) on [0, pi/2]
        phi, wphi = _gl_panels(0.5 * math.pi, 8, 16)
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
    :meth:`~tanbias.manifolds.Submanifold.sample`, and normalised to mean 1 under the uniform law.
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
    >>> from tanbias.manifolds import Cylinder
    >>> p = exact_directional_density(Cylinder(R=1.0), Gaussian(0.1), [[1.0, 0.0], [0.0, 1.0]])
    >>> bool(p[0] > 1 > p[1])
    True
    """
    manifold = _check_manifold(manifold)
    law = check_instance("law", law, RadialLaw, hint="Pass e.g. tanbias.radial.Gaussian(0.1).")
    u = check_tangent("u", u, manifold.d)
    n_panels = check_int("n_panels", n_panels, lo=1, hint="Pass a positive number of panels.")
    n_dirs = check_int("n_dirs", n_dirs, lo=4, hint="Pass at least 4 directions.")
    shape = u.shape[:-1]
    uf = u.reshape(-1, manifold.d)
    uf = uf / np.linalg.norm(uf, axis=1, keepdims=True)
    nodes, weights = _uniform_rule(manifold, n_dirs)
    both = _radial_integral(manifold, law, np.concatenate([uf, nodes]), n_panels)
    norm = weights @ both[uf.shape[0]:]
    return (both[:uf.shape[0]] / norm).reshape(shape)


def exact_expectation(manifold, law, f: Callable, n_panels: int = 12, n_dirs: int = 64) -> float:
    """``E_p[f(u)]`` under the exact directional law (quadrature, all orders).

    ``f`` maps directions (N, d) to values (N,). On a ``GeneralizedCylinder``
    with ``d > 2`` the 1-D rule in ``s`` is used, so ``f`` must then depend on
    ``u`` only through ``s = |u_S|^2``.

    Example
    -------
    >>> from tanbias.manifolds import Cylinder
    >>> e = exact_expectation(Cylinder(R=1.0), Gaussian(0.1), lambda u: u[:, 0] ** 4)
    >>> bool(e > 3 / 8)
    True
    """
    manifold = _check_manifold(manifold)
    law = check_instance("law", law, RadialLaw, hint="Pass e.g. tanbias.radial.Gaussian(0.1).")
    f = check_callable("f", f, hint="Pass a function of directions (N, d) -> (N,).")
    nodes, weights = _uniform_rule(manifold, n_dirs)
    p = _radial_integral(manifold, law, nodes, n_panels)
    vals = 0.5 * (np.asarray(f(nodes), dtype=np.float64) + np.asarray(f(-nodes), dtype=np.float64))
    return float((weights * p) @ vals / (weights @ p))


def exact_bias_amplitude(manifold, law, **kw) -> float:
    """``E_p[b] - E_unif[b]`` under the exact directional law (quadrature)."""
    return exact_expectation(manifold, law, lambda u: bias_function(manifold, u), **kw) \
        - uniform_bias_moments(manifold)[0]


# ------------------------------------------------------------ statistics, histograms
@dataclass(frozen=True)
class DirectionStatistic:
    """A 1-D summary of a direction, with its law under uniform directions.

    Attributes
    ----------
    name : str
    fn : callable
        Directions (n, d) -> values (n,).
    ref_cdf : callable
        CDF of the value when ``u`` is uniform.
    lo, hi : float
        Range of values.
    kind : str
        ``"angle"``, ``"share"`` or ``"axis"`` (which exact bin averages exist).
    """

    name: str
    fn: Callable
    ref_cdf: Callable
    lo: float
    hi: float
    kind: str
    d: int


def angle_statistic() -> DirectionStatistic:
    """``theta = atan2(u_2, u_1) mod pi`` in ``[0, pi)`` for ``d = 2`` (uniform reference).

    Example
    -------
    >>> st = angle_statistic()
    >>> float(st.fn(np.array([[0.0, -1.0]]))[0]) == float(np.pi / 2)
    True
    """
    return DirectionStatistic(
        "theta", lambda u: np.mod(np.arctan2(u[:, 1], u[:, 0]), np.pi),
        lambda x: np.clip(np.asarray(x) / np.pi, 0, 1), 0.0, math.pi, "angle", 2)


def sphere_share_statistic(manifold) -> DirectionStatistic:
    """``s = |u_S|^2`` on a ``GeneralizedCylinder`` (reference ``Beta(k/2, (d-k)/2)``)."""
    manifold = check_instance("manifold", manifold, GeneralizedCylinder,
                              hint="The sphere share is defined on S^k x R^(d-k).")
    if manifold.k == manifold.d:
        raise ParameterError(
            f"k={manifold.k} is out of range for the sphere share: valid range is [1, d-1] "
            f"(on a sphere s = 1 always). Use axis_statistic instead.")
    ref = _st.beta(manifold.k / 2, (manifold.d - manifold.k) / 2)
    return DirectionStatistic("s = |u_S|^2", manifold.sphere_share, ref.cdf, 0.0, 1.0,
                              "share", manifold.d)


def axis_statistic(d, axis=0) -> DirectionStatistic:
    """``c = u_axis^2``: squared cosine to a coordinate axis (reference ``Beta(1/2, (d-1)/2)``)."""
    d = check_int("d", d, lo=2, hint="Pass a dimension d >= 2.")
    axis = check_int("axis", axis, lo=0, hi=d - 1, hint="Pass a tangent coordinate index.")
    ref = _st.beta(0.5, (d - 1) / 2)
    return DirectionStatistic(f"u_{axis}^2", lambda u: u[:, axis] ** 2, ref.cdf, 0.0, 1.0,
                              "axis", d)


def _default_statistic(d: int, statistic) -> DirectionStatistic:
    if statistic is None:
        if d != 2:
            raise ParameterError(
                f"statistic=None is not allowed for d={d}: valid range is a DirectionStatistic "
                f"(the angle default exists only for d=2). Pass sphere_share_statistic(M) or "
                f"axis_statistic(d).")
        return angle_statistic()
    return check_instance("statistic", statistic, DirectionStatistic,
                          hint="Build one with angle_statistic() or sphere_share_statistic(M).")


@dataclass
class DirectionHistogram:
    """Monte Carlo density of a direction statistic relative to uniform directions.

    Attributes
    ----------
    edges : ndarray (bins + 1,)
    centers : ndarray (bins,)
    counts : ndarray (bins,)
    density : ndarray (bins,)
        ``(counts / n) / P_unif(bin)``; 1 everywhere for uniform directions.
    stderr : ndarray (bins,)
        Binomial standard error of ``density``.
    ref_prob : ndarray (bins,)
        ``P_unif(bin)``.
    n : int
    statistic : str
    """

    edges: np.ndarray
    centers: np.ndarray
    counts: np.ndarray
    density: np.ndarray
    stderr: np.ndarray
    ref_prob: np.ndarray
    n: int
    statistic: str

    def chi_square(self, predicted) -> tuple[float, int, float]:
        """Pearson chi-square of the counts against predicted bin densities.

        Returns ``(statistic, dof, p_value)`` with ``dof = bins - 1``.
        """
        pred = check_array("predicted", predicted, shape=self.counts.shape)
        expected = self.n * self.ref_prob * pred
        expected *= self.n / expected.sum()
        stat = float(np.sum((self.counts - expected) ** 2 / expected))
        dof = self.counts.size - 1
        return stat, dof, float(_st.chi2.sf(stat, dof))


def direction_histogram(u, bins=12, statistic=None, weights=None) -> DirectionHistogram:
    """Histogram of sampled directions, as a density relative to uniform.

    Parameters
    ----------
    u : array_like, shape (n, d)
        Unit directions (``Samples.u``).
    bins : int >= 1 or array_like of edges
    statistic : DirectionStatistic or None
        Default: the angle in ``[0, pi)`` (``d = 2`` only).
    weights : array_like, shape (n,), optional
        Importance weights (self-normalised). ``counts`` are then the weighted
        counts rescaled to sum to ``n``, and ``stderr`` the delta-method standard
        error ``sqrt(sum_i w_i^2 (1_bin(i) - p_bin)^2) / sum_i w_i`` (the binomial
        one for equal weights).

    Returns
    -------
    DirectionHistogram

    Raises
    ------
    ParameterError
        Bad shapes, ``bins``, or no statistic for ``d > 2``.

    Example
    -------
    >>> from tanbias.manifolds import uniform_directions
    >>> h = direction_histogram(uniform_directions(40_000, 2, np.random.default_rng(1)), bins=4)
    >>> bool(np.all(np.abs(h.density - 1) < 5 * h.stderr))
    True
    """
    u = check_array("u", u, shape=(None, None), hint="Pass Samples.u, shape (n, d).")
    stat = _default_statistic(u.shape[1], statistic)
    if u.shape[1] != stat.d:
        raise ParameterError(
            f"u has shape {u.shape} but the statistic is for d={stat.d}: expected shape "
            f"(..., {stat.d}).")
    if np.ndim(bins) == 0:
        nb = check_int("bins", bins, lo=1, hint="Pass a number of bins or an array of edges.")
        edges = np.linspace(stat.lo, stat.hi, nb + 1)
    else:
        edges = check_array("bins", bins, shape=(None,))
        if edges.size < 2 or np.any(np.diff(edges) <= 0):
            raise ParameterError("bins has non-increasing edges: valid range is strictly "
                                 "increasing arrays of >= 2 edges. Pass sorted edges.")
    vals = stat.fn(u)
    n = u.shape[0]
    ref = np.diff(stat.ref_cdf(edges))
    if weights is None:
        counts = np.histogram(vals, bins=edges)[0].astype(np.float64)
        phat = counts / n
        var = phat * (1 - phat) / n
    else:
        w = check_array("weights", weights, shape=(n,), hint="Pass one weight per direction.")
        if np.any(w < 0) or not w.sum() > 0:
            raise ParameterError("weights has negative entries or sums to 0: valid range is "
                                 "non-negative weights with a positive sum.")
        wsum = w.sum()
        idx = np.digitize(vals, edges) - 1
        idx[vals == edges[-1]] = edges.size - 2          # np.histogram: last bin closed
        inside = (idx >= 0) & (idx < edges.size - 1)
        nb = edges.size - 1
        sw = np.bincount(idx[inside], weights=w[inside], minlength=nb)
        sw2 = np.bincount(idx[inside], weights=w[inside] ** 2, minlength=nb)
        phat = sw / wsum
        # sum_i w_i^2 (1_b(i) - p_b)^2 = sw2_b (1 - 2 p_b) + p_b^2 sum_i w_i^2
        var = (sw2 * (1 - 2 * phat) + phat ** 2 * np.sum(w ** 2)) / wsum ** 2
        counts = phat * n
    with np.errstate(divide="ignore", invalid="ignore"):
        density = phat / ref
        stderr = np.sqrt(np.maximum(var, 0.0)) / ref
    return DirectionHistogram(edges, 0.5 * (edges[:-1] + edges[1:]), counts, density, stderr,
                              ref, n, stat.name)


def _bin_average(manifold, stat: DirectionStatistic, edges, h: Callable, order: int = 24):
    """``E_unif[h(u) | statistic in bin]`` by 1-D Gauss-Legendre per bin."""
    x, w = np.polynomial.legendre.leggauss(order)
    lo, hi = edges[:-1], edges[1:]
    if stat.kind == "angle":
        th = (lo + hi)[:, None] / 2 + (hi - lo)[:, None] / 2 * x      # uniform weight in theta
        u = np.stack([np.cos(th), np.sin(th)], axis=-1).reshape(-1, 2)
        vals = h(u).reshape(th.shape)
        return vals @ w / 2.0
    if stat.kind == "share" and isinstance(manifold, GeneralizedCylinder):
        k, d = manifold.k, manifold.d
        plo, phi_ = np.arcsin(np.sqrt(lo)), np.arcsin(np.sqrt(hi))
        ph = (plo + phi_)[:, None] / 2 + (phi_ - plo)[:, None] / 2 * x
        wt = (phi_ - plo)[:, None] / 2 * w * np.sin(ph) ** (k - 1) * np.cos(ph) ** (d - k - 1)
        u = np.zeros(ph.shape + (d,))
        u[..., 0], u[..., k] = np.sin(ph), np.cos(ph)
        vals = h(u.reshape(-1, d)).reshape(ph.shape)
        return np.sum(vals * wt, axis=1) / np.sum(wt, axis=1)
    raise NotImplementedError(
        f"Exact bin averages exist for the angle (d=2) and the sphere share on a "
        f"GeneralizedCylinder, not for statistic {stat.name!r} on {type(manifold).__name__}.")


def first_order_histogram(manifold, eta_g, edges, statistic=None) -> np.ndarray:
    """Bin densities (relative to uniform) predicted by :func:`first_order_density`.

    Returns
    -------
    ndarray, shape (len(edges) - 1,)
    """
    manifold = _check_manifold(manifold)
    eta_g = check_real("eta_g", eta_g, lo=0, hint=_ETA_HINT)
    stat = _default_statistic(manifold.d, statistic)
    edges = check_array("edges", edges, shape=(None,))
    return _bin_average(manifold, stat, edges,
                        lambda u: first_order_density(manifold, eta_g, u))


def exact_histogram(manifold, law, edges, statistic=None, **kw) -> np.ndarray:
    """Bin densities (relative to uniform) of the exact directional law."""
    manifold = _check_manifold(manifold)
    stat = _default_statistic(manifold.d, statistic)
    edges = check_array("edges", edges, shape=(None,))
    return _bin_average(manifold, stat, edges,
                        lambda u: exact_directional_density(manifold, law, u, **kw))


@dataclass
class HistogramComparison:
    """Monte Carlo histogram next to the first-order and exact predictions.

    Attributes
    ----------
    histogram : DirectionHistogram
    first_order, exact : ndarray (bins,)
        Predicted bin densities.
    chi2_first_order, chi2_exact : tuple (statistic, dof, p_value)
    eta_g : float
    """

    histogram: DirectionHistogram
    first_order: np.ndarray
    exact: np.ndarray
    chi2_first_order: tuple
    chi2_exact: tuple
    eta_g: float


def compare_histogram(manifold, law, u, bins=12, statistic=None) -> HistogramComparison:
    """One call for a chapter: MC histogram of ``u`` vs first-order and exact densities.

    Example
    -------
    >>> from tanbias.manifolds import Cylinder
    >>> C, law = Cylinder(R=1.0), Gaussian(0.3)
    >>> s = C.sample(20_000, law, np.random.default_rng(0))
    >>> cmp = compare_histogram(C, law, s.u, bins=6)
    >>> bool(cmp.chi2_exact[2] > 1e-3)
    True
    """
    manifold = _check_manifold(manifold)
    law = check_instance("law", law, RadialLaw, hint="Pass e.g. tanbias.radial.Gaussian(0.1).")
    hist = direction_histogram(u, bins, statistic if statistic is not None
                               else _default_statistic(manifold.d, None))
    stat = _default_statistic(manifold.d, statistic)
    eta = law.eta_g(manifold.d)
    fo = first_order_histogram(manifold, eta, hist.edges, stat)
    ex = exact_histogram(manifold, law, hist.edges, stat)
    return HistogramComparison(hist, fo, ex, hist.chi_square(fo), hist.chi_square(ex), eta)


# ------------------------------------------------------------------ chapter 3: rings, signs
def _chord_volume(manifold, r, u):
    """``(chord, V)`` on the grid ``r`` (m,) x unit ``u`` (k, d): two arrays of shape (m, k)."""
    if isinstance(manifold, GeneralizedCylinder):
        return manifold.chord_along(r, u), manifold.polar_volume_element(r, u)
    if isinstance(manifold, Quadric):
        return manifold._polar_data(r, u)
    raise NotImplementedError(
        f"Exact directional laws are implemented for GeneralizedCylinder and Quadric, "
        f"not {type(manifold).__name__}.")


def ring_factors(manifold, law, t, u, n_dirs: int = 64) -> dict:
    """Directional law of the samples at geodesic radius exactly ``t``, and its two factors.

    Among samples whose geodesic radius is ``t``, the direction ``u`` has
    density proportional to ``g(||exp(t u) - mu||) V(t, u)``: a *chord factor*
    (the radial law read at the chord, larger where the chord is short, i.e.
    along extrinsically curved directions) times a *volume factor* (the polar
    volume element, smaller where the Ricci curvature is positive). The
    marginal directional law is the average of these ring laws over the law of
    the radius. Each is returned relative to the uniform law (mean 1).

    Parameters
    ----------
    manifold : GeneralizedCylinder or Quadric
    law : RadialLaw
    t : float in (0, patch_radius]
        Geodesic radius of the ring.
    u : array_like, shape (..., d)
        Unit directions at which to evaluate.
    n_dirs : int
        Resolution of the uniform-law normalisation.

    Returns
    -------
    dict
        ``chord``, ``volume``, ``ring``: arrays of shape (...), each with mean 1
        under uniform directions.

    Raises
    ------
    ParameterError
        Bad ``t``, ``law`` or ``u``.

    Example
    -------
    >>> from tanbias.manifolds import GeneralizedCylinder
    >>> M = GeneralizedCylinder(k=2, d=3, R=1.0, D=4)
    >>> f = ring_factors(M, Gaussian(0.2), 0.2, [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    >>> bool(f["chord"][0] > f["chord"][1]), bool(f["volume"][0] < f["volume"][1])
    (True, True)
    """
    manifold = _check_manifold(manifold)
    law = check_instance("law", law, RadialLaw, hint="Pass e.g. tanbias.radial.Gaussian(0.1).")
    t = check_real("t", t, lo=0, hi=manifold.patch_radius, hi_open=False,
                   hint=f"Pass a ring radius no larger than patch_radius={manifold.patch_radius:g}.")
    u = check_tangent("u", u, manifold.d)
    shape = u.shape[:-1]
    uf = u.reshape(-1, manifold.d)
    uf = uf / np.linalg.norm(uf, axis=1, keepdims=True)
    nodes, weights = _uniform_rule(manifold, n_dirs)
    chord, vol = _chord_volume(manifold, np.array([t]), np.concatenate([uf, nodes]))
    chord, vol = chord[0], vol[0]
    with np.errstate(divide="ignore"):
        lg = law.log_g(chord)
    lg = lg - np.max(lg[np.isfinite(lg)])          # g can underflow: work in logs
    parts = {"chord": np.exp(lg), "volume": vol}
    parts["ring"] = parts["chord"] * parts["volume"]
    k = uf.shape[0]
    return {name: (v[:k] / (weights @ v[k:])).reshape(shape) for name, v in parts.items()}


def _share_moments(manifold) -> np.ndarray:
    """``E_unif[s^j]``, ``j = 0..4``, for ``s = |u_S|^2 ~ Beta(k/2, (d-k)/2)``."""
    ref = _st.beta(manifold.k / 2, (manifold.d - manifold.k) / 2)
    return np.array([1.0] + [float(ref.moment(j)) for j in range(1, 5)])


@dataclass
class RicciSignTest:
    """Which sign of the Ricci term do sampled directions on ``S^k_R x R^(d-k)`` support?

    With ``s = |u_S|^2`` the share of a direction along the sphere factor,
    ``||II(u,u)||^2 = s^2 / R^2`` and ``Ric(u,u) = (k-1) s / R^2``, so to first
    order ``p(s) ~ 1 + eta_g (alpha s^2 + beta s)`` with the extrinsic
    coefficient ``alpha = (d+2) / (24 R^2)`` and the Ricci coefficient
    ``beta = -(k-1) / (6 R^2)`` in our derivation (positive Ricci curvature
    lowers the density), ``+(k-1) / (6 R^2)`` if Ricci curvature were
    favoured like extrinsic curvature (the statement's wording). The test
    statistic is the shift of the mean share, ``E_p[s] - E_unif[s]``, which is
    ``eta_g (alpha Cov(s, s^2) + beta Var(s))`` to first order: ``beta`` is
    estimated with ``alpha`` fixed at its (undisputed) value.

    Attributes
    ----------
    eta_g : float
    n : int
        Monte Carlo sample size.
    shift, shift_se : float
        Measured ``E_p[s] - E_unif[s]`` and its standard error.
    exact_shift : float
        The same under the exact directional law (quadrature, all orders).
    predicted : dict
        First-order shifts under three readings: ``"ours"`` (Ricci lowers),
        ``"statement"`` (Ricci raises), ``"extrinsic only"`` (no Ricci term).
    alpha : float
        Extrinsic coefficient ``(d+2) / (24 R^2)``.
    beta, beta_se : float
        Ricci coefficient estimated from the samples.
    beta_exact : float
        Ricci coefficient estimated the same way from the exact law.
    beta_ours, beta_statement : float
        ``-(k-1) / (6 R^2)`` and ``+(k-1) / (6 R^2)``.
    """

    eta_g: float
    n: int
    shift: float
    shift_se: float
    exact_shift: float
    predicted: dict
    alpha: float
    beta: float
    beta_se: float
    beta_exact: float
    beta_ours: float
    beta_statement: float

    def z(self, reading: str) -> float:
        """``(measured - predicted) / se`` of the fitted ``beta`` under a reading
        (``"ours"`` or ``"statement"``)."""
        reading = check_choice("reading", reading, ("ours", "statement"),
                               hint="Compare with our derivation or with the statement's sign.")
        target = self.beta_ours if reading == "ours" else self.beta_statement
        return (self.beta - target) / self.beta_se

    def report(self) -> str:
        """The measured and predicted shifts of the mean share, as printable lines."""
        p = self.predicted
        return (f"η_g = {self.eta_g:.3g}, n = {self.n:,}\n"
                f"mean-share shift: measured {self.shift:.5f} ± {self.shift_se:.5f}, "
                f"exact law {self.exact_shift:.5f}\nfirst order: ours {p['ours']:.5f}, "
                f"extrinsic only {p['extrinsic only']:.5f}, "
                f"statement {p['statement']:.5f}")

    def checks(self) -> list[Check]:
        """What the samples must agree with: the exact law's shift and our ``beta``
        (both within 4 standard errors)."""
        return [check_close("mean-share shift: MC vs exact law", self.shift, self.exact_shift,
                            atol=4 * self.shift_se),
                check_close("β from the samples vs our derivation, -1/6", self.beta,
                            self.beta_ours, atol=4 * self.beta_se)]

    def rejected_readings(self) -> list[Check]:
        """The two readings the samples reject: Ricci curvature favoured (the statement's
        wording) and no Ricci term at all. Show them with ``.refute()``."""
        return [check_close("β from the samples vs the statement's sign, +1/6", self.beta,
                            self.beta_statement, atol=4 * self.beta_se),
                check_close("β from the samples vs no Ricci term, 0", self.beta, 0.0,
                            atol=4 * self.beta_se)]


def _sign_coefficients(manifold):
    k, d, R = manifold.k, manifold.d, manifold.R
    E = _share_moments(manifold)
    cov_s_s2 = E[3] - E[1] * E[2]
    var_s = E[2] - E[1] ** 2
    alpha = (d + 2) / (24.0 * R ** 2)
    beta = (k - 1) / (6.0 * R ** 2)
    return E, cov_s_s2, var_s, alpha, beta


def ricci_sign_test(manifold, law, n=500_000, rng=0, u=None) -> RicciSignTest:
    """Estimate the sign of the Ricci term from sampled directions on ``S^k_R x R^(d-k)``.

    Parameters
    ----------
    manifold : GeneralizedCylinder with ``2 <= k < d``
        (``k >= 2`` for a non-zero Ricci curvature, ``k < d`` for a direction
        dependence).
    law : RadialLaw
    n : int
        Number of samples drawn (ignored when ``u`` is given).
    rng : numpy.random.Generator or int seed
    u : array_like (n, d), optional
        Directions already sampled from ``manifold.sample(n, law, rng).u``.

    Returns
    -------
    RicciSignTest

    Raises
    ------
    ParameterError
        A manifold that is not such a generalized cylinder.

    Example
    -------
    >>> from tanbias.manifolds import GeneralizedCylinder
    >>> M = GeneralizedCylinder(k=2, d=3, R=1.0, D=4)
    >>> res = ricci_sign_test(M, Gaussian(0.3), n=200_000, rng=0)
    >>> round(res.beta_ours, 4), abs(res.z("ours")) < 4, res.z("statement") < -4
    (-0.1667, True, True)
    """
    manifold = check_instance("manifold", manifold, GeneralizedCylinder,
                              hint="Pass GeneralizedCylinder(k=2, d=3, R=1.0, D=4).")
    if not 2 <= manifold.k < manifold.d:
        raise ParameterError(
            f"k={manifold.k} is out of range for the Ricci sign test: valid range is "
            f"[2, d-1] = [2, {manifold.d - 1}] (k >= 2 for Ricci curvature, k < d for a "
            f"direction dependence). Pass e.g. GeneralizedCylinder(k=2, d=3).")
    law = check_instance("law", law, RadialLaw, hint="Pass e.g. tanbias.radial.Gaussian(0.3).")
    if u is None:
        n = check_int("n", n, lo=2, hint="Pass at least 2 samples.")
        u = manifold.sample(n, law, rng).u
    u = check_array("u", u, shape=(None, manifold.d), hint=f"Pass Samples.u, shape (n, {manifold.d}).")
    eta = law.eta_g(manifold.d)
    E, cov_s_s2, var_s, alpha, beta = _sign_coefficients(manifold)
    s = manifold.sphere_share(u)
    shift = float(np.mean(s) - E[1])
    shift_se = float(np.std(s, ddof=1) / math.sqrt(s.size))
    exact_shift = exact_expectation(manifold, law, manifold.sphere_share) - E[1]
    predicted = {"ours": float(eta * (alpha * cov_s_s2 - beta * var_s)),
                 "statement": float(eta * (alpha * cov_s_s2 + beta * var_s)),
                 "extrinsic only": float(eta * alpha * cov_s_s2)}
    to_beta = lambda sh: (sh / eta - alpha * cov_s_s2) / var_s  # noqa: E731
    return RicciSignTest(float(eta), int(s.size), shift, shift_se, float(exact_shift), predicted,
                         alpha, float(to_beta(shift)), float(shift_se / (eta * var_s)),
                         float(to_beta(exact_shift)), -beta, beta)


def exact_ricci_coefficient(manifold, law) -> float:
    """The Ricci coefficient ``beta`` read off the exact directional law (see
    :class:`RicciSignTest`); tends to ``-(k-1) / (6 R^2)`` as ``eta_g -> 0``.

    Example
    -------
    >>> from tanbias.manifolds import GeneralizedCylinder
    >>> M = GeneralizedCylinder(k=2, d=3, R=1.0, D=4)
    >>> round(exact_ricci_coefficient(M, Gaussian(0.01)), 4)
    -0.1667
    """
    manifold = check_instance("manifold", manifold, GeneralizedCylinder,
                              hint="Pass GeneralizedCylinder(k=2, d=3, R=1.0, D=4).")
    law = check_instance("law", law, RadialLaw, hint="Pass e.g. tanbias.radial.Gaussian(0.3).")
    eta = law.eta_g(manifold.d)
    E, cov_s_s2, var_s, alpha, _ = _sign_coefficients(manifold)
    shift = exact_expectation(manifold, law, manifold.sphere_share) - E[1]
    return float((shift / eta - alpha * cov_s_s2) / var_s)


# ------------------------------------------------------------------ chapter 3: figure data
def direction_density_data(manifold, law, n=50_000, rng=0, bins=12, n_curve=91) -> dict:
    """Sampled directions on a surface (``d = 2``) next to the predicted densities.

    Parameters
    ----------
    manifold : GeneralizedCylinder or Quadric with ``d = 2``
    law : RadialLaw
    n : int
        Monte Carlo sample size.
    rng : numpy.random.Generator or int seed
    bins : int
        Histogram bins of the angle ``theta`` in ``[0, pi)``.
    n_curve : int
        Points of the predicted curves.

    Returns
    -------
    dict
        ``theta`` (n_curve,) in radians; ``first_order`` and ``exact`` densities
        relative to uniform on it; ``hist`` (:class:`DirectionHistogram`);
        ``u`` (n, 2) the sampled directions; ``eta_g``; ``name``.

    Raises
    ------
    ParameterError
        A manifold with ``d != 2``, or bad ``law``, ``n``, ``rng``.

    Example
    -------
    >>> from tanbias.manifolds import Sphere
    >>> data = direction_density_data(Sphere(2, R=1.0, D=3), Gaussian(0.1), n=2000, bins=4)
    >>> bool(np.allclose(data["first_order"], 1.0)), data["hist"].n
    (True, 2000)
    """
    manifold = _check_manifold(manifold)
    if manifold.d != 2:
        raise ParameterError(f"manifold.d={manifold.d} is out of range: valid range is [2, 2] "
                             f"(the angle of a direction needs d = 2). Pass a surface.")
    law = check_instance("law", law, RadialLaw, hint="Pass e.g. tanbias.radial.Gaussian(0.1).")
    s = manifold.sample(n, law, rng)
    th = np.linspace(0.0, math.pi, check_int("n_curve", n_curve, lo=2))
    u = np.stack([np.cos(th), np.sin(th)], axis=1)
    eta = law.eta_g(2)
    return dict(theta=th, first_order=first_order_density(manifold, eta, u),
                exact=exact_directional_density(manifold, law, u),
                hist=direction_histogram(s.u, bins), u=s.u, eta_g=eta,
                name=getattr(manifold, "name", type(manifold).__name__))


def direction_checks(manifold, law, u, bins=12) -> dict:
    """Numbers to check sampled directions ``u`` against the predicted law.

    Returns
    -------
    dict
        ``chi2_exact`` and ``chi2_uniform``: (statistic, dof, p-value) of the
        angle histogram against the exact law and against uniform directions;
        ``amplitude``, ``amplitude_se``: Monte Carlo ``E_p[b] - E_unif[b]``;
        ``exact_amplitude`` (quadrature); ``predicted_amplitude`` (first order).

    Example
    -------
    >>> from tanbias.manifolds import Cylinder
    >>> C, law = Cylinder(R=1.0), Gaussian(0.3)
    >>> c = direction_checks(C, law, C.sample(20_000, law, 0).u)
    >>> bool(abs(c["amplitude"] - c["exact_amplitude"]) < 4 * c["amplitude_se"])
    True
    """
    manifold = _check_manifold(manifold)
    law = check_instance("law", law, RadialLaw, hint="Pass e.g. tanbias.radial.Gaussian(0.1).")
    hist = direction_histogram(u, bins, _default_statistic(manifold.d, None))
    exact_bins = exact_histogram(manifold, law, hist.edges)
    amp, se = bias_amplitude(u, manifold, return_stderr=True)
    return dict(chi2_exact=hist.chi_square(exact_bins),
                chi2_uniform=hist.chi_square(np.ones_like(hist.density)),
                amplitude=amp, amplitude_se=se,
                exact_amplitude=exact_bias_amplitude(manifold, law),
                predicted_amplitude=predicted_bias_amplitude(manifold, law.eta_g(manifold.d)))


def amplitude_scan(manifold, law, etas, n_panels: int = 12) -> dict:
    """Bias amplitude ``E_p[b] - E_unif[b]`` over a grid of ``eta_g``: exact and first order.

    Parameters
    ----------
    manifold : GeneralizedCylinder or Quadric
    law : RadialLaw
        Family, rescaled to each ``eta_g`` with :meth:`~tanbias.radial.RadialLaw.with_eta`.
    etas : array_like, shape (m,)

    Returns
    -------
    dict
        ``eta_g``, ``exact``, ``first_order`` (arrays (m,)), ``relative_error``
        (``exact / first_order - 1``).

    Example
    -------
    >>> from tanbias.manifolds import Cylinder
    >>> sc = amplitude_scan(Cylinder(R=1.0), Gaussian(1.0), [1e-3, 1e-2])
    >>> bool(np.all(np.abs(sc["relative_error"]) < 0.01))
    True
    """
    manifold = _check_manifold(manifold)
    law = check_instance("law", law, RadialLaw, hint="Pass e.g. tanbias.radial.Gaussian(1.0).")
    etas = check_array("etas", etas, shape=(None,))
    exact = np.array([exact_bias_amplitude(manifold, law.with_eta(e, manifold.d), n_panels=n_panels)
                      for e in etas])
    first = np.array([predicted_bias_amplitude(manifold, e) for e in etas])
    return dict(eta_g=etas, exact=exact, first_order=first, relative_error=exact / first - 1.0)


def ricci_sign_data(manifold, law, u, bins=10, n_curve=81) -> dict:
    """Numbers of the Ricci-sign figure: the histogram of the sphere share
    ``s = |u_S|^2`` of sampled directions against the exact law and the first-order
    law under three readings of the Ricci term.

    Parameters
    ----------
    manifold : GeneralizedCylinder with ``2 <= k < d``
    law : RadialLaw
    u : array_like (n, d)
        Sampled directions.
    bins : int
    n_curve : int

    Returns
    -------
    dict
        ``s`` (n_curve,); ``exact`` on it; ``first_order``: dict reading -> curve, for
        ``"statement"`` (Ricci term favoured), ``"extrinsic only"`` and ``"ours"``
        (Ricci term lowers); ``hist`` (:class:`DirectionHistogram` of ``s``); ``eta_g``.

    Example
    -------
    >>> from tanbias.manifolds import GeneralizedCylinder
    >>> M, law = GeneralizedCylinder(k=2, d=3, R=1.0, D=4), Gaussian(0.3)
    >>> rs = ricci_sign_data(M, law, M.sample(2000, law, 0).u, n_curve=5)
    >>> sorted(rs["first_order"]), rs["hist"].n
    (['extrinsic only', 'ours', 'statement'], 2000)
    """
    manifold = check_instance("manifold", manifold, GeneralizedCylinder,
                              hint="Pass GeneralizedCylinder(k=2, d=3, R=1.0, D=4).")
    stat = sphere_share_statistic(manifold)
    hist = direction_histogram(u, bins, stat)
    eta = law.eta_g(manifold.d)
    E, _, _, alpha, beta = _sign_coefficients(manifold)
    s = np.linspace(0.0, 1.0, n_curve)
    phi = np.arcsin(np.sqrt(s))
    uu = np.zeros((n_curve, manifold.d))
    uu[:, 0], uu[:, manifold.k] = np.sin(phi), np.cos(phi)
    exact = exact_directional_density(manifold, law, uu)

    def first(b_ricci):
        b = alpha * s ** 2 + b_ricci * s
        mean_b = alpha * E[2] + b_ricci * E[1]
        return (1 + eta * b) / (1 + eta * mean_b)

    return dict(s=s, exact=exact, hist=hist, eta_g=eta,
                first_order={"statement": first(+beta), "extrinsic only": first(0.0),
                             "ours": first(-beta)})


def ring_data(manifold, law, tau, n_curve=61) -> dict:
    """Numbers of the ring interactive: factors on the ring ``r = tau sqrt(eta_g)``,
    the marginal law (exact and first order) and the radius law.

    Parameters
    ----------
    manifold : GeneralizedCylinder with ``k < d``
    law : RadialLaw
    tau : float > 0
        Ring radius in units of the RMS radius ``sqrt(eta_g)``.

    Returns
    -------
    dict
        ``s`` (n_curve,), ``chord``, ``volume``, ``ring``, ``marginal``,
        ``first_order`` on it; ``x`` and ``radius_density`` (radius law in units
        of ``sqrt(eta_g)``); ``tau``, ``t``, ``eta_g``.

    Example
    -------
    >>> from tanbias.manifolds import GeneralizedCylinder
    >>> M = GeneralizedCylinder(k=2, d=3, R=1.0, D=4)
    >>> r = ring_data(M, Gaussian(0.1), 1.0)
    >>> bool(r["volume"][-1] < 1 < r["chord"][-1])   # along the sphere: less volume, shorter chord
    True
    """
    manifold = check_instance("manifold", manifold, GeneralizedCylinder,
                              hint="Pass GeneralizedCylinder(k=2, d=3, R=1.0, D=4).")
    tau = check_real("tau", tau, lo=0, hint="Pass a positive ring radius (in RMS radii).")
    d, k = manifold.d, manifold.k
    eta = law.eta_g(d)
    s = np.linspace(0.0, 1.0, n_curve)
    phi = np.arcsin(np.sqrt(s))
    u = np.zeros((n_curve, d))
    u[:, 0], u[:, k] = np.sin(phi), np.cos(phi)
    t = tau * math.sqrt(eta)
    f = ring_factors(manifold, law, t, u)
    x = np.linspace(0.0, 3.5, 120)
    r = x * math.sqrt(eta)
    dens = law.g(r) * r ** (d - 1)
    dens = dens / (np.sum(dens) * (x[1] - x[0]))
    return dict(s=s, chord=f["chord"], volume=f["volume"], ring=f["ring"],
                marginal=exact_directional_density(manifold, law, u),
                first_order=first_order_density(manifold, eta, u), x=x, radius_density=dens,
                tau=float(tau), t=float(t), eta_g=float(eta))


class DirectionBank:
    """Samples of one surface drawn once at ``law_k``, reweighted to any narrower law.

    The target density is ``~ g(chord) dvol``: samples drawn with ``g_k`` and
    weighted by ``g(chord) / g_k(chord)`` are exact (self-normalised) importance
    samples of it whenever ``g_k > 0`` wherever ``g > 0`` (a broader law of the
    same family). The exact density uses the same bank: the polar data
    ``(chord, V)`` on a Gauss-Legendre grid over the bank's radial range
    (``n_panels`` panels, finer than :func:`exact_directional_density`'s 12 over
    the narrower target range), integrated against the target's ``g``.

    Parameters
    ----------
    manifold : Submanifold with ``d = 2``
    law_k : RadialLaw
        The (broad) law the bank is drawn from.
    n : int
        Bank size.
    rng : numpy.random.Generator or int seed
    u_curve : ndarray (m, 2)
        Unit directions where :meth:`exact` evaluates the exact density.
    n_panels, n_dirs : int
        Radial panels and direction nodes of the exact quadrature.

    Attributes
    ----------
    u : ndarray (n, 2)
        Sampled directions.
    chord : ndarray (n,)
        Their chords ``||y - mu||``.

    Example
    -------
    >>> from tanbias.manifolds import Cylinder
    >>> th = np.linspace(0.0, math.pi, 5)
    >>> C, broad = Cylinder(R=1.0), Gaussian(0.3)
    >>> bank = DirectionBank(C, broad, 4000, 0, np.stack([np.cos(th), np.sin(th)], axis=1))
    >>> w = bank.weights(Gaussian(0.2))
    >>> bool(np.all(w >= 0)), bool(np.allclose(bank.exact(broad)[[0, -1]], bank.exact(broad)[-1]))
    (True, True)
    """

    def __init__(self, manifold, law_k, n, rng, u_curve, n_panels=48, n_dirs=64):
        self.law = law_k
        s = manifold.sample(n, law_k, rng)
        self.u, self.chord = s.u, s.chord
        self.g_k = law_k.g(s.chord)
        c_eff = law_k.effective_radius(manifold.d, 1e-16)
        top = min(manifold.patch_radius, 0.5 * math.pi * c_eff)
        r, self.wr = _gl_panels(top, n_panels)
        nodes, self.wnodes = _uniform_rule(manifold, n_dirs)
        self.n_curve = u_curve.shape[0]
        self.grid_chord, self.grid_vol = _chord_volume(manifold, r,
                                                       np.concatenate([u_curve, nodes]))

    def weights(self, law) -> np.ndarray:
        """Importance weights ``g(chord) / g_k(chord)`` of the bank's samples for ``law``."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.g_k > 0, law.g(self.chord) / self.g_k, 0.0)

    def exact(self, law) -> np.ndarray:
        """Exact directional density of ``law`` at ``u_curve`` (relative to uniform)."""
        both = self.wr @ (law.g(self.grid_chord) * self.grid_vol)
        return both[:self.n_curve] / (self.wnodes @ both[self.n_curve:])


class DirectionSamples:
    """The Monte Carlo directions of chapter 3: several surfaces, a grid of ``eta_g``.

    One object serves both the chapter's checks and its interactive figure
    (:func:`tanbias.figures.directional.directions_interactive`):

    * :meth:`data` draws fresh, exact samples for one ``(eta_g, surface)`` (cached), the
      numbers of :func:`direction_density_data`;
    * :meth:`live` answers a live slider move fast: banks of samples drawn once (on
      the first call) at log-spaced ``eta_k`` (consecutive ratio <= 2) are reweighted
      to the requested ``eta_g`` (exact importance sampling, see :class:`DirectionBank`).

    Parameters
    ----------
    surfaces : dict[str, Submanifold]
        Surfaces (``d = 2``) by name, e.g. cylinder, saddle, sphere.
    etas : sequence of float
        The grid of ``eta_g`` values (increasing).
    law : RadialLaw, optional
        Family rescaled to each ``eta_g`` (default ``Epanechnikov(1.0)``: compact,
        so samples stay inside a quadric's patch).
    n : dict[str, int] or int, optional
        Monte Carlo size per surface (default 50 000); the live banks hold a sixth
        of it (at least 2000).
    seed : int
        Every ``(surface, eta_g)`` sample is reproducible.
    bins : int
        Histogram bins of the direction angle.

    Attributes
    ----------
    surfaces, law, etas, sizes, seed, bins, names
        The arguments, normalised (``names``: the surfaces' names in order).
    bank_etas : ndarray
        The ``eta_k`` of the live banks.

    Example
    -------
    >>> from tanbias.manifolds import Cylinder, Sphere
    >>> ds = DirectionSamples({"cylinder": Cylinder(R=1.0), "sphere": Sphere(2, R=1.0, D=3)},
    ...                       (0.01, 0.1), n=2000)
    >>> ds.data(0.1, "cylinder")["u"].shape, ds.data(0.1, "cylinder") is ds.data(0.1, "cylinder")
    ((2000, 2), True)
    >>> frame = ds.live("cylinder", 0.05)
    >>> frame["bank_eta_g"], frame["u"].shape
    (0.1, (2000, 2))
    """

    def __init__(self, surfaces, etas, law=None, n=None, seed=0, bins=12) -> None:
        from .radial import Epanechnikov

        self.surfaces = dict(surfaces)
        self.law = Epanechnikov(1.0) if law is None else check_instance(
            "law", law, RadialLaw, hint="Pass e.g. tanbias.radial.Epanechnikov(1.0).")
        self.etas = tuple(float(e) for e in etas)
        self.sizes = n if isinstance(n, dict) else {
            k: (50_000 if n is None else int(n)) for k in self.surfaces}
        self.seed = check_int("seed", seed, lo=0, hint="Pass an integer seed.")
        self.bins = bins
        self.names = tuple(self.surfaces)
        etas = self.etas
        self.n_banks = max(2, int(math.ceil(math.log(etas[-1] / etas[0]) / math.log(2.0))) + 1) \
            if etas[-1] > etas[0] else 1
        self.bank_etas = np.geomspace(etas[0], etas[-1], self.n_banks)
        self.bank_etas[0], self.bank_etas[-1] = etas[0], etas[-1]
        self._banks: dict = {}
        self._frames: dict = {}
        self._th_curve = np.linspace(0.0, math.pi, 91)
        self._u_curve = np.stack([np.cos(self._th_curve), np.sin(self._th_curve)], axis=1)

    def _surface(self, surface) -> str:
        return check_choice("surface", surface, self.names, hint="Pass one of the surfaces' names.")

    def data(self, eta_g, surface, n_samples=None) -> dict:
        """Fresh exact samples at ``eta_g`` on ``surface`` (cached): see
        :func:`direction_density_data` for the keys. ``n_samples`` overrides the size."""
        key = (eta_g, surface, n_samples)
        if key not in self._frames:
            surface = self._surface(surface)
            M = self.surfaces[surface]
            rng = np.random.default_rng([self.seed, self.names.index(surface),
                                         int(round(1e6 * eta_g))])
            size = self.sizes[surface] if n_samples is None else n_samples
            self._frames[key] = direction_density_data(M, self.law.with_eta(eta_g, M.d), size, rng,
                                                       self.bins)
        return self._frames[key]

    def bank(self, surface, k) -> DirectionBank:
        """The live bank ``k`` (drawn at ``bank_etas[k]``) of ``surface``, drawn on first use."""
        if (surface, k) not in self._banks:
            M = self.surfaces[surface]
            rng = np.random.default_rng([self.seed, self.names.index(surface), k, 7])
            self._banks[surface, k] = DirectionBank(
                M, self.law.with_eta(float(self.bank_etas[k]), M.d),
                max(2000, self.sizes[surface] // 6), rng, self._u_curve)
        return self._banks[surface, k]

    def live(self, surface, eta_g) -> dict:
        """A fast frame at any ``eta_g`` in the grid's range: the nearest broader bank,
        reweighted. Keys of :func:`direction_density_data` plus ``weights``, ``ess``
        (effective sample size) and ``bank_eta_g``."""
        surface = self._surface(surface)
        eta_g = float(eta_g)
        if not self._banks:                       # first live update: every bank, once
            for name in self.names:
                for k in range(self.n_banks):
                    self.bank(name, k)
        M = self.surfaces[surface]
        target = self.law.with_eta(eta_g, M.d)
        k = min(int(np.searchsorted(self.bank_etas, eta_g * (1 - 1e-12))), self.n_banks - 1)
        b = self.bank(surface, k)
        w = b.weights(target)
        eta = target.eta_g(2)
        return dict(theta=self._th_curve, first_order=first_order_density(M, eta, self._u_curve),
                    exact=b.exact(target), hist=direction_histogram(b.u, self.bins, weights=w),
                    u=b.u, weights=w, ess=float(w.sum() ** 2 / np.sum(w ** 2)),
                    bank_eta_g=float(self.bank_etas[k]), eta_g=eta,
                    name=getattr(M, "name", type(M).__name__))


# ------------------------------------------------------------------ chapter 3: checks
def surface_direction_checks(samples, eta_g) -> dict:
    """:func:`direction_checks` of every surface of ``samples``, on its sampled directions
    at ``eta_g`` (the same samples as the interactive figure's frame).

    Parameters
    ----------
    samples : DirectionSamples
    eta_g : float
        One of ``samples.etas``.

    Returns
    -------
    dict[str, dict]
        Surface name -> the numbers of :func:`direction_checks`.

    Example
    -------
    >>> from tanbias.manifolds import Cylinder, Sphere
    >>> ds = DirectionSamples({"cylinder": Cylinder(R=1.0), "sphere": Sphere(2, R=1.0, D=3)},
    ...                       (0.01, 0.1), n=3000)
    >>> sorted(surface_direction_checks(ds, 0.1))
    ['cylinder', 'sphere']
    """
    samples = check_instance("samples", samples, DirectionSamples,
                             hint="Pass a tanbias.directional.DirectionSamples.")
    out = {}
    for name, M in samples.surfaces.items():
        u = samples.data(eta_g, name)["u"]
        out[name] = direction_checks(M, samples.law.with_eta(eta_g, M.d), u, samples.bins)
    return out


def _is_control(manifold) -> bool:
    """True where ``b`` is constant (a sphere): no direction is special."""
    mean_b, var_b = uniform_bias_moments(manifold)
    return var_b <= 1e-12 * max(1.0, mean_b ** 2)


def direction_verdicts(samples, numbers) -> list[Check]:
    """The checks of chapter 3's Monte Carlo directions, from :func:`surface_direction_checks`.

    Per surface: the angle histogram fits the exact law (chi-square p >= 1e-3) and,
    where ``b`` varies, the Monte Carlo bias amplitude matches the exact one within
    4 standard errors. Then, for each control surface (constant ``b``, a sphere),
    the histogram fits uniform directions.

    Returns
    -------
    list[Check]

    Example
    -------
    >>> from tanbias.manifolds import Cylinder, Sphere
    >>> ds = DirectionSamples({"cylinder": Cylinder(R=1.0), "sphere": Sphere(2, R=1.0, D=3)},
    ...                       (0.01, 0.1), n=3000)
    >>> [c.label for c in direction_verdicts(ds, surface_direction_checks(ds, 0.1))]  # doctest: +NORMALIZE_WHITESPACE
    ['cylinder: chi-square p against exact law', 'cylinder: MC bias amplitude vs exact',
     'sphere: chi-square p against exact law', 'sphere: chi-square p against uniform']
    """
    out, controls = [], []
    for name, c in numbers.items():
        out.append(check_in_interval(f"{name}: chi-square p against exact law",
                                     c["chi2_exact"][2], 1e-3, 1.0))
        if _is_control(samples.surfaces[name]):
            controls.append(name)
        else:
            out.append(check_close(f"{name}: MC bias amplitude vs exact", c["amplitude"],
                                   c["exact_amplitude"], atol=4 * c["amplitude_se"]))
    for name in controls:
        out.append(check_in_interval(f"{name}: chi-square p against uniform",
                                     numbers[name]["chi2_uniform"][2], 1e-3, 1.0))
    return out


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


def mc_bias_amplitudes(manifold, law, etas, n=200_000, seed=11) -> dict:
    """Monte Carlo bias amplitudes ``E_p[b] - E_unif[b]`` at a few ``eta_g``, with the exact values.

    Sample ``i`` (at ``etas[i]``) uses ``numpy.random.default_rng(seed + i)``.

    Parameters
    ----------
    manifold : Submanifold
    law : RadialLaw
        Family, rescaled to each ``eta_g``.
    etas : array_like, shape (m,)
    n : int
        Samples per ``eta_g``.
    seed : int

    Returns
    -------
    dict
        ``eta_g`` (m,), ``amplitude``, ``se``, ``exact`` (lists of float, length m):
        the ``mc`` argument of :func:`tanbias.figures.directional.amplitude_figure`.

    Example
    -------
    >>> from tanbias.manifolds import Cylinder
    >>> mc = mc_bias_amplitudes(Cylinder(R=1.0), Gaussian(1.0), [0.1], n=20_000)
    >>> bool(abs(mc["amplitude"][0] - mc["exact"][0]) < 4 * mc["se"][0])
    True
    """
    manifold = _check_manifold(manifold)
    law = check_instance("law", law, RadialLaw, hint="Pass e.g. tanbias.radial.Gaussian(1.0).")
    etas = check_array("etas", etas, shape=(None,))
    out = {"eta_g": etas, "amplitude": [], "se": [], "exact": []}
    for i, eta in enumerate(etas):
        target = law.with_eta(eta, manifold.d)
        u = manifold.sample(n, target, np.random.default_rng(seed + i)).u
        a, se = bias_amplitude(u, manifold, return_stderr=True)
        out["amplitude"].append(a)
        out["se"].append(se)
        out["exact"].append(exact_bias_amplitude(manifold, target))
    return out


def ring_first_order(manifold, law, t, s) -> np.ndarray:
    """First-order direction law on the ring ``r = t`` of ``S^k_R x R^(d-k)`` under a
    Gaussian law, as a deviation from uniform, against the sphere share ``s``.

    The chord factor gives ``t^2 (t / sigma)^2 (s^2 - E[s^2]) / (24 R^2)`` (extrinsic
    curvature, ``||II(u,u)||^2 = s^2 / R^2``) and the volume factor
    ``-t^2 (k-1) (s - E[s]) / (6 R^2)`` (Ricci curvature), with uniform means
    ``E[s] = k/d`` and ``E[s^2]``. Compare with ``ring_factors(...)["ring"] - 1``.

    Parameters
    ----------
    manifold : GeneralizedCylinder
    law : Gaussian
    t : float > 0
        Ring radius.
    s : array_like
        Sphere shares in ``[0, 1]``.

    Returns
    -------
    ndarray, same shape as ``s``

    Example
    -------
    >>> from tanbias.manifolds import GeneralizedCylinder
    >>> M = GeneralizedCylinder(k=2, d=3, R=1.0, D=4)
    >>> s = np.linspace(0.0, 1.0, 5)
    >>> u = np.stack([np.sqrt(s), 0 * s, np.sqrt(1 - s)], axis=1)
    >>> exact = ring_factors(M, Gaussian(0.1), 0.05, u)["ring"] - 1
    >>> bool(np.allclose(exact, ring_first_order(M, Gaussian(0.1), 0.05, s), atol=1e-5))
    True
    """
    manifold = check_instance("manifold", manifold, GeneralizedCylinder,
                              hint="Pass GeneralizedCylinder(k=2, d=3, R=1.0, D=4).")
    law = check_instance("law", law, Gaussian, hint="Pass a tanbias.radial.Gaussian.")
    t = check_real("t", t, lo=0, hint="Pass a positive ring radius.")
    s = np.asarray(s, dtype=np.float64)
    E = _share_moments(manifold)
    R2 = manifold.R ** 2
    extrinsic = (t / law.sigma) ** 2 * (s ** 2 - E[2]) / (24 * R2)
    return t ** 2 * (extrinsic - (manifold.k - 1) * (s - E[1]) / (6 * R2))

