"""The figures of ``python -m tanbias measure`` (tanbias.figures.measure), on measurements of tiny
random models; the report page that shows them is tested in ``test_report_figures.py``.
"""
from __future__ import annotations

import re

import numpy as np

from tanbias.figures import measure as fm
from tanbias.figures import report as fr
from tanbias.lab.analysis import measure as ms


def test_a_series_is_split_into_checkpoints_each_with_the_null(measured_tiny):
    parts = ms.split_revisions(measured_tiny["series"])
    assert list(parts) == ["step0", "step1", "step2"]
    for part in parts.values():
        assert "revision" not in part["anisotropy"] and set(part["alignment"]["model"]) == {"trained", "random-init"}
    one = ms.split_revisions(measured_tiny["one"])
    assert list(one) == ["step0"] and one["step0"] is measured_tiny["one"]


def test_findings_state_the_readings_with_their_words(measured_tiny):
    said = ms.findings(measured_tiny["series"])
    sections = [k for k, _ in said]
    assert {"premise", "anisotropy", "curvature", "alignment", "trajectory"} <= set(sections)
    premise = said[0][1]
    assert re.search(r"ρ\(log frequency, radius t\) = [+-]\d\.\d\d \[[+-]\d\.\d\d, [+-]\d\.\d\d\], "
                     r"(positive|negative|indistinguishable)", premise), premise
    assert "checkpoint step2" in premise, "a series is read at its last checkpoint"
    # the enrichment's peak over the series is the trajectory table's
    traj = measured_tiny["series"]["trajectory"]
    peak = traj.loc[traj["enrichment_gmean"].idxmax(), "revision"]
    assert f"peaks at {peak}" in said[-1][1]
    # a model without a head: no alignment test to report
    assert "alignment" not in {k for k, _ in ms.findings(measured_tiny["one"])}


def test_the_trajectory_follows_every_reading_with_the_same_traces(measured_tiny):
    fig = fm.trajectory_interactive(measured_tiny["series"]["trajectory"])
    frames = fig.static_dict()["frames"]
    assert len(frames) == len(fm.TRAJECTORY)
    assert len({len(f["data"]) for f in frames}) == 1
    first = fig.make_figure(reading="rho_radius_t")
    line = next(t for t in first.data if t.name == "English")
    assert list(line.x) == ["step0", "step1", "step2"]
    assert np.allclose(line.y, measured_tiny["series"]["trajectory"]["rho_radius_t"])


def test_the_six_readings_are_drawn_from_the_anisotropy_table(measured_tiny):
    parts = ms.split_revisions(measured_tiny["one"])
    fig = fm.readings_interactive(parts)
    a = measured_tiny["one"]["anisotropy"]
    for reading in fm.READINGS:
        line = fig.make_figure(reading=reading).data[0]
        assert np.allclose(line.y, a.sort_values("layer")[reading], equal_nan=True), reading
    # chapter 9's committed tables carry none of them: their report draws the figure not
    from tanbias.lab.analysis.pretrained import load_pretrained

    assert "readings" not in fr.report_figures({**load_pretrained("minilm-l6")})


def test_the_readings_axis_title_follows_the_slider_and_its_labels_fit(measured_tiny):
    """The static figure's frames redraw annotations, not axes: the y title is an annotation each
    frame carries, naming its own reading; the slider's six labels are short enough to sit side
    by side under it (long ones ran off its left end)."""
    fig = fm.readings_interactive(ms.split_revisions(measured_tiny["one"]))
    static = fig.static_dict()
    titles = [[a["text"] for a in f["layout"]["annotations"] if a.get("name") == "y title"]
              for f in static["frames"]]
    assert titles == [[fm.READING_AXES[r][0]] for r in fm.READINGS]
    assert not (static["layout"].get("yaxis", {}).get("title") or {}).get("text")
    labels = [step["label"] for step in static["layout"]["sliders"][0]["steps"]]
    assert labels == [fm.READING_AXES[r][1] for r in fm.READINGS] and max(map(len, labels)) <= 12
    for reading in fm.READINGS:        # the live figure names its reading the same way
        live = fig.make_figure(reading=reading)
        assert [a.text for a in live.layout.annotations] == [fm.READING_AXES[reading][0]]
