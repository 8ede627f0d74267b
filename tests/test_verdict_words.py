"""The guard of the verdict words (tanbias.book.verdict_words): every word a reader sees on the introduction,
the closing page and each lab chapter's findings box, bold or not, in any case, glued or in a table a code
cell draws, has an entry in data/preregistration/verdict-words.toml. Each entry points to its rule in a
registration or a dated post-hoc file, and to a glossary entry of its own.

The pages, the index and the tables' vocabulary are read here without any analysis of the committed runs
(`make test`); the words the committed analyses actually glue and draw are read by the two tests marked
``committed`` (`make check`)."""
from __future__ import annotations

import itertools
import re
import tomllib
from types import SimpleNamespace

import pandas as pd
import pytest

from tanbias.book import verdict_words as vw
from tanbias.lab.analysis import findings
from tanbias.lab.analysis.registered import REGISTRATION_DIR

IDX = vw.index()
WORDS = vw.reading_words(IDX)
PAGES = vw.guarded_pages()
WHEN = ("registered", "added after the data", "derivation")


def found_on(text: str, glued: dict | None = None) -> list[str]:
    """Every word of :data:`WORDS` a reader sees in ``text`` (a guarded page's Markdown)."""
    return vw.find_words(vw.visible_text(text, glued), WORDS)


def headline_values() -> set[str]:
    """Every word a glued headline (``verdict_<key>``) can show, read without the runs: a cell of the
    grid (findings.WORD_CATEGORY, which every grid word must be in) or findings.property_word's outputs
    (the premise's headline)."""
    readings = ("as predicted", "against", "neither", "undecided")
    outputs = {findings.property_word(r) for n in range(1, 4) for r in itertools.product(readings, repeat=n)}
    return set(findings.WORD_CATEGORY) | outputs


def planted_grid(word: str = "partly", category: str = "partly") -> pd.DataFrame:
    """A verdict grid of one word everywhere, as ``findings.closing_table``'s doctest plants one."""
    rows = [{"property": p, "evidence": e, "word": word, "category": category, "chapter": "08_eurobert_vs_decoder",
             "label": "", "qualifier": "", "rule": "registered", "anisotropy": "both"}
            for p in findings.PROPERTIES for e in findings.EVIDENCE]
    grid = pd.DataFrame(rows)
    grid.attrs["premise_readings"] = ["as predicted"]
    return grid


def unknown_in_tables(grid) -> list[str]:
    """The words of the closing page's two tables, drawn from ``grid``, that the index does not hold."""
    found = [w for table in (findings.closing_table(grid), findings.survival_table(grid))
             for _, _, w in vw.table_words(table, WORDS)]
    return vw.unknown_words(found, IDX)


# ------------------------------------------------------------------ the pages, read without the runs
@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_word_a_guarded_page_uses_has_a_rule(page):
    assert vw.unknown_words(found_on(vw.guarded_text(page)), IDX) == []


@pytest.mark.parametrize("page", PAGES[2:], ids=lambda p: p.name)
def test_every_lab_chapter_opens_with_a_findings_box(page):
    assert vw.FINDINGS_BOX in vw.guarded_text(page)


def test_every_headline_word_a_page_glues_can_only_be_a_word_with_a_rule():
    """The glued headline words are read by their keys: each key is one findings.headline_words gives, and
    every word any of them can show is indexed (the committed words themselves: the committed test)."""
    keys = {k for page in PAGES for k in vw.glued_keys(vw.guarded_text(page)) if k.startswith("verdict_")}
    given = {f"verdict_{k}" for k in findings.headline_words(planted_grid())}
    assert keys and keys <= given, sorted(keys - given)
    assert vw.unknown_words(headline_values(), IDX) == []


def test_a_planted_word_is_caught_bold_or_not_in_any_case():
    intro, closing = (vw.guarded_text(p) for p in PAGES[:2])
    assert vw.unknown_words(found_on(intro + "\n\nThe premise holds, narrowly.\n"), IDX) == ["narrowly"]
    assert vw.unknown_words(found_on(closing + "\n\n**Strongly supported** by every run.\n"), IDX) == ["strongly"]
    assert vw.unknown_words(found_on(closing + "\n\nIt **BARELY** moves.\n"), IDX) == ["barely"]
    planted = intro.replace('{eval}`glued["verdict_premise"]`', '{eval}`glued["verdict_planted"]`')
    assert planted != intro, "the intro quotes the premise's word"
    assert vw.unknown_words(found_on(planted, {"verdict_planted": "clearly against"}), IDX) == ["clearly"]
    assert vw.unknown_words(["overwhelmingly"], IDX) == ["overwhelmingly"]     # a glued headline word, read whole


def test_only_the_findings_box_of_a_lab_chapter_is_read():
    text = PAGES[2].read_text(encoding="utf8")
    box = vw.findings_box(text)
    assert box.endswith("\n```")
    inside = text.replace(box, box[:-3] + "The proxy leans, weakly.\n```", 1)
    assert vw.unknown_words(found_on(vw.findings_box(inside)), IDX) == ["weakly"]
    outside = text + "\n\nThe proxy leans, weakly.\n"
    assert vw.unknown_words(found_on(vw.findings_box(outside)), IDX) == []


def test_what_a_reader_does_not_see_is_not_read():
    text = ("Prose.\n\n```{code-cell} ipython3\nx = 'narrowly'\n```\n\nA role {math}`narrowly`, code `barely`, "
            "$\\mathrm{weakly}$ and a [link](glossary.md#narrowly).\n\n(narrowly-label)=\n")
    assert found_on(text) == []
    box = "```{admonition} Narrowly, a title\n:class: narrowly\nBody, barely.\n```"
    assert found_on(box) == ["narrowly", "barely"]


# ------------------------------------------------------------------ the tables the closing page draws
def test_every_word_the_closing_tables_can_show_has_a_rule():
    """What findings.closing_table and findings.survival_table can put in a cell, read without the runs:
    the six verdicts, the grid's rule words, the survival words and the rule column's sources."""
    shown = {*findings.CATEGORIES, *findings.WORD_CATEGORY, *findings.SURVIVAL_WORDS, *findings.RULES}
    assert vw.unknown_words(shown, IDX) == []
    assert unknown_in_tables(planted_grid()) == []


@pytest.mark.parametrize("column", ["qualifier", "word"])
def test_a_planted_word_in_a_table_is_caught(column):
    grid = planted_grid()
    grid.loc[1, column] = "strongly supported"          # a qualifier, or the rule's word the table shows
    assert unknown_in_tables(grid) == ["strongly"]
    survival = planted_grid()
    survival.loc[(survival["property"] == "balancing") & (survival["evidence"] == "rivals"), "word"] = "barely survives"
    assert unknown_in_tables(survival) == ["barely"]


# ------------------------------------------------------------------ the index and the glossary
def test_every_rule_the_index_names_is_in_its_file():
    for word, entry in IDX["words"].items():
        assert entry["when"] in WHEN, word
        if entry["when"] == "derivation":
            assert entry["file"] == "", word
            continue
        path = REGISTRATION_DIR / entry["file"]
        posthoc = entry["file"].endswith("-posthoc.toml")
        assert path.exists() and entry["file"] != vw.INDEX.name, (word, entry["file"])
        node = tomllib.loads(path.read_text(encoding="utf8"))
        assert (entry["when"] == "added after the data") == posthoc, word
        assert not posthoc or node["meta"]["date"], (word, "a post-hoc file is dated")
        for part in entry["key"].split("."):
            node = node[part]
        assert isinstance(node, str) and node, (word, entry["key"])
        named = word.replace(" ", "_") in entry["key"] or any(w in node for w in word.split() if w != "not")
        assert named, (word, entry["file"], entry["key"])


def test_every_word_and_term_has_its_own_glossary_anchor():
    anchors = vw.glossary_anchors()
    entries = vw.glossary_words()
    for word, entry in IDX["words"].items():
        assert entry["glossary"] in anchors, (word, entry["glossary"])
        assert entries.get(word) == entry["glossary"], (word, "the glossary's entry of that word has another label")
    own = [entry["glossary"] for entry in IDX["words"].values()]
    assert len(set(own)) == len(own), "two words share one glossary entry"
    missing = {term: anchor for term, anchor in IDX["terms"].items() if anchor not in anchors}
    assert not missing, f"terms whose glossary anchor is not in chapters/glossary.md: {missing}"


def test_every_glossary_anchor_is_a_label_the_book_links_to():
    """tanbias.book._sphinxext turns ``glossary.md#label`` into a reference to ``label`` lower-cased: a
    label is lower case, letters, digits and hyphens, and once on the page."""
    text = vw.GLOSSARY.read_text(encoding="utf8")
    labels = [line[1:-2] for line in text.splitlines() if line.startswith("(glossary-") and line.endswith(")=")]
    assert labels and all(label == label.lower() for label in labels)
    assert len(labels) == len(set(labels)) == len(vw.glossary_anchors(text))


def test_the_watch_list_holds_no_word_twice_and_the_links_skip_only_indexed_words():
    watch = IDX["watch"]["words"]
    assert len(watch) == len(set(watch))
    known = {*IDX["words"], *IDX["terms"]}
    assert set(IDX["links"]["skip"]) <= known


# ------------------------------------------------------------------ linking the first uses
def test_the_first_use_of_each_word_links_to_its_glossary_entry():
    intro = PAGES[0].read_text(encoding="utf8")
    linked = vw.link_first_uses(intro, IDX, glossary="chapters/glossary.md")
    anchors = vw.glossary_anchors()
    added = re.findall(r"\]\(chapters/glossary\.md#([a-z0-9-]+)\)", linked)
    assert added and set(added) <= anchors
    assert vw.visible_text(linked) == vw.visible_text(intro)             # the reader's words are unchanged
    assert vw.link_first_uses(linked, IDX, glossary="chapters/glossary.md") == linked      # once only
    code = [line for line in linked.split("```")[1::2]]
    assert not any("glossary.md#" in block for block in code)            # no link inside code


def test_only_the_first_use_of_an_entry_is_linked_and_headings_and_terms_are_left():
    idx = {"words": {"halves": {"glossary": "glossary-word-halves"}}, "terms": {"shared mean": "glossary-shared-mean",
           "registered rule": "glossary-registered", "fixed before the runs": "glossary-registered"},
           "links": {"skip": ["shared mean"]}}
    text = ("# It halves\n\nIt halves the shared mean; it halves again.\n\nRegistered rule\n: A rule fixed before "
            "the runs; a registered rule.\n")
    assert vw.link_first_uses(text, idx) == (
        "# It halves\n\nIt [halves](glossary.md#glossary-word-halves) the shared mean; it halves again.\n\n"
        "Registered rule\n: A rule [fixed before the runs](glossary.md#glossary-registered); a registered rule.\n")
    linked = "See [the rule](glossary.md#glossary-registered). A registered rule.\n"
    assert vw.link_first_uses(linked, idx) == linked


# ------------------------------------------------------------------ the committed words (make check)
@pytest.fixture(scope="module")
def headline():
    """The committed grid and every word a guarded page glues, as the closing page glues them."""
    from tanbias.lab.analysis import pretrained_report, sweep_report
    from tanbias.lab.experiments import EXPERIMENTS

    a = findings.analyses()
    grid = findings.verdict_grid(a)
    numbers = {f"ch{EXPERIMENTS[name].chapter}_{k}": v
               for name, report in findings.REPORTS.items() for k, v in report.numbers(a[name]).items()}
    numbers.update({f"end_{k}": v for k, v in sweep_report.claim_numbers(a["sweep"]).items()})
    numbers.update({f"ch9_{k}": v for k, v in pretrained_report.numbers(a["pretrained"]).items()})
    numbers.update({f"verdict_{k}": v for k, v in findings.headline_words(grid).items()})
    return SimpleNamespace(grid=grid, glued={k: v for k, v in numbers.items() if isinstance(v, str)})


@pytest.mark.committed
@pytest.mark.slow
def test_every_word_the_committed_pages_glue_has_a_rule(headline):
    for page in PAGES:
        text = vw.guarded_text(page)
        keys = [k for k in vw.glued_keys(text) if k in headline.glued]
        assert vw.unknown_words([headline.glued[k] for k in keys if k.startswith("verdict_")], IDX) == [], page.name
        assert vw.unknown_words(found_on(text, headline.glued), IDX) == [], page.name


@pytest.mark.committed
@pytest.mark.slow
def test_every_word_the_committed_tables_show_has_a_rule(headline):
    assert unknown_in_tables(headline.grid) == []
