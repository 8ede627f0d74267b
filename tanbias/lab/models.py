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
* ``mlm_probability = 0.3`` (:data:`MLM_PROBABILITY`). BERT used 15 %; Wettig et
  al. (2023, "Should you mask 15 % in MLM?") found 30-40 % better, and EuroBERT
  is reported to have pre-trained with 50 % before lowering the ratio for its
  annealing phase (not checked against the paper's text here). In a run of a
  few minutes a higher ratio also gives twice as many supervised positions per
  batch as 15 %. (The installed ``EuroBertConfig``
  has no masking field: the ratio is a property of the data collator.)
* Sizes (:data:`SIZES`), measured on this 2-core CPU (Xeon, AVX-512), 4 layers,
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

This module also has the minimal helpers used to size the models:
:func:`lm_batches` (packing + masking), :func:`quick_train`, :func:`evaluate`
and :func:`unigram_baseline`. The real trainer (checkpoints, resume, probes)
is elsewhere.
"""
from __future__ import annotations

import math
import time
from collections.abc import Iterable, Iterator

import numpy as np
import torch

from tanbias.errors import ParameterError

__all__ = ["KINDS", "SIZES", "MLM_PROBABILITY", "model_config", "make_model", "lm_batches",
           "mask_tokens", "batch_targets", "quick_train", "evaluate", "unigram_baseline",
           "token_counts"]

KINDS = ("encoder", "decoder")
MLM_PROBABILITY = 0.3
N_SPECIAL = 5          # <pad> <s> </s> <unk> <mask> have ids 0..4 (tanbias.lab.tokenizer)
PAD_ID, BOS_ID, EOS_ID, UNK_ID, MASK_ID = range(N_SPECIAL)

# Shape of the models and of their training batches. "small" is the lab's
# workhorse (400 steps, measured at 5-8 minutes on 2 CPU cores, learn well past
# the unigram baseline: see the module docstring); "smoke" does a
# forward/backward in milliseconds, for tests.
SIZES: dict[str, dict] = {
    "small": dict(hidden_size=192, num_hidden_layers=4, num_attention_heads=4,
                  intermediate_size=768, seq_len=128, batch_size=32, lr=2e-3),
    "smoke": dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=64, seq_len=32, batch_size=4, lr=3e-3),
}
_ARCH_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")


def _check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise ParameterError(f"kind={kind!r} is out of range: valid values are {KINDS}. "
                             "'encoder' is EuroBERT (MLM), 'decoder' is Llama (causal LM).")
    return kind


def model_config(kind: str = "encoder", size: str = "small", vocab_size: int = 8192, **overrides):
    """The ``EuroBertConfig`` or ``LlamaConfig`` of :func:`make_model`.

    Parameters
    ----------
    kind : {"encoder", "decoder"}
    size : {"small", "smoke"}
    vocab_size : int
        Size of the tokenizer's vocabulary (``len(tokenizer)``).
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

    _check_kind(kind)
    if size not in SIZES:
        raise ParameterError(f"size={size!r} is out of range: valid values are {tuple(SIZES)}. "
                             "Use 'smoke' for tests.")
    bad = set(overrides) - set(_ARCH_KEYS)
    if bad:
        raise ParameterError(f"overrides={sorted(bad)} are out of range: valid keys are {_ARCH_KEYS}.")
    if int(vocab_size) <= N_SPECIAL:
        raise ParameterError(f"vocab_size={vocab_size!r} is out of range: valid range is (5, inf). "
                             "Pass len(load_tokenizer()).")
    arch = {k: SIZES[size][k] for k in _ARCH_KEYS} | overrides
    common = dict(
        vocab_size=int(vocab_size), **arch,
        num_key_value_heads=arch["num_attention_heads"],
        head_dim=arch["hidden_size"] // arch["num_attention_heads"],
        hidden_act="silu", max_position_embeddings=512, initializer_range=0.02,
        rms_norm_eps=1e-5, rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        attention_bias=False, attention_dropout=0.0, mlp_bias=False,
        tie_word_embeddings=False, use_cache=False,
        pad_token_id=PAD_ID, bos_token_id=BOS_ID, eos_token_id=EOS_ID,
    )
    if kind == "encoder":
        return EuroBertConfig(**common, mask_token_id=MASK_ID)
    return LlamaConfig(**common)


def make_model(kind: str = "encoder", size: str = "small", vocab_size: int = 8192, seed: int = 0,
               **overrides) -> torch.nn.Module:
    """Build ``EuroBertForMaskedLM`` (encoder) or ``LlamaForCausalLM`` (decoder) from scratch.

    Parameters
    ----------
    kind : {"encoder", "decoder"}
    size : {"small", "smoke"}
        See :data:`SIZES`.
    vocab_size : int
    seed : int
        ``torch.manual_seed(seed)`` right before construction: the same seed gives
        the encoder and the decoder identical initial weights.
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

    config = model_config(kind, size, vocab_size, **overrides)
    config._attn_implementation = "sdpa"
    torch.manual_seed(int(seed))
    cls = EuroBertForMaskedLM if kind == "encoder" else LlamaForCausalLM
    model = cls(config)
    model.train()
    return model


# ---------------------------------------------------------------------------
# batches
# ---------------------------------------------------------------------------
def mask_tokens(input_ids: torch.Tensor, vocab_size: int, mlm_probability: float = MLM_PROBABILITY,
                generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT-style masking of the non-special tokens.

    Parameters
    ----------
    input_ids : LongTensor (batch, seq)
    vocab_size : int
    mlm_probability : float
        Share of the non-special tokens selected, in ``(0, 1)``.
    generator : torch.Generator, optional

    Returns
    -------
    (inputs, labels)
        ``inputs``: 80 % of the selected positions set to ``<mask>``, 10 % to a random
        non-special token, 10 % unchanged; ``labels``: the original ids at the selected
        positions, -100 elsewhere.

    Example
    -------
    >>> ids = torch.arange(5, 1005).reshape(10, 100)
    >>> x, y = mask_tokens(ids, 2000, 0.3, torch.Generator().manual_seed(0))
    >>> 0.25 < (y != -100).float().mean().item() < 0.35
    True
    """
    if not (0.0 < mlm_probability < 1.0):
        raise ParameterError(f"mlm_probability={mlm_probability!r} is out of range: valid range is (0, 1).")
    ids = input_ids.clone()
    labels = input_ids.clone()
    special = ids < N_SPECIAL
    p = torch.full(ids.shape, float(mlm_probability))
    selected = torch.bernoulli(p, generator=generator).bool() & ~special
    labels[~selected] = -100
    u = torch.rand(ids.shape, generator=generator)
    ids[selected & (u < 0.8)] = MASK_ID
    rand_pos = selected & (u >= 0.8) & (u < 0.9)
    ids[rand_pos] = torch.randint(N_SPECIAL, int(vocab_size), ids.shape, generator=generator)[rand_pos]
    return ids, labels


def lm_batches(kind: str, documents: Iterable, tokenizer, batch_size: int, seq_len: int,
               mlm_probability: float = MLM_PROBABILITY, seed: int = 0) -> Iterator[dict]:
    """Pack a stream of documents into fixed-length training batches.

    Each document becomes ``<s> tokens </s>``; documents are concatenated and cut
    into rows of ``seq_len`` tokens (no padding; a row may span documents, as in
    RoBERTa's FULL-SENTENCES packing).

    Parameters
    ----------
    kind : {"encoder", "decoder"}
        Encoder batches are masked (:func:`mask_tokens`); decoder labels are the inputs
        (the model shifts them).
    documents : iterable of str or of (lang, str)
        E.g. :func:`tanbias.lab.corpus.mixture`.
    tokenizer : transformers.PreTrainedTokenizerFast
    batch_size, seq_len : int
    mlm_probability : float
    seed : int
        Seed of the masking generator.

    Yields
    ------
    dict
        ``{"input_ids": LongTensor (batch, seq), "labels": LongTensor (batch, seq)}``.
    """
    _check_kind(kind)
    gen = torch.Generator().manual_seed(int(seed))
    n = int(batch_size) * int(seq_len)
    buf: list[int] = []
    pending: list[str] = []
    vocab_size = len(tokenizer)
    it = iter(documents)
    while True:
        while len(buf) < n:
            pending.clear()
            for doc in it:
                pending.append(doc[1] if isinstance(doc, tuple) else doc)
                if len(pending) == 64:
                    break
            if not pending:
                return
            for ids in tokenizer(pending, add_special_tokens=True)["input_ids"]:
                buf.extend(ids)
        block = torch.tensor(buf[:n], dtype=torch.long).view(int(batch_size), int(seq_len))
        del buf[:n]
        if kind == "encoder":
            inputs, labels = mask_tokens(block, vocab_size, mlm_probability, gen)
        else:
            inputs, labels = block, block.clone()
        yield {"input_ids": inputs, "labels": labels}


def batch_targets(kind: str, batch: dict) -> torch.Tensor:
    """The token ids the model is scored on in ``batch`` (1-D)."""
    labels = batch["labels"]
    if _check_kind(kind) == "decoder":
        labels = labels[:, 1:]
    return labels[labels != -100]


# ---------------------------------------------------------------------------
# training and evaluation (minimal: for sizing only)
# ---------------------------------------------------------------------------
def _kind_of(model) -> str:
    return "encoder" if type(model).__name__.startswith("EuroBert") else "decoder"


def _loss_and_correct(model, batch) -> tuple[torch.Tensor, int, int]:
    """Summed cross-entropy, number and number of correct top-1 predictions of the scored positions.

    The output layer is applied only to the scored positions (all but the last for
    the decoder, the masked ones for the encoder: "sparse prediction", as in
    ModernBERT); the loss equals the models' own ``labels=`` loss times the count.
    """
    hidden = model.model(input_ids=batch["input_ids"]).last_hidden_state
    labels = batch["labels"]
    if _kind_of(model) == "decoder":
        hidden, labels = hidden[:, :-1], labels[:, 1:]
    keep = labels != -100
    logits = model.lm_head(hidden[keep]).float()
    targets = labels[keep]
    loss_sum = torch.nn.functional.cross_entropy(logits, targets, reduction="sum")
    correct = int((logits.detach().argmax(-1) == targets).sum())
    return loss_sum, int(targets.numel()), correct


def quick_train(model, batches: Iterable[dict], steps: int, lr: float = 2e-3, warmup: int | None = None,
                time_limit: float | None = None, log_every: int = 50, weight_decay: float = 0.01,
                callback=None) -> list[dict]:
    """Minimal AdamW loop (linear warm-up, cosine decay to 10 %, clip 1.0).

    Parameters
    ----------
    model : EuroBertForMaskedLM or LlamaForCausalLM
    batches : iterable of dict
        From :func:`lm_batches`.
    steps : int
        Number of optimiser steps (the schedule's length).
    lr : float
    warmup : int, optional
        Warm-up steps; default ``max(1, steps // 20)``.
    time_limit : float, optional
        Stop after this many seconds even if ``steps`` are not done.
    log_every : int
    callback : callable(step, model), optional
        Called after each logged step (e.g. to evaluate).

    Returns
    -------
    list[dict]
        One record per logged step: ``step, loss`` (mean over scored tokens since the
        previous record, nats), ``tokens`` (input tokens so far), ``seconds``.
    """
    if int(steps) < 1:
        raise ParameterError(f"steps={steps!r} is out of range: valid range is [1, inf).")
    steps = int(steps)
    warmup = max(1, steps // 20) if warmup is None else int(warmup)

    def schedule(s):
        if s < warmup:
            return (s + 1) / warmup
        frac = (s - warmup) / max(1, steps - warmup)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(frac, 1.0)))

    decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and "embed" not in n]
    no_decay = [p for n, p in model.named_parameters() if not (p.ndim >= 2 and "embed" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=lr, betas=(0.9, 0.98), eps=1e-8)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
    model.train()
    history, t0, tokens = [], time.perf_counter(), 0
    acc_loss, acc_n = 0.0, 0
    for step, batch in enumerate(batches):
        if step >= steps:
            break
        loss_sum, n, _ = _loss_and_correct(model, batch)
        loss = loss_sum / max(n, 1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        tokens += batch["input_ids"].numel()
        acc_loss += float(loss_sum.detach())
        acc_n += n
        elapsed = time.perf_counter() - t0
        last = step + 1 == steps or (time_limit is not None and elapsed >= time_limit)
        if (step + 1) % log_every == 0 or last:
            history.append({"step": step + 1, "loss": acc_loss / max(acc_n, 1), "tokens": tokens,
                            "seconds": elapsed, "lr": sched.get_last_lr()[0]})
            acc_loss, acc_n = 0.0, 0
            if callback is not None:
                callback(step + 1, model)
        if last:
            break
    return history


@torch.no_grad()
def evaluate(model, batches: Iterable[dict]) -> dict:
    """Token-weighted cross-entropy (nats) and top-1 accuracy on the scored positions.

    Returns
    -------
    dict
        ``loss, perplexity, accuracy, tokens`` (number of scored positions).
    """
    was_training = model.training
    model.eval()
    total, count, correct = 0.0, 0, 0
    for batch in batches:
        loss_sum, n, c = _loss_and_correct(model, batch)
        total += float(loss_sum)
        count += n
        correct += c
    model.train(was_training)
    loss = total / max(count, 1)
    return {"loss": loss, "perplexity": math.exp(loss), "accuracy": correct / max(count, 1),
            "tokens": count}


def token_counts(token_ids, vocab_size: int) -> np.ndarray:
    """Counts of each id in ``token_ids`` (any iterable of ints / tensors), shape (vocab_size,)."""
    flat = [np.asarray(t, dtype=np.int64).ravel() for t in token_ids]
    return np.bincount(np.concatenate(flat) if flat else np.zeros(0, np.int64),
                       minlength=int(vocab_size)).astype(np.float64)


def unigram_baseline(train_counts: np.ndarray, eval_ids, alpha: float = 0.5,
                     exclude_special: bool = True) -> dict:
    """Cross-entropy of an add-``alpha`` unigram model on held-out tokens.

    Parameters
    ----------
    train_counts : ndarray (vocab_size,)
        Token counts on training data (:func:`token_counts`).
    eval_ids : array-like of int
        Held-out target ids (e.g. :func:`batch_targets` of validation batches).
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
