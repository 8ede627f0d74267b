"""The 2x2 experiment of chapter 8: {encoder, decoder} x {natural, balanced} x seeds.

The paper compares EuroBERT (an encoder trained on language-balanced data)
with decoders trained on skewed data. That comparison confounds the
architecture/objective with the data regime. The sweep separates them: the
same tokenizer, size, seeds and number of training tokens in every cell; only
``kind`` (EuroBERT encoder with masked LM, or Llama decoder with causal LM) and
``regime`` (natural language mixture, or temperature-balanced sampling over
languages, :func:`tanbias.lab.corpus.mixture`) change.

This module

* loads and checks the sweep (:func:`load_sweep`: every cell has the same seeds
  and the same training budget);
* reduces each run's alignment table to early / late numbers per layer and
  frequency bucket (:func:`run_metrics`), then to cell means with seed-level
  t-intervals (:func:`cell_summary`), and estimates the balancing effect within
  each architecture, the architecture effect within each regime and their
  interaction (the test of additivity), paired by seed (:func:`effects`);
* measures the mechanism rather than assuming it: the token-frequency
  distribution each regime feeds the model (:func:`frequency_profile`), each
  token's concentration radius ``t`` on one common held-out text
  (:func:`measure_radii`, written to the run's ``tokens.csv``) and the implied
  ``eta_g`` of each frequency bucket (:func:`eta_by_bucket`);
* draws the chapter's interactives.

Seeds pair the cells: seed ``s`` gives the encoder and the decoder the same
initial weights and both regimes the same initialisation, so contrasts are taken
within a seed and their spread across seeds gives the interval (Student t with
``n_seeds - 1`` degrees of freedom). With 3 seeds the 95 % multiplier is 4.30:
intervals are wide, and the book reports them as they are.
"""
from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import numpy as np

from tanbias._figcache import frozen_layout
from tanbias.errors import CorruptFileError, ParameterError
from tanbias.lab import runs

__all__ = ["KINDS", "REGIMES", "EARLY_FRAC", "sweep_names", "load_sweep", "run_metrics",
           "cell_summary", "effects", "balancing_verdict", "frequency_profile", "measure_radii",
           "eta_by_bucket", "radius_correlations", "mechanism_summary", "t_interval",
           "cells_interactive", "trajectory_interactive", "eta_interactive", "radius_cdf_interactive",
           "frequency_figure", "loss_table", "sweep_configs", "run_sweep", "timing", "effects_figure"]

KINDS = ("encoder", "decoder")
REGIMES = ("natural", "balanced")
#: probe steps with 0 < step/steps <= EARLY_FRAC are "early" (the frozen proxy's fitting window)
EARLY_FRAC = 0.3
NAME_RE = re.compile(r"^(encoder|decoder)-(natural|balanced)-s(\d+)$")
#: seed of the common held-out text on which every run's radii are measured
MECH_SEED = 424_242
COLORS = {"encoder": "#0072B2", "decoder": "#D55E00"}
DASH = {"natural": "solid", "balanced": "dash"}
SYMBOL = {"natural": "circle", "balanced": "diamond-open"}
METRICS = {"log_enrichment": "log enrichment  ln[E(Q<sub>T</sub>) / mean E(controls)]",
           "excess_iso": "excess ΔIsoScore*  (proxy − mean of controls)"}


# --------------------------------------------------------------------------- loading
def sweep_names(runs_dir=None) -> list[str]:
    """Names of committed runs that belong to the sweep (``kind-regime-sSEED``)."""
    return [n for n in runs.list_runs(runs_dir) if NAME_RE.match(n)]


def _cell(name: str) -> tuple[str, str, int]:
    m = NAME_RE.match(name)
    if m is None:
        raise ParameterError(f"run={name!r} is not a sweep run: valid range is names "
                             "'<encoder|decoder>-<natural|balanced>-s<seed>'.")
    return m.group(1), m.group(2), int(m.group(3))


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
        names = [str(d / n) for n in sweep_names(d)]
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
    ref_cfg = {k: v for k, v in ref.config.items() if k not in strip}
    for name, r in loaded.items():
        kind, regime, seed = _cell(name)
        seeds.setdefault((kind, regime), set()).add(seed)
        cfg = {k: v for k, v in r.config.items() if k not in strip}
        if cfg != ref_cfg:
            diff = sorted(k for k in set(cfg) | set(ref_cfg) if cfg.get(k) != ref_cfg.get(k))
            raise ParameterError(f"run={name!r} differs from {ref_name!r} in {diff}: valid range is "
                                 "runs that differ only in kind, regime and seed (same budget).")
    if complete:
        cells = [(k, g) for k in KINDS for g in REGIMES]
        missing = [c for c in cells if c not in seeds]
        if missing:
            raise ParameterError(f"cells={missing} have no run: valid range is all four cells "
                                 f"{cells}. Train them with `make sweep`.")
        first = seeds[cells[0]]
        for c in cells[1:]:
            if seeds[c] != first:
                raise ParameterError(f"seeds of {c}={sorted(seeds[c])} differ from {cells[0]}="
                                     f"{sorted(first)}: valid range is the same seeds in every cell.")
    return loaded


def sweep_configs(configs_dir=None) -> list[Path]:
    """The sweep's config files (``data/runs/configs/<kind>-<regime>-s<seed>.json``), decoders first.

    Decoders train slower, so starting them first balances the parallel workers.
    """
    d = Path(configs_dir) if configs_dir is not None else runs.RUNS_DIR / "configs"
    found = [p for p in sorted(d.glob("*.json")) if NAME_RE.match(p.stem)]
    return sorted(found, key=lambda p: (_cell(p.stem)[2], p.stem.split("-")[0] != "decoder", p.stem))


def run_sweep(jobs: int = 2, fresh: bool = False, configs_dir=None, out_root=None) -> dict:
    """Train every sweep config (``python -m tanbias.lab train``) with ``jobs`` parallel processes.

    Each run uses one thread (its config's ``threads``), so ``jobs`` should
    not exceed the number of cores. A run that is already complete (its
    manifest lists ``tokens.csv``) is skipped unless ``fresh``; an interrupted
    one resumes. Returns the wall time and each run's exit status and time
    (also written to ``sweep.json`` beside the runs when anything ran); the
    log of each run goes to ``<run>/work/train.log``.
    """
    import subprocess
    import sys
    import time
    from concurrent.futures import ThreadPoolExecutor

    from tanbias._checks import check_int

    jobs = check_int("jobs", jobs, lo=1, hi=64)
    root = Path(out_root) if out_root is not None else runs.RUNS_DIR
    todo = []
    for cfg in sweep_configs(configs_dir):
        man = root / cfg.stem / "manifest.json"
        if not fresh and man.exists() and "tokens.csv" in json.loads(man.read_text()).get("files", {}):
            continue
        todo.append(cfg)

    def one(cfg):
        out = root / cfg.stem
        (out / "work").mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "tanbias.lab", "train", str(cfg), "--out", str(out), "--no-progress"]
        if fresh:
            cmd.append("--fresh")
        t0 = time.perf_counter()
        with open(out / "work" / "train.log", "w") as log:
            rc = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT)
        dt = time.perf_counter() - t0
        print(f"{cfg.stem}: exit {rc} after {dt / 60:.1f} min", flush=True)
        return cfg.stem, rc, dt

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(one, todo))
    report = {"wall_seconds": round(time.perf_counter() - t0, 1), "jobs": jobs,
              "how": f"python -m tanbias.lab sweep --jobs {jobs}" + (" --fresh" if fresh else ""),
              "runs": {n: {"exit": rc, "seconds": round(dt, 1)} for n, rc, dt in results}}
    if todo:
        runs.atomic_write_text(root / "sweep.json", json.dumps(report, indent=1) + "\n")
    return report


# --------------------------------------------------------------------------- statistics
def t_interval(x, level: float = 0.95) -> tuple[float, float, float, int]:
    """Mean and Student-t interval of ``x`` (NaNs dropped): ``(mean, lo, hi, n)``.

    >>> m, lo, hi, n = t_interval([1.0, 2.0, 3.0])
    >>> round(m, 3), round(lo, 3), round(hi, 3), n
    (2.0, -0.484, 4.484, 3)
    """
    x = np.asarray(x, dtype=np.float64)
    x = x[np.isfinite(x)]
    n = len(x)
    if n == 0:
        return float("nan"), float("nan"), float("nan"), 0
    m = float(x.mean())
    if n == 1:
        return m, float("nan"), float("nan"), 1
    h = float(_t_multiplier(n, level) * x.std(ddof=1) / np.sqrt(n))
    return m, m - h, m + h, n


@functools.lru_cache(maxsize=None)
def _t_multiplier(n: int, level: float) -> float:
    from scipy import stats
    return float(stats.t.ppf(0.5 + level / 2, n - 1))


def _summarise_columns(df, keys, cols):
    """:func:`_summarise` of several columns, stacked with a ``metric`` column."""
    import pandas as pd

    frames = []
    for c in cols:
        out = _summarise(df, keys, c)
        out.insert(len(keys), "metric", c)
        frames.append(out)
    return pd.concat(frames, ignore_index=True)[[*keys, "metric", "mean", "lo", "hi", "n"]]


def _summarise(df, keys, col):
    """Vectorised :func:`t_interval` of ``df[col]`` per group: columns mean, lo, hi, n."""
    g = df.assign(_x=df[col].astype(float)).dropna(subset=["_x"]).groupby(keys, sort=False)["_x"]
    out = g.agg(mean="mean", sd=lambda v: v.std(ddof=1), n="count").reset_index()
    mult = out["n"].map(lambda k: _t_multiplier(int(k), 0.95) if k > 1 else np.nan)
    h = mult * out["sd"] / np.sqrt(out["n"])
    out["lo"], out["hi"] = out["mean"] - h, out["mean"] + h
    return out.drop(columns="sd")


def run_metrics(loaded: dict, early_frac: float = EARLY_FRAC):
    """One row per (run, layer, bucket, proxy, phase) with the alignment metrics.

    Phases: ``init`` (step 0, the untrained model), ``early`` (mean over the
    probe steps with ``0 < frac <= early_frac``), ``late`` (the last probe
    step). ``layer`` is an integer, or ``"mean"`` for the mean over layers.
    Enrichment is averaged on the log scale (it is a ratio).

    Columns: ``run, kind, regime, seed, layer, bucket, proxy, phase,
    log_enrichment, excess_iso, p_energy``.
    """
    import pandas as pd

    frames = []
    for name, r in loaded.items():
        a = r.alignment.copy()
        a["log_enrichment"] = np.log(a["enrichment"].clip(lower=1e-12))
        a["excess_iso"] = a["d_iso_proxy"] - a["d_iso_control_mean"]
        last = a["step"].max()
        phases = {"init": a[a["step"] == 0], "early": a[(a["step"] > 0) & (a["frac"] <= early_frac)],
                  "late": a[a["step"] == last]}
        for phase, g in phases.items():
            by = g.groupby(["layer", "bucket", "proxy"], sort=False)[
                ["log_enrichment", "excess_iso", "p_energy"]].mean().reset_index()
            mean = by.groupby(["bucket", "proxy"], sort=False)[
                ["log_enrichment", "excess_iso", "p_energy"]].mean().reset_index()
            mean["layer"] = "mean"
            both = pd.concat([by.astype({"layer": object}), mean], ignore_index=True)
            kind, regime, seed = _cell(name)
            both.insert(0, "phase", phase)
            both.insert(0, "seed", seed)
            both.insert(0, "regime", regime)
            both.insert(0, "kind", kind)
            both.insert(0, "run", name)
            frames.append(both)
    return pd.concat(frames, ignore_index=True)


def timing(loaded: dict, proxy: str = "frozen", bucket: str = "all"):
    """When is the tangent enrichment strongest? One row per run.

    On the layer-mean log enrichment (bucket ``bucket``) against the probe
    steps after step 0: ``peak_step`` and ``peak_frac`` (its fraction of
    training), ``log_peak``, ``log_late`` (last probe step), ``log_early_end``
    (the last probe step inside the first :data:`EARLY_FRAC` of training) and
    ``log_late_over_peak = log_late - log_peak`` (< 0: the effect weakens after
    its peak). "Imprinted early" in the statement's sense means the peak lies
    early and late training carries the level forward rather than raising it.
    """
    import pandas as pd

    rows = []
    for name, r in loaded.items():
        a = r.alignment
        a = a[(a["bucket"] == bucket) & (a["proxy"] == proxy) & (a["step"] > 0)]
        curve = a.assign(le=np.log(a["enrichment"].clip(lower=1e-12))).groupby("step")["le"].mean()
        frac = a.groupby("step")["frac"].first()
        early = curve[frac <= EARLY_FRAC]
        kind, regime, seed = r.config["kind"], r.config["regime"], int(r.config["seed"])
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
    out = _summarise_columns(metrics, keys, columns)
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
            out = _summarise(per_seed, keys, "value")
            seeds = per_seed.groupby(keys, sort=False)["value"].agg(
                lambda v: [round(float(x), 6) for x in v]).reset_index(name="per_seed")
            out = out.merge(seeds, on=keys)
            out.insert(len(keys), "metric", col)
            out.insert(len(keys) + 1, "contrast", name)
            frames.append(out)
    return pd.concat(frames, ignore_index=True)[
        [*keys, "metric", "contrast", "mean", "lo", "hi", "n", "per_seed"]]


def balancing_verdict(summary, eff, layer="mean", bucket="all", proxy="frozen", phase="late",
                      metric="log_enrichment") -> dict:
    """The prediction "balancing attenuates the effect but does not remove it", per architecture.

    Returns ``{kind: verdict}`` with one of

    * ``"attenuated, not removed"``: the balancing effect's interval lies below 0
      and the balanced cell's interval lies above the null (0 on the log scale);
    * ``"removed"``: attenuated and the balanced cell's interval contains the null;
    * ``"strengthened"``: the balancing effect's interval lies above 0;
    * ``"no detectable effect of balancing"``: the interval contains 0.
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
            out[kind] = "not measured"
            continue
        e, c = e.iloc[0], c.iloc[0]
        if e["hi"] < 0:
            out[kind] = "attenuated, not removed" if c["lo"] > 0 else "removed"
        elif e["lo"] > 0:
            out[kind] = "strengthened"
        else:
            out[kind] = "no detectable effect of balancing"
    return out


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
        c = np.asarray(r.token_counts, np.float64)[5:]
        c = np.sort(c[c > 0])[::-1]
        p = c / c.sum()
        kind, regime, seed = _cell(name)
        rows.append({"run": name, "kind": kind, "regime": regime, "seed": seed, "types_seen": len(c),
                     "effective_vocab": float(np.exp(-(p * np.log(p)).sum())),
                     "top100_share": float(p[:100].sum()),
                     "types_for_half": int(np.searchsorted(np.cumsum(p), 0.5) + 1),
                     "rare_share": float(np.mean(c <= 10))})
    return pd.DataFrame(rows)


def rank_frequency(counts, n_points: int = 60):
    """Log-spaced samples of the rank-frequency curve (rank, relative frequency)."""
    c = np.asarray(counts, np.float64)[5:]
    c = np.sort(c[c > 0])[::-1]
    p = c / c.sum()
    ranks = np.unique(np.geomspace(1, len(p), n_points).astype(int))
    return ranks, p[ranks - 1]


def _common_batches(cfg: dict, tok, n_batches: int):
    """The held-out text every run of a kind is measured on: natural mixture, fixed seed."""
    from tanbias.lab.corpus import mixture
    from tanbias.lab.models import SIZES, lm_batches
    from tanbias.lab.train import _split

    size = SIZES[cfg["size"]]
    _, valid_docs = _split(cfg["languages"])
    it = lm_batches(cfg["kind"], mixture(valid_docs, "natural", seed=MECH_SEED), tok,
                    size["batch_size"], size["seq_len"], seed=MECH_SEED)
    return [next(it) for _ in range(n_batches)]


def measure_radii(run, n_batches: int = 8, min_count: int | None = None, write: bool = True):
    """Per-token concentration radius ``t`` of a trained run, on a common held-out text.

    The probe's radii (``radius.csv``) come from one training batch (a few dozen
    token types reach ``min_count``). Here the run's final checkpoint reads
    ``n_batches`` batches of held-out text drawn from the *natural* mixture with
    a fixed seed — the same text for every run of a kind, whatever its training
    regime — so the radii of two regimes are measured on the same occurrences.
    Forward passes only.

    For each layer ``l >= 1`` (layer 0, the embedding, is context-free: radius
    0) and each token type with at least ``min_count`` occurrences (encoder
    ``<mask>`` positions are keyed by the special id and dropped):
    ``radius`` = RMS distance of its occurrences to their centroid,
    ``t = radius / spread`` where ``spread`` is the RMS distance of all the
    layer's activations to their mean (dimensionless, comparable across runs),
    and ``train_count`` / ``bucket`` from the run's own training stream.
    ``min_count`` defaults to the run's probe setting.

    Returns
    -------
    pandas.DataFrame
        Written to ``<run>/tokens.csv`` when ``write``.

    Raises
    ------
    CorruptFileError
        The checkpoint ``work/ckpt.pt`` is missing or unreadable (names it and
        the command that regenerates it).
    """
    import pandas as pd
    import torch

    from tanbias import alignment as al
    from tanbias.lab.models import make_model
    from tanbias.lab.probe import N_SPECIAL, residual_modules
    from tanbias.lab.tokenizer import load_tokenizer

    d = runs.run_dir(run)
    regen = runs.regenerate_command(d)
    cfg = json.loads((d / "config.json").read_text())
    ckpt = d / "work" / "ckpt.pt"
    try:
        state = torch.load(ckpt, map_location="cpu", weights_only=False)
        step = int(state["step"])
    except FileNotFoundError:
        raise CorruptFileError(ckpt, regen, "checkpoint is missing (work/ is not committed)") from None
    except Exception as exc:
        raise CorruptFileError(ckpt, regen, f"unreadable checkpoint: {exc}") from None
    if step != cfg["steps"]:
        raise CorruptFileError(ckpt, regen + "  (or resume it without --fresh)",
                               f"checkpoint is at step {step}, the run has {cfg['steps']} steps")
    tok = load_tokenizer()
    counts = np.load(d / "token_counts.npy")
    model = make_model(cfg["kind"], cfg["size"], vocab_size=len(tok), seed=cfg["seed"])
    model.load_state_dict(state["model"])
    model.eval()
    modules = residual_modules(model)
    store: dict[int, list] = {i: [] for i in range(len(modules))}

    def keep(i):
        def hook(module, inputs, output):
            h = output[0] if isinstance(output, tuple) else output
            store[i].append(h.detach().reshape(-1, h.shape[-1]))
        return hook

    handles = [m.register_forward_hook(keep(i)) for i, m in enumerate(modules)]
    batches = _common_batches(cfg, tok, n_batches)
    ids = []
    try:
        with torch.no_grad():
            for b in batches:
                model(input_ids=b["input_ids"], attention_mask=b.get("attention_mask"))
                ids.append(b["input_ids"].reshape(-1))
    finally:
        for h in handles:
            h.remove()
    ids = torch.cat(ids).numpy().astype(np.int64)
    buckets = al.frequency_buckets(counts, int(cfg["probe"]["n_buckets"]))
    kind, regime, seed = cfg["kind"], cfg["regime"], int(cfg["seed"])
    min_count = int(cfg["probe"]["min_count"]) if min_count is None else min_count
    rows = []
    for layer in range(1, len(modules)):
        X = torch.cat(store[layer]).double().numpy()
        spread = float(np.sqrt(np.mean(np.sum((X - X.mean(0)) ** 2, axis=1))))
        rad = al.concentration_radius(X, ids, min_count=min_count, exclude=range(N_SPECIAL))
        for t, c, r in zip(rad["token_id"], rad["count"], rad["radius"]):
            rows.append({"run": d.name, "kind": kind, "regime": regime, "seed": seed, "layer": layer,
                         "token_id": int(t), "count_text": int(c), "train_count": int(counts[t]),
                         "bucket": int(buckets[t]), "radius": float(r), "t": float(r) / spread,
                         "spread": spread})
    df = pd.DataFrame(rows)
    if write:
        runs.atomic_write_text(d / "tokens.csv", df.to_csv(index=False, float_format="%.6g"))
        runs.write_manifest(d, cfg)
    return df


def _tokens(loaded: dict):
    import pandas as pd

    frames = []
    for name, r in loaded.items():
        if r.tokens is None:
            raise CorruptFileError(r.path / "tokens.csv", f"python -m tanbias.lab mechanism {name}",
                                   "the per-token radii are missing")
        frames.append(r.tokens)
    return pd.concat(frames, ignore_index=True)


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

    tok = _tokens(loaded)
    rows = []
    small = {}
    for (kind, layer), g in tok[tok["regime"] == "natural"].groupby(["kind", "layer"]):
        small[kind, layer] = _weighted_quantile(g["t"].to_numpy(), g["count_text"].to_numpy(), 0.2)
    from tanbias.lab.probe import bucket_label
    n_buckets = {name: int(r.config["probe"]["n_buckets"]) for name, r in loaded.items()}
    def row(run, layer, bucket, g):
        kind, regime, seed = _cell(run)
        w = g["count_text"].to_numpy(np.float64)
        t = g["t"].to_numpy()
        thr = small.get((kind, layer), float("nan"))
        return {"run": run, "kind": kind, "regime": regime, "seed": seed, "layer": int(layer),
                "bucket": bucket, "eta": float(np.sum(w * t ** 2) / w.sum()),
                "t_median": _weighted_quantile(t, w, 0.5), "types": len(g),
                "small_t_share": float(np.sum(w * (t < thr)) / w.sum()), "t_small": thr}

    # bucket -1: types never seen in the run's training stream (they stay in "all")
    for (run, layer, bucket), g in tok[tok["bucket"] >= 0].groupby(["run", "layer", "bucket"]):
        rows.append(row(run, layer, bucket_label(int(bucket), n_buckets[run]), g))
    for (run, layer), g in tok.groupby(["run", "layer"]):
        rows.append(row(run, layer, "all", g))
    return pd.DataFrame(rows)


def _weighted_quantile(x, w, q) -> float:
    o = np.argsort(x)
    x, w = np.asarray(x)[o], np.asarray(w, np.float64)[o]
    c = np.cumsum(w) / w.sum()
    return float(x[min(np.searchsorted(c, q), len(x) - 1)])


def radius_correlations(loaded: dict):
    """Spearman correlation of log training count with ``t``, per (run, layer), from ``tokens.csv``."""
    import pandas as pd

    from tanbias import alignment as al

    tok = _tokens(loaded)
    rows = []
    for (run, layer), g in tok.groupby(["run", "layer"]):
        kind, regime, seed = _cell(run)
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
    summarise = _summarise_columns
    eta = summarise(eta_by_bucket(loaded), ["kind", "regime", "layer", "bucket"],
                    ["eta", "t_median", "small_t_share"])
    corr = summarise(radius_correlations(loaded), ["kind", "regime", "layer"], ["spearman"])
    freq = summarise(frequency_profile(loaded), ["kind", "regime"],
                     ["effective_vocab", "top100_share", "types_for_half", "types_seen"])
    return eta, corr, freq


def loss_table(loaded: dict):
    """Held-out loss against the unigram baseline, per run."""
    import pandas as pd

    rows = []
    for name, r in loaded.items():
        kind, regime, seed = _cell(name)
        ev = r.evaluation
        rows.append({"run": name, "kind": kind, "regime": regime, "seed": seed,
                     "loss": ev.get("loss"), "unigram_loss": ev.get("unigram_loss"),
                     "accuracy": ev.get("accuracy"), "train_seconds": r.summary.get("train_seconds"),
                     "analysis_seconds": r.summary.get("analysis_seconds")})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- figures
def _cells():
    return [(k, g) for k in KINDS for g in REGIMES]


def _label(fig, title, x, y, legend="cell"):
    from tanbias.figures import labelled
    return labelled(fig, title, x, y, legend=legend)


def _alignment_frame(loaded: dict, proxy: str):
    """All runs' alignment rows for one proxy, with cell columns, ``log_enrichment`` and
    ``excess_iso``, plus rows ``layer == "mean"`` (mean over layers per run, step, bucket)."""
    import pandas as pd

    frames = []
    for name, r in loaded.items():
        a = r.alignment[r.alignment["proxy"] == proxy].copy()
        a["log_enrichment"] = np.log(a["enrichment"].clip(lower=1e-12))
        a["excess_iso"] = a["d_iso_proxy"] - a["d_iso_control_mean"]
        a["kind"], a["regime"], a["seed"] = _cell(name)
        frames.append(a)
    a = pd.concat(frames, ignore_index=True)
    mean = a.groupby(["run", "kind", "regime", "seed", "step", "bucket"], sort=False)[
        ["log_enrichment", "excess_iso"]].mean().reset_index()
    mean["layer"] = "mean"
    return pd.concat([a.astype({"layer": object}), mean], ignore_index=True)


@frozen_layout
def _trajectory_layout(early_x: float, ylabel: str):
    import plotly.graph_objects as go

    fig = go.Figure()
    fig.add_hline(y=0.0, line=dict(color="grey", width=1))
    fig.add_vline(x=early_x, line=dict(color="grey", width=1, dash="dot"))
    fig.update_xaxes(type="log")
    return _label(fig, " ", "training step + 1 [log]", ylabel)


def trajectory_interactive(loaded: dict, proxy: str = "frozen"):
    """Interactive: a metric against training step, the 4 cells' seed means with 95 % bands.

    Sliders: layer (``mean`` = mean over layers), frequency bucket, metric.
    """
    from tanbias.interactive import Interactive, Param

    a = _alignment_frame(loaded, proxy)
    L = int(max(x for x in a["layer"] if x != "mean"))
    layers = ("mean", *range(L + 1))
    buckets = tuple(dict.fromkeys(a["bucket"]))
    steps_total = next(iter(loaded.values())).config["steps"]

    # every (layer, bucket, metric, cell) curve computed once: a slider move is then a lookup
    curves = {}
    for metric in METRICS:
        st = _summarise(a, ["layer", "bucket", "kind", "regime", "step"], metric)
        for (layer, bucket, kind, regime), g in st.groupby(["layer", "bucket", "kind", "regime"], sort=False):
            g = g.sort_values("step")
            curves[layer, bucket, metric, kind, regime] = (
                (g["step"].to_numpy() + 1).tolist(), g["mean"].tolist(), g["lo"].to_numpy(), g["hi"].to_numpy())
    empty = ([], [], np.empty(0), np.empty(0))

    def compute(layer, bucket, metric):
        return {c: curves.get((layer, bucket, metric, *c), empty) for c in _cells()}

    def figure(data, layer, bucket, metric):
        # plain dicts on a cached layout (a go.Figure per update cost ~25 ms)
        lname = "mean over layers" if layer == "mean" else f"layer {layer}"
        traces = []
        for kind, regime in _cells():
            x, m, lo, hi = data[kind, regime]
            ok = np.isfinite(lo)
            xs = np.asarray(x)[ok]
            traces.append(dict(type="scatter", x=np.concatenate([xs, xs[::-1]]).tolist(),
                               y=np.concatenate([hi[ok], lo[ok][::-1]]).tolist(), fill="toself",
                               line=dict(width=0), fillcolor=COLORS[kind],
                               opacity=0.12 if regime == "natural" else 0.08, hoverinfo="skip",
                               showlegend=False, mode="lines"))
            traces.append(dict(type="scatter", x=x, y=m, mode="lines+markers", name=f"{kind}, {regime}",
                               line=dict(color=COLORS[kind], dash=DASH[regime]),
                               marker=dict(symbol=SYMBOL[regime], size=6)))
        layout = _trajectory_layout(EARLY_FRAC * steps_total + 1, METRICS[metric])
        layout["title"]["text"] = (f"{'Log enrichment' if metric == 'log_enrichment' else 'Excess ΔIsoScore*'}"
                                   f" during training, {lname}, tokens: {bucket}")
        return {"data": traces, "layout": layout}

    return Interactive(
        params=[Param("layer", "layer (0 = embeddings)", options=layers, default="mean"),
                Param("bucket", "frequency bucket", options=buckets),
                Param("metric", "metric", options=tuple(METRICS),
                      fmt={"log_enrichment": "log enrichment", "excess_iso": "excess ΔIsoScore*"}.get)],
        compute=compute, figure=figure, title="The four cells during training",
        caption="Lines: mean over seeds of each cell (blue encoder, orange decoder; solid natural "
                "mixture, dashed balanced); bands: 95 % t-interval over seeds. The proxy is the "
                "paper's (PCA of activations from the first 30 % of training, frozen; dotted line). "
                "Grey line: a random subspace (log enrichment 0, excess 0).",
        name="ch8-trajectories", height=520)


@frozen_layout
def _cells_layout():
    import plotly.graph_objects as go

    fig = go.Figure()
    fig.add_hline(y=0.0, line=dict(color="grey", width=1))
    fig.update_xaxes(categoryorder="array", categoryarray=[f"{k}, {g}" for k, g in _cells()])
    return _label(fig, " ", "cell (architecture, data regime)", METRICS["log_enrichment"])


def cells_interactive(loaded: dict, proxy: str = "frozen"):
    """Interactive: the four cells at one training step, seeds as points, mean and 95 % interval.

    Sliders: training step, layer, bucket.
    """
    from tanbias.interactive import Interactive, Param

    a = _alignment_frame(loaded, proxy)
    all_steps = sorted(set(int(s) for s in a["step"]))
    # every other probe step and the last: the trajectories show every step already
    steps = tuple(dict.fromkeys([*all_steps[::2], all_steps[-1]]))
    L = int(max(x for x in a["layer"] if x != "mean"))
    buckets = tuple(dict.fromkeys(a["bucket"]))

    # one pass of groupby instead of a filter per frame (the static figure has ~300 frames)
    lookup = {key: g.sort_values("seed")["log_enrichment"].to_numpy()
              for key, g in a.groupby(["step", "layer", "bucket", "kind", "regime"], sort=False)}
    empty = np.empty(0)

    def compute(step, layer, bucket):
        return {c: lookup.get((step, layer, bucket, *c), empty) for c in _cells()}

    def figure(data, step, layer, bucket):
        # plain dicts on a cached layout: this figure has ~200 static frames
        traces = []
        for kind, regime in _cells():
            y = data[kind, regime]
            mean, lo, hi, n = t_interval(y)
            name = f"{kind}, {regime}"
            traces.append(dict(type="scatter", x=[name] * len(y), y=y.tolist(), mode="markers",
                               name=f"{name}: seeds", showlegend=False,
                               marker=dict(color=COLORS[kind], symbol=SYMBOL[regime], size=9)))
            traces.append(dict(type="scatter", x=[name], y=[mean], mode="markers", name=name,
                               error_y=dict(type="data", symmetric=False,
                                            array=[hi - mean if np.isfinite(hi) else 0],
                                            arrayminus=[mean - lo if np.isfinite(lo) else 0]),
                               marker=dict(color=COLORS[kind], symbol="line-ew-open", size=26,
                                           line=dict(width=3, color=COLORS[kind]))))
        layout = _cells_layout()
        lname = "mean over layers" if layer == "mean" else f"layer {layer}"
        layout["title"]["text"] = f"Log enrichment at step {step}, {lname}, tokens: {bucket}"
        return {"data": traces, "layout": layout}

    return Interactive(
        params=[Param("step", "training step", options=steps, default=steps[-1]),
                Param("layer", "layer (0 = embeddings)", options=("mean", *range(L + 1)),
                      default="mean"),
                Param("bucket", "frequency bucket", options=buckets)],
        compute=compute, figure=figure, title="The 2×2 at one training step",
        caption="Points: seeds. Bars: the cell mean and its 95 % t-interval over seeds. "
                "0 = what a random subspace of the same rank gets.",
        name="ch8-cells", height=460)


def eta_interactive(loaded: dict, proxy: str = "frozen"):
    """Interactive: a bucket's late enrichment against its implied eta_g, one point per run and bucket.

    Sliders: layer, data regime shown, and the bucket whose eta_g is highlighted.
    """
    import plotly.graph_objects as go

    from tanbias.interactive import Interactive, Param

    eta = eta_by_bucket(loaded)
    met = run_metrics(loaded)
    met = met[(met["proxy"] == proxy) & (met["phase"] == "late") & (met["bucket"] != "all")]
    met = met[met["layer"] != "mean"].astype({"layer": int})
    j = eta.merge(met, on=["run", "kind", "regime", "seed", "layer", "bucket"])
    L = int(j["layer"].max())
    buckets = tuple(sorted(set(j["bucket"])))

    def compute(layer, regime, bucket):
        g = j[j["layer"] == layer]
        return {c: g[(g["kind"] == c[0]) & (g["regime"] == c[1])][["eta", "log_enrichment", "bucket", "seed"]]
                .to_numpy() if regime in ("both", c[1]) else np.empty((0, 4), object) for c in _cells()}

    def figure(data, layer, regime, bucket):
        fig = go.Figure()
        for (kind, reg), arr in data.items():   # one trace per cell, empty when filtered out
            sel = arr[:, 2] == bucket
            fig.add_trace(go.Scatter(
                x=arr[:, 0].astype(float), y=arr[:, 1].astype(float), mode="markers",
                name=f"{kind}, {reg}", text=[f"{b}, seed {s}" for b, s in zip(arr[:, 2], arr[:, 3])],
                marker=dict(color=COLORS[kind], symbol=SYMBOL[reg],
                            size=[14 if s else 7 for s in sel], line=dict(width=1, color=COLORS[kind]))))
        fig.add_hline(y=0.0, line=dict(color="grey", width=1))
        fig.update_xaxes(type="log")
        return _label(fig, f"Late enrichment against a bucket's implied η<sub>g</sub>, layer {layer} "
                      f"(large markers: {bucket})", "implied η<sub>g</sub> of the bucket = mean t² [log]",
                      METRICS["log_enrichment"])

    return Interactive(
        params=[Param("layer", "layer", 1, L, default=L, integer=True, steps=L),
                Param("regime", "data regime", options=("both", *REGIMES)),
                Param("bucket", "highlighted bucket", options=("none", *buckets),
                      default=buckets[0])],
        compute=compute, figure=figure, title="Enrichment and the η<sub>g</sub> of a frequency bucket",
        caption="One point per (run, frequency bucket): x = the bucket's implied η<sub>g</sub> "
                "(occurrence-weighted mean squared concentration radius t², t in units of the "
                "layer's overall spread, measured on one common held-out text), y = the bucket's "
                "log enrichment at the last probe step. The hypothesis predicts smaller "
                "η<sub>g</sub> (tighter tokens) with larger enrichment.",
        name="ch8-eta", height=500)


def radius_cdf_interactive(loaded: dict):
    """Interactive: distribution of the per-token radius t, natural vs balanced; sliders kind, layer, bucket."""
    import plotly.graph_objects as go

    from tanbias.interactive import Interactive, Param

    from tanbias.lab.probe import bucket_label

    tok = _tokens(loaded)
    L = int(tok["layer"].max())
    n_b = int(next(iter(loaded.values())).config["probe"]["n_buckets"])
    labels = {bucket_label(b, n_b): b for b in range(n_b)}

    def compute(kind, layer, bucket):
        g = tok[(tok["kind"] == kind) & (tok["layer"] == layer)]
        if bucket != "all":
            g = g[g["bucket"] == labels[bucket]]
        out = {}
        for regime in REGIMES:
            h = g[g["regime"] == regime]
            t = h["t"].to_numpy()
            w = h["count_text"].to_numpy(np.float64)
            o = np.argsort(t)
            t, c = t[o], np.cumsum(w[o]) / max(w.sum(), 1)
            # at most ~200 steps of the CDF: the page carries 32 frames of 2 curves
            keep = np.unique(np.searchsorted(c, np.linspace(0, 1, 201)).clip(0, max(len(c) - 1, 0)))
            out[regime] = (t[keep], c[keep]) if len(c) else (t, c)
        return out

    def figure(data, kind, layer, bucket):
        fig = go.Figure()
        for regime, (t, c) in data.items():
            fig.add_trace(go.Scatter(x=t, y=c, mode="lines", name=regime, line_shape="hv",
                                     line=dict(color=COLORS[kind], dash=DASH[regime])))
        fig.update_xaxes(type="log")
        return _label(fig, f"Per-token radius t, {kind}s, layer {layer}, tokens: {bucket}",
                      "t = RMS distance to the token's centroid / layer spread [log]",
                      "share of occurrences with radius ≤ t", legend="data regime")

    return Interactive(
        params=[Param("kind", "architecture", options=KINDS),
                Param("layer", "layer", 1, L, default=L, integer=True, steps=L),
                Param("bucket", "frequency bucket", options=("all", *labels))],
        compute=compute, figure=figure, title="How tightly tokens concentrate, by data regime",
        caption="Cumulative distribution of the concentration radius t over token occurrences, "
                "pooled over seeds, measured on the same held-out text for every run. A curve "
                "further left means more occurrences at small t (tighter tokens).",
        name="ch8-radius", height=460)


def frequency_figure(loaded: dict):
    """Rank-frequency curves of the training streams, one line per run."""
    import plotly.graph_objects as go

    fig = go.Figure()
    shown = set()
    for name, r in loaded.items():
        kind, regime, seed = _cell(name)
        if kind != "decoder":      # both kinds read the same streams per (regime, seed)
            continue
        x, y = rank_frequency(r.token_counts)
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=regime, legendgroup=regime,
                                 showlegend=regime not in shown,
                                 line=dict(color="#009E73" if regime == "natural" else "#CC79A7",
                                           dash=DASH[regime])))
        shown.add(regime)
    fig.update_xaxes(type="log")
    fig.update_yaxes(type="log")
    return _label(fig, "Token frequency seen in training, by data regime (one line per seed)",
                  "rank of the token type [log]", "share of training tokens [log]", legend="data regime")


def effects_figure(eff, tim=None, layer="mean", bucket="all", proxy="frozen"):
    """Forest plot: every seed-paired contrast of log enrichment as a ratio with its 95 % interval.

    Early and late phases side by side; with ``tim`` (:func:`timing`), one more
    row: the last step's enrichment over the run's peak.
    """
    import plotly.graph_objects as go

    e = eff[(eff["layer"] == layer) & (eff["bucket"] == bucket) & (eff["proxy"] == proxy)
            & (eff["metric"] == "log_enrichment") & eff["phase"].isin(["early", "late"])]
    order = list(CONTRASTS)
    fig = go.Figure()
    for phase, color, dy in (("early", "#999999", -0.15), ("late", "#000000", 0.15)):
        g = e[e["phase"] == phase].set_index("contrast").reindex(order)
        y = np.arange(len(order)) + dy
        fig.add_trace(go.Scatter(
            x=np.exp(g["mean"]), y=y, mode="markers", name=f"{phase} in training",
            marker=dict(color=color, size=9),
            error_x=dict(type="data", symmetric=False, array=np.exp(g["hi"]) - np.exp(g["mean"]),
                         arrayminus=np.exp(g["mean"]) - np.exp(g["lo"]), color=color)))
    pretty = {"interaction": "interaction (1 if effects add)", "architecture | natural": "architecture, natural data",
              "architecture | balanced": "architecture, balanced data"}
    labels = [pretty.get(c, c.replace(" | ", " within ")) for c in order]
    if tim is not None:
        m, lo, hi, n = t_interval(tim["log_late_over_peak"])
        fig.add_trace(go.Scatter(x=[np.exp(m)], y=[len(order)], mode="markers", name="last step / peak",
                                 marker=dict(color="#009E73", size=9, symbol="diamond"),
                                 error_x=dict(type="data", symmetric=False, array=[np.exp(hi) - np.exp(m)],
                                              arrayminus=[np.exp(m) - np.exp(lo)], color="#009E73")))
        labels.append(f"last step / peak (all {n} runs)")
    fig.add_vline(x=1.0, line=dict(color="grey", width=1))
    fig.update_xaxes(type="log")
    fig.update_yaxes(tickmode="array", tickvals=list(range(len(labels))), ticktext=labels, autorange="reversed")
    return _label(fig, "What the sweep decides: ratios of enrichment with 95 % intervals over seeds",
                  "ratio of tangent enrichment [log; 1 = no effect]", "contrast", legend="phase")
