"""The ``tanbias`` command (tanbias.__main__, the package face): ``tanbias`` and ``python -m tanbias``
are one, ``--version`` prints the package's version, a registered command runs with its own
arguments and is imported only then, and a missing or unknown command is a usage error."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest

import tanbias
from bookhelpers import ROOT
from tanbias.__main__ import COMMANDS, Command, main
from tanbias.errors import ParameterError


def _run(*argv: str) -> subprocess.CompletedProcess:
    # the timeout is a hang guard: `tanbias --version` answers in 0.2 s
    return subprocess.run(list(argv), capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_the_command_and_python_m_print_the_same_version():
    script = Path(sys.executable).parent / "tanbias"
    assert script.is_file(), f"{script} is missing: `make install` (pip install -e .) installs it"
    by_script, by_module = _run(str(script), "--version"), _run(sys.executable, "-m", "tanbias", "--version")
    assert by_script.returncode == by_module.returncode == 0, (by_script.stderr, by_module.stderr)
    assert by_script.stdout == by_module.stdout == f"tanbias {tanbias.__version__}\n"


@pytest.fixture
def fake_command(monkeypatch):
    """A command ``fake`` registered for one test; the arguments it was called with."""
    calls = []
    module = types.ModuleType("tanbias_fake_command")
    module.main = lambda argv: calls.append(argv) or 3
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(COMMANDS, "fake", Command(f"{module.__name__}:main", "a command of the tests"))
    return calls


def test_a_command_runs_with_its_own_arguments(fake_command, capsys):
    assert main(["fake", "--flag", "value", "--help"]) == 3
    assert fake_command == [["--flag", "value", "--help"]]
    assert main(["--help"]) == 0
    assert "fake        a command of the tests" in capsys.readouterr().out


def test_a_missing_or_unknown_command_is_a_usage_error(fake_command, capsys):
    assert main([]) == 2
    assert "fake" in capsys.readouterr().err
    assert main(["nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown command 'nope'" in err and "fake" in err
    assert fake_command == []


def test_a_command_names_its_function_as_module_colon_function():
    with pytest.raises(ParameterError, match="target='tanbias.lab'"):
        Command("tanbias.lab", "no function named").load()


def test_measure_joins_the_labs_command_and_the_figures_report(monkeypatch):
    """The lab may not import the figures: the face gives the lab's command the report page."""
    from tanbias.figures.report import report_html
    from tanbias.lab import measure_command

    calls = []
    monkeypatch.setattr(measure_command, "main", lambda argv, report=None: calls.append((argv, report)) or 0)
    assert main(["measure", "a", "--tokens", "2048"]) == 0
    assert calls == [(["a", "--tokens", "2048"], report_html)]


def test_every_registered_command_loads():
    """Each command of the registry names a function that exists (its module imported)."""
    broken = {}
    for name, command in COMMANDS.items():
        try:
            if not callable(command.load()):
                broken[name] = f"{command.target} is not callable"
        except (ImportError, AttributeError, ParameterError) as exc:
            broken[name] = repr(exc)
    assert not broken, broken


def test_a_command_returns_its_functions_status_and_none_is_success(monkeypatch):
    module = types.ModuleType("tanbias_status_command")
    module.ok, module.fails = (lambda argv: None), (lambda argv: 4)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    assert Command(f"{module.__name__}:ok", "")(["x"]) == 0
    assert Command(f"{module.__name__}:fails", "")([]) == 4


@pytest.mark.parametrize("code, status, printed", [(None, 0, ""), (0, 0, ""), (5, 5, ""),
                                                   ("no such file", 1, "no such file\n")])
def test_a_command_that_exits_gives_its_status(monkeypatch, capsys, code, status, printed):
    """A command may end with sys.exit (argparse does, for its own --help and usage errors)."""
    module = types.ModuleType("tanbias_exit_command")

    def run(argv):
        raise SystemExit(code)

    module.run = run
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(COMMANDS, "exits", Command(f"{module.__name__}:run", "ends with sys.exit"))
    assert main(["exits"]) == status
    assert capsys.readouterr().err == printed


@pytest.mark.parametrize("target", ["", "tanbias", ":main", "tanbias.__main__:"])
def test_every_malformed_target_is_refused_before_an_import(target):
    with pytest.raises(ParameterError, match=r"is not a 'module:function' reference"):
        Command(target, "").load()

