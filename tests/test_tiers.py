"""The suite's two parts: `make test` (the package's own tests) and `make check` (what needs more).

The Makefile splits the suite by marker: `make test` takes every test that carries none of
``CHECK_MARKS``, `make check` the others, so that the two together run each test once (CI runs
both). A test that analyses the committed runs belongs to `make check`; the guard in
``tests/conftest.py`` fails one that does so unmarked.
"""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from conftest import CHECK_MARKS

from tanbias.lab import runs

ROOT = Path(__file__).resolve().parents[1]


def _make_variable(name: str) -> str:
    m = re.search(rf"^{name} := (.*)$", (ROOT / "Makefile").read_text(encoding="utf8"), re.M)
    assert m, f"the Makefile sets no {name}"
    return m.group(1).strip()


def test_the_makefile_splits_the_suite_by_the_check_marks():
    """`make test` deselects exactly what `make check` selects: one expression, negated."""
    assert _make_variable("CHECK_MARKS") == " or ".join(CHECK_MARKS)
    makefile = (ROOT / "Makefile").read_text(encoding="utf8")
    assert '-m "not ($(CHECK_MARKS))"' in re.search(r"^test:.*\n(\t.*\n)+", makefile, re.M).group(0)
    assert '-m "$(CHECK_MARKS)"' in re.search(r"^check:.*\n(\t.*\n)+", makefile, re.M).group(0)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf8").split()
    assert ci.index("test") < ci.index("check"), "CI runs make test, then make check"


def test_every_check_mark_is_a_registered_marker():
    markers = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    names = {m.split(":")[0] for m in markers}
    assert set(CHECK_MARKS) <= names


def test_an_unmarked_test_reading_a_committed_analysis_fails():
    """This test carries no check mark, so the guard is on: a planted read of the memo fails."""
    with pytest.raises(pytest.fail.Exception, match="mark it @pytest.mark.committed"):
        runs.memoised("planted", lambda: 1)


def test_runs_of_ones_own_are_not_the_committed_ones(tmp_path, monkeypatch):
    """Pointing the memo at runs of the test's own is not reading the committed analyses."""
    monkeypatch.setattr(runs, "RUNS_DIR", tmp_path / "runs")
    monkeypatch.setattr(runs, "ROOT", tmp_path)
    monkeypatch.setattr(runs, "MEMO_DIR", tmp_path / "memo")
    assert runs.memoised("own", lambda: 7) == 7


@pytest.mark.committed
def test_a_test_marked_committed_may_read_them(monkeypatch):
    """With the mark, the guard is off (the memo is off, so nothing is read or written here)."""
    monkeypatch.setenv("TANBIAS_MEMO", "0")
    assert runs.memoised("marked", lambda: 3) == 3
