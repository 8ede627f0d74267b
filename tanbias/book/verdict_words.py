"""The verdict words a reader sees, each with the rule that gives it and its glossary entry.

``data/preregistration/verdict-words.toml`` (:data:`INDEX`) is the index. ``[words]`` gives every
verdict word, rule word and judgement word that a guarded page may state, with its rule's file and
key, when that rule was fixed, and its anchor in ``chapters/glossary.md``. ``[terms]`` gives the
book's in-house terms, each with its glossary anchor. ``[watch]`` lists judgement words and hedges
that need a rule whenever a guarded page uses one. This module reads what a reader sees and finds
those words in it:

* :func:`guarded_pages`, :func:`guarded_text`: the introduction, the closing page, and each lab
  chapter's "What this chapter finds" box (:func:`findings_box`);
* :func:`visible_text`: a page's prose as the reader sees it (code cells, role contents, inline
  code, math, link targets and labels left out), and :func:`glued_keys` the glued values it shows;
* :func:`reading_words`, :func:`find_words`: every word of the index, of the watch list, of the
  glossary's word entries and every term, bold or not, in any case, the longest first;
* :func:`table_words`: the same in every cell and header of a table a code cell draws;
* :func:`unknown_words`: the words found that have no entry in the index;
* :func:`glossary_anchors`, :func:`glossary_words`: the glossary's labels and the words of its
  word entries;
* :func:`link_first_uses`: a page's text with the first use of each indexed word or term linked
  to its glossary entry.

``tests/test_verdict_words.py`` applies them to the pages, to the tables of the closing page and
to the index itself.
"""

from __future__ import annotations

import functools
import re
import tomllib
from pathlib import Path

from tanbias._checks import check_instance
from tanbias.lab.analysis.registered import REGISTRATION_DIR
from tanbias.lab.runs import ROOT

__all__ = ["INDEX", "GLOSSARY", "FINDINGS_BOX", "LAB_CHAPTERS", "PROSE_DIRECTIVES", "index", "guarded_pages",
           "findings_box", "guarded_text", "visible_text", "glued_keys", "glossary_anchors", "glossary_words",
           "reading_words", "find_words", "table_words", "unknown_words", "link_first_uses"]

#: the index of verdict words, terms and watched words
INDEX = REGISTRATION_DIR / "verdict-words.toml"
#: the glossary, which gives every word and term of the index its own anchor
GLOSSARY = ROOT / "chapters" / "glossary.md"
#: the title of the box that opens a lab chapter (DESIGN.md, "Chapters"): the guarded part of the chapter
FINDINGS_BOX = "What this chapter finds"
#: the lab chapters, whose findings boxes are guarded
LAB_CHAPTERS = tuple(range(7, 15))
#: directives whose body is prose a reader sees; every other fenced block (code cells, math, code) is not
PROSE_DIRECTIVES = frozenset({"admonition", "note", "important", "tip", "warning", "caution", "attention", "hint",
                              "seealso", "dropdown", "margin", "topic", "sidebar", "epigraph"})

_FENCE = re.compile(r"^\s*(`{3,}|:{3,})\s*(?:\{([\w:-]+)\})?\s*(.*?)\s*$")
_OPTION = re.compile(r"^\s*:[\w-]+:")
_FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.S)
_GLUED = re.compile(r'\{eval\}`glued\["([A-Za-z][A-Za-z0-9_]*)(?::[^"\]]*)?"\]`')
_ROLE = re.compile(r"\{[\w:-]+\}`[^`]*`")
_CODE = re.compile(r"`[^`\n]*`")
_MATH = re.compile(r"\$\$.*?\$\$|(?<![\\$])\$[^$\n]+\$", re.S)
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)\s]*\)")
_TARGET = re.compile(r"^\([\w:-]+\)=[ \t]*$", re.M)
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_ANCHOR = re.compile(r"^\((glossary-[a-z0-9-]+)\)=[ \t]*$", re.M)
_WORD_ENTRY = re.compile(r"^(?:\(glossary-word-[a-z0-9-]+\)=[ \t]*\n)+\n*([^\n]+)\n:", re.M)


def index(path=None) -> dict:
    """The index (:data:`INDEX`, or ``path``), parsed.

    >>> idx = index()
    >>> idx["words"]["supported"]["file"], "glossary" in idx["words"]["supported"]
    ('causal.toml', True)
    """
    return tomllib.loads(Path(path or INDEX).read_text(encoding="utf8"))


def guarded_pages(root=None) -> list[Path]:
    """The pages the guard reads: ``intro.md``, ``chapters/conclusions.md`` and every lab chapter
    (:data:`LAB_CHAPTERS`, whose findings box alone is read: :func:`guarded_text`).

    >>> [p.name for p in guarded_pages()][:3]
    ['intro.md', 'conclusions.md', '07_alignment_test.md']
    """
    root = Path(root or ROOT)
    chapters = [p for n in LAB_CHAPTERS for p in sorted((root / "chapters").glob(f"{n:02d}_*.md"))]
    return [root / "intro.md", root / "chapters" / "conclusions.md", *chapters]


def findings_box(markdown: str) -> str:
    """The "What this chapter finds" admonition of a chapter (:data:`FINDINGS_BOX`), its fences
    included; ``""`` when the chapter has none.

    >>> findings_box("Intro.\\n```{admonition} What this chapter finds\\n* **It holds.**\\n```\\nMore.")
    '```{admonition} What this chapter finds\\n* **It holds.**\\n```'
    """
    lines = markdown.splitlines()
    for i, line in enumerate(lines):
        m = _FENCE.match(line)
        if m and m[2] == "admonition" and m[3] == FINDINGS_BOX:
            for j in range(i + 1, len(lines)):
                if lines[j].strip() == m[1]:
                    return "\n".join(lines[i:j + 1])
            return "\n".join(lines[i:])
    return ""


def guarded_text(path) -> str:
    """What the guard reads of a page of :func:`guarded_pages`: a lab chapter's findings box, every
    other page whole (Markdown, before :func:`visible_text`)."""
    path = Path(path)
    text = path.read_text(encoding="utf8")
    return findings_box(text) if re.match(r"\d\d_", path.name) else text


def _prose_lines(markdown: str) -> list[str | None]:
    """Each line of ``markdown``, or None where a reader sees none of it: front matter, fenced code
    (code cells, math, code blocks), fences and the options of prose directives. The title of a
    prose directive (an admonition's) is kept, on the fence's line."""
    text = _FRONT_MATTER.sub(lambda m: "\n" * m.group(0).count("\n"), markdown)
    out: list[str | None] = []
    stack: list[str] = []            # the fences of the prose directives we are in
    skip = None                      # the fence of the code block we are in
    options = False
    for line in text.split("\n"):
        m = _FENCE.match(line)
        if skip is not None:
            out.append(None)
            if m and m[1][0] == skip[0] and len(m[1]) >= len(skip) and not m[2] and not m[3]:
                skip = None
            continue
        if m and not m[2] and not m[3] and stack and m[1] == stack[-1]:
            stack.pop()
            out.append(None)
            continue
        if m and (m[2] in PROSE_DIRECTIVES):
            stack.append(m[1])
            out.append(m[3])
            options = True
            continue
        if m:
            skip = m[1]
            out.append(None)
            continue
        if options and _OPTION.match(line):
            out.append(None)
            continue
        options = False
        out.append(line)
    return out


def visible_text(markdown: str, glued: dict | None = None) -> str:
    """The prose of ``markdown`` as a reader sees it: front matter, code cells, code blocks and math
    left out, MyST role contents and inline code dropped, a link's text kept without its target,
    labels (``(label)=``), directive options and comments dropped. A glued value (``{eval}`` of
    ``glued["key"]``) is shown as ``glued[key]`` where ``glued`` has the key, and dropped otherwise.

    >>> md = 'A **{eval}`glued["verdict_x"]`** [cone](glossary.md#glossary-anisotropy), `code` and $t^2$.'
    >>> visible_text(md), visible_text(md, {"verdict_x": "partly"})
    ('A **** cone, and .', 'A **partly** cone, and .')
    """
    glued = glued or {}
    lines = [line for line in _prose_lines(markdown) if line is not None]
    text = _COMMENT.sub(" ", "\n".join(lines))
    text = _TARGET.sub("", text)
    text = _GLUED.sub(lambda m: str(glued[m[1]]) if m[1] in glued else "", text)
    text = _ROLE.sub("", text)
    text = _CODE.sub("", text)
    text = _MATH.sub("", text)
    return _LINK.sub(lambda m: m[1], text)


def glued_keys(markdown: str) -> list[str]:
    """The keys of the glued values a reader sees in ``markdown`` (code cells left out), in order.

    >>> glued_keys('**{eval}`glued["verdict_premise"]`**, ×{eval}`glued["ch12_ratio:.2f"]`')
    ['verdict_premise', 'ch12_ratio']
    """
    lines = [line for line in _prose_lines(markdown) if line is not None]
    return [m[1] for m in _GLUED.finditer("\n".join(lines))]


def glossary_anchors(text: str | None = None) -> set[str]:
    """The labels ``(glossary-...)=`` of the glossary (``text``, default :data:`GLOSSARY`'s).

    >>> "glossary-verdict-words" in glossary_anchors()
    True
    """
    text = GLOSSARY.read_text(encoding="utf8") if text is None else text
    return set(_ANCHOR.findall(text))


def _entry_words(term: str) -> list[str]:
    """The words a glossary entry defines: its term without emphasis and parentheticals."""
    term = re.sub(r"\([^)]*\)", "", term.replace("*", "").replace("\\", ""))
    return [" ".join(w.split()).lower() for w in term.split(",") if w.strip()]


def glossary_words(text: str | None = None) -> dict[str, str]:
    """``{word: anchor}``: the words the glossary defines as verdict or rule words, each entry
    labelled ``(glossary-word-...)=`` (a definition list of one term; several labels stacked
    before a term that names several words, ``removes, removed``, one per word), parentheticals
    left out.

    >>> glossary_words("(glossary-word-no-cost)=\\n*no cost* (possibly adaptive)\\n: The surgery ...")
    {'no cost': 'glossary-word-no-cost'}
    >>> glossary_words("(glossary-word-less)=\\n(glossary-word-more)=\\nless, more\\n: Aliasing ...")
    {'less': 'glossary-word-less', 'more': 'glossary-word-more'}
    """
    text = GLOSSARY.read_text(encoding="utf8") if text is None else text
    out = {}
    for m in _WORD_ENTRY.finditer(text):
        labels = re.findall(r"\((glossary-word-[a-z0-9-]+)\)=", m.group(0))
        words = _entry_words(m[1])
        if len(labels) == len(words):
            out.update(zip(words, labels))
        else:                                  # one label for a term of several words: all share it
            out.update((w, labels[-1]) for w in words)
    return out


def reading_words(idx: dict | None = None, glossary: str | None = None) -> tuple[str, ...]:
    """Every word the guard reads, longest first: the index's words and terms, the watch list and
    the glossary's word entries (:func:`glossary_words`), lower case.

    >>> words = reading_words({"words": {"partly": {}}, "terms": {}, "watch": {"words": ["narrowly"]}}, "")
    >>> words
    ('narrowly', 'partly')
    """
    idx = index() if idx is None else idx
    found = {*idx.get("words", {}), *idx.get("terms", {}), *idx.get("watch", {}).get("words", ()),
             *glossary_words(glossary)}
    return tuple(sorted({" ".join(w.lower().split()) for w in found}, key=lambda w: (-len(w), w)))


def _norm(text: str) -> str:
    return " ".join(re.split(r"[\s-]+", text.lower())).strip()


@functools.lru_cache(maxsize=8)
def _pattern(words: tuple[str, ...]) -> re.Pattern:
    alternatives = [r"[\s-]+".join(re.escape(part) for part in re.split(r"[\s-]+", w)) for w in words]
    return re.compile(r"(?<![\w-])(?:" + "|".join(alternatives) + r")(?![\w-])", re.I)


def _matches(text: str, words: tuple[str, ...]):
    """``(start, end, word)`` of each use of one of ``words`` in ``text``, longest word first at a place."""
    if not words:
        return
    canonical = {_norm(w): w for w in words}
    for m in _pattern(words).finditer(text):
        yield m.start(), m.end(), canonical[_norm(m.group(0))]


def find_words(text: str, words) -> list[str]:
    """Each use of one of ``words`` in ``text``, in order: any case, a space or a hyphen between
    the parts of a phrase, whole words only, the longest word at each place.

    >>> find_words("It **Partly survives**, narrowly; partly-survives", ("partly survives", "partly", "narrowly"))
    ['partly survives', 'narrowly', 'partly survives']
    """
    words = tuple(sorted({" ".join(w.lower().split()) for w in words}, key=lambda w: (-len(w), w)))
    return [w for _, _, w in _matches(text, words)]


def table_words(table, words) -> list[tuple[object, str, str]]:
    """``(row, column, word)`` for each use of one of ``words`` in a table a code cell draws: every
    cell that holds text (qualifiers included) and every column header (row ``None``).

    >>> import pandas as pd
    >>> t = pd.DataFrame({"verdict": ["partly"], "qualifier": ["narrowly, on IsoScore* alone"]})
    >>> table_words(t, ("partly", "narrowly"))
    [(0, 'verdict', 'partly'), (0, 'qualifier', 'narrowly')]
    """
    out = [(None, str(column), w) for column in table.columns for w in find_words(str(column), words)]
    for row, values in table.iterrows():
        for column, value in values.items():
            if isinstance(value, str):
                out += [(row, str(column), w) for w in find_words(value, words)]
    return out


def unknown_words(found, idx: dict | None = None) -> list[str]:
    """The words of ``found`` that are neither a word of the index (which gives each its rule) nor
    one of its terms, sorted, once each.

    >>> unknown_words(["partly", "narrowly", "shared mean"],
    ...               {"words": {"partly": {}}, "terms": {"shared mean": "glossary-shared-mean"}})
    ['narrowly']
    """
    idx = index() if idx is None else idx
    known = {" ".join(w.lower().split()) for w in (*idx.get("words", {}), *idx.get("terms", {}))}
    return sorted({w for w in found if w not in known})


def _linkable(markdown: str) -> str:
    """``markdown`` with every character a link may not go in replaced by NUL (lengths kept): front
    matter, code, fences, directive options, headings, the terms of definition lists, labels, roles,
    inline code, math, comments, and the text and target of every existing link."""
    lines = markdown.split("\n")
    masked = []
    for i, (line, kept) in enumerate(zip(lines, _prose_lines(markdown))):
        term = i + 1 < len(lines) and lines[i + 1].startswith(": ")          # a definition list's term
        masked.append("\0" * len(line) if kept is None or kept != line or line.lstrip().startswith("#") or term
                      else line)
    text = "\n".join(masked)
    for pattern in (_COMMENT, _TARGET, _GLUED, _ROLE, _CODE, _MATH, _LINK,
                    re.compile(r"<[^>\n]*>"), re.compile(r"https?://\S+")):
        text = pattern.sub(lambda m: re.sub(r"[^\n]", "\0", m.group(0)), text)
    return text


def link_first_uses(text: str, idx: dict | None = None, glossary: str = "glossary.md") -> str:
    """``text`` (a page's Markdown) with the first use of each indexed word and term linked to its
    glossary entry, ``[word](glossary#anchor)``, as the book links (DESIGN.md, "Chapters").

    A use is one the reader sees (:func:`visible_text`'s prose; headings and the terms of definition
    lists left out). Each glossary entry is linked once: at the first use of any word or term that
    points to it, unless the page links that entry already. A word listed in
    the index's ``[links].skip`` (a common word, linked by hand where it is a rule's word) is never
    linked. ``glossary``: the glossary's path from the page: ``glossary.md`` from ``chapters/``,
    ``chapters/glossary.md`` from ``intro.md``.

    >>> idx = {"words": {"no cost": {"glossary": "glossary-word-no-cost"}},
    ...        "terms": {"shared mean": "glossary-shared-mean"}}
    >>> link_first_uses("# The shared mean\\nThe shared mean moves at no cost; no cost again.", idx)
    '# The shared mean\\nThe [shared mean](glossary.md#glossary-shared-mean) moves at [no cost](glossary.md#glossary-word-no-cost); no cost again.'
    """
    check_instance("text", text, str)
    idx = index() if idx is None else idx
    anchors = {" ".join(w.lower().split()): e["glossary"] for w, e in idx.get("words", {}).items() if e.get("glossary")}
    anchors.update({" ".join(t.lower().split()): a for t, a in idx.get("terms", {}).items()})
    for word in idx.get("links", {}).get("skip", ()):
        anchors.pop(" ".join(word.lower().split()), None)
    words = tuple(sorted(anchors, key=lambda w: (-len(w), w)))
    done = set(re.findall(r"\]\([^)\s]*#(glossary-[a-z0-9-]+)\)", text))     # entries the page links already
    edits = []
    for start, end, word in _matches(_linkable(text), words):
        if anchors[word] not in done:
            done.add(anchors[word])
            edits.append((start, end, f"[{text[start:end]}]({glossary}#{anchors[word]})"))
    for start, end, link in reversed(edits):
        text = text[:start] + link + text[end:]
    return text
