"""Resumable, deterministic training runs with the alignment probe (chapters 7, 8).

``python -m tanbias.lab train CONFIG`` calls :func:`train`. A run

* trains the encoder (EuroBERT, masked LM) or the decoder (Llama, causal LM) of
  :mod:`tanbias.lab.models` on its data stream (:class:`tanbias.lab.data.Stream`:
  a language mixture of the corpus' training split, built once from the config),
  with AdamW (linear warm-up, cosine decay to 10 %, clip 1.0), every step through
  :func:`train_step` (one process or one rank of N);
* shows a tqdm bar with the loss and tokens/s;
* logs one JSON record per step to ``metrics.jsonl`` (append-only, fsync per line);
* checkpoints every ``checkpoint_every`` steps to ``work/ckpt.pt`` (temp file +
  ``os.replace``): model, optimizer, scheduler, RNG states (torch, numpy,
  python), the data-stream position (batches consumed), token counts, elapsed time,
  and the state of each of its hooks;
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

The loop names no experiment: what an experiment adds to a run (the held-out score
at the probe steps, the aliasing knob's counts and convergence, gradient surgery) is
a hook (:class:`tanbias.lab.hooks.Hook`) registered in :data:`HOOKS`, which the loop
calls at fixed points. :func:`train` runs in three parts: ``_resume`` (set up,
hooks, checkpoint), ``_steps`` (the step loop) and ``_finish`` (the final
measurements, the evaluation and the files).

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
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import torch

from tanbias._checks import check_int
from tanbias.errors import CorruptFileError, ParameterError
from tanbias.lab import distributed, runs
from tanbias.lab.aliasing import AliasingHook
from tanbias.lab.checkpoints import save_revision
from tanbias.lab.config import REPRODUCE_TOLERANCE, RunConfig, load_config
from tanbias.lab.data import Stream, batch_targets, check_languages, original_ids
from tanbias.lab.hooks import Hook
from tanbias.lab.devices import resolve_device
from tanbias.lab.models import autocast, evaluate, model_from_config, to_device, unigram_baseline
from tanbias.lab.probe import CaptureWriter, ProbeEval, ResidualProbe, output_spectrum, residual_modules
from tanbias.lab.surgery import Surgery

__all__ = ["train", "train_step", "Capture", "setup_training", "lr_schedule", "as_config", "train_revisions",
           "Interrupted", "HOOKS", "TrainingRun"]

#: the experiments' hooks of the training loop (:class:`~tanbias.lab.hooks.Hook`), in the order the
#: loop calls them: a probe step is scored on held-out text before its aliases' convergence is measured
HOOKS: tuple[type[Hook], ...] = (ProbeEval, AliasingHook, Surgery)


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


def setup_training(cfg: RunConfig, device=None, stream: Stream | None = None):
    """Data stream, model (on ``device``, default the CPU), AdamW and its schedule for a run config.

    ``stream`` is the run's :class:`~tanbias.lab.data.Stream` (built from ``cfg`` when not
    given); the model's input embedding has its rows (an aliased run's alias rows too), and a
    unigram-head run's output bias starts at the log of the add-one-smoothed unigram of the
    stream's training targets (:meth:`~tanbias.lab.data.Stream.target_counts`).
    Returns ``(stream, model, optimizer, schedule)``; the tokenizer is ``stream.tokenizer``.
    """
    torch.set_num_threads(cfg.threads)
    torch.use_deterministic_algorithms(True, warn_only=True)
    stream = Stream.from_config(cfg) if stream is None else stream
    model = model_from_config(cfg, stream)
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
    return stream, model, opt, sched


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
               ctx: distributed.Context | None = None, step_model=None, hooks=(), step: int = 0):
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
    hooks : sequence of tanbias.lab.hooks.Hook
        Called before the forward pass of step ``step`` (``before_forward``) and after the
        optimizer's step (``after_optimizer_step``): the gradient surgery of chapter 12
        (:class:`~tanbias.lab.surgery.Surgery`) replaces the update there.

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
    for hook in hooks:
        hook.before_forward(step, batch)
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
    for hook in hooks:
        hook.after_optimizer_step(step)
    sched.step()
    return logged.detach(), n, correct, seconds


@dataclass(eq=False)
class TrainingRun:
    """A run in the training loop of :func:`train`: the loop's state, and what its hooks read.

    Hooks (:class:`~tanbias.lab.hooks.Hook`) read ``cfg``, ``stream``, ``model``,
    ``ctx``, ``device`` and ``dir``, log through :meth:`log`, find what a resumed run
    logged with :meth:`logged_steps`, and use :attr:`modules`, :meth:`to_device` and
    :attr:`hook_seconds`. The rest is the loop's: the first step to train, the type
    counts of the stream consumed, the seconds spent, the step records.
    """
    cfg: RunConfig
    #: the run folder
    dir: Path
    ctx: distributed.Context
    device: torch.device
    stream: Stream
    model: torch.nn.Module
    opt: torch.optim.Optimizer
    sched: torch.optim.lr_scheduler.LRScheduler
    #: what computes the loss (DistributedDataParallel's wrapper under torchrun)
    step_model: torch.nn.Module
    #: the log as read when the run started or resumed
    records: list
    #: the run's hooks, in the order of :data:`HOOKS`
    hooks: list = field(default_factory=list)
    #: the first step to train (a resumed run: its checkpoint's)
    start: int = 0
    #: counts of every type in the training stream consumed (``token_counts.npy``)
    counts: np.ndarray | None = None
    #: seconds spent in the training steps
    elapsed: float = 0.0
    #: seconds spent on the probe's captures
    probe_seconds: float = 0.0
    #: seconds spent in the hooks' measurements at the probe steps (not counted after a resume)
    hook_seconds: float = 0.0
    #: the step records, logged or recomputed after a resume, by step
    logged: dict = field(default_factory=dict)
    #: steps recomputed after a resume whose loss differs from the one logged
    mismatches: int = 0

    @property
    def log_path(self) -> Path:
        return self.dir / "metrics.jsonl"

    @cached_property
    def probe_steps(self) -> set[int]:
        """The steps the probe captures (none when the config disables it)."""
        p = self.cfg.probe
        return set(p.grid(self.cfg.steps)) if p.enabled else set()

    @cached_property
    def modules(self) -> list:
        """The model's residual-stream modules, layer 0 (the embedding) to L
        (:func:`~tanbias.lab.probe.residual_modules`)."""
        return residual_modules(self.model)

    def log(self, record: dict) -> None:
        """Append ``record`` to ``metrics.jsonl`` (rank 0 writes the log)."""
        if self.ctx.main:
            runs.append_jsonl(self.log_path, record)

    def logged_steps(self, kind: str) -> set[int]:
        """The steps of the log's records of type ``kind`` when the run (re)started."""
        return {r["step"] for r in self.records if r.get("type") == kind}

    def to_device(self, batch: dict) -> dict:
        """``batch``'s tensors on the run's device (:func:`~tanbias.lab.models.to_device`)."""
        return to_device(batch, self.device)


def _save_checkpoint(run: TrainingRun, step: int) -> None:
    """The run's state after ``step`` steps (hooks' states under their keys), written atomically."""
    buf = io.BytesIO()
    torch.save({"model": run.model.state_dict(), "opt": run.opt.state_dict(), "sched": run.sched.state_dict(),
                "step": step, "counts": run.counts, "elapsed": run.elapsed, "probe_seconds": run.probe_seconds,
                **{h.checkpoint_key: h.state_dict() for h in run.hooks if h.checkpoint_key is not None},
                "rng": {"torch": torch.get_rng_state(), "numpy": np.random.get_state(),
                        "python": random.getstate()}}, buf)
    runs.atomic_write_bytes(runs.checkpoint_path(run.dir), buf.getvalue())


def _load_checkpoint(run: TrainingRun) -> None:
    """Restore the run's state (model, optimizer, schedule, hooks, RNGs, position) from its checkpoint."""
    path = runs.checkpoint_path(run.dir)
    try:
        ck = torch.load(path, map_location="cpu", weights_only=False)
        run.model.load_state_dict(ck["model"])
        run.opt.load_state_dict(ck["opt"])
        run.sched.load_state_dict(ck["sched"])
        for h in run.hooks:
            if h.checkpoint_key is not None:
                h.load_state_dict(ck[h.checkpoint_key])
        run.start, run.counts, run.elapsed = ck["step"], ck["counts"], ck["elapsed"]
    except Exception as exc:
        raise CorruptFileError(path, runs.regenerate_command(Path(path).parents[1]),
                               f"unreadable checkpoint: {exc}") from None
    run.probe_seconds = ck.get("probe_seconds", 0.0)
    torch.set_rng_state(ck["rng"]["torch"])
    np.random.set_state(ck["rng"]["numpy"])
    random.setstate(ck["rng"]["python"])


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
    device : str
        Where to compute (:data:`tanbias.lab.devices.DEVICES`,
        :func:`~tanbias.lab.devices.resolve_device`); the captures, checkpoints and tables
        are stored from the CPU either way. The summary and the manifest record it with
        the config's ``precision``.

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
    for hook in HOOKS:                      # before the run's folder is touched
        hook.check(cfg, ctx)
    if ctx.distributed and cfg.size.batch_size % ctx.world:
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
    """The training loop of :func:`train` (every rank runs it; rank 0 writes): resume, steps, finish."""
    run = _resume(cfg, d, ctx, dev)
    _steps(run, stop_after, progress)
    return _finish(run)


def _resume(cfg: RunConfig, d: Path, ctx, dev) -> TrainingRun:
    """A run set up to train: its stream, model, optimizer and log, its hooks (:data:`HOOKS`), and,
    when the folder has a checkpoint, the state it saved (a resumed run starts at its step)."""
    stream, model, opt, sched = setup_training(cfg, dev)
    step_model = distributed.LossModule(model)
    if ctx.distributed:
        from torch.nn.parallel import DistributedDataParallel

        step_model = DistributedDataParallel(step_model, device_ids=[dev.index] if dev.type == "cuda" else None)
    log_path = d / "metrics.jsonl"
    records = runs.read_jsonl(log_path)
    if ctx.main and log_path.exists():  # drop a torn final line so appends stay valid JSONL
        good = "".join(json.dumps(r, sort_keys=True) + "\n" for r in records)
        if log_path.read_text(encoding="utf-8") != good:
            runs.atomic_write_text(log_path, good)
    run = TrainingRun(cfg, d, ctx, dev, stream, model, opt, sched, step_model, records,
                      counts=np.zeros(len(stream.tokenizer), np.int64),
                      logged={r["step"]: r for r in records if r.get("type") == "step"})
    run.hooks = [h for cls in HOOKS if (h := cls.for_run(run)) is not None]
    if runs.checkpoint_path(d).exists():
        _load_checkpoint(run)
    return run


def _steps(run: TrainingRun, stop_after: int | None, progress: bool) -> None:
    """The step loop, from the run's first step to its last: the hooks at their points, the probe's
    captures, one record per step (a step logged before a resume is recomputed and compared,
    not logged twice), the checkpoints; ``stop_after`` and ``TANBIAS_KILL_AFTER_STEP`` stop it."""
    from tqdm.auto import tqdm

    cfg, ctx, pset = run.cfg, run.ctx, run.probe_steps
    # under torchrun every rank captures all its positions; rank 0 gathers and keeps the first tokens
    probe = (ResidualProbe(run.model, cfg.probe.tokens if not ctx.distributed else cfg.tokens_per_step // ctx.world)
             if pset else None)
    kill_after = os.environ.get("TANBIAS_KILL_AFTER_STEP")
    kill_rank = os.environ.get("TANBIAS_KILL_RANK")         # under torchrun: kill only this rank
    batches = run.stream.training()
    for _ in range(run.start):         # the data-stream position: regenerate and skip
        next(batches)
    bar = tqdm(total=cfg.steps, initial=run.start, desc=cfg.name, unit="step", disable=not progress,
               dynamic_ncols=True)
    run.model.train()
    # captures are packed and written on a thread beside the steps; leaving this block waits
    # for them (and re-raises a failed write)
    with CaptureWriter() as writer:
        for step in range(run.start, cfg.steps):
            if ctx.main and step in pset:
                te = time.perf_counter()
                for hook in run.hooks:
                    hook.at_probe_step(run, step)
                run.hook_seconds += time.perf_counter() - te
            t0 = time.perf_counter()
            batch = next(batches)
            run.counts += np.bincount(original_ids(batch).reshape(-1).numpy(), minlength=run.counts.size)
            for hook in run.hooks:
                hook.before_step(run, step, batch)
            capture = (Capture(probe, writer, runs.capture_path(run.dir, step), cfg.probe.tokens)
                       if step in pset else None)
            loss, n, correct, tp = train_step(run.model, run.opt, run.sched,
                                              run.to_device(distributed.shard(batch, ctx)), cfg.precision,
                                              run.device, capture=capture, ctx=ctx, step_model=run.step_model,
                                              hooks=run.hooks, step=step)
            run.probe_seconds += tp
            dt = time.perf_counter() - t0
            run.elapsed += dt
            rec = _log_step(run, step, float(loss), n, correct, dt, probed=capture is not None)
            bar.update(1)
            bar.set_postfix(loss=f"{rec['loss']:.3f}", tok_s=f"{rec['tokens_per_s']:.0f}")
            done = step + 1
            if ctx.main and (done % cfg.checkpoint_every == 0 or done == cfg.steps):
                tw = time.perf_counter()
                writer.wait()                # a checkpoint never counts a capture not yet written
                run.probe_seconds += time.perf_counter() - tw
                _save_checkpoint(run, done)
            if stop_after is not None and done == stop_after:
                bar.close()
                raise Interrupted(f"stopped after step {step} (stop_after={stop_after})")
            if kill_after is not None and done == int(kill_after) and kill_rank in (None, str(ctx.rank)):
                os.kill(os.getpid(), signal.SIGKILL)
    bar.close()
    if probe is not None:
        probe.remove()


def _log_step(run: TrainingRun, step: int, loss: float, n: int, correct: int, seconds: float,
              probed: bool) -> dict:
    """The record of ``step`` (its hooks' fields included), logged; a step logged before a resume
    is not logged twice: its loss is compared with the log's (``run.mismatches`` counts a difference)."""
    tokens = run.cfg.tokens_per_step
    rec = {"type": "step", "step": step, "loss": loss, "accuracy": correct / max(n, 1), "scored": n,
           "tokens": (step + 1) * tokens, "lr": run.sched.get_last_lr()[0], "seconds": round(run.elapsed, 3),
           "tokens_per_s": round(tokens / seconds, 1), "probe": probed,
           **{k: v for h in run.hooks for k, v in h.step_record(step).items()}}
    if step in run.logged:
        if abs(run.logged[step]["loss"] - loss) > REPRODUCE_TOLERANCE["loss_atol"]:
            run.mismatches += 1
    else:
        run.log(rec)
        run.logged[step] = rec
    return rec


def _finish(run: TrainingRun) -> dict:
    """After the last step: the hooks closed and their measurements of the trained model; then, on
    rank 0, the evaluation on held-out batches against the unigram baseline, the counts, the
    hooks' files, the summary and the manifest. Returns the summary (another rank's: a stub)."""
    cfg, ctx = run.cfg, run.ctx
    for hook in run.hooks:
        hook.close()
    if not ctx.main:                   # rank 0 measures, evaluates and writes the run's files
        return {"run": cfg.name, "rank": ctx.rank, "world": ctx.world, "device": run.device.type,
                "probe_steps": sorted(run.probe_steps), "steps": cfg.steps}
    for hook in run.hooks:
        hook.at_probe_step(run, cfg.steps)        # the trained model, after its last step
    evals = [r for r in runs.read_jsonl(run.log_path) if r.get("type") == "eval"]
    if evals:
        ev = evals[-1]
    else:
        valid = run.stream.validation()
        vb = [next(valid) for _ in range(cfg.eval_batches)]
        res = evaluate(run.model, vb, cfg.precision)
        targets = torch.cat([batch_targets(cfg.kind, b) for b in vb]).numpy()
        uni = unigram_baseline(run.counts, targets, exclude_special=cfg.kind == "encoder")
        ev = {"type": "eval", "step": cfg.steps, **{k: res[k] for k in ("loss", "perplexity", "accuracy", "tokens")},
              "unigram_loss": uni["loss"], "unigram_perplexity": uni["perplexity"],
              "unigram_accuracy": uni["accuracy"]}
        run.log(ev)
    runs.atomic_save_npy(run.dir / "token_counts.npy", run.counts)
    added = {k: v for hook in run.hooks for k, v in hook.write(run).items()}
    steps_log = [run.logged[s] for s in sorted(run.logged)]
    tokens = cfg.steps * cfg.tokens_per_step
    summary = {"run": cfg.name, "kind": cfg.kind, "regime": cfg.regime, "seed": cfg.seed,
               "steps": cfg.steps, "tokens": tokens,
               "parameters": int(sum(p.numel() for p in run.model.parameters())),
               "train_seconds": round(run.elapsed, 1),
               "tokens_per_s": round(tokens / max(run.elapsed, 1e-9), 1),
               "probe_seconds": round(run.probe_seconds, 2), "probe_steps": sorted(run.probe_steps), **added,
               "loss_first10": float(np.mean([r["loss"] for r in steps_log[:10]])),
               "loss_last10": float(np.mean([r["loss"] for r in steps_log[-10:]])),
               "eval": {k: v for k, v in ev.items() if k not in ("type", "step")},
               "learns": bool(ev["loss"] < ev["unigram_loss"]),
               "device": run.device.type, "precision": cfg.precision, "processes": ctx.world,
               "resume_mismatches": run.mismatches}
    runs.atomic_write_text(run.dir / "summary.json", json.dumps(summary, indent=1, sort_keys=True) + "\n")
    runs.write_manifest(run.dir, cfg)
    return summary


def train_revisions(config, root, at=None, device: str = "cpu") -> Path:
    """Train a run config in this process (no log, no probe) and save the model at steps ``at``
    as revisions ``step<N>`` of a local mirror ``root``: the checkpoint probe's input for a lab model.

    The steps are :func:`train`'s (same data stream, schedule and :func:`train_step`), so
    the checkpoint probe of these revisions can be set beside the in-step probe of a run.
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
    cfg = as_config(config)
    at = sorted({check_int("at", s, lo=0, hi=cfg.steps) for s in ((0, cfg.steps) if at is None else at)})
    dev = resolve_device(device)
    stream, model, opt, sched = setup_training(cfg, dev)
    batches = stream.training()
    for step in range(at[-1] + 1):
        if step in at:
            save_revision(model, stream.tokenizer, root, f"step{step}")
        if step < at[-1]:
            train_step(model, opt, sched, to_device(next(batches), dev), cfg.precision, dev)
    return Path(root)
