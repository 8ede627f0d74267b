"""Statistics and histograms of sampled directions, against the predicted law (chapter 3).

A direction ``u`` of a ``d``-manifold's tangent space is summarised by a 1-D
statistic whose law under uniform directions is known
(:class:`DirectionStatistic`): for ``d = 2`` the angle ``theta`` in ``[0, pi)``
(``u`` and ``-u`` are equally likely on the classes here); for ``d > 2`` the
sphere share ``s = |u_S|^2`` on a ``GeneralizedCylinder``
(:func:`sphere_share_statistic`) or the squared cosine to an axis
(:func:`axis_statistic`). :func:`direction_histogram` turns sampled
directions (optionally importance-weighted) into a density relative to
uniform with standard errors; :func:`first_order_histogram` and
:func:`exact_histogram` average the predicted densities of
:mod:`tanbias.theory.directional_density` over the same bins, and
:func:`compare_histogram` puts the three side by side with chi-square tests.
Chapter 3 uses them through :mod:`tanbias.theory.direction_samples` and
:mod:`tanbias.theory.ricci_sign`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy import stats as _st

from tanbias._checks import check_array, check_instance, check_int, check_real
from tanbias.theory.directional_density import ETA_HINT, exact_directional_density, first_order_density
from tanbias.errors import ParameterError
from tanbias.theory.manifolds import GeneralizedCylinder, check_manifold
from tanbias.theory.radial import Gaussian, RadialLaw  # noqa: F401  (Gaussian: doctests)

__all__ = [
    "DirectionStatistic", "angle_statistic", "sphere_share_statistic", "axis_statistic",
    "default_statistic", "DirectionHistogram", "direction_histogram", "first_order_histogram",
    "exact_histogram", "HistogramComparison", "compare_histogram",
]


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

    Returns
    -------
    DirectionStatistic

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
    """``s = |u_S|^2`` on a ``GeneralizedCylinder`` (reference ``Beta(k/2, (d-k)/2)``).

    Parameters
    ----------
    manifold : GeneralizedCylinder with ``k < d``

    Returns
    -------
    DirectionStatistic

    Raises
    ------
    ParameterError
        Another manifold, or ``k = d`` (a sphere: ``s = 1`` always).

    Example
    -------
    >>> from tanbias.theory.manifolds import GeneralizedCylinder
    >>> st = sphere_share_statistic(GeneralizedCylinder(k=2, d=3, R=1.0, D=4))
    >>> st.name, float(st.fn(np.array([[1.0, 0.0, 0.0]]))[0]), float(st.ref_cdf(1.0))
    ('s = |u_S|^2', 1.0, 1.0)
    """
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
    """``c = u_axis^2``: squared cosine to a coordinate axis (reference ``Beta(1/2, (d-1)/2)``).

    Parameters
    ----------
    d : int >= 2
        Tangent dimension.
    axis : int in [0, d - 1]
        Tangent coordinate.

    Returns
    -------
    DirectionStatistic

    Example
    -------
    >>> st = axis_statistic(3, axis=1)
    >>> st.name, float(st.fn(np.array([[0.6, 0.8, 0.0]]))[0])
    ('u_1^2', 0.64)
    """
    d = check_int("d", d, lo=2, hint="Pass a dimension d >= 2.")
    axis = check_int("axis", axis, lo=0, hi=d - 1, hint="Pass a tangent coordinate index.")
    ref = _st.beta(0.5, (d - 1) / 2)
    return DirectionStatistic(f"u_{axis}^2", lambda u: u[:, axis] ** 2, ref.cdf, 0.0, 1.0,
                              "axis", d)


def default_statistic(d: int, statistic) -> DirectionStatistic:
    """``statistic`` itself, or the angle statistic when it is ``None`` and ``d = 2``.

    Parameters
    ----------
    d : int
        Intrinsic dimension of the directions.
    statistic : DirectionStatistic or None

    Returns
    -------
    DirectionStatistic

    Raises
    ------
    ParameterError
        ``statistic=None`` with ``d != 2`` (no default there), or not a
        :class:`DirectionStatistic`.

    Example
    -------
    >>> default_statistic(2, None).name
    'theta'
    """
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
    >>> from tanbias.theory.manifolds import uniform_directions
    >>> h = direction_histogram(uniform_directions(40_000, 2, np.random.default_rng(1)), bins=4)
    >>> bool(np.all(np.abs(h.density - 1) < 5 * h.stderr))
    True
    """
    u = check_array("u", u, shape=(None, None), hint="Pass Samples.u, shape (n, d).")
    stat = default_statistic(u.shape[1], statistic)
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
    """Bin densities (relative to uniform) predicted by the first-order law
    (:func:`~tanbias.theory.directional_density.first_order_density`).

    Parameters
    ----------
    manifold : Submanifold
    eta_g : float > 0
    edges : array_like, shape (bins + 1,)
        Bin edges of the statistic.
    statistic : DirectionStatistic or None
        Default: the angle (``d = 2`` only). Exact bin averages exist for the angle and
        the sphere share.

    Returns
    -------
    ndarray, shape (len(edges) - 1,)

    Example
    -------
    >>> from tanbias.theory.manifolds import Sphere
    >>> bool(np.allclose(first_order_histogram(Sphere(2, R=1.0, D=3), 0.1, [0, 1, 2, np.pi]), 1))
    True
    """
    manifold = check_manifold(manifold)
    eta_g = check_real("eta_g", eta_g, lo=0, hint=ETA_HINT)
    stat = default_statistic(manifold.d, statistic)
    edges = check_array("edges", edges, shape=(None,))
    return _bin_average(manifold, stat, edges,
                        lambda u: first_order_density(manifold, eta_g, u))


def exact_histogram(manifold, law, edges, statistic=None, **kw) -> np.ndarray:
    """Bin densities (relative to uniform) of the exact directional law.

    Parameters
    ----------
    manifold : GeneralizedCylinder or Quadric
    law : RadialLaw
    edges : array_like, shape (bins + 1,)
    statistic : DirectionStatistic or None
        As :func:`first_order_histogram`.
    **kw
        ``n_panels``, ``n_dirs`` of :func:`~tanbias.theory.directional_density.exact_directional_density`.

    Returns
    -------
    ndarray, shape (len(edges) - 1,)

    Example
    -------
    >>> from tanbias.theory.manifolds import Cylinder
    >>> h = exact_histogram(Cylinder(R=1.0), Gaussian(0.3), np.linspace(0, np.pi, 5))
    >>> bool(h[0] > 1 > h[1])                    # theta near 0 (the curved direction) favoured
    True
    """
    manifold = check_manifold(manifold)
    stat = default_statistic(manifold.d, statistic)
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

    Parameters
    ----------
    manifold : GeneralizedCylinder or Quadric
    law : RadialLaw
        The law ``u`` was sampled from.
    u : array_like, shape (n, d)
        Sampled directions.
    bins : int or array_like of edges
    statistic : DirectionStatistic or None
        As :func:`direction_histogram`.

    Returns
    -------
    HistogramComparison

    Example
    -------
    >>> from tanbias.theory.manifolds import Cylinder
    >>> C, law = Cylinder(R=1.0), Gaussian(0.3)
    >>> s = C.sample(20_000, law, np.random.default_rng(0))
    >>> cmp = compare_histogram(C, law, s.u, bins=6)
    >>> bool(cmp.chi2_exact[2] > 1e-3)
    True
    """
    manifold = check_manifold(manifold)
    law = check_instance("law", law, RadialLaw, hint="Pass e.g. tanbias.theory.radial.Gaussian(0.1).")
    hist = direction_histogram(u, bins, statistic if statistic is not None
                               else default_statistic(manifold.d, None))
    stat = default_statistic(manifold.d, statistic)
    eta = law.eta_g(manifold.d)
    fo = first_order_histogram(manifold, eta, hist.edges, stat)
    ex = exact_histogram(manifold, law, hist.edges, stat)
    return HistogramComparison(hist, fo, ex, hist.chi_square(fo), hist.chi_square(ex), eta)
