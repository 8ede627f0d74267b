"""The aliasing knob's runs, measured: the chain per input id and per merged type (chapter 11).

The design and the rules are ``data/preregistration/alias.toml``
(:mod:`tanbias.lab.analysis.alias_design`); this module applies them to the
committed runs of every cell ``(kind, level, seed)`` of
:data:`tanbias.lab.experiments.ALIAS` (the k0 cells are the causal test's control
runs where that seed exists):

* :func:`load_alias`, the committed runs by cell (their status and complete seeds are
  :mod:`tanbias.lab.analysis.registered`'s);
* :func:`run_table`: one row per cell, in the dose table's form (``on_alias``,
  ``x_alias``, every reading), plus the merged types' link 0 and link 1, how much
  the run learned, and the convergence of its aliases;
* :func:`responses`: the dose experiment's registered test (chapter 10) on every reading
  (:func:`tanbias.lab.analysis.dose.dose_response` with this knob's positions and
  predictions); :func:`joint_multiplicity`: Holm across the joint verdict table of
  chapters 10 and 11, the direct and language knobs' 24 rows and these 14 (by the one rule of
  :func:`tanbias.lab.analysis.registered.holm`: rows not yet estimable stay in the
  family with p = 1, so it stays the registered 38);
* :func:`learning_contrast`: does aliasing slow learning less than the direct
  knob's removal of words? (``[rule.learning]``);
* :func:`convergence_table`, :func:`convergence_words`: do a type's aliases become
  one cloud? (``[rule.convergence]``);
* :func:`analyse_alias` (:class:`AliasAnalysis`) and :func:`joint_analyses`,
  the dose analysis read with the joint family, which chapters 10 and 11 and the closing page read.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple, TYPE_CHECKING

import numpy as np

from tanbias.lab import runs
from tanbias.lab.analysis import dose, registered
from tanbias.lab.analysis.tables import run_metrics
from tanbias.lab.analysis.alias_design import FAMILY_ROWS, ALIAS_READINGS, positions, registration
from tanbias.lab.analysis.dose_design import level_positions
from tanbias.lab.analysis.registered import complete_seeds, holm, learning, t_interval
from tanbias.lab.config import KINDS, N_SPECIAL
from tanbias.lab.experiments import ALIAS, ALIAS_LEVELS, ALIAS_SEEDS
from tanbias.lab.tokenizer import load_tokenizer
from tanbias.theory.alignment import frequency_buckets
from tanbias.theory.frequency import concentration
from tanbias.theory.token_clouds import unbiased_radius

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["load_alias", "frequent_bucket", "run_table", "predicted", "responses", "joint_multiplicity",
           "learning_change", "learning_contrast", "convergence_table", "convergence_words", "cloud_word",
           "AliasAnalysis", "JointAnalyses", "analyse_alias", "joint_analyses"]

ALPHA = registered.ALPHA


def load_alias(runs_dir=None, cells=None) -> dict:
    """The committed runs of the design's cells (checksums verified): ``{(kind, level, seed): RunData}``.
    ``cells`` (``(kind, level, seed, run)`` tuples) replace the design's
    (:meth:`ALIAS.cells() <tanbias.lab.experiments.Design.cells>`)."""
    cells = ALIAS.cells() if cells is None else cells
    loaded = registered.load(ALIAS, runs_dir, names=[run for *_, run in cells])
    return {(k, lv, int(s)): loaded[run] for k, lv, s, run in cells if run in loaded}


def frequent_bucket(loaded: dict) -> np.ndarray:
    """The frequency bucket of every type: three fixed buckets of the summed training type counts of
    the k0 cells (bucket 0 the most frequent), as ``[rule] link1`` says; the special tokens left out."""
    start = [np.asarray(r.token_counts, float) for (k, lv, s), r in loaded.items() if lv == "k0"]
    if not start:
        raise ValueError("no k0 cell is committed: the frequency buckets are the k0 runs' (make causal, make alias).")
    return frequency_buckets(np.sum(start, axis=0), 3, n_special=N_SPECIAL)


def _unbiased(df):
    return unbiased_radius(df["t"].to_numpy(float), df["count_text"].to_numpy(float))


def _eta(df, bucket_of_row) -> tuple[float, float]:
    """ln of the occurrence-weighted mean t² (t freed of its count bias) of the last layer's rows in
    bucket 0, and over every row."""
    last = df[df["layer"] == df["layer"].max()]
    t2 = _unbiased(last) ** 2
    w = last["count_text"].to_numpy(float)
    b = bucket_of_row(last["token_id"].to_numpy(np.int64))
    q1 = b == 0
    return (float(np.log(np.sum((w * t2)[q1]) / np.sum(w[q1]))) if q1.any() else np.nan,
            float(np.log(np.sum(w * t2) / np.sum(w))))


def _convergence_summary(conv, step) -> float:
    """ln of the geometric mean over the followed types of the ratio at the last layer at ``step``."""
    if conv is None or not len(conv):
        return np.nan
    c = conv[(conv["step"] == step) & (conv["layer"] == conv["layer"].max())]
    r = c["ratio"].to_numpy(float)
    r = r[np.isfinite(r) & (r > 0)]
    return float(np.mean(np.log(r))) if r.size else np.nan


def run_table(loaded: dict) -> pd.DataFrame:
    """One row per committed cell: the aliasing knob's readings, in the dose table's form.

    Columns: ``run, kind, level, seed, on_alias`` (True), ``x_alias`` (design position);
    link 0: ``collision``, ``log_collision`` (of the shown training stream, per input id:
    ``input_counts.npy``, or the type counts at k0), ``type_collision``, ``log_type_collision``
    (the text's types); link 1 at the last layer on the common held-out text, per input id
    (``tokens.csv``) and per merged type (``types.csv``; ``tokens.csv`` at k0):
    ``log_eta_q1``, ``log_eta_all``, ``log_eta_q1_type``, ``log_eta_all_type``; link 2:
    ``log_enrichment_early``, ``log_enrichment_late``; link 3 (last probe step, layers 1..L,
    every captured position, as chapter 10): ``mean_cosine_late``, ``isoscore_late``,
    ``participation_late``; learning: ``eval_loss, unigram_loss, gain, accuracy,
    unigram_accuracy``; convergence: ``log_convergence`` (after the last step) and
    ``log_convergence_init`` (step 0), NaN at k0; ``diverged``.
    """
    import pandas as pd

    from tanbias.lab.data import Stream

    if not loaded:
        raise ValueError("no aliasing cell is committed yet: run `make alias` (and `make causal` for the k0 "
                         "cells it shares) first.")
    buckets = frequent_bucket(loaded)
    tok = load_tokenizer()
    met = run_metrics({r.name: r for r in loaded.values()})
    met = met[(met["layer"] == "mean") & (met["bucket"] == "all") & (met["proxy"] == "frozen")]
    met = met.set_index(["run", "phase"])["log_enrichment"]
    pos = positions()
    rows = []
    for (kind, level, seed), r in loaded.items():
        amap = Stream.from_config(r.config, tok).aliases
        type_of = (lambda ids: ids) if amap is None else amap.type_of
        shown = r.input_counts if r.input_counts is not None else r.token_counts
        c = concentration(np.asarray(shown, float)[N_SPECIAL:])
        ct = concentration(np.asarray(r.token_counts, float)[N_SPECIAL:])
        eta_q1, eta_all = _eta(r.tokens, lambda ids: buckets[type_of(ids)])
        types = r.types if r.types is not None else r.tokens
        eta_q1_t, eta_all_t = _eta(types, lambda ids: buckets[ids])
        an = r.anisotropy
        an = an[(an["step"] == an["step"].max()) & (an["layer"] >= 1) & (an["positions"] == "all")]
        losses = r.metrics["loss"].to_numpy(float)
        rows.append({"run": r.name, "kind": kind, "level": level, "seed": int(seed), "on_alias": True,
                     "x_alias": pos[level], "collision": c["collision"], "log_collision": float(np.log(c["collision"])),
                     "type_collision": ct["collision"], "log_type_collision": float(np.log(ct["collision"])),
                     "log_eta_q1": eta_q1, "log_eta_all": eta_all, "log_eta_q1_type": eta_q1_t,
                     "log_eta_all_type": eta_all_t,
                     "log_enrichment_early": float(met.loc[(r.name, "early")]),
                     "log_enrichment_late": float(met.loc[(r.name, "late")]),
                     "mean_cosine_late": float(an["mean_cosine"].mean()),
                     "isoscore_late": float(an["isoscore_star"].mean()),
                     "participation_late": float(an["participation_ratio"].mean()),
                     **learning(r.evaluation),
                     "log_convergence": _convergence_summary(r.convergence, r.config.steps),
                     "log_convergence_init": _convergence_summary(r.convergence, 0),
                     "extra_rows": 0 if amap is None else amap.n_inputs - amap.vocab,
                     "diverged": bool(not np.isfinite(losses).all())})
    return pd.DataFrame(rows)


def predicted(metric: str) -> str:
    """The registered sign of a reading along the aliasing knob (``[predictions]``; IsoScore*'s
    is the opposite of its link's, as in chapter 10).

    >>> predicted("log_eta_q1_type"), predicted("isoscore_late"), predicted("log_collision")
    ('+', '+', '-')
    """
    p = registration()["predictions"]
    key = {"log_collision": "concentration", "log_eta_q1": "eta_frequent", "log_eta_q1_type": "eta_frequent_type",
           "log_enrichment_late": "enrichment", "log_enrichment_early": "enrichment",
           "mean_cosine_late": "anisotropy", "isoscore_late": "anisotropy"}[metric]
    sign = p[key]["alias"]["sign"]
    return {"+": "-", "-": "+"}.get(sign, sign) if metric == "isoscore_late" else sign


def responses(table) -> pd.DataFrame:
    """The dose experiment's registered test (chapter 10) on every reading of
    :data:`~tanbias.lab.analysis.alias_design.ALIAS_READINGS` and architecture, over the complete seeds
    (``[rule] test``), unadjusted; ``knob`` is ``"alias"``."""
    import pandas as pd

    rows = []
    for metric in ALIAS_READINGS:
        for kind in KINDS:
            t = table[table["seed"].isin(complete_seeds(ALIAS, table, kind)) | (table["kind"] != kind)]
            rows.append(dose.dose_response(t, metric, "alias", kind, positions=positions(),
                                           predicted=predicted(metric)))
    return pd.DataFrame(rows)


def joint_multiplicity(dose_responses, alias_responses) -> tuple:
    """Holm across the joint verdict table of chapters 10 and 11 (``[rule] multiplicity``): the dose rows (their
    unadjusted reading) and the aliasing rows, one family of :data:`~tanbias.lab.analysis.alias_design.FAMILY_ROWS`
    (:func:`tanbias.lab.analysis.dose.apply_multiplicity`; rows without a p-value, too few seeds yet,
    stay in it with p = 1 and read ``"n/a"``, so the family stays the registered one while the design
    is interim). Returns ``(dose rows, alias rows)``, each read at the joint adjusted p (``p_holm``,
    ``observed``, ``verdict``, ``progress_survives``; the unadjusted reading in ``*_unadjusted``)."""
    import pandas as pd

    d = dose_responses.copy()
    if "verdict_unadjusted" in d:           # already read at Holm: start from the unadjusted reading
        d["observed"], d["verdict"] = d["observed_unadjusted"], d["verdict_unadjusted"]
    both = pd.concat([d.assign(_part="dose"), alias_responses.assign(_part="alias")], ignore_index=True)
    r = dose.apply_multiplicity(both, family=FAMILY_ROWS)
    out = [r[r["_part"] == part].drop(columns="_part").reset_index(drop=True) for part in ("dose", "alias")]
    return out[0], out[1]


def learning_change(table, kind: str, knob: str) -> dict:
    """The registered regression's end-to-end change of the gain over unigram along one knob:
    ``gain ~ x + C(seed)`` on the runs' ln collision of the shown stream, times the mean change of x
    from the knob's start to its flattest level. ``table``: a run table with ``on_<knob>`` rows
    (the dose table for ``token``, :func:`run_table` for ``alias``). Returns ``change, se, df``."""
    import statsmodels.formula.api as smf

    g = dose.knob_runs(table, knob, kind).dropna(subset=["gain", "log_collision"])
    order = positions() if knob == "alias" else level_positions(knob)
    start, flat = min(order, key=order.get), max(order, key=order.get)
    seeds = g.groupby("seed")["level"].nunique()
    g = g[g["seed"].isin(seeds[seeds >= 2].index)]
    if len(g) - g["seed"].nunique() - 1 < 1 or not {start, flat} <= set(g["level"]):
        return {"kind": kind, "knob": knob, "change": np.nan, "se": np.nan, "df": np.nan}
    fit = smf.ols("gain ~ log_collision" + (" + C(seed)" if g["seed"].nunique() > 1 else ""), data=g).fit()
    dx = g.loc[g["level"] == flat, "log_collision"].mean() - g.loc[g["level"] == start, "log_collision"].mean()
    return {"kind": kind, "knob": knob, "change": float(fit.params["log_collision"] * dx),
            "se": float(abs(fit.bse["log_collision"] * dx)), "df": float(fit.df_resid)}


def learning_contrast(alias_table, dose_table) -> pd.DataFrame:
    """``[rule.learning]``: per architecture, the aliasing knob's end-to-end change of the gain minus
    the direct knob's, SE ``sqrt(se_a² + se_t²)``, Welch–Satterthwaite df, 95 % t interval, Holm
    over the two architectures, and the word (``less``: aliasing loses less gain, ``more``,
    ``not told apart``, or ``undecided`` without an estimate)."""
    import pandas as pd
    from scipy import stats

    rows = []
    for kind in KINDS:
        t = alias_table[alias_table["seed"].isin(complete_seeds(ALIAS, alias_table, kind))]
        a, b = learning_change(t, kind, "alias"), learning_change(dose_table, kind, "token")
        d = a["change"] - b["change"]
        se = float(np.hypot(a["se"], b["se"]))
        df = se ** 4 / (a["se"] ** 4 / a["df"] + b["se"] ** 4 / b["df"]) if np.isfinite(se) and se > 0 else np.nan
        h = stats.t.ppf(0.975, df) * se if np.isfinite(df) else np.nan
        p = float(2 * stats.t.sf(abs(d) / se, df)) if np.isfinite(df) else np.nan
        rows.append({"kind": kind, "alias_change": a["change"], "alias_se": a["se"], "token_change": b["change"],
                     "token_se": b["se"], "difference": d, "lo": d - h, "hi": d + h, "df": df, "p": p})
    out = pd.DataFrame(rows)
    out["p_holm"] = holm(out["p"], family=len(KINDS))
    out["word"] = ["undecided" if not np.isfinite(p) else "less" if p < ALPHA and d > 0 else
                   "more" if p < ALPHA and d < 0 else "not told apart" for p, d in zip(out["p_holm"], out["difference"])]
    return out


def convergence_table(loaded: dict) -> pd.DataFrame:
    """The aliases' convergence of every committed aliased cell: one row per (run, step, layer) with the
    geometric mean over the followed types of the ratio (``ratio``, and ``n_types``), plus ``kind, level,
    seed``; from the runs' ``alias.csv``."""
    import pandas as pd

    frames = []
    for (kind, level, seed), r in loaded.items():
        c = r.convergence
        if c is None or not len(c):
            continue
        c = c[np.isfinite(c["ratio"]) & (c["ratio"] > 0)]
        g = c.groupby(["step", "layer"]).agg(log_ratio=("ratio", lambda x: float(np.mean(np.log(x)))),
                                             n_types=("type_id", "nunique")).reset_index()
        frames.append(g.assign(ratio=np.exp(g["log_ratio"]), run=r.name, kind=kind, level=level, seed=int(seed)))
    cols = ["run", "kind", "level", "seed", "step", "layer", "ratio", "log_ratio", "n_types"]
    return pd.concat(frames, ignore_index=True)[cols] if frames else pd.DataFrame(columns=cols)


def cloud_word(n: int, lo: float, hi: float) -> str:
    """``[rule.convergence] words`` of a 95 % interval ``[lo, hi]`` of the ln ratio over ``n`` seeds.

    >>> cloud_word(8, np.log(0.1), np.log(0.3)), cloud_word(8, np.log(0.6), np.log(0.9)), cloud_word(1, 0, 1)
    ('one cloud', 'in between', 'undecided')
    """
    return ("undecided" if n < 2 else "one cloud" if hi < np.log(0.5) else
            "separate clouds" if lo > 0 else "in between")


def convergence_words(table) -> pd.DataFrame:
    """``[rule.convergence]``: per architecture and aliased level, the t interval (95 %) over the complete
    seeds of the per-run ln ratio after the last step (``log_convergence``), as ratios, and the word:
    ``one cloud`` (upper end below 0.5), ``separate clouds`` (lower end above 1), ``in between``, or
    ``undecided`` (fewer than two seeds) (:func:`cloud_word`). The same at step 0 beside it (``init``,
    ``init_word``: by the same rule, a reading the registration shows but does not name)."""
    import pandas as pd

    rows = []
    for kind in KINDS:
        t = table[(table["kind"] == kind) & table["seed"].isin(complete_seeds(ALIAS, table, kind))]
        for level in list(ALIAS_LEVELS)[1:]:
            x = t.loc[t["level"] == level]
            m, lo, hi, n = t_interval(x["log_convergence"])
            mi, loi, hii, _ = t_interval(x["log_convergence_init"])
            rows.append({"kind": kind, "level": level, "n_seeds": n, "ratio": np.exp(m), "lo": np.exp(lo),
                         "hi": np.exp(hi), "init": np.exp(mi), "init_lo": np.exp(loi), "init_hi": np.exp(hii),
                         "word": cloud_word(n, lo, hi), "init_word": cloud_word(n, loi, hii)})
    return pd.DataFrame(rows)


@dataclass
class AliasAnalysis:
    """Everything chapter 11 shows of the aliasing knob (:func:`analyse_alias`)."""
    status: pd.DataFrame                # registered.run_status(ALIAS)
    table: pd.DataFrame                 # run_table
    responses: pd.DataFrame             # responses, read at the joint Holm family (joint_multiplicity)
    learning: pd.DataFrame              # learning_contrast
    convergence: pd.DataFrame           # convergence_table
    clouds: pd.DataFrame                # convergence_words
    seeds: dict           # {kind: complete seeds}
    interim: bool         # a registered seed is incomplete


class JointAnalyses(NamedTuple):
    """The dose experiment's analysis read at the joint Holm family, and the aliasing knob's: the
    aliasing knob's 14 registered rows joined the dose experiment's 24 in one family, so chapter 10's
    verdicts are computed here, with chapter 11's."""
    dose: dose.DoseAnalysis
    alias: AliasAnalysis


def analyse_alias(loaded: dict | None = None, dose_analysis=None) -> "JointAnalyses":
    """Every statistic of the aliasing knob, and the dose analysis read with the joint Holm family.

    Returns :class:`JointAnalyses` ``(dose, alias)``: ``dose`` is chapter 10's
    :class:`~tanbias.lab.analysis.dose.DoseAnalysis` with its verdict table read at Holm over the
    registered 38 rows (the direct and language knobs' 24 and this knob's 14). With nothing
    committed yet, every aliasing row enters with p = 1.
    """
    import pandas as pd

    da = dose.analyse_dose() if dose_analysis is None else dose_analysis
    loaded = load_alias() if loaded is None else loaded
    status = registered.run_status(ALIAS)
    if loaded:
        table = run_table(loaded)
        raw = responses(table)
    else:
        table = pd.DataFrame(columns=["run", "kind", "level", "seed", "on_alias", "x_alias", "gain", "log_collision",
                                      "diverged", *ALIAS_READINGS])
        empty = table.assign(on_alias=pd.Series(dtype=bool))
        raw = pd.DataFrame([dose.dose_response(empty, m, "alias", k, positions=positions(), predicted=predicted(m))
                            for m in ALIAS_READINGS for k in KINDS])
    dose_rows, alias_rows = joint_multiplicity(da.responses, raw)
    seeds = {k: complete_seeds(ALIAS, table, k) if len(table) else [] for k in KINDS}
    aa = AliasAnalysis(status=status, table=table, responses=alias_rows,
                       learning=learning_contrast(table, da.table) if len(table) else pd.DataFrame(),
                       convergence=convergence_table(loaded), clouds=convergence_words(table) if len(table)
                       else pd.DataFrame(), seeds=seeds,
                       interim=any(len(seeds[k]) < len(ALIAS_SEEDS) for k in KINDS))
    return JointAnalyses(dose=replace(da, responses=dose_rows), alias=aa)


def joint_analyses() -> "JointAnalyses":
    """:func:`analyse_alias` of the committed runs, memoised on disk (:func:`tanbias.lab.runs.memoised`):
    chapters 10 and 11 and the closing page read the dose analysis with the joint Holm family, and the
    aliasing analysis, from one computation."""
    return runs.memoised("joint_analyses", analyse_alias)
