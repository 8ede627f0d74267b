"""The strict, parallel book build (tanbias.book.bookbuild), short of a build: the two extensions it
declares parallel safe, the number of processes, and its command line. (The build itself runs once
per test session, for the book's tests: tests/conftest.py.)"""

from __future__ import annotations

import os
import types

import pytest
import sphinx_multitoc_numbering as multitoc
from sphinx.environment.collectors.toctree import TocTreeCollector
from sphinx_proof.domain import ProofDomain

from tanbias.book import bookbuild


@pytest.fixture
def pristine(monkeypatch):
    """The two extensions as installed, put back after the test (the declaration patches them)."""
    monkeypatch.setattr(multitoc, "setup", multitoc.setup)
    monkeypatch.setattr(TocTreeCollector, "assign_section_numbers", TocTreeCollector.assign_section_numbers)
    had = "merge_domaindata" in ProofDomain.__dict__
    yield
    if not had and "merge_domaindata" in ProofDomain.__dict__:
        delattr(ProofDomain, "merge_domaindata")


def test_multitoc_numbering_is_declared_parallel_safe_once(pristine):
    original = multitoc.setup
    bookbuild.declare_multitoc_parallel_safe()
    wrapped = multitoc.setup
    assert wrapped is not original
    connected = []
    app = types.SimpleNamespace(connect=lambda event, handler: connected.append(event))
    meta = wrapped(app)
    assert meta == {"parallel_read_safe": True, "parallel_write_safe": True}
    assert connected == ["builder-inited"]                         # the extension's own setup still runs
    bookbuild.declare_multitoc_parallel_safe()
    assert multitoc.setup is wrapped                                 # not wrapped twice


def test_the_proof_domain_merges_its_empty_data(pristine):
    bookbuild.declare_multitoc_parallel_safe()
    assert "merge_domaindata" in ProofDomain.__dict__
    assert ProofDomain.merge_domaindata(object(), {"ch1"}, {}) is None


def test_the_read_uses_the_cores_this_process_may_use(monkeypatch):
    if hasattr(os, "sched_getaffinity"):
        assert bookbuild.default_jobs() == len(os.sched_getaffinity(0)) >= 1
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 3)
    assert bookbuild.default_jobs() == 3
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert bookbuild.default_jobs() == 1


def test_the_command_line_hands_its_options_to_the_build(monkeypatch):
    calls = []
    monkeypatch.setattr(bookbuild, "build", lambda *a: calls.append(a) or 0)
    assert bookbuild.main(["book", "--path-output", "out", "--jobs", "3"]) == 0
    assert bookbuild.main([]) == 0
    assert calls == [("book", "out", 3), (".", None, None)]
    monkeypatch.setattr(bookbuild, "build", lambda *a: None)      # anything but a status is a failure
    assert bookbuild.main([]) == 1
    monkeypatch.setattr(bookbuild, "build", lambda *a: 2)
    assert bookbuild.main([]) == 2


def test_a_failing_analysis_is_named_and_left_to_its_page(monkeypatch):
    """One worker's task: a report whose analysis raises gives its name and error, not an exception."""
    from tanbias.lab.analysis import findings

    def broken():
        raise ValueError("a planted failure")

    monkeypatch.setitem(findings.REPORTS, "planted", types.SimpleNamespace(analyse=broken))
    monkeypatch.setitem(findings.REPORTS, "fine", types.SimpleNamespace(analyse=lambda: 1))
    assert bookbuild._analyse("planted") == "planted: ValueError: a planted failure"
    assert bookbuild._analyse("fine") is None


def test_every_report_is_memoised_before_the_pages_and_nothing_with_the_memo_off(monkeypatch, capsys):
    from tanbias.lab.analysis import findings

    from tanbias.lab.experiments import EXPERIMENTS

    names = bookbuild.order()
    assert sorted(names) == sorted(findings.REPORTS), "every report is memoised, once"
    sizes = [len(EXPERIMENTS[n].cells()) if n in EXPERIMENTS else 0 for n in names]
    assert sizes == sorted(sizes, reverse=True), "the designs with the most runs start first"
    monkeypatch.setenv("TANBIAS_MEMO", "0")
    assert bookbuild.memoise_analyses(2) == 0.0 and capsys.readouterr().out == ""
