"""The built book in a real browser (Debian's headless chromium, offline, file://),
and the chapters in a real JupyterLab (live figures).
"""

from __future__ import annotations

import json
import urllib.request

import pytest

from bookhelpers import BIN, toc_docs
from labhelpers import (check_prose, lab_overrides, lab_server, lab_workspace_url, open_page,
                        raw_markup, run_all_in_lab)

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

@pytest.mark.parametrize("text, kinds", [
    ("a slope of 1.998 and $t^2$", {"a dollar sign (unrendered math)"}),
    ("the ratio \\eta_g falls", {"a TeX command"}),
    ("see {ref}`ch-x` and {glue:text} here", {"a MyST role or directive"}),
    ("(ch-x)=\n# Title", {"a label target"}),
    ("clean prose: η_g = 0.02, sets {0, 1} and {x}", set()),
])
def test_raw_markup_detector(text, kinds):
    assert {f.split(":")[0] for f in raw_markup(text)} == kinds


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

    try:   # a hang guard: a click redraws in under 1 s (0.3-0.7 s under a load of 6 on two cores)
        page.wait_for_function(f"([el, old]) => ({DATA_JS})(el) !== old", arg=[handle, old],
                               timeout=15_000)
    except PlaywrightTimeout:
        pytest.fail(f"{what}: the plotted data did not change")
    return handle.evaluate(DATA_JS)


#: JavaScript: every table, figure, <pre> block (code, a command, printed output) and output block of the
#: article (closed dropdowns opened) wider than the room it has, or whose content runs past its own box
#: (cut off, or hidden behind a sideways scroll), as [tag, width, room, first words]
TOO_WIDE_JS = """() => {
  document.querySelectorAll('main details').forEach(d => d.open = true);
  const art = document.querySelector('main article') || document.querySelector('main');
  const col = art.getBoundingClientRect().width;
  // the room a block has: the column, or the narrower output box of the cell (or the dropdown's
  // output) it is drawn in, where a wider one would scroll sideways
  const room = e => { const box = e.parentElement.closest('.cell_output, .output');
                      return box ? Math.min(col, box.clientWidth) : col; };
  const blocks = [...art.querySelectorAll('table, .plotly-graph-div, pre, .cell_output, .output')];
  return blocks
    .filter(e => e.getBoundingClientRect().width > 0)
    .map(e => [e.tagName, Math.round(Math.max(e.scrollWidth, e.getBoundingClientRect().width)), Math.round(room(e)),
               (e.innerText || '').slice(0, 60)])
    .filter(([, w, r]) => w > r + 1);
}"""


@pytest.mark.parametrize("table_px, fits", [(500, True), (700, False)])
def test_the_width_check_measures_a_table_against_its_output_box(browser, table_px, fits):
    """A table in a cell's output box of 600 px, in a 700 px column: 700 px is caught though the column
    would hold it (it would scroll inside the box), 500 px is not."""
    page = browser.new_page(viewport={"width": 1000, "height": 600})
    try:
        page.set_content('<main><article style="width: 700px"><div class="cell_output" style="width: 600px">'
                         f'<table style="width: {table_px}px"><tr><td>x</td></tr></table></div></article></main>')
        found = page.evaluate(TOO_WIDE_JS)
        assert (found == []) == fits, found
    finally:
        page.close()


@pytest.mark.parametrize("wrap, fits", [(False, False), (True, True)])
def test_the_width_check_catches_a_long_output_line_and_the_books_style_wraps_it(browser, wrap, fits):
    """A printed line of 1,500 px in a 600 px output box is caught, as the measure page's findings once
    were (cut off mid-word); the book's own style sheet (assets/tanbias.css) wraps it, and then it fits."""
    from bookhelpers import ROOT

    css = (ROOT / "assets" / "tanbias.css").read_text(encoding="utf8") if wrap else ""
    line = " ".join(["anisotropy"] * 150)                     # about 1,500 px of monospace text
    page = browser.new_page(viewport={"width": 1000, "height": 600})
    try:
        page.set_content(f'<style>pre {{ font: 11px monospace; overflow: auto; }} {css}</style>'
                         '<main><article style="width: 700px"><div class="cell_output" style="width: 600px">'
                         f'<div class="output stream"><pre>{line}</pre></div></div></article></main>')
        width = page.evaluate("() => document.querySelector('pre').scrollWidth")
        found = page.evaluate(TOO_WIDE_JS)
        assert (found == []) == fits, found
        if not fits:
            assert width >= 1500 and found[0][0] == "PRE", (width, found)
    finally:
        page.close()


#: the window widths at which every table and figure must fit its column: a laptop, a narrow window
READING_WIDTHS = (1280, 800)


@pytest.mark.parametrize("doc", toc_docs())
def test_page_renders_math_figures_and_sliders(doc, built_book, browser, screenshot_dir):
    path = built_book.page(doc)
    assert path.exists(), f"{doc} not built"
    page, problems = open_page(browser, path.as_uri())
    try:
        page.wait_for_load_state("load")
        # MathJax typesets every math node of the page
        n_math = page.locator(".math").count()
        if n_math:
            # attached, not visible: some math sits in closed dropdowns (hints, solutions); 60 s is a
            # hang guard (MathJax typesets a page in under 0.5 s under a load of 6 on two cores)
            page.wait_for_selector("mjx-container", state="attached", timeout=60_000)
            page.wait_for_function(
                "() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=60_000)
            page.evaluate("() => MathJax.startup.promise")
            assert page.locator("mjx-container").count() >= n_math
            assert page.locator("mjx-merror").count() == 0, "MathJax reported a TeX error"
        # the reader sees no raw TeX and no MyST syntax
        raw = raw_markup(page.evaluate(VISIBLE_TEXT_JS))
        assert not raw, f"{doc}: raw markup in the rendered page:\n" + "\n".join(raw[:20])
        # a number glued into a heading stays on the heading's line in the page's contents
        blocks = page.evaluate("""() => [...document.querySelectorAll('a.nav-link .docutils.container')]
                                  .filter(e => getComputedStyle(e).display !== 'inline').length""")
        assert blocks == 0, f"{doc}: {blocks} glued numbers break the contents' lines"
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
        # no table, figure, code or output block is wider than its room, on a laptop and in a narrow window
        for width in READING_WIDTHS:
            page.set_viewport_size({"width": width, "height": 900})
            page.wait_for_timeout(300)                 # plotly redraws a responsive figure on resize
            assert page.evaluate(TOO_WIDE_JS) == [], f"{doc} at {width} px: wider than the column"
        assert not _real_problems(problems), _real_problems(problems)
    finally:
        page.close()


# ---------------------------------------------------------------------- python -m tanbias measure
@pytest.fixture(scope="module")
def measure_report(tmp_path_factory):
    """The report ``python -m tanbias measure`` writes for a tiny Llama at three checkpoints."""
    from tanbias.__main__ import main
    from tanbias.lab.analysis.measure_inputs import MIN_TOKENS
    from tiny_checkpoints import make_tiny_checkpoint

    root = tmp_path_factory.mktemp("measure")
    model = make_tiny_checkpoint("llama", root / "llama", revisions=("step0", "step1", "step2"))
    assert main(["measure", str(model), "--tokens", str(MIN_TOKENS), "--out", str(root / "out"),
                 "--no-progress"]) == 0
    return root / "out" / "report.html"


def test_measure_report_opens_offline_with_working_figures(measure_report, browser, screenshot_dir):
    """The report opens from file:// with every request off the machine refused: every figure is
    drawn, its first slider changes what it shows, each figure links to the online book."""
    from tanbias.figures.report import SECTIONS, book_url, chapter_url

    context = browser.new_context(viewport={"width": 1200, "height": 1400})
    fetched = []

    def offline(route):
        fetched.append(route.request.url)
        return route.continue_() if route.request.url.startswith("file:") else route.abort()

    context.route("**/*", offline)
    page = context.new_page()
    problems = []
    page.on("console", lambda m: problems.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
    try:
        page.goto(measure_report.as_uri())
        page.wait_for_load_state("load")
        assert page.evaluate("() => typeof window.Plotly") == "object", "plotly.js is in the page"
        plots = page.locator(".js-plotly-plot")
        assert plots.count() == len(SECTIONS)
        for i in range(plots.count()):
            plot = plots.nth(i)
            assert plot.locator(".main-svg").count() > 0, f"figure {i} not drawn"
            if not plot.locator("g.slider-group").count():
                continue
            plot.scroll_into_view_if_needed()
            handle = plot.element_handle()
            before = handle.evaluate(DATA_JS)
            active = handle.evaluate("gd => gd.layout.sliders[0].active")
            n_steps = handle.evaluate("gd => gd.layout.sliders[0].steps.length")
            _click_step(page, plot, 0, 0 if active != 0 else n_steps - 1)
            _changed(page, handle, before, f"report figure {i}, slider 0")
        hrefs = page.evaluate("() => [...document.querySelectorAll('a[href]')].map(a => a.href)")
        for key, (_, where) in SECTIONS.items():
            assert chapter_url(*where) in hrefs, f"{key}: no link to {chapter_url(*where)}"
        assert all(h.startswith(book_url()) for h in hrefs), hrefs
        page.screenshot(path=str(screenshot_dir / "measure-report.png"), full_page=True)
        assert [u for u in fetched if not u.startswith("file:")] == [], "the report fetched from the network"
        assert not _real_problems(problems), _real_problems(problems)
    finally:
        context.close()


# ---------------------------------------------------------------------- JupyterLab
@pytest.fixture(scope="module")
def jupyter_lab(tmp_path_factory):
    """A JupyterLab server on 127.0.0.1 serving the repository (as `make lab`)."""
    if not lab_overrides().exists():
        pytest.fail(f"{lab_overrides()} missing: `make lab`/`make test` installs lab-settings/overrides.json")
    with lab_server(BIN, tmp_path_factory) as server:
        yield server


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
    pytest.fail("no chapter shows a tanbias.figures.interactive.Interactive")


def test_lab_opens_chapter_as_notebook_with_live_figure(jupyter_lab, built_book, browser,
                                                        screenshot_dir):
    """Open a chapter in JupyterLab: it is a notebook; run it; its prose renders with its
    numbers (:func:`labhelpers.check_prose`); move a live slider; the FigureWidget next to it
    changes (live mode: the kernel recomputes). One run of the chapter for both."""
    base, token = jupyter_lab
    chapter = _first_interactive_chapter(built_book)
    page, problems = open_page(browser, lab_workspace_url(base, token, chapter), viewport=(1400, 1100))
    try:
        run_all_in_lab(page, wait_until_done=False)
        # the waits below guard against a hang (labhelpers.run_all_in_lab): the live view comes with the
        # chapter's first cells, the chapter runs within make bench's 30 s, a slider move redraws in 1 s
        # an Interactive's live view: a box holding its sliders and its FigureWidget
        view = page.locator(".jp-OutputArea .widget-vbox:has(.widget-slider):has(.js-plotly-plot)").first
        view.wait_for(state="attached", timeout=180_000)
        view.locator(".js-plotly-plot .main-svg").first.wait_for(state="attached", timeout=60_000)
        # let the whole chapter finish: a slider move is queued behind running cells
        page.wait_for_function(
            "() => !Array.from(document.querySelectorAll('.jp-InputArea-prompt'))"
            ".some(p => p.textContent.includes('*'))", timeout=300_000)
        check_prose(page, chapter, screenshot_dir)
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


@pytest.mark.parametrize("chapter", LAB_PROSE_CHAPTERS)
def test_lab_renders_prose_with_its_numbers(chapter, jupyter_lab, browser, screenshot_dir):
    """Run a chapter in JupyterLab and read its prose (:func:`labhelpers.check_prose`)."""
    base, token = jupyter_lab
    page, problems = open_page(browser, lab_workspace_url(base, token, chapter), viewport=(1400, 1100))
    try:
        run_all_in_lab(page)
        check_prose(page, chapter, screenshot_dir)
    finally:
        page.close()
