"""Submanifolds of R^D with exact geometry and exact sampling (chapters 1-6).

Every manifold is built in a small *local frame* (where its equations are
simple) and then placed in ``R^D`` by a random rotation drawn from ``seed``,
with its base point ``mu`` anywhere (default: a random point). Tangent
coordinates are coordinates in ``tangent_basis`` (``D x d``, orthonormal
columns); normal coordinates are coordinates in ``normal_basis``
(``D x (D-d)``).

Geometry at ``mu``
------------------
``second_fundamental_form(u, v)`` is exact (closed form for every class), and
``ricci(u)`` follows from the Gauss equation, exact for any submanifold of
Euclidean space::

    Ric(u, u) = <II(u, u), H> - sum_i |II(u, e_i)|^2,     H = sum_i II(e_i, e_i).

Sampling
--------
``sample(n, law, rng)`` draws points with density proportional to
``g(||y - mu||)`` with respect to the manifold's volume measure, *exactly*, for
the law truncated to the geodesic ball ``r <= patch_radius`` (a patch well
inside the injectivity radius; the truncated mass is negligible whenever the
law is concentrated, which is the regime the book studies). Each sample
carries its geodesic polar coordinates ``(r, u)`` at ``mu`` -- the *geodesic*
direction ``u``, not the direction of ``y - mu`` projected on the tangent
space, which differs at order ``r^2``: the same order as the curvature effect
being measured.

Classes
-------
GeneralizedCylinder(k, d, R, D, seed)   S^k_R x R^(d-k), closed-form exp/log
Sphere(d, R, D, seed), Cylinder(R, D, seed)
Quadric(A, D, seed, patch_radius)       graph x -> (x, 1/2 x^T A_j x), RK4 exp, iterative log
Saddle(kappa, D, seed)                  Quadric with A = diag(kappa, -kappa)
StratifiedSet(D, angle, seed)           two planes crossing along a line (not a manifold)
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from tanbias._checks import (PRECISION_RTOL, check_above_floor, check_array, check_instance, check_int,
                             check_real, check_resolved, check_rng, check_tangent)
from tanbias.errors import ParameterError
from tanbias.theory.radial import Gaussian, RadialLaw  # noqa: F401  (Gaussian: doctests)

__all__ = [
    "Samples", "StratifiedSamples", "Submanifold", "GeneralizedCylinder", "Sphere",
    "Cylinder", "Quadric", "Saddle", "StratifiedSet", "uniform_directions", "check_manifold",
]

_N_HINT = "Pass a whole number of samples n >= 1."
_LAW_HINT = "Pass e.g. tanbias.theory.radial.Gaussian(0.1)."
_MAX_ROUNDS = 200


@dataclass
class Samples:
    """Points sampled on a manifold around its base point ``mu``.

    Attributes
    ----------
    y : ndarray, shape (n, D)
        Points on the manifold.
    r : ndarray, shape (n,)
        Geodesic distance to ``mu``.
    u : ndarray, shape (n, d)
        Unit geodesic direction at ``mu`` in tangent coordinates
        (``y = exp(r u)``).
    chord : ndarray, shape (n,)
        Ambient distance ``||y - mu||``.
    tangent : ndarray, shape (n, d)
        Coordinates of ``y - mu`` in ``tangent_basis``.
    normal : ndarray, shape (n, D - d)
        Coordinates of ``y - mu`` in ``normal_basis``.
    """

    y: np.ndarray
    r: np.ndarray
    u: np.ndarray
    chord: np.ndarray
    tangent: np.ndarray
    normal: np.ndarray

    def __len__(self) -> int:
        return int(self.y.shape[0])


@dataclass
class StratifiedSamples:
    """Points sampled on a :class:`StratifiedSet`.

    Attributes
    ----------
    y : ndarray, shape (n, D)
    sheet : ndarray of int, shape (n,)
        Which sheet (0 or 1) each point lies on.
    chord : ndarray, shape (n,)
        ``||y - mu||`` (also the intrinsic distance inside the sheet).
    """

    y: np.ndarray
    sheet: np.ndarray
    chord: np.ndarray

    def __len__(self) -> int:
        return int(self.y.shape[0])


def uniform_directions(n, d, rng) -> np.ndarray:
    """``n`` independent uniform unit vectors of ``R^d``.

    Returns
    -------
    ndarray, shape (n, d)

    Example
    -------
    >>> u = uniform_directions(4, 3, np.random.default_rng(0))
    >>> u.shape, bool(np.allclose(np.linalg.norm(u, axis=1), 1))
    ((4, 3), True)
    """
    n = check_int("n", n, lo=1, hint=_N_HINT)
    d = check_int("d", d, lo=1, hint="Pass a dimension d >= 1.")
    rng = check_rng(rng)
    z = rng.standard_normal((n, d))
    nz = np.linalg.norm(z, axis=1, keepdims=True)
    while np.any(nz == 0):  # probability zero, but keep the output exact
        bad = nz[:, 0] == 0
        z[bad] = rng.standard_normal((int(bad.sum()), d))
        nz = np.linalg.norm(z, axis=1, keepdims=True)
    return z / nz


def _random_frame(D: int, seed) -> tuple[np.ndarray, np.random.Generator]:
    rng = np.random.default_rng(seed)
    q, rr = np.linalg.qr(rng.standard_normal((D, D)))
    return q * np.sign(np.diag(rr)), rng


def _check_seed(seed):
    if seed is None:
        return None
    return check_int("seed", seed, lo=0, hint="Pass a non-negative integer seed, or None.")


def _check_law(law) -> RadialLaw:
    return check_instance("law", law, RadialLaw, hint=_LAW_HINT)


class Submanifold(ABC):
    """A ``d``-dimensional submanifold of ``R^D`` seen from its base point ``mu``.

    Subclasses set ``d, D, mu, tangent_basis, normal_basis, patch_radius`` and
    the array ``_ii`` of shape ``(D-d, d, d)``: the second fundamental form at
    ``mu`` in normal coordinates (``II(u, v)_j = u^T _ii[j] v``); they
    implement :meth:`exp`, :meth:`log`, :meth:`sample` and
    :meth:`polar_volume_element`.

    Attributes
    ----------
    d, D : int
    mu : ndarray, shape (D,)
    tangent_basis : ndarray, shape (D, d)
    normal_basis : ndarray, shape (D, D - d)
    patch_radius : float
        Geodesic radius of the patch on which sampling is exact.
    """

    d: int
    D: int
    mu: np.ndarray
    tangent_basis: np.ndarray
    normal_basis: np.ndarray
    patch_radius: float
    name: str = "submanifold"
    _ii: np.ndarray

    # --- extrinsic and intrinsic curvature at mu -----------------------------
    def second_fundamental_form(self, u, v=None) -> np.ndarray:
        """``II(u, v)`` at ``mu`` in normal coordinates.

        Parameters
        ----------
        u, v : array_like, shape (..., d)
            Tangent vectors in tangent coordinates (``v`` defaults to ``u``);
            leading axes broadcast.

        Returns
        -------
        ndarray, shape (..., D - d)

        Raises
        ------
        ParameterError
            If the last axis is not ``d``.

        Example
        -------
        >>> S = Sphere(2, R=2.0, D=4, seed=0)
        >>> S.second_fundamental_form([1.0, 0.0])
        array([0.5, 0. ])
        """
        u = check_tangent("u", u, self.d)
        v = u if v is None else check_tangent("v", v, self.d)
        return np.einsum("...a,jab,...b->...j", u, self._ii, v)

    def ii_matrices(self) -> np.ndarray:
        """The shape operators: ``II(u, v)_j = u^T A[j] v``; shape ``(D-d, d, d)``."""
        return self._ii.copy()

    def mean_square_ii(self) -> float:
        """``E ||II(u, u)||^2`` for ``u`` uniform on the unit sphere of ``T_mu``, exactly.

        For a symmetric ``A``, ``E[(u^T A u)^2] = (2 tr(A^2) + tr(A)^2) / (d (d + 2))``;
        sum over the normal directions.

        Example
        -------
        >>> round(Cylinder(R=1.0).mean_square_ii(), 12)      # E cos^4 = 3/8
        0.375
        """
        A, d = self._ii, self.d
        tr2 = np.einsum("jab,jba->", A, A)
        tr_sq = np.sum(np.einsum("jaa->j", A) ** 2)
        return float((2 * tr2 + tr_sq) / (d * (d + 2)))

    def normal_size(self, t) -> float:
        """RMS size ``c t^2`` of the normal part at geodesic radius ``t`` (to leading order),
        with ``c = sqrt(E||II(u,u)||^2) / 2``.

        Example
        -------
        >>> round(Sphere(2, R=1.0, D=3).normal_size(0.1), 6)     # t^2 / (2R)
        0.005
        """
        return 0.5 * math.sqrt(self.mean_square_ii()) * float(t) ** 2

    def normal_floor(self, rtol: float = PRECISION_RTOL) -> float:
        """The smallest geodesic radius at which the normal part of ``y - mu`` is resolved.

        The normal part at radius ``t`` is about ``c t^2`` (:meth:`normal_size`), and it is
        computed as the difference ``y - mu``, rounded to about ``eps (||mu|| + t)``. The
        floor is the ``t`` where that rounding is ``rtol`` of the normal part, the root of
        ``rtol c t^2 = eps (||mu|| + t)``. Below it a normal quantity is rounding noise:
        :func:`tanbias._checks.check_resolved` refuses such a radius with a
        :class:`~tanbias.errors.PrecisionLossError`. A flat manifold (``c = 0``) has no
        floor (0).

        Parameters
        ----------
        rtol : float in (0, 1)
            The largest relative rounding error accepted (:data:`tanbias._checks.PRECISION_RTOL`).

        Returns
        -------
        float

        Example
        -------
        >>> M = Cylinder(R=1.0, D=3, seed=0)        # |mu| = 1.41, c = sqrt(3/8) / 2
        >>> f"{M.normal_floor():.2g}"
        '3.2e-07'
        >>> Cylinder(R=1.0, D=3, seed=0, mu=np.zeros(3)).normal_floor() < 1e-11
        True
        """
        rtol = check_real("rtol", rtol, lo=0, hi=1, hint="Pass a relative error, e.g. 0.01.")
        c = 0.5 * math.sqrt(self.mean_square_ii())
        if c == 0:
            return 0.0
        eps = float(np.finfo(np.float64).eps)
        a, mu = rtol * c, float(np.linalg.norm(self.mu))
        return float((eps + math.sqrt(eps ** 2 + 4 * a * eps * mu)) / (2 * a))

    def mean_curvature(self) -> np.ndarray:
        """``H = sum_i II(e_i, e_i)`` (unnormalised), shape ``(D - d,)``."""
        return self.second_fundamental_form(np.eye(self.d)).sum(axis=0)

    def ricci(self, u) -> np.ndarray:
        """``Ric(u, u)`` at ``mu`` from the Gauss equation.

        ``Ric(u, u) = <II(u, u), H> - sum_i |II(u, e_i)|^2``, exact for any
        submanifold of Euclidean space (quadratic in ``u``, so ``u`` need not
        be a unit vector).

        Parameters
        ----------
        u : array_like, shape (..., d)

        Returns
        -------
        ndarray, shape (...)

        Example
        -------
        >>> round(float(Sphere(3, R=2.0, D=4, seed=0).ricci([1.0, 0.0, 0.0])), 12)
        0.5
        """
        u = check_tangent("u", u, self.d)
        H = self.mean_curvature()
        basis = np.eye(self.d)
        iu_e = self.second_fundamental_form(u[..., None, :], basis)      # (..., d, D-d)
        return (self.second_fundamental_form(u) @ H) - np.sum(iu_e ** 2, axis=(-1, -2))

    def ricci_matrix(self) -> np.ndarray:
        """Symmetric ``(d, d)`` matrix ``Ric`` with ``Ric(u, u) = u^T Ric u``."""
        A = self._ii
        H = np.einsum("jaa->j", A)
        return np.einsum("j,jab->ab", H, A) - np.einsum("jac,jcb->ab", A, A)

    # --- maps -------------------------------------------------------------------
    @abstractmethod
    def exp(self, w) -> np.ndarray:
        """Exponential map at ``mu``: ``w`` (..., d) tangent coords -> (..., D)."""

    def log(self, y):
        """Inverse of :meth:`exp` on the patch: (..., D) -> (..., d)."""
        raise NotImplementedError(f"{type(self).__name__} has no log map.")

    @abstractmethod
    def residual(self, y) -> np.ndarray:
        """How far points ``y`` (..., D) are from satisfying the manifold's
        defining equations (0 on the manifold)."""

    @abstractmethod
    def polar_volume_element(self, r, u) -> np.ndarray:
        """Volume density in geodesic polar coordinates: ``dvol = V(r, u) dr du``.

        ``V(r, u) = r^(d-1) (1 - Ric(u, u) r^2 / 6 + ...)``; ``r`` (m,) and
        ``u`` (k, d) give an array of shape (m, k).
        """

    def chord_along(self, r, u) -> np.ndarray:
        """``||exp(r u) - mu||`` for radii ``r`` (m,) and unit directions ``u`` (k, d):
        shape (m, k)."""
        r = np.asarray(r, dtype=np.float64)
        u = check_tangent("u", u, self.d)
        y = self.exp(r[:, None, None] * u[None, :, :])
        return np.linalg.norm(y - self.mu, axis=-1)

    # --- sampling ---------------------------------------------------------------
    @abstractmethod
    def sample(self, n, law, rng) -> Samples:
        """Exact sample with density ``~ g(||y - mu||)`` w.r.t. volume, on the patch."""

    def sample_at_radius(self, t, n, rng) -> Samples:
        """Points at geodesic distance exactly ``t`` from ``mu``, direction uniform.

        Parameters
        ----------
        t : float in (0, patch_radius]
        n : int >= 1
        rng : numpy.random.Generator or int seed

        Returns
        -------
        Samples

        Raises
        ------
        ParameterError
            Bad ``t``, ``n`` or ``rng``.
        PrecisionLossError
            ``t`` below :meth:`normal_floor`: the normal coordinates would be rounding.

        Example
        -------
        >>> S = Sphere(2, R=1.0, D=3, seed=1)
        >>> s = S.sample_at_radius(0.5, 3, np.random.default_rng(0))
        >>> bool(np.allclose(s.r, 0.5)), bool(np.allclose(s.chord, 2 * np.sin(0.25)))
        (True, True)
        """
        t = check_real("t", t, lo=0, hi=self.patch_radius, hi_open=False,
                       hint=f"Pass a positive radius no larger than patch_radius="
                            f"{self.patch_radius:g}.")
        t = check_resolved(t, self)
        n = check_int("n", n, lo=1, hint=_N_HINT)
        rng = check_rng(rng)
        u = uniform_directions(n, self.d, rng)
        y = self.exp(t * u)
        return self._samples(y, np.full(n, t), u)

    def _check_law_resolved(self, law) -> None:
        """Refuse a law so concentrated that its typical sample (RMS radius ``sqrt(eta_g)``)
        has a normal part below the rounding of ``y - mu`` (:meth:`normal_floor`)."""
        rms = math.sqrt(law.eta_g(self.d))
        floor = self.normal_floor()
        if rms < floor:
            check_above_floor(
                "eta_g", law.eta_g(self.d), floor ** 2,
                f"The law's RMS radius {rms:.2g} is below this manifold's precision floor "
                f"{floor:.2g}: the normal parts of its samples would be rounding noise. "
                f"Pass a wider law, or build the manifold with mu nearer the origin.")

    def _samples(self, y, r, u) -> Samples:
        diff = y - self.mu
        return Samples(y=y, r=r, u=u, chord=np.linalg.norm(diff, axis=-1),
                       tangent=diff @ self.tangent_basis, normal=diff @ self.normal_basis)

    def _check_patch(self, patch_radius, default: float, upper: float, upper_open: bool,
                     why: str) -> float:
        if patch_radius is None:
            return float(default)
        return check_real("patch_radius", patch_radius, lo=0, hi=upper, hi_open=upper_open,
                          hint=f"Pass a geodesic radius {why}.")

    def _frame(self, D: int, local_dim: int, seed, mu) -> np.ndarray:
        """Random rotation and base point; returns the (D, local_dim) local frame."""
        Q, rng = _random_frame(D, seed)
        if mu is None:
            self.mu = rng.standard_normal(D)
        else:
            self.mu = check_array("mu", mu, shape=(D,), hint=f"Pass a point of R^{D}.").copy()
        self.tangent_basis = Q[:, :self.d].copy()
        self.normal_basis = Q[:, self.d:].copy()
        return Q[:, :local_dim].copy()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._param_repr()})"

    def _param_repr(self) -> str:
        return f"d={self.d}, D={self.D}"


# =============================================================================
class GeneralizedCylinder(Submanifold):
    """``S^k_R x R^(d-k)``: a round ``k``-sphere of radius ``R`` times flat ``R^(d-k)``.

    Tangent coordinates at ``mu`` are ``w = (a, b)``, ``a`` along the sphere
    factor (first ``k`` coordinates) and ``b`` along the flat factor. Closed
    forms (``alpha = |a|``)::

        exp(a, b) = mu + R sin(alpha/R) a/alpha + b + R (1 - cos(alpha/R)) nu
        chord^2   = 4 R^2 sin^2(alpha / 2R) + |b|^2
        dvol      = (R sin(alpha/R) / alpha)^(k-1) dw        (normal coordinates)
        II(u, v)  = <u_S, v_S> / R  along nu (inward normal, first normal column)
        Ric(u, u) = (k - 1) |u_S|^2 / R^2

    Exact sampling: write the point through its *chord vector*
    ``z = (2R sin(alpha/2R) a/alpha, b)``, so ``|z| = ||y - mu||``. In ``z``
    the target density is ``g(|z|) cos(alpha/2R)^(k-2)`` (Archimedes for
    ``k = 2``), so proposing ``z`` from the flat radial law and accepting with
    probability ``cos(alpha/2R)^(k-2) / M`` (``M = 1`` for ``k >= 2``,
    ``1/cos(patch_radius/2R)`` for ``k = 1``) is exact for the law truncated to
    the geodesic ball ``|w| <= patch_radius``.

    Parameters
    ----------
    k : int, 1 <= k <= d
        Dimension of the sphere factor.
    d : int >= 1
    R : float > 0
    D : int >= d + 1 (default d + 1)
    seed : int >= 0 or None
        Seeds the random rotation (and ``mu`` when not given).
    mu : array_like (D,), optional
    patch_radius : float in (0, pi R), default pi R / 2

    Raises
    ------
    ParameterError
        Any parameter out of range.

    Example
    -------
    >>> M = GeneralizedCylinder(k=2, d=3, R=1.0, D=4, seed=0)
    >>> s = M.sample(1000, Gaussian(0.1), np.random.default_rng(0))
    >>> s.y.shape, s.u.shape, bool(np.max(M.residual(s.y)) < 1e-10)
    ((1000, 4), (1000, 3), True)
    """

    name = "generalized cylinder"

    def __init__(self, k, d, R=1.0, D=None, seed=0, mu=None, patch_radius=None) -> None:
        self.d = check_int("d", d, lo=1, hint="Pass the intrinsic dimension d >= 1.")
        self.k = check_int("k", k, lo=1, hi=self.d,
                           hint="k is the sphere factor's dimension, between 1 and d.")
        self.R = check_real("R", R, lo=0, hint="Pass a positive radius.")
        self.D = self.d + 1 if D is None else check_int(
            "D", D, lo=self.d + 1, hint=f"S^k x R^(d-k) needs D >= d + 1 = {self.d + 1}.")
        seed = _check_seed(seed)
        self.patch_radius = self._check_patch(
            patch_radius, math.pi * self.R / 2, math.pi * self.R, True,
            f"inside the injectivity radius pi R = {math.pi * self.R:g}")
        self._F = self._frame(self.D, self.d + 1, seed, mu)
        ii = np.zeros((self.D - self.d, self.d, self.d))
        ii[0, :self.k, :self.k] = np.eye(self.k) / self.R
        self._ii = ii

    def _param_repr(self) -> str:
        return f"k={self.k}, d={self.d}, R={self.R:g}, D={self.D}"

    def sphere_share(self, u) -> np.ndarray:
        """``s = |u_S|^2``: the share of a direction along the sphere factor.

        For ``u`` uniform on the unit sphere of ``T_mu``, ``s`` follows
        ``Beta(k/2, (d-k)/2)`` (``s = 1`` when ``k = d``).

        Parameters
        ----------
        u : array_like, shape (..., d)

        Returns
        -------
        ndarray, shape (...)
        """
        u = check_tangent("u", u, self.d)
        return np.sum(u[..., :self.k] ** 2, axis=-1) / np.sum(u ** 2, axis=-1)

    def exp(self, w) -> np.ndarray:
        """Closed-form exponential map at ``mu``.

        Parameters
        ----------
        w : array_like, shape (..., d)

        Returns
        -------
        ndarray, shape (..., D)

        Example
        -------
        >>> C = Cylinder(R=1.0, D=3, seed=0)
        >>> y = C.exp([np.pi, 0.0])          # half way round the circle
        >>> round(float(np.linalg.norm(y - C.mu)), 12)
        2.0
        """
        w = check_tangent("w", w, self.d)
        return self.mu + self._local(w) @ self._F.T

    def _local(self, w) -> np.ndarray:
        k, R = self.k, self.R
        a, b = w[..., :k], w[..., k:]
        alpha = np.linalg.norm(a, axis=-1, keepdims=True)
        x = alpha / R
        with np.errstate(invalid="ignore", divide="ignore"):
            sinc = np.where(alpha > 0, np.sin(x) / np.where(x > 0, x, 1.0), 1.0)
        p_sphere = sinc * a
        p_normal = 2 * R * np.sin(x / 2) ** 2
        return np.concatenate([p_sphere, b, p_normal], axis=-1)

    def log(self, y) -> np.ndarray:
        """Closed-form inverse of :meth:`exp` (sphere-factor angle below pi).

        Parameters
        ----------
        y : array_like, shape (..., D)

        Returns
        -------
        ndarray, shape (..., d)
        """
        y = check_array("y", y, shape=(..., self.D), hint=f"Pass points of R^{self.D}.")
        p = (y - self.mu) @ self._F
        k, R = self.k, self.R
        ps, h = p[..., :k], p[..., self.d]
        rho = np.linalg.norm(ps, axis=-1, keepdims=True)
        alpha = R * np.arctan2(rho[..., 0], R - h)[..., None]
        with np.errstate(invalid="ignore", divide="ignore"):
            a = np.where(rho > 0, ps * (alpha / np.where(rho > 0, rho, 1.0)), 0.0)
        return np.concatenate([a, p[..., k:self.d]], axis=-1)

    def residual(self, y) -> np.ndarray:
        """Distance-like residual of the defining equations; shape (...).

        Sum of the component of ``y - mu`` outside the local frame and
        ``| |(p_S, p_nu - R)| - R |`` (distance to the sphere factor).
        """
        y = check_array("y", y, shape=(..., self.D), hint=f"Pass points of R^{self.D}.")
        diff = y - self.mu
        p = diff @ self._F
        off = np.linalg.norm(diff - p @ self._F.T, axis=-1)
        ps = np.concatenate([p[..., :self.k], (p[..., self.d] - self.R)[..., None]], axis=-1)
        return off + np.abs(np.linalg.norm(ps, axis=-1) - self.R)

    def chord_of(self, w) -> np.ndarray:
        """``||exp(w) - mu||`` in closed form; ``w`` (..., d) -> (...)."""
        w = np.asarray(w, dtype=np.float64)
        alpha = np.linalg.norm(w[..., :self.k], axis=-1)
        b2 = np.sum(w[..., self.k:] ** 2, axis=-1)
        return np.sqrt(4 * self.R ** 2 * np.sin(alpha / (2 * self.R)) ** 2 + b2)

    def volume_element(self, w) -> np.ndarray:
        """``dvol / dw`` in normal coordinates: ``(R sin(alpha/R)/alpha)^(k-1)``."""
        w = np.asarray(w, dtype=np.float64)
        x = np.linalg.norm(w[..., :self.k], axis=-1) / self.R
        return np.sinc(x / np.pi) ** (self.k - 1)

    def chord_along(self, r, u) -> np.ndarray:
        r = np.asarray(r, dtype=np.float64)
        u = check_tangent("u", u, self.d)
        return self.chord_of(r[:, None, None] * u[None, :, :])

    def polar_volume_element(self, r, u) -> np.ndarray:
        """``r^(d-1) (R sin(r|u_S|/R) / (r|u_S|))^(k-1)``, shape (m, k_dirs)."""
        r = np.asarray(r, dtype=np.float64)
        u = check_tangent("u", u, self.d)
        w = r[:, None, None] * u[None, :, :]
        return r[:, None] ** (self.d - 1) * self.volume_element(w)

    def sample(self, n, law, rng) -> Samples:
        """Exact sample with density ``~ g(||y - mu||) dvol`` on the patch.

        Parameters
        ----------
        n : int >= 1
        law : RadialLaw
        rng : numpy.random.Generator or int seed

        Returns
        -------
        Samples

        Raises
        ------
        ParameterError
            Bad inputs, or a law so wide that almost no proposal lands in the
            patch (acceptance below 1e-4).
        """
        n = check_int("n", n, lo=1, hint=_N_HINT)
        law = _check_law(law)
        self._check_law_resolved(law)
        rng = check_rng(rng)
        k, d, R, rho = self.k, self.d, self.R, self.patch_radius
        log_m = 0.0 if k >= 2 else -math.log(math.cos(rho / (2 * R)))
        out_w, have, tried, rate = [], 0, 0, 0.9
        for _ in range(_MAX_ROUNDS):
            m = int(min(4e6, 4 * tried + 1024, max(256, 1.2 * (n - have) / rate)))
            z = law.sample_radius(m, d, rng)[:, None] * uniform_directions(m, d, rng)
            za, zb = z[:, :k], z[:, k:]
            c = np.linalg.norm(za, axis=1)
            inside = c < 2 * R
            alpha = 2 * R * np.arcsin(np.minimum(c / (2 * R), 1.0))
            rr2 = alpha ** 2 + np.sum(zb ** 2, axis=1)
            inside &= rr2 <= rho ** 2
            logacc = (k - 2) * np.log(np.cos(alpha / (2 * R))) - log_m
            keep = inside & (np.log(rng.random(m)) < logacc)
            with np.errstate(invalid="ignore", divide="ignore"):
                scale = np.where(c > 0, alpha / np.where(c > 0, c, 1.0), 1.0)
            w = np.concatenate([za * scale[:, None], zb], axis=1)[keep]
            out_w.append(w)
            have += w.shape[0]
            tried += m
            rate = max(have / tried, 1e-6)
            if have >= n:
                break
            if tried > 1e5 and rate < 1e-4:
                raise ParameterError(
                    f"law={law!r} is too wide for patch_radius={rho:g}: acceptance rate "
                    f"{rate:.1e}; valid range is laws whose mass mostly lies in the patch. "
                    f"Pass a more concentrated law (smaller scale).")
        w = np.concatenate(out_w)[:n]
        r = np.linalg.norm(w, axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            u = np.where(r[:, None] > 0, w / np.where(r > 0, r, 1.0)[:, None], 0.0)
        zero = r == 0
        if np.any(zero):
            u[zero] = uniform_directions(int(zero.sum()), d, rng)
        return self._samples(self.exp(w), r, u)


class Sphere(GeneralizedCylinder):
    """Round ``d``-sphere of radius ``R`` in ``R^D`` (``GeneralizedCylinder`` with ``k = d``).

    ``II(u, u) = |u|^2 / R`` along the inward normal; ``Ric(u, u) = (d-1)|u|^2 / R^2``.

    Example
    -------
    >>> S = Sphere(2, R=1.0, D=3, seed=0)
    >>> round(float(S.ricci([0.6, 0.8])), 12)
    1.0
    """

    name = "sphere"

    def __init__(self, d, R=1.0, D=None, seed=0, mu=None, patch_radius=None) -> None:
        d = check_int("d", d, lo=1, hint="Pass the intrinsic dimension d >= 1.")
        super().__init__(d, d, R, D, seed, mu, patch_radius)

    def _param_repr(self) -> str:
        return f"d={self.d}, R={self.R:g}, D={self.D}"


class Cylinder(GeneralizedCylinder):
    """Circle of radius ``R`` times a line (``k = 1``, ``d = 2``); the usual cylinder when ``D = 3``.

    ``II(u, u) = u_1^2 / R`` (``u_1 = cos(theta)``, the curved direction) and ``Ric = 0``.

    Example
    -------
    >>> C = Cylinder(R=2.0, D=3, seed=0)
    >>> float(C.ricci([0.6, 0.8])), round(float(C.second_fundamental_form([0.6, 0.8])[0]), 12)
    (0.0, 0.18)
    """

    name = "cylinder"

    def __init__(self, R=1.0, D=3, seed=0, mu=None, patch_radius=None) -> None:
        super().__init__(1, 2, R, D, seed, mu, patch_radius)

    def _param_repr(self) -> str:
        return f"R={self.R:g}, D={self.D}"


# =============================================================================
class Quadric(Submanifold):
    """Graph ``x -> (x, f(x))``, ``f_j(x) = x^T A_j x / 2``, placed in ``R^D``.

    ``mu`` is the image of ``x = 0``, where ``Df = 0``: tangent coordinates
    equal parameter coordinates there and ``II(u, v) = (u^T A_j v)_j`` exactly.

    Geodesics solve ``x'' = -G^{-1} J^T q`` with ``G = I + J^T J``,
    ``J = Df`` (rows ``(A_j x)^T``) and ``q_j = x'^T A_j x'``; :meth:`exp`
    integrates this with vectorised RK4 (``n_steps`` steps; it also accepts
    complex input, which :meth:`polar_volume_element` uses for complex-step
    derivatives). :meth:`log` solves ``exp(w) = x`` by the fixed-point
    iteration ``w <- w + (x - exp(w))`` to 1e-10 relative accuracy.

    Exact sampling: rejection in parameter space. Propose ``x`` with ``|x|``
    from the flat radial law (restricted to ``|x| <= patch_radius``), accept
    with probability ``g(chord)/g(|x|) * sqrt(det(I + J^T J)) / M`` where
    ``chord >= |x|`` makes the first factor ``<= 1`` and
    ``M = prod_j sqrt(1 + ||A_j||^2 patch_radius^2)`` bounds the area factor
    (Hadamard's inequality); then keep points with geodesic radius
    ``<= patch_radius`` (a subset, since ``r >= chord >= |x|``).

    Parameters
    ----------
    A : array_like, shape (d, d) or (c, d, d)
        Symmetric matrices (one per normal direction used by the graph).
    D : int >= d + c (default d + c)
    seed : int >= 0 or None
    mu : array_like (D,), optional
    patch_radius : float, default 0.5 / max_j ||A_j||_2
        Must satisfy ``patch_radius * max_j ||A_j||_2 <= 1``.
    n_steps : int >= 4
        RK4 steps of the geodesic integrator.

    Raises
    ------
    ParameterError
        Non-symmetric ``A``, bad shapes or ranges.

    Example
    -------
    >>> Q = Quadric([[1.0, 0.0], [0.0, 1.0]], D=3, seed=0)   # paraboloid
    >>> round(float(Q.ricci([1.0, 0.0])), 12)
    1.0
    >>> w = np.array([[0.1, -0.2]])
    >>> bool(np.allclose(Q.log(Q.exp(w)), w, atol=1e-10))
    True
    """

    name = "quadric"

    def __init__(self, A, D=None, seed=0, mu=None, patch_radius=None, n_steps=64) -> None:
        A = check_array("A", A, shape=None, hint="Pass a symmetric (d, d) or (c, d, d) array.")
        if A.ndim == 2:
            A = A[None]
        if A.ndim != 3 or A.shape[1] != A.shape[2] or A.shape[1] < 1:
            raise ParameterError(
                f"A has shape {A.shape} but expected shape (d, d) or (c, d, d): valid range is "
                f"stacks of square matrices. Pass symmetric matrices.")
        asym = float(np.max(np.abs(A - np.swapaxes(A, 1, 2))))
        if asym > 1e-12 * max(1.0, float(np.max(np.abs(A)))):
            raise ParameterError(
                f"A is not symmetric (max |A - A^T| = {asym:.3g}): valid range is symmetric "
                f"matrices. Pass (A + A^T) / 2.")
        self.A = A.copy()
        self.c, self.d = A.shape[0], A.shape[1]
        self.D = self.d + self.c if D is None else check_int(
            "D", D, lo=self.d + self.c,
            hint=f"The graph needs D >= d + c = {self.d + self.c}.")
        seed = _check_seed(seed)
        self.n_steps = check_int("n_steps", n_steps, lo=4, hint="Pass at least 4 RK4 steps.")
        self._norms = np.array([np.linalg.norm(a, 2) for a in self.A])
        self._Aflat = np.ascontiguousarray(self.A.transpose(1, 0, 2).reshape(self.d, -1))
        self._ones = np.ones(self.d)
        kmax = float(np.max(self._norms))
        default = 0.5 / kmax if kmax > 0 else 1.0
        upper = 1.0 / kmax if kmax > 0 else math.inf
        self.patch_radius = self._check_patch(
            patch_radius, default, upper, False,
            f"with patch_radius * max ||A_j|| <= 1 (here <= {upper:g})")
        self._F = self._frame(self.D, self.d + self.c, seed, mu)
        ii = np.zeros((self.D - self.d, self.d, self.d))
        ii[:self.c] = self.A
        self._ii = ii

    def _param_repr(self) -> str:
        return f"A.shape={self.A.shape}, D={self.D}, patch_radius={self.patch_radius:g}"

    # --- graph in the local frame -------------------------------------------------
    def f(self, x) -> np.ndarray:
        """Heights ``f_j(x) = x^T A_j x / 2``; ``x`` (..., d) -> (..., c)."""
        return 0.5 * np.einsum("...a,jab,...b->...j", x, self.A, x)

    def _embed_local(self, x) -> np.ndarray:
        return np.concatenate([x, self.f(x)], axis=-1)

    def embed(self, x) -> np.ndarray:
        """Point of the manifold above parameter ``x`` (..., d) -> (..., D)."""
        x = check_tangent("x", x, self.d)
        return self.mu + self._embed_local(x) @ self._F.T

    def _accel(self, x, v):
        # A is symmetric, so x @ A_j = (A_j x)^T; one BLAS matmul for all j.
        lead = x.shape[:-1]
        J = (x @ self._Aflat).reshape(*lead, self.c, self.d)         # rows (A_j x)^T
        Av = (v @ self._Aflat).reshape(*lead, self.c, self.d)
        q = (Av * v[..., None, :]) @ self._ones                      # (..., c): v^T A_j v
        if self.c == 1:
            J0 = J[..., 0, :]
            return -J0 * (q / (1.0 + (J0 * J0) @ self._ones[:, None]))
        # J^T (I_c + J J^T)^{-1} q == (I_d + J^T J)^{-1} J^T q (push-through identity):
        # a d x d system instead of c x c, in closed form for surfaces (d = 2)
        if self.d == 2:
            J0, J1 = J[..., 0], J[..., 1]                            # (..., c)
            a00 = 1.0 + (J0 * J0).sum(-1)
            a01 = (J0 * J1).sum(-1)
            a11 = 1.0 + (J1 * J1).sum(-1)
            b0, b1 = (J0 * q).sum(-1), (J1 * q).sum(-1)
            det = a00 * a11 - a01 * a01
            out = np.empty(b0.shape + (2,), dtype=b0.dtype)
            out[..., 0] = (a01 * b1 - a11 * b0) / det
            out[..., 1] = (a01 * b0 - a00 * b1) / det
            return out
        Jt = np.swapaxes(J, -1, -2)
        G = Jt @ J                                                   # (..., d, d)
        b = (Jt @ q[..., None])[..., 0]                              # (..., d)
        return -np.linalg.solve(np.eye(self.d) + G, b[..., None])[..., 0]

    def _steps_for(self, w) -> np.ndarray:
        """RK4 steps per geodesic: ``n_steps`` at kappa |w| = 1/2, fewer for short
        geodesics (error ~ (kappa |w| / steps)^4), rounded up to a power of two."""
        kr = float(np.max(self._norms)) * np.linalg.norm(np.real(w), axis=-1)
        need = np.maximum(4.0, 2.0 * self.n_steps * kr)
        return (2 ** np.ceil(np.log2(need))).astype(int)

    def _exp_param(self, w, n_steps=None) -> np.ndarray:
        """RK4 geodesic from x=0 with velocity w, evaluated at time 1 (parameter coords).

        Works for complex ``w`` (complex-step derivatives)."""
        if n_steps is not None:
            return self._rk4(w, int(n_steps))
        steps = self._steps_for(w)
        if steps.ndim == 0 or np.all(steps == steps.flat[0]):
            return self._rk4(w, int(steps.flat[0]) if steps.size else 4)
        out = np.empty_like(w)
        for s_ in np.unique(steps):
            sel = steps == s_
            out[sel] = self._rk4(w[sel], int(s_))
        return out

    def _rk4_step(self, x, v, h):
        k1x, k1v = v, self._accel(x, v)
        k2x, k2v = v + 0.5 * h * k1v, self._accel(x + 0.5 * h * k1x, v + 0.5 * h * k1v)
        k3x, k3v = v + 0.5 * h * k2v, self._accel(x + 0.5 * h * k2x, v + 0.5 * h * k2v)
        k4x, k4v = v + h * k3v, self._accel(x + h * k3x, v + h * k3v)
        return (x + (h / 6.0) * (k1x + 2 * k2x + 2 * k3x + k4x),
                v + (h / 6.0) * (k1v + 2 * k2v + 2 * k3v + k4v))

    def _rk4(self, w, n_steps: int) -> np.ndarray:
        h = 1.0 / n_steps
        x, v = np.zeros_like(w), w.copy()
        for _ in range(n_steps):
            x, v = self._rk4_step(x, v, h)
        return x

    def _sweep(self, v, times) -> np.ndarray:
        """Geodesics with initial velocities ``v`` (k, d) (complex allowed), recorded at
        the sorted ``times`` (m,): parameter positions, shape (m, k, d).

        One integration per direction for all radii; the step keeps the arc length
        per step at most ``1 / (2 n_steps max||A_j||)`` as in :meth:`_exp_param`."""
        kmax = float(np.max(self._norms))
        speed = float(np.max(np.linalg.norm(np.real(v), axis=-1))) if v.size else 0.0
        hmax = math.inf if kmax * speed == 0 else 1.0 / (2 * self.n_steps * kmax * speed)
        x, vel = np.zeros_like(v), v.copy()
        out = np.empty((len(times),) + v.shape, dtype=v.dtype)
        t = 0.0
        for i, T in enumerate(times):
            dt = float(T) - t
            if dt > 0:
                ns = max(1, int(math.ceil(dt / hmax))) if math.isfinite(hmax) else 1
                for _ in range(ns):
                    x, vel = self._rk4_step(x, vel, dt / ns)
            out[i] = x
            t = float(T)
        return out

    def exp(self, w) -> np.ndarray:
        """Exponential map at ``mu`` by RK4: ``w`` (..., d) -> (..., D)."""
        w = check_tangent("w", w, self.d)
        return self.mu + self._embed_local(self._exp_param(w)) @ self._F.T

    def _log_param(self, x, tol=1e-10, maxiter=500) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        shape = x.shape
        xf = x.reshape(-1, self.d)
        # third-order inverse of exp as a start: exp(w) = w - sum_j A_j w (w^T A_j w) / 6 + ...
        Ax = (xf @ self._Aflat).reshape(-1, self.c, self.d)
        w = xf + np.einsum("njd,nj->nd", Ax, (Ax * xf[:, None, :]).sum(-1)) / 6.0
        scale = np.maximum(np.linalg.norm(xf, axis=1), 1e-300)
        todo = np.arange(xf.shape[0])
        eye = np.eye(self.d)
        for _ in range(maxiter):
            if todo.size == 0:
                break
            wt = w[todo]
            err = xf[todo] - self._exp_param(wt)
            # quasi-Newton: Jacobian of the cubic model exp(w) ~ w - sum_j A_j w (w^T A_j w)/6
            Aw = (wt @ self._Aflat).reshape(-1, self.c, self.d)
            q = (Aw * wt[:, None, :]).sum(-1)
            jac = eye - (np.einsum("nj,jab->nab", q, self.A)
                         + 2 * np.einsum("nja,njb->nab", Aw, Aw)) / 6.0
            step = np.linalg.solve(jac, err[..., None])[..., 0]
            w[todo] = wt + step
            done = np.linalg.norm(err, axis=1) <= tol * scale[todo]
            todo = todo[~done]
        if todo.size:
            raise ParameterError(
                f"patch_radius={self.patch_radius:g} is too large: the log map did not converge "
                f"for {todo.size} point(s); valid range is a patch where geodesics from mu do not "
                f"cross. Pass a smaller patch_radius.")
        return w.reshape(shape)

    def log(self, y) -> np.ndarray:
        """Inverse of :meth:`exp` on the patch (geodesic normal coordinates).

        Parameters
        ----------
        y : array_like, shape (..., D)

        Returns
        -------
        ndarray, shape (..., d)
        """
        y = check_array("y", y, shape=(..., self.D), hint=f"Pass points of R^{self.D}.")
        x = ((y - self.mu) @ self._F)[..., :self.d]
        return self._log_param(x)

    def residual(self, y) -> np.ndarray:
        """``|p_normal - f(p_tangent)|`` plus the part of ``y - mu`` outside the frame."""
        y = check_array("y", y, shape=(..., self.D), hint=f"Pass points of R^{self.D}.")
        diff = y - self.mu
        p = diff @ self._F
        off = np.linalg.norm(diff - p @ self._F.T, axis=-1)
        return off + np.linalg.norm(p[..., self.d:] - self.f(p[..., :self.d]), axis=-1)

    def polar_volume_element(self, r, u, h=1e-30) -> np.ndarray:
        """``V(r, u)`` with ``dvol = V dr du``, by complex-step derivatives of exp.

        ``V = sqrt(det Gram(D exp_{ru}[r e_i]))`` over an orthonormal basis
        ``e_i`` of ``u^perp`` (Gauss lemma: the radial direction is a unit
        vector orthogonal to these). ``D exp_{ru}[r e]`` is the imaginary part
        of the geodesic with complex initial velocity ``u + i h e`` at time
        ``r``, divided by ``h``; all radii come from one integration per
        direction.

        Parameters
        ----------
        r : array_like, shape (m,), ``r >= 0``
        u : array_like, shape (k, d), unit vectors

        Returns
        -------
        ndarray, shape (m, k)
        """
        return self._polar_data(r, u, h)[1]

    def chord_along(self, r, u) -> np.ndarray:
        return self._polar_data(r, u)[0]

    def _polar_data(self, r, u, h=1e-30):
        """(chord, V) on the grid r (m,) x u (k, d), from complex geodesic sweeps."""
        r = np.asarray(r, dtype=np.float64)
        u = check_tangent("u", u, self.d)
        order = np.argsort(r)
        rs = r[order]
        d = self.d
        if d == 1:
            x = self._sweep(u.astype(np.float64), rs)
            chord = np.linalg.norm(self._embed_local(x), axis=-1)
            vol = np.ones_like(chord)
        else:
            _, _, vt = np.linalg.svd(u[:, None, :])
            perp = vt[:, 1:, :]                                          # (k, d-1, d)
            cols, chord = [], None
            for i in range(d - 1):
                x = self._sweep(u + 1j * h * perp[:, i, :], rs)          # (m, k, d)
                y = self._embed_local(x)
                if chord is None:
                    chord = np.linalg.norm(np.real(y), axis=-1)
                cols.append(np.imag(y) / h)      # d/d eps exp(r (u + eps e_i)) = D exp_{ru}[r e_i]
            Jm = np.stack(cols, axis=-1)                                 # D exp_{ru}[r e_i]
            gram = np.einsum("...ai,...aj->...ij", Jm, Jm)
            vol = np.sqrt(np.maximum(np.linalg.det(gram), 0.0))
        inv = np.empty_like(order)
        inv[order] = np.arange(order.size)
        return chord[inv], vol[inv]

    def sample(self, n, law, rng) -> Samples:
        """Exact sample with density ``~ g(||y - mu||) dvol`` on the geodesic patch.

        Parameters
        ----------
        n : int >= 1
        law : RadialLaw
        rng : numpy.random.Generator or int seed

        Returns
        -------
        Samples
            ``u`` is the geodesic direction obtained from :meth:`log`.

        Raises
        ------
        ParameterError
            Bad inputs, or a law too wide for the patch (acceptance < 1e-4).
        """
        n = check_int("n", n, lo=1, hint=_N_HINT)
        law = _check_law(law)
        self._check_law_resolved(law)
        rng = check_rng(rng)
        d, rho = self.d, self.patch_radius
        log_m = 0.5 * float(np.sum(np.log1p((self._norms * rho) ** 2)))
        xs, ws, have, tried, rate = [], [], 0, 0, 0.5
        for _ in range(_MAX_ROUNDS):
            m = int(min(1e6, 4 * tried + 1024, max(256, 1.3 * (n - have) / rate)))
            x = law.sample_radius(m, d, rng)[:, None] * uniform_directions(m, d, rng)
            rx = np.linalg.norm(x, axis=1)
            inside = rx <= rho
            x, rx = x[inside], rx[inside]
            fx = self.f(x)
            chord = np.sqrt(rx ** 2 + np.sum(fx ** 2, axis=1))
            J = np.einsum("jab,nb->nja", self.A, x)
            area = np.linalg.det(np.eye(self.c) + np.einsum("nia,nja->nij", J, J))
            with np.errstate(invalid="ignore", divide="ignore"):
                logacc = law.log_g(chord) - law.log_g(rx) + 0.5 * np.log(area) - log_m
            logacc = np.where(np.isfinite(logacc), logacc, -np.inf)
            if np.any(logacc > 1e-9):
                raise RuntimeError("Quadric.sample: acceptance bound violated; please report.")
            keep = np.log(rng.random(x.shape[0])) < logacc
            n_keep = int(keep.sum())
            # the log map is the costly step: only map as many points as are needed
            x = x[keep][:int(1.05 * (n - have)) + 16]
            w = self._log_param(x)
            r = np.linalg.norm(w, axis=1)
            ok = r <= rho                       # the geodesic ball lies inside |x| <= rho
            xs.append(x[ok])
            ws.append(w[ok])
            have += int(ok.sum())
            tried += m
            rate = max(n_keep * (ok.mean() if ok.size else 1.0) / m, 1e-6)
            if have >= n:
                break
            if tried > 1e5 and rate < 1e-4:
                raise ParameterError(
                    f"law={law!r} is too wide for patch_radius={rho:g}: acceptance rate "
                    f"{rate:.1e}; valid range is laws whose mass mostly lies in the patch. "
                    f"Pass a more concentrated law (smaller scale).")
        x = np.concatenate(xs)[:n]
        w = np.concatenate(ws)[:n]
        r = np.linalg.norm(w, axis=1)
        u = w / np.where(r > 0, r, 1.0)[:, None]
        if np.any(r == 0):
            u[r == 0] = uniform_directions(int(np.sum(r == 0)), d, rng)
        return self._samples(self.mu + self._embed_local(x) @ self._F.T, r, u)


class Saddle(Quadric):
    """Saddle ``z = kappa (x1^2 - x2^2) / 2``: ``d = 2``, ``A = diag(kappa, -kappa)``.

    ``H = 0`` and ``Ric(u, u) = -kappa^2 |u|^2`` (Gauss curvature ``-kappa^2``).

    Example
    -------
    >>> S = Saddle(kappa=2.0, D=3, seed=0)
    >>> round(float(S.ricci([1.0, 0.0])), 12)
    -4.0
    """

    name = "saddle"

    def __init__(self, kappa=1.0, D=3, seed=0, mu=None, patch_radius=None, n_steps=64) -> None:
        self.kappa = check_real("kappa", kappa, lo=0, hint="Pass a positive curvature scale.")
        super().__init__(np.diag([self.kappa, -self.kappa]), D, seed, mu, patch_radius, n_steps)

    def _param_repr(self) -> str:
        return f"kappa={self.kappa:g}, D={self.D}"


# =============================================================================
class StratifiedSet:
    """Two planes crossing along a line in ``R^D``: a stratified set, not a manifold.

    In the local frame ``(e1, e2, e3)``, sheet 0 is ``span(e1, e2)`` and sheet 1
    is ``span(e1, cos(angle) e2 + sin(angle) e3)``; they meet along the
    junction line ``mu + span(e1)``. Near the junction no single tangent space
    exists, so :meth:`second_fundamental_form`, :meth:`ricci` and :meth:`exp`
    raise ``NotImplementedError``; volume growth (chapter 1) is the tool here.

    Parameters
    ----------
    D : int >= 3
    angle : float in (0, pi/2]
        Angle between the sheets.
    seed : int >= 0 or None
    mu : array_like (D,), optional
        A point of the junction line.

    Example
    -------
    >>> X = StratifiedSet(D=3, seed=0)
    >>> s = X.sample(100, Gaussian(1.0), np.random.default_rng(0))
    >>> s.y.shape, bool(np.max(X.residual(s.y)) < 1e-12)
    ((100, 3), True)
    """

    name = "stratified set"
    d = 2

    def __init__(self, D=3, angle=math.pi / 2, seed=0, mu=None) -> None:
        self.D = check_int("D", D, lo=3, hint="Two planes crossing along a line need D >= 3.")
        self.angle = check_real("angle", angle, lo=0, hi=math.pi / 2, hi_open=False,
                                hint="Pass the angle between the sheets in radians.")
        seed = _check_seed(seed)
        Q, rng = _random_frame(self.D, seed)
        self.mu = rng.standard_normal(self.D) if mu is None else check_array(
            "mu", mu, shape=(self.D,), hint=f"Pass a point of R^{self.D}.").copy()
        e1, e2, e3 = Q[:, 0], Q[:, 1], Q[:, 2]
        self.junction = e1.copy()
        self.sheets = np.stack([
            np.stack([e1, e2], axis=1),
            np.stack([e1, math.cos(self.angle) * e2 + math.sin(self.angle) * e3], axis=1),
        ])                                                           # (2, D, 2)

    def __repr__(self) -> str:
        return f"StratifiedSet(D={self.D}, angle={self.angle:g})"

    def _no_geometry(self, what: str):
        raise NotImplementedError(
            f"{what} is undefined for a StratifiedSet: at the junction line two sheets meet, "
            f"so there is no single tangent space (it is not a manifold). Use volume growth "
            f"(tanbias.theory.volume_growth) to detect the junction, or a smooth manifold class.")

    def second_fundamental_form(self, u, v=None):
        self._no_geometry("The second fundamental form")

    def ricci(self, u):
        self._no_geometry("The Ricci curvature")

    def exp(self, w):
        self._no_geometry("The exponential map")

    def point_on_sheet(self, sheet, distance, along=0.0) -> np.ndarray:
        """Point of sheet ``sheet`` at ``distance`` from the junction line.

        Parameters
        ----------
        sheet : {0, 1}
        distance : float >= 0
            Distance from the junction, measured inside the sheet.
        along : float
            Position along the junction line.

        Returns
        -------
        ndarray, shape (D,)
        """
        sheet = check_int("sheet", sheet, lo=0, hi=1, hint="Pass 0 or 1.")
        distance = check_real("distance", distance, lo=0, lo_open=False,
                              hint="Pass a non-negative distance.")
        along = check_real("along", along)
        B = self.sheets[sheet]
        return self.mu + along * B[:, 0] + distance * B[:, 1]

    def residual(self, y) -> np.ndarray:
        """Distance of ``y`` (..., D) to the nearer sheet; shape (...)."""
        y = check_array("y", y, shape=(..., self.D), hint=f"Pass points of R^{self.D}.")
        diff = y - self.mu
        dists = []
        for B in self.sheets:
            dists.append(np.linalg.norm(diff - (diff @ B) @ B.T, axis=-1))
        return np.minimum(*dists)

    def sample(self, n, law, rng) -> StratifiedSamples:
        """Density ``~ g(||y - mu||)`` w.r.t. area on the union of the two sheets.

        Both sheets are planes through ``mu``, so each carries half the mass.

        Returns
        -------
        StratifiedSamples
        """
        n = check_int("n", n, lo=1, hint=_N_HINT)
        law = _check_law(law)
        rng = check_rng(rng)
        sheet = rng.integers(0, 2, size=n)
        r = law.sample_radius(n, 2, rng)
        local = r[:, None] * uniform_directions(n, 2, rng)
        y = self.mu + np.einsum("nDk,nk->nD", self.sheets[sheet], local)
        return StratifiedSamples(y=y, sheet=sheet, chord=r)



def check_manifold(manifold) -> Submanifold:
    """``manifold`` itself if it is a :class:`Submanifold`; else a ParameterError.

    The one argument check of the maths modules that take a manifold.

    Parameters
    ----------
    manifold : object

    Returns
    -------
    Submanifold

    Raises
    ------
    ParameterError
        If ``manifold`` is not a :class:`Submanifold` (e.g. a name, or a ``StratifiedSet``).

    Example
    -------
    >>> check_manifold(Cylinder(R=1.0)).d
    2
    >>> check_manifold("cylinder")
    Traceback (most recent call last):
    ...
    tanbias.errors.ParameterError: manifold='cylinder' ...
    """
    return check_instance("manifold", manifold, Submanifold,
                          hint="Pass e.g. tanbias.theory.manifolds.Cylinder(R=1.0).")
