"""The ``tanbias`` command: ``tanbias COMMAND ...`` and ``python -m tanbias COMMAND ...`` are one.

``pip install -e .`` (``make install``) puts ``tanbias`` on the path; it runs :func:`main`, as
``python -m tanbias`` does. ``tanbias --version`` prints the package's version
(:data:`tanbias.__version__`, its one source).

This is the package face's command line, above every layer (DESIGN.md, "Layers"): a command may
run code of any layer, which is imported only when that command runs, so ``tanbias --version``
imports nothing but the package itself. A command is one line of :data:`COMMANDS`::

    "name": Command("package.module:function", "what it does, in one line"),

where ``function(argv)`` parses the command's own arguments (everything after its name) and
returns an exit status (``None`` counts as 0).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import sys
from collections.abc import Callable, Sequence

import tanbias
from tanbias.errors import ParameterError

__all__ = ["Command", "COMMANDS", "measure", "main"]

PROG = "tanbias"


@dataclasses.dataclass(frozen=True)
class Command:
    """A command of ``tanbias``: the function that runs it, named, and imported only when it runs.

    Parameters
    ----------
    target : str
        ``"module:function"``: the function takes the command's arguments (a list of str) and
        returns an exit status (``int``; ``None`` counts as 0).
    help : str
        One line, shown by ``tanbias --help``.

    Example
    -------
    >>> echo = Command("builtins:len", "the number of arguments")
    >>> echo(["a", "b"])
    2
    """

    target: str
    help: str

    def load(self) -> Callable[[list[str]], int | None]:
        """The function :attr:`target` names, its module imported now.

        Raises
        ------
        ParameterError
            When :attr:`target` is not of the form ``"module:function"``.
        ImportError, AttributeError
            When the module or the function does not exist.
        """
        module, sep, name = self.target.partition(":")
        if not (sep and module and name):
            raise ParameterError(f"target={self.target!r} is not a 'module:function' reference. Name the "
                                 "function that runs the command, e.g. 'tanbias.lab.__main__:main'.")
        return getattr(importlib.import_module(module), name)

    def __call__(self, argv: Sequence[str]) -> int:
        status = self.load()(list(argv))
        return 0 if status is None else int(status)


def measure(argv: Sequence[str]) -> int:
    """``tanbias measure``: the lab's command (:func:`tanbias.lab.measure_command.main`) with the
    report page the presentation layer draws (:func:`tanbias.figures.report.report_html`). The lab
    may not import the figures; the face, above both, joins them."""
    from tanbias.figures.report import report_html
    from tanbias.lab.measure_command import main as measure_main

    return measure_main(list(argv), report=report_html)


#: The commands of ``tanbias``, by name; ``tanbias NAME ARGS...`` runs ``COMMANDS[NAME](ARGS)``.
#: A new command is one line here.
COMMANDS: dict[str, Command] = {
    "measure": Command("tanbias.__main__:measure", "chapter 9's measurements on any model, with a report"),
}


def _parser() -> argparse.ArgumentParser:
    listing = "\n".join(f"  {name:<12}{cmd.help}" for name, cmd in COMMANDS.items()) or "  (none yet)"
    parser = argparse.ArgumentParser(
        prog=PROG, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Tangent bias: the book's package from the command line.",
        epilog=f"commands:\n{listing}\n\n`{PROG} COMMAND --help` describes a command.")
    parser.add_argument("--version", action="version", version=f"{PROG} {tanbias.__version__}")
    parser.add_argument("command", nargs="?", help="the command to run (listed below)")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the command's own arguments")
    return parser


def _status(code) -> int:
    """An exit status from ``SystemExit.code``: None is 0; a message is printed and is 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``tanbias`` with the arguments ``argv`` (default: the command line's); its exit status.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after the program's name.

    Returns
    -------
    int
        0 on success; 2 for a missing or unknown command; otherwise the command's own status.

    Example
    -------
    >>> main(["--version"])  # doctest: +ELLIPSIS
    tanbias ...
    0
    """
    parser = _parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help(sys.stderr)
            return 2
        if args.command not in COMMANDS:
            known = ", ".join(COMMANDS) or "none yet"
            parser.error(f"unknown command {args.command!r} (the commands: {known}). "
                         f"`{PROG} --help` lists them.")
        return COMMANDS[args.command](args.args)
    except SystemExit as exc:        # argparse's --help, --version and usage errors, a command's own
        return _status(exc.code)


if __name__ == "__main__":
    sys.exit(main())
