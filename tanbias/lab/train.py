"""Resumable, deterministic training runs with the alignment probe (chapters 7, 8).

``python -m tanbias.lab train CONFIG`` calls :func:`train`. A run

* trains the encoder (EuroBERT, masked LM) or the decoder (Llama, causal LM) of
  :mod:`tanbias.lab.models` on a language mixture of the corpus' training split
  (:mod:`tanbias.lab.data`),
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
  evaluates on held-out batches against the unigram baseline and writes the
  summary and the manifest (:mod:`tanbias.lab.runs`).

What happens after a run (the alignment tables, the trained views, the radii)
is :func:`tanbias.lab.pipeline.after_run`; ``python -m tanbias.lab train``
runs both (:func:`tanbias.lab.pipeline.train_and_analyse`), and
:func:`tanbias.lab.pipeline.reproduce` re-runs a committed run. Configs and
their validation are :mod:`tanbias.lab.config`.
"""
from __future__ import annotations

import io
import json
import math
import os
import random
import shutil
import signal
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from tanbias.errors import CorruptFileError, ParameterError
from tanbias.lab import distributed, runs
from tanbias.lab.config import REPRODUCE_TOLERANCE, SIZES, load_config, validate_config
from tanbias.lab.data import batch_targets, check_languages, original_ids, training_streams
from tanbias.lab.models import (autocast, evaluate, loss_and_correct, make_model, resolve_device, to_device,
                                unigram_baseline)
from tanbias.lab.probe import CaptureWriter, ResidualProbe, probe_steps
from tanbias.lab.tokenizer import load_tokenizer

__all__ = ["train", "train_step", "setup_training", "lr_schedule", "Interrupted", "bench_lab", "bench_ddp", "measure_sizes",
           "gpu_check"]


class Interrupted(RuntimeError):
    """Raised by :func:`train` when ``stop_after`` is reached (simulates a kill in tests)."""


def lr_schedule(steps, warmup, kind: str = "cosine"):
    """Learning-rate factor: linear warm-up, then cosine decay to 10 % (or constant: a control)."""
    def f(s):
        if s < warmup:
            return (s + 1) / warmup
        if kind == "constant":
            return 1.0
        frac = (s - warmup) / max(1, steps - warmup)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(frac, 1.0)))
    return f


def setup_training(cfg, device=None):
    """Tokenizer, model (on ``device``, default the CPU), AdamW and its schedule for a validated config."""
    torch.set_num_threads(cfg["threads"])
    torch.use_deterministic_algorithms(True, warn_only=True)
    tok = load_tokenizer()
    model = make_model(cfg["kind"], cfg["size"], vocab_size=len(tok), seed=cfg["seed"])
    if device is not None:
        model = model.to(device)        # before the optimizer: its state lives beside the weights
    dev_type = torch.device(device).type if device is not None else "cpu"
    if cfg["precision"] == "bf16" and dev_type == "cpu":
        # PyTorch's CPU flash-attention backward is about 4x slower in bfloat16 than in float32
        # (profiled on the small decoder); the eager path's bfloat16 matmuls are fast
        model.config._attn_implementation = "eager"
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and "embed" not in n]
    no_decay = [p for n, p in model.named_parameters() if not (p.ndim >= 2 and "embed" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg["weight_decay"]},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=cfg["lr"], betas=(0.9, 0.98), eps=1e-8)
    warmup = cfg["warmup"] or max(1, cfg["steps"] // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_schedule(cfg["steps"], warmup, cfg["schedule"]))
    return tok, model, opt, sched


def train_step(model, opt, sched, batch, precision: str, device, capture=None):
    """One optimizer step of one process on ``batch`` (already on ``device``).

    Forward and loss under :func:`~tanbias.lab.models.autocast`, backward, gradient
    clipping at norm 1, AdamW step, schedule step. ``capture=(probe, writer, path)``
    arms ``probe`` for this step and, after the backward, hands its capture to
    ``writer`` (a :class:`~tanbias.lab.probe.CaptureWriter`) for ``path``. Both
    :func:`train` (one process) and :func:`bench_lab` run their steps through it.

    Returns
    -------
    tuple
        ``(loss, scored, correct, capture_seconds)``: the mean loss (a detached
        tensor), the numbers of scored and correctly predicted positions, and the
        seconds the step spent on the capture.
    """
    if capture is not None:
        capture[0].arm()
    with autocast(device, precision):
        loss_sum, n, correct = loss_and_correct(model, batch)
    loss = loss_sum / max(n, 1)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    seconds = 0.0
    if capture is not None:
        t = time.perf_counter()
        probe, writer, path = capture
        writer.submit(path, *probe.collect_raw(batch))
        seconds = time.perf_counter() - t
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()
    return loss.detach(), n, correct, seconds


def _save_checkpoint(path, model, opt, sched, step, counts, elapsed, probe_seconds):
    buf = io.BytesIO()
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(),
                "step": step, "counts": counts, "elapsed": elapsed, "probe_seconds": probe_seconds,
                "rng": {"torch": torch.get_rng_state(), "numpy": np.random.get_state(),
                        "python": random.getstate()}}, buf)
    runs.atomic_write_bytes(path, buf.getvalue())


def _load_checkpoint(path, model, opt, sched):
    try:
        ck = torch.load(path, map_location="cpu", weights_only=False)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        sched.load_state_dict(ck["sched"])
    except Exception as exc:
        raise CorruptFileError(path, runs.regenerate_command(Path(path).parents[1]),
                               f"unreadable checkpoint: {exc}") from None
    torch.set_rng_state(ck["rng"]["torch"])
    np.random.set_state(ck["rng"]["numpy"])
    random.setstate(ck["rng"]["python"])
    return ck


def train(config, out_dir=None, fresh: bool = False, stop_after: int | None = None,
          progress: bool = True, device: str = "auto") -> dict:
    """Train (or resume) a run; write its log, probe captures, summary and manifest.

    The analysis of the captures is :func:`tanbias.lab.pipeline.after_run`.

    Parameters
    ----------
    config : dict or path
        A config dict (see :data:`~tanbias.lab.config.DEFAULT_CONFIG`) or a JSON file.
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
    device : {"auto", "cpu", "cuda"}
        Where to compute (:func:`tanbias.lab.models.resolve_device`); the captures,
        checkpoints and tables are stored from the CPU either way. The summary and
        the manifest record it with the config's ``precision``.

    Returns
    -------
    dict
        The summary (also written to ``summary.json``).
    """
    cfg = load_config(config) if not isinstance(config, dict) else validate_config(config)
    check_languages(cfg["languages"])
    d = Path(out_dir) if out_dir is not None else runs.run_dir(cfg["name"])
    dev = resolve_device(device)
    ctx = distributed.context(dev)          # torchrun: rank, world size, this rank's device
    dev = ctx.device
    if ctx.distributed:
        if SIZES[cfg["size"]]["batch_size"] % ctx.world:
            raise ParameterError(f"batch_size={SIZES[cfg['size']]['batch_size']} is out of range for "
                                 f"{ctx.world} processes: valid range is multiples of {ctx.world}.")
    if ctx.main:
        _train_setup_files(d, cfg, fresh)
    ctx.barrier()
    try:
        summary = _train(cfg, d, ctx, dev, stop_after, progress)
    except BaseException:
        distributed.finish(ctx, wait=False)     # a failing rank must not wait for the others
        raise
    distributed.finish(ctx)
    return summary


def _train_setup_files(d: Path, cfg: dict, fresh: bool) -> None:
    """``--fresh`` clean-up and the run's ``config.json`` (checked against the one of a run to resume)."""
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


def _train(cfg: dict, d: Path, ctx, dev, stop_after, progress) -> dict:
    """The training loop of :func:`train` (every rank runs it; rank 0 writes)."""
    from tqdm.auto import tqdm

    tok, model, opt, sched = setup_training(cfg, dev)
    step_model = model
    if ctx.distributed:
        from torch.nn.parallel import DistributedDataParallel

        step_model = DistributedDataParallel(distributed.LossModule(model),
                                             device_ids=[dev.index] if dev.type == "cuda" else None)
    size = SIZES[cfg["size"]]
    tokens_per_step = size["batch_size"] * size["seq_len"]
    vocab = len(tok)
    ckpt = runs.checkpoint_path(d)
    start, counts, elapsed, probe_seconds = 0, np.zeros(vocab, np.int64), 0.0, 0.0
    if ckpt.exists():
        ck = _load_checkpoint(ckpt, model, opt, sched)
        start, counts, elapsed = ck["step"], ck["counts"], ck["elapsed"]
        probe_seconds = ck.get("probe_seconds", 0.0)
    log_path = d / "metrics.jsonl"
    records = runs.read_jsonl(log_path)
    if ctx.main and log_path.exists():  # drop a torn final line so appends stay valid JSONL
        good = "".join(json.dumps(r, sort_keys=True) + "\n" for r in records)
        if log_path.read_text(encoding="utf-8") != good:
            runs.atomic_write_text(log_path, good)
    logged = {r["step"]: r for r in records if r.get("type") == "step"}
    mismatches = 0
    pset = set(probe_steps(cfg["steps"], cfg["probe"]["n_steps"])) if cfg["probe"]["enabled"] else set()
    # under torchrun every rank captures all its positions; rank 0 gathers and keeps the first tokens
    probe_tokens = cfg["probe"]["tokens"] if not ctx.distributed else tokens_per_step // ctx.world
    probe = ResidualProbe(model, probe_tokens) if pset else None
    kill_after = os.environ.get("TANBIAS_KILL_AFTER_STEP")
    kill_rank = os.environ.get("TANBIAS_KILL_RANK")         # under torchrun: kill only this rank

    train_batches, valid_batches = training_streams(cfg, tok)
    # held-out batches scored at every probe step (the same first batches the final
    # evaluation starts with), from their own copy of the validation stream
    probe_eval = [next(training_streams(cfg, tok)[1]) for _ in range(cfg["probe_eval_batches"])]
    probe_evals = {r["step"] for r in records if r.get("type") == "probe_eval"}
    eval_seconds = 0.0
    for _ in range(start):             # the data-stream position: regenerate and skip
        next(train_batches)
    bar = tqdm(total=cfg["steps"], initial=start, desc=cfg["name"], unit="step",
               disable=not progress, dynamic_ncols=True)
    model.train()
    # captures are packed and written on a thread beside the steps; leaving this block waits
    # for them (and re-raises a failed write)
    with CaptureWriter() as writer:
        for step in range(start, cfg["steps"]):
            if ctx.main and probe_eval and step in pset and step not in probe_evals:
                te = time.perf_counter()
                res = evaluate(model, probe_eval, cfg["precision"])
                runs.append_jsonl(log_path, {"type": "probe_eval", "step": step, "loss": res["loss"],
                                             "accuracy": res["accuracy"], "tokens": res["tokens"]})
                probe_evals.add(step)
                eval_seconds += time.perf_counter() - te
            t0 = time.perf_counter()
            batch = next(train_batches)
            counts += np.bincount(original_ids(batch).reshape(-1).numpy(), minlength=vocab)
            probing = step in pset
            dbatch = to_device(distributed.shard(batch, ctx), dev)
            if not ctx.distributed:
                logged_loss, n, correct, tp = train_step(
                    model, opt, sched, dbatch, cfg["precision"], dev,
                    capture=(probe, writer, runs.capture_path(d, step)) if probing else None)
                probe_seconds += tp
            else:
                if probing:
                    probe.arm()
                with autocast(dev, cfg["precision"]):
                    loss_sum, nc = step_model(dbatch["input_ids"], dbatch["labels"])
                n, correct = (int(v) for v in distributed.all_sum(nc, ctx))
                # DDP averages the ranks' gradients: world x (local sum) / (global count) makes that
                # average the gradient of the global mean loss
                loss = loss_sum * ctx.world / max(n, 1)
                logged_loss = distributed.all_sum(loss_sum.detach().float(), ctx) / max(n, 1)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                if probing:
                    tp = time.perf_counter()
                    acts, grads, ids_, orig = probe.collect_raw(dbatch)
                    rows_local = dbatch["input_ids"].shape[0]
                    grads = [g / ctx.world for g in grads]        # the gradient of the global mean loss
                    got = distributed.gather_rows([*acts, *grads, ids_, orig], ctx, rows_local)
                    if ctx.main:
                        L1, k_ = len(acts), cfg["probe"]["tokens"]
                        writer.submit(runs.capture_path(d, step), [a[:k_] for a in got[:L1]],
                                      [g[:k_] for g in got[L1:2 * L1]], got[-2][:k_], got[-1][:k_])
                    probe_seconds += time.perf_counter() - tp
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                sched.step()
            dt = time.perf_counter() - t0
            elapsed += dt
            rec = {"type": "step", "step": step, "loss": float(logged_loss.detach()), "accuracy": correct / max(n, 1),
                   "scored": n, "tokens": (step + 1) * tokens_per_step, "lr": sched.get_last_lr()[0],
                   "seconds": round(elapsed, 3), "tokens_per_s": round(tokens_per_step / dt, 1),
                   "probe": probing}
            if step in logged:
                if abs(logged[step]["loss"] - rec["loss"]) > REPRODUCE_TOLERANCE["loss_atol"]:
                    mismatches += 1
            else:
                if ctx.main:
                    runs.append_jsonl(log_path, rec)
                logged[step] = rec
            bar.update(1)
            bar.set_postfix(loss=f"{rec['loss']:.3f}", tok_s=f"{rec['tokens_per_s']:.0f}")
            done = step + 1
            if ctx.main and (done % cfg["checkpoint_every"] == 0 or done == cfg["steps"]):
                tw = time.perf_counter()
                writer.wait()                # a checkpoint never counts a capture not yet written
                probe_seconds += time.perf_counter() - tw
                _save_checkpoint(ckpt, model, opt, sched, done, counts, elapsed, probe_seconds)
            if stop_after is not None and done == stop_after:
                bar.close()
                raise Interrupted(f"stopped after step {step} (stop_after={stop_after})")
            if kill_after is not None and done == int(kill_after) and kill_rank in (None, str(ctx.rank)):
                os.kill(os.getpid(), signal.SIGKILL)
    bar.close()
    if probe is not None:
        probe.remove()
    if not ctx.main:                   # rank 0 evaluates and writes the run's files
        return {"run": cfg["name"], "rank": ctx.rank, "world": ctx.world, "device": dev.type,
                "probe_steps": sorted(pset), "steps": cfg["steps"]}

    # ---------------------------------------------------------------- evaluation
    evals = [r for r in runs.read_jsonl(log_path) if r.get("type") == "eval"]
    if evals:
        ev = evals[-1]
    else:
        vb = [next(valid_batches) for _ in range(cfg["eval_batches"])]
        res = evaluate(model, vb, cfg["precision"])
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
               **({"probe_eval_seconds": round(eval_seconds, 1)} if probe_eval else {}),
               "loss_first10": float(first), "loss_last10": float(last),
               "eval": {k: v for k, v in ev.items() if k not in ("type", "step")},
               "learns": bool(ev["loss"] < ev["unigram_loss"]),
               "device": dev.type, "precision": cfg["precision"], "processes": ctx.world,
               "resume_mismatches": mismatches}
    runs.atomic_write_text(d / "summary.json", json.dumps(summary, indent=1, sort_keys=True) + "\n")
    runs.write_manifest(d, cfg)
    return summary


def _npy_bytes(a) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.asarray(a))
    return buf.getvalue()


# --------------------------------------------------------------------------- benchmark
def bench_lab(size: str = "small", kind: str = "decoder", reps: int = 4, run_steps: int | None = None,
              n_probe_steps: int | None = None, device: str = "auto", precisions=("fp32", "bf16")) -> dict:
    """Training tokens/s per precision and the probe's overhead, measured side by side in one process.

    For each precision a model is built from the same seed; ``reps`` rounds
    interleave, for every precision, three measurements of two steps each on the same
    data (every step is :func:`train_step`, as in :func:`train`):

    * ``plain``: two training steps;
    * ``inline``: a step with the inline probe (hooks, ``retain_grad``, the copy handed
      to a :class:`~tanbias.lab.probe.CaptureWriter`), a plain step and a wait for the
      capture to be on disk: the probe's whole cost, including what its writer thread
      takes from the next step;
    * ``posthoc``: a plain step and the *post-hoc* alternative (a separate
      forward+backward with the probe armed, as a probe of a saved checkpoint would
      need, packed and written synchronously).

    Each round's ``inline`` and ``posthoc`` are compared with its own ``plain`` pair
    (steps on this machine vary by about 10 % from one to the next, ten times the
    probe's cost: the paired differences cancel the slow drifts), and the medians over
    rounds give ``t_plain`` (half the plain pair), ``t_inline = t_plain + (inline -
    plain)`` (one probed step) and ``t_posthoc = 2 t_plain + (posthoc - plain)`` (a
    step and its post-hoc pass).

    The overheads of a whole default run (``run_steps`` steps, ``n_probe_steps`` of
    them probed) are then

        inline  = (N t_plain + k (t_inline - t_plain)) / (N t_plain)
        posthoc = (N t_plain + k (t_posthoc - t_plain)) / (N t_plain)

    Training throughput is also given as a fraction of the matrix-multiply rate
    of its dtype (:func:`tanbias.lab.models.gemm_peak`), measured in the same
    process, with 6 x (non-embedding parameters) FLOP per token.

    Returns
    -------
    dict
        The first precision's figures at the top level (``tokens_per_s``, ``t_plain``,
        ``t_inline``, ``t_posthoc``, ``per_step_inline_ratio``, ``per_step_posthoc_ratio``,
        ``run_overhead_inline``, ``run_overhead_posthoc``), every precision's under
        ``precisions``, ``speedup`` (second over first tokens/s), ``device``, ``load_average``.
    """
    from tanbias.lab.models import gemm_peak

    dev = resolve_device(device)
    cfg0 = validate_config({"name": "bench", "kind": kind, "size": size,
                            "probe": {"tokens": SIZES[size]["batch_size"] * SIZES[size]["seq_len"],
                                      "rank": min(8, SIZES[size]["hidden_size"] // 2)}})
    run_steps = cfg0["steps"] if run_steps is None else int(run_steps)
    k = len(probe_steps(run_steps, n_probe_steps or cfg0["probe"]["n_steps"]))
    tokens_per_step = SIZES[size]["batch_size"] * SIZES[size]["seq_len"]
    setups = {}
    for prec in precisions:
        cfg = validate_config({**cfg0, "precision": prec})
        tok, model, opt, sched = setup_training(cfg, dev)
        setups[prec] = (model, opt, sched, ResidualProbe(model, cfg["probe"]["tokens"]))
    batches, _ = training_streams(cfg0, tok)
    times = {p: {"plain": [], "inline": [], "posthoc": []} for p in precisions}
    tmp = Path(tempfile.mkdtemp(prefix="bench-lab-"))
    writer = CaptureWriter()

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    def step(prec, batch, inline=False):
        model, opt, sched, probe = setups[prec]
        train_step(model, opt, sched, batch, prec, dev,
                   capture=(probe, writer, tmp / "cap.npz") if inline else None)

    def posthoc(prec, batch):
        model, _, _, probe = setups[prec]
        probe.arm()
        with autocast(dev, prec):
            loss_sum, n, _ = loss_and_correct(model, batch)
        model.zero_grad(set_to_none=True)
        (loss_sum / max(n, 1)).backward()
        runs.atomic_save_npz(tmp / "cap.npz", **probe.collect(batch))
        model.zero_grad(set_to_none=True)

    try:
        b = to_device(next(batches), dev)
        for prec in precisions:
            step(prec, b)                                     # warm-up
        for _ in range(int(reps)):
            b = to_device(next(batches), dev)                 # one batch for the round's pairs
            for kind_ in ("plain", "inline", "posthoc"):
                for prec in precisions:
                    sync()
                    t0 = time.perf_counter()
                    if kind_ == "posthoc":
                        step(prec, b)
                        posthoc(prec, b)
                    elif kind_ == "inline":
                        step(prec, b, inline=True)
                        step(prec, b)
                        writer.wait()
                    else:
                        step(prec, b)
                        step(prec, b)
                    sync()
                    times[prec][kind_].append(time.perf_counter() - t0)
    finally:
        writer.close()
        for *_, probe in setups.values():
            probe.remove()
        shutil.rmtree(tmp, ignore_errors=True)
    model = setups[precisions[0]][0]
    flop_token = 6.0 * sum(p.numel() for n, p in model.named_parameters() if "embed" not in n)
    N = run_steps
    per = {}
    for prec in precisions:
        pairs = {key: np.asarray(v) for key, v in times[prec].items()}
        t_plain = float(np.median(pairs["plain"])) / 2
        med = {"plain": t_plain,
               "inline": t_plain + float(np.median(pairs["inline"] - pairs["plain"])),
               "posthoc": 2 * t_plain + float(np.median(pairs["posthoc"] - pairs["plain"]))}
        tps = tokens_per_step / med["plain"]
        peak = gemm_peak(dtype=prec, device=dev)
        per[prec] = {
            "tokens_per_s": tps, "t_plain": med["plain"], "t_inline": med["inline"], "t_posthoc": med["posthoc"],
            "per_step_inline_ratio": med["inline"] / med["plain"],
            "per_step_posthoc_ratio": med["posthoc"] / med["plain"],
            "run_overhead_inline": (N * med["plain"] + k * (med["inline"] - med["plain"])) / (N * med["plain"]),
            "run_overhead_posthoc": (N * med["plain"] + k * (med["posthoc"] - med["plain"])) / (N * med["plain"]),
            "gemm_gflops": peak / 1e9, "peak_fraction": tps * flop_token / peak}
    first = per[precisions[0]]
    return {"size": size, "kind": kind, "reps": int(reps), "threads": cfg0["threads"], "device": dev.type,
            **first, "run_steps": N, "probe_steps": k, "precisions": per,
            "speedup": (per[precisions[1]]["tokens_per_s"] / first["tokens_per_s"]) if len(precisions) > 1 else 1.0,
            "load_average": os.getloadavg()[0]}


def measure_sizes(sizes=("small", "base", "large"), kind: str = "decoder", steps: int = 2, device: str = "auto",
                  precisions=("fp32", "bf16")) -> list[dict]:
    """Seconds per training step of each size and precision (after one warm-up step), on ``device``.

    One row per (size, precision): ``parameters`` (outside the embedding),
    ``tokens_per_step``, ``seconds_per_step`` (median of ``steps``), ``tokens_per_s``,
    ``device``, ``threads``. ``python -m tanbias.lab sizes`` writes them to
    ``data/runs/sizes.json`` (the sizing table of the README).
    """
    dev = resolve_device(device)
    rows = []
    for size in sizes:
        for prec in precisions:
            cfg = validate_config({"name": "sizes", "kind": kind, "size": size, "precision": prec})
            tok, model, opt, sched = setup_training(cfg, dev)
            batches, _ = training_streams(cfg, tok)
            times = []
            for i in range(int(steps) + 1):
                b = to_device(next(batches), dev)
                if dev.type == "cuda":
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
                with autocast(dev, prec):
                    loss_sum, n, _ = loss_and_correct(model, b)
                opt.zero_grad(set_to_none=True)
                (loss_sum / max(n, 1)).backward()
                opt.step()
                if dev.type == "cuda":
                    torch.cuda.synchronize()
                if i:                                   # the first step warms up
                    times.append(time.perf_counter() - t0)
            tps = SIZES[size]["batch_size"] * SIZES[size]["seq_len"]
            sec = float(np.median(times))
            rows.append({"size": size, "precision": prec, "kind": kind, "device": dev.type,
                         "threads": torch.get_num_threads(),
                         "parameters": int(sum(p.numel() for n, p in model.named_parameters() if "embed" not in n)),
                         "tokens_per_step": tps, "seconds_per_step": sec, "tokens_per_s": tps / sec})
            del model, opt
    return rows


def gpu_check(size: str = "base", steps: int = 300, precision: str = "bf16", device: str = "cuda",
              out_dir=None) -> dict:
    """Train ``size`` for ``steps`` steps with the probe and report what a GPU does with the lab.

    Returns ``tokens_per_s`` (training, from the run's own timing), ``gemm_tflops``
    (the device's matrix-multiply rate for ``precision``, measured in the same
    process), ``peak_fraction`` (6 x non-embedding parameters FLOP per token),
    ``probe_overhead`` (whole run / run without the time the loop spent on the probe: its
    copy and any wait for the writer thread, which packs and writes beside the steps),
    ``peak_memory_gb`` (CUDA only), ``loss_first``, ``loss_last``, ``seconds``.
    ``scripts/gpu_check.sh`` calls it when torch sees a CUDA GPU.
    """
    from tanbias.lab.models import gemm_peak

    dev = resolve_device(device)
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    tmp = Path(out_dir) if out_dir is not None else Path(tempfile.mkdtemp(prefix="gpu-check-"))
    cfg = {"name": f"gpu-check-{size}", "kind": "decoder", "size": size, "steps": int(steps),
           "precision": precision, "checkpoint_every": int(steps), "eval_batches": 2,
           "threads": min(os.cpu_count() or 1, 8) if dev.type == "cpu" else 1,
           "probe": {"n_steps": min(14, int(steps)),
                     "tokens": min(4096, SIZES[size]["batch_size"] * SIZES[size]["seq_len"])}}
    try:
        summary = train(cfg, out_dir=tmp, fresh=True, progress=False, device=device)
        peak = gemm_peak(4096 if dev.type == "cuda" else 1024, dtype=precision, device=dev)
        _, model, _, _ = setup_training(validate_config(cfg))
        flop_token = 6.0 * sum(p.numel() for n, p in model.named_parameters() if "embed" not in n)
        losses = [r["loss"] for r in runs.read_jsonl(tmp / "metrics.jsonl") if r.get("type") == "step"]
    finally:
        if out_dir is None:
            shutil.rmtree(tmp, ignore_errors=True)
    tps = summary["tokens_per_s"]
    train_s = summary["train_seconds"]
    return {"size": size, "steps": int(steps), "precision": precision, "device": dev.type,
            "device_name": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
            "tokens_per_s": tps, "gemm_tflops": peak / 1e12, "peak_fraction": tps * flop_token / peak,
            "probe_overhead": train_s / max(train_s - summary["probe_seconds"], 1e-9),
            "peak_memory_gb": torch.cuda.max_memory_allocated(dev) / 1e9 if dev.type == "cuda" else None,
            "loss_first": float(np.mean(losses[:10])), "loss_last": float(np.mean(losses[-10:])),
            "seconds": time.perf_counter() - t0}


def bench_ddp(size: str = "small", kind: str = "decoder", steps: int = 8, nproc: int = 2) -> dict:
    """Training tokens/s of one process against ``nproc`` under torchrun (gloo, one thread each).

    Runs the same short config (no probe) twice, as ``python -m tanbias.lab train``
    and as ``torchrun --standalone --nproc_per_node=nproc -m tanbias.lab train``, and
    reads each run's own tokens/s (training steps only, from its summary).
    """
    import subprocess
    import sys

    tmp = Path(tempfile.mkdtemp(prefix="bench-ddp-"))
    cfg = {"name": "bench-ddp", "kind": kind, "size": size, "steps": int(steps), "eval_batches": 1,
           "checkpoint_every": int(steps),
           "probe": {"enabled": False, "n_steps": 2,
                     "tokens": min(4096, SIZES[size]["batch_size"] * SIZES[size]["seq_len"])}}
    (tmp / "cfg.json").write_text(json.dumps(cfg))
    env = {k: v for k, v in os.environ.items() if k not in distributed.TORCHRUN_VARS}
    env["OMP_NUM_THREADS"] = "1"
    out = {}
    try:
        for label, prefix in (("one", []), ("ddp", ["-m", "torch.distributed.run", "--standalone",
                                                    f"--nproc_per_node={nproc}"])):
            cmd = [sys.executable, *prefix, "-m", "tanbias.lab", "train", str(tmp / "cfg.json"),
                   "--out", str(tmp / label), "--no-progress", "--device", "cpu"]
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if proc.returncode != 0:
                raise RuntimeError(f"{label}: {proc.stderr[-500:]}")
            out[label] = json.loads((tmp / label / "summary.json").read_text())["tokens_per_s"]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"size": size, "kind": kind, "steps": int(steps), "nproc": int(nproc),
            "tokens_per_s_one": out["one"], "tokens_per_s_ddp": out["ddp"], "speedup": out["ddp"] / out["one"]}
