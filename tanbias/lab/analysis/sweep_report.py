"""The numbers the lab's runs give the prose: the two seed-0 runs, the 2x2 sweep, its claims.

The experiment's face, as every registered experiment's (:mod:`tanbias.lab.analysis.findings`):
:func:`analyse` once, :func:`numbers` (what chapter 8 glues, keys without its prefix) and
:func:`words` (the words it states, by name, for :func:`tanbias.stats.check_words`). Beside them:

* :func:`run_pair_numbers` — the two seed-0 natural runs of chapter 7 (their
  sanity numbers, early against late enrichment, the peak);
* :func:`sweep_checks` — the checks chapter 8 shows;
* :func:`claim_numbers` — the sweep's evidence on the statement's claims
  "imprinted early" and "weaker under balancing" (the closing page).

Verdict *sentences* stay in the chapters' Markdown, each beside a displayed
check (:func:`tanbias.stats.check_sign`, :func:`tanbias.stats.check_word`)
that breaks the build if the data stop supporting it; only numbers and single
words are glued.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from tanbias.lab import runs as lab_runs
from tanbias.lab.analysis import sweep
from tanbias.lab.analysis.registered import t_interval
from tanbias.lab.analysis.tables import run_metrics
from tanbias.lab.analysis.verdicts import PREMISE_WORDS, cell, premise_reading, property_word
from tanbias.lab.config import DEFAULT_TEMPERATURE, KINDS, REGIMES, RunConfig
from tanbias.lab.experiments import CONTROL_RUNS
from tanbias.lab.corpus import mixture_probabilities, read_manifest, split
from tanbias.stats import Check, check_greater, check_in_interval, interval_word

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["SweepAnalysis", "analyse", "numbers", "words", "cells", "premise_readings", "language_shares",
           "loss_summary", "mechanism_table", "radius_table", "cells_table", "timing_table", "control_table",
           "contrast_table", "run_pair_numbers", "sweep_checks", "claim_numbers", "run_pair_table",
           "RUN_PAIR_QUOTED", "sweep_table", "SWEEP_QUOTED", "CONTROL_QUOTED"]

#: the constant-learning-rate controls of the seed-0 natural runs (chapter 8)

_Q1 = "q1 (most frequent)"


@dataclass
class SweepAnalysis:
    """The sweep's tables, computed once (:func:`analyse`)."""
    runs: dict            # {name: RunData}
    metrics: pd.DataFrame               # run_metrics
    cells: pd.DataFrame                 # cell_summary
    effects: pd.DataFrame               # effects
    eta: pd.DataFrame                   # eta_by_bucket
    eta_summary: pd.DataFrame           # mechanism_summary()[0]
    corr_summary: pd.DataFrame          # mechanism_summary()[1]
    frequency: pd.DataFrame             # frequency_profile
    timing: pd.DataFrame                # timing of the sweep runs
    controls: dict        # {name: RunData} of CONTROL_RUNS (empty if not given)

    @property
    def last_layer(self) -> int:
        return int(self.eta["layer"].max())

    @property
    def config(self) -> RunConfig:
        return next(iter(self.runs.values())).config


def analyse(loaded: dict | None = None, controls=CONTROL_RUNS) -> SweepAnalysis:
    """Load (if not given) and analyse the committed sweep and its learning-rate controls.

    On the committed runs (``loaded`` not given) the result is memoised on disk
    (:func:`tanbias.lab.runs.memoised`): chapters 8 and 9, the closing page and the tests
    read one computation per set of controls.
    """
    if loaded is None:
        import hashlib

        tag = hashlib.sha256(repr(tuple(controls or ())).encode()).hexdigest()[:8]
        return lab_runs.memoised(f"analyse_sweep-{tag}", lambda: analyse(sweep.load_sweep(), controls))
    metrics = run_metrics(loaded)
    eta_sum, corr_sum, _ = sweep.mechanism_summary(loaded)
    ctl = {n: lab_runs.load_run(n) for n in controls} if controls else {}
    return SweepAnalysis(runs=loaded, metrics=metrics, cells=sweep.cell_summary(metrics),
                         effects=sweep.effects(metrics), eta=sweep.eta_by_bucket(loaded),
                         eta_summary=eta_sum, corr_summary=corr_sum,
                         frequency=sweep.frequency_profile(loaded), timing=sweep.timing(loaded),
                         controls=ctl)


# --------------------------------------------------------------------------- words
def decline_word(const_ratios) -> str:
    """Does the enrichment fall from its peak at a constant learning rate? "falls" or "stays"
    (every constant-rate run keeps at least 95 % of its peak)."""
    return "stays" if np.min(const_ratios) >= 0.95 else "falls"


# --------------------------------------------------------------------------- tables
def language_shares(languages=None) -> dict:
    """``{"natural": {lang: share}, "balanced": {...}}``: shares of training *words* per language."""
    train_docs, _ = split(languages)
    return {regime: mixture_probabilities(train_docs, regime)["words"] for regime in REGIMES}


def loss_summary(sw: SweepAnalysis):
    """Held-out loss, unigram loss and accuracy per cell: mean and std over seeds."""
    losses = sweep.loss_table(sw.runs)
    return losses.groupby(["kind", "regime"])[["loss", "unigram_loss", "accuracy"]].agg(["mean", "std"])


def paired_eta(sw: SweepAnalysis, kind: str, bucket: str, col: str, layer: int | None = None):
    """Seed-paired balanced − natural difference of ``col`` of :func:`~tanbias.lab.analysis.sweep.eta_by_bucket`:
    ``(mean, lo, hi, n)`` (:func:`~tanbias.lab.analysis.registered.t_interval`); default layer: the last."""
    e = sw.eta
    layer = sw.last_layer if layer is None else layer
    e = e[(e["kind"] == kind) & (e["bucket"] == bucket) & (e["layer"] == layer)]
    w = e.pivot_table(index="seed", columns="regime", values=col)
    return t_interval((w["balanced"] - w["natural"]).to_numpy())


def mechanism_table(sw: SweepAnalysis):
    """Balanced − natural ``eta`` and ``small_t_share`` (q1 and all tokens), with 95 % intervals."""
    import pandas as pd

    rows = []
    for kind in KINDS:
        for bucket in (_Q1, "all"):
            for col in ("eta", "small_t_share"):
                m, lo, hi, n = paired_eta(sw, kind, bucket, col)
                rows.append({"kind": kind, "bucket": bucket, "quantity": col,
                             "balanced − natural": m, "95 % lo": lo, "95 % hi": hi})
    return pd.DataFrame(rows)


def radius_table(sw: SweepAnalysis):
    """Spearman correlation of log training count with ``t`` at the last layer, per cell."""
    cs = sw.corr_summary
    return cs[cs["layer"] == sw.last_layer].set_index(["kind", "regime"])[["mean", "lo", "hi", "n"]]


def _cell_rows(sw: SweepAnalysis, metric: str):
    c = sw.cells
    return c[(c["layer"] == "mean") & (c["bucket"] == "all") & (c["proxy"] == "frozen")
             & (c["metric"] == metric)]


def cells_table(sw: SweepAnalysis):
    """Per cell: layer-averaged enrichment (ratio) and excess ΔIsoScore* at init, early, late."""
    table = _cell_rows(sw, "log_enrichment").pivot_table(
        index=["kind", "regime"], columns="phase", values="ratio")[["init", "early", "late"]]
    table.columns = [f"enrichment, {c}" for c in table.columns]
    iso = _cell_rows(sw, "excess_iso").pivot_table(
        index=["kind", "regime"], columns="phase", values="mean")[["init", "early", "late"]]
    iso.columns = [f"excess ΔIsoScore*, {c}" for c in iso.columns]
    return table.join(iso)


def timing_table(sw: SweepAnalysis):
    """Peak step, peak fraction and last / peak ratio per cell: mean, min, max over seeds."""
    tim = sw.timing
    return tim.assign(late_over_peak=np.exp(tim["log_late_over_peak"])).groupby(["kind", "regime"])[
        ["peak_step", "peak_frac", "late_over_peak"]].agg(["mean", "min", "max"])


def control_table(sw: SweepAnalysis):
    """Peak step and last / peak ratio of the seed-0 natural runs, cosine decay vs constant rate."""
    import pandas as pd

    tc = sweep.timing(sw.controls).set_index("kind")
    tb = sw.timing.set_index("run")
    rows = []
    for kind in KINDS:
        for label, row in (("cosine decay", tb.loc[f"{kind}-natural-s0"]), ("constant", tc.loc[kind])):
            rows.append({"kind": kind, "schedule": label, "peak step": int(row["peak_step"]),
                         "last / peak": float(np.exp(row["log_late_over_peak"]))})
    return pd.DataFrame(rows)


def _contrasts(sw: SweepAnalysis):
    e = sw.effects
    return e[(e["layer"] == "mean") & (e["bucket"] == "all") & (e["proxy"] == "frozen")
             & (e["metric"] == "log_enrichment")]


def contrast_table(sw: SweepAnalysis):
    """Each seed-paired contrast as a ratio of enrichments with its 95 % interval, early and late."""
    E = _contrasts(sw)
    shown = E[E["phase"].isin(["early", "late"])].assign(
        ratio=lambda d: np.exp(d["mean"]), lo=lambda d: np.exp(d["lo"]), hi=lambda d: np.exp(d["hi"]))
    return shown.pivot_table(index="contrast", columns="phase", values=["ratio", "lo", "hi"])


def eta_enrichment_correlation(sw: SweepAnalysis, layer: int | None = None) -> dict:
    """``{kind: Spearman rho}`` of a bucket's log eta_g with its late log enrichment (frozen
    proxy), over every (run, bucket) at ``layer`` (default the last)."""
    from scipy import stats

    layer = sw.last_layer if layer is None else layer
    m = sw.metrics
    j = sw.eta[sw.eta["bucket"] != "all"].merge(
        m[(m["proxy"] == "frozen") & (m["phase"] == "late") & (m["layer"] != "mean")]
        .astype({"layer": int}), on=["run", "kind", "regime", "seed", "layer", "bucket"])
    return {kind: float(stats.spearmanr(np.log(g["eta"]), g["log_enrichment"]).statistic)
            for kind, g in j[j["layer"] == layer].groupby("kind")}


# --------------------------------------------------------------------------- reports
def run_pair_table(loaded: dict) -> dict:
    """Every number of the two seed-0 natural runs of chapter 7, by key (``{kind}_...``).

    Per architecture: the held-out evaluation (``loss``, ``unigram``, ``acc`` in %,
    ``learns``: "below" or "above" the unigram baseline), training time and
    speed; the frozen, refit and local proxies' enrichment (init, early, late: geometric
    mean over layers) and excess ΔIsoScore*, their largest late p-values, the
    frequency-radius correlations; where the layer-averaged enrichment peaks.
    The frozen proxy's last-step enrichment at the first and last layer, and whether it grows
    with every layer (``grows_with_depth``: "yes" or "no").
    Run-wide: the width ``D``, the proxy rank ``r``, ``steps``, the number of
    probe steps, ``weaker`` (the architecture with the lower late enrichment), ``late_min`` (the
    lower of the two), the decoder's enrichment over the encoder's early and late, and the latest
    peak and the largest last / peak ratio of the two.
    """
    enc = loaded["encoder-natural-s0"]
    cfg = enc.config
    out: dict = {"D": cfg.size.hidden_size, "r": cfg.probe.rank, "r_over_D": cfg.probe.rank / cfg.size.hidden_size,
                 "steps": cfg.steps, "n_probe": len(enc.summary["probe_steps"])}
    for run in loaded.values():
        k, ev = run.config.kind, run.evaluation
        out[f"{k}_loss"], out[f"{k}_unigram"] = ev["loss"], ev["unigram_loss"]
        out[f"{k}_acc"] = 100 * ev["accuracy"]
        out[f"{k}_minutes"] = run.summary["train_seconds"] / 60
        out[f"{k}_tps"] = run.summary["tokens_per_s"]
        out[f"{k}_learns"] = "below" if ev["loss"] < ev["unigram_loss"] else "above"
    s = sweep.run_summary(loaded).set_index(["kind", "proxy"])
    for kind in KINDS:
        for proxy in ("frozen", "refit", "local"):
            row = s.loc[(kind, proxy)]
            for col in ("enrichment_init", "enrichment_early", "enrichment_late", "excess_iso_early",
                        "excess_iso_late", "p_energy_late_max", "p_iso_late_max"):
                out[f"{kind}_{proxy}_{col}"] = float(row[col])
        out[f"{kind}_spearman"] = float(s.loc[(kind, "frozen"), "spearman_late"])
        out[f"{kind}_pearson"] = float(s.loc[(kind, "frozen"), "pearson_late"])
    late = {k: float(s.loc[(k, "frozen"), "enrichment_late"]) for k in KINDS}
    early = {k: float(s.loc[(k, "frozen"), "enrichment_early"]) for k in KINDS}
    out["weaker"] = min(late, key=late.get)
    out["late_min"] = min(late.values())
    out["decoder_over_encoder_early"] = early["decoder"] / early["encoder"]
    out["decoder_over_encoder_late"] = late["decoder"] / late["encoder"]
    for name, run in loaded.items():                   # the frozen proxy's last step, layer by layer
        a = run.alignment
        a = a[(a["proxy"] == "frozen") & (a["bucket"] == "all") & (a["step"] == a["step"].max())]
        by_layer = a.sort_values("layer")["enrichment"].to_numpy()
        k = run.config.kind
        out[f"{k}_first_layer_late"], out[f"{k}_last_layer_late"] = float(by_layer[0]), float(by_layer[-1])
        out[f"{k}_grows_with_depth"] = "yes" if bool(np.all(np.diff(by_layer) > 0)) else "no"
        c = run.radius_corr                            # the frequency-radius correlation, layer by layer
        last = c[c["step"] == c["step"].max()].dropna(subset=["spearman"]).sort_values("layer")["spearman"]
        out[f"{k}_spearman_min"], out[f"{k}_spearman_last_layer"] = float(last.min()), float(last.iloc[-1])
    for _, row in sweep.timing(loaded).iterrows():     # where the layer-averaged enrichment peaks
        out[f"{row['kind']}_peak_step"] = int(row["peak_step"])
        out[f"{row['kind']}_peak_pct"] = 100 * float(row["peak_frac"])
        out[f"{row['kind']}_late_over_peak"] = float(np.exp(row["log_late_over_peak"]))
    out["peak_pct_max"] = max(out[f"{k}_peak_pct"] for k in KINDS)
    out["late_over_peak_max"] = max(out[f"{k}_late_over_peak"] for k in KINDS)
    return out


def _per_kind(*keys: str) -> tuple[str, ...]:
    return tuple(f"{kind}_{k}" for kind in KINDS for k in keys)


def _with_interval(*keys: str) -> tuple[str, ...]:
    return tuple(x for k in keys for x in (k, f"{k}_lo", f"{k}_hi"))


#: the numbers chapter 7 quotes (:func:`run_pair_numbers` returns these of :func:`run_pair_table`)
RUN_PAIR_QUOTED = ("D", "r", "r_over_D", "steps", "n_probe", "weaker", "decoder_spearman_min",
                   "encoder_spearman_last_layer", "late_min", "decoder_over_encoder_early",
                   "decoder_over_encoder_late", "peak_pct_max", "late_over_peak_max") + _per_kind(
    "loss", "unigram", "acc", "minutes", "tps", "learns", "frozen_enrichment_init", "frozen_enrichment_early",
    "frozen_enrichment_late", "frozen_excess_iso_early", "frozen_excess_iso_late", "frozen_p_energy_late_max",
    "local_enrichment_late", "spearman", "pearson", "peak_step", "peak_pct", "late_over_peak",
    "first_layer_late", "last_layer_late", "grows_with_depth")


def run_pair_numbers(loaded: dict) -> dict:
    """The numbers chapter 7 quotes about its two seed-0 natural runs: :data:`RUN_PAIR_QUOTED`
    of :func:`run_pair_table`."""
    table = run_pair_table(loaded)
    return {k: table[k] for k in RUN_PAIR_QUOTED}


#: the numbers chapter 8 quotes (:func:`numbers` returns these of :func:`sweep_table`, those of
#: the constant-rate controls only when the controls are loaded)
SWEEP_QUOTED = (
    "n_runs", "n_seeds", "steps", "tokens_m", "T", "share_min_nat", "share_min_bal", "gap_min", "gap_min_run",
    "vocab_nat", "vocab_bal", "top_nat", "top_bal", "vocab_change_pct", "L", "rho_word", "peak_steps",
    *_with_interval("peak_frac", "log_late_over_peak"),
    *_per_kind("q1_eta_d", "q1_eta_lo", "q1_eta_hi", "all_small_t_share_d", "all_small_t_share_lo",
               "all_small_t_share_hi"),
    *_with_interval("rho_decoder_natural"), "rho_decoder_balanced", "rho_encoder_natural", "rho_encoder_balanced",
    *_with_interval(*(f"{kind}_{regime}_late" for kind in KINDS for regime in REGIMES)),
    *(f"iso_{kind}_{regime}_late" for kind in KINDS for regime in REGIMES), "cell_late_min", "cell_late_max",
    *_with_interval("eff_balancing_encoder_late", "eff_balancing_decoder_late", "eff_architecture_natural_late",
                    "eff_architecture_natural_early", "eff_interaction_late"),
    "eff_balancing_encoder_early", "eff_balancing_decoder_early", "eff_architecture_balanced_late",
    "eff_architecture_balanced_early", "eta_rho_encoder", "eta_rho_decoder")
#: the controls' numbers chapter 8 quotes
CONTROL_QUOTED = ("ctl_word",) + tuple(f"ctl_{kind}_{s}_{x}" for kind in KINDS for s in ("const", "cos")
                                       for x in ("peak", "ratio"))


def numbers(sw: SweepAnalysis) -> dict:
    """The numbers chapter 8 quotes about the 2x2 sweep (keys without the ``ch8_`` prefix):
    :data:`SWEEP_QUOTED` (and :data:`CONTROL_QUOTED`, with the controls) of :func:`sweep_table`."""
    table = sweep_table(sw)
    return {k: table[k] for k in (*SWEEP_QUOTED, *(CONTROL_QUOTED if sw.controls else ()))}


def sweep_table(sw: SweepAnalysis) -> dict:
    """Every number of the 2x2 sweep by key: design, losses, frequencies, the mechanism (paired η_g and
    small-t shares, radius correlations), each cell's enrichment and excess ΔIsoScore* (and the lowest
    and highest cell's late enrichment), timing, the constant-rate controls, each seed-paired contrast."""
    out: dict = {}
    cfg = sw.config
    seeds = sorted({r.config.seed for r in sw.runs.values()})
    out["n_runs"] = len(sw.runs)
    out["n_seeds"] = len(seeds)
    out["steps"] = cfg.steps
    out["tokens_m"] = cfg.steps * cfg.tokens_per_step / 1e6
    out["T"] = float(DEFAULT_TEMPERATURE)
    shares = language_shares(cfg.languages)
    out["share_min_nat"] = float(min(shares["natural"].values()) * 100)
    out["share_min_bal"] = float(min(shares["balanced"].values()) * 100)

    losses = sweep.loss_table(sw.runs)
    gap = losses["unigram_loss"] - losses["loss"]
    out["gap_min"] = float(gap.min())
    out["gap_min_run"] = str(losses.loc[gap.idxmin(), "run"])
    out["train_min_total"] = float(losses["train_seconds"].sum() / 60)

    freq = sw.frequency
    nat, bal = freq.query("regime == 'natural'"), freq.query("regime == 'balanced'")
    out["vocab_nat"] = float(nat["effective_vocab"].mean())
    out["vocab_bal"] = float(bal["effective_vocab"].mean())
    out["top_nat"] = float(100 * nat["top100_share"].mean())
    out["top_bal"] = float(100 * bal["top100_share"].mean())
    out["vocab_change_pct"] = float(100 * (np.exp(_vocab_log_ratio(sw)[0]) - 1))

    for kind in KINDS:
        for bucket, short in ((_Q1, "q1"), ("all", "all")):
            for col in ("eta", "small_t_share"):
                m, lo, hi, n = paired_eta(sw, kind, bucket, col)
                out[f"{kind}_{short}_{col}_d"] = float(m)
                out[f"{kind}_{short}_{col}_lo"] = float(lo)
                out[f"{kind}_{short}_{col}_hi"] = float(hi)
    out["L"] = sw.last_layer

    cs = radius_table(sw)
    for (kind, regime), row in cs.iterrows():
        out[f"rho_{kind}_{regime}"] = float(row["mean"])
        out[f"rho_{kind}_{regime}_lo"] = float(row["lo"])
        out[f"rho_{kind}_{regime}_hi"] = float(row["hi"])
    dn = cs.loc[("decoder", "natural")]
    out["rho_word"] = interval_word(dn["lo"], dn["hi"])

    for _, row in _cell_rows(sw, "log_enrichment").iterrows():
        key = f"{row['kind']}_{row['regime']}_{row['phase']}"
        out[key] = float(row["ratio"])
        out[key + "_lo"] = float(row["ratio_lo"])
        out[key + "_hi"] = float(row["ratio_hi"])
    for _, row in _cell_rows(sw, "excess_iso").iterrows():
        out[f"iso_{row['kind']}_{row['regime']}_{row['phase']}"] = float(row["mean"])
    late_cells = [out[f"{kind}_{regime}_late"] for kind in KINDS for regime in REGIMES]
    out["cell_late_min"], out["cell_late_max"] = min(late_cells), max(late_cells)

    tim = sw.timing
    for col in ("peak_frac", "log_late_over_peak"):
        m_, lo_, hi_, n_ = t_interval(tim[col])
        f = (lambda v: 100 * v) if col == "peak_frac" else np.exp
        out[col] = float(f(m_))
        out[f"{col}_lo"] = float(f(lo_))
        out[f"{col}_hi"] = float(f(hi_))
    out["peak_steps"] = tuple(int(s) for s in sorted(set(tim["peak_step"])))

    if sw.controls:
        ctl = control_table(sw)
        for _, row in ctl.iterrows():
            key = f"ctl_{row['kind']}_{'const' if row['schedule'] == 'constant' else 'cos'}"
            out[key + "_peak"] = int(row["peak step"])
            out[key + "_ratio"] = float(row["last / peak"])
        out["ctl_word"] = decline_word(ctl.query("schedule == 'constant'")["last / peak"])

    for _, row in _contrasts(sw).iterrows():
        key = f"eff_{row['contrast'].replace(' | ', '_')}_{row['phase']}"
        out[key] = float(np.exp(row["mean"]))
        out[key + "_lo"] = float(np.exp(row["lo"]))
        out[key + "_hi"] = float(np.exp(row["hi"]))

    for kind, v in eta_enrichment_correlation(sw).items():
        out[f"eta_rho_{kind}"] = float(v)
    return out


def _vocab_log_ratio(sw: SweepAnalysis):
    paired = sw.frequency.pivot_table(index=["kind", "seed"], columns="regime",
                                      values=["effective_vocab", "top100_share"])
    d_vocab = (paired["effective_vocab"]["balanced"] / paired["effective_vocab"]["natural"]).to_numpy()
    return t_interval(np.log(d_vocab))


def sweep_checks(sw: SweepAnalysis) -> dict[str, Check]:
    """The checks chapter 8 shows, by name: ``learns``, ``flatter``, ``iso``, ``architecture_<regime>``;
    and ``balancing_<kind>_<phase>``, the word of :func:`~tanbias.lab.analysis.sweep.balancing_verdict`
    for each architecture early and late, against the chapter's reading of it (``indistinguishable``:
    no detectable effect of balancing)."""
    losses = sweep.loss_table(sw.runs)
    gap = losses["unigram_loss"] - losses["loss"]
    out = {"learns": check_greater("every run: unigram loss − held-out loss [nats]", float(gap.min()), 0.05),
           "flatter": check_greater("log(effective vocabulary balanced / natural), lower 95 % bound",
                                    float(_vocab_log_ratio(sw)[1]), 0),
           "iso": check_in_interval("smallest late excess ΔIsoScore* over the four cells (seed means)",
                                    float(_cell_rows(sw, "excess_iso").query("phase == 'late'")["mean"].min()),
                                    0, 1)}
    E = _contrasts(sw)
    for regime in REGIMES:
        row = E[(E["contrast"] == f"architecture | {regime}") & (E["phase"] == "early")].iloc[0]
        out[f"architecture_{regime}"] = check_greater(
            f"early architecture effect ({regime} data), lower 95 % bound of the ratio",
            float(np.exp(row["lo"])), 1)
    return out


def words(sw: SweepAnalysis) -> dict:
    """The words chapter 8 and the closing page state, by name: ``balancing, <kind>, <phase>``, the word
    of :func:`~tanbias.lab.analysis.sweep.balancing_verdict` per architecture at ``late`` (the last
    probe step) and ``early`` (the first 30 % of training)."""
    return {f"balancing, {kind}, {phase}": word for phase in ("late", "early")
            for kind, word in sweep.balancing_verdict(sw.cells, sw.effects, phase=phase).items()}


def claim_numbers(sw: SweepAnalysis) -> dict:
    """The sweep's numbers on the statement's claims, for the closing page (keys without ``end_``):
    where the enrichment peaks and what is left of it ("imprinted early"), the scale of the lab
    against the paper's models, and the corpus' own imbalance."""
    out: dict = {}
    tim = sw.timing
    peak = t_interval(tim["peak_frac"])
    drop = t_interval(tim["log_late_over_peak"])
    out["n_runs"] = len(sw.runs)
    out["peak_pct"] = 100 * peak[0]
    out["peak_pct_hi"] = 100 * peak[2]
    out["peak_max_pct"] = 100 * float(tim["peak_frac"].max())
    out["late_over_peak"] = float(np.exp(drop[0]))
    out["late_over_peak_lo"] = float(np.exp(drop[1]))
    out["late_over_peak_hi"] = float(np.exp(drop[2]))
    words = {e["language"]: e["words"] for e in read_manifest()["files"].values()}
    out["imbalance"] = max(words.values()) / min(words.values())
    params = next(iter(sw.runs.values())).summary["parameters"]
    out["params_m"] = params / 1e6
    out["pythia_x"] = 160e6 / params
    return out


#: the chapter that decides the lab's cells of the closing table
_CHAPTER = "08_eurobert_vs_decoder"


def premise_readings(sw: SweepAnalysis) -> list[str]:
    """The lab decoder's reading of the premise (:func:`tanbias.lab.analysis.verdicts.premise_reading`)."""
    return _premise_readings(numbers(sw))


def _premise_readings(n8: dict) -> list[str]:
    return [premise_reading(PREMISE_WORDS[n8["rho_word"]])]


def cells(sw: SweepAnalysis) -> list[dict]:
    """The lab's cells of the closing table (:func:`tanbias.lab.analysis.verdicts.cell`): the premise, the
    two mechanisms, imprinted early and weaker under balancing, each read by chapter 8."""
    n8 = numbers(sw)
    late = [interval_word(np.log(n8[f"{k}_{r}_late_lo"]), np.log(n8[f"{k}_{r}_late_hi"]))
            for k in KINDS for r in ("natural", "balanced")]
    mechanisms = property_word({"positive": "as predicted", "negative": "against"}.get(w, "neither") for w in late)
    w = words(sw)
    balancing = sweep.balancing_property({k: w[f"balancing, {k}, late"] for k in KINDS})
    correlational = {"rule": "correlational", "anisotropy": "not anisotropy"}
    return [
        cell("premise", "lab", property_word(_premise_readings(n8)), _CHAPTER, "sec-ch8-link2", **correlational),
        cell("mechanisms", "lab", mechanisms, _CHAPTER, "sec-ch8-cells",
             qualifier="that gradients follow the activations' variance is not ruled out", **correlational),
        cell("early", "lab", sweep.imprinted_early_property(sw.timing), _CHAPTER, "sec-ch8-timing",
             qualifier="the fall after the peak at a constant learning rate rests on one run per architecture",
             **correlational),
        cell("balancing", "lab", balancing, _CHAPTER, "sec-ch8-effects", rule="not registered", anisotropy="both"),
    ]
