"""Real pretrained models on real text: the premise, anisotropy, alignment and curvature (ch 9).

For each model of the zoo (:mod:`tanbias.lab.zoo`: SmolLM2-135M, Gemma-3-270M,
all-MiniLM-L6-v2), :func:`measure` reads held-out documents of the lab's
corpus *one language at a time* (English and German for the decoders, English
for MiniLM), each with that language's own token frequencies, keeps every
layer's hidden states in float32, and writes tidy tables under
``data/pretrained/<model>/``. Every per-token statistic leaves out the first
position of each row (the attention sink: its hidden state carries up to 100
times the norm of the others in SmolLM2) and the special tokens; what the sink
does is measured apart.

``types.csv``
    Per language, layer and token type with at least ``m`` occurrences: its count
    in the text, its frequency in the language's training split under the model's
    own tokenizer, its web-scale Zipf frequency (``wordfreq``, whole words only),
    the three readings of "distance to the centroid" computed on ``m``
    occurrences drawn many times (:func:`tanbias.theory.token_clouds.matched_statistics`:
    the estimates no longer depend on how often a type occurs) and, for the
    record, the plain ones on all occurrences (``*_plain``), and the local normal share.
``premise.csv``
    Spearman correlation of each reading with log frequency, per language, layer
    and frequency source: ``estimator == "matched"``, with a 95 % interval over
    documents (resampled, the per-type readings recomputed inside each resample,
    :func:`tanbias.theory.token_clouds.premise_bootstrap`); ``"plain"``, the count-biased
    estimate with the interval over types of the first edition; and the matched
    estimate at other ``m`` (robustness, first, middle and last layer).
``anisotropy.csv``
    Per language and layer: spread, mean cosine of random pairs, IsoScore*,
    top-1/top-k variance share, outlier ("rogue") dimensions, without the sink;
    the same three with it (``*_with_sink``), and ``sink_norm_ratio`` (median norm
    at the first position over the median elsewhere).
``curvature.csv``
    Per language and layer: the log-log slope of the types' local normal share
    against their matched radius *t*, beside the slope 2 a curved manifold predicts.
``alignment.csv`` (decoders)
    the checkpoint alignment test with its proxy fitted on other documents than the
    ones tested, for the checkpoint and for a randomly initialised copy of its
    architecture (:func:`tanbias.lab.analysis.checkpoint_probe.heldout_alignment`).
``manifest.json``
    The version of this package that measured (``package_version``: manifests written before
    it was recorded have none), the versions of torch and transformers, weight checksum, text
    sample and seed, timings
    (tokens/s and the fraction of the measured matrix-multiply peak), code
    commit, and the checksums of the tables.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import resource
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import numpy as np

import tanbias
from tanbias._checks import check_int
from tanbias._threads import default_workers, thread_map
from tanbias.errors import CorruptFileError, ParameterError
from tanbias.lab import zoo
from tanbias.lab.config import ProbeSettings
from tanbias.lab.analysis.tables import single_thread_blas
from tanbias.lab.corpus import split
from tanbias.lab.runs import atomic_write_text, git_commit, sha256
from tanbias.theory import token_clouds as tc
from tanbias.theory.token_clouds import RADIUS_READINGS  # the order of premise_bootstrap's columns

__all__ = ["PRETRAINED_DIR", "MeasureSettings", "DECODER_LANGUAGES", "MODEL_SETTINGS", "TABLES", "CSV_FLOAT",
           "corpus_frequencies", "word_marker", "wordfreq_frequencies", "hidden_states", "layer_tables",
           "premise_tables", "curvature_rows", "flops_per_token", "model_languages", "frame_tokens",
           "language_text", "measure_language", "measure", "peak_rss_gb", "measure_all", "load_pretrained",
           "load_tables"]

PRETRAINED_DIR = Path(__file__).resolve().parents[3] / "data" / "pretrained"

_M_HINT = "A type's matched readings compare pairs of its occurrences: pass at least 2."


def _set(obj, name: str, value) -> None:
    object.__setattr__(obj, name, value)        # a frozen dataclass normalises itself once


@dataclass(frozen=True)
class MeasureSettings:
    """The settings of chapter 9's measurements, checked when they are made (:func:`measure`'s and
    ``python -m tanbias measure``'s; ``settings`` in every ``manifest.json`` they write).

    The defaults are those of the committed measurements (``data/pretrained/``), with the
    departures of :data:`MODEL_SETTINGS` for some models (:meth:`for_zoo`).

    Example
    -------
    >>> s = MeasureSettings(n_tokens=4096, languages=["en"])
    >>> s.n_tokens, s.languages, s.robust_m
    (4096, ('en',), (4, 8, 16))
    >>> MeasureSettings.from_dict(s.to_dict()) == s
    True
    >>> MeasureSettings(m=1)
    Traceback (most recent call last):
    ...
    tanbias.errors.ParameterError: m=1 is out of range: valid range is [2, inf). A type's matched ...
    """
    #: held-out tokens read per language
    n_tokens: int = 16_384
    #: tokens per row (a model with fewer positions reads rows of its own length)
    seq_len: int = 256
    #: rows per forward pass
    batch_size: int = 8
    #: the seed of the text's order, the draws and the resamples
    seed: int = 0
    #: occurrences per type in the matched readings (a type occurring fewer times is not read)
    m: int = 8
    #: draws of ``m`` occurrences averaged per type
    draws: int = 20
    #: resamples of the documents behind each interval
    n_boot: int = 200
    #: the other ``m`` the matched estimate is read at (robustness: first, middle and last layer)
    robust_m: tuple[int, ...] = (4, 8, 16)
    #: local principal directions a type's normal share leaves out
    normal_k: int = 4
    #: tokens of each of the alignment test's two texts (fitted, tested)
    probe_tokens: int = 2048
    #: the alignment test's probe settings (:class:`tanbias.lab.config.ProbeSettings` fields; None: its defaults)
    probe: Mapping | None = None
    #: training documents per language counted for the token frequencies (None: all of them)
    frequency_docs: int | None = None
    #: the corpus languages measured, one at a time (None: the model's own, :func:`model_languages`)
    languages: tuple[str, ...] | None = None

    def __post_init__(self):
        for name, lo, hint in (("n_tokens", 1, "Pass e.g. 4096."),
                               ("seq_len", 3, "A row holds an encoder's start and end tokens and some text."),
                               ("batch_size", 1, "Pass e.g. 8."), ("seed", 0, ""),
                               ("m", 2, _M_HINT), ("draws", 1, "Pass e.g. 20."),
                               ("n_boot", 1, "Pass e.g. 200 resamples."), ("normal_k", 1, "Pass e.g. 4."),
                               ("probe_tokens", 1, "Pass e.g. 2048.")):
            _set(self, name, check_int(name, getattr(self, name), lo=lo, hint=hint))
        if isinstance(self.robust_m, (str, bytes)) or not isinstance(self.robust_m, Sequence):
            raise ParameterError(f"robust_m={self.robust_m!r} is not allowed: valid range is a list of integers "
                                 "of at least 2, e.g. [4, 8, 16].")
        _set(self, "robust_m", tuple(check_int("robust_m", m, lo=2, hint=_M_HINT) for m in self.robust_m))
        if self.probe is not None:
            if not isinstance(self.probe, Mapping):
                raise ParameterError(f"probe={self.probe!r} is not allowed: valid range is None or a dict of the "
                                     "probe settings (tanbias.lab.config.ProbeSettings), e.g. {'n_controls': 4}.")
            ProbeSettings.from_dict(self.probe)             # an unknown probe setting is named here
            _set(self, "probe", MappingProxyType(dict(self.probe)))
        if self.frequency_docs is not None:
            _set(self, "frequency_docs", check_int("frequency_docs", self.frequency_docs, lo=1,
                                                   hint="Pass None to count every training document."))
        if self.languages is not None:
            if isinstance(self.languages, str) or not self.languages or not all(
                    isinstance(x, str) for x in self.languages):
                raise ParameterError(f"languages={self.languages!r} is out of range: valid values are lists of "
                                     "language codes such as ['en', 'de']. Pass None for the model's own.")
            _set(self, "languages", tuple(self.languages))

    @classmethod
    def from_dict(cls, d) -> "MeasureSettings":
        """Settings from a dict of fields (a manifest's ``settings``); missing fields take their defaults.

        Raises
        ------
        ParameterError
            An unknown key (naming the known ones), or a value out of its range.
        """
        d = dict(d or {})
        known = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(d) - set(known))
        if unknown:
            raise ParameterError(f"settings {unknown} are not known: valid keys are {sorted(known)}. "
                                 "Check the spelling.")
        return cls(**d)

    @classmethod
    def for_zoo(cls, name: str, **overrides) -> "MeasureSettings":
        """A zoo model's settings: the defaults, its :data:`MODEL_SETTINGS`, then ``overrides``;
        the languages, when none are named, the model's own (:func:`model_languages`).

        Example
        -------
        >>> MeasureSettings.for_zoo("minilm-l6").n_tokens, MeasureSettings.for_zoo("smollm2-135m").languages
        (24576, ('en', 'de'))
        """
        s = cls.from_dict({**MODEL_SETTINGS.get(name, {}), **overrides})
        return s if s.languages is not None else s.replace(languages=model_languages(name))

    def replace(self, **changes) -> "MeasureSettings":
        """A copy with ``changes`` (field names, checked as :meth:`from_dict` checks them)."""
        return self.from_dict({**self.to_dict(), **changes})

    def to_dict(self) -> dict:
        """The settings as a manifest writes them: every field in order, lists for tuples.

        Example
        -------
        >>> MeasureSettings(languages=("en",)).to_dict()["robust_m"]
        [4, 8, 16]
        """
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["robust_m"] = list(self.robust_m)
        d["probe"] = dict(self.probe) if self.probe is not None else None
        d["languages"] = list(self.languages) if self.languages is not None else None
        return d


#: The languages a decoder is measured in when the settings name none: English, and German,
#: the two languages whose held-out documents hold the most text (about 20,000 words each)
DECODER_LANGUAGES = ("en", "de")
#: Per-model departures from :class:`MeasureSettings`' defaults: MiniLM was trained on English only, and the
#: corpus' held-out English documents hold about 29,000 of its tokens. Multilingual E5 is
#: measured in every corpus language whose held-out documents hold at least the default
#: 16,384 of its tokens: English 31,125, German 32,462, Polish 27,131, Russian 25,772 and
#: Italian 22,367 do; Czech (16,092), Spanish (11,436) and Portuguese (5,872) do not.
MODEL_SETTINGS = {"minilm-l6": {"n_tokens": 24_576, "languages": ("en",)},
                  "me5-small": {"languages": ("en", "de", "pl", "ru", "it")}}

#: The tables :func:`measure` writes (and :func:`load_pretrained` reads).
TABLES = ("types", "premise", "anisotropy", "curvature")
#: How the tables write their floats (six significant digits).
CSV_FLOAT = "%.6g"


def _rebuild(name: str) -> str:
    return f"python -m tanbias.lab pretrained {name}"


def corpus_frequencies(tokenizer, languages, vocab_size: int, max_docs: int | None = None) -> np.ndarray:
    """Token counts of the corpus' training split under ``tokenizer`` (the model's own).

    ``max_docs`` caps the documents read per language (None: all of them,
    about 86,000 documents and 2 million words in all).

    The zoo models' training corpora are not available; this is the frequency
    proxy (the web-scale ``wordfreq`` one is the check that conclusions do not
    hang on it).
    """
    train, _ = split()
    counts = np.zeros(vocab_size, dtype=np.int64)
    for lang in languages:
        docs = train[lang] if max_docs is None else train[lang][:max_docs]
        for start in range(0, len(docs), 2048):
            enc = tokenizer(docs[start:start + 2048], add_special_tokens=False)["input_ids"]
            flat = np.fromiter((t for row in enc for t in row), dtype=np.int64)
            counts += np.bincount(flat, minlength=vocab_size)[:vocab_size]
    return counts


#: Markers that tokenizers put in front of a word-initial piece.
_WORD_START = ("Ġ", "▁")


def word_marker(tokenizer) -> str:
    """How ``tokenizer`` marks words: ``"Ġ"`` (byte-level BPE), ``"▁"`` (SentencePiece) or ``"##"``.

    For the first two a word-initial piece starts with the marker; for WordPiece
    (``"##"``) a word-continuing piece does.
    """
    vocab = list(tokenizer.get_vocab())
    for marker in _WORD_START + ("##",):
        if sum(t.startswith(marker) for t in vocab) > 0.05 * len(vocab):
            return marker
    raise ParameterError("tokenizer: no word marker (Ġ, ▁ or ##) on 5 % of its vocabulary; "
                         "whole-word types cannot be told apart. Use a BPE, SentencePiece or "
                         "WordPiece tokenizer.")


def wordfreq_frequencies(tokenizer, types, type_language) -> np.ndarray:
    """Web-scale Zipf frequency (``wordfreq``) of each type that is a whole word, else NaN.

    A type counts as a whole word when it begins a word (its token string starts
    with the word marker ``Ġ`` or ``▁``; for WordPiece, it does not start with
    ``##``), the rest is alphabetic, and ``wordfreq`` knows it in the type's
    language (the language of most of its occurrences). A piece that happens
    to spell a word at the start of longer words counts too: a limitation of
    reading types, not occurrences.
    """
    from wordfreq import zipf_frequency

    marker = word_marker(tokenizer)
    tokens = tokenizer.convert_ids_to_tokens([int(t) for t in types])
    out = np.full(len(types), np.nan)
    for i, (tok, lang) in enumerate(zip(tokens, type_language)):
        if tok is None:
            continue
        if marker == "##":
            word = None if tok.startswith("##") else tok
        else:
            word = tok[len(marker):] if tok.startswith(marker) else None
        if word and word.isalpha():
            z = zipf_frequency(word.lower(), lang)
            if z > 0:
                out[i] = z
    return out


def hidden_states(model, input_ids: np.ndarray, keep: np.ndarray, batch_size: int = 8,
                  progress: bool = True) -> tuple[np.ndarray, float]:
    """Every layer's hidden state at the kept positions, float32, and the forward seconds.

    One forward pass of the blocks (no language-model head) per batch of rows, on the
    device the model is on; the kept positions are copied back to the CPU.

    Parameters
    ----------
    model : a ``transformers`` model in eval mode (returns ``hidden_states``)
    input_ids : (rows, seq_len) int array
    keep : (rows, seq_len) bool array
        Positions to keep.

    Returns
    -------
    (H, seconds) : (L + 1, n_kept, D) float32 array, and the time spent in forward passes.
    """
    import torch

    rows = input_ids.shape[0]
    n = int(keep.sum())
    body = model.base_model   # the blocks without a language-model head: no logits to compute
    dev = next(model.parameters()).device
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    H = None
    pos, seconds = 0, 0.0
    it = range(0, rows, batch_size)
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(it, desc="forward", unit="batch", total=-(-rows // batch_size))
    with torch.inference_mode():
        for start in it:
            ids = torch.as_tensor(input_ids[start:start + batch_size]).to(dev)
            t0 = time.perf_counter()
            out = body(input_ids=ids, attention_mask=torch.ones_like(ids), output_hidden_states=True)
            sync()
            seconds += time.perf_counter() - t0
            mask = torch.as_tensor(keep[start:start + batch_size]).to(dev)
            k = int(mask.sum())
            if H is None:
                H = np.empty((len(out.hidden_states), n, out.hidden_states[0].shape[-1]), np.float32)
            for layer, h in enumerate(out.hidden_states):
                H[layer, pos:pos + k] = h[mask].float().cpu().numpy()
            pos += k
            del out
    return H, seconds


def _log_frequency(counts) -> np.ndarray:
    """``log`` of the counts, NaN where a type never occurs (it cannot be ranked by frequency)."""
    c = np.asarray(counts, np.float64)
    with np.errstate(divide="ignore"):
        return np.where(c > 0, np.log(np.where(c > 0, c, 1.0)), np.nan)


def layer_tables(X, sink, type_ids, frequency, zipf, m: int, draws: int, normal_k: int, layer: int, seed: int = 0,
                 metrics=None):
    """The per-type rows, the anisotropy row and the matched readings of one layer.

    ``X`` holds the layer's rows, ``sink`` (bool, one per row) marks the first position
    of each text row: the readings and anisotropy leave those out, the ``*_with_sink``
    columns and ``sink_norm_ratio`` describe what they do. ``metrics(Y, type_ids, spectrum=...)``
    of the layer's rows without the sink and their types, when given, returns more anisotropy
    readings of the same rows (``{column: float}``), added to the anisotropy row; ``spectrum``
    hands over the eigenvalues of their scatter matrix, which chapter 9's anisotropy computed.

    Returns
    -------
    (types, anisotropy, matched) : a pandas frame, a dict, and the
    :func:`tanbias.theory.token_clouds.matched_statistics` result (the premise's point estimate).
    """
    import pandas as pd

    Y, ids = X[~sink], type_ids[~sink]
    spread = tc.layer_spread(Y)
    matched = tc.matched_statistics(Y, ids, m=m, draws=draws, spread=spread,
                                    rng=np.random.default_rng([seed, layer]))
    plain = tc.type_statistics(Y, ids, min_count=m, spread=spread)
    ns = tc.type_normal_shares(Y, ids, k=normal_k, min_count=m, spread=spread)
    types = matched["type"]
    share = pd.Series(ns["normal_share"], index=ns["type"])
    plain_at = {k: pd.Series(plain[k], index=plain["type"]).reindex(types).to_numpy() for k in RADIUS_READINGS}
    rows = pd.DataFrame({"layer": layer, "type": types, "count": matched["count"],
                         "corpus_count": frequency[types], "zipf": zipf[types],
                         **{k: matched[k] for k in RADIUS_READINGS}, **{f"{k}_plain": plain_at[k] for k in RADIUS_READINGS},
                         "normal_share": share.reindex(types).to_numpy()})
    an = tc.anisotropy(Y, rng=layer)
    whole = tc.anisotropy(X, rng=layer)
    norms = np.linalg.norm(X, axis=1)
    aniso = {"layer": layer, "spread": spread,
             **{k: v for k, v in an.items() if k not in ("outlier_dims", "contributions", "spectrum")},
             "outlier_dims": " ".join(str(d) for d in an["outlier_dims"]),
             **{f"{k}_with_sink": whole[k] for k in ("mean_cosine", "isoscore_star", "top1_share")},
             "spread_with_sink": tc.layer_spread(X),
             "sink_norm_ratio": float(np.median(norms[sink]) / np.median(norms[~sink])) if sink.any() else np.nan,
             **({k: float(v) for k, v in metrics(Y, ids, spectrum=an["spectrum"]).items()} if metrics is not None
                else {})}
    return rows, aniso, matched


def premise_tables(H, sink, type_ids, doc_ids, frequency, zipf, types, matched, settings: MeasureSettings,
                   progress: bool = False):
    """The premise rows of one language.

    * ``estimator == "matched"``, at every layer and frequency source: ρ of the matched
      readings (``matched``, the per-layer results of :func:`layer_tables`, the values of
      the types table) with log frequency; ``lo``/``hi``, each layer's 95 % interval over
      documents, ``band_lo``/``band_hi`` the band that holds for all layers at once, ``shift``
      how far the resamples' (shorter) texts move ρ
      (:func:`tanbias.theory.token_clouds.premise_bootstrap`; both sources on the same resamples);
    * ``"plain"``: ρ of the plain readings (all occurrences, the first edition's estimator),
      with an interval over types (the first edition's, too narrow: it holds each type's
      reading fixed);
    * the matched estimate at the other ``robust_m`` (first, middle and last layer).

    ``settings`` gives ``m``, ``draws``, ``n_boot``, ``robust_m`` and the ``seed`` of the draws and
    the resamples.
    """
    import pandas as pd

    s, seed = settings, settings.seed
    keep = ~sink
    Hk, ids, docs = H[:, keep], type_ids[keep], doc_ids[keep]
    L = H.shape[0]
    sources = {"corpus": _log_frequency(frequency), "wordfreq": zipf}
    res = tc.premise_bootstrap(Hk, ids, docs, sources, m=s.m, draws=s.draws, n_boot=s.n_boot,
                               rng=np.random.default_rng([seed, 1]), point=matched, progress=progress,
                               workers=default_workers())
    out = []
    for source, freq in sources.items():
        r = res[source]
        for layer in range(L):
            for r_i, reading in enumerate(RADIUS_READINGS):
                out.append({"layer": layer, "source": source, "reading": reading, "estimator": "matched",
                            "m": s.m, "rho": r["rho"][layer, r_i], "lo": r["lo"][layer, r_i],
                            "hi": r["hi"][layer, r_i], "band_lo": r["band_lo"][layer, r_i],
                            "band_hi": r["band_hi"][layer, r_i], "shift": r["shift"][layer, r_i],
                            "n": int(r["n_types"][layer]), "interval": "documents"})
        for layer, g in types.groupby("layer"):
            f = freq[g["type"].to_numpy()]
            ok = np.isfinite(f)
            for reading in RADIUS_READINGS:
                y = g[f"{reading}_plain"].to_numpy()
                good = ok & np.isfinite(y)
                if good.sum() < 10:
                    continue
                c = tc.spearman_ci(f[good], y[good], n_boot=s.n_boot, rng=seed + int(layer))
                out.append({"layer": int(layer), "source": source, "reading": reading, "estimator": "plain",
                            "m": s.m, **c, "interval": "types"})
    few = sorted({1, L // 2, L - 1})
    for m in s.robust_m:
        if m == s.m:
            continue
        r = tc.premise_bootstrap(Hk[few], ids, docs, sources["corpus"], m=m, draws=s.draws,
                                 n_boot=max(50, s.n_boot // 4), rng=np.random.default_rng([seed, 2, m]),
                                 workers=default_workers())
        for i, layer in enumerate(few):
            for r_i, reading in enumerate(RADIUS_READINGS):
                out.append({"layer": layer, "source": "corpus", "reading": reading, "estimator": "matched",
                            "m": m, "rho": r["rho"][i, r_i], "lo": r["lo"][i, r_i], "hi": r["hi"][i, r_i],
                            "band_lo": np.nan, "band_hi": np.nan, "shift": r["shift"][i, r_i],
                            "n": int(r["n_types"][i]), "interval": "documents"})
    return pd.DataFrame(out)


def curvature_rows(types) -> list[dict]:
    """Per layer: the log-log slope of the types' local normal share against their matched radius."""
    curv = []
    for layer, g in types.groupby("layer"):
        ok = g["normal_share"].notna() & (g["normal_share"] > 0) & (g["radius_t"] > 0)
        if ok.sum() >= 10:
            fit = tc.normal_share_scaling(g.loc[ok, "radius_t"].to_numpy(), g.loc[ok, "normal_share"].to_numpy())
            curv.append({"layer": int(layer), "slope": fit.slope, "lo": fit.ci_low, "hi": fit.ci_high,
                         "n_types": int(ok.sum()), "median_normal_share": float(g.loc[ok, "normal_share"].median())})
    return curv


def flops_per_token(model, seq_len: int) -> float:
    """Forward FLOPs per token: 2 x parameters outside the embedding, plus attention scores."""
    cfg = model.config
    emb = model.get_input_embeddings().weight.numel()
    params = sum(p.numel() for p in model.parameters()) - emb
    L, d = cfg.num_hidden_layers, cfg.hidden_size
    return 2.0 * params + 2.0 * L * seq_len * d


def model_languages(name: str) -> tuple[str, ...]:
    """The languages a zoo model is measured in when its settings name none: English and German
    for a decoder, English for an encoder.

    Example
    -------
    >>> model_languages("smollm2-135m"), model_languages("minilm-l6")
    (('en', 'de'), ('en',))
    """
    return DECODER_LANGUAGES if zoo.zoo_entry(name).kind == "decoder" else ("en",)


def frame_tokens(tokenizer) -> tuple[int | None, int | None]:
    """The ids an encoder's row starts and ends with: ``[CLS]``/``[SEP]``, else ``<s>``/``</s>``
    (the tokenizer's beginning- and end-of-sequence tokens); None where it has neither.

    Example
    -------
    >>> from tanbias.lab.tokenizer import load_tokenizer
    >>> frame_tokens(load_tokenizer())        # no [CLS]/[SEP]: <s> and </s>
    (1, 2)
    """
    start = tokenizer.cls_token_id if tokenizer.cls_token_id is not None else tokenizer.bos_token_id
    end = tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id
    return start, end


def language_text(tok, kind: str, lang: str, settings: MeasureSettings, seq_len: int,
                  documents: dict | None = None) -> dict:
    """One language's held-out rows under the model's tokenizer, with each position's document and
    whether it is the first of its row (an encoder reads ``[CLS] ... [SEP]`` rows, as it was
    trained: those two are special, the first text token is not a sink; :func:`frame_tokens`).

    ``documents`` (``{lang: [text, ...]}``) replaces the corpus' held-out documents
    (:func:`tanbias.lab.data.heldout_text`)."""
    from tanbias.lab.data import heldout_text

    text = heldout_text(tok, settings.n_tokens, seq_len, seed=settings.seed, languages=[lang],
                        order="round_robin", special_tokens=False, documents=documents)
    ids, docs = text["input_ids"], text["document"]
    sink = np.zeros(ids.shape, bool)
    start, end = frame_tokens(tok)
    if kind == "encoder" and start is not None and end is not None:
        ids = np.concatenate([np.full((len(ids), 1), start), ids[:, :seq_len - 2],
                              np.full((len(ids), 1), end)], axis=1)
        docs = np.concatenate([docs[:, :1], docs[:, :seq_len - 2], docs[:, :1]], axis=1)
    else:
        sink[:, 0] = True            # a decoder's first position is its attention sink
    return {"input_ids": ids, "document": docs, "sink": sink, "documents": text["documents"]}


def measure_language(model, tok, kind: str, lang: str, settings: MeasureSettings, seq_len: int,
                     progress: bool = True, documents: dict | None = None, metrics=None, text: dict | None = None,
                     frequency: np.ndarray | None = None) -> dict:
    """Every table of one model in one language: one forward pass, then every reading of its rows.

    The held-out text of ``lang`` (:func:`language_text`), the types' frequencies in the
    language's training split (:func:`corpus_frequencies`) and on the web
    (:func:`wordfreq_frequencies`), the hidden states of every layer from one forward pass
    (:func:`hidden_states`), and from them the types, anisotropy (with ``metrics``, see
    :func:`layer_tables`), premise and curvature tables.

    Parameters
    ----------
    model, tok
        A ``transformers`` model in eval mode and its own tokenizer.
    kind : {"encoder", "decoder"}
    settings : MeasureSettings
    documents : dict, optional
        ``{lang: [text, ...]}`` read instead of the corpus' held-out documents.
    metrics : dict, optional
        More anisotropy readings (:func:`layer_tables`).
    text, frequency : optional
        :func:`language_text` and :func:`corpus_frequencies` of this language, when the
        caller has them already (several checkpoints of one model read the same text).

    Returns
    -------
    dict
        ``tables`` (``types``, ``premise``, ``anisotropy``, ``curvature``: pandas frames with
        a first column ``language``), ``n_tokens`` (positions read, special tokens left out),
        ``measured`` (the positions every per-token statistic reads: the sink left out too),
        ``documents``, ``seconds`` (``frequencies``, ``forward``, ``analysis``) and ``notes``
        (what could not be measured, in words).
    """
    import pandas as pd

    s = settings
    seconds, notes = {}, []
    vocab = int(max(len(tok), model.get_input_embeddings().weight.shape[0]))
    special_all = np.asarray(tok.all_special_ids, dtype=np.int64)
    if text is None:
        text = language_text(tok, kind, lang, s, seq_len, documents)
    ids = text["input_ids"]
    keep = ~np.isin(ids, special_all)
    t0 = time.perf_counter()
    if frequency is None:
        frequency = corpus_frequencies(tok, [lang], vocab, s.frequency_docs)
    seconds["frequencies"] = time.perf_counter() - t0
    H, seconds["forward"] = hidden_states(model, ids, keep, s.batch_size, progress)
    type_ids, doc_ids, sink = ids[keep], text["document"][keep], text["sink"][keep]
    t0 = time.perf_counter()
    types_seen = np.unique(type_ids[~sink])
    zipf = np.full(vocab, np.nan)
    try:
        zipf[types_seen] = wordfreq_frequencies(tok, types_seen, [lang] * len(types_seen))
    except ParameterError as err:      # no word marker: no whole words to look up
        notes.append(f"web frequencies (wordfreq) not measured: {err}")
    # many small eigenproblems: OpenBLAS's threads, oversubscribed, made a 576 x 576
    # eigvalsh 60x slower than one thread (measured, 3 s against 0.05 s). The layers are
    # read side by side instead, one per core (numpy's work lets go of the GIL; each layer
    # seeds its own draws, so the tables do not depend on the order)
    with single_thread_blas():
        done = thread_map(lambda layer: layer_tables(H[layer], sink, type_ids, frequency, zipf, s.m, s.draws,
                                                     s.normal_k, layer, s.seed, metrics=metrics),
                          H.shape[0], progress=progress and f"layers ({lang})", unit="layer")
        type_rows, aniso_rows, matched = (list(col) for col in zip(*done))
        types = pd.concat(type_rows, ignore_index=True)
        premise = premise_tables(H, sink, type_ids, doc_ids, frequency, zipf, types, matched, s, progress=progress)
        curv = pd.DataFrame(curvature_rows(types), columns=["layer", "slope", "lo", "hi", "n_types",
                                                            "median_normal_share"])
    tables = {}
    for key, frame in (("types", types), ("premise", premise), ("anisotropy", pd.DataFrame(aniso_rows)),
                       ("curvature", curv)):
        frame.insert(0, "language", lang)
        tables[key] = frame
    seconds["analysis"] = time.perf_counter() - t0
    del H                    # an array: freed here, with no collection of cycles to wait for
    return {"tables": tables, "n_tokens": int(keep.sum()), "measured": int((~sink).sum()),
            "documents": text["documents"], "seconds": seconds, "notes": notes}


def measure(name: str, out_dir=None, progress: bool = True, **settings) -> dict:
    """Measure one zoo model and write its tables and manifest (see the module docstring).

    Parameters
    ----------
    name : str
        A key of :data:`tanbias.lab.zoo.ZOO`.
    out_dir : path-like, optional
        Default ``data/pretrained/<name>``.
    **settings
        Fields of :class:`MeasureSettings` that depart from the model's
        (:meth:`MeasureSettings.for_zoo`; e.g. ``n_tokens=512`` for a smoke run).

    Returns
    -------
    dict
        The manifest.
    """
    import pandas as pd
    import torch
    import transformers

    entry = zoo.zoo_entry(name)
    s = MeasureSettings.for_zoo(name, **settings)
    languages = s.languages
    out = Path(out_dir) if out_dir is not None else PRETRAINED_DIR / name
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    seconds = {"load": 0.0, "frequencies": 0.0, "forward": 0.0, "analysis": 0.0, "probe": 0.0}
    t0 = time.perf_counter()
    model, tok = zoo.load_zoo(name, progress=progress)
    seconds["load"] = time.perf_counter() - t0
    seq_len = min(s.seq_len, int(getattr(model.config, "max_position_embeddings", s.seq_len)))
    frames = {k: [] for k in TABLES}
    n_total, documents, measured = 0, {}, {}
    for lang in languages:
        res = measure_language(model, tok, entry.kind, lang, s, seq_len, progress)
        for key, frame in res["tables"].items():
            frames[key].append(frame)
        for key in ("frequencies", "forward", "analysis"):
            seconds[key] += res["seconds"][key]
        n_total += res["n_tokens"]
        documents[lang] = res["documents"]
        measured[lang] = res["measured"]      # the tokens every per-token statistic reads
    tables = {k: pd.concat(v, ignore_index=True) for k, v in frames.items()}
    t0 = time.perf_counter()
    if entry.kind == "decoder":
        from tanbias.lab.analysis.checkpoint_probe import heldout_alignment

        tables["alignment"] = heldout_alignment(model, tok, entry.kind, n_tokens=s.probe_tokens,
                                                seq_len=seq_len, seed=s.seed, probe=s.probe, language="en")
    seconds["probe"] = time.perf_counter() - t0
    flops = flops_per_token(model, seq_len)
    del model
    gc.collect()
    for key, frame in tables.items():   # atomic: an interrupted run leaves no half table
        atomic_write_text(out / f"{key}.csv", frame.to_csv(index=False, float_format=CSV_FLOAT))

    from tanbias.lab.models import gemm_peak  # here: it imports torch and transformers

    peak = gemm_peak()
    seconds["total"] = time.perf_counter() - t_start
    manifest = {
        "model": name, "kind": entry.kind, "arch": entry.arch, "upstream": entry.upstream,
        "packages": [f"{dist}=={ver}" for dist, ver, _ in entry.packages],
        "weight_file": entry.weight, "weight_sha256": entry.sha256, "licence": entry.licence,
        "caveats": list(entry.caveats), "install": entry.install,
        "settings": s.to_dict(), "languages": list(languages), "documents": documents,
        "n_tokens": n_total, "tokens_measured": measured, "seq_len": seq_len,
        "package_version": tanbias.__version__,
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
        "seconds": seconds,
        "tokens_per_s": n_total / max(seconds["forward"], 1e-9), "gemm_flops": peak, "flops_per_token": flops,
        "gemm_fraction": flops * n_total / max(seconds["forward"], 1e-9) / peak,
        "tables": {k: sha256(out / f"{k}.csv") for k in tables},
    }
    manifest["git"] = git_commit()
    manifest["peak_rss_gb"] = peak_rss_gb()
    # the manifest last: a folder without one is an unfinished measurement
    atomic_write_text(out / "manifest.json", json.dumps(manifest, indent=1, default=float) + "\n")
    return manifest


def peak_rss_gb() -> float:
    """The peak resident memory of this process so far, in GiB (Linux reports kB): one model per
    process (make pretrained) makes it the model's own peak."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20


def measure_all(names="all", root=None, fresh: bool = False, progress: bool = True,
                **settings) -> dict:
    """Measure several zoo models (``"all"``: every one), skipping those already measured.

    A model counts as measured when its folder has a ``manifest.json`` (written
    last, after every table) with the same settings; ``fresh=True`` measures
    again. Returns ``{name: manifest}`` (``skipped: True`` for the ones kept).
    Under ``torchrun`` the models are shared out over the ranks (rank r measures
    every world-th one and writes its own folder, as one process would); rank 0
    returns every model's manifest once all are written.
    """
    import torch

    from tanbias.lab import distributed

    names = list(zoo.ZOO) if names == "all" else [names] if isinstance(names, str) else list(names)
    for name in names:
        zoo.zoo_entry(name)                       # unknown names fail before any work
    base = Path(root) if root is not None else PRETRAINED_DIR
    ctx = distributed.context(torch.device("cpu"))
    out = {}
    for name in names[ctx.rank::ctx.world]:
        man_path = base / name / "manifest.json"
        wanted = MeasureSettings.for_zoo(name, **settings).to_dict()
        if man_path.exists() and not fresh:
            old = json.loads(man_path.read_text())
            if old.get("settings") == wanted:
                out[name] = {**old, "skipped": True}
                continue
        out[name] = measure(name, out_dir=base / name, progress=progress, **settings)
    if ctx.distributed:
        parts = [None] * ctx.world if ctx.main else None
        torch.distributed.gather_object(out, parts, dst=0)
        distributed.finish(ctx)
        if not ctx.main:
            return {}
        out = {name: m for part in parts for name, m in part.items()}
        out = {name: out[name] for name in names}
    return out


def load_pretrained(name: str, root=None) -> dict:
    """The committed tables of one model (pandas frames) and its manifest, checksums verified.

    Raises
    ------
    CorruptFileError
        A table is missing or its checksum differs; the message names the file
        and the command that regenerates it.
    """
    folder = Path(root) / name if root is not None else PRETRAINED_DIR / name
    return load_tables(folder, _rebuild(name))


def load_tables(folder, rebuild: str) -> dict:
    """The tables of a measurement folder (pandas frames) and its manifest, checksums verified.

    Parameters
    ----------
    folder : path-like
        Holds ``manifest.json`` and the tables it lists with their sha256.
    rebuild : str
        The command that writes the folder again, named by the errors.

    Raises
    ------
    CorruptFileError
        The manifest or a table is missing, or a table's checksum differs.
    """
    import pandas as pd

    folder = Path(folder)
    man_path = folder / "manifest.json"
    if not man_path.exists():
        raise CorruptFileError(man_path, rebuild, "is missing")
    try:
        manifest = json.loads(man_path.read_text())
    except json.JSONDecodeError as exc:
        raise CorruptFileError(man_path, rebuild, f"is not valid JSON ({exc})") from None
    out = {"manifest": manifest}
    for key, digest in manifest["tables"].items():
        path = folder / f"{key}.csv"
        if not path.exists() or sha256(path) != digest:
            raise CorruptFileError(path, rebuild, "is missing or fails its checksum")
        out[key] = pd.read_csv(path)
    return out
