"""The report page of ``python -m tanbias measure`` (tanbias.figures.report): one file that opens
offline, each figure linked to the section of the book that defines it, on measurements of tiny random
models. The page in a real browser, offline, is tested in ``test_browser.py``.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tanbias.figures import report as fr

ROOT = Path(__file__).resolve().parents[1]


def test_the_books_address_is_the_one_setting():
    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert fr.book_url() == config["html"]["baseurl"].rstrip("/") + "/"
    assert fr.chapter_url("chapters/09_pretrained_models", "sec-ch9-premise") == \
        f"{fr.book_url()}chapters/09_pretrained_models.html#sec-ch9-premise"


@pytest.mark.parametrize("key", list(fr.SECTIONS))
def test_every_figure_links_to_a_section_its_chapter_defines(key):
    _, (doc, label) = fr.SECTIONS[key]
    source = (ROOT / f"{doc}.md").read_text(encoding="utf8")
    assert f"({label})=" in source, f"{doc} defines no label {label}"


@pytest.mark.slow
def test_the_report_is_one_page_that_needs_no_network(measured_tiny):
    from plotly.offline import get_plotlyjs

    page = fr.report_html(measured_tiny["series"])
    assert get_plotlyjs()[:2000] in page, "plotly.js is inlined"
    assert not re.search(r"""<(script|link|img)\b[^>]*\b(src|href)=["']?https?:""", page), "nothing is fetched"
    for key in fr.SECTIONS:
        assert f'<section id="{key}">' in page and fr.chapter_url(*fr.SECTIONS[key][1]) in page, key
    assert page.count('class="plotly-graph-div"') == len(fr.SECTIONS)
    one = fr.report_html(measured_tiny["one"])
    # a bare encoder: no language-model head, so no alignment test and no output matrix; one checkpoint
    for key in ("alignment", "trajectory", "spectrum"):
        assert f'<section id="{key}">' not in one, key
    assert one.count('class="plotly-graph-div"') == len(fr.SECTIONS) - 3


@pytest.mark.slow
def test_each_reading_is_drawn_beside_the_books_models(measured_tiny):
    """One figure per reading: the model's lines over the zoo's committed ones and the lab's final
    runs, each where it reads that quantity (chapter 9 reads the raw mean cosine and IsoScore*)."""
    import pandas as pd

    ref = pd.DataFrame([{"source": "zoo-a", "group": "zoo", "reading": "raw", "layer": 0, "depth": 0.0, "value": 0.5},
                        {"source": "lab decoder", "group": "lab", "reading": "mean_share", "layer": 0, "depth": 0.0,
                         "value": 0.2}])
    figs = fr.report_figures(measured_tiny["one"], ref)
    raw = [t.name for t in figs["reading-raw"].data]
    assert raw[0].startswith("zoo-a") and "lab decoder" not in " ".join(raw)
    assert [t.name for t in figs["reading-mean_share"].data][0].startswith("lab decoder")
    page = fr.report_html(measured_tiny["one"], reference=False)
    assert "zoo-a" not in page and '<section id="reading-cosine_top_share">' in page


def test_a_long_series_draws_a_few_checkpoints_and_tables_them_all(measured_tiny):
    parts = {f"step{i}": None for i in range(19)}
    drawn = list(fr.drawn_revisions(parts))
    assert len(drawn) == fr.MAX_REVISIONS_DRAWN and drawn[0] == "step0" and drawn[-1] == "step18"
