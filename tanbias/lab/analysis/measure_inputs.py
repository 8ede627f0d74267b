"""What a measurement reads, checked before any model is loaded: its settings and its text.

:func:`measure_settings` gives the settings of a measurement of a model (chapter 9's, with a zoo
model's own departures and the options of the command line, :class:`~tanbias.lab.analysis.pretrained.MeasureSettings`);
:func:`read_documents` reads a text of one's own; :func:`text_checks` refuses a text too short
for the bootstrap and :func:`fit_text` fits the settings to what a text holds.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from tanbias._checks import check_int
from tanbias.errors import ParameterError
from tanbias.lab import zoo
from tanbias.lab.analysis import pretrained as pt
from tanbias.lab.analysis.pretrained import MeasureSettings

__all__ = ["MIN_TOKENS", "MIN_DOCUMENTS", "MIN_TYPES", "TEXT_LANGUAGE", "read_documents", "measure_settings",
           "probe_tokens", "text_checks", "fit_text"]

#: The fewest tokens per language a measurement reads (``--tokens``): below it too few types
#: occur ``m`` times for the premise's correlations.
MIN_TOKENS = 1024


#: The fewest documents a text may hold: the premise's intervals resample documents.
MIN_DOCUMENTS = 10


#: The fewest token types that must reach ``m`` occurrences (a correlation over types, a
#: slope fitted over types).
MIN_TYPES = 10


#: The language of a text of one's own when none is named (its types' frequencies are
#: counted in the corpus of that language).
TEXT_LANGUAGE = "en"


def read_documents(path) -> list[str]:
    """The documents of a text file: paragraphs separated by blank lines, whitespace trimmed.

    Raises
    ------
    ParameterError
        The file does not exist, is not UTF-8 text, or holds no text.

    Example
    -------
    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
    ...     _ = f.write("One document,\\nstill the first.\\n\\n\\nThe second.\\n")
    >>> read_documents(f.name)
    ['One document,\\nstill the first.', 'The second.']
    """
    p = Path(path).expanduser()
    if not p.is_file():
        raise ParameterError(f"text={str(path)!r} is not allowed: valid range is an existing text file. "
                             "Check the path.")
    try:
        raw = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ParameterError(f"text={str(path)!r} is not allowed: valid range is a UTF-8 text file ({exc}). "
                             "Convert it to UTF-8.") from None
    docs = [d.strip() for d in re.split(r"\n[ \t]*\n", raw.replace("\r\n", "\n"))]
    docs = [d for d in docs if d]
    if not docs:
        raise ParameterError(f"text={str(path)!r} is not allowed: valid range is a file holding text; it is "
                             "empty. Pass a text of documents separated by blank lines.")
    return docs


def measure_settings(model, settings: MeasureSettings | None = None, *, text: bool = False,
                     **overrides) -> MeasureSettings:
    """The settings of a measurement of ``model``, checked before anything is loaded.

    ``settings`` (default: chapter 9's, with a zoo model's own departures,
    :data:`tanbias.lab.analysis.pretrained.MODEL_SETTINGS`) with ``overrides`` (fields of
    :class:`~tanbias.lab.analysis.pretrained.MeasureSettings`; ``languages`` may be one code).
    Unless set, the alignment test's ``probe_tokens`` follow ``n_tokens`` (:func:`probe_tokens`)
    and the languages are a zoo model's own, else :data:`TEXT_LANGUAGE`; with a ``text`` of
    one's own, one language (the text's).

    Raises
    ------
    ParameterError
        An unknown setting, a value out of its range, fewer than :data:`MIN_TOKENS` tokens,
        several languages for a text of one's own, a language the corpus lacks.

    Example
    -------
    >>> s = measure_settings("a/folder", n_tokens=4096)
    >>> s.n_tokens, s.probe_tokens, s.languages
    (4096, 512, ('en',))
    """
    from tanbias.lab.data import check_languages      # here: it loads torch

    zoo_name = model if isinstance(model, str) and model in zoo.ZOO else None
    if isinstance(overrides.get("languages"), str):
        overrides["languages"] = [overrides["languages"]]
    base = settings.to_dict() if settings is not None else pt.MODEL_SETTINGS.get(zoo_name, {})
    named = overrides.get("languages", settings.languages if settings is not None else None)
    s = MeasureSettings.from_dict({**base, **overrides})
    check_int("tokens", s.n_tokens, lo=MIN_TOKENS, hint="Too few tokens leave too few types with m occurrences "
                                                         "for the premise's correlations. Pass more tokens.")
    if "probe_tokens" not in overrides and settings is None:       # --tokens bounds the alignment test too
        s = s.replace(probe_tokens=probe_tokens(s.n_tokens, s.probe_tokens, s.seq_len))
    if text and named is not None and len(named) != 1:
        raise ParameterError(f"languages={list(named)!r} is out of range with a text of one's own: valid range "
                             "is one language, the text's (its types' frequencies are counted in it).")
    if text and named is None:
        s = s.replace(languages=[TEXT_LANGUAGE])
    elif s.languages is None:
        s = s.replace(languages=pt.model_languages(zoo_name) if zoo_name else [TEXT_LANGUAGE])
    check_languages(s.languages)
    return s


def probe_tokens(n_tokens: int, default: int = MeasureSettings.probe_tokens,
                 seq_len: int = MeasureSettings.seq_len) -> int:
    """The tokens of each text of the alignment test for ``n_tokens`` of measured text: an eighth
    of them in whole rows (at least one), at most ``default``; chapter 9's 16,384 give its 2,048.

    Example
    -------
    >>> probe_tokens(16_384), probe_tokens(4096), probe_tokens(1024), probe_tokens(100_000)
    (2048, 512, 256, 2048)
    """
    return int(min(default, max(seq_len, n_tokens // 8 // seq_len * seq_len)))


def text_checks(text: dict, tok, s: MeasureSettings, lang: str, source: str | None) -> None:
    """Refuse a text too short for the bootstrap: too few documents, too few types reaching m.

    ``text`` is :func:`tanbias.lab.analysis.pretrained.language_text` of language ``lang`` under the
    model's tokenizer ``tok``; ``source``, the path of a text of one's own (None: the corpus').

    Raises
    ------
    ParameterError
        Fewer than :data:`MIN_DOCUMENTS` documents, or fewer than :data:`MIN_TYPES` types that occur
        ``m`` times.
    """
    ids = text["input_ids"]
    keep = ~np.isin(ids, np.asarray(tok.all_special_ids, np.int64)) & ~text["sink"]
    docs = len(np.unique(text["document"][keep]))
    what = f"text={source!r}" if source is not None else f"the held-out text ({lang})"
    if docs < MIN_DOCUMENTS:
        raise ParameterError(f"{what} is too short for the bootstrap in {lang!r}: the {int(keep.sum())} tokens read "
                             f"span {docs} document{'s' if docs != 1 else ''}, and the premise's intervals resample "
                             f"documents: valid range is at least {MIN_DOCUMENTS} documents. Pass a longer text "
                             "(documents separated by blank lines) or more --tokens.")
    counts = np.bincount(ids[keep])
    n_types = int((counts >= s.m).sum())
    if n_types < MIN_TYPES:
        raise ParameterError(f"{what} is too short for the bootstrap in {lang!r}: {n_types} token types "
                             f"occur at least m = {s.m} times: valid range is at least {MIN_TYPES} types. Pass "
                             "a longer text or more --tokens.")


def fit_text(settings: MeasureSettings, docs: list, source, tok, seq_len: int) -> tuple[MeasureSettings, list]:
    """``(settings, notes)``: ``n_tokens`` and ``probe_tokens`` no larger than a text of one's own
    (``docs``, read from ``source``) holds under ``tok`` in whole rows of ``seq_len``: the settings
    shrunk, and a note for each change.

    Raises
    ------
    ParameterError
        The text holds fewer than :data:`MIN_TOKENS` tokens in whole rows.
    """
    from tanbias.lab.data import encode_documents      # here: it loads torch

    s, notes = settings, []
    held = sum(len(x) for x in encode_documents(tok, docs, special_tokens=False))
    need = -(-s.n_tokens // seq_len) * seq_len
    if held < need:
        rows = held // seq_len
        if rows * seq_len < MIN_TOKENS:
            raise ParameterError(f"text={source!r} is too short for the bootstrap: it holds {held} tokens under the "
                                 f"model's tokenizer, {rows * seq_len} in whole rows of {seq_len}: valid range is at "
                                 f"least {MIN_TOKENS}. Pass a longer text.")
        notes.append(f"the text holds {held} tokens: {rows * seq_len} read (whole rows of {seq_len}), not "
                         f"{s.n_tokens}")
        s = s.replace(n_tokens=rows * seq_len)
    halves = [sum(len(x) for x in encode_documents(tok, docs[h::2])) for h in (0, 1)]
    probe_rows = min(halves) // seq_len
    if probe_rows * seq_len < s.probe_tokens:
        s = s.replace(probe_tokens=probe_rows * seq_len)
        notes.append(f"the alignment test reads {probe_rows * seq_len} tokens of each half of the documents "
                         "(the text holds no more)")
    return s, notes
