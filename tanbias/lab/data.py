"""The lab's data: the corpus split, training and held-out batches (chapters 7, 8).

* :func:`split` — the corpus' deterministic train/validation split, loaded
  (checksums verified) once per process;
* :func:`lm_batches` — documents packed into fixed-length rows, masked for the
  encoder (:func:`mask_tokens`), the decoder's labels = inputs;
* :func:`training_streams` — a run's training and validation batch streams;
* :func:`common_batches` — the one held-out text every run of a kind is
  measured on (chapter 8's radii).

The corpus (:mod:`tanbias.lab.corpus`) and the tokenizer
(:mod:`tanbias.lab.tokenizer`) are modules of this layer too.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import torch

from tanbias.errors import ParameterError
from tanbias.lab.config import MASK_ID, MECH_SEED, MLM_PROBABILITY, N_SPECIAL, SIZES, check_kind
from tanbias.lab.corpus import CORPUS_DIR, load_corpus, mixture, read_manifest, split_corpus

__all__ = ["split", "check_languages", "mask_tokens", "lm_batches", "batch_targets", "original_ids",
           "token_counts", "training_streams", "common_batches"]

_SPLIT_CACHE: dict = {}


def split(languages=None):
    """The corpus' train/validation split, loaded (and checksum-verified) once per process."""
    key = (str(CORPUS_DIR), None if languages is None else tuple(languages))
    if key not in _SPLIT_CACHE:
        _SPLIT_CACHE[key] = split_corpus(load_corpus(languages))
    return _SPLIT_CACHE[key]


def check_languages(languages) -> list | None:
    """``languages`` if the corpus has every one of them (None: all), else a ParameterError."""
    if languages is None:
        return None
    avail = sorted(e["language"] for e in read_manifest()["files"].values())
    bad = [x for x in languages if x not in avail]
    if bad or not languages:
        raise ParameterError(f"languages={list(languages)!r} is out of range: valid values are subsets "
                             f"of {avail}. Pass None for all languages.")
    return list(languages)


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
    check_kind(kind)
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
    if check_kind(kind) == "decoder":
        labels = labels[:, 1:]
    return labels[labels != -100]


def token_counts(token_ids, vocab_size: int) -> np.ndarray:
    """Counts of each id in ``token_ids`` (any iterable of ints / tensors), shape (vocab_size,)."""
    flat = [np.asarray(t, dtype=np.int64).ravel() for t in token_ids]
    return np.bincount(np.concatenate(flat) if flat else np.zeros(0, np.int64),
                       minlength=int(vocab_size)).astype(np.float64)


def original_ids(batch) -> torch.Tensor:
    """The uncorrupted token at every position (an encoder's inputs carry ``<mask>``/random ids)."""
    ids, labels = batch["input_ids"], batch["labels"]
    return torch.where(labels != -100, labels, ids)


def training_streams(cfg: dict, tok):
    """The (training, validation) batch iterators of a validated run config."""
    size = SIZES[cfg["size"]]
    train_docs, valid_docs = split(cfg["languages"])
    train = lm_batches(cfg["kind"], mixture(train_docs, cfg["regime"], seed=cfg["seed"]), tok,
                       size["batch_size"], size["seq_len"], seed=cfg["seed"])
    valid = lm_batches(cfg["kind"], mixture(valid_docs, cfg["regime"], seed=cfg["seed"] + 10_000),
                       tok, size["batch_size"], size["seq_len"], seed=cfg["seed"] + 10_000)
    return train, valid


def common_batches(cfg: dict, tok, n_batches: int) -> list[dict]:
    """The held-out text every run of a kind is measured on: natural mixture, seed :data:`~tanbias.lab.config.MECH_SEED`."""
    size = SIZES[cfg["size"]]
    _, valid_docs = split(cfg["languages"])
    it = lm_batches(cfg["kind"], mixture(valid_docs, "natural", seed=MECH_SEED), tok,
                    size["batch_size"], size["seq_len"], seed=MECH_SEED)
    return [next(it) for _ in range(n_batches)]
