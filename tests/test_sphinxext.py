"""The book's Sphinx glue (tanbias.book._sphinxext), outside a build: the API page's module list and
members, the bibliography read as a citation names it, citation links found in Markdown, and the
footer filled with the package's version. (The built book's use of them is test_book.py's.)"""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path

import pytest

import tanbias
from tanbias.book import _sphinxext as ext
from tanbias.errors import ParameterError

ROOT = Path(__file__).resolve().parents[1]

BIB = r"""
@article{one2020,
  author = {Ethayarajh, Kawin},
  title = {One author},
  year = {2019},
  url = {http://aclanthology.org/D19-1006/}
}
@article{two2021,
  author = {Timkey, William and van Schijndel, Marten},
  title = {Two authors},
  year = {2021},
  doi = {10.18653/v1/2021.emnlp-main.372}
}
@misc{three2026,
  author = {Bernas, Rapha{\"e}l and Jourdan, Fanny and Poch{\'e}, Antonin},
  title = {Three authors},
  year = {2026},
  eprint = {2604.08764},
  archivePrefix = {arXiv}
}
"""


@pytest.fixture
def bib(tmp_path) -> Path:
    path = tmp_path / "refs.bib"
    path.write_text(BIB, encoding="utf8")
    return path


def test_the_public_modules_are_the_package_tree_without_private_parts():
    on_disk = set()
    for path in (ROOT / "tanbias").rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if not any(p.startswith("_") for p in parts[1:]):
            on_disk.add(".".join(parts))
    found = ext.public_modules()
    assert found == sorted(found) and set(found) == on_disk
    assert "tanbias.book._sphinxext" not in found and "tanbias.lab.__main__" not in found


def test_the_api_pages_share_the_modules_out_without_overlap():
    lab, figures = ext.api_modules("tanbias.lab"), ext.api_modules("tanbias.figures")
    rest = ext.api_modules("tanbias", exclude=("tanbias.lab", "tanbias.figures"))
    assert not set(rest) & (set(lab) | set(figures))
    assert set(rest) | set(lab) | set(figures) == set(ext.public_modules())


def test_a_re_exported_name_is_documented_in_its_home_module_only(monkeypatch):
    module = types.ModuleType("tanbias.fake_reexports")
    module.__all__ = ["ParameterError", "own", "CONSTANT"]
    module.ParameterError = ParameterError

    def own():
        """A function of its own."""

    own.__module__ = module.__name__
    module.own, module.CONSTANT = own, 3
    monkeypatch.setitem(sys.modules, module.__name__, module)
    assert ext.own_public_names(module.__name__) == ["own", "CONSTANT"]
    monkeypatch.setitem(sys.modules, "tanbias.fake_no_all", types.ModuleType("tanbias.fake_no_all"))
    assert ext.own_public_names("tanbias.fake_no_all") is None


def test_a_constant_without_a_doc_comment_is_found(tmp_path, monkeypatch):
    (tmp_path / "tanbias_fake_constants.py").write_text(
        "#: documented\nA = 1\nB = 2  # not a doc comment\n\ndef f():\n    pass\n", encoding="utf8")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert ext.undocumented_constants("tanbias_fake_constants", ["A", "B", "f"]) == ["B"]
    assert ext.undocumented_constants("tanbias.palette", ext.own_public_names("tanbias.palette")) == []


@pytest.mark.parametrize("url, same", [("http://x.org/a/", "https://x.org/a"), ("  https://x.org/a  ", "https://x.org/a"),
                                       ("https://x.org/a", "https://x.org/a")])
def test_an_address_is_compared_as_https_without_a_trailing_slash(url, same):
    assert ext.normalize_url(url) == same


def test_the_bibliography_names_authors_as_a_citation_does_with_every_address(bib):
    entries = ext.bibliography_entries(bib)
    assert {k: e["authors"] for k, e in entries.items()} == {
        "one2020": "Ethayarajh", "two2021": "Timkey and van Schijndel", "three2026": "Bernas et al."}
    assert entries["one2020"]["urls"] == ["https://aclanthology.org/D19-1006"]
    assert entries["two2021"]["urls"] == ["https://doi.org/10.18653/v1/2021.emnlp-main.372"]
    assert entries["three2026"]["urls"] == ["https://arxiv.org/abs/2604.08764"]
    assert entries["one2020"]["year"] == "2019"
    assert ext.citation_urls(bib)["https://doi.org/10.18653/v1/2021.emnlp-main.372"] == "two2021"


@pytest.mark.slow
def test_an_edited_bibliography_is_read_again(bib):
    assert "four" not in ext.bibliography_entries(bib)
    bib.write_text(BIB + "@misc{four, author = {Doe, Jane}, year = {2000}, url = {https://d.org}}\n", encoding="utf8")
    os.utime(bib, ns=(bib.stat().st_atime_ns, bib.stat().st_mtime_ns + 10**9))
    assert ext.bibliography_entries(bib)["four"]["authors"] == "Doe"


@pytest.mark.slow
def test_every_entry_of_the_books_bibliography_has_an_address():
    missing = [k for k, e in ext.bibliography_entries().items() if not e["urls"]]
    assert not missing, f"references.bib entries without url, doi or arXiv eprint: {missing}"


@pytest.mark.parametrize("text, ok", [
    ("Timkey and van Schijndel (2021)", True), ("Timkey and van Schijndel, 2021", True),
    ("Timkey and  van Schijndel\n(2021)", True), ("Timkey et al. (2021)", False),
    ("Timkey and van Schijndel (2020)", False), ("(Timkey and van Schijndel, 2021)", False),
])
def test_a_citation_reads_authors_and_year_in_one_of_two_forms(text, ok):
    problem = ext.citation_text_problem(text, {"authors": "Timkey and van Schijndel", "year": "2021"})
    assert (problem is None) is ok
    if not ok:
        assert repr(text) in problem and "'Timkey and van Schijndel (2021)'" in problem


def test_only_links_to_the_bibliographys_papers_are_citations(bib):
    text = ("As [Ethayarajh (2019)](https://aclanthology.org/D19-1006) showed, and ([Bernas et al., 2026]"
            "(http://arxiv.org/abs/2604.08764/)); see [chapter 9](09_pretrained_models.md#sec) and "
            "[a site](https://example.org).")
    assert ext.markdown_citations(text, bib) == [
        ("Ethayarajh (2019)", "https://aclanthology.org/D19-1006", "one2020"),
        ("Bernas et al., 2026", "http://arxiv.org/abs/2604.08764/", "three2026")]


def test_the_footer_is_filled_and_refuses_a_template_without_the_version():
    html = ext.footer_html("<a href='{repository}/blob/{branch}/LICENSE'>MIT</a> tanbias {version} {other}",
                           "1.2.3", "https://github.com/o/r/", "dev")
    assert html == "<a href='https://github.com/o/r/blob/dev/LICENSE'>MIT</a> tanbias 1.2.3 {other}"
    with pytest.raises(ParameterError, match=r"template='Code: MIT\.' has no \{version\}"):
        ext.footer_html("Code: MIT.", "1.2.3", "https://github.com/o/r", "main")


def test_the_builds_footer_and_a_broken_one_is_a_warning(monkeypatch):
    config = types.SimpleNamespace(html_theme_options={"extra_footer": "tanbias {version} ({repository})",
                                                       "repository_url": "https://github.com/o/r",
                                                       "repository_branch": None})
    ext.fill_footer(None, config)
    assert config.html_theme_options["extra_footer"] == f"tanbias {tanbias.__version__} (https://github.com/o/r)"
    warnings = []
    monkeypatch.setattr(ext.logger, "warning", warnings.append)
    broken = types.SimpleNamespace(html_theme_options={"extra_footer": "no version here"})
    ext.fill_footer(None, broken)
    assert broken.html_theme_options == {"extra_footer": "no version here"}
    assert len(warnings) == 1 and "the book's footer" in warnings[0]


def test_the_extension_registers_its_parts_and_is_parallel_safe():
    calls = []
    app = types.SimpleNamespace(**{name: (lambda *a, _n=name, **kw: calls.append((_n, a[0])))
                                   for name in ("connect", "add_directive", "add_transform", "add_post_transform")})
    meta = ext.setup(app)
    assert meta["parallel_read_safe"] and meta["parallel_write_safe"]
    assert ("connect", "config-inited") in calls and ("add_directive", "tanbias-api") in calls
    assert ("connect", "env-get-updated") in calls
    assert {a for n, a in calls if n == "add_transform"} == {ext.CitationLinks, ext.ChapterSectionLinks}
    assert {a for n, a in calls if n == "add_post_transform"} == {ext.CitationTargets, ext.ChapterSectionCheck}


# --- exercise numbers --------------------------------------------------------------------------

@pytest.mark.parametrize("docname, chapter", [
    ("chapters/01_manifold_hypothesis", "1"), ("chapters/10_dose_response", "10"),
    ("chapters/06b_narrow_cone", "6b"), ("intro", None), ("chapters/audit_trail", None),
])
def test_a_pages_chapter_is_its_file_names_number(docname, chapter):
    assert ext.chapter_number(docname) == chapter


def test_exercises_are_renumbered_by_chapter_in_the_order_sphinx_found_them():
    env = types.SimpleNamespace(toc_fignumbers={
        "chapters/04_gradient_ratio": {"exercise": {"x": (6,), "y": (4,), "z": (5,)}, "figure": {"f": (3,)}},
        "chapters/10_dose_response": {"exercise": {"w": (9,)}},
        "chapters/02_radial": {"figure": {"g": (1,)}},
        "intro": {"exercise": {"i": (1,)}}})
    changed = ext.number_exercises_by_chapter(None, env)
    assert sorted(changed) == ["chapters/04_gradient_ratio", "chapters/10_dose_response"]
    assert env.toc_fignumbers["chapters/04_gradient_ratio"]["exercise"] == {"y": ("4", 1), "z": ("4", 2),
                                                                           "x": ("4", 3)}
    assert env.toc_fignumbers["chapters/04_gradient_ratio"]["figure"] == {"f": (3,)}
    assert env.toc_fignumbers["chapters/10_dose_response"]["exercise"] == {"w": ("10", 1)}
    assert env.toc_fignumbers["intro"]["exercise"] == {"i": (1,)}       # a page without a chapter keeps Sphinx's
    assert ext.number_exercises_by_chapter(None, env) == []               # a second pass changes nothing
