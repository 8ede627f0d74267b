"""The numbers chapter 9 quotes about the released models, its checks and its tables (no torch).

Read from the committed measurements of :mod:`tanbias.lab.analysis.pretrained`
(``data/pretrained/<model>/``, :func:`~tanbias.lab.analysis.pretrained.load_pretrained`):

* :func:`analyse`, :func:`numbers`, :func:`words` — the face every experiment's report has
  (:mod:`tanbias.lab.analysis.findings`): the committed measurements of the zoo, the numbers chapter 9
  (and the closing page) glue, keys without the ``ch9_`` prefix, and the words of the premise by name;
* :func:`pretrained_table` — every number of the measurements, by key;
  :func:`pretrained_checks` — the numeric checks chapter 9 shows, each the stated rule applied;
* :func:`zoo_table`, :func:`estimator_table`, :func:`premise_table`, :func:`robustness_table`,
  :func:`sink_table`, :func:`alignment_table`, :func:`lab_comparison` — its tables.

The rules every verdict of chapter 9 is read with:

* **one layer** (the last): the 95 % interval over documents,
  :func:`tanbias.stats.interval_word` ("positive", "negative", "indistinguishable");
* **all blocks at once**: the simultaneous band over the blocks (layers 1 to L),
  :func:`tanbias.stats.band_word` ("positive" or "negative" when the band excludes 0
  at every block, "indistinguishable" when it contains 0 at every block, "mixed"
  otherwise); a count of significant layers is never the evidence;
* **the alignment test**: the median enrichment over the inner layers, beside the same
  median for a randomly initialised copy of the architecture (the null).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from tanbias.lab import zoo
from tanbias.lab.analysis import sweep_report
from tanbias.lab.analysis.pretrained import load_pretrained
from tanbias.lab.analysis.verdicts import PREMISE_WORDS, cell, premise_reading, property_word
from tanbias.lab.corpus import language_counts
from tanbias.numerals import format_spec
from tanbias.stats import band_word, check_greater, check_in_interval, check_word, interval_word

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["SHORT", "PAPER_RHO", "SINK_RATIO", "LANGUAGE_NAMES", "premise_rows", "Results", "results",
           "pretrained_table", "PRETRAINED_QUOTED", "analyse", "numbers", "words", "pretrained_checks", "zoo_table",
           "estimator_table", "premise_table", "premise_verdicts", "cells", "premise_readings", "robustness_table",
           "encoder_table", "sink_table", "alignment_table", "lab_comparison", "ci_text", "row_ci"]

#: Short keys of the zoo models for glued numbers (letters, digits, underscores).
SHORT = {"smollm2-135m": "smollm2", "gemma3-270m": "gemma3", "minilm-l6": "minilm", "me5-small": "me5"}
#: The paper's reported Spearman correlation of log frequency with distance to the centroid (decoders).
PAPER_RHO = -0.5
#: A first position whose median norm exceeds this many times the median elsewhere is called a sink.
SINK_RATIO = 10.0
#: The languages' names in tables.
LANGUAGE_NAMES = {"en": "English", "de": "German", "fr": "French", "es": "Spanish", "it": "Italian",
                  "nl": "Dutch", "pt": "Portuguese", "pl": "Polish", "ru": "Russian", "cs": "Czech"}


def premise_rows(tables, estimator: str = "matched", m: int | None = None) -> "pd.DataFrame":
    """The premise rows of one model for one estimator (``"matched"``, ``"plain"``) at ``m``
    (default: the measurement's ``m``)."""
    p = tables["premise"]
    m = tables["manifest"]["settings"]["m"] if m is None else m
    return p[(p["estimator"] == estimator) & (p["m"] == m)]


def layer_ranges(layers) -> str:
    """Layers as runs, one word: ``[1, 2, 3, 7, 9, 10]`` -> ``"1–3,7,9–10"``; none -> ``"none"``.

    Example
    -------
    >>> layer_ranges([1, 2, 3, 7, 9, 10]), layer_ranges([])
    ('1–3,7,9–10', 'none')
    """
    xs = sorted(int(x) for x in layers)
    if not xs:
        return "none"
    runs, start, prev = [], xs[0], xs[0]
    for x in xs[1:] + [None]:
        if x is not None and x == prev + 1:
            prev = x
            continue
        runs.append(f"{start}" if start == prev else f"{start}–{prev}")
        if x is not None:
            start = prev = x
    return ",".join(runs)


def _languages(tab) -> list[str]:
    return list(dict.fromkeys(tab["anisotropy"]["language"]))


#: The short name of each premise reading in chapter 9's keys and words
READ_SHORT = {"radius_t": "t", "centroid_distance": "dist", "self_similarity": "self"}
#: The short name of each frequency source in chapter 9's keys and words (the corpus' counts, wordfreq's web)
SOURCE_SHORT = {"corpus": "corpus", "wordfreq": "web"}


@dataclass(frozen=True)
class Results:
    """Chapter 9's results of one or several measured models, as tables (no glue key in them).

    Attributes
    ----------
    premise : pandas.DataFrame
        One row per model x language x reading (``radius_t``, ``centroid_distance``,
        ``self_similarity``) x frequency source (``corpus``, ``wordfreq``): at the last layer the
        matched ρ, its interval over documents, its types and its word (``rho``, ``lo``, ``hi``,
        ``n``, ``word``); over the blocks the band's word, the range of ρ and where the band is
        above or below 0 (``band``, ``min``, ``max``, ``band_pos``, ``band_pos_layers``,
        ``band_neg``, ``band_neg_layers``); the plain estimator's ρ and interval over types at the
        last layer (``plain_rho``, ``plain_lo``, ``plain_hi``; corpus frequencies only).
    languages : pandas.DataFrame
        One row per model x language: the tokens read, the radius t's ρ over the other ``m``
        (``robust_min``, ``robust_max``), anisotropy (``cos_max`` and its layer, ``iso_max``,
        ``top1_max``, outliers), the first position (``sink_ratio_max`` ... NaN for an encoder)
        and curvature (``curv_median`` ...).
    alignment : pandas.DataFrame
        One row per model with a language-model head x network (``trained``, ``null``): the
        enrichment over the inner layers (``median``, ``min``, ``max``, ``below``) and at the last.
    models : pandas.DataFrame
        One row per model: its layers, speed, minutes, languages; the alignment test's layers,
        its trained-over-null ratio and tokens.
    """
    premise: "pd.DataFrame"
    languages: "pd.DataFrame"
    alignment: "pd.DataFrame"
    models: "pd.DataFrame"
    records: dict

    def premise_row(self, model: str, language: str, reading: str, source: str = "corpus") -> dict:
        """One row of :attr:`premise`, as a dict."""
        return self.records["premise"][(model, language, reading, source)]

    def language_row(self, model: str, language: str) -> dict:
        """One row of :attr:`languages`, as a dict."""
        return self.records["languages"][(model, language)]

    def alignment_row(self, model: str, network: str) -> dict | None:
        """One row of :attr:`alignment` (``network``: ``"trained"`` or ``"null"``), as a dict; None
        for a model without the alignment test."""
        return self.records["alignment"].get((model, network))

    def model_row(self, model: str) -> dict:
        """One row of :attr:`models`, as a dict."""
        return self.records["models"][model]


def _premise_records(name: str, tab: dict, L: int, lang: str) -> dict:
    matched, plain = premise_rows(tab), premise_rows(tab, "plain")
    out = {}
    for reading in READ_SHORT:
        for source in SOURCE_SHORT:
            g = matched[(matched["language"] == lang) & (matched["reading"] == reading)
                        & (matched["source"] == source)].set_index("layer").sort_index()
            last = g.loc[L]
            body = g.loc[1:L]
            row = {"model": name, "language": lang, "reading": reading, "source": source,
                   "rho": last["rho"], "lo": last["lo"], "hi": last["hi"], "n": int(last["n"]),
                   "word": interval_word(last["lo"], last["hi"]), "band": band_word(body["band_lo"], body["band_hi"]),
                   "min": float(body["rho"].min()), "max": float(body["rho"].max())}
            for side, where in (("pos", body["band_lo"] > 0), ("neg", body["band_hi"] < 0)):
                row[f"band_{side}"] = int(where.sum())
                row[f"band_{side}_layers"] = layer_ranges(body.index[where.to_numpy()])
            pl = plain[(plain["language"] == lang) & (plain["reading"] == reading)
                       & (plain["source"] == source) & (plain["layer"] == L)] if source == "corpus" else plain.iloc[:0]
            row["plain_rho"], row["plain_lo"], row["plain_hi"] = ((float(pl["rho"].iloc[0]), float(pl["lo"].iloc[0]),
                                                                  float(pl["hi"].iloc[0])) if len(pl) else (np.nan,) * 3)
            row["plain"] = bool(len(pl))
            out[(name, lang, reading, source)] = row
    return out


def _language_record(name: str, tab: dict, L: int, lang: str) -> dict:
    man = tab["manifest"]
    row = {"model": name, "language": lang, "tokens": int(man["tokens_measured"][lang])}
    rob = tab["premise"]
    rob = rob[(rob["language"] == lang) & (rob["estimator"] == "matched") & (rob["layer"] == L)
              & (rob["reading"] == "radius_t") & (rob["source"] == "corpus")]
    row["robust_min"], row["robust_max"] = float(rob["rho"].min()), float(rob["rho"].max())
    an = tab["anisotropy"]
    an = an[an["language"] == lang].set_index("layer").sort_index()
    body = an.loc[1:L]
    row["sink"] = bool(np.isfinite(body["sink_norm_ratio"]).any())
    if row["sink"]:
        top = body["sink_norm_ratio"].idxmax()
        row["sink_ratio_max"], row["sink_ratio_layer"] = float(body.loc[top, "sink_norm_ratio"]), int(top)
        row["top1_with_sink_max"] = float(body["top1_share_with_sink"].max())
        mid = L // 2
        row["spread_mid"] = float(an.loc[mid, "spread"])
        row["spread_mid_with_sink"] = float(an.loc[mid, "spread_with_sink"])
        row["spread_mid_layer"] = int(mid)
    top = body["mean_cosine"].idxmax()
    row["cos_max"], row["cos_max_layer"] = float(body.loc[top, "mean_cosine"]), int(top)
    row["cos_max_with_sink"] = float(body.loc[top, "mean_cosine_with_sink"])
    row["iso_max"] = float(body["isoscore_star"].max())
    row["top1_max"] = float(body["top1_share"].max())
    dims = str(body.loc[top, "outlier_dims"]).split() if isinstance(body.loc[top, "outlier_dims"], str) else []
    row["outliers"] = ",".join(dims[:3]) if dims else "none"
    row["outlier_share"] = 100 * float(body.loc[top, "outlier_share"]) if dims else 0.0
    c = tab["curvature"]
    c = c[(c["language"] == lang) & (c["layer"] > 0)]
    row["curv_median"] = float(c["slope"].median())
    row["curv_min"], row["curv_max"] = float(c["slope"].min()), float(c["slope"].max())
    row["curv_two"] = int(((c["lo"] <= 2) & (c["hi"] >= 2)).sum())
    row["curv_zero"] = int(((c["lo"] <= 0) & (c["hi"] >= 0)).sum())
    row["curv_layers"] = len(c)
    return row


def _alignment_records(name: str, tab: dict, L: int) -> dict:
    a = tab["alignment"]
    out = {}
    for label, network in (("trained", "trained"), ("random-init", "null")):
        g = a[a["model"] == label]
        inner = g[(g["layer"] > 0) & (g["layer"] < L)]
        out[(name, network)] = {"model": name, "network": network, "median": float(inner["enrichment"].median()),
                                "min": float(inner["enrichment"].min()), "max": float(inner["enrichment"].max()),
                                "last": float(g.loc[g["layer"] == L, "enrichment"].iloc[0]),
                                "below": int((inner["enrichment"] < 1).sum())}
    return out


def results(pretrained: dict) -> Results:
    """Chapter 9's results of the measured models, as tables: the one reading of the measurements that
    :func:`pretrained_table` (chapter 9's numbers), :func:`words`, the chapter's tables and the
    measurement command's report (:func:`tanbias.lab.analysis.measure_report.findings`) all read.

    Parameters
    ----------
    pretrained : dict
        ``{model name: tables}``: :func:`~tanbias.lab.analysis.pretrained.load_pretrained`, or a
        measurement of the command (any model: its rows carry its own name).

    Returns
    -------
    Results
    """
    import pandas as pd

    recs = {"premise": {}, "languages": {}, "alignment": {}, "models": {}}
    for name, tab in pretrained.items():
        man = tab["manifest"]
        L = int(tab["anisotropy"]["layer"].max())
        langs = _languages(tab)
        for lang in langs:
            recs["premise"].update(_premise_records(name, tab, L, lang))
            recs["languages"][(name, lang)] = _language_record(name, tab, L, lang)
        rhos = [recs["premise"][(name, lang, "radius_t", "corpus")]["rho"] for lang in langs]
        coss = [recs["languages"][(name, lang)]["cos_max"] for lang in langs]
        model = {"model": name, "layers": L, "tokens_per_s": man["tokens_per_s"],
                 "gemm_pct": 100 * (man.get("gemm_fraction") or np.nan), "minutes": man["seconds"]["total"] / 60,
                 "languages": len(langs), "t_corpus_rho_lang_min": float(min(rhos)),
                 "t_corpus_rho_lang_max": float(max(rhos)), "cos_max_lang_min": float(min(coss)),
                 "cos_max_lang_max": float(max(coss)), "alignment": "alignment" in tab}
        if "alignment" in tab:
            a = tab["alignment"]
            recs["alignment"].update(_alignment_records(name, tab, L))
            model["enrich_layers"] = int((a.loc[a["model"] == "trained", "layer"].between(1, L - 1)).sum())
            tr = a[a["model"] == "trained"].set_index("layer")["enrichment"]
            nl = a[a["model"] == "random-init"].set_index("layer")["enrichment"]
            both = tr.index.intersection(nl.index)
            both = both[(both > 0) & (both < L)]
            model["enrich_ratio_median"] = float(np.exp(np.median(np.log(tr[both] / nl[both]))))
            model["probe_tokens"] = int(a["n_test"].median())
        recs["models"][name] = model
    return Results(**{k: pd.DataFrame(list(v.values())) for k, v in recs.items()}, records=recs)


def pretrained_table(pretrained: dict) -> dict:
    """Every number (and single word) of the released models' measurements, by key: chapter 9's glue.

    Keys are ``ch9_<model>_<language>_<what>`` (``<model>`` from :data:`SHORT`, another
    model's own name; the
    reading is ``t``, ``dist`` or ``self``): per language, the tokens read; at the last
    layer, the matched reading's ρ with log frequency, its interval over documents and
    its word (``_corpus_``/``_web_`` for the two frequency sources), the plain
    estimator's ρ and its interval over types; over the blocks, the range of ρ and the
    band word (``_band``); ρ at the other ``m``; the sink's norm ratio and what it does
    to the anisotropy; anisotropy and outlier dimensions without it; the curvature
    slopes. Per model: the speed; for the decoders, the alignment test, trained and
    random-init. Every one is a cell of :func:`results`' tables, named for the chapter; and
    ``curv_freq_rho``, ρ of log frequency with the normal share at the middle layer.

    Parameters
    ----------
    pretrained : dict
        ``{model name: load_pretrained(name)}``.
    """
    from scipy.stats import spearmanr

    res = results(pretrained)
    out = {"ch9_corpus_words_m": sum(c["words"] for c in language_counts().values()) / 1e6}
    for name, tab in pretrained.items():
        k = f"ch9_{SHORT.get(name, name)}"      # another model (python -m tanbias measure): its own name
        mod = res.model_row(name)
        L = mod["layers"]
        for key in ("layers", "tokens_per_s", "gemm_pct", "minutes"):
            out[f"{k}_{key}"] = mod[key]
        for lang in _languages(tab):
            kl = f"{k}_{lang}"
            row = res.language_row(name, lang)
            out[f"{kl}_tokens"] = row["tokens"]
            for reading, short in READ_SHORT.items():
                for source, src in SOURCE_SHORT.items():
                    p = res.premise_row(name, lang, reading, source)
                    key = f"{kl}_{short}_{src}"
                    for part in ("rho", "lo", "hi", "n"):
                        out[f"{key}_{part}"] = p[part]
                    out[f"{key}_sign"], out[f"{key}_band"] = p["word"], p["band"]
                    for part in ("min", "max", "band_pos", "band_pos_layers", "band_neg", "band_neg_layers"):
                        out[f"{key}_{part}"] = p[part]
                p = res.premise_row(name, lang, reading, "corpus")
                if p["plain"]:
                    for part in ("rho", "lo", "hi"):
                        out[f"{kl}_{short}_plain_{part}"] = p[f"plain_{part}"]
            out[f"{kl}_t_robust_min"], out[f"{kl}_t_robust_max"] = row["robust_min"], row["robust_max"]
            parts = ("sink_ratio_max", "sink_ratio_layer", "top1_with_sink_max", "spread_mid", "spread_mid_with_sink",
                     "spread_mid_layer") if row["sink"] else ()
            for part in (*parts, "cos_max", "cos_max_layer", "cos_max_with_sink", "iso_max", "top1_max", "outliers",
                         "outlier_share"):
                out[f"{kl}_{part}"] = row[part]
            types = tab["types"]
            mid = types[(types["language"] == lang) & (types["layer"] == L // 2) & (types["normal_share"] > 0)
                        & (types["corpus_count"] > 0)]
            out[f"{kl}_curv_freq_rho"] = float(spearmanr(np.log(mid["corpus_count"]), mid["normal_share"]).statistic)
            for part in ("curv_median", "curv_min", "curv_max", "curv_two", "curv_zero", "curv_layers"):
                out[f"{kl}_{part}"] = row[part]
        for part in ("languages", "t_corpus_rho_lang_min", "t_corpus_rho_lang_max", "cos_max_lang_min",
                     "cos_max_lang_max"):
            out[f"{k}_{part}"] = mod[part]
        if mod["alignment"]:
            for network in ("trained", "null"):
                a = res.alignment_row(name, network)
                for part in ("median", "min", "max", "last", "below"):
                    out[f"{k}_enrich_{network}_{part}"] = a[part]
            for part in ("enrich_layers", "enrich_ratio_median", "probe_tokens"):
                out[f"{k}_{part}"] = mod[part]
    return out


#: what chapter 9 and the closing page quote of each model (``ch9_<model>_<key>``):
#: :func:`numbers` returns these of :func:`pretrained_table`, with ``corpus_words_m``
PRETRAINED_QUOTED: dict = {
    "smollm2": ("de_dist_corpus_band_neg_layers", "de_dist_corpus_max", "de_dist_corpus_min", "de_dist_web_rho",
        "de_t_corpus_band_pos_layers", "de_t_corpus_hi", "de_t_corpus_lo", "de_t_corpus_rho", "de_tokens",
        "en_cos_max", "en_cos_max_layer", "en_cos_max_with_sink", "en_curv_freq_rho", "en_curv_max",
        "en_curv_median", "en_curv_min", "en_dist_corpus_band_neg_layers", "en_dist_corpus_max",
        "en_dist_corpus_min", "en_dist_corpus_rho", "en_dist_plain_rho", "en_dist_web_max",
        "en_dist_web_min", "en_iso_max", "en_outlier_share", "en_outliers", "en_self_web_rho",
        "en_sink_ratio_layer", "en_sink_ratio_max", "en_spread_mid", "en_spread_mid_with_sink",
        "en_spread_mid_layer",
        "en_t_corpus_band_pos_layers", "en_t_corpus_hi", "en_t_corpus_lo", "en_t_corpus_rho",
        "en_t_plain_hi", "en_t_plain_lo", "en_t_plain_rho", "en_t_robust_max", "en_t_robust_min",
        "en_tokens", "en_top1_max", "en_top1_with_sink_max", "enrich_layers", "enrich_null_below",
        "enrich_null_median", "enrich_ratio_median", "enrich_trained_below", "enrich_trained_last",
        "enrich_trained_max", "enrich_trained_median", "enrich_trained_min", "gemm_pct", "minutes",
        "probe_tokens", "tokens_per_s"),
    "gemma3": ("de_dist_corpus_rho", "de_self_corpus_rho", "de_t_corpus_band_neg_layers", "de_t_corpus_rho",
        "de_tokens", "en_cos_max", "en_cos_max_layer", "en_curv_freq_rho", "en_curv_max", "en_curv_median",
        "en_curv_min", "en_dist_corpus_hi", "en_dist_corpus_lo", "en_dist_corpus_rho", "en_outlier_share",
        "en_outliers", "en_self_corpus_rho", "en_sink_ratio_max", "en_t_corpus_band_pos_layers",
        "en_t_corpus_hi", "en_t_corpus_lo", "en_t_corpus_rho", "en_t_robust_max", "en_t_robust_min",
        "en_tokens", "en_top1_max", "enrich_layers", "enrich_null_median", "enrich_trained_below",
        "enrich_trained_median", "minutes"),
    "minilm": ("en_cos_max", "en_curv_freq_rho", "en_curv_layers", "en_curv_median", "en_curv_two",
        "en_dist_corpus_hi", "en_dist_corpus_lo", "en_dist_corpus_rho", "en_iso_max", "en_self_corpus_rho",
        "en_t_corpus_band_pos_layers", "en_t_corpus_hi", "en_t_corpus_lo", "en_t_corpus_rho",
        "en_t_robust_max", "en_t_robust_min", "en_t_web_rho", "en_tokens", "minutes"),
    "me5": ("languages", "en_tokens", "en_t_corpus_rho", "en_t_corpus_lo", "en_t_corpus_hi",
        "t_corpus_rho_lang_min", "t_corpus_rho_lang_max", "en_dist_corpus_rho", "en_dist_corpus_lo",
        "en_dist_corpus_hi", "en_cos_max", "en_cos_max_layer", "en_iso_max", "cos_max_lang_min",
        "cos_max_lang_max", "en_curv_median", "en_curv_min", "en_curv_max", "layers", "minutes"),
}


def analyse() -> dict:
    """``{model: tables}``: the committed measurement of every model of the zoo, checksums verified
    (:func:`~tanbias.lab.analysis.pretrained.load_pretrained`)."""
    return {name: load_pretrained(name) for name in zoo.ZOO}


def numbers(pretrained: dict) -> dict:
    """The numbers (and single words) chapter 9 and the closing page quote about the released
    models (keys without the ``ch9_`` prefix): :data:`PRETRAINED_QUOTED` of :func:`pretrained_table`."""
    table = pretrained_table(pretrained)
    return {"corpus_words_m": table["ch9_corpus_words_m"],
            **{f"{m}_{k}": table[f"ch9_{m}_{k}"] for m, keys in PRETRAINED_QUOTED.items()
               if f"ch9_{m}_layers" in table for k in keys}}


def pretrained_checks(pretrained: dict) -> dict:
    """The numeric checks chapter 9 displays, by name, each able to fail.

    The chapter states each verdict in its prose and shows the check with
    ``.require()`` (the measurement agrees) or ``.refute()`` (the measurement
    rejects the prediction): the verdict is written in the chapter, not derived
    here, so data that flip it break the build. Per model ``m`` and language ``l``:

    * ``<m>_<l>_paper_t``: the paper's ρ = −0.5 inside the last layer's interval for the
      radius t (corpus frequencies);
    * ``<m>_<l>_curvature_two``: the slope 2 of a curved manifold within the range of the
      layers' fitted normal-share slopes;
    * ``<m>_sink`` (decoders): the first position is a sink, its median norm above
      :data:`SINK_RATIO` times the median elsewhere at some block (English text);
    * ``<m>_enrichment``, ``<m>_beyond_null`` (decoders): the median enrichment over the
      inner layers exceeds 1; it exceeds the random-init copy's median.

    The words of the premise are :func:`words`. Read from :func:`results`.
    """
    res = results(pretrained)
    checks = {}
    for name, tab in pretrained.items():
        m = SHORT[name]
        for lang in _languages(tab):
            t, row = res.premise_row(name, lang, "radius_t"), res.language_row(name, lang)
            where = f"{name}, {LANGUAGE_NAMES.get(lang, lang)}"
            checks[f"{m}_{lang}_paper_t"] = check_in_interval(
                f"{where}, last layer: the paper's ρ = −0.5 in the 95 % interval of ρ(log frequency, t)",
                PAPER_RHO, t["lo"], t["hi"])
            checks[f"{m}_{lang}_curvature_two"] = check_in_interval(
                f"{where}: the slope 2 of a curved manifold within the range of the layers' "
                "fitted normal-share slopes", 2.0, row["curv_min"], row["curv_max"])
        en = res.records["languages"].get((name, "en"))
        if en is not None and en["sink"]:
            checks[f"{m}_sink"] = check_greater(
                f"{name}, English: the first position's median norm over the median elsewhere, at its "
                f"largest (layer {en['sink_ratio_layer']})", en["sink_ratio_max"], SINK_RATIO)
        trained, null = res.alignment_row(name, "trained"), res.alignment_row(name, "null")
        if trained is not None:
            checks[f"{m}_enrichment"] = check_greater(
                f"{name}: median enrichment over the inner layers (1 = a random subspace)", trained["median"], 1.0)
            checks[f"{m}_beyond_null"] = check_greater(
                f"{name}: median enrichment over the inner layers, trained, against the same for a "
                f"randomly initialised copy ({null['median']:.2f})", trained["median"], null["median"])
    return checks


def words(pretrained: dict) -> dict:
    """The words chapter 9 states about the premise, by name, for :func:`tanbias.stats.check_words`.

    Read from :func:`results`' premise table. A name is ``<model>_<language>_<reading>_<source>_<rule>``
    (reading ``t``, ``dist`` or ``self``; source ``corpus`` or ``web``; rule ``band``, the band over the
    blocks, :func:`tanbias.stats.band_word`, or ``last``, the last layer's interval,
    :func:`tanbias.stats.interval_word`), e.g. ``smollm2_en_t_corpus_band``.

    Parameters
    ----------
    pretrained : dict
        :func:`analyse`: ``{model name: load_pretrained(name)}``.
    """
    out = {}
    for p in results(pretrained).records["premise"].values():
        stem = (f"{SHORT.get(p['model'], p['model'])}_{p['language']}_{READ_SHORT[p['reading']]}_"
                f"{SOURCE_SHORT[p['source']]}")
        out[f"{stem}_last"], out[f"{stem}_band"] = p["word"], p["band"]
    return out


def zoo_table():
    """The zoo's models as a table: what each is, its size and its licence (its name; the notes in
    brackets, such as where a copy of the terms ships, are :data:`tanbias.lab.zoo.ZOO`'s)."""
    import pandas as pd

    rows = [{"model": e.name, "kind": e.kind, "architecture": e.arch, "blocks": e.n_layers,
             "width": e.hidden_size, "parameters (M)": round(e.n_params / 1e6, 1),
             "copy of": e.upstream, "licence": e.licence.split(" (")[0]} for e in zoo.ZOO.values()]
    return pd.DataFrame(rows).set_index("model")


def ci_text(v, lo, hi) -> str:
    """A correlation with its interval as the tables and the measurement report print it.

    >>> ci_text(-0.25, -0.4, -0.1)
    '−0.25 [−0.40, −0.10]'
    """
    return f"{format_spec(v, '+.2f')} [{format_spec(lo, '+.2f')}, {format_spec(hi, '+.2f')}]"


def row_ci(row: dict, prefix: str = "") -> str:
    """:func:`ci_text` of a row of :func:`results` (``rho``, ``lo``, ``hi``, after ``prefix``).

    >>> row_ci({"rho": -0.25, "lo": -0.4, "hi": -0.1})
    '−0.25 [−0.40, −0.10]'
    """
    return ci_text(row[f"{prefix}rho"], row[f"{prefix}lo"], row[f"{prefix}hi"])


def estimator_table(pretrained: dict):
    """At the last layer, per model and language: ρ(log corpus frequency, reading) of the plain
    estimator (all occurrences; interval over types) beside the count-matched one (interval
    over documents)."""
    import pandas as pd

    rows = []
    for name, tab in pretrained.items():
        L = int(tab["anisotropy"]["layer"].max())
        for lang in _languages(tab):
            row = {"model": name, "language": LANGUAGE_NAMES.get(lang, lang)}
            for est, label in (("plain", "plain"), ("matched", "count-matched")):
                p = premise_rows(tab, est)
                p = p[(p["language"] == lang) & (p["source"] == "corpus") & (p["layer"] == L)].set_index("reading")
                for reading in ("radius_t", "centroid_distance"):
                    r = p.loc[reading]
                    row[f"({'a' if reading == 'radius_t' else 'b'}) {label}"] = ci_text(r["rho"], r["lo"], r["hi"])
            rows.append(row)
    return pd.DataFrame(rows).set_index(["model", "language"])


def premise_table(pretrained: dict):
    """Per model, language and reading: ρ at the last layer (interval over documents, its word) and
    over the blocks (range of ρ, the band's word), corpus frequencies."""
    import pandas as pd

    res = results(pretrained)
    rows = []
    for name, tab in pretrained.items():
        for lang in _languages(tab):
            for reading in READ_SHORT:
                p = res.premise_row(name, lang, reading)
                rows.append({"model": name, "language": LANGUAGE_NAMES.get(lang, lang), "reading": reading,
                             "types": p["n"], "ρ, last layer": row_ci(p), "last layer": p["word"],
                             "ρ over the blocks": f"{format_spec(p['min'], '+.2f')} to {format_spec(p['max'], '+.2f')}",
                             "band over the blocks": p["band"], "band above 0 at": p["band_pos_layers"],
                             "band below 0 at": p["band_neg_layers"]})
    return pd.DataFrame(rows).set_index(["model", "language", "reading"])




def premise_verdicts(pretrained: dict):
    """The premise at a glance, one row per model and language (corpus frequencies): what the radius
    t says at the last layer (:data:`~tanbias.lab.analysis.verdicts.PREMISE_WORDS` of its interval word) and over the blocks (of
    the band's word), its ρ with the 95 % interval over documents, and the word of the other
    reading, the centroid's distance to the layer mean, at the last layer.

    The narrow face of :func:`premise_table`, which holds every reading, range and layer list.

    Parameters
    ----------
    pretrained : dict
        ``{model name: load_pretrained(name)}``.

    Returns
    -------
    pandas.DataFrame
        Indexed by model and language.
    """
    import pandas as pd

    res = results(pretrained)
    rows = []
    for name, tab in pretrained.items():
        for lang in _languages(tab):
            t, dist = res.premise_row(name, lang, "radius_t"), res.premise_row(name, lang, "centroid_distance")
            rows.append({"model": name, "language": LANGUAGE_NAMES.get(lang, lang),
                         "premise, last layer": PREMISE_WORDS[t["word"]],
                         "ρ(log frequency, t) [95 %]": row_ci(t),
                         "premise over the blocks": PREMISE_WORDS[t["band"]],
                         "centroid distance, last layer": dist["word"]})
    return pd.DataFrame(rows).set_index(["model", "language"])


def encoder_table(pretrained: dict, names=("minilm-l6", "me5-small")):
    """The two contrastive sentence encoders side by side, one row per model and language: the
    premise (matched ρ of log corpus frequency with the radius t at the last layer, its interval
    over documents and its word; the band's word over the blocks), the anisotropy (peak mean
    cosine over blocks 1..L, its block, peak IsoScore*) and the curvature (median slope over the
    blocks, and at how many blocks the interval holds 2)."""
    import pandas as pd

    res = results({n: pretrained[n] for n in names})
    rows = []
    for name in names:
        for lang in _languages(pretrained[name]):
            t, row = res.premise_row(name, lang, "radius_t"), res.language_row(name, lang)
            rows.append({"model": name, "language": LANGUAGE_NAMES.get(lang, lang),
                         "tokens": row["tokens"], "types (m = 8)": t["n"],
                         "ρ(freq, t), last block [95 %]": row_ci(t),
                         "last block": t["word"], "band over blocks": t["band"],
                         "peak mean cosine": format_spec(row['cos_max'], ".2f"),
                         "at block": row["cos_max_layer"],
                         "peak IsoScore*": format_spec(row['iso_max'], ".2f"),
                         "median curvature slope": format_spec(row['curv_median'], "+.2f"),
                         "blocks whose slope interval holds 2": f"{row['curv_two']} of {row['curv_layers']}"})
    return pd.DataFrame(rows)


def robustness_table(pretrained: dict):
    """The matched ρ(log corpus frequency, radius t) at the first, middle and last layer for each ``m``."""
    import pandas as pd

    rows = []
    for name, tab in pretrained.items():
        p = tab["premise"]
        p = p[(p["estimator"] == "matched") & (p["reading"] == "radius_t") & (p["source"] == "corpus")]
        layers = sorted(set(p.loc[p["m"] != tab["manifest"]["settings"]["m"], "layer"]))
        p = p[p["layer"].isin(layers)]
        piv = p.pivot_table(index=["language", "layer"], columns="m", values="rho")
        piv.columns = [f"m = {c}" for c in piv.columns]
        piv = piv.reset_index()
        piv["language"] = piv["language"].map(lambda x: LANGUAGE_NAMES.get(x, x))
        piv.insert(0, "model", name)
        rows.append(piv)
    return pd.concat(rows, ignore_index=True).round(2).set_index(["model", "language", "layer"])


def sink_table(pretrained: dict):
    """Per decoder and language, at the layer where the first position's norm stands out most: that
    ratio, and the anisotropy numbers with and without the first position."""
    import pandas as pd

    rows = []
    for name, tab in pretrained.items():
        an = tab["anisotropy"]
        if not np.isfinite(an["sink_norm_ratio"]).any():
            continue
        for lang in _languages(tab):
            a = an[(an["language"] == lang) & (an["layer"] > 0)].set_index("layer")
            top = a["sink_norm_ratio"].idxmax()
            r = a.loc[top]
            rows.append({"model": name, "language": LANGUAGE_NAMES.get(lang, lang), "layer": int(top),
                         "sink norm / median norm": round(float(r["sink_norm_ratio"]), 1),
                         "spread, with sink": round(float(r["spread_with_sink"]), 1),
                         "spread, without": round(float(r["spread"]), 1),
                         "top-1 share, with": round(float(r["top1_share_with_sink"]), 3),
                         "top-1 share, without": round(float(r["top1_share"]), 3),
                         "mean cosine, with": round(float(r["mean_cosine_with_sink"]), 3),
                         "mean cosine, without": round(float(r["mean_cosine"]), 3)})
    return pd.DataFrame(rows).set_index(["model", "language"])


def alignment_table(pretrained: dict):
    """Per decoder: the enrichment over the inner layers, trained and random-init (median, range)."""
    import pandas as pd

    res = results(pretrained)
    rows = []
    for name in pretrained:
        for short, label in (("trained", "released checkpoint"), ("null", "random-init copy")):
            a = res.alignment_row(name, short)
            if a is None:
                continue
            rows.append({"model": name, "network": label, "median enrichment": round(a["median"], 2),
                         "range": f"{format_spec(a['min'], '.2f')} to {format_spec(a['max'], '.2f')}", "layers below 1": a["below"],
                         "last layer": round(a["last"], 2)})
    return pd.DataFrame(rows).set_index(["model", "network"])


def lab_comparison(pretrained: dict, sw, models):
    """The lab's small models (chapter 8, natural data) beside the released ones (English).

    ``pretrained`` is :func:`analyse` (read through :func:`results`), ``sw`` the sweep's
    :class:`~tanbias.lab.analysis.sweep_report.SweepAnalysis`, ``models`` the zoo models to show.
    """
    import pandas as pd

    res = results({name: pretrained[name] for name in models})
    rho = sweep_report.radius_table(sw)
    late = sweep_report.cells_table(sw)["enrichment, late"]
    cols = {f"lab {kind}s (ch 8)": (ci_text(*rho.loc[(kind, "natural"), ["mean", "lo", "hi"]]) + " (over seeds)",
                                    f"×{late.loc[(kind, 'natural')]:.1f} " + note)
            for kind, note in (("decoder", "(geometric mean over layers, last step)"),
                               ("encoder", "(same)"))}
    for name in models:
        r = row_ci(res.premise_row(name, "en", "radius_t")) + " (English)"
        trained, null = res.alignment_row(name, "trained"), res.alignment_row(name, "null")
        enr = (f"×{trained['median']:.2f} (median over inner layers; random-init ×{null['median']:.2f})"
               if trained is not None else "no LM head: not tested")
        cols[name] = (r, enr)
    return pd.DataFrame(cols, index=["ρ(log frequency, radius t), last layer",
                                     "alignment enrichment"])


#: the released decoders, whose readings decide the closing table's cells (the encoders measure no premise)
DECODERS = ("smollm2-135m", "gemma3-270m")


def premise_readings(pretrained: dict) -> list[str]:
    """Each released decoder's reading of the premise at the last layer, every language
    (:func:`tanbias.lab.analysis.verdicts.premise_reading`)."""
    pv = premise_verdicts(pretrained)
    return [premise_reading(w) for (model, _), w in pv["premise, last layer"].items() if model in DECODERS]


def cells(pretrained: dict) -> list[dict]:
    """The released models' cells of the closing table (:func:`tanbias.lab.analysis.verdicts.cell`): the
    premise and the two mechanisms, each read by chapter 9 in the released decoders."""
    checks = pretrained_checks(pretrained)
    released = ["as predicted" if checks[f"{m}_beyond_null"].passed else "neither" for m in ("smollm2", "gemma3")]
    correlational = {"rule": "correlational", "anisotropy": "not anisotropy"}
    return [cell("premise", "released", property_word(premise_readings(pretrained)), "09_pretrained_models",
                 "sec-ch9-premise", **correlational),
            cell("mechanisms", "released", property_word(released), "09_pretrained_models", "sec-ch9-alignment",
                 qualifier="that gradients follow the activations' variance is not ruled out", **correlational)]
