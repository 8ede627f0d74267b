"""Chapter 3's Monte Carlo directions: sample banks, the checks and their verdicts.

Exact samples of a surface (``d = 2``) give directions to hold against the
predicted law of :mod:`tanbias.theory.directional_density`:

* :func:`direction_density_data` and :func:`direction_checks`: one surface at
  one ``eta_g``, the histogram against the first-order and exact densities,
  and the numbers to check it with (chi-square tests, bias amplitudes);
* :class:`DirectionSamples`: the chapter's several surfaces over a grid of
  ``eta_g``, serving both its checks (:func:`surface_direction_checks`,
  :func:`direction_verdicts`) and its interactive figure
  (:func:`tanbias.figures.directional.directions_interactive`); a live slider
  reweights :class:`DirectionBank` s drawn once (exact importance sampling);
* :func:`mc_bias_amplitudes`: Monte Carlo bias amplitudes at a few ``eta_g``
  beside the exact ones (the points of the amplitude figure).
"""

from __future__ import annotations

import math

import numpy as np

from tanbias._checks import check_array, check_choice, check_instance, check_int
from tanbias.theory.direction_statistics import default_statistic, direction_histogram, exact_histogram
from tanbias.theory.directional_density import (bias_amplitude, exact_bias_amplitude,
                                  exact_directional_density, first_order_density,
                                  gauss_legendre_panels, polar_data, predicted_bias_amplitude,
                                  uniform_bias_moments, uniform_direction_rule)
from tanbias.errors import ParameterError
from tanbias.theory.manifolds import check_manifold
from tanbias.theory.radial import Epanechnikov, Gaussian, RadialLaw  # noqa: F401  (Gaussian: doctests)
from tanbias.stats import Check, check_close, check_in_interval

__all__ = [
    "direction_density_data", "direction_checks", "mc_bias_amplitudes", "DirectionBank",
    "DirectionSamples", "surface_direction_checks", "direction_verdicts",
]


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
        relative to uniform on it; ``hist``
        (:class:`~tanbias.theory.direction_statistics.DirectionHistogram`); ``u`` (n, 2) the sampled
        directions; ``eta_g``; ``name``.

    Raises
    ------
    ParameterError
        A manifold with ``d != 2``, or bad ``law``, ``n``, ``rng``.

    Example
    -------
    >>> from tanbias.theory.manifolds import Sphere
    >>> data = direction_density_data(Sphere(2, R=1.0, D=3), Gaussian(0.1), n=2000, bins=4)
    >>> bool(np.allclose(data["first_order"], 1.0)), data["hist"].n
    (True, 2000)
    """
    manifold = check_manifold(manifold)
    if manifold.d != 2:
        raise ParameterError(f"manifold.d={manifold.d} is out of range: valid range is [2, 2] "
                             f"(the angle of a direction needs d = 2). Pass a surface.")
    law = check_instance("law", law, RadialLaw, hint="Pass e.g. tanbias.theory.radial.Gaussian(0.1).")
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

    Parameters
    ----------
    manifold : GeneralizedCylinder or Quadric with ``d = 2``
    law : RadialLaw
        The law ``u`` was sampled from.
    u : array_like, shape (n, 2)
        Sampled directions.
    bins : int
        Histogram bins of the angle.

    Returns
    -------
    dict
        ``chi2_exact`` and ``chi2_uniform``: (statistic, dof, p-value) of the
        angle histogram against the exact law and against uniform directions;
        ``amplitude``, ``amplitude_se``: Monte Carlo ``E_p[b] - E_unif[b]``;
        ``exact_amplitude`` (quadrature); ``predicted_amplitude`` (first order).

    Example
    -------
    >>> from tanbias.theory.manifolds import Cylinder
    >>> C, law = Cylinder(R=1.0), Gaussian(0.3)
    >>> c = direction_checks(C, law, C.sample(20_000, law, 0).u)
    >>> bool(abs(c["amplitude"] - c["exact_amplitude"]) < 4 * c["amplitude_se"])
    True
    """
    manifold = check_manifold(manifold)
    law = check_instance("law", law, RadialLaw, hint="Pass e.g. tanbias.theory.radial.Gaussian(0.1).")
    hist = direction_histogram(u, bins, default_statistic(manifold.d, None))
    exact_bins = exact_histogram(manifold, law, hist.edges)
    amp, se = bias_amplitude(u, manifold, return_stderr=True)
    return dict(chi2_exact=hist.chi_square(exact_bins),
                chi2_uniform=hist.chi_square(np.ones_like(hist.density)),
                amplitude=amp, amplitude_se=se,
                exact_amplitude=exact_bias_amplitude(manifold, law),
                predicted_amplitude=predicted_bias_amplitude(manifold, law.eta_g(manifold.d)))


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
    >>> from tanbias.theory.manifolds import Cylinder
    >>> mc = mc_bias_amplitudes(Cylinder(R=1.0), Gaussian(1.0), [0.1], n=20_000)
    >>> bool(abs(mc["amplitude"][0] - mc["exact"][0]) < 4 * mc["se"][0])
    True
    """
    manifold = check_manifold(manifold)
    law = check_instance("law", law, RadialLaw, hint="Pass e.g. tanbias.theory.radial.Gaussian(1.0).")
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


class DirectionBank:
    """Samples of one surface drawn once at ``law_k``, reweighted to any narrower law.

    The target density is ``~ g(chord) dvol``: samples drawn with ``g_k`` and
    weighted by ``g(chord) / g_k(chord)`` are exact (self-normalised) importance
    samples of it whenever ``g_k > 0`` wherever ``g > 0`` (a broader law of the
    same family). The exact density uses the same bank: the polar data
    ``(chord, V)`` on a Gauss-Legendre grid over the bank's radial range
    (``n_panels`` panels, finer than the 12 of
    :func:`~tanbias.theory.directional_density.exact_directional_density` over the narrower
    target range), integrated against the target's ``g``.

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
    >>> from tanbias.theory.manifolds import Cylinder
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
        r, self.wr = gauss_legendre_panels(top, n_panels)
        nodes, self.wnodes = uniform_direction_rule(manifold, n_dirs)
        self.n_curve = u_curve.shape[0]
        self.grid_chord, self.grid_vol = polar_data(manifold, r,
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
    >>> from tanbias.theory.manifolds import Cylinder, Sphere
    >>> ds = DirectionSamples({"cylinder": Cylinder(R=1.0), "sphere": Sphere(2, R=1.0, D=3)},
    ...                       (0.01, 0.1), n=2000)
    >>> ds.data(0.1, "cylinder")["u"].shape, ds.data(0.1, "cylinder") is ds.data(0.1, "cylinder")
    ((2000, 2), True)
    >>> frame = ds.live("cylinder", 0.05)
    >>> frame["bank_eta_g"], frame["u"].shape
    (0.1, (2000, 2))
    """

    def __init__(self, surfaces, etas, law=None, n=None, seed=0, bins=12) -> None:
        self.surfaces = dict(surfaces)
        self.law = Epanechnikov(1.0) if law is None else check_instance(
            "law", law, RadialLaw, hint="Pass e.g. tanbias.theory.radial.Epanechnikov(1.0).")
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
    >>> from tanbias.theory.manifolds import Cylinder, Sphere
    >>> ds = DirectionSamples({"cylinder": Cylinder(R=1.0), "sphere": Sphere(2, R=1.0, D=3)},
    ...                       (0.01, 0.1), n=3000)
    >>> sorted(surface_direction_checks(ds, 0.1))
    ['cylinder', 'sphere']
    """
    samples = check_instance("samples", samples, DirectionSamples,
                             hint="Pass a tanbias.theory.direction_samples.DirectionSamples.")
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

    Parameters
    ----------
    samples : DirectionSamples
    numbers : dict[str, dict]
        Output of :func:`surface_direction_checks` for ``samples``.

    Returns
    -------
    list[Check]

    Example
    -------
    >>> from tanbias.theory.manifolds import Cylinder, Sphere
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
