"""Real pretrained models on real text: the premise, anisotropy, alignment and curvature (ch 9).

For each model of the zoo (:mod:`tanbias.lab.zoo`: SmolLM2-135M, Gemma-3-270M,
all-MiniLM-L6-v2), :func:`measure` reads held-out documents of the lab's
corpus (eight languages for the decoders, English for MiniLM), keeps every
layer's hidden states in float32 (one array per model, never float64 for all
layers at once), and writes tidy tables under ``data/pretrained/<model>/``:

``types.csv``
    Per layer and token type with at least ``min_count`` occurrences: its
    occurrence count in the text, its frequency in a large sample of the
    corpus under the model's own tokenizer, its web-scale Zipf frequency
    (``wordfreq``, whole-word types only), and the three readings of
    "distance to the centroid" (:func:`tanbias.token_clouds.type_statistics`):
    (a) the concentration radius *t*, (b) the centroid's distance to the
    layer mean, (c) self-similarity; plus the local normal share.
``premise.csv``
    Spearman correlation of each reading with log frequency, per layer and
    frequency source, with bootstrap 95 % intervals over token types; and the
    same at the first, middle and last layer for other ``min_count`` values and
    shorter texts (robustness).
``anisotropy.csv``
    Per layer: mean cosine of random pairs, IsoScore*, top-1/top-k variance
    share, outlier ("rogue") dimensions.
``curvature.csv``
    Per layer: the log-log slope of the types' local normal share against
    their *t*, beside the slope 2 that a curved manifold predicts.
``alignment.csv`` (decoders)
    The post-hoc alignment test at the final checkpoint
    (:func:`tanbias.lab.analysis.posthoc.probe_checkpoints`).
``manifest.json``
    Package versions, weight checksum, text sample and seed, timings
    (tokens/s and the fraction of the measured matrix-multiply peak), code
    commit, and the checksums of the tables.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from tanbias.errors import CorruptFileError, ParameterError
from tanbias.lab.runs import atomic_write_text, sha256

__all__ = ["PRETRAINED_DIR", "DEFAULTS", "MODEL_SETTINGS", "TABLES", "READINGS", "corpus_frequencies",
           "word_marker", "wordfreq_frequencies", "hidden_states", "layer_tables", "premise_table",
           "robustness_table", "measure", "measure_all", "load_pretrained"]

PRETRAINED_DIR = Path(__file__).resolve().parents[3] / "data" / "pretrained"

#: The settings of the committed measurements (``measure``'s defaults).
DEFAULTS = dict(n_tokens=32_768, seq_len=256, batch_size=8, seed=0, min_count=8,
                robust_min_counts=(4, 8, 16, 32), robust_fractions=(0.25, 0.5, 1.0),
                n_boot=1000, normal_k=4, probe_tokens=4096, probe=None,
                frequency_docs=None)

#: Per-model departures from :data:`DEFAULTS`: MiniLM reads English only, and the
#: corpus' held-out English documents hold about 29,000 of its tokens.
MODEL_SETTINGS = {"minilm-l6": {"n_tokens": 24_576}}

#: The tables :func:`measure` writes (and :func:`load_pretrained` reads).
TABLES = ("types", "premise", "anisotropy", "curvature")
READINGS = ("radius_t", "centroid_distance", "self_similarity")
ENGLISH_ONLY = ("en",)


def _rebuild(name: str) -> str:
    return f"python -m tanbias.lab pretrained {name}"


def corpus_frequencies(tokenizer, languages, vocab_size: int, max_docs: int | None = None) -> np.ndarray:
    """Token counts of the corpus' training split under ``tokenizer`` (the model's own).

    ``max_docs`` caps the documents read per language (None: all of them,
    about 86,000 documents and 2 million words in all).

    The zoo models' training corpora are not available; this is the frequency
    proxy (the web-scale ``wordfreq`` one is the check that conclusions do not
    hang on it).
    """
    from tanbias.lab.corpus import split

    train, _ = split()
    counts = np.zeros(vocab_size, dtype=np.int64)
    for lang in languages:
        docs = train[lang] if max_docs is None else train[lang][:max_docs]
        for start in range(0, len(docs), 2048):
            enc = tokenizer(docs[start:start + 2048], add_special_tokens=False)["input_ids"]
            flat = np.fromiter((t for row in enc for t in row), dtype=np.int64)
            counts += np.bincount(flat, minlength=vocab_size)[:vocab_size]
    return counts


#: Markers that tokenizers put in front of a word-initial piece.
_WORD_START = ("Ġ", "▁")


def word_marker(tokenizer) -> str:
    """How ``tokenizer`` marks words: ``"Ġ"`` (byte-level BPE), ``"▁"`` (SentencePiece) or ``"##"``.

    For the first two a word-initial piece starts with the marker; for WordPiece
    (``"##"``) a word-continuing piece does.
    """
    vocab = list(tokenizer.get_vocab())
    for marker in _WORD_START + ("##",):
        if sum(t.startswith(marker) for t in vocab) > 0.05 * len(vocab):
            return marker
    raise ParameterError("tokenizer: no word marker (Ġ, ▁ or ##) on 5 % of its vocabulary; "
                         "whole-word types cannot be told apart. Use a BPE, SentencePiece or "
                         "WordPiece tokenizer.")


def wordfreq_frequencies(tokenizer, types, type_language) -> np.ndarray:
    """Web-scale Zipf frequency (``wordfreq``) of each type that is a whole word, else NaN.

    A type counts as a whole word when it begins a word (its token string starts
    with the word marker ``Ġ`` or ``▁``; for WordPiece, it does not start with
    ``##``), the rest is alphabetic, and ``wordfreq`` knows it in the type's
    language (the language of most of its occurrences). A piece that happens
    to spell a word at the start of longer words counts too: a limitation of
    reading types, not occurrences.
    """
    from wordfreq import zipf_frequency

    marker = word_marker(tokenizer)
    tokens = tokenizer.convert_ids_to_tokens([int(t) for t in types])
    out = np.full(len(types), np.nan)
    for i, (tok, lang) in enumerate(zip(tokens, type_language)):
        if tok is None:
            continue
        if marker == "##":
            word = None if tok.startswith("##") else tok
        else:
            word = tok[len(marker):] if tok.startswith(marker) else None
        if word and word.isalpha():
            z = zipf_frequency(word.lower(), lang)
            if z > 0:
                out[i] = z
    return out


def hidden_states(model, input_ids: np.ndarray, keep: np.ndarray, batch_size: int = 8,
                  progress: bool = True) -> tuple[np.ndarray, float]:
    """Every layer's hidden state at the kept positions, float32, and the forward seconds.

    Parameters
    ----------
    model : a ``transformers`` model in eval mode (returns ``hidden_states``)
    input_ids : (rows, seq_len) int array
    keep : (rows, seq_len) bool array
        Positions to keep (special tokens are dropped).

    Returns
    -------
    (H, seconds) : (L + 1, n_kept, D) float32 array, and the time spent in forward passes.
    """
    import torch

    rows = input_ids.shape[0]
    n = int(keep.sum())
    body = model.base_model   # the blocks without a language-model head: no logits to compute
    H = None
    pos, seconds = 0, 0.0
    it = range(0, rows, batch_size)
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(it, desc="forward", unit="batch", total=-(-rows // batch_size))
    with torch.inference_mode():
        for start in it:
            ids = torch.as_tensor(input_ids[start:start + batch_size])
            t0 = time.perf_counter()
            out = body(input_ids=ids, attention_mask=torch.ones_like(ids), output_hidden_states=True)
            seconds += time.perf_counter() - t0
            mask = torch.as_tensor(keep[start:start + batch_size])
            k = int(mask.sum())
            if H is None:
                H = np.empty((len(out.hidden_states), n, out.hidden_states[0].shape[-1]), np.float32)
            for layer, h in enumerate(out.hidden_states):
                H[layer, pos:pos + k] = h[mask].float().numpy()
            pos += k
            del out
    return H, seconds


def layer_tables(X, type_ids, frequency, zipf, min_count: int, normal_k: int, layer: int):
    """The per-type rows and the anisotropy row of one layer (pandas frames)."""
    import pandas as pd

    from tanbias import token_clouds as tc

    spread = tc.layer_spread(X)
    st = tc.type_statistics(X, type_ids, min_count=min_count, spread=spread)
    ns = tc.type_normal_shares(X, type_ids, k=normal_k, min_count=min_count, spread=spread)
    share = pd.Series(ns["normal_share"], index=ns["type"])
    types = st["type"]
    rows = pd.DataFrame({"layer": layer, "type": types, "count": st["count"],
                         "corpus_count": frequency[types], "zipf": zipf[types],
                         "radius_t": st["radius_t"], "centroid_distance": st["centroid_distance"],
                         "self_similarity": st["self_similarity"],
                         "normal_share": share.reindex(types).to_numpy()})
    an = tc.anisotropy(X, rng=layer)
    aniso = {"layer": layer, "spread": spread,
             **{k: v for k, v in an.items() if k not in ("outlier_dims", "contributions")},
             "outlier_dims": " ".join(str(d) for d in an["outlier_dims"])}
    return rows, aniso


def premise_table(types, n_boot: int, seed: int = 0):
    """Spearman correlation of each reading with log frequency, per layer and source."""
    import pandas as pd

    from tanbias import token_clouds as tc

    out = []
    for layer, g in types.groupby("layer"):
        for source, col in (("corpus", "corpus_count"), ("wordfreq", "zipf")):
            ok = g[col].notna() & (g[col] > 0)
            freq = np.log(g.loc[ok, col]) if source == "corpus" else g.loc[ok, col]
            for reading in READINGS:
                if ok.sum() < 10:
                    continue
                r = tc.spearman_ci(freq.to_numpy(), g.loc[ok, reading].to_numpy(),
                                   n_boot=n_boot, rng=seed + int(layer))
                out.append({"layer": int(layer), "source": source, "reading": reading, **r})
    return pd.DataFrame(out)


def robustness_table(H, type_ids, frequency, layers, min_counts, fractions, n_boot, seed=0):
    """The premise at a few layers for other ``min_count`` values and text lengths."""
    import pandas as pd

    from tanbias import token_clouds as tc

    out = []
    n = H.shape[1]
    for layer in layers:
        for frac in fractions:
            m = int(round(frac * n))
            X, ids = H[layer, :m], type_ids[:m]
            spread = tc.layer_spread(X)
            for mc in min_counts:
                st = tc.type_statistics(X, ids, min_count=mc, spread=spread)
                freq = np.log(np.maximum(frequency[st["type"]], 1))
                for reading in READINGS:
                    r = tc.spearman_ci(freq, st[reading], n_boot=n_boot, rng=seed + layer)
                    out.append({"layer": int(layer), "n_tokens": m, "min_count": mc,
                                "reading": reading, **r})
    return pd.DataFrame(out)


def _flops_per_token(model, seq_len: int) -> float:
    """Forward FLOPs per token: 2 x parameters outside the embedding, plus attention scores."""
    cfg = model.config
    emb = model.get_input_embeddings().weight.numel()
    params = sum(p.numel() for p in model.parameters()) - emb
    L, d = cfg.num_hidden_layers, cfg.hidden_size
    return 2.0 * params + 2.0 * L * seq_len * d


def measure(name: str, out_dir=None, progress: bool = True, **settings) -> dict:
    """Measure one zoo model and write its tables and manifest (see the module docstring).

    Parameters
    ----------
    name : str
        A key of :data:`tanbias.lab.zoo.ZOO`.
    out_dir : path-like, optional
        Default ``data/pretrained/<name>``.
    **settings
        Overrides of :data:`DEFAULTS` (e.g. ``n_tokens=512`` for a smoke run).

    Returns
    -------
    dict
        The manifest.
    """
    import pandas as pd
    import torch
    import transformers

    from tanbias.lab import zoo
    from tanbias.lab.corpus import language_counts
    from tanbias.lab.data import heldout_text

    unknown = set(settings) - set(DEFAULTS)
    if unknown:
        raise ParameterError(f"settings {sorted(unknown)} are not known: valid keys are "
                             f"{sorted(DEFAULTS)}.")
    entry = zoo.zoo_entry(name)
    s = {**DEFAULTS, **MODEL_SETTINGS.get(name, {}), **settings}
    out = Path(out_dir) if out_dir is not None else PRETRAINED_DIR / name
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    t0 = time.perf_counter()
    model, tok = zoo.load_zoo(name, progress=progress)
    t_load = time.perf_counter() - t0
    languages = ENGLISH_ONLY if entry.kind == "encoder" else tuple(sorted(language_counts()))
    seq_len = min(s["seq_len"], int(getattr(model.config, "max_position_embeddings", s["seq_len"])))
    text = heldout_text(tok, s["n_tokens"], seq_len, seed=s["seed"], languages=list(languages),
                        order="round_robin", special_tokens=False)
    ids = text["input_ids"]
    if entry.kind == "encoder" and tok.cls_token_id is not None:
        # an encoder reads [CLS] ... [SEP] rows, as it was trained; those two are dropped below
        ids = np.concatenate([np.full((len(ids), 1), tok.cls_token_id), ids[:, :seq_len - 2],
                              np.full((len(ids), 1), tok.sep_token_id)], axis=1)
        lang = np.concatenate([text["language"][:, :1], text["language"][:, :seq_len - 2],
                               text["language"][:, :1]], axis=1)
    else:
        lang = text["language"]
    special = np.isin(ids, np.asarray(tok.all_special_ids, dtype=np.int64))
    keep = ~special
    vocab = int(max(len(tok), model.get_input_embeddings().weight.shape[0]))
    t0 = time.perf_counter()
    frequency = corpus_frequencies(tok, languages, vocab, s["frequency_docs"])
    t_freq = time.perf_counter() - t0
    H, t_forward = hidden_states(model, ids, keep, s["batch_size"], progress)
    flops = _flops_per_token(model, seq_len)
    type_ids = ids[keep]
    type_lang = lang[keep]
    n = int(keep.sum())

    # a type's language: the language of most of its occurrences
    types_seen = np.unique(type_ids)
    major = {}
    for t, l in zip(type_ids, type_lang):
        major.setdefault(int(t), {}).setdefault(l, 0)
        major[int(t)][l] += 1
    type_language = [max(major[int(t)], key=major[int(t)].get) for t in types_seen]
    zipf = np.full(vocab, np.nan)
    zipf[types_seen] = wordfreq_frequencies(tok, types_seen, type_language)

    t0 = time.perf_counter()
    type_rows, aniso_rows = [], []
    layers = range(H.shape[0])
    if progress:
        from tqdm.auto import tqdm

        layers = tqdm(layers, desc="layers", unit="layer")
    for layer in layers:
        rows, an = layer_tables(H[layer], type_ids, frequency, zipf, s["min_count"],
                                s["normal_k"], layer)
        type_rows.append(rows)
        aniso_rows.append(an)
    types = pd.concat(type_rows, ignore_index=True)
    premise = premise_table(types, s["n_boot"], s["seed"])
    L = H.shape[0] - 1
    robust = robustness_table(H, type_ids, frequency, sorted({1, L // 2, L}),
                              s["robust_min_counts"], s["robust_fractions"], s["n_boot"], s["seed"])
    robust["source"] = "corpus"
    premise = pd.concat([premise.assign(n_tokens=n, min_count=s["min_count"]), robust],
                        ignore_index=True)
    from tanbias import token_clouds as tc

    curv = []
    for layer, g in types.groupby("layer"):
        ok = g["normal_share"].notna() & (g["normal_share"] > 0)
        if ok.sum() >= 10:
            fit = tc.normal_share_scaling(g.loc[ok, "radius_t"].to_numpy(),
                                          g.loc[ok, "normal_share"].to_numpy())
            curv.append({"layer": int(layer), "slope": fit.slope, "lo": fit.ci_low, "hi": fit.ci_high,
                         "n_types": int(ok.sum()),
                         "median_normal_share": float(g.loc[ok, "normal_share"].median())})
    t_analysis = time.perf_counter() - t0
    del H

    tables = {"types": types, "premise": premise, "anisotropy": pd.DataFrame(aniso_rows),
              "curvature": pd.DataFrame(curv, columns=["layer", "slope", "lo", "hi", "n_types",
                                                       "median_normal_share"])}
    del model          # the probe loads its own copy: never two models in memory
    import gc

    gc.collect()
    t0 = time.perf_counter()
    if entry.kind == "decoder":
        from tanbias.lab.analysis.posthoc import probe_checkpoints

        probed = probe_checkpoints(name, n_tokens=s["probe_tokens"], seed=s["seed"],
                                   probe=s["probe"], progress=progress)
        tables["alignment"] = probed["alignment"]
    t_probe = time.perf_counter() - t0
    for key, frame in tables.items():   # atomic: an interrupted run leaves no half table
        atomic_write_text(out / f"{key}.csv", frame.to_csv(index=False, float_format="%.6g"))

    from tanbias.lab.models import gemm_peak  # here: it imports torch and transformers

    peak = gemm_peak()
    manifest = {
        "model": name, "kind": entry.kind, "arch": entry.arch, "upstream": entry.upstream,
        "packages": [f"{dist}=={ver}" for dist, ver, _ in entry.packages],
        "weight_file": entry.weight, "weight_sha256": entry.sha256, "licence": entry.licence,
        "caveats": list(entry.caveats), "install": entry.install,
        "settings": s, "languages": list(languages), "documents": text["documents"],
        "n_tokens": n, "seq_len": seq_len,
        "versions": {"torch": torch.__version__,
                     "transformers": transformers.__version__},
        "seconds": {"load": t_load, "frequencies": t_freq, "forward": t_forward,
                    "analysis": t_analysis, "probe": t_probe,
                    "total": time.perf_counter() - t_start},
        "tokens_per_s": n / t_forward, "gemm_flops": peak, "flops_per_token": flops,
        "gemm_fraction": flops * n / t_forward / peak,
        "tables": {k: sha256(out / f"{k}.csv") for k in tables},
    }
    from tanbias.lab.runs import git_commit

    manifest["git"] = git_commit()
    # peak resident memory of this process (Linux reports kB): one model per process
    # (make pretrained) makes it the model's own peak
    import resource

    manifest["peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20
    # the manifest last: a folder without one is an unfinished measurement
    atomic_write_text(out / "manifest.json", json.dumps(manifest, indent=1, default=float) + "\n")
    return manifest


def measure_all(names="all", root=None, fresh: bool = False, progress: bool = True,
                **settings) -> dict:
    """Measure several zoo models (``"all"``: every one), skipping those already measured.

    A model counts as measured when its folder has a ``manifest.json`` (written
    last, after every table) with the same settings; ``fresh=True`` measures
    again. Returns ``{name: manifest}`` (``skipped: True`` for the ones kept).
    Under ``torchrun`` the models are shared out over the ranks (rank r measures
    every world-th one and writes its own folder, as one process would); rank 0
    returns every model's manifest once all are written.
    """
    import torch

    from tanbias.lab import distributed, zoo

    names = list(zoo.ZOO) if names == "all" else [names] if isinstance(names, str) else list(names)
    for name in names:
        zoo.zoo_entry(name)                       # unknown names fail before any work
    base = Path(root) if root is not None else PRETRAINED_DIR
    ctx = distributed.context(torch.device("cpu"))
    out = {}
    for name in names[ctx.rank::ctx.world]:
        man_path = base / name / "manifest.json"
        wanted = json.loads(json.dumps({**DEFAULTS, **MODEL_SETTINGS.get(name, {}), **settings},
                                       default=list))
        if man_path.exists() and not fresh:
            old = json.loads(man_path.read_text())
            if json.loads(json.dumps(old.get("settings"), default=list)) == wanted:
                out[name] = {**old, "skipped": True}
                continue
        out[name] = measure(name, out_dir=base / name, progress=progress, **settings)
    if ctx.distributed:
        parts = [None] * ctx.world if ctx.main else None
        torch.distributed.gather_object(out, parts, dst=0)
        distributed.finish(ctx)
        if not ctx.main:
            return {}
        out = {name: m for part in parts for name, m in part.items()}
        out = {name: out[name] for name in names}
    return out


def load_pretrained(name: str, root=None) -> dict:
    """The committed tables of one model (pandas frames) and its manifest, checksums verified.

    Raises
    ------
    CorruptFileError
        A table is missing or its checksum differs; the message names the file
        and the command that regenerates it.
    """
    import pandas as pd

    folder = Path(root) / name if root is not None else PRETRAINED_DIR / name
    man_path = folder / "manifest.json"
    if not man_path.exists():
        raise CorruptFileError(man_path, _rebuild(name), "is missing")
    try:
        manifest = json.loads(man_path.read_text())
    except json.JSONDecodeError as exc:
        raise CorruptFileError(man_path, _rebuild(name), f"is not valid JSON ({exc})") from None
    out = {"manifest": manifest}
    for key, digest in manifest["tables"].items():
        path = folder / f"{key}.csv"
        if not path.exists() or sha256(path) != digest:
            raise CorruptFileError(path, _rebuild(name), "is missing or fails its checksum")
        out[key] = pd.read_csv(path)
    return out
