"""Chapters read as arguments (DESIGN.md, "Chapters").

Static rules over every ``chapters/*.md`` notebook, read with jupytext:

* a code cell is a short call into the package: at most ``MAX_LINES`` lines of
  code (blank lines and comments aside), except the exercises' stubs and
  solutions;
* a hidden cell defines no function and no class: analysis lives in the
  package, where it is unit-tested;
* numbers in prose are quoted with ``{eval}`` from :mod:`tanbias.book.prose` (one
  source for the book and JupyterLab), never with myst-nb's ``{glue:...}``
  roles, which JupyterLab cannot render;
* every check is displayed (``display(check.require())``), never printed; the introduction's, the
  closing page's and the lab chapters' (``lab_chapters()``) run on the audit trail page
  (``chapters/audit_trail.md``), in a section each page links to;
* a folded output (``hide-output``) says in its toggle what it holds;
* every table goes through :func:`tanbias.book.tables.format_table` (no ``.style``,
  ``.round(...)``, ``.to_string()`` of its own);
* what JupyterLab cannot resolve is written so that it reads there too: a
  citation is a link to the paper with its author and year (no ``{cite}``
  role), another chapter's section a Markdown link to that chapter (no
  ``{ref}`` across chapters).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tanbias.lab.experiments import lab_chapters

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("*.md"))
#: every page of prose that a reader may open in JupyterLab
PAGES = CHAPTERS + [ROOT / "intro.md"]
MAX_LINES = 15
HIDDEN = {"hide-input", "remove-input", "hide-cell", "remove-cell"}


def _cells(path: Path):
    """(cell, inside an exercise or a solution?) for every cell of a chapter."""
    import jupytext

    nb = jupytext.read(path)
    inside = False
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            src = cell.source
            starts = [m.start() for m in re.finditer(r"\{(exercise|solution)-start\}", src)]
            ends = [m.start() for m in re.finditer(r"\{(exercise|solution)-end\}", src)]
            if starts or ends:
                inside = max(starts, default=-1) > max(ends, default=-1)
        yield cell, inside


def _code_lines(source: str) -> int:
    return sum(1 for line in source.splitlines()
               if line.strip() and not line.strip().startswith(("#", "%")))


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.stem)
@pytest.mark.slow
def test_code_cells_are_short_calls(path):
    long = [(i, _code_lines(c.source)) for i, (c, ex) in enumerate(_cells(path))
            if c.cell_type == "code" and not ex and _code_lines(c.source) > MAX_LINES]
    assert not long, (f"{path.name}: code cells longer than {MAX_LINES} lines (cell, lines): {long}. "
                      "Move the computation into the package and call it.")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_hidden_cells_define_nothing(path):
    bad = []
    for i, (cell, _) in enumerate(_cells(path)):
        tags = set(cell.metadata.get("tags", []))
        if cell.cell_type != "code" or not tags & HIDDEN:
            continue
        tree = ast.parse(cell.source)
        bad += [f"cell {i}: {type(n).__name__} {n.name}" for n in ast.walk(tree)
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        bad += [f"cell {i}: lambda" for n in ast.walk(tree) if isinstance(n, ast.Lambda)]
    assert not bad, f"{path.name}: hidden cells define code: {bad}. Put it in the package, with a test."


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_prose_numbers_use_eval(path):
    text = path.read_text(encoding="utf8")
    assert "{glue:" not in text and "{glue}" not in text, (
        f"{path.name}: a {{glue:...}} role; quote numbers with {{eval}}`glued[\"key:spec\"]`")
    assert "from myst_nb import glue" not in text, f"{path.name}: use tanbias.book.prose.glue"
    from tanbias.book.prose import EVAL_PATTERN

    pattern = re.compile(EVAL_PATTERN)
    bad = [e for e in re.findall(r"\{eval\}`([^`]*)`", text) if not pattern.match(e)]
    assert not bad, f"{path.name}: {{eval}} expressions outside the allowed pattern: {bad}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_checks_are_displayed_not_printed(path):
    bad = []
    for i, (cell, _) in enumerate(_cells(path)):
        if cell.cell_type == "code" and re.search(r"print\((check_\w+|\w*check\w*\.require)", cell.source):
            bad.append(i)
    assert not bad, f"{path.name}: checks printed in cells {bad}; use display(check.require())"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_folded_outputs_say_what_they_hold(path):
    """A cell whose output is folded (``hide-output``) names what the fold holds in its toggle
    (``mystnb: code_prompt_show``), not myst-nb's "Show code cell outputs"."""
    bad = []
    for i, (cell, _) in enumerate(_cells(path)):
        if cell.cell_type != "code" or "hide-output" not in cell.metadata.get("tags", []):
            continue
        prompt = cell.metadata.get("mystnb", {}).get("code_prompt_show", "")
        if not prompt.strip() or "{type}" in prompt:
            bad.append(i)
    assert not bad, (f"{path.name}: folded cells {bad} do not say what they hold; give each a "
                     "`mystnb: code_prompt_show` line")


#: the pages whose checks run on the audit trail (chapters/audit_trail.md), and it
SHOW_NO_CHECK = (ROOT / "intro.md", ROOT / "chapters" / "conclusions.md")
AUDIT_TRAIL = ROOT / "chapters" / "audit_trail.md"
CHECK_CALL = re.compile(r"\.(require|refute)\(\)")
#: the lab chapters: each runs its checks on the audit trail, in the section ``audit-ch<N>``
LAB_CHAPTERS = sorted(p for p in CHAPTERS if p.name[:2].isdigit() and int(p.name[:2]) in lab_chapters())


def _audit_section(label: str) -> str:
    """The audit trail's section ``(label)=``, up to the next section of the same level."""
    audit = AUDIT_TRAIL.read_text(encoding="utf8")
    assert f"({label})=" in audit, f"{AUDIT_TRAIL.name} has no section ({label})="
    return audit.split(f"({label})=")[1].split("\n## ")[1]


@pytest.mark.parametrize("path", SHOW_NO_CHECK, ids=lambda p: p.stem)
def test_the_intro_and_the_closing_page_leave_their_checks_to_the_audit_trail(path):
    """The introduction and the closing page display no check: theirs run on the audit trail page,
    executed by the same strict build, and each page links to its section there."""
    text = path.read_text(encoding="utf8")
    assert not CHECK_CALL.search(text), f"{path.name} displays a check; move it to {AUDIT_TRAIL.name}"
    section = {"intro": "audit-intro", "conclusions": "audit-conclusions"}[path.stem]
    assert f"audit_trail.md#{section})" in text, f"{path.name}: no link to its section of the audit trail"
    assert CHECK_CALL.search(_audit_section(section)), f"{AUDIT_TRAIL.name}, {section}: no check runs there"


def test_every_lab_chapter_has_its_section_of_the_audit_trail():
    assert [int(p.name[:2]) for p in LAB_CHAPTERS] == list(lab_chapters()) and lab_chapters()[0] == 7


@pytest.mark.parametrize("path", LAB_CHAPTERS, ids=lambda p: p.stem)
def test_a_lab_chapter_hides_no_check_and_links_to_its_audit_section(path):
    """A check whose code the reader cannot see (a ``remove-input`` cell) guards the prose against
    the committed runs: it runs on the audit trail, in the chapter's section, which the chapter
    links to. A check whose code the chapter shows (planted or live data) stays: it is part of the
    demonstration."""
    hidden = [i for i, (cell, _) in enumerate(_cells(path)) if cell.cell_type == "code"
              and "remove-input" in cell.metadata.get("tags", []) and CHECK_CALL.search(cell.source)]
    assert not hidden, f"{path.name}: hidden checks in cells {hidden}; move them to {AUDIT_TRAIL.name}"
    section = f"audit-ch{int(path.name[:2])}"
    assert f"audit_trail.md#{section})" in path.read_text(encoding="utf8"), f"{path.name}: no link to #{section}"
    assert CHECK_CALL.search(_audit_section(section)), f"{AUDIT_TRAIL.name}, {section}: no check runs there"


#: what formats a table outside tanbias.book.tables
TABLE_BYPASS = re.compile(r"\.style\b|\.to_(string|markdown|html)\(|\.round\(|\bpd\.(set_option|options)\b")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_tables_go_through_the_one_formatter(path):
    bad = [(i, m.group(0)) for i, (cell, _) in enumerate(_cells(path)) if cell.cell_type == "code"
           for m in TABLE_BYPASS.finditer(cell.source)]
    assert not bad, (f"{path.name}: tables formatted by hand (cell, call): {bad}. Show a table with "
                     "tanbias.book.tables.format_table(frame), which rounds, drops the index and joins intervals.")


def test_book_evaluates_the_same_expressions_as_the_package_allows():
    """One pattern: _config.yml's nb_eval_name_regex is tanbias.book.prose.EVAL_PATTERN."""
    import yaml

    from tanbias.book.prose import EVAL_PATTERN

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["execute"]["execute_notebooks"] == "inline", "{eval} needs inline execution"
    assert config["sphinx"]["config"]["nb_eval_name_regex"] == EVAL_PATTERN


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.stem)
@pytest.mark.slow
def test_citations_are_author_year_links_to_the_paper(path):
    """JupyterLab (jupyterlab-myst 2.7) resolves no {cite} role: a citation is a link to the
    paper, ``[Bernas et al. (2026)](https://arxiv.org/abs/2604.08764)``, that the book turns
    into a citation of its references.bib entry (tanbias.book._sphinxext)."""
    from tanbias.book._sphinxext import bibliography_entries, citation_text_problem, markdown_citations

    text = path.read_text(encoding="utf8")
    roles = re.findall(r"\{cite(?::\w+)?\}`[^`]*`", text)
    assert not roles, f"{path.name}: {{cite}} roles, which JupyterLab shows as bare keys: {roles}"
    entries = bibliography_entries()
    bad = [problem for link_text, _, key in markdown_citations(text)
           if (problem := citation_text_problem(link_text, entries[key]))]
    assert not bad, f"{path.name}: citations whose text is not their entry's authors and year: {bad}"


@pytest.mark.slow
def test_every_bibliography_entry_is_cited():
    from tanbias.book._sphinxext import bibliography_entries, markdown_citations

    cited = {key for path in PAGES for _, _, key in markdown_citations(path.read_text(encoding="utf8"))}
    assert set(bibliography_entries()) <= cited, set(bibliography_entries()) - cited


def _labels(path: Path) -> set[str]:
    text = path.read_text(encoding="utf8")
    return set(re.findall(r"^\(([\w-]+)\)=", text, re.MULTILINE)) | set(re.findall(r":label:\s*([\w-]+)", text))


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.stem)
def test_references_to_other_chapters_are_links_to_them(path):
    """A {ref} (or {prf:ref}, {numref}) names a label of its own page, which JupyterLab resolves;
    another chapter's section is ``[text](NN_slug.md#label)``, which JupyterLab opens as that
    chapter and the book as the section (tanbias.book._sphinxext), with a text of its own and a
    label that the linked chapter defines."""
    from tanbias.book._sphinxext import MARKDOWN_LINK

    text = path.read_text(encoding="utf8")
    own = _labels(path)
    roles = re.findall(r"\{(?:ref|prf:ref|numref)\}`(?:[^`<]*<)?([\w-]+)>?`", text)
    elsewhere = [label for label in roles if label not in own]
    assert not elsewhere, (f"{path.name}: {{ref}} to labels of other pages, which JupyterLab shows as "
                           f"bare keys: {elsewhere}. Link the chapter: [text](NN_slug.md#label).")
    bad = []
    for link_text, target in MARKDOWN_LINK.findall(text):
        file, _, label = target.partition("#")
        if not file.endswith(".md") or "://" in file:
            continue
        linked = (path.parent / file)
        if not linked.exists():
            bad.append(f"{target}: no such file")
        elif label and label not in _labels(linked):
            bad.append(f"{target}: {file} has no label {label}")
        if not link_text.strip():
            bad.append(f"{target}: no text (JupyterLab would show the address)")
    assert not bad, f"{path.name}: {bad}"


#: a reference to the project's tracker: the word issue followed by its number, "#" or not
TRACKER = re.compile(r"\bissues? #?\d+", re.I)


def test_the_book_the_package_and_the_tests_speak_of_the_project_alone():
    """No page, module or test names a tracker issue: a reader cannot resolve one. A rule says what it
    is instead, e.g. "the rule added after the dose runs (data/preregistration/dose-posthoc.toml)"."""
    files = [*PAGES, ROOT / "README.md", ROOT / "DESIGN.md", *(ROOT / "tanbias").rglob("*.py"),
             *(ROOT / "tests").glob("*.py")]
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}" for path in files
             for n, line in enumerate(path.read_text(encoding="utf8").splitlines(), start=1)
             if TRACKER.search(line) and "TRACKER" not in line]
    assert not found, "tracker references:\n" + "\n".join(found)
    assert TRACKER.search("a rule of issue 18") and TRACKER.search("Issues #21") and not TRACKER.search("issues/new")
