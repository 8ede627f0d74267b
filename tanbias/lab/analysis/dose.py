"""The dose experiment's runs, measured: the chain's links per run and their dose-response (chapter 10).

* :func:`run_status` — the committed dose runs per cell
  (:func:`tanbias.lab.analysis.registered.load` loads them);
* :func:`run_table` — one row per run: the knob's level and every link of the
  chain (concentration, η_g of the frequent types, enrichment, anisotropy);
* :func:`dose_response`, :func:`all_responses`, :func:`architecture_interaction`
  — seed-paired regressions of each link on the measured concentration, with
  Page's trend test and the paired flattest-versus-start change;
* :func:`adaptive_frame`, :func:`adaptive_association` — "possibly adaptive":
  effective dimension against held-out loss within a level and step;
* :func:`analyse_dose` — every table at once (:class:`DoseAnalysis`).

The predictions these are judged against are :mod:`tanbias.lab.analysis.dose_design`;
an interval's sign is :func:`tanbias.stats.interval_word`; Holm, the t interval, the learning
check and the matched-progress reading are :mod:`tanbias.lab.analysis.registered`'s.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from tanbias.lab import runs
from tanbias.lab.analysis import registered
from tanbias.lab.analysis.tables import run_metrics, tokens_table
from tanbias.lab.analysis.dose_design import LINKS, REGISTRATION, level_positions, predicted_sign
from tanbias.lab.analysis.registered import (detectable_ratio, holm, learning, load, power_at, progress_word,
                                             registration, t_interval)
from tanbias.lab.config import EARLY_FRAC, KINDS, N_SPECIAL
from tanbias.lab.experiments import DOSE, DOSE_KNOBS, DOSE_LEVELS, dose_config
from tanbias.lab.tokenizer import load_tokenizer
from tanbias.stats import interval_word
from tanbias.theory.alignment import frequency_buckets
from tanbias.theory.frequency import concentration

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["POSTHOC", "FAMILY", "run_status", "reference_buckets", "run_table", "knob_runs",
           "SIGN_OF_WORD", "verdict_word", "dose_response", "apply_multiplicity", "all_responses",
           "architecture_interaction", "knob_comparison", "knob_comparisons", "learning_table", "realised_power",
           "adaptive_frame", "ADAPTIVE_CELL", "within_cell_sd", "adaptive_association", "verdict_table",
           "DoseAnalysis", "analyse_dose", "measured_concentration"]

#: the rules added after the dose runs were seen (``data/preregistration/dose-posthoc.toml``, dated
#: 2026-12-02; not pre-registered): Holm across the verdict table, the training-progress check,
#: "weaker under balancing" with anisotropy, the language-knob comparison, the clustered "possibly
#: adaptive", the realised power
POSTHOC: dict = registration(DOSE, posthoc=True)
#: Holm's family of the verdict table (``[multiplicity]``): every reading x knob x architecture
FAMILY = len(LINKS) * len(DOSE_KNOBS) * len(KINDS)


def run_status(runs_dir=None) -> pd.DataFrame:
    """Which dose runs are committed: one row per (kind, level) with the seeds complete
    (:func:`tanbias.lab.analysis.registered.run_status`, counted per cell)."""
    df = registered.run_status(DOSE, runs_dir)
    df.insert(2, "knob", ["+".join(DOSE_LEVELS[lv]["knobs"]) for lv in df["level"]])
    return (df.groupby(["kind", "knob", "level"], sort=False)
            .agg(**{"runs complete": ("committed", "sum"), "runs planned": ("seed", "count")}).reset_index())


# --------------------------------------------------------------------------- the runs, measured
def reference_buckets(kind: str = "decoder", n_buckets: int = 3) -> np.ndarray:
    """Frequency bucket of every token id at the *skewed start* (expected stream frequencies).

    Fixed across levels, so link 1 follows the same types as the knob makes them
    rarer: bucket 0 = the types that are frequent before any flattening.
    """
    from tanbias.lab.data import Stream

    f = Stream.from_config(dose_config(kind, "skewed", 0), load_tokenizer()).frequencies
    return frequency_buckets(f * 1e9, n_buckets, n_special=N_SPECIAL)


def run_table(loaded: dict, buckets=None) -> pd.DataFrame:
    """One row per dose run: the knob's level and every link of the chain.

    Columns: ``run, kind, level, seed, on_token, on_language`` (the level lies on
    that knob), ``x_token``, ``x_language``; link 0 from the run's own training
    counts: ``collision``, ``log_collision``, ``effective_types``, ``top_share``;
    link 1 on the common held-out text at the last layer: ``log_eta_q1 .. q3``
    (occurrence-weighted mean t² of fixed buckets: by default those of the summed
    training counts of the skewed-start runs, else :func:`reference_buckets`),
    ``log_eta_all``; link 2: ``log_enrichment_early``, ``log_enrichment_late``
    (frozen proxy, all tokens, mean over layers, :func:`tanbias.lab.analysis.tables.run_metrics`);
    link 3 at the last probe step, mean over layers 1..L: ``mean_cosine_late``,
    ``isoscore_late``, ``participation_late``; how much the run learned, from its final
    evaluation (8 held-out batches of its own seed's validation stream): ``eval_loss``,
    ``unigram_loss`` (an add-1/2 unigram model of its training counts on the same tokens),
    ``gain`` (``unigram_loss - eval_loss``, nats per scored token), ``accuracy`` and
    ``unigram_accuracy`` (top-1 on the scored positions).
    """
    import pandas as pd

    if not loaded:
        raise ValueError("no complete dose run is committed yet: run `make dose` (or python -m tanbias.lab "
                         "dose --jobs 2 --commit) first.")
    if buckets is None:
        start = [np.asarray(r.token_counts, float) for n, r in loaded.items() if DOSE.parse(n)[1] == "skewed"]
        buckets = (frequency_buckets(np.sum(start, axis=0), 3, n_special=N_SPECIAL) if start
                   else reference_buckets())
    buckets = np.asarray(buckets)
    met = run_metrics(loaded)
    met = met[(met["layer"] == "mean") & (met["bucket"] == "all") & (met["proxy"] == "frozen")]
    met = met.set_index(["run", "phase"])["log_enrichment"]
    pos_t, pos_l = level_positions("token"), level_positions("language")
    rows = []
    for name, r in loaded.items():
        kind, level, seed = DOSE.parse(name)
        c = concentration(np.asarray(r.token_counts, float)[N_SPECIAL:])
        tok = tokens_table({name: r})         # t freed of its count bias
        last = int(tok["layer"].max())
        tl = tok[tok["layer"] == last]
        b = buckets[tl["token_id"].to_numpy()]
        w = tl["count_text"].to_numpy(float)
        t2 = tl["t"].to_numpy(float) ** 2
        eta = {f"log_eta_q{i + 1}": float(np.log(np.sum((w * t2)[b == i]) / np.sum(w[b == i])))
               for i in range(int(buckets.max()) + 1) if np.any(b == i)}
        an = r.anisotropy
        an = an[(an["step"] == an["step"].max()) & (an["layer"] >= 1) & (an["positions"] == "all")]
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
                     **learning(r.evaluation)})
    return pd.DataFrame(rows)


def knob_runs(table, knob: str, kind: str | None = None):
    """The rows of :func:`run_table` on one knob (the skewed start is on both), optionally one kind.
    Another experiment's table with an ``on_<knob>`` column (the aliasing knob's) reads the same way."""
    if knob not in ("token", "language") and f"on_{knob}" not in table:
        raise ValueError(f"knob={knob!r} is out of range: valid values are ('token', 'language') or a knob "
                         "whose table has an on_<knob> column.")
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


#: the columns a dose-response row has (NaN where it cannot be computed)
_RESPONSE_NUMBERS = ("slope", "lo", "hi", "p", "df", "end_to_end", "end_to_end_lo", "end_to_end_hi", "dx",
                     "page_L", "page_p", "change", "change_lo", "change_hi", "flat_mean", "flat_lo", "flat_hi",
                     "resid_sd", "seed_F", "seed_p", "lof_F", "lof_p", "progress_end_to_end", "progress_lo",
                     "progress_hi", "progress_p", "x_gain_corr")


def dose_response(table, metric: str, knob: str, kind: str, x: str = "log_collision",
                  alpha: float = REGISTRATION["rule"]["alpha"], positions: dict | None = None,
                  predicted: str | None = None) -> dict:
    """Seed-paired dose-response of one link along one knob, for one architecture.

    The registered test (``data/preregistration/dose.toml``):

    * slope: OLS of ``metric`` on ``x`` (default the measured ln collision
      probability of each run's training stream) with one intercept per seed
      (statsmodels), its ``1 - alpha`` interval and p-value; for the
      concentration link itself ``x`` is the design position;
    * ``end_to_end``: the slope times the mean change of ``x`` from the skewed
      start to the flattest level (the fitted change over the whole knob), with
      its interval; ``observed`` sign (+, -, 0 from that interval, unadjusted),
      ``predicted`` sign (:data:`~tanbias.lab.analysis.dose_design.PREDICTIONS`),
      ``agrees`` and ``verdict`` (:func:`verdict_word`); :func:`apply_multiplicity`
      reads them again at Holm-adjusted p.

    Secondary contrasts, shown beside the verdict and never changing it:

    * monotonicity: Page's L test (scipy) across the levels in knob order, seeds
      as blocks, in the direction the prediction (or the slope's sign) names;
    * lack of fit (``lof_F``, ``lof_p``): one mean per level against the line, both
      with seed intercepts (statsmodels ``anova_lm``); the line is fitted on each
      level's mean ``x``, so that it is nested in the level means;
    * at the flattest level, paired by seed: the metric's change from the start
      (t-interval), and its own t-interval (for "attenuated, not absent").

    Another experiment's knob (the aliasing knob, :mod:`tanbias.lab.analysis.alias`) passes its
    own level ``positions`` (level -> x in [0, 1]) and ``predicted`` sign; its table has the
    columns ``on_<knob>`` and ``x_<knob>``.

    Checks of the test (the rules added after the dose runs, ``dose-posthoc.toml``): ``resid_sd`` (the realised
    residual SD), ``seed_F``/``seed_p`` (do the seed intercepts explain anything: F test
    against the line without them), and the training-progress ANCOVA: the same
    regression with the run's gain over unigram as a covariate, its end-to-end change
    at matched gain (``progress_end_to_end``, ``_lo``, ``_hi``, ``progress_p``) and the
    correlation of ``x`` with the gain among the runs (``x_gain_corr``).
    """
    import statsmodels.formula.api as smf
    from scipy import stats
    from statsmodels.stats.anova import anova_lm

    g = knob_runs(table, knob, kind).copy()
    xcol = f"x_{knob}" if metric == "log_collision" else x
    order = level_positions(knob) if positions is None else dict(positions)
    g["pos"] = g["level"].map(order)
    g = g.dropna(subset=[metric, xcol])
    # a seed with one level of this knob (only the skewed start, shared by both knobs, say)
    # says nothing about the slope: it is left out
    per_seed = g.groupby("seed")["level"].nunique()
    g = g[g["seed"].isin(per_seed[per_seed >= 2].index)]
    seeds = sorted(g["seed"].unique())
    out = {"kind": kind, "knob": knob, "metric": metric, "x": xcol, "n_runs": int(len(g)), "n_seeds": len(seeds),
           "levels": int(g["level"].nunique())}
    out["predicted"] = predicted_sign(metric, knob) if predicted is None else predicted
    start, flat = min(order, key=order.get), max(order, key=order.get)
    if len(g) < 3 or g[xcol].nunique() < 2 or not {start, flat} <= set(g["level"]):
        # an end-to-end change needs both ends of the knob
        nan = dict.fromkeys(_RESPONSE_NUMBERS, np.nan)
        return {**out, **nan, "observed": "n/a", "agrees": None, "verdict": "not decided", "page_direction": ""}
    if len(g) - len(seeds) - 1 < 1:                         # no residual degree of freedom
        return dose_response(table.iloc[:0], metric, knob, kind, x, alpha, positions, predicted) | {
            "n_runs": int(len(g)), "n_seeds": len(seeds)}
    seed_term = " + C(seed)" if len(seeds) > 1 else ""
    fit = smf.ols(f"{metric} ~ {xcol}{seed_term}", data=g).fit()
    lo, hi = fit.conf_int(alpha).loc[xcol]
    dx = g.loc[g["level"] == flat, xcol].mean() - g.loc[g["level"] == start, xcol].mean()
    slope = float(fit.params[xcol])
    e2e = sorted([slope * dx, lo * dx, hi * dx])
    out.update(slope=slope, lo=float(lo), hi=float(hi), p=float(fit.pvalues[xcol]), df=float(fit.df_resid),
               end_to_end=slope * dx, end_to_end_lo=e2e[0], end_to_end_hi=e2e[2], dx=float(dx),
               resid_sd=float(np.sqrt(fit.mse_resid)))
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
        m, dlo, dhi, _ = t_interval(d)
        out.update(change=m, change_lo=dlo, change_hi=dhi)
        m2, flo, fhi, _ = t_interval(paired[flat].dropna().to_numpy())
        out.update(flat_mean=m2, flat_lo=flo, flat_hi=fhi)
    # do the seed intercepts explain anything? (F test against the line without them)
    out.update(seed_F=np.nan, seed_p=np.nan)
    if seed_term:
        a = anova_lm(smf.ols(f"{metric} ~ {xcol}", data=g).fit(), fit)
        out.update(seed_F=float(a["F"].iloc[1]), seed_p=float(a["Pr(>F)"].iloc[1]))
    # lack of fit: the level means against the line in each level's mean x (nested in them)
    out.update(lof_F=np.nan, lof_p=np.nan)
    g["x_level"] = g.groupby("level")[xcol].transform("mean")
    levels = g["level"].nunique()
    if levels >= 3 and len(g) - len(seeds) - levels + 1 >= 1:
        line = smf.ols(f"{metric} ~ x_level{seed_term}", data=g).fit()
        means = smf.ols(f"{metric} ~ C(level){seed_term}", data=g).fit()
        a = anova_lm(line, means)
        out.update(lof_F=float(a["F"].iloc[1]), lof_p=float(a["Pr(>F)"].iloc[1]))
    # training progress: the same regression at matched gain over unigram (an ANCOVA)
    out.update(progress_end_to_end=np.nan, progress_lo=np.nan, progress_hi=np.nan, progress_p=np.nan,
               x_gain_corr=np.nan)
    if metric != "log_collision" and "gain" in g and g["gain"].notna().all() and len(g) - len(seeds) - 2 >= 1:
        pf = smf.ols(f"{metric} ~ {xcol} + gain{seed_term}", data=g).fit()
        plo, phi = pf.conf_int(alpha).loc[xcol]
        pe = sorted([plo * dx, phi * dx])
        out.update(progress_end_to_end=float(pf.params[xcol] * dx), progress_lo=pe[0], progress_hi=pe[1],
                   progress_p=float(pf.pvalues[xcol]), x_gain_corr=float(np.corrcoef(g[xcol], g["gain"])[0, 1]))
    out["agrees"] = out["observed"] == out["predicted"] if out["predicted"] in ("+", "-", "0") else None
    out["verdict"] = verdict_word(out["predicted"], out["observed"])
    return out


def apply_multiplicity(responses, rules: dict | None = None, family: int | None = None):
    """The verdict table read at Holm-adjusted p (``dose-posthoc.toml`` ``[multiplicity]``, the rule
    added after the dose runs).

    Holm over every row (:func:`tanbias.lab.analysis.registered.holm`: a row whose p cannot
    be computed stays in the family with p = 1 and reads ``"n/a"``; ``family``, the registered
    size, is checked when given); a row's ``observed`` sign is the end-to-end change's sign
    where the adjusted ``p_holm`` is below alpha, else ``"0"``, and its ``verdict`` is the
    registered word of (predicted, observed). The unadjusted reading stays in
    ``observed_unadjusted`` and ``verdict_unadjusted``. ``progress_survives``: whether the
    observed sign survives the training-progress ANCOVA (``[progress]``,
    :func:`tanbias.lab.analysis.registered.progress_word`; None where there is no sign to
    survive or no ANCOVA).

    >>> import pandas as pd
    >>> r = pd.DataFrame({"p": [0.001, 0.02, 0.04], "end_to_end": [-1.0, 0.5, 0.2],
    ...                   "predicted": ["-", "0", "+"]})
    >>> apply_multiplicity(r)[["p_holm", "observed", "verdict"]].round(3).values.tolist()
    [[0.003, '-', 'as predicted'], [0.04, '+', 'a trend not predicted'], [0.04, '+', 'as predicted']]
    """
    rules = POSTHOC["multiplicity"] if rules is None else rules
    alpha = float(rules["alpha"])
    r = responses.copy()
    if "observed" in r:
        r["observed_unadjusted"], r["verdict_unadjusted"] = r["observed"], r["verdict"]
    ok = r["p"].notna().to_numpy()
    adj = holm(r["p"], family)
    r["p_holm"] = adj
    sign = np.where(r["end_to_end"].to_numpy(float) > 0, "+", "-")
    r["observed"] = [str(o) for o in np.where(~ok, "n/a", np.where(adj < alpha, sign, "0"))]
    r["verdict"] = [verdict_word(pred, obs) for pred, obs in zip(r["predicted"], r["observed"])]
    r["agrees"] = [o == pr if pr in ("+", "-", "0") and o != "n/a" else None
                   for o, pr in zip(r["observed"], r["predicted"])]
    if "progress_lo" in r:
        word = [progress_word(o, lo, hi) for o, lo, hi in zip(r["observed"], r["progress_lo"], r["progress_hi"])]
        r["progress_survives"] = [None if w == "undecided" else w == "survives" for w in word]
    return r


def all_responses(table, metrics=tuple(LINKS), adjust: bool = True) -> pd.DataFrame:
    """:func:`dose_response` for every link, knob and architecture, as one table, read at
    Holm-adjusted p over its rows (:func:`apply_multiplicity`; the registered :data:`FAMILY`
    with every link; ``adjust=False``: each row alone, as registered)."""
    import pandas as pd

    r = pd.DataFrame([dose_response(table, m, knob, kind) for m in metrics
                      for knob in ("token", "language") for kind in KINDS])
    return apply_multiplicity(r, family=FAMILY if tuple(metrics) == tuple(LINKS) else None) if adjust else r


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


def knob_comparison(table, metric: str = "log_enrichment_late", kind: str = "decoder",
                    alpha: float = REGISTRATION["rule"]["alpha"]) -> dict:
    """Does the language knob move ``metric`` more than the token knob's slope gives for its change of frequencies?

    One OLS over both knobs' runs of one architecture (``dose-posthoc.toml``
    ``[knob_comparison]``): ``metric ~ u_token + u_language + C(seed)``, where
    ``u_<knob>`` is a run's ln collision minus the skewed start's mean on its own
    knob and 0 on the other (the start is on both). ``dx`` is the language
    knob's change of ln collision (uniform minus skewed); ``language`` =
    ``b_language dx`` (the language knob's own end-to-end change), ``from_token`` =
    ``b_token dx`` (what the token knob's slope gives for so small a change), and
    ``excess = (b_language - b_token) dx`` with its ``1 - alpha`` interval and p
    (a t test of the contrast). Log metrics: exponentiate for ratios.
    """
    import statsmodels.formula.api as smf

    nan = {k: np.nan for k in ("language", "language_lo", "language_hi", "from_token", "excess", "excess_lo",
                               "excess_hi", "p", "dx")}
    g = table[table["kind"] == kind].copy()
    start = g["level"] == "skewed"
    if not start.any() or not g["on_token"].any() or not (g["on_language"] & ~start).any():
        return {"kind": kind, "metric": metric, **nan}
    u = g["log_collision"] - g.loc[start, "log_collision"].mean()
    g["u_token"] = np.where(g["on_token"] & ~start, u, 0.0)
    g["u_language"] = np.where(g["on_language"] & ~start, u, 0.0)
    flat = max(level_positions("language"), key=level_positions("language").get)
    dx = float(u[g["level"] == flat].mean())
    seeds = g["seed"].nunique()
    if len(g) - seeds - 2 < 1 or not np.isfinite(dx):
        return {"kind": kind, "metric": metric, **nan}
    fit = smf.ols(f"{metric} ~ u_token + u_language" + (" + C(seed)" if seeds > 1 else ""), data=g).fit()
    test = fit.t_test("u_language - u_token = 0")
    clo, chi = np.asarray(test.conf_int(alpha)).ravel()
    llo, lhi = fit.conf_int(alpha).loc["u_language"]
    ex, lang = sorted([clo * dx, chi * dx]), sorted([llo * dx, lhi * dx])
    return {"kind": kind, "metric": metric, "dx": dx,
            "language": float(fit.params["u_language"] * dx), "language_lo": lang[0], "language_hi": lang[1],
            "from_token": float(fit.params["u_token"] * dx),
            "excess": float(np.asarray(test.effect).ravel()[0] * dx), "excess_lo": ex[0], "excess_hi": ex[1],
            "p": float(np.asarray(test.pvalue).ravel()[0])}


def knob_comparisons(table, metric: str | None = None) -> pd.DataFrame:
    """:func:`knob_comparison` for both architectures, with Holm over the two (``p_holm``,
    :func:`tanbias.lab.analysis.registered.holm`)."""
    import pandas as pd

    rule = POSTHOC["knob_comparison"]
    metric = rule["reading"] if metric is None else metric
    df = pd.DataFrame([knob_comparison(table, metric, kind) for kind in KINDS])
    df["p_holm"] = holm(df["p"], family=len(KINDS))
    return df


# --------------------------------------------------------------------------- how much the runs learned
def learning_table(table) -> pd.DataFrame:
    """How much the runs of each (architecture, level) learned: mean and SD over seeds.

    Columns ``kind, level, knob, runs``, ``gain`` and ``gain_sd`` (unigram minus model
    held-out loss, nats), ``eval_loss``, ``unigram_loss``, ``accuracy``,
    ``unigram_accuracy``, in knob order (the start, the token knob, the language knob).
    """
    order = {lv: i for i, lv in enumerate(DOSE_LEVELS)}
    g = table.groupby(["kind", "level"], sort=False)
    out = g.agg(runs=("run", "count"), gain=("gain", "mean"), gain_sd=("gain", "std"),
                eval_loss=("eval_loss", "mean"), unigram_loss=("unigram_loss", "mean"),
                accuracy=("accuracy", "mean"), unigram_accuracy=("unigram_accuracy", "mean")).reset_index()
    out.insert(2, "knob", ["+".join(DOSE_LEVELS[lv]["knobs"]) for lv in out["level"]])
    out["_o"] = out["level"].map(order)
    return out.sort_values(["kind", "_o"]).drop(columns="_o").reset_index(drop=True)


# --------------------------------------------------------------------------- power at the realised noise
def realised_power(responses, power, metric: str = "log_enrichment_late", knob: str = "token",
                   target: float = registered.TARGET_RATIO) -> pd.DataFrame:
    """The design's power as planned and as realised (``dose-posthoc.toml`` ``[power]``).

    One row per architecture: the planned residual SD (chapter 8's 2x2, its df), the
    realised one (the registered regression's residual SD, its df), the detectable
    end-to-end ratio at 80 % power from each (:func:`~tanbias.lab.analysis.registered.detectable_ratio`),
    the power of the registered test for the design's ``target`` ratio at each SD
    (:func:`~tanbias.lab.analysis.registered.power_at`), the F test of the seed
    intercepts, and the measured end-to-end ratio with its interval.

    Parameters
    ----------
    responses : DataFrame
        :func:`all_responses`.
    power : DataFrame
        :func:`tanbias.lab.analysis.dose_design.power_analysis` (the planned figures).
    """
    import pandas as pd

    x = list(level_positions(knob).values())
    rows = []
    for kind in KINDS:
        r = responses[(responses["metric"] == metric) & (responses["knob"] == knob)
                      & (responses["kind"] == kind)].iloc[0]
        plan = power[(power["kind"] == kind) & power["chosen"]].iloc[0]
        n = int(r["n_seeds"]) if r["n_seeds"] >= 2 else int(plan["seeds"])
        sd = float(r["resid_sd"])
        ok = np.isfinite(sd) and sd > 0
        rows.append({"kind": kind, "planned_sd": float(plan["residual_sd"]), "planned_df": int(plan["sd_df"]),
                     "realised_sd": sd, "realised_df": float(r["df"]),
                     "planned_detectable": float(plan["detectable_ratio"]),
                     "realised_detectable": detectable_ratio(sd, n, x) if ok else np.nan,
                     "planned_power": power_at(target, float(plan["residual_sd"]), int(plan["seeds"]), x),
                     "realised_power": power_at(target, sd, n, x) if ok else np.nan,
                     "seed_p": float(r["seed_p"]), "ratio": float(np.exp(r["end_to_end"])),
                     "ratio_lo": float(np.exp(r["end_to_end_lo"])), "ratio_hi": float(np.exp(r["end_to_end_hi"]))})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- "possibly adaptive"
def adaptive_frame(loaded: dict, window: int = 10) -> pd.DataFrame:
    """One row per (run, probe step): effective dimension against held-out loss.

    ``participation`` and ``isoscore``: mean over layers 1..L of the captured
    activations (``anisotropy.csv``); ``heldout_loss``: the held-out batches
    scored at that step (``probe_eval`` records, before the step's update; in the
    committed runs one batch of the run's own seed's validation stream, scored
    twice: :meth:`tanbias.lab.data.Stream.probe_eval`); ``train_loss``: the mean
    training loss of the ``window`` steps up to and including it;
    ``gap = heldout_loss - train_loss`` (positive when the model does better on its
    training stream than on held-out text of the same distribution); ``frac``, the
    step over the run's steps.
    """
    import pandas as pd

    rows = []
    for name, r in loaded.items():
        if r.anisotropy is None or r.probe_evals is None:
            continue
        kind, level, seed = DOSE.parse(name)
        an = r.anisotropy[(r.anisotropy["layer"] >= 1) & (r.anisotropy["positions"] == "all")].groupby("step")[["participation_ratio", "isoscore_star"]].mean()
        ev = r.probe_evals.set_index("step")["loss"]
        tr = r.metrics.set_index("step")["loss"]
        for step in an.index.intersection(ev.index):
            if step == 0:
                continue       # the untrained model: no training loss to compare with
            rows.append({"run": name, "kind": kind, "level": level, "seed": seed, "step": int(step),
                         "frac": float(step / r.config.steps),
                         "participation": float(an.loc[step, "participation_ratio"]),
                         "isoscore": float(an.loc[step, "isoscore_star"]),
                         "heldout_loss": float(ev.loc[step]),
                         "train_loss": float(tr.loc[max(0, step - window + 1):step].mean())})
    df = pd.DataFrame(rows)
    if len(df):
        df["gap"] = df["heldout_loss"] - df["train_loss"]
    return df


#: the cells "possibly adaptive" compares within: one mean each
ADAPTIVE_CELL = ("kind", "level", "step")


def within_cell_sd(frame, x: str = "participation") -> float:
    """The pooled within-cell SD of ``x``: the root of its squared deviations from the
    (architecture, level, step) means over ``n - cells`` degrees of freedom.

    >>> import pandas as pd
    >>> f = pd.DataFrame({"kind": ["a"] * 4, "level": ["l"] * 4, "step": [1, 1, 2, 2], "participation": [1., 3., 10., 12.]})
    >>> round(within_cell_sd(f), 4)
    1.4142
    """
    cell = list(ADAPTIVE_CELL)
    dev = frame[x] - frame.groupby(cell)[x].transform("mean")
    dof = len(frame) - frame.groupby(cell).ngroups
    return float(np.sqrt((dev ** 2).sum() / dof)) if dof > 0 else float("nan")


def adaptive_association(frame, y: str = "heldout_loss", x: str = "participation",
                         alpha: float = REGISTRATION["rule"]["alpha"], phase: str = "all",
                         early_frac: float = EARLY_FRAC) -> dict:
    """Association of ``y`` with ``x`` within an (architecture, level, step) cell: across seeds only.

    ``dose-posthoc.toml`` ``[adaptive]`` (the rule added after the dose runs): ``x`` is put in units of its
    within-cell SD (:func:`within_cell_sd`, ``sd_within``); OLS
    ``y ~ xs + C(kind):C(level):C(step)`` gives every cell its own mean, so the knob's
    own effect and training progress are absorbed, and ``within`` is the association
    across seeds, per within-cell SD of ``x``, with its interval and p from errors
    clustered by run (statsmodels ``cov_type="cluster"``): the run, not the run-step,
    is the unit. Beside it:

    * ``naive_lo``, ``naive_hi``: the interval that treats every run-step as
      independent (what the registered rule read), and ``lag1``, the lag-1
      autocorrelation of the within-cell residuals along each run's steps;
    * ``per_run`` (``_lo``, ``_hi``, ``n_runs``): one value per run, the mean over its
      steps of the cell-centred ``y`` and ``xs``, regressed across runs with one mean
      per (architecture, level);
    * ``pooled`` (``_lo``, ``_hi``): the coefficient without the cell means, in the same
      unit; ``sd_pooled``, the SD of ``x`` over every run-step (the registered unit).

    ``phase``: ``"all"`` probe steps after 0, ``"early"`` (``0 < frac <= early_frac``)
    or ``"late"`` (after), each with its own within-cell SD.
    """
    import statsmodels.formula.api as smf

    if phase not in ("all", "early", "late"):
        raise ValueError(f"phase={phase!r} is out of range: valid values are ('all', 'early', 'late').")
    keys = ("within", "lo", "hi", "p", "naive_lo", "naive_hi", "lag1", "per_run", "per_run_lo", "per_run_hi",
            "n_runs", "pooled", "pooled_lo", "pooled_hi", "sd_within", "sd_pooled")
    if len(frame) and phase != "all":
        early = frame["frac"] <= early_frac
        frame = frame[early if phase == "early" else ~early]
    cell = list(ADAPTIVE_CELL)
    cells = frame.groupby(cell).ngroups if len(frame) else 0
    out = {"y": y, "x": x, "phase": phase, "n": int(len(frame))}
    if len(frame) < 10 or len(frame) - cells - 1 < 2 or frame["run"].nunique() < 3:
        return {**out, **dict.fromkeys(keys, np.nan)}       # too few seeds per cell to see anything within it
    sd_w = within_cell_sd(frame, x)
    f = frame.assign(xs=(frame[x] - frame[x].mean()) / sd_w).sort_values(["run", "step"])
    formula = f"{y} ~ xs + C(kind):C(level):C(step)"
    groups = f["run"].astype("category").cat.codes.to_numpy()
    naive = smf.ols(formula, data=f).fit()
    clustered = smf.ols(formula, data=f).fit(cov_type="cluster", cov_kwds={"groups": groups})
    lo, hi = clustered.conf_int(alpha).loc["xs"]
    nlo, nhi = naive.conf_int(alpha).loc["xs"]
    # lag-1 autocorrelation of the residuals along each run's steps
    res = naive.resid
    prev = res.groupby(f["run"]).shift(1)
    both = prev.notna()
    lag1 = float(np.corrcoef(res[both], prev[both])[0, 1]) if both.sum() > 2 else np.nan
    # one value per run
    yc = f[y] - f.groupby(cell)[y].transform("mean")
    xc = f["xs"] - f.groupby(cell)["xs"].transform("mean")
    per = (f.assign(yc=yc, xc=xc).groupby(["run", "kind", "level"], as_index=False)[["yc", "xc"]].mean())
    pr = smf.ols("yc ~ xc + C(kind):C(level)", data=per).fit()
    plo, phi = pr.conf_int(alpha).loc["xc"]
    pooled = smf.ols(f"{y} ~ xs", data=f).fit()
    qlo, qhi = pooled.conf_int(alpha).loc["xs"]
    return {**out, "within": float(clustered.params["xs"]), "lo": float(lo), "hi": float(hi),
            "p": float(clustered.pvalues["xs"]), "naive_lo": float(nlo), "naive_hi": float(nhi), "lag1": lag1,
            "per_run": float(pr.params["xc"]), "per_run_lo": float(plo), "per_run_hi": float(phi),
            "n_runs": int(len(per)), "pooled": float(pooled.params["xs"]), "pooled_lo": float(qlo),
            "pooled_hi": float(qhi), "sd_within": sd_w, "sd_pooled": float(frame[x].std())}


def verdict_table(responses) -> pd.DataFrame:
    """The predictions against what was measured: one row per link, knob and architecture.

    Each row's ``verdict`` is the registered test's word at Holm-adjusted p
    (``p_holm``; the raw ``p`` beside it); the secondary contrasts follow, named as
    what they are: Page's trend test, the lack-of-fit test, and the end-to-end change
    at matched gain over unigram (training progress) with whether the sign survives it.
    """
    cols = ["metric", "knob", "kind", "n_seeds", "predicted", "end_to_end", "end_to_end_lo", "end_to_end_hi",
            "p", "p_holm", "verdict", "page_p", "lof_p", "progress_end_to_end", "progress_lo", "progress_hi",
            "progress_survives"]
    return responses[[c for c in cols if c in responses]].copy()


@dataclass
class DoseAnalysis:
    """Chapter 10's tables, computed once (:func:`analyse_dose`)."""
    runs: dict            # {name: RunData}, complete dose runs
    table: pd.DataFrame                 # run_table
    responses: pd.DataFrame             # all_responses (read at Holm-adjusted p)
    interaction: dict     # {knob: architecture_interaction on late enrichment}
    adaptive: pd.DataFrame              # adaptive_frame
    association: dict     # {"loss", "gap", "loss_iso", "loss_early", "loss_late"}: adaptive_association
    knobs: pd.DataFrame                 # knob_comparisons (the language knob against the token knob's slope)


def analyse_dose(loaded: dict | None = None) -> DoseAnalysis:
    """Load the committed dose runs (if not given) and compute every statistic of chapter 10.

    On the committed runs (``loaded`` not given) the result is memoised on disk
    (:func:`tanbias.lab.runs.memoised`, keyed by every data file and the code): chapter 10,
    the closing page and the tests read one computation.
    """
    if loaded is None:
        return runs.memoised("analyse_dose", lambda: analyse_dose(load(DOSE)))
    table = run_table(loaded)
    frame = adaptive_frame(loaded)
    return DoseAnalysis(
        runs=loaded, table=table, responses=all_responses(table),
        interaction={k: architecture_interaction(table, knob=k) for k in ("token", "language")},
        adaptive=frame,
        association={"loss": adaptive_association(frame, "heldout_loss", "participation"),
                     "gap": adaptive_association(frame, "gap", "participation"),
                     "loss_iso": adaptive_association(frame, "heldout_loss", "isoscore"),
                     "loss_early": adaptive_association(frame, "heldout_loss", "participation", phase="early"),
                     "loss_late": adaptive_association(frame, "heldout_loss", "participation", phase="late")},
        knobs=knob_comparisons(table))


def measured_concentration(table, expected) -> pd.DataFrame:
    """Each level's collision probability as measured in the runs' streams (mean over runs) and as expected."""
    m = table.groupby("level").agg(runs=("run", "count"), collision=("collision", "mean"),
                                   effective_types=("effective_types", "mean"), top_share=("top_share", "mean"))
    e = expected.set_index("level")[["collision"]].rename(columns={"collision": "expected"})
    out = e.join(m, how="left").reset_index()
    return out[["level", "runs", "expected", "collision", "effective_types", "top_share"]]
