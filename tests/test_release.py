"""Ready to be reused and cited: the licences, ``CITATION.cff``, the changelog, the version.

* ``CITATION.cff`` follows the Citation File Format 1.2.0: a schema of its required keys and of
  the types of the keys this file uses, checked with jsonschema (broken files fail it);
* the version agrees everywhere: ``tanbias.__version__`` (its one source), the installed
  distribution, ``CITATION.cff``, the changelog's latest release, the footer of every built page;
* the footer names both licences, the ones ``LICENSE`` and ``LICENSE-text.md`` hold, and the
  built site carries the front-end assets' licence texts.

The command, ``tanbias --version`` included, is tested in ``test_tanbias_main.py``.
"""

from __future__ import annotations

import datetime
import re

import pytest
import yaml

import tanbias
from bookhelpers import ROOT, project_links, toc_docs
from tanbias.errors import ParameterError

CITATION = ROOT / "CITATION.cff"
CHANGELOG = ROOT / "CHANGELOG.md"

# ------------------------------------------------------------------ CITATION.cff
_TEXT = {"type": "string", "minLength": 1}
_URL = {"type": "string", "pattern": r"^(https|http|ftp|sftp)://\S+$"}
_DATE = {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"}
_SPDX = {"type": "string", "pattern": r"^[A-Za-z0-9.+-]+$"}
_PERSON_KEYS = ("address", "affiliation", "alias", "city", "country", "email", "family-names", "fax",
                "given-names", "name-particle", "name-suffix", "orcid", "post-code", "region", "tel", "website")
_ENTITY_KEYS = ("address", "alias", "city", "country", "date-end", "date-start", "email", "fax", "location",
                "name", "orcid", "post-code", "region", "tel", "website")
#: a person names themself (family or given names, or an alias: stricter than the format, which
#: lets a person be an affiliation alone); an entity has a name
_PERSON = {"type": "object", "properties": {k: _TEXT for k in _PERSON_KEYS}, "additionalProperties": False,
           "anyOf": [{"required": ["family-names"]}, {"required": ["given-names"]}, {"required": ["alias"]}]}
_ENTITY = {"type": "object", "properties": {k: _TEXT for k in _ENTITY_KEYS}, "required": ["name"],
           "additionalProperties": False}
_AUTHORS = {"type": "array", "minItems": 1, "items": {"anyOf": [_PERSON, _ENTITY]}}
_IDENTIFIER = {"type": "object", "required": ["type", "value"], "additionalProperties": False,
               "properties": {"type": {"enum": ["doi", "url", "swh", "other"]}, "value": _TEXT,
                              "description": _TEXT}}
#: the reference types of CFF 1.2.0
REFERENCE_TYPES = (
    "art", "article", "audiovisual", "bill", "blog", "book", "catalogue", "conference-paper", "conference",
    "data", "database", "dictionary", "edited-work", "encyclopedia", "film-broadcast", "generic",
    "government-document", "grant", "hearing", "historical-work", "legal-case", "legal-rule",
    "magazine-article", "manual", "map", "multimedia", "music", "newspaper-article", "pamphlet", "patent",
    "personal-communication", "proceedings", "report", "serial", "slides", "software-code",
    "software-container", "software-executable", "software-virtual-machine", "software", "sound-recording",
    "standard", "statute", "thesis", "unpublished", "video", "website")
#: a reference: its required keys, and the types of the keys ours use (CFF has some seventy more)
_REFERENCE = {"type": "object", "required": ["authors", "title", "type"],
              "properties": {"authors": _AUTHORS, "title": _TEXT, "type": {"enum": list(REFERENCE_TYPES)},
                             "year": {"type": "integer"}, "url": _URL, "collection-title": _TEXT,
                             "conference": _ENTITY, "volume": {"type": ["integer", "string"]},
                             "identifiers": {"type": "array", "minItems": 1, "items": _IDENTIFIER},
                             "doi": {"type": "string", "pattern": r"^10\.\d{4,9}/\S+$"}}}
#: CFF 1.2.0's required keys, the type of every key the format defines at the top, and no other key
CFF_SCHEMA = {
    "type": "object",
    "required": ["authors", "cff-version", "message", "title"],
    "additionalProperties": False,
    "properties": {
        "cff-version": {"const": "1.2.0"},
        "message": _TEXT, "title": _TEXT, "abstract": _TEXT, "authors": _AUTHORS, "contact": _AUTHORS,
        "version": {"type": ["string", "number"]}, "date-released": _DATE, "commit": _TEXT,
        "license": {"anyOf": [_SPDX, {"type": "array", "minItems": 1, "uniqueItems": True, "items": _SPDX}]},
        "license-url": _URL, "repository": _URL, "repository-artifact": _URL, "repository-code": _URL,
        "url": _URL, "doi": {"type": "string", "pattern": r"^10\.\d{4,9}/\S+$"},
        "identifiers": {"type": "array", "minItems": 1, "items": _IDENTIFIER},
        "keywords": {"type": "array", "minItems": 1, "items": _TEXT},
        "type": {"enum": ["software", "dataset"]},
        "references": {"type": "array", "minItems": 1, "items": _REFERENCE},
        "preferred-citation": _REFERENCE,
    },
}


def _plain(value):
    """YAML's dates as the ISO strings CFF writes (a CFF reader sees the text)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, datetime.date):
        return value.isoformat()
    return value


def cff_problems(text: str) -> list[str]:
    """What keeps ``text`` from being a CFF 1.2.0 file (:data:`CFF_SCHEMA`); [] when nothing does."""
    import jsonschema

    try:
        data = _plain(yaml.safe_load(text))
    except yaml.YAMLError as exc:
        return [f"not YAML: {exc}"]
    validator = jsonschema.Draft7Validator(CFF_SCHEMA)
    return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
            for e in sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))]


def citation() -> dict:
    return _plain(yaml.safe_load(CITATION.read_text(encoding="utf8")))


def test_citation_file_is_valid_cff():
    problems = cff_problems(CITATION.read_text(encoding="utf8"))
    assert not problems, "CITATION.cff is not valid CFF 1.2.0:\n" + "\n".join(problems)


@pytest.mark.slow
def test_citation_file_cites_the_paper_the_book_tests():
    """The paper is a reference, with the authors, title, year and address of references.bib."""
    from tanbias.book._sphinxext import bibliography_entries

    entry = bibliography_entries()["bernas2026anisotropy"]
    refs = [r for r in citation()["references"] if r.get("url") in entry["urls"]]
    assert len(refs) == 1, "CITATION.cff's references do not cite the paper the book tests"
    ref = refs[0]
    assert [a["family-names"] for a in ref["authors"]] == ["Bernas", "Jourdan", "Poché", "Hudelot"]
    assert str(ref["year"]) == entry["year"] and "Revisiting Anisotropy" in ref["title"]
    assert {"type": "other", "value": "arXiv:2604.08764"}.items() <= ref["identifiers"][0].items()


def _broken(mutate) -> str:
    data = citation()
    mutate(data)
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False)


@pytest.mark.parametrize("why, mutate", [
    ("no title", lambda d: d.pop("title")),
    ("no message", lambda d: d.pop("message")),
    ("no authors", lambda d: d.update(authors=[])),
    ("an author without a name", lambda d: d.update(authors=[{"affiliation": "somewhere"}])),
    ("a misspelt key", lambda d: d.update(licence=d.pop("license"))),
    ("another format version", lambda d: d.update({"cff-version": "1.1.0"})),
    ("a date that is not ISO", lambda d: d.update({"date-released": "4 December 2026"})),
    ("a licence that is not an SPDX id", lambda d: d.update(license="MIT License")),
    ("a reference without a type", lambda d: d["references"][0].pop("type")),
    ("a reference of no CFF type", lambda d: d["references"][0].update(type="paper")),
    ("an address that is not a URL", lambda d: d.update({"repository-code": "github.com/x/y"})),
])
def test_a_broken_citation_file_fails_the_check(why, mutate):
    assert cff_problems(_broken(mutate)), f"a CITATION.cff with {why} passed the check"


def test_a_copy_written_back_unchanged_passes():
    """The broken files above fail for what was broken, not for how they were written."""
    assert not cff_problems(_broken(lambda d: None))


def test_the_check_reads_a_file_that_is_not_a_mapping():
    assert cff_problems("- just\n- a list\n") and cff_problems("title: [unclosed\n")


# ------------------------------------------------------------------ the version
SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$")
RELEASE = re.compile(r"^## \[(?P<version>[^\]]+)\] - (?P<date>\d{4}-\d{2}-\d{2})\s*$", re.M)


def changelog_releases(text: str) -> list[tuple[str, str]]:
    """``(version, date)`` of every released entry of a Keep-a-Changelog ``text``, newest first."""
    return [(m["version"], m["date"]) for m in RELEASE.finditer(text)]


def test_changelog_has_one_entry_per_release_newest_first():
    text = CHANGELOG.read_text(encoding="utf8")
    releases = changelog_releases(text)
    assert releases, "CHANGELOG.md has no released entry (## [X.Y.Z] - YYYY-MM-DD)"
    assert text.index("## [Unreleased]") < text.index(f"## [{releases[0][0]}]")
    versions = [tuple(map(int, SEMVER.match(v).groups())) for v, _ in releases]
    assert versions == sorted(set(versions), reverse=True), f"not one entry per version, newest first: {releases}"
    dates = [d for _, d in releases]
    assert dates == sorted(dates, reverse=True), dates
    assert "git tag -a vX.Y.Z" in text, "the changelog's header states how releases are tagged"


def test_the_version_agrees_everywhere():
    """One source, ``tanbias.__version__``; the installed distribution, CITATION.cff and the
    changelog's latest release say the same, and CITATION.cff's date is that release's."""
    from importlib.metadata import version

    v = tanbias.__version__
    assert SEMVER.match(v), f"tanbias.__version__ = {v!r} is not MAJOR.MINOR.PATCH"
    assert version("tanbias") == v, ("the installed distribution says "
                                     f"{version('tanbias')}: run `make install` (pip install -e .) again")
    cff = citation()
    assert str(cff["version"]) == v, f"CITATION.cff says version {cff['version']}, the package {v}"
    latest, date = changelog_releases(CHANGELOG.read_text(encoding="utf8"))[0]
    assert latest == v, f"CHANGELOG.md's latest release is {latest}, the package's version {v}"
    assert cff["date-released"] == date, f"CITATION.cff is dated {cff['date-released']}, the release {date}"


def test_no_second_copy_of_the_version():
    """pyproject.toml reads the version from the package; _config.yml and the introduction
    hold none (the book's footer is filled from the package at build time)."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "tanbias.__version__"}
    for name in ("_config.yml", "intro.md"):
        assert tanbias.__version__ not in (ROOT / name).read_text(encoding="utf8"), name


def test_the_introduction_cites_the_book_as_citation_cff_does():
    """The BibTeX of the introduction's "How to cite" and CITATION.cff: one title, year, address
    and author."""
    from pybtex.database import parse_string

    block = re.search(r"```bibtex\n(.*?)```", (ROOT / "intro.md").read_text(encoding="utf8"), re.S)
    assert block, "intro.md shows no BibTeX entry"
    (entry,) = parse_string(block[1], "bibtex").entries.values()
    cff = citation()
    assert entry.fields["title"] == cff["title"]
    assert entry.fields["year"] == cff["date-released"][:4]
    assert entry.fields["url"] == cff["repository-code"] == project_links()["repository"]
    assert [str(p) for p in entry.persons["author"]] == ["{" + a["name"] + "}" for a in cff["authors"]]


# ------------------------------------------------------------------ the licences
#: the licence of each file, as the file itself names it in its first line, and its SPDX id
LICENCES = {"LICENSE": ("MIT License", "MIT"), "LICENSE-text.md": ("CC BY 4.0", "CC-BY-4.0")}


def footer_template() -> str:
    return yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf8"))["html"]["extra_footer"]


def test_the_footer_names_the_licences_the_licence_files_hold():
    template = footer_template()
    for path, (name, _) in LICENCES.items():
        assert name in (ROOT / path).read_text(encoding="utf8").splitlines()[0], f"{path} is not {name}"
        assert name in template, f"the footer (html.extra_footer in _config.yml) does not name {name}"
    assert citation()["license"] == [spdx for _, spdx in LICENCES.values()]
    assert "{version}" in template


def test_the_footer_is_filled_from_the_package():
    from tanbias.book._sphinxext import footer_html

    links = project_links()
    html = footer_html(footer_template(), tanbias.__version__, links["repository"], links["branch"])
    assert f"tanbias {tanbias.__version__}" in html and "{" not in html
    assert f'href="{links["repository"]}/blob/{links["branch"]}/LICENSE"' in html
    with pytest.raises(ParameterError, match=r"\{version\}"):
        footer_html("Code: MIT.", "1.0.0", links["repository"], links["branch"])


FOOTER = re.compile(r'<div class="extra_footer">(.*?)</div>', re.S)


@pytest.mark.book
def test_every_built_page_shows_the_licences_and_the_version(built_book):
    links = project_links()
    bad = {}
    for doc in toc_docs():
        found = FOOTER.findall(built_book.page(doc).read_text(encoding="utf8"))
        footer = " ".join(found[0].split()) if len(found) == 1 else ""
        wanted = [f"tanbias {tanbias.__version__}", *(name for name, _ in LICENCES.values()),
                  f'href="{links["repository"]}/blob/{links["branch"]}/LICENSE"',
                  'href="https://creativecommons.org/licenses/by/4.0/"']
        missing = [w for w in wanted if w not in footer]
        if missing:
            bad[doc] = missing
    assert not bad, f"pages whose footer lacks: {bad}"


@pytest.mark.book
def test_the_built_site_carries_the_assets_licences(built_book):
    """make assets copies the licence texts of the front-end assets the book serves (data/README.md)."""
    folder = built_book.html / "_static" / "licenses"
    expect = {"mathjax-LICENSE.txt": "Apache License", "plotly-LICENSE.txt": "MIT License",
              "ipywidgets-LICENSE.txt": "Redistribution and use in source and binary forms",
              "html-manager-bundled-NOTICES.txt": "jQuery"}
    for name, words in expect.items():
        assert (folder / name).is_file(), f"{name} is not in the built site's _static/licenses/"
        assert words in (folder / name).read_text(encoding="utf8"), name
