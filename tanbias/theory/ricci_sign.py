"""Which curvature raises the directional density: ring laws and the Ricci sign (chapter 3).

On ``S^k_R x R^(d-k)`` (a ``GeneralizedCylinder``) a direction is described
by its sphere share ``q = |u_S|^2`` (``s`` in the code), with ``||II(u,u)||^2 = s^2 / R^2`` and
``Ric(u,u) = (k-1) s / R^2``, so the two curvature terms of the first-order
law can be told apart. Two views of that:

* the *ring laws* (:func:`ring_factors`, :func:`ring_first_order`,
  :func:`ring_data`): among samples at geodesic radius exactly ``t`` the
  direction law is a chord factor (extrinsic curvature, favours) times a
  volume factor (positive Ricci curvature, disfavours); the marginal law
  averages the rings;
* the *Ricci sign test* (:func:`ricci_sign_test`, :class:`RicciSignTest`,
  :func:`exact_ricci_coefficient`, :func:`ricci_sign_data`): the mean share of
  sampled directions measures the Ricci coefficient, against our derivation
  (Ricci curvature lowers the density) and the statement's wording (it
  favours).

Chapter 3 uses it in "Ring by ring", "Ring laws" and "Which sign does the Ricci
term have?"; its figures are :func:`tanbias.figures.directional.ring_interactive`
and :func:`tanbias.figures.directional.ricci_sign_figure`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as _st

from tanbias._checks import check_array, check_choice, check_instance, check_int, check_real, check_tangent
from tanbias.theory.direction_statistics import direction_histogram, sphere_share_statistic
from tanbias.theory.directional_density import (check_eta_resolved, exact_directional_density,
                                                exact_expectation, first_order_density, polar_data,
                                                uniform_direction_rule)
from tanbias.errors import ParameterError
from tanbias.theory.manifolds import GeneralizedCylinder, check_manifold
from tanbias.theory.radial import Gaussian, RadialLaw
from tanbias.stats import Check, check_close

__all__ = [
    "ring_factors", "ring_first_order", "ring_data", "RicciSignTest", "ricci_sign_test",
    "exact_ricci_coefficient", "ricci_sign_data", "projected_share_correction", "direction_variables",
]


# ---------------------------------------------------------------------- ring laws
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
    >>> from tanbias.theory.manifolds import GeneralizedCylinder
    >>> M = GeneralizedCylinder(k=2, d=3, R=1.0, D=4)
    >>> f = ring_factors(M, Gaussian(0.2), 0.2, [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    >>> bool(f["chord"][0] > f["chord"][1]), bool(f["volume"][0] < f["volume"][1])
    (True, True)
    """
    manifold = check_manifold(manifold)
    law = check_instance("law", law, RadialLaw, hint="Pass e.g. tanbias.theory.radial.Gaussian(0.1).")
    t = check_real("t", t, lo=0, hi=manifold.patch_radius, hi_open=False,
                   hint=f"Pass a ring radius no larger than patch_radius={manifold.patch_radius:g}.")
    u = check_tangent("u", u, manifold.d)
    shape = u.shape[:-1]
    uf = u.reshape(-1, manifold.d)
    uf = uf / np.linalg.norm(uf, axis=1, keepdims=True)
    nodes, weights = uniform_direction_rule(manifold, n_dirs)
    chord, vol = polar_data(manifold, np.array([t]), np.concatenate([uf, nodes]))
    chord, vol = chord[0], vol[0]
    with np.errstate(divide="ignore"):
        lg = law.log_g(chord)
    lg = lg - np.max(lg[np.isfinite(lg)])          # g can underflow: work in logs
    parts = {"chord": np.exp(lg), "volume": vol}
    parts["ring"] = parts["chord"] * parts["volume"]
    k = uf.shape[0]
    return {name: (v[:k] / (weights @ v[k:])).reshape(shape) for name, v in parts.items()}


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
    >>> from tanbias.theory.manifolds import GeneralizedCylinder
    >>> M = GeneralizedCylinder(k=2, d=3, R=1.0, D=4)
    >>> s = np.linspace(0.0, 1.0, 5)
    >>> u = np.stack([np.sqrt(s), 0 * s, np.sqrt(1 - s)], axis=1)
    >>> exact = ring_factors(M, Gaussian(0.1), 0.05, u)["ring"] - 1
    >>> bool(np.allclose(exact, ring_first_order(M, Gaussian(0.1), 0.05, s), atol=1e-5))
    True
    """
    manifold = check_instance("manifold", manifold, GeneralizedCylinder,
                              hint="Pass GeneralizedCylinder(k=2, d=3, R=1.0, D=4).")
    law = check_instance("law", law, Gaussian, hint="Pass a tanbias.theory.radial.Gaussian.")
    t = check_real("t", t, lo=0, hint="Pass a positive ring radius.")
    s = np.asarray(s, dtype=np.float64)
    E = _share_moments(manifold)
    R2 = manifold.R ** 2
    extrinsic = (t / law.sigma) ** 2 * (s ** 2 - E[2]) / (24 * R2)
    return t ** 2 * (extrinsic - (manifold.k - 1) * (s - E[1]) / (6 * R2))


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
    >>> from tanbias.theory.manifolds import GeneralizedCylinder
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


# --------------------------------------------------------- the sign of the Ricci term
def _share_moments(manifold) -> np.ndarray:
    """``E_unif[s^j]``, ``j = 0..4``, for ``s = |u_S|^2 ~ Beta(k/2, (d-k)/2)``."""
    ref = _st.beta(manifold.k / 2, (manifold.d - manifold.k) / 2)
    return np.array([1.0] + [float(ref.moment(j)) for j in range(1, 5)])


@dataclass
class RicciSignTest:
    """Which sign of the Ricci term do sampled directions on ``S^k_R x R^(d-k)`` support?

    With ``q = |u_S|^2`` the share of a direction along the sphere factor
    (``s`` in the code), ``||II(u,u)||^2 = q^2 / R^2`` and ``Ric(u,u) = (k-1) q / R^2``,
    so to first order ``p(q) ~ 1 + eta_g (beta_II q^2 + beta q)`` with the extrinsic
    coefficient ``beta_II = (d+2) / (24 R^2)`` (the attribute ``alpha``) and the Ricci coefficient
    ``beta = -(k-1) / (6 R^2)`` in our derivation (positive Ricci curvature
    lowers the density), ``+(k-1) / (6 R^2)`` if Ricci curvature were
    favoured like extrinsic curvature (the statement's wording). The test
    statistic is the shift of the mean share, ``E_p[q] - E_unif[q]``, which is
    ``eta_g (beta_II Cov(q, q^2) + beta Var(q))`` to first order: ``beta`` is
    estimated with ``beta_II`` fixed at its (undisputed) value.

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
        Extrinsic coefficient ``beta_II = (d+2) / (24 R^2)`` (named ``alpha`` before the book
        gave the letter alpha to the Zipf model alone).
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
        return (f"η_g = {self.eta_g:.3g}, {self.n:,} samples\n"
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
    >>> from tanbias.theory.manifolds import GeneralizedCylinder
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
    law = check_instance("law", law, RadialLaw, hint="Pass e.g. tanbias.theory.radial.Gaussian(0.3).")
    if u is None:
        n = check_int("n", n, lo=2, hint="Pass at least 2 samples.")
        u = manifold.sample(n, law, rng).u
    u = check_array("u", u, shape=(None, manifold.d), hint=f"Pass Samples.u, shape (n, {manifold.d}).")
    eta = check_eta_resolved(manifold, law.eta_g(manifold.d))
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

    Parameters
    ----------
    manifold : GeneralizedCylinder
    law : RadialLaw

    Returns
    -------
    float

    Raises
    ------
    PrecisionLossError
        The law's ``eta_g`` below :func:`~tanbias.theory.directional_density.eta_floor`:
        the coefficient is a shift divided by ``eta_g``, and the shift would be rounding.

    Example
    -------
    >>> from tanbias.theory.manifolds import GeneralizedCylinder
    >>> M = GeneralizedCylinder(k=2, d=3, R=1.0, D=4)
    >>> round(exact_ricci_coefficient(M, Gaussian(0.01)), 4)
    -0.1667
    """
    manifold = check_instance("manifold", manifold, GeneralizedCylinder,
                              hint="Pass GeneralizedCylinder(k=2, d=3, R=1.0, D=4).")
    law = check_instance("law", law, RadialLaw, hint="Pass e.g. tanbias.theory.radial.Gaussian(0.3).")
    eta = check_eta_resolved(manifold, law.eta_g(manifold.d))
    E, cov_s_s2, var_s, alpha, _ = _sign_coefficients(manifold)
    shift = exact_expectation(manifold, law, manifold.sphere_share) - E[1]
    return float((shift / eta - alpha * cov_s_s2) / var_s)


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
        (Ricci term lowers); ``hist``
        (:class:`~tanbias.theory.direction_statistics.DirectionHistogram` of ``s``); ``eta_g``.

    Example
    -------
    >>> from tanbias.theory.manifolds import GeneralizedCylinder
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


# ------------------------------------------------ which direction: geodesic u or projected v/|v|
def projected_share_correction(manifold, eta_g) -> float:
    """First-order change of the mean sphere share when the direction is read as the tangent
    projection's ``v / |v|`` instead of the geodesic ``u`` (our derivation).

    The tangent part of ``exp(r u) - mu`` is ``v = r u - (r^3 / 6) S_{II(u,u)} u + O(r^4)``
    (Weingarten: the tangent part of the geodesic's third derivative). On
    ``S^k_R x R^(d-k)``, ``S_{II(u,u)} u = s u_S / R^2``, which shortens the sphere part of
    ``v``: its share is ``s_hat = s - r^2 s^2 (1 - s) / (3 R^2) + O(r^3)``. Averaged over ``r``
    (``E r^2 = eta_g``), the mean share moves by ``-eta_g E_unif[s^2 (1 - s)] / (3 R^2)``, the
    same order as the curvature effects chapter 3 measures.

    Parameters
    ----------
    manifold : GeneralizedCylinder
    eta_g : float > 0

    Returns
    -------
    float

    Example
    -------
    >>> from tanbias.theory.manifolds import GeneralizedCylinder
    >>> M = GeneralizedCylinder(k=2, d=3, R=1.0, D=4)
    >>> round(projected_share_correction(M, 1.0) * 105 * 3, 10)       # E[s^2 (1 - s)] = 8/105
    -8.0
    """
    manifold = check_instance("manifold", manifold, GeneralizedCylinder,
                              hint="Pass GeneralizedCylinder(k=2, d=3, R=1.0, D=4).")
    eta_g = check_real("eta_g", eta_g, lo=0, hint="Pass a positive moment ratio.")
    E = _share_moments(manifold)
    return float(-eta_g * (E[2] - E[3]) / (3 * manifold.R ** 2))


def direction_variables(manifold, law, samples) -> dict:
    """The Ricci sign test read with each of the two direction variables of a sample.

    ``"geodesic"``: the direction ``u`` of the geodesic polar coordinates (what chapter 3's law is
    about). ``"projected"``: ``v / |v|``, the direction of the sample's tangent projection (what a
    learner who measures data has). For each: the measured shift of the mean sphere share and
    its standard error, its first-order prediction (for ``"projected"``, chapter 3's prediction
    plus :func:`projected_share_correction`), and the Ricci coefficient ``beta`` read from the
    measured shift the way :class:`RicciSignTest` reads it (``beta_II`` fixed).

    Parameters
    ----------
    manifold : GeneralizedCylinder with ``2 <= k < d``
    law : RadialLaw
    samples : Samples
        From ``manifold.sample(n, law, rng)`` (``u`` and ``tangent`` are used).

    Returns
    -------
    dict
        ``{"geodesic": {...}, "projected": {...}}``, each with ``shift``, ``shift_se``,
        ``predicted``, ``beta``, ``beta_se``.

    Example
    -------
    >>> from tanbias.theory.manifolds import GeneralizedCylinder
    >>> M, law = GeneralizedCylinder(k=2, d=3, R=1.0, D=4), Gaussian(0.3)
    >>> dv = direction_variables(M, law, M.sample(100_000, law, 0))
    >>> dv["geodesic"]["predicted"] > 0 > dv["projected"]["predicted"]          # the sign changes
    True
    """
    test = ricci_sign_test(manifold, law, u=samples.u)
    eta = test.eta_g
    E, cov_s_s2, var_s, alpha, _ = _sign_coefficients(manifold)
    out = {}
    for name, directions, extra in (("geodesic", samples.u, 0.0),
                                    ("projected", samples.tangent, projected_share_correction(manifold, eta))):
        s = manifold.sphere_share(directions)
        shift = float(np.mean(s) - E[1])
        se = float(np.std(s, ddof=1) / math.sqrt(s.size))
        out[name] = dict(shift=shift, shift_se=se, predicted=float(test.predicted["ours"] + extra),
                         beta=float((shift / eta - alpha * cov_s_s2) / var_s),
                         beta_se=float(se / (eta * var_s)))
    return out
