"""The alignment probe: capture activations and ∂L/∂h during training (ch 7, 8).

Capture (:class:`ResidualProbe`), at log-spaced steps (:func:`~tanbias.lab.config.probe_steps`,
step 0 included): forward hooks on the embedding and on every block of the
model (:func:`residual_modules`) call ``h.retain_grad()`` on the residual
stream ``h`` (layer 0 is the embedding output, layer ``l`` the output of block
``l``), so the *training step's own* backward pass fills ``h.grad = ∂L/∂h``
(no extra forward or backward). After the backward the probe takes, for the first ``tokens``
positions of the batch, the activations and the gradients at every layer; a
:class:`CaptureWriter` thread stores them as float16 (gradients divided by a
per-layer scale first, so they do not underflow; every metric is scale-free) in
``work/probe/step_XXXXXX.npz`` (atomic write) while training goes on.
Released EuroBERT, GPT-NeoX and Llama checkpoints get the same hooks on saved checkpoints
(:mod:`tanbias.lab.analysis.checkpoint_probe`).

The held-out score at the probe steps (:class:`ProbeEval`, a hook of the
training loop: :class:`tanbias.lab.hooks.Hook`) is logged beside the captures.

The analysis of the captures (alignment tables, radii) is
:mod:`tanbias.lab.analysis.tables`; this module only captures and scores.
Importing it loads no torch (the chapters that read committed tables import it).
"""
from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np

from tanbias.errors import CorruptFileError, ParameterError
from tanbias.lab.config import probe_steps
from tanbias.lab.hooks import Hook
from tanbias.lab.runs import atomic_save_npz

__all__ = ["layer_activations", "F16_SAFE", "BLOCK_LISTS", "ResidualProbe", "residual_modules",
           "pack_capture",
           "output_spectrum", "load_capture", "CaptureWriter", "CAPTURE_VERSION", "ProbeEval"]

CAPTURE_VERSION = 1


#: Where a base model keeps its list of transformer blocks, in the order they are looked for:
#: ``layers`` (Llama, Mistral, Qwen, Gemma, GPT-NeoX, EuroBERT, ModernBERT), ``h`` (GPT-2,
#: Falcon), ``encoder.layer`` (BERT, RoBERTa, XLM-R, ELECTRA), ``decoder.layers`` (OPT),
#: ``transformer.layer`` (DistilBERT).
BLOCK_LISTS = ("layers", "h", "encoder.layer", "decoder.layers", "transformer.layer")


def residual_modules(model) -> list:
    """The embedding and the transformer blocks of ``model``, in order (layer 0, 1, ..., L).

    The embedding is ``model.get_input_embeddings()``; the blocks are the first of
    :data:`BLOCK_LISTS` that ``model.base_model`` has (Llama, EuroBERT:
    ``model.model.layers``; GPT-NeoX: ``model.gpt_neox.layers``; GPT-2: ``transformer.h``;
    BERT: ``bert.encoder.layer``). For the lab's own models this is
    ``[model.model.embed_tokens, *model.model.layers]``.

    Raises
    ------
    ParameterError
        If none of the block lists exists.
    """
    base = getattr(model, "base_model", model)
    for path in BLOCK_LISTS:
        blocks = base
        for attr in path.split("."):
            blocks = getattr(blocks, attr, None)
        if blocks is not None:
            return [model.get_input_embeddings(), *blocks]
    raise ParameterError(
        f"model={type(model).__name__} is not allowed: valid range is models whose base model "
        f"({type(base).__name__}) has a block list ({', '.join(BLOCK_LISTS)}). Probe another "
        "architecture by hooking its blocks by hand.")


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
        :func:`pack_capture` (:func:`tanbias.lab.analysis.checkpoint_probe.capture_checkpoint`).
        """
        import torch

        self.armed = False
        ids = batch["input_ids"]
        labels = batch["labels"]
        n = min(self.tokens, ids.numel())
        acts, grads = [], []
        for i in range(self.n_layers):
            h = self._h[i]
            # float32 on the CPU whatever the device and precision the step ran in
            acts.append(h.detach().reshape(-1, h.shape[-1])[:n].float().cpu())
            grads.append((h.grad if h.grad is not None else torch.zeros_like(h))
                         .reshape(-1, h.shape[-1])[:n].float().cpu())
        self._h.clear()
        flat_ids = ids.reshape(-1)[:n].cpu()
        flat_lab = labels.reshape(-1)[:n].cpu()
        # the uncorrupted token at each position (encoder inputs carry <mask>/random ids; an aliased
        # batch's inputs carry alias ids and its "types" are the text's types)
        if "types" in batch:
            orig = batch["types"].reshape(-1)[:n].cpu()
        else:
            orig = torch.where(flat_lab != -100, flat_lab, flat_ids) if not torch.equal(ids, labels) else flat_ids
        return acts, grads, flat_ids, orig

    def remove(self) -> None:
        for h in self._handles:
            h.remove()


def output_spectrum(model) -> dict:
    """The singular values and right singular vectors of the model's output matrix ``W_U`` (V, D).

    ``{"wu_s": (D,), "wu_vt": (D, D)}``, float32, largest first: a capture keeps them so that
    the analysis can project the output matrix's top-``r`` right singular subspace out of the
    proxy and of the gradients (the output-bottleneck account,
    :func:`tanbias.theory.alignment.enrichment_outside`). About 50 ms for the small models'
    8,192 x 192 matrix, at probe steps only.

    Example
    -------
    >>> import torch
    >>> lin = torch.nn.Linear(3, 5, bias=False)
    >>> m = type("M", (), {"get_output_embeddings": lambda self: lin})()
    >>> spec = output_spectrum(m)
    >>> spec["wu_vt"].shape, bool(np.all(np.diff(spec["wu_s"]) <= 0))
    ((3, 3), True)
    """
    import torch

    w = model.get_output_embeddings().weight.detach().float().cpu()
    _, s, vt = torch.linalg.svd(w, full_matrices=False)
    return {"wu_s": s.numpy().astype(np.float32), "wu_vt": vt.numpy().astype(np.float32)}


def pack_capture(acts: list, grads: list, input_ids, token_ids, extra: dict | None = None) -> dict:
    """The capture dict of :meth:`ResidualProbe.collect` from float32 tensors.

    Activations become float16; each layer's gradients are divided by their
    largest absolute value (``grad_scale``, 1 if all are zero) before rounding to
    float16, so they do not underflow (every metric is scale-free). A layer whose
    activations would overflow float16 (real models have outlier dimensions in
    the tens of thousands) is divided by a power of two first (``act_scale``, 1
    for every layer of the lab's models); :func:`layer_activations` undoes it.
    """
    a16, g16, scales, act_scales = [], [], [], []
    for a, g in zip(acts, grads):
        s = float(g.abs().max()) or 1.0
        peak = float(a.abs().max())
        sa = 2.0 ** int(np.ceil(np.log2(peak / F16_SAFE))) if peak > F16_SAFE else 1.0
        a16.append((a / sa if sa != 1.0 else a).numpy().astype(np.float16))
        g16.append((g / s).numpy().astype(np.float16))
        scales.append(s)
        act_scales.append(sa)
    return {"acts": np.stack(a16), "grads": np.stack(g16),
            "grad_scale": np.asarray(scales, np.float32),
            "act_scale": np.asarray(act_scales, np.float32),
            "input_ids": input_ids.numpy().astype(np.int32),
            "token_ids": token_ids.numpy().astype(np.int32),
            "version": np.int32(CAPTURE_VERSION), **(extra or {})}


class CaptureWriter:
    """Packs captures (:func:`pack_capture`) and writes them atomically on one background thread.

    Packing and the fsynced write take about 0.1 s a capture on the small decoder
    (4096 positions, 7 layers, 29 MB), a tenth of one of its bfloat16 steps on our CPU:
    on a thread they overlap the next training step when a core is free, and the step
    waits only for the probe's copy. The tensors handed over must not change afterwards
    (:meth:`ResidualProbe.collect_raw` returns the step's own activations and fresh
    gradients, which nothing writes again).

    ``wait()`` returns once every submitted capture is on disk and raises the first
    error of a write; :func:`tanbias.lab.train.train` waits before each checkpoint, so
    that a checkpoint never counts a step whose capture is missing, and before it ends.

    Example
    -------
    >>> import tempfile, torch
    >>> d = Path(tempfile.mkdtemp())
    >>> with CaptureWriter() as w:
    ...     w.submit(d / "step_000000.npz", [torch.ones(2, 3)], [torch.ones(2, 3)], torch.zeros(2), torch.zeros(2))
    >>> load_capture(d / "step_000000.npz", "make it again")["acts"].shape
    (1, 2, 3)
    """

    def __init__(self):
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tanbias-capture")
        self._pending: list[Future] = []

    def submit(self, path, acts: list, grads: list, input_ids, token_ids, extra: dict | None = None) -> None:
        """Pack and write one capture to ``path`` in the background (``extra``: :func:`pack_capture`)."""
        self._pending.append(self._pool.submit(
            lambda: atomic_save_npz(path, **pack_capture(acts, grads, input_ids, token_ids, extra))))

    def wait(self) -> None:
        """Block until every submitted capture is written; re-raise the first failure."""
        pending, self._pending = self._pending, []
        errors = [f.exception() for f in pending]
        first = next((e for e in errors if e is not None), None)
        if first is not None:
            raise first

    def close(self) -> None:
        """Wait for the pending captures (errors are :meth:`wait`'s), then stop the thread."""
        try:
            self.wait()
        finally:
            self._pool.shutdown(wait=True)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:                              # already failing: finish the writes, keep that error
            try:
                self.close()
            except Exception:  # noqa: BLE001
                pass
        return False


#: Largest activation stored as is in float16 (its maximum is 65504): above it a layer is scaled.
F16_SAFE = 32768.0


def layer_activations(cap: dict, layer: int) -> np.ndarray:
    """Layer ``layer``'s captured activations as float64, in their original units.

    Example
    -------
    >>> import torch
    >>> cap = pack_capture([torch.full((2, 3), 98304.0)], [torch.ones(2, 3)], torch.zeros(1, 2), torch.zeros(2))
    >>> float(cap["act_scale"][0]), float(layer_activations(cap, 0).max())
    (4.0, 98304.0)
    """
    X = cap["acts"][layer].astype(np.float64)
    scale = cap.get("act_scale")
    return X * float(scale[layer]) if scale is not None else X


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


class ProbeEval(Hook):
    """The held-out score of a run at every probe step and after the last (``probe_eval_batches > 0``).

    On rank 0, before the training step of every probe step and once after the last
    step, the model is scored (:func:`tanbias.lab.models.evaluate`, the run's precision)
    on the ``cfg.probe_eval_batches`` batches of its stream's probe-eval text
    (:meth:`tanbias.lab.data.Stream.probe_eval`), one text for every seed of a design,
    and a record ``{"type": "probe_eval", "step", "loss", "accuracy", "tokens"}`` is
    logged in ``metrics.jsonl`` (a resumed run does not score a step twice). The
    summary gets ``probe_eval_seconds``: the seconds the loop spent at its probe steps'
    measurements.

    Parameters
    ----------
    batches : list of dict
        The probe-eval batches.
    precision : {"fp32", "bf16"}
        The run's precision.
    scored : set of int
        The steps already scored (in the log of a resumed run).
    """

    def __init__(self, batches: list, precision: str, scored: set):
        self.batches = batches
        self.precision = precision
        self.scored = scored

    @classmethod
    def for_run(cls, run) -> "ProbeEval | None":
        """The hook of ``run`` on rank 0 when its config scores probe-eval batches; else None."""
        if not run.ctx.main or run.cfg.probe_eval_batches == 0:
            return None
        return cls(run.stream.probe_eval(run.cfg.probe_eval_batches), run.cfg.precision,
                   run.logged_steps("probe_eval"))

    def at_probe_step(self, run, step: int) -> None:
        from tanbias.lab.models import evaluate        # torch: this module loads none when imported

        if step in self.scored:
            return
        res = evaluate(run.model, self.batches, self.precision)
        run.log({"type": "probe_eval", "step": step, "loss": res["loss"], "accuracy": res["accuracy"],
                 "tokens": res["tokens"]})
        self.scored.add(step)

    def write(self, run) -> dict:
        return {"probe_eval_seconds": round(run.hook_seconds, 1)}
