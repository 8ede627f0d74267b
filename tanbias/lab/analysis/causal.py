"""The causal test measured: the runs' outcomes and the registered rules applied (chapter 12).

The design and the rules are fixed in ``data/preregistration/causal.toml``
(:mod:`tanbias.lab.analysis.causal_design`); this module applies them to the
committed runs ``causal-<kind>-<arm>-s<seed>``:

* the runs of :data:`tanbias.lab.experiments.CAUSAL`, their status, the committed ones
  and their complete seeds: :mod:`tanbias.lab.analysis.registered`;
* :func:`run_table` (one row per run: the primary outcome and every secondary
  one) and :func:`trajectory_table` (the primary outcome at every probe step, per
  layer and as the layer mean);
* :func:`fit_contrasts`: per architecture, OLS of an outcome on ``C(seed) + C(arm)``
  (statsmodels) over the seeds whose every arm is complete, and contrasts of arms
  with t intervals;
* the rules: :func:`causal_rows` (prediction 1, Holm across the six contrasts,
  with the learning check), :func:`early_share` (prediction 2),
  :func:`reinforcing` (prediction 3), :func:`tied_rows` (4), :func:`cost_rows` (5);
* post hoc, :func:`matched_progress`: every contrast at matched held-out loss (the
  matched-progress reading of :mod:`tanbias.lab.analysis.registered`);
* :func:`analyse_causal`: all of it, and whether it is interim (fewer seeds than
  registered).

The numbers chapter 12 and the closing page quote are :mod:`tanbias.lab.analysis.causal_report`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from tanbias._checks import check_choice
from tanbias.lab import runs
from tanbias.lab.analysis import registered
from tanbias.lab.analysis.tables import run_metrics
from tanbias.lab.analysis.causal_design import FAMILY
from tanbias.lab.analysis.registered import (complete_seeds, holm, learning, progress_word, relative_word, t_interval,
                                             value_at_progress)
from tanbias.lab.config import EARLY_FRAC, KINDS, PROBE_STEPS, probe_steps
from tanbias.lab.experiments import CAUSAL, CAUSAL_SEEDS, causal_arms
from tanbias.stats import interval_word

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["OUTCOMES", "PRIMARY", "ALPHA", "EARLY_THRESHOLD", "window_end", "run_table", "trajectory_table",
           "fit_contrasts", "causal_rows", "causal_word", "early_share", "reinforcing", "tied_rows", "cost_rows",
           "trajectory_contrast", "matched_progress", "CausalAnalysis", "analyse_causal", "from_tables"]

#: the outcomes of one run (columns of :func:`run_table`) and what they are
OUTCOMES = {
    "log_mean_cosine": "ln mean cosine (layer mean, last probe step; primary)",
    "log_participation": "ln participation ratio (layer mean, last probe step)",
    "isoscore": "IsoScore* (layer mean, last probe step)",
    "log_top1": "ln top-1 share (layer mean, last probe step)",
    "log_enrichment_late": "ln late enrichment (frozen proxy, layer mean)",
    "heldout_loss": "held-out loss on the common text [nats]",
    "gain": "gain over unigram, final evaluation [nats]",
    "premise_rho": "count-matched premise, Spearman ρ (last layer)",
}
PRIMARY = "log_mean_cosine"
#: the columns of :func:`trajectory_table`
TRAJECTORY_COLUMNS = ["run", "kind", "arm", "seed", "step", "layer", "log_mean_cosine", "heldout_loss"]
ALPHA = registered.ALPHA
#: the threshold of "most" (rule.early)
EARLY_THRESHOLD = 0.5
#: prediction 1's contrasts, per architecture
CAUSAL_CONTRASTS = (("proxy", "control"), ("proxy", "random"), ("proxy", "uniform"))


def _layer_mean(an, column: str) -> float:
    return float(an[column].mean())


def run_table(loaded: dict) -> pd.DataFrame:
    """One row per causal run: ``run, kind, arm, seed``, every :data:`OUTCOMES` column,
    ``share`` and ``removed`` (mean over the surgery's steps of the share of the maps'
    update energy in P, and of the share removed; NaN without surgery) and ``diverged``
    (a non-finite training loss)."""
    import pandas as pd

    if not loaded:
        raise ValueError("no causal run is committed yet: run `make causal` (python -m tanbias.lab causal "
                         "--jobs 2 --commit) first.")
    met = run_metrics(loaded)
    met = met[(met["layer"] == "mean") & (met["bucket"] == "all") & (met["proxy"] == "frozen")
              & (met["phase"] == "late")].set_index("run")["log_enrichment"]
    rows = []
    for name, r in loaded.items():
        kind, arm, seed = CAUSAL.parse(name)
        an = r.anisotropy
        an = an[(an["positions"] == "content") & (an["layer"] >= 1)]
        last = an[an["step"] == an["step"].max()]
        pe = r.probe_evals
        final = pe[pe["step"] == r.config.steps]["loss"] if pe is not None else []
        ev = r.evaluation
        prem = r.premise
        m = r.metrics
        rows.append({"run": name, "kind": kind, "arm": arm, "seed": seed, "steps": r.config.steps,
                     "log_mean_cosine": float(np.log(_layer_mean(last, "mean_cosine"))),
                     "log_participation": float(np.log(_layer_mean(last, "participation_ratio"))),
                     "isoscore": _layer_mean(last, "isoscore_star"),
                     "log_top1": float(np.log(_layer_mean(last, "top1_share"))),
                     "log_enrichment_late": float(met.get(name, np.nan)),
                     "heldout_loss": float(final.iloc[-1]) if len(final) else np.nan,
                     "gain": learning(ev)["gain"],
                     "premise_rho": float(prem.loc[prem["layer"].idxmax(), "spearman"]) if prem is not None
                     else np.nan,
                     "share": float(m["surgery_share"].mean()) if "surgery_share" in m else np.nan,
                     "removed": float(m["surgery_removed"].mean()) if "surgery_removed" in m else np.nan,
                     "diverged": bool(not np.isfinite(m["loss"].to_numpy(float)).all())})
    return pd.DataFrame(rows)


def trajectory_table(loaded: dict) -> pd.DataFrame:
    """The primary outcome during training: one row per (run, probe step, layer), ``layer`` an int
    (1..L) or ``"mean"`` (ln of the layer mean), columns ``run, kind, arm, seed, step, layer,
    log_mean_cosine, heldout_loss`` (the held-out loss on the common text at that probe step, from
    the same weights; NaN where the run logged none)."""
    import pandas as pd

    frames = []
    for name, r in loaded.items():
        kind, arm, seed = CAUSAL.parse(name)
        an = r.anisotropy
        an = an[(an["positions"] == "content") & (an["layer"] >= 1)]
        per = an[["step", "layer"]].assign(log_mean_cosine=np.log(an["mean_cosine"].to_numpy(float)))
        mean = an.groupby("step", as_index=False)["mean_cosine"].mean()
        mean = pd.DataFrame({"step": mean["step"], "layer": "mean", "log_mean_cosine": np.log(mean["mean_cosine"])})
        f = pd.concat([per.astype({"layer": object}), mean], ignore_index=True)
        pe = r.probe_evals
        loss = (pe.drop_duplicates("step", keep="last").set_index("step")["loss"] if pe is not None
                else pd.Series(dtype=float))
        f["heldout_loss"] = f["step"].map(loss).astype(float)
        frames.append(f.assign(run=name, kind=kind, arm=arm, seed=seed))
    out = pd.concat(frames, ignore_index=True)
    return out[TRAJECTORY_COLUMNS]


def fit_contrasts(table, outcome: str, kind: str, pairs, confidence: float = 1 - ALPHA) -> pd.DataFrame:
    """Seed-paired contrasts of arms of one architecture: OLS ``outcome ~ C(seed) + C(arm)`` over the
    complete seeds (statsmodels), each pair ``(a, b)`` the difference of the two arms' effects.

    Returns a DataFrame, one row per pair: ``kind, outcome, contrast ("a - b"), estimate, se, df,
    lo, hi`` (the ``confidence`` t interval), ``p`` (two-sided), ``n_seeds``. With fewer than two
    complete seeds there are no residual degrees of freedom: the row's numbers are NaN.
    """
    import pandas as pd
    import statsmodels.formula.api as smf

    check_choice("outcome", outcome, tuple(OUTCOMES))
    seeds = complete_seeds(CAUSAL, table, kind)
    d = table[(table["kind"] == kind) & table["seed"].isin(seeds)].copy()
    rows = []
    fit = None
    if len(seeds) >= 2 and d[outcome].notna().all():
        d["arm_"] = pd.Categorical(d["arm"], categories=list(causal_arms(kind)))
        fit = smf.ols(f"{outcome} ~ C(seed) + C(arm_)", data=d).fit()
    for a, b in pairs:
        row = {"kind": kind, "outcome": outcome, "contrast": f"{a} - {b}", "estimate": np.nan, "se": np.nan,
               "df": np.nan, "lo": np.nan, "hi": np.nan, "p": np.nan, "n_seeds": len(seeds)}
        if fit is not None:
            L = np.zeros(len(fit.params))
            for arm, sign in ((a, 1.0), (b, -1.0)):
                key = f"C(arm_)[T.{arm}]"
                if key in fit.params.index:            # the first arm (control) is the reference
                    L[fit.params.index.get_loc(key)] += sign
            t = fit.t_test(L)
            lo, hi = np.asarray(t.conf_int(alpha=1 - confidence)).ravel()
            row.update(estimate=float(np.ravel(t.effect)[0]), se=float(np.ravel(t.sd)[0]), df=float(fit.df_resid),
                       lo=float(lo), hi=float(hi), p=float(np.ravel(t.pvalue)[0]))
        rows.append(row)
    return pd.DataFrame(rows)


def causal_rows(table) -> pd.DataFrame:
    """Prediction 1 (rule.causal): the six contrasts of the primary outcome (``proxy`` against
    ``control``, ``random``, ``uniform``, per architecture) with Holm-adjusted p (``p_holm``), the
    learning check on held-out loss (``loss_estimate``, ``loss_lo``, ``loss_hi``; ``learning_differs``:
    the proxy arm's loss is higher than a specificity comparator's, 95 % interval above 0) and
    ``significant`` (Holm-adjusted p below α). Holm's family is the registered six contrasts
    (:func:`tanbias.lab.analysis.registered.holm`: while an architecture has too few seeds, an
    interim reading, its contrasts stay in the family with p = 1)."""
    import pandas as pd

    frames = []
    for kind in KINDS:
        c = fit_contrasts(table, PRIMARY, kind, CAUSAL_CONTRASTS)
        loss = fit_contrasts(table, "heldout_loss", kind, CAUSAL_CONTRASTS)
        c["loss_estimate"], c["loss_lo"], c["loss_hi"] = loss["estimate"], loss["lo"], loss["hi"]
        frames.append(c)
    rows = pd.concat(frames, ignore_index=True)
    rows["p_holm"] = holm(rows["p"], family=FAMILY)
    rows["significant"] = rows["p_holm"] < ALPHA
    rows["learning_differs"] = (rows["contrast"] != "proxy - control") & (rows["loss_lo"] > 0)
    return rows


def causal_word(rows, kind: str) -> str:
    """rule.causal's word for one architecture from :func:`causal_rows`: ``supported``,
    ``not specific``, ``not detected``, ``against``, or ``too few seeds``."""
    r = rows[rows["kind"] == kind].set_index("contrast")
    main = r.loc["proxy - control"]
    if not np.isfinite(main["p"]):
        return "too few seeds"
    if main["significant"] and main["estimate"] > 0:
        return "against"
    if not (main["significant"] and main["estimate"] < 0):
        return "not detected"
    spec = r.loc[["proxy - random", "proxy - uniform"]]
    if (spec["significant"] & (spec["estimate"] < 0) & ~spec["learning_differs"]).all():
        return "supported"
    return "not specific"


def _seed_values(table, kind: str, outcome: str = PRIMARY):
    """Arm -> array over the complete seeds (same order) of ``outcome``."""
    seeds = complete_seeds(CAUSAL, table, kind)
    t = table[(table["kind"] == kind) & table["seed"].isin(seeds)]
    p = t.pivot_table(index="seed", columns="arm", values=outcome).loc[seeds]
    return {a: p[a].to_numpy(float) for a in p.columns}


def early_share(table, kind: str, main_word: str, n_boot: int = 4000, rng=0) -> dict:
    """Prediction 2 (rule.early): the share of ``proxy``'s effect that ``proxy-early`` achieves,
    ``(proxy-early − control) / (proxy − control)`` from the seed-paired arm means, its percentile
    interval over ``n_boot`` resamples of the seeds at ``1 − α/2``, and the word: ``supported``
    (lower end ≥ 0.5), ``against`` (upper end < 0.5), ``undecided``, or ``not assessable`` (when
    ``main_word``, rule.causal's, has no negative proxy − control effect)."""
    v = _seed_values(table, kind)
    out = {"kind": kind, "share": np.nan, "lo": np.nan, "hi": np.nan, "n_seeds": 0, "word": "not assessable"}
    if not v or "proxy-early" not in v:
        return out
    pe, p = v["proxy-early"] - v["control"], v["proxy"] - v["control"]
    n = len(p)
    out["n_seeds"] = n
    out["share"] = float(pe.mean() / p.mean()) if p.mean() != 0 else np.nan
    if n >= 2:
        g = np.random.default_rng(rng)
        idx = g.integers(0, n, size=(n_boot, n))
        num, den = pe[idx].mean(axis=1), p[idx].mean(axis=1)
        share = np.where(den != 0, num / np.where(den != 0, den, 1), np.nan)
        q = ALPHA / 2 / 2
        out["lo"], out["hi"] = (float(x) for x in np.nanquantile(share, [q, 1 - q]))
    if main_word not in ("supported", "not specific") or n < 2:
        return out
    out["word"] = ("supported" if out["lo"] >= EARLY_THRESHOLD else "against" if out["hi"] < EARLY_THRESHOLD
                   else "undecided")
    return out


def window_end(steps: int) -> int:
    """The last probe step inside the early window (the surgery's steps ``0 .. round(EARLY_FRAC steps) − 1``):
    step 75 of a 320-step run.

    >>> window_end(320)
    75
    """
    end = int(round(EARLY_FRAC * steps))
    return max(s for s in probe_steps(steps, min(PROBE_STEPS, steps)) if s < end)


def reinforcing(traj, table, kind: str) -> dict:
    """Prediction 3 (rule.reinforcing): the gap ``g = proxy-early − control`` of the layer-mean
    primary outcome, per seed, at the window's end (:func:`window_end`) and at the last probe step;
    ``d = g(last) − g(window end)``, both with seed-paired t intervals at ``1 − α/2``; the word
    ``grows`` (d on the gap's side), ``decays`` (the other side), ``neither detected``, or
    ``not assessable`` (the gap at the window's end is not told apart from 0); the words are
    :func:`~tanbias.lab.analysis.registered.relative_word` of d against the gap."""
    seeds = complete_seeds(CAUSAL, table, kind)
    t = traj[(traj["kind"] == kind) & (traj["layer"] == "mean") & traj["seed"].isin(seeds)
             & traj["arm"].isin(["proxy-early", "control"])]
    out = {"kind": kind, "n_seeds": len(seeds), "word": "not assessable"}
    if t.empty:
        return out
    last = int(t["step"].max())
    end = window_end(int(table.loc[table["kind"] == kind, "steps"].iloc[0]))
    p = t.pivot_table(index=["seed", "step"], columns="arm", values="log_mean_cosine")
    gap = (p["proxy-early"] - p["control"]).unstack("step")
    conf = 1 - ALPHA / 2
    out.update(zip(("gap_end", "gap_end_lo", "gap_end_hi"), t_interval(gap[end], conf)[:3]))
    out.update(zip(("gap_last", "gap_last_lo", "gap_last_hi"), t_interval(gap[last], conf)[:3]))
    out.update(zip(("d", "d_lo", "d_hi"), t_interval(gap[last] - gap[end], conf)[:3]))
    out["window_end"], out["last_step"] = end, last
    side = {"positive": "+", "negative": "-"}.get(interval_word(out["gap_end_lo"], out["gap_end_hi"]))
    if side is None:
        return out
    out["word"] = {"same": "grows", "opposite": "decays"}.get(relative_word(side, out["d_lo"], out["d_hi"]),
                                                              "neither detected")
    return out


def tied_rows(table) -> pd.DataFrame:
    """Prediction 4 (rule.rivals): the decoder's ``proxy − control`` and ``tied − control`` on the
    primary outcome, as ratios ``exp(contrast)`` with 95 % intervals (``ratio, ratio_lo, ratio_hi``)."""
    c = fit_contrasts(table, PRIMARY, "decoder", (("proxy", "control"), ("tied", "control")))
    return c.assign(ratio=np.exp(c["estimate"]), ratio_lo=np.exp(c["lo"]), ratio_hi=np.exp(c["hi"]))


def cost_rows(table) -> pd.DataFrame:
    """Prediction 5 (rule.cost): ``proxy − control`` in held-out loss on the common text, per
    architecture, 95 % t intervals, and the interval's word (:func:`tanbias.stats.interval_word`)."""
    import pandas as pd

    c = pd.concat([fit_contrasts(table, "heldout_loss", k, (("proxy", "control"),)) for k in KINDS],
                  ignore_index=True)
    c["word"] = [interval_word(lo, hi) for lo, hi in zip(c["lo"], c["hi"])]
    return c


def trajectory_contrast(traj, table, kind: str, a: str = "proxy", b: str = "control") -> pd.DataFrame:
    """Arm ``a`` against arm ``b`` at every probe step: the seed-paired difference of the layer-mean
    primary outcome (ln mean cosine), over the architecture's complete seeds, with its 95 % seed t
    interval. A description of the trajectories (no rule reads it, no multiplicity correction).

    Returns a DataFrame, one row per probe step: ``step, estimate, lo, hi`` (ln units; ``exp`` gives
    ``a / b``), ``n_seeds``; empty before the architecture has a complete seed.

    >>> import pandas as pd
    >>> table = pd.DataFrame([{"kind": "decoder", "arm": arm, "seed": s} for arm in causal_arms("decoder")
    ...                       for s in range(3)])                 # every arm of three seeds committed
    >>> traj = pd.DataFrame([{"kind": "decoder", "layer": "mean", "arm": arm, "seed": s, "step": step,
    ...                       "log_mean_cosine": 0.1 * step + 0.01 * s if arm == "proxy" else 0.0}
    ...                      for arm in ("proxy", "control") for s in range(3) for step in (0, 10)])
    >>> c = trajectory_contrast(traj, table, "decoder")
    >>> c["step"].tolist(), c["estimate"].round(2).tolist(), c["n_seeds"].tolist()
    ([0, 10], [0.01, 1.01], [3, 3])
    """
    import pandas as pd

    seeds = complete_seeds(CAUSAL, table, kind)
    t = traj[(traj["kind"] == kind) & (traj["layer"] == "mean") & traj["seed"].isin(seeds) & traj["arm"].isin([a, b])]
    cols = ["step", "estimate", "lo", "hi", "n_seeds"]
    if t.empty:
        return pd.DataFrame(columns=cols)
    p = t.pivot_table(index=["seed", "step"], columns="arm", values="log_mean_cosine")
    d = (p[a] - p[b]).unstack("step")
    rows = [dict(zip(cols, (int(step), *t_interval(d[step], 1 - ALPHA)))) for step in d.columns]
    return pd.DataFrame(rows, columns=cols)


def matched_progress(traj, table, rows) -> pd.DataFrame:
    """The contrasts of the primary outcome at matched training progress (post hoc:
    ``data/preregistration/causal-posthoc.toml``, written after 86 runs were seen; it changes no
    registered word).

    Per architecture, seed and pair (rule.causal's three contrasts; the decoder's ``tied − control``
    too): ``L*`` is the larger of the two runs' final held-out losses, each run's ln layer-mean
    cosine is read at ``L*`` (:func:`~tanbias.lab.analysis.registered.value_at_progress`), and the
    per-seed differences get a 95 % seed t interval. ``rows`` is :func:`causal_rows` (the registered
    contrasts, whose estimate and Holm significance the word reads).

    Returns a DataFrame, one row per architecture and pair: ``kind, contrast, estimate, lo, hi``
    (ln units), ``n_seeds``, ``loss_gap`` (mean over seeds of the first arm's final held-out loss
    minus the second's), ``registered`` (the registered estimate) and ``word``: ``survives``,
    ``reverses``, ``not told apart from progress`` (:func:`~tanbias.lab.analysis.registered.progress_word`)
    or ``n/a`` (the registered contrast not Holm-significant or not estimable).
    """
    import pandas as pd

    out = []
    reg = rows.set_index(["kind", "contrast"]) if len(rows) else None
    for kind in KINDS:
        seeds = complete_seeds(CAUSAL, table, kind)
        t = traj[(traj["kind"] == kind) & (traj["layer"] == "mean") & traj["seed"].isin(seeds)]
        pairs = (*CAUSAL_CONTRASTS, ("tied", "control")) if kind == "decoder" else CAUSAL_CONTRASTS
        for a, b in pairs:
            diffs, gaps = [], []
            for seed in seeds:
                ra = t[(t["arm"] == a) & (t["seed"] == seed)].sort_values("step")
                rb = t[(t["arm"] == b) & (t["seed"] == seed)].sort_values("step")
                la, lb = float(ra["heldout_loss"].iloc[-1]), float(rb["heldout_loss"].iloc[-1])
                level = max(la, lb)
                va = value_at_progress(ra["step"], ra["heldout_loss"], ra["log_mean_cosine"], level, last=la >= lb)
                vb = value_at_progress(rb["step"], rb["heldout_loss"], rb["log_mean_cosine"], level, last=lb > la)
                diffs.append(va - vb)
                gaps.append(la - lb)
            est, lo, hi, _ = t_interval(diffs, 1 - ALPHA)
            contrast = f"{a} - {b}"
            word, registered = "n/a", np.nan
            key = (kind, contrast)
            if reg is not None and key in reg.index:
                r = reg.loc[key]
                registered = float(r["estimate"])
                if bool(r["significant"]):
                    matched = progress_word(registered, lo, hi)
                    word = "n/a" if matched == "undecided" else matched
            elif kind == "decoder" and contrast == "tied - control":
                registered = float("nan")          # a rival: rule.rivals reports it with no verdict
            out.append({"kind": kind, "contrast": contrast, "estimate": est, "lo": lo, "hi": hi,
                        "n_seeds": len(seeds), "loss_gap": float(np.mean(gaps)) if gaps else np.nan,
                        "registered": registered, "word": word})
    return pd.DataFrame(out)


@dataclass
class CausalAnalysis:
    """Everything chapter 12 shows: the status, the run table, the trajectories and each rule's rows."""
    status: pd.DataFrame
    table: pd.DataFrame
    trajectory: pd.DataFrame
    causal: pd.DataFrame
    words: dict
    early: dict
    reinforcing: dict
    #: the tied-embeddings rival's rows (:func:`tied_rows`)
    tied: pd.DataFrame
    cost: pd.DataFrame
    seeds: dict
    interim: bool
    #: the contrasts at matched training progress (added after the data, :func:`matched_progress`)
    progress: pd.DataFrame | None = None

    def secondary(self, outcome: str) -> pd.DataFrame:
        """The causal contrasts on a secondary outcome (95 % intervals, no multiplicity correction)."""
        import pandas as pd

        return pd.concat([fit_contrasts(self.table, outcome, k, (*CAUSAL_CONTRASTS, ("tied", "control"))
                                        if k == "decoder" else CAUSAL_CONTRASTS) for k in KINDS],
                         ignore_index=True)


def analyse_causal(loaded: dict | None = None, runs_dir=None) -> CausalAnalysis:
    """Apply every registered rule of the causal test to the committed runs
    (:func:`tanbias.lab.analysis.registered.load` of :data:`~tanbias.lab.experiments.CAUSAL`).

    On the committed runs (neither argument given) the result is memoised on disk
    (:func:`tanbias.lab.runs.memoised`): chapter 12, the closing page and the tests read one
    computation.
    """
    import pandas as pd

    if loaded is None and runs_dir is None:
        return runs.memoised("analyse_causal", lambda: analyse_causal(registered.load(CAUSAL)))
    loaded = registered.load(CAUSAL, runs_dir) if loaded is None else loaded
    if loaded:
        table, traj = run_table(loaded), trajectory_table(loaded)
    else:                          # nothing committed yet: every rule reads "too few seeds"
        table = pd.DataFrame(columns=["run", "kind", "arm", "seed", "steps", *OUTCOMES, "share", "removed",
                                      "diverged"])
        traj = pd.DataFrame(columns=TRAJECTORY_COLUMNS)
    return from_tables(table, traj, registered.run_status(CAUSAL, runs_dir))


def from_tables(table, trajectory, status, *, interim: bool | None = None) -> CausalAnalysis:
    """Every registered rule of the causal test, and the matched-progress reading, applied to a run
    table (:func:`run_table`) and its trajectories (:func:`trajectory_table`).

    ``interim`` defaults to the registered one: true while an architecture has fewer complete seeds
    than ``CAUSAL_SEEDS`` registers. :func:`analyse_causal` reads the committed runs through this;
    a test passes planted tables.
    """
    rows = causal_rows(table)
    words = {k: causal_word(rows, k) for k in KINDS}
    seeds = {k: complete_seeds(CAUSAL, table, k) for k in KINDS}
    if interim is None:
        interim = any(len(seeds[k]) < len(CAUSAL_SEEDS[k]) for k in KINDS)
    return CausalAnalysis(
        status=status, table=table, trajectory=trajectory, causal=rows, words=words,
        early={k: early_share(table, k, words[k]) for k in KINDS},
        reinforcing={k: reinforcing(trajectory, table, k) for k in KINDS},
        tied=tied_rows(table), cost=cost_rows(table), seeds=seeds, interim=bool(interim),
        progress=matched_progress(trajectory, table, rows))
