"""Every verdict word the introduction and the closing page state has a rule in a registration or a
post-hoc file (data/preregistration/verdict-words.toml points to it)."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
INDEX = ROOT / "data" / "preregistration" / "verdict-words.toml"
PAGES = (ROOT / "intro.md", ROOT / "chapters" / "conclusions.md")
CODE = re.compile(r"```\{code-cell\}.*?```", re.S)
BOLD = re.compile(r"\*\*([^*]+?)\*\*")
GLUED = re.compile(r'\{eval\}`glued\["(verdict_[a-z_]+)"\]`')


def index() -> dict:
    return tomllib.loads(INDEX.read_text())


def verdict_spans(text: str) -> list[str]:
    """The bold spans of a page's prose (code cells left out) that could be verdict words: those that
    start in lower case, and the glued headline words (their keys)."""
    prose = CODE.sub("", text)
    out = []
    for span in BOLD.findall(prose):
        glued = GLUED.fullmatch(span.strip())
        if glued:
            out.append(glued.group(1))
        elif span[:1].islower():
            out.append(span.strip())
    return out


def unknown_words(text: str, headline: dict) -> list[str]:
    """The spans of :func:`verdict_spans` that are neither a word of the index nor a term it names.
    ``headline`` maps a glued key (``verdict_<name>``) to the word it glues."""
    idx = index()
    known, terms = set(idx["words"]), set(idx["terms"]["names"])
    out = []
    for span in verdict_spans(text):
        word = headline.get(span, span)
        if word not in known and word not in terms:
            out.append(word)
    return out


@pytest.fixture(scope="module")
def headline():
    from tanbias.lab.analysis import findings

    grid = findings.verdict_grid()
    return {f"verdict_{k}": v for k, v in findings.headline_words(grid).items()}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
@pytest.mark.slow
def test_every_verdict_word_on_the_page_has_a_rule(page, headline):
    assert unknown_words(page.read_text(), headline) == []


def test_a_planted_word_is_caught(headline):
    text = PAGES[1].read_text() + "\n\nThe premise is **strongly supported** by everything.\n"
    assert unknown_words(text, headline) == ["strongly supported"]
    glued = PAGES[0].read_text().replace('**{eval}`glued["verdict_premise"]`**', '**{eval}`glued["verdict_planted"]`**')
    assert unknown_words(glued, {**headline, "verdict_planted": "overwhelmingly"}) == ["overwhelmingly"]


def test_every_rule_the_index_names_is_in_its_file():
    for word, entry in index()["words"].items():
        assert entry["when"] in ("registered", "added after the data", "not registered", "derivation"), word
        if entry["when"] == "derivation":
            assert entry["file"] == "", word
            continue
        node = tomllib.loads((ROOT / "data" / "preregistration" / entry["file"]).read_text())
        for part in entry["key"].split("."):
            node = node[part]
        assert isinstance(node, str) and node, (word, entry["key"])
        named = word.replace(" ", "_") in entry["key"] or any(w in node for w in word.split() if w != "not")
        assert named, (word, entry["file"], entry["key"])
        if entry["file"].endswith("-posthoc.toml"):
            assert entry["when"] == "added after the data", word
