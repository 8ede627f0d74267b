"""Anisotropy read several ways, one per account of where it comes from (the rivals chapter, chapter 9's tool).

A mean cosine near 1 says that a layer's vectors share a direction. Several
accounts predict that number without any tangent bias, and each names a
correction that should remove it if it is right:

* **raw** (:func:`mean_cosine`): the mean cosine of all pairs of distinct rows, the
  uncentred quantity of Ethayarajh (2019) that the lab's chapters read;
* **common drift** (Biś et al. 2021): the vectors share a shifted mean. The
  **centred** mean cosine subtracts the layer's mean vector first, and the **mean
  share** ``||mean||^2 / mean ||x||^2`` says how much of the squared norm that mean
  carries (0 for a centred cloud, 1 for identical rows);
* **rogue dimensions** (Timkey & van Schijndel 2021): one to three coordinates
  dominate the cosine. The **standardised** mean cosine centres each coordinate and
  divides it by its standard deviation over positions, and the **top-coordinate
  share** is the share of the total variance held by the ``top`` (3) coordinates
  with the largest variance (``top / D`` for an isotropic cloud);
* **measurement** (Ethayarajh 2019; Yokoi et al. 2024): an occurrence-weighted mean
  moves with the probe text's frequencies. The **type-balanced** mean cosine weights
  each row by ``1 / count`` of its type, so that every type counts equally.

Every mean cosine here is *exact* over all ``n (n - 1)`` ordered pairs of distinct
rows, from the identity ``sum_{i != j} u_i . u_j = ||sum_i u_i||^2 - sum_i ||u_i||^2``
for unit rows ``u_i``, in ``O(n D)``: no pair is sampled, so two readings of one
cloud differ only by what they correct. The lab's older ``mean_cosine`` column
(:func:`tanbias.theory.token_clouds.anisotropy`) estimates the same quantity from
20,000 sampled pairs, :func:`pair_contributions`, which lives here beside the exact one
so that the mean cosine has one home; the tests check that the two agree within the
sample's error. The sampled estimate stays because every committed run's
``anisotropy.csv`` holds it: an experiment reads one estimator across all its runs.

Every reading is one record of :data:`METRICS` (:class:`Metric`): its name, its function of a
:class:`Cloud` (which computes what several readings share once per cloud), its labels, the note
under its figure, where it is read and the lab's column it is drawn beside. The tables the package
reads derive from the records: the lab's runs read :func:`readings` (``rivals.csv``,
:data:`READINGS`); the measurement command (``python -m tanbias measure``) reads
:func:`measure_readings` (:data:`MEASURE_READINGS`), which leaves the centred mean cosine out (it
is near 0 by construction: a centred cloud's rows sum to 0) and adds the **cosine top share**,
the part of the raw mean cosine that its ``top`` coordinates carry (:func:`cosine_contributions`,
exact): Timkey & van Schijndel's rogue dimensions read off the cosine itself rather than off the
variance. IsoScore* and the **participation ratio** read the shape of the centred cloud
(:func:`participation_ratio`). :func:`singular_spectrum` reads a model's output matrix.

The output-bottleneck account and the proxy's sharpness are about gradients and
proxies, not clouds: :func:`tanbias.theory.alignment.enrichment_outside` and
:func:`tanbias.theory.alignment.subspace_sharpness`.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Callable

import numpy as np

from tanbias._checks import check_array, check_int
from tanbias.errors import ParameterError
from tanbias.theory.alignment import DEFAULT_ZETA, isoscore_star_cov

__all__ = ["Metric", "Cloud", "METRICS", "metric", "TOP_COORDINATES", "READINGS", "MEASURE_READINGS", "drawn_readings", "LABELS",
           "lab_metrics", "command_metrics", "mean_cosine", "pair_contributions", "coordinate_shares", "readings",
           "cosine_contributions", "cosine_top_share", "participation_ratio", "measure_readings", "singular_spectrum"]

#: how many coordinates the top-coordinate shares read (the rogue-dimension account's "one to three")
TOP_COORDINATES = 3


@dataclass(frozen=True)
class Metric:
    """One reading of a layer's anisotropy: everything the package says and does with it, in one place.

    Attributes
    ----------
    name : str
        Its column in every table that holds it.
    function : callable
        ``function(cloud) -> float`` of a :class:`Cloud`, which computes what several readings share
        once per cloud.
    labels : tuple of str
        ``(title, axis title, short label)``: how a figure names it.
    note : str
        What it corrects for and how to read it: the sentence under its figure in the report.
    lab : int or None
        Its column's place among the readings of every lab run's ``rivals.csv``
        (:func:`readings`); None: the lab's runs do not read it there.
    command : str or None
        How the measurement command (``python -m tanbias measure``) reads it into its
        ``anisotropy.csv``: ``"readings"``, computed by :func:`measure_readings` (its columns
        follow chapter 9's, in :data:`METRICS`' order); ``"chapter 9"``, a column of chapter 9's
        own of the same name (:func:`tanbias.theory.token_clouds.anisotropy`, which every lab run's
        ``anisotropy.csv`` holds too), not computed again; None: the command does not read it.
    reference : str or None
        The column of a lab run's tables it is read from beside a measured model (``rivals.csv``,
        else ``anisotropy.csv``'s content positions); None: no lab run holds it.
    """
    name: str
    function: Callable[["Cloud"], float]
    labels: tuple[str, str, str]
    note: str
    lab: int | None = None
    command: str | None = None
    reference: str | None = None



def _rows(X) -> np.ndarray:
    X = check_array("X", np.asarray(X, dtype=np.float64), shape=(None, None))
    if X.shape[0] < 2:
        raise ParameterError(f"X has {X.shape[0]} rows: valid range is [2, inf). A mean cosine needs "
                             "a pair of rows.")
    if X.shape[1] < 2:
        raise ParameterError(f"X has D={X.shape[1]} columns: valid range is [2, inf).")
    return X


def mean_cosine(X, weights=None) -> float:
    """Exact mean cosine over all pairs of distinct rows, optionally weighted by ``w_i w_j``.

    ``sum_{i != j} w_i w_j cos(x_i, x_j) / sum_{i != j} w_i w_j``, computed as
    ``(||sum_i w_i u_i||^2 - sum_i w_i^2) / ((sum_i w_i)^2 - sum_i w_i^2)`` with
    ``u_i = x_i / ||x_i||``. Rows of norm 0 have no direction and are left out.

    Parameters
    ----------
    X : array (n, D)
    weights : array (n,), optional
        Non-negative row weights (default 1): :func:`readings` passes ``1 / count`` of each
        row's type for the type-balanced reading.

    Returns
    -------
    float in [-1, 1]; NaN when fewer than two rows (of positive weight) have a direction.

    Raises
    ------
    ParameterError
        Bad shapes, fewer than two rows, or negative / non-finite weights.

    Example
    -------
    >>> round(mean_cosine([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), 6)   # pairs: 0, 1/sqrt 2, 1/sqrt 2
    0.471405
    >>> mean_cosine([[1.0, 0.0], [2.0, 0.0], [3.0, 0.0]])
    1.0
    """
    X = _rows(X)
    w = np.ones(len(X)) if weights is None else check_array("weights", np.asarray(weights, float),
                                                            shape=(len(X),))
    if np.any(w < 0):
        raise ParameterError(f"weights has a negative entry ({float(w.min())}): valid range is [0, inf).")
    return _mean_cosine(X, _norms(X), w)


def _norms(X: np.ndarray) -> np.ndarray:
    """Each row's Euclidean norm (one pass, no copy of ``X``)."""
    return np.sqrt(np.einsum("ij,ij->i", X, X))


def _mean_cosine(X: np.ndarray, norms: np.ndarray, w: np.ndarray) -> float:
    """:func:`mean_cosine` of checked rows with their ``norms``: ``sum_i w_i u_i`` is one product
    ``(w / norms) @ X``, so the unit rows ``u_i`` are never formed."""
    keep = (norms > 0) & (w > 0)
    if keep.sum() < 2:
        return float("nan")
    if not keep.all():
        X, norms, w = X[keep], norms[keep], w[keep]
    s = (w / norms) @ X
    w2 = float(w @ w)
    denom = float(w.sum()) ** 2 - w2
    return float(np.clip((float(s @ s) - w2) / denom, -1.0, 1.0))


def pair_contributions(X: np.ndarray, norms: np.ndarray, n_pairs: int, rng: np.random.Generator,
                       chunk: int = 4096) -> np.ndarray:
    """Each dimension's part of the mean cosine over ``n_pairs`` sampled pairs of distinct rows (D,).

    Pair ``k`` is ``(i_k, j_k)`` with ``i_k`` uniform and ``j_k = (i_k + U{1..n-1}) mod n``;
    dimension ``d`` gets ``mean_k x_{i_k d} x_{j_k d} / (||x_{i_k}|| ||x_{j_k}||)``. The parts sum
    to the sampled mean cosine, an unbiased estimate of :func:`mean_cosine` (Timkey & van
    Schijndel 2021 read the parts for rogue dimensions). ``X`` is checked by the caller, its
    ``norms`` are positive, and ``rng`` is consumed in this order so that a seed gives the
    committed runs' values bit for bit.

    Example
    -------
    >>> X = np.random.default_rng(0).normal(size=(500, 4)) + [3.0, 0, 0, 0]
    >>> c = pair_contributions(X, _norms(X), 20000, np.random.default_rng(1))
    >>> int(np.argmax(c)), abs(float(c.sum()) - mean_cosine(X)) < 0.02
    (0, True)
    """
    n, D = X.shape
    i = rng.integers(0, n, size=n_pairs)
    j = (i + rng.integers(1, n, size=n_pairs)) % n
    # each row divided by its norm once, where a pair divided both of its rows again: the same
    # quotients (a division is correctly rounded), fewer of them when n < 2 n_pairs
    U = X / norms[:, None] if n < 2 * n_pairs else None
    contrib = np.zeros(D)
    for s in range(0, n_pairs, chunk):
        a, b = i[s:s + chunk], j[s:s + chunk]
        if U is not None:
            contrib += np.einsum("ij,ij->j", U[a], U[b])
        else:
            contrib += np.einsum("ij,ij->j", X[a] / norms[a, None], X[b] / norms[b, None])
    return contrib / n_pairs


def coordinate_shares(X) -> np.ndarray:
    """Each coordinate's share of the cloud's total variance, largest first (D,).

    Example
    -------
    >>> coordinate_shares([[0.0, 0.0], [2.0, 1.0], [4.0, 2.0]])
    array([0.8, 0.2])
    """
    return _variance_shares(_rows(X).var(axis=0))


def _variance_shares(var: np.ndarray) -> np.ndarray:
    """Each coordinate's share of the summed variances ``var``, largest first; NaN when they sum to 0."""
    total = float(var.sum())
    if total == 0:
        return np.full(len(var), np.nan)
    return np.sort(var / total)[::-1]


class Cloud:
    """One layer's rows, and what several readings of them share, each computed once, when first read.

    The readings of :data:`METRICS` are functions of a cloud: the norms, the mean, the centred rows,
    the coordinates' variances, the covariance's eigenvalues and the cosine's coordinate parts are
    computed at most once per cloud, whatever reads them.

    Parameters
    ----------
    X : array (n, D)
        One layer's vectors at the positions read, ``n >= 2``, ``D >= 2``.
    type_ids : array (n,) of int, optional
        The type (token id) of each row, for the type-balanced reading; without it that reading
        is NaN.
    top : int in [1, D - 1], optional
        Coordinates in the top-coordinate shares (default :data:`TOP_COORDINATES`, at most ``D - 1``).
    spectrum : array (D,), optional
        The eigenvalues of the rows' covariance, or of any multiple of it (the scatter matrix),
        when the caller has them: :attr:`spectrum`'s readings depend on their shape, not their
        scale, and are not computed again.

    Raises
    ------
    ParameterError
        Bad shapes, fewer than two rows, ``type_ids`` of another length, a bad ``top``.

    Example
    -------
    >>> c = Cloud([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], top=1)
    >>> c.n, c.mean.round(3).tolist(), round(c.read(["raw"])["raw"], 6)
    (3, [0.667, 0.667], 0.471405)
    """

    def __init__(self, X, type_ids=None, top: int | None = None, spectrum=None):
        self.X = _rows(X)
        self.n, D = self.X.shape
        top = min(TOP_COORDINATES, D - 1) if top is None else top
        self.top = check_int("top", top, lo=1, hi=D - 1, hint="Pass the number of coordinates, e.g. 3.")
        self.type_ids = None if type_ids is None else check_array("type_ids", np.asarray(type_ids), shape=(self.n,))
        if spectrum is not None:
            self.spectrum = check_array("spectrum", np.asarray(spectrum, np.float64), shape=(D,))

    def read(self, metrics) -> dict:
        """``{name: value}`` of ``metrics`` (records of :data:`METRICS`, or their names), in their order."""
        out = {}
        for m in metrics:
            m = metric(m) if isinstance(m, str) else m
            out[m.name] = float(m.function(self))
        return out

    @cached_property
    def ones(self) -> np.ndarray:
        """Every row's weight in an unweighted mean cosine (n,)."""
        return np.ones(self.n)

    @cached_property
    def norms(self) -> np.ndarray:
        """Each row's Euclidean norm (n,)."""
        return _norms(self.X)

    @cached_property
    def mean(self) -> np.ndarray:
        """The mean vector (D,)."""
        return self.X.mean(axis=0)

    @cached_property
    def centred(self) -> np.ndarray:
        """The rows less their mean (n, D)."""
        return self.X - self.mean

    @cached_property
    def variances(self) -> np.ndarray:
        """Each coordinate's variance over the rows, ``ddof = 0`` (D,)."""
        return np.einsum("ij,ij->j", self.centred, self.centred) / self.n

    @cached_property
    def spectrum(self) -> np.ndarray:
        """The eigenvalues of the rows' covariance (``ddof = 1``), clipped at 0, ascending (D,);
        or those handed over (a multiple of the covariance, in any order)."""
        return np.clip(np.linalg.eigvalsh(np.cov(self.X, rowvar=False)), 0, None)

    @cached_property
    def contributions(self) -> np.ndarray:
        """Each coordinate's exact part of the mean cosine (D,): :func:`cosine_contributions`."""
        return _contributions(self.X, self.norms)

    @cached_property
    def type_weights(self) -> np.ndarray | None:
        """``1 / count`` of each row's type (n,), so that every type weighs as much; None without types."""
        if self.type_ids is None:
            return None
        return 1.0 / self._type_counts[1][self._type_counts[0]]

    @cached_property
    def _type_counts(self) -> tuple[np.ndarray, np.ndarray]:
        _, inverse, counts = np.unique(self.type_ids, return_inverse=True, return_counts=True)
        return inverse, counts

    @property
    def types(self) -> int:
        """The distinct types among the rows (0 without ``type_ids``)."""
        return 0 if self.type_ids is None else int(len(self._type_counts[1]))


def _contributions(X: np.ndarray, norms: np.ndarray) -> np.ndarray:
    keep = norms > 0
    if keep.sum() < 2:
        return np.full(X.shape[1], np.nan)
    U = X[keep] / norms[keep, None]
    n = len(U)
    return (U.sum(axis=0) ** 2 - np.einsum("ij,ij->j", U, U)) / (n * (n - 1))


def _top_of(c: np.ndarray, top: int) -> float:
    total = float(c.sum())
    if not np.isfinite(total) or total == 0:
        return float("nan")
    return float(np.sort(c)[::-1][:top].sum() / total)


def cosine_contributions(X) -> np.ndarray:
    """Each coordinate's exact part of the mean cosine over all pairs of distinct rows (D,).

    ``c_d = ((sum_i u_id)^2 - sum_i u_id^2) / (n (n - 1))`` with ``u_i = x_i / ||x_i||``: the parts
    sum to :func:`mean_cosine` (rows of norm 0 left out). :func:`pair_contributions` estimates
    them from sampled pairs; these are exact, in ``O(n D)``.

    Example
    -------
    >>> X = np.random.default_rng(0).normal(size=(400, 4)) + [3.0, 0, 0, 0]
    >>> c = cosine_contributions(X)
    >>> int(np.argmax(c)), bool(np.isclose(c.sum(), mean_cosine(X)))
    (0, True)
    """
    X = _rows(X)
    return _contributions(X, _norms(X))


def cosine_top_share(X, top: int = TOP_COORDINATES) -> float:
    """The share of the mean cosine that its ``top`` largest coordinate parts carry.

    Timkey & van Schijndel (2021) found one to three coordinates carrying most of a layer's
    cosine: a share near 1 says the anisotropy lives in a few rogue coordinates, a share near
    ``top / D`` that it is spread over all of them. The share is of the signed sum, so it may
    pass 1 when other coordinates pull the cosine down; NaN when the mean cosine is 0.

    Example
    -------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 32))
    >>> rogue = X + 8.0 * (np.arange(32) == 5)       # one rogue coordinate
    >>> spread = X + 1.5                             # the same shift over every coordinate
    >>> round(cosine_top_share(rogue, top=1), 2), round(cosine_top_share(spread, top=1), 2)
    (1.0, 0.03)
    """
    X = _rows(X)
    top = check_int("top", top, lo=1, hi=X.shape[1], hint="Pass the number of coordinates, e.g. 3.")
    return _top_of(cosine_contributions(X), top)


def participation_ratio(X) -> float:
    """The participation ratio ``(sum λ)^2 / sum λ^2`` of the rows' covariance eigenvalues ``λ``.

    An effective number of directions, from 1 (one direction holds all the variance) to ``D``
    (every direction holds as much): it reads the shape of the centred cloud, not its shared
    mean.

    Example
    -------
    >>> rng = np.random.default_rng(0)
    >>> round(participation_ratio(rng.normal(size=(20000, 4))), 1)
    4.0
    >>> round(participation_ratio(rng.normal(size=(20000, 4)) * [10.0, 1, 1, 1]), 2)
    1.06
    """
    return _participation(Cloud(X))


# ------------------------------------------------------------------------ each reading of a cloud
def _raw(c: Cloud) -> float:
    return _mean_cosine(c.X, c.norms, c.ones)


def _centred(c: Cloud) -> float:
    return _mean_cosine(c.centred, _norms(c.centred), c.ones)


def _standardised(c: Cloud) -> float:
    sd = np.sqrt(c.variances)
    live = sd > 0
    if live.sum() < 2:
        return float("nan")
    Z = c.centred[:, live] / sd[live]
    return _mean_cosine(Z, _norms(Z), c.ones)


def _type_balanced(c: Cloud) -> float:
    return float("nan") if c.type_weights is None else _mean_cosine(c.X, c.norms, c.type_weights)


def _mean_share(c: Cloud) -> float:
    sq = float(np.mean(c.norms ** 2))
    return float(c.mean @ c.mean / sq) if sq > 0 else float("nan")


def _top_share(c: Cloud) -> float:
    return float(_variance_shares(c.variances)[:c.top].sum())


def _cosine_top_share(c: Cloud) -> float:
    return _top_of(c.contributions, c.top)


def _isoscore_star(c: Cloud) -> float:
    return isoscore_star_cov(np.cov(c.X, rowvar=False), DEFAULT_ZETA)


def _participation(c: Cloud) -> float:
    lam = c.spectrum
    return float(lam.sum() ** 2 / (lam ** 2).sum())


#: Every reading of a layer's anisotropy, one record each, in the order the report draws them (the
#: mean share after the raw mean cosine: what that cosine mostly measures). Every table of readings
#: below derives from these records; so do the lab's ``rivals.csv`` (:func:`readings`), the command's
#: ``anisotropy.csv`` (:func:`measure_readings`), the report's figures, their notes and the lab's
#: lines drawn beside them. A new reading is one record here, its test, and its chapter's words.
METRICS: tuple[Metric, ...] = (
    Metric("raw", _raw, ("mean cosine of all pairs (raw)", "mean cosine (raw)", "raw"),
           "The quantity of Ethayarajh (2019). It reads high whenever the vectors share a mean.",
           lab=0, command="readings", reference="raw"),
    Metric("mean_share", _mean_share,
           ("share of the squared norm in the mean vector", "mean vector's share of the norm²", "mean share"),
           "The mean vector's share of the squared norm. Where it tracks the raw mean cosine, a shared mean is "
           "most of what that cosine measures.", lab=4, command="readings", reference="mean_share"),
    Metric("cosine_top_share", _cosine_top_share,
           (f"share of the mean cosine in its top {TOP_COORDINATES} coordinates",
            f"top-{TOP_COORDINATES} share of the cosine", f"top-{TOP_COORDINATES} cosine"),
           "The share of the mean cosine held by its three largest coordinates (Timkey and van Schijndel, "
           "2021). Near 1: a few rogue coordinates carry it.", command="readings"),
    Metric("top_share", _top_share,
           (f"variance share of the top {TOP_COORDINATES} coordinates", f"top-{TOP_COORDINATES} variance share",
            f"top-{TOP_COORDINATES} variance"),
           "The three largest coordinates' share of the variance: about 3 / D for an isotropic cloud.",
           lab=5, command="readings", reference="top_share"),
    # chapter 9's column: token_clouds.anisotropy computes it for every run's anisotropy.csv and every
    # table of the command, beside the sampled mean cosine; the command does not compute it again (its
    # function here reads the same covariance, for a cloud read outside a run)
    Metric("isoscore_star", _isoscore_star, ("IsoScore* of the centred cloud (1 = isotropic)", "IsoScore*", "IsoScore*"),
           "IsoScore* of the centred cloud (Rudman and Eickhoff, 2024): 1 for an isotropic cloud, near 0 for one "
           "direction.", command="chapter 9", reference="isoscore_star"),
    Metric("standardised", _standardised,
           ("mean cosine of standardised coordinates", "mean cosine, standardised", "standardised"),
           "The mean cosine once every coordinate is centred and scaled to unit variance.",
           lab=2, command="readings", reference="standardised"),
    Metric("type_balanced", _type_balanced,
           ("mean cosine, every type weighted equally", "mean cosine, types equal", "types equal"),
           "The mean cosine with every token type weighted equally, not every occurrence.",
           lab=3, command="readings", reference="type_balanced"),
    # near 0 by construction (a centred cloud's rows sum to 0): the command leaves it out
    Metric("centered", _centred, ("mean cosine after removing the mean vector", "mean cosine, centred", "centred"),
           "The mean cosine once the mean vector is removed: near 0 by construction.", lab=1),
    # every lab run's anisotropy.csv holds it (tanbias.lab.analysis.tables.anisotropy_rows); the command
    # reads it off the spectrum chapter 9's anisotropy computed (Cloud's spectrum)
    Metric("participation_ratio", _participation,
           ("participation ratio of the centred cloud", "participation ratio (directions)", "participation"),
           "The covariance's effective number of directions, (Σλ)² / Σλ²: D for an isotropic cloud, 1 for one "
           "direction. With IsoScore*, it reads the shape of the centred cloud, not its shared mean.",
           command="readings", reference="participation_ratio"),
)


def metric(name: str) -> Metric:
    """The record of :data:`METRICS` named ``name``.

    Raises
    ------
    ParameterError
        No record has that name.

    Example
    -------
    >>> metric("raw").labels[1]
    'mean cosine (raw)'
    """
    for m in METRICS:
        if m.name == name:
            return m
    raise ParameterError(f"metric={name!r} is out of range: valid range is {[m.name for m in METRICS]}.")


def lab_metrics() -> tuple[Metric, ...]:
    """The records every lab run reads into ``rivals.csv`` (:func:`readings`), in their columns' order."""
    return tuple(sorted((m for m in METRICS if m.lab is not None), key=lambda m: m.lab))


def command_metrics() -> tuple[Metric, ...]:
    """The records the measurement command computes (:func:`measure_readings`), in :data:`METRICS`' order."""
    return tuple(m for m in METRICS if m.command == "readings")


def drawn_readings() -> tuple[str, ...]:
    """The readings the measurement's report draws, one figure each, in its order: the records the
    command reads (its own readings and chapter 9's IsoScore*; not the lab's centred mean cosine).

    Example
    -------
    >>> drawn_readings()[:2], "centered" in drawn_readings()
    (('raw', 'mean_share'), False)
    """
    return tuple(m.name for m in METRICS if m.command)


#: the readings :func:`readings` returns (every lab run's ``rivals.csv``), in their columns' order
READINGS = tuple(m.name for m in lab_metrics())
#: the readings :func:`measure_readings` returns (the measurement command's ``anisotropy.csv``), in order
MEASURE_READINGS = tuple(m.name for m in command_metrics())
#: each reading's names, ``(title, axis title, short label)``
LABELS = {m.name: m.labels for m in METRICS}
# (derived when the module is imported: the package reads the records through metric(),
# lab_metrics() and command_metrics(), so that a record added to METRICS is read everywhere)


def readings(X, type_ids=None, top: int = TOP_COORDINATES) -> dict:
    """The lab's readings of one layer's cloud (:func:`lab_metrics`: :data:`READINGS`), each computed once.

    Parameters
    ----------
    X : array (n, D)
        One layer's vectors at the positions read (the lab: content positions, the first
        position and special tokens left out).
    type_ids : array (n,) of int, optional
        The type (token id) of each row, for the type-balanced reading; without it that
        reading is NaN.
    top : int in [1, D - 1]
        Coordinates in the top-coordinate share.

    Returns
    -------
    dict
        ``raw``, ``centered``, ``standardised``, ``type_balanced`` (mean cosines),
        ``mean_share`` and ``top_share`` (shares in [0, 1]), ``n`` (rows) and ``types``
        (distinct types, 0 without ``type_ids``).

    Raises
    ------
    ParameterError
        Bad shapes, fewer than two rows, ``type_ids`` of another length, a bad ``top``.

    Example
    -------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(3000, 16))
    >>> X[:, 2] += 30.0                                          # a shifted mean
    >>> r = readings(X)
    >>> round(r["raw"], 2), abs(r["centered"]) < 0.01, round(r["mean_share"], 2)
    (0.98, True, 0.98)
    """
    cloud = Cloud(X, type_ids=type_ids, top=top)
    return {**cloud.read(lab_metrics()), "n": int(cloud.n), "types": cloud.types}


def measure_readings(X, type_ids=None, top: int = TOP_COORDINATES, spectrum=None) -> dict:
    """The measurement command's readings of one layer's cloud (:func:`command_metrics`:
    :data:`MEASURE_READINGS`), each computed once.

    The lab's readings without the centred mean cosine (near 0 by construction), with the
    :func:`cosine_top_share` and the :func:`participation_ratio`. Parameters and errors as
    :func:`readings`; ``spectrum`` as :class:`Cloud`'s.

    Example
    -------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(3000, 16))
    >>> X[:, 2] += 30.0                                          # a shifted mean, in one coordinate
    >>> r = measure_readings(X)
    >>> tuple(r) == MEASURE_READINGS, round(r["mean_share"], 2), round(r["cosine_top_share"], 2)
    (True, 0.98, 1.0)
    """
    return Cloud(X, type_ids=type_ids, top=top, spectrum=spectrum).read(command_metrics())


def singular_spectrum(W, chunk: int = 16384) -> np.ndarray:
    """The singular values of a matrix ``W`` (V, D), largest first (min(V, D),).

    Read from the eigenvalues of ``W^T W`` (or ``W W^T``, the smaller), summed in float64 over
    blocks of ``chunk`` rows: a vocabulary of 262,144 rows never needs a float64 copy. A model's
    output matrix (its unembedding) is one: a few large values say its logits move along few
    directions (the softmax-bottleneck reading of anisotropy).

    Example
    -------
    >>> W = np.diag([3.0, 2.0, 1.0])[:, :2]
    >>> singular_spectrum(W).round(6).tolist()
    [3.0, 2.0]
    """
    W = check_array("W", np.asarray(W), shape=(None, None))
    chunk = check_int("chunk", chunk, lo=1, hint="Pass e.g. 16384.")
    if W.shape[0] < W.shape[1]:
        W = W.T
    G = np.zeros((W.shape[1], W.shape[1]))
    for s in range(0, W.shape[0], chunk):
        B = np.asarray(W[s:s + chunk], np.float64)
        G += B.T @ B
    lam = np.clip(np.linalg.eigvalsh(G)[::-1], 0.0, None)
    return np.sqrt(lam)
