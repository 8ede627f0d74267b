"""Command line of the training lab (one command per experiment of the registry).

    python -m tanbias.lab train CONFIG [--fresh] [--out DIR]   train or resume a run
    python -m tanbias.lab probe RUN                            recompute tables, views, radii from work/
    python -m tanbias.lab reproduce RUN [--steps N]            re-run a committed run and compare
    python -m tanbias.lab bench [--size small]                 tokens/s and probe overhead (JSON)
    python -m tanbias.lab sizes [--sizes small base large]     seconds per step of each size (data/runs/sizes.json)
    python -m tanbias.lab gpucheck [--size base] [--steps 300] train on the GPU, print tokens/s, peak share, memory
    python -m tanbias.lab EXPERIMENT [--jobs 2] [--commit] [--seeds 0 1]
                                                               train an experiment's runs, resumable (below)
    python -m tanbias.lab mechanism RUN                        per-token radii t on common held-out text (ch 8)
    python -m tanbias.lab checkpoints MODEL [--revisions R ...] [--kind K] [--tokens N] --out DIR
                                                               probe released/saved checkpoints
    python -m tanbias.lab pretrained MODEL|all [--tokens N] [--fresh]
                                                               measure a zoo model on held-out text (ch 9)

``EXPERIMENT`` is one of :data:`tanbias.lab.experiments.EXPERIMENTS` (listed below): its runs
are trained two at a time, complete ones skipped, an interrupted one resumed from its checkpoint,
each committed to git as it finishes with ``--commit``.
``RUN`` is a run name under ``data/runs`` (e.g. ``decoder-natural-s0``) or a folder.
``MODEL`` is a hub id (``EleutherAI/pythia-160m``), a local folder or a zoo decoder
(``smollm2-135m``, ``gemma3-270m``: ``make zoo``); ``--revisions``
defaults to the paper's revisions for its reference models, else the default branch.
``reproduce`` exits with status 1 when the metrics differ beyond the stated tolerance.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tanbias.errors import CorruptFileError, ParameterError
from tanbias.lab import runs
from tanbias.lab.checkpoints import REFERENCE_MODELS, CheckpointUnavailable
from tanbias.lab.config import load_config
from tanbias.lab.devices import DEVICE_HELP
from tanbias.lab.experiments import EXPERIMENTS
from tanbias.lab.zoo import ZOO, ZooUnavailable

PRECISION_HELP = ("fp32 or bf16 (bfloat16 autocast, float32 weights and optimizer state); overrides the "
                  "config's precision")

# One function per command: ``args`` is the parsed command line; each returns the exit status.
# The modules that load torch or scipy.stats are imported inside them, so that ``--help`` and a
# command that does not need them start at once.


def train(args) -> int:
    """Train or resume a run from its JSON config, then analyse it; print its summary."""
    from tanbias.lab.pipeline import train_and_analyse

    config = load_config(args.config)
    if args.precision is not None:
        config = config.replace(precision=args.precision)
    summary = train_and_analyse(config, out_dir=args.out, fresh=args.fresh, progress=not args.no_progress,
                                device=args.device)
    if summary.get("rank", 0) == 0:
        print(json.dumps({k: summary[k] for k in ("run", "train_seconds", "tokens_per_s", "eval", "learns",
                                                  "processes")}, indent=1))
    return 0


def probe(args) -> int:
    """Recompute a run's tables, views and radii from its ``work/`` folder."""
    from tanbias.lab.pipeline import after_run

    res = after_run(args.run)
    print({**{k: len(v) for k, v in res["tables"].items()}, "tokens.csv": len(res["tokens"])})
    return 0


def reproduce(args) -> int:
    """Re-run a committed run and compare; status 1 when it differs beyond the tolerance."""
    from tanbias.lab.pipeline import reproduce as compare

    res = compare(args.run, steps=args.steps)
    print(json.dumps(res, indent=1, default=str))
    if not res["ok"]:
        print("REPRODUCE FAILED: " + "; ".join(res["failures"]), file=sys.stderr)
        return 1
    print(f"reproduced within tolerance {res['tolerance']}")
    return 0


def bench(args) -> int:
    """Training tokens/s and the probe's overhead, as JSON."""
    from tanbias.lab.bench import bench_lab

    print(json.dumps(bench_lab(args.size, args.kind, args.reps), indent=1))
    return 0


def sizes(args) -> int:
    """Seconds per training step of each size, merged into ``data/runs/sizes.json``."""
    from tanbias.lab.bench import measure_sizes, record_sizes

    rows = measure_sizes(tuple(args.sizes), steps=args.steps, device=args.device)
    record_sizes(rows, args.out)
    for r in rows:
        print(f"{r['size']:>6} {r['precision']}: {r['parameters'] / 1e6:6.1f} M parameters, "
              f"{r['seconds_per_step']:7.2f} s/step, {r['tokens_per_s']:8.0f} tokens/s ({r['device']})")
    return 0


def gpucheck(args) -> int:
    """Train a size on the GPU; print its throughput, its share of the matmul peak and its memory."""
    from tanbias.lab.bench import gpu_check

    r = gpu_check(args.size, args.steps, args.precision, args.device)
    print(json.dumps(r, indent=1))
    mem = "n/a" if r["peak_memory_gb"] is None else f"{r['peak_memory_gb']:.1f} GB"
    print(f"{r['device_name']}: {r['tokens_per_s']:.0f} tokens/s = {100 * r['peak_fraction']:.1f} % of "
          f"{r['gemm_tflops']:.1f} TFLOP/s ({r['precision']} matmul, same process); probe overhead "
          f"{r['probe_overhead']:.3f}x; peak memory {mem}; loss {r['loss_first']:.2f} -> "
          f"{r['loss_last']:.2f} in {r['seconds']:.0f} s")
    return 0


def experiment(args) -> int:
    """Train the runs of the experiment ``args.command`` (:func:`tanbias.lab.pipeline.run_experiment`);
    status 1 when a run failed."""
    from tanbias.lab.pipeline import run_experiment

    res = run_experiment(EXPERIMENTS[args.command], jobs=args.jobs, fresh=args.fresh, commit=args.commit,
                         seeds=tuple(args.seeds) if args.seeds else None, device=args.device)
    print(json.dumps(res, indent=1))
    print(f"{args.command} sitting: {len(res['runs'])} runs in {res['wall_seconds'] / 60:.1f} min "
          f"with {res['jobs']} jobs")
    return 1 if any(r["exit"] != 0 for r in res["runs"].values()) else 0


def mechanism(args) -> int:
    """Every token's radius t on the common held-out text (``tokens.csv``)."""
    from tanbias.lab.analysis.radii import measure_radii

    df = measure_radii(args.run, n_batches=args.batches)
    print(f"tokens.csv: {len(df)} rows ({df['token_id'].nunique()} token types, "
          f"layers {sorted(df['layer'].unique())})")
    return 0


def checkpoints(args) -> int:
    """Probe released or saved checkpoints; write their tables to ``args.out``."""
    from tanbias.lab.analysis.checkpoint_probe import probe_checkpoints

    revisions = args.revisions
    if revisions is None:
        revisions = REFERENCE_MODELS.get(args.model, {}).get("revisions", [None])
    tables = probe_checkpoints(args.model, revisions, kind=args.kind, n_tokens=args.tokens,
                               seq_len=args.seq_len, seed=args.seed, progress=not args.no_progress)
    if tables is None:                 # a rank other than 0 under torchrun: rank 0 writes the tables
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, df in tables.items():
        runs.atomic_write_text(out / f"{name}.csv", df.to_csv(index=False, float_format="%.6g"))
    a = tables["alignment"]
    a = a[(a["bucket"] == "all") & a["proxy"].isin(["frozen", "refit"])]
    summary = (a.groupby(["step", "revision", "proxy"])["enrichment"].median()
               .unstack("proxy").reset_index())
    print(f"{args.model} ({a['kind'].iloc[0] if len(a) else '?'}): median enrichment over layers, "
          "all tokens (1 = no alignment)")
    print(summary.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    print(f"wrote {', '.join(f'{k}.csv ({len(v)} rows)' for k, v in tables.items())} to {out}")
    return 0


def pretrained(args) -> int:
    """Measure zoo models on held-out text (``data/pretrained/``)."""
    from tanbias.lab.analysis.pretrained import measure_all

    settings = {} if args.tokens is None else {"n_tokens": args.tokens}
    for name, man in measure_all(args.model, root=args.out, fresh=args.fresh, progress=not args.no_progress,
                                 **settings).items():
        sec = man["seconds"]
        print(f"{name}: {man['n_tokens']} tokens, {man['tokens_per_s']:.0f} tokens/s "
              f"({man['gemm_fraction']:.1%} of the measured matmul peak), "
              f"{sec['total']:.0f} s in all{' (already measured)' if man.get('skipped') else ''}")
    return 0


def parser() -> argparse.ArgumentParser:
    """The command line: one subcommand per function above, one per experiment of the registry."""
    listing = "\n".join(f"    {d.name:<8} {d.where}, seeds {d.describe_seeds()}" for d in EXPERIMENTS.values())
    p = argparse.ArgumentParser(prog="python -m tanbias.lab", description=f"{__doc__}\nEXPERIMENT:\n{listing}\n",
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)

    def command(function, help: str) -> argparse.ArgumentParser:
        c = sub.add_parser(function.__name__, help=help)
        c.set_defaults(handler=function)
        return c

    c = command(train, "train or resume a run from a JSON config")
    c.add_argument("config")
    c.add_argument("--fresh", action="store_true", help="discard the folder's log/checkpoint first")
    c.add_argument("--out", default=None, help="run folder (default data/runs/<name>)")
    c.add_argument("--no-progress", action="store_true")
    c.add_argument("--device", default="auto", help=DEVICE_HELP)
    c.add_argument("--precision", default=None, help=PRECISION_HELP)
    command(probe, "recompute the tables, views and radii from the run's work/ folder").add_argument("run")
    c = command(reproduce, "re-run a committed run and compare its metrics")
    c.add_argument("run")
    c.add_argument("--steps", type=int, default=None, help="only the first N steps (quicker)")
    c = command(bench, "training tokens/s and probe overhead")
    c.add_argument("--size", default="small")
    c.add_argument("--kind", default="decoder")
    c.add_argument("--reps", type=int, default=4)
    c = command(sizes, "seconds per training step of each model size (data/runs/sizes.json)")
    c.add_argument("--sizes", nargs="+", default=["small", "base", "large"])
    c.add_argument("--steps", type=int, default=2)
    c.add_argument("--device", default="auto", help=DEVICE_HELP)
    c.add_argument("--out", default=None, help="JSON file (default data/runs/sizes.json)")
    c = command(gpucheck, "train a size on the GPU and print throughput, peak fraction, memory")
    c.add_argument("--size", default="base")
    c.add_argument("--steps", type=int, default=300)
    c.add_argument("--precision", default="bf16", help=PRECISION_HELP)
    c.add_argument("--device", default="cuda", help=DEVICE_HELP)
    for design in EXPERIMENTS.values():            # every experiment's queue takes the same options
        c = sub.add_parser(design.name, help=f"train the runs of {design.where}; skips complete ones, "
                                             "resumes an interrupted one")
        c.set_defaults(handler=experiment)
        c.add_argument("--jobs", type=int, default=2, help="parallel runs (one core each)")
        c.add_argument("--commit", action="store_true", help="git-commit each run as soon as it finishes")
        c.add_argument("--seeds", type=int, nargs="+", default=None,
                       help=f"one list for both architectures (default: the design's, {design.describe_seeds()})")
        c.add_argument("--fresh", action="store_true", help="retrain runs that are already complete")
        c.add_argument("--device", default="auto", help=DEVICE_HELP)
    c = command(mechanism, "measure every token's radius t on held-out text (tokens.csv)")
    c.add_argument("run")
    c.add_argument("--batches", type=int, default=8)
    c = command(checkpoints, "probe released or saved checkpoints")
    c.add_argument("model", help="hub id (e.g. EleutherAI/pythia-160m), local folder or zoo "
                                 "decoder (smollm2-135m, gemma3-270m)")
    c.add_argument("--revisions", nargs="+", default=None,
                   help="e.g. step0 step1000 (default: the paper's for a reference model, else main)")
    c.add_argument("--kind", choices=("encoder", "decoder"), default=None,
                   help="default: from the checkpoint's architecture")
    c.add_argument("--tokens", type=int, default=4096, help="evaluation tokens per revision")
    c.add_argument("--seq-len", type=int, default=128)
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--out", required=True, help="folder for alignment.csv, radius.csv, radius_corr.csv")
    c.add_argument("--no-progress", action="store_true")
    c = command(pretrained, "measure zoo models on held-out text (data/pretrained/)")
    c.add_argument("model", help=", ".join(ZOO) + ", or all")
    c.add_argument("--tokens", type=int, default=None,
                   help="held-out tokens per language (default: each model's committed setting, "
                        "tanbias.lab.analysis.pretrained.MeasureSettings and MODEL_SETTINGS)")
    c.add_argument("--out", default=None, help="root folder (default data/pretrained)")
    c.add_argument("--fresh", action="store_true", help="measure again models already measured")
    c.add_argument("--no-progress", action="store_true")
    return p


def main(argv=None) -> int:
    """Parse ``argv`` and run its command; a bad argument or a corrupt file prints one line and
    returns 2 (a model or checkpoint that cannot be had, for ``checkpoints`` and ``pretrained``)."""
    args = parser().parse_args(argv)
    unavailable: tuple = ()
    if args.command in ("checkpoints", "pretrained"):
        unavailable = (CheckpointUnavailable, ZooUnavailable)
    try:
        return args.handler(args)
    except (ParameterError, CorruptFileError, *unavailable) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
