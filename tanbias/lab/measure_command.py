"""``tanbias measure MODEL ...`` (``python -m tanbias measure``): chapter 9's measurements on any model.

:func:`main` parses the command's arguments (:func:`parser`), runs
:func:`tanbias.lab.analysis.measure.measure_model`, says where it wrote and how long it took, and
prints a bad input's error in one line (exit status 2; nothing is written then). The report page
is drawn by the presentation layer: the package face (:mod:`tanbias.__main__`) passes
:func:`tanbias.figures.report.report_html` as ``report``; this module, in the lab, draws nothing.
"""
from __future__ import annotations

import argparse
import shlex
import sys

from tanbias._checks import check_int
from tanbias.errors import CorruptFileError, ParameterError
from tanbias.lab.analysis.measure import measure_model
from tanbias.lab.analysis.measure_folder import COMMAND
from tanbias.lab.analysis.measure_inputs import MIN_TOKENS, TEXT_LANGUAGE, measure_settings
from tanbias.lab.analysis.pretrained import MeasureSettings
from tanbias.lab.checkpoints import CheckpointUnavailable
from tanbias.lab.devices import DEVICE_HELP
from tanbias.lab.loading import DTYPES
from tanbias.lab.zoo import ZOO, ZooUnavailable

__all__ = ["parser", "settings_of", "run", "main"]


def parser() -> argparse.ArgumentParser:
    """The command's arguments (``tanbias measure --help``).

    Example
    -------
    >>> args = parser().parse_args(["smollm2-135m", "--language", "en", "--tokens", "2048", "--no-alignment"])
    >>> args.model, args.language, args.tokens, args.no_alignment, args.device
    ('smollm2-135m', ['en'], 2048, True, 'cpu')
    """
    p = argparse.ArgumentParser(
        prog="tanbias measure", description="Run chapter 9's measurements on MODEL; write its tables, a manifest "
                                            "and a report that opens offline.")
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
                   help=f"tokens per language, at least {MIN_TOKENS}: bounds time and memory (default "
                        f"{MeasureSettings.n_tokens}, chapter 9's)")
    p.add_argument("--revisions", nargs="+", default=None, metavar="R",
                   help="checkpoints of a hub id or of a folder of checkpoint folders, in training order "
                        "(default: every folder's); a series gives trajectories over training")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="the folder to write (default measure-<model name>); replaced only once the new "
                        "measurement is complete")
    p.add_argument("--device", default="cpu", help=f"{DEVICE_HELP} (default cpu)")
    p.add_argument("--dtype", default="float32", metavar="TYPE",
                   help=f"the parameters' type in the forward passes, one of {', '.join(DTYPES)} where the device "
                        "computes in it (default float32); the readings are computed in float64 either way")
    p.add_argument("--no-alignment", action="store_true", help="skip the checkpoint alignment test")
    p.add_argument("--no-report", action="store_true", help="write the tables and the manifest only, no report.html")
    p.add_argument("--threads", type=int, default=None, metavar="N",
                   help="CPU threads of torch (default: torch's own; on a machine shared with other jobs, "
                        "1 or 2 are often faster)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    return p


def _overrides(args: argparse.Namespace) -> dict:
    """The settings the options set (the rest are chapter 9's, or a zoo model's own)."""
    return {k: v for k, v in (("languages", args.language), ("n_tokens", args.tokens)) if v is not None}


def settings_of(command_line: str) -> MeasureSettings:
    """The settings a command line measures with: ``python -m tanbias measure MODEL [options]``,
    as a measurement's manifest records it (``command_line``), or its arguments alone.

    Example
    -------
    >>> s = settings_of("python -m tanbias measure smollm2-135m --language en --tokens 2048")
    >>> s.languages, s.n_tokens, s.probe_tokens
    (('en',), 2048, 256)
    """
    argv = shlex.split(command_line)
    if argv[:len(COMMAND.split())] == COMMAND.split():
        argv = argv[len(COMMAND.split()):]
    args = parser().parse_args(argv)
    return measure_settings(args.model, text=args.text is not None, **_overrides(args))


def run(args: argparse.Namespace, report=None, argv=None) -> int:
    """Measure as ``args`` say (:func:`parser`), with ``report(tables) -> str`` as the report page,
    and say where the folder is; ``argv``, the command line, goes into the manifest."""
    if args.threads is not None:
        import torch      # here: --help and a bad argument answer without loading it

        torch.set_num_threads(check_int("threads", args.threads, lo=1, hint="Pass e.g. --threads 2."))
    man = measure_model(args.model, args.out, text=args.text, revisions=args.revisions,
                        alignment=not args.no_alignment, device=args.device, dtype=args.dtype,
                        progress=not args.no_progress,
                        report=None if args.no_report else report, argv=argv, **_overrides(args))
    sec = man["seconds"]
    print(f"{man['model']}: {man['n_tokens']} tokens in {sec['total']:.0f} s (forward {sec['forward']:.0f} s, "
          f"{man['tokens_per_s']:.0f} tokens/s), peak memory {man['peak_rss_gb']:.1f} GB")
    print(f"tables and manifest in {man['out']}" + (f"; the report: {man['out']}/report.html" if "report" in man
                                                    else ""))
    for note in man["notes"]:
        print(f"note: {note}")
    return 0


def main(argv=None, report=None) -> int:
    """``tanbias measure MODEL ...``: measure, write, say where.

    Parameters
    ----------
    argv : list of str, optional
        The command's own arguments (after ``measure``; default: the process's).
    report : callable, optional
        ``report(tables) -> str``, the page written as ``report.html`` (the package face passes
        :func:`tanbias.figures.report.report_html`); None writes the tables and the manifest only.

    Returns
    -------
    int
        0, or 2 with a one-line error when the input is wrong (nothing is written then).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(argv)
    try:
        return run(args, report, argv=[*COMMAND.split(), *argv])
    except (ParameterError, CorruptFileError, CheckpointUnavailable, ZooUnavailable) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
