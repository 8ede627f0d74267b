"""The figures and the report page of ``python -m tanbias measure`` (tanbias.figures.measure,
tanbias.figures.report), on measurements of tiny random models.

The page in a real browser, offline, is tested in ``test_browser.py``.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from tanbias.figures import measure as fm
from tanbias.figures import report as fr
from tanbias.lab.analysis import measure as ms
from tiny_checkpoints import make_tiny_checkpoint

ROOT = Path(__file__).resolve().parents[1]
SMALL = dict(n_tokens=ms.MIN_TOKENS, draws=2, n_boot=10, robust_m=(8,), probe_tokens=256,
             probe={"n_controls": 2}, frequency_docs=500)


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """``{"series": tables, "one": tables}``: a tiny Llama at three checkpoints, a tiny bare BERT."""
    root = tmp_path_factory.mktemp("measured")
    series = make_tiny_checkpoint("llama", root / "llama", revisions=("step0", "step1", "step2"))
    ms.measure_model(series, root / "out-series", progress=False, **SMALL)
    one = make_tiny_checkpoint("bert", root / "bert", revisions=("step0",), head=False) / "step0"
    ms.measure_model(one, root / "out-one", progress=False, **SMALL)
    return {"series": ms.load_measurement(root / "out-series"), "one": ms.load_measurement(root / "out-one")}


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


def test_a_series_is_split_into_checkpoints_each_with_the_null(measured):
    parts = ms.split_revisions(measured["series"])
    assert list(parts) == ["step0", "step1", "step2"]
    for part in parts.values():
        assert "revision" not in part["anisotropy"] and set(part["alignment"]["model"]) == {"trained", "random-init"}
    one = ms.split_revisions(measured["one"])
    assert list(one) == ["step0"] and one["step0"] is measured["one"]


def test_findings_state_the_readings_with_their_words(measured):
    said = ms.findings(measured["series"])
    sections = [k for k, _ in said]
    assert {"premise", "anisotropy", "curvature", "alignment", "trajectory"} <= set(sections)
    premise = said[0][1]
    assert re.search(r"ρ\(log frequency, radius t\) = [+-]\d\.\d\d \[[+-]\d\.\d\d, [+-]\d\.\d\d\], "
                     r"(positive|negative|indistinguishable)", premise), premise
    assert "checkpoint step2" in premise, "a series is read at its last checkpoint"
    # the enrichment's peak over the series is the trajectory table's
    traj = measured["series"]["trajectory"]
    peak = traj.loc[traj["enrichment_gmean"].idxmax(), "revision"]
    assert f"peaks at {peak}" in said[-1][1]
    # a model without a head: no alignment test to report
    assert "alignment" not in {k for k, _ in ms.findings(measured["one"])}


def test_the_trajectory_follows_every_reading_with_the_same_traces(measured):
    fig = fm.trajectory_interactive(measured["series"]["trajectory"])
    frames = fig.static_dict()["frames"]
    assert len(frames) == len(fm.TRAJECTORY)
    assert len({len(f["data"]) for f in frames}) == 1
    first = fig.make_figure(reading="rho_radius_t")
    line = next(t for t in first.data if t.name == "English")
    assert list(line.x) == ["step0", "step1", "step2"]
    assert np.allclose(line.y, measured["series"]["trajectory"]["rho_radius_t"])


def test_the_report_is_one_page_that_needs_no_network(measured):
    from plotly.offline import get_plotlyjs

    page = fr.report_html(measured["series"])
    assert get_plotlyjs()[:2000] in page, "plotly.js is inlined"
    assert not re.search(r"""<(script|link|img)\b[^>]*\b(src|href)=["']?https?:""", page), "nothing is fetched"
    for key in fr.SECTIONS:
        assert f'<section id="{key}">' in page and fr.chapter_url(*fr.SECTIONS[key][1]) in page, key
    assert page.count('class="plotly-graph-div"') == len(fr.SECTIONS)
    one = fr.report_html(measured["one"])
    assert '<section id="alignment">' not in one and '<section id="trajectory">' not in one
    assert one.count('class="plotly-graph-div"') == len(fr.SECTIONS) - 2


def test_the_six_readings_are_drawn_from_the_anisotropy_table(measured):
    parts = ms.split_revisions(measured["one"])
    fig = fm.readings_interactive(parts)
    a = measured["one"]["anisotropy"]
    for reading in fm.READINGS:
        line = fig.make_figure(reading=reading).data[0]
        assert np.allclose(line.y, a.sort_values("layer")[reading], equal_nan=True), reading
    # chapter 9's committed tables carry none of them: their report draws the figure not
    from tanbias.lab.analysis.pretrained import load_pretrained

    assert "readings" not in fr.report_figures({**load_pretrained("minilm-l6")})


def test_a_long_series_draws_a_few_checkpoints_and_tables_them_all(measured):
    parts = {f"step{i}": None for i in range(19)}
    drawn = list(fr.drawn_revisions(parts))
    assert len(drawn) == fr.MAX_REVISIONS_DRAWN and drawn[0] == "step0" and drawn[-1] == "step18"
