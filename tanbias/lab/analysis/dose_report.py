"""The numbers chapter 10 quotes about the dose runs, its checks and its verdicts (no torch).

The experiment's face (:mod:`tanbias.lab.analysis.findings` registers it; its analysis is chapter 10's
dose analysis at the joint Holm family, :func:`tanbias.lab.analysis.alias.joint_analyses`):

* :func:`numbers` — every number chapter 10's results (and the closing page) glue;
* :func:`words` — every word the chapter states (an interval's word, a verdict-table row's word),
  by name, for :func:`tanbias.stats.check_words`: the build breaks when the data stop supporting
  a sentence;
* :func:`balancing_components`, :func:`balancing_verdict`, :func:`adaptive_verdict`
  — the closing page's verdicts on "weaker under balancing" and "possibly
  adaptive" by the rules added after the dose runs (``data/preregistration/dose-posthoc.toml``:
  written after the runs were seen), each one word
  (:data:`tanbias.lab.analysis.sweep.PROPERTY_WORDS`);
  :func:`registered_balancing_verdict` and :func:`registered_adaptive_verdict` —
  the same verdicts by the rules registered before the runs (``dose.toml``), shown
  beside them;
* :func:`full_verdict_tables` — the wide table in two parts that fit a page: the registered
  test, and the secondary contrasts beside it;
* :func:`verdict_summary` — the verdict table's narrow face: one row per reading of a knob,
  each architecture's word with its end-to-end change, and which detected signs survive
  matched training progress (the wide table, :func:`tanbias.lab.analysis.dose.verdict_table`,
  holds every column).

The design's numbers (before the runs) are :func:`tanbias.lab.analysis.dose_design.design_numbers`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from tanbias._checks import check_choice
from tanbias.lab.analysis import registered
from tanbias.lab.analysis.dose import POSTHOC, DoseAnalysis
from tanbias.lab.analysis.dose_design import LINKS, level_positions
from tanbias.lab.analysis.registered import detectable_ratio, power_at
from tanbias.lab.analysis.sweep import balancing_property
from tanbias.lab.analysis.verdicts import cell
from tanbias.lab.config import KINDS
from tanbias.lab.experiments import DOSE
from tanbias.numerals import format_spec
from tanbias.stats import interval_word

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["cells", "full_verdict_tables", "SHORT", "REPORTED", "PROGRESS_REPORTED", "numbers", "words",
           "alignment_word", "balancing_components", "balancing_words", "balancing_verdict",
           "registered_balancing_words", "registered_balancing_verdict", "adaptive_verdict",
           "registered_adaptive_verdict", "knob_words", "READING_NAMES", "change_text", "verdict_summary"]

#: the short names of the chain's metrics in glued keys (``<short>_<knob>_<kind>``)
SHORT = {"log_collision": "conc", "log_eta_q1": "eta", "log_enrichment_late": "enr",
         "log_enrichment_early": "enr_early", "mean_cosine_late": "cos", "isoscore_late": "iso"}
#: the (metric, knob) pairs whose dose-response chapter 10 states in its prose (the verdict
#: table shows them all)
REPORTED = (("log_eta_q1", "token"), ("log_enrichment_late", "token"), ("mean_cosine_late", "token"),
            ("isoscore_late", "token"), ("log_enrichment_late", "language"))
#: the (metric, knob) pairs whose training-progress ANCOVA the chapter quotes
PROGRESS_REPORTED = (("log_enrichment_late", "token"), ("mean_cosine_late", "token"), ("isoscore_late", "token"))


def _response(da_or_responses, metric: str, knob: str, kind: str):
    r = da_or_responses.responses if isinstance(da_or_responses, DoseAnalysis) else da_or_responses
    return r[(r["metric"] == metric) & (r["knob"] == knob) & (r["kind"] == kind)].iloc[0]


def _level_mean(table, kind: str, level: str, col: str) -> float:
    g = table[(table["kind"] == kind) & (table["level"] == level)][col]
    return float(g.mean()) if len(g) else float("nan")


def numbers(da: DoseAnalysis) -> dict:
    """The numbers chapter 10 and the closing page quote about the dose runs (glued as ``ch10_<key>``).

    ``runs_done`` of ``n_runs``, ``seeds_min`` per cell; ``span_<knob>``, how many
    times each knob divides the measured collision probability; for each
    :data:`REPORTED` link ``<short>_<knob>_<kind>``, the fitted end-to-end change
    (a ratio for log metrics, a difference otherwise) with its 95 % interval
    (``_lo``, ``_hi``), its raw and Holm-adjusted p (``_p``, ``_p_holm``); for the
    direct knob's enrichment the flattest level's value (``_flat``), its paired change
    from the start (``_change``), the level means (``_levels``, ln, in knob order) and
    the lack-of-fit p (``_lof_p``); for :data:`PROGRESS_REPORTED` the
    end-to-end change at matched gain over unigram (``_progress``, ``_lo``, ``_hi``);
    ``holm_n``, the size of the Holm family; how much the runs learned (``gain_``,
    ``acc_``, ``uacc_<kind>_<start|flat>``, the gain's range over seeds ``_min``,
    ``_max``; ``gain_corr_<kind>``, the correlation of ln collision with the gain
    along the direct knob); the participation ratio at both ends (``part_<kind>_start``,
    ``_flat``); the realised noise and power (``sd_real_<kind>``, ``sd_real_df``,
    ``detectable_real_<kind>``, ``power_real_<kind>`` for the ×1.25 target,
    ``seed_p_<kind>``); the language knob against the token knob's slope
    (``knob_excess_<kind>``, ``_lo``, ``_hi``, ``_p_holm``, and ``knob_from_token_<kind>``,
    as ratios); ``inter_token``, the decoder-minus-encoder slope; "possibly adaptive"
    (``adapt_loss_*``, ``adapt_gap_*``, ``adapt_early_*``, ``adapt_late_*``).
    """
    out: dict = {}
    t = da.table
    r_all = da.responses
    out["runs_done"] = int(len(t))
    out["n_runs"] = len(DOSE.names())
    out["seeds_min"] = int(t.groupby(["kind", "level"])["seed"].nunique().min())
    out["holm_n"] = int(len(r_all))           # the registered family: every row, estimable or not
    for knob, flat in (("token", "b100"), ("language", "uniform")):
        g = t[t["level"].isin(["skewed", flat])].groupby("level")["log_collision"].mean()
        out[f"span_{knob}"] = float(np.exp(g.get("skewed", np.nan) - g.get(flat, np.nan)))
    for metric, knob in REPORTED:
        f = np.exp if metric.startswith("log_") else (lambda v: v)
        for kind in KINDS:
            r = _response(da, metric, knob, kind)
            key = f"{SHORT[metric]}_{knob}_{kind}"
            for suffix, col in (("", "end_to_end"), ("_lo", "end_to_end_lo"), ("_hi", "end_to_end_hi")):
                out[key + suffix] = float(f(r.get(col, np.nan)))
            out[f"{key}_p"], out[f"{key}_p_holm"] = float(r["p"]), float(r["p_holm"])
            if (metric, knob) == ("log_enrichment_late", "token"):
                out[f"{key}_lof_p"] = float(r["lof_p"])
            if (metric, knob) in PROGRESS_REPORTED:
                for suffix, col in (("", "progress_end_to_end"), ("_lo", "progress_lo"), ("_hi", "progress_hi")):
                    out[f"{key}_progress{suffix}"] = float(f(r.get(col, np.nan)))
            if (metric, knob) == ("log_enrichment_late", "token"):
                for part in ("flat", "change"):
                    for suffix, col in (("", part if part == "change" else "flat_mean"), ("_lo", f"{part}_lo"),
                                        ("_hi", f"{part}_hi")):
                        out[f"{key}_{part}{suffix}"] = float(np.exp(r.get(col, np.nan)))
                out[f"{key}_levels"] = tuple(_level_mean(t, kind, lv, metric) for lv in level_positions(knob))
    for kind in KINDS:
        for end, level in (("start", "skewed"), ("flat", "b100")):
            g = t[(t["kind"] == kind) & (t["level"] == level)]
            out[f"gain_{kind}_{end}"] = float(g["gain"].mean())
            out[f"gain_{kind}_{end}_min"], out[f"gain_{kind}_{end}_max"] = float(g["gain"].min()), float(g["gain"].max())
            out[f"acc_{kind}_{end}"] = float(g["accuracy"].mean())
            out[f"uacc_{kind}_{end}"] = float(g["unigram_accuracy"].mean())
            out[f"part_{kind}_{end}"] = float(g["participation_late"].mean())
        out[f"gain_corr_{kind}"] = float(_response(da, "log_enrichment_late", "token", kind)["x_gain_corr"])
        # the realised noise of the registered test of link 2, and what it detects
        r = _response(da, "log_enrichment_late", "token", kind)
        x = list(level_positions("token").values())
        n = int(r["n_seeds"])
        ok = n >= 2 and np.isfinite(r["resid_sd"]) and r["resid_sd"] > 0
        out[f"sd_real_{kind}"] = float(r["resid_sd"])
        out["sd_real_df"] = float(r["df"])
        out[f"detectable_real_{kind}"] = detectable_ratio(float(r["resid_sd"]), n, x) if ok else float("nan")
        out[f"power_real_{kind}"] = power_at(registered.TARGET_RATIO, float(r["resid_sd"]), n, x) if ok else float("nan")
        out[f"seed_p_{kind}"] = float(r["seed_p"])
        k = da.knobs[da.knobs["kind"] == kind].iloc[0]
        for suffix, col in (("", "excess"), ("_lo", "excess_lo"), ("_hi", "excess_hi")):
            out[f"knob_excess_{kind}{suffix}"] = float(np.exp(k[col]))
        out[f"knob_excess_{kind}_p_holm"] = float(k["p_holm"])
        out[f"knob_from_token_{kind}"] = float(np.exp(k["from_token"]))
    res = da.interaction["token"]
    out["inter_token"], out["inter_token_lo"], out["inter_token_hi"] = res["diff"], res["lo"], res["hi"]
    assoc = da.association
    for key in ("within", "lo", "hi", "p", "naive_lo", "naive_hi", "lag1", "per_run", "per_run_lo", "per_run_hi",
                "n", "n_runs", "sd_within", "sd_pooled"):
        out[f"adapt_loss_{key}"] = assoc["loss"].get(key, np.nan)
    for key in ("within", "lo", "hi"):
        out[f"adapt_gap_{key}"] = assoc["gap"].get(key, np.nan)
    for phase in ("early", "late"):
        for key in ("within", "lo", "hi", "sd_within", "n"):
            out[f"adapt_{phase}_{key}"] = assoc[f"loss_{phase}"].get(key, np.nan)
    return out


def words(da: DoseAnalysis) -> dict:
    """Every word chapter 10 and the closing page state about the runs, by name, for
    :func:`tanbias.stats.check_words`:

    * ``verdict, <kind>, <knob>, <metric>``: the verdict-table row's word (the registered test at
      Holm-adjusted p over the joint family: ``"as predicted"``, ``"not detected"``, ...);
    * an interval's word (:func:`tanbias.stats.interval_word`), keyed ``<short>_<knob>_<kind>``: the
      fitted end-to-end change of a link (log scale for ratios, unadjusted 95 % interval), e.g.
      ``cos_token_decoder``; with ``_flat`` / ``_change``: the flattest level's own value and its
      paired change from the start (secondary contrasts); with ``_progress``: the end-to-end change
      at matched gain over unigram (``<short>`` of :data:`SHORT`);
    * ``knob_<kind>``: the language knob's excess over the token knob's slope (an interval's word);
    * ``adapt_<name>``: the within-cell association of "possibly adaptive" (clustered by run);
      ``adapt_<name>_naive``, with run-steps as independent; ``adapt_<name>_per_run``, one value per run.
    """
    out = {}
    for _, r in da.responses.iterrows():
        kind, knob, metric = r["kind"], r["knob"], r["metric"]
        out[f"verdict, {kind}, {knob}, {metric}"] = str(r["verdict"])
        key = f"{SHORT[metric]}_{knob}_{kind}"
        out[key] = interval_word(r["end_to_end_lo"], r["end_to_end_hi"])
        for part in ("flat", "change", "progress"):
            if f"{part}_lo" in r.index:
                out[f"{key}_{part}"] = interval_word(r[f"{part}_lo"], r[f"{part}_hi"])
    for _, k in da.knobs.iterrows():
        out[f"knob_{k['kind']}"] = interval_word(k["excess_lo"], k["excess_hi"])
    for name, res in da.association.items():
        for variant, (lo, hi) in (("", ("lo", "hi")), ("_naive", ("naive_lo", "naive_hi")),
                                  ("_per_run", ("per_run_lo", "per_run_hi"))):
            out[f"adapt_{name}{variant}"] = interval_word(res[lo], res[hi])
    return out


# --------------------------------------------------------------------------- "weaker under balancing"
def _counts(row, gate: bool) -> str:
    """A reading's word for the balancing rule: its verdict, 'not detected' where its sign does
    not survive the training-progress check (``gate``)."""
    survives = row.get("progress_survives")
    survives = isinstance(survives, (bool, np.bool_)) and bool(survives)
    if gate and row["verdict"] in ("as predicted", "against the prediction") and not survives:
        return "not detected"
    return row["verdict"]


def alignment_word(row, gate: bool = True) -> str:
    """The alignment's word (:data:`tanbias.lab.analysis.sweep.BALANCING_WORDS`) from the direct knob's
    late-enrichment row (``dose-posthoc.toml`` ``[balancing]`` and ``[presence]``).

    ``attenuated``: the verdict is 'as predicted' (surviving the training-progress check when
    ``gate``), the flattest level's interval lies above 0 and the paired change from the start
    below 0; ``undecided``: as predicted, but the flattest level is not shown present (failing
    to show presence is not absence: never ``removed``) or too few seeds; ``strengthened``:
    'against the prediction' (surviving the check); ``indistinguishable`` otherwise.
    """
    if row["n_seeds"] < 2 or interval_word(row["flat_lo"], row["flat_hi"]) == "undecided":
        return "undecided"
    word = _counts(row, gate)
    if word == "against the prediction":
        return "strengthened"
    if word == "as predicted":
        if interval_word(row["flat_lo"], row["flat_hi"]) != "positive":
            return "undecided"
        return "attenuated" if interval_word(row["change_lo"], row["change_hi"]) == "negative" else \
            "indistinguishable"
    return "indistinguishable"


def anisotropy_word(rows, gate: bool = True) -> str:
    """The anisotropy's word from the direct knob's link-3 rows (mean cosine, IsoScore*):
    ``attenuated`` when at least one reads 'as predicted' (anisotropy falls) and none against,
    ``strengthened`` when at least one reads 'against the prediction' (anisotropy rises) and none
    as predicted, ``undecided`` with fewer than two seeds, else ``indistinguishable``."""
    rows = list(rows)
    if not rows or any(r["n_seeds"] < 2 for r in rows):
        return "undecided"
    words = [_counts(r, gate) for r in rows]
    up, down = "against the prediction" in words, "as predicted" in words
    return "strengthened" if up and not down else "attenuated" if down and not up else "indistinguishable"


def balancing_components(responses, gate: bool = True, knob: str = "token") -> dict:
    """``{"<kind> alignment": word, "<kind> anisotropy": word}`` along a knob (default the direct
    one), by the rule added after the dose runs (``dose-posthoc.toml`` ``[balancing]``): the readings at Holm-adjusted
    p, each counting only where its sign survives the training-progress ANCOVA (``gate``). The
    aliasing knob's words (``knob="alias"``, its registration's ``[rule.balancing]``) read the same rule."""
    if isinstance(responses, DoseAnalysis):
        responses = responses.responses
    rule = POSTHOC["balancing"]
    out = {}
    for kind in KINDS:
        (metric,) = rule["alignment"]
        out[f"{kind} alignment"] = alignment_word(_response(responses, metric, knob, kind), gate)
        out[f"{kind} anisotropy"] = anisotropy_word([_response(responses, m, knob, kind)
                                                     for m in rule["anisotropy"]], gate)
    return out


def balancing_words(da: DoseAnalysis) -> dict:
    """``{kind: word}``: each architecture's alignment word along the direct knob by the rule
    added after the dose runs (:func:`alignment_word`; the anisotropy's word is in :func:`balancing_components`)."""
    c = balancing_components(da)
    return {kind: c[f"{kind} alignment"] for kind in KINDS}


def balancing_verdict(da: DoseAnalysis) -> str:
    """The closing page's verdict on "weaker under balancing" by the rule added after the dose runs:
    :func:`tanbias.lab.analysis.sweep.balancing_property` of the four words of
    :func:`balancing_components` (alignment and anisotropy of each architecture)."""
    return balancing_property(balancing_components(da))


def registered_balancing_words(da) -> dict:
    """``{kind: word}`` by the rule registered before the runs (``dose.toml`` ``[rule.balancing]``):
    link 2 alone, each row at its own unadjusted verdict, no training-progress check; a flattest
    level not shown present read ``removed`` (the flaw that ``dose-posthoc.toml`` ``[presence]`` corrects).
    ``da``: a :class:`~tanbias.lab.analysis.dose.DoseAnalysis` or its ``responses``."""
    r = da.responses if isinstance(da, DoseAnalysis) else da
    out = {}
    rows = r[(r["metric"] == "log_enrichment_late") & (r["knob"] == "token")]
    for _, r in rows.iterrows():
        flat, change = interval_word(r["flat_lo"], r["flat_hi"]), interval_word(r["change_lo"], r["change_hi"])
        verdict = r.get("verdict_unadjusted", r["verdict"])
        if r["n_seeds"] < 2 or "undecided" in (flat, change):
            out[r["kind"]] = "undecided"
        elif flat != "positive":
            out[r["kind"]] = "removed"
        elif verdict == "against the prediction":
            out[r["kind"]] = "strengthened"
        elif verdict == "as predicted" and change == "negative":
            out[r["kind"]] = "attenuated"
        else:
            out[r["kind"]] = "indistinguishable"
    return out


def registered_balancing_verdict(da: DoseAnalysis) -> str:
    """"Weaker under balancing" by the registered rule (:func:`registered_balancing_words`)."""
    return balancing_property(registered_balancing_words(da))


def knob_words(da: DoseAnalysis) -> dict:
    """``{kind: "more" | "not shown"}``: does the language knob move the late enrichment more than
    the token knob's slope gives for its change of frequencies (``[knob_comparison]``: the
    contrast's Holm-adjusted p below alpha and its sign that of the language knob's change)."""
    alpha = float(POSTHOC["multiplicity"]["alpha"])
    out = {}
    for _, k in da.knobs.iterrows():
        more = np.isfinite(k["p_holm"]) and k["p_holm"] < alpha and np.sign(k["excess"]) == np.sign(k["language"])
        out[k["kind"]] = "more" if more else "not shown"
    return out


# --------------------------------------------------------------------------- "possibly adaptive"
def _adaptive_word(lo, hi) -> str:
    word = interval_word(lo, hi)
    return {"positive": "supported", "negative": "contradicted", "indistinguishable": "undetected"}.get(word,
                                                                                                       "undecided")


def adaptive_verdict(da: DoseAnalysis) -> str:
    """The closing page's verdict on "possibly adaptive" by the rule added after the dose runs
    (``dose-posthoc.toml`` ``[adaptive]``): ``supported`` (fewer effective dimensions, lower held-out loss, within a cell), ``contradicted``
    (the reverse), ``undetected`` (the interval contains 0) or ``undecided`` (too few seeds per
    cell), from the within-cell association with errors clustered by run."""
    res = da.association.get("loss", {})
    return _adaptive_word(res.get("lo", np.nan), res.get("hi", np.nan))


def registered_adaptive_verdict(da: DoseAnalysis) -> str:
    """"Possibly adaptive" by the registered rule: the same association with every run-step as
    independent (``dose.toml`` ``[rule.adaptive]``)."""
    res = da.association.get("loss", {})
    return _adaptive_word(res.get("naive_lo", np.nan), res.get("naive_hi", np.nan))


# --------------------------------------------------------------------------- the narrow verdict table
#: each reading's link of the chain and its name in the narrow verdict tables (chapters 10 and 11)
READING_NAMES = {"log_collision": (0, "collision probability of the stream"),
                 "log_eta_q1": (1, "η_g of the frequent types"),
                 "log_eta_q1_type": (1, "η_g of the frequent types, per merged type"),
                 "log_enrichment_late": (2, "late enrichment"), "log_enrichment_early": (2, "early enrichment"),
                 "mean_cosine_late": (3, "mean cosine"), "isoscore_late": (3, "IsoScore*")}


def change_text(metric: str, value: float) -> str:
    """A reading's end-to-end change as the narrow tables print it, two significant digits: a ratio
    (``×0.46``) for a log reading, a signed difference (``+0.24``, ``−0.042``) otherwise.

    >>> change_text("log_enrichment_late", np.log(0.4634)), change_text("isoscore_late", -0.04207)
    ('×0.46', '−0.042')
    >>> change_text("mean_cosine_late", float("nan"))
    '–'
    """
    if not np.isfinite(value):
        return "–"
    if metric.startswith("log_"):
        return "×" + format_spec(np.exp(value), "#.2g").rstrip(".")
    return format_spec(value, "+#.2g").rstrip(".")


#: the full verdict tables' columns, named for a reader
_FULL_COLUMNS = {"metric": "reading", "n_seeds": "seeds", "end_to_end": "change", "end_to_end_lo": "low",
                 "end_to_end_hi": "high", "p": "p (raw)", "p_holm": "p (Holm)", "page_p": "Page's trend p",
                 "lof_p": "lack-of-fit p", "progress_end_to_end": "change at matched gain",
                 "progress_lo": "its low", "progress_hi": "its high", "progress_survives": "sign survives"}


def full_verdict_tables(rows) -> list[tuple[pd.DataFrame, dict]]:
    """Every column of the verdict table (:func:`tanbias.lab.analysis.dose.verdict_table`), in two
    tables that fit a page: the registered test (each row's word, at Holm-adjusted p) and the
    secondary contrasts, which never change a word (Page's trend test across the levels, the
    lack-of-fit test of the level means against the line, the change at matched gain over unigram).
    Both start with the row's reading (in words), knob and architecture. Each comes with the
    intervals for ``format_table(table, intervals=...)`` to join (``{name: (low, high)}``).

    >>> import pandas as pd
    >>> rows = pd.DataFrame({"metric": ["isoscore_late"], "knob": ["token"], "kind": ["encoder"], "n_seeds": [3],
    ...                      "end_to_end_lo": [-0.1], "end_to_end_hi": [0.1], "p_holm": [0.2], "page_p": [0.5]})
    >>> [(list(t.columns), intervals) for t, intervals in full_verdict_tables(rows)]
    [(['reading', 'knob', 'architecture', 'low', 'high', 'p (Holm)'], {'interval': ('low', 'high')}), (['reading', 'knob', 'architecture', 'seeds', "Page's trend p"], {})]
    """
    t = rows.assign(metric=rows["metric"].map(lambda m: READING_NAMES.get(m, (0, m))[1]))
    t = t.rename(columns={**_FULL_COLUMNS, "kind": "architecture"})
    key = ["reading", "knob", "architecture"]
    secondary = [_FULL_COLUMNS[c] for c in ("page_p", "lof_p", "progress_end_to_end", "progress_lo",
                                              "progress_hi", "progress_survives")]
    later = [_FULL_COLUMNS["n_seeds"]]          # the seeds go to the second table, so the first fits 1,280 px
    parts = (t[[c for c in t.columns if c not in secondary + later]],
             t[key + [c for c in later + secondary if c in t.columns]])
    intervals = {"interval": ("low", "high"), "its interval": ("its low", "its high")}
    return [(part, {k: v for k, v in intervals.items() if v[0] in part}) for part in parts]


def verdict_summary(responses, knob: str, names: dict | None = None):
    """The verdict table along one knob at a glance: one row per reading, each architecture's word
    (the registered test at Holm-adjusted p) with its end-to-end change, and at matched training
    progress which of the detected signs survive.

    Parameters
    ----------
    responses : pandas.DataFrame
        Verdict-table rows (:func:`tanbias.lab.analysis.dose.verdict_table`'s columns ``metric``,
        ``knob``, ``kind``, ``end_to_end``, ``verdict``, ``progress_survives``), read at the family
        they were adjusted in.
    knob : str
        ``"token"``, ``"language"`` or ``"alias"``.
    names : dict, optional
        ``{metric: name}`` replacing :data:`READING_NAMES`' names.

    Returns
    -------
    pandas.DataFrame
        Columns ``link``, ``reading``, ``encoder``, ``decoder`` (``"<word>, <change>"``,
        :func:`change_text`) and ``at matched progress``: ``both``, ``encoder``, ``decoder`` or
        ``neither`` of the architectures whose detected sign survives, ``–`` where no row detects one.

    Raises
    ------
    ParameterError
        ``knob`` has no row in ``responses``.
    """
    import pandas as pd


    check_choice("knob", knob, tuple(dict.fromkeys(responses["knob"])))
    names = {m: n for m, (_, n) in READING_NAMES.items()} | (names or {})
    r = responses[responses["knob"] == knob]
    rows = []
    for metric in dict.fromkeys(r["metric"]):
        by_kind = r[r["metric"] == metric].set_index("kind")
        row = {"link": READING_NAMES[metric][0], "reading": names[metric]}
        detected, kept = [], []
        for kind in KINDS:
            x = by_kind.loc[kind]
            row[kind] = f"{x['verdict']}, {change_text(metric, float(x['end_to_end']))}"
            if x["verdict"] in ("as predicted", "against the prediction", "a trend not predicted"):
                detected.append(kind)
                survives = x.get("progress_survives")
                if isinstance(survives, (bool, np.bool_)) and bool(survives):
                    kept.append(kind)
        row["at matched progress"] = ("–" if not detected or metric == "log_collision" else
                                      "both" if len(kept) == len(KINDS) else kept[0] if kept else "neither")
        rows.append(row)
    return pd.DataFrame(rows, columns=["link", "reading", *KINDS, "at matched progress"])


def cells(da: DoseAnalysis) -> list[dict]:
    """The dose experiment's cell of the closing table (:func:`tanbias.lab.analysis.verdicts.cell`):
    possibly adaptive, by the rule fixed before the dose runs; the rule added after them (a weak
    association) is its qualifier, written only where that association is not detected per run."""
    assoc = da.association["loss"]
    weak = (adaptive_verdict(da) == "supported"
            and interval_word(assoc["per_run_lo"], assoc["per_run_hi"]) == "indistinguishable")
    return [cell("adaptive", "knobs", registered_adaptive_verdict(da), "10_dose_response", "sec-ch10-adaptive",
                 qualifier="an association by a rule added after the data, not detected with one value per run"
                 if weak else "", rule="registered", anisotropy="shape")]
