"""Linear-layer weight gradients split into tangent and normal input parts (chapter 4).

A linear layer ``z = W x`` receives activations ``x = mu + v + n`` near a
token's centroid ``mu``: ``v`` is the tangent part (``||v|| ~ t``) and ``n`` the
normal part (``||n|| ~ 1/2 ||II(u,u)|| t^2``). Its weight gradient for one
sample is the outer product ``G = delta x_c^T`` of the back-propagated signal
``delta`` (shape ``(m,)``) and the centred input ``x_c``. Projecting the
*input side* onto the tangent and normal subspaces splits it as

    G T = delta (T^T x_c)^T,   G N = delta (N^T x_c)^T,

so ``||G N||_F / ||G T||_F = ||n|| / ||v||`` for every sample: the ratio does
not depend on ``delta`` at all, and is ``O(t)``.

Three forms of "the normal-to-tangent gradient ratio" are computed here and
must not be confused (see :func:`parabola_counterexample` for why):

* ``per_sample``: ``||n_i|| / ||v_i||`` for each sample;
* ``rms`` (energy form): ``sqrt(sum_i ||G_i N||^2 / sum_i ||G_i T||^2)``, the
  per-token gradient energy of Bernas et al.'s metric; it is ``O(t)`` for *any*
  ``delta`` because it is a weighted average of per-sample ratios squared;
* ``mean``: ``||mean_i G_i N|| / ||mean_i G_i T||``, the batch gradient. It is
  *not* ``O(t)`` in general: the tangent side can cancel.

Centring. The book centres at the centroid, ``x_c = x - mu`` (``centring="mu"``,
the statement's definition; ``mu`` is known exactly in a simulation). An
empirical pipeline only has the batch mean (``centring="batch"``), which also
subtracts the mean normal offset ``1/2 E[II(u,u)] t^2``; the RMS constant then
drops from ``1/2 sqrt(E||II(u,u)||^2)`` to ``1/2 sqrt(tr Cov II(u,u))`` (see
:func:`predicted_rms_constant`), and vanishes for a round sphere sampled at a
fixed radius.

Used by chapter 4 (and by :mod:`tanbias.book.exercises`, exercises 1 and 2). Its
figures and interactives are in :mod:`tanbias.figures.gradients`; this module
is the mathematics and the data they show.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tanbias._checks import (check_array, check_bases, check_choice, check_int, check_radii,
                      check_radius, check_real, check_rng, check_rows, to_numpy)
from tanbias.errors import ParameterError
from tanbias.stats import SlopeFit, loglog_slope

__all__ = [
    "GradientSplit",
    "centre",
    "split_gradient",
    "gradient_ratio",
    "ii_moments",
    "predicted_rms_constant",
    "ratio_scaling",
    "fit_ratio_slope",
    "fit_rms_constant",
    "radial_shape_constant",
    "predicted_rms_from_eta",
    "eta_scaling",
    "eta_histogram",
    "two_token_types",
    "Counterexample",
    "parabola_counterexample",
    "counterexample_batch_scaling",
    "affine_signal_scaling",
    "gradient_cloud",
]

_FORMS = ("rms", "per_sample", "mean")
_CENTRINGS = ("mu", "batch")
_DELTAS = ("gaussian", "constant")


def _frame(rows):
    """Rows (dicts) as a pandas DataFrame: pandas is imported here only, once a table is built."""
    import pandas as pd

    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------
# input checks and centring
# ----------------------------------------------------------------------------

def _check_delta(delta, n):
    """delta is (n, m) per-sample signals, or (m,) one signal shared by all samples."""
    delta = check_array("delta", to_numpy(delta), shape=None)
    if delta.ndim == 1:
        delta = np.broadcast_to(delta, (n, delta.shape[0]))
    if delta.ndim != 2 or delta.shape[0] != n:
        raise ParameterError(
            f"delta has shape {tuple(delta.shape)} but expected shape ({n}, m) (one "
            f"back-propagated signal per sample) or (m,) (the same signal for all). "
            f"Match the number of rows of x_c.")
    return delta


def centre(x, mu=None, centring="mu"):
    """Centre activations at the centroid ``mu`` or at the batch mean.

    Parameters
    ----------
    x : array_like, shape (n, D)
        Activations.
    mu : array_like, shape (D,), optional
        The centroid; required for ``centring="mu"``.
    centring : {"mu", "batch"}
        ``"mu"``: ``x - mu`` (the statement's definition, used by the book);
        ``"batch"``: ``x - x.mean(axis=0)`` (what an empirical method can do).

    Returns
    -------
    ndarray, shape (n, D)

    Raises
    ------
    ParameterError
        Wrong shapes, unknown ``centring``, or ``mu`` missing for ``"mu"``.

    Example
    -------
    >>> centre([[1.0, 2.0], [3.0, 4.0]], centring="batch")
    array([[-1., -1.],
           [ 1.,  1.]])
    """
    check_choice("centring", centring, _CENTRINGS,
                 hint="Use 'mu' (centroid, the book's choice) or 'batch' (batch mean).")
    x = check_rows("x", x)
    if centring == "batch":
        return x - x.mean(axis=0)
    if mu is None:
        raise ParameterError("mu=None is not allowed with centring='mu': valid range is "
                             "arrays of shape (D,). Pass the centroid, or centring='batch'.")
    mu = check_array("mu", to_numpy(mu), shape=(x.shape[1],),
                     hint=f"mu must have the D={x.shape[1]} entries of one activation.")
    return x - mu


# ----------------------------------------------------------------------------
# the decomposition itself
# ----------------------------------------------------------------------------

@dataclass(frozen=True)
class GradientSplit:
    """Tangent and normal parts of linear-layer weight gradients over a batch.

    Attributes
    ----------
    tangent, normal : ndarray, shape (n,)
        Per-sample Frobenius norms ``||delta_i (T^T x_i)^T||_F = ||delta_i|| ||v_i||``
        and ``||delta_i|| ||n_i||``.
    mean_tangent, mean_normal : float
        Frobenius norms of the *batch-mean* gradient's parts,
        ``||mean_i delta_i (T^T x_i)^T||_F`` and the normal analogue.
    """

    tangent: np.ndarray
    normal: np.ndarray
    mean_tangent: float
    mean_normal: float

    @property
    def per_sample_ratio(self) -> np.ndarray:
        """``normal / tangent`` for each sample, shape (n,) (inf where tangent is 0)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.normal / self.tangent

    @property
    def rms_ratio(self) -> float:
        """Energy form: ``sqrt(sum normal^2 / sum tangent^2)``."""
        den = float(np.sum(self.tangent ** 2))
        return math.inf if den == 0 else math.sqrt(float(np.sum(self.normal ** 2)) / den)

    @property
    def mean_ratio(self) -> float:
        """Batch-mean form: ``mean_normal / mean_tangent`` (can blow up, see the parabola)."""
        return math.inf if self.mean_tangent == 0 else self.mean_normal / self.mean_tangent


def split_gradient(x_c, delta, tangent_basis, normal_basis) -> GradientSplit:
    """Split the weight gradients ``delta_i x_i^T`` into tangent and normal input parts.

    Parameters
    ----------
    x_c : array_like, shape (n, D)
        *Centred* layer inputs (see :func:`centre`).
    delta : array_like, shape (n, m) or (m,)
        Back-propagated signals ``dL/dz`` at the layer's output; a 1-D array is
        the same signal for every sample.
    tangent_basis : array_like, shape (D, d)
        Orthonormal columns spanning the tangent space.
    normal_basis : array_like, shape (D, k)
        Orthonormal columns spanning the normal space (``k = D - d`` usually).

    Returns
    -------
    GradientSplit

    Raises
    ------
    ParameterError
        Mismatched shapes or non-finite entries.

    Example
    -------
    >>> T, N = np.eye(2)[:, :1], np.eye(2)[:, 1:]
    >>> s = split_gradient([[0.1, 0.005]], [2.0], T, N)
    >>> float(s.tangent[0]), float(s.normal[0]), round(s.rms_ratio, 6)
    (0.2, 0.01, 0.05)
    """
    T, N = check_bases(tangent_basis, normal_basis)
    x = check_rows("x_c", x_c, T.shape[0])
    delta = _check_delta(delta, x.shape[0])
    xt, xn = x @ T, x @ N                      # input-side coordinates (n, d), (n, k)
    dnorm = np.linalg.norm(delta, axis=1)
    # ||delta x^T P||_F = ||delta|| ||P x|| for a rank-one gradient
    tangent = dnorm * np.linalg.norm(xt, axis=1)
    normal = dnorm * np.linalg.norm(xn, axis=1)
    n = x.shape[0]
    mean_t = float(np.linalg.norm(delta.T @ xt) / n)   # ||mean_i delta_i xt_i^T||_F
    mean_n = float(np.linalg.norm(delta.T @ xn) / n)
    return GradientSplit(tangent, normal, mean_t, mean_n)


def gradient_ratio(x_c, delta, tangent_basis, normal_basis, form="rms") -> float:
    """Normal-to-tangent ratio of linear-layer weight gradients (reference for exercise 1).

    With ``G_i = delta_i x_i^T`` the per-sample gradients, ``P_T, P_N`` the
    projectors onto the two subspaces:

    * ``form="rms"``: ``sqrt(sum_i ||G_i P_N||_F^2 / sum_i ||G_i P_T||_F^2)``;
    * ``form="per_sample"``: the mean over samples of ``||G_i P_N|| / ||G_i P_T||``;
    * ``form="mean"``: ``||Gbar P_N||_F / ||Gbar P_T||_F`` with ``Gbar = mean_i G_i``.

    Parameters
    ----------
    x_c : array_like, shape (n, D)
        Centred inputs.
    delta : array_like, shape (n, m) or (m,)
        Back-propagated signals.
    tangent_basis, normal_basis : array_like, shapes (D, d) and (D, k)
    form : {"rms", "per_sample", "mean"}

    Returns
    -------
    float

    Raises
    ------
    ParameterError
        Bad shapes or unknown ``form``.

    Example
    -------
    >>> T, N = np.eye(2)[:, :1], np.eye(2)[:, 1:]
    >>> x_c = np.array([[0.1, 0.01], [-0.1, 0.01]])   # a parabola at t = 0.1
    >>> round(gradient_ratio(x_c, [1.0], T, N), 6)      # RMS form: t
    0.1
    >>> gradient_ratio(x_c, [1.0], T, N, form="mean")   # tangent side cancels
    inf
    """
    check_choice("form", form, _FORMS, hint="Use 'rms' (energy form, the book's choice).")
    s = split_gradient(x_c, delta, tangent_basis, normal_basis)
    if form == "rms":
        return s.rms_ratio
    if form == "mean":
        return s.mean_ratio
    return float(np.mean(s.per_sample_ratio))


# ----------------------------------------------------------------------------
# predictions from the second fundamental form
# ----------------------------------------------------------------------------

def _ii_matrices(manifold) -> np.ndarray:
    """II as k symmetric d x d matrices: A[j, a, b] = II(e_a, e_b)_j (exact, no sampling)."""
    if hasattr(manifold, "ii_matrices"):
        return np.asarray(manifold.ii_matrices(), dtype=float)
    d = int(manifold.d)
    E = np.eye(d)
    # one call per pair: does not rely on the implementation broadcasting
    A = np.array([[np.asarray(manifold.second_fundamental_form(E[a], E[b]), dtype=float)
                   .reshape(-1) for b in range(d)] for a in range(d)])   # (d, d, k)
    return np.moveaxis(A, -1, 0)


def ii_moments(manifold):
    """Exact moments of ``II(u, u)`` for ``u`` uniform on the unit tangent sphere.

    Uses the identity ``E[(u^T A u)(u^T B u)] = (tr A tr B + 2 tr AB) / (d (d+2))``
    for the symmetric matrices ``A_j`` of II, so no Monte Carlo is involved.

    Parameters
    ----------
    manifold : tanbias.theory.manifolds.Submanifold
        Anything with ``d`` and ``second_fundamental_form(u, v)``.

    Returns
    -------
    second : float
        ``E ||II(u,u)||^2``.
    mean : ndarray, shape (D-d,)
        ``E II(u,u) = (tr A_j / d)_j``, in normal-basis coordinates.

    Example
    -------
    >>> class Parabola:          # y = kappa/2 x^2 in R^2: II(u, v) = kappa u v
    ...     d = 1
    ...     def second_fundamental_form(self, u, v):
    ...         return 2.0 * (np.asarray(u) * np.asarray(v))
    >>> second, mean = ii_moments(Parabola())
    >>> float(second), mean.tolist()
    (4.0, [2.0])
    """
    A = _ii_matrices(manifold)
    d = A.shape[1]
    tr = np.trace(A, axis1=1, axis2=2)
    tr2 = np.einsum("jab,jba->j", A, A)
    second = float(np.sum(tr ** 2 + 2.0 * tr2) / (d * (d + 2)))
    return second, tr / d


def predicted_rms_constant(manifold, centring="mu") -> float:
    """Leading constant ``c`` of the RMS ratio ``c t`` for samples at geodesic radius ``t``.

    Our derivation: at radius ``t`` the tangent part has ``||v|| = t + O(t^3)`` and
    the normal part ``n = 1/2 II(u,u) t^2 + O(t^3)``. The RMS ratio does not depend
    on ``delta`` when ``delta`` is independent of ``x`` (constant or Gaussian), so

    * ``centring="mu"``:    ``c = 1/2 sqrt(E ||II(u,u)||^2)``;
    * ``centring="batch"``: ``c = 1/2 sqrt(E ||II(u,u)||^2 - ||E II(u,u)||^2)``
      (the batch mean removes the mean normal offset ``1/2 E[II(u,u)] t^2``).

    The relative error is ``O(t^2)``: the ``t^3`` term of ``n`` is odd in ``u``.

    Parameters
    ----------
    manifold : tanbias.theory.manifolds.Submanifold
    centring : {"mu", "batch"}

    Returns
    -------
    float

    Example
    -------
    >>> class Parabola:
    ...     d = 1
    ...     def second_fundamental_form(self, u, v):
    ...         return 2.0 * (np.asarray(u) * np.asarray(v))
    >>> predicted_rms_constant(Parabola()), predicted_rms_constant(Parabola(), "batch")
    (1.0, 0.0)
    """
    check_choice("centring", centring, _CENTRINGS,
                 hint="Use 'mu' (centroid, the book's choice) or 'batch' (batch mean).")
    second, mean = ii_moments(manifold)
    if centring == "batch":
        second = max(second - float(mean @ mean), 0.0)   # clip rounding below zero
    return 0.5 * math.sqrt(second)


# ----------------------------------------------------------------------------
# scaling experiments on a manifold
# ----------------------------------------------------------------------------

def _deltas(kind, n, m, rng):
    if kind == "constant":
        return np.ones(m) / math.sqrt(m)    # one fixed unit signal shared by all samples
    return rng.standard_normal((n, m))      # independent of x, the Cauchy-Schwarz setting


def ratio_scaling(manifold, ts, n=2000, rng=0, delta="gaussian", centring="mu", m=4):
    """Normal-to-tangent gradient ratios of a linear layer against the radius ``t``.

    For each ``t``, draws ``n`` activations at geodesic radius ``t`` with
    ``manifold.sample_at_radius`` (fresh random numbers per radius, so the fitted
    slope's confidence interval includes Monte Carlo noise), centres them and
    splits the weight gradients with :func:`split_gradient`.

    Parameters
    ----------
    manifold : tanbias.theory.manifolds.Submanifold
    ts : array_like, shape (n_t,)
        Radii in ``(0, patch]``.
    n : int
        Samples per radius.
    rng : numpy.random.Generator or int
    delta : {"gaussian", "constant"}
        Back-propagated signal: i.i.d. ``N(0, I_m)`` independent of ``x``, or one
        fixed unit vector for all samples.
    centring : {"mu", "batch"}
        See :func:`centre`.
    m : int
        Output width of the layer.

    Returns
    -------
    pandas.DataFrame
        One row per radius: ``t``, ``per_sample`` (mean of ``||n_i||/||v_i||``),
        ``rms``, ``mean`` (batch-mean form), ``predicted_rms``
        (``predicted_rms_constant * t``), ``delta``, ``centring``.

    Raises
    ------
    ParameterError
        Radii out of range, ``n < 2``, unknown options.

    Example
    -------
    >>> from tanbias.theory.manifolds import Sphere
    >>> df = ratio_scaling(Sphere(d=2, R=1.0, D=5, seed=0), [0.05, 0.1, 0.2], n=500)
    >>> fit_ratio_slope(df, "rms").slope > 0.95
    True
    """
    ts = check_radii(ts, manifold)
    n = check_int("n", n, lo=2, hint="Pass at least 2 samples per radius.")
    m = check_int("m", m, lo=1, hint="Pass the layer's output width.")
    check_choice("delta", delta, _DELTAS, hint="Use 'gaussian' or 'constant'.")
    check_choice("centring", centring, _CENTRINGS, hint="Use 'mu' or 'batch'.")
    rng = check_rng(rng)
    T, N = manifold.tangent_basis, manifold.normal_basis
    c = predicted_rms_constant(manifold, centring)
    rows = []
    for t in ts:
        s = manifold.sample_at_radius(float(t), n, rng)
        x_c = centre(s.y, manifold.mu, centring)
        g = split_gradient(x_c, _deltas(delta, n, m, rng), T, N)
        rows.append(dict(t=float(t), per_sample=float(np.mean(g.per_sample_ratio)),
                         rms=g.rms_ratio, mean=g.mean_ratio, predicted_rms=c * float(t),
                         delta=delta, centring=centring))
    return _frame(rows)


def fit_ratio_slope(df, column="rms", confidence=0.95) -> SlopeFit:
    """Log-log slope (with confidence interval) of a ratio column against ``t``.

    Parameters
    ----------
    df : pandas.DataFrame
        Output of :func:`ratio_scaling` (needs ``t`` and ``column``).
    column : {"rms", "per_sample", "mean"}
    confidence : float

    Returns
    -------
    tanbias.stats.SlopeFit
        The statement predicts slope 1 for ``per_sample`` and ``rms``.

    Raises
    ------
    ParameterError
        Unknown column, fewer than 3 radii, non-positive ratios.
    """
    check_choice("column", column, _FORMS, hint="Use 'rms', 'per_sample' or 'mean'.")
    return loglog_slope(df["t"].to_numpy(), df[column].to_numpy(), confidence)


def fit_rms_constant(df) -> dict:
    """Measured leading constant of the RMS ratio next to the II prediction.

    The ratio is ``c t (1 + b t^2 + ...)``, so ``rms / t`` is fitted by least
    squares as ``c + c b t^2`` and ``c`` is read off at ``t = 0``.

    Parameters
    ----------
    df : pandas.DataFrame
        Output of :func:`ratio_scaling` with at least 2 radii.

    Returns
    -------
    dict
        ``measured`` (c), ``predicted`` (from :func:`predicted_rms_constant`),
        ``rel_error`` (``measured / predicted - 1``, nan if the prediction is 0).
    """
    t = df["t"].to_numpy(dtype=float)
    if t.size < 2:
        raise ParameterError(f"df has {t.size} radii: valid range is [2, inf). "
                             f"Pass more radii to ratio_scaling.")
    y = df["rms"].to_numpy(dtype=float) / t
    X = np.column_stack([np.ones_like(t), t ** 2])
    coef = np.linalg.lstsq(X, y, rcond=None)[0]
    pred = float(df["predicted_rms"].iloc[0] / t[0])
    rel = float(coef[0] / pred - 1.0) if pred > 0 else math.nan
    return dict(measured=float(coef[0]), predicted=pred, rel_error=rel)


# ----------------------------------------------------------------------------
# radial laws: the RMS ratio against eta_g
# ----------------------------------------------------------------------------

def radial_shape_constant(law, d) -> float:
    """Shape constant ``kappa_g = m_{d+3} m_{d-1} / m_{d+1}^2`` of a radial law (>= 1).

    If the sample radius ``r`` has density ``~ g(r) r^(d-1)`` then
    ``E[r^2] = m_{d+1}/m_{d-1} = eta_g`` and ``E[r^4] = m_{d+3}/m_{d-1}``, so
    ``kappa_g = E[r^4] / E[r^2]^2`` (a kurtosis of the radius). It does not change
    when the law is rescaled, so it is a property of the *family*: ``(d+2)/d``
    for a Gaussian.

    Parameters
    ----------
    law : tanbias.theory.radial.RadialLaw
    d : int >= 1
        Intrinsic dimension.

    Returns
    -------
    float

    Raises
    ------
    ParameterError
        ``d`` not a positive integer; the law's own errors for missing moments.

    Example
    -------
    >>> from tanbias.theory.radial import Gaussian
    >>> round(radial_shape_constant(Gaussian(0.3), 2), 12)
    2.0
    """
    d = check_int("d", d, lo=1, hint="Pass the intrinsic dimension d >= 1.")
    m = {k: float(law.moment(k)) for k in (d - 1, d + 1, d + 3)}
    return m[d + 3] * m[d - 1] / m[d + 1] ** 2


def predicted_rms_from_eta(manifold, law, eta_g) -> float:
    """Our prediction of the RMS ratio for samples drawn with a radial law of given ``eta_g``.

    With ``delta`` independent of ``x``, the RMS ratio squared is
    ``E||n||^2 / E||v||^2``. To leading order ``||v|| = r``,
    ``||n|| = 1/2 ||II(u,u)|| r^2`` and ``u`` is uniform and independent of ``r``
    (chapter 3: the directional bias is itself ``O(eta_g)``), so

        rms ~ 1/2 sqrt(E||II(u,u)||^2) sqrt(E[r^4] / E[r^2]) = c sqrt(kappa_g eta_g),

    with ``c`` from :func:`predicted_rms_constant` and ``kappa_g`` from
    :func:`radial_shape_constant`: the ratio scales like ``sqrt(eta_g)``
    (relative error ``O(eta_g)``).

    Parameters
    ----------
    manifold : tanbias.theory.manifolds.Submanifold
    law : tanbias.theory.radial.RadialLaw
        Only its family matters (``kappa_g`` is scale-free).
    eta_g : float > 0

    Returns
    -------
    float

    Example
    -------
    >>> from tanbias.theory.manifolds import Sphere
    >>> from tanbias.theory.radial import Gaussian
    >>> S = Sphere(2, R=1.0, D=4, seed=0)                  # c = 1/2
    >>> round(predicted_rms_from_eta(S, Gaussian(1.0), 0.01), 12)   # 1/2 sqrt(2 * 0.01)
    0.070710678119
    """
    eta_g = check_real("eta_g", eta_g, 0, hint="Pass a positive moment ratio eta_g.")
    c = predicted_rms_constant(manifold)
    return c * math.sqrt(radial_shape_constant(law, manifold.d) * eta_g)


def _sample_eta(manifold, law, eta_g, n, rng):
    eta_g = check_real("eta_g", eta_g, 0, hint="Pass a positive moment ratio eta_g.")
    return manifold.sample(n, law.with_eta(eta_g, manifold.d), rng)


def eta_scaling(manifold, law, etas, n=4000, rng=0, m=4):
    """RMS and per-sample gradient ratios for samples drawn with a radial law of each ``eta_g``.

    For each ``eta_g`` the law is rescaled with ``law.with_eta(eta_g, d)`` and
    ``n`` points are drawn with ``manifold.sample`` (so radii vary from sample
    to sample, unlike :func:`ratio_scaling`); ``delta`` is Gaussian.

    Parameters
    ----------
    manifold : tanbias.theory.manifolds.Submanifold
    law : tanbias.theory.radial.RadialLaw
    etas : array_like, shape (n_eta,)
        Positive moment ratios, small enough for the patch.
    n : int >= 2
    rng : numpy.random.Generator or int
    m : int >= 1

    Returns
    -------
    pandas.DataFrame
        One row per ``eta_g``: ``eta_g``, ``mean_r2`` (measured ``E[r^2]``,
        should equal ``eta_g``), ``rms``, ``per_sample``, ``predicted_rms``
        (:func:`predicted_rms_from_eta`).

    Raises
    ------
    ParameterError
        Non-positive ``eta_g``, a law too wide for the patch, ``n < 2``.

    Example
    -------
    >>> from tanbias.theory.manifolds import Sphere
    >>> from tanbias.theory.radial import Gaussian
    >>> df = eta_scaling(Sphere(2, R=1.0, D=4, seed=0), Gaussian(1.0), [1e-3, 1e-2], n=2000)
    >>> bool(np.allclose(df["rms"] / df["predicted_rms"], 1, atol=0.1))
    True
    """
    etas = check_array("etas", etas, shape=(None,), hint="Pass a 1-D array of eta_g values.")
    n = check_int("n", n, lo=2, hint="Pass at least 2 samples.")
    m = check_int("m", m, lo=1, hint="Pass the layer's output width.")
    rng = check_rng(rng)
    T, N = manifold.tangent_basis, manifold.normal_basis
    rows = []
    for eta in etas:
        s = _sample_eta(manifold, law, eta, n, rng)
        g = split_gradient(s.y - manifold.mu, rng.standard_normal((n, m)), T, N)
        rows.append(dict(eta_g=float(eta), mean_r2=float(np.mean(s.r ** 2)), rms=g.rms_ratio,
                         per_sample=float(np.mean(g.per_sample_ratio)),
                         predicted_rms=predicted_rms_from_eta(manifold, law, eta)))
    return _frame(rows)


def eta_histogram(manifold, law, eta_g, n=4000, rng=0, bins=None):
    """Distribution of per-sample ratios ``||n_i|| / ||v_i||`` for a radial law of given ``eta_g``.

    Parameters
    ----------
    manifold : tanbias.theory.manifolds.Submanifold
    law : tanbias.theory.radial.RadialLaw
    eta_g : float > 0
    n : int >= 2
    rng : numpy.random.Generator or int
    bins : array_like, optional
        Edges in ``log10(ratio)`` (default 61 edges from -4 to 0).

    Returns
    -------
    dict
        ``centers`` (ratio at bin centres), ``density`` (per unit of
        ``log10 ratio``), ``rms``, ``predicted`` (:func:`predicted_rms_from_eta`),
        ``naive`` (``c sqrt(eta_g)``, every sample at the RMS radius), ``eta_g``.
    """
    n = check_int("n", n, lo=2, hint="Pass at least 2 samples.")
    rng = check_rng(rng)
    s = _sample_eta(manifold, law, eta_g, n, rng)
    g = split_gradient(s.y - manifold.mu, rng.standard_normal((n, 4)),
                       manifold.tangent_basis, manifold.normal_basis)
    edges = np.linspace(-4.0, 0.0, 61) if bins is None else np.asarray(bins, dtype=float)
    with np.errstate(divide="ignore"):
        lr = np.log10(g.per_sample_ratio[np.isfinite(g.per_sample_ratio)])
    h, _ = np.histogram(lr, edges, density=True)
    return dict(centers=10 ** (0.5 * (edges[1:] + edges[:-1])), density=h, rms=g.rms_ratio,
                predicted=predicted_rms_from_eta(manifold, law, eta_g),
                naive=predicted_rms_constant(manifold) * math.sqrt(float(eta_g)),
                eta_g=float(eta_g))


# ----------------------------------------------------------------------------
# two token types
# ----------------------------------------------------------------------------

def two_token_types(manifold, t1, t2, n=4000, rng=0, m=4):
    """Side-by-side gradient suppression of a frequent (``t1``) and a rare (``t2``) token.

    Both types live on the same manifold around the same centroid; only their
    concentration radius differs. The suppression of the normal (curvature)
    gradient relative to the token's own tangent gradient is the RMS ratio, so
    the *smaller* ratio is the *more* suppressed type.

    Parameters
    ----------
    manifold : tanbias.theory.manifolds.Submanifold
    t1, t2 : float
        Radii of type 1 (frequent) and type 2 (rare).
    n : int
        Samples per type.
    rng : numpy.random.Generator or int
    m : int
        Output width of the layer.

    Returns
    -------
    pandas.DataFrame
        Rows ``type`` 1 and 2 with ``t``, ``rms`` (measured), ``predicted_rms``,
        and ``relative_to_type2`` (``rms / rms of type 2``, about ``t1/t2``).

    Raises
    ------
    ParameterError
        Radii out of range.

    Example
    -------
    >>> from tanbias.theory.manifolds import Sphere
    >>> df = two_token_types(Sphere(d=2, R=1.0, D=5, seed=0), 0.02, 0.2, n=500)
    >>> bool(df["rms"].iloc[0] < df["rms"].iloc[1])     # the frequent type is more suppressed
    True
    """
    t1 = check_radius(t1, manifold, "t1")
    t2 = check_radius(t2, manifold, "t2")
    df = ratio_scaling(manifold, [t1, t2], n=n, rng=rng, m=m)
    df.insert(0, "type", [1, 2])
    df["relative_to_type2"] = df["rms"] / df["rms"].iloc[1]
    return df[["type", "t", "rms", "predicted_rms", "relative_to_type2"]]


# ----------------------------------------------------------------------------
# where the statement breaks: the batch-mean gradient
# ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Counterexample:
    """Gradient parts on the parabola ``x = (u, u^2)`` with a constant signal.

    Attributes
    ----------
    t : float
        ``|u|`` (every sample has ``u = +t`` or ``-t``).
    n : int
        Samples.
    mean_tangent, mean_normal : float
        Batch-mean gradient parts ``mean_i u_i`` and ``mean_i u_i^2 = t^2``
        (signed, the constant signal is ``delta = 1``).
    mean_tangent_se : float
        Standard error of ``mean_tangent`` (``t / sqrt(n)``): its population
        value is exactly 0.
    rms_tangent, rms_normal : float
        ``sqrt(mean u^2) = t`` and ``sqrt(mean u^4) = t^2``.
    """

    t: float
    n: int
    mean_tangent: float
    mean_tangent_se: float
    mean_normal: float
    rms_tangent: float
    rms_normal: float

    @property
    def rms_ratio(self) -> float:
        """Energy form, ``t`` exactly: the O(t) statement holds."""
        return self.rms_normal / self.rms_tangent

    @property
    def mean_ratio(self) -> float:
        """Mean form, ``|mean_normal / mean_tangent|``: grows like ``sqrt(n) t`` instead of O(t)."""
        return math.inf if self.mean_tangent == 0 else abs(self.mean_normal / self.mean_tangent)


def parabola_counterexample(t, n=10_000, rng=0) -> Counterexample:
    """The parabola counterexample to the mean-gradient form of Proposition 2.3.

    Setting: inputs ``x = (u, u^2)`` on the parabola (tangent coordinate ``u``,
    normal coordinate ``u^2``) with ``u = +t`` or ``-t`` with probability 1/2,
    a linear layer with one output, and a constant back-propagated signal
    ``delta = 1``. The weight gradient of one sample is ``(u, u^2)``.

    * Batch mean: the tangent part ``E[u] = 0`` while the normal part
      ``E[u^2] = t^2 > 0``. The ratio normal/tangent of the *mean* gradient is
      infinite at the population level (``~ sqrt(n) t`` in a sample), not O(t).
    * Energy (RMS): ``sqrt(E[u^4]) / sqrt(E[u^2]) = t^2 / t = t``: O(t).

    **Corrected proposition** (our derivation). Let ``x_c = v + n`` with
    ``||v|| >= a t`` and ``||n|| <= b t^2`` for every sample, and ``delta`` any
    back-propagated signal (possibly dependent on ``x``). Then for the
    per-sample weight gradients ``G_i = delta_i x_i^T``

        sqrt(sum_i ||G_i P_N||_F^2) / sqrt(sum_i ||G_i P_T||_F^2) <= (b / a) t,

    because ``||G_i P_N|| / ||G_i P_T|| = ||n_i|| / ||v_i|| <= (b/a) t`` for each
    ``i``: the energy (RMS) form holds. The mean-gradient form
    ``||E[G] P_N|| / ||E[G] P_T||`` does not: Cauchy-Schwarz only gives the
    *upper* bounds ``||E[G] P|| <= sqrt(E||delta||^2) sqrt(E||P x||^2)`` on the
    numerator and on the denominator, and a ratio of two upper bounds bounds
    nothing; the tangent mean can cancel while the normal mean cannot, because
    ``II(u, u)`` is even in ``u``.

    Parameters
    ----------
    t : float in (0, inf)
    n : int >= 2
    rng : numpy.random.Generator or int

    Returns
    -------
    Counterexample

    Raises
    ------
    ParameterError
        ``t <= 0``, ``n < 2``.

    Example
    -------
    >>> c = parabola_counterexample(0.1, n=10_000, rng=0)
    >>> round(c.rms_ratio, 12), round(c.mean_normal, 12)
    (0.1, 0.01)
    >>> abs(c.mean_tangent) < 4 * c.mean_tangent_se
    True
    """
    t = check_radius(t)
    n = check_int("n", n, lo=2, hint="Pass at least 2 samples.")
    rng = check_rng(rng)
    u = t * rng.choice([-1.0, 1.0], size=n)
    return Counterexample(
        t=t, n=n,
        mean_tangent=float(np.mean(u)), mean_tangent_se=t / math.sqrt(n),
        mean_normal=float(np.mean(u ** 2)),
        rms_tangent=float(np.sqrt(np.mean(u ** 2))),
        rms_normal=float(np.sqrt(np.mean(u ** 4))))


def counterexample_batch_scaling(t, ns, reps=101, rng=0):
    """Median batch-mean ratio on the parabola against the batch size ``n``.

    On the parabola of :func:`parabola_counterexample`, ``|mean u| ~ t |Z| / sqrt(n)``
    while ``mean u^2 = t^2``, so the batch-mean ratio is ``sqrt(n) t / |Z|``: it
    has no limit as the batch grows (slope 1/2 against ``n`` in log-log), whereas
    an ``O(t)`` ratio would not depend on ``n``. The median over ``reps`` batches
    is ``sqrt(n) t / 0.674``.

    Parameters
    ----------
    t : float > 0
    ns : array_like of int, shape (k,)
        Batch sizes, each >= 2.
    reps : int >= 1
        Batches per size.
    rng : numpy.random.Generator or int

    Returns
    -------
    pandas.DataFrame
        ``n``, ``median_mean_ratio``, ``rms_ratio`` (exactly ``t``).

    Example
    -------
    >>> df = counterexample_batch_scaling(0.1, [100, 10_000], reps=51)
    >>> bool(df["median_mean_ratio"].iloc[1] > 5 * df["median_mean_ratio"].iloc[0])
    True
    """
    t = check_radius(t)
    ns = [check_int("ns", v, lo=2, hint="Pass batch sizes >= 2.") for v in np.atleast_1d(ns)]
    reps = check_int("reps", reps, lo=1, hint="Pass a positive number of batches.")
    rng = check_rng(rng)
    rows = []
    for n in ns:
        # the sum of n random signs is 2 * Binomial(n, 1/2) - n: no need to draw each sign
        s = 2.0 * rng.binomial(n, 0.5, size=reps) - n
        mean_u = t * s / n
        with np.errstate(divide="ignore"):
            ratio = np.where(mean_u == 0, np.inf, t ** 2 / np.abs(mean_u))
        rows.append(dict(n=int(n), median_mean_ratio=float(np.median(ratio)), rms_ratio=t))
    return _frame(rows)


def affine_signal_scaling(manifold, ts, n=20_000, rng=0, m=4):
    """Batch-mean vs RMS ratio when the back-propagated signal depends affinely on the input.

    Signal ``delta_i = a + J x_i`` (``a`` a fixed unit vector, ``J`` a fixed
    Gaussian ``(m, D)`` matrix, ``x_i`` centred): the generic first-order model
    of a signal that has a mean over the token's samples and varies with the
    sample. Our derivation of the population batch-mean gradient, to leading
    order in ``t``:

    * tangent part ``E[delta v^T] = J E[x_c v^T] = (t^2 / d) J T`` (``E v = 0``
      at order ``t``),
    * normal part ``E[delta n^T] = a E[n]^T + O(t^3) = 1/2 t^2 a E[II(u,u)]^T``,

    so the batch-mean ratio tends to the constant
    ``d ||E II(u,u)|| / (2 ||J T||_F)``: order 1, not order ``t``. The RMS
    ratio stays ``c t``.

    Parameters
    ----------
    manifold : tanbias.theory.manifolds.Submanifold
    ts : array_like, shape (n_t,)
        Radii (keep ``n >> 1 / t^2`` so that sampling noise in the tangent mean,
        about ``t / sqrt(n)``, stays below its ``t^2`` value).
    n : int
    rng : numpy.random.Generator or int
    m : int

    Returns
    -------
    pandas.DataFrame
        ``t``, ``rms``, ``mean``, ``predicted_rms`` (``c t``), ``predicted_mean``
        (the constant above).

    Example
    -------
    >>> from tanbias.theory.manifolds import Cylinder
    >>> df = affine_signal_scaling(Cylinder(R=1.0, D=3, seed=0), [0.05, 0.2], n=20_000)
    >>> bool(np.allclose(df["mean"], df["predicted_mean"], rtol=0.2))
    True
    """
    ts = check_radii(ts, manifold)
    n = check_int("n", n, lo=2, hint="Pass at least 2 samples.")
    m = check_int("m", m, lo=1, hint="Pass the layer's output width.")
    rng = check_rng(rng)
    T, N = manifold.tangent_basis, manifold.normal_basis
    a = rng.standard_normal(m)
    a /= np.linalg.norm(a)
    J = rng.standard_normal((m, manifold.D))
    _, mean_ii = ii_moments(manifold)
    pred_mean = manifold.d * float(np.linalg.norm(mean_ii)) / (2.0 * np.linalg.norm(J @ T))
    c = predicted_rms_constant(manifold)
    rows = []
    for t in ts:
        s = manifold.sample_at_radius(float(t), n, rng)
        x_c = s.y - manifold.mu
        g = split_gradient(x_c, a + x_c @ J.T, T, N)
        rows.append(dict(t=float(t), rms=g.rms_ratio, mean=g.mean_ratio,
                         predicted_rms=c * float(t), predicted_mean=pred_mean))
    return _frame(rows)


# ----------------------------------------------------------------------------
# per-sample gradient clouds (the data of chapter 4's interactive)
# ----------------------------------------------------------------------------

def _display_normal(manifold):
    """Unit normal direction (normal coords) to show: mean curvature, else top II direction."""
    second, mean = ii_moments(manifold)
    if float(np.linalg.norm(mean)) > 1e-12:
        return mean / np.linalg.norm(mean)
    A = _ii_matrices(manifold)
    d = A.shape[1]
    # E[II(u,u) II(u,u)^T] from the same fourth-moment identity as ii_moments
    tr = np.trace(A, axis1=1, axis2=2)
    C = (np.outer(tr, tr) + 2.0 * np.einsum("iab,jba->ij", A, A)) / (d * (d + 2))
    return np.linalg.eigh(C)[1][:, -1]


def gradient_cloud(manifold, t, n=2000, delta="gaussian", rng=0, n_show=300):
    """Per-sample weight gradients of a one-output linear layer, in tangent/normal coordinates.

    With one output the gradient of sample ``i`` is the vector ``delta_i x_i``
    (``x_i`` centred at ``mu``). It is shown along two directions: the first
    tangent basis vector and the unit normal of the mean curvature
    ``E II(u,u)`` (or, if that vanishes, the normal direction carrying most
    of ``II``). Both coordinates are divided by ``t``, so the tangent spread
    stays of order 1 while the normal spread is of order ``c t``.

    Parameters
    ----------
    manifold : tanbias.theory.manifolds.Submanifold
    t : float
        Geodesic radius of the samples.
    n : int >= 2
        Samples used for the ratios.
    delta : {"gaussian", "constant"}
        Back-propagated signal: i.i.d. ``N(0, 1)`` or the constant 1.
    rng : numpy.random.Generator or int
    n_show : int >= 1
        Points returned for display (the first ``n_show`` samples).

    Returns
    -------
    dict
        ``tangent``, ``normal`` (arrays (n_show,), coordinates / t), ``mean``
        ((2,), the batch-mean gradient in the same coordinates), ``rms``,
        ``mean_ratio`` (over all ``n`` samples and all directions),
        ``predicted`` (``c t``), ``t``, ``delta``.

    Raises
    ------
    ParameterError
        ``t`` out of range, unknown ``delta``.

    Example
    -------
    >>> from tanbias.theory.manifolds import Cylinder
    >>> c = gradient_cloud(Cylinder(R=1.0, D=3, seed=0), 0.1, n=1000, delta="constant")
    >>> round(c["rms"] / c["predicted"], 1), bool(c["mean_ratio"] > 10 * c["rms"])
    (1.0, True)
    """
    t = check_radius(t, manifold)
    n = check_int("n", n, lo=2, hint="Pass at least 2 samples.")
    n_show = check_int("n_show", n_show, lo=1, hint="Pass a positive number of points.")
    check_choice("delta", delta, _DELTAS, hint="Use 'gaussian' or 'constant'.")
    rng = check_rng(rng)
    s = manifold.sample_at_radius(t, n, rng)
    x_c = s.y - manifold.mu
    dl = np.ones(n) if delta == "constant" else rng.standard_normal(n)
    T, N = manifold.tangent_basis, manifold.normal_basis
    g = split_gradient(x_c, dl[:, None], T, N)
    e_t = T[:, 0]
    e_n = N @ _display_normal(manifold)
    gt = dl * (x_c @ e_t) / t
    gn = dl * (x_c @ e_n) / t
    return dict(tangent=gt[:n_show], normal=gn[:n_show],
                mean=np.array([gt.mean(), gn.mean()]), rms=g.rms_ratio, mean_ratio=g.mean_ratio,
                predicted=predicted_rms_constant(manifold) * t, t=t, delta=delta)
