"""Helpers shared by the JupyterLab tests (importable: pytest pythonpath = tests).

A JupyterLab server on a free port (:func:`lab_server`), a chapter opened in a workspace of its
own and run (:func:`run_all_in_lab`), and what a reader must see once it has run
(:func:`check_prose`). ``test_browser.py`` runs them in the development environment,
``test_binder.py`` in a fresh one set up as Binder sets it up.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from bookhelpers import ROOT

#: What must never reach a reader: unrendered math, TeX commands, MyST role or
#: directive syntax, label targets.
RAW_MARKUP = {
    "a dollar sign (unrendered math)": re.compile(r"\$"),
    "a TeX command": re.compile(r"\\[A-Za-z]{2,}"),
    "a MyST role or directive": re.compile(
        r"\{[a-z]+:[a-z-]+\}|\{(?:ref|eval|cite|numref|doc|eq|term|math|mod|func|class)\}|```|:::"),
    "a label target": re.compile(r"^\([\w-]+\)=", re.MULTILINE),
}


def raw_markup(text: str) -> list[str]:
    """Every piece of raw markup in ``text``, with its context (unit-tested by
    ``test_browser.test_raw_markup_detector``)."""
    found = []
    for what, pattern in RAW_MARKUP.items():
        for m in pattern.finditer(text):
            ctx = text[max(0, m.start() - 30):m.end() + 30].replace("\n", " ")
            found.append(f"{what}: '...{ctx}...'")
    return found


def open_page(browser, url, viewport=(1200, 1400)):
    """A new page at ``url`` and the list its console errors and failed requests go to."""
    page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
    problems = []
    page.on("console", lambda m: problems.append(f"console.{m.type}: {m.text}")
            if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"requestfailed: {r.url}"))
    page.goto(url)
    return page, problems


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def lab_server(bin_dir: Path, tmp_path_factory):
    """``(base url, token)`` of a JupyterLab server of the environment ``bin_dir`` (its
    ``jupyter``, its kernel) on 127.0.0.1, serving the repository (as `make lab`)."""
    port, token = free_port(), "tanbias-test"
    env = {k: v for k, v in os.environ.items() if k not in ("TANBIAS_MODE", "JPY_SESSION_NAME")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    env["JUPYTER_RUNTIME_DIR"] = str(tmp_path_factory.mktemp("jupyter-runtime"))
    # fresh user settings and workspace: nothing of a developer's own Lab state leaks in
    env["JUPYTERLAB_SETTINGS_DIR"] = str(tmp_path_factory.mktemp("lab-user-settings"))
    env["JUPYTERLAB_WORKSPACES_DIR"] = str(tmp_path_factory.mktemp("lab-workspaces"))
    log = tmp_path_factory.mktemp("lab") / "lab.log"
    # opening a file makes a checkpoint copy; keep those out of the repository
    checkpoints = tmp_path_factory.mktemp("checkpoints")
    proc = subprocess.Popen(
        [str(bin_dir / "jupyter"), "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={ROOT}",
         "--LabApp.expose_app_in_browser=True", "--ServerApp.open_browser=False",
         f"--FileCheckpoints.checkpoint_dir={checkpoints}",
         f"--AsyncFileCheckpoints.checkpoint_dir={checkpoints}"]
        + (["--allow-root"] if os.geteuid() == 0 else []),
        env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):            # up to 2 min, a hang guard: the server answers in seconds
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if proc.poll() is not None:
                    pytest.fail("jupyter lab exited:\n" + log.read_text()[-3000:])
                time.sleep(0.5)
        else:
            pytest.fail("jupyter lab did not start:\n" + log.read_text()[-3000:])
        yield base, token
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def lab_overrides(prefix: Path = Path(sys.prefix)) -> Path:
    """Where the environment at ``prefix`` keeps the JupyterLab settings that lab-settings/ installs."""
    return prefix / "share" / "jupyter" / "lab" / "settings" / "overrides.json"


#: JavaScript: the rendered text of every Markdown cell of the open notebook,
#: without its (hidden) editor and typeset math. Inline code stays: an {eval}
#: that was not evaluated shows as code.
LAB_MARKDOWN_JS = """() => Array.from(document.querySelectorAll('.jp-MarkdownCell .jp-Cell-inputArea'))
  .map(area => { const c = area.cloneNode(true);
    c.querySelectorAll('.cm-editor, .jp-InputPrompt, .katex, .MathJax, mjx-container, '
      + 'pre, script, style').forEach(e => e.remove());
    return c.textContent; })"""


def run_all_in_lab(page, wait_until_done: bool = True):
    """The open chapter is a notebook: wait for its kernel, run every cell (and,
    by default, wait until no cell is running).

    The waits only guard against a hang, at ten times the idle figure or more: the notebook shows
    its cells and its kernel is idle within seconds (the whole server starts in 13 s under a load of
    6 on two cores), and a chapter runs within make bench's 30 s target (300 s)."""
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=120_000)
    assert page.locator(".jp-FileEditor").count() == 0, "the chapter opened as a text file"
    page.wait_for_function("() => window.jupyterapp !== undefined", timeout=30_000)
    page.wait_for_function(
        "() => { const w = window.jupyterapp.shell.currentWidget;"
        " const k = w && w.sessionContext && w.sessionContext.session"
        " && w.sessionContext.session.kernel; return k && k.status === 'idle'; }",
        timeout=180_000)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    if not wait_until_done:
        return
    page.wait_for_timeout(2_000)
    page.wait_for_function(
        "() => !Array.from(document.querySelectorAll('.jp-InputArea-prompt'))"
        ".some(p => p.textContent.includes('*'))", timeout=300_000)


def lab_workspace_url(base: str, token: str, chapter: str) -> str:
    """The chapter in a workspace of its own, reset: only this chapter is open (a restored
    tab from another test would be the current widget that "run all" runs)."""
    workspace = Path(chapter).stem.replace("_", "-")
    return f"{base}/lab/workspaces/{workspace}/tree/{chapter}?token={token}&reset"


#: what jupyterlab-myst shows beside a citation or a reference it cannot resolve (a warning icon)
UNRESOLVED = ".jp-MarkdownCell [title='Citation Not Found'], .jp-MarkdownCell [title='Cross Reference Not Found']"


def check_prose(page, chapter: str, screenshot_dir) -> None:
    """After a run in JupyterLab: the chapter's Markdown renders as MyST (jupyterlab-myst),
    every {eval} shows its number, its dropdowns open on a click, no raw role or TeX reaches the reader, nothing shows the
    warning of an unresolved citation or reference, and every citation reads as its author and
    year, a link to the paper (screenshot ``lab-citation-<chapter>.png``)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    from tanbias.book._sphinxext import markdown_citations

    n_eval = (ROOT / chapter).read_text(encoding="utf8").count("{eval}`")
    # the Markdown cells' expressions come back from the kernel after the last cell ran
    try:
        page.wait_for_function(f"() => !({LAB_MARKDOWN_JS})().join('\\n').includes('glued[')",
                               timeout=60_000)
    except PlaywrightTimeout:
        pass                           # the assertion below says how many are missing
    text = "\n".join(page.evaluate(LAB_MARKDOWN_JS))
    page.screenshot(path=str(screenshot_dir / f"lab-prose-{Path(chapter).stem}.png"))
    assert n_eval > 0, f"{chapter} quotes no number: pick another chapter"
    shown = text.count("glued[")
    assert shown == 0, (f"{shown} of {n_eval} {{eval}} expressions were shown instead of their "
                        "values (jupyterlab-myst evaluates only rendered cells: "
                        "lab-settings/overrides.json turns notebook windowing off)")
    raw = raw_markup(text)
    assert not raw, f"{chapter} in JupyterLab shows raw markup:\n" + "\n".join(raw[:20])
    # the audit trail's dropdowns (``{admonition}`` with ``:class: dropdown``) are closed details that open
    # on a click and show their numbers evaluated
    if ":class: dropdown" in (ROOT / chapter).read_text(encoding="utf8"):
        details = page.locator(".jp-MarkdownCell .myst details")
        assert details.count() > 0, f"{chapter} in JupyterLab: its dropdowns are not rendered as dropdowns"
        first = details.first
        first.scroll_into_view_if_needed()
        assert not first.evaluate("e => e.open"), f"{chapter} in JupyterLab: a dropdown starts open"
        first.locator("summary").first.click()
        page.wait_for_timeout(300)
        assert first.evaluate("e => e.open"), f"{chapter} in JupyterLab: a dropdown does not open on a click"
        assert "glued[" not in first.inner_text(), f"{chapter} in JupyterLab: a dropdown shows an unevaluated number"
    unresolved = page.locator(UNRESOLVED)
    assert unresolved.count() == 0, (f"{chapter} in JupyterLab: {unresolved.count()} citations or references "
                                     f"shown as bare keys: {unresolved.all_text_contents()[:10]}")
    citations = markdown_citations((ROOT / chapter).read_text(encoding="utf8"))
    for link_text, url, _ in citations:
        shown = page.locator(f".jp-MarkdownCell a[href='{url}']").all_text_contents()
        assert link_text in [" ".join(t.split()) for t in shown], \
            f"{chapter} in JupyterLab: the citation {link_text!r} is not a link to {url} (shown: {shown})"
    if citations:
        first = page.locator(f".jp-MarkdownCell a[href='{citations[0][1]}']").first
        first.scroll_into_view_if_needed()
        first.hover()                       # JupyterLab shows where the link leads
        page.screenshot(path=str(screenshot_dir / f"lab-citation-{Path(chapter).stem}.png"))
