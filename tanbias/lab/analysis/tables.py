"""Alignment tables from the probe's captures (chapters 7, 8).

:func:`analyse_run` reads a run's stored captures (:mod:`tanbias.lab.probe`)
and writes ``alignment.csv``, ``radius.csv`` and ``radius_corr.csv``, so the
analysis can be re-run (``python -m tanbias.lab probe RUN``) and the *frozen*
proxy can be applied to the early steps too:

* ``frozen``: rank-``r`` PCA of the activations pooled over the probe steps in
  the first ``fit_fraction`` (30 %) of training, per layer, then frozen and used
  at every step (the paper's global proxy, :func:`frozen_proxies`);
* ``refit``: rank-``r`` PCA of that step's own activations (per-checkpoint refit);
* ``local``: per frequent token, PCA of its own centred activations
  ``x - mu_token`` (rank ``local_rank``), metrics on that token's gradients
  (:func:`tanbias.theory.alignment.local_alignment`).

Each with 20 random orthogonal controls: energy share, enrichment, p-value,
ΔIsoScore* (:func:`tanbias.theory.alignment.alignment_test`), for all tokens and per
frequency bucket (equal shares of the run's token occurrences,
:func:`tanbias.theory.alignment.frequency_buckets`). Plus each token's concentration
radius and the correlation of log-frequency with it. Per-token analyses key a
position by its *input* token, so an encoder's ``<mask>`` positions (a special
id) are left out of buckets, local proxies and radii (they stay in ``all``).
"""
from __future__ import annotations

import contextlib

import numpy as np

from tanbias.theory import alignment as al
from tanbias.theory import anisotropy as an
from tanbias.theory import token_clouds
from tanbias.theory.token_clouds import unbiased_radius
from tanbias.errors import CorruptFileError
from tanbias.lab import runs
from tanbias.lab.config import EARLY_FRAC, N_SPECIAL, ProbeSettings, RunConfig
from tanbias.lab.probe import layer_activations, load_capture

__all__ = ["single_thread_blas", "bucket_label", "frozen_proxies", "analyse_captures", "anisotropy_rows",
           "reading_rows", "analyse_run", "add_log_enrichment", "mean_over_layers", "run_cell", "run_metrics",
           "tokens_table"]


@contextlib.contextmanager
def single_thread_blas():
    """Run numpy's bundled OpenBLAS on one thread inside the block.

    The analysis does many small matrix operations; on a shared, oversubscribed
    2-core machine OpenBLAS's threads spin against each other and made it ~20x
    slower (measured). One thread also makes the tables bit-reproducible.
    No-op if numpy's OpenBLAS cannot be found.
    """
    import ctypes
    import glob
    import os

    lib = None
    for path in glob.glob(os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs", "*openblas*")):
        try:
            h = ctypes.CDLL(path)
        except OSError:
            continue
        for get, set_ in (("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
                          ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
                          ("openblas_get_num_threads", "openblas_set_num_threads")):
            if hasattr(h, get) and hasattr(h, set_):
                lib = (getattr(h, get), getattr(h, set_))
                break
        if lib:
            break
    if lib is None:
        yield
        return
    before = lib[0]()
    lib[1](1)
    try:
        yield
    finally:
        lib[1](before)


def bucket_label(b: int, n_buckets: int) -> str:
    """``"q1 (most frequent)"`` ... ``"q3 (rarest)"``."""
    if b == 0:
        return "q1 (most frequent)"
    if b == n_buckets - 1:
        return f"q{b + 1} (rarest)"
    return f"q{b + 1}"


def frozen_proxies(captures: dict, layers, rank: int, fit_fraction: float, total_steps: int) -> dict:
    """The frozen global proxy of each layer: rank-``rank`` PCA of the activations pooled over
    the probe steps in the first ``fit_fraction`` of training (at most 16384 rows, seeded)."""
    steps = sorted(captures)
    fit_steps = [s for s in steps if s <= fit_fraction * total_steps] or steps[:1]
    frozen = {}
    for layer in layers:
        pooled = np.concatenate([layer_activations(captures[s], layer) for s in fit_steps])
        if len(pooled) > 16384:
            pooled = pooled[np.random.default_rng(0).choice(len(pooled), 16384, replace=False)]
        frozen[layer] = al.pca_basis(pooled, rank)
    return frozen


def _rows_for(token_ids, buckets, n_buckets, special):
    """(label, row mask) for 'all' and each frequency bucket."""
    b = np.where(~special, buckets[np.clip(token_ids, 0, len(buckets) - 1)], -1)
    out = [("all", np.ones(len(token_ids), bool))]
    out += [(bucket_label(k, n_buckets), b == k) for k in range(n_buckets)]
    return out


def analyse_captures(captures: dict[int, dict], probe: ProbeSettings, total_steps: int, counts: np.ndarray,
                     source: dict, progress: bool = False,
                     special_ids=None) -> tuple[list[dict], list[dict], list[dict]]:
    """Tidy rows (alignment, radius, radius_corr) from captures ``{step: capture}``.

    Parameters
    ----------
    captures : dict[int, dict]
        ``{step: capture}`` (:meth:`~tanbias.lab.probe.ResidualProbe.collect`).
    probe : ProbeSettings
        The analysis settings (``rank, local_rank, n_controls, n_buckets, min_count, zeta,
        fit_fraction, layers``).
    total_steps : int
        The run's number of steps (``frac`` of a step, the frozen proxy's window).
    source : dict
        ``run, kind, regime, seed``: the columns that say whose captures these are (the
        seed also seeds the random controls).
    counts : ndarray (vocab_size,)
        Token counts that define the frequency buckets and ``corpus_count``.
    progress : bool
        Show a tqdm bar.
    special_ids : iterable of int, optional
        Token ids left out of the per-token analyses (buckets, local proxies,
        radii) and of the bucket counts. Default ``range(N_SPECIAL)``: the lab
        tokenizer's ``<pad> <s> </s> <unk> <mask>``; pass a released
        tokenizer's ``all_special_ids`` for its checkpoints.
    """
    special_ids = sorted({int(i) for i in (range(N_SPECIAL) if special_ids is None else special_ids)})
    rank, local_rank = probe.rank, probe.local_rank
    n_ctrl, n_buckets, min_count = probe.n_controls, probe.n_buckets, probe.min_count
    zeta = float(probe.zeta)
    total = int(total_steps)
    layers = probe.layers
    steps = sorted(captures)
    L = captures[steps[0]]["acts"].shape[0]
    layers = list(range(L)) if layers is None else [int(x) for x in layers]
    bucket_counts = np.asarray(counts, np.float64).copy()
    bucket_counts[[i for i in special_ids if 0 <= i < len(bucket_counts)]] = 0
    buckets = al.frequency_buckets(bucket_counts, n_buckets, n_special=0)
    freq = np.asarray(counts, np.float64)
    base = {"run": source["run"], "kind": source["kind"], "regime": source["regime"], "seed": int(source["seed"])}
    seed = base["seed"]

    # frozen global proxy: PCA of activations pooled over the first fit_fraction of training
    frozen = frozen_proxies(captures, layers, rank, probe.fit_fraction, total)

    align, radius, corr = [], [], []
    it = [(s, l) for s in steps for l in layers]
    if progress:
        from tqdm.auto import tqdm
        it = tqdm(it, desc=f"probe {base['run']}", unit="layer-step")
    for step, layer in it:
        cap = captures[step]
        X = layer_activations(cap, layer)
        G = cap["grads"][layer].astype(np.float64)
        # per-token analyses use the token the model *sees* at each position: an encoder's
        # <mask> positions (a special id) drop out instead of mixing a <mask> embedding
        # into the occurrences of the token it hides
        ids = cap.get("input_ids", cap["token_ids"]).astype(np.int64)
        special = np.isin(ids, special_ids)
        refit = al.pca_basis(X, rank)
        meta = {**base, "step": int(step), "frac": step / max(total - 1, 1), "layer": int(layer)}
        for b_label, mask in _rows_for(ids, buckets, n_buckets, special):
            Gb = G[mask]
            nz = np.any(Gb != 0, axis=1)
            for p_i, (proxy, Q) in enumerate((("frozen", frozen[layer]), ("refit", refit))):
                if nz.sum() < 2:
                    continue
                rng = np.random.default_rng([seed, step, layer, p_i, len(align)])
                row = al.alignment_test(Gb, Q, n_controls=n_ctrl, rng=rng, zeta=zeta)
                align.append({**meta, "bucket": b_label, "proxy": proxy, **row})
            rng = np.random.default_rng([seed, step, layer, 2, len(align)])
            keep = mask & ~special
            row = al.local_alignment(X[keep], G[keep], ids[keep], rank=local_rank,
                                     min_count=min_count, n_controls=n_ctrl, rng=rng, zeta=zeta)
            if row is not None:
                align.append({**meta, "bucket": b_label, "proxy": "local", **row})
        rad = al.concentration_radius(X, ids, min_count=min_count, exclude=special_ids)
        f = freq[rad["token_id"]]
        ok = f > 0
        for t, c, r in zip(rad["token_id"], rad["count"], rad["radius"]):
            radius.append({**meta, "token_id": int(t), "count_in_batch": int(c),
                           "corpus_count": float(freq[t]), "bucket": int(buckets[t]),
                           "radius": float(r)})
        cr = al.frequency_radius_correlation(f[ok], rad["radius"][ok])
        corr.append({**meta, **cr})
    return align, radius, corr


def anisotropy_rows(captures: dict, config: RunConfig) -> list[dict]:
    """Anisotropy of every probed layer at every probe step (chapter 10's activations link).

    One row per (step, layer, positions): ``mean_cosine``, ``isoscore_star``, ``top1_share``
    (:func:`tanbias.theory.token_clouds.anisotropy`, on the captured activations) and the
    participation ratio ``(sum λ)^2 / sum λ^2`` of their covariance's eigenvalues
    (an effective dimension between 1 and D; its record in
    :data:`tanbias.theory.anisotropy.METRICS`). ``positions`` says which captured
    positions: ``"all"`` (what chapter 10 reads; runs analysed before chapter 12 have
    only these rows), ``"content"``: special tokens (the encoder's ``<mask>``
    inputs included) and position 0 of each sequence (the attention sink) left out, or
    ``"intact"``: the content positions whose input is the text's own token (an encoder's
    corrupted positions left out, whatever they show: the same positions under ``<mask>`` and
    under random corruption, :func:`tanbias.lab.data.mask_tokens`; a decoder's are its content
    positions). Runs analysed before the horizon experiment have no ``"intact"`` rows.
    """
    rows = []
    total = config.steps
    seq_len = config.size.seq_len
    for step in sorted(captures):
        cap = captures[step]
        ids = np.asarray(cap.get("input_ids", cap["token_ids"])).astype(np.int64).reshape(-1)
        content = (ids >= N_SPECIAL) & (np.arange(len(ids)) % seq_len != 0)
        shown = np.asarray(cap["token_ids"]).astype(np.int64).reshape(-1)
        intact = content & (ids == shown)
        for layer in range(len(cap["acts"])):
            X_all = layer_activations(cap, layer)
            for positions, X in (("all", X_all), ("content", X_all[content]), ("intact", X_all[intact])):
                X = X[np.linalg.norm(X, axis=1) > 0]
                a = token_clouds.anisotropy(X, rng=np.random.default_rng([config.seed, step, layer]),
                                            zeta=config.probe.zeta)
                rows.append({"run": config.name, "step": int(step), "frac": step / max(total - 1, 1),
                             "layer": int(layer), "positions": positions, "n_tokens": int(len(X)),
                             "mean_cosine": a["mean_cosine"], "isoscore_star": a["isoscore_star"],
                             "top1_share": a["top1_share"], **an.Cloud(X).read(["participation_ratio"])})
    return rows


def reading_rows(captures: dict, config: RunConfig) -> list[dict]:
    """The rival accounts' readings at every probe step and layer (``rivals.csv``, the rivals chapter).

    One row per (step, layer), on the content positions of :func:`anisotropy_rows` (special
    tokens and position 0 left out):

    * the lab's readings of :func:`tanbias.theory.anisotropy.readings` (``raw``, ``centered``,
      ``standardised``, ``type_balanced`` by input type, ``mean_share``, ``top_share``);
    * chapter 7's enrichment of the frozen proxy on every captured position (``enrichment``),
      and the same with the output matrix's top-``rank`` right singular subspace at that step
      projected out of the proxy and of the gradients (``enrichment_outside``, with
      ``wu_energy``: the gradients' energy share in that subspace, and ``wu_overlap``: the
      proxy's), :func:`tanbias.theory.alignment.enrichment_outside`; both with the same
      seeded controls. NaN where the capture has no output spectrum (runs trained before it
      was stored);
    * how sharply the proxies are determined, ``sigma_r / sigma_(r+1)``: ``sharpness_refit`` of
      the step's own activations, ``sharpness_frozen`` of the pooled early activations the
      frozen proxy is fitted on (:func:`tanbias.theory.alignment.subspace_sharpness`);
    * the variance null (runs from the horizon experiment on): the frozen proxy's enrichment of the
      centred activations' variance on the same positions (``var_enrichment``) and the gradients'
      enrichment over it (``calibrated``), :func:`tanbias.theory.alignment.variance_calibrated_test`,
      with controls of their own seed (the columns before them are unchanged).
    """
    rank, total, seq_len = config.probe.rank, config.steps, config.size.seq_len
    steps = sorted(captures)
    L = captures[steps[0]]["acts"].shape[0]
    layers = list(range(L)) if config.probe.layers is None else [int(x) for x in config.probe.layers]
    frozen = frozen_proxies(captures, layers, rank, config.probe.fit_fraction, total)
    fit_steps = [s for s in steps if s <= config.probe.fit_fraction * total] or steps[:1]
    sharp_frozen = {}
    for layer in layers:
        pooled = np.concatenate([layer_activations(captures[s], layer) for s in fit_steps])
        if len(pooled) > 16384:                      # the rows frozen_proxies fits on
            pooled = pooled[np.random.default_rng(0).choice(len(pooled), 16384, replace=False)]
        sharp_frozen[layer] = al.subspace_sharpness(pooled, rank)
    nan = float("nan")
    rows = []
    for step in steps:
        cap = captures[step]
        ids = np.asarray(cap.get("input_ids", cap["token_ids"])).astype(np.int64).reshape(-1)
        content = (ids >= N_SPECIAL) & (np.arange(len(ids)) % seq_len != 0)
        # the capture keeps W_U's right singular vectors in float32: orthonormal to about 1e-7, which the
        # 1e-6 check of a basis can miss on a 192-dimensional model; the same span, orthonormal in float64
        B = al.orthonormal(cap["wu_vt"][:rank].T.astype(np.float64)) if "wu_vt" in cap else None
        for layer in layers:
            X = layer_activations(cap, layer)
            Xc = X[content]
            live = np.linalg.norm(Xc, axis=1) > 0
            r = an.readings(Xc[live], type_ids=ids[content][live])
            G = cap["grads"][layer].astype(np.float64)
            nonzero = np.any(G != 0, axis=1)
            G = G[nonzero]
            Q = frozen[layer]
            rng = np.random.default_rng([config.seed, step, layer, 7])
            plain = al.enrichment_test(G, Q, rng=rng, n_controls=config.probe.n_controls)["enrichment"]
            out = {"enrichment": nan, "energy_removed": nan, "overlap": nan}
            if B is not None:
                out = al.enrichment_outside(G, Q, B, rng=np.random.default_rng([config.seed, step, layer, 8]),
                                            n_controls=config.probe.n_controls)
            vc = al.variance_calibrated_test(X[nonzero], G, Q, rng=np.random.default_rng([config.seed, step, layer, 9]),
                                             n_controls=config.probe.n_controls)
            rows.append({"run": config.name, "step": int(step), "frac": step / max(total - 1, 1),
                         "layer": int(layer), **{m.name: r[m.name] for m in an.lab_metrics()}, "n_tokens": r["n"],
                         "types": r["types"], "enrichment": plain,
                         "enrichment_outside": out["enrichment"], "wu_energy": out["energy_removed"],
                         "wu_overlap": out["overlap"], "sharpness_refit": al.subspace_sharpness(X, rank),
                         "sharpness_frozen": sharp_frozen[layer],
                         "var_enrichment": vc["var_enrichment"], "calibrated": vc["calibrated"]})
    return rows


def analyse_run(run, progress: bool = True) -> dict:
    """Recompute ``alignment.csv``, ``radius.csv``, ``radius_corr.csv``, ``anisotropy.csv`` from the captures.

    Raises
    ------
    CorruptFileError
        A capture is missing or unreadable (the message names the file and the
        command that regenerates it).
    """
    import pandas as pd

    d = runs.run_dir(run)
    regen = runs.regenerate_command(d)
    config = runs.read_config(d)
    captures = {}
    for s in config.probe.grid(config.steps):
        captures[s] = load_capture(runs.capture_path(d, s), regen)
    # the per-token analyses key on the id the model is shown: an aliased run's alias ids
    counts_path = d / ("input_counts.npy" if config.alias > 0 else "token_counts.npy")
    try:
        counts = np.load(counts_path)
    except Exception as exc:
        raise CorruptFileError(counts_path, regen, f"unreadable: {exc}") from None
    with single_thread_blas():
        source = {"run": config.name, "kind": config.kind, "regime": config.regime, "seed": config.seed}
        align, radius, corr = analyse_captures(captures, config.probe, config.steps, counts, source,
                                               progress=progress)
        aniso = anisotropy_rows(captures, config)
        rivals = reading_rows(captures, config)
    # no type repeats min_count times in a tiny probe batch (smoke runs): an empty table, with its header
    radius_cols = ["run", "kind", "regime", "seed", "step", "frac", "layer", "token_id", "count_in_batch",
                   "corpus_count", "bucket", "radius"]
    tables = {"alignment.csv": pd.DataFrame(align), "radius.csv": pd.DataFrame(radius, columns=None if radius
                                                                                  else radius_cols),
              "radius_corr.csv": pd.DataFrame(corr), "anisotropy.csv": pd.DataFrame(aniso),
              "rivals.csv": pd.DataFrame(rivals)}
    for name, df in tables.items():
        runs.atomic_write_text(d / name, df.to_csv(index=False, float_format="%.6g"))
    return tables


# --------------------------------------------------------------------------- reading runs' tables
# The readers every experiment's analysis and the measurement command share (their home is here, not
# in the first experiment's analysis, which reads them too)
def add_log_enrichment(alignment):
    """A copy of an alignment table with ``log_enrichment = ln(enrichment)`` and
    ``excess_iso = d_iso_proxy - d_iso_control_mean``."""
    a = alignment.copy()
    a["log_enrichment"] = np.log(a["enrichment"].clip(lower=1e-12))
    a["excess_iso"] = a["d_iso_proxy"] - a["d_iso_control_mean"]
    return a


def mean_over_layers(table, keys, columns=("log_enrichment", "excess_iso"), sort: bool = False):
    """The layer average of the book: the mean over the ``layer`` rows of each group ``keys``.

    Applied to ``log_enrichment`` (:func:`add_log_enrichment`) this is the
    *geometric* mean of the enrichment over layers. Enrichment is a ratio (the
    proxy's energy over the controls'): a layer at x2 and one at x0.5 average
    to 1, no effect, on the log scale, where an arithmetic mean would report
    x1.25. Chapters 7 and 8 both use this one definition.
    """
    return table.groupby(list(keys), sort=sort)[list(columns)].mean().reset_index()


def run_cell(r) -> tuple[str, str, int]:
    """``(kind, regime, seed)`` of a loaded run, from its config (any run name: sweep or dose)."""
    return r.config.kind, r.config.regime, r.config.seed


def run_metrics(loaded: dict, early_frac: float = EARLY_FRAC):
    """One row per (run, layer, bucket, proxy, phase) with the alignment metrics.

    Phases: ``init`` (step 0, the untrained model), ``early`` (mean over the
    probe steps with ``0 < frac <= early_frac``), ``late`` (the last probe
    step). ``layer`` is an integer, or ``"mean"`` for :func:`mean_over_layers`
    (enrichment averaged on the log scale: it is a ratio).

    Columns: ``run, kind, regime, seed, layer, bucket, proxy, phase,
    log_enrichment, excess_iso, p_energy``.
    """
    import pandas as pd

    cols = ["log_enrichment", "excess_iso", "p_energy"]
    frames = []
    for name, r in loaded.items():
        a = add_log_enrichment(r.alignment)
        last = a["step"].max()
        phases = {"init": a[a["step"] == 0], "early": a[(a["step"] > 0) & (a["frac"] <= early_frac)],
                  "late": a[a["step"] == last]}
        for phase, g in phases.items():
            by = g.groupby(["layer", "bucket", "proxy"], sort=False)[cols].mean().reset_index()
            mean = mean_over_layers(by, ["bucket", "proxy"], cols)
            mean["layer"] = "mean"
            both = pd.concat([by.astype({"layer": object}), mean], ignore_index=True)
            kind, regime, seed = run_cell(r)
            both.insert(0, "phase", phase)
            both.insert(0, "seed", seed)
            both.insert(0, "regime", regime)
            both.insert(0, "kind", kind)
            both.insert(0, "run", name)
            frames.append(both)
    return pd.concat(frames, ignore_index=True)


def tokens_table(loaded: dict):
    """The runs' per-token radii (``tokens.csv``), one frame, with ``t`` freed of its count bias.

    ``t_plain`` is the stored RMS radius over the type's ``count_text`` occurrences;
    ``t`` is :func:`tanbias.theory.token_clouds.unbiased_radius` of it (``t·sqrt(c/(c−1))``): a
    type seen 8 times no longer looks tighter than one seen 800 times for that reason
    alone. Every statistic of the lab's radii reads ``t``.
    """
    import pandas as pd

    frames = []
    for name, r in loaded.items():
        if r.tokens is None:
            raise CorruptFileError(r.path / "tokens.csv", f"python -m tanbias.lab mechanism {name}",
                                   "the per-token radii are missing")
        frames.append(r.tokens)
    tok = pd.concat(frames, ignore_index=True).rename(columns={"t": "t_plain"})
    tok["t"] = unbiased_radius(tok["t_plain"].to_numpy(), tok["count_text"].to_numpy())
    return tok
