"""A Zipf vocabulary: frequency -> concentration radius -> eta_g (chapters 2, 8).

The hypothesis ties token frequency to concentration: frequent tokens are
sampled tightly around their centroid, rare ones diffusely. This module makes
that a model with three knobs:

* frequencies ``f_i ~ i^(-s)`` (Zipf, rank ``i = 1..n_tokens``);
* concentration radius ``t_i = t_max (f_i / f_min)^(-alpha)``: the rarest
  token has radius ``t_max``, frequent tokens smaller ones;
* each token's radial law is a base family rescaled to length scale ``t_i``,
  so its moment ratio is ``eta_g(d) = (t_i / scale)^2 * base.eta_g(d)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tanbias._checks import check_choice, check_instance, check_int, check_real, check_rng
from tanbias.errors import ParameterError
from tanbias.theory.manifolds import Samples, Submanifold
from tanbias.theory.radial import Gaussian, RadialLaw

__all__ = ["ZipfVocabulary", "Occurrences", "bucket", "occurrence_radii", "zipf_data",
           "bucket_second_moments", "concentration"]


@dataclass
class Occurrences:
    """Sampled token occurrences.

    Attributes
    ----------
    token : ndarray of int, shape (n,)
        Token id (0 = most frequent) of each occurrence.
    samples : Samples
        The points, in the order of ``token`` (fields ``y, r, u, chord, ...``).
    """

    token: np.ndarray
    samples: Samples

    def __len__(self) -> int:
        return int(self.token.shape[0])


class ZipfVocabulary:
    """Zipf frequencies with frequency-dependent concentration radii.

    Parameters
    ----------
    n_tokens : int >= 1
    s : float > 0
        Zipf exponent.
    t_max : float > 0
        Radius of the rarest token.
    alpha : float >= 0
        How strongly frequency shrinks the radius (0: all radii equal).
    law : RadialLaw
        Base family; token ``i`` uses ``law.scaled(t_i / law.scale)``
        (default ``Gaussian(1.0)``, so ``t_i`` is the token's sigma).

    Attributes
    ----------
    frequencies : ndarray (n_tokens,)
        Normalised, decreasing.
    t : ndarray (n_tokens,)
        Concentration radii, increasing.

    Example
    -------
    >>> V = ZipfVocabulary(100, s=1.0, t_max=0.5, alpha=0.5)
    >>> round(float(V.t[-1]), 6), round(float(V.t[0]), 6)      # 0.5 * 100^(-1/2)
    (0.5, 0.05)
    >>> bool(np.all(np.diff(V.eta_g(2)) > 0))                  # rarer -> larger eta_g
    True
    """

    def __init__(self, n_tokens, s=1.0, t_max=1.0, alpha=0.5, law=None) -> None:
        self.n_tokens = check_int("n_tokens", n_tokens, lo=1, hint="Pass a vocabulary size >= 1.")
        self.s = check_real("s", s, lo=0, hint="Pass a positive Zipf exponent (1 is classic).")
        self.t_max = check_real("t_max", t_max, lo=0, hint="Pass a positive radius.")
        self.alpha = check_real("alpha", alpha, lo=0, lo_open=False,
                                hint="Pass a non-negative exponent.")
        self.base_law = Gaussian(1.0) if law is None else check_instance(
            "law", law, RadialLaw, hint="Pass e.g. tanbias.theory.radial.Laplace(1.0).")
        rank = np.arange(1, self.n_tokens + 1, dtype=np.float64)
        f = rank ** (-self.s)
        self.frequencies = f / f.sum()
        self.t = self.t_max * (self.frequencies / self.frequencies[-1]) ** (-self.alpha)

    def __repr__(self) -> str:
        return (f"ZipfVocabulary(n_tokens={self.n_tokens}, s={self.s:g}, t_max={self.t_max:g}, "
                f"alpha={self.alpha:g}, law={self.base_law!r})")

    def _check_token(self, i) -> int:
        return check_int("i", i, lo=0, hi=self.n_tokens - 1, hint="Pass a token id (0 = most frequent).")

    def law(self, i) -> RadialLaw:
        """Radial law of token ``i`` (length scale ``t_i``)."""
        i = self._check_token(i)
        return self.base_law.scaled(self.t[i] / self.base_law.scale)

    def eta_g(self, d) -> np.ndarray:
        """Moment ratio ``eta_g(d)`` of every token, shape (n_tokens,)."""
        d = check_int("d", d, lo=1, hint="Pass the intrinsic dimension d >= 1.")
        return (self.t / self.base_law.scale) ** 2 * self.base_law.eta_g(d)

    def sample_tokens(self, n, rng) -> np.ndarray:
        """``n`` token ids drawn by frequency, shape (n,)."""
        n = check_int("n", n, lo=1, hint="Pass a whole number of occurrences n >= 1.")
        rng = check_rng(rng)
        return rng.choice(self.n_tokens, size=n, p=self.frequencies)

    def sample_occurrences(self, n, manifold, rng) -> Occurrences:
        """Occurrences: token ids by frequency, then a point around that token's centroid.

        Parameters
        ----------
        n : int >= 1
        manifold : Submanifold, sequence of Submanifold, or callable
            One manifold shared by all tokens (centroid ``manifold.mu``), one
            per token, or ``manifold(i) -> Submanifold``.
        rng : numpy.random.Generator or int seed

        Returns
        -------
        Occurrences
            Sorted by token id.

        Example
        -------
        >>> from tanbias.theory.manifolds import Sphere
        >>> V = ZipfVocabulary(20, t_max=0.3, alpha=0.5)
        >>> occ = V.sample_occurrences(500, Sphere(2, D=3), np.random.default_rng(0))
        >>> len(occ), occ.samples.y.shape
        (500, (500, 3))
        """
        rng = check_rng(rng)
        tokens = np.sort(self.sample_tokens(n, rng))
        if isinstance(manifold, Submanifold):
            get = lambda i: manifold  # noqa: E731
        elif callable(manifold):
            get = manifold
        elif isinstance(manifold, (list, tuple)) and len(manifold) == self.n_tokens:
            get = manifold.__getitem__
        else:
            raise ParameterError(
                f"manifold={manifold!r:.60} is not allowed: valid range is a Submanifold, a "
                f"sequence of {self.n_tokens} Submanifolds, or a callable i -> Submanifold.")
        parts = []
        ids, counts = np.unique(tokens, return_counts=True)
        for i, c in zip(ids, counts):
            M = check_instance("manifold(i)", get(int(i)), Submanifold)
            parts.append(M.sample(int(c), self.law(int(i)), rng))
        fields = {k: np.concatenate([getattr(p, k) for p in parts])
                  for k in ("y", "r", "u", "chord", "tangent", "normal")}
        return Occurrences(tokens, Samples(**fields))

    def bucket(self, n_buckets=4, by="tokens") -> np.ndarray:
        """Frequency bucket of every token (0 = most frequent); see :func:`bucket`."""
        return bucket(self.frequencies, n_buckets, by)


def bucket(frequencies, n_buckets=4, by="tokens") -> np.ndarray:
    """Split tokens into frequency buckets by quantiles (0 = most frequent).

    Parameters
    ----------
    frequencies : array_like, shape (n,), positive
    n_buckets : int >= 1
    by : {"tokens", "occurrences"}
        ``"tokens"``: equal numbers of token types per bucket; ``"occurrences"``:
        equal shares of total frequency mass.

    Returns
    -------
    ndarray of int, shape (n,)

    Example
    -------
    >>> bucket([0.5, 0.2, 0.1, 0.1, 0.05, 0.05], n_buckets=2).tolist()
    [0, 0, 0, 1, 1, 1]
    >>> bucket([0.5, 0.2, 0.1, 0.1, 0.05, 0.05], n_buckets=2, by="occurrences").tolist()
    [0, 1, 1, 1, 1, 1]
    """
    f = np.asarray(frequencies, dtype=np.float64)
    if f.ndim != 1 or f.size == 0 or not np.all(np.isfinite(f)) or np.any(f <= 0):
        raise ParameterError(
            f"frequencies has shape {f.shape} or non-positive entries: valid range is a 1-D "
            f"array of positive numbers. Pass token counts or frequencies.")
    n_buckets = check_int("n_buckets", n_buckets, lo=1, hi=f.size,
                          hint="Pass at most one bucket per token.")
    check_choice("by", by, ("tokens", "occurrences"))
    order = np.argsort(-f, kind="stable")
    out = np.empty(f.size, dtype=np.int64)
    if by == "tokens":
        out[order] = (np.arange(f.size) * n_buckets) // f.size
    else:
        cum = np.cumsum(f[order]) / f.sum()
        prev = np.concatenate([[0.0], cum[:-1]])          # mass strictly before each token
        out[order] = np.minimum((prev * n_buckets).astype(np.int64), n_buckets - 1)
    return out


# ------------------------------------------------------------------ chapter 2: flat radii
def occurrence_radii(vocab, n, d, rng) -> tuple[np.ndarray, np.ndarray]:
    """Token ids and radii ``||y - mu||`` of ``n`` occurrences on a flat ``d``-space.

    Vectorised and exact: token ``i``'s law is the base law scaled by
    ``t_i / scale``, so its radius is ``t_i / scale`` times a base radius.

    Parameters
    ----------
    vocab : ZipfVocabulary
    n : int >= 1
    d : int >= 1
    rng : numpy.random.Generator or int seed

    Returns
    -------
    (tokens, radii) : ndarray of int (n,), ndarray (n,)

    Example
    -------
    >>> V = ZipfVocabulary(50, t_max=0.5, alpha=0.5)
    >>> tok, r = occurrence_radii(V, 200_000, 2, np.random.default_rng(0))
    >>> i = tok == 0
    >>> bool(abs(np.mean(r[i] ** 2) / V.eta_g(2)[0] - 1) < 0.02)
    True
    """
    vocab = check_instance("vocab", vocab, ZipfVocabulary, hint="Pass a ZipfVocabulary.")
    rng = check_rng(rng)
    tokens = vocab.sample_tokens(n, rng)
    base = vocab.base_law.sample_radius(tokens.size, d, rng)
    return tokens, base * vocab.t[tokens] / vocab.base_law.scale


def zipf_data(vocab, d=2, n=800, rng=0) -> dict:
    """Numbers of the Zipf figure: per-token ``eta_g`` and sampled occurrence distances.

    Returns
    -------
    dict
        ``frequencies``, ``eta_g`` (at about 100 log-spaced ranks); ``occ_frequency``, ``occ_distance``
        (n,); ``spearman`` (rank correlation of frequency and distance over the
        occurrences); ``mean_eta`` (the occurrence-weighted mean ``sum_i f_i eta_{g,i}``: the
        mean squared radius of what a model sees, pooled over the vocabulary); ``top_share``
        (share of the occurrences held by the most frequent 1 % of the tokens, at least one);
        ``s``, ``alpha``, ``t_max``.

    Example
    -------
    >>> z = zipf_data(ZipfVocabulary(200, t_max=0.3, alpha=0.5), n=3000)
    >>> bool(z["spearman"] < -0.2)
    True
    >>> flat = zipf_data(ZipfVocabulary(200, s=0.5, t_max=0.3, alpha=0.5), n=10)
    >>> bool(flat["top_share"] < z["top_share"]), bool(flat["mean_eta"] > z["mean_eta"])
    (True, True)
    """
    from scipy import stats as _st

    vocab = check_instance("vocab", vocab, ZipfVocabulary, hint="Pass a ZipfVocabulary.")
    tokens, r = occurrence_radii(vocab, n, d, rng)
    f = vocab.frequencies[tokens]
    rho = float(_st.spearmanr(f, r).statistic)
    eta = vocab.eta_g(d)
    top = max(1, vocab.n_tokens // 100)
    # the per-token curves are smooth: ~100 log-spaced ranks draw them
    keep = np.unique(np.geomspace(1, vocab.n_tokens, 100).astype(int)) - 1
    return dict(frequencies=vocab.frequencies[keep], eta_g=eta[keep], occ_frequency=f,
                occ_distance=r, spearman=rho, mean_eta=float(vocab.frequencies @ eta),
                top_share=float(vocab.frequencies[:top].sum()), s=vocab.s, alpha=vocab.alpha,
                t_max=vocab.t_max)


def bucket_second_moments(vocab, occ, d, n_buckets=4, by="occurrences", predict=None) -> dict:
    """Mean squared distance ``r^2`` of the occurrences in each frequency bucket, with its
    standard error and its prediction.

    Parameters
    ----------
    vocab : ZipfVocabulary
    occ : Occurrences
        From ``vocab.sample_occurrences``.
    d : int >= 1
        Intrinsic dimension of the manifold (for each token's ``eta_g(d)``).
    n_buckets : int
    by : {"tokens", "occurrences"}
        See :func:`bucket`.
    predict : callable, optional
        Maps each occurrence's ``eta_g`` to its predicted ``E[r^2]`` (default: ``eta_g``
        itself, the flat-space value; on a curved manifold add its correction).

    Returns
    -------
    dict
        Arrays of length ``n_buckets`` (0 = most frequent): ``count``, ``measured``
        (mean ``r^2``), ``stderr``, ``predicted`` (mean of ``predict(eta_g)``).

    Example
    -------
    >>> from tanbias.theory.manifolds import Sphere
    >>> V = ZipfVocabulary(100, t_max=0.2, alpha=0.5)
    >>> occ = V.sample_occurrences(5000, Sphere(2, R=1.0, D=3), 0)
    >>> b = bucket_second_moments(V, occ, 2, predict=lambda eta: eta * (1 + eta / 6))
    >>> int(b["count"].sum()), bool(b["measured"][0] < b["measured"][-1])
    (5000, True)
    """
    vocab = check_instance("vocab", vocab, ZipfVocabulary, hint="Pass a ZipfVocabulary.")
    occ = check_instance("occ", occ, Occurrences, hint="Pass vocab.sample_occurrences(...).")
    eta_tok = vocab.eta_g(d)
    buckets = vocab.bucket(n_buckets, by=by)[occ.token]
    r2 = occ.samples.r ** 2
    out = {key: [] for key in ("count", "measured", "stderr", "predicted")}
    for b in range(n_buckets):
        sel = buckets == b
        eta_occ = eta_tok[occ.token[sel]]
        out["count"].append(int(sel.sum()))
        out["measured"].append(r2[sel].mean())
        out["stderr"].append(r2[sel].std(ddof=1) / np.sqrt(sel.sum()))
        out["predicted"].append(np.mean(eta_occ if predict is None else predict(eta_occ)))
    return {key: np.asarray(v) for key, v in out.items()}



def concentration(counts, top: int = 100) -> dict:
    """How concentrated a token stream's frequencies are (chapters 8 and 10).

    Parameters
    ----------
    counts : array-like of non-negative numbers
        Occurrences (or expected frequencies) of each type; zeros are types not seen.
    top : int >= 1
        The head whose share is reported.

    Returns
    -------
    dict
        * ``collision`` — the collision probability ``sum_w p_w^2``: the chance that
          two occurrences drawn at random are the same type. The dose experiment's
          measure of concentration: it is dominated by the head, and it is ``1/V``
          for ``V`` equally frequent types.
        * ``effective_types`` — ``1 / collision`` (the Hill number of order 2);
        * ``effective_vocab`` — ``exp`` of the entropy (order 1), in types;
        * ``top_share`` — the share of occurrences of the ``top`` most frequent types;
        * ``types_for_half`` — the fewest types that cover half the occurrences;
        * ``types_seen`` — types with a non-zero count.

    Raises
    ------
    ParameterError
        A negative or non-finite count, or no occurrence at all.

    Example
    -------
    >>> c = concentration([10, 10, 10, 10])
    >>> c["collision"], c["effective_types"], round(c["effective_vocab"], 6), c["top_share"]
    (0.25, 4.0, 4.0, 1.0)
    >>> concentration([90, 5, 5], top=1)["top_share"]
    0.9
    """
    c = np.asarray(counts, dtype=np.float64).ravel()
    if c.size == 0 or not np.all(np.isfinite(c)) or np.any(c < 0) or c.sum() <= 0:
        raise ParameterError("counts is out of range: valid values are finite non-negative counts with "
                             "at least one occurrence. Pass the occurrences of each type.")
    top = check_int("top", top, lo=1)
    c = np.sort(c[c > 0])[::-1]
    p = c / c.sum()
    collision = float((p ** 2).sum())
    return {"collision": collision, "effective_types": 1.0 / collision,
            "effective_vocab": float(np.exp(-(p * np.log(p)).sum())), "top_share": float(p[:top].sum()),
            "types_for_half": int(np.searchsorted(np.cumsum(p), 0.5) + 1), "types_seen": int(len(c))}
