"""Matched encoder and decoder for the lab: EuroBERT (masked LM) and Llama (causal LM).

Both are built from scratch (no hub) by :func:`make_model` with the *same*
width, depth, heads, MLP size, RoPE, RMSNorm, SiLU-gated MLP, initialisation
scale, untied input/output embeddings and even the same parameter names, so that
with the same seed the two start from identical weights. What differs is only

* the attention mask: bidirectional (``EuroBertModel``) vs causal (``LlamaModel``);
* the objective: masked-token prediction (``mlm_probability`` of the non-special
  tokens are selected; of those 80 % become ``<mask>``, 10 % a random token,
  10 % stay) vs next-token prediction.

Choices, with the reasons:

* ``tie_word_embeddings=False`` for both: the default of both configs and of
  the released EuroBERT checkpoints (Llama 2/3 too).
* ``rope_theta=10000`` for both: Llama's default; EuroBERT ships 250000, which
  only matters for contexts far longer than the 128 tokens used here.
* ``num_key_value_heads = num_attention_heads`` (no grouped-query attention):
  EuroBERT-210m has none either.
* ``mlm_probability = 0.3`` (:data:`~tanbias.lab.config.MLM_PROBABILITY`). BERT used 15 %; Wettig et
  al. (2023, "Should you mask 15 % in MLM?") found 30-40 % better, and EuroBERT
  is reported to have pre-trained with 50 % before lowering the ratio for its
  annealing phase (not checked against the paper's text here). In a run of a
  few minutes a higher ratio also gives twice as many supervised positions per
  batch as 15 %. (The installed ``EuroBertConfig``
  has no masking field: the ratio is a property of the data collator.)
* Sizes (:data:`~tanbias.lab.config.SIZES`), measured on this 2-core CPU (Xeon, AVX-512), 4 layers,
  4 heads, MLP 4d, sequence 128, batch 32 (4096 tokens a step), AdamW step
  included. The machine was shared with other jobs (load 4-6) during every
  measurement, so wall-clock times were unreliable; the robust number is the
  process CPU time of a single-threaded run (``torch.set_num_threads(1)``,
  ``OMP_WAIT_POLICY=PASSIVE``), median over 8 steps:

  ======  ==========  ======================  ======================
  d       parameters  encoder CPU-s / step    decoder CPU-s / step
  ======  ==========  ======================  ======================
  128     3.15 M      0.75  (5.5k tok/CPU-s)  1.39  (2.9k tok/CPU-s)
  192     5.51 M      1.24  (3.3k tok/CPU-s)  1.88  (2.2k tok/CPU-s)
  256     8.39 M      1.77  (2.3k tok/CPU-s)  2.51  (1.6k tok/CPU-s)
  ======  ==========  ======================  ======================

  (batch 16 at d = 128: 0.41 / 0.72 CPU-s.) The decoder is slower because it
  scores every position through the 8192-way output layer, the encoder only the
  30 % masked ones. With two threads a step takes roughly 1/1.6-1/1.9 of these
  CPU times (an estimate: two uncontended threads could not be had).

  "small" is d = 192, trained 400 steps (1.64 M tokens) on the balanced mixture
  (T = 10/3), AdamW lr 2e-3 (warm-up 20 steps, cosine to 10 %), and evaluated on
  the held-out split (same mixture; the unigram model is fitted on the tokens the
  model was trained on, add-0.5):

  =======  =========  =================  =================  ========================
  model    CPU-s (1   held-out loss      unigram loss       top-1 accuracy
           thread)    (perplexity)       (perplexity)       (unigram's)
  =======  =========  =================  =================  ========================
  encoder  495        6.61 (740)         7.70 (2206)        7.7 % (3.5 %), masked
  decoder  726        5.56 (259)         7.59 (1985)        12.3 % (3.2 %), next token
  =======  =========  =================  =================  ========================

  i.e. about 5 (encoder) and 7-8 (decoder) minutes on two uncontended threads,
  both well below the unigram baseline and still improving at the end (the
  encoder with 650 steps and lr 3e-3: 6.51, 8.7 %). Masked-token loss is higher
  than next-token loss at equal compute, as usual: 30 % of the context is hidden
  and only the masked 30 % of positions give a training signal.

This module also has the evaluation helpers (:func:`evaluate`,
:func:`unigram_baseline`; batches come from :mod:`tanbias.lab.data`), the
scored loss every step uses (:func:`loss_and_correct`) and the one loader
that turns a trained run's checkpoint into a model (:func:`load_trained`).
Sizes, kinds and special-token ids are defined in :mod:`tanbias.lab.config`.
The trainer (its one step function, checkpoints, resume, probes) is
:mod:`tanbias.lab.train`.
"""
from __future__ import annotations

import math
import time
from collections.abc import Iterable

import numpy as np
import torch

from tanbias._checks import check_choice
from tanbias.errors import CorruptFileError, ParameterError
from tanbias.lab import runs
from tanbias.lab.config import (ARCH_KEYS, ATTENTIONS, BOS_ID, EOS_ID, MASK_ID, N_SPECIAL, PAD_ID,
                               PRECISIONS, check_kind, model_size)
from tanbias.lab.tokenizer import load_tokenizer

__all__ = ["autocast", "to_device", "gemm_peak", "model_config", "ALIAS_INIT_OFFSET", "make_model",
           "model_from_config",
           "log_unigram", "kind_of", "linear_cross_entropy", "loss_and_correct", "load_trained",
           "evaluate", "unigram_baseline"]


def model_config(kind: str = "encoder", size="small", vocab_size: int = 8192, tie_embeddings: bool = False,
                 **overrides):
    """The ``EuroBertConfig`` or ``LlamaConfig`` of :func:`make_model`.

    Parameters
    ----------
    kind : {"encoder", "decoder"}
    size : str or ModelSize
        A name of :data:`~tanbias.lab.config.SIZES` (``"smoke"`` for tests) or the size itself.
    vocab_size : int
        Size of the tokenizer's vocabulary (``len(tokenizer)``).
    tie_embeddings : bool
        Share the input embedding with the output layer (``tie_word_embeddings``; the lab's
        models are untied, chapter 12's ``tied`` arm is not).
    **overrides
        Any of ``hidden_size, num_hidden_layers, num_attention_heads, intermediate_size``
        (used for the size measurements).

    Returns
    -------
    transformers.EuroBertConfig or transformers.LlamaConfig

    Example
    -------
    >>> e, d = model_config("encoder", "smoke"), model_config("decoder", "smoke")
    >>> (e.hidden_size, e.num_hidden_layers) == (d.hidden_size, d.num_hidden_layers)
    True
    """
    from transformers import EuroBertConfig, LlamaConfig

    check_kind(kind)
    size = model_size(size)
    bad = set(overrides) - set(ARCH_KEYS)
    if bad:
        raise ParameterError(f"overrides={sorted(bad)} are out of range: valid keys are {ARCH_KEYS}.")
    if int(vocab_size) <= N_SPECIAL:
        raise ParameterError(f"vocab_size={vocab_size!r} is out of range: valid range is ({N_SPECIAL}, inf). "
                             "Pass len(load_tokenizer()).")
    arch = size.architecture() | overrides
    common = dict(
        vocab_size=int(vocab_size), **arch,
        num_key_value_heads=arch["num_attention_heads"],
        head_dim=arch["hidden_size"] // arch["num_attention_heads"],
        hidden_act="silu", max_position_embeddings=512, initializer_range=0.02,
        rms_norm_eps=1e-5, rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        attention_bias=False, attention_dropout=0.0, mlp_bias=False,
        tie_word_embeddings=bool(tie_embeddings), use_cache=False,
        pad_token_id=PAD_ID, bos_token_id=BOS_ID, eos_token_id=EOS_ID,
    )
    if kind == "encoder":
        return EuroBertConfig(**common, mask_token_id=MASK_ID)
    return LlamaConfig(**common)


#: the extra input rows of an aliased model are drawn from a generator seeded by ``seed + ALIAS_INIT_OFFSET``
ALIAS_INIT_OFFSET = 7_777


def _causal_attention_hook(module, args, kwargs):
    """A forward pre-hook of an attention module that makes it causal: the attention mask it is given
    (None, boolean "may attend" or additive float) is combined with the lower-triangular one."""
    hidden = args[0] if args else kwargs["hidden_states"]
    t = hidden.shape[1]
    keep = torch.ones(t, t, dtype=torch.bool, device=hidden.device).tril()
    mask = kwargs.get("attention_mask")
    if mask is None or mask.dtype != torch.bool:
        causal = torch.zeros(t, t, dtype=hidden.dtype, device=hidden.device).masked_fill(~keep, float("-inf"))
        kwargs["attention_mask"] = causal[None, None] if mask is None else mask + causal
    else:
        kwargs["attention_mask"] = mask & keep
    return args, kwargs


def make_model(kind: str = "encoder", size="small", vocab_size: int = 8192, seed: int = 0,
               tie_embeddings: bool = False, n_inputs: int | None = None, output_bias=None,
               attention: str = "native", **overrides) -> torch.nn.Module:
    """Build ``EuroBertForMaskedLM`` (encoder) or ``LlamaForCausalLM`` (decoder) from scratch.

    Parameters
    ----------
    kind : {"encoder", "decoder"}
    size : str or ModelSize
        See :data:`~tanbias.lab.config.SIZES`.
    vocab_size : int
    seed : int
        ``torch.manual_seed(seed)`` right before construction: the same seed gives
        the encoder and the decoder identical initial weights.
    tie_embeddings : bool
        See :func:`model_config`.
    n_inputs : int, optional
        Rows of the input embedding when it has more than the vocabulary (the aliasing knob,
        :class:`~tanbias.lab.aliasing.AliasMap`'s ``n_inputs``). The model is built as without
        them (so its first ``vocab_size`` rows and every other weight are those of the same seed
        without aliases); the extra rows are then drawn independently from the model's own
        initialisation, N(0, ``initializer_range``²), with a generator seeded by
        ``seed + ALIAS_INIT_OFFSET``. The output layer keeps ``vocab_size`` rows.
    output_bias : array (vocab_size,), optional
        A learnable bias of the output layer with these initial values (the rivals chapter's
        unigram head: :func:`log_unigram` of the run's training targets). It is added after
        the model is built and draws nothing from the random generator, so every weight
        equals the same seed's model without it. Default: no bias (the lab's standard head).
    attention : {"native", "causal"}
        :data:`~tanbias.lab.config.ATTENTIONS`: the architecture's own attention, or (for the encoder)
        causal attention: every attention module is given a forward pre-hook that adds the
        lower-triangular mask, so position ``t`` reads positions ``<= t`` only. Nothing is drawn, so
        every weight equals the same seed's bidirectional encoder; the model carries
        ``tanbias_attention``. A decoder takes only ``"native"``.
    **overrides
        Architecture overrides, see :func:`model_config`.

    Returns
    -------
    torch.nn.Module
        In train mode, float32, eager attention.

    Example
    -------
    >>> enc = make_model("encoder", "smoke", vocab_size=100)
    >>> dec = make_model("decoder", "smoke", vocab_size=100)
    >>> bool(torch.equal(enc.model.embed_tokens.weight, dec.model.embed_tokens.weight))
    True
    """
    from transformers import EuroBertForMaskedLM, LlamaForCausalLM

    check_choice("attention", attention, ATTENTIONS)
    if attention != "native" and kind != "encoder":
        raise ParameterError(f"attention={attention!r} is out of range for kind={kind!r}: valid range is "
                             "'native' (a decoder's own attention is causal).")
    config = model_config(kind, size, vocab_size, tie_embeddings=tie_embeddings, **overrides)
    config._attn_implementation = "sdpa"
    torch.manual_seed(int(seed))
    cls = EuroBertForMaskedLM if kind == "encoder" else LlamaForCausalLM
    model = cls(config)
    if n_inputs is not None and int(n_inputs) != int(vocab_size):
        if int(n_inputs) < int(vocab_size) or tie_embeddings:
            raise ParameterError(f"n_inputs={n_inputs!r} is out of range: valid range is [{vocab_size}, inf) "
                                 "(the vocabulary plus the alias rows), and an untied model.")
        old = model.get_input_embeddings()
        gen = torch.Generator().manual_seed(int(seed) + ALIAS_INIT_OFFSET)
        extra = torch.randn(int(n_inputs) - int(vocab_size), old.embedding_dim, generator=gen) * config.initializer_range
        # from_pretrained draws nothing from the global generator (a new Embedding's own init would)
        new = torch.nn.Embedding.from_pretrained(torch.cat([old.weight.detach(), extra.to(old.weight.dtype)]),
                                                 freeze=False, padding_idx=old.padding_idx)
        model.set_input_embeddings(new)
    if output_bias is not None:
        if tie_embeddings:
            raise ParameterError("output_bias is not allowed with tie_embeddings=True: valid range is an "
                                 "untied model. Untie the embeddings or drop the bias.")
        bias = torch.as_tensor(np.asarray(output_bias, dtype=np.float32))
        if bias.shape != (int(vocab_size),) or not bool(torch.isfinite(bias).all()):
            raise ParameterError(f"output_bias has shape {tuple(bias.shape)}: valid range is ({int(vocab_size)},) "
                                 "finite values, one per type of the vocabulary.")
        model.lm_head.bias = torch.nn.Parameter(bias.to(model.lm_head.weight.dtype))
    if attention == "causal":
        for layer in model.model.layers:
            layer.self_attn.register_forward_pre_hook(_causal_attention_hook, with_kwargs=True)
    model.tanbias_attention = attention
    model.train()
    return model


def model_from_config(cfg, stream=None, n_inputs: int | None = None) -> torch.nn.Module:
    """The ONE place a run config becomes a model: its kind, size, seed, tied or untied embeddings,
    output bias and attention (:func:`make_model`).

    Parameters
    ----------
    cfg : tanbias.lab.config.RunConfig
    stream : tanbias.lab.data.Stream, optional
        The run's data stream (training): its vocabulary, its input rows (an aliased run's alias rows)
        and, for the unigram head, the log-unigram of its training targets as the output bias's start.
    n_inputs : int, optional
        Without a stream (loading a checkpoint): the input embedding's rows as the checkpoint saved
        them; the output bias, where the config has one, is a placeholder the checkpoint overwrites.

    Example
    -------
    >>> from tanbias.lab.config import RunConfig
    >>> m = model_from_config(RunConfig(name="x", kind="encoder", size="smoke", attention="causal"))
    >>> m.tanbias_attention, m.lm_head.bias is None
    ('causal', True)
    """
    if stream is not None:
        vocab, n_inputs = len(stream.tokenizer), stream.n_inputs
        bias = log_unigram(stream.target_counts(cfg.steps)) if cfg.output_bias == "unigram" else None
    else:
        vocab = len(load_tokenizer())
        bias = np.zeros(vocab) if cfg.output_bias != "none" else None
    return make_model(cfg.kind, cfg.size, vocab_size=vocab, seed=cfg.seed, tie_embeddings=cfg.tie_embeddings,
                      n_inputs=n_inputs, output_bias=bias, attention=cfg.attention)


def log_unigram(counts) -> np.ndarray:
    """The log of the add-one-smoothed unigram distribution of target counts (vocab_size,).

    ``log((c_w + 1) / sum_v (c_v + 1))``: the unigram head's initial bias (the rivals chapter),
    so that at initialisation, when the logits ``W_U h`` are near 0, the model already predicts
    the unigram distribution of its training targets.

    Example
    -------
    >>> np.round(np.exp(log_unigram([3, 0, 1])), 3)
    array([0.571, 0.143, 0.286])
    """
    c = np.asarray(counts, dtype=np.float64)
    if c.ndim != 1 or c.size < 2 or not np.all(np.isfinite(c)) or np.any(c < 0):
        raise ParameterError(f"counts has shape {c.shape}: valid range is one non-negative finite count per "
                             "type, at least two types.")
    return np.log(c + 1.0) - np.log(float(c.sum()) + c.size)


def load_trained(run, step: int | None = None):
    """The model of a trained run's last checkpoint (``work/ckpt.pt``), in eval mode.

    The one way a run's checkpoint becomes a model (trained views, radii, any
    later analysis). The tokenizer is the shared one of :mod:`tanbias.lab.tokenizer`.

    Parameters
    ----------
    run : str or path
        Run name under ``data/runs`` or a folder.
    step : int, optional
        Require the checkpoint to be at this step; default the run's last step
        (``config.steps``): a checkpoint of an interrupted run is refused.

    Returns
    -------
    (model, tokenizer, RunConfig)

    Raises
    ------
    CorruptFileError
        The checkpoint is missing, unreadable or at another step (names it and
        the command that regenerates it).
    """
    d = runs.run_dir(run)
    regen = runs.regenerate_command(d)
    cfg = runs.read_config(d)
    ckpt = runs.checkpoint_path(d)
    try:
        state = torch.load(ckpt, map_location="cpu", weights_only=False)
        at = int(state["step"])
        # the input embedding's rows: the vocabulary, and an aliased run's alias rows
        # (tanbias.lab.data.Stream.n_inputs) as the run saved them
        n_inputs = int(state["model"]["model.embed_tokens.weight"].shape[0])
    except FileNotFoundError:
        raise CorruptFileError(ckpt, regen, "checkpoint is missing (work/ is not committed)") from None
    except Exception as exc:
        raise CorruptFileError(ckpt, regen, f"unreadable checkpoint: {exc}") from None
    want = cfg.steps if step is None else int(step)
    if at != want:
        raise CorruptFileError(ckpt, regen + "  (or resume it without --fresh)",
                               f"checkpoint is at step {at}, the run has {want} steps")
    tok = load_tokenizer()
    model = model_from_config(cfg, n_inputs=n_inputs)
    model.load_state_dict(state["model"])
    model.eval()
    return model, tok, cfg


# ---------------------------------------------------------------------------
# training and evaluation (minimal: for sizing only)
# ---------------------------------------------------------------------------
def kind_of(model) -> str:
    return "encoder" if type(model).__name__.startswith("EuroBert") else "decoder"


def autocast(device, precision: str = "fp32"):
    """The autocast context of a precision: bfloat16 for ``bf16`` (weights stay float32), nothing for ``fp32``.

    >>> with autocast(torch.device("cpu"), "bf16"):
    ...     (torch.ones(2, 2) @ torch.ones(2, 2)).dtype
    torch.bfloat16
    """
    if precision not in PRECISIONS:
        raise ParameterError(f"precision={precision!r} is out of range: valid values are {PRECISIONS}.")
    dev = torch.device(device)
    return torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=precision == "bf16")


def gemm_peak(n: int = 2048, repeats: int = 3, dtype: str = "fp32", device="cpu") -> float:
    """The machine's matrix-multiply rate in FLOP/s for ``dtype`` (``fp32`` or ``bf16``), measured in this process.

    The best of ``repeats`` products of two ``n x n`` matrices (after one warm-up);
    the reference for "fraction of the peak" figures, measured beside them.
    """
    if dtype not in PRECISIONS:
        raise ParameterError(f"dtype={dtype!r} is out of range: valid values are {PRECISIONS}.")
    dev = torch.device(device)
    t = torch.float32 if dtype == "fp32" else torch.bfloat16
    a, b = torch.randn(n, n, device=dev).to(t), torch.randn(n, n, device=dev).to(t)
    a @ b
    best = float("inf")
    for _ in range(repeats):
        if dev.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        a @ b
        if dev.type == "cuda":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return 2 * n ** 3 / best


def to_device(batch: dict, device) -> dict:
    """A batch's tensors on ``device`` (a no-op on the CPU)."""
    return {k: v.to(device) if hasattr(v, "to") else v for k, v in batch.items()}


#: rows of the output layer's logits computed at once by :func:`linear_cross_entropy`; 256 rows of
#: the 8,192-type vocabulary are 8 MB of float32 logits, which stay in cache (measured by
#: ``make bench``'s bf16 figures; 128 and 1024 were slower on this machine)
LOSS_CHUNK_ROWS = 256


class _LinearCrossEntropy(torch.autograd.Function):
    """Summed cross-entropy of ``hidden @ weight.T`` chunk by chunk, with its gradient computed in the forward."""

    @staticmethod
    def forward(ctx, hidden, weight, targets, dtype, chunk, need_grad):
        h, w = hidden.to(dtype), weight.to(dtype)
        loss = torch.zeros((), dtype=torch.float32, device=hidden.device)
        correct = torch.zeros((), dtype=torch.int64, device=hidden.device)
        grad_h = torch.empty_like(hidden) if need_grad else None
        grad_w = torch.zeros(weight.shape, dtype=torch.float32, device=weight.device) if need_grad else None
        for s in range(0, h.shape[0], chunk):
            hc, tc = h[s:s + chunk], targets[s:s + chunk]
            logits = (hc @ w.T).float()                        # (rows, V): the only logits alive
            lse = torch.logsumexp(logits, dim=-1)
            loss += (lse - logits.gather(1, tc[:, None]).squeeze(1)).sum()
            correct += (logits.argmax(-1) == tc).sum()
            if need_grad:                                     # d loss / d logits = softmax - one-hot
                g = logits.sub_(lse[:, None]).exp_()
                g[torch.arange(len(tc), device=g.device), tc] -= 1.0
                g = g.to(dtype)
                grad_h[s:s + chunk] = (g @ w).to(hidden.dtype)
                grad_w += (g.T @ hc).float()
        if need_grad:
            ctx.save_for_backward(grad_h, grad_w.to(weight.dtype))
        ctx.mark_non_differentiable(correct)
        return loss, correct

    @staticmethod
    def backward(ctx, grad_loss, _grad_correct):
        grad_h, grad_w = ctx.saved_tensors
        return grad_h * grad_loss.to(grad_h.dtype), grad_w * grad_loss.to(grad_w.dtype), None, None, None, None


def linear_cross_entropy(hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor,
                         dtype: torch.dtype = torch.bfloat16, chunk: int = LOSS_CHUNK_ROWS):
    """Summed cross-entropy and number of correct top-1 predictions of ``hidden @ weight.T``, chunk by chunk.

    The output layer's matrix products run in ``dtype``; log-sum-exp, softmax and
    the loss in float32, as autocast does them. The (rows x vocabulary) logits
    exist only ``chunk`` rows at a time, and their gradient is formed in the same
    pass, so the full logits are never written, zero-filled, cast or read back,
    which is most of a bf16 training step of the small models otherwise
    (profiled: 0.5 s of 1.4 s). Written here because the fused kernels that do
    this (Liger's fused linear cross-entropy, Apple's cut cross-entropy) are
    Triton or CUDA code for GPUs; on the CPU the chunked PyTorch form is what helps.

    >>> g = torch.Generator().manual_seed(0)
    >>> h = torch.randn(10, 4, generator=g, requires_grad=True)
    >>> w = torch.randn(7, 4, generator=g, requires_grad=True)
    >>> t = torch.randint(0, 7, (10,), generator=g)
    >>> loss, correct = linear_cross_entropy(h, w, t, dtype=torch.float32, chunk=3)
    >>> ref = torch.nn.functional.cross_entropy(h @ w.T, t, reduction="sum")
    >>> bool(torch.allclose(loss, ref)), int(correct) == int(((h @ w.T).argmax(-1) == t).sum())
    (True, True)
    >>> loss.backward(); gh = h.grad.clone(); h.grad = None
    >>> ref.backward(); bool(torch.allclose(gh, h.grad, atol=1e-6))
    True
    """
    if int(chunk) < 1:
        raise ParameterError(f"chunk={chunk!r} is out of range: valid range is chunk >= 1 (rows of logits at once).")
    need_grad = torch.is_grad_enabled() and (hidden.requires_grad or weight.requires_grad)
    with torch.autocast(device_type=hidden.device.type, enabled=False):
        return _LinearCrossEntropy.apply(hidden, weight, targets, dtype, int(chunk), need_grad)


def loss_and_correct(model, batch) -> tuple[torch.Tensor, int, int]:
    """Summed cross-entropy, number and number of correct top-1 predictions of the scored positions.

    The output layer is applied only to the scored positions (all but the last for
    the decoder, the masked ones for the encoder: "sparse prediction", as in
    ModernBERT); the loss equals the models' own ``labels=`` loss times the count.
    Under bf16 autocast the output layer and the loss run chunk by chunk
    (:func:`linear_cross_entropy`); in fp32 they run as they always have, so the
    committed fp32 runs reproduce exactly.
    """
    hidden = model.model(input_ids=batch["input_ids"]).last_hidden_state
    labels = batch["labels"]
    if kind_of(model) == "decoder":
        hidden, labels = hidden[:, :-1], labels[:, 1:]
    keep = labels != -100
    targets = labels[keep]
    dev = hidden.device.type
    if torch.is_autocast_enabled(dev) and model.lm_head.bias is None:
        loss_sum, correct = linear_cross_entropy(hidden[keep], model.lm_head.weight, targets,
                                                 dtype=torch.get_autocast_dtype(dev))
        return loss_sum, int(targets.numel()), int(correct)
    logits = model.lm_head(hidden[keep]).float()
    loss_sum = torch.nn.functional.cross_entropy(logits, targets, reduction="sum")
    correct = int((logits.detach().argmax(-1) == targets).sum())
    return loss_sum, int(targets.numel()), correct


def evaluate(model, batches: Iterable[dict], precision: str = "fp32") -> dict:
    """Token-weighted cross-entropy (nats) and top-1 accuracy on the scored positions.

    The batches move to the model's device; ``precision`` as in training (:func:`autocast`).

    Returns
    -------
    dict
        ``loss, perplexity, accuracy, tokens`` (number of scored positions).
    """
    was_training = model.training
    model.eval()
    total, count, correct = 0.0, 0, 0
    device = next(model.parameters()).device
    for batch in batches:
        with torch.no_grad(), autocast(device, precision):      # no graph: nothing is differentiated
            loss_sum, n, c = loss_and_correct(model, to_device(batch, device))
        total += float(loss_sum)
        count += n
        correct += c
    model.train(was_training)
    loss = total / max(count, 1)
    return {"loss": loss, "perplexity": math.exp(loss), "accuracy": correct / max(count, 1),
            "tokens": count}


def unigram_baseline(train_counts: np.ndarray, eval_ids, alpha: float = 0.5,
                     exclude_special: bool = True) -> dict:
    """Cross-entropy of an add-``alpha`` unigram model on held-out tokens.

    Parameters
    ----------
    train_counts : ndarray (vocab_size,)
        Token counts on training data (:func:`~tanbias.lab.data.token_counts`).
    eval_ids : array-like of int
        Held-out target ids (e.g. :func:`~tanbias.lab.data.batch_targets` of validation batches).
    alpha : float
        Additive smoothing, > 0.
    exclude_special : bool
        Give ids 0-4 zero probability (they are never masked targets; keep them for
        causal LM targets, where ``</s>``/``<s>`` are predicted).

    Returns
    -------
    dict
        ``loss`` (nats/token), ``perplexity``, ``accuracy`` (of always predicting the most
        frequent token), ``tokens``.

    Example
    -------
    >>> c = np.array([0, 0, 0, 0, 0, 30, 10], dtype=float)
    >>> round(unigram_baseline(c, [5, 5, 5, 6], alpha=1e-9)["loss"], 4)
    0.5623
    """
    if not alpha > 0:
        raise ParameterError(f"alpha={alpha!r} is out of range: valid range is (0, inf).")
    counts = np.asarray(train_counts, dtype=np.float64) + alpha
    if exclude_special:
        counts[:N_SPECIAL] = 0.0
    with np.errstate(divide="ignore"):
        logp = np.log(counts / counts.sum())
    ids = np.asarray(eval_ids, dtype=np.int64).ravel()
    loss = float(-logp[ids].mean())
    return {"loss": loss, "perplexity": math.exp(loss) if loss < 700 else math.inf,
            "accuracy": float(np.mean(ids == int(np.argmax(counts)))), "tokens": int(ids.size)}
