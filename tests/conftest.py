"""Shared fixtures: the book is built ONCE per test session (strictly, static mode).

Set ``TANBIAS_BOOK_DIR=/path/with/_build`` to reuse an existing build (e.g. the
output of ``make book``: ``TANBIAS_BOOK_DIR=.``) while iterating on tests.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from bookhelpers import BIN, CHROMIUM_ARGS, ROOT  # noqa: E402


@dataclasses.dataclass
class BuiltBook:
    build: Path          # the _build folder (html/, .doctrees/)
    html: Path           # _build/html
    returncode: int
    log: str
    seconds: float

    def page(self, doc: str) -> Path:
        return self.html / f"{doc}.html"


@pytest.fixture(scope="session")
def built_book(tmp_path_factory) -> BuiltBook:
    """The book built once, strictly, with ``TANBIAS_MODE=static`` (as ``make book``)."""
    reuse = os.environ.get("TANBIAS_BOOK_DIR")
    if reuse:
        build = Path(reuse).resolve() / "_build"
        if not (build / "html" / "index.html").exists():
            pytest.fail(f"TANBIAS_BOOK_DIR={reuse}: no built book under {build}")
        return BuiltBook(build, build / "html", 0, "(reused build)", 0.0)
    if not (ROOT / "_assets_build" / "plotly.min.js").exists():
        pytest.fail("static assets missing: run `make assets` (make test does it)")
    out = tmp_path_factory.mktemp("book")
    env = dict(os.environ, TANBIAS_MODE="static", PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    env.pop("JPY_SESSION_NAME", None)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [str(BIN / "python"), "-m", "tanbias.bookbuild", str(ROOT), "--path-output", str(out)],
        env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    build = out / "_build"
    return BuiltBook(build, build / "html", proc.returncode, proc.stdout + proc.stderr, seconds)


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
