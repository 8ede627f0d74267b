"""The lab's shared tokenizer: one byte-level BPE over all corpus languages.

Shipped as ``data/tokenizer/tokenizer.json``; rebuilt (bit for bit) by::

    python -m tanbias.lab.tokenizer train          # writes data/tokenizer/tokenizer.json
    python -m tanbias.lab.tokenizer train --check  # retrains in memory, compares with the shipped file

Training data: a language-balanced sample of the *training* split of the corpus
(:func:`tanbias.lab.corpus.split_corpus`, 5 % held out by hash), the same number
of characters per language, documents picked by a seeded permutation. Balancing
keeps the small languages (Portuguese, Spanish) from being split into many more
tokens per word than English or German, and Cyrillic from being split into bytes.

Vocabulary: 8192 = 5 special tokens + 256 byte symbols + 7931 merges. Why 8192:
the models are small (hidden size 128-256); at 8192 the embedding and output
matrices (2 x 8192 x d) are about as large as the transformer blocks, whereas at
32k they would hold over 80 % of the parameters and most of the CPU time (the
output softmax), and many of their rows would see a token only a handful of
times in a 10-minute run. 8192 still gives 1.9-2.6 tokens per word (see
``data/tokenizer/README.md``), a Zipfian token distribution, and whole-word
tokens for the frequent words of every language.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

from tanbias.errors import CorruptFileError, ParameterError
from tanbias.lab.config import SPECIAL_TOKENS
from tanbias.lab.corpus import load_corpus, split_corpus

__all__ = ["TOKENIZER_PATH", "VOCAB_SIZE", "balanced_sample",
           "train_tokenizer", "load_tokenizer", "main"]

TOKENIZER_PATH = Path(os.environ.get(
    "TANBIAS_TOKENIZER", Path(__file__).resolve().parents[2] / "data" / "tokenizer" / "tokenizer.json"))
VOCAB_SIZE = 8192
CHARS_PER_LANGUAGE = 400_000
SEED = 0
REBUILD_COMMAND = "python -m tanbias.lab.tokenizer train"


def balanced_sample(corpus: dict[str, list[str]], chars_per_language: int = CHARS_PER_LANGUAGE,
                    seed: int = SEED) -> list[str]:
    """Same number of characters from every language, documents in seeded random order.

    Parameters
    ----------
    corpus : dict[str, list[str]]
    chars_per_language : int
        Characters taken from each language (fewer if a language is smaller).
    seed : int
        Seed of the permutations (``numpy.random.default_rng(seed)``, languages in sorted order).

    Returns
    -------
    list[str]
        The sampled documents, language after language in sorted order.

    Example
    -------
    >>> s = balanced_sample({"a": ["xx"] * 10, "b": ["yyyy"] * 10}, chars_per_language=8)
    >>> sum(len(d) for d in s if d[0] == "x"), sum(len(d) for d in s if d[0] == "y")
    (8, 8)
    """
    if int(chars_per_language) <= 0:
        raise ParameterError(f"chars_per_language={chars_per_language!r} is out of range: valid range "
                             "is [1, inf). Pass e.g. 400000.")
    rng = np.random.default_rng(seed)
    out = []
    for lang in sorted(corpus):
        docs = corpus[lang]
        budget = int(chars_per_language)
        for i in rng.permutation(len(docs)):
            if budget <= 0:
                break
            out.append(docs[i])
            budget -= len(docs[i])
    return out


def train_tokenizer(texts, vocab_size: int = VOCAB_SIZE):
    """Train a byte-level BPE ``tokenizers.Tokenizer`` on ``texts`` (deterministic).

    Parameters
    ----------
    texts : list[str]
    vocab_size : int
        Total size including the 5 special tokens and the 256 byte symbols.

    Returns
    -------
    tokenizers.Tokenizer
        With ``<s> $A </s>`` post-processing and a byte-level decoder.

    Example
    -------
    >>> tok = train_tokenizer(["hello world", "hallo Welt"], vocab_size=300)
    >>> tok.decode(tok.encode("hello Welt").ids)
    'hello Welt'
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    if int(vocab_size) < len(SPECIAL_TOKENS) + 256:
        raise ParameterError(f"vocab_size={vocab_size!r} is out of range: valid range is [261, inf). "
                             "It must hold the 5 special tokens and the 256 bytes.")
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=int(vocab_size), min_frequency=2, show_progress=False,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(list(texts), trainer=trainer)
    bos, eos = tok.token_to_id("<s>"), tok.token_to_id("</s>")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", bos), ("</s>", eos)])
    return tok


def _training_texts(corpus_dir=None) -> list[str]:
    train, _ = split_corpus(load_corpus(corpus_dir=corpus_dir))
    return balanced_sample(train)


def load_tokenizer(path=None):
    """The lab tokenizer as a ``transformers.PreTrainedTokenizerFast``.

    Parameters
    ----------
    path : path-like, optional
        ``tokenizer.json``; default ``data/tokenizer/tokenizer.json``.

    Returns
    -------
    transformers.PreTrainedTokenizerFast
        ``pad/bos/eos/unk/mask`` tokens set (ids 0-4), no clean-up of spaces on
        decode so that ``decode(encode(text), skip_special_tokens=True) == text``.

    Raises
    ------
    CorruptFileError
        If the file is missing or not a valid tokenizer.

    Example
    -------
    >>> tok = load_tokenizer()
    >>> tok.mask_token_id, tok.pad_token_id, len(tok)
    (4, 0, 8192)
    """
    from transformers import PreTrainedTokenizerFast

    path = Path(path) if path is not None else TOKENIZER_PATH
    if not path.is_file():
        raise CorruptFileError(path, REBUILD_COMMAND, "tokenizer file is missing")
    try:
        tok = PreTrainedTokenizerFast(
            tokenizer_file=str(path), pad_token="<pad>", bos_token="<s>", eos_token="</s>",
            unk_token="<unk>", mask_token="<mask>", clean_up_tokenization_spaces=False,
            model_max_length=4096)
    except Exception as exc:  # tokenizers raises its own Exception type on bad JSON
        raise CorruptFileError(path, REBUILD_COMMAND, f"not a valid tokenizer: {exc}") from None
    return tok


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tanbias.lab.tokenizer",
                                 description="Train the lab's byte-level BPE tokenizer.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    tr = sub.add_parser("train", help="train on a language-balanced corpus sample")
    tr.add_argument("--out", type=Path, default=TOKENIZER_PATH)
    tr.add_argument("--vocab-size", type=int, default=VOCAB_SIZE)
    tr.add_argument("--check", action="store_true", help="compare with --out instead of writing it")
    args = ap.parse_args(argv)

    tok = train_tokenizer(_training_texts(), args.vocab_size)
    text = tok.to_str(pretty=True) + "\n"
    if args.check:
        same = args.out.is_file() and args.out.read_text(encoding="utf-8") == text
        print(f"{args.out}: {'identical' if same else 'DIFFERS'}")
        return 0 if same else 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out} (vocab {tok.get_vocab_size()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
