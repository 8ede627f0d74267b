"""The alignment probe: capture activations and ∂L/∂h during training, analyse them afterwards (ch 7, 8).

Capture (:class:`ResidualProbe`), at log-spaced steps (:func:`probe_steps`,
step 0 included): forward hooks on the embedding and on every block of the
model (:func:`residual_modules`) call ``h.retain_grad()`` on the residual
stream ``h`` (layer 0 is the embedding output, layer ``l`` the output of block
``l``), so the *training step's own* backward pass fills ``h.grad = ∂L/∂h``
(no extra forward or backward). After the backward the probe copies, for the first ``tokens``
positions of the batch, the activations and the gradients at every layer, as
float16 (gradients divided by a per-layer scale first, so they do not underflow;
every metric is scale-free), to ``work/probe/step_XXXXXX.npz`` (atomic write).
Released EuroBERT, GPT-NeoX and Llama checkpoints get the same hooks post hoc
(:mod:`tanbias.lab.posthoc`).

Analysis (:func:`analyse_run`), after training, from the stored captures —
so it can be re-run (``python -m tanbias.lab probe RUN``) and the *frozen*
proxy can be applied to the early steps too:

* ``frozen``: rank-``r`` PCA of the activations pooled over the probe steps in
  the first ``fit_fraction`` (30 %) of training, per layer, then frozen and used
  at every step (the paper's global proxy);
* ``refit``: rank-``r`` PCA of that step's own activations (per-checkpoint refit);
* ``local``: per frequent token, PCA of its own centred activations
  ``x - mu_token`` (rank ``local_rank``), metrics on that token's gradients
  (:func:`tanbias.alignment.local_alignment`).

Each with 20 random orthogonal controls: energy share, enrichment, p-value,
ΔIsoScore* (:func:`tanbias.alignment.alignment_test`), for all tokens and per
frequency bucket (equal shares of the run's token occurrences,
:func:`tanbias.alignment.frequency_buckets`). Plus each token's concentration
radius and the correlation of log-frequency with it. Per-token analyses key a
position by its *input* token, so an encoder's ``<mask>`` positions (a special
id) are left out of buckets, local proxies and radii (they stay in ``all``).
"""
from __future__ import annotations

import contextlib
import json
from pathlib import Path

import numpy as np

from tanbias import alignment as al
from tanbias.errors import CorruptFileError, ParameterError

__all__ = ["probe_steps", "ResidualProbe", "residual_modules", "pack_capture", "load_capture", "analyse_run",
           "analyse_captures", "bucket_label", "CAPTURE_VERSION"]

CAPTURE_VERSION = 1
N_SPECIAL = 5


@contextlib.contextmanager
def single_thread_blas():
    """Run numpy's bundled OpenBLAS on one thread inside the block.

    The analysis does many small matrix operations; on a shared, oversubscribed
    2-core machine OpenBLAS's threads spin against each other and made it ~20x
    slower (measured). One thread also makes the tables bit-reproducible.
    No-op if numpy's OpenBLAS cannot be found.
    """
    import ctypes
    import glob
    import os

    lib = None
    for path in glob.glob(os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs", "*openblas*")):
        try:
            h = ctypes.CDLL(path)
        except OSError:
            continue
        for get, set_ in (("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
                          ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
                          ("openblas_get_num_threads", "openblas_set_num_threads")):
            if hasattr(h, get) and hasattr(h, set_):
                lib = (getattr(h, get), getattr(h, set_))
                break
        if lib:
            break
    if lib is None:
        yield
        return
    before = lib[0]()
    lib[1](1)
    try:
        yield
    finally:
        lib[1](before)


def probe_steps(steps: int, n: int = 14) -> list[int]:
    """Log-spaced probe steps in ``[0, steps - 1]``, step 0 and the last step included.

    Example
    -------
    >>> probe_steps(100, 6)
    [0, 1, 3, 10, 31, 99]
    """
    steps, n = int(steps), int(n)
    if steps <= 1:
        return [0]
    grid = np.geomspace(1, steps - 1, max(n - 1, 1))
    out = sorted({0, steps - 1, *np.rint(grid).astype(int).tolist()})
    return out


def bucket_label(b: int, n_buckets: int) -> str:
    """``"q1 (most frequent)"`` ... ``"q3 (rarest)"``."""
    if b == 0:
        return "q1 (most frequent)"
    if b == n_buckets - 1:
        return f"q{b + 1} (rarest)"
    return f"q{b + 1}"


def residual_modules(model) -> list:
    """The embedding and the transformer blocks of ``model``, in order (layer 0, 1, ..., L).

    The embedding is ``model.get_input_embeddings()``; the blocks are the
    ``layers`` of ``model.base_model`` (Llama, EuroBERT: ``model.model.layers``;
    GPT-NeoX: ``model.gpt_neox.layers``), or its ``h`` (GPT-2 style) if it has no
    ``layers``. For the lab's own models this is ``[model.model.embed_tokens,
    *model.model.layers]``.

    Raises
    ------
    ParameterError
        If neither block list exists.
    """
    base = getattr(model, "base_model", model)
    blocks = getattr(base, "layers", None)
    if blocks is None:
        blocks = getattr(base, "h", None)
    if blocks is None:
        raise ParameterError(
            f"model={type(model).__name__} is not allowed: valid range is models whose base model "
            f"({type(base).__name__}) has a block list `layers` or `h` (Llama, EuroBERT, GPT-NeoX, "
            "GPT-2). Probe another architecture by hooking its blocks by hand.")
    return [model.get_input_embeddings(), *blocks]


class ResidualProbe:
    """Hooks that keep ``∂L/∂h`` of the residual stream at every layer for armed steps.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        Our ``EuroBertForMaskedLM`` / ``LlamaForCausalLM``, or a released checkpoint
        of the same families or of GPT-NeoX (:func:`residual_modules`).
    tokens : int
        Number of batch positions stored per step (the first ones, row-major).

    Use::

        probe.arm()                     # before the forward of a probe step
        loss.backward()
        capture = probe.collect(...)    # after the backward, before zero_grad
    """

    def __init__(self, model, tokens: int = 4096):
        self.tokens = int(tokens)
        self.armed = False
        self._h: dict[int, object] = {}
        modules = residual_modules(model)
        self.n_layers = len(modules)
        self._handles = [m.register_forward_hook(self._hook(i)) for i, m in enumerate(modules)]

    def _hook(self, i):
        def hook(module, inputs, output):
            if self.armed:
                h = output[0] if isinstance(output, tuple) else output
                if h.requires_grad:
                    h.retain_grad()
                    self._h[i] = h
        return hook

    def arm(self) -> None:
        self._h.clear()
        self.armed = True

    def collect(self, batch: dict) -> dict:
        """Activations, scaled gradients and token ids of the stored positions (numpy)."""
        return pack_capture(*self.collect_raw(batch))

    def collect_raw(self, batch: dict) -> tuple[list, list, object, object]:
        """The stored positions as float32 tensors, before scaling and rounding to float16.

        Returns ``(acts, grads, input_ids, token_ids)``: one ``(n, D)`` tensor per
        layer each, and the ``(n,)`` input and uncorrupted token ids. Captures of
        several batches of one loss are concatenated and then packed with
        :func:`pack_capture` (:func:`tanbias.lab.posthoc.capture_checkpoint`).
        """
        import torch

        self.armed = False
        ids = batch["input_ids"]
        labels = batch["labels"]
        n = min(self.tokens, ids.numel())
        acts, grads = [], []
        for i in range(self.n_layers):
            h = self._h[i]
            acts.append(h.detach().reshape(-1, h.shape[-1])[:n].float())
            grads.append((h.grad if h.grad is not None else torch.zeros_like(h))
                         .reshape(-1, h.shape[-1])[:n].float())
        self._h.clear()
        flat_ids = ids.reshape(-1)[:n]
        flat_lab = labels.reshape(-1)[:n]
        # the uncorrupted token at each position (encoder inputs carry <mask>/random ids)
        orig = torch.where(flat_lab != -100, flat_lab, flat_ids) if not torch.equal(ids, labels) else flat_ids
        return acts, grads, flat_ids, orig

    def remove(self) -> None:
        for h in self._handles:
            h.remove()


def pack_capture(acts: list, grads: list, input_ids, token_ids) -> dict:
    """The capture dict of :meth:`ResidualProbe.collect` from float32 tensors.

    Activations become float16; each layer's gradients are divided by their
    largest absolute value (``grad_scale``, 1 if all are zero) before rounding to
    float16, so they do not underflow (every metric is scale-free).
    """
    a16, g16, scales = [], [], []
    for a, g in zip(acts, grads):
        s = float(g.abs().max()) or 1.0
        a16.append(a.numpy().astype(np.float16))
        g16.append((g / s).numpy().astype(np.float16))
        scales.append(s)
    return {"acts": np.stack(a16), "grads": np.stack(g16),
            "grad_scale": np.asarray(scales, np.float32),
            "input_ids": input_ids.numpy().astype(np.int32),
            "token_ids": token_ids.numpy().astype(np.int32),
            "version": np.int32(CAPTURE_VERSION)}


def load_capture(path, regenerate: str) -> dict:
    """Read one ``step_XXXXXX.npz``; a truncated or unreadable file is a CorruptFileError."""
    path = Path(path)
    try:
        with np.load(path) as z:
            cap = {k: z[k] for k in z.files}
        for k in ("acts", "grads", "grad_scale", "token_ids"):
            cap[k]
    except FileNotFoundError:
        raise CorruptFileError(path, regenerate, "probe capture is missing") from None
    except Exception as exc:
        raise CorruptFileError(path, regenerate, f"unreadable probe capture: {exc}") from None
    return cap


def _rows_for(token_ids, buckets, n_buckets, special):
    """(label, row mask) for 'all' and each frequency bucket."""
    b = np.where(~special, buckets[np.clip(token_ids, 0, len(buckets) - 1)], -1)
    out = [("all", np.ones(len(token_ids), bool))]
    out += [(bucket_label(k, n_buckets), b == k) for k in range(n_buckets)]
    return out


def analyse_captures(captures: dict[int, dict], config: dict, counts: np.ndarray,
                     progress: bool = False, special_ids=None) -> tuple[list[dict], list[dict], list[dict]]:
    """Tidy rows (alignment, radius, radius_corr) from captures ``{step: capture}``.

    Parameters
    ----------
    captures : dict[int, dict]
        ``{step: capture}`` (:meth:`ResidualProbe.collect`).
    config : dict
        ``name, kind, regime, seed, steps`` and ``probe`` (``rank, local_rank,
        n_controls, n_buckets, min_count, zeta, fit_fraction, layers``).
    counts : ndarray (vocab_size,)
        Token counts that define the frequency buckets and ``corpus_count``.
    progress : bool
        Show a tqdm bar.
    special_ids : iterable of int, optional
        Token ids left out of the per-token analyses (buckets, local proxies,
        radii) and of the bucket counts. Default ``range(5)``: the lab
        tokenizer's ``<pad> <s> </s> <unk> <mask>``; pass a released
        tokenizer's ``all_special_ids`` for its checkpoints.
    """
    special_ids = sorted({int(i) for i in (range(N_SPECIAL) if special_ids is None else special_ids)})
    pc = config["probe"]
    rank, local_rank = int(pc["rank"]), int(pc["local_rank"])
    n_ctrl, n_buckets, min_count = int(pc["n_controls"]), int(pc["n_buckets"]), int(pc["min_count"])
    zeta = float(pc["zeta"])
    total = int(config["steps"])
    layers = pc.get("layers")
    steps = sorted(captures)
    L = captures[steps[0]]["acts"].shape[0]
    layers = list(range(L)) if layers is None else [int(x) for x in layers]
    bucket_counts = np.asarray(counts, np.float64).copy()
    bucket_counts[[i for i in special_ids if 0 <= i < len(bucket_counts)]] = 0
    buckets = al.frequency_buckets(bucket_counts, n_buckets, n_special=0)
    freq = np.asarray(counts, np.float64)
    base = {"run": config["name"], "kind": config["kind"], "regime": config["regime"],
            "seed": int(config["seed"])}

    # frozen global proxy: PCA of activations pooled over the first fit_fraction of training
    fit_steps = [s for s in steps if s <= pc["fit_fraction"] * total] or steps[:1]
    frozen = {}
    for layer in layers:
        pooled = np.concatenate([captures[s]["acts"][layer].astype(np.float64) for s in fit_steps])
        if len(pooled) > 16384:
            pooled = pooled[np.random.default_rng(0).choice(len(pooled), 16384, replace=False)]
        frozen[layer] = al.pca_basis(pooled, rank)

    align, radius, corr = [], [], []
    it = [(s, l) for s in steps for l in layers]
    if progress:
        from tqdm.auto import tqdm
        it = tqdm(it, desc=f"probe {config['name']}", unit="layer-step")
    for step, layer in it:
        cap = captures[step]
        X = cap["acts"][layer].astype(np.float64)
        G = cap["grads"][layer].astype(np.float64)
        # per-token analyses use the token the model *sees* at each position: an encoder's
        # <mask> positions (a special id) drop out instead of mixing a <mask> embedding
        # into the occurrences of the token it hides
        ids = cap.get("input_ids", cap["token_ids"]).astype(np.int64)
        special = np.isin(ids, special_ids)
        refit = al.pca_basis(X, rank)
        meta = {**base, "step": int(step), "frac": step / max(total - 1, 1), "layer": int(layer)}
        for b_label, mask in _rows_for(ids, buckets, n_buckets, special):
            Gb = G[mask]
            nz = np.any(Gb != 0, axis=1)
            for p_i, (proxy, Q) in enumerate((("frozen", frozen[layer]), ("refit", refit))):
                if nz.sum() < 2:
                    continue
                rng = np.random.default_rng([int(config["seed"]), step, layer, p_i, len(align)])
                row = al.alignment_test(Gb, Q, n_controls=n_ctrl, rng=rng, zeta=zeta)
                align.append({**meta, "bucket": b_label, "proxy": proxy, **row})
            rng = np.random.default_rng([int(config["seed"]), step, layer, 2, len(align)])
            keep = mask & ~special
            row = al.local_alignment(X[keep], G[keep], ids[keep], rank=local_rank,
                                     min_count=min_count, n_controls=n_ctrl, rng=rng, zeta=zeta)
            if row is not None:
                align.append({**meta, "bucket": b_label, "proxy": "local", **row})
        rad = al.concentration_radius(X, ids, min_count=min_count, exclude=special_ids)
        f = freq[rad["token_id"]]
        ok = f > 0
        for t, c, r in zip(rad["token_id"], rad["count"], rad["radius"]):
            radius.append({**meta, "token_id": int(t), "count_in_batch": int(c),
                           "corpus_count": float(freq[t]), "bucket": int(buckets[t]),
                           "radius": float(r)})
        cr = al.frequency_radius_correlation(f[ok], rad["radius"][ok])
        corr.append({**meta, **cr})
    return align, radius, corr


def analyse_run(run, progress: bool = True) -> dict:
    """Recompute ``alignment.csv``, ``radius.csv``, ``radius_corr.csv`` from the stored captures.

    Raises
    ------
    CorruptFileError
        A capture is missing or unreadable (the message names the file and the
        command that regenerates it).
    """
    import pandas as pd

    from tanbias.lab import runs

    d = runs.run_dir(run)
    regen = runs.regenerate_command(d)
    config = json.loads((d / "config.json").read_text())
    from tanbias.lab.train import capture_path
    captures = {}
    for s in probe_steps(config["steps"], config["probe"]["n_steps"]):
        captures[s] = load_capture(capture_path(d, s), regen)
    counts_path = d / "token_counts.npy"
    try:
        counts = np.load(counts_path)
    except Exception as exc:
        raise CorruptFileError(counts_path, regen, f"unreadable: {exc}") from None
    with single_thread_blas():
        align, radius, corr = analyse_captures(captures, config, counts, progress=progress)
    tables = {"alignment.csv": pd.DataFrame(align), "radius.csv": pd.DataFrame(radius),
              "radius_corr.csv": pd.DataFrame(corr)}
    for name, df in tables.items():
        runs.atomic_write_text(d / name, df.to_csv(index=False, float_format="%.6g"))
    return tables
