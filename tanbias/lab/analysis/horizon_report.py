"""The numbers and words of the horizon experiment (``data/preregistration/horizon.toml``).

The experiment's face: :func:`analyse` (the committed runs' analysis, memoised), :func:`numbers` (the
numbers its chapter glues, keys without the chapter's prefix) and :func:`words` (the words it states,
by name, for :func:`tanbias.stats.check_words`). The statistics are :mod:`tanbias.lab.analysis.horizon`.
While a part's registered seeds are not all in, every word of that part is read on the seeds there
and marked interim (``interim, <part>``); a contrast with fewer than two complete seeds reads
``undecided``.
"""
from __future__ import annotations

import numpy as np

from tanbias.lab import runs
from tanbias.lab.analysis import registered
from tanbias.lab.analysis.rivals import CONTRAST_NAMES
from tanbias.lab.analysis.horizon import OUTCOMES, HorizonAnalysis, analyse_horizon
from tanbias.lab.experiments import HORIZON

__all__ = ["analyse", "numbers", "words", "wall_hours", "QUOTED_SECONDARY", "CONTRAST_WORDS", "OUTCOME_WORDS",
           "ACCOUNT_NAMES", "CELL_NAMES", "collapse_table",
           "contrasts_table", "horizons_table", "accounts_table", "predictions_table", "untrained_runs"]

#: the accounts in words (chapter 13's names where it has them)
ACCOUNT_NAMES = {"tangent_bias": "tangent bias (the statement)", "unigram_first": "unigram first",
                 "mask_token": "the mask token", "self_attention": "self-attention",
                 "mask_mixing": "the mask row, mixed in"}
#: the collapse part's cells in words
CELL_NAMES = {"mask-native": "<mask> row, bidirectional", "random-native": "random tokens, bidirectional",
              "mask-causal": "<mask> row, causal", "random-causal": "random tokens, causal"}

#: the secondary contrasts the chapter quotes, by name (ratios; the held-out loss a difference in nats)
QUOTED_SECONDARY = ("corruption_raw_step0", "attention_raw_step0", "corruption_raw_final", "attention_raw_final",
                    "attention_participation_peak", "attention_heldout_loss_final", "interaction_peak")


def analyse() -> HorizonAnalysis:
    """:func:`~tanbias.lab.analysis.horizon.analyse_horizon` of the committed runs, memoised
    (:func:`tanbias.lab.runs.memoised`)."""
    return runs.memoised("analyse_horizon", analyse_horizon)


def wall_hours(runs_dir=None) -> float:
    """The wall time of the experiment's queue, all sittings, in hours, as ``make bench`` reads it from
    ``data/runs/horizon.json`` (:func:`tanbias.lab.runs.queue_record`); NaN without a record."""
    rec = runs.queue_record((runs.RUNS_DIR if runs_dir is None else runs_dir) / f"{HORIZON.name}.json")
    return rec["wall_seconds"] / 3600 if rec else float("nan")


def _interval(prefix: str, estimate, lo, hi, ratio: bool = True) -> dict:
    f = np.exp if ratio else float
    return {prefix: float(f(estimate)), f"{prefix}_lo": float(f(lo)), f"{prefix}_hi": float(f(hi))}


def numbers(a: HorizonAnalysis) -> dict:
    """The numbers the chapter quotes (without its prefix).

    The queue: ``runs_registered``, ``runs_done``, per part ``<part>_done``/``<part>_registered``,
    ``long_seeds`` (the most complete seeds of the long part in either architecture), ``wall_hours``
    (:func:`wall_hours`) and ``budget_hours``. The collapse part: ``collapse_runs_collapsed``, ``collapse_peak_min`` and
    ``collapse_peak_max`` (the lowest and highest early peak of any run), ``collapse_peak_step_max`` (the latest step of one),
    ``collapse_final_max`` (the highest last-step mean cosine), ``random_step0_max`` (the highest
    step-0 mean cosine under random corruption), its two primary contrasts as ratios with
    their 95 % intervals (``<contrast>_encoder``, ``_lo``, ``_hi``) and the smallest ratio either detects
    with 80 % power at Holm's first threshold (``peak_detectable``; their SEs are equal), the secondary contrasts of
    :data:`QUOTED_SECONDARY` (ratios, but the held-out loss in nats) and the two main effects' final contrasts
    at matched progress (``progress_corruption_final``, ``progress_attention_final``). The unigram check: ``unigram_gap_<kind>``
    (nats, the largest gap of the runs checked) and ``unigram_long_runs`` (how many of them are this
    experiment's own).
    """
    st = a.status
    out = {"runs_registered": int(st["registered"].sum()), "runs_done": int(st["committed"].sum()),
           "wall_hours": wall_hours(), "budget_hours": float(HORIZON.budget_hours)}
    for part, g in st.groupby("part"):
        out[f"{part}_done"], out[f"{part}_registered"] = int(g["committed"].sum()), int(g["registered"].sum())
    long = a.contrasts[a.contrasts["part"] == "long"]
    out["long_seeds"] = int(long["n_seeds"].max()) if len(long) else 0
    collapse = a.table[a.table["part"] == "collapse"] if len(a.table) else a.table
    out["collapse_runs_collapsed"] = int(collapse["collapses"].sum()) if len(collapse) else 0
    out["collapse_peak_min"] = float(collapse["peak_level"].min()) if len(collapse) else np.nan
    out["collapse_peak_max"] = float(collapse["peak_level"].max()) if len(collapse) else np.nan
    out["collapse_peak_step_max"] = int(collapse["peak_step"].max()) if len(collapse) else -1
    out["collapse_final_max"] = float(np.exp(collapse["raw_final"].max())) if len(collapse) else np.nan
    random = collapse[collapse["cell"].str.startswith("random-")] if len(collapse) else collapse
    out["random_step0_max"] = float(np.exp(random["raw_step0"].max())) if len(random) else np.nan
    alpha = registered.ALPHA / len(a.contrasts)
    for _, r in a.contrasts[a.contrasts["part"] == "collapse"].iterrows():
        key = f"{r['contrast']}_{r['kind']}"
        out.update(_interval(key, r["estimate"], r["lo"], r["hi"]))
        if r["contrast"] == "corruption_peak":      # both main effects have the same SE in a balanced 2 x 2
            out["peak_detectable"] = float(np.exp(registered.detectable_effect(r["se"], r["df"], alpha)))
    sec = a.secondary.set_index("contrast")
    for name in QUOTED_SECONDARY:
        r = sec.loc[name]
        out.update(_interval(name, r["estimate"], r["lo"], r["hi"], ratio=not name.endswith("heldout_loss_final")))
    for name in ("corruption_final", "attention_final"):
        pr = a.progress.set_index("contrast").loc[name]
        out.update(_interval(f"progress_{name}", pr["estimate"], pr["lo"], pr["hi"]))
    uc = a.unigram_check
    for kind in ("encoder", "decoder"):
        gaps = uc.loc[uc["kind"] == kind, "gap"].abs()
        out[f"unigram_gap_{kind}"] = float(gaps.max()) if len(gaps) else np.nan
    out["unigram_long_runs"] = int((uc["source"] == "horizon").sum())
    return out


def words(a: HorizonAnalysis) -> dict:
    """The words the chapter states, by name: ``primary, <contrast>, <kind>`` and ``secondary,
    <contrast>, <kind>`` (the interval's word), ``significant, <contrast>`` (``significant`` or ``not``,
    after Holm within its family), ``low power, <contrast>`` (``low-power null`` or ``not``), ``horizon, <contrast>, <kind>`` (holds, changes, reverses or –),
    ``collapse, <cell>`` (kept, removed, mixed or –), ``variance null, <kind>``, ``progress, <contrast>,
    <kind>``, ``account, <account>`` (supported, against, mixed, not distinguished), ``prediction,
    <account>, <contrast>, <kind>`` (met, failed, undecided), ``unigram check`` (``passes`` when every
    run checked passes, ``fails`` otherwise, ``–`` with none) and ``interim, <part>`` (``interim`` or
    ``complete``)."""
    out = {f"primary, {r['contrast']}, {r['kind']}": r["word"] for _, r in a.contrasts.iterrows()}
    out.update({f"secondary, {r['contrast']}, {r['kind']}": r["word"] for _, r in a.secondary.iterrows()})
    out.update({f"significant, {r['contrast']}": "significant" if r["significant"] else "not"
                for t in (a.contrasts, a.secondary) for _, r in t[t["part"] == "collapse"].iterrows()})
    out.update({f"low power, {r['contrast']}": "low-power null" if r["low_power_null"] else "not"
                for t in (a.contrasts, a.secondary) for _, r in t[t["part"] == "collapse"].iterrows()})
    out.update({f"horizon, {r['contrast']}, {r['kind']}": r["horizon"] for _, r in a.horizons.iterrows()})
    out.update({f"collapse, {r['cell']}": r["word"] for _, r in a.collapse.iterrows()})
    out.update({f"variance null, {r['kind']}": r["word"] for _, r in a.variance_null.iterrows()})
    out.update({f"progress, {r['contrast']}, {r['kind']}": r["word"] for _, r in a.progress.iterrows()})
    out.update({f"account, {r['account']}": r["word"] for _, r in a.accounts.iterrows()})
    out.update({f"prediction, {r['account']}, {r['contrast']}, {r['kind']}": r["reading"]
                for _, r in a.predictions.iterrows()})
    uc = a.unigram_check
    out["unigram check"] = "–" if uc.empty else "passes" if uc["passes"].all() else "fails"
    for part, g in a.contrasts.groupby("part"):
        out[f"interim, {part}"] = "interim" if g["interim"].any() else "complete"
    return out


def collapse_table(a: HorizonAnalysis):
    """The collapse part, a row per cell: its runs, how many collapse, the range of their early peaks
    and the registered word."""
    t = a.collapse.copy()
    return t.assign(cell=t["cell"].map(CELL_NAMES)).rename(columns={
        "collapsed": "runs that collapse", "peak_min": "lowest peak", "peak_max": "highest peak"})


#: the collapse part's contrasts in words
CONTRAST_WORDS = {"corruption": "random tokens instead of <mask>", "attention": "causal instead of bidirectional",
                  "interaction": "random tokens: bidirectional minus causal"}
OUTCOME_WORDS = {"raw": "mean cosine", "isoscore": "IsoScore*", "participation": "participation ratio",
                 "heldout_loss": "held-out loss (nats)"}


def contrasts_table(a: HorizonAnalysis):
    """The collapse part's registered contrasts, primary then secondary: what changes, the reading, when,
    the family, the estimate (a ratio for an outcome read in logs; IsoScore* and the held-out loss, in
    nats, a difference) with its 95 % interval
    (``lo``, ``hi``), Holm's p within its family, the interval's word and the realised power for a
    change of x1.25 (a ratio's outcome only)."""
    import pandas as pd

    rows = []
    for family, t in (("primary", a.contrasts), ("secondary", a.secondary)):
        for _, r in t[t["part"] == "collapse"].iterrows():
            f = np.exp if OUTCOMES.get(r["outcome"], (None, None, False))[2] else (lambda v: v)
            rows.append({"change": CONTRAST_WORDS[r["contrast"].split("_")[0]], "reading": OUTCOME_WORDS[r["outcome"]],
                         "when": r["phase"], "family": family, "estimate": f(r["estimate"]), "lo": f(r["lo"]),
                         "hi": f(r["hi"]), "Holm p": r["p_holm"], "word": r["word"],
                         "power for ×1.25": r["power"]})
    return pd.DataFrame(rows)


def horizons_table(a: HorizonAnalysis):
    """Chapter 13's long contrasts, a row per contrast and architecture: its registered word at 320 steps
    and this experiment's at 1280 (``not reached`` without a complete seed), and the horizons' word."""
    h = a.horizons
    return h.assign(contrast=h["contrast"].map(CONTRAST_NAMES),
                    word_1280=h["word_1280"].replace("undecided", "not reached"))[
        ["contrast", "kind", "word_320", "word_1280", "horizon"]].rename(columns={
            "kind": "architecture", "word_320": "320 steps", "word_1280": "1280 steps", "horizon": "the horizons"})


def accounts_table(a: HorizonAnalysis):
    """Each account's word over all its registered predictions, with how many were met, failed and
    undecided."""
    t = a.accounts.copy()
    return t.assign(account=t["account"].map(ACCOUNT_NAMES))


def predictions_table(a: HorizonAnalysis):
    """Every registered prediction read one by one: the account, the contrast, what it predicts, the
    estimate as a ratio with its 95 % interval, and the reading (met, failed, undecided)."""
    import pandas as pd

    p = a.predictions
    return pd.DataFrame({"account": p["account"].map(ACCOUNT_NAMES), "contrast": p["contrast"].str.replace("_", " "),
                         "architecture": p["kind"], "predicted": p["predicted"], "ratio": np.exp(p["estimate"]),
                         "ratio_lo": np.exp(p["lo"]), "ratio_hi": np.exp(p["hi"]), "reading": p["reading"]})


def untrained_runs(runs_dir=None) -> list[str]:
    """The registered runs not committed, in queue order: what the budget did not buy."""
    s = registered.run_status(HORIZON, runs_dir)
    return s.loc[~s["committed"], "run"].tolist()
