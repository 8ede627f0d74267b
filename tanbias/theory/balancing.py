"""Data balancing on a Zipf vocabulary: what decides the sign of its effect (chapter 4, Exercise 4.3).

The statement's fourth exercise asks why balancing the training data should weaken the
tangent alignment. This module is the theory side of it (our construction): a whole
vocabulary, each token type with the energy ratio of chapter 4, pooled over the vocabulary.

* **Frequencies.** ``V`` token types with Zipf frequencies ``f_i ∝ i^(-s)``
  (:func:`zipf_frequencies`). Balancing flattens them: it lowers the Zipf exponent ``s``.
* **The radius tie.** A type's concentration radius is a fixed function of its frequency,
  ``t_i = t_* (V f_i)^(-alpha)`` (:func:`tied_radii`): ``t_*`` is the radius of a type of
  the uniform frequency ``1/V``. ``alpha > 0`` is the statement's premise (frequent types
  are tighter), ``alpha < 0`` its reverse. A type that balancing makes rarer gets the
  radius of its new frequency. (Chapter 2's model anchors the *rarest* type at ``t_max``
  instead, which moves every radius when ``s`` changes.)
* **One type.** Its samples follow a radial family rescaled to length ``t_i``, with moment
  ratio ``eta_i``; chapter 4's corollary gives its energy ratio
  ``R_i = c sqrt(kappa_g eta_i)`` to leading order, ``kappa_g`` the family's radial kurtosis.
* **Pooling** (:data:`POOLINGS`, :func:`pooled_ratio`), with back-propagated signals of the
  same mean energy for every type:

  - ``"energy"``: the gradient energy summed over occurrences,
    ``R^2 = c^2 kappa_g sum_i f_i eta_i^2 / sum_i f_i eta_i``. This is what a weight's
    update sums over a stream, and what the energy share of a batch of occurrences reads;
  - ``"occurrence"``: the mean over occurrences of their type's own ratio, ``sum_i f_i R_i``;
  - ``"type"``: the mean over the vocabulary of each type's own ratio, ``mean_i R_i``.

What sets the sign (our derivation; the figure and the exercise let a reader find it):
``c``, ``kappa_g`` and ``t_*`` scale out, so only ``alpha`` and the pooling remain. A Zipf law
of larger ``s`` majorises one of smaller ``s``; ``sum_i f_i^(1 - alpha)`` is Schur-concave for
``0 < alpha < 1`` and ``sum_i f_i^(-alpha)`` Schur-convex for ``alpha > 0``. So balancing raises
the ``"occurrence"`` pooling for ``0 < alpha < 1`` (at ``alpha = 1`` it is constant) and lowers the ``"type"`` pooling, and the signs
swap for ``-1 < alpha < 0``. For ``"energy"``, ``R^2 ∝ sum_i f_i^(1 - 4 alpha) / sum_i
f_i^(1 - 2 alpha)``: the normal energy of a type grows as it gets rarer once ``alpha > 1/4``,
and the rare types carry it. For ``1/4 <= alpha <= 1/2`` the numerator is Schur-convex and the
denominator Schur-concave, so balancing lowers the ratio; numerically it does so for every
``alpha`` in ``[1/4, 1]`` tried (``tests/test_balancing.py``). It raises the ratio only in a
window ``0 < alpha < alpha*``, with ``alpha*`` about 0.144 on the vocabularies of the exercise
(:func:`energy_sign_threshold`, numerical). Between ``alpha*`` and ``1/4`` both sums rise under
balancing, the denominator faster, so the ratio falls there too: the threshold is not ``1/4``. For ``alpha < 0`` it lowers it too (numerical).
"""

from __future__ import annotations

import math

import numpy as np

from tanbias._checks import check_array, check_choice, check_instance, check_int, check_real, check_rng
from tanbias.errors import ParameterError
from tanbias.theory.gradients import radial_shape_constant, split_gradient
from tanbias.theory.manifolds import Submanifold
from tanbias.theory.radial import Gaussian, RadialLaw

__all__ = ["POOLINGS", "zipf_frequencies", "tied_radii", "token_eta", "pooled_ratio",
           "balancing_effect", "energy_sign_threshold", "balancing_data",
           "simulated_pooled_ratios"]

#: the ways the gradients of many token types are pooled into one ratio (module docstring)
POOLINGS = ("energy", "occurrence", "type")

_POOL_HINT = ("'energy' (gradient energy summed over occurrences), 'occurrence' (mean over "
              "occurrences of their type's ratio) or 'type' (mean over types).")


def zipf_frequencies(V, s) -> np.ndarray:
    """Zipf frequencies ``f_i ∝ i^(-s)`` of ``V`` token types, normalised, most frequent first.

    Parameters
    ----------
    V : int >= 1
        Vocabulary size.
    s : float >= 0
        Zipf exponent; ``s = 0`` is the uniform law (fully balanced).

    Returns
    -------
    ndarray, shape (V,)

    Example
    -------
    >>> zipf_frequencies(3, 0.0).tolist()
    [0.3333333333333333, 0.3333333333333333, 0.3333333333333333]
    >>> f = zipf_frequencies(4, 1.0)
    >>> round(float(f[0] / f[3]), 12), round(float(f.sum()), 12)
    (4.0, 1.0)
    """
    V = check_int("V", V, lo=1, hint="Pass a vocabulary size V >= 1.")
    s = check_real("s", s, lo=0, lo_open=False, hint="Pass a Zipf exponent s >= 0 (0: uniform).")
    f = np.arange(1, V + 1, dtype=np.float64) ** (-s)
    return f / f.sum()


def _frequencies(frequencies) -> np.ndarray:
    f = check_array("frequencies", frequencies, shape=(None,),
                    hint="Pass the frequencies of the token types, a 1-D array.")
    if f.size == 0 or np.any(f <= 0) or abs(float(f.sum()) - 1.0) > 1e-9:
        raise ParameterError(
            f"frequencies (size {f.size}, sum {float(f.sum()) if f.size else 0.0:.6g}) is out of "
            "range: valid range is positive numbers that sum to 1. Pass zipf_frequencies(V, s).")
    return f


def tied_radii(frequencies, alpha, t_star) -> np.ndarray:
    """Concentration radius of every type: ``t_i = t_* (V f_i)^(-alpha)``.

    Parameters
    ----------
    frequencies : array_like, shape (V,)
        Positive, summing to 1.
    alpha : float in [-1, 1]
        Radius exponent: ``alpha > 0`` makes frequent types tighter (the statement's premise),
        ``alpha < 0`` more diffuse, ``0`` switches the tie off.
    t_star : float > 0
        Radius of a type of the uniform frequency ``1/V``.

    Returns
    -------
    ndarray, shape (V,)

    Example
    -------
    >>> tied_radii([0.8, 0.2], 0.5, 0.1).round(6).tolist()    # V f = (1.6, 0.4)
    [0.079057, 0.158114]
    >>> tied_radii([0.5, 0.5], 0.5, 0.1).tolist()              # uniform: every type at t_*
    [0.1, 0.1]
    """
    f = _frequencies(frequencies)
    alpha = check_real("alpha", alpha, lo=-1, hi=1, lo_open=False, hi_open=False,
                       hint="Pass a radius exponent in [-1, 1] (0.5: radius ∝ f^(-1/2)).")
    t_star = check_real("t_star", t_star, lo=0, hint="Pass a positive radius.")
    return t_star * (f.size * f) ** (-alpha)


def token_eta(radii, law=None, d=2) -> np.ndarray:
    """Moment ratio ``eta_i`` of each type: the family ``law`` rescaled to length ``t_i``.

    ``eta_i = (t_i / law.scale)^2 eta_g(law)`` (chapter 2: rescaling by ``tau`` multiplies
    ``eta_g`` by ``tau^2``).

    Parameters
    ----------
    radii : array_like, shape (V,), positive
    law : RadialLaw, optional
        The family (default ``Gaussian(1.0)``: ``t_i`` is the type's sigma).
    d : int >= 1
        Intrinsic dimension.

    Returns
    -------
    ndarray, shape (V,)

    Example
    -------
    >>> token_eta([0.1, 0.2]).round(12).tolist()          # Gaussian, d = 2: eta = 2 sigma^2
    [0.02, 0.08]
    """
    t = check_array("radii", radii, shape=(None,), hint="Pass the types' radii, a 1-D array.")
    if t.size == 0 or np.any(t <= 0):
        raise ParameterError("radii is out of range: valid range is positive radii. "
                             "Pass tied_radii(frequencies, alpha, t_star).")
    law = Gaussian(1.0) if law is None else check_instance(
        "law", law, RadialLaw, hint="Pass e.g. tanbias.theory.radial.Laplace(1.0).")
    d = check_int("d", d, lo=1, hint="Pass the intrinsic dimension d >= 1.")
    return (t / law.scale) ** 2 * law.eta_g(d)


def pooled_ratio(frequencies, radii, pooling, c=1.0, law=None, d=2) -> float:
    """The vocabulary's normal-to-tangent gradient ratio, pooled one of three ways (leading order).

    Each type has chapter 4's energy ratio ``R_i = c sqrt(kappa_g eta_i)``; the signals have
    the same mean energy for every type.

    Parameters
    ----------
    frequencies : array_like, shape (V,)
        Positive, summing to 1.
    radii : array_like, shape (V,)
        The types' radii (:func:`tied_radii`).
    pooling : {"energy", "occurrence", "type"}
        ``"energy"``: ``c sqrt(kappa_g sum f_i eta_i^2 / sum f_i eta_i)``;
        ``"occurrence"``: ``sum f_i R_i``; ``"type"``: ``mean R_i``.
    c : float > 0
        The manifold's constant ``c = 1/2 sqrt(E ||II(u,u)||^2)`` (chapter 4).
    law : RadialLaw, optional
        Default ``Gaussian(1.0)``.
    d : int >= 1

    Returns
    -------
    float

    Raises
    ------
    ParameterError
        Frequencies that are not a distribution, radii of another length, an unknown pooling.

    Example
    -------
    >>> f, t = [0.5, 0.5], [0.1, 0.1]                   # one radius: every pooling agrees
    >>> [round(pooled_ratio(f, t, p), 12) for p in POOLINGS]   # sqrt(kappa_g eta) = sqrt(2 * 0.02)
    [0.2, 0.2, 0.2]
    >>> f, t = [0.9, 0.1], [0.05, 0.2]
    >>> pooled_ratio(f, t, "energy") > pooled_ratio(f, t, "occurrence")   # far samples weigh more
    True
    """
    f = _frequencies(frequencies)
    eta = token_eta(radii, law, d)
    if eta.size != f.size:
        raise ParameterError(f"radii has {eta.size} entries but frequencies {f.size}: valid range "
                             "is one radius per type. Pass radii of the same length.")
    pooling = check_choice("pooling", pooling, POOLINGS, hint=_POOL_HINT)
    c = check_real("c", c, lo=0, hint="Pass the manifold's constant c > 0 (chapter 4).")
    kappa = radial_shape_constant(Gaussian(1.0) if law is None else law, d)
    if pooling == "energy":
        return c * math.sqrt(kappa * float(np.sum(f * eta ** 2)) / float(np.sum(f * eta)))
    per_type = c * np.sqrt(kappa * eta)
    return float(np.sum(f * per_type)) if pooling == "occurrence" else float(np.mean(per_type))


def balancing_effect(V, s_natural, s_balanced, alpha, pooling, t_star=0.05, c=1.0, law=None,
                     d=2) -> float:
    """Effect of balancing on the pooled ratio: ``log R(s_balanced) - log R(s_natural)``.

    Positive: balancing raises the normal share of the gradients, so it *weakens* the tangent
    alignment (the statement's prediction). ``t_star``, ``c`` and the family's ``kappa_g``
    cancel in the difference; they are parameters only so that each ``R`` is a real ratio.

    Parameters
    ----------
    V : int >= 1
    s_natural, s_balanced : float >= 0
        Zipf exponents of the natural and of the balanced stream.
    alpha : float in [-1, 1]
        Radius exponent (:func:`tied_radii`).
    pooling : {"energy", "occurrence", "type"}
    t_star, c, law, d
        As in :func:`tied_radii` and :func:`pooled_ratio`.

    Returns
    -------
    float

    Example
    -------
    >>> e = {p: balancing_effect(1000, 1.0, 0.6, 0.1, p) for p in POOLINGS}
    >>> {p: int(np.sign(v)) for p, v in e.items()}
    {'energy': 1, 'occurrence': 1, 'type': -1}
    >>> int(np.sign(balancing_effect(1000, 1.0, 0.6, 0.5, "energy")))   # a strong tie: rare types win
    -1
    >>> abs(balancing_effect(1000, 1.0, 0.6, 0.0, "energy")) < 1e-12     # no tie, no effect
    True
    """
    out = []
    for s in (s_balanced, s_natural):
        f = zipf_frequencies(V, s)
        out.append(math.log(pooled_ratio(f, tied_radii(f, alpha, t_star), pooling, c, law, d)))
    return out[0] - out[1]


def energy_sign_threshold(V, s_natural, s_balanced) -> float:
    """The radius exponent ``alpha*`` in ``(0, 1/4)`` above which balancing lowers the
    ``"energy"`` pooling (below it, down to 0, balancing raises it).

    Parameters
    ----------
    V : int >= 2
    s_natural, s_balanced : float >= 0, ``s_balanced < s_natural``

    Returns
    -------
    float

    Raises
    ------
    ParameterError
        ``s_balanced >= s_natural``, or no sign change in ``(0, 1/4)``.

    Example
    -------
    >>> round(energy_sign_threshold(1000, 1.0, 0.6), 2)
    0.14
    """
    from scipy.optimize import brentq

    V = check_int("V", V, lo=2, hint="Pass a vocabulary of at least two types.")
    s_natural = check_real("s_natural", s_natural, lo=0, lo_open=False)
    s_balanced = check_real("s_balanced", s_balanced, lo=0, hi=s_natural, lo_open=False,
                            hint="Balancing flattens the frequencies: pass s_balanced < s_natural.")

    def effect(a):
        return balancing_effect(V, s_natural, s_balanced, a, "energy")

    lo, hi = 1e-3, 0.25
    if not effect(lo) > 0 > effect(hi):
        raise ParameterError(f"the energy pooling does not change sign in ({lo}, {hi}) for V={V}, "
                             f"s {s_natural} -> {s_balanced}: valid range is vocabularies where it does. "
                             "Pass a larger V or a wider range of s.")
    return float(brentq(effect, lo, hi, xtol=1e-6))


def balancing_data(V, s, alpha, s_grid=None, t_star=0.05, c=1.0, law=None, d=2,
                   n_ranks=60) -> dict:
    """Numbers of the balancing figure, at one Zipf exponent ``s`` and radius exponent ``alpha``.

    Parameters
    ----------
    V : int >= 2
    s : float >= 0
    alpha : float in [-1, 1]
    s_grid : array_like, optional
        Exponents at which the three pooled ratios are drawn (default 0 to 1.5).
    t_star, c, law, d
        As in :func:`pooled_ratio`.
    n_ranks : int >= 2
        About this many log-spaced ranks for the per-type curves.

    Returns
    -------
    dict
        ``rank`` (n,); ``occurrence_share`` and ``energy_share`` (n,): the cumulative share of
        the occurrences and of the normal gradient energy ``f_i eta_i^2`` held by the types of
        rank up to ``rank``; ``radius`` (n,); ``s_grid`` (m,); ``ratios``: pooling -> (m,) pooled
        ratios along ``s_grid``; ``at_s``: pooling -> the pooled ratio at ``s``; ``s``, ``alpha``.

    Example
    -------
    >>> b = balancing_data(1000, 1.0, 0.5)
    >>> round(float(b["occurrence_share"][-1]), 12), round(float(b["energy_share"][-1]), 12)
    (1.0, 1.0)
    >>> bool(b["energy_share"][10] < b["occurrence_share"][10])   # alpha = 1/2: the tail holds the energy
    True
    """
    V = check_int("V", V, lo=2, hint="Pass a vocabulary of at least two types.")
    n_ranks = check_int("n_ranks", n_ranks, lo=2)
    s_grid = np.linspace(0.0, 1.5, 31) if s_grid is None else check_array(
        "s_grid", s_grid, shape=(None,), hint="Pass Zipf exponents >= 0.")
    f = zipf_frequencies(V, s)
    t = tied_radii(f, alpha, t_star)
    eta = token_eta(t, law, d)
    keep = np.unique(np.geomspace(1, V, n_ranks).astype(int)) - 1
    occ = np.cumsum(f)
    energy = np.cumsum(f * eta ** 2) / float(np.sum(f * eta ** 2))
    ratios = {}
    for p in POOLINGS:
        ratios[p] = np.array([pooled_ratio(g, tied_radii(g, alpha, t_star), p, c, law, d)
                              for g in (zipf_frequencies(V, x) for x in s_grid)])
    return dict(rank=keep + 1, occurrence_share=occ[keep], energy_share=energy[keep],
                radius=t[keep], s_grid=s_grid, ratios=ratios,
                at_s={p: pooled_ratio(f, t, p, c, law, d) for p in POOLINGS},
                s=float(s), alpha=float(alpha))


def simulated_pooled_ratios(manifold, frequencies, radii, law=None, n_per_type=2000, rng=0,
                            m=4) -> dict:
    """The three poolings measured on exact samples of every type (a check of :func:`pooled_ratio`).

    Each type draws ``n_per_type`` points on ``manifold`` around its centroid ``manifold.mu``
    with the family ``law`` rescaled to its radius, and Gaussian back-propagated signals of
    dimension ``m``. Its per-sample tangent and normal gradient energies are averaged, and
    the types are weighted by frequency (``"energy"``, ``"occurrence"``) or equally
    (``"type"``): the same sums as drawing occurrences by frequency, with less noise.

    Parameters
    ----------
    manifold : Submanifold
    frequencies : array_like, shape (V,)
    radii : array_like, shape (V,)
    law : RadialLaw, optional
        Default ``Gaussian(1.0)``.
    n_per_type : int >= 2
    rng : numpy.random.Generator or int seed
    m : int >= 1

    Returns
    -------
    dict
        pooling -> float, and ``"per_type"``: ndarray (V,) of the types' measured ratios.

    Example
    -------
    >>> from tanbias.theory.manifolds import GeneralizedCylinder
    >>> from tanbias.theory.gradients import predicted_rms_constant
    >>> cyl = GeneralizedCylinder(1, 2, R=1.0, D=5, seed=0)
    >>> f = zipf_frequencies(5, 1.0)
    >>> t = tied_radii(f, 0.5, 0.03)
    >>> sim = simulated_pooled_ratios(cyl, f, t, n_per_type=4000, rng=0)
    >>> pred = pooled_ratio(f, t, "energy", c=predicted_rms_constant(cyl))
    >>> bool(abs(sim["energy"] / pred - 1) < 0.05)
    True
    """
    manifold = check_instance("manifold", manifold, Submanifold,
                              hint="Pass e.g. GeneralizedCylinder(1, 2, R=1.0, D=5).")
    f = _frequencies(frequencies)
    t = check_array("radii", radii, shape=(f.size,), hint="Pass one radius per type.")
    base = Gaussian(1.0) if law is None else check_instance("law", law, RadialLaw)
    n_per_type = check_int("n_per_type", n_per_type, lo=2)
    m = check_int("m", m, lo=1)
    rng = check_rng(rng)
    tangent, normal = np.empty(f.size), np.empty(f.size)
    for i, ti in enumerate(t):
        s = manifold.sample(n_per_type, base.scaled(float(ti) / base.scale), rng)
        g = split_gradient(s.y - manifold.mu, rng.standard_normal((n_per_type, m)),
                           manifold.tangent_basis, manifold.normal_basis)
        tangent[i], normal[i] = np.mean(g.tangent ** 2), np.mean(g.normal ** 2)
    per_type = np.sqrt(normal / tangent)
    return {"energy": math.sqrt(float(np.sum(f * normal)) / float(np.sum(f * tangent))),
            "occurrence": float(np.sum(f * per_type)), "type": float(np.mean(per_type)),
            "per_type": per_type}
