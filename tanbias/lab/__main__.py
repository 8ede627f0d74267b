"""Command line of the training lab (chapters 7, 8).

    python -m tanbias.lab train CONFIG [--fresh] [--out DIR]   train or resume a run
    python -m tanbias.lab probe RUN                            recompute the tables from the captures
    python -m tanbias.lab reproduce RUN [--steps N]            re-run a committed run and compare
    python -m tanbias.lab bench [--size small]                 tokens/s and probe overhead (JSON)

``RUN`` is a run name under ``data/runs`` (e.g. ``decoder-natural-s0``) or a folder.
``reproduce`` exits with status 1 when the metrics differ beyond the stated tolerance.
"""
from __future__ import annotations

import argparse
import json
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tanbias.lab", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("train", help="train or resume a run from a JSON config")
    p.add_argument("config")
    p.add_argument("--fresh", action="store_true", help="discard the folder's log/checkpoint first")
    p.add_argument("--out", default=None, help="run folder (default data/runs/<name>)")
    p.add_argument("--no-progress", action="store_true")
    p = sub.add_parser("probe", help="recompute alignment/radius tables from the stored captures")
    p.add_argument("run")
    p = sub.add_parser("reproduce", help="re-run a committed run and compare its metrics")
    p.add_argument("run")
    p.add_argument("--steps", type=int, default=None, help="only the first N steps (quicker)")
    p = sub.add_parser("bench", help="training tokens/s and probe overhead")
    p.add_argument("--size", default="small")
    p.add_argument("--kind", default="decoder")
    p.add_argument("--reps", type=int, default=4)
    args = parser.parse_args(argv)

    from tanbias.errors import CorruptFileError, ParameterError
    try:
        if args.command == "train":
            from tanbias.lab.train import train
            summary = train(args.config, out_dir=args.out, fresh=args.fresh,
                            progress=not args.no_progress)
            print(json.dumps({k: summary[k] for k in ("run", "train_seconds", "tokens_per_s", "eval",
                                                      "learns")}, indent=1))
        elif args.command == "probe":
            from tanbias.lab import runs
            from tanbias.lab.probe import analyse_run
            tables = analyse_run(args.run)
            from tanbias.lab.views import compute_views
            compute_views(args.run)
            cfg = json.loads((runs.run_dir(args.run) / "config.json").read_text())
            runs.write_manifest(runs.run_dir(args.run), cfg)
            print({k: len(v) for k, v in tables.items()})
        elif args.command == "reproduce":
            from tanbias.lab.train import reproduce
            res = reproduce(args.run, steps=args.steps)
            print(json.dumps(res, indent=1, default=str))
            if not res["ok"]:
                print("REPRODUCE FAILED: " + "; ".join(res["failures"]), file=sys.stderr)
                return 1
            print(f"reproduced within tolerance {res['tolerance']}")
        elif args.command == "bench":
            from tanbias.lab.train import bench_lab
            print(json.dumps(bench_lab(args.size, args.kind, args.reps), indent=1))
    except (ParameterError, CorruptFileError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
