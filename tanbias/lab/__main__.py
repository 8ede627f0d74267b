"""Command line of the training lab (chapters 7, 8).

    python -m tanbias.lab train CONFIG [--fresh] [--out DIR]   train or resume a run
    python -m tanbias.lab probe RUN                            recompute tables, views, radii from work/
    python -m tanbias.lab reproduce RUN [--steps N]            re-run a committed run and compare
    python -m tanbias.lab bench [--size small]                 tokens/s and probe overhead (JSON)
    python -m tanbias.lab sizes [--sizes small base large]     seconds per step of each size (data/runs/sizes.json)
    python -m tanbias.lab gpucheck [--size base] [--steps 300] train on the GPU, print tokens/s, peak share, memory
    python -m tanbias.lab sweep [--jobs 2] [--fresh]            train the 2x2 sweep's configs in parallel (ch 8)
    python -m tanbias.lab dose [--jobs 2] [--commit] [--seeds 0 1 2]
                                                               the dose experiment (ch 10), resumable
    python -m tanbias.lab alias [--jobs 2] [--commit] [--seeds 0 1]
                                                               the aliasing knob (ch 10), resumable
    python -m tanbias.lab causal [--jobs 2] [--commit] [--seeds 0 1]
                                                               the causal test (ch 11), resumable
    python -m tanbias.lab rivals [--jobs 2] [--commit] [--seeds 0 1]
                                                               the rival accounts' runs, resumable
    python -m tanbias.lab mechanism RUN                        per-token radii t on common held-out text (ch 8)
    python -m tanbias.lab checkpoints MODEL [--revisions R ...] [--kind K] [--tokens N] --out DIR
                                                               probe released/saved checkpoints post hoc
    python -m tanbias.lab pretrained MODEL|all [--tokens N] [--fresh]
                                                               measure a zoo model on held-out text (ch 9)

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


DEVICE_HELP = "auto (a CUDA GPU when there is one), cpu or cuda"
PRECISION_HELP = ("fp32 or bf16 (bfloat16 autocast, float32 weights and optimizer state); overrides the "
                  "config's precision")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tanbias.lab", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("train", help="train or resume a run from a JSON config")
    p.add_argument("config")
    p.add_argument("--fresh", action="store_true", help="discard the folder's log/checkpoint first")
    p.add_argument("--out", default=None, help="run folder (default data/runs/<name>)")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--device", default="auto", help=DEVICE_HELP)
    p.add_argument("--precision", default=None, help=PRECISION_HELP)
    p = sub.add_parser("probe", help="recompute the tables, views and radii from the run's work/ folder")
    p.add_argument("run")
    p = sub.add_parser("reproduce", help="re-run a committed run and compare its metrics")
    p.add_argument("run")
    p.add_argument("--steps", type=int, default=None, help="only the first N steps (quicker)")
    p = sub.add_parser("bench", help="training tokens/s and probe overhead")
    p.add_argument("--size", default="small")
    p.add_argument("--kind", default="decoder")
    p.add_argument("--reps", type=int, default=4)
    p = sub.add_parser("sizes", help="seconds per training step of each model size (data/runs/sizes.json)")
    p.add_argument("--sizes", nargs="+", default=["small", "base", "large"])
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--device", default="auto", help=DEVICE_HELP)
    p.add_argument("--out", default=None, help="JSON file (default data/runs/sizes.json)")
    p = sub.add_parser("gpucheck", help="train a size on the GPU and print throughput, peak fraction, memory")
    p.add_argument("--size", default="base")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--precision", default="bf16", help=PRECISION_HELP)
    p.add_argument("--device", default="cuda", help=DEVICE_HELP)
    p = sub.add_parser("sweep", help="train every sweep config (kind-regime-sSEED) in parallel")
    p.add_argument("--jobs", type=int, default=2, help="parallel runs (one core each)")
    p.add_argument("--fresh", action="store_true", help="retrain runs that are already complete")
    p.add_argument("--device", default="auto", help=DEVICE_HELP)
    for name, what, seeds in (("dose", "the dose experiment's runs (chapter 10)", "all of DOSE_SEEDS"),
                              ("causal", "the causal test's runs (chapter 11)", "CAUSAL_SEEDS of each architecture"),
                              ("alias", "the aliasing knob's runs (chapter 10, issue 21)", "all of ALIAS_SEEDS"),
                              ("rivals", "the rival accounts' runs (the rivals chapter)", "RIVALS_SEEDS of each cell")):
        # the three resumable experiment queues take the same options
        p = sub.add_parser(name, help=f"train {what}; skips complete ones")
        p.add_argument("--jobs", type=int, default=2, help="parallel runs (one core each)")
        p.add_argument("--commit", action="store_true", help="git-commit each run as soon as it finishes")
        p.add_argument("--seeds", type=int, nargs="+", default=None, help=f"default: {seeds}")
        p.add_argument("--fresh", action="store_true", help="retrain runs that are already complete")
        p.add_argument("--device", default="auto", help=DEVICE_HELP)
    p = sub.add_parser("mechanism", help="measure every token's radius t on held-out text (tokens.csv)")
    p.add_argument("run")
    p.add_argument("--batches", type=int, default=8)
    p = sub.add_parser("checkpoints", help="probe released or saved checkpoints post hoc")
    p.add_argument("model", help="hub id (e.g. EleutherAI/pythia-160m), local folder or zoo "
                                 "decoder (smollm2-135m, gemma3-270m)")
    p.add_argument("--revisions", nargs="+", default=None,
                   help="e.g. step0 step1000 (default: the paper's for a reference model, else main)")
    p.add_argument("--kind", choices=("encoder", "decoder"), default=None,
                   help="default: from the checkpoint's architecture")
    p.add_argument("--tokens", type=int, default=4096, help="evaluation tokens per revision")
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="folder for alignment.csv, radius.csv, radius_corr.csv")
    p.add_argument("--no-progress", action="store_true")
    p = sub.add_parser("pretrained", help="measure zoo models on held-out text (data/pretrained/)")
    from tanbias.lab.zoo import ZOO
    p.add_argument("model", help=", ".join(ZOO) + ", or all")
    p.add_argument("--tokens", type=int, default=None,
                   help="held-out tokens per language (default: each model's committed setting, "
                        "tanbias.lab.analysis.pretrained.DEFAULTS and MODEL_SETTINGS)")
    p.add_argument("--out", default=None, help="root folder (default data/pretrained)")
    p.add_argument("--fresh", action="store_true", help="measure again models already measured")
    p.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)

    from tanbias.errors import CorruptFileError, ParameterError
    unavailable: tuple = ()
    if args.command in ("checkpoints", "pretrained"):
        from tanbias.lab.checkpoints import CheckpointUnavailable
        from tanbias.lab.zoo import ZooUnavailable
        unavailable = (CheckpointUnavailable, ZooUnavailable)
    try:
        if args.command == "train":
            from tanbias.lab.pipeline import train_and_analyse
            from tanbias.lab.config import load_config
            config = load_config(args.config)
            if args.precision is not None:
                config = config.replace(precision=args.precision)
            summary = train_and_analyse(config, out_dir=args.out, fresh=args.fresh,
                                        progress=not args.no_progress, device=args.device)
            if summary.get("rank", 0) == 0:
                print(json.dumps({k: summary[k] for k in ("run", "train_seconds", "tokens_per_s", "eval",
                                                          "learns", "processes")}, indent=1))
        elif args.command == "probe":
            from tanbias.lab.pipeline import after_run
            res = after_run(args.run)
            print({**{k: len(v) for k, v in res["tables"].items()}, "tokens.csv": len(res["tokens"])})
        elif args.command == "reproduce":
            from tanbias.lab.pipeline import reproduce
            res = reproduce(args.run, steps=args.steps)
            print(json.dumps(res, indent=1, default=str))
            if not res["ok"]:
                print("REPRODUCE FAILED: " + "; ".join(res["failures"]), file=sys.stderr)
                return 1
            print(f"reproduced within tolerance {res['tolerance']}")
        elif args.command == "bench":
            from tanbias.lab.bench import bench_lab
            print(json.dumps(bench_lab(args.size, args.kind, args.reps), indent=1))
        elif args.command == "sizes":
            from pathlib import Path

            from tanbias.lab import runs
            from tanbias.lab.bench import measure_sizes
            rows = measure_sizes(tuple(args.sizes), steps=args.steps, device=args.device)
            out = Path(args.out) if args.out else runs.RUNS_DIR / "sizes.json"
            prior = json.loads(out.read_text()) if out.exists() else []
            keep = [r for r in prior if (r["size"], r["precision"], r["device"]) not in
                    {(x["size"], x["precision"], x["device"]) for x in rows}]
            runs.atomic_write_text(out, json.dumps(keep + rows, indent=1) + "\n")
            for r in rows:
                print(f"{r['size']:>6} {r['precision']}: {r['parameters'] / 1e6:6.1f} M parameters, "
                      f"{r['seconds_per_step']:7.2f} s/step, {r['tokens_per_s']:8.0f} tokens/s ({r['device']})")
        elif args.command == "gpucheck":
            from tanbias.lab.bench import gpu_check
            r = gpu_check(args.size, args.steps, args.precision, args.device)
            print(json.dumps(r, indent=1))
            mem = "n/a" if r["peak_memory_gb"] is None else f"{r['peak_memory_gb']:.1f} GB"
            print(f"{r['device_name']}: {r['tokens_per_s']:.0f} tokens/s = {100 * r['peak_fraction']:.1f} % of "
                  f"{r['gemm_tflops']:.1f} TFLOP/s ({r['precision']} matmul, same process); probe overhead "
                  f"{r['probe_overhead']:.3f}x; peak memory {mem}; loss {r['loss_first']:.2f} -> "
                  f"{r['loss_last']:.2f} in {r['seconds']:.0f} s")
        elif args.command == "sweep":
            from tanbias.lab.pipeline import run_sweep
            res = run_sweep(jobs=args.jobs, fresh=args.fresh, device=args.device)
            print(json.dumps(res, indent=1))
            print(f"sweep wall time: {res['wall_seconds'] / 60:.1f} min with {res['jobs']} jobs")
            if any(r["exit"] != 0 for r in res["runs"].values()):
                return 1
        elif args.command in ("dose", "causal", "alias", "rivals"):
            from tanbias.lab.experiments import DOSE_SEEDS
            from tanbias.lab.pipeline import run_alias, run_causal, run_dose, run_rivals
            run, default = {"dose": (run_dose, DOSE_SEEDS), "causal": (run_causal, None),
                            "alias": (run_alias, None), "rivals": (run_rivals, None)}[args.command]
            res = run(jobs=args.jobs, fresh=args.fresh, commit=args.commit,
                      seeds=tuple(args.seeds) if args.seeds else default, device=args.device)
            print(json.dumps(res, indent=1))
            print(f"{args.command} sitting: {len(res['runs'])} runs in {res['wall_seconds'] / 60:.1f} min "
                  f"with {res['jobs']} jobs")
            if any(r["exit"] != 0 for r in res["runs"].values()):
                return 1
        elif args.command == "mechanism":
            from tanbias.lab.analysis.radii import measure_radii
            df = measure_radii(args.run, n_batches=args.batches)
            print(f"tokens.csv: {len(df)} rows ({df['token_id'].nunique()} token types, "
                  f"layers {sorted(df['layer'].unique())})")
        elif args.command == "checkpoints":
            _checkpoints(args)
        elif args.command == "pretrained":
            from tanbias.lab.analysis.pretrained import measure_all
            settings = {} if args.tokens is None else {"n_tokens": args.tokens}
            for name, man in measure_all(args.model, root=args.out, fresh=args.fresh,
                                         progress=not args.no_progress, **settings).items():
                sec = man["seconds"]
                print(f"{name}: {man['n_tokens']} tokens, {man['tokens_per_s']:.0f} tokens/s "
                      f"({man['gemm_fraction']:.1%} of the measured matmul peak), "
                      f"{sec['total']:.0f} s in all{' (already measured)' if man.get('skipped') else ''}")
    except (ParameterError, CorruptFileError, *unavailable) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


def _checkpoints(args) -> None:
    from pathlib import Path

    from tanbias.lab import runs
    from tanbias.lab.analysis.posthoc import probe_checkpoints
    from tanbias.lab.checkpoints import REFERENCE_MODELS

    revisions = args.revisions
    if revisions is None:
        revisions = REFERENCE_MODELS.get(args.model, {}).get("revisions", [None])
    tables = probe_checkpoints(args.model, revisions, kind=args.kind, n_tokens=args.tokens,
                               seq_len=args.seq_len, seed=args.seed, progress=not args.no_progress)
    if tables is None:                 # a rank other than 0 under torchrun: rank 0 writes the tables
        return
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


if __name__ == "__main__":
    sys.exit(main())
