"""The numbers behind the trained views of chapters 5 and 6 (``views.json``).

:func:`compute_views` reads a trained run's final checkpoint
(:func:`tanbias.lab.models.load_trained`) and its probe captures and writes
``views.json``; :func:`load_views` reads it back for the figures
(:mod:`tanbias.figures.runs`).
"""
from __future__ import annotations

import json

import numpy as np

from tanbias.theory import alignment as al
from tanbias.theory import attention as att
from tanbias.errors import CorruptFileError
from tanbias.lab import runs
from tanbias.lab.analysis.tables import frozen_proxies, single_thread_blas
from tanbias.lab.config import N_SPECIAL
from tanbias.lab.probe import layer_activations, load_capture, residual_modules

__all__ = ["compute_views", "load_views"]


def compute_views(run, n_tokens: int = 200, attn_tokens: int = 6, min_count: int | None = None) -> dict:
    """Write and return ``views.json`` of a trained run (see ``_compute_views``)."""
    with single_thread_blas():
        return _compute_views(run, n_tokens, attn_tokens, min_count)


def _compute_views(run, n_tokens, attn_tokens, min_count) -> dict:
    """Write ``views.json``: per-layer numbers for the chapter-5/6 views, from the final model.

    * attention (chapter 5): at each block ``l``, the input of its attention
      (``input_layernorm(h_{l-1})`` at the last probe step), for the
      ``attn_tokens`` most frequent token types: centroid ``mu``, local tangent
      proxy (rank ``local_rank`` PCA), normal = its orthogonal complement; the
      key-centred RMS of the bilinear score terms of head 0 (RoPE ignored: the
      scores at relative position 0) and the attention change when the tangent
      or the normal part is removed, averaged over the token types;
    * depth (chapter 6): per probe step in {first, ~30 %, last} and layer, the
      tangent and normal norms of ``n_tokens`` centred activations with respect
      to that layer's frozen global proxy, and the normal share of the stream.

    Needs the run's ``work/`` folder (final checkpoint and captures).
    """
    import torch   # torch and the models only here: load_views stays light for the chapters

    from tanbias.lab.models import load_trained

    d = runs.run_dir(run)
    regen = runs.regenerate_command(d)
    model, _, cfg = load_trained(d)
    pc = cfg.probe
    min_count = max(pc.min_count, 2 * pc.local_rank + 2) if min_count is None else int(min_count)
    steps = pc.grid(cfg.steps)
    caps = {s: load_capture(runs.capture_path(d, s), regen) for s in steps}
    last = caps[steps[-1]]
    ids = last.get("input_ids", last["token_ids"]).astype(np.int64)
    uniq, cnt = np.unique(ids[ids >= N_SPECIAL], return_counts=True)
    top = uniq[np.argsort(-cnt)][:attn_tokens]
    top = [t for t in top if (ids == t).sum() >= min_count] or \
        [t for t in top if (ids == t).sum() >= pc.local_rank + 2]    # tiny (smoke) captures
    attention = []
    layers = residual_modules(model)[1:]
    n_heads = model.config.num_attention_heads
    dh = model.config.hidden_size // n_heads
    for l, block in enumerate(layers, start=1):
        h = torch.from_numpy(last["acts"][l - 1].astype(np.float32))
        with torch.no_grad():
            x = block.input_layernorm(h).double().numpy()
        W_Q = block.self_attn.q_proj.weight.detach().double().numpy()[:dh]
        W_K = block.self_attn.k_proj.weight.detach().double().numpy()[:dh]
        rms_acc, tv_t, tv_n, radii = [], [], [], []
        for t in top:
            xt = x[ids == t]
            mu = xt.mean(axis=0)
            T = al.pca_basis(xt, pc.local_rank)
            full = np.linalg.svd(np.eye(len(mu)) - T @ T.T)[0][:, :len(mu) - T.shape[1]]
            terms = att.score_decomposition(xt, mu, T, full, W_Q, W_K)
            rms_acc.append(att.key_centred_rms(terms))
            e = att.removal_effect(xt, mu, T, full, W_Q, W_K)
            tv_t.append(e["tangent"])
            tv_n.append(e["normal"])
            radii.append(float(np.sqrt(np.mean(np.sum((xt - mu) ** 2, axis=1)))))
        attention.append({"layer": l, "rms": {k: float(np.mean([r[k] for r in rms_acc])) for k in att.KEY_TERMS},
                          "tv_tangent": float(np.mean(tv_t)), "tv_normal": float(np.mean(tv_n)),
                          "t": float(np.mean(radii)), "n_types": len(top)})
    # depth: frozen proxy per layer, as in the analysis
    L1 = last["acts"].shape[0]
    frozen = frozen_proxies(caps, range(L1), pc.rank, pc.fit_fraction, cfg.steps)
    pick = sorted({steps[0], min(steps, key=lambda s: abs(s - pc.fit_fraction * cfg.steps)), steps[-1]})
    depth = []
    for s in pick:
        tan, nor, share = [], [], []
        for layer in range(L1):
            X = layer_activations(caps[s], layer)
            Xc = X - X.mean(axis=0)
            pt = Xc @ frozen[layer]
            et = np.sum(pt ** 2, axis=1)
            en = np.maximum(np.sum(Xc ** 2, axis=1) - et, 0)
            tan.append(np.sqrt(et[:n_tokens]).round(5).tolist())
            nor.append(np.sqrt(en[:n_tokens]).round(5).tolist())
            share.append(float(en.sum() / (en.sum() + et.sum())))
        depth.append({"step": int(s), "tangent": tan, "normal": nor, "normal_share": share})
    views = {"run": d.name, "rank": pc.rank, "local_rank": pc.local_rank,
             "attention_step": int(steps[-1]), "attention": attention, "depth": depth}
    runs.atomic_write_text(d / "views.json", json.dumps(views) + "\n")
    return views


def load_views(run) -> dict:
    """The run's ``views.json`` (checksums verified), for the trained views of chapters 5 and 6."""
    d = runs.run_dir(run)
    runs.verify_run(d)
    p = d / "views.json"
    if not p.is_file():
        raise CorruptFileError(p, f"python -m tanbias.lab probe {d.name}", "views file is missing")
    return json.loads(p.read_text())
