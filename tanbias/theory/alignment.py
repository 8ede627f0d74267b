"""The gradient-tangent alignment test: energy share, enrichment, controls, IsoScore* (chapters 7, 8).

The test of Bernas et al. (2026) asks whether ordinary back-propagated
gradients ``G`` (one row per token, ``∂L/∂h`` at a layer's residual stream)
put unusually much of their energy, and of their anisotropy, into a low-rank
*tangent proxy* ``Q_T`` (a ``D x r`` matrix with orthonormal columns built from
activations, e.g. their top-``r`` principal directions).

* **Energy share** ``E(Q) = ||G Q||_F^2 / ||G||_F^2`` (:func:`energy_share`).
  For ``Q`` uniformly random, ``E[E(Q)] = r / D`` exactly, whatever ``G``.
* **Controls**: ``n_controls = 20`` random rank-``r`` subspaces orthogonal to
  ``Q_T`` (:func:`random_controls`). **Enrichment** ``E(Q_T) / mean E(controls)``
  and the rank p-value ``p = (1 + #{controls >= proxy}) / (n_controls + 1)``,
  whose smallest value is ``1/21`` (:func:`enrichment_test`).
* **Variance-calibrated enrichment** (:func:`variance_calibrated_test`): the enrichment
  divided by the same ratio for the activations' variance, ``ψ = [E_G(Q_T)/E_G(C)] /
  [V_X(Q_T)/V_X(C)]``. Gradients whose second moment follows the activations' own
  (``Σ_G ∝ Σ_X``, as a linear map's update follows its inputs' variance) give ``ψ = 1``
  whatever the proxy; gradients concentrated in the proxy beyond its variance give ``ψ > 1``.
* **Anisotropy share**: IsoScore* (:func:`isoscore_star`) of the gradients after
  projecting ``Q`` out, minus IsoScore* of the gradients themselves
  (:func:`delta_isoscore_test`); the paper's claim is that removing ``Q_T``
  raises it more than removing a control.

Why our own IsoScore*: the ``IsoScore`` package (2.0.1) computes the same
formula (the tests check equality given the same shrinkage matrix), but its
``IsoScore_star(points, C0, zeta)`` uses ``C0`` *unscaled*: with the advised
``C0 = I`` and gradients whose variances are ``~1e-8`` the shrinkage target
swamps the data and every score is ``≈ 1``. :func:`isoscore_star` defaults to
the scale-matched target ``C0 = (tr C / D) I`` and runs in float64 numpy.

Also here: per-token local tangent proxies (:func:`local_alignment`), token
concentration radii and their correlation with frequency
(:func:`concentration_radius`, :func:`frequency_radius_correlation`),
frequency buckets (:func:`frequency_buckets`) and synthetic data with a planted
tangent space (:func:`planted_tangent_data`) for checks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tanbias._checks import check_array, check_int, check_real, check_rng
from tanbias.errors import ParameterError

__all__ = [
    "N_CONTROLS", "energy_share", "orthonormal", "pca_basis", "random_subspace",
    "random_controls", "enrichment_test", "enrichment_outside", "variance_calibrated_test",
    "variance_following_gradients", "subspace_sharpness", "project_out",
    "isoscore_star",
    "isoscore_star_cov", "isoscore_star_spectrum", "delta_isoscore_test", "alignment_test", "local_alignment",
    "concentration_radius", "frequency_radius_correlation", "frequency_buckets",
    "PlantedData", "planted_tangent_data",
]

N_CONTROLS = 20
DEFAULT_ZETA = 0.1


def _mat(name, a, D=None):
    a = np.asarray(a, dtype=np.float64)
    return check_array(name, a, shape=(None, D))


def _check_rank(r, D, name="rank"):
    return check_int(name, r, lo=1, hi=D - 1,
                     hint=f"The proxy must be a proper subspace of R^{D}: pass 1 <= {name} <= D-1.")


def _check_basis(Q, D=None, name="Q"):
    Q = check_array(name, np.asarray(Q, dtype=np.float64), shape=(D, None))
    r = Q.shape[1]
    if not 1 <= r < Q.shape[0]:
        raise ParameterError(f"{name}.shape={Q.shape} is out of range: valid range is (D, r) with "
                             f"1 <= r <= D-1. Pass a proper subspace.")
    if not np.allclose(Q.T @ Q, np.eye(r), atol=1e-6):
        raise ParameterError(f"{name} has columns that are not orthonormal: valid range is Q^T Q = I. "
                             "Orthonormalise it first with tanbias.theory.alignment.orthonormal(Q).")
    return Q


def orthonormal(A) -> np.ndarray:
    """Orthonormal basis (D, r) of the column span of ``A`` (QR with sign fixed).

    Example
    -------
    >>> Q = orthonormal(np.array([[1.0, 1.0], [0.0, 1.0], [0.0, 0.0]]))
    >>> np.allclose(Q.T @ Q, np.eye(2))
    True
    """
    A = _mat("A", A)
    Q, R = np.linalg.qr(A)
    s = np.sign(np.diag(R))
    s[s == 0] = 1.0
    return Q * s


def energy_share(G, Q) -> float:
    """``E(Q) = ||G Q||_F^2 / ||G||_F^2``: the share of gradient energy inside span(Q).

    Parameters
    ----------
    G : array (n, D)
        Per-token gradients.
    Q : array (D, r)
        Orthonormal columns.

    Returns
    -------
    float in [0, 1] (0 when ``G`` is zero).

    Example
    -------
    >>> G = np.array([[3.0, 4.0], [0.0, 0.0]])
    >>> energy_share(G, np.array([[1.0], [0.0]]))
    0.36
    """
    G = _mat("G", G)
    Q = _check_basis(Q, G.shape[1])
    total = float(np.einsum("ij,ij->", G, G))
    if total == 0.0:
        return 0.0
    GQ = G @ Q
    return float(np.einsum("ij,ij->", GQ, GQ) / total)


def pca_basis(X, r: int, center: bool = True) -> np.ndarray:
    """Top-``r`` principal directions (D, r) of the rows of ``X`` (the tangent proxy).

    Parameters
    ----------
    X : array (n, D)
        Activations, one row per token.
    r : int
        Rank, ``1 <= r <= D-1``.
    center : bool
        Subtract the mean row first (PCA); False gives the top right singular vectors.

    Example
    -------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(500, 3)) * [10.0, 1.0, 0.1]
    >>> np.round(np.abs(pca_basis(X, 1)[:, 0]), 2)
    array([1., 0., 0.])
    """
    X = _mat("X", X)
    r = _check_rank(r, X.shape[1], "r")
    if center:
        X = X - X.mean(axis=0)
    if X.shape[0] < X.shape[1]:
        # few points (a token's occurrences): thin SVD of the n x D matrix, O(n^2 D)
        _, _, Vt = np.linalg.svd(X, full_matrices=False)
        if Vt.shape[0] >= r:
            return Vt[:r].T.copy()
    # many points: eigen-decomposition of the D x D scatter, cheaper than an SVD of n x D
    w, V = np.linalg.eigh(X.T @ X)
    return V[:, ::-1][:, :r].copy()


def random_subspace(D: int, r: int, rng=0, orthogonal_to=None) -> np.ndarray:
    """A uniformly random rank-``r`` subspace (D, r), optionally orthogonal to ``orthogonal_to``.

    Parameters
    ----------
    D, r : int
    rng : numpy.random.Generator or int, optional
    orthogonal_to : array (D, k), optional
        Orthonormal columns; the subspace is drawn uniformly in their orthogonal
        complement (``r <= D - k``).

    Example
    -------
    >>> Q = random_subspace(10, 3, rng=0)
    >>> Q.shape, bool(np.allclose(Q.T @ Q, np.eye(3)))
    ((10, 3), True)
    """
    D = check_int("D", D, lo=2)
    r = _check_rank(r, D, "r")
    rng = check_rng(rng)
    A = rng.standard_normal((D, r))
    if orthogonal_to is not None:
        P = check_array("orthogonal_to", np.asarray(orthogonal_to, dtype=np.float64), shape=(D, None))
        if r > D - P.shape[1]:
            raise ParameterError(f"r={r} is out of range: valid range is [1, {D - P.shape[1]}] "
                                 f"(D - rank of orthogonal_to). Lower the rank.")
        A = A - P @ (P.T @ A)
    return orthonormal(A)


def random_controls(Q, n_controls: int = N_CONTROLS, rng=0) -> np.ndarray:
    """``n_controls`` random subspaces of the rank of ``Q``, orthogonal to ``Q`` ("normal controls").

    Returns
    -------
    ndarray (n_controls, D, r)

    Example
    -------
    >>> Q = np.eye(6)[:, :2]
    >>> C = random_controls(Q, 5, rng=1)
    >>> C.shape, bool(np.allclose(Q.T @ C[0], 0))
    ((5, 6, 2), True)
    """
    Q = _check_basis(Q)
    n_controls = check_int("n_controls", n_controls, lo=1)
    D, r = Q.shape
    if 2 * r > D:
        raise ParameterError(f"rank={r} is out of range: valid range is [1, {D // 2}] for controls "
                             f"orthogonal to the proxy in R^{D}. Lower the rank.")
    rng = check_rng(rng)
    # uniform in the complement: Gaussian matrices projected off Q, then (batched) QR
    A = rng.standard_normal((n_controls, D, r))
    A = A - np.matmul(Q, np.matmul(Q.T, A))
    C, R = np.linalg.qr(A)
    s = np.sign(np.diagonal(R, axis1=1, axis2=2))
    s[s == 0] = 1.0
    return C * s[:, None, :]


def _control_energies(G, C) -> np.ndarray:
    """``||G C_k||_F^2`` for every control, with one BLAS matmul."""
    k, D, r = C.shape
    GC = G @ C.transpose(1, 0, 2).reshape(D, k * r)
    return np.sum((GC ** 2).reshape(len(G), k, r), axis=(0, 2))


def _p_value(proxy: float, controls: np.ndarray) -> float:
    return float((1 + np.sum(np.asarray(controls) >= proxy)) / (len(controls) + 1))


def enrichment_test(G, Q, controls=None, n_controls: int = N_CONTROLS, rng=0) -> dict:
    """Energy share of the proxy against random orthogonal controls.

    Parameters
    ----------
    G : array (n, D)
    Q : array (D, r)
        Tangent proxy, orthonormal columns.
    controls : array (n_controls, D, r), optional
        Default :func:`random_controls` ``(Q, n_controls, rng)``.

    Returns
    -------
    dict
        ``energy_proxy``, ``energy_controls`` (array), ``energy_control_mean``,
        ``enrichment`` = proxy / control mean, ``p_energy`` = (1 + #controls >= proxy) / (n + 1),
        ``random_share`` = r / D.

    Example
    -------
    >>> d = planted_tangent_data(n=400, D=32, d=4, rng=0)
    >>> res = enrichment_test(d.G, d.tangent_basis, rng=0)
    >>> res["enrichment"] > 5, res["p_energy"] == 1 / 21
    (True, True)
    """
    G = _mat("G", G)
    Q = _check_basis(Q, G.shape[1])
    C = random_controls(Q, n_controls, rng) if controls is None else np.asarray(controls, float)
    total = float(np.einsum("ij,ij->", G, G))
    if total == 0.0:
        raise ParameterError("G=0 is out of range: valid range is gradients with nonzero energy. "
                             "Pass the gradients of a step with a nonzero loss.")
    e_proxy = float(np.sum((G @ Q) ** 2) / total)
    e_ctrl = _control_energies(G, C) / total
    mean = float(e_ctrl.mean())
    return {"energy_proxy": e_proxy, "energy_controls": e_ctrl, "energy_control_mean": mean,
            "enrichment": e_proxy / mean if mean > 0 else float("inf"),
            "p_energy": _p_value(e_proxy, e_ctrl), "random_share": Q.shape[1] / G.shape[1]}


def variance_calibrated_test(X, G, Q, controls=None, n_controls: int = N_CONTROLS, rng=0) -> dict:
    """The enrichment of the gradients in ``Q`` over the enrichment of the activations' variance in it.

    Chapter 7's enrichment ``E_G(Q) / mean E_G(C)`` compares the gradients' energy share in the
    proxy with random controls ``C`` orthogonal to it. A proxy built from the activations' top
    principal directions holds much of their *variance*, and gradients that merely follow the
    variance (second moment ``Σ_G ∝ Σ_X``) are then enriched in it by the same factor. This
    divides it out: with ``V_X(Q) = ||X_c Q||_F^2 / ||X_c||_F^2`` the share of the centred
    activations' variance,

        ``calibrated = [E_G(Q) / mean E_G(C)] / [V_X(Q) / mean V_X(C)]``,

    1 in expectation for variance-following gradients (:func:`variance_following_gradients`),
    above 1 where the gradients concentrate in ``Q`` more than the activations' variance does
    (:func:`planted_tangent_data` with a strong ``gradient_bias``), below 1 where less. It
    does not tell a superlinear law of variance (``Σ_G ∝ Σ_X^b``, b > 1) from tangency.

    Parameters
    ----------
    X : array (n, D)
        The activations at the rows of ``G`` (centred here).
    G : array (n, D)
    Q : array (D, r)
    controls : array (n_controls, D, r), optional
        Default :func:`random_controls` ``(Q, n_controls, rng)``.

    Returns
    -------
    dict
        ``grad_share``, ``grad_share_control`` (mean over controls), ``var_share``,
        ``var_share_control``, ``grad_enrichment``, ``var_enrichment``, ``calibrated``.

    Example
    -------
    >>> d = planted_tangent_data(n=2000, D=32, d=4, normal_scale=0.5, gradient_bias=3.0, rng=0)
    >>> v = variance_calibrated_test(d.X, d.G, d.tangent_basis, rng=0)
    >>> bool(v["calibrated"] > 1.5)
    True
    >>> G = variance_following_gradients(d.X, rng=1)
    >>> bool(0.8 < variance_calibrated_test(d.X, G, d.tangent_basis, rng=0)["calibrated"] < 1.25)
    True
    """
    X = _mat("X", X)
    G = _mat("G", G, X.shape[1])
    if len(X) != len(G):
        raise ParameterError(f"X has {len(X)} rows and G {len(G)}: valid range is one activation row per "
                             "gradient row.")
    Q = _check_basis(Q, G.shape[1])
    C = random_controls(Q, n_controls, rng) if controls is None else np.asarray(controls, float)
    Xc = X - X.mean(axis=0)
    out = {}
    for name, M in (("grad", G), ("var", Xc)):
        total = float(np.einsum("ij,ij->", M, M))
        if total == 0.0:
            raise ParameterError(f"{'G' if name == 'grad' else 'X'} has no energy (all rows equal): valid range "
                                 "is rows with nonzero energy (centred, for X).")
        share = float(np.sum((M @ Q) ** 2) / total)
        ctrl = float((_control_energies(M, C) / total).mean())
        out[f"{name}_share"], out[f"{name}_share_control"] = share, ctrl
        out[f"{name}_enrichment"] = share / ctrl if ctrl > 0 else float("inf")
    out["calibrated"] = out["grad_enrichment"] / out["var_enrichment"]
    return out


def variance_following_gradients(X, rng=0) -> np.ndarray:
    """Gradients that follow the activations' variance and nothing else: ``g_i = z_i (x_i - mean)``,
    ``z_i`` standard normal, so that ``E[g g^T] = Σ_X`` (the null of :func:`variance_calibrated_test`).

    >>> X = np.random.default_rng(0).normal(size=(5, 3))
    >>> variance_following_gradients(X).shape
    (5, 3)
    """
    X = _mat("X", X)
    rng = check_rng(rng)
    return rng.standard_normal((len(X), 1)) * (X - X.mean(axis=0))


def project_out(G, Q) -> np.ndarray:
    """``G (I - Q Q^T)``: the rows of ``G`` with their component in span(Q) removed."""
    G = _mat("G", G)
    Q = _check_basis(Q, G.shape[1])
    return G - (G @ Q) @ Q.T


def enrichment_outside(G, Q, B, n_controls: int = N_CONTROLS, rng=0) -> dict:
    """The enrichment test with a subspace ``B`` projected out of the proxy and of the gradients.

    The output-bottleneck account: ``dL/dh = W_U^T (p - y)`` lives largely in the top right
    singular subspace of the output matrix ``W_U``, whatever the geometry of the
    activations, so a proxy that overlaps that subspace is enriched for that reason alone.
    Here everything happens in the orthogonal complement of ``B`` (``P = I - B B^T``): the
    gradients become ``G P``, the proxy ``Q`` becomes an orthonormal basis of ``P Q`` (its
    rank drops where ``Q`` lies inside ``span(B)``), and the controls are random subspaces of
    that rank orthogonal to both. A random subspace of the complement then gets its
    share ``r' / (D - k)`` of the remaining energy, so the enrichment is about 1 when the
    proxy's advantage came from ``B`` only.

    Parameters
    ----------
    G : array (n, D)
        Per-token gradients.
    Q : array (D, r)
        The tangent proxy, orthonormal columns.
    B : array (D, k)
        The subspace to remove, orthonormal columns (e.g. the top-``r`` right singular
        vectors of ``W_U``), ``r' + k <= D / 2`` so that the controls fit.
    n_controls : int
    rng : numpy.random.Generator or int

    Returns
    -------
    dict
        ``enrichment`` (NaN when nothing of ``Q`` or of ``G`` is left), ``p_energy``,
        ``energy_proxy``, ``energy_control_mean``, ``rank`` (``r'``), ``energy_removed``
        (the share of ``G``'s energy inside ``span(B)``) and ``overlap`` (the share of the
        proxy inside ``span(B)``: ``||B^T Q||_F^2 / r``).

    Raises
    ------
    ParameterError
        Bad shapes, non-orthonormal ``Q`` or ``B``.

    Example
    -------
    >>> rng = np.random.default_rng(0)
    >>> D, r = 40, 4
    >>> B = random_subspace(D, r, rng=1)                        # the output matrix's top subspace
    >>> G = rng.normal(size=(2000, r)) @ B.T * 10 + rng.normal(size=(2000, D))
    >>> Q = orthonormal(B + 0.5 * random_subspace(D, r, rng=2))  # a proxy that overlaps it
    >>> enrichment_test(G, Q, rng=0)["enrichment"] > 10
    True
    >>> round(enrichment_outside(G, Q, B, rng=0)["enrichment"], 1)
    1.0
    """
    G = _mat("G", G)
    D = G.shape[1]
    Q = _check_basis(Q, D)
    B = _check_basis(B, D, name="B")
    total = float(np.einsum("ij,ij->", G, G))
    GB = G @ B
    removed = float(np.einsum("ij,ij->", GB, GB) / total) if total > 0 else float("nan")
    overlap = float(np.sum((B.T @ Q) ** 2) / Q.shape[1])
    nan = float("nan")
    out = {"enrichment": nan, "p_energy": nan, "energy_proxy": nan, "energy_control_mean": nan,
           "rank": 0, "energy_removed": removed, "overlap": overlap}
    PQ = Q - B @ (B.T @ Q)
    U, s, _ = np.linalg.svd(PQ, full_matrices=False)
    Qp = U[:, s > 1e-6]
    Gp = G - GB @ B.T
    if Qp.shape[1] == 0 or float(np.einsum("ij,ij->", Gp, Gp)) == 0.0:
        return out
    both = np.hstack([Qp, B])
    rank = Qp.shape[1]
    if rank + both.shape[1] > D:
        raise ParameterError(f"rank {rank} + removed {B.shape[1]} + proxy {rank} > D = {D}: valid range "
                             "leaves room for controls orthogonal to the proxy and to B. Lower the ranks.")
    rng = check_rng(rng)
    A = rng.standard_normal((int(n_controls), D, rank))
    A = A - np.matmul(both, np.matmul(both.T, A))
    C, R = np.linalg.qr(A)
    sign = np.sign(np.diagonal(R, axis1=1, axis2=2))
    sign[sign == 0] = 1.0
    C = C * sign[:, None, :]
    e = enrichment_test(Gp, Qp, controls=C)
    out.update(enrichment=e["enrichment"], p_energy=e["p_energy"], energy_proxy=e["energy_proxy"],
               energy_control_mean=e["energy_control_mean"], rank=int(rank))
    return out


def subspace_sharpness(X, r: int, center: bool = True) -> float:
    """How sharply the rank-``r`` PCA proxy of ``X`` is determined: ``sigma_r / sigma_(r+1)``.

    The ratio of the ``r``-th to the ``(r+1)``-th singular value of the (centred) rows. Near 1,
    the ``r``-th and ``(r+1)``-th directions carry the same variance and the fitted subspace is
    nearly arbitrary among its neighbours: a small change of the batch swaps them
    (Davis-Kahan: the subspace moves by about the perturbation over the gap
    ``sigma_r^2 - sigma_(r+1)^2``). Large, it is pinned down.

    Parameters
    ----------
    X : array (n, D)
        The rows the proxy is fitted on, ``n > r``.
    r : int in [1, D - 1]
    center : bool
        Subtract the mean row first, as :func:`pca_basis` does.

    Returns
    -------
    float >= 1 (inf when ``sigma_(r+1) = 0``).

    Example
    -------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(4000, 6)) * [5.0, 4.0, 1.0, 1.0, 1.0, 1.0]
    >>> 3.5 < subspace_sharpness(X, 2) < 4.5, subspace_sharpness(X, 4) < 1.1   # 4 / 1, then 1 / 1
    (True, True)
    """
    X = _mat("X", X)
    r = _check_rank(r, X.shape[1], "r")
    if X.shape[0] <= r:
        raise ParameterError(f"X has {X.shape[0]} rows: valid range is more than r = {r}.")
    if center:
        X = X - X.mean(axis=0)
    s = np.linalg.svd(X, compute_uv=False)
    return float(s[r - 1] / s[r]) if s[r] > 0 else float("inf")


def isoscore_star_cov(C, zeta: float = DEFAULT_ZETA, C0=None) -> float:
    """IsoScore* of a covariance matrix (Rudman & Eickhoff 2024), in float64.

    ``Σ = (1 - ζ) C + ζ C0``; its eigenvalues ``λ`` normalised to norm ``sqrt(n)``;
    isotropy defect ``δ = ||λ̂ - 1|| / sqrt(2 (n - sqrt n))``; score
    ``((n - δ² (n - sqrt n))² - n) / (n (n - 1))``, in ``[0, 1]``: 1 for an isotropic
    covariance, ``(k - 1)/(n - 1)`` for ``k`` equal variances and ``n - k`` zeros,
    0 for rank one. ``ζ = 0`` is plain IsoScore.

    Parameters
    ----------
    C : array (n, n)
        Symmetric positive semi-definite.
    zeta : float in [0, 1)
        Shrinkage weight.
    C0 : array (n, n), optional
        Shrinkage target; default the scale-matched ``(tr C / n) I``.

    Example
    -------
    >>> round(isoscore_star_cov(np.diag([1.0, 1.0, 0.0, 0.0]), zeta=0), 6)  # (k-1)/(n-1)
    0.333333
    """
    C = np.asarray(C, dtype=np.float64)
    n = C.shape[0]
    if C.ndim != 2 or C.shape != (n, n) or n < 2:
        raise ParameterError(f"C.shape={C.shape} is not allowed: valid range is a square (n, n) "
                             "matrix with n >= 2. Pass a covariance matrix.")
    zeta = check_real("zeta", zeta, 0, 1, lo_open=False, hi_open=True,
                      hint="zeta is the shrinkage weight; 0 gives plain IsoScore.")
    if zeta > 0:
        C0 = np.trace(C) / n * np.eye(n) if C0 is None else np.asarray(C0, dtype=np.float64)
        C = (1 - zeta) * C + zeta * C0
    return _isoscore_of_eigenvalues(np.linalg.eigvalsh((C + C.T) / 2))


def isoscore_star_spectrum(lam, zeta: float = DEFAULT_ZETA, trace: float | None = None) -> float:
    """IsoScore* from the eigenvalues ``lam`` of a covariance (or scatter) matrix ``C``, with the
    default target: :func:`isoscore_star_cov` ``(C, zeta)`` without a second eigendecomposition.

    The shrunk matrix ``(1 - ζ) C + ζ (tr C / n) I`` has the eigenvalues ``(1 - ζ) λ + ζ tr C / n``
    (the target commutes with ``C``), and the score does not depend on the scale. ``trace`` is
    ``tr C`` (default ``sum(lam)``, equal up to rounding). The two functions agree to rounding
    (about 1e-15), not bit for bit.

    Example
    -------
    >>> C = np.diag([4.0, 1.0, 1.0, 0.0])
    >>> abs(isoscore_star_spectrum(np.linalg.eigvalsh(C)) - isoscore_star_cov(C)) < 1e-12
    True
    """
    lam = np.asarray(lam, dtype=np.float64)
    n = lam.shape[0]
    if lam.ndim != 1 or n < 2:
        raise ParameterError(f"lam.shape={lam.shape} is not allowed: valid range is (n,) with n >= 2. "
                             "Pass the eigenvalues of a covariance matrix.")
    zeta = check_real("zeta", zeta, 0, 1, lo_open=False, hi_open=True,
                      hint="zeta is the shrinkage weight; 0 gives plain IsoScore.")
    if zeta > 0:
        tr = float(lam.sum()) if trace is None else float(trace)
        lam = (1 - zeta) * lam + zeta * tr / n
    return _isoscore_of_eigenvalues(lam)


def _isoscore_of_eigenvalues(lam) -> float:
    """The score of :func:`isoscore_star_cov` from the (shrunk) matrix's eigenvalues."""
    n = len(lam)
    lam = np.clip(lam, 0.0, None)
    norm = np.linalg.norm(lam)
    if norm == 0:
        return float("nan")
    lam = lam * np.sqrt(n) / norm
    defect2 = np.sum((lam - 1.0) ** 2) / (2 * (n - np.sqrt(n)))
    return float(((n - defect2 * (n - np.sqrt(n))) ** 2 - n) / (n * (n - 1)))


def isoscore_star(X, zeta: float = DEFAULT_ZETA, C0=None) -> float:
    """IsoScore* of a point cloud ``X`` (n_points, D): see :func:`isoscore_star_cov`.

    Example
    -------
    >>> rng = np.random.default_rng(0)
    >>> round(isoscore_star(rng.normal(size=(20000, 8)), zeta=0), 2)   # isotropic
    1.0
    >>> round(isoscore_star(np.outer(rng.normal(size=500), np.ones(8)), zeta=0), 6)  # rank one
    0.0
    """
    X = _mat("X", X)
    if X.shape[0] < 2:
        raise ParameterError(f"X has {X.shape[0]} rows: valid range is [2, inf). Pass more points.")
    return isoscore_star_cov(np.cov(X.T), zeta, C0)


def _cov(G):
    Gc = G - G.mean(axis=0)
    return Gc.T @ Gc / max(len(G) - 1, 1)


def delta_isoscore_test(G, Q, controls=None, n_controls: int = N_CONTROLS, rng=0,
                        zeta: float = DEFAULT_ZETA) -> dict:
    """Change of IsoScore* of ``G`` when span(Q) is projected out, against the controls.

    All scores are computed in ``R^D`` (the projected clouds have ``r`` null
    directions for the proxy and for every control alike), with the shrinkage
    target of the *unprojected* gradients, ``(tr C_G / D) I``, so that every
    variant is shrunk towards the same matrix. Uses ``cov(G P) = P cov(G) P``.

    Returns
    -------
    dict
        ``iso_base`` (IsoScore* of G), ``d_iso_proxy``, ``d_iso_controls`` (array),
        ``d_iso_control_mean``, ``p_iso`` = (1 + #controls with ΔI >= proxy ΔI) / (n + 1).

    Example
    -------
    >>> d = planted_tangent_data(n=400, D=32, d=4, rng=0)
    >>> res = delta_isoscore_test(d.G, d.tangent_basis, rng=0)
    >>> res["d_iso_proxy"] > res["d_iso_control_mean"]
    True
    """
    G = _mat("G", G)
    D = G.shape[1]
    Q = _check_basis(Q, D)
    C = random_controls(Q, n_controls, rng) if controls is None else np.asarray(controls, float)
    S = _cov(G)
    C0 = np.trace(S) / D * np.eye(D)
    base = isoscore_star_cov(S, zeta, C0)

    def removed(B):
        # P S P with P = I - B B^T, as rank-r updates (O(D^2 r) instead of O(D^3))
        SB = S @ B
        BtSB = B.T @ SB
        PSP = S - B @ SB.T - SB @ B.T + B @ BtSB @ B.T
        return isoscore_star_cov(PSP, zeta, C0) - base

    d_proxy = removed(Q)
    d_ctrl = np.array([removed(B) for B in C])
    return {"iso_base": base, "d_iso_proxy": d_proxy, "d_iso_controls": d_ctrl,
            "d_iso_control_mean": float(d_ctrl.mean()), "p_iso": _p_value(d_proxy, d_ctrl)}


def alignment_test(G, Q, n_controls: int = N_CONTROLS, rng=0, zeta: float = DEFAULT_ZETA,
                   isoscore: bool = True) -> dict:
    """Both metrics of the test with the *same* controls: one tidy-table row (scalars only).

    Returns
    -------
    dict
        ``rank, n_tokens, energy_proxy, energy_control_mean, energy_control_std, enrichment,
        p_energy, random_share`` and, if ``isoscore``, ``iso_base, d_iso_proxy,
        d_iso_control_mean, d_iso_control_std, p_iso``.

    Example
    -------
    >>> d = planted_tangent_data(n=300, D=16, d=2, rng=1)
    >>> row = alignment_test(d.G, d.tangent_basis, rng=0)
    >>> row["enrichment"] > 3, row["p_iso"] < 0.1
    (True, True)
    """
    G = _mat("G", G)
    G = G[np.any(G != 0, axis=1)]  # tokens with no loss path carry no gradient
    Q = _check_basis(Q, G.shape[1])
    rng = check_rng(rng)
    C = random_controls(Q, n_controls, rng)
    e = enrichment_test(G, Q, controls=C)
    row = {"rank": Q.shape[1], "n_tokens": int(len(G)), "energy_proxy": e["energy_proxy"],
           "energy_control_mean": e["energy_control_mean"],
           "energy_control_std": float(e["energy_controls"].std(ddof=1)),
           "enrichment": e["enrichment"], "p_energy": e["p_energy"],
           "random_share": e["random_share"]}
    if isoscore:
        d = delta_isoscore_test(G, Q, controls=C, zeta=zeta)
        row.update(iso_base=d["iso_base"], d_iso_proxy=d["d_iso_proxy"],
                   d_iso_control_mean=d["d_iso_control_mean"],
                   d_iso_control_std=float(d["d_iso_controls"].std(ddof=1)), p_iso=d["p_iso"])
    return row


def local_alignment(X, G, token_ids, rank: int = 4, min_count: int | None = None,
                    n_controls: int = N_CONTROLS, rng=0, zeta: float = DEFAULT_ZETA,
                    isoscore: bool = True) -> dict | None:
    """The local tangent proxy: per frequent token, PCA of its own centred activations.

    For every token id with at least ``min_count`` occurrences, ``Q_tok`` is the
    top-``rank`` PCA basis of ``x - mu_tok`` over its occurrences, and its own
    controls are drawn orthogonal to it. Energies are pooled over tokens,
    ``E = sum_tok ||G_tok Q_tok||^2 / sum_tok ||G_tok||^2`` (control ``j`` pooled the
    same way, so there are still ``n_controls`` control values and the same p-value);
    ΔIsoScore* is that of the pooled projected gradients.

    Parameters
    ----------
    X, G : arrays (n, D)
        Activations and gradients of the same tokens.
    token_ids : array (n,)
    rank : int
    min_count : int, optional
        Default ``max(2 * rank + 2, 8)``.

    Returns
    -------
    dict or None
        Like :func:`alignment_test` plus ``n_types`` (tokens used); None if no token qualifies.

    Example
    -------
    >>> d = planted_tangent_data(n=600, D=16, d=2, rng=0, n_types=5)
    >>> local_alignment(d.X, d.G, d.token_ids, rank=2, rng=0)["enrichment"] > 2
    True
    """
    X = _mat("X", X)
    D = X.shape[1]
    G = _mat("G", G, D)
    ids = np.asarray(token_ids).ravel()
    if not (len(X) == len(G) == len(ids)):
        raise ParameterError(f"len(X), len(G), len(token_ids) = {len(X)}, {len(G)}, {len(ids)}: "
                             "valid range is equal lengths. Pass rows of the same tokens.")
    rank = _check_rank(rank, D)
    min_count = max(2 * rank + 2, 8) if min_count is None else check_int("min_count", min_count, lo=rank + 1)
    rng = check_rng(rng)
    uniq, counts = np.unique(ids, return_counts=True)
    total = 0.0
    e_proxy = 0.0
    e_ctrl = np.zeros(n_controls)
    proj_proxy, proj_ctrl, used, n_tok = [], [[] for _ in range(n_controls)], 0, 0
    for tok in uniq[counts >= min_count]:
        sel = ids == tok
        Gt = G[sel]
        keep = np.any(Gt != 0, axis=1)
        if keep.sum() < 1:
            continue
        Q = pca_basis(X[sel], rank)
        Cs = random_controls(Q, n_controls, rng)
        Gt = Gt[keep]
        total += float(np.sum(Gt ** 2))
        e_proxy += float(np.sum((Gt @ Q) ** 2))
        e_ctrl += _control_energies(Gt, Cs)
        if isoscore:
            proj_proxy.append(Gt - (Gt @ Q) @ Q.T)
            for j, B in enumerate(Cs):
                proj_ctrl[j].append(Gt - (Gt @ B) @ B.T)
        used += 1
        n_tok += len(Gt)
    if used == 0 or total == 0:
        return None
    e_proxy /= total
    e_ctrl /= total
    row = {"rank": rank, "n_tokens": n_tok, "n_types": used, "energy_proxy": e_proxy,
           "energy_control_mean": float(e_ctrl.mean()), "energy_control_std": float(e_ctrl.std(ddof=1)),
           "enrichment": float(e_proxy / e_ctrl.mean()), "p_energy": _p_value(e_proxy, e_ctrl),
           "random_share": rank / D}
    if isoscore and n_tok >= 2:
        Gall = np.concatenate([G[np.isin(ids, uniq[counts >= min_count])]])
        Gall = Gall[np.any(Gall != 0, axis=1)]
        S = _cov(Gall)
        C0 = np.trace(S) / D * np.eye(D)
        base = isoscore_star_cov(S, zeta, C0)
        d_proxy = isoscore_star_cov(_cov(np.concatenate(proj_proxy)), zeta, C0) - base
        d_ctrl = np.array([isoscore_star_cov(_cov(np.concatenate(p)), zeta, C0) - base
                           for p in proj_ctrl])
        row.update(iso_base=base, d_iso_proxy=d_proxy, d_iso_control_mean=float(d_ctrl.mean()),
                   d_iso_control_std=float(d_ctrl.std(ddof=1)), p_iso=_p_value(d_proxy, d_ctrl))
    return row


def concentration_radius(X, token_ids, min_count: int = 5, exclude=()) -> dict:
    """Each token's concentration radius: RMS distance of its occurrences to their centroid.

    Parameters
    ----------
    X : array (n, D)
    token_ids : array (n,)
    min_count : int
        Tokens with fewer occurrences are skipped (the radius of 1 point is 0).
    exclude : iterable of int
        Ids to skip (e.g. special tokens).

    Returns
    -------
    dict of arrays
        ``token_id``, ``count``, ``radius`` (sorted by token id).

    Example
    -------
    >>> X = np.array([[0.0, 0], [2, 0], [5, 5]])
    >>> concentration_radius(X, [7, 7, 8], min_count=2)["radius"]
    array([1.])
    """
    X = _mat("X", X)
    ids = np.asarray(token_ids).ravel()
    min_count = check_int("min_count", min_count, lo=2)
    uniq, inv, counts = np.unique(ids, return_inverse=True, return_counts=True)
    sums = np.zeros((len(uniq), X.shape[1]))
    np.add.at(sums, inv, X)
    mu = sums / counts[:, None]
    sq = np.zeros(len(uniq))
    np.add.at(sq, inv, np.sum((X - mu[inv]) ** 2, axis=1))
    radius = np.sqrt(sq / counts)
    keep = (counts >= min_count) & ~np.isin(uniq, list(exclude))
    return {"token_id": uniq[keep], "count": counts[keep], "radius": radius[keep]}


def frequency_radius_correlation(frequency, radius) -> dict:
    """Spearman and Pearson correlation of log-frequency with the concentration radius.

    Returns
    -------
    dict
        ``spearman``, ``pearson`` (of log frequency vs radius), ``n``.

    Example
    -------
    >>> frequency_radius_correlation([1, 10, 100, 1000], [4.0, 3.0, 2.5, 1.0])["spearman"]
    -1.0
    """
    from scipy import stats

    f = np.asarray(frequency, dtype=np.float64).ravel()
    r = np.asarray(radius, dtype=np.float64).ravel()
    if f.shape != r.shape or np.any(f <= 0):
        raise ParameterError("frequency is out of range: valid range is positive counts, one per "
                             "radius. Drop tokens never seen.")
    lf = np.log(f) if len(f) else f
    if len(f) < 3 or np.ptp(lf) == 0 or np.ptp(r) == 0:
        # undefined (e.g. layer 0 of a decoder: a token's embedding is context-free, radius 0)
        return {"spearman": float("nan"), "pearson": float("nan"), "n": int(len(f))}
    return {"spearman": float(stats.spearmanr(lf, r).statistic),
            "pearson": float(stats.pearsonr(lf, r).statistic), "n": int(len(f))}


def frequency_buckets(counts, n_buckets: int = 3, n_special: int = 5) -> np.ndarray:
    """Bucket of every token id by corpus frequency, equal shares of token *occurrences*.

    Token types are sorted by decreasing count and cut so each bucket holds about
    ``1/n_buckets`` of all occurrences (quantiles of the occurrence distribution):
    bucket 0 is a handful of very frequent types, the last bucket the long tail.
    Special ids and unseen ids get ``-1``.

    Parameters
    ----------
    counts : array (vocab_size,)
    n_buckets : int

    Returns
    -------
    ndarray of int (vocab_size,)

    Example
    -------
    >>> frequency_buckets(np.array([0, 0, 50, 30, 10, 5, 5]), 2, n_special=2).tolist()
    [-1, -1, 0, 1, 1, 1, 1]
    """
    c = np.asarray(counts, dtype=np.float64).ravel().copy()
    n_buckets = check_int("n_buckets", n_buckets, lo=1, hi=20)
    c[:n_special] = 0
    out = np.full(len(c), -1, dtype=np.int64)
    order = np.argsort(-c, kind="stable")
    order = order[c[order] > 0]
    if len(order) == 0:
        return out
    cum = np.cumsum(c[order]) / c[order].sum()
    prev = np.concatenate([[0.0], cum[:-1]])   # mass before this type: its quantile
    out[order] = np.minimum((prev * n_buckets).astype(np.int64), n_buckets - 1)
    return out


@dataclass
class PlantedData:
    """Synthetic activations and gradients with a known tangent space."""
    X: np.ndarray              # (n, D) activations
    G: np.ndarray              # (n, D) gradients
    token_ids: np.ndarray      # (n,)
    tangent_basis: np.ndarray  # (D, d) the planted global tangent space


def planted_tangent_data(n: int = 1000, D: int = 64, d: int = 4, tangent_scale: float = 1.0,
                         normal_scale: float = 0.1, gradient_bias: float = 3.0, n_types: int = 1,
                         rng=0) -> PlantedData:
    """Activations spread along a planted d-dim subspace, gradients enriched along it.

    ``X = mu_tok + T a + normal_scale * e`` with ``a ~ N(0, tangent_scale² I_d)``
    (per token type a random centroid ``mu_tok`` and, if ``n_types > 1``, a random
    own tangent space), and gradients ``G = gradient_bias * T b + e'`` with
    ``b, e'`` standard normal: the tangent space holds
    ``(gradient_bias² + 1) d / (gradient_bias² d + D)`` of the gradient energy, versus
    ``d / D`` for a random subspace.

    Example
    -------
    >>> p = planted_tangent_data(n=10, D=8, d=2, rng=0)
    >>> p.X.shape, p.G.shape, p.tangent_basis.shape
    ((10, 8), (10, 8), (8, 2))
    """
    n = check_int("n", n, lo=2)
    D = check_int("D", D, lo=2)
    d = _check_rank(d, D, "d")
    n_types = check_int("n_types", n_types, lo=1)
    rng = check_rng(rng)
    ids = rng.integers(0, n_types, n)
    bases = [random_subspace(D, d, rng) for _ in range(n_types)]
    mus = rng.normal(size=(n_types, D)) * (3.0 if n_types > 1 else 0.0)
    X = np.empty((n, D))
    G = np.empty((n, D))
    for k in range(n_types):
        sel = ids == k
        m = int(sel.sum())
        T = bases[k]
        X[sel] = mus[k] + tangent_scale * rng.normal(size=(m, d)) @ T.T + normal_scale * rng.normal(size=(m, D))
        G[sel] = gradient_bias * rng.normal(size=(m, d)) @ T.T + rng.normal(size=(m, D))
    return PlantedData(X, G, ids, bases[0])
