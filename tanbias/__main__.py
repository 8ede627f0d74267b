"""The package's command line: ``python -m tanbias COMMAND ...``.

    python -m tanbias measure MODEL [--text FILE | --language LANG ...] [--tokens N]
                                    [--revisions R ...] [--out DIR] [--device D] [--no-alignment]
                                    [--threads N] [--no-progress]
        chapter 9's measurements on any model (tanbias.lab.analysis.measure), with a report
        that opens offline (tanbias.figures.report)

The lab's own commands (training, the experiments) are ``python -m tanbias.lab``.
"""
from __future__ import annotations

import argparse
import sys


def _measure_arguments(p: argparse.ArgumentParser) -> None:
    from tanbias.lab.analysis.measure import MIN_TOKENS, TEXT_LANGUAGE
    from tanbias.lab.zoo import ZOO

    p.add_argument("model", help=f"a zoo name ({', '.join(ZOO)}), a local folder that transformers loads (a causal "
                                 "LM, a masked LM or an encoder), a folder of checkpoint folders, or a hub id where "
                                 "the network allows")
    p.add_argument("--text", default=None, metavar="FILE",
                   help="a UTF-8 text of your own, documents separated by blank lines (default: the corpus' "
                        "held-out documents)")
    p.add_argument("--language", nargs="+", default=None, metavar="LANG",
                   help="the corpus languages to read (default: a zoo model's own, else en); with --text, the "
                        f"text's language, whose corpus counts rank its types by frequency (default "
                        f"{TEXT_LANGUAGE})")
    p.add_argument("--tokens", type=int, default=None, metavar="N",
                   help=f"tokens per language, at least {MIN_TOKENS}: bounds time and memory (default 16384, "
                        "chapter 9's)")
    p.add_argument("--revisions", nargs="+", default=None, metavar="R",
                   help="checkpoints of a hub id or of a folder of checkpoint folders, in training order "
                        "(default: every folder's); a series gives trajectories over training")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="the folder to write (default measure-<model name>); replaced only once the new "
                        "measurement is complete")
    p.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N, mps or auto (default cpu)")
    p.add_argument("--no-alignment", action="store_true", help="skip the post-hoc alignment test")
    p.add_argument("--threads", type=int, default=None, metavar="N",
                   help="CPU threads of torch (default: torch's own; on a machine shared with other jobs, "
                        "1 or 2 are often faster)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def _measure(args) -> int:
    from tanbias.figures.report import report_html
    from tanbias.lab.analysis.measure import measure_model

    if args.threads is not None:
        import torch

        from tanbias._checks import check_int

        torch.set_num_threads(check_int("threads", args.threads, lo=1, hint="Pass e.g. --threads 2."))

    man = measure_model(args.model, args.out, text=args.text, languages=args.language, n_tokens=args.tokens,
                        revisions=args.revisions, alignment=not args.no_alignment, device=args.device,
                        progress=not args.no_progress, report=report_html)
    sec = man["seconds"]
    print(f"{man['model']}: {man['n_tokens']} tokens in {sec['total']:.0f} s (forward {sec['forward']:.0f} s, "
          f"{man['tokens_per_s']:.0f} tokens/s), peak memory {man['peak_rss_gb']:.1f} GB")
    print(f"tables and manifest in {man['out']}; the report: {man['out']}/report.html")
    for note in man["notes"]:
        print(f"note: {note}")
    return 0


#: The subcommands: name -> (help, add its arguments, run it).
COMMANDS = {
    "measure": ("chapter 9's measurements on any model, with a report", _measure_arguments, _measure),
}


def main(argv=None) -> int:
    """Run a subcommand; 2 with a one-line error when the input is wrong."""
    parser = argparse.ArgumentParser(prog="python -m tanbias", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (help_, add, _) in COMMANDS.items():
        add(sub.add_parser(name, help=help_, description=help_))
    args = parser.parse_args(argv)

    from tanbias.errors import CorruptFileError, ParameterError
    from tanbias.lab.checkpoints import CheckpointUnavailable
    from tanbias.lab.zoo import ZooUnavailable

    try:
        return COMMANDS[args.command][2](args)
    except (ParameterError, CorruptFileError, CheckpointUnavailable, ZooUnavailable) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
