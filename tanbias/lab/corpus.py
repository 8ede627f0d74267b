"""The lab's multilingual corpus: loading with checksum verification, and language mixtures.

The corpus lives in ``data/corpus/`` as one gzip file per language
(``<lang>.txt.gz``, UTF-8, one document per line) plus ``manifest.json`` with
per-language counts and SHA-256 checksums. It is built from Debian's fortune
packages by ``python data/corpus/make_corpus.py`` (see ``data/corpus/README.md``).

Two sampling regimes over languages are provided by :func:`mixture`:

* ``"natural"``: every document of the corpus is equally likely, so languages
  appear in proportion to their size (the corpus' own imbalance);
* ``"balanced"``: temperature sampling, the share of text (words) drawn from
  language ``l`` is ``p_l ∝ n_l ** (1 / T)`` with ``n_l`` its word count.
  ``T = 1`` gives back the natural shares and ``T → ∞`` the uniform ones.
  The default ``T = 10/3`` (exponent ``α = 1/T = 0.3``) is the value used by
  XLM-R and mT5 for multilingual pre-training; on this corpus it brings the
  largest/smallest language ratio from 4.8 down to 1.6 without repeating the
  smallest language (Portuguese) many times more often than the others.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np

from tanbias.errors import CorruptFileError, ParameterError
from tanbias.lab.config import DEFAULT_TEMPERATURE, REGIMES, check_temperature

__all__ = [
    "CORPUS_DIR", "REBUILD_COMMAND", "CorruptFileError",
    "read_manifest", "verify_corpus", "load_corpus", "language_counts",
    "mixture_probabilities", "mixture", "split_corpus", "split",
]

CORPUS_DIR = Path(os.environ.get("TANBIAS_CORPUS_DIR",
                                 Path(__file__).resolve().parents[2] / "data" / "corpus"))
REBUILD_COMMAND = "python data/corpus/make_corpus.py"


def _dir(corpus_dir) -> Path:
    return Path(corpus_dir) if corpus_dir is not None else CORPUS_DIR


def _corrupt(path: Path, problem: str) -> CorruptFileError:
    return CorruptFileError(path, REBUILD_COMMAND,
                            f"{problem}; the command, run from the repository root, rebuilds the "
                            "corpus from Debian's fortune packages")


def read_manifest(corpus_dir=None) -> dict:
    """Read ``manifest.json`` of the corpus.

    Parameters
    ----------
    corpus_dir : path-like, optional
        Directory holding the corpus; default ``data/corpus`` of the repository.

    Returns
    -------
    dict
        The manifest (``files`` maps ``<lang>.txt.gz`` to counts and checksums).

    Raises
    ------
    CorruptFileError
        If the manifest is missing or is not valid JSON.
    """
    path = _dir(corpus_dir) / "manifest.json"
    if not path.is_file():
        raise _corrupt(path, "manifest is missing")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        manifest["files"]
    except (ValueError, KeyError, TypeError) as exc:
        raise _corrupt(path, f"manifest is not valid ({exc})") from None
    return manifest


def _check_languages(languages, available: Sequence[str]) -> list[str]:
    if languages is None:
        return list(available)
    if isinstance(languages, str):
        languages = [languages]
    languages = list(languages)
    unknown = [lang for lang in languages if lang not in available]
    if unknown or not languages:
        raise ParameterError(
            f"languages={languages!r} is out of range: valid values are subsets of "
            f"{list(available)}. Pass None for all languages.")
    return languages


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def verify_corpus(languages=None, corpus_dir=None) -> dict[str, str]:
    """Check the SHA-256 of each corpus file against the manifest.

    Parameters
    ----------
    languages : sequence of str, optional
        Language codes to check (default: all in the manifest).
    corpus_dir : path-like, optional
        Corpus directory (default ``data/corpus``).

    Returns
    -------
    dict
        ``{lang: sha256}`` of the verified files.

    Raises
    ------
    CorruptFileError
        Naming the missing or mismatching file and the rebuild command.

    Example
    -------
    >>> sorted(verify_corpus(["en", "de"]))
    ['de', 'en']
    """
    directory = _dir(corpus_dir)
    manifest = read_manifest(directory)
    by_lang = {entry["language"]: name for name, entry in manifest["files"].items()}
    out = {}
    for lang in _check_languages(languages, list(by_lang)):
        name = by_lang[lang]
        path = directory / name
        if not path.is_file():
            raise _corrupt(path, "file is missing")
        got = _sha256(path)
        want = manifest["files"][name]["sha256"]
        if got != want:
            raise _corrupt(path, f"SHA-256 mismatch (expected {want[:12]}..., found {got[:12]}...)")
        out[lang] = got
    return out


def load_corpus(languages=None, corpus_dir=None) -> dict[str, list[str]]:
    """Load the corpus, verifying the manifest checksums first.

    Parameters
    ----------
    languages : sequence of str or str, optional
        Language codes (``en de es it pl ru cs pt``); default all.
    corpus_dir : path-like, optional
        Corpus directory (default ``data/corpus``).

    Returns
    -------
    dict[str, list[str]]
        Documents per language, in the order of the files (source order).

    Raises
    ------
    CorruptFileError
        A file is missing, does not match its checksum or cannot be decoded.
    ParameterError
        An unknown language code.

    Example
    -------
    >>> docs = load_corpus(["pt"])
    >>> len(docs["pt"]) == language_counts()["pt"]["documents"]
    True
    """
    directory = _dir(corpus_dir)
    verify_corpus(languages, directory)
    manifest = read_manifest(directory)
    by_lang = {entry["language"]: name for name, entry in manifest["files"].items()}
    corpus = {}
    for lang in _check_languages(languages, list(by_lang)):
        path = directory / by_lang[lang]
        try:
            with gzip.open(path, "rt", encoding="utf-8", newline="\n") as fh:
                docs = fh.read().split("\n")
        except (OSError, UnicodeDecodeError, EOFError) as exc:
            raise _corrupt(path, f"cannot be read ({exc})") from None
        if docs and docs[-1] == "":
            docs.pop()
        corpus[lang] = docs
    return corpus


def language_counts(corpus_dir=None) -> dict[str, dict[str, int]]:
    """Per-language ``{"documents": ..., "words": ...}`` from the manifest (no decompression).

    Example
    -------
    >>> counts = language_counts()
    >>> len(counts) >= 4 and sum(c["words"] for c in counts.values()) > 2_000_000
    True
    """
    manifest = read_manifest(corpus_dir)
    return {entry["language"]: {"documents": int(entry["documents"]), "words": int(entry["words"])}
            for entry in manifest["files"].values()}


#: words of a document list, by the list's id: the split's lists (:func:`split`, cached for the
#: process) are counted once, not at every mixture (about 0.3 s a run on the whole corpus)
_WORDS: dict[int, tuple] = {}


def _words(docs: Sequence[str]) -> int:
    hit = _WORDS.get(id(docs))
    if hit is not None and hit[0] is docs and hit[1] == len(docs):
        return hit[2]
    n = sum(len(d.split()) for d in docs)
    _WORDS[id(docs)] = (docs, len(docs), n)          # the list is kept, so its id is not reused
    return n


def _sizes(corpus: Mapping[str, Sequence[str]]) -> tuple[list[str], np.ndarray, np.ndarray]:
    langs = [lang for lang in corpus if len(corpus[lang]) > 0]
    if not langs:
        raise ParameterError("corpus has no documents: valid input is a dict {lang: [doc, ...]} "
                             "with at least one non-empty language. Use load_corpus().")
    docs = np.array([len(corpus[lang]) for lang in langs], dtype=float)
    words = np.array([_words(corpus[lang]) for lang in langs], dtype=float)
    return langs, docs, np.maximum(words, 1.0)


def mixture_probabilities(corpus: Mapping[str, Sequence[str]], regime: str = "balanced",
                          temperature: float = DEFAULT_TEMPERATURE, weights: Mapping[str, float] | None = None
                          ) -> dict[str, dict[str, float]]:
    """Target language shares and the per-draw language probabilities of :func:`mixture`.

    Parameters
    ----------
    corpus : dict[str, list[str]]
        Documents per language.
    regime : {"natural", "balanced"}
    temperature : float
        ``T >= 1`` (``math.inf`` or ``"inf"`` allowed) for ``"balanced"``; ignored for ``"natural"``.
    weights : dict, optional
        The *natural* word shares ``n_l`` (any positive scale; a language of the corpus
        without a weight is left out). Default: the corpus' own word counts. The
        dose experiment's skewed mixture (chapter 10) sets them.

    Returns
    -------
    dict
        ``{"words": {lang: target share of words}, "draws": {lang: probability that a
        drawn document is in lang}}``. Documents of different languages have
        different mean lengths, so the draw probabilities are the word shares
        divided by the mean document length, renormalised.

    Example
    -------
    >>> c = {"a": ["x y"] * 90, "b": ["x y"] * 10}
    >>> mixture_probabilities(c, "natural")["draws"]["a"]
    0.9
    >>> round(mixture_probabilities(c, "balanced", math.inf)["draws"]["a"], 3)
    0.5
    >>> mixture_probabilities(c, "natural", weights={"a": 1, "b": 3})["words"]["b"]
    0.75
    """
    if regime not in REGIMES:
        raise ParameterError(f"regime={regime!r} is out of range: valid values are {REGIMES}. "
                             "Use 'natural' for size-proportional sampling.")
    t = check_temperature(temperature) if regime == "balanced" else 1.0
    langs, docs, words = _sizes(corpus)
    if weights is not None:
        unknown = sorted(set(weights) - set(corpus))
        if unknown or any(not (float(weights[k]) > 0) for k in weights):
            raise ParameterError(f"weights={dict(weights)!r} is out of range: valid values are positive "
                                 f"weights of the corpus' languages {sorted(corpus)}.")
        keep = [i for i, lang in enumerate(langs) if lang in weights]
        langs, docs, words = [langs[i] for i in keep], docs[keep], words[keep]
        natural = np.array([float(weights[lang]) for lang in langs])
    else:
        natural = words
    if regime == "natural" or t == 1.0:
        share = natural / natural.sum()
    elif math.isinf(t):
        share = np.full(len(langs), 1.0 / len(langs))
    else:
        share = natural ** (1.0 / t)
        share = share / share.sum()
    mean_len = words / docs
    draws = share / mean_len
    draws = draws / draws.sum()
    return {"words": dict(zip(langs, share.tolist())), "draws": dict(zip(langs, draws.tolist()))}


def mixture(corpus: Mapping[str, Sequence[str]], regime: str = "balanced",
            temperature: float = DEFAULT_TEMPERATURE, seed: int = 0,
            weights: Mapping[str, float] | None = None) -> Iterator[tuple[str, str]]:
    """Endless stream of ``(lang, document)`` pairs drawn from a language mixture.

    A language is drawn with the ``"draws"`` probabilities of
    :func:`mixture_probabilities` (so that, in expectation, the share of *words*
    from language ``l`` is ``n_l / sum n`` for ``"natural"`` and
    ``∝ n_l ** (1/T)`` for ``"balanced"``), then the next document of that
    language in a per-language random permutation; a language's permutation is
    redrawn when it is used up (epochs per language, no document repeated
    within one).

    Parameters
    ----------
    corpus : dict[str, list[str]]
        From :func:`load_corpus`.
    regime : {"natural", "balanced"}
        Default ``"balanced"`` with ``temperature = 10/3`` (see module docstring).
    temperature : float
        ``T`` in ``p_l ∝ n_l ** (1/T)``; ``[1, inf]``.
    seed : int
        Seed of the ``numpy.random.Generator`` that drives the stream.
    weights : dict, optional
        Natural word shares per language (see :func:`mixture_probabilities`).

    Yields
    ------
    (str, str)
        Language code and document text.

    Raises
    ------
    ParameterError
        Unknown regime, temperature < 1 or an empty corpus.

    Example
    -------
    >>> import itertools
    >>> c = {"a": ["one two"] * 3, "b": ["tres cuatro"] * 3}
    >>> [lang for lang, _ in itertools.islice(mixture(c, "balanced", math.inf, seed=1), 6)]
    ['b', 'a', 'a', 'b', 'a', 'b']
    """
    probs = mixture_probabilities(corpus, regime, temperature, weights)["draws"]
    langs = list(probs)
    p = np.array([probs[lang] for lang in langs])
    rng = np.random.default_rng(seed)
    order = {lang: rng.permutation(len(corpus[lang])) for lang in langs}
    pos = dict.fromkeys(langs, 0)
    while True:
        for i in rng.choice(len(langs), size=1024, p=p):
            lang = langs[i]
            if pos[lang] == len(order[lang]):
                order[lang] = rng.permutation(len(corpus[lang]))
                pos[lang] = 0
            doc = corpus[lang][order[lang][pos[lang]]]
            pos[lang] += 1
            yield lang, doc


def split_corpus(corpus: Mapping[str, Sequence[str]], valid_fraction: float = 0.05
                 ) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Deterministic train/validation split by a hash of each document's text.

    A document is in the validation part iff the first 8 bytes of its SHA-1, as an
    integer, fall below ``valid_fraction * 2**64``: stable under reordering and
    independent of any seed, so every experiment holds out the same documents.

    Parameters
    ----------
    corpus : dict[str, list[str]]
    valid_fraction : float
        In ``(0, 1)``.

    Returns
    -------
    (train, valid) : two dicts with the same languages as ``corpus``.

    Example
    -------
    >>> tr, va = split_corpus({"a": [f"doc {i}" for i in range(1000)]}, 0.1)
    >>> len(tr["a"]) + len(va["a"]), 50 < len(va["a"]) < 150
    (1000, True)
    """
    if not (0.0 < float(valid_fraction) < 1.0):
        raise ParameterError(f"valid_fraction={valid_fraction!r} is out of range: valid range is (0, 1). "
                             "Pass e.g. 0.05.")
    cut = int(valid_fraction * 2 ** 64)
    train, valid = {}, {}
    for lang, docs in corpus.items():
        train[lang], valid[lang] = [], []
        for d in docs:
            h = int.from_bytes(hashlib.sha1(d.encode("utf-8")).digest()[:8], "big")
            (valid if h < cut else train)[lang].append(d)
    return train, valid


_SPLIT_CACHE: dict = {}


def split(languages=None):
    """The corpus' train/validation split (:func:`split_corpus`), loaded and checksum-verified
    once per process; ``languages`` as :func:`load_corpus`."""
    key = (str(CORPUS_DIR), None if languages is None else tuple(languages))
    if key not in _SPLIT_CACHE:
        _SPLIT_CACHE[key] = split_corpus(load_corpus(languages))
    return _SPLIT_CACHE[key]
