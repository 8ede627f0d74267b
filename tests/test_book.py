"""The built book: strict build, every chapter executes, offline, light pages.

The book is built once per session by the ``built_book`` fixture (conftest.py).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from bookhelpers import ROOT, output_tables, project_links, toc_docs, toc_notebooks
from tanbias.book.bench import TARGETS, exec_times, page_weight

pytestmark = pytest.mark.book

REMOTE = re.compile(r"^(https?:)?//", re.IGNORECASE)
CDN = re.compile(r"cdn|unpkg|jsdelivr|cdnjs|googleapis|cloudflare", re.IGNORECASE)
SCRIPT_SRC = re.compile(r"<script\b[^>]*\bsrc=[\"']([^\"']+)[\"']", re.IGNORECASE)
LINK_TAG = re.compile(r"<link\b[^>]*>", re.IGNORECASE)
HREF = re.compile(r"\bhref=[\"']([^\"']+)[\"']", re.IGNORECASE)
REL = re.compile(r"\brel=[\"']([^\"']+)[\"']", re.IGNORECASE)
ANCHOR_HREF = re.compile(r"<a\b[^>]*\bhref=[\"']([^\"']+)[\"']", re.IGNORECASE)
#: hosts of launch, repository and issue links
LAUNCH_HOSTS = re.compile(r"^https?://([^/]*\b(github\.com|colab\.research\.google\.com|binder)[^/]*)/",
                          re.IGNORECASE)


def _warnings(log: str) -> str:
    clean = re.sub(r"\x1b\[[0-9;]*m", "", log)
    lines = [l for l in clean.splitlines() if "WARNING" in l or "ERROR" in l or "Error" in l]
    lines = [l for l in lines if "Kernel is running over TCP" not in l]
    return "\n".join(lines[-60:]) or clean[-3000:]


def _pages(built_book):
    return sorted(built_book.html.rglob("*.html"))


def test_book_builds_strictly(built_book):
    """`jupyter-book build --all -W -n --keep-going` exits 0: no warning, no execution error."""
    assert built_book.returncode == 0, "strict book build failed:\n" + _warnings(built_book.log)
    for doc in toc_docs():
        assert built_book.page(doc).exists(), f"{doc} is in _toc.yml but was not built"


def test_every_chapter_executed_during_the_build(built_book):
    """The strict build runs each chapter once, top to bottom in a fresh kernel, as a
    reader would (inline execution; any error fails it): no second pass is needed."""
    times = exec_times(built_book.build)
    for doc in toc_notebooks():
        assert doc in times, f"{doc} was not executed by the build"
        assert times[doc]["succeeded"], f"{doc} failed to execute: {times[doc].get('error')}"
        # how long each page took is make bench's (against its 30 s target), never a test's: a slower or
        # busier machine must not turn the suite red


def test_no_cdn_anywhere_in_scripts_or_links(built_book):
    """Offline book: every <script src> and stylesheet/icon <link href> is local."""
    bad = []
    for page in _pages(built_book):
        text = page.read_text(encoding="utf8")
        for src in SCRIPT_SRC.findall(text):
            if REMOTE.match(src) or CDN.search(src):
                bad.append((page.name, "script", src))
        for tag in LINK_TAG.findall(text):
            href = (HREF.findall(tag) or [""])[0]
            rel = (REL.findall(tag) or [""])[0].lower()
            if rel in ("stylesheet", "preload", "modulepreload", "icon", "shortcut icon") and \
                    (REMOTE.match(href) or CDN.search(href)):
                bad.append((page.name, "link", href))
    assert not bad, bad


def test_mathjax_and_plotly_are_self_hosted(built_book):
    for doc in toc_docs():
        text = built_book.page(doc).read_text(encoding="utf8")
        srcs = SCRIPT_SRC.findall(text)
        mathjax = [s for s in srcs if "mathjax" in s.lower() or "tex-mml" in s]
        assert all(s.split("?")[0].endswith("_static/mathjax/tex-mml-chtml.js") for s in mathjax), mathjax
        if 'class="math' in text:  # Sphinx loads MathJax only on pages with math
            assert mathjax, f"{doc} has math but no MathJax"
        plotly = [s for s in srcs if "plotly" in s]
        assert len(plotly) == 1 and plotly[0].split("?")[0].endswith("_static/plotly.min.js"), plotly
        # plotly.js is loaded before require.js could turn it into an AMD module
        order = [s.split("?")[0].rsplit("/", 1)[-1] for s in srcs]
        if "require.js" in order:
            assert order.index("plotly.min.js") < order.index("require.js"), order
    static = built_book.html / "_static"
    for asset in ("plotly.min.js", "mathjax/tex-mml-chtml.js", "require.js",
                  "html-manager/embed-amd.js", "mathjax/output/chtml/fonts/woff-v2/MathJax_Main-Regular.woff"):
        assert (static / asset).is_file(), asset


def test_plotly_js_matches_the_python_package(built_book):
    import plotly

    shipped = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    assert (built_book.html / "_static" / "plotly.min.js").read_bytes() == shipped.read_bytes()


def test_figures_are_html_and_plotly_js_is_not_embedded(built_book):
    for doc in toc_notebooks():
        text = built_book.page(doc).read_text(encoding="utf8")
        # the introduction executes only to glue its findings and show their table, the audit trail to
        # show checks and tables, the geometry toolkit to check its worked examples; every chapter draws
        assert doc in ("intro", "chapters/audit_trail", "chapters/geometry_toolkit") or "Plotly.newPlot" in text, \
            f"{doc}: no plotly figure in the page"
        assert "plotly.js v" not in text, f"{doc}: plotly.js embedded in the page"
        assert "application/vnd.plotly" not in text


def test_the_checks_of_the_intro_and_the_closing_page_show_on_the_audit_trail_only(built_book):
    """The introduction and the closing page show no check line ("... -> PASS"): their checks run,
    and show, on the audit trail page, which the same strict build executes."""
    for doc in ("intro", "chapters/conclusions"):
        text = built_book.page(doc).read_text(encoding="utf8")
        assert "-&gt; PASS" not in text and "-> PASS" not in text, f"{doc} shows a check; it belongs on the audit trail"
    assert "-&gt; PASS" in built_book.page("chapters/audit_trail").read_text(encoding="utf8")


def test_pages_weigh_at_most_2_mb(built_book):
    heavy = {}
    for doc in toc_docs():
        w = page_weight(built_book.page(doc), built_book.html)
        if w > TARGETS["page_bytes"]:
            heavy[doc] = w
    assert not heavy, f"pages over {TARGETS['page_bytes'] / 1e6} MB: {heavy}"


def test_api_page_documents_every_public_module(built_book):
    from tanbias.book._sphinxext import public_modules

    text = "".join(built_book.page(doc).read_text(encoding="utf8")
                   for doc in ("chapters/api", "chapters/api_lab", "chapters/api_analysis", "chapters/api_figures"))
    missing = [m for m in public_modules() if f'id="module-{m}"' not in text]
    twice = [m for m in public_modules() if text.count(f'id="module-{m}"') > 1]
    assert not twice, f"modules documented on two reference pages: {twice}"
    assert not missing, missing
    assert 'id="tanbias.figures.interactive.Interactive"' in text


def test_status_page_lists_every_chapter(built_book):
    text = built_book.page("chapters/status").read_text(encoding="utf8")
    assert "<table" in text
    for doc in toc_notebooks():
        assert doc.rsplit("/", 1)[-1] in text, doc


def test_no_source_static_folder():
    """Jupyter Book 1 injects every .js of a source `_static/` (and then of every
    html_static_path) into every page; assets live in assets/ and _assets_build/."""
    assert not (ROOT / "_static").exists()


def test_toc_chapters_are_myst_notebooks_without_ipynb_twins():
    for doc in toc_notebooks():
        assert not (ROOT / f"{doc}.ipynb").exists(), f"{doc}.ipynb would silently win over {doc}.md"


def launch_link_problems(href: str, doc: str, links: dict) -> list[str]:
    """Why ``href``, a link on the page of ``doc``, is not formed from the repository setting
    (:func:`bookhelpers.project_links`); [] when it is, or when it is no launch, repository or
    issue link."""
    import html

    href = html.unescape(href)
    if not LAUNCH_HOSTS.match(href) and not href.startswith(links["binderhub"] + "/"):
        return []
    if "colab" in href:
        return [f"a Colab link: {href}"]
    if href.startswith(links["binderhub"] + "/"):
        prefix = f"{links['binder']}?urlpath=lab/tree/"
        if not href.startswith(prefix):
            return [f"a launch link not formed from repository.url and its branch: {href}"]
        path = href.removeprefix(prefix)
        expected = f"{links['path_to_book']}{doc}.md"
        if (ROOT / path).is_dir():              # a folder (the lab guide opens every chapter at once)
            return []
        problems = [] if path == expected else [f"launches {path}, not this page's source {expected}"]
        if not (ROOT / path).is_file():
            problems.append(f"launches {path}, which is not in the repository")
        return problems
    url = links["repository"]
    if href != url and not href.startswith((url + "/", url + "?")):
        return [f"a GitHub link to another repository than repository.url ({url}): {href}"]
    return []


@pytest.mark.parametrize("href, doc, ok", [
    ("https://mybinder.org/v2/gh/tanbias/tanbias/main?urlpath=lab/tree/chapters/01_manifold_hypothesis.md",
     "chapters/01_manifold_hypothesis", True),
    ("https://mybinder.org/v2/gh/tanbias/tanbias/main?urlpath=lab/tree/chapters/01_manifold_hypothesis.md",
     "chapters/02_radial_concentration", False),
    ("https://mybinder.org/v2/gh/someone/else/main?urlpath=lab/tree/chapters/01_manifold_hypothesis.md",
     "chapters/01_manifold_hypothesis", False),
    ("https://mybinder.org/v2/gh/tanbias/tanbias/main?urlpath=lab/tree/chapters/99_missing.md",
     "chapters/99_missing", False),
    ("https://colab.research.google.com/github/tanbias/tanbias/blob/main/chapters/10_dose_response.md",
     "chapters/10_dose_response", False),
    ("https://mybinder.org/v2/gh/tanbias/tanbias/main?urlpath=lab/tree/chapters", "chapters/lab_guide", True),
    ("https://github.com/tanbias/tanbias/issues/new?title=x&amp;body=y", "intro", True),
    ("https://github.com/tanbias/tanbias-old", "intro", False),
    ("https://arxiv.org/abs/2604.08764", "intro", True),
])
def test_launch_link_detector(href, doc, ok):
    links = {**project_links(), "repository": "https://github.com/tanbias/tanbias",
             "binderhub": "https://mybinder.org", "binder": "https://mybinder.org/v2/gh/tanbias/tanbias/main",
             "path_to_book": ""}
    assert (launch_link_problems(href, doc, links) == []) is ok


def test_launch_repository_and_issue_links_derive_from_the_repository_setting(built_book):
    """Every launch, repository and issue link of every built page is formed from
    ``repository`` in _config.yml; no Colab link; each chapter launches its own source on
    Binder, and every page links the repository and its issues."""
    links = project_links()
    bad = {}
    for page in _pages(built_book):
        doc = page.relative_to(built_book.html).with_suffix("").as_posix()
        hrefs = ANCHOR_HREF.findall(page.read_text(encoding="utf8"))
        problems = [p for href in hrefs for p in launch_link_problems(href, doc, links)]
        if doc in toc_docs():
            if doc in toc_notebooks() and not any(h.startswith(links["binder"]) for h in hrefs):
                problems.append("no Binder launch link")
            if links["repository"] not in hrefs or not any(h.startswith(links["issues"]) for h in hrefs):
                problems.append("no repository or issue link")
        if problems:
            bad[doc] = problems
    assert not bad, bad


#: a negative number written with the hyphen-minus: a minus sign before a digit, at the start of a cell or
#: after a space, a bracket, a parenthesis or a comma
HYPHEN_MINUS = re.compile(r"(?:^|[\s\[(,])-\d")


def test_every_table_a_chapter_shows_is_formatted_by_the_one_helper(built_book):
    """Every table in a chapter's outputs comes from :func:`tanbias.book.tables.format_table`: its
    class, no index column, and no number printed with more significant digits than the
    helper ever prints (:func:`tanbias.book.tables.too_precise`), nor with the hyphen-minus for the
    minus sign U+2212 (:mod:`tanbias.numerals`), and headers in words: no code name
    such as ``planned_sd`` (:func:`tanbias.book.tables.header`; mathematics aside)."""
    from tanbias.book.tables import CODE_NAME, MAX_DIGITS, TABLE_CLASS, too_precise

    bad, seen = {}, 0
    for doc in toc_notebooks():
        for i, table in enumerate(output_tables(built_book.page(doc).read_text(encoding="utf8"))):
            seen += 1
            problems = []
            if TABLE_CLASS not in table["class"].split():
                problems.append(f"not made by tanbias.book.tables.format_table (class {table['class']!r})")
            if any("row_heading" in h or "index_name" in h for h in table["headings"]):
                problems.append("an index column")
            long = [n for cell in table["cells"] for n in too_precise(cell, MAX_DIGITS)]
            if long:
                problems.append(f"numbers with more than {MAX_DIGITS} significant digits: {long[:8]}")
            hyphens = [cell for cell in table["cells"] if HYPHEN_MINUS.search(cell)]
            if hyphens:
                problems.append(f"numbers with a hyphen-minus, not U+2212 (tanbias.numerals): {hyphens[:8]}")
            code = [h for h in table["header_texts"] if CODE_NAME.search(re.sub(r"\\\(.*?\\\)", "", h))]
            if code:
                problems.append(f"headers that are code names: {code}; give them words in tables.HEADER_WORDS")
            if problems:
                bad[f"{doc}, table {i + 1}"] = problems
    assert seen, "no chapter shows a table: the test reads nothing"
    assert not bad, bad


CITATION_LINK = re.compile(r'<a class="[^"]*\btanbias-citation\b[^"]*" href="([^"#]*)#([^"]+)"([^>]*)>(.*?)</a>', re.S)


def test_citations_link_their_entry_in_the_bibliography(built_book):
    """A citation (a link to a paper of references.bib, tanbias.book._sphinxext) links its entry in
    the bibliography, which lists every cited entry, with the entry on hover."""
    from tanbias.book._sphinxext import bibliography_entries

    html = built_book.html
    entries = {}
    for page in _pages(built_book):
        for m in re.finditer(r'<div class="citation" id="([^"]+)"[^>]*>(.*?)</div>', page.read_text(encoding="utf8"), re.S):
            entries[(page.relative_to(html).as_posix(), m[1])] = re.sub(r"<[^>]+>", "", m[2])
    assert len(entries) == len(bibliography_entries()), "the bibliography does not list every entry"
    seen = 0
    for page in _pages(built_book):
        text = page.read_text(encoding="utf8")
        for href, anchor, attributes, label in CITATION_LINK.findall(text):
            seen += 1
            assert 'title="' in attributes, f"{page.name}: citation {label!r} shows no entry on hover"
            target = (page.parent / href).resolve().relative_to(html.resolve()).as_posix() if href \
                else page.relative_to(html).as_posix()
            assert (target, anchor) in entries, f"{page.name}: citation {label!r} links {href}#{anchor}, no entry"
            year = re.search(r"\d{4}", label)[0]
            assert year in entries[(target, anchor)], (label, entries[(target, anchor)][:80])
    assert seen >= len(bibliography_entries()), f"only {seen} citations in the book"


def _rows(table) -> list[dict]:
    """The rows of a table of :func:`bookhelpers.output_tables`, ``{header: cell}`` each."""
    heads = table["header_texts"]
    body = table["cells"][len(heads):]
    return [dict(zip(heads, body[i:i + len(heads)])) for i in range(0, len(body), len(heads))]


def test_the_closing_page_offers_every_verdict_as_a_csv_file_equal_to_its_tables(built_book):
    """The CSV file the closing page links is in the built book (offline, under _downloads) and holds the
    page's two tables: the same rows, in order, with the same words; the headline figure's SVG file is
    there too, and the page shows it."""
    import csv
    import io
    import xml.etree.ElementTree as ET

    page = built_book.page("chapters/conclusions")
    text = page.read_text(encoding="utf8")
    links = dict.fromkeys(h for h in HREF.findall(text) if h.endswith((".csv", ".svg")))
    files = {Path(h).suffix: (page.parent / h).resolve() for h in links}
    assert set(files) == {".csv", ".svg"} and all(f.is_file() for f in files.values()), links
    assert all("_downloads" in f.parts and built_book.html in f.parents for f in files.values())
    rows = list(csv.DictReader(io.StringIO(files[".csv"].read_text(encoding="utf-8"))))
    verdicts, survival = (_rows(t) for t in output_tables(text)[:2])
    assert len(rows) == len(verdicts) + len(survival) and verdicts and survival
    name = ""
    for row, shown in zip(rows, verdicts):
        name = shown["property"] or name
        assert row["property"] == name
        for column in ("line of evidence", "verdict", "the rule's word", "kind", "rule", "qualifier"):
            assert row[column] == shown[column], (column, row[column], shown[column])
    for row, shown in zip(rows[len(verdicts):], survival):
        assert (row["property"], row["verdict"], row["what is re-read"], row["by the earlier rule"]) == (
            shown["property"], shown["against the rivals"], shown["what is re-read"], shown["by the earlier rule"])
        assert row["re-readings that cannot decide"] == shown["re-readings that cannot decide"]
    assert ET.parse(files[".svg"]).getroot().tag == "{http://www.w3.org/2000/svg}svg"
    assert re.search(r'<img[^>]+src="[^"]+\.svg"', text), "the page does not show the headline figure"
