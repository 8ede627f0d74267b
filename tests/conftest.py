"""Shared fixtures: the book is built ONCE per test session (strictly, static mode).

The build starts in the background as soon as the tests are collected, and the
test files that read it (those using ``built_book``) run last, so the ~90 s
build overlaps the rest of the suite instead of coming before it; most tests use
one core, the build two.

Set ``TANBIAS_BOOK_DIR=/path/with/_build`` to reuse an existing build (e.g. the
output of ``make book``: ``TANBIAS_BOOK_DIR=.``) while iterating on tests.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from bookhelpers import BIN, CHROMIUM_ARGS, ROOT  # noqa: E402


@dataclasses.dataclass
class BuiltBook:
    build: Path          # the _build folder (html/, .doctrees/)
    html: Path           # _build/html
    returncode: int
    log: str

    def page(self, doc: str) -> Path:
        return self.html / f"{doc}.html"


class _BookBuild:
    """``python -m tanbias.bookbuild`` (strict, static mode) in a background process."""

    def __init__(self):
        self.out = Path(tempfile.mkdtemp(prefix="tanbias-book-"))
        env = dict(os.environ, TANBIAS_MODE="static", PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
        env.pop("JPY_SESSION_NAME", None)
        self.log_path = self.out / "build.log"
        self.proc = subprocess.Popen(
            [str(BIN / "python"), "-m", "tanbias.bookbuild", str(ROOT), "--path-output", str(self.out)],
            env=env, stdout=self.log_path.open("w"), stderr=subprocess.STDOUT)

    def result(self) -> BuiltBook:
        returncode = self.proc.wait()
        build = self.out / "_build"
        return BuiltBook(build, build / "html", returncode, self.log_path.read_text())

    def stop(self, remove: bool):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        if remove:
            shutil.rmtree(self.out, ignore_errors=True)


_BUILD: dict[str, _BookBuild] = {}


@pytest.hookimpl(trylast=True)          # after -m / -k deselection: `make unit` starts no build
def pytest_collection_modifyitems(session, config, items):
    """Test files that read the built book go last; the build starts now, in the background."""
    files = {item.path for item in items if "built_book" in getattr(item, "fixturenames", ())}
    if not files:
        return
    items[:] = [i for i in items if i.path not in files] + [i for i in items if i.path in files]
    if (not config.option.collectonly and not os.environ.get("TANBIAS_BOOK_DIR")
            and (ROOT / "_assets_build" / "plotly.min.js").exists()):
        _BUILD["book"] = _BookBuild()


def pytest_sessionfinish(session, exitstatus):
    if "book" in _BUILD:
        _BUILD.pop("book").stop(remove=exitstatus == 0)


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
    if "book" not in _BUILD:          # e.g. selected by a keyword after collection
        _BUILD["book"] = _BookBuild()
    return _BUILD["book"].result()


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
