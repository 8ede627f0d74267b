"""The dose experiment's runs, measured: the chain's links per run and their dose-response (chapter 10).

* :func:`load_dose`, :func:`run_status` — the committed dose runs;
* :func:`run_table` — one row per run: the knob's level and every link of the
  chain (concentration, η_g of the frequent types, enrichment, anisotropy);
* :func:`dose_response`, :func:`all_responses`, :func:`architecture_interaction`
  — seed-paired regressions of each link on the measured concentration, with
  Page's trend test and the paired flattest-versus-start change;
* :func:`adaptive_frame`, :func:`adaptive_association` — "possibly adaptive":
  effective dimension against held-out loss within a level and step;
* :func:`analyse_dose` — every table at once (:class:`DoseAnalysis`).

The predictions these are judged against are :mod:`tanbias.lab.analysis.dose_design`;
an interval's sign is :func:`tanbias.stats.interval_word`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tanbias.lab.analysis.dose_design import (
    LINKS,
    REGISTRATION,
    level_positions,
    predicted_sign,
)
from tanbias.lab.config import KINDS
from tanbias.lab.experiments import DOSE_LEVELS, dose_names
from tanbias.stats import interval_word

__all__ = ["run_status", "load_dose", "reference_buckets", "run_table", "knob_runs", "SIGN_OF_WORD",
           "verdict_word", "dose_response", "all_responses", "architecture_interaction", "adaptive_frame",
           "adaptive_association", "verdict_table", "DoseAnalysis", "analyse_dose", "measured_concentration"]

def run_status(runs_dir=None) -> "object":
    """Which dose runs are committed: one row per (kind, level) with the seeds complete."""
    import pandas as pd

    from tanbias.lab import runs
    from tanbias.lab.experiments import parse_dose_name

    root = runs.RUNS_DIR if runs_dir is None else runs_dir
    rows = []
    for name in dose_names():
        kind, level, seed = parse_dose_name(name)
        done = runs.is_complete(root / name)
        rows.append({"kind": kind, "level": level, "knob": "+".join(DOSE_LEVELS[level]["knobs"]),
                     "seed": seed, "complete": done})
    df = pd.DataFrame(rows)
    return (df.groupby(["kind", "knob", "level"], sort=False)
            .agg(**{"runs complete": ("complete", "sum"), "runs planned": ("seed", "count")}).reset_index())


# --------------------------------------------------------------------------- the runs, measured
def load_dose(names=None, runs_dir=None) -> dict:
    """The committed dose runs that are complete (checksums verified), by name."""
    from tanbias.lab import runs

    root = runs.RUNS_DIR if runs_dir is None else runs_dir
    out = {}
    for name in (dose_names() if names is None else names):
        if runs.is_complete(root / name):
            out[name] = runs.load_run(root / name)
    return out


def reference_buckets(kind: str = "decoder", n_buckets: int = 3) -> np.ndarray:
    """Frequency bucket of every token id at the *skewed start* (expected stream frequencies).

    Fixed across levels, so link 1 follows the same types as the knob makes them
    rarer: bucket 0 = the types that are frequent before any flattening.
    """
    from tanbias.alignment import frequency_buckets
    from tanbias.lab.config import N_SPECIAL
    from tanbias.lab.data import stream_frequencies
    from tanbias.lab.experiments import dose_config
    from tanbias.lab.tokenizer import load_tokenizer

    f = stream_frequencies(dose_config(kind, "skewed", 0), load_tokenizer())
    return frequency_buckets(f * 1e9, n_buckets, n_special=N_SPECIAL)


def run_table(loaded: dict, buckets=None) -> "object":
    """One row per dose run: the knob's level and every link of the chain.

    Columns: ``run, kind, level, seed, on_token, on_language`` (the level lies on
    that knob), ``x_token``, ``x_language``; link 0 from the run's own training
    counts: ``collision``, ``log_collision``, ``effective_types``, ``top_share``;
    link 1 on the common held-out text at the last layer: ``log_eta_q1 .. q3``
    (occurrence-weighted mean t² of fixed buckets: by default those of the summed
    training counts of the skewed-start runs, else :func:`reference_buckets`),
    ``log_eta_all``; link 2: ``log_enrichment_early``, ``log_enrichment_late``
    (frozen proxy, all tokens, mean over layers, :func:`tanbias.lab.analysis.sweep.run_metrics`);
    link 3 at the last probe step, mean over layers 1..L: ``mean_cosine_late``,
    ``isoscore_late``, ``participation_late``; and ``eval_loss``, ``unigram_loss``.
    """
    import pandas as pd

    from tanbias.alignment import frequency_buckets
    from tanbias.frequency import concentration
    from tanbias.lab.analysis import sweep
    from tanbias.lab.config import N_SPECIAL
    from tanbias.lab.experiments import parse_dose_name

    if not loaded:
        raise ValueError("no complete dose run is committed yet: run `make dose` (or python -m tanbias.lab "
                         "dose --jobs 2 --commit) first.")
    if buckets is None:
        start = [np.asarray(r.token_counts, float) for n, r in loaded.items() if parse_dose_name(n)[1] == "skewed"]
        buckets = (frequency_buckets(np.sum(start, axis=0), 3, n_special=N_SPECIAL) if start
                   else reference_buckets())
    buckets = np.asarray(buckets)
    met = sweep.run_metrics(loaded)
    met = met[(met["layer"] == "mean") & (met["bucket"] == "all") & (met["proxy"] == "frozen")]
    met = met.set_index(["run", "phase"])["log_enrichment"]
    pos_t, pos_l = level_positions("token"), level_positions("language")
    rows = []
    for name, r in loaded.items():
        kind, level, seed = parse_dose_name(name)
        c = concentration(np.asarray(r.token_counts, float)[N_SPECIAL:])
        tok = sweep.tokens_table({name: r})         # t freed of its count bias
        last = int(tok["layer"].max())
        tl = tok[tok["layer"] == last]
        b = buckets[tl["token_id"].to_numpy()]
        w = tl["count_text"].to_numpy(float)
        t2 = tl["t"].to_numpy(float) ** 2
        eta = {f"log_eta_q{i + 1}": float(np.log(np.sum((w * t2)[b == i]) / np.sum(w[b == i])))
               for i in range(int(buckets.max()) + 1) if np.any(b == i)}
        an = r.anisotropy
        an = an[(an["step"] == an["step"].max()) & (an["layer"] >= 1)]
        rows.append({"run": name, "kind": kind, "level": level, "seed": seed,
                     "on_token": "token" in DOSE_LEVELS[level]["knobs"],
                     "on_language": "language" in DOSE_LEVELS[level]["knobs"],
                     "x_token": pos_t.get(level, np.nan), "x_language": pos_l.get(level, np.nan),
                     "collision": c["collision"], "log_collision": float(np.log(c["collision"])),
                     "effective_types": c["effective_types"], "top_share": c["top_share"],
                     **eta, "log_eta_all": float(np.log(np.sum(w * t2) / w.sum())),
                     "log_enrichment_early": float(met.loc[(name, "early")]),
                     "log_enrichment_late": float(met.loc[(name, "late")]),
                     "mean_cosine_late": float(an["mean_cosine"].mean()),
                     "isoscore_late": float(an["isoscore_star"].mean()),
                     "participation_late": float(an["participation_ratio"].mean()),
                     "eval_loss": r.evaluation.get("loss"), "unigram_loss": r.evaluation.get("unigram_loss")})
    return pd.DataFrame(rows)


def knob_runs(table, knob: str, kind: str | None = None):
    """The rows of :func:`run_table` on one knob (the skewed start is on both), optionally one kind."""
    if knob not in ("token", "language"):
        raise ValueError(f"knob={knob!r} is out of range: valid values are ('token', 'language').")
    g = table[table[f"on_{knob}"]]
    return g if kind is None else g[g["kind"] == kind]


def verdict_word(predicted: str, observed: str) -> str:
    """What an observed sign says of a predicted one (an interval containing 0 decides nothing):
    the table of the registration's ``[rule.verdict]`` (``data/preregistration/dose.toml``).

    >>> verdict_word("-", "-"), verdict_word("-", "0"), verdict_word("0", "0")
    ('as predicted', 'not detected', 'no detectable trend, as predicted')
    """
    if observed not in ("+", "-", "0") or predicted not in ("+", "-", "0"):
        return "not decided"
    return REGISTRATION["rule"]["verdict"][predicted][observed]


#: the sign symbol of each word of :func:`tanbias.stats.interval_word` (the predictions' notation)
SIGN_OF_WORD = {"positive": "+", "negative": "-", "indistinguishable": "0", "undecided": "n/a"}


def dose_response(table, metric: str, knob: str, kind: str, x: str = "log_collision",
                  alpha: float = 0.05) -> dict:
    """Seed-paired dose-response of one link along one knob, for one architecture.

    * slope: OLS of ``metric`` on ``x`` (default the measured ln collision
      probability of each run's training stream) with one intercept per seed
      (statsmodels), its ``1 - alpha`` interval and p-value; for the
      concentration link itself ``x`` is the design position;
    * ``end_to_end``: the slope times the mean change of ``x`` from the skewed
      start to the flattest level (the fitted change over the whole knob), with
      its interval;
    * monotonicity: Page's L test (scipy) across the levels in knob order, seeds
      as blocks, in the direction the slope's sign (or the prediction) names;
    * at the flattest level, paired by seed: the metric's change from the start
      (t-interval), and its own t-interval (for "attenuated, not absent");
    * ``observed`` sign (+, -, 0 from the slope's interval), ``predicted`` sign
      (:data:`~tanbias.lab.analysis.dose_design.PREDICTIONS`) and ``agrees``.
    """
    import statsmodels.formula.api as smf
    from scipy import stats

    from tanbias.lab.analysis.sweep import t_interval

    g = knob_runs(table, knob, kind).copy()
    xcol = f"x_{knob}" if metric == "log_collision" else x
    order = level_positions(knob)
    g["pos"] = g["level"].map(order)
    g = g.dropna(subset=[metric, xcol])
    # a seed with one level of this knob (only the skewed start, shared by both knobs, say)
    # says nothing about the slope: it is left out
    per_seed = g.groupby("seed")["level"].nunique()
    g = g[g["seed"].isin(per_seed[per_seed >= 2].index)]
    seeds = sorted(g["seed"].unique())
    out = {"kind": kind, "knob": knob, "metric": metric, "x": xcol, "n_runs": int(len(g)), "n_seeds": len(seeds),
           "levels": int(g["level"].nunique())}
    out["predicted"] = predicted_sign(metric, knob)
    start, flat = min(order, key=order.get), max(order, key=order.get)
    if len(g) < 3 or g[xcol].nunique() < 2 or not {start, flat} <= set(g["level"]):
        # an end-to-end change needs both ends of the knob
        nan = {k: np.nan for k in ("slope", "lo", "hi", "p", "df", "end_to_end", "end_to_end_lo", "end_to_end_hi",
                                   "dx", "page_L", "page_p", "change", "change_lo", "change_hi", "flat_mean",
                                   "flat_lo", "flat_hi")}
        return {**out, **nan, "observed": "n/a", "agrees": None, "verdict": "not decided", "page_direction": ""}
    if len(g) - len(seeds) - 1 < 1:                         # no residual degree of freedom
        return dose_response(table.iloc[:0], metric, knob, kind, x, alpha) | {"n_runs": int(len(g)),
                                                                              "n_seeds": len(seeds)}
    formula = f"{metric} ~ {xcol}" + (" + C(seed)" if len(seeds) > 1 else "")
    fit = smf.ols(formula, data=g).fit()
    lo, hi = fit.conf_int(alpha).loc[xcol]
    dx = g.loc[g["level"] == flat, xcol].mean() - g.loc[g["level"] == start, xcol].mean()
    slope = float(fit.params[xcol])
    e2e = sorted([slope * dx, lo * dx, hi * dx])
    out.update(slope=slope, lo=float(lo), hi=float(hi), p=float(fit.pvalues[xcol]), df=float(fit.df_resid),
               end_to_end=slope * dx, end_to_end_lo=e2e[0], end_to_end_hi=e2e[2], dx=float(dx))
    out["observed"] = SIGN_OF_WORD[interval_word(out["end_to_end_lo"], out["end_to_end_hi"])]
    # Page's trend test across the levels in knob order, seeds (with every level) as blocks: one-sided
    # in the predicted direction when there is one, else in the observed direction with p doubled
    wide = g.pivot_table(index="seed", columns="pos", values=metric).dropna()
    if len(wide) >= 2 and wide.shape[1] >= 3:
        pred = out["predicted"]
        up = pred == "+" if pred in ("+", "-") else out["end_to_end"] >= 0
        res = stats.page_trend_test(wide.to_numpy() if up else -wide.to_numpy())
        p = float(res.pvalue) if pred in ("+", "-") else min(1.0, 2 * float(res.pvalue))
        out.update(page_L=float(res.statistic), page_p=p, page_direction="+" if up else "-")
    else:
        out.update(page_L=np.nan, page_p=np.nan, page_direction="")
    paired = g.pivot_table(index="seed", columns="level", values=metric)
    if start in paired and flat in paired:
        d = (paired[flat] - paired[start]).dropna().to_numpy()
        m, dlo, dhi, n = t_interval(d)
        out.update(change=m, change_lo=dlo, change_hi=dhi)
        m2, flo, fhi, _ = t_interval(paired[flat].dropna().to_numpy())
        out.update(flat_mean=m2, flat_lo=flo, flat_hi=fhi)
    out["agrees"] = out["observed"] == out["predicted"] if out["predicted"] in ("+", "-", "0") else None
    out["verdict"] = verdict_word(out["predicted"], out["observed"])
    return out


def all_responses(table, metrics=tuple(LINKS)) -> "object":
    """:func:`dose_response` for every link, knob and architecture, as one table."""
    import pandas as pd

    return pd.DataFrame([dose_response(table, m, knob, kind) for m in metrics
                         for knob in ("token", "language") for kind in KINDS])


def architecture_interaction(table, metric: str = "log_enrichment_late", knob: str = "token",
                             alpha: float = 0.05) -> dict:
    """Does the dose-response slope differ between encoder and decoder?

    OLS ``metric ~ C(seed):C(kind) + x + x:is_decoder`` (one intercept per seed and
    architecture, one slope per architecture): the ``x:is_decoder`` coefficient,
    the decoder's slope minus the encoder's, with its interval and p-value.
    """
    import statsmodels.formula.api as smf

    g = knob_runs(table, knob).copy()
    if g["kind"].nunique() < 2 or len(g) < 6:
        return {"knob": knob, "metric": metric, "diff": np.nan, "lo": np.nan, "hi": np.nan, "p": np.nan}
    g["is_decoder"] = (g["kind"] == "decoder").astype(float)
    fit = smf.ols(f"{metric} ~ 0 + C(seed):C(kind) + log_collision + log_collision:is_decoder", data=g).fit()
    term = "log_collision:is_decoder"
    lo, hi = fit.conf_int(alpha).loc[term]
    return {"knob": knob, "metric": metric, "diff": float(fit.params[term]), "lo": float(lo), "hi": float(hi),
            "p": float(fit.pvalues[term])}


# --------------------------------------------------------------------------- "possibly adaptive"
def adaptive_frame(loaded: dict, window: int = 10) -> "object":
    """One row per (run, probe step): effective dimension against held-out loss.

    ``participation`` and ``isoscore``: mean over layers 1..L of the captured
    activations (``anisotropy.csv``); ``heldout_loss``: the held-out batches
    scored at that step (``probe_eval`` records, before the step's update);
    ``train_loss``: the mean training loss of the ``window`` steps up to and
    including it; ``gap = heldout_loss - train_loss`` (positive when the model
    does better on its training stream than on held-out text of the same
    distribution).
    """
    import pandas as pd

    from tanbias.lab.experiments import parse_dose_name

    rows = []
    for name, r in loaded.items():
        if r.anisotropy is None or r.probe_evals is None:
            continue
        kind, level, seed = parse_dose_name(name)
        an = r.anisotropy[r.anisotropy["layer"] >= 1].groupby("step")[["participation_ratio", "isoscore_star"]].mean()
        ev = r.probe_evals.set_index("step")["loss"]
        tr = r.metrics.set_index("step")["loss"]
        for step in an.index.intersection(ev.index):
            if step == 0:
                continue       # the untrained model: no training loss to compare with
            rows.append({"run": name, "kind": kind, "level": level, "seed": seed, "step": int(step),
                         "participation": float(an.loc[step, "participation_ratio"]),
                         "isoscore": float(an.loc[step, "isoscore_star"]),
                         "heldout_loss": float(ev.loc[step]),
                         "train_loss": float(tr.loc[max(0, step - window + 1):step].mean())})
    df = pd.DataFrame(rows)
    if len(df):
        df["gap"] = df["heldout_loss"] - df["train_loss"]
    return df


def adaptive_association(frame, y: str = "heldout_loss", x: str = "participation", alpha: float = 0.05) -> dict:
    """Association of ``y`` with ``x`` within a (kind, level, step): across seeds only.

    OLS ``y ~ x + C(kind):C(level):C(step)``: every architecture, level and step
    has its own mean, so the knob's own effect (and training progress) is
    absorbed and ``x``'s coefficient is the within-cell association across seeds.
    Also the pooled coefficient without those intercepts (what a naive
    across-everything correlation would report) for contrast.
    """
    import statsmodels.formula.api as smf

    cells = frame.groupby(["kind", "level", "step"]).ngroups if len(frame) else 0
    if len(frame) < 10 or len(frame) - cells - 1 < 2:      # too few seeds per cell to see anything within it
        return {"y": y, "x": x, "within": np.nan, "lo": np.nan, "hi": np.nan, "p": np.nan, "pooled": np.nan,
                "n": int(len(frame))}
    sd_x = frame[x].std()
    f = frame.assign(xs=(frame[x] - frame[x].mean()) / sd_x)
    within = smf.ols(f"{y} ~ xs + C(kind):C(level):C(step)", data=f).fit()
    pooled = smf.ols(f"{y} ~ xs", data=f).fit()
    lo, hi = within.conf_int(alpha).loc["xs"]
    return {"y": y, "x": x, "within": float(within.params["xs"]), "lo": float(lo), "hi": float(hi),
            "p": float(within.pvalues["xs"]), "pooled": float(pooled.params["xs"]),
            "pooled_lo": float(pooled.conf_int(alpha).loc["xs"][0]),
            "pooled_hi": float(pooled.conf_int(alpha).loc["xs"][1]), "n": int(len(f)), "sd_x": float(sd_x)}


def verdict_table(responses) -> "object":
    """The predictions against what was measured: one row per link, knob and architecture."""
    cols = ["metric", "knob", "kind", "n_seeds", "levels", "predicted", "observed", "verdict", "end_to_end",
            "end_to_end_lo", "end_to_end_hi", "page_p"]
    return responses[[c for c in cols if c in responses]].copy()


@dataclass
class DoseAnalysis:
    """Chapter 10's tables, computed once (:func:`analyse_dose`)."""
    runs: dict            # {name: RunData}, complete dose runs
    table: object         # run_table
    responses: object     # all_responses
    interaction: dict     # {knob: architecture_interaction on late enrichment}
    adaptive: object      # adaptive_frame
    association: dict     # {"loss": ..., "gap": ..., "loss_iso": ...} adaptive_association results


def analyse_dose(loaded: dict | None = None) -> DoseAnalysis:
    """Load the committed dose runs (if not given) and compute every statistic of chapter 10."""
    loaded = load_dose() if loaded is None else loaded
    table = run_table(loaded)
    frame = adaptive_frame(loaded)
    return DoseAnalysis(
        runs=loaded, table=table, responses=all_responses(table),
        interaction={k: architecture_interaction(table, knob=k) for k in ("token", "language")},
        adaptive=frame,
        association={"loss": adaptive_association(frame, "heldout_loss", "participation"),
                     "gap": adaptive_association(frame, "gap", "participation"),
                     "loss_iso": adaptive_association(frame, "heldout_loss", "isoscore")})


def measured_concentration(table, expected) -> "object":
    """Each level's collision probability as measured in the runs' streams (mean over runs) and as expected."""
    m = table.groupby("level").agg(runs=("run", "count"), collision=("collision", "mean"),
                                   effective_types=("effective_types", "mean"), top_share=("top_share", "mean"))
    e = expected.set_index("level")[["collision"]].rename(columns={"collision": "expected"})
    out = e.join(m, how="left").reset_index()
    return out[["level", "runs", "expected", "collision", "effective_types", "top_share"]]
