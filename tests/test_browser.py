"""The built book in a real browser (Debian's headless chromium, offline, file://),
and the chapters in a real JupyterLab (live figures).
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from bookhelpers import BIN, ROOT, toc_docs

pytestmark = pytest.mark.browser

#: Console errors that are known and harmless (DESIGN.md, "The stack"):
HARMLESS = (
    "Identifier 'THEBE_JS_URL' has already been declared",  # JB 1.0.4 adds sphinx-thebe's config twice
    "MathJax.Hub.Queue",                 # html-manager expects MathJax 2; the page runs MathJax 3
    "reading 'Queue'",                   # ... the same error as Chromium words it
    "Got invalid theme mode",            # pydata theme: no stored light/dark choice on file://
)

#: JavaScript: what a figure shows - every trace's numbers (plotly decodes typed
#: arrays into _fullData), the title and the annotations' text.
DATA_JS = """gd => JSON.stringify([
  gd._fullData.map(t => [Array.from(t.x || []), Array.from(t.y || []),
                         Array.from((t.z || []).flat ? (t.z || []).flat() : [])]),
  ((gd._fullLayout || {}).title || {}).text || '',
  ((gd._fullLayout || {}).annotations || []).map(a => a.text)])"""


#: JavaScript: the text a reader sees in the article, with code, typeset math,
#: API signatures (a constant's value may be a regular expression), figures and scripts removed (hidden dropdowns, e.g. solutions, included).
VISIBLE_TEXT_JS = """() => {
  const root = (document.querySelector('main article') || document.querySelector('main')
                || document.body).cloneNode(true);
  root.querySelectorAll('pre, .highlight, script, style, mjx-container, .math, '
    + '.js-plotly-plot, .plotly-graph-div, svg, .headerlink, .sig, '
    + 'code:not(.tanbias-check code)').forEach(e => e.remove());
  return root.textContent;
}"""

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
    ``test_raw_markup_detector``)."""
    found = []
    for what, pattern in RAW_MARKUP.items():
        for m in pattern.finditer(text):
            ctx = text[max(0, m.start() - 30):m.end() + 30].replace("\n", " ")
            found.append(f"{what}: '...{ctx}...'")
    return found


@pytest.mark.parametrize("text, kinds", [
    ("a slope of 1.998 and $t^2$", {"a dollar sign (unrendered math)"}),
    ("the ratio \\eta_g falls", {"a TeX command"}),
    ("see {ref}`ch-x` and {glue:text} here", {"a MyST role or directive"}),
    ("(ch-x)=\n# Title", {"a label target"}),
    ("clean prose: η_g = 0.02, sets {0, 1} and {x}", set()),
])
def test_raw_markup_detector(text, kinds):
    assert {f.split(":")[0] for f in raw_markup(text)} == kinds


def _open(browser, url, viewport=(1200, 1400)):
    page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
    problems = []
    page.on("console", lambda m: problems.append(f"console.{m.type}: {m.text}")
            if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"requestfailed: {r.url}"))
    page.goto(url)
    return page, problems


def _real_problems(problems):
    return [p for p in problems if not any(h in p for h in HARMLESS)]


def _click_step(page, plot, slider: int, step: int):
    """Click step ``step`` of slider ``slider`` on the rail, at the x of its tick.

    The rail's touch rectangle covers the labels (a click on a label never
    arrives), and plotly hides every other label when they crowd, while each
    step keeps its tick."""
    group = plot.locator("g.slider-group").nth(slider)
    tick = group.locator("rect.slider-tick-rect").nth(step).bounding_box()
    rail = group.locator("rect.slider-rail-touch-rect").bounding_box()
    page.mouse.click(tick["x"] + tick["width"] / 2, rail["y"] + rail["height"] / 2)


def _changed(page, handle, old: str, what: str) -> str:
    """Wait until the plotted data differ from ``old``; return the new data."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(f"([el, old]) => ({DATA_JS})(el) !== old", arg=[handle, old],
                               timeout=15_000)
    except PlaywrightTimeout:
        pytest.fail(f"{what}: the plotted data did not change")
    return handle.evaluate(DATA_JS)


@pytest.mark.parametrize("doc", toc_docs())
def test_page_renders_math_figures_and_sliders(doc, built_book, browser, screenshot_dir):
    path = built_book.page(doc)
    assert path.exists(), f"{doc} not built"
    page, problems = _open(browser, path.as_uri())
    try:
        page.wait_for_load_state("load")
        # MathJax typesets every math node of the page
        n_math = page.locator(".math").count()
        if n_math:
            # attached, not visible: some math sits in closed dropdowns (hints, solutions)
            page.wait_for_selector("mjx-container", state="attached", timeout=60_000)
            page.wait_for_function(
                "() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=60_000)
            page.evaluate("() => MathJax.startup.promise")
            assert page.locator("mjx-container").count() >= n_math
            assert page.locator("mjx-merror").count() == 0, "MathJax reported a TeX error"
        # the reader sees no raw TeX and no MyST syntax
        raw = raw_markup(page.evaluate(VISIBLE_TEXT_JS))
        assert not raw, f"{doc}: raw markup in the rendered page:\n" + "\n".join(raw[:20])
        # every plotly figure is drawn
        plots = page.locator(".js-plotly-plot")
        for i in range(page.locator(".plotly-graph-div").count()):
            assert page.locator(".plotly-graph-div").nth(i).locator(".main-svg").count() > 0, \
                f"{doc}: figure {i} not rendered"
        assert page.evaluate("() => typeof window.Plotly") in ("object", "undefined")
        # plotly sliders change what is plotted, and several sliders combine
        for i in range(plots.count()):
            plot = plots.nth(i)
            n_sliders = plot.locator("g.slider-group").count()
            if not n_sliders:
                continue
            plot.scroll_into_view_if_needed()
            handle = plot.element_handle()
            before = handle.evaluate(DATA_JS)
            label0 = plot.locator("g.slider-group").nth(0).locator(":scope > text.slider-label").text_content()
            active = handle.evaluate("gd => gd.layout.sliders.map(s => s.active)")
            n_steps = handle.evaluate("gd => gd.layout.sliders.map(s => s.steps.length)")
            target = 0 if active[0] != 0 else n_steps[0] - 1
            _click_step(page, plot, 0, target)
            after = _changed(page, handle, before, f"{doc}: slider 0 of figure {i}")
            assert handle.evaluate("gd => gd.layout.sliders[0].active") == target
            label1 = plot.locator("g.slider-group").nth(0).locator(":scope > text.slider-label").text_content()
            assert label1 != label0, (label0, label1)
            if n_sliders > 1:
                # move slider 1, then put slider 0 back: the view must keep slider 1's value
                target1 = 0 if active[1] != 0 else n_steps[1] - 1
                _click_step(page, plot, 1, target1)
                _changed(page, handle, after, f"{doc}: slider 1 of figure {i}")
                moved = handle.evaluate(DATA_JS)
                _click_step(page, plot, 0, active[0])
                back = _changed(page, handle, moved, f"{doc}: slider 0 of figure {i}, back")
                assert handle.evaluate("gd => gd.layout.sliders.map(s => s.active)")[:2] == \
                    [active[0], target1]
                # slider 0 is back at its start but slider 1 moved: not the initial view
                assert back != before, f"{doc}: figure {i}'s sliders do not combine"
            page.screenshot(path=str(screenshot_dir / f"{doc.replace('/', '_')}-fig{i}.png"))
        page.screenshot(path=str(screenshot_dir / f"{doc.replace('/', '_')}.png"))
        assert not _real_problems(problems), _real_problems(problems)
    finally:
        page.close()


# ---------------------------------------------------------------------- JupyterLab
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def jupyter_lab(tmp_path_factory):
    """A JupyterLab server on 127.0.0.1 serving the repository (as `make lab`)."""
    overrides = Path(sys.prefix, "share", "jupyter", "lab", "settings", "overrides.json")
    if not overrides.exists():
        pytest.fail(f"{overrides} missing: `make lab`/`make test` installs lab-settings/overrides.json")
    port, token = _free_port(), "tanbias-test"
    env = {k: v for k, v in os.environ.items() if k not in ("TANBIAS_MODE", "JPY_SESSION_NAME")}
    env["PATH"] = f"{BIN}{os.pathsep}{env['PATH']}"
    env["JUPYTER_RUNTIME_DIR"] = str(tmp_path_factory.mktemp("jupyter-runtime"))
    # fresh user settings and workspace: nothing of a developer's own Lab state leaks in
    env["JUPYTERLAB_SETTINGS_DIR"] = str(tmp_path_factory.mktemp("lab-user-settings"))
    env["JUPYTERLAB_WORKSPACES_DIR"] = str(tmp_path_factory.mktemp("lab-workspaces"))
    log = tmp_path_factory.mktemp("lab") / "lab.log"
    # opening a file makes a checkpoint copy; keep those out of the repository
    checkpoints = tmp_path_factory.mktemp("checkpoints")
    proc = subprocess.Popen(
        [str(BIN / "jupyter"), "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={ROOT}",
         "--LabApp.expose_app_in_browser=True", "--ServerApp.open_browser=False",
         f"--FileCheckpoints.checkpoint_dir={checkpoints}",
         f"--AsyncFileCheckpoints.checkpoint_dir={checkpoints}"]
        + (["--allow-root"] if os.geteuid() == 0 else []),
        env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
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


def test_lab_settings_make_markdown_open_as_notebook(jupyter_lab):
    base, token = jupyter_lab
    url = f"{base}/lab/api/settings/@jupyterlab/docmanager-extension:plugin?token={token}"
    settings = json.load(urllib.request.urlopen(url, timeout=10))
    # overrides.json replaces the schema's default (the user's own settings may still win)
    viewers = {**settings["schema"]["properties"]["defaultViewers"]["default"],
               **settings["settings"].get("defaultViewers", {})}
    assert viewers.get("markdown") == "Jupytext Notebook" and viewers.get("myst") == "Jupytext Notebook"


def _first_interactive_chapter(built_book) -> str:
    """The first chapter whose built page shows an Interactive (chapters often
    create them through package helpers, so the source does not say)."""
    for doc in toc_docs():
        page = built_book.page(doc)
        if page.exists() and 'class="tanbias-interactive"' in page.read_text(encoding="utf8"):
            return f"{doc}.md"
    pytest.fail("no chapter shows a tanbias.interactive.Interactive")


def test_lab_opens_chapter_as_notebook_with_live_figure(jupyter_lab, built_book, browser,
                                                        screenshot_dir):
    """Open a chapter in JupyterLab: it is a notebook; run it; its prose renders with its
    numbers (:func:`_check_prose`); move a live slider; the FigureWidget next to it
    changes (live mode: the kernel recomputes). One run of the chapter for both."""
    base, token = jupyter_lab
    chapter = _first_interactive_chapter(built_book)
    page, problems = _open(browser, _lab_workspace_url(base, token, chapter), viewport=(1400, 1100))
    try:
        _run_all_in_lab(page, wait_until_done=False)
        # an Interactive's live view: a box holding its sliders and its FigureWidget
        view = page.locator(".jp-OutputArea .widget-vbox:has(.widget-slider):has(.js-plotly-plot)").first
        view.wait_for(state="attached", timeout=180_000)
        view.locator(".js-plotly-plot .main-svg").first.wait_for(state="attached", timeout=60_000)
        # let the whole chapter finish: a slider move is queued behind running cells
        page.wait_for_function(
            "() => !Array.from(document.querySelectorAll('.jp-InputArea-prompt'))"
            ".some(p => p.textContent.includes('*'))", timeout=300_000)
        _check_prose(page, chapter, screenshot_dir)
        view.scroll_into_view_if_needed()
        plot = view.locator(".js-plotly-plot").first.element_handle()
        before = plot.evaluate(DATA_JS)
        handle = view.locator(".widget-slider .noUi-handle").first
        readout = view.locator(".widget-readout").first
        start = readout.text_content()
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        for attempt in range(6):  # keyboard moves of the first slider; the kernel recomputes
            handle.focus()
            for _ in range(10):
                page.keyboard.press("ArrowRight" if attempt % 2 == 0 else "ArrowLeft")
            try:
                page.wait_for_function(f"([el, old]) => ({DATA_JS})(el) !== old",
                                       arg=[plot, before], timeout=20_000)
                break
            except PlaywrightTimeout:
                continue
        else:
            pytest.fail(f"live figure did not change: slider readout {start!r} -> "
                        f"{readout.text_content()!r}")
        page.wait_for_timeout(500)
        page.screenshot(path=str(screenshot_dir / "lab-live.png"))
    finally:
        page.close()


#: Chapters whose prose the JupyterLab test reads after running them: one that quotes many
#: numbers (76 {eval} roles) and trains nothing in the
#: kernel, so that the test reads prose rather than waits (chapter 8 quotes 90 but trains the
#: post-hoc demonstration); the live-figure test reads the first interactive chapter's.
LAB_PROSE_CHAPTERS = ["chapters/09_pretrained_models.md"]

#: JavaScript: the rendered text of every Markdown cell of the open notebook,
#: without its (hidden) editor and typeset math. Inline code stays: an {eval}
#: that was not evaluated shows as code.
LAB_MARKDOWN_JS = """() => Array.from(document.querySelectorAll('.jp-MarkdownCell .jp-Cell-inputArea'))
  .map(area => { const c = area.cloneNode(true);
    c.querySelectorAll('.cm-editor, .jp-InputPrompt, .katex, .MathJax, mjx-container, '
      + 'pre, script, style').forEach(e => e.remove());
    return c.textContent; })"""


def _run_all_in_lab(page, wait_until_done: bool = True):
    """The open chapter is a notebook: wait for its kernel, run every cell (and,
    by default, wait until no cell is running)."""
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


def _lab_workspace_url(base: str, token: str, chapter: str) -> str:
    """The chapter in a workspace of its own, reset: only this chapter is open (a restored
    tab from another test would be the current widget that "run all" runs)."""
    workspace = Path(chapter).stem.replace("_", "-")
    return f"{base}/lab/workspaces/{workspace}/tree/{chapter}?token={token}&reset"


def _check_prose(page, chapter: str, screenshot_dir) -> None:
    """After a run in JupyterLab: the chapter's Markdown renders as MyST (jupyterlab-myst),
    every {eval} shows its number, and no raw role or TeX reaches the reader."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

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


@pytest.mark.parametrize("chapter", LAB_PROSE_CHAPTERS)
def test_lab_renders_prose_with_its_numbers(chapter, jupyter_lab, browser, screenshot_dir):
    """Run a chapter in JupyterLab and read its prose (:func:`_check_prose`)."""
    base, token = jupyter_lab
    page, problems = _open(browser, _lab_workspace_url(base, token, chapter), viewport=(1400, 1100))
    try:
        _run_all_in_lab(page)
        _check_prose(page, chapter, screenshot_dir)
    finally:
        page.close()
