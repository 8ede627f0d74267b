"""The dose experiment's predictions and its power analysis (chapter 10).

Chapter 8's balancing barely moved token frequencies (+1.8 % effective
vocabulary), so its null result could not test the statement's scaling claim.
Chapter 10 turns two knobs, each at four levels, over a strongly skewed
language mixture (:data:`tanbias.lab.config.SKEWED_WEIGHTS`):

* the *language* knob: the mixture's temperature, natural (T = 1) to uniform —
  what EuroBERT-style balancing does;
* the *token* knob: subsampling occurrences of frequent types
  (:func:`tanbias.lab.data.keep_probabilities`), which moves the variable the
  mechanism names.

This module holds what was fixed *before* the runs: :data:`PREDICTIONS` (sign
and shape of each link, as the hypothesis states them) and
:func:`power_analysis` (the smallest end-to-end effect the design detects,
from the seed-to-seed variation of chapter 8's committed 2x2).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tanbias._checks import check_int, check_real
from tanbias.lab.config import DOSE_LEVELS, DOSE_SEEDS, KINDS, dose_names

__all__ = ["PREDICTIONS", "LINKS", "predicted_sign", "level_positions", "expected_concentration", "residual_sd", "detectable_ratio",
           "power_analysis", "predictions_table", "design_report", "run_status", "load_dose",
           "reference_buckets", "run_table", "knob_runs", "dose_response", "all_responses",
           "architecture_interaction", "verdict_word", "adaptive_frame", "adaptive_association", "verdict_table",
           "DoseAnalysis", "analyse_dose", "measured_concentration", "chapter10_report", "balancing_property",
           "adaptive_property"]

#: What the tangent-bias hypothesis predicts along each knob, written down before any dose run
#: existed (the git history of this file shows it). "falls" = concentration of frequencies, x,
#: goes from the skewed start (x = 0) to the flattest level (x = 1).
PREDICTIONS: dict[str, dict] = {
    "concentration": {
        "link": "knob -> frequency concentration (collision probability of the training stream)",
        "token": {"sign": "-", "shape": "monotone, >= 10x between the extremes (15x expected from the "
                                         "corpus' type frequencies)"},
        "language": {"sign": "-", "shape": "monotone but small: at most 1.1x between natural and uniform "
                                            "(expected 1.08x), since every language keeps its own head"},
    },
    "eta_frequent": {
        "link": "concentration -> eta_g of the most frequent bucket (t^2 on the common held-out text)",
        "token": {"sign": "+", "shape": "monotone: as frequencies flatten, the formerly frequent types are "
                                         "seen less and sampled more diffusely, so their eta_g rises"},
        "language": {"sign": "0", "shape": "no detectable change (the knob barely moves concentration)"},
    },
    "enrichment": {
        "link": "-> late enrichment of the frozen proxy against 20 controls (geometric mean over layers)",
        "token": {"sign": "-", "shape": "monotone decreasing; at the flattest level attenuated but still "
                                         "above 1 (not absent)"},
        "language": {"sign": "0", "shape": "no detectable change"},
    },
    "anisotropy": {
        "link": "-> anisotropy of the activations (mean cosine falls, IsoScore* rises)",
        "token": {"sign": "-", "shape": "monotone: flatter frequencies, more isotropic activations"},
        "language": {"sign": "0", "shape": "no detectable change"},
    },
    "architecture": {
        "link": "encoder (EuroBERT) vs decoder (Llama)",
        "token": {"sign": "same", "shape": "same sign in both; no prediction on the interaction"},
        "language": {"sign": "same", "shape": "same sign in both"},
    },
    "adaptive": {
        "link": "effective dimension (participation ratio) vs held-out loss, within a level and a step",
        "token": {"sign": "?", "shape": "the statement's 'possibly adaptive': if anisotropy helps, lower "
                                         "effective dimension goes with lower held-out loss (a two-sided test)"},
        "language": {"sign": "?", "shape": "as for the token knob"},
    },
}


#: The chain's measured links: run_table's column -> (PREDICTIONS key, label). Log scale for
#: ratios (collision, eta_g, enrichment); mean cosine and IsoScore* as they are.
LINKS: dict[str, tuple[str, str]] = {
    "log_collision": ("concentration", "ln collision probability of the training stream"),
    "log_eta_q1": ("eta_frequent", "ln η_g of the frequent bucket (last layer, common text)"),
    "log_enrichment_late": ("enrichment", "ln late enrichment (frozen proxy, mean over layers)"),
    "log_enrichment_early": ("enrichment", "ln early enrichment (frozen proxy, mean over layers)"),
    "mean_cosine_late": ("anisotropy", "mean cosine of the activations (last step, mean over layers)"),
    "isoscore_late": ("anisotropy", "IsoScore* of the activations (last step, mean over layers)"),
}


#: metrics that move against the link's named quantity (IsoScore* rises when anisotropy falls)
_OPPOSITE = {"isoscore_late"}


def predicted_sign(metric: str, knob: str) -> str:
    """The sign :data:`PREDICTIONS` gives a metric's change as the knob flattens frequencies.

    >>> predicted_sign("log_enrichment_late", "token"), predicted_sign("isoscore_late", "token")
    ('-', '+')
    """
    key = LINKS[metric][0] if metric in LINKS else metric
    sign = PREDICTIONS[key][knob]["sign"] if key in PREDICTIONS else "?"
    return {"+": "-", "-": "+"}.get(sign, sign) if metric in _OPPOSITE else sign


def level_positions(knob: str) -> dict[str, float]:
    """Each level of a knob at its design position ``x`` in [0, 1] (0 = skewed start, 1 = flattest).

    The token knob's levels are equally spaced on the log collision probability by
    construction; the language knob's are placed by their order.

    >>> level_positions("token")
    {'skewed': 0.0, 'b16': 0.3333333333333333, 'b37': 0.6666666666666666, 'b100': 1.0}
    """
    levels = {lv: v["order"] for lv, v in DOSE_LEVELS.items() if knob in v["knobs"]}
    top = max(levels.values())
    return {lv: o / top for lv, o in sorted(levels.items(), key=lambda kv: kv[1])}


def expected_concentration(kind: str = "decoder") -> "object":
    """Each level's expected frequency concentration, from the corpus alone (before any run).

    The training stream's expected type frequencies (:func:`tanbias.lab.data.stream_frequencies`)
    times the token knob's keep probabilities, then :func:`tanbias.frequency.concentration`.
    One row per level: ``level, knobs, x_token, x_language, collision, effective_types,
    top_share, kept`` (the share of occurrences the token knob keeps) and
    ``ratio`` (collision of the skewed start over the level's).
    """
    import pandas as pd

    from tanbias.frequency import concentration
    from tanbias.lab.config import N_SPECIAL, dose_config, validate_config
    from tanbias.lab.data import keep_probabilities, stream_frequencies
    from tanbias.lab.tokenizer import load_tokenizer

    tok = load_tokenizer()
    rows = []
    for level, spec in DOSE_LEVELS.items():
        cfg = validate_config(dose_config(kind, level, 0))
        f = stream_frequencies(cfg, tok)
        kept = f * keep_probabilities(f, cfg["flatten"], cfg["flatten_f0"]) if cfg["flatten"] > 0 else f
        c = concentration(kept[N_SPECIAL:])
        rows.append({"level": level, "knobs": "+".join(spec["knobs"]),
                     "x_token": level_positions("token").get(level, np.nan),
                     "x_language": level_positions("language").get(level, np.nan),
                     "collision": c["collision"], "effective_types": c["effective_types"],
                     "top_share": c["top_share"], "kept": float(kept.sum() / f.sum())})
    df = pd.DataFrame(rows)
    df["ratio"] = df.loc[df["level"] == "skewed", "collision"].iloc[0] / df["collision"]
    return df


def residual_sd(kind: str, phase: str = "late", loaded=None) -> dict:
    """Seed-to-seed noise of the log enrichment in chapter 8's 2x2, paired by seed.

    The residual standard deviation of the additive model ``seed + regime`` on the
    layer-averaged log enrichment (frozen proxy, all tokens) of one architecture:
    the noise a seed-paired dose-response regression has to see through.

    Returns
    -------
    dict
        ``sd``, ``df`` (its degrees of freedom), ``n_seeds``.
    """
    from tanbias.lab.analysis import sweep

    check_int("kind", KINDS.index(kind) if kind in KINDS else -1, lo=0,
              hint=f"kind must be one of {KINDS}.")
    loaded = sweep.load_sweep() if loaded is None else loaded
    m = sweep.run_metrics(loaded)
    m = m[(m["layer"] == "mean") & (m["bucket"] == "all") & (m["proxy"] == "frozen")
          & (m["phase"] == phase) & (m["kind"] == kind)]
    y = m.pivot_table(index="seed", columns="regime", values="log_enrichment").to_numpy(float)
    r = y - y.mean(axis=1, keepdims=True) - y.mean(axis=0, keepdims=True) + y.mean()
    df = (y.shape[0] - 1) * (y.shape[1] - 1)
    return {"sd": float(np.sqrt((r ** 2).sum() / df)), "df": int(df), "n_seeds": int(y.shape[0])}


def _power(effect: float, se: float, df: int, alpha: float) -> float:
    from scipy import stats

    crit = stats.t.ppf(1 - alpha / 2, df)
    nc = effect / se
    # the far tail: nct.cdf(-crit) is tiny (and NaN in scipy for large nc)
    lower = np.nan_to_num(stats.nct.cdf(-crit, df, nc), nan=0.0)
    return float(stats.nct.sf(crit, df, nc) + lower)


def detectable_ratio(sd: float, n_seeds: int, positions, power: float = 0.8, alpha: float = 0.05) -> float:
    """Smallest end-to-end ratio (flattest / start) a seed-paired regression detects with this power.

    The model is ``log y_sj = a_s + b x_j + e`` (a seed's own intercept ``a_s``,
    design positions ``x_j`` in [0, 1], noise sd ``sd``); ``exp(|b|)`` is the
    end-to-end ratio. The slope's standard error is ``sd / sqrt(n_seeds Σ(x_j - x̄)^2)``
    with ``n_seeds * n_levels - n_seeds - 1`` degrees of freedom, and the power of
    the two-sided t test at level ``alpha`` comes from the noncentral t.

    >>> r = detectable_ratio(0.086, 3, [0, 1/3, 2/3, 1])
    >>> 1.2 < r < 1.3
    True
    """
    from scipy.optimize import brentq

    sd = check_real("sd", sd, 0)
    n_seeds = check_int("n_seeds", n_seeds, lo=2)
    power = check_real("power", power, 0, 1)
    alpha = check_real("alpha", alpha, 0, 1)
    x = np.asarray(positions, float)
    sxx = float(((x - x.mean()) ** 2).sum())
    se = sd / np.sqrt(n_seeds * sxx)
    df = n_seeds * len(x) - n_seeds - 1
    b = brentq(lambda b: _power(b, se, df, alpha) - power, 1e-9, 15 * se)
    return float(np.exp(b))


def power_analysis(seeds=(2, 3, 4, 5), loaded=None, phase: str = "late") -> "object":
    """The design's power: detectable end-to-end ratio per architecture and number of seeds.

    Returns a DataFrame with columns ``kind, residual_sd, sd_df, seeds, detectable_ratio``
    (80 % power, two-sided α = 0.05, four levels at x = 0, 1/3, 2/3, 1) and
    ``chosen`` (the design's :data:`~tanbias.lab.config.DOSE_SEEDS`).
    """
    import pandas as pd

    from tanbias.lab.analysis import sweep

    loaded = sweep.load_sweep() if loaded is None else loaded
    x = list(level_positions("token").values())
    rows = []
    for kind in KINDS:
        r = residual_sd(kind, phase, loaded)
        for n in seeds:
            rows.append({"kind": kind, "residual_sd": r["sd"], "sd_df": r["df"], "seeds": int(n),
                         "detectable_ratio": detectable_ratio(r["sd"], n, x),
                         "chosen": int(n) == len(DOSE_SEEDS)})
    return pd.DataFrame(rows)


def predictions_table() -> "object":
    """:data:`PREDICTIONS` as a table: one row per link and knob (sign and shape)."""
    import pandas as pd

    return pd.DataFrame([{"link": p["link"], "knob": knob, "predicted sign": p[knob]["sign"],
                          "predicted shape": p[knob]["shape"]}
                         for p in PREDICTIONS.values() for knob in ("token", "language")])


def design_report(expected, power) -> dict:
    """The numbers chapter 10's design section quotes, from :func:`expected_concentration` and :func:`power_analysis`."""
    from tanbias.lab.config import SKEWED_WEIGHTS

    w = np.array(list(SKEWED_WEIGHTS.values()))
    share = w / w.sum()
    e = expected.set_index("level")
    chosen = power[power["chosen"]].set_index("kind")
    two = power[power["seeds"] == 2].set_index("kind")
    return {"share_en": float(share[0]), "share_pt": float(share[-1]), "share_span": float(share[0] / share[-1]),
            "token_span": float(e.loc["b100", "ratio"]), "language_span": float(e.loc["uniform", "ratio"]),
            "kept_flattest": float(e.loc["b100", "kept"]),
            "sd_decoder": float(chosen.loc["decoder", "residual_sd"]),
            "sd_encoder": float(chosen.loc["encoder", "residual_sd"]), "sd_df": int(chosen["sd_df"].iloc[0]),
            "detectable_decoder": float(chosen.loc["decoder", "detectable_ratio"]),
            "detectable_encoder": float(chosen.loc["encoder", "detectable_ratio"]),
            "detectable_decoder_2": float(two.loc["decoder", "detectable_ratio"]),
            "n_seeds": len(DOSE_SEEDS), "n_runs": len(dose_names())}


def run_status(runs_dir=None) -> "object":
    """Which dose runs are committed: one row per (kind, level) with the seeds complete."""
    import pandas as pd

    from tanbias.lab import runs
    from tanbias.lab.config import parse_dose_name

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
    from tanbias.lab.config import N_SPECIAL, dose_config, validate_config
    from tanbias.lab.data import stream_frequencies
    from tanbias.lab.tokenizer import load_tokenizer

    f = stream_frequencies(validate_config(dose_config(kind, "skewed", 0)), load_tokenizer())
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
    from tanbias.lab.config import N_SPECIAL, parse_dose_name

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
        tok = r.tokens
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
    """What an observed sign says of a predicted one (an interval containing 0 decides nothing).

    >>> verdict_word("-", "-"), verdict_word("-", "0"), verdict_word("0", "0")
    ('as predicted', 'not detected', 'no detectable trend, as predicted')
    """
    if observed not in ("+", "-", "0") or predicted not in ("+", "-", "0"):
        return "not decided"
    if predicted == "0":
        return "no detectable trend, as predicted" if observed == "0" else "a trend not predicted"
    return "as predicted" if observed == predicted else "not detected" if observed == "0" else \
        "against the prediction"


def _sign(lo: float, hi: float) -> str:
    return "+" if lo > 0 else "-" if hi < 0 else "0"


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
      (:data:`PREDICTIONS`) and ``agrees``.
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
    out["observed"] = _sign(out["end_to_end_lo"], out["end_to_end_hi"])
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

    from tanbias.lab.config import parse_dose_name

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


# --------------------------------------------------------------------------- the chapter's report
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


_SHORT = {"log_collision": "conc", "log_eta_q1": "eta", "log_enrichment_late": "enr",
          "log_enrichment_early": "enr_early", "mean_cosine_late": "cos", "isoscore_late": "iso"}


def chapter10_report(da: DoseAnalysis) -> dict:
    """Every number and verdict word chapter 10 quotes (glued as ``ch10_<key>``).

    For each link, knob and architecture (``<short>_<knob>_<kind>``, shorts
    ``conc, eta, enr, enr_early, cos, iso``): the fitted end-to-end change
    (a ratio for log metrics, a difference otherwise) with its 95 % interval,
    the observed direction word, whether it agrees with :data:`PREDICTIONS`,
    Page's p; for enrichment also the flattest level's value and the
    "attenuated, not absent" word. Plus the measured spans of the knobs, the
    architecture interaction and the "possibly adaptive" association.
    """
    from tanbias.lab.analysis.report import Word

    out: dict = {}
    t = da.table
    out["runs_done"] = int(len(t))
    out["n_runs"] = len(dose_names())
    out["seeds_min"] = int(t.groupby(["kind", "level"])["seed"].nunique().min())
    for knob, flat in (("token", "b100"), ("language", "uniform")):
        g = t[t["level"].isin(["skewed", flat])].groupby("level")["log_collision"].mean()
        out[f"span_{knob}"] = float(np.exp(g.get("skewed", np.nan) - g.get(flat, np.nan)))
    for _, r in da.responses.iterrows():
        key = f"{_SHORT[r['metric']]}_{r['knob']}_{r['kind']}"
        log = r["metric"].startswith("log_")
        f = np.exp if log else (lambda v: v)
        e2e = r.get("end_to_end", np.nan)
        out[key] = float(f(e2e)) if np.isfinite(e2e) else float("nan")
        out[f"{key}_lo"] = float(f(r.get("end_to_end_lo", np.nan)))
        out[f"{key}_hi"] = float(f(r.get("end_to_end_hi", np.nan)))
        out[f"{key}_p"] = float(r.get("page_p", np.nan))
        obs = r["observed"]
        out[f"{key}_word"] = Word({"+": "rises", "-": "falls", "0": "shows no detectable trend"}.get(obs, "n/a"))
        out[f"{key}_agrees"] = Word(r["verdict"])
        if _SHORT[r["metric"]] in ("enr", "enr_early"):
            out[f"{key}_flat"] = float(np.exp(r.get("flat_mean", np.nan)))
            out[f"{key}_flat_lo"] = float(np.exp(r.get("flat_lo", np.nan)))
            out[f"{key}_flat_hi"] = float(np.exp(r.get("flat_hi", np.nan)))
            out[f"{key}_change"] = float(np.exp(r.get("change", np.nan)))
            out[f"{key}_change_lo"] = float(np.exp(r.get("change_lo", np.nan)))
            out[f"{key}_change_hi"] = float(np.exp(r.get("change_hi", np.nan)))
            present = r.get("flat_lo", np.nan) > 0
            weaker = r.get("change_hi", np.nan) < 0
            out[f"{key}_attenuation"] = Word(
                "attenuated, not absent" if present and weaker else
                "present, not detectably attenuated" if present else
                "not shown to be present" if np.isfinite(r.get("flat_lo", np.nan)) else "not decided")
    for knob, res in da.interaction.items():
        out[f"inter_{knob}"] = res["diff"]
        out[f"inter_{knob}_lo"] = res["lo"]
        out[f"inter_{knob}_hi"] = res["hi"]
    out["balancing_verdict"] = Word(balancing_property(da.responses))
    out["adaptive_verdict"] = Word(adaptive_property(da.association))
    for name, res in da.association.items():
        for k in ("within", "lo", "hi", "p", "pooled", "n"):
            out[f"adapt_{name}_{k}"] = res.get(k, np.nan)
        lo, hi = res.get("lo", np.nan), res.get("hi", np.nan)
        out[f"adapt_{name}_word"] = Word(
            "not decided yet (too few seeds per cell)" if not (np.isfinite(lo) and np.isfinite(hi)) else
            "positive" if lo > 0 else "negative" if hi < 0 else "indistinguishable from 0")
    return out


def balancing_property(responses, metric: str = "log_enrichment_late") -> str:
    """The closing page's verdict on "weaker under balancing", from the direct knob's dose-response.

    "supported: attenuated, not absent" when both architectures' enrichment falls
    as predicted and stays present at the flattest level; "contradicted" when either
    moves against the prediction or vanishes; "not detected" when the intervals
    contain no trend; "not decided" with fewer than two seeds per level.
    """
    rows = responses[(responses["metric"] == metric) & (responses["knob"] == "token")]
    if rows.empty or (rows["n_seeds"] < 2).any() or rows["flat_lo"].isna().any():
        return "not decided yet (fewer than two seeds per level)"
    verdicts = set(rows["verdict"])
    absent = (rows["flat_lo"] <= 0).any()
    if "against the prediction" in verdicts or absent:
        return "contradicted" + (" (the alignment vanishes)" if absent else "")
    if verdicts == {"as predicted"} and (rows["change_hi"] < 0).all():
        return "supported: attenuated, not absent"
    if "as predicted" in verdicts:
        return "partly supported (one architecture)"
    return "not detected (no trend at the design's power)"


def adaptive_property(association: dict) -> str:
    """The closing page's verdict on "possibly adaptive", from the within-cell association."""
    res = association.get("loss", {})
    lo, hi = res.get("lo", np.nan), res.get("hi", np.nan)
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "untested (too few runs yet)"
    if lo > 0:
        return "supported, correlationally (fewer effective dimensions, lower held-out loss)"
    if hi < 0:
        return "contradicted, correlationally (fewer effective dimensions, higher held-out loss)"
    return "no association detected"
