"""Resumable, deterministic training runs with the alignment probe (chapters 7, 8).

``python -m tanbias.lab train CONFIG`` calls :func:`train`. A run

* trains the encoder (EuroBERT, masked LM) or the decoder (Llama, causal LM) of
  :mod:`tanbias.lab.models` on a language mixture of the corpus' training split,
  with AdamW (linear warm-up, cosine decay to 10 %, clip 1.0; as ``quick_train``);
* shows a tqdm bar with the loss and tokens/s;
* logs one JSON record per step to ``metrics.jsonl`` (append-only, fsync per line);
* checkpoints every ``checkpoint_every`` steps to ``work/ckpt.pt`` (temp file +
  ``os.replace``): model, optimizer, scheduler, RNG states (torch, numpy,
  python), the data-stream position (batches consumed), token counts, elapsed time;
* is resumable: killed at any point and run again, it restarts from the last
  checkpoint, regenerates the data stream up to its position, recomputes the
  steps logged after the checkpoint and checks them against the log instead of
  logging them twice (``resume_mismatches`` in ``summary.json`` counts any that
  differ), so nothing logged is lost or duplicated;
* is deterministic given its seed on the same machine: fixed thread count,
  ``torch.use_deterministic_algorithms(True, warn_only=True)``, all randomness
  seeded (model init, mixture, masking);
* captures the probe at log-spaced steps (:mod:`tanbias.lab.probe`), then
  evaluates on held-out batches against the unigram baseline, writes the tidy
  tables and the manifest (:mod:`tanbias.lab.runs`).
"""
from __future__ import annotations

import copy
import json
import math
import os
import random
import shutil
import signal
import time
from pathlib import Path

import numpy as np

from tanbias._checks import check_choice, check_int, check_real
from tanbias.errors import ParameterError
from tanbias.lab import runs
from tanbias.lab.probe import ResidualProbe, analyse_run, probe_steps

__all__ = ["DEFAULT_CONFIG", "validate_config", "validate_probe_settings", "load_config", "train", "capture_path",
           "Interrupted", "reproduce", "bench_lab", "REPRODUCE_TOLERANCE"]

DEFAULT_CONFIG: dict = {
    "name": None, "kind": "encoder", "size": "small", "regime": "natural", "languages": None, "seed": 0,
    "steps": 240, "lr": None, "warmup": None, "schedule": "cosine", "weight_decay": 0.01,
    "checkpoint_every": 20, "eval_batches": 8, "threads": 1,
    "probe": {"enabled": True, "n_steps": 14, "tokens": 4096, "rank": 8, "local_rank": 4,
              "fit_fraction": 0.3, "n_controls": 20, "n_buckets": 3, "min_count": 8,
              "zeta": 0.1, "layers": None},
}

#: ``reproduce`` passes if every logged step's loss agrees within this absolute
#: tolerance (nats) and every alignment-table metric within ALIGN_RTOL relative.
REPRODUCE_TOLERANCE = {"loss_atol": 1e-4, "align_rtol": 1e-3, "align_atol": 1e-6}


class Interrupted(RuntimeError):
    """Raised by :func:`train` when ``stop_after`` is reached (simulates a kill in tests)."""


def _merge(base: dict, over: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in over.items():
        if k not in base:
            raise ParameterError(f"{k}={v!r} is not allowed: valid range is the config keys "
                                 f"{sorted(base)}. Check the spelling.")
        out[k] = _merge(base[k], v) if isinstance(base[k], dict) and isinstance(v, dict) else v
    return out


def validate_probe_settings(p: dict, D: int, L: int) -> dict:
    """Check the analysis settings of ``config["probe"]`` in place for width ``D`` and ``L`` blocks.

    Shared by training runs (:func:`validate_config`) and released checkpoints
    (:func:`tanbias.lab.posthoc.probe_checkpoints`).
    """
    p["rank"] = check_int("probe.rank", p["rank"], lo=1, hi=D // 2,
                          hint=f"D={D}; the 20 controls must fit orthogonal to the proxy "
                               f"(rank <= D/2 < D).")
    p["local_rank"] = check_int("probe.local_rank", p["local_rank"], lo=1, hi=D // 2)
    p["fit_fraction"] = check_real("probe.fit_fraction", p["fit_fraction"], 0, 1, hi_open=False)
    p["n_controls"] = check_int("probe.n_controls", p["n_controls"], lo=2)
    p["n_buckets"] = check_int("probe.n_buckets", p["n_buckets"], lo=1, hi=10)
    p["min_count"] = check_int("probe.min_count", p["min_count"], lo=p["local_rank"] + 1)
    p["zeta"] = check_real("probe.zeta", p["zeta"], 0, 1, lo_open=False)
    if p["layers"] is not None:
        p["layers"] = [check_int("probe.layers", x, lo=0, hi=L,
                                 hint=f"Layer 0 is the embedding output, {L} the last block.")
                       for x in p["layers"]]
    return p


def validate_config(config: dict) -> dict:
    """Fill defaults and check every value; return the full config.

    Raises
    ------
    ParameterError
        Naming the parameter, its value and the valid range (e.g. ``lr <= 0``,
        ``probe.rank`` outside ``[1, D-1]``, a layer outside ``[0, n_layers]``).

    Example
    -------
    >>> validate_config({"name": "x", "kind": "decoder", "size": "smoke", "lr": 0})
    Traceback (most recent call last):
    ...
    tanbias.errors.ParameterError: lr=0 is out of range: valid range is (0, inf). ...
    """
    from tanbias.lab.models import KINDS, SIZES

    cfg = _merge(DEFAULT_CONFIG, dict(config))
    runs._check_run_name(cfg["name"])
    check_choice("kind", cfg["kind"], KINDS)
    check_choice("size", cfg["size"], tuple(SIZES))
    check_choice("regime", cfg["regime"], ("natural", "balanced"))
    if cfg["languages"] is not None:
        from tanbias.lab.corpus import read_manifest
        avail = sorted(e["language"] for e in read_manifest()["files"].values())
        cfg["languages"] = [check_choice("languages", x, tuple(avail)) for x in cfg["languages"]]
    size = SIZES[cfg["size"]]
    D, L = size["hidden_size"], size["num_hidden_layers"]
    cfg["seed"] = check_int("seed", cfg["seed"], lo=0)
    cfg["steps"] = check_int("steps", cfg["steps"], lo=2, hint="A run needs at least 2 steps.")
    cfg["lr"] = size["lr"] if cfg["lr"] is None else check_real(
        "lr", cfg["lr"], lo=0, hint="Pass a positive learning rate such as 2e-3.")
    if cfg["warmup"] is not None:
        cfg["warmup"] = check_int("warmup", cfg["warmup"], lo=1, hi=cfg["steps"])
    check_choice("schedule", cfg["schedule"], ("cosine", "constant"))
    cfg["weight_decay"] = check_real("weight_decay", cfg["weight_decay"], 0, lo_open=False)
    cfg["checkpoint_every"] = check_int("checkpoint_every", cfg["checkpoint_every"], lo=1)
    cfg["eval_batches"] = check_int("eval_batches", cfg["eval_batches"], lo=1)
    cfg["threads"] = check_int("threads", cfg["threads"], lo=1, hi=os.cpu_count() or 1)
    p = cfg["probe"]
    p["n_steps"] = check_int("probe.n_steps", p["n_steps"], lo=2, hi=cfg["steps"])
    p["tokens"] = check_int("probe.tokens", p["tokens"], lo=16,
                            hi=size["batch_size"] * size["seq_len"])
    validate_probe_settings(p, D, L)
    return cfg


def load_config(path) -> dict:
    """Read and validate a JSON config file (``name`` defaults to the file's stem)."""
    path = Path(path)
    if not path.is_file():
        raise ParameterError(f"CONFIG={str(path)!r} is not allowed: valid range is an existing JSON "
                             "file. See data/runs/configs/ for examples.")
    cfg = json.loads(path.read_text(encoding="utf-8"))
    if cfg.get("name") is None:
        cfg["name"] = path.parent.name if path.name == "config.json" else path.stem
    return validate_config(cfg)


def capture_path(d, step: int) -> Path:
    return Path(d) / "work" / "probe" / f"step_{int(step):06d}.npz"


def _schedule(steps, warmup, kind: str = "cosine"):
    """Learning-rate factor: linear warm-up, then cosine decay to 10 % (or constant: a control)."""
    def f(s):
        if s < warmup:
            return (s + 1) / warmup
        if kind == "constant":
            return 1.0
        frac = (s - warmup) / max(1, steps - warmup)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(frac, 1.0)))
    return f


def _setup(cfg):
    import torch

    from tanbias.lab.models import make_model
    from tanbias.lab.tokenizer import load_tokenizer

    torch.set_num_threads(cfg["threads"])
    torch.use_deterministic_algorithms(True, warn_only=True)
    tok = load_tokenizer()
    model = make_model(cfg["kind"], cfg["size"], vocab_size=len(tok), seed=cfg["seed"])
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and "embed" not in n]
    no_decay = [p for n, p in model.named_parameters() if not (p.ndim >= 2 and "embed" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg["weight_decay"]},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=cfg["lr"], betas=(0.9, 0.98), eps=1e-8)
    warmup = cfg["warmup"] or max(1, cfg["steps"] // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, _schedule(cfg["steps"], warmup, cfg["schedule"]))
    return tok, model, opt, sched


_SPLIT_CACHE: dict = {}


def _split(languages=None):
    """The corpus' train/validation split, loaded (and checksum-verified) once per process."""
    from tanbias.lab.corpus import CORPUS_DIR, load_corpus, split_corpus
    key = (str(CORPUS_DIR), None if languages is None else tuple(languages))
    if key not in _SPLIT_CACHE:
        _SPLIT_CACHE[key] = split_corpus(load_corpus(languages))
    return _SPLIT_CACHE[key]


def _streams(cfg, tok):
    from tanbias.lab.corpus import mixture
    from tanbias.lab.models import SIZES, lm_batches

    size = SIZES[cfg["size"]]
    train_docs, valid_docs = _split(cfg["languages"])
    train = lm_batches(cfg["kind"], mixture(train_docs, cfg["regime"], seed=cfg["seed"]), tok,
                       size["batch_size"], size["seq_len"], seed=cfg["seed"])
    valid = lm_batches(cfg["kind"], mixture(valid_docs, cfg["regime"], seed=cfg["seed"] + 10_000),
                       tok, size["batch_size"], size["seq_len"], seed=cfg["seed"] + 10_000)
    return train, valid


def _orig_ids(batch):
    import torch
    ids, labels = batch["input_ids"], batch["labels"]
    return torch.where(labels != -100, labels, ids)


def _save_checkpoint(path, model, opt, sched, step, counts, elapsed, probe_seconds):
    import io

    import torch
    buf = io.BytesIO()
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(),
                "step": step, "counts": counts, "elapsed": elapsed, "probe_seconds": probe_seconds,
                "rng": {"torch": torch.get_rng_state(), "numpy": np.random.get_state(),
                        "python": random.getstate()}}, buf)
    runs.atomic_write_bytes(path, buf.getvalue())


def _load_checkpoint(path, model, opt, sched):
    import torch
    try:
        ck = torch.load(path, map_location="cpu", weights_only=False)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        sched.load_state_dict(ck["sched"])
    except Exception as exc:
        from tanbias.errors import CorruptFileError
        raise CorruptFileError(path, runs.regenerate_command(Path(path).parents[1]),
                               f"unreadable checkpoint: {exc}") from None
    torch.set_rng_state(ck["rng"]["torch"])
    np.random.set_state(ck["rng"]["numpy"])
    random.setstate(ck["rng"]["python"])
    return ck


def train(config, out_dir=None, fresh: bool = False, stop_after: int | None = None,
          progress: bool = True, analyse: bool = True) -> dict:
    """Train (or resume) a run; write its log, probe captures, tables and manifest.

    Parameters
    ----------
    config : dict or path
        A config dict (see :data:`DEFAULT_CONFIG`) or a JSON file.
    out_dir : path, optional
        Run folder; default ``data/runs/<name>``.
    fresh : bool
        Delete the folder's log, checkpoint and captures first (start over).
    stop_after : int, optional
        Raise :class:`Interrupted` right after logging this many steps (tests of
        resume). The environment variable ``TANBIAS_KILL_AFTER_STEP=k`` instead
        SIGKILLs the process there (a real kill).
    progress : bool
        Show the tqdm bar.
    analyse : bool
        Compute the tables from the captures at the end.

    Returns
    -------
    dict
        The summary (also written to ``summary.json``).
    """
    import torch
    from tqdm.auto import tqdm

    from tanbias.lab.models import SIZES, _loss_and_correct, batch_targets, evaluate, unigram_baseline

    cfg = load_config(config) if not isinstance(config, dict) else validate_config(config)
    d = Path(out_dir) if out_dir is not None else runs.run_dir(cfg["name"])
    if fresh:
        for name in ("metrics.jsonl", *runs.COMMITTED_FILES[2:], "manifest.json"):
            (d / name).unlink(missing_ok=True)
        shutil.rmtree(d / "work", ignore_errors=True)
    d.mkdir(parents=True, exist_ok=True)
    cfg_path = d / "config.json"
    if cfg_path.exists():
        old = validate_config(json.loads(cfg_path.read_text()))
        if old != cfg and (d / "metrics.jsonl").exists():
            raise ParameterError(f"config={cfg['name']!r} differs from the config of the run in {d}: "
                                 "valid range is the same config to resume. Pass --fresh to start over.")
    runs.atomic_write_text(cfg_path, json.dumps(cfg, indent=1, sort_keys=True) + "\n")

    tok, model, opt, sched = _setup(cfg)
    size = SIZES[cfg["size"]]
    tokens_per_step = size["batch_size"] * size["seq_len"]
    vocab = len(tok)
    ckpt = d / "work" / "ckpt.pt"
    start, counts, elapsed, probe_seconds = 0, np.zeros(vocab, np.int64), 0.0, 0.0
    if ckpt.exists():
        ck = _load_checkpoint(ckpt, model, opt, sched)
        start, counts, elapsed = ck["step"], ck["counts"], ck["elapsed"]
        probe_seconds = ck.get("probe_seconds", 0.0)
    log_path = d / "metrics.jsonl"
    records = runs.read_jsonl(log_path)
    if log_path.exists():  # drop a torn final line so appends stay valid JSONL
        good = "".join(json.dumps(r, sort_keys=True) + "\n" for r in records)
        if log_path.read_text(encoding="utf-8") != good:
            runs.atomic_write_text(log_path, good)
    logged = {r["step"]: r for r in records if r.get("type") == "step"}
    mismatches = 0
    pset = set(probe_steps(cfg["steps"], cfg["probe"]["n_steps"])) if cfg["probe"]["enabled"] else set()
    probe = ResidualProbe(model, cfg["probe"]["tokens"]) if pset else None
    kill_after = os.environ.get("TANBIAS_KILL_AFTER_STEP")

    train_batches, valid_batches = _streams(cfg, tok)
    for _ in range(start):             # the data-stream position: regenerate and skip
        next(train_batches)
    bar = tqdm(total=cfg["steps"], initial=start, desc=cfg["name"], unit="step",
               disable=not progress, dynamic_ncols=True)
    model.train()
    for step in range(start, cfg["steps"]):
        t0 = time.perf_counter()
        batch = next(train_batches)
        counts += np.bincount(_orig_ids(batch).reshape(-1).numpy(), minlength=vocab)
        probing = step in pset
        if probing:
            probe.arm()
        loss_sum, n, correct = _loss_and_correct(model, batch)
        loss = loss_sum / max(n, 1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if probing:
            tp = time.perf_counter()
            runs.atomic_save_npz(capture_path(d, step), **probe.collect(batch))
            probe_seconds += time.perf_counter() - tp
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        dt = time.perf_counter() - t0
        elapsed += dt
        rec = {"type": "step", "step": step, "loss": float(loss.detach()), "accuracy": correct / max(n, 1),
               "scored": n, "tokens": (step + 1) * tokens_per_step, "lr": sched.get_last_lr()[0],
               "seconds": round(elapsed, 3), "tokens_per_s": round(tokens_per_step / dt, 1),
               "probe": probing}
        if step in logged:
            if abs(logged[step]["loss"] - rec["loss"]) > REPRODUCE_TOLERANCE["loss_atol"]:
                mismatches += 1
        else:
            runs.append_jsonl(log_path, rec)
            logged[step] = rec
        bar.update(1)
        bar.set_postfix(loss=f"{rec['loss']:.3f}", tok_s=f"{rec['tokens_per_s']:.0f}")
        done = step + 1
        if done % cfg["checkpoint_every"] == 0 or done == cfg["steps"]:
            _save_checkpoint(ckpt, model, opt, sched, done, counts, elapsed, probe_seconds)
        if stop_after is not None and done == stop_after:
            bar.close()
            raise Interrupted(f"stopped after step {step} (stop_after={stop_after})")
        if kill_after is not None and done == int(kill_after):
            os.kill(os.getpid(), signal.SIGKILL)
    bar.close()
    if probe is not None:
        probe.remove()

    # ---------------------------------------------------------------- evaluation
    evals = [r for r in runs.read_jsonl(log_path) if r.get("type") == "eval"]
    if evals:
        ev = evals[-1]
    else:
        vb = [next(valid_batches) for _ in range(cfg["eval_batches"])]
        res = evaluate(model, vb)
        targets = torch.cat([batch_targets(cfg["kind"], b) for b in vb]).numpy()
        uni = unigram_baseline(counts, targets, exclude_special=cfg["kind"] == "encoder")
        ev = {"type": "eval", "step": cfg["steps"], **{k: res[k] for k in ("loss", "perplexity", "accuracy", "tokens")},
              "unigram_loss": uni["loss"], "unigram_perplexity": uni["perplexity"],
              "unigram_accuracy": uni["accuracy"]}
        runs.append_jsonl(log_path, ev)
    runs.atomic_write_bytes(d / "token_counts.npy", _npy_bytes(counts))
    steps_log = [logged[s] for s in sorted(logged)]
    first = np.mean([r["loss"] for r in steps_log[:10]])
    last = np.mean([r["loss"] for r in steps_log[-10:]])
    summary = {"run": cfg["name"], "kind": cfg["kind"], "regime": cfg["regime"], "seed": cfg["seed"],
               "steps": cfg["steps"], "tokens": cfg["steps"] * tokens_per_step,
               "parameters": int(sum(p.numel() for p in model.parameters())),
               "train_seconds": round(elapsed, 1),
               "tokens_per_s": round(cfg["steps"] * tokens_per_step / max(elapsed, 1e-9), 1),
               "probe_seconds": round(probe_seconds, 2), "probe_steps": sorted(pset),
               "loss_first10": float(first), "loss_last10": float(last),
               "eval": {k: v for k, v in ev.items() if k not in ("type", "step")},
               "learns": bool(ev["loss"] < ev["unigram_loss"]),
               "resume_mismatches": mismatches}
    runs.atomic_write_text(d / "summary.json", json.dumps(summary, indent=1, sort_keys=True) + "\n")
    if analyse and pset:
        t0 = time.perf_counter()
        analyse_run(d, progress=progress)
        from tanbias.lab.views import compute_views
        compute_views(d)
        from tanbias.lab.sweep import measure_radii
        measure_radii(d, write=True)
        summary["analysis_seconds"] = round(time.perf_counter() - t0, 1)
        runs.atomic_write_text(d / "summary.json", json.dumps(summary, indent=1, sort_keys=True) + "\n")
    runs.write_manifest(d, cfg)
    return summary


def _npy_bytes(a) -> bytes:
    import io
    buf = io.BytesIO()
    np.save(buf, np.asarray(a))
    return buf.getvalue()


# --------------------------------------------------------------------------- reproduce
def reproduce(run, steps: int | None = None, workdir=None, progress: bool = True) -> dict:
    """Re-run a committed run from its config in a scratch folder and compare.

    Compares every logged step's loss (``|Δ| <= loss_atol``), the evaluation loss,
    and — when the whole run is repeated — every numeric column of
    ``alignment.csv`` and ``tokens.csv`` (``|Δ| <= align_atol + align_rtol |x|``); see
    :data:`REPRODUCE_TOLERANCE`.

    Parameters
    ----------
    run : str or path
    steps : int, optional
        Only re-run and compare the first ``steps`` steps (a quicker check; the
        schedule is the committed one, so the prefix is identical).

    Returns
    -------
    dict
        ``ok`` (bool), ``compared`` (counts), ``max_loss_diff``, ``failures`` (list of str).
    """
    import tempfile

    import pandas as pd

    d = runs.run_dir(run)
    runs.verify_run(d)
    cfg = validate_config(json.loads((d / "config.json").read_text()))
    committed = {r["step"]: r for r in runs.read_jsonl(d / "metrics.jsonl") if r.get("type") == "step"}
    tmp = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix=f"reproduce-{cfg['name']}-"))
    partial = steps is not None and steps < cfg["steps"]
    try:
        if partial:
            try:
                train(cfg, out_dir=tmp, fresh=True, stop_after=int(steps), progress=progress, analyse=False)
            except Interrupted:
                pass
        else:
            train(cfg, out_dir=tmp, fresh=True, progress=progress)
        new = {r["step"]: r for r in runs.read_jsonl(tmp / "metrics.jsonl") if r.get("type") == "step"}
        tol = REPRODUCE_TOLERANCE
        failures = []
        diffs = [abs(new[s]["loss"] - committed[s]["loss"]) for s in new if s in committed]
        missing = [s for s in new if s not in committed]
        if missing:
            failures.append(f"steps {missing[:5]} are not in the committed log")
        bad = [s for s in new if s in committed and abs(new[s]["loss"] - committed[s]["loss"]) > tol["loss_atol"]]
        if bad:
            failures.append(f"loss differs by more than {tol['loss_atol']} at steps {bad[:10]}")
        n_align = 0
        tables = [name for name in ("alignment.csv", "tokens.csv") if (d / name).exists()]
        for name in tables if not partial else ():
            a = pd.read_csv(d / name)
            b = pd.read_csv(tmp / name)
            if a.shape != b.shape:
                failures.append(f"{name} shape {b.shape} != committed {a.shape}")
                continue
            for col in a.select_dtypes("number").columns:
                x, y = a[col].to_numpy(float), b[col].to_numpy(float)
                ok = np.isclose(y, x, rtol=tol["align_rtol"], atol=tol["align_atol"], equal_nan=True)
                n_align += ok.size
                if not ok.all():
                    failures.append(f"{name} column {col!r} differs in {int((~ok).sum())} rows")
        return {"ok": not failures, "compared": {"steps": len(diffs), "table_values": n_align, "tables": tables if not partial else []},
                "max_loss_diff": max(diffs) if diffs else float("nan"), "failures": failures,
                "tolerance": tol, "workdir": str(tmp)}
    finally:
        if workdir is None:
            shutil.rmtree(tmp, ignore_errors=True)


# --------------------------------------------------------------------------- benchmark
def bench_lab(size: str = "small", kind: str = "decoder", reps: int = 4, run_steps: int | None = None,
              n_probe_steps: int | None = None) -> dict:
    """Training tokens/s and the probe's overhead, measured in one process.

    Interleaves ``reps`` rounds of three step types on the same model and data,
    so all see the same machine load: a plain training step; a step with the
    inline probe (hooks + ``retain_grad`` + copy + atomic write of the capture);
    and a plain step followed by the *post-hoc* alternative (a separate
    forward+backward with the probe armed, as a probe of a saved checkpoint
    would need). The overheads of a whole default run (``run_steps`` steps,
    ``n_probe_steps`` of them probed) are then

        inline  = (N t_plain + k (t_inline - t_plain)) / (N t_plain)
        posthoc = (N t_plain + k (t_posthoc - t_plain)) / (N t_plain)

    Returns
    -------
    dict
        ``tokens_per_s``, ``t_plain``, ``t_inline``, ``t_posthoc`` (median seconds per
        step), ``per_step_inline_ratio``, ``per_step_posthoc_ratio`` (probing every
        step), ``run_overhead_inline``, ``run_overhead_posthoc`` (default cadence),
        ``load_average``.
    """
    import tempfile

    import torch

    from tanbias.lab.models import SIZES, _loss_and_correct

    from tanbias.lab.models import SIZES as _S
    cfg = validate_config({"name": "bench", "kind": kind, "size": size,
                           "probe": {"tokens": _S[size]["batch_size"] * _S[size]["seq_len"],
                                     "rank": min(8, _S[size]["hidden_size"] // 2)}})
    run_steps = cfg["steps"] if run_steps is None else int(run_steps)
    k = len(probe_steps(run_steps, n_probe_steps or cfg["probe"]["n_steps"]))
    tok, model, opt, sched = _setup(cfg)
    batches, _ = _streams(cfg, tok)
    probe = ResidualProbe(model, cfg["probe"]["tokens"])
    tokens_per_step = SIZES[size]["batch_size"] * SIZES[size]["seq_len"]
    times = {"plain": [], "inline": [], "posthoc": []}
    tmp = Path(tempfile.mkdtemp(prefix="bench-lab-"))

    def step(batch, inline=False):
        if inline:
            probe.arm()
        loss_sum, n, _ = _loss_and_correct(model, batch)
        opt.zero_grad(set_to_none=True)
        (loss_sum / max(n, 1)).backward()
        if inline:
            runs.atomic_save_npz(tmp / "cap.npz", **probe.collect(batch))
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()

    def posthoc(batch):
        probe.arm()
        loss_sum, n, _ = _loss_and_correct(model, batch)
        model.zero_grad(set_to_none=True)
        (loss_sum / max(n, 1)).backward()
        runs.atomic_save_npz(tmp / "cap.npz", **probe.collect(batch))
        model.zero_grad(set_to_none=True)

    try:
        step(next(batches))                                   # warm-up
        for _ in range(int(reps)):
            for kind_ in ("plain", "inline", "posthoc"):
                b = next(batches)
                t0 = time.perf_counter()
                if kind_ == "posthoc":
                    step(b)
                    posthoc(b)
                else:
                    step(b, inline=kind_ == "inline")
                times[kind_].append(time.perf_counter() - t0)
    finally:
        probe.remove()
        shutil.rmtree(tmp, ignore_errors=True)
    med = {key: float(np.median(v)) for key, v in times.items()}
    N = run_steps
    return {"size": size, "kind": kind, "reps": int(reps), "threads": cfg["threads"],
            "tokens_per_s": tokens_per_step / med["plain"],
            "t_plain": med["plain"], "t_inline": med["inline"], "t_posthoc": med["posthoc"],
            "per_step_inline_ratio": med["inline"] / med["plain"],
            "per_step_posthoc_ratio": med["posthoc"] / med["plain"],
            "run_steps": N, "probe_steps": k,
            "run_overhead_inline": (N * med["plain"] + k * (med["inline"] - med["plain"])) / (N * med["plain"]),
            "run_overhead_posthoc": (N * med["plain"] + k * (med["posthoc"] - med["plain"])) / (N * med["plain"]),
            "load_average": os.getloadavg()[0]}
