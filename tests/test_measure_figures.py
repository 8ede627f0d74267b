"""The figures of ``python -m tanbias measure`` (tanbias.figures.measure), on measurements of tiny
random models; the report page that shows them is tested in ``test_report_figures.py``.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from tanbias.figures import measure as fm
from tanbias.figures import report as fr
from tanbias.lab.analysis import measure_folder as mf
from tanbias.lab.analysis import measure_report as mr
from tanbias.theory.anisotropy import LABELS


@pytest.mark.slow
def test_a_series_is_split_into_checkpoints_each_with_the_null(measured_tiny):
    parts = mf.split_revisions(measured_tiny["series"])
    assert list(parts) == ["step0", "step1", "step2"]
    for part in parts.values():
        assert "revision" not in part["anisotropy"] and set(part["alignment"]["model"]) == {"trained", "random-init"}
    one = mf.split_revisions(measured_tiny["one"])
    # one model: its own tables, unsplit and uncopied, without chapter 9's results (the figures draw none)
    assert list(one) == ["step0"] and set(one["step0"]) == set(measured_tiny["one"]) - {"results"}
    assert all(one["step0"][k] is measured_tiny["one"][k] for k in one["step0"])


def test_findings_state_the_readings_with_their_words(measured_tiny):
    said = mr.findings(measured_tiny["series"])
    sections = [k for k, _ in said]
    assert {"premise", "anisotropy", "curvature", "alignment", "trajectory"} <= set(sections)
    premise = said[0][1]
    assert re.search(r"ρ\(log frequency, radius t\) = [+−]\d\.\d\d \[[+−]\d\.\d\d, [+−]\d\.\d\d\], "
                     r"(positive|negative|indistinguishable)", premise), premise
    assert "checkpoint step2" in premise, "a series is read at its last checkpoint"
    # the enrichment's peak over the series is the trajectory table's
    traj = measured_tiny["series"]["trajectory"]
    peak = traj.loc[traj["enrichment_gmean"].idxmax(), "revision"]
    assert f"peaks at {peak}" in said[-1][1]
    # a model without a head: no alignment test to report
    assert "alignment" not in {k for k, _ in mr.findings(measured_tiny["one"])}


def test_the_trajectory_follows_every_reading_with_the_same_traces(measured_tiny):
    fig = fm.trajectory_interactive(measured_tiny["series"]["trajectory"])
    frames = fig.static_dict()["frames"]
    assert len(frames) == len(fm.TRAJECTORY)
    assert len({len(f["data"]) for f in frames}) == 1
    first = fig.make_figure(reading="rho_radius_t")
    line = next(t for t in first.data if t.name == "English")
    assert list(line.x) == [0, 1, 2] and list(line.text) == ["step0", "step1", "step2"]   # steps, as numbers
    assert np.allclose(line.y, measured_tiny["series"]["trajectory"]["rho_radius_t"])
    # every frame draws every checkpoint and fits its y axis to its own reading
    from tanbias.figures.interactive import _decode

    for f in frames:
        lo, hi = f["layout"]["yaxis"]["range"]
        ys = [v for t in f["data"] for v in np.asarray(_decode(t.get("y", [])), float).ravel() if np.isfinite(v)]
        xs = [np.asarray(_decode(t["x"]), float) for t in f["data"] if t.get("mode") == "lines+markers"]
        assert lo <= min(ys) and max(ys) <= hi, f["name"]
        assert all(len(x) == 3 for x in xs), f["name"]
    spans = {f["name"]: tuple(f["layout"]["yaxis"]["range"]) for f in frames}
    assert len(set(spans.values())) > 1


def test_each_reading_is_drawn_from_the_anisotropy_table(measured_tiny):
    parts = mf.split_revisions(measured_tiny["one"])
    figs = {k.removeprefix("reading-"): f for k, f in fr.report_figures(measured_tiny["one"]).items()
            if k.startswith("reading-")}
    a = measured_tiny["one"]["anisotropy"].sort_values("layer")
    assert list(figs) == list(fm.READINGS) and "centered" not in figs, "the centred mean cosine is left out"
    for reading, fig in figs.items():
        line = fig.data[-1]
        assert np.allclose(line.y, a[reading], equal_nan=True), reading
        assert fig.layout.yaxis.title.text == LABELS[reading][1] and fig.layout.title.text, reading
    # chapter 9's committed tables carry IsoScore* alone of them
    from tanbias.lab.analysis.pretrained import load_pretrained

    minilm = load_pretrained("minilm-l6")
    assert [k for k in fr.report_figures(minilm) if k.startswith("reading-")] == ["reading-isoscore_star"]


def test_the_widths_figure_draws_the_square_root_law_and_chapter_9(measured_tiny):
    import pandas as pd

    widths = pd.DataFrame({"tokens": [4096, 1024], "width": [0.3, 0.6], "median_width": [0.25, 0.5]})
    fig = fm.widths_figure(widths, chapter=0.2)
    law, last, median, chapter = fig.data
    assert list(last.x) == [1024, 4096] and np.allclose(law.y, [0.6, 0.3]) and list(chapter.y) == [0.2, 0.2]
    assert fig.layout.xaxis.type == "log" and fig.layout.title.text


def test_the_reading_labels_have_one_home():
    """The figures name every reading from tanbias.theory.anisotropy.LABELS (no list of their own)."""
    import inspect

    from tanbias.theory.anisotropy import MEASURE_READINGS

    assert set(fm.READINGS) <= set(LABELS) and set(MEASURE_READINGS) <= set(fm.READINGS)
    assert "mean cosine of all pairs" not in inspect.getsource(fm)


def test_the_spectrum_rises_to_one_above_the_isotropic_diagonal(measured_tiny):
    parts = mf.split_revisions(measured_tiny["series"])
    fig = fm.spectrum_figure(parts)
    assert [t.name for t in fig.data] == ["isotropic matrix", *parts]
    for line in fig.data[1:]:
        y = np.asarray(line.y)
        assert np.isclose(y[-1], 1.0) and np.all(np.diff(y) >= -1e-12) and np.all(y >= np.asarray(line.x) - 1e-9)


def test_the_trajectory_names_its_reading_in_every_frame_and_its_labels_fit(measured_tiny):
    """As the readings' figures once did not: the static figure's frames redraw annotations, not
    axes, so the y title is an annotation each frame carries; the slider's labels are short enough
    to sit side by side; the enrichment, chapter 8's reading over training, comes first."""
    fig = fm.trajectory_interactive(measured_tiny["series"]["trajectory"])
    static = fig.static_dict()
    titles = [[a["text"] for a in f["layout"]["annotations"] if a.get("name") == "y title"]
              for f in static["frames"]]
    assert titles == [[fm.TRAJECTORY[c][2]] for c in fm.TRAJECTORY]
    labels = [step["label"] for step in static["layout"]["sliders"][0]["steps"]]
    assert labels[0] == "enrichment" and max(map(len, labels)) <= 12
