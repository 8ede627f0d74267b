"""The report functions: each returns exactly the numbers its chapters quote, and only numbers and words.

A report is glued by one or more chapters under a prefix (``ch8_`` ...); a key is
*quoted* when the chapter's prose reads it (``{eval}`glued["ch8_key..."]```) or its
code reads it from the report's dict by name (``numbers["key"]``). Every key a report
returns is quoted by a chapter that glues it, and every key a chapter quotes under a
prefix comes from a report it glues: no dead number, no missing one.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from tanbias.lab.analysis import (alias_design, causal_design, dose, dose_design, findings, horizon_design,
                                  pretrained_report, rivals_design, sweep, sweep_report)
from tanbias.lab.experiments import EXPERIMENTS

CHAPTERS = Path(__file__).resolve().parents[1] / "chapters"
CODE = re.compile(r"```\{code-cell\}[^\n]*\n(.*?)```", re.S)


def _quoted(chapter: str, prefix: str, names=("numbers",), prose: bool = True) -> set[str]:
    """Keys ``prefix + k`` the chapter's prose quotes (``prose``), and keys its code reads from the
    dicts ``names``."""
    text = (CHAPTERS / f"{chapter}.md").read_text()
    code = "\n".join(CODE.findall(text))
    keys = {k for k in re.findall(r'glued\["([A-Za-z0-9_]+)', CODE.sub("", text)) if k.startswith(prefix)} \
        if prose else set()
    for name in names:
        keys |= {prefix + k for k in re.findall(rf'\b{name}\["([A-Za-z0-9_]+)"\]', code)}
    return keys


def _glued_in_code(chapter: str) -> set[str]:
    """Keys a chapter's code glues by name itself (``glue("key", ...)``)."""
    return set(re.findall(r'\bglue\("([A-Za-z0-9_]+)"', "\n".join(CODE.findall((CHAPTERS / f"{chapter}.md").read_text()))))


@pytest.fixture(scope="module")
def committed():
    # the analyses the chapters read, memoised (tanbias.lab.runs.memoised): computed once for the book
    # and every test; chapter 10 reads the dose analysis at its joint Holm family, with the aliasing
    # knob's rows; the designs read the dose analysis alone, as they did before the aliasing runs
    a = findings.analyses()
    da_alone = dose.analyse_dose()
    expected, power = dose_design.expected_concentration(), dose_design.power_analysis()
    numbers = {
        "run_pair": {"ch7_" + k: v for k, v in sweep_report.run_pair_numbers(sweep.load_runs()).items()},
        "claims": {"end_" + k: v for k, v in sweep_report.claim_numbers(a["sweep"]).items()},
        "pretrained": {"ch9_" + k: v for k, v in pretrained_report.numbers(a["pretrained"]).items()},
        "dose_design": dose_design.design_numbers(expected, power),
        "alias_design": alias_design.design_numbers(alias_design.expected_concentration(),
                                                    alias_design.power_analysis(da_alone.responses)),
        "causal_design": causal_design.design_numbers(causal_design.power_analysis(table=da_alone.table)),
        "rivals_design": rivals_design.design_numbers(rivals_design.power_analysis()),
        "horizon_design": horizon_design.design_numbers(),
        # every registered experiment's report, from the one registry the closing page loops over
        **{name: report.numbers(a[name]) for name, report in findings.REPORTS.items()},
        "findings": {"verdict_" + k: v for k, v in findings.headline_words(findings.verdict_grid(a)).items()},
    }
    prefix = {r: GLUED_BY[r][0][1] for r in _REGISTERED_REPORTS}
    return {r: {prefix.get(r, "") + k: v for k, v in n.items()} for r, n in numbers.items()}


def test_the_registry_of_reports_is_the_registry_of_experiments_a_chapter_reads():
    """Every registered experiment that a chapter reads has a report with the three verbs, and no other
    report is registered: a new experiment is one EXPERIMENTS line and one REPORTS line."""
    assert list(findings.REPORTS) == [n for n, d in EXPERIMENTS.items() if d.chapter is not None]
    for name, report in findings.REPORTS.items():
        assert all(callable(getattr(report, verb, None)) for verb in ("analyse", "numbers", "words", "cells")), name


def test_a_seventh_experiment_is_one_registry_entry_and_one_report_line(monkeypatch):
    """A throwaway experiment, planted: its Design (one EXPERIMENTS entry) and its report (one REPORTS line)
    are all the package needs. The lab's chapter range, the command line, the build's order of analyses
    and the closing table's cells follow from them; the rest is its own files (its modules, its chapter,
    a line in _toc.yml and its audit section, which a planted test cannot write)."""
    import dataclasses
    from types import SimpleNamespace

    from tanbias.book import bookbuild
    from tanbias.lab import experiments
    from tanbias.lab.__main__ import parser
    from tanbias.lab.analysis import pretrained_report, verdicts

    planted = dataclasses.replace(EXPERIMENTS["horizon"], name="planted", title="a planted experiment", chapter=15,
                                  prefix="planted-", stages=(), registration=None, registration_sha256=None,
                                  posthoc_sha256=None, borrow=None)
    report = SimpleNamespace(analyse=lambda: "its analysis", numbers=lambda a: {"effect": 0.5},
                             words=lambda a: {"verdict": "supported"},
                             cells=lambda a: [verdicts.cell("early", "horizon", "supported", "15_planted",
                                                            rule="registered", anisotropy="both")])
    monkeypatch.setitem(EXPERIMENTS, "planted", planted)
    monkeypatch.setattr(findings, "REPORTS", {**findings.REPORTS, "planted": report})
    assert experiments.lab_chapters()[-1] == 15
    assert "planted" in bookbuild.order()
    assert "planted" in next(a for a in parser()._actions if a.dest == "command").choices
    # the closing table gathers its cells, the other reports stubbed out (their analyses are the committed runs')
    monkeypatch.setattr(findings, "REPORTS", {"planted": report})
    monkeypatch.setattr(pretrained_report, "cells", lambda pretrained: [])
    cells = {(c["property"], c["evidence"]): c for c in findings.cells({"planted": report.analyse(), "pretrained": None})}
    assert cells[("early", "horizon")]["chapter"] == "15_planted"
    assert {e for _, e in cells} == {"derivation", "horizon"}


@pytest.mark.slow
@pytest.mark.committed
def test_every_report_returns_its_own_cells_of_the_closing_table():
    """Each report's ``cells(a)`` speaks the vocabulary (verdicts.cell checks it), points to its own chapter,
    and decides no cell another report decides; the grid is their gathering, every other cell not tested."""
    from tanbias.lab.analysis import verdicts

    a = findings.analyses()
    owner = {}
    for name, report in findings.REPORTS.items():
        chapter = EXPERIMENTS[name].chapter
        for c in report.cells(a[name]):
            assert c == verdicts.cell(c["property"], c["evidence"], c["word"], c["chapter"], c["label"],
                                      qualifier=c["qualifier"], rule=c["rule"], anisotropy=c["anisotropy"]), c
            assert int(c["chapter"][:2]) == chapter, (name, c)
            assert c["rule"], (name, c)
            key = (c["property"], c["evidence"])
            assert key not in owner, f"{key} decided by {owner.get(key)} and {name}"
            owner[key] = name
    grid = findings.verdict_grid(a).set_index(["property", "evidence"])
    decided = {(c["property"], c["evidence"]) for c in findings.cells(a)}
    assert set(owner) <= decided
    assert (grid.loc[[k for k in grid.index if k not in decided], "word"] == "not tested").all()


@pytest.mark.slow
def test_every_report_states_its_words_by_name(committed):
    a = findings.analyses()
    for name, report in findings.REPORTS.items():
        words = report.words(a[name])
        assert words and all(isinstance(k, str) and isinstance(v, str) for k, v in words.items()), name


def _chapter(number: int) -> str:
    (path,) = CHAPTERS.glob(f"{number:02d}_*.md")
    return path.stem


#: each registered experiment's reports: ``<name>_design`` (glued by its chapter) and ``<name>`` (by its
#: chapter, the closing page and the audit trail), under its chapter's prefix; read from the registry (an experiment no
#: chapter reads yet, ``chapter=None``, has none)
_REGISTERED_REPORTS = {**{f"{d.name}{part}": d for d in EXPERIMENTS.values() if d.registration and d.chapter
                          for part in ("_design", "")},
                       **{name: EXPERIMENTS[name] for name in findings.REPORTS}}
#: report -> the chapters that glue it, with the prefix
GLUED_BY = {"run_pair": [("07_alignment_test", "ch7_")], "claims": [("conclusions", "end_")],
            # the book's verdicts at a glance: the closing page and the introduction (beside chapters/)
            "findings": [("conclusions", "verdict_"), ("../intro", "verdict_")],
            "pretrained": [("09_pretrained_models", "ch9_"), ("conclusions", "ch9_")],
            **{r: [(_chapter(d.chapter), f"ch{d.chapter}_"),
                   *([("conclusions", f"ch{d.chapter}_"), ("audit_trail", f"ch{d.chapter}_")] if r == d.name else [])]
               for r, d in _REGISTERED_REPORTS.items()}}
#: report -> the chapters that read it by name without gluing it: (chapter, prefix, dict name, a regex); the
#: audit trail reads each registered report as ``n["<name>"]`` and its chapter's own dict as ``ch<N>_n[umbers]``
READ_BY = {"sweep": [("09_pretrained_models", "ch8_", "lab")],
           "run_pair": [("audit_trail", "ch7_", "ch7_numbers")]}
for _r, _d in _REGISTERED_REPORTS.items():
    if _r == _d.name:
        READ_BY.setdefault(_r, []).extend([("audit_trail", f"ch{_d.chapter}_", rf'n\["{_r}"\]'),
                                           ("audit_trail", f"ch{_d.chapter}_", rf"ch{_d.chapter}_n(?:umbers)?")])


@pytest.mark.parametrize("report", list(GLUED_BY))
def test_a_report_returns_only_numbers_its_chapters_quote(committed, report):
    quoted = set().union(*(_quoted(c, p) for c, p in GLUED_BY[report]),
                         *(_quoted(c, p, names=(n,), prose=False) for c, p, n in READ_BY.get(report, ())))
    extra = set(committed[report]) - quoted
    assert not extra, f"{report} returns numbers no chapter quotes: {sorted(extra)}"


@pytest.mark.parametrize("chapter,prefix", sorted({cp for cps in GLUED_BY.values() for cp in cps}))
def test_every_number_a_chapter_quotes_comes_from_a_report_it_glues(committed, chapter, prefix):
    given = set().union(*(committed[r] for r, cps in GLUED_BY.items() if (chapter, prefix) in cps))
    missing = _quoted(chapter, prefix) - given - _glued_in_code(chapter)
    assert not missing, f"{chapter} quotes numbers no report gives it: {sorted(missing)}"


@pytest.mark.parametrize("report", list(GLUED_BY))
def test_every_value_is_a_number_or_one_word(committed, report):
    for key, value in committed[report].items():
        if isinstance(value, str):
            assert len(value.split()) == 1, (key, value)
        elif isinstance(value, tuple):
            assert all(isinstance(v, (int, float, np.integer, np.floating)) for v in value), (key, value)
        else:
            assert isinstance(value, (int, float, np.integer, np.floating)), (key, type(value))


def test_the_chapters_glue_no_sentence():
    """No chapter glues a value in its own code that is not a number or one word."""
    for path in sorted(CHAPTERS.glob("*.md")):
        assert "Word(" not in path.read_text(), path.name
        assert "display=False" not in path.read_text(), path.name
