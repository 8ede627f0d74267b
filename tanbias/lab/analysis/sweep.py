"""Statistics of committed training runs: chapter 7's runs and chapter 8's 2x2 sweep.

The paper compares EuroBERT (an encoder trained on language-balanced data)
with decoders trained on skewed data. That comparison confounds the
architecture/objective with the data regime. The sweep separates them: the
same tokenizer, size, seeds and number of training tokens in every cell; only
``kind`` (EuroBERT encoder with masked LM, or Llama decoder with causal LM) and
``regime`` (natural language mixture, or temperature-balanced sampling over
languages, :func:`tanbias.lab.corpus.mixture`) change.

This module

* loads committed runs (:func:`load_runs`) and checks the sweep
  (:func:`load_sweep`: every cell has the same seeds and the same training budget);
* defines the **layer-averaged enrichment** once (:func:`tanbias.lab.analysis.tables.mean_over_layers`):
  the geometric mean over layers, i.e. the mean of ``ln(enrichment)``
  (enrichment is a ratio, so its average is taken on the log scale); chapter
  7's :func:`run_summary`, chapter 8's :func:`tanbias.lab.analysis.tables.run_metrics` and :func:`timing`
  all use it;
* reduces each run's alignment table to early / late numbers per layer and
  frequency bucket (:func:`tanbias.lab.analysis.tables.run_metrics`), then to cell means with seed-level
  t-intervals (:func:`cell_summary`), and estimates the balancing effect within
  each architecture, the architecture effect within each regime and their
  interaction (the test of additivity), paired by seed (:func:`effects`);
* turns them into verdicts (:func:`balancing_verdict`, and the statement's
  properties :func:`imprinted_early_property`, :func:`balancing_property`);
* summarises the mechanism: the token-frequency distribution each regime feeds
  the model (:func:`frequency_profile`), each token's concentration radius
  ``t`` on one common held-out text (``tokens.csv``, written by
  :func:`tanbias.lab.analysis.radii.measure_radii`) and the implied ``eta_g``
  of each frequency bucket (:func:`eta_by_bucket`).

Seeds pair the cells: seed ``s`` gives the encoder and the decoder the same
initial weights and both regimes the same initialisation, so contrasts are taken
within a seed and their spread across seeds gives the interval (Student t with
``n_seeds - 1`` degrees of freedom). With 3 seeds the 95 % multiplier is 4.30:
intervals are wide, and the book reports them as they are.

Figures of these numbers: :mod:`tanbias.figures.runs` (chapter 7) and
:mod:`tanbias.figures.sweep` (chapter 8, closing page).
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from tanbias.errors import ParameterError
from tanbias.theory import alignment as al
from tanbias.theory.frequency import concentration
from tanbias.stats import interval_word
from tanbias.lab import runs
from tanbias.lab.analysis.registered import t_interval, t_multiplier
from tanbias.lab.analysis.tables import (add_log_enrichment, bucket_label, mean_over_layers, run_cell, run_metrics,
                                         tokens_table)
from tanbias.lab.config import EARLY_FRAC, KINDS, N_SPECIAL, REGIMES
from tanbias.lab.experiments import SWEEP

__all__ = ["DEFAULT_RUNS", "CONTRASTS", "load_runs", "committed_sweep_names", "load_sweep", "cells",
           "summarise", "summarise_columns", "alignment_frame", "run_summary", "timing", "cell_summary", "effects",
           "BALANCING_WORDS", "PROPERTY_WORDS", "balancing_verdict", "imprinted_early_property",
           "balancing_property", "frequency_profile",
           "rank_frequency", "eta_by_bucket", "weighted_quantile",
           "radius_correlations", "mechanism_summary", "loss_table"]

#: chapter 7's runs
DEFAULT_RUNS = ("encoder-natural-s0", "decoder-natural-s0")


def load_runs(names=DEFAULT_RUNS) -> dict:
    """``{name: RunData}`` of committed runs (checksums verified)."""
    return {n: runs.load_run(n) for n in names}


def cells() -> list[tuple[str, str]]:
    """The four cells ``(kind, regime)`` of the 2x2, encoder first."""
    return [(k, g) for k in KINDS for g in REGIMES]


# --------------------------------------------------------------------------- loading
def committed_sweep_names(runs_dir=None) -> list[str]:
    """Names of the committed runs that belong to the sweep (``kind-regime-sSEED``)."""
    return [n for n in runs.list_runs(runs_dir) if SWEEP.matches(n)]


def load_sweep(names=None, runs_dir=None, complete: bool = True) -> dict:
    """Load the sweep's runs (checksums verified) and check that the cells are comparable.

    Parameters
    ----------
    names : list of str, optional
        Run names or folders; default every sweep run under ``runs_dir``.
    complete : bool
        Require all four cells with the same seeds.

    Returns
    -------
    dict
        ``{name: RunData}``.

    Raises
    ------
    ParameterError
        Cells with different seeds, or runs that differ in anything but kind,
        regime and seed (steps, size, learning rate, probe settings, ...).
    CorruptFileError
        A run file is missing or altered (names it and the regenerating command).
    """
    if names is None:
        d = Path(runs_dir) if runs_dir is not None else runs.RUNS_DIR
        names = [str(d / n) for n in committed_sweep_names(d)]
    loaded = {}
    for n in names:
        r = runs.load_run(n)
        loaded[r.name] = r
    if not loaded:
        raise ParameterError("names=[] is out of range: valid range is at least one sweep run. "
                             "Train them with `make sweep`.")
    seeds = {}
    ref_name, ref = next(iter(loaded.items()))
    strip = ("name", "kind", "regime", "seed")
    budget = [f.name for f in dataclasses.fields(ref.config) if f.compare and f.name not in strip]
    for name, r in loaded.items():
        kind, regime, seed = SWEEP.parse(name)
        seeds.setdefault((kind, regime), set()).add(seed)
        diff = [k for k in budget if getattr(r.config, k) != getattr(ref.config, k)]
        if diff:
            raise ParameterError(f"run={name!r} differs from {ref_name!r} in {diff}: valid range is "
                                 "runs that differ only in kind, regime and seed (same budget).")
    if complete:
        four = cells()
        missing = [c for c in four if c not in seeds]
        if missing:
            raise ParameterError(f"cells={missing} have no run: valid range is all four cells "
                                 f"{four}. Train them with `make sweep`.")
        first = seeds[four[0]]
        for c in four[1:]:
            if seeds[c] != first:
                raise ParameterError(f"seeds of {c}={sorted(seeds[c])} differ from {four[0]}="
                                     f"{sorted(first)}: valid range is the same seeds in every cell.")
    return loaded


# --------------------------------------------------------------------------- statistics
def summarise_columns(df, keys, cols):
    """:func:`summarise` of several columns, stacked with a ``metric`` column."""
    import pandas as pd

    frames = []
    for c in cols:
        out = summarise(df, keys, c)
        out.insert(len(keys), "metric", c)
        frames.append(out)
    return pd.concat(frames, ignore_index=True)[[*keys, "metric", "mean", "lo", "hi", "n"]]


def summarise(df, keys, col):
    """Vectorised :func:`~tanbias.lab.analysis.registered.t_interval` of ``df[col]`` per group: columns
    mean, lo, hi, n."""
    g = df.assign(_x=df[col].astype(float)).dropna(subset=["_x"]).groupby(keys, sort=False)["_x"]
    out = g.agg(mean="mean", sd=lambda v: v.std(ddof=1), n="count").reset_index()
    mult = out["n"].map(lambda k: t_multiplier(int(k), 0.95) if k > 1 else np.nan)
    h = mult * out["sd"] / np.sqrt(out["n"])
    out["lo"], out["hi"] = out["mean"] - h, out["mean"] + h
    return out.drop(columns="sd")


def alignment_frame(loaded: dict, proxy: str):
    """All runs' alignment rows for one proxy, with cell columns, ``log_enrichment`` and
    ``excess_iso``, plus rows ``layer == "mean"`` (:func:`tanbias.lab.analysis.tables.mean_over_layers` per run, step, bucket)."""
    import pandas as pd

    frames = []
    for name, r in loaded.items():
        a = add_log_enrichment(r.alignment[r.alignment["proxy"] == proxy])
        a["kind"], a["regime"], a["seed"] = run_cell(r)
        frames.append(a)
    a = pd.concat(frames, ignore_index=True)
    mean = mean_over_layers(a, ["run", "kind", "regime", "seed", "step", "bucket"])
    mean["layer"] = "mean"
    return pd.concat([a.astype({"layer": object}), mean], ignore_index=True)


def run_summary(loaded: dict, early_frac: float = EARLY_FRAC):
    """One row per (run, proxy): enrichment and excess ΔIsoScore* early vs late, sanity numbers (ch 7).

    ``enrichment_init / _early / _late`` are the layer-averaged enrichment of
    :func:`tanbias.lab.analysis.tables.run_metrics` (geometric mean over layers, bucket ``all``): step 0,
    the probe steps with ``0 < frac <= early_frac``, the last probe step.
    ``excess_iso_early / _late`` average the rows of those steps and all layers.
    """
    import pandas as pd

    met = run_metrics(loaded, early_frac)
    met = met[(met["layer"] == "mean") & (met["bucket"] == "all")].set_index(["run", "proxy", "phase"])
    rows = []
    for name, r in loaded.items():
        a = add_log_enrichment(r.alignment[r.alignment["bucket"] == "all"])
        last = a["step"].max()
        corr = r.radius_corr
        for proxy, g in a.groupby("proxy", sort=False):
            early = g[(g["frac"] <= early_frac) & (g["step"] > 0)]
            late = g[g["step"] == last]
            enr = {ph: float(np.exp(met.loc[(name, proxy, ph), "log_enrichment"]))
                   if (name, proxy, ph) in met.index else float("nan")     # e.g. no local rows yet
                   for ph in ("init", "early", "late")}
            rows.append({
                "run": name, "kind": r.config.kind, "proxy": proxy,
                "enrichment_init": enr["init"], "enrichment_early": enr["early"],
                "enrichment_late": enr["late"],
                "p_energy_late_max": late["p_energy"].max(),
                "excess_iso_early": early["excess_iso"].mean(),
                "excess_iso_late": late["excess_iso"].mean(),
                "p_iso_late_max": late["p_iso"].max(),
                "spearman_late": corr[corr["step"] == corr["step"].max()]["spearman"].mean(),
                "pearson_late": corr[corr["step"] == corr["step"].max()]["pearson"].mean(),
                "eval_loss": r.evaluation.get("loss"), "unigram_loss": r.evaluation.get("unigram_loss"),
                "eval_accuracy": r.evaluation.get("accuracy"),
                "train_seconds": r.summary.get("train_seconds"),
                "tokens_per_s": r.summary.get("tokens_per_s")})
    return pd.DataFrame(rows)


def timing(loaded: dict, proxy: str = "frozen", bucket: str = "all"):
    """When is the tangent enrichment strongest? One row per run.

    On the layer-averaged log enrichment (:func:`tanbias.lab.analysis.tables.mean_over_layers`, bucket
    ``bucket``) against the probe steps after step 0: ``peak_step`` and
    ``peak_frac`` (its fraction of training), ``log_peak``, ``log_late`` (last
    probe step), ``log_early_end`` (the last probe step inside the first
    :data:`~tanbias.lab.config.EARLY_FRAC` of training) and
    ``log_late_over_peak = log_late - log_peak`` (< 0: the effect weakens after
    its peak). "Imprinted early" in the statement's sense means the peak lies
    early and late training carries the level forward rather than raising it.
    """
    import pandas as pd

    rows = []
    for name, r in loaded.items():
        a = r.alignment
        a = add_log_enrichment(a[(a["bucket"] == bucket) & (a["proxy"] == proxy) & (a["step"] > 0)])
        curve = mean_over_layers(a, ["step"], ["log_enrichment"], sort=True).set_index("step")["log_enrichment"]
        frac = a.groupby("step")["frac"].first()
        early = curve[frac <= EARLY_FRAC]
        kind, regime, seed = run_cell(r)
        peak = int(curve.idxmax())
        rows.append({"run": name, "kind": kind, "regime": regime, "seed": seed, "peak_step": peak,
                     "peak_frac": float(frac.loc[peak]), "log_peak": float(curve.max()),
                     "log_late": float(curve.iloc[-1]),
                     "log_early_end": float(early.iloc[-1]) if len(early) else float("nan"),
                     "log_late_over_peak": float(curve.iloc[-1] - curve.max())})
    return pd.DataFrame(rows)


def cell_summary(metrics, columns=("log_enrichment", "excess_iso")):
    """Cell means with seed-level 95 % t-intervals.

    One row per (kind, regime, layer, bucket, proxy, phase, metric):
    ``mean, lo, hi, n`` (and, for log enrichment, ``ratio = exp(mean)`` with its
    interval ``ratio_lo, ratio_hi``).
    """
    keys = ["kind", "regime", "layer", "bucket", "proxy", "phase"]
    out = summarise_columns(metrics, keys, columns)
    log = out["metric"] == "log_enrichment"
    for c, r in (("mean", "ratio"), ("lo", "ratio_lo"), ("hi", "ratio_hi")):
        out[r] = np.exp(out[c]).where(log)
    return out


CONTRASTS = {
    # name: {(kind, regime): weight}
    "balancing | encoder": {("encoder", "balanced"): 1, ("encoder", "natural"): -1},
    "balancing | decoder": {("decoder", "balanced"): 1, ("decoder", "natural"): -1},
    "architecture | natural": {("decoder", "natural"): 1, ("encoder", "natural"): -1},
    "architecture | balanced": {("decoder", "balanced"): 1, ("encoder", "balanced"): -1},
    "interaction": {("decoder", "balanced"): 1, ("decoder", "natural"): -1,
                    ("encoder", "balanced"): -1, ("encoder", "natural"): 1},
}


def effects(metrics, columns=("log_enrichment", "excess_iso")):
    """Seed-paired contrasts between cells, with 95 % t-intervals.

    For each (layer, bucket, proxy, phase, metric) and each contrast of
    ``CONTRASTS``: the per-seed contrast (e.g. balancing within the
    encoder: ``m[encoder, balanced, s] - m[encoder, natural, s]``), then its
    mean and interval over seeds. ``interaction`` is the difference of the two
    balancing effects (equivalently of the two architecture effects): zero when
    the effects add up. For log enrichment, ``exp(mean)`` is the ratio of
    enrichments.
    """
    import pandas as pd

    keys = ["layer", "bucket", "proxy", "phase"]
    frames = []
    for col in columns:
        wide = metrics.pivot_table(index=[*keys, "seed"], columns=["kind", "regime"], values=col,
                                   aggfunc="mean", sort=False)
        for name, w in CONTRASTS.items():
            if not all(c in wide.columns for c in w):
                continue
            per_seed = sum(wt * wide[c] for c, wt in w.items()).rename("value").reset_index()
            out = summarise(per_seed, keys, "value")
            seeds = per_seed.groupby(keys, sort=False)["value"].agg(
                lambda v: [round(float(x), 6) for x in v]).reset_index(name="per_seed")
            out = out.merge(seeds, on=keys)
            out.insert(len(keys), "metric", col)
            out.insert(len(keys) + 1, "contrast", name)
            frames.append(out)
    return pd.concat(frames, ignore_index=True)[
        [*keys, "metric", "contrast", "mean", "lo", "hi", "n", "per_seed"]]


#: what :func:`balancing_verdict` says of one architecture (and of a dose knob's flattest level,
#: :mod:`tanbias.lab.analysis.dose_report`): "weaker under balancing" asks for ``attenuated``
BALANCING_WORDS = ("attenuated", "removed", "strengthened", "indistinguishable", "undecided")
#: what :func:`balancing_property` and :func:`imprinted_early_property` say of a claim
PROPERTY_WORDS = ("supported", "partly", "contradicted", "undetected", "undecided")


def balancing_verdict(summary, eff, layer="mean", bucket="all", proxy="frozen", phase="late",
                      metric="log_enrichment") -> dict:
    """The prediction "balancing attenuates the effect but does not remove it", per architecture.

    Returns ``{kind: word}`` with one of :data:`BALANCING_WORDS`:

    * ``"attenuated"`` (not removed): the balancing effect's interval lies below 0
      and the balanced cell's interval lies above the null (0 on the log scale);
    * ``"removed"``: attenuated and the balanced cell's interval contains the null;
    * ``"strengthened"``: the balancing effect's interval lies above 0;
    * ``"indistinguishable"``: the interval contains 0, no detectable effect of balancing;
    * ``"undecided"``: not measured.

    The effect's sign is :func:`tanbias.stats.interval_word` of its interval.
    """
    out = {}
    for kind in KINDS:
        e = eff[(eff["layer"] == layer) & (eff["bucket"] == bucket) & (eff["proxy"] == proxy)
                & (eff["phase"] == phase) & (eff["metric"] == metric)
                & (eff["contrast"] == f"balancing | {kind}")]
        c = summary[(summary["kind"] == kind) & (summary["regime"] == "balanced")
                    & (summary["layer"] == layer) & (summary["bucket"] == bucket)
                    & (summary["proxy"] == proxy) & (summary["phase"] == phase)
                    & (summary["metric"] == metric)]
        if e.empty or c.empty:
            out[kind] = "undecided"
            continue
        e, c = e.iloc[0], c.iloc[0]
        word = interval_word(e["lo"], e["hi"])
        present = interval_word(c["lo"], c["hi"]) == "positive"
        out[kind] = {"negative": "attenuated" if present else "removed", "positive": "strengthened"}.get(
            word, word)
    return out


def imprinted_early_property(tim, early_frac: float = EARLY_FRAC) -> str:
    """The statement's property "imprinted early", judged from :func:`timing` of the runs.

    ``"supported"`` when the upper 95 % bound of the mean peak fraction lies
    inside the first ``early_frac`` of training *and* the upper bound of the
    mean log(last / peak) is below 0 (the effect weakens after its peak);
    ``"partly"`` supported when one of the two holds; else ``"undetected"``.
    """
    peak_hi = t_interval(tim["peak_frac"])[2]
    drop_hi = t_interval(tim["log_late_over_peak"])[2]
    early, falls = peak_hi <= early_frac, drop_hi < 0
    return "supported" if early and falls else "partly" if early or falls else "undetected"


def balancing_property(per_kind: dict) -> str:
    """The statement's property "weaker under balancing", from each architecture's word.

    ``per_kind`` maps each architecture to one of :data:`BALANCING_WORDS`
    (:func:`balancing_verdict` for the 2x2, the dose knob's flattest level in
    :func:`tanbias.lab.analysis.dose_report.balancing_words`). One of
    :data:`PROPERTY_WORDS`: ``"supported"`` when every architecture is
    ``attenuated``, ``"partly"`` when some are, ``"contradicted"`` when
    balancing strengthens or removes the effect in any, ``"undecided"`` when any
    is undecided, else ``"undetected"``.

    >>> balancing_property({"encoder": "attenuated", "decoder": "indistinguishable"})
    'partly'
    """
    words = list(per_kind.values())
    if not words or "undecided" in words:
        return "undecided"
    if "strengthened" in words or "removed" in words:
        return "contradicted"
    n = words.count("attenuated")
    return "supported" if n == len(words) else "partly" if n else "undetected"


# --------------------------------------------------------------------------- the mechanism
def frequency_profile(loaded: dict):
    """How each run's data regime shapes the token-frequency distribution it trained on.

    One row per run: ``types_seen``, ``effective_vocab`` (exp of the unigram
    entropy, in types), ``top100_share`` (share of occurrences from the 100
    most frequent types), ``types_for_half`` (fewest types covering half the
    occurrences), ``singleton_share`` (types seen at most 10 times / types seen).
    """
    import pandas as pd

    rows = []
    for name, r in loaded.items():
        c = np.asarray(r.token_counts, np.float64)[N_SPECIAL:]
        conc = concentration(c)
        kind, regime, seed = run_cell(r)
        rows.append({"run": name, "kind": kind, "regime": regime, "seed": seed, "types_seen": conc["types_seen"],
                     "effective_vocab": conc["effective_vocab"], "top100_share": conc["top_share"],
                     "types_for_half": conc["types_for_half"],
                     "rare_share": float(np.mean(c[c > 0] <= 10))})
    return pd.DataFrame(rows)


def rank_frequency(counts, n_points: int = 60):
    """Log-spaced samples of the rank-frequency curve (rank, relative frequency)."""
    c = np.asarray(counts, np.float64)[N_SPECIAL:]
    c = np.sort(c[c > 0])[::-1]
    p = c / c.sum()
    ranks = np.unique(np.geomspace(1, len(p), n_points).astype(int))
    return ranks, p[ranks - 1]


def eta_by_bucket(loaded: dict):
    """Implied ``eta_g`` per (run, layer, bucket) from the measured radii.

    ``eta_g = m_{d+1}/m_{d-1}`` is the mean squared radius of a token's samples
    (chapter 2), so a bucket's implied (dimensionless) ``eta_g`` is the
    occurrence-weighted mean of ``t^2`` over its token types. Also the median
    ``t`` and the share of the bucket's *occurrences* with ``t`` below
    ``t_small`` = the 20 % quantile of ``t`` over every natural-regime run's
    occurrences of that kind and layer (the "very small t" of the statement).
    """
    import pandas as pd

    tok = tokens_table(loaded)
    rows = []
    small = {}
    for (kind, layer), g in tok[tok["regime"] == "natural"].groupby(["kind", "layer"]):
        small[kind, layer] = weighted_quantile(g["t"].to_numpy(), g["count_text"].to_numpy(), 0.2)
    n_buckets = {name: r.config.probe.n_buckets for name, r in loaded.items()}

    def row(run, layer, bucket, g):
        kind, regime, seed = run_cell(loaded[run])
        w = g["count_text"].to_numpy(np.float64)
        t = g["t"].to_numpy()
        thr = small.get((kind, layer), float("nan"))
        return {"run": run, "kind": kind, "regime": regime, "seed": seed, "layer": int(layer),
                "bucket": bucket, "eta": float(np.sum(w * t ** 2) / w.sum()),
                "t_median": weighted_quantile(t, w, 0.5), "types": len(g),
                "small_t_share": float(np.sum(w * (t < thr)) / w.sum()), "t_small": thr}

    # bucket -1: types never seen in the run's training stream (they stay in "all")
    for (run, layer, bucket), g in tok[tok["bucket"] >= 0].groupby(["run", "layer", "bucket"]):
        rows.append(row(run, layer, bucket_label(int(bucket), n_buckets[run]), g))
    for (run, layer), g in tok.groupby(["run", "layer"]):
        rows.append(row(run, layer, "all", g))
    return pd.DataFrame(rows)


def weighted_quantile(x, w, q) -> float:
    o = np.argsort(x)
    x, w = np.asarray(x)[o], np.asarray(w, np.float64)[o]
    c = np.cumsum(w) / w.sum()
    return float(x[min(np.searchsorted(c, q), len(x) - 1)])


def radius_correlations(loaded: dict):
    """Spearman correlation of log training count with ``t``, per (run, layer), from ``tokens.csv``."""
    import pandas as pd

    tok = tokens_table(loaded)
    rows = []
    for (run, layer), g in tok.groupby(["run", "layer"]):
        kind, regime, seed = run_cell(loaded[run])
        g = g[g["train_count"] > 0]
        cr = al.frequency_radius_correlation(g["train_count"].to_numpy(), g["t"].to_numpy())
        rows.append({"run": run, "kind": kind, "regime": regime, "seed": seed, "layer": int(layer), **cr})
    return pd.DataFrame(rows)


def mechanism_summary(loaded: dict):
    """Cell means and t-intervals of the mechanism's numbers.

    Returns ``(eta, corr, freq)``: ``eta`` per (kind, regime, layer, bucket) for
    ``eta``, ``t_median`` and ``small_t_share``; ``corr`` per (kind, regime,
    layer) for the Spearman correlation; ``freq`` per (kind, regime) for the
    frequency profile.
    """
    eta = summarise_columns(eta_by_bucket(loaded), ["kind", "regime", "layer", "bucket"],
                            ["eta", "t_median", "small_t_share"])
    corr = summarise_columns(radius_correlations(loaded), ["kind", "regime", "layer"], ["spearman"])
    freq = summarise_columns(frequency_profile(loaded), ["kind", "regime"],
                             ["effective_vocab", "top100_share", "types_for_half", "types_seen"])
    return eta, corr, freq


def loss_table(loaded: dict):
    """Held-out loss against the unigram baseline, per run."""
    import pandas as pd

    rows = []
    for name, r in loaded.items():
        kind, regime, seed = run_cell(r)
        ev = r.evaluation
        rows.append({"run": name, "kind": kind, "regime": regime, "seed": seed,
                     "loss": ev.get("loss"), "unigram_loss": ev.get("unigram_loss"),
                     "accuracy": ev.get("accuracy"), "train_seconds": r.summary.get("train_seconds"),
                     "analysis_seconds": r.summary.get("analysis_seconds")})
    return pd.DataFrame(rows)


