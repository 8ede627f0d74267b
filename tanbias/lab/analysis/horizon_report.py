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
from tanbias.lab.analysis.horizon import OUTCOMES, HorizonAnalysis, analyse_horizon, family_size
from tanbias.lab.analysis.verdicts import cell, property_word
from tanbias.lab.experiments import HORIZON, HORIZON_LONG_STAGE

__all__ = ["analyse", "numbers", "words", "cells", "wall_hours", "long_seeds", "QUOTED_SECONDARY", "ACCOUNT_NAMES",
           "CELL_NAMES", "LONG_CELL_NAMES", "collapse_table", "contrasts_table", "accounts_table", "predictions_table",
           "untrained_runs", "long_numbers", "long_table", "long_shape_table", "long_runs_table",
           "common_steps_table", "variance_null_table"]

#: the accounts in words (chapter 13's names where it has them)
ACCOUNT_NAMES = {"tangent_bias": "tangent bias (the statement)", "unigram_first": "unigram first",
                 "mask_token": "the mask token", "self_attention": "self-attention",
                 "mask_mixing": "the mask row, mixed in"}
#: the collapse part's cells in words
CELL_NAMES = {"mask-native": "<mask> row, bidirectional", "random-native": "random tokens, bidirectional",
              "mask-causal": "<mask> row, causal", "random-causal": "random tokens, causal"}
#: the long part's cells in words: the output head and the surgery arm
LONG_CELL_NAMES = {"standard-control": "standard head, no surgery", "standard-proxy": "standard head, proxy surgery",
                   "unigram-control": "unigram head, no surgery", "unigram-proxy": "unigram head, proxy surgery"}

#: the secondary contrasts the chapter quotes, by name (ratios; the held-out loss a difference in nats)
QUOTED_SECONDARY = ("corruption_raw_step0", "attention_raw_step0", "corruption_raw_final", "attention_raw_final",
                    "attention_participation_peak", "attention_heldout_loss_final", "interaction_peak")


def analyse() -> HorizonAnalysis:
    """:func:`~tanbias.lab.analysis.horizon.analyse_horizon` of the committed runs, memoised
    (:func:`tanbias.lab.runs.memoised`)."""
    return runs.memoised("analyse_horizon", analyse_horizon)


def wall_hours(runs_dir=None, stage: str | None = None) -> float:
    """The wall time of the experiment's queue, all sittings, in hours, as ``make bench`` reads it from
    ``data/runs/horizon.json`` (:func:`tanbias.lab.runs.queue_record`), or with ``stage`` from that stage's
    record (``data/runs/horizon-<stage>.json``); NaN without a record, 0 for a stage not yet started."""
    name = HORIZON.name if stage is None else f"{HORIZON.name}-{HORIZON.stage(stage).name}"
    rec = runs.queue_record((runs.RUNS_DIR if runs_dir is None else runs_dir) / f"{name}.json")
    return rec["wall_seconds"] / 3600 if rec else (0.0 if stage else float("nan"))


def _interval(prefix: str, estimate, lo, hi, ratio: bool = True) -> dict:
    f = np.exp if ratio else float
    return {prefix: float(f(estimate)), f"{prefix}_lo": float(f(lo)), f"{prefix}_hi": float(f(hi))}


def long_seeds(a: HorizonAnalysis, kind: str | None = None) -> int:
    """The complete seeds of the long part's contrasts: the most any of them reads, in ``kind`` (either
    architecture when ``None``); 0 before any is estimable."""
    long = a.contrasts[a.contrasts["part"] == "long"]
    if kind is not None:
        long = long[long["kind"] == kind]
    return int(long["n_seeds"].max()) if len(long) else 0


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
    out["long_seeds"] = long_seeds(a)
    collapse = a.table[a.table["part"] == "collapse"] if len(a.table) else a.table
    out["collapse_runs_collapsed"] = int(collapse["collapses"].sum()) if len(collapse) else 0
    out["collapse_peak_min"] = float(collapse["peak_level"].min()) if len(collapse) else np.nan
    out["collapse_peak_max"] = float(collapse["peak_level"].max()) if len(collapse) else np.nan
    out["collapse_peak_step_max"] = int(collapse["peak_step"].max()) if len(collapse) else -1
    out["collapse_peak_step_min"] = int(collapse["peak_step"].min()) if len(collapse) else -1
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
    long = long_numbers(a)
    out.update({k: long.get(k, np.nan) for k in LONG_QUOTED})
    # the shared mean's second reading of the unigram head's contrast (secondary family, read by long_numbers),
    # beside the closing page's rival-accounts cell
    out.update({f"head_final_mean_share_decoder{end}": long.get(f"head_final_mean_share_decoder_1280{end}", np.nan)
                for end in ("", "_lo", "_hi")})
    common = common_step_numbers(a)
    out.update({k: common[k] for k in COMMON_QUOTED if k in common})
    # the Holm p values the chapter quotes, with the estimable-only reading beside them (book-posthoc.toml
    # [horizon].family_size, horizon-long.toml [reading].estimable)
    for name in SECONDARY_P_QUOTED:
        r = sec.loc[name]
        out[f"{name}_p_holm"], out[f"{name}_p_estimable"] = float(r["p_holm"]), float(r["p_holm_estimable"])
    return out


#: the collapse part's secondary contrasts whose Holm p the chapter quotes
SECONDARY_P_QUOTED = ("attention_raw_final", "attention_isoscore_peak", "attention_participation_peak")


#: the long part's numbers the chapter quotes in its prose (the rest of :func:`long_numbers` is shown in its
#: tables, where a number not yet estimable shows as a dash)
LONG_QUOTED = ("long_done_decoder", "long_registered_decoder", "long_seeds_decoder", "long_stage_hours",
               "long_budget_hours", "p_holm_max_decoder", "primary_size", "primary_at_one", "secondary_size",
               "secondary_at_one",
               *(f"{c}_decoder_1280{end}" for c in ("head_final", "surgery_standard", "surgery_unigram")
                 for end in ("", "_lo", "_hi")),
               *(f"{c}_decoder_320" for c in ("head_final", "surgery_standard", "surgery_unigram")),
               "variance_null_decoder", "variance_null_decoder_lo", "variance_null_decoder_hi",
               "sd_realised_decoder", "power_realised_decoder",
               *(f"{c}_{r}_decoder_1280{end}" for c in ("head_final", "surgery_standard", "surgery_unigram")
                 for r in ("isoscore", "participation") for end in ("", "_lo", "_hi")))
#: the common steps' numbers the chapter quotes (book-posthoc.toml [horizon].common_steps)
COMMON_QUOTED = ("common_attention_participation_18", "common_attention_participation_29",
                 "common_attention_participation_47", "common_attention_participation_47_lo",
                 "common_attention_participation_47_hi", "common_corruption_participation_18",
                 "common_corruption_participation_29")


def long_numbers(a: HorizonAnalysis, kind: str = "decoder") -> dict:
    """The long part's numbers for one architecture (horizon-long.toml [reading]): ``long_done_<kind>`` and
    ``long_registered_<kind>`` (runs), ``long_seeds_<kind>`` (complete seeds), ``long_stage_hours`` and
    ``long_budget_hours`` (the stage's record and budget); each long primary contrast as a ratio with its
    95 % interval at 320 steps (chapter 13, ``<contrast>_<kind>_320``), at the long runs' step 319 (``_319``)
    and at 1280 (``_1280``), each with ``_lo`` and ``_hi``, and its Holm p at 1280 (``_p_holm``,
    ``_p_estimable``; the largest of them, ``p_holm_max_<kind>``); the families' sizes and how many of
    their contrasts sit at p = 1 (``primary_size``, ``primary_at_one``, ``secondary_size``,
    ``secondary_at_one``); the variance null's ratio (``variance_null_<kind>``, ``_lo``, ``_hi``); each long
    secondary contrast at 1280 (``<contrast>_<kind>_1280`` with ``_lo``, ``_hi``: a ratio, a difference for
    IsoScore*); the realised residual SD of the long primary fits (``sd_realised_<kind>``, the largest) and
    their smallest realised power for x1.25 at Holm's first threshold (``power_realised_<kind>``). NaN where
    not yet estimable."""
    st = a.status
    g = st[(st["kind"] == kind) & (st["part"] == "long")]
    out = {f"long_done_{kind}": int(g["committed"].sum()), f"long_registered_{kind}": int(g["registered"].sum()),
           "long_stage_hours": wall_hours(stage=HORIZON_LONG_STAGE.name),
           "long_budget_hours": float(HORIZON_LONG_STAGE.budget_hours)}
    long = a.contrasts[(a.contrasts["part"] == "long") & (a.contrasts["kind"] == kind)]
    out[f"long_seeds_{kind}"] = long_seeds(a, kind)
    h = a.horizons.set_index(["contrast", "kind"])
    at319 = a.at319.set_index(["contrast", "kind"])
    for _, r in long.iterrows():
        c = r["contrast"]
        hr = h.loc[(c, kind)]
        out.update(_interval(f"{c}_{kind}_320", hr["estimate_320"], hr["lo_320"], hr["hi_320"]))
        r319 = at319.loc[(c, kind)]
        out.update(_interval(f"{c}_{kind}_319", r319["estimate"], r319["lo"], r319["hi"]))
        out.update(_interval(f"{c}_{kind}_1280", r["estimate"], r["lo"], r["hi"]))
        out[f"{c}_{kind}_p_holm"], out[f"{c}_{kind}_p_estimable"] = float(r["p_holm"]), float(r["p_holm_estimable"])
    out[f"p_holm_max_{kind}"] = float(long["p_holm"].max()) if len(long) else np.nan
    for name, t in (("primary", a.contrasts), ("secondary", a.secondary)):
        fs = family_size(t)
        out[f"{name}_size"], out[f"{name}_at_one"] = fs["size"], fs["at_one"]
    sec = a.secondary[(a.secondary["part"] == "long") & (a.secondary["kind"] == kind)]
    for _, r in sec.iterrows():                   # the secondary family: a ratio, a difference for IsoScore*
        logged = OUTCOMES[r["outcome"]][2]
        out.update(_interval(f"{r['contrast']}_{kind}_1280", r["estimate"], r["lo"], r["hi"], ratio=logged))
    vn = a.variance_null.set_index("kind").loc[kind]
    out.update(_interval(f"variance_null_{kind}", vn["estimate"], vn["lo"], vn["hi"]))
    out[f"sd_realised_{kind}"] = float(long["sd"].max()) if len(long) and long["sd"].notna().any() else np.nan
    out[f"power_realised_{kind}"] = (float(long["power"].min()) if len(long) and long["power"].notna().any()
                                     else np.nan)
    return out


def common_step_numbers(a: HorizonAnalysis) -> dict:
    """book-posthoc.toml [horizon].common_steps, added after the data: the collapse part's main effects on the
    participation ratio at each common step, as ratios with their 95 % intervals:
    ``common_<effect>_participation_<step>`` with ``_lo``, ``_hi``; ``common_steps`` (the steps, a tuple)."""
    c = a.common_steps
    out = {"common_steps": tuple(int(x) for x in sorted(c["step"].unique()))} if len(c) else {"common_steps": ()}
    for _, r in c[c["outcome"] == "participation"].iterrows():
        out.update(_interval(f"common_{r['effect']}_participation_{int(r['step'])}", r["estimate"], r["lo"], r["hi"]))
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


#: the long contrasts in words
LONG_CONTRAST_WORDS = {"head_final": "unigram head over standard head, no surgery",
                       "surgery_standard": "proxy surgery over none, standard head",
                       "surgery_unigram": "proxy surgery over none, unigram head"}


def long_table(a: HorizonAnalysis, kind: str = "decoder"):
    """The long part's primary contrasts of one architecture, a row each, read at three points: chapter 13's
    320-step runs, the long runs' step 319 (a learning rate not yet annealed, no word) and their end at
    1280 steps. Ratios of mean cosines with 95 % intervals (``lo``/``hi`` columns per reading), the seeds,
    Holm's p at 1280 in the registered family and among its estimable contrasts only (horizon-long.toml
    [reading]), the 1280-step word (``interim: <word>`` until every registered seed is in) and the
    horizons' word."""
    import pandas as pd

    n = long_numbers(a, kind)
    h = a.horizons.set_index(["contrast", "kind"])
    rows = []
    for c, words in LONG_CONTRAST_WORDS.items():
        r = a.contrasts.set_index(["contrast", "kind"]).loc[(c, kind)]
        word = "not reached" if r["word"] == "undecided" else ("interim: " if r["interim"] else "") + r["word"]
        rows.append({"contrast": words,
                     "ratio at 320 steps": n[f"{c}_{kind}_320"], "lo320": n[f"{c}_{kind}_320_lo"],
                     "hi320": n[f"{c}_{kind}_320_hi"],
                     "at step 319": n[f"{c}_{kind}_319"], "lo319": n[f"{c}_{kind}_319_lo"], "hi319": n[f"{c}_{kind}_319_hi"],
                     "at 1280 steps": n[f"{c}_{kind}_1280"], "lo1280": n[f"{c}_{kind}_1280_lo"],
                     "hi1280": n[f"{c}_{kind}_1280_hi"], "seeds": int(r["n_seeds"]),
                     "Holm p, registered family": r["p_holm"], "Holm p, estimable only": r["p_holm_estimable"],
                     "word at 1280 steps": word, "the horizons": h.loc[(c, kind), "horizon"]})
    return pd.DataFrame(rows)


#: the long contrasts' secondary readings in words (rivals-posthoc.toml's two kinds of anisotropy)
LONG_READING_WORDS = {"mean_share": "the mean's share (shared mean)", "isoscore": "IsoScore* (shape)",
                      "participation": "participation ratio (shape)"}


def long_shape_table(a: HorizonAnalysis, kind: str = "decoder"):
    """The long contrasts of one architecture on the three other readings at 1280 steps (the secondary
    family): the shared mean's second reading (the mean's share) and the shape of the centred cloud
    (IsoScore*, the participation ratio). A ratio for a logged reading, a difference for IsoScore*; the
    95 % interval, the word, and the realised power for x1.25 (a ratio's reading only)."""
    import pandas as pd

    sec = a.secondary[(a.secondary["part"] == "long") & (a.secondary["kind"] == kind)]
    rows = []
    for _, r in sec.iterrows():
        base, _, reading = r["contrast"].rpartition("_")
        if reading not in LONG_READING_WORDS:        # e.g. mean_share: split at the last underscore fails
            base, reading = r["contrast"].rsplit("_", 2)[0], "_".join(r["contrast"].rsplit("_", 2)[1:])
        f = np.exp if OUTCOMES[reading][2] else (lambda v: v)
        rows.append({"contrast": LONG_CONTRAST_WORDS[base], "reading": LONG_READING_WORDS[reading],
                     "estimate": f(r["estimate"]), "lo": f(r["lo"]), "hi": f(r["hi"]), "seeds": int(r["n_seeds"]),
                     "word": r["word"], "power for ×1.25": r["power"]})
    return pd.DataFrame(rows, columns=["contrast", "reading", "estimate", "lo", "hi", "seeds", "word", "power for ×1.25"])


def long_runs_table(a: HorizonAnalysis, kind: str = "decoder"):
    """The long part's committed runs of one architecture, a row each: the cell in words, the seed, the
    blocks' mean cosine at steps 0, 319 and 1279 and the held-out loss at 1279 (nats)."""
    import pandas as pd

    t = a.table[(a.table["part"] == "long") & (a.table["kind"] == kind)] if len(a.table) else a.table
    cols = ["cell", "seed", "mean cosine, step 0", "step 319", "step 1279", "held-out loss at 1279 (nats)"]
    if not len(t):
        return pd.DataFrame(columns=cols)
    return pd.DataFrame({"cell": t["cell"].map(LONG_CELL_NAMES), "seed": t["seed"],
                         "mean cosine, step 0": np.exp(t["raw_step0"]), "step 319": np.exp(t["raw_at319"]),
                         "step 1279": np.exp(t["raw_final"]),
                         "held-out loss at 1279 (nats)": t["heldout_loss_final"]}).sort_values(["seed", "cell"])


def common_steps_table(a: HorizonAnalysis):
    """book-posthoc.toml [horizon].common_steps, added after the data: the collapse part's two main effects on
    the shape of the centred cloud at each probe step where a collapse run peaks; the participation ratio as
    a ratio, IsoScore* as a difference, each with its 95 % interval (unadjusted), its word, and which runs
    peak at that step."""
    import pandas as pd

    c = a.common_steps
    rows = []
    for _, r in c.iterrows():
        f = np.exp if OUTCOMES[r["outcome"]][2] else (lambda v: v)
        peaks = "; ".join(f"{n.split(' ', 1)[0]} {CELL_NAMES[n.split(' ', 1)[1]]}" for n in r["peaks_here"].split(", "))
        rows.append({"change": CONTRAST_WORDS[r["effect"]], "reading": OUTCOME_WORDS[r["outcome"]], "step": int(r["step"]),
                     "estimate": f(r["estimate"]), "lo": f(r["lo"]), "hi": f(r["hi"]), "word": r["word"],
                     "runs that peak at this step": peaks})
    return pd.DataFrame(rows, columns=["change", "reading", "step", "estimate", "lo", "hi", "word",
                                       "runs that peak at this step"])


def variance_null_table(a: HorizonAnalysis):
    """The variance null ([variance_null]) per architecture: the geometric mean over the blocks of the
    calibrated enrichment at the long runs' last step, standard head without surgery, as a ratio with its
    95 % seed interval, the seeds and the interval's word (above 1: tangent bias beyond the activations'
    variance)."""
    import pandas as pd

    v = a.variance_null
    return pd.DataFrame({"architecture": v["kind"], "calibrated enrichment": np.exp(v["estimate"]),
                         "lo": np.exp(v["lo"]), "hi": np.exp(v["hi"]), "seeds": v["n_seeds"], "word": v["word"]})


#: what a long contrast's interval word says of its prediction (each predicts a negative ratio: the surgery
#: lowers the mean cosine, the unigram head lowers it)
_READING = {"negative": "as predicted", "positive": "against", "undecided": "undecided"}


def cells(a: HorizonAnalysis) -> list[dict]:
    """Chapter 14's cells of the closing table (:func:`tanbias.lab.analysis.verdicts.cell`), from the long
    part at 1,280 steps in the decoder (horizon.toml [rule.horizons] closing: the 1,280-step word): the two
    mechanisms by the surgery under either head (:func:`~tanbias.lab.analysis.verdicts.property_word` of
    the two contrasts' readings), the rival accounts by the unigram head's contrast. ``interim`` while a
    registered decoder seed is missing: no verdict rests on it. The collapse part's accounts explain the
    encoder's collapse, not a property of the statement: they stay in the chapter."""
    long = a.contrasts[(a.contrasts["part"] == "long") & (a.contrasts["kind"] == "decoder")]
    words = long.set_index("contrast")["word"] if len(long) else {}
    interim = bool(long["interim"].any()) if len(long) else True
    seeds = long_seeds(a, "decoder")
    registered = len(HORIZON.seeds["decoder"])

    def word(contrasts):
        if interim:
            return "interim"
        return property_word(_READING.get(words[c], "neither") for c in contrasts)

    note = f"interim: {seeds} of the decoder's {registered} seeds" if interim else ""
    return [cell("mechanisms", "horizon", word(("surgery_standard", "surgery_unigram")), "14_past_the_transient",
                 "sec-ch14-long", qualifier=note, rule="registered", anisotropy="shared mean"),
            cell("rivals", "horizon", word(("head_final",)), "14_past_the_transient", "sec-ch14-long",
                 qualifier=note, rule="registered", anisotropy="shared mean")]
