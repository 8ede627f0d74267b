"""The rival accounts: the readings added after the data (``data/preregistration/rivals-posthoc.toml``).

:mod:`tanbias.lab.analysis.rivals` applies the registration's rules, which were fixed before the
first run. This module applies the rules written on 2026-12-05, after every run had been read,
so that each sentence of the pages says what a rule shows and no more. None of them changes a
registered word; the pages show each beside the registered one, labelled "added after the data":

* :func:`prediction_rows`: every prediction an account registered, read as ``met``, ``failed`` or
  ``undecided`` (``[predictions]``), and :func:`all_predictions_word`, an account's word by all of
  them;
* :func:`realised_power`: each primary contrast's residual SD, power and smallest detectable change
  as the runs realised them (``[power]``), and :func:`secondary_power`, the same beyond the primary
  family;
* the registered re-reading at the peak that the chapter had not shown
  (:func:`tanbias.lab.analysis.rivals.peak_rows`, kept here with the readings it joins);
* :func:`kind_rows`: each earlier anisotropy verdict on both kinds of anisotropy, the shared mean
  (mean cosine, the mean's share) and the shape of the centred cloud (IsoScore*, participation
  ratio) (``[two_kinds]``);
* :func:`survival_rows`: the earlier verdicts under each rival's correction, in words of direction,
  with the shape of the centred cloud in place of the centred mean cosine and the proxy-random
  re-reading the registration lists (``[two_kinds].survival``);
* :func:`null_rows`: every correction that leaves nothing detected, as a change relative to the
  control's level beside the raw change (``[null_shares]``);
* :func:`scatter_numbers`: the 320-step runs' seed scatter of the heads' ratio, against which one
  long run is read (``[long_runs]``), and the runs' early peaks (``[words].collapse``);
* :func:`analyse_posthoc`: all of it, memoised.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from tanbias.lab import runs
from tanbias.lab.analysis import registered, rivals, rivals_design
from tanbias.lab.config import KINDS
from tanbias.lab.experiments import RIVALS, RIVALS_HEADS, rivals_config
from tanbias.numerals import format_spec
from tanbias.stats import interval_word
from tanbias.theory.anisotropy import TOP_COORDINATES

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["MARGIN_LOG", "MARGIN_LINEAR", "TOP_SHARE_FACTOR", "TOP_SHARE_EVEN", "COLLAPSE", "PREDICTIONS", "prediction_rows",
           "all_predictions_word", "account_summary", "share_interval", "READING_NAMES", "SURVIVAL_VERDICTS", "realised_power", "READINGS_BY_KIND", "MORE_ANISOTROPIC", "VERDICT_CONTRASTS",
           "direction_word", "kind_rows", "SURVIVAL_CORRECTIONS", "POSTHOC_CORRECTION_READINGS", "survival_rows", "null_rows", "scatter_numbers",
           "BY_CONSTRUCTION", "HEAD_INTERACTIONS", "SURVIVAL_READINGS", "RETIRED_CORRECTIONS", "survival_tested",
           "survival_tested_word", "survival_undecided", "PosthocAnalysis", "analyse_posthoc", "posthoc", "registration_predicts", "secondary_power"]

ALPHA = rivals.ALPHA
#: the equivalence margin of a null prediction on a logarithmic outcome: a change by x1.25 either way
MARGIN_LOG = registered.TARGET_LOG
#: ... and on a linear outcome: this share of the reference cell's mean level
MARGIN_LINEAR = 0.25
#: "well above an even share": the top-3 coordinates' share above this multiple of 3 / width
TOP_SHARE_FACTOR = 2.0
#: the top-3 coordinates' variance share of a cloud whose variance is spread evenly over the runs' width
TOP_SHARE_EVEN = TOP_COORDINATES / rivals_config("decoder", "standard-control", 0).size.hidden_size
#: a run "collapses" when its early peak (layer-mean mean cosine) exceeds this
COLLAPSE = 0.9


def posthoc() -> dict:
    """``data/preregistration/rivals-posthoc.toml``, parsed, its sha256 checked against the design's pin."""
    return registered.registration(RIVALS, posthoc=True)


def registration_predicts() -> dict:
    """Each account's registered predictions (rivals.toml, ``[accounts.<account>].predicts``), by account."""
    return {a: v["predicts"] for a, v in registered.registration(RIVALS)["accounts"].items()}


# --------------------------------------------------------------------------- every prediction
#: every prediction of rivals.toml's [accounts] (their ``predicts``), in the registration's order:
#: (account, key, how it is read, the prediction in words). ``key`` is a registered contrast for
#: "sign" / "null" / "opposite", a share for "share" / "top_share" / "enrichment" / "near0"
PREDICTIONS = (
    ("tangent_bias", "surgery_unigram", ("sign", "-"), "under the unigram head the proxy surgery lowers the mean cosine"),
    ("tangent_bias", "surgery_interaction", ("null", None), "the surgery's effect is the same under both heads"),
    ("tangent_bias", "enrichment_outside", ("enrichment", "+"), "the proxy is enriched outside W_U's top subspace"),
    ("unigram_first", "head_peak", ("sign", "-"), "the unigram head lowers the early peak"),
    ("unigram_first", "head_final", ("sign", "-"), "the unigram head lowers the final mean cosine"),
    ("unigram_first", "head_final_centred", ("null", None), "the unigram head does not change the centred mean cosine"),
    ("unigram_first", "alias_interaction", ("opposite", "alias_standard"),
     "aliasing raises the mean cosine less under the unigram head"),
    ("rogue_dimensions", "q_s", ("share", "below"), "standardising leaves under half of the mean cosine"),
    ("rogue_dimensions", "top_share", ("top_share", None), "the top-3 coordinates carry well over an even share"),
    ("common_drift", "q_c", ("share", "below"), "centring leaves under half of the mean cosine"),
    ("common_drift", "mean_share", ("share", "above"), "the mean carries over half of the squared norm"),
    ("output_bottleneck", "enrichment", ("enrichment", "+"), "the proxy is enriched"),
    ("output_bottleneck", "enrichment_outside", ("near0", None), "no enrichment is left outside W_U's top subspace"),
    ("measurement", "type_balanced", ("measurement", None), "weighting types equally changes a contrast's word"),
)
#: the registered threshold of the shares (rule.shares, the accounts' rules)
_SHARE = rivals.SHARE_THRESHOLD


def share_interval(table, kind: str, column: str, transform=None) -> tuple[float, float, float]:
    """The 95 % seed t interval of ``column`` in the standard-head control runs of ``kind``'s complete seeds."""
    seeds = rivals.complete_seeds(table, kind)
    g = table[(table["kind"] == kind) & (table["cell"] == "standard-control") & table["seed"].isin(seeds)]
    x = g[column].to_numpy(float) if transform is None else transform(g).to_numpy(float)
    m, lo, hi, _ = registered.t_interval(x, 1 - ALPHA)
    return m, lo, hi


def _reference_level(table, kind: str, outcome: str, weights: dict) -> float:
    """The mean of ``outcome`` in the contrast's reference cell (weight -1) over ``kind``'s complete seeds."""
    ref = [c for c, w in weights.items() if w == -1][0]
    seeds = rivals.complete_seeds(table, kind)
    return float(table[(table["kind"] == kind) & (table["cell"] == ref) & table["seed"].isin(seeds)][outcome].mean())


def _side(lo: float, hi: float, side: str, threshold: float) -> str:
    """``met`` / ``failed`` / ``undecided`` for an interval predicted to lie ``below`` or ``above`` a threshold.

    >>> _side(0.1, 0.3, "below", 0.5), _side(0.6, 0.7, "below", 0.5), _side(0.4, 0.6, "above", 0.5)
    ('met', 'failed', 'undecided')
    """
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "undecided"
    if side == "below":
        return "met" if hi < threshold else "failed" if lo > threshold else "undecided"
    return "met" if lo > threshold else "failed" if hi < threshold else "undecided"


def _sign_outcome(row, sign: str) -> str:
    """A predicted sign of a registered contrast (``[predictions].sign``): Holm-significant on that side."""
    if not bool(row["significant"]):
        return "undecided"
    return "met" if (row["estimate"] < 0) == (sign == "-") else "failed"


def _null_outcome(row, margin: tuple[float, float]) -> str:
    """A predicted null (``[predictions].null``): failed where Holm-significant, met inside the margin."""
    if bool(row["significant"]):
        return "failed"
    return "met" if margin[0] < row["lo"] and row["hi"] < margin[1] else "undecided"


def _g(x: float, sign: bool = False) -> str:
    """Three significant digits, as the book's tables print numbers.

    >>> _g(15.4612), _g(0.74633), _g(-0.004635, sign=True)
    ('15.5', '0.746', '−0.00464')
    """
    return format_spec(x, "+.3g" if sign else ".3g")


def _value(row, outcome: str) -> str:
    """A contrast as the table shows it: a ratio for a logarithmic outcome, a difference otherwise."""
    if outcome in rivals.LOG_OUTCOMES:
        return f"×{_g(np.exp(row['estimate']))} [{_g(np.exp(row['lo']))}, {_g(np.exp(row['hi']))}]"
    return f"{_g(row['estimate'], True)} [{_g(row['lo'], True)}, {_g(row['hi'], True)}]"


def prediction_rows(table, contrasts, accounts) -> pd.DataFrame:
    """Every registered prediction of every account, per architecture, read by ``[predictions]``.

    Parameters
    ----------
    table, contrasts, accounts : pandas.DataFrame
        :func:`~tanbias.lab.analysis.rivals.run_table`, :func:`~tanbias.lab.analysis.rivals.contrast_rows`
        and :func:`~tanbias.lab.analysis.rivals.account_words`.

    Returns
    -------
    pandas.DataFrame
        One row per account, prediction and architecture: ``account``, ``kind``, ``key``,
        ``prediction`` (in words), ``reading`` (the contrast or share with its 95 % interval, as
        text), ``holm_p`` (the Holm-adjusted p of a registered contrast, NaN for a share) and
        ``outcome`` (``met``, ``failed`` or ``undecided``).
    """
    import pandas as pd

    c = contrasts.set_index(["contrast", "kind"])
    words = accounts.set_index(["account", "kind"])["word"]
    even = TOP_SHARE_EVEN
    out = []
    for kind in KINDS:
        for account, key, (how, arg), text in PREDICTIONS:
            p, reading = float("nan"), ""
            if how in ("sign", "null", "opposite"):
                row = c.loc[(key, kind)]
                p, reading = float(row["p_holm"]), _value(row, row["outcome"])
                if how == "sign":
                    outcome = _sign_outcome(row, arg)
                elif how == "null":
                    if row["outcome"] in rivals.LOG_OUTCOMES:
                        margin = (-MARGIN_LOG, MARGIN_LOG)
                    else:
                        level = abs(_reference_level(table, kind, row["outcome"], rivals.CONTRASTS[key][1]))
                        margin = (-MARGIN_LINEAR * level, MARGIN_LINEAR * level)
                    outcome = _null_outcome(row, margin)
                else:                                      # opposite in sign to another contrast
                    other = float(c.loc[(arg, kind), "estimate"])
                    outcome = ("undecided" if not bool(row["significant"]) else
                               "met" if np.sign(row["estimate"]) == -np.sign(other) else "failed")
            elif how in ("share", "top_share"):
                if key == "q_s":
                    m, lo, hi = share_interval(table, kind, "", lambda g: g["standardised"] / np.exp(g["raw"]))
                elif key == "q_c":
                    m, lo, hi = share_interval(table, kind, "", lambda g: g["centred"] / np.exp(g["raw"]))
                else:
                    m, lo, hi = share_interval(table, kind, key)
                reading = f"{_g(m)} [{_g(lo)}, {_g(hi)}]"
                if how == "share":
                    outcome = _side(lo, hi, arg, _SHARE)
                else:
                    outcome = _side(lo, hi, "above", TOP_SHARE_FACTOR * even)
                    if outcome == "undecided" and hi < TOP_SHARE_FACTOR * even:
                        outcome = "failed"
                    reading += f" (even: {_g(even)})"
            elif how in ("enrichment", "near0"):
                m, lo, hi = share_interval(table, kind, key)
                reading = f"×{_g(np.exp(m))} [{_g(np.exp(lo))}, {_g(np.exp(hi))}]"
                if how == "enrichment":
                    outcome = _side(lo, hi, "above" if arg == "+" else "below", 0.0)
                else:
                    outcome = "failed" if lo > 0 else "met"
            else:                                          # the measurement account's registered rule
                word = str(words.loc[(account, kind)])
                outcome = {"supported": "met", "against": "failed"}.get(word, "undecided")
                reading = f"registered word: {word}"
            out.append({"account": account, "kind": kind, "key": key, "prediction": text, "reading": reading,
                        "holm_p": p, "outcome": outcome})
    return pd.DataFrame(out)


def all_predictions_word(outcomes) -> str:
    """An account's word by all its predictions (``[predictions].all_predictions``).

    >>> all_predictions_word(["met", "met"]), all_predictions_word(["met", "failed", "undecided"])
    ('supported', 'mixed')
    >>> all_predictions_word(["failed", "undecided"]), all_predictions_word(["met", "undecided"])
    ('against', 'not distinguished')
    """
    outcomes = list(outcomes)
    met, failed = outcomes.count("met"), outcomes.count("failed")
    if outcomes and met == len(outcomes):
        return "supported"
    if failed and not met:
        return "against"
    if failed and met:
        return "mixed"
    return "not distinguished"


#: the shares that are near a fixed value for any data, so no test of an account: q_c (the centred mean
#: cosine over the raw, rivals-posthoc.toml [two_kinds].retired) and q_s (the standardised one,
#: book-posthoc.toml [retired]: standardising centres every coordinate too)
BY_CONSTRUCTION = ("q_c", "q_s")


def account_summary(predictions, accounts) -> pd.DataFrame:
    """Per account and architecture: the registered word, the counts of predictions met, failed and
    undecided, :func:`all_predictions_word`, and the same word over the predictions that can fail
    (``tested``, book-posthoc.toml: those on a share of :data:`BY_CONSTRUCTION` read "no test";
    ``no_test`` counts them)."""
    import pandas as pd

    words = accounts.set_index(["account", "kind"])["word"]
    out = []
    for (account, kind), g in predictions.groupby(["account", "kind"], sort=False):
        o = g["outcome"].tolist()
        tested = g.loc[~g["key"].isin(BY_CONSTRUCTION), "outcome"].tolist()
        out.append({"account": account, "kind": kind, "registered": str(words.loc[(account, kind)]),
                    "met": o.count("met"), "failed": o.count("failed"), "undecided": o.count("undecided"),
                    "predictions": len(o), "all_predictions": all_predictions_word(o),
                    "no_test": len(o) - len(tested), "tested": all_predictions_word(tested)})
    return pd.DataFrame(out)


# --------------------------------------------------------------------------- realised power
def _detectable(se: float, df: float, alpha: float, power: float = 0.8) -> float:
    """The smallest ln change a two-sided t test at ``alpha`` detects with ``power`` (noncentral t)."""
    from scipy.optimize import brentq

    return float(brentq(lambda b: registered.t_test_power(b, se, df, alpha) - power, 1e-9, 40 * se))


def realised_power(contrasts, planned: dict | None = None) -> pd.DataFrame:
    """The primary family's power as the runs realised it (``[power]``).

    ``planned`` maps an architecture to the SD the design planned with (rivals.toml's [power]);
    default :func:`tanbias.lab.analysis.rivals_design.primary_sd` of the causal runs.

    Returns
    -------
    pandas.DataFrame
        One row per primary contrast and architecture: ``contrast``, ``kind``, ``n_seeds``,
        ``sd`` (residual SD of the fit, ln units), ``planned_sd``, ``df``, ``power_first`` (x1.25 at
        alpha / 4), ``power_alpha`` (at alpha), ``detectable`` (the smallest ratio detected with 80 %
        power at alpha / 4, as a rise; a fall by ``1 / detectable``).
    """
    import pandas as pd

    if planned is None:
        planned = {k: rivals_design.primary_sd(k)["sd"] for k in KINDS}
    family = len(contrasts[contrasts["family"] == "primary"])
    out = []
    for _, r in contrasts[contrasts["family"] == "primary"].iterrows():
        n, se, df = int(r["n_seeds"]), float(r["se"]), float(r["df"])
        out.append({"contrast": r["contrast"], "kind": r["kind"], "n_seeds": n, "sd": se / np.sqrt(2.0 / n),
                    "planned_sd": float(planned[r["kind"]]), "df": df,
                    "power_first": registered.t_test_power(MARGIN_LOG, se, df, ALPHA / family),
                    "power_alpha": registered.t_test_power(MARGIN_LOG, se, df, ALPHA),
                    "detectable": float(np.exp(_detectable(se, df, ALPHA / family)))})
    return pd.DataFrame(out)


def secondary_power(contrasts) -> pd.DataFrame:
    """``[power]``'s reading applied beyond the primary family: each secondary contrast on a logarithmic
    outcome, its power for a x1.25 change at Holm's first threshold over the secondary family and at
    alpha, and the smallest ratio it detects with 80 % power at that threshold (columns ``contrast``,
    ``kind``, ``outcome``, ``n_seeds``, ``power_first``, ``power_alpha``, ``detectable``)."""
    import pandas as pd

    sec = contrasts[contrasts["family"] == "secondary"]
    family = len(sec)
    out = []
    for _, r in sec[sec["outcome"].isin(rivals.LOG_OUTCOMES)].iterrows():
        se, df = float(r["se"]), float(r["df"])
        out.append({"contrast": r["contrast"], "kind": r["kind"], "outcome": r["outcome"], "n_seeds": int(r["n_seeds"]),
                    "power_first": registered.t_test_power(MARGIN_LOG, se, df, ALPHA / family),
                    "power_alpha": registered.t_test_power(MARGIN_LOG, se, df, ALPHA),
                    "detectable": float(np.exp(_detectable(se, df, ALPHA / family)))})
    return pd.DataFrame(out)


# --------------------------------------------------------------------------- two kinds of anisotropy
#: the readings of each kind of anisotropy ([two_kinds]): the first of each decides the kind's word
READINGS_BY_KIND = {"shared mean": ("raw", "log_mean_share"), "shape": ("isoscore", "participation")}
#: the sign of a contrast on each reading that means "more anisotropic"
MORE_ANISOTROPIC = {"raw": 1, "log_mean_share": 1, "isoscore": -1, "participation": -1}
#: what each reading is called on the pages
READING_NAMES = {"raw": "mean cosine", "log_mean_share": "mean's share", "isoscore": "IsoScore*",
                 "participation": "participation ratio"}


def _w(*terms) -> dict:
    return dict(terms)


#: the earlier anisotropy verdicts re-read on both kinds: name -> {head: weights} ("both": one contrast)
VERDICT_CONTRASTS = {
    "surgery, proxy - control": {h: _w((f"{h}-proxy", 1), (f"{h}-control", -1)) for h in RIVALS_HEADS},
    "surgery, proxy - random": {h: _w((f"{h}-proxy", 1), (f"{h}-random", -1)) for h in RIVALS_HEADS},
    "aliasing, k3 - control": {h: _w((f"{h}-k3", 1), (f"{h}-control", -1)) for h in RIVALS_HEADS},
    "output bias, unigram - standard head": {"both": _w(("unigram-control", 1), ("standard-control", -1))},
}


def direction_word(word: str, reading: str) -> str:
    """An interval word of a contrast on ``reading`` as a direction of anisotropy.

    >>> direction_word("negative", "raw"), direction_word("negative", "isoscore"), direction_word("indistinguishable", "raw")
    ('less anisotropic', 'more anisotropic', 'not detected')
    """
    if word not in ("positive", "negative"):
        return "not detected" if word == "indistinguishable" else "undecided"
    more = (word == "positive") == (MORE_ANISOTROPIC[reading] > 0)
    return "more anisotropic" if more else "less anisotropic"


def kind_rows(table, fits=None) -> pd.DataFrame:
    """Each earlier anisotropy verdict (:data:`VERDICT_CONTRASTS`) on both kinds of anisotropy.

    Returns
    -------
    pandas.DataFrame
        One row per verdict, head and architecture: ``verdict``, ``head``, ``kind``, per reading
        (:data:`MORE_ANISOTROPIC`) ``<reading>``, ``<reading>_lo``, ``<reading>_hi`` (the contrast and
        its 95 % interval, unadjusted) and ``<reading>_word`` (:func:`direction_word`); ``shared mean`` and
        ``shape`` (each kind's word, from its first reading) and ``agree`` (the two kinds' words equal).
    """
    import pandas as pd

    fits = fits or rivals.ContrastFits(table)
    out = []
    for kind in KINDS:
        for verdict, by_head in VERDICT_CONTRASTS.items():
            for head, weights in by_head.items():
                row = {"verdict": verdict, "head": head, "kind": kind}
                for reading in MORE_ANISOTROPIC:
                    r = fits(kind, reading, weights)
                    row.update({reading: r["estimate"], f"{reading}_lo": r["lo"], f"{reading}_hi": r["hi"],
                                f"{reading}_word": direction_word(interval_word(r["lo"], r["hi"]), reading)})
                for name, (first, _) in READINGS_BY_KIND.items():
                    row[name] = row[f"{first}_word"]
                row["agree"] = row["shared mean"] == row["shape"]
                out.append(row)
    return pd.DataFrame(out)


# --------------------------------------------------------------------------- survival, in words of direction
#: the survival table's corrections ([two_kinds].survival): the shape of the centred cloud stands in
#: for the centred mean cosine
SURVIVAL_CORRECTIONS = ("unigram head", "IsoScore*", "standardised", "type-balanced", "outside W_U")
#: the verdicts the survival table re-reads (rivals.toml [verdicts].recomputed, proxy - random included):
#: name -> (standard-head contrast, its unigram-head twin)
SURVIVAL_VERDICTS = {"surgery lowers it: proxy - control (chapter 12)": ("surgery_standard", "surgery_unigram"),
                     "surgery lowers it: proxy - random (chapter 12)": ("surgery_standard_random",
                                                                         "surgery_unigram_random"),
                     "aliasing raises it (chapter 11)": ("alias_standard", "alias_unigram")}


def _direction(fits, kind, outcome, weights, reading) -> str:
    r = fits(kind, outcome, weights)
    return direction_word(interval_word(r["lo"], r["hi"]), reading)


#: the survival table's columns added after the data: column -> (outcome, which head's contrast)
POSTHOC_CORRECTION_READINGS = {"standard": ("raw", "standard"), "unigram head": ("raw", "unigram"),
                    "IsoScore*": ("isoscore", "standard"), "standardised": ("standardised", "standard"),
                    "type-balanced": ("type_balanced", "standard")}


def _enrichment_word(lo, hi) -> str:
    return {"positive": "enriched", "negative": "depleted", "indistinguishable": "not detected"}.get(
        interval_word(lo, hi), "undecided")


def survival_rows(table, shares, fits=None) -> pd.DataFrame:
    """The earlier verdicts under each rival's correction, every cell a direction of anisotropy
    (``more anisotropic``, ``less anisotropic``, ``not detected``) or, for chapter 7's enrichment,
    ``enriched`` / ``not detected`` / ``depleted``; ``n/a`` where a correction does not apply.
    Columns: ``verdict``, ``kind``, ``standard`` (the mean cosine, standard head) and
    :data:`SURVIVAL_CORRECTIONS`; ``kept`` and ``applies``: how many corrections keep the standard
    word, of how many apply (:func:`tanbias.lab.analysis.rivals.survival_table`)."""
    def word(lo, hi, outcome):
        return direction_word(interval_word(lo, hi), "isoscore" if outcome == "isoscore" else "raw")

    t = rivals.survival_table(fits or rivals.ContrastFits(table), shares, SURVIVAL_VERDICTS, POSTHOC_CORRECTION_READINGS,
                              word, _enrichment_word)
    kept = [rivals.corrections_kept(r, SURVIVAL_CORRECTIONS) for _, r in t.iterrows()]
    t["kept"] = [sum(k) for k in kept]
    t["applies"] = [len(k) for k in kept]
    return t


# --------------------------------------------------------------------------- survival, by a test of the difference
#: the registered interaction contrast that tests whether the unigram head changes a verdict's effect
#: (rivals.toml), by the verdict's standard-head contrast; the proxy - random contrast has none
HEAD_INTERACTIONS = {"surgery_standard": "surgery_interaction", "alias_standard": "alias_interaction"}
#: what a survival cell reads (book-posthoc.toml [survival].cell, [retired])
SURVIVAL_READINGS = ("kept", "lost", "not decided", "no test", "n/a")
#: the corrections whose readings are no test (book-posthoc.toml [retired])
RETIRED_CORRECTIONS = ("standardised",)


def _overlap(a: tuple, b: tuple) -> bool:
    """Whether two intervals ``(estimate, lo, hi)`` overlap."""
    return not (a[2] < b[1] or b[2] < a[1])


def _anisotropy_relative(fits, kind: str, outcome: str, weights: dict) -> tuple[float, float, float]:
    """A contrast as a relative change (``[null_shares].relative``) on the anisotropy scale: IsoScore*'s
    sign turned, so that a fall is a fall of anisotropy on every reading."""
    est, lo, hi = _relative(fits, kind, outcome, weights)
    return (-est, -hi, -lo) if outcome == "isoscore" else (est, lo, hi)


def survival_tested(table, shares, fits=None) -> pd.DataFrame:
    """The survival table read by a test of the difference (``book-posthoc.toml`` [survival]): each
    cell of :func:`survival_rows` as ``kept`` (the same word as the standard reading), ``lost`` (the
    words differ and a test decides it), ``not decided`` (they differ and no test decides it), ``no
    test`` (a retired correction, [retired]) or ``n/a``.

    The test of a difference: for the unigram head, the registered interaction contrast of the
    verdict's effect with the head (:data:`HEAD_INTERACTIONS`), significant by its 95 % interval; for
    the other corrections (and the proxy - random contrast, which has no interaction), the two
    readings' 95 % intervals on the relative scale (``[null_shares].relative``, IsoScore*'s sign
    turned) do not overlap; for chapter 7's enrichment, its two seed t intervals in ln units.

    Returns
    -------
    pandas.DataFrame
        ``verdict``, ``kind`` and one column per correction of :data:`SURVIVAL_CORRECTIONS`.
    """
    import pandas as pd

    registered.book_posthoc()                          # the rule's file must be the pinned one
    fits = fits or rivals.ContrastFits(table)
    words = survival_rows(table, shares, fits)
    s = shares.set_index(["kind", "head"])
    out = []
    for _, row in words.iterrows():
        kind, verdict = row["kind"], row["verdict"]
        cells = {"verdict": verdict, "kind": kind}
        twins = SURVIVAL_VERDICTS.get(verdict)
        for column in SURVIVAL_CORRECTIONS:
            word = row[column]
            if word == "n/a":
                cells[column] = "n/a"
            elif column in RETIRED_CORRECTIONS:
                cells[column] = "no test"
            elif word == row["standard"]:
                cells[column] = "kept"
            elif twins is None:                      # chapter 7's enrichment: ln enrichment, seed t intervals
                std = s.loc[(kind, "standard")]
                ref = (0.0, float(std["enrichment_lo"]), float(std["enrichment_hi"]))
                other = (s.loc[(kind, "unigram")] if column == "unigram head" else std)
                key = "enrichment" if column == "unigram head" else "enrichment_outside"
                cor = (0.0, float(other[f"{key}_lo"]), float(other[f"{key}_hi"]))
                cells[column] = "not decided" if _overlap(ref, cor) else "lost"
            elif column == "unigram head" and twins[0] in HEAD_INTERACTIONS:
                r = fits(kind, "raw", rivals.CONTRASTS[HEAD_INTERACTIONS[twins[0]]][1])
                decided = interval_word(r["lo"], r["hi"]) != "indistinguishable"
                cells[column] = "lost" if decided else "not decided"
            else:
                outcome, head = POSTHOC_CORRECTION_READINGS[column]
                std = _anisotropy_relative(fits, kind, "raw", rivals.CONTRASTS[twins[0]][1])
                cor = _anisotropy_relative(fits, kind, outcome, rivals.CONTRASTS[twins[head == "unigram"]][1])
                cells[column] = "not decided" if _overlap(std, cor) else "lost"
        out.append(cells)
    return pd.DataFrame(out, columns=["verdict", "kind", *SURVIVAL_CORRECTIONS])


def survival_tested_word(cells, verdicts=("",)) -> str:
    """A row's word from :func:`survival_tested` (book-posthoc.toml [survival].word), over the rows whose
    ``verdict`` starts with one of ``verdicts``: ``survives`` when no cell is lost and one is kept,
    ``does not survive`` when every decided cell is lost, ``partly survives`` when some are kept and
    some lost, ``not decided`` when none is decided.

    >>> import pandas as pd
    >>> t = pd.DataFrame([{"verdict": "a", "kind": "x", "unigram head": "kept", "IsoScore*": "not decided"},
    ...                   {"verdict": "b", "kind": "x", "unigram head": "lost", "IsoScore*": "no test"}])
    >>> survival_tested_word(t, ("a",)), survival_tested_word(t), survival_tested_word(t, ("b",))
    ('survives', 'partly survives', 'does not survive')
    """
    rows = cells[cells["verdict"].str.startswith(tuple(verdicts))]
    values = [v for c in rows.columns if c not in ("verdict", "kind") for v in rows[c]]
    kept, lost = values.count("kept"), values.count("lost")
    if not kept and not lost:
        return "not decided"
    return "survives" if not lost else "does not survive" if not kept else "partly survives"


def survival_undecided(cells, verdicts=("",)) -> int:
    """How many cells of the rows of :func:`survival_tested` whose ``verdict`` starts with one of
    ``verdicts`` read ``not decided``."""
    rows = cells[cells["verdict"].str.startswith(tuple(verdicts))]
    return int(sum((rows[c] == "not decided").sum() for c in rows.columns if c not in ("verdict", "kind")))


# --------------------------------------------------------------------------- a null is not an absence
#: the corrections whose nulls :func:`null_rows` reads: column -> (outcome, reading for the direction)
_NULL_OUTCOMES = {"unigram head": ("raw", "raw"), "IsoScore*": ("isoscore", "isoscore"),
                  "centred": ("centred", "raw"), "standardised": ("standardised", "raw"),
                  "type-balanced": ("type_balanced", "raw")}


def _relative(fits, kind, outcome, weights) -> tuple[float, float, float]:
    """A contrast as a change relative to its reference cell (``[null_shares].relative``)."""
    r = fits(kind, outcome, weights)
    if outcome in rivals.LOG_OUTCOMES:
        return tuple(float(np.expm1(r[k])) for k in ("estimate", "lo", "hi"))
    level = abs(_reference_level(fits.table, kind, outcome, weights))
    return tuple(float(r[k] / level) for k in ("estimate", "lo", "hi"))


def null_rows(table, fits=None) -> pd.DataFrame:
    """Every correction that leaves a verdict's effect undetected, while the uncorrected reading of
    the same head has one, as a change relative to the reference cell's level beside that reading's
    change (``[null_shares]``). Under each head the corrections are the readings; the unigram head is
    itself a correction of the standard head's mean cosine. The centred mean cosine is read here too,
    although it is no longer a test ([two_kinds].retired).

    Returns
    -------
    pandas.DataFrame
        ``verdict``, ``kind``, ``head``, ``correction``, ``raw`` (the uncorrected relative change:
        the mean cosine of the same head, the standard head's for the correction ``unigram head``),
        ``estimate``, ``lo``, ``hi`` (the corrected change and its 95 % interval, relative, on the
        anisotropy scale: IsoScore*'s sign turned) and ``excludes_raw`` (whether that interval
        excludes a change as large as the uncorrected one).
    """
    import pandas as pd

    fits = fits or rivals.ContrastFits(table)
    out = []

    def add(verdict, kind, head, correction, raw, outcome, weights, turn):
        r = fits(kind, outcome, weights)
        if interval_word(r["lo"], r["hi"]) != "indistinguishable":
            return
        est, lo, hi = _relative(fits, kind, outcome, weights)
        if turn:                                   # on the anisotropy scale: a rise of IsoScore* is a fall
            est, lo, hi = -est, -hi, -lo
        out.append({"verdict": verdict, "kind": kind, "head": head, "correction": correction, "raw": raw,
                    "estimate": est, "lo": lo, "hi": hi, "excludes_raw": not (lo <= raw <= hi)})

    for kind in KINDS:
        for verdict, (std, uni) in SURVIVAL_VERDICTS.items():
            by_head = {"standard": rivals.CONTRASTS[std][1], "unigram": rivals.CONTRASTS[uni][1]}
            raws = {h: _relative(fits, kind, "raw", w)[0] for h, w in by_head.items()}
            detected = {h: _direction(fits, kind, "raw", w, "raw") != "not detected" for h, w in by_head.items()}
            if detected["standard"]:
                add(verdict, kind, "unigram", "unigram head", raws["standard"], "raw", by_head["unigram"], False)
            for head, weights in by_head.items():
                if not detected[head]:
                    continue
                for correction, (outcome, reading) in _NULL_OUTCOMES.items():
                    if correction != "unigram head":
                        add(verdict, kind, head, correction, raws[head], outcome, weights, reading == "isoscore")
    return pd.DataFrame(out, columns=["verdict", "kind", "head", "correction", "raw", "estimate", "lo", "hi",
                                      "excludes_raw"])


# --------------------------------------------------------------------------- one long run against the scatter
def scatter_numbers(table) -> dict:
    """The 320-step seed scatter a long run is read against, and the runs' early peaks.

    Per architecture: the heads' ratio (unigram over standard control, final mean cosine) over the
    complete seeds, its range (``short_ratio_lo_<kind>``, ``short_ratio_hi_<kind>``) and the SD of
    its logarithm (``short_ratio_logsd_<kind>``); the peaks in the first 30 % of training of the
    320-step runs of each head: ``peak_lo_<head>_<kind>``, ``peak_hi_<head>_<kind>`` and
    ``collapsed_<head>_<kind>`` (how many exceed :data:`COLLAPSE`) of ``runs_<head>_<kind>``; and the
    latest step at which any 320-step run peaks (``peak_step_max``) and the next multiple of ten above it
    (``peak_within``: "within 50 steps").
    """
    last = int(table["peak_step"].max())
    out = {"peak_step_max": last, "peak_within": 10 * (last // 10 + 1)}
    for kind in KINDS:
        seeds = rivals.complete_seeds(table, kind)
        t = table[(table["kind"] == kind) & table["seed"].isin(seeds)].set_index(["cell", "seed"])["raw"]
        logs = np.array([t.loc[("unigram-control", s)] - t.loc[("standard-control", s)] for s in seeds])
        out.update({f"short_ratio_lo_{kind}": float(np.exp(logs.min())),
                    f"short_ratio_hi_{kind}": float(np.exp(logs.max())),
                    f"short_ratio_logsd_{kind}": float(logs.std(ddof=1))})
        for head in RIVALS_HEADS:
            peaks = np.exp(table[(table["kind"] == kind) & (table["head"] == head)]["peak"].to_numpy(float))
            out.update({f"peak_lo_{head}_{kind}": float(peaks.min()), f"peak_hi_{head}_{kind}": float(peaks.max()),
                        f"collapsed_{head}_{kind}": int((peaks > COLLAPSE).sum()), f"runs_{head}_{kind}": len(peaks)})
    return out


# --------------------------------------------------------------------------- everything
@dataclass
class PosthocAnalysis:
    """The readings added after the data: predictions, power, both kinds, survival, nulls, scatter."""
    predictions: "object"
    summary: "object"
    power: "object"
    secondary_power: "object"
    peaks: "object"
    kinds: "object"
    survival: "object"
    nulls: "object"
    scatter: dict
    tested: "object" = None    # survival_tested: the survival table by a test of the difference (book-posthoc.toml)


def analyse_posthoc(analysis=None) -> PosthocAnalysis:
    """The readings of ``rivals-posthoc.toml`` on a :class:`~tanbias.lab.analysis.rivals.RivalsAnalysis`
    (default the committed runs', memoised)."""
    if analysis is None:
        return runs.memoised("analyse_rivals_posthoc", lambda: analyse_posthoc(rivals.analyse_rivals()))
    posthoc()                                      # the rules' file must be the pinned one
    a = analysis
    predictions = prediction_rows(a.table, a.contrasts, a.accounts)
    fits = rivals.ContrastFits(a.table)
    return PosthocAnalysis(predictions=predictions, summary=account_summary(predictions, a.accounts),
                           power=realised_power(a.contrasts), secondary_power=secondary_power(a.contrasts),
                           peaks=rivals.peak_rows(a.table), kinds=kind_rows(a.table, fits),
                           survival=survival_rows(a.table, a.shares, fits), nulls=null_rows(a.table, fits),
                           scatter=scatter_numbers(a.table), tested=survival_tested(a.table, a.shares, fits))
