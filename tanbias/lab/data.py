"""The lab's data: the corpus split, a run's data stream, training and held-out batches (chapters 7, 8).

* the corpus' deterministic train/validation split comes from
  :func:`tanbias.lab.corpus.split` (loaded, checksums verified, once per process);
* :func:`lm_batches` — documents packed into fixed-length rows, masked for the
  encoder (:func:`mask_tokens`), the decoder's labels = inputs;
* :class:`Stream` — a run's data stream, derived once from its config and passed on:
  its documents, language mixture, expected token frequencies, the types the direct
  knob keeps (:func:`keep_probabilities`, chapter 10), the aliasing knob's map
  (chapter 11, :mod:`tanbias.lab.aliasing`; :func:`alias_batch` shows a batch
  through it), and every batch stream of the run: training, validation, the
  probe-eval text, the common held-out text every run of a kind is measured on
  (chapter 8's radii), the counts of its training targets;
* :func:`heldout_text`, :func:`heldout_batches` — the one held-out-text builder.

The corpus (:mod:`tanbias.lab.corpus`) and the tokenizer
(:mod:`tanbias.lab.tokenizer`) are modules of this layer too.
"""
from __future__ import annotations

import io
import itertools
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import torch

from tanbias._checks import check_choice, check_int, check_real
from tanbias.errors import ParameterError
from tanbias.lab.aliasing import AliasMap, alias_counts
from tanbias.lab.config import BOS_ID, CORRUPTIONS, MASK_ID, MECH_SEED, MLM_PROBABILITY, N_SPECIAL, REGIMES, check_kind
from tanbias.lab.corpus import CORPUS_DIR, mixture, mixture_probabilities, read_manifest, split
from tanbias.lab.runs import atomic_write_bytes
from tanbias.lab.tokenizer import TOKENIZER_PATH, VOCAB_SIZE, load_tokenizer

if TYPE_CHECKING:
    import transformers

__all__ = ["check_languages", "special_ids", "mask_tokens", "lm_batches", "batch_targets", "original_ids",
           "token_counts", "keep_probabilities", "alias_batch", "ALIAS_SEED_OFFSET", "VALIDATION_SEED_OFFSET",
           "PROBE_EVAL_SEED", "Stream", "HELDOUT_ORDERS", "encode_documents", "heldout_text",
           "heldout_batches"]


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
def special_ids(tokenizer) -> list[int]:
    """The ids of ``tokenizer``'s special tokens, sorted (the lab's: ``0 .. N_SPECIAL - 1``)."""
    return sorted({int(i) for i in tokenizer.all_special_ids if i is not None})


def mask_tokens(input_ids: torch.Tensor, vocab_size: int, mlm_probability: float = MLM_PROBABILITY,
                generator: torch.Generator | None = None, special=None,
                mask_id: int = MASK_ID, corruption: str = "mask") -> tuple[torch.Tensor, torch.Tensor]:
    """BERT-style masking of the non-special tokens, for the lab's tokenizer or any other.

    Parameters
    ----------
    input_ids : LongTensor (batch, seq)
    vocab_size : int
    mlm_probability : float
        Share of the non-special tokens selected, in ``(0, 1)``.
    generator : torch.Generator, optional
    special : sequence of int, optional
        The special ids (never selected, never drawn as random replacements); default the
        lab tokenizer's ``0 .. N_SPECIAL - 1``. :func:`special_ids` gives another tokenizer's.
    mask_id : int
        The mask token's id (the lab's :data:`~tanbias.lab.config.MASK_ID` by default).
    corruption : {"mask", "random"}
        What the positions that would show ``mask_id`` show (:data:`~tanbias.lab.config.CORRUPTIONS`):
        ``"mask"``, the mask token (BERT's rule); ``"random"``, a non-special token drawn uniformly,
        so that no input row is shared by every corrupted position. Both draw the same random
        numbers: with one generator state the two select the same positions, give them the same
        labels and the same replacement tokens, and differ only where one shows ``mask_id``.

    Returns
    -------
    (inputs, labels)
        ``inputs``: 80 % of the selected positions set to ``mask_id`` (or, with ``"random"``, to a
        random non-special token), 10 % to a random non-special token, 10 % unchanged;
        ``labels``: the original ids at the selected positions, -100 elsewhere.

    Example
    -------
    >>> ids = torch.arange(5, 1005).reshape(10, 100)
    >>> x, y = mask_tokens(ids, 2000, 0.3, torch.Generator().manual_seed(0))
    >>> 0.25 < (y != -100).float().mean().item() < 0.35
    True
    """
    if not (0.0 < mlm_probability < 1.0):
        raise ParameterError(f"mlm_probability={mlm_probability!r} is out of range: valid range is (0, 1).")
    check_choice("corruption", corruption, CORRUPTIONS)
    special = torch.arange(N_SPECIAL) if special is None else torch.as_tensor(list(special), dtype=torch.long)
    normal = torch.as_tensor(np.setdiff1d(np.arange(int(vocab_size)), special.numpy()), dtype=torch.long)
    ids = input_ids.clone()
    labels = input_ids.clone()
    p = torch.full(ids.shape, float(mlm_probability))
    selected = torch.bernoulli(p, generator=generator).bool() & ~torch.isin(ids, special)
    labels[~selected] = -100
    u = torch.rand(ids.shape, generator=generator)
    mask_pos = selected & (u < 0.8)
    if corruption == "mask":
        ids[mask_pos] = int(mask_id)
    rand_pos = selected & (u >= 0.8) & (u < 0.9)
    drawn = normal[torch.randint(0, len(normal), ids.shape, generator=generator)]
    ids[rand_pos] = drawn[rand_pos]
    if corruption == "random":
        # the masked positions' replacements come from the same draw: nothing else is drawn, so the
        # selection, the labels and every later batch are those of the same stream with <mask>
        ids[mask_pos] = drawn[mask_pos]
    return ids, labels


def lm_batches(kind: str, documents: Iterable, tokenizer, batch_size: int, seq_len: int,
               mlm_probability: float = MLM_PROBABILITY, seed: int = 0,
               keep: np.ndarray | None = None, aliases: AliasMap | None = None,
               corruption: str = "mask") -> Iterator[dict]:
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
        Seed of the masking generator (and of the subsampling one, ``seed + 1``).
    keep : array (vocab,), optional
        Probability that an occurrence of each type is kept (:func:`keep_probabilities`);
        dropped occurrences are cut out of the text before packing, so rows stay
        full. Special tokens are always kept. None keeps everything (and draws nothing,
        so the stream is bit-identical to one without the option).
    aliases : AliasMap, optional
        Show every batch through the aliasing knob's map (:func:`alias_batch`, the draws
        seeded by ``seed + ALIAS_SEED_OFFSET``); None draws nothing.
    corruption : {"mask", "random"}
        An encoder's masked positions: :func:`mask_tokens`' ``corruption``.

    Yields
    ------
    dict
        ``{"input_ids": LongTensor (batch, seq), "labels": LongTensor (batch, seq)}``.
    """
    check_kind(kind)
    gen = torch.Generator().manual_seed(int(seed))
    alias_gen = torch.Generator().manual_seed(int(seed) + ALIAS_SEED_OFFSET) if aliases is not None else None
    sub = None
    if keep is not None:
        keep = np.asarray(keep, np.float64).copy()
        keep[:N_SPECIAL] = 1.0
        sub = np.random.default_rng(int(seed) + 1)
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
            encoded = tokenizer(pending, add_special_tokens=True)["input_ids"]
            if sub is None:
                for ids in encoded:
                    buf.extend(ids)
            else:
                flat = np.fromiter((i for ids in encoded for i in ids), np.int64)
                buf.extend(flat[sub.random(flat.size) < keep[flat]].tolist())
        block = torch.tensor(buf[:n], dtype=torch.long).view(int(batch_size), int(seq_len))
        del buf[:n]
        if kind == "encoder":
            inputs, labels = mask_tokens(block, vocab_size, mlm_probability, gen, corruption=corruption)
        else:
            inputs, labels = block, block.clone()
        batch = {"input_ids": inputs, "labels": labels}
        yield batch if aliases is None else alias_batch(batch, block, aliases, alias_gen)


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
    """The uncorrupted token at every position (an encoder's inputs carry ``<mask>``/random ids; an
    aliased batch's inputs carry alias ids, and its ``"types"`` are the text's types)."""
    if "types" in batch:
        return batch["types"]
    ids, labels = batch["input_ids"], batch["labels"]
    return torch.where(labels != -100, labels, ids)


_COUNT_CACHE: dict = {}
#: the training split's token counts per language, derived from the corpus and the tokenizer;
#: rebuilt automatically (about 10 s) when missing or when either of them changed
COUNTS_PATH = TOKENIZER_PATH.parent / "language_counts.npz"


def _count_key() -> str:
    """SHA-256 of the corpus manifest and the tokenizer: what the counts derive from."""
    import hashlib

    h = hashlib.sha256()
    for path in (CORPUS_DIR / "manifest.json", TOKENIZER_PATH):
        h.update(path.read_bytes())
    return h.hexdigest()


def _stored_counts() -> dict | None:
    """Every language's counts as :data:`COUNTS_PATH` holds them, or None when the file is missing,
    unreadable or stale (another corpus or tokenizer)."""
    if not COUNTS_PATH.is_file():
        return None
    try:
        with np.load(COUNTS_PATH) as z:
            if str(z["key"]) == _count_key():
                return {str(lang): (z["counts"][i], int(z["docs"][i])) for i, lang in enumerate(z["languages"])}
    except (OSError, ValueError, KeyError):
        pass                           # unreadable: recomputed (and, for the whole corpus, rewritten)
    return None


def _language_counts(languages, tok) -> dict:
    """Per language of the training split: (token counts incl. specials, number of documents).

    Cached per process and, for the whole corpus, in :data:`COUNTS_PATH` (keyed by
    the corpus manifest and the tokenizer, so a stale file is recomputed, never used).
    A language's counts do not depend on the others (the split hashes each document,
    :func:`~tanbias.lab.corpus.split_corpus`), so a run on some languages reads theirs from
    that file too.
    """
    key = (str(CORPUS_DIR), None if languages is None else tuple(languages), len(tok))
    if key in _COUNT_CACHE:
        return _COUNT_CACHE[key]
    stored = _stored_counts() if len(tok) == VOCAB_SIZE else None
    if stored is not None and (languages is None or set(languages) <= set(stored)):
        _COUNT_CACHE[key] = stored if languages is None else {lang: stored[lang] for lang in languages}
        return _COUNT_CACHE[key]
    disk = languages is None and len(tok) == VOCAB_SIZE
    train_docs, _ = split(languages)
    out = {}
    for lang, docs in train_docs.items():
        ids = tok(docs, add_special_tokens=True)["input_ids"]
        out[lang] = (np.bincount(np.fromiter((i for x in ids for i in x), np.int64), minlength=len(tok)),
                     len(docs))
    if disk:
        buf = io.BytesIO()
        np.savez_compressed(buf, key=_count_key(), languages=np.array(list(out)),
                            counts=np.stack([c for c, _ in out.values()]),
                            docs=np.array([n for _, n in out.values()]))
        try:
            atomic_write_bytes(COUNTS_PATH, buf.getvalue())
        except OSError:
            pass                       # a read-only checkout: keep the counts in memory
    _COUNT_CACHE[key] = out
    return out


def keep_probabilities(freq, flatten: float, f0: float) -> np.ndarray:
    """The direct knob: keep an occurrence of a type of frequency ``f`` with ``min(1, (f / f0) ** -flatten)``.

    Types more frequent than ``f0`` end with frequency ``∝ f ** (1 - flatten) * f0 ** flatten``
    (``flatten = 1``: all of them at ``f0``, a flat head); rarer types are untouched.

    >>> keep_probabilities([0.1, 1e-3, 1e-5], 0.5, 1e-3).round(3).tolist()
    [0.1, 1.0, 1.0]
    """
    flatten = check_real("flatten", flatten, 0, 1, lo_open=False, hi_open=False)
    f0 = check_real("flatten_f0", f0, 0, 1)
    f = np.asarray(freq, np.float64)
    with np.errstate(divide="ignore"):
        return np.minimum(1.0, (np.maximum(f, 1e-300) / f0) ** -flatten)


#: the aliases of a stream seeded by ``seed`` are drawn from ``seed + ALIAS_SEED_OFFSET`` (its
#: masks use ``seed``, its subsampling ``seed + 1``)
ALIAS_SEED_OFFSET = 2


def alias_batch(batch: dict, types: torch.Tensor, aliases: AliasMap, generator: torch.Generator) -> dict:
    """A batch shown through the aliasing knob: its inputs as alias ids, its labels unchanged.

    ``types`` is the uncorrupted text of the batch (``(batch, seq)`` type ids). The text is
    aliased once, one uniform draw per position (``"aliased"``); where the batch's input is
    the text itself, the model is shown that alias; where an encoder's input was corrupted
    (``<mask>``, never aliased, or a random type), the corrupted input is aliased by a second
    draw. The labels (the types at the scored positions, or the decoder's whole text) are
    left as they are, so the targets and the loss stay in the tokenizer's vocabulary.

    Returns
    -------
    dict
        ``input_ids`` (alias ids), ``labels``, ``types`` (= ``types``) and ``aliased``.

    Example
    -------
    >>> m = AliasMap.from_counts([1, 1, 1, 1, 1, 4, 1])
    >>> t = torch.tensor([[5, 6, 5, 5, 6, 5]])
    >>> b = alias_batch({"input_ids": t, "labels": t.clone()}, t, m, torch.Generator().manual_seed(0))
    >>> bool(torch.equal(b["labels"], t)), set(b["input_ids"].ravel().tolist()) - {6} <= set(m.aliases(5))
    (True, True)
    """
    shown = aliases.apply(types, generator)
    inputs = batch["input_ids"]
    corrupted = aliases.apply(inputs, generator)
    return {**batch, "input_ids": torch.where(inputs == types, shown, corrupted), "types": types,
            "aliased": shown}


#: a run's validation stream is seeded by its seed plus this offset (its training stream by the seed)
VALIDATION_SEED_OFFSET = 10_000
#: the seed of the held-out stream a run scores at its probe steps: one seed for every run, so the
#: seeds of a design are scored on one text (it is the validation seed of seed 0, whose probe-step
#: scores keep their first batch)
PROBE_EVAL_SEED = 0 + VALIDATION_SEED_OFFSET


@dataclass(frozen=True, eq=False)
class Stream:
    """A run's data stream: derived once from its config (:meth:`from_config`) and passed on.

    The one place a run config becomes data. It holds the config's data settings and
    derives from them, each at most once and on first use: the documents (the
    corpus split of the run's languages), the expected frequency of every type in the
    training text (:attr:`frequencies`), the direct knob's keep probabilities
    (:attr:`keep`), the aliasing knob's map (:attr:`aliases`). Every batch stream of
    the run is drawn from it: :meth:`training`, :meth:`validation`, the probe-eval
    text (:meth:`probe_eval`), the common held-out text (:meth:`common`); and the
    counts of the run's training targets (:meth:`target_counts`). Each call of a
    batch method starts its stream from the beginning.

    Example
    -------
    >>> from tanbias.lab.config import RunConfig
    >>> cfg = RunConfig.from_dict({"name": "x", "kind": "decoder", "size": "smoke", "languages": ["pt"],
    ...                            "alias": 0.5, "alias_f0": 1e-3})
    >>> s = Stream.from_config(cfg)
    >>> tuple(next(s.training())["input_ids"].shape), s.n_inputs > len(s.tokenizer)
    ((4, 32), True)
    >>> round(float(s.frequencies.sum()), 6), s.keep is None
    (1.0, True)
    """
    kind: str
    seed: int
    batch_size: int
    seq_len: int
    #: the corpus' languages the run reads (None: all)
    languages: tuple[str, ...] | None
    #: the keyword arguments of :func:`~tanbias.lab.corpus.mixture`: ``regime``, ``temperature``, ``weights``
    mixture: dict
    #: the direct knob: exponent and threshold frequency (:func:`keep_probabilities`)
    flatten: float
    flatten_f0: float
    #: the aliasing knob: exponent and threshold frequency (:func:`~tanbias.lab.aliasing.alias_counts`)
    alias: float
    alias_f0: float
    tokenizer: transformers.PreTrainedTokenizerFast
    #: an encoder's masked positions (:data:`~tanbias.lab.config.CORRUPTIONS`): the mask token, or a random token
    corruption: str = "mask"

    @classmethod
    def from_config(cls, cfg, tok=None) -> "Stream":
        """The stream of the run config ``cfg`` (:class:`~tanbias.lab.config.RunConfig`) under the
        tokenizer ``tok`` (default the lab's, :func:`~tanbias.lab.tokenizer.load_tokenizer`)."""
        return cls(kind=check_kind(cfg.kind), seed=int(cfg.seed), batch_size=cfg.size.batch_size,
                   seq_len=cfg.size.seq_len, languages=None if cfg.languages is None else tuple(cfg.languages),
                   mixture={"regime": cfg.regime, "temperature": cfg.mixture_temperature,
                            "weights": cfg.language_weights},
                   flatten=cfg.flatten, flatten_f0=cfg.flatten_f0, alias=cfg.alias, alias_f0=cfg.alias_f0,
                   tokenizer=load_tokenizer() if tok is None else tok, corruption=cfg.corruption)

    # ------------------------------------------------------------------ what the stream is
    @cached_property
    def documents(self) -> tuple[dict, dict]:
        """The (training, validation) documents per language: :func:`~tanbias.lab.corpus.split`."""
        return split(self.languages)

    @cached_property
    def frequencies(self) -> np.ndarray:
        """Expected relative frequency of every token id in the training text, before subsampling.

        Exact in expectation: the per-language token counts of the training split,
        weighted by the probability that a drawn document is in that language over
        the language's number of documents (expected tokens per draw; ``<s>``/``</s>``
        included), as :func:`~tanbias.lab.corpus.mixture` draws them. Read-only; the
        counts behind it are cached per process.
        """
        draws = mixture_probabilities(self.documents[0], **self.mixture)["draws"]
        counts = _language_counts(self.languages, self.tokenizer)
        freq = np.zeros(len(self.tokenizer), np.float64)
        for lang, p in draws.items():
            c, n_docs = counts[lang]
            freq += p * c / n_docs
        freq /= freq.sum()
        freq.setflags(write=False)
        return freq

    @cached_property
    def keep(self) -> np.ndarray | None:
        """The direct knob's keep probability of every type (:func:`keep_probabilities` of
        :attr:`frequencies`; read-only), None when ``flatten == 0`` (nothing is subsampled).
        The batches keep every special token whatever its value here (:func:`lm_batches`)."""
        if self.flatten <= 0:
            return None
        keep = keep_probabilities(self.frequencies, self.flatten, self.flatten_f0)
        keep.setflags(write=False)
        return keep

    @cached_property
    def aliases(self) -> AliasMap | None:
        """The aliasing knob's map: :func:`~tanbias.lab.aliasing.alias_counts` of :attr:`frequencies`
        (before any subsampling) with ``alias`` and ``alias_f0``; None when ``alias == 0``. A function
        of the corpus, the tokenizer, the mixture and the two settings, so a run, its resume and its
        analysis rebuild the same map."""
        if self.alias == 0:
            return None
        return AliasMap.from_counts(alias_counts(self.frequencies, self.alias, self.alias_f0))

    @property
    def n_inputs(self) -> int:
        """Rows of the run's input embedding: the vocabulary, plus an aliased run's alias rows."""
        return len(self.tokenizer) if self.aliases is None else self.aliases.n_inputs

    # ------------------------------------------------------------------ its batches
    def _batches(self, documents: dict, seed: int) -> Iterator[dict]:
        """Batches of ``documents`` in the run's mixture, subsampling and aliasing, ``seed`` seeding
        the document order, the masks, the subsampling and the alias draws."""
        return lm_batches(self.kind, mixture(documents, seed=seed, **self.mixture), self.tokenizer,
                          self.batch_size, self.seq_len, seed=seed, keep=self.keep, aliases=self.aliases,
                          corruption=self.corruption)

    def training(self) -> Iterator[dict]:
        """The run's training batches, from the first (endless; :func:`lm_batches`)."""
        return self._batches(self.documents[0], self.seed)

    def validation(self, seed: int | None = None) -> Iterator[dict]:
        """Batches of the held-out documents in the run's mixture and, when ``flatten > 0``, its
        subsampling (the validation text is then distributed as the training text, so the
        generalisation gap compares like with like); seeded by ``seed``, default the run's
        seed plus :data:`VALIDATION_SEED_OFFSET`."""
        return self._batches(self.documents[1], self.seed + VALIDATION_SEED_OFFSET if seed is None else int(seed))

    def probe_eval(self, n_batches: int) -> list[dict]:
        """The held-out batches a run scores at every probe step (``cfg.probe_eval_batches`` of them).

        Consecutive batches of one validation stream in the run's own mixture and
        subsampling (:meth:`validation`), seeded by :data:`PROBE_EVAL_SEED` rather than
        by the run's seed: every run of a design with the same data settings (the seeds
        of a dose level, say) is scored on the same text, with the same masks for an
        encoder.

        Runs trained before this method existed (every committed dose run) scored the
        *first* batch of their own seed's validation stream ``probe_eval_batches`` times.
        """
        stream = self.validation(PROBE_EVAL_SEED)
        return [next(stream) for _ in range(int(n_batches))]

    def common(self, n_batches: int) -> list[dict]:
        """The held-out text every run of a kind is measured on: the natural mixture, seed
        :data:`~tanbias.lab.config.MECH_SEED`, in the run's batch shape (:func:`heldout_batches`).

        An aliased run (``alias > 0``) is shown the same text through its alias map
        (:func:`alias_batch`, the draws seeded by ``MECH_SEED + ALIAS_SEED_OFFSET``): the batches
        then carry ``types`` and ``aliased`` too."""
        batches = heldout_batches(self.tokenizer, self.kind, int(n_batches) * self.batch_size * self.seq_len,
                                  self.seq_len, seed=MECH_SEED, batch_size=self.batch_size,
                                  languages=None if self.languages is None else list(self.languages),
                                  corruption=self.corruption)
        if self.aliases is None:
            return batches
        gen = torch.Generator().manual_seed(MECH_SEED + ALIAS_SEED_OFFSET)
        return [alias_batch(b, original_ids(b), self.aliases, gen) for b in batches]

    def target_counts(self, steps: int) -> np.ndarray:
        """How often each type is a target of the run's first ``steps`` training steps.

        The targets are the ids the loss is scored on (:func:`batch_targets`: a
        decoder's every position but each row's first, an encoder's masked positions;
        an aliased run's targets are types), read from a fresh copy of the training
        stream, so the count consumes none of the run's randomness: the unigram of the
        run's own training targets, of which the unigram output head's initial bias is the
        log, add-one smoothed (``output_bias="unigram"``: :func:`tanbias.lab.models.log_unigram`
        of ``target_counts(steps)``).

        Returns
        -------
        ndarray of int64, shape (vocab,)

        Example
        -------
        >>> from tanbias.lab.config import RunConfig
        >>> s = Stream.from_config(RunConfig.from_dict({"name": "x", "kind": "decoder", "size": "smoke",
        ...                                             "languages": ["pt"]}))
        >>> c = s.target_counts(2)
        >>> bias = np.log((c + 1) / (c.sum() + c.size))      # the add-one-smoothed unigram, as logits
        >>> int(c.sum()) == 2 * s.batch_size * (s.seq_len - 1), bias.shape
        (True, (8192,))
        """
        steps = check_int("steps", steps, lo=0)
        counts = np.zeros(len(self.tokenizer), np.int64)
        batches = self.training()
        for _ in range(steps):
            counts += np.bincount(batch_targets(self.kind, next(batches)).numpy(), minlength=counts.size)
        return counts


# ---------------------------------------------------------------------------
# held-out text
# ---------------------------------------------------------------------------
#: the two orders in which :func:`heldout_text` reads the held-out documents
HELDOUT_ORDERS = ("mixture", "round_robin")


def _round_robin(valid: dict, languages, rng) -> Iterator[tuple[str, str]]:
    """Each language's documents in a seeded order, one document per language in turn, until all are read."""
    order = {lang: rng.permutation(len(valid[lang])) for lang in languages}
    for i in itertools.count():
        more = False
        for lang in languages:
            if i < len(order[lang]):
                more = True
                yield lang, valid[lang][order[lang][i]]
        if not more:
            return


def encode_documents(tokenizer, docs, special_tokens: bool = True) -> list[list[int]]:
    """Each document's token ids as :func:`heldout_text` reads them.

    With ``special_tokens`` the tokenizer's own special tokens, and its end-of-text token
    at the end of every document that does not end with it already (documents stay
    separated once they are cut into rows); without, the text alone.

    Example
    -------
    >>> from tanbias.lab.tokenizer import load_tokenizer
    >>> tok = load_tokenizer()
    >>> [x[-1] == tok.eos_token_id for x in encode_documents(tok, ["a b", "c"])]
    [True, True]
    """
    encoded = tokenizer(list(docs), add_special_tokens=special_tokens, verbose=False)["input_ids"]
    eos = tokenizer.eos_token_id if special_tokens else None
    return [[*x, int(eos)] if eos is not None and (not x or x[-1] != eos) else list(x) for x in encoded]


def heldout_text(tokenizer, n_tokens: int, seq_len: int, seed: int = 0, languages=None,
                 order: str = "mixture", regime: str = "natural", special_tokens: bool = True,
                 half: int | None = None, documents: dict | None = None) -> dict:
    """Held-out documents of the corpus (its validation split), tokenised and cut into rows.

    The one builder of held-out text: the lab's common text (:meth:`Stream.common`),
    the checkpoint probe's evaluation text (:func:`heldout_batches`) and the released
    models' text (:mod:`tanbias.lab.analysis.pretrained`) all come from it. The
    documents are never in any of *our* training streams; a released model's own
    training data are unknown.

    Parameters
    ----------
    tokenizer : transformers tokenizer
        Any model's own (the lab's or a released one).
    n_tokens : int
        Tokens wanted, rounded up to whole rows.
    seq_len : int
    seed : int
        Seeds the document order.
    languages : list of str, optional
        The languages read (None: all). With ``order="round_robin"`` their order is the
        order in which they take turns.
    order : {"mixture", "round_robin"}
        ``"mixture"``: the endless stream of :func:`~tanbias.lab.corpus.mixture` in
        ``regime``; ``"round_robin"``: each language's documents in a seeded order, one
        per language in turn, until ``n_tokens`` are read (a ParameterError if the
        documents run out).
    regime : {"natural", "balanced"}
        The mixture of ``order="mixture"``.
    special_tokens : bool
        Tokenise with the tokenizer's special tokens, and end every document with its
        end-of-text token when it adds none (so documents stay separated); False reads
        the text alone.
    half : {0, 1}, optional
        Read only the even-numbered (0) or odd-numbered (1) held-out documents of each
        language: two texts with no document in common (a proxy fitted on one, tested on
        the other).
    documents : dict, optional
        ``{language: [text, ...]}``: documents of one's own, read instead of the corpus'
        validation split (``languages`` then defaults to its keys).

    Returns
    -------
    dict
        ``input_ids`` (rows, seq_len) int64 array; ``language`` (rows, seq_len), the
        language of each token's document; ``document`` (rows, seq_len), the number of
        each token's document in reading order (0, 1, ...: the unit a bootstrap over
        documents resamples); ``languages``; ``documents`` (how many documents the rows
        hold).

    Example
    -------
    >>> from tanbias.lab.tokenizer import load_tokenizer
    >>> t = heldout_text(load_tokenizer(), 300, 64, seed=1)
    >>> t["input_ids"].shape, bool(t["input_ids"][0, 0] == BOS_ID)
    ((5, 64), True)
    """
    n_tokens = check_int("n_tokens", n_tokens, lo=1, hint="Pass e.g. 4096.")
    seq_len = check_int("seq_len", seq_len, lo=2, hint="Pass e.g. 128.")
    seed = check_int("seed", seed, lo=0)
    check_choice("order", order, HELDOUT_ORDERS)
    check_choice("regime", regime, REGIMES)
    if documents is None:
        _, valid = split(languages)
    else:
        missing = [lang for lang in (languages or ()) if lang not in documents]
        if missing or not documents:
            raise ParameterError(f"languages={languages!r} is out of range for the documents given: valid "
                                 f"values are subsets of {sorted(documents)}. Pass documents in each language.")
        valid = {lang: list(documents[lang]) for lang in (languages or documents)}
    languages = list(valid) if languages is None else list(languages)
    if half is not None:
        half = check_int("half", half, lo=0, hi=1, hint="0: the even-numbered documents, 1: the odd ones.")
        valid = {lang: docs[half::2] for lang, docs in valid.items()}
    if order == "mixture":
        docs = mixture(valid, regime, seed=seed)
    else:
        docs = _round_robin(valid, languages, np.random.default_rng(seed))
    need = math.ceil(n_tokens / seq_len) * seq_len
    ids: list[int] = []
    langs: list[str] = []
    doc_of: list[int] = []
    used = 0
    while len(ids) < need:
        chunk = list(itertools.islice(docs, 64))
        if not chunk:
            source = "held-out documents" if documents is None else "documents given"
            raise ParameterError(f"n_tokens={n_tokens} is out of range: the {source} of "
                                 f"{languages} hold only {len(ids)} tokens. Pass fewer tokens.")
        encoded = encode_documents(tokenizer, [doc for _, doc in chunk], special_tokens)
        for (lang, _), x in zip(chunk, encoded):
            if len(ids) >= need:
                break
            ids += x
            langs += [lang] * len(x)
            doc_of += [used] * len(x)
            used += 1
    return {"input_ids": np.asarray(ids[:need], np.int64).reshape(-1, seq_len),
            "language": np.asarray(langs[:need]).reshape(-1, seq_len),
            "document": np.asarray(doc_of[:need], np.int64).reshape(-1, seq_len), "languages": languages,
            "documents": used}


def heldout_batches(tokenizer, kind: str, n_tokens: int, seq_len: int, seed: int = 0,
                    regime: str = "natural", batch_size: int = 8, languages=None, half: int | None = None,
                    order: str = "mixture", documents: dict | None = None, corruption: str = "mask") -> list[dict]:
    """Held-out batches under a model's own tokenizer: :func:`heldout_text` (mixture order, with
    special tokens), masked for an encoder as the lab's training batches are.

    Encoder batches are masked one after the other with one generator seeded by
    ``seed`` (:func:`mask_tokens` with the tokenizer's own special and mask ids);
    decoder labels are the inputs (the model shifts them). The batches are a
    function of ``(tokenizer, kind, n_tokens, seq_len, seed, regime, batch_size, languages,
    half, order, documents, corruption)`` (``half`` .. ``documents`` as :func:`heldout_text`;
    ``corruption`` as :func:`mask_tokens`: the same positions and labels either way).

    Returns
    -------
    list[dict]
        ``{"input_ids", "labels"}``, LongTensors ``(rows, seq_len)``, ``batch_size`` rows each
        (the last one may have fewer).

    Raises
    ------
    ParameterError
        Out-of-range sizes, or an encoder whose tokenizer has no mask token.
    """
    check_kind(kind)
    batch_size = check_int("batch_size", batch_size, lo=1)
    if kind == "encoder" and tokenizer.mask_token_id is None:
        raise ParameterError(f"kind='encoder' is out of range for a tokenizer without a mask token "
                             f"({type(tokenizer).__name__}): valid range is {{'decoder'}}. Masked-LM "
                             "checkpoints ship a tokenizer with a mask token.")
    block = torch.as_tensor(heldout_text(tokenizer, n_tokens, seq_len, seed=seed, languages=languages,
                                         regime=regime, half=half, order=order,
                                         documents=documents)["input_ids"])
    gen = torch.Generator().manual_seed(int(seed))
    out = []
    for i in range(0, block.shape[0], batch_size):
        rows = block[i:i + batch_size]
        if kind == "encoder":
            inputs, labels = mask_tokens(rows, len(tokenizer), MLM_PROBABILITY, gen,
                                         special=special_ids(tokenizer), mask_id=tokenizer.mask_token_id,
                                         corruption=corruption)
        else:
            inputs, labels = rows, rows.clone()
        out.append({"input_ids": inputs, "labels": labels})
    return out
