"""The numbers chapter 10 quotes about the dose runs, its checks and its verdicts (no torch).

* :func:`dose_numbers` — every number chapter 10's results (and the closing
  page) glue, from :func:`tanbias.lab.analysis.dose.analyse_dose`;
* :func:`dose_checks` — an interval's word (:func:`tanbias.stats.check_sign`) for
  each reading the chapter states in words ("as predicted", "not detected",
  "attenuated, not absent", "indistinguishable from 0"), against the word the
  chapter expects: the build breaks when the data stop supporting a sentence;
* :func:`balancing_words`, :func:`balancing_verdict`, :func:`adaptive_verdict`
  — the closing page's verdicts on "weaker under balancing" and "possibly
  adaptive", each one word (:data:`tanbias.lab.analysis.sweep.PROPERTY_WORDS`).

The design's numbers (before the runs) are :func:`tanbias.lab.analysis.dose_design.design_numbers`.
"""
from __future__ import annotations

import numpy as np

from tanbias.lab.analysis.dose import DoseAnalysis
from tanbias.lab.analysis.dose_design import LINKS
from tanbias.lab.analysis.sweep import balancing_property
from tanbias.lab.experiments import dose_names
from tanbias.stats import Check, check_sign, interval_word

__all__ = ["SHORT", "REPORTED", "dose_numbers", "dose_checks", "balancing_words", "balancing_verdict",
           "adaptive_verdict"]

#: the short names of the chain's metrics in glued keys (``<short>_<knob>_<kind>``)
SHORT = {"log_collision": "conc", "log_eta_q1": "eta", "log_enrichment_late": "enr",
         "log_enrichment_early": "enr_early", "mean_cosine_late": "cos", "isoscore_late": "iso"}
#: the (metric, knob) pairs whose dose-response chapter 10 states in its prose (the verdict
#: table shows them all)
REPORTED = (("log_eta_q1", "token"), ("log_enrichment_late", "token"), ("mean_cosine_late", "token"),
            ("log_enrichment_late", "language"))


def _response(da: DoseAnalysis, metric: str, knob: str, kind: str):
    r = da.responses
    return r[(r["metric"] == metric) & (r["knob"] == knob) & (r["kind"] == kind)].iloc[0]


def dose_numbers(da: DoseAnalysis) -> dict:
    """The numbers chapter 10 and the closing page quote about the dose runs (glued as ``ch10_<key>``).

    ``runs_done`` of ``n_runs``, ``seeds_min`` per cell; ``span_<knob>``, how many
    times each knob divides the measured collision probability; for each
    :data:`REPORTED` link ``<short>_<knob>_<kind>``, the fitted end-to-end change
    (a ratio for log metrics, a difference otherwise) with its 95 % interval
    (``_lo``, ``_hi``), and for the direct knob's enrichment the flattest level's
    value (``_flat``) and its change from the start, paired by seed (``_change``),
    each with its interval; ``inter_token``, the decoder-minus-encoder slope; the
    "possibly adaptive" association (``adapt_loss_*``, ``adapt_gap_*``).
    """
    out: dict = {}
    t = da.table
    out["runs_done"] = int(len(t))
    out["n_runs"] = len(dose_names())
    out["seeds_min"] = int(t.groupby(["kind", "level"])["seed"].nunique().min())
    for knob, flat in (("token", "b100"), ("language", "uniform")):
        g = t[t["level"].isin(["skewed", flat])].groupby("level")["log_collision"].mean()
        out[f"span_{knob}"] = float(np.exp(g.get("skewed", np.nan) - g.get(flat, np.nan)))
    for metric, knob in REPORTED:
        f = np.exp if metric.startswith("log_") else (lambda v: v)
        for kind in ("decoder", "encoder"):
            r = _response(da, metric, knob, kind)
            key = f"{SHORT[metric]}_{knob}_{kind}"
            for suffix, col in (("", "end_to_end"), ("_lo", "end_to_end_lo"), ("_hi", "end_to_end_hi")):
                out[key + suffix] = float(f(r.get(col, np.nan)))
            if (metric, knob) == ("log_enrichment_late", "token"):
                for part in ("flat", "change"):
                    for suffix, col in (("", part if part == "change" else "flat_mean"), ("_lo", f"{part}_lo"),
                                        ("_hi", f"{part}_hi")):
                        out[f"{key}_{part}{suffix}"] = float(np.exp(r.get(col, np.nan)))
    res = da.interaction["token"]
    out["inter_token"], out["inter_token_lo"], out["inter_token_hi"] = res["diff"], res["lo"], res["hi"]
    for name, keys in (("loss", ("within", "lo", "hi", "n", "pooled")), ("gap", ("within", "lo", "hi"))):
        for k in keys:
            out[f"adapt_{name}_{k}"] = da.association[name].get(k, np.nan)
    return out


def dose_checks(da: DoseAnalysis, expected: dict) -> list[Check]:
    """The interval behind each reading chapter 10 states in words, checked against ``expected``.

    Parameters
    ----------
    expected : dict
        ``{key: word}`` with a word of :data:`tanbias.stats.SIGN_WORDS` and a key of the form

        * ``<short>_<knob>_<kind>``: the fitted end-to-end change of a link (log scale for
          ratios), e.g. ``"enr_token_decoder": "indistinguishable"`` for "not detected";
        * ``<short>_<knob>_<kind>_flat`` / ``_change``: the flattest level's own value and its
          paired change from the start ("attenuated, not absent" is ``positive`` and ``negative``);
        * ``adapt_<name>``: the within-cell association of "possibly adaptive".

    Returns
    -------
    list of Check
        In the order of ``expected``, each labelled with what it reads (and, for a link, the sign
        the committed predictions give it).
    """
    inverse = {v: k for k, v in SHORT.items()}
    out = []
    for key, word in expected.items():
        if key.startswith("adapt_"):
            res = da.association[key[len("adapt_"):]]
            out.append(check_sign(f"possibly adaptive, {key[6:]}: within-cell association", res["lo"], res["hi"],
                                  word))
            continue
        part = key.rsplit("_", 1)[1] if key.endswith(("_flat", "_change")) else ""
        short, knob, kind = (key[: -len(part) - 1] if part else key).rsplit("_", 2)
        r = _response(da, inverse[short], knob, kind)
        if part == "flat":
            label, lo, hi = f"{kind}, {knob} knob, flattest level: ln enrichment", r["flat_lo"], r["flat_hi"]
        elif part == "change":
            label, lo, hi = (f"{kind}, {knob} knob: flattest − start, paired by seed (ln)", r["change_lo"],
                             r["change_hi"])
        else:
            label, lo, hi = (f"{kind}, {knob} knob, {LINKS[inverse[short]][1]} (predicted {r['predicted']}): "
                             "end-to-end change", r["end_to_end_lo"], r["end_to_end_hi"])
        out.append(check_sign(label, lo, hi, word))
    return out


def balancing_words(da: DoseAnalysis, metric: str = "log_enrichment_late") -> dict:
    """Each architecture's word (:data:`tanbias.lab.analysis.sweep.BALANCING_WORDS`) for the direct
    knob's late enrichment.

    ``attenuated`` when the slope falls as predicted, the flattest level is still above a
    random subspace and lower than the start (paired by seed); ``removed`` when the
    flattest level's interval is not above the null; ``strengthened`` when the slope
    rises; ``indistinguishable`` otherwise; ``undecided`` with fewer than two seeds.
    """
    out = {}
    rows = da.responses[(da.responses["metric"] == metric) & (da.responses["knob"] == "token")]
    for _, r in rows.iterrows():
        flat, change = interval_word(r["flat_lo"], r["flat_hi"]), interval_word(r["change_lo"], r["change_hi"])
        if r["n_seeds"] < 2 or "undecided" in (flat, change):
            out[r["kind"]] = "undecided"
        elif flat != "positive":
            out[r["kind"]] = "removed"
        elif r["verdict"] == "against the prediction":
            out[r["kind"]] = "strengthened"
        elif r["verdict"] == "as predicted" and change == "negative":
            out[r["kind"]] = "attenuated"
        else:
            out[r["kind"]] = "indistinguishable"
    return out


def balancing_verdict(da: DoseAnalysis) -> str:
    """The closing page's verdict on "weaker under balancing" from the direct knob
    (:func:`tanbias.lab.analysis.sweep.balancing_property` of :func:`balancing_words`)."""
    return balancing_property(balancing_words(da))


def adaptive_verdict(da: DoseAnalysis) -> str:
    """The closing page's verdict on "possibly adaptive": ``supported`` (fewer effective
    dimensions, lower held-out loss, within a cell), ``contradicted`` (the reverse),
    ``undetected`` (the interval contains 0) or ``undecided`` (too few seeds per cell)."""
    res = da.association.get("loss", {})
    word = interval_word(res.get("lo", np.nan), res.get("hi", np.nan))
    return {"positive": "supported", "negative": "contradicted", "indistinguishable": "undetected"}.get(word,
                                                                                                       "undecided")
