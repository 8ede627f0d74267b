"""Resumable, deterministic training runs with the alignment probe (chapters 7, 8).

``python -m tanbias.lab train CONFIG`` calls :func:`train`. A run

* trains the encoder (EuroBERT, masked LM) or the decoder (Llama, causal LM) of
  :mod:`tanbias.lab.models` on a language mixture of the corpus' training split
  (:mod:`tanbias.lab.data`),
  with AdamW (linear warm-up, cosine decay to 10 %, clip 1.0), every step through
  :func:`train_step` (one process or one rank of N);
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

import dataclasses
import io
import json
import math
import os
import random
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from tanbias.errors import CorruptFileError, ParameterError
from tanbias.lab import distributed, runs
from tanbias.lab.config import REPRODUCE_TOLERANCE, RunConfig, load_config
from tanbias.lab.aliasing import alias_convergence
from tanbias.lab.data import (
    alias_map_of,
    batch_targets,
    check_languages,
    common_batches,
    original_ids,
    probe_eval_batches,
    training_streams,
    training_target_counts,
)
from tanbias.lab.models import autocast, evaluate, log_unigram, make_model, n_inputs_of, resolve_device, to_device, unigram_baseline
from tanbias.lab.probe import CaptureWriter, ResidualProbe, output_spectrum, probe_steps, residual_modules
from tanbias.lab.tokenizer import load_tokenizer

__all__ = ["train", "train_step", "Capture", "setup_training", "lr_schedule", "as_config", "train_revisions",
           "Interrupted"]


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


def as_config(config) -> RunConfig:
    """A :class:`~tanbias.lab.config.RunConfig` from a config, a dict of its fields or a JSON file."""
    if isinstance(config, RunConfig):
        return config
    if isinstance(config, dict):
        return RunConfig.from_dict(config)
    return load_config(config)


def setup_training(cfg: RunConfig, device=None):
    """Tokenizer, model (on ``device``, default the CPU), AdamW and its schedule for a run config."""
    torch.set_num_threads(cfg.threads)
    torch.use_deterministic_algorithms(True, warn_only=True)
    tok = load_tokenizer()
    bias = log_unigram(training_target_counts(cfg, tok)) if cfg.output_bias == "unigram" else None
    model = make_model(cfg.kind, cfg.size, vocab_size=len(tok), seed=cfg.seed, tie_embeddings=cfg.tie_embeddings,
                       n_inputs=n_inputs_of(cfg, tok), output_bias=bias)
    if device is not None:
        model = model.to(device)        # before the optimizer: its state lives beside the weights
    dev_type = torch.device(device).type if device is not None else "cpu"
    if cfg.precision == "bf16" and dev_type == "cpu":
        # PyTorch's CPU flash-attention backward is about 4x slower in bfloat16 than in float32
        # (profiled on the small decoder); the eager path's bfloat16 matmuls are fast
        model.config._attn_implementation = "eager"
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and "embed" not in n]
    no_decay = [p for n, p in model.named_parameters() if not (p.ndim >= 2 and "embed" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=cfg.lr, betas=(0.9, 0.98), eps=1e-8)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_schedule(cfg.steps, cfg.warmup_steps, cfg.schedule))
    return tok, model, opt, sched


@dataclass
class Capture:
    """What a probed step hands its capture to: the armed ``probe``, the ``writer`` thread
    (:class:`~tanbias.lab.probe.CaptureWriter`), the file ``path`` and the ``tokens`` kept
    (under torchrun rank 0 gathers every rank's positions and keeps the first ``tokens``)."""
    probe: ResidualProbe
    writer: CaptureWriter
    path: Path
    tokens: int


def train_step(model, opt, sched, batch, precision: str, device, capture: Capture | None = None,
               ctx: distributed.Context | None = None, step_model=None, surgery=None, step: int = 0):
    """One optimizer step on ``batch`` (already on ``device``): one process's, or one rank's under torchrun.

    Forward and loss under :func:`~tanbias.lab.models.autocast`, backward, gradient
    clipping at norm 1, AdamW step, schedule step. The loss each process
    differentiates is its summed loss times the number of processes over the
    *global* number of scored tokens, so DistributedDataParallel's average of the
    gradients is the gradient of the global mean loss (for one process it is the
    mean loss). ``capture`` arms its probe for this step and, after the backward,
    hands the capture (gathered on rank 0 under torchrun) to its writer. :func:`train`
    and :func:`tanbias.lab.bench.bench_lab` run their steps through it.

    Parameters
    ----------
    ctx : tanbias.lab.distributed.Context, optional
        Rank and world size (default: one process).
    step_model : torch.nn.Module, optional
        What computes the loss: the :class:`~tanbias.lab.distributed.LossModule` that
        DistributedDataParallel wraps under torchrun (default: ``model``'s own).
    surgery : tanbias.lab.surgery.Surgery, optional
        The run's gradient surgery (chapter 11): armed before the forward pass of step
        ``step``, applied to the update after the optimizer's step (its figures in
        ``surgery.last``).

    Returns
    -------
    tuple
        ``(loss, scored, correct, capture_seconds)``: the global mean loss (a detached
        tensor), the global numbers of scored and correctly predicted positions, and the
        seconds the step spent on the capture.
    """
    ctx = distributed.Context() if ctx is None else ctx
    step_model = distributed.LossModule(model) if step_model is None else step_model
    if capture is not None:
        capture.probe.arm()
    if surgery is not None:
        surgery.begin(step, batch["input_ids"])
    with autocast(device, precision):
        loss_sum, nc = step_model(batch["input_ids"], batch["labels"])
    n, correct = (int(v) for v in distributed.all_sum(nc, ctx))
    loss = loss_sum * ctx.world / max(n, 1)
    logged = distributed.all_sum(loss_sum.detach().float(), ctx) / max(n, 1)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    seconds = 0.0
    if capture is not None:
        t = time.perf_counter()
        acts, grads, ids, orig = capture.probe.collect_raw(batch)
        if ctx.distributed:
            grads = [g / ctx.world for g in grads]        # the gradient of the global mean loss
            got = distributed.gather_rows([*acts, *grads, ids, orig], ctx, batch["input_ids"].shape[0])
            if ctx.main:
                L1, k = len(acts), capture.tokens
                acts, grads, ids, orig = ([a[:k] for a in got[:L1]], [g[:k] for g in got[L1:2 * L1]],
                                          got[-2][:k], got[-1][:k])
        if ctx.main:
            # the output matrix before this step's update, beside the gradients it shaped
            capture.writer.submit(capture.path, acts, grads, ids, orig, extra=output_spectrum(model))
        seconds = time.perf_counter() - t
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    if surgery is not None:
        surgery.finish(step)
    sched.step()
    return logged.detach(), n, correct, seconds


def _save_checkpoint(path, model, opt, sched, step, counts, elapsed, probe_seconds, surgery=None,
                     input_counts=None):
    buf = io.BytesIO()
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(),
                "step": step, "counts": counts, "elapsed": elapsed, "probe_seconds": probe_seconds,
                **({"input_counts": input_counts} if input_counts is not None else {}),
                **({"surgery": surgery.state_dict()} if surgery is not None else {}),
                "rng": {"torch": torch.get_rng_state(), "numpy": np.random.get_state(),
                        "python": random.getstate()}}, buf)
    runs.atomic_write_bytes(path, buf.getvalue())


def _load_checkpoint(path, model, opt, sched, surgery=None):
    try:
        ck = torch.load(path, map_location="cpu", weights_only=False)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        sched.load_state_dict(ck["sched"])
        if surgery is not None:
            surgery.load_state_dict(ck["surgery"])
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
    config : RunConfig, dict or path
        A :class:`~tanbias.lab.config.RunConfig`, a dict of its fields or a JSON file.
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
    cfg = as_config(config)
    check_languages(cfg.languages)
    d = Path(out_dir) if out_dir is not None else runs.run_dir(cfg.name)
    dev = resolve_device(device)
    ctx = distributed.context(dev)          # torchrun: rank, world size, this rank's device
    dev = ctx.device
    if ctx.distributed:
        if cfg.surgery is not None:
            raise ParameterError(f"surgery={cfg.surgery.arm!r} is not allowed under torchrun: valid range is "
                                 "one process (each rank would estimate its own subspace and the replicas "
                                 "would drift apart). Run it with python -m tanbias.lab train.")
        if cfg.size.batch_size % ctx.world:
            raise ParameterError(f"batch_size={cfg.size.batch_size} is out of range for "
                                 f"{ctx.world} processes: valid range is multiples of {ctx.world}.")
    if ctx.main:
        cfg = _train_setup_files(d, cfg, fresh)
    ctx.barrier()
    try:
        summary = _train(cfg, d, ctx, dev, stop_after, progress)
    except BaseException:
        distributed.finish(ctx, wait=False)     # a failing rank must not wait for the others
        raise
    distributed.finish(ctx)
    return summary


def _train_setup_files(d: Path, cfg: RunConfig, fresh: bool) -> RunConfig:
    """``--fresh`` clean-up and the run's ``config.json`` (checked against the one of a run to
    resume, whose form it keeps); returns the config as written."""
    if fresh:
        for name in ("metrics.jsonl", *runs.COMMITTED_FILES[2:], "manifest.json"):
            (d / name).unlink(missing_ok=True)
        shutil.rmtree(d / "work", ignore_errors=True)
    d.mkdir(parents=True, exist_ok=True)
    cfg_path = d / "config.json"
    if cfg_path.exists():
        old = runs.read_config(d)
        if old != cfg and (d / "metrics.jsonl").exists():
            raise ParameterError(f"config={cfg.name!r} differs from the config of the run in {d}: "
                                 "valid range is the same config to resume. Pass --fresh to start over.")
        if old == cfg:                 # a run resumed: its config.json keeps the form it was written in
            cfg = dataclasses.replace(cfg, omitted_keys=old.omitted_keys)
    runs.atomic_write_text(cfg_path, cfg.to_json())
    return cfg


def _train(cfg: RunConfig, d: Path, ctx, dev, stop_after, progress) -> dict:
    """The training loop of :func:`train` (every rank runs it; rank 0 writes)."""
    from tqdm.auto import tqdm

    tok, model, opt, sched = setup_training(cfg, dev)
    surgery = None
    if cfg.surgery is not None:
        from tanbias.lab.surgery import Surgery

        surgery = Surgery(model, cfg.surgery, cfg.steps, cfg.seed)
    step_model = distributed.LossModule(model)
    if ctx.distributed:
        from torch.nn.parallel import DistributedDataParallel

        step_model = DistributedDataParallel(step_model, device_ids=[dev.index] if dev.type == "cuda" else None)
    tokens_per_step = cfg.tokens_per_step
    vocab = len(tok)
    ckpt = runs.checkpoint_path(d)
    aliases = alias_map_of(cfg, tok)
    start, counts, elapsed, probe_seconds = 0, np.zeros(vocab, np.int64), 0.0, 0.0
    # an aliased run also counts the input ids its text is shown as (link 0 of the aliasing knob)
    input_counts = np.zeros(aliases.n_inputs, np.int64) if aliases is not None else None
    if ckpt.exists():
        ck = _load_checkpoint(ckpt, model, opt, sched, surgery)
        start, counts, elapsed = ck["step"], ck["counts"], ck["elapsed"]
        probe_seconds = ck.get("probe_seconds", 0.0)
        if aliases is not None:
            input_counts = ck["input_counts"]
    log_path = d / "metrics.jsonl"
    records = runs.read_jsonl(log_path)
    if ctx.main and log_path.exists():  # drop a torn final line so appends stay valid JSONL
        good = "".join(json.dumps(r, sort_keys=True) + "\n" for r in records)
        if log_path.read_text(encoding="utf-8") != good:
            runs.atomic_write_text(log_path, good)
    logged = {r["step"]: r for r in records if r.get("type") == "step"}
    mismatches = 0
    pset = set(probe_steps(cfg.steps, cfg.probe.n_steps)) if cfg.probe.enabled else set()
    # under torchrun every rank captures all its positions; rank 0 gathers and keeps the first tokens
    probe_tokens = cfg.probe.tokens if not ctx.distributed else tokens_per_step // ctx.world
    probe = ResidualProbe(model, probe_tokens) if pset else None
    kill_after = os.environ.get("TANBIAS_KILL_AFTER_STEP")
    kill_rank = os.environ.get("TANBIAS_KILL_RANK")         # under torchrun: kill only this rank

    train_batches, valid_batches = training_streams(cfg, tok)
    # held-out batches scored at every probe step: distinct batches of one text that every seed
    # of the design shares (data.probe_eval_batches)
    probe_eval = probe_eval_batches(cfg, tok)
    probe_evals = {r["step"] for r in records if r.get("type") == "probe_eval"}
    eval_seconds = 0.0
    # an aliased run measures, at every probe step and at the end, whether a type's aliases converge
    # (aliasing.alias_convergence, on the first batch of the common held-out text)
    conv_batch = common_batches(cfg, tok, 1)[0] if (aliases is not None and ctx.main) else None
    conv_done = {r["step"] for r in records if r.get("type") == "alias"}
    conv_modules = residual_modules(model) if conv_batch is not None else None

    def converge(at: int) -> None:
        rows = alias_convergence(model, conv_modules, to_device(conv_batch, dev), aliases, cfg.size.seq_len)
        runs.append_jsonl(log_path, {"type": "alias", "step": at, "rows": rows})
        conv_done.add(at)

    for _ in range(start):             # the data-stream position: regenerate and skip
        next(train_batches)
    bar = tqdm(total=cfg.steps, initial=start, desc=cfg.name, unit="step",
               disable=not progress, dynamic_ncols=True)
    model.train()
    # captures are packed and written on a thread beside the steps; leaving this block waits
    # for them (and re-raises a failed write)
    with CaptureWriter() as writer:
        for step in range(start, cfg.steps):
            if ctx.main and probe_eval and step in pset and step not in probe_evals:
                te = time.perf_counter()
                res = evaluate(model, probe_eval, cfg.precision)
                runs.append_jsonl(log_path, {"type": "probe_eval", "step": step, "loss": res["loss"],
                                             "accuracy": res["accuracy"], "tokens": res["tokens"]})
                probe_evals.add(step)
                eval_seconds += time.perf_counter() - te
            if conv_batch is not None and step in pset and step not in conv_done:
                te = time.perf_counter()
                converge(step)
                eval_seconds += time.perf_counter() - te
            t0 = time.perf_counter()
            batch = next(train_batches)
            counts += np.bincount(original_ids(batch).reshape(-1).numpy(), minlength=vocab)
            if input_counts is not None:
                input_counts += np.bincount(batch["aliased"].reshape(-1).numpy(), minlength=aliases.n_inputs)
            probing = step in pset
            capture = Capture(probe, writer, runs.capture_path(d, step), cfg.probe.tokens) if probing else None
            logged_loss, n, correct, tp = train_step(model, opt, sched, to_device(distributed.shard(batch, ctx), dev),
                                                     cfg.precision, dev, capture=capture, ctx=ctx,
                                                     step_model=step_model, surgery=surgery, step=step)
            probe_seconds += tp
            dt = time.perf_counter() - t0
            elapsed += dt
            rec = {"type": "step", "step": step, "loss": float(logged_loss.detach()), "accuracy": correct / max(n, 1),
                   "scored": n, "tokens": (step + 1) * tokens_per_step, "lr": sched.get_last_lr()[0],
                   "seconds": round(elapsed, 3), "tokens_per_s": round(tokens_per_step / dt, 1),
                   "probe": probing, **(surgery.last if surgery is not None else {})}
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
            if ctx.main and (done % cfg.checkpoint_every == 0 or done == cfg.steps):
                tw = time.perf_counter()
                writer.wait()                # a checkpoint never counts a capture not yet written
                probe_seconds += time.perf_counter() - tw
                _save_checkpoint(ckpt, model, opt, sched, done, counts, elapsed, probe_seconds, surgery,
                                 input_counts)
            if stop_after is not None and done == stop_after:
                bar.close()
                raise Interrupted(f"stopped after step {step} (stop_after={stop_after})")
            if kill_after is not None and done == int(kill_after) and kill_rank in (None, str(ctx.rank)):
                os.kill(os.getpid(), signal.SIGKILL)
    bar.close()
    if probe is not None:
        probe.remove()
    if surgery is not None:
        surgery.remove()
    if ctx.main and probe_eval and cfg.steps not in probe_evals:
        # the trained model on the same held-out text as every probe step (its final point)
        res = evaluate(model, probe_eval, cfg.precision)
        runs.append_jsonl(log_path, {"type": "probe_eval", "step": cfg.steps, "loss": res["loss"],
                                     "accuracy": res["accuracy"], "tokens": res["tokens"]})
    if conv_batch is not None and cfg.steps not in conv_done:
        converge(cfg.steps)            # the trained model, after its last step
    if not ctx.main:                   # rank 0 evaluates and writes the run's files
        return {"run": cfg.name, "rank": ctx.rank, "world": ctx.world, "device": dev.type,
                "probe_steps": sorted(pset), "steps": cfg.steps}

    # ---------------------------------------------------------------- evaluation
    evals = [r for r in runs.read_jsonl(log_path) if r.get("type") == "eval"]
    if evals:
        ev = evals[-1]
    else:
        vb = [next(valid_batches) for _ in range(cfg.eval_batches)]
        res = evaluate(model, vb, cfg.precision)
        targets = torch.cat([batch_targets(cfg.kind, b) for b in vb]).numpy()
        uni = unigram_baseline(counts, targets, exclude_special=cfg.kind == "encoder")
        ev = {"type": "eval", "step": cfg.steps, **{k: res[k] for k in ("loss", "perplexity", "accuracy", "tokens")},
              "unigram_loss": uni["loss"], "unigram_perplexity": uni["perplexity"],
              "unigram_accuracy": uni["accuracy"]}
        runs.append_jsonl(log_path, ev)
    runs.atomic_write_bytes(d / "token_counts.npy", _npy_bytes(counts))
    if input_counts is not None:
        runs.atomic_write_bytes(d / "input_counts.npy", _npy_bytes(input_counts))
        import pandas as pd

        conv = [{"run": cfg.name, "step": r["step"], **row} for r in runs.read_jsonl(log_path)
                if r.get("type") == "alias" for row in r["rows"]]
        cols = ["run", "step", "layer", "type_id", "k", "shown", "n", "between", "within", "ratio"]
        runs.atomic_write_text(d / "alias.csv", pd.DataFrame(conv, columns=cols).sort_values(
            ["step", "type_id", "layer"]).to_csv(index=False, float_format="%.6g"))
    steps_log = [logged[s] for s in sorted(logged)]
    first = np.mean([r["loss"] for r in steps_log[:10]])
    last = np.mean([r["loss"] for r in steps_log[-10:]])
    summary = {"run": cfg.name, "kind": cfg.kind, "regime": cfg.regime, "seed": cfg.seed,
               "steps": cfg.steps, "tokens": cfg.steps * tokens_per_step,
               "parameters": int(sum(p.numel() for p in model.parameters())),
               "train_seconds": round(elapsed, 1),
               "tokens_per_s": round(cfg.steps * tokens_per_step / max(elapsed, 1e-9), 1),
               "probe_seconds": round(probe_seconds, 2), "probe_steps": sorted(pset),
               **({"probe_eval_seconds": round(eval_seconds, 1)} if probe_eval else {}),
               "loss_first10": float(first), "loss_last10": float(last),
               "eval": {k: v for k, v in ev.items() if k not in ("type", "step")},
               "learns": bool(ev["loss"] < ev["unigram_loss"]),
               "device": dev.type, "precision": cfg.precision, "processes": ctx.world,
               "resume_mismatches": mismatches}
    runs.atomic_write_text(d / "summary.json", json.dumps(summary, indent=1, sort_keys=True) + "\n")
    runs.write_manifest(d, cfg)
    return summary


def _npy_bytes(a) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.asarray(a))
    return buf.getvalue()


def train_revisions(config, root, at=None, device: str = "cpu") -> Path:
    """Train a run config in this process (no log, no probe) and save the model at steps ``at``
    as revisions ``step<N>`` of a local mirror ``root``: the post-hoc probe's input for a lab model.

    The steps are :func:`train`'s (same data stream, schedule and :func:`train_step`), so
    the post-hoc probe of these revisions can be set beside the in-step probe of a run.
    Revision ``step0`` is the initialisation.

    Parameters
    ----------
    config : RunConfig, dict or path
    root : path-like
        The mirror's folder (:func:`tanbias.lab.checkpoints.save_revision`).
    at : sequence of int, optional
        Steps to save, in ``[0, steps]``; default ``(0, steps)``.

    Returns
    -------
    pathlib.Path
        ``root``.
    """
    from tanbias._checks import check_int
    from tanbias.lab.checkpoints import save_revision

    cfg = as_config(config)
    at = sorted({check_int("at", s, lo=0, hi=cfg.steps) for s in ((0, cfg.steps) if at is None else at)})
    dev = resolve_device(device)
    tok, model, opt, sched = setup_training(cfg, dev)
    batches, _ = training_streams(cfg, tok)
    for step in range(at[-1] + 1):
        if step in at:
            save_revision(model, tok, root, f"step{step}")
        if step < at[-1]:
            train_step(model, opt, sched, to_device(next(batches), dev), cfg.precision, dev)
    return Path(root)
