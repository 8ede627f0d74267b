"""The horizon experiment measured, and its registered rules applied (``data/preregistration/horizon.toml``).

The experiment (:data:`tanbias.lab.experiments.HORIZON`) has two parts: the *long* part reads
chapter 13's primary contrasts at 1280 steps, and the *collapse* part is the encoder's 2 x 2 of
input corruption (``mask``, ``random``) and attention (``native``, ``causal``) at 320 steps. This
module reads the committed runs as the registration says:

* :func:`run_table`: one row per run, each outcome ([outcomes]) at each phase, as a layer mean over
  the blocks: on content positions for the long part, on *intact* positions (the text's own token
  shown) for the collapse part;
* :func:`contrast_rows` and :func:`family_rows`: the primary family (8 contrasts) and the secondary
  one (29), Holm within each (a contrast not yet estimable stays in its family at p = 1), each by
  the seed-blocked model of its part (:class:`~tanbias.lab.analysis.registered.CellContrasts`),
  labelled *interim* until every registered seed of its part is complete;
* :func:`horizon_rows`: chapter 13's words at 320 steps beside the words at 1280 ([rule.horizons]);
* :func:`matched_progress`: the registered contrasts re-read at matched held-out loss, beside their
  words ([rule.matched_progress]; :func:`trajectory_table` gives the runs' readings per probe step);
* :func:`variance_null_rows`: chapter 7's enrichment against the activations' variance, per
  architecture ([variance_null]);
* :func:`collapse_words`: the registered descriptive words of the collapse part (``collapses``,
  ``removes``/``kept``), run by run and cell by cell;
* :func:`account_rows` and :func:`account_words`: each account's registered predictions read one by
  one (met, failed, undecided), and the account's word over all of them ([accounts]);
* :func:`unigram_step0` and :func:`unigram_check_rows`: the registered check of the unigram head
  ([check]): at step 0 its held-out loss is the cross-entropy of the scored tokens under the
  add-one-smoothed unigram of the run's own training targets, within :data:`UNIGRAM_TOLERANCE`;
* :func:`status`: how many registered runs of each part are committed;
* :func:`analyse_horizon`: all of it, once (:class:`HorizonAnalysis`).

One reading of the registration is ours, and said here: "peak" is the largest layer-mean raw mean
cosine over the probe steps in the first 30 % of the run's steps; the other outcomes "at peak" are
read at that step (the largest IsoScore* would be the *least* anisotropic moment).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from tanbias._checks import check_choice
from tanbias.lab.analysis import registered, rivals
from tanbias.lab.config import KINDS
from tanbias.lab.experiments import HORIZON, HORIZON_COLLAPSE, HORIZON_LONG, HORIZON_SEEDS
from tanbias.stats import interval_word

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["PARTS", "OUTCOMES", "PHASES", "EARLY_FRACTION", "COLLAPSE_LEVEL", "PRIMARY", "SECONDARY", "part_of",
           "run_readings", "run_table", "trajectory_table", "step_table", "family_size", "COMMON_STEP_OUTCOMES",
           "common_step_rows", "at319_rows", "complete_seeds", "PROGRESS", "matched_progress", "variance_null_rows", "family_rows", "contrast_rows", "horizon_word",
           "horizon_rows", "collapse_words", "SMALL", "ACCOUNTS", "prediction_reading", "account_rows", "account_words",
           "UNIGRAM_TOLERANCE", "STAND_INS", "unigram_step0", "unigram_check_rows", "status", "HorizonAnalysis",
           "analyse_horizon"]

#: the two parts' cells (the encoder has both; the decoder the long part only)
PARTS = {"long": HORIZON_LONG, "collapse": HORIZON_COLLAPSE}
#: each part's positions of anisotropy.csv ([design] measures)
_POSITIONS = {"long": "content", "collapse": "intact"}
#: the outcomes ([outcomes]): the run's table and column each is read from, and whether in logs
OUTCOMES = {"raw": ("anisotropy", "mean_cosine", True), "isoscore": ("anisotropy", "isoscore_star", False),
            "participation": ("anisotropy", "participation_ratio", True), "mean_share": ("rivals", "mean_share", True)}
#: the phases ([outcomes] phases); ``at319`` only where the run has that probe step (the long part)
PHASES = ("step0", "peak", "final", "at319")
#: the peak is read over the probe steps in this first share of the run's steps
EARLY_FRACTION = 0.3
#: a run "collapses" when its layer-mean raw mean cosine exceeds this in the early window ([words])
COLLAPSE_LEVEL = 0.9

#: the collapse part's two main effects ([rule.primary]), as weights on its cells
_MAIN = {"corruption": {"random-native": 0.5, "random-causal": 0.5, "mask-native": -0.5, "mask-causal": -0.5},
         "attention": {"mask-causal": 0.5, "random-causal": 0.5, "mask-native": -0.5, "random-native": -0.5}}
#: the primary family ([rule.primary]): name -> (part, outcome, phase, {cell: weight}, architectures)
PRIMARY = {
    "head_final": ("long", "raw", "final", {"unigram-control": 1, "standard-control": -1}, KINDS),
    "surgery_standard": ("long", "raw", "final", {"standard-proxy": 1, "standard-control": -1}, KINDS),
    "surgery_unigram": ("long", "raw", "final", {"unigram-proxy": 1, "unigram-control": -1}, KINDS),
    "corruption_peak": ("collapse", "raw", "peak", _MAIN["corruption"], ("encoder",)),
    "attention_peak": ("collapse", "raw", "peak", _MAIN["attention"], ("encoder",)),
}


def part_of(cell: str) -> str:
    """``"collapse"`` or ``"long"``: the part a cell belongs to.

    >>> part_of("random-causal"), part_of("unigram-proxy")
    ('collapse', 'long')
    """
    check_choice("cell", cell, (*HORIZON_LONG, *HORIZON_COLLAPSE))
    return "collapse" if cell in HORIZON_COLLAPSE else "long"


def _layer_mean(table, column: str) -> pd.Series:
    """Per probe step, the mean of ``column`` over the blocks (layers 1..L)."""
    return table[table["layer"] >= 1].groupby("step")[column].mean()


def run_readings(run, part: str) -> dict:
    """One run's registered outcomes at each phase, layer means over the blocks.

    Parameters
    ----------
    run : tanbias.lab.runs.RunData
        A committed run (its ``anisotropy``, ``rivals``, ``probe_evals``, ``metrics`` and ``config``).
    part : str
        ``"long"`` (content positions) or ``"collapse"`` (intact positions).

    Returns
    -------
    dict
        ``<outcome>_<phase>`` for every outcome of :data:`OUTCOMES` (ln where the registration
        takes the log) and phase of :data:`PHASES` (NaN where the run has no such step), with
        ``peak_step``, ``peak_level`` (the layer-mean raw mean cosine at the peak, not logged),
        ``collapses``, ``final_step``, ``heldout_loss_<phase>`` and ``diverged``.
    """
    check_choice("part", part, tuple(PARTS))
    tables = {"anisotropy": run.anisotropy[run.anisotropy["positions"] == _POSITIONS[part]], "rivals": run.rivals}
    series = {name: _layer_mean(tables[source], column) for name, (source, column, _) in OUTCOMES.items()}
    raw = series["raw"]
    steps = run.config.steps
    early = raw[raw.index < EARLY_FRACTION * steps]
    at = {"step0": 0, "peak": int(early.idxmax()), "final": int(raw.index.max()),
          "at319": 319 if 319 in raw.index and int(raw.index.max()) > 319 else None}
    pe = run.probe_evals
    loss = pe.set_index("step")["loss"] if pe is not None else None
    out = {"peak_step": at["peak"], "final_step": at["final"], "peak_level": float(early.max()),
           "collapses": bool(early.max() > COLLAPSE_LEVEL)}
    for phase, step in at.items():
        for name, (_, _, logged) in OUTCOMES.items():
            s = series[name]
            v = float(s.loc[step]) if step is not None and step in s.index else np.nan
            out[f"{name}_{phase}"] = float(np.log(v)) if logged else v
        out[f"heldout_loss_{phase}"] = (float(loss.loc[step]) if loss is not None and step is not None
                                        and step in loss.index else np.nan)
    out["diverged"] = bool(not np.isfinite(run.metrics["loss"].to_numpy(float)).all())
    return out


def run_table(loaded: dict) -> pd.DataFrame:
    """One row per committed horizon run: ``run, kind, part, cell, seed`` and :func:`run_readings`.
    Empty (with those five columns) when no run is committed."""
    import pandas as pd

    rows = []
    for name, run in loaded.items():
        kind, cell, seed = HORIZON.parse(name)
        part = part_of(cell)
        rows.append({"run": name, "kind": kind, "part": part, "cell": cell, "seed": seed,
                     **run_readings(run, part)})
    return pd.DataFrame(rows) if rows else pd.DataFrame(columns=["run", "kind", "part", "cell", "seed"])


def trajectory_table(loaded: dict) -> pd.DataFrame:
    """Every run's layer-mean raw reading (ln mean cosine, on its part's positions) and held-out loss at
    every probe step: ``run, kind, part, cell, seed, step, raw, heldout_loss``."""
    import pandas as pd

    rows = []
    for name, run in loaded.items():
        kind, cell, seed = HORIZON.parse(name)
        part = part_of(cell)
        an = run.anisotropy[run.anisotropy["positions"] == _POSITIONS[part]]
        raw = np.log(_layer_mean(an, "mean_cosine"))
        pe = run.probe_evals
        loss = pe.set_index("step")["loss"] if pe is not None else pd.Series(dtype=float)
        rows.append(pd.DataFrame({"run": name, "kind": kind, "part": part, "cell": cell, "seed": seed,
                                  "step": raw.index.astype(int), "raw": raw.to_numpy(),
                                  "heldout_loss": raw.index.map(loss).astype(float)}))
    cols = ["run", "kind", "part", "cell", "seed", "step", "raw", "heldout_loss"]
    return pd.concat(rows, ignore_index=True)[cols] if rows else pd.DataFrame(columns=cols)


def step_table(loaded: dict) -> pd.DataFrame:
    """Every run's readings at every probe step, per block and as the blocks' mean, on its part's positions:
    ``run, kind, part, cell, seed, step, layer`` (an int, or ``"mean"``), and each outcome of
    :data:`OUTCOMES` (linear scale, not logged). The figures' layer sliders and the readings at a common
    step (:func:`common_step_rows`) read it."""
    import pandas as pd

    frames = []
    for name, run in loaded.items():
        kind, cell, seed = HORIZON.parse(name)
        part = part_of(cell)
        tables = {"anisotropy": run.anisotropy[run.anisotropy["positions"] == _POSITIONS[part]], "rivals": run.rivals}
        cols = {}
        for outcome, (source, column, _) in OUTCOMES.items():
            t = tables[source]
            t = t[t["layer"] >= 1]
            per = t.groupby(["step", "layer"])[column].mean()
            mean = t.groupby("step")[column].mean()
            mean.index = pd.MultiIndex.from_arrays([mean.index, ["mean"] * len(mean)], names=["step", "layer"])
            cols[outcome] = pd.concat([per, mean])
        d = pd.DataFrame(cols).reset_index()
        frames.append(d.assign(run=name, kind=kind, part=part, cell=cell, seed=seed))
    columns = ["run", "kind", "part", "cell", "seed", "step", "layer", *OUTCOMES]
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)


def complete_seeds(table, kind: str, part: str) -> list[int]:
    """The seeds of one architecture and part whose every cell is committed and none diverged
    ([rule] complete, diverged): :func:`tanbias.lab.analysis.registered.complete_seeds` over the
    part's cells."""
    check_choice("part", part, tuple(PARTS))
    if not len(table):
        return []
    return registered.complete_seeds(HORIZON, table, kind, skip=lambda cell: part_of(cell) != part)


_LONG = {name: PRIMARY[name][3] for name in ("head_final", "surgery_standard", "surgery_unigram")}
#: the secondary family ([rule.secondary]), Holm within it: the long contrasts on the other outcomes at
#: the last step, the collapse part's main effects at the other phases and outcomes, and the interaction
SECONDARY = {
    **{f"{name}_{outcome}": ("long", outcome, "final", w, KINDS)
       for name, w in _LONG.items() for outcome in ("mean_share", "isoscore", "participation")},
    **{f"{effect}_{outcome}_{phase}": ("collapse", outcome, phase, w, ("encoder",))
       for effect, w in _MAIN.items()
       for outcome, phase in (("raw", "step0"), ("raw", "final"), ("isoscore", "peak"), ("participation", "peak"),
                              ("heldout_loss", "final"))},
    "interaction_peak": ("collapse", "raw", "peak", {"random-native": 1, "mask-native": -1, "random-causal": -1,
                                                     "mask-causal": 1}, ("encoder",)),
}
#: [words] small and low_power_null, and the band a "no change" prediction is met within ([accounts]): a
#: ratio of 1.25, in ln units (a null's realised power is read for this change, logged outcomes only)
SMALL = registered.TARGET_LOG
_NAN_FIT = {"estimate": np.nan, "se": np.nan, "df": np.nan, "lo": np.nan, "hi": np.nan, "p": np.nan, "n_seeds": 0}


def family_rows(table, contrasts: dict) -> pd.DataFrame:
    """One registered family: a row per contrast and architecture, ``contrast, kind, part, outcome,
    phase``, the fit (``estimate, se, df, lo, hi, p, n_seeds``; ln units where the outcome is logged),
    ``seeds_registered``, ``interim`` (fewer complete seeds than registered), ``p_holm`` (Holm over
    the family; a NaN p kept at 1), ``p_holm_estimable`` (Holm over the family's estimable contrasts only,
    horizon-long.toml [reading].estimable; NaN where not estimable), ``sd`` (the realised residual SD,
    ``se / sqrt(2 / n_seeds)``: the SE of a two-cell contrast in a seed-blocked model), ``significant``,
    ``word`` (the 95 % interval's), ``power`` (the
    realised power for a change of x1.25 at the family's first Holm threshold, from the contrast's own
    SE and df; NaN for an outcome not in logs) and ``low_power_null`` ([words]: an ``indistinguishable``
    interval whose power is below 0.8).

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`run_table`.
    contrasts : dict
        ``{name: (part, outcome, phase, {cell: weight}, architectures)}``: :data:`PRIMARY` or
        :data:`SECONDARY`.
    """
    import pandas as pd

    fits = {part: registered.CellContrasts(table[table["part"] == part] if len(table) else table,
                                           cells=lambda kind, p=part: PARTS[p],
                                           seeds=lambda kind, p=part: complete_seeds(table, kind, p))
            for part in PARTS}
    rows = []
    for name, (part, outcome, phase, weights, kinds) in contrasts.items():
        column = f"{outcome}_{phase}"
        for kind in kinds:
            fit = fits[part](kind, column, weights) if len(table) and column in table else dict(_NAN_FIT)
            n_registered = len(HORIZON_SEEDS[kind][part])
            rows.append({"contrast": name, "kind": kind, "part": part, "outcome": outcome, "phase": phase, **fit,
                         "seeds_registered": n_registered, "interim": fit["n_seeds"] < n_registered})
    adj = registered.holm([r["p"] for r in rows], family=len(rows))
    first = registered.ALPHA / len(rows)
    # horizon-long.toml [reading].estimable: Holm over the estimable contrasts only, beside the registered family's
    estimable = [i for i, r in enumerate(rows) if np.isfinite(r["p"])]
    adj_est = dict(zip(estimable, registered.holm([rows[i]["p"] for i in estimable], family=len(estimable)))
                   if estimable else [])
    for i, (r, a) in enumerate(zip(rows, adj)):
        r["p_holm_estimable"] = float(adj_est.get(i, np.nan))
        r["sd"] = (float(r["se"] / np.sqrt(2.0 / r["n_seeds"])) if np.isfinite(r["se"]) and r["n_seeds"] else np.nan)
    for r, a in zip(rows, adj):
        logged = r["outcome"] in OUTCOMES and OUTCOMES[r["outcome"]][2]
        power = (registered.t_test_power(SMALL, r["se"], r["df"], first)
                 if logged and np.isfinite(r["se"]) and np.isfinite(r["df"]) and r["se"] > 0 else np.nan)
        word = interval_word(r["lo"], r["hi"])
        r.update(p_holm=float(a), significant=bool(a < registered.ALPHA), word=word, power=power,
                 low_power_null=bool(word == "indistinguishable" and np.isfinite(power) and power < 0.8))
    return pd.DataFrame(rows)


def contrast_rows(table) -> pd.DataFrame:
    """The primary family ([rule.primary]): :func:`family_rows` of :data:`PRIMARY` (8 rows, Holm over them)."""
    return family_rows(table, PRIMARY)


def family_size(rows) -> dict:
    """A family's size and how many of its contrasts sit at p = 1 because they could not be estimated
    (book-posthoc.toml [horizon].family_size): ``{"size": n, "at_one": k}``.

    >>> import pandas as pd
    >>> family_size(pd.DataFrame({"p": [0.01, float("nan"), 0.2]}))
    {'size': 3, 'at_one': 1}
    """
    return {"size": int(len(rows)), "at_one": int((~np.isfinite(rows["p"].to_numpy(float))).sum())}


#: the collapse part's contrasts read at a common step (book-posthoc.toml [horizon].common_steps): the two
#: main effects on the shape's readings
COMMON_STEP_OUTCOMES = ("isoscore", "participation")


def common_step_rows(steps, table) -> pd.DataFrame:
    """book-posthoc.toml [horizon].common_steps, added after the data: every collapse contrast (the two main
    effects) on IsoScore* and the participation ratio at each probe step where any collapse run peaks,
    by the registered model (OLS on C(seed) + C(cell), its complete seeds), with its 95 % interval,
    unadjusted. Changes no registered word.

    Parameters
    ----------
    steps : pandas.DataFrame
        :func:`step_table`.
    table : pandas.DataFrame
        :func:`run_table` (its ``peak_step`` gives the common steps, its seeds the complete ones).

    Returns
    -------
    pandas.DataFrame
        ``effect, outcome, step, estimate, lo, hi, p, word`` (a ratio's outcome in ln units: the
        participation ratio; IsoScore* a difference), and ``peaks_here`` (the cells whose runs peak at that
        step, in words: how many runs of each).
    """
    import pandas as pd

    registered.book_posthoc()                        # the rule's file must be the pinned one
    cols = ["effect", "outcome", "step", "estimate", "lo", "hi", "p", "word", "peaks_here"]
    col = table[table["part"] == "collapse"] if len(table) else table
    if not len(col):
        return pd.DataFrame(columns=cols)
    common = sorted(int(s) for s in col["peak_step"].unique())
    st = steps[(steps["part"] == "collapse") & (steps["layer"].astype(str) == "mean")]
    rows = []
    for step in common:
        at = st[st["step"] == step].copy()
        for outcome in COMMON_STEP_OUTCOMES:
            if OUTCOMES[outcome][2]:
                at[outcome] = np.log(at[outcome].astype(float))
        fits = registered.CellContrasts(at, cells=lambda kind: PARTS["collapse"],
                                        seeds=lambda kind: complete_seeds(table, kind, "collapse"))
        here = col[col["peak_step"] == step].groupby("cell").size()
        peaks = ", ".join(f"{n} {c}" for c, n in here.items())
        for effect, weights in _MAIN.items():
            for outcome in COMMON_STEP_OUTCOMES:
                r = fits("encoder", outcome, weights)
                rows.append({"effect": effect, "outcome": outcome, "step": step, "estimate": r["estimate"],
                             "lo": r["lo"], "hi": r["hi"], "p": r["p"], "word": interval_word(r["lo"], r["hi"]),
                             "peaks_here": peaks})
    return pd.DataFrame(rows, columns=cols)


#: [rule.horizons]: a pair of interval words at the two horizons, read as one word
def horizon_word(word_320: str, word_1280: str) -> str:
    """``holds`` (the same word), ``reverses`` (positive at one horizon, negative at the other),
    ``changes`` otherwise; ``–`` where either word is missing or undecided.

    >>> horizon_word("negative", "negative"), horizon_word("negative", "indistinguishable")
    ('holds', 'changes')
    >>> horizon_word("positive", "negative"), horizon_word("negative", "undecided")
    ('reverses', '–')
    """
    words = {word_320, word_1280}
    if not words <= {"positive", "negative", "indistinguishable"}:
        return "–"
    if word_320 == word_1280:
        return "holds"
    return "reverses" if words == {"positive", "negative"} else "changes"


def horizon_rows(contrasts, chapter13) -> pd.DataFrame:
    """[rule.horizons]: chapter 13's word for each long contrast at 320 steps (``chapter13``:
    :func:`tanbias.lab.analysis.rivals.contrast_rows`, either family) beside this experiment's
    primary word at 1280, and :func:`horizon_word` of the pair. Columns ``contrast, kind,
    estimate_320, lo_320, hi_320, word_320, significant_320`` (after Holm in chapter 13's family),
    ``estimate_1280, lo_1280, hi_1280, word_1280, significant_1280, n_seeds_1280, interim, horizon`` (ln
    units, 95 % intervals)."""
    import pandas as pd

    c13 = chapter13[chapter13["outcome"] == "raw"].drop_duplicates(["contrast", "kind"]).set_index(["contrast", "kind"])
    rows = []
    for _, r in contrasts[contrasts["part"] == "long"].iterrows():
        key = (r["contrast"], r["kind"])
        w320 = c13.loc[key, "word"] if key in c13.index else "undecided"
        at320 = {c: float(c13.loc[key, c]) if key in c13.index and c in c13 else np.nan for c in ("estimate", "lo", "hi")}
        sig320 = bool(c13.loc[key, "significant"]) if key in c13.index and "significant" in c13 else False
        rows.append({"contrast": r["contrast"], "kind": r["kind"], **{f"{c}_320": v for c, v in at320.items()},
                     "word_320": w320, "significant_320": sig320, "estimate_1280": r["estimate"], "lo_1280": r["lo"],
                     "hi_1280": r["hi"], "word_1280": r["word"], "significant_1280": bool(r["significant"]),
                     "n_seeds_1280": int(r["n_seeds"]), "interim": r["interim"],
                     "horizon": horizon_word(w320, r["word"])})
    return pd.DataFrame(rows)


def at319_rows(table) -> pd.DataFrame:
    """[rule.horizons] at319: the long contrasts (:data:`PRIMARY`'s long part) on the raw mean cosine at the
    long runs' probe step 319, by the registered model over each architecture's complete seeds, with the
    95 % interval; shown beside the two horizons, without a word. Columns ``contrast, kind, estimate, lo,
    hi, n_seeds`` (ln units)."""
    import pandas as pd

    rows = []
    fits = registered.CellContrasts(table[table["part"] == "long"] if len(table) else table,
                                    cells=lambda kind: PARTS["long"],
                                    seeds=lambda kind: complete_seeds(table, kind, "long"))
    for name, (part, _, _, weights, kinds) in PRIMARY.items():
        if part != "long":
            continue
        for kind in kinds:
            fit = fits(kind, "raw_at319", weights) if len(table) and "raw_at319" in table else dict(_NAN_FIT)
            rows.append({"contrast": name, "kind": kind, **{k: fit[k] for k in ("estimate", "lo", "hi", "n_seeds")}})
    return pd.DataFrame(rows, columns=["contrast", "kind", "estimate", "lo", "hi", "n_seeds"])


#: [rule.matched_progress]: name -> (the registered contrast it re-reads, part, {cell: weight}, architectures)
PROGRESS = {"corruption_final": ("corruption_raw_final", "collapse", _MAIN["corruption"], ("encoder",)),
            "attention_final": ("attention_raw_final", "collapse", _MAIN["attention"], ("encoder",)),
            "head_final": ("head_final", "long", PRIMARY["head_final"][3], KINDS)}


def matched_progress(traj, table, registered_rows) -> pd.DataFrame:
    """[rule.matched_progress]: per seed, ``L*`` = the largest of the compared runs' held-out losses at
    their last probe step, each run's raw reading at ``L*``
    (:func:`~tanbias.lab.analysis.registered.value_at_progress`), the contrast of those readings, and
    its 95 % seed t interval; shown beside the registered word (``registered_rows``: the primary and
    secondary families' rows), never changing it. ``word`` is
    :func:`~tanbias.lab.analysis.registered.progress_word` against the registered contrast where that is
    significant, ``n/a`` otherwise.

    Returns
    -------
    pandas.DataFrame
        ``contrast, kind, estimate, lo, hi, n_seeds, registered, word``.
    """
    import pandas as pd

    reg = registered_rows.drop_duplicates(["contrast", "kind"]).set_index(["contrast", "kind"])
    out = []
    for name, (source, part, weights, kinds) in PROGRESS.items():
        for kind in kinds:
            diffs = []
            for seed in complete_seeds(table, kind, part):
                t = traj[(traj["kind"] == kind) & (traj["seed"] == seed)]
                runs_ = {c: t[t["cell"] == c].sort_values("step") for c in weights}
                if any(r.empty for r in runs_.values()):
                    continue
                final = {c: float(r["heldout_loss"].iloc[-1]) for c, r in runs_.items()}
                level = max(final.values())
                diffs.append(sum(w * registered.value_at_progress(runs_[c]["step"], runs_[c]["heldout_loss"],
                                                                  runs_[c]["raw"], level, last=final[c] >= level)
                                 for c, w in weights.items()))
            est, lo, hi, n = registered.t_interval(diffs, 1 - registered.ALPHA)
            r = reg.loc[(source, kind)] if (source, kind) in reg.index else None
            word = "n/a"
            if r is not None and bool(r["significant"]):
                matched = registered.progress_word(float(r["estimate"]), lo, hi)
                word = "n/a" if matched == "undecided" else matched
            out.append({"contrast": name, "kind": kind, "estimate": est, "lo": lo, "hi": hi, "n_seeds": n,
                        "registered": float(r["estimate"]) if r is not None else np.nan, "word": word})
    return pd.DataFrame(out)


def variance_null_rows(loaded: dict) -> pd.DataFrame:
    """[variance_null]: per architecture, the seed t interval (95 %) of ln of the geometric mean over the
    blocks of ``calibrated`` (rivals.csv) at the last probe step of each standard-control long run,
    against 0. Columns ``kind, estimate, lo, hi, n_seeds, word`` (the interval's word: ``positive`` is
    the tangent bias beyond the activations' variance, ``indistinguishable`` what variance-following
    gradients give)."""
    import pandas as pd

    values = {kind: [] for kind in KINDS}
    for name, run in loaded.items():
        kind, cell, _ = HORIZON.parse(name)
        if cell != "standard-control":
            continue
        rv = run.rivals[run.rivals["layer"] >= 1]
        last = rv[rv["step"] == rv["step"].max()]
        values[kind].append(float(np.log(last["calibrated"]).mean()))
    rows = []
    for kind, v in values.items():
        est, lo, hi, n = registered.t_interval(v, 1 - registered.ALPHA)
        rows.append({"kind": kind, "estimate": est, "lo": lo, "hi": hi, "n_seeds": n, "word": interval_word(lo, hi)})
    return pd.DataFrame(rows)


def collapse_words(table) -> pd.DataFrame:
    """[words] collapses and removes, for the collapse part: one row per cell, ``runs``, ``collapsed``
    (how many runs' layer-mean raw mean cosine exceeds :data:`COLLAPSE_LEVEL` in the early window),
    ``peak_min``, ``peak_max`` and ``word``: ``kept`` (every run collapses), ``removed`` (none
    does), ``mixed`` otherwise."""
    import pandas as pd

    rows = []
    t = table[table["part"] == "collapse"] if len(table) else table
    for cell in HORIZON_COLLAPSE:
        g = t[t["cell"] == cell] if len(t) else t
        n, c = len(g), int(g["collapses"].sum()) if len(g) else 0
        word = "–" if n == 0 else "kept" if c == n else "removed" if c == 0 else "mixed"
        rows.append({"cell": cell, "runs": n, "collapsed": c,
                     "peak_min": float(g["peak_level"].min()) if n else np.nan,
                     "peak_max": float(g["peak_level"].max()) if n else np.nan, "word": word})
    return pd.DataFrame(rows)


#: [accounts]: each account's registered predictions, as (contrast, family, architectures, predicted),
#: the family one of ``primary``, ``secondary`` or ``variance`` (:func:`variance_null_rows`), the
#: prediction ``negative``, ``positive`` or ``no change``
ACCOUNTS = {
    "tangent_bias": [("surgery_standard", "primary", KINDS, "negative"),
                     ("surgery_unigram", "primary", KINDS, "negative"),
                     ("variance_null", "variance", KINDS, "positive")],
    "unigram_first": [("head_final", "primary", KINDS, "negative"),
                      ("head_final_mean_share", "secondary", KINDS, "negative")],
    "mask_token": [("corruption_peak", "primary", ("encoder",), "negative"),
                   ("corruption_raw_step0", "secondary", ("encoder",), "negative"),
                   ("corruption_raw_final", "secondary", ("encoder",), "negative")],
    "self_attention": [("corruption_peak", "primary", ("encoder",), "no change"),
                       ("attention_peak", "primary", ("encoder",), "no change")],
    "mask_mixing": [("corruption_peak", "primary", ("encoder",), "negative"),
                    ("attention_peak", "primary", ("encoder",), "negative"),
                    ("interaction_peak", "secondary", ("encoder",), "negative")],
}


def prediction_reading(predicted: str, estimate, lo, hi, significant: bool) -> str:
    """One registered prediction read against its contrast ([accounts]): ``met``, ``failed`` or
    ``undecided``.

    A sign (``negative``, ``positive``) is met when the contrast is significant on the predicted side
    and failed when it is significant on the other; ``no change`` is met when the 95 % interval lies
    within a ratio of 1.25 either way (:data:`SMALL`) and failed when the contrast is significant with
    its estimate outside that band. ``significant`` is the Holm-adjusted test for a primary contrast and
    the 95 % interval's exclusion of 0 for the others (the registration's words).

    >>> prediction_reading("negative", -0.3, -0.5, -0.1, True), prediction_reading("negative", 0.3, 0.1, 0.5, True)
    ('met', 'failed')
    >>> prediction_reading("no change", -0.003, -0.008, 0.001, False), prediction_reading("negative", -0.1, -0.4, 0.2, False)
    ('met', 'undecided')
    """
    check_choice("predicted", predicted, ("negative", "positive", "no change"))
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "undecided"
    if predicted == "no change":
        if -SMALL <= lo and hi <= SMALL:
            return "met"
        return "failed" if significant and abs(estimate) > SMALL else "undecided"
    if not significant:
        return "undecided"
    return "met" if (estimate < 0) == (predicted == "negative") else "failed"


def account_rows(contrasts, secondary, variance_null) -> pd.DataFrame:
    """Every registered prediction of every account ([accounts]), read by :func:`prediction_reading`:
    columns ``account, contrast, kind, family, predicted, estimate, lo, hi, significant, reading``
    (ln units). ``significant`` is Holm's for the primary family and the interval's for the others."""
    import pandas as pd

    tables = {"primary": contrasts, "secondary": secondary,
              "variance": variance_null.assign(contrast="variance_null")}
    rows = []
    for account, predictions in ACCOUNTS.items():
        for name, family, kinds, predicted in predictions:
            t = tables[family]
            for kind in kinds:
                hit = t[(t["contrast"] == name) & (t["kind"] == kind)] if len(t) else t
                r = hit.iloc[0] if len(hit) else None
                est, lo, hi = ((float(r[c]) for c in ("estimate", "lo", "hi")) if r is not None
                               else (np.nan, np.nan, np.nan))
                sig = (bool(r["significant"]) if family == "primary" else interval_word(lo, hi) in ("positive", "negative")
                       ) if r is not None else False
                rows.append({"account": account, "contrast": name, "kind": kind, "family": family,
                             "predicted": predicted, "estimate": est, "lo": lo, "hi": hi, "significant": sig,
                             "reading": prediction_reading(predicted, est, lo, hi, sig)})
    return pd.DataFrame(rows)


def account_words(rows) -> pd.DataFrame:
    """Each account's word over all its predictions ([accounts] word): ``supported`` (every one met),
    ``against`` (a predicted sign failed, or a prediction failed and none was met), ``mixed`` (some
    met, some failed), ``not distinguished`` otherwise. The registration lists "against" before "mixed"
    and leaves their order open where a sign fails beside a met prediction; that precedence is our
    reading, stated here. Columns ``account, predictions, met, failed, undecided, word``.

    >>> import pandas as pd
    >>> r = pd.DataFrame({"account": ["a", "a", "b"], "predicted": ["negative", "no change", "negative"],
    ...                   "reading": ["met", "undecided", "met"]})
    >>> account_words(r)["word"].tolist()
    ['not distinguished', 'supported']
    """
    import pandas as pd

    out = []
    for account, g in rows.groupby("account", sort=False):
        reading = g["reading"]
        met, failed = int((reading == "met").sum()), int((reading == "failed").sum())
        sign_failed = bool(((reading == "failed") & (g["predicted"] != "no change")).any())
        word = ("supported" if met == len(g) else "against" if sign_failed or (failed and not met)
                else "mixed" if failed else "not distinguished")
        out.append({"account": account, "predictions": len(g), "met": met, "failed": failed,
                    "undecided": len(g) - met - failed, "word": word})
    return pd.DataFrame(out)


#: [check] unigram_step0: the tolerance, nats
UNIGRAM_TOLERANCE = 0.05
#: the runs the check also reads while no unigram-head long run is committed: chapter 13's seed-0
#: unigram-head controls (the same head, initialised from 320 steps' targets rather than 1280)
STAND_INS = tuple(f"rivals-{kind}-unigram-control-s0" for kind in KINDS)


def unigram_step0(config) -> float:
    """The cross-entropy (nats) of a run's probe-eval text (its scored tokens,
    :meth:`tanbias.lab.data.Stream.probe_eval`) under the add-one-smoothed unigram of the run's own
    training targets over all its steps (:meth:`~tanbias.lab.data.Stream.target_counts`): what a
    unigram-head run's held-out loss is at step 0, before its random weights have moved, up to their
    small logits. Reads the training stream once (about 9 s per 320 steps on this machine's CPU).

    Parameters
    ----------
    config : tanbias.lab.config.RunConfig
        A run with ``probe_eval_batches > 0``.
    """
    from tanbias.lab.data import Stream, batch_targets
    from tanbias.lab.models import log_unigram

    if config.probe_eval_batches <= 0:
        raise ValueError(f"probe_eval_batches = {config.probe_eval_batches}: the run scores no held-out text "
                         "(valid: 1 or more)")
    stream = Stream.from_config(config)
    log_p = log_unigram(stream.target_counts(config.steps))
    ids = np.concatenate([batch_targets(config.kind, b).numpy() for b in stream.probe_eval(config.probe_eval_batches)])
    return float(-log_p[ids].mean())


def unigram_check_rows(loaded: dict, stand_ins: dict | None = None) -> pd.DataFrame:
    """[check] unigram_step0 on every unigram-head long run (``loaded``) and on ``stand_ins`` (``{run:
    RunData}``, default :data:`STAND_INS` where committed), one row each: ``run, kind, source``
    (``horizon`` or ``chapter 13``), ``logged`` (the held-out loss at step 0), ``unigram``
    (:func:`unigram_step0`), ``gap`` (logged - unigram) and ``passes`` (``|gap| <=``
    :data:`UNIGRAM_TOLERANCE`)."""
    import pandas as pd

    if stand_ins is None:
        stand_ins = registered.load(HORIZON, names=STAND_INS)
    runs_ = [(n, r, "horizon") for n, r in loaded.items() if HORIZON.parse(n)[1].startswith("unigram-")]
    runs_ += [(n, r, "chapter 13") for n, r in stand_ins.items()]
    rows = []
    for name, run, source in runs_:
        pe = run.probe_evals
        logged = float(pe.set_index("step")["loss"].get(0, np.nan)) if pe is not None else np.nan
        unigram = unigram_step0(run.config)
        rows.append({"run": name, "kind": run.config.kind, "source": source, "logged": logged, "unigram": unigram,
                     "gap": logged - unigram, "passes": bool(abs(logged - unigram) <= UNIGRAM_TOLERANCE)})
    return pd.DataFrame(rows, columns=["run", "kind", "source", "logged", "unigram", "gap", "passes"])


def status(runs_dir=None) -> pd.DataFrame:
    """Per architecture and part: ``registered`` runs, ``committed`` runs and their training ``hours``."""
    import pandas as pd

    s = registered.run_status(HORIZON, runs_dir)
    s["part"] = s["cell"].map(part_of)
    rows = [{"kind": kind, "part": part, "registered": len(g), "committed": int(g["committed"].sum()),
             "hours": float(g["minutes"].sum(skipna=True) / 60)}
            for (kind, part), g in s.groupby(["kind", "part"], sort=False)]
    return pd.DataFrame(rows)


@dataclass
class HorizonAnalysis:
    """The horizon experiment's tables, computed once (:func:`analyse_horizon`)."""
    table: pd.DataFrame        # run_table
    contrasts: pd.DataFrame    # contrast_rows: the primary family
    secondary: pd.DataFrame    # family_rows of SECONDARY
    horizons: pd.DataFrame     # horizon_rows: chapter 13's words beside these
    trajectory: pd.DataFrame   # trajectory_table
    variance_null: pd.DataFrame  # variance_null_rows
    progress: pd.DataFrame     # matched_progress
    collapse: pd.DataFrame     # collapse_words
    predictions: pd.DataFrame  # account_rows
    accounts: pd.DataFrame     # account_words
    unigram_check: pd.DataFrame  # unigram_check_rows
    status: pd.DataFrame       # status
    steps: pd.DataFrame = None         # step_table: every probe step, per block and the blocks' mean
    at319: pd.DataFrame = None         # at319_rows: the long contrasts at the long runs' step 319
    common_steps: pd.DataFrame = None  # common_step_rows: the collapse part's shape at a common step (post hoc)


def analyse_horizon(loaded: dict | None = None, runs_dir=None, stand_ins: dict | None = None) -> HorizonAnalysis:
    """Every table of the horizon experiment from its committed runs (``loaded``: ``{run: RunData}``,
    default :func:`tanbias.lab.analysis.registered.load` of the design; ``stand_ins``: the runs the
    unigram check also reads, default :data:`STAND_INS` under ``runs_dir``)."""
    loaded = registered.load(HORIZON, runs_dir) if loaded is None else loaded
    if stand_ins is None:
        stand_ins = registered.load(HORIZON, runs_dir, names=STAND_INS)
    import pandas as pd

    table, traj, steps = run_table(loaded), trajectory_table(loaded), step_table(loaded)
    primary, secondary = contrast_rows(table), family_rows(table, SECONDARY)
    vnull = variance_null_rows(loaded)
    predictions = account_rows(primary, secondary, vnull)
    return HorizonAnalysis(table=table, contrasts=primary, secondary=secondary,
                           horizons=horizon_rows(primary, rivals.analyse_rivals().contrasts), trajectory=traj,
                           progress=matched_progress(traj, table, pd.concat([primary, secondary])),
                           variance_null=vnull, collapse=collapse_words(table), predictions=predictions,
                           accounts=account_words(predictions),
                           unigram_check=unigram_check_rows(loaded, stand_ins),
                           status=status(runs_dir), steps=steps, common_steps=common_step_rows(steps, table),
                           at319=at319_rows(table))
