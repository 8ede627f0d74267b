"""Sphinx glue for the book (loaded through ``sphinx.extra_extensions``).

Adds the ``tanbias-api`` directive: one section per public module of the
package, each an ``automodule`` of its docstrings. The module list is
discovered at build time, so the API page covers every module without
anyone editing it.

And reads two kinds of Markdown link the way JupyterLab cannot read roles
(DESIGN.md, "Chapters"; jupyterlab-myst shows ``{cite}`` and another chapter's
``{ref}`` as bare keys):

* a **citation** is a link to a paper of ``references.bib``, its text the
  author and year, ``[Bernas et al. (2026)](https://arxiv.org/abs/2604.08764)``:
  JupyterLab opens the paper; the book links the bibliography's entry, lists it
  there, and fails if the text is not the entry's authors and year;
* a link to **another chapter's section**, ``[text](09_pretrained_models.md#sec-ch9-premise)``:
  JupyterLab opens the chapter; the book links the section, a ``{ref}`` to the
  label, and fails if the label is not in that chapter.

And numbers the exercises by chapter: the k-th exercise of chapter N is "Exercise N.k", in the
book as in its stub and its checker's name (:func:`number_exercises_by_chapter`; sphinx-exercise
alone numbers them through the whole book).

And fills the footer (``html.extra_footer`` in _config.yml, which names the licences) with the
package's version, :data:`tanbias.__version__`, so that the version has one source
(:func:`footer_html`).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import pkgutil
import re
from pathlib import Path

from docutils import nodes
from docutils.statemachine import StringList
from sphinx import addnodes
from sphinx.transforms import SphinxTransform
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

import tanbias
from tanbias.errors import ParameterError

logger = logging.getLogger(__name__)

#: the book's bibliography (``bibtex_bibfiles`` in _config.yml)
BIBFILE = Path(__file__).resolve().parents[2] / "references.bib"


def public_modules(package: str = "tanbias") -> list[str]:
    """Dotted names of the public modules of ``package`` (no ``_``-prefixed part).

    Example
    -------
    >>> mods = public_modules()
    >>> "tanbias.figures.interactive" in mods, any(".\u005f" in m for m in mods)
    (True, False)
    """
    pkg = importlib.import_module(package)
    found = [package]
    for info in pkgutil.walk_packages(pkg.__path__, prefix=package + "."):
        if any(part.startswith("_") for part in info.name.split(".")[1:]):
            continue
        found.append(info.name)
    return sorted(found)


def own_public_names(module: str) -> list[str] | None:
    """Names in ``module.__all__`` minus objects another tanbias module defines.

    A class re-exported through ``__all__`` (e.g. ``CorruptFileError``) is
    documented once, in its home module; documenting it twice would make every
    cross-reference to it ambiguous. ``None`` when the module has no ``__all__``.

    Example
    -------
    >>> "ParameterError" in own_public_names("tanbias.errors")
    True
    """
    mod = importlib.import_module(module)
    names = getattr(mod, "__all__", None)
    if names is None:
        return None
    keep = []
    for name in names:
        home = getattr(getattr(mod, name, None), "__module__", None)
        if isinstance(home, str) and home.startswith("tanbias") and home != module:
            continue
        keep.append(name)
    return keep


def undocumented_constants(module: str, names: list[str]) -> list[str]:
    """Module-level data among ``names`` that have no ``#:`` doc comment."""
    import inspect

    from sphinx.pycode import ModuleAnalyzer

    mod = importlib.import_module(module)
    try:
        attr_docs = ModuleAnalyzer.for_module(module).find_attr_docs()
    except Exception:  # no source: nothing to add
        return []
    out = []
    for name in names:
        obj = getattr(mod, name, None)
        if inspect.isclass(obj) or inspect.isroutine(obj) or inspect.ismodule(obj):
            continue
        if ("", name) not in attr_docs:
            out.append(name)
    return out


def api_modules(package: str = "tanbias", exclude=()) -> list[str]:
    """The public modules of ``package`` minus those under any of ``exclude``.

    Example
    -------
    >>> mods = api_modules("tanbias", exclude=("tanbias.lab", "tanbias.figures"))
    >>> "tanbias.theory.radial" in mods, any(m.startswith("tanbias.lab") for m in mods)
    (True, False)
    """
    return [m for m in public_modules(package)
            if not any(m == e or m.startswith(e + ".") for e in exclude)]


class TanbiasApi(SphinxDirective):
    """``{tanbias-api}``: automodule sections for every public module of a package.

    Options: ``:exclude:`` a comma-separated list of subpackages documented on
    pages of their own (one page per layer keeps every page light).
    """

    has_content = False
    optional_arguments = 1  # package name, default "tanbias"
    option_spec = {"exclude": lambda arg: [a.strip() for a in (arg or "").split(",") if a.strip()]}

    def run(self) -> list[nodes.Node]:
        package = self.arguments[0] if self.arguments else "tanbias"
        lines: list[str] = []
        for mod in api_modules(package, self.options.get("exclude", ())):
            title = f"``{mod}``"
            lines += [title, "-" * len(title), "", f".. automodule:: {mod}"]
            members = own_public_names(mod)
            if members is None:  # no __all__: autodoc's default (documented, defined here)
                lines += ["   :members:", ""]
            else:
                lines += [f"   :members: {', '.join(members)}" if members else "   :members:",
                          "   :undoc-members:", ""]
                # autodoc documents module constants only when they carry a `#:`
                # comment; a constant listed in __all__ is public all the same.
                module_obj = importlib.import_module(mod)
                for name in undocumented_constants(mod, members):
                    value = " ".join(repr(getattr(module_obj, name)).split())
                    value = value if len(value) <= 70 else value[:67] + "..."
                    lines += [f".. py:data:: {name}", f"   :module: {mod}",
                              f"   :value: {value}", ""]
            # rebuild the page when the module's source changes
            spec = importlib.util.find_spec(mod)
            if spec is not None and spec.origin:
                self.env.note_dependency(spec.origin)
        container = nodes.section()
        container.document = self.state.document
        source = self.get_source_info()[0]
        nested_parse_with_titles(self.state, StringList(lines, source=source), container)
        return container.children


# ------------------------------------------------------------------ citations and chapter links
def normalize_url(url: str) -> str:
    """``url`` compared as an address: https, no trailing slash.

    Example
    -------
    >>> normalize_url("http://aclanthology.org/D19-1006/")
    'https://aclanthology.org/D19-1006'
    """
    return re.sub(r"^http://", "https://", url.strip()).rstrip("/")


def bibliography_entries(bibfile=None) -> dict[str, dict]:
    """``{key: {"authors": ..., "year": ..., "urls": [...]}}`` for every entry of ``bibfile``
    (default :data:`BIBFILE`): the authors as a citation names them (``Ethayarajh``,
    ``Timkey and van Schijndel``, ``Bernas et al.``), and every address of the paper
    (``url``, ``https://doi.org/`` + ``doi``, ``https://arxiv.org/abs/`` + an arXiv ``eprint``).

    Example
    -------
    >>> entry = bibliography_entries()["bernas2026anisotropy"]
    >>> entry["authors"], entry["year"], "https://arxiv.org/abs/2604.08764" in entry["urls"]
    ('Bernas et al.', '2026', True)
    """
    path = Path(bibfile or BIBFILE).resolve()
    return {key: dict(e) for key, e in _read_bibliography(str(path), path.stat().st_mtime_ns).items()}


@functools.lru_cache(maxsize=4)
def _read_bibliography(path: str, mtime_ns: int) -> dict[str, dict]:
    """:func:`bibliography_entries` of one version of a file (pybtex takes about a second)."""
    from pybtex.database import parse_file
    from pybtex.richtext import Text

    out = {}
    for key, entry in parse_file(path).entries.items():
        people = entry.persons.get("author", [])
        last = [Text.from_latex(" ".join(p.prelast_names + p.last_names)).render_as("text") for p in people]
        authors = (last[0] if len(last) == 1 else " and ".join(last) if len(last) == 2
                   else f"{last[0]} et al.")
        fields = entry.fields
        urls = [fields["url"]] if "url" in fields else []
        if "doi" in fields:
            urls.append(f"https://doi.org/{fields['doi']}")
        if "eprint" in fields and fields.get("archivePrefix", "").lower() == "arxiv":
            urls.append(f"https://arxiv.org/abs/{fields['eprint']}")
        out[key] = {"authors": authors, "year": fields.get("year", ""),
                    "urls": sorted({normalize_url(u) for u in urls})}
    return out


def citation_urls(bibfile=None) -> dict[str, str]:
    """``{address: key}``: a link to one of these addresses is a citation of that entry.

    Example
    -------
    >>> citation_urls()["https://arxiv.org/abs/2604.08764"]
    'bernas2026anisotropy'
    """
    return {url: key for key, e in bibliography_entries(bibfile).items() for url in e["urls"]}


def citation_text_problem(text: str, entry: dict) -> str | None:
    """Why ``text`` cannot be the text of a citation of ``entry``; None when it can.

    A citation reads ``Authors (Year)`` in a sentence, or ``Authors, Year`` inside
    parentheses, with the entry's authors and year (:func:`bibliography_entries`).

    Example
    -------
    >>> e = {"authors": "Rudman and Eickhoff", "year": "2024"}
    >>> citation_text_problem("Rudman and Eickhoff (2024)", e) is None
    True
    >>> citation_text_problem("Rudman et al. (2024)", e)
    "'Rudman et al. (2024)' is not 'Rudman and Eickhoff (2024)' or 'Rudman and Eickhoff, 2024'"
    """
    forms = (f"{entry['authors']} ({entry['year']})", f"{entry['authors']}, {entry['year']}")
    if " ".join(text.split()) in forms:
        return None
    return f"{text!r} is not {forms[0]!r} or {forms[1]!r}"


#: a Markdown link: [text](target)
MARKDOWN_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")


def markdown_citations(text: str, bibfile=None) -> list[tuple[str, str, str]]:
    """``(link text, address, key)`` of every citation link in the Markdown ``text``.

    Example
    -------
    >>> markdown_citations("as in [Bernas et al. (2026)](https://arxiv.org/abs/2604.08764) and [x](y.md)")
    [('Bernas et al. (2026)', 'https://arxiv.org/abs/2604.08764', 'bernas2026anisotropy')]
    """
    urls = citation_urls(bibfile)
    return [(m[1], m[2], urls[normalize_url(m[2])]) for m in MARKDOWN_LINK.finditer(text)
            if normalize_url(m[2]) in urls]


class CitationLinks(SphinxTransform):
    """A link to a paper of the bibliography becomes a citation of its entry (module docstring):
    noted as cited (the bibliography lists it), its text checked; its target is set once the
    bibliography's ids are known (:class:`CitationTargets`)."""

    default_priority = 500

    def apply(self, **kwargs) -> None:
        from sphinxcontrib.bibtex.citation_target import CitationTarget
        from sphinxcontrib.bibtex.roles import CitationRef

        bibfiles = [Path(self.env.srcdir, f) for f in (self.config.bibtex_bibfiles or [])]
        entries = {k: e for f in bibfiles for k, e in bibliography_entries(f).items()}
        urls = {url: key for key, e in entries.items() for url in e["urls"]}
        domain = self.env.get_domain("cite")
        for node in list(self.document.findall(nodes.reference)):
            key = urls.get(normalize_url(node.get("refuri", "")))
            if key is None:
                continue
            problem = citation_text_problem(node.astext(), entries[key])
            if problem:
                logger.warning(f"citation of {key}: {problem}", location=node)
            if not node["ids"]:
                self.document.set_id(node)
            domain.citation_refs.append(CitationRef(
                citation_ref_id=node["ids"][0], docname=self.env.docname, line=node.line or 0,
                targets=[CitationTarget(key=key, pre="", post="")]))
            node["tanbias_cite"] = key
            node["classes"].append("tanbias-citation")


class CitationTargets(SphinxPostTransform):
    """A citation link (:class:`CitationLinks`) points at its entry in the bibliography."""

    default_priority = 6          # after the bibliography's entries (5), before references (10)

    def run(self, **kwargs) -> None:
        from pybtex.plugin import find_plugin

        domain = self.env.get_domain("cite")
        for node in list(self.document.findall(nodes.reference)):
            key = node.get("tanbias_cite")
            if key is None:
                continue
            found = [c for c in domain.citations if c.key == key]
            if not found:
                logger.warning(f"citation of {key}: no bibliography of the book lists it", location=node)
                continue
            citation = found[0]
            node["refuri"] = (self.app.builder.get_relative_uri(self.env.docname, citation.bibliography_key.docname)
                              + "#" + citation.citation_id)
            node["internal"] = True
            if citation.tooltip_entry is not None:        # the entry on hover, as sphinxcontrib-bibtex does
                plain = find_plugin("pybtex.backends", "plaintext")()
                node["reftitle"] = citation.tooltip_entry.text.render(plain).replace("\\url ", "")
            del node["tanbias_cite"]


class ChapterSectionLinks(SphinxTransform):
    """``[text](other_chapter.md#label)`` becomes a ``{ref}`` to the label with that text (module
    docstring); :class:`ChapterSectionCheck` checks that the label is in that chapter."""

    default_priority = 500

    def apply(self, **kwargs) -> None:
        for node in self.document.findall(addnodes.pending_xref):
            if node.get("reftype") != "myst" or node.get("refdomain") != "doc" or not node.get("reftargetid"):
                continue
            node["tanbias_doc"] = node["reftarget"]
            node["refdomain"], node["reftype"] = "std", "ref"
            node["reftarget"] = node["reftargetid"].lower()
            node["refwarn"] = True


class ChapterSectionCheck(SphinxPostTransform):
    """The label of a link to another chapter's section is in that chapter."""

    default_priority = 9          # before references are resolved (10)

    def run(self, **kwargs) -> None:
        labels = self.env.get_domain("std").anonlabels
        for node in self.document.findall(addnodes.pending_xref):
            doc = node.get("tanbias_doc")
            if doc is None:
                continue
            where = labels.get(node["reftarget"], ("", ""))[0]
            if where and where != doc:
                logger.warning(f"the link to {doc}#{node['reftarget']}: that label is in {where}",
                               location=node)


# ------------------------------------------------------------------ exercise numbers
#: the figure type of sphinx-exercise's numbered exercises
EXERCISE_FIGTYPE = "exercise"


def chapter_number(docname: str) -> str | None:
    """The chapter of a page, read from its file name's leading digits (``None`` for a page
    without them).

    Example
    -------
    >>> chapter_number("chapters/04_gradient_ratio"), chapter_number("chapters/10_dose_response")
    ('4', '10')
    >>> chapter_number("chapters/06b_narrow_cone"), chapter_number("intro"), chapter_number("chapters/api")
    ('6b', None, None)
    """
    m = re.match(r"(?:.*/)?0*(\d+[a-z]?)_", docname)
    return m.group(1) if m else None


def number_exercises_by_chapter(app, env) -> list[str]:
    """``env-get-updated``, after Sphinx has numbered the figures: each chapter's exercises become
    ``(chapter, k)``, rendered "Exercise 4.1", in the order Sphinx numbered them. Pages without a
    chapter number keep Sphinx's numbers. Returns the pages whose numbers changed.

    Example
    -------
    >>> import types
    >>> env = types.SimpleNamespace(toc_fignumbers={
    ...     "chapters/04_gradient_ratio": {"exercise": {"b": (5,), "a": (4,)}, "figure": {"f": (1,)}},
    ...     "intro": {"exercise": {"c": (1,)}}})
    >>> number_exercises_by_chapter(None, env)
    ['chapters/04_gradient_ratio']
    >>> env.toc_fignumbers["chapters/04_gradient_ratio"]["exercise"], env.toc_fignumbers["intro"]["exercise"]
    ({'b': ('4', 2), 'a': ('4', 1)}, {'c': (1,)})
    """
    changed = []
    for docname, types in env.toc_fignumbers.items():
        chapter, numbers = chapter_number(docname), types.get(EXERCISE_FIGTYPE)
        if chapter is None or not numbers:
            continue
        order = sorted(numbers, key=numbers.get)
        new = {ident: (chapter, k) for k, ident in enumerate(order, start=1)}
        if new != numbers:
            numbers.update(new)
            changed.append(docname)
    return changed


# ------------------------------------------------------------------ the footer
#: what :func:`footer_html` fills in the footer of _config.yml
FOOTER_FIELDS = ("version", "repository", "branch")


def footer_html(template: str, version: str, repository: str, branch: str) -> str:
    """The book's footer: ``template`` (``html.extra_footer`` in _config.yml) with ``{version}``,
    ``{repository}`` and ``{branch}`` filled in.

    Parameters
    ----------
    template : str
        HTML with the placeholders; ``{version}`` is required, so that every page shows the
        version of the package that built it.
    version, repository, branch : str
        :data:`tanbias.__version__`, ``repository.url`` and ``repository.branch`` of _config.yml.

    Returns
    -------
    str

    Raises
    ------
    ParameterError
        When ``template`` lacks ``{version}``.

    Example
    -------
    >>> footer_html("Code: <a href='{repository}/blob/{branch}/LICENSE'>MIT</a>. tanbias {version}",
    ...             "1.2.3", "https://github.com/o/r", "main")
    "Code: <a href='https://github.com/o/r/blob/main/LICENSE'>MIT</a>. tanbias 1.2.3"
    """
    if "{version}" not in template:
        raise ParameterError(f"template={template!r} has no {{version}}: valid footers show it. Add "
                             "{version} to html.extra_footer in _config.yml.")
    values = {"version": version, "repository": repository.rstrip("/"), "branch": branch}
    for field in FOOTER_FIELDS:
        template = template.replace("{" + field + "}", values[field])
    return template


def fill_footer(app, config) -> None:
    """``config-inited``: the footer and Sphinx's ``version``/``release`` from :data:`tanbias.__version__`;
    a footer without ``{version}`` is a warning (the strict build fails)."""
    options = dict(config.html_theme_options or {})
    try:
        options["extra_footer"] = footer_html(options.get("extra_footer", ""), tanbias.__version__,
                                              options.get("repository_url", ""),
                                              options.get("repository_branch") or "main")
    except ParameterError as exc:
        logger.warning(f"the book's footer: {exc}")
        return
    config.html_theme_options = options
    config.version = config.release = tanbias.__version__


def setup(app):
    app.connect("config-inited", fill_footer)
    app.add_directive("tanbias-api", TanbiasApi)
    app.add_transform(CitationLinks)
    app.add_post_transform(CitationTargets)
    app.add_transform(ChapterSectionLinks)
    app.add_post_transform(ChapterSectionCheck)
    # after Sphinx's own figure numbers (its collectors run at the default priority, 500)
    app.connect("env-get-updated", number_exercises_by_chapter, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
