"""Radial laws ``g(t)``: how tightly a token's samples concentrate (chapters 2, 3).

A radial law is an unnormalised, strictly decreasing profile ``g(t)`` of the
ambient distance ``t = ||y - mu||``. On a flat ``d``-dimensional space the
radius of a sample then has density proportional to ``g(r) r^(d-1)``, and the
one number that controls the curvature bias of our derivation is the moment
ratio

    eta_g(d) = m_{d+1} / m_{d-1},     m_k = int_0^inf g(t) t^k dt,

the mean squared radius of the samples. Closed forms are used where they
exist (and cross-checked against quadrature in the tests):

============  ==========================  =====================  ==============
family        g(t)                        eta_g(d)               radius law
============  ==========================  =====================  ==============
Gaussian      exp(-t^2 / 2 sigma^2)       d sigma^2              sigma * chi(d)
Laplace       exp(-t / b)                 d (d+1) b^2            gamma(d, b)
PowerLaw      (1 + (t/s)^2)^(-a)          s^2 d / (2a - d - 2)   s sqrt(beta'(d/2, a-d/2))
Epanechnikov  1 - (t/h)^2 on [0, h]       h^2 d / (d + 4)        h sqrt(beta(d/2, 2))
Custom        any strictly decreasing     quadrature             exact rejection
============  ==========================  =====================  ==============
"""

from __future__ import annotations

import math
import warnings
from abc import ABC, abstractmethod

import numpy as np
from scipy import integrate, special
from scipy import stats as _st

from tanbias._checks import check_callable, check_int, check_real, check_rng
from tanbias.errors import ParameterError

__all__ = ["RadialLaw", "Gaussian", "Laplace", "PowerLaw", "Epanechnikov", "Custom",
           "radius_density", "quadrature_moment", "nearly_flat"]

_D_HINT = "Pass the intrinsic dimension d of the manifold (a whole number >= 1)."
_N_HINT = "Pass a whole number of samples n >= 1."


class RadialLaw(ABC):
    """Unnormalised radial profile ``g(t)``, strictly decreasing on ``[0, support)``.

    Subclasses define ``g``, ``moment``, ``scaled`` and ``_radius_dist`` (a
    frozen scipy distribution of the radius in dimension ``d``); the base class
    derives ``eta_g``, ``with_eta``, ``sample_radius`` and ``radius_cdf``.

    Attributes
    ----------
    name : str
        Family name, e.g. ``"gaussian"``.
    scale : float
        The family's length scale (sigma, b, s or h).
    support : float
        Upper end of the support (``inf`` for unbounded laws).
    """

    name: str = "radial law"
    scale: float = 1.0
    support: float = math.inf

    # --- profile -------------------------------------------------------------
    @abstractmethod
    def g(self, t):
        """Unnormalised density at distance ``t``.

        Parameters
        ----------
        t : array_like, any shape, ``t >= 0``

        Returns
        -------
        ndarray, same shape as ``t``
        """

    def log_g(self, t):
        """``log g(t)`` (``-inf`` outside the support); overridden where a
        closed form avoids underflow."""
        with np.errstate(divide="ignore"):
            return np.log(self.g(t))

    # --- moments -------------------------------------------------------------
    @abstractmethod
    def moment(self, k) -> float:
        """``m_k = int_0^inf g(t) t^k dt``.

        Parameters
        ----------
        k : float > -1

        Raises
        ------
        ParameterError
            If ``k <= -1`` or the integral diverges.
        """

    def eta_g(self, d) -> float:
        """Moment ratio ``m_{d+1} / m_{d-1}``: mean squared radius in dimension ``d``.

        Raises
        ------
        ParameterError
            If ``d`` is not an integer >= 1 or a needed moment diverges.

        Example
        -------
        >>> round(Gaussian(0.1).eta_g(2), 12)
        0.02
        """
        d = check_int("d", d, lo=1, hint=_D_HINT)
        return self.moment(d + 1) / self.moment(d - 1)

    @abstractmethod
    def scaled(self, c) -> "RadialLaw":
        """Same family with ``g_c(t) = g(t / c)`` (every length times ``c``)."""

    def with_eta(self, eta_g, d) -> "RadialLaw":
        """Same family, rescaled so that ``eta_g(d)`` equals the target.

        ``eta_g`` scales as the square of the length scale, so the rescaling
        factor is ``sqrt(target / current)``.

        Raises
        ------
        ParameterError
            If ``eta_g <= 0``, NaN, or ``d`` invalid.

        Example
        -------
        >>> law = Laplace(1.0).with_eta(0.06, d=2)
        >>> round(law.eta_g(2), 12), round(law.scale, 6)
        (0.06, 0.1)
        """
        eta_g = check_real("eta_g", eta_g, lo=0,
                           hint="eta_g is a mean squared radius; pass a positive number.")
        d = check_int("d", d, lo=1, hint=_D_HINT)
        return self.scaled(math.sqrt(eta_g / self.eta_g(d)))

    # --- radius distribution ---------------------------------------------------
    @abstractmethod
    def _radius_dist(self, d: int):
        """Frozen scipy distribution of the radius (density ~ g(r) r^(d-1))."""

    def sample_radius(self, n, d, rng) -> np.ndarray:
        """Exact draws of ``r`` with density proportional to ``g(r) r^(d-1)``.

        Parameters
        ----------
        n : int >= 1
        d : int >= 1
            Dimension of the flat space the radius lives in.
        rng : numpy.random.Generator or int seed

        Returns
        -------
        ndarray, shape (n,)

        Raises
        ------
        ParameterError
            Bad ``n``, ``d`` or ``rng``; or the radius law is not normalisable.

        Example
        -------
        >>> r = Gaussian(1.0).sample_radius(100_000, 3, np.random.default_rng(0))
        >>> bool(abs(np.mean(r**2) - 3.0) < 0.05)
        True
        """
        n = check_int("n", n, lo=1, hint=_N_HINT)
        d = check_int("d", d, lo=1, hint=_D_HINT)
        rng = check_rng(rng)
        return np.asarray(self._radius_dist(d).rvs(size=n, random_state=rng), dtype=np.float64)

    def radius_cdf(self, r, d) -> np.ndarray:
        """CDF of the radius law of :meth:`sample_radius`, vectorised in ``r``.

        Example
        -------
        >>> float(Laplace(1.0).radius_cdf(np.inf, 2))
        1.0
        """
        d = check_int("d", d, lo=1, hint=_D_HINT)
        return self._radius_dist(d).cdf(np.asarray(r, dtype=np.float64))

    def effective_radius(self, d, tail: float = 1e-15) -> float:
        """Radius beyond which the radius law has mass below ``tail``
        (capped at the support).

        Example
        -------
        >>> round(Epanechnikov(2.0).effective_radius(3), 6)
        2.0
        """
        d = check_int("d", d, lo=1, hint=_D_HINT)
        tail = check_real("tail", tail, 0, 1)
        return float(min(self.support, self._radius_dist(d).isf(tail)))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._param_repr()})"

    def _param_repr(self) -> str:
        return f"scale={self.scale:g}"


def _check_k(k) -> float:
    return check_real("k", k, lo=-1, hint="Moments m_k exist only for k > -1.")


class Gaussian(RadialLaw):
    """``g(t) = exp(-t^2 / (2 sigma^2))``; ``eta_g(d) = d sigma^2``.

    Parameters
    ----------
    sigma : float > 0

    Example
    -------
    >>> law = Gaussian(0.2)
    >>> round(law.eta_g(2), 12), law.name
    (0.08, 'gaussian')
    """

    name = "gaussian"

    def __init__(self, sigma=1.0) -> None:
        self.sigma = check_real("sigma", sigma, lo=0, hint="Pass a positive standard deviation.")
        self.scale = self.sigma
        self.support = math.inf

    def _param_repr(self) -> str:
        return f"sigma={self.sigma:g}"

    def g(self, t):
        t = np.asarray(t, dtype=np.float64)
        return np.exp(-0.5 * (t / self.sigma) ** 2)

    def log_g(self, t):
        t = np.asarray(t, dtype=np.float64)
        return -0.5 * (t / self.sigma) ** 2

    def moment(self, k) -> float:
        k = _check_k(k)
        return float(self.sigma ** (k + 1) * 2 ** ((k - 1) / 2) * special.gamma((k + 1) / 2))

    def eta_g(self, d) -> float:
        d = check_int("d", d, lo=1, hint=_D_HINT)
        return d * self.sigma ** 2

    def scaled(self, c) -> "Gaussian":
        c = check_real("c", c, lo=0, hint="Pass a positive scale factor.")
        return Gaussian(self.sigma * c)

    def _radius_dist(self, d):
        return _st.chi(d, scale=self.sigma)


class Laplace(RadialLaw):
    """``g(t) = exp(-t / b)``; ``eta_g(d) = d (d+1) b^2``.

    Parameters
    ----------
    scale : float > 0
        ``b``.

    Example
    -------
    >>> round(Laplace(0.1).eta_g(2), 12)
    0.06
    """

    name = "laplace"

    def __init__(self, scale=1.0) -> None:
        self.scale = check_real("scale", scale, lo=0, hint="Pass a positive length scale b.")
        self.support = math.inf

    def g(self, t):
        return np.exp(-np.asarray(t, dtype=np.float64) / self.scale)

    def log_g(self, t):
        return -np.asarray(t, dtype=np.float64) / self.scale

    def moment(self, k) -> float:
        k = _check_k(k)
        return float(self.scale ** (k + 1) * special.gamma(k + 1))

    def eta_g(self, d) -> float:
        d = check_int("d", d, lo=1, hint=_D_HINT)
        return d * (d + 1) * self.scale ** 2

    def scaled(self, c) -> "Laplace":
        c = check_real("c", c, lo=0, hint="Pass a positive scale factor.")
        return Laplace(self.scale * c)

    def _radius_dist(self, d):
        return _st.gamma(d, scale=self.scale)


class PowerLaw(RadialLaw):
    """Heavy-tailed ``g(t) = (1 + (t/s)^2)^(-a)``.

    ``m_k = s^(k+1) B((k+1)/2, a - (k+1)/2) / 2`` is finite iff ``2a > k + 1``;
    hence ``eta_g(d) = s^2 d / (2a - d - 2)`` needs ``2a > d + 2`` and sampling
    the radius needs ``2a > d``.

    Parameters
    ----------
    scale : float > 0
        ``s``.
    a : float > 0
        Tail exponent.

    Example
    -------
    >>> round(PowerLaw(1.0, a=3.0).eta_g(2), 12)
    1.0
    >>> PowerLaw(1.0, a=1.5).eta_g(2)
    Traceback (most recent call last):
    ...
    tanbias.errors.ParameterError: a=1.5 is out of range for eta_g(d=2): valid range is (2, inf), because m_3 = int g(t) t^3 dt diverges unless 2a > 4. Pass a larger tail exponent a or a lighter-tailed law.
    """

    name = "powerlaw"

    def __init__(self, scale=1.0, a=2.0) -> None:
        self.scale = check_real("scale", scale, lo=0, hint="Pass a positive length scale s.")
        self.a = check_real("a", a, lo=0, hint="Pass a positive tail exponent a.")
        self.support = math.inf

    def _param_repr(self) -> str:
        return f"scale={self.scale:g}, a={self.a:g}"

    def g(self, t):
        t = np.asarray(t, dtype=np.float64)
        return (1.0 + (t / self.scale) ** 2) ** (-self.a)

    def log_g(self, t):
        t = np.asarray(t, dtype=np.float64)
        return -self.a * np.log1p((t / self.scale) ** 2)

    def _need(self, k, what: str) -> None:
        if not 2 * self.a > k + 1:
            lo = (k + 1) / 2
            raise ParameterError(
                f"a={self.a:g} is out of range for {what}: valid range is ({lo:g}, inf), "
                f"because m_{k:g} = int g(t) t^{k:g} dt diverges unless 2a > {k + 1:g}. "
                f"Pass a larger tail exponent a or a lighter-tailed law.")

    def moment(self, k) -> float:
        k = _check_k(k)
        self._need(k, f"moment(k={k:g})")
        return float(self.scale ** (k + 1) * 0.5 * special.beta((k + 1) / 2, self.a - (k + 1) / 2))

    def eta_g(self, d) -> float:
        d = check_int("d", d, lo=1, hint=_D_HINT)
        self._need(d + 1, f"eta_g(d={d})")
        return self.moment(d + 1) / self.moment(d - 1)

    def scaled(self, c) -> "PowerLaw":
        c = check_real("c", c, lo=0, hint="Pass a positive scale factor.")
        return PowerLaw(self.scale * c, self.a)

    def _radius_dist(self, d):
        self._need(d - 1, f"sampling the radius in d={d}")
        return _SqrtScaled(_st.betaprime(d / 2, self.a - d / 2), self.scale)


class Epanechnikov(RadialLaw):
    """Compactly supported ``g(t) = 1 - (t/h)^2`` on ``[0, h]``, 0 beyond.

    ``eta_g(d) = h^2 d / (d + 4)``.

    Parameters
    ----------
    h : float > 0
        Support radius.

    Example
    -------
    >>> round(Epanechnikov(1.0).eta_g(1), 12)
    0.2
    """

    name = "epanechnikov"

    def __init__(self, h=1.0) -> None:
        self.h = check_real("h", h, lo=0, hint="Pass a positive support radius h.")
        self.scale = self.h
        self.support = self.h

    def _param_repr(self) -> str:
        return f"h={self.h:g}"

    def g(self, t):
        t = np.asarray(t, dtype=np.float64)
        return np.where(t < self.h, 1.0 - (t / self.h) ** 2, 0.0)

    def moment(self, k) -> float:
        k = _check_k(k)
        return float(self.h ** (k + 1) * 2.0 / ((k + 1) * (k + 3)))

    def eta_g(self, d) -> float:
        d = check_int("d", d, lo=1, hint=_D_HINT)
        return self.h ** 2 * d / (d + 4)

    def scaled(self, c) -> "Epanechnikov":
        c = check_real("c", c, lo=0, hint="Pass a positive scale factor.")
        return Epanechnikov(self.h * c)

    def _radius_dist(self, d):
        return _SqrtScaled(_st.beta(d / 2, 2), self.h)


class _SqrtScaled:
    """Distribution of ``scale * sqrt(V)`` for a frozen scipy distribution V."""

    def __init__(self, base, scale: float) -> None:
        self.base, self.scale = base, scale

    def rvs(self, size, random_state):
        return self.scale * np.sqrt(self.base.rvs(size=size, random_state=random_state))

    def cdf(self, r):
        r = np.asarray(r, dtype=np.float64)
        return self.base.cdf(np.where(r > 0, (r / self.scale) ** 2, 0.0))

    def isf(self, q):
        return self.scale * math.sqrt(self.base.isf(q))


class Custom(RadialLaw):
    """A user-supplied strictly decreasing profile ``g``.

    ``g`` is checked to strictly decrease on a dense grid of its support
    (up to where it has decayed below ``1e-12 g(0)``); moments use
    ``scipy.integrate.quad``; radii are sampled *exactly* (up to a truncation
    of mass < 1e-13) by rejection from a piecewise-constant envelope, which is
    an upper bound because ``g`` decreases.

    Parameters
    ----------
    g : callable
        Vectorised ``g(t)`` for ``t >= 0``, positive at 0.
    support : float or None
        Upper end of the support (``None``: unbounded).
    scale : float > 0
        A characteristic length used to place grids (default 1).
    name : str

    Raises
    ------
    ParameterError
        If ``g`` is not callable, not finite and positive at 0, or fails to
        strictly decrease (the message gives the first failing ``t``).

    Example
    -------
    >>> law = Custom(lambda t: np.exp(-t**2 / 2), scale=1.0)
    >>> round(law.eta_g(2), 8)
    2.0
    >>> Custom(lambda t: np.exp(-t) * (1 + 2 * t))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    tanbias.errors.ParameterError: g is not strictly decreasing: g(0) = 1 <= g(...
    """

    name = "custom"

    def __init__(self, g, support=None, scale=1.0, name: str = "custom") -> None:
        self._g = check_callable("g", g, hint="Pass a vectorised function of t >= 0.")
        self.scale = check_real("scale", scale, lo=0, hint="Pass a positive length scale.")
        self.support = math.inf if support is None else check_real(
            "support", support, lo=0, hint="Pass the upper end of the support, or None.")
        self.name = str(name)
        self._t_check = self._validate()
        self._moments: dict = {}

    def _param_repr(self) -> str:
        return f"g={getattr(self._g, '__name__', 'g')}, support={self.support:g}, scale={self.scale:g}"

    def g(self, t):
        t = np.asarray(t, dtype=np.float64)
        out = np.asarray(self._g(t), dtype=np.float64)
        if out.shape != t.shape:
            out = np.broadcast_to(out, t.shape).copy()
        if math.isfinite(self.support):
            out = np.where(t < self.support, out, 0.0)
        return out

    def _validate(self) -> float:
        try:
            g0 = float(np.asarray(self._g(np.array([0.0])), dtype=np.float64).ravel()[0])
        except Exception as exc:  # noqa: BLE001 - report any failure of the user's g
            raise ParameterError(
                f"g raised {type(exc).__name__}: {exc} at t=0: valid range is vectorised "
                f"functions of t >= 0. Pass a function accepting a numpy array.") from None
        if not (math.isfinite(g0) and g0 > 0):
            raise ParameterError(
                f"g(0)={g0!r} is out of range: valid range is (0, inf). A radial law must be "
                f"positive and finite at t=0.")
        if math.isfinite(self.support):
            top = self.support
        else:
            top = self.scale
            for _ in range(80):
                if float(np.asarray(self._g(np.array([top]))).ravel()[0]) < 1e-12 * g0:
                    break
                top *= 2.0
            else:
                self._check_decreasing(self.scale * 2.0 ** 20)   # report a non-decrease first
                raise ParameterError(
                    f"g does not decay: g({top:g}) >= 1e-12 g(0): valid range is strictly "
                    f"decreasing, integrable functions. Pass a decaying g or a finite support.")
        self._check_decreasing(top)
        return top

    def _check_decreasing(self, top: float) -> None:
        lin_top = min(top, 20.0 * self.scale)
        grid = np.unique(np.concatenate([
            np.linspace(0.0, lin_top, 4097),
            np.geomspace(1e-6 * lin_top, top, 4097)]))
        if math.isfinite(self.support):
            grid = grid[grid < self.support]
        vals = np.asarray(self._g(grid), dtype=np.float64)
        if vals.shape != grid.shape or not np.all(np.isfinite(vals)) or np.any(vals < 0):
            bad = int(np.argmax(~np.isfinite(vals) | (vals < 0))) if vals.shape == grid.shape else 0
            raise ParameterError(
                f"g({grid[bad]:g})={float(vals.ravel()[bad]) if vals.size == grid.size else vals!r} "
                f"is out of range: "
                f"valid range is finite values >= 0, one per t. Pass a vectorised g.")
        pos = vals[:-1] > 0
        fail = np.nonzero(pos & (vals[1:] >= vals[:-1]))[0]
        if fail.size:
            i = int(fail[0])
            raise ParameterError(
                f"g is not strictly decreasing: g({grid[i]:.6g}) = {vals[i]:.6g} <= "
                f"g({grid[i + 1]:.6g}) = {vals[i + 1]:.6g} (first failure at t={grid[i]:.6g} "
                f"on a grid of {grid.size} points in [0, {top:g}]): valid range is functions that "
                f"strictly decrease on their support. Pass a decreasing profile, or set "
                f"support= to where it stops decreasing.")

    def moment(self, k) -> float:
        k = _check_k(k)
        if k not in self._moments:
            self._moments[k] = _custom_moment(self, k)
        return self._moments[k]

    def scaled(self, c) -> "Custom":
        c = check_real("c", c, lo=0, hint="Pass a positive scale factor.")
        g = self._g
        return Custom(lambda t: g(np.asarray(t) / c),
                      None if not math.isfinite(self.support) else self.support * c,
                      self.scale * c, self.name)

    def _radius_dist(self, d):
        return _CustomRadius(self, d)


def _custom_moment(law: Custom, k: float) -> float:
    f = lambda t: float(law.g(np.array(t))) * t ** k  # noqa: E731
    top = law._t_check
    pts = [top * 2.0 ** -j for j in range(1, 12)]
    val, _ = integrate.quad(f, 0.0, top, points=pts, limit=400, epsabs=0, epsrel=1e-12)
    if not math.isfinite(law.support) or law.support > top:
        end = law.support if math.isfinite(law.support) else np.inf
        tail, _ = integrate.quad(f, top, end, limit=400, epsabs=0, epsrel=1e-10)
        val += tail
    if not math.isfinite(val):
        raise ParameterError(
            f"k={k:g} is out of range for this g: valid range is k where m_k = int g(t) t^k dt "
            f"converges. Pass a faster-decaying g.")
    return float(val)


class _CustomRadius:
    """Exact rejection sampler and CDF for density ~ g(r) r^(d-1) (Custom laws).

    Envelope: on a bin ``[a, b]``, ``g(r) r^(d-1) <= g(a) b^(d-1)`` because ``g``
    decreases. Bins are linear up to the law's scale and geometric beyond, up to
    a radius whose tail mass is below 1e-13 (so heavy tails stay cheap).
    """

    def __init__(self, law: Custom, d: int) -> None:
        self.law, self.d = law, d
        norm = law.moment(d - 1)
        f = lambda t: float(law.g(np.array(t))) * t ** (d - 1)  # noqa: E731
        if math.isfinite(law.support):
            top = law.support
        else:
            top = law.scale
            for _ in range(200):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", integrate.IntegrationWarning)
                    tail = integrate.quad(f, top, np.inf, limit=200)[0]
                if tail < 1e-13 * norm:
                    break
                top *= 2.0
            else:
                raise ParameterError(
                    f"g has too heavy a tail for sampling in d={d}: valid range is profiles with "
                    f"int g(r) r^(d-1) dr finite. Pass a faster-decaying g.")
        self.top = top
        lin_top = min(top, law.scale)
        edges = np.linspace(0.0, lin_top, 1025)
        if top > lin_top:
            n_geo = max(16, int(math.ceil(math.log(top / lin_top) / math.log(1.004))))
            edges = np.concatenate([edges, lin_top * np.geomspace(1.0, top / lin_top, n_geo + 1)[1:]])
        self.edges = edges
        upper = law.g(edges[:-1]) * edges[1:] ** (d - 1)
        self.env = upper * np.diff(edges)
        self.cum = np.cumsum(self.env) / np.sum(self.env)
        self.norm = norm

    def rvs(self, size, random_state):
        rng = random_state
        out = []
        have = 0
        d, law = self.d, self.law
        while have < size:
            m = int(1.3 * (size - have)) + 64
            b = np.searchsorted(self.cum, rng.random(m), side="right")
            b = np.minimum(b, self.cum.size - 1)
            lo, hi = self.edges[b], self.edges[b + 1]
            r = lo + (hi - lo) * rng.random(m)
            bound = law.g(lo) * hi ** (d - 1)
            keep = rng.random(m) * bound < law.g(r) * r ** (d - 1)
            out.append(r[keep])
            have += int(keep.sum())
        return np.concatenate(out)[:size]

    def cdf(self, r):
        r = np.asarray(r, dtype=np.float64)
        f = lambda t: float(self.law.g(np.array(t))) * t ** (self.d - 1)  # noqa: E731

        def one(x):
            if x <= 0:
                return 0.0
            if x >= self.law.support or math.isinf(x):
                return 1.0
            return min(1.0, integrate.quad(f, 0.0, x, limit=200, epsrel=1e-11)[0] / self.norm)

        return np.vectorize(one, otypes=[float])(r)

    def isf(self, q):
        return self.top


# ------------------------------------------------------------------ chapter 2: radius law
def radius_density(law, r, d) -> np.ndarray:
    """Density of the radius of a sample on flat ``R^d``: ``g(r) r^(d-1) / m_(d-1)``.

    Parameters
    ----------
    law : RadialLaw
    r : array_like, ``r >= 0``
    d : int >= 1

    Returns
    -------
    ndarray, same shape as ``r``

    Example
    -------
    >>> r = np.linspace(0.0, 10.0, 100_001)
    >>> p = radius_density(Gaussian(1.0), r, 3)
    >>> round(float(np.sum(p) * (r[1] - r[0])), 6), round(float(np.sum(p * r**2) * (r[1] - r[0])), 6)
    (1.0, 3.0)
    """
    if not isinstance(law, RadialLaw):
        raise ParameterError(f"law={law!r:.60} is not allowed: valid range is RadialLaw "
                             f"instances. Pass e.g. tanbias.theory.radial.Gaussian(0.1).")
    d = check_int("d", d, lo=1, hint=_D_HINT)
    r = np.asarray(r, dtype=np.float64)
    return law.g(r) * r ** (d - 1) / law.moment(d - 1)


def quadrature_moment(law, k) -> float:
    """``m_k = int_0^inf g(t) t^k dt`` by adaptive quadrature, independently of the closed forms.

    Used to cross-check :meth:`RadialLaw.moment` and :meth:`RadialLaw.eta_g`.

    Parameters
    ----------
    law : RadialLaw
    k : float > -1

    Returns
    -------
    float

    Example
    -------
    >>> round(quadrature_moment(Gaussian(1.0), 2) / Gaussian(1.0).moment(2), 10)
    1.0
    """
    if not isinstance(law, RadialLaw):
        raise ParameterError(f"law={law!r:.60} is not allowed: valid range is RadialLaw "
                             f"instances. Pass e.g. tanbias.theory.radial.Gaussian(0.1).")
    k = _check_k(k)
    top = law.support if np.isfinite(law.support) else np.inf
    f = lambda t: float(law.g(t)) * t ** k          # noqa: E731
    return integrate.quad(f, 0, top, epsabs=0, epsrel=1e-12, limit=400)[0]


def _nearly_flat_g(t):
    return 1.0 - 1e-6 * t


def nearly_flat(support) -> Custom:
    """A strictly decreasing but almost flat law ``g(t) = 1 - 1e-6 t`` on ``[0, support)``.

    Samples are then nearly uniform (per unit volume) in the ball of radius
    ``support``, so counts of points in smaller balls are proportional to
    volume (chapter 1's volume-growth test).

    Parameters
    ----------
    support : float > 0

    Returns
    -------
    Custom
        Named ``"flat"``.

    Example
    -------
    >>> law = nearly_flat(1.5)
    >>> law.name, law.support, round(float(law.g(1.0)), 6)
    ('flat', 1.5, 0.999999)
    """
    support = check_real("support", support, lo=0, hint="Pass the radius of the ball.")
    return Custom(_nearly_flat_g, support=support, name="flat")

