"""The package's layers stay one-way (DESIGN.md, "Layers").

Every import of every module under ``tanbias/`` is read with :mod:`ast`,
deferred imports inside functions included, and checked against the layer
table below, which is the one in DESIGN.md:

* no import cycle between modules;
* no edge from a lower layer to a higher one (within the lab, no edge up its
  chain from config to the command line); the package face (``tanbias.__main__``,
  the ``tanbias`` command) is above every layer, and imports them only inside functions;
* no ``_private`` name imported from another module;
* the maths modules never import plotly, ``tanbias.figures.interactive`` or
  ``tanbias.figures``, and import the package's maths without pulling plotly;
* every third-party distribution the package imports is declared in
  ``pyproject.toml``;
* a package module is imported inside a function only where that avoids a heavy import
  (:data:`HEAVY`) that the importing module does not already load, or where DESIGN.md lists it
  with its reason ("Deferred imports");
* every module has its test file, and every test file a module or a topic.
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tanbias.lab.experiments import EXPERIMENTS

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "tanbias"

#: The layer of a module is its folder: ``tanbias/`` holds the core, ``tanbias/theory/`` the
#: maths, ``tanbias/lab/`` the lab, ``tanbias/figures/`` the presentation and ``tanbias/book/``
#: the book machinery; the package face, ``tanbias/__main__.py`` (the ``tanbias`` command), is
#: above them all. Within a layer a module may import modules of the same or a lower rank.
LAYER_NAMES = ("core", "maths", "lab", "presentation", "book", "face")
FOLDERS = {"theory": 1, "lab": 2, "figures": 3, "book": 4}
#: the package face: it may import any layer, inside the function that runs a command
FACE = "tanbias.__main__"
#: the core's rank order (the package itself carries the version only)
CORE = {"tanbias": 0, "tanbias.errors": 0, "tanbias.palette": 0, "tanbias._threads": 0, "tanbias._checks": 1,
        "tanbias.numerals": 2, "tanbias.stats": 2}


def experiment_steps(name: str) -> list[list[str]]:
    """The chain's steps of one experiment's analysis: ``<name>_design``, ``<name>``, ``<name>_posthoc``
    (its readings added after the data), ``<name>_report``, those that exist, in that order."""
    return [[m] for m in (f"tanbias.lab.analysis.{name}{part}" for part in ("_design", "", "_posthoc", "_report"))
            if (ROOT / (m.replace(".", "/") + ".py")).exists()]


#: The lab's chain, bottom to top; a module of one step may import the steps below it. The
#: experiments' analyses come from the registry, in its order (an experiment's analysis may read
#: those registered before it): a new experiment needs no line here.
LAB = [
    ["tanbias.lab"],
    ["tanbias.lab.config"],
    ["tanbias.lab.experiments"],
    ["tanbias.lab.runs"],
    ["tanbias.lab.hooks", "tanbias.lab.devices"],
    ["tanbias.lab.corpus", "tanbias.lab.tokenizer", "tanbias.lab.aliasing", "tanbias.lab.data"],
    ["tanbias.lab.e5s"],
    ["tanbias.lab.models", "tanbias.lab.zoo", "tanbias.lab.checkpoints"],
    ["tanbias.lab.loading"],
    ["tanbias.lab.probe", "tanbias.lab.surgery"],
    ["tanbias.lab.distributed"],
    ["tanbias.lab.train"],
    ["tanbias.lab.analysis"],
    ["tanbias.lab.analysis.tables"],
    ["tanbias.lab.analysis.views"],
    ["tanbias.lab.analysis.radii"],
    ["tanbias.lab.analysis.registered", "tanbias.lab.analysis.verdicts"],
    *(step for name in EXPERIMENTS for step in experiment_steps(name)),
    ["tanbias.lab.analysis.checkpoint_probe"],
    ["tanbias.lab.analysis.pretrained", "tanbias.lab.analysis.pretrained_report"],
    ["tanbias.lab.analysis.measure_inputs"],
    ["tanbias.lab.analysis.measure_folder"],
    ["tanbias.lab.analysis.measure"],
    ["tanbias.lab.analysis.measure_report"],
    ["tanbias.lab.analysis.findings"],
    ["tanbias.lab.bench"],
    ["tanbias.lab.pipeline", "tanbias.lab.measure_command"],
    ["tanbias.lab.__main__"],
]
#: the presentation's rank order: the interactive and the renderer, the figures package, its topics
PRESENTATION = {"tanbias.figures.interactive": 0, "tanbias.figures.renderer": 0, "tanbias.figures": 1}


def layer_of(module: str) -> tuple[int, int]:
    """(layer index in LAYER_NAMES, rank) of ``module``, read from its folder; KeyError when
    the folder is not a layer or (core, lab) the module has no rank yet."""
    if module == FACE:
        return LAYER_NAMES.index("face"), 0
    parts = module.split(".")
    if len(parts) <= 2 and module not in ("tanbias.theory", "tanbias.lab", "tanbias.figures", "tanbias.book"):
        return 0, CORE[module]
    layer = FOLDERS[parts[1]]
    if layer == 2:
        for rank, group in enumerate(LAB):
            if module in group:
                return layer, rank
        raise KeyError(module)
    if layer == 3:
        return layer, PRESENTATION.get(module, 2)
    return layer, 0


def package_modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PKG.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = package_modules()
#: the maths modules: every module of tanbias/theory/
MATHS = sorted(m for m in MODULES if m.startswith("tanbias.theory."))


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


@functools.cache
def imports_of(module: str) -> tuple[tuple[str, str | None, int, bool], ...]:
    """(imported module, imported name or None, line, top level?) for every import (each module
    parsed once: the tests below read them all several times)."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf8"))
    top = {id(n) for n in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, None, node.lineno, id(node) in top) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, path, node)
            for a in node.names:
                sub = f"{base}.{a.name}"
                if sub in MODULES:       # `from pkg import module`
                    found.append((sub, None, node.lineno, id(node) in top))
                else:
                    found.append((base, a.name, node.lineno, id(node) in top))
    return tuple(found)


@functools.cache
def internal_edges() -> tuple[tuple[str, str, str | None, int], ...]:
    edges = []
    for module in MODULES:
        for target, name, line, _ in imports_of(module):
            if target == "tanbias" or target.startswith("tanbias."):
                while target not in MODULES:       # `import tanbias.x.y` of a name
                    target = target.rpartition(".")[0]
                if target != module:
                    edges.append((module, target, name, line))
    return tuple(edges)


def test_every_module_has_a_layer():
    missing = []
    for module in MODULES:
        try:
            layer_of(module)
        except KeyError:
            missing.append(module)
    assert not missing, (f"modules without a layer: {missing}. Give each a place in DESIGN.md "
                         "('Layers') and in tests/test_layers.py.")


@pytest.mark.slow
def test_no_upward_import():
    bad = []
    for src, dst, _, line in internal_edges():
        if dst == "tanbias":       # the package itself: a version string, nothing else
            continue
        (ls, rs), (ld, rd) = layer_of(src), layer_of(dst)
        if ld > ls or (ld == ls and rd > rs):
            bad.append(f"{MODULES[src].relative_to(ROOT)}:{line}: {src} "
                       f"({LAYER_NAMES[ls]}) imports {dst} ({LAYER_NAMES[ld]}, higher)")
    assert not bad, "imports against the layers:\n" + "\n".join(bad)


def test_no_import_cycle():
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for src, dst, _, _ in internal_edges():
        graph[src].add(dst)
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycles.append(" -> ".join(stack[stack.index(n):] + [n]))
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_no_private_name_crosses_modules():
    bad = [f"{MODULES[src].relative_to(ROOT)}:{line}: from {dst} import {name}"
           for src, dst, name, line in internal_edges()
           if name is not None and name.startswith("_") and not name.startswith("__")]
    assert not bad, "private names imported from another module:\n" + "\n".join(bad)


@pytest.mark.parametrize("module", MATHS)
def test_maths_modules_import_no_figures(module):
    bad = [f"line {line}: {target}" for target, _, line, _ in imports_of(module)
           if target.split(".")[0] == "plotly"
           or target in ("tanbias.figures.interactive", "tanbias.figures.renderer")
           or target == "tanbias.figures" or target.startswith("tanbias.figures.")]
    assert not bad, f"{module} imports figure code: {bad}"
    top_pandas = [line for target, _, line, top in imports_of(module)
                  if target.split(".")[0] == "pandas" and top]
    assert not top_pandas, f"{module} imports pandas at module level (lines {top_pandas}): defer it"


@pytest.mark.slow
def test_maths_import_without_plotly():
    code = ("import sys\n" + "".join(f"import {m}\n" for m in MATHS)
            + "import tanbias.stats\n"
            + "heavy = [m for m in ('plotly', 'ipywidgets', 'pandas', 'torch') if m in sys.modules]\n"
            + "assert not heavy, heavy\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_the_package_face_imports_the_layers_lazily():
    """``tanbias.__main__`` imports only the core at module level (the layers above it inside the
    function that runs a command), so ``tanbias --version`` loads no numerical stack."""
    eager = [f"line {line}: {target}" for target, _, line, top in imports_of(FACE)
             if top and (target == "tanbias" or target.startswith("tanbias."))
             and layer_of(target if target in MODULES else target.rpartition(".")[0])[0] > 0]
    assert not eager, f"{FACE} imports a layer above the core at module level: {eager}"
    code = ("import sys\nimport tanbias.__main__\n"
            "heavy = [m for m in ('numpy', 'torch', 'plotly', 'pandas', 'transformers') if m in sys.modules]\n"
            "assert not heavy, heavy\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.slow
def test_chapters_reading_committed_results_import_no_torch():
    """Chapters 8-13 and the closing page read committed tables: what they import (every
    experiment's analysis and report) must not load torch (about 3 s of CPU a chapter in the
    book build)."""
    code = ("import sys\nimport tanbias.lab.zoo, tanbias.lab.analysis.pretrained, "
            "tanbias.lab.analysis.pretrained_report, tanbias.lab.corpus, "
            + ", ".join(m for name in EXPERIMENTS for (m,) in experiment_steps(name)) + "\n"
            "assert 'torch' not in sys.modules\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.slow
def test_figures_import_skips_the_grammar_compiling_optional_dependency():
    """Importing the figures (every chapter does) must not load rfc3987_syntax (3 s of CPU)."""
    code = ("import sys\nimport tanbias.figures, tanbias.figures.interactive, tanbias.figures.renderer\n"
            "import plotly.io as pio, jsonschema\n"
            "assert sys.modules.get('rfc3987_syntax') is None\n"
            "assert 'rfc3987_syntax.syntax_helpers' not in sys.modules\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]


#: import name -> distribution name, where they differ
DIST = {"yaml": "pyyaml", "IPython": "ipython", "huggingface_hub": "huggingface-hub",
        "sphinxcontrib": "sphinxcontrib-bibtex"}


def test_every_runtime_import_is_declared():
    declared = set()
    for req in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]:
        name = req.split(";")[0]
        for sep in "<>=!~[ ":
            name = name.split(sep)[0]
        declared.add(name.strip().lower().replace("_", "-"))
    used = {}
    for module in MODULES:
        for target, _, line, _ in imports_of(module):
            top = target.split(".")[0]
            if top and top != "tanbias" and top not in sys.stdlib_module_names:
                used.setdefault(DIST.get(top, top).lower().replace("_", "-"), f"{module}:{line}")
    missing = {d: where for d, where in used.items() if d not in declared}
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"


#: Third-party libraries that take a noticeable share of a second (or more) of CPU to import: torch
#: (about 2 s) and transformers (1 s), scipy's submodules (scipy.stats 1.4 s, scipy.optimize 0.7 s;
#: counted as one library: each loads the others), statsmodels (2 s), pandas (0.4 s), plotly and
#: ipywidgets (a few tenths), tqdm (its notebook bars load ipywidgets), wordfreq (0.2 s), accelerate
#: (2 s), jupytext, nbformat and jupyter_book (3-4 s: jsonschema's grammar), sphinxcontrib.bibtex and
#: sphinx_proof (0.3-0.4 s); tokenizers, sklearn and matplotlib as DESIGN.md names them. numpy, a bare
#: ``import scipy``, yaml and the standard library cost far less. The one reason to import a module
#: inside a function is that it loads one of these (DESIGN.md, "Deferred imports").
HEAVY = ("torch", "transformers", "tokenizers", "accelerate", "pandas", "scipy", "statsmodels", "sklearn",
         "plotly", "ipywidgets", "matplotlib", "tqdm", "wordfreq", "jupytext", "nbformat", "jupyter_book",
         "sphinxcontrib", "sphinx_proof")

def _heavy(target: str, name: str | None) -> str | None:
    """The library of :data:`HEAVY` that ``from target import name`` (or ``import target``) loads, or None."""
    parts = target.split(".")
    if parts[0] == "scipy":
        return "scipy" if len(parts) > 1 or name is not None else None      # a bare `import scipy` is lazy
    return parts[0] if parts[0] in HEAVY else None


def _package_module(target: str) -> str:
    while target not in MODULES:       # `import tanbias.x.y` of a name
        target = target.rpartition(".")[0]
    return target


def _is_package(target: str) -> bool:
    return target == "tanbias" or target.startswith("tanbias.")


def _imports_in(module: str, tree: ast.AST) -> list[tuple[str, str | None, int, bool]]:
    """(imported module, name or None, line, inside a function?) for every import of ``tree``."""
    path = MODULES.get(module, PKG / (module.replace(".", "/").removeprefix("tanbias/") + ".py"))
    found = []

    def visit(node, inside: bool):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                found.extend((a.name, None, child.lineno, inside) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = _resolve(module, path, child)
                for a in child.names:
                    sub = f"{base}.{a.name}"
                    found.append((sub, None, child.lineno, inside) if sub in MODULES
                                 else (base, a.name, child.lineno, inside))
            visit(child, inside or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(tree, False)
    return found


@functools.cache
def _tree(module: str) -> ast.AST:
    return ast.parse(MODULES[module].read_text(encoding="utf8"))


@functools.cache
def _file_imports(module: str) -> tuple[tuple[str, str | None, int, bool], ...]:
    """:func:`_imports_in` of the module's own file, walked once (the transitive reads ask again and again)."""
    return tuple(_imports_in(module, _tree(module)))


def loads_at_import(module: str, tree: ast.AST | None = None) -> frozenset[str]:
    """The libraries of :data:`HEAVY` that ``import module`` loads: through its imports outside
    functions, those of the package modules they import and those of their packages, transitively.
    ``tree``: the module's source parsed (default: its file's)."""
    found, seen, todo = set(), set(), [(module, tree)]
    while todo:
        m, t = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        if "." in m:
            todo.append((m.rpartition(".")[0], None))        # a module's package is imported first
        for target, name, _, inside in (_imports_in(m, t) if t is not None else _file_imports(m)):
            if inside:
                continue
            if _is_package(target):
                todo.append((_package_module(target), None))
            elif (heavy := _heavy(target, name)) is not None:
                found.add(heavy)
    return frozenset(found)


def light_deferred_imports(module: str, tree: ast.AST | None = None) -> list[tuple[int, str]]:
    """(line, imported module) of each import of a package module inside a function of ``module``
    that loads no library of :data:`HEAVY` the module does not load already at import."""
    tree = tree if tree is not None else _tree(module)
    have = loads_at_import(module, tree)
    out = []
    for target, _, line, inside in _imports_in(module, tree):
        if inside and _is_package(target):
            target = _package_module(target)
            if not loads_at_import(target) - have:
                out.append((line, target))
    return sorted(set(out))


def design_deferred_exceptions(text: str | None = None) -> dict[tuple[str, str], str]:
    """DESIGN.md's list of the deferred imports kept although they load nothing heavy: ``{(importer,
    imported module): reason}``, from its lines ``* `importer` imports `module` inside a function: reason``."""
    import re

    text = text if text is not None else (ROOT / "DESIGN.md").read_text(encoding="utf8")
    line = re.compile(r"^\* `(tanbias[\w.]*)` imports `(tanbias[\w.]*)` inside a function: (.+)$", re.MULTILINE)
    return {(m.group(1), m.group(2)): m.group(3).strip() for m in line.finditer(text)}


@pytest.mark.slow
def test_deferred_imports_avoid_a_heavy_import():
    """An import of a package module inside a function loads a library of :data:`HEAVY` that the
    importing module does not load at import; any other goes to the top of its module, or into
    DESIGN.md's list with its reason (a cycle is no reason: :func:`test_no_import_cycle` counts
    deferred imports too)."""
    allowed = design_deferred_exceptions()
    found = {(module, target): line for module in MODULES for line, target in light_deferred_imports(module)}
    bad = [f"{MODULES[m].relative_to(ROOT)}:{line}: {t} loads nothing heavy that {m} does not load already "
           f"({sorted(loads_at_import(t))} against {sorted(loads_at_import(m))})"
           for (m, t), line in sorted(found.items()) if (m, t) not in allowed]
    assert not bad, "deferred imports that avoid no heavy import (move them to the top):\n" + "\n".join(bad)
    stale = sorted(set(design_deferred_exceptions()) - set(found))
    assert not stale, f"DESIGN.md lists deferred imports that are not deferred, or load something heavy now: {stale}"


def test_a_planted_light_deferred_import_is_caught():
    """A light package module imported inside a function is caught; a torch module, or one the module
    does not load at its top (pandas here), is not; DESIGN.md's form of an exception is read."""
    source = ("import numpy\nfrom tanbias.lab import runs\n\n"
              "def f():\n    from tanbias.errors import ParameterError\n    from tanbias.lab.models import gemm_peak\n"
              "    import pandas\n    return ParameterError, gemm_peak, pandas\n\n"
              "class C:\n    def g(self):\n        import tanbias.lab.runs\n        return tanbias.lab.runs\n")
    caught = light_deferred_imports("tanbias.lab.analysis.planted", ast.parse(source))
    assert caught == [(5, "tanbias.errors"), (12, "tanbias.lab.runs")]
    assert loads_at_import("tanbias.lab.analysis.planted", ast.parse(source)) == frozenset()
    listed = design_deferred_exceptions("* `tanbias.a` imports `tanbias.b` inside a function: an import cycle\n")
    assert listed == {("tanbias.a", "tanbias.b"): "an import cycle"}


#: test files named for a topic rather than a module, for what is genuinely across modules
#: (DESIGN.md, "Tests")
TEST_TOPICS = {"binder", "book", "browser", "chapters", "figure_contract", "layers", "precision", "release",
               "reports", "tiers"}


def _defines_code(path: Path) -> bool:
    """Whether a package's ``__init__`` defines a function or a class (not only its docstring, its
    imports and its version)."""
    tree = ast.parse(path.read_text(encoding="utf8"))
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for n in tree.body)


def mirror_stems() -> dict[str, str]:
    """``{module: stem}``: ``tests/test_<stem>.py`` is the module's test file (DESIGN.md, "Tests").

    * the name of the module without its leading and trailing underscores (``_checks``: ``checks``;
      ``__main__``: ``main``); a figure module of a topic, ``<topic>_figures``;
    * two modules of one name are told apart by their folder: ``tanbias_main`` and ``lab_main``,
      ``lab_bench`` and ``book_bench``;
    * a package whose ``__init__`` defines no function or class (a docstring, the version) has none.
    """
    stems = {}
    for module, path in MODULES.items():
        if path.name == "__init__.py" and not _defines_code(path):
            continue
        name = module.rpartition(".")[2].strip("_")
        if module.startswith("tanbias.figures.") and layer_of(module)[1] == 2:
            name += "_figures"
        stems[module] = name
    count = {}
    for name in stems.values():
        count[name] = count.get(name, 0) + 1
    return {m: (f"{m.split('.')[-2]}_{n}" if count[n] > 1 else n) for m, n in stems.items()}


def test_test_files_mirror_the_package():
    """Both directions: every module has its test file, ``tests/test_<stem>.py``
    (:func:`mirror_stems`), and every test file is a module's or one of :data:`TEST_TOPICS`'s: a
    reader finds a module's tests from its name, and a test file tells what it tests."""
    stems = mirror_stems()
    assert len(set(stems.values())) == len(stems), "two modules share a test file name"
    files = {path.stem.removeprefix("test_") for path in (ROOT / "tests").glob("test_*.py")}
    missing = sorted(f"{m}: tests/test_{s}.py" for m, s in stems.items() if s not in files)
    assert not missing, "modules without their test file:\n" + "\n".join(missing)
    stray = sorted(f"test_{f}.py" for f in files - set(stems.values()) - TEST_TOPICS)
    assert not stray, f"test files named for neither a module nor a topic: {stray}"
    assert not TEST_TOPICS & set(stems.values()), "a topic named as a module"


def test_no_module_reads_a_run_config_by_string_key():
    """Run configs are RunConfig objects: code reads ``cfg.steps``, never ``cfg["steps"]``."""
    import re

    pattern = re.compile(r"""\b(cfg|config|cfg0)\[["']""")
    bad = [f"{m}:{i}" for m, path in MODULES.items()
           for i, line in enumerate(path.read_text(encoding="utf8").splitlines(), 1) if pattern.search(line)]
    assert not bad, f"a config read by string key: {bad}"


def test_every_name_a_module_exports_exists():
    """Each name in a module's ``__all__`` is defined there: the API page's autodoc and a reader's
    ``from module import *`` fail on one that is not (a stale name once broke the book's build)."""
    import importlib
    import pkgutil

    import tanbias

    missing = []
    for info in pkgutil.walk_packages(tanbias.__path__, "tanbias."):
        if info.name.endswith("__main__"):
            continue
        mod = importlib.import_module(info.name)
        missing += [f"{info.name}.{n}" for n in getattr(mod, "__all__", ()) if not hasattr(mod, n)]
    assert not missing, f"names in __all__ that the module does not define: {missing}"
