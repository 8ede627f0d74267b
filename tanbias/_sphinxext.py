"""Sphinx glue for the book (loaded through ``sphinx.extra_extensions``).

Adds the ``tanbias-api`` directive: one section per public module of the
package, each an ``automodule`` of its docstrings. The module list is
discovered at build time, so the API page covers every module without
anyone editing it.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles


def public_modules(package: str = "tanbias") -> list[str]:
    """Dotted names of the public modules of ``package`` (no ``_``-prefixed part).

    Example
    -------
    >>> mods = public_modules()
    >>> "tanbias.interactive" in mods, any(".\u005f" in m for m in mods)
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
    >>> "tanbias.radial" in mods, any(m.startswith("tanbias.lab") for m in mods)
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


def setup(app):
    app.add_directive("tanbias-api", TanbiasApi)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
