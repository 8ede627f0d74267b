"""Shared fixtures: the book is built ONCE per test session (strictly, static mode).

The build starts in the background as soon as the tests are collected, and the
test files that read it (those using ``built_book``) run last, so the ~90 s
build overlaps the rest of the suite instead of coming before it.

Under pytest-xdist (``make test`` runs ``-n 2 --dist loadgroup``) the workers
share that one build: the controller names a folder before the workers start
(``TANBIAS_TEST_BOOK``), the first worker to collect a test that reads the book
starts the build there, and every worker waits for its exit status file. Tests
that share something heavier than a temporary folder stay on one worker
(:func:`_xdist_groups` puts them in an ``xdist_group``): the modules that use a
module-scoped fixture (a smoke sweep, the JupyterLab server) and those that
share the model zoo's cache in ``work/zoo``.

Set ``TANBIAS_BOOK_DIR=/path/with/_build`` to reuse an existing build (e.g. the
output of ``make book``: ``TANBIAS_BOOK_DIR=.``) while iterating on tests.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from bookhelpers import BIN, CHROMIUM_ARGS, ROOT  # noqa: E402

#: the folder of this test run's book build, named by the controller, inherited by the workers
SHARED_ENV = "TANBIAS_TEST_BOOK"
#: the math libraries' thread counts, set to 1 for the workers of ``pytest -n``
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
#: longest wait for the shared build, a hang guard (a clean build takes about 100 s on 2 idle cores, 18x less;
#: 11 min under a load of 6)
BUILD_TIMEOUT_S = 1800


@dataclasses.dataclass
class BuiltBook:
    build: Path          # the _build folder (html/, .doctrees/)
    html: Path           # _build/html
    returncode: int
    log: str

    def page(self, doc: str) -> Path:
        return self.html / f"{doc}.html"


class _BookBuild:
    """``python -m tanbias.book.bookbuild`` (strict, static mode) in a background process, in ``out``.

    The process writes its exit status to ``out/returncode`` when it ends, so any
    process of the test run (not only its parent) can wait for it; its pid is in
    ``out/pid`` so that the controller can stop it at the end.
    """

    def __init__(self, out: Path):
        self.out = out
        self.log_path = out / "build.log"
        self.rc_path = out / "returncode"

    @classmethod
    def claim(cls, out: Path):
        """Start the build in ``out`` unless a process of this run already did; the shared handle."""
        build = cls(out)
        try:
            os.mkdir(out / "claimed")           # atomic: exactly one process of the run starts it
        except FileExistsError:
            return build
        env = dict(os.environ, TANBIAS_MODE="static", PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
        env.pop("JPY_SESSION_NAME", None)
        script = ('import subprocess, sys, os\n'
                  'rc = subprocess.call(sys.argv[1:], stdout=open(os.environ["_LOG"], "w"), '
                  'stderr=subprocess.STDOUT)\n'
                  'open(os.environ["_RC"] + ".tmp", "w").write(str(rc))\n'
                  'os.replace(os.environ["_RC"] + ".tmp", os.environ["_RC"])\n')
        proc = subprocess.Popen(
            [sys.executable, "-c", script, str(BIN / "python"), "-m", "tanbias.book.bookbuild", str(ROOT),
             "--path-output", str(out)],
            env={**env, "_LOG": str(build.log_path), "_RC": str(build.rc_path)},
            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        (out / "pid").write_text(str(proc.pid))
        return build

    def result(self) -> BuiltBook:
        deadline = time.monotonic() + BUILD_TIMEOUT_S
        while not self.rc_path.exists():
            if time.monotonic() > deadline:
                pytest.fail(f"the book build in {self.out} did not finish in {BUILD_TIMEOUT_S} s")
            time.sleep(0.5)
        build = self.out / "_build"
        log = self.log_path.read_text() if self.log_path.exists() else "(no log)"
        return BuiltBook(build, build / "html", int(self.rc_path.read_text()), log)

    @staticmethod
    def stop(out: Path, remove: bool):
        """Stop a build still running in ``out`` (its whole process group); remove ``out``."""
        pid = out / "pid"
        if pid.exists() and not (out / "returncode").exists():
            try:
                os.killpg(int(pid.read_text()), signal.SIGTERM)
            except (ProcessLookupError, ValueError):
                pass
        if remove:
            shutil.rmtree(out, ignore_errors=True)


def _is_worker(config) -> bool:
    return hasattr(config, "workerinput")


def pytest_configure(config):
    """The controller (or the only process) names the run's build folder before workers start."""
    config.pluginmanager.register(_GroupsPlugin(), "tanbias-xdist-groups")
    if not _is_worker(config) and SHARED_ENV not in os.environ:
        os.environ[SHARED_ENV] = tempfile.mkdtemp(prefix="tanbias-book-")
        config._tanbias_book_owner = True
    if not _is_worker(config) and getattr(config.option, "numprocesses", None):
        # two workers and the book build already fill both cores: a second math thread per
        # process only spins against the others (measured: a third more CPU time in all)
        for var in THREAD_VARS:
            os.environ.setdefault(var, "1")


def _shared() -> Path:
    return Path(os.environ[SHARED_ENV])


def _fixturedefs(item):
    """Every fixture definition ``item`` uses."""
    info = getattr(item, "_fixtureinfo", None)
    return [d for seq in (info.name2fixturedefs.values() if info is not None else ()) for d in seq]


def _module_scoped(item) -> bool:
    """Whether ``item`` uses a fixture computed once per module (or class)."""
    return any(d.scope in ("module", "class", "package") for d in _fixturedefs(item))


#: session fixtures of this file that cost seconds: the tests that use one share a worker
SHARED_FIXTURES = ("smoke_sweep", "measured_tiny")


def _xdist_groups(items) -> None:
    """Put tests that share something on one worker (``--dist loadgroup``).

    * every test of a module that loads a model of the zoo: they share ``work/zoo``
      (a first load writes the float32 cache there) and, with it, module fixtures;
    * the tests that use one of :data:`SHARED_FIXTURES` (the smoke 2x2 sweep, read by the
      tests of the sweep's statistics, figures, radii and reports; the tiny models measured for
      the measurement command's figure and report tests), computed once per worker;
    * the tests of a module that use a module-scoped fixture (a smoke training run, a
      sweep, a JupyterLab server): that fixture is then computed once, not once per worker.
    The others are shared out one by one.
    """
    zoo_modules = {i.path for i in items if i.get_closest_marker("zoo")}
    # xdist reads the groups in its own pytest_collection_modifyitems (they become a suffix
    # of the node id): this runs first (_GroupsPlugin)
    for item in items:
        shared = [f for f in SHARED_FIXTURES if f in getattr(item, "fixturenames", ())]
        if item.path in zoo_modules:
            group = "zoo-cache"
        elif shared:
            group = f"fixture:{shared[0]}"
        elif _module_scoped(item):
            group = f"module:{item.path.name}"
        else:
            continue
        item.add_marker(pytest.mark.xdist_group(group))


#: fixtures that cost seconds (``module::name``; ``conftest`` for this file's): a test that uses one is
#: ``slow`` whatever its own cost, so `make unit` never computes one
HEAVY_FIXTURES = {
    "conftest::smoke_sweep": "trains the 2x2 smoke sweep",
    "conftest::measured_tiny": "measures tiny real models end to end",
    "test_reports::committed": "analyses every committed experiment",
    "test_findings::grid": "analyses every committed experiment (the verdict grid)",
    "test_verdict_words::headline": "reads the headline words of every committed analysis",
    "test_precision::both": "trains a smoke run in float32 and in bfloat16",
    "test_train::smoke_run": "trains a smoke run",
    "test_rivals::init_table": "reads the rivals' initialisation: both attentions, both inputs, every layer",
    "test_rivals_design::design": "the rivals' power analysis on the committed runs",
}


#: the markers of the tests that `make test` leaves to `make check` (the Makefile's CHECK_MARKS, which
#: tests/test_tiers.py keeps equal to this): what a test needs beyond the package's own environment
CHECK_MARKS = ("book", "browser", "zoo", "committed", "multiprocess")
#: fixtures that analyse every committed experiment (``module::name``): a test that uses one is also
#: ``committed``, so that `make test` leaves it to `make check` (it reads what the book reads)
COMMITTED_FIXTURES = frozenset({"test_reports::committed", "test_findings::grid", "test_verdict_words::headline",
                                "test_rivals::init_table", "test_rivals_design::design"})


@pytest.fixture(autouse=True)
def _committed_analyses_are_marked(request, monkeypatch):
    """A test of `make test`'s part that reads a memoised analysis of the committed runs fails, naming
    the marker it lacks: `make test` then never analyses a committed experiment (tens of seconds to
    minutes each on a clean clone), and a new test that does is moved to `make check` by its marker.
    A test that points the memo at runs of its own (``runs.RUNS_DIR`` changed) is not reading them."""
    if any(request.node.get_closest_marker(m) for m in CHECK_MARKS):
        yield
        return
    from tanbias.lab import runs

    committed, memoised = runs.RUNS_DIR, runs.memoised

    def guarded(name, compute):
        if runs.RUNS_DIR == committed:
            pytest.fail(f"{request.node.nodeid} reads the memoised analysis {name!r} of the committed runs: "
                        f"mark it @pytest.mark.committed (and slow), so that `make check` runs it, not `make test`")
        return memoised(name, compute)

    monkeypatch.setattr(runs, "memoised", guarded)
    yield


def _fixture_key(fixturedef) -> str:
    module = fixturedef.baseid.split("::")[0]
    return f"{Path(module).stem if module.endswith('.py') else 'conftest'}::{fixturedef.argname}"


def _mark_heavy(items) -> None:
    """Mark ``slow`` every test that uses one of :data:`HEAVY_FIXTURES`, and ``committed`` every test
    that uses one of :data:`COMMITTED_FIXTURES` (before ``-m`` deselects)."""
    for item in items:
        keys = {_fixture_key(d) for d in _fixturedefs(item)}
        if keys & HEAVY_FIXTURES.keys():
            item.add_marker(pytest.mark.slow)
        if keys & COMMITTED_FIXTURES:
            item.add_marker(pytest.mark.committed)


class _GroupsPlugin:
    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items):
        _mark_heavy(items)
        _xdist_groups(items)


@pytest.hookimpl(trylast=True)          # after -m / -k deselection: `make unit` starts no build
def pytest_collection_modifyitems(session, config, items):
    """Long tests first, test files that read the built book last; the build starts now, in the background.

    xdist hands out work in collection order (a group whole), so the long units go first:
    the modules that share a fixture or the zoo's cache, and the tests that start other
    processes. The many short tests then fill both workers up to the book's tests, and no
    worker is left alone with one long test at the end.
    """
    files = {item.path for item in items if "built_book" in getattr(item, "fixturenames", ())}
    rest = [i for i in items if i.path not in files]
    long = [i for i in rest if i.get_closest_marker("xdist_group") or i.get_closest_marker("slow")]
    rest = long + [i for i in rest if not (i.get_closest_marker("xdist_group") or i.get_closest_marker("slow"))]
    items[:] = rest + [i for i in items if i.path in files]
    if not files:
        return
    if (not config.option.collectonly and not os.environ.get("TANBIAS_BOOK_DIR")
            and (ROOT / "_assets_build" / "plotly.min.js").exists()):
        _BookBuild.claim(_shared())


def pytest_sessionfinish(session, exitstatus):
    """The owner of the build folder (the controller, or the only process) stops and removes it."""
    if getattr(session.config, "_tanbias_book_owner", False):
        # a failed run keeps the build and its log for a look; an unused folder always goes
        _BookBuild.stop(_shared(), remove=exitstatus == 0 or not (_shared() / "claimed").exists())
        os.environ.pop(SHARED_ENV, None)


@pytest.fixture(scope="session")
def built_book() -> BuiltBook:
    """The book built once, strictly, with ``TANBIAS_MODE=static`` (as ``make book``)."""
    reuse = os.environ.get("TANBIAS_BOOK_DIR")
    if reuse:
        build = Path(reuse).resolve() / "_build"
        if not (build / "html" / "index.html").exists():
            pytest.fail(f"TANBIAS_BOOK_DIR={reuse}: no built book under {build}")
        return BuiltBook(build, build / "html", 0, "(reused build)")
    if not (ROOT / "_assets_build" / "plotly.min.js").exists():
        pytest.fail("static assets missing: run `make assets` (make test does it)")
    # started at collection; or now, e.g. when selected by a keyword after collection
    return _BookBuild.claim(_shared()).result()


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = shutil.which("chromium")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (make test installs Debian's chromium)")
        pytest.skip("chromium not installed: apt-get install -y chromium (or run make test)")
    return path


@pytest.fixture(scope="session")
def browser(chromium_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="session")
def screenshot_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("screenshots")


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    """``{arch: folder}``: one local mirror with revisions step0, step1 per tiny architecture."""
    from tiny_checkpoints import TINY_ARCHS, make_tiny_checkpoint

    root = tmp_path_factory.mktemp("tiny")
    return {arch: make_tiny_checkpoint(arch, root / arch) for arch in TINY_ARCHS}


SWEEP_SEEDS = (0, 1)


def sweep_smoke_config(kind: str, regime: str, seed: int, **changes):
    """A smoke-size run of the 2x2: de (439k words) and pt (92k), an imbalanced pair, so the two
    regimes differ; five random controls (the tests read enrichments, not p-values)."""
    from tanbias.lab.config import RunConfig

    return RunConfig.from_dict({"name": f"{kind}-{regime}-s{seed}", "kind": kind, "regime": regime, "seed": seed,
                                "size": "smoke", "steps": 6, "languages": ["de", "pt"], "checkpoint_every": 6,
                                "eval_batches": 1, "probe": {"n_steps": 3, "tokens": 128, "rank": 4, "local_rank": 2,
                                                             "min_count": 4, "n_controls": 5}, **changes})


@pytest.fixture(scope="session")
def measured_tiny(tmp_path_factory) -> dict:
    """:func:`measurehelpers.measure_tiny`: a tiny Llama at three checkpoints and a tiny bare BERT,
    measured once for the measurement command's figure and report tests."""
    from measurehelpers import measure_tiny

    return measure_tiny(tmp_path_factory.mktemp("measured"))


@pytest.fixture(scope="session")
def smoke_sweep(tmp_path_factory) -> Path:
    """A smoke-size 2x2 sweep (both kinds and regimes, seeds 0 and 1), trained and analysed."""
    from tanbias.lab.config import KINDS, REGIMES
    from tanbias.lab.pipeline import train_and_analyse

    d = tmp_path_factory.mktemp("sweep")
    for kind in KINDS:
        for regime in REGIMES:
            for seed in SWEEP_SEEDS:
                c = sweep_smoke_config(kind, regime, seed)
                train_and_analyse(c, out_dir=d / c.name, fresh=True, progress=False)
    return d


@pytest.fixture(scope="session")
def loaded(smoke_sweep) -> dict:
    """The smoke sweep's runs, loaded (:func:`tanbias.lab.analysis.sweep.load_sweep`)."""
    from tanbias.lab.analysis import sweep

    return sweep.load_sweep(runs_dir=smoke_sweep)


@pytest.fixture(scope="session")
def corpus() -> dict:
    """The lab's corpus, every language (checksums verified)."""
    from tanbias.lab.corpus import load_corpus

    return load_corpus()


@pytest.fixture(scope="session")
def tokenizer():
    """The lab's shared tokenizer."""
    from tanbias.lab.tokenizer import load_tokenizer

    return load_tokenizer()
