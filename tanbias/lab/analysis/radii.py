"""Per-token concentration radii of a trained run on one common held-out text (chapter 8).

``python -m tanbias.lab mechanism RUN`` and the end of every run
(:func:`tanbias.lab.pipeline.after_run`) call :func:`measure_radii`, which
writes the run's ``tokens.csv``.
"""
from __future__ import annotations

import numpy as np
import torch

from tanbias.theory import alignment as al
from tanbias.theory.token_clouds import matched_statistics
from tanbias.lab import runs
from tanbias.lab.config import N_SPECIAL
from tanbias.lab.data import Stream
from tanbias.lab.devices import resolve_device
from tanbias.lab.models import load_trained
from tanbias.lab.probe import residual_modules

__all__ = ["measure_radii", "premise_rows", "PREMISE_M", "PREMISE_DRAWS"]

#: occurrences per type, and draws, of the count-matched premise (chapter 9's estimator)
PREMISE_M = 8
PREMISE_DRAWS = 20


def premise_rows(X, type_ids, train_counts, m: int = PREMISE_M, draws: int = PREMISE_DRAWS, rng=0) -> dict:
    """The count-matched premise of one layer: ``spearman`` between the training count of every type
    with at least ``m`` occurrences in ``X`` and its radius on ``m`` of them (averaged over ``draws``),
    ``n_types``, ``m``, ``draws``. The premise predicts a negative correlation (frequent, tight).

    >>> rng = np.random.default_rng(0)
    >>> ids = np.repeat(np.arange(30), 10)
    >>> X = rng.normal(size=(300, 4)) * (1 + ids[:, None] / 10)      # rarer ids (larger) are more diffuse
    >>> r = premise_rows(X, ids, train_counts=1000 - np.arange(30) * 30)
    >>> r["n_types"], r["spearman"] < -0.8
    (30, True)
    """
    from scipy import stats

    if np.bincount(np.asarray(type_ids, np.int64)).max(initial=0) < m:      # no type occurs m times
        return {"m": int(m), "draws": int(draws), "n_types": 0, "spearman": float("nan")}
    ms = matched_statistics(X, type_ids, m=m, draws=draws, rng=np.random.default_rng(rng))
    freq = np.asarray(train_counts, float)[ms["type"]]
    rho = float(stats.spearmanr(freq, ms["radius_t"]).statistic) if len(ms["type"]) > 2 else float("nan")
    return {"m": int(m), "draws": int(draws), "n_types": int(len(ms["type"])), "spearman": rho}


def measure_radii(run, n_batches: int = 8, min_count: int | None = None, write: bool = True,
                  device: str = "cpu"):
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

    The same activations give the count-matched premise (``premise.csv``, one row per
    layer, :func:`premise_rows`): Spearman's correlation between a type's training count
    and its radius measured on :data:`PREMISE_M` occurrences of every type
    (:func:`tanbias.theory.token_clouds.matched_statistics`, :data:`PREMISE_DRAWS` draws), with
    special tokens and position 0 (the attention sink) left out, so that the
    correlation is not the count's bias.

    An aliased run (``alias > 0``, chapter 11's aliasing knob) is shown the common text through
    its alias map (:meth:`tanbias.lab.data.Stream.common`): ``tokens.csv`` and the premise are
    then per *input id* (an alias is its own cloud; ``train_count`` the id's count in the
    shown training stream, ``input_counts.npy``), and ``types.csv`` has the same columns per
    *merged type* (every alias of a type in one cloud; the type's training count).

    Returns
    -------
    pandas.DataFrame
        Written to ``<run>/tokens.csv`` when ``write`` (and ``premise.csv``, and an aliased
        run's ``types.csv``).

    Raises
    ------
    CorruptFileError
        The checkpoint ``work/ckpt.pt`` is missing, unreadable or not at the
        run's last step (:func:`tanbias.lab.models.load_trained`).
    """
    import pandas as pd

    d = runs.run_dir(run)
    model, tok, cfg = load_trained(d)
    model = model.to(resolve_device(device))
    dev = next(model.parameters()).device
    aliased = cfg.alias > 0
    type_counts = np.load(d / "token_counts.npy")
    counts = np.load(d / "input_counts.npy") if aliased else type_counts
    modules = residual_modules(model)
    store: dict[int, list] = {i: [] for i in range(len(modules))}

    def keep(i):
        def hook(module, inputs, output):
            h = output[0] if isinstance(output, tuple) else output
            store[i].append(h.detach().reshape(-1, h.shape[-1]).float().cpu())
        return hook

    handles = [m.register_forward_hook(keep(i)) for i, m in enumerate(modules)]
    stream = Stream.from_config(cfg, tok)
    batches = stream.common(n_batches)
    ids = []
    try:
        with torch.no_grad():
            for b in batches:
                mask = b.get("attention_mask")
                model(input_ids=b["input_ids"].to(dev), attention_mask=None if mask is None else mask.to(dev))
                ids.append(b["input_ids"].reshape(-1))
    finally:
        for h in handles:
            h.remove()
    ids = torch.cat(ids).numpy().astype(np.int64)
    # an aliased run's merged types: the type of the id the model is shown at every position (an
    # encoder's <mask> inputs keep the special id and drop out, as in tokens.csv)
    types = stream.aliases.type_of(ids) if aliased else ids
    buckets = al.frequency_buckets(counts, cfg.probe.n_buckets)
    type_buckets = al.frequency_buckets(type_counts, cfg.probe.n_buckets)
    kind, regime, seed = cfg.kind, cfg.regime, cfg.seed
    min_count = cfg.probe.min_count if min_count is None else min_count
    rows, type_rows, premise = [], [], []
    seq_len = batches[0]["input_ids"].shape[1]
    content = (ids >= N_SPECIAL) & (np.arange(len(ids)) % seq_len != 0)
    groupings = [(rows, ids, counts, buckets)] + ([(type_rows, types, type_counts, type_buckets)] if aliased else [])
    for layer in range(1, len(modules)):
        X = torch.cat(store[layer]).double().numpy()
        premise.append({"run": d.name, "layer": layer, **premise_rows(X[content], ids[content], counts,
                                                                      rng=[seed, layer])})
        spread = float(np.sqrt(np.mean(np.sum((X - X.mean(0)) ** 2, axis=1))))
        for out, key, cnt, bkt in groupings:
            rad = al.concentration_radius(X, key, min_count=min_count, exclude=range(N_SPECIAL))
            for t, c, r in zip(rad["token_id"], rad["count"], rad["radius"]):
                out.append({"run": d.name, "kind": kind, "regime": regime, "seed": seed, "layer": layer,
                            "token_id": int(t), "count_text": int(c), "train_count": int(cnt[t]),
                            "bucket": int(bkt[t]), "radius": float(r), "t": float(r) / spread,
                            "spread": spread})
    df = pd.DataFrame(rows)
    if write:
        runs.atomic_write_text(d / "premise.csv", pd.DataFrame(premise).to_csv(index=False, float_format="%.6g"))
        if aliased:
            runs.atomic_write_text(d / "types.csv", pd.DataFrame(type_rows).to_csv(index=False, float_format="%.6g"))
        runs.atomic_write_text(d / "tokens.csv", df.to_csv(index=False, float_format="%.6g"))
        runs.write_manifest(d, cfg)
    return df
