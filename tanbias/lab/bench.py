"""The lab's benchmarks: training throughput, the probe's overhead, sizes, a GPU check, DDP.

``python -m tanbias.lab bench|sizes|gpucheck`` and ``python -m tanbias.book.bench``
(``make bench``) call these; the tests run each at the smallest size and number of
steps that reaches every line, and assert no timing (timings belong here, not in
a test: tests must pass on a busy machine).

* :func:`bench_lab` — training tokens/s per precision and the probe's overhead,
  measured side by side in one process, every step through
  :func:`tanbias.lab.train.train_step`;
* :func:`measure_sizes` — seconds per step of each :data:`~tanbias.lab.config.SIZES`
  entry and precision, and :func:`record_sizes`, which merges them into
  ``data/runs/sizes.json`` (the README's sizing table);
* :func:`gpu_check` — a short run on a GPU: tokens/s, share of the matmul peak,
  probe overhead, peak memory (``scripts/gpu_check.sh``);
* :func:`bench_ddp` — one process against ``torchrun`` with N;
* :func:`bench_measure` — the measurement command (``python -m tanbias measure``) against one
  plain forward pass of its model over the same tokens (:data:`BENCH_TARGETS`).
"""
from __future__ import annotations

import gc
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from tanbias.errors import CorruptFileError
from tanbias.lab import distributed, runs
from tanbias.lab.analysis import pretrained as pt
from tanbias.lab.analysis.measure import measure_model
from tanbias.lab.analysis.measure_inputs import measure_settings
from tanbias.lab.analysis.pretrained import MeasureSettings
from tanbias.lab.config import ProbeSettings, RunConfig, SurgerySettings, model_size, probe_steps
from tanbias.lab.data import Stream
from tanbias.lab.experiments import CAUSAL_SURGERY
from tanbias.lab.devices import resolve_device
from tanbias.lab.loading import load_model
from tanbias.lab.models import autocast, gemm_peak, loss_and_correct, to_device
from tanbias.lab.probe import CaptureWriter, ResidualProbe
from tanbias.lab.surgery import Surgery
from tanbias.lab.train import Capture, setup_training, train, train_step

__all__ = ["flop_per_token", "bench_lab", "bench_surgery", "measure_sizes", "record_sizes", "gpu_check", "bench_ddp",
           "BENCH_TARGETS", "bench_measure"]


def flop_per_token(model) -> float:
    """Training FLOP a token, for a share of the matmul rate: 6 x the parameters that multiply, that is
    every parameter but the input embedding (a lookup), the output layer counted whether or not it
    shares its weight with the input embedding.

    >>> from tanbias.lab.config import RunConfig
    >>> from tanbias.lab.models import model_from_config
    >>> untied = model_from_config(RunConfig(name="x", kind="decoder", size="smoke"))
    >>> tied = model_from_config(RunConfig(name="x", kind="decoder", size="smoke", tie_embeddings=True))
    >>> flop_per_token(untied) == flop_per_token(tied)
    True
    """
    out_w = model.get_output_embeddings().weight
    return 6.0 * (out_w.numel() + sum(p.numel() for n, p in model.named_parameters()
                                      if p is not out_w and "embed_tokens" not in n))


def bench_lab(size: str = "small", kind: str = "decoder", reps: int = 4, run_steps: int | None = None,
              n_probe_steps: int | None = None, device: str = "auto", precisions=("fp32", "bf16"),
              gemm_n: int = 2048) -> dict:
    """Training tokens/s per precision and the probe's overhead, measured side by side in one process.

    For each precision a model is built from the same seed; ``reps`` rounds
    interleave, for every precision, three measurements of two steps each on the same
    data (every step is :func:`~tanbias.lab.train.train_step`, as in :func:`~tanbias.lab.train.train`):

    * ``plain``: two training steps;
    * ``inline``: a step with the inline probe (hooks, ``retain_grad``, the copy handed
      to a :class:`~tanbias.lab.probe.CaptureWriter`), a plain step and a wait for the
      capture to be on disk: the probe's whole cost, including what its writer thread
      takes from the next step;
    * ``separate``: a plain step and the *separate-pass* alternative (a separate
      forward+backward with the probe armed, as a probe of a saved checkpoint would
      need, packed and written synchronously).

    Each round's ``inline`` and ``separate`` are compared with its own ``plain`` pair
    (steps on this machine vary by about 10 % from one to the next, ten times the
    probe's cost: the paired differences cancel the slow drifts), and the medians over
    rounds give ``t_plain`` (half the plain pair), ``t_inline = t_plain + (inline -
    plain)`` (one probed step) and ``t_separate = 2 t_plain + (separate - plain)`` (a
    step and its separate probe pass).

    The overheads of a whole default run (``run_steps`` steps, ``n_probe_steps`` of
    them probed) are then

        inline  = (N t_plain + k (t_inline - t_plain)) / (N t_plain)
        separate = (N t_plain + k (t_separate - t_plain)) / (N t_plain)

    Training throughput is also given as a fraction of the matrix-multiply rate
    of its dtype (:func:`tanbias.lab.models.gemm_peak` of ``gemm_n x gemm_n``
    matrices), measured in the same process, with ``flop_per_token`` = 6 x (the parameters
    outside the input embedding: the blocks and the output layer) FLOP per token. (A CPU without bfloat16 instructions takes minutes for a bf16
    product at 2048: the tests pass a small ``gemm_n``.)

    Returns
    -------
    dict
        The first precision's figures at the top level (``tokens_per_s``, ``t_plain``,
        ``t_inline``, ``t_separate``, ``per_step_inline_ratio``, ``per_step_separate_ratio``,
        ``run_overhead_inline``, ``run_overhead_separate``), every precision's under
        ``precisions``, ``speedup`` (second over first tokens/s), ``flop_per_token``, ``device``,
        ``load_average`` (the one-minute load average at the end: above 1, something shared the machine).
    """
    dev = resolve_device(device)
    ms = model_size(size)
    cfg0 = RunConfig(name="bench", kind=kind, size=ms,
                     probe=ProbeSettings(tokens=ms.tokens_per_step, rank=min(8, ms.hidden_size // 2)))
    run_steps = cfg0.steps if run_steps is None else int(run_steps)
    k = len(probe_steps(run_steps, n_probe_steps or cfg0.probe.n_steps))
    tokens_per_step = cfg0.tokens_per_step
    setups = {}
    stream = Stream.from_config(cfg0)
    for prec in precisions:
        cfg = cfg0.replace(precision=prec)
        _, model, opt, sched = setup_training(cfg, dev, stream)
        setups[prec] = (model, opt, sched, ResidualProbe(model, cfg.probe.tokens))
    batches = stream.training()
    times = {p: {"plain": [], "inline": [], "separate": []} for p in precisions}
    tmp = Path(tempfile.mkdtemp(prefix="bench-lab-"))
    writer = CaptureWriter()

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    def step(prec, batch, inline=False):
        model, opt, sched, probe = setups[prec]
        train_step(model, opt, sched, batch, prec, dev,
                   capture=Capture(probe, writer, tmp / "cap.npz", probe.tokens) if inline else None)

    def separate(prec, batch):
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
            for kind_ in ("plain", "inline", "separate"):
                for prec in precisions:
                    sync()
                    t0 = time.perf_counter()
                    if kind_ == "separate":
                        step(prec, b)
                        separate(prec, b)
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
    flop_token = flop_per_token(model)
    N = run_steps
    per = {}
    for prec in precisions:
        pairs = {key: np.asarray(v) for key, v in times[prec].items()}
        t_plain = float(np.median(pairs["plain"])) / 2
        med = {"plain": t_plain,
               "inline": t_plain + float(np.median(pairs["inline"] - pairs["plain"])),
               "separate": 2 * t_plain + float(np.median(pairs["separate"] - pairs["plain"]))}
        tps = tokens_per_step / med["plain"]
        peak = gemm_peak(int(gemm_n), dtype=prec, device=dev)
        per[prec] = {
            "tokens_per_s": tps, "t_plain": med["plain"], "t_inline": med["inline"], "t_separate": med["separate"],
            "per_step_inline_ratio": med["inline"] / med["plain"],
            "per_step_separate_ratio": med["separate"] / med["plain"],
            "run_overhead_inline": (N * med["plain"] + k * (med["inline"] - med["plain"])) / (N * med["plain"]),
            "run_overhead_separate": (N * med["plain"] + k * (med["separate"] - med["plain"])) / (N * med["plain"]),
            "gemm_gflops": peak / 1e9, "peak_fraction": tps * flop_token / peak}
    first = per[precisions[0]]
    return {"size": ms.name, "kind": kind, "reps": int(reps), "threads": cfg0.threads, "device": dev.type,
            **first, "run_steps": N, "probe_steps": k, "precisions": per,
            "speedup": (per[precisions[1]]["tokens_per_s"] / first["tokens_per_s"]) if len(precisions) > 1 else 1.0,
            "flop_per_token": flop_token, "load_average": os.getloadavg()[0]}


def measure_sizes(sizes=("small", "base", "large"), kind: str = "decoder", steps: int = 2, device: str = "auto",
                  precisions=("fp32", "bf16")) -> list[dict]:
    """Seconds per training step (:func:`~tanbias.lab.train.train_step`) of each size and precision
    (after one warm-up step), on ``device``.

    One row per (size, precision): ``parameters`` (outside the embedding),
    ``tokens_per_step``, ``seconds_per_step`` (median of ``steps``), ``tokens_per_s``,
    ``device``, ``threads``. ``python -m tanbias.lab sizes`` merges them into
    ``data/runs/sizes.json`` (:func:`record_sizes`; the sizing table of the README).
    """
    dev = resolve_device(device)
    rows = []
    for size in sizes:
        for prec in precisions:
            cfg = RunConfig(name="sizes", kind=kind, size=size, precision=prec)
            stream, model, opt, sched = setup_training(cfg, dev)
            batches = stream.training()
            times = []
            for i in range(int(steps) + 1):
                b = to_device(next(batches), dev)
                if dev.type == "cuda":
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
                train_step(model, opt, sched, b, prec, dev)
                if dev.type == "cuda":
                    torch.cuda.synchronize()
                if i:                                   # the first step warms up
                    times.append(time.perf_counter() - t0)
            tps = cfg.tokens_per_step
            sec = float(np.median(times))
            rows.append({"size": cfg.size.name, "precision": prec, "kind": kind, "device": dev.type,
                         "threads": torch.get_num_threads(),
                         "parameters": int(sum(p.numel() for n, p in model.named_parameters() if "embed" not in n)),
                         "tokens_per_step": tps, "seconds_per_step": sec, "tokens_per_s": tps / sec})
            del model, opt
    return rows


def record_sizes(rows, path=None) -> Path:
    """Merge rows of :func:`measure_sizes` into the sizing table ``path`` (default
    ``data/runs/sizes.json``): a new row replaces the one of the same size, precision and
    device, the others stay; written atomically.

    Parameters
    ----------
    rows : list of dict
        Rows with at least ``size``, ``precision`` and ``device``.
    path : path-like, optional

    Returns
    -------
    Path
        The file written.

    Raises
    ------
    CorruptFileError
        The existing file is not a JSON list (names it and the command that rebuilds it).
    """
    out = Path(path) if path else runs.RUNS_DIR / "sizes.json"
    prior = []
    if out.exists():
        try:
            prior = json.loads(out.read_text())
        except json.JSONDecodeError as err:
            prior = err
        if not isinstance(prior, list):
            raise CorruptFileError(out, "git checkout -- data/runs/sizes.json, or python -m tanbias.lab sizes",
                                   f"not a JSON list of sizes: {prior}")
    new = {(r["size"], r["precision"], r["device"]) for r in rows}
    keep = [r for r in prior if (r["size"], r["precision"], r["device"]) not in new]
    runs.atomic_write_text(out, json.dumps(keep + list(rows), indent=1) + "\n")
    return out


def gpu_check(size: str = "base", steps: int = 300, precision: str = "bf16", device: str = "cuda",
              out_dir=None, gemm_n: int | None = None) -> dict:
    """Train ``size`` for ``steps`` steps with the probe and report what a GPU does with the lab.

    Returns ``tokens_per_s`` (training, from the run's own timing), ``gemm_tflops``
    (the device's matrix-multiply rate for ``precision``, measured in the same
    process), ``peak_fraction`` (6 x non-embedding parameters FLOP per token),
    ``probe_overhead`` (whole run / run without the time the loop spent on the probe: its
    copy and any wait for the writer thread, which packs and writes beside the steps),
    ``peak_memory_gb`` (CUDA only), ``loss_first``, ``loss_last``, ``seconds``.
    ``scripts/gpu_check.sh`` calls it when torch sees a CUDA GPU.
    """
    dev = resolve_device(device)
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    tmp = Path(out_dir) if out_dir is not None else Path(tempfile.mkdtemp(prefix="gpu-check-"))
    cfg = RunConfig(name=f"gpu-check-{model_size(size).name}", kind="decoder", size=size, steps=int(steps),
                    precision=precision, checkpoint_every=int(steps), eval_batches=2,
                    threads=min(os.cpu_count() or 1, 8) if dev.type == "cpu" else 1)
    try:
        summary = train(cfg, out_dir=tmp, fresh=True, progress=False, device=device)
        n = gemm_n if gemm_n is not None else 4096 if dev.type == "cuda" else 1024
        peak = gemm_peak(int(n), dtype=precision, device=dev)
        _, model, _, _ = setup_training(cfg)
        flop_token = flop_per_token(model)
        losses = [r["loss"] for r in runs.read_jsonl(tmp / "metrics.jsonl") if r.get("type") == "step"]
    finally:
        if out_dir is None:
            shutil.rmtree(tmp, ignore_errors=True)
    tps = summary["tokens_per_s"]
    train_s = summary["train_seconds"]
    return {"size": cfg.size.name, "steps": int(steps), "precision": precision, "device": dev.type,
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
    cfg = RunConfig(name="bench-ddp", kind=kind, size=size, steps=int(steps), eval_batches=1,
                    checkpoint_every=int(steps), probe=ProbeSettings(enabled=False))
    (tmp / "cfg.json").write_text(cfg.to_json())
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
    return {"size": cfg.size.name, "kind": kind, "steps": int(steps), "nproc": int(nproc),
            "tokens_per_s_one": out["one"], "tokens_per_s_ddp": out["ddp"], "speedup": out["ddp"] / out["one"]}


def bench_surgery(size: str = "small", kind: str = "decoder", reps: int = 6, device: str = "cpu") -> dict:
    """The gradient surgery's overhead (chapter 12): a surgical step against a plain one, side by side.

    Two models from the same seed, one with the ``proxy`` surgery of
    :data:`~tanbias.lab.experiments.CAUSAL_SURGERY` (every step: the inputs' moments
    on the forward pass, the eigenvectors, the update's projection), take ``reps``
    rounds of two steps each on the same batches, interleaved; the ratio of the
    medians of the paired rounds is the overhead of a surgical run.

    Returns
    -------
    dict
        ``t_plain``, ``t_surgery`` (seconds per step, medians), ``ratio`` (target <= 1.10),
        ``size``, ``kind``, ``device``.
    """
    dev = resolve_device(device)
    cfg = RunConfig(name="bench", kind=kind, size=model_size(size), probe=ProbeSettings(enabled=False))
    plain = setup_training(cfg, dev)
    cut = setup_training(cfg, dev, plain[0])
    surgery = Surgery(cut[1], SurgerySettings(arm="proxy", **CAUSAL_SURGERY), cfg.steps, cfg.seed)
    batches = plain[0].training()
    rounds = []
    step = 0
    for _ in range(int(reps)):
        pair = [to_device(next(batches), dev) for _ in range(2)]
        row = {}
        for name, (_, model, opt, sched), hooks in (("plain", plain, ()), ("surgery", cut, (surgery,))):
            t0 = time.perf_counter()
            for k, b in enumerate(pair):
                train_step(model, opt, sched, b, cfg.precision, dev, hooks=hooks, step=step + k)
            row[name] = (time.perf_counter() - t0) / 2
        step += 2
        rounds.append(row)
    rounds = rounds[1:] if len(rounds) > 2 else rounds          # the first round warms the caches
    ratios = [r["surgery"] / r["plain"] for r in rounds]
    surgery.remove()
    return {"t_plain": float(np.median([r["plain"] for r in rounds])),
            "t_surgery": float(np.median([r["surgery"] for r in rounds])),
            "ratio": float(np.median(ratios)), "size": size, "kind": kind, "device": dev.type}


# ---------------------------------------------------------------------- the measurement command
#: make bench's targets for the command: its wall time over one plain forward pass of the model over
#: the same tokens, without the alignment test (whole, and after its setup) and with it
BENCH_TARGETS = {"ratio": 3.0, "ratio_after_setup": 3.0, "ratio_alignment": 6.0}


def bench_measure(model: str = "smollm2-135m", n_tokens: int = 16_384, language: str = "en",
                  repeats: int = 1, out=None, alignment: bool = True, **overrides) -> dict:
    """The command's speed against one plain forward pass over the same tokens, in one process.

    Loads ``model`` once, times a plain forward pass of the whole model (its language-model
    head included, no hidden states kept) and of its blocks alone over the same rows as the
    measurement, then :func:`tanbias.lab.analysis.measure.measure_model` into a temporary folder: without the alignment
    test and (with ``alignment``) with it (no report, no progress bars). The wall time is the
    command's whole: loading, the corpus counts, the forward pass, the readings.

    Returns
    -------
    dict
        ``tokens`` (per measurement), ``forward_s`` (the plain pass, best of ``repeats``),
        ``body_forward_s`` (the blocks alone, as the measurement runs them), ``suite_s`` and
        ``suite_alignment_s`` (the command's wall time, loading included), ``ratio`` and
        ``ratio_alignment`` (each over ``forward_s``), ``tokens_per_s`` (the command without
        the alignment test), ``setup_s`` (what does not depend on the text: loading the model and
        counting the corpus under its tokenizer) and ``ratio_after_setup`` (the rest over
        ``forward_s``), and each run's ``seconds`` by stage.
    """
    s = measure_settings(model, n_tokens=n_tokens, languages=[language], **overrides)
    forward, body, tokens = _plain_forward(model, s, language, repeats)
    made = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, align in (("suite", False), ("suite_alignment", True))[:2 if alignment else 1]:
            made[label] = measure_model(model, Path(out or tmp) / label, s, alignment=align, progress=False)
    suite = made["suite"]["seconds"]["total"]
    setup = made["suite"]["seconds"]["load"] + made["suite"]["seconds"]["frequencies"]
    res = {"model": model, "tokens": tokens, "tokens_measured": made["suite"]["n_tokens"],
           "forward_s": forward, "body_forward_s": body, "threads": torch.get_num_threads(),
           "suite_s": suite, "ratio": suite / forward, "tokens_per_s": tokens / suite,
           "setup_s": setup, "ratio_after_setup": (suite - setup) / forward,
           "seconds": {k: v["seconds"] for k, v in made.items()},
           "peak_rss_gb": max(v["peak_rss_gb"] for v in made.values()), "targets": BENCH_TARGETS}
    if alignment:
        res["suite_alignment_s"] = made["suite_alignment"]["seconds"]["total"]
        res["ratio_alignment"] = res["suite_alignment_s"] / forward
        res["probe_tokens"] = made["suite_alignment"]["settings"]["probe_tokens"]
    return res


def _plain_forward(model, s: MeasureSettings, language: str, repeats: int) -> tuple[float, float, int]:
    """The best of ``repeats`` plain forward passes over the measurement's rows: the whole model, its
    blocks alone, and the tokens read."""
    loaded = load_model(model)
    net, tok = loaded["model"], loaded["tokenizer"]
    seq_len = min(s.seq_len, int(getattr(net.config, "max_position_embeddings", None) or s.seq_len))
    ids = pt.language_text(tok, loaded["kind"], language, s, seq_len)["input_ids"]

    def plain(f) -> float:
        best = float("inf")
        for _ in range(max(1, repeats)):
            t0 = time.perf_counter()
            with torch.inference_mode():
                for i in range(0, len(ids), s.batch_size):
                    x = torch.as_tensor(ids[i:i + s.batch_size])
                    f(input_ids=x, attention_mask=torch.ones_like(x))
            best = min(best, time.perf_counter() - t0)
        return best

    times = plain(net), plain(net.base_model)
    del net, loaded
    gc.collect()
    return times[0], times[1], int(ids.size)
