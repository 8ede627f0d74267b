"""Gradient surgery on the updates of the maps that read the residual stream (chapter 12).

The gradient side of the tangent-bias hypothesis says that the weight updates
of the maps that read the residual stream are concentrated in its tangent
directions, and that this is what makes the representations anisotropic. The
lab can intervene on that chain: after the optimizer has computed a step, the
update ``ΔW = W_new − W_old`` of each such map is replaced by

    ΔW (α P + (I − P)),        P = U Uᵀ,  U: an orthonormal basis (D × r) of the input space,

so that its component along the rank-``r`` subspace ``P`` is scaled by ``α``
and its complement is untouched (:func:`scale_in_subspace`). The *update*, not
the gradient, is the faithful place: AdamW divides each coordinate of the
gradient by its own running scale, which mixes directions again, so a gradient
projected onto ``I − P`` would not give an update in ``I − P``; scaling the
update itself (decoupled weight decay included) removes exactly what is meant.

The maps are every block's attention ``q``, ``k``, ``v`` projections (they read
the output of ``input_layernorm``) and its MLP ``gate`` and ``up`` projections
(``post_attention_layernorm``); the maps that read one norm's output share one
input space and one ``P`` (:data:`READERS`). The arms (:data:`~tanbias.lab.config.SURGERY_ARMS`):

* ``proxy``: ``U`` spans the top-``r`` principal directions of the map's inputs
  on the current batch (centred; special-token positions and position 0, the
  attention sink, left out): chapter 7's tangent proxy, tracked during training;
* ``random``: ``U`` a random rank-``r`` subspace, seeded by (run seed, step, group),
  redrawn whenever ``proxy`` would be re-estimated;
* ``uniform``: ``ΔW`` scaled by ``√(1 − e)``, ``e = (1 − α²) ‖ΔW U‖² / ‖ΔW‖²`` the
  share of the update's energy the proxy arm would remove from this map at this
  step (:func:`removed_share`): the same amount of learning removed, in no
  preferred direction.

:class:`Surgery` holds the hooks, the bases and the per-step figures; its state
(the bases in use) is saved in the run's checkpoint, so a resumed run applies
the surgery exactly as an uninterrupted one. It is a hook of the training loop
(:class:`tanbias.lab.hooks.Hook`): armed before each step's forward pass, applied
after the optimizer's step, its figures added to the step's record, its state
checkpointed. The settings are :class:`~tanbias.lab.config.SurgerySettings`.
"""
from __future__ import annotations

import numpy as np
import torch

from tanbias._checks import check_int, check_real
from tanbias.errors import ParameterError
from tanbias.lab.config import N_SPECIAL, SurgerySettings
from tanbias.lab.hooks import Hook

__all__ = ["READERS", "scale_in_subspace", "share_in_subspace", "removed_share", "top_basis",
           "top_basis_and_sharpness", "random_basis",
           "worked_example", "Surgery"]

#: the linear maps under surgery, grouped by the normalised stream they read (one input space each):
#: group name -> the maps' paths inside a decoder block (``model.model.layers[i]``)
READERS = {"attn": ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"),
           "mlp": ("mlp.gate_proj", "mlp.up_proj")}


def _check_basis(U: torch.Tensor, D: int) -> None:
    if U.ndim != 2 or U.shape[0] != D or not 1 <= U.shape[1] <= D:
        raise ParameterError(f"U.shape={tuple(U.shape)} is out of range: valid range is (D, r) with D={D} "
                             "(the update's input dimension) and 1 <= r <= D.")


def scale_in_subspace(dW: torch.Tensor, U: torch.Tensor, alpha: float) -> torch.Tensor:
    """``dW (α U Uᵀ + I − U Uᵀ)``: the update's component in ``span(U)`` scaled by ``alpha``.

    ``dW`` is ``(out, in)`` as ``torch.nn.Linear`` stores its weight, so its rows live in the
    input space; ``U`` (``in × r``) has orthonormal columns.

    >>> U = torch.eye(3)[:, :1]
    >>> scale_in_subspace(torch.ones(2, 3), U, 0.5)
    tensor([[0.5000, 1.0000, 1.0000],
            [0.5000, 1.0000, 1.0000]])
    """
    alpha = check_real("alpha", alpha, 0, 1, lo_open=False, hi_open=False)
    _check_basis(U, dW.shape[1])
    return dW - (1.0 - alpha) * (dW @ U) @ U.T


def share_in_subspace(dW: torch.Tensor, U: torch.Tensor) -> float:
    """``‖dW U‖² / ‖dW‖²``: the share of the update's energy in ``span(U)`` (0 for a zero update)."""
    _check_basis(U, dW.shape[1])
    total = float(dW.double().pow(2).sum())
    return float((dW.double() @ U.double()).pow(2).sum()) / total if total > 0 else 0.0


def removed_share(dW: torch.Tensor, U: torch.Tensor, alpha: float) -> float:
    """The share of the update's energy that :func:`scale_in_subspace` removes, ``(1 − α²) ‖dW U‖² / ‖dW‖²``.

    The component in ``span(U)`` and its complement are orthogonal, so the energy left is
    ``α² ‖dW U‖² + ‖dW (I − U Uᵀ)‖²``.

    >>> removed_share(torch.ones(2, 4), torch.eye(4)[:, :1], 0.0)
    0.25
    """
    alpha = check_real("alpha", alpha, 0, 1, lo_open=False, hi_open=False)
    return (1.0 - alpha ** 2) * share_in_subspace(dW, U)


def top_basis(cov: torch.Tensor, r: int) -> torch.Tensor:
    """The top-``r`` eigenvectors of a symmetric ``cov`` (``D × r``, float32, largest eigenvalue first)."""
    return top_basis_and_sharpness(cov, r)[0]


def top_basis_and_sharpness(cov: torch.Tensor, r: int) -> tuple[torch.Tensor, float]:
    """:func:`top_basis` and how sharply it is determined: ``sigma_r / sigma_(r+1) = sqrt(lambda_r /
    lambda_(r+1))`` of the inputs (:func:`tanbias.theory.alignment.subspace_sharpness`), from one
    eigendecomposition (inf when ``lambda_(r+1) = 0``, NaN when ``r = D``)."""
    r = check_int("r", r, lo=1, hi=cov.shape[0])
    vals, vecs = torch.linalg.eigh(cov.double())
    if r < cov.shape[0]:
        lo, hi = float(vals[-r - 1].clamp(min=0)), float(vals[-r].clamp(min=0))
        sharp = float(np.sqrt(hi / lo)) if lo > 0 else float("inf")
    else:
        sharp = float("nan")
    return vecs[:, -r:].flip(1).float().contiguous(), sharp


def random_basis(D: int, r: int, seed) -> torch.Tensor:
    """A random rank-``r`` orthonormal basis of ``R^D`` (``D × r``, Haar-distributed), from ``seed``
    (an int or a sequence of ints, ``numpy.random.default_rng``'s seed)."""
    D = check_int("D", D, lo=1)
    r = check_int("r", r, lo=1, hi=D)
    g = np.random.default_rng(seed).standard_normal((D, r))
    q, rr = np.linalg.qr(g)
    q = q * np.sign(np.diag(rr))            # the sign convention that makes QR's Q Haar-distributed
    return torch.from_numpy(q).float().contiguous()


def worked_example(alpha: float, rank: int, D: int = 24, n: int = 512, planted: int = 4, seed: int = 0) -> dict:
    """The surgery on one small update, direction by direction (chapter 12's widget).

    A map reads inputs ``X`` (``n × D``) with ``planted`` strong principal directions (standard
    deviation 3) among weak ones (0.5), in a random rotation; its update is a gradient step
    ``ΔW = −Gᵀ X / n`` for random output gradients ``G``, so its energy along each principal
    direction of the inputs follows that direction's variance: the update is concentrated where
    the inputs vary most, as the gradient side of the hypothesis says. The surgery with the
    proxy (the top-``rank`` principal directions) and ``alpha`` is applied.

    Returns
    -------
    dict
        ``variance`` (the inputs' variance along each principal direction, largest first),
        ``before`` and ``after`` (the update's energy ``‖ΔW u_k‖²`` along each), ``removed``
        (the share of the energy removed) and ``share`` (the share in P before surgery).

    >>> ex = worked_example(0.0, 4)
    >>> round(ex["share"], 2) == round(ex["removed"], 2), bool(ex["after"][:4].max() < 1e-12)
    (True, True)
    """
    alpha = check_real("alpha", alpha, 0, 1, lo_open=False, hi_open=False)
    D = check_int("D", D, lo=2)
    rank = check_int("rank", rank, lo=1, hi=D - 1)
    planted = check_int("planted", planted, lo=1, hi=D)
    rng = np.random.default_rng(seed)
    scales = np.where(np.arange(D) < planted, 3.0, 0.5)
    rot, _ = np.linalg.qr(rng.standard_normal((D, D)))
    X = (rng.standard_normal((int(n), D)) * scales) @ rot.T
    G = rng.standard_normal((int(n), 16))
    dW = torch.from_numpy(-(G.T @ X) / n)
    cov = torch.from_numpy(np.cov(X, rowvar=False))
    vals, vecs = torch.linalg.eigh(cov)
    vals, vecs = vals.flip(0), vecs.flip(1)
    U = vecs[:, :rank]
    new = scale_in_subspace(dW, U, alpha)
    return {"variance": vals.numpy(), "before": (dW @ vecs).pow(2).sum(0).numpy(),
            "after": (new @ vecs).pow(2).sum(0).numpy(), "removed": removed_share(dW, U, alpha),
            "share": share_in_subspace(dW, U)}


class _Moments:
    """Running first and second moments of a map's inputs over the kept positions of a batch."""

    def __init__(self, D: int):
        self.n = 0
        self.s = torch.zeros(D, dtype=torch.float64)
        self.ss = torch.zeros(D, D, dtype=torch.float64)

    def add(self, x: torch.Tensor) -> None:
        x = x.detach().double()
        self.n += x.shape[0]
        self.s += x.sum(0)
        self.ss += x.T @ x

    def covariance(self) -> torch.Tensor:
        if self.n < 2:
            raise ParameterError(f"kept positions={self.n} is out of range: valid range is at least 2 "
                                 "positions that are neither special tokens nor position 0 in the batch.")
        mu = self.s / self.n
        return (self.ss - self.n * torch.outer(mu, mu)) / (self.n - 1)


class Surgery(Hook):
    """The gradient surgery of one run: hooks on the reading maps, the bases, the per-step figures.

    Use :meth:`begin` before the step's forward pass (it arms the input hooks and
    snapshots the weights) and :meth:`finish` after the optimizer's step (it replaces
    the update). Steps outside the surgery window cost nothing. As a hook of the
    training loop (:class:`~tanbias.lab.hooks.Hook`, given to
    :func:`~tanbias.lab.train.train_step`) it does both at the step's fixed points, adds
    its figures (``last``) to the step's record and keeps its bases in the
    checkpoint under ``"surgery"``. One process only: each rank would estimate its own
    subspace and the replicas would drift apart.

    Parameters
    ----------
    model : EuroBertForMaskedLM or LlamaForCausalLM
        A lab model (:func:`tanbias.lab.models.make_model`).
    settings : SurgerySettings
    steps : int
        The run's number of steps (the window is ``settings.until`` of them).
    seed : int
        The run's seed (the random arm's bases).
    """

    def __init__(self, model, settings: SurgerySettings, steps: int, seed: int = 0):
        if not isinstance(settings, SurgerySettings):
            raise ParameterError(f"settings={settings!r} is not allowed: valid range is a SurgerySettings.")
        self.settings = settings
        self.steps = check_int("steps", steps, lo=1)
        self.seed = int(seed)
        self.groups: list[tuple[str, list[torch.nn.Linear]]] = []
        for i, block in enumerate(model.model.layers):
            for g, paths in READERS.items():
                self.groups.append((f"{i}.{g}", [block.get_submodule(p) for p in paths]))
        D = self.groups[0][1][0].in_features
        if not 1 <= settings.rank < D:
            raise ParameterError(f"surgery.rank={settings.rank} is out of range: valid range is [1, {D - 1}] "
                                 f"for inputs of width {D}.")
        self.bases: dict[str, torch.Tensor] = {}
        self.estimated_at: dict[str, int] = {}
        self._moments: dict[str, _Moments] | None = None
        self._keep: torch.Tensor | None = None
        self._before: dict[int, torch.Tensor] | None = None
        self._step: int | None = None
        self.last: dict = {}
        #: sigma_r / sigma_(r+1) of each group's inputs where its proxy was re-estimated this step
        self._sharpness: dict = {}
        self._hooks = [maps[0].register_forward_pre_hook(self._hook(name)) for name, maps in self.groups]

    # ------------------------------------------------------------------ the training loop's points
    checkpoint_key = "surgery"

    @classmethod
    def check(cls, cfg, ctx) -> None:
        """Refuse a surgery run under torchrun (more than one process)."""
        if cfg.surgery is not None and ctx.distributed:
            raise ParameterError(f"surgery={cfg.surgery.arm!r} is not allowed under torchrun: valid range is "
                                 "one process (each rank would estimate its own subspace and the replicas "
                                 "would drift apart). Run it with python -m tanbias.lab train.")

    @classmethod
    def for_run(cls, run) -> "Surgery | None":
        """The surgery of ``run``'s config, on its model; None without one."""
        cfg = run.cfg
        return cls(run.model, cfg.surgery, cfg.steps, cfg.seed) if cfg.surgery is not None else None

    def before_forward(self, step: int, batch: dict) -> None:
        self.begin(step, batch["input_ids"])

    def after_optimizer_step(self, step: int) -> None:
        self.finish(step)

    def step_record(self, step: int) -> dict:
        return self.last

    def close(self) -> None:
        self.remove()

    # ------------------------------------------------------------------ hooks
    def _hook(self, name: str):
        def hook(module, args):
            if self._moments is not None:
                x = args[0]
                self._moments[name].add(x.reshape(-1, x.shape[-1])[self._keep.reshape(-1)])
        return hook

    def remove(self) -> None:
        """Remove the input hooks."""
        for h in self._hooks:
            h.remove()
        self._hooks = []

    # ------------------------------------------------------------------ one step
    def active(self, step: int) -> bool:
        """Whether ``step`` is in the surgery window."""
        return self.settings.active(step, self.steps)

    def _estimating(self, step: int) -> bool:
        return step % self.settings.every == 0 or not self.bases

    def begin(self, step: int, input_ids: torch.Tensor) -> None:
        """Before the forward pass of step ``step`` on a batch with ``input_ids``: snapshot the maps'
        weights and, where the proxy is re-estimated at this step, arm the input hooks."""
        self._step = int(step)
        if not self.active(step):
            self._before = None
            return
        self._before = {id(m): m.weight.detach().clone() for _, maps in self.groups for m in maps}
        if self.settings.arm != "random" and self._estimating(step):
            keep = input_ids >= N_SPECIAL
            keep[:, 0] = False                         # the attention sink's position
            self._keep = keep.to(self.groups[0][1][0].weight.device)
            D = self.groups[0][1][0].in_features
            self._moments = {name: _Moments(D) for name, _ in self.groups}

    def _basis(self, name: str, gi: int, step: int) -> torch.Tensor:
        s = self.settings
        if self._estimating(step):
            if s.arm == "random":
                D = self.groups[gi][1][0].in_features
                self.bases[name] = random_basis(D, s.rank, (self.seed, step, gi))
            else:
                self.bases[name], self._sharpness[name] = top_basis_and_sharpness(
                    self._moments[name].covariance(), s.rank)
            self.estimated_at[name] = step
        return self.bases[name]

    @torch.no_grad()
    def finish(self, step: int) -> dict:
        """After the optimizer's step ``step``: replace each map's update; return (and keep in
        ``last``) the step's figures: ``surgery_share`` (mean share of the updates' energy in
        ``P``), ``surgery_removed`` (mean share removed); empty outside the window."""
        if step != self._step:
            raise ParameterError(f"step={step} is out of range: valid value is {self._step}, the step "
                                 "begin() was called for.")
        self.last = {}
        if self._before is None:
            return self.last
        s = self.settings
        shares, removed = [], []
        for gi, (name, maps) in enumerate(self.groups):
            U = self._basis(name, gi, step).to(maps[0].weight.device)
            for m in maps:
                w0 = self._before[id(m)]
                dW = (m.weight.detach() - w0).float()
                share = share_in_subspace(dW, U)
                e = (1.0 - s.alpha ** 2) * share           # removed_share, from the share just computed
                if s.arm == "uniform":
                    new = dW * float(np.sqrt(max(0.0, 1.0 - e)))
                else:
                    new = scale_in_subspace(dW, U, s.alpha)
                m.weight.copy_((w0.float() + new).to(m.weight.dtype))
                shares.append(share)
                removed.append(e)
        self._moments, self._before, self._keep = None, None, None
        self.last = {"surgery_share": float(np.mean(shares)), "surgery_removed": float(np.mean(removed))}
        if self._sharpness:            # the proxy arms re-estimated their bases at this step
            self.last["surgery_sharpness"] = float(np.median(list(self._sharpness.values())))
            self._sharpness = {}
        return self.last

    # ------------------------------------------------------------------ checkpoint
    def state_dict(self) -> dict:
        """The bases in use and the steps they were estimated at (saved in the run's checkpoint)."""
        return {"bases": {k: v.cpu().clone() for k, v in self.bases.items()},
                "estimated_at": dict(self.estimated_at)}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`'s bases (a resumed run)."""
        self.bases = {k: v.clone() for k, v in state.get("bases", {}).items()}
        self.estimated_at = dict(state.get("estimated_at", {}))
