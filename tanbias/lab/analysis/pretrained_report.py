"""The numbers chapter 9 quotes about the released models, its checks and its tables (no torch).

Read from the committed measurements of :mod:`tanbias.lab.analysis.pretrained`
(``data/pretrained/<model>/``, :func:`~tanbias.lab.analysis.pretrained.load_pretrained`):

* :func:`pretrained_table` — every number of the measurements, by key;
  :func:`pretrained_numbers` — those chapter 9 (and the closing page) glue;
  :func:`pretrained_checks` — the checks chapter 9 shows;
* :func:`zoo_table`, :func:`robustness_summary`, :func:`lab_comparison` — its tables.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from tanbias.stats import interval_word

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["SHORT", "PAPER_RHO", "premise_main", "pretrained_table", "PRETRAINED_QUOTED", "pretrained_numbers",
           "pretrained_checks", "zoo_table", "robustness_summary", "lab_comparison"]

#: Short keys of the zoo models for glued numbers (letters, digits, underscores).
SHORT = {"smollm2-135m": "smollm2", "gemma3-270m": "gemma3", "minilm-l6": "minilm"}
#: The paper's reported Spearman correlation of log frequency with distance to the centroid (decoders).
PAPER_RHO = -0.5


def premise_main(tables) -> "pd.DataFrame":
    """The premise rows at the full text and the default ``min_count`` (duplicates dropped)."""
    p = tables["premise"]
    s = tables["manifest"]["settings"]
    p = p[(p["n_tokens"] == p["n_tokens"].max()) & (p["min_count"] == s["min_count"])]
    return p.drop_duplicates(["layer", "source", "reading"])


def pretrained_table(pretrained: dict) -> dict:
    """Every number (and single word) of the released models' measurements, by key (``ch9_<model>_...``).

    Per model: the text read and the speed; the premise under its three readings at
    the last layer (Spearman ρ with its interval, ``_sign``: :func:`tanbias.stats.interval_word`)
    and over the blocks; anisotropy, outlier dimensions, curvature slopes, the
    post-hoc alignment (decoders).

    Parameters
    ----------
    pretrained : dict
        ``{model name: load_pretrained(name)}``.
    """
    from tanbias.lab.corpus import language_counts

    out = {"ch9_corpus_words_m": sum(c["words"] for c in language_counts().values()) / 1e6}
    for name, tab in pretrained.items():
        k = f"ch9_{SHORT[name]}"
        man = tab["manifest"]
        L = int(tab["anisotropy"]["layer"].max())
        out[f"{k}_tokens"] = man["n_tokens"]
        out[f"{k}_layers"] = L
        out[f"{k}_tokens_per_s"] = man["tokens_per_s"]
        out[f"{k}_gemm_pct"] = 100 * man["gemm_fraction"]
        p = premise_main(tab)
        last = p[p["layer"] == L]
        for _, row in last.iterrows():
            key = f"{k}_{row['reading']}_{row['source']}"
            out[f"{key}_rho"], out[f"{key}_lo"], out[f"{key}_hi"] = row["rho"], row["lo"], row["hi"]
            out[f"{key}_n"] = int(row["n"])
            out[f"{key}_sign"] = interval_word(row["lo"], row["hi"])
        body = p[(p["layer"] > 0) & (p["source"] == "corpus") & (p["reading"] == "radius_t")]
        out[f"{k}_t_positive_layers"] = int((body["lo"] > 0).sum())
        out[f"{k}_t_negative_layers"] = int((body["hi"] < 0).sum())
        out[f"{k}_t_body_layers"] = len(body)
        rob = tab["premise"]
        rob = rob[(rob["layer"] == L) & (rob["reading"] == "radius_t") & (rob["source"] == "corpus")]
        out[f"{k}_t_robust_min"], out[f"{k}_t_robust_max"] = rob["rho"].min(), rob["rho"].max()
        an = tab["anisotropy"]
        top = an.loc[an["mean_cosine"].idxmax()]
        out[f"{k}_cos_last"] = an.loc[an["layer"] == L, "mean_cosine"].iloc[0]
        out[f"{k}_cos_max"], out[f"{k}_cos_max_layer"] = top["mean_cosine"], int(top["layer"])
        out[f"{k}_iso_max"] = an["isoscore_star"].max()
        out[f"{k}_top1_max"] = an["top1_share"].max()
        dims = str(top["outlier_dims"]).split() if isinstance(top["outlier_dims"], str) else []
        out[f"{k}_outliers"] = ", ".join(dims[:3]) if dims else "none"
        out[f"{k}_outlier_share"] = 100 * float(top["outlier_share"]) if dims else 0.0
        from scipy.stats import spearmanr

        mid = tab["types"]
        mid = mid[(mid["layer"] == L // 2) & (mid["normal_share"] > 0) & (mid["corpus_count"] > 0)]
        out[f"{k}_curv_freq_rho"] = float(spearmanr(np.log(mid["corpus_count"]),
                                                    mid["normal_share"]).statistic)
        c = tab["curvature"]
        c = c[c["layer"] > 0]
        out[f"{k}_curv_median"] = float(c["slope"].median())
        out[f"{k}_curv_min"], out[f"{k}_curv_max"] = float(c["slope"].min()), float(c["slope"].max())
        out[f"{k}_curv_two"] = int(((c["lo"] <= 2) & (c["hi"] >= 2)).sum())
        out[f"{k}_curv_layers"] = len(c)
        if "alignment" in tab:
            a = tab["alignment"]
            a = a[(a["bucket"] == "all") & (a["proxy"] == "refit")]
            inner = a[(a["layer"] > 0) & (a["layer"] < L)]
            out[f"{k}_enrich_median"] = float(inner["enrichment"].median())
            out[f"{k}_enrich_max"] = float(a["enrichment"].max())
            out[f"{k}_enrich_last"] = float(a.loc[a["layer"] == L, "enrichment"].iloc[0])
            out[f"{k}_enrich_sig"] = int((a["p_energy"] <= 0.05).sum())
            out[f"{k}_enrich_layers"] = len(a)
            out[f"{k}_enrich_below"] = int((a["enrichment"] < 1).sum())
    return out


#: what chapter 9 and the closing page quote of each model (``ch9_<model>_<key>``):
#: :func:`pretrained_numbers` returns these of :func:`pretrained_table`, with ``corpus_words_m``
PRETRAINED_QUOTED = {
    "smollm2": ("tokens", "tokens_per_s", "gemm_pct", "radius_t_corpus_rho", "radius_t_corpus_lo",
                "radius_t_corpus_hi", "radius_t_corpus_n", "radius_t_wordfreq_rho", "t_positive_layers",
                "t_body_layers", "centroid_distance_corpus_rho", "centroid_distance_wordfreq_rho",
                "centroid_distance_wordfreq_lo", "centroid_distance_wordfreq_hi", "self_similarity_wordfreq_rho",
                "t_robust_min", "t_robust_max", "cos_max", "cos_max_layer", "iso_max", "top1_max", "outliers",
                "outlier_share", "enrich_median", "enrich_max", "enrich_sig", "enrich_layers", "enrich_last",
                "curv_median", "curv_min", "curv_max", "curv_freq_rho"),
    "gemma3": ("radius_t_corpus_rho", "radius_t_corpus_lo", "radius_t_corpus_hi", "t_positive_layers",
               "t_body_layers", "centroid_distance_corpus_rho", "centroid_distance_wordfreq_rho", "t_robust_min",
               "t_robust_max", "cos_max", "cos_max_layer", "outliers", "outlier_share", "enrich_median",
               "enrich_below", "enrich_layers", "curv_median", "curv_min", "curv_max", "curv_freq_rho"),
    "minilm": ("tokens", "radius_t_corpus_rho", "radius_t_corpus_lo", "radius_t_corpus_hi",
               "radius_t_corpus_sign", "radius_t_wordfreq_rho", "t_positive_layers", "t_body_layers",
               "centroid_distance_corpus_rho", "self_similarity_corpus_rho", "t_robust_min", "t_robust_max",
               "cos_max", "curv_median", "curv_two", "curv_layers", "curv_freq_rho"),
}


def pretrained_numbers(pretrained: dict) -> dict:
    """The numbers (and single words) chapter 9 and the closing page quote about the released
    models: :data:`PRETRAINED_QUOTED` of :func:`pretrained_table`."""
    table = pretrained_table(pretrained)
    return {"ch9_corpus_words_m": table["ch9_corpus_words_m"],
            **{f"ch9_{m}_{k}": table[f"ch9_{m}_{k}"] for m, keys in PRETRAINED_QUOTED.items()
               if f"ch9_{m}_tokens" in table for k in keys}}


def pretrained_checks(pretrained: dict) -> dict:
    """The checks chapter 9 displays, by name (``<model>_<what>``), each able to fail.

    The chapter states each verdict in its prose and shows the check with
    ``.require()`` (the measurement agrees) or ``.refute()`` (the measurement
    rejects the prediction): the verdict is written in the chapter, not derived
    here, so data that flip it break the build.

    * ``<m>_paper_t_<source>``: the paper's ρ = −0.5 lies in the bootstrap interval of
      ρ(log frequency, radius t) at the last layer;
    * ``<m>_t_positive``: the share of blocks where ρ(log frequency, radius t) is above 0
      (95 % interval) exceeds 0.9: the premise reversed at almost every layer;
    * ``<m>_centroid_web``: ρ(web frequency, centroid distance) is negative at the last layer;
    * ``<m>_curvature_two``: the slope 2 of a curved manifold lies within the range of
      the layers' fitted normal-share slopes;
    * ``<m>_enrichment`` (decoders): the median enrichment over the inner layers exceeds 1.
    """
    from tanbias.stats import check_greater, check_in_interval, check_less

    rep = pretrained_table(pretrained)
    checks = {}
    for name in pretrained:
        m = SHORT[name]
        k = f"ch9_{m}"
        for src in ("corpus", "wordfreq"):
            key = f"{k}_radius_t_{src}"
            if f"{key}_rho" in rep:
                checks[f"{m}_paper_t_{src}"] = check_in_interval(
                    f"{name}, last layer: the paper's ρ = −0.5 in the 95 % interval of "
                    f"ρ(log frequency, radius t), {src} frequencies",
                    PAPER_RHO, rep[f"{key}_lo"], rep[f"{key}_hi"])
        checks[f"{m}_t_positive"] = check_greater(
            f"{name}: share of blocks whose 95 % interval of ρ(log frequency, radius t) lies above 0",
            rep[f"{k}_t_positive_layers"] / rep[f"{k}_t_body_layers"], 0.9)
        key = f"{k}_centroid_distance_wordfreq"
        if f"{key}_hi" in rep:
            checks[f"{m}_centroid_web"] = check_less(
                f"{name}, last layer: upper end of the 95 % interval of ρ(web frequency, "
                "centroid distance)", rep[f"{key}_hi"], 0.0)
        checks[f"{m}_curvature_two"] = check_in_interval(
            f"{name}: the slope 2 of a curved manifold within the range of the layers' "
            "fitted normal-share slopes", 2.0, rep[f"{k}_curv_min"], rep[f"{k}_curv_max"])
        if f"{k}_enrich_median" in rep:
            checks[f"{m}_enrichment"] = check_greater(
                f"{name}: median enrichment over the inner layers (1 = a random subspace)",
                rep[f"{k}_enrich_median"], 1.0)
    return checks


def zoo_table():
    """The zoo's models as a table: what each is, its size and its licence."""
    import pandas as pd

    from tanbias.lab import zoo

    rows = [{"model": e.name, "kind": e.kind, "architecture": e.arch, "blocks": e.n_layers,
             "width": e.hidden_size, "parameters (M)": round(e.n_params / 1e6, 1),
             "copy of": e.upstream, "licence": e.licence} for e in zoo.ZOO.values()]
    return pd.DataFrame(rows).set_index("model")


def robustness_summary(pretrained: dict):
    """ρ(log corpus frequency, radius t) at the first, middle and last layer, per text length and min_count."""
    import pandas as pd

    rows = []
    for name, tab in pretrained.items():
        p = tab["premise"]
        p = p[(p["reading"] == "radius_t") & (p["source"] == "corpus")]
        p = p.drop_duplicates(["layer", "n_tokens", "min_count"])
        layers = sorted(set(p.loc[p["n_tokens"] < p["n_tokens"].max(), "layer"]))
        p = p[p["layer"].isin(layers)]
        piv = p.pivot_table(index=["layer", "n_tokens"], columns="min_count", values="rho")
        piv.columns = [f"min_count {c}" for c in piv.columns]
        piv = piv.reset_index().rename(columns={"n_tokens": "tokens read"})
        piv.insert(0, "model", name)
        rows.append(piv)
    return pd.concat(rows, ignore_index=True).round(2).set_index(["model", "layer", "tokens read"])


def lab_comparison(numbers: dict, sw, models):
    """The lab's small models (chapter 8, natural data) beside the released ones.

    ``numbers`` is :func:`pretrained_numbers`, ``sw`` the sweep's
    :class:`~tanbias.lab.analysis.sweep_report.SweepAnalysis`, ``models`` the zoo models
    to show.
    """
    import pandas as pd

    from tanbias.lab.analysis import sweep_report

    def ci(v, lo, hi):
        return f"{v:+.2f} [{lo:+.2f}, {hi:+.2f}]"

    rho = sweep_report.radius_table(sw)
    late = sweep_report.cells_table(sw)["enrichment, late"]
    cols = {f"lab {kind}s (ch 8)": (ci(*rho.loc[(kind, "natural"), ["mean", "lo", "hi"]]),
                                    f"×{late.loc[(kind, 'natural')]:.1f} " + note)
            for kind, note in (("decoder", "(geometric mean over layers, last step)"),
                               ("encoder", "(same)"))}
    for name in models:
        k = f"ch9_{SHORT[name]}"
        r = ci(numbers[f"{k}_radius_t_corpus_rho"], numbers[f"{k}_radius_t_corpus_lo"],
               numbers[f"{k}_radius_t_corpus_hi"])
        enr = (f"×{numbers[f'{k}_enrich_median']:.2f} (median over inner layers)"
               if f"{k}_enrich_median" in numbers else "no LM head: not tested")
        cols[name] = (r, enr)
    return pd.DataFrame(cols, index=["ρ(log frequency, radius t), last layer",
                                     "alignment enrichment"])
